/* t-run: sbx_run_sandbox with /bin/sh standing in for bwrap.
 *
 * The stand-in speaks sbx-init's side of the protocol itself: status
 * lines ("ready", "running", "exit N", ...) on fd 3, T(erminate) and
 * K(ill) read from fd 4.  So the descriptor set-up, the status parser,
 * the relay and capture of output, the held setup errors, the notify
 * line, the idle and wall deadlines, signals from the caller, the hooks
 * and the privilege drop are checked without bubblewrap.  No assertion
 * is on elapsed time.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "buf.h"
#include "fsutil.h"
#include "run.h"

#define PRELUDE	"PATH=/usr/bin:/bin; "

static char	 outs[8192], errs[8192], caps[8192], capse[8192];
static struct sbx_error e;

/* The contents of a memfd, into buf. */
static void
contents(int fd, char *buf, size_t size)
{
	ssize_t	 n;

	n = pread(fd, buf, size - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
}

static void
rendered(const struct sbx_capture *c, char *buf, size_t size)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	buf[0] = '\0';
	if (sbx_capture_render(c, &b) == 0 && b.p != NULL)
		snprintf(buf, size, "%s", b.p);
	sbx_buf_release(&b);
}

/*
 * Run script under /bin/sh as the sandbox, output relayed into memfds
 * and captured; outs/errs get what was relayed, caps/capse what was
 * captured.  r is set up by the caller beyond that (sbx_run_init done).
 */
static int
run_sh(struct sbx_run *r, const char *script)
{
	char	*argv[] = { "/bin/sh", "-c", NULL, NULL };
	char	 text[2048];
	int	 o, er, rc;

	snprintf(text, sizeof(text), PRELUDE "%s", script);
	argv[2] = text;
	r->bwrap_argv = argv;
	o = memfd_create("out", MFD_CLOEXEC);
	er = memfd_create("err", MFD_CLOEXEC);
	if (r->out_fd == -1)
		r->out_fd = o;
	if (r->err_fd == -1)
		r->err_fd = er;
	r->capture = 1;
	memset(&e, 0, sizeof(e));
	rc = sbx_run_sandbox(r, &e);
	r->bwrap_argv = NULL;
	contents(o, outs, sizeof(outs));
	contents(er, errs, sizeof(errs));
	rendered(&r->out, caps, sizeof(caps));
	rendered(&r->err, capse, sizeof(capse));
	close(o);
	close(er);
	if (rc == -1)
		diag("sbx_run_sandbox: %s", e.message);
	return rc;
}

static void
test_init(void)
{
	struct sbx_run	 r;
	long long	 a, b;
	int		 i, all = 1;

	memset(&r, 0x5a, sizeof(r));
	sbx_run_init(&r);
	for (i = 0; i <= SBX_FD_MAX; i++)
		if (r.slot[i] != -1)
			all = 0;
	ok(all && r.stdin_fd == -1 && r.out_fd == -1 && r.err_fd == -1 &&
	    r.signal_fd == -1 && r.notify_fd == -1 && r.tty_size_fd == -1,
	    "init: every descriptor unset (-1)");
	ok(r.exit_code == -1 && r.max_output == 1 << 20 && r.capture == 0 &&
	    r.sink_write == NULL && r.child_hook == NULL &&
	    r.kill_hook == NULL && r.drop_privs == 0 && r.tty == 0 &&
	    r.killed_by == NULL && r.limit == NULL && r.started == 0,
	    "init: exit unknown, 1 MiB of output, no hooks, nothing happened");
	sbx_run_release(&r);

	a = sbx_now_ms();
	b = sbx_now_ms();
	ok(a > 0 && b >= a, "sbx_now_ms: monotonic milliseconds");
}

