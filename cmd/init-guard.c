/*
 * init-guard.c: sbx-init's guard of the file-system policy.
 *
 * Protected paths that exist are read-only bind mounts (fspolicy.c
 * asks bwrap for them).  A protected name that does not exist yet cannot
 * be a mount: a mount needs a mount point, and bwrap would create one in
 * the user's tree through the read-write bind of the workdir, where it
 * stays as a "ghost" file after the run (and after kill -9, and under the
 * feet of a second sandbox on the same tree).  Landlock cannot say "any
 * name but these" either: its rights are per directory.  So the names are
 * refused at the system call: the command runs under a seccomp filter
 * that hands every call able to create a name (open/openat/creat with
 * O_CREAT, mkdir, mknod, symlink, link, rename, bind) to pid 1, which is
 * the supervisor (SECCOMP_RET_USER_NOTIF).
 *
 * The supervisor never lets the kernel redo a call it approved
 * (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the kernel would read the path from
 * the command's memory again, and another thread could have changed it
 * meanwhile.  It reads the path once, resolves the parent directory
 * itself (relative to the caller's working directory or descriptor, as
 * the kernel would), decides on that directory's device and inode and the
 * last name, and performs the call on that very directory descriptor:
 * what was checked is what is done.  An opened file is handed to the
 * caller with SECCOMP_IOCTL_NOTIF_ADDFD.  pid 1 runs as the same user in
 * the same namespaces as the command, with its umask set to the caller's
 * for the call, so the result is the one the kernel would have given.
 *
 * Unix sockets (-U): connect(), and the sends that carry an address
 * (sendto, sendmsg, sendmmsg), are performed the same way, never
 * continued: pid 1 takes the caller's socket (pidfd_getfd), reads the
 * address once, decides a unix peer on its file and reaches that very
 * file (cmd/init-guard-sock.c).  A socket file no socket of the sandbox's
 * network namespace is bound to is refused with EACCES, unless it is one
 * of -A (allow_unix_sockets).  bind() of a unix path creates a name, and
 * is guarded with the other calls that do.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"

#include "init-guard-int.h"

struct block	 blocks[MAX_BLOCK];
int		 nblocks;
char		*prot[MAX_PROT];
int		 nprot;
struct guard_sock socks[MAX_SOCK];
int		 nsocks;
int		 unix_on;
char		*reported[MAX_REPORTED];
int		 nreported;
char		*git_roots[MAX_GIT];
int		 ngit_roots;
char		*git_dirs[MAX_GIT];
int		 ngit_dirs;
char		*git_open[MAX_GIT];
int		 ngit_open;

static int
devino(const char *s, unsigned long long *dev, unsigned long long *ino,
    const char **rest)
{
	char	*end;

	errno = 0;
	*dev = strtoull(s, &end, 10);
	if (errno || end == s || *end != ':')
		return -1;
	s = end + 1;
	*ino = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	*rest = end;
	return 0;
}

int
guard_add_block(const char *spec)
{
	const char	*rest;
	struct block	*b;

	if (nblocks == MAX_BLOCK)
		return errno = E2BIG, -1;
	b = &blocks[nblocks];
	if (devino(spec, &b->dev, &b->ino, &rest) == -1 || *rest != ':' ||
	    rest[1] == '\0' || strchr(rest + 1, '/') != NULL)
		return errno = EINVAL, -1;
	if ((b->name = strdup(rest + 1)) == NULL)
		return -1;
	nblocks++;
	return 0;
}

int
guard_add_protected(const char *path)
{
	if (nprot == MAX_PROT)
		return errno = E2BIG, -1;
	if (path[0] != '/')
		return errno = EINVAL, -1;
	prot[nprot++] = (char *)path;
	return 0;
}

/* A path as sbx-init gets it, normalized: absolute, no trailing /. */
static int
add_path(char **v, int *n, char *path)
{
	size_t	 len = strlen(path);

	if (*n == MAX_GIT)
		return errno = E2BIG, -1;
	if (path[0] != '/' || len < 2)
		return errno = EINVAL, -1;
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	v[(*n)++] = path;
	return 0;
}

int
guard_add_gitroot(const char *path)
{
	return add_path(git_roots, &ngit_roots, (char *)path);
}

