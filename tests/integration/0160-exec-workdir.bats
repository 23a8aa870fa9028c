#!/usr/bin/env bats
# sbx exec --workdir: what may be bound read-write (hostile cases WD-01 to
# WD-04, issue 10: a symlink an earlier sandbox planted, hidden directories
# of the home, other state roots, a mount that is not what was checked).
#
# Method: every refusal also checks that nothing on the host changed.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	TOK="sbx-wd-$$-$RANDOM$RANDOM"
	RUN_UID=$(getent passwd sbx | cut -d: -f3)
	RUN_UID=${RUN_UID:-65534}
	W="$TEST_ROOT/w"
	mkdir -p "$W"
}

teardown() {
	sbx_teardown
}

# refused FIELD REASON ARGS...: `sbx exec --json ARGS` exits with the
# status of its kind, with one failure envelope naming FIELD, reason
# matching REASON (a regex).
refused() {
	local reason=$1
	shift
	run sbx exec --json "$@"
	status_is_kind
	echo "args: $* => $output"
	printf '%s\n' "$output" | jq -e -s --arg r "$reason" '
	    length == 1 and (.[0] | .ok == false and .field == "workdir" and
	    .retryable == false and (.kind == "invalid_args" or
	    .kind == "rejected") and (.reason | test("^(" + $r + ")$")))' \
	    >/dev/null
}

# A directory the sandbox may write to: as root, sbx runs the sandbox as
# the `sbx` user or nobody, so give it what a user would give its own uid.
writable() {
	mkdir -p "$@"
	if is_root; then chown -R "$RUN_UID" "$@"; fi
}

# A fingerprint of a tree: names, types, sizes and contents.
tree_sum() {
	(cd "$1" && find . -printf '%p %y %s %l\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort) | sha256sum
}

@test "WD-01: a symlink planted by an earlier run does not lead --workdir to ~/.ssh" {
	proj="$HOME/proj"
	writable "$proj" "$HOME/.ssh"
	echo "ssh-ed25519 AAAAC3 user@host" >"$HOME/.ssh/authorized_keys"
	if is_root; then chown "$RUN_UID" "$HOME/.ssh/authorized_keys"; fi
	before=$(tree_sum "$HOME/.ssh")
	# Step 1 of a pipeline: the sandbox plants a link in its workdir.
	run sbx exec --json --workdir "$proj" -- ln -s ../.ssh build
	[ "$status" -eq 0 ]
	[ -L "$proj/build" ]
	[ "$(readlink "$proj/build")" = ../.ssh ]
	# Step 2: the next step binds proj/build, which now leads to ~/.ssh.
	refused symlink --workdir "$proj/build" -- sh -c \
	    "echo 'ssh-ed25519 PWNED $TOK' >> authorized_keys"
	[ "$(json_get "$output" .kind)" = invalid_args ]
	[[ "$(json_get "$output" .message)" == *'`build`'* ]]
	[ "$(tree_sum "$HOME/.ssh")" = "$before" ]
	! grep -q PWNED "$HOME/.ssh/authorized_keys"
	# Following it on purpose still ends at a refused place.
	refused home_dotdir --workdir-follow-symlinks --workdir "$proj/build" \
	    -- sh -c "echo 'ssh-ed25519 PWNED $TOK' >> authorized_keys"
	[ "$(tree_sum "$HOME/.ssh")" = "$before" ]
}

@test "WD-01: a symlink in a middle component or as the last one is refused" {
	writable "$W/real/sub"
	ln -s real "$W/lnk"
	refused symlink --workdir "$W/lnk/sub" -- touch "$TOK"
	[[ "$(json_get "$output" .message)" == *'`lnk`'* ]]
	refused symlink --workdir "$W/lnk" -- touch "$TOK"
	ln -s sub "$W/real/last"
	refused symlink --workdir "$W/real/last" -- touch "$TOK"
	[[ "$(json_get "$output" .message)" == *'`last`'* ]]
	# A dangling link, a link to /: refused as links, not followed.
	ln -s /nonexistent-"$TOK" "$W/dangling"
	refused symlink --workdir "$W/dangling" -- true
	ln -s / "$W/slash"
	refused symlink --workdir "$W/slash" -- true
	[ -z "$(find "$W" -name "$TOK")" ]
	# The real path works.
	run sbx exec --json --workdir "$W/real/sub" -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = "$W/real/sub" ]
	[ "$(json_get "$output" .result.workdir_resolved)" = null ]
}

