#!/bin/bash
# bench-exec.sh: start-up cost of `sbx exec`, against bubblewrap.
#
#   ROUNDS=8 RUNS=25 LOOP=100 BASE=/path/to/other/build scripts/bench-exec.sh
#
# In one run, as uid 65534 (via setpriv when started as root) and then as
# root (default limits on: a cgroup per run), in alternating rounds:
#   minimal   the sandbox a user could hand-roll with bwrap: /usr read-only,
#             the usr symlinks, --proc --dev --tmpfs /tmp --unshare-all
#             --die-with-parent --new-session --clearenv -- /bin/true
#   own argv  sbx's own bwrap command line (from `sbx exec -v`) run bare,
#             descriptors replaced by paths, without sbx-init (as root:
#             through setpriv as uid 65534, as sbx runs it)
#   sbx       sbx exec -- /bin/true; --json; --network proxy (proxy up)
#   srt       sbx srt -- /bin/true (srt's settings: a network section, so
#             the proxy, and the host view), and srt /bin/true itself when
#             installed (SRT=PATH, or srt on PATH; issue 35)
#   disk      as root, where loop devices are: sbx exec --hard-limits of an
#             agent with a disk image (sbx provision --disk-image 64m;
#             issue 32), mounted already (per-agent mount, the default), and
#             "disk mount": the same with the image unmounted before each
#             run (sbx exec gc in hyperfine's --prepare), the cost of the
#             mount itself
#   warm      sbx exec --session NAME -- /bin/true: a command in a warm
#             session (sbx session start, issue 31)
#   floor     what a warm command cannot go below: its client's process
#             start (sbx --version: exec, libc's start-up, exit) and the
#             command's own (/bin/true on the host); their sum is the
#             warm row's floor, whatever sbx does in between
#   base      the same three of another build (BASE=dir), if given
# p50/p95 in ms and the p50 ratio against the minimal bwrap; then the CPU
# time per run (perf stat task-clock of the command and all its
# descendants, CPURUNS runs per round, median of the rounds) and its
# ratio: on a loaded machine wall-clock waits for a core, CPU time less.  Then LOOP
# sequential `sh -c 'echo hi'` (a Makefile, an agent loop): the minimal
# bwrap against `sbx exec -- sh -c` (the same shell; and BASE), and sbx exec -c
# (bash -o pipefail -c) for reference, median of 3 loops each, interleaved.
# Targets (issue 19): <= 1.4x as a user, <= 1.6x as root, loop <= 1.5x;
# (issue 31) warm /bin/true <= 0.35x, warm loop <= 0.4x, and the session's
# pid 1 as large (RSS, descriptors) after 1,000 commands as after 10.
# Each row starts after SETTLE seconds (0.5) of quiet: the kernel's
# deferred teardown of the previous row's namespaces is not charged to
# it.  Only loopback is used; everything lives in a temporary directory that
# is removed at the end.  Bounded: 2 x (ROUNDS x RUNS x 6) runs and
# 2 x 3 x LOOP x 3 (or 4) runs.
set -euo pipefail
cd "$(dirname "$0")/.."
B=${B:-build}
ROUNDS=${ROUNDS:-8}
RUNS=${RUNS:-25}
LOOP=${LOOP:-100}
BASE=${BASE:-}
SETTLE=${SETTLE:-0.5}
. scripts/bench-lib.sh
bench_need bench-exec hyperfine jq
BIN=$(cd "$B" && pwd)
[ -z "$BASE" ] || BASE=$(cd "$BASE" && pwd)
BWRAP=$(command -v bwrap)
SRT=${SRT:-$(command -v srt 2>/dev/null || true)}
# CPU time per run needs perf (linux-perf) allowed to count its own
# children's task-clock (perf_event_paranoid <= 2); without it, "-".
CPURUNS=${CPURUNS:-10}
PERF=$(command -v perf || true)
if [ -n "$PERF" ] && ! "$PERF" stat -x, -e task-clock -o /dev/null -- true \
    >/dev/null 2>&1; then PERF=; fi
export SBX_NO_CREATE_USER=1

