/*
 * plugin-run.c: sbx plugin install, uninstall, run and tools: what runs
 * in (or describes) an agent's sandbox.
 *
 * Tools run through the exec engine (lib/exec), linked into this
 * short-lived program as sbx install links it (DESIGN.md §2): the
 * request is built here from the installed recipe, with no second parse
 * of a request envelope, and the outcome is the exec envelope with the
 * tool "plugin.ID.TOOL".  Dependencies are installed by sbx-install
 * itself, as a child process: its registries, locks, retry and manifest
 * stay in one place.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "exec-jobs.h"
#include "exec.h"
#include "idalloc.h"
#include "identity.h"
#include "install.h"
#include "layout.h"
#include "plugin-int.h"
#include "plugin.h"
#include "recipe.h"
#include "sandbox.h"
#include "secret.h"
#include "tooldefs.h"
#include "tools.h"

extern char **environ;

/* A tool's idle timeout when neither --timeout nor the recipe says. */
#define RUN_TIMEOUT	"30"
/* What sbx-install may print: one envelope. */
#define INSTALL_OUT_MAX (1u << 20)

static void
prepare_req(struct sbx_exec_req *R, const json_t *r, const char *id)
{
	const json_t *net = json_object_get(json_object_get(r, "permissions"),
			 "network"),
		     *v;
	size_t i;

	R->agent = O.agent;
	R->home = root.path;
	R->stdin_mode = "null";
	R->verbose = O.verbose;
	R->max_output = "1M";
	/* The plugin's network is its own, whatever the agent's setting:
	 * none, or the proxy with exactly its declared names (the agent's
	 * allowed names are not added; its denied names, ports and address
	 * rules still apply). */
	if (json_is_array(net)) {
		R->network = sbx_netmode_name(SBX_NETMODE_PROXY);
		R->allow_only = 1;
		json_array_foreach (net, i, v)
			sbx_strv_push(&R->allow, json_string_value(v));
	} else
		R->network = sbx_netmode_name(SBX_NETMODE_NONE);
	/* The declared secrets only; none when none is declared. */
	if (json_array_size(json_object_get(r, "secrets")) == 0)
		R->no_secrets = 1;
	json_array_foreach (json_object_get(r, "secrets"), i, v)
		sbx_strv_push(&R->secrets, json_string_value(v));
	/* The bridge session is the plugin's: its declared secrets are
	 * served to this run only, and to no run that merely says so. */
	R->plugin = id;
	sbx_strv_pushf(&R->own, "%s/%s", SBX_PLUGIN_HOME_DIR, id);
	R->cwd = R->own.v[R->own.n - 1];
}

/*
 * Run a recipe's command (sh -c inside the sandbox, as sbx exec -c does:
 * the command is the recipe's, and parameters reach it as environment
 * variables only, never spliced into it).  The outcome is the caller's.
 */
static int
run_command(const json_t *r, const char *id, const char *cmd, const char *argv0,
    const struct sbx_strv *env, int capture, int tee, struct sbx_exec *X,
    struct sbx_exec_req *R, struct sbx_exec_outcome *o, char **violations,
    struct sbx_error *e)
{
	static char *argv[2];
	size_t	     i;

	sbx_exec_req_init(R);
	sbx_exec_init(X);
	prepare_req(R, r, id);
	R->shell = cmd;
	argv[0] = (char *)argv0;
	argv[1] = NULL;
	R->argv = argv;
	R->argc = 1;
	R->capture = capture;
	R->capture_tee = tee;
	R->timeout = O.timeout != NULL ? O.timeout : RUN_TIMEOUT;
	for (i = 0; env != NULL && i < env->n; i++)
		sbx_strv_push(&R->env, env->v[i]);
	if (sbx_exec_validate(R, e) != 0 || sbx_exec_prepare(X, R, e) == -1)
		return -1;
	if (X->bwrap_line != NULL)
		fprintf(stderr, "%s: %s\n", PROG, X->bwrap_line);
	fflush(NULL);
	if (sbx_exec_run(X, e) == -1)
		return -1;
	*violations = sbx_exec_violations_text(X);
	sbx_exec_outcome(X, o);
	return 0;
}

/* ---- install ---------------------------------------------------------------- */

/*
 * The recipe's dependencies, one sbx-install per manager, as a child:
 * --json, its envelope read back; a failure is the install's own error
 * (kind, reason, message), so that the caller sees why.
 */
