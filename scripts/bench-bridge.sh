#!/bin/bash
# bench-bridge.sh: what sbx-bridge costs, against its floor.
#
#   COUNT=400 ENTRIES=10000 scripts/bench-bridge.sh
#
# 1. Authenticated GET /v1/whoami and POST /v1/memory/query over
#    /run/sbx/bridge.sock from inside a sandbox (`sbx exec` with
#    bridge.enabled), one connection per request as sbx-host makes them,
#    with 1 and 8 clients: requests/s, p50 and p95
#    (tests/helpers/bridge-bench, static, copied into the agent's home).
# 2. The floor: the same client, on the host, against a minimal
#    libmicrohttpd server on a unix socket that checks a bearer token and
#    answers a fixed document (tests/helpers/mhd-floor); and `curl
#    --unix-socket` once per request against both, p50 of COUNT/4 runs.
# 3. Memory query p50 with ENTRIES entries stored: a selective query (one
#    entry matches) and a broad one (every entry matches, all ranked).
#
# Everything runs under a fresh state root in a temporary directory, on
# unix sockets only, bounded in count; it is all removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
B=${B:-build}
COUNT=${COUNT:-400}
ENTRIES=${ENTRIES:-10000}
BIN=$(cd "$B" && pwd)
export SBX_EXEC_PATH=$BIN/libexec/sbx SBX_NO_CREATE_USER=1
SBX=$BIN/bin/sbx
BENCH=$BIN/tests/helpers/bridge-bench
FLOOR=$BIN/tests/helpers/mhd-floor
for f in "$BENCH" "$FLOOR" "$BIN/libexec/sbx/sbx-bridge"; do
	[ -x "$f" ] || { echo "bench-bridge: $f is missing (make all tests)"; exit 69; }
done
tmp=$(mktemp -d /tmp/sbx-bench-bridge.XXXXXX)
chmod 0755 "$tmp"
export SBX_HOME=$tmp/root HOME=$tmp/home
mkdir -p "$HOME"
floor_pid=""
cleanup() {
	[ -n "$floor_pid" ] && kill "$floor_pid" 2>/dev/null
	"$SBX" bridge stop -q 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT

"$SBX" provision --agent bench -q
"$SBX" config set --agent bench bridge.enabled true -q
# Rate limits out of the way: this measures the path, not the limiter.
printf '%s\n' '{"bridge":{"rate_limits":{"other":100000},"max_connections_per_agent":64}}' \
    >"$SBX_HOME/config/sandbox.json"
TOK=$(cat "$SBX_HOME/run/tokens/bench")
WS=$SBX_HOME/workspace/agents/bench
cp "$BENCH" "$WS/bb"
chmod 0755 "$WS/bb"
[ "$(id -u)" -eq 0 ] && chown "$(stat -c %u:%g "$WS")" "$WS/bb"

inside() { "$SBX" exec -q --agent bench -- "$@"; }
med() { bench_median 1 %d; }
field() { sed -n "s/.* $1=\([0-9]*\).*/\1/p"; }
row() {
	printf '%-34s %8s %8s %8s   %8s %8s %8s\n' "$@"
}

# Entries carry a word of their own (tN) and two words all share: a
# selective query finds one, a broad one ranks every entry (bm25 over all).
ENTRY='{"text":"note t@N about the deploy key"}'
QUERY='{"text":"t@N","limit":10}'
BROAD='{"text":"deploy key","limit":10}'
"$FLOOR" "$tmp/floor.sock" "$TOK" >"$tmp/floor.out" &
floor_pid=$!
for _ in $(seq 50); do grep -q ready "$tmp/floor.out" 2>/dev/null && break; sleep 0.1; done

# Warm: the bridge starts on the first run.
inside ./bb /run/sbx/bridge.sock "$TOK" GET /v1/whoami - 1 10 >/dev/null

echo "bench-bridge: one connection per request; COUNT=$COUNT per client"
row "" "bridge" "" "" "floor" "" ""
row "request, clients" "req/s" "p50 us" "p95 us" "req/s" "p50 us" "p95 us"
for c in 1 8; do
	n=$((COUNT / c))
	b=$(inside ./bb /run/sbx/bridge.sock "$TOK" GET /v1/whoami - "$c" "$n")
	f=$("$BENCH" "$tmp/floor.sock" "$TOK" GET /v1/whoami - "$c" "$n")
	row "GET /v1/whoami, $c" "$(echo "$b" | field rps)" \
	    "$(echo "$b" | field p50_us)" "$(echo "$b" | field p95_us)" \
	    "$(echo "$f" | field rps)" "$(echo "$f" | field p50_us)" \
	    "$(echo "$f" | field p95_us)"
done
# A small memory first (100 entries), then the query.
inside ./bb /run/sbx/bridge.sock "$TOK" POST /v1/memory \
    "$ENTRY" 4 25 >/dev/null
for c in 1 8; do
	n=$((COUNT / c))
	b=$(inside ./bb /run/sbx/bridge.sock "$TOK" POST /v1/memory/query "$QUERY" "$c" "$n")
	f=$("$BENCH" "$tmp/floor.sock" "$TOK" POST /v1/memory/query "$QUERY" "$c" "$n")
	row "POST /v1/memory/query (100), $c" "$(echo "$b" | field rps)" \
	    "$(echo "$b" | field p50_us)" "$(echo "$b" | field p95_us)" \
	    "$(echo "$f" | field rps)" "$(echo "$f" | field p50_us)" \
	    "$(echo "$f" | field p95_us)"
done

# curl --unix-socket, once per request, from the host: bridge (through a
# relay-free path is not possible; the host reaches it only through a run)
# against the floor; the bridge's through `sbx exec` is above.
runs=$((COUNT / 4))
for _ in $(seq "$runs"); do
	curl -s -o /dev/null -w '%{time_total}\n' --unix-socket "$tmp/floor.sock" \
	    -H "Authorization: Bearer $TOK" http://b/v1/whoami
done | awk '{ printf "%d\n", $1 * 1000000 }' | med >"$tmp/curl-floor"
c_in=$(inside sh -c "for i in \$(seq $runs); do curl -s -o /dev/null -w '%{time_total}\n' \
    --unix-socket /run/sbx/bridge.sock -H \"Authorization: Bearer \$SBX_BRIDGE_TOKEN\" \
    http://b/v1/whoami; done" | awk '{ printf "%d\n", $1 * 1000000 }' | med)
printf 'curl --unix-socket GET /v1/whoami p50: bridge (inside) %s us, floor (host) %s us (%d runs each)\n' \
    "$c_in" "$(cat "$tmp/curl-floor")" "$runs"

# ENTRIES entries, then the query's p50 with 1 client.
left=$((ENTRIES - 100))
inside ./bb /run/sbx/bridge.sock "$TOK" POST /v1/memory \
    "$ENTRY" 8 $((left / 8)) >/dev/null
for q in selective broad; do
	[ $q = selective ] && body=$QUERY || body=$BROAD
	b=$(inside ./bb /run/sbx/bridge.sock "$TOK" POST /v1/memory/query "$body" 1 100)
	printf 'memory query (%s) on %s entries, 1 client: p50 %s us, p95 %s us (%s req/s)\n' \
	    "$q" "$ENTRIES" "$(echo "$b" | field p50_us)" "$(echo "$b" | field p95_us)" \
	    "$(echo "$b" | field rps)"
done
