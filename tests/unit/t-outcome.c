/*
 * t-outcome: the verdict on a run (lib/exec/outcome.c) without a sandbox:
 * what happened (struct sbx_run's fields, the limits, the violations) to
 * the envelope's kind and reason, its result object and the exit status,
 * for foreground runs and for a job's supervisor (sbx_exec_outcome_run),
 * which records the same verdict for poll and wait.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "cli.h"
#include "envelope.h"
#include "exec.h"
#include "netmode.h"
#include "scrub.h"

static char	*cmd_argv[] = { "make", "test", NULL };

struct fix {
	struct sbx_exec_req	 q;
	struct sbx_exec		 p;
	struct sbx_exec_outcome	 o;
};

/* A run of `make test` that started and exited 0, nothing captured. */
static void
fix_init(struct fix *f)
{
	sbx_exec_req_init(&f->q);
	f->q.argv = cmd_argv;
	f->q.argc = 2;
	sbx_exec_init(&f->p);
	f->p.req = &f->q;
	f->p.sb.agent = "default";
	f->p.network = SBX_NETMODE_NONE;
	f->p.limits = json_object();
	f->p.warnings = json_array();
	snprintf(f->p.cwd, sizeof(f->p.cwd), "/workspace/agents/default");
	f->p.run.started = 1;
	f->p.run.running = 1;
	f->p.run.exit_code = 0;
	f->p.run.duration_ms = 12;
	memset(&f->o, 0, sizeof(f->o));
}

static void
fix_release(struct fix *f)
{
	sbx_exec_outcome_release(&f->o);
	sbx_exec_release(&f->p);
	sbx_exec_req_release(&f->q);
}

static void
judge(struct fix *f)
{
	sbx_exec_outcome(&f->p, &f->o);
}

