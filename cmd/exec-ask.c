/*
 * exec-ask.c: in transparent `sbx exec --ask` on a terminal, sbx itself
 * answers the proxy's asks of this run (issue 20): a child process (the
 * asker) follows the proxy's asks (`sbx proxy asks --follow`'s channel),
 * and for each one of its run asks on /dev/tty
 *
 *	sbx[3fa9]: allow example.org:443 for agent alice? [o]nce/[a]lways/[d]eny
 *
 * and answers as `sbx proxy answer` does, then says what it answered.
 *
 * The sandbox writes to the same terminal, and it is the party the
 * question is about: it must not be able to draw a question of its own
 * over sbx's, nor to answer it (issue 27 §4).  So:
 *  - while a question is on the terminal the run's output is held (the
 *    run loop stops reading the sandbox's pipes: lib/sandbox/run.c,
 *    hold_fd), and the asker draws nothing before the run loop said so;
 *  - the sandbox does not hold the terminal at all: with an asker, its
 *    stdin is a pipe that sbx feeds from the terminal (stdin_relay), and
 *    sbx stops reading the terminal while it asks;
 *  - before the question, the terminal is reset (whatever the sandbox
 *    wrote earlier: an unfinished escape string, invisible or
 *    look-alike text, a scroll region, the alternate screen, a hidden
 *    cursor) and put in line mode with echo, type-ahead discarded: an
 *    answer is what was typed after the question appeared;
 *  - each question carries a tag of its own, [3fa9] above, from the
 *    CSPRNG: the decision line that follows bears the same tag, and
 *    nothing the sandbox printed before could have known it;
 *  - allow-always, which writes the name into the agent's config for
 *    good, takes the host name typed out, never one key;
 *  - the decision taken is printed, as is an ask that ended meanwhile
 *    (answered elsewhere, timed out, given up).
 * The ask's own timeout still applies when nobody types (deny).
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <termios.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "exec-ask.h"
#include "exec.h"
#include "fsutil.h"
#include "names.h"
#include "netpolicy.h"
#include "proxyclient.h"
#include "utf8.h"

/* Asks of this run waiting for their turn on the terminal: the proxy holds
 * at most 16 of an agent at a time; more are dropped here (and time out
 * there). */
#define QUEUE_MAX	64
#define LINE_MAX_ASK	256

/* Said to the terminal before each question: SBX_TERM_SANE (utf8.h), then
 * a fresh, cleared line. */
static const char	 reset_seq[] = SBX_TERM_SANE "\r\n\033[K";

struct ask {
	char		 id[17];
	char		 host[SBX_NP_HOST_MAX + 1];
	char		 agent[SBX_AGENT_MAX + 1];
	long long	 port;
};

static struct {
	const struct sbx_exec	*x;
	int			 ctl;	/* the proxy's follow connection */
	int			 tty;	/* /dev/tty */
	int			 hold;	/* the run loop's hold socket */
	char			 buf[65536];
	size_t			 len;
	struct ask		 q[QUEUE_MAX];
	size_t			 nq;
	/* The ask on the terminal: ended elsewhere meanwhile (its
	 * answer, "gone" when its request was closed). */
	const struct ask	*cur;
	int			 cur_ended;
	char			 cur_answer[16];
	struct termios		 saved;
	int			 saved_ok;
} A;

static volatile sig_atomic_t	 stop;

static void
on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* An ask of this run? */
static int
mine(const json_t *a)
{
	return str(a, "run") != NULL && str(a, "id") != NULL &&
	    strcmp(str(a, "run"), A.x->proxy_run) == 0 &&
	    strlen(str(a, "id")) < sizeof(A.q[0].id) && str(a, "host") !=
	    NULL && str(a, "agent") != NULL;
}

static void
queue_add(const json_t *a)
{
	struct ask	*q;
	size_t		 i;

	for (i = 0; i < A.nq; i++)
		if (strcmp(A.q[i].id, str(a, "id")) == 0)
			return;
	if (A.nq == QUEUE_MAX)
		return;
	q = &A.q[A.nq++];
	snprintf(q->id, sizeof(q->id), "%s", str(a, "id"));
	snprintf(q->host, sizeof(q->host), "%s", str(a, "host"));
	snprintf(q->agent, sizeof(q->agent), "%s", str(a, "agent"));
	q->port = json_integer_value(json_object_get(a, "port"));
}

