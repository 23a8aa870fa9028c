#!/bin/bash
# bench-startup.sh: what each program costs to start (`PROG --version`:
# the loader's work plus main()'s first steps), and what sbx-preflight
# saves by not linking libarchive (and libxml2, ICU and libstdc++ behind
# it).
#
#   RUNS=200 scripts/bench-startup.sh
#
# CPU time per start (perf stat's task-clock, the mean of RUNS starts):
# unlike wall time it hardly moves when other work shares the machine.
# "w/ libarchive" is the same sbx-preflight with libarchive preloaded
# (LD_PRELOAD), i.e. the libraries it mapped when it linked image.c
# whole (before manifest.c was split out).
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
RUNS=${RUNS:-200}
BIN=$(cd "$B" && pwd)
command -v perf >/dev/null || { echo "bench-startup: skipped: perf is not installed"; exit 0; }

# cpu_ms PROG [ENV=VALUE...]: mean task-clock of PROG --version, in ms.
cpu_ms() {
	local prog=$1
	shift
	env "$@" perf stat -r "$RUNS" -x, -e task-clock "$prog" --version \
	    2>&1 >/dev/null | awk -F, '$3 == "task-clock" {printf "%.3f", $1}'
}

printf '%-16s %14s\n' "program" "CPU ms/start"
for p in "$BIN/bin/sbx" "$BIN"/libexec/sbx/sbx-*; do
	name=${p##*/}
	[ "$name" = sbx-init ] && continue
	printf '%-16s %14s\n' "$name" "$(cpu_ms "$p")"
done

arch=$(ldconfig -p 2>/dev/null | awk '/libarchive\.so\.13 / {print $NF; exit}')
if [ -n "$arch" ]; then
	pf=$(cpu_ms "$BIN/libexec/sbx/sbx-preflight")
	pfa=$(cpu_ms "$BIN/libexec/sbx/sbx-preflight" LD_PRELOAD="$arch")
	echo
	printf '%-16s %14s %14s %10s\n' "sbx-preflight" "as built" \
	    "w/ libarchive" "saved"
	printf '%-16s %14s %14s %10s\n' "CPU ms/start" "$pf" "$pfa" \
	    "$(awk -v a="$pf" -v b="$pfa" 'BEGIN {printf "%.3f", b - a}')"
fi