static void
test_status(void)
{
	struct sbx_run	 r;
	char		 note[16];
	int		 p[2];
	ssize_t		 n;

	/* The command's word, not bwrap's exit status, is the result. */
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1)
		p[0] = p[1] = -1;
	r.notify_fd = p[1];
	ok(run_sh(&r, "echo ready >&3; echo running >&3; echo out; "
	    "echo err >&2; echo 'exit 7' >&3; exit 0") == 0 && r.started &&
	    r.running && r.exit_code == 7 && r.signo == 0 &&
	    r.exec_errno == 0 && r.killed_by == NULL && r.bwrap_pid > 0,
	    "ready, running, exit 7: exit code 7 (bwrap said 0)");
	is_str(outs, "out\n", "stdout relayed to out_fd");
	is_str(errs, "err\n", "stderr relayed to err_fd");
	is_str(caps, "out\n", "stdout captured");
	is_str(capse, "err\n", "stderr captured");
	n = p[0] >= 0 ? read(p[0], note, sizeof(note) - 1) : -1;
	note[n > 0 ? n : 0] = '\0';
	is_str(note, "R0\n", "notify_fd: R0 once the command runs");
	ok(r.notify_fd == -1 && (p[0] < 0 || read(p[0], note, 1) == 0),
	    "notify_fd: closed after its one line");
	if (p[0] >= 0)
		close(p[0]);
	sbx_run_release(&r);

	/* exec failed inside: E<errno>. */
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1)
		p[0] = p[1] = -1;
	r.notify_fd = p[1];
	ok(run_sh(&r, "echo ready >&3; echo 'exec 2' >&3; echo 'exec 13' >&3;"
	    " echo 'exit 127' >&3") == 0 && r.started && !r.running &&
	    r.exec_errno == 2 && r.exit_code == 127,
	    "exec 2: exec_errno 2 (the first one kept), exit 127");
	n = p[0] >= 0 ? read(p[0], note, sizeof(note) - 1) : -1;
	note[n > 0 ? n : 0] = '\0';
	is_str(note, "E2\n", "notify_fd: E2");
	if (p[0] >= 0)
		close(p[0]);
	sbx_run_release(&r);

	/* Killed by a signal; the pipefail warning; garbage ignored. */
	sbx_run_init(&r);
	ok(run_sh(&r, "echo ready >&3; echo 'warn nopipefail' >&3; "
	    "echo 'exit x' >&3; echo 'bogus line' >&3; printf 'sig' >&3; "
	    "printf 'nal 9\\n' >&3") == 0 && r.signo == 9 &&
	    r.exit_code == 137 && r.nopipefail == 1,
	    "signal 9 (split over two writes): exit 137; nopipefail; "
	    "garbage ignored");
	sbx_run_release(&r);

	/* Ready, then gone without a word: bwrap's status is taken. */
	sbx_run_init(&r);
	ok(run_sh(&r, "echo ready >&3; exit 5") == 0 && r.started &&
	    r.exit_code == 5, "ready, then exit 5 unreported: exit 5");
	sbx_run_release(&r);
	sbx_run_init(&r);
	ok(run_sh(&r, "echo ready >&3; kill -TERM $$") == 0 && r.started &&
	    r.signo == SIGTERM && r.exit_code == 128 + SIGTERM,
	    "ready, then killed by SIGTERM: signo 15, exit 143");
	sbx_run_release(&r);
}

static void
test_setup_errors(void)
{
	struct sbx_run	 r;
	char		 note[16];
	int		 p[2];
	ssize_t		 n;

	/* bwrap failed before sbx-init was ready: its stderr is held
	 * for the caller, not relayed; F0 to notify. */
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1)
		p[0] = p[1] = -1;
	r.notify_fd = p[1];
	r.hold_stderr = 1;
	ok(run_sh(&r, "echo 'bwrap: No permission' >&2; exit 1") == 0 &&
	    !r.started && r.exit_code == 1, "no ready: not started, exit 1");
	ok(r.setup_err.p != NULL && strcmp(r.setup_err.p,
	    "bwrap: No permission\n") == 0 && errs[0] == '\0' &&
	    capse[0] == '\0', "hold_stderr: setup error held, not relayed");
	n = p[0] >= 0 ? read(p[0], note, sizeof(note) - 1) : -1;
	note[n > 0 ? n : 0] = '\0';
	is_str(note, "F0\n", "notify_fd: F0 when it never started");
	if (p[0] >= 0)
		close(p[0]);
	sbx_run_release(&r);

	/* Held until ready, then flushed in order. */
	sbx_run_init(&r);
	r.hold_stderr = 1;
	ok(run_sh(&r, "echo early >&2; sleep 0.1; echo ready >&3; "
	    "echo late >&2; echo 'exit 0' >&3") == 0 && r.started &&
	    r.setup_err.len == 0, "ready: nothing left held");
	is_str(errs, "early\nlate\n", "held stderr flushed at ready, in order");
	sbx_run_release(&r);

	/* Not held: relayed as it comes. */
	sbx_run_init(&r);
	ok(run_sh(&r, "echo 'bwrap: oops' >&2; exit 1") == 0 && !r.started &&
	    r.setup_err.len == 0, "without hold_stderr nothing is held");
	is_str(errs, "bwrap: oops\n", "and it was relayed");
	sbx_run_release(&r);
}

