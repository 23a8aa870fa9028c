/*
 * sbx-config: read and change the settings users edit
 * (config/agents/A.json, config/sandbox.json), one key at a time, checked
 * against the schema and the loaders the runs use.  See sbx-config(1).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cfgcheck.h"
#include "cli.h"
#include "cmd.h"
#include "config.h"
#include "envelope.h"
#include "fsutil.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "utf8.h"

#define PROG	"sbx-config"

static const char usage_text[] =
"usage: sbx config get|unset KEY [--agent A | --global] [--home DIR] [--json]\n"
"                  [-q]\n"
"       sbx config set|add|rm KEY VALUE ... [--agent A | --global]\n"
"                  [--json-value] [--home DIR] [--json] [-q]\n"
"       sbx config show [--agent A | --global] [--home DIR] [--json]\n"
"       sbx config keys [--agent A | --global] [--home DIR] [--json]\n"
"                  [-q | -v]\n";

static const char help_text[] =
"\n"
"Read and change the settings users edit: an agent's\n"
"config/agents/A.json (the default, --agent A) or config/sandbox.json\n"
"(--global).  KEY is a dotted path (network, allowed_domains,\n"
"limits.memory_mib, proxy.max_connections); `sbx config keys` lists them.\n"
"Values are checked as a run checks them; files are written atomically,\n"
"0600, under run/provision.lock.  The image binding is not a setting:\n"
"see `sbx provision --image`.\n"
"\n"
"  get           print the value (exit 1 when it is not set)\n"
"  set           set the value (arrays: one VALUE per element)\n"
"  unset         remove the key (back to the default)\n"
"  add, rm       add each VALUE to an array, or remove it\n"
"  show          print the whole file\n"
"  keys          list the keys, with their types and meanings (-q: the\n"
"                keys only; -v: also where each may be set)\n"
"\n";

enum { OPT_HOME = 256, OPT_VERSION, OPT_JSON_VALUE };

/* The subcommands; the program has no form without one. */
enum {
	S_GET = 1, S_SET = 2, S_UNSET = 4, S_ADD = 8, S_RM = 16, S_SHOW = 32,
	S_KEYS = 64, S_ALL = 127,
};

static const struct sbx_opts_sub subs[] = {
	{ "get", S_GET, "@key" }, { "set", S_SET, "@key" },
	{ "unset", S_UNSET, "@key" }, { "add", S_ADD, "@key" },
	{ "rm", S_RM, "@key" }, { "show", S_SHOW, NULL },
	{ "keys", S_KEYS, NULL },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "the agent (default: $SBX_AGENT or \"default\")", S_ALL, 0 },
	{ 'g', "global", 'g', SBX_OPT_NONE, NULL, NULL,
	    "config/sandbox.json instead", S_ALL, 0 },
	{ OPT_JSON_VALUE, "json-value", 0, SBX_OPT_NONE, NULL, NULL,
	    "VALUE is JSON (objects, arrays, null)", S_SET | S_ADD | S_RM, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, S_ALL),
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing but errors (and the value of get);\n"
	    "keys: the keys only, one a line",
	    S_GET | S_SET | S_UNSET | S_ADD | S_RM | S_KEYS, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "keys: also where each may be set", S_KEYS, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx config", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 21, 0 };

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

static struct {
	const char	*agent;
	const char	*home;
	int		 global;
	int		 json_value;
	int		 json;
	int		 quiet;
	int		 verbose;
	const char	*pos[64];
	int		 npos;
} O;

static char		 tool[32] = "config";
static struct sbx_root	 root = SBX_ROOT_INIT;

static void __attribute__((noreturn))
usage(const char *why)
{
	struct sbx_error	 e;

	if (O.json) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "args", "usage", "%s",
		    why != NULL ? why : "bad arguments");
		sbx_cmd_emit(sbx_envelope_err(tool, &e, NULL));
		exit(SBX_EX_USAGE);
	}
	if (why != NULL)
		fprintf(stderr, "%s: %s\n", PROG, why);
	fputs(usage_text, stderr);
	exit(SBX_EX_USAGE);
}

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL,
	.tool = tool };

static void
pos_add(const char *s)
{
	if (O.npos >= (int)(sizeof(O.pos) / sizeof(O.pos[0])))
		usage("too many arguments");
	O.pos[O.npos++] = s;
}

