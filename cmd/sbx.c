/*
 * sbx: the front-end.  `sbx foo ARGS` executes sbx-foo ARGS from the libexec
 * directory fixed at build time, as git does with git-foo; $PATH is never
 * searched, so nothing a user or an agent drops on $PATH is ever run.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "complete.h"
#include "envelope.h"
#include "fsutil.h"
#include "names.h"
#include "root.h"

#define PROG	"sbx"

static const char usage_text[] =
"usage: sbx [--version] [--help] [--list-commands] COMMAND [ARG...]\n"
"       sbx help [COMMAND]\n";

/*
 * The one command table: it drives `sbx --help`, `sbx help CMD`, the
 * aliases and the "did you mean" of an unknown command.  Dispatch itself
 * stays by name into the libexec directory, so a program installed there
 * later is reachable (and listed by --list-commands) without a table entry.
 */
static const struct command {
	const char	*name;
	const char	*summary;
	const char	*alias;		/* runs `sbx-PROG SUB`: "PROG SUB" */
} commands[] = {
	{ "exec", "run a command in an agent's sandbox (foreground or "
	    "background)", NULL },
	{ "provision", "create or repair the state root, agents and images",
	    NULL },
	{ "status", "the same as `sbx provision status`", "provision status" },
	{ "preflight", "can this machine run sbx safely? (a report CI keeps)",
	    NULL },
	{ "proxy", "the filtering egress proxy: serve, status, stop, check",
	    NULL },
	{ "config", "read and change the settings of agents and of the root",
	    NULL },
	{ "install", "install packages (apt, pip, npm) into an agent's "
	    "sandbox", NULL },
	{ "secret", "an agent's sealed secrets: set, list, rm; the scrub "
	    "filter", NULL },
	{ "file", "bounded file tools on an agent's home: read, search, "
	    "write, edit, list", NULL },
	{ "bridge", "the host API of code inside the sandbox: serve, status, "
	    "stop, events, tasks", NULL },
	{ "mcp", "an MCP server on stdio: the agent's sandbox as tools for "
	    "any MCP client", NULL },
	{ "plugin", "plugin recipes: tools that extend agents (add, install, "
	    "run, register)", NULL },
	{ "tools", "the same as `sbx plugin tools`", "plugin tools" },
	{ "srt", "run a command as srt (sandbox-runtime) would: its "
	    "settings file, sbx's sandbox", NULL },
	{ "session", "warm sandboxes kept running for sbx exec --session: "
	    "start, ls, show, stop", NULL },
};
#define NCOMMANDS	(sizeof(commands) / sizeof(commands[0]))

static const char help_head[] =
"\n"
"sbx runs untrusted commands in bubblewrap sandboxes: per-agent homes,\n"
"every namespace unshared, no network by default.\n"
"\n"
"Commands (sbx help COMMAND for each):\n";

enum { OPT_VERSION = 256, OPT_LIST };

/*
 * The front-end's own options (opts.h), for --help and the
 * completions; they stand before the command and are read by hand, as
 * nothing after the command is the front-end's.  Hidden: `--complete
 * KIND ...`, which the shell completions call (see complete()).
 */
static const struct sbx_opt rows[] = {
	SBX_OPT_ROW_HELP(1),
	SBX_OPT_ROW_VERSION(OPT_VERSION, 1),
	{ OPT_LIST, "list-commands", 0, SBX_OPT_NONE, NULL, NULL,
	    "list the installed commands, one per line", 1, 0 },
};

static const struct sbx_opts table = { PROG, "sbx", rows, SBX_OPTS_N(rows),
	NULL, 0, 1, NULL, 24, 0 };

static const char help_tail[] =
"\n"
"Environment: SBX_HOME (state root), SBX_AGENT (default agent), SBX_JSON=1\n"
"(JSON envelopes), SBX_EXEC_PATH (where the sbx-* programs are).\n";

