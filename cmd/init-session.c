/*
 * init-session.c: sbx-init -S, pid 1 of a warm session (sbx session,
 * lib/exec/warm.c).  The protocol is initproto.h's (SBX_WARM_*): the
 * supervisor hands pid 1 each client's connection on SBX_FD_SESSION, one
 * at a time; pid 1 reads the client's request from it (the command, its
 * stdin, stdout and stderr), forks the command in a session of its own,
 * writes its status lines to the client and, when it ends, kills and
 * reaps everything else of the sandbox before it says so.
 *
 * The sandbox's seccomp filter was applied by bwrap before pid 1 started,
 * so every command inherits it; the file-system guard is installed per
 * command, in the child, as a one-shot run does (guard_install).
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "init-int.h"
#include "initguard.h"
#include "initproto.h"

extern char **environ;

/* One command: what the client sent, parsed in place. */
struct wreq {
	char  *buf; /* the request; the strings point into it */
	size_t len; /* of buf, wiped when freed (secrets) */
	char **argv, **envp, *cwd, *shell;
	char **rlim;
	int    fd[3];
};

/*
 * The client pid 1 serves (at most one: the supervisor hands the next
 * after SBX_WARM_O_END): its connection, where its request stands, and
 * the request as it comes.  The client is of the session's uid but is not
 * the supervisor: nothing it sends may block pid 1 or end the session.
 */
enum { C_NONE, C_FDS, C_LEN, C_BODY, C_RUN };
static struct {
	int	    fd;
	int	    phase;
	int	    hup; /* end of file seen while the command runs */
	int	    job; /* a background job's request ('B') */
	uint32_t    len;
	size_t	    off;
	long long   deadline;
	struct wreq q;
} cl = { .fd = -1 };

/* A line to the supervisor (at start only: "ready"). */
static void
say_sup(const char *s)
{
	(void)!send(FD_SESSION, s, strlen(s), MSG_NOSIGNAL);
}

/* A status line to the client; never blocks (a client that does not read
 * loses lines, not the session). */
