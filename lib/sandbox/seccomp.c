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
 * The program is handed to bwrap in sealed memory.  A copy is kept in the
 * state root's cache/ directory, under a name derived from the policy
 * version and the architecture.  The state root can be within a
 * sandbox's reach (a --workdir that holds it), so the copy is loaded only
 * when its SHA-256 is the digest compiled into this binary: the digest of
 * the program this very source and libseccomp build, computed at build
 * time by cmd/gen-seccomp-digest.c.  Anything else is not loaded: the
 * program is built (about half a millisecond), and a copy that differs
 * from it is replaced and reported.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/filter.h>
#include <linux/fs.h>
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
 * The digest of the program, written at build time by
 * cmd/gen-seccomp-digest.c, which compiles this file with
 * SBX_SECCOMP_GEN (and so without a digest) to build the program.
 * SBX_SECCOMP_DIGEST_LEN 0 means none: every run builds.
 */
#ifndef SBX_SECCOMP_GEN
#include "seccomp-digest.h"
#endif
#ifndef SBX_SECCOMP_DIGEST_LEN
#define SBX_SECCOMP_DIGEST_POLICY	""
#define SBX_SECCOMP_DIGEST_LEN		0
#define SBX_SECCOMP_DIGEST		""
#endif

/*
 * Bump whenever a rule below changes: the cache file name derives from
 * it, so that the copy an older policy left is not reported as tampered
 * with.
 */
#define POLICY_ID	"sbx-seccomp-5"

/* The largest program the kernel accepts, in bytes. */
#define PROG_MAX	(BPF_MAXINSNS * sizeof(struct sock_filter))

#define CACHE_PREFIX	"seccomp-"
#define CACHE_SUFFIX	".bpf"
/* "seccomp-" + 64 hex digits + ".bpf" + NUL */
#define CACHE_NAME_MAX	(sizeof(CACHE_PREFIX) - 1 + 64 + sizeof(CACHE_SUFFIX))

/*
 * The highest system call number this policy has been reviewed against:
 * Linux 6.18, whose last call is file_setattr (469).  Every number above
 * it is answered ENOSYS by the prologue below, so a call that a newer
 * kernel adds (and that the deny list cannot name yet) is refused, as if
 * the kernel were older, until someone reads what it does and moves this
 * line.  Since Linux 5.1 (pidfd_send_signal, 424) new calls get the same
 * number on every architecture with the common table; the others (alpha,
 * ia64, mips) offset it, and sbx does not know their tables.  32-bit arm
 * is left out too: its private calls (cacheflush, set_tls) live at
 * 0x0f0000 and up, which the C library needs.
 */
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__) || \
    defined(__riscv) || defined(__powerpc64__) || defined(__s390x__) || \
    defined(__loongarch__)
#define NR_MAX		469
/* The first number of the table shared by every such architecture. */
#define NR_COMMON	424
#else
#error "sbx: review this architecture's syscall table and set NR_MAX"
#endif

struct deny {
	const char	*name;
	int		 err;
	/*
	 * The call's number in the common table, for names too new for the
	 * libseccomp at hand (2.5.4 in Debian 12 stops at futex_wake, 454);
	 * 0 for older calls, which every libseccomp knows.
	 */
	int		 nr;
};

/*
 * Syscalls refused outright.  Each group says why.  A name unknown to
 * libseccomp is an error (fail closed) unless its number is given; a name
 * known but absent on this architecture (iopl on arm64, say) cannot be
 * called and is skipped.
 */
