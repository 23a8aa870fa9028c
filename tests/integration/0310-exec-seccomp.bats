#!/usr/bin/env bats
# sbx exec: the seccomp filter, seen through `sbx exec` itself (not raw
# bwrap: 0300-seccomp.sh covers the program on its own).
# HOSTILE-CASES SK-01, SK-03, SK-04, SK-07..SK-13, IP-04.
#
# The probe is tests/helpers/try-syscall, copied into the agent's home:
# `./try-syscall NAME` makes one call with harmless arguments and prints
# `NAME errno=N (X)` or `NAME signal=N (X)`; a kernel that runs the call
# answers EBADF, EFAULT, EINVAL and the like, the filter EPERM, ENOSYS or
# EAFNOSUPPORT, or SIGSYS.  Every probe gets stdin from /dev/null, so an
# ioctl that reaches the kernel answers ENOTTY, never EPERM.
# sbx-test: unprivileged

load lib
bats_require_minimum_version 1.5.0

setup() {
	sbx_setup
	TRY="$HELPERS/try-syscall"
	[ -x "$TRY" ] || skip "not built: make tests ($TRY)"
	# The home is created by the first run; the probe goes into it.
	"$SBX" exec -q -- true </dev/null >/dev/null 2>&1 ||
	    skip "sbx exec cannot run a sandbox here"
	cp "$TRY" "$WS/try-syscall"
}

teardown() { sbx_teardown; }

# verdict: "errno=N" or "signal=N" from a probe's output line(s).
verdict() {
	sed -n -e 's/^[^ ]* \(errno=[0-9]*\) .*/\1/p' \
	    -e 's/^[^ ]* \(signal=[0-9]*\) .*/\1/p' | head -n 1
}

# Refused by a filter, whoever it was: EPERM, ENOSYS, EAFNOSUPPORT, SIGSYS.
is_blocked() {
	case $1 in
	errno=1 | errno=38 | errno=97 | signal=31) return 0 ;;
	*) return 1 ;;
	esac
}

# What sbx's policy answers (seccomp.c): socket families
# EAFNOSUPPORT; clone3, statmount, listmount, legacy AIO and numbers above
# the last reviewed ENOSYS; a foreign ABI SIGSYS; the rest EPERM.
expected() {
	case $1 in
	socket-* | socketpair-*) echo errno=97 ;;
	clone3 | statmount | listmount | syscall-*) echo errno=38 ;;
	io_setup | io_destroy | io_submit | io_cancel | io_getevents | \
	    io_pgetevents) echo errno=38 ;;
	x32 | i386) echo signal=31 ;;
	*) echo errno=1 ;;
	esac
}

# probe NAME: one sbx exec, one call; sets $got.
probe() {
	run --separate-stderr sbx exec -- ./try-syscall "$1" </dev/null
	got=$(printf '%s\n' "$output" | verdict)
}

# A tiny BPF program that allows everything: one `ret SECCOMP_RET_ALLOW`
# (code 0x06, jt 0, jf 0, k 0x7fff0000), well-formed in size and content.
write_allow_all() { printf '\006\000\000\000\000\000\377\177' >"$1"; }

cache_file() {
	local f
	for f in "$SBX_HOME"/cache/seccomp-*.bpf; do
		[ -e "$f" ] || [ -L "$f" ] || continue
		printf '%s\n' "$f"
	done
}

# check_status TEXT: the /proc/self/status lines of a filtered process.
check_status() {
	local s=$1
	printf '%s\n' "$s" | grep -qE '^Seccomp:[[:space:]]+2$' ||
	    { echo "no Seccomp 2 in: $s"; return 1; }
	printf '%s\n' "$s" | grep -qE '^Seccomp_filters:[[:space:]]+[1-9]' ||
	    { echo "no Seccomp_filters >= 1 in: $s"; return 1; }
	printf '%s\n' "$s" | grep -qE '^NoNewPrivs:[[:space:]]+1$' ||
	    { echo "no NoNewPrivs 1 in: $s"; return 1; }
	local c
	for c in CapEff CapPrm CapBnd CapAmb; do
		printf '%s\n' "$s" | grep -qE "^$c:[[:space:]]+0+\$" ||
		    { echo "$c not 0 in: $s"; return 1; }
	done
}

