#!/usr/bin/env bats
# Warm sessions (issue 31): sbx session start|ls|show|stop and sbx exec
# --session, with the hostile cases: the control channel out of reach,
# pid 1 and the supervisor out of reach, nothing left behind by a command
# (double fork, setsid, daemon), the task limit, descriptors of an earlier
# command, other users and agents, a supervisor killed with -9, and 1,000
# commands without growth in pid 1.
#
# Processes are found on the host by a unique sleep duration, never by a
# broad name.
# sbx-test: unprivileged

load lib
load session
bats_require_minimum_version 1.5.0

# The session's pid 1 on the host: supervisor > run > bwrap > sbx-init.
init_pid() {
	local s e b
	s=$(jq -r .pid "$SBX_HOME/run/session-$1.json")
	e=$(pgrep -P "$s" | head -n 1)
	b=$(pgrep -P "$e" | head -n 1)
	pgrep -P "$b" | head -n 1
}

# No process of this test (sleep $D) on the host.
none_left() {
	! pgrep -f "sleep $D" >/dev/null
}

@test "start on a fresh state root: the agent is provisioned first (the README's first command)" {
	[ ! -e "$SBX_HOME" ]
	run -0 sbx session start --idle-timeout 60
	s=$output
	[ -n "$s" ]
	[ -s "$SBX_HOME/run/tokens/default" ]
	run -0 sbx exec --session "$s" -- sh -c 'echo hi > /tmp/note'
	run -0 sbx exec --session "$s" -- cat /tmp/note
	[ "$output" = hi ]
	run -0 sbx session stop "$s"
}

@test "start, ls, show and stop; the record and socket go with the session" {
	sbx provision -q
	run -0 sbx session start --name w1 --json
	[ "$(json_get "$output" .tool)" = session.start ]
	[ "$(json_get "$output" .result.name)" = w1 ]
	[ "$(json_get "$output" .result.agent)" = default ]
	[ -S "$SBX_HOME/run/session-w1.sock" ]
	[ "$(stat -c %a "$SBX_HOME/run/session-w1.sock")" = 600 ]
	run -0 sbx session ls --json
	[ "$(json_get "$output" '.result.sessions[0].name')" = w1 ]
	[ "$(json_get "$output" '.result.sessions[0].alive')" = true ]
	run -0 sbx session show w1 --json
	[ "$(json_get "$output" .result.network)" = none ]
	sup=$(json_get "$output" .result.pid)
	# Another session of the same name is refused while it runs.
	run -65 --separate-stderr sbx session start --name w1 --json
	[ "$(json_get "$output" .reason)" = session_exists ]
	run -0 sbx session stop w1 --json
	[ "$(json_get "$output" .result.stopped)" = true ]
	[ ! -e "$SBX_HOME/run/session-w1.sock" ]
	[ ! -e "$SBX_HOME/run/session-w1.json" ]
	! kill -0 "$sup" 2>/dev/null
	run -0 sbx session ls --json
	[ "$(json_get "$output" '.result.sessions | length')" = 0 ]
	run -1 --separate-stderr sbx session show w1 --json
	[ "$(json_get "$output" .kind)" = not_found ]
	run -64 --separate-stderr sbx session start --name 'Bad/Name'
	[[ "$stderr" == *"must match"* ]]
}

