/*
 * sbx-session: warm sandboxes, one kept running per session, its policy
 * fixed at start; `sbx exec --session NAME` runs commands in it.  See
 * sbx-session(1).  start builds the sandbox through the run engine
 * (lib/exec) and hands it to a detached supervisor (lib/exec/warm.c); ls,
 * show and stop read the records (lib/exec/warmrec.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "exec.h"
#include "layout.h"
#include "names.h"
#include "netmode.h"
#include "opts.h"
#include "root.h"
#include "sandbox.h"
#include "warm.h"

#define PROG "sbx-session"

static const char usage_text[] =
    "usage: sbx session start [--agent A] [--name N] [--network MODE]\n"
    "                         [--workdir DIR]... [--ro PATH]... [--env NAME=VALUE]...\n"
    "                         [--memory MIB] [--cpus N.N] [--pids N] [--disk MIB]\n"
    "                         [--nofile N] [--file-size MIB]\n"
    "                         [--secret NAME]... [--no-secrets]\n"
    "                         [--idle-timeout S] [--max-lifetime S]\n"
    "                         [--home DIR] [--json] [-q] [-v]\n"
    "       sbx session ls [--agent A] [--home DIR] [--json] [-q]\n"
    "       sbx session show NAME [--home DIR] [--json] [-q]\n"
    "       sbx session stop NAME [--home DIR] [--json] [-q]\n";

static const char help_text[] =
    "\n"
    "A warm sandbox: built once, kept running, its policy fixed at start;\n"
    "sbx exec --session NAME runs each command in it in a few milliseconds,\n"
    "each with a fresh environment, its own process group and nothing left\n"
    "behind when it ends. Commands share the file system (/tmp, the home).\n"
    "\n"
    "  start                  build a session; print its name\n"
    "  ls                     the sessions of this state root\n"
    "  show NAME              one session's record\n"
    "  stop NAME              end it, and every process in it\n"
    "\n";

enum {
	OPT_HOME = 256,
	OPT_VERSION,
	OPT_NAME,
	OPT_IDLE,
	OPT_LIFE,
	OPT_RO,
	OPT_MEMORY,
	OPT_CPUS,
	OPT_PIDS,
	OPT_DISK,
	OPT_NOFILE,
	OPT_FSIZE,
	OPT_NO_SECRETS,
	OPT_SECRET
};

enum {
	S_START = 1,
	S_LS = 2,
	S_SHOW = 4,
	S_STOP = 8,
	S_ALL = S_START | S_LS | S_SHOW | S_STOP,
};

static const struct sbx_opts_sub subs[] = {
	{ "start", S_START, NULL },
	{ "ls", S_LS, NULL },
	{ "show", S_SHOW, "@text" },
	{ "stop", S_STOP, "@text" },
};

static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent (default: $SBX_AGENT or \"default\")", S_START | S_LS, 0 },
	{ OPT_NAME, "name", 0, SBX_OPT_REQ, "N", NULL,
	    "start: the session's name (default: AGENT-XXXXXX)", S_START, 0 },
	{ 'n', "network", 'n', SBX_OPT_REQ, "MODE", SBX_NETMODE_CHOICES,
	    "start: none, proxy or outbound (as sbx exec)", S_START, 0 },
	{ 'w', "workdir", 'w', SBX_OPT_REQ, "DIR", "@dir",
	    "start: bind DIR read-write at its own path\n"
	    "(repeatable, as sbx exec)",
	    S_START, 0 },
	{ OPT_RO, "ro", 0, SBX_OPT_REQ, "PATH", "@dir",
	    "start: bind PATH read-only (repeatable)", S_START, 0 },
	{ 'e', "env", 'e', SBX_OPT_REQ, "NAME=VALUE", NULL,
	    "start: a variable of every command (repeatable)", S_START, 0 },
	{ OPT_MEMORY, "memory", 0, SBX_OPT_REQ, "MIB", NULL,
	    "start: the session's memory limit", S_START, 0 },
	{ OPT_CPUS, "cpus", 0, SBX_OPT_REQ, "N.N", NULL,
	    "start: the session's CPU limit", S_START, 0 },
	{ OPT_PIDS, "pids", 0, SBX_OPT_REQ, "N", NULL,
	    "start: the session's task limit", S_START, 0 },
	{ OPT_DISK, "disk", 0, SBX_OPT_REQ, "MIB", NULL,
	    "start: size of /tmp and largest file", S_START, 0 },
	{ OPT_NOFILE, "nofile", 0, SBX_OPT_REQ, "N", NULL,
	    "start: open files limit", S_START, 0 },
	{ OPT_FSIZE, "file-size", 0, SBX_OPT_REQ, "MIB", NULL,
	    "start: largest file a command may write", S_START, 0 },
	{ OPT_SECRET, "secret", 0, SBX_OPT_REQ, "NAME", "@text",
	    "start: only these of the agent's secrets (repeatable)", S_START,
	    0 },
	{ OPT_NO_SECRETS, "no-secrets", 0, SBX_OPT_NONE, NULL, NULL,
	    "start: none of the agent's secrets", S_START, 0 },
	{ OPT_IDLE, "idle-timeout", 0, SBX_OPT_REQ, "S", NULL,
	    "start: stop after S seconds without a command", S_START, 0 },
	{ OPT_LIFE, "max-lifetime", 0, SBX_OPT_REQ, "S", NULL,
	    "start: stop S seconds after the start", S_START, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
	    "~/.local/share/sbx)",
	    S_ALL, 0 },
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "print JSON (also SBX_JSON=1)", S_ALL, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing on success", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "start: show the bwrap command on stderr", S_START, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx session", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 25, 0 };

static struct {
	const char *home, *name, *idle, *life;
	int	    json, quiet, verbose;
} O;
static char tool[32] = "session";

static struct sbx_opts_getopt g;
static struct sbx_opts_seen   seen;
static struct sbx_exec_req    R;
static struct sbx_exec	      X;

static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text, NULL,
	&table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL, .tool = tool };

/* An option of sbx exec's, into the request by the one table. */
static void
field(const char *name, const char *v)
{
	const struct sbx_exec_field *f = sbx_exec_field_option(name);

	if (f == NULL || sbx_exec_field_set(&R, f, v) == -1)
		exit(SBX_EX_SOFTWARE);
}

