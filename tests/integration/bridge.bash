# bridge.bash: fixtures for the sbx-bridge tests (0850-0853), loaded after
# lib.bash.
#
#   bridge_setup / bridge_teardown   agents a and b, the bridge, relays
#   relay A                          a relay for agent A -> $TEST_ROOT/A.sock
#                                    (tests/helpers/bridge-relay: what sbx
#                                    exec and sbx-init do for a run)
#   prelay L A P [NAME=VALUE...]     a plugin P's session for agent A (what
#                                    sbx plugin run opens), its run holding
#                                    those secret values -> $TEST_ROOT/L.sock
#   preq L A METHOD PATH [BODY]      breq over L.sock with A's token
#   phost L A ARGS...                sbx-host over L.sock with A's token
#   breq A METHOD PATH [BODY]        curl over A's socket with A's token;
#                                    prints "STATUS BODY"
#   host A ARGS...                   sbx-host over A's socket, A's token
#   raw A                            python3 raw client: stdin is a script
#
# Everything listens on unix sockets under the test's own directory; the
# only network server (the fake model) is bound to 127.0.0.1.
# shellcheck shell=bash
# shellcheck disable=SC2034,SC2154

BRIDGE="$SBX_EXEC_PATH/sbx-bridge"
HOSTCLI="$SBX_EXEC_PATH/sbx-host"
RELAY_PIDS=""

bridge_setup() {
	sbx_setup
	sbx provision --agent a -q
	sbx provision --agent b -q
	TOK_a=$(cat "$SBX_HOME/run/tokens/a")
	TOK_b=$(cat "$SBX_HOME/run/tokens/b")
	[ -n "${BRIDGE_CONFIG:-}" ] && printf '%s\n' "$BRIDGE_CONFIG" \
	    >"$SBX_HOME/config/sandbox.json"
	"$BRIDGE" serve -q
	relay a
	relay b
}

bridge_teardown() {
	local p
	for p in $RELAY_PIDS; do kill "$p" 2>/dev/null; done
	"$BRIDGE" stop -q 2>/dev/null
	p=$(cat "$SBX_HOME/run/bridge.pid" 2>/dev/null)
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	[ -n "${FAKE_PID:-}" ] && kill "$FAKE_PID" 2>/dev/null
	sbx_teardown
}

relay() {
	_relay "$1" "$1"
}

# The digest of a value as sbx exec sends it (BLAKE2b-256, hex).
digest() {
	printf '%s' "$1" | python3 -c 'import hashlib, sys
print(hashlib.blake2b(sys.stdin.buffer.read(), digest_size=32).hexdigest())'
}

prelay() {
	local label=$1 agent=$2 plugin=$3 kv args=()
	shift 3
	for kv in "$@"; do
		args+=("${kv%%=*}=$(digest "${kv#*=}")")
	done
	_relay "$label" "$agent" "$plugin" "${args[@]}"
}

_relay() {
	local label=$1 out="$TEST_ROOT/relay-$1.out" i
	shift
	"$HELPERS/bridge-relay" "$SBX_HOME" "$1" "$TEST_ROOT/$label.sock" \
	    "${@:2}" >"$out" 2>&1 &
	RELAY_PIDS="$RELAY_PIDS $!"
	for i in $(seq 300); do
		grep -q ready "$out" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$out" >&2
	return 1
}

tok() { eval "printf '%s' \"\$TOK_$1\""; }

breq() {
	preq "$1" "$@"
}

preq() {
	local l=$1 a=$2 m=$3 p=$4
	shift 4
	curl -s --path-as-is --max-time 60 --unix-socket "$TEST_ROOT/$l.sock" \
	    -o "$TEST_ROOT/body" -w '%{http_code}' -X "$m" \
	    -H "Authorization: Bearer $(tok "$a")" \
	    ${1:+-H 'Content-Type: application/json' --data-binary "$1"} \
	    "http://bridge$p"
	printf ' %s\n' "$(cat "$TEST_ROOT/body")"
}

host() {
	local a=$1
	shift
	SBX_BRIDGE_SOCK="$TEST_ROOT/$a.sock" SBX_BRIDGE_TOKEN="$(tok "$a")" \
	    "$HOSTCLI" "$@"
}

# sbx-host over L.sock (a plugin's session) with A's token.
phost() {
	local l=$1 a=$2
	shift 2
	SBX_BRIDGE_SOCK="$TEST_ROOT/$l.sock" SBX_BRIDGE_TOKEN="$(tok "$a")" \
	    "$HOSTCLI" "$@"
}

# A raw client: the python script on stdin gets raw(data, timeout) ->
# bytes and status(bytes) -> int; SOCK and TOKEN are set for agent $1.
raw() {
	SOCK="$TEST_ROOT/$1.sock" TOKEN="$(tok "$1")" SOCKB="$TEST_ROOT/b.sock" \
	    TOKB="$TOK_b" \
	    python3 -c '
import os, socket, sys, time
SOCK = os.environ["SOCK"]; TOKEN = os.environ["TOKEN"].encode()
AUTH = b"Authorization: Bearer " + TOKEN + b"\r\n"
def conn(path=SOCK, timeout=10):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(path)
    return s
def read_all(s):
    out = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            out += b
    except socket.timeout:
        out += b"<timeout>"
    except OSError:
        out += b"<reset>"
    return out
def raw(data, timeout=10, path=SOCK):
    s = conn(path, timeout)
    try:
        s.sendall(data)
    except OSError:
        pass
    out = read_all(s)
    s.close()
    return out
def status(out):
    p = out.split(b"\r\n", 1)[0].split(b" ")
    return int(p[1]) if len(p) > 1 and p[1].isdigit() else 0
def req(method, path, body=b"", extra=b"", auth=AUTH):
    h = method.encode() + b" " + path.encode() + b" HTTP/1.1\r\nHost: x\r\n" + auth + extra
    if body:
        h += b"Content-Length: %d\r\n" % len(body)
    return h + b"Connection: close\r\n\r\n" + body
'"$(cat)"
}
