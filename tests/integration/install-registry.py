# install-registry.py: a tiny loopback registry for the sbx install tests
# (1000-install.bats), run as an unprivileged uid with /usr/bin/python3.
#
#   python3 install-registry.py DIR LOG [FAIL_SPEC]
#
# Serves the files under DIR (npm packuments, tarballs, a PyPI simple
# index, wheels) on 127.0.0.1 on a free port, printed on stdout.  Every
# request is appended to LOG.  FAIL_SPEC injects failures:
#   npm-locked:N   the first N requests answer 423 with an ELOCKED error
#   pip-timeout:N  the first N downloads of a file under /files/ stall 15 s
#                  (longer than the test's pip read timeout, 3 s)
#   stall:N        the first N requests stall 5 s, then fail (503)
#   npm-404:N      the first N requests answer 404 (a persistent failure
#                  when N is large)
#   apt-hash:N     the first N downloads of a .deb are corrupted (same
#                  size, other bytes): apt's "Hash Sum mismatch"
import http.server
import os
import sys
import threading
import time

root, log = sys.argv[1], sys.argv[2]
spec = sys.argv[3] if len(sys.argv) > 3 else ""
mode, _, count = spec.partition(":")
left = [int(count or 0)]
lock = threading.Lock()


class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        with open(log, "a") as f:
            f.write("%s %s\n" % (self.command, self.path))

    def send(self, code, body, ctype="application/json"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        # pip-timeout stalls a download (a wheel): a stalled index page
        # is only a debug line to pip, a stalled download its
        # ReadTimeoutError.
        if mode == "pip-timeout" and not self.path.startswith("/files/"):
            fail = False
        elif mode == "apt-hash" and not self.path.endswith(".deb"):
            fail = False
        else:
            with lock:
                fail = left[0] > 0
                if fail:
                    left[0] -= 1
        if fail and mode == "npm-locked":
            return self.send(423, b'{"error":"ELOCKED registry lock held"}')
        if fail and mode == "npm-404":
            return self.send(404, b'{"error":"Not found"}')
        if fail and mode == "pip-timeout":
            # Well past the test's pip read timeout (3 s), which leaves
            # the requests that are not stalled room on a loaded machine.
            time.sleep(15)
            return self.send(503, b"stalled")
        if fail and mode == "stall":
            time.sleep(5)
            return self.send(503, b"stalled")
        path = self.path.split("?", 1)[0]
        path = path.replace("%2f", "/").replace("%2F", "/")
        rel = os.path.normpath(path.lstrip("/"))
        if rel.startswith(".."):
            return self.send(400, b"{}")
        p = os.path.join(root, rel)
        if os.path.isdir(p):
            p = os.path.join(p, "index.html")
        if not os.path.isfile(p):
            return self.send(404, b'{"error":"Not found"}')
        data = open(p, "rb").read()
        if fail and mode == "apt-hash":
            data = bytes(b ^ 0x55 for b in data)
        ctype = "application/json"
        if p.endswith(".html"):
            ctype = "text/html"
        elif p.endswith(".tgz") or p.endswith(".whl"):
            ctype = "application/octet-stream"
        self.send(200, data, ctype)

    do_HEAD = do_GET


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
print(srv.server_address[1], flush=True)
srv.serve_forever()