@test "exec --session: streams, envelope with session, exit codes, shared files, fresh environment" {
	sbx provision -q
	sbx session start --name w2 -q
	run -0 --separate-stderr sbx exec --session w2 -- sh -c 'echo out; echo err >&2'
	[ "$output" = out ]
	[ "$stderr" = err ]
	run -3 sbx exec --session w2 -- sh -c 'exit 3'
	run -127 --separate-stderr sbx exec --session w2 -- no-such-command-here
	[[ "$stderr" == *"command not found"* ]]
	run -0 sbx exec --json --session w2 -c 'echo hi; echo x > /tmp/shared; export FOO=1'
	[ "$(json_get "$output" .result.session)" = w2 ]
	[ "$(json_get "$output" .result.stdout)" = hi ]
	[ "$(json_get "$output" .result.exit_code)" = 0 ]
	# The file system is shared, the environment is not.
	run -0 sbx exec --session w2 --env BAR=2 -- sh -c 'cat /tmp/shared; echo "${FOO:-unset} $BAR $HOME"'
	[ "${lines[0]}" = x ]
	[ "${lines[1]}" = "unset 2 /workspace/agents/default" ]
	# Each command in the session's seccomp, without privileges.
	run -0 sbx exec --session w2 -- sh -c 'grep -E "^(Seccomp|NoNewPrivs):" /proc/self/status'
	[[ "$output" == *"Seccomp:	2"* ]]
	[[ "$output" == *"NoNewPrivs:	1"* ]]
	run -0 sbx exec --session w2 --json -- sh -c 'echo hi'
	[ "$(json_get "$output" .result.stdout)" = hi ]
}

@test "a policy option that differs from the session's is refused, naming it" {
	sbx provision -q
	sbx session start --name w3 -q
	run -125 --separate-stderr sbx exec --session w3 --network outbound -- true
	[[ "$stderr" == *"argument \`network\` differs from session w3"* ]]
	run -65 --separate-stderr sbx exec --json --session w3 --memory 64 -- true
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .field)" = memory ]
	[ "$(json_get "$output" .reason)" = session_policy ]
	run -65 --separate-stderr sbx exec --json --session w3 --background --memory 64 -- true
	[ "$(json_get "$output" .field)" = memory ]
	run -65 --separate-stderr sbx exec --json --session w3 --tty -- true
	[ "$(json_get "$output" .field)" = tty ]
	# The same value as the session's is no difference.
	run -0 sbx exec --session w3 --network none -- true
	run -1 --separate-stderr sbx exec --json --session nosuch -- true
	[ "$(json_get "$output" .kind)" = not_found ]
}

@test "hostile: the control channel, pid 1 and the supervisor are out of reach" {
	sbx provision -q
	sbx session start --name w4 -q
	# No socket of the session's anywhere inside; pid 1's descriptors
	# (where its channel is) unreadable; nothing of the host's run/.
	run -0 --separate-stderr sbx exec --session w4 -- sh -c '
		find / -xdev -name "session-*" 2>/dev/null | head -n 3
		ls /proc/1/fd >/dev/null 2>&1 && echo fd-readable
		cat /proc/1/mem >/dev/null 2>&1 && echo mem-readable
		ls /proc/1/root/ >/dev/null 2>&1 && echo root-readable
		exit 0'
	[ -z "$output" ]
	# Signals to pid 1 do nothing; ptrace of it is refused; the
	# supervisor has no pid in the sandbox.
	run -0 sbx exec --session w4 -- sh -c 'kill -KILL 1; kill -TERM 1; echo sent'
	[ "$output" = sent ]
	if [ -x /usr/bin/gdb ] || command -v strace >/dev/null; then
		run sbx exec --session w4 -- strace -p 1 -e trace=none
		[ "$status" -ne 0 ]
	fi
	run -0 --separate-stderr sbx exec --session w4 -- sh -c 'ls /proc | grep -E "^[0-9]+$" | wc -l'
	# pid 1, the shell, ls, grep, wc: nothing of the host's.
	[ "$output" -le 5 ]
	run -0 sbx exec --session w4 -- echo alive
	[ "$output" = alive ]
}

@test "hostile: nothing a command started outlives it (background, double fork, setsid, daemon)" {
	sbx provision -q
	sbx session start --name w5 -q
	run -0 sbx exec --session w5 -- sh -c "
		sleep $D &
		(sleep $D &) &
		setsid sleep $D &
		nohup sh -c 'sleep $D' >/dev/null 2>&1 &
		echo started"
	[ "$output" = started ]
	none_left
	run -0 --separate-stderr sbx exec --session w5 -- sh -c 'ps -e -o pid=,comm= | grep -v -e " ps$" -e " sh$" -e " grep$"'
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[[ "$output" == *init* ]]
}

