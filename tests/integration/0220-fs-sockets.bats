#!/usr/bin/env bats
# Unix sockets in a writable root (issue 13): a socket a host process
# listens on (a docker.sock, an ssh-agent, a dev server) is a door out that
# --network none does not close.  In none and proxy modes, connect() to
# one fails; sockets the sandbox makes itself, and socketpair(), work;
# allow_unix_sockets opens a named one.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	W="$TEST_ROOT/w"
	mkdir -p "$W"
	# The host's listener: answers every connection with HOSTDATA.
	cat >"$TEST_ROOT/srv.py" <<-'EOF'
	import os, signal, socket, sys
	signal.signal(signal.SIGPIPE, signal.SIG_IGN)
	s = socket.socket(socket.AF_UNIX)
	s.bind(sys.argv[1])
	os.chmod(sys.argv[1], 0o777)
	s.listen(8)
	open(sys.argv[1] + ".up", "w").close()
	while True:
	    c, _ = s.accept()
	    open(sys.argv[1] + ".conn", "a").write("x")
	    try:
	        c.sendall(b"HOSTDATA\n")
	    except OSError:
	        pass
	    c.close()
	EOF
	# What the sandbox tries: the host's socket, one of its own, a pair.
	cat >"$W/probe.py" <<-'EOF'
	import os, socket, sys
	def conn(p):
	    s = socket.socket(socket.AF_UNIX)
	    try:
	        s.connect(p)
	        print("host", s.recv(100).decode().strip())
	    except OSError as e:
	        print("host refused", e.errno)
	conn(sys.argv[1])
	srv = socket.socket(socket.AF_UNIX)
	srv.bind("/tmp/own.sock")
	srv.listen(1)
	if os.fork() == 0:
	    c, _ = srv.accept()
	    c.sendall(b"OWN")
	    c.close()
	    os._exit(0)
	c = socket.socket(socket.AF_UNIX)
	c.connect("/tmp/own.sock")
	print("own", c.recv(10).decode())
	a, b = socket.socketpair()
	a.send(b"PAIR")
	print("pair", b.recv(10).decode())
	EOF
	chmod -R a+rwX "$W"
	python3 "$TEST_ROOT/srv.py" "$W/host.sock" &
	SRV=$!
	for _ in $(seq 100); do [ -e "$W/host.sock.up" ] && break; sleep 0.05; done
	[ -e "$W/host.sock.up" ]
}

teardown() {
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null && wait "$SRV" 2>/dev/null
	# SOCK-02's proxy-mode run started the state root's proxy: it would
	# outlive the test (and its state root) until its idle exit.
	"$SBX" proxy stop >/dev/null 2>&1
	sbx_teardown
}

agent_cfg() {
	mkdir -p "$SBX_HOME/config/agents"
	printf '%s\n' "$1" >"$SBX_HOME/config/agents/default.json"
}

@test "SOCK-01: a host socket in the workdir is unreachable by default; own sockets and socketpair work" {
	run --separate-stderr sbx exec --workdir "$W" -- "$PY" probe.py host.sock
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'host refused 13\nown OWN\npair PAIR')" ]
	[[ "$stderr" == *"sbx: unix socket: host.sock (connection refused)"* ]]
	# By its absolute path, and reported in the envelope.
	run sbx exec --json --workdir "$W" -- "$PY" probe.py "$W/host.sock"
	echo "$output"
	[ "$(json_get "$output" .result.stdout | head -n 1)" = "host refused 13" ]
	json_get "$output" .result.violations | jq -e --arg p "$W/host.sock" '
	    . == [{"type": "filesystem", "path": $p, "reason": "unix_socket"}]'
}

@test "SOCK-02: the proxy mode refuses it too" {
	agent_cfg '{"network": "proxy", "allowed_domains": ["example.invalid"]}'
	run sbx exec --workdir "$W" -- "$PY" probe.py host.sock
	echo "$output"
	[[ "$output" == "host refused 13"* ]]
}

@test "SOCK-03: allow_unix_sockets opens one named socket; outbound mode does not guard" {
	agent_cfg "{\"allow_unix_sockets\": [\"$W/host.sock\"]}"
	run sbx exec --workdir "$W" -- "$PY" probe.py host.sock
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'host HOSTDATA\nown OWN\npair PAIR')" ]
	agent_cfg '{}'
	run sbx exec --network outbound --workdir "$W" -- "$PY" probe.py host.sock
	echo "$output"
	[[ "$output" == "host HOSTDATA"* ]]
}

@test "SOCK-04: a symlink to the host socket, or a hard link, leads nowhere either" {
	ln -s host.sock "$W/link.sock"
	run sbx exec --workdir "$W" -c "$PY probe.py link.sock; ln host.sock hard.sock 2>/dev/null && $PY probe.py hard.sock; true"
	echo "$output"
	[[ "$output" != *HOSTDATA* ]]
	[[ "$output" == "host refused 13"* ]]
}

# Issue 27 §2: the guard never lets the kernel redo a socket call on what
# the caller holds by then (SECCOMP_USER_NOTIF_FLAG_CONTINUE).  pid 1 takes
# the caller's socket itself, reads the address once and performs the call
# on that file with that copy.

@test "SOCK-05: swapping the descriptor (dup2) under a connect() never reaches the host listener" {
	cat >"$W/race.py" <<-'EOF'
	import ctypes, os, socket, sys, threading
	libc = ctypes.CDLL(None, use_errno=True)
	def sun(path):
	    p = path.encode()
	    b = ctypes.create_string_buffer(110)
	    b[0:2] = socket.AF_UNIX.to_bytes(2, "little")
	    b[2:2 + len(p)] = p
	    return b, 2 + len(p) + 1
	addr, alen = sun(sys.argv[1])
	n = int(sys.argv[2])
	t = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
	u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
	N = os.dup(t.fileno())
	stop = False
	def swap():
	    while not stop:
	        os.dup2(u.fileno(), N)
	        os.dup2(t.fileno(), N)
	th = threading.Thread(target=swap)
	th.start()
	won = 0
	errs = set()
	for i in range(n):
	    if libc.connect(N, addr, alen) == 0:
	        won = i + 1
	        break
	    errs.add(ctypes.get_errno())
	stop = True
	th.join()
	if won:
	    u.settimeout(5)
	    print("reached", u.recv(100).decode().strip(), "after", won)
	else:
	    print("held", n, sorted(errs))
	EOF
	chmod a+r "$W/race.py"
	run --separate-stderr sbx exec --workdir "$W" -- "$PY" race.py host.sock 20000
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == "held 20000 "* ]]
	# The host's listener never saw a connection: refused before it.
	[ ! -e "$W/host.sock.conn" ]
}
