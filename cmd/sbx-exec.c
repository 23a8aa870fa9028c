/*
 * sbx-exec: run a command in an agent's sandbox, in the foreground or as a
 * supervised background job.  See sbx-exec(1).
 *
 * Parse, validate, call lib/exec (the engine) or lib/jobsup (the jobs),
 * render.  Built into the front-end as cmd_exec() (-DSBX_BUILTIN), and a
 * program of its own with the main() at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "exec-jobs.h"
#include "exec.h"
#include "fsutil.h"
#include "jobsup.h"
#include "names.h"
#include "root.h"
#include "sandbox.h"
#include "utf8.h"

#define PROG	"sbx-exec"

/* Largest request envelope: a command line of ARG_MAX and change. */
#define REQUEST_MAX	(4u << 20)

int	cmd_exec(int, char *[]);

static const char usage_text[] =
"usage: sbx exec [--agent A] [--home DIR] [--cwd PATH] [--workdir DIR]\n"
"                [--workdir-follow-symlinks]\n"
"                [--env NAME=VALUE]... [--timeout SECONDS] [--tty]\n"
"                [--secret NAME]... [--no-secrets]\n"
"                [--network none|proxy|outbound] [--allow-domain D]...\n"
"                [--json] [--max-output BYTES] [--stdin inherit|null]\n"
"                [--memory MIB] [--cpus N.N] [--pids N] [--disk MIB]\n"
"                [--wall-timeout SECONDS] [--nofile N] [--file-size MIB]\n"
"                [--soft-limits] [--seccomp on|off]\n"
"                [--background] [--envelope-fd N] [-q] [-v]\n"
"                -- COMMAND [ARG...]\n"
"       sbx exec [options] -c 'SHELL STRING' [NAME [ARG...]]\n"
"       sbx exec --request FILE|- [--home DIR] [--json] [--envelope-fd N]\n"
"       sbx exec ps [--agent A] [--json]\n"
"       sbx exec poll JOB [--tail-lines N] [--agent A] [--json]\n"
"       sbx exec wait JOB [--timeout SECONDS] [--agent A] [--json]\n"
"       sbx exec kill JOB [--force] [--agent A] [--json]\n"
"       sbx exec gc [--json]\n";

static const char help_text[] =
"\n"
"Run COMMAND in the agent's sandbox: every namespace unshared, system\n"
"directories read-only, HOME=/workspace/agents/AGENT, private /tmp, no\n"
"network unless asked. Without --json the command's output streams\n"
"through and sbx exits with its status (124 idle timeout, 125 sbx failed,\n"
"126 cannot execute, 127 not found, 128+N killed by signal N).\n"
"\n"
"  -a, --agent A          agent name (default: $SBX_AGENT or \"default\")\n"
"      --home DIR         state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
"                         ~/.local/share/sbx)\n"
"  -C, --cwd PATH         start in PATH: relative to HOME, or absolute inside\n"
"                         HOME or --workdir\n"
"  -w, --workdir DIR      bind host directory DIR read-write at its own path\n"
"                         and start there (no symbolic links in DIR)\n"
"      --workdir-follow-symlinks\n"
"                         follow symbolic links in DIR; print where it leads\n"
"  -e, --env NAME=VALUE   set a variable inside (repeatable)\n"
"      --secret NAME      give the command only these of the agent's\n"
"                         secrets (repeatable; default: all of them)\n"
"      --no-secrets       give the command none of the agent's secrets\n"
"      --timeout SECONDS  kill the command after SECONDS without output\n"
"                         (output a program buffers counts as silence)\n"
"  -t, --tty              run the command on a terminal of its own (stdout\n"
"                         and stderr merged; the caller's terminal goes raw)\n"
"  -n, --network MODE     none (default: loopback only), proxy (only the\n"
"                         agent's allowed domains, through sbx-proxy) or\n"
"                         outbound (host network); default: the agent's\n"
"                         `network` setting, else none\n"
"      --allow-domain D   proxy mode: also allow D (or *.D) for this run\n"
"  -c STRING              run STRING with bash -o pipefail -c (sh -c without\n"
"                         bash); NAME and ARGs after it are $0, $1...\n"
"      --max-output BYTES captured bytes kept per stream with --json\n"
"                         (default 1M; K, M, G suffixes)\n"
"      --stdin MODE       inherit (the caller's stdin) or null (/dev/null);\n"
"                         default: null when stdin is a terminal and --json\n"
"                         is given, else inherit (background: always null)\n"
"      --memory MIB       memory limit, swap included (default: half of RAM)\n"
"      --cpus N.N         CPU limit in cores (e.g. 0.5)\n"
"      --pids N           task limit (default 1024)\n"
"      --disk MIB         size of /tmp and largest file written (soft)\n"
"      --wall-timeout S   kill the sandbox after S seconds, output or not\n"
"      --nofile N         open files limit (RLIMIT_NOFILE)\n"
"      --file-size MIB    largest file the command may write (RLIMIT_FSIZE)\n"
"      --soft-limits      accept rlimits where no cgroup can enforce a limit\n"
"      --seccomp MODE     on (default) or off (diagnosis only)\n"
"  -b, --background       start as a background job and return at once\n"
"      --request FILE     take the run's options from a request envelope\n"
"                         (JSON; - reads standard input)\n"
"      --envelope-fd N    stream the output through and write the result\n"
"                         envelope to file descriptor N\n"
"      --tail-lines N     lines of log returned by poll and wait (default 20)\n"
"      --force            kill: SIGKILL at once instead of SIGTERM\n"
"  -j, --json             print one JSON envelope (also SBX_JSON=1)\n"
"  -q, --quiet            no warnings on stderr\n"
"  -v, --verbose          show the bwrap command on stderr\n"
"  -h, --help             this help\n"
"      --version          print the version\n";