static void __attribute__((format(printf, 1, 0))) say(const char *fmt, int n)
{
	char line[64];
	int  len;

	if (cl.fd < 0)
		return;
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	len = snprintf(line, sizeof(line), fmt, n);
#pragma GCC diagnostic pop
	if (len > 0)
		(void)!send(cl.fd, line, (size_t)len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
}

static long long
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
wreq_free(struct wreq *q)
{
	int i;

	for (i = 0; i < 3; i++)
		if (q->fd[i] >= 0)
			close(q->fd[i]);
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

/*
 * The commands' cgroup of the session (SBX_WARM_O_CGROUP): its
 * cgroup.procs or tasks files, one per hierarchy, opened by the supervisor
 * outside and passed once, at the start; every foreground command enters
 * it before it runs.  Only pid 1 holds them (close-on-exec, and pid 1 is
 * not dumpable): nothing in the sandbox can name or open a cgroup.
 */
static int cmdcg[SBX_WARM_CG_MAX];
static int ncmdcg;

/* In the command's child, first: into the command's cgroup, every
 * hierarchy, before anything of the command runs; -1 (errno) leaves it
 * unexecuted, since its limits would not hold. */
static int
child_enter_cgroup(struct wreq *q)
{
	ssize_t r;
	int	i;

	(void)q;
	for (i = 0; i < ncmdcg; i++) {
		while ((r = write(cmdcg[i], "0", 1)) == -1 && errno == EINTR)
			;
		if (r != 1)
			return -1;
		close(cmdcg[i]);
	}
	return 0;
}

/* Done with the client: its connection goes, and the supervisor hears
 * that the session is free. */
static void
client_done(void)
{
	char c = SBX_WARM_O_END;

	wreq_free(&cl.q);
	if (cl.fd >= 0)
		close(cl.fd);
	cl.fd = -1;
	cl.phase = C_NONE;
	cl.hup = 0;
	(void)!send(FD_SESSION, &c, 1, MSG_NOSIGNAL);
}

/* A request refused: one line to its client, which is dropped; the
 * session goes on. */
static void
client_refuse(const char *reason)
{
	char line[64];
	int  len;

	len = snprintf(line, sizeof(line), SBX_WARM_W_ERROR " %s\n", reason);
	if (cl.fd >= 0 && len > 0)
		(void)!send(cl.fd, line, (size_t)len,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
	client_done();
}

/*
 * Background jobs (SBX_WARM_O_JOB): each under a subreaper of its own,
 * a child of pid 1 that holds the job's connection and nothing else of
 * pid 1's.  Every process the job starts, however it forks, double-forks
 * or setsid()s, stays under it (orphans reparent to the nearest
 * subreaper), so that the sweep after a foreground command can tell the
 * job's processes from the command's by their parent chain.
 */
#define JOBS_MAX 32
static pid_t jobs[JOBS_MAX];
static int   njobs;

static int
job_index(pid_t pid)
{
	int i;

	for (i = 0; i < njobs; i++)
		if (jobs[i] == pid)
			return i;
	return -1;
}

/* Its parent and state, from /proc/PID/stat (after the command name's
 * ')'), or -1. */
static pid_t
proc_parent(pid_t pid, char *state)
{
	char	path[64], buf[512], *p;
	ssize_t n;
	int	fd, pp;
	char	st = '?';

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %d", &st, &pp) != 2)
		return -1;
	if (state != NULL)
		*state = st;
	return pp;
}

/* Is pid a job's subreaper or beneath one? */
static int
in_job(pid_t pid)
{
	int depth;

	for (depth = 0; pid > 1 && depth < 4096; depth++) {
		if (job_index(pid) >= 0)
			return 1;
		pid = proc_parent(pid, NULL);
	}
	return 0;
}

/* Kill every process but pid 1 and the jobs' trees; the number killed. */
static int
kill_but_jobs(void)
{
	DIR	      *d;
	struct dirent *de;
	pid_t	       pid;
	int	       n = 0;
	char	       st;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if ((pid = (pid_t)atoi(de->d_name)) <= 1)
			continue;
		/* A zombie is dead already: its reaper takes it.  One whose
		 * state cannot be read is killed all the same (fail
		 * closed: it is gone, or not a job's). */
		st = '?';
		if (proc_parent(pid, &st) != -1 && (st == 'Z' || in_job(pid)))
			continue;
		if (kill(pid, SIGKILL) == 0)
			n++;
	}
	closedir(d);
	return n;
}

/* Kill this process's children (a job's subreaper: the job's every
 * process ends up one). */
static void
kill_children(void)
{
	DIR	      *d;
	struct dirent *de;
	pid_t	       pid, me = getpid();

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL)
		if ((pid = (pid_t)atoi(de->d_name)) > 1 &&
		    proc_parent(pid, NULL) == me)
			kill(pid, SIGKILL);
	closedir(d);
}

/* A job's subreaper ended: the supervisor hears it (its idle time). */
static void
job_gone(pid_t pid)
{
	int  i = job_index(pid);
	char c = SBX_WARM_O_JOBEND;

	if (i < 0)
		return;
	jobs[i] = jobs[--njobs];
	(void)!send(FD_SESSION, &c, 1, MSG_NOSIGNAL);
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
 * The request's tokens (q->buf, len bytes, NUL-terminated after them)
 * parsed in place.  0, or -1: malformed (an unknown token, no command, a
 * value without its NUL).
 */
static int
parse_req(struct run *ir, struct wreq *q, size_t len)
{
	char  *p, *end, **env = NULL;
	size_t na = 0, ne = 0, nr = 0, n;

	end = q->buf + len;
	/* Every token ends with its NUL inside the request. */
	if (len == 0 || end[-1] != '\0')
		return -1;
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
		default: free(env); return -1;
		}
	}
	if (na == 0 && q->shell == NULL) {
		free(env);
		return -1;
	}
	q->envp = merge_env(ir->envp, env, ne);
	free(env);
	return q->envp == NULL ? -1 : 0;
}

