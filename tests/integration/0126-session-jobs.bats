#!/usr/bin/env bats
# Background jobs inside a warm session (issue 31): sbx exec --session N
# --background runs in the session's sandbox under a subreaper of its
# own, outlives the foreground commands (whose leftovers are still
# swept), is handled by sbx exec ps|poll|wait|logs|kill as a one-shot job
# is, and ends with the session, its record saying so.
#
# Processes are found on the host by a unique sleep duration, never by a
# broad name.
# sbx-test: unprivileged

load lib
load session
bats_require_minimum_version 1.5.0

# The job's record field.
jrec() {
	jq -r "$2" "$SBX_HOME/agents/${3:-default}/jobs/$1.json"
}

@test "a job survives foreground commands; their leftovers are still swept" {
	sbx provision -q
	sbx session start --name j1 -q
	run -0 --separate-stderr sbx exec --session j1 --background -- sh -c "echo started; (sleep $D &); sleep $D"
	j=$output
	[[ "$j" =~ ^[0-9a-f]{16}$ ]]
	[ "$(jrec "$j" .session)" = j1 ]
	# A foreground command that leaves a double fork and a setsid'd
	# daemon behind: both swept at its end, the job's processes not.
	run -0 sbx exec --session j1 -- sh -c "(sleep $E &); setsid sleep $E & echo fg"
	[ "$output" = fg ]
	run -0 --separate-stderr sbx exec --session j1 -- ps -e -o args=
	[[ "$output" != *"sleep $E"* ]]
	[ "$(grep -cx "sleep $D" <<<"$output")" -eq 2 ]
	run -0 sbx exec poll --json "$j"
	[ "$(json_get "$output" .result.state)" = running ]
	[ "$(json_get "$output" .result.log_tail)" = started ]
	run -0 sbx exec ps --json
	[ "$(json_get "$output" '.result.jobs[0].job')" = "$j" ]
}

@test "poll, wait, logs and kill of a session job" {
	sbx provision -q
	sbx session start --name j2 -q
	run -0 --separate-stderr sbx exec --session j2 --background -- sh -c 'echo out; echo err >&2; exit 7'
	j=$output
	run -7 sbx exec wait --timeout 20 "$j"
	run -7 sbx exec wait --json --timeout 20 "$j"
	[ "$(json_get "$output" .result.exit_code)" = 7 ]
	log=$(jrec "$j" .log_file)
	grep -qx out "$log"
	grep -qx err "$log"
	run -0 --separate-stderr sbx exec --session j2 --background -- sh -c "(sleep $D &); sleep $D"
	k=$output
	for _ in $(seq 100); do [ "$(pgrep -fc "sleep $D")" -ge 2 ] && break; sleep 0.05; done
	run -0 sbx exec kill "$k"
	run sbx exec wait --json --timeout 20 "$k"
	[ "$(json_get "$output" .result.killed_by)" = user ]
	# The job's every process, the double fork too.
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null || break; sleep 0.05; done
	! pgrep -f "sleep $D"
	# The session goes on.
	run -0 sbx exec --session j2 -- echo alive
	[ "$output" = alive ]
}

@test "session stop ends its jobs; the record says so" {
	sbx provision -q
	sbx session start --name j3 -q
	run -0 --separate-stderr sbx exec --session j3 --background -- sleep "$D"
	j=$output
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null && break; sleep 0.05; done
	sbx session stop j3
	run sbx exec wait --json --timeout 20 "$j"
	[ "$(json_get "$output" .result.killed_by)" = session_stopped ]
	[ "$(jrec "$j" .killed_by)" = session_stopped ]
	[ "$(jrec "$j" .outcome.reason)" = session_stopped ]
	[ "$(jrec "$j" .exit_code)" = 137 ]
	! pgrep -f "sleep $D"
}

@test "hostile: another agent's session neither sees nor reaches a job" {
	sbx provision -q
	sbx provision --agent other -q
	sbx session start --name j4 -q
	sbx session start --name j5 --agent other -q
	run -0 --separate-stderr sbx exec --session j4 --background -- sleep "$D"
	j=$output
	run -0 --separate-stderr sbx exec --session j5 -- ps -e -o args=
	[[ "$output" != *"sleep $D"* ]]
	run sbx exec poll --agent other "$j"
	[ "$status" -ne 0 ]
	run sbx exec kill --agent other "$j"
	[ "$status" -ne 0 ]
	run -0 sbx exec poll --json "$j"
	[ "$(json_get "$output" .result.state)" = running ]
}

