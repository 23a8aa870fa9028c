#!/usr/bin/env bats
# Issue 27 §6: an agent's own root file system copy is the agent's to
# change (a package's maintainer script runs there as uid 0 of the
# namespace), and bwrap resolves its mount destinations before the
# sandbox's root is in place.  A symlink on the way to any destination in
# a directory bound from the copy (not only /proc, /dev, /tmp and /run)
# would be followed to a host path, where bwrap creates directories and
# mounts: every such destination is checked, and the run refused.
# (A destination below a link bwrap recreates, /usr or /lib of the copy, is
# refused as well: t-fsutil.)
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	command -v busybox >/dev/null || skip "busybox is not installed"
	sbx_setup
	FX="$TEST_ROOT/fx"
	mkdir -p "$FX/rootfs/bin" "$FX/rootfs/etc" "$FX/rootfs/var/tmp"
	cp "$(command -v busybox)" "$FX/rootfs/bin/busybox"
	for a in sh ls cat echo; do ln -s busybox "$FX/rootfs/bin/$a"; done
	echo 'root:x:0:0:root:/root:/bin/sh' >"$FX/rootfs/etc/passwd"
	tar -C "$FX/rootfs" -cf "$FX/bb.tar" .
	run -0 sbx provision image add "$FX/bb.tar" \
	    --sha256 "$(sha256sum "$FX/bb.tar" | cut -d' ' -f1)" --name bb -q
	run -0 sbx provision --agent e --image bb --own-rootfs -q
	R="$SBX_HOME/envs/e/rootfs"
	# A host directory the sandbox's uid could write, where nothing may
	# appear.
	VICTIM="$TEST_ROOT/victim"
	mkdir -p "$VICTIM"
	chmod 0777 "$VICTIM"
	# A workdir whose path inside falls in the copy's /var.
	WD=$(mktemp -d /var/tmp/sbx-dests.XXXXXX)
	chmod 0777 "$WD"
}

teardown() {
	[ -n "${WD:-}" ] && rm -rf "$WD"
	sbx_teardown
}

@test "RD-01: a destination in the copy's /var through a planted absolute link is refused; nothing appears on the host" {
	# What a maintainer script could leave: /var/tmp an absolute link
	# (bwrap's old root is at /oldroot while it mounts).
	rm -rf "$R/var/tmp"
	ln -s "/oldroot$VICTIM" "$R/var/tmp"
	run sbx exec --json --agent e --workdir "$WD" -- /bin/echo ran
	echo "$output"
	ls -lAR "$VICTIM"
	[ -z "$(ls -A "$VICTIM")" ]
	status_is_kind
	[ "$(json_get "$output" .reason)" = rootfs_unsafe ]
	[[ "$(json_get "$output" .message)" == *"$WD"* ]]
	# A relative link that climbs out is the same.
	rm -f "$R/var/tmp"
	ln -s "../../oldroot$VICTIM" "$R/var/tmp"
	run sbx exec --json --agent e --workdir "$WD" -- /bin/echo ran
	[ "$(json_get "$output" .reason)" = rootfs_unsafe ]
	[ -z "$(ls -A "$VICTIM")" ]
	# A plain directory again: the run works.
	rm -f "$R/var/tmp"
	mkdir "$R/var/tmp"
	run sbx exec --json --agent e --workdir "$WD" -- /bin/echo ran
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = ran ]
}