@test "WD-01: a relative --workdir is taken from the physical current directory" {
	writable "$W/real/sub"
	ln -s real "$W/lnk"
	cd "$W"
	run sbx exec --json --workdir real/sub -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.cwd)" = "$W/real/sub" ]
	[ "$(json_get "$output" .result.stdout)" = "$W/real/sub" ]
	run sbx exec --json --workdir ./real//sub/ -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.cwd)" = "$W/real/sub" ]
	refused symlink --workdir lnk/sub -- true
	# The caller's own way in (a logical $PWD through a link) is not
	# the argument's: getcwd() has no link in it.
	cd "$W/lnk"
	run sbx exec --json --workdir sub -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.cwd)" = "$W/real/sub" ]
}

@test "WD-01: --workdir-follow-symlinks follows, prints and reports where it led" {
	writable "$W/real/sub"
	ln -s real "$W/lnk"
	run --separate-stderr sbx exec --json --workdir-follow-symlinks \
	    --workdir "$W/lnk/sub" -- pwd
	echo "$output / $stderr"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.workdir_resolved)" = "$W/real/sub" ]
	[ "$(json_get "$output" .result.cwd)" = "$W/real/sub" ]
	[ "$(json_get "$output" .result.stdout)" = "$W/real/sub" ]
	[[ "$stderr" == *"sbx: --workdir $W/lnk/sub resolves to $W/real/sub"* ]]
	# Text mode too, and a background job's record.
	run --separate-stderr sbx exec --workdir-follow-symlinks \
	    --workdir "$W/lnk" -- pwd
	[ "$status" -eq 0 ]
	[ "$output" = "$W/real" ]
	[[ "$stderr" == *"resolves to $W/real"* ]]
	# Still refused where it leads to a refused place.
	ln -s /etc "$W/etclink"
	refused system_directory --workdir-follow-symlinks \
	    --workdir "$W/etclink" -- true
	ln -s ../../home "$W/real/homelink"
	refused home_directory --workdir-follow-symlinks \
	    --workdir "$W/real/homelink" -- true
}

@test "WD-02: hidden directories of the home are refused, projects are not" {
	writable "$HOME/.ssh" "$HOME/.config/x" "$HOME/.local/bin" \
	    "$HOME/.gnupg" "$HOME/proj"
	before=$(tree_sum "$HOME")
	for d in .ssh .config/x .local/bin .local .gnupg; do
		refused home_dotdir --workdir "$HOME/$d" -- touch "$TOK"
	done
	refused home_directory --workdir "$HOME" -- touch "$TOK"
	[ "$(tree_sum "$HOME")" = "$before" ]
	run sbx exec --json --workdir "$HOME/proj" -- touch "$TOK"
	[ "$status" -eq 0 ]
	[ -f "$HOME/proj/$TOK" ]
	# A dot-directory deeper in a project is the project's own.
	writable "$HOME/proj/.git"
	run sbx exec --json --workdir "$HOME/proj/.git" -- true
	[ "$status" -eq 0 ]
}