static const struct deny deny_list[] = {
	/*
	 * The kernel keyring is not namespaced: keys are per uid, so a
	 * sandbox could read or plant keys shared with the user's host
	 * session.
	 */
	{ "keyctl",		EPERM,	0 },
	{ "add_key",		EPERM,	0 },
	{ "request_key",	EPERM,	0 },
	/*
	 * eBPF and perf are large, privileged-by-design interfaces with a
	 * long record of local privilege escalations; perf also observes
	 * other processes.
	 */
	{ "bpf",		EPERM,	0 },
	{ "perf_event_open",	EPERM,	0 },
	/*
	 * userfaultfd lets a process pause the kernel in the middle of a
	 * copy from user memory, the standard way to win kernel races.
	 */
	{ "userfaultfd",	EPERM,	0 },
	/*
	 * io_uring performs socket, open and other operations on the
	 * process's behalf without a syscall that seccomp could inspect,
	 * so it would bypass every rule here; it is also the most exploited
	 * kernel subsystem of recent years.
	 */
	{ "io_uring_setup",	EPERM,	0 },
	{ "io_uring_enter",	EPERM,	0 },
	{ "io_uring_register",	EPERM,	0 },
	/* Replacing the running kernel or loading code into it. */
	{ "kexec_load",		EPERM,	0 },
	{ "kexec_file_load",	EPERM,	0 },
	{ "init_module",	EPERM,	0 },
	{ "finit_module",	EPERM,	0 },
	{ "delete_module",	EPERM,	0 },
	/*
	 * The mount table is bwrap's to build.  Inside its own user
	 * namespace the sandbox could otherwise unmount or cover what it
	 * was given (revealing files under a masking mount, or replacing a
	 * read-only bind) and, with the new mount API, do the same through
	 * detached trees (flatpak CVE-2021-41133).
	 */
	{ "mount",		EPERM,	0 },
	{ "umount2",		EPERM,	0 },
	{ "pivot_root",		EPERM,	0 },
	{ "chroot",		EPERM,	0 },
	{ "move_mount",		EPERM,	0 },
	{ "open_tree",		EPERM,	0 },
	{ "fsopen",		EPERM,	0 },
	{ "fsmount",		EPERM,	0 },
	{ "fsconfig",		EPERM,	0 },
	{ "fspick",		EPERM,	0 },
	{ "mount_setattr",	EPERM,	0 },
	/* open_tree with mount attributes (6.15): open_tree and more. */
	{ "open_tree_attr",	EPERM,	467 },
	/*
	 * statmount and listmount (6.8) read the mount table by id, and
	 * with a namespace id another mount namespace's; there is no need
	 * for them when /proc/self/mountinfo says the same about the
	 * sandbox's own mounts.  ENOSYS, as an older kernel answers, so
	 * that libmount falls back to mountinfo.
	 */
	{ "statmount",		ENOSYS,	457 },
	{ "listmount",		ENOSYS,	458 },
	/* Host-wide state no sandbox may change: swap, power, accounting. */
	{ "swapon",		EPERM,	0 },
	{ "swapoff",		EPERM,	0 },
	{ "reboot",		EPERM,	0 },
	{ "acct",		EPERM,	0 },
	/* The clock is shared by every process on the host. */
	{ "settimeofday",	EPERM,	0 },
	{ "clock_settime",	EPERM,	0 },
	{ "clock_adjtime",	EPERM,	0 },
	{ "adjtimex",		EPERM,	0 },
	/* The kernel log leaks kernel addresses and other users' activity. */
	{ "syslog",		EPERM,	0 },
	/*
	 * vhangup revokes the terminal from every process using it,
	 * including the user's shell outside the sandbox.
	 */
	{ "vhangup",		EPERM,	0 },
	/* Disk quotas are host-wide. */
	{ "quotactl",		EPERM,	0 },
	/* Obsolete profiling interface that reports kernel path names. */
	{ "lookup_dcookie",	EPERM,	0 },
	/*
	 * File handles name inodes without a path, so open_by_handle_at
	 * reaches files outside the sandbox's mounts (the 2014 docker
	 * "shocker" escape).  name_to_handle_at is its only producer.
	 */
	{ "name_to_handle_at",	EPERM,	0 },
	{ "open_by_handle_at",	EPERM,	0 },
	/*
	 * Cross-process memory and file descriptor access.  ptrace is
	 * refused below, so these, which need the same permission, are
	 * refused too: otherwise a sandboxed process could read or write
	 * sbx-init, the network bridge, or anything else sharing its uid
	 * in the sandbox.  pidfd_getfd steals descriptors the same way;
	 * kcmp leaks the ordering of kernel pointers.  On x86_64,
	 * pidfd_getfd is refused by sbx-init's own filter, which every
	 * command runs under (cmd/init-guard.c), and not here: sbx-init,
	 * pid 1, takes a caller's socket with it to perform a guarded
	 * socket call on that very file.
	 */
	{ "process_vm_readv",	EPERM,	0 },
	{ "process_vm_writev",	EPERM,	0 },
#if !defined(__x86_64__)
	{ "pidfd_getfd",	EPERM,	0 },
#endif
	{ "kcmp",		EPERM,	0 },
	/* Raw I/O port access. */
	{ "iopl",		EPERM,	0 },
	{ "ioperm",		EPERM,	0 },
	/* a.out loader, unused for decades and a historic source of bugs. */
	{ "uselib",		EPERM,	0 },
	/*
	 * Local descriptor table entries: only 16-bit code and Wine need
	 * them, and the LDT code has had its share of kernel bugs
	 * (CVE-2015-3290, CVE-2017-17053); kernels may be built without it.
	 */
	{ "modify_ldt",		EPERM,	0 },
	/*
	 * Legacy (POSIX-style) AIO: a large, rarely used subsystem with a
	 * record of use-after-frees (CVE-2019-10125 in aio_poll among
	 * them) that ordinary programs do not use.  ENOSYS, as a kernel
	 * built without CONFIG_AIO answers, so that libaio users (qemu,
	 * MariaDB, fio) fall back to threads.
	 */
	{ "io_setup",		ENOSYS,	0 },
	{ "io_destroy",		ENOSYS,	0 },
	{ "io_submit",		ENOSYS,	0 },
	{ "io_cancel",		ENOSYS,	0 },
	{ "io_getevents",	ENOSYS,	0 },
	{ "io_pgetevents",	ENOSYS,	0 },
	/*
	 * Joining another namespace would undo the isolation should a
	 * descriptor for one of the host's namespaces ever reach the
	 * sandbox.
	 */
	{ "setns",		EPERM,	0 },
	/* Removed from the kernel in 3.1; refused so old kernels agree. */
	{ "nfsservctl",		EPERM,	0 },
	/*
	 * ptrace: refused entirely rather than only PTRACE_ATTACH/SEIZE and
	 * requests aimed at pid 1.  Request-by-request rules leave
	 * PTRACE_TRACEME, itself the root of CVE-2019-13272, and any tracee
	 * a child chooses to be; on kernels before 4.8 a tracer could also
	 * rewrite syscalls after seccomp had checked them (firejail
	 * CVE-2017-5206).  The cost is no gdb or strace inside a sandbox,
	 * which is what flatpak accepts for non-development runs too.
	 */
	{ "ptrace",		EPERM,	0 },
	/*
	 * clone3 passes its flags in memory, where seccomp cannot look, so
	 * it cannot be held to the CLONE_NEW* rule on clone below.  ENOSYS,
	 * not EPERM, makes the C library fall back to clone.
	 */
	{ "clone3",		ENOSYS,	0 },
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

/*
 * One rule for `name`; `common` is its number in the common table (0:
 * none), used when libseccomp does not know the name.
 */
static int
rule_nr(scmp_filter_ctx ctx, uint32_t action, const char *name, int common,
    unsigned int argc, struct scmp_arg_cmp *cmp, struct sbx_error *e)
{
	int	 nr, rc;

	nr = seccomp_syscall_resolve_name(name);
	/*
	 * A number is only taken on trust where it cannot be wrong: in
	 * the common table, between its start and the last number
	 * reviewed.  On x86_64 the native table is the common one (x32
	 * calls are killed separately, below), and a filter holds the
	 * native architecture only, so the number is the kernel's.
	 */
	if (nr == __NR_SCMP_ERROR && common >= NR_COMMON && common <= NR_MAX)
		nr = common;
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

static int
rule(scmp_filter_ctx ctx, uint32_t action, const char *name,
    unsigned int argc, struct scmp_arg_cmp *cmp, struct sbx_error *e)
{
	return rule_nr(ctx, action, name, 0, argc, cmp, e);
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

/*
 * No set-user-ID or set-group-ID bit, on any file the sandbox makes or
 * changes.  What it writes in a --workdir outlives it on the host, and
 * when sbx runs as root a root-owned workdir is handed over idmapped
 * (idmount.c): a file the sandbox creates there is root's, group
 * root, on disk, so a chmod 4755 or 2755 would leave a setuid-root or
 * setgid-root program for any local user to run.  Every call that sets a
 * mode is refused when the mode has S_ISUID or S_ISGID (flatpak refuses
 * both for the same reason); a directory made inside a set-group-ID
 * directory still inherits the bit from the kernel, which grants no
 * privilege.  openat2 carries its mode in a structure no rule can read,
 * so it is answered ENOSYS (callers fall back to openat, which is
 * checked).
 */
static int
add_setuid(scmp_filter_ctx ctx, struct sbx_error *e)
{
	static const struct {
		const char	*name;
		int		 nr;	/* common-table number, or 0 */
		unsigned int	 arg;	/* which argument is the mode */
	} calls[] = {
		{ "chmod",	0,	1 },
		{ "fchmod",	0,	1 },
		{ "fchmodat",	0,	2 },
		{ "fchmodat2",	452,	2 },
		{ "creat",	0,	1 },
		{ "open",	0,	2 },
		{ "openat",	0,	3 },
		{ "mknod",	0,	1 },
		{ "mknodat",	0,	2 },
	};
	static const mode_t	 bits[] = { S_ISUID, S_ISGID };
	struct scmp_arg_cmp	 cmp;
	size_t			 i, b;

	for (i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		for (b = 0; b < sizeof(bits) / sizeof(bits[0]); b++) {
			memset(&cmp, 0, sizeof(cmp));
			cmp.arg = calls[i].arg;
			cmp.op = SCMP_CMP_MASKED_EQ;
			cmp.datum_a = bits[b];
			cmp.datum_b = bits[b];
			if (rule_nr(ctx, SCMP_ACT_ERRNO(EPERM), calls[i].name,
			    calls[i].nr, 1, &cmp, e) == -1)
				return -1;
		}
	return rule_nr(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat2", 437, 0, NULL,
	    e);
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
		if (rule_nr(ctx, SCMP_ACT_ERRNO(deny_list[i].err),
		    deny_list[i].name, deny_list[i].nr, 0, NULL, e) == -1)
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

	/*
	 * A project quota (issue 32) counts a file by its project id, which
	 * FS_IOC_FSSETXATTR sets (with the inherit flag), so a sandbox
	 * that could change it would move its files out of its project and
	 * past the limit.  FS_IOC_SETFLAGS (and its 32-bit twin) sets the
	 * inode flags, the project-inherit one among them on ext4.  Low 32
	 * bits only, as for TIOCSTI: the kernel reads the request as an
	 * unsigned int.  file_setattr(2) (Linux 6.17) does what
	 * FS_IOC_FSSETXATTR does, by path: denied whole.
	 */
	if (rule_masked(ctx, EPERM, "ioctl", 1, 0xffffffff,
	    (uint32_t)FS_IOC_FSSETXATTR, e) == -1 ||
	    rule_masked(ctx, EPERM, "ioctl", 1, 0xffffffff,
	    (uint32_t)FS_IOC_SETFLAGS, e) == -1 ||
	    rule_masked(ctx, EPERM, "ioctl", 1, 0xffffffff,
	    (uint32_t)FS_IOC32_SETFLAGS, e) == -1)
		return -1;
	if (rule_nr(ctx, SCMP_ACT_ERRNO(EPERM), "file_setattr", 469, 0, NULL,
	    e) == -1)
		return -1;

	if (add_personality(ctx, e) == -1 || add_setuid(ctx, e) == -1)
		return -1;
	if (add_sockets(ctx, "socket", e) == -1 ||
	    add_sockets(ctx, "socketpair", e) == -1)
		return -1;
	return 0;
}

/*
 * A hand-written prologue runs before libseccomp's program, for what
 * libseccomp cannot say: rules compare arguments, never the system call
 * number, so "every number above NR_MAX" is not a rule it can add.
 *
 * The architecture comes first: a number means nothing without it (an
 * i386 call's 469 is not x86_64's).  A call of another architecture goes
 * straight to libseccomp's program, which kills it (the bad-architecture
 * action below).  For the native one:
 *
 *  - -1 goes on unchanged, as libseccomp lets it: it is how a tracer
 *    cancels a call, and the kernel answers it with ENOSYS anyway.
 *  - On x86_64, a number with bit 30 set is the x32 ABI, whose calls
 *    arrive with the native AUDIT_ARCH_X86_64 and so pass the
 *    architecture check, and whose numbers would otherwise miss every
 *    rule: the process is killed.  libseccomp emits the same test when
 *    x32 is not in the filter; ours makes the guarantee independent of
 *    the libseccomp version.
 *  - Any other number above NR_MAX gets ENOSYS: not reviewed yet, so
 *    not allowed.  ENOSYS is what the kernel says of a call it lacks,
 *    which is what programs are written to handle.
 *
 * The prologue is independent of the program after it: BPF jumps are
 * relative, every path out of it either returns or falls through to the
 * program's first instruction, and that instruction loads what it needs.
 */
#if defined(__x86_64__)
#define X32_INSNS	2
#else
#define X32_INSNS	0
#endif
#define PRO_ARCH	1	/* the instruction whose k is the arch */

static const struct sock_filter prologue[] = {
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch)),
	/* k: the native architecture, filled in by build() */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 4 + X32_INSNS),
	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 2 + X32_INSNS, 0),
#if defined(__x86_64__)
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
	BPF_JUMP(BPF_JMP | BPF_JGT | BPF_K, NR_MAX, 0, 1),
	BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (ENOSYS &
	    SECCOMP_RET_DATA)),
	/* libseccomp's program follows */
};

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
	struct sock_filter	 pro[sizeof(prologue) / sizeof(prologue[0])];
	scmp_filter_ctx		 ctx;
	struct stat		 st;
	size_t			 off = 0;
	ssize_t			 r;
	int			 fd = -1, rc;

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

	memcpy(pro, prologue, sizeof(pro));
	pro[PRO_ARCH].k = seccomp_arch_native();
	memcpy(buf, pro, sizeof(pro));
	off = sizeof(pro);
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