int
guard_add_gitdir(const char *path)
{
	return add_path(git_dirs, &ngit_dirs, (char *)path);
}

int
guard_add_gitopen(const char *name)
{
	if (ngit_open == MAX_GIT)
		return errno = E2BIG, -1;
	if (name[0] == '\0' || strchr(name, '/') != NULL)
		return errno = EINVAL, -1;
	git_open[ngit_open++] = (char *)name;
	return 0;
}

void
guard_unix(void)
{
	unix_on = 1;
}

int
guard_add_socket(const char *spec)
{
	const char	*rest;

	if (nsocks == MAX_SOCK)
		return errno = E2BIG, -1;
	if (devino(spec, &socks[nsocks].dev, &socks[nsocks].ino, &rest) ==
	    -1 || *rest != '\0')
		return errno = EINVAL, -1;
	nsocks++;
	return 0;
}

int
guard_active(void)
{
	return nblocks > 0 || nprot > 0 || ngit_roots > 0 || ngit_dirs > 0 ||
	    unix_on;
}

#define LD_ARG_LO(n)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
	offsetof(struct seccomp_data, args) + 8 * (n))
#define LD_ARG_HI(n)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, \
	offsetof(struct seccomp_data, args) + 8 * (n) + 4)

#ifndef SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV
#define SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV	(1UL << 5)
#endif

/*
 * The calls that create a name (besides open/openat with O_CREAT, checked
 * by flag), and the socket calls with -U.  openat2 carries its flags in
 * memory, where the filter cannot look; sbx's own filter answers it
 * ENOSYS, and the C library falls back to openat.  O_TMPFILE creates no
 * name: linkat gives it one, and linkat is here.  bind() of a unix
 * socket's path creates a name as mknod does (and leaves it after the
 * run), so bind is here.
 */
static const int create_calls[] = {
	SYS_creat, SYS_mkdir, SYS_mkdirat, SYS_mknod, SYS_mknodat,
	SYS_symlink, SYS_symlinkat, SYS_link, SYS_linkat, SYS_rename,
	SYS_renameat, SYS_renameat2, SYS_bind,
};

/*
 * With -U, every call that can name a unix socket's path as its peer:
 * connect, and the sends that carry an address.  sendto carries it in a
 * register (a NULL address is left alone, below); sendmsg and sendmmsg in
 * memory, where the filter cannot look, so all of them come to pid 1.
 */
static const int sock_calls[] = {
	SYS_connect, SYS_sendmsg, SYS_sendmmsg,
};