/*
 * recvmsg() of one message (an order byte, or the spare's request: len
 * bytes at most into buf) and the descriptors that come with it: at most
 * max are kept in fds (close-on-exec), the rest are closed but counted in
 * *nfd, so that a sender of too many is told from a right one; *bad says
 * the message or a control message was truncated, or one was not
 * SCM_RIGHTS.  Returns as recvmsg (EINTR retried).
 */
static ssize_t
recv_order(int sock, int flags, void *buf, size_t len, int *fds, size_t max,
    size_t *nfd, int *bad)
{
	union {
		char	       b[CMSG_SPACE(8 * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr	m;
	struct iovec	iov;
	struct cmsghdr *cm;
	ssize_t		r;
	size_t		n, i;
	int		in[8];

	*nfd = 0;
	*bad = 0;
	memset(&m, 0, sizeof(m));
	iov.iov_base = buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	while ((r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC | flags)) == -1 &&
	    errno == EINTR)
		;
	if (r <= 0)
		return r;
	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS) {
			*bad = 1;
			continue;
		}
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (n > 8)
			n = 8;
		memcpy(in, CMSG_DATA(cm), n * sizeof(int));
		for (i = 0; i < n; i++, (*nfd)++) {
			if (*nfd < max)
				fds[*nfd] = in[i];
			else
				close(in[i]);
		}
	}
	if (m.msg_flags & (MSG_CTRUNC | MSG_TRUNC))
		*bad = 1;
	return r;
}

/*
 * The client's 'Q' and the descriptors that come with it: exactly
 * three, none truncated.  1 done, 0 not there yet, -1 refused (said), -2
 * the client is gone.  Whatever else it passed is closed: a descriptor
 * pid 1 kept would reach the next command.
 */
static int
req_recv_fds(struct wreq *q)
{
	ssize_t r;
	size_t	nfd;
	int	bad;
	char	c = 0;

	r = recv_order(cl.fd, MSG_DONTWAIT, &c, 1, q->fd, 3, &nfd, &bad);
	if (r == -1 && errno == EAGAIN)
		return 0;
	if (r <= 0)
		return -2;
	cl.job = c == SBX_WARM_O_BG;
	if (c != SBX_WARM_O_REQ && c != SBX_WARM_O_BG) {
		client_refuse("request_order");
		return -1;
	}
	if (bad || nfd != 3) {
		client_refuse("request_fds");
		return -1;
	}
	return 1;
}

/* The length, then the request, as much as there is: 1 complete, 0 not
 * yet, -1 refused (said), -2 the client is gone. */
static int
req_read_body(void)
{
	ssize_t r;
	void   *to;
	size_t	want;

	for (;;) {
		if (cl.phase == C_LEN) {
			to = (char *)&cl.len + cl.off;
			want = sizeof(cl.len) - cl.off;
		} else {
			to = cl.q.buf + cl.off;
			want = cl.len - cl.off;
		}
		r = recv(cl.fd, to, want, MSG_DONTWAIT);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && errno == EAGAIN)
			return 0;
		if (r <= 0)
			return -2;
		cl.off += (size_t)r;
		if (cl.phase == C_LEN && cl.off == sizeof(cl.len)) {
			/* Bounded before anything is allocated for it. */
			if (cl.len == 0 || cl.len > SBX_WARM_REQ_MAX) {
				client_refuse("request_length");
				return -1;
			}
			if ((cl.q.buf = malloc((size_t)cl.len + 1)) == NULL) {
				client_refuse("nomem");
				return -1;
			}
			cl.q.len = (size_t)cl.len + 1;
			cl.phase = C_BODY;
			cl.off = 0;
		} else if (cl.phase == C_BODY && cl.off == cl.len) {
			cl.q.buf[cl.len] = '\0';
			return 1;
		}
	}
}

