/*
 * init-guard.c: sbx-init's guard of the file-system policy.
 *
 * Protected paths that exist are read-only bind mounts (lib/fspolicy.c
 * asks bwrap for them).  A protected name that does not exist yet cannot
 * be a mount: a mount needs a mount point, and bwrap would create one in
 * the user's tree through the read-write bind of the workdir, where it
 * stays as a "ghost" file after the run (and after kill -9, and under the
 * feet of a second sandbox on the same tree).  Landlock cannot say "any
 * name but these" either: its rights are per directory.  So the names are
 * refused at the system call: the command runs under a seccomp filter
 * that hands every call able to create a name (open/openat/creat with
 * O_CREAT, mkdir, mknod, symlink, link, rename) to pid 1, which is the
 * supervisor (SECCOMP_RET_USER_NOTIF).
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
 * Unix sockets (-U): connect() to a socket file is performed the same way
 * (pid 1 connects a socket of its own of the caller's type and puts it in
 * the caller's descriptor slot), then the peer is checked: a listener
 * started outside the sandbox has no pid in the sandbox's pid namespace
 * (SO_PEERCRED says 0).  Such a connection is closed and the call fails
 * with EACCES, unless the socket is one of -A (allow_unix_sockets).
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

/*
 * The calls that create a name (besides open/openat with O_CREAT, checked
 * by flag), and connect with -U.  openat2 carries its flags in memory,
 * where the filter cannot look; sbx's own filter answers it ENOSYS, and
 * the C library falls back to openat.  O_TMPFILE creates no name: linkat
 * gives it one, and linkat is here.
 */
static const int create_calls[] = {
	SYS_creat, SYS_mkdir, SYS_mkdirat, SYS_mknod, SYS_mknodat,
	SYS_symlink, SYS_symlinkat, SYS_link, SYS_linkat, SYS_rename,
	SYS_renameat, SYS_renameat2,
};

int
guard_install(int sock)
{
#if defined(__x86_64__)
	struct sock_filter	 f[64];
	struct sock_fprog	 prog;
	struct msghdr		 m;
	struct iovec		 iov;
	union {
		char		 b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	 align;
	}			 u;
	struct cmsghdr		*cm;
	unsigned		 calls[16];
	int			 n = 0, a, j, k = 0, lfd, creates;
	char			 c = 'G';

	/* Without names to guard, only connect is looked at: nothing else
	 * pays for the guard. */
	creates = nblocks > 0 || nprot > 0 || ngit_roots > 0 ||
	    ngit_dirs > 0;
	for (j = 0; creates && j < (int)(sizeof(create_calls) /
	    sizeof(*create_calls)); j++)
		calls[k++] = (unsigned)create_calls[j];
	if (unix_on)
		calls[k++] = SYS_connect;
	/* Layout: 0 arch, 1 jump, 2 nr, 3 open, 4 openat, 5.. calls,
	 * a = allow, a+1 open's flags, a+3 openat's, a+5 notify. */
	a = 5 + k;
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, arch));
	/* Another architecture's calls: sbx's own filter kills them. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    AUDIT_ARCH_X86_64, 0, (unsigned char)(a - 2));
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
	    offsetof(struct seccomp_data, nr));
	/* (Without names to guard, open and openat never match: -1.) */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    creates ? SYS_open : 0xffffffffu, (unsigned char)(a - 3), 0);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
	    creates ? SYS_openat : 0xffffffffu, (unsigned char)(a - 2), 0);
	for (j = 0; j < k; j++)
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ |
		    BPF_K, calls[j], (unsigned char)(a - 1 - j), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	f[n++] = (struct sock_filter)LD_ARG_LO(1);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
	    O_CREAT, 2, 3);
	f[n++] = (struct sock_filter)LD_ARG_LO(2);
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K,
	    O_CREAT, 0, 1);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_USER_NOTIF);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
	    SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)n;
	prog.filter = f;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		return -1;
	lfd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
	    SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	if (lfd == -1)
		return -1;
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	iov.iov_base = &c;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &lfd, sizeof(int));
	if (sendmsg(sock, &m, MSG_NOSIGNAL) == -1)
		return -1;
	close(lfd);
	close(sock);
	return 0;
#else
	(void)sock;
	/* Fail closed: no guard, no run. */
	return errno = ENOSYS, -1;
#endif
}

int
guard_receive(int sock)
{
	struct msghdr	 m;
	struct iovec	 iov;
	union {
		char		 b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	 align;
	}		 u;
	struct cmsghdr	*cm;
	char		 c;
	int		 fd = -1;

	memset(&m, 0, sizeof(m));
	iov.iov_base = &c;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	cm = CMSG_FIRSTHDR(&m);
	if (cm != NULL && cm->cmsg_level == SOL_SOCKET &&
	    cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}
