/*
 * mcp.c: the MCP server of sbx mcp (mcp.h).
 *
 * One thread, one poll(2) loop over the client's input, a signalfd for
 * SIGCHLD and the pipes of the running tool calls.  Every message from
 * the client is untrusted: a line longer than the cap is refused before
 * it is parsed, the parser rejects duplicate keys, and a malformed
 * message gets the JSON-RPC error the specification names (-32700 parse
 * error, -32600 invalid request, -32601 unknown method, -32602 invalid
 * params) and never ends the session.  A tool's own failure is a tool
 * result with isError, carrying the sbx envelope, so that a model can
 * read it and repair its call.
 *
 * Each tool call is a child program in a process group of its own: a
 * cancellation (notifications/cancelled), a signal to the server, or the
 * client going away (its end of our output closed) sends SIGTERM to that
 * group (sbx exec then tears its sandbox down and
 * removes its cgroup), and SIGKILL when it is still there KILL_GRACE_MS
 * later.  The number of calls at once and started per minute is bounded
 * (max_runs, per_minute): a call over either is a `rejected` tool error
 * naming the limit, not a queue that a runaway client could grow.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "capture.h"
#include "envelope.h"
#include "fsutil.h"
#include "jschema.h"
#include "mcp.h"
#include "mcptools.h"
#include "time.h"
#include "tooldefs.h"

const char *const sbx_mcp_revisions[] = { "2025-11-25", "2025-06-18",
	"2025-03-26", "2024-11-05", NULL };

#define OUTPUT_CAP     (128u << 10) /* stdout, stderr kept per run */
#define KILL_GRACE_MS  3000
#define PROGRESS_MS    1000
#define RATE_WINDOW_MS 60000
#define PLUGIN_LIST_MS 10000

/* JSON-RPC 2.0 error codes. */
#define E_PARSE	   -32700
#define E_REQUEST  -32600
#define E_METHOD   -32601
#define E_PARAMS   -32602
#define E_INTERNAL -32603

struct run {
	int		   used;
	json_t		  *id; /* the request's id */
	json_t		  *ptoken; /* progressToken, or NULL */
	json_t		  *args; /* the call's arguments */
	char		   name[129];
	pid_t		   pid;
	int		   fd[4]; /* stdin, stdout, stderr, env */
	struct sbx_buf	   in;
	size_t		   in_off;
	struct sbx_capture cap[2]; /* the command's stdout, stderr */
	struct sbx_buf	   env; /* the envelope's bytes */
	int		   envelope; /* SBX_MCP_ENV_* */
	int		   background;
	int		   exited, status, cancelled, overflow;
	long long	   started, next_progress, kill_at;
};

struct srv {
	const struct sbx_mcp_conf *c;
	struct sbx_mcp_who	   who;
	struct run		   run[SBX_MCP_RUNS_MAX];
	unsigned		   nrun;
	long long		  *starts; /* ring of per_minute start times */
	unsigned		   nstarts, starts_pos;
	struct sbx_buf		   inbuf;
	int			   discarding, eof, gone, stop, sigfd;
	int			   structured; /* revision >= 2025-06-18 */
	int			   loglevel; /* index in levels[] */
	json_t			  *tools; /* tools/list, once built */
	json_t			  *plugins; /* name -> `sbx tools` entry */
	struct sbx_strv		   jobs; /* started in this session */
	/* The warm session of shell_run (sbx session): 0 not yet, 1 up
	 * (its name in session), -1 it could not start (one-shot runs). */
	int			   wstate;
	char			   session[64];
};

static const char *const levels[] = { "debug", "info", "notice", "warning",
	"error", "critical", "alert", "emergency", NULL };

/* One message to the client, one line (steals msg).  A write that fails
 * means the client is gone: the session ends as at EOF. */
static void
send_msg(struct srv *s, json_t *msg)
{
	char *p;

	if (msg == NULL)
		return;
	if (!s->gone && (p = json_dumps(msg, JSON_COMPACT)) != NULL) {
		if (sbx_fs_write_all(s->c->out_fd, p, strlen(p)) == -1 ||
		    sbx_fs_write_all(s->c->out_fd, "\n", 1) == -1)
			s->gone = 1;
		free(p);
	}
	json_decref(msg);
}

static void send_error(struct srv *s, const json_t *id, int code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
send_error(struct srv *s, const json_t *id, int code, const char *fmt, ...)
{
	char	m[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	send_msg(s,
	    json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id",
		id != NULL ? id : json_null(), "error", "code", code, "message",
		m));
}

static void
send_result(struct srv *s, const json_t *id, json_t *result)
{
	if (result == NULL) {
		send_error(s, id, E_INTERNAL, "out of memory");
		return;
	}
	send_msg(s,
	    json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id, "result",
		result));
}