/* In the child: its own session, its descriptors, limits, directory,
 * the guard (unless installed already: gsock -2), the command.  A failure
 * goes to pid 1 on ep. */
static void __attribute__((noreturn))
child(struct run *ir, struct wreq *q, int ep, int gsock)
{
	char **argv = q->argv, *shargv[4 + 1];
	size_t n = 0, i;
	int    err, k;

	if (gsock != -2 && child_enter_cgroup(q) == -1) {
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
	if (gsock != -2 && guard_install(gsock) == -1)
		goto fail;
	environ = q->envp;
	execvp(argv[0], argv);
fail:
	err = errno;
	(void)!write(ep, &err, sizeof(err));
	_exit(err == ENOENT ? 127 : 126);
}

/*
 * The spare: the next foreground command's process, forked ahead of its
 * request while the session is idle (at the start, and after each
 * command's end), so that a command costs pid 1 a message and the spare
 * an execve, not a fork, the cgroup's move and the guard's filter on the
 * way (issue 31: a warm command in a third of the cheapest cold sandbox).
 *
 * It is what a command's child is between fork and execve, waiting: under
 * the guard (whose listener pid 1 holds already), its signals blocked as
 * pid 1's are, every descriptor of pid 1's closed but its channel, the
 * exec pipe and the commands' cgroup (a proxied connection pid 1 closes
 * must not live on in it); it enters that cgroup with its command, so
 * that the cgroup stays empty between commands.  It is not dumpable while it
 * waits: it is a copy of pid 1's memory, and nothing else in the sandbox,
 * a background job included, may read it or take its descriptors; the
 * execve makes it the command's, as it makes a child's.  A spare that is
 * gone when its request comes (killed by a job, refused by the pids
 * limit, its cgroup refused) is replaced by a fork on the spot, which
 * reports what went wrong; background jobs never use it.
 */
#define SPARE_REQ_MAX (32u << 10)
static struct {
	pid_t pid;  /* or -1 */
	int   sock; /* pid 1's end of its channel (SOCK_SEQPACKET) */
	int   ep;   /* the read end of its exec pipe */
	int   gfd;  /* its guard's listener, or -1 */
} spare = { -1, -1, -1, -1 };
/* The commands' cgroup came after the spare was made. */
static int spare_stale;

/* Forget it (pid 1 closes its ends; a job's subreaper, its copies). */
static void
spare_close(void)
{
	if (spare.sock >= 0)
		close(spare.sock);
	if (spare.ep >= 0)
		close(spare.ep);
	if (spare.gfd >= 0)
		close(spare.gfd);
	spare.sock = spare.ep = spare.gfd = -1;
	spare.pid = -1;
}

/* Let it go: killed, and reaped with the others. */
static void
spare_drop(void)
{
	if (spare.pid > 0)
		kill(spare.pid, SIGKILL);
	spare_close();
}

/* Every descriptor from 3 up closed, but the n of keep (ascending). */
static void
close_but(const int *keep, int n)
{
	long	 max = sysconf(_SC_OPEN_MAX);
	unsigned lo = 3, hi;
	int	 i, fd;

	for (i = 0; i <= n; i++) {
		hi = i < n ? (unsigned)keep[i] : ~0U;
		if (hi < 3 || (i < n && hi < lo))
			continue;
		if (i < n && hi == lo) {
			lo = hi + 1;
			continue;
		}
		if (i < n)
			hi--;
#ifdef SYS_close_range
		if (syscall(SYS_close_range, lo, hi, 0) != 0)
#endif
			for (fd = (int)lo; (unsigned)fd <= hi &&
			     fd < (max > 0 ? max : 4096); fd++)
				close(fd);
		if (i < n)
			lo = (unsigned)keep[i] + 1;
	}
}

static int
int_cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* In the spare: set up as far as a command's child gets before it knows
 * its command, then wait for it.  pid 1 closing the channel ends it. */
static void __attribute__((noreturn))
spare_main(struct run *ir, int sock, int ep, int gsock)
{
	struct wreq	q;
	ssize_t		r;
	size_t		n = 0;
	int		err, keep[2 + SBX_WARM_CG_MAX], nk = 0, i, bad;

	if (guard_install(gsock) == -1)
		_exit(126);
	/* pidfd_getfd needed it (guard_install); waiting, it is pid 1's
	 * copy again. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* It waits in pid 1's cgroup, out of the commands' (empty between
	 * commands, its counters the command's own): it enters it with
	 * its command. */
	keep[nk++] = sock;
	keep[nk++] = ep;
	for (i = 0; i < ncmdcg; i++)
		keep[nk++] = cmdcg[i];
	qsort(keep, (size_t)nk, sizeof(keep[0]), int_cmp);
	close_but(keep, nk);
	memset(&q, 0, sizeof(q));
	q.fd[0] = q.fd[1] = q.fd[2] = -1;
	if ((q.buf = malloc(SPARE_REQ_MAX + 1)) == NULL)
		_exit(126);
	if ((r = recv_order(sock, 0, q.buf, SPARE_REQ_MAX, q.fd, 3, &n,
	    &bad)) <= 0)
		_exit(0);
	close(sock);
	if (child_enter_cgroup(&q) == -1) {
		/* Negative: pid 1 tells it from an exec failure. */
		err = -errno;
		(void)!write(ep, &err, sizeof(err));
		_exit(126);
	}
	q.len = (size_t)r + 1;
	q.buf[r] = '\0';
	if (n != 3 || bad || parse_req(ir, &q, (size_t)r) == -1) {
		/* pid 1 sent what it had parsed: not reached. */
		err = EPROTO;
		(void)!write(ep, &err, sizeof(err));
		_exit(126);
	}
	child(ir, &q, ep, -2);
}

/* A spare, when there is none and nothing runs; silently none when the
 * fork, or its set-up, fails (the command then forks as it would). */
static void
spare_make(struct run *ir)
{
	int   sp[2], ep[2], gp[2] = { -1, -1 };
	pid_t pid;

	if (spare.pid > 0 || cl.fd >= 0 || ir->child > 0)
		return;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return;
	if (pipe2(ep, O_CLOEXEC) == -1)
		goto fail_sp;
	if (guard_active() &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gp) == -1)
		goto fail_ep;
	if ((pid = fork()) == -1)
		goto fail_gp;
	if (pid == 0) {
		close(sp[0]);
		close(ep[0]);
		if (gp[0] >= 0)
			close(gp[0]);
		spare_main(ir, sp[1], ep[1], gp[1]);
	}
	close(sp[1]);
	close(ep[1]);
	spare.pid = pid;
	spare.sock = sp[0];
	spare.ep = ep[0];
	if (gp[0] >= 0) {
		close(gp[1]);
		spare.gfd = guard_receive(gp[0], pid);
		close(gp[0]);
		if (spare.gfd == -1)
			spare_drop();
	}
	return;
fail_gp:
	if (gp[0] >= 0) {
		close(gp[0]);
		close(gp[1]);
	}
fail_ep:
	close(ep[0]);
	close(ep[1]);
fail_sp:
	close(sp[0]);
	close(sp[1]);
}