static int
parse(int argc, char *argv[])
{
	int		 ch;

	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			break;
		case 'g':
			O.global = 1;
			break;
		case OPT_JSON_VALUE:
			O.json_value = 1;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	return optind;
}

/*
 * Options and positionals in any order before `--` (there is no child
 * argv to keep from reordering; a negative number is a value: set
 * limits.cpus -1): sbx_cmd_getopt, opts.h.  --json anywhere decides
 * the output mode before any usage error is reported.
 */
static void
parse_args(int argc, char *argv[])
{
	int	 i;

	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	/* Decided before getopt, skipping option arguments: a value that
	 * reads "--json" (a description, a setting) is not the flag. */
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	optind = 0;	/* 0: start, reading the optstring */
	for (i = parse(argc, argv); i < argc; i++)
		pos_add(argv[i]);
}

/* ---- output ------------------------------------------------------------- */

/* A value for people and scripts (sbx_cfg_value_text). */
static void
print_value(const json_t *v)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (sbx_cfg_value_text(v, &b) == 0 && b.p != NULL)
		fputs(b.p, stdout);
	sbx_buf_release(&b);
}

/* ---- the commands ------------------------------------------------------- */

static unsigned
scope(void)
{
	return O.global ? SBX_CFG_GLOBAL : SBX_CFG_AGENT;
}

static const char *
agent(void)
{
	return O.global ? NULL : O.agent;
}

static void
rel_of(char *rel, size_t sz)
{
	struct sbx_error	 e;

	if (sbx_cfg_path(agent(), rel, sz, &e) == -1)
		sbx_cmd_die(&e);
}

static json_t *
base_result(const char *rel)
{
	json_t	*r = json_pack("{s:s,s:s,s:{s:s,s:s}}", "file", rel, "scope",
	    O.global ? "global" : "agent", "root", "path", root.path,
	    "source", root.source);

	if (!O.global)
		json_object_set_new(r, "agent", json_string(O.agent));
	return r;
}

/* The key, or a refusal naming the known ones (and the other scope, when
 * the key is there). */
static const struct sbx_cfg_key *
key_of(const char *key, int groups_ok)
{
	struct sbx_error		 e;
	const struct sbx_cfg_key	*k;

	if ((k = sbx_cfg_key_find(key, scope())) != NULL)
		return k;
	if (groups_ok && sbx_cfg_is_group(key, scope()))
		return NULL;
	sbx_cfg_unknown(key, scope(), &e);
	if (sbx_cfg_key_find(key, O.global ? SBX_CFG_AGENT : SBX_CFG_GLOBAL))
		sbx_error_hint(&e, "`%s` is %s setting: use %s", key, O.global ?
		    "an agent" : "a global", O.global ? "--agent A" :
		    "--global");
	sbx_cmd_die(&e);
}

/* The file as it is; an invalid one is reported (exit 78), never
 * overwritten. */
static json_t *
load(int rootfd, const char *rel, int check)
{
	struct sbx_error	 e;
	json_t			*doc;

	if (sbx_cfg_load(rootfd, agent(), &doc, &e) == -1)
		sbx_cmd_die_extra(&e, NULL, SBX_EX_CONFIG);
	if (check && sbx_cfg_validate(doc, !O.global, rel, &e) == -1) {
		sbx_error_hint(&e, "%s is invalid as it is: correct or unset "
		    "the key the message names first (`sbx config show%s` "
		    "prints it)", rel, O.global ? " --global" : "");
		json_decref(doc);
		sbx_cmd_die_extra(&e, NULL, SBX_EX_CONFIG);
	}
	return doc;
}

