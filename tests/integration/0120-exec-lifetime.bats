#!/usr/bin/env bats
# sbx exec: process lifetime, timeouts, signals and background jobs
# (HOSTILE-CASES PK-01, PK-04, PK-05; §0.4 marker files).
#
# Processes are found on the host by a unique sleep duration, never by a
# broad name.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	# A per-test number: `sleep ${D}N` names a process of this test only.
	D=$(( (RANDOM << 15 | RANDOM) % 899999 + 100000 ))
	D="9$D"
	HOSTPIDS=()
}

teardown() {
	local p id kp=()
	# Background jobs: force-kill every one still alive (in parallel).
	if [ -d "$SBX_HOME" ]; then
		for id in $("$SBX" exec ps --json 2>/dev/null |
		    jq -r '.result.jobs[]? | select(.alive) | .job'); do
			"$SBX" exec kill --force "$id" >/dev/null 2>&1 &
			kp+=("$!")
		done
		for p in "${kp[@]}"; do
			wait "$p"
		done
	fi
	for p in "${HOSTPIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# Anything left that carries this test's token was started by it.
	for p in $(pgrep -f "(sleep |alive-)$D" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	sbx_teardown
}

# wait_seen PATTERN [SECONDS]: until pgrep -f PATTERN finds something.
wait_seen() {
	local i
	for ((i = 0; i < ${2:-5} * 20; i++)); do
		pgrep -f "$1" >/dev/null && return 0
		sleep 0.05
	done
	echo "never saw a process matching $1"
	return 1
}

# wait_gone PATTERN [SECONDS]: until nothing matches (bwrap, sbx-init and
# the command all carry the pattern in their command lines).
wait_gone() {
	local i
	for ((i = 0; i < ${2:-5} * 20; i++)); do
		pgrep -f "$1" >/dev/null || return 0
		sleep 0.05
	done
	echo "still running:"
	pgrep -a -f "$1"
	return 1
}

now_ms() { date +%s%3N; }

# ---- foreground: nothing outlives the command -------------------------

@test "a background child (sleep &) dies when the command ends" {
	run sbx exec -q -- sh -c "sleep ${D}1 & echo started"
	[ "$status" -eq 0 ]
	[ "$output" = started ]
	wait_gone "sleep ${D}1" 3
}

@test "a setsid -f daemon dies when the command ends" {
	command -v setsid >/dev/null || skip "setsid is not installed"
	run sbx exec -q -- sh -c "setsid -f sleep ${D}2; echo started"
	[ "$status" -eq 0 ]
	wait_gone "sleep ${D}2" 3
}

@test "a double-forked orphan dies when the command ends" {
	run sbx exec -q -- sh -c "(sleep ${D}3 &); (nohup sleep ${D}4 >/dev/null 2>&1 &); echo started"
	[ "$status" -eq 0 ]
	wait_gone "sleep ${D}3" 3
	wait_gone "sleep ${D}4" 3
}

@test "PK-01: a setsid loop appending to a marker stops growing after exit" {
	command -v setsid >/dev/null || skip "setsid is not installed"
	run sbx exec -q -- sh -c "setsid -f sh -c 'while :; do date >> \$HOME/alive-$D; sleep 0.1; done'; sleep 0.5; exit 0"
	[ "$status" -eq 0 ]
	[ -s "$WS/alive-$D" ]
	sleep 0.5
	s1=$(stat -c %s "$WS/alive-$D")
	sleep 1
	s2=$(stat -c %s "$WS/alive-$D")
	[ "$s1" -eq "$s2" ]
	wait_gone "alive-$D" 1
}

# ---- --timeout -----------------------------------------------------------

@test "--timeout is an inactivity limit: exit 124, kind timeout, output kept" {
	t0=$(now_ms)
	run -124 sbx exec --json --timeout 1 -- sh -c "echo a; sleep ${D}5"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 10000 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = timeout ]
	[ "$(json_get "$output" .retryable)" = true ]
	[ "$(json_get "$output" .result.killed_by)" = timeout ]
	[ "$(json_get "$output" .result.stdout)" = a ]
	[ "$(printf '%s' "$output" | jq -c .result.stdout)" = '"a\n"' ]
	wait_gone "sleep ${D}5" 3
	# Transparent mode: the same exit status.
	run -124 sbx exec --timeout 1 -- sh -c "sleep ${D}6"
	wait_gone "sleep ${D}6" 3
}

@test "--timeout kills a command that ignores SIGTERM (after the grace)" {
	t0=$(now_ms)
	run -124 sbx exec --json --timeout 1 -- sh -c "trap '' TERM; sleep ${D}7"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 10000 ]
	[ "$(json_get "$output" .kind)" = timeout ]
	[ "$(json_get "$output" .result.killed_by)" = timeout ]
	[ "$(json_get "$output" .result.signal)" = 9 ]
	wait_gone "sleep ${D}7" 3
}

