#!/usr/bin/env bats
# One exit policy (issue 12, item 3): every program finishes by flushing
# and closing stdout; output that cannot be written (>/dev/full) is said on
# stderr and exits 74, never 0.  sbx exec's transparent mode says a lost
# output of the command as a warning, and 74 when the command exited 0.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

# tofull ARGS...: sbx ARGS with its stdout on /dev/full (inside run, so
# that the redirection is sbx's own, not bats' capture).
tofull() { "$SBX" "$@" >/dev/full; }

# full ARGS...: sbx ARGS with stdout on /dev/full exits 74 and says so.
full() {
	run -74 --separate-stderr tofull "$@"
	echo "$stderr"
	[[ "$stderr" == *"cannot write to standard output"* ]]
}

@test "sbx exec --json with stdout on /dev/full: exit 74" {
	full exec --json -- true
}

@test "sbx provision status --json with stdout on /dev/full: exit 74" {
	full provision status --json
}

@test "sbx proxy check --json with stdout on /dev/full: exit 74" {
	full proxy check --json example.com:443
}

@test "sbx config show with stdout on /dev/full: exit 74" {
	full config show
}

@test "job subcommands with stdout on /dev/full: exit 74" {
	full exec ps --json
}

@test "the same commands on a working stdout exit as before" {
	run -0 sbx exec --json -- true
	run -0 sbx config show
	run -1 sbx provision status --json
}

@test "transparent sbx exec: a command's output lost to /dev/full is a warning and 74" {
	run -74 --separate-stderr tofull exec -- echo hi
	[[ "$stderr" == *"cannot write the command's output"* ]]
	# A command that failed keeps its own status.
	run -3 --separate-stderr tofull exec -- sh -c 'echo hi; exit 3'
}

@test "a failure's status is the one table: config_invalid is 78 in every program" {
	mkdir -p "$SBX_HOME/config"
	echo '{"jobs": {"max_log_bytes": "1M"}}' >"$SBX_HOME/config/sandbox.json"
	run -78 sbx exec --json --background -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
}
