#!/usr/bin/env bats
# sbx exec: filesystem and visibility isolation (HOSTILE-CASES FS-01, FS-02,
# FS-03, FS-07, FS-08, FS-10, FS-12, FS-13, FS-14; SK-07 through /proc/keys)
# and hostile --cwd values.
#
# Method (HOSTILE-CASES §0.6): assert on what did *not* happen on the host,
# not only on the error message inside.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	# A name no other test (or concurrent run) uses.
	TOK="sbx-iso-$$-$RANDOM$RANDOM"
	HOSTPIDS=()
}

teardown() {
	local p
	for p in "${HOSTPIDS[@]}"; do
		kill -KILL "$p" 2>/dev/null
		wait "$p" 2>/dev/null
	done
	# If a test failed because a write escaped, do not leave it behind.
	rm -f "/etc/$TOK" "/usr/$TOK" "/opt/$TOK" "/var/tmp/$TOK" \
	    "/tmp/$TOK" "/$TOK" 2>/dev/null
	sbx_teardown
}

# Paths that must be absent inside the sandbox (ENOENT, not EACCES).
not_visible_script='
for p; do
	if ls -d -- "$p" >/dev/null 2>/tmp/err; then
		echo "VISIBLE $p"
	elif ! grep -q "No such file or directory" /tmp/err; then
		echo "NOT-ENOENT $p: $(cat /tmp/err)"
	fi
done
true'

@test "FS-01: writes outside the home fail and the host is unchanged" {
	sbx exec --agent b -- true
	sbx exec -- true
	B="$SBX_HOME/workspace/agents/b"
	targets=(
		"/etc/$TOK" "/usr/$TOK" "/opt/$TOK" "/var/tmp/$TOK" "/$TOK"
		"$HOME/$TOK" "$SBX_HOME/$TOK" "$B/$TOK"
		"/workspace/agents/b/$TOK" "/workspace/$TOK"
		"/workspace/agents/default/../$TOK"
		"/run/$TOK" "/run/sbx/$TOK" "/dev/$TOK" "/proc/$TOK"
		"/tmp/$TOK"
	)
	run sbx exec -q -- sh -c 'for p; do (: > "$p") 2>/dev/null &&
	    echo "WROTE $p"; done; true' sh "${targets[@]}"
	[ "$status" -eq 0 ]
	# Only the private /tmp (a tmpfs of the sandbox) is writable.
	[ "$output" = "WROTE /tmp/$TOK" ]
	for p in "/etc/$TOK" "/usr/$TOK" "/opt/$TOK" "/var/tmp/$TOK" \
	    "/$TOK" "$HOME/$TOK" "$SBX_HOME/$TOK" "$B/$TOK" \
	    "$SBX_HOME/workspace/$TOK" "$SBX_HOME/workspace/agents/$TOK" \
	    "/tmp/$TOK"; do
		if [ -e "$p" ]; then
			echo "host path created: $p"
			return 1
		fi
	done
	# Agent b's home is still empty.
	[ -z "$(ls -A "$B")" ]
}

@test "FS-02: the user's home, /root, the state root and other agents' homes are not visible" {
	sbx exec --agent b -- true
	echo canary > "$HOME/canary"
	echo canary-b > "$SBX_HOME/workspace/agents/b/canary"
	run sbx exec -q -- sh -c "$not_visible_script" sh \
	    "$HOME" "$HOME/canary" /root "$SBX_HOME" \
	    "$SBX_HOME/workspace/agents/b" "$TEST_ROOT" \
	    /workspace/agents/b /workspace/agents/b/canary \
	    /var/run/docker.sock /run/docker.sock /home /var/tmp \
	    /tmp/.X11-unix /run/user
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# Only this agent's home is under /workspace/agents.
	run sbx exec -q -- ls -A /workspace/agents
	[ "$status" -eq 0 ]
	[ "$output" = default ]
}

@test "FS-03: a symlink planted from the host pointing to /etc cannot be written through" {
	sbx exec -- true
	ln -s /etc "$WS/etcl"
	ln -s "/etc/$TOK" "$WS/f"
	ln -s "$HOME" "$WS/homel"
	echo canary > "$HOME/canary"
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		echo pwn > ~/etcl/'"$TOK"' 2>/dev/null && echo "WROTE etcl"
		echo pwn > ~/f 2>/dev/null && echo "WROTE f"
		cat ~/homel/canary 2>/dev/null && echo "READ homel"
		echo pwn > ~/homel/'"$TOK"' 2>/dev/null && echo "WROTE homel"
		true'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "/etc/$TOK" ]
	[ ! -e "$HOME/$TOK" ]
	[ "$(cat "$HOME/canary")" = canary ]
	# The planted links are left as they are (not followed or replaced).
	[ "$(readlink "$WS/etcl")" = /etc ]
	[ "$(readlink "$WS/f")" = "/etc/$TOK" ]
}

