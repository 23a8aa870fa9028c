/*
 * try-syscall: make one system call and report how it ended.
 *
 *   try-syscall NAME     make the call named NAME
 *   try-syscall --list   print the names, one a line
 *
 * Every call is made with harmless arguments (a bad descriptor, the
 * pointer 1, an invalid flag or size) so that a kernel that runs it
 * answers EBADF, EFAULT or EINVAL and changes nothing, while a seccomp
 * filter that refuses it answers EPERM, ENOSYS or EAFNOSUPPORT, or kills
 * the caller with SIGSYS.  A few probes are expected to succeed, and
 * whatever succeeds happens in a throwaway child process.
 *
 * Output: "NAME errno=N (ENAME)" (errno=0 (OK) on success), or
 * "NAME signal=N (SIGNAME)" when the call killed the child.
 * Exit status: the errno, 0 on success, 128 + N for a signal, 254 when
 * the call does not exist on this architecture, 255 on usage errors.
 *
 * Built statically and without sbx's library: it runs inside sandboxes
 * and images that have nothing of ours.
 */
#include <sys/ioctl.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EX_NOSYSCALL	254
#define EX_USAGE	255

/* The initial pid namespace's inode number (PROC_PID_INIT_INO). */
#define PID_NS_INIT_INO	0xeffffffcU

#ifndef AF_VSOCK
#define AF_VSOCK	40
#endif
#ifndef AF_ALG
#define AF_ALG		38
#endif
#ifndef CLONE_NEWUSER
#define CLONE_NEWUSER	0x10000000
#endif
#ifndef CLONE_NEWNET
#define CLONE_NEWNET	0x40000000
#endif

/* Syscalls this architecture (or these headers) lack: -1. */
#ifndef SYS_add_key
#define SYS_add_key		-1
#endif
#ifndef SYS_bpf
#define SYS_bpf			-1
#endif
#ifndef SYS_clone3
#define SYS_clone3		-1
#endif
#ifndef SYS_fsconfig
#define SYS_fsconfig		-1
#endif
#ifndef SYS_fsmount
#define SYS_fsmount		-1
#endif
#ifndef SYS_fsopen
#define SYS_fsopen		-1
#endif
#ifndef SYS_fspick
#define SYS_fspick		-1
#endif
#ifndef SYS_io_uring_enter
#define SYS_io_uring_enter	-1
#endif
#ifndef SYS_io_uring_register
#define SYS_io_uring_register	-1
#endif
#ifndef SYS_io_uring_setup
#define SYS_io_uring_setup	-1
#endif
#ifndef SYS_ioperm
#define SYS_ioperm		-1
#endif
#ifndef SYS_iopl
#define SYS_iopl		-1
#endif
#ifndef SYS_kcmp
#define SYS_kcmp		-1
#endif
#ifndef SYS_kexec_file_load
#define SYS_kexec_file_load	-1
#endif
#ifndef SYS_lookup_dcookie
#define SYS_lookup_dcookie	-1
#endif
#ifndef SYS_mount_setattr
#define SYS_mount_setattr	-1
#endif
#ifndef SYS_move_mount
#define SYS_move_mount		-1
#endif
#ifndef SYS_nfsservctl
#define SYS_nfsservctl		-1
#endif
#ifndef SYS_open_tree
#define SYS_open_tree		-1
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd		-1
#endif
#ifndef SYS_uselib
#define SYS_uselib		-1
#endif
#ifndef SYS_userfaultfd
#define SYS_userfaultfd		-1
#endif
#ifndef SYS_modify_ldt
#define SYS_modify_ldt		-1
#endif
#ifndef SYS_io_pgetevents
#define SYS_io_pgetevents	-1
#endif
/*
 * Newer than these headers: since Linux 5.1 new calls have one number on
 * every architecture with the common table (x86_64, i386, arm64, ...).
 */
#ifndef SYS_statmount
#define SYS_statmount		457
#endif
#ifndef SYS_listmount
#define SYS_listmount		458
#endif
#ifndef SYS_open_tree_attr
#define SYS_open_tree_attr	467
#endif

#define BAD	1L	/* a pointer the kernel cannot read or write */
#define NOFD	-1L

struct probe {
	const char	*name;
	long		 nr;		/* -1: not here; 0 with fn: special */
	long		 a[6];
	long		 (*fn)(void);
};

static long
p_tiocsti(void)
{
	return syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI, BAD);
}

