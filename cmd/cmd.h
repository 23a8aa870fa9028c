/*
 * cmd.h: the output side every sbx program shares (cmd/common.c, linked
 * into every program).  lib/ never prints or exits, so what turns a struct
 * sbx_error into an envelope on stdout or a line on stderr, and into an
 * exit status (sbx_exit_for, cli.c), lives here, with the programs.
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

/* A success: the envelope of result (stolen) under json, else the line
 * text on stdout unless quiet or NULL. */
void	sbx_cmd_ok(const char *tool, int json, int quiet, json_t *result,
	    const char *text);

/*
 * The failure of a program that gathers warnings as it goes (install,
 * plugin): under json they travel in the envelope (extra's "warnings"),
 * else they are printed (unless quiet) before the message; then exit
 * with sbx_exit_for(e).
 */
void	sbx_cmd_fail_warned(const char *prog, const char *tool, int json,
	    int quiet, json_t *warnings, const struct sbx_error *e,
	    json_t *extra) __attribute__((noreturn));

/* One warning appended to the array warnings (printf format, at most
 * 511 bytes). */
void	sbx_cmd_warnf(json_t *warnings, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

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
 * What every program with an option table does first, before anything is
 * opened: its context registered (struct sbx_cmd_opts, below; what
 * sbx_cmd_die and its kin report with), its standard descriptors made
 * safe (sbx_fs_sanitize_std), the
 * finish step registered (sbx_cmd_finish_init), the hidden --complete-*
 * options answered (sbx_cmd_complete).  Nonzero when main must return
 * *code at once (71 when the descriptors cannot be made safe).
 */
struct sbx_cmd_opts;
int	sbx_cmd_start(const struct sbx_cmd_opts *, int argc, char *argv[],
	    int *code);

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

/*
 * What every program's getopt loop shares, filled once per program: the
 * flags every program has and what --help, --version and a refused
 * option do.
 */
struct sbx_cmd_opts {
	const char		*prog;		/* "sbx-proxy" */
	const char		*usage;		/* the synopsis */
	const char		*help;		/* prose after it */
	const char		*help_tail;	/* after the options, or NULL */
	const struct sbx_opts	*table;
	unsigned		 help_mask;	/* the rows --help shows */
	int			*json;		/* NULL: accepted, ignored */
	int			*quiet;
	int			*verbose;
	/* A usage error (e: what getopt_long refused); must not return.
	 * NULL: sbx_cmd_usage_exit. */
	void			(*usage_err)(const struct sbx_error *e);
	/*
	 * The rest makes it the program's context, what sbx_cmd_die,
	 * sbx_cmd_usage_exit and sbx_cmd_done report with once
	 * sbx_cmd_start has registered it: the envelope's tool (the
	 * program's buffer, rewritten once the subcommand is known); emit
	 * (NULL: sbx_cmd_emit); the warnings gathered (install, plugin) or
	 * NULL; what to do before a failure exits, or NULL.
	 */
	const char		*tool;
	void			(*emit)(json_t *);
	json_t		       **warnings;
	void			(*cleanup)(void);
};

/*
 * The failure of the registered program (sbx_cmd_start): its cleanup,
 * then sbx_cmd_fail with its tool, json flag and emit (sbx_exit_for(e));
 * a program that gathers warnings fails with sbx_cmd_fail_warned.
 */
void	sbx_cmd_die(const struct sbx_error *e) __attribute__((noreturn));

/* sbx_cmd_die with extra (stolen) in the envelope and exit status code
 * (negative: sbx_exit_for(e); a program with warnings always uses it). */
void	sbx_cmd_die_extra(const struct sbx_error *e, json_t *extra,
	    int code) __attribute__((noreturn));

/* A usage error of the registered program (sbx_cmd_usage with its
 * synopsis), then exit 64. */
void	sbx_cmd_usage_exit(const struct sbx_error *e)
	    __attribute__((noreturn));

/* sbx_cmd_usage_exit of an invalid_args error (field "args", reason
 * "usage") saying why; why NULL: the synopsis alone. */
void	sbx_cmd_usage_why(const char *why) __attribute__((noreturn));

/* The success of the registered program: sbx_cmd_ok with its tool,
 * json and quiet flags. */
void	sbx_cmd_done(json_t *result, const char *text);

/*
 * The next option of a program's getopt loop: getopt_long over g, the
 * row id it stands for (sbx_opts_id), recorded in seen (NULL: not) unless
 * getopt_long refused it ('?', ':'); -1 at the end.  Where g permutes
 * (opts.h), options may stand anywhere before `--`: the operands are
 * set aside as they come and, at the end, are every word of
 * argv[optind..argc), in order (those after `--` last, whatever they look
 * like); otherwise the loop ends at the first operand (a command's argv).
 */
int	sbx_cmd_getopt(int argc, char *argv[], struct sbx_opts_getopt *g,
	    struct sbx_opts_seen *seen);

/*
 * The options every program has, known by the long names of their rows
 * (the ids are each program's): --json, --quiet and --verbose set their
 * flag; --help prints the synopsis, the prose and the table's option
 * lines, --version "PROG VERSION", and both exit 0; what getopt_long
 * refused ('?', ':') becomes an invalid_args error naming the option
 * (unknown_option, missing_argument, unexpected_argument), handed to
 * usage_err.  Called from the default case of a program's switch, after
 * its own options; g is what sbx_opts_getopt gave the loop.  An option of
 * the table that neither handles is a bug: exit 70.
 */
void	sbx_cmd_opt(const struct sbx_cmd_opts *, int id, int argc,
	    char *argv[], const struct sbx_opts_getopt *g);

#endif
