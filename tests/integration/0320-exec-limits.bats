#!/usr/bin/env bats
# sbx exec: resource limits (HOSTILE-CASES RS-02, RS-03, RS-05, RS-08,
# RS-09, RS-10, RS-11, PK-01, PK-05): cgroups where there is one, rlimits
# where asked, refusals where neither will do; the envelope's limits,
# limit_events, killed_by and limit; `sbx exec gc`.  RS-10 is a known,
# documented limitation: see the note in that test.
#
# The cgroup tests need a writable cgroup: root here (cgroup v1); as an
# unprivileged user there is none, so they skip, while the refusal and
# --soft-limits tests run in both.  Processes are found on the host by a
# per-test token, never by a broad name, and every sbx-* cgroup is
# accounted for at the end of the file.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# cg_list: the sbx-* cgroups of our uid (a run's cgroup is made by its
# supervisor, as the user who runs sbx): the unprivileged pass runs beside
# the root pass, whose cgroups are not this file's.
cg_list() {
	find /sys/fs/cgroup -maxdepth 6 -type d -name 'sbx-*' -user "$(id -u)" \
	    2>/dev/null | sort
}

setup_file() {
	cg_list >"$BATS_FILE_TMPDIR/cg-before"
}

setup() {
	sbx_setup
	# A per-test token: it names this test's processes on the host.
	D=$(( (RANDOM << 15 | RANDOM) % 899999 + 100000 ))
	D="7$D"
	TOK="sbxlimits-$D"
	HOSTPIDS=()
	# An empty directory nobody may write: no cgroup file system.
	NOCG="$TEST_ROOT/no-cgroup"
	mkdir -p "$NOCG"
	chmod 0555 "$NOCG"
}

teardown() {
	local p
	for p in "${HOSTPIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# Anything left that carries this test's token was started by it.
	for p in $(pgrep -f "$TOK" 2>/dev/null); do
		[ "$p" != "$$" ] && kill -KILL "$p" 2>/dev/null
	done
	# A test that did not complete may have left a cgroup behind: reap
	# it.  Not after a passing test, so that the last test of the file
	# still sees any cgroup a normal run forgot (teardown_file reaps).
	[ -z "${BATS_TEST_COMPLETED:-}" ] && "$SBX" exec gc -q >/dev/null 2>&1
	sbx_teardown
}

teardown_file() {
	"$SBX" exec gc -q >/dev/null 2>&1
	return 0
}

# sbx_pid FILE ARGS...: run sbx ARGS with its pid, which is the
# supervisor's (sbx executes sbx-exec in place), written to FILE.
sbx_pid() {
	local f=$1
	shift
	bash -c 'echo $$ >"$0"; exec "$@"' "$f" "$SBX" "$@"
}

# cg_of PID: the cgroup directories of the run supervised by PID.
cg_of() {
	find /sys/fs/cgroup -maxdepth 6 -type d -name "sbx-$1-*" 2>/dev/null
}

# need_cgroup: skip unless sbx gets a cgroup here (root on this machine).
need_cgroup() {
	is_root || skip "needs a writable cgroup (root here)"
	run --separate-stderr sbx exec --json --pids 64 -- true
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	if [ "$(json_get "$output" .result.limits.backend)" = none ]; then
		grep -qE ' cgroup2? ' /proc/self/mounts ||
		    skip "no cgroup file system is mounted"
		echo "root, a cgroup file system mounted, and no cgroup: $output"
		return 1
	fi
}

# wait_gone PATTERN [SECONDS]: until pgrep -f PATTERN finds nothing.
wait_gone() {
	local i
	for ((i = 0; i < ${2:-5} * 20; i++)); do
		pgrep -f "$1" >/dev/null || return 0
		sleep 0.05
	done
	echo "still running:"
	pgrep -af "$1"
	return 1
}

half_ram_mib() {
	echo $(( $(getconf _PHYS_PAGES) * $(getconf PAGESIZE) / 2 / 1048576 ))
}

# ---- defaults ----------------------------------------------------------------

@test "defaults even when nothing is asked: pids 1024, memory half of RAM" {
	run --separate-stderr sbx exec --json -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.limits.pids)" = 1024 ]
	[ "$(json_get "$output" .result.limits.memory_mib)" = "$(half_ram_mib)" ]
	[ "$(json_get "$output" .result.limits.cpus)" = 0 ]
	[ "$(json_get "$output" .result.limits.wall_timeout)" = 0 ]
	if [ "$(json_get "$output" .result.limits.backend)" = none ]; then
		# Only rlimits here: the run goes ahead, with a warning that
		# says so, and nothing claims a cgroup.
		json_get "$output" '.warnings[]' | grep -q 'no writable cgroup'
		[ "$(json_get "$output" .result.limits.enforced.pids)" = none ]
		[ "$(json_get "$output" .result.limits.enforced.memory)" = none ]
	else
		[[ "$(json_get "$output" .result.limits.enforced.pids)" == cgroup* ]]
		[[ "$(json_get "$output" .result.limits.enforced.memory)" == cgroup* ]]
	fi
	if ! is_root; then
		[ "$(json_get "$output" .result.limits.backend)" = none ]
	fi
}

