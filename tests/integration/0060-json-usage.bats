#!/usr/bin/env bats
# Usage errors under --json (or SBX_JSON=1): every program answers with one
# invalid_args envelope on stdout and exit 64, wherever --json stands; the
# synopsis still goes to stderr.  The command's argv after `--` never
# counts.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# usage_envelope FIELD REASON: $output (stdout only) is exactly one line of
# JSON, an invalid_args failure about FIELD.
usage_envelope() {
	[ "${#lines[@]}" -eq 1 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[ "$(json_get "$output" .field)" = "$1" ]
	[ "$(json_get "$output" .reason)" = "$2" ]
}

# each PROG [ARGS...]: the four shapes of issue 11 item 10 for one program.
each() {
	run -64 --separate-stderr "$@" --json --bogus
	usage_envelope --bogus unknown_option
	# A mistyped option: where the help is, not the whole synopsis
	# (issue 28 item 9).
	[[ "$stderr" == *"see \`sbx "*" --help\`"* ]]
	[[ "$stderr" != *usage:* ]]
	run -64 --separate-stderr "$@" --bogus --json
	usage_envelope --bogus unknown_option
	SBX_JSON=1 run -64 --separate-stderr "$@" --bogus
	usage_envelope --bogus unknown_option
	run -64 --separate-stderr "$@" --json --home
	usage_envelope --home missing_argument
	[[ "$stderr" == *usage:* ]]
}

@test "sbx exec: usage errors under --json are envelopes" {
	each sbx exec
	run -64 --separate-stderr sbx exec --bogus --json -- true
	usage_envelope --bogus unknown_option
	run -64 --separate-stderr sbx exec -qx --json -- true
	usage_envelope -x unknown_option
	run -64 --separate-stderr sbx exec --json --json=1 -- true
	usage_envelope --json unexpected_argument
	run -64 --separate-stderr sbx exec --json true
	usage_envelope command unexpected_argument
}

@test "sbx exec: subcommand usage errors under --json are envelopes" {
	run -64 --separate-stderr sbx exec ps --bogus --json
	usage_envelope --bogus unknown_option
	run -64 --separate-stderr sbx exec wait --json --timeout
	usage_envelope --timeout missing_argument
}

@test "sbx exec: --json after -- or as an option's argument does not count" {
	run -64 --separate-stderr sbx exec --bogus -- --json
	[ -z "$output" ]
	[[ "$stderr" == *"unknown option \`--bogus\`"* ]]
	run -64 --separate-stderr sbx exec --env --json --bogus -- true
	[ -z "$output" ]
	[[ "$stderr" == *"see \`sbx exec --help\`"* ]]
}

@test "sbx-exec, sbx-provision, sbx-preflight, sbx-proxy directly" {
	for p in exec provision preflight proxy; do
		each "$SBX_EXEC_PATH/sbx-$p"
	done
}

@test "sbx provision, preflight, proxy through the front-end" {
	each sbx provision
	each sbx preflight
	each sbx proxy
	each sbx proxy check
	run -64 --separate-stderr sbx preflight --json stray
	usage_envelope arguments unexpected_argument
	run -64 --separate-stderr sbx proxy --json nosuch
	usage_envelope subcommand unknown_subcommand
	run -64 --separate-stderr sbx provision image add --json
	usage_envelope arguments usage
}

@test "sbx config, file, secret, mcp: a refused option names itself too" {
	for p in config file secret mcp; do
		each sbx $p
	done
}

@test "the front-end's own usage errors under --json or SBX_JSON=1" {
	run -64 --separate-stderr sbx --json --bogus
	usage_envelope --bogus unknown_option
	run -64 --separate-stderr sbx --bogus --json
	usage_envelope --bogus unknown_option
	SBX_JSON=1 run -64 --separate-stderr sbx --bogus
	usage_envelope --bogus unknown_option
	[[ "$stderr" == *"see \`sbx --help\`"* ]]
	SBX_JSON=1 run -64 --separate-stderr sbx
	usage_envelope command missing_argument
	# Without --json: text on stderr, nothing on stdout.
	run -64 --separate-stderr sbx --bogus
	[ -z "$output" ]
	[[ "$stderr" == *"unknown option"* ]]
}
