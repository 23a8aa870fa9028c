/*
 * sbx-plugin: plugin recipes, JSON tools that extend agents (see
 * sbx-plugin(1), sbx-recipe(5)).  This file: the command line and the
 * library (add, list, show, rm, register); cmd/plugin-source.c reads a
 * recipe from a path or an URL; cmd/plugin-run.c installs, runs and lists
 * tools.  Parse, validate (lib/service/recipe.c), store
 * (lib/service/plugin.c), render.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "names.h"
#include "opts.h"
#include "plugin-int.h"
#include "plugin.h"
#include "provision.h"
#include "recipe.h"
#include "sandbox.h"
#include "settings.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: sbx plugin add FILE|DIR|- [--home DIR] [--json] [-q]\n"
    "       sbx plugin add URL --sha256 HEX [--home DIR] [--json] [-q]\n"
    "       sbx plugin list [--home DIR] [--json]\n"
    "       sbx plugin show ID [--home DIR] [--json]\n"
    "       sbx plugin rm ID [--home DIR] [--json] [-q]\n"
    "       sbx plugin install ID [--agent A] [--home DIR] [--timeout SECONDS]\n"
    "                         [--json] [-q] [-v]\n"
    "       sbx plugin uninstall ID [--agent A] [--home DIR] [--json] [-q]\n"
    "       sbx plugin run ID TOOL [--agent A] [--param NAME=VALUE]...\n"
    "                         [--timeout SECONDS] [--home DIR] [--json] [-q] [-v]\n"
    "       sbx plugin register DIR [--agent A] [--home DIR] [--json] [-q]\n"
    "       sbx plugin tools [--agent A] [--home DIR] [--json]\n";

static const char help_text[] =
    "\n"
    "Plugin recipes give an agent new tools: a JSON file (sbx-recipe(5)) with\n"
    "files, dependencies, secrets and network permissions.  The library\n"
    "(plugins/ of the state root) is the source of truth; install copies a\n"
    "recipe into one agent's sandbox and records its hash; a changed recipe\n"
    "is an update that `sbx status` shows, never applied silently.\n"
    "\n"
    "  add          check a recipe (a file, or a directory with recipe.json\n"
    "               and its files) and store it in the library\n"
    "  list, show   the library; rm removes a recipe from it\n"
    "  install      dependencies (sbx install), files, setup, for an agent\n"
    "  uninstall    the files and the record\n"
    "  run          one tool, in the agent's sandbox (exec envelope, tool\n"
    "               plugin.ID.TOOL)\n"
    "  register     an agent's own recipe (DIR in its home), with\n"
    "               restricted defaults\n"
    "  tools        every tool an agent has, with its JSON Schema (also\n"
    "               `sbx tools`)\n"
    "\n";

enum {
	S_ADD = 1,
	S_LIST = 2,
	S_SHOW = 4,
	S_RM = 8,
	S_INSTALL = 16,
	S_UNINSTALL = 32,
	S_RUN = 64,
	S_REGISTER = 128,
	S_TOOLS = 256,
	S_ALL = 511,
};
enum { OPT_HOME = 256, OPT_VERSION, OPT_PARAM, OPT_TIMEOUT, OPT_SHA256 };

static const struct sbx_opts_sub subs[] = {
	{ "add", S_ADD, "@file" },
	{ "list", S_LIST, NULL },
	{ "show", S_SHOW, "@plugin" },
	{ "rm", S_RM, "@plugin" },
	{ "install", S_INSTALL, "@plugin" },
	{ "uninstall", S_UNINSTALL, "@plugin" },
	{ "run", S_RUN, "@plugin" },
	{ "register", S_REGISTER, "@dir" },
	{ "tools", S_TOOLS, NULL },
};

#define AGENT_SUBS (S_INSTALL | S_UNINSTALL | S_RUN | S_REGISTER | S_TOOLS)

static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent name (default: $SBX_AGENT or \"default\")", AGENT_SUBS, 0 },
	{ OPT_SHA256, "sha256", 0, SBX_OPT_REQ, "HEX", "@text",
	    "the SHA-256 a recipe URL must have", S_ADD, 0 },
	{ OPT_PARAM, "param", 0, SBX_OPT_REQ, "NAME=VALUE", "@text",
	    "a parameter of the tool (repeat)", S_RUN, 0 },
	{ OPT_TIMEOUT, "timeout", 0, SBX_OPT_REQ, "SECONDS", NULL,
	    "run: idle timeout (default 30); install: the whole install",
	    S_RUN | S_INSTALL, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
	    "~/.local/share/sbx)",
	    S_ALL, 0 },
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no progress or warnings on stderr",
	    S_ADD | S_RM | S_INSTALL | S_UNINSTALL | S_RUN | S_REGISTER, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "show the bwrap command lines on stderr", S_INSTALL | S_RUN, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx plugin", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 23, 0 };

static struct sbx_opts_getopt g;
static struct sbx_opts_seen   seen;

struct plugin_opts O;
struct sbx_root	   root = SBX_ROOT_INIT;
json_t		  *warnings;
char		   tool[160] = "plugin";

void
plugin_ok(json_t *result)
{
	if (O.json)
		sbx_cmd_emit(
		    sbx_envelope_ok(tool, result, json_incref(warnings)));
	else {
		sbx_cmd_print_warnings(PROG, warnings, O.quiet);
		json_decref(result);
	}
}

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL, .tool = tool,
	.warnings = &warnings };

void
plugin_open_root(void)
{
	struct sbx_error e;

	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "home", "not_provisioned",
		    "no state root at %s",
		    root.path != NULL ? root.path : "(unresolved)");
		sbx_error_hint(&e, "create it: sbx provision");
		sbx_cmd_die(&e);
	}
}

void
plugin_open_agent(void)
{
	struct sbx_error e;

	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	plugin_open_root();
	if (sbx_provision_require(root.fd, O.agent, &e) == -1)
		sbx_cmd_die(&e);
}

json_t *
plugin_sandbox_cfg(void)
{
	struct sbx_error e;
	json_t		*cfg = NULL;

	if (sbx_settings_global(root.fd, &cfg, &e) == -1)
		sbx_cmd_die(&e);
	return cfg;
}

/* One operand: the id of a plugin (or a path), and nothing more. */
static const char *
operand(int i, const char *what)
{
	struct sbx_error e;

	if (O.nops <= i) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, what, "missing_argument",
		    "sbx plugin %s needs %s", O.sub, what);
		sbx_cmd_usage_exit(&e);
	}
	return O.ops[i];
}