@test "hostile: no descriptor of an earlier command reaches the next" {
	sbx provision -q
	sbx session start --name w6 -q
	run -0 --separate-stderr sbx exec --session w6 -- sh -c 'exec 7</etc/passwd 8>/tmp/keep; ls /proc/self/fd | tr "\n" " "'
	[[ "$output" == *7* ]]
	# Nothing the first one opened is open in the second.
	run -0 --separate-stderr sbx exec --session w6 -- sh -c 'ls -l /proc/$$/fd/'
	[[ "$output" == *" 0 -> "* ]]
	[[ "$output" != *passwd* ]]
	[[ "$output" != *keep* ]]
	[[ "$output" != *" 7 -> "* ]]
	[[ "$output" != *" 8 -> "* ]]
}

@test "hostile: the session's task limit: a fork bomb fails, the session recovers" {
	sbx provision -q
	if ! sbx session start --name w7 --pids 40 -q 2>/dev/null; then
		skip "no cgroup can enforce --pids here (sbx session start refused it)"
	fi
	# 100 sleeps against a limit of 40 tasks: fork fails inside.
	run --separate-stderr sbx exec --session w7 --wall-timeout 5 -- sh -c "
		i=0; while [ \$i -lt 100 ]; do sleep $D & i=\$((i+1)); done
		echo spawned; wait"
	[[ "$stderr" == *"fork"* ]] || [[ "$stderr" == *"Resource temporarily unavailable"* ]]
	none_left
	run -0 sbx exec --session w7 -- echo recovered
	[ "$output" = recovered ]
}

@test "hostile: another agent's request and a stale session are refused" {
	sbx provision -q
	sbx provision --agent other -q
	sbx session start --name w8 -q
	run -65 --separate-stderr sbx exec --json --session w8 --agent other -- true
	[ "$(json_get "$output" .field)" = agent ]
	[ "$(json_get "$output" .reason)" = session_agent ]
	SBX_AGENT=other run -65 --separate-stderr sbx exec --json --session w8 -- true
	[ "$(json_get "$output" .reason)" = session_agent ]
}

@test "hostile: a session of root's is not usable by a plain user" {
	is_root || skip "needs root to start the session and a plain user to try it"
	sbx provision -q
	sbx session start --name w9 -q
	chmod 0755 "$TEST_ROOT"
	before=$(ls -la "$SBX_HOME/run")
	run setpriv --reuid 65534 --regid 65534 --clear-groups \
	    env SBX_HOME="$SBX_HOME" "$SBX" exec --json --session w9 -- touch /tmp/x
	[ "$status" -ne 0 ]
	[ "$(json_get "$(printf '%s\n' "$output" | grep '^{' | tail -n 1)" .ok)" = false ]
	run setpriv --reuid 65534 --regid 65534 --clear-groups \
	    env SBX_HOME="$SBX_HOME" "$SBX" session stop w9
	[ "$status" -ne 0 ]
	[ "$(ls -la "$SBX_HOME/run")" = "$before" ]
	run -0 --separate-stderr sbx exec --session w9 -- sh -c 'test -e /tmp/x || echo untouched'
	[ "$output" = untouched ]
}

@test "hostile: kill -9 of the supervisor mid-command: the command dies, gc reaps" {
	sbx provision -q
	sbx session start --name w10 -q
	sup=$(jq -r .pid "$SBX_HOME/run/session-w10.json")
	"$SBX" exec --session w10 -- sleep "$D" 3>&- &
	cl=$!
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null && break; sleep 0.05; done
	kill -KILL "$sup"
	wait "$cl" || st=$?
	[ "${st:-0}" -eq 125 ]
	for _ in $(seq 100); do none_left && break; sleep 0.05; done
	none_left
	run -0 sbx session ls --json
	[ "$(json_get "$output" '.result.sessions[0].alive')" = false ]
	run -125 --separate-stderr sbx exec --session w10 -- true
	[[ "$stderr" == *"not running"* ]]
	run -0 sbx exec gc --json
	[ "$(json_get "$output" .result.removed_sessions)" = 1 ]
	[ ! -e "$SBX_HOME/run/session-w10.json" ]
	[ ! -e "$SBX_HOME/run/session-w10.sock" ]
}