# ---- cgroup limits (root) ----------------------------------------------------

@test "fork bomb: contained by --pids, and the host stays responsive" {
	need_cgroup
	local t0 t1 ms i spid
	# A real fork bomb; --pids is checked above to be a cgroup's, and
	# --wall-timeout ends it.
	(
		rc=0
		sbx_pid "$TEST_ROOT/pid" exec --json --pids 64 --cpus 1 \
		    --wall-timeout 4 -- bash -c ": $TOK; :(){ :|:& };:; sleep 30" \
		    >"$TEST_ROOT/bomb.json" 2>/dev/null || rc=$?
		echo "$rc" >"$TEST_ROOT/bomb.rc"
	) 3>&- &
	HOSTPIDS+=("$!")
	sleep 1.5
	# The host can still fork and run programs, quickly.
	t0=$(date +%s%N)
	for i in $(seq 20); do
		timeout 5 /bin/true || { echo "host fork $i failed"; return 1; }
	done
	t1=$(date +%s%N)
	ms=$(( (t1 - t0) / 1000000 ))
	echo "20 host forks: ${ms} ms"
	[ "$ms" -lt 5000 ]
	# The bomb is there, and small.
	[ "$(pgrep -fc "$TOK")" -le 70 ]
	wait "${HOSTPIDS[0]}" || true
	out=$(cat "$TEST_ROOT/bomb.json")
	[ "$(cat "$TEST_ROOT/bomb.rc")" -eq 124 ]
	[ "$(json_get "$out" .kind)" = timeout ]
	[ "$(json_get "$out" .reason)" = wall_time ]
	[ "$(json_get "$out" .result.killed_by)" = limit ]
	[ "$(json_get "$out" .result.limits.pids)" = 64 ]
	[[ "$(json_get "$out" .result.limits.enforced.pids)" == cgroup* ]]
	[ "$(json_get "$out" .result.limit_events.pids_max)" -ge 1 ]
	json_get "$out" '.warnings[]' | grep -q 'task limit was reached'
	wait_gone "$TOK" 5
	spid=$(cat "$TEST_ROOT/pid")
	[ -z "$(cg_of "$spid")" ]
}

@test "RS-02: a memory hog is OOM-killed and reported as limit memory" {
	need_cgroup
	local spid
	run --separate-stderr sbx_pid "$TEST_ROOT/pid" exec --json --memory 64 \
	    -- "$PY" -c 'b = bytearray(1 << 28); print("survived")'
	[ "$status" -eq 137 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = execution_error ]
	[ "$(json_get "$output" .reason)" = memory_limit ]
	[ "$(json_get "$output" .field)" = memory ]
	[ "$(json_get "$output" .result.killed_by)" = limit ]
	[ "$(json_get "$output" .result.limit)" = memory ]
	[ "$(json_get "$output" .result.limit_events.oom_kills)" -ge 1 ]
	[ "$(json_get "$output" .result.limits.memory_mib)" = 64 ]
	[[ "$(json_get "$output" .result.limits.enforced.memory)" == cgroup* ]]
	[[ "$(json_get "$output" .result.stdout)" != *survived* ]]
	spid=$(cat "$TEST_ROOT/pid")
	[ -z "$(cg_of "$spid")" ]
	# Transparent mode: the status and a message on stderr.
	run --separate-stderr sbx exec --memory 64 -- "$PY" -c 'b = bytearray(1 << 28)'
	[ "$status" -eq 137 ]
	[[ "$stderr" == *"ran out of memory"* ]]
}

@test "RS-08: --cpus 0.5 gets about half a core (the cgroup's own counter)" {
	need_cgroup
	local ms ctl
	# A fixed 2 s (wall clock) spin: at half a core, ~1000 ms of CPU.
	run --separate-stderr sbx exec --json --cpus 0.5 -- "$PY" -c '
import time
t = time.time()
while time.time() - t < 2:
    pass'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.cpus)" = 0.5 ]
	[[ "$(json_get "$output" .result.limits.enforced.cpus)" == cgroup* ]]
	ms=$(json_get "$output" .result.limit_events.cpu_usage_ms)
	echo "cpu_usage_ms over a 2 s spin at --cpus 0.5: $ms"
	[ "$ms" -le 1400 ]
	if [ "$ms" -lt 600 ]; then
		# Too little: a busy host, or a broken counter?  An unlimited
		# 1 s spin tells them apart.
		run --separate-stderr sbx exec --json -- "$PY" -c '
import time
t = time.time()
while time.time() - t < 1:
    pass'
		ctl=$(json_get "$output" .result.limit_events.cpu_usage_ms)
		[ "$ctl" -ge 700 ] ||
		    skip "the host is too busy to measure: an unlimited 1 s spin got $ctl ms"
		return 1
	fi
}