static void
install_deps(const json_t *r)
{
	static const char *const   mgrs[] = { "apt", "npm", "pip" };
	struct sbx_error	   e;
	struct sbx_buf		   out = SBX_BUF_INIT;
	struct sbx_strv		   av = SBX_STRV_INIT;
	const json_t		  *pk, *v;
	json_t			  *env;
	char			  *dir, prog[PATH_MAX], chunk[4096];
	posix_spawn_file_actions_t fa;
	size_t			   i, k;
	ssize_t			   n;
	pid_t			   pid;
	int			   p[2], st;

	for (k = 0; k < 3; k++) {
		pk = json_object_get(json_object_get(r, "dependencies"),
		    mgrs[k]);
		if (json_array_size(pk) == 0)
			continue;
		if ((dir = sbx_tools_self_dir()) == NULL) {
			sbx_error_sys(&e, "self_unknown",
			    "cannot find the "
			    "libexec directory");
			sbx_cmd_die(&e);
		}
		snprintf(prog, sizeof(prog), "%s/sbx-install", dir);
		free(dir);
		sbx_strv_push(&av, prog);
		sbx_strv_push(&av, "--json");
		sbx_strv_push(&av, "--home");
		sbx_strv_push(&av, root.path);
		sbx_strv_push(&av, "--agent");
		sbx_strv_push(&av, O.agent);
		sbx_strv_push(&av, "--manager");
		sbx_strv_push(&av, mgrs[k]);
		if (O.timeout != NULL) {
			sbx_strv_push(&av, "--timeout");
			sbx_strv_push(&av, O.timeout);
		}
		sbx_strv_push(&av, "--");
		json_array_foreach (pk, i, v)
			sbx_strv_push(&av, json_string_value(v));
		if (!O.json && !O.quiet)
			fprintf(stderr, "%s: installing %zu %s package%s\n",
			    PROG, json_array_size(pk), mgrs[k],
			    json_array_size(pk) == 1 ? "" : "s");
		if (pipe2(p, O_CLOEXEC) == -1 ||
		    posix_spawn_file_actions_init(&fa) != 0) {
			sbx_error_sys(&e, "spawn_failed", "sbx-install");
			sbx_cmd_die(&e);
		}
		posix_spawn_file_actions_adddup2(&fa, p[1], 1);
		fflush(NULL);
		if ((errno = posix_spawn(&pid, prog, &fa, NULL, av.v,
			 environ)) != 0) {
			sbx_error_sys(&e, "spawn_failed", "cannot run %s",
			    prog);
			sbx_cmd_die(&e);
		}
		posix_spawn_file_actions_destroy(&fa);
		close(p[1]);
		while ((n = read(p[0], chunk, sizeof(chunk))) > 0 ||
		    (n == -1 && errno == EINTR))
			if (n > 0 && out.len < INSTALL_OUT_MAX)
				sbx_buf_append(&out, chunk, (size_t)n);
		close(p[0]);
		while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
			;
		env =
		    out.p != NULL ? json_loadb(out.p, out.len, 0, NULL) : NULL;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			const char *kind =
			    json_string_value(json_object_get(env, "kind"));

			sbx_error_set(&e,
			    kind != NULL ?
				(strcmp(kind, SBX_K_UNAVAILABLE) == 0 ?
					SBX_K_UNAVAILABLE :
					strcmp(kind, SBX_K_REJECTED) == 0 ?
					SBX_K_REJECTED :
					strcmp(kind, SBX_K_INVALID_ARGS) == 0 ?
					SBX_K_INVALID_ARGS :
					SBX_K_EXECUTION_ERROR) :
				SBX_K_EXECUTION_ERROR,
			    "dependencies", "dependency_failed",
			    "installing the %s dependencies failed: %s",
			    mgrs[k],
			    json_string_value(json_object_get(env, "message")) ?
				json_string_value(
				    json_object_get(env, "message")) :
				"sbx-install gave no envelope");
			sbx_cmd_die_extra(&e,
			    env != NULL ? json_pack("{s:o}", "install", env) :
					  NULL,
			    -1);
		}
		json_decref(env);
		sbx_buf_reset(&out);
		sbx_strv_release(&av);
	}
	sbx_buf_release(&out);
}