/* An ask ended (answered, timed out, its request closed): out of the
 * queue, or marked when it is the one on the terminal. */
static void
queue_end(const char *id, const char *answer)
{
	size_t	 i;

	if (A.cur != NULL && strcmp(A.cur->id, id) == 0) {
		A.cur_ended = 1;
		snprintf(A.cur_answer, sizeof(A.cur_answer), "%s",
		    answer != NULL ? answer : "gone");
		return;
	}
	for (i = 0; i < A.nq; i++)
		if (&A.q[i] != A.cur && strcmp(A.q[i].id, id) == 0) {
			memmove(&A.q[i], &A.q[i + 1], (A.nq - i - 1) *
			    sizeof(A.q[0]));
			A.nq--;
			return;
		}
}

static void
take_event(const json_t *o)
{
	const char	*ev = str(o, "event");

	if (!json_is_object(o) || ev == NULL || !mine(o))
		return;
	if (strcmp(ev, "ask") == 0)
		queue_add(o);
	else if (strcmp(ev, "answered") == 0 || strcmp(ev, "gone") == 0)
		queue_end(str(o, "id"), strcmp(ev, "gone") == 0 ? "gone" :
		    str(o, "answer"));
}

/* The proxy's lines that came: -1 when it is gone. */
static int
ctl_read(void)
{
	json_t	*o;
	char	*nl;
	ssize_t	 r;

	r = read(A.ctl, A.buf + A.len, sizeof(A.buf) - 1 - A.len);
	if (r == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0)
		return -1;
	A.len += (size_t)r;
	A.buf[A.len] = '\0';
	while ((nl = strchr(A.buf, '\n')) != NULL) {
		*nl = '\0';
		o = json_loads(A.buf, 0, NULL);
		take_event(o);
		json_decref(o);
		A.len -= (size_t)(nl + 1 - A.buf);
		memmove(A.buf, nl + 1, A.len + 1);
	}
	if (A.len == sizeof(A.buf) - 1)
		A.len = 0;	/* a line that long is no ask */
	return 0;
}

/*
 * Follow the proxy until fd is readable (fd -1: until an ask is queued):
 * 1.  0 when the ask on the terminal ended meanwhile, -1 when the asker
 * must go (a signal, the proxy gone).
 */
