/*
 * sbx-exec: run a command in an agent's sandbox, in the foreground or as a
 * supervised background job.  See sbx-exec(1).
 *
 * Parse, validate, call lib/exec (the engine) or lib/jobsup (the jobs),
 * render.  Built into the front-end as cmd_exec(), and a program of its
 * own with the main() of cmd/exec-main.c: one object for both.  The option
 * table, the usage and the help are cmd/exec-opts.c.
 */
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "exec-ask.h"
#include "exec-jobs.h"
#include "exec-opts.h"
#include "exec-session.h"
#include "exec.h"
#include "fsutil.h"
#include "opts.h"
#include "sandbox.h"

#define PROG	"sbx-exec"

/* Largest request envelope: a command line of ARG_MAX and change. */
#define REQUEST_MAX	(4u << 20)

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

/* The subcommands, for sbx_cli_wants_json. */
static const char *const exec_subs[] = {
	"ps", "poll", "wait", "kill", "gc", NULL
};
/* The options seen, checked against the subcommand once it is known. */
static struct sbx_opts_seen	 seen;

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
		(void)sbx_fs_write_all(C.envelope_fd, s, strlen(s));
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
	sbx_cmd_usage(PROG, tool, C.json, e, exec_usage_text, sbx_cmd_emit);
	return SBX_EX_USAGE;
}

/* A refused option (getopt_long): usage_err and exit. */
static void __attribute__((noreturn))
usage_exit(const struct sbx_error *e)
{
	exit(usage_err(e));
}

/* The options every program has (cmd/common.c).  sbx exec reports
 * through report() and usage_err() above (--envelope-fd, the transparent
 * mode's codes), never through sbx_cmd_die and its kin. */
static const struct sbx_cmd_opts cmdopts = { PROG, exec_usage_text,
	exec_help_text, NULL, &exec_table, S_ALL, &C.json, &C.quiet,
	&C.verbose, usage_exit, .tool = "exec" };

/*
 * The request's field of an option (lib/exec/execreq.c's table, by the
 * option's long name, or its letter when it has none: -c), or NULL.
 * One with a request key is an option of a run, which --request refuses
 * beside it.
 */
static const struct sbx_exec_field *
field_of(int ch, unsigned bit)
{
	const struct sbx_opt	*o = sbx_opts_row(&exec_table, ch, bit);
	char			 letter[2] = { 0, 0 };

	if (o == NULL)
		return NULL;
	if (o->name != NULL)
		return sbx_exec_field_option(o->name);
	letter[0] = o->letter;
	return sbx_exec_field_option(letter);
}

/*
 * One getopt loop for sbx exec (in order: the run's options stop at the
 * command) and for the options of ps/poll/wait/kill/gc, which may come
 * before or after the job id (argv[0] is then the subcommand; operands
 * are collected in order: opts.h).  bit is the (sub)command, whose
 * letters apply (wait -t SECONDS, but sbx exec -t is --tty).  It only
 * records what it sees: every value is judged after it (check_args,
 * sbx_exec_validate), so that the order of the options never changes the
 * result, and an option that does not go with the subcommand is refused
 * once the subcommand is known.  Returns -1 (and *code) when done.
 */
static int
getopts(int argc, char *argv[], unsigned bit, int *code)
{
	struct sbx_opts_getopt	 g;
	struct sbx_error	 e;
	const struct sbx_exec_field *f;
	int			 ch, npos = 0, sub = bit != S_RUN;

	if (sbx_opts_getopt(&exec_table, bit, &g) == -1)
		return *code = SBX_EX_SOFTWARE, -1;
	optind = 0;	/* 0: re-read the optstring flags */
	opterr = 0;
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		f = field_of(ch, bit);
		C.runopts += f != NULL && f->key != NULL;
		switch (ch) {
		case 'w':
			/* Repeated: more writable roots; the first is the
			 * default cwd. */
			if (R.workdir == NULL)
				R.workdir = optarg;
			else if (sbx_strv_push(&R.xworkdirs, optarg) == -1)
				return *code = SBX_EX_OSERR, -1;
			break;
		case OPT_TAIL: C.tail_arg = optarg; break;
		case OPT_FORCE: C.force = 1; break;
		case OPT_REQUEST: C.request = optarg; break;
		case OPT_ENVELOPE_FD: C.envelope_fd_arg = optarg; break;
		case 'h':
		case OPT_VERSION:
			if (sub && sbx_opts_check(&exec_table, &seen, bit,
			    &e) == -1)
				return *code = usage_err(&e), -1;
			if (sub && ch == 'h') {
				fputs(exec_usage_text, stdout);
				return *code = 0, -1;
			}
			/* FALLTHROUGH */
		default:
			/* The request's fields, as the table says. */
			if (f != NULL && f->type != SBX_EXEC_F_PROG) {
				if (sbx_exec_field_set(&R, f, optarg) == -1)
					return *code = SBX_EX_OSERR, -1;
				break;
			}
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
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
	struct sbx_opts_getopt	 g;
	struct sbx_error	 e;
	unsigned		 bit = S_RUN;

	C.envelope_fd = -1;
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported; the command's argv after `--` never counts. */
	if (sbx_opts_getopt(&exec_table, S_RUN, &g) == -1)
		return *code = SBX_EX_SOFTWARE, -1;
	C.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    exec_subs);
	if (getopts(argc, argv, S_RUN, code) == -1)
		return -1;
	C.dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
	R.argv = argv + optind;
	R.argc = argc - optind;
	/* A subcommand only when it is not after `--`: `sbx exec -- ps`
	 * runs ps in the sandbox. */
	if (!C.dashdash && R.shell == NULL && R.argc > 0 &&
	    (bit = sbx_opts_sub_find(&exec_table, 1, R.argv, NULL)) != 0) {
		C.sub = sbx_opts_sub_name(&exec_table, bit);
		if (getopts(R.argc, R.argv, bit, code) == -1)
			return -1;
	} else
		bit = S_RUN;
	/* Options before the subcommand, or after it, that do not go with
	 * it (sbx exec --memory 5 ps, sbx exec ps --force). */
	if (sbx_opts_check(&exec_table, &seen, bit, &e) == -1)
		return *code = usage_err(&e), -1;
	return 0;
}