/* notifications/message, when the client asked for that level. */
static void log_msg(struct srv *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void
log_msg(struct srv *s, int level, const char *fmt, ...)
{
	char	m[512];
	va_list ap;

	if (level < s->loglevel)
		return;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	send_msg(s,
	    json_pack("{s:s,s:s,s:{s:s,s:s,s:s}}", "jsonrpc", "2.0", "method",
		"notifications/message", "params", "level", levels[level],
		"logger", "sbx", "data", m));
}

/* ---- children ---------------------------------------------------- */

/*
 * Run `sbx-session ARGS...` to its end (its stdout into out, at most
 * 64 KiB): the exit status, or -1.  Synchronous: starting a session takes
 * one sandbox's set-up, once per client.
 */
static int
session_prog(struct srv *s, const char *const *args, struct sbx_buf *out)
{
	struct sbx_strv	 v = { 0 };
	sigset_t	 none;
	char		 b[4096];
	int		 p[2], st, dn;
	ssize_t		 n;
	pid_t		 pid;
	size_t		 i;

	if (sbx_strv_pushf(&v, "%s/sbx-session", s->c->libexec) == -1)
		return -1;
	for (i = 0; args[i] != NULL; i++)
		if (sbx_strv_push(&v, args[i]) == -1)
			goto fail;
	if ((s->c->home != NULL && (sbx_strv_push(&v, "--home") == -1 ||
	    sbx_strv_push(&v, s->c->home) == -1)) ||
	    pipe2(p, O_CLOEXEC) == -1)
		goto fail;
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		goto fail;
	}
	if (pid == 0) {
		/* The server's mask (signals through its signalfd) is not
		 * the session's supervisor's. */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(p[1], 1);
		if ((dn = open("/dev/null", O_RDWR)) >= 0) {
			dup2(dn, 0);
			dup2(dn, 2);
		}
		execv(v.v[0], v.v);
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], b, sizeof(b))) > 0 || (n == -1 &&
	    errno == EINTR))
		if (n > 0 && out->len < 65536)
			(void)sbx_buf_append(out, b, (size_t)n);
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	sbx_strv_release(&v);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
fail:
	sbx_strv_release(&v);
	return -1;
}

/* The client's warm session, on its first shell_run.  When it cannot
 * start, the calls run one-shot, as with --no-session: each in a
 * sandbox of its own, the same isolation. */
static void
warm_start(struct srv *s)
{
	/* The idle timeout is a safety net for a server killed with -9
	 * (no stop then): the session ends on its own. */
	const char *const args[] = { "start", "--agent", s->c->agent,
		"--idle-timeout", "900", "--json", "-q", NULL };
	struct sbx_buf	 out = SBX_BUF_INIT;
	json_t		*env;
	const char	*name;

	s->wstate = -1;
	if (s->c->no_session)
		return;
	if (session_prog(s, args, &out) == 0 && (env = json_loadb(out.p,
	    out.len, 0, NULL)) != NULL) {
		name = json_string_value(json_object_get(json_object_get(env,
		    "result"), "name"));
		if (name != NULL && strlen(name) < sizeof(s->session)) {
			snprintf(s->session, sizeof(s->session), "%s", name);
			s->who.session = s->session;
			s->wstate = 1;
		}
		json_decref(env);
	}
	if (s->wstate != 1)
		log_msg(s, 4, "no warm session (shell_run calls run one-shot)");
	sbx_buf_release(&out);
}

/* The client is done: so is its session. */
static void
warm_stop(struct srv *s)
{
	const char *const args[] = { "stop", s->session, "-q", NULL };
	struct sbx_buf	 out = SBX_BUF_INIT;

	if (s->wstate == 1)
		(void)session_prog(s, args, &out);
	s->wstate = -1;
	s->who.session = NULL;
	sbx_buf_release(&out);
}

static void
run_free(struct srv *s, struct run *r)
{
	int i;

	for (i = 0; i < 4; i++)
		if (r->fd[i] >= 0)
			close(r->fd[i]);
	json_decref(r->id);
	json_decref(r->ptoken);
	json_decref(r->args);
	sbx_buf_release(&r->in);
	sbx_buf_release(&r->env);
	sbx_capture_release(&r->cap[0]);
	sbx_capture_release(&r->cap[1]);
	memset(r, 0, sizeof(*r));
	s->nrun--;
}

/* The child side of a spawn: never returns. */
static void
child(const struct sbx_mcp_spawn *sp, int p[4][2])
{
	sigset_t	 all;
	int		 i, keep[1] = { 3 };
	static const int to[4] = { 0, 1, 2, 3 };

	/* The server blocks SIGCHLD (for its signalfd) and ignores SIGPIPE:
	 * both survive exec, and the programs expect neither. */
	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	/* A group of its own: a cancellation signals the whole group. */
	setpgid(0, 0);
	/* The envelope fd must not be mistaken for --json by a client's
	 * SBX_JSON=1 (sbx exec refuses the two together). */
	unsetenv("SBX_JSON");
	for (i = 0; i < 4; i++) {
		if (p[i][0] < 0)
			continue;
		if (p[i][i == 0 ? 0 : 1] == to[i])
			fcntl(to[i], F_SETFD, 0);
		else if (dup2(p[i][i == 0 ? 0 : 1], to[i]) == -1)
			_exit(126);
	}
	sbx_fs_close_from(3, keep, sp->envelope == SBX_MCP_ENV_FD ? 1 : 0);
	execv(sp->argv.v[0], sp->argv.v);
	_exit(127);
}