static int
wait_for(int fd)
{
	struct pollfd	 p[2];

	for (;;) {
		if (stop)
			return -1;
		if (A.cur != NULL && A.cur_ended)
			return 0;
		if (fd < 0 && A.nq > 0)
			return 1;
		p[0].fd = A.ctl;
		p[0].events = POLLIN;
		p[1].fd = fd;
		p[1].events = POLLIN;
		if (poll(p, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (fd >= 0 && p[1].revents)
			return 1;
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    ctl_read() == -1)
			return -1;
	}
}

static void
say(const char *s, size_t n)
{
	(void)sbx_fs_write_all(A.tty, s, n);
}

static void
sayf(struct sbx_buf *b)
{
	say(b->p, b->len);
	sbx_buf_reset(b);
}

/* A name from the proxy, as text that cannot drive the terminal (the
 * proxy checked it; this does not rely on it). */
static void
put_safe(struct sbx_buf *b, const char *s)
{
	(void)sbx_utf8_escape_line(b, s, strlen(s));
}

/*
 * One line typed on the terminal, without its newline: 1, or 0 when the
 * ask ended meanwhile, -1 at the end of the terminal or when the asker
 * must go.  What goes beyond the line's room is read and dropped.
 */
static int
read_answer(char *line, size_t size)
{
	size_t	 n = 0;
	ssize_t	 r;
	char	 c[64];
	int	 w;

	for (;;) {
		if ((w = wait_for(A.tty)) != 1)
			return w;
		r = read(A.tty, c, sizeof(c));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		for (ssize_t i = 0; i < r; i++) {
			if (c[i] == '\n' || c[i] == '\r') {
				line[n] = '\0';
				return 1;
			}
			if (n + 1 < size)
				line[n++] = c[i];
		}
	}
}

/* The terminal as a person answers on it: line mode with echo and the
 * signal keys, whatever it was left in; type-ahead discarded (TCSAFLUSH). */
static void
tty_line_mode(void)
{
	struct termios	 t;

	A.saved_ok = tcgetattr(A.tty, &A.saved) == 0;
	if (!A.saved_ok)
		return;
	t = A.saved;
	t.c_lflag |= ICANON | ECHO | ECHOE | ECHOK | ISIG;
	t.c_iflag |= ICRNL;
	t.c_iflag &= ~(tcflag_t)(INLCR | IGNCR);
	t.c_oflag |= OPOST | ONLCR;
	(void)tcsetattr(A.tty, TCSAFLUSH, &t);
}

static void
tty_restore(void)
{
	if (A.saved_ok)
		(void)tcsetattr(A.tty, TCSADRAIN, &A.saved);
	A.saved_ok = 0;
}

/* Send the answer: 0, or -1 with why it could not be given in e. */
static int
answer(const char *id, const char *ans, struct sbx_error *e)
{
	json_t	*r;
	int	 ctl;

	if ((ctl = sbx_proxyclient_connect(A.x->root.fd, e)) == -1)
		return -1;
	r = sbx_proxyclient_call(ctl, json_pack("{s:s,s:s,s:s}", "op",
	    "answer", "id", id, "answer", ans), -1, 5000, e);
	close(ctl);
	if (r == NULL)
		return -1;
	json_decref(r);
	return 0;
}

static const char *
said(const char *ans)
{
	return strcmp(ans, "allow-once") == 0 ? "allowed once" :
	    strcmp(ans, "allow-always") == 0 ? "allowed always (now in the "
	    "agent's allowed_domains)" : strcmp(ans, "timeout") == 0 ?
	    "nobody answered in time: denied" : strcmp(ans, "gone") == 0 ?
	    "the request was given up" : strncmp(ans, "deny", 4) == 0 ?
	    "denied" : "answered";
}

/* The question, the answer, the decision; with the output held. */
static void
ask_person(const struct ask *a)
{
	struct sbx_buf		 b = SBX_BUF_INIT, head = SBX_BUF_INIT;
	struct sbx_error	 e;
	unsigned char		 rnd[2];
	const char		*ans = "deny";
	char			 line[LINE_MAX_ASK];
	int			 r;

	memset(&e, 0, sizeof(e));
	if (getentropy(rnd, sizeof(rnd)) == -1)
		rnd[0] = rnd[1] = 0;
	sbx_buf_printf(&head, "sbx[%02x%02x]: ", rnd[0], rnd[1]);
	tty_line_mode();
	sbx_buf_append(&b, reset_seq, sizeof(reset_seq) - 1);
	sbx_buf_append(&b, head.p, head.len);
	sbx_buf_printf(&b, "allow ");
	put_safe(&b, a->host);
	sbx_buf_printf(&b, ":%lld for agent ", a->port);
	put_safe(&b, a->agent);
	sbx_buf_printf(&b, "? [o]nce/[a]lways/[d]eny ");
	sayf(&b);
	r = read_answer(line, sizeof(line));
	if (r == 1 && (line[0] == 'a' || line[0] == 'A')) {
		/* Into the agent's config for good: the name typed out,
		 * not a key that a stray keystroke could be. */
		sbx_buf_append(&b, head.p, head.len);
		sbx_buf_printf(&b, "to allow it always, type the host name "
		    "(");
		put_safe(&b, a->host);
		sbx_buf_printf(&b, "): ");
		sayf(&b);
		r = read_answer(line, sizeof(line));
		if (r == 1 && strcasecmp(line, a->host) == 0)
			ans = "allow-always";
		else if (r == 1) {
			sbx_buf_append(&b, head.p, head.len);
			sbx_buf_printf(&b, "that is not the host name\r\n");
			sayf(&b);
		}
	} else if (r == 1 && (line[0] == 'o' || line[0] == 'O'))
		ans = "allow-once";
	sbx_buf_append(&b, head.p, head.len);
	put_safe(&b, a->host);
	sbx_buf_printf(&b, ":%lld for agent ", a->port);
	put_safe(&b, a->agent);
	if (r == 0) {
		/* Ended while on the terminal: answered elsewhere (sbx
		 * proxy answer), timed out, or its request closed. */
		sbx_buf_printf(&b, ": %s%s\r\n", strcmp(A.cur_answer,
		    "timeout") == 0 || strcmp(A.cur_answer, "gone") == 0 ? "" :
		    "answered elsewhere: ", said(A.cur_answer));
		say("\r\n", 2);
	} else if (r == -1 && stop) {
		sbx_buf_printf(&b, ": not answered\r\n");
		say("\r\n", 2);
	} else if (answer(a->id, ans, &e) == -1) {
		sbx_buf_printf(&b, ": not answered: ");
		put_safe(&b, e.message);
		sbx_buf_printf(&b, "\r\n");
	} else
		sbx_buf_printf(&b, ": %s\r\n", said(ans));
	sayf(&b);
	tty_restore();
	sbx_buf_release(&b);
	sbx_buf_release(&head);
}

/*
 * One ask: hold the run's output, and once the run loop said nothing more
 * will be written, ask; then let the output go.  A person who is not at
 * the terminal (sbx in the background) is not asked: the ask waits for
 * another answer, or its timeout.  -1 when the asker must go.
 */
static int
ask_one(const struct ask *a)
{
	char	 c = 0;
	int	 r;

	A.cur = a;
	A.cur_ended = 0;
	if (send(A.hold, "H", 1, MSG_NOSIGNAL) != 1)
		return -1;
	do {
		if ((r = wait_for(A.hold)) == 1) {
			if (read(A.hold, &c, 1) != 1)
				return -1;
		}
	} while (r == 1 && c != 'h');
	if (r == 1 && tcgetpgrp(A.tty) == getpgrp())
		ask_person(a);
	A.cur = NULL;
	if (r == -1 || send(A.hold, "R", 1, MSG_NOSIGNAL) != 1)
		return -1;
	return stop ? -1 : 0;
}

static void __attribute__((noreturn))
follow(void)
{
	struct sbx_error	 e;
	struct ask		 a;
	json_t			*o, *v;
	size_t			 i;

	memset(&e, 0, sizeof(e));
	if ((A.ctl = sbx_proxyclient_connect(A.x->root.fd, &e)) == -1)
		_exit(0);
	/* The asks already pending when we came (the command may have
	 * been quicker), then each new one. */
	o = sbx_proxyclient_call(A.ctl, json_pack("{s:s,s:b}", "op", "asks",
	    "follow", 1), -1, 5000, &e);
	json_array_foreach (json_object_get(o, "asks"), i, v)
		if (mine(v))
			queue_add(v);
	json_decref(o);
	for (;;) {
		while (A.nq > 0) {
			/* A copy: the queue moves while it is asked. */
			a = A.q[0];
			memmove(&A.q[0], &A.q[1], (A.nq - 1) *
			    sizeof(A.q[0]));
			A.nq--;
			if (ask_one(&a) == -1) {
				tty_restore();
				_exit(0);
			}
		}
		if (wait_for(-1) == -1)
			_exit(0);
	}
}

pid_t
exec_ask_start(struct sbx_exec *x)
{
	struct sigaction	 sa;
	int			 sv[2], keep[3];
	pid_t			 pid, parent = getpid();

	if (x->req == NULL || !x->req->ask || x->req->tty ||
	    x->req->capture || x->req->background || x->proxy_run[0] ==
	    '\0' || !isatty(0) || !isatty(2) || tcgetpgrp(0) != getpgrp())
		return -1;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid != 0) {
		close(sv[1]);
		x->ask_hold_fd = sv[0];
		return pid;
	}
	close(sv[0]);
	/* Gone with sbx exec, whatever ends it. */
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	/* Never stopped by job control: a read from the background fails
	 * instead, and the output is let go. */
	signal(SIGTTIN, SIG_IGN);
	signal(SIGTTOU, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	A.x = x;
	A.hold = sv[1];
	if ((A.tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1)
		_exit(0);
	/* Nothing of the run (its proxy and bridge connections, whose end
	 * ends their sessions) stays open here. */
	keep[0] = A.tty;
	keep[1] = A.hold;
	keep[2] = x->root.fd;
	sbx_fs_close_from(3, keep, 3);
	follow();
}

void
exec_ask_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	(void)kill(pid, SIGTERM);
	(void)waitpid(pid, NULL, 0);
}