@test "--timeout does not kill a command that keeps printing" {
	run sbx exec --json --timeout 1 -- sh -c \
	    'i=0; while [ $i -lt 8 ]; do echo $i; sleep 0.3; i=$((i+1)); done'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.killed_by)" = null ]
	[ "$(printf '%s' "$output" | jq -j .result.stdout | wc -l)" -eq 8 ]
}

@test "PK-05: a self-stopped command (kill -STOP \$\$) still ends at the timeout" {
	t0=$(now_ms)
	run -124 sbx exec --json --timeout 1 -- sh -c 'kill -STOP $$; echo resumed'
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 10000 ]
	[ "$(json_get "$output" .kind)" = timeout ]
}

# ---- signals to sbx ------------------------------------------------------

# start_fg ARGS...: start sbx exec in the background (sbx itself, not a
# shell function, so that $! is sbx's pid) and wait for its sleep.
start_fg() {
	"$SBX" "$@" >"$TEST_ROOT/out" 2>"$TEST_ROOT/err" &
	SBXPID=$!
	HOSTPIDS+=("$SBXPID")
}

@test "SIGTERM to sbx kills the sandbox: 143, killed_by user" {
	start_fg exec --json -- sleep "${D}1"
	wait_seen "^sleep ${D}1\$"
	kill -TERM "$SBXPID"
	rc=0
	wait "$SBXPID" || rc=$?
	[ "$rc" -eq 143 ]
	out=$(cat "$TEST_ROOT/out")
	echo "$out"
	[ "$(json_get "$out" .ok)" = false ]
	[ "$(json_get "$out" .result.killed_by)" = user ]
	wait_gone "sleep ${D}1" 3
}

@test "SIGINT to sbx kills the sandbox: 130" {
	start_fg exec -- sleep "${D}2"
	wait_seen "^sleep ${D}2\$"
	kill -INT "$SBXPID"
	rc=0
	wait "$SBXPID" || rc=$?
	[ "$rc" -eq 130 ]
	wait_gone "sleep ${D}2" 3
}

@test "kill -9 of sbx leaves nothing behind" {
	start_fg exec -- sh -c "sleep ${D}3 & sleep ${D}4"
	wait_seen "^sleep ${D}4\$"
	kill -KILL "$SBXPID"
	wait "$SBXPID" || true
	# bwrap --die-with-parent, then sbx-init's control pipe closes.
	wait_gone "sleep ${D}3" 5
	wait_gone "sleep ${D}4" 5
}

@test "PK-04: kill -KILL -1 and kill -STOP -1 inside do not reach the host" {
	sleep "${D}5" &
	hp=$!
	HOSTPIDS+=("$hp")
	run sbx exec -q -- sh -c 'kill -KILL -1 2>/dev/null; kill -STOP -1 2>/dev/null; echo survived'
	[ "$status" -eq 0 ]
	kill -0 "$hp"
	st=$(ps -o stat= -p "$hp")
	echo "host sleep state: $st"
	[[ "$st" != T* ]]
}

# ---- background jobs -----------------------------------------------------

# bg ARGS...: start a job, set JOB.
bg() {
	run sbx exec --json --background "$@"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	JOB=$(json_get "$output" .result.job)
	[[ "$JOB" =~ ^[0-9a-f]{16}$ ]]
}

@test "--background returns at once with a job id; ps lists it" {
	t0=$(now_ms)
	bg -- sleep "${D}1"
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 5000 ]
	[ "$(json_get "$output" .result.background)" = true ]
	wait_seen "^sleep ${D}1\$"
	run sbx exec ps --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.result.jobs[0].job')" = "$JOB" ]
	[ "$(json_get "$output" '.result.jobs[0].alive')" = true ]
	[ "$(json_get "$output" '.result.jobs[0].command[1]')" = "${D}1" ]
	run sbx exec ps
	[ "$status" -eq 0 ]
	[[ "$output" == *"$JOB"*running* ]]
	# Text mode prints just the id.
	run sbx exec -q --background -- sleep "${D}2"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^[0-9a-f]{16}$ ]]
}

@test "poll: alive with the log tail while running" {
	bg -- sh -c "echo hello; sleep ${D}3"
	for i in $(seq 50); do
		run sbx exec poll "$JOB" --json
		[ "$status" -eq 0 ]
		[ "$(json_get "$output" .result.log_tail)" = hello ] && break
		sleep 0.1
	done
	[ "$(json_get "$output" .tool)" = exec.poll ]
	[ "$(json_get "$output" .result.alive)" = true ]
	[ "$(json_get "$output" .result.state)" = running ]
	[ "$(json_get "$output" .result.log_tail)" = hello ]
}