static void
parse(int argc, char *argv[], const char **subp, int *nargs, char ***args)
{
	static char *ops[8];
	const char  *sub;
	int	     ch, nops = 0;

	sub = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
	if (sub != NULL) {
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opterr = 0;
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a': R.agent = optarg; break;
		case 'n': field("network", optarg); break;
		case 'w':
			if (R.workdir == NULL)
				R.workdir = optarg;
			else if (sbx_strv_push(&R.xworkdirs, optarg) == -1)
				exit(SBX_EX_OSERR);
			break;
		case OPT_RO: field("ro", optarg); break;
		case 'e': field("env", optarg); break;
		case OPT_MEMORY: field("memory", optarg); break;
		case OPT_CPUS: field("cpus", optarg); break;
		case OPT_PIDS: field("pids", optarg); break;
		case OPT_DISK: field("disk", optarg); break;
		case OPT_NOFILE: field("nofile", optarg); break;
		case OPT_FSIZE: field("file-size", optarg); break;
		case OPT_NO_SECRETS: field("no-secrets", NULL); break;
		case OPT_SECRET: field("secret", optarg); break;
		case OPT_NAME: O.name = optarg; break;
		case OPT_IDLE: O.idle = optarg; break;
		case OPT_LIFE: O.life = optarg; break;
		case OPT_HOME: O.home = R.home = optarg; break;
		default: sbx_cmd_opt(&cmdopts, ch, argc, argv, &g); break;
		}
	}
	for (; optind < argc; optind++) {
		if (nops == 8)
			sbx_cmd_usage_exit(NULL);
		ops[nops++] = argv[optind];
	}
	*subp = sub;
	*nargs = nops;
	*args = ops;
}

static double
seconds(const char *s, const char *name)
{
	struct sbx_error e;
	char		*end;
	double		 v;

	if (s == NULL)
		return 0;
	errno = 0;
	v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || errno != 0 || !(v > 0) ||
	    v > 31536000) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, name, "out_of_range",
		    "argument `%s` must be a number of seconds above 0", name);
		sbx_cmd_usage_exit(&e);
	}
	return v;
}