/* The same request with high bits set, which the kernel ignores. */
static long
p_tiocsti_high(void)
{
	return syscall(SYS_ioctl, 0, (unsigned long)TIOCSTI | 0x100000000UL,
	    BAD);
}

static long
p_tioclinux(void)
{
	return syscall(SYS_ioctl, 0, (unsigned long)TIOCLINUX, BAD);
}

/* A clone that got through: the child leaves at once. */
static long
reap(long r)
{
	if (r == 0)
		_exit(0);
	if (r > 0)
		waitpid((pid_t)r, NULL, __WALL);
	return r > 0 ? 0 : r;
}

static long
p_clone_newuser(void)
{
#if defined(__s390__) || defined(__s390x__)
	return reap(syscall(SYS_clone, 0L, CLONE_NEWUSER | SIGCHLD, 0L, 0L,
	    0L));
#else
	return reap(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0L, 0L, 0L,
	    0L));
#endif
}

static long
p_clone3(void)
{
	uint64_t	 args[8];	/* struct clone_args, version 0 */

	if (SYS_clone3 == -1) {
		errno = ENOSYS;
		return -1;
	}
	memset(args, 0, sizeof(args));
	args[0] = CLONE_NEWUSER;	/* flags */
	args[4] = SIGCHLD;		/* exit_signal */
	return reap(syscall(SYS_clone3, args, sizeof(args)));
}

static long
p_unshare_user(void)
{
	return syscall(SYS_unshare, CLONE_NEWUSER);
}

static long
p_unshare_net(void)
{
	return syscall(SYS_unshare, CLONE_NEWNET);
}

static long
p_socketpair_packet(void)
{
	int	 sv[2];

	return syscall(SYS_socketpair, AF_PACKET, SOCK_DGRAM, 0, sv);
}

/* AF_PACKET with a high bit set: the kernel reads an int. */
static long
p_socket_packet_high(void)
{
	return syscall(SYS_socket, 0x100000000L | AF_PACKET, SOCK_DGRAM, 0);
}