# ---- disk, output -------------------------------------------------------------

@test "RS-03/RS-05: filling /tmp stops at --disk (ENOSPC); /dev/shm is capped too" {
	run --separate-stderr sbx exec --json --disk 8 -- sh -c '
	    df -k /tmp | tail -n 1
	    for i in 1 2 3 4; do
	        dd if=/dev/zero of=/tmp/f$i bs=1M count=4 2>&1 || exit 7
	    done'
	[ "$status" -eq 7 ]
	[ "$(json_get "$output" .result.exit_code)" = 7 ]
	[[ "$(json_get "$output" .result.stdout)" == *"No space left on device"* ]]
	[ "$(json_get "$output" .result.stdout | awk 'NR == 1 { print $2 }')" -le 8192 ]
	[ "$(json_get "$output" .result.limits.disk_mib)" = 8 ]
	[ "$(json_get "$output" .result.limits.enforced.disk)" = soft ]
	run --separate-stderr sbx exec -- sh -c \
	    'dd if=/dev/zero of=/dev/shm/f bs=1M count=200 2>&1; exit 0'
	[ "$status" -eq 0 ]
	[[ "$output" == *"No space left on device"* ]]
}

@test "a 1 GiB output flood neither grows sbx past its capture cap nor stalls it" {
	[ -x /usr/bin/time ] && /usr/bin/time -v true 2>/dev/null ||
	    skip "/usr/bin/time -v is not available to measure sbx's max RSS"
	local rss secs rc=0
	timeout 120 /usr/bin/time -v -o "$TEST_ROOT/time.txt" \
	    "$SBX" exec --json -- head -c 1G /dev/zero \
	    >"$TEST_ROOT/flood.json" 2>/dev/null || rc=$?
	[ "$rc" -eq 0 ]
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TEST_ROOT/time.txt")
	echo "max RSS ${rss} KiB"
	[ -n "$rss" ]
	[ "$rss" -lt 65536 ]
	run jq -r '.ok, (.result.truncated | join(",")), .result.exit_code,
	    (.result.stdout | length)' "$TEST_ROOT/flood.json"
	[ "${lines[0]}" = true ]
	[ "${lines[1]}" = stdout ]
	[ "${lines[2]}" = 0 ]
	[ "${lines[3]}" -le 1100000 ]
	# Streamed: every byte arrives, in bounded time and memory.
	SECONDS=0
	run bash -c 'timeout 120 /usr/bin/time -v -o "$1" "$2" exec -q -- \
	    head -c 1G /dev/zero | wc -c' _ "$TEST_ROOT/time2.txt" "$SBX"
	secs=$SECONDS
	[ "$output" = 1073741824 ]
	[ "$secs" -lt 90 ]
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TEST_ROOT/time2.txt")
	[ "$rss" -lt 65536 ]
}

# ---- lifetime --------------------------------------------------------------------

@test "PK-01: setsid + double fork + all fds closed does not survive the run" {
	local s1 s2
	run --separate-stderr sbx exec -- "$PY" -c '
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.closerange(0, 4096)
        while True:
            with open(os.environ["HOME"] + "/alive-'"$TOK"'", "a") as f:
                f.write("x")
            time.sleep(0.1)
    os._exit(0)
time.sleep(0.6)'
	[ "$status" -eq 0 ]
	[ -s "$WS/alive-$TOK" ]
	wait_gone "alive-$TOK" 3
	s1=$(stat -c %s "$WS/alive-$TOK")
	sleep 1
	s2=$(stat -c %s "$WS/alive-$TOK")
	[ "$s1" -eq "$s2" ]
}

@test "kill -9 of sbx leaves nothing behind once reaped (sbx exec gc)" {
	local spid i
	"$SBX" exec -q -- sh -c "sleep 1$D; : $TOK" >/dev/null 2>&1 3>&- &
	spid=$!
	HOSTPIDS+=("$spid")
	for ((i = 0; i < 100; i++)); do
		pgrep -f "^sleep 1$D" >/dev/null && break
		sleep 0.05
	done
	pgrep -f "^sleep 1$D" >/dev/null
	if is_root; then
		# The run has its cgroup (the default limits ask for one).
		[ -n "$(cg_of "$spid")" ]
	fi
	kill -KILL "$spid"
	wait "$spid" 2>/dev/null || true
	# The sandbox dies with its supervisor.
	wait_gone "$TOK" 5
	pgrep -f "^sleep 1$D" && return 1
	run --separate-stderr sbx exec gc --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .tool)" = exec.gc ]
	[ "$(json_get "$output" .result.removed_cgroups)" -ge 0 ]
	[ -z "$(cg_of "$spid")" ]
}