STATUS_RE='^(Seccomp|Seccomp_filters|NoNewPrivs|CapEff|CapPrm|CapBnd|CapAmb):'

# ---- the policy, call by call ---------------------------------------------

@test "SK-03/07..11: every call the policy denies is refused through sbx exec" {
	local names="" n line got want bad="" i386_host seen=0
	i386_host=$("$TRY" i386 </dev/null | verdict)
	for n in $("$TRY" --list); do
		case $n in
		socket-inet | personality-ok | getpid) continue ;;
		i386) [ "$i386_host" = errno=0 ] || continue ;;
		esac
		names="$names $n"
	done
	# One sandbox runs every probe (one sbx exec per name would take
	# seconds); each probe is its own process all the same.
	run --separate-stderr sbx exec -- sh -c \
	    'for n in "$@"; do ./try-syscall "$n"; done' sh $names </dev/null
	# NAME -> verdict, parsed once (a fork per name is slow under load).
	local -A v=()
	while read -r n line; do
		case $line in
		errno=* | signal=*) v[$n]=${line%% *} ;;
		*unsupported*) v[$n]=unsupported ;;
		esac
	done <<<"$output"
	for n in $names; do
		got=${v[$n]:-}
		# No such syscall on this architecture: nothing to refuse.
		[ "$got" = unsupported ] && continue
		seen=$((seen + 1))
		want=$(expected "$n")
		is_blocked "$got" || bad="$bad $n:${got:-nothing}"
		[ "$got" = "$want" ] || bad="$bad $n:want-$want-got-${got:-nothing}"
	done
	if [ -n "$bad" ]; then
		echo "not refused as the policy says:$bad"
		echo "$output"
		return 1
	fi
	[ "$seen" -ge 60 ]
}

@test "SK-04: TIOCSTI with high bits set in the request is refused (EPERM)" {
	probe tiocsti-high
	[ "$got" = errno=1 ]
	probe tiocsti
	[ "$got" = errno=1 ]
}

@test "SK-04: TIOCSTI on a real terminal (script(1)) is refused" {
	command -v script >/dev/null || skip "script(1) is not installed"
	run timeout 30 script -qec "'$SBX' exec -q -- ./try-syscall tiocsti" \
	    /dev/null </dev/null
	got=$(printf '%s\n' "$output" | tr -d '\r' | verdict)
	[ -n "$got" ] || skip "script(1) gave no terminal here: $output"
	[ "$got" = errno=1 ]
}

@test "x32 system calls kill the process (SIGSYS)" {
	[ "$(uname -m)" = x86_64 ] || skip "x32 exists on x86_64 only"
	probe x32
	[ "$got" = signal=31 ]
}

@test "the i386 ABI is refused (SIGSYS) where the kernel has it" {
	local host
	host=$("$TRY" i386 </dev/null | verdict)
	[ "$host" = errno=0 ] || skip "this kernel runs no i386 calls ($host on the host)"
	probe i386
	[ "$got" = signal=31 ]
}