static int
spawn(struct run *r, struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	int p[4][2], i, n = sp->envelope == SBX_MCP_ENV_FD ? 4 : 3;

	for (i = 0; i < 4; i++)
		p[i][0] = p[i][1] = -1;
	for (i = 0; i < n; i++)
		if (pipe2(p[i], O_CLOEXEC) == -1) {
			sbx_error_sys(e, "pipe", "cannot make a pipe");
			goto fail;
		}
	if ((r->pid = fork()) == -1) {
		sbx_error_sys(e, "fork", "cannot start a process");
		goto fail;
	}
	if (r->pid == 0)
		child(sp, p);
	/* Both sides set the group: a signal sent before the child ran
	 * setpgid still reaches it. */
	(void)setpgid(r->pid, r->pid);
	for (i = 0; i < 4; i++) {
		r->fd[i] = p[i][i == 0 ? 1 : 0];
		if (p[i][i == 0 ? 0 : 1] >= 0)
			close(p[i][i == 0 ? 0 : 1]);
		if (r->fd[i] >= 0)
			fcntl(r->fd[i], F_SETFL, O_NONBLOCK);
	}
	r->in = sp->input;
	sp->input = (struct sbx_buf)SBX_BUF_INIT;
	r->envelope = sp->envelope;
	r->background = sp->background;
	return 0;
fail:
	for (i = 0; i < 4; i++) {
		if (p[i][0] >= 0)
			close(p[i][0]);
		if (p[i][1] >= 0)
			close(p[i][1]);
	}
	return -1;
}

/* What a readable pipe holds: stdout, stderr, or the envelope. */
static void
run_read(struct run *r, int i)
{
	char	b[16384];
	ssize_t n;

	while ((n = read(r->fd[i], b, sizeof(b))) > 0) {
		if ((i == 3 || (i == 1 && r->envelope == SBX_MCP_ENV_STDOUT))) {
			if (r->env.len + (size_t)n > SBX_ENVELOPE_MAX)
				r->overflow = 1;
			else
				sbx_buf_append(&r->env, b, (size_t)n);
		} else
			sbx_capture_add(&r->cap[i - 1], b, (size_t)n);
	}
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR)) {
		close(r->fd[i]);
		r->fd[i] = -1;
	}
}

static void
run_write(struct run *r)
{
	ssize_t n;

	while (r->in_off < r->in.len) {
		n = write(r->fd[0], r->in.p + r->in_off, r->in.len - r->in_off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0)
			break;
		r->in_off += (size_t)n;
	}
	/* All written, or the child closed its stdin: EOF for it. */
	close(r->fd[0]);
	r->fd[0] = -1;
}