@test "gc: a supervisor killed with -9 and kept a zombie by its parent is dead" {
	need_cgroup
	local spid ppid i st
	# The parent: a shell that starts sbx, then becomes a sleep that
	# never waits for it, so that sbx killed with -9 stays a zombie
	# (kill(pid, 0) succeeds on one; gc used to keep its cgroup).
	bash -c '"$0" exec -q -- sh -c "sleep 1$1; : $2" >/dev/null 2>&1 3>&- &
	    echo $! >"$3"; exec sleep 3$1' "$SBX" "$D" "$TOK" \
	    "$TEST_ROOT/spid" 3>&- &
	ppid=$!
	HOSTPIDS+=("$ppid")
	for ((i = 0; i < 100; i++)); do
		pgrep -f "^sleep 1$D" >/dev/null && break
		sleep 0.05
	done
	pgrep -f "^sleep 1$D" >/dev/null
	spid=$(cat "$TEST_ROOT/spid")
	[ -n "$(cg_of "$spid")" ]
	kill -KILL "$spid"
	# The sandbox dies with its supervisor; the supervisor stays a zombie.
	wait_gone "$TOK" 5
	for ((i = 0; i < 100; i++)); do
		st=$(awk '{ print $3 }' "/proc/$spid/stat" 2>/dev/null)
		[ "$st" = Z ] && break
		sleep 0.05
	done
	echo "supervisor $spid: state $st, its cgroups: $(cg_of "$spid")"
	[ "$st" = Z ]
	run --separate-stderr sbx exec gc --json
	[ "$status" -eq 0 ]
	# Gone, whoever removed them: gc is machine-wide, and another test's
	# gc of this run may get there first (CI saw removed_cgroups 0 so).
	# Before the fix no gc removed them at all.
	[ "$(json_get "$output" .result.removed_cgroups)" -ge 0 ]
	[ -z "$(cg_of "$spid")" ]
	# Still a zombie: gc went by its state, not by its disappearance.
	[ "$(awk '{ print $3 }' "/proc/$spid/stat" 2>/dev/null)" = Z ]
}

@test "sbx exec gc: text output, and no arguments" {
	run --separate-stderr sbx exec gc
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^removed\ [0-9]+\ stale\ cgroups?$ ]]
	run -64 --separate-stderr sbx exec gc extra
}

# ---- no usable cgroup: refused, or rlimits with --soft-limits -----------------

@test "explicit limits without a usable cgroup are refused, not ignored" {
	local a
	for a in "--memory 64" "--cpus 0.5" "--pids 32"; do
		# shellcheck disable=SC2086
		SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --json $a \
		    -- touch "$WS/ran"
		status_is_kind
		[ "$(json_get "$output" .ok)" = false ]
		[ "$(json_get "$output" .kind)" = rejected ]
		[ "$(json_get "$output" .reason)" = resource_limits_unsupported ]
		[ "$(json_get "$output" .retryable)" = false ]
		[[ "$(json_get "$output" .hint)" == *--soft-limits* ]]
		[[ "$(json_get "$output" .hint)" == *cgroup* ]]
		[ ! -e "$WS/ran" ]
	done
	# Text mode: the same refusal on stderr.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --memory 64 -- touch "$WS/ran"
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"cannot be enforced"* ]]
	[ ! -e "$WS/ran" ]
	# Nothing asked: the defaults go ahead, with a warning.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --json -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.backend)" = none ]
	json_get "$output" '.warnings[]' | grep -q 'no writable cgroup'
}

@test "no writable cgroup, nothing asked: a text-mode run prints nothing of its own" {
	# Issue 11 item 14: the note about the defaults was printed after
	# every run's output; it belongs to preflight (and the envelope).
	# As uid 65534 there is no writable cgroup at all; as root one is
	# hidden with SBX_CGROUP_ROOT.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec -- echo hi
	[ "$status" -eq 0 ]
	[ "$output" = hi ]
	[ -z "$stderr" ]
	if ! is_root; then
		run --separate-stderr sbx exec -- true
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
	fi
	# Asked for (and accepted as rlimits): the person hears it.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --soft-limits \
	    --memory 64 -- true
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"no writable cgroup"* ]]
}