static const struct command *
command_of(const char *name)
{
	size_t	 i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* Commands that exist as programs but are not for people. */
static int
internal(const char *name)
{
	return strcmp(name, "init") == 0;
}

/*
 * Programs that run but are not offered (--list-commands, the
 * completions): sbx-host is the client of code inside a sandbox
 * (/run/sbx/bin/sbx-host there), with nothing to do on the host; `sbx
 * host` and `sbx help host` still work, for who asks by name.
 */
static int
unlisted(const char *name)
{
	return strcmp(name, "host") == 0;
}

static const char *
exec_path(void)
{
	const char	*p;

	/* secure_getenv: ignored in a set-id context, where it would let
	 * the caller pick the programs that run with our privilege. */
	p = secure_getenv("SBX_EXEC_PATH");
	if (p != NULL && *p == '/')
		return p;
	return SBX_LIBEXECDIR;
}

static int
valid_name(const char *s)
{
	size_t	 i;

	if (*s < 'a' || *s > 'z' || strlen(s) > 64)
		return 0;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* "did you mean" for a name that is not a command, when one is near
 * (at most two edits, or a prefix: sbx_cli_nearest). */
static void
suggest(const char *name)
{
	const char	*names[NCOMMANDS + 1], *best;
	size_t		 i;

	for (i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	names[i] = NULL;
	if ((best = sbx_cli_nearest(name, names)) != NULL)
		fprintf(stderr, "%s: did you mean '%s'?\n", PROG, best);
}

/* The unknown-command message, with the nearest command when one is
 * close. */
static void __attribute__((noreturn))
unknown(const char *name)
{
	/* One of ours, but its program is not where we look: say so, not
	 * "did you mean" the very same name. */
	if (command_of(name) != NULL) {
		fprintf(stderr, "%s: sbx-%s is missing from %s; the "
		    "installation is incomplete (or SBX_EXEC_PATH is wrong)\n",
		    PROG, name, exec_path());
		exit(127);
	}
	fprintf(stderr, "%s: '%s' is not an sbx command; see 'sbx "
	    "--list-commands'\n", PROG, name);
	suggest(name);
	exit(127);
}

/*
 * A usage error of the front-end itself: with --json among its own
 * options (before the command) or SBX_JSON=1, an invalid_args envelope on
 * stdout as every sbx program gives; the synopsis on stderr either way.
 * The front-end has no --json of its own, so a lone --json is named as
 * the error, with where it belongs.
 */
static int
usage_error(int argc, char *argv[])
{
	struct sbx_error	 e;
	const char		*bad = NULL, *near;
	const char		*names[SBX_OPTS_N(rows) + 1];
	int			 i, json = sbx_cli_json_env();

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = 1;
		else if (bad == NULL)
			bad = argv[i];
	}
	if (bad == NULL && i < argc)
		bad = "--json";
	if (bad == NULL)
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command",
		    "missing_argument", "no command given (see sbx --help)");
	else if (strcmp(bad, "--json") == 0)
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "--json",
		    "unknown_option", "unknown option `--json`: it goes after "
		    "the command (sbx COMMAND --json ...)");
	else {
		/* The field is printable ASCII only: argv is the caller's. */
		sbx_error_set(&e, SBX_K_INVALID_ARGS,
		    sbx_cli_option_field(bad, strlen(bad)), "unknown_option",
		    "unknown option `%s`", bad);
		/* A typo of one of ours (--verison), as the programs say. */
		for (i = 0; i < (int)SBX_OPTS_N(rows); i++)
			names[i] = rows[i].name;
		names[i] = NULL;
		if (strncmp(bad, "--", 2) == 0 &&
		    (near = sbx_cli_nearest(bad + 2, names)) != NULL &&
		    strcmp(near, bad + 2) != 0)
			sbx_error_hint(&e, "did you mean `--%s`?", near);
	}
	sbx_cmd_usage(PROG, "sbx", json, &e, usage_text, sbx_cmd_emit);
	return 64;
}

/* The installed commands; with aliases, also the table's aliases and
 * `help` (what a shell completes after `sbx`). */