@test "FS-03: a symlink made inside pointing to /etc cannot be written through" {
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		ln -sfn /etc ~/out && echo pwn > ~/out/'"$TOK"' 2>/dev/null &&
		    echo "WROTE out"
		ln -sf /etc/'"$TOK"' ~/g && echo pwn > ~/g 2>/dev/null &&
		    echo "WROTE g"
		ln -sfn / ~/root && echo pwn > ~/root/'"$TOK"' &&
		    echo "WROTE root"
		true'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "/etc/$TOK" ]
	[ ! -e "/$TOK" ]
}

@test "a symlink planted in the state root never redirects sbx (method 0.2)" {
	echo canary > "$HOME/canary"
	for rel in workspace/agents/default output/default agents/default/jobs \
	    workspace; do
		rm -rf "$SBX_HOME"
		mkdir -p "$SBX_HOME/$(dirname "$rel")"
		ln -s "$HOME" "$SBX_HOME/$rel"
		run sbx exec --json --background -- touch marker
		status_is_kind
		echo "$rel: $output"
		printf '%s' "$output" | jq -e '.ok == false and
		    .reason == "symlink_in_path"' >/dev/null
		[ "$(ls -A "$HOME")" = canary ]
		[ "$(readlink "$SBX_HOME/$rel")" = "$HOME" ]
	done
}

@test "FS-07: a hard link to a file outside the home cannot be made" {
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		ln /etc/passwd ~/h1 2>/dev/null && echo "LINKED h1"
		ln /usr/bin/env ~/h2 2>/dev/null && echo "LINKED h2"
		ln /run/sbx/init ~/h3 2>/dev/null && echo "LINKED h3"
		true'
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	[ ! -e "$WS/h1" ]
	[ ! -e "$WS/h2" ]
	[ ! -e "$WS/h3" ]
}

@test "FS-08: /proc shows only the sandbox's processes and pid 1 is sbx-init" {
	# A host process the sandbox must not see.
	sleep 4242$RANDOM &
	HOSTPIDS+=("$!")
	run sbx exec -q -- sh -c '
		n=0; for d in /proc/[0-9]*; do n=$((n+1)); done; echo "$n"
		tr "\0" "\n" < /proc/1/cmdline | head -n 1
		cat /proc/[0-9]*/cmdline 2>/dev/null | tr "\0" "\n" |
		    grep -c "^sleep 4242" || true'
	[ "$status" -eq 0 ]
	# sbx-init, sh, and the commands of the pipeline: a handful.
	[ "${lines[0]}" -le 8 ]
	[[ "${lines[1]}" == /run/sbx/init* || "${lines[1]}" == *sbx-init* ]]
	[ "${lines[2]}" = 0 ]
}

@test "FS-08: sbx-init, run from a descriptor, leaves the command no way to it" {
	# sbx-init is executed from the descriptor sbx opened, nothing is
	# mounted for it: the command holds no descriptor but 0-2, and
	# pid 1's exe link, fds and memory (its host path, its channels to
	# sbx) are closed to it; pid 1 still calls itself /run/sbx/init.
	run sbx exec -q -- sh -c '
		ls /proc/self/fd | tr "\n" " "; echo
		readlink /proc/1/exe >/dev/null 2>&1 && echo "EXE readable"
		cat /proc/1/exe >/dev/null 2>&1 && echo "EXE opened"
		ls /proc/1/fd >/dev/null 2>&1 && echo "FDS listed"
		head -c1 /proc/1/mem >/dev/null 2>&1 && echo "MEM read"
		ln /proc/1/exe ~/h4 2>/dev/null && echo "LINKED h4"
		cat /proc/1/comm
		tr "\0" "\n" < /proc/1/cmdline | head -n 1'
	[ "$status" -eq 0 ]
	# ls's own directory descriptor is the one above 2.
	[ "${lines[0]}" = "0 1 2 3 " ]
	[ "${lines[1]}" = init ]
	[ "${lines[2]}" = /run/sbx/init ]
	[ "${#lines[@]}" -eq 3 ]
	[ ! -e "$WS/h4" ]
}