/* What the cache holds at its name. */
enum cache_state {
	CACHE_ABSENT,		/* nothing there: a first run */
	CACHE_READ,		/* a file of ours, read into memory */
	CACHE_UNUSABLE		/* anything else */
};

/*
 * Reads the cache file into buf (PROG_MAX + 1 bytes) and sets *lenp.
 * Whether the bytes are any good is for the caller to decide.
 */
static enum cache_state
cache_read(int dirfd, const char *name, unsigned char *buf, size_t *lenp)
{
	struct stat	 st;
	ssize_t		 r;
	int		 fd;

	*lenp = 0;
	/*
	 * O_NOFOLLOW: a symlink planted at the name is not followed to
	 * wherever it points.  O_NONBLOCK: a FIFO planted there cannot make
	 * us wait.  Only a regular file of ours that nobody else can write
	 * is read at all, and no more of it than a program can be.
	 */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW |
	    O_NOCTTY | O_NONBLOCK);
	if (fd == -1)
		return errno == ENOENT ? CACHE_ABSENT : CACHE_UNUSABLE;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)) ||
	    st.st_size <= 0 || (size_t)st.st_size > PROG_MAX) {
		close(fd);
		return CACHE_UNUSABLE;
	}
	/* One byte more than stat said: a file that grew is not used. */
	r = pread(fd, buf, (size_t)st.st_size + 1, 0);
	close(fd);
	if (r != st.st_size)
		return CACHE_UNUSABLE;
	*lenp = (size_t)r;
	return CACHE_READ;
}