static int
do_keys(void)
{
	const struct sbx_cfg_key	*k;
	json_t				*arr;
	size_t				 i, n;

	k = sbx_cfg_keys(&n);
	arr = json_array();
	for (i = 0; i < n; i++) {
		if (!(k[i].scope & scope()))
			continue;
		if (O.json) {
			json_array_append_new(arr, json_pack("{s:s,s:s,s:b,"
			    "s:b,s:s}", "key", k[i].key, "type",
			    sbx_cfg_type_name(k[i].type), "agent",
			    (k[i].scope & SBX_CFG_AGENT) != 0, "global",
			    (k[i].scope & SBX_CFG_GLOBAL) != 0, "doc",
			    k[i].doc));
		} else if (O.quiet)
			printf("%s\n", k[i].key);
		else if (O.verbose)
			printf("%-34s %-9s %-12s %s\n", k[i].key,
			    sbx_cfg_type_name(k[i].type),
			    k[i].scope == (SBX_CFG_AGENT | SBX_CFG_GLOBAL) ?
			    "agent,global" : k[i].scope == SBX_CFG_AGENT ?
			    "agent" : "global", k[i].doc);
		else
			/* A key alone says little to someone who has to
			 * set it: its type and meaning, one line each. */
			printf("%-34s %-9s %s\n", k[i].key,
			    sbx_cfg_type_name(k[i].type), k[i].doc);
	}
	if (O.json)
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:s,s:o}",
		    "scope", O.global ? "global" : "agent", "keys", arr),
		    NULL));
	else
		json_decref(arr);
	return 0;
}

static int
do_read(const char *sub)
{
	struct sbx_error	 e;
	json_t			*doc, *v, *res;
	char			 rel[128];
	int			 rootfd = -1;

	rel_of(rel, sizeof(rel));
	if (sbx_root_open(&root, 0, &e) == 0)
		rootfd = root.fd;
	else if (e.kind == NULL || strcmp(e.kind, SBX_K_NOT_FOUND) != 0)
		sbx_cmd_die(&e);
	doc = load(rootfd, rel, 0);
	if (strcmp(sub, "show") == 0) {
		if (O.npos != 1)
			usage("show takes no KEY");
		if (O.json) {
			res = base_result(rel);
			json_object_set_new(res, "settings", doc);
			sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
		} else {
			char *s = json_dumps(doc, JSON_INDENT(2) |
			    JSON_SORT_KEYS);

			if (s != NULL)
				printf("%s\n", s);
			free(s);
			json_decref(doc);
		}
		return 0;
	}
	if (O.npos != 2)
		usage("get takes one KEY");
	(void)key_of(O.pos[1], 1);
	if ((v = sbx_cfg_get(doc, O.pos[1])) == NULL) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "key", "not_set",
		    "`%s` is not set in %s (the default applies)", O.pos[1],
		    rel);
		json_decref(doc);
		sbx_cmd_die(&e);
	}
	if (O.json) {
		res = base_result(rel);
		json_object_set_new(res, "key", json_string(O.pos[1]));
		json_object_set(res, "value", v);
		sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
	} else
		print_value(v);
	json_decref(doc);
	return 0;
}

