#!/usr/bin/env bats
# The git rule (issue 27 §1): a git directory in a writable root is
# read-only as a whole but for what commits and fetches write, and every
# way git finds configuration or hooks is closed to the sandbox: commondir,
# config.worktree, worktrees/ID/{commondir,config.worktree,gitdir},
# modules/NAME/{config,hooks}, a .git file (the root's, a submodule's, a
# linked worktree's), a core.hooksPath inside the tree (husky), a
# repository the run makes (git init), at the root or below it.
#
# Method: the sandbox plants, in each spelling, a core.fsmonitor (run by
# every `git status`) or a hook that would touch a file on the host; the
# host's own git then runs in the tree, and the file must not appear.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	command -v git >/dev/null || skip "git is not installed"
	sbx_setup
	RUN_UID=$(sandbox_uid)
	W="$TEST_ROOT/w"
	PWN="$TEST_ROOT/pwned"
	mkdir -p "$W"
	# The host's git: no system config, a global one that trusts every
	# directory (as root the tree is the sandbox uid's, and git would
	# otherwise refuse it as "dubious": the test must not depend on it).
	export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL="$TEST_ROOT/gitconfig"
	cat >"$GIT_CONFIG_GLOBAL" <<-'EOF'
	[safe]
		directory = *
	[user]
		name = h
		email = h@h
	[protocol "file"]
		allow = always
	EOF
	chmod 0644 "$GIT_CONFIG_GLOBAL"
	git -C "$W" init -q
	echo a >"$W/a"
	git -C "$W" add a
	git -C "$W" commit -qm one
}

teardown() { sbx_teardown; }

own() { if is_root; then chown -R "$RUN_UID" "$1"; fi; }

# The sandbox's git: a name, no config of the host's.
IN='export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
    GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b
    export GIT_AUTHOR_NAME GIT_AUTHOR_EMAIL GIT_COMMITTER_NAME GIT_COMMITTER_EMAIL
    fsm() { printf "[core]\n\trepositoryformatversion = 0\n\tfsmonitor = \"touch %s\"\n" "$1"; }
    # A write that creates nothing (O_WRONLY, no O_CREAT): only a mount stops it.
    wr() { python3 -c "import os,sys; fd=os.open(sys.argv[1], os.O_WRONLY|os.O_APPEND); os.write(fd, sys.stdin.buffer.read())" "$1"; }
'

# host_git DIR ARGS...: the person's next git in DIR; nothing planted runs.
host_git() {
	local d=$1
	shift
	git -C "$d" "$@" >/dev/null 2>&1 || true
	if [ -e "$PWN" ]; then
		echo "host git in $d ran what the sandbox planted: $(cat "$PWN" 2>/dev/null)"
		return 1
	fi
}

@test "GIT-01: commondir and config.worktree cannot be planted in .git" {
	git -C "$W" config extensions.worktreeConfig true
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    mkdir ev && cp -r .git/objects .git/refs ev/ && fsm '"$PWN"' >ev/config
	    echo ../ev >.git/commondir 2>/dev/null && echo PLANTED-commondir
	    fsm '"$PWN"' >.git/config.worktree 2>/dev/null && echo PLANTED-worktree
	    python3 -c "import os; os.rename(\"ev/config\", \".git/config.worktree\")" 2>/dev/null && echo PLANTED-rename
	    ln ev/config .git/commondir 2>/dev/null && echo PLANTED-link
	    echo done'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *done* ]]
	[ ! -e "$W/.git/commondir" ] && [ ! -e "$W/.git/config.worktree" ]
}

@test "GIT-02: every existing name of .git but objects, refs, logs, index... is read-only; commit, fetch, gc, stash work" {
	# A remote the sandbox can see: a bare clone inside the tree.
	git clone -q --bare "$W" "$W/remote.git"
	git -C "$W" remote add origin "$W/remote.git"
	echo "ref: refs/heads/x" >"$W/.git/description"
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    fsm '"$PWN"' | wr .git/config 2>/dev/null && echo PLANTED-config
	    echo x | wr .git/description 2>/dev/null && echo PLANTED-description
	    (echo "#!/bin/sh" >.git/hooks/post-checkout) 2>/dev/null && echo PLANTED-hook
	    (echo "* filter=x" >.git/info/attributes) 2>/dev/null && echo PLANTED-attributes
	    echo b >b && git add b && git commit -qm two && echo COMMIT
	    git fetch -q origin && echo FETCH
	    echo c >>a && git stash -q && git stash pop -q && echo STASH
	    git gc -q && echo GC
	    git worktree list >/dev/null && echo WTLIST
	    git submodule status && echo SUBSTATUS
	    git log --oneline | wc -l'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	for w in COMMIT FETCH STASH GC WTLIST SUBSTATUS; do [[ "$output" == *$w* ]]; done
	[ "$(git -C "$W" log --oneline | wc -l)" -eq 2 ]
	host_git "$W" checkout -q HEAD~1
}

