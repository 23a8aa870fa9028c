#!/bin/bash
# bench-plugin.sh: what a plugin tool run costs over the same command run
# with sbx exec.
#
#   RUNS=20 scripts/bench-plugin.sh
#
# One recipe whose tool prints its parameters.  Each figure is the median
# of RUNS runs, alternating, of:
#   1. sbx exec --json --network none --no-secrets --cwd DIR -c CMD, with
#      the PARAM_* variables given by --env (the peer: the bare engine);
#   2. sbx plugin run --json ID TOOL --param ... (what the plugin adds:
#      reading the installed recipe, the parameters checked against the
#      schema, the environment built, the envelope renamed).
# Nothing is contacted (network none); a fresh state root in a temporary
# directory, removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
B=${B:-build}
RUNS=${RUNS:-20}
BIN=$(cd "$B" && pwd)
SBX=$BIN/bin/sbx
[ -x "$BIN/libexec/sbx/sbx-plugin" ] || { echo "bench-plugin: sbx-plugin is not built (make)"; exit 69; }
command -v jq >/dev/null || { echo "bench-plugin: jq is not installed"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
chmod 0755 "$tmp"
export SBX_HOME="$tmp/state" SBX_EXEC_PATH="$BIN/libexec/sbx" SBX_NO_CREATE_USER=1
cleanup() {
	chmod -R u+rwX "$tmp" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# shellcheck disable=SC2016 # expanded in the sandbox, not here
cmd='printf "%s %s\n" "$PARAM_WHO" "$PARAM_N"'
jq -n --arg cmd "$cmd" '{name: "bench", description: "bench",
    tools: [{id: "t", description: "t", run: $cmd,
      parameters: {type: "object", properties: {
        who: {type: "string"}, n: {type: "integer", default: 3}},
        required: ["who"]}}]}' > "$tmp/bench.json"
"$SBX" provision -q
"$SBX" plugin add -q "$tmp/bench.json"
"$SBX" plugin install -q bench
dir=.sbx/plugins/bench

now() { date +%s.%N; }
time_of() { local t0; t0=$(now); "$@" >/dev/null; awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.6f\n", b - a }'; }
median() { bench_median 1000 %.1f; }

# Both give the same answer (checked once).
a=$("$SBX" exec --json --network none --no-secrets --cwd "$dir" \
    --env PARAM_WHO=x --env PARAM_N=3 -c "$cmd" | jq -r .result.stdout)
b=$("$SBX" plugin run --json --param who=x bench t | jq -r .result.stdout)
[ "$a" = "$b" ] || { echo "bench-plugin: outputs differ: '$a' '$b'"; exit 70; }

: > "$tmp/t.exec"
: > "$tmp/t.plugin"
for _ in $(seq "$RUNS"); do
	time_of "$SBX" exec --json --network none --no-secrets --cwd "$dir" \
	    --env PARAM_WHO=x --env PARAM_N=3 -c "$cmd" >> "$tmp/t.exec"
	time_of "$SBX" plugin run --json --param who=x bench t >> "$tmp/t.plugin"
done
e=$(median < "$tmp/t.exec")
p=$(median < "$tmp/t.plugin")
printf '%-52s %8s\n' "one tool run, median of $RUNS" "ms"
printf '%-52s %8s\n' "sbx exec --json -c CMD (the peer)" "$e"
printf '%-52s %8s\n' "sbx plugin run --json ID TOOL --param ..." "$p"
printf '%-52s %7sx\n' "ratio plugin / exec" "$(bench_ratio "$p" "$e")"