enum {
	OPT_HOME = 256, OPT_MAX_OUTPUT, OPT_TAIL, OPT_FORCE, OPT_VERSION,
	OPT_MEMORY, OPT_CPUS, OPT_PIDS, OPT_DISK, OPT_WALL, OPT_NOFILE,
	OPT_WORKDIR_FOLLOW,
	OPT_FSIZE, OPT_SOFT, OPT_SECCOMP, OPT_ALLOW, OPT_STDIN, OPT_TIMEOUT,
	OPT_TTY, OPT_REQUEST, OPT_ENVELOPE_FD, OPT_SECRET, OPT_NO_SECRETS,
};

static const struct option longopts[] = {
	{ "agent",	required_argument,	NULL, 'a' },
	{ "home",	required_argument,	NULL, OPT_HOME },
	{ "cwd",	required_argument,	NULL, 'C' },
	{ "workdir",	required_argument,	NULL, 'w' },
	{ "workdir-follow-symlinks", no_argument, NULL, OPT_WORKDIR_FOLLOW },
	{ "env",	required_argument,	NULL, 'e' },
	{ "timeout",	required_argument,	NULL, OPT_TIMEOUT },
	{ "tty",	no_argument,		NULL, OPT_TTY },
	{ "network",	required_argument,	NULL, 'n' },
	{ "max-output",	required_argument,	NULL, OPT_MAX_OUTPUT },
	{ "background",	no_argument,		NULL, 'b' },
	{ "tail-lines",	required_argument,	NULL, OPT_TAIL },
	{ "force",	no_argument,		NULL, OPT_FORCE },
	{ "json",	no_argument,		NULL, 'j' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "help",	no_argument,		NULL, 'h' },
	{ "version",	no_argument,		NULL, OPT_VERSION },
	{ "memory",	required_argument,	NULL, OPT_MEMORY },
	{ "cpus",	required_argument,	NULL, OPT_CPUS },
	{ "pids",	required_argument,	NULL, OPT_PIDS },
	{ "disk",	required_argument,	NULL, OPT_DISK },
	{ "wall-timeout", required_argument,	NULL, OPT_WALL },
	{ "nofile",	required_argument,	NULL, OPT_NOFILE },
	{ "file-size",	required_argument,	NULL, OPT_FSIZE },
	{ "soft-limits", no_argument,		NULL, OPT_SOFT },
	{ "seccomp",	required_argument,	NULL, OPT_SECCOMP },
	{ "allow-domain", required_argument,	NULL, OPT_ALLOW },
	{ "stdin",	required_argument,	NULL, OPT_STDIN },
	{ "request",	required_argument,	NULL, OPT_REQUEST },
	{ "envelope-fd", required_argument,	NULL, OPT_ENVELOPE_FD },
	{ "secret",	required_argument,	NULL, OPT_SECRET },
	{ "no-secrets",	no_argument,		NULL, OPT_NO_SECRETS },
	{ NULL, 0, NULL, 0 }
};

