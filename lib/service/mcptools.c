/*
 * mcptools.c: a tool call as a child program's argv and stdin, and the
 * child's envelope as an MCP tool result (mcptools.h).
 *
 * Arguments reach the children as separate argv entries or as JSON on
 * stdin, never through a shell: `shell_run`'s command string is run by
 * the sandbox's own /bin/sh, inside the sandbox, as `sbx exec -c` does.
 * Operands that come from the client follow `--`, so that a path or a
 * pattern that starts with `-` is never taken for an option.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <jansson.h>

#include "envelope.h"
#include "mcptools.h"
#include "netmode.h"

void
sbx_mcp_spawn_release(struct sbx_mcp_spawn *sp)
{
	sbx_strv_release(&sp->argv);
	sbx_buf_release(&sp->input);
}

static int
nomem(struct sbx_error *e)
{
	return sbx_error_sys(e, "nomem", "out of memory");
}

static const char *
str(const json_t *args, const char *k)
{
	return json_string_value(json_object_get(args, k));
}

/* "--opt VALUE" when args has k (a string, an integer or a number). */
static int
opt(struct sbx_strv *v, const json_t *args, const char *k, const char *o)
{
	const json_t *x = json_object_get(args, k);

	if (x == NULL)
		return 0;
	if (json_is_string(x))
		return sbx_strv_push(v, o) == -1 ||
			sbx_strv_push(v, json_string_value(x)) == -1 ?
		    -1 :
		    0;
	if (json_is_integer(x))
		return sbx_strv_push(v, o) == -1 ||
			sbx_strv_pushf(v, "%lld",
			    (long long)json_integer_value(x)) == -1 ?
		    -1 :
		    0;
	if (json_is_real(x))
		return sbx_strv_push(v, o) == -1 ||
			sbx_strv_pushf(v, "%.17g", json_real_value(x)) == -1 ?
		    -1 :
		    0;
	return 0;
}

/* "--flag" when args has k true. */
static int
flag(struct sbx_strv *v, const json_t *args, const char *k, const char *o)
{
	return json_is_true(json_object_get(args, k)) ? sbx_strv_push(v, o) : 0;
}

/* argv[0] and the options every program takes. */
static int
prog(struct sbx_strv *v, const struct sbx_mcp_who *w, const char *name)
{
	if (sbx_strv_pushf(v, "%s/sbx-%s", w->libexec, name) == -1)
		return -1;
	return 0;
}

static int
common(struct sbx_strv *v, const struct sbx_mcp_who *w)
{
	if (sbx_strv_push(v, "--agent") == -1 ||
	    sbx_strv_push(v, w->agent) == -1 || sbx_strv_push(v, "--json"))
		return -1;
	if (w->home != NULL &&
	    (sbx_strv_push(v, "--home") == -1 ||
		sbx_strv_push(v, w->home) == -1))
		return -1;
	return 0;
}

/*
 * A model picks the network of its runs only within the agent's
 * settings: `sbx exec --network outbound` is the user's explicit choice
 * on a command line and wins over the settings, but a tool call is not
 * the user, so a mode beyond the agent's `network` (none unless set) is
 * refused here, before sbx exec could grant it.
 */
static int
network_check(const json_t *args, const struct sbx_mcp_who *w,
    struct sbx_error *e)
{
	const char *want = str(args, "network");
	const char *max = w->network_max ? w->network_max :
					   sbx_netmode_name(SBX_NETMODE_NONE);

	/* By the table's rank: a name it does not know ranks as none (sbx
	 * exec refuses it). */
	if (want == NULL || sbx_netmode_rank(want) <= sbx_netmode_rank(max))
		return 0;
	sbx_error_set(e, SBX_K_REJECTED, "network", "network_not_allowed",
	    "agent %s may use network %s at most; %s was asked", w->agent, max,
	    want);
	sbx_error_hint(e,
	    "the user can allow more with: sbx config set "
	    "network %s --agent %s",
	    want, w->agent);
	return -1;
}

