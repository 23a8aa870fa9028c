/*
 * init-setup.c: what sbx-init (cmd/sbx-init.c) does before and around the
 * command: reports on the status socket, closing inherited descriptors, the
 * proxy listener, resource limits, the workdir check, the terminal, the
 * environment from fd 5, and --probe.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"

#include "init-int.h"

void __attribute__((format(printf, 1, 2)))
report(const char *fmt, ...)
{
	char	 line[64];
	int	 len;
	va_list	 ap;

	va_start(ap, fmt);
	len = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (len > 0)
		(void)!write(FD_STATUS, line, (size_t)len);
}

void
close_others(int keep_proxy, int keep_bridge, int keep_session)
{
	DIR		*d;
	struct dirent	*de;
	int		 fd;
#ifdef SYS_close_range
	/* The channels kept, in increasing order (FD_PROXY < FD_BRIDGE). */
	int	 keep[3], nk = 0, k;
	unsigned lo = FD_ENV + 1;

	if (keep_proxy)
		keep[nk++] = FD_PROXY;
	if (keep_bridge)
		keep[nk++] = FD_BRIDGE;
	if (keep_session)
		keep[nk++] = FD_SESSION;
	/* Whatever bwrap or sbx left open must not reach the command. */
	for (k = 0; k < nk; k++) {
		if ((unsigned)keep[k] > lo &&
		    syscall(SYS_close_range, lo, (unsigned)keep[k] - 1, 0) != 0)
			break;
		lo = (unsigned)keep[k] + 1;
	}
	if (k == nk && syscall(SYS_close_range, lo, ~0U, 0) == 0)
		return;
#endif
#define KEPT(fd) \
	((keep_proxy && (fd) == FD_PROXY) || (keep_bridge && \
	    (fd) == FD_BRIDGE) || (keep_session && (fd) == FD_SESSION))
	if ((d = opendir("/proc/self/fd")) == NULL) {
		for (fd = FD_ENV + 1; fd < 4096; fd++)
			if (!KEPT(fd))
				close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		fd = atoi(de->d_name);
		if (fd > FD_ENV && fd != dirfd(d) && !KEPT(fd))
			close(fd);
	}
	closedir(d);
#undef KEPT
}

/* A listening socket on 127.0.0.1:port of the sandbox's own network
 * namespace, close-on-exec and non-blocking. */
static int
listen_loopback(int port)
{
	struct sockaddr_in	 sin;
	int			 fd, one = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The proxy relay: a listening socket on 127.0.0.1:3128 of the sandbox's
 * own network namespace.  It exists before the command's first
 * instruction, so a connection never finds the port closed; it is
 * close-on-exec, so the command cannot accept on it.
 */
int
proxy_listen(void)
{
	if (fcntl(FD_PROXY, F_SETFD, FD_CLOEXEC) == -1)
		return -1;
	return listen_loopback(PROXY_PORT);
}

/*
 * The SOCKS5 listener on 127.0.0.1:1080, for clients that only speak
 * SOCKS (ALL_PROXY=socks5h://...): served as 3128 is, through the same
 * channel; each connection is tagged 'S' so that the proxy knows which
 * protocol to expect (it never guesses from the first bytes).
 */
int	 socks_lfd = -1;

int
socks_listen(void)
{
	return socks_lfd = listen_loopback(SOCKS_PORT);
}

/*
 * (sbx-init links nothing of lib/: this is lib's sbx_fs_send_fd, inline.)
 * Hand every pending connection to sbx-proxy; ours is closed once it is
 * sent, with its tag ('C' for 3128, 'S' for 1080).  When the channel is
 * full (a burst of connections), the one in hand waits in `held` and init
 * stops accepting until the channel is writable again: the rest wait in
 * the listen backlog, none is dropped.  Returns nonzero while a
 * connection is held.
 */
int		 held = -1;
static char	 held_tag;

int
proxy_accept(int lfd)
{
	return relay_accept(lfd, FD_PROXY, &held, 'C', &held_tag);
}

int
socks_accept(void)
{
	return relay_accept(socks_lfd, FD_PROXY, &held, 'S', &held_tag);
}

/* One message: len bytes of buf and the n descriptors of fds
 * (SCM_RIGHTS), as sendmsg(2) with flags returns. */
ssize_t
send_fds(int sock, const void *buf, size_t len, const int *fds, size_t n,
    int flags)
{
	union {
		char		 b[CMSG_SPACE(SEND_FDS_MAX * sizeof(int))];
		struct cmsghdr	 align;
	}		 u;
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;

	if (n == 0 || n > SEND_FDS_MAX)
		return errno = EINVAL, -1;
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	iov.iov_base = (void *)(uintptr_t)buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = CMSG_SPACE(n * sizeof(int));
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(cm), fds, n * sizeof(int));
	return sendmsg(sock, &m, flags);
}

/* Hand every pending connection of lfd over chan (the proxy's, the
 * bridge's) with its tag, holding one (and its tag) in *heldp, *heldtag
 * while the channel is full. */
