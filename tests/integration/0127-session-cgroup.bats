#!/usr/bin/env bats
# Warm sessions (issue 31): each command in a cgroup of its own beneath
# the session's (the commands' cgroup, which each foreground command
# enters in turn), with the session's limits less a reserve; its memory
# hog or fork bomb meets its own limit, not the session's pid 1 or the
# next command; its own counters in its envelope; nothing of it left in
# the cgroup when it ends, or when its client is killed with -9; every
# cgroup of the session gone after stop, or gc after a supervisor's -9.
# Where no cgroup is writable (an unprivileged user here) the rlimits
# stay and the envelope says so.
#
# Processes are found on the host by a unique sleep duration, never by a
# broad name.
# sbx-test: unprivileged

load lib
load session
bats_require_minimum_version 1.5.0

# The session's cgroup directory in the pids hierarchy (v1) or the
# unified one (v2), from its record; empty when it has none.
ses_dir() {
	jq -r '.cgroup.v2 // .cgroup.v1.pids // empty' \
	    "$SBX_HOME/run/session-$1.json"
}

# Every directory of the session's cgroup, in each hierarchy.
ses_dirs() {
	jq -r '(.cgroup.v2 // empty), (.cgroup.v1 // {} | .[])' \
	    "$SBX_HOME/run/session-$1.json" | sort -u
}

# The commands' cgroup (pids hierarchy on v1), from the record.
cmd_dir() {
	jq -r '.cgroup.command.v2 // .cgroup.command.v1.pids // empty' \
	    "$SBX_HOME/run/session-$1.json"
}

# How many processes are in the commands' cgroup now.
cmd_procs() {
	wc -l < "$1/cgroup.procs"
}

# Wait (5 s at most) until a command runs in the commands' cgroup DIR.
until_busy() {
	for _ in $(seq 100); do
		[ "$(cmd_procs "$1")" -gt 0 ] && return 0
		sleep 0.05
	done
	return 0
}

# start_cg NAME OPTIONS...: a session with a cgroup, or skip saying why.
start_cg() {
	local n=$1
	shift
	is_root || skip "no writable cgroup for an unprivileged user here"
	run -0 sbx session start --name "$n" --idle-timeout 120 "$@"
	[ -n "$(ses_dir "$n")" ] ||
	    skip "the session got no cgroup here: $(jq -c .limits \
		"$SBX_HOME/run/session-$n.json")"
}

@test "a command's own cgroup: its limits in the envelope, beneath the session's, empty after" {
	sbx provision -q
	start_cg c1 --memory 64 --pids 32
	sd=$(ses_dir c1)
	cd_=$(cmd_dir c1)
	[ -n "$cd_" ]
	[ "$(dirname "$cd_")" = "$sd" ]
	run -0 --separate-stderr sbx exec --json --session c1 -- \
	    sh -c 'grep -E "pids|^0::" /proc/self/cgroup'
	[ "$(json_get "$output" .result.session)" = c1 ]
	[[ "$(json_get "$output" .result.limits.command.backend)" == cgroup* ]]
	[ "$(json_get "$output" .result.limits.command.memory_mib)" = 56 ]
	[ "$(json_get "$output" .result.limits.command.pids)" = 28 ]
	# The session's own limits, as before.
	[ "$(json_get "$output" .result.limits.memory_mib)" = 64 ]
	[ "$(json_get "$output" .result.limits.pids)" = 32 ]
	[[ "$(json_get "$output" .result.limits.enforced.pids)" == cgroup* ]]
	[ -n "$(json_get "$output" .result.limit_events.memory_peak_mib)" ]
	# Inside: the commands' cgroup, seen from the session's cgroup
	# namespace, never a host path.
	own=$(json_get "$output" .result.stdout | grep -o 'sbx-[0-9a-f-]*' |
	    head -n 1)
	[ "$own" = "$(basename "$cd_")" ]
	[[ "$(json_get "$output" .result.stdout)" != */sys/fs/cgroup* ]]
	[[ "$(json_get "$output" .result.stdout)" != *"$(basename "$sd")"* ]]
	# Nothing of it is left there once it ended.
	[ "$(cmd_procs "$cd_")" -eq 0 ]
	# pid 1 holds the cgroup's files; no command can reach them.
	run -0 sbx exec --session c1 -- sh -c 'ls /proc/1/fd 2>&1 || echo refused'
	[[ "$output" == *refused* ]]
	run -0 sbx session stop c1
	[ ! -e "$cd_" ]
	[ ! -e "$sd" ]
}