@test "SK-01: no new user namespace: unshare, clone, clone3, unshare(1)" {
	probe unshare-user
	[ "$got" = errno=1 ]
	probe clone-newuser
	[ "$got" = errno=1 ]
	probe unshare-net
	[ "$got" = errno=1 ]
	# clone3 hides its flags from seccomp: refused whole, with ENOSYS so
	# that the C library falls back to clone.
	probe clone3
	[ "$got" = errno=38 ]
	run --separate-stderr sbx exec -- sh -c '
	    command -v unshare >/dev/null && { unshare -Ur true && echo UNSHARED; }
	    echo 100 > /proc/sys/user/max_user_namespaces 2>/dev/null && echo RAISED
	    '"$PY"' -c "import ctypes,os
l = ctypes.CDLL(None, use_errno=True)
print(\"unshare\", l.unshare(0x10000000), ctypes.get_errno())"
	    command -v unshare >/dev/null && { unshare -Ur true && echo UNSHARED; }
	    exit 0' </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" != *UNSHARED* ]]
	[[ "$output" != *RAISED* ]]
	[[ "$output" == *"unshare -1 1"* ]]
}

@test "SK-12: socket families outside UNIX, INET, INET6, NETLINK: EAFNOSUPPORT" {
	local n
	for n in socket-packet socket-packet-high socketpair-packet \
	    socket-vsock socket-alg; do
		probe "$n"
		[ "$got" = errno=97 ] || { echo "$n: $got"; return 1; }
	done
	run --separate-stderr sbx exec -- "$PY" -c '
import socket as s
# PACKET TIPC RDS ALG VSOCK BLUETOOTH CAN X25 LLC KEY AX25 IPX APPLETALK QIPCRTR XDP
for f in (17, 30, 21, 38, 40, 31, 29, 9, 26, 15, 3, 4, 5, 42, 44):
    try:
        s.socket(f, s.SOCK_DGRAM)
        print("ALLOWED", f)
    except OSError as e:
        print(f, e.errno)
' </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" != *ALLOWED* ]]
	# Every errno is the filter's, never one from the family's code.
	[ -z "$(printf '%s\n' "$output" | awk '$2 != 97 && $2 != 1')" ]
	[ "$(printf '%s\n' "$output" | wc -l)" -eq 15 ]
}

@test "SK-11: personality changes are refused, plain PER_LINUX is not" {
	probe personality-bad
	[ "$got" = errno=1 ]
	probe personality-norandom
	[ "$got" = errno=1 ]
	command -v setarch >/dev/null || skip "setarch is not installed"
	run --separate-stderr sbx exec -- sh -c '
	    setarch -R true 2>/dev/null && echo NORANDOM
	    setarch --read-implies-exec true 2>/dev/null && echo RIE
	    setarch "$(uname -m)" true && echo PLAIN' </dev/null
	[[ "$output" != *NORANDOM* ]]
	[[ "$output" != *RIE* ]]
	[[ "$output" == *PLAIN* ]]
}

@test "controls: getpid, socket(AF_INET), personality(PER_LINUX) still work" {
	local n
	for n in getpid socket-inet personality-ok; do
		probe "$n"
		[ "$got" = errno=0 ] || { echo "$n: $got ($output)"; return 1; }
	done
	run --separate-stderr sbx exec -- "$PY" -c '
import socket as s
s.socket(s.AF_UNIX, s.SOCK_STREAM); s.socketpair()
s.socket(s.AF_INET, s.SOCK_DGRAM); s.socket(s.AF_INET6, s.SOCK_DGRAM)
s.socket(16, s.SOCK_RAW, 0)
print("sockets ok")' </dev/null
	[ "$status" -eq 0 ]
	[ "$output" = "sockets ok" ]
}

# ---- SK-13: the same controls on every entry path ---------------------------

@test "SK-13: Seccomp 2, NoNewPrivs 1, no capabilities; also in a grandchild after exec" {
	run --separate-stderr sbx exec -- sh -c "
	    grep -E '$STATUS_RE' /proc/self/status
	    echo ---
	    sh -c \"exec grep -E '$STATUS_RE' /proc/self/status\"" </dev/null
	[ "$status" -eq 0 ]
	check_status "$(printf '%s\n' "$output" | sed '/^---$/,$d')"
	check_status "$(printf '%s\n' "$output" | sed '1,/^---$/d')"
}

@test "SK-13: the same with -c, with --network outbound and in a background job" {
	run --separate-stderr sbx exec -c "grep -E '$STATUS_RE' /proc/self/status" </dev/null
	[ "$status" -eq 0 ]
	check_status "$output"

	run --separate-stderr sbx exec --network outbound -- \
	    grep -E "$STATUS_RE" /proc/self/status </dev/null
	[ "$status" -eq 0 ]
	check_status "$output"

	run --separate-stderr sbx exec --background -- sh -c \
	    "grep -E '$STATUS_RE' /proc/self/status > bg-status.txt"
	[ "$status" -eq 0 ]
	run --separate-stderr sbx exec wait "$output" --timeout 30
	[ "$status" -eq 0 ]
	check_status "$(cat "$WS/bg-status.txt")"
}

# ---- --seccomp off|on|bogus ------------------------------------------------

@test "the envelope says seccomp:true by default" {
	run --separate-stderr sbx exec --json -- true </dev/null
	[ "$status" -eq 0 ]
	[ "$(json_get "$output" .result.seccomp)" = true ]
	run --separate-stderr sbx exec --json --seccomp on -- true </dev/null
	[ "$(json_get "$output" .result.seccomp)" = true ]
}

@test "--seccomp off: seccomp:false, a warning, and keyctl reaches the kernel" {
	run --separate-stderr sbx exec --json --seccomp off -- \
	    ./try-syscall keyctl </dev/null
	[ "$(json_get "$output" .ok)" = true ]
	[ "$(json_get "$output" .result.seccomp)" = false ]
	json_get "$output" '.warnings[]' | grep -q 'seccomp is off'
	got=$(json_get "$output" .result.stdout | verdict)
	[ -n "$got" ]
	! is_blocked "$got"
	# Really no filter: the kernel's own view.
	run --separate-stderr sbx exec --seccomp=off -- \
	    grep -E '^Seccomp:' /proc/self/status </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^Seccomp:[[:space:]]+0$ ]]
	# Without --json the warning goes to stderr (not with -q).
	[[ "$stderr" == *"warning: seccomp is off"* ]]
	run --separate-stderr sbx exec -q --seccomp off -- true </dev/null
	[ "$status" -eq 0 ]
	[[ "$stderr" != *"seccomp is off"* ]]
	# The filter comes back on the next run.
	probe keyctl
	[ "$got" = errno=1 ]
}

