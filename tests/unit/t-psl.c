/* t-psl: the Public Suffix List reader (lib/net/psl.c): parsing, the
 * punycode of Unicode rules, the wildcard and exception rules, and the
 * system's list as Debian ships it. */
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "psl.h"

static const char *
puny(const char *s)
{
	static char	 out[128];

	if (sbx_psl_punycode(s, strlen(s), out, sizeof(out)) == -1)
		return "(refused)";
	return out;
}

static void
test_punycode(void)
{
	/* RFC 3492 and IDNA examples. */
	is_str(puny("b\303\274cher"), "xn--bcher-kva", "bücher");
	is_str(puny("m\303\274nchen"), "xn--mnchen-3ya", "münchen");
	is_str(puny("\344\270\255\345\233\275"), "xn--fiqs8s", "中国");
	is_str(puny("\340\244\255\340\244\276\340\244\260\340\244\244"),
	    "xn--h2brj9c", "भारत");
	is_str(puny("\xff"), "(refused)", "invalid UTF-8 refused");
	is_str(puny("\xc3"), "(refused)", "truncated UTF-8 refused");
	is_str(puny("\xc0\x80"), "(refused)", "overlong UTF-8 refused");
	is_str(puny("\xed\xa0\x80"), "(refused)", "surrogate refused");
	is_str(puny(""), "(refused)", "empty refused");
}

static void
test_parse(void)
{
	static const char text[] =
	    "// header\n"
	    "private.example\n"
	    "// ===BEGIN ICANN DOMAINS===\n"
	    "com\n"
	    "CO.UK\n"
	    "\n"
	    "// a comment\n"
	    "*.ck\r\n"
	    "!www.ck\n"
	    "\344\270\255\345\233\275\n"
	    "\345\205\254\345\217\270.\344\270\255\345\233\275\n"
	    "bad_rule.example\n"
	    "a..b\n"
	    "trailing.example. with words\n"
	    "// ===END ICANN DOMAINS===\n"
	    "// ===BEGIN PRIVATE DOMAINS===\n"
	    "github.io\n"
	    "// ===END PRIVATE DOMAINS===\n";
	struct sbx_psl	 l;
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	ok(sbx_psl_parse(&l, text, sizeof(text) - 1, &e) == 0, "parse");
	ok(l.n == 6, "six ICANN rules kept (%zu)", l.n);
	ok(sbx_psl_is_suffix(&l, "com"), "com");
	ok(sbx_psl_is_suffix(&l, "co.uk"), "co.uk (lowercased rule)");
	ok(!sbx_psl_is_suffix(&l, "example.co.uk"), "example.co.uk is not");
	ok(sbx_psl_is_suffix(&l, "anything.ck"), "*.ck: anything.ck");
	ok(!sbx_psl_is_suffix(&l, "www.ck"), "!www.ck: www.ck is not");
	ok(!sbx_psl_is_suffix(&l, "a.b.ck"), "*.ck is one label deep");
	ok(sbx_psl_is_suffix(&l, "xn--55qx5d.xn--fiqs8s"),
	    "Unicode rule as xn--");
	ok(!sbx_psl_is_suffix(&l, "github.io"), "private section not read");
	ok(!sbx_psl_is_suffix(&l, "private.example"), "before the section");
	ok(!sbx_psl_is_suffix(&l, "bad_rule.example"), "bad rule skipped");
	ok(sbx_psl_is_suffix(&l, "uk"), "implicit *: a TLD");
	ok(!sbx_psl_is_suffix(&l, ""), "empty is not");
	sbx_psl_free(&l);

	/* Without section markers every rule counts. */
	ok(sbx_psl_parse(&l, "a.test\nb.test", 13, &e) == 0 && l.n == 2 &&
	    sbx_psl_is_suffix(&l, "b.test"), "no markers, no final newline");
	sbx_psl_free(&l);
	ok(sbx_psl_parse(&l, "", 0, &e) == 0 && l.n == 0, "empty text");
	sbx_psl_free(&l);
}

static void
test_system(void)
{
	const struct sbx_psl	*l;
	struct sbx_error	 e;

	memset(&e, 0, sizeof(e));
	ok(sbx_psl_system("/nonexistent/psl.dat", &e) == NULL &&
	    e.reason != NULL && strcmp(e.reason, "psl_missing") == 0,
	    "a missing list: psl_missing");
	if (access(SBX_PSL_PATH, R_OK) != 0) {
		skip_n(6, "%s is missing (Debian package publicsuffix)",
		    SBX_PSL_PATH);
		return;
	}
	memset(&e, 0, sizeof(e));
	l = sbx_psl_system(NULL, &e);
	ok(l != NULL && l->n > 5000, "the system's list (%zu rules)",
	    l != NULL ? l->n : 0);
	if (l == NULL)
		return;
	ok(sbx_psl_is_suffix(l, "co.uk") && sbx_psl_is_suffix(l, "com.au"),
	    "co.uk, com.au");
	ok(!sbx_psl_is_suffix(l, "example.com") &&
	    !sbx_psl_is_suffix(l, "github.com"), "example.com, github.com");
	ok(!sbx_psl_is_suffix(l, "github.io") &&
	    !sbx_psl_is_suffix(l, "githubusercontent.com"),
	    "private section: github.io, githubusercontent.com are not");
	ok(sbx_psl_is_suffix(l, "foo.kawasaki.jp") &&
	    !sbx_psl_is_suffix(l, "city.kawasaki.jp"),
	    "*.kawasaki.jp with !city.kawasaki.jp");
	ok(sbx_psl_system("/nonexistent", &e) == l, "kept for the process");
}

int
main(void)
{
	test_punycode();
	test_parse();
	test_system();
	return done_testing();
}