@test "a memory hog is OOM-killed in its own cgroup and reported; the session and the next command live" {
	sbx provision -q
	start_cg c2 --memory 64
	run --separate-stderr sbx exec --json --session c2 -- \
	    "$PY" -c 'b = bytearray(1 << 28)'
	[ "$status" -eq 137 ] || { echo "$output"; false; }
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .reason)" = memory_limit ]
	[ "$(json_get "$output" .result.killed_by)" = limit ]
	[ "$(json_get "$output" .result.limit)" = memory ]
	[ "$(json_get "$output" .result.limit_events.oom_kills)" -ge 1 ]
	[ "$(json_get "$output" .result.limit_events.memory_peak_mib)" -ge 40 ]
	[[ "$(json_get "$output" .message)" == *"56 MiB"* ]]
	run -0 sbx exec --session c2 -- echo next
	[ "$output" = next ]
	run -0 sbx session ls --json
	[ "$(json_get "$output" '.result.sessions[0].alive')" = true ]
	# The next command's counters are its own: no OOM of the last one.
	run -0 sbx exec --json --session c2 -- true
	[ "$(json_get "$output" .result.limit_events.oom_kills)" = null ]
	[ "$(cmd_procs "$(cmd_dir c2)")" -eq 0 ]
}

@test "a fork bomb meets its own task limit; the next command starts" {
	sbx provision -q
	start_cg c3 --pids 32
	run --separate-stderr sbx exec --json --session c3 --wall-timeout 5 -- \
	    sh -c 'b() { b & b & wait; }; b'
	[ "$(json_get "$output" .result.limit_events.pids_max)" -ge 1 ] ||
	    { echo "$output"; false; }
	[ "$(json_get "$output" .result.limits.command.pids)" = 28 ]
	[[ "$(json_get "$output" '.warnings[]')" == *"task limit was reached"* ]]
	run -0 sbx exec --json --session c3 -- echo next
	[ "$(json_get "$output" .result.stdout)" = next ]
	[ "$(json_get "$output" .result.limit_events.pids_max)" = null ]
	[ "$(cmd_procs "$(cmd_dir c3)")" -eq 0 ]
}

@test "kill -9 of the client mid-command: its processes leave the cgroup, the session lives; stop removes the rest" {
	sbx provision -q
	start_cg c4 --memory 64 --pids 32
	cd_=$(cmd_dir c4)
	"$SBX" exec --session c4 -- sleep "$D" &
	cl=$!
	until_busy "$cd_"
	[ "$(cmd_procs "$cd_")" -gt 0 ]
	kill -KILL "$cl"
	wait "$cl" || true
	# The supervisor saw the client go: the command is killed.
	for _ in $(seq 100); do
		pgrep -f "sleep $D" >/dev/null || break
		sleep 0.05
	done
	! pgrep -f "sleep $D" >/dev/null
	[ "$(cmd_procs "$cd_")" -eq 0 ]
	run -0 sbx exec gc --json
	run -0 sbx exec --session c4 -- echo alive
	[ "$output" = alive ]
	dirs=$(ses_dirs c4)
	# Another client killed while its command runs, then the session
	# stopped: nothing of either is left.
	"$SBX" exec --session c4 -- sleep "$D" &
	cl=$!
	until_busy "$cd_"
	kill -KILL "$cl"
	wait "$cl" || true
	run -0 sbx session stop c4
	[ ! -e "$cd_" ]
	for d in $dirs; do
		[ ! -e "$d" ]
	done
}

@test "kill -9 of the supervisor mid-command: gc leaves no cgroup of the session" {
	sbx provision -q
	start_cg c5 --memory 64 --pids 32
	dirs=$(ses_dirs c5)
	cd_=$(cmd_dir c5)
	sup=$(jq -r .pid "$SBX_HOME/run/session-c5.json")
	"$SBX" exec --session c5 -- sleep "$D" &
	cl=$!
	until_busy "$cd_"
	[ "$(cmd_procs "$cd_")" -gt 0 ]
	kill -KILL "$sup"
	run wait "$cl"
	[ "$status" -ne 0 ]
	for _ in $(seq 100); do
		pgrep -f "sleep $D" >/dev/null || break
		sleep 0.05
	done
	run -0 sbx exec gc --json
	[ ! -e "$cd_" ]
	for d in $dirs; do
		[ ! -e "$d" ]
	done
}

@test "no writable cgroup: the rlimits stay, and the envelope says so" {
	is_root && skip "root has a writable cgroup here (the tests above)"
	sbx provision -q
	# Fail closed: a memory limit no cgroup can hold is refused.
	run -77 --separate-stderr sbx session start --name c6 --memory 64 --json
	[ "$(json_get "$output" .reason)" = resource_limits_unsupported ]
	run -0 sbx session start --name c6 --idle-timeout 60 --nofile 64
	[ "$(jq -r '.cgroup // "none"' "$SBX_HOME/run/session-c6.json")" = none ]
	run -0 --separate-stderr sbx exec --json --session c6 -- \
	    sh -c 'ulimit -n'
	[ "$(json_get "$output" .result.stdout)" = 64 ]
	[ "$(json_get "$output" .result.limits.command.backend)" = none ]
	[ "$(json_get "$output" .result.limits.backend)" = none ]
	[ "$(json_get "$output" .result.limits.enforced.nofile)" = rlimit ]
	[ "$(json_get "$output" .result.limits.enforced.pids)" = none ]
	[ "$(json_get "$output" .result.limit_events)" = null ]
	# A hard limit: the command cannot raise it.
	run -0 sbx exec --session c6 -- sh -c 'ulimit -Hn'
	[ "$output" = 64 ]
	run -0 sbx exec --session c6 -- echo next
	[ "$output" = next ]
}