int
relay_accept(int lfd, int chan, int *heldp, char tag, char *heldtag)
{
	char		 c;
	int		 fd;

	for (;;) {
		if (*heldp >= 0) {
			fd = *heldp;
			c = *heldtag;
		} else if (lfd < 0 ||
		    (fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			return 0;
		else
			c = tag;
		/* Never block pid 1: it must stay free to reap and to obey
		 * sbx.  A proxy that is gone (EPIPE) loses the connection:
		 * the client sees it closed. */
		if (send_fds(chan, &c, 1, &fd, 1,
		    MSG_DONTWAIT | MSG_NOSIGNAL) == -1 &&
		    (errno == EAGAIN || errno == ENOBUFS)) {
			*heldp = fd;
			*heldtag = c;
			return 1;
		}
		*heldp = -1;
		close(fd);
	}
}

int
set_rlimit(const char *spec)
{
	static const struct { const char *name; int res; } map[] = {
		{ "nofile", RLIMIT_NOFILE }, { "fsize", RLIMIT_FSIZE },
		{ "as", RLIMIT_AS },
	};
	struct rlimit		 rl;
	unsigned long long	 v;
	const char		*eq;
	char			*end;
	size_t			 k;

	if ((eq = strchr(spec, '=')) == NULL)
		return errno = EINVAL, -1;
	errno = 0;
	v = strtoull(eq + 1, &end, 10);
	if (errno || *end != '\0')
		return errno = EINVAL, -1;
	for (k = 0; k < sizeof(map) / sizeof(*map); k++) {
		if (strlen(map[k].name) != (size_t)(eq - spec) ||
		    strncmp(map[k].name, spec, (size_t)(eq - spec)) != 0)
			continue;
		rl.rlim_cur = rl.rlim_max = (rlim_t)v;
		return setrlimit(map[k].res, &rl);
	}
	return errno = EINVAL, -1;
}

/*
 * -W DEV:INO PATH.  sbx-exec checked the --workdir directory and had bwrap
 * bind the descriptor it opened, so the mount is that directory unless
 * something between the check and the mount changed what was bound.  Look
 * at what the command would find at PATH and refuse to start it on any
 * difference: the checks sbx made (no symlink, no home dot-directory, no
 * state root) are only worth something for the directory they were made
 * on.  0 same, -1 not (message on stderr).
 */
int
check_workdir(const char *devino, const char *path)
{
	unsigned long long	 dev, ino = 0;
	struct stat		 st;
	char			*end;
	int			 fd;

	errno = 0;
	dev = strtoull(devino, &end, 10);
	if (errno != 0 || end == devino || *end != ':')
		end = NULL;
	else
		ino = strtoull(end + 1, &end, 10);
	if (end == NULL || errno != 0 || *end != '\0') {
		fprintf(stderr, "sbx-init: bad -W argument %s\n", devino);
		return -1;
	}
	fd = open(path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1) {
		fprintf(stderr, "sbx-init: the workdir %s is not mounted in the "
		    "sandbox: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	if ((unsigned long long)st.st_dev != dev ||
	    (unsigned long long)st.st_ino != ino) {
		fprintf(stderr, "sbx-init: the workdir mounted at %s is not the "
		    "directory sbx checked (device:inode %llu:%llu, expected "
		    "%s); refusing to run the command\n", path,
		    (unsigned long long)st.st_dev,
		    (unsigned long long)st.st_ino, devino);
		return -1;
	}
	return 0;
}

/*
 * -T ROWS:COLS: a new terminal from /dev/ptmx, which bwrap's --dev makes the
 * sandbox's own devpts instance, so that the command's terminal has a name
 * inside (tty(1), ssh, sudo look it up) and nothing of the host's devpts is
 * reachable.  The master is sent to sbx over the status socket and closed
 * here: neither pid 1 nor the command keeps it.  Returns the slave, or -1
 * (message on stderr).
 */
int
open_tty(const char *size)
{
	struct winsize	 ws;
	unsigned	 rows, cols;
	char		 line[] = SBX_INIT_W_TTY "\n", path[32];
	int		 mfd, sfd = -1, unlock = 0, ptn;

	if (sscanf(size, "%u:%u", &rows, &cols) != 2 || rows > 65535 ||
	    cols > 65535) {
		fprintf(stderr, "sbx-init: bad -T argument %s\n", size);
		return -1;
	}
	if ((mfd = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1 ||
	    ioctl(mfd, TIOCSPTLCK, &unlock) == -1)
		goto fail;
	/* The slave from the master itself (Linux 4.13), not by a path
	 * lookup that a planted /dev/pts entry could answer. */
	sfd = ioctl(mfd, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (sfd == -1 && ioctl(mfd, TIOCGPTN, &ptn) == 0) {
		snprintf(path, sizeof(path), "/dev/pts/%d", ptn);
		sfd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	}
	if (sfd == -1)
		goto fail;
	memset(&ws, 0, sizeof(ws));
	ws.ws_row = (unsigned short)rows;
	ws.ws_col = (unsigned short)cols;
	(void)ioctl(sfd, TIOCSWINSZ, &ws);
	if (send_fds(FD_STATUS, line, sizeof(line) - 1, &mfd, 1,
	    MSG_NOSIGNAL) == -1)
		goto fail;
	close(mfd);
	return sfd;
fail:
	fprintf(stderr, "sbx-init: cannot make a terminal for the command: "
	    "%s\n", strerror(errno));
	if (mfd >= 0)
		close(mfd);
	if (sfd >= 0)
		close(sfd);
	return -1;
}

char **
read_env(void)
{
	char	*buf = NULL, *p, **envp;
	size_t	 len = 0, cap = 0, n, i;
	ssize_t	 r;

	for (;;) {
		if (len + 65536 > cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > ENV_MAX + 65536 || (p = realloc(buf, cap + 1))
			    == NULL)
				return NULL;
			buf = p;
		}
		r = read(FD_ENV, buf + len, cap - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return NULL;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	close(FD_ENV);
	if (buf == NULL && (buf = calloc(1, 1)) == NULL)
		return NULL;
	buf[len] = '\0';
	for (n = 0, i = 0; i < len; i++)
		if (buf[i] == '\0')
			n++;
	if ((envp = calloc(n + 1, sizeof(*envp))) == NULL)
		return NULL;
	for (n = 0, p = buf; p < buf + len; p += strlen(p) + 1)
		if (*p != '\0')
			envp[n++] = p;
	envp[n] = NULL;
	return envp;
}

const char *
errname(int e)
{
	switch (e) {
	case 0: return "ok";
	case EPERM: return "EPERM";
	case EACCES: return "EACCES";
	case EROFS: return "EROFS";
	case ENOSYS: return "ENOSYS";
	case EAFNOSUPPORT: return "EAFNOSUPPORT";
	case EINVAL: return "EINVAL";
	case EBADF: return "EBADF";
	case EFAULT: return "EFAULT";
	case ENOENT: return "ENOENT";
	case ENOTTY: return "ENOTTY";
	case ENOSPC: return "ENOSPC";
	case EEXIST: return "EEXIST";
	}
	return "other";
}

void
status_field(const char *name)
{
	char	 line[256];
	FILE	*f = fopen("/proc/self/status", "r");
	size_t	 n = strlen(name);

	while (f != NULL && fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, name, n) == 0 && line[n] == ':') {
			char *v = line + n + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			v[strcspn(v, "\n")] = '\0';
			printf("%s %s\n", name, v);
		}
	if (f != NULL)
		fclose(f);
}

/* Each probe uses harmless arguments: if the kernel runs the call it
 * fails with EBADF/EFAULT/EINVAL and changes nothing. */
int
probe(void)
{
	char	 line[256];
	FILE	*f;
	int	 fd, n = 0;

	errno = 0;
	printf("keyctl %s\n", syscall(SYS_keyctl, 0x7fff, -1, 0, 0, 0) == -1 ?
	    errname(errno) : "ok");
	printf("bpf %s\n", syscall(SYS_bpf, -1, NULL, 0) == -1 ?
	    errname(errno) : "ok");
	printf("unshare_user %s\n", unshare(0x10000000) == -1 ?
	    errname(errno) : "ok");
	printf("mount %s\n", syscall(SYS_mount, NULL, NULL, NULL, 0, NULL)
	    == -1 ? errname(errno) : "ok");
	fd = (int)syscall(SYS_socket, 17 /* AF_PACKET */, 2, 0);
	printf("socket_packet %s\n", fd == -1 ? errname(errno) : "ok");
	if (fd >= 0)
		close(fd);
	printf("tiocsti %s\n", syscall(SYS_ioctl, 0, 0x5412, NULL) == -1 ?
	    errname(errno) : "ok");
	fd = open("/etc/sbx-preflight-probe", O_WRONLY | O_CREAT | O_EXCL,
	    0600);
	printf("write_etc %s\n", fd == -1 ? errname(errno) : "ok");
	if (fd >= 0) {
		close(fd);
		unlink("/etc/sbx-preflight-probe");
	}
	fd = open("/proc/sys/kernel/core_pattern", O_WRONLY);
	printf("write_proc_sys %s\n", fd == -1 ? errname(errno) : "ok");
	if (fd >= 0)
		close(fd);
	if ((f = fopen("/proc/net/dev", "r")) != NULL) {
		printf("net_interfaces");
		while (fgets(line, sizeof(line), f) != NULL) {
			char *c = strchr(line, ':');
			if (c == NULL || n++ < 0)
				continue;
			*c = '\0';
			printf(" %s", line + strspn(line, " "));
		}
		printf("\n");
		fclose(f);
	}
	status_field("Seccomp");
	status_field("NoNewPrivs");
	status_field("CapEff");
	status_field("Uid");
	printf("pid %d\n", (int)getpid());
	return 0;
}
