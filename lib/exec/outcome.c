/*
 * outcome.c: the verdict on a run and the result object of its envelope
 * (see outcome.h).  Moved from exec.c; a job's supervisor judges its run
 * here too (lib/exec/jobsup.c), so poll and wait say what a foreground
 * run's envelope says.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "capture.h"
#include "cli.h"
#include "envelope.h"
#include "error.h"
#include "exec.h"
#include "netmode.h"
#include "outcome.h"
#include "run.h"
#include "scrub.h"
#include "utf8.h"

static void
warn(struct sbx_exec *p, const char *msg)
{
	json_array_append_new(p->warnings, json_string(msg));
}

static int
is_fs_violation(const json_t *v)
{
	const char	*t = json_string_value(json_object_get(v, "type"));

	return t != NULL && strcmp(t, "filesystem") == 0;
}

/* One line for people per file-system violation, workdir-relative. */
static void
fs_violation_text(const struct sbx_exec *p, const json_t *v,
    struct sbx_buf *out)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*path = json_string_value(json_object_get(v, "path"));
	const char	*why = json_string_value(json_object_get(v, "reason"));
	size_t		 n;

	if (!is_fs_violation(v) || path == NULL || why == NULL)
		return;
	if (p->workdir != NULL && (n = strlen(p->workdir),
	    strncmp(path, p->workdir, n) == 0) && path[n] == '/')
		path += n + 1;
	sbx_utf8_escape_line(&b, path, strlen(path));
	sbx_buf_printf(out, "%s%s: %s (%s)", out->len ? "\nsbx: " : "",
	    strcmp(why, "unix_socket") == 0 ? "unix socket" :
	    "protected path", b.p, strcmp(why, "unix_socket") == 0 ?
	    "connection refused" : "write refused");
	sbx_buf_release(&b);
}

char *
sbx_exec_violations_text(const struct sbx_exec *p)
{
	struct sbx_buf	 out = SBX_BUF_INIT;
	json_t		*v;
	size_t		 i, n;

	json_array_foreach (p->violations, i, v)
		fs_violation_text(p, v, &out);
	n = 0;
	json_array_foreach (p->violations, i, v)
		if (!is_fs_violation(v))
			n++;
	if (n == 0 && out.len == 0)
		return NULL;
	if (n == 0)
		return sbx_buf_detach(&out);
	if (out.len > 0)
		sbx_buf_puts(&out, "\nsbx: ");
	sbx_buf_printf(&out, "proxy denied %zu request%s:", n,
	    n == 1 ? "" : "s");
	n = 0;
	json_array_foreach (p->violations, i, v) {
		struct sbx_buf b = SBX_BUF_INIT;
		const char *h = json_string_value(json_object_get(v, "host"));
		const char *ad =
		    json_string_value(json_object_get(v, "address"));
		const char *hn = json_string_value(json_object_get(v, "hint"));

		if (is_fs_violation(v))
			continue;
		if (n++ == 5) {
			sbx_buf_puts(&out, " ...");
			break;
		}
		sbx_utf8_escape_line(&b, h != NULL ? h : "-", h != NULL ?
		    strlen(h) : 1);
		/* An address refused for its class says which address and
		 * what would allow it (the proxy's own words). */
		sbx_buf_printf(&out, "%s %s:%lld (%s%s%s%s%s)",
		    n > 1 ? "," : "", b.p,
		    json_integer_value(json_object_get(v, "port")),
		    json_string_value(json_object_get(v, "reason")),
		    ad != NULL ? " " : "", ad != NULL ? ad : "",
		    hn != NULL ? "; " : "", hn != NULL ? hn : "");
		sbx_buf_release(&b);
	}
	return sbx_buf_detach(&out);
}

/* Does the command hide failures (a pipe, or stderr thrown away)? */
static int
mentions_pipe(const struct sbx_exec *p)
{
	int	 i;

	if (p->req->shell)
		return strchr(p->req->shell, '|') != NULL ||
		    strstr(p->req->shell, "2>/dev/null") != NULL ||
		    strstr(p->req->shell, "2> /dev/null") != NULL;
	for (i = 0; i < p->req->argc; i++)
		if (strchr(p->req->argv[i], '|') != NULL ||
		    strstr(p->req->argv[i], "2>/dev/null") != NULL)
			return 1;
	return 0;
}

