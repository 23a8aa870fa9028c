/*
 * sbx-preflight: can this machine run sbx, and is the state root sound?
 * A typed readiness report, as text, JSON or JUnit XML; the exit status is
 * the readiness.  See sbx-preflight(1).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
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
#include "fsutil.h"
#include "names.h"
#include "opts.h"
#include "preflight.h"
#include "preflightrender.h"
#include "root.h"
#include "tools.h"

#define PROG	"sbx-preflight"

static const char usage_text[] =
"usage: sbx preflight [--home DIR] [--agent A] [--json] [--pretty]\n"
"                     [--output FILE] [--junit FILE] [--deep]\n"
"                     [--fail-on blocked|unproven|warning] [-q] [-v]\n";

static const char help_text[] =
"\n"
"Check whether this machine can run sbx and whether the state root is\n"
"sound: dependencies, host settings, a live probe sandbox, cgroups, the\n"
"layout of the state root, the configuration. Nothing is changed.\n"
"Exit status: 0 ready, 1 needs_setup, 2 unproven, 3 blocked (levels below\n"
"--fail-on exit 0), 64 usage, 70 internal error, 73 a report file cannot\n"
"be written.\n"
"\n";

enum { OPT_HOME = 256, OPT_PRETTY, OPT_JUNIT, OPT_DEEP, OPT_VERSION,
    OPT_FAIL_ON };

/* No subcommands: every option goes with the program (bit 1). */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent whose home, output and token are checked\n"
	    "(default: $SBX_AGENT or \"default\")", 1, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, 1),
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "print the report as one JSON envelope (also\n"
	    "SBX_JSON=1)", 1, 0 },
	{ OPT_PRETTY, "pretty", 0, SBX_OPT_NONE, NULL, NULL,
	    "indent the JSON (implies --json)", 1, 0 },
	{ 'o', "output", 'o', SBX_OPT_REQ, "FILE", "@file",
	    "also write the JSON report to FILE, atomically", 1, 0 },
	{ OPT_JUNIT, "junit", 0, SBX_OPT_REQ, "FILE", "@file",
	    "also write a JUnit XML file, one testcase per\n"
	    "finding", 1, 0 },
	{ OPT_DEEP, "deep", 0, SBX_OPT_NONE, NULL, NULL,
	    "also check what is slow to check (templates)", 1, 0 },
	{ OPT_FAIL_ON, "fail-on", 0, SBX_OPT_REQ, "LEVEL",
	    "blocked|unproven|warning",
	    "the least readiness problem that fails the run:\n"
	    "warning (default: needs_setup fails), unproven,\n"
	    "or blocked", 1, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "text: only what did not pass", 1, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "text: details of passed checks too", 1, 0 },
	SBX_OPT_ROW_HELP(1),
	SBX_OPT_ROW_VERSION(OPT_VERSION, 1),
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opts table = { PROG, "sbx preflight", rows,
	SBX_OPTS_N(rows), NULL, 0, 1, NULL, 25, 0 };

static struct {
	const char	*agent;
	const char	*home;
	const char	*output;
	const char	*junit;
	int		 json, pretty, deep, quiet, verbose;
	int		 fail_at;	/* exit statuses below it become 0 */
} O = { .fail_at = 1 };

static struct sbx_opts_getopt	 g;

static void	emit(json_t *);

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, 1, &O.json, &O.quiet, &O.verbose, NULL,
	.tool = "preflight", .emit = emit };

static void
emit(json_t *env)
{
	char	*s;

	if (O.pretty) {
		s = json_dumps(env, JSON_INDENT(2) | JSON_SORT_KEYS);
		if (s != NULL) {
			fputs(s, stdout);
			fputs("\n", stdout);
		}
	} else
		s = sbx_envelope_dump(env);
	if (s != NULL && !O.pretty)
		fputs(s, stdout);
	free(s);
	fflush(stdout);
	json_decref(env);
}

static void
parse(int argc, char *argv[])
{
	struct sbx_error	 e;
	int			 ch;

	/* Before getopt: where --json stands never changes how a usage
	 * error is reported. */
	if (sbx_opts_getopt(&table, 1, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, NULL)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		case OPT_PRETTY:
			O.pretty = O.json = 1;
			break;
		case 'o':
			O.output = optarg;
			break;
		case OPT_JUNIT:
			O.junit = optarg;
			break;
		case OPT_DEEP:
			O.deep = 1;
			break;
		case OPT_FAIL_ON:
			if (strcmp(optarg, "warning") == 0)
				O.fail_at = 1;
			else if (strcmp(optarg, "unproven") == 0)
				O.fail_at = 2;
			else if (strcmp(optarg, "blocked") == 0)
				O.fail_at = 3;
			else {
				sbx_error_set(&e, SBX_K_INVALID_ARGS,
				    "--fail-on", "invalid_value", "--fail-on: "
				    "`%s` is not one of blocked, unproven, "
				    "warning", optarg);
				sbx_cmd_usage_exit(&e);
			}
			break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	if (optind < argc) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "arguments",
		    "unexpected_argument", "unexpected argument `%s`",
		    argv[optind]);
		sbx_cmd_usage_exit(&e);
	}
}

