#!/usr/bin/env bats
# Hard disk limits (issue 32): an agent's own file system (an ext4 image,
# loop-mounted by sbx), --hard-limits and its refusals, the migration of a
# home into the image and back, sbx exec gc after a run killed with -9,
# and the detection of project quotas (refused here: the kernel has none
# for ext4/XFS; enforcement by quota is skipped, with the reason).
#
# Everything a test mounts or attaches lies under its own state root:
# teardown unmounts whatever is mounted there (the loop devices go with
# their last mount: sbx attaches them with autoclear) and checks that no
# loop device still names an image of it, whatever the test did.
# As uid 65534 only the refusals run; the root-only tests skip, saying so.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
}

# Everything mounted under the test's root, deepest first.
mounts_under() {
	findmnt -rn -o TARGET | grep -F "$TEST_ROOT/" | sort -r
}

teardown() {
	local m i
	if is_root && [ -n "${TEST_ROOT:-}" ]; then
		# A run a test left in the background holds the image.
		[ -n "${BGPID:-}" ] && kill -9 "$BGPID" 2>/dev/null
		[ -n "${BGPID:-}" ] && wait "$BGPID" 2>/dev/null
		for i in 1 2 3; do
			mounts_under | while read -r m; do
				umount "$m" 2>/dev/null || umount -l "$m"
			done
			[ -z "$(mounts_under)" ] && break
			sleep 0.2
		done
		# Autoclear: a loop device goes with its last mount, once the
		# sandbox's mount namespace is gone too.
		for i in $(seq 50); do
			losetup -a | grep -qF "$TEST_ROOT/" || break
			sleep 0.1
		done
		if losetup -a | grep -F "$TEST_ROOT/"; then
			losetup -a | grep -F "$TEST_ROOT/" | cut -d: -f1 |
			    xargs -r -n1 losetup -d
			echo "# loop device left behind" >&3
		fi
	fi
	sbx_teardown
}

need_loop() {
	is_root || skip "needs root to mount a disk image (uid $(id -u))"
	[ -w /dev/loop-control ] || skip "no /dev/loop-control here"
	command -v mkfs.ext4 >/dev/null || skip "no mkfs.ext4 (e2fsprogs)"
}

# A clean state afterwards: nothing mounted under the root.
nothing_mounted() {
	local m
	m=$(mounts_under)
	[ -z "$m" ] || { echo "still mounted: $m"; return 1; }
}

@test "a run that fills its image: ENOSPC, disk_limit_reached, nothing deleted, the next run works" {
	need_loop
	sbx provision -q
	echo keep >"$WS/keep.txt"
	run --separate-stderr sbx provision --json --disk-image 16m
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(json_get "$output" .result.disk.mechanism)" = image ]
	[ "$(json_get "$output" .result.disk.size_mib)" -eq 16 ]
	# The home moved onto the image: the host's path is its mount.
	findmnt -n "$WS" | grep -q loop
	[ "$(cat "$WS/keep.txt")" = keep ]
	run --separate-stderr sbx exec --json --hard-limits -- sh -c \
	    'dd if=/dev/zero of=big bs=64k 2>&1; echo "dd=$?"'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[[ "$(json_get "$output" .result.stdout)" == *"No space left on device"* ]]
	[[ "$(json_get "$output" .result.stdout)" == *"dd=1"* ]]
	[ "$(json_get "$output" .result.disk_limit_reached)" = true ]
	[ "$(json_get "$output" .result.limit_events.disk_limit_reached)" = true ]
	[ "$(json_get "$output" .result.limits.enforced.disk)" = image ]
	[ "$(json_get "$output" .result.limits.disk_image_mib)" -eq 16 ]
	[[ "$(json_get "$output" '.warnings | join(" ")')" == *"disk limit was reached"* ]]
	# Nothing of the user's was removed, the big file included.
	[ "$(cat "$WS/keep.txt")" = keep ]
	[ -f "$WS/big" ]
	# /output shares the limit: full too.
	run --separate-stderr sbx exec -- sh -c \
	    'dd if=/dev/zero of=/output/more bs=64k count=16'
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"No space left on device"* ]]
	# After cleanup the next run works and says nothing of a limit.
	rm -f "$WS/big"
	run --separate-stderr sbx exec --json --hard-limits -- sh -c \
	    'echo fine >/output/o; cat keep.txt'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(json_get "$output" .result.stdout)" = keep ]
	[ "$(json_get "$output" .result.disk_limit_reached)" = null ]
	[ "$(cat "$SBX_HOME/output/default/o")" = fine ]
}