/*
 * The request envelope of sbx exec (lib/exec/execreq.c) for a run:
 * command (a shell string: `shell`) or argv (`command`), cwd, timeout,
 * env (an object here, NAME=VALUE strings there), network,
 * fail_on_violation.  stdin is the
 * request itself, so the command's stdin is /dev/null.
 */
static int
exec_request(const json_t *args, const struct sbx_mcp_who *w, int bg,
    struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	json_t	   *q, *env, *x;
	const char *k;
	char	   *s;
	int	    rc;

	if (network_check(args, w, e) == -1)
		return -1;
	if ((json_object_get(args, "command") != NULL) ==
	    (json_object_get(args, "argv") != NULL))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "command_or_argv",
		    "give `command` (a shell command "
		    "line) or `argv` (an argument vector), exactly one");
	if ((q = json_pack("{s:s,s:s}", "agent", w->agent, "stdin", "null")) ==
	    NULL)
		return nomem(e);
	if ((x = json_object_get(args, "command")) != NULL)
		json_object_set(q, "shell", x);
	if ((x = json_object_get(args, "argv")) != NULL)
		json_object_set(q, "command", x);
	if ((x = json_object_get(args, "cwd")) != NULL)
		json_object_set(q, "cwd", x);
	if ((x = json_object_get(args, "network")) != NULL)
		json_object_set(q, "network", x);
	if (!bg && (x = json_object_get(args, "timeout")) != NULL)
		json_object_set(q, "timeout", x);
	if (!bg && json_is_true(json_object_get(args, "fail_on_violation")))
		json_object_set_new(q, "fail_on_violation", json_true());
	if (bg)
		json_object_set_new(q, "background", json_true());
	/* In the client's session unless the call asks a network of its
	 * own (the session's is fixed): the same sandbox, warm. */
	else if (w->session != NULL && json_object_get(args, "network") ==
	    NULL)
		json_object_set_new(q, "session", json_string(w->session));
	if (json_object_size(json_object_get(args, "env")) > 0) {
		env = json_array();
		json_object_foreach (json_object_get(args, "env"), k, x)
			if ((s = NULL,
				asprintf(&s, "%s=%s", k,
				    json_string_value(x))) == -1 ||
			    json_array_append_new(env, json_string(s)) == -1) {
				free(s);
				json_decref(env);
				json_decref(q);
				return nomem(e);
			} else
				free(s);
		json_object_set_new(q, "env", env);
	}
	s = json_dumps(q, JSON_COMPACT);
	json_decref(q);
	if (s == NULL)
		return nomem(e);
	rc = sbx_buf_puts(&sp->input, s);
	free(s);
	if (rc == -1 || prog(&sp->argv, w, "exec") == -1 ||
	    sbx_strv_push(&sp->argv, "--request") == -1 ||
	    sbx_strv_push(&sp->argv, "-") == -1 ||
	    sbx_strv_push(&sp->argv, "--envelope-fd") == -1 ||
	    sbx_strv_push(&sp->argv, "3") == -1 ||
	    /* Its notes for people (warnings, the proxy's denials) are in
	     * the envelope: on stderr they would read as the command's. */
	    sbx_strv_push(&sp->argv, "-q") == -1 ||
	    (w->home != NULL &&
		(sbx_strv_push(&sp->argv, "--home") == -1 ||
		    sbx_strv_push(&sp->argv, w->home) == -1)))
		return nomem(e);
	sp->envelope = SBX_MCP_ENV_FD;
	sp->tool = "exec";
	sp->background = bg;
	return 0;
}

/* sandbox_process: start (a background run), or sbx exec's job
 * subcommands. */