static int
list_commands(int aliases)
{
	DIR		*d;
	struct dirent	*de;
	char		*names[256], path[PATH_MAX];
	size_t		 n = 0, i;

	if ((d = opendir(exec_path())) == NULL) {
		fprintf(stderr, "%s: cannot read %s: %s\n", PROG, exec_path(),
		    strerror(errno));
		return 69;
	}
	while ((de = readdir(d)) != NULL && n < 256) {
		if (strncmp(de->d_name, "sbx-", 4) != 0 ||
		    !valid_name(de->d_name + 4) || internal(de->d_name + 4) ||
		    unlisted(de->d_name + 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", exec_path(), de->d_name);
		if (access(path, X_OK) != 0)
			continue;
		names[n++] = strdup(de->d_name + 4);
	}
	closedir(d);
	for (i = 0; aliases && i < NCOMMANDS && n < 255; i++)
		if (commands[i].alias != NULL)
			names[n++] = strdup(commands[i].name);
	if (aliases)
		names[n++] = strdup("help");
	for (i = 0; i < n; i++)
		if (names[i] == NULL)
			return 71;
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	return 0;
}

#ifdef SBX_WITH_EXEC
/* cmd/sbx-exec.c, linked in without its main() (cmd/exec-opts.h). */
int	cmd_exec(int, char *[], int);
#endif

static void __attribute__((noreturn))
run(const char *name, int argc, char *argv[])
{
	char	 path[PATH_MAX], arg0[80];
	char	**nargv;
	int	 i;

	if (!valid_name(name) || internal(name))
		unknown(valid_name(name) ? name : "(invalid name)");
	snprintf(path, sizeof(path), "%s/sbx-%s", exec_path(), name);
	snprintf(arg0, sizeof(arg0), "sbx-%s", name);
	if ((nargv = calloc((size_t)argc + 1, sizeof(*nargv))) == NULL)
		exit(71);
	nargv[0] = arg0;
	for (i = 1; i < argc; i++)
		nargv[i] = argv[i];
#ifdef SBX_WITH_EXEC
	/*
	 * `exec` is built in, as git builds in its hot commands: on the
	 * reference machine every exec(2) costs about 1.5 ms, a tenth of a
	 * whole sandbox.  sbx-exec stays a program of its own.
	 */
	if (strcmp(name, "exec") == 0)
		exit(cmd_exec(argc, nargv, 1));
#endif
	execv(path, nargv);
	free(nargv);
	if (errno == ENOENT)
		unknown(name);
	fprintf(stderr, "%s: cannot run %s: %s\n", PROG, path,
	    strerror(errno));
	exit(126);
}

/* Print the strings of v, one a line. */
static int
print_strv(const struct sbx_strv *v)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		printf("%s\n", v->v[i]);
	return 0;
}

/*
 * sbx --complete KIND [ARG...]: the candidates a shell completion offers,
 * one a line, silent on errors (exit 1, nothing on stderr), so that
 * completions/sbx.bash and completions/_sbx re-implement nothing:
 *
 *   commands                      the commands (and aliases, and help)
 *   options [CMD [SUB...]]        the options of sbx, or of CMD [SUB]:
 *                                 OPTION, and TAB VALUES when it takes a
 *                                 value (opts.h)
 *   subcommands CMD [SUB...]      the subcommand words that may follow
 *   operands CMD [SUB...]         what completes the first operand
 *   agents [--home DIR]           the agents of the state root
 *   jobs [--home DIR] [--agent A] the agent's background jobs
 *   images [--home DIR]           the image names
 *   plugins [--home DIR]          the plugin library's ids
 *   keys [--global]               the settings' keys (sbx config)
 *   home [--home DIR]             the state root's path
 *   cwd [--home DIR] [--agent A]  the agent's home (where --cwd starts)
 *
 * Options, subcommands and operands come from the program's own table
 * (sbx-CMD --complete-options...); the state root is resolved as every
 * program resolves it (root's is /var/lib/sbx).
 */
static int
complete(int argc, char *argv[])
{
	const struct command	*c;
	struct sbx_strv		 v = SBX_STRV_INIT;
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	const char		*kind, *home = NULL, *agent = NULL, *cmd;
	char			 alias[64], prog[PATH_MAX], *sub, **nargv;
	int			 i, k, fd, rc, global = 0;

	if ((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) >= 0) {
		(void)dup2(fd, 2);
		close(fd);
	}
	if (argc < 1)
		return 1;
	kind = argv[0];
	if (strcmp(kind, "commands") == 0)
		return argc == 1 ? list_commands(1) : 1;
	if (strcmp(kind, "options") == 0 && argc == 1) {
		rc = sbx_opts_complete(&table, 1, &b);
		if (rc == 0 && b.p != NULL)
			fputs(b.p, stdout);
		sbx_buf_release(&b);
		return rc == 0 ? 0 : 1;
	}
	if (strcmp(kind, "options") == 0 || strcmp(kind, "subcommands") == 0 ||
	    strcmp(kind, "operands") == 0) {
		if (argc < 2 || !valid_name(argv[1]) || internal(argv[1]))
			return 1;
		cmd = argv[1];
		sub = NULL;
		/* An alias completes as what it runs: status is
		 * `provision status`. */
		if ((c = command_of(cmd)) != NULL && c->alias != NULL) {
			snprintf(alias, sizeof(alias), "%s", c->alias);
			if ((sub = strchr(alias, ' ')) != NULL)
				*sub++ = '\0';
			cmd = alias;
		}
		snprintf(prog, sizeof(prog), "%s/sbx-%s", exec_path(), cmd);
		if (strcmp(cmd, "exec") != 0 && access(prog, X_OK) != 0)
			return 1;
		if ((nargv = calloc((size_t)argc + 3, sizeof(*nargv))) == NULL)
			return 1;
		snprintf(prog, sizeof(prog), "sbx-%s", cmd);
		k = 0;
		nargv[k++] = prog;
		nargv[k++] = strcmp(kind, "options") == 0 ?
		    "--complete-options" : strcmp(kind, "operands") == 0 ?
		    "--complete-operands" : "--complete-subcommands";
		if (sub != NULL)
			nargv[k++] = sub;
		for (i = 2; i < argc; i++)
			nargv[k++] = argv[i];
		nargv[k] = NULL;
		run(cmd, k, nargv);
	}
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--home") == 0 && i + 1 < argc)
			home = argv[++i];
		else if (strncmp(argv[i], "--home=", 7) == 0)
			home = argv[i] + 7;
		else if (strcmp(argv[i], "--agent") == 0 && i + 1 < argc)
			agent = argv[++i];
		else if (strncmp(argv[i], "--agent=", 8) == 0)
			agent = argv[i] + 8;
		else if (strcmp(argv[i], "--global") == 0)
			global = 1;
		else
			return 1;
	}
	if (agent == NULL || *agent == '\0')
		agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
	if (strcmp(kind, "agents") == 0)
		rc = sbx_complete_agents(home, &v, &e);
	else if (strcmp(kind, "jobs") == 0)
		rc = sbx_complete_jobs(home, agent, &v, &e);
	else if (strcmp(kind, "images") == 0)
		rc = sbx_complete_images(home, &v, &e);
	else if (strcmp(kind, "plugins") == 0)
		rc = sbx_complete_plugins(home, &v, &e);
	else if (strcmp(kind, "keys") == 0) {
		/* sbx config's own list (its schema is not linked here). */
		char *kargv[] = { "sbx-config", "keys", "-q",
			global ? "--global" : NULL, NULL };

		run("config", global ? 4 : 3, kargv);
	} else if (strcmp(kind, "home") == 0 || strcmp(kind, "cwd") == 0) {
		struct sbx_root	 r = SBX_ROOT_INIT;

		if ((rc = sbx_root_resolve(home, &r, &e)) == 0 &&
		    strcmp(kind, "cwd") == 0 &&
		    (rc = sbx_names_agent_valid(agent, "agent", &e)) == 0)
			rc = sbx_strv_pushf(&v, "%s/workspace/agents/%s",
			    r.path, agent);
		else if (rc == 0)
			rc = sbx_strv_push(&v, r.path);
		sbx_root_release(&r);
	} else
		rc = -1;
	if (rc == 0)
		print_strv(&v);
	sbx_strv_release(&v);
	return rc == 0 ? 0 : 1;
}