static int
do_write(const char *sub)
{
	const struct sbx_cfg_key	*k;
	struct sbx_error		 e;
	json_t				*doc, *v, *res, *vals;
	const char			*key;
	char				 rel[128];
	int				 lock, changed = 0, r, i;
	int				 is_set = strcmp(sub, "set") == 0;
	int				 is_unset = strcmp(sub, "unset") == 0;

	if (O.npos < 2)
		usage("a KEY is needed");
	key = O.pos[1];
	if (is_unset && O.npos != 2)
		usage("unset takes one KEY");
	if (!is_unset && O.npos < 3)
		usage("a VALUE is needed");
	k = key_of(key, is_unset);
	/* Several VALUEs: set an array to them, or add (rm) each of them,
	 * as a refusal's hint names every host at once
	 * (`sbx config add allow_private_domains H1 H2 --agent A`). */
	if (k != NULL && O.npos > 3 && (is_unset ||
	    (k->type != SBX_CFG_STRINGS && k->type != SBX_CFG_INTS) ||
	    (is_set && O.json_value)))
		usage("one VALUE only (several only for a list: set, add, rm)");
	if (k != NULL && !is_set && !is_unset && k->type != SBX_CFG_STRINGS &&
	    k->type != SBX_CFG_INTS) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "key", "not_an_array",
		    "`%s` is not a list: use set or unset", key);
		sbx_cmd_die(&e);
	}
	rel_of(rel, sizeof(rel));

	/* The values, parsed before anything is locked. */
	vals = json_array();
	for (i = 2; i < O.npos; i++) {
		if ((v = sbx_cfg_parse_value(k, O.pos[i], O.json_value,
		    &e)) == NULL)
			sbx_cmd_die(&e);
		json_array_append_new(vals, v);
	}
	if (is_set && (k->type == SBX_CFG_STRINGS || k->type == SBX_CFG_INTS)
	    && !O.json_value) {
		v = vals;
		vals = json_array();
		json_array_append_new(vals, v);
	}

	if (sbx_root_open(&root, 1, &e) == -1)
		sbx_cmd_die(&e);
	/* Serialised with provision, whose writes to the same files (the
	 * migration of an old image binding) go under this lock too. */
	if ((lock = sbx_provision_lock(root.fd, &e)) == -1)
		sbx_cmd_die(&e);
	doc = load(root.fd, rel, 1);
	v = json_array_get(vals, 0);
	if (is_set)
		r = sbx_cfg_put(doc, key, json_incref(v), &e);
	else if (is_unset)
		r = sbx_cfg_put(doc, key, NULL, &e);
	else
		for (r = 0, i = 0; r != -1 && (size_t)i < json_array_size(vals);
		    i++) {
			v = json_array_get(vals, i);
			if ((changed = strcmp(sub, "add") == 0 ?
			    sbx_cfg_add(doc, key, json_incref(v), &e) :
			    sbx_cfg_rm(doc, key, v, &e)) != 0)
				r = changed;
		}
	if (r == -1)
		sbx_cmd_die(&e);
	changed = r;
	/* The edited file must load as a run loads it: what a run would
	 * refuse is refused here, with the run's own message (reason
	 * config_invalid), but it is the VALUE given that is bad, not the
	 * file: bad input, 65, not 78 as the table says for a file. */
	if (changed && sbx_cfg_validate(doc, !O.global, rel, &e) == -1)
		sbx_cmd_die_extra(&e, NULL, SBX_EX_DATAERR);
	if (changed && sbx_cfg_store(root.fd, agent(), doc, &e) == -1)
		sbx_cmd_die(&e);
	close(lock);

	if (O.json) {
		res = base_result(rel);
		json_object_set_new(res, "key", json_string(key));
		json_object_set_new(res, "changed", json_boolean(changed));
		if ((v = sbx_cfg_get(doc, key)) != NULL)
			json_object_set(res, "value", v);
		else
			json_object_set_new(res, "value", json_null());
		sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
	} else if (!O.quiet) {
		struct sbx_buf	 b = SBX_BUF_INIT;
		char		*s = NULL;

		if ((v = sbx_cfg_get(doc, key)) != NULL)
			s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (s != NULL)
			sbx_utf8_escape_line(&b, s, strlen(s));
		printf("%s: %s%s%s (%s)\n", rel, key, s != NULL ? " = " :
		    " unset", b.p != NULL ? b.p : "", changed ? "changed" :
		    "unchanged");
		sbx_buf_release(&b);
		free(s);
	}
	json_decref(doc);
	json_decref(vals);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct sbx_error	 e;
	const char		*sub;
	unsigned		 bit;
	int			 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	if (O.npos == 0)
		usage("a subcommand is needed");
	sub = O.pos[0];
	if (strlen(sub) < 16)
		snprintf(tool, sizeof(tool), "config.%s", sub);
	if ((bit = sbx_opts_sub_find(&table, 1, (char **)O.pos, NULL)) != 0 &&
	    sbx_opts_check(&table, &seen, bit, &e) == -1) {
		if (O.json)
			sbx_cmd_emit(sbx_envelope_err(tool, &e, NULL));
		else
			sbx_cmd_report(PROG, tool, 0, &e, NULL, sbx_cmd_emit);
		fputs(usage_text, stderr);
		exit(SBX_EX_USAGE);
	}
	if (O.agent != NULL && O.global)
		usage("--agent and --global exclude each other");
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
	if (!O.global && sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (O.json_value && strcmp(sub, "set") != 0 && strcmp(sub, "add") !=
	    0 && strcmp(sub, "rm") != 0)
		usage("--json-value goes with set, add and rm");
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(sub, "keys") == 0) {
		if (O.npos != 1)
			usage("keys takes no argument");
		return do_keys();
	}
	if (strcmp(sub, "get") == 0 || strcmp(sub, "show") == 0)
		return do_read(sub);
	if (strcmp(sub, "set") == 0 || strcmp(sub, "unset") == 0 ||
	    strcmp(sub, "add") == 0 || strcmp(sub, "rm") == 0)
		return do_write(sub);
	usage("unknown subcommand");
}