/* The command to the spare: its pid, the exec pipe in *ep and the guard
 * in ir->gfd; or -1, and no spare (the caller forks). */
static pid_t
spare_use(struct run *ir, struct wreq *q, int *ep)
{
	size_t		len = q->len - 1; /* the request, without our NUL */
	pid_t		pid = spare.pid;

	if (pid <= 0)
		return -1;
	if (len > SPARE_REQ_MAX) {
		spare_drop();
		return -1;
	}
	/* Never blocking: the channel is empty, and a gone spare is an
	 * error at once (EPIPE, ECONNREFUSED). */
	if (send_fds(spare.sock, q->buf, len, q->fd, 3,
	    MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)len) {
		spare_drop();
		return -1;
	}
	*ep = spare.ep;
	ir->gfd = spare.gfd;
	spare.ep = spare.gfd = -1;
	spare_close();
	return pid;
}

/* Start a command: "running", "exec ERRNO" or "fork ERRNO".  Returns
 * the child, or -1 (nothing runs). */
static pid_t
start_cmd(struct run *ir, struct wreq *q)
{
	int	ep[2], gp[2] = { -1, -1 }, err = 0;
	ssize_t r;
	pid_t	pid;

	if ((pid = spare_use(ir, q, &ep[0])) > 0)
		goto started;
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
started:
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

/* pid 1's children that ended, reaped without waiting: a job's
 * subreaper among them is a job gone. */
static void
reap_some(void)
{
	pid_t pid;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0)
		job_gone(pid);
}

