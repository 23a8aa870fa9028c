#!/usr/bin/env bats
# sbx provision: creating, repairing and clearing the state root.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

mode() { stat -c %a "$SBX_HOME/$1"; }
owner() { stat -c %u "$SBX_HOME/$1"; }

# As root, sandboxes run as another uid (the sbx user, or nobody), which
# must be able to search its way to the homes: a few directories are 0711
# instead of 0700, and the home and output belong to that uid.
if is_root; then
	REACH=711
	RUN_UID=$(getent passwd sbx | cut -d: -f3)
	RUN_UID=${RUN_UID:-65534}
else
	REACH=700
	RUN_UID=$(id -u)
fi

# has JSON PATH-IN-ARRAY FILTER: does the array at FILTER contain PATH?
has() { printf '%s' "$1" | jq -e --arg p "$2" "$3 | index(\$p) != null" >/dev/null; }

@test "a fresh root: everything created, with safe modes" {
	run -0 sbx provision --json
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .tool)" = provision ]
	[ "$(json_get "$output" .result.agent)" = default ]
	[ "$(json_get "$output" .result.root.path)" = "$SBX_HOME" ]
	[ "$(json_get "$output" .result.root.source)" = environment_override ]
	[ "$(json_get "$output" .result.token_file)" = "$SBX_HOME/run/tokens/default" ]
	for p in . run run/tokens config/agents workspace/agents/default \
	    workspace/shared output/default images envs agents/default plugins \
	    cache workspace/agents/default/SOUL.md config/agents/default.json \
	    run/tokens/default .sbx-state-root; do
		has "$output" "$p" .result.created
	done
	[ "$(json_get "$output" '.result.repaired | length')" = 0 ]
	[ "$(json_get "$output" '.result.present | length')" = 0 ]
	# byte-stable: keys sorted, one line
	[ "$output" = "$(printf '%s' "$output" | jq -cS .)" ]
	# the token's value never appears in the envelope
	tok=$(cat "$SBX_HOME/run/tokens/default")
	[[ "$output" != *"$tok"* ]]

	[ "$(mode .)" = "$REACH" ]
	[ "$(mode run)" = 711 ]
	[ "$(mode run/tokens)" = 700 ]
	[ "$(mode run/tokens/default)" = 600 ]
	[ "$(mode .sbx-state-root)" = 600 ]
	# cache/ too: the prepared /etc is bound by path (etccache.c).
	for d in workspace workspace/agents output images envs cache; do
		[ "$(mode "$d")" = "$REACH" ]
	done
	for d in config config/agents workspace/agents/default workspace/shared \
	    output/default agents agents/default plugins; do
		[ "$(mode "$d")" = 700 ]
	done
	[ "$(owner workspace/agents/default)" = "$RUN_UID" ]
	[ "$(owner workspace/agents/default/SOUL.md)" = "$RUN_UID" ]
	[ "$(owner output/default)" = "$RUN_UID" ]
	[ "$(owner run/tokens/default)" = "$(id -u)" ]
	[ "$(wc -c <"$SBX_HOME/run/tokens/default")" -eq 43 ]
	grep -Eqx '[A-Za-z0-9_-]{43}' "$SBX_HOME/run/tokens/default"
	[ "$(cat "$SBX_HOME/config/agents/default.json")" = \
	    '{"allow_private":false,"allowed_domains":[],"allowed_ports":[80,443],"denied_domains":[],"limits":{},"network":"none"}' ]
	grep -q 'next session' "$SBX_HOME/workspace/agents/default/SOUL.md"
}

@test "text output: one line per created item and a summary" {
	run -0 sbx provision
	[[ "$output" == *"created   run/tokens/default"* ]]
	[[ "$output" == *"agent default provisioned in $SBX_HOME: 21 created, 0 repaired"* ]]
	run -0 sbx provision -q
	[ -z "$output" ]
}

@test "a second run creates nothing and keeps the token" {
	run -0 sbx provision --json
	tok=$(cat "$SBX_HOME/run/tokens/default")
	run -0 sbx provision --json
	[ "$(json_get "$output" '.result.created | length')" = 0 ]
	[ "$(json_get "$output" '.result.repaired | length')" = 0 ]
	[ "$(json_get "$output" '.result.present | length')" = 21 ]
	[ "$(cat "$SBX_HOME/run/tokens/default")" = "$tok" ]
}

@test "SOUL.md edited by the user survives a re-provision" {
	run -0 sbx provision
	echo 'prefers tabs' >"$WS/SOUL.md"
	run -0 sbx provision --json
	has "$output" workspace/agents/default/SOUL.md .result.present
	[ "$(cat "$WS/SOUL.md")" = 'prefers tabs' ]
}