static int
process(const json_t *args, const struct sbx_mcp_who *w,
    struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	const char	*act = str(args, "action"), *job = str(args, "job");
	struct sbx_strv *v = &sp->argv;

	if (strcmp(act, "start") == 0)
		return exec_request(args, w, 1, sp, e);
	if (strcmp(act, "list") != 0 && job == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "job",
		    "missing_property",
		    "argument `job` is required for "
		    "action `%s`: the id that start returned",
		    act);
	if (prog(v, w, "exec") == -1 ||
	    sbx_strv_push(v, strcmp(act, "list") == 0 ? "ps" : act) == -1 ||
	    (job != NULL && strcmp(act, "list") != 0 &&
		sbx_strv_push(v, job) == -1) ||
	    common(v, w) == -1)
		return nomem(e);
	if (strcmp(act, "poll") == 0 || strcmp(act, "wait") == 0)
		if (opt(v, args, "tail_lines", "--tail-lines") == -1)
			return nomem(e);
	if (strcmp(act, "wait") == 0 &&
	    opt(v, args, "timeout", "--timeout") == -1)
		return nomem(e);
	if (strcmp(act, "kill") == 0 && flag(v, args, "force", "--force") == -1)
		return nomem(e);
	sp->tool = strcmp(act, "list") == 0 ? "exec.ps" : act;
	return 0;
}

/* The file tools: sbx file SUB [options] -- OPERAND. */
static int
file(const char *sub, const json_t *args, const struct sbx_mcp_who *w,
    struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	struct sbx_strv *v = &sp->argv;
	const json_t	*x;
	const char	*operand;
	size_t		 i;
	int		 rc = 0;

	if (prog(v, w, "file") == -1 || sbx_strv_push(v, sub) == -1 ||
	    common(v, w) == -1)
		return nomem(e);
	operand = str(args, strcmp(sub, "search") == 0 ? "pattern" : "path");
	if (strcmp(sub, "read") == 0)
		rc = opt(v, args, "start_line", "--start-line") |
		    opt(v, args, "line_count", "--line-count") |
		    opt(v, args, "tail_lines", "--tail-lines") |
		    opt(v, args, "max_chars", "--max-chars");
	else if (strcmp(sub, "search") == 0) {
		rc = opt(v, args, "path", "--path") |
		    flag(v, args, "files", "--files") |
		    opt(v, args, "context", "--context") |
		    opt(v, args, "max", "--max");
		json_array_foreach (json_object_get(args, "glob"), i, x)
			rc |= sbx_strv_push(v, "--glob") |
			    sbx_strv_push(v, json_string_value(x));
	} else if (strcmp(sub, "write") == 0) {
		rc = flag(v, args, "create_dirs", "--create-dirs") |
		    opt(v, args, "mode", "--mode");
		x = json_object_get(args, "content");
		rc |= sbx_buf_append(&sp->input, json_string_value(x),
		    json_string_length(x));
	} else if (strcmp(sub, "edit") == 0)
		rc = opt(v, args, "old", "--old") |
		    opt(v, args, "new", "--new") |
		    flag(v, args, "all", "--all");
	else if (strcmp(sub, "list") == 0) {
		rc = opt(v, args, "depth", "--depth");
		if (operand == NULL)
			operand = ".";
	}
	if (rc != 0 ||
	    (operand != NULL &&
		(sbx_strv_push(v, "--") == -1 ||
		    sbx_strv_push(v, operand) == -1)))
		return nomem(e);
	sp->tool = NULL;
	return 0;
}

static int
install(const json_t *args, const struct sbx_mcp_who *w,
    struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	struct sbx_strv *v = &sp->argv;
	const json_t	*x;
	size_t		 i;

	if (prog(v, w, "install") == -1 || common(v, w) == -1 ||
	    opt(v, args, "manager", "--manager") == -1 ||
	    opt(v, args, "timeout", "--timeout") == -1 ||
	    sbx_strv_push(v, "--") == -1)
		return nomem(e);
	json_array_foreach (json_object_get(args, "packages"), i, x)
		if (sbx_strv_push(v, json_string_value(x)) == -1)
			return nomem(e);
	sp->tool = "install";
	return 0;
}