/*
 * Whether len bytes at p are the program whose digest was compiled into
 * this binary (never, when it carries none, or one of another policy).
 */
static int
digest_is_ours(const unsigned char *p, size_t len)
{
	/* The 32 bytes of the digest as a string literal, and its NUL. */
	static const unsigned char	 want[] = SBX_SECCOMP_DIGEST;
	unsigned char			 h[crypto_hash_sha256_BYTES];

	if (sizeof(want) != sizeof(h) + 1 || SBX_SECCOMP_DIGEST_LEN == 0 ||
	    len != SBX_SECCOMP_DIGEST_LEN ||
	    strcmp(SBX_SECCOMP_DIGEST_POLICY, POLICY_ID) != 0)
		return 0;
	crypto_hash_sha256(h, p, len);
	return memcmp(h, want, sizeof(h)) == 0;
}

/*
 * Writes the program to the cache atomically: a temporary file created
 * with O_EXCL | O_NOFOLLOW beneath the cache directory's descriptor,
 * fsync, then renameat over the name, which replaces a planted symlink
 * rather than writing through it.  0, or -1 on any failure.
 */
static int
cache_store(int dirfd, const char *name, const unsigned char *buf,
    size_t len)
{
	unsigned char	 rnd[8];
	char		 hex[sizeof(rnd) * 2 + 1], tmp[64];
	int		 wfd = -1, tries, saved;

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
	    fsync(wfd) == -1 || renameat(dirfd, tmp, dirfd, name) == -1)
		goto fail;
	close(wfd);
	return 0;
