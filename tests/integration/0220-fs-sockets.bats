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
	# From a thread that is not the process's first: the same answers.
	srv = socket.socket(socket.AF_UNIX)
	srv.bind("/tmp/own.sock")
	srv.listen(1)
	def other():
	    c = socket.socket(socket.AF_UNIX)
	    try:
	        c.connect(sys.argv[1])
	        print("thread host reached")
	    except OSError as e:
	        print("thread host refused", e.errno)
	    c = socket.socket(socket.AF_UNIX)
	    c.connect("/tmp/own.sock")
	    srv.accept()[0].sendall(b"OWN")
	    print("thread own", c.recv(10).decode())
	th = threading.Thread(target=other)
	th.start()
	th.join()
	EOF
	chmod a+r "$W/race.py"
	run --separate-stderr timeout 600 "$SBX" exec --workdir "$W" -- "$PY" race.py host.sock 20000
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$output" == "held 20000 "* ]]
	[[ "$output" == *"thread host refused 13"* ]]
	[[ "$output" == *"thread own OWN"* ]]
	# The host's listener never saw a connection: refused before it.
	[ ! -e "$W/host.sock.conn" ]
}

@test "SOCK-06: a datagram to a host socket (sendto, sendmsg, sendmmsg, connect) is refused, also under a swapped descriptor or address; the sandbox's own datagrams and descriptor passing work" {
	# The host's datagram listener (a syslog or NOTIFY_SOCKET): it
	# records every datagram it gets.
	cat >"$TEST_ROOT/dsrv.py" <<-'EOF'
	import os, socket, sys
	s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	s.bind(sys.argv[1])
	os.chmod(sys.argv[1], 0o777)
	open(sys.argv[1] + ".up", "w").close()
	while True:
	    d = s.recv(4096)
	    with open(sys.argv[2], "ab") as f:
	        f.write(d + b"\n")
	EOF
	cat >"$W/dgram.py" <<-'EOF'
	import ctypes, os, socket, sys, threading
	libc = ctypes.CDLL(None, use_errno=True)
	host, n = sys.argv[1], int(sys.argv[2])
	def tryit(what, f):
	    try:
	        f()
	        print(what, "sent")
	    except OSError as e:
	        print(what, "refused", e.errno)
	d = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	tryit("sendto", lambda: d.sendto(b"SENDTO", host))
	tryit("sendmsg", lambda: d.sendmsg([b"SENDMSG"], [], 0, host))
	tryit("connect", lambda: d.connect(host))
	a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
	tryit("pair", lambda: a.sendto(b"PAIR", host))
	# sendmmsg, which Python lacks: two messages, by ctypes.
	class iovec(ctypes.Structure):
	    _fields_ = [("base", ctypes.c_char_p), ("len", ctypes.c_size_t)]
	class msghdr(ctypes.Structure):
	    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint),
	        ("iov", ctypes.POINTER(iovec)), ("iovlen", ctypes.c_size_t),
	        ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
	        ("flags", ctypes.c_int)]
	class mmsghdr(ctypes.Structure):
	    _fields_ = [("hdr", msghdr), ("len", ctypes.c_uint)]
	def sun(path):
	    p = path.encode()
	    b = ctypes.create_string_buffer(110)
	    b[0:2] = socket.AF_UNIX.to_bytes(2, "little")
	    b[2:2 + len(p)] = p
	    return b, 2 + len(p) + 1
	def mmsg(path):
	    nm, nl = sun(path)
	    iov = iovec(b"MMSG", 4)
	    v = (mmsghdr * 2)()
	    for m in v:
	        m.hdr.name = ctypes.cast(nm, ctypes.c_void_p)
	        m.hdr.namelen = nl
	        m.hdr.iov = ctypes.pointer(iov)
	        m.hdr.iovlen = 1
	    r = libc.sendmmsg(d.fileno(), v, 2, 0)
	    return r, ctypes.get_errno(), [m.len for m in v], (nm, iov)
	r, e, lens, _ = mmsg(host)
	print("sendmmsg", r, e if r < 0 else lens)
	# The sandbox's own datagram socket: reachable, every way.
	own = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	own.bind("/tmp/own.dgram")
	d.sendto(b"OWN1", "/tmp/own.dgram")
	d.sendmsg([b"OWN", b"2"], [], 0, "/tmp/own.dgram")
	r, e, lens, _ = mmsg("/tmp/own.dgram")
	got = [own.recv(10) for _ in range(2 + (r if r > 0 else 0))]
	print("own", b" ".join(got).decode(), lens)
	c = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
	c.connect("/tmp/own.dgram")
	c.send(b"CONNECTED")
	print("own", own.recv(20).decode())
	# A descriptor passed over a stream pair arrives and works.
	s1, s2 = socket.socketpair()
	r_, w_ = os.pipe()
	socket.send_fds(s1, [b"FD"], [w_])
	msg, fds, _, _ = socket.recv_fds(s2, 10, 1)
	os.write(fds[0], b"PIPED")
	print("fds", msg.decode(), os.read(r_, 10).decode())
	# A blocking send larger than the socket's buffer: it waits for the
	# reader, who first creates a file (a call pid 1 answers: pid 1 is
	# not the one waiting).
	s1, s2 = socket.socketpair()
	big = os.urandom(600000)
	got = []
	def reader():
	    open("/tmp/made-while-sending", "w").close()
	    buf = b""
	    while len(buf) < len(big):
	        buf += s2.recv(65536)
	    got.append(buf)
	th = threading.Thread(target=reader)
	th.start()
	sent = s1.sendmsg([big[:300000], big[300000:]])
	th.join()
	print("big", sent == len(big), got[0] == big)
	# The races: a unix datagram socket dup2()ed over a UDP socket's
	# descriptor, and the address rewritten in memory, under sendto.
	udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
	N = os.dup(udp.fileno())
	ha, hl = sun(host)
	oa, ol = sun("/tmp/own.dgram")
	buf = ctypes.create_string_buffer(110)
	ctypes.memmove(buf, oa, 110)
	stop = False
	def swap():
	    while not stop:
	        os.dup2(d.fileno(), N)
	        os.dup2(udp.fileno(), N)
	        ctypes.memmove(buf, ha, 110)
	        ctypes.memmove(buf, oa, 110)
	th = threading.Thread(target=swap)
	th.start()
	# (MSG_DONTWAIT: nobody reads own.dgram meanwhile, and a full
	# queue would block the sender, as it would without sbx.)
	for i in range(n):
	    libc.sendto(N, b"RACE", 4, socket.MSG_DONTWAIT, ha, hl)
	    libc.sendto(d.fileno(), b"RACE2", 5, socket.MSG_DONTWAIT, buf,
	        max(hl, ol))
	stop = True
	th.join()
	print("raced", n)
	EOF
	chmod a+r "$W/dgram.py"
	python3 "$TEST_ROOT/dsrv.py" "$W/host.dgram" "$TEST_ROOT/got" &
	DSRV=$!
	for _ in $(seq 100); do [ -e "$W/host.dgram.up" ] && break; sleep 0.05; done
	[ -e "$W/host.dgram.up" ]
	run --separate-stderr timeout 600 "$SBX" exec --workdir "$W" -- "$PY" dgram.py host.dgram 5000
	kill "$DSRV" 2>/dev/null; wait "$DSRV" 2>/dev/null || true
	echo "$output"
	echo "$stderr"
	echo "host got: $(cat "$TEST_ROOT/got" 2>/dev/null | head -n 5)"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | head -n 5)" = "$(printf 'sendto refused 13\nsendmsg refused 13\nconnect refused 13\npair refused 13\nsendmmsg -1 13')" ]
	[[ "$output" == *"own OWN1 OWN2 MMSG MMSG [4, 4]"* ]]
	[[ "$output" == *"own CONNECTED"* ]]
	[[ "$output" == *"fds FD PIPED"* ]]
	[[ "$output" == *"big True True"* ]]
	[[ "$output" == *"raced 5000"* ]]
	[[ "$stderr" == *"sbx: unix socket: host.dgram (connection refused)"* ]]
	# Not one datagram reached the host.
	[ ! -s "$TEST_ROOT/got" ]
}