/* Everything but pid 1 (and the background jobs' trees), killed and
 * reaped: what the command left behind (double forks, setsid(), daemons)
 * goes with it. */
static void
sweep(void)
{
	int i;

	if (njobs == 0) {
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
			;
		return;
	}
	/* Until a pass finds nothing left to kill: what a killed process
	 * forked meanwhile, or left as an orphan, is found by the next. */
	for (i = 0; i < 100000; i++) {
		if (kill_but_jobs() == 0)
			break;
		reap_some();
		poll(NULL, 0, 1);
	}
	reap_some();
}

/* Reap; when the command is done, report its end after the sweep. */
static void
reap(struct run *ir)
{
	int   status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != ir->child) {
			if (pid == spare.pid)
				spare_close();
			else
				job_gone(pid);
			continue;
		}
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
		client_done();
		/* Idle now: the next command's process, ahead of it. */
		spare_make(ir);
		return;
	}
}

/*
 * A client's connection from the supervisor ('C' and one descriptor).
 * The supervisor is trusted: anything else, a second connection while one
 * is served, or its end of file ends the session with everything in it.
 */
static void
supervisor_order(void)
{
	ssize_t r;
	size_t	ngot = 0, i;
	int	got[SBX_WARM_CG_MAX], fd = -1, bad;
	char	c = 0;

	r = recv_order(FD_SESSION, 0, &c, 1, got, SBX_WARM_CG_MAX, &ngot,
	    &bad);
	if (ngot > SBX_WARM_CG_MAX || bad) {
		/* More than the supervisor ever sends (the extras are
		 * closed): the protocol is broken, the session ends. */
		r = -1;
		ngot = ngot > SBX_WARM_CG_MAX ? SBX_WARM_CG_MAX : ngot;
	}
	/* The commands' cgroup, once, before any client (warm.c). */
	if (r > 0 && c == SBX_WARM_O_CGROUP && ncmdcg == 0 && cl.fd < 0) {
		for (i = 0; i < ngot; i++)
			cmdcg[ncmdcg++] = got[i];
		/* The spare made at the start is not in it. */
		spare_stale = 1;
		return;
	}
	for (i = 0; i < ngot; i++) {
		if (fd < 0)
			fd = got[i];
		else
			close(got[i]);
	}
	if (r <= 0 || c != SBX_WARM_O_CONN || fd < 0 || cl.fd >= 0) {
		if (fd >= 0)
			close(fd);
		sweep();
		report(SBX_INIT_W_EXIT " %d\n", 0);
		_exit(r == 0 ? 0 : 125);
	}
	/* Never blocking on it: see the struct above. */
	(void)fcntl(fd, F_SETFL, O_NONBLOCK);
	cl.fd = fd;
	cl.phase = C_FDS;
	cl.off = 0;
	cl.len = 0;
	cl.deadline = mono_ms() + SBX_WARM_REQ_MS;
	memset(&cl.q, 0, sizeof(cl.q));
	cl.q.fd[0] = cl.q.fd[1] = cl.q.fd[2] = -1;
}

/* The command's guard: a request to serve, or its end (the command and
 * all that shares its filter are gone). */