static void
no_more(int n)
{
	struct sbx_error e;

	if (O.nops > n) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "args",
		    "unexpected_argument", "sbx plugin %s: unexpected `%s`",
		    O.sub, O.ops[n]);
		sbx_cmd_usage_exit(&e);
	}
}

/* ---- the library ---------------------------------------------------------- */

static void
say_stored(const char *verb, const char *id, const char *sha, int replaced)
{
	if (!O.json && !O.quiet)
		printf("%s %s (sha256 %.12s)%s\n", verb, id, sha,
		    replaced ?
			": an update for the agents that have it installed" :
			"");
}

static int
do_add(void)
{
	struct sbx_error e;
	json_t		*in, *r, *cfg;
	const char	*src = operand(0, "a recipe file or directory");
	char		 id[SBX_RECIPE_ID_MAX + 1];
	char		 sha[SBX_RECIPE_SHA_HEX + 1];
	int		 replaced;

	no_more(1);
	if (O.sha256 != NULL && !sbx_download_is_url(src)) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "sha256",
		    "sha256_without_url", "--sha256 goes with a recipe URL");
		sbx_cmd_die(&e);
	}
	if (sbx_download_is_url(src))
		in = plugin_read_url(src);
	else if (strcmp(src, "-") == 0) {
		/* Standard input: one JSON recipe, size-capped. */
		struct sbx_buf b = SBX_BUF_INIT;
		char	       chunk[8192];
		ssize_t	       n;

		while ((n = read(0, chunk, sizeof(chunk))) > 0 ||
		    (n == -1 && errno == EINTR))
			if (n > 0 &&
			    (b.len + (size_t)n > SBX_RECIPE_MAX ||
				sbx_buf_append(&b, chunk, (size_t)n) == -1)) {
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "recipe",
				    "too_large",
				    "the recipe is larger than "
				    "%u bytes",
				    SBX_RECIPE_MAX);
				sbx_cmd_die(&e);
			}
		in = sbx_json_parse(b.p != NULL ? b.p : "", b.len,
		    SBX_RECIPE_MAX, &e);
		sbx_buf_release(&b);
		if (in == NULL)
			sbx_cmd_die(&e);
	} else
		in = plugin_read_source(src);
	plugin_open_root();
	cfg = plugin_sandbox_cfg();
	r = sbx_recipe_check(in, 0, cfg, warnings, &e);
	json_decref(in);
	json_decref(cfg);
	if (r == NULL)
		sbx_cmd_die(&e);
	if (sbx_plugin_lib_put(root.fd, r, id, sha, &replaced, &e) == -1)
		sbx_cmd_die(&e);
	say_stored("added", id, sha, replaced);
	plugin_ok(json_pack("{s:s,s:s,s:b,s:o}", "id", id, "sha256", sha,
	    "replaced", replaced, "plugin", sbx_plugin_summary(r, sha)));
	json_decref(r);
	return 0;
}