/* What the command line says beyond the request itself. */
struct cli {
	int		 json, quiet, verbose, force;
	const char	*tail_arg;	/* --tail-lines */
	int		 tail_lines;
	const char	*request;	/* --request FILE, or NULL */
	const char	*envelope_fd_arg;
	int		 envelope_fd;	/* --envelope-fd N, or -1 */
	int		 runopts;	/* options only a run takes */
	int		 dashdash;
	const char	*sub;		/* ps, poll, wait, kill, gc, or NULL */
	char	       **argv;		/* subcommand operands */
	int		 argc;
};

static struct cli		 C;
static struct sbx_exec_req	 R;
/* Static: what a run holds lives as long as the process (and stays
 * reachable for leak checkers until exit). */
static struct sbx_exec		 X;
static const char		*tool = "exec";

/* The options of sbx exec itself, and of its subcommands (whose options
 * may follow their operands). */
static const char	 exec_optstring[] = "+a:C:w:e:tn:c:bjqvh";
static const char	 sub_optstring[] = "-a:t:jqvh";
static const char *const exec_subs[] = {
	"ps", "poll", "wait", "kill", "gc", NULL
};

/* An envelope: to --envelope-fd when given, else on stdout under --json
 * (steals env). */
static void
emit(json_t *env)
{
	char	*s;

	/* The last line of defence: no string of an envelope (a message
	 * quoting the command's output, a warning) carries a secret. */
	sbx_scrub_json(X.secrets.scrub, env);
	if (C.envelope_fd < 0) {
		sbx_cmd_emit(env);
		return;
	}
	if ((s = sbx_envelope_dump(env)) != NULL)
		(void)sbx_write_all(C.envelope_fd, s, strlen(s));
	free(s);
	json_decref(env);
}

/* A failure: the envelope (json or --envelope-fd; extra is stolen) and,
 * unless json, the message and hint on stderr.  Returns code in the
 * transparent mode (its env(1) convention), else the status of the one
 * table (sbx_exit_for): under --json and for the job subcommands. */
static int
report(const struct sbx_error *e, int code, json_t *extra)
{
	if (C.json || C.sub != NULL)
		code = sbx_exit_for(e);
	if (C.envelope_fd >= 0) {
		emit(sbx_envelope_err(tool, e, extra));
		extra = NULL;
	}
	sbx_cmd_report(PROG, tool, C.json, e, extra, emit);
	return code;
}

/* A usage error: an invalid_args envelope under --json, the message
 * and the synopsis on stderr; exit 64 (e NULL: the synopsis only). */
static int
usage_err(const struct sbx_error *e)
{
	if (C.envelope_fd >= 0 && e != NULL)
		emit(sbx_envelope_err(tool, e, NULL));
	sbx_cmd_usage(PROG, tool, C.json, e, usage_text, sbx_cmd_emit);
	return SBX_EX_USAGE;
}

static void
print_warnings(json_t *w)
{
	size_t	 i;
	json_t	*v;

	if (C.quiet || C.json)
		return;
	json_array_foreach(w, i, v)
		fprintf(stderr, "%s: warning: %s\n", PROG, json_string_value(v));
}

/* Options that only a run takes (not a subcommand, nor --request). */
static int
run_option(int ch)
{
	return (ch < 256 && strchr("Cwetnbc", ch) != NULL) ||
	    (ch >= OPT_MEMORY && ch <= OPT_STDIN) || ch == OPT_MAX_OUTPUT ||
	    ch == OPT_TTY || ch == OPT_SECRET || ch == OPT_NO_SECRETS;
}

/* A limit option: the key of sbx_limits_set(). */
static const char *
limit_key(int ch)
{
	return ch == OPT_MEMORY ? "memory_mib" : ch == OPT_CPUS ? "cpus" :
	    ch == OPT_PIDS ? "pids" : ch == OPT_DISK ? "disk_mib" :
	    ch == OPT_WALL ? "wall_timeout" : ch == OPT_NOFILE ? "nofile" :
	    "file_size_mib";
}

/*
 * One getopt loop for sbx exec (optstring "+...") and for the options of
 * ps/poll/wait/kill ("-..."), which may come before or after the job id
 * (argv[0] is then the subcommand; operands are collected in order, and
 * -t is --timeout).  It only records what it sees: every value is judged
 * after it (check_args, sbx_exec_validate), so that the order of the
 * options never changes the result.  Returns -1 (and *code) when done.
 */