@test "FS-08: no host process environment and no host variable is visible" {
	export SBX_CANARY="canary-$TOK"
	# A host process carrying the canary in its environment.
	env SBX_CANARY="canary-$TOK" sleep 4343$RANDOM &
	HOSTPIDS+=("$!")
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		env | grep -c "'"$TOK"'"
		cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" |
		    grep -c "'"$TOK"'"
		true'
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = 0 ]
	[ "${lines[1]}" = 0 ]
	run sbx exec -q -- env
	[ "$status" -eq 0 ]
	[[ "$output" != *SBX_CANARY* ]]
	[[ "$output" != *"$TOK"* ]]
}

@test "FS-10: nested namespaces and mounts fail; no mount is shared" {
	command -v unshare >/dev/null || skip "unshare is not installed"
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		unshare -Urm true 2>/dev/null && echo "UNSHARED"
		mkdir -p ~/m
		mount -t tmpfs t ~/m 2>/dev/null && echo "MOUNTED"
		mount --bind / ~/m 2>/dev/null && echo "BOUND"
		grep -c "shared:" /proc/self/mountinfo || true'
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
}

@test "FS-12: no new privileges, no capabilities, a setuid copy grants nothing" {
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		grep -E "^(NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb):" /proc/self/status
		grep " /workspace/agents/default " /proc/self/mountinfo |
		    grep -c nosuid
		cp /bin/sh ~/s && chmod 4755 ~/s
		echo "uid $(id -u) $(~/s -c "id -u")"
		if command -v setcap >/dev/null; then
			setcap cap_setuid+ep ~/s 2>/dev/null && echo "SETCAP"
		fi
		true'
	[ "$status" -eq 0 ]
	[[ "$output" == *$'NoNewPrivs:\t1'* ]]
	[[ "$output" == *$'CapEff:\t0000000000000000'* ]]
	[[ "$output" == *$'CapPrm:\t0000000000000000'* ]]
	[[ "$output" == *$'CapBnd:\t0000000000000000'* ]]
	[[ "$output" != *SETCAP* ]]
	# The home is mounted nosuid.
	printf '%s\n' "$output" | grep -qx 1
	uidline=$(printf '%s\n' "$output" | grep '^uid ')
	read -r _ inner viaset <<<"$uidline"
	[ "$inner" = "$viaset" ]
	if command -v getcap >/dev/null; then
		[ -z "$(getcap "$WS/s" 2>/dev/null)" ]
	fi
}