@test "--disk larger than the image is hard; smaller is refused with --hard-limits, soft with a warning without" {
	need_loop
	sbx provision -q --disk-image 16m
	run --separate-stderr sbx exec --json --disk 32 --hard-limits -- true
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(json_get "$output" .result.limits.enforced.disk)" = image ]
	run --separate-stderr sbx exec --json --disk 8 --hard-limits -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = disk_image_larger ]
	[[ "$(json_get "$output" .hint)" == *"--disk-resize 8M"* ]]
	run --separate-stderr sbx exec --disk 8 -- true
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"disk limit is soft"* ]]
	[[ "$stderr" == *"16 MiB, more than the 8 MiB"* ]]
}

@test "two agents with different limits at once" {
	need_loop
	sbx provision -q --agent a --disk-image 16m
	sbx provision -q --agent b --disk-image 40m
	fill='dd if=/dev/zero of=big bs=64k 2>/dev/null; sync; du -k big | cut -f1; sleep 1'
	sbx exec --agent a -- sh -c "$fill" >"$TEST_ROOT/a.out" &
	pa=$!
	sbx exec --agent b -- sh -c "$fill" >"$TEST_ROOT/b.out" &
	pb=$!
	wait "$pa"
	wait "$pb" || true
	ka=$(cat "$TEST_ROOT/a.out")
	kb=$(cat "$TEST_ROOT/b.out")
	echo "a wrote $ka KiB, b $kb KiB"
	[ "$ka" -gt 10000 ] && [ "$ka" -le 16384 ]
	[ "$kb" -gt 30000 ] && [ "$kb" -le 40960 ]
	# Each agent's home is its own file system.
	[ "$(stat -c %d "$SBX_HOME/workspace/agents/a")" != \
	    "$(stat -c %d "$SBX_HOME/workspace/agents/b")" ]
}

@test "a symlink planted for the image or over an unmounted home is refused, never followed" {
	need_loop
	sbx provision -q --agent a
	# The image's path a symlink to a file of someone else's: never
	# formatted, never mounted.
	echo precious >"$TEST_ROOT/other"
	ln -s "$TEST_ROOT/other" "$SBX_HOME/agents/a/disk.img"
	run --separate-stderr sbx provision --json --agent a --disk-image 16m
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_image_unsafe ]
	[ "$(cat "$TEST_ROOT/other")" = precious ]
	rm "$SBX_HOME/agents/a/disk.img"
	sbx provision -q --agent a --disk-image 16m
	# gc unmounts the idle image; a symlink then planted at the home's
	# path is refused, and nothing is mounted over its target.
	sbx exec gc -q
	nothing_mounted
	mkdir "$TEST_ROOT/elsewhere"
	rmdir "$SBX_HOME/workspace/agents/a"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/workspace/agents/a"
	run --separate-stderr sbx exec --json --agent a -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	! findmnt -n "$TEST_ROOT/elsewhere"
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
}

@test "a hard link into the image cannot be planted; a symlink in the home leads nowhere outside" {
	need_loop
	sbx provision -q --disk-image 16m
	echo host >"$TEST_ROOT/hostfile"
	# Another file system: a hard link from the host cannot exist.
	run ln "$TEST_ROOT/hostfile" "$WS/hl"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Invalid cross-device link"* ]]
	# A symlink to a host path: inside, it names the sandbox's view.
	ln -s "$TEST_ROOT/hostfile" "$WS/sl"
	run --separate-stderr sbx exec -- sh -c 'echo sandbox >sl'
	[ "$(cat "$TEST_ROOT/hostfile")" = host ]
}

