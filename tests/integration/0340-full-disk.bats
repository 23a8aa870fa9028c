#!/usr/bin/env bats
# A full disk under the state root (issue 30): `sbx exec --background`
# prints a job id only once the job's record is on disk, and otherwise says
# why (the path and the errno) and leaves nothing behind; `image add` names
# the file it could not write and the errno, not libarchive's bare "Write
# failed".  The state root is a small tmpfs this file mounts (root only:
# as another user it skips, saying so), unmounted in teardown whatever
# happened; nothing outside it is written.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	MNT=""
	is_root || skip "needs root to mount a tmpfs as the state root (uid $(id -u))"
	mkdir -p "$SBX_HOME"
	mount -t tmpfs -o size=8m,mode=0755 sbx-full-disk "$SBX_HOME" ||
	    skip "cannot mount a tmpfs here"
	MNT=$SBX_HOME
}

teardown() {
	if [ -n "${MNT:-}" ] && mountpoint -q "$MNT"; then
		# A job a failed test left running holds files open there.
		"$SBX" exec ps --json 2>/dev/null | grep -o '"job":"[0-9a-f]*"' |
		    cut -d'"' -f4 | while read -r j; do
			"$SBX" exec kill --force "$j" >/dev/null 2>&1
		done
		umount "$MNT" || umount -l "$MNT"
	fi
	sbx_teardown
}

# fill: take every free block of the state root's file system.
fill() {
	dd if=/dev/zero of="$SBX_HOME/fill" bs=64k 2>/dev/null || true
	dd if=/dev/zero of="$SBX_HOME/fill2" bs=4k 2>/dev/null || true
	[ "$(stat -f -c %a "$SBX_HOME")" -eq 0 ]
}

@test "exec --background on a full disk: an error naming the record, no job id, nothing left" {
	local jobs="$SBX_HOME/agents/default/jobs"
	# A first run makes what every run shares (caches, the agent).
	run --separate-stderr sbx exec -- true
	[ "$status" -eq 0 ] || { echo "$stderr"; return 1; }
	fill
	# Text mode: no id on stdout, the reason on stderr.
	run --separate-stderr sbx exec --background -- sh -c 'echo hi'
	echo "status $status, stdout '$output', stderr '$stderr'"
	[ "$status" -ne 0 ]
	[ -z "$output" ]
	[[ "$stderr" == *"$jobs/"*".json"* ]]
	[[ "$stderr" == *"No space left on device"* ]]
	# Nothing of the job is left: no record, no log, no temp file.
	[ -z "$(ls -A "$jobs" 2>/dev/null)" ]
	# The envelope says so too.
	run --separate-stderr sbx exec --json --background -- sh -c 'echo hi'
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .reason)" = job_record_failed ]
	# No job id anywhere: there is no job.
	[ "$(json_get "$output" .job)" = null ]
	[[ "$(json_get "$output" .message)" == *"No space left on device"* ]]
	[ -z "$(ls -A "$jobs" 2>/dev/null)" ]
	# Space back: no phantom job, and the next job is recorded.
	rm -f "$SBX_HOME/fill" "$SBX_HOME/fill2"
	run --separate-stderr sbx exec ps --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" '.result.jobs | length')" -eq 0 ]
	run --separate-stderr sbx exec --json --background -- sh -c 'echo back'
	[ "$status" -eq 0 ] || { echo "$output $stderr"; return 1; }
	id=$(json_get "$output" .result.job)
	[ -f "$jobs/$id.json" ]
	run --separate-stderr sbx exec wait "$id" --json
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.log_tail)" = back ]
}

@test "image add on a full disk names the file and the errno; nothing is kept" {
	local fx="$TEST_ROOT/fx"
	mkdir -p "$fx/rootfs/etc" "$fx/rootfs/data"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$fx/rootfs/etc/passwd"
	# More than the 8 MiB of the tmpfs, and not sparse.
	head -c $((12 << 20)) /dev/urandom >"$fx/rootfs/data/big.bin"
	tar -C "$fx/rootfs" -cf "$fx/img.tar" .
	run --separate-stderr sbx provision image add "$fx/img.tar" \
	    --sha256 "$(sha256sum "$fx/img.tar" | cut -d' ' -f1)"
	echo "status $status, stdout '$output', stderr '$stderr'"
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"images/.tmp-"*"/rootfs/data/big.bin"* ]]
	[[ "$stderr" == *"No space left on device"* ]]
	[[ "$stderr" != *"Write failed"* ]]
	# The half-written template is gone.
	[ -z "$(ls -A "$SBX_HOME/images" 2>/dev/null | grep -v '^names.json$')" ]
	# And in an envelope: write_failed, with the same message.
	run --separate-stderr sbx provision image add "$fx/img.tar" \
	    --sha256 "$(sha256sum "$fx/img.tar" | cut -d' ' -f1)" --json
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .reason)" = write_failed ]
	[[ "$(json_get "$output" .message)" == *"data/big.bin: No space left on device"* ]]
}