/* Write data to FILE atomically: a temp file in FILE's directory, fsync,
 * rename over FILE, fsync the directory. */
static int
write_out(const char *file, const char *data, size_t n, struct sbx_error *e)
{
	char	*d = strdup(file), *f = strdup(file);
	char	*dir, *base;
	int	 dfd, rc = -1;

	if (d == NULL || f == NULL) {
		sbx_error_sys(e, "nomem", "%s", file);
		goto out;
	}
	dir = dirname(d);
	base = basename(f);
	if (*file == '\0' || strcmp(base, "/") == 0 || strcmp(base, ".") == 0
	    || strcmp(base, "..") == 0 || file[strlen(file) - 1] == '/') {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "output", "not_a_file",
		    "argument `%s` does not name a file", file);
		goto out;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		sbx_error_sys(e, "write_failed", "cannot open the directory of "
		    "%s", file);
		goto out;
	}
	rc = sbx_fs_write_atomic(dfd, base, data, n, 0644, e);
	close(dfd);
out:
	free(d);
	free(f);
	return rc;
}

/* Can a report be written to FILE?  Its directory must exist and be a
 * directory we can write; FILE itself must not be a directory. */
static int
check_out(const char *file, const char *field, struct sbx_error *e)
{
	char		*d = strdup(file), *dir;
	struct stat	 st;
	int		 rc = -1;

	if (d == NULL)
		return sbx_error_sys(e, "nomem", "%s", file);
	/* dirname() may return a pointer of its own ("." for a name
	 * without a slash) and leave d as it was: the directory is what it
	 * returns, never d. */
	dir = dirname(d);
	if (*file == '\0' || file[strlen(file) - 1] == '/')
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, "not_a_file",
		    "argument `%s` does not name a file", file);
	else if (stat(dir, &st) == -1)
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, errno == ENOENT ?
		    "no_such_directory" : "directory_unreadable",
		    "cannot write the report to %s: directory %s: %s", file,
		    dir, strerror(errno));
	else if (!S_ISDIR(st.st_mode))
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, "not_a_directory",
		    "cannot write the report to %s: %s is not a directory",
		    file, dir);
	else if (access(dir, W_OK | X_OK) == -1)
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, "not_writable",
		    "cannot write the report to %s: directory %s: %s", file,
		    dir, strerror(errno));
	else if (stat(file, &st) == 0 && S_ISDIR(st.st_mode))
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, "not_a_file",
		    "cannot write the report to %s: it is a directory", file);
	else
		rc = 0;
	free(d);
	return rc;
}

/* The front-end next to the programs: PREFIX/libexec/sbx -> PREFIX/bin/sbx
 * (the build tree has the same shape). */
static char *
front_end(const char *exec_dir)
{
	char	*p, *s;
	int	 i;

	if ((p = malloc(strlen(exec_dir) + 16)) == NULL)
		return NULL;
	strcpy(p, exec_dir);
	for (i = 0; i < 2; i++) {
		if ((s = strrchr(p, '/')) == NULL || s == p) {
			free(p);
			return NULL;
		}
		*s = '\0';
	}
	strcat(p, "/bin/sbx");
	return p;
}

/* The probe's options: the agent, the state root, where sbx's programs
 * are, and the paths the probe may use. */
static void
probe_opts(struct sbx_preflight_opts *po, struct sbx_root *root,
    char **exec_dir, char **front)
{
	struct sbx_error e;
	const char	*v;

	memset(po, 0, sizeof(*po));
	po->agent_flag = O.agent != NULL;
	if (O.agent == NULL && (v = getenv("SBX_AGENT")) != NULL && *v)
		O.agent = v;
	if (O.agent == NULL)
		O.agent = "default";
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_resolve(O.home, root, &e) == -1)
		sbx_cmd_die(&e);

	v = secure_getenv("SBX_EXEC_PATH");
	*exec_dir = v != NULL && *v == '/' ? strdup(v) : sbx_tools_self_dir();
	if (*exec_dir == NULL) {
		sbx_error_sys(&e, "self_unknown", "cannot locate sbx's programs");
		sbx_cmd_die(&e);
	}
	*front = front_end(*exec_dir);
	v = secure_getenv("SBX_PREFLIGHT_SYSCTL_DIR");
	po->sysctl_dir = v != NULL && *v == '/' ? v : "/proc/sys";
	/* As root the probe sandbox runs as another uid, which must reach
	 * the temporary root: /tmp, whatever TMPDIR says. */
	v = secure_getenv("TMPDIR");
	po->tmp_dir = geteuid() != 0 && v != NULL && *v == '/' ? v : "/tmp";
	po->root_path = root->path;
	po->root_source = root->source;
	po->agent = O.agent;
	po->exec_dir = *exec_dir;
	po->front_end = *front;
	po->deep = O.deep;
}