/* The last line of the envelope bytes that parses as an object. */
static json_t *
envelope_of(struct run *r)
{
	struct sbx_error e;
	char		*p, *end, *nl;

	if (r->overflow || r->env.len == 0)
		return NULL;
	p = r->env.p;
	end = p + r->env.len;
	while (end > p && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	for (nl = end; nl > p && nl[-1] != '\n'; nl--)
		;
	return sbx_json_parse(nl, (size_t)(end - nl), SBX_ENVELOPE_MAX, &e);
}

static void
run_finish(struct srv *s, struct run *r)
{
	struct sbx_mcp_done d;
	struct sbx_buf	    o = SBX_BUF_INIT, er = SBX_BUF_INIT;
	json_t		   *env, *res;
	int		    i;

	for (i = 1; i < 4; i++)
		if (r->fd[i] >= 0)
			run_read(r, i);
	env = envelope_of(r);
	if (env != NULL && r->background &&
	    json_is_true(json_object_get(env, "ok")) &&
	    json_is_string(
		json_object_get(json_object_get(env, "result"), "job")))
		sbx_strv_push(&s->jobs,
		    json_string_value(json_object_get(
			json_object_get(env, "result"), "job")));
	if (!r->cancelled) {
		sbx_capture_render(&r->cap[0], &o);
		sbx_capture_render(&r->cap[1], &er);
		memset(&d, 0, sizeof(d));
		d.name = r->name;
		d.envelope = env;
		d.out = r->envelope == SBX_MCP_ENV_FD ? (o.p ? o.p : "") : NULL;
		d.err = er.p;
		d.status = r->status;
		d.structured = s->structured;
		d.agent = s->c->agent;
		d.args = r->args;
		res = sbx_mcp_tool_result(&d);
		send_result(s, r->id, res);
	}
	json_decref(env);
	sbx_buf_release(&o);
	sbx_buf_release(&er);
	run_free(s, r);
}

static void
run_kill(struct run *r, long long now)
{
	if (r->exited)
		return;
	(void)kill(-r->pid, SIGTERM);
	if (r->kill_at == 0)
		r->kill_at = now + KILL_GRACE_MS;
}

static void
reap(struct srv *s)
{
	struct signalfd_siginfo si;
	pid_t			pid;
	int			st, i;

	while (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
		/* Told to stop (the client ending its child, a terminal's
		 * ^C): the session ends now, its runs cancelled. */
		if (si.ssi_signo != SIGCHLD)
			s->stop = 1;
	while ((pid = waitpid(-1, &st, WNOHANG)) > 0)
		for (i = 0; i < SBX_MCP_RUNS_MAX; i++)
			if (s->run[i].used && s->run[i].pid == pid) {
				s->run[i].exited = 1;
				s->run[i].status = st;
			}
}

/* ---- tools ------------------------------------------------------- */

/*
 * The plugin tools of `sbx plugin tools --agent A --json` (`sbx tools`):
 * the entries whose name starts with "plugin." or that name a plugin.  A missing program
 * or a failure leaves the built-in tools alone (logged).
 */
static void
load_plugins(struct srv *s)
{
	struct sbx_mcp_spawn sp = { SBX_STRV_INIT, SBX_BUF_INIT, 0, 0, 0 };
	struct sbx_error     e;
	struct run	     r;
	json_t		    *env, *t;
	struct pollfd	     pf;
	const char	    *name;
	long long	     end;
	size_t		     i;
	int		     st;

	s->plugins = json_object();
	if (sbx_strv_pushf(&sp.argv, "%s/sbx-plugin", s->c->libexec) == -1 ||
	    sbx_strv_push(&sp.argv, "tools") == -1 ||
	    sbx_strv_push(&sp.argv, "--agent") == -1 ||
	    sbx_strv_push(&sp.argv, s->c->agent) == -1 ||
	    sbx_strv_push(&sp.argv, "--json") == -1 ||
	    (s->c->home != NULL &&
		(sbx_strv_push(&sp.argv, "--home") == -1 ||
		    sbx_strv_push(&sp.argv, s->c->home) == -1)))
		goto out;
	if (access(sp.argv.v[0], X_OK) != 0)
		goto out;
	memset(&r, 0, sizeof(r));
	sp.envelope = SBX_MCP_ENV_STDOUT;
	sbx_capture_init(&r.cap[0], 0, 0);
	sbx_capture_init(&r.cap[1], 4096, 1);
	if (spawn(&r, &sp, &e) == -1) {
		log_msg(s, 3, "plugin tools: %s", e.message);
		goto out;
	}
	if (r.fd[0] >= 0)
		close(r.fd[0]);
	end = sbx_now_ms() + PLUGIN_LIST_MS;
	while ((r.fd[1] >= 0 || r.fd[2] >= 0) && sbx_now_ms() < end) {
		pf.fd = r.fd[1] >= 0 ? r.fd[1] : r.fd[2];
		pf.events = POLLIN;
		if (poll(&pf, 1, 200) > 0)
			run_read(&r, r.fd[1] >= 0 ? 1 : 2);
	}
	(void)kill(-r.pid, SIGKILL);
	while (waitpid(r.pid, &st, 0) == -1 && errno == EINTR)
		;
	if ((env = envelope_of(&r)) == NULL ||
	    !json_is_true(json_object_get(env, "ok")))
		log_msg(s, 3, "plugin tools: sbx tools gave no list");
	/* Only names every client takes, once each: one bad name would
	 * cost the client the whole list (sbx tools makes none; this is
	 * the last check before a client sees them). */
	json_array_foreach (
	    json_object_get(json_object_get(env, "result"), "tools"), i, t) {
		name = json_string_value(json_object_get(t, "name"));
		if (name == NULL || json_object_get(t, "plugin") == NULL)
			continue;
		if (!sbx_tooldef_name_valid(name) ||
		    sbx_tooldef_find(name) != NULL ||
		    json_object_get(s->plugins, name) != NULL)
			log_msg(s, 3, "plugin tools: %.80s left out: not a "
			    "name clients take, or taken", name);
		else
			json_object_set(s->plugins, name, t);
	}
	json_decref(env);
	for (i = 0; i < 4; i++)
		if (r.fd[i] >= 0)
			close(r.fd[i]);
	sbx_buf_release(&r.env);
	sbx_capture_release(&r.cap[1]);
out:
	sbx_mcp_spawn_release(&sp);
}

/* The MCP tool object of a plugin entry. */
static json_t *
plugin_tool(const char *name, const json_t *t)
{
	json_t	   *in = json_object_get(t, "inputSchema");
	const char *id = json_string_value(json_object_get(t, "id"));

	if (in == NULL)
		in = json_object_get(t, "input_schema");
	in = json_is_object(in) ? json_deep_copy(in) : NULL;
	/* 2020-12 is MCP's default dialect (2025-11-25); a client whose
	 * validator knows only draft-07 would fail on the keyword alone. */
	if (in != NULL)
		json_object_del(in, "$schema");
	/* The id people know (plugin.ID.TOOL) is the title: the name is
	 * only what every client takes. */
	return json_pack("{s:s,s:s,s:s,s:o,s:{s:s,s:b,s:b,s:b}}", "name", name,
	    "title", id != NULL ? id : name, "description",
	    json_string_value(json_object_get(t, "description")) ?
		json_string_value(json_object_get(t, "description")) :
		"A plugin tool.",
	    "inputSchema",
	    in != NULL ?
		in :
		json_pack("{s:s,s:{}}", "type", "object", "properties"),
	    "annotations", "title", id != NULL ? id : name, "readOnlyHint", 0,
	    "destructiveHint", 1, "openWorldHint", 1);
}

static json_t *
tools_list(struct srv *s)
{
	const struct sbx_tooldef *d;
	json_t			 *t, *v;
	const char		 *k;
	size_t			  i;

	if (s->tools != NULL)
		return json_incref(s->tools);
	if ((s->tools = json_array()) == NULL)
		return NULL;
	for (i = 0; (d = sbx_tooldef_at(i)) != NULL; i++) {
		if ((t = sbx_tooldef_json(d)) == NULL)
			continue;
		/* Older revisions know neither outputSchema nor title. */
		if (!s->structured) {
			json_object_del(t, "outputSchema");
			json_object_del(t, "title");
		}
		json_array_append_new(s->tools, t);
	}
	load_plugins(s);
	json_object_foreach (s->plugins, k, v) {
		if ((t = plugin_tool(k, v)) == NULL)
			continue;
		if (!s->structured)
			json_object_del(t, "title");
		json_array_append_new(s->tools, t);
	}
	return json_incref(s->tools);
}

/* A tool error result (not a JSON-RPC error): the model reads it. */
static void
tool_refused(struct srv *s, const json_t *id, const char *tool,
    const struct sbx_error *e, json_t *extra)
{
	send_result(s, id, sbx_mcp_tool_error(tool, e, extra, s->structured));
}

/* Is there room for one more call (concurrency, rate)?  Records its
 * start when there is. */
static int
admit(struct srv *s, const json_t *id, const char *name)
{
	struct sbx_error e;
	long long	 now = sbx_now_ms();
	unsigned	 n = s->c->per_minute;

	if (s->nrun >= s->c->max_runs) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "concurrency_limit",
		    "agent %s already has %u tool calls running, the most "
		    "allowed at once",
		    s->c->agent, s->c->max_runs);
		sbx_error_hint(&e,
		    "wait for a call to finish, or use "
		    "sandbox_process to run long commands in the background");
		tool_refused(s, id, name, &e,
		    json_pack("{s:I}", "limit", (json_int_t)s->c->max_runs));
		log_msg(s, 3, "%s", e.message);
		return 0;
	}
	if (n > 0 && s->nstarts == n &&
	    now - s->starts[s->starts_pos] < RATE_WINDOW_MS) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "rate_limit",
		    "agent %s has started %u tool calls in the last minute, "
		    "the most allowed",
		    s->c->agent, n);
		e.retryable = 1;
		tool_refused(s, id, name, &e,
		    json_pack("{s:I}", "limit", (json_int_t)n));
		log_msg(s, 3, "%s", e.message);
		return 0;
	}
	if (n > 0) {
		s->starts[s->starts_pos] = now;
		s->starts_pos = (s->starts_pos + 1) % n;
		if (s->nstarts < n)
			s->nstarts++;
	}
	return 1;
}