/* What the command line says that no run could take: a usage error. */
static int
check_args(struct sbx_error *e)
{
	unsigned long long	 v;

	C.tail_lines = 20;
	if (C.tail_arg != NULL) {
		if (sbx_cli_parse_uint(C.tail_arg, 10000, &v) == -1) {
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
		if (sbx_cli_parse_uint(C.envelope_fd_arg, INT_MAX, &v) == -1 ||
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
	/* A missing command is a usage error (64), as every program's
	 * missing operand, not one of sbx exec's own failures (125): the
	 * command line is wrong, nothing was tried. */
	if (R.shell == NULL && R.argc == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "missing", "no command given: use `-- COMMAND [ARG...]` or "
		    "`-c STRING`") - 1;
	if (R.shell == NULL && R.argc > 0 && !C.dashdash)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "unexpected_argument", "put `--` before the command: sbx "
		    "exec -- %s ...", R.argv[0]) - 1;
	return 0;
}

static int
session_report(const struct sbx_error *e)
{
	return report(e, SBX_EX_FAILED, NULL);
}

/* Prepare, run, judge and render one run. */
static int
run(void)
{
	struct sbx_error	 e;
	struct sbx_exec_outcome	 o;
	char			*v;
	int			 rc;
	pid_t			 asker;

	if (sbx_sandbox_refuse_nested(&e) == -1)
		return report(&e, SBX_EX_FAILED, NULL);
	R.capture = C.json;
	R.verbose = C.verbose;
	R.detach_fd = C.envelope_fd;
	if (R.session_name != NULL) {
		/* A warm session's (cmd/exec-session.c). */
		struct exec_session_out so = { C.json, C.quiet,
			C.envelope_fd >= 0, tool, emit, usage_err,
			session_report };

		return exec_session(&R, &X, &so);
	}
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
	/* --ask on a terminal: sbx asks the person there (cmd/exec-ask.c). */
	asker = exec_ask_start(&X);
	rc = sbx_exec_run(&X, &e);
	exec_ask_stop(asker);
	if (X.ask_hold_fd >= 0) {
		close(X.ask_hold_fd);
		X.ask_hold_fd = -1;
	}
	if (rc == -1)
		return report(&e, SBX_EX_FAILED, NULL);
	v = C.json || C.quiet ? NULL : sbx_exec_violations_text(&X);
	sbx_exec_outcome(&X, &o);
	exec_render_outcome(&o, v, X.warnings, R.background ? X.job : NULL,
	    C.json, C.quiet, C.json || C.envelope_fd >= 0 ? emit : NULL, tool);
	sbx_exec_outcome_release(&o);
	return o.code;
}

/* sbx exec, as a program or built into the front-end (exec-opts.h). */
int
cmd_exec(int argc, char *argv[], int builtin)
{
	struct exec_jobs	 J;
	struct sbx_error	 e;
	int			 code, rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &code))
		return code;
	sbx_exec_req_init(&R);
	sbx_exec_init(&X);
	if (builtin) {
		/* sbx-init is in the front-end's exec path: $SBX_EXEC_PATH
		 * (ignored when set-id) or the compiled-in one. */
		R.libexec = secure_getenv("SBX_EXEC_PATH");
		if (R.libexec == NULL || *R.libexec != '/')
			R.libexec = SBX_LIBEXECDIR;
	}
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
	if (C.request != NULL && sbx_exec_req_load(&R, C.request, REQUEST_MAX,
	    &e) == -1)
		return report(&e, SBX_EX_DATAERR, NULL);
	return run();
}
