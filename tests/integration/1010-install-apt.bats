#!/usr/bin/env bats
# sbx install --manager apt (issue 15): apt-get and dpkg over the agent's
# own root file system copy (provision --own-rootfs), read-write as /, as uid 0
# of the sandbox's user namespace; a package with files of other owners
# refused before dpkg runs; the manifest; the refusals.
#
# Once per file: a small Debian image made of the host's own apt, dpkg
# and tools (install-aptroot.bash), and a local apt repository (dpkg-deb
# --build, dpkg-scanpackages, a Release file) served on 127.0.0.1 by
# install-registry.py (as uid 65533 when root) under the name apt.sbx.test,
# which only the agent's `resolve` maps there.  No test needs the internet.
# As uid 65534 (the unprivileged pass) every case runs but the one with a
# subordinate range: nobody has none, so its refusal is checked instead.
# sbx-test: unprivileged

load lib
load proxy
load install
bats_require_minimum_version 1.5.0

setup_file() {
	export APT_FX=
	command -v dpkg-deb >/dev/null 2>&1 && command -v ar >/dev/null 2>&1 &&
	    command -v dpkg-scanpackages >/dev/null 2>&1 &&
	    command -v apt-get >/dev/null 2>&1 && [ -x "$PY" ] || return 0
	APT_FX=$(mktemp -d /tmp/sbx-aptfx.XXXXXX)
	chmod 0755 "$APT_FX"
	local p=$APT_FX/pk r=$APT_FX/repo f
	mkdir -p "$p/hello/DEBIAN" "$p/hello/usr/bin" "$p/owned/DEBIAN" \
	    "$p/owned/usr/share/sbx-owned" "$r/pool"
	printf '%s\n' 'Package: sbx-hello' 'Version: 1.0' 'Architecture: all' \
	    'Maintainer: sbx tests <t@sbx.test>' \
	    'Description: a test package with a postinst' \
	    > "$p/hello/DEBIAN/control"
	printf '#!/bin/sh\necho hello from sbx-hello\n' > "$p/hello/usr/bin/sbx-hello"
	printf '#!/bin/sh\nset -e\n[ "$1" != configure ] || { mkdir -p /var/lib/sbx-hello; id -u > /var/lib/sbx-hello/postinst; }\n' \
	    > "$p/hello/DEBIAN/postinst"
	chmod 0755 "$p/hello/usr/bin/sbx-hello" "$p/hello/DEBIAN/postinst"
	sed 's/sbx-hello/sbx-owned/; s/with a postinst/with files of user man/' \
	    "$p/hello/DEBIAN/control" > "$p/owned/DEBIAN/control"
	echo data > "$p/owned/usr/share/sbx-owned/f"
	dpkg-deb --root-owner-group --build "$p/hello" \
	    "$r/pool/sbx-hello_1.0_all.deb" >/dev/null
	# dpkg-deb takes owners from the files, which only root may set:
	# sbx-owned is put together by hand (ar of debian-binary and the
	# control and data tarballs), usr/share/sbx-owned owned by 6:12.
	(cd "$p/owned" &&
	    tar --owner=0 --group=0 --numeric-owner -czf ../control.tar.gz \
		-C DEBIAN ./control &&
	    tar --owner=0 --group=0 --numeric-owner --no-recursion \
		-cf ../data.tar ./ ./usr ./usr/share &&
	    tar --owner=6 --group=12 --numeric-owner -rf ../data.tar \
		./usr/share/sbx-owned &&
	    gzip -n ../data.tar && echo 2.0 > ../debian-binary &&
	    cd .. && ar rc "$r/pool/sbx-owned_1.0_all.deb" debian-binary \
		control.tar.gz data.tar.gz)
	(cd "$r" && dpkg-scanpackages pool /dev/null 2>/dev/null > Packages &&
	    gzip -k Packages &&
	    { printf 'Origin: sbx\nLabel: sbx\nSuite: stable\nCodename: sbx\n'
	      printf 'Architectures: all amd64\nSHA256:\n'
	      for f in Packages Packages.gz; do
		printf ' %s %s %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" \
		    "$(stat -c %s "$f")" "$f"
	      done; } > Release)
	chmod -R a+rX "$APT_FX"
	: > "$APT_FX/req.log"
	chmod 0666 "$APT_FX/req.log"
	as_server "$PY" \
	    "$(server_script "$APT_FX")" "$r" "$APT_FX/req.log" \
	    > "$APT_FX/port" 2> "$APT_FX/server.err" 3>&- &
	echo "$!" > "$APT_FX/server.pid"
	export APT_PORT
	APT_PORT=$(wait_line "$APT_FX/port")
	sh "$BATS_TEST_DIRNAME/install-aptroot.bash" "$APT_FX/root"
	echo "deb [trusted=yes] http://apt.sbx.test:$APT_PORT/ ./" \
	    > "$APT_FX/root/etc/apt/sources.list"
	tar -C "$APT_FX/root" -cf "$APT_FX/image.tar" .
	rm -rf "$APT_FX/root" "$APT_FX/pk"
}

