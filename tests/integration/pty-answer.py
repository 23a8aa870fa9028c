#!/usr/bin/env python3
# pty-answer.py OUTDIR TIMEOUT STEPS -- CMD...: run CMD on a pseudo-terminal
# of its own and answer it as a person would.  STEPS is a JSON list of
# [REGEX, REPLY, PAUSE]: wait (from where the previous reply was typed)
# until REGEX matches what the terminal shows, wait PAUSE seconds more
# (reading on), then type REPLY.  Then read until CMD ends.
#
# Writes OUTDIR/out (every byte the terminal showed), OUTDIR/held.N (what it
# showed from the match of step N to its reply) and OUTDIR/result.json
# ({"status": exit status or -signal, "steps": steps matched}).  Exits 0
# unless a step never matched (1) or TIMEOUT seconds went by (2).
import json
import os
import pty
import re
import select
import signal
import sys
import time

outdir, timeout, steps = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
cmd = sys.argv[sys.argv.index("--") + 1:]
deadline = time.monotonic() + timeout

pid, fd = pty.fork()
if pid == 0:
    try:
        os.execvp(cmd[0], cmd)
    finally:
        os._exit(127)

buf = b""
eof = False


def pump(until):
    """Read until the monotonic time `until` or the end."""
    global buf, eof
    while not eof:
        left = until - time.monotonic()
        if left <= 0:
            return
        r, _, _ = select.select([fd], [], [], left)
        if not r:
            continue
        try:
            d = os.read(fd, 65536)
        except OSError:
            d = b""
        if not d:
            eof = True
            return
        buf += d


matched, rc, pos = 0, 0, 0
for i, (rx, reply, pause) in enumerate(steps):
    pat = re.compile(rx.encode(), re.S)
    m = None
    while True:
        m = pat.search(buf, pos)
        if m or eof or time.monotonic() >= deadline:
            break
        pump(min(deadline, time.monotonic() + 0.1))
    if not m:
        rc = 1 if eof else 2
        break
    pump(min(deadline, time.monotonic() + float(pause)))
    with open(os.path.join(outdir, "held.%d" % i), "wb") as f:
        f.write(buf[m.start():])
    pos = len(buf)
    os.write(fd, reply.encode())
    matched += 1

if rc == 0:
    pump(deadline)
    if not eof:
        rc = 2
if not eof or rc:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
_, st = os.waitpid(pid, 0)
status = os.WEXITSTATUS(st) if os.WIFEXITED(st) else -os.WTERMSIG(st)
with open(os.path.join(outdir, "out"), "wb") as f:
    f.write(buf)
with open(os.path.join(outdir, "result.json"), "w") as f:
    json.dump({"status": status, "steps": matched}, f)
sys.exit(rc)
