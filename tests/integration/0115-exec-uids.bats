#!/usr/bin/env bats
# Per-agent uids (issue 32): identity.per_agent gives each agent a uid and
# gid of its own (as root from sbx's range; as a plain user from its
# subordinate range), migration of existing agents, and the refusals:
# a half-migrated agent, a full range, a range that collides with a user.
# Method: what another agent's uid can do on the host (setpriv as it: the
# case where "something went wrong" and it is out of its namespaces), and
# what the records and the envelopes say.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	export SBX_IDENTITY_REGISTRY="$TEST_ROOT/registry"
	JOBS=()
}

teardown() {
	local j
	for j in "${JOBS[@]}"; do
		"$SBX" exec kill "$j" >/dev/null 2>&1
	done
	sbx_teardown
}

per_agent_on() {
	sbx provision -q --agent "${1:-default}"
	sbx config set --global identity.per_agent true >/dev/null
}

need_root() {
	is_root || skip "per-agent uids from sbx's own range need root (uid $(id -u)): the plain user's case is the subordinate range tests"
}

host_uid_of() {
	json_get "$(sbx provision status --json --agent "$1")" \
	    .result.identity.host_uid
}

@test "per_agent off (the default): the envelope says shared" {
	run sbx exec --json -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.identity)" = shared ]
	run sbx provision status --json
	[ "$(json_get "$output" .result.identity.mode)" = shared ]
	[ ! -e "$SBX_IDENTITY_REGISTRY" ]
}

@test "as root: each agent its own uid, home and output 0700 its own" {
	need_root
	per_agent_on
	run sbx exec --json --agent a -- sh -c 'id -u; : > "$HOME/mine"; : > /output/out'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.identity)" = per_agent ]
	ua=$(json_get "$output" .result.stdout | head -1)
	run sbx exec --json --agent b -- id -u
	[ "$status" -eq 0 ]
	ub=$(json_get "$output" .result.stdout | head -1)
	[ "$ua" -ne "$ub" ]
	[ "$ua" -ge 1879113728 ] && [ "$ub" -ge 1879113728 ]
	[ "$(stat -c %u:%a "$SBX_HOME/workspace/agents/a")" = "$ua:700" ]
	[ "$(stat -c %u:%a "$SBX_HOME/output/a")" = "$ua:700" ]
	[ "$(stat -c %u "$SBX_HOME/workspace/agents/a/mine")" = "$ua" ]
	[ "$(stat -c %u "$SBX_HOME/output/a/out")" = "$ua" ]
	[ "$(host_uid_of a)" = "$ua" ]
	# sbx file acts as the agent's uid.
	echo note | sbx file write --agent a note.txt
	[ "$(stat -c %u "$SBX_HOME/workspace/agents/a/note.txt")" = "$ua" ]
	grep -q "^$ua $SBX_HOME a\$" "$SBX_IDENTITY_REGISTRY"
	run sbx provision status --agent a
	[[ "$output" == *"identity: per_agent, done"* ]]
	run sbx preflight --agent a
	[[ "$output" == *"identity: per_agent (agent a runs as uid $ua)"* ]]
}