static int
hook_fail(void *arg)
{
	return 1;
}

static int
hook_mark(void *arg)
{
	return write(*(int *)arg, "H", 1) == 1 ? 0 : 1;
}

static int	 killed_hooks;

static void
usr1_handler(int sig)
{
	(void)sig;
}

static void
kill_hook(void *arg)
{
	killed_hooks++;
}

static void
test_child(void)
{
	struct sbx_run	 r;
	char		*argv[] = { "/nonexistent/bwrap", NULL };
	char		 c = 0;
	int		 p[2], fd;

	/* bwrap cannot be executed: 125, never started. */
	sbx_run_init(&r);
	r.bwrap_argv = argv;
	ok(sbx_run_sandbox(&r, &e) == 0 && !r.started &&
	    r.exit_code == 125, "a missing bwrap: exit 125, not started");
	sbx_run_release(&r);

	/* child_hook: a refusal stops it before exec; run before exec. */
	sbx_run_init(&r);
	r.child_hook = hook_fail;
	ok(run_sh(&r, "echo ready >&3; echo ran") == 0 && !r.started &&
	    r.exit_code == 125 && outs[0] == '\0',
	    "child_hook non-zero: nothing runs, exit 125");
	sbx_run_release(&r);
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1)
		p[0] = p[1] = -1;
	r.child_hook = hook_mark;
	r.child_hook_arg = &p[1];
	ok(run_sh(&r, "echo ready >&3; echo 'exit 0' >&3") == 0 &&
	    r.exit_code == 0 && p[0] >= 0 && (close(p[1]), read(p[0], &c,
	    1) == 1) && c == 'H', "child_hook: called in the child");
	if (p[0] >= 0)
		close(p[0]);
	sbx_run_release(&r);

	/*
	 * The child shares our memory until it executes (CLONE_VM |
	 * CLONE_VFORK): it must leave the slot table as it found it, and
	 * reset our handlers in itself only.
	 */
	{
		struct sigaction sa, now;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = usr1_handler;
		sigemptyset(&sa.sa_mask);
		(void)sigaction(SIGUSR1, &sa, NULL);
		sbx_run_init(&r);
		ok(run_sh(&r, "echo ready >&3; echo 'exit 0' >&3") == 0 &&
		    r.exit_code == 0 && r.slot[SBX_FD_STATUS] == -1 &&
		    r.slot[SBX_FD_CTL] == -1 && sigaction(SIGUSR1, NULL,
		    &now) == 0 && now.sa_handler == usr1_handler,
		    "the child wrote nothing of ours: slots %d %d, our "
		    "SIGUSR1 handler kept", r.slot[SBX_FD_STATUS],
		    r.slot[SBX_FD_CTL]);
		sbx_run_release(&r);
		(void)signal(SIGUSR1, SIG_DFL);
	}

	/* stdin: a pipe's contents, or /dev/null. */
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1 || write(p[1], "input\n", 6) != 6)
		p[0] = p[1] = -1;
	if (p[1] >= 0)
		close(p[1]);
	r.stdin_fd = p[0];
	ok(run_sh(&r, "echo ready >&3; cat; echo 'exit 0' >&3") == 0 &&
	    strcmp(outs, "input\n") == 0, "stdin_fd is the command's stdin");
	if (p[0] >= 0)
		close(p[0]);
	sbx_run_release(&r);
	sbx_run_init(&r);
	ok(run_sh(&r, "echo ready >&3; cat; readlink /proc/self/fd/0; "
	    "echo 'exit 0' >&3") == 0 && strcmp(outs, "/dev/null\n") == 0,
	    "no stdin_fd: /dev/null");
	sbx_run_release(&r);

	/*
	 * Slots: each fd lands on its number even when the numbers
	 * collide (5's source sits on 6 and 6's on 5); an fd of ours above
	 * SBX_FD_MAX, or on a slot left unset, never reaches bwrap.
	 */
	sbx_run_init(&r);
	fd = memfd_create("a", 0);
	if (fd == -1 || write(fd, "to-six", 6) != 6 || dup2(fd, 5) == -1)
		ok(0, "memfd: %s", strerror(errno));
	close(fd);
	fd = memfd_create("b", 0);
	if (fd == -1 || write(fd, "to-five", 7) != 7 || dup2(fd, 6) == -1)
		ok(0, "memfd: %s", strerror(errno));
	close(fd);
	(void)lseek(5, 0, SEEK_SET);
	(void)lseek(6, 0, SEEK_SET);
	r.slot[SBX_FD_ENV] = 6;		/* 5 */
	r.slot[SBX_FD_HOME] = 5;	/* 6 */
	fd = open("/dev/null", O_RDONLY);	/* no O_CLOEXEC: inherited */
	(void)dup2(fd, 20);
	(void)dup2(fd, SBX_FD_SECCOMP);
	close(fd);
	ok(run_sh(&r, "echo ready >&3; cat <&5; echo; cat <&6; echo; "
	    "for f in 7 8 9 10 11 12 13 14 15 20 100 101; do "
	    "[ -e /proc/self/fd/$f ] && echo \"open $f\"; done; "
	    "echo 'exit 0' >&3") == 0 && r.exit_code == 0,
	    "slots: the stand-in ran");
	is_str(outs, "to-five\nto-six\n",
	    "slots: swapped fds land in their slots; nothing else is open");
	close(5);
	close(6);
	close(20);
	close(SBX_FD_SECCOMP);
	sbx_run_release(&r);
}