static struct run *
run_by_id(struct srv *s, const json_t *id)
{
	int i;

	for (i = 0; i < SBX_MCP_RUNS_MAX; i++)
		if (s->run[i].used && !s->run[i].cancelled &&
		    json_equal(s->run[i].id, (json_t *)id))
			return &s->run[i];
	return NULL;
}

static void
tools_call(struct srv *s, const json_t *id, const json_t *params)
{
	struct sbx_mcp_spawn sp = { SBX_STRV_INIT, SBX_BUF_INIT, 0, NULL, 0 };
	const struct sbx_tooldef *d;
	struct sbx_error	  e;
	const json_t		 *args, *pl = NULL;
	json_t			 *schema, *empty = NULL, *list, *v;
	const char		 *name, *k;
	struct run		 *r;
	int			  i, rc;

	name = json_string_value(json_object_get(params, "name"));
	args = json_object_get(params, "arguments");
	if (name == NULL) {
		send_error(s, id, E_PARAMS,
		    "tools/call: `name` must be a "
		    "string");
		return;
	}
	if (args != NULL && !json_is_object(args)) {
		send_error(s, id, E_PARAMS,
		    "tools/call: `arguments` must be "
		    "an object");
		return;
	}
	if (args == NULL)
		args = empty = json_object();
	if ((d = sbx_tooldef_find(name)) == NULL) {
		if (s->plugins == NULL && (list = tools_list(s)) != NULL)
			json_decref(list);
		pl = json_object_get(s->plugins, name);
		/* The id of a plugin tool (plugin.ID.TOOL), as clients
		 * written before the names had no dots called it. */
		json_object_foreach ((json_t *)s->plugins, k, v)
			if (pl == NULL && json_is_string(json_object_get(v,
			    "id")) && strcmp(json_string_value(
			    json_object_get(v, "id")), name) == 0) {
				pl = v;
				name = k;
			}
	}
	if (d == NULL && pl == NULL) {
		send_error(s, id, E_PARAMS, "unknown tool: %.64s", name);
		goto out;
	}
	/* The arguments against the tool's schema first: extra
	 * properties, wrong types and oversized strings are refused
	 * before anything runs. */
	schema = d != NULL ? sbx_tooldef_input(d) :
			     json_incref(json_object_get(pl, "inputSchema"));
	rc = schema != NULL ? sbx_jschema_check(schema, args, &e) : 0;
	json_decref(schema);
	if (rc == -1) {
		tool_refused(s, id, name, &e, NULL);
		goto out;
	}
	if (run_by_id(s, id) != NULL) {
		/* The first call keeps its id; this one cannot be answered
		 * under it without confusing the two. */
		send_error(s, NULL, E_REQUEST,
		    "request id already in use by "
		    "a call that is still running");
		goto out;
	}
	if (!admit(s, id, name))
		goto out;
	if (strcmp(name, "shell_run") == 0 && s->wstate == 0)
		warm_start(s);
	if (sbx_mcp_tool_spawn(&s->who, name, pl, args, &sp, &e) == -1) {
		tool_refused(s, id, name, &e, NULL);
		goto out;
	}
	for (i = 0; i < SBX_MCP_RUNS_MAX && s->run[i].used; i++)
		;
	r = &s->run[i];
	memset(r, 0, sizeof(*r));
	r->fd[0] = r->fd[1] = r->fd[2] = r->fd[3] = -1;
	sbx_capture_init(&r->cap[0], OUTPUT_CAP, 1);
	sbx_capture_init(&r->cap[1], OUTPUT_CAP, 1);
	if (spawn(r, &sp, &e) == -1) {
		sbx_capture_release(&r->cap[0]);
		sbx_capture_release(&r->cap[1]);
		tool_refused(s, id, name, &e, NULL);
		goto out;
	}
	r->used = 1;
	s->nrun++;
	r->id = json_deep_copy(id);
	r->args = json_deep_copy(args);
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->ptoken = json_incref(
	    json_object_get(json_object_get(params, "_meta"), "progressToken"));
	r->started = sbx_now_ms();
	r->next_progress = r->started + PROGRESS_MS;
out:
	sbx_mcp_spawn_release(&sp);
	json_decref(empty);
}

