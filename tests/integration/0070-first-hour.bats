#!/usr/bin/env bats
# Issue 11 item 15, the smaller things a new user hits: sbx inside an sbx
# sandbox says so; `sbx exec ps` prunes finished jobs older than
# jobs.keep_days; a second `sbx provision --own-rootfs` says "already present"
# without zero counters.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

@test "sbx inside an sbx sandbox: rejected as nested_sandbox, before bwrap" {
	# The static front-end (exec built in) copied into the agent's home,
	# the one host path the sandbox sees.
	run -0 sbx exec -- true
	cp "$SBX" "$WS/sbx"
	chmod 0755 "$WS/sbx"
	is_root && chown --reference="$WS" "$WS/sbx"
	run --separate-stderr sbx exec -- ./sbx exec -- true
	[ "$status" -eq 125 ]
	[[ "$stderr" == *"sbx is running inside an sbx sandbox; nested sandboxes are not supported"* ]]
	[[ "$stderr" != *bwrap* ]]
	run --separate-stderr sbx exec -- ./sbx exec --json -- true
	[ "$status" -eq 77 ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = nested_sandbox ]
	# On the host, the same binary runs sandboxes as ever.
	run -0 --separate-stderr "$WS/sbx" exec -- echo ok
	[ "$output" = ok ]
}

# A finished job's record, ended DAYS ago, and its log.
fake_job() {
	local id=$1 days=$2 d="$SBX_HOME/agents/default/jobs"
	local t
	t=$(date -u -d "@$(( $(date +%s) - days * 86400 ))" +%Y-%m-%dT%H:%M:%SZ)
	mkdir -p "$d"
	printf '{"job":"%s","agent":"default","command":["true"],"cwd":"/","state":"exited","exit_code":0,"started_at":"%s","ended_at":"%s"}\n' \
	    "$id" "$t" "$t" >"$d/$id.json"
	echo log >"$d/$id.log"
}

@test "exec ps prunes finished jobs older than jobs.keep_days (default 7)" {
	run -0 sbx exec -- true
	old=0123456789abcdef
	new=fedcba9876543210
	fake_job "$old" 8
	fake_job "$new" 6
	d="$SBX_HOME/agents/default/jobs"
	run -0 sbx exec ps --json
	[ "$(json_get "$output" .result.pruned)" = 1 ]
	[ "$(json_get "$output" '[.result.jobs[].job] | join(",")')" = "$new" ]
	[ ! -e "$d/$old.json" ]
	[ ! -e "$d/$old.log" ]
	[ -e "$d/$new.json" ]
	[ -e "$d/$new.log" ]
	# A shorter keep_days in config/sandbox.json prunes the other too.
	mkdir -p "$SBX_HOME/config"
	echo '{"jobs":{"keep_days":5}}' >"$SBX_HOME/config/sandbox.json"
	run -0 sbx exec ps
	[[ "$output" != *"$new"* ]]
	[ ! -e "$d/$new.json" ]
	[ ! -e "$d/$new.log" ]
	# 0 keeps them for ever; a bad value is refused.
	echo '{"jobs":{"keep_days":0}}' >"$SBX_HOME/config/sandbox.json"
	fake_job "$old" 4000
	run -0 sbx exec ps --json
	[ "$(json_get "$output" '.result.jobs | length')" = 1 ]
	echo '{"jobs":{"keep_days":"x"}}' >"$SBX_HOME/config/sandbox.json"
	run -78 --separate-stderr sbx exec ps --json
	[ "$(json_get "$output" .reason)" = config_invalid ]
	[ -e "$d/$old.json" ]
}

@test "a second provision --own-rootfs says already present, without counters" {
	[ -x /bin/busybox ] || skip "busybox is not installed"
	r="$TEST_ROOT/rootfs"
	mkdir -p "$r/bin" "$r/etc"
	cp /bin/busybox "$r/bin/busybox"
	ln -s busybox "$r/bin/sh"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$r/etc/passwd"
	tar -C "$r" -cf "$TEST_ROOT/img.tar" .
	sha=$(sha256sum "$TEST_ROOT/img.tar" | cut -d' ' -f1)
	run -0 sbx provision image add "$TEST_ROOT/img.tar" --sha256 "$sha" \
	    --name bb -q
	run -0 --separate-stderr sbx provision --agent e --image bb --own-rootfs
	[[ "$output" == *"env envs/e/rootfs: created ("* ]]
	run -0 --separate-stderr sbx provision --agent e --image bb --own-rootfs
	[[ "$output" == *"env envs/e/rootfs: already present"* ]]
	[[ "$output" != *"0 files"* ]]
	[[ "$output" != *"0 bytes"* ]]
}
