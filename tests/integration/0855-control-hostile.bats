#!/usr/bin/env bats
# The control protocol of sbx-proxy and sbx-bridge (run/proxy.sock,
# run/bridge.sock; lib/net/session.c, one implementation for both):
# hostile control lines get the same answer from either daemon, the daemon
# lives on, and nothing is done for any agent.  Only unix sockets under
# the test's own directory.
# sbx-test: unprivileged

load lib

setup() {
	sbx_setup
	sbx provision --agent a -q
	"$SBX_EXEC_PATH/sbx-proxy" serve -q
	"$SBX_EXEC_PATH/sbx-bridge" serve -q
}

teardown() {
	local d p
	for d in proxy bridge; do
		"$SBX_EXEC_PATH/sbx-$d" stop -q 2>/dev/null
		p=$(cat "$SBX_HOME/run/$d.pid" 2>/dev/null)
		[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	done
	sbx_teardown
}

# ctl DAEMON: a python3 client of run/DAEMON.sock; the script on stdin
# gets ask(data, fds=(), s=None) -> the answer (a dict), or None when the
# daemon closed the connection without one; short(answer) -> one word.
ctl() {
	SOCK="$SBX_HOME/run/$1.sock" python3 -c '
import json, os, socket
SOCK = os.environ["SOCK"]
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(SOCK)
    return s
def ask(data, fds=(), s=None):
    s = s or conn()
    try:
        if fds:
            socket.send_fds(s, [data], list(fds))
        else:
            s.sendall(data)
        b = b""
        while not b.endswith(b"\n"):
            c = s.recv(65536)
            if not c:
                break
            b += c
    except (BrokenPipeError, ConnectionResetError):
        return None
    return json.loads(b) if b else None
def short(a):
    if a is None:
        return "closed"
    if a.get("ok"):
        return "ok"
    return "%s/%s" % (a.get("kind"), a.get("reason"))
def seqpacket():
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
'"$(cat)"
}

# The state root's files, but for the daemons' own under run/.
tree() {
	(cd "$SBX_HOME" && find . | grep -v -e '^\./run/\(proxy\|bridge\)\.' |
	    sort)
}

@test "malformed control lines: the same refusal from the proxy and the bridge, and nothing done" {
	before=$(tree)
	for d in proxy bridge; do
		run ctl "$d" <<'PY'
cases = [
    b"{\"op\":\n",
    b"[\"op\"]\n",
    b"\"status\"\n",
    b"{}\n",
    b"{\"op\":7}\n",
    b"{\"op\":\"a\",\"op\":\"b\"}\n",
    b"{\"op\":\"bogus\"}\n",
    b"{\"op\":\"session\"}\n",
    b"{\"op\":\"session\",\"agent\":7}\n",
    b"{\"op\":\"session\",\"agent\":\"a\"}\n",
]
for c in cases:
    print(short(ask(c)))
sp = seqpacket()
st = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
print(short(ask(b"{\"op\":\"session\",\"agent\":\"a\"}\n", [st[0].fileno()])))
print(short(ask(b"{\"op\":\"session\",\"agent\":\"../a\"}\n", [sp[0].fileno()])))
print(short(ask(b"{\"op\":\"session\",\"agent\":\"zed\"}\n", [sp[0].fileno()])))
PY
		echo "$d: $output"
		[ "$status" -eq 0 ]
		eval "out_$d=\$output"
	done
	# shellcheck disable=SC2154
	[ "$out_proxy" = "$out_bridge" ]
	[ "${lines[0]}" = invalid_args/malformed_json ]
	[ "${lines[1]}" = invalid_args/not_an_object ]
	[ "${lines[2]}" = invalid_args/malformed_json ]
	[ "${lines[3]}" = invalid_args/bad_op ]
	[ "${lines[4]}" = invalid_args/bad_op ]
	[ "${lines[5]}" = invalid_args/malformed_json ]
	[ "${lines[6]}" = invalid_args/unknown_op ]
	[ "${lines[7]}" = invalid_args/missing ]
	[ "${lines[8]}" = invalid_args/missing ]
	[ "${lines[9]}" = invalid_args/bad_channel ]
	[ "${lines[10]}" = invalid_args/bad_channel ]
	[ "${lines[11]}" = invalid_args/invalid_name ]
	# An agent without a token: refused, never a session.
	[ "${lines[12]}" = not_found/not_found ]
	# Both still answer, and the state root is as it was.
	"$SBX_EXEC_PATH/sbx-proxy" status -q
	"$SBX_EXEC_PATH/sbx-bridge" status -q
	[ "$(tree)" = "$before" ]
}

@test "an over-long control line ends that connection; the daemon lives on" {
	run ctl proxy <<'PY'
print(short(ask(b"{\"op\":\"status\",\"x\":\"" + b"a" * (300 << 10))))
print(short(ask(b"{\"op\":\"status\"}\n")))
PY
	echo "$output"
	[ "${lines[0]}" = closed ]
	[ "${lines[1]}" = ok ]
	run ctl bridge <<'PY'
print(short(ask(b"{\"op\":\"status\",\"x\":\"" + b"a" * (17 << 10))))
print(short(ask(b"{\"op\":\"status\"}\n")))
PY
	echo "$output"
	[ "${lines[0]}" = closed ]
	[ "${lines[1]}" = ok ]
}

@test "a descriptor the daemon does not take ends the session" {
	# The proxy takes one, the channel, with the session's line.
	run ctl proxy <<'PY'
sp = seqpacket()
s = conn()
print(short(ask(b"{\"op\":\"session\",\"agent\":\"a\"}\n", [sp[0].fileno()], s)))
r, w = os.pipe()
print(short(ask(b"{\"op\":\"end\"}\n", [r], s)))
PY
	echo "$output"
	[ "${lines[0]}" = ok ]
	[ "${lines[1]}" = closed ]
	# The bridge takes one more, the run's values (scrub), then none.
	run ctl bridge <<'PY'
sp = seqpacket()
s = conn()
print(short(ask(b"{\"op\":\"session\",\"agent\":\"a\"}\n", [sp[0].fileno()], s)))
m = os.memfd_create("scrub")
os.write(m, b"K=value\0")
print(short(ask(b"{\"op\":\"scrub\"}\n", [m], s)))
r, w = os.pipe()
print(short(ask(b"{\"op\":\"end\"}\n", [r], s)))
PY
	echo "$output"
	[ "${lines[0]}" = ok ]
	[ "${lines[1]}" = ok ]
	[ "${lines[2]}" = closed ]
	"$SBX_EXEC_PATH/sbx-proxy" status -q
	"$SBX_EXEC_PATH/sbx-bridge" status -q
}

@test "policy (sbx srt --control-fd): bad lines are refused whole, a session's own connection cannot use it" {
	before=$(tree)
	run ctl proxy <<'PY'
cases = [
    b"{\"op\":\"policy\"}\n",
    b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":1,\"allow\":\"x\",\"deny\":[]}\n",
    b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":0,\"allow\":[],\"deny\":[]}\n",
    b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":1,\"allow\":[7],\"deny\":[]}\n",
    b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":1,\"allow\":[\"*\"],\"deny\":[]}\n",
    b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":1,\"allow\":[\"example.org\"],\"deny\":[]}\n",
]
for c in cases:
    print(short(ask(c)))
# A connection that holds a session (what a run's sbx-exec keeps) asks
# to rewrite policies: never done for it.
sp = seqpacket()
s = conn()
print(short(ask(b"{\"op\":\"session\",\"agent\":\"a\",\"run\":\"1-x\"}\n", [sp[0].fileno()], s)))
print(short(ask(b"{\"op\":\"policy\",\"agent\":\"a\",\"pid\":1,\"allow\":[\"example.org\"],\"deny\":[]}\n", (), s)))
PY
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = invalid_args/malformed ]
	[ "${lines[1]}" = invalid_args/malformed ]
	[ "${lines[2]}" = invalid_args/malformed ]
	[ "${lines[3]}" = invalid_args/malformed ]
	# A pattern the policy refuses (a bare wildcard), then a good line
	# for a pid without a session: nothing to change.
	[ "${lines[4]}" = invalid_args/invalid_domain ]
	[ "${lines[5]}" = not_found/no_session ]
	# The session opened; on its own connection `policy` is no op at all.
	[ "${lines[6]}" = ok ]
	[ "${lines[7]}" = invalid_args/unknown_op ]
	"$SBX_EXEC_PATH/sbx-proxy" status -q
	[ "$(tree)" = "$before" ]
}