/* Every declared secret must be in the agent's store, now. */
static void
check_secrets(const json_t *r)
{
	struct sbx_error e;
	const json_t	*v, *w;
	json_t		*have = sbx_secret_names(root.fd, O.agent);
	size_t		 i, j;

	json_array_foreach (json_object_get(r, "secrets"), i, v) {
		json_array_foreach (have, j, w)
			if (json_equal((json_t *)v, (json_t *)w))
				break;
		if (j == json_array_size(have)) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "secrets",
			    "secret_missing",
			    "the plugin needs the secret %s, "
			    "which agent %s does not have",
			    json_string_value(v), O.agent);
			sbx_error_hint(&e, "sbx secret set %s --agent %s",
			    json_string_value(v), O.agent);
			json_decref(have);
			sbx_cmd_die(&e);
		}
	}
	json_decref(have);
}

/*
 * A failed install leaves no half: the files, the installed copy and the
 * record's entry go (an older version that was there included: its files
 * were already replaced), so that the record never names a plugin that
 * cannot run.
 */
static void
undo_install(const char *id)
{
	struct sbx_error e;
	json_t		*doc;

	sbx_plugin_files_remove(root.fd, O.agent, id, NULL);
	if ((doc = sbx_plugin_installed_read(root.fd, O.agent, &e)) != NULL &&
	    sbx_plugin_installed_del(doc, id) == 1)
		(void)sbx_plugin_installed_write(root.fd, O.agent, doc, &e);
	json_decref(doc);
}

int
plugin_install(void)
{
	struct sbx_error	e;
	struct sbx_exec		X;
	struct sbx_exec_req	R;
	struct sbx_exec_outcome o;
	const char	       *id;
	json_t		       *r, *doc, *res;
	char			sha[SBX_RECIPE_SHA_HEX + 1], *viol = NULL;
	char			argv0[64];
	uid_t			uid;
	gid_t			gid;
	int			lock, setup_rc = -1;

	if (O.nops != 1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "id", "usage",
		    "sbx plugin install takes one plugin id");
		sbx_cmd_usage_exit(&e);
	}
	id = O.ops[0];
	plugin_open_agent();
	if ((r = sbx_plugin_lib_get(root.fd, id, sha, &e)) == NULL)
		sbx_cmd_die(&e);
	check_secrets(r);
	if (sbx_idalloc_owner(root.fd, O.agent, &uid, &gid, &e) == -1)
		sbx_cmd_die(&e);
	if ((lock = sbx_plugin_agent_lock(root.fd, O.agent, &e)) == -1)
		sbx_cmd_die(&e);
	install_deps(r);
	if (sbx_plugin_files_put(root.fd, O.agent, id, r, uid, gid, &e) == -1) {
		undo_install(id);
		sbx_cmd_die(&e);
	}
	if (json_is_string(json_object_get(r, "setup"))) {
		snprintf(argv0, sizeof(argv0), "plugin.%s.setup", id);
		if (run_command(r, id,
			json_string_value(json_object_get(r, "setup")), argv0,
			NULL, 1, !O.json && !O.quiet, &X, &R, &o, &viol,
			&e) == -1) {
			undo_install(id);
			sbx_cmd_die(&e);
		}
		if (viol != NULL)
			sbx_cmd_warnf(warnings, "setup: %s", viol);
		free(viol);
		setup_rc = o.ok ? (int)json_integer_value(
				      json_object_get(o.result, "exit_code")) :
				  -1;
		if (setup_rc != 0) {
			undo_install(id);
			if (o.ok)
				sbx_error_set(&o.err, SBX_K_EXECUTION_ERROR,
				    "setup", "setup_failed",
				    "the plugin's "
				    "setup exited with %d; nothing was "
				    "installed",
				    setup_rc);
			sbx_cmd_die_extra(&o.err,
			    json_pack("{s:O}", "result",
				o.ok ? o.result :
				    json_object_get(o.extra, "result") ?
				       json_object_get(o.extra, "result") :
				       json_null()),
			    -1);
		}
		sbx_exec_outcome_release(&o);
		sbx_exec_release(&X);
		sbx_exec_req_release(&R);
	}
	if ((doc = sbx_plugin_installed_read(root.fd, O.agent, &e)) == NULL ||
	    sbx_plugin_installed_set(doc, r, id, sha) == -1 ||
	    sbx_plugin_installed_write(root.fd, O.agent, doc, &e) == -1)
		sbx_cmd_die(&e);
	close(lock);
	res = json_pack("{s:s,s:s,s:O}", "id", id, "agent", O.agent, "plugin",
	    sbx_plugin_installed_find(doc, id));
	if (setup_rc == 0)
		json_object_set_new(res, "setup_exit_code", json_integer(0));
	if (!O.json && !O.quiet)
		printf("installed %s for %s (sha256 %.12s)\n", id, O.agent,
		    sha);
	json_decref(doc);
	json_decref(r);
	plugin_ok(res);
	return 0;
}

