/*
 * exec-session.c: sbx exec --session NAME: one command in a warm session
 * (lib/exec/warm.h).  The request is checked as a one-shot run's is, then
 * against the session's policy (an option that differs is refused, never
 * ignored); the caller's descriptors go to the session's pid 1 (or pipes
 * that sbx reads, when the output is captured, scrubbed or a terminal);
 * the outcome is judged and rendered as a one-shot run's, with `session`
 * in the result.  Linked into sbx-exec and the front-end.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "exec-jobs.h"
#include "exec-session.h"
#include "exec.h"
#include "fsutil.h"
#include "initproto.h"
#include "joblog.h"
#include "jobsup.h"
#include "layout.h"
#include "netmode.h"
#include "outcome.h"
#include "proxyclient.h"
#include "runlimits.h"
#include "settings.h"
#include "scrub.h"
#include "secret.h"
#include "settings.h"
#include "time.h"
#include "warm.h"

/* One relayed output stream. */
struct rs {
	int			fd; /* our end of the pipe, or -1 */
	int			to; /* where it streams, or -1 */
	struct sbx_capture     *cap;
	struct sbx_scrub_stream ss;
	int			scrub;
	int			direct; /* the caller's own descriptor */
	unsigned long long	seen; /* bytes relayed */
};

static int
rs_deliver(void *arg, const void *p, size_t n)
{
	struct rs *s = arg;

	s->seen += n;
	if (s->cap != NULL)
		(void)sbx_capture_add(s->cap, p, n);
	if (s->to >= 0)
		(void)sbx_fs_write_all(s->to, p, n);
	return 0;
}

/* Read what is there; 1 data, 0 end of file. */
static int
rs_read(struct rs *s)
{
	char	buf[16384];
	ssize_t n;

	n = read(s->fd, buf, sizeof(buf));
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 1;
	if (n <= 0) {
		if (s->scrub)
			(void)sbx_scrub_flush(&s->ss);
		close(s->fd);
		s->fd = -1;
		return 0;
	}
	if (s->scrub)
		(void)sbx_scrub_write(&s->ss, buf, (size_t)n);
	else
		(void)rs_deliver(s, buf, (size_t)n);
	return 1;
}

/*
 * The command's wall-clock limit, as a one-shot run gets it: the
 * defaults, config/sandbox.json's `limits`, the agent's, then the
 * request's --wall-timeout.  The session's other limits were fixed at
 * its start; this one is per command.
 */
