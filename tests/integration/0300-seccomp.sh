#!/bin/sh
# 0300-seccomp.sh: the seccomp program, loaded by bwrap, refuses what it
# should and lets through what it should.  Emits TAP.
#
# bwrap is run directly with `--seccomp 9 9<FILE`, FILE coming from
# `t-seccomp --export`; each probe is tests/helpers/try-syscall, which
# makes one call with harmless arguments and prints how it ended.  Every
# probe gets stdin from /dev/null: an ioctl on it that reaches the kernel
# answers ENOTTY, so an EPERM can only come from the filter.
#
# Environment: B, the build directory (default "build"), relative to the
# repository root or absolute.
set -u
cd "$(dirname "$0")/../.." || exit 1
B=${B:-build}
case $B in
/*) bdir=$B ;;
*) bdir=$PWD/$B ;;
esac
helper=$bdir/tests/helpers/try-syscall
tseccomp=$bdir/tests/unit/t-seccomp

n=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # skip $1"; }
diag() { printf '# %s\n' "$@"; }
bail() { echo "1..0 # SKIP $1"; exit 0; }

if [ ! -x "$helper" ] || [ ! -x "$tseccomp" ]; then
	bail "not built: make $B/tests/unit/t-seccomp $B/tests/helpers/try-syscall"
fi
command -v bwrap >/dev/null 2>&1 || bail "bwrap is not installed"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/0300-seccomp.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' HUP INT TERM
bpf=$tmp/seccomp.bpf

# A probe that hangs (it should not) must not hang the suite.
if command -v timeout >/dev/null 2>&1; then
	run() { timeout 30 "$@"; }
else
	run() { "$@"; }
fi

# bwrap, with the filter when the first argument is "filter".
box() {
	if [ "$1" = filter ]; then
		shift
		run bwrap --unshare-all --die-with-parent \
			--ro-bind /usr /usr --symlink usr/lib /lib \
			--symlink usr/lib64 /lib64 --symlink usr/bin /bin \
			--proc /proc --dev /dev --ro-bind "$helper" /t \
			--seccomp 9 "$@" 9<"$bpf" </dev/null 2>"$tmp/err"
	else
		shift
		run bwrap --unshare-all --die-with-parent \
			--ro-bind /usr /usr --symlink usr/lib /lib \
			--symlink usr/lib64 /lib64 --symlink usr/bin /bin \
			--proc /proc --dev /dev --ro-bind "$helper" /t \
			"$@" </dev/null 2>"$tmp/err"
	fi
}

# "NAME errno=N (X)" or "NAME signal=N (X)" -> "errno=N" / "signal=N"
verdict() {
	sed -n -e 's/^[^ ]* \(errno=[0-9]*\) .*/\1/p' \
		-e 's/^[^ ]* \(signal=[0-9]*\) .*/\1/p' | head -n 1
}

# What the filter answers: the socket families EAFNOSUPPORT; clone3,
# statmount, listmount, legacy AIO and numbers above the last reviewed
# ENOSYS; other ABIs SIGSYS; the rest EPERM.
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

# Blocked, whoever did it: EPERM, ENOSYS, EAFNOSUPPORT or SIGSYS.
is_blocked() {
	case $1 in
	errno=1 | errno=38 | errno=97 | signal=31) return 0 ;;
	*) return 1 ;;
	esac
}

# --- the program ----------------------------------------------------------
if "$tseccomp" --export "$bpf" 2>"$tmp/err"; then
	size=$(wc -c <"$bpf" | tr -d ' ')
	if [ "$size" -gt 0 ] && [ $((size % 8)) -eq 0 ]; then
		ok "t-seccomp --export writes a program ($size bytes)"
	else
		notok "t-seccomp --export writes a program ($size bytes)"
	fi
else
	notok "t-seccomp --export"
	diag "$(cat "$tmp/err")"
	echo "1..$n"
	exit 1
fi

# --- can we make sandboxes here at all? -----------------------------------
out=$(box nofilter /t getpid)
if [ "$(printf '%s\n' "$out" | verdict)" != errno=0 ]; then
	diag "bwrap: $(cat "$tmp/err")"
	skip "bwrap cannot create a sandbox here (user namespaces?)"
	echo "1..$n"
	exit 0
fi
ok "bwrap runs the probe without a filter"

# The i386 ABI: some kernels have no i386 emulation at all (or turn it
# off), and int 0x80 then faults before any filter runs.
i386_host=$(run "$helper" i386 </dev/null | verdict)

# --- inside, under the filter: everything on the list is refused --------
for name in $("$helper" --list); do
	case $name in
	socket-inet | personality-ok | getpid) continue ;;
	esac
	# On x86_64 sbx-init's own filter, which every command runs under,
	# refuses pidfd_getfd (sbx-init, pid 1, needs it: cmd/init-guard.c);
	# 0310 checks it through sbx exec.
	if [ "$name" = pidfd_getfd ] && [ "$(uname -m)" = x86_64 ]; then
		out=$(box filter /t "$name")
		got=$(printf '%s\n' "$out" | verdict)
		if [ -n "$got" ] && [ "$got" != errno=1 ]; then
			ok "filtered: $name is left to sbx-init's filter ($got)"
		else
			notok "filtered: $name is left to sbx-init's filter (got ${got:-nothing})"
		fi
		continue
	fi
	want=$(expected "$name")
	if [ "$name" = i386 ] && [ "$i386_host" != errno=0 ]; then
		skip "$name: the kernel runs no i386 syscalls ($i386_host without a filter)"
		continue
	fi
	out=$(box filter /t "$name")
	got=$(printf '%s\n' "$out" | verdict)
	case $out in
	*unsupported*)
		skip "$name: no such syscall on this architecture"
		continue
		;;
	esac
	if [ "$got" = "$want" ]; then
		ok "filtered: $name is refused ($got)"
	else
		notok "filtered: $name is refused (want $want, got ${got:-nothing})"
		diag "output: $out" "bwrap: $(cat "$tmp/err")"
	fi
