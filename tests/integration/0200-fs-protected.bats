#!/usr/bin/env bats
# Protected paths inside a writable workdir (issue 13): srt's "mandatory
# deny" cases, ported.  Every protected name is refused whether it exists
# or not, through every way of creating a name (open, mkdir, rename, link,
# symlink), and nothing is ever left in the user's tree: no placeholder,
# also after kill -9 and with two sandboxes on one workdir.
#
# Method: a fingerprint of the workdir before and after each run; a write
# refused inside must leave it unchanged on the host.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	RUN_UID=$(sandbox_uid)
	W="$TEST_ROOT/w"
	mkdir -p "$W"
}

teardown() {
	[ -n "${BGPID:-}" ] && kill -9 "$BGPID" 2>/dev/null
	[ -n "${BGPID2:-}" ] && kill -9 "$BGPID2" 2>/dev/null
	sbx_teardown
}

# A fingerprint of a tree: names, types, sizes, link targets, contents.
tree_sum() {
	(cd "$1" && find . -printf '%p %y %s %l\n' | sort &&
	    find . -type f -exec sha256sum {} + | sort) | sha256sum
}

agent_cfg() {
	mkdir -p "$SBX_HOME/config/agents"
	printf '%s\n' "$1" >"$SBX_HOME/config/agents/default.json"
}

FILES=".git/config .git/info/attributes .gitmodules .gitconfig .envrc
.mcp.json .bashrc .bash_profile .bash_login .profile .zshrc .zprofile
.zshenv .ripgreprc .npmrc .pypirc .netrc"
DIRS=".git/hooks .vscode .idea .claude .cursor .devcontainer .ssh .gnupg"

@test "FS-01: every protected path that does not exist cannot be created, and no placeholder is left" {
	mkdir -p "$W/.git/info"
	before=$(tree_sum "$W")
	# shellcheck disable=SC2086
	run --separate-stderr sbx exec --workdir "$W" -c '
	    for f in '"$(echo $FILES)"'; do
	        (echo evil >"$f") 2>/dev/null && echo "WROTE $f"
	    done
	    for d in '"$(echo $DIRS)"'; do
	        mkdir "$d" 2>/dev/null && echo "MADE $d"
	        mkdir -p "$d/a/b" 2>/dev/null && echo "MADE $d/a/b"
	    done
	    ls -A; ls -A .git .git/info; echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *WROTE* ]]
	[[ "$output" != *MADE* ]]
	[[ "$output" == *done* ]]
	# Inside, the names do not exist either (no placeholder at all).
	[[ "$output" != *envrc* ]]
	[ "$(tree_sum "$W")" = "$before" ]
	[ -z "$(ls -A "$W" | grep -v '^\.git$')" ]
}

@test "FS-02: every protected path that exists is read-only, and cannot be removed or renamed away" {
	mkdir -p "$W/.git/info"
	for f in $FILES; do echo "orig $f" >"$W/$f"; done
	for d in $DIRS; do mkdir -p "$W/$d"; echo "orig" >"$W/$d/x"; done
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	before=$(tree_sum "$W")
	# shellcheck disable=SC2086
	run sbx exec --workdir "$W" -c '
	    for f in '"$(echo $FILES)"'; do
	        (echo evil >>"$f") 2>/dev/null && echo "WROTE $f"
	        rm -f "$f" 2>/dev/null; [ -e "$f" ] || echo "REMOVED $f"
	        mv "$f" moved 2>/dev/null && echo "MOVED $f"
	    done
	    for d in '"$(echo $DIRS)"'; do
	        (echo evil >"$d/x") 2>/dev/null && echo "WROTE $d/x"
	        (echo evil >"$d/new") 2>/dev/null && echo "WROTE $d/new"
	        mv "$d" moved 2>/dev/null && echo "MOVED $d"
	        rm -rf "$d" 2>/dev/null; [ -e "$d" ] || echo "REMOVED $d"
	    done
	    # The directory that holds .git/config cannot be swapped.
	    mv .git .git-old 2>/dev/null && echo "MOVED .git"
	    # (mv falls back to copying what it cannot rename: a copy
	    # of a readable file is no write to the protected one.)
	    rm -f moved; echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *WROTE* ]]
	[[ "$output" != *REMOVED* ]]
	[[ "$output" != *MOVED* ]]
	[[ "$output" == *done* ]]
	[ "$(tree_sum "$W")" = "$before" ]
}