@test "run/ with mode 0777 is repaired to 0711" {
	run -0 sbx provision
	chmod 0777 "$SBX_HOME/run"
	run -0 sbx provision --json
	has "$output" run .result.repaired
	[ "$(mode run)" = 711 ]
	chmod 0644 "$SBX_HOME/run/tokens/default"
	run -0 sbx provision
	[[ "$output" == *"repaired  run/tokens/default"* ]]
	[ "$(mode run/tokens/default)" = 600 ]
}

@test "run/ replaced by a symlink is refused and nothing is written through it" {
	run -0 sbx provision
	mkdir "$TEST_ROOT/elsewhere"
	rm -rf "$SBX_HOME/run"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/run"
	run -77 sbx provision --json
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	[ "$(json_get "$output" '.problems[0].path')" = run ]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
	[ -L "$SBX_HOME/run" ]
	run -77 sbx provision
	[[ "$output" == *"symlink"* ]]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
}

@test "images/ planted as a symlink in a new root is refused before anything is created" {
	mkdir -m 0700 "$SBX_HOME"
	mkdir "$TEST_ROOT/elsewhere"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/images"
	run -77 sbx provision --json
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = symlink_in_path ]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
	[ "$(ls -A "$SBX_HOME")" = images ]
	run -1 sbx provision status --json
	[ "$(json_get "$output" '.result.problems[0].state')" = symlink ]
}

@test "8 concurrent provisions all succeed with one token" {
	local pids=() rc=0 k pid n=0
	for k in 1 2 3 4 5 6 7 8; do
		sbx provision --json --agent multi >"$TEST_ROOT/out.$k" 2>&1 &
		pids+=("$!")
	done
	for pid in "${pids[@]}"; do
		wait "$pid" || rc=1
	done
	[ "$rc" -eq 0 ]
	for k in 1 2 3 4 5 6 7 8; do
		[ "$(jq -r .ok "$TEST_ROOT/out.$k")" = true ]
		if has "$(cat "$TEST_ROOT/out.$k")" run/tokens/multi .result.created; then
			n=$((n + 1))
		fi
	done
	[ "$n" -eq 1 ]
	# no torn file, no leftover temporaries
	[ "$(ls -A "$SBX_HOME/run/tokens")" = multi ]
	grep -Eqx '[A-Za-z0-9_-]{43}' "$SBX_HOME/run/tokens/multi"
	run -0 sbx provision status --agent multi
}

@test "a provision killed at any point leaves a root the next one completes" {
	# (not `i`: bats' own helpers assign it behind `run`)
	local k
	for k in 1 2 3 4 5 6 7 8 9 10 11 12; do
		# SIGKILL after k milliseconds, from timeout(1), which waits for
		# its child: no pid can be recycled under the kill.
		timeout -s KILL "0.00$k" "$SBX" provision -q --agent "k$k" || true
	done
	for k in 1 2 3 4 5 6 7 8 9 10 11 12; do
		run -0 sbx provision -q --agent "k$k"
		run -0 sbx provision status --agent "k$k"
		grep -Eqx '[A-Za-z0-9_-]{43}' "$SBX_HOME/run/tokens/k$k"
	done
	# no temporaries left behind anywhere
	[ -z "$(find "$SBX_HOME" -name '*.tmp')" ]
}

@test "unprovision revokes the token and clears records, keeping the home" {
	run -0 sbx provision
	old=$(cat "$SBX_HOME/run/tokens/default")
	echo 'keep me' >"$WS/SOUL.md"
	echo 'notes' >"$WS/notes.txt"
	echo '{}' >"$SBX_HOME/agents/default/installed-packages.json"
	mkdir -p "$SBX_HOME/agents/default/plugins" "$SBX_HOME/agents/default/jobs"
	echo '{}' >"$SBX_HOME/agents/default/plugins/installed.json"
	echo '{}' >"$SBX_HOME/agents/default/jobs/0123456789abcdef.json"
	run -0 sbx provision unprovision --agent default --json
	[ "$(json_get "$output" .tool)" = provision.unprovision ]
	has "$output" run/tokens/default .result.removed
	has "$output" agents/default/jobs .result.removed
	[ ! -e "$SBX_HOME/run/tokens/default" ]
	[ ! -e "$SBX_HOME/agents/default/installed-packages.json" ]
	[ ! -e "$SBX_HOME/agents/default/plugins/installed.json" ]
	[ ! -e "$SBX_HOME/agents/default/jobs" ]
	[ "$(cat "$WS/SOUL.md")" = 'keep me' ]
	[ "$(cat "$WS/notes.txt")" = notes ]
	run -0 sbx provision list --json
	[ "$(json_get "$output" '.result.agents[0].token')" = false ]
	[ "$(json_get "$output" '.result.agents[0].home')" = true ]
	# provisioning again issues a new token: a restore, not a repair
	run -0 sbx provision --json
	has "$output" run/tokens/default .result.created
	[ "$(json_get "$output" .result.restored)" = true ]
	[ "$(json_get "$output" '.result.repaired | length')" = 0 ]
	new=$(cat "$SBX_HOME/run/tokens/default")
	[ "${#new}" -eq 43 ]
	[ "$new" != "$old" ]
	[ "$(cat "$WS/SOUL.md")" = 'keep me' ]
}