/* ---- JSON-RPC ---------------------------------------------------- */

static json_t *
initialize(struct srv *s, const json_t *params)
{
	const char *want =
	    json_string_value(json_object_get(params, "protocolVersion"));
	const char *v = sbx_mcp_revisions[0];
	size_t	    i;

	/* The client's revision when we speak it, else our newest: the
	 * client then decides whether it can go on (lifecycle, version
	 * negotiation). */
	for (i = 0; want != NULL && sbx_mcp_revisions[i] != NULL; i++)
		if (strcmp(want, sbx_mcp_revisions[i]) == 0)
			v = sbx_mcp_revisions[i];
	s->structured = strcmp(v, "2025-06-18") >= 0;
	json_decref(s->tools);
	s->tools = NULL;
	return json_pack("{s:s,s:{s:{s:b},s:{}},s:{s:s,s:s,s:s},s:s}",
	    "protocolVersion", v, "capabilities", "tools", "listChanged", 0,
	    "logging", "serverInfo", "name", "sbx", "title", "sbx sandbox",
	    "version", s->c->version, "instructions",
	    "Every tool runs in this agent's Linux sandbox "
	    "(sbx): commands, files and packages stay in the agent's home "
	    "(/workspace/agents/<agent>). Use shell_run for commands, "
	    "sandbox_process for long-running ones, the file_* tools to "
	    "read, search and change files, and secret_request when a task "
	    "needs a credential: never ask for secret values in the "
	    "conversation.");
}

static void
cancelled(struct srv *s, const json_t *params)
{
	struct run *r;

	if ((r = run_by_id(s, json_object_get(params, "requestId"))) == NULL)
		return;
	/* No answer goes out for a cancelled request (the client has
	 * forgotten it); the run is stopped. */
	r->cancelled = 1;
	run_kill(r, sbx_now_ms());
	log_msg(s, 1, "cancelled: %s stopped", r->name);
}

static void
set_level(struct srv *s, const json_t *id, const json_t *params)
{
	const char *l = json_string_value(json_object_get(params, "level"));
	int	    i;

	for (i = 0; l != NULL && levels[i] != NULL; i++)
		if (strcmp(levels[i], l) == 0) {
			s->loglevel = i;
			send_result(s, id, json_object());
			return;
		}
	send_error(s, id, E_PARAMS, "logging/setLevel: unknown level");
}