static int
do_list(void)
{
	struct sbx_error e;
	json_t		*l, *p;
	size_t		 i;

	no_more(0);
	plugin_open_root();
	if ((l = sbx_plugin_lib_list(root.fd, &e)) == NULL)
		sbx_cmd_die(&e);
	if (!O.json)
		json_array_foreach (l, i, p)
			printf("%s\t%s\t%s\t%s\n",
			    json_string_value(json_object_get(p, "id")),
			    json_string_value(json_object_get(p, "version")) ?
				json_string_value(
				    json_object_get(p, "version")) :
				"-",
			    json_string_value(
				json_object_get(p, "created_by")) ?
				json_string_value(
				    json_object_get(p, "created_by")) :
				"-",
			    json_string_value(
				json_object_get(p, "description")));
	plugin_ok(json_pack("{s:o}", "plugins", l));
	return 0;
}

static int
do_show(void)
{
	struct sbx_error e;
	json_t		*r;
	const char	*id = operand(0, "a plugin id");
	char		 sha[SBX_RECIPE_SHA_HEX + 1], *s;

	no_more(1);
	plugin_open_root();
	if ((r = sbx_plugin_lib_get(root.fd, id, sha, &e)) == NULL)
		sbx_cmd_die(&e);
	if (!O.json) {
		s = json_dumps(r, JSON_INDENT(2) | JSON_SORT_KEYS);
		printf("# %s sha256 %s\n%s\n", id, sha, s != NULL ? s : "");
		free(s);
	}
	plugin_ok(
	    json_pack("{s:s,s:s,s:o}", "id", id, "sha256", sha, "recipe", r));
	return 0;
}

static int
do_rm(void)
{
	struct sbx_error e;
	const char	*id = operand(0, "a plugin id");
	int		 rc;

	no_more(1);
	plugin_open_root();
	if ((rc = sbx_plugin_lib_rm(root.fd, id, &e)) == -1)
		sbx_cmd_die(&e);
	if (rc == 0) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "id", "plugin_not_found",
		    "no plugin %s in the library", id);
		sbx_cmd_die(&e);
	}
	if (!O.json && !O.quiet)
		printf("removed %s from the library (installed copies stay "
		       "until uninstalled)\n",
		    id);
	plugin_ok(json_pack("{s:s,s:b}", "id", id, "removed", 1));
	return 0;
}