static int
help(const char *name)
{
	const struct command	*c;
	struct sbx_buf		 b = SBX_BUF_INIT;
	char			 page[96], path[PATH_MAX], prog[64];
	size_t			 i;

	if (name == NULL) {
		fputs(usage_text, stdout);
		fputs(help_head, stdout);
		for (i = 0; i < NCOMMANDS; i++)
			printf("  %-11s %s\n", commands[i].name,
			    commands[i].summary);
		fputs("\n", stdout);
		if (sbx_opts_help(&table, 1, &b) == 0 && b.p != NULL)
			fputs(b.p, stdout);
		sbx_buf_release(&b);
		fputs(help_tail, stdout);
		return 0;
	}
	if (!valid_name(name) || internal(name)) {
		fprintf(stderr, "%s: no help for '%s'\n", PROG,
		    valid_name(name) ? name : "(invalid name)");
		return 64;
	}
	/* An alias has the help of the command it runs. */
	if ((c = command_of(name)) != NULL && c->alias != NULL) {
		printf("sbx %s: %s\n\n", c->name, c->summary);
		fflush(stdout);
		snprintf(prog, sizeof(prog), "%s", c->alias);
		prog[strcspn(prog, " ")] = '\0';
		name = prog;
	}
	snprintf(path, sizeof(path), "%s/sbx-%s", exec_path(), name);
	if (access(path, X_OK) != 0) {
		fprintf(stderr, "%s: '%s' is not an sbx command; see 'sbx "
		    "--list-commands'\n", PROG, name);
		suggest(name);
		return 127;
	}
	/* The man page when man(1) and the page are there, else --help. */
	snprintf(page, sizeof(page), "sbx-%s", name);
	if (access("/usr/bin/man", X_OK) == 0 && isatty(1)) {
		pid_t pid = fork();
		int st;
		if (pid == 0) {
			/* Only its status: `man -w` prints the page's path,
			 * which is not the help asked for. */
			int fd = open("/dev/null", O_WRONLY);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
			}
			execl("/usr/bin/man", "man", "-w", page, (char *)NULL);
			_exit(127);
		}
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0) {
			execl("/usr/bin/man", "man", page, (char *)NULL);
		}
	}
	execl(path, page, "--help", (char *)NULL);
	fprintf(stderr, "%s: cannot run %s: %s\n", PROG, path,
	    strerror(errno));
	return 126;
}