static int
getopts(int argc, char *argv[], const char *optstring, int *code)
{
	struct sbx_error	 e;
	int			 ch, npos = 0, sub = *optstring == '-';

	optind = 0;	/* 0: re-read the optstring flags */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, optstring, longopts, NULL)) !=
	    -1) {
		if (sub && (ch == 't' || ch == OPT_TIMEOUT))
			ch = OPT_TIMEOUT;	/* wait -t SECONDS */
		else if (sub && (run_option(ch) || ch == OPT_VERSION ||
		    ch == OPT_REQUEST || ch == OPT_ENVELOPE_FD))
			ch = '?';
		C.runopts += run_option(ch) || ch == 'a' || ch == OPT_TIMEOUT;
		switch (ch) {
		case 1: argv[npos++] = optarg; break;
		case 'a': R.agent = optarg; break;
		case OPT_HOME: R.home = optarg; break;
		case 'C': R.cwd = optarg; break;
		case 'w': R.workdir = optarg; break;
		case OPT_WORKDIR_FOLLOW: R.workdir_follow = 1; break;
		case OPT_TIMEOUT: R.timeout = optarg; break;
		case 't': case OPT_TTY: R.tty = 1; break;
		case 'n': R.network = optarg; break;
		case 'c': R.shell = optarg; break;
		case OPT_MAX_OUTPUT: R.max_output = optarg; break;
		case 'b': R.background = 1; break;
		case OPT_TAIL: C.tail_arg = optarg; break;
		case OPT_FORCE: C.force = 1; break;
		case 'j': C.json = 1; break;
		case 'q': C.quiet = 1; break;
		case 'v': C.verbose = 1; break;
		case OPT_SOFT: R.soft_limits = 1; break;
		case OPT_STDIN: R.stdin_mode = optarg; break;
		case OPT_NO_SECRETS: R.no_secrets = 1; break;
		case OPT_SECRET:
			if (sbx_strv_push(&R.secrets, optarg) == -1)
				return *code = SBX_EX_OSERR, -1;
			break;
		case OPT_SECCOMP: R.seccomp = optarg; break;
		case OPT_REQUEST: C.request = optarg; break;
		case OPT_ENVELOPE_FD: C.envelope_fd_arg = optarg; break;
		case 'e':
		case OPT_ALLOW:
			if (sbx_strv_push(ch == 'e' ? &R.env : &R.allow,
			    optarg) == -1)
				return *code = SBX_EX_OSERR, -1;
			break;
		case OPT_MEMORY: case OPT_CPUS: case OPT_PIDS: case OPT_DISK:
		case OPT_WALL: case OPT_NOFILE: case OPT_FSIZE:
			if (sbx_strv_push(&R.limit_keys, limit_key(ch)) == -1 ||
			    sbx_strv_push(&R.limit_keys, optarg) == -1)
				return *code = SBX_EX_OSERR, -1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			if (!sub)
				fputs(help_text, stdout);
			return *code = 0, -1;
		case OPT_VERSION:
			printf("sbx-exec %s\n", SBX_VERSION);
			return *code = 0, -1;
		default:
			sbx_cli_getopt_error(argc, argv, optstring, longopts,
			    &e);
			return *code = usage_err(&e), -1;
		}
	}
	if (sub) {
		while (optind < argc)
			argv[npos++] = argv[optind++];
		C.argv = argv;
		C.argc = npos;
	}
	return 0;
}

static int
parse_args(int argc, char *argv[], int *code)
{
	const char *const	*s;

	C.envelope_fd = -1;
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported; the command's argv after `--` never counts. */
	C.json = sbx_cli_wants_json(argc, argv, exec_optstring, longopts,
	    exec_subs);
	if (getopts(argc, argv, exec_optstring, code) == -1)
		return -1;
	C.dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
	R.argv = argv + optind;
	R.argc = argc - optind;
	/* A subcommand only when it is not after `--`: `sbx exec -- ps`
	 * runs ps in the sandbox. */
	for (s = exec_subs; !C.dashdash && R.shell == NULL && R.argc > 0 &&
	    *s != NULL; s++)
		if (strcmp(R.argv[0], *s) == 0) {
			C.sub = *s;
			return getopts(R.argc, R.argv, sub_optstring, code);
		}
	return 0;
}