int
plugin_uninstall(void)
{
	struct sbx_error e;
	const char	*id;
	json_t		*doc;
	int		 lock, had;

	if (O.nops != 1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "id", "usage",
		    "sbx plugin uninstall takes one plugin id");
		sbx_cmd_usage_exit(&e);
	}
	id = O.ops[0];
	plugin_open_agent();
	if (sbx_recipe_id(id, (char[SBX_RECIPE_ID_MAX + 1]){ 0 }, &e) == -1)
		sbx_cmd_die(&e);
	if ((lock = sbx_plugin_agent_lock(root.fd, O.agent, &e)) == -1 ||
	    (doc = sbx_plugin_installed_read(root.fd, O.agent, &e)) == NULL)
		sbx_cmd_die(&e);
	if (!(had = sbx_plugin_installed_del(doc, id))) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "id", "plugin_not_installed",
		    "plugin %s is not installed for agent %s", id, O.agent);
		sbx_cmd_die(&e);
	}
	if (sbx_plugin_files_remove(root.fd, O.agent, id, &e) == -1 ||
	    sbx_plugin_installed_write(root.fd, O.agent, doc, &e) == -1)
		sbx_cmd_die(&e);
	close(lock);
	json_decref(doc);
	if (!O.json && !O.quiet)
		printf("uninstalled %s from %s\n", id, O.agent);
	plugin_ok(json_pack("{s:s,s:s,s:b}", "id", id, "agent", O.agent,
	    "removed", had));
	return 0;
}

/* ---- run -------------------------------------------------------------------- */

int
plugin_run(void)
{
	struct sbx_error	e;
	struct sbx_exec		X;
	struct sbx_exec_req	R;
	struct sbx_exec_outcome o;
	struct sbx_strv		env = SBX_STRV_INIT;
	const json_t	       *t;
	json_t		       *r, *args, *vals;
	const char	       *id, *tid;
	char		       *viol = NULL;
	size_t			i;

	if (O.nops != 2) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "tool", "usage",
		    "sbx plugin run takes a plugin id and a tool id");
		sbx_cmd_usage_exit(&e);
	}
	id = O.ops[0];
	tid = O.ops[1];
	if (strlen(id) <= SBX_RECIPE_ID_MAX && strlen(tid) <= 64)
		snprintf(tool, sizeof(tool), "plugin.%s.%s", id, tid);
	if (sbx_sandbox_refuse_nested(&e) == -1)
		sbx_cmd_die(&e);
	plugin_open_agent();
	/* The installed copy, never the library's: an update is applied
	 * by a person (sbx plugin install), not by a run. */
	if ((r = sbx_plugin_installed_recipe(root.fd, O.agent, id, &e)) == NULL)
		sbx_cmd_die(&e);
	if ((t = sbx_recipe_tool(r, tid)) == NULL) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "tool", "tool_not_found",
		    "plugin %s has no tool %s", id, tid);
		sbx_cmd_die(&e);
	}
	args = json_object();
	for (i = 0; i < O.params.n; i++)
		if (sbx_recipe_param_arg(t, O.params.v[i], args, &e) == -1)
			sbx_cmd_die(&e);
	if ((vals = sbx_recipe_params(t, args, &e)) == NULL ||
	    sbx_recipe_params_env(vals, &env, &e) == -1)
		sbx_cmd_die(&e);
	json_decref(args);
	json_decref(vals);
	if (run_command(r, id, json_string_value(json_object_get(t, "run")),
		tool, &env, O.json, 0, &X, &R, &o, &viol, &e) == -1)
		sbx_cmd_die(&e);
	exec_render_outcome(&o, O.json || O.quiet ? (free(viol), NULL) : viol,
	    X.warnings, NULL, O.json, O.quiet, O.json ? sbx_cmd_emit : NULL,
	    tool);
	sbx_exec_outcome_release(&o);
	sbx_strv_release(&env);
	json_decref(r);
	return o.code;
}

/* ---- tools -------------------------------------------------------------------- */

/*
 * The built-in tools (lib/exec/tooldefs.c, shared with sbx mcp), each as
 * its MCP Tool object with "source": "builtin" and its "id" (the name).
 */
