#!/usr/bin/env bats
# sbx exec: the sandbox's /etc is one prepared tree under cache/etc, bound
# read-only once, the symlink farms /etc/alternatives and /etc/ssl/certs
# hard-linked into it as root, bound over it otherwise (issue 19): the
# same files as before, current with the
# host, rebuilt when its copy was touched, never built through a planted
# symlink, refused when others could write it.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

tree() { ls -d "$SBX_HOME"/cache/etc/[0-9a-f]*/etc; }

@test "/etc is one read-only mount with the usual files and sbx's passwd" {
	# As root the tree alone (the farms' symlinks are hard-linked into
	# it); otherwise the two symlink farms are bound over it too (see
	# etc_bound_dirs in sandbox.c), when the host has them:
	# protected_hardlinks refuses links to root's symlinks.
	want=1
	if ! is_root; then
		for d in /etc/alternatives /etc/ssl/certs; do
			[ -d "$d" ] && want=$((want + 1))
		done
	fi
	run --separate-stderr sbx exec -- sh -c '
	    awk "\$5 == \"/etc\" || \$5 ~ \"^/etc/\"" /proc/self/mountinfo | wc -l
	    awk "\$5 == \"/etc\" {print \$6}" /proc/self/mountinfo
	    head -n 1 /etc/passwd | cut -d: -f1
	    test -e /etc/shadow || echo no-shadow
	    test -e /etc/machine-id || echo no-machine-id
	    test -s /etc/ld.so.cache && echo ld-cache
	    touch /etc/x 2>/dev/null || echo read-only'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$want" ]
	case ${lines[1]} in ro,* | *,ro,* | ro) ;; *) false ;; esac
	[ "${lines[2]}" = default ]
	[ "${lines[3]}" = no-shadow ]
	[ "${lines[4]}" = no-machine-id ]
	[ "${lines[5]}" = ld-cache ]
	[ "${lines[6]}" = read-only ]
	run -0 sbx exec -- cat /etc/services
	[ "$output" = "$(cat /etc/services)" ]
}

@test "the symlink farms are the host's" {
	for d in /etc/alternatives /etc/ssl/certs; do
		[ -d "$d" ] || continue
		host=$(cd "$d" && for f in *; do
		    [ -L "$f" ] && printf '%s %s\n' "$f" "$(readlink "$f")"
		done | sort | sha256sum)
		run -0 sbx exec -- sh -c 'cd "$1" && for f in *; do
		    [ -L "$f" ] && printf "%s %s\n" "$f" "$(readlink "$f")"
		done | sort | sha256sum' sh "$d"
		[ "$output" = "$host" ]
	done
	[ -e /etc/ssl/certs/ca-certificates.crt ] || skip "no CA bundle"
	run -0 sbx exec -- cmp /etc/ssl/certs/ca-certificates.crt \
	    /etc/ssl/certs/ca-certificates.crt
	# Linked, the same inodes as the host's; nothing of the host moved.
	if is_root && [ -L /etc/alternatives/awk ]; then
		[ "$(stat -c %i "$(tree)/alternatives/awk")" = \
		    "$(stat -c %i /etc/alternatives/awk)" ]
	fi
}

@test "a symlink replaced in a farm is picked up" {
	is_root || skip "needs a private mount namespace over /etc (root)"
	command -v unshare >/dev/null || skip "unshare is not installed"
	[ -d /etc/alternatives ] || skip "no /etc/alternatives"
	mkdir "$TEST_ROOT/alt"
	cp -a /etc/alternatives/. "$TEST_ROOT/alt/"
	run --separate-stderr unshare -m --propagation private sh -c '
	    mount --bind "$1/alt" /etc/alternatives &&
	    "$2" exec -- readlink /etc/alternatives/sbx-test-link;
	    ln -s /usr/bin/sbx-test-one /etc/alternatives/sbx-test-link &&
	    "$2" exec -- readlink /etc/alternatives/sbx-test-link &&
	    ln -sfn /usr/bin/sbx-test-two /etc/alternatives/sbx-test-link &&
	    "$2" exec -- readlink /etc/alternatives/sbx-test-link' sh \
	    "$TEST_ROOT" "$SBX"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = /usr/bin/sbx-test-one ]
	[ "${lines[1]}" = /usr/bin/sbx-test-two ]
	# The host's own directory was never touched.
	[ ! -e /etc/alternatives/sbx-test-link ]
}

