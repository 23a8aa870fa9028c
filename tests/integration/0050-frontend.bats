#!/usr/bin/env bats
# sbx, the front-end: dispatch from the libexec directory, never $PATH.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

@test "--list-commands lists the installed commands, not the internal init" {
	run sbx --list-commands
	[ "$status" -eq 0 ]
	[[ "$output" == *exec* ]]
	[[ "$output" == *provision* ]]
	[[ "$output" != *init* ]]
	# Nor the in-sandbox client (issue 28 item 9), which still runs.
	[[ "$output" != *host* ]]
	run -0 sbx --complete commands
	[[ "$output" != *host* ]]
	[[ "$output" == *exec* ]]
	run -0 sbx host --help
}

@test "unknown command: 127 with a hint" {
	run -127 sbx no-such-thing
	[[ "$output" == *"not an sbx command"* ]]
	[[ "$output" == *"--list-commands"* ]]
}

@test "a known command whose program is missing: named as missing, not 'did you mean' itself" {
	SBX_EXEC_PATH="$TEST_ROOT/empty" run -127 sbx provision
	[[ "$output" == *"sbx-provision is missing from $TEST_ROOT/empty"* ]]
	[[ "$output" != *"did you mean"* ]]
}

@test "invalid command names are refused, not looked up" {
	for n in ../exec EXEC 'ex ec' 'exec;id' init; do
		run -127 sbx "$n"
	done
	run -64 sbx -x
}

@test "\$PATH is never searched: a planted sbx-evil is not run" {
	mkdir -p "$TEST_ROOT/bin"
	printf '#!/bin/sh\ntouch %s/pwned\n' "$TEST_ROOT" > "$TEST_ROOT/bin/sbx-evil"
	chmod +x "$TEST_ROOT/bin/sbx-evil"
	PATH="$TEST_ROOT/bin:$PATH" run -127 sbx evil
	[ ! -e "$TEST_ROOT/pwned" ]
}

@test "--version, --help, help CMD" {
	run sbx --version
	[ "$status" -eq 0 ]
	[[ "$output" == "sbx "* ]]
	run sbx --help
	[ "$status" -eq 0 ]
	[[ "$output" == *usage:* ]]
	run sbx help exec
	[ "$status" -eq 0 ]
	[[ "$output" == *"sbx exec"* ]]
	run -127 sbx help nope
}

@test "no arguments or an unknown option: usage, 64" {
	run -64 sbx
	[[ "$output" == *usage:* ]]
	run -64 sbx --bogus
}

@test "sbx status is sbx provision status" {
	run sbx status --json
	[ "$(json_get "$output" .tool)" = "$(sbx provision status --json | jq -r .tool)" ]
}

@test "arguments reach the command unchanged" {
	run sbx exec -q -- printf '%s|' a 'b c' '--x' ''
	[ "$status" -eq 0 ]
	[ "$output" = 'a|b c|--x||' ]
}

@test "an unknown command near a real one: did you mean, still 127" {
	run -127 sbx exce
	[[ "$output" == *"did you mean 'exec'?"* ]]
	run -127 sbx provison
	[[ "$output" == *"did you mean 'provision'?"* ]]
	run -127 sbx zzzzzzz
	[[ "$output" != *"did you mean"* ]]
}

@test "one command table: --help lists every command, help works for aliases" {
	run sbx --help
	[ "$status" -eq 0 ]
	for c in exec provision status preflight proxy; do
		[[ "$output" == *"  $c "* ]]
	done
	run sbx help status
	[ "$status" -eq 0 ]
	[[ "$output" == *"sbx provision status"* ]]
	[[ "$output" == *"usage: sbx provision"* ]]
	run sbx help proxy
	[ "$status" -eq 0 ]
	[[ "$output" == *"sbx proxy"* ]]
}

@test "an option typo: the error, did you mean, where the help is (issue 28 item 9)" {
	run -64 --separate-stderr sbx exec --agnet x -- true
	[ "${#stderr_lines[@]}" -eq 3 ]
	[ "${stderr_lines[0]}" = "sbx-exec: unknown option \`--agnet\`" ]
	[ "${stderr_lines[1]}" = "sbx-exec: hint: did you mean \`--agent\`?" ]
	[ "${stderr_lines[2]}" = "sbx-exec: see \`sbx exec --help\`" ]
	run -64 --separate-stderr sbx secret list --jsno
	[[ "$stderr" == *"did you mean \`--json\`?"* ]]
	[[ "$stderr" == *"see \`sbx secret --help\`"* ]]
	[[ "$stderr" != *usage:* ]]
	# Under --json the suggestion is the envelope's hint.
	run -64 --separate-stderr sbx proxy status --json --hoem /x
	[ "$(json_get "$output" .reason)" = unknown_option ]
	[ "$(json_get "$output" .hint)" = "did you mean \`--home\`?" ]
	# The front-end's own options too.
	run -64 --separate-stderr sbx --verison
	[[ "$stderr" == *"did you mean \`--version\`?"* ]]
	[[ "$stderr" == *"see \`sbx --help\`"* ]]
	# Nothing near: no guess.
	run -64 --separate-stderr sbx config show --zzzzzzzz
	[[ "$stderr" != *"did you mean"* ]]
	[[ "$stderr" == *"see \`sbx config --help\`"* ]]
}

@test "sbx help with a mistyped command suggests, as sbx does" {
	run -127 --separate-stderr sbx help exce
	[[ "$stderr" == *"did you mean 'exec'?"* ]]
	run -127 --separate-stderr sbx help zzzzzzz
	[[ "$stderr" != *"did you mean"* ]]
}

@test "sbx help CMD at a terminal shows the page, not its path first" {
	command -v script >/dev/null || skip "no script(1)"
	[ -x /usr/bin/man ] || skip "no man(1)"
	page="$BATS_TEST_DIRNAME/../../man/sbx-exec.1"
	[ -f "$page" ] || skip "no man/ here (the unprivileged stage)"
	mkdir -p "$TEST_ROOT/man/man1"
	cp "$page" "$TEST_ROOT/man/man1/"
	chmod -R a+rX "$TEST_ROOT/man"
	MANPATH="$TEST_ROOT/man" MANPAGER=cat PAGER=cat run -0 \
	    script -qec "$SBX help exec" /dev/null
	[[ "$output" != *"$TEST_ROOT/man"* ]]
	[[ "$output" == *"sbx exec"* ]]
}