static long
p_x32(void)
{
#if defined(__x86_64__)
	return syscall(SYS_getpid | 0x40000000);
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long
p_i386(void)
{
#if defined(__x86_64__)
	long	 r;

	/* getpid is 20 in the i386 table */
	__asm__ volatile ("int $0x80" : "=a"(r) : "a"(20L)
	    : "memory", "r8", "r9", "r10", "r11");
	if ((int)r < 0 && (int)r > -4096) {
		errno = -(int)r;
		return -1;
	}
	return 0;
#else
	errno = ENOSYS;
	return -1;
#endif
}

static long
p_process_vm_readv(void)
{
	return syscall(SYS_process_vm_readv, (long)getpid(), BAD, 1L, BAD, 1L,
	    0L);
}

static long
p_process_vm_writev(void)
{
	return syscall(SYS_process_vm_writev, (long)getpid(), BAD, 1L, BAD, 1L,
	    0L);
}

static long
p_kcmp(void)
{
	if (SYS_kcmp == -1) {
		errno = ENOSYS;
		return -1;
	}
	/* type 0xff does not exist */
	return syscall(SYS_kcmp, (long)getpid(), (long)getpid(), 0xffL, 0L,
	    0L);
}

/*
 * vhangup() run by root hangs up the controlling terminal, which could
 * be the user's; a new session has none.
 */
static long
p_vhangup(void)
{
	setsid();
	return syscall(SYS_vhangup);
}

/*
 * Attaching to pid 1 is only ever tried inside a pid namespace of our
 * own: should the call get through on the host, it would stop init.
 */
static long
p_ptrace_attach(void)
{
	struct stat	 st;

	if (stat("/proc/self/ns/pid", &st) == -1 ||
	    st.st_ino == PID_NS_INIT_INO) {
		fprintf(stderr, "try-syscall: ptrace-attach: refusing to "
		    "attach to pid 1 outside a pid namespace\n");
		_exit(EX_USAGE);
	}
	return syscall(SYS_ptrace, (long)PTRACE_ATTACH, 1L, 0L, 0L);
}

static const struct probe probes[] = {
	/* the deny list, each call harmless if it ran */
	{ "keyctl",		SYS_keyctl, { 0xffff }, NULL },
	{ "add_key",		SYS_add_key, { BAD, BAD, 0, 0, -1 }, NULL },
	{ "request_key",	SYS_request_key, { BAD, BAD, 0, -1 }, NULL },
	{ "bpf",		SYS_bpf, { -1, BAD, 0 }, NULL },
	{ "perf_event_open",	SYS_perf_event_open, { BAD, 0, -1, -1, 0 },
				NULL },
	{ "userfaultfd",	SYS_userfaultfd, { -1 }, NULL },
	{ "io_uring_setup",	SYS_io_uring_setup, { 1, BAD }, NULL },
	{ "io_uring_enter",	SYS_io_uring_enter, { NOFD, 0, 0, 0, 0, 0 },
				NULL },
	{ "io_uring_register",	SYS_io_uring_register, { NOFD, 0, 0, 0 },
				NULL },
	/* too many segments and an unknown architecture: EINVAL */
	{ "kexec_load",		SYS_kexec_load, { 0, 1000, BAD, 0xffff0000 },
				NULL },
	{ "kexec_file_load",	SYS_kexec_file_load,
				{ NOFD, NOFD, 0, BAD, 0xffffffff }, NULL },
	{ "init_module",	SYS_init_module, { BAD, 0, BAD }, NULL },
	{ "finit_module",	SYS_finit_module, { NOFD, BAD, 0 }, NULL },
	{ "delete_module",	SYS_delete_module, { BAD, 0 }, NULL },
	{ "mount",		SYS_mount, { BAD, BAD, BAD, 0, 0 }, NULL },
	{ "umount2",		SYS_umount2, { BAD, 0 }, NULL },
	{ "pivot_root",		SYS_pivot_root, { BAD, BAD }, NULL },
	{ "chroot",		SYS_chroot, { BAD }, NULL },
	{ "move_mount",		SYS_move_mount, { NOFD, BAD, NOFD, BAD, 0 },
				NULL },
	{ "open_tree",		SYS_open_tree, { NOFD, BAD, 0 }, NULL },
	{ "fsopen",		SYS_fsopen, { BAD, 0 }, NULL },
	{ "fsmount",		SYS_fsmount, { NOFD, 0, 0 }, NULL },
	{ "fsconfig",		SYS_fsconfig, { NOFD, 0, 0, 0, 0 }, NULL },
	{ "fspick",		SYS_fspick, { NOFD, BAD, 0 }, NULL },
	/* size 0 is below the smallest struct mount_attr: EINVAL */
	{ "mount_setattr",	SYS_mount_setattr, { NOFD, BAD, 0, BAD, 0 },
				NULL },
	{ "open_tree_attr",	SYS_open_tree_attr, { NOFD, BAD, 0, 0, 0 },
				NULL },
	/* the request cannot be read: EFAULT */
	{ "statmount",		SYS_statmount, { BAD, BAD, 0, 0 }, NULL },
	{ "listmount",		SYS_listmount, { BAD, BAD, 0, 0 }, NULL },
	{ "swapon",		SYS_swapon, { BAD, 0 }, NULL },
	{ "swapoff",		SYS_swapoff, { BAD }, NULL },
	/* no magic numbers: EINVAL */
	{ "reboot",		SYS_reboot, { 0, 0, 0, 0 }, NULL },
	/* never NULL: that would switch accounting off */
	{ "acct",		SYS_acct, { BAD }, NULL },
	{ "settimeofday",	SYS_settimeofday, { BAD, BAD }, NULL },
	{ "clock_settime",	SYS_clock_settime, { 0, BAD }, NULL },
	{ "clock_adjtime",	SYS_clock_adjtime, { 0, BAD }, NULL },
	{ "adjtimex",		SYS_adjtimex, { BAD }, NULL },
	/* SYSLOG_ACTION_SIZE_BUFFER: a harmless query */
	{ "syslog",		SYS_syslog, { 10, 0, 0 }, NULL },
	{ "vhangup",		0, { 0 }, p_vhangup },
	{ "quotactl",		SYS_quotactl, { 0, BAD, 0, 0 }, NULL },
	{ "lookup_dcookie",	SYS_lookup_dcookie, { 0, BAD, 0 }, NULL },
	{ "name_to_handle_at",	SYS_name_to_handle_at,
				{ NOFD, BAD, BAD, BAD, 0 }, NULL },
	{ "open_by_handle_at",	SYS_open_by_handle_at, { NOFD, BAD, 0 },
				NULL },
	{ "process_vm_readv",	0, { 0 }, p_process_vm_readv },
	{ "process_vm_writev",	0, { 0 }, p_process_vm_writev },
	{ "pidfd_getfd",	SYS_pidfd_getfd, { NOFD, 0, 0 }, NULL },
	{ "kcmp",		0, { 0 }, p_kcmp },
	/* level 4 does not exist: EINVAL */
	{ "iopl",		SYS_iopl, { 4 }, NULL },
	/* an empty range: EINVAL */
	{ "ioperm",		SYS_ioperm, { 0, 0, 0 }, NULL },
	{ "uselib",		SYS_uselib, { BAD }, NULL },
	/* read an LDT we do not have: 0, or EFAULT */
	{ "modify_ldt",		SYS_modify_ldt, { 0, BAD, 16 }, NULL },
	/* legacy AIO on context 0, which does not exist: EINVAL */
	{ "io_setup",		SYS_io_setup, { 0, BAD }, NULL },
	{ "io_destroy",		SYS_io_destroy, { 0 }, NULL },
	{ "io_submit",		SYS_io_submit, { 0, 0, BAD }, NULL },
	{ "io_cancel",		SYS_io_cancel, { 0, BAD, BAD }, NULL },
	{ "io_getevents",	SYS_io_getevents, { 0, 0, 0, BAD, 0 }, NULL },
	{ "io_pgetevents",	SYS_io_pgetevents, { 0, 0, 0, BAD, 0, 0 },
				NULL },
	/*
	 * Numbers no kernel has yet, above the last one sbx's policy
	 * reviewed: the filter answers ENOSYS (as the kernel does, so only
	 * t-seccomp's look at the program shows whose answer it is).
	 */
	{ "syscall-470",	470, { 0 }, NULL },
	{ "syscall-1000",	1000, { 0 }, NULL },
	{ "setns",		SYS_setns, { NOFD, 0 }, NULL },
	{ "nfsservctl",		SYS_nfsservctl, { 0, 0, 0 }, NULL },
	/* PTRACE_PEEKDATA from pid 0, which does not exist: ESRCH */
	{ "ptrace",		SYS_ptrace, { PTRACE_PEEKDATA, 0, 0, 0 }, NULL },
	{ "ptrace-attach",	0, { 0 }, p_ptrace_attach },

	/* argument-dependent rules */
	{ "tiocsti",		0, { 0 }, p_tiocsti },
	{ "tiocsti-high",	0, { 0 }, p_tiocsti_high },
	{ "tioclinux",		0, { 0 }, p_tioclinux },
	{ "clone-newuser",	0, { 0 }, p_clone_newuser },
	{ "clone3",		0, { 0 }, p_clone3 },
	{ "unshare-user",	0, { 0 }, p_unshare_user },
	{ "unshare-net",	0, { 0 }, p_unshare_net },
	{ "socket-packet",	SYS_socket, { AF_PACKET, SOCK_DGRAM, 0 },
				NULL },
	{ "socket-packet-high",	0, { 0 }, p_socket_packet_high },
	{ "socketpair-packet",	0, { 0 }, p_socketpair_packet },
	{ "socket-vsock",	SYS_socket, { AF_VSOCK, SOCK_STREAM, 0 },
				NULL },
	{ "socket-alg",		SYS_socket, { AF_ALG, SOCK_SEQPACKET, 0 },
				NULL },
	{ "personality-bad",	SYS_personality, { READ_IMPLIES_EXEC },
				NULL },
	{ "personality-norandom", SYS_personality, { ADDR_NO_RANDOMIZE },
				NULL },
	{ "x32",		0, { 0 }, p_x32 },
	{ "i386",		0, { 0 }, p_i386 },

	/* must succeed under the filter */
	{ "socket-inet",	SYS_socket, { AF_INET, SOCK_STREAM, 0 },
				NULL },
	{ "personality-ok",	SYS_personality, { 0xffffffff }, NULL },
	{ "getpid",		SYS_getpid, { 0 }, NULL },
};

static const char *
errname(int e)
{
	switch (e) {
	case 0:			return "OK";
	case EPERM:		return "EPERM";
	case ENOENT:		return "ENOENT";
	case ESRCH:		return "ESRCH";
	case EINTR:		return "EINTR";
	case EIO:		return "EIO";
	case ENXIO:		return "ENXIO";
	case E2BIG:		return "E2BIG";
	case ENOEXEC:		return "ENOEXEC";
	case EBADF:		return "EBADF";
	case ECHILD:		return "ECHILD";
	case EAGAIN:		return "EAGAIN";
	case ENOMEM:		return "ENOMEM";
	case EACCES:		return "EACCES";
	case EFAULT:		return "EFAULT";
	case EBUSY:		return "EBUSY";
	case EEXIST:		return "EEXIST";
	case ENODEV:		return "ENODEV";
	case ENOTDIR:		return "ENOTDIR";
	case EISDIR:		return "EISDIR";
	case EINVAL:		return "EINVAL";
	case EMFILE:		return "EMFILE";
	case ENOTTY:		return "ENOTTY";
	case ENOSPC:		return "ENOSPC";
	case EROFS:		return "EROFS";
	case ERANGE:		return "ERANGE";
	case ENAMETOOLONG:	return "ENAMETOOLONG";
	case ENOSYS:		return "ENOSYS";
	case ELOOP:		return "ELOOP";
	case EOVERFLOW:		return "EOVERFLOW";
	case EPROTOTYPE:	return "EPROTOTYPE";
	case EPROTONOSUPPORT:	return "EPROTONOSUPPORT";
	case ESOCKTNOSUPPORT:	return "ESOCKTNOSUPPORT";
	case EOPNOTSUPP:	return "EOPNOTSUPP";
	case EAFNOSUPPORT:	return "EAFNOSUPPORT";
	case ENOKEY:		return "ENOKEY";
	case EKEYREJECTED:	return "EKEYREJECTED";
	default:		return "E?";
	}
}

static const char *
signame(int s)
{
	switch (s) {
	case SIGSYS:	return "SIGSYS";
	case SIGSEGV:	return "SIGSEGV";
	case SIGBUS:	return "SIGBUS";
	case SIGILL:	return "SIGILL";
	case SIGKILL:	return "SIGKILL";
	case SIGABRT:	return "SIGABRT";
	case SIGTRAP:	return "SIGTRAP";
	default:	return "SIG?";
	}
}

static int
usage(void)
{
	fprintf(stderr, "usage: try-syscall NAME | --list\n");
	return EX_USAGE;
}

int
main(int argc, char *argv[])
{
	const struct probe	*p = NULL;
	struct rlimit		 nocore = { 0, 0 };
	size_t			 i;
	pid_t			 pid;
	long			 r;
	int			 st;

	if (argc != 2)
		return usage();
	for (i = 0; i < sizeof(probes) / sizeof(probes[0]); i++) {
		if (strcmp(argv[1], "--list") == 0)
			printf("%s\n", probes[i].name);
		else if (strcmp(argv[1], probes[i].name) == 0)
			p = &probes[i];
	}
	if (strcmp(argv[1], "--list") == 0)
		return 0;
	if (p == NULL) {
		fprintf(stderr, "try-syscall: %s: unknown call\n", argv[1]);
		return usage();
	}
	if (p->fn == NULL && p->nr == -1) {
		printf("%s unsupported\n", p->name);
		return EX_NOSYSCALL;
	}

	/*
	 * The call is made in a child, so that one that kills (SIGSYS) can
	 * still be reported, and anything that succeeds stays there.
	 */
	fflush(stdout);
	if ((pid = fork()) == -1) {
		perror("try-syscall: fork");
		return EX_USAGE;
	}
	if (pid == 0) {
		setrlimit(RLIMIT_CORE, &nocore);
		errno = 0;
		if (p->fn != NULL)
			r = p->fn();
		else
			r = syscall(p->nr, p->a[0], p->a[1], p->a[2], p->a[3],
			    p->a[4], p->a[5]);
		_exit(r == -1 ? (errno & 0xff) : 0);
	}
	while (waitpid(pid, &st, 0) == -1) {
		if (errno != EINTR) {
			perror("try-syscall: waitpid");
			return EX_USAGE;
		}
	}
	if (WIFSIGNALED(st)) {
		printf("%s signal=%d (%s)\n", p->name, WTERMSIG(st),
		    signame(WTERMSIG(st)));
		return 128 + WTERMSIG(st);
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == EX_USAGE)
		return EX_USAGE;
	printf("%s errno=%d (%s)\n", p->name, WEXITSTATUS(st),
	    errname(WEXITSTATUS(st)));
	return WEXITSTATUS(st);
}