static int
valid_id(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static void
request(struct srv *s, const char *method, const json_t *id,
    const json_t *params)
{
	if (strcmp(method, "initialize") == 0)
		send_result(s, id, initialize(s, params));
	else if (strcmp(method, "ping") == 0)
		send_result(s, id, json_object());
	else if (strcmp(method, "tools/list") == 0)
		send_result(s, id, json_pack("{s:o}", "tools", tools_list(s)));
	else if (strcmp(method, "tools/call") == 0)
		tools_call(s, id, params);
	else if (strcmp(method, "logging/setLevel") == 0)
		set_level(s, id, params);
	else
		send_error(s, id, E_METHOD, "method not found: %.64s", method);
}

static void
message(struct srv *s, const char *p, size_t n)
{
	struct sbx_error e;
	const json_t	*id, *params, *m;
	json_t		*msg, *empty = NULL;
	size_t		 i;

	for (i = 0; i < n && strchr(" \t\r", p[i]) != NULL; i++)
		;
	if (i == n)
		return;
	if (p[i] == '[') {
		/* Batches were in 2025-03-26 only, and were removed. */
		send_error(s, NULL, E_REQUEST, "batches are not supported");
		return;
	}
	if ((msg = sbx_json_parse(p, n, s->c->msg_max, &e)) == NULL) {
		/* JSON, but not an object: not a request (42, "x", null). */
		if (p[i] != '{' &&
		    (msg = json_loadb(p, n, JSON_DECODE_ANY, NULL)) != NULL) {
			json_decref(msg);
			send_error(s, NULL, E_REQUEST,
			    "invalid request: not "
			    "an object");
		} else
			send_error(s, NULL, E_PARSE, "parse error: %s",
			    e.message);
		return;
	}
	id = json_object_get(msg, "id");
	m = json_object_get(msg, "method");
	params = json_object_get(msg, "params");
	if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(msg, "jsonrpc")), "2.0") !=
		0 ||
	    (id != NULL && !valid_id(id))) {
		send_error(s, valid_id(id) ? id : NULL, E_REQUEST,
		    "invalid request: want jsonrpc \"2.0\" and a string or "
		    "integer id");
	} else if (m == NULL) {
		/* A response: we send no requests, so nothing waits for
		 * it. */
		if (json_object_get(msg, "result") == NULL &&
		    json_object_get(msg, "error") == NULL)
			send_error(s, id, E_REQUEST,
			    "invalid request: no "
			    "method");
	} else if (!json_is_string(m)) {
		send_error(s, id, E_REQUEST,
		    "invalid request: `method` "
		    "must be a string");
	} else if (params != NULL && !json_is_object(params)) {
		if (id != NULL)
			send_error(s, id, E_PARAMS,
			    "`params` must be an "
			    "object");
	} else if (id != NULL) {
		if (params == NULL)
			params = empty = json_object();
		request(s, json_string_value(m), id, params);
	} else if (strcmp(json_string_value(m), "notifications/cancelled") == 0)
		cancelled(s, params);
	json_decref(empty);
	json_decref(msg);
}

/* The client's bytes: whole lines become messages; a line over the cap
 * is refused once and skipped to its end. */
static void
input(struct srv *s)
{
	char	b[65536], *nl, *p;
	ssize_t n;
	size_t	len;

	n = read(s->c->in_fd, b, sizeof(b));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		s->eof = 1;
		return;
	}
	sbx_buf_append(&s->inbuf, b, (size_t)n);
	p = s->inbuf.p;
	len = s->inbuf.len;
	while ((nl = memchr(p, '\n', len)) != NULL) {
		if (!s->discarding && (size_t)(nl - p) > s->c->msg_max)
			send_error(s, NULL, E_REQUEST,
			    "message larger than "
			    "%zu bytes",
			    s->c->msg_max);
		else if (!s->discarding)
			message(s, p, (size_t)(nl - p));
		s->discarding = 0;
		len -= (size_t)(nl - p) + 1;
		p = nl + 1;
	}
	if (len > s->c->msg_max) {
		if (!s->discarding)
			send_error(s, NULL, E_REQUEST,
			    "message larger than "
			    "%zu bytes",
			    s->c->msg_max);
		s->discarding = 1;
		len = 0;
	}
	memmove(s->inbuf.p, p, len);
	s->inbuf.len = len;
}

/* ---- the loop ---------------------------------------------------- */

static void
progress(struct srv *s, struct run *r, long long now)
{
	unsigned long long t = (now - r->started) / 1000;

	r->next_progress = now + PROGRESS_MS;
	if (r->ptoken == NULL || r->cancelled)
		return;
	send_msg(s,
	    json_pack("{s:s,s:s,s:{s:O,s:I,s:s+}}", "jsonrpc", "2.0", "method",
		"notifications/progress", "params", "progressToken", r->ptoken,
		"progress", (json_int_t)t, "message", r->name, " running"));
}

static int
poll_once(struct srv *s)
{
	struct pollfd pf[2 + 4 * SBX_MCP_RUNS_MAX];
	struct run   *who[2 + 4 * SBX_MCP_RUNS_MAX];
	int	      idx[2 + 4 * SBX_MCP_RUNS_MAX];
	int	      n = 0, i, j, timeout = -1, in_idx = -1, out_idx = -1;
	long long     now = sbx_now_ms(), next = LLONG_MAX;
	struct run   *r;

	pf[n].fd = s->sigfd;
	pf[n++].events = POLLIN;
	if (!s->eof && !s->gone) {
		in_idx = n;
		pf[n].fd = s->c->in_fd;
		pf[n++].events = POLLIN;
	} else if (!s->gone) {
		/* After EOF the calls in flight still get their answers,
		 * unless the client has closed its end of our output too
		 * (POLLERR on a pipe): then nobody waits for them. */
		out_idx = n;
		pf[n].fd = s->c->out_fd;
		pf[n++].events = 0;
	}
	for (i = 0; i < SBX_MCP_RUNS_MAX; i++) {
		r = &s->run[i];
		if (!r->used)
			continue;
		for (j = 0; j < 4; j++) {
			if (r->fd[j] < 0)
				continue;
			pf[n].fd = r->fd[j];
			pf[n].events = j == 0 ? POLLOUT : POLLIN;
			who[n] = r;
			idx[n++] = j;
		}
		if (r->ptoken != NULL && r->next_progress < next)
			next = r->next_progress;
		if (r->kill_at != 0 && r->kill_at < next)
			next = r->kill_at;
	}
	if (next != LLONG_MAX)
		timeout = next <= now ? 0 : (int)(next - now);
	if (poll(pf, (nfds_t)n, timeout) == -1 && errno != EINTR)
		return -1;
	if (pf[0].revents)
		reap(s);
	for (i = 1; i < n; i++) {
		if (pf[i].revents == 0)
			continue;
		if (i == out_idx) {
			if (pf[i].revents & (POLLERR | POLLHUP | POLLNVAL))
				s->gone = 1;
		} else if (i == in_idx)
			input(s);
		else if (idx[i] == 0)
			run_write(who[i]);
		else
			run_read(who[i], idx[i]);
	}
	now = sbx_now_ms();
	for (i = 0; i < SBX_MCP_RUNS_MAX; i++) {
		r = &s->run[i];
		if (!r->used)
			continue;
		if (r->exited)
			run_finish(s, r);
		else if (r->kill_at != 0 && now >= r->kill_at)
			(void)kill(-r->pid, SIGKILL);
		else if (now >= r->next_progress)
			progress(s, r, now);
	}
	return 0;
}