@test "--seccomp bogus is invalid_args and runs nothing" {
	local m
	for m in bogus ON 1 ''; do
		run --separate-stderr sbx exec --json --seccomp "$m" -- \
		    touch "$WS/ran-$m"
		[ "$status" -eq 65 ]
		[ "$(json_get "$output" .kind)" = invalid_args ]
		[ "$(json_get "$output" .field)" = seccomp ]
		[ "$(json_get "$output" .reason)" = invalid_mode ]
		[ ! -e "$WS/ran-$m" ]
	done
	run -64 sbx exec --seccomp
}

# ---- IP-04: the compiled program under cache/ ------------------------------

@test "IP-04: the cached program is ours, 0600, whole instructions" {
	local c
	c=$(cache_file)
	[ -n "$c" ]
	[ "$(printf '%s\n' "$c" | wc -l)" -eq 1 ]
	[ -f "$c" ] && [ ! -L "$c" ]
	[ "$(stat -c %a "$c")" = 600 ]
	[ "$(stat -c %u "$c")" = "$(id -u)" ]
	[ $(( $(stat -c %s "$c") % 8 )) -eq 0 ]
	[ "$(stat -c %s "$c")" -gt 8 ]
}

@test "IP-04: the cached program is the one whose digest sbx was built with" {
	# A cached program is loaded only when its SHA-256 is the digest
	# compiled in (gen/seccomp-digest.h, from a generator linked as
	# sbx is): if sbx built other bytes at run time, the cache would
	# never be used and every run would build the program again.
	local h c want len
	h="$SBX_TEST_BUILD/gen/seccomp-digest.h"
	[ -r "$h" ] || skip "no generated digest: $h"
	want=$(grep -o '\\x[0-9a-f][0-9a-f]' "$h" | tr -d '\\x\n')
	len=$(sed -n 's/.*SBX_SECCOMP_DIGEST_LEN[[:space:]]*//p' "$h")
	[ "${#want}" -eq 64 ]
	c=$(cache_file)
	[ -n "$c" ]
	[ "$(stat -c %s "$c")" = "$len" ]
	[ "$(sha256sum <"$c" | cut -d ' ' -f 1)" = "$want" ]
}