@test "GIT-03: a submodule: modules/NAME/config and hooks are read-only, its .git file cannot be redirected" {
	git init -q "$TEST_ROOT/subsrc"
	git -C "$TEST_ROOT/subsrc" commit -q --allow-empty -m s
	git -C "$W" submodule add -q "$TEST_ROOT/subsrc" sub
	git -C "$W" commit -qm sub
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    fsm '"$PWN"' | wr .git/modules/sub/config 2>/dev/null && echo PLANTED-modconfig
	    (fsm '"$PWN"' >>.git/modules/sub/config) 2>/dev/null && echo PLANTED-modconfig2
	    (echo "#!/bin/sh" >.git/modules/sub/hooks/pre-commit) 2>/dev/null && echo PLANTED-modhook
	    echo x >.git/modules/sub/commondir 2>/dev/null && echo PLANTED-modcommondir
	    mkdir -p ev && cp -r .git/modules/sub/objects .git/modules/sub/refs .git/modules/sub/HEAD ev/ && fsm '"$PWN"' >ev/config
	    echo "gitdir: ../ev" | wr sub/.git 2>/dev/null && echo PLANTED-gitfile
	    (echo "gitdir: ../ev" >sub/.git) 2>/dev/null && echo PLANTED-gitfile2
	    mkdir -p .git/modules/new 2>/dev/null && echo PLANTED-newmodule
	    (cd sub && echo s >s && git add s && git commit -qm s2 && echo SUBCOMMIT)
	    echo done'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W" status
	host_git "$W/sub" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *SUBCOMMIT* ]]
}

@test "GIT-04: a linked worktree in the tree: worktrees/ID and its .git file cannot be changed" {
	git -C "$W" config extensions.worktreeConfig true
	git -C "$W" worktree add -q "$W/wt"
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    mkdir ev && cp -r .git/objects .git/refs ev/ && fsm '"$PWN"' >ev/config
	    fsm '"$PWN"' >.git/worktrees/wt/config.worktree 2>/dev/null && echo PLANTED-cw
	    echo x | wr .git/worktrees/wt/commondir 2>/dev/null && echo PLANTED-commondir
	    echo x | wr .git/worktrees/wt/gitdir 2>/dev/null && echo PLANTED-gitdir
	    echo "gitdir: '"$W"'/ev" | wr wt/.git 2>/dev/null && echo PLANTED-gitfile
	    (cd wt && echo w >w && git add w && git commit -qm w && echo WTCOMMIT)
	    echo done'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W/wt" status
	host_git "$W" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *WTCOMMIT* ]]
}

@test "GIT-05: a .git the run would make, at the root or below, is refused; --unprotect .git allows it, with a warning" {
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    mkdir -p sub/deeper
	    git init -q sub/deeper 2>/dev/null && echo PLANTED-init
	    mkdir ev && cp -r .git/objects .git/refs .git/HEAD ev/ && fsm '"$PWN"' >ev/config
	    (echo "gitdir: ../ev" >sub/.git) 2>/dev/null && echo PLANTED-gitfile
	    mv ev sub/.git 2>/dev/null && echo PLANTED-rename
	    ln -s ../ev sub/.git 2>/dev/null && echo PLANTED-symlink
	    echo done'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W/sub" status
	host_git "$W/sub/deeper" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	[ ! -e "$W/sub/.git" ] && [ ! -e "$W/sub/deeper/.git" ]
	# A workdir without a repository: git init is refused too.
	mkdir -p "$TEST_ROOT/w2"
	own "$TEST_ROOT/w2"
	run sbx exec --workdir "$TEST_ROOT/w2" -c "$IN"'git init -q . 2>/dev/null && echo PLANTED; true'
	[[ "$output" != *PLANTED* ]]
	[ ! -e "$TEST_ROOT/w2/.git" ]
	# Lifted for one run: the repository is the run's, and it says so.
	run sbx exec --json --workdir "$TEST_ROOT/w2" --unprotect .git -c "$IN"'git init -q . && echo hi >f && git add f && git commit -qm one && echo OK'
	echo "$output"
	[ "$(json_get "$output" .result.stdout)" = OK ]
	json_get "$output" '.warnings[]' | grep -q "created a git repository in $TEST_ROOT/w2"
}

