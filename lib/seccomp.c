/*
 * seccomp.c: the seccomp filter every sandboxed process runs under.
 *
 * The filter is a deny-list on top of a default of ALLOW, in the line of
 * linux-user-chroot, flatpak and docker: it removes the parts of the
 * kernel that a sandboxed build or agent has no business touching and
 * that have been the usual way out of containers.  It is compiled with
 * libseccomp into a raw BPF program that bwrap loads (`--seccomp FD`)
 * just before it executes the command; by then bwrap has finished its
 * own mounts, so none of the denials below get in its way.
 *
 * The program is cached in the state root's cache/ directory under a
 * name derived from the policy version and the architecture: reading it
 * back costs microseconds, compiling it a fraction of a millisecond of
 * libseccomp work that every run would otherwise repeat.  The cache is a convenience, never a
 * requirement: anything wrong with it (not ours, not regular, wrong
 * size, not writable) means the program is rebuilt in memory.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <seccomp.h>
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "seccomp.h"

/*
 * Bump whenever a rule below changes: the cache file name derives from
 * it, so a stale program is never picked up.
 */
#define POLICY_ID	"sbx-seccomp-1"

/* The largest program the kernel accepts, in bytes. */
#define PROG_MAX	(BPF_MAXINSNS * sizeof(struct sock_filter))

#define CACHE_PREFIX	"seccomp-"
#define CACHE_SUFFIX	".bpf"
/* "seccomp-" + 64 hex digits + ".bpf" + NUL */
#define CACHE_NAME_MAX	(sizeof(CACHE_PREFIX) - 1 + 64 + sizeof(CACHE_SUFFIX))

struct deny {
	const char	*name;
	int		 err;
};

/*
 * Syscalls refused outright.  Each group says why.  A name unknown to
 * libseccomp is an error (fail closed); a name known but absent on this
 * architecture (iopl on arm64, say) cannot be called and is skipped.
 */
