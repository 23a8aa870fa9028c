/*
 * common.c: what every sbx program shares to show a result or a failure
 * and to finish (cmd.h).  Linked into every program and the front-end.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"
#include "utf8.h"

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
	fputs(synopsis, stderr);
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