@test "unprovision needs an explicit --agent" {
	run -0 sbx provision
	run -64 sbx provision unprovision
	[ -e "$SBX_HOME/run/tokens/default" ]
}

@test "reset empties envs/ and cache/ and keeps homes, images and settings" {
	run -0 sbx provision
	mkdir -p "$SBX_HOME/envs/default/rootfs/usr" "$SBX_HOME/cache/seccomp" \
	    "$SBX_HOME/images/abc/rootfs"
	chmod 0500 "$SBX_HOME/envs/default/rootfs/usr"
	touch "$SBX_HOME/cache/x.features" "$WS/work.txt"
	mkdir "$TEST_ROOT/elsewhere"
	touch "$TEST_ROOT/elsewhere/precious"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/cache/link"
	run -0 sbx provision reset --json
	[ "$(json_get "$output" .tool)" = provision.reset ]
	has "$output" envs/default .result.removed
	has "$output" cache/link .result.removed
	[ -z "$(ls -A "$SBX_HOME/envs")" ]
	[ -z "$(ls -A "$SBX_HOME/cache")" ]
	[ -e "$TEST_ROOT/elsewhere/precious" ]
	[ -e "$WS/work.txt" ]
	[ -e "$WS/SOUL.md" ]
	[ -d "$SBX_HOME/images/abc/rootfs" ]
	[ -e "$SBX_HOME/config/agents/default.json" ]
	[ -e "$SBX_HOME/run/tokens/default" ]
}

@test "remove without --yes refuses, lists what it would delete, deletes nothing" {
	run -0 sbx provision
	before=$(cd "$SBX_HOME" && find . | sort)
	run -1 sbx provision remove --json
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = confirmation_required ]
	has "$output" run .would_remove
	has "$output" images .would_remove
	run -1 has "$output" workspace .would_remove
	[ "$(cd "$SBX_HOME" && find . | sort)" = "$before" ]
	run -1 sbx provision remove
	[[ "$output" == *"would remove images"* ]]
	[ "$(cd "$SBX_HOME" && find . | sort)" = "$before" ]
}

@test "remove --yes deletes everything but workspace/" {
	run -0 sbx provision
	echo 'mine' >"$WS/SOUL.md"
	mkdir "$TEST_ROOT/elsewhere"
	touch "$TEST_ROOT/elsewhere/precious"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/stray-link"
	run -0 sbx provision remove --yes --json
	[ "$(json_get "$output" .tool)" = provision.remove ]
	has "$output" run .result.removed
	[ "$(ls -A "$SBX_HOME")" = workspace ]
	[ "$(cat "$WS/SOUL.md")" = mine ]
	[ -e "$TEST_ROOT/elsewhere/precious" ]
	run -64 sbx provision remove --yes --agent default
	# and it can be provisioned again
	run -0 sbx provision --json
	has "$output" workspace/agents/default/SOUL.md .result.present
}

@test "bad agent names are invalid_args and create nothing" {
	for a in ../b A -rf "$(printf 'a%.0s' $(seq 33))" ''; do
		run -65 sbx provision --json --agent="$a"
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = agent ]
		[ ! -e "$SBX_HOME" ]
		run -65 sbx provision status --agent="$a"
	done
	SBX_AGENT=Bad run -65 sbx provision --json
	[ ! -e "$SBX_HOME" ]
}