struct sink {
	char	 buf[256];
	size_t	 len;
	int	 calls;
	int	 fail;
};

static int
sink_fn(void *arg, const void *p, size_t n)
{
	struct sink	*s = arg;

	s->calls++;
	if (s->fail)
		return -1;
	if (s->len + n < sizeof(s->buf)) {
		memcpy(s->buf + s->len, p, n);
		s->len += n;
	}
	return 0;
}

static void
test_output(void)
{
	struct sbx_run	 r;
	struct sink	 s;

	/* sink_write replaces write(2) to out_fd/err_fd. */
	sbx_run_init(&r);
	memset(&s, 0, sizeof(s));
	r.sink_write = sink_fn;
	r.sink_arg = &s;
	ok(run_sh(&r, "echo ready >&3; echo to-sink; echo 'exit 0' >&3") == 0
	    && s.calls >= 1 && s.len == 8 && memcmp(s.buf, "to-sink\n", 8) == 0
	    && outs[0] == '\0', "sink_write: output goes to the hook, not "
	    "out_fd");
	sbx_run_release(&r);

	/* The sink's reader went away: the command gets SIGPIPE. */
	sbx_run_init(&r);
	memset(&s, 0, sizeof(s));
	s.fail = 1;
	r.sink_write = sink_fn;
	r.sink_arg = &s;
	ok(run_sh(&r, "echo ready >&3; while :; do echo line; done") == 0 &&
	    s.calls == 1 && r.signo == SIGPIPE &&
	    r.exit_code == 128 + SIGPIPE,
	    "a failing sink: read no more, the command dies of SIGPIPE");
	sbx_run_release(&r);

	/* Capture is bounded: head and tail, the rest counted. */
	sbx_run_init(&r);
	r.max_output = 16;
	ok(run_sh(&r, "echo ready >&3; i=0; while [ $i -lt 20 ]; do "
	    "echo line$i; i=$((i+1)); done; echo 'exit 0' >&3") == 0 &&
	    sbx_capture_truncated(&r.out) && r.out.total == 130 &&
	    strncmp(caps, "line0\nli", 8) == 0 &&
	    strstr(caps, "bytes omitted]") != NULL &&
	    strlen(outs) == 130, "max_output 16: capture truncated, "
	    "relay complete");
	sbx_run_release(&r);
}