@test "kill -9 of a run holding the image, then sbx exec gc: nothing left mounted" {
	need_loop
	sbx provision -q --disk-image 16m
	sbx exec gc -q
	nothing_mounted
	"$SBX" exec -- sh -c 'echo up >started; exec sleep 60' &
	BGPID=$!
	for i in $(seq 100); do
		[ -f "$WS/started" ] && break
		sleep 0.1
	done
	[ -f "$WS/started" ]
	findmnt -n "$SBX_HOME/run/disk-default" | grep -q loop
	# While a run holds it, gc leaves it alone.
	run --separate-stderr sbx exec gc --json
	[ "$(json_get "$output" .result.busy_disks)" -eq 1 ]
	findmnt -n "$SBX_HOME/run/disk-default"
	kill -9 "$BGPID"
	wait "$BGPID" || true
	BGPID=
	run --separate-stderr sbx exec gc --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.unmounted_disks)" -eq 1 ]
	nothing_mounted
	for i in $(seq 50); do
		losetup -a | grep -qF "$TEST_ROOT/" || break
		sleep 0.1
	done
	! losetup -a | grep -F "$TEST_ROOT/"
	# The home is the image's again at the next run.
	run --separate-stderr sbx exec -- cat started
	[ "$output" = up ]
}

@test "--disk-image off moves the home back, resumable; an unfinished migration refuses runs" {
	need_loop
	sbx provision -q
	mkdir -p "$WS/d"
	echo one >"$WS/d/f"
	ln -s d/f "$WS/link"
	sbx provision -q --disk-image 16m
	# An interrupted migration (the marker is what one leaves): runs
	# refuse, naming the command that finishes it.
	echo in >"$SBX_HOME/agents/default/disk.migrating"
	run --separate-stderr sbx exec --json -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_migration_unfinished ]
	[[ "$(json_get "$output" .hint)" == *"--disk-image"* ]]
	sbx provision -q --disk-image 16m
	[ ! -e "$SBX_HOME/agents/default/disk.migrating" ]
	sbx exec -- true
	run --separate-stderr sbx provision --json --disk-image off
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(json_get "$output" .result.disk.mechanism)" = none ]
	nothing_mounted
	[ ! -e "$SBX_HOME/agents/default/disk.img" ]
	[ "$(cat "$WS/d/f")" = one ]
	[ "$(readlink "$WS/link")" = d/f ]
	[ -f "$WS/SOUL.md" ]
	# Again: nothing to do.
	run --separate-stderr sbx provision --json --disk-image off
	[ "$(json_get "$output" .result.disk.changed)" = false ]
}

@test "--disk-resize grows and shrinks; a shrink below what is used fails and keeps the files" {
	need_loop
	sbx provision -q --disk-image 16m
	sbx provision -q --disk-resize 48m
	run --separate-stderr sbx exec -- sh -c 'df -k . | tail -1'
	echo "$output"
	kib=$(echo "$output" | awk '{print $2}')
	[ "$kib" -gt 40000 ]
	sbx exec -- sh -c 'dd if=/dev/zero of=big bs=1M count=30 2>/dev/null'
	run --separate-stderr sbx provision --json --disk-resize 16m
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_tool_failed ]
	[ "$(stat -c %s "$WS/big")" -eq $((30 << 20)) ]
	rm "$WS/big"
	sbx provision -q --disk-resize 16m
	[ "$(stat -c %s "$SBX_HOME/agents/default/disk.img")" -eq $((16 << 20)) ]
}

@test "an image still mounted in another namespace: never resized, never mounted twice" {
	need_loop
	command -v unshare >/dev/null || skip "no unshare (util-linux)"
	sbx provision -q --disk-image 16m
	sbx exec -- sh -c 'echo kept >f'
	img=$SBX_HOME/agents/default/disk.img
	# A process that copies the mount table privately while the image
	# is mounted: sbx's unmount does not reach its copy, so the file
	# system lives on in the kernel.
	unshare -m --propagation private sleep 120 &
	BGPID=$!
	for i in $(seq 50); do
		grep -q "$SBX_HOME/run/disk-default" /proc/$BGPID/mountinfo \
		    2>/dev/null && break
		sleep 0.1
	done
	run --separate-stderr sbx provision --json --disk-resize 48m
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_in_use ]
	[[ "$(json_get "$output" .message)" == *"pid $BGPID, sleep"* ]]
	[[ "$(json_get "$output" .hint)" == *"end it"* ]]
	[ "$(stat -c %s "$img")" -eq $((16 << 20)) ]
	# Unmounted on the host and mounted again: the same instance (one
	# loop device over the file), never a second one beside it.
	sbx exec gc -q
	run --separate-stderr sbx exec -- cat f
	[ "$output" = kept ]
	[ "$(losetup -j "$img" | wc -l)" -eq 1 ]
	kill "$BGPID"
	wait "$BGPID" 2>/dev/null || true
	BGPID=
	sbx provision -q --disk-resize 48m
	sbx exec gc -q
	for i in $(seq 50); do
		[ -z "$(losetup -j "$img")" ] && break
		sleep 0.1
	done
	run e2fsck -fn "$img"
	[ "$status" -eq 0 ] || { echo "$output"; return 1; }
	run --separate-stderr sbx exec -- cat f
	[ "$output" = kept ]
}

