#!/usr/bin/env bats
# sbx exec: descriptors, terminals and output handling (HOSTILE-CASES
# §0.3 fd sweep, SK-04 TIOCSTI; output caps and invalid UTF-8).
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	TOK="sbx-fd-$$-$RANDOM$RANDOM"
	D=$(( (RANDOM << 15 | RANDOM) % 899999 + 100000 ))
	D="7$D"
	HOSTPIDS=()
}

teardown() {
	local p id
	if [ -d "$SBX_HOME" ]; then
		for id in $("$SBX" exec ps --json 2>/dev/null |
		    jq -r '.result.jobs[]? | select(.alive) | .job'); do
			"$SBX" exec kill --force "$id" >/dev/null 2>&1
		done
	fi
	# TERM first: an sbx exec killed with KILL cannot remove its run's
	# cgroup (gc below reaps what is left then).
	for p in "${HOSTPIDS[@]}"; do
		kill -TERM "$p" 2>/dev/null
	done
	for p in "${HOSTPIDS[@]}"; do
		for _ in 1 2 3 4 5 6 7 8 9 10; do
			kill -0 "$p" 2>/dev/null || break
			sleep 0.2
		done
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in $(pgrep -f "sleep $D" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	"$SBX" exec gc >/dev/null 2>&1
	rm -f "/tmp/pwn-sti-$TOK" 2>/dev/null
	sbx_teardown
}

need_python() {
	[ -x "$PY" ] || skip "python3 is not installed"
}

# Print the descriptors open in the process, sorted, space-separated.  The
# descriptor listdir() used is closed by then, so fstat() drops it.
fdlist='
import os
fds = []
for f in os.listdir("/proc/self/fd"):
    try:
        os.fstat(int(f))
    except OSError:
        continue
    fds.append(int(f))
print(" ".join(str(f) for f in sorted(fds)))
'

@test "fd sweep: only 0, 1 and 2 are open inside" {
	need_python
	run sbx exec -q -- "$PY" -c "$fdlist"
	[ "$status" -eq 0 ]
	[ "$output" = "0 1 2" ]
}

@test "fd sweep: descriptors the caller leaks do not cross into the sandbox" {
	need_python
	echo secret > "$TEST_ROOT/leak"
	# Descriptors 5, 7 and 9 open in sbx's caller, not close-on-exec.
	run sbx exec -q -- "$PY" -c "$fdlist" 5<"$TEST_ROOT/leak" \
	    7>"$TEST_ROOT/leak2" 9<"$TEST_ROOT"
	[ "$status" -eq 0 ]
	[ "$output" = "0 1 2" ]
}

@test "fd sweep: only 0, 1 and 2 are open in a background job" {
	need_python
	run sbx exec --json --background -- "$PY" -c "$fdlist"
	[ "$status" -eq 0 ]
	job=$(json_get "$output" .result.job)
	run sbx exec wait "$job" --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.log_tail)" = "0 1 2" ]
}