static void
open_root(struct sbx_root *root, int must)
{
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	if (sbx_root_resolve(O.home, root, &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_open(root, 0, &e) == -1) {
		if (!must && e.kind != NULL &&
		    strcmp(e.kind, SBX_K_NOT_FOUND) == 0)
			return;
		sbx_cmd_die(&e);
	}
}

static int
run_dir(struct sbx_root *root)
{
	if (root->fd < 0)
		return -1;
	return sbx_layout_open(root->fd, SBX_L_RUN, NULL,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC, NULL);
}

static void
print_rec(const json_t *r)
{
	const char *k;
	json_t	   *v;
	char	   *s;

	json_object_foreach ((json_t *)r, k, v) {
		if (json_is_string(v))
			printf("%-14s %s\n", k, json_string_value(v));
		else {
			s = json_dumps(v,
			    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
			printf("%-14s %s\n", k, s != NULL ? s : "?");
			free(s);
		}
	}
}

static int
cmd_start(void)
{
	struct sbx_error     e;
	struct sbx_warm_opts wo;
	static char	    *placeholder[] = { "sbx-session", NULL };
	json_t		    *rec, *pol;
	int		     rc;

	memset(&e, 0, sizeof(e));
	memset(&wo, 0, sizeof(wo));
	if (sbx_sandbox_refuse_nested(&e) == -1)
		sbx_cmd_die(&e);
	wo.name = O.name;
	wo.idle_timeout = seconds(O.idle, "idle_timeout");
	wo.max_lifetime = seconds(O.life, "max_lifetime");
	if (O.name != NULL && sbx_warm_name_valid(O.name, &e) == -1) {
		e.field = "name";
		sbx_cmd_usage_exit(&e);
	}
	R.session = 1;
	R.argv = placeholder;
	R.argc = 1;
	R.stdin_mode = "null";
	R.verbose = O.verbose;
	if ((rc = sbx_exec_validate(&R, &e)) != 0) {
		if (rc == -2)
			sbx_cmd_usage_exit(&e);
		sbx_cmd_die(&e);
	}
	X.secrets_per_command = 1;
	if (sbx_exec_prepare(&X, &R, &e) == -1)
		sbx_cmd_die(&e);
	if (X.bwrap_line != NULL)
		fprintf(stderr, "%s: %s\n", PROG, X.bwrap_line);
	if ((pol = sbx_warm_policy(&R)) == NULL)
		exit(SBX_EX_OSERR);
	wo.policy = pol;
	rec = sbx_warm_start(&X, &wo, &e);
	json_decref(pol);
	if (rec == NULL)
		sbx_cmd_die(&e);
	if (!O.json && !O.quiet)
		printf("%s\n", json_string_value(json_object_get(rec, "name")));
	sbx_cmd_done(rec, NULL);
	return 0;
}

static int
cmd_ls(void)
{
	struct sbx_root	 root = { .fd = -1 };
	struct sbx_error e;
	json_t		*list, *r;
	size_t		 i, reaped;
	int		 runfd;

	memset(&e, 0, sizeof(e));
	open_root(&root, 0);
	if ((runfd = run_dir(&root)) == -1)
		list = json_array();
	else if ((list = sbx_warmrec_list(runfd, R.agent, 0, &reaped, &e)) ==
	    NULL)
		sbx_cmd_die(&e);
	if (!O.json && !O.quiet)
		json_array_foreach (list, i, r)
			printf("%-24s %-16s %-8s %s\n",
			    json_string_value(json_object_get(r, "name")),
			    json_string_value(json_object_get(r, "agent")),
			    json_is_true(json_object_get(r, "alive")) ?
				"running" :
				"dead",
			    json_string_value(
				json_object_get(r, "started_at")));
	sbx_cmd_done(json_pack("{s:o}", "sessions", list), NULL);
	return 0;
}

static int
cmd_show(const char *name)
{
	struct sbx_root	 root = { .fd = -1 };
	struct sbx_error e;
	json_t		*r;
	int		 runfd;

	memset(&e, 0, sizeof(e));
	if (sbx_warm_name_valid(name, &e) == -1)
		sbx_cmd_usage_exit(&e);
	open_root(&root, 1);
	if ((runfd = run_dir(&root)) == -1) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "session", "no_such_session",
		    "no session named %s", name);
		sbx_cmd_die(&e);
	}
	if ((r = sbx_warmrec_load(runfd, name, &e)) == NULL)
		sbx_cmd_die(&e);
	json_object_set_new(r, "alive", json_boolean(sbx_warmrec_alive(r)));
	if (!O.json && !O.quiet)
		print_rec(r);
	sbx_cmd_done(r, NULL);
	return 0;
}

static int
cmd_stop(const char *name)
{
	struct sbx_root	 root = { .fd = -1 };
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	if (sbx_warm_name_valid(name, &e) == -1)
		sbx_cmd_usage_exit(&e);
	open_root(&root, 1);
	if (sbx_warm_stop(root.fd, name, 10000, &e) == -1)
		sbx_cmd_die(&e);
	sbx_cmd_done(json_pack("{s:s,s:b}", "name", name, "stopped", 1), NULL);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct sbx_error e = { 0 };
	const char	*sub;
	char	       **args, *w[1];
	unsigned	 bit;
	int		 ch, n;

	if (sbx_cmd_start(&cmdopts, argc, argv, &ch))
		return ch;
	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		return SBX_EX_SOFTWARE;
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	sbx_exec_req_init(&R);
	sbx_exec_init(&X);
	/* sbx-init is beside us in the libexec directory. */
	parse(argc, argv, &sub, &n, &args);
	if (sub == NULL)
		sbx_cmd_usage_exit(NULL);
	w[0] = (char *)sub;
	if ((bit = sbx_opts_sub_find(&table, 1, w, NULL)) == 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "subcommand",
		    "unknown_subcommand", "unknown subcommand `%s`", sub);
		sbx_cmd_usage_exit(&e);
	}
	snprintf(tool, sizeof(tool), "session.%s", sub);
	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		sbx_cmd_usage_exit(&e);
	if (R.agent == NULL && getenv("SBX_AGENT") != NULL &&
	    *getenv("SBX_AGENT") != '\0')
		R.agent = getenv("SBX_AGENT");
	if (R.agent != NULL &&
	    sbx_names_agent_valid(R.agent, "agent", &e) == -1)
		sbx_cmd_usage_exit(&e);
	if ((bit == S_START || bit == S_LS) != (n == 0) || n > 1)
		sbx_cmd_usage_exit(NULL);
	switch (bit) {
	case S_START: return cmd_start();
	case S_LS: return cmd_ls();
	case S_SHOW: return cmd_show(args[0]);
	default: return cmd_stop(args[0]);
	}
}
