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

# ---- where options may stand (issue 28 item 7) --------------------------

# json_after CMD...: `sbx CMD --json` (the option after the operands)
# answers with one envelope that is not a usage error, with and without
# POSIXLY_CORRECT (which turns glibc's permutation off).
json_after() {
	local env
	for env in "" POSIXLY_CORRECT=1; do
		run --separate-stderr env $env "$SBX" "$@" --json
		[ "${#lines[@]}" -eq 1 ] ||
		    { echo "$env sbx $* --json: $output $stderr"; return 1; }
		[ -n "$(json_get "$output" .tool)" ]
		case $(json_get "$output" .reason) in
		usage | unknown_option | unexpected_argument | missing_argument)
			echo "$env sbx $* --json: a usage error: $output"
			return 1 ;;
		esac
		[ "$status" -ne 64 ] || { echo "$env sbx $*: 64"; return 1; }
	done
}

@test "every program takes its options after the operands, before --" {
	sbx provision -q
	printf 'a\n' >"$WS/f.txt"
	job=0123456789abcdef
	# Every subcommand that takes operands, one line each.
	json_after proxy check example.com
	json_after proxy answer 0000 deny
	SBXT_V=v json_after secret set tok --from-env SBXT_V
	json_after secret check tok
	json_after secret rm tok
	json_after config get network
	json_after config set network none
	json_after config add allowed_domains example.com
	json_after config rm allowed_domains example.com
	json_after config unset network
	json_after config set limits.cpus -1	# a negative number: a value
	json_after provision image rm nosuch
	json_after provision image verify nosuch
	json_after file read f.txt
	json_after file list .
	json_after file search a
	json_after file edit f.txt --old a --new b
	json_after bridge task done 1
	json_after plugin show nosuch
	json_after plugin rm nosuch
	json_after plugin install nosuch
	json_after plugin run nosuch tool
	json_after install nosuch-pkg --manager bogus
	json_after exec poll "$job"
	json_after exec wait "$job" -t 1
	json_after exec kill "$job"
	# And between operands.
	run -0 --separate-stderr sbx config set --json network none
	[ "$(json_get "$output" .ok)" = true ]
	run -1 --separate-stderr sbx proxy check --agent default example.com \
	    --json --allow-domain x.example
	[ "$(json_get "$output" .result.verdict)" = deny ]
}

@test "after --, an operand that starts with - is an operand" {
	sbx provision -q
	printf 'x\n' >"$WS/-dash.txt"
	run -0 --separate-stderr sbx file read --json -- -dash.txt
	[ "$(json_get "$output" .ok)" = true ]
	run --separate-stderr sbx config get --json -- -bogus
	[ "$(json_get "$output" .reason)" = unknown_key ]
	run --separate-stderr sbx plugin show --json -- -nosuch
	[ "$status" -ne 64 ]
	[ "$(json_get "$output" .reason)" != unexpected_argument ]
	# After --, --json is an operand, not the flag: too many operands.
	run -64 --separate-stderr sbx secret check tok -- --json
	[ -z "$output" ]
}

@test "sbx exec: the options stop at the command; after -- nothing is read" {
	sbx provision -q
	# -la is not sbx exec's: no "unknown option -l", but the hint to
	# put -- before the command.
	run -64 --separate-stderr sbx exec ls -la
	[[ "$stderr" == *"put \`--\` before the command"* ]]
	[[ "$stderr" != *"unknown option"* ]]
	# The command's own --json and -q reach it untouched.
	run -0 --separate-stderr sbx exec --json -- sh -c 'echo "$*"' sh --json -q
	[ "$(json_get "$output" .result.stdout)" = "--json -q" ]
	run -0 --separate-stderr env POSIXLY_CORRECT=1 "$SBX" exec -- echo -q --json
	[ "$output" = "-q --json" ]
}
