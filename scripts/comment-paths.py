#!/usr/bin/env python3
"""comment-paths.py: comments that cite a file of the tree that is not there.

   python3 scripts/comment-paths.py       (from the top of the checkout)

A comment in a C file, a shell script, a bats file or the Makefile that
names x.c, x.h, x.sh, x.bash, x.py or x.mjs: with a directory, the path
must be a file of the tree (from the top, from the comment's own folder,
or as the tail of one); a bare name must be the name of one (lib/ is
grouped by area and every area is on the include path, so a module is
cited by its name, which survives a move between areas).  Prints
FILE:LINE: NAME for each miss and exits 1 when there is one.
"""
import os
import re
import subprocess
import sys

# Named in comments but not files of the tree: system and library
# headers, other projects' files, examples, what the build or a test
# makes, placeholders.
NOT_OURS = {
    "stddef.h", "stdint.h", "jansson.h", "help.c", "foo.h", "bin/x.sh",
    "gen/seccomp-digest.h", "9002-fails.sh", "9003-plan.sh",
    "cmd/sbx-NAME.c", "slurm/spank.h", "base/lo.c", "state/hi.c", "NAME.c",
}
NAME = re.compile(r"(?<![\w.@/$-])((?:[A-Za-z0-9_.-]+/)*[A-Za-z0-9_-]+"
                  r"\.(?:c|h|sh|bash|py|mjs))(?![\w/])")
C_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def tracked():
    out = subprocess.run(["git", "ls-files"], capture_output=True,
                         text=True, check=True).stdout
    return [f for f in out.split("\n") if f]


def comments(path, text):
    if path.endswith((".c", ".h")):
        for m in C_COMMENT.finditer(text):
            yield text.count("\n", 0, m.start()) + 1, m.group(0)
        return
    for i, line in enumerate(text.split("\n"), 1):
        j = line.find("#")
        # (not a C program in a here-document)
        if j >= 0 and not line.startswith("#!") and \
                not line[j:].startswith("#include"):
            yield i, line[j:]


def main():
    files = tracked()
    have = set(files)
    names = {os.path.basename(f) for f in files}
    misses = 0
    for f in files:
        if not (f.endswith((".c", ".h", ".sh", ".bash", ".bats", ".py"))
                or os.path.basename(f) == "Makefile"):
            continue
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
        except OSError:
            continue
        for line, c in comments(f, text):
            for m in NAME.finditer(c):
                p = m.group(1)
                if p in NOT_OURS:
                    continue
                if "/" not in p:
                    ok = p in names
                else:
                    ok = (p in have or p.startswith(("/", "build/")) or
                          os.path.normpath(os.path.join(os.path.dirname(f),
                                                        p)) in have or
                          any(x.endswith("/" + p) for x in have))
                if not ok:
                    print(f"{f}:{line}: {p}")
                    misses += 1
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
