/*
 * cmd.h: the output side every sbx program shares.  lib/ never prints or
 * exits, so what turns a struct sbx_error into an envelope on stdout or a
 * line on stderr lives here, with the programs, as static functions.
 */
#ifndef SBX_CMD_H
#define SBX_CMD_H

#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "envelope.h"
#include "error.h"

/* One envelope line on stdout (steals env). */
static void __attribute__((unused))
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

/* A failure: the envelope (with extra, stolen) when json, else the
 * message and hint on stderr, escaped for a terminal. */
static void __attribute__((unused))
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

/*
 * A usage error (the caller exits 64): under json the invalid_args
 * envelope of e (a generic one when e is NULL), else e's message; the
 * synopsis on stderr either way, as a person still needs it.
 */
static void __attribute__((unused))
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

#endif