@test "IP-04: neither the cache nor any sbx state is visible or writable inside" {
	local name
	name=$(basename "$(cache_file)")
	[ -n "$name" ]
	run --separate-stderr sbx exec -- sh -c '
	    find / \( -path /proc -o -path /sys \) -prune -o \
	        \( -name "$1" -o -name "*.bpf" -o -path "*sbx*" \
	           -o -name "*seccomp*" -o -path "*cache/seccomp*" \) -print \
	        2>/dev/null | while read -r f; do
	        echo "SEEN $f"
	        (: >> "$f") 2>/dev/null && echo "WRITABLE $f"
	    done; exit 0' sh "$name" </dev/null
	[ "$status" -eq 0 ]
	[[ "$output" != *WRITABLE* ]]
	# The program's file name is nowhere (a hash: no false hits).
	[[ "$output" != *"$name"* ]]
	[[ "$output" != *"cache/seccomp"* ]]
}

# probe_all NAME...: one sbx exec --json running every probe; sets $out
# (the probes' output) and $warn (the envelope's warnings, one a line).
probe_all() {
	run --separate-stderr sbx exec --json -- sh -c \
	    'for n in "$@"; do ./try-syscall "$n"; done; exit 0' sh "$@" \
	    </dev/null
	[ "$status" -eq 0 ] || { echo "status $status: $output $stderr"; return 1; }
	[ "$(json_get "$output" .result.seccomp)" = true ]
	out=$(json_get "$output" .result.stdout)
	warn=$(json_get "$output" '.warnings // [] | .[]')
}

# The probes that issue 10 item 4's attack reaches without the filter.
blocked_all() {
	local n
	for n in keyctl bpf mount; do
		[[ "$out" == *"$n errno=1 "* ]] ||
		    { echo "$n not refused: $out"; return 1; }
	done
}

@test "IP-04: a cache file rewritten in place with an allow-all program is not loaded" {
	# Issue 10 item 4: a sandbox whose --workdir holds this state root
	# overwrites the cached program: ours, 0600, 8 bytes, one
	# instruction, a program the kernel accepts.  Owner, mode and size
	# checks all pass; only the content tells.
	local c
	c=$(cache_file)
	cp "$c" "$TEST_ROOT/good.bpf"
	write_allow_all "$c"
	[ "$(stat -c %s "$c")" -eq 8 ]
	[ "$(stat -c %a "$c")" = 600 ]
	[ "$(stat -c %u "$c")" = "$(id -u)" ]
	probe_all keyctl bpf mount
	blocked_all
	[[ "$warn" == *"cached seccomp program"*"has been replaced"* ]]
	cmp "$c" "$TEST_ROOT/good.bpf"
	# Once replaced, the next run is quiet about it.
	probe_all keyctl
	[[ "$warn" != *"cached seccomp program"* ]]
	# Without --json the warning goes to stderr (not with -q).
	write_allow_all "$c"
	run --separate-stderr sbx exec -- ./try-syscall keyctl </dev/null
	[ "$(printf '%s\n' "$output" | verdict)" = errno=1 ]
	[[ "$stderr" == *"warning: the cached seccomp program"* ]]
	write_allow_all "$c"
	run --separate-stderr sbx exec -q -- ./try-syscall keyctl </dev/null
	[ "$(printf '%s\n' "$output" | verdict)" = errno=1 ]
	[[ "$stderr" != *"cached seccomp program"* ]]
	cmp "$c" "$TEST_ROOT/good.bpf"
}