static void
test_deadlines(void)
{
	struct sbx_run	 r;
	char		 sig;
	int		 p[2];

	/* Idle: T on the control pipe; the command ends on it. */
	sbx_run_init(&r);
	r.idle_timeout_ms = 100;
	ok(run_sh(&r, "echo ready >&3; c=$(head -c1 <&4); echo \"ctl $c\" "
	    ">&2; echo 'exit 0' >&3") == 0 && r.killed_by != NULL &&
	    strcmp(r.killed_by, "timeout") == 0 && r.limit != NULL &&
	    strcmp(r.limit, "idle") == 0 && strcmp(errs, "ctl T\n") == 0,
	    "idle timeout: killed_by timeout, limit idle, T sent");
	sbx_run_release(&r);

	/* Wall time, even while output keeps coming. */
	sbx_run_init(&r);
	r.wall_timeout_ms = 200;
	r.idle_timeout_ms = 60000;
	ok(run_sh(&r, "echo ready >&3; (while :; do echo tick; sleep 0.02; "
	    "done) & c=$(head -c1 <&4); kill $!; echo \"ctl $c\" >&2; "
	    "echo 'exit 0' >&3") == 0 && r.killed_by != NULL &&
	    strcmp(r.killed_by, "limit") == 0 && r.limit != NULL &&
	    strcmp(r.limit, "wall_time") == 0 &&
	    strcmp(errs, "ctl T\n") == 0,
	    "wall timeout: killed_by limit, limit wall_time, T sent");
	sbx_run_release(&r);

	/* The caller's signal: SIGTERM asks (T), SIGUSR1 forces (K). */
	sbx_run_init(&r);
	if (pipe2(p, O_CLOEXEC) == -1)
		p[0] = p[1] = -1;
	sig = SIGTERM;
	if (p[1] >= 0)
		(void)!write(p[1], &sig, 1);
	r.signal_fd = p[0];
	ok(run_sh(&r, "echo ready >&3; c=$(head -c1 <&4); echo \"ctl $c\" "
	    ">&2; echo 'exit 0' >&3") == 0 && r.killed_by != NULL &&
	    strcmp(r.killed_by, "user") == 0 && r.user_signal == SIGTERM &&
	    strcmp(errs, "ctl T\n") == 0,
	    "SIGTERM from the caller: killed_by user, T sent");
	sbx_run_release(&r);

	sbx_run_init(&r);
	sig = SIGUSR1;
	if (p[1] >= 0)
		(void)!write(p[1], &sig, 1);
	killed_hooks = 0;
	r.kill_hook = kill_hook;
	r.signal_fd = p[0];
	ok(run_sh(&r, "exec sleep 1000") == 0 && r.killed_by != NULL &&
	    strcmp(r.killed_by, "user") == 0 && r.user_signal == SIGUSR1 &&
	    killed_hooks == 1, "SIGUSR1: killed at once, kill_hook called");
	sbx_run_release(&r);
	if (p[0] >= 0) {
		close(p[0]);
		close(p[1]);
	}

	/* T ignored: K and SIGKILL after the grace. */
	sbx_run_init(&r);
	r.idle_timeout_ms = 50;
	killed_hooks = 0;
	r.kill_hook = kill_hook;
	ok(run_sh(&r, "echo ready >&3; exec sleep 1000") == 0 &&
	    r.started && r.signo == SIGKILL && r.exit_code == 137 &&
	    killed_hooks == 1 && strcmp(r.killed_by, "timeout") == 0,
	    "T ignored: SIGKILL after the grace, kill_hook called");
	sbx_run_release(&r);
}

/* The hold (sbx exec --ask's question on the terminal): what the sink got,
 * and whether each write came after the asker let the output go. */
struct held_sink {
	struct sbx_buf		 b;
	volatile int		*released;
	int			 early;
};

static int
held_fn(void *arg, const void *p, size_t n)
{
	struct held_sink	*s = arg;

	if (!*s->released)
		s->early++;
	return sbx_buf_append(&s->b, p, n);
}

static int
wait_file(const char *path)
{
	int	 i;

	for (i = 0; i < 3000; i++) {
		if (access(path, F_OK) == 0)
			return 0;
		usleep(10000);
	}
	return -1;
}

