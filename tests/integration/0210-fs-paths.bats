#!/usr/bin/env bats
# Extra read-only paths (--ro, read_paths), hidden paths (deny_paths) and
# several writable roots (--workdir repeated),
# issue 13: what may be shown, what is refused, and that nothing on the
# host changes.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	RUN_UID=$(sandbox_uid)
	W="$TEST_ROOT/w"
	D="$TEST_ROOT/data"
	mkdir -p "$W" "$D/sub"
	echo "dataset" >"$D/sub/file"
	chmod -R a+rX "$D"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
}

teardown() {
	sbx_teardown
}

tree_sum() {
	(cd "$1" && find . -printf '%p %y %s %m %l\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort) | sha256sum
}

agent_cfg() {
	mkdir -p "$SBX_HOME/config/agents"
	printf '%s\n' "$1" >"$SBX_HOME/config/agents/default.json"
}

# refused FIELD REASON ARGS...: one failure envelope naming FIELD and
# REASON, the status of its kind, and nothing ran.
refused() {
	local field=$1 reason=$2
	shift 2
	run sbx exec --json "$@" -- touch "$W/ran"
	echo "args: $* => $output"
	status_is_kind
	[ "$(json_get "$output" .field)" = "$field" ]
	[ "$(json_get "$output" .reason)" = "$reason" ]
	[ ! -e "$W/ran" ]
}

@test "RO-01: --ro PATH shows a host directory read-only at its own path" {
	before=$(tree_sum "$D")
	run sbx exec --ro "$D" -c '
	    cat "'"$D"'/sub/file"
	    (echo x >"'"$D"'/new") 2>/dev/null && echo WROTE
	    (echo x >>"'"$D"'/sub/file") 2>/dev/null && echo APPENDED
	    rm -rf "'"$D"'/sub" 2>/dev/null; true'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == dataset* ]]
	[[ "$output" != *WROTE* ]]
	[[ "$output" != *APPENDED* ]]
	[ "$(tree_sum "$D")" = "$before" ]
	# Without it, the directory is not there at all.
	run sbx exec -- ls "$D"
	[ "$status" -ne 0 ]
	# In a request envelope too.
	run sbx exec --json --request - <<-EOF
	{"command": ["cat", "$D/sub/file"], "ro": ["$D"]}
	EOF
	[ "$(json_get "$output" .result.stdout)" = dataset ]
}

@test "RO-02: --ro refuses relative paths, /, system trees, the state root, the home and its hidden directories" {
	refused ro relative --ro data
	refused ro system_directory --ro /
	refused ro system_directory --ro /usr/share
	refused ro system_directory --ro /etc
	mkdir -p "$SBX_HOME"
	refused ro state_root --ro "$SBX_HOME"
	refused ro state_root --ro "$TEST_ROOT"
	refused ro home_directory --ro "$HOME"
	mkdir -p "$HOME/.ssh"
	refused ro home_dotdir --ro "$HOME/.ssh"
	refused ro not_found --ro "$TEST_ROOT/missing"
	ln -s "$D" "$TEST_ROOT/link"
	refused ro symlink --ro "$TEST_ROOT/link"
	# Named in the agent's configuration, a hidden directory of the home
	# may be read (the caller decided it once, not per run).
	echo key >"$HOME/.ssh/known_hosts"
	chmod -R a+rX "$HOME"
	agent_cfg "{\"read_paths\": [\"$HOME/.ssh\"]}"
	run sbx exec -- cat "$HOME/.ssh/known_hosts"
	[ "$status" -eq 0 ]
	[ "$output" = key ]
	agent_cfg '{"read_paths": ["relative/dir"]}'
	run sbx exec --json -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
	status_is_kind
}

@test "DENY-01: deny_paths hides a directory and a file of the workdir: empty, read-only, host unchanged" {
	mkdir -p "$W/secrets" "$W/config"
	echo "token" >"$W/secrets/api"
	echo "key" >"$W/config/prod.key"
	echo "fine" >"$W/config/app.yml"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	agent_cfg '{"deny_paths": ["secrets", "config/prod.key", "absent"]}'
	before=$(tree_sum "$W")
	run sbx exec --workdir "$W" -c '
	    ls -A secrets; cat config/prod.key; cat config/app.yml
	    (echo x >secrets/new) 2>/dev/null && echo WROTE
	    (echo x >config/prod.key) 2>/dev/null && echo WROTE2
	    echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$output" = "$(printf 'fine\ndone')" ]
	[ "$(tree_sum "$W")" = "$before" ]
}

@test "DENY-02: an absolute deny path inside a read-only path is hidden; elsewhere it is ignored" {
	mkdir -p "$D/private"
	echo "x" >"$D/private/p"
	chmod -R a+rX "$D"
	agent_cfg "{\"deny_paths\": [\"$D/private\", \"/var/lib\"], \"read_paths\": [\"$D\"]}"
	run sbx exec -- ls -A "$D/private"
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	run sbx exec -- cat "$D/sub/file"
	[ "$output" = dataset ]
}

@test "WD2-01: --workdir twice: two writable roots, the first is the cwd, both protected, overlaps refused" {
	W2="$TEST_ROOT/w2"
	mkdir -p "$W2"
	if is_root; then chown -R "$RUN_UID" "$W2"; fi
	run sbx exec --workdir "$W" --workdir "$W2" -c '
	    pwd; echo one >a; echo two >"'"$W2"'/b"
	    (echo x >"'"$W2"'/.envrc") 2>/dev/null && echo WROTE; true'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == "$W"* ]]
	[[ "$output" != *WROTE* ]]
	[ "$(cat "$W/a")" = one ]
	[ "$(cat "$W2/b")" = two ]
	[ ! -e "$W2/.envrc" ]
	# --cwd may name the second; a request envelope says `workdirs`.
	run sbx exec --json --cwd "$W2" --workdir "$W" --workdir "$W2" -- pwd
	[ "$(json_get "$output" .result.stdout)" = "$W2" ]
	run sbx exec --json --request - <<-EOF
	{"command": ["cat", "$W2/b"], "workdirs": ["$W", "$W2"]}
	EOF
	[ "$(json_get "$output" .result.stdout)" = two ]
	# Each is checked as the first: no state root, no overlap.
	mkdir -p "$W/sub"
	run sbx exec --json --workdir "$W" --workdir "$W/sub" -- true
	[ "$(json_get "$output" .reason)" = overlap ]
	run sbx exec --json --workdir "$W" --workdir "$SBX_HOME" -- true
	[ "$(json_get "$output" .field)" = workdir ]
	[ "$(json_get "$output" .reason)" = state_root ]
	run sbx exec --json --workdir "$W" --workdir / -- true
	[ "$(json_get "$output" .reason)" = system_directory ]
}
