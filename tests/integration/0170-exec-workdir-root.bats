#!/usr/bin/env bats
# sbx exec --workdir as root (issue 11, item 3): the sandbox runs as an
# unprivileged uid, yet a root-owned checkout is writable inside through a
# private idmapped copy of its mount, and what the sandbox creates belongs
# to the directory's owner on the host; a checkout under a 0700 directory
# is reachable; a filesystem that cannot idmap is refused before the
# command runs, with the fix; a home directory is refused as one.
#
# Method: the copy must leave nothing behind: the host's mount table is
# compared before, during and after a run.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	RUN_UID=$(getent passwd sbx | cut -d: -f3)
	RUN_UID=${RUN_UID:-65534}
}

teardown() {
	sbx_teardown
}

need_root() {
	is_root || skip "the sandbox runs as the caller itself unless sbx runs as root"
}

# Mounts of the host that name this test's directory.
host_mounts() {
	grep -F "$TEST_ROOT" /proc/self/mountinfo || true
}

@test "a root-owned checkout is writable inside and stays root's on the host" {
	need_root
	d="$TEST_ROOT/ci/checkout"
	mkdir -p "$d/src"
	chmod 0755 "$TEST_ROOT/ci" "$d"
	echo 'int main(void){return 0;}' >"$d/src/main.c"
	before_mi=$(host_mounts)
	before_fm=$(findmnt -rn -o TARGET | sort)
	run sbx exec --workdir "$d" -- sh -c "echo x > $d/f && mkdir $d/obj &&
	    echo y > $d/obj/o && echo z >> $d/src/main.c && stat -c '%u' $d/f"
	echo "$output"
	[ "$status" -eq 0 ]
	# Inside, the owner's files are the sandbox uid's.
	[ "${lines[0]}" = "$RUN_UID" ]
	[ "$(cat "$d/f")" = x ]
	# On the host, what the sandbox made is the directory owner's (root).
	[ "$(stat -c '%u:%g' "$d/f")" = 0:0 ]
	[ "$(stat -c '%u:%g' "$d/obj")" = 0:0 ]
	[ "$(stat -c '%u:%g' "$d/obj/o")" = 0:0 ]
	[ "$(tail -n 1 "$d/src/main.c")" = z ]
	# No warning about a read-only workdir any more.
	[[ "$output" != *"cannot write"* ]]
	# The copy is gone: the host's mount table is as it was.
	[ "$(host_mounts)" = "$before_mi" ]
	[ "$(findmnt -rn -o TARGET | sort)" = "$before_fm" ]
	[ -z "$(ls -A "$SBX_HOME/run/workdir")" ]
}