int
guard_install(int sock)
{
#if defined(__x86_64__)
	struct sock_filter	 f[64];
	struct sock_fprog	 prog;
	unsigned		 calls[24];
	int			 n = 0, a, j, k = 0, lfd, creates, sockc;
	char			 c;

	/* Without names to guard, only the socket calls are looked at:
	 * nothing else pays for the guard.  Without a guard at all (sock
	 * -1), the filter only refuses pidfd_getfd (below). */
	creates = sock >= 0 && (nblocks > 0 || nprot > 0 ||
	    ngit_roots > 0 || ngit_dirs > 0);
	sockc = sock >= 0 && unix_on;
	for (j = 0; creates && j < (int)(sizeof(create_calls) /
	    sizeof(*create_calls)); j++)
		calls[k++] = (unsigned)create_calls[j];
	for (j = 0; sockc && j < (int)(sizeof(sock_calls) /
	    sizeof(*sock_calls)); j++)
		calls[k++] = (unsigned)sock_calls[j];
	/*
	 * Layout: 0 arch, 1 jump, 2 nr, 3 pidfd_getfd, 4 open, 5 openat,
	 * 6 sendto, 7.. calls; a = allow, a+1 open's flags, a+4 openat's,
	 * a+7 sendto's address, a+12 notify, a+13 refuse.  (Calls not
	 * looked at compare with -1, which no call is.)
	 */
	a = 7 + k;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch));
	/* Another architecture's calls: sbx's own filter kills them. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    AUDIT_ARCH_X86_64, 0, (unsigned char)(a - 2));
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, nr));
	/*
	 * pidfd_getfd is pid 1's: it takes the caller's socket with it to
	 * perform a socket call on that very file (init-guard-sock.c), so
	 * sbx's own filter lets it through, and this one, which every
	 * command runs under, refuses it to the command and all it starts
	 * (a sandboxed process must not take another's descriptors).
	 */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    SYS_pidfd_getfd, (unsigned char)(a + 13 - 4), 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    creates ? SYS_open : 0xffffffffu, (unsigned char)(a + 1 - 5), 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    creates ? SYS_openat : 0xffffffffu, (unsigned char)(a + 4 - 6),
	    0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    sockc ? SYS_sendto : 0xffffffffu, (unsigned char)(a + 7 - 7), 0);
	for (j = 0; j < k; j++)
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
		    BPF_K, calls[j], (unsigned char)(a + 12 - (7 + j) - 1), 0);
	/* a */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	/* a+1: open's flags */
	f[n++] = (struct sock_filter)LD_ARG_LO(1);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
	    O_CREAT, (unsigned char)(a + 12 - (a + 2) - 1), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	/* a+4: openat's */
	f[n++] = (struct sock_filter)LD_ARG_LO(2);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
	    O_CREAT, (unsigned char)(a + 12 - (a + 5) - 1), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	/* a+7: sendto's address, all 64 bits of it: NULL sends nowhere
	 * new (the kernel reads no address). */
	f[n++] = (struct sock_filter)LD_ARG_LO(4);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    0, 0, (unsigned char)(a + 12 - (a + 8) - 1));
	f[n++] = (struct sock_filter)LD_ARG_HI(4);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    0, 0, (unsigned char)(a + 12 - (a + 10) - 1));
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	/* a+12 */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_USER_NOTIF);
	/* a+13 */
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA));
	prog.len = (unsigned short)n;
	prog.filter = f;
	/* Without sbx's own filter (--seccomp off) nothing refuses
	 * pidfd_getfd, and nothing needs to here. */
	if (sock < 0 && prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 2)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	if (sock < 0)
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0,
		    &prog);
	/*
	 * Killable waits: once pid 1 has the notification, a signal no
	 * longer interrupts the call (only a fatal one does).  pid 1 performs
	 * the call itself (a name created, a socket connected, a datagram
	 * sent); an interrupted call that the kernel restarts would do it
	 * twice (the same datagram or stream bytes sent again).  Kernels
	 * before 5.19 lack the flag: the guard still holds, with that
	 * rare duplicate.
	 */
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER |
	    SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV, &prog);
	if (lfd == -1 && errno == EINVAL)
		lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
		    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd == -1)
		return -1;
	/*
	 * The listener goes to pid 1, which takes it with pidfd_getfd:
	 * sendmsg(SCM_RIGHTS) is itself a call this filter hands to pid 1,
	 * which has no listener yet.  pid 1 needs ptrace rights over this
	 * process for that, as for every later call it serves; it inherited
	 * pid 1's "not dumpable", which the exec below would clear anyway.
	 * Nothing else runs in the sandbox yet to take advantage of it.
	 */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == -1 ||
	    write(sock, &lfd, sizeof(lfd)) != (ssize_t)sizeof(lfd))
		return -1;
	if (read(sock, &c, 1) != 1 || c != 'G')
		return errno = EPERM, -1;
	close(lfd);
	close(sock);
	return 0;
#else
	/* Fail closed: no guard, no run.  (Without a guard to install,
	 * sbx's own filter refuses pidfd_getfd on this architecture.) */
	if (sock < 0)
		return 0;
	return errno = ENOSYS, -1;
#endif
}

int
guard_receive(int sock, pid_t child)
{
	char	 c = 'G';
	int	 lfd, pfd, fd;

	if (read(sock, &lfd, sizeof(lfd)) != (ssize_t)sizeof(lfd))
		return -1;
	/* pidfd_getfd sets close-on-exec on the copy. */
	if ((pfd = (int)syscall(SYS_pidfd_open, child, 0)) == -1)
		return -1;
	fd = (int)syscall(SYS_pidfd_getfd, pfd, lfd, 0);
	close(pfd);
	if (fd == -1) {
		fprintf(stderr, "sbx-init: cannot take the guard's listener "
		    "(pidfd_getfd, Linux 5.6): %s\n", strerror(errno));
		return -1;
	}
	if (write(sock, &c, 1) != 1) {
		close(fd);
		return -1;
	}
	return fd;
}
