#!/bin/bash
# bench-mcp.sh: what MCP costs, side by side.
#
#   N=50 scripts/bench-mcp.sh
#
# In one run, against one fresh state root (a temporary directory removed
# at the end):
#   direct     `sbx exec -- true`, N runs (hyperfine, 2 warm-up)
#   shell_run  tools/call of shell_run {argv:["true"]} through the
#              reference TypeScript SDK client (tests/helpers/mcp-client.mjs)
#              over one `sbx mcp` session, N round trips
#   file_read  tools/call of file_read of a small file, N round trips
#   shell_run(--no-session)  the same with sbx mcp --no-session: each
#              call a sandbox of its own (the default runs them in the
#              client's warm session, issue 31: target p50 <= 5 ms)
# p50/p95 in ms and the p50 ratio of each MCP call to the direct run.
# Only local processes; bounded: 3 x N calls.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
N=${N:-50}
. scripts/bench-lib.sh
bench_need bench-mcp hyperfine jq node
[ -d tests/mcp-client/node_modules/@modelcontextprotocol/sdk ] ||
    { echo "bench-mcp: the MCP SDK is not installed (sh scripts/deps.sh --mcp-client)"; exit 69; }
BIN=$(cd "$B" && pwd)
export SBX_NO_CREATE_USER=1 SBX_EXEC_PATH=$BIN/libexec/sbx SBX=$BIN/bin/sbx

tmp=$(mktemp -d /tmp/sbx-bench-mcp.XXXXXX)
chmod 0755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
export SBX_HOME=$tmp/state
"$SBX" provision -q

hyperfine -N --style none -w 2 -r "$N" --export-json "$tmp/h.json" \
    "$SBX exec -- true" >/dev/null 2>&1 ||
    { echo "bench-mcp: sbx exec -- true failed" >&2; exit 1; }
jq -r '.results[0].times[]' "$tmp/h.json" >"$tmp/direct"
d50=$(bench_pct 50 1000 %f <"$tmp/direct")
d95=$(bench_pct 95 1000 %f <"$tmp/direct")

node tests/helpers/mcp-client.mjs bench "$N" > "$tmp/mcp.txt"
node tests/helpers/mcp-client.mjs bench "$N" --no-session | grep '^shell_run' \
    >> "$tmp/mcp.txt"

printf '%-40s %10s %10s %8s\n' "" "p50 ms" "p95 ms" "p50 x"
printf '%-40s %10.2f %10.2f %8s\n' "sbx exec -- true" "$d50" "$d95" "1.00"
while read -r name _ p50 _ _ p95 _; do
	printf '%-40s %10.2f %10.2f %8.2f\n' "mcp tools/call $name" "$p50" \
	    "$p95" "$(bench_ratio "$p50" "$d50" %f)"
done < "$tmp/mcp.txt"
grep -o '(n=.*' "$tmp/mcp.txt" | sed 's/^/# /'
echo "target: tools/call shell_run (warm session) p50 <= 5 ms"
