#!/bin/bash
# bench-proxy-upstream.sh: the cost of chaining sbx-proxy to a parent
# proxy (proxy.upstream, issue 20).
#
#   SIZE_MIB=512 TRIES=3 scripts/bench-proxy-upstream.sh
#
# A SIZE_MIB stream from a loopback server, read through a CONNECT tunnel
# from inside `sbx exec --network proxy` (an opaque port: no TLS cost):
# once with sbx-proxy dialling the server itself (agent `bench`), once
# through a minimal parent proxy on loopback (agent `benchup`, whose
# `upstream` is `proxy-bench parent`: a process per connection, splice),
# and once through that parent alone from the host, against the direct
# read; best of TRIES each, alternating; MiB/s side by side and ratios.
# Then the time to open a tunnel (CONNECT to the 200), median of 200,
# for the same three paths.
#
# Only 127.0.0.1 is contacted (bench.sbx.test maps to it); everything runs
# under a fresh state root in a temporary directory and is removed.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
SIZE_MIB=${SIZE_MIB:-512}
TRIES=${TRIES:-3}
. scripts/bench-lib.sh
bench_need bench-proxy-upstream jq python3
BIN=$(cd "$B" && pwd)
SBX=$BIN/bin/sbx
HELPER=$BIN/tests/helpers/proxy-bench
PY=$(command -v python3 || true)
[ -x "$BIN/libexec/sbx/sbx-proxy" ] || { echo "bench-proxy-upstream: sbx-proxy is not built (make)"; exit 69; }
[ -x "$HELPER" ] || { echo "bench-proxy-upstream: $HELPER is missing (make tests)"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench-up.XXXXXX)
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state" SBX_EXEC_PATH="$BIN/libexec/sbx"
server=
parent=
cleanup() {
	local p
	for p in $parent $server; do
		kill -TERM "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	timeout 10 "$SBX" proxy stop >/dev/null 2>&1 || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

first_line() {	# file: its first line once there (5 s)
	local l
	for _ in $(seq 100); do
		l=$(head -n 1 "$1" 2>/dev/null || true)
		[ -n "$l" ] && { echo "$l"; return 0; }
		sleep 0.05
	done
	return 1
}

"$HELPER" serve $((SIZE_MIB * 1048576)) > "$tmp/port" &
server=$!
port=$(first_line "$tmp/port") || { echo "bench-proxy-upstream: no server"; exit 70; }
"$HELPER" parent > "$tmp/pport" &
parent=$!
pport=$(first_line "$tmp/pport") || { echo "bench-proxy-upstream: no parent"; exit 70; }

mkdir -p "$SBX_HOME/config/agents"
echo '{"proxy": {"header_timeout_ms": 60000}}' > "$SBX_HOME/config/sandbox.json"
for a in bench benchup; do
	jq -n --argjson p "$port" --arg a "$a" --arg up "http://127.0.0.1:$pport" '
	    {network: "proxy", allowed_domains: ["bench.sbx.test"],
	     allowed_ports: [$p], opaque_ports: [$p], allow_private: true,
	     resolve: {"bench.sbx.test": "127.0.0.1"}}
	    + (if $a == "benchup" then {upstream: $up} else {} end)' \
	    > "$SBX_HOME/config/agents/$a.json"
	"$SBX" exec -q --network none --agent "$a" -- true
	cp "$HELPER" "$SBX_HOME/workspace/agents/$a/proxy-bench"
	chmod 0755 "$SBX_HOME/workspace/agents/$a/proxy-bench"
done
target="bench.sbx.test:$port"
px() { local a=$1; shift; timeout 300 "$SBX" exec -q --network proxy --agent "$a" -- "$@"; }
px bench true

# The parent alone, from the host: the same client, pointed at it.
parent_stream() {
	timeout 300 "$PY" - "$pport" "$target" <<'PYEOF'
import socket, sys, time
pp, target = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", pp))
t0 = time.monotonic()
s.sendall(("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (target, target)).encode())
buf = b""
while b"\r\n\r\n" not in buf:
    buf += s.recv(1)
s.sendall(b"STREAM\n")
n = 0
b = bytearray(1 << 20)
while True:
    r = s.recv_into(b)
    if not r:
        break
    n += r
print(n, time.monotonic() - t0)
PYEOF
}

best() { awk -v a="$1" -v b="$2" -v s="$3" 'BEGIN { r = b / 1048576 / s; print (r > a ? r : a) }'; }
bd=0; bt=0; bu=0; bp=0
want=$((SIZE_MIB * 1048576))
for _ in $(seq "$TRIES"); do
	read -r bytes secs < <(timeout 300 "$HELPER" stream "127.0.0.1:$port")
	[ "$bytes" -eq "$want" ] || { echo "direct: $bytes bytes"; exit 70; }
	bd=$(best "$bd" "$bytes" "$secs")
	read -r bytes secs < <(px bench /workspace/agents/bench/proxy-bench stream -x "$target")
	[ "$bytes" -eq "$want" ] || { echo "tunnel: $bytes bytes"; exit 70; }
	bt=$(best "$bt" "$bytes" "$secs")
	read -r bytes secs < <(px benchup /workspace/agents/benchup/proxy-bench stream -x "$target")
	[ "$bytes" -eq "$want" ] || { echo "chained: $bytes bytes"; exit 70; }
	bu=$(best "$bu" "$bytes" "$secs")
	read -r bytes secs < <(parent_stream)
	[ "$bytes" -eq "$want" ] || { echo "parent alone: $bytes bytes"; exit 70; }
	bp=$(best "$bp" "$bytes" "$secs")
done

# Tunnel set-up time, median of 200 CONNECTs from inside (each to a 200,
# then closed), through sbx-proxy alone and chained.
setup_ms() {	# agent
	px "$1" python3 - "$target" <<'PYEOF'
import base64, os, socket, statistics, sys, time
target = sys.argv[1]
cred = os.environ["HTTP_PROXY"].split("://", 1)[1].rsplit("@", 1)[0]
auth = "Proxy-Authorization: Basic " + base64.b64encode(cred.encode()).decode()
req = ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n\r\n" % (target, target, auth)).encode()
ts = []
for _ in range(200):
    t0 = time.monotonic()
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(req)
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = s.recv(4096)
        if not d:
            break
        buf += d
    ts.append(time.monotonic() - t0)
    s.close()
    assert buf.startswith(b"HTTP/1.1 200"), buf[:40]
print("%.3f" % (statistics.median(ts) * 1000))
PYEOF
}
sd=$(setup_ms bench)
su=$(setup_ms benchup)

pc() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f%%", 100 * a / b }'; }
echo "sbx-proxy chained to a parent proxy, as uid $(id -u), $(nproc) CPUs, loopback only"
printf '%-48s %10s %10s\n' "throughput ($SIZE_MIB MiB, best of $TRIES)" "MiB/s" "vs direct"
printf '%-48s %10.0f %10s\n' "  direct loopback read" "$bd" "100.0%"
printf '%-48s %10.0f %10s\n' "  through sbx-proxy (dials itself)" "$bt" "$(pc "$bt" "$bd")"
printf '%-48s %10.0f %10s\n' "  through sbx-proxy -> parent (upstream)" "$bu" "$(pc "$bu" "$bd")"
printf '%-48s %10.0f %10s\n' "  reference: the parent alone, from the host" "$bp" "$(pc "$bp" "$bd")"
printf '%-48s %10s\n' "  chaining cost (chained vs sbx-proxy alone)" "$(pc "$bu" "$bt")"
printf '%-48s %10s %10s\n' "CONNECT to 200, median of 200" "sbx-proxy" "chained"
printf '%-48s %9s %9s  (%s ms more)\n' "  ms" "$sd" "$su" \
    "$(awk -v a="$su" -v b="$sd" 'BEGIN { printf "%+.3f", a - b }')"
