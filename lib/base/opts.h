/*
 * opts.h: one option table per program, the single source of its
 * getopt_long arguments (longopts and the short-option string), the
 * option lines of its --help, the lines of its hidden --complete-options
 * (what the shell completions offer), and the refusal of an option given
 * to a subcommand it does not go with.  The man page and the completions
 * are checked against the table by tests/integration/0010-docs.sh.
 *
 * Adopting it in a program (sbx-foo with subcommands `set` and `list`):
 *
 *	enum { S_MAIN = 1, S_SET = 2, S_LIST = 4, S_ALL = 7 };
 *	enum { OPT_HOME = 256, OPT_VERSION };
 *	static const struct sbx_opts_sub subs[] = {
 *		{ "set", S_SET, "@key" }, { "list", S_LIST, NULL },
 *	};
 *	static const struct sbx_opt rows[] = {
 *		{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
 *		    "agent name", S_SET | S_LIST, 0 },
 *		{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
 *		    "state root", S_ALL, 0 },
 *		...
 *	};
 *	static const struct sbx_opts table = { "sbx-foo", "sbx foo",
 *		rows, SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 21,
 *		0 };
 *
 * then, in main: `--complete-options [SUB...]` first (sbx_opts_complete),
 * sbx_opts_getopt() for the subcommand's (or the program's) getopt_long
 * arguments, map what getopt_long returns with sbx_opts_id(), record the
 * options seen (sbx_opts_seen) and, once the subcommand is known,
 * sbx_opts_check() refuses the ones that do not go with it (a usage
 * error, exit 64).  --help prints the usage, the program's prose and
 * sbx_opts_help().
 *
 * Rows: `id` is what the program's switch sees (the short letter when
 * the option has one everywhere, else a value >= 256); `subs` the bits of
 * the (sub)commands it goes with, bit S_MAIN (whatever its value: the
 * table's `main` bit) being the program without a subcommand; `letter`
 * may be limited to some of them (`letter_subs`, 0: everywhere), as
 * `sbx exec wait -t SECONDS` beside `sbx exec -t` (--tty).  A row without
 * help text is hidden: accepted, but neither in --help nor completed.
 * `values` says what completes the argument: "@agent", "@job",
 * "@image", "@dir", "@file", "@cwd" (a directory in the agent's home),
 * "@key" (a setting's key), "@text" (nothing to offer), or the choices
 * separated by '|' ("none|proxy|outbound"), or a mix ("@image|none").
 * `operands` (of a subcommand, or main_operands) says the same of the
 * first operand ("@job"; "@command": after `--`, a command to run).
 *
 * Where options may stand (one rule for every program, as git's
 * parse-options): anywhere before `--`, between and after the operands
 * (`sbx proxy check HOST --json`), except in the (sub)commands of
 * `in_order`, whose first operand starts the argv of a command to run
 * (`sbx exec`): there the options stop at it, so that the command's own
 * options stay its own.  After `--` nothing is an option (`sbx secret rm
 * -- -x` names `-x`).  The order is kept by sbx_cmd_getopt (cmd/), not
 * left to glibc's permutation, which POSIXLY_CORRECT turns off.
 *
 * lib/ never prints: everything is written into buffers; cmd/ prints.
 */
#ifndef SBX_OPTS_H
#define SBX_OPTS_H

#include <getopt.h>

#include "buf.h"
#include "error.h"

#define SBX_OPTS_MAX	64	/* rows per table */

enum sbx_opt_arg {
	SBX_OPT_NONE,		/* a flag */
	SBX_OPT_REQ,		/* --opt ARG, --opt=ARG, -o ARG, -oARG */
	SBX_OPT_OPT,		/* --opt[=ARG], -o[ARG] */
};

struct sbx_opt {
	int		 id;
	const char	*name;		/* long name without "--", or NULL */
	char		 letter;	/* short letter, or 0 */
	enum sbx_opt_arg arg;
	const char	*argname;	/* "DIR": help and man */
	const char	*values;	/* what completes the argument */
	const char	*help;		/* lines split by '\n'; NULL: hidden */
	unsigned	 subs;		/* the (sub)commands it goes with */
	unsigned	 letter_subs;	/* where the letter goes; 0: all */
};

/* A subcommand: its words ("ps", "image add"), its bit, and what
 * completes its first operand (as `values`), or NULL. */
struct sbx_opts_sub {
	const char	*name;
	unsigned	 bit;
	const char	*operands;
};

struct sbx_opts {
	const char		 *prog;		/* "sbx-exec" */
	const char		 *cmd;		/* "sbx exec", for messages */
	const struct sbx_opt	 *opt;
	size_t			  nopt;
	const struct sbx_opts_sub *sub;
	size_t			  nsub;
	unsigned		  main;		/* the program's bit, or 0 */
	const char		 *main_operands; /* as the subcommands' */
	int			  help_col;	/* column of the help text */
	unsigned		  in_order;	/* bits whose operands are a
						 * command: options stop at
						 * the first one */
};

/* The number of rows (or subcommands) of an array. */
#define SBX_OPTS_N(a)	(sizeof(a) / sizeof((a)[0]))

/* The rows most programs share, in the same words (sbx_cmd_opt in cmd/
 * knows them by their names): --home, --json, --help, --version. */
/* clang-format off */
#define SBX_OPT_ROW_HOME(id, subs)					\
	{ (id), "home", 0, SBX_OPT_REQ, "DIR", "@dir",			\
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"	\
	    "~/.local/share/sbx)", (subs), 0 }
#define SBX_OPT_ROW_JSON(subs)						\
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,			\
	    "print one JSON envelope (also SBX_JSON=1)", (subs), 0 }