@test "GIT-06: an existing nested repository: new hooks and config names are refused, git config cannot rewrite it" {
	git init -q "$W/vendor/x"
	# A bare one (NAME.git) that the host pushes to: its hooks run then.
	git init -q --bare "$W/b.git"
	git -C "$W" remote add b "$W/b.git"
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    (printf "#!/bin/sh\ntouch %s\n" '"$PWN"' >b.git/hooks/post-receive && chmod +x b.git/hooks/post-receive) 2>/dev/null && echo PLANTED-bare
	    (fsm '"$PWN"' >>b.git/config) 2>/dev/null && echo PLANTED-bareconfig
	    git push -q b HEAD:refs/heads/main && echo PUSHED
	    true'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W" push -q b HEAD:refs/heads/other
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *PUSHED* ]]
	run sbx exec --workdir "$W" -c "$IN"'
	    (echo "#!/bin/sh" >vendor/x/.git/hooks/pre-commit) 2>/dev/null && echo PLANTED-hook
	    echo ../ev >vendor/x/.git/commondir 2>/dev/null && echo PLANTED-commondir
	    git -C vendor/x config core.fsmonitor "touch '"$PWN"'" 2>/dev/null && echo PLANTED-config
	    (fsm '"$PWN"' >>vendor/x/.git/config) 2>/dev/null && echo PLANTED-append
	    ln vendor/x/.git/config cfg 2>/dev/null && echo PLANTED-hardlink
	    (cd vendor/x && echo v >v && git add v && git commit -qm v && echo NESTEDCOMMIT)
	    echo done'
	echo "$output"
	host_git "$W/vendor/x" status
	[ "$status" -eq 0 ]
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *NESTEDCOMMIT* ]]
}

@test "GIT-07: core.hooksPath inside the tree (husky) is read-only, present or not" {
	mkdir -p "$W/.husky/_"
	echo 'echo ok' >"$W/.husky/pre-commit"
	git -C "$W" config core.hooksPath .husky/_
	# A second repository whose hooksPath does not exist yet.
	git init -q "$TEST_ROOT/w3"
	git -C "$TEST_ROOT/w3" config core.hooksPath .githooks
	own "$W"
	own "$TEST_ROOT/w3"
	run sbx exec --workdir "$W" -c "$IN"'
	    printf "#!/bin/sh\ntouch %s\n" '"$PWN"' | wr .husky/pre-commit 2>/dev/null && echo PLANTED-husky
	    (printf "#!/bin/sh\ntouch %s\n" '"$PWN"' >.husky/_/pre-commit && chmod +x .husky/_/pre-commit) 2>/dev/null && echo PLANTED-husky_
	    echo done'
	echo "$output"
	# First what matters: the host's git runs nothing planted.
	host_git "$W" commit -q --allow-empty -m h
	[[ "$output" != *PLANTED* ]]
	run sbx exec --workdir "$TEST_ROOT/w3" -c "$IN"'
	    mkdir -p .githooks 2>/dev/null && echo PLANTED-dir
	    (printf "#!/bin/sh\ntouch %s\n" '"$PWN"' >.githooks/pre-commit && chmod +x .githooks/pre-commit) 2>/dev/null && echo PLANTED-hook
	    echo done'
	echo "$output"
	host_git "$TEST_ROOT/w3" commit -q --allow-empty -m h
	[[ "$output" != *PLANTED* ]]
}

