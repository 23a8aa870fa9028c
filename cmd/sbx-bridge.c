/*
 * sbx-bridge: the host API for code inside the sandbox (sbx-host is its
 * client there).  See sbx-bridge(1).  The server lives in lib/service/bridge.c,
 * its routes in lib/service/bridgeapi.c, the records in lib/state/bridgestore.c;
 * this is the command line: serve (daemon, one per state root), status,
 * stop, and the orchestrator's side: events, tasks, task done.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bridge.h"
#include "bridgestore.h"
#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "daemon-serve.h"
#include "daemon.h"
#include "envelope.h"
#include "fsutil.h"
#include "names.h"
#include "opts.h"
#include "proxyclient.h"
#include "root.h"

#define PROG "sbx-bridge"

static const char usage_text[] =
    "usage: sbx bridge serve [--foreground] [--home DIR] [--json] [-q] [-v]\n"
    "       sbx bridge status [--home DIR] [--json] [-q]\n"
    "       sbx bridge stop [--home DIR] [--json] [-q]\n"
    "       sbx bridge events [--agent A] [--since ID] [--follow] [--home DIR]\n"
    "                         [--json] [-q]\n"
    "       sbx bridge tasks [--agent A] [--follow] [--home DIR] [--json] [-q]\n"
    "       sbx bridge task done ID [--agent A] [--result JSON] [--home DIR]\n"
    "                            [--json] [-q]\n";

static const char help_text[] =
    "\n"
    "The host API of code inside the sandbox (sbx-host there): plugin\n"
    "secrets, config, events, memory, inference, dispatch and a log, each\n"
    "request authenticated as one agent by its token. sbx exec starts it on\n"
    "demand for agents with bridge.enabled; it exits after a while without\n"
    "work.\n"
    "\n"
    "  serve                  run the bridge of this state root (one per root)\n"
    "  status                 is it running? (exit 0 yes, 1 no)\n"
    "  stop                   ask it to exit; wait until it has\n"
    "  events                 the agent's events (JSON lines with --json)\n"
    "  tasks                  the agent's dispatched tasks\n"
    "  task done ID           mark a task done\n"
    "\n";

enum { OPT_HOME = 256, OPT_FOREGROUND, OPT_VERSION, OPT_SINCE, OPT_RESULT };

enum {
	S_SERVE = 1,
	S_STATUS = 2,
	S_STOP = 4,
	S_EVENTS = 8,
	S_TASKS = 16,
	S_TASK = 32,
	S_ALL = S_SERVE | S_STATUS | S_STOP | S_EVENTS | S_TASKS | S_TASK,
};

static const struct sbx_opts_sub subs[] = {
	{ "serve", S_SERVE, NULL },
	{ "status", S_STATUS, NULL },
	{ "stop", S_STOP, NULL },
	{ "events", S_EVENTS, NULL },
	{ "tasks", S_TASKS, NULL },
	{ "task done", S_TASK, "@text" },
};

static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent (default: $SBX_AGENT or \"default\")",
	    S_EVENTS | S_TASKS | S_TASK, 0 },
	{ 'f', "follow", 'f', SBX_OPT_NONE, NULL, NULL,
	    "events, tasks: keep printing new ones", S_EVENTS | S_TASKS, 0 },
	{ OPT_FOREGROUND, "foreground", 0, SBX_OPT_NONE, NULL, NULL,
	    "serve: do not detach; log to stderr", S_SERVE, 0 },
	{ OPT_RESULT, "result", 0, SBX_OPT_REQ, "JSON", NULL,
	    "task done: the task's result", S_TASK, 0 },
	{ OPT_SINCE, "since", 0, SBX_OPT_REQ, "ID", NULL,
	    "events: only those after event ID", S_EVENTS, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
	    "~/.local/share/sbx)",
	    S_ALL, 0 },
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "print JSON (also SBX_JSON=1)", S_ALL, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing on success", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL, "serve: more detail",
	    S_SERVE, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx bridge", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 25, 0 };

static struct {
	const char *agent, *home, *result;
	long long   since;
	int	    foreground, json, quiet, verbose, follow;
} O;
/* The envelope's tool: bridge, then bridge.SUB. */
static char tool[32] = "bridge";

static struct sbx_opts_getopt g;
static struct sbx_opts_seen   seen;

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL,
	.tool = tool };

/* The daemon's settings and loop (daemon-serve.h). */
static struct sbx_bridge_config	 cfg;

static int
load(int rootfd, void *arg, struct sbx_error *e)
{
	return sbx_bridge_config_load(rootfd, arg, e);
}

static int
serve(int rootfd, int lfd, void *arg, struct sbx_error *e)
{
	return sbx_bridge_serve(rootfd, lfd, arg, e);
}