@test "wait: propagates the job's exit status; the status survives" {
	bg -- sh -c 'echo done; exit 7'
	run -7 sbx exec wait "$JOB" --json
	[ "$(json_get "$output" .result.exit_code)" = 7 ]
	[ "$(json_get "$output" .result.exited)" = true ]
	[ "$(json_get "$output" .result.log_tail)" = done ]
	# The verdict a foreground envelope would give, and its result's keys
	# (the output is the log's).
	[ "$(json_get "$output" .result.outcome.ok)" = true ]
	[ "$(json_get "$output" .result.outcome.code)" = 7 ]
	[ "$(json_get "$output" .result.network)" = none ]
	[ "$(json_get "$output" .result.agent)" = default ]
	[ "$(json_get "$output" .result.seccomp)" = true ]
	printf '%s' "$output" | jq -e '.result | has("stdout") | not' >/dev/null
	run -7 sbx exec wait "$JOB"
	# Poll again, after the job finished.
	run sbx exec poll "$JOB" --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.alive)" = false ]
	[ "$(json_get "$output" .result.state)" = exited ]
	[ "$(json_get "$output" .result.exit_code)" = 7 ]
	run sbx exec ps --json
	[ "$(json_get "$output" '.result.jobs[0].exit_code')" = 7 ]
}

@test "a job the wall clock ended: wait says what the foreground would (timeout, wall_time, 124)" {
	bg --wall-timeout 1 -- sh -c "echo started; sleep ${D}6"
	run -124 sbx exec wait "$JOB" --json --timeout 60
	[ "$(json_get "$output" .result.exited)" = true ]
	[ "$(json_get "$output" .result.exit_code)" = 124 ]
	[ "$(json_get "$output" .result.limit)" = wall_time ]
	[ "$(json_get "$output" .result.killed_by)" = limit ]
	[ "$(json_get "$output" .result.outcome.ok)" = false ]
	[ "$(json_get "$output" .result.outcome.code)" = 124 ]
	[ "$(json_get "$output" .result.outcome.kind)" = timeout ]
	[ "$(json_get "$output" .result.outcome.reason)" = wall_time ]
	[ "$(json_get "$output" .result.outcome.field)" = wall_timeout ]
	[ "$(json_get "$output" .result.log_tail)" = started ]
	# The foreground run: the same kind, reason and status.
	run -124 sbx exec --json --wall-timeout 1 -- sh -c "sleep ${D}6"
	[ "$(json_get "$output" .kind)" = timeout ]
	[ "$(json_get "$output" .reason)" = wall_time ]
}

@test "a job whose sandbox was killed by kill --force: 137, interrupted on SIGKILL" {
	bg -- sleep "${D}7"
	wait_seen "^sleep ${D}7\$"
	run sbx exec kill --force "$JOB" --json
	[ "$(json_get "$output" .result.killed)" = true ]
	wait_gone "sleep ${D}7" 5
	run -137 sbx exec wait "$JOB" --json --timeout 30
	[ "$(json_get "$output" .result.exit_code)" = 137 ]
	[ "$(json_get "$output" .result.killed_by)" = user ]
	[ "$(json_get "$output" .result.outcome.reason)" = interrupted ]
	[[ "$(json_get "$output" .result.outcome.message)" == *SIGKILL* ]]
}

@test "kill: TERM ends the job and its sandbox" {
	bg -- sleep "${D}4"
	wait_seen "^sleep ${D}4\$"
	run sbx exec kill "$JOB" --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.killed)" = true ]
	[ "$(json_get "$output" .result.signal)" = TERM ]
	wait_gone "sleep ${D}4" 5
	run sbx exec poll "$JOB" --json
	[ "$(json_get "$output" .result.alive)" = false ]
	[ "$(json_get "$output" .result.killed_by)" = user ]
	# Killing it again: not running, a negative answer.
	run -1 sbx exec kill "$JOB" --json
	[ "$(json_get "$output" .result.killed)" = false ]
}

@test "kill --force ends a job that ignores SIGTERM" {
	bg -- sh -c "trap '' TERM; sleep ${D}5"
	wait_seen "^sleep ${D}5\$"
	run sbx exec kill --force "$JOB" --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.killed)" = true ]
	[ "$(json_get "$output" .result.signal)" = KILL ]
	wait_gone "sleep ${D}5" 5
}

@test "unknown job: not_found, exit 1" {
	sbx exec -- true
	for sub in poll wait kill; do
		run -1 sbx exec "$sub" 0123456789abcdef --json
		[ "$(json_get "$output" .kind)" = not_found ]
		[ "$(json_get "$output" .field)" = job ]
	done
}

