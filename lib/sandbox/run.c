/* run.c: spawn bwrap, relay and capture output, enforce time, reap. */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agentns.h"
#include "fsutil.h"
#include "initproto.h"
#include "run.h"
#include "time.h"

/*
 * AddressSanitizer builds.  The child spawn() starts runs on a stack of
 * its own in sbx's memory, which ASan takes for the main thread's: an
 * instrumented frame there writes stack redzones into the shadow of that
 * mmap'd stack (shared with sbx, and left poisoned when the child executes
 * bwrap or exits), and every call to a function that does not return makes
 * ASan "unpoison" from that stack up to the main thread's top, which it
 * refuses with a warning (on every spawn, into the output the tests
 * compare) and then reports false stack-buffer-overflows.  So the child's
 * own two functions are not instrumented, and the stack's shadow is
 * cleared when it is mapped.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_ASAN 1
#endif
#endif
#ifdef SBX_ASAN
#include <sanitizer/asan_interface.h>
#endif
#define NO_ASAN	__attribute__((no_sanitize_address))

#define DRAIN_MS	2000
#define HOLD_MAX	(64u * 1024)

void
sbx_run_init(struct sbx_run *r)
{
	size_t	 i;

	memset(r, 0, sizeof(*r));
	for (i = 0; i <= SBX_FD_MAX; i++)
		r->slot[i] = -1;
	r->stdin_fd = r->out_fd = r->err_fd = -1;
	r->signal_fd = r->notify_fd = -1;
	r->tty_size_fd = -1;
	r->hold_fd = -1;
	for (i = 0; i < SBX_RUN_NWATCH; i++)
		r->watch[i].fd = -1;
	r->exit_code = -1;
	r->max_output = 1 << 20;
}

void
sbx_run_release(struct sbx_run *r)
{
	sbx_capture_release(&r->out);
	sbx_capture_release(&r->err);
	sbx_buf_release(&r->setup_err);
	sbx_strv_release(&r->fsdeny);
	sbx_strv_release(&r->sockdeny);
}

struct child {
	struct sbx_run	*r;
	int		 in, out, err, st, ctl;
	int		 shared;	/* runs in sbx's memory (spawn()) */
};

/*
 * In the child: arrange descriptors and exec bwrap.  Started by spawn(),
 * it runs in sbx's memory: it writes none of it (its own stack aside),
 * and no handler of sbx's may run in it.
 */