@test "status: exit 0 when all present, 1 when something is missing or wrong" {
	run -1 sbx provision status --json
	[ "$(json_get "$output" .result.exists)" = false ]
	[ "$(json_get "$output" .result.ready)" = false ]
	[ ! -e "$SBX_HOME" ]
	run -0 sbx provision
	run -0 sbx provision status
	[[ "$output" == *"ready"* ]]
	chmod 0755 "$SBX_HOME/images"
	rmdir "$SBX_HOME/cache"
	run -1 sbx provision status --json
	has "$output" images .result.wrong_mode
	has "$output" cache .result.missing
	# status changed nothing
	[ "$(mode images)" = 755 ]
	[ ! -e "$SBX_HOME/cache" ]
	run -1 sbx provision status
	[[ "$output" == *"[missing]"*cache* ]]
	[[ "$output" == *"images (mode 0755, want 0$REACH)"* ]]
}

@test "list: agents from homes and settings, as a table" {
	run -0 sbx provision list --json
	[ "$(json_get "$output" '.result.agents | length')" = 0 ]
	run -0 sbx provision --agent alpha
	run -0 sbx provision --agent beta
	rm "$SBX_HOME/run/tokens/beta"
	run -0 sbx provision list
	[ "${lines[0]}" = "$(printf '%-32s  %-5s  %-4s  %s' AGENT TOKEN HOME CONFIG)" ]
	[[ "${lines[1]}" == alpha*yes*yes*yes ]]
	[[ "${lines[2]}" == beta*no*yes*yes ]]
}

@test "image list on a fresh root is empty" {
	run -0 sbx provision image list --json
	[ "$(json_get "$output" .ok)" = true ]
}

@test "sbx exec still works after provision, in the provisioned home" {
	run -0 sbx provision
	run -0 sbx exec -- sh -c 'echo "$HOME"; head -n 1 "$HOME/SOUL.md"'
	[ "${lines[0]}" = /workspace/agents/default ]
	[ "${lines[1]}" = '# SOUL.md' ]
	[ "$(mode run)" = 711 ]
	run -0 sbx provision --json
	[ "$(json_get "$output" '.result.created | length')" = 0 ]
	[ "$(json_get "$output" '.result.repaired | length')" = 0 ]
}

# Issue 10, item 9: a tree the sandbox builds as deep as it likes must not
# defeat `remove` (it used to stop at 256 levels and leave output/ behind).
@test "remove --yes deletes a 300-level tree the sandbox made under /output" {
	run -0 sbx provision
	run -0 sbx exec -- sh -c 'cd /output && for i in $(seq 300); do
	    mkdir d && cd d || exit 1; done; echo x >f'
	[ -f "$SBX_HOME/output/default/$(printf 'd/%.0s' $(seq 300))f" ]
	mkdir "$TEST_ROOT/elsewhere"
	touch "$TEST_ROOT/elsewhere/precious"
	run -0 sbx provision remove --yes --json
	[ "$(json_get "$output" .ok)" = true ]
	has "$output" output .result.removed
	[ "$(ls -A "$SBX_HOME")" = workspace ]
	[ -e "$TEST_ROOT/elsewhere/precious" ]
}

@test "remove --yes deletes a 5,000-level tree made on the host, symlinks unfollowed" {
	run -0 sbx provision
	mkdir "$TEST_ROOT/elsewhere"
	touch "$TEST_ROOT/elsewhere/precious"
	# chdir level by level: no path longer than PATH_MAX is ever needed.
	"$PY" - "$SBX_HOME/output/default" "$TEST_ROOT/elsewhere" <<'PYEOF'
import os, sys
os.chdir(sys.argv[1])
for i in range(5000):
    os.mkdir("d")
    os.chdir("d")
os.symlink(sys.argv[2], "link")
os.symlink(os.path.join(sys.argv[2], "precious"), "flink")
os.mkdir("locked")
os.chmod("locked", 0)
open("ro", "w").close()
os.chmod("ro", 0o400)
PYEOF
	run -0 sbx provision remove --yes --json
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(ls -A "$SBX_HOME")" = workspace ]
	[ -e "$TEST_ROOT/elsewhere/precious" ]
	[ "$(ls -A "$TEST_ROOT/elsewhere")" = precious ]
}

# Issue 10, item 10: as root, without run_as and without an `sbx` user,
# provision creates the system user sbx rather than run every agent as
# nobody.  Never on this machine: each case runs in a private mount
# namespace with a copy of /etc bound over /etc, so useradd writes the copy
# and nothing is left behind (a real sbx user would change every later
# root test).
in_scratch_etc() {
	cp -a /etc "$TEST_ROOT/etc"
	env -u SBX_NO_CREATE_USER unshare --mount --propagation private \
	    sh -c 'mount --bind "$1" /etc && shift && exec "$@"' sh \
	    "$TEST_ROOT/etc" "$@"
}