const char *
sbx_exec_signame(int n)
{
	static char	 buf[16];

	switch (n) {
	case SIGHUP: return "SIGHUP";
	case SIGINT: return "SIGINT";
	case SIGQUIT: return "SIGQUIT";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGKILL: return "SIGKILL";
	case SIGUSR1: return "SIGUSR1";
	case SIGSEGV: return "SIGSEGV";
	case SIGUSR2: return "SIGUSR2";
	case SIGPIPE: return "SIGPIPE";
	case SIGALRM: return "SIGALRM";
	case SIGTERM: return "SIGTERM";
	case SIGXCPU: return "SIGXCPU";
	case SIGXFSZ: return "SIGXFSZ";
	case SIGSYS: return "SIGSYS";
	}
	snprintf(buf, sizeof(buf), "SIG%d", n);
	return buf;
}

static json_t *
result_json(struct sbx_exec *p, struct sbx_run *r)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*res = json_object(), *trunc;

	json_object_set_new(res, "exit_code", json_integer(r->exit_code));
	if (r->signo) {
		json_object_set_new(res, "signal", json_integer(r->signo));
		json_object_set_new(res, "signal_name",
		    json_string(sbx_exec_signame(r->signo)));
	}
	/* A job's output is in its log, not here. */
	if (r->capture) {
		sbx_capture_render(&r->out, &b);
		json_object_set_new(res, "stdout", sbx_json_bytes(b.p ? b.p :
		    "", b.len));
		sbx_buf_reset(&b);
		sbx_capture_render(&r->err, &b);
		json_object_set_new(res, "stderr", sbx_json_bytes(b.p ? b.p :
		    "", b.len));
		sbx_buf_release(&b);
		if (sbx_capture_truncated(&r->out) ||
		    sbx_capture_truncated(&r->err)) {
			trunc = json_array();
			if (sbx_capture_truncated(&r->out))
				json_array_append_new(trunc,
				    json_string("stdout"));
			if (sbx_capture_truncated(&r->err))
				json_array_append_new(trunc,
				    json_string("stderr"));
			json_object_set_new(res, "truncated", trunc);
		}
	}
	json_object_set_new(res, "cwd", json_string(p->cwd));
	if (p->workdir_resolved != NULL)
		json_object_set_new(res, "workdir_resolved",
		    json_string(p->workdir_resolved));
	json_object_set_new(res, "agent", json_string(p->sb.agent));
	json_object_set_new(res, "duration_ms", json_integer(r->duration_ms));
	json_object_set_new(res, "network",
	    json_string(sbx_netmode_name(p->network)));
	if (p->violations != NULL)
		json_object_set(res, "violations", p->violations);
	if (p->credentials != NULL)
		json_object_set(res, "credentials", p->credentials);
	json_object_set_new(res, "seccomp", json_boolean(!p->req->seccomp_off));
	json_object_set_new(res, "identity",
	    json_string(sbx_idalloc_mode(p->per_agent)));
	json_object_set(res, "limits", p->limits);
	if (r->limit != NULL && strcmp(r->limit, "idle") != 0)
		json_object_set_new(res, "limit", json_string(r->limit));
	if (r->killed_by != NULL)
		json_object_set_new(res, "killed_by",
		    json_string(r->killed_by));
	if (p->req->shell != NULL)
		json_object_set_new(res, "shell", json_string(r->nopipefail ?
		    "sh" : "bash"));
	return res;
}

/* {"result":..., "warnings":[...]} for a failure envelope (steals res). */
static json_t *
extra_of(json_t *res, json_t *warnings)
{
	json_t	*x = json_object();

	json_object_set_new(x, "result", res);
	if (json_array_size(warnings) > 0)
		json_object_set(x, "warnings", warnings);
	return x;
}

/* "sh" for -c, else the command's name. */
static const char *
command_name(const struct sbx_exec *p)
{
	return p->req->shell ? "sh" : p->req->argv[0];
}

