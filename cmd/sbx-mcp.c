/*
 * sbx-mcp: an MCP server over stdio for one agent: any MCP client (an
 * agent framework, an editor) runs commands, files and installs in the
 * agent's sandbox through it.  See sbx-mcp(1).
 *
 * Parse, validate, then lib/service/mcp.c serves until the client closes
 * stdin.  stdout carries the protocol alone; nothing else is printed
 * there once the server runs.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "fsutil.h"
#include "mcp.h"
#include "mcpconf.h"
#include "names.h"
#include "opts.h"
#include "root.h"
#include "tools.h"

#define PROG "sbx-mcp"

static const char usage_text[] =
    "usage: sbx mcp [--agent A] [--home DIR] [--max-runs N]\n"
    "               [--max-per-minute N] [--max-message BYTES]\n"
    "               [--no-session] [--json] [-q] [-v]\n";

static const char help_text[] =
    "\n"
    "Serve the Model Context Protocol on stdin and stdout (JSON-RPC 2.0, one\n"
    "message a line) for one client and one agent: shell_run,\n"
    "sandbox_process, file_read, file_search, file_write, file_edit,\n"
    "file_list, sandbox_install, secret_check, secret_request and the\n"
    "agent's plugin tools (plugin-ID-TOOL), each run in the agent's\n"
    "sandbox.  A client configures it as\n"
    "{\"command\":\"sbx\",\"args\":[\"mcp\",\"--agent\",\"A\"]}.  At the end\n"
    "of its input it answers the calls still running, then exits; a signal\n"
    "cancels them.\n"
    "\n";

enum {
	OPT_HOME = 256,
	OPT_VERSION,
	OPT_MAX_RUNS,
	OPT_PER_MINUTE,
	OPT_MAX_MESSAGE,
	OPT_NO_SESSION
};

static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "the agent (default: $SBX_AGENT or \"default\")", 1, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME,\n"
	    "$XDG_DATA_HOME/sbx, ~/.local/share/sbx)",
	    1, 0 },
	{ OPT_MAX_RUNS, "max-runs", 0, SBX_OPT_REQ, "N", NULL,
	    "tool calls running at once (default: mcp.max_runs\n"
	    "of the settings, or 8; at most 64)",
	    1, 0 },
	{ OPT_PER_MINUTE, "max-per-minute", 0, SBX_OPT_REQ, "N", NULL,
	    "tool calls started per minute (default:\n"
	    "mcp.max_per_minute, or 120; 0: no limit)",
	    1, 0 },
	{ OPT_MAX_MESSAGE, "max-message", 0, SBX_OPT_REQ, "BYTES", NULL,
	    "largest message accepted (default 16777216)", 1, 0 },
	{ OPT_NO_SESSION, "no-session", 0, SBX_OPT_NONE, NULL, NULL,
	    "run each shell_run in a sandbox of its own (default:\n"
	    "one warm session per client, sbx-session(1))", 1, 0 },
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "a failure before serving as a JSON envelope", 1, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL, "no warnings on stderr",
	    1, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL, "more on stderr", 1,
	    0 },
	SBX_OPT_ROW_HELP(1),
	SBX_OPT_ROW_VERSION(OPT_VERSION, 1),
};

static const struct sbx_opts table = { PROG, "sbx mcp", rows, SBX_OPTS_N(rows),
	NULL, 0, 1, NULL, 25, 0 };

static struct {
	const char *agent, *home, *max_runs, *per_minute, *max_message;
	int	    json, no_session;
} O;

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, 1, &O.json, NULL, NULL, NULL, .tool = "mcp" };

static void
parse_args(int argc, char *argv[])
{
	struct sbx_opts_getopt g;
	int		       ch;

	if (sbx_opts_getopt(&table, 1, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, NULL)) != -1) {
		switch (ch) {
		case 'a': O.agent = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		case OPT_MAX_RUNS: O.max_runs = optarg; break;
		case OPT_PER_MINUTE: O.per_minute = optarg; break;
		case OPT_MAX_MESSAGE: O.max_message = optarg; break;
		case OPT_NO_SESSION: O.no_session = 1; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	if (optind != argc)
		sbx_cmd_usage_why("sbx mcp takes no operand");
}

/* A number option: lo..hi, or the default when not given. */
static unsigned long long
number(const char *arg, const char *field, unsigned long long lo,
    unsigned long long hi, unsigned long long def)
{
	struct sbx_error   e;
	unsigned long long v;

	if (arg == NULL)
		return def;
	if (sbx_cli_parse_uint(arg, hi, &v) == -1 || v < lo) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, field, "out_of_range",
		    "argument `%s` must be a number from %llu to %llu", field,
		    lo, hi);
		sbx_cmd_die(&e);
	}
	return v;
}

/*
 * The limits: the options, else the agent's settings (mcp.max_runs,
 * mcp.max_per_minute), else the global ones, else the defaults.  A root
 * that does not exist yet has no settings; one that is unreadable or has
 * a bad value is a failure before serving.
 */
static void
limits(struct sbx_mcp_conf *c)
{
	static struct sbx_mcp_limits l = { SBX_MCP_RUNS_DEFAULT,
		SBX_MCP_PER_MINUTE_DEFAULT, "none" };
	struct sbx_root		     root = SBX_ROOT_INIT;
	struct sbx_error	     e;

	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_open(&root, 0, &e) == 0) {
		if (sbx_mcpconf_load(root.fd, c->agent, &l, &e) == -1)
			sbx_cmd_die(&e);
	} else if (e.kind == NULL || strcmp(e.kind, SBX_K_NOT_FOUND) != 0)
		sbx_cmd_die(&e);
	sbx_root_release(&root);
	c->network_max = l.network;
	c->no_session = O.no_session;
	c->max_runs = (unsigned)number(O.max_runs, "max-runs", 1,
	    SBX_MCP_RUNS_LIMIT, l.max_runs);
	c->per_minute = (unsigned)number(O.per_minute, "max-per-minute", 0,
	    SBX_MCP_PER_MINUTE_LIMIT, l.per_minute);
}

int
main(int argc, char *argv[])
{
	struct sbx_mcp_conf c;
	struct sbx_error    e;
	const char	   *p;
	int		    rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	memset(&c, 0, sizeof(c));
	c.agent = O.agent;
	if (c.agent == NULL)
		c.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") :
		    "default";
	if (sbx_names_agent_valid(c.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	c.home = O.home;
	limits(&c);
	c.msg_max = (size_t)number(O.max_message, "max-message", 1024,
	    SBX_ENVELOPE_MAX, SBX_MCP_MSG_MAX);
	/* The tools' programs: SBX_EXEC_PATH (secure_getenv ignores it in a
	 * set-id context), else our own directory, where sbx-mcp and its
	 * siblings are installed together (not the libexec directory of
	 * the build, which `make install PREFIX=` may have moved). */
	p = secure_getenv("SBX_EXEC_PATH");
	if (p != NULL && *p == '/')
		c.libexec = p;
	else if ((c.libexec = sbx_tools_self_dir()) == NULL)
		c.libexec = SBX_LIBEXECDIR;
	c.in_fd = STDIN_FILENO;
	c.out_fd = STDOUT_FILENO;
	c.version = SBX_VERSION;
	if (sbx_mcp_serve(&c, &e) == -1)
		sbx_cmd_die(&e);
	return 0;
}
