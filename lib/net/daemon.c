/*
 * daemon.c: the control socket and hardening the daemons of a state root
 * share (sbx-proxy, sbx-bridge).  See daemon.h.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <linux/capability.h>

#include "daemon.h"
#include "fsutil.h"
#include "proxyclient.h"

void
sbx_daemon_harden(void)
{
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct	d[2];
	int				cap;

	memset(&h, 0, sizeof(h));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	memset(d, 0, sizeof(d));
	(void)prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (geteuid() == 0) {
		/* The bounding set first (it needs CAP_SETPCAP, which the
		 * capset below takes away). */
		for (cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
			(void)prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
		(void)syscall(SYS_capset, &h, d);
	}
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

int
sbx_daemon_bind(int runfd, const char *sock, struct sbx_error *e)
{
	struct sockaddr_un sun;
	int		   fd;
	mode_t		   old;

	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return sbx_error_sys(e, "socket", "cannot create a socket");
	(void)unlinkat(runfd, sock, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (sock == NULL ||
	    (size_t)snprintf(sun.sun_path, sizeof(sun.sun_path),
		"/proc/self/fd/%d/%s", runfd, sock) >= sizeof(sun.sun_path)) {
		close(fd);
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "bad_socket", "the socket name run/%s is too long",
		    sock != NULL ? sock : "(none)");
	}
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		umask(old);
		close(fd);
		return sbx_error_sys(e, "bind", "cannot bind run/%s", sock);
	}
	umask(old);
	(void)!fchmodat(runfd, sock, 0600, 0);
	if (listen(fd, 128) == -1) {
		close(fd);
		return sbx_error_sys(e, "listen", "cannot listen on run/%s",
		    sock);
	}
	return fd;
}

int
sbx_daemon_accept(int lfd)
{
	struct ucred	 cr;
	socklen_t	 len;
	int		 fd;

	while ((fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC))
	    >= 0) {
		/* Only our own uid may open sessions (the socket's mode
		 * says so too; this holds if that mode is ever wrong). */
		len = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0 &&
		    cr.uid == geteuid())
			return fd;
		close(fd);
	}
	return -1;
}

int
sbx_daemon_connect(int rootfd, const char *sock, const char *what,
    struct sbx_error *e)
{
	struct sockaddr_un sun;
	int		   fd, runfd;

	/* Connect through /proc/self/fd/N of run/ opened without following
	 * symlinks: a planted symlink cannot redirect us to someone else's
	 * socket, and the path stays short whatever the root's length. */
	if ((runfd = sbx_fs_open_beneath(rootfd, "run",
		 O_PATH | O_DIRECTORY | O_CLOEXEC, e)) == -1) {
		if (e->sys_errno == ENOENT)
			sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "not_running",
			    "the %s is not running", what);
		return -1;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "/proc/self/fd/%d/%s",
	    runfd, sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		close(runfd);
		return sbx_error_sys(e, "socket", "cannot create a socket");
	}
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int err = errno;

		close(fd);
		close(runfd);
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "not_running",
		    "the %s is not running", what);
		/* Kept for callers that tell a missing socket from one they
		 * may not use (a warm session's owner). */
		e->sys_errno = err;
		return -1;
	}
	close(runfd);
	return fd;
}

extern char **environ;

