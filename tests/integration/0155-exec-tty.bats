#!/usr/bin/env bats
# sbx exec -t/--tty: a terminal of the sandbox's own for the command, relayed
# by sbx; the caller's terminal is put back however the run ends; buffered
# output and the inactivity timeout (issue 11, item 9; HOSTILE-CASES SK-04).
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	TOK="sbx-tty-$$-$RANDOM$RANDOM"
	D=$(( (RANDOM << 15 | RANDOM) % 899999 + 100000 ))
	D="6$D"
}

teardown() {
	local p
	for p in $(pgrep -f "sleep $D" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	rm -f "/tmp/pwn-sti-$TOK" 2>/dev/null
	sbx_teardown
}

need_script() {
	command -v script >/dev/null || skip "script is not installed"
}

# in_pty SCRIPT: run a bash script under script(1), so that its stdin,
# stdout and stderr are a terminal; print its output without the CRs.
# script(1) passes the end of its own stdin on as a NUL byte, which the
# command's terminal echoes as ^@: dropped too.
in_pty() {
	need_script
	printf '%s\n' "$1" >"$TEST_ROOT/pty.sh"
	script -qec "bash '$TEST_ROOT/pty.sh'" /dev/null </dev/null |
	    tr -d '\r' | sed 's/\^@//g'
}

@test "-t: the command's stdin, stdout and stderr are a terminal named inside" {
	# Without a terminal at the caller (a pipe, as in CI): one all the same.
	run sbx exec -q -t -- sh -c \
	    'tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-terminals'
	echo "$output"
	[ "$status" -eq 0 ]
	mapfile -t l <<<"${output//$'\r'/}"
	[[ "${l[0]}" == /dev/pts/* ]]
	[ "${l[1]}" = all-terminals ]
	# With one: the same, and the terminal is the sandbox's own devpts,
	# not the caller's (whose other terminals are not there).
	out=$(in_pty "
'$SBX' exec -q -t -- sh -c 'tty; [ -t 0 ] && echo stdin-tty; ls /dev/pts | tr \"\n\" \" \"; echo'
echo caller \$(tty)")
	echo "$out"
	grep -qx '/dev/pts/0' <<<"$out"
	grep -qx 'stdin-tty' <<<"$out"
	grep -qx '0 ptmx ' <<<"$out"
	grep -q '^caller /dev/pts/' <<<"$out"
	# Without -t, a pipe stays a pipe.
	run sbx exec -q -- sh -c '[ -t 0 ] || [ -t 1 ] || echo no-terminal' </dev/null
	[ "$output" = no-terminal ]
}

@test "-t: the command's terminal has the caller's window size and follows SIGWINCH" {
	sbx exec -q -- true
	out=$(in_pty "
stty rows 33 cols 101
'$SBX' exec -q -t -- sh -c 'stty size; trap \"stty size; exit 0\" WINCH
    touch ready; i=0; while [ \$i -lt 300 ]; do sleep 0.1; i=\$((i+1)); done
    echo no-winch' </dev/tty &
for i in \$(seq 400); do [ -e '$WS/ready' ] && break; sleep 0.05; done
stty rows 40 cols 120
wait \$!
echo status \$?")
	echo "$out"
	grep -qx '33 101' <<<"$out"
	grep -q '40 120$' <<<"$out"
	grep -qx 'status 0' <<<"$out"
	! grep -q no-winch <<<"$out"
	# No terminal at the caller: 24 by 80.
	run sbx exec -q -t -- stty size </dev/null
	[ "${output//$'\r'/}" = "24 80" ]
}

@test "-t: the caller's terminal modes are unchanged however the run ends" {
	sbx exec -q -- true
	out=$(in_pty "
stty -g
'$SBX' exec -q -t -- stty -echo
stty -g
'$SBX' exec -q -t -- sh -c 'stty raw -echo; exit 3'
echo status \$?
stty -g
'$SBX' exec -q -t --timeout 1 -- sh -c 'stty -icanon -echo; sleep ${D}1' 2>/dev/null
echo status \$?
stty -g
rm -f '$WS/ready'
'$SBX' exec -q -t -- sh -c 'stty -echo -isig; touch ready; sleep ${D}2' </dev/tty 2>/dev/null &
for i in \$(seq 400); do [ -e '$WS/ready' ] && break; sleep 0.05; done
kill -TERM \$!
wait \$!
echo status \$?
stty -g")
	echo "$out"
	mapfile -t g < <(grep -E '^[0-9a-f]+(:[0-9a-f]+){20,}$' <<<"$out")
	[ "${#g[@]}" -eq 5 ]
	for i in 1 2 3 4; do
		[ "${g[$i]}" = "${g[0]}" ]
	done
	grep -qx 'status 3' <<<"$out"
	grep -qx 'status 124' <<<"$out"
	grep -qx 'status 143' <<<"$out"
}

@test "-t: an interactive bash -i runs what stdin sends, with job control, and exits" {
	command -v bash >/dev/null || skip "bash is not installed"
	# stdin a pipe (as ssh -tt): the end of it is ^D to the terminal.
	run sbx exec -q -t --timeout 30 -- bash --norc -i <<'EOF'
[[ $- == *m* ]] && echo JOB-CONTROL; sleep 0.1 & wait; echo $((6*7)); exit 7
EOF
	echo "$output"
	[ "$status" -eq 7 ]
	# (The echo of the line typed ends with `exit 7`, not with this.)
	grep -q 'JOB-CONTROL$' <<<"${output//$'\r'/}"
	grep -qx '42' <<<"${output//$'\r'/}"
	! grep -q 'no job control' <<<"$output"
	# From a real terminal, in raw mode: keystrokes reach the shell.
	need_script
	run script -qec "'$SBX' exec -q -t --timeout 30 -- bash --norc -i" \
	    /dev/null <<<'echo $((6*7)); exit 5'
	echo "$output"
	[ "$status" -eq 5 ]
	grep -q '42$' <<<"${output//$'\r'/}"
	# A piped stdin that ends without a newline still ends the reader.
	run sbx exec -q -t --timeout 30 -- cat < <(printf 'one\ntwo')
	[ "$status" -eq 0 ]
	[[ "${output//$'\r'/}" == *$'one\ntwo'* ]]
}

@test "-t: stdout and stderr are one stream; the exit status is the command's" {
	run --separate-stderr sbx exec -q -t -- sh -c 'echo to-out; echo to-err >&2; exit 4'
	[ "$status" -eq 4 ]
	[[ "$output" == *to-out* ]]
	[[ "$output" == *to-err* ]]
	[ -z "$stderr" ]
}

@test "-t with --json, SBX_JSON=1 or --background: usage error 64, nothing runs" {
	run -64 sbx exec -t --json -- touch "$WS/marker"
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .reason)" = tty_with_json ]
	SBX_JSON=1 run -64 sbx exec --tty -- touch "$WS/marker"
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .field)" = tty ]
	run -64 sbx exec -t --background -- touch "$WS/marker"
	[[ "$output" == *"-t/--tty cannot be used with --background"* ]]
	[ ! -e "$WS/marker" ]
	# --timeout lost its short form to -t: -t takes no value.
	run -64 sbx exec -t 5 -- true
}

@test "SK-04 under -t: TIOCSTI on the command's own terminal is denied" {
	[ -x "$PY" ] || skip "python3 is not installed"
	need_script
	sbx exec -q -- true
	cat >"$WS/sti.py" <<EOF
import fcntl, termios
try:
    for c in b'touch /tmp/pwn-sti-$TOK\\n':
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print('INJECTED')
except OSError as e:
    print('errno', e.errno)
EOF
	run script -qec "'$SBX' exec -q -t -- '$PY' sti.py" /dev/null </dev/null
	echo "$output"
	[[ "$output" == *"errno 1"* ]]
	[[ "$output" != *INJECTED* ]]
	sleep 0.3
	[ ! -e "/tmp/pwn-sti-$TOK" ]
}

# ---- buffered output and --timeout ----------------------------------------

@test "PYTHONUNBUFFERED=1 inside: a script printing every 0.5 s outlives --timeout 2" {
	[ -x "$PY" ] || skip "python3 is not installed"
	run sbx exec -q -- sh -c 'echo "[$PYTHONUNBUFFERED]"'
	[ "$output" = "[1]" ]
	run sbx exec -q --timeout 2 -- "$PY" -c '
import time
for i in range(6):
    print(i)
    time.sleep(0.5)
print("done")'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[6]}" = done ]
	# --env turns it off.
	run sbx exec -q --env PYTHONUNBUFFERED= -- sh -c 'echo "[$PYTHONUNBUFFERED]"'
	[ "$output" = "[]" ]
}

@test "--timeout: the message says buffered output counts as silence" {
	run -124 --separate-stderr sbx exec --timeout 1 -- sh -c "sleep ${D}3"
	echo "$stderr"
	[[ "$stderr" == *"output a program buffers counts as silence"* ]]
	run -124 sbx exec --json --timeout 1 -- sh -c "sleep ${D}4"
	[[ "$(json_get "$output" .message)" == *"buffers counts as silence"* ]]
	[[ "$(json_get "$output" .hint)" == *"-t/--tty"* ]]
}