teardown_file() {
	[ -n "${APT_FX:-}" ] || return 0
	kill -TERM "$(cat "$APT_FX/server.pid")" 2>/dev/null
	rm -rf "$APT_FX"
}

# host_state: what of the host a test here must leave as it found it, and
# may assert no more of than that: the system user sbx (root's `sbx
# provision` creates it, so a machine where sbx was ever used as root has
# one before the run) and the paths a test package would reach if an
# install escaped the agent's copy.  1011 runs this file with an sbx user.
host_state() {
	getent passwd sbx
	stat -c '%n %i %s %Y' /usr/bin/sbx-hello /etc/sbx-hello
	return 0
} 2>/dev/null

setup() {
	[ -n "$APT_FX" ] && [ -n "$APT_PORT" ] ||
	    skip "needs python3, apt-get, ar, dpkg-deb and dpkg-scanpackages (a Debian host)"
	HOST_BEFORE=$(host_state)
	proxy_setup
}
teardown() { proxy_teardown; }

# apt_agent A [--own-rootfs] [JSON]: the test image added, the agent bound to it
# (with its own copy when --own-rootfs), apt.sbx.test resolved to the server.
apt_agent() {
	local a=$1 env=${2:-} extra=${3:-"{}"}
	sbx provision image add "$APT_FX/image.tar" --name debmini -q \
	    --sha256 "$(sha256sum "$APT_FX/image.tar" | cut -d' ' -f1)" ||
	    return 1
	# shellcheck disable=SC2086
	sbx provision --agent "$a" --image debmini $env -q || return 1
	mkdir -p "$SBX_HOME/config/agents"
	jq -n '{proxy: {idle_exit_s: 60}}' > "$SBX_HOME/config/sandbox.json"
	jq -n --argjson port "$APT_PORT" --argjson x "$extra" '
	    {allow_private: true, allowed_ports: [80, 443, $port],
	     resolve: {"apt.sbx.test": "127.0.0.1"}} + $x' \
	    > "$SBX_HOME/config/agents/$a.json"
}