/* --output FILE (the JSON report) and --junit FILE. */
static void
write_reports(json_t *report)
{
	struct sbx_error e;
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		*s;

	if (O.output != NULL) {
		s = json_dumps(report, JSON_SORT_KEYS | (O.pretty ?
		    JSON_INDENT(2) : JSON_COMPACT));
		if (s == NULL || sbx_buf_printf(&b, "%s\n", s) == -1 ||
		    write_out(O.output, b.p, b.len, &e) == -1) {
			if (s == NULL)
				sbx_error_sys(&e, "nomem", "report");
			free(s);
			sbx_cmd_die_extra(&e, NULL,
			    s == NULL ? -1 : SBX_EX_CANTCREAT);
		}
		free(s);
		sbx_buf_reset(&b);
	}
	if (O.junit != NULL) {
		if (sbx_preflightrender_junit(report, &b) == -1) {
			sbx_error_sys(&e, "nomem", "JUnit report");
			sbx_cmd_die(&e);
		}
		if (write_out(O.junit, b.p, b.len, &e) == -1)
			sbx_cmd_die_extra(&e, NULL, SBX_EX_CANTCREAT);
	}
	sbx_buf_release(&b);
}

/* The report on stdout: an envelope, or text (in colour on a terminal
 * unless NO_COLOR or TERM=dumb). */
static void
render(json_t *report)
{
	struct sbx_error e;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*v;
	unsigned	 flags = 0;

	if (O.json) {
		json_t *w = NULL;

		/* Ready with a warning: every run works, with soft limits
		 * (the finding cgroup_unavailable says why and the repair). */
		v = json_string_value(json_object_get(report, "limits"));
		if (v != NULL && strcmp(v, "soft") == 0)
			w = json_pack("[s]", "limits are soft here: no cgroup "
			    "can hold memory and task limits, so they are "
			    "rlimits only; a limit an agent asks for is "
			    "refused unless the run accepts --soft-limits");
		emit(sbx_envelope_ok("preflight", report, w));
		return;
	}
	v = getenv("NO_COLOR");
	if (isatty(STDOUT_FILENO) && (v == NULL || *v == '\0') &&
	    ((v = getenv("TERM")) == NULL || strcmp(v, "dumb") != 0))
		flags |= SBX_PREFLIGHT_TEXT_COLOR;
	if (O.verbose)
		flags |= SBX_PREFLIGHT_TEXT_VERBOSE;
	if (O.quiet)
		flags |= SBX_PREFLIGHT_TEXT_QUIET;
	if (sbx_preflightrender_text(report, flags, &b) == -1) {
		sbx_error_sys(&e, "nomem", "text report");
		sbx_cmd_die(&e);
	}
	fputs(b.p, stdout);
	fflush(stdout);
	json_decref(report);
	sbx_buf_release(&b);
}

int
main(int argc, char *argv[])
{
	struct sbx_preflight_opts po;
	struct sbx_root		  root = SBX_ROOT_INIT;
	struct sbx_error	  e;
	json_t			 *report;
	char			 *exec_dir, *front;
	int			  code;

	if (sbx_cmd_start(&cmdopts, argc, argv, &code))
		return code;
	parse(argc, argv);
	if (sbx_cli_json_env())
		O.json = 1;
	probe_opts(&po, &root, &exec_dir, &front);
	/* A report file that cannot be written is said before the probe
	 * runs, not after: CI keeps the file as its proof. */
	if ((O.output != NULL && check_out(O.output, "output", &e) == -1) ||
	    (O.junit != NULL && check_out(O.junit, "junit", &e) == -1))
		sbx_cmd_die_extra(&e, NULL, SBX_EX_CANTCREAT);
	if (sbx_preflight_run(&po, &report, &e) == -1)
		sbx_cmd_die(&e);
	code = sbx_preflight_exit_status(
	    json_string_value(json_object_get(report, "overall_readiness")));
	if (code > 0 && code < 4 && code < O.fail_at)
		code = 0;
	write_reports(report);
	render(report);
	sbx_root_release(&root);
	free(exec_dir);
	free(front);
	return code;
}