int
main(int argc, char *argv[])
{
	const struct command	*c;
	const char		*a;

	/* Before anything is opened: see sbx_fs_sanitize_std(). */
	if (sbx_fs_sanitize_std() == -1)
		return 71;
	sbx_json_seed();
	if (argc < 2)
		return usage_error(argc, argv);
	a = argv[1];
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
		return help(NULL);
	if (strcmp(a, "--version") == 0) {
		printf("sbx %s\n", SBX_VERSION);
		return 0;
	}
	if (strcmp(a, "--list-commands") == 0)
		return list_commands(0);
	if (strcmp(a, "--complete") == 0)
		return complete(argc - 2, argv + 2);
	if (strcmp(a, "help") == 0)
		return help(argc > 2 ? argv[2] : NULL);
	if (a[0] == '-')
		return usage_error(argc, argv);
	/* Aliases: `sbx status` is `sbx provision status`. */
	if ((c = command_of(a)) != NULL && c->alias != NULL) {
		char	**nargv = calloc((size_t)argc + 2, sizeof(*nargv));
		char	 *prog, *sub;
		int	  i;

		if (nargv == NULL || (prog = strdup(c->alias)) == NULL)
			return 71;
		sub = strchr(prog, ' ');
		if (sub != NULL)
			*sub++ = '\0';
		nargv[0] = prog;
		i = 1;
		if (sub != NULL)
			nargv[i++] = sub;
		for (int j = 2; j < argc; j++)
			nargv[i++] = argv[j];
		run(prog, i, nargv);
	}
	run(a, argc - 1, argv + 1);
}
