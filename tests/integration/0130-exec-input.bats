#!/usr/bin/env bats
# sbx exec: bad input (HOSTILE-CASES IV-08, IV-09, IV-10, IV-11).
#
# Every rejection is an envelope with `field` and a stable `reason`, exit
# the status of its kind (65 invalid_args, 77 rejected), and nothing is
# created or run on the host.  The full tables of
# names, variables and numbers the request validator refuses are unit
# tests (tests/unit/t-exec.c); here a few of each go end to end.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	TOK="sbx-in-$$-$RANDOM$RANDOM"
	D=$(( (RANDOM << 15 | RANDOM) % 899999 + 100000 ))
	D="8$D"
	HOSTPIDS=()
}

teardown() {
	local p
	for p in "${HOSTPIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	for p in $(pgrep -f "sleep $D" 2>/dev/null); do
		kill -KILL "$p" 2>/dev/null
	done
	rm -f "/tmp/pwn-$TOK" 2>/dev/null
	sbx_teardown
}

# rejected FIELD REASON ARGS...: `sbx exec --json ARGS` is refused with one
# envelope naming FIELD, with a reason matching the regex REASON (`-`: any),
# exit with the status of its kind (65 invalid_args, 77 rejected).  The
# command, when it gets that far, would create a marker in
# the home.  (One jq call per check: this file makes many.)
rejected() {
	local field=$1 reason=$2
	shift 2
	run sbx exec --json "$@"
	status_is_kind
	echo "args: $* => $output"
	printf '%s\n' "$output" | jq -e -s --arg f "$field" --arg r "$reason" '
	    length == 1 and (.[0] | .ok == false and .field == $f and
	    .retryable == false and (.kind == "invalid_args" or
	    .kind == "rejected") and ($r == "-" or
	    (.reason | test("^(" + $r + ")$"))))' >/dev/null
	[ ! -e "$WS/marker" ]
}

# Nothing of the state root's agent directories appeared.
no_agent_dirs() {
	if [ -d "$SBX_HOME/workspace" ]; then
		[ "$(find "$SBX_HOME/workspace" -mindepth 1 | grep -v -x \
		    -e "$SBX_HOME/workspace/agents" \
		    -e "$SBX_HOME/workspace/agents/default" | head -1)" = "" ]
	fi
	[ ! -e "$TEST_ROOT/etc" ] && [ ! -e "$SBX_HOME/etc" ] &&
	    [ ! -e "$SBX_HOME/b" ] && [ ! -e "$SBX_HOME/workspace/b" ]
}

# ---- IV-09 agent names ---------------------------------------------------

@test "IV-09: hostile agent names are refused and nothing is created" {
	long=$(printf 'a%.0s' $(seq 33))
	for a in ../b a/../../etc .. $'a\nb' '$(id)' /abs; do
		rejected agent 'invalid_name|empty|too_long' --agent "$a" -- \
		    touch /workspace/agents/default/marker
		no_agent_dirs
	done
	# The stable reasons for the boundary cases.
	rejected agent empty --agent '' -- true
	rejected agent too_long --agent "$long" -- true
	rejected agent invalid_name --agent 'аgent' -- true
	# SBX_AGENT goes through the same check.
	SBX_AGENT=../b run -65 sbx exec --json -- true
	[ "$(json_get "$output" .field)" = agent ]
	no_agent_dirs
	# A 32-character name is the longest allowed.
	ok=$(printf 'a%.0s' $(seq 32))
	run sbx exec --json --agent "$ok" -- true
	[ "$status" -eq 0 ]
	[ -d "$SBX_HOME/workspace/agents/$ok" ]
}

# ---- --env ---------------------------------------------------------------

@test "--env: invalid names are refused" {
	for e in 1A=x NOEQUALS $'A\nB=x'; do
		rejected env 'invalid_name|missing_equals' --env "$e" -- \
		    touch /workspace/agents/default/marker
	done
	rejected env missing_equals --env NOEQUALS -- true
}

@test "--env: reserved names are refused" {
	for n in PATH LD_PRELOAD 'BASH_FUNC_x%%' https_proxy; do
		rejected env 'reserved_name|invalid_name' --env "$n=x" -- \
		    touch /workspace/agents/default/marker
	done
	rejected env reserved_name --env LD_PRELOAD=/tmp/x.so -- true
}