@test "the sandbox cannot change a file's flags or project id (seccomp)" {
	need_loop
	sbx provision -q --disk-image 16m
	command -v chattr >/dev/null || skip "no chattr"
	# +A (no atime) is the owner's to set on ext4: only the filter
	# stands in the way.
	run --separate-stderr sbx exec -- sh -c 'touch f; chattr +A f'
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"Operation not permitted"* ]]
	run --separate-stderr sbx exec --seccomp off -- sh -c 'chattr +A f && lsattr f'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
}

@test "no loop device: --disk-image and a run on an image are refused with the reason" {
	need_loop
	run --separate-stderr env SBX_TEST_LOOP_CONTROL=/nonexistent \
	    "$SBX" provision --json --disk-image 16m
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = unavailable ]
	[[ "$(json_get "$output" .message)" == *"no loop device"* ]]
	[ ! -e "$SBX_HOME/agents/default/disk.img" ]
	sbx provision -q --disk-image 16m
	sbx exec gc -q
	run --separate-stderr env SBX_TEST_LOOP_CONTROL=/nonexistent \
	    "$SBX" exec --json -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_limit_unavailable ]
	[[ "$(json_get "$output" .message)" == *"no loop device"* ]]
	nothing_mounted
}

@test "--hard-limits without an image or a project quota: unavailable, with the reason and the setup" {
	sbx provision -q
	run --separate-stderr sbx exec --json --disk 16 --hard-limits -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = unavailable ]
	[ "$(json_get "$output" .reason)" = disk_limit_unavailable ]
	[ "$(json_get "$output" .field)" = disk ]
	[[ "$(json_get "$output" .message)" == *"project quotas:"* ]]
	[[ "$(json_get "$output" .hint)" == *"prjquota"* ]]
	[[ "$(json_get "$output" .hint)" == *"--disk-image"* ]]
	# require_hard_limits in the settings does the same.
	echo '{"require_hard_limits": true}' >"$SBX_HOME/config/sandbox.json"
	run --separate-stderr sbx exec --json --disk 16 -- true
	[ "$(json_get "$output" .reason)" = disk_limit_unavailable ]
	rm "$SBX_HOME/config/sandbox.json"
	# Without: the soft limit, with a warning.
	run --separate-stderr sbx exec --json --disk 16 -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.limits.enforced.disk)" = soft ]
	[[ "$(json_get "$output" '.warnings | join(" ")')" == *"disk limit is soft"* ]]
}

@test "a plain user: --disk-image is refused (root only)" {
	is_root && skip "runs as a plain user (uid 65534 pass)"
	sbx provision -q
	run --separate-stderr sbx provision --json --disk-image 16m
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = unavailable ]
	[[ "$(json_get "$output" .message)" == *"needs root"* ]]
	[ ! -e "$SBX_HOME/agents/default/disk.img" ]
}

# A field of preflight's disk_limits capability's project_quota.
pq() {
	json_get "$1" '.result.capabilities[] | select(.id == "disk_limits") | .project_quota.'"$2"
}