static void
outcome_exec_errno(struct sbx_exec *p, int err, struct sbx_exec_outcome *o)
{
	if (err == ENOENT) {
		sbx_error_set(&o->err, SBX_K_NOT_FOUND, "command",
		    "command_not_found", "command not found in the sandbox: %s",
		    command_name(p));
		o->code = SBX_EX_NOT_FOUND;
	} else {
		sbx_error_set(&o->err, SBX_K_EXECUTION_ERROR, "command",
		    "cannot_execute", "cannot execute %s in the sandbox: %s",
		    command_name(p), strerror(err));
		o->code = SBX_EX_CANNOT_EXEC;
	}
}

/* A background job: started, or what stopped it from starting. */
static void
outcome_job(struct sbx_exec *p, struct sbx_exec_outcome *o)
{
	if (p->job_what == 'E') {
		outcome_exec_errno(p, p->job_val, o);
		o->extra = json_pack("{s:s}", "job", p->job);
		return;
	}
	if (p->job_what == 'F') {
		/* The job id, not the log's host path: the caller may be a
		 * model (sbx mcp) that can read the log only through poll. */
		sbx_error_set(&o->err, SBX_K_UNAVAILABLE, NULL,
		    "sandbox_setup_failed",
		    "the sandbox of job %s could not be "
		    "set up; its log says why: sbx exec poll %s",
		    p->job, p->job);
		o->code = SBX_EX_FAILED;
		o->extra = json_pack("{s:s}", "job", p->job);
		return;
	}
	o->ok = 1;
	o->code = 0;
	o->result = json_pack("{s:s,s:i,s:s,s:s,s:b,s:s}", "job", p->job,
	    "pid", p->job_pid, "log_file", p->logpath, "cwd", p->cwd,
	    "background", 1, "agent", p->sb.agent);
	if (p->workdir_resolved != NULL)
		json_object_set_new(o->result, "workdir_resolved",
		    json_string(p->workdir_resolved));
}

/* A run that fail-on-violation rejects (o->err set): the command's own
 * failure status, else 77, the result and the violations beside the
 * error. */
static void
rejected_run(struct sbx_exec *p, json_t *res, struct sbx_exec_outcome *o)
{
	if (o->code == 0)
		o->code = SBX_EX_NOPERM;
	o->extra = extra_of(res, p->warnings);
	json_object_set(o->extra, "violations", p->violations);
}

/* Who asked for the verdict: the option or the agent's setting. */
static const char *
violation_source(const struct sbx_exec *p)
{
	return p->req->fail_on_violation > 0 ? "--fail-on-violation" :
	    "the agent's fail_on_violation setting";
}

/*
 * --fail-on-violation: a run that the proxy or the file-system guard
 * refused something ran to its end, but an agent that judges by status
 * alone would take a denied request (curl saw the proxy's 403 and exited
 * 0) for a success.  It is `rejected` instead, the violations listed
 * beside the result, and the status is the command's own when that is a
 * failure already, else 77 (the one table's status for `rejected`).  The
 * output has streamed by then: only the verdict changes.
 */
static void
violation_failure(struct sbx_exec *p, json_t *res, struct sbx_exec_outcome *o)
{
	const json_t	*v;
	size_t		 i, net = 0, fs = 0;
	char		 a[48] = "", b[48] = "";

	json_array_foreach (p->violations, i, v)
		if (is_fs_violation(v))
			fs++;
		else
			net++;
	if (net > 0)
		snprintf(a, sizeof(a), "%zu network request%s", net,
		    net == 1 ? "" : "s");
	if (fs > 0)
		snprintf(b, sizeof(b), "%zu file-system access%s", fs,
		    fs == 1 ? "" : "es");
	sbx_error_set(&o->err, SBX_K_REJECTED, NULL, "violation",
	    "the sandbox refused %s%s%s of this run, and %s makes that a "
	    "failure", a, net > 0 && fs > 0 ? " and " : "", b,
	    violation_source(p));
	sbx_error_hint(&o->err, "the run's violations say what was refused; "
	    "allow it in the agent's settings (sbx config) if it is needed");
	rejected_run(p, res, o);
}

/*
 * What happened, as an envelope and an exit status: the sandbox could not
 * be set up (125), the command was not found (127) or could not be
 * executed (126), the memory limit killed it, the idle timeout or the wall
 * clock ended it (124), a signal to sbx ended it (128+n), or it ran to
 * its end (its own status).  In the foreground and in a job's supervisor
 * alike.
 */