tmp=${BENCH_TMP:-}
own_tmp=0
if [ -z "$tmp" ]; then
	tmp=$(mktemp -d /tmp/sbx-bench.XXXXXX)
	chmod 0755 "$tmp"
	own_tmp=1
fi
cleanup() {
	local h
	for h in "$tmp"/state-*; do
		[ -d "$h" ] || continue
		SBX_HOME=$h timeout 10 "$BIN/bin/sbx" proxy stop >/dev/null 2>&1 || true
		# The disk row's image (root): unmounted, its loop device
		# goes with it (autoclear).
		[ "$(id -u)" != 0 ] || SBX_HOME=$h "$BIN/bin/sbx" exec gc -q \
		    >/dev/null 2>&1 || true
		for s in $(SBX_HOME=$h "$BIN/bin/sbx" session ls --json 2>/dev/null |
		    jq -r '.result.sessions[]?.name'); do
			SBX_HOME=$h timeout 10 "$BIN/bin/sbx" session stop "$s" \
			    >/dev/null 2>&1 || true
		done
	done
	[ "$own_tmp" = 0 ] || rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

bench() {	# name command: append per-run seconds to $tmp/<part>.name
	local name=$1; shift
	# Every row starts on a settled machine: the kernel tears the
	# previous row's namespaces down after its runs end (cleanup_net,
	# RCU callbacks, on the other core), and a row that starts at once
	# pays for its predecessor's.  The same pause before every row.
	sleep "$SETTLE"
	hyperfine -N --style none -w 2 -r "$RUNS" --export-json "$tmp/h.json" \
	    ${PREP:+--prepare "$PREP"} "$*" >/dev/null 2>&1 ||
	    { echo "bench-exec: failed: $*" >&2; exit 1; }
	jq -r '.results[0].times[]' "$tmp/h.json" >> "$tmp/$PART.$name"
	# CPU: perf counts every descendant, in any namespace (getrusage
	# misses some of bwrap's), as task-clock ms per run.
	[ -n "$PERF" ] || return 0
	eval "$PERF stat -x, -e task-clock -o $tmp/perf.txt -r $CPURUNS -- $*" \
	    >/dev/null 2>&1 || { echo "bench-exec: perf failed: $*" >&2; exit 1; }
	awk -F, '/task-clock/ {print $1 / 1000; exit}' "$tmp/perf.txt" \
	    >> "$tmp/$PART.$name.cpu"
}

# The hand-rolled reference sandbox.
minimal=("$BWRAP" --ro-bind /usr /usr)
for d in /bin /sbin /lib /lib32 /lib64 /libx32; do
	if [ -L "$d" ]; then minimal+=(--symlink "$(readlink "$d")" "$d")
	elif [ -d "$d" ]; then minimal+=(--ro-bind "$d" "$d"); fi
done
minimal+=(--proc /proc --dev /dev --tmpfs /tmp --unshare-all
    --die-with-parent --new-session --clearenv)

part() {	# label: one user's measurements
	PART=$(id -u)
	local label=$1 h="$tmp/state-$PART" sbx="$BIN/bin/sbx" v
	export SBX_HOME="$h" SBX_EXEC_PATH="$BIN/libexec/sbx"
	mkdir -p "$h/config"
	# A name the proxy resolves to loopback: proxy mode needs a policy.
	"$sbx" exec -q -- true
	"$sbx" proxy start >/dev/null 2>&1 || true
	"$sbx" exec -q --network proxy -- true
	# srt's settings, the same file for sbx srt and srt.
	printf '%s\n' '{"network":{"allowedDomains":[],"deniedDomains":[]},
	    "filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}' \
	    > "$tmp/srt.$PART.json"
	"$sbx" srt -q -s "$tmp/srt.$PART.json" -- /bin/true
	# sbx's own argv, run bare.
	local home="$h/workspace/agents/default" out="$h/output/default"
	"$sbx" exec -q -c 'cat /etc/passwd' > "$tmp/passwd.$PART"
	"$sbx" exec -q -c 'cat /etc/group' > "$tmp/group.$PART"
	"$sbx" exec -q -c 'cat /etc/hosts' > "$tmp/hosts.$PART"
	local line argv bare i a n d f
	line=$("$sbx" exec -v -q --seccomp off -- /bin/true 2>&1 >/dev/null |
	    sed -n 's/^sbx-exec: //p' | head -n 1)
	read -r -a argv <<<"$line"
	bare=()
	i=0
	while [ $i -lt ${#argv[@]} ]; do
		a=${argv[$i]}
		case "$a" in
		/proc/self/fd/6) bare+=("$home") ;;
		/proc/self/fd/7) bare+=("$out") ;;
		/proc/self/fd/15) bare+=("$(find "$h/cache/etc" -mindepth 2 \
		    -maxdepth 2 -name etc -path '*/[0-9a-f]*/etc' | head -n 1)") ;;
		--ro-bind-data)
			n=${argv[$((i + 1))]}; d=${argv[$((i + 2))]}
			case "$n" in
			9) f=$tmp/passwd.$PART ;; 10) f=$tmp/group.$PART ;;
			11) f=$tmp/hosts.$PART ;; *) f=$BIN/libexec/sbx/sbx-init ;;
			esac
			bare+=(--ro-bind "$f" "$d"); i=$((i + 3)); continue ;;
		--)	bare+=(-- /bin/true); break ;;
		*)	bare+=("$a") ;;
		esac
		i=$((i + 1))
	done
	# As root, sbx runs the sandbox as the sbx system user when there is
	# one (else uid 65534): so does its argv.
	local su sg
	su=$(id -u sbx 2>/dev/null || echo 65534)
	sg=$(id -g sbx 2>/dev/null || echo 65534)
	[ "$PART" != 0 ] || bare=(setpriv --reuid="$su" --regid="$sg" --clear-groups "${bare[@]}")
	"${bare[@]}"	# must work
	"${minimal[@]}" /bin/true
	local bare_cmd min_cmd
	bare_cmd=$(printf '%q ' "${bare[@]}")
	min_cmd=$(printf '%q ' "${minimal[@]}" /bin/true)
	# A warm session for the `warm` rows (issue 31).
	local ws
	ws=$("$sbx" session start --idle-timeout 3600)
	"$sbx" exec -q --session "$ws" -- /bin/true	# must work
	local names=(minimal own sbx json proxy srt warm floor floortrue)
	[ -z "$SRT" ] || names+=(srtnpm)
	# Hard disk limit (root, loop devices): an agent with an image.
	local disk=0
	if [ "$PART" = 0 ] && [ -w /dev/loop-control ] &&
	    "$sbx" provision -q --agent disk --disk-image 64m >/dev/null 2>&1; then
		disk=1
		names+=(disk diskmount)
	fi
	[ -z "$BASE" ] || names+=(base basejson baseproxy)
	# Per-agent uids (issue 32): a root of its own with identity.per_agent
	# on, the agent's ids allocated once here (a registry of the bench's
	# own); as a plain user without a subordinate range it stays shared.
	local hu="$tmp/state-uids-$PART" umode
	mkdir -p "$hu/config"
	printf '{"identity":{"per_agent":true}}\n' > "$hu/config/sandbox.json"
	umode=$(SBX_IDENTITY_REGISTRY="$tmp/reg.$PART" "$sbx" exec --home "$hu" \
	    --json -- /bin/true | jq -r .result.identity)
	names+=(uids)
	for v in "${names[@]}"; do : > "$tmp/$PART.$v"; : > "$tmp/$PART.$v.cpu"; done
	bx() { SBX_EXEC_PATH="$BASE/libexec/sbx" "$BASE/bin/sbx" "$@"; }
	for _ in $(seq "$ROUNDS"); do
		bench minimal "$min_cmd"
		bench own "$bare_cmd"
		bench sbx "$sbx exec -q -- /bin/true"
		bench json "$sbx exec -q --json -- /bin/true"
		bench proxy "$sbx exec -q --network proxy -- /bin/true"
		bench srt "$sbx srt -q -s $tmp/srt.$PART.json -- /bin/true"
		bench uids "$sbx exec --home $hu -q -- /bin/true"
		bench warm "$sbx exec -q --session $ws -- /bin/true"
		bench floor "$sbx --version"
		bench floortrue "/bin/true"
		[ -z "$SRT" ] || bench srtnpm "$SRT -s $tmp/srt.$PART.json /bin/true"
		if [ "$disk" = 1 ]; then
			bench disk "$sbx exec -q --agent disk --hard-limits -- /bin/true"
			PREP="env SBX_HOME=$h $sbx exec gc -q" bench diskmount \
			    "$sbx exec -q --agent disk --hard-limits -- /bin/true"
		fi
		if [ -n "$BASE" ]; then
			bench base "env SBX_EXEC_PATH=$BASE/libexec/sbx $BASE/bin/sbx exec -q -- /bin/true"
			bench basejson "env SBX_EXEC_PATH=$BASE/libexec/sbx $BASE/bin/sbx exec -q --json -- /bin/true"
			bench baseproxy "env SBX_EXEC_PATH=$BASE/libexec/sbx $BASE/bin/sbx exec -q --network proxy -- /bin/true"
		fi
	done
	local m50 p50 p95 mc c
	m50=$(bench_pctf "$tmp/$PART.minimal" 50)
	mc=$(bench_pctf "$tmp/$PART.minimal.cpu" 50)
	echo "== $label (uid $(id -u)), $((ROUNDS * RUNS)) runs each, alternating rounds"
	printf '%-40s %7s %7s %6s %7s %6s\n' "/bin/true" "p50 ms" "p95 ms" \
	    "x min" "cpu ms" "x min"
	for v in "${names[@]}"; do
		case $v in
		minimal) d="bwrap, minimal hand-rolled sandbox" ;;
		own) d="bwrap, sbx's own argv run bare" ;;
		sbx) d="sbx exec" ;;
		json) d="sbx exec --json" ;;
		proxy) d="sbx exec --network proxy" ;;
		srt) d="sbx srt -- /bin/true" ;;
		srtnpm) d="srt /bin/true (npm)" ;;
		disk) d="sbx exec --hard-limits (disk image)" ;;
		diskmount) d="  the same, image mounted by the run" ;;
		warm) d="sbx exec --session (warm)" ;;
		floor) d="  floor: a process start (sbx --version)" ;;
		floortrue) d="  floor: /bin/true, on the host" ;;
		base) d="base: sbx exec" ;;
		basejson) d="base: sbx exec --json" ;;
		baseproxy) d="base: sbx exec --network proxy" ;;
		uids) d="sbx exec, identity.per_agent ($umode)" ;;
		esac
		p50=$(bench_pctf "$tmp/$PART.$v" 50); p95=$(bench_pctf "$tmp/$PART.$v" 95)
		c=$(bench_pctf "$tmp/$PART.$v.cpu" 50)
		printf '%-40s %7s %7s %6s %7s %6s\n' "$d" "$p50" "$p95" \
		    "$(bench_ratio "$p50" "$m50")" "$c" "$(bench_ratio "$c" "$mc")"
	done
	# The warm row's floor: two process starts, nothing of sbx's.
	local f1 f2 fl
	f1=$(bench_pctf "$tmp/$PART.floor" 50)
	f2=$(bench_pctf "$tmp/$PART.floortrue" 50)
	fl=$(awk -v a="$f1" -v b="$f2" 'BEGIN { printf "%.2f", a + b }')
	printf '%-40s %7s %7s %6s\n' "  warm floor: the two starts together" \
	    "$fl" "" "$(bench_ratio "$fl" "$m50")"
	# The loop: LOOP sequential short commands, median of 3, interleaved.
	# The same `sh -c` for all (the issue's loop); "sbx -c" is sbx exec's
	# own shell form, bash -o pipefail -c, for reference.
	local loops=(minimal sbx sbx-c warm) k t0 t1
	[ -z "$BASE" ] || loops+=(base)
	for k in "${loops[@]}"; do : > "$tmp/$PART.loop.$k"; done
	for _ in 1 2 3; do
		for k in "${loops[@]}"; do
			sleep "$SETTLE"
			t0=$(date +%s%N)
			for _ in $(seq "$LOOP"); do
				case $k in
				minimal) "${minimal[@]}" sh -c 'echo hi' ;;
				sbx) "$sbx" exec -q -- sh -c 'echo hi' ;;
				sbx-c) "$sbx" exec -q -c 'echo hi' ;;
				warm) "$sbx" exec -q --session "$ws" -- sh -c 'echo hi' ;;
				base) bx exec -q -- sh -c 'echo hi' ;;
				esac
			done >/dev/null
			t1=$(date +%s%N)
			echo $(((t1 - t0) / 1000000)) >> "$tmp/$PART.loop.$k"
		done
	done
	local lm
	lm=$(bench_median 1 %d < "$tmp/$PART.loop.minimal")
	printf '%-44s %8s %8s\n' "$LOOP x sh -c 'echo hi' (median of 3)" "ms" "x min"
	for k in "${loops[@]}"; do
		t0=$(bench_median 1 %d < "$tmp/$PART.loop.$k")
		case $k in
		sbx) d="sbx exec -- sh -c" ;;
		sbx-c) d="sbx exec -c (bash -o pipefail -c)" ;;
		warm) d="sbx exec --session -- sh -c (warm)" ;;
		base) d="base: sbx exec -- sh -c" ;;
		*) d=$k ;;
		esac
		printf '%-44s %8s %8s\n' "$d" "$t0" \
		    "$(bench_ratio "$t0" "$lm")"
	done
	# The session's pid 1 after 10 and after 1,000 commands: RSS (kB)
	# and descriptors ("-" where /proc hides them: pid 1 is not
	# dumpable, so only root reads its fd directory).
	local sp ep bp ip r10 f10 r1k f1k
	"$sbx" session stop "$ws" >/dev/null
	ws=$("$sbx" session start --idle-timeout 3600)
	sp=$(jq -r .pid "$h/run/session-$ws.json")
	ep=$(pgrep -P "$sp" | head -n 1); bp=$(pgrep -P "$ep" | head -n 1)
	ip=$(pgrep -P "$bp" | head -n 1)
	for _ in $(seq 10); do "$sbx" exec -q --session "$ws" -- /bin/true; done
	r10=$(awk '/^VmRSS/ {print $2}' "/proc/$ip/status")
	f10=$(find "/proc/$ip/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
	for _ in $(seq 990); do "$sbx" exec -q --session "$ws" -- /bin/true; done
	r1k=$(awk '/^VmRSS/ {print $2}' "/proc/$ip/status")
	f1k=$(find "/proc/$ip/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l || true)
	[ "$f10" != 0 ] || f10=- f1k=-
	printf '%-44s %8s %8s\n' "session pid 1 after 10 / 1,000 commands" \
	    "RSS kB" "fds"
	printf '%-44s %8s %8s\n' "after 10" "$r10" "$f10"
	printf '%-44s %8s %8s\n' "after 1,000" "$r1k" "$f1k"
	"$sbx" session stop "$ws" >/dev/null
	"$sbx" proxy stop >/dev/null 2>&1 || true
}

case "${BENCH_PART:-all}" in
user)	part "as a user"; exit 0 ;;
esac
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null; then
	chmod -R a+rX "$tmp"
	chmod 1777 "$tmp"
	setpriv --reuid=65534 --regid=65534 --clear-groups env -i \
	    PATH=/usr/local/bin:/usr/bin:/bin BENCH_PART=user B="$BIN" \
	    BASE="$BASE" BENCH_TMP="$tmp" ROUNDS="$ROUNDS" RUNS="$RUNS" SRT="$SRT" \
	    LOOP="$LOOP" TMPDIR=/tmp bash "$0"
	echo
	part "as root, default limits (pids, memory)"
else
	part "as a user"
fi
echo "targets: sbx exec <= 1.4x minimal as a user, <= 1.6x as root; loop <= 1.5x"
echo "         hard disk limit: <= 0.3 ms over sbx exec (mounted per agent), <= 1 ms mounting"
echo "         per-agent uids: within noise of sbx exec, <= 0.3 ms more"
echo "         warm (--session) <= 0.35x minimal; warm loop <= 0.4x; pid 1 flat"
