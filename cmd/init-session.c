/*
 * init-session.c: sbx-init -S, pid 1 of a warm session (sbx session,
 * lib/exec/warm.c).  The protocol is initproto.h's (SBX_WARM_*): commands
 * come one at a time from the supervisor on SBX_FD_SESSION, each with its
 * stdin, stdout and stderr; pid 1 forks each in a session of its own and,
 * when it ends, kills and reaps everything else of the sandbox before it
 * says so.
 *
 * The sandbox's seccomp filter was applied by bwrap before pid 1 started,
 * so every command inherits it; the file-system guard is installed per
 * command, in the child, as a one-shot run does (guard_install).
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "init-int.h"
#include "initguard.h"
#include "initproto.h"

extern char **environ;

/* One command: what the supervisor sent, parsed in place. */
struct wreq {
	char  *buf; /* the request; the strings point into it */
	size_t len; /* of buf */
	char **argv, **envp, *cwd, *shell;
	char **rlim;
	int    fd[3];
	/* The command's cgroup (SBX_WARM_T_CGROUP): the files to write "0"
	 * into, and the count the request announced. */
	int	    cgfd[SBX_WARM_CG_MAX];
	int	    ncgfd;
	const char *ncg;
};

/* A status line to the supervisor (never blocks for long: the
 * supervisor reads them as they come). */
static void __attribute__((format(printf, 1, 0))) say(const char *fmt, int n)
{
	char line[64];
	int  len;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	len = snprintf(line, sizeof(line), fmt, n);
#pragma GCC diagnostic pop
	if (len > 0)
		(void)!send(FD_SESSION, line, (size_t)len, MSG_NOSIGNAL);
}

static void
wreq_free(struct wreq *q)
{
	int i;

	for (i = 0; i < 3; i++)
		if (q->fd[i] >= 0)
			close(q->fd[i]);
	for (i = 0; i < q->ncgfd; i++)
		close(q->cgfd[i]);
	/* It held the secrets' values (secrets_per_command). */
	if (q->buf != NULL)
		explicit_bzero(q->buf, q->len);
	free(q->buf);
	free(q->argv);
	free(q->envp);
	free(q->rlim);
	memset(q, 0, sizeof(*q));
	q->fd[0] = q->fd[1] = q->fd[2] = -1;
}

/* The request's descriptors beyond stdio: its cgroup's (kept, up to
 * SBX_WARM_CG_MAX; more are closed and break the count check). */
static void
req_extra_fds(struct wreq *q, const int *fds, size_t nfd)
{
	size_t i;

	for (i = 0; i < nfd; i++) {
		if (q->ncgfd < SBX_WARM_CG_MAX)
			q->cgfd[q->ncgfd++] = fds[i];
		else {
			close(fds[i]);
			q->ncgfd = SBX_WARM_CG_MAX + 1;
		}
	}
}

/* Do the request's cgroup descriptors match its 'G' token?  No token: no
 * descriptor. */
static int
req_cgroup_ok(const struct wreq *q)
{
	char *end;
	long  n = 0;

	if (q->ncg != NULL) {
		n = strtol(q->ncg, &end, 10);
		if (*q->ncg == '\0' || *end != '\0' || n < 1 ||
		    n > SBX_WARM_CG_MAX)
			return 0;
	}
	return n == q->ncgfd;
}

/* In the command's child, first: into the command's cgroup, every
 * hierarchy, before anything of the command runs; -1 (errno) leaves it
 * unexecuted, since its limits would not hold. */
static int
child_enter_cgroup(struct wreq *q)
{
	ssize_t r;
	int	i;

	for (i = 0; i < q->ncgfd; i++) {
		while ((r = write(q->cgfd[i], "0", 1)) == -1 && errno == EINTR)
			;
		if (r != 1)
			return -1;
		close(q->cgfd[i]);
	}
	q->ncgfd = 0;
	return 0;
}

static int
read_full(int fd, void *p, size_t n)
{
	ssize_t r;
	size_t	off = 0;

	while (off < n) {
		r = read(fd, (char *)p + off, n - off);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		off += (size_t)r;
	}
	return 0;
}

/* The environment: the session's, then the request's NAME=VALUE over it
 * (a name given twice: the request's wins). */