@test "FS-12: a setuid file made in the workdir is no setuid-root binary on the host" {
	proj="$TEST_ROOT/proj"
	mkdir -m 0755 "$proj"
	run sbx exec --workdir "$proj" -- sh -c \
	    'cp /bin/sh ./s 2>/dev/null && chmod 4755 ./s 2>/dev/null; true'
	[ "$status" -eq 0 ]
	[ -e "$proj/s" ] || return 0
	owner=$(stat -c %u "$proj/s")
	mode=$(stat -c %a "$proj/s")
	echo "host: $proj/s owner uid $owner mode $mode"
	# BUG: when sbx runs as root, the sandbox user is host uid 0 (bwrap
	# maps 0 to 0), so code inside can leave a setuid-root shell in a
	# world-reachable --workdir (or the home) that any local user can run
	# on the host.  As an unprivileged caller the file is owned by that
	# user and the bit grants nothing.
	! { [ "$owner" -eq 0 ] && [ $((8#$mode & 8#4000)) -ne 0 ]; }
}

@test "FS-13: /dev holds only the minimal set and mknod fails" {
	run sbx exec -q -- ls -A /dev
	[ "$status" -eq 0 ]
	# `core` is bubblewrap's symlink to /proc/kcore (unreadable).
	allowed=" core fd full null ptmx pts random shm stderr stdin stdout tty urandom zero "
	for d in $output; do
		if [[ "$allowed" != *" $d "* ]]; then
			echo "unexpected /dev entry: $d"
			return 1
		fi
	done
	run sbx exec -q -- sh -c 'exec 2>/dev/null
		mknod ~/mem c 1 1 2>/dev/null && echo "MKNOD mem"
		mknod /tmp/sda b 8 0 2>/dev/null && echo "MKNOD sda"
		mknod /dev/shm/kmsg c 1 11 2>/dev/null && echo "MKNOD kmsg"
		head -c1 /dev/core 2>/dev/null | wc -c'
	[ "$status" -eq 0 ]
	[ "$output" = 0 ]
	[ ! -e "$WS/mem" ]
}

@test "FS-14: kernel control files in /proc cannot be opened for writing" {
	[ -x "$PY" ] || skip "python3 is not installed"
	# Probe with open(O_WRONLY) and never write: should the boundary be
	# broken, an actual write would change the host kernel (a core_pattern
	# pipe runs as host root; sysrq-trigger `c` crashes the machine).
	before=$(cat /proc/sys/kernel/core_pattern)
	knobs=(
		/proc/sys/kernel/core_pattern /proc/sys/kernel/modprobe
		/proc/sysrq-trigger /proc/sys/dev/tty/legacy_tiocsti
		/proc/sys/fs/protected_symlinks /proc/sys/fs/protected_hardlinks
		/proc/sys/fs/suid_dumpable /proc/sys/kernel/randomize_va_space
		/proc/sys/kernel/unprivileged_bpf_disabled
		/proc/sys/kernel/yama/ptrace_scope
		/proc/sys/user/max_user_namespaces /proc/sys/vm/overcommit_memory
	)
	run sbx exec -q -- "$PY" -c '
import os, sys
for p in sys.argv[1:]:
    try:
        fd = os.open(p, os.O_WRONLY)
    except OSError:
        continue
    os.close(fd)
    print("WRITABLE", p)
' "${knobs[@]}"
	[ "$status" -eq 0 ]
	# BUG: when sbx runs as root, every host-global sysctl (core_pattern,
	# modprobe, legacy_tiocsti, protected_*...) is writable inside: the
	# sandbox's uid 0 is host uid 0, sysctl writes check only the file
	# owner, and /proc/sys is not made read-only.
	[ -z "$output" ]
	[ "$(cat /proc/sys/kernel/core_pattern)" = "$before" ]
}

@test "FS-14: no host-global sysctl is writable (only namespaced ones)" {
	run sbx exec -q -- sh -c 'find /proc/sys -type f -writable 2>/dev/null'
	[ "$status" -eq 0 ]
	# Per-namespace knobs (net, ipc, uts, pid, user) affect only the
	# sandbox's own namespaces.
	bad=$(printf '%s\n' "$output" | grep -v -E \
	    '^/proc/sys/(net|user|fs/mqueue)/|^/proc/sys/kernel/(hostname|domainname|auto_msgmni|msgmax|msgmnb|msgmni|msg_next_id|sem|sem_next_id|shm_next_id|shm_rmid_forced|shmall|shmmax|shmmni|ns_last_pid|pid_max)$' |
	    grep . || true)
	# BUG: as root, ~195 host-global sysctls are writable (see above).
	if [ -n "$bad" ]; then
		echo "writable host sysctls: $(printf '%s\n' "$bad" | wc -l)"
		printf '%s\n' "$bad" | head -20
		return 1
	fi
}

# ---- --cwd -------------------------------------------------------------

# cwd_rejected VALUE REASON: an invalid_args envelope for cwd, exit 65,
# nothing run.
cwd_rejected() {
	run -65 sbx exec --json --cwd "$1" -- touch "/workspace/agents/default/marker"
	echo "cwd=$1: $output"
	printf '%s' "$output" | jq -e --arg r "$2" '.ok == false and
	    .kind == "invalid_args" and .field == "cwd" and .reason == $r and
	    .retryable == false' >/dev/null
	[ ! -e "$WS/marker" ]
}

@test "--cwd: traversal, outside the home and missing directories are refused" {
	sbx exec --agent b -- true
	sbx exec -- mkdir -p sub
	cwd_rejected .. traversal
	cwd_rejected ../x traversal
	cwd_rejected ../b traversal
	cwd_rejected sub/../.. traversal
	cwd_rejected /workspace/agents/default/../b traversal
	cwd_rejected /etc outside_home
	cwd_rejected / outside_home
	cwd_rejected /workspace/agents/b outside_home
	cwd_rejected /workspace/agents/defaultx outside_home
	cwd_rejected "$HOME" outside_home
	cwd_rejected missing not_found
	cwd_rejected /workspace/agents/default/missing not_found
	# And a good one works.
	run sbx exec --json --cwd sub -- pwd
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.stdout)" = /workspace/agents/default/sub ]
}

@test "--cwd: a path through a symlink planted in the home is refused (reason symlink)" {
	sbx exec -- true
	ln -s /etc "$WS/etcl"
	mkdir "$WS/real"
	ln -s real "$WS/rel"
	cwd_rejected etcl/ssl symlink
	cwd_rejected rel/.x symlink
	# BUG: when the symlink is the last component, sbx_fs_open_beneath gets
	# ENOTDIR (O_PATH|O_DIRECTORY|O_NOFOLLOW on a symlink) and prep_cwd
	# reports the unstable reason `open_failed` instead of `symlink`
	# (it is still refused, and nothing runs).
	cwd_rejected etcl symlink
	cwd_rejected /workspace/agents/default/etcl symlink
	cwd_rejected rel symlink
}

@test "FS-14: /proc files that show host state (keys, locks, timers) are empty inside" {
	masked="/proc/keys /proc/key-users /proc/locks /proc/timer_list
	    /proc/sched_debug /proc/kcore /proc/sysrq-trigger"
	# A lock held on the host meanwhile: /proc/locks is not masked on
	# kernels that list only the sandbox's own locks (sandbox.c,
	# locks_filtered), and must not show this one.
	command -v flock >/dev/null || skip "flock is not installed"
	: >"$TEST_ROOT/held"
	flock "$TEST_ROOT/held" sleep 30 </dev/null >/dev/null 2>&1 3>&- &
	holder=$!
	for _ in $(seq 100); do
		grep -q FLOCK /proc/locks && break
		sleep 0.05
	done
	grep -q FLOCK /proc/locks
	# Each one is absent, or reads as empty: not one byte of it (and
	# not refused either, which would only hide it from this uid).
	run sbx exec -q -- sh -c '
for p; do
	if [ ! -e "$p" ]; then
		echo "$p absent"
	elif cat "$p" >/tmp/c 2>/dev/null; then
		echo "$p $(wc -c </tmp/c)"
	else
		echo "$p unreadable"
	fi
done' sh $masked
	pkill -P "$holder" sleep 2>/dev/null || true
	kill "$holder" 2>/dev/null || true
	wait "$holder" 2>/dev/null || true
	[ "$status" -eq 0 ]
	echo "$output"
	for p in $masked; do
		[[ "$output" == *"$p absent"* || "$output" == *"$p 0"* ]]
		# Absent inside only where the host has none either.
		if [[ "$output" == *"$p absent"* ]]; then
			[ ! -e "$p" ]
		fi
	done
}

@test "SK-07: a key in the caller's keyring does not show in /proc/keys inside" {
	[ -x "$PY" ] || skip "python3 is not installed"
	sbx exec -q -- true
	# The sandbox's uid: a key it owns is one /proc/keys would list.
	uid=$(sbx exec -q -- id -u)
	desc="sbx-key-$TOK"
	# add_key(2) into a fresh session keyring (gone with the process),
	# viewable by its owner and others; then run sbx from that process.
	cat > "$TEST_ROOT/key.py" <<'PYEOF'
import ctypes, os, platform, sys
nr = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine())
if nr is None:
    sys.exit(77)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
if libc.syscall(L(nr[1]), L(1), None) < 0:		# KEYCTL_JOIN_SESSION_KEYRING
    sys.exit(77)
k = libc.syscall(L(nr[0]), b"user", sys.argv[1].encode(), b"x", L(1), L(-3))
if k < 0:
    sys.exit(77)
libc.syscall(L(nr[1]), L(5), L(k), L(0x3f010101))	# KEYCTL_SETPERM
if os.getuid() != int(sys.argv[2]):			# KEYCTL_CHOWN
    libc.syscall(L(nr[1]), L(4), L(k), L(int(sys.argv[2])), L(-1))
with open("/proc/keys") as f:
    if sys.argv[1] not in f.read():
        sys.exit(77)
print("HOST-SEES-KEY", flush=True)
os.execv(sys.argv[3], sys.argv[3:])
PYEOF
	run "$PY" "$TEST_ROOT/key.py" "$desc" "$uid" "$SBX" exec -q -- \
	    sh -c 'cat /proc/keys /proc/key-users; echo END'
	[ "$status" -ne 77 ] || skip "keys (add_key, keyctl) are not usable here"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = HOST-SEES-KEY ]
	[ "${lines[1]}" = END ]
	[[ "$output" != *"$desc"* ]]
}
