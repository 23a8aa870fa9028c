/*
 * common.c: what every sbx program shares to show a result or a failure
 * and to finish (cmd.h).  Linked into every program and the front-end.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "fsutil.h"
#include "utf8.h"

/* The program's context (sbx_cmd_start). */
static const struct sbx_cmd_opts	*ctx;

void
sbx_cmd_emit(json_t *env)
{
	char	*s = sbx_envelope_dump(env);

	if (s != NULL) {
		fputs(s, stdout);
		free(s);
	}
	fflush(stdout);
	json_decref(env);
}

void
sbx_cmd_report(const char *prog, const char *tool, int json,
    const struct sbx_error *e, json_t *extra, void (*emit)(json_t *))
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (json) {
		emit(sbx_envelope_err(tool, e, extra));
		return;
	}
	json_decref(extra);
	if (sbx_cli_error_text(prog, e, &b) == 0)
		fputs(b.p, stderr);
	sbx_buf_release(&b);
}

void
sbx_cmd_fail(const char *prog, const char *tool, int json,
    const struct sbx_error *e, json_t *extra, void (*emit)(json_t *),
    int code)
{
	sbx_cmd_report(prog, tool, json, e, extra, emit);
	exit(code < 0 ? sbx_exit_for(e) : code);
}

void
sbx_cmd_usage(const char *prog, const char *tool, int json,
    const struct sbx_error *e, const char *synopsis, void (*emit)(json_t *))
{
	struct sbx_error	 g;

	if (e == NULL && json) {
		sbx_error_set(&g, SBX_K_INVALID_ARGS, "arguments", "usage",
		    "the arguments do not match the synopsis (see %s --help)",
		    prog);
		e = &g;
	}
	if (e != NULL)
		sbx_cmd_report(prog, tool, json, e, NULL, emit);
	/*
	 * A mistyped option: the error, the nearest option (its hint) and
	 * where the rest is, in three lines, as git says it; the synopsis
	 * (twenty lines for sbx exec) would bury the one that matters.
	 */
	if (e != NULL && e->reason != NULL &&
	    strcmp(e->reason, "unknown_option") == 0) {
		if (strncmp(prog, "sbx-", 4) == 0)
			fprintf(stderr, "%s: see `sbx %s --help`\n", prog,
			    prog + 4);
		else
			fprintf(stderr, "%s: see `%s --help`\n", prog, prog);
		return;
	}
	fputs(synopsis, stderr);
}

void
sbx_cmd_ok(const char *tool, int json, int quiet, json_t *result,
    const char *text)
{
	if (json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, result, NULL));
		return;
	}
	json_decref(result);
	if (!quiet && text != NULL)
		printf("%s\n", text);
}

void
sbx_cmd_fail_warned(const char *prog, const char *tool, int json, int quiet,
    json_t *warnings, const struct sbx_error *e, json_t *extra)
{
	if (!json)
		sbx_cmd_print_warnings(prog, warnings, quiet);
	if (json && json_array_size(warnings) > 0) {
		if (extra == NULL)
			extra = json_object();
		json_object_set(extra, "warnings", warnings);
	}
	sbx_cmd_fail(prog, tool, json, e, extra, sbx_cmd_emit, -1);
}

void
sbx_cmd_warnf(json_t *warnings, const char *fmt, ...)
{
	char	 m[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_array_append_new(warnings, json_string(m));
}

void
sbx_cmd_print_warnings(const char *prog, json_t *warnings, int quiet)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*s;
	json_t		*v;
	size_t		 i;

	if (quiet)
		return;
	json_array_foreach(warnings, i, v) {
		if ((s = json_string_value(v)) == NULL)
			continue;
		sbx_buf_reset(&b);
		if (sbx_utf8_escape_line(&b, s, strlen(s)) == 0)
			fprintf(stderr, "%s: warning: %s\n", prog,
			    b.p ? b.p : "");
	}
	sbx_buf_release(&b);
}