@test "project quotas: detected and refused here with the reason; enforcement skipped" {
	run --separate-stderr "$SBX" preflight --json
	echo "$output" | jq -c '.result.capabilities[] | select(.id == "disk_limits")' >&3 || true
	[ "$(pq "$output" available)" = false ] ||
	    skip "this kernel has project quotas: enforcement is tested where it runs (not here)"
	[ -n "$(pq "$output" reason)" ]
	# A kernel without quota support is named as such.
	run --separate-stderr env SBX_TEST_PQUOTA_ERRNO=38 "$SBX" preflight --json
	[[ "$(pq "$output" reason)" == *"CONFIG_QUOTA"* ]]
	[ "$(pq "$output" code)" = kernel_no_quota ]
	echo "# project quota enforcement: skipped, the kernel cannot (CONFIG_QUOTA/QFMT_V2 off for ext4 and XFS prjquota)" >&3
}

@test "files written under an unmounted image's home are never hidden: the run is refused" {
	need_loop
	sbx provision -q --disk-image 16m
	sbx exec gc -q
	nothing_mounted
	echo stray >"$WS/stray"
	run --separate-stderr sbx exec --json -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_home_not_empty ]
	[[ "$(json_get "$output" .hint)" == *"--disk-image"* ]]
	[ "$(cat "$WS/stray")" = stray ]
	# The migration takes them onto the image, into a directory of
	# their own: nothing of the image's is overwritten.
	sbx provision -q --disk-image 16m
	run --separate-stderr sbx exec -- sh -c 'cat .pre-disk-*/stray; cat SOUL.md | wc -c'
	[ "${lines[0]}" = stray ]
	[ "${lines[1]}" -gt 0 ]
	nothing_else=$(ls "$WS/.pre-disk-"*)
	[ "$nothing_else" = stray ]
}

@test "--disk-tmp: /tmp and /dev/shm count in the image, are the run's own, and go with it" {
	need_loop
	sbx provision -q --disk-image 16m
	run --separate-stderr sbx exec --json --disk-tmp --hard-limits -- sh -c \
	    'df /tmp /dev/shm | grep -c loop; dd if=/dev/zero of=/dev/shm/big bs=64k 2>&1 | grep -c "No space"; ls -ld /tmp | cut -c1-10'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	[ "$(json_get "$output" .result.stdout)" = "$(printf '2\n1\ndrwxrwxrwt')" ]
	[ "$(json_get "$output" .result.disk_limit_reached)" = true ]
	# Gone with the run: the space is back, nothing of the home went.
	[ -z "$(ls -A "$SBX_HOME/run/disk-default/tmp")$(ls -A "$SBX_HOME/run/disk-default/shm")" ]
	[ -f "$WS/SOUL.md" ]
	run --separate-stderr sbx exec --json --disk-tmp -- sh -c 'ls -A /tmp | wc -l'
	[ "$(json_get "$output" .result.stdout)" = 0 ]
	[ "$(json_get "$output" .result.disk_limit_reached)" = null ]
	# A run killed with -9 leaves its directories: gc takes them.
	"$SBX" exec --disk-tmp -- sh -c 'echo x >/tmp/left; exec sleep 60' &
	BGPID=$!
	for i in $(seq 100); do
		[ -n "$(ls -A "$SBX_HOME/run/disk-default/tmp")" ] && break
		sleep 0.1
	done
	sleep 0.3
	kill -9 "$BGPID"
	wait "$BGPID" || true
	BGPID=
	[ -n "$(ls -A "$SBX_HOME/run/disk-default/tmp")" ]
	sbx exec gc -q
	nothing_mounted
	sbx exec -- true
	[ -z "$(ls -A "$SBX_HOME/run/disk-default/tmp")" ]
}

@test "--disk-tmp without an image: refused, never a silent tmpfs" {
	sbx provision -q
	run --separate-stderr sbx exec --json --disk-tmp -- true
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .kind)" = unavailable ]
	[ "$(json_get "$output" .field)" = disk-tmp ]
}

@test "unprovision and remove never delete an image with a home on it" {
	need_loop
	sbx provision -q --disk-image 16m
	echo mine >"$WS/mine"
	run --separate-stderr sbx provision unprovision --json --agent default
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_image_present ]
	[[ "$(json_get "$output" .hint)" == *"--disk-image off"* ]]
	run --separate-stderr sbx provision remove --yes --json
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = disk_image_present ]
	[ -f "$SBX_HOME/agents/default/disk.img" ]
	[ "$(cat "$WS/mine")" = mine ]
	sbx provision -q --disk-image off
	sbx provision -q unprovision --agent default
	[ "$(cat "$WS/mine")" = mine ]
}