@test "as root: B's files cannot be read, linked or signalled as A's uid" {
	need_root
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	per_agent_on
	sbx exec --agent a -- true
	sbx exec --agent b -- sh -c 'echo secret-b > "$HOME/s"; chmod 644 "$HOME/s"'
	ua=$(host_uid_of a)
	ub=$(host_uid_of b)
	S="$SBX_HOME/workspace/agents/b/s"
	# A's uid out of every namespace: the home's 0700 stops it even
	# where the file itself is world-readable.
	run setpriv --reuid="$ua" --regid="$ua" --clear-groups cat "$S"
	[ "$status" -ne 0 ]
	[[ "$output" != *secret-b* ]]
	# A hard link of it (protected_hardlinks, and no search of the home).
	run setpriv --reuid="$ua" --regid="$ua" --clear-groups \
	    ln "$S" "$TEST_ROOT/link"
	[ "$status" -ne 0 ]
	[ ! -e "$TEST_ROOT/link" ]
	# B's running process: not visible in A's sandbox's /proc, and not
	# signalable by A's uid on the host.
	run sbx exec --json --agent b --background -- sleep 30
	[ "$status" -eq 0 ]
	JOBS+=("$(json_get "$output" .result.job)")
	pid=""
	for _ in $(seq 50); do
		pid=$(pgrep -u "$ub" -x sleep | head -1) && [ -n "$pid" ] && break
		sleep 0.1
	done
	[ -n "$pid" ]
	run sbx exec --agent a -- sh -c 'ls /proc | grep -c "^[0-9]"; cat /proc/'"$pid"'/environ'
	[ "$status" -ne 0 ] || [[ "$output" != *HOME=/workspace/agents/b* ]]
	run setpriv --reuid="$ua" --regid="$ua" --clear-groups kill -0 "$pid"
	[ "$status" -ne 0 ]
	run setpriv --reuid="$ua" --regid="$ua" --clear-groups cat "/proc/$pid/environ"
	[ "$status" -ne 0 ]
	[[ "$output" != *workspace/agents/b* ]]
	kill -0 "$pid"
}

@test "as root: workspace/shared through the group of the agents that opted in" {
	need_root
	per_agent_on
	for a in a b c; do sbx provision -q --agent $a; done
	sbx config set --agent a workspace_shared true >/dev/null
	sbx config set --agent b workspace_shared true >/dev/null
	run sbx exec --agent b -- sh -c 'echo open > /workspace/shared/open &&
	    echo priv-b > /workspace/shared/priv && chmod 600 /workspace/shared/priv'
	[ "$status" -eq 0 ]
	S="$SBX_HOME/workspace/shared"
	[ "$(stat -c %a "$S")" = 2770 ]
	g=$(stat -c %g "$S")
	[ "$(stat -c %g "$S/priv")" = "$g" ]
	run sbx exec --agent a -- cat /workspace/shared/open
	[ "$status" -eq 0 ] && [ "$output" = open ]
	# Not shared by B (0600): A cannot read it, nor link it to keep it.
	run sbx exec --agent a -- cat /workspace/shared/priv
	[ "$status" -ne 0 ]
	[[ "$output" != *priv-b* ]]
	run sbx exec --agent a -- ln /workspace/shared/priv /workspace/shared/mine
	[ "$status" -ne 0 ]
	[ ! -e "$S/mine" ]
	# C did not opt in: no /workspace/shared at all, and its uid outside
	# is not in the group.
	run sbx exec --agent c -- ls /workspace/shared
	[ "$status" -ne 0 ]
	uc=$(host_uid_of c)
	run setpriv --reuid="$uc" --regid="$uc" --clear-groups cat "$S/open"
	[ "$status" -ne 0 ]
}

@test "as root: a full range is a clear error and allocates nothing" {
	need_root
	per_agent_on
	sbx config set --global identity.size 3 >/dev/null
	sbx exec --agent a -- true
	sbx exec --agent b -- true
	run sbx exec --json --agent c -- true
	status_is_kind
	[ "$(json_get "$output" .reason)" = identity_range_exhausted ]
	[[ "$(json_get "$output" .hint)" == *"identity.size"* ]]
	[ ! -e "$SBX_HOME/agents/c/identity.json" ]
	[ "$(grep -c " $SBX_HOME " "$SBX_IDENTITY_REGISTRY")" -eq 2 ]
}

