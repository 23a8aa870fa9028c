#!/bin/bash
# bench-exec.sh: start-up cost of `sbx exec -- /bin/true` against the same
# sandbox built by a bare bwrap command, measured in alternating rounds in
# one go.  Prints p50 and p95 of each and the ratios; then the cost of the
# seccomp filter and of the resource limits (cgroup) against a plain
# `sbx exec` (no filter, no limits), alternating too.
#
#   ROUNDS=10 RUNS=30 scripts/bench-exec.sh
#
# The bare command is sbx's own bwrap command line (sbx exec -v), with the
# descriptor-based binds replaced by the same paths and without sbx-init:
# the difference is exactly what sbx adds.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${ROUNDS:-10}
RUNS=${RUNS:-30}
command -v hyperfine >/dev/null || { echo "bench-exec: hyperfine is not installed (scripts/deps.sh)"; exit 69; }
command -v jq >/dev/null || { echo "bench-exec: jq is not installed"; exit 69; }

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
export SBX_HOME="$tmp/state" SBX_EXEC_PATH="$PWD/$B/libexec/sbx"
SBX="$PWD/$B/bin/sbx"
# The plain configuration: no default limits, so that the cost of the
# limits can be told apart (the real default is pids 1024 + half the RAM).
mkdir -p "$SBX_HOME/config"
printf '{"limits":{"memory_mib":0,"pids":0}}\n' > "$SBX_HOME/config/sandbox.json"
"$SBX" exec -- true
home="$SBX_HOME/workspace/agents/default"
out="$SBX_HOME/output/default"
"$SBX" exec -c 'cat /etc/passwd' > "$tmp/passwd"
"$SBX" exec -c 'cat /etc/group' > "$tmp/group"
"$SBX" exec -c 'cat /etc/hosts' > "$tmp/hosts"

# sbx's bwrap argv, made standalone.
line=$("$SBX" exec -v --seccomp off -- /bin/true 2>&1 >/dev/null | sed -n 's/^sbx-exec: //p' | head -n 1)
read -r -a argv <<<"$line"
bare=()
i=0
while [ $i -lt ${#argv[@]} ]; do
	a=${argv[$i]}
	case "$a" in
	/proc/self/fd/6) bare+=("$home") ;;
	/proc/self/fd/7) bare+=("$out") ;;
	--ro-bind-data)
		n=${argv[$((i + 1))]}; d=${argv[$((i + 2))]}
		case "$n" in 9) f=passwd ;; 10) f=group ;; *) f=hosts ;; esac
		bare+=(--ro-bind "$tmp/$f" "$d"); i=$((i + 3)); continue ;;
	--seccomp) i=$((i + 2)); continue ;;	# compared with --seccomp off
	--)	bare+=(-- /bin/true); break ;;
	*)	bare+=("$a") ;;
	esac
	i=$((i + 1))
done
bare_cmd=$(printf '%q ' "${bare[@]}")
"${bare[@]}"   # must work

bench() {	# name command...: append per-run seconds to $tmp/name
	local name=$1; shift
	hyperfine -N --style none -w 3 -r "$RUNS" --export-json "$tmp/h.json" \
	    "$*" >/dev/null 2>&1
	jq -r '.results[0].times[]' "$tmp/h.json" >> "$tmp/$name"
}
pct() {	# file pct
	sort -g "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; printf "%.2f", a[i]*1000}'
}

: > "$tmp/bare"; : > "$tmp/sbx"; : > "$tmp/json"
: > "$tmp/plain"; : > "$tmp/seccomp"; : > "$tmp/limits"; : > "$tmp/both"
for _ in $(seq "$ROUNDS"); do
	bench bare "$bare_cmd"
	bench sbx "$SBX exec --seccomp off -- /bin/true"
	bench json "$SBX exec --seccomp off --json -- /bin/true"
	bench plain "$SBX exec --seccomp off -- /bin/true"
	bench seccomp "$SBX exec -- /bin/true"
	bench limits "$SBX exec --seccomp off --soft-limits --pids 1024 --memory 1024 -- /bin/true"
	bench both "$SBX exec --soft-limits --pids 1024 --memory 1024 -- /bin/true"
done

b50=$(pct "$tmp/bare" 50); b95=$(pct "$tmp/bare" 95)
printf '%-44s %8s %8s %8s\n' "command ($((ROUNDS * RUNS)) runs each)" "p50 ms" "p95 ms" "p50 ratio"
printf '%-44s %8s %8s %8s\n' "bare bwrap (same sandbox)" "$b50" "$b95" "1.00"
for k in sbx json; do
	p50=$(pct "$tmp/$k" 50); p95=$(pct "$tmp/$k" 95)
	label="sbx exec -- /bin/true"
	[ "$k" = json ] && label="sbx exec --json -- /bin/true"
	label="$label (no filter)"
	printf '%-44s %8s %8s %8s\n' "$label" "$p50" "$p95" \
	    "$(awk -v a="$p50" -v b="$b50" 'BEGIN{printf "%.3f", a/b}')"
done
echo "target: p50 ratio <= 1.25 (same sandbox on both sides: no seccomp filter, no limits)"
echo
p0=$(pct "$tmp/plain" 50)
printf '%-34s %8s %8s %10s\n' "hardening ($((ROUNDS * RUNS)) runs each)" "p50 ms" "p95 ms" "p50 +ms"
for k in plain seccomp limits both; do
	p50=$(pct "$tmp/$k" 50); p95=$(pct "$tmp/$k" 95)
	printf '%-34s %8s %8s %10s\n' "$k" "$p50" "$p95" \
	    "$(awk -v a="$p50" -v b="$p0" 'BEGIN{printf "%+.2f", a-b}')"
done
be=$("$SBX" exec --json --soft-limits --pids 1024 -- /bin/true | jq -r .result.limits.backend)
echo "limits backend: $be; target: seccomp + limits add <= 1.5 ms to p50"
