/* t-opts.c: one option table per program (opts.c). */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"
#include "tap.h"

enum { S_MAIN = 1, S_PS = 2, S_WAIT = 4, S_IMG_ADD = 8, S_IMG_RM = 16 };
enum { OPT_HOME = 256, OPT_TIMEOUT, OPT_FORCE, OPT_SHA };

static const struct sbx_opts_sub subs[] = {
	{ "ps", S_PS, NULL },
	{ "wait", S_WAIT, "@job" },
	{ "image add", S_IMG_ADD, "@file" },
	{ "image rm", S_IMG_RM, "@image" },
};

static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent", "agent name",
	    S_MAIN | S_PS | S_WAIT, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root\n(second line)", 31, 0 },
	{ OPT_TIMEOUT, "timeout", 't', SBX_OPT_REQ, "SECONDS", NULL, "how long",
	    S_MAIN | S_WAIT, S_WAIT },
	{ 't', "tty", 't', SBX_OPT_NONE, NULL, NULL, "a terminal", S_MAIN, 0 },
	{ 'c', NULL, 'c', SBX_OPT_REQ, "STRING", NULL, "a shell string", S_MAIN,
	    0 },
	{ OPT_FORCE, "force", 0, SBX_OPT_NONE, NULL, NULL, "really", S_IMG_RM,
	    0 },
	{ OPT_SHA, "sha256", 0, SBX_OPT_REQ, "HEX", NULL, "the digest",
	    S_IMG_ADD, 0 },
	{ 'n', "network", 'n', SBX_OPT_REQ, "MODE", "none|proxy", NULL, S_MAIN,
	    0 },
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL, "envelopes", 31, 0 },
};

static const struct sbx_opts T = { "sbx-t", "sbx t", rows, SBX_OPTS_N(rows),
	subs, SBX_OPTS_N(subs), S_MAIN, "@command", 20, S_MAIN };

/*
 * The loop of cmd/common.c's sbx_cmd_getopt, with the lib's part of it:
 * argv (NULL-terminated) parsed with the getopt of bit; the options seen,
 * as letters or "L" for a long one, in *opts, and the operands left at
 * argv[optind..], joined by '|', in *ops.
 */
static void
order(unsigned bit, char **argv, char *opts, char *ops)
{
	struct sbx_opts_getopt g;
	int		       argc = 0, ch, i;

	while (argv[argc] != NULL)
		argc++;
	*opts = *ops = '\0';
	if (sbx_opts_getopt(&T, bit, &g) == -1)
		return;
	optind = 0;
	opterr = 0;
	for (;;) {
		if (g.permute && optind > 0 && optind < argc &&
		    sbx_opts_is_operand(argv[optind])) {
			optind++;
			sbx_opts_operand(&g, argv, &optind);
			continue;
		}
		ch = getopt_long(argc, argv, g.optstring, g.longopts, NULL);
		if (ch == 1 && g.permute) {
			sbx_opts_operand(&g, argv, &optind);
			continue;
		}
		if (ch == -1)
			break;
		ch = sbx_opts_id(&g, ch);
		strcat(opts, ch < 128 ? (char[]){ (char)ch, 0 } : "L");
	}
	if (g.permute)
		sbx_opts_operands_done(&g, argv, &optind);
	for (i = optind; i < argc; i++) {
		strcat(ops, argv[i]);
		if (i + 1 < argc)
			strcat(ops, "|");
	}
}

/* Parse argv (NULL-terminated) with the getopt of bit; the ids seen. */
static int
parse(unsigned bit, struct sbx_opts_seen *seen, char **argv)
{
	struct sbx_opts_getopt g;
	int		       argc = 0, ch;

	while (argv[argc] != NULL)
		argc++;
	memset(seen, 0, sizeof(*seen));
	if (sbx_opts_getopt(&T, bit, &g) == -1)
		return -1;
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.optstring, g.longopts, NULL)) !=
	    -1) {
		if (ch == '?')
			return -1;
		sbx_opts_seen(seen, sbx_opts_id(&g, ch));
	}
	return 0;
}

static int
has_id(const struct sbx_opts_seen *s, int id)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return 1;
	return 0;
}