@test "unprivileged, no cgroup exists: explicit --memory is refused" {
	is_root && skip "root has a cgroup here (see the SBX_CGROUP_ROOT test)"
	run --separate-stderr sbx exec --json --memory 64 -- touch "$WS/ran"
	status_is_kind
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = resource_limits_unsupported ]
	[ ! -e "$WS/ran" ]
}

@test "--soft-limits: rlimits instead of a cgroup, and the envelope says so" {
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --json --soft-limits \
	    --memory 64 --pids 32 -- sh -c 'ulimit -v; ulimit -Hv'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.limits.backend)" = none ]
	[ "$(json_get "$output" .result.limits.memory_mib)" = 64 ]
	[ "$(json_get "$output" .result.limits.enforced.memory)" = rlimit ]
	# No rlimit holds a task limit: it is not claimed.
	[[ "$(json_get "$output" .result.limits.enforced.pids)" != cgroup* ]]
	[ "$(json_get "$output" .result.stdout)" = "$(printf '65536\n65536')" ]
	json_get "$output" '.warnings[]' | grep -q 'rlimits only'
	# And it holds: a 256 MiB allocation fails inside.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --soft-limits \
	    --memory 64 -- "$PY" -c '
try:
    b = bytearray(1 << 28)
    print("ALLOCATED")
except MemoryError:
    print("MemoryError")'
	[ "$status" -eq 0 ]
	[ "$output" = MemoryError ]
}

# ---- values, configuration ------------------------------------------------------

@test "invalid limit values are invalid_args naming the field, and run nothing" {
	local spec opt val field
	for spec in memory:0:memory_mib memory:-1:memory_mib memory:abc:memory_mib \
	    memory:1.5:memory_mib cpus:0:cpus cpus:abc:cpus cpus:-1:cpus \
	    cpus:0.001:cpus pids:0:pids pids:x:pids disk:0:disk_mib \
	    wall-timeout:0:wall_timeout wall-timeout:abc:wall_timeout \
	    nofile:0:nofile file-size:0:file_size_mib; do
		IFS=: read -r opt val field <<<"$spec"
		run --separate-stderr sbx exec --json "--$opt" "$val" -- touch "$WS/ran"
		status_is_kind || { echo "--$opt $val: $status $output"; return 1; }
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = "$field" ] ||
		    { echo "--$opt $val: $output"; return 1; }
		[ ! -e "$WS/ran" ]
	done
}

@test "per-agent config limits are applied (limits.pids == 32), flags win" {
	mkdir -p "$SBX_HOME/config/agents"
	echo '{"limits":{"pids":32}}' >"$SBX_HOME/config/agents/default.json"
	if ! is_root; then
		# Asked for in the agent's configuration, so refused here ...
		run --separate-stderr sbx exec --json -- true
		status_is_kind
		[ "$(json_get "$output" .reason)" = resource_limits_unsupported ]
		# ... unless rlimits are accepted.
		run --separate-stderr sbx exec --json --soft-limits -- true
		[ "$status" -eq 0 ]
		[ "$(json_get "$output" .result.limits.pids)" = 32 ]
		return 0
	fi
	need_cgroup
	run --separate-stderr sbx exec --json -- "$PY" -c '
import os, time
n = 0
try:
    for _ in range(100):
        if os.fork() == 0:
            time.sleep(3)
            os._exit(0)
        n += 1
except OSError as e:
    print("stopped", n, e.errno)'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.pids)" = 32 ]
	[[ "$(json_get "$output" .result.limits.enforced.pids)" == cgroup* ]]
	# fork() failed with EAGAIN before the 32nd task.
	[[ "$(json_get "$output" .result.stdout)" =~ ^stopped\ ([0-9]+)\ 11 ]]
	[ "${BASH_REMATCH[1]}" -lt 32 ]
	run --separate-stderr sbx exec --json --pids 50 -- true
	[ "$(json_get "$output" .result.limits.pids)" = 50 ]
}

@test "config/sandbox.json limits are defaults; cgroup_v2_root must be absolute" {
	mkdir -p "$SBX_HOME/config"
	echo '{"limits":{"pids":40,"memory_mib":512}}' >"$SBX_HOME/config/sandbox.json"
	# Global defaults are not asked-for limits: never refused.
	SBX_CGROUP_ROOT=$NOCG run --separate-stderr sbx exec --json -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.pids)" = 40 ]
	[ "$(json_get "$output" .result.limits.memory_mib)" = 512 ]
	echo '{"cgroup_v2_root":"sys/fs/cgroup"}' >"$SBX_HOME/config/sandbox.json"
	run --separate-stderr sbx exec --json -- touch "$WS/ran"
	status_is_kind
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .field)" = cgroup_v2_root ]
	[ "$(json_get "$output" .reason)" = config_invalid ]
	[ ! -e "$WS/ran" ]
}