@test "FS-03: other ways to make a protected name: symlink, hard link, rename, a symlink followed by open" {
	mkdir -p "$W/.git"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	before=$(tree_sum "$W")
	run sbx exec --workdir "$W" -c '
	    echo payload >p
	    ln -s p .envrc 2>/dev/null && echo "SYMLINKED"
	    ln p .bashrc 2>/dev/null && echo "LINKED"
	    mv p .profile 2>/dev/null && echo "RENAMED"
	    mkdir d; echo hook >d/pre-commit
	    mv d .git/hooks 2>/dev/null && echo "RENAMED DIR"
	    ln -s .zshrc trap; (echo evil >trap) 2>/dev/null && echo "VIA LINK"
	    ln -s ../.npmrc d2 2>/dev/null; mkdir sub; ln -s ../.npmrc sub/l
	    (echo evil >sub/l) 2>/dev/null && echo "VIA RELATIVE LINK"
	    python3 -c "import os; os.rename(\"p\", \".gitconfig\")" 2>/dev/null && echo "PY RENAMED"
	    python3 -c "import os; os.mkdir(\".vscode\")" 2>/dev/null && echo "PY MKDIR"
	    rm -rf p d d2 sub trap
	    echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *SYMLINKED* ]]
	[[ "$output" != *LINKED* ]]
	[[ "$output" != *RENAMED* ]]
	[[ "$output" != *VIA* ]]
	[[ "$output" != *PY* ]]
	[[ "$output" == *done* ]]
	[ "$(tree_sum "$W")" = "$before" ]
}

@test "FS-04: refused writes are reported: one line per path after the run, violations in --json" {
	mkdir -p "$W/.git/hooks"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	run --separate-stderr sbx exec --workdir "$W" -c \
	    'echo x >.git/hooks/pre-commit; echo x >.envrc; echo x >ok.txt; true'
	echo "$stderr"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"sbx: protected path: .git/hooks/pre-commit (write refused)"* ]]
	[[ "$stderr" == *"sbx: protected path: .envrc (write refused)"* ]]
	[[ "$stderr" != *ok.txt* ]]
	[ -f "$W/ok.txt" ]
	run sbx exec --json --workdir "$W" -c 'echo x >.vscode; echo y >.envrc; true'
	echo "$output"
	[ "$status" -eq 0 ]
	json_get "$output" '.result.violations' | jq -e --arg w "$W" '
	    length == 2 and all(.type == "filesystem" and
	    .reason == "protected_path") and
	    (map(.path) | sort == [$w + "/.envrc", $w + "/.vscode"])'
	# Nothing refused, nothing reported.
	run sbx exec --json --workdir "$W" -- true
	json_get "$output" '.result | has("violations") | not' | grep -qx true
}

@test "FS-05: git init is refused (0205); with --unprotect .git it works, and the repository it created is reported" {
	command -v git >/dev/null || skip "git is not installed"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	run sbx exec --workdir "$W" -c 'git init -q . 2>/dev/null && echo INIT; true'
	[[ "$output" != *INIT* ]]
	[ ! -e "$W/.git" ]
	run sbx exec --json --workdir "$W" --unprotect .git -c '
	    export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b \
	        GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
	    git init -q . && echo hi >f && git add f &&
	    git commit -qm one && git log --oneline | wc -l'
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = "1" ]
	json_get "$output" '.warnings[]' | grep -q "created a git repository in $W"
	[ -f "$W/.git/config" ]
}