static int
wall_limit(const struct sbx_exec_req *R, int rootfd, const char *agent,
    double *out, struct sbx_error *e)
{
	struct sbx_runlimits l;
	json_t		    *cfg = NULL;
	char		     rel[PATH_MAX];
	size_t		     k;
	int		     rc;

	sbx_limits_defaults(&l);
	if (sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	rc = sbx_limits_merge_json(&l, json_object_get(cfg, "limits"), 0,
	    "config/sandbox.json", e);
	json_decref(cfg);
	cfg = NULL;
	if (rc == -1 ||
	    sbx_layout_path(SBX_L_AGENT_CONFIG, agent, rel, sizeof(rel), e) ==
		-1 ||
	    sbx_settings_agent(rootfd, agent, &cfg, e) == -1)
		return -1;
	rc = sbx_limits_merge_json(&l, json_object_get(cfg, "limits"), 1, rel,
	    e);
	json_decref(cfg);
	if (rc == -1)
		return -1;
	for (k = 0; k + 1 < R->limit_keys.n; k += 2)
		if (strcmp(R->limit_keys.v[k], "wall_timeout") == 0 &&
		    sbx_limits_set(&l, "wall_timeout", R->limit_keys.v[k + 1],
			e) == -1)
			return -1;
	*out = l.wall_timeout;
	return 0;
}

/* The directory under base (an inside path that is the host path
 * hostfd names), or -1 when cwd is not beneath it. */
static int
cwd_under(const char *cwd, const char *base, int hostfd, struct sbx_error *e)
{
	size_t n = strlen(base);
	int    fd;

	if (strncmp(cwd, base, n) != 0 || (cwd[n] != '\0' && cwd[n] != '/'))
		return 0;
	cwd += n;
	while (*cwd == '/')
		cwd++;
	if (*cwd == '\0')
		return 1;
	if ((fd = sbx_fs_open_beneath(hostfd, cwd, O_PATH | O_DIRECTORY, e)) ==
	    -1)
		return -1;
	close(fd);
	return 1;
}

/*
 * --cwd as a one-shot run checks it (prep_cwd in lib/exec/exec.c): a
 * sandbox path without `..`, relative to HOME or absolute inside HOME or
 * a workdir of the session, an existing directory reached without a
 * symbolic link.  The absolute path goes to pid 1 in *out.
 */
static int
session_cwd(const struct sbx_exec_req *R, const json_t *rec, int rootfd,
    const char *agent, char *out, size_t outsz, struct sbx_error *e)
{
	const json_t *pol = json_object_get(rec, "policy"), *w;
	char	      home[128];
	size_t	      i;
	int	      fd, k = 0;

	if (sbx_fs_path_check(R->cwd, "cwd", e) == -1)
		return -1;
	snprintf(home, sizeof(home), "/workspace/agents/%s", agent);
	if ((size_t)snprintf(out, outsz, "%s%s%s", R->cwd[0] != '/' ? home : "",
		R->cwd[0] != '/' ? "/" : "", R->cwd) >= outsz)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "cwd", "too_long",
		    "argument `cwd` is too long");
	if ((fd = sbx_layout_open(rootfd, SBX_L_AGENT_HOME, agent,
		 O_PATH | O_DIRECTORY | O_CLOEXEC, e)) == -1)
		return -1;
	k = cwd_under(out, home, fd, e);
	close(fd);
	if (k == 0 && (w = json_object_get(pol, "workdir")) != NULL &&
	    (fd = open(json_string_value(w),
		 O_PATH | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		k = cwd_under(out, json_string_value(w), fd, e);
		close(fd);
	}
	json_array_foreach (json_object_get(pol, "workdirs"), i, w) {
		if (k != 0 ||
		    (fd = open(json_string_value(w),
			 O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
			continue;
		k = cwd_under(out, json_string_value(w), fd, e);
		close(fd);
	}
	if (k == 1)
		return 0;
	if (k == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "cwd",
		    "outside_home",
		    "argument `cwd` rejected: %s is outside %s "
		    "and the session's workdirs",
		    R->cwd, home);
	e->kind = SBX_K_INVALID_ARGS;
	e->retryable = 0;
	e->field = "cwd";
	if (e->reason && strcmp(e->reason, "symlink_in_path") == 0)
		e->reason = "symlink";
	snprintf(e->message, sizeof(e->message),
	    "argument `cwd` rejected: "
	    "%s is not a directory inside the session's home or workdirs "
	    "(missing, or reached through a symlink)",
	    R->cwd);
	return -1;
}

/*
 * What the command did that policy refused, as a one-shot run's envelope
 * has it: the proxy's record of the session since the last command (taken
 * and emptied, sbx_proxyclient_take), the credentials it used, and the
 * file-system guard's refusals (pid 1's "fsdeny" and "sockdeny" lines).
 * Commands run one at a time, so what the proxy recorded is this one's.
 */
static void
session_record(struct sbx_exec *X, const json_t *rec,
    const struct sbx_warm_cmd *c)
{
	struct sbx_error e;
	const char	*run, *l, *sp;
	json_t		*cr = NULL, *v;
	size_t		 i;
	int		 sock;

	memset(&e, 0, sizeof(e));
	if ((run = json_string_value(json_object_get(rec, "proxy_run"))) !=
	    NULL) {
		X->violations = sbx_proxyclient_take(X->root.fd, X->sb.agent,
		    run, &cr, &e);
		if (X->violations == NULL) {
			json_decref(cr);
			cr = NULL;
			json_array_append_new(X->warnings, json_string("the "
			    "proxy's record of this command is unavailable"));
		}
		if (json_is_true(json_object_get(rec, "credentials")))
			X->credentials = cr != NULL ? cr : json_array();
		else
			json_decref(cr);
	}
	json_array_foreach (c->fsdeny, i, v) {
		if ((l = json_string_value(v)) == NULL ||
		    (sp = strchr(l, ' ')) == NULL)
			continue;
		sock = strncmp(l, SBX_INIT_W_SOCKDENY " ", 9) == 0;
		if (X->violations == NULL)
			X->violations = json_array();
		json_array_append_new(X->violations, json_pack("{s:s,s:s,s:s}",
		    "type", "filesystem", "path", sp + 1, "reason",
		    sock ? "unix_socket" : "protected_path"));
	}
	sbx_scrub_json(X->secrets.scrub, X->violations);
	sbx_scrub_json(X->secrets.scrub, X->credentials);
}

/*
 * The command's own cgroup (issue 31: "its own limits, a child cgroup
 * where cgroups are writable"): the session's commands' cgroup, which
 * its supervisor made beneath the session's (warm.c, sup_cmdcg) and pid 1
 * puts each foreground command in; one runs at a time, and the sweep
 * empties it after each.  Opened here for its counters only: read before
 * the command (and the memory high-water mark restarted) and after it,
 * the difference is the command's.  Where the session has no cgroup
 * (rlimits only), or that one could not be made, the command runs under
 * the session's limits, and the envelope says which (limits.command).
 */
/* The warning of a command without a cgroup of its own. */
static void
session_only(struct sbx_exec *X, const char *why)
{
	json_array_append_new(X->warnings,
	    json_sprintf("the command runs under the session's limits only: "
			 "%s",
		why));
}

static void
cmd_cgroup_open(struct sbx_exec *X, const json_t *rec,
    struct sbx_cg_stats *before, int *peak)
{
	struct sbx_cg_where w, ses;
	struct sbx_limits   lim;
	const char	   *why;

	*peak = 0;
	memset(before, 0, sizeof(*before));
	if (!sbx_warm_cgroup_of(rec, 0, &ses, &lim) || lim.wanted == 0)
		return;
	if (!sbx_warm_cgroup_of(rec, 1, &w, &lim)) {
		why = json_string_value(json_object_get(
		    json_object_get(rec, "cgroup"), "command_why"));
		session_only(X, why != NULL ? why : "the session has none");
		return;
	}
	if (sbx_cgroup_open_where(&w, &X->cg) == -1) {
		session_only(X, strerror(errno));
		sbx_cgroup_close(&X->cg);
		X->cg.backend = SBX_CG_NONE;
		return;
	}
	X->cg.enforced = lim.wanted;
	X->lim.memory_mib = lim.memory_bytes >> 20;
	X->lim.pids = lim.pids;
	X->lim.cpus = lim.cpus;
	(void)sbx_cgroup_stats(&X->cg, before);
	*peak = sbx_cgroup_peak_reset(&X->cg) == 0;
}

/* What the commands' cgroup counted while this one ran, as a one-shot
 * run's limit events; the cgroup stays, the session's. */
static json_t *
cmd_cgroup_events(struct sbx_exec *X, const struct sbx_cg_stats *before,
    int peak)
{
	struct sbx_cg_stats st;
	json_t		   *ev;

	if (X->cg.backend == SBX_CG_NONE)
		return NULL;
	memset(&st, 0, sizeof(st));
	(void)sbx_cgroup_stats(&X->cg, &st);
	sbx_cgroup_stats_since(&st, before);
	if (!peak)
		st.have_peak = 0;
	ev = sbx_exec_cg_events_of(X, &X->run, &st);
	return ev;
}

/* limits.command of the envelope: the command's own cgroup and its
 * limits, or backend "none" (the session's limits, or rlimits, hold). */
static json_t *
cmd_cgroup_json(const struct sbx_exec *X)
{
	json_t *o;

	o = json_pack("{s:s}", "backend",
	    sbx_cgroup_backend_name(X->cg.backend));
	if (X->cg.backend == SBX_CG_NONE)
		return o;
	if (X->cg.enforced & SBX_LIM_MEMORY)
		json_object_set_new(o, "memory_mib",
		    json_integer((json_int_t)X->lim.memory_mib));
	if (X->cg.enforced & SBX_LIM_PIDS)
		json_object_set_new(o, "pids",
		    json_integer((json_int_t)X->lim.pids));
	if (X->cg.enforced & SBX_LIM_CPUS)
		json_object_set_new(o, "cpus", json_real(X->lim.cpus));
	return o;
}

/*
 * The command's environment on top of the session's: the agent's secrets
 * as they are now (the session's environment has none of their values,
 * secrets_per_command: a secret set, changed or removed since the start
 * is seen by the next command), except those a credential rule binds
 * (their placeholders are the session's), then the run's --env, which
 * overrides a secret as in a one-shot run.  The values and the scrubber
 * go to X->secrets (released, wiped, with X).
 */
static int
session_secrets(const struct sbx_exec_req *R, const json_t *rec,
    struct sbx_exec *X, const char *agent, struct sbx_strv *env,
    struct sbx_error *e)
{
	const json_t	      *pol = json_object_get(rec, "policy"), *v;
	struct sbx_secret_auth a;
	struct sbx_strv	       sel = SBX_STRV_INIT;
	const char	      *pw = getenv("SBX_SECRET_PASSPHRASE"), *as;
	size_t		       i, k, nl;
	int		       rc = 0, bound;

	memset(&a, 0, sizeof(a));
	if (pw != NULL && *pw != '\0') {
		a.passphrase = pw;
		a.passphrase_len = strlen(pw);
	}
	if (!json_is_true(json_object_get(pol, "no_secrets")) &&
	    sbx_secret_store_exists(X->root.fd, agent)) {
		json_array_foreach (json_object_get(pol, "secrets"), i, v)
			if (json_is_string(v))
				sbx_strv_push(&sel, json_string_value(v));
		rc = sbx_secret_load_env(X->root.fd, agent, sel.v, sel.n, &a,
		    &X->secrets, e);
		sbx_strv_release(&sel);
		if (rc == -1)
			return -1;
	}
	for (i = 0; i < X->secrets.n; i++) {
		as = X->secrets.assign[i];
		nl = strcspn(as, "=");
		bound = 0;
		json_array_foreach (json_object_get(rec, "bound_secrets"), k,
		    v)
			if (json_is_string(v) &&
			    strlen(json_string_value(v)) == nl &&
			    strncmp(json_string_value(v), as, nl) == 0)
				bound = 1;
		for (k = 0; !bound && k < R->env.n; k++)
			if (strncmp(R->env.v[k], as, nl + 1) == 0)
				bound = 1; /* --env wins */
		if (!bound && sbx_strv_push(env, as) == -1)
			return sbx_error_sys(e, "nomem", "environment");
	}
	for (k = 0; k < R->env.n; k++)
		if (sbx_strv_push(env, R->env.v[k]) == -1)
			return sbx_error_sys(e, "nomem", "environment");
	return 0;
}

/* The copies of the values: wiped, not just freed. */
static void
strv_wipe(struct sbx_strv *v)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		explicit_bzero(v->v[i], strlen(v->v[i]));
	sbx_strv_release(v);
}

/*
 * --background with --session: a job of the session's, under the same
 * record, log and supervisor as a one-shot job's (jobsup.c), whose run
 * is the session's (sbx_warm_job_run): started under a subreaper of its
 * own in the session's sandbox, it outlives the foreground commands and
 * ends with the session.
 */
static int
session_job(struct sbx_exec_req *R, struct sbx_exec *X,
    const struct exec_session_out *out, json_t *rec, const char *agent,
    const char *cwd, char *const *env)
{
	struct sbx_error	e;
	struct sbx_exec_outcome o;
	json_t		       *cfg = NULL, *res;
	int			rc;
	/* The job supervisor's, for its whole life (run_arg). */
	static struct sbx_warm_cmd c;

	memset(&e, 0, sizeof(e));
	memset(&c, 0, sizeof(c));
	c.fd[0] = c.fd[1] = c.fd[2] = -1;
	c.exit_code = -1;
	c.argv = R->argv;
	c.shell = R->shell;
	c.cwd = cwd;
	c.env = env; /* the secrets' values and --env (session_secrets) */
	if (sbx_settings_global(X->root.fd, &cfg, &e) == -1 ||
	    sbx_joblog_cap_config(cfg, &X->log_cap, &e) == -1) {
		json_decref(cfg);
		goto fail;
	}
	json_decref(cfg);
	X->req = R;
	X->sb.agent = agent;
	snprintf(X->cwd, sizeof(X->cwd), "%s",
	    cwd != NULL ? cwd : json_string_value(json_object_get(rec, "cwd")));
	(void)sbx_netmode_parse(
	    json_string_value(json_object_get(rec, "network")), &X->network);
	if (X->warnings == NULL)
		X->warnings = json_array();
	X->run_hook = sbx_warm_job_run;
	X->run_arg = &c;
	fflush(NULL);
	if (sbx_jobsup_start(X, &e) == -1)
		goto fail;
	sbx_exec_outcome(X, &o);
	if ((res = sbx_exec_outcome_result(&o)) != NULL)
		json_object_set_new(res, "session",
		    json_string(R->session_name));
	exec_render_outcome(&o, NULL, X->warnings, X->job, out->json,
	    out->quiet, out->json || out->envelope ? out->emit : NULL,
	    out->tool);
	sbx_exec_outcome_release(&o);
	json_decref(rec);
	rc = o.code;
	return rc;
fail:
	json_decref(rec);
	return out->report(&e);
}

int
exec_session(struct sbx_exec_req *R, struct sbx_exec *X,
    const struct exec_session_out *out)
{
	struct sbx_error	e;
	struct sbx_exec_outcome o;
	struct sbx_warm_cmd	c;
	struct sbx_strv		senv = SBX_STRV_INIT;
	struct sbx_cg_stats	cgbefore;
	int			cgpeak = 0;
	struct rs		rs[2];
	struct pollfd		pfd[4];
	json_t		       *rec = NULL, *res;
	const char	       *agent, *name = R->session_name;
	char			cwdbuf[PATH_MAX];
	char		       *v;
	int			runfd, conn = -1, rc, relay, i, p[2], pin[2];
	int			devnull = -1, stdin_pump = -1, stdin_w = -1;
	int			ended = 0, tty_in;
	long long		t0, last, idle_ms, wall_ms, now, until;
	double			wall;

	memset(&e, 0, sizeof(e));
	memset(&c, 0, sizeof(c));
	c.fd[0] = c.fd[1] = c.fd[2] = -1;
	c.exit_code = -1;
	rs[0].fd = rs[1].fd = -1;
	if (sbx_root_resolve(R->home, &X->root, &e) == -1 ||
	    sbx_root_open(&X->root, 0, &e) == -1)
		goto fail;
	if ((runfd = sbx_layout_open(X->root.fd, SBX_L_RUN, NULL,
		 O_RDONLY | O_DIRECTORY | O_CLOEXEC, &e)) == -1) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "session", "no_such_session",
		    "no session named %s", name);
		goto fail;
	}
	rec = sbx_warmrec_load(runfd, name, &e);
	close(runfd);
	if (rec == NULL)
		goto fail;
	agent = json_string_value(json_object_get(rec, "agent"));
	/* The session's agent unless one is named (then it must be it). */
	if (R->agent == NULL && getenv("SBX_AGENT") != NULL &&
	    *getenv("SBX_AGENT") != '\0')
		R->agent = getenv("SBX_AGENT");
	if (sbx_warm_check_req(R, rec, &e) == -1)
		goto fail;
	if (R->agent == NULL)
		R->agent = agent;
	if ((rc = sbx_exec_validate(R, &e)) != 0) {
		if (rc == -2)
			goto usage;
		goto fail;
	}
	/* The agent's secrets as they are now, injected and scrubbed as a
	 * one-shot run's are (session_secrets). */
	if (session_secrets(R, rec, X, agent, &senv, &e) == -1)
		goto fail;
	if (R->cwd != NULL &&
	    session_cwd(R, rec, X->root.fd, agent, cwdbuf, sizeof(cwdbuf),
		&e) == -1)
		goto fail;
	if (R->background) {
		rc = session_job(R, X, out, rec, agent,
		    R->cwd != NULL ? cwdbuf : NULL, senv.v);
		strv_wipe(&senv);
		return rc;
	}
	idle_ms = (long long)(R->timeout_s * 1000.0);
	if (wall_limit(R, X->root.fd, agent, &wall, &e) == -1)
		goto fail;
	wall_ms = (long long)(wall * 1000.0);
	/*
	 * The command gets the caller's descriptors as they are, the
	 * cheapest way, unless sbx must see the bytes (captured for the
	 * envelope, scrubbed, an idle timeout to watch) or they are a
	 * terminal (which the sandbox never holds: it could read from it
	 * or push input into it).
	 */
	relay = R->capture || X->secrets.scrub != NULL || idle_ms > 0;
	tty_in = isatty(0);
	for (i = 0; i < 2; i++) {
		rs[i].to = R->capture ? (R->capture_tee ? 2 : -1) : 1 + i;
		rs[i].cap =
		    R->capture ? (i == 0 ? &X->run.out : &X->run.err) : NULL;
		if (rs[i].cap != NULL)
			sbx_capture_init(rs[i].cap, R->max_output_n, 1);
		rs[i].direct = 0;
		rs[i].seen = 0;
		if (!relay && !isatty(1 + i)) {
			c.fd[1 + i] = 1 + i;
			rs[i].direct = 1;
			continue;
		}
		if (pipe2(p, O_CLOEXEC) == -1) {
			sbx_error_sys(&e, "pipe_failed", "pipe");
			goto fail;
		}
		rs[i].fd = p[0];
		c.fd[1 + i] = p[1];
		if (X->secrets.scrub != NULL) {
			rs[i].scrub = 1;
			sbx_scrub_stream_init(&rs[i].ss, X->secrets.scrub,
			    rs_deliver, &rs[i]);
		}
	}
	X->run.capture = R->capture;
	if (R->stdin_v == SBX_EXEC_STDIN_NULL ||
	    (R->stdin_v == SBX_EXEC_STDIN_AUTO && R->capture && tty_in)) {
		if ((devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
			sbx_error_sys(&e, "open_failed", "/dev/null");
			goto fail;
		}
		c.fd[0] = devnull;
	} else if (tty_in) {
		if (pipe2(pin, O_CLOEXEC) == -1) {
			sbx_error_sys(&e, "pipe_failed", "pipe");
			goto fail;
		}
		c.fd[0] = pin[0];
		stdin_w = pin[1];
		stdin_pump = 0;
	} else
		c.fd[0] = 0;
	c.argv = R->argv;
	c.shell = R->shell;
	c.cwd = R->cwd != NULL ? cwdbuf : NULL;
	c.env = senv.v;
	if (X->warnings == NULL)
		X->warnings = json_array();
	cmd_cgroup_open(X, rec, &cgbefore, &cgpeak);
	if ((conn = sbx_warm_connect(X->root.fd, name, &e)) == -1 ||
	    sbx_warm_send(conn, &c, &e) == -1)
		goto fail;
	t0 = last = sbx_now_ms();
	/* Our copies of the command's ends go: its end of file is ours. */
	for (i = 1; i < 3; i++)
		if (rs[i - 1].fd >= 0)
			close(c.fd[i]);
	if (stdin_w >= 0)
		close(c.fd[0]);
	if (devnull >= 0)
		close(devnull);
	devnull = -1;
	while (!ended || rs[0].fd >= 0 || rs[1].fd >= 0) {
		pfd[0].fd = ended ? -1 : conn;
		pfd[0].events = POLLIN;
		pfd[1].fd = rs[0].fd;
		pfd[1].events = POLLIN;
		pfd[2].fd = rs[1].fd;
		pfd[2].events = POLLIN;
		pfd[3].fd = !ended ? stdin_pump : -1;
		pfd[3].events = POLLIN;
		now = sbx_now_ms();
		until = -1;
		if (!ended && idle_ms > 0)
			until = last + idle_ms;
		if (!ended && wall_ms > 0 &&
		    (until < 0 || t0 + wall_ms < until))
			until = t0 + wall_ms;
		if (until >= 0 && now >= until) {
			if (wall_ms > 0 && now >= t0 + wall_ms) {
				X->run.killed_by = "limit";
				X->run.limit = "wall_time";
			} else {
				X->run.killed_by = "timeout";
				X->run.limit = "idle";
			}
			(void)sbx_warm_kill(conn);
			idle_ms = wall_ms = 0;
			continue;
		}
		if (poll(pfd, 4, until < 0 ? -1 : (int)(until - now)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < 2; i++)
			if (pfd[1 + i].fd >= 0 &&
			    (pfd[1 + i].revents &
				(POLLIN | POLLHUP | POLLERR)) &&
			    rs_read(&rs[i]))
				last = sbx_now_ms();
		if (pfd[3].fd >= 0 && (pfd[3].revents & (POLLIN | POLLHUP))) {
			char	b[4096];
			ssize_t n = read(0, b, sizeof(b));

			if (n <= 0 ||
			    sbx_fs_write_all(stdin_w, b, (size_t)n) == -1) {
				stdin_pump = -1;
				close(stdin_w);
				stdin_w = -1;
			}
		}
		if (pfd[0].fd >= 0 &&
		    (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			rc = sbx_warm_recv(conn, &c, &e);
			if (rc == -1)
				goto fail;
			if (rc == 1) {
				ended = 1;
				if (stdin_w >= 0) {
					close(stdin_w);
					stdin_w = -1;
				}
			}
		}
	}
	close(conn);
	conn = -1;
	if (c.fork_errno != 0) {
		errno = c.fork_errno;
		sbx_error_sys(&e, "pids_exhausted",
		    "session %s has no room "
		    "for the command's process",
		    name);
		e.kind = SBX_K_UNAVAILABLE;
		e.field = "pids";
		e.retryable = 1;
		sbx_error_hint(&e,
		    "its task limit (--pids) is reached; the "
		    "session recovers as soon as processes end: retry, or "
		    "`sbx session stop %s`",
		    name);
		goto fail;
	}
	if (c.cgroup_errno != 0) {
		/* Fail closed: without its cgroup, its limits would not
		 * hold; it was not run. */
		errno = c.cgroup_errno;
		sbx_error_sys(&e, "cgroup_failed",
		    "the command could not enter its cgroup in session %s "
		    "and was not run",
		    name);
		goto fail;
	}
	X->run.started = 1;
	/* What the command wrote, for the "exited 0 with no output" warning:
	 * unknown (taken as some) when it wrote to the caller's descriptors
	 * itself. */
	if (!R->capture) {
		X->run.out.total = rs[0].direct ? 1 : rs[0].seen;
		X->run.err.total = rs[1].direct ? 1 : rs[1].seen;
	}
	X->run.running = c.running;
	X->run.exec_errno = c.exec_errno;
	X->run.exit_code = c.exit_code;
	X->run.signo = c.signo;
	X->run.duration_ms = sbx_now_ms() - t0;
	if (X->run.killed_by != NULL && strcmp(X->run.killed_by, "limit") == 0)
		X->lim.wall_timeout = wall;
	snprintf(X->cwd, sizeof(X->cwd), "%s",
	    R->cwd != NULL ? cwdbuf :
			     json_string_value(json_object_get(rec, "cwd")));
	X->sb.agent = agent;
	(void)sbx_netmode_parse(
	    json_string_value(json_object_get(rec, "network")), &X->network);
	X->limits = json_deep_copy(json_object_get(rec, "limits"));
	if (X->limits != NULL) {
		json_object_set_new(X->limits, "command", cmd_cgroup_json(X));
		/* The command's own, not the session's (which has none). */
		json_object_set_new(X->limits, "wall_timeout",
		    wall == (double)(json_int_t)wall ?
			json_integer((json_int_t)wall) :
			json_real(wall));
	}
	/* The command's cgroup: its counters (an OOM kill is killed_by
	 * "limit", limit "memory", as in a one-shot run). */
	X->events = cmd_cgroup_events(X, &cgbefore, cgpeak);
	sbx_cgroup_close(&X->cg);
	X->req = R;
	session_record(X, rec, &c);
	sbx_exec_outcome_run(X, &o);
	if ((res = sbx_exec_outcome_result(&o)) != NULL)
		json_object_set_new(res, "session", json_string(name));
	v = NULL;
	exec_render_outcome(&o, v, X->warnings, NULL, out->json, out->quiet,
	    out->json || out->envelope ? out->emit : NULL, out->tool);
	sbx_exec_outcome_release(&o);
	json_decref(rec);
	json_decref(c.fsdeny);
	strv_wipe(&senv);
	return o.code;
usage:
	strv_wipe(&senv);
	json_decref(rec);
	return out->usage(&e);
fail:
	strv_wipe(&senv);
	if (conn >= 0)
		close(conn);
	if (devnull >= 0)
		close(devnull);
	sbx_cgroup_close(&X->cg);
	json_decref(rec);
	json_decref(c.fsdeny);
	return out->report(&e);
}
