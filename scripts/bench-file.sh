#!/bin/bash
# bench-file.sh: what an sbx file call costs, side by side with doing the
# same through a sandbox (`sbx exec --json -- cat|rg|sed`), the way an
# agent framework does it without file tools.
#
#   RUNS=50 scripts/bench-file.sh
#
# Wall time per call, median and p95 of RUNS calls, in ms, in a state
# root of its own (removed at the end).  read, list, write and edit never
# start a sandbox; search runs ripgrep in one, so it costs what exec does
# plus the parsing.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/bench-lib.sh
B=${B:-build}
RUNS=${RUNS:-50}
BIN=$(cd "$B" && pwd)
SBX=$BIN/bin/sbx
export SBX_EXEC_PATH=$BIN/libexec/sbx SBX_NO_CREATE_USER=1
tmp=$(mktemp -d /tmp/sbx-bench-file.XXXXXX)
chmod 755 "$tmp"	# as root, the sandbox's uid must reach the root
trap 'chmod -R u+rwX "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
export SBX_HOME=$tmp/root

# ms CMD...: median and p95 wall ms of RUNS runs of CMD (output dropped).
ms() {
	local i t0 t1
	for ((i = 0; i < RUNS; i++)); do
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 </dev/null || true
		t1=$(date +%s%N)
		echo $(((t1 - t0) / 1000))
	done >"$tmp/us"
	printf '%s %s' "$(bench_pct 50 0.001 <"$tmp/us")" \
	    "$(bench_pct 95 0.001 <"$tmp/us")"
}

"$SBX" exec -- true
seq 1 200 | "$SBX" file write -q small.txt
for i in $(seq 1 50); do
	seq 1 200 | "$SBX" file write -q "tree/d$((i % 5))/f$i.txt" --create-dirs
done
echo "needle here" | "$SBX" file write -q tree/d1/needle.txt

printf '%-34s %9s %9s   %-30s %9s %9s %7s\n' "sbx file" "p50 ms" "p95 ms" \
    "sbx exec --json (peer)" "p50 ms" "p95 ms" "ratio"
pair() {
	local label=$1 peer=$2 f e
	f=$3
	e=$4
	read -r f50 f95 <<<"$f"
	read -r e50 e95 <<<"$e"
	printf '%-34s %9s %9s   %-30s %9s %9s %7s\n' "$label" "$f50" "$f95" \
	    "$peer" "$e50" "$e95" \
	    "$(bench_ratio "$f50" "$e50")"
}
pair "read small.txt --json" "-- cat small.txt" \
    "$(ms "$SBX" file read small.txt --json)" \
    "$(ms "$SBX" exec --json -- cat small.txt)"
pair "list tree --depth 2 --json" "-- find tree -maxdepth 2" \
    "$(ms "$SBX" file list tree --depth 2 --json)" \
    "$(ms "$SBX" exec --json -- find tree -maxdepth 2)"
pair "edit small.txt --old --new --json" "-- sed -i s/x/y/ small.txt" \
    "$(ms "$SBX" file edit small.txt --old $'\n100\n' --new $'\n100\n' --json)" \
    "$(ms "$SBX" exec --json -- sed -i s/x/y/ small.txt)"
pair "search needle --json" "-- rg --json needle" \
    "$(ms "$SBX" file search needle --json)" \
    "$(ms "$SBX" exec --json -- rg --json needle)"
echo "(RUNS=$RUNS; ratio = sbx file p50 / sbx exec p50)"