# A client of the session's own uid that breaks the protocol (pid 1 reads
# its request directly): python3 on the control socket, one case per run.
# Prints the line pid 1 answered, or "eof".
bad_client() {
	python3 - "$SBX_HOME/run/session-$1.sock" "$2" <<'PYEOF'
import os, socket, struct, sys, time
path, case = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(path)
fds = [os.open("/dev/null", os.O_RDWR) for _ in range(5)]
ok = b"Aecho\0Aleak\0"
if case == "order":
	socket.send_fds(s, [b"X"], fds[:3])
elif case == "nofds":
	s.sendall(b"Q" + struct.pack("=I", len(ok)) + ok)
elif case == "fivefds":
	socket.send_fds(s, [b"Q" + struct.pack("=I", len(ok)) + ok], fds)
elif case == "length":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 0xffffffff)], fds[:3])
elif case == "nonul":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 4) + b"Aabc"], fds[:3])
elif case == "token":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 4) + b"Zab\0"], fds[:3])
elif case == "noargv":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 4) + b"Eab\0"], fds[:3])
elif case == "partial":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 100) + b"Aab"], fds[:3])
elif case == "close":
	socket.send_fds(s, [b"Q" + struct.pack("=I", 100)], fds[:3])
	s.close()
	print("eof")
	sys.exit(0)
s.settimeout(20)
buf = b""
while not buf.endswith(b"\n"):
	b = s.recv(256)
	if not b:
		break
	buf += b
print(buf.decode().strip() or "eof")
PYEOF
}

@test "hostile: a malformed request costs its connection, never the session" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	sbx provision -q
	sbx session start --name w14 -q
	"$SBX" exec --session w14 -- true
	ip=$(init_pid w14)
	fd0=$(ls "/proc/$ip/fd" 2>/dev/null | wc -l)
	for c in order:request_order nofds:request_fds fivefds:request_fds \
	    length:request_length nonul:request_malformed \
	    token:request_malformed noargv:request_malformed close:eof; do
		run -0 bad_client w14 "${c%%:*}"
		echo "${c%%:*}: $output"
		if [ "${c#*:}" = eof ]; then
			[ "$output" = eof ]
		else
			[ "$output" = "error ${c#*:}" ]
		fi
		run -0 sbx exec --session w14 -- echo alive
		[ "$output" = alive ]
	done
	# A request that never completes is dropped at its deadline (5 s);
	# a command asked for meanwhile waits its turn, then runs.
	bad_client w14 partial >"$BATS_TEST_TMPDIR/partial" &
	sleep 0.5
	start=$SECONDS
	run -0 sbx exec --session w14 -- echo after
	[ "$output" = after ]
	[ $((SECONDS - start)) -ge 3 ]
	wait
	[ "$(cat "$BATS_TEST_TMPDIR/partial")" = "error request_timeout" ]
	# pid 1 kept none of the descriptors those clients passed.
	[ "$(ls "/proc/$ip/fd" 2>/dev/null | wc -l)" -eq "$fd0" ]
	[ "$(init_pid w14)" = "$ip" ]
}

@test "hostile: a client killed mid-command: its command dies with it, the session goes on" {
	sbx provision -q
	sbx session start --name w15 -q
	"$SBX" exec --session w15 -- sh -c "sleep $D & sleep $D" 3>&- &
	cl=$!
	for _ in $(seq 100); do pgrep -f "sleep $D" >/dev/null && break; sleep 0.05; done
	pgrep -f "sleep $D" >/dev/null
	# pid 1 holds the client's connection itself: its end of file is
	# the kill ('K' would be too).
	kill -KILL "$cl"
	wait "$cl" || true
	for _ in $(seq 100); do none_left && break; sleep 0.05; done
	none_left
	run -0 sbx exec --session w15 -- echo alive
	[ "$output" = alive ]
	# An idle timeout is the client's 'K': the command is killed and
	# the session serves the next one.
	run -124 sbx exec --session w15 --timeout 1 -- sleep "$D"
	none_left
	run -0 sbx exec --session w15 -- echo again
	[ "$output" = again ]
}