/* The bridge as a daemon of run/. */
static const struct sbx_cmd_daemon bridged = { PROG, "bridge", SBX_BRIDGE_PID,
	SBX_BRIDGE_SOCK, 0, 0, load, serve, &cfg, NULL, 0 };

/* One event or task per line: the JSON line itself under --json, else a
 * short text line. */
static void
print_item(const json_t *o, int task)
{
	char *s;

	if (json_is_true(json_object_get(o, "damaged")) && !O.json) {
		/* A record that cannot be read is shown where it stands,
		 * never skipped: the orchestrator would otherwise wait for
		 * it forever. */
		if (task)
			printf("%s\tdamaged\t%s\n",
			    json_string_value(json_object_get(o, "id")),
			    json_string_value(json_object_get(o, "message")));
		else
			printf("-\tdamaged\t%s line %lld\n",
			    json_string_value(json_object_get(o, "file")),
			    (long long)json_integer_value(
				json_object_get(o, "line")));
		fprintf(stderr, "sbx-bridge: warning: %s is damaged; %s\n",
		    json_string_value(json_object_get(o, "file")),
		    task ? "move it aside (the task is lost; the orchestrator "
			   "may queue it again)" :
			   "the line is kept as it is; the entries around it "
			   "are listed");
		fflush(stdout);
		return;
	}
	if (O.json) {
		s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		if (s != NULL)
			printf("%s\n", s);
		free(s);
	} else if (task)
		printf("%s\t%s\t%s\n",
		    json_string_value(json_object_get(o, "id")),
		    json_string_value(json_object_get(o, "status")),
		    json_string_value(json_object_get(o, "task")));
	else {
		s = json_dumps(json_object_get(o, "data"),
		    JSON_COMPACT | JSON_ENCODE_ANY);
		printf("%lld\t%s\t%s\t%s\n",
		    (long long)json_integer_value(json_object_get(o, "id")),
		    json_string_value(json_object_get(o, "ts")),
		    json_string_value(json_object_get(o, "type")),
		    s != NULL ? s : "null");
		free(s);
	}
	fflush(stdout);
}

static int
cmd_events(struct sbx_root *root)
{
	struct sbx_error e = { 0 };
	long long	 since = O.since;
	json_t		*a, *v, *shown = json_object();
	char		 key[64];
	size_t		 i;

	for (;;) {
		if ((a = sbx_bstore_events_list(root->fd, O.agent,
			 SBX_BSTORE_EVENTS, since, 1000, &e)) == NULL)
			sbx_cmd_die(&e);
		json_array_foreach (a, i, v) {
			if (json_is_true(json_object_get(v, "damaged"))) {
				/* Shown once under --follow: its place (the
				 * id before it, its line) survives rotation. */
				snprintf(key, sizeof(key), "%lld/%lld",
				    (long long)json_integer_value(
					json_object_get(v, "after")),
				    (long long)json_integer_value(
					json_object_get(v, "line")));
				if (json_object_get(shown, key) == NULL)
					print_item(v, 0);
				json_object_set_new(shown, key, json_true());
				continue;
			}
			print_item(v, 0);
			since = json_integer_value(json_object_get(v, "id"));
		}
		json_decref(a);
		if (!O.follow) {
			json_decref(shown);
			return 0;
		}
		usleep(200000);
	}
}

static int
cmd_tasks(struct sbx_root *root)
{
	struct sbx_error e = { 0 };
	json_t		*a, *v, *seen_ids = json_object();
	const char	*id;
	size_t		 i;

	for (;;) {
		if ((a = sbx_bstore_task_list(root->fd, O.agent, &e)) == NULL)
			sbx_cmd_die(&e);
		json_array_foreach (a, i, v) {
			id = json_string_value(json_object_get(v, "id"));
			if (id == NULL ||
			    (json_object_get(seen_ids, id) != NULL &&
				json_equal(json_object_get(seen_ids, id),
				    json_object_get(v, "status"))))
				continue;
			json_object_set(seen_ids, id,
			    json_object_get(v, "status"));
			print_item(v, 1);
		}
		json_decref(a);
		if (!O.follow)
			break;
		usleep(200000);
	}
	json_decref(seen_ids);
	return 0;
}

static int
cmd_task_done(struct sbx_root *root, const char *id)
{
	struct sbx_error e = { 0 };
	json_t		*res = NULL, *t;
	char		 text[128];

	if (O.result != NULL &&
	    (res = json_loads(O.result,
		 JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL)) == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "result", "bad_json",
		    "--result is not JSON");
		sbx_cmd_usage_exit(&e);
	}
	if ((t = sbx_bstore_task_done(root->fd, O.agent, id, res, &e)) == NULL)
		sbx_cmd_die(&e);
	json_decref(res);
	snprintf(text, sizeof(text), "sbx-bridge: task %s done", id);
	sbx_cmd_done(t, text);
	return 0;
}