static const char *
str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long
num(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static int
is(const char *a, const char *b)
{
	return a != NULL && b != NULL && strcmp(a, b) == 0;
}

/* A failure of this kind, reason and status. */
static int
failed(const struct fix *f, const char *kind, const char *reason, int code)
{
	int	 good = !f->o.ok && is(f->o.err.kind, kind) &&
		    is(f->o.err.reason, reason) && f->o.code == code;

	if (!good)
		diag("ok %d kind %s reason %s code %d: %s", f->o.ok,
		    f->o.err.kind ? f->o.err.kind : "-", f->o.err.reason ?
		    f->o.err.reason : "-", f->o.code, f->o.err.message);
	return good;
}

/* Does the warnings array hold a line that contains s? */
static int
warned(const struct fix *f, const char *s)
{
	json_t *w;
	size_t	i;

	json_array_foreach (f->p.warnings, i, w)
		if (strstr(json_string_value(w), s) != NULL)
			return 1;
	return 0;
}

static void
t_exit(void)
{
	struct fix	 f;
	json_t		*r;

	fix_init(&f);
	judge(&f);
	r = f.o.result;
	ok(f.o.ok && f.o.code == 0 && f.o.extra == NULL && r != NULL,
	    "exit 0: ok, status 0");
	ok(num(r, "exit_code") == 0 && is(str(r, "agent"), "default") &&
	    is(str(r, "cwd"), "/workspace/agents/default") &&
	    is(str(r, "network"), "none") && num(r, "duration_ms") == 12 &&
	    json_is_true(json_object_get(r, "seccomp")) &&
	    json_is_object(json_object_get(r, "limits")),
	    "exit 0: the result's fields");
	ok(json_object_get(r, "stdout") == NULL &&
	    json_object_get(r, "signal") == NULL &&
	    json_object_get(r, "limit") == NULL &&
	    json_object_get(r, "killed_by") == NULL &&
	    json_object_get(r, "violations") == NULL &&
	    json_object_get(r, "shell") == NULL,
	    "exit 0, streamed: no output, signal, limit or violations keys");
	ok(sbx_exec_outcome_result(&f.o) == r, "the result object is o.result");
	fix_release(&f);

	fix_init(&f);
	f.p.run.exit_code = 3;
	judge(&f);
	ok(f.o.ok && f.o.code == 3 && num(f.o.result, "exit_code") == 3,
	    "exit 3: still an ok envelope, status 3");
	fix_release(&f);

	/* Captured (--json): the output is in the result. */
	fix_init(&f);
	f.p.run.capture = 1;
	sbx_capture_init(&f.p.run.out, 1 << 20, 1);
	sbx_capture_init(&f.p.run.err, 1 << 20, 1);
	sbx_capture_add(&f.p.run.out, "hi\n", 3);
	judge(&f);
	ok(f.o.ok && is(str(f.o.result, "stdout"), "hi\n") &&
	    is(str(f.o.result, "stderr"), "") &&
	    json_object_get(f.o.result, "truncated") == NULL,
	    "captured: stdout and stderr in the result");
	fix_release(&f);

	/* -c: which shell ran it; sh alone warns that pipefail is off. */
	fix_init(&f);
	f.q.shell = "make test | tee log";
	f.p.run.nopipefail = 1;
	judge(&f);
	ok(f.o.ok && is(str(f.o.result, "shell"), "sh") &&
	    warned(&f, "pipefail is unavailable") &&
	    warned(&f, "uses a pipe"),
	    "-c under sh: shell sh, the pipefail and silent-pipe warnings");
	fix_release(&f);

	fix_init(&f);
	f.p.run.exit_code = 141;
	judge(&f);
	ok(f.o.ok && f.o.code == 141 && warned(&f, "SIGPIPE"),
	    "exit 141: its status, a SIGPIPE warning");
	fix_release(&f);

	/* The output was lost (a full disk): an I/O error, not success. */
	fix_init(&f);
	f.p.run.sink_errno = ENOSPC;
	judge(&f);
	ok(f.o.ok && f.o.code == SBX_EX_IOERR &&
	    warned(&f, "cannot write the command's output"),
	    "output lost on exit 0: status 74 and a warning");
	fix_release(&f);
	fix_init(&f);
	f.p.run.sink_errno = ENOSPC;
	f.p.run.exit_code = 2;
	judge(&f);
	ok(f.o.code == 2, "output lost on exit 2: the command's status");
	fix_release(&f);
}

static void
t_signal(void)
{
	struct fix	 f;

	fix_init(&f);
	f.p.run.signo = SIGSEGV;
	f.p.run.exit_code = 128 + SIGSEGV;
	judge(&f);
	ok(f.o.ok && f.o.code == 128 + SIGSEGV &&
	    num(f.o.result, "signal") == SIGSEGV &&
	    is(str(f.o.result, "signal_name"), "SIGSEGV"),
	    "the command died of SIGSEGV: 139, signal and signal_name");
	fix_release(&f);

	fix_init(&f);
	f.p.run.killed_by = "user";
	f.p.run.user_signal = SIGTERM;
	f.p.run.signo = SIGTERM;
	f.p.run.exit_code = 128 + SIGTERM;
	judge(&f);
	ok(failed(&f, SBX_K_EXECUTION_ERROR, "interrupted", 128 + SIGTERM) &&
	    strstr(f.o.err.message, "SIGTERM") != NULL,
	    "sbx got SIGTERM: interrupted, 143");
	ok(is(str(json_object_get(f.o.extra, "result"), "killed_by"), "user"),
	    "interrupted: the result beside the failure, killed_by user");
	fix_release(&f);

	fix_init(&f);
	f.p.run.killed_by = "user";
	f.p.run.user_signal = SIGINT;
	f.p.run.exit_code = 0;	/* the command caught it and exited 0 */
	judge(&f);
	ok(failed(&f, SBX_K_EXECUTION_ERROR, "interrupted", 128 + SIGINT),
	    "sbx got SIGINT: 130 whatever the command exited with");
	fix_release(&f);

	ok(is(sbx_exec_signame(SIGKILL), "SIGKILL") &&
	    is(sbx_exec_signame(63), "SIG63"), "signal names");
}

static void
t_start(void)
{
	struct fix	 f;

	fix_init(&f);
	f.p.run.started = 0;
	f.p.run.running = 0;
	f.p.run.exit_code = 1;
	sbx_buf_append(&f.p.run.setup_err, "bwrap: no permission\n\n", 22);
	judge(&f);
	ok(failed(&f, SBX_K_UNAVAILABLE, "sandbox_setup_failed",
	    SBX_EX_FAILED) && strstr(f.o.err.message,
	    "could not be set up: bwrap: no permission") != NULL &&
	    f.o.err.message[strlen(f.o.err.message) - 1] != '\n' &&
	    f.o.err.hint[0] != '\0',
	    "bwrap failed: unavailable, 125, its message without newlines");
	ok(f.o.extra == NULL && sbx_exec_outcome_result(&f.o) == NULL,
	    "bwrap failed: no result object (nothing ran)");
	fix_release(&f);

	fix_init(&f);
	f.p.run.started = 0;
	judge(&f);
	ok(failed(&f, SBX_K_UNAVAILABLE, "sandbox_setup_failed",
	    SBX_EX_FAILED) && strstr(f.o.err.message, "without a message"),
	    "bwrap failed silently: said so");
	fix_release(&f);

	fix_init(&f);
	f.p.run.exec_errno = ENOENT;
	f.p.run.exit_code = 127;
	judge(&f);
	ok(failed(&f, SBX_K_NOT_FOUND, "command_not_found",
	    SBX_EX_NOT_FOUND) && is(f.o.err.field, "command") &&
	    strstr(f.o.err.message, "make") != NULL,
	    "command not found: not_found, 127, names the command");
	ok(json_is_object(sbx_exec_outcome_result(&f.o)),
	    "command not found: the result beside the failure");
	fix_release(&f);

	fix_init(&f);
	f.q.shell = "exit 0";
	f.p.run.exec_errno = EACCES;
	judge(&f);
	ok(failed(&f, SBX_K_EXECUTION_ERROR, "cannot_execute",
	    SBX_EX_CANNOT_EXEC) && strstr(f.o.err.message, "sh") != NULL,
	    "cannot execute: execution_error, 126, names sh for -c");
	fix_release(&f);
}

static void
t_limits(void)
{
	struct fix	 f;
	json_t		*r;

	fix_init(&f);
	f.q.timeout = "5";
	f.q.timeout_s = 5;
	f.p.run.killed_by = "timeout";
	f.p.run.limit = "idle";
	f.p.run.signo = SIGTERM;
	f.p.run.exit_code = 143;
	judge(&f);
	r = sbx_exec_outcome_result(&f.o);
	ok(failed(&f, SBX_K_TIMEOUT, "idle_timeout", SBX_EX_TIMEOUT) &&
	    is(f.o.err.field, "timeout") && f.o.err.retryable &&
	    strstr(f.o.err.message, "after 5 seconds") != NULL,
	    "idle timeout: timeout, 124, retryable");
	ok(is(str(r, "killed_by"), "timeout") &&
	    json_object_get(r, "limit") == NULL && num(r, "exit_code") == 143,
	    "idle timeout: killed_by timeout, no limit key, the status seen");
	fix_release(&f);

	fix_init(&f);
	f.p.lim.wall_timeout = 2.5;
	f.p.run.killed_by = "limit";
	f.p.run.limit = "wall_time";
	f.p.run.exit_code = 137;
	judge(&f);
	r = sbx_exec_outcome_result(&f.o);
	ok(failed(&f, SBX_K_TIMEOUT, "wall_time", SBX_EX_TIMEOUT) &&
	    is(f.o.err.field, "wall_timeout") &&
	    strstr(f.o.err.message, "2.5 seconds") != NULL &&
	    is(str(r, "limit"), "wall_time"),
	    "wall time: timeout, 124, limit wall_time");
	fix_release(&f);

	/* The OOM kill, as sbx_exec_finish_limits marks it. */
	fix_init(&f);
	f.p.lim.memory_mib = 64;
	f.p.run.killed_by = "limit";
	f.p.run.limit = "memory";
	f.p.run.signo = SIGKILL;
	f.p.run.exit_code = 137;
	f.p.events = json_pack("{s:i,s:i}", "oom_kills", 1,
	    "memory_peak_mib", 64);
	judge(&f);
	r = sbx_exec_outcome_result(&f.o);
	ok(failed(&f, SBX_K_EXECUTION_ERROR, "memory_limit", 137) &&
	    is(f.o.err.field, "memory") &&
	    strstr(f.o.err.message, "64 MiB") != NULL,
	    "out of memory: execution_error, the command's status 137");
	ok(is(str(r, "limit"), "memory") && is(str(r, "killed_by"), "limit") &&
	    num(json_object_get(r, "limit_events"), "oom_kills") == 1,
	    "out of memory: limit memory, limit_events in the result");
	fix_release(&f);

	/* Evidence without a verdict: events on a clean run. */
	fix_init(&f);
	f.p.events = json_pack("{s:i}", "cpu_usage_ms", 5);
	judge(&f);
	ok(f.o.ok && num(json_object_get(f.o.result, "limit_events"),
	    "cpu_usage_ms") == 5, "limit_events on a clean run");
	fix_release(&f);
	fix_init(&f);
	f.p.events = json_object();
	judge(&f);
	ok(f.o.ok && json_object_get(f.o.result, "limit_events") == NULL,
	    "no limit_events when there are none");
	fix_release(&f);
}

static void
t_violations(void)
{
	struct fix	 f;

	fix_init(&f);
	f.p.violations = json_pack("[{s:s,s:s,s:s},{s:s,s:i,s:s}]", "type",
	    "filesystem", "path", "/w/.git/config", "reason",
	    "protected_path", "host", "evil.example", "port", 443, "reason",
	    "not_allowed");
	judge(&f);
	ok(f.o.ok && json_array_size(json_object_get(f.o.result,
	    "violations")) == 2, "violations alone: ok, listed in the result");
	fix_release(&f);

	fix_init(&f);
	f.q.fail_on_violation = 1;
	f.p.fail_on_violation = 1;
	f.p.violations = json_pack("[{s:s,s:s,s:s},{s:s,s:i,s:s}]", "type",
	    "filesystem", "path", "/w/.git/config", "reason",
	    "protected_path", "host", "evil.example", "port", 443, "reason",
	    "not_allowed");
	judge(&f);
	ok(failed(&f, SBX_K_REJECTED, "violation", SBX_EX_NOPERM) &&
	    strstr(f.o.err.message, "1 network request and 1 file-system "
	    "access") != NULL && strstr(f.o.err.message,
	    "--fail-on-violation") != NULL,
	    "--fail-on-violation, exit 0: rejected, 77, both counted");
	ok(json_array_size(json_object_get(f.o.extra, "violations")) == 2 &&
	    json_is_object(json_object_get(f.o.extra, "result")),
	    "--fail-on-violation: violations and result beside the failure");
	fix_release(&f);

	fix_init(&f);
	f.p.fail_on_violation = 1;
	f.p.run.exit_code = 6;
	f.p.violations = json_pack("[{s:s,s:i,s:s}]", "host", "a.example",
	    "port", 80, "reason", "not_allowed");
	judge(&f);
	ok(failed(&f, SBX_K_REJECTED, "violation", 6) &&
	    strstr(f.o.err.message, "the agent's fail_on_violation") != NULL,
	    "the agent's setting, exit 6: rejected, the command's status");
	fix_release(&f);

	/* The proxy died mid-run: its record is lost, so not clean. */
	fix_init(&f);
	f.p.fail_on_violation = 1;
	f.p.relay[0].restarts = 1;
	f.p.violations = json_array();
	judge(&f);
	ok(failed(&f, SBX_K_REJECTED, "violations_unknown", SBX_EX_NOPERM),
	    "the proxy restarted under fail_on_violation: violations_unknown");
	fix_release(&f);

	fix_init(&f);
	f.p.violations = json_pack("[{s:s,s:s,s:s}]", "type", "filesystem",
	    "path", "/w/sock", "reason", "unix_socket");
	f.p.workdir = strdup("/w");
	{
		char *t = sbx_exec_violations_text(&f.p);

		ok(t != NULL && is(t, "unix socket: sock (connection refused)"),
		    "violations for people, workdir-relative: %s",
		    t ? t : "(null)");
		free(t);
	}
	fix_release(&f);
}

/* Background: the start of a job, and the supervisor's verdict. */
static void
t_job(void)
{
	struct fix	 f;
	json_t		*v;

	fix_init(&f);
	f.q.background = 1;
	snprintf(f.p.job, sizeof(f.p.job), "0123456789abcdef");
	snprintf(f.p.logpath, sizeof(f.p.logpath), "/s/jobs/x.log");
	f.p.job_pid = 42;
	f.p.job_what = 'R';
	judge(&f);
	ok(f.o.ok && f.o.code == 0 && is(str(f.o.result, "job"),
	    "0123456789abcdef") && num(f.o.result, "pid") == 42 &&
	    json_is_true(json_object_get(f.o.result, "background")) &&
	    json_object_get(f.o.result, "exit_code") == NULL,
	    "job started: ok, its id, pid and log, no exit_code");
	fix_release(&f);

	fix_init(&f);
	f.q.background = 1;
	snprintf(f.p.job, sizeof(f.p.job), "0123456789abcdef");
	f.p.job_what = 'E';
	f.p.job_val = ENOENT;
	judge(&f);
	ok(failed(&f, SBX_K_NOT_FOUND, "command_not_found", SBX_EX_NOT_FOUND) &&
	    is(str(f.o.extra, "job"), "0123456789abcdef"),
	    "job's command not found: 127, the job id beside it");
	fix_release(&f);

	fix_init(&f);
	f.q.background = 1;
	snprintf(f.p.job, sizeof(f.p.job), "0123456789abcdef");
	f.p.job_what = 'F';
	judge(&f);
	ok(failed(&f, SBX_K_UNAVAILABLE, "sandbox_setup_failed",
	    SBX_EX_FAILED) && strstr(f.o.err.message,
	    "sbx exec poll 0123456789abcdef") != NULL,
	    "job's sandbox failed: 125, poll it for why");
	fix_release(&f);

	/* The supervisor judges the run itself, as the foreground does;
	 * its output is in the log, never in the result. */
	fix_init(&f);
	f.q.background = 1;
	f.q.capture = 1;
	f.p.run.exit_code = 7;
	sbx_exec_outcome_run(&f.p, &f.o);
	ok(f.o.ok && f.o.code == 7 && num(f.o.result, "exit_code") == 7 &&
	    json_object_get(f.o.result, "stdout") == NULL &&
	    json_object_get(f.o.result, "job") == NULL,
	    "a job's run: its status, the run's result, no output keys");
	v = sbx_exec_outcome_verdict(&f.o);
	ok(json_is_true(json_object_get(v, "ok")) && num(v, "code") == 7 &&
	    json_object_size(v) == 2, "a job's verdict: {ok, code}");
	json_decref(v);
	fix_release(&f);

	fix_init(&f);
	f.q.background = 1;
	f.p.lim.wall_timeout = 1;
	f.p.run.killed_by = "limit";
	f.p.run.limit = "wall_time";
	f.p.run.exit_code = 143;
	sbx_exec_outcome_run(&f.p, &f.o);
	v = sbx_exec_outcome_verdict(&f.o);
	ok(failed(&f, SBX_K_TIMEOUT, "wall_time", SBX_EX_TIMEOUT) &&
	    json_is_false(json_object_get(v, "ok")) && num(v, "code") == 124 &&
	    is(str(v, "kind"), "timeout") && is(str(v, "reason"),
	    "wall_time") && is(str(v, "field"), "wall_timeout") &&
	    json_is_true(json_object_get(v, "retryable")) &&
	    str(v, "message") != NULL && str(v, "hint") != NULL &&
	    json_object_get(v, "tool") == NULL,
	    "a job's wall time: 124, the verdict has a failure's keys");
	ok(is(str(sbx_exec_outcome_result(&f.o), "limit"), "wall_time"),
	    "a job's wall time: the result beside it");
	json_decref(v);
	fix_release(&f);
}

/* What the sandbox printed may hold a secret: so may the verdict. */
static void
t_scrub(void)
{
	struct fix	 f;
	const char	*secret = "hunter2-sesame-77";

	fix_init(&f);
	f.p.secrets.scrub = sbx_scrub_new();
	ok(f.p.secrets.scrub != NULL && sbx_scrub_add(f.p.secrets.scrub,
	    "TOKEN", secret, strlen(secret)) == 1 &&
	    sbx_scrub_compile(f.p.secrets.scrub) == 0, "a scrubber");
	f.p.run.started = 0;
	sbx_buf_puts(&f.p.run.setup_err, "bwrap: hunter2-sesame-77: no\n");
	judge(&f);
	ok(failed(&f, SBX_K_UNAVAILABLE, "sandbox_setup_failed",
	    SBX_EX_FAILED) && strstr(f.o.err.message, secret) == NULL &&
	    strstr(f.o.err.message, "bwrap:") != NULL,
	    "the set-up error is scrubbed: %s", f.o.err.message);
	fix_release(&f);
}

int
main(void)
{
	t_exit();
	t_signal();
	t_start();
	t_limits();
	t_violations();
	t_job();
	t_scrub();
	return done_testing();
}