@test "IP-04: a truncated or garbage cache file of whole instructions is rebuilt and reported" {
	local c size
	c=$(cache_file)
	size=$(stat -c %s "$c")
	cp "$c" "$TEST_ROOT/good.bpf"
	# The first half of the program, cut at an instruction boundary.
	head -c $(( size / 16 * 8 )) "$TEST_ROOT/good.bpf" >"$c"
	probe_all keyctl bpf mount
	blocked_all
	[[ "$warn" == *"cached seccomp program"* ]]
	cmp "$c" "$TEST_ROOT/good.bpf"
	# Random bytes, the program's exact size.
	head -c "$size" /dev/urandom >"$c"
	probe_all keyctl bpf mount
	blocked_all
	[[ "$warn" == *"cached seccomp program"* ]]
	cmp "$c" "$TEST_ROOT/good.bpf"
	# The program with every instruction replaced by "allow".
	local i
	for (( i = 0; i < size / 8; i++ )); do
		printf '\006\000\000\000\000\000\377\177'
	done >"$c"
	[ "$(stat -c %s "$c")" -eq "$size" ]
	probe_all keyctl bpf mount
	blocked_all
	[[ "$warn" == *"cached seccomp program"* ]]
	cmp "$c" "$TEST_ROOT/good.bpf"
}

@test "IP-04: a cache file replaced by a symlink to an allow-all program: rebuilt and reported" {
	local c
	c=$(cache_file)
	cp "$c" "$TEST_ROOT/good.bpf"
	write_allow_all "$TEST_ROOT/planted.bpf"
	rm -f "$c"
	ln -s "$TEST_ROOT/planted.bpf" "$c"
	probe_all keyctl bpf mount
	blocked_all
	[[ "$warn" == *"cached seccomp program"*"has been replaced"* ]]
	[ ! -L "$c" ] && [ -f "$c" ]
	cmp "$c" "$TEST_ROOT/good.bpf"
	# The link's target is untouched.
	[ "$(stat -c %s "$TEST_ROOT/planted.bpf")" -eq 8 ]
}

@test "IP-04: a planted 'no' in the cached bwrap probe does not drop --disable-userns" {
	# The same class as the seccomp cache: cache/bwrap-*.features says
	# whether bwrap knows --disable-userns.  A "no" written there would
	# drop the option (and nested user namespaces would rest on the
	# seccomp filter alone), so only a "yes" is taken from the cache.
	local f="" g
	for g in "$SBX_HOME"/cache/bwrap-*.features; do
		[ -f "$g" ] && f=$g
	done
	[ -n "$f" ] || skip "no cached probe: this bwrap has no --disable-userns"
	[ "$(cat "$f")" = 1 ]
	printf '0\n' >"$f"
	run --separate-stderr sbx exec -v -- true </dev/null
	[ "$status" -eq 0 ]
	[[ "$stderr" == *" --disable-userns "* ]]
	[[ "$stderr" != *"cannot disable nested user namespaces"* ]]
	[ "$(cat "$f")" = 1 ]
	# A FIFO planted at the name does not hang sbx.
	rm -f "$f"
	mkfifo "$f"
	run --separate-stderr timeout 20 "$SBX" exec -v -- true </dev/null
	[ "$status" -eq 0 ]
	[[ "$stderr" == *" --disable-userns "* ]]
}

@test "IP-04: a cache file truncated to 7 bytes is rebuilt; keyctl still EPERM" {
	local c size
	c=$(cache_file)
	size=$(stat -c %s "$c")
	truncate -s 7 "$c"
	probe keyctl
	[ "$got" = errno=1 ]
	[ "$(stat -c %s "$c")" -eq "$size" ]
	[ "$(stat -c %a "$c")" = 600 ]
}

