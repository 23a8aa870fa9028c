#!/usr/bin/env bats
# One option table per program (issue 12 item 5): an option given to a
# subcommand it does not go with is refused (exit 64, invalid_args,
# reason not_for_subcommand) before anything is touched; the hidden
# `--complete-options` of every program and `sbx --complete ...` answer
# the shell completions, one candidate a line, silent on errors; the
# completions themselves ask sbx for agents, jobs and images of the state
# root sbx resolves.  (The exact sets of options, man page and completions
# are 0010-docs.sh's.)
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# refused FIELD CMD...: CMD is a usage error about the option FIELD that
# does not go with its subcommand, as text and as an envelope.
refused() {
	local field=$1
	shift
	run -64 --separate-stderr "$@"
	[ -z "$output" ]
	[[ "$stderr" == *"option \`$field\` does not go with"* ]]
	[[ "$stderr" == *"hint: $field goes with:"* ]]
	[[ "$stderr" == *usage:* ]]
	SBX_JSON=1 run -64 --separate-stderr "$@"
	[ "${#lines[@]}" -eq 1 ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .reason)" = not_for_subcommand ]
	[ "$(json_get "$output" .field)" = "$field" ]
}

# The state root as a list of paths and modes (to see that nothing
# changed).
snapshot() {
	find "$SBX_HOME" -printf '%p %m %s\n' 2>/dev/null | sort
}

@test "options given to the wrong subcommand are refused, wherever they stand" {
	sbx provision -q
	before=$(snapshot)
	refused --force sbx exec ps --force
	refused --memory sbx exec --memory 64 ps
	refused --tty sbx exec ps -t
	refused --tail-lines sbx exec kill 0123456789abcdef --tail-lines 3
	refused --force sbx exec --force -- true
	refused --agent sbx exec gc --agent default
	refused --force sbx provision image list --force
	refused --agent sbx provision reset --agent default
	refused --yes sbx provision --yes
	refused --agent sbx provision list --agent default
	refused --resolve sbx proxy status --resolve
	refused --foreground sbx proxy check --foreground example.com
	refused --quiet sbx config show --quiet
	refused --json-value sbx config get network --json-value
	# Nothing ran, nothing on the host changed.
	[ "$(snapshot)" = "$before" ]
	[ ! -e "$SBX_HOME/run/proxy.pid" ]
}

@test "what goes with a subcommand still works there" {
	sbx provision -q
	run -0 sbx exec wait --help
	[[ "$output" == usage:* ]]
	run -1 --separate-stderr sbx exec wait 0123456789abcdef -t 1 --tail-lines 1 --json
	[ "$(json_get "$output" .reason)" = unknown_job ]
	run -0 sbx provision status -q
	run -0 --separate-stderr sbx exec ps --agent default --json
	[ "$(json_get "$output" .ok)" = true ]
	run -0 sbx config keys -v
	[[ "$output" == *network* ]]
}

@test "every program answers --complete-options as sbx --complete options does" {
	for p in exec provision preflight proxy config; do
		run -0 "$SBX_EXEC_PATH/sbx-$p" --complete-options
		[ -n "$output" ]
		via=$(sbx --complete options "$p")
		[ "$output" = "$via" ]
		[[ "$output" == *--help* ]]
		# Every line: an option, then for a value a tab and a spec.
		while IFS= read -r l; do
			[[ "$l" =~ ^--?[A-Za-z][a-z0-9-]*(	[^	]+)?$ ]] ||
			    { echo "bad line: $l"; return 1; }
		done <<<"$output"
	done
	run -0 sbx --complete options exec wait
	[[ "$output" == *$'--timeout\t@text'* ]]
	[[ "$output" == *$'-t\t@text'* ]]
	[[ "$output" != *--tty* ]]
	run -0 sbx --complete options status
	[ "$output" = "$(sbx --complete options provision status)" ]
	run -0 sbx --complete subcommands provision image
	[ "$output" = "$(printf 'add\nlist\nrm\nverify')" ]
	run -0 sbx --complete operands exec poll
	[ "$output" = @job ]
	run -0 sbx --complete commands
	[[ "$output" == *status* && "$output" == *help* && "$output" == *exec* ]]
}