@test "invalid configuration is invalid_args, reason config_invalid" {
	local f body bodies
	mkdir -p "$SBX_HOME/config/agents"
	for f in config/agents/default.json config/sandbox.json; do
		bodies=('{"limits":{"pids":32' '{"limits":{"pids":"32"}}'
		    '{"limits":{"bogus":1}}')
		[ "$f" = config/sandbox.json ] || bodies+=('[' '{"limits":[]}'
		    '{"limits":{"pids":-1}}' '{"limits":{"memory_mib":1.5}}'
		    '{"limits":{"pids":1,"pids":2}}')
		for body in "${bodies[@]}"; do
			printf '%s\n' "$body" >"$SBX_HOME/$f"
			run --separate-stderr sbx exec --json -- touch "$WS/ran"
			status_is_kind || { echo "$f $body: $output"; return 1; }
			[ "$(json_get "$output" .kind)" = invalid_args ]
			[ "$(json_get "$output" .reason)" = config_invalid ] ||
			    { echo "$f $body: $output"; return 1; }
			[ ! -e "$WS/ran" ]
		done
		rm -f "$SBX_HOME/$f"
	done
}

# ---- wall time --------------------------------------------------------------------

@test "--wall-timeout 1 on a chatty command: 124, wall_time, killed_by limit" {
	run --separate-stderr sbx exec --json --wall-timeout 1 -- sh -c \
	    "while :; do echo tick $TOK; sleep 0.1; done"
	[ "$status" -eq 124 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = timeout ]
	[ "$(json_get "$output" .reason)" = wall_time ]
	[ "$(json_get "$output" .result.killed_by)" = limit ]
	[ "$(json_get "$output" .result.limit)" = wall_time ]
	[ "$(json_get "$output" .result.limits.wall_timeout)" = 1 ]
	[[ "$(json_get "$output" .result.stdout)" == *tick* ]]
	[ "$(json_get "$output" .result.duration_ms)" -lt 5000 ]
	wait_gone "$TOK" 3
	# Text mode: 124 and a message.
	run --separate-stderr sbx exec --wall-timeout 0.5 -- sh -c \
	    "while :; do echo tick $TOK; sleep 0.1; done"
	[ "$status" -eq 124 ]
	[[ "$stderr" == *"wall-clock limit"* ]]
}

@test "PK-05: --wall-timeout kills a command that ignores signals, or is stopped" {
	run --separate-stderr sbx exec --json --wall-timeout 1 -- "$PY" -c '
import signal, time
for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
    signal.signal(s, signal.SIG_IGN)
time.sleep(99)  # '"$TOK"
	[ "$status" -eq 124 ]
	[ "$(json_get "$output" .reason)" = wall_time ]
	[ "$(json_get "$output" .result.duration_ms)" -lt 10000 ]
	run --separate-stderr sbx exec --json --wall-timeout 1 -- sh -c "kill -STOP \$\$; : $TOK"
	[ "$status" -eq 124 ]
	[ "$(json_get "$output" .reason)" = wall_time ]
	[ "$(json_get "$output" .result.duration_ms)" -lt 10000 ]
	wait_gone "$TOK" 3
}

# ---- rlimits ------------------------------------------------------------------------

@test "RS-09: --nofile 64: ulimit -n prints 64 and cannot be raised" {
	run --separate-stderr sbx exec --nofile 64 -- sh -c \
	    'ulimit -n; ulimit -Hn; ulimit -n 1024 2>/dev/null && echo RAISED; exit 0'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 64 ]
	[ "${lines[1]}" = 64 ]
	[[ "$output" != *RAISED* ]]
	run --separate-stderr sbx exec --json --nofile 64 -- "$PY" -c '
import os
fds = []
try:
    while True:
        fds.append(os.open("/dev/null", 0))
except OSError as e:
    print(len(fds), e.errno)'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.nofile)" = 64 ]
	[ "$(json_get "$output" .result.limits.enforced.nofile)" = rlimit ]
	[[ "$(json_get "$output" .result.stdout)" =~ ^([0-9]+)\ 24$ ]]
	[ "${BASH_REMATCH[1]}" -lt 64 ]
}

@test "RS-05: --file-size 1: writing 2 MB fails (SIGXFSZ, or EFBIG)" {
	run --separate-stderr sbx exec --json --file-size 1 -- sh -c \
	    'dd if=/dev/zero of=big bs=1M count=2 2>/dev/null; echo "dd=$?"; ulimit -f unlimited 2>/dev/null && echo RAISED; exit 0'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.file_size_mib)" = 1 ]
	[ "$(json_get "$output" .result.limits.enforced.file_size)" = rlimit ]
	# 128 + SIGXFSZ (25)
	[[ "$(json_get "$output" .result.stdout)" == *dd=153* ]]
	[[ "$(json_get "$output" .result.stdout)" != *RAISED* ]]
	[ "$(stat -c %s "$WS/big")" -le 1048576 ]
	# A writer that ignores SIGXFSZ gets EFBIG.
	run --separate-stderr sbx exec --file-size 1 -- "$PY" -c '