@test "--env: a valid variable is visible inside" {
	run sbx exec --json --env FOO=bar --env 'WITH_SPACE=a b;$(id)' -- \
	    sh -c 'printf "%s|%s" "$FOO" "$WITH_SPACE"'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = 'bar|a b;$(id)' ]
}

@test "IV-08: --env values reach neither bwrap's argv nor its environment" {
	"$SBX" exec -q --env SECRETX=s3cr3tvalue -- sleep "$D" &
	HOSTPIDS+=("$!")
	for i in $(seq 100); do
		pgrep -f "^sleep $D\$" >/dev/null && break
		sleep 0.05
	done
	pgrep -f "^sleep $D\$" >/dev/null
	checked=0
	for p in $(pgrep -f "sleep $D"); do
		comm=$(cat "/proc/$p/comm" 2>/dev/null) || continue
		case "$comm" in
		sbx-exec|sbx|sleep)	continue ;;	# caller's argv; the command
		esac
		echo "checking $p ($comm)"
		if tr '\0' '\n' < "/proc/$p/cmdline" | grep -q s3cr3tvalue; then
			echo "secret in the argv of $comm"
			return 1
		fi
		if [ -r "/proc/$p/environ" ] &&
		    tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null |
		    grep -q s3cr3tvalue; then
			echo "secret in the environment of $comm"
			return 1
		fi
		checked=$((checked + 1))
	done
	# At least bwrap was looked at.
	[ "$checked" -ge 1 ]
}

# ---- --timeout, command, network -----------------------------------------

@test "--timeout: malformed values are refused" {
	for t in -1 0 nan 99999999999; do
		rejected timeout - --timeout "$t" -- touch /workspace/agents/default/marker
	done
	rejected timeout invalid_number --timeout abc -- true
}

@test "no command: invalid_args field command" {
	# A usage error, 64 (issue 28 item 9: it was 125, sbx exec's own
	# failure, though nothing was tried; DESIGN.md §5: usage is 64).
	run -64 --separate-stderr sbx exec --json
	[ "$(json_get "$output" .field)" = command ]
	[ "$(json_get "$output" .reason)" = missing ]
	run -64 --separate-stderr sbx exec --
	[[ "$stderr" == *"no command given"* ]]
	[[ "$stderr" == *usage:* ]]
	run -64 --separate-stderr sbx exec
	rejected command - -- ''
	rejected command - -c ''
}

@test "bogus --network values are refused; --allow-domain needs proxy" {
	rejected network - --network bogus -- touch /workspace/agents/default/marker
	rejected network - --network '' -- true
	rejected network - --network NONE -- true
	rejected allow_domain requires_proxy --allow-domain example.com -- \
	    touch /workspace/agents/default/marker
	rejected allow_domain requires_proxy --network outbound \
	    --allow-domain example.com -- touch /workspace/agents/default/marker
}

@test "missing bubblewrap: kind unavailable, a hint, nothing ran" {
	SBX_BWRAP=/nonexistent run -69 sbx exec --json -- \
	    touch /workspace/agents/default/marker
	echo "$output"
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = unavailable ]
	hint=$(json_get "$output" '.hint // ""')
	[[ "$hint$(json_get "$output" .message)" == *deps.sh* ||
	    "$hint$(json_get "$output" .message)" == *bubblewrap* ]]
	[ ! -e "$WS/marker" ]
	# Transparent mode: same exit, a message on stderr.
	SBX_BWRAP=/nonexistent run -125 sbx exec -- \
	    touch /workspace/agents/default/marker
	[ ! -e "$WS/marker" ]
}

# ---- --workdir -----------------------------------------------------------