#define SBX_OPT_ROW_HELP(subs)						\
	{ 'h', "help", 'h', SBX_OPT_NONE, NULL, NULL, "this help", (subs), 0 }
#define SBX_OPT_ROW_VERSION(id, subs)					\
	{ (id), "version", 0, SBX_OPT_NONE, NULL, NULL,			\
	    "print the version", (subs), 0 }
/* clang-format on */

/* getopt_long's arguments: every option of the table (one given where it
 * does not go is refused by sbx_opts_check, by name), the letters as they
 * are in one (sub)command. */
struct sbx_opts_getopt {
	struct option	 longopts[SBX_OPTS_MAX + 1];
	char		 optstring[3 * SBX_OPTS_MAX + 4];
	int		 letter_id[128];	/* letter -> row id */
	int		 permute;	/* options anywhere before `--` */
	int		 nops;		/* operands set aside so far */
};

/*
 * Fill g for the (sub)command bit (~0u: any of them).  The optstring
 * starts with '+' (options stop at the first operand) when bit is one of
 * the table's in_order, else with '-' (getopt_long returns each operand
 * as 1, in order; sbx_opts_operand sets it aside).  -1 when the table
 * breaks a rule (sbx_opts_valid).
 */
int	sbx_opts_getopt(const struct sbx_opts *, unsigned bit,
	    struct sbx_opts_getopt *);
/*
 * The loop's part of "options anywhere before `--`", for a g that
 * permutes.  sbx_opts_operand: argv[*optindp - 1], just returned by
 * getopt_long as an operand (1), set aside (moved to the front of argv,
 * whose words before *optindp getopt_long never reads again).
 * sbx_opts_operands_done: once getopt_long returned -1, the operands set
 * aside are moved to just before argv[*optindp] (the words after `--`,
 * if any) and *optindp is moved back over them, so that the caller finds
 * every operand, in order, at argv[optind..argc).
 * sbx_opts_is_operand: a word getopt_long would take for an option that
 * is an operand: a negative number (`set limits.cpus -1`; no sbx option
 * is a digit).
 */
void	sbx_opts_operand(struct sbx_opts_getopt *, char *argv[], int *optindp);
void	sbx_opts_operands_done(struct sbx_opts_getopt *, char *argv[],
	    int *optindp);
int	sbx_opts_is_operand(const char *);
/* The row id of what getopt_long returned (a letter is mapped; anything
 * else is returned as is). */
int	sbx_opts_id(const struct sbx_opts_getopt *, int ch);
/* The row of an id that goes with the (sub)command bit, else the first
 * row of that id, else NULL. */
const struct sbx_opt *
	sbx_opts_row(const struct sbx_opts *, int id, unsigned bit);

/*
 * The (sub)command that words names: the longest entry of the table's
 * subcommands whose words are the first words of argv (n of them); its bit
 * and in *used how many words it took.  0 when none matches.
 */
unsigned sbx_opts_sub_find(const struct sbx_opts *, int argc,
	    char *const argv[], int *used);
/* The name of the (sub)command bit: "ps", or "" for the program. */
const char *sbx_opts_sub_name(const struct sbx_opts *, unsigned bit);

/* The options seen on a command line, to be checked once the subcommand
 * is known. */
struct sbx_opts_seen {
	int	 id[SBX_OPTS_MAX];
	size_t	 n;
};
void	sbx_opts_seen(struct sbx_opts_seen *, int id);
/*
 * Each option seen must go with the (sub)command bit: else an
 * invalid_args error (field the option, in storage of this module valid
 * until the next call; reason not_for_subcommand) and -1.
 */
int	sbx_opts_check(const struct sbx_opts *, const struct sbx_opts_seen *,
	    unsigned bit, struct sbx_error *);

/*
 * The option lines of --help for the rows that go with any (sub)command
 * of mask, in table order: "  -a, --agent A   help" with the help at the
 * table's column (on the next line when the left part is too long), its
 * further lines indented to the column.
 */
int	sbx_opts_help(const struct sbx_opts *, unsigned mask,
	    struct sbx_buf *);

/*
 * The lines of --complete-options for the (sub)command bit: one option a
 * line (`--agent`, then `-a`), followed for an option with an argument by
 * a tab and its `values` ("@text" when it has none).  Hidden rows are
 * left out.
 */
int	sbx_opts_complete(const struct sbx_opts *, unsigned bit,
	    struct sbx_buf *);
/*
 * The subcommand words that may follow the words argv (n of them, none:
 * the first words), one a line, in table order, without repeats.
 */
int	sbx_opts_complete_subs(const struct sbx_opts *, int argc,
	    char *const argv[], struct sbx_buf *);
/* The line of --complete-operands for the (sub)command bit: its
 * operands' spec, or nothing. */
int	sbx_opts_complete_operands(const struct sbx_opts *, unsigned bit,
	    struct sbx_buf *);
/*
 * --complete-options [SUB...]: the bit to complete for (the
 * subcommand the words name; none: the program itself, or, when it needs
 * a subcommand, every subcommand's common options: returned as ~0u), or
 * 0 when the words name no subcommand.
 */
unsigned sbx_opts_complete_bit(const struct sbx_opts *, int argc,
	    char *const argv[]);

/*
 * Does the table keep the rules?  In each (sub)command, long names and
 * letters are unique; every row goes with some (sub)command of the table;
 * an id names one option (the same name and argument in every row), and
 * a name one id.
 * 0 yes, else -1 and e says which row.
 */
int	sbx_opts_valid(const struct sbx_opts *, struct sbx_error *);

#endif