static const char	*finish_prog;
static pid_t		 finish_pid;

/* At exit: stdout flushed, checked and closed; stderr flushed and
 * checked.  _exit, not exit: we are inside exit already. */
static void
finish(void)
{
	int	 bad = 0, err = 0;

	if (getpid() != finish_pid)
		return;
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout))
		bad = 1, err = errno;
	if (fclose(stdout) != 0 && !bad)
		bad = 1, err = errno;
	if (bad) {
		fprintf(stderr, "%s: cannot write to standard output: %s\n",
		    finish_prog, err != 0 ? strerror(err) : "write error");
		fflush(stderr);
		_exit(SBX_EX_IOERR);
	}
	if (fflush(stderr) != 0 || ferror(stderr))
		_exit(SBX_EX_IOERR);
}

void
sbx_cmd_finish_init(const char *prog)
{
	if (finish_prog != NULL)
		return;
	finish_prog = prog;
	finish_pid = getpid();
	atexit(finish);
}

int
sbx_cmd_complete(const struct sbx_opts *t, int argc, char *argv[], int *code)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	unsigned	 bit;
	int		 rc;

	if (argc < 2)
		return 0;
	if (strcmp(argv[1], "--complete-options") == 0) {
		bit = sbx_opts_complete_bit(t, argc - 2, argv + 2);
		rc = bit == 0 ? -1 : sbx_opts_complete(t, bit, &b);
	} else if (strcmp(argv[1], "--complete-operands") == 0) {
		bit = sbx_opts_complete_bit(t, argc - 2, argv + 2);
		rc = bit == 0 || bit == ~0u ? -1 :
		    sbx_opts_complete_operands(t, bit, &b);
	} else if (strcmp(argv[1], "--complete-subcommands") == 0)
		rc = sbx_opts_complete_subs(t, argc - 2, argv + 2, &b);
	else
		return 0;
	if (rc == 0 && b.p != NULL)
		fputs(b.p, stdout);
	sbx_buf_release(&b);
	*code = rc == 0 ? 0 : SBX_EX_NEGATIVE;
	return 1;
}

int
sbx_cmd_getopt(int argc, char *argv[], struct sbx_opts_getopt *g,
    struct sbx_opts_seen *seen)
{
	int	 ch;

	for (;;) {
		/* A negative number is a value (set limits.cpus -1), never
		 * an option; optind 0 (a restart) is left to getopt_long. */
		if (g->permute && optind > 0 && optind < argc &&
		    sbx_opts_is_operand(argv[optind])) {
			optind++;
			sbx_opts_operand(g, argv, &optind);
			continue;
		}
		ch = getopt_long(argc, argv, g->optstring, g->longopts, NULL);
		if (ch == 1 && g->permute) {
			sbx_opts_operand(g, argv, &optind);
			continue;
		}
		break;
	}
	if (ch == -1) {
		/* Every operand, in order, at argv[optind..argc). */
		if (g->permute)
			sbx_opts_operands_done(g, argv, &optind);
		return -1;
	}
	ch = sbx_opts_id(g, ch);
	if (seen != NULL && ch != '?' && ch != ':' && ch != 1)
		sbx_opts_seen(seen, ch);
	return ch;
}

