/*
 * sbx-proxy: the filtering egress proxy of `sbx exec --network proxy`.
 * See sbx-proxy(1).  The event loop lives in proxy.c; this is the
 * command line: serve (daemon, one per state root), status, stop, check.
 */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/capability.h>

#include <jansson.h>

#include "buf.h"
#include "cfgcheck.h"
#include "cli.h"
#include "cmd.h"
#include "daemon-serve.h"
#include "daemon.h"
#include "envelope.h"
#include "fsutil.h"
#include "install.h"
#include "layout.h"
#include "names.h"
#include "netpolicy.h"
#include "opts.h"
#include "proxy-int.h"
#include "proxy.h"
#include "proxyclient.h"
#include "root.h"

static const char usage_text[] =
"usage: sbx proxy serve [--foreground] [--home DIR] [--json] [-q] [-v]\n"
"       sbx proxy status [--home DIR] [--json] [-q]\n"
"       sbx proxy stop [--home DIR] [--json] [-q]\n"
"       sbx proxy check [--agent A] [--allow-domain D]...\n"
"                       [--install apt|npm|pip] [--resolve] HOST[:PORT]\n"
"                       [--home DIR] [--json] [-q]\n"
"       sbx proxy asks [--follow] [--home DIR] [--json] [-q]\n"
"       sbx proxy answer ID allow-once|allow-always|deny|deny-always\n"
"                        [--home DIR] [--json] [-q]\n";

static const char help_text[] =
"\n"
"The filtering egress proxy of `sbx exec --network proxy`: HTTP and HTTPS\n"
"(CONNECT) only to the domains the agent's allowlist names, never to an IP\n"
"literal or a private address, with the agent's token. sbx exec starts it\n"
"on demand; it exits after a while without work.\n"
"\n"
"  serve                  run the proxy of this state root (one per root)\n"
"  status                 is it running? (exit 0 yes, 1 no)\n"
"  stop                   ask it to exit; wait until it has\n"
"  check HOST[:PORT]      the policy's decision for the agent, without\n"
"                         connecting or resolving (exit 0 allowed, 1 denied)\n"
"  asks                   the requests held for a decision (network_ask,\n"
"                         sbx exec --ask); --follow: JSON lines as they come\n"
"  answer ID ANSWER       release one: allow-once, allow-always (added to\n"
"                         the agent's allowlist), deny, deny-always\n"
"\n";

enum { OPT_HOME = 256, OPT_FOREGROUND, OPT_ALLOW, OPT_VERSION, OPT_RESOLVE,
	OPT_FOLLOW, OPT_INSTALL };

/* The subcommands; the program has no form without one. */
enum {
	S_SERVE = 1, S_STATUS = 2, S_STOP = 4, S_CHECK = 8, S_ASKS = 16,
	S_ANSWER = 32,
	S_ALL = S_SERVE | S_STATUS | S_STOP | S_CHECK | S_ASKS | S_ANSWER,
};

static const struct sbx_opts_sub subs[] = {
	{ "serve", S_SERVE, NULL }, { "status", S_STATUS, NULL },
	{ "stop", S_STOP, NULL }, { "check", S_CHECK, "@text" },
	{ "asks", S_ASKS, NULL }, { "answer", S_ANSWER, "@text" },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent (default: $SBX_AGENT or \"default\")", S_CHECK, 0 },
	{ OPT_ALLOW, "allow-domain", 0, SBX_OPT_REQ, "D", NULL,
	    "check: an extra allowlist entry, as sbx exec's", S_CHECK, 0 },
	{ OPT_FOLLOW, "follow", 0, SBX_OPT_NONE, NULL, NULL,
	    "asks: keep printing asks and answers as JSON lines", S_ASKS, 0 },
	{ OPT_FOREGROUND, "foreground", 0, SBX_OPT_NONE, NULL, NULL,
	    "serve: do not detach; log to stderr", S_SERVE, 0 },
	{ OPT_INSTALL, "install", 0, SBX_OPT_REQ, "MANAGER", "apt|npm|pip",
	    "check: as an sbx install run of MANAGER: its\n"
	    "registries are allowed, as that run allows them", S_CHECK, 0 },
	{ OPT_RESOLVE, "resolve", 0, SBX_OPT_NONE, NULL, NULL,
	    "check: resolve the name as the proxy would and\n"
	    "judge each address too", S_CHECK, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, S_ALL),
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing on success", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "serve: more detail", S_SERVE, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx proxy", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 25, 0 };

struct proxy_opts	 O;
/* The envelope's tool: proxy, then proxy.SUB. */
static char		 tool[32] = "proxy";

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL,
	.tool = tool };

static void __attribute__((noreturn))
usage(void)
{
	sbx_cmd_usage_exit(NULL);
}

/* The daemon's settings and loop (daemon-serve.h). */
static struct sbx_proxy_config	 cfg;