@test "fd sweep, host side: bwrap and sbx-init hold nothing of the host's files" {
	"$SBX" exec -q -- sleep "$D" 5<"$TEST_ROOT" &
	HOSTPIDS+=("$!")
	for i in $(seq 100); do
		pgrep -f "^sleep $D\$" >/dev/null && break
		sleep 0.05
	done
	checked=0
	for p in $(pgrep -f "sleep $D"); do
		comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		case $comm in sbx-exec|sbx) continue ;; esac	# the caller (sbx builds exec in)
		# sbx-init is not dumpable: unprivileged, its fds are hidden.
		targets=$(ls -l "/proc/$p/fd" 2>/dev/null | sed -n 's/.* -> //p') ||
		    continue
		[ -n "$targets" ] || continue
		checked=$((checked + 1))
		echo "$comm ($p):" $targets
		while IFS= read -r t; do
			case "$t" in
			pipe:*|socket:*|anon_inode:*|/dev/null|/dev/pts/*) ;;
			*) echo "unexpected fd target in $comm: $t"; return 1 ;;
			esac
		done <<<"$targets"
	done
	# At least the command itself was looked at.
	[ "$checked" -ge 1 ]
}

@test "SK-04: TIOCSTI cannot type into the caller's terminal" {
	need_python
	command -v script >/dev/null || skip "script is not installed"
	inject="import fcntl, termios
try:
    for c in b'touch /tmp/pwn-sti-$TOK\\n':
        fcntl.ioctl(0, termios.TIOCSTI, bytes([c]))
    print('INJECTED')
except OSError as e:
    print('errno', e.errno)"
	printf '%s\n' "$inject" > "$TEST_ROOT/sti.py"
	sbx exec -- true
	cp "$TEST_ROOT/sti.py" "$WS/sti.py"
	# Under script(1) the command's stdin is a real terminal.
	run script -qec "'$SBX' exec -q -- '$PY' /workspace/agents/default/sti.py" \
	    /dev/null </dev/null
	echo "$output"
	[[ "$output" == *"errno 1"* ]]
	[[ "$output" != *INJECTED* ]]
	sleep 0.3
	[ ! -e "/tmp/pwn-sti-$TOK" ]
}

@test "--max-output: a 5 MB flood gives a bounded envelope with a marker" {
	run sbx exec --json --max-output 64K -- \
	    sh -c 'head -c 5000000 /dev/zero | tr "\0" a'
	[ "$status" -eq 0 ]
	[ "${#output}" -le 72000 ]
	[ "$(json_get "$output" '.result.truncated | index("stdout") != null')" = true ]
	out=$(json_get "$output" .result.stdout)
	[ "${#out}" -le 70000 ]
	[[ "$out" =~ \[sbx:\ ([0-9]+)\ bytes\ omitted\] ]]
	omitted=${BASH_REMATCH[1]}
	# Kept plus omitted is what was printed.
	kept=$(printf '%s' "$out" | tr -cd a | wc -c)
	[ $((kept + omitted)) -eq 5000000 ]
}

@test "--max-output: sbx's peak memory stays bounded under a flood" {
	/usr/bin/time -v true >/dev/null 2>&1 ||
	    skip "GNU time (/usr/bin/time -v) is not installed"
	/usr/bin/time -v -o "$TEST_ROOT/rss" "$SBX" exec --json --max-output 64K -- \
	    sh -c 'head -c 50000000 /dev/zero | tr "\0" a' >"$TEST_ROOT/env.json"
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TEST_ROOT/rss")
	echo "peak RSS ${rss} KiB"
	[ "$rss" -lt 65536 ]
	jq -e .ok "$TEST_ROOT/env.json" >/dev/null
	# The default cap (1M) too.
	/usr/bin/time -v -o "$TEST_ROOT/rss" "$SBX" exec --json -- \
	    sh -c 'head -c 50000000 /dev/zero | tr "\0" a' >"$TEST_ROOT/env.json"
	rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$TEST_ROOT/rss")
	echo "peak RSS (default cap) ${rss} KiB"
	[ "$rss" -lt 65536 ]
	[ "$(jq -r '.result.stdout | length' "$TEST_ROOT/env.json")" -le 1100000 ]
}

@test "a 200 MB flood in transparent mode passes through whole" {
	# Counted through a pipe (bats' `run` would hold it all in memory).
	n=$("$SBX" exec -q -- head -c 200000000 /dev/zero | wc -c)
	[ "$n" -eq 200000000 ]
	"$SBX" exec -q -- head -c 200000000 /dev/zero >/dev/null
}

@test "invalid UTF-8 output gives valid JSON with U+FFFD" {
	run sbx exec --json -- sh -c 'printf "a\377b\300\n"; printf "\355\240\200x" >&2'
	[ "$status" -eq 0 ]
	printf '%s' "$output" | jq -e . >/dev/null
	[ "$(json_get "$output" .result.stdout)" = $'a\xef\xbf\xbdb\xef\xbf\xbd' ]
	[[ "$(json_get "$output" .result.stderr)" == *$'\xef\xbf\xbd'*x ]]
	# A multi-byte character cut by --max-output still gives valid JSON.
	run sbx exec --json --max-output 65 -- sh -c \
	    'i=0; while [ $i -lt 200 ]; do printf "\303\251"; i=$((i+1)); done'
	[ "$status" -eq 0 ]
	printf '%s' "$output" | jq -e .result.stdout >/dev/null
}

# in_pty SCRIPT: run a bash script under script(1), so that its stdin,
# stdout and stderr are a terminal; print its output without the CRs.
in_pty() {
	command -v script >/dev/null || skip "script is not installed"
	printf '%s\n' "$1" >"$TEST_ROOT/pty.sh"
	script -qec "bash '$TEST_ROOT/pty.sh'" /dev/null </dev/null | tr -d '\r'
}

@test "--json on a terminal: the command reads /dev/null and cannot change the terminal" {
	out=$(in_pty "
stty -g
'$SBX' exec -q --json -- sh -c 'readlink /proc/self/fd/0; stty -echo 2>/dev/null; true' |
    jq -j .result.stdout
stty -g
# --stdin inherit gives the terminal, and its modes are put back after.
'$SBX' exec -q --json --stdin inherit -- sh -c 'stty -echo; [ -t 0 ] && echo tty' |
    jq -j .result.stdout
stty -g")
	echo "$out"
	mapfile -t l <<<"$out"
	[ "${l[1]}" = /dev/null ]
	[ "${l[3]}" = tty ]
	[ -n "${l[0]}" ]
	[ "${l[2]}" = "${l[0]}" ]
	[ "${l[4]}" = "${l[0]}" ]
}

@test "transparent mode on a terminal: its modes are restored however the run ends" {
	out=$(in_pty "
stty -g
'$SBX' exec -q -- stty -echo
stty -g
'$SBX' exec -q -- sh -c 'stty raw -echo; exit 3'
stty -g
'$SBX' exec -q --wall-timeout 1 -- sh -c 'stty -icanon -echo; sleep ${D}1' 2>/dev/null
stty -g
# A signal to sbx, once the command has changed the modes (the terminal
# given explicitly: bash gives a background command /dev/null).
rm -f '$WS/ready'
'$SBX' exec -q -- sh -c 'stty -echo -isig; touch ready; sleep ${D}2' </dev/tty 2>/dev/null &
for i in \$(seq 200); do [ -e '$WS/ready' ] && break; sleep 0.05; done
kill -TERM \$!
wait \$!
stty -g")
	echo "$out"
	mapfile -t l <<<"$out"
	[ "${#l[@]}" -eq 5 ]
	[ -n "${l[0]}" ]
	for i in 1 2 3 4; do
		[ "${l[$i]}" = "${l[0]}" ]
	done
	[ -e "$WS/ready" ]
}

@test "--stdin: null, inherit; refused with --background; a bad mode is invalid_args" {
	run sbx exec -q --stdin null -- cat <<<"hello"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run sbx exec -q --stdin inherit -- cat <<<"hello"
	[ "$output" = hello ]
	# A pipe is not a terminal: --json still reads it by default.
	run sbx exec -q --json -- cat <<<"hello"
	[ "$(json_get "$output" .result.stdout)" = hello ]
	run -65 sbx exec --json --stdin inherit --background -- true
	[ "$(json_get "$output" .field)" = stdin ]
	run -65 sbx exec --json --stdin tty -- true
	[ "$(json_get "$output" .reason)" = invalid_mode ]
}

@test "closed standard descriptors: the command gets /dev/null, never a file of sbx" {
	sbx exec -q -- true
	# The shell's own descriptors, as the sandbox gave them.
	probe='a=$(readlink /proc/$$/fd/0); b=$(readlink /proc/$$/fd/1)
	    c=$(readlink /proc/$$/fd/2); printf "%s\n" "$a" "$b" "$c" >"$HOME/fds"'
	for redir in '<&-' '>&-' '2>&-' '<&- >&- 2>&-'; do
		for prog in "$SBX exec" "$SBX_EXEC_PATH/sbx-exec"; do
			rm -f "$WS/fds"
			run bash -c "$prog -q -- sh -c '$probe' $redir"
			echo "$prog $redir: $status"
			cat "$WS/fds"
			[ "$status" -eq 0 ]
			mapfile -t l <"$WS/fds"
			# stdin: the caller's, or /dev/null where it was closed.
			case $redir in
			*'<&-'*) [ "${l[0]}" = /dev/null ] ;;
			esac
			# stdout and stderr are sbx's relay pipes.
			[[ "${l[1]}" == pipe:* ]]
			[[ "${l[2]}" == pipe:* ]]
			! grep -q 'sbx' "$WS/fds"
		done
	done
}

@test "closed standard descriptors: sbx, provision, preflight and proxy behave as usual" {
	sbx provision -q
	for redir in '<&-' '>&-' '2>&-' '<&- >&- 2>&-'; do
		for cmd in "sbx --version" "sbx provision -q" \
		    "sbx preflight --json" "sbx proxy check --json localhost:1"; do
			set -- ${cmd#sbx }
			run "$SBX" "$@"
			want=$status
			run bash -c "'$SBX' $* $redir"
			echo "$cmd $redir: $status (want $want)"
			[ "$status" -eq "$want" ]
		done
		# With stdout open, the envelope is still whole.
		run bash -c "'$SBX' preflight --json <&- 2>&-"
		printf '%s' "$output" | jq -e .tool >/dev/null
	done
	# The state root is as sound as before.
	run "$SBX" provision status --json
	[ "$status" -eq 0 ]
}