static const struct deny deny_list[] = {
	/*
	 * The kernel keyring is not namespaced: keys are per uid, so a
	 * sandbox could read or plant keys shared with the user's host
	 * session.
	 */
	{ "keyctl",		EPERM },
	{ "add_key",		EPERM },
	{ "request_key",	EPERM },
	/*
	 * eBPF and perf are large, privileged-by-design interfaces with a
	 * long record of local privilege escalations; perf also observes
	 * other processes.
	 */
	{ "bpf",		EPERM },
	{ "perf_event_open",	EPERM },
	/*
	 * userfaultfd lets a process pause the kernel in the middle of a
	 * copy from user memory, the standard way to win kernel races.
	 */
	{ "userfaultfd",	EPERM },
	/*
	 * io_uring performs socket, open and other operations on the
	 * process's behalf without a syscall that seccomp could inspect,
	 * so it would bypass every rule here; it is also the most exploited
	 * kernel subsystem of recent years.
	 */
	{ "io_uring_setup",	EPERM },
	{ "io_uring_enter",	EPERM },
	{ "io_uring_register",	EPERM },
	/* Replacing the running kernel or loading code into it. */
	{ "kexec_load",		EPERM },
	{ "kexec_file_load",	EPERM },
	{ "init_module",	EPERM },
	{ "finit_module",	EPERM },
	{ "delete_module",	EPERM },
	/*
	 * The mount table is bwrap's to build.  Inside its own user
	 * namespace the sandbox could otherwise unmount or cover what it
	 * was given (revealing files under a masking mount, or replacing a
	 * read-only bind) and, with the new mount API, do the same through
	 * detached trees (flatpak CVE-2021-41133).
	 */
	{ "mount",		EPERM },
	{ "umount2",		EPERM },
	{ "pivot_root",		EPERM },
	{ "chroot",		EPERM },
	{ "move_mount",		EPERM },
	{ "open_tree",		EPERM },
	{ "fsopen",		EPERM },
	{ "fsmount",		EPERM },
	{ "fsconfig",		EPERM },
	{ "fspick",		EPERM },
	{ "mount_setattr",	EPERM },
	/* Host-wide state no sandbox may change: swap, power, accounting. */
	{ "swapon",		EPERM },
	{ "swapoff",		EPERM },
	{ "reboot",		EPERM },
	{ "acct",		EPERM },
	/* The clock is shared by every process on the host. */
	{ "settimeofday",	EPERM },
	{ "clock_settime",	EPERM },
	{ "clock_adjtime",	EPERM },
	{ "adjtimex",		EPERM },
	/* The kernel log leaks kernel addresses and other users' activity. */
	{ "syslog",		EPERM },
	/*
	 * vhangup revokes the terminal from every process using it,
	 * including the user's shell outside the sandbox.
	 */
	{ "vhangup",		EPERM },
	/* Disk quotas are host-wide. */
	{ "quotactl",		EPERM },
	/* Obsolete profiling interface that reports kernel path names. */
	{ "lookup_dcookie",	EPERM },
	/*
	 * File handles name inodes without a path, so open_by_handle_at
	 * reaches files outside the sandbox's mounts (the 2014 docker
	 * "shocker" escape).  name_to_handle_at is its only producer.
	 */
	{ "name_to_handle_at",	EPERM },
	{ "open_by_handle_at",	EPERM },
	/*
	 * Cross-process memory and file descriptor access.  ptrace is
	 * refused below, so these, which need the same permission, are
	 * refused too: otherwise a sandboxed process could read or write
	 * sbx-init, the network bridge, or anything else sharing its uid
	 * in the sandbox.  pidfd_getfd steals descriptors the same way;
	 * kcmp leaks the ordering of kernel pointers.
	 */
	{ "process_vm_readv",	EPERM },
	{ "process_vm_writev",	EPERM },
	{ "pidfd_getfd",	EPERM },
	{ "kcmp",		EPERM },
	/* Raw I/O port access. */
	{ "iopl",		EPERM },
	{ "ioperm",		EPERM },
	/* a.out loader, unused for decades and a historic source of bugs. */
	{ "uselib",		EPERM },
	/*
	 * Joining another namespace would undo the isolation should a
	 * descriptor for one of the host's namespaces ever reach the
	 * sandbox.
	 */
	{ "setns",		EPERM },
	/* Removed from the kernel in 3.1; refused so old kernels agree. */
	{ "nfsservctl",		EPERM },
	/*
	 * ptrace: refused entirely rather than only PTRACE_ATTACH/SEIZE and
	 * requests aimed at pid 1.  Request-by-request rules leave
	 * PTRACE_TRACEME, itself the root of CVE-2019-13272, and any tracee
	 * a child chooses to be; on kernels before 4.8 a tracer could also
	 * rewrite syscalls after seccomp had checked them (firejail
	 * CVE-2017-5206).  The cost is no gdb or strace inside a sandbox,
	 * which is what flatpak accepts for non-development runs too.
	 */
	{ "ptrace",		EPERM },
	/*
	 * clone3 passes its flags in memory, where seccomp cannot look, so
	 * it cannot be held to the CLONE_NEW* rule on clone below.  ENOSYS,
	 * not EPERM, makes the C library fall back to clone.
	 */
	{ "clone3",		ENOSYS },
};

/*
 * Namespace creation: nested user namespaces are the door to most
 * "unprivileged" kernel exploits, since they hand out CAP_SYS_ADMIN over
 * fresh mount, network and other namespaces; the sandbox already has all
 * the namespaces it is meant to have.  CLONE_NEWTIME shares its bit with
 * the exit signal in clone(2) (CSIGNAL); signals above 64 are invalid
 * there, so refusing it costs nothing.
 */
static const uint32_t clone_new[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET, 0x00000080 /* NEWTIME */
};