static void
guard_event(struct run *ir, const struct pollfd *p)
{
	if (p->fd < 0)
		return;
	if (p->revents & POLLIN)
		guard_serve(ir->gfd, cl.fd);
	else if (p->revents & (POLLHUP | POLLERR | POLLNVAL)) {
		close(ir->gfd);
		ir->gfd = -1;
	}
}

/* Kill the running command (the client said 'K', or left): the sweep
 * follows its end. */
static void
client_kill(struct run *ir)
{
	if (ir->child > 0) {
		if (njobs == 0)
			kill(-1, SIGKILL);
		else
			(void)kill_but_jobs();
	}
}

/*
 * A job's subreaper: the job's command, its guard, its connection ('K'
 * or end of file kills the job), and at its end every process the job
 * left behind (reparented here, whatever they did), killed and reaped
 * before the end is said.  Its processes are out of reach of the sweep
 * that follows foreground commands (kill_but_jobs).
 */
static void __attribute__((noreturn))
job_main(struct run *ir)
{
	struct signalfd_siginfo si;
	struct pollfd		pfd[3];
	pid_t			pid, cmd;
	int			status = 0, done = 0;
	char			buf[64];
	ssize_t			r;

	close(FD_SESSION);
	/* pid 1's spare is not the job's (nor its listener). */
	spare_close();
	/* A job is not a foreground command: it stays in the session's
	 * cgroup, out of the commands' (which the next command enters). */
	while (ncmdcg > 0)
		close(cmdcg[--ncmdcg]);
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	njobs = 0;
	ir->gfd = -1;
	cmd = start_cmd(ir, &cl.q);
	wreq_free(&cl.q);
	if (cmd < 0)
		_exit(0);
	pfd[0].fd = ir->sfd;
	pfd[0].events = POLLIN;
	pfd[1].events = POLLIN;
	pfd[2].events = POLLIN;
	while (!done) {
		pfd[1].fd = cl.hup ? -1 : cl.fd;
		pfd[2].fd = ir->gfd;
		if (poll(pfd, 3, -1) == -1) {
			if (errno == EINTR)
				continue;
			kill_children();
			continue;
		}
		guard_event(ir, &pfd[2]);
		if (pfd[1].fd >= 0 &&
		    (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))) {
			r = recv(cl.fd, buf, sizeof(buf), MSG_DONTWAIT);
			if (r == 0 || (r == -1 && errno != EINTR &&
			    errno != EAGAIN)) {
				/* Its host side is gone (sbx exec kill
				 * --force, or killed): so is the job. */
				cl.hup = 1;
				kill_children();
			} else if (r > 0 &&
			    memchr(buf, SBX_WARM_O_KILL, (size_t)r) != NULL)
				kill_children();
		}
		if (pfd[0].revents & POLLIN) {
			if (read(ir->sfd, &si, sizeof(si)) != sizeof(si))
				continue;
			while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
				if (pid == cmd)
					done = 1;
		}
	}
	/* What the job left behind: reparented to us, killed until none
	 * is left. */
	for (;;) {
		kill_children();
		if (waitpid(-1, NULL, 0) == -1 && errno == ECHILD)
			break;
	}
	if (WIFSIGNALED(status))
		say(SBX_INIT_W_SIGNAL " %d\n", WTERMSIG(status));
	else
		say(SBX_INIT_W_EXIT " %d\n", WEXITSTATUS(status));
	_exit(0);
}

/* Start a job: its subreaper takes the connection; pid 1 keeps nothing
 * of it but the subreaper's pid. */
static void
start_job(struct run *ir)
{
	pid_t pid;
	char  c = SBX_WARM_O_JOB;

	if (njobs == JOBS_MAX) {
		client_refuse("too_many_jobs");
		return;
	}
	if ((pid = fork()) == -1) {
		say(SBX_WARM_W_FORK " %d\n", errno);
		client_done();
		return;
	}
	if (pid == 0)
		job_main(ir);
	jobs[njobs++] = pid;
	(void)!send(FD_SESSION, &c, 1, MSG_NOSIGNAL);
	client_done();
}