/* A plugin tool: sbx plugin run ID TOOL --param k=v... (values that are
 * not strings as JSON text).  The entry of `sbx tools` names the plugin
 * and the tool ("plugin", "tool"): its name (plugin-ID-TOOL, perhaps cut
 * and hashed) is for clients, not to be taken apart. */
static int
plugin(const json_t *pl, const json_t *args, const struct sbx_mcp_who *w,
    struct sbx_mcp_spawn *sp, struct sbx_error *e)
{
	struct sbx_strv *v = &sp->argv;
	const char	*id = str(pl, "plugin"), *tool = str(pl, "tool"), *k;
	const json_t	*x;
	char		*s;
	int		 rc;

	if (id == NULL || tool == NULL)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "name",
		    "plugin_entry",
		    "the plugin tool's entry in `sbx plugin "
		    "tools` "
		    "names no plugin and tool");
	if (prog(v, w, "plugin") == -1 || sbx_strv_push(v, "run") == -1 ||
	    common(v, w) == -1)
		return nomem(e);
	json_object_foreach ((json_t *)args, k, x) {
		s = json_is_string(x) ?
		    strdup(json_string_value(x)) :
		    json_dumps(x, JSON_COMPACT | JSON_ENCODE_ANY);
		rc = s == NULL || sbx_strv_push(v, "--param") == -1 ||
		    sbx_strv_pushf(v, "%s=%s", k, s) == -1;
		free(s);
		if (rc)
			return nomem(e);
	}
	if (sbx_strv_push(v, "--") == -1 || sbx_strv_push(v, id) == -1 ||
	    sbx_strv_push(v, tool) == -1)
		return nomem(e);
	sp->tool = "plugin.run";
	return 0;
}

int
sbx_mcp_tool_spawn(const struct sbx_mcp_who *w, const char *name,
    const json_t *pl, const json_t *args, struct sbx_mcp_spawn *sp,
    struct sbx_error *e)
{
	struct sbx_strv *v = &sp->argv;

	sp->envelope = SBX_MCP_ENV_STDOUT;
	sp->background = 0;
	sp->tool = name;
	if (pl != NULL)
		return plugin(pl, args, w, sp, e);
	if (strcmp(name, "shell_run") == 0)
		return exec_request(args, w, 0, sp, e);
	if (strcmp(name, "sandbox_process") == 0)
		return process(args, w, sp, e);
	if (strncmp(name, "file_", 5) == 0)
		return file(name + 5, args, w, sp, e);
	if (strcmp(name, "sandbox_install") == 0)
		return install(args, w, sp, e);
	if (strcmp(name, "secret_check") == 0 ||
	    strcmp(name, "secret_request") == 0) {
		/* secret_request never takes a value: it checks whether the
		 * secret is there and tells the user how to set it. */
		if (prog(v, w, "secret") == -1 ||
		    sbx_strv_push(v, "check") == -1 || common(v, w) == -1 ||
		    sbx_strv_push(v, "--") == -1 ||
		    sbx_strv_push(v, str(args, "name")) == -1)
			return nomem(e);
		sp->tool = "secret.check";
		return 0;
	}
	return sbx_error_set(e, SBX_K_NOT_FOUND, "name", "unknown_tool",
	    "no tool %.64s", name);
}

/* An envelope for a child that left none: the program is missing (126,
 * 127: exec failed) or it died. */
static json_t *
made_envelope(const struct sbx_mcp_done *d)
{
	struct sbx_error e;
	json_t		*extra = NULL;

	if (WIFEXITED(d->status) &&
	    (WEXITSTATUS(d->status) == 126 || WEXITSTATUS(d->status) == 127))
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "name", "program_missing",
		    "the program behind tool %s is not installed (exit %d)",
		    d->name, WEXITSTATUS(d->status));
	else if (WIFSIGNALED(d->status))
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL, "killed",
		    "the program behind tool %s was killed by signal %d",
		    d->name, WTERMSIG(d->status));
	else
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL, "no_envelope",
		    "the program behind tool %s exited with status %d "
		    "without a result",
		    d->name,
		    WIFEXITED(d->status) ? WEXITSTATUS(d->status) : -1);
	if (d->err != NULL && *d->err)
		extra = json_pack("{s:o}", "stderr",
		    sbx_json_bytes(d->err, strlen(d->err)));
	return sbx_envelope_err(d->name, &e, extra);
}