static char **
merge_env(char **base, char **extra, size_t nextra)
{
	size_t nb = 0, i, j, k = 0, len;
	char **v;

	while (base[nb] != NULL)
		nb++;
	if ((v = calloc(nb + nextra + 1, sizeof(*v))) == NULL)
		return NULL;
	for (i = 0; i < nb; i++) {
		len = strcspn(base[i], "=");
		for (j = 0; j < nextra; j++)
			if (strncmp(extra[j], base[i], len) == 0 &&
			    extra[j][len] == '=')
				break;
		if (j == nextra)
			v[k++] = base[i];
	}
	for (j = 0; j < nextra; j++)
		v[k++] = extra[j];
	v[k] = NULL;
	return v;
}

/*
 * Read one request: 'Q' came with the descriptors; then its length and
 * its tokens.  0, or -1: the supervisor broke the protocol (it is
 * trusted, so the session ends).
 */
static int
read_req(struct run *ir, struct wreq *q)
{
	uint32_t len;
	char	*p, *end, **env = NULL;
	size_t	 na = 0, ne = 0, nr = 0, n;

	if (read_full(FD_SESSION, &len, sizeof(len)) == -1 || len == 0 ||
	    len > SBX_WARM_REQ_MAX ||
	    (q->buf = malloc((size_t)len + 1)) == NULL ||
	    (q->len = (size_t)len + 1) == 0 ||
	    read_full(FD_SESSION, q->buf, len) == -1)
		return -1;
	q->buf[len] = '\0';
	end = q->buf + len;
	/* Count, then point. */
	for (n = 0, p = q->buf; p < end; p += strlen(p) + 1, n++)
		;
	if ((q->argv = calloc(n + 1, sizeof(char *))) == NULL ||
	    (env = calloc(n + 1, sizeof(char *))) == NULL ||
	    (q->rlim = calloc(n + 1, sizeof(char *))) == NULL) {
		free(env);
		return -1;
	}
	for (p = q->buf; p < end; p += strlen(p) + 1) {
		switch (*p) {
		case SBX_WARM_T_ARG: q->argv[na++] = p + 1; break;
		case SBX_WARM_T_ENV: env[ne++] = p + 1; break;
		case SBX_WARM_T_RLIMIT: q->rlim[nr++] = p + 1; break;
		case SBX_WARM_T_CWD: q->cwd = p + 1; break;
		case SBX_WARM_T_SHELL: q->shell = p + 1; break;
		case SBX_WARM_T_CGROUP: q->ncg = p + 1; break;
		default: free(env); return -1;
		}
	}
	if ((na == 0 && q->shell == NULL) || !req_cgroup_ok(q)) {
		free(env);
		return -1;
	}
	q->envp = merge_env(ir->envp, env, ne);
	free(env);
	return q->envp == NULL ? -1 : 0;
}

/* Receive 'Q' or 'K' (1, 2), end of file (0) or an error (-1); with
 * 'Q', the three descriptors go to q->fd. */