void
sbx_cmd_opt(const struct sbx_cmd_opts *c, int id, int argc, char *argv[],
    const struct sbx_opts_getopt *g)
{
	const struct sbx_opt	*row;
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	const char		*name;
	int			*flag = NULL;

	if (id == '?' || id == ':') {
		sbx_cli_getopt_error(argc, argv, g->optstring, g->longopts,
		    &e);
		if (c->usage_err == NULL)
			sbx_cmd_usage_exit(&e);
		c->usage_err(&e);
		exit(SBX_EX_USAGE);	/* not reached */
	}
	row = sbx_opts_row(c->table, id, 0);
	name = row != NULL && row->name != NULL ? row->name : "";
	if (strcmp(name, "json") == 0)
		flag = c->json;
	else if (strcmp(name, "quiet") == 0)
		flag = c->quiet;
	else if (strcmp(name, "verbose") == 0)
		flag = c->verbose;
	else if (strcmp(name, "help") == 0) {
		fputs(c->usage, stdout);
		fputs(c->help, stdout);
		if (sbx_opts_help(c->table, c->help_mask, &b) == 0 &&
		    b.p != NULL)
			fputs(b.p, stdout);
		sbx_buf_release(&b);
		if (c->help_tail != NULL)
			fputs(c->help_tail, stdout);
		exit(0);
	} else if (strcmp(name, "version") == 0) {
		printf("%s %s\n", c->prog, SBX_VERSION);
		exit(0);
	} else {
		fprintf(stderr, "%s: option `%s' (%d) is not handled\n",
		    c->prog, name, id);
		exit(SBX_EX_SOFTWARE);
	}
	if (flag != NULL)
		*flag = 1;
}

int
sbx_cmd_start(const struct sbx_cmd_opts *c, int argc, char *argv[], int *code)
{
	ctx = c;
	if (sbx_fs_sanitize_std() == -1) {
		*code = SBX_EX_OSERR;
		return 1;
	}
	sbx_cmd_finish_init(c->prog);
	return sbx_cmd_complete(c->table, argc, argv, code);
}

/* The context's json flag (a NULL one is never set) and emit
 * (sbx_cmd_emit unless the program has its own). */
static int
ctx_json(void)
{
	return ctx->json != NULL && *ctx->json;
}

static void
ctx_emit(json_t *env)
{
	if (ctx->emit != NULL)
		ctx->emit(env);
	else
		sbx_cmd_emit(env);
}

void
sbx_cmd_die(const struct sbx_error *e)
{
	sbx_cmd_die_extra(e, NULL, -1);
}

void
sbx_cmd_die_extra(const struct sbx_error *e, json_t *extra, int code)
{
	if (ctx->cleanup != NULL)
		ctx->cleanup();
	if (ctx->warnings != NULL)
		sbx_cmd_fail_warned(ctx->prog, ctx->tool, ctx_json(),
		    ctx->quiet != NULL && *ctx->quiet, *ctx->warnings, e,
		    extra);
	sbx_cmd_fail(ctx->prog, ctx->tool, ctx_json(), e, extra, ctx_emit,
	    code);
}

void
sbx_cmd_usage_exit(const struct sbx_error *e)
{
	sbx_cmd_usage(ctx->prog, ctx->tool, ctx_json(), e, ctx->usage,
	    ctx_emit);
	exit(SBX_EX_USAGE);
}

void
sbx_cmd_usage_why(const char *why)
{
	struct sbx_error	 e;

	sbx_error_set(&e, SBX_K_INVALID_ARGS, "args", "usage", "%s",
	    why != NULL ? why : "bad arguments");
	sbx_cmd_usage_exit(why != NULL ? &e : NULL);
}

void
sbx_cmd_done(json_t *result, const char *text)
{
	sbx_cmd_ok(ctx->tool, ctx_json(), ctx->quiet != NULL && *ctx->quiet,
	    result, text);
}

/*
 * AddressSanitizer builds (make SANITIZE=address): the programs end
 * through exit() with their state still allocated on purpose, so leak
 * checks belong to the unit tests (which do not link this file).  Built
 * in rather than left to ASAN_OPTIONS: a program that runs inside a
 * sandbox (sbx refusing to nest, 0070) gets a cleared environment, and
 * LeakSanitizer cannot work in there (it dies with a "fatal error" on the
 * output the tests compare).
 */
#if defined(__SANITIZE_ADDRESS__)
#define SBX_CMD_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SBX_CMD_ASAN 1
#endif
#endif
#ifdef SBX_CMD_ASAN
const char *__asan_default_options(void);

const char *
__asan_default_options(void)
{
	return "detect_leaks=0";
}
#endif