@test "no setuid-root program can be left in a root-owned checkout" {
	need_root
	d="$TEST_ROOT/suid"
	mkdir -m 0755 "$d"
	run sbx exec --workdir "$d" -- sh -c "cp /bin/true $d/s &&
	    chmod 4755 $d/s; echo chmod=\$?; install -m 4755 /bin/true $d/i;
	    echo install=\$?"
	echo "$output"
	[ -e "$d/s" ]
	[ "$(stat -c '%u' "$d/s")" = 0 ]
	[ $((8#$(stat -c %a "$d/s") & 8#4000)) -eq 0 ]
	[[ "$output" == *"chmod=1"* ]]
	if [ -e "$d/i" ]; then
		[ $((8#$(stat -c %a "$d/i") & 8#4000)) -eq 0 ]
	fi
	# set-group-ID: the file would be group root on the host
	run sbx exec --workdir "$d" -- sh -c "cp /bin/true $d/g &&
	    chmod 2755 $d/g; echo chmod=\$?; chmod g+s $d/g; echo gs=\$?"
	[[ "$output" == *"chmod=1"* ]]
	[[ "$output" == *"gs=1"* ]]
	[ "$(stat -c '%g' "$d/g")" = 0 ]
	[ $((8#$(stat -c %a "$d/g") & 8#2000)) -eq 0 ]
}

@test "the copy of the workdir is never visible on the host, even while it runs" {
	need_root
	d="$TEST_ROOT/proj"
	mkdir -p "$d"
	before=$(host_mounts)
	sbx exec --workdir "$d" -- sh -c "touch $d/started; \
	    while [ ! -e $d/stop ]; do sleep 0.1; done" 3>&- &
	pid=$!
	i=0
	while [ ! -e "$d/started" ] && [ $i -lt 300 ] &&
	    kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
		i=$((i + 1))
	done
	during=$(host_mounts)
	# Ends the command whether or not it could write (the host can).
	touch "$d/stop"
	wait "$pid"
	echo "before: $before"
	echo "during: $during"
	[ -e "$d/started" ]
	[ "$during" = "$before" ]
	[ "$(host_mounts)" = "$before" ]
}

@test "a checkout under a 0700 directory the sandbox uid cannot search works" {
	need_root
	mkdir -p "$TEST_ROOT/rootlike/project"
	chmod 0700 "$TEST_ROOT/rootlike"
	d="$TEST_ROOT/rootlike/project"
	run sbx exec --workdir "$d" -- sh -c "pwd; echo built > $d/out"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$d" ]
	[ "$(cat "$d/out")" = built ]
	[ "$(stat -c '%u' "$d/out")" = 0 ]
	# A directory the sandbox uid already owns, under the same 0700
	# parent: reachable too, and its files stay that uid's.
	mkdir "$TEST_ROOT/rootlike/mine"
	chown "$RUN_UID" "$TEST_ROOT/rootlike/mine"
	run sbx exec --workdir "$TEST_ROOT/rootlike/mine" -- \
	    touch "$TEST_ROOT/rootlike/mine/f"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u' "$TEST_ROOT/rootlike/mine/f")" = "$RUN_UID" ]
}

@test "a filesystem that cannot idmap is refused before the command runs, with the fix" {
	need_root
	command -v unshare >/dev/null || skip "no unshare(1)"
	# ramfs has no idmapped mounts; mounted in a private mount namespace
	# so that nothing of it can outlive the test.
	d="$TEST_ROOT/ram"
	mkdir -p "$d"
	run unshare -m --propagation private sh -c '
	    mount -t ramfs -o mode=0755 none "$1" && mkdir "$1/proj" &&
	    "$2" exec --json --workdir "$1/proj" -- sh -c "echo RAN; touch $3" ' \
	    sh "$d" "$SBX" "$TEST_ROOT/ran"
	echo "$output"
	status_is_kind
	[[ "$output" != *RAN* ]]
	[ ! -e "$TEST_ROOT/ran" ]
	printf '%s\n' "$output" | jq -e --arg d "$d/proj" --arg u "$RUN_UID" '
	    .ok == false and .kind == "rejected" and .field == "workdir" and
	    .reason == "workdir_not_writable" and
	    (.message | contains("uid " + $u) and contains($d)) and
	    (.hint | startswith("chown -R " + $u + ":"))' >/dev/null
	[ -z "$(ls -A "$d")" ]
}

@test "a home directory is refused as a home directory, not as a system one" {
	need_root
	home=$(getent passwd 0 | cut -d: -f6)
	[ -d "$home" ] || skip "root's home $home does not exist"
	run -77 sbx exec --json --workdir "$home" -- true
	echo "$output"
	printf '%s\n' "$output" | jq -e '.kind == "rejected" and
	    .reason == "home_directory"' >/dev/null
	[[ "$output" != *system* ]]
}

@test "a plain user's sandbox runs as the user: no copy, no mount point" {
	! is_root || skip "as root the sandbox runs as another uid"
	d="$TEST_ROOT/proj"
	mkdir -p "$d"
	run sbx exec --workdir "$d" -- sh -c "echo x > $d/f"
	[ "$status" -eq 0 ]
	[ "$(stat -c '%u' "$d/f")" = "$(id -u)" ]
	[ ! -e "$SBX_HOME/run/workdir" ]
}