static void
outcome_judge(struct sbx_exec *p, struct sbx_exec_outcome *o)
{
	struct sbx_run	*r = &p->run;
	json_t		*res;

	memset(o, 0, sizeof(*o));
	if (!r->started) {
		/* bwrap could not build the sandbox: nothing ran. */
		struct sbx_buf m = SBX_BUF_INIT;
		if (r->setup_err.len)
			sbx_buf_append(&m, r->setup_err.p,
			    r->setup_err.len > 600 ? 600 : r->setup_err.len);
		while (m.len && (m.p[m.len - 1] == '\n'))
			m.p[--m.len] = '\0';
		sbx_error_set(&o->err, SBX_K_UNAVAILABLE, NULL,
		    "sandbox_setup_failed", "the sandbox could not be set up: "
		    "%s", m.len ? m.p : "bwrap failed without a message");
		sbx_error_hint(&o->err, "run `sbx preflight` to see what this "
		    "machine lacks");
		sbx_buf_release(&m);
		o->code = SBX_EX_FAILED;
		return;
	}
	if (r->exec_errno) {
		outcome_exec_errno(p, r->exec_errno, o);
		o->extra = json_pack("{s:o}", "result", result_json(p, r));
		return;
	}
	if (r->nopipefail)
		warn(p, "bash is not available in the sandbox: ran the string "
		    "with sh -c, so pipefail is unavailable");
	if (r->exit_code == 0 && r->out.total == 0 && r->err.total == 0 &&
	    mentions_pipe(p))
		warn(p, "the command exited 0 with no output, but it uses a "
		    "pipe or discards stderr: errors upstream may have been "
		    "suppressed");
	if (r->exit_code == 141)
		warn(p, "exit 141 is SIGPIPE: a reader closed the pipe early; "
		    "the captured output is still trustworthy");
	if (r->sink_errno != 0) {
		char	 m[160];

		snprintf(m, sizeof(m), "cannot write the command's output: "
		    "%s", strerror(r->sink_errno));
		warn(p, m);
	}
	res = result_json(p, r);
	if (p->events != NULL && json_object_size(p->events) > 0)
		json_object_set(res, "limit_events", p->events);
	if (p->disk_full)
		json_object_set_new(res, "disk_limit_reached", json_true());
	o->code = r->exit_code < 0 ? SBX_EX_FAILED : r->exit_code;
	/* The command succeeded but its output was lost (a full disk):
	 * an I/O error, not a success (sbx-exec(1) EXIT STATUS). */
	if (r->sink_errno != 0 && o->code == 0)
		o->code = SBX_EX_IOERR;
	if (r->limit != NULL && strcmp(r->limit, "memory") == 0) {
		sbx_error_set(&o->err, SBX_K_EXECUTION_ERROR, "memory",
		    "memory_limit",
		    "the sandbox ran out of memory: the kernel "
		    "killed it at the limit of %llu MiB",
		    p->lim.memory_mib);
		sbx_error_hint(&o->err,
		    "raise --memory (or limits.memory_mib)");
	} else if (r->killed_by != NULL &&
	    strcmp(r->killed_by, "timeout") == 0) {
		sbx_error_set(&o->err, SBX_K_TIMEOUT, "timeout", "idle_timeout",
		    "killed after %s seconds without output (an "
		    "inactivity timeout, not a limit on run time; output a "
		    "program buffers counts as silence, see -t)",
		    p->req->timeout);
		sbx_error_hint(&o->err,
		    "raise --timeout, make the command "
		    "print progress and flush it, or run it on a terminal "
		    "with -t/--tty (most programs then write line by line)");
		o->code = SBX_EX_TIMEOUT;
	} else if (r->killed_by != NULL && r->limit != NULL &&
	    strcmp(r->limit, "wall_time") == 0) {
		sbx_error_set(&o->err, SBX_K_TIMEOUT, "wall_timeout",
		    "wall_time", "killed at the wall-clock limit of %g second%s",
		    p->lim.wall_timeout, p->lim.wall_timeout == 1 ? "" : "s");
		sbx_error_hint(&o->err, "raise --wall-timeout (or limits."
		    "wall_timeout in the agent's configuration)");
		o->code = SBX_EX_TIMEOUT;
	} else if (r->killed_by != NULL &&
	    strcmp(r->killed_by, "session_stopped") == 0) {
		/* A session's background job (sbx_warm_job_run): it lives
		 * in the session's sandbox and ends with it. */
		o->code = 128 + SIGKILL;
		sbx_error_set(&o->err, SBX_K_EXECUTION_ERROR, NULL,
		    "session_stopped",
		    "the job's session %s ended (sbx session stop, its idle "
		    "timeout or lifetime, or its supervisor's end), and the "
		    "job with it",
		    p->req->session_name ? p->req->session_name : "");
	} else if (r->killed_by != NULL && strcmp(r->killed_by, "user") == 0) {
		o->code = 128 + r->user_signal;
		sbx_error_set(&o->err, SBX_K_EXECUTION_ERROR, NULL,
		    "interrupted", "the sandbox was terminated on %s",
		    sbx_exec_signame(r->user_signal));
	} else if (p->fail_on_violation && json_array_size(p->violations) > 0) {
		violation_failure(p, res, o);
		return;
	} else if (p->fail_on_violation && p->relay[0].restarts > 0) {
		/*
		 * The proxy died mid-run and its record of the denials
		 * before that went with it: a run that may have had one is
		 * not called clean (fail closed; relay_open).
		 */
		sbx_error_set(&o->err, SBX_K_REJECTED, NULL,
		    "violations_unknown", "sbx-proxy died during the run and "
		    "its record of the requests it denied before that is "
		    "lost, and %s makes a run that may have had one a "
		    "failure", violation_source(p));
		sbx_error_hint(&o->err, "see run/proxy.log for the requests "
		    "of this run, or run it again");
		rejected_run(p, res, o);
		return;
	} else {
		o->ok = 1;
		o->result = res;
		return;
	}
	o->extra = extra_of(res, p->warnings);
}