/* What the command line says that no run could take: a usage error. */
static int
check_args(struct sbx_error *e)
{
	unsigned long long	 v;

	C.tail_lines = 20;
	if (C.tail_arg != NULL) {
		if (sbx_parse_uint(C.tail_arg, 10000, &v) == -1) {
			if (C.sub != NULL)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "tail_lines", "usage", "argument "
				    "`tail-lines` must be an integer from 0 to "
				    "10000") - 1;
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "tail_lines", "out_of_range", "argument "
			    "`tail-lines` must be an integer from 0 to 10000");
		}
		C.tail_lines = (int)v;
	}
	if (C.envelope_fd_arg != NULL) {
		if (sbx_parse_uint(C.envelope_fd_arg, INT_MAX, &v) == -1 ||
		    v < 3 || fcntl((int)v, F_GETFD) == -1)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "envelope_fd", "bad_fd", "argument `envelope-fd` "
			    "must name an open file descriptor above 2") - 1;
		C.envelope_fd = (int)v;
		/* The sandbox never inherits it (nor a job's supervisor
		 * beyond its start). */
		(void)fcntl(C.envelope_fd, F_SETFD, FD_CLOEXEC);
		if (C.json || C.sub != NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "envelope_fd", C.json ? "envelope_fd_with_json" :
			    "envelope_fd_with_subcommand", "--envelope-fd "
			    "streams a run's output: it cannot be used with %s",
			    C.json ? "--json" : "a subcommand") - 1;
	}
	if (C.request != NULL && (C.runopts > 0 || R.argc > 0 ||
	    C.sub != NULL))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "request",
		    "request_with_options", "--request takes the run's options "
		    "from the request: only --home, --json, --envelope-fd, -q "
		    "and -v may stand beside it") - 1;
	if (C.sub != NULL || C.request != NULL)
		return 0;
	/*
	 * -c STRING [NAME [ARG...]] is sh -c: what follows the string is $0
	 * and the arguments.  A `--` there would be taken for a command by
	 * some and for $0 by others (sh -c 'echo $1' -- x prints x): it is
	 * refused, so that nobody's guess is silently wrong.
	 */
	if (R.shell != NULL && C.dashdash)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "dashdash_with_c", "-c takes the script and then $0 and "
		    "arguments, without --: sbx exec -c 'SCRIPT' NAME "
		    "ARG...") - 1;
	if (R.shell == NULL && R.argc > 0 && !C.dashdash)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "unexpected_argument", "put `--` before the command: sbx "
		    "exec -- %s ...", R.argv[0]) - 1;
	return 0;
}

/* --request FILE|-: one request envelope, into R.  Exit 65 when bad. */
static int
read_request(struct sbx_error *e)
{
	int	 fd, rc;

	fd = strcmp(C.request, "-") == 0 ? 0 : open(C.request, O_RDONLY |
	    O_CLOEXEC | O_NOCTTY);
	if (fd == -1)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "request",
		    "unreadable", "cannot read the request %s: %s", C.request,
		    strerror(errno));
	rc = sbx_exec_req_read(&R, fd, REQUEST_MAX, e);
	if (fd != 0)
		close(fd);
	if (rc == -1)
		return -1;
	/* Standard input carried the request: the command gets none. */
	if (fd == 0 && R.stdin_mode != NULL &&
	    strcmp(R.stdin_mode, "inherit") == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "stdin",
		    "stdin_consumed", "request: `stdin` cannot be inherit when "
		    "the request is read from standard input");
	if (fd == 0)
		R.stdin_mode = "null";
	return 0;
}

/* A failed run, for people (the envelope is the same for all). */
static void
say_outcome(const struct sbx_exec_outcome *o)
{
	const char	*r = o->err.reason != NULL ? o->err.reason : "";
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (C.json)
		return;
	if (strcmp(r, "memory_limit") == 0) {
		print_warnings(X.warnings);
		if (!C.quiet)
			fprintf(stderr, "%s: %s\n", PROG, o->err.message);
	} else if (strcmp(r, "interrupted") == 0) {
		if (!C.quiet)
			fprintf(stderr, "%s: %s\n", PROG, o->err.message);
	} else if (strcmp(r, "idle_timeout") == 0 ||
	    strcmp(r, "wall_time") == 0) {
		print_warnings(X.warnings);
		fprintf(stderr, "%s: %s\n", PROG, o->err.message);
	} else if (sbx_cli_error_text(PROG, &o->err, &b) == 0)
		fputs(b.p, stderr);
	sbx_buf_release(&b);
}