@test "WD-03: a directory inside or containing another state root is refused" {
	other="$W/x/other"
	mkdir -p "$W/x"
	run sbx provision --home "$other"
	[ "$status" -eq 0 ]
	mkdir -p "$other/cache"
	echo original >"$other/cache/seccomp-test.bpf"
	before=$(tree_sum "$other")
	# The attack: overwrite the other root's cached seccomp programs.
	for d in "$W" "$W/x" "$other" "$other/cache" \
	    "$other/workspace/agents/default"; do
		refused state_root --workdir "$d" -- sh -c \
		    'for f in $(find . -name "seccomp-*.bpf"); do : > "$f"; done'
	done
	[ "$(tree_sum "$other")" = "$before" ]
	# Provision marked it; a root made before the marker is recognised
	# by its shape.
	[ -f "$other/.sbx-state-root" ]
	rm "$other/.sbx-state-root"
	refused state_root --workdir "$W" -- true
	refused state_root --workdir "$other/cache" -- true
	[ "$(cat "$other/cache/seccomp-test.bpf")" = original ]
	# A project beside it is fine.
	writable "$W/x/proj"
	run sbx exec --json --workdir "$W/x/proj" -- true
	[ "$status" -eq 0 ]
}

@test "WD-03: state roots three levels down are found; too wide a tree is refused" {
	# Three levels down: found.
	mkdir -p "$W/a/b"
	sbx provision --home "$W/a/b/c" >/dev/null
	refused state_root --workdir "$W" -- true
	# An old-shape root, unmarked, three levels down: found by its shape.
	mkdir -p "$TEST_ROOT/v/a/b/c/config" "$TEST_ROOT/v/a/b/c/run/tokens"
	refused state_root --workdir "$TEST_ROOT/v" -- true
	# More directories than the look may open: refused, not guessed.
	writable "$W/big"
	(cd "$W/big" && mkdir $(seq -f 'd%g' 1 4200))
	refused state_root_unchecked --workdir "$W/big" -- true
}

@test "WD-04: sbx-init refuses to start the command when the workdir mount is not what was checked" {
	command -v bwrap >/dev/null || skip "no bwrap"
	init="$SBX_EXEC_PATH/sbx-init"
	d="$W/proj"
	mkdir -p "$d"
	devino=$(stat -c '%d:%i' "$d")
	# As sbx binds it: the device and inode match, the command starts.
	# (fd 4 is sbx's control pipe: held open, by a sleep that keeps
	# nothing of bats open, while the command runs.)
	run bwrap --unshare-user --unshare-pid --as-pid-1 --ro-bind / / \
	    --bind "$d" "$d" -- "$init" -W "$devino" "$d" -- \
	    touch "$d/ran-$TOK" 3>"$TEST_ROOT/status" \
	    4< <(exec 3>&- 2>&-; sleep 3) 5</dev/null
	echo "$output"
	[ "$status" -eq 0 ]
	grep -qx ready "$TEST_ROOT/status"
	grep -qx running "$TEST_ROOT/status"
	[ -f "$d/ran-$TOK" ]
	# Another directory mounted there (what a swap between the check and
	# the mount would give): setup error, exit 125, nothing runs.
	mkdir -p "$W/elsewhere"
	run -125 bwrap --unshare-user --unshare-pid --as-pid-1 --ro-bind / / \
	    --bind "$W/elsewhere" "$d" -- "$init" -W "$devino" "$d" -- \
	    touch "$d/pwn-$TOK" 3>"$TEST_ROOT/status" \
	    4< <(exec 3>&- 2>&-; sleep 3) 5</dev/null
	echo "$output"
	[[ "$output" == *"not the directory sbx checked"* ]]
	! grep -q ready "$TEST_ROOT/status"
	[ ! -e "$W/elsewhere/pwn-$TOK" ] && [ ! -e "$d/pwn-$TOK" ]
	# And sbx exec passes what it checked: the run shows the same inode.
	writable "$W/p2"
	devino=$(stat -c '%d:%i' "$W/p2")
	run --separate-stderr sbx exec -v --workdir "$W/p2" -- \
	    stat -c '%d:%i' "$W/p2"
	[ "$status" -eq 0 ]
	# (sbx-init's guard arguments, issue 13, may follow -W.)
	[[ "$stderr" == *" -W $devino $W/p2 "*" -- stat "* ]]
	[ "$output" = "$devino" ]
}
