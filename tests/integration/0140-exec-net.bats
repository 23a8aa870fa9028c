#!/usr/bin/env bats
# sbx exec: network modes (HOSTILE-CASES NP-01, NP-02).
#
# Only loopback is ever contacted: the listener is on the host's
# 127.0.0.1, and no test resolves or connects to any other address.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	SRV_PID=
	ABS_PID=
}

teardown() {
	local p
	for p in $SRV_PID $ABS_PID; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	sbx_teardown
}

need_python() {
	[ -x "$PY" ] || skip "python3 is not installed"
}

# start_listener: an HTTP server on a free port of the host's 127.0.0.1;
# sets PORT once it answers.
start_listener() {
	need_python
	mkdir -p "$TEST_ROOT/www"
	echo hello-from-host > "$TEST_ROOT/www/index.txt"
	"$PY" -u -m http.server 0 --bind 127.0.0.1 \
	    --directory "$TEST_ROOT/www" >"$TEST_ROOT/srv.log" 2>&1 &
	SRV_PID=$!
	PORT=
	for i in $(seq 100); do
		PORT=$(sed -n 's/.* port \([0-9][0-9]*\).*/\1/p' \
		    "$TEST_ROOT/srv.log" | head -1)
		[ -n "$PORT" ] && break
		sleep 0.05
	done
	[ -n "$PORT" ] || { cat "$TEST_ROOT/srv.log"; return 1; }
	# Reachable from the host.
	host_connect "$PORT"
}

# The probe, on either side: connect to 127.0.0.1:PORT, fetch a file.
probe='
import socket, sys
try:
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 3)
    s.sendall(b"GET /index.txt HTTP/1.0\r\nHost: x\r\n\r\n")
    data = s.recv(4096)
    print("CONNECTED", b"hello-from-host" in data or data[:12])
except OSError as e:
    print("FAILED", e.errno)
'

host_connect() {
	run "$PY" -c "$probe" "$1"
	[[ "$output" == "CONNECTED"* ]]
}

@test "NP-01: network none has only the loopback interface" {
	run sbx exec -q -- cat /proc/net/dev
	[ "$status" -eq 0 ]
	ifaces=$(printf '%s\n' "$output" | sed -n 's/^ *\([^ :]*\):.*/\1/p' |
	    sort | tr '\n' ' ')
	echo "interfaces: $ifaces"
	[ "$ifaces" = "lo " ]
	run sbx exec --json -- true
	[ "$(json_get "$output" .result.network)" = none ]
}

@test "NP-01: network none, ip -o link lists only lo" {
	run sbx exec -q -- sh -c 'command -v ip'
	[ "$status" -eq 0 ] || skip "ip is not installed"
	run sbx exec -q -- ip -o link
	[ "$status" -eq 0 ]
	[ "${#lines[@]}" -eq 1 ]
	[[ "${lines[0]}" == *": lo:"* ]]
}

@test "NP-01: a listener on the host's loopback is unreachable from inside" {
	start_listener
	run sbx exec -q -- "$PY" -c "$probe" "$PORT"
	[ "$status" -eq 0 ]
	echo "$output"
	[[ "$output" == FAILED* ]]
	# Still reachable on the host: the listener was there.
	host_connect "$PORT"
}

@test "NP-01: an abstract unix socket of the host is unreachable from inside" {
	need_python
	name="sbx-test-$$-$RANDOM"
	"$PY" -c '
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind("\0" + sys.argv[1]); s.listen(8)
while True:
    c, _ = s.accept(); c.sendall(b"abstract-ok"); c.close()
' "$name" &
	ABS_PID=$!
	client='
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect("\0" + sys.argv[1]); print("CONNECTED", s.recv(64))
except OSError as e:
    print("FAILED", e.errno)
'
	for i in $(seq 50); do
		run "$PY" -c "$client" "$name"
		[[ "$output" == CONNECTED* ]] && break
		sleep 0.05
	done
	[[ "$output" == CONNECTED* ]]
	run sbx exec -q -- "$PY" -c "$client" "$name"
	[ "$status" -eq 0 ]
	[[ "$output" == FAILED* ]]
}

@test "NP-02: no DNS beyond /etc/hosts, and it fails quickly" {
	run sbx exec -q -- getent hosts localhost
	[ "$status" -eq 0 ]
	[[ "$output" == *localhost* ]]
	t0=$(date +%s)
	# .invalid never resolves anywhere (RFC 6761); inside there is no
	# resolver to ask in any case.
	run -2 sbx exec -q -- getent hosts example.invalid
	t1=$(date +%s)
	[ $((t1 - t0)) -lt 5 ]
	# No resolv.conf pointing at the host's resolver.
	run sbx exec -q -- sh -c 'cat /etc/resolv.conf 2>/dev/null; true'
	[ -z "$output" ]
}

@test "NP-02: the host's resolver, nscd and D-Bus sockets are not visible" {
	run sbx exec -q -- sh -c '
		for p in /run/systemd/resolve /run/systemd/resolve/io.systemd.Resolve \
		    /var/run/nscd/socket /run/nscd/socket /run/dbus \
		    /run/dbus/system_bus_socket /var/run/dbus /run/systemd/private \
		    /run/user /var/run/docker.sock /run/docker.sock \
		    /tmp/.X11-unix /run/avahi-daemon/socket; do
			[ -e "$p" ] || [ -L "$p" ] && echo "VISIBLE $p"
		done
		true'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
}

@test "network outbound: the loopback listener is reachable, and the envelope says so" {
	start_listener
	run sbx exec --json --network outbound -- "$PY" -c "$probe" "$PORT"
	[ "$status" -eq 0 ]
	echo "$output"
	[ "$(json_get "$output" .result.network)" = outbound ]
	[[ "$(json_get "$output" .result.stdout)" == CONNECTED* ]]
	[ "$(json_get "$output" '[.warnings[]? | select(test("outbound"))] | length')" -ge 1 ]
	# Text mode warns on stderr.
	run sbx exec --network outbound -- true
	[ "$status" -eq 0 ]
	[[ "$output" == *outbound* ]]
}