static void
nap_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* Start `prog serve --home HOME -q` and wait until it says it is up. */
static int
start(const char *prog, const char *home, const char *what, struct sbx_error *e)
{
	char *argv[] = { (char *)prog, "serve", "--home", (char *)home, "-q",
		NULL };
	char *envp[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };
	posix_spawn_file_actions_t fa;
	pid_t			   pid;
	int			   st, rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = posix_spawn(&pid, prog, &fa, NULL, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	if (rc != 0) {
		errno = rc;
		return sbx_error_sys(e, "daemon_start", "cannot start %s",
		    prog);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return sbx_error_sys(e, "daemon_start", "waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "network",
		    "proxy_unavailable",
		    "sbx-%s could not start (exit "
		    "status %d); see `sbx %s serve --foreground`",
		    what, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
		    what);
	return 0;
}

int
sbx_daemon_ask(int rootfd, const char *sock, const char *what,
    const char *op, json_t **ans, struct sbx_error *e)
{
	struct sbx_error	 ce;
	int			 ctl;

	*ans = NULL;
	if (rootfd < 0 || (ctl = sbx_daemon_connect(rootfd, sock, what,
	    &ce)) == -1)
		return 0;
	*ans = sbx_proxyclient_call(ctl, json_pack("{s:s}", "op", op), -1,
	    5000, e);
	close(ctl);
	return *ans == NULL ? -1 : 1;
}

int
sbx_daemon_ensure(int rootfd, const char *sock, const char *lockname,
    const char *what, const char *prog, const char *home, struct sbx_error *e)
{
	int fd, lock, runfd, tries;

	if ((fd = sbx_daemon_connect(rootfd, sock, what, e)) >= 0)
		return fd;
	/* Not running: start it under run/LOCK, so that concurrent runs
	 * start one daemon, not several. */
	if ((runfd = sbx_fs_mkdirs_at(rootfd, "run", 0711, e)) == -1)
		return -1;
	lock = openat(runfd, lockname,
	    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(runfd);
	if (lock == -1)
		return sbx_error_sys(e, "lock", "cannot open run/%s", lockname);
	while (flock(lock, LOCK_EX) == -1)
		if (errno != EINTR) {
			close(lock);
			return sbx_error_sys(e, "lock", "run/%s", lockname);
		}
	/*
	 * A daemon that was just told to stop has removed its socket but
	 * may still hold its pid file for a moment: `serve` then says
	 * "already running" and nothing listens.  Start again until one
	 * answers, bounded (~5 s), rather than fail a run for that moment.
	 */
	for (tries = 0; (fd = sbx_daemon_connect(rootfd, sock, what, e)) ==
	    -1 && tries < 250; tries++) {
		if (start(prog, home, what, e) == -1)
			break;
		if ((fd = sbx_daemon_connect(rootfd, sock, what, e)) >= 0)
			break;
		nap_ms(20);
	}
	close(lock);
	return fd;
}

int
sbx_daemon_wait_gone(int rootfd, const char *pidname, const char *what,
    int timeout_ms, struct sbx_error *e)
{
	int	 fd, runfd, waited;

	if ((runfd = sbx_fs_open_beneath(rootfd, "run",
	    O_PATH | O_DIRECTORY | O_CLOEXEC, e)) == -1)
		return e->sys_errno == ENOENT ? 0 : -1;
	fd = openat(runfd, pidname, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	close(runfd);
	if (fd == -1)
		return errno == ENOENT ? 0 : sbx_error_sys(e, "pidfile",
		    "cannot open run/%s", pidname);
	/* The daemon holds the pid file's lock until its last moment. */
	for (waited = 0; flock(fd, LOCK_SH | LOCK_NB) == -1; waited += 10) {
		if (errno != EWOULDBLOCK && errno != EINTR) {
			close(fd);
			return sbx_error_sys(e, "pidfile", "run/%s", pidname);
		}
		if (waited >= timeout_ms) {
			close(fd);
			return sbx_error_set(e, SBX_K_TIMEOUT, NULL,
			    "stop_timeout", "the %s was asked to stop but "
			    "has not exited after %d s", what,
			    timeout_ms / 1000);
		}
		nap_ms(10);
	}
	close(fd);
	return 0;
}

int
sbx_daemon_start(int runfd, const char *pidname, const char *what,
    int foreground, struct sbx_daemon *d, struct sbx_error *e)
{
	int	 pp[2], null;
	pid_t	 pid;
	ssize_t	 n;
	char	 c = 0;

	memset(d, 0, sizeof(*d));
	d->ready = -1;
	if ((d->pidfd = openat(runfd, pidname, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		return sbx_error_sys(e, "pidfile", "cannot open run/%s",
		    pidname);
	/* One per state root: whoever holds the pid file's lock. */
	if (flock(d->pidfd, LOCK_EX | LOCK_NB) == -1) {
		n = pread(d->pidfd, d->pid, sizeof(d->pid) - 1, 0);
		d->pid[n > 0 ? n : 0] = '\0';
		d->pid[strcspn(d->pid, "\n")] = '\0';
		return SBX_DAEMON_RUNNING;
	}
	if (!foreground) {
		if (pipe2(pp, O_CLOEXEC) == -1 || (pid = fork()) == -1)
			return sbx_error_sys(e, "fork", "cannot start the %s",
			    what);
		if (pid > 0) {
			/* The starter returns once the socket listens. */
			close(pp[1]);
			if (read(pp[0], &c, 1) != 1 || c != 'R')
				return sbx_error_set(e, SBX_K_UNAVAILABLE,
				    NULL, "start_failed", "the %s did not "
				    "start; run `sbx %s serve --foreground` "
				    "to see why", what, what);
			return SBX_DAEMON_STARTED;
		}
		close(pp[0]);
		d->ready = pp[1];
		(void)setsid();
		if ((pid = fork()) == -1)
			_exit(71);
		if (pid > 0)
			_exit(0);
		if ((null = open("/dev/null", O_RDWR | O_CLOEXEC)) >= 0) {
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
			if (null > 2)
				close(null);
		}
		(void)!chdir("/");
	}
	/* The lock is inherited through the forks (flock locks belong to
	 * the open file, which the daemon shares). */
	snprintf(d->pid, sizeof(d->pid), "%d\n", (int)getpid());
	if (ftruncate(d->pidfd, 0) == 0)
		(void)!pwrite(d->pidfd, d->pid, strlen(d->pid), 0);
	return SBX_DAEMON_CHILD;
}

void
sbx_daemon_ready(struct sbx_daemon *d)
{
	if (d->ready < 0)
		return;
	(void)!write(d->ready, "R", 1);
	close(d->ready);
	d->ready = -1;
}

void
sbx_daemon_done(struct sbx_daemon *d)
{
	(void)!ftruncate(d->pidfd, 0);
}