static int
load(int rootfd, void *arg, struct sbx_error *e)
{
	struct sbx_proxy_config *c = arg;

	if (sbx_proxy_config_load(rootfd, c, e) == -1)
		return -1;
	/* An ask answered allow-always or deny-always is written to the
	 * agent's settings after the checks `sbx config` makes: they sit
	 * above the proxy (cfgcheck.c), so they are given. */
	c->validate = sbx_cfg_validate;
	return 0;
}

static int
serve(int rootfd, int lfd, void *arg, struct sbx_error *e)
{
	return sbx_proxy_serve(rootfd, lfd, arg, e);
}

/* The proxy as a daemon of run/; its status also says its uptime and,
 * for people, its socket. */
static const char *const status_keys[] = { "uptime_s", NULL };
static const struct sbx_cmd_daemon proxyd = { PROG, "proxy", "proxy.pid",
	"proxy.sock", 0, 0, load, serve, &cfg, status_keys, 1 };

/* The options, after the subcommand or before it; returns the
 * subcommand and leaves its operands in *argcp, *argvp. */
static const char *
parse_args(int *argcp, char ***argvp)
{
	struct sbx_error	 e;
	int			 argc = *argcp, ch;
	char			**argv = *argvp;
	const char		*sub;

	/* The subcommand first, options after it (or before). */
	sub = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
	if (sub != NULL) {
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			break;
		case OPT_ALLOW:
			json_array_append_new(O.allow, json_string(optarg));
			break;
		case OPT_FOREGROUND:
			O.foreground = 1;
			break;
		case OPT_FOLLOW:
			O.follow = 1;
			break;
		case OPT_RESOLVE:
			O.resolve = 1;
			break;
		case OPT_INSTALL:
			if (sbx_install_manager(optarg, &e) == -1) {
				sbx_error_set(&e, SBX_K_INVALID_ARGS,
				    "--install", "invalid_value", "--install: "
				    "`%s` is not a package manager: apt, npm "
				    "or pip", optarg);
				sbx_cmd_usage_exit(&e);
			}
			O.install = optarg;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
		}
	}
	argc -= optind;
	argv += optind;
	if (sub == NULL && argc > 0) {
		sub = argv[0];
		argc--;
		argv++;
	}
	*argcp = argc;
	*argvp = argv;
	return sub;
}

/* The subcommand and its operand count; the tool name; the options it
 * was given checked against it. */
static void
check_sub(const char *sub, int argc)
{
	static const struct { const char *name; int nargs; } forms[] = {
		{ "serve", 0 }, { "status", 0 }, { "stop", 0 },
		{ "check", 1 }, { "asks", 0 }, { "answer", 2 },
	};
	struct sbx_error	 e;
	char			*w[1] = { (char *)sub };
	size_t			 i;

	memset(&e, 0, sizeof(e));
	if (sub == NULL)
		usage();
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++)
		if (strcmp(sub, forms[i].name) == 0)
			break;
	if (i == sizeof(forms) / sizeof(forms[0])) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "subcommand",
		    "unknown_subcommand", "unknown subcommand `%s`", sub);
		sbx_cmd_usage_exit(&e);
	}
	if (argc != forms[i].nargs)
		usage();
	snprintf(tool, sizeof(tool), "proxy.%s", sub);
	if (sbx_opts_check(&table, &seen, sbx_opts_sub_find(&table, 1, w,
	    NULL), &e) == -1)
		sbx_cmd_usage_exit(&e);
}

int
main(int argc, char *argv[])
{
	struct sbx_root		 root = SBX_ROOT_INIT;
	struct sbx_error	 e;
	const char		*sub;
	int			 ch;

	if (sbx_cmd_start(&cmdopts, argc, argv, &ch))
		return ch;
	memset(&e, 0, sizeof(e));
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported. */
	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		return SBX_EX_SOFTWARE;
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	O.allow = json_array();
	O.agent = getenv("SBX_AGENT");
	if (O.agent == NULL || *O.agent == '\0')
		O.agent = "default";
	sub = parse_args(&argc, &argv);
	check_sub(sub, argc);
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(sub, "serve") == 0) {
		/* A daemon keeps nothing its starter had open: a pipe held
		 * by it would keep the starter's reader waiting forever. */
		sbx_fs_close_from(3, NULL, 0);
		if (sbx_root_open(&root, 1, &e) == -1)
			sbx_cmd_die(&e);
		return sbx_cmd_daemon_serve(&proxyd, &root, O.quiet,
		    O.foreground);
	}
	/* The others create nothing: a missing root means not running. */
	if (sbx_root_open(&root, 0, &e) == -1 && (e.reason == NULL ||
	    strcmp(e.reason, "state_root_missing") != 0))
		sbx_cmd_die(&e);
	ch = strcmp(sub, "check") == 0 ? proxy_cmd_check(&root, argv[0]) :
	    strcmp(sub, "asks") == 0 ? proxy_cmd_asks(&root) :
	    strcmp(sub, "answer") == 0 ? proxy_cmd_answer(&root, argv[0],
	    argv[1]) : sbx_cmd_daemon_status(&proxyd, &root,
	    strcmp(sub, "stop") == 0);
	sbx_root_release(&root);
	json_decref(O.allow);
	return ch;
}