static void
builtin_tools(json_t *out)
{
	const struct sbx_tooldef *d;
	json_t			 *j;
	size_t			  i;

	for (i = 0; (d = sbx_tooldef_at(i)) != NULL; i++)
		if ((j = sbx_tooldef_json(d)) != NULL) {
			json_object_set_new(j, "source",
			    json_string("builtin"));
			json_object_set_new(j, "id", json_string(d->name));
			json_array_append_new(out, j);
		}
}

/* Is name already the name of a tool in out? */
static int
name_taken(const json_t *out, const char *name)
{
	const json_t	*t;
	size_t		 i;

	json_array_foreach (out, i, t)
		if (strcmp(json_string_value(json_object_get(t, "name")),
		    name) == 0)
			return 1;
	return 0;
}

/*
 * The agent's plugin tools: the recipe's description, the parameters as
 * inputSchema, annotations from the permissions.  The name is one every
 * client takes, plugin-ID-TOOL, cut and hashed past 64 characters
 * (sbx_recipe_tool_name); the id people know, plugin.ID.TOOL, is the
 * "id", the "title" and the annotations' title, and "plugin" and "tool"
 * say what sbx plugin run runs.  A second tool of a name already listed
 * (two cut names that met) is left out with a warning: a client must
 * never be handed two tools of one name.
 */
static void
plugin_tools_of(json_t *out)
{
	struct sbx_error e;
	const json_t	*p, *t;
	json_t		*doc, *r, *j, *in;
	const char	*id, *tid;
	char		 name[SBX_TOOL_NAME_MAX + 1], full[160];
	size_t		 i, k;

	if ((doc = sbx_plugin_installed_read(root.fd, O.agent, &e)) == NULL)
		sbx_cmd_die(&e);
	json_array_foreach (json_object_get(doc, "plugins"), i, p) {
		id = json_string_value(json_object_get(p, "id"));
		if (id == NULL ||
		    (r = sbx_plugin_installed_recipe(root.fd, O.agent, id,
			 &e)) == NULL) {
			sbx_cmd_warnf(warnings, "plugin %s: its installed "
			    "recipe is missing; reinstall it", id ? id : "?");
			continue;
		}
		json_array_foreach (json_object_get(r, "tools"), k, t) {
			tid = json_string_value(json_object_get(t, "id"));
			if (tid == NULL)
				continue;
			snprintf(full, sizeof(full), "plugin.%s.%s", id, tid);
			sbx_recipe_tool_name(id, tid, name);
			if (name_taken(out, name)) {
				sbx_cmd_warnf(warnings, "tool %s: its name %s "
				    "is already listed; left out", full, name);
				continue;
			}
			in = sbx_recipe_input_schema(t);
			json_object_set_new(in, "$schema",
			    json_string(
				"https://json-schema.org/draft/2020-12/schema"));
			j = json_pack("{s:s,s:s,s:s,s:O,s:o,s:s,s:s,s:s,"
			    "s:{s:s,s:b,s:b}}",
			    "name", name, "id", full, "title", full,
			    "description", json_object_get(t, "description"),
			    "inputSchema", in, "source", "plugin", "plugin", id,
			    "tool", tid, "annotations", "title", full,
			    "readOnlyHint", 0, "openWorldHint",
			    json_is_array(json_object_get(
				json_object_get(r, "permissions"), "network")));
			json_array_append_new(out, j);
		}
		json_decref(r);
	}
	json_decref(doc);
}

int
plugin_tools(void)
{
	struct sbx_error e;
	json_t		*tools = json_array(), *t;
	size_t		 i;

	if (O.nops != 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "args",
		    "unexpected_argument", "sbx plugin tools takes no operand");
		sbx_cmd_usage_exit(&e);
	}
	snprintf(tool, sizeof(tool), "tools");
	builtin_tools(tools);
	plugin_open_agent();
	plugin_tools_of(tools);
	if (!O.json)
		json_array_foreach (tools, i, t)
			/* A plugin tool: its id beside its name. */
			printf("%s\t%s%s%s\n",
			    json_string_value(json_object_get(t, "name")),
			    json_string_value(json_object_get(t, "source")),
			    json_object_get(t, "plugin") != NULL ? "\t" : "",
			    json_object_get(t, "plugin") != NULL ?
			    json_string_value(json_object_get(t, "id")) : "");
	plugin_ok(json_pack("{s:s,s:o}", "agent", O.agent, "tools", tools));
	return 0;
}