int
main(void)
{
	struct sbx_opts_getopt g;
	struct sbx_opts_seen   seen;
	struct sbx_error       e;
	struct sbx_buf	       b = SBX_BUF_INIT;
	struct sbx_opts	       bad;
	struct sbx_opt	       badrows[2];
	char		      *w[3];
	int		       used;

	ok(sbx_opts_valid(&T, &e) == 0, "the test table keeps the rules");

	/* getopt_long's arguments. */
	ok(sbx_opts_getopt(&T, S_MAIN, &g) == 0, "getopt of the program");
	is_str(g.optstring, "+a:tc:n:j", "optstring: the program's letters");
	ok(sbx_opts_id(&g, 't') == 't', "-t is --tty in the program");
	ok(sbx_opts_getopt(&T, S_WAIT, &g) == 0, "getopt of wait");
	is_str(g.optstring, "-a:t:jc:n:",
	    "optstring: wait's -t first, "
	    "then every shared letter");
	ok(sbx_opts_id(&g, 't') == OPT_TIMEOUT, "-t is --timeout in wait");
	ok(g.longopts[0].val == 'a' &&
		strcmp(g.longopts[0].name, "agent") == 0 &&
		g.longopts[0].has_arg == required_argument,
	    "longopts[0]");
	{
		int i, nlong = 0;

		for (i = 0; g.longopts[i].name != NULL; i++)
			nlong++;
		ok(nlong == 8, "every named option, once (%d)", nlong);
	}

	/* Parsing, and options given where they do not go. */
	{
		char *a1[] = { "t", "--agent", "x", "-t", "--json", NULL };
		char *a2[] = { "t", "-t", "5", NULL };
		char *a3[] = { "t", "--force", NULL };

		ok(parse(S_MAIN, &seen, a1) == 0 && has_id(&seen, 'a') &&
			has_id(&seen, 't') && has_id(&seen, 'j'),
		    "a run's options");
		ok(sbx_opts_check(&T, &seen, S_MAIN, &e) == 0,
		    "they go with the program");
		ok(sbx_opts_check(&T, &seen, S_PS, &e) == -1 &&
			strcmp(e.field, "--tty") == 0 &&
			strcmp(e.reason, "not_for_subcommand") == 0 &&
			strcmp(e.kind, SBX_K_INVALID_ARGS) == 0,
		    "--tty does not go with ps (field --tty)");
		is_str(e.message, "option `--tty` does not go with sbx t ps",
		    "the message names the subcommand");
		is_str(e.hint, "--tty goes with: sbx t", "the hint says where");
		ok(parse(S_WAIT, &seen, a2) == 0 &&
			has_id(&seen, OPT_TIMEOUT) && !has_id(&seen, 't'),
		    "wait -t 5 is --timeout 5");
		ok(parse(S_PS, &seen, a3) == 0 &&
			sbx_opts_check(&T, &seen, S_PS, &e) == -1 &&
			strcmp(e.field, "--force") == 0,
		    "--force known, refused "
		    "in ps");
		is_str(e.hint, "--force goes with: sbx t image rm",
		    "a two-word subcommand in the hint");
	}

	/* Subcommands. */
	w[0] = "image", w[1] = "rm", w[2] = "x";
	ok(sbx_opts_sub_find(&T, 3, w, &used) == S_IMG_RM && used == 2,
	    "image rm found, two words");
	ok(sbx_opts_sub_find(&T, 1, w, &used) == 0 && used == 0,
	    "image alone is no subcommand");
	w[0] = "psx";
	ok(sbx_opts_sub_find(&T, 1, w, NULL) == 0, "no prefix matching");
	is_str(sbx_opts_sub_name(&T, S_WAIT), "wait", "the name of a bit");
	is_str(sbx_opts_sub_name(&T, S_MAIN), "", "the program's is empty");

	/* --help. */
	ok(sbx_opts_help(&T, S_MAIN | S_PS | S_WAIT | S_IMG_ADD | S_IMG_RM,
	       &b) == 0,
	    "help");
	is_str(b.p,
	    "  -a, --agent A     agent name\n"
	    "      --home DIR    state root\n"
	    "                    (second line)\n"
	    "      --timeout SECONDS\n"
	    "                    how long\n"
	    "  -t, --tty         a terminal\n"
	    "  -c STRING         a shell string\n"
	    "      --force       really\n"
	    "      --sha256 HEX  the digest\n"
	    "  -j, --json        envelopes\n",
	    "help lines: columns, long left parts, hidden rows");
	sbx_buf_reset(&b);
	ok(sbx_opts_help(&T, S_PS, &b) == 0, "help of ps");
	is_str(b.p,
	    "  -a, --agent A     agent name\n"
	    "      --home DIR    state root\n"
	    "                    (second line)\n"
	    "  -j, --json        envelopes\n",
	    "only the rows of ps");

	/* --complete-options, -operands, -subcommands. */
	sbx_buf_reset(&b);
	ok(sbx_opts_complete(&T, S_WAIT, &b) == 0, "complete wait");
	is_str(b.p,
	    "--agent\t@agent\n-a\t@agent\n--home\t@dir\n"
	    "--timeout\t@text\n-t\t@text\n--json\n-j\n",
	    "wait: options, letters, values");
	sbx_buf_reset(&b);
	ok(sbx_opts_complete(&T, S_MAIN, &b) == 0 && b.p != NULL &&
		strstr(b.p, "-t\n") != NULL &&
		strstr(b.p, "-c\t@text\n") != NULL &&
		strstr(b.p, "--network") == NULL,
	    "the program: -t a flag, -c, no hidden --network");
	sbx_buf_reset(&b);
	ok(sbx_opts_complete(&T, ~0u, &b) == 0, "complete: common options");
	is_str(b.p, "--home\t@dir\n--json\n-j\n", "what every one takes");
	sbx_buf_reset(&b);
	ok(sbx_opts_complete_subs(&T, 0, w, &b) == 0, "subcommands");
	is_str(b.p, "ps\nwait\nimage\n", "first words, once");
	sbx_buf_reset(&b);
	w[0] = "image";
	ok(sbx_opts_complete_subs(&T, 1, w, &b) == 0, "image subcommands");
	is_str(b.p, "add\nrm\n", "the words after image");
	sbx_buf_reset(&b);
	ok(sbx_opts_complete_operands(&T, S_IMG_RM, &b) == 0, "operands");
	is_str(b.p, "@image\n", "image rm takes an image");
	sbx_buf_reset(&b);
	ok(sbx_opts_complete_operands(&T, S_MAIN, &b) == 0 && b.p != NULL &&
		strcmp(b.p, "@command\n") == 0,
	    "the program takes a command");
	w[0] = "image", w[1] = "add";
	ok(sbx_opts_complete_bit(&T, 2, w) == S_IMG_ADD, "bit of image add");
	ok(sbx_opts_complete_bit(&T, 1, w) == 0, "no bit for image");
	ok(sbx_opts_complete_bit(&T, 0, w) == S_MAIN, "no words: the program");
	sbx_buf_release(&b);

	/* Broken tables are refused. */
	bad = T;
	memcpy(badrows, rows, sizeof(badrows));
	badrows[1] = rows[0];
	badrows[1].id = 300;
	badrows[1].letter = 0;
	bad.opt = badrows;
	bad.nopt = 2;
	ok(sbx_opts_valid(&bad, &e) == -1 &&
		strcmp(e.reason, "name_reused") == 0,
	    "a name with two ids");
	badrows[1] = rows[3];
	badrows[1].subs = S_MAIN | S_PS;
	badrows[0] = rows[2];
	badrows[0].letter_subs = 0;
	ok(sbx_opts_valid(&bad, &e) == -1, "-t twice in the program");
	badrows[0] = rows[0];
	badrows[1] = rows[5];
	badrows[1].subs = 64;
	ok(sbx_opts_valid(&bad, &e) == -1 &&
		strcmp(e.reason, "bad_subcommands") == 0,
	    "an unknown subcommand bit");
	ok(sbx_opts_getopt(&bad, S_MAIN, &g) == -1,
	    "no getopt from a broken table");

	/* Where options may stand (issue 28 item 7). */
	{
		char	 o[64], p[256];
		char	*a1[] = { "t", "wait", "JOB", "-j", "--agent", "x",
			"OTHER", NULL };
		char	*a2[] = { "t", "-j", "--", "-x", "--agent", NULL };
		char	*a3[] = { "t", "A", "--", "B", "-j", NULL };
		char	*a4[] = { "t", "-j", "ls", "-la", "--agent", NULL };
		char	*a5[] = { "t", "-j", "--", "ls", "-j", NULL };
		char	*a6[] = { "t", "set", "k", "-1", "-j", "-.5", NULL };
		char	*a7[] = { "t", "A", "B", "C", NULL };

		order(S_WAIT, a1, o, p);
		ok(strcmp(o, "ja") == 0 && strcmp(p, "wait|JOB|OTHER") == 0,
		    "permuted: options between and after operands (%s; %s)",
		    o, p);
		order(S_PS, a2, o, p);
		ok(strcmp(o, "j") == 0 && strcmp(p, "-x|--agent") == 0,
		    "after --: operands, whatever they look like (%s)", p);
		order(~0u, a3, o, p);
		ok(strcmp(o, "") == 0 && strcmp(p, "A|B|-j") == 0,
		    "operands before and after -- keep their order (%s)", p);
		order(S_MAIN, a4, o, p);
		ok(strcmp(o, "j") == 0 && strcmp(p, "ls|-la|--agent") == 0,
		    "in order: the first operand starts a command (%s; %s)",
		    o, p);
		order(S_MAIN, a5, o, p);
		ok(strcmp(o, "j") == 0 && strcmp(p, "ls|-j") == 0,
		    "in order: after -- nothing is an option (%s)", p);
		order(S_PS, a6, o, p);
		ok(strcmp(o, "j") == 0 && strcmp(p, "set|k|-1|-.5") == 0,
		    "a negative number is an operand (%s; %s)", o, p);
		order(S_PS, a7, o, p);
		ok(strcmp(o, "") == 0 && strcmp(p, "A|B|C") == 0,
		    "operands only: as given (%s)", p);
		setenv("POSIXLY_CORRECT", "1", 1);
		char	*a8[] = { "t", "check", "HOST", "-j", NULL };
		order(S_PS, a8, o, p);
		unsetenv("POSIXLY_CORRECT");
		ok(strcmp(o, "j") == 0 && strcmp(p, "check|HOST") == 0,
		    "POSIXLY_CORRECT changes nothing (%s; %s)", o, p);
	}
	return done_testing();
}
