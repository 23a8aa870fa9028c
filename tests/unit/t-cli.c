/* t-cli.c: cli.c, the --json scan before getopt and the usage error
 * made from what getopt_long refused (issue 11 item 10). */
#include <getopt.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "tap.h"

enum { OPT_HOME = 256 };

static const struct option lo[] = {
	{ "agent",	required_argument,	NULL, 'a' },
	{ "home",	required_argument,	NULL, OPT_HOME },
	{ "json",	no_argument,		NULL, 'j' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ NULL, 0, NULL, 0 }
};
static const char *const subs[] = { "ps", NULL };

/* wants(PLUS, words...): the scan over argv "prog words...". */
static int
wants(const char *optstring, const char *const *s, ...)
{
	char		*argv[16];
	int		 argc = 0;
	const char	*w;
	va_list		 ap;

	argv[argc++] = "prog";
	va_start(ap, s);
	while ((w = va_arg(ap, const char *)) != NULL && argc < 15)
		argv[argc++] = (char *)w;
	va_end(ap);
	argv[argc] = NULL;
	return sbx_cli_wants_json(argc, argv, optstring, lo, s);
}

/* The error for argv after getopt_long stopped on it. */
static void
refused(const char *want_field, const char *want_reason, ...)
{
	char			*argv[16];
	int			 argc = 0, ch;
	const char		*w;
	va_list			 ap;
	struct sbx_error	 e;

	argv[argc++] = "prog";
	va_start(ap, want_reason);
	while ((w = va_arg(ap, const char *)) != NULL && argc < 15)
		argv[argc++] = (char *)w;
	va_end(ap);
	argv[argc] = NULL;
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+a:jq", lo, NULL)) != -1 &&
	    ch != '?')
		;
	memset(&e, 0, sizeof(e));
	sbx_cli_getopt_error(argc, argv, "+a:jq", lo, &e);
	is_str(e.kind, SBX_K_INVALID_ARGS, "kind invalid_args");
	is_str(e.field, want_field, want_field);
	is_str(e.reason, want_reason, want_reason);
}

int
main(void)
{
	unsetenv("SBX_JSON");
	ok(wants("+a:jq", subs, "--json", "--bogus", NULL), "--json first");
	ok(wants("+a:jq", subs, "--bogus", "--json", NULL), "--json last");
	ok(wants("+a:jq", subs, "-qj", NULL), "-j in a cluster");
	ok(wants("+a:jq", subs, "--js", NULL), "a unique prefix, as getopt");
	ok(!wants("+a:jq", subs, "--", "--json", NULL), "not after --");
	ok(!wants("+a:jq", subs, "--agent", "--json", NULL),
	    "not as an option's argument");
	ok(!wants("+a:jq", subs, "-a", "--json", NULL),
	    "not as a short option's argument");
	ok(!wants("+a:jq", subs, "-aj", NULL), "not attached to -a");
	ok(!wants("+a:jq", subs, "cmd", "--json", NULL),
	    "'+': not after an operand");
	ok(wants("+a:jq", subs, "ps", "x", "--json", NULL),
	    "but after a subcommand");
	ok(wants("a:jq", NULL, "check", "x", "--json", NULL),
	    "no '+': operands never stop it");
	ok(!wants("+a:jq", subs, "--json=1", NULL), "--json=1 is not --json");
	setenv("SBX_JSON", "1", 1);
	ok(wants("+a:jq", subs, NULL), "SBX_JSON=1");
	unsetenv("SBX_JSON");
	refused("--bogus", "unknown_option", "--bogus", NULL);
	refused("-x", "unknown_option", "--json", "-qx", NULL);
	refused("--agent", "missing_argument", "--agent", NULL);
	refused("-a", "missing_argument", "-q", "-a", NULL);
	refused("--json", "unexpected_argument", "--json=1", NULL);
	{
		const char *f = sbx_cli_option_field("--\x1b[31m\xff", 8);

		is_str(f, "--?[31m?", "a field is printable ASCII");
	}

	/* "did you mean" (issue 28 item 9). */
	{
		static const char *const names[] = { "agent", "home", "json",
			"quiet", NULL };
		struct sbx_error e;
		char *av[] = { "p", "--agnet", "x", NULL };
		int c;

		is_str(sbx_cli_nearest("agnet", names), "agent",
		    "a transposition is near");
		is_str(sbx_cli_nearest("hom", names), "home",
		    "the start of a name is near");
		ok(sbx_cli_nearest("zzzzzz", names) == NULL,
		    "nothing near: no guess");
		ok(sbx_cli_distance("exce", "exec") == 1 &&
		    sbx_cli_distance("", "abc") == 3, "the distance");
		optind = 0;
		opterr = 0;
		while ((c = getopt_long(3, av, "-a:jq", lo, NULL)) != '?' &&
		    c != -1)
			;
		memset(&e, 0, sizeof(e));
		sbx_cli_getopt_error(3, av, "-a:jq", lo, &e);
		ok(strcmp(e.reason, "unknown_option") == 0 &&
		    strcmp(e.hint, "did you mean `--agent`?") == 0,
		    "an unknown long option hints the nearest (%s)", e.hint);
	}

	/* Sizes in MiB with docker's units (issue 28 item 9). */
	{
		static const struct { const char *s; unsigned long long v; }
		    good[] = {
			{ "512", 512 }, { "512m", 512 }, { "512M", 512 },
			{ "1g", 1024 }, { "1G", 1024 }, { "1gb", 1024 },
			{ "1GiB", 1024 }, { "2048k", 2 }, { "1t", 1048576 },
			{ "1mb", 1 }, { "1MiB", 1 },
		};
		static const char *const bad[] = { "", "0", "0g", "1x",
			"1.5g", "-1", "1 g", "g", "1gg", "1bi", "1kb", "1536k",
			"1025t", "99999999999999999999", "1ib", "1i" };
		unsigned long long v;
		size_t i;
		int all = 1;

		for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
			if (sbx_cli_parse_mib(good[i].s, 1 << 30, &v) != 0 ||
			    v != good[i].v) {
				diag("%s: not %llu", good[i].s, good[i].v);
				all = 0;
			}
		ok(all, "sizes: MiB, k, m, g, t, any case, b or ib");
		for (all = 1, i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (sbx_cli_parse_mib(bad[i], 1 << 30, &v) != -1) {
				diag("%s: accepted", bad[i]);
				all = 0;
			}
		ok(all, "sizes: malformed, zero, not whole MiB, too big");
		ok(sbx_cli_parse_mib("1024g", 1 << 20, &v) == 0 &&
		    v == 1 << 20, "the max itself");
	}
	return done_testing();
}