@test "1,000 commands: pid 1's memory and descriptors do not grow" {
	sbx provision -q
	sbx session start --name w11 -q
	for _ in $(seq 10); do "$SBX" exec --session w11 -- true; done
	ip=$(init_pid w11)
	[ -n "$ip" ]
	rss10=$(awk '/^VmRSS/ {print $2}' "/proc/$ip/status")
	fd10=$(ls "/proc/$ip/fd" 2>/dev/null | wc -l)
	# Bounded: 1,000 commands in at most 120 s, or the test fails.
	start=$SECONDS
	for _ in $(seq 990); do
		"$SBX" exec --session w11 -- true || break
		[ $((SECONDS - start)) -lt 120 ] || break
	done
	[ $((SECONDS - start)) -lt 120 ]
	rss1000=$(awk '/^VmRSS/ {print $2}' "/proc/$ip/status")
	fd1000=$(ls "/proc/$ip/fd" 2>/dev/null | wc -l)
	echo "rss $rss10 -> $rss1000 kB, fds $fd10 -> $fd1000" >&3
	[ "$rss1000" -le $((rss10 + 8)) ]
	[ "$fd1000" -eq "$fd10" ]
	# init, sh, ps and wc: nothing of the 1,000 commands.
	run -0 --separate-stderr sbx exec --session w11 -- sh -c 'ps -e -o pid= | wc -l'
	[ "$output" -le 4 ]
}

@test "a session whose agent is unprovisioned, or whose record is gone, stops" {
	sbx provision -q
	sbx provision --agent gone -q
	sbx session start --name w12 --agent gone -q
	sup=$(jq -r .pid "$SBX_HOME/run/session-w12.json")
	rm -rf "$SBX_HOME/workspace/agents/gone"
	for _ in $(seq 50); do kill -0 "$sup" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$sup" 2>/dev/null
	[ ! -e "$SBX_HOME/run/session-w12.sock" ]
	sbx session start --name w13 -q
	sup=$(jq -r .pid "$SBX_HOME/run/session-w13.json")
	rm "$SBX_HOME/run/session-w13.json"
	for _ in $(seq 50); do kill -0 "$sup" 2>/dev/null || break; sleep 0.1; done
	! kill -0 "$sup" 2>/dev/null
}

@test "each command's envelope has its own violations: the proxy's and the file-system guard's" {
	sbx provision -q
	P=$TEST_ROOT/project
	mkdir -p "$P/.git"
	chmod 0777 "$TEST_ROOT" "$P"
	run -0 sbx session start --name pv --network proxy --workdir "$P" -q
	# A destination no rule allows: refused by the proxy before any
	# lookup (nothing leaves the machine), reported for this command.
	run -0 sbx exec --session pv --json -- sh -c \
	    'curl -s -m 5 -o /dev/null http://denied.sbx.test/; true'
	[ "$(json_get "$output" .result.session)" = pv ]
	[ "$(json_get "$output" '.result.violations | length')" -eq 1 ] ||
	    { echo "$output"; false; }
	[ "$(json_get "$output" '.result.violations[0].host')" = denied.sbx.test ]
	# The next command did nothing refused: its list is empty.
	run -0 sbx exec --session pv --json -- true
	[ "$(json_get "$output" '.result.violations | length')" -eq 0 ] ||
	    { echo "$output"; false; }
	# A protected path of the workdir (.envrc): the guard's refusal.
	run sbx exec --session pv --json -- sh -c 'echo evil > .envrc; true'
	[[ "$(json_get "$output" '.result.violations')" == *protected_path* ]] ||
	    { echo "$output"; false; }
	[ ! -e "$P/.envrc" ]
	run -0 sbx session stop pv
	"$SBX" proxy stop >/dev/null 2>&1 || true
}