static int
recv_order(struct wreq *q)
{
	union {
		char	       b[CMSG_SPACE(SBX_WARM_FD_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr	m;
	struct iovec	iov;
	struct cmsghdr *cm;
	ssize_t		r;
	char		c;
	int		i;

	memset(&m, 0, sizeof(m));
	iov.iov_base = &c;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	while ((r = recvmsg(FD_SESSION, &m, MSG_CMSG_CLOEXEC)) == -1 &&
	    errno == EINTR)
		;
	if (r <= 0)
		return (int)r;
	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		size_t nfd;
		int    fds[SBX_WARM_FD_MAX];

		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (nfd > SBX_WARM_FD_MAX)
			nfd = SBX_WARM_FD_MAX;
		memcpy(fds, CMSG_DATA(cm), nfd * sizeof(int));
		for (i = 0; i < (int)nfd && i < 3; i++) {
			if (c == SBX_WARM_O_REQ && q->fd[i] < 0)
				q->fd[i] = fds[i];
			else
				close(fds[i]);
		}
		if (nfd > 3 && c == SBX_WARM_O_REQ)
			req_extra_fds(q, fds + 3, nfd - 3);
		else
			for (; i < (int)nfd; i++)
				close(fds[i]);
	}
	if (c == SBX_WARM_O_KILL)
		return 2;
	if (c != SBX_WARM_O_REQ || q->fd[0] < 0 || q->fd[1] < 0 || q->fd[2] < 0)
		return -1;
	return 1;
}

/* In the child: its own session, its descriptors, limits, directory,
 * the guard, the command.  A failure goes to pid 1 on ep. */
static void __attribute__((noreturn))
child(struct run *ir, struct wreq *q, int ep, int gsock)
{
	char **argv = q->argv, *shargv[4 + 1];
	size_t n = 0, i;
	int    err, k;

	if (child_enter_cgroup(q) == -1) {
		/* Negative: pid 1 tells it from an exec failure. */
		err = -errno;
		(void)!write(ep, &err, sizeof(err));
		_exit(126);
	}
	sigprocmask(SIG_UNBLOCK, &ir->mask, NULL);
	signal(SIGPIPE, SIG_DFL);
	(void)setsid();
	for (k = 0; k < 3; k++)
		if (dup2(q->fd[k], k) == -1)
			goto fail;
	for (i = 0; q->rlim[i] != NULL; i++)
		if (set_rlimit(q->rlim[i]) == -1)
			goto fail;
	if (q->cwd != NULL && chdir(q->cwd) == -1)
		goto fail;
	if (q->shell != NULL) {
		/* As -c: bash -o pipefail -c STRING [$0 [ARG...]]. */
		while (q->argv[n] != NULL)
			n++;
		if ((argv = calloc(n + 6, sizeof(char *))) == NULL)
			goto fail;
		k = 0;
		if (access("/bin/bash", X_OK) == 0) {
			shargv[k++] = "bash";
			shargv[k++] = "-o";
			shargv[k++] = "pipefail";
		} else
			shargv[k++] = "sh";
		shargv[k++] = "-c";
		memcpy(argv, shargv, (size_t)k * sizeof(char *));
		argv[k++] = q->shell;
		for (i = 0; i < n; i++)
			argv[k++] = q->argv[i];
		argv[k] = NULL;
	}
	if (guard_install(gsock) == -1)
		goto fail;
	environ = q->envp;
	execvp(argv[0], argv);
fail:
	err = errno;
	(void)!write(ep, &err, sizeof(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* Start a command: "running", "exec ERRNO" or "fork ERRNO".  Returns
 * the child, or -1 (nothing runs). */
static pid_t
start_cmd(struct run *ir, struct wreq *q)
{
	int	ep[2], gp[2] = { -1, -1 }, err = 0;
	ssize_t r;
	pid_t	pid;

	if (pipe2(ep, O_CLOEXEC) == -1) {
		say(SBX_WARM_W_FORK " %d\n", errno);
		return -1;
	}
	if (guard_active() &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gp) == -1) {
		say(SBX_WARM_W_FORK " %d\n", errno);
		close(ep[0]);
		close(ep[1]);
		return -1;
	}
	if ((pid = fork()) == -1) {
		/* The session's task limit (its cgroup's pids.max) is
		 * the usual reason: the command never started. */
		say(SBX_WARM_W_FORK " %d\n", errno);
		close(ep[0]);
		close(ep[1]);
		if (gp[0] >= 0) {
			close(gp[0]);
			close(gp[1]);
		}
		return -1;
	}
	if (pid == 0) {
		if (gp[1] >= 0)
			close(gp[0]);
		child(ir, q, ep[1], gp[1]);
	}
	close(ep[1]);
	if (gp[0] >= 0) {
		close(gp[1]);
		ir->gfd = guard_receive(gp[0], pid);
		close(gp[0]);
	}
	while ((r = read(ep[0], &err, sizeof(err))) == -1 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof(err) && err < 0)
		say(SBX_WARM_W_CGROUP " %d\n", -err);
	else if (r == (ssize_t)sizeof(err))
		say(SBX_INIT_W_EXEC " %d\n", err);
	else
		say(SBX_INIT_W_RUNNING "\n", 0);
	return pid;
}

/* Everything but pid 1, killed and reaped: what the command left behind
 * (double forks, setsid(), daemons) goes with it. */
static void
sweep(void)
{
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

/* Reap; when the command is done, report its end after the sweep. */
static void
reap(struct run *ir)
{
	int   status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != ir->child)
			continue;
		ir->child = -1;
		sweep();
		if (ir->gfd >= 0) {
			close(ir->gfd);
			ir->gfd = -1;
		}
		if (WIFSIGNALED(status))
			say(SBX_INIT_W_SIGNAL " %d\n", WTERMSIG(status));
		else
			say(SBX_INIT_W_EXIT " %d\n", WEXITSTATUS(status));
		return;
	}
}

/* A word from the supervisor: a command, a kill, or its end. */
static void
supervisor_order(struct run *ir)
{
	struct wreq q;
	int	    k;

	memset(&q, 0, sizeof(q));
	q.fd[0] = q.fd[1] = q.fd[2] = -1;
	k = recv_order(&q);
	if (k == 2) {
		/* Kill the command: the sweep follows its end. */
		if (ir->child > 0)
			kill(-1, SIGKILL);
		wreq_free(&q);
		return;
	}
	if (k <= 0 || ir->child > 0 || read_req(ir, &q) == -1) {
		/* The supervisor is gone, or broke the protocol (one
		 * command at a time): the session ends with everything in
		 * it. */
		sweep();
		report(SBX_INIT_W_EXIT " %d\n", 0);
		_exit(k == 0 ? 0 : 125);
	}
	ir->child = start_cmd(ir, &q);
	/* pid 1 keeps nothing of the command: its descriptors and its
	 * request go now (the child has its own copies). */
	wreq_free(&q);
}

int
session_main(struct run *ir)
{
	struct signalfd_siginfo si;
	struct pollfd		pfd[9];

	ir->child = -1;
	/* The engine outside takes the session for a running command. */
	report(SBX_INIT_W_RUNNING "\n");
	say(SBX_INIT_W_READY "\n", 0);
	pfd[0].fd = ir->sfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = FD_CTL;
	pfd[1].events = POLLIN;
	pfd[2].events = POLLIN;
	pfd[3].events = POLLOUT;
	pfd[4].events = POLLIN;
	pfd[5].events = POLLIN;
	pfd[6].events = POLLOUT;
	pfd[7].events = POLLIN;
	pfd[8].fd = FD_SESSION;
	pfd[8].events = POLLIN;
	for (;;) {
		pfd[2].fd = ir->lfd >= 0 && held < 0 ? ir->lfd : -1;
		pfd[3].fd = ir->lfd >= 0 && held >= 0 ? FD_PROXY : -1;
		pfd[4].fd = ir->gfd;
		pfd[5].fd = ir->blfd >= 0 && !bridge_held() ? ir->blfd : -1;
		pfd[6].fd = ir->blfd >= 0 && bridge_held() ? FD_BRIDGE : -1;
		pfd[7].fd = socks_lfd >= 0 && held < 0 ? socks_lfd : -1;
		if (poll(pfd, 9, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[4].fd >= 0 && (pfd[4].revents & POLLIN))
			guard_serve(ir->gfd, FD_SESSION);
		else if (pfd[4].fd >= 0 &&
		    (pfd[4].revents & (POLLHUP | POLLERR | POLLNVAL))) {
			close(ir->gfd);
			ir->gfd = -1;
		}
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
			ctl_order();
		if ((pfd[2].fd >= 0 && (pfd[2].revents & POLLIN)) ||
		    (pfd[3].fd >= 0 &&
			(pfd[3].revents & (POLLOUT | POLLERR | POLLHUP))))
			(void)proxy_accept(ir->lfd);
		if (pfd[7].fd >= 0 && (pfd[7].revents & POLLIN) && held < 0)
			(void)socks_accept();
		if ((pfd[5].fd >= 0 && (pfd[5].revents & POLLIN)) ||
		    (pfd[6].fd >= 0 &&
			(pfd[6].revents & (POLLOUT | POLLERR | POLLHUP))))
			(void)bridge_accept(ir->blfd);
		if (pfd[0].revents & POLLIN) {
			if (read(ir->sfd, &si, sizeof(si)) == sizeof(si) &&
			    si.ssi_signo == SIGCHLD)
				reap(ir);
		}
		/* After the reap: the end of a command is said before the
		 * next one is read. */
		if (pfd[8].revents & (POLLIN | POLLHUP | POLLERR))
			supervisor_order(ir);
	}
	kill(-1, SIGKILL);
	return 125;
}
