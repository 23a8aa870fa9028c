#!/bin/bash
# bench-fspolicy.sh: what the file-system policy (issue 13) costs.
#
#   BASE=/path/to/other/build ROUNDS=5 RUNS=30 scripts/bench-fspolicy.sh
#
# Side by side, in alternating rounds, this build against BASE (a build of
# sbx without the policy; default: the merge base with `main`, built once
# into a temp dir, which takes a minute):
#
#  1. `sbx exec --workdir DIR -- /bin/true` on an empty checkout;
#  2. the same on a checkout with a .git directory (`git init`: config and
#     hooks exist, so they are bound read-only, .git over itself);
#  3. a command that creates 1000 files in the workdir (every creation goes
#     through the guard in pid 1): the cost per created name.
#
# p50 and p95 of each, and the difference.  No cgroup (limits 0), so that
# only the sandbox is measured; as root the sandbox runs as nobody, for
# both builds alike.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-30}
. scripts/bench-lib.sh
bench_need bench-fspolicy hyperfine jq
NEW=$(cd "$B" && pwd)

tmp=$(mktemp -d /tmp/sbx-bench-fs.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"

if [ -z "${BASE:-}" ]; then
	mb=$(git merge-base HEAD main)
	echo "# building the base ($mb) in $tmp/base"
	mkdir -p "$tmp/base"
	git archive "$mb" | tar -x -C "$tmp/base"
	make -s -C "$tmp/base" -j2 all >/dev/null 2>&1
	BASE=$tmp/base/build
fi
BASE=$(cd "$BASE" && pwd)

export SBX_HOME="$tmp/state"
mkdir -p "$SBX_HOME/config" "$tmp/empty" "$tmp/repo" "$tmp/many"
printf '{"limits":{"memory_mib":0,"pids":0}}\n' >"$SBX_HOME/config/sandbox.json"
git init -q "$tmp/repo"
chmod -R a+rwX "$tmp/empty" "$tmp/repo" "$tmp/many"

bench() {	# name build command...: append per-run seconds to $tmp/name
	local name=$1 bin=$2; shift 2
	SBX_EXEC_PATH="$bin/libexec/sbx" hyperfine -N --style none -w 3 \
	    -r "$RUNS" --export-json "$tmp/h.json" \
	    "$bin/bin/sbx exec -q $*" >/dev/null 2>&1
	jq -r '.results[0].times[]' "$tmp/h.json" >>"$tmp/$name"
}

cat >"$tmp/many.sh" <<EOF
exec "\$1/bin/sbx" exec -q --workdir "$tmp/many" -c 'for i in \$(seq 1000); do : >f\$i; done; rm -f f*'
EOF
for ((r = 0; r < ROUNDS; r++)); do
	for b in base new; do
		bin=$BASE
		[ "$b" = new ] && bin=$NEW
		bench "$b-empty" "$bin" --workdir "$tmp/empty" -- /bin/true
		bench "$b-git" "$bin" --workdir "$tmp/repo" -- /bin/true
		SBX_EXEC_PATH="$bin/libexec/sbx" hyperfine -N --style none -w 1 \
		    -r 5 --export-json "$tmp/h.json" \
		    "bash $tmp/many.sh $bin" >/dev/null 2>&1
		jq -r '.results[0].times[]' "$tmp/h.json" >>"$tmp/$b-many"
	done
done

printf '%-34s %10s %10s %10s %10s %10s\n' "sbx exec (ms)" "base p50" "new p50" \
    "base p95" "new p95" "p50 diff"
for k in empty git many; do
	case $k in
	empty) what="--workdir (empty) -- /bin/true" ;;
	git) what="--workdir (with .git) -- /bin/true" ;;
	many) what="--workdir: create 1000 files" ;;
	esac
	b50=$(bench_pctf "$tmp/base-$k" 50); n50=$(bench_pctf "$tmp/new-$k" 50)
	printf '%-34s %10s %10s %10s %10s %10s\n' "$what" "$b50" "$n50" \
	    "$(bench_pctf "$tmp/base-$k" 95)" "$(bench_pctf "$tmp/new-$k" 95)" \
	    "$(awk -v a="$b50" -v b="$n50" 'BEGIN { printf "%+.2f", b - a }')"
done
n=$(wc -l <"$tmp/new-many")
printf 'per created name (p50 diff / 1000): %s us; %s runs per cell\n' \
    "$(awk -v a="$(bench_pctf "$tmp/base-many" 50)" -v b="$(bench_pctf "$tmp/new-many" 50)" \
    'BEGIN { printf "%.1f", (b - a) }')" "$n"