@test "the tree is built once, then reused" {
	run -0 sbx exec -- true
	t=$(tree)
	ino=$(stat -c %i "$t/services")
	run -0 sbx exec -- true
	[ "$(tree)" = "$t" ]
	[ "$(stat -c %i "$t/services")" = "$ino" ]
	# Another agent has its own passwd, so its own tree.
	run -0 sbx exec --agent other -- head -n 1 /etc/passwd
	[ "${output%%:*}" = other ]
}

@test "a copy touched after it was built is rebuilt from the host" {
	run -0 sbx exec -- true
	f="$(tree)/services"
	chmod u+w "$f"
	echo "planted 1/tcp" >>"$f"
	run -0 sbx exec -- cat /etc/services
	[ "$output" = "$(cat /etc/services)" ]
	# Even a mode change alone (the content untouched) counts.
	chmod 0666 "$(tree)/protocols"
	run -0 sbx exec -- stat -c %a /etc/protocols
	[ "$output" = 444 ]
}

@test "a host file changed in place, or added to a copied directory, is picked up" {
	is_root || skip "needs a private mount namespace over /etc (root)"
	command -v unshare >/dev/null || skip "unshare is not installed"
	cp /etc/protocols "$TEST_ROOT/protocols"
	mkdir "$TEST_ROOT/conf.d"
	cp -a /etc/ld.so.conf.d/. "$TEST_ROOT/conf.d/"
	before=$(stat -c '%i %Y' /etc/protocols /etc/ld.so.conf.d)
	# Private: the binds below are seen by sbx and bwrap, not the host.
	run --separate-stderr unshare -m --propagation private sh -c '
	    mount --bind "$1/protocols" /etc/protocols &&
	    mount --bind "$1/conf.d" /etc/ld.so.conf.d &&
	    "$2" exec -- tail -n 1 /etc/protocols &&
	    echo "changed 999 CHANGED" >>/etc/protocols &&
	    "$2" exec -- tail -n 1 /etc/protocols &&
	    echo "# new" >/etc/ld.so.conf.d/zz-sbx-test.conf &&
	    "$2" exec -- cat /etc/ld.so.conf.d/zz-sbx-test.conf' sh \
	    "$TEST_ROOT" "$SBX"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$(tail -n 1 /etc/protocols)" ]
	[ "${lines[1]}" = "changed 999 CHANGED" ]
	[ "${lines[2]}" = "# new" ]
	# The host's own files never changed.
	[ "$(stat -c '%i %Y' /etc/protocols /etc/ld.so.conf.d)" = "$before" ]
	[ ! -e /etc/ld.so.conf.d/zz-sbx-test.conf ]
	! grep -q CHANGED /etc/protocols
}

@test "a symlink planted at cache/etc is not followed; the run still works" {
	run -0 sbx exec -- true
	rm -rf "$SBX_HOME/cache/etc"
	mkdir "$TEST_ROOT/elsewhere"
	ln -s "$TEST_ROOT/elsewhere" "$SBX_HOME/cache/etc"
	run -0 sbx exec -- head -n 1 /etc/passwd
	[ "${output%%:*}" = default ]
	[ -z "$(ls -A "$TEST_ROOT/elsewhere")" ]
	[ -L "$SBX_HOME/cache/etc" ]
}

@test "cache/etc writable by others is not used, and the envelope says so" {
	run -0 sbx exec -- true
	chmod 0777 "$SBX_HOME/cache/etc"
	run --separate-stderr sbx exec --json -- head -n 1 /etc/passwd
	[ "$status" -eq 0 ]
	json_get "$output" '.warnings[]' | grep -q 'cache/etc is not owned'
	[ "$(json_get "$output" .result.stdout | cut -d: -f1)" = default ]
	chmod 0711 "$SBX_HOME/cache/etc"
}

@test "concurrent first runs all see a whole /etc; one tree is left" {
	for i in 1 2 3 4 5 6; do
		sbx exec -- sh -c 'test -s /etc/ld.so.cache &&
		    head -n 1 /etc/passwd | cut -d: -f1' >"$TEST_ROOT/out.$i" 2>&1 &
	done
	wait
	for i in 1 2 3 4 5 6; do
		[ "$(cat "$TEST_ROOT/out.$i")" = default ]
	done
	[ "$(ls "$SBX_HOME/cache/etc" | wc -l)" -eq 1 ]
}