/*
 * Socket families the sandbox may use, in increasing order: local
 * sockets, IP (network policy is enforced by the network namespace and
 * the proxy, not here) and netlink, which ip(8) and glibc's getaddrinfo
 * need.  Everything else (packet sockets, vsock to the hypervisor, the
 * crypto API, and the long tail of rarely used families whose modules
 * the kernel would load on demand) gets EAFNOSUPPORT, as if the kernel
 * did not have it.
 */
static const int socket_allow[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };

static int
rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
    unsigned int argc, struct scmp_arg_cmp *cmp, struct sbx_error *e)
{
	int	 nr, rc;

	nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
		    "seccomp_unavailable",
		    "libseccomp does not know the syscall %s", name);
	/*
	 * Negative numbers are libseccomp's placeholders for syscalls this
	 * architecture does not have: nothing to refuse.
	 */
	if (nr < 0)
		return 0;
	if ((rc = seccomp_rule_add_array(ctx, action, nr, argc, cmp)) < 0) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "seccomp_unavailable",
		    "cannot add the seccomp rule for %s: %s", name,
		    strerror(-rc));
		if (e != NULL)
			e->sys_errno = -rc;
		errno = -rc;
		return -1;
	}
	return 0;
}

/*
 * One rule: deny `name` with errno `err` when argument `arg` compares
 * (op) true against a (and b for SCMP_CMP_MASKED_EQ: (arg & a) == b).
 */
static int
rule_cmp(scmp_filter_ctx ctx, int err, const char *name, unsigned int arg,
    enum scmp_compare op, uint64_t a, uint64_t b, struct sbx_error *e)
{
	struct scmp_arg_cmp	 cmp;

	memset(&cmp, 0, sizeof(cmp));
	cmp.arg = arg;
	cmp.op = op;
	cmp.datum_a = a;
	cmp.datum_b = b;
	return rule(ctx, SCMP_ACT_ERRNO(err), name, 1, &cmp, e);
}

static int
rule_masked(scmp_filter_ctx ctx, int err, const char *name, unsigned int arg,
    uint64_t mask, uint64_t value, struct sbx_error *e)
{
	return rule_cmp(ctx, err, name, arg, SCMP_CMP_MASKED_EQ, mask, value,
	    e);
}

static int
add_personality(scmp_filter_ctx ctx, struct sbx_error *e)
{
	/* bits 0..31 except bit 3, in a cycle */
	static const int	 pos[] = {
		0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17,
		18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	};
	size_t			 i, n = sizeof(pos) / sizeof(pos[0]);
	uint64_t		 zero, one;

	/*
	 * personality(2): only PER_LINUX (0), PER_LINUX32 (8) and the
	 * query 0xffffffff.  Anything else can turn on READ_IMPLIES_EXEC
	 * (readable memory becomes executable), ADDR_NO_RANDOMIZE (no
	 * ASLR) or a foreign execution domain.  The kernel reads the
	 * argument as an unsigned int, so only the low 32 bits are
	 * compared, as for ioctl below.
	 *
	 * A rule compares an argument at most once and rules are OR-ed, so
	 * "none of three values" is built from masked equalities.  Leave
	 * bit 3 aside: the allowed words are then exactly all-zeros (0 and
	 * 8) and all-ones (0xffffffff).  Any other word has, going round
	 * the remaining 31 bits in a cycle, a 0 bit followed by a 1 bit;
	 * one rule per adjacent pair catches it.  That leaves only
	 * 0xfffffff7 (all ones but bit 3), refused on its own.
	 */
	for (i = 0; i < n; i++) {
		zero = UINT64_C(1) << pos[i];
		one = UINT64_C(1) << pos[(i + 1) % n];
		if (rule_masked(ctx, EPERM, "personality", 0, zero | one, one,
		    e) == -1)
			return -1;
	}
	return rule_masked(ctx, EPERM, "personality", 0, 0xffffffff,
	    0xfffffff7, e);
}

