#!/usr/bin/env bats
# The sandbox's PATH (issue 28 item 10): the documented system directories,
# then /run/sbx/bin, so that code inside finds sbx-host by name when its
# agent has bridge.enabled (and finds nothing there when it has not).
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

teardown() {
	"$SBX_EXEC_PATH/sbx-bridge" stop -q 2>/dev/null
	p=$(cat "$SBX_HOME/run/bridge.pid" 2>/dev/null)
	[ -n "$p" ] && kill -9 "$p" 2>/dev/null
	sbx_teardown
}

@test "PATH inside: the system directories, then /run/sbx/bin" {
	sbx provision -q
	run -0 --separate-stderr sbx exec -- sh -c 'printf %s "$PATH"'
	[ "$output" = /usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:/run/sbx/bin ]
	# Without the bridge (and network none) there is no sbx-host to find.
	run -0 --separate-stderr sbx exec -- sh -c \
	    'command -v sbx-host || echo none'
	[ "$output" = none ]
}

@test "with bridge.enabled, sbx-host is found by name" {
	[ -x "$SBX_EXEC_PATH/sbx-host" ] || skip "sbx-host not built"
	sbx provision -q --agent a
	sbx config set --agent a bridge.enabled true -q
	run -0 --separate-stderr sbx exec --agent a -- sh -c \
	    'command -v sbx-host && sbx-host whoami'
	[ "${lines[0]}" = /run/sbx/bin/sbx-host ]
	[[ "$output" == *'"agent":"a"'* ]]
}
