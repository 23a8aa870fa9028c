#!/bin/bash
# bench-exec.sh: start-up cost of `sbx exec -- /bin/true`.
#
#   ROUNDS=10 RUNS=30 scripts/bench-exec.sh
#
# 1. Against the same sandbox built by a bare bwrap command (sbx's own bwrap
#    command line from `sbx exec -v`, the descriptor-based binds replaced
#    by the same paths, without sbx-init), in alternating rounds; p50, p95
#    and the ratio.  Run as an unprivileged user (as root, via setpriv as
#    uid 65534), where sbx and bare bwrap run the sandbox as the same uid.
# 2. The cost of the seccomp filter and of the resource limits (cgroups;
#    as root, since only root has a writable cgroup here) against a plain
#    `sbx exec` with neither, alternating too.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${ROUNDS:-10}
RUNS=${RUNS:-30}
command -v hyperfine >/dev/null || { echo "bench-exec: hyperfine is not installed (scripts/deps.sh)"; exit 69; }
command -v jq >/dev/null || { echo "bench-exec: jq is not installed"; exit 69; }
BIN=$(cd "$B" && pwd)

tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"

bench() {	# name command...: append per-run seconds to $tmp/name
	local name=$1; shift
	hyperfine -N --style none -w 3 -r "$RUNS" --export-json "$tmp/h.json" \
	    "$*" >/dev/null 2>&1
	jq -r '.results[0].times[]' "$tmp/h.json" >> "$tmp/$name"
}
pct() {	# file pct
	sort -g "$1" | awk -v p="$2" '{a[NR]=$1} END {i=int((NR-1)*p/100)+1; printf "%.2f", a[i]*1000}'
}

main_part() {	# as the user who runs the sandbox
	export SBX_HOME="$tmp/state" SBX_EXEC_PATH="$BIN/libexec/sbx"
	SBX="$BIN/bin/sbx"
	mkdir -p "$SBX_HOME/config"
	# No default limits: the same sandbox as the bare command.
	printf '{"limits":{"memory_mib":0,"pids":0}}\n' > "$SBX_HOME/config/sandbox.json"
	"$SBX" exec -q -- true
	home="$SBX_HOME/workspace/agents/default"
	out="$SBX_HOME/output/default"
	"$SBX" exec -q -c 'cat /etc/passwd' > "$tmp/passwd"
	"$SBX" exec -q -c 'cat /etc/group' > "$tmp/group"
	"$SBX" exec -q -c 'cat /etc/hosts' > "$tmp/hosts"
	line=$("$SBX" exec -v -q --seccomp off -- /bin/true 2>&1 >/dev/null |
	    sed -n 's/^sbx-exec: //p' | head -n 1)
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
		--)	bare+=(-- /bin/true); break ;;
		*)	bare+=("$a") ;;
		esac
		i=$((i + 1))
	done
	bare_cmd=$(printf '%q ' "${bare[@]}")
	"${bare[@]}"	# must work

	: > "$tmp/bare"; : > "$tmp/sbx"; : > "$tmp/json"; : > "$tmp/filter"
	for _ in $(seq "$ROUNDS"); do
		bench bare "$bare_cmd"
		bench sbx "$SBX exec -q --seccomp off -- /bin/true"
		bench json "$SBX exec -q --seccomp off --json -- /bin/true"
		bench filter "$SBX exec -q -- /bin/true"
	done
	b50=$(pct "$tmp/bare" 50); b95=$(pct "$tmp/bare" 95)
	echo "as uid $(id -u), $((ROUNDS * RUNS)) runs each, alternating rounds"
	printf '%-46s %8s %8s %8s\n' "command" "p50 ms" "p95 ms" "p50 ratio"
	printf '%-46s %8s %8s %8s\n' "bare bwrap (same sandbox)" "$b50" "$b95" "1.00"
	for k in sbx json filter; do
		case $k in
		sbx) label="sbx exec -- /bin/true" ;;
		json) label="sbx exec --json -- /bin/true" ;;
		filter) label="sbx exec -- /bin/true, with seccomp" ;;
		esac
		p50=$(pct "$tmp/$k" 50); p95=$(pct "$tmp/$k" 95)
		printf '%-46s %8s %8s %8s\n' "$label" "$p50" "$p95" \
		    "$(awk -v a="$p50" -v b="$b50" 'BEGIN{printf "%.3f", a/b}')"
	done
	echo "target: p50 ratio <= 1.25 (sbx exec vs bare bwrap, same sandbox)"
}

hardening_part() {	# as root when root: cgroups are root's here
	export SBX_HOME="$tmp/state2" SBX_EXEC_PATH="$BIN/libexec/sbx"
	SBX="$BIN/bin/sbx"
	mkdir -p "$SBX_HOME/config"
	printf '{"limits":{"memory_mib":0,"pids":0}}\n' > "$SBX_HOME/config/sandbox.json"
	"$SBX" exec -q -- true
	: > "$tmp/plain"; : > "$tmp/seccomp"; : > "$tmp/limits"; : > "$tmp/both"
	lim="--soft-limits --pids 1024 --memory 1024"
	for _ in $(seq "$ROUNDS"); do
		bench plain "$SBX exec -q --seccomp off -- /bin/true"
		bench seccomp "$SBX exec -q -- /bin/true"
		bench limits "$SBX exec -q --seccomp off $lim -- /bin/true"
		bench both "$SBX exec -q $lim -- /bin/true"
	done
	be=$("$SBX" exec -q --json --soft-limits --pids 1024 -- /bin/true |
	    jq -r .result.limits.backend)
	echo "as uid $(id -u), limits backend $be, $((ROUNDS * RUNS)) runs each"
	p0=$(pct "$tmp/plain" 50)
	printf '%-46s %8s %8s %8s\n' "variant" "p50 ms" "p95 ms" "p50 +ms"
	for k in plain seccomp limits both; do
		p50=$(pct "$tmp/$k" 50); p95=$(pct "$tmp/$k" 95)
		printf '%-46s %8s %8s %8s\n' "$k" "$p50" "$p95" \
		    "$(awk -v a="$p50" -v b="$p0" 'BEGIN{printf "%+.2f", a-b}')"
	done
	echo "target: seccomp + limits add <= 1.5 ms to p50"
}

case "${BENCH_PART:-all}" in
main)	main_part; exit 0 ;;
esac
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	chmod -R a+rX "$tmp"
	setpriv --reuid=65534 --regid=65534 --clear-groups env -i \
	    PATH=/usr/local/bin:/usr/bin:/bin BENCH_PART=main B="$BIN" \
	    ROUNDS="$ROUNDS" RUNS="$RUNS" TMPDIR=/tmp bash "$0"
else
	main_part
fi
echo
hardening_part