import signal
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
with open("big2", "wb") as f:
    try:
        f.write(b"x" * (2 << 20)); f.flush()
        print("WROTE")
    except OSError as e:
        print("errno", e.errno)'
	[ "$output" = "errno 27" ]
}

# ---- RS-11 ---------------------------------------------------------------------------

@test "RS-11: the sandbox cannot reach its cgroup or raise its limits" {
	run --separate-stderr sbx exec --json -- sh -c '
	    cat /proc/self/cgroup
	    echo $$ > /sys/fs/cgroup/cgroup.procs 2>/dev/null && echo MOVED
	    echo max > /sys/fs/cgroup/pids/pids.max 2>/dev/null && echo RAISED
	    echo max > /sys/fs/cgroup/memory.max 2>/dev/null && echo RAISED
	    mkdir -p c && mount -t cgroup -o rdma c c 2>/dev/null && echo MOUNTED
	    mount -t cgroup2 none c 2>/dev/null && echo MOUNTED
	    exit 0'
	[ "$status" -eq 0 ]
	out=$(json_get "$output" .result.stdout)
	[[ "$out" != *MOVED* ]]
	[[ "$out" != *RAISED* ]]
	[[ "$out" != *MOUNTED* ]]
	# Its own cgroup path is not the host's (cgroup namespace).
	[[ "$out" != *sbx-* ]]
}

@test "no core dumps: RLIMIT_CORE is 0, soft and hard, and cannot be raised" {
	# A piped core_pattern would hand a crash's memory to a root-run
	# handler on the host.  The caller's own limits are as high as it
	# may set them: the sandbox lowers them whatever they are.
	local host_hard
	host_hard=$(ulimit -Hc)
	run --separate-stderr bash -c '
	    ulimit -Sc "$(ulimit -Hc)" || exit 99
	    exec "$1" exec -- sh -c "
	        echo \"soft \$(ulimit -Sc) hard \$(ulimit -Hc)\"
	        (ulimit -Hc unlimited) 2>/dev/null && echo RAISED-HARD
	        (ulimit -Hc 1) 2>/dev/null && echo RAISED-HARD
	        (ulimit -Sc 1) 2>/dev/null && echo RAISED-SOFT
	        \"\$0\" -c \"import resource as r
try:
    r.setrlimit(r.RLIMIT_CORE, (r.RLIM_INFINITY, r.RLIM_INFINITY))
    print(\\\"RAISED-PY\\\")
except (ValueError, OSError) as e:
    print(\\\"refused\\\", type(e).__name__)
print(\\\"core\\\", r.getrlimit(r.RLIMIT_CORE))\"
	        exit 0" "$2"' bash "$SBX" "$PY" </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" == *"soft 0 hard 0"* ]]
	[[ "$output" != *RAISED* ]]
	[[ "$output" == *"refused"* ]]
	[[ "$output" == *"core (0, 0)"* ]]
	# The host's limits are untouched.
	[ "$(ulimit -Hc)" = "$host_hard" ]
	# Every entry path: -c and a background job too.
	run --separate-stderr sbx exec -c 'echo "hard $(ulimit -Hc)"' </dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "hard 0" ]
	run --separate-stderr sbx exec --background -- sh -c \
	    'ulimit -Hc > core-limit.txt'
	[ "$status" -eq 0 ]
	run --separate-stderr sbx exec wait "$output" --timeout 30
	[ "$status" -eq 0 ]
	[ "$(cat "$WS/core-limit.txt")" = 0 ]
}

@test "RS-09: threads count as tasks under --pids" {
	need_cgroup
	run --separate-stderr sbx exec --json --pids 32 -- "$PY" -c '
import threading, time
n = 0
try:
    for _ in range(200):
        threading.Thread(target=time.sleep, args=(2,), daemon=True).start()
        n += 1
except RuntimeError:
    print("stopped", n)'
	[ "$status" -eq 0 ]
	[[ "$(json_get "$output" .result.stdout)" =~ ^stopped\ ([0-9]+) ]]
	[ "${BASH_REMATCH[1]}" -lt 32 ]
	[ "$(json_get "$output" .result.limit_events.pids_max)" -ge 1 ]
}