@test "as root: a range over a real user is refused, the user named" {
	need_root
	command -v unshare >/dev/null || skip "unshare is not installed"
	per_agent_on
	sbx config set --global identity.base 1879200000 >/dev/null
	cp -a /etc "$TEST_ROOT/etc"
	echo "sbxcollide:x:1879200007:1879200007::/nonexistent:/usr/sbin/nologin" \
	    >> "$TEST_ROOT/etc/passwd"
	run unshare --mount --propagation private sh -c \
	    'mount --bind "$1" /etc && shift && exec "$@"' sh \
	    "$TEST_ROOT/etc" "$SBX" exec --json --agent a -- true
	status_is_kind
	[ "$(json_get "$output" .reason)" = identity_range_collision ]
	[[ "$(json_get "$output" .message)" == *"sbxcollide (id 1879200007) in /etc/passwd"* ]]
	[ ! -e "$SBX_HOME/agents/a/identity.json" ]
	# The host's own /etc was never touched.
	! grep -q sbxcollide /etc/passwd
}

@test "as root: migration interrupted, refused until resumed, idempotent" {
	need_root
	sbx provision -q
	sbx exec -- sh -c 'mkdir -p d/e && touch d/e/f1 d/e/f2 d/e/f3 && ln -s /etc/shadow lnk'
	old=$(stat -c %u "$WS")
	sbx config set --global identity.per_agent true >/dev/null
	run sbx exec --json -- true
	status_is_kind
	[ "$(json_get "$output" .reason)" = identity_migration_pending ]
	[ "$(json_get "$output" .hint)" = "sbx provision --agent default --migrate-identity" ]
	run env SBX_TEST_MIGRATE_LIMIT=3 "$SBX" provision --json --migrate-identity
	status_is_kind
	[ "$(json_get "$output" .reason)" = migration_interrupted ]
	[ "$(stat -c %u "$WS")" = "$old" ]
	run sbx exec --json -- true
	status_is_kind
	[ "$(json_get "$output" .reason)" = identity_migration_pending ]
	[[ "$(json_get "$output" .message)" == *half-migrated* ]]
	run sbx provision status --json
	[ "$status" -eq 1 ]
	[ "$(json_get "$output" .result.identity.state)" = migrating ]
	run sbx provision --json --migrate-identity
	[ "$status" -eq 0 ]
	new=$(json_get "$output" .result.host_uid)
	[ "$new" != "$old" ]
	[ -z "$(find "$WS" "$SBX_HOME/output/default" -user "$old")" ]
	[ "$(stat -c %u /etc/shadow)" = 0 ]
	run sbx provision --json --migrate-identity
	[ "$(json_get "$output" .result.changed)" = 0 ]
	run sbx exec --json -- sh -c 'id -u; ls d/e'
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = "$new
f1
f2
f3" ]
	run sbx provision status
	[ "$status" -eq 0 ]
}

@test "a plain user without a subordinate range: shared, and said why" {
	is_root && skip "as root sbx's own range is used (the root tests)"
	grep -qs "^$(id -un):\|^$(id -u):" /etc/subuid &&
	    skip "this user has a subordinate range"
	per_agent_on
	run sbx exec --json -- true
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.identity)" = shared ]
	[[ "$(json_get "$output" '.warnings[0]')" == *"identity.per_agent is on, but the sandbox runs as the shared uid"* ]]
	run sbx provision status --json
	[ "$(json_get "$output" .result.identity.mode)" = shared ]
	[[ "$(json_get "$output" .result.identity.why_shared)" == *"no subordinate ids"* ]]
	run sbx preflight
	[[ "$output" == *"identity: shared"* ]]
	run sbx provision --json --migrate-identity
	status_is_kind
	[ "$(json_get "$output" .reason)" = per_agent_off ]
}