static void
test_hold(void)
{
	struct sbx_run		 r;
	struct held_sink	 s;
	struct sbx_buf		 want = SBX_BUF_INIT;
	volatile int		*shared;
	char			 dir[] = "/tmp/t-run-hold.XXXXXX", script[512];
	char			 w[64], f[64], c;
	int			 sv[2], i, st, in;
	pid_t			 pid;

	shared = mmap(NULL, sizeof(int) * 2, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED || mkdtemp(dir) == NULL ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		skip("hold: no shared memory, temporary directory or socket");
		skip("hold: ...");
		skip("hold: ...");
		return;
	}
	shared[0] = shared[1] = 0;
	snprintf(w, sizeof(w), "%s/w", dir);
	snprintf(f, sizeof(f), "%s/f", dir);
	/* Held from the start; the command then writes 4 pipes' worth. */
	(void)!write(sv[1], "H", 1);
	if ((pid = fork()) == 0) {
		/* The asker: the run loop's word that nothing more goes out,
		 * the command under way; then, a moment later, did it get
		 * to the end (it must not: it blocks on the full pipe)?
		 * Then let go. */
		close(sv[0]);
		if (read(sv[1], &c, 1) != 1 || c != 'h' || wait_file(w) == -1)
			_exit(1);
		usleep(200000);
		shared[1] = access(f, F_OK) == 0;
		shared[0] = 1;
		(void)!write(sv[1], "R", 1);
		_exit(0);
	}
	sbx_run_init(&r);
	memset(&s, 0, sizeof(s));
	s.released = shared;
	r.sink_write = held_fn;
	r.sink_arg = &s;
	r.hold_fd = sv[0];
	snprintf(script, sizeof(script), "echo ready >&3; touch %s; i=0; "
	    "while [ $i -lt 4000 ]; do echo \"line $i of the output the hold "
	    "must neither lose nor let out early\"; i=$((i+1)); done; "
	    "touch %s; echo 'exit 0' >&3", w, f);
	for (i = 0; i < 4000; i++)
		sbx_buf_printf(&want, "line %d of the output the hold must "
		    "neither lose nor let out early\n", i);
	ok(run_sh(&r, script) == 0 && r.exit_code == 0 && s.early == 0 &&
	    s.b.len == want.len && memcmp(s.b.p, want.p, want.len) == 0,
	    "hold: nothing goes out until the asker lets go, then all of it, "
	    "in order");
	ok(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0 && shared[1] == 0,
	    "hold: the command waits on the full pipe (backpressure), it "
	    "is not read into memory");
	if (s.early != 0 || s.b.len != want.len)
		diag("  early writes %d, %zu bytes of %zu", s.early, s.b.len,
		    want.len);
	sbx_run_release(&r);
	close(sv[0]);
	close(sv[1]);
	sbx_buf_release(&s.b);
	sbx_buf_release(&want);

	/* The asker gone while holding: the output goes out all the same,
	 * and the run ends. */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0) {
		(void)!write(sv[1], "H", 1);
		close(sv[1]);
		sbx_run_init(&r);
		r.hold_fd = sv[0];
		ok(run_sh(&r, "echo ready >&3; echo after; echo 'exit 0' >&3")
		    == 0 && strcmp(outs, "after\n") == 0,
		    "hold: the end of the hold socket lets the output go");
		sbx_run_release(&r);
		close(sv[0]);
	} else
		skip("hold: socketpair");

	/* stdin_relay: the command's stdin is a pipe sbx feeds, not the
	 * caller's descriptor (here a file), to its end. */
	snprintf(w, sizeof(w), "%s/in", dir);
	if ((in = open(w, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600)) >= 0 &&
	    write(in, "typed\n", 6) == 6 && lseek(in, 0, SEEK_SET) == 0) {
		sbx_run_init(&r);
		r.stdin_fd = in;
		r.stdin_relay = 1;
		ok(run_sh(&r, "echo ready >&3; [ -p /dev/stdin ] && echo pipe; "
		    "cat; echo 'exit 0' >&3") == 0 &&
		    strcmp(outs, "pipe\ntyped\n") == 0,
		    "stdin_relay: the command reads a pipe, fed to the end");
		if (strcmp(outs, "pipe\ntyped\n") != 0)
			diag("  got '%s'", outs);
		sbx_run_release(&r);
	} else
		skip("stdin_relay: no file");
	if (in >= 0)
		close(in);
	unlink(w);
	unlink(f);
	snprintf(w, sizeof(w), "%s/w", dir);
	unlink(w);
	rmdir(dir);
	munmap((void *)shared, sizeof(int) * 2);
}

static void
test_drop(void)
{
	struct sbx_run	 r;

	if (geteuid() != 0) {
		skip("drop_privs: needs root");
		return;
	}
	sbx_run_init(&r);
	r.drop_privs = 1;
	r.run_uid = 65534;
	r.run_gid = 65534;
	ok(run_sh(&r, "echo ready >&3; id -u; id -g; id -G; "
	    "echo 'exit 0' >&3") == 0 && r.exit_code == 0 &&
	    strcmp(outs, "65534\n65534\n65534\n") == 0,
	    "drop_privs: bwrap runs as 65534, no other groups");
	if (strcmp(outs, "65534\n65534\n65534\n") != 0)
		diag("  got '%s'", outs);
	sbx_run_release(&r);
}

int
main(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_init();
	test_status();
	test_setup_errors();
	test_child();
	test_output();
	test_deadlines();
	test_hold();
	test_drop();
	return done_testing();
}