fail:
	saved = errno;
	unlinkat(dirfd, tmp, 0);
	close(wfd);
	errno = saved;
	return -1;
}

/*
 * The program in a sealed memory file: what bwrap reads is what was
 * built here, whatever happens to the cache file meanwhile.
 */
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
sbx_seccomp_fd_info(int cache_dirfd, struct sbx_seccomp_info *info,
    struct sbx_error *e)
{
	struct sbx_seccomp_info	 scratch;
	unsigned char		*buf, *cbuf;
	char			 name[CACHE_NAME_MAX];
	size_t			 len = 0, clen = 0;
	enum cache_state	 cs = CACHE_ABSENT;
	int			 fd;

	if (info == NULL)
		info = &scratch;
	memset(info, 0, sizeof(*info));
	/* The program built, then the cache's bytes (and one more). */
	if ((buf = malloc(2 * PROG_MAX + 1)) == NULL)
		return export_error(e, "malloc");
	cbuf = buf + PROG_MAX;
	/*
	 * The cache lives in the state root, and a state root is not out
	 * of reach of sandboxes: one given a --workdir that holds another
	 * state root can write that root's cache/.  An 8-byte "allow"
	 * program would pass any check of owner, mode and size, and a
	 * sound program of another policy would even pass the kernel's
	 * checks.  So the only cached program loaded is one whose SHA-256
	 * is the digest this binary was built with, the program its own
	 * code and libseccomp produce; and it is loaded from the bytes read
	 * and hashed here, copied to sealed memory, never from the file,
	 * which could be rewritten between the check and bwrap's read.
	 */
	if (cache_dirfd >= 0) {
		cache_name(name, sizeof(name));
		cs = cache_read(cache_dirfd, name, cbuf, &clen);
		if (cs == CACHE_READ && digest_is_ours(cbuf, clen)) {
			info->cached = 1;
			fd = memfd_store(cbuf, clen, e);
			free(buf);
			return fd;
		}
	}
	/*
	 * Missing, different, or no digest to check it against: build.
	 * A built program whose digest is not the compiled-in one (a
	 * libseccomp other than the one this binary was built with, a
	 * kernel that changes what it emits) is used all the same: it is
	 * what this code builds here; the cache is then never loaded.
	 */
	if (build(buf, &len, e) == -1) {
		sbx_error_hint(e, "sbx runs nothing without its seccomp filter: "
		    "it needs libseccomp 2.5 or later and a kernel with "
		    "CONFIG_SECCOMP_FILTER");
		free(buf);
		return -1;
	}
	info->built = 1;
	info->digest_match = digest_is_ours(buf, len);
	/*
	 * The cache file is checked as a tripwire: a file that is not byte
	 * for byte the program was written by someone else (or by another
	 * version of sbx) and is replaced, and the run is told.  A cache
	 * that cannot be written is no reason not to run.
	 */
	if (cache_dirfd >= 0 && !(cs == CACHE_READ && clen == len &&
	    memcmp(cbuf, buf, len) == 0)) {
		if (cs == CACHE_ABSENT)
			(void)cache_store(cache_dirfd, name, buf, len);
		else if (cache_store(cache_dirfd, name, buf, len) == 0)
			info->warning = SBX_SECCOMP_WARN_REPLACED;
		else
			info->warning = SBX_SECCOMP_WARN_KEPT;
	}
	fd = memfd_store(buf, len, e);
	free(buf);
	return fd;
}

int
sbx_seccomp_fd(int cache_dirfd, const char **warning, struct sbx_error *e)
{
	struct sbx_seccomp_info	 info;
	int			 fd;

	fd = sbx_seccomp_fd_info(cache_dirfd, &info, e);
	if (warning != NULL)
		*warning = fd == -1 ? NULL : info.warning;
	return fd;
}

const char *
sbx_seccomp_policy_id(void)
{
	return POLICY_ID;
}