/*
 * An agent's recipe: DIR is in the agent's home (relative to it, or the
 * home's path inside the sandbox, /workspace/agents/A/...), read beneath
 * the home without following a link: an agent cannot point register at
 * a file of the host's.
 */
static int
do_register(void)
{
	struct sbx_error e;
	json_t		*in, *res, *cfg;
	const char	*dir = operand(0,
			    "a directory in the agent's "
				 "home"),
		   *rel;
	char inside[SBX_LAYOUT_PATH_MAX], hrel[SBX_LAYOUT_PATH_MAX];
	int  home;

	no_more(1);
	plugin_open_agent();
	snprintf(inside, sizeof(inside), "/workspace/agents/%s/", O.agent);
	rel = dir;
	if (strncmp(dir, inside, strlen(inside)) == 0)
		rel = dir + strlen(inside);
	else if (dir[0] == '/') {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "dir", "outside_home",
		    "argument `dir` must be in the agent's home (relative to "
		    "it, or under %s)",
		    inside);
		sbx_cmd_die(&e);
	}
	SBX_LPATH(hrel, SBX_L_AGENT_HOME, O.agent);
	if ((home = sbx_fs_open_beneath(root.fd, hrel, O_RDONLY | O_DIRECTORY,
		 &e)) == -1)
		sbx_cmd_die(&e);
	in = sbx_plugin_source_read(home, rel, &e);
	close(home);
	if (in == NULL)
		sbx_cmd_die(&e);
	cfg = plugin_sandbox_cfg();
	if (sbx_plugin_register(root.fd, O.agent, in, cfg, warnings, &res,
		&e) == -1)
		sbx_cmd_die(&e);
	json_decref(in);
	json_decref(cfg);
	say_stored("registered", json_string_value(json_object_get(res, "id")),
	    json_string_value(json_object_get(res, "sha256")),
	    json_is_true(json_object_get(res, "replaced")));
	plugin_ok(res);
	return 0;
}

/* ---- the command line ------------------------------------------------------ */

static void
parse_args(int argc, char *argv[])
{
	struct sbx_error e;
	unsigned	 bit;
	int		 ch;

	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	opterr = 0;
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			O.agent_given = 1;
			break;
		case OPT_PARAM: sbx_strv_push(&O.params, optarg); break;
		case OPT_SHA256: O.sha256 = optarg; break;
		case OPT_TIMEOUT: O.timeout = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	if (optind >= argc) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "args",
		    "missing_argument", "a subcommand is needed");
		sbx_cmd_usage_exit(&e);
	}
	O.sub = argv[optind];
	if (strlen(O.sub) < 16)
		snprintf(tool, sizeof(tool), "plugin.%s", O.sub);
	if ((bit = sbx_opts_sub_find(&table, 1, argv + optind, NULL)) == 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "args",
		    "unknown_subcommand", "unknown subcommand `%.32s`", O.sub);
		sbx_cmd_usage_exit(&e);
	}
	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		sbx_cmd_usage_exit(&e);
	/* Options stood anywhere before `--` (opts.h): what is left
	 * is operands, even one that starts with '-' (after `--`). */
	O.ops = argv + optind + 1;
	O.nops = argc - optind - 1;
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") != NULL && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") :
		    "default";
}

int
main(int argc, char *argv[])
{
	struct sbx_error e;
	int		 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	warnings = json_array();
	parse_args(argc, argv);
	if (sbx_sandbox_refuse_nested(&e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(O.sub, "add") == 0)
		return do_add();
	if (strcmp(O.sub, "list") == 0)
		return do_list();
	if (strcmp(O.sub, "show") == 0)
		return do_show();
	if (strcmp(O.sub, "rm") == 0)
		return do_rm();
	if (strcmp(O.sub, "register") == 0)
		return do_register();
	if (strcmp(O.sub, "install") == 0)
		return plugin_install();
	if (strcmp(O.sub, "uninstall") == 0)
		return plugin_uninstall();
	if (strcmp(O.sub, "run") == 0)
		return plugin_run();
	return plugin_tools();
}