static int
add_sockets(scmp_filter_ctx ctx, const char *name, struct sbx_error *e)
{
	size_t	 i, n = sizeof(socket_allow) / sizeof(socket_allow[0]);
	int	 f;

	/*
	 * Refuse every family below the last allowed one that is not in
	 * the list, then everything above it.  The comparisons are on all
	 * 64 bits although the kernel reads an int: a value with high bits
	 * set is above the last family and refused whatever its low bits.
	 */
	for (f = 0, i = 0; i < n; i++, f++)
		for (; f < socket_allow[i]; f++)
			if (rule_cmp(ctx, EAFNOSUPPORT, name, 0, SCMP_CMP_EQ,
			    (uint64_t)f, 0, e) == -1)
				return -1;
	return rule_cmp(ctx, EAFNOSUPPORT, name, 0, SCMP_CMP_GT,
	    (uint64_t)socket_allow[n - 1], 0, e);
}

static int
add_rules(scmp_filter_ctx ctx, struct sbx_error *e)
{
	size_t	 i;
	/* clone's flags are its first argument except on s390. */
#if defined(__s390__) || defined(__s390x__)
	const unsigned int	 clone_flags_arg = 1;
#else
	const unsigned int	 clone_flags_arg = 0;
#endif

	for (i = 0; i < sizeof(deny_list) / sizeof(deny_list[0]); i++)
		if (rule(ctx, SCMP_ACT_ERRNO(deny_list[i].err),
		    deny_list[i].name, 0, NULL, e) == -1)
			return -1;

	for (i = 0; i < sizeof(clone_new) / sizeof(clone_new[0]); i++) {
		if (rule_masked(ctx, EPERM, "unshare", 0, clone_new[i],
		    clone_new[i], e) == -1 ||
		    rule_masked(ctx, EPERM, "clone", clone_flags_arg,
		    clone_new[i], clone_new[i], e) == -1)
			return -1;
	}

	/*
	 * TIOCSTI pushes bytes into a terminal's input queue, so a sandbox
	 * sharing the user's terminal could type commands into the shell
	 * that started it (CVE-2017-5226); TIOCLINUX can do the same on a
	 * virtual console through its paste selection.  The kernel reads
	 * the request as an unsigned int: compare the low 32 bits only, or
	 * a request with high bits set would slip past while meaning the
	 * same thing to the kernel.
	 */
	if (rule_masked(ctx, EPERM, "ioctl", 1, 0xffffffff, TIOCSTI,
	    e) == -1 ||
	    rule_masked(ctx, EPERM, "ioctl", 1, 0xffffffff, TIOCLINUX,
	    e) == -1)
		return -1;

	if (add_personality(ctx, e) == -1)
		return -1;
	if (add_sockets(ctx, "socket", e) == -1 ||
	    add_sockets(ctx, "socketpair", e) == -1)
		return -1;
	return 0;
}

#if defined(__x86_64__)
/*
 * Kill any syscall number with bit 30 set: on x86_64 that is the x32
 * ABI, whose calls arrive with the native AUDIT_ARCH_X86_64, so the
 * architecture check does not catch them, and whose numbers would
 * otherwise miss every rule above.  libseccomp emits the same test when
 * x32 is not in the filter; we add our own so that the guarantee does
 * not depend on the libseccomp version.  -1 is let through as
 * libseccomp does: it is how a tracer cancels a syscall, and the kernel
 * answers it with ENOSYS.  The prefix is independent of the program
 * after it (BPF jumps are relative and it leaves no state behind).
 */
