/*
 * initguard.c: sbx-init's guard of the file-system policy.
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

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE	(1 << 1)
#endif

#define MAX_BLOCK	512
#define MAX_PROT	256
#define MAX_SOCK	64
#define MAX_REPORTED	64
#define MAX_HOPS	40

struct block {
	unsigned long long	 dev, ino;
	char			*name;
};

static struct block	 blocks[MAX_BLOCK];
static int		 nblocks;
static char		*prot[MAX_PROT];
static int		 nprot;
static struct { unsigned long long dev, ino; } socks[MAX_SOCK];
static int		 nsocks;
static int		 unix_on;
static char		*reported[MAX_REPORTED];
static int		 nreported;

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
	return nblocks > 0 || nprot > 0 || unix_on;
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
	creates = nblocks > 0 || nprot > 0;
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

/* One line for sbx on the status socket, once per path. */
static void
report_path(int status_fd, const char *what, const char *path)
{
	char	 line[PATH_MAX + 32];
	int	 i, len;

	for (i = 0; i < nreported; i++)
		if (strcmp(reported[i], path) == 0)
			return;
	if (nreported == MAX_REPORTED)
		return;
	if ((reported[nreported] = strdup(path)) == NULL)
		return;
	nreported++;
	len = snprintf(line, sizeof(line), "%s %s\n", what, path);
	if (len <= 0 || (size_t)len >= sizeof(line))
		return;
	/* A newline in a name must not end the line early. */
	for (i = (int)strlen(what) + 1; i < len - 1; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = '?';
	(void)!write(status_fd, line, (size_t)len);
}

static int
dir_path(int dfd, const char *name, char *out, size_t cap)
{
	char	 lnk[64], buf[PATH_MAX];
	ssize_t	 n;

	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", dfd);
	if ((n = readlink(lnk, buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	if (name == NULL)
		return snprintf(out, cap, "%s", buf) >= (int)cap ? -1 : 0;
	return snprintf(out, cap, "%s%s%s", buf, strcmp(buf, "/") == 0 ?
	    "" : "/", name) >= (int)cap ? -1 : 0;
}

static int
under_protected(const char *path)
{
	size_t	 n;
	int	 i;

	for (i = 0; i < nprot; i++) {
		n = strlen(prot[i]);
		if (strncmp(path, prot[i], n) == 0 && (path[n] == '\0' ||
		    path[n] == '/'))
			return 1;
	}
	return 0;
}

/* A refused write: reported when it falls on a protected path. */
static void
maybe_report(int status_fd, int dfd, const char *name, int err)
{
	char	 path[PATH_MAX];

	if (err != EROFS && err != EBUSY && err != EACCES && err != EPERM)
		return;
	if (dir_path(dfd, name, path, sizeof(path)) == 0 &&
	    under_protected(path))
		report_path(status_fd, SBX_INIT_W_FSDENY, path);
}

static int
blocked(int dfd, const char *name)
{
	struct stat	 st;
	int		 i;

	if (nblocks == 0)
		return 0;
	if (fstat(dfd, &st) == -1)
		return 1;	/* fail closed */
	for (i = 0; i < nblocks; i++)
		if (blocks[i].dev == (unsigned long long)st.st_dev &&
		    blocks[i].ino == (unsigned long long)st.st_ino &&
		    strcmp(blocks[i].name, name) == 0)
			return 1;
	return 0;
}

/* A string argument, read once from the caller's memory. */
static int
read_str(int mfd, uint64_t addr, char *buf, size_t cap)
{
	size_t	 len = 0;
	ssize_t	 r;
	char	*z;

	if (addr == 0)
		return errno = EFAULT, -1;
	while (len < cap) {
		r = pread(mfd, buf + len, cap - len > 256 ? 256 : cap - len,
		    (off_t)(addr + len));
		if (r <= 0)
			return errno = EFAULT, -1;
		if ((z = memchr(buf + len, '\0', (size_t)r)) != NULL)
			return 0;
		len += (size_t)r;
	}
	return errno = ENAMETOOLONG, -1;
}

/* Where a path argument starts: /, the caller's cwd, or its dirfd. */
static int
base_fd(pid_t pid, int dirfd, const char *path)
{
	char	 p[64];

	if (path[0] == '/')
		return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, dirfd);
	return open(p, O_PATH | O_CLOEXEC);
}

/*
 * Split path into the directory that holds its last name (opened, as the
 * kernel resolves it) and that name.  With follow, a last name that is a
 * symlink is followed, as open(O_CREAT) without O_EXCL does.  0, or -1
 * with errno; *dfd is to be closed.
 */
static int
resolve(pid_t pid, int dirfd, const char *path, int follow, int *dfd,
    char name[NAME_MAX + 1], int *slash)
{
	char		 buf[PATH_MAX], lnk[PATH_MAX], *last;
	struct stat	 st;
	ssize_t		 n;
	size_t		 len;
	int		 base, hops = 0, nd;

	*dfd = -1;
	*slash = 0;
	if (path[0] == '\0')
		return errno = ENOENT, -1;
	if ((base = base_fd(pid, dirfd, path)) == -1)
		return -1;
	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		len = strlen(buf);
		while (len > 1 && buf[len - 1] == '/') {
			buf[--len] = '\0';
			*slash = 1;
		}
		if ((last = strrchr(buf, '/')) == NULL) {
			nd = openat(base, ".", O_PATH | O_DIRECTORY |
			    O_CLOEXEC);
			last = buf;
		} else if (last == buf) {
			nd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			last++;
		} else {
			*last++ = '\0';
			nd = openat(base, buf, O_PATH | O_DIRECTORY |
			    O_CLOEXEC);
		}
		close(base);
		if (nd == -1)
			return -1;
		if (*last == '\0')
			last = ".";
		if (strlen(last) > NAME_MAX) {
			close(nd);
			return errno = ENAMETOOLONG, -1;
		}
		memmove(name, last, strlen(last) + 1);
		if (!follow || *slash ||
		    fstatat(nd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISLNK(st.st_mode)) {
			*dfd = nd;
			return 0;
		}
		if (++hops > MAX_HOPS) {
			close(nd);
			return errno = ELOOP, -1;
		}
		if ((n = readlinkat(nd, name, lnk, sizeof(lnk) - 1)) <= 0) {
			close(nd);
			return errno = ELOOP, -1;
		}
		lnk[n] = '\0';
		memcpy(buf, lnk, (size_t)n + 1);
		base = nd;
		if (buf[0] == '/') {
			close(nd);
			if ((base = open("/", O_PATH | O_DIRECTORY |
			    O_CLOEXEC)) == -1)
				return -1;
		}
	}
}

static mode_t
caller_umask(pid_t pid)
{
	char	 p[64], line[256];
	FILE	*f;
	mode_t	 m = 022;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if ((f = fopen(p, "re")) == NULL)
		return m;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Umask:", 6) == 0) {
			m = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
			break;
		}
	fclose(f);
	return m;
}

static void
answer(int nfd, uint64_t id, long long val, int err)
{
	struct seccomp_notif_resp	 resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.val = val;
	resp.error = err ? -err : 0;
	(void)ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

static int
still_valid(int nfd, uint64_t id)
{
	return ioctl(nfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* Resolve and check a destination name; EROFS when it is protected. */
static int
dest(int status_fd, pid_t pid, int dirfd, const char *path, int follow,
    int *dfd, char name[NAME_MAX + 1], int *slash)
{
	char	 full[PATH_MAX];

	if (resolve(pid, dirfd, path, follow, dfd, name, slash) == -1)
		return -1;
	if (blocked(*dfd, name)) {
		if (dir_path(*dfd, name, full, sizeof(full)) == 0)
			report_path(status_fd, SBX_INIT_W_FSDENY, full);
		close(*dfd);
		*dfd = -1;
		return errno = EROFS, -1;
	}
	return 0;
}

static int
sock_type(pid_t pid, unsigned long ino)
{
	char		 p[64], line[512];
	FILE		*f;
	unsigned long	 i;
	unsigned	 type;
	int		 t = -1;

	snprintf(p, sizeof(p), "/proc/%d/net/unix", (int)pid);
	if ((f = fopen(p, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (sscanf(line, "%*s %*s %*s %*s %x %*s %lu", &type, &i) ==
		    2 && i == ino) {
			t = (int)type;
			break;
		}
	fclose(f);
	return t;
}

static int
fd_flags(pid_t pid, int fd)
{
	char		 p[64], line[128];
	FILE		*f;
	int		 fl = 0;

	snprintf(p, sizeof(p), "/proc/%d/fdinfo/%d", (int)pid, fd);
	if ((f = fopen(p, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "flags:", 6) == 0)
			fl = (int)strtol(line + 6, NULL, 8);
	fclose(f);
	return fl;
}

static int
sock_allowed(const struct stat *st)
{
	int	 i;

	for (i = 0; i < nsocks; i++)
		if (socks[i].dev == (unsigned long long)st->st_dev &&
		    socks[i].ino == (unsigned long long)st->st_ino)
			return 1;
	return 0;
}

/*
 * connect(fd, addr, len) on a unix socket, done here and the socket put
 * in the caller's slot.  Other sockets: the kernel's own call, which an
 * address swapped in memory cannot turn into a unix connect (the family
 * is the socket's).
 */
static void
serve_connect(int nfd, struct seccomp_notif *req, int mfd, int status_fd)
{
	struct seccomp_notif_addfd	 add;
	struct sockaddr_un		 sun;
	struct ucred			 cr;
	struct stat			 st, pst;
	socklen_t			 crl = sizeof(cr), len;
	char				 p[64], path[PATH_MAX];
	int				 fd = (int)req->data.args[0], type;
	int				 s = -1, cwd = -1, here = -1, fl, rc;
	int				 err = 0, have_st = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)req->pid, fd);
	if (stat(p, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    (type = sock_type(req->pid, (unsigned long)st.st_ino)) < 0) {
		struct seccomp_notif_resp resp;

		memset(&resp, 0, sizeof(resp));
		resp.id = req->id;
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		(void)ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
		return;
	}
	len = (socklen_t)req->data.args[2];
	if (len > sizeof(sun) || len < sizeof(sa_family_t)) {
		answer(nfd, req->id, -1, EINVAL);
		return;
	}
	memset(&sun, 0, sizeof(sun));
	if (pread(mfd, &sun, len, (off_t)req->data.args[1]) != (ssize_t)len) {
		answer(nfd, req->id, -1, EFAULT);
		return;
	}
	if (sun.sun_family != AF_UNIX) {
		answer(nfd, req->id, -1, EINVAL);
		return;
	}
	fl = fd_flags(req->pid, fd);
	if ((s = socket(AF_UNIX, type | SOCK_CLOEXEC | ((fl & O_NONBLOCK) ?
	    SOCK_NONBLOCK : 0), 0)) == -1) {
		answer(nfd, req->id, -1, errno);
		return;
	}
	/* A relative path is the caller's: resolve it from its cwd. */
	snprintf(p, sizeof(p), "/proc/%d/cwd", (int)req->pid);
	if ((cwd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fchdir(cwd) == -1) {
		err = errno;
		goto out;
	}
	if (len > sizeof(sa_family_t) && sun.sun_path[0] != '\0') {
		snprintf(path, sizeof(path), "%.*s", (int)sizeof(sun.sun_path),
		    sun.sun_path);
		have_st = stat(path, &pst) == 0;
	} else
		snprintf(path, sizeof(path), "@abstract");
	if (!still_valid(nfd, req->id)) {
		err = ENOENT;
		goto out;
	}
	rc = connect(s, (struct sockaddr *)&sun, len);
	if (rc == -1 && errno != EINPROGRESS) {
		err = errno;
		goto out;
	}
	if (rc == -1)
		err = EINPROGRESS;
	/*
	 * The peer's pid, as the sandbox's pid namespace sees it: 0 for a
	 * listener outside the sandbox.  A datagram socket has no peer
	 * credentials: outside unless allowed, refused.
	 */
	if (sun.sun_path[0] != '\0' && !(have_st && sock_allowed(&pst)) &&
	    (type == SOCK_DGRAM || getsockopt(s, SOL_SOCKET, SO_PEERCRED,
	    &cr, &crl) == -1 || cr.pid == 0)) {
		if (path[0] == '/')
			report_path(status_fd, SBX_INIT_W_SOCKDENY, path);
		else {
			char full[PATH_MAX];
			if (dir_path(cwd, path, full, sizeof(full)) == 0)
				report_path(status_fd, SBX_INIT_W_SOCKDENY,
				    full);
		}
		err = EACCES;
		goto out;
	}
	memset(&add, 0, sizeof(add));
	add.id = req->id;
	add.flags = SECCOMP_ADDFD_FLAG_SETFD;
	add.srcfd = (unsigned)s;
	add.newfd = (unsigned)fd;
	add.newfd_flags = (fl & O_CLOEXEC) ? O_CLOEXEC : 0;
	if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1)
		err = errno;
out:
	if (here >= 0) {
		(void)!fchdir(here);
		close(here);
	}
	if (cwd >= 0)
		close(cwd);
	if (s >= 0)
		close(s);
	answer(nfd, req->id, err ? -1 : 0, err);
}

void
guard_serve(int nfd, int status_fd)
{
	static struct seccomp_notif	 *req;
	static struct seccomp_notif_sizes sz;
	struct seccomp_notif_addfd	  add;
	char				  path[PATH_MAX], path2[PATH_MAX];
	char	  name[NAME_MAX + 1], name2[NAME_MAX + 1];
	char	  p[64];
	uint64_t *a;
	mode_t	  um, old;
	pid_t	  pid;
	int	  mfd = -1, dfd = -1, dfd2 = -1, fd = -1;
	int	  nr, err = 0, slash, slash2, flags;
	long long val = 0;

	if (req == NULL) {
		if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) == -1)
			sz.seccomp_notif = sizeof(*req);
		if (sz.seccomp_notif < sizeof(*req))
			sz.seccomp_notif = sizeof(*req);
		if ((req = calloc(1, sz.seccomp_notif)) == NULL)
			return;
	}
	memset(req, 0, sz.seccomp_notif);
	if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, req) == -1)
		return;
	pid = (pid_t)req->pid;
	nr = req->data.nr;
	a = (uint64_t *)req->data.args;
	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	/* Fail closed: a caller whose memory cannot be read (it made
	 * itself undumpable) cannot create names. */
	if ((mfd = open(p, O_RDONLY | O_CLOEXEC)) == -1 ||
	    !still_valid(nfd, req->id)) {
		err = mfd == -1 ? EPERM : ENOENT;
		goto done;
	}
	if (nr == SYS_connect) {
		serve_connect(nfd, req, mfd, status_fd);
		close(mfd);
		return;
	}
	um = caller_umask(pid);
	switch (nr) {
	case SYS_open:
	case SYS_openat:
	case SYS_creat: {
		int	 dirfd = nr == SYS_openat ? (int)a[0] : AT_FDCWD;
		mode_t	 mode;

		if (read_str(mfd, nr == SYS_openat ? a[1] : a[0], path,
		    sizeof(path)) == -1)
			goto fail;
		flags = nr == SYS_creat ? O_CREAT | O_WRONLY | O_TRUNC :
		    (int)(nr == SYS_openat ? a[2] : a[1]);
		mode = (mode_t)(nr == SYS_openat ? a[3] : nr == SYS_creat ?
		    a[1] : a[2]);
		if (dest(status_fd, pid, dirfd, path, !(flags & (O_EXCL |
		    O_NOFOLLOW)), &dfd, name, &slash) == -1)
			goto fail;
		if (slash)
			goto isdir;
		old = umask(um);
		/* The last name was resolved above: a symlink swapped in
		 * now is refused, not followed.  Never a controlling
		 * terminal for pid 1; never blocking pid 1 on a FIFO. */
		fd = openat(dfd, name, (flags & ~O_CLOEXEC) | O_CLOEXEC |
		    O_NOCTTY | ((flags & O_EXCL) ? 0 : O_NOFOLLOW) |
		    O_NONBLOCK, mode);
		umask(old);
		if (fd == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		if (!(flags & O_NONBLOCK))
			(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) &
			    ~O_NONBLOCK);
		memset(&add, 0, sizeof(add));
		add.id = req->id;
		add.flags = SECCOMP_ADDFD_FLAG_SEND;
		add.srcfd = (unsigned)fd;
		add.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
		/* Answered by the kernel with the new descriptor. */
		if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
			err = errno;
			goto done;
		}
		close(fd);
		close(dfd);
		close(mfd);
		return;
	}
	case SYS_mkdir:
	case SYS_mkdirat:
	case SYS_mknod:
	case SYS_mknodat: {
		int	 at = nr == SYS_mkdirat || nr == SYS_mknodat;

		if (read_str(mfd, a[at], path, sizeof(path)) == -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[0] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		old = umask(um);
		if (nr == SYS_mkdir || nr == SYS_mkdirat)
			val = mkdirat(dfd, name, (mode_t)a[at + 1]);
		else if (slash) {
			umask(old);
			goto isdir;
		} else
			val = mknodat(dfd, name, (mode_t)a[at + 1],
			    (dev_t)a[at + 2]);
		umask(old);
		if (val == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	case SYS_symlink:
	case SYS_symlinkat:
		if (read_str(mfd, a[0], path2, sizeof(path2)) == -1 ||
		    read_str(mfd, a[nr == SYS_symlinkat ? 2 : 1], path,
		    sizeof(path)) == -1)
			goto fail;
		if (dest(status_fd, pid, nr == SYS_symlinkat ? (int)a[1] :
		    AT_FDCWD, path, 0, &dfd, name, &slash) == -1)
			goto fail;
		if ((val = symlinkat(path2, dfd, name)) == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	case SYS_link:
	case SYS_linkat: {
		int	 at = nr == SYS_linkat, lflags = at ? (int)a[4] : 0;
		int	 ofd;

		if (read_str(mfd, a[at ? 3 : 1], path, sizeof(path)) == -1 ||
		    read_str(mfd, a[at ? 1 : 0], path2, sizeof(path2)) == -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[2] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		if (at && (lflags & AT_EMPTY_PATH) && path2[0] == '\0') {
			/* linkat(fd, "", ...): the caller's open file. */
			snprintf(path2, sizeof(path2), "/proc/%d/fd/%d",
			    (int)pid, (int)a[0]);
			val = linkat(AT_FDCWD, path2, dfd, name,
			    AT_SYMLINK_FOLLOW);
		} else {
			if ((ofd = base_fd(pid, at ? (int)a[0] : AT_FDCWD,
			    path2)) == -1)
				goto fail;
			val = linkat(ofd, path2, dfd, name, lflags &
			    AT_SYMLINK_FOLLOW);
			err = errno;
			close(ofd);
			errno = err;
			err = 0;
		}
		if (val == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	case SYS_rename:
	case SYS_renameat:
	case SYS_renameat2: {
		int	 at = nr != SYS_rename;
		unsigned rflags = nr == SYS_renameat2 ? (unsigned)a[4] : 0;

		if (read_str(mfd, a[at ? 1 : 0], path2, sizeof(path2)) ==
		    -1 || read_str(mfd, a[at ? 3 : 1], path, sizeof(path)) ==
		    -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[2] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		/* An exchange creates both names. */
		if ((rflags & RENAME_EXCHANGE ? dest(status_fd, pid, at ?
		    (int)a[0] : AT_FDCWD, path2, 0, &dfd2, name2, &slash2) :
		    resolve(pid, at ? (int)a[0] : AT_FDCWD, path2, 0, &dfd2,
		    name2, &slash2)) == -1)
			goto fail;
		if ((val = (long long)syscall(SYS_renameat2, dfd2, name2, dfd,
		    name, rflags)) == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	default:
		err = ENOSYS;
		goto done;
	}
	goto done;
isdir:
	err = EISDIR;
	goto done;
fail:
	err = errno ? errno : EPERM;
	val = -1;
done:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (dfd2 >= 0)
		close(dfd2);
	if (mfd >= 0)
		close(mfd);
	answer(nfd, req->id, err ? -1 : val, err);
}