/* Prepare, run, judge and render one run. */
static int
run(void)
{
	struct sbx_error	 e;
	struct sbx_exec_outcome	 o;
	char			*v;
	int			 rc;

	if (sbx_sandbox_inside()) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "nested_sandbox",
		    "sbx is running inside an sbx sandbox; nested sandboxes "
		    "are not supported");
		sbx_error_hint(&e, "run sbx on the host; inside, the command "
		    "is already sandboxed");
		return report(&e, SBX_EX_FAILED, NULL);
	}
	R.capture = C.json;
	R.verbose = C.verbose;
	R.detach_fd = C.envelope_fd;
	if ((rc = sbx_exec_validate(&R, &e)) != 0)
		return rc == -2 ? usage_err(&e) : report(&e, SBX_EX_FAILED,
		    NULL);
	rc = sbx_exec_prepare(&X, &R, &e);
	if (X.workdir_resolved != NULL && !C.quiet)
		fprintf(stderr, "sbx: --workdir %s resolves to %s\n",
		    R.workdir, X.workdir_resolved);
	if (rc == -1)
		return report(&e, SBX_EX_FAILED, NULL);
	if (X.bwrap_line != NULL)
		fprintf(stderr, "%s: %s\n", PROG, X.bwrap_line);
	fflush(NULL);
	if (sbx_exec_run(&X, &e) == -1)
		return report(&e, SBX_EX_FAILED, NULL);
	if (!C.json && !C.quiet && (v = sbx_exec_violations_text(&X)) != NULL) {
		fprintf(stderr, "sbx: %s\n", v);
		free(v);
	}
	sbx_exec_outcome(&X, &o);
	if (o.ok) {
		print_warnings(X.warnings);
		if (R.background && !C.json)
			printf("%s\n", X.job);
		if (C.json || C.envelope_fd >= 0)
			emit(sbx_envelope_ok(tool, o.result,
			    json_incref(X.warnings)));
		o.result = NULL;
	} else {
		say_outcome(&o);
		if (C.json || C.envelope_fd >= 0)
			emit(sbx_envelope_err(tool, &o.err, o.extra));
		else
			json_decref(o.extra);
		o.extra = NULL;
	}
	sbx_exec_outcome_release(&o);
	return o.code;
}

/* sbx exec, as a program or built into the front-end. */
int
cmd_exec(int argc, char *argv[])
{
	struct exec_jobs	 J;
	struct sbx_error	 e;
	int			 code, rc;

	/* Before anything is opened: see sbx_fd_sanitize_std(). */
	if (sbx_fd_sanitize_std() == -1)
		return SBX_EX_OSERR;
	sbx_cmd_finish_init(PROG);
	sbx_exec_req_init(&R);
	sbx_exec_init(&X);
#ifdef SBX_BUILTIN
	/* sbx-init is in the front-end's exec path: $SBX_EXEC_PATH
	 * (ignored when set-id) or the compiled-in one. */
	R.libexec = secure_getenv("SBX_EXEC_PATH");
	if (R.libexec == NULL || *R.libexec != '/')
		R.libexec = SBX_LIBEXECDIR;
#endif
	if (parse_args(argc, argv, &code) == -1)
		return code;
	if ((rc = check_args(&e)) != 0)
		return rc == -2 ? usage_err(&e) : report(&e, SBX_EX_FAILED,
		    NULL);
	if (C.sub != NULL) {
		/* The job subcommands (cmd/exec-jobs.c). */
		J.sub = C.sub;
		J.agent = R.agent;
		J.home = R.home;
		J.timeout = R.timeout;
		J.json = C.json;
		J.quiet = C.quiet;
		J.force = C.force;
		J.tail_lines = C.tail_lines;
		J.argv = C.argv;
		J.argc = C.argc;
		tool = exec_jobs_tool(C.sub);
		return (rc = exec_jobs(&J)) == -1 ? usage_err(NULL) : rc;
	}
	if (C.request != NULL && read_request(&e) == -1)
		return report(&e, SBX_EX_DATAERR, NULL);
	return run();
}

#ifndef SBX_BUILTIN
int
main(int argc, char *argv[])
{
	exit(cmd_exec(argc, argv));
}
#endif