@test "GIT-08: a hook manager's config in the tree (pre-commit, lefthook) is read-only when the repository has a hook" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	# What `pre-commit install` leaves: a hook that runs what the
	# tree's .pre-commit-config.yaml says (here, a stand-in that does).
	printf '#!/bin/sh\nexec sh -c "$(sed -n "s/^ *entry: //p" .pre-commit-config.yaml)"\n' \
	    >"$W/.git/hooks/pre-commit"
	chmod +x "$W/.git/hooks/pre-commit"
	printf 'repos:\n- repo: local\n  hooks:\n  - id: ok\n    entry: true\n' \
	    >"$W/.pre-commit-config.yaml"
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    printf "    entry: touch %s\n" '"$PWN"' | wr .pre-commit-config.yaml 2>/dev/null && echo PLANTED-precommit
	    (echo "pre-commit: {commands: {x: {run: touch '"$PWN"'}}}" >lefthook.yml) 2>/dev/null && echo PLANTED-lefthook
	    echo done'
	echo "$output"
	host_git "$W" commit -q --allow-empty -m h
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *done* ]]
}

# GIT-09: a repository below the workdir that is neither the root's nor a
# submodule (a checkout inside the checkout), its linked worktree, a bare
# one and a --separate-git-dir one: what exists in them is overwritten in
# place (no O_CREAT, which the guard does not see) in every way a shell
# does it, and the host's next git there must run nothing.
nested_setup() {
	git init -q "$W/sub/inner"
	echo i >"$W/sub/inner/i"
	git -C "$W/sub/inner" add i
	git -C "$W/sub/inner" commit -qm i
	printf '#!/bin/sh\nexit 0\n' >"$W/sub/inner/.git/hooks/pre-commit"
	chmod +x "$W/sub/inner/.git/hooks/pre-commit"
	# A linked worktree: worktrees/wt/commondir exists.
	git -C "$W/sub/inner" worktree add -q "$W/sub/wt" 2>/dev/null
	# Not named .git: a bare repository and a separate git directory,
	# recognized by what they hold.
	git init -q --bare "$W/srv/proj"
	mkdir -p "$W/store"
	git init -q --separate-git-dir "$W/store/sep" "$W/sub/sep"
	own "$W"
}

# Sums of what the sandbox aims at: nothing may change on the host.
nested_sums() {
	(cd "$W" && cat sub/inner/.git/config sub/inner/.git/hooks/pre-commit \
	    sub/inner/.git/worktrees/wt/commondir srv/proj/config \
	    store/sep/config | md5sum)
}

@test "GIT-09: a nested repository's existing config, hooks and commondir cannot be overwritten in place (O_TRUNC, >, cp, mv, truncate)" {
	command -v python3 >/dev/null || skip "python3 is not installed"
	nested_setup
	before=$(nested_sums)
	for how in otrunc redir cp mv truncate; do
		run sbx exec --workdir "$W" -c "$IN"'
		    rm -rf ev && mkdir ev && cp -r sub/inner/.git/objects sub/inner/.git/refs ev/ && fsm '"$PWN"' >ev/config
		    printf "#!/bin/sh\ntouch %s\n" '"$PWN"' >hook && chmod +x hook
		    echo "'"$W"'/ev" >cdir
		    put() {	# put SRC DEST, one way
			case '"$how"' in
			otrunc) python3 -c "import os,sys; fd=os.open(sys.argv[2], os.O_WRONLY|os.O_TRUNC); os.write(fd, open(sys.argv[1],\"rb\").read())" "$1" "$2" ;;
			redir) cat "$1" >"$2" ;;
			cp) cp "$1" "$2" ;;
			mv) cp "$1" "$1.m" && mv -f "$1.m" "$2" ;;
			truncate) truncate -s 0 "$2" && cat "$1" | wr "$2" ;;
			esac
		    }
		    for f in sub/inner/.git/config srv/proj/config store/sep/config; do
			put ev/config $f 2>/dev/null && echo PLANTED-$f
		    done
		    put hook sub/inner/.git/hooks/pre-commit 2>/dev/null && echo PLANTED-hook
		    put cdir sub/inner/.git/worktrees/wt/commondir 2>/dev/null && echo PLANTED-commondir
		    (cd sub/inner && echo v >>i && git commit -qam v && echo NESTEDCOMMIT)
		    echo done'
		echo "$how: $output"
		# First what matters: the host's git runs nothing planted.
		host_git "$W/sub/inner" status
		host_git "$W/sub/wt" status
		host_git "$W/sub/sep" status
		host_git "$W/sub/inner" commit -q --allow-empty -m h
		[[ "$output" != *PLANTED* ]]
		[[ "$output" == *NESTEDCOMMIT* ]]
		[ "$(nested_sums)" = "$before" ]
		# The host's commit (as root) made objects of root's.
		own "$W"
	done
}