@test "unknown job before the state root exists: not_found, exit 1" {
	[ ! -e "$SBX_HOME" ]
	# With no state root yet, poll/wait/kill report kind not_found and
	# exit 1, as the one exit table says.
	run -1 sbx exec poll 0123456789abcdef --json
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "malformed job ids: invalid_args field job" {
	sbx exec -- true
	bad_id() {
		run -65 sbx exec "$1" --json -- "$2"
		echo "$1 $2: $output"
		printf '%s' "$output" | jq -e '.kind == "invalid_args" and
		    .field == "job"' >/dev/null
	}
	for id in ../x ABC 0123456789ABCDEF 0123456789abcde 0123456789abcdef0 \
	    '../../../../etc/passwd' '-rf' ''; do
		bad_id poll "$id"
	done
	bad_id wait ../x
	bad_id wait ABC
	bad_id kill ../x
	bad_id kill 0123456789ABCDEF
}

@test "background with a missing command: not_found 127 at once" {
	t0=$(now_ms)
	run -127 sbx exec --json --background -- no-such-command-xyz
	t1=$(now_ms)
	[ $((t1 - t0)) -lt 5000 ]
	[ "$(json_get "$output" .kind)" = not_found ]
}

# ---- job logs: capped, head and tail kept ------------------------------

@test "job logs are capped at jobs.max_log_bytes: head and tail kept, log_truncated" {
	mkdir -p "$SBX_HOME/config"
	echo '{"jobs": {"max_log_bytes": 65536}}' >"$SBX_HOME/config/sandbox.json"
	flood='echo FIRST-LINE; i=0; while [ $i -lt 150000 ]; do
	    echo "line $i of the flood"; i=$((i+1)); done; echo LAST-LINE'
	total=$(sh -c "$flood" | wc -c)
	run sbx exec --json --background -- sh -c "$flood"
	[ "$status" -eq 0 ]
	JOB=$(json_get "$output" .result.job)
	log=$(json_get "$output" .result.log_file)
	# While it runs, the file never passes the cap.
	for i in $(seq 200); do
		[ "$(stat -c %s "$log")" -le 65536 ]
		run sbx exec poll "$JOB" --json
		[ "$(json_get "$output" .result.alive)" = true ] || break
		[ "$(json_get "$output" .result.log_truncated)" = true ] && break
		sleep 0.05
	done
	run sbx exec wait "$JOB" --json --tail-lines 2
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.log_truncated)" = true ]
	[ "$(json_get "$output" .result.log_tail)" = \
	    "$(printf 'line 149999 of the flood\nLAST-LINE')" ]
	dropped=$(json_get "$output" .result.log_dropped_bytes)
	size=$(stat -c %s "$log")
	[ "$size" -le 65536 ]
	# The file reads in order: the head, one marker line, the tail; what
	# it keeps (less the marker) and what was dropped make up the output.
	[ "$(head -n 1 "$log")" = FIRST-LINE ]
	[ "$(tail -n 1 "$log")" = LAST-LINE ]
	[ "$(grep -c '^\[sbx: log truncated: ' "$log")" -eq 1 ]
	marker=$(grep '^\[sbx: log truncated: ' "$log")
	[ $((size - ${#marker} - 2 + dropped)) -eq "$total" ]
	run sbx exec poll "$JOB" --json --tail-lines 1
	[ "$(json_get "$output" .result.log_truncated)" = true ]
	[ "$(json_get "$output" .result.log_dropped_bytes)" = "$dropped" ]
	[ "$(json_get "$output" .result.log_tail)" = LAST-LINE ]
}

@test "job logs: --file-size caps the log too; a small log is whole" {
	run sbx exec --json --background --file-size 1 -- sh -c \
	    'echo START; head -c 3000000 /dev/zero | tr "\0" x; echo; echo END'
	[ "$status" -eq 0 ]
	JOB=$(json_get "$output" .result.job)
	log=$(json_get "$output" .result.log_file)
	run sbx exec wait "$JOB" --json --tail-lines 1
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.log_truncated)" = true ]
	[ "$(json_get "$output" .result.log_tail)" = END ]
	[ "$(stat -c %s "$log")" -le 1048576 ]
	[ "$(head -n 1 "$log")" = START ]
	# Under the cap: the log is the output, byte for byte.
	run sbx exec --json --background -- sh -c 'echo one; echo two'
	JOB=$(json_get "$output" .result.job)
	log=$(json_get "$output" .result.log_file)
	run sbx exec wait "$JOB" --json
	[ "$(json_get "$output" .result.log_truncated)" = false ]
	[ "$(json_get "$output" .result.log_dropped_bytes)" = 0 ]
	[ "$(cat "$log")" = "$(printf 'one\ntwo')" ]
	# A bad cap in the configuration is refused, not ignored.
	mkdir -p "$SBX_HOME/config"
	echo '{"jobs": {"max_log_bytes": "1M"}}' >"$SBX_HOME/config/sandbox.json"
	run -78 sbx exec --json --background -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
}
