# bench-lib.sh: what the scripts/bench-*.sh share; sourced, never run.
#
#   . scripts/bench-lib.sh   (after `cd "$(dirname "$0")/.."`)
#
# Percentiles and medians of a column of numbers, ratios, the check for a
# missing tool (exit 69, as the programs say "unavailable"), and verdict
# lines against a target with the exit status they add up to
# (bench_done).
# shellcheck shell=sh

# bench_pct P [SCALE [FMT]] <numbers: the P-th percentile of the numbers
# on stdin (nearest rank from below: the sorted value at int((N-1)*P/100)
# + 1), times SCALE (1), printed with FMT (%.2f); "-" when there are none.
# P 50 is the median (the lower middle one of an even count).
bench_pct() {
	sort -g | awk -v p="$1" -v s="${2:-1}" -v f="${3:-%.2f}" '
	    { a[NR] = $1 }
	    END { if (NR == 0) { printf "-"; exit }
		  printf f, a[int((NR - 1) * p / 100) + 1] * s }'
}

# bench_pctf FILE P: the P-th percentile of a file of seconds, in ms
# (%.2f); "-" when the file is empty or missing.
bench_pctf() {
	if [ -s "$1" ]; then bench_pct "$2" 1000 <"$1"; else printf -- -; fi
}

# bench_median [SCALE [FMT]] <numbers: bench_pct 50.
bench_median() { bench_pct 50 "${1:-1}" "${2:-%.2f}"; }

# bench_ratio A B [FMT]: A / B with FMT (%.2f); "-" when B is empty, not a
# number or zero.
bench_ratio() {
	awk -v a="$1" -v b="$2" -v f="${3:-%.2f}" 'BEGIN {
	    if (b + 0 == 0) printf "-"; else printf f, a / b }'
}

# bench_need NAME TOOL...: each TOOL on $PATH, or "NAME: TOOL is not
# installed (scripts/deps.sh)" and exit 69.
bench_need() {
	_bn=$1
	shift
	for _bt in "$@"; do
		if ! command -v "$_bt" >/dev/null 2>&1; then
			echo "$_bn: $_bt is not installed (scripts/deps.sh)"
			exit 69
		fi
	done
}

# bench_verdict LABEL VALUE OP TARGET: one line "LABEL: VALUE (target OP
# TARGET): ok" or "... missed", OP one of <= >= < >; a missed target is
# remembered for bench_done.  A VALUE of "-" (not measured) is "unproven"
# and not a miss.
BENCH_MISSED=0
bench_verdict() {
	_bv=$(awk -v v="$2" -v op="$3" -v t="$4" 'BEGIN {
	    if (v == "-" || v == "") { print "unproven"; exit }
	    v += 0; t += 0
	    if (op == "<=") ok = v <= t
	    else if (op == ">=") ok = v >= t
	    else if (op == "<") ok = v < t
	    else ok = v > t
	    print ok ? "ok" : "missed" }')
	echo "$1: $2 (target $3 $4): $_bv"
	[ "$_bv" != missed ] || BENCH_MISSED=$((BENCH_MISSED + 1))
}

# bench_done: the script's last command, whose status is the script's:
# 0, or 1 when BENCH_STRICT=1 and a verdict missed its target (a figure
# is a measurement, not a test: make bench reports, a CI job that wants
# a gate sets BENCH_STRICT).
bench_done() {
	[ "$BENCH_MISSED" -gt 0 ] || return 0
	echo "$BENCH_MISSED target(s) missed"
	[ "${BENCH_STRICT:-0}" != 1 ]
}