@test "GIT-09: the search for nested repositories is bounded by git_search_limit, and says so when it stops" {
	nested_setup
	mkdir -p "$SBX_HOME/config/agents"
	# Within the bound: no warning, the nested config is read-only.
	run sbx exec --json --workdir "$W" -c 'cat /dev/null >sub/inner/.git/config 2>/dev/null && echo PLANTED; echo done'
	echo "$output"
	[[ "$(json_get "$output" '.result.stdout')" != *PLANTED* ]]
	if json_get "$output" '.warnings[]?' | grep -q git_search_limit; then false; fi
	# Two directories: the search stops before sub/inner, and says so.
	printf '{"git_search_limit": 2}\n' >"$SBX_HOME/config/agents/default.json"
	run sbx exec --json --workdir "$W" -c 'true'
	echo "$output"
	json_get "$output" '.warnings[]' | grep -q "stopped at 2 directories (git_search_limit)"
	# 0: no search, no warning (the guard still refuses new names).
	printf '{"git_search_limit": 0}\n' >"$SBX_HOME/config/agents/default.json"
	run sbx exec --json --workdir "$W" -c 'true'
	if json_get "$output" '.warnings[]?' | grep -q git_search_limit; then false; fi
	printf '{"git_search_limit": -1}\n' >"$SBX_HOME/config/agents/default.json"
	run sbx exec --json --workdir "$W" -c 'true'
	echo "$output"
	[ "$(json_get "$output" .reason)" = config_invalid ]
}

@test "GIT-09: a nested repository's core.hooksPath and hook manager config are read-only in its own work tree" {
	git init -q "$W/sub/inner"
	git -C "$W/sub/inner" config core.hooksPath .githooks
	git init -q "$W/sub/pc"
	printf '#!/bin/sh\nexec sh -c "$(sed -n "s/^ *entry: //p" .pre-commit-config.yaml)"\n' \
	    >"$W/sub/pc/.git/hooks/pre-commit"
	chmod +x "$W/sub/pc/.git/hooks/pre-commit"
	printf 'repos:\n- repo: local\n  hooks:\n  - id: ok\n    entry: true\n' \
	    >"$W/sub/pc/.pre-commit-config.yaml"
	own "$W"
	run sbx exec --workdir "$W" -c "$IN"'
	    (mkdir -p sub/inner/.githooks && printf "#!/bin/sh\ntouch %s\n" '"$PWN"' >sub/inner/.githooks/pre-commit && chmod +x sub/inner/.githooks/pre-commit) 2>/dev/null && echo PLANTED-hookspath
	    printf "    entry: touch %s\n" '"$PWN"' | wr sub/pc/.pre-commit-config.yaml 2>/dev/null && echo PLANTED-precommit
	    echo done'
	echo "$output"
	host_git "$W/sub/inner" commit -q --allow-empty -m h
	host_git "$W/sub/pc" commit -q --allow-empty -m h
	[[ "$output" != *PLANTED* ]]
	[[ "$output" == *done* ]]
}

@test "GIT-09: the search reads three levels down: a repository at a/b/c is protected, one deeper has the guard" {
	mkdir -p "$W/l1/l2/l3" "$W/m1/m2/m3/m4"
	git init -q "$W/l1/l2/l3"
	git init -q "$W/m1/m2/m3/m4"
	own "$W"
	run sbx exec --json --workdir "$W" -c '
	    echo x >>l1/l2/l3/.git/config 2>/dev/null && echo PLANTED-3
	    : >m1/m2/m3/m4/.git/hooks/post-checkout 2>/dev/null && echo PLANTED-NEW
	    echo x >>m1/m2/m3/m4/.git/config 2>/dev/null && echo WROTE-4
	    echo done'
	echo "$output"
	out=$(json_get "$output" '.result.stdout')
	[[ "$out" == *done* ]]
	# Three levels down: found, read-only.
	[[ "$out" != *PLANTED-3* ]]
	# Deeper: not searched, but what a shell does (a new name, and `>>`,
	# which opens with O_CREAT) is still the guard's to refuse; only an
	# open without O_CREAT is not seen there (documented).
	[[ "$out" != *PLANTED-NEW* ]]
	[[ "$out" != *WROTE-4* ]]
	[ ! -e "$W/m1/m2/m3/m4/.git/hooks/post-checkout" ]
}