template() { ls -d "$SBX_HOME"/images/*/rootfs; }

@test "apt: the package installs into the agent's copy (postinst as uid 0 inside) and runs in the next exec" {
	apt_agent alice --own-rootfs
	run -0 sbx install --agent alice --manager apt --json -v sbx-hello
	echo "$output"
	env_json=$(printf '%s\n' "$output" | grep '^{' | tail -n 1)
	[ "$(json_get "$env_json" .ok)" = true ]
	[ "$(json_get "$env_json" .result.manager)" = apt ]
	[ "$(json_get "$env_json" '.result.installed | join(",")')" = sbx-hello ]
	[ "$(json_get "$env_json" .result.retried)" = false ]
	# The bwrap line: uid 0 inside, the copy bound read-write as /,
	# seccomp on, and no home, output or workdir bound.
	line=$(printf '%s\n' "$output" | grep 'sbx-install: .*bwrap' | head -n 1)
	[[ $line == *"--uid 0 --gid 0 --bind $SBX_HOME/envs/alice/rootfs /"* ]]
	[[ $line == *"--seccomp"* ]]
	[[ $line != *"/workspace/agents"* ]]
	[[ $line != *"/output"* ]]
	run -0 sbx exec --agent alice -- sh -c 'sbx-hello; cat /var/lib/sbx-hello/postinst'
	[ "${lines[0]}" = "hello from sbx-hello" ]
	[ "${lines[1]}" = 0 ]
	# uid 0 inside is the sandbox uid on disk, never host root.
	f=$SBX_HOME/envs/alice/rootfs/var/lib/sbx-hello/postinst
	[ "$(stat -c %u "$f")" = "$(sandbox_uid)" ]
	[ "$(stat -c %u "$f")" != 0 ]
	# Ordinary runs see the copy read-only.
	run sbx exec --agent alice -- touch /usr/bin/x
	[ "$status" -ne 0 ]
	[[ $output == *"Read-only"* ]]
	# The manifest; the template (shared by every agent of the image)
	# is untouched.
	[ "$(jq -r '.apt | join(",")' "$SBX_HOME/agents/alice/installed-packages.json")" = sbx-hello ]
	[ ! -e "$(template)/usr/bin/sbx-hello" ]
	grep -q '^GET /pool/sbx-hello_1.0_all.deb' "$APT_FX/req.log"
	# Nothing reached the host: no sbx-hello there, no sbx user made
	# (or changed).
	[ "$(host_state)" = "$HOST_BEFORE" ]
}

# subids_free: would root's default subordinate range be had (no entry of
# /etc/subuid or /etc/subgid overlaps it)?
subids_free() {
	# A missing file is an empty one (awk would fail on it, and the
	# test take the wrong branch).
	cat /etc/subuid /etc/subgid 2>/dev/null |
	    awk -F: -v b=1879048192 -v c=65536 '$2 < b + c && b < $2 + $3 { x = 1 }
	    END { exit x }'
}

@test "apt: a package with files of other owners: installed with a subordinate range, else refused before dpkg" {
	apt_agent alice --own-rootfs
	if is_root && subids_free; then
		# uid 0 inside is the sandbox uid; ids 1..65536 inside are
		# the range from 1879048192 (inside N: 1879048192 + N - 1).
		run -0 sbx install --agent alice --manager apt --json -v sbx-owned
		echo "$output"
		line=$(printf '%s\n' "$output" | grep 'sbx-install: .*bwrap' | head -n 1)
		[[ $line == *"--userns "* ]]
		[[ $line != *"--unshare-user"* ]]
		[[ $line == *"--cap-add CAP_CHOWN"* ]]
		[[ $line == *"--seccomp"* ]]
		f=$SBX_HOME/envs/alice/rootfs/usr/share/sbx-owned/f
		[ "$(stat -c '%u:%g' "$f")" = "$((1879048192 + 5)):$((1879048192 + 11))" ]
		# The package's own files and its dpkg record; root's files
		# stay the sandbox uid's, never host root's.
		[ "$(stat -c %u "$SBX_HOME/envs/alice/rootfs/var/lib/dpkg/status")" = "$(sandbox_uid)" ]
		[ "$(find "$SBX_HOME/envs/alice/rootfs" -uid 0 | wc -l)" = 0 ]
		# Inside the next install run the owners read 6 and 12.
		run -0 sbx install --agent alice --manager apt -q sbx-hello
		# The agent's ordinary view: read-only, the file readable,
		# its owner not the agent.
		run -0 sbx exec --agent alice -- sh -c 'cat /usr/share/sbx-owned/f; stat -c %u /usr/share/sbx-owned/f; id -u'
		echo "$output"
		[ "${lines[0]}" = data ]
		[ "${lines[1]}" = 6 ]
		[ "${lines[2]}" = "$(sandbox_uid)" ]
		run sbx exec --agent alice -- sh -c 'echo x > /usr/share/sbx-owned/f'
		[ "$status" -ne 0 ]
		[ "$(jq -r '.apt | join(",")' "$SBX_HOME/agents/alice/installed-packages.json")" = "sbx-hello,sbx-owned" ]
		[ "$(host_state)" = "$HOST_BEFORE" ]
		return 0
	fi
	# No subordinate range (not root and no /etc/subuid entry, or the
	# default range taken): refused with the reason before dpkg runs.
	run sbx install --agent alice --manager apt --json sbx-owned
	status_is_kind
	echo "$output"
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = foreign_owner ]
	[[ $(json_get "$output" .message) == *"subordinate"* ]]
	[[ $(json_get "$output" .hint) == *"add-subuids"* ]]
	[ "$(json_get "$output" '.result.installed | length')" = 0 ]
	[[ $(json_get "$output" .result.log_tail) == *"6/12"*"usr/share/sbx-owned"* ]]
	run -0 sbx exec --agent alice -- sh -c 'dpkg-query -W sbx-owned || echo absent; ls /usr/share/sbx-owned || true'
	[[ $output == *absent* ]]
	[[ $output != *"/f"* ]]
	[ "$(jq -r '.apt | length' "$SBX_HOME/agents/alice/installed-packages.json" 2>/dev/null || echo 0)" = 0 ]
	run -0 sbx install --agent alice --manager apt -q sbx-hello
	run -0 sbx exec --agent alice -- sbx-hello
}

@test "apt: an unprivileged user with /etc/subuid and /etc/subgid entries: newuidmap maps the range, the package installs" {
	is_root || skip "binds a test /etc/subuid and /etc/subgid in a private mount namespace, which needs root (the unprivileged pass checks the refusal without a range)"
	[ -x /usr/bin/newuidmap ] && [ -x /usr/bin/newgidmap ] ||
	    skip "newuidmap and newgidmap (package uidmap) are not installed"
	command -v unshare >/dev/null 2>&1 || skip "unshare is not installed"
	[ -f /etc/subuid ] && [ -f /etc/subgid ] ||
	    skip "no /etc/subuid or /etc/subgid to bind a test copy over"
	before=$(cat /etc/subuid /etc/subgid | cksum)
	# As nobody, in a private mount namespace where nobody owns
	# 1879048192..+65535: its own build copy, state root and image.
	nb=$TEST_ROOT/nb
	[ -n "$TEST_ROOT" ] && mkdir -p "$nb/build" "$nb/home"
	cp -a "$SBX_TEST_BUILD/bin" "$SBX_TEST_BUILD/libexec" "$nb/build/"
	cp "$APT_FX/image.tar" "$nb/"
	echo nobody:1879048192:65536 > "$nb/subuid"
	echo nobody:1879048192:65536 > "$nb/subgid"
	cat > "$nb/run.sh" <<'EOF'
set -u
export SBX_HOME=$HOME/state SBX_EXEC_PATH=$NB/build/libexec/sbx
sbx=$NB/build/bin/sbx
$sbx provision image add "$NB/image.tar" --name debmini -q --sha256 "$SHA" &&
    $sbx provision --agent alice --image debmini --own-rootfs -q || exit 1
mkdir -p "$SBX_HOME/config/agents"
echo '{"proxy": {"idle_exit_s": 60}}' > "$SBX_HOME/config/sandbox.json"
printf '{"allow_private": true, "allowed_ports": [80, 443, %s], "resolve": {"apt.sbx.test": "127.0.0.1"}}\n' \
    "$APT_PORT" > "$SBX_HOME/config/agents/alice.json"
rc=0
$sbx install --agent alice --manager apt --json -v sbx-owned 2>&1 || rc=$?
echo "owner $(stat -c %u:%g "$SBX_HOME/envs/alice/rootfs/usr/share/sbx-owned/f")"
echo "read $($sbx exec --agent alice -- sh -c 'cat /usr/share/sbx-owned/f; stat -c %u:%g /usr/share/sbx-owned/f' | tr '\n' ' ')"
$sbx proxy stop >/dev/null 2>&1
exit "$rc"
EOF
	chmod -R a+rX "$nb"
	chown 65534:65534 "$nb/home"
	run unshare -m --propagation private sh -c '
	    mount --bind "$1/subuid" /etc/subuid &&
	    mount --bind "$1/subgid" /etc/subgid &&
	    exec setpriv --reuid 65534 --regid 65534 --clear-groups env -i \
		PATH=/usr/local/bin:/usr/bin:/bin HOME="$1/home" NB="$1" \
		SHA="$2" APT_PORT="$3" SBX_TEST_RUN="${SBX_TEST_RUN:-}" \
		bash "$1/run.sh"' sh "$nb" \
	    "$(sha256sum "$APT_FX/image.tar" | cut -d' ' -f1)" "$APT_PORT"
	echo "$output"
	[ "$status" -eq 0 ]
	# The range through newuidmap: inside 6:12 is 1879048192 + 5 and + 11.
	[[ $output == *"--userns "* ]]
	[[ $output == *"owner $((1879048192 + 5)):$((1879048192 + 11))"* ]]
	# The ordinary view maps the range too: the owners read 6:12.
	[[ $output == *"read data 6:12 "* ]]
	# The host's files are as they were.
	[ "$(cat /etc/subuid /etc/subgid | cksum)" = "$before" ]
}

@test "apt: without a copy of its own, rejected no_writable_rootfs with the provision command" {
	apt_agent bob
	n=$(wc -l < "$APT_FX/req.log")
	run sbx install --agent bob --manager apt --json sbx-hello
	status_is_kind
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .reason)" = no_writable_rootfs ]
	[[ $(json_get "$output" .hint) == *"--own-rootfs"* ]]
	[ "$(wc -l < "$APT_FX/req.log")" = "$n" ]
	[ ! -e "$SBX_HOME/envs/bob" ]
}

@test "apt: an unknown package is classified package_not_found, not retried" {
	apt_agent alice --own-rootfs
	run sbx install --agent alice --manager apt --json sbx-nothere
	status_is_kind
	[ "$(json_get "$output" .kind)" = execution_error ]
	[ "$(json_get "$output" .reason)" = package_not_found ]
	[ "$(json_get "$output" .result.retried)" = false ]
}

@test "apt: a source the policy refuses is rejected before anything runs" {
	apt_agent alice --own-rootfs '{"allowed_ports": [80, 443]}'
	n=$(wc -l < "$APT_FX/req.log")
	run sbx install --agent alice --manager apt --json sbx-hello
	status_is_kind
	echo "$output"
	[ "$(json_get "$output" .kind)" = rejected ]
	[ "$(json_get "$output" .field)" = registry ]
	[[ $(json_get "$output" .hint) == *"allowed_ports $APT_PORT"* ]]
	[ "$(wc -l < "$APT_FX/req.log")" = "$n" ]
	# install.registries.apt overrides the image's sources.
	jq -n '{install: {registries: {apt: ["http://mirror.sbx.test/debian"]}}}' \
	    > "$SBX_HOME/config/sandbox.json"
	run sbx install --agent alice --manager apt --json sbx-hello
	status_is_kind
	[[ $(json_get "$output" .message) == *mirror.sbx.test* ]]
}

@test "apt: every source host of the copy is judged before apt runs; the refused ones are named at once" {
	apt_agent alice --own-rootfs '{"allowed_ports": [80, 443]}'
	# Two mirrors on a private and a reserved address, reached through
	# the test DNS stub (never dialled: the install stops before).
	start_dns_stub deb.sbx.test=10.20.0.7 sec.sbx.test=198.18.0.9
	jq -n --arg dns "127.0.0.1:$DNS_PORT" '{proxy: {dns_server: $dns}}' \
	    > "$SBX_HOME/config/sandbox.json"
	jq -n '{allowed_ports: [80, 443]}' > "$SBX_HOME/config/agents/alice.json"
	r=$SBX_HOME/envs/alice/rootfs/etc/apt
	echo "deb [trusted=yes] http://deb.sbx.test/debian ./" > "$r/sources.list"
	mkdir -p "$r/sources.list.d"
	printf 'Types: deb\nURIs: http://sec.sbx.test/debian-security\nSuites: ./\n' \
	    > "$r/sources.list.d/security.sources"
	n=$(wc -l < "$APT_FX/req.log")
	run sbx install --agent alice --manager apt --json sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .kind)" = rejected ]
	[[ $(json_get "$output" .message) == *"refuses 2 registries: deb.sbx.test:80 (its address 10.20.0.7 is private_address), sec.sbx.test:80 (its address 198.18.0.9 is reserved_address)"* ]]
	[ "$(json_get "$output" .hint)" = "sbx config add allow_private_domains deb.sbx.test sec.sbx.test --agent alice" ]
	[ "$(wc -l < "$APT_FX/req.log")" = "$n" ]
	# sbx proxy check, as the install run: the same answer.
	run -1 sbx proxy check --agent alice --install apt --resolve deb.sbx.test:80
	[[ $output == *"deny deb.sbx.test:80 (private_address 10.20.0.7"* ]]
	sbx config add allow_private_domains deb.sbx.test sec.sbx.test --agent alice
	run -0 sbx proxy check --agent alice --install apt --resolve sec.sbx.test:80
	[[ $output == *"allowed by allow_private_domains sec.sbx.test"* ]]
}

@test "apt: reconcile fills apt from dpkg-query; list shows it" {
	apt_agent alice --own-rootfs
	run -0 sbx install --agent alice --manager apt -q sbx-hello
	echo '{"apt":[],"npm":[],"pip":[]}' > "$SBX_HOME/agents/alice/installed-packages.json"
	run -0 sbx install reconcile --agent alice --json
	echo "$output"
	[ "$(json_get "$output" '.result.packages.apt | join(",")')" = "sbx-base,sbx-hello" ]
	run -0 sbx install list --agent alice
	[[ $output == *"apt	sbx-hello"* ]]
}

@test "apt: a copy whose mount points are symlinks is refused before bwrap runs" {
	apt_agent alice --own-rootfs
	r=$SBX_HOME/envs/alice/rootfs
	rmdir "$r/tmp"
	ln -s /etc "$r/tmp"
	run sbx install --agent alice --manager apt --json sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = rootfs_unsafe ]
	[ "$(host_state)" = "$HOST_BEFORE" ]
	[ -L "$r/tmp" ]
}

# apt_server SPEC: a second server of the same repository with injected
# failures, the agent's copy pointed at it.
apt_server() {
	as_server "$PY" \
	    "$(server_script "$TEST_ROOT")" "$APT_FX/repo" \
	    "$TEST_ROOT/req2.log" "$1" > "$TEST_ROOT/port2" \
	    2> "$TEST_ROOT/server2.err" 3>&- &
	SERVER_PIDS+=("$!")
	: > "$TEST_ROOT/req2.log"
	chmod 0666 "$TEST_ROOT/req2.log"
	P2=$(wait_line "$TEST_ROOT/port2")
	echo "deb [trusted=yes] http://apt.sbx.test:$P2/ ./" \
	    > "$SBX_HOME/envs/alice/rootfs/etc/apt/sources.list"
	jq --argjson p "$P2" '.allowed_ports += [$p]' \
	    "$SBX_HOME/config/agents/alice.json" > "$TEST_ROOT/a.json"
	mv "$TEST_ROOT/a.json" "$SBX_HOME/config/agents/alice.json"
}

@test "apt: Hash Sum mismatch once -> apt-get clean and update, one retry, installed" {
	apt_agent alice --own-rootfs
	apt_server apt-hash:1
	run -0 sbx install --agent alice --manager apt --json sbx-hello
	echo "$output"
	[ "$(json_get "$output" .result.retried)" = true ]
	[ "$(grep -c '^GET /pool/sbx-hello_1.0_all.deb' "$TEST_ROOT/req2.log")" = 2 ]
	run -0 sbx exec --agent alice -- sbx-hello
}

@test "apt: a persistent Hash Sum mismatch is classified network, retried once only" {
	apt_agent alice --own-rootfs
	apt_server apt-hash:99
	run sbx install --agent alice --manager apt --json sbx-hello
	echo "$output"
	status_is_kind
	[ "$(json_get "$output" .reason)" = network ]
	[ "$(json_get "$output" .retried)" = true ]
	[ "$(json_get "$output" .retryable)" = true ]
	[ "$(grep -c '^GET /pool/sbx-hello_1.0_all.deb' "$TEST_ROOT/req2.log")" = 2 ]
	run -0 sbx exec --agent alice -- sh -c 'test -e /usr/bin/sbx-hello && echo yes || echo no'
	[ "$output" = no ]
}

@test "apt: the same agent twice at once serialises on the copy's lock; both install" {
	apt_agent alice --own-rootfs
	sbx install --agent alice --manager apt -q sbx-hello \
	    > "$TEST_ROOT/a.out" 2>&1 &
	p1=$!
	sbx install --agent alice --manager apt -q sbx-hello \
	    > "$TEST_ROOT/b.out" 2>&1 &
	p2=$!
	wait "$p1" || { cat "$TEST_ROOT/a.out"; false; }
	wait "$p2" || { cat "$TEST_ROOT/b.out"; false; }
	run -0 sbx exec --agent alice -- sbx-hello
}

@test "apt: kill -9 during an install; the next install works" {
	apt_agent alice --own-rootfs
	n=$(wc -l < "$APT_FX/req.log")
	sbx install --agent alice --manager apt -q sbx-hello \
	    > "$TEST_ROOT/k.out" 2>&1 &
	p=$!
	for _ in $(seq 200); do
		[ "$(wc -l < "$APT_FX/req.log")" -gt "$n" ] && break
		sleep 0.05
	done
	kill -KILL "$p"
	wait "$p" || true
	run -0 sbx install --agent alice --manager apt --json sbx-hello
	run -0 sbx exec --agent alice -- sbx-hello
	# Nothing of the killed run is left: no sandbox of this state root.
	run ! pgrep -f "$SBX_HOME/envs/alice/rootfs"
}
