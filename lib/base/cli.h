/* cli.h: what every sbx program shares on its command line. */
#ifndef SBX_CLI_H
#define SBX_CLI_H

#include <jansson.h>

#include "buf.h"
#include "error.h"

/* Exit statuses of DESIGN.md §5. */
#define SBX_EX_OK		0
#define SBX_EX_NEGATIVE		1
#define SBX_EX_USAGE		64
#define SBX_EX_DATAERR		65
#define SBX_EX_UNAVAILABLE	69
#define SBX_EX_SOFTWARE		70
#define SBX_EX_OSERR		71
#define SBX_EX_TEMPFAIL		75
#define SBX_EX_NOPERM		77
#define SBX_EX_CANTCREAT	73
#define SBX_EX_IOERR		74
#define SBX_EX_CONFIG		78

/* sbx exec's own statuses, as env(1) and timeout(1). */
#define SBX_EX_TIMEOUT		124
#define SBX_EX_FAILED		125
#define SBX_EX_CANNOT_EXEC	126
#define SBX_EX_NOT_FOUND	127

/*
 * The exit status of a failure, ONE table for every program (DESIGN.md §5,
 * sbx(7) EXIT STATUS): by reason where a reason needs its own status
 * (config_invalid 78, stdout_write 74), else by kind:
 * invalid_args 65, rejected 77, unavailable 69, timeout 75,
 * execution_error 71, not_found 1, user_denied 1; no or an unknown kind 70.
 * Usage errors (64) are decided by the parser, and a report file that
 * cannot be created (73, sbx-preflight --output) by its program.
 * sbx exec's transparent mode keeps its own 124-127 convention.
 */
int	sbx_exit_for(const struct sbx_error *);

/* Text for people: "PROG: message\nPROG: hint: ...\n", with control
 * characters escaped so a hostile string cannot forge lines. */
int	sbx_cli_error_text(const char *prog, const struct sbx_error *,
	    struct sbx_buf *);
/* Nonzero when SBX_JSON=1 asks for envelopes. */
int	sbx_cli_json_env(void);

struct option;
/*
 * Nonzero when SBX_JSON=1 or the arguments ask for envelopes (--json, or
 * its short letter in a cluster), decided before getopt so that where
 * --json stands never changes how a usage error is reported.  The scan
 * skips option arguments, stops at `--` (a child's argv is never read)
 * and, when optstring starts with '+', at the first operand unless it is
 * one of subs (NULL-terminated; their options follow them).
 */
int	sbx_cli_wants_json(int argc, char *const argv[], const char *optstring,
	    const struct option *longopts, const char *const *subs);
/*
 * After getopt_long (with opterr = 0) returned '?': an invalid_args error
 * whose field is the option as given ("--bogus", "-x") and whose reason is
 * unknown_option, missing_argument or unexpected_argument.  The field
 * points to storage of this module, valid until the next call.
 */
void	sbx_cli_getopt_error(int argc, char *const argv[],
	    const char *optstring, const struct option *longopts,
	    struct sbx_error *);
/*
 * Optimal string alignment distance of a and b (Damerau-Levenshtein with
 * adjacent transpositions, as git's help.c suggests a command);
 * SIZE_MAX when either is longer than 64 bytes.
 */
size_t	sbx_cli_distance(const char *a, const char *b);
/*
 * The suggestion for an unknown word: the candidate nearest to it, when
 * at most two edits away or when the word (two bytes or more) starts it;
 * NULL when none is.  names is NULL-terminated.
 */
const char *sbx_cli_nearest(const char *word, const char *const *names);
/* OPT (n bytes) as an envelope field: printable ASCII, at most 67 bytes,
 * in storage of this module valid until the next call. */
const char	*sbx_cli_option_field(const char *opt, size_t n);
/* Parse a decimal number of seconds (e.g. "2", "0.5"); > 0, <= max. */
int	sbx_cli_parse_seconds(const char *, double max, double *);
/* Parse a byte count with optional K, M or G suffix (binary). */
int	sbx_cli_parse_bytes(const char *, unsigned long long *);
/*
 * Parse a size in mebibytes (--memory, --disk, --file-size): a plain
 * integer is MiB; a k, m, g or t after the digits (either case,
 * optionally followed by b or ib: 1g, 1G, 1gb, 1GiB) is that binary unit,
 * as docker's --memory reads it.  The size must come to a whole number of
 * MiB from 1 to max.  0, or -1 when malformed or out of range.
 */
int	sbx_cli_parse_mib(const char *, unsigned long long max,
	    unsigned long long *);
/* Parse a non-negative integer <= max. */
int	sbx_cli_parse_uint(const char *, unsigned long long max,
	    unsigned long long *);

#endif