static void
parse(int argc, char *argv[], const char **subp, int *nargs, char ***args)
{
	struct sbx_error e = { 0 };
	static char	*ops[8];
	const char	*sub;
	char		*end;
	int		 ch, nops = 0;

	sub = argc > 1 && argv[1][0] != '-' ? argv[1] : NULL;
	if (sub != NULL) {
		argv[1] = argv[0];
		argv++;
		argc--;
	}
	opterr = 0;
	/* Operands may come before options (task done ID --agent A):
	 * sbx_cmd_getopt leaves them, in order, at argv[optind..]. */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a': O.agent = optarg; break;
		case 'f': O.follow = 1; break;
		case OPT_FOREGROUND: O.foreground = 1; break;
		case OPT_RESULT: O.result = optarg; break;
		case OPT_SINCE:
			errno = 0;
			O.since = strtoll(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || errno != 0 ||
			    O.since < 0) {
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "since",
				    "bad_number", "--since needs an event id");
				sbx_cmd_usage_exit(&e);
			}
			break;
		case OPT_HOME: O.home = optarg; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	for (; optind < argc; optind++) {
		if (nops == 8)
			sbx_cmd_usage_exit(NULL);
		ops[nops++] = argv[optind];
	}
	if (sub == NULL && nops > 0) {
		sub = ops[0];
		memmove(ops, ops + 1, (size_t)--nops * sizeof(*ops));
	}
	*subp = sub;
	*nargs = nops;
	*args = ops;
}

/* The subcommand, on the state root. */
static int
run_sub(const char *sub, char **args)
{
	struct sbx_root		 root = SBX_ROOT_INIT;
	struct sbx_error	 e = { 0 };
	int			 rc;

	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(sub, "serve") == 0) {
		/* A daemon keeps nothing its starter had open. */
		sbx_fs_close_from(3, NULL, 0);
		if (sbx_root_open(&root, 1, &e) == -1)
			sbx_cmd_die(&e);
		return sbx_cmd_daemon_serve(&bridged, &root, O.quiet,
		    O.foreground);
	}
	/* The others create nothing: a missing root means not running. */
	if (sbx_root_open(&root, 0, &e) == -1 &&
	    (e.reason == NULL || strcmp(e.reason, "state_root_missing") != 0))
		sbx_cmd_die(&e);
	if (strcmp(sub, "status") == 0 || strcmp(sub, "stop") == 0)
		rc = sbx_cmd_daemon_status(&bridged, &root,
		    strcmp(sub, "stop") == 0);
	else if (root.fd < 0)
		sbx_cmd_die(&e);
	else if (strcmp(sub, "events") == 0)
		rc = cmd_events(&root);
	else if (strcmp(sub, "tasks") == 0)
		rc = cmd_tasks(&root);
	else
		rc = cmd_task_done(&root, args[1]);
	sbx_root_release(&root);
	return rc;
}

int
main(int argc, char *argv[])
{
	struct sbx_error e = { 0 };
	const char	*sub;
	char	       **args, *w[2];
	unsigned	 bit;
	int		 ch, n, nw;

	if (sbx_cmd_start(&cmdopts, argc, argv, &ch))
		return ch;
	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		return SBX_EX_SOFTWARE;
	O.json =
	    sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	if ((O.agent = getenv("SBX_AGENT")) == NULL || *O.agent == '\0')
		O.agent = "default";
	parse(argc, argv, &sub, &n, &args);
	if (sub == NULL)
		sbx_cmd_usage_exit(NULL);
	/* "task done ID": two words name the subcommand. */
	w[0] = (char *)sub;
	w[1] = n > 0 ? args[0] : NULL;
	nw = strcmp(sub, "task") == 0 ? 2 : 1;
	if ((nw == 2 && n == 0) ||
	    (bit = sbx_opts_sub_find(&table, nw, w, NULL)) == 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "subcommand",
		    "unknown_subcommand", "unknown subcommand `%s%s%s`", sub,
		    nw == 2 && n > 0 ? " " : "",
		    nw == 2 && n > 0 ? args[0] : "");
		sbx_cmd_usage_exit(&e);
	}
	if (n != (nw == 2 ? 2 : 0))
		sbx_cmd_usage_exit(NULL);
	snprintf(tool, sizeof(tool), "bridge.%s", sub);
	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		sbx_cmd_usage_exit(&e);
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_usage_exit(&e);
	return run_sub(sub, args);
}