done

# --- inside, under the filter: ordinary calls still work -----------------
for name in socket-inet personality-ok getpid; do
	out=$(box filter /t "$name")
	got=$(printf '%s\n' "$out" | verdict)
	if [ "$got" = errno=0 ]; then
		ok "filtered: $name still works"
	else
		notok "filtered: $name still works (got ${got:-nothing})"
		diag "output: $out" "bwrap: $(cat "$tmp/err")"
	fi
done

# The process really runs under a filter, with no_new_privs.
status=$(box filter /bin/cat /proc/self/status)
if printf '%s\n' "$status" | grep -q '^Seccomp:[[:space:]]*2$' &&
	printf '%s\n' "$status" | grep -q '^NoNewPrivs:[[:space:]]*1$'; then
	ok "filtered: /proc/self/status shows Seccomp 2 and NoNewPrivs 1"
else
	notok "filtered: /proc/self/status shows Seccomp 2 and NoNewPrivs 1"
	diag "$(printf '%s\n' "$status" | grep -E '^(Seccomp|NoNewPrivs)')"
fi

# --- controls: the same calls reach the kernel without the filter --------
# In the sandbox without --seccomp, so the refusals above are the
# filter's and not the namespaces'.
for name in keyctl mount chroot open_tree setns tiocsti tiocsti-high \
	personality-bad clone3 socket-inet open_tree_attr statmount listmount \
	modify_ldt io_setup io_submit io_pgetevents; do
	out=$(box nofilter /t "$name")
	got=$(printf '%s\n' "$out" | verdict)
	if [ -n "$got" ] && ! is_blocked "$got"; then
		ok "unfiltered sandbox: $name reaches the kernel ($got)"
	elif [ "$got" = errno=38 ]; then
		skip "unfiltered sandbox: $name: the kernel lacks it"
	else
		notok "unfiltered sandbox: $name reaches the kernel (got ${got:-nothing})"
		diag "output: $out" "bwrap: $(cat "$tmp/err")"
	fi
done

# On the host, for calls whose harmless arguments give EBADF, EFAULT or
# EINVAL to root and to other users alike.  Meaningless if this shell is
# itself under a filter (a container's, say).
if grep -q '^Seccomp:[[:space:]]*0$' /proc/self/status 2>/dev/null; then
	host_ok=1
else
	host_ok=0
fi
for name in keyctl add_key perf_event_open mount umount2 chroot open_tree \
	settimeofday clock_settime name_to_handle_at process_vm_readv setns \
	ptrace tiocsti tiocsti-high tioclinux personality-bad \
	personality-norandom socket-inet open_tree_attr statmount listmount \
	modify_ldt io_setup io_submit io_pgetevents; do
	if [ "$host_ok" -eq 0 ]; then
		skip "host: $name: this shell already runs under a seccomp filter"
		continue
	fi
	out=$(run "$helper" "$name" </dev/null)
	got=$(printf '%s\n' "$out" | verdict)
	if [ -n "$got" ] && ! is_blocked "$got"; then
		ok "host: $name reaches the kernel ($got)"
	elif [ "$got" = errno=38 ]; then
		skip "host: $name: the kernel lacks it"
	else
		notok "host: $name reaches the kernel (got ${got:-nothing})"
		diag "output: $out"
	fi
done

# --- TIOCSTI on a real terminal --------------------------------------------
# The probes above use /dev/null; this one gets a pseudo-terminal from
# script(1) as its controlling terminal, the CVE-2017-5226 situation.
# Without the filter the kernel answers EFAULT (the pointer is bad) or
# EIO (TIOCSTI disabled by dev.tty.legacy_tiocsti).
if command -v script >/dev/null 2>&1; then
	cat >"$tmp/pty.sh" <<'EOF'
if [ "$1" = filter ]; then
	bwrap --unshare-all --die-with-parent --ro-bind /usr /usr \
		--symlink usr/lib /lib --symlink usr/lib64 /lib64 \
		--symlink usr/bin /bin --proc /proc --dev /dev \
		--ro-bind "$PTY_HELPER" /t --seccomp 9 /t tiocsti 9<"$PTY_BPF"
else
	"$PTY_HELPER" tiocsti
fi
EOF
	for mode in filter nofilter; do
		out=$(PTY_HELPER=$helper PTY_BPF=$bpf run script -qec \
			"sh '$tmp/pty.sh' $mode" /dev/null </dev/null 2>&1 |
			tr -d '\r')
		got=$(printf '%s\n' "$out" | verdict)
		if [ "$mode" = filter ]; then
			if [ "$got" = errno=1 ]; then
				ok "pty: tiocsti under the filter is refused ($got)"
			else
				notok "pty: tiocsti under the filter is refused (got ${got:-nothing})"
				diag "output: $out"
			fi
		elif [ -z "$got" ]; then
			skip "pty: script(1) gave no controlling terminal here"
			diag "output: $out"
		elif [ "$host_ok" -eq 1 ] && ! is_blocked "$got"; then
			ok "pty: tiocsti without a filter reaches the kernel ($got)"
		else
			skip "pty: tiocsti without a filter answered $got"
		fi
	done
else
	skip "pty: tiocsti on a terminal: script(1) is not installed"
	skip "pty: tiocsti control: script(1) is not installed"
fi

echo "1..$n"
