/*
 * sbx-init: pid 1 inside every sbx sandbox.
 *
 *	sbx-init [-r NAME=VALUE]... [-W DEV:INO PATH]... [GUARD...]
 *	    [-T ROWS:COLS] [-P] -- COMMAND [ARG...]
 *	sbx-init [-r NAME=VALUE]... [-W DEV:INO PATH]... [GUARD...]
 *	    [-T ROWS:COLS] [-P] -c -- 'SHELL STRING' [NAME [ARG...]]
 *
 * GUARD (the file-system policy, cmd/initguard.c): -N DEV:INO:NAME (NAME
 * may not be created in that directory), -R PATH (a protected path, for
 * reports), -U (unix sockets made outside are refused), -A DEV:INO (a
 * socket that stays reachable).  Refused writes are reported on fd 3 as
 * "fsdeny PATH" and "sockdeny PATH" lines.
 *
 * -r sets a resource limit (nofile, fsize in bytes, as in bytes) for the
 * command, hard and soft, before it runs.  -W: the directory mounted at
 * PATH (the --workdir) must have this device and inode number, or the
 * command does not start.  -T: the command runs on a new terminal of the
 * sandbox's own devpts, ROWS by COLS, its session's controlling terminal;
 * the master goes to sbx over fd 3 with a "tty" line, before "ready".  -c:
 * the string is run by bash -o pipefail -c (sh -c without bash), NAME
 * and ARGs becoming $0, $1...
 *
 * Internal: started by bwrap (--as-pid-1) on behalf of sbx-exec, never by
 * people.  It receives the sandbox environment on fd 5 (so that values,
 * secrets among them, never appear in bwrap's argv or environment), reports
 * on fd 3 and takes orders on fd 4:
 *
 *	fd 3 (out, a socket): "tty\n" with the terminal's master (-T),
 *		    "ready\n" (the sandbox is set up), "warn nopipefail\n",
 *		    then "running\n" (the command was executed) or
 *		    "exec ERRNO\n" (it could not be), then "exit CODE\n" or
 *		    "signal SIGNO\n"
 *	fd 4 (in):  'T' terminate (SIGTERM + SIGCONT to everything),
 *		    'K' kill everything; end of file = sbx is gone, kill.
 *	fd 14:	    with -P, the channel to sbx-proxy (a SOCK_SEQPACKET
 *		    socket): init listens on 127.0.0.1:3128 in the sandbox's
 *		    network namespace before the command starts and passes
 *		    every accepted connection over it (SCM_RIGHTS).  The
 *		    command never holds the channel: only pid 1 does, and
 *		    pid 1 is not dumpable.
 *
 * As pid 1 of the sandbox's pid namespace it reaps orphans, and when the
 * command exits it exits too, which makes the kernel kill whatever the
 * command left behind: daemons, double forks and setsid() children alike.
 * Statically linked and dependent on nothing but the kernel, so that it runs
 * on any root file system image.
 *
 *	/run/sbx/init --probe
 *
 * run as a command inside a sandbox (`sbx exec -- /run/sbx/init --probe`)
 * proves what the sandbox enforces, by doing: it prints one `name value`
 * line per probe (an errno name, or a value) for sbx-preflight.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"

#define FD_STATUS	SBX_FD_STATUS
#define FD_CTL		SBX_FD_CTL
#define FD_ENV		SBX_FD_ENV
#define FD_PROXY	SBX_FD_PROXY
#define PROXY_PORT	SBX_INIT_PROXY_PORT
#define ENV_MAX		SBX_INIT_ENV_MAX

extern char **environ;

static void __attribute__((format(printf, 1, 2)))
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

static void
close_others(int keep_proxy)
{
	DIR		*d;
	struct dirent	*de;
	int		 fd;

	/* Whatever bwrap or sbx left open must not reach the command. */
#ifdef SYS_close_range
	if (keep_proxy ? syscall(SYS_close_range, FD_ENV + 1, FD_PROXY - 1,
	    0) == 0 && syscall(SYS_close_range, FD_PROXY + 1, ~0U, 0) == 0 :
	    syscall(SYS_close_range, FD_ENV + 1, ~0U, 0) == 0)
		return;