scratch_etc_ok() {
	is_root || skip "root mode only"
	grep -q '^sbx:' /etc/passwd && skip "this machine has an sbx user"
	command -v unshare >/dev/null || skip "unshare is not installed"
	[ -x /usr/sbin/useradd ] || skip "useradd is not installed"
	ETC_BEFORE=$(cat /etc/passwd /etc/group /etc/shadow /etc/gshadow \
	    2>/dev/null | md5sum)
}

etc_unchanged() {
	[ "$(cat /etc/passwd /etc/group /etc/shadow /etc/gshadow 2>/dev/null |
	    md5sum)" = "$ETC_BEFORE" ]
	! grep -q '^sbx:' /etc/passwd
}

@test "as root without run_as or an sbx user, provision creates the system user sbx" {
	scratch_etc_ok
	run -0 --separate-stderr in_scratch_etc sh -c '"$1" provision --json &&
	    grep "^sbx:" /etc/passwd && stat -c %u "$SBX_HOME/output/default" &&
	    "$1" provision --json' sh "$SBX"
	etc_unchanged
	[ "$(json_get "${lines[0]}" .result.created_user.name)" = sbx ]
	uid=$(json_get "${lines[0]}" .result.created_user.uid)
	IFS=: read -r name _ puid _ _ home shell <<<"${lines[1]}"
	[ "$name" = sbx ] && [ "$puid" = "$uid" ] && [ "$uid" -gt 0 ]
	[ "$uid" -lt 1000 ]
	[ "$home" = /nonexistent ]
	[ "$shell" = /usr/sbin/nologin ] || [ "$shell" = /bin/false ]
	# the agent's output belongs to it, not to nobody
	[ "${lines[2]}" = "$uid" ]
	[[ "$stderr" == *"created the system user sbx (uid $uid"* ]]
	# the second provision finds it: nothing created
	[ "$(json_get "${lines[3]}" '.result.created_user // "none"')" = none ]
}

@test "as root, --no-create-user or run_as: no user is created" {
	scratch_etc_ok
	run -0 --separate-stderr in_scratch_etc sh -c '"$1" provision --json \
	    --no-create-user && ! grep "^sbx:" /etc/passwd &&
	    stat -c %u "$SBX_HOME/output/default"' sh "$SBX"
	etc_unchanged
	[ "$(json_get "${lines[0]}" '.result.created_user // "none"')" = none ]
	[[ "$(json_get "${lines[0]}" '.warnings[]')" == *"run as nobody"* ]]
	[ "${lines[1]}" = 65534 ]
	rm -rf "$TEST_ROOT/etc"
	mkdir -p "$SBX_HOME/config"
	echo '{"run_as":{"uid":65533,"gid":65533}}' \
	    >"$SBX_HOME/config/sandbox.json"
	run -0 --separate-stderr in_scratch_etc sh -c '"$1" provision --json &&
	    ! grep "^sbx:" /etc/passwd' sh "$SBX"
	etc_unchanged
	[ "$(json_get "$output" '.result.created_user // "none"')" = none ]
	[ "$(json_get "$output" '.warnings // [] | length')" = 0 ]
	[ "$(owner output/default)" = 65533 ]
}

@test "as root, a useradd that fails stops provision (no fall back to nobody)" {
	scratch_etc_ok
	# An empty, read-only /etc in a private namespace: useradd fails.
	run --separate-stderr env -u SBX_NO_CREATE_USER unshare --mount \
	    --propagation private sh -c 'mount -t tmpfs -o ro,mode=755 none \
	    /etc && exec "$1" provision --json' sh "$SBX"
	etc_unchanged
	[ "$status" -ne 0 ]
	[ "$(json_get "$output" .ok)" = false ]
	[ "$(json_get "$output" .reason)" = useradd_failed ]
	[ ! -e "$SBX_HOME/output/default" ]
}

@test "a relative SBX_HOME is refused, nothing is created in the current directory" {
	cd "$TEST_ROOT"
	SBX_HOME=rel run -65 sbx provision
	[[ "$output" == *"SBX_HOME must be an absolute path"* ]]
	SBX_HOME=rel run -65 sbx exec --json -- true
	[ "$(json_get "$output" .reason)" = relative_path ]
	[ "$(json_get "$output" .field)" = home ]
	[ ! -e "$TEST_ROOT/rel" ]
	# --home may be relative: it is a flag of this one command.
	run -0 sbx provision --home rel -q
	[ -d "$TEST_ROOT/rel/workspace" ]
}