@test "--workdir: missing, system, home and state-root directories are refused" {
	rejected workdir not_found --workdir "$TEST_ROOT/missing" -- true
	for w in / /etc /usr /usr/bin /var /tmp /proc /sys /dev /boot \
	    /run /home; do
		[ -d "$w" ] || continue
		rejected workdir system_directory --workdir "$w" -- \
		    touch /workspace/agents/default/marker
	done
	# root's home is a home, not a system directory (issue 11).
	if [ -d /root ]; then
		rejected workdir home_directory --workdir /root -- \
		    touch /workspace/agents/default/marker
	fi
	rejected workdir home_directory --workdir "$HOME" -- true
	mkdir -p "$SBX_HOME/workspace"
	rejected workdir state_root --workdir "$SBX_HOME" -- true
	rejected workdir state_root --workdir "$SBX_HOME/workspace" -- true
	# $TEST_ROOT holds both HOME and the state root.
	rejected workdir 'state_root|home_directory' --workdir "$TEST_ROOT" -- true
	# A parent of the state root that does not hold HOME.
	export SBX_HOME="$TEST_ROOT/p/q/state"
	mkdir -p "$SBX_HOME"
	rejected workdir state_root --workdir "$TEST_ROOT/p" -- true
	# Through a symlink to a refused directory: the link itself is
	# refused; followed on purpose, where it leads is.
	ln -s /etc "$TEST_ROOT/etclink"
	rejected workdir symlink --workdir "$TEST_ROOT/etclink" -- true
	rejected workdir system_directory --workdir-follow-symlinks \
	    --workdir "$TEST_ROOT/etclink" -- true
}

@test "--workdir: /usr/local (on PATH inside and on the host) is refused" {
	[ -d /usr/local ] || skip "no /usr/local"
	# BUG: is_system_dir() lists /usr/bin, /usr/lib... but not /usr/local
	# (nor /usr/local/bin, /usr/lib64, /usr/src): the sandbox can get
	# /usr/local/bin read-write, the first directory of PATH on the host.
	rejected workdir system_directory --workdir /usr/local -- true
}

@test "--workdir: a project directory is visible read-write at its own path and is the cwd" {
	proj="$TEST_ROOT/proj"
	mkdir -p "$proj"
	echo from-host > "$proj/in"
	# As root, sbx runs the sandbox as nobody: the project must be
	# writable by that uid, as a root user would arrange it.
	if is_root; then chown -R "$(sandbox_uid)" "$proj"; fi
	run sbx exec --json --workdir "$proj" -- sh -c \
	    'pwd; cat in; echo from-sandbox > out'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.cwd)" = "$proj" ]
	[ "$(json_get "$output" .result.stdout)" = "$proj"$'\n'from-host ]
	[ "$(cat "$proj/out")" = from-sandbox ]
	# --cwd inside the workdir is allowed too.
	mkdir "$proj/sub"
	if is_root; then chown "$(sandbox_uid)" "$proj/sub"; fi
	run sbx exec --json --workdir "$proj" --cwd "$proj/sub" -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = "$proj/sub" ]
	# The project's parent is still not visible.
	run sbx exec -q --workdir "$proj" -- ls "$TEST_ROOT/home"
	[ "$status" -ne 0 ]
}

# ---- IV-10: metacharacters in paths are data -----------------------------

@test "IV-10: shell metacharacters in --workdir and --cwd names run nothing" {
	for name in "p;touch /tmp/pwn-$TOK" "p\$(touch /tmp/pwn-$TOK)" \
	    "p\`touch /tmp/pwn-$TOK\`" "p|touch /tmp/pwn-$TOK" \
	    "p&touch /tmp/pwn-$TOK" "p'\"x" "p,unlink-early" "p:x!!" \
	    "-rf" "--bind"; do
		dir="$TEST_ROOT/w/$name"
		mkdir -p -- "$dir"
		run sbx exec --json --workdir "$dir" -- pwd
		echo "$name => $output"
		[ "$status" -eq 0 ]
		printf '%s' "$output" | jq -e --arg d "$dir" '.result.cwd == $d
		    and .result.stdout == $d + "\n"' >/dev/null
		[ ! -e "/tmp/pwn-$TOK" ]
		# The same name as --cwd inside the home.
		mkdir -p -- "$WS/$name"
		run sbx exec --json --cwd "$name" -- pwd
		[ "$status" -eq 0 ]
		printf '%s' "$output" | jq -e --arg d \
		    "/workspace/agents/default/$name" '.result.stdout == $d + "\n"' \
		    >/dev/null
		[ ! -e "/tmp/pwn-$TOK" ]
	done
}