static void NO_ASAN
child_exec(const struct child *c)
{
	const struct sbx_run	*r = c->r;
	struct sigaction	 sa;
	int			 slot[SBX_FD_MAX + 1], tmp[SBX_FD_MAX + 1];
	int			 i, devnull, in = c->in, out = c->out;
	int			 err = c->err;
	sigset_t		 set;

	/* sbx's handlers would set sbx's flags from here: the default
	 * action instead, before any signal is let through. */
	for (i = 1; c->shared && i < NSIG; i++)
		if (sigaction(i, NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)
			(void)signal(i, SIG_DFL);
	/* Own process group: a ^C on the terminal reaches sbx, which then
	 * ends the sandbox in order, not bwrap directly. */
	setpgid(0, 0);
	/* Join the run's cgroup before bwrap starts: the command and every
	 * descendant are inside before their first instruction. */
	if (r->child_hook != NULL && r->child_hook(r->child_hook_arg) != 0)
		_exit(125);
	/*
	 * Root never runs the sandbox.  A user namespace does not change
	 * the kernel's idea of who we are: uid 0 inside one is still host
	 * uid 0 to every file it owns (/proc/sys, setuid bits left in the
	 * home), so bwrap itself runs as an unprivileged uid, after the
	 * cgroup was joined (which needed root).
	 */
	if (r->drop_privs && (setgroups(r->run_group != 0 ? 1 : 0,
	    &r->run_group) == -1 ||
	    setresgid(r->run_gid, r->run_gid, r->run_gid) == -1 ||
	    setresuid(r->run_uid, r->run_uid, r->run_uid) == -1 ||
	    getuid() != r->run_uid || geteuid() != r->run_uid))
		_exit(125);
	/* A plain user's per-agent uid: bwrap starts as the agent's id of
	 * the subordinate range (agentns.c). */
	if (r->agent_ns > 0 && sbx_agentns_join(r->agent_ns, r->agent_uid,
	    r->agent_gid) == -1)
		_exit(125);
	sigemptyset(&set);
	sigprocmask(SIG_SETMASK, &set, NULL);
	signal(SIGPIPE, SIG_DFL);

	memcpy(slot, r->slot, sizeof(slot));
	slot[SBX_FD_STATUS] = c->st;
	slot[SBX_FD_CTL] = c->ctl;
	/* Move everything out of the way first, then into its slot. */
	for (i = 0; i <= SBX_FD_MAX; i++) {
		tmp[i] = -1;
		if (i >= 3 && slot[i] >= 0 &&
		    (tmp[i] = fcntl(slot[i], F_DUPFD, 100)) == -1)
			_exit(125);
	}
	if (in < 0) {
		if ((devnull = open("/dev/null", O_RDONLY)) == -1)
			_exit(125);
		in = devnull;
	}
	if ((in = fcntl(in, F_DUPFD, 100)) == -1 ||
	    (out = fcntl(out, F_DUPFD, 100)) == -1 ||
	    (err = fcntl(err, F_DUPFD, 100)) == -1)
		_exit(125);
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		_exit(125);
	/*
	 * A slot left unset must be closed, not inherited: whatever the
	 * caller of sbx left open on that number would otherwise reach
	 * bwrap and sbx-init under a slot's meaning.
	 */
	for (i = 3; i <= SBX_FD_MAX; i++)
		if (tmp[i] >= 0 ? dup2(tmp[i], i) == -1 :
		    (close(i) == -1 && errno != EBADF))
			_exit(125);
	/* Nothing else of sbx crosses into bwrap. */
	sbx_fs_close_from(SBX_FD_MAX + 1, NULL, 0);
	execve(r->bwrap_argv[0], r->bwrap_argv, (char *[]){ NULL });
	_exit(125);
}

static int NO_ASAN
child_main(void *arg)
{
	child_exec(arg);
	return 125;
}

#define SPAWN_STACK	(256UL * 1024)

/*
 * Start bwrap as posix_spawn(3) does: the child shares sbx's memory
 * (CLONE_VM) and sbx sleeps (CLONE_VFORK) until it has executed bwrap or
 * exited.  A fork() copies sbx's page tables only for the exec to throw
 * them away, and sbx then takes a fault on every page it writes again:
 * ~0.3 ms of every run (issue 19).  Not posix_spawn(3) itself: the child
 * must join the run's cgroup, attach the workdir's copy and drop to the
 * sandbox's uid before it executes.  The child runs on a stack of its own,
 * below a guard page; every signal is blocked across the clone, and the
 * child resets sbx's handlers before it unblocks them (child_exec).
 */
static pid_t
spawn(struct child *c)
{
	sigset_t	 all, old;
	char		*stk;
	pid_t		 pid;
	int		 saved;

	stk = mmap(NULL, SPAWN_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE |
	    MAP_ANONYMOUS | MAP_STACK, -1, 0);
	if (stk == MAP_FAILED)
		return -1;
	if (mprotect(stk, (size_t)sysconf(_SC_PAGESIZE), PROT_NONE) == -1) {
		saved = errno;
		(void)munmap(stk, SPAWN_STACK);
		errno = saved;
		return -1;
	}
#ifdef SBX_ASAN
	ASAN_UNPOISON_MEMORY_REGION(stk, SPAWN_STACK);
#endif
	c->shared = 1;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid = clone(child_main, stk + SPAWN_STACK, CLONE_VM | CLONE_VFORK |
	    SIGCHLD, c);
	saved = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	(void)munmap(stk, SPAWN_STACK);
	errno = saved;
	return pid;
}

static void
notify(struct sbx_run *r, char what, int n)
{
	char	 line[32];
	int	 len;

	if (r->notify_fd < 0)
		return;
	len = snprintf(line, sizeof(line), "%c%d\n", what, n);
	(void)sbx_fs_write_all(r->notify_fd, line, (size_t)len);
	close(r->notify_fd);
	r->notify_fd = -1;
}

static void
status_line(struct sbx_run *r, const char *line)
{
	int	 n;

	if (strcmp(line, SBX_INIT_W_READY) == 0) {
		r->started = 1;
	} else if (strcmp(line, SBX_INIT_W_RUNNING) == 0) {
		r->running = 1;
	} else if (strcmp(line, SBX_INIT_W_NOPIPEFAIL) == 0) {
		r->nopipefail = 1;
	} else if (sscanf(line, SBX_INIT_W_EXEC " %d", &n) == 1) {
		if (r->exec_errno == 0)
			r->exec_errno = n;
	} else if (sscanf(line, SBX_INIT_W_EXIT " %d", &n) == 1) {
		r->exit_code = n;
	} else if (sscanf(line, SBX_INIT_W_SIGNAL " %d", &n) == 1) {
		r->signo = n;
		r->exit_code = 128 + n;
	} else if (strncmp(line, SBX_INIT_W_FSDENY " /",
	    sizeof(SBX_INIT_W_FSDENY) + 1) == 0 && r->fsdeny.n < 64) {
		(void)sbx_strv_push(&r->fsdeny,
		    line + sizeof(SBX_INIT_W_FSDENY));
	} else if (strncmp(line, SBX_INIT_W_SOCKDENY " ",
	    sizeof(SBX_INIT_W_SOCKDENY)) == 0 && r->sockdeny.n < 64) {
		(void)sbx_strv_push(&r->sockdeny,
		    line + sizeof(SBX_INIT_W_SOCKDENY));
	}
}

struct stream {
	int			 fd;
	int			 sink;
	struct sbx_capture	*cap;
	struct sbx_run		*r;
	int			 scrubbing;
	struct sbx_scrub_stream	 sc;
	long long		 held_at;	/* when bytes were held */
	int			 lost;		/* the sink failed */
};

static int
sink_write(struct sbx_run *r, int fd, const char *buf, size_t n)
{
	if (r->sink_write != NULL)
		return r->sink_write(r->sink_arg, buf, n);
	return sbx_fs_write_all(fd, buf, n);
}

/* Output that is ready to leave: captured, and written to the sink. */
static int
deliver(void *arg, const void *p, size_t n)
{
	struct stream	*s = arg;
	struct sbx_run	*r = s->r;

	sbx_capture_add(s->cap, p, n);
	if (s->sink >= 0 && sink_write(r, s->sink, p, n) == -1) {
		/* Our reader went away: stop reading, so the command gets
		 * EPIPE or SIGPIPE just as it would without sbx.  Any other
		 * error (a full disk) is kept, for the outcome to say: the
		 * command's output was lost, not delivered. */
		if (errno != EPIPE && r->sink_errno == 0)
			r->sink_errno = errno != 0 ? errno : EIO;
		s->sink = -1;
		s->lost = 1;
	}
	return 0;
}

/* Output from the sandbox: through the scrubber when there is one. */
static void
push(struct stream *s, const char *p, size_t n)
{
	if (!s->scrubbing) {
		deliver(s, p, n);
		return;
	}
	/* The scrubber fails only when its automaton cannot be built: the
	 * output is then lost, never passed on unfiltered. */
	if (sbx_scrub_write(&s->sc, p, n) == -1) {
		if (s->r->sink_errno == 0)
			s->r->sink_errno = errno != 0 ? errno : ENOMEM;
		s->sink = -1;
		s->lost = 1;
	}
	if (sbx_scrub_held(&s->sc) > 0)
		s->held_at = sbx_now_ms();
}

static void
scrub_flush(struct stream *s)
{
	if (s->scrubbing && sbx_scrub_held(&s->sc) > 0)
		(void)sbx_scrub_flush(&s->sc);
}

static void
stream_init(struct stream *s, struct sbx_run *r, int fd, int sink,
    struct sbx_capture *cap)
{
	memset(s, 0, sizeof(*s));
	s->fd = fd;
	s->sink = sink;
	s->cap = cap;
	s->r = r;
	if (r->scrub != NULL) {
		s->scrubbing = 1;
		sbx_scrub_stream_init(&s->sc, r->scrub, deliver, s);
	}
}

static int
relay(struct sbx_run *r, struct stream *s, int is_err, char *buf, size_t bufsz)
{
	ssize_t	 n;

	n = read(s->fd, buf, bufsz);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		close(s->fd);
		s->fd = -1;
		scrub_flush(s);
		return 0;
	}
	if (is_err && !r->started && r->hold_stderr &&
	    r->setup_err.len < HOLD_MAX) {
		sbx_buf_append(&r->setup_err, buf, (size_t)n);
		return 1;
	}
	push(s, buf, (size_t)n);
	if (s->lost && s->fd >= 0) {
		close(s->fd);
		s->fd = -1;
	}
	return 1;
}