static const struct sock_filter x32_prefix[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#endif

static int
write_all(int fd, const void *p, size_t n)
{
	const char	*s = p;
	ssize_t		 w;

	while (n > 0) {
		w = write(fd, s, n);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

static int
export_error(struct sbx_error *e, const char *what)
{
	int	 saved = errno;

	sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "seccomp_unavailable",
	    "cannot build the seccomp filter: %s: %s", what, strerror(saved));
	if (e != NULL)
		e->sys_errno = saved;
	errno = saved;
	return -1;
}

/* Compiles the policy into buf (PROG_MAX bytes) and sets *lenp. */
static int
build(unsigned char *buf, size_t *lenp, struct sbx_error *e)
{
	scmp_filter_ctx	 ctx;
	struct stat	 st;
	size_t		 off = 0;
	ssize_t		 r;
	int		 fd = -1, rc;

	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
		    "seccomp_unavailable", "cannot initialise libseccomp");
	/*
	 * Only the native ABI: a sandbox has no use for i386 code, and a
	 * second ABI is a second set of syscall numbers for every rule to
	 * get right.  Calls from a foreign ABI kill the process.
	 * KILL_PROCESS needs Linux 4.14; where libseccomp cannot confirm
	 * it (when seccomp(2) is itself filtered, say), killing the thread
	 * still keeps the call from running.
	 */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS) < 0 &&
	    (rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_THREAD)) < 0) {
		errno = -rc;
		export_error(e, "bad-architecture action");
		goto fail;
	}
	if (add_rules(ctx, e) == -1)
		goto fail;

#if defined(__x86_64__)
	memcpy(buf, x32_prefix, sizeof(x32_prefix));
	off = sizeof(x32_prefix);
#endif
	if ((fd = memfd_create("sbx-seccomp-export", MFD_CLOEXEC)) == -1) {
		export_error(e, "memfd_create");
		goto fail;
	}
	if ((rc = seccomp_export_bpf(ctx, fd)) < 0) {
		errno = -rc;
		export_error(e, "seccomp_export_bpf");
		goto fail;
	}
	if (fstat(fd, &st) == -1) {
		export_error(e, "fstat");
		goto fail;
	}
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    (size_t)st.st_size > PROG_MAX - off) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "seccomp_unavailable",
		    "cannot build the seccomp filter: program of %lld bytes",
		    (long long)st.st_size);
		goto fail;
	}
	if ((r = pread(fd, buf + off, (size_t)st.st_size, 0)) != st.st_size) {
		if (r >= 0)
			errno = EIO;
		export_error(e, "reading the exported program");
		goto fail;
	}
	*lenp = off + (size_t)st.st_size;
	close(fd);
	seccomp_release(ctx);
	return 0;
fail:
	if (fd != -1)
		close(fd);
	seccomp_release(ctx);
	return -1;
}

/*
 * seccomp-<hex SHA-256 over the policy id, a NUL and the native
 * architecture token>.bpf
 */
static void
cache_name(char *name, size_t size)
{
	crypto_hash_sha256_state	 st;
	unsigned char			 h[crypto_hash_sha256_BYTES];
	char				 arch[16], hex[sizeof(h) * 2 + 1];

	snprintf(arch, sizeof(arch), "%08" PRIx32, seccomp_arch_native());
	crypto_hash_sha256_init(&st);
	crypto_hash_sha256_update(&st, (const unsigned char *)POLICY_ID,
	    sizeof(POLICY_ID));
	crypto_hash_sha256_update(&st, (const unsigned char *)arch,
	    strlen(arch));
	crypto_hash_sha256_final(&st, h);
	sodium_bin2hex(hex, sizeof(hex), h, sizeof(h));
	snprintf(name, size, CACHE_PREFIX "%s" CACHE_SUFFIX, hex);
}

/* The cached program, if it is one we can trust; else -1. */
static int
cache_open(int dirfd, const char *name)
{
	struct stat	 st;
	int		 fd, fl;

	/*
	 * O_NOFOLLOW: a symlink planted at the name is refused, not
	 * followed to wherever it points.  O_NONBLOCK: a FIFO planted
	 * there cannot make us wait.  Then the file must be a regular file
	 * of ours that nobody else can write, holding a whole number of
	 * BPF instructions; anything else is rebuilt.  The bytes are
	 * trusted as far as the state root is: whoever can write there as
	 * us could change the rest of sbx's state too.
	 */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NOCTTY | O_NONBLOCK);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    (size_t)st.st_size > PROG_MAX)
		goto bad;
	if ((fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == -1)
		goto bad;
	return fd;
bad:
	close(fd);
	return -1;
}