@test "IP-04: a group-writable cache file (even a valid program) is not trusted" {
	local c size
	c=$(cache_file)
	size=$(stat -c %s "$c")
	write_allow_all "$c"
	chmod 0620 "$c"
	probe keyctl
	[ "$got" = errno=1 ]
	# ... and replaced by the real program.
	[ "$(stat -c %s "$c")" -eq "$size" ]
	[ "$(stat -c %a "$c")" = 600 ]
	write_allow_all "$c"
	chmod 0602 "$c"
	probe keyctl
	[ "$got" = errno=1 ]
}

@test "IP-04: a cache file owned by another user is not trusted" {
	is_root || skip "needs root to chown"
	local c
	c=$(cache_file)
	write_allow_all "$c"
	chmod 0600 "$c"
	chown 65534:65534 "$c"
	probe keyctl
	[ "$got" = errno=1 ]
	[ "$(stat -c %u "$c")" = 0 ]
}

@test "IP-04: a symlink planted at the cache file name is not followed" {
	local c
	c=$(cache_file)
	write_allow_all "$TEST_ROOT/planted.bpf"
	rm -f "$c"
	ln -s "$TEST_ROOT/planted.bpf" "$c"
	probe keyctl
	[ "$got" = errno=1 ]
	# Not written through either: the target is unchanged and the name
	# is a file of its own now.
	[ "$(stat -c %s "$TEST_ROOT/planted.bpf")" -eq 8 ]
	[ ! -L "$c" ] && [ -f "$c" ]
	# A dangling link is not created through.
	rm -f "$c"
	ln -s "$TEST_ROOT/through-link" "$c"
	probe keyctl
	[ "$got" = errno=1 ]
	[ ! -e "$TEST_ROOT/through-link" ]
}

@test "IP-04: a FIFO planted at the cache file name does not hang sbx" {
	local c
	c=$(cache_file)
	rm -f "$c"
	mkfifo "$c"
	run --separate-stderr timeout 20 "$SBX" exec -- ./try-syscall keyctl </dev/null
	[ "$status" -ne 124 ]
	[ "$(printf '%s\n' "$output" | verdict)" = errno=1 ]
}

@test "IP-04: cache/ replaced by a symlink or a file: the program is built anew" {
	local c name
	c=$(cache_file)
	name=$(basename "$c")
	rm -rf "$SBX_HOME/cache"
	mkdir "$TEST_ROOT/evil-cache"
	write_allow_all "$TEST_ROOT/evil-cache/$name"
	ln -s "$TEST_ROOT/evil-cache" "$SBX_HOME/cache"
	probe keyctl
	[ "$got" = errno=1 ]
	[ "$(stat -c %s "$TEST_ROOT/evil-cache/$name")" -eq 8 ]
	[ "$(find "$TEST_ROOT/evil-cache" -mindepth 1 | wc -l)" -eq 1 ]
	rm -f "$SBX_HOME/cache"
	echo x >"$SBX_HOME/cache"
	probe keyctl
	[ "$got" = errno=1 ]
}

@test "IP-04/PK-07: a filter edited from inside cannot reach the next run" {
	# Whatever the sandbox writes where it can, the next run's filter is
	# built from host state: the probe stays refused.
	run --separate-stderr sbx exec -- sh -c '
	    for d in "$HOME" /output /tmp; do
	        printf "\006\000\000\000\000\000\377\177" > "$d/seccomp.bpf"
	        mkdir -p "$d/cache" && cp "$d/seccomp.bpf" "$d/cache/"
	    done' </dev/null
	[ "$status" -eq 0 ]
	probe keyctl
	[ "$got" = errno=1 ]
	probe add_key
	[ "$got" = errno=1 ]
}
