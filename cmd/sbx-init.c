/*
 * sbx-init: pid 1 inside every sbx sandbox.
 *
 *	sbx-init [-r NAME=VALUE]... [-P] -- COMMAND [ARG...]
 *	sbx-init [-r NAME=VALUE]... [-P] -c -- 'SHELL STRING'
 *
 * -r sets a resource limit (nofile, fsize in bytes, as in bytes) for the
 * command, hard and soft, before it runs.
 *
 * Internal: started by bwrap (--as-pid-1) on behalf of sbx-exec, never by
 * people.  It receives the sandbox environment on fd 5 (so that values,
 * secrets among them, never appear in bwrap's argv or environment), reports
 * on fd 3 and takes orders on fd 4:
 *
 *	fd 3 (out): "ready\n" (the sandbox is set up), "warn nopipefail\n",
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
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
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
#include <unistd.h>

#define FD_STATUS	3
#define FD_CTL		4
#define FD_ENV		5
#define FD_PROXY	14
#define PROXY_PORT	3128
#define ENV_MAX		(8u << 20)

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
	struct pollfd		 pfd[4];
	sigset_t		 mask;
	char			**envp, **cmd, *shargv[6], c;
	pid_t			 child, pid;
	int			 sfd, status, shell = 0, i, ctl_open = 1;
	int			 proxy = 0, lfd = -1, nfds;
	int			 ep[2], err = 0;
	ssize_t			 r;

	if (getpid() != 1 && argc == 2 && strcmp(argv[1], "--probe") == 0)
		return probe();
	if (getpid() != 1) {
		fprintf(stderr, "sbx-init: internal helper of sbx-exec; "
		    "not to be run directly\n");
		return 125;
	}
	i = 1;
	while (i + 1 < argc && strcmp(argv[i], "-r") == 0) {
		if (set_rlimit(argv[i + 1]) == -1) {
			fprintf(stderr, "sbx-init: cannot set limit %s: %s\n",
			    argv[i + 1], strerror(errno));
			return 125;
		}
		i += 2;
	}
	if (i < argc && strcmp(argv[i], "-P") == 0) {
		proxy = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], "-c") == 0) {
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
	report("ready\n");

	if (shell) {
		if (access("/bin/bash", X_OK) == 0) {
			shargv[0] = "bash";
			shargv[1] = "-o";
			shargv[2] = "pipefail";
			shargv[3] = "-c";
			shargv[4] = cmd[0];
			shargv[5] = NULL;
		} else {
			report("warn nopipefail\n");
			shargv[0] = "sh";
			shargv[1] = "-c";
			shargv[2] = cmd[0];
			shargv[3] = NULL;
		}
		cmd = shargv;
	}

	/* A close-on-exec pipe tells whether the exec happened: EOF means
	 * it did, an errno means it did not. */
	if (pipe2(ep, O_CLOEXEC) == -1 || (child = fork()) == -1) {
		report("exec %d\n", errno);
		return 126;
	}
	if (child == 0) {
		sigprocmask(SIG_UNBLOCK, &mask, NULL);
		signal(SIGPIPE, SIG_DFL);
		environ = envp;
		execvp(cmd[0], cmd);
		err = errno;
		(void)!write(ep[1], &err, sizeof(err));
		_exit(err == ENOENT ? 127 : 126);
	}
	close(ep[1]);
	while ((r = read(ep[0], &err, sizeof(err))) == -1 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof(err))
		report("exec %d\n", err);
	else
		report("running\n");

	pfd[0].fd = sfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = FD_CTL;
	pfd[1].events = POLLIN;
	pfd[2].fd = lfd;
	pfd[2].events = POLLIN;
	pfd[2].revents = 0;
	pfd[3].fd = FD_PROXY;
	pfd[3].events = POLLOUT;
	pfd[3].revents = 0;
	for (;;) {
		nfds = ctl_open ? 2 : 1;
		if (ctl_open && lfd >= 0) {
			/* Accept, or wait for room in the channel. */
			nfds = 4;
			pfd[2].fd = held >= 0 ? -1 : lfd;
			pfd[3].fd = held >= 0 ? FD_PROXY : -1;
		}
		if (poll(pfd, (nfds_t)nfds, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (ctl_open && (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			r = read(FD_CTL, &c, 1);
			if (r == 1 && c == 'T') {
				kill(-1, SIGTERM);
				kill(-1, SIGCONT);
			} else if (r == 1 && c == 'K') {
				kill(-1, SIGKILL);
			} else if (r == 0 || (r == -1 && errno != EINTR)) {
				/* sbx is gone: nobody is left to
				 * supervise this sandbox. */
				kill(-1, SIGKILL);
				ctl_open = 0;
				_exit(125);
			}
		}
		if (nfds == 4 && ((pfd[2].revents & POLLIN) ||
		    (pfd[3].revents & (POLLOUT | POLLERR | POLLHUP))))
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
				report("signal %d\n", WTERMSIG(status));
				_exit(128 + WTERMSIG(status));
			}
			report("exit %d\n", WEXITSTATUS(status));
			_exit(WEXITSTATUS(status));
		}
	}
	kill(-1, SIGKILL);
	return 125;
}
