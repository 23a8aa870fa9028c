#!/usr/bin/env bats
# sbx exec: the basic contract (streams, exit status, envelope).
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

@test "transparent mode streams output and exits with the command's status" {
	run sbx exec -- sh -c 'echo out; echo err >&2; exit 3'
	[ "$status" -eq 3 ]
	[[ "$output" == *out* ]]
	[[ "$output" == *err* ]]
}

@test "--json prints one envelope with sorted keys" {
	run sbx exec --json -- sh -c 'echo hi; echo oops >&2; exit 4'
	[ "$status" -eq 4 ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 1 ]
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .tool)" = exec ]
	[ "$(json_get "$output" .result.exit_code)" = 4 ]
	[ "$(json_get "$output" .result.stdout)" = hi ]
	[ "$(json_get "$output" .result.stderr)" = oops ]
	[ "$(json_get "$output" .result.network)" = none ]
	[ "$(json_get "$output" .result.cwd)" = /workspace/agents/default ]
	# byte-stable: keys sorted
	[ "$output" = "$(printf '%s' "$output" | python3 -c 'import json,sys; print(json.dumps(json.loads(sys.stdin.read()), sort_keys=True, separators=(",", ":"), ensure_ascii=False))')" ]
}

@test "HOME is the agent's home, created 0700" {
	run sbx exec -- sh -c 'echo "$HOME"; pwd'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = /workspace/agents/default ]
	[ "${lines[1]}" = /workspace/agents/default ]
	[ "$(stat -c %a "$WS")" = 700 ]
}

@test "SBX_JSON=1 switches to envelopes" {
	SBX_JSON=1 run sbx exec -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .ok)" = true ]
}

@test "command not found: 127 and kind not_found" {
	run -127 sbx exec --json -- no-such-command-xyz
	[ "$status" -eq 127 ]
	[ "$(json_get "$output" .kind)" = not_found ]
	run -127 sbx exec -- no-such-command-xyz
	[ "$status" -eq 127 ]
	[[ "$output" == *"command not found"* ]]
}

@test "not executable: 126" {
	run sbx exec --json -- /etc/os-release
	[ "$status" -eq 126 ]
	[ "$(json_get "$output" .kind)" = execution_error ]
}

@test "killed by a signal: 128+n and the signal in the envelope" {
	run sbx exec --json -- sh -c 'kill -USR2 $$'
	[ "$status" -eq 140 ]
	[ "$(json_get "$output" .result.signal)" = 12 ]
}

@test "-c runs under bash with pipefail" {
	run sbx exec --json -c 'false | true'
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .result.shell)" = bash ]
}

@test "argv that looks like options is the command's, not sbx's or bwrap's" {
	run --separate-stderr sbx exec -- echo --bind / / --help
	[ "$status" -eq 0 ]
	[ "$output" = "--bind / / --help" ]
}