@test "sbx --complete is silent on errors" {
	for args in "options ../exec" "options no-such" "options exec nosuch" \
	    "subcommands init" "jobs --agent ../../etc" "agents --bogus" \
	    "nosuch" "" "cwd --agent A"; do
		# shellcheck disable=SC2086
		run --separate-stderr sbx --complete $args
		[ "$status" -ne 0 ] || { echo "exit 0: $args"; return 1; }
		[ -z "$output" ] && [ -z "$stderr" ] ||
		    { echo "said something: $args: $output $stderr"; return 1; }
	done
}

@test "agents, jobs and images of the state root sbx resolves" {
	run -0 sbx --complete agents
	[ -z "$output" ]	# no root yet: nothing, and nothing made
	[ ! -e "$SBX_HOME" ]
	sbx provision -q --agent alice
	sbx provision -q --agent bob
	run -0 sbx --complete agents
	[ "$output" = "$(printf 'alice\nbob')" ]
	run -0 sbx --complete agents --home "$SBX_HOME"
	[ "$output" = "$(printf 'alice\nbob')" ]
	run -0 env -u SBX_HOME HOME="$HOME" XDG_DATA_HOME="$TEST_ROOT/xdg" \
	    "$SBX" --complete home
	if is_root; then
		[ "$output" = /var/lib/sbx ]
	else
		[ "$output" = "$TEST_ROOT/xdg/sbx" ]
	fi
	run -0 sbx --complete cwd --agent bob
	[ "$output" = "$SBX_HOME/workspace/agents/bob" ]

	# Images: the names of images/names.json; a hostile name is not
	# offered, and a planted symlink is not followed.
	mkdir -p "$SBX_HOME/images"
	d=$(printf '%064d' 0)
	printf '{"tiny":"%s","../evil":"%s"}' "$d" "$d" >"$SBX_HOME/images/names.json"
	run -0 sbx --complete images
	[ "$output" = tiny ]
	printf '{"elsewhere":"%s"}' "$d" >"$TEST_ROOT/names.json"
	rm "$SBX_HOME/images/names.json"
	ln -s "$TEST_ROOT/names.json" "$SBX_HOME/images/names.json"
	run -0 sbx --complete images
	[ -z "$output" ]

	# Jobs: the agent's background jobs.
	job=$(sbx exec --agent alice --background -- sleep 30)
	run -0 sbx --complete jobs --agent alice
	[ "$output" = "$job" ]
	run -0 sbx --complete jobs --agent bob
	[ -z "$output" ]
	sbx exec kill --agent alice --force "$job" >/dev/null
	sbx exec wait --agent alice "$job" -t 30 >/dev/null || true
}

# bash_complete WORD...: what the bash completion offers for the command
# line (the last word is completed).
bash_complete() {
	bash -c '. "$0"; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
	COMPREPLY=(); _sbx; printf "%s\n" "${COMPREPLY[@]}"' \
	    "$BATS_TEST_DIRNAME/../../completions/sbx.bash" "$SBX" "$@" |
	    LC_ALL=C sort
}

@test "the bash completion asks sbx: agents, choices, subcommands, options" {
	sbx provision -q --agent alice
	sbx provision -q --agent bob
	run -0 bash_complete exec --agent ""
	[ "$output" = "$(printf 'alice\nbob')" ]
	run -0 bash_complete exec -a b
	[ "$output" = bob ]
	run -0 bash_complete exec --network ""
	[ "$output" = "$(printf 'none\noutbound\nproxy')" ]
	run -0 bash_complete exec ""
	[ "$output" = "$(printf -- '--\ngc\nkill\npoll\nps\nwait')" ]
	run -0 bash_complete provision image ""
	[ "$output" = "$(printf 'add\nlist\nrm\nverify')" ]
	run -0 bash_complete provision --image ""
	[ "$output" = none ]
	run -0 bash_complete preflight --fail-on ""
	[ "$output" = "$(printf 'blocked\nunproven\nwarning')" ]
	run -0 bash_complete provision --q
	[ "$output" = --quiet ]
	run -0 bash_complete preflight --verb
	[ "$output" = --verbose ]
	run -0 bash_complete config --global set limits.p
	[ "$output" = limits.pids ]
	run -0 bash_complete exec -- ech
	[[ "$output" == *echo* ]]
}