/*
 * Read sbx-init's status socket.  With -t, sbx-init sends the master of the
 * command's terminal along with its "tty" line: the first terminal that
 * arrives is taken (into *master), and anything else passed (nothing
 * should be) is closed at once.
 */
static ssize_t
status_recv(struct sbx_run *r, int fd, char *buf, size_t len, int *master,
    int *taken)
{
	union {
		char		 b[CMSG_SPACE(4 * sizeof(int))];
		struct cmsghdr	 align;
	}		 u;
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	ssize_t		 n;
	size_t		 i, k;
	int		 fds[4];

	memset(&m, 0, sizeof(m));
	iov.iov_base = buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	if ((n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC)) <= 0)
		return n;
	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		if (k > 4)
			k = 4;
		memcpy(fds, CMSG_DATA(cm), k * sizeof(int));
		for (i = 0; i < k; i++) {
			if (r->tty && !*taken && isatty(fds[i])) {
				*master = fds[i];
				*taken = 1;
			} else
				close(fds[i]);
		}
	}
	return n;
}

/* The caller's window size, onto the command's terminal (which sends the
 * command SIGWINCH when it changed). */
static void
tty_resize(struct sbx_run *r, int master)
{
	struct winsize	 ws;

	if (master >= 0 && r->tty_size_fd >= 0 &&
	    ioctl(r->tty_size_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
	    ws.ws_col > 0)
		(void)ioctl(master, TIOCSWINSZ, &ws);
}

/*
 * Input for the command's terminal (or its stdin pipe, stdin_relay): as
 * much of what is pending as it takes now, never waiting (the loop must
 * keep its deadlines).  Input nobody can take any more (the terminal is
 * gone, the pipe's reader closed it) is dropped, and -1 says so.
 */
static int
tty_flush(int tw, const char *buf, size_t *off, size_t *len)
{
	ssize_t	 n;

	while (*len > 0) {
		n = write(tw, buf + *off, *len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return 0;
		if (n <= 0) {
			*len = 0;
			*off = 0;
			return -1;
		}
		*off += (size_t)n;
		*len -= (size_t)n;
	}
	*off = 0;
	return 0;
}

/*
 * The caller's hold socket (hold_fd): 'H' holds the output, 'R' lets it go;
 * the end of the socket (the asker is gone) lets it go for good.  Returns
 * the new state; *fd is -1 at the end (the caller closes the socket).
 */
static int
hold_read(int *fd, int held)
{
	char	 b[16];
	ssize_t	 n, i;

	n = read(*fd, b, sizeof(b));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return held;
	if (n <= 0) {
		*fd = -1;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (b[i] == 'H')
			held = 1;
		else if (b[i] == 'R')
			held = 0;
	}
	/* Nothing is written between polls: once the loop is here, no
	 * output goes out until 'R'.  The asker waits for this before it
	 * draws its question. */
	if (held)
		(void)!send(*fd, "h", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	return held;
}

static void
flush_held(struct sbx_run *r, struct stream *err)
{
	if (r->setup_err.len == 0)
		return;
	push(err, r->setup_err.p, r->setup_err.len);
	sbx_buf_reset(&r->setup_err);
}

/*
 * One run's supervision: the state the loop of sbx_run_sandbox keeps
 * between rounds, and one handler per descriptor it polls (as the proxy's
 * connections are): sbx-init's status socket, the command's stdout and
 * stderr (or its terminal), the caller's input and where it goes, the
 * caller's hold socket and signals, the caller's own descriptors (watch),
 * and bwrap's exit.
 */
enum {
	LOOP_HOLD, LOOP_STATUS, LOOP_OUT, LOOP_ERR, LOOP_TTY, LOOP_ROOM,
	LOOP_INPUT, LOOP_WATCH, LOOP_SIGNAL = LOOP_WATCH + SBX_RUN_NWATCH,
	LOOP_BWRAP, LOOP_NFD
};

struct loop {
	struct sbx_run	*r;
	struct stream	 out, err, tt;	/* tt: the terminal's output (-t) */
	int		 stfd;		/* sbx-init's status socket */
	char		 stbuf[PATH_MAX + 64];
	size_t		 stlen;
	int		 ttaken;	/* the terminal's master arrived */
	/* The caller's input (tin) into the terminal or the stdin pipe
	 * (tw); what waits to go in. */
	int		 tw, tin;
	char		 ibuf[4096];
	size_t		 ioff, ilen;
	int		 last_nl;
	int		 relay_in;	/* stdin_relay in force */
	int		 hfd, held;	/* the hold socket; output held */
	int		 ctl;		/* orders to sbx-init */
	int		 pidfd, reaped, wstatus, killed;
	long long	 start, now, last, term_at, drain_at;
	struct pollfd	 pfd[LOOP_NFD];
	char		 buf[65536];
};

/* An order to sbx-init (SBX_INIT_O_TERM, _KILL), through its ctl pipe. */
static void
order(struct loop *L, char o)
{
	(void)!write(L->ctl, &o, 1);
}

/* No grace: sbx-init told, bwrap killed, the run's cgroup killed. */
static void
kill_now(struct loop *L)
{
	struct sbx_run	*r = L->r;

	order(L, SBX_INIT_O_KILL);
	kill(r->bwrap_pid, SIGKILL);
	if (r->kill_hook != NULL)
		r->kill_hook(r->child_hook_arg);
	L->killed = 1;
}

/*
 * The caller's hold socket (hold_fd) before anything is relayed: after
 * 'H' nothing of this round goes out.
 */
static void
on_hold(struct loop *L, const struct pollfd *pf)
{
	struct sbx_run	*r = L->r;
	int		 was = L->held;

	if (L->hfd < 0 || !(pf->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	L->held = hold_read(&L->hfd, L->held);
	if (was && !L->held) {
		L->now = sbx_now_ms();
		L->last = L->now;
		if (L->reaped)
			L->drain_at = L->now + DRAIN_MS;
		if (r->started)
			flush_held(r, &L->err);
	}
}

/* -t: the master of the command's terminal, passed with "tty". */
static void
tty_taken(struct loop *L, int mfd)
{
	/* Never blocking on it: the loop keeps the deadlines.  Reads go
	 * through tt, the caller's input through tw. */
	(void)fcntl(mfd, F_SETFL, fcntl(mfd, F_GETFL) | O_NONBLOCK);
	L->tt.fd = mfd;
	L->tw = fcntl(mfd, F_DUPFD_CLOEXEC, 0);
	L->tin = L->r->stdin_fd;
	tty_resize(L->r, L->tw);
}

/* Each complete line of the status socket; the rest waits. */
static void
status_lines(struct loop *L)
{
	struct sbx_run	*r = L->r;
	char		*nl, *p = L->stbuf;
	int		 was;

	while ((nl = strchr(p, '\n')) != NULL) {
		was = r->started;
		*nl = '\0';
		status_line(r, p);
		if (!was && r->started && !L->held)
			flush_held(r, &L->err);
		if (r->running)
			notify(r, 'R', 0);
		if (r->exec_errno)
			notify(r, 'E', r->exec_errno);
		p = nl + 1;
	}
	L->stlen -= (size_t)(p - L->stbuf);
	memmove(L->stbuf, p, L->stlen);
	if (L->stlen == sizeof(L->stbuf) - 1)
		L->stlen = 0;
}

/* Status first: "ready" must be seen before the stderr that follows it
 * is judged. */
static void
on_status(struct loop *L, const struct pollfd *pf)
{
	ssize_t	 k;
	int	 mfd = -1;

	if (L->stfd < 0 || !(pf->revents & (POLLIN | POLLHUP)))
		return;
	k = status_recv(L->r, L->stfd, L->stbuf + L->stlen,
	    sizeof(L->stbuf) - 1 - L->stlen, &mfd, &L->ttaken);
	if (mfd >= 0)
		tty_taken(L, mfd);
	if (k <= 0 && !(k == -1 && errno == EINTR)) {
		close(L->stfd);
		L->stfd = -1;
	} else if (k > 0) {
		L->stlen += (size_t)k;
		L->stbuf[L->stlen] = '\0';
		status_lines(L);
	}
}

/* The command's stdout or stderr. */
static void
on_stream(struct loop *L, struct stream *s, int is_err,
    const struct pollfd *pf)
{
	if (L->held || s->fd < 0 ||
	    !(pf->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	L->last = sbx_now_ms();
	relay(L->r, s, is_err, L->buf, sizeof(L->buf));
}

static void
on_out(struct loop *L, const struct pollfd *pf)
{
	on_stream(L, &L->out, 0, pf);
}

static void
on_err(struct loop *L, const struct pollfd *pf)
{
	on_stream(L, &L->err, 1, pf);
}

/* -t: the terminal's output. */
static void
on_tty(struct loop *L, const struct pollfd *pf)
{
	if (L->held || L->tt.fd < 0 ||
	    !(pf->revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	L->last = sbx_now_ms();
	relay(L->r, &L->tt, 0, L->buf, sizeof(L->buf));
	if (L->tt.fd < 0) {
		/*
		 * Every slave is closed: nothing more goes in.  tw keeps the
		 * master open until the end, because closing it hangs the
		 * terminal up, and the command, still in its exit path after
		 * closing its descriptors, would die of SIGHUP.
		 */
		L->tin = -1;
		L->ilen = 0;
	}
}

/* The end of the input through the stdin pipe: its end is the pipe's. */
static void
input_close(struct loop *L)
{
	close(L->tw);
	L->tw = L->tin = -1;
}

/* Room in the terminal (or the stdin pipe) for the input that waits. */
static void
on_input_room(struct loop *L, const struct pollfd *pf)
{
	if (L->tw >= 0 && L->ilen > 0 &&
	    (pf->revents & (POLLOUT | POLLERR | POLLHUP)) &&
	    tty_flush(L->tw, L->ibuf, &L->ioff, &L->ilen) == -1 &&
	    L->relay_in)
		/* The command closed its stdin: the caller's input stays
		 * where it is, unread. */
		input_close(L);
}

/* The caller's input, into the terminal or the stdin pipe. */
static void
on_input(struct loop *L, const struct pollfd *pf)
{
	struct termios	 tio;
	ssize_t		 k;

	if (L->tw < 0 || L->tin < 0 || L->ilen != 0 || L->held ||
	    !(pf->revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
		return;
	k = read(L->tin, L->ibuf, sizeof(L->ibuf));
	if (k > 0) {
		L->ilen = (size_t)k;
		L->last_nl = L->ibuf[k - 1] == '\n';
	} else if (L->relay_in && (k == 0 || (errno != EINTR &&
	    errno != EAGAIN))) {
		/* The end of the caller's input is the end of the pipe. */
		input_close(L);
	} else if (k == 0 || (errno != EINTR && errno != EAGAIN)) {
		/*
		 * The end of the caller's input is the terminal's
		 * end-of-file character (^D), twice after a partial line: a
		 * reader in canonical mode sees end of file, as at a
		 * keyboard.
		 */
		L->tin = -1;
		L->ibuf[0] = L->ibuf[1] = tcgetattr(L->tw, &tio) == 0 &&
		    tio.c_cc[VEOF] != 0 ? (char)tio.c_cc[VEOF] : 4;
		L->ilen = L->last_nl ? 1 : 2;
	}
	if (L->tw >= 0 && tty_flush(L->tw, L->ibuf, &L->ioff, &L->ilen) ==
	    -1 && L->relay_in)
		input_close(L);
}

/* The caller's descriptors (see watch in run.h). */
static void
on_watch(struct loop *L, const struct pollfd *pf)
{
	struct sbx_run	*r = L->r;

	if (pf->fd >= 0 && pf->revents != 0)
		r->watch_cb(r->watch_arg, r, (int)(pf - &L->pfd[LOOP_WATCH]),
		    pf->revents);
}

/* A signal to the caller: SIGWINCH resizes, the others end the run. */
static void
on_signal(struct loop *L, const struct pollfd *pf)
{
	struct sbx_run	*r = L->r;
	char		 c;
	int		 sig = 0;

	if (r->signal_fd >= 0 && (pf->revents & POLLIN) &&
	    read(r->signal_fd, &c, 1) == 1)
		sig = (unsigned char)c;
	if (sig == SIGWINCH) {
		tty_resize(r, L->tw);
		sig = 0;
	}
	if (sig == 0)
		return;
	if (r->killed_by == NULL)
		r->killed_by = "user";
	r->user_signal = (unsigned char)c;
	if (c == SIGUSR1 || L->term_at)
		/* Forced, or asked twice: no grace. */
		kill_now(L);
	else
		order(L, SBX_INIT_O_TERM);
	if (!L->term_at)
		L->term_at = sbx_now_ms();
}

/* bwrap's exit: on its pidfd, or every round without one. */
static void
on_bwrap(struct loop *L, const struct pollfd *pf)
{
	struct sbx_run	*r = L->r;
	pid_t		 w;

	if (L->reaped || (L->pidfd >= 0 && !(pf->revents & POLLIN)))
		return;
	w = waitpid(r->bwrap_pid, &L->wstatus, WNOHANG);
	if (w == r->bwrap_pid || (w == -1 && errno == ECHILD)) {
		L->reaped = 1;
		r->duration_ms = sbx_now_ms() - L->start;
		L->drain_at = sbx_now_ms() + DRAIN_MS;
		/* Everything inside is dead now; let sbx-init's ctl pipe
		 * go. */
		close(L->ctl);
		L->ctl = -1;
	}
}

/*
 * The descriptors of one round, in the order their handlers run: the hold
 * first, then the status, the output, the input, the caller's own
 * descriptors, signals, and bwrap's exit last.  A descriptor not polled
 * this round is -1.
 */
static void
loop_fds(struct loop *L)
{
	struct sbx_run	*r = L->r;
	struct pollfd	*p = L->pfd;
	int		 i;

	p[LOOP_HOLD] = (struct pollfd){ L->hfd, POLLIN, 0 };
	p[LOOP_STATUS] = (struct pollfd){ L->stfd, POLLIN, 0 };
	p[LOOP_OUT] = (struct pollfd){ L->held ? -1 : L->out.fd, POLLIN, 0 };
	p[LOOP_ERR] = (struct pollfd){ L->held ? -1 : L->err.fd, POLLIN, 0 };
	/* -t: the terminal's output; the caller's input when the last of
	 * it went in; the terminal again while some waits. */
	p[LOOP_TTY] = (struct pollfd){ L->held ? -1 : L->tt.fd, POLLIN, 0 };
	p[LOOP_ROOM] = (struct pollfd){ L->ilen > 0 ? L->tw : -1, POLLOUT,
	    0 };
	p[LOOP_INPUT] = (struct pollfd){ L->tw >= 0 && L->ilen == 0 &&
	    !L->held ? L->tin : -1, POLLIN, 0 };
	for (i = 0; i < SBX_RUN_NWATCH; i++)
		p[LOOP_WATCH + i] = (struct pollfd){ r->watch_cb != NULL ?
		    r->watch[i].fd : -1, r->watch[i].events, 0 };
	p[LOOP_SIGNAL] = (struct pollfd){ L->reaped || L->killed ? -1 :
	    r->signal_fd, POLLIN, 0 };
	p[LOOP_BWRAP] = (struct pollfd){ L->reaped ? -1 : L->pidfd, POLLIN,
	    0 };
}

_Static_assert(SBX_RUN_NWATCH == 4, "one on_watch per watch entry");

static void (*const loop_handler[LOOP_NFD])(struct loop *,
    const struct pollfd *) = {
	[LOOP_HOLD] = on_hold,
	[LOOP_STATUS] = on_status,
	[LOOP_OUT] = on_out,
	[LOOP_ERR] = on_err,
	[LOOP_TTY] = on_tty,
	[LOOP_ROOM] = on_input_room,
	[LOOP_INPUT] = on_input,
	[LOOP_WATCH] = on_watch,
	[LOOP_WATCH + 1] = on_watch,
	[LOOP_WATCH + 2] = on_watch,
	[LOOP_WATCH + 3] = on_watch,
	[LOOP_SIGNAL] = on_signal,
	[LOOP_BWRAP] = on_bwrap,
};

/*
 * Deadlines: inactivity, wall time, kill grace.  A person thinking about a
 * question is not the command idling: the idle clock stops while held.
 */
static void
loop_deadlines(struct loop *L)
{
	struct sbx_run	*r = L->r;

	if (L->reaped)
		return;
	if (!L->term_at && !L->held && r->idle_timeout_ms > 0 &&
	    L->now - L->last >= r->idle_timeout_ms) {
		r->killed_by = "timeout";
		r->limit = "idle";
		L->term_at = L->now;
		order(L, SBX_INIT_O_TERM);
	}
	if (!L->term_at && r->wall_timeout_ms > 0 &&
	    L->now - L->start >= r->wall_timeout_ms) {
		r->killed_by = "limit";
		r->limit = "wall_time";
		L->term_at = L->now;
		order(L, SBX_INIT_O_TERM);
	}
	if (L->term_at && !L->killed &&
	    L->now - L->term_at >= SBX_KILL_GRACE_MS)
		kill_now(L);
}

/* How long poll may sleep: to the next deadline, or -1. */
static long long
loop_timeout(struct loop *L)
{
	struct sbx_run	*r = L->r;
	struct stream	*hs;
	long long	 dl = -1, hd;
	int		 i;

	if (L->reaped)
		dl = L->held ? -1 : L->drain_at - L->now;
	else if (L->term_at && !L->killed)
		dl = L->term_at + SBX_KILL_GRACE_MS - L->now;
	else if (!L->term_at && !L->held && r->idle_timeout_ms > 0)
		dl = L->last + r->idle_timeout_ms - L->now;
	if (!L->reaped && !L->term_at && r->wall_timeout_ms > 0 &&
	    (dl < 0 || L->start + r->wall_timeout_ms - L->now < dl))
		dl = L->start + r->wall_timeout_ms - L->now;
	/* Without a pidfd (old kernels) waitpid() is polled every 50 ms. */
	if (!L->reaped && L->pidfd < 0 && (dl < 0 || dl > 50))
		dl = 50;
	/* Held output goes out once its stream is quiet (and nobody holds
	 * the terminal). */
	for (i = 0; r->scrub != NULL && !L->held && i < 3; i++) {
		hs = i == 0 ? &L->out : i == 1 ? &L->err : &L->tt;
		if (sbx_scrub_held(&hs->sc) == 0)
			continue;
		hd = hs->held_at + SBX_SCRUB_IDLE_MS - L->now;
		if (hd <= 0) {
			scrub_flush(hs);
			continue;
		}
		if (dl < 0 || hd < dl)
			dl = hd;
	}
	if (dl < 0 && dl != -1)
		dl = 0;
	return dl;
}

/*
 * Is the run over?  bwrap was reaped and its output drained (or the drain
 * timed out).  Held: the asker's question is on the terminal and the
 * output waits for it, even once the sandbox is gone (the ask ends with
 * the run's connections, or times out).
 */
static int
loop_done(const struct loop *L)
{
	return L->reaped && !L->held && ((L->out.fd < 0 && L->err.fd < 0 &&
	    L->stfd < 0 && L->tt.fd < 0) || L->now >= L->drain_at);
}

/*
 * Start bwrap on fresh pipes (stdout, stderr, the status socket, the ctl
 * pipe, and the stdin pipe of stdin_relay) and set up the loop's state.
 */
static int
loop_start(struct loop *L, struct sbx_run *r, struct sbx_error *e)
{
	int		 po[2] = { -1, -1 }, pe[2] = { -1, -1 };
	int		 ps[2] = { -1, -1 }, pc[2] = { -1, -1 };
	int		 pi[2] = { -1, -1 }, i;
	struct child	 ch;

	memset(L, 0, offsetof(struct loop, buf));
	L->r = r;
	L->tw = L->tin = L->pidfd = L->stfd = L->ctl = -1;
	L->out.fd = L->err.fd = L->tt.fd = -1;
	L->last_nl = 1;
	L->hfd = r->hold_fd;
	sbx_capture_init(&r->out, r->max_output, r->capture);
	sbx_capture_init(&r->err, r->max_output, r->capture);
	/* The status channel is a socket: with -t, sbx-init passes the
	 * terminal's master over it. */
	if (pipe2(po, O_CLOEXEC) == -1 || pipe2(pe, O_CLOEXEC) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ps) == -1 ||
	    pipe2(pc, O_CLOEXEC) == -1) {
		sbx_error_sys(e, "pipe_failed", "pipe");
		goto fail;
	}
	/* stdin_relay: the command reads a pipe; sbx reads the caller's
	 * stdin (the terminal) and writes it in. */
	L->relay_in = r->stdin_relay && !r->tty && r->stdin_fd >= 0;
	if (L->relay_in && pipe2(pi, O_CLOEXEC) == -1) {
		sbx_error_sys(e, "pipe_failed", "pipe");
		goto fail;
	}
	L->start = L->last = sbx_now_ms();
	ch.r = r;
	ch.in = r->tty ? -1 : L->relay_in ? pi[0] : r->stdin_fd;
	ch.out = po[1];
	ch.err = pe[1];
	ch.st = ps[1];
	ch.ctl = pc[0];
	ch.shared = 0;
	r->bwrap_pid = r->fork_hook != NULL ?
	    r->fork_hook(r->child_hook_arg) : SBX_RUN_SPAWN;
	if (r->bwrap_pid == SBX_RUN_SPAWN)
		r->bwrap_pid = spawn(&ch);
	if (r->bwrap_pid == -1) {
		sbx_error_sys(e, "fork_failed", "fork");
		goto fail;
	}
	if (r->bwrap_pid == 0)
		child_exec(&ch);
	close(po[1]);
	close(pe[1]);
	close(ps[1]);
	close(pc[0]);
	if (L->relay_in) {
		close(pi[0]);
		L->tw = pi[1];
		(void)fcntl(L->tw, F_SETFL, fcntl(L->tw, F_GETFL) | O_NONBLOCK);
		L->tin = r->stdin_fd;
	}
	/* A pidfd makes bwrap's exit pollable; without one (old kernels)
	 * the loop polls waitpid() every 50 ms. */
	L->pidfd = (int)syscall(SYS_pidfd_open, r->bwrap_pid, 0);
	stream_init(&L->out, r, po[0], r->out_fd, &r->out);
	stream_init(&L->err, r, pe[0], r->err_fd, &r->err);
	stream_init(&L->tt, r, -1, r->out_fd, &r->out);
	L->stfd = ps[0];
	L->ctl = pc[1];
	return 0;
fail:
	for (i = 0; i < 2; i++) {
		if (po[i] >= 0) close(po[i]);
		if (pe[i] >= 0) close(pe[i]);
		if (ps[i] >= 0) close(ps[i]);
		if (pc[i] >= 0) close(pc[i]);
		if (pi[i] >= 0) close(pi[i]);
	}
	return -1;
}

/* Set-up errors the caller reports itself: scrubbed too. */
static void
scrub_setup_err(struct sbx_run *r)
{
	struct sbx_buf	 sb = SBX_BUF_INIT;

	if (r->scrub == NULL || r->setup_err.len == 0)
		return;
	if (sbx_scrub_buf(r->scrub, r->setup_err.p, r->setup_err.len,
	    &sb) == 0) {
		sbx_buf_release(&r->setup_err);
		r->setup_err = sb;
	} else {
		sbx_buf_release(&sb);
		sbx_buf_reset(&r->setup_err);
	}
}

/* After the loop: bwrap reaped (killed first if the loop failed), the
 * output flushed, the status known, every descriptor of the run closed. */
static void
loop_finish(struct loop *L)
{
	struct sbx_run	*r = L->r;
	int		 i, fds[] = { L->out.fd, L->err.fd, L->tt.fd, L->tw,
			    L->stfd, L->pidfd, L->ctl };

	if (!L->reaped) {
		kill(r->bwrap_pid, SIGKILL);
		while (waitpid(r->bwrap_pid, &L->wstatus, 0) == -1 &&
		    errno == EINTR)
			;
		r->duration_ms = sbx_now_ms() - L->start;
	}
	if (!r->started) {
		notify(r, 'F', 0);
		if (!r->hold_stderr)
			sbx_buf_reset(&r->setup_err);
	} else {
		flush_held(r, &L->err);
	}
	scrub_flush(&L->out);
	scrub_flush(&L->err);
	scrub_flush(&L->tt);
	scrub_setup_err(r);
	if (L->out.scrubbing) {
		sbx_scrub_stream_release(&L->out.sc);
		sbx_scrub_stream_release(&L->err.sc);
		sbx_scrub_stream_release(&L->tt.sc);
	}
	if (r->started && r->exit_code < 0) {
		/* sbx-init never reported: it was killed with the
		 * sandbox (our SIGKILL); take bwrap's word. */
		if (WIFSIGNALED(L->wstatus)) {
			r->signo = WTERMSIG(L->wstatus);
			r->exit_code = 128 + r->signo;
		} else if (WIFEXITED(L->wstatus))
			r->exit_code = WEXITSTATUS(L->wstatus);
	}
	if (!r->started && WIFEXITED(L->wstatus))
		r->exit_code = WEXITSTATUS(L->wstatus);
	for (i = 0; i < (int)(sizeof(fds) / sizeof(*fds)); i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

int
sbx_run_sandbox(struct sbx_run *r, struct sbx_error *e)
{
	struct loop	 L;
	long long	 dl;
	int		 i;

	if (loop_start(&L, r, e) == -1)
		return -1;
	for (;;) {
		L.now = sbx_now_ms();
		if (loop_done(&L))
			break;
		loop_deadlines(&L);
		dl = loop_timeout(&L);
		loop_fds(&L);
		if (poll(L.pfd, LOOP_NFD, dl > 0x7fffffff ? 0x7fffffff :
		    (int)dl) == -1) {
			if (errno == EINTR)
				continue;
			sbx_error_sys(e, "poll_failed", "poll");
			break;
		}
		for (i = 0; i < LOOP_NFD; i++)
			loop_handler[i](&L, &L.pfd[i]);
	}
	loop_finish(&L);
	return 0;
}