@test "RS-10: one sandbox cannot use up the inotify instances of another" {
	skip "known limitation (RS-10): the per-uid inotify budget is shared by every sandbox of one uid; documented in sbx(7), reported by sbx preflight"
	# BUG: inotify instances are counted per uid up the user-namespace
	# chain (fs.inotify.max_user_instances, 128 by default), and every
	# agent's sandbox runs as the same uid: sandbox A takes all of them
	# and sandbox B (another agent) -- and any host process of that uid
	# -- gets EMFILE.  Neither --nofile (per process) nor the cgroup
	# caps it; sbx sets no per-namespace user.max_inotify_instances.
	# Reproduce:
	#   sbx exec -- python3 -c 'import ctypes,time;l=ctypes.CDLL(None)
	#     print(sum(l.inotify_init1(0)>=0 for _ in range(1000)));time.sleep(3)' &
	#   sleep 1; sbx exec --agent b -- python3 -c \
	#     'import ctypes;print(ctypes.CDLL(None).inotify_init1(0))'   -> -1
	local i
	(
		"$SBX" exec -q -- "$PY" -c '
import ctypes, time
l = ctypes.CDLL(None)
print("holding", sum(l.inotify_init1(0) >= 0 for _ in range(1000)), flush=True)
time.sleep(3)  # '"$TOK" >"$TEST_ROOT/holder.out" 2>&1
	) 3>&- &
	HOSTPIDS+=("$!")
	for ((i = 0; i < 100; i++)); do
		grep -q holding "$TEST_ROOT/holder.out" 2>/dev/null && break
		sleep 0.05
	done
	cat "$TEST_ROOT/holder.out"
	run --separate-stderr sbx exec --agent other -- "$PY" -c '
import ctypes
l = ctypes.CDLL(None, use_errno=True)
print(l.inotify_init1(0), ctypes.get_errno())'
	echo "the other agent's inotify_init1: $output"
	wait "${HOSTPIDS[0]}" || true
	[[ "$output" =~ ^[0-9]+[[:space:]] ]]
}

# ---- background jobs ----------------------------------------------------------

@test "a running background job survives the cgroup gc of a later run" {
	need_cgroup
	# A job's cgroup must carry its supervisor's pid, not that of the
	# `sbx exec --background` that started it and exited at once: else
	# the next run with limits (prep_cgroup runs the gc), or
	# `sbx exec gc`, takes the pid for dead and kills the running job
	# (found before 4e946df: state exited, exit_code 137, no killed_by).
	#   id=$(sbx exec --background -- sleep 30); sbx exec -- true
	#   sbx exec poll "$id"     -> must still be running
	local id jpid ppid i
	run --separate-stderr sbx_pid "$TEST_ROOT/pid" exec --json --background \
	    -- sh -c "sleep 2$D; : $TOK"
	[ "$status" -eq 0 ]
	id=$(json_get "$output" .result.job)
	jpid=$(json_get "$output" .result.pid)
	ppid=$(cat "$TEST_ROOT/pid")
	# The job's cgroup is its supervisor's; the starter's is gone.
	[ -n "$(cg_of "$jpid")" ]
	[ -z "$(cg_of "$ppid")" ]
	run --separate-stderr sbx exec -- true
	[ "$status" -eq 0 ]
	run --separate-stderr sbx exec gc --json
	sleep 0.3
	run --separate-stderr sbx exec poll "$id" --json
	[ "$(json_get "$output" .result.state)" = running ] ||
	    { echo "the job was killed: $output"; "$SBX" exec kill --force "$id" >/dev/null 2>&1; return 1; }
	run --separate-stderr sbx exec kill --force "$id" --json
	[ "$(json_get "$output" .result.killed)" = true ]
	# Its supervisor removes the cgroup when the job ends.
	for ((i = 0; i < 50; i++)); do
		[ -z "$(cg_of "$jpid")" ] && break
		sleep 0.1
	done
	[ -z "$(cg_of "$jpid")" ]
}

# ---- last: nothing left behind ----------------------------------------------------

@test "no sbx-* cgroup directories are left behind by this file" {
	local before after leaked="" d pid i
	before="$BATS_FILE_TMPDIR/cg-before"
	for ((i = 0; i < 30; i++)); do
		after=$(cg_list)
		[ "$(printf '%s' "$after" | grep -c .)" -eq "$(grep -c . "$before")" ] &&
		    return 0
		# Other sbx runs on this machine (live supervisors) are not
		# ours; wait a little for them, then look only at the dead.
		leaked=""
		for d in $(comm -13 "$before" <(printf '%s\n' "$after")); do
			pid=${d##*/sbx-}
			pid=${pid%%-*}
			[ -d "/proc/$pid" ] || leaked="$leaked $d"
		done
		[ -z "$leaked" ] && [ "$i" -ge 10 ] && return 0
		sleep 0.2
	done
	echo "before: $(grep -c . "$before"), after: $(printf '%s' "$after" | grep -c .)"
	echo "left by dead supervisors:$leaked"
	[ -z "$leaked" ]
}
