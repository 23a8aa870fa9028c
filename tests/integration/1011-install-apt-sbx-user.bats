#!/usr/bin/env bats
# A test may assert only what it changed (issue 27 §6): on a machine where
# sbx was ever used as root, `sbx provision` made the system user sbx, and
# 1010 must pass there all the same.  Its cases that look at the host run
# here with a getent that reports an sbx user (uid and gid 65534, the ids
# root's sandboxes get without one, so that sbx, which reads /etc/passwd
# itself, and the tests agree on the sandbox's uid).  Nothing of the host
# is changed: the user exists for the tests' getent only.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	command -v getent >/dev/null || skip "getent is not installed"
	getent passwd sbx >/dev/null &&
	    skip "this machine has an sbx user: 1010 itself runs with one"
	SHIM=$TEST_ROOT/shim
	mkdir -p "$SHIM"
	printf '%s\n' '#!/bin/sh' \
	    'if [ "$1" = passwd ] && [ "$2" = sbx ] && [ $# -eq 2 ]; then' \
	    '	echo "sbx:x:65534:65534:sbx, made by an earlier provision:/nonexistent:/usr/sbin/nologin"' \
	    '	exit 0' \
	    'fi' \
	    "exec $(command -v getent) \"\$@\"" >"$SHIM/getent"
	chmod 0755 "$SHIM/getent"
	chmod 0755 "$TEST_ROOT"
}

teardown() { sbx_teardown; }

@test "1010 passes on a machine that already has the system user sbx" {
	PATH=$SHIM:$PATH run getent passwd sbx
	[[ "$output" == sbx:x:65534:* ]]
	PATH=$SHIM:$PATH SBX_TEST_BUILD=$SBX_TEST_BUILD run bats --tap \
	    -f "the package installs into|files of other owners|mount points are symlinks" \
	    "$BATS_TEST_DIRNAME/1010-install-apt.bats"
	echo "$output"
	[ "$status" -eq 0 ] && [ "$(grep -c '^ok .*# skip' <<<"$output")" -eq 3 ] &&
	    skip "1010 skips here: $(grep -m1 '# skip' <<<"$output")"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^ok ' <<<"$output")" -eq 3 ]
	# And the host was left as it was.
	run ! getent passwd sbx
}
