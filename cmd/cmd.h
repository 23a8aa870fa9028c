/*
 * cmd.h: the output side every sbx program shares (cmd/common.c, linked
 * into every program).  lib/ never prints or exits, so what turns a struct
 * sbx_error into an envelope on stdout or a line on stderr, and into an
 * exit status (sbx_exit_for, lib/cli.c), lives here, with the programs.
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
#include "opts.h"

/* One envelope line on stdout (steals env). */
void	sbx_cmd_emit(json_t *env);

/* A failure: the envelope (with extra, stolen) when json, else the
 * message and hint on stderr, escaped for a terminal. */
void	sbx_cmd_report(const char *prog, const char *tool, int json,
	    const struct sbx_error *e, json_t *extra, void (*emit)(json_t *));

/* sbx_cmd_report, then exit with code, or sbx_exit_for(e) when code is
 * negative. */
void	sbx_cmd_fail(const char *prog, const char *tool, int json,
	    const struct sbx_error *e, json_t *extra, void (*emit)(json_t *),
	    int code) __attribute__((noreturn));

/*
 * A usage error (the caller exits 64): under json the invalid_args
 * envelope of e (a generic one when e is NULL), else e's message; the
 * synopsis on stderr either way, as a person still needs it.
 */
void	sbx_cmd_usage(const char *prog, const char *tool, int json,
	    const struct sbx_error *e, const char *synopsis,
	    void (*emit)(json_t *));

/* The warnings of a result on stderr, "PROG: warning: ...", escaped;
 * nothing when quiet. */
void	sbx_cmd_print_warnings(const char *prog, json_t *warnings, int quiet);

/*
 * The common finish step, registered once at the start of main: at exit
 * (in this process, not in a forked child) stdout is flushed and closed
 * and stderr flushed; a write error on either is said on stderr and the
 * program exits 74 (SBX_EX_IOERR), whatever it was about to return, as
 * git's run_builtin does.  Output never vanishes silently (>/dev/full).
 */
void	sbx_cmd_finish_init(const char *prog);

/*
 * The hidden options every program with an option table answers before
 * anything else (the shell completions ask them, through `sbx
 * --complete`): `--complete-options [SUB...]`, the options of the
 * (sub)command, `--complete-operands [SUB...]`, what completes its first
 * operand, and `--complete-subcommands [SUB...]`, the subcommand words
 * that may follow.  Nonzero when argv[1] is one of them (*code is
 * then the exit status: 0, or 1 with nothing printed when the words name
 * no subcommand); 0 otherwise.
 */
int	sbx_cmd_complete(const struct sbx_opts *, int argc, char *argv[],
	    int *code);

#endif