@test "IV-10: a newline or control character in --workdir or --cwd is refused" {
	sbx exec -- true
	dir="$TEST_ROOT/a"$'\n'"b"
	mkdir -p -- "$dir"
	rejected workdir control_character --workdir "$dir" -- true
	mkdir -p -- "$WS/a"$'\n'"b"
	rejected cwd control_character --cwd "a"$'\n'"b" -- true
	rejected cwd control_character --cwd $'x\e[2J' -- true
	[ ! -e "/tmp/pwn-$TOK" ]
}

# ---- IV-11: what sbx prints about jobs is escaped ------------------------

@test "IV-11: exec ps escapes ESC and newlines in a job's command" {
	run sbx exec --json --background -- sh -c $'echo \e]0;pwn\a\e[2J\necho READY: all checks passed' "$TOK"
	[ "$status" -eq 0 ]
	job=$(json_get "$output" .result.job)
	run sbx exec wait "$job"
	run sbx exec ps
	[ "$status" -eq 0 ]
	printf '%s\n' "$output"
	# A header and one row: the newline did not forge a line.
	[ "${#lines[@]}" -eq 2 ]
	[[ "$output" != *$'\e'* ]]
	[[ "$output" != *$'\a'* ]]
	[[ "${lines[1]}" == "$job"* ]]
	# The JSON form keeps the exact bytes.
	run sbx exec ps --json
	[ "$(json_get "$output" '.result.jobs[0].command[2]')" = $'echo \e]0;pwn\a\e[2J\necho READY: all checks passed' ]
}

# ---- -c STRING [NAME [ARG...]] (issue 11, item 13) -----------------------

@test "-c: NAME and ARGs after the string are \$0, \$1... as for sh -c" {
	run sbx exec -q -c 'printf "%s|" "$0" "$#" "$@"' myname a 'b c' ''
	[ "$status" -eq 0 ]
	[ "$output" = "myname|3|a|b c||" ]
	# They are arguments, never parsed as shell: nothing runs from them.
	run sbx exec -q -c 'echo "$1"' x "\$(touch $HOME/marker)"
	[ "$status" -eq 0 ]
	[ "$output" = "\$(touch $HOME/marker)" ]
	[ ! -e "$WS/marker" ] && [ ! -e "$HOME/marker" ]
	# Without them, as before.
	run sbx exec -q -c 'echo plain'
	[ "$output" = plain ]
	# A background job records them in its command.
	id=$(sbx exec -q --background -c 'echo "$1"' n job-arg)
	run sbx exec wait "$id" --timeout 30
	[ "$output" = job-arg ]
	run sbx exec ps --json
	[ "$(json_get "$output" '.result.jobs[0].command | join(" ")')" = "-c echo \"\$1\" n job-arg" ]
}

@test "-c with --: a usage error (64) that says what -c takes; nothing runs" {
	run -64 sbx exec -c "touch $WS/marker" -- x
	[[ "$output" == *"-c takes the script and then \$0 and arguments, without --"* ]]
	[[ "$output" == *usage:* ]]
	run -64 sbx exec -c "touch $WS/marker" --
	[[ "$output" == *"without --"* ]]
	run -64 sbx exec --json -c "touch $WS/marker" -- x
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .reason)" = dashdash_with_c ]
	[ "$(printf '%s\n' "$output" | head -1 | jq -r .kind)" = invalid_args ]
	[ ! -e "$WS/marker" ]
}

@test "--memory 1g, --disk 512m: docker's units; an unknown one names them" {
	# issue 28 item 9: a unit was refused without saying which are known.
	run -65 --separate-stderr sbx exec --json --memory 1q -- true
	[ "$(json_get "$output" .field)" = memory_mib ]
	[ "$(json_get "$output" .reason)" = invalid_number ]
	[[ "$(json_get "$output" .message)" == *"k, m, g or t"* ]]
	# Accepted (whatever the machine can enforce: soft limits).
	run --separate-stderr sbx exec --json --soft-limits --memory 1g \
	    --disk 512m -- true
	[ "$(json_get "$output" .reason)" != invalid_number ]
	if [ "$(json_get "$output" .ok)" = true ]; then
		[ "$(json_get "$output" .result.limits.memory_mib)" = 1024 ]
		[ "$(json_get "$output" .result.limits.disk_mib)" = 512 ]
	fi
}