/* The session is over (EOF and every call answered, a signal, or the
 * client gone): runs still going are cancelled, and the background jobs
 * the session started are killed. */
static void
teardown(struct srv *s)
{
	struct sbx_mcp_spawn sp;
	struct sbx_error     e;
	json_t		    *args;
	long long	     now = sbx_now_ms();
	size_t		     i;
	int		     k;

	for (k = 0; k < SBX_MCP_RUNS_MAX; k++)
		if (s->run[k].used) {
			s->run[k].cancelled = 1;
			run_kill(&s->run[k], now);
		}
	while (s->nrun > 0)
		if (poll_once(s) == -1)
			break;
	for (i = 0; i < s->jobs.n; i++) {
		memset(&sp, 0, sizeof(sp));
		args = json_pack("{s:s,s:s}", "action", "kill", "job",
		    s->jobs.v[i]);
		if (args != NULL &&
		    sbx_mcp_tool_spawn(&s->who, "sandbox_process", NULL, args,
			&sp, &e) == 0 &&
		    s->nrun < SBX_MCP_RUNS_MAX) {
			for (k = 0; s->run[k].used; k++)
				;
			memset(&s->run[k], 0, sizeof(s->run[k]));
			s->run[k].fd[0] = s->run[k].fd[1] = -1;
			s->run[k].fd[2] = s->run[k].fd[3] = -1;
			sbx_capture_init(&s->run[k].cap[0], 0, 0);
			sbx_capture_init(&s->run[k].cap[1], 0, 0);
			if (spawn(&s->run[k], &sp, &e) == 0) {
				s->run[k].used = 1;
				s->run[k].cancelled = 1;
				s->nrun++;
			}
		}
		sbx_mcp_spawn_release(&sp);
		json_decref(args);
		while (s->nrun > 0)
			if (poll_once(s) == -1)
				break;
	}
}

int
sbx_mcp_serve(const struct sbx_mcp_conf *c, struct sbx_error *e)
{
	struct srv s;
	sigset_t   set;
	int	   rc = 0;

	memset(&s, 0, sizeof(s));
	s.c = c;
	s.who.libexec = c->libexec;
	s.who.agent = c->agent;
	s.who.home = c->home;
	s.who.network_max = c->network_max;
	s.loglevel = 3;
	s.structured = 1;
	if (c->per_minute > 0 &&
	    (s.starts = calloc(c->per_minute, sizeof(*s.starts))) == NULL)
		return sbx_error_sys(e, "nomem", "out of memory");
	/* SIGCHLD (and SIGTERM, SIGINT, SIGHUP) through a signalfd: the
	 * loop reaps in order with the rest of its work, no handler runs
	 * between two writes, and a server told to stop still stops its
	 * runs first. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigprocmask(SIG_BLOCK, &set, NULL);
	if ((s.sigfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) == -1) {
		free(s.starts);
		return sbx_error_sys(e, "signalfd", "cannot watch children");
	}
	/* A client that stops reading gets EPIPE on our writes, not a
	 * signal that would leave the runs behind. */
	signal(SIGPIPE, SIG_IGN);
	/* Input ends (EOF): nothing more is read, and the calls in flight
	 * run to their end (their own timeouts bound them) and are answered:
	 * `printf '...' | sbx mcp` gets its results.  Only a signal, a
	 * notifications/cancelled or a client that is gone cancels. */
	while (!s.gone && !s.stop && (!s.eof || s.nrun > 0))
		if (poll_once(&s) == -1) {
			rc = sbx_error_sys(e, "poll", "poll failed");
			break;
		}
	teardown(&s);
	warm_stop(&s);
	close(s.sigfd);
	free(s.starts);
	sbx_buf_release(&s.inbuf);
	sbx_strv_release(&s.jobs);
	json_decref(s.tools);
	json_decref(s.plugins);
	return rc;
}