static void
text_failure(struct sbx_buf *t, const json_t *env)
{
	const char *field = str(env, "field"), *reason = str(env, "reason");
	const char *hint = str(env, "hint");

	sbx_buf_printf(t, "error: %s",
	    str(env, "kind") ? str(env, "kind") : "failed");
	if (reason != NULL)
		sbx_buf_printf(t, " (%s)", reason);
	if (field != NULL)
		sbx_buf_printf(t, " in argument `%s`", field);
	sbx_buf_printf(t, ": %s\n",
	    str(env, "message") ? str(env, "message") : "");
	if (hint != NULL)
		sbx_buf_printf(t, "hint: %s\n", hint);
	if (json_is_true(json_object_get(env, "retryable")))
		sbx_buf_puts(t, "(retryable)\n");
}

static void
text_run(struct sbx_buf *t, const json_t *res)
{
	const json_t *x;
	const char   *o = str(res, "stdout"), *er = str(res, "stderr");

	if ((x = json_object_get(res, "exit_code")) != NULL)
		sbx_buf_printf(t, "exit code: %lld\n",
		    (long long)json_integer_value(x));
	if (str(res, "signal_name") != NULL)
		sbx_buf_printf(t, "killed by signal %s\n",
		    str(res, "signal_name"));
	if (str(res, "killed_by") != NULL)
		sbx_buf_printf(t, "killed by: %s\n", str(res, "killed_by"));
	sbx_buf_printf(t, "stdout:\n%s%s", o && *o ? o : "(empty)\n",
	    o && *o && o[strlen(o) - 1] != '\n' ? "\n" : "");
	sbx_buf_printf(t, "stderr:\n%s%s", er && *er ? er : "(empty)\n",
	    er && *er && er[strlen(er) - 1] != '\n' ? "\n" : "");
}

/* secret_request's own envelope, from secret check's. */
static json_t *
secret_request(const struct sbx_mcp_done *d, json_t *env)
{
	json_t *res = json_object_get(env, "result");
	int	present = json_is_true(json_object_get(env, "ok")) &&
	    json_is_true(json_object_get(res, "present"));
	char	   *cmd = NULL;
	const char *name;
	json_t	   *out;

	if (!json_is_true(json_object_get(env, "ok")) &&
	    strcmp(str(env, "kind") ? str(env, "kind") : "", "not_found") != 0)
		return json_incref(env);
	name = str(d->args, "name") ? str(d->args, "name") : "NAME";
	if (asprintf(&cmd, "sbx secret set %s --agent %s", name, d->agent) ==
	    -1)
		return NULL;
	out = sbx_envelope_ok("secret.request",
	    json_pack("{s:s,s:b,s:s,"
		      "s:s}",
		"name", name, "present", present, "command", cmd, "message",
		present ?
		    "the secret is set: shell_run commands find "
		    "it in their environment" :
		    "ask the user to run this command in "
		    "a terminal; the value is typed there, never sent through this "
		    "conversation"),
	    NULL);
	free(cmd);
	return out;
}