#endif
	if ((d = opendir("/proc/self/fd")) == NULL) {
		for (fd = FD_ENV + 1; fd < 4096; fd++)
			if (!keep_proxy || fd != FD_PROXY)
				close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		fd = atoi(de->d_name);
		if (fd > FD_ENV && fd != dirfd(d) &&
		    (!keep_proxy || fd != FD_PROXY))
			close(fd);
	}
	closedir(d);
}

/*
 * The proxy relay: a listening socket on 127.0.0.1:3128 of the sandbox's
 * own network namespace.  It exists before the command's first
 * instruction, so a connection never finds the port closed; it is
 * close-on-exec, so the command cannot accept on it.
 */
static int
proxy_listen(void)
{
	struct sockaddr_in	 sin;
	int			 fd, one = 1;

	if (fcntl(FD_PROXY, F_SETFD, FD_CLOEXEC) == -1)
		return -1;
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0)) == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(PROXY_PORT);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 4096) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * (sbx-init links nothing of lib/: this is lib's sbx_send_fd, inline.)
 * Hand every pending connection to sbx-proxy; ours is closed once it is
 * sent.  When the channel is full (a burst of connections), the one in
 * hand waits in `held` and init stops accepting until the channel is
 * writable again: the rest wait in the listen backlog, none is dropped.
 * Returns nonzero while a connection is held.
 */
static int	 held = -1;

static int
proxy_accept(int lfd)
{
	char		 cbuf[CMSG_SPACE(sizeof(int))], c = 'C';
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	int		 fd;

	for (;;) {
		if (held >= 0)
			fd = held;
		else if ((fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			return 0;
		memset(&m, 0, sizeof(m));
		memset(cbuf, 0, sizeof(cbuf));
		iov.iov_base = &c;
		iov.iov_len = 1;
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = cbuf;
		m.msg_controllen = sizeof(cbuf);
		cm = CMSG_FIRSTHDR(&m);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
		/* Never block pid 1: it must stay free to reap and to obey
		 * sbx.  A proxy that is gone (EPIPE) loses the connection:
		 * the client sees it closed. */
		if (sendmsg(FD_PROXY, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == -1 &&
		    (errno == EAGAIN || errno == ENOBUFS)) {
			held = fd;
			return 1;
		}
		held = -1;
		close(fd);
	}
}

static int
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
static int
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
static int
open_tty(const char *size)
{
	struct winsize	 ws;
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	union {
		char		 b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr	 align;
	}		 u;
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
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	iov.iov_base = line;
	iov.iov_len = sizeof(line) - 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &mfd, sizeof(int));
	if (sendmsg(FD_STATUS, &m, MSG_NOSIGNAL) == -1)
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

static char **
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

static const char *
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

static void
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
static int
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

int
main(int argc, char *argv[])
{
	struct signalfd_siginfo	 si;
	struct pollfd		 pfd[5];
	sigset_t		 mask;
	char			**envp, **cmd, **shargv, c, *tty = NULL;
	pid_t			 child, pid;
	int			 sfd, status, shell = 0, i, ctl_open = 1;
	int			 proxy = 0, lfd = -1;
	int			 ep[2], err = 0, tfd = -1, k;
	int			 gp[2] = { -1, -1 }, gfd = -1;
	ssize_t			 r;

	if (getpid() != 1 && argc == 2 &&
	    strcmp(argv[1], SBX_INIT_OPT_PROBE) == 0)
		return probe();
	if (getpid() != 1) {
		fprintf(stderr, "sbx-init: internal helper of sbx-exec; "
		    "not to be run directly\n");
		return 125;
	}
	i = 1;
	while (i + 1 < argc && strcmp(argv[i], SBX_INIT_OPT_RLIMIT) == 0) {
		if (set_rlimit(argv[i + 1]) == -1) {
			fprintf(stderr, "sbx-init: cannot set limit %s: %s\n",
			    argv[i + 1], strerror(errno));
			return 125;
		}
		i += 2;
	}
	/*
	 * No core dumps, soft and hard limit 0, whatever was asked.  A
	 * core_pattern that pipes to a program (systemd-coredump, apport)
	 * hands the crashing process's memory, secrets and all, to a helper
	 * running as root outside every namespace; the kernel passes the
	 * limit on (%c) and those helpers store no dump at 0.  A file
	 * pattern is not written at all.  The command cannot raise a hard
	 * limit: that takes CAP_SYS_RESOURCE in the host's user namespace.
	 */
	if (setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 }) == -1) {
		fprintf(stderr, "sbx-init: cannot turn core dumps off: %s\n",
		    strerror(errno));
		return 125;
	}
	/* One -W per writable root. */
	while (i + 2 < argc && strcmp(argv[i], SBX_INIT_OPT_WORKDIR) == 0) {
		if (check_workdir(argv[i + 1], argv[i + 2]) == -1)
			return 125;
		i += 3;
	}
	while (i + 1 < argc ||
	    (i < argc && strcmp(argv[i], SBX_INIT_OPT_UNIX) == 0)) {
		if (strcmp(argv[i], SBX_INIT_OPT_UNIX) == 0) {
			guard_unix();
			i++;
			continue;
		}
		if (strcmp(argv[i], SBX_INIT_OPT_BLOCK) == 0)
			k = guard_add_block(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_PROTECTED) == 0)
			k = guard_add_protected(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_SOCKET) == 0)
			k = guard_add_socket(argv[i + 1]);
		else
			break;
		if (k == -1) {
			fprintf(stderr, "sbx-init: bad %s argument %s: %s\n",
			    argv[i], argv[i + 1], strerror(errno));
			return 125;
		}
		i += 2;
	}
	if (i + 1 < argc && strcmp(argv[i], SBX_INIT_OPT_TTY) == 0) {
		tty = argv[i + 1];
		i += 2;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_PROXY) == 0) {
		proxy = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_SHELL) == 0) {
		shell = 1;
		i++;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
		fprintf(stderr, "sbx-init: usage: sbx-init [-P] [-c] -- COMMAND\n");
		return 125;
	}
	cmd = argv + i + 1;
	close_others(proxy);
	/*
	 * Not dumpable: code inside the sandbox runs as the same uid and
	 * could otherwise ptrace pid 1, read its memory or steal the
	 * control descriptors.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if ((envp = read_env()) == NULL) {
		fprintf(stderr, "sbx-init: cannot read the environment\n");
		return 125;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	if ((sfd = signalfd(-1, &mask, SFD_CLOEXEC)) == -1) {
		fprintf(stderr, "sbx-init: signalfd: %s\n", strerror(errno));
		return 125;
	}
	fcntl(FD_STATUS, F_SETFD, FD_CLOEXEC);
	fcntl(FD_CTL, F_SETFD, FD_CLOEXEC);
	/* Fail closed: proxy mode without its relay does not run. */
	if (proxy && (lfd = proxy_listen()) == -1) {
		fprintf(stderr, "sbx-init: cannot listen on 127.0.0.1:%d for "
		    "the proxy: %s\n", PROXY_PORT, strerror(errno));
		return 125;
	}
	if (tty != NULL && (tfd = open_tty(tty)) == -1)
		return 125;
	report(SBX_INIT_W_READY "\n");

	if (shell) {
		/* The string, then $0 and the arguments, if any. */
		if ((shargv = calloc((size_t)argc + 5, sizeof(*shargv))) ==
		    NULL) {
			report(SBX_INIT_W_EXEC " %d\n", ENOMEM);
			return 126;
		}
		k = 0;
		if (access("/bin/bash", X_OK) == 0) {
			shargv[k++] = "bash";
			shargv[k++] = "-o";
			shargv[k++] = "pipefail";
		} else {
			report(SBX_INIT_W_NOPIPEFAIL "\n");
			shargv[k++] = "sh";
		}
		shargv[k++] = "-c";
		while (*cmd != NULL)
			shargv[k++] = *cmd++;
		shargv[k] = NULL;
		cmd = shargv;
	}

	/* A close-on-exec pipe tells whether the exec happened: EOF means
	 * it did, an errno means it did not. */
	if (pipe2(ep, O_CLOEXEC) == -1 || (guard_active() &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gp) == -1) ||
	    (child = fork()) == -1) {
		report(SBX_INIT_W_EXEC " %d\n", errno);
		return 126;
	}
	if (child == 0) {
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
		signal(SIGPIPE, SIG_DFL);
		/*
		 * The file-system guard: from here on, every call of the
		 * command that creates a name is pid 1's to check and do
		 * (cmd/initguard.c).  Fail closed: no guard, no command.
		 */
		if (gp[1] >= 0) {
			close(gp[0]);
			if (guard_install(gp[1]) == -1) {
				err = errno;
				(void)!write(ep[1], &err, sizeof(err));
				_exit(126);
			}
		}
		/*
		 * -T: a session of its own with the terminal as controlling
		 * terminal and as stdin, stdout and stderr, so that job
		 * control works (the shell's ^Z, ^C reach its foreground
		 * group).  TIOCSTI on it stays denied by the filter.
		 */
		if (tfd >= 0 && (setsid() == -1 ||
		    ioctl(tfd, TIOCSCTTY, 0) == -1 || dup2(tfd, 0) == -1 ||
		    dup2(tfd, 1) == -1 || dup2(tfd, 2) == -1)) {
			err = errno;
			(void)!write(ep[1], &err, sizeof(err));
			_exit(126);
		}
		if (tfd > 2)
			close(tfd);
		environ = envp;
		execvp(cmd[0], cmd);
		err = errno;
		(void)!write(ep[1], &err, sizeof(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	close(ep[1]);
	if (gp[0] >= 0) {
		close(gp[1]);
		gfd = guard_receive(gp[0]);
		close(gp[0]);
	}
	/* Only the command holds the terminal: when it and what it started
	 * are gone, sbx reads the end of it. */
	if (tfd >= 0)
		close(tfd);
	while ((r = read(ep[0], &err, sizeof(err))) == -1 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof(err))
		report(SBX_INIT_W_EXEC " %d\n", err);
	else
		report(SBX_INIT_W_RUNNING "\n");

	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	pfd[1].events = POLLIN;
	pfd[2].events = POLLIN;
	pfd[3].events = POLLOUT;
	pfd[4].fd = gfd;
	pfd[4].events = POLLIN;
	for (;;) {
		pfd[1].fd = ctl_open ? FD_CTL : -1;
		/* Accept, or wait for room in the channel. */
		pfd[2].fd = ctl_open && lfd >= 0 && held < 0 ? lfd : -1;
		pfd[3].fd = ctl_open && lfd >= 0 && held >= 0 ? FD_PROXY : -1;
		if (poll(pfd, 5, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[4].fd >= 0 && (pfd[4].revents & POLLIN))
			guard_serve(gfd, FD_STATUS);
		if (pfd[4].fd >= 0 && (pfd[4].revents & (POLLHUP | POLLERR |
		    POLLNVAL)) && !(pfd[4].revents & POLLIN))
			pfd[4].fd = -1;
		if (pfd[1].fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP |
		    POLLERR))) {
			r = read(FD_CTL, &c, 1);
			if (r == 1 && c == SBX_INIT_O_TERM) {
				kill(-1, SIGTERM);
				kill(-1, SIGCONT);
			} else if (r == 1 && c == SBX_INIT_O_KILL) {
				kill(-1, SIGKILL);
			} else if (r == 0 || (r == -1 && errno != EINTR)) {
				/* sbx is gone: nobody is left to
				 * supervise this sandbox. */
				kill(-1, SIGKILL);
				ctl_open = 0;
				_exit(125);
			}
		}
		if ((pfd[2].fd >= 0 && (pfd[2].revents & POLLIN)) ||
		    (pfd[3].fd >= 0 && (pfd[3].revents & (POLLOUT | POLLERR |
		    POLLHUP))))
			(void)proxy_accept(lfd);
		if (!(pfd[0].revents & POLLIN))
			continue;
		if (read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD)
			continue;	/* pid 1 outlives its own signals */
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid != child)
				continue;
			/* The command is done: so is everything it
			 * started. */
			kill(-1, SIGKILL);
			if (WIFSIGNALED(status)) {
				report(SBX_INIT_W_SIGNAL " %d\n",
				    WTERMSIG(status));
				_exit(128 + WTERMSIG(status));
			}
			report(SBX_INIT_W_EXIT " %d\n", WEXITSTATUS(status));
			_exit(WEXITSTATUS(status));
		}
	}
	kill(-1, SIGKILL);
	return 125;
}