/*
 * Writes the program to the cache atomically (a temporary file, fsync,
 * renameat over the name, which replaces a planted symlink rather than
 * writing through it) and returns a read-only descriptor of the file
 * written; -1 on any failure.
 */
static int
cache_store(int dirfd, const char *name, const unsigned char *buf,
    size_t len)
{
	struct stat	 ws, rs;
	unsigned char	 rnd[8];
	char		 hex[sizeof(rnd) * 2 + 1], tmp[64];
	int		 wfd = -1, rfd = -1, tries, saved;

	if (sodium_init() < 0)
		return -1;
	for (tries = 0; tries < 8; tries++) {
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
		snprintf(tmp, sizeof(tmp), ".seccomp-%s.tmp", hex);
		wfd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
		if (wfd != -1 || errno != EEXIST)
			break;
	}
	if (wfd == -1)
		return -1;
	/* The umask may have taken bits from 0600; put them back. */
	if (fchmod(wfd, 0600) == -1 || write_all(wfd, buf, len) == -1 ||
	    fsync(wfd) == -1)
		goto fail;
	/*
	 * Open the reader before the rename and check it is the file we
	 * wrote, so that what we return is what we built.
	 */
	rfd = openat(dirfd, tmp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
	if (rfd == -1 || fstat(wfd, &ws) == -1 || fstat(rfd, &rs) == -1 ||
	    ws.st_dev != rs.st_dev || ws.st_ino != rs.st_ino)
		goto fail;
	if (renameat(dirfd, tmp, dirfd, name) == -1)
		goto fail;
	close(wfd);
	return rfd;
fail:
	saved = errno;
	unlinkat(dirfd, tmp, 0);
	if (rfd != -1)
		close(rfd);
	close(wfd);
	errno = saved;
	return -1;
}

/* The program in a sealed memory file, for when there is no cache. */
static int
memfd_store(const unsigned char *buf, size_t len, struct sbx_error *e)
{
	char	 path[64];
	int	 fd, rfd;

	fd = memfd_create("sbx-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1)
		return export_error(e, "memfd_create");
	if (write_all(fd, buf, len) == -1 ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1) {
		export_error(e, "writing the program to memory");
		close(fd);
		return -1;
	}
	/*
	 * Hand out a read-only descriptor.  Without /proc the sealed
	 * descriptor is returned instead: its contents can no longer
	 * change either.
	 */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if ((rfd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		close(fd);
		return rfd;
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		export_error(e, "lseek");
		close(fd);
		return -1;
	}
	return fd;
}

int
sbx_seccomp_fd(int cache_dirfd, struct sbx_error *e)
{
	unsigned char	*buf;
	char		 name[CACHE_NAME_MAX];
	size_t		 len = 0;
	int		 fd = -1;

	if (cache_dirfd >= 0) {
		cache_name(name, sizeof(name));
		if ((fd = cache_open(cache_dirfd, name)) != -1)
			return fd;
	}
	if ((buf = malloc(PROG_MAX)) == NULL)
		return export_error(e, "malloc");
	if (build(buf, &len, e) == -1) {
		sbx_error_hint(e, "sbx runs nothing without its seccomp filter: "
		    "it needs libseccomp 2.5 or later and a kernel with "
		    "CONFIG_SECCOMP_FILTER");
		free(buf);
		return -1;
	}
	/* A cache that cannot be written is no reason not to run. */
	if (cache_dirfd >= 0)
		fd = cache_store(cache_dirfd, name, buf, len);
	if (fd == -1)
		fd = memfd_store(buf, len, e);
	free(buf);
	return fd;
}

const char *
sbx_seccomp_policy_id(void)
{
	return POLICY_ID;
}
