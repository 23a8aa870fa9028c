# install-wheel.py: build a pure-Python wheel for the sbx install tests,
# with zipfile (no network, no build backend), and its PEP 503 simple
# index page.
#
#   python3 install-wheel.py INDEXDIR NAME VERSION [REQUIRES...]
#
# Writes INDEXDIR/files/NAME-VERSION-py3-none-any.whl (module NAME, a
# console script NAME-hello printing "hello from NAME") and appends the
# link to INDEXDIR/simple/<normalised name>/index.html.
import base64
import hashlib
import os
import re
import sys
import zipfile

index, name, version = sys.argv[1], sys.argv[2], sys.argv[3]
requires = sys.argv[4:]
mod = name.replace("-", "_")
norm = re.sub(r"[-_.]+", "-", name).lower()
dist = "%s-%s.dist-info" % (mod, version)
files = {
    "%s/__init__.py" % mod: "def hello():\n    print('hello from %s')\n" % name,
    "%s/METADATA" % dist: "Metadata-Version: 2.1\nName: %s\nVersion: %s\n%s"
    % (name, version, "".join("Requires-Dist: %s\n" % r for r in requires)),
    "%s/WHEEL" % dist: "Wheel-Version: 1.0\nGenerator: sbx-test\n"
    "Root-Is-Purelib: true\nTag: py3-none-any\n",
    "%s/entry_points.txt" % dist: "[console_scripts]\n%s-hello = %s:hello\n"
    % (mod, mod),
}
record = []
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest())
    record.append("%s,sha256=%s,%d" % (path, digest.rstrip(b"=").decode(),
                                       len(text.encode())))
record.append("%s/RECORD,," % dist)
files["%s/RECORD" % dist] = "\n".join(record) + "\n"
os.makedirs(os.path.join(index, "files"), exist_ok=True)
whl = "%s-%s-py3-none-any.whl" % (mod, version)
out = os.path.join(index, "files", whl)
with zipfile.ZipFile(out, "w") as z:
    for path, text in files.items():
        z.writestr(path, text)
sha = hashlib.sha256(open(out, "rb").read()).hexdigest()
d = os.path.join(index, "simple", norm)
os.makedirs(d, exist_ok=True)
with open(os.path.join(d, "index.html"), "a") as f:
    f.write('<a href="../../files/%s#sha256=%s">%s</a>\n' % (whl, sha, whl))