@test "SOCK-07: bind() cannot create a protected name (a socket named .envrc); other names keep the address they were bound with" {
	mkdir -p "$W/sub"
	chmod -R a+rwX "$W"
	cat >"$W/bind.py" <<-'EOF'
	import os, socket, stat, sys
	def b(p):
	    s = socket.socket(socket.AF_UNIX)
	    try:
	        s.bind(p)
	        print(p, "bound", s.getsockname())
	    except OSError as e:
	        print(p, "refused", e.errno)
	    return s
	keep = [b(".envrc"), b("sub/../.envrc"), b(sys.argv[1] + "/.bashrc"),
	    b(".npmrc")]
	os.umask(0o022)
	keep.append(b("app.sock"))
	keep.append(b("/tmp/abs.sock"))
	print("mode", oct(stat.S_IMODE(os.stat("app.sock").st_mode)))
	# A socket the sandbox bound in the workdir is its own to reach.
	keep[-2].listen(1)
	c = socket.socket(socket.AF_UNIX)
	c.connect("app.sock")
	print("own", keep[-2].accept()[0].getpeername() == "", c.getpeername())
	s = socket.socket(socket.AF_INET)
	s.bind(("127.0.0.1", 0))
	print("inet", s.getsockname()[0])
	EOF
	chmod a+r "$W/bind.py"
	run --separate-stderr sbx exec --workdir "$W" -- "$PY" bind.py "$W"
	echo "$output"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf '%s\n' '.envrc refused 30' 'sub/../.envrc refused 30' "$W/.bashrc refused 30" '.npmrc refused 30' "app.sock bound app.sock" "/tmp/abs.sock bound /tmp/abs.sock" "mode 0o755" "own True app.sock" "inet 127.0.0.1")" ]
	# Nothing protected was left in the user's tree.
	[ ! -e "$W/.envrc" ] && [ ! -e "$W/.bashrc" ] && [ ! -e "$W/.npmrc" ]
	[ -S "$W/app.sock" ]
}

@test "SOCK-08: pidfd_getfd, which sbx's filter leaves to pid 1, stays refused to every command, guarded or not" {
	TRY="$HELPERS/try-syscall"
	[ -x "$TRY" ] || skip "not built: make tests ($TRY)"
	[ "$(uname -m)" = x86_64 ] || skip "sbx's own filter refuses it on $(uname -m)"
	cp "$TRY" "$W/try-syscall"
	chmod a+rx "$W/try-syscall"
	# With the guard (network none, a workdir) ...
	run --separate-stderr sbx exec --workdir "$W" -- ./try-syscall pidfd_getfd </dev/null
	echo "$output"
	[[ "$output" == "pidfd_getfd errno=1 "* ]]
	# ... and without one (outbound, no workdir: nothing to guard).
	mkdir -p "$WS"
	cp "$TRY" "$WS/try-syscall"
	run --separate-stderr sbx exec -q --network outbound -- \
	    sh -c './try-syscall pidfd_getfd; tr "\0" " " </proc/1/cmdline' </dev/null
	echo "$output"
	[[ "$output" == "pidfd_getfd errno=1 "* ]]
	[[ "$output" != *" -U "* ]] && [[ "$output" != *" -N "* ]]
}