# A plain user with a range: a uid no one has, its range in a private
# copy of /etc (newuidmap reads /etc/subuid), nothing of the host changed.
@test "a plain user with a subordinate range: each agent its own uid of it" {
	is_root || skip "giving a throwaway uid a subordinate range takes root (a private copy of /etc); this pass runs as uid $(id -u)"
	command -v unshare >/dev/null || skip "unshare is not installed"
	command -v setpriv >/dev/null || skip "setpriv is not installed"
	[ -u /usr/bin/newuidmap ] || skip "newuidmap (package uidmap) is not installed"
	U=61234
	! getent passwd "$U" >/dev/null || skip "uid $U exists on this machine"
	cp -a /etc "$TEST_ROOT/etc"
	# newuidmap wants a name for the caller.
	echo "sbxranged:x:$U:$U::/nonexistent:/usr/sbin/nologin" \
	    >> "$TEST_ROOT/etc/passwd"
	echo "$U:300000000:65536" > "$TEST_ROOT/etc/subuid"
	echo "$U:300000000:65536" > "$TEST_ROOT/etc/subgid"
	chmod 0711 "$TEST_ROOT"
	chown -R "$U:$U" "$TEST_ROOT/home"
	mkdir "$TEST_ROOT/u" && chown "$U:$U" "$TEST_ROOT/u" && chmod 0711 "$TEST_ROOT/u"
	export SBX_HOME="$TEST_ROOT/u/state"
	: > "$SBX_IDENTITY_REGISTRY" && chown "$U" "$SBX_IDENTITY_REGISTRY"
	cat > "$TEST_ROOT/run.sh" <<-'EOF'
	set -e
	S=$1
	$S provision -q --agent a
	$S config set --global identity.per_agent true >/dev/null
	$S provision --migrate-identity --agent a -q
	$S exec --json --agent a -- sh -c 'id -u; echo a-secret > "$HOME/s"; chmod 644 "$HOME/s"'
	$S exec --json --agent b -- sh -c 'id -u; cat /workspace/agents/a/s 2>&1 || true'
	$S provision -q --agent b
	$S provision status --json --agent b
	echo note-of-b | $S file write --agent b note.txt >/dev/null
	$S file read --agent b note.txt
	EOF
	run unshare --mount --propagation private sh -c \
	    'mount --bind "$1" /etc && shift && exec "$@"' sh \
	    "$TEST_ROOT/etc" setpriv --reuid="$U" --regid="$U" --clear-groups \
	    bash "$TEST_ROOT/run.sh" "$SBX"
	echo "$output"
	[ "$status" -eq 0 ]
	a=$(printf '%s\n' "$output" | sed -n 1p)
	b=$(printf '%s\n' "$output" | sed -n 2p)
	[ "$(json_get "$a" .result.identity)" = per_agent ]
	[ "$(json_get "$b" .result.identity)" = per_agent ]
	st=$(printf '%s\n' "$output" | sed -n 3p)
	[ "$(json_get "$st" .result.identity.subordinate)" = true ]
	[ "$(json_get "$st" .result.ready)" = true ]
	ia=$(json_get "$a" .result.stdout | head -1)
	ib=$(json_get "$b" .result.stdout | head -1)
	[ "$ia" -ge 65001 ] && [ "$ib" -ge 65001 ] && [ "$ia" -ne "$ib" ]
	[[ "$(json_get "$b" .result.stdout)" != *a-secret* ]]
	# On the host: the range's ids, not the user's, each home its own.
	ha=$(stat -c %u "$SBX_HOME/workspace/agents/a")
	hb=$(stat -c %u "$SBX_HOME/workspace/agents/b")
	[ "$ha" -eq $((300000000 + ia - 1)) ]
	[ "$hb" -eq $((300000000 + ib - 1)) ]
	[ "$(stat -c %u "$SBX_HOME/workspace/agents/a/s")" = "$ha" ]
	[ "$(stat -c %a "$SBX_HOME/workspace/agents/b")" = 700 ]
	# sbx file acts as the agent's id of the range.
	[ "$(stat -c %u "$SBX_HOME/workspace/agents/b/note.txt")" = "$hb" ]
	[[ "$output" == *note-of-b* ]]
	# B's uid, out of every namespace, cannot read A's file.
	run setpriv --reuid="$hb" --regid="$hb" --clear-groups \
	    cat "$SBX_HOME/workspace/agents/a/s"
	[ "$status" -ne 0 ]
	[ ! -e /etc/subuid ] || ! grep -q "^$U:" /etc/subuid
}