@test "hostile: kill -9 of a job's host supervisor: the job dies, gc reaps" {
	sbx provision -q
	sbx session start --name j6 -q
	run -0 --separate-stderr sbx exec --session j6 --background -- sh -c "(sleep $D &); sleep $D"
	j=$output
	for _ in $(seq 100); do [ "$(pgrep -fc "sleep $D")" -ge 2 ] && break; sleep 0.05; done
	kill -KILL "$(jrec "$j" .pid)"
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null || break; sleep 0.05; done
	! pgrep -f "sleep $D"
	run -0 sbx exec poll --json "$j"
	[ "$(json_get "$output" .result.alive)" = false ]
	run -0 sbx exec gc --json
	run -0 sbx exec --session j6 -- echo alive
	[ "$output" = alive ]
}

@test "a running job keeps an idle session; the session's policy is the job's" {
	sbx provision -q
	sbx session start --name j7 --idle-timeout 1 -q
	run -0 --separate-stderr sbx exec --session j7 --background -- sleep 3
	j=$output
	sleep 2
	run -0 sbx exec --session j7 -- echo alive
	run -0 sbx exec wait --json --timeout 20 "$j"
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	run -125 --separate-stderr sbx exec --session j7 --background --network outbound -- true
	[[ "$stderr" == *"argument \`network\` differs from session j7"* ]]
}

@test "hostile: a job that takes the session's task limit: a clear error, recovered by killing it" {
	sbx provision -q
	if ! sbx session start --name j8 --pids 30 -q 2>/dev/null; then
		skip "no cgroup can enforce --pids here (sbx session start refused it)"
	fi
	command -v python3 >/dev/null || skip "python3 is not installed"
	# Forks until the limit refuses, then holds what it has (a shell
	# would give up at its first failed fork).
	run -0 --separate-stderr sbx exec --session j8 --background -- python3 -c "
import os, time
for i in range(100):
    try:
        if os.fork() == 0:
            os.execvp('sleep', ['sleep', '$D'])
    except OSError:
        pass
time.sleep($D)"
	j=$output
	for _ in $(seq 100); do [ "$(pgrep -fc "^sleep $D")" -ge 20 ] && break; sleep 0.05; done
	sleep 0.5
	# The limit is the session's: a foreground command finds no room
	# (or its own fork fails), and says so.
	run --separate-stderr sbx exec --json --session j8 -- sh -c 'sleep 0.1 & wait; echo ran'
	[ "$status" -ne 0 ]
	# No room for the command's process (pids_exhausted), or the
	# command had one (pid 1 forks it ahead, while idle) and its own
	# fork failed: the envelope counts the refused forks.
	if [ "$(json_get "$output" .ok)" = true ]; then
		[ "$(json_get "$output" .result.exit_code)" -ne 0 ]
		[ "$(json_get "$output" .result.limit_events.pids_max)" -ge 1 ]
		[[ "$(json_get "$output" .result.stdout)" != *ran* ]]
	else
		[ "$(json_get "$output" .reason)" = pids_exhausted ]
	fi
	run -0 sbx exec kill "$j"
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null || break; sleep 0.05; done
	! pgrep -f "sleep $D"
	run -0 sbx exec --session j8 -- echo recovered
	[ "$output" = recovered ]
}

@test "hostile: a job neither reads nor holds up the next command's process (the spare)" {
	sbx provision -q
	sbx session start --name j9 -q
	# pid 1 forks the next command's process ahead (cmd/init-session.c,
	# the spare): a job finds it, cannot read its memory, environment or
	# descriptors (it is a copy of pid 1's, not dumpable), and kills it.
	run -0 --separate-stderr sbx exec --session j9 --background -- sh -c "
		for p in \$(ls /proc | grep -E '^[0-9]+\$'); do
			[ \$p = 1 ] || [ \$p = \$\$ ] || [ \$p = \$PPID ] && continue
			[ \"\$(cat /proc/\$p/comm 2>/dev/null)\" = init ] || continue
			echo found
			cat /proc/\$p/environ >/dev/null 2>&1 && echo environ-readable
			ls /proc/\$p/fd >/dev/null 2>&1 && echo fd-readable
			ls /proc/\$p/map_files >/dev/null 2>&1 && echo maps-readable
			kill -KILL \$p && echo killed
		done
		echo done; sleep $D"
	j=$output
	log=$(jrec "$j" .log_file)
	for _ in $(seq 200); do grep -qx done "$log" && break; sleep 0.05; done
	run -0 cat "$log"
	[[ "$output" == *found*killed*done* ]]
	[[ "$output" != *readable* ]]
	# The next command runs all the same (forked on the spot), and so
	# does the one after it (a new spare).
	run -0 sbx exec --session j9 -- echo alive
	[ "$output" = alive ]
	run -3 sbx exec --session j9 -- sh -c 'echo again; exit 3'
	[ "$output" = again ]
	run -0 sbx exec kill "$j"
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null || break; sleep 0.05; done
	! pgrep -f "sleep $D"
}