static json_t *
content(const char *text, json_t *env, int structured, int is_error)
{
	json_t *r;
	char   *s = NULL;

	if (!structured &&
	    (s = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return NULL;
	r = json_pack("{s:[{s:s,s:s}],s:b}", "content", "type", "text", "text",
	    text, "isError", is_error);
	if (r != NULL && s != NULL)
		json_array_append_new(json_object_get(r, "content"),
		    json_pack("{s:s,s:s}", "type", "text", "text", s));
	free(s);
	if (r != NULL && structured)
		json_object_set(r, "structuredContent", env);
	return r;
}

json_t *
sbx_mcp_tool_result(const struct sbx_mcp_done *d)
{
	struct sbx_buf t = SBX_BUF_INIT;
	json_t	      *env, *res, *r, *w;
	char	      *s;
	size_t	       i;
	int	       ok;

	env = d->envelope != NULL ? json_incref(d->envelope) : made_envelope(d);
	if (env != NULL && strcmp(d->name, "secret_request") == 0) {
		r = secret_request(d, env);
		json_decref(env);
		env = r;
	}
	if (env == NULL)
		return NULL;
	res = json_object_get(env, "result");
	/* A run's stdout and stderr streamed past the envelope (sbx exec
	 * --envelope-fd): the result carries them as sbx exec --json's
	 * does, already scrubbed by sbx exec. */
	if (json_is_object(res) && d->out != NULL &&
	    json_object_get(res, "stdout") == NULL &&
	    json_object_get(res, "background") == NULL) {
		json_object_set_new(res, "stdout",
		    sbx_json_bytes(d->out, strlen(d->out)));
		json_object_set_new(res, "stderr",
		    sbx_json_bytes(d->err ? d->err : "",
			d->err ? strlen(d->err) : 0));
	}
	/* A job's log_file is a path on the host, under the state root: no
	 * tool of the model's can open it (file_read sees the agent's home),
	 * and the host's layout is none of its business.  The job id is what
	 * it uses: sandbox_process poll and wait return the log's tail. */
	if (json_is_object(res))
		json_object_del(res, "log_file");
	ok = json_is_true(json_object_get(env, "ok"));
	if (!ok) {
		text_failure(&t, env);
		/* A run that ran (a violation under fail_on_violation, a
		 * timeout): its output too, as the model would read it. */
		if (json_object_get(res, "exit_code") != NULL &&
		    strcmp(d->name, "shell_run") == 0)
			text_run(&t, res);
	} else if (json_object_get(res, "background") != NULL)
		sbx_buf_printf(&t,
		    "started job %s (poll, wait or kill it "
		    "with sandbox_process and job=\"%s\")\n",
		    str(res, "job"), str(res, "job"));
	else if (json_object_get(res, "exit_code") != NULL &&
	    (strcmp(d->name, "shell_run") == 0 ||
		json_is_string(json_object_get(res, "stdout"))))
		/* A run: shell_run's, or a plugin tool's (sbx plugin run). */
		text_run(&t, res);
	else if (json_is_string(json_object_get(res, "content")))
		sbx_buf_puts(&t, str(res, "content"));
	else if (str(res, "message") != NULL &&
	    strcmp(d->name, "secret_request") == 0)
		sbx_buf_printf(&t, "%s: %s\n", str(res, "message"),
		    str(res, "command"));
	else if ((s = json_dumps(res, JSON_INDENT(1) | JSON_SORT_KEYS)) !=
	    NULL) {
		sbx_buf_puts(&t, s);
		free(s);
	}
	/* The envelope's warnings (sbx exec runs -q: they are not in the
	 * command's stderr) for a model that reads the text alone. */
	json_array_foreach (json_object_get(env, "warnings"), i, w)
		if (json_is_string(w))
			sbx_buf_printf(&t, "warning: %s\n",
			    json_string_value(w));
	r = content(t.p ? t.p : "", env, d->structured, !ok);
	sbx_buf_release(&t);
	json_decref(env);
	return r;
}

json_t *
sbx_mcp_tool_error(const char *tool, const struct sbx_error *e, json_t *extra,
    int structured)
{
	struct sbx_buf t = SBX_BUF_INIT;
	json_t	      *env, *r;

	if ((env = sbx_envelope_err(tool, e, extra)) == NULL)
		return NULL;
	text_failure(&t, env);
	r = content(t.p ? t.p : "", env, structured, 1);
	sbx_buf_release(&t);
	json_decref(env);
	return r;
}