/* A message of ours may quote the command (its set-up errors, a job's
 * record): scrubbed like its output. */
static void
scrub_msg(struct sbx_scrub *sc, char *m, size_t size)
{
	char	*t;

	if ((t = sbx_scrub_str(sc, m)) == NULL) {
		snprintf(m, size, "(a message withheld: it could not be "
		    "scrubbed of secrets)");
		return;
	}
	snprintf(m, size, "%s", t);
	free(t);
}

/* The verdict's messages and objects, scrubbed of the run's secrets. */
static void
outcome_scrub(struct sbx_exec *p, struct sbx_exec_outcome *o)
{
	struct sbx_scrub	*sc = p->secrets.scrub;

	if (sc == NULL)
		return;
	scrub_msg(sc, o->err.message, sizeof(o->err.message));
	scrub_msg(sc, o->err.hint, sizeof(o->err.hint));
	sbx_scrub_json(sc, o->result);
	sbx_scrub_json(sc, o->extra);
	sbx_scrub_json(sc, p->warnings);
}

void
sbx_exec_outcome(struct sbx_exec *p, struct sbx_exec_outcome *o)
{
	if (p->req->background) {
		memset(o, 0, sizeof(*o));
		outcome_job(p, o);
	} else
		outcome_judge(p, o);
	outcome_scrub(p, o);
}

void
sbx_exec_outcome_run(struct sbx_exec *p, struct sbx_exec_outcome *o)
{
	outcome_judge(p, o);
	outcome_scrub(p, o);
}

json_t *
sbx_exec_outcome_result(const struct sbx_exec_outcome *o)
{
	if (o->ok)
		return o->result;
	return json_object_get(o->extra, "result");
}

/* The failure's keys are a failure envelope's (the one builder), less
 * its tool: the job's tool is exec.poll or exec.wait. */
json_t *
sbx_exec_outcome_verdict(const struct sbx_exec_outcome *o)
{
	json_t	*v;

	if (o->ok)
		v = json_pack("{s:b}", "ok", 1);
	else if ((v = sbx_envelope_err("exec", &o->err, NULL)) != NULL)
		json_object_del(v, "tool");
	if (v != NULL)
		json_object_set_new(v, "code", json_integer(o->code));
	return v;
}

void
sbx_exec_outcome_release(struct sbx_exec_outcome *o)
{
	json_decref(o->result);
	json_decref(o->extra);
	o->result = o->extra = NULL;
}