@test "FS-06: in an existing repository, commits work and .git/config and hooks stay as they were" {
	command -v git >/dev/null || skip "git is not installed"
	export GIT_CONFIG_NOSYSTEM=1
	git -C "$W" init -q
	git -C "$W" config user.name a
	git -C "$W" config user.email a@b
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	cfg=$(sha256sum <"$W/.git/config")
	hooks=$(tree_sum "$W/.git/hooks")
	run sbx exec --workdir "$W" -c '
	    echo hi >f && git add f && git commit -qm one &&
	    echo more >>f && git commit -qam two && git log --oneline | wc -l
	    git config core.fsmonitor "touch /tmp/pwned" 2>/dev/null && echo CONFIGURED
	    (echo "#!/bin/sh" >.git/hooks/pre-commit) 2>/dev/null && echo HOOKED
	    true'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" == 2* ]]
	[[ "$output" != *CONFIGURED* ]]
	[[ "$output" != *HOOKED* ]]
	[ "$(sha256sum <"$W/.git/config")" = "$cfg" ]
	[ "$(tree_sum "$W/.git/hooks")" = "$hooks" ]
	[ "$(git -c safe.directory='*' -C "$W" log --oneline | wc -l)" -eq 2 ]
}

@test "FS-07: allow_git_config lets the agent set a remote; hooks stay protected" {
	command -v git >/dev/null || skip "git is not installed"
	export GIT_CONFIG_NOSYSTEM=1
	git -C "$W" init -q
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	agent_cfg '{"allow_git_config": true}'
	run sbx exec --workdir "$W" -c '
	    git remote add origin https://example.invalid/r.git && echo SET
	    (echo x >.git/hooks/pre-commit) 2>/dev/null && echo HOOKED; true'
	echo "$output"
	[[ "$output" == *SET* ]]
	[[ "$output" != *HOOKED* ]]
	grep -q example.invalid "$W/.git/config"
	agent_cfg '{"allow_git_config": "yes"}'
	run sbx exec --json --workdir "$W" -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "FS-08: --unprotect PATH lifts one protection for one run, with a warning; protected_paths adds entries" {
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	run sbx exec --json --workdir "$W" --unprotect .envrc -c 'echo ok >.envrc'
	echo "$output"
	[ "$status" -eq 0 ]
	json_get "$output" '.warnings[]' | grep -q "protection lifted for this run: $W/.envrc"
	[ "$(cat "$W/.envrc")" = ok ]
	run sbx exec --json --workdir "$W" --unprotect notprotected -- true
	[ "$(json_get "$output" .reason)" = not_protected ]
	[ "$(json_get "$output" .field)" = unprotect ]
	run sbx exec --json --unprotect .envrc -- true
	[ "$(json_get "$output" .reason)" = requires_workdir ]
	# The agent's own entries: a literal name (missing) and a glob.
	echo secret >"$W/prod.env"
	if is_root; then chown "$RUN_UID" "$W/prod.env"; fi
	agent_cfg '{"protected_paths": ["Makefile", "*.env", "ci/deploy.sh"]}'
	before=$(tree_sum "$W")
	run sbx exec --workdir "$W" -c '
	    (echo x >Makefile) 2>/dev/null && echo WROTE1
	    (echo x >>prod.env) 2>/dev/null && echo WROTE2
	    mkdir -p ci 2>/dev/null; (echo x >ci/deploy.sh) 2>/dev/null && echo WROTE3
	    rmdir ci 2>/dev/null; true'
	echo "$output"
	[[ "$output" != *WROTE* ]]
	[ "$(tree_sum "$W")" = "$before" ]
	agent_cfg '{"protected_paths": ["../x"]}'
	run sbx exec --json --workdir "$W" -- true
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "FS-09: a worktree's .git file is followed once: the git dir it names is protected, the file too" {
	mkdir -p "$W/repo-gitdir/hooks" "$W/wt"
	echo "[core]" >"$W/repo-gitdir/config"
	printf 'gitdir: %s\n' "$W/repo-gitdir" >"$W/.git"
	# A .git file naming a directory outside every writable root.
	mkdir -p "$TEST_ROOT/outside/hooks"
	printf 'gitdir: %s\n' "$TEST_ROOT/outside" >"$W/wt/.git"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	before=$(tree_sum "$W")
	outside=$(tree_sum "$TEST_ROOT/outside")
	run sbx exec --workdir "$W" -c '
	    (echo x >>repo-gitdir/config) 2>/dev/null && echo WROTE-CONFIG
	    (echo x >repo-gitdir/hooks/pre-commit) 2>/dev/null && echo WROTE-HOOK
	    (echo "gitdir: /tmp/evil" >.git) 2>/dev/null && echo WROTE-GITFILE
	    (echo x >"'"$TEST_ROOT"'/outside/hooks/pre-commit") 2>/dev/null && echo WROTE-OUTSIDE
	    echo done'
	echo "$output"
	[ "$status" -eq 0 ]
	[[ "$output" != *WROTE* ]]
	[[ "$output" == *done* ]]
	[ "$(tree_sum "$W")" = "$before" ]
	[ "$(tree_sum "$TEST_ROOT/outside")" = "$outside" ]
}

@test "FS-10: writes through a symlinked .claude are refused at the target; a target outside is not writable" {
	mkdir -p "$W/shared/claude/commands"
	ln -s shared/claude "$W/.claude"
	if is_root; then chown -R "$RUN_UID" "$W"; chown -h "$RUN_UID" "$W/.claude"; fi
	before=$(tree_sum "$W")
	run sbx exec --workdir "$W" -c '
	    (echo x >.claude/commands/evil.md) 2>/dev/null && echo VIA-LINK
	    (echo x >shared/claude/commands/evil.md) 2>/dev/null && echo VIA-TARGET
	    rm .claude 2>/dev/null; mkdir .claude 2>/dev/null && echo REPLACED
	    echo done'
	echo "$output"
	[[ "$output" != *VIA* ]]
	[[ "$output" != *REPLACED* ]]
	[[ "$output" == *done* ]]
	# The link itself may be gone (unlinking a name is not creating
	# one); nothing was written and no directory took its place.
	[ ! -d "$W/.claude" ] || [ -L "$W/.claude" ]
	[ -z "$(find "$W/shared" -name evil.md)" ]
	rm -f "$W/.claude"
	# A link to a directory outside every writable root.
	mkdir -p "$TEST_ROOT/elsewhere"
	ln -s "$TEST_ROOT/elsewhere" "$W/.claude"
	run sbx exec --workdir "$W" -c '(echo x >.claude/evil.md) 2>/dev/null && echo WROTE; true'
	[[ "$output" != *WROTE* ]]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
}

@test "FS-11: a symlink cycle among protected names refuses the run" {
	ln -s .cursor "$W/.claude"
	ln -s .claude "$W/.cursor"
	run sbx exec --json --workdir "$W" -- touch ran
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = symlink_loop ]
	[ ! -e "$W/ran" ]
}

@test "FS-12: no ghost files after kill -9 of sbx, nor with two sandboxes on one workdir" {
	mkdir -p "$W/.git"
	if is_root; then chown -R "$RUN_UID" "$W"; fi
	sbx exec --workdir "$W" -c 'echo >up1; exec sleep 30' &
	BGPID=$!
	sbx exec --workdir "$W" -c 'echo >up2; exec sleep 30' &
	BGPID2=$!
	# Both sandboxes are up before anything else happens.
	for _ in $(seq 200); do
		[ -f "$W/up1" ] && [ -f "$W/up2" ] && break
		sleep 0.05
	done
	[ -f "$W/up1" ] && [ -f "$W/up2" ]
	before=$(tree_sum "$W")
	# A third, writing, while the two run.
	run sbx exec --workdir "$W" -c '(echo x >.envrc) 2>/dev/null && echo WROTE; ls -A'
	[[ "$output" != *WROTE* ]]
	kill -9 "$BGPID"
	wait "$BGPID" 2>/dev/null || true
	BGPID=
	[ "$(tree_sum "$W")" = "$before" ]
	kill -9 "$BGPID2"
	wait "$BGPID2" 2>/dev/null || true
	BGPID2=
	[ "$(tree_sum "$W")" = "$before" ]
	[ "$(ls -A "$W" | tr '\n' ' ')" = ".git up1 up2 " ]
}
