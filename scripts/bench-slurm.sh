#!/bin/sh
# bench-slurm.sh: what sbx adds to a Slurm job step (issue 33).
#
#   STEPS=200 scripts/bench-slurm.sh
#
# Starts the one-node loopback cluster of the integration test
# (tests/helpers/slurm-cluster.sh; root only, Debian's munge, slurmctld and
# slurmd), with build/lib/slurm/sbx.so in its plugstack.conf, and in one
# allocation of uid 65534 runs STEPS `srun -- /bin/true` steps and STEPS
# `srun --sbx -- /bin/true` steps, alternating (a load that comes and goes
# hits both alike); then STEPS/4 bare `sbx exec -- /bin/true` for
# reference.  Prints per-step p50/p95 in ms and the p50 ratio, and sbx's
# share of a sandboxed step.  Everything lives in a temp dir, removed at
# the end with every daemon, even on failure.
set -u
cd "$(dirname "$0")/.." || exit 1
B=${B:-build}
case $B in
/*) bdir=$B ;;
*) bdir=$PWD/$B ;;
esac
STEPS=${STEPS:-200}
TOP=$PWD

. tests/helpers/slurm-cluster.sh
why=$(slurm_cluster_can_start)
if [ -n "$why" ]; then
	echo "bench-slurm: skipped: $why"
	exit 0
fi
if [ ! -f "$bdir/lib/slurm/sbx.so" ]; then
	echo "bench-slurm: skipped: sbx.so is not built (libslurm-dev)"
	exit 0
fi

T=$(mktemp -d /tmp/sbx-bench-slurm.XXXXXX) || exit 1
chmod 0755 "$T"
C=$T/cluster
trap 'slurm_cluster_stop "$C"; rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
SBX=$bdir/bin/sbx
export SBX_EXEC_PATH="$bdir/libexec/sbx"
mkdir -p "$C"
slurm_cluster_start "$C" "$bdir/lib/slurm/sbx.so" "sbx=$SBX" \
    "libexec=$bdir/libexec/sbx" "home=$T/sbx/%u" || {
	slurm_cluster_logs "$C"
	echo "bench-slurm: the cluster did not start" >&2
	exit 1
}
install -d -o 65534 -g 65534 "$T/sbx" "$T/work"
cd "$T/work" || exit 1
asn() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
asn "$SBX" provision -q --home "$T/sbx/nobody" || exit 1

# The loop runs inside one allocation (salloc runs it here, on the
# submit host): each srun is one step of the same job, as a job's tasks
# are.  One line per step: "bare|sbx NANOSECONDS".
cat >"$T/loop.sh" <<'EOF'
#!/bin/sh
i=0
while [ $i -lt "$1" ]; do
	for kind in bare sbx; do
		opt=""
		[ $kind = sbx ] && opt=--sbx
		t0=$(date +%s%N)
		# shellcheck disable=SC2086 # empty or --sbx
		srun -Q $opt -- /bin/true || echo "$kind step failed" >&2
		t1=$(date +%s%N)
		echo "$kind $((t1 - t0))"
	done
	i=$((i + 1))
done
EOF
chmod 0755 "$T/loop.sh"
asn salloc -Q -N1 "$T/loop.sh" "$STEPS" >"$T/times" 2>"$T/err" || {
	cat "$T/err" >&2
	exit 1
}
i=0
: >"$T/direct"
while [ $i -lt $((STEPS / 4)) ]; do
	t0=$(date +%s%N)
	asn "$SBX" exec --home "$T/sbx/nobody" -- /bin/true
	t1=$(date +%s%N)
	echo "direct $((t1 - t0))" >>"$T/direct"
	i=$((i + 1))
done
cd "$TOP" || exit 1

# pct KIND P: the P-th percentile (nearest rank) of KIND's times, in ms.
pct() {
	grep "^$1 " "$T/times" "$T/direct" 2>/dev/null | cut -d' ' -f2 | sort -n |
	    awk -v p="$2" '{ v[NR] = $1 } END {
		if (NR == 0) { print "nan"; exit }
		r = int((p / 100) * NR + 0.999999); if (r < 1) r = 1
		printf "%.1f\n", v[r] / 1e6 }'
}
failed=$(grep -c 'step failed' "$T/err")
bare50=$(pct bare 50)
bare95=$(pct bare 95)
sbx50=$(pct sbx 50)
sbx95=$(pct sbx 95)
dir50=$(pct direct 50)
dir95=$(pct direct 95)
echo "bench-slurm: $STEPS steps each, one node, one allocation (uid 65534)"
printf '  %-34s p50 %7s ms  p95 %7s ms\n' "srun -- /bin/true" "$bare50" "$bare95"
printf '  %-34s p50 %7s ms  p95 %7s ms\n' "srun --sbx -- /bin/true" "$sbx50" "$sbx95"
printf '  %-34s p50 %7s ms  p95 %7s ms\n' "sbx exec -- /bin/true (no Slurm)" "$dir50" "$dir95"
awk -v a="$sbx50" -v b="$bare50" -v d="$dir50" 'BEGIN {
	printf "  ratio (p50, --sbx / bare): %.2fx; sbx adds %.1f ms a step (%.0f%% of a sandboxed step); sbx exec alone %.1f ms\n",
	    a / b, a - b, 100 * (a - b) / a, d }'
[ "$failed" -eq 0 ] || { echo "bench-slurm: $failed steps failed" >&2; exit 1; }