/* The client spoke: its request as it comes, then 'K' or its end of
 * file while the command runs. */
static void
client_input(struct run *ir)
{
	char	buf[64];
	ssize_t r;
	int	k;

	if (cl.phase == C_RUN) {
		r = recv(cl.fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (r == -1 && (errno == EINTR || errno == EAGAIN))
			return;
		if (r <= 0) {
			/* The client died or gave up: its command goes. */
			cl.hup = 1;
			client_kill(ir);
		} else if (memchr(buf, SBX_WARM_O_KILL, (size_t)r) != NULL)
			client_kill(ir);
		return;
	}
	if (cl.phase == C_FDS) {
		if ((k = req_recv_fds(&cl.q)) != 1) {
			if (k == -2)
				client_done();
			return;
		}
		cl.phase = C_LEN;
		cl.off = 0;
	}
	if ((k = req_read_body()) != 1) {
		if (k == -2)
			client_done();
		return;
	}
	if (parse_req(ir, &cl.q, cl.len) == -1) {
		client_refuse("request_malformed");
		return;
	}
	if (cl.job) {
		start_job(ir);
		return;
	}
	cl.phase = C_RUN;
	ir->child = start_cmd(ir, &cl.q);
	/* pid 1 keeps nothing of the command but its connection: its
	 * descriptors and its request go now (the child has its own
	 * copies). */
	wreq_free(&cl.q);
	if (ir->child < 0)
		client_done();
}

int
session_main(struct run *ir)
{
	struct signalfd_siginfo si;
	struct pollfd		pfd[10];
	long long		now;
	int			tmo;

	ir->child = -1;
	/* The engine outside takes the session for a running command. */
	report(SBX_INIT_W_RUNNING "\n");
	say_sup(SBX_INIT_W_READY "\n");
	spare_make(ir);
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
	pfd[9].events = POLLIN;
	for (;;) {
		pfd[2].fd = ir->lfd >= 0 && held < 0 ? ir->lfd : -1;
		pfd[3].fd = ir->lfd >= 0 && held >= 0 ? FD_PROXY : -1;
		pfd[4].fd = ir->gfd;
		pfd[5].fd = ir->blfd >= 0 && !bridge_held() ? ir->blfd : -1;
		pfd[6].fd = ir->blfd >= 0 && bridge_held() ? FD_BRIDGE : -1;
		pfd[7].fd = socks_lfd >= 0 && held < 0 ? socks_lfd : -1;
		pfd[9].fd = cl.fd >= 0 && !cl.hup ? cl.fd : -1;
		tmo = -1;
		if (cl.fd >= 0 && cl.phase != C_RUN) {
			/* A request that does not come in time is
			 * dropped: the session is not held by it. */
			now = mono_ms();
			if (now >= cl.deadline) {
				client_refuse("request_timeout");
				continue;
			}
			tmo = (int)(cl.deadline - now);
		}
		if (poll(pfd, 10, tmo) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		guard_event(ir, &pfd[4]);
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
		/* After the reap: a command's end is said (and its client
		 * let go) before its client's end of file is taken for a
		 * kill. */
		if (pfd[9].fd >= 0 && pfd[9].fd == cl.fd &&
		    (pfd[9].revents & (POLLIN | POLLHUP | POLLERR)))
			client_input(ir);
		if (pfd[8].revents & (POLLIN | POLLHUP | POLLERR)) {
			supervisor_order();
			if (spare_stale) {
				spare_stale = 0;
				spare_drop();
				spare_make(ir);
			}
			/* The request is usually there already (the client
			 * sent it as it connected): read it now, not after
			 * another poll. */
			if (cl.fd >= 0 && cl.phase == C_FDS)
				client_input(ir);
		}
	}
	kill(-1, SIGKILL);
	return 125;
}
