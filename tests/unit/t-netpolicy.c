/* t-netpolicy: the egress policy of sbx-proxy (HOSTILE-CASES NP-04, NP-06,
 * NP-16, NP-17).  Pure logic: addresses such as 8.8.8.8 are values here,
 * nothing is resolved or dialled. */
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "netpolicy.h"

#define NITEMS(a) (sizeof(a) / sizeof(*(a)))

/* sbx_np_host() on a C string: the reason, or "ok:" and the output. */
static const char *
host(const char *in)
{
	static char	 res[SBX_NP_HOST_MAX + 8];
	char		 out[SBX_NP_HOST_MAX + 1];
	const char	*r;

	r = sbx_np_host(in, strlen(in), out);
	if (r != NULL)
		return r;
	snprintf(res, sizeof(res), "ok:%s", out);
	return res;
}

/* What the proxy does with a raw host and a port: host, then decide. */
static const char *
verdict(const struct sbx_netpolicy *np, const char *in, unsigned port)
{
	char		 out[SBX_NP_HOST_MAX + 1];
	const char	*r;

	if ((r = sbx_np_host(in, strlen(in), out)) != NULL)
		return r;
	if ((r = sbx_np_decide(np, out, port)) != NULL)
		return r;
	return "allowed";
}

static const char *
cls(const char *addr)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)&ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)(void *)&ss;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	else
		return "(test bug: not an address)";
	return sbx_np_addr_class((struct sockaddr *)&ss);
}

/* An address string into ss; 0, or -1 when it is not one. */
static int
mkaddr(const char *addr, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)(void *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)(void *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	else
		return -1;
	return 0;
}

/* sbx_np_addr_check for host: "dial" or the reason. */
static const char *
check_host(const struct sbx_netpolicy *np, const char *host,
    const char *addr)
{
	struct sockaddr_storage	 ss;
	const char		*r;

	if (mkaddr(addr, &ss) == -1)
		return "(test bug: not an address)";
	r = sbx_np_addr_check(np, host, (struct sockaddr *)&ss, NULL, 0);
	return r != NULL ? r : "dial";
}

static const char *
check(const struct sbx_netpolicy *np, const char *addr)
{
	return check_host(np, "a.sbx.test", addr);
}

/* Load a JSON text into a fresh policy; returns sbx_np_load()'s result. */
static int
load(struct sbx_netpolicy *np, const char *text, struct sbx_error *e)
{
	json_error_t	 je;
	json_t		*j;
	int		 rc;

	sbx_np_init(np);
	/* NUL allowed in strings: the loader must cope with it. */
	if ((j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL,
	    &je)) == NULL) {
		printf("# test bug: bad JSON %s: %s\n", text, je.text);
		return -2;
	}
	rc = sbx_np_load(np, j, "config/agents/a.json", e);
	json_decref(j);
	return rc;
}

/* A load that must fail as config_invalid, with a message that starts with
 * the origin and contains `needle`. */
static void
load_bad(const char *text, const char *needle)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	int			 rc;

	memset(&e, 0, sizeof(e));
	rc = load(&np, text, &e);
	ok(rc == -1 && e.kind != NULL &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 && e.field != NULL &&
	    strcmp(e.field, "config") == 0 && e.reason != NULL &&
	    strcmp(e.reason, "config_invalid") == 0 &&
	    strncmp(e.message, "config/agents/a.json: ", 22) == 0 &&
	    strstr(e.message, needle) != NULL,
	    "config %s refused (%s)", text, needle);
	if (rc == -1)
		printf("#   message: %s\n", e.message);
	/* A refused file changes nothing. */
	ok(np.nallowed == 0 && np.ndenied == 0 && np.nresolve == 0 &&
	    np.nports == 2 && !np.allow_private, "  and leaves defaults");
	sbx_np_free(&np);
}

static void
test_np04(void)
{
	static const char *const cases[][2] = {
		{ "example.com", "allowed" },
		{ "EXAMPLE.COM", "allowed" },
		{ "example.com.", "allowed" },
		{ "a.wild.sbx.test", "allowed" },
		{ "A.Wild.Sbx.Test.", "allowed" },
		/* The written rule: "*." is every strict subdomain, at
		 * any depth, and never the apex. */
		{ "a.b.wild.sbx.test", "allowed" },
		{ "www.example.com", SBX_NP_NOT_ALLOWED },
		{ "evil-example.com", SBX_NP_NOT_ALLOWED },
		{ "example.com.evil.net", SBX_NP_NOT_ALLOWED },
		{ "notexample.com", SBX_NP_NOT_ALLOWED },
		{ "wild.sbx.test", SBX_NP_NOT_ALLOWED },
		{ "xwild.sbx.test", SBX_NP_NOT_ALLOWED },
		{ "sbx.test", SBX_NP_NOT_ALLOWED },
		{ "example.co", SBX_NP_NOT_ALLOWED },
		{ "example.comm", SBX_NP_NOT_ALLOWED },
		{ ".wild.sbx.test", SBX_NP_INVALID_HOST },
		{ "..wild.sbx.test", SBX_NP_INVALID_HOST },
		{ "*.wild.sbx.test", SBX_NP_INVALID_HOST },
		{ "a..wild.sbx.test", SBX_NP_INVALID_HOST },
		{ "example.com..", SBX_NP_INVALID_HOST },
	};
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	size_t			 i;

	ok(load(&np, "{\"allowed_domains\":[\"example.com\","
	    "\"*.wild.sbx.test\"]}", &e) == 0, "NP-04 allowlist loads");
	for (i = 0; i < NITEMS(cases); i++)
		is_str(verdict(&np, cases[i][0], 443), cases[i][1],
		    cases[i][0]);
	sbx_np_free(&np);
}

static void
test_np06(void)
{
	/* Every spelling of an address: refused before any lookup. */
	static const char *const literals[] = {
		"127.0.0.1", "127.1", "0x7f.1", "0177.0.0.1", "2130706433",
		"017700000001", "0x7f000001", "0", "0.0.0.0", "[::1]",
		"[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[::127.0.0.1]",
		"[64:ff9b::7f00:1]", "[2002:7f00:1::]", "169.254.169.254",
		"[fd00:ec2::254]", "[::ffff:a9fe:a9fe]", "100.100.100.200",
		/* More of the same. */
		"::1", "::ffff:127.0.0.1", "::", "[::]", "127.0.0.1.",
		"0X7F.0.0.1", "0x7F000001", "0x", "1.0x", "0x7f.0x0.0x0.0x1",
		"1.2.3.4.5", "99999999999", "example.123", "foo.0x1f",
		"[fe80::1%25eth0]", "fe80::1%eth0", "[FE80::1]",
		"[::ffff:0:127.0.0.1]", "10.0.0.1", "192.168.0.1",
		"4294967295", "4294967296",
	};
	/* Names: valid, and only refused because nothing allows them (and,
	 * would one be allowlisted, by the address check after the lookup). */
	static const char *const names[][2] = {
		{ "localhost", "localhost" },
		{ "LOCALHOST.", "localhost" },
		{ "foo.localhost", "foo.localhost" },
		{ "ip6-localhost", "ip6-localhost" },
		{ "metadata.google.internal", "metadata.google.internal" },
		{ "0x7g.example", "0x7g.example" },
		{ "example.0x7g", "example.0x7g" },
		{ "123.example.com", "123.example.com" },
		{ "1e5", "1e5" },
		{ "0a", "0a" },
	};
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	char			 want[300];
	size_t			 i;

	ok(load(&np, "{\"allowed_domains\":[\"example.com\","
	    "\"*.wild.sbx.test\"]}", &e) == 0, "NP-06 allowlist loads");
	for (i = 0; i < NITEMS(literals); i++)
		is_str(host(literals[i]), SBX_NP_IP_LITERAL, literals[i]);
	for (i = 0; i < NITEMS(names); i++) {
		snprintf(want, sizeof(want), "ok:%s", names[i][1]);
		is_str(host(names[i][0]), want, names[i][0]);
		is_str(verdict(&np, names[i][0], 443), SBX_NP_NOT_ALLOWED,
		    "  not allowlisted");
	}
	sbx_np_free(&np);
}

static void
test_host(void)
{
	static const char *const good[][2] = {
		{ "example.com", "example.com" },
		{ "EXAMPLE.COM", "example.com" },
		{ "ExAmPlE.CoM.", "example.com" },
		{ "a", "a" },
		{ "a-b.c-d.com", "a-b.c-d.com" },
		{ "a--b.com", "a--b.com" },
		{ "1.example.com", "1.example.com" },
		{ "xn--bcher-kva.sbx.test", "xn--bcher-kva.sbx.test" },
		{ "XN--BCHER-KVA.SBX.TEST", "xn--bcher-kva.sbx.test" },
	};
	static const char *const bad[] = {
		"", ".", "..", ".example.com", "example..com", "-a.com",
		"a-.com", "a.-b.com", "a.b-", "a_b.com", "_dmarc.example.com",
		"*", "*.a.com", "a.*.com", "a%2ecom", "a%00.com", "a@b.com",
		"user@example.com", "a/b", "example.com/", "a\\b", "a b.com",
		" example.com", "example.com ", "a\tb.com", "a\r\nb.com",
		"a\x7f.com", "a\x01.com", "example.com:443", "[::1]:443",
		"[::1", "::1]", "[]", "[::g]", "[[::1]]", "[fe80::1%]",
		"[fe80::1%a b]", "[127.0.0.1]", "[example.com]",
		"::ffff:0177.0.0.1",
		"a:b", "example.com#", "example.com?", "a,b.com", "a;b.com",
		"a+b.com", "a=b.com", "a~b.com", "a!b.com", "a'b.com",
		"a\"b.com",
		/* NP-17: non-ASCII must arrive as xn--. */
		"b\303\274cher.sbx.test",
		"ex\xd0\xb0mple.com",		/* Cyrillic a */
		"ex\xe2\x80\x8b" "ample.com",	/* zero-width space */
		"\xef\xbd\x85\xef\xbd\x98\xef\xbd\x81\xef\xbd\x8d\xef\xbd\x90"
		"\xef\xbd\x8c\xef\xbd\x85.com",	/* fullwidth "example" */
		"example\xef\xbc\x8e" "com",	/* fullwidth full stop */
		"\xff.com",
	};
	char		 out[SBX_NP_HOST_MAX + 1], name[400], want[400];
	const char	*r;
	size_t		 i;

	for (i = 0; i < NITEMS(good); i++) {
		snprintf(want, sizeof(want), "ok:%s", good[i][1]);
		is_str(host(good[i][0]), want, good[i][0]);
	}
	for (i = 0; i < NITEMS(bad); i++) {
		r = host(bad[i]);
		/* "[::g]" and such: malformed IPv6 is invalid, not a name. */
		ok(strcmp(r, SBX_NP_INVALID_HOST) == 0,
		    "invalid host #%zu (%s)", i, r);
	}

	/* NUL: len counts bytes, so nothing hides behind a C string. */
	r = sbx_np_host("example.com\0.evil.net", 21, out);
	is_str(r, SBX_NP_INVALID_HOST, "embedded NUL");
	is_str(out, "", "  out cleared");
	is_str(sbx_np_host("a.com\0", 6, out), SBX_NP_INVALID_HOST,
	    "trailing NUL");
	is_str(sbx_np_host("[::1\0]", 6, out), SBX_NP_INVALID_HOST,
	    "NUL in an IPv6 literal");
	is_str(sbx_np_host("fe80::1%a\0b", 11, out), SBX_NP_INVALID_HOST,
	    "NUL in a zone");
	is_str(sbx_np_host("", 0, out), SBX_NP_INVALID_HOST, "len 0");
	is_str(sbx_np_host(NULL, 0, out), SBX_NP_INVALID_HOST, "NULL");
	ok(sbx_np_host("example.com.evil", 11, out) == NULL &&
	    strcmp(out, "example.com") == 0, "len bounds the input");

	/* Lengths: labels 1..63, names up to 253 (254 with one dot). */
	memset(name, 'a', 63);
	strcpy(name + 63, ".com");
	ok(sbx_np_host(name, strlen(name), out) == NULL, "label of 63");
	memset(name, 'a', 64);
	strcpy(name + 64, ".com");
	is_str(host(name), SBX_NP_INVALID_HOST, "label of 64");
	name[0] = 'a';
	name[1] = '.';
	memset(name + 2, 'b', 64);
	name[66] = '\0';
	is_str(host(name), SBX_NP_INVALID_HOST, "last label of 64");
	/* 63 + 1 + 63 + 1 + 63 + 1 + 61 = 253 */
	memset(name, 'a', 253);
	name[63] = name[127] = name[191] = '.';
	name[253] = '\0';
	r = sbx_np_host(name, 253, out);
	ok(r == NULL && strlen(out) == 253, "name of 253");
	name[253] = '.';
	name[254] = '\0';
	r = sbx_np_host(name, 254, out);
	ok(r == NULL && strlen(out) == 253, "name of 253 with a trailing dot");
	name[253] = 'a';
	is_str(sbx_np_host(name, 254, out), SBX_NP_INVALID_HOST,
	    "name of 254");
	name[254] = '.';
	name[255] = '\0';
	is_str(sbx_np_host(name, 255, out), SBX_NP_INVALID_HOST,
	    "name of 254 with a trailing dot");
	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	is_str(host(name), SBX_NP_INVALID_HOST, "one label of 399");
}

static void
test_port(void)
{
	static const struct {
		const char	*s;
		unsigned	 want;
	} good[] = { { "1", 1 }, { "22", 22 }, { "25", 25 }, { "80", 80 },
	    { "443", 443 }, { "8080", 8080 }, { "65535", 65535 } };
	static const char *const bad[] = { "0", "00", "65536", "99999",
	    "100000", "4294967297", "-1", "443x", "x443", "0443", "+443",
	    "", " 443", "443 ", "4 43", "0x1bb", "44.3", "\xd9\xa4" };
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	unsigned		 p;
	size_t			 i;

	for (i = 0; i < NITEMS(good); i++) {
		p = 0;
		ok(sbx_np_port(good[i].s, strlen(good[i].s), &p) == 0 &&
		    p == good[i].want, "port '%s'", good[i].s);
	}
	for (i = 0; i < NITEMS(bad); i++) {
		p = 7;
		ok(sbx_np_port(bad[i], strlen(bad[i]), &p) == -1 && p == 7,
		    "port #%zu '%s' invalid", i, bad[i]);
	}
	ok(sbx_np_port("443\0", 4, &p) == -1, "port with a NUL");
	ok(sbx_np_port("4430", 3, &p) == 0 && p == 443, "len bounds a port");
	ok(sbx_np_port(NULL, 0, &p) == -1, "NULL port");

	/* NP-16: valid but not allowed by default (80 and 443). */
	ok(load(&np, "{\"allowed_domains\":[\"example.com\"]}", &e) == 0,
	    "NP-16 allowlist loads");
	is_str(verdict(&np, "example.com", 22), SBX_NP_PORT, "port 22");
	is_str(verdict(&np, "example.com", 25), SBX_NP_PORT, "port 25");
	is_str(verdict(&np, "example.com", 8443), SBX_NP_PORT, "port 8443");
	is_str(verdict(&np, "example.com", 0), SBX_NP_PORT, "port 0");
	is_str(verdict(&np, "example.com", 80), "allowed", "port 80");
	is_str(verdict(&np, "example.com", 443), "allowed", "port 443");
	sbx_np_free(&np);

	/* allowed_ports replaces the defaults; duplicates are harmless. */
	ok(load(&np, "{\"allowed_domains\":[\"example.com\"],"
	    "\"allowed_ports\":[8443,8443,22]}", &e) == 0, "allowed_ports");
	is_int(np.nports, 3, "  three ports");
	is_str(verdict(&np, "example.com", 443), SBX_NP_PORT,
	    "  443 no longer allowed");
	is_str(verdict(&np, "example.com", 8443), "allowed", "  8443");
	is_str(verdict(&np, "example.com", 22), "allowed", "  22");
	sbx_np_free(&np);
	ok(load(&np, "{\"allowed_domains\":[\"example.com\"],"
	    "\"allowed_ports\":[]}", &e) == 0 && np.nports == 0,
	    "an empty allowed_ports list loads");
	is_str(verdict(&np, "example.com", 443), SBX_NP_PORT,
	    "  and allows no port");
	sbx_np_free(&np);
}

static void
test_match(void)
{
	static const struct {
		const char	*entry, *host;
		int		 want;
	} cases[] = {
		{ "example.com", "example.com", 1 },
		{ "example.com", "www.example.com", 0 },
		{ "example.com", "example.co", 0 },
		{ "example.com", "example.comm", 0 },
		{ "example.com", "xexample.com", 0 },
		{ "*.example.com", "a.example.com", 1 },
		{ "*.example.com", "a.b.c.example.com", 1 },
		{ "*.example.com", "example.com", 0 },
		{ "*.example.com", "evil-example.com", 0 },
		{ "*.example.com", "xexample.com", 0 },
		{ "*.example.com", "example.com.evil.net", 0 },
		{ "*.example.com", "a.example.com.evil.net", 0 },
		{ "*.example.com", ".example.com", 0 },
		{ "*.example.com", "com", 0 },
		{ "*.example.com", "", 0 },
		{ "*.example.com", "*.example.com", 0 },
		{ "*.example.com", "*", 0 },
		/* Both sides are normally lowercase already; a slip by a
		 * caller must not turn a denial into a miss. */
		{ "*.example.com", "A.EXAMPLE.COM", 1 },
		{ "example.com", "Example.Com", 1 },
	};
	size_t	 i;

	for (i = 0; i < NITEMS(cases); i++)
		is_int(sbx_np_match(cases[i].entry, cases[i].host),
		    cases[i].want, cases[i].host);
	is_int(sbx_np_match(NULL, "a.com"), 0, "NULL entry");
	is_int(sbx_np_match("a.com", NULL), 0, "NULL host");
}

static void
test_decide(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;

	/* Empty allowlist: nothing. */
	sbx_np_init(&np);
	is_int(np.nports, 2, "init: two default ports");
	ok(np.nports == 2 && np.ports[0] == 80 && np.ports[1] == 443,
	    "init: 80 and 443");
	ok(!np.allow_private && np.nallowed == 0 && np.ndenied == 0 &&
	    np.nresolve == 0, "init: strict");
	is_str(verdict(&np, "example.com", 443), SBX_NP_NOT_ALLOWED,
	    "empty allowlist denies");
	is_str(sbx_np_decide(NULL, "example.com", 443), SBX_NP_NOT_ALLOWED,
	    "NULL policy denies");
	is_str(sbx_np_decide(&np, NULL, 443), SBX_NP_NOT_ALLOWED,
	    "NULL host denies");
	ok(sbx_np_load(&np, NULL, "x", &e) == 0 && np.nallowed == 0,
	    "NULL settings: defaults");
	sbx_np_free(&np);
	sbx_np_free(&np);
	ok(np.ports == NULL && np.nports == 0, "free twice is harmless");

	/* Denied first, then allowed, then the port. */
	ok(load(&np, "{\"allowed_domains\":[\"*.example.com\","
	    "\"secret.example.com\",\"example.com\"],"
	    "\"denied_domains\":[\"secret.example.com\","
	    "\"*.internal.example.com\"]}", &e) == 0, "deny + allow loads");
	is_str(verdict(&np, "secret.example.com", 443), SBX_NP_DENIED,
	    "denied beats allowed (exact)");
	is_str(verdict(&np, "SECRET.example.com.", 443), SBX_NP_DENIED,
	    "denied beats allowed (case, dot)");
	is_str(verdict(&np, "a.internal.example.com", 443), SBX_NP_DENIED,
	    "denied beats allowed (wildcard)");
	is_str(verdict(&np, "secret.example.com", 22), SBX_NP_DENIED,
	    "denied before the port");
	is_str(verdict(&np, "internal.example.com", 443), "allowed",
	    "a denied wildcard spares its apex");
	is_str(verdict(&np, "a.secret.example.com", 443), "allowed",
	    "an exact denial spares subdomains");
	is_str(verdict(&np, "www.example.com", 443), "allowed",
	    "wildcard allows");
	is_str(verdict(&np, "example.com", 80), "allowed", "exact allows");
	is_str(verdict(&np, "example.org", 22), SBX_NP_NOT_ALLOWED,
	    "not allowlisted before the port");
	sbx_np_free(&np);
}

static void
test_load(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	json_t			*j;
	char			 longname[301], text[400];
	int			 rc;

	ok(load(&np, "{\"allowed_domains\":[\"EXAMPLE.COM.\","
	    "\"*.Wild.SBX.test.\",\"xn--bcher-kva.sbx.test\",\"example.com\"],"
	    "\"network\":\"proxy\",\"limits\":{\"cpus\":1},\"unknown\":[1]}",
	    &e) == 0, "entries load, other keys ignored");
	ok(np.nallowed == 4 && strcmp(np.allowed[0], "example.com") == 0 &&
	    strcmp(np.allowed[1], "*.wild.sbx.test") == 0 &&
	    strcmp(np.allowed[2], "xn--bcher-kva.sbx.test") == 0 &&
	    strcmp(np.allowed[3], "example.com") == 0,
	    "entries normalised, duplicates kept");
	is_str(verdict(&np, "xn--bcher-kva.sbx.test", 443), "allowed",
	    "NP-17 punycode allowed");
	is_str(verdict(&np, "b\303\274cher.sbx.test", 443),
	    SBX_NP_INVALID_HOST, "NP-17 UTF-8 host invalid");

	/* A second file adds to the first. */
	j = json_pack("{s:[s], s:[s]}", "allowed_domains", "b.test",
	    "denied_domains", "*.b.test");
	rc = sbx_np_load(&np, j, "config/agents/b.json", &e);
	json_decref(j);
	ok(rc == 0 && np.nallowed == 5 && np.ndenied == 1 &&
	    strcmp(np.allowed[4], "b.test") == 0 &&
	    strcmp(np.denied[0], "*.b.test") == 0, "a second load appends");
	sbx_np_free(&np);

	ok(load(&np, "{\"allow_private\":false,\"resolve\":{}}", &e) == 0,
	    "empty resolve without allow_private loads");
	sbx_np_free(&np);

	/* Types, each with the key and the origin in the message. */
	load_bad("[]", "must be an object");
	load_bad("\"x\"", "must be an object");
	load_bad("{\"allowed_domains\":\"example.com\"}",
	    "`allowed_domains` must be an array");
	load_bad("{\"allowed_domains\":null}",
	    "`allowed_domains` must be an array");
	load_bad("{\"allowed_domains\":[\"a.com\",42]}",
	    "`allowed_domains` must be an array");
	load_bad("{\"denied_domains\":{}}",
	    "`denied_domains` must be an array");
	load_bad("{\"allowed_ports\":443}",
	    "`allowed_ports` must be an array of integers 1..65535");
	load_bad("{\"allowed_ports\":[0]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[65536]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[-1]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[\"443\"]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[443.0]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[true]}", "`allowed_ports` must be");
	load_bad("{\"allowed_ports\":[443,null]}", "`allowed_ports` must be");
	load_bad("{\"allow_private\":\"yes\"}", "`allow_private` must be");
	load_bad("{\"allow_private\":1}", "`allow_private` must be");

	/* Entries (NP-17: not normalised, not ASCII → refused at load). */
	load_bad("{\"allowed_domains\":[\"b\303\274cher.sbx.test\"]}",
	    "xn--");
	load_bad("{\"allowed_domains\":[\"*\"]}", "`allowed_domains[0]`");
	load_bad("{\"allowed_domains\":[\"ok.test\",\"*.com\"]}",
	    "`allowed_domains[1]` \"*.com\" is a single-label wildcard");
	load_bad("{\"allowed_domains\":[\"*.com.\"]}", "single-label");
	load_bad("{\"allowed_domains\":[\"a.*.example.com\"]}", "wildcard");
	load_bad("{\"allowed_domains\":[\"**.example.com\"]}", "wildcard");
	load_bad("{\"allowed_domains\":[\"*.*.example.com\"]}", "wildcard");
	load_bad("{\"allowed_domains\":[\"*example.com\"]}", "wildcard");
	load_bad("{\"allowed_domains\":[\"example.*\"]}", "wildcard");
	load_bad("{\"allowed_domains\":[\"*.\"]}", "not a valid domain");
	load_bad("{\"allowed_domains\":[\"\"]}", "not a valid domain");
	load_bad("{\"allowed_domains\":[\".example.com\"]}",
	    "not a valid domain");
	load_bad("{\"allowed_domains\":[\"example.com:0\"]}",
	    "port that is not a number from 1 to 65535");
	load_bad("{\"allowed_domains\":[\"example.com:65536\"]}",
	    "port that is not");
	load_bad("{\"allowed_domains\":[\"example.com:\"]}",
	    "port that is not");
	load_bad("{\"allowed_domains\":[\"example.com:044\"]}",
	    "port that is not");
	load_bad("{\"allowed_domains\":[\"example.com:+1\"]}",
	    "port that is not");
	load_bad("{\"allowed_domains\":[\"https://example.com\"]}",
	    "has a scheme");
	load_bad("{\"allowed_domains\":[\"example.com/path\"]}",
	    "has a path");
	load_bad("{\"allowed_domains\":[\"*:443\"]}",
	    "only denied_domains may say `*:PORT`");
	load_bad("{\"denied_domains\":[\"*\"]}", "bare `*`");
	load_bad("{\"allow_private_domains\":[\"a.example.com:443\"]}",
	    "has a port");
	load_bad("{\"allowed_domains\":[\"a_b.example.com\"]}",
	    "not a valid domain");
	load_bad("{\"allowed_domains\":[\"example.com\\u0000.evil.net\"]}",
	    "example.com\\x00.evil.net");
	load_bad("{\"allowed_domains\":[\"1.2.3.4\"]}", "IP address");
	load_bad("{\"allowed_domains\":[\"*.1.2.3\"]}", "IP address");
	load_bad("{\"allowed_domains\":[\"2130706433\"]}", "IP address");
	load_bad("{\"allowed_domains\":[\"[::1]\"]}", "IP address");
	load_bad("{\"denied_domains\":[\"ex ample.com\"]}",
	    "`denied_domains[0]`");
	/* What a message echoes is printable. */
	load_bad("{\"allowed_domains\":[\"\\u001b[31mred.com\"]}",
	    "\\x1b[31mred.com");

	/* A long entry is cut short in the message. */
	memset(longname, 'a', 300);
	longname[300] = '\0';
	snprintf(text, sizeof(text), "{\"allowed_domains\":[\"%s\"]}",
	    longname);
	load_bad(text, "aaa...\" is not a valid domain name");

	/* resolve: test-only, and only with allow_private. */
	load_bad("{\"resolve\":{\"a.sbx.test\":\"127.0.0.1\"}}",
	    "allow_private");
	load_bad("{\"allow_private\":false,"
	    "\"resolve\":{\"a.sbx.test\":\"127.0.0.1\"}}", "allow_private");
	load_bad("{\"allow_private\":true,\"resolve\":[]}",
	    "`resolve` must be an object");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"a.sbx.test\":\"localhost\"}}",
	    "`resolve.a.sbx.test` must be an IPv4 or IPv6 address");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"a.sbx.test\":\"127.1\"}}", "`resolve.a.sbx.test`");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"a.sbx.test\":\"[::1]\"}}", "`resolve.a.sbx.test`");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"a.sbx.test\":2130706433}}", "`resolve.a.sbx.test`");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"a.sbx.test\":\"127.0.0.1\\u0000x\"}}",
	    "`resolve.a.sbx.test`");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"*.sbx.test\":\"127.0.0.1\"}}", "`resolve` key");
	load_bad("{\"allow_private\":true,"
	    "\"resolve\":{\"1.2.3.4\":\"127.0.0.1\"}}", "`resolve` key");
	/* An error late in a file also leaves the earlier keys out. */
	load_bad("{\"allowed_domains\":[\"a.test\"],\"denied_domains\":[\"b\"],"
	    "\"allowed_ports\":[1],\"allow_private\":true,"
	    "\"resolve\":{\"a.test\":\"nope\"}}", "`resolve.a.test`");
}

/* A resolve key with a NUL (the JSON decoder refuses one, a caller that
 * builds the object need not). */
static void
test_resolve_nul_key(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	json_t			*j, *r;
	int			 rc;

	j = json_pack("{s:b}", "allow_private", 1);
	r = json_object();
	json_object_setn_new(r, "a.test\0.b", 9, json_string("127.0.0.1"));
	json_object_set_new(j, "resolve", r);
	sbx_np_init(&np);
	rc = sbx_np_load(&np, j, "config/agents/a.json", &e);
	json_decref(j);
	ok(rc == -1 && strstr(e.message, "a.test\\x00.b") != NULL &&
	    np.nresolve == 0, "resolve key with a NUL refused");
	sbx_np_free(&np);
}

/* host:port entries (issue 20): ports per entry, "*:PORT" denials, and
 * wildcards under public suffixes refused. */
static void
test_host_port(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	json_t			*j;

	sbx_np_init(&np);
	j = json_loads("{\"allowed_domains\":[\"Example.COM:8443\","
	    "\"*.ssh.test:22\",\"both.test\",\"both.test:2222\"],"
	    "\"denied_domains\":[\"*:25\",\"bad.ssh.test:22\"]}", 0,
	    NULL);
	memset(&e, 0, sizeof(e));
	ok(sbx_np_load(&np, j, "t", &e) == 0, "host:port entries load: %s",
	    e.message);
	json_decref(j);
	ok(np.nallowed == 4 && strcmp(np.allowed[0], "example.com:8443") ==
	    0 && strcmp(np.allowed[1], "*.ssh.test:22") == 0,
	    "normalised with their port");
	ok(np.ndenied == 2 && strcmp(np.denied[0], "*:25") == 0,
	    "*:25 in the deny list");
	is_str(verdict(&np, "example.com", 8443), "allowed", "its port");
	is_str(verdict(&np, "example.com", 443), SBX_NP_PORT,
	    "a port entry does not take allowed_ports");
	is_str(verdict(&np, "a.ssh.test", 22), "allowed", "*.ssh.test:22");
	is_str(verdict(&np, "a.b.ssh.test", 22), "allowed", "  any depth");
	is_str(verdict(&np, "ssh.test", 22), SBX_NP_NOT_ALLOWED,
	    "  never the apex");
	is_str(verdict(&np, "a.ssh.test", 443), SBX_NP_PORT,
	    "  no other port");
	is_str(verdict(&np, "bad.ssh.test", 22), SBX_NP_DENIED,
	    "a denial with a port");
	is_str(verdict(&np, "both.test", 443), "allowed",
	    "no port: allowed_ports");
	is_str(verdict(&np, "both.test", 2222), "allowed",
	    "and the entry with a port");
	is_str(verdict(&np, "both.test", 25), SBX_NP_DENIED,
	    "*:25 denies every host on 25");
	is_str(verdict(&np, "example.com", 25), SBX_NP_DENIED, "  any host");
	ok(sbx_np_match("*.ssh.test:22", "x.ssh.test") &&
	    !sbx_np_match("*.ssh.test:22", "ssh.test") &&
	    sbx_np_match("*:22", "any.test"), "sbx_np_match ignores the port");
	ok(sbx_np_port_listed(&np, 80) && !sbx_np_port_listed(&np, 22),
	    "sbx_np_port_listed");
	ok(sbx_np_allow(&np, "extra.test:9000", &e) == 0 &&
	    strcmp(verdict(&np, "extra.test", 9000), "allowed") == 0 &&
	    strcmp(verdict(&np, "extra.test", 443), SBX_NP_PORT) == 0,
	    "--allow-domain with a port");
	ok(sbx_np_allow(&np, "*:443", &e) == -1 &&
	    strstr(e.message, "only denied_domains") != NULL,
	    "--allow-domain '*:443' refused");
	sbx_np_free(&np);

	/* Wildcards under a public suffix (the system's list). */
	if (access("/usr/share/publicsuffix/public_suffix_list.dat", R_OK) !=
	    0) {
		skip_n(7, "the public suffix list is not installed");
		return;
	}
	load_bad("{\"allowed_domains\":[\"*.co.uk\"]}",
	    "wildcard under a public suffix");
	load_bad("{\"allowed_domains\":[\"*.com.au:443\"]}",
	    "public suffix");
	load_bad("{\"denied_domains\":[\"*.co.uk\"]}", "public suffix");
	sbx_np_init(&np);
	j = json_loads("{\"allowed_domains\":[\"*.example.co.uk\","
	    "\"*.github.io\"]}", 0, NULL);
	ok(sbx_np_load(&np, j, "t", &e) == 0, "*.example.co.uk and "
	    "*.github.io (private section) load");
	json_decref(j);
	sbx_np_free(&np);
}

static void
test_allow(void)
{
	static const char *const bad[] = { "*", "*.com", "1.2.3.4",
	    "[::1]", "b\303\274cher.sbx.test", "", "a.*.b.test",
	    "example.com:0", "\x1b]0;x\x07", "*:443", "*.co.uk",
	    "http://example.com" };
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	size_t			 i;

	sbx_np_init(&np);
	ok(sbx_np_allow(&np, "Example.COM.", &e) == 0 && np.nallowed == 1 &&
	    strcmp(np.allowed[0], "example.com") == 0, "allow example.com");
	ok(sbx_np_allow(&np, "*.Foo.test", &e) == 0 && np.nallowed == 2 &&
	    strcmp(np.allowed[1], "*.foo.test") == 0, "allow *.foo.test");
	is_str(verdict(&np, "a.foo.test", 443), "allowed", "  in effect");
	for (i = 0; i < NITEMS(bad); i++) {
		memset(&e, 0, sizeof(e));
		ok(sbx_np_allow(&np, bad[i], &e) == -1 && e.kind != NULL &&
		    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 &&
		    e.field != NULL && strcmp(e.field, "allow_domain") == 0 &&
		    e.reason != NULL &&
		    strcmp(e.reason, "invalid_domain") == 0 &&
		    strchr(e.message, '\x1b') == NULL && np.nallowed == 2,
		    "allow #%zu refused: %s", i, e.message);
	}
	ok(sbx_np_allow(&np, NULL, &e) == -1, "allow NULL refused");
	sbx_np_free(&np);
}

static void
test_override(void)
{
	struct sbx_netpolicy		 np;
	struct sbx_error		 e;
	const struct sbx_np_override	*o;
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;
	char				 buf[INET6_ADDRSTRLEN];
	json_t				*j;
	int				 rc;

	ok(load(&np, "{\"allow_private\":true,\"resolve\":{"
	    "\"API.sbx.test.\":\"127.0.0.1\",\"v6.sbx.test\":\"::1\"}}",
	    &e) == 0, "resolve with allow_private loads");
	is_int(np.nresolve, 2, "  two overrides");
	o = sbx_np_override(&np, "api.sbx.test");
	ok(o != NULL && strcmp(o->name, "api.sbx.test") == 0 &&
	    o->addr.ss_family == AF_INET &&
	    o->addrlen == sizeof(struct sockaddr_in), "override for api");
	if (o != NULL && o->addr.ss_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)&o->addr;
		is_str(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)),
		    "127.0.0.1", "  127.0.0.1");
		is_int(sin->sin_port, 0, "  port 0");
		is_str(sbx_np_addr_check(&np, "api.sbx.test",
		    (const struct sockaddr *)(const void *)&o->addr, NULL,
		    0) == NULL ?
		    "dial" : "refused", "dial", "  dialled: allow_private");
	}
	o = sbx_np_override(&np, "v6.sbx.test");
	ok(o != NULL && o->addr.ss_family == AF_INET6 &&
	    o->addrlen == sizeof(struct sockaddr_in6), "override for v6");
	if (o != NULL && o->addr.ss_family == AF_INET6) {
		sin6 = (const struct sockaddr_in6 *)(const void *)&o->addr;
		is_str(inet_ntop(AF_INET6, &sin6->sin6_addr, buf, sizeof(buf)),
		    "::1", "  ::1");
	}
	ok(sbx_np_override(&np, "other.sbx.test") == NULL, "no override");
	ok(sbx_np_override(&np, "sbx.test") == NULL, "no override (apex)");
	ok(sbx_np_override(&np, "x.api.sbx.test") == NULL,
	    "no override (subdomain)");
	ok(sbx_np_override(NULL, "api.sbx.test") == NULL, "NULL policy");

	/* A later file's override of the same name wins. */
	j = json_pack("{s:{s:s}}", "resolve", "api.sbx.test", "10.0.0.7");
	rc = sbx_np_load(&np, j, "config/agents/b.json", &e);
	json_decref(j);
	o = sbx_np_override(&np, "api.sbx.test");
	ok(rc == 0 && np.nresolve == 2 && o != NULL &&
	    o->addr.ss_family == AF_INET, "second load replaces");
	if (o != NULL && o->addr.ss_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)&o->addr;
		is_str(inet_ntop(AF_INET, &sin->sin_addr, buf, sizeof(buf)),
		    "10.0.0.7", "  10.0.0.7");
	}
	/* Turning allow_private off again with overrides in place: no. */
	j = json_pack("{s:b}", "allow_private", 0);
	rc = sbx_np_load(&np, j, "config/agents/c.json", &e);
	json_decref(j);
	ok(rc == -1 && strstr(e.message, "allow_private") != NULL &&
	    np.allow_private, "allow_private cannot be dropped under resolve");
	sbx_np_free(&np);

	/* Without allow_private, a name resolving to 127.0.0.1 is refused. */
	sbx_np_init(&np);
	is_str(check(&np, "127.0.0.1"), SBX_NP_LOOPBACK, "strict: 127.0.0.1");
	sbx_np_free(&np);
}

static void
test_addr(void)
{
	static const char *const cases[][2] = {
		/* IPv4 */
		{ "0.0.0.0", "unspecified" },
		{ "0.1.2.3", "unspecified" },
		{ "0.255.255.255", "unspecified" },
		{ "10.0.0.1", "private" },
		{ "10.255.255.255", "private" },
		{ "172.16.0.1", "private" },
		{ "172.31.255.255", "private" },
		{ "172.15.255.255", "global" },
		{ "172.32.0.0", "global" },
		{ "192.168.0.1", "private" },
		{ "192.168.255.255", "private" },
		{ "192.167.255.255", "global" },
		{ "192.169.0.0", "global" },
		{ "100.64.0.0", "cgnat" },
		{ "100.100.100.200", "metadata" },
		{ "100.100.100.199", "cgnat" },
		{ "100.127.255.255", "cgnat" },
		{ "100.63.255.255", "global" },
		{ "100.128.0.0", "global" },
		{ "127.0.0.1", "loopback" },
		{ "127.255.255.254", "loopback" },
		{ "169.254.169.254", "metadata" },
		{ "169.254.170.2", "metadata" },
		{ "169.254.170.23", "metadata" },
		{ "169.254.169.253", "link_local" },
		{ "169.254.0.1", "link_local" },
		{ "169.253.255.255", "global" },
		{ "192.0.0.8", "reserved" },
		{ "192.0.0.255", "reserved" },
		{ "192.0.2.1", "documentation" },
		{ "198.51.100.7", "documentation" },
		{ "203.0.113.9", "documentation" },
		{ "198.18.0.1", "benchmark" },
		{ "198.19.255.255", "benchmark" },
		{ "198.17.255.255", "global" },
		{ "198.20.0.0", "global" },
		{ "192.88.99.1", "reserved" },
		{ "224.0.0.1", "multicast" },
		{ "239.255.255.250", "multicast" },
		{ "240.0.0.1", "reserved" },
		{ "255.255.255.254", "reserved" },
		{ "255.255.255.255", "broadcast" },
		{ "8.8.8.8", "global" },
		{ "1.1.1.1", "global" },
		{ "93.184.216.34", "global" },
		{ "223.255.255.255", "global" },
		/* IPv6 */
		{ "::", "unspecified" },
		{ "::1", "loopback" },
		{ "::ffff:127.0.0.1", "loopback" },
		{ "::ffff:7f00:1", "loopback" },
		{ "::ffff:169.254.169.254", "metadata" },
		{ "::ffff:a9fe:a9fe", "metadata" },
		{ "::ffff:10.1.2.3", "private" },
		{ "::ffff:0.0.0.0", "unspecified" },
		{ "::ffff:255.255.255.255", "broadcast" },
		{ "::ffff:8.8.8.8", "global" },
		{ "::127.0.0.1", "loopback" },
		{ "::169.254.169.254", "metadata" },
		{ "::8.8.8.8", "reserved" },
		{ "::ffff:0:127.0.0.1", "loopback" },
		{ "::ffff:0:8.8.8.8", "reserved" },
		{ "64:ff9b::7f00:1", "loopback" },
		{ "64:ff9b::127.0.0.1", "loopback" },
		{ "64:ff9b::a9fe:a9fe", "metadata" },
		{ "64:ff9b::192.168.1.1", "private" },
		{ "64:ff9b::808:808", "global" },
		{ "64:ff9b:1::7f00:1", "loopback" },
		{ "64:ff9b:1::a9fe:a9fe", "metadata" },
		{ "64:ff9b:1::808:808", "reserved" },
		/* 8.8.8.8 in RFC 6052's /48 layout: reserved either way. */
		{ "64:ff9b:1:808:8:800::", "unspecified" },
		{ "64:ff9b:1:808:8:800:808:808", "reserved" },
		{ "2002:7f00:1::", "loopback" },
		{ "2002:7f00:1::1", "loopback" },
		{ "2002:a9fe:a9fe::", "metadata" },
		{ "2002:c000:201::1", "documentation" },
		{ "2002:a00:1::", "private" },
		{ "2002:808:808::1", "global" },
		/* Teredo: reserved, whatever it carries. */
		{ "2001::1", "reserved" },
		{ "2001:0:4136:e378:8000:63bf:80ff:fffe", "reserved" },
		{ "2001:0:a9fe:a9fe::f7f7:f7f7", "reserved" },
		{ "2001:0:4136:e378:8000:63bf:f7f7:f7f7", "reserved" },
		{ "2001:db8::1", "documentation" },
		{ "2001:db8:ffff::1", "documentation" },
		{ "2001:2::1", "benchmark" },
		{ "2001:10::1", "reserved" },
		{ "2001:1ff::1", "reserved" },
		{ "2001:200::1", "global" },
		{ "3fff::1", "documentation" },
		{ "3fff:fff::1", "documentation" },
		{ "3fff:1000::1", "global" },
		{ "fc00::1", "unique_local" },
		{ "fd00:ec2::254", "metadata" },
		{ "fd00:ec2::23", "metadata" },
		{ "fd00:ec2::253", "unique_local" },
		{ "fdff:ffff::1", "unique_local" },
		{ "fe80::1", "link_local" },
		{ "febf::1", "link_local" },
		{ "fec0::1", "reserved" },
		{ "feff::1", "reserved" },
		{ "ff02::1", "multicast" },
		{ "ff0e::1", "multicast" },
		{ "100::1", "reserved" },
		{ "100::ffff:ffff:ffff:ffff", "reserved" },
		{ "1::1", "reserved" },
		{ "4000::1", "reserved" },
		{ "e000::1", "reserved" },
		{ "5f00::1", "reserved" },
		{ "2606:4700:4700::1111", "global" },
		{ "2001:4860:4860::8888", "global" },
		{ "2a00:1450:4001::1", "global" },
		{ "3ffe::1", "global" },
	};
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	struct sockaddr_un	 sun;
	size_t			 i;

	for (i = 0; i < NITEMS(cases); i++)
		is_str(cls(cases[i][0]), cases[i][1], cases[i][0]);
	is_str(sbx_np_addr_class(NULL), "reserved", "NULL address");
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	is_str(sbx_np_addr_class((struct sockaddr *)&sun), "reserved",
	    "AF_UNIX is not global");

	sbx_np_init(&np);
	is_str(check(&np, "8.8.8.8"), "dial", "check 8.8.8.8");
	is_str(check(&np, "2606:4700:4700::1111"), "dial", "check global v6");
	is_str(check(&np, "127.0.0.1"), SBX_NP_LOOPBACK, "check 127.0.0.1");
	is_str(check(&np, "169.254.169.254"), SBX_NP_METADATA,
	    "check metadata");
	is_str(check(&np, "::ffff:127.0.0.1"), SBX_NP_LOOPBACK,
	    "check mapped loopback");
	is_str(check(&np, "64:ff9b::a9fe:a9fe"), SBX_NP_METADATA,
	    "check NAT64 metadata");
	is_str(check(&np, "2002:a9fe:a9fe::"), SBX_NP_METADATA,
	    "check 6to4 metadata");
	is_str(check(&np, "0.0.0.0"), SBX_NP_UNSPEC, "check 0.0.0.0");
	is_str(check(&np, "::"), SBX_NP_UNSPEC, "check ::");
	is_str(check(NULL, "10.0.0.1"), SBX_NP_PRIVATE, "NULL policy strict");
	is_str(sbx_np_addr_check(&np, "a.sbx.test", NULL, NULL, 0),
	    SBX_NP_RESERVED, "NULL address");
	sbx_np_free(&np);

	ok(load(&np, "{\"allow_private\":true}", &e) == 0 && np.allow_private,
	    "allow_private loads");
	is_str(check(&np, "127.0.0.1"), "dial", "allow_private: 127.0.0.1");
	is_str(check(&np, "::1"), "dial", "allow_private: ::1");
	is_str(check(&np, "8.8.8.8"), "dial", "allow_private: 8.8.8.8");
	is_str(sbx_np_addr_check(&np, "a.sbx.test", (struct sockaddr *)&sun,
	    NULL, 0), SBX_NP_RESERVED, "allow_private: AF_UNIX still refused");
	/* The blunt switch does not open the cloud's credentials. */
	is_str(check(&np, "169.254.169.254"), SBX_NP_METADATA,
	    "allow_private: metadata still refused");
	is_str(check(&np, "::ffff:169.254.169.254"), SBX_NP_METADATA,
	    "allow_private: mapped metadata still refused");
	is_str(check(&np, "169.254.1.1"), "dial",
	    "allow_private: other link-local dialled");
	sbx_np_free(&np);
}

/* Issue 11 item 7: the reason is the address class, with a hint. */
static void
test_reasons(void)
{
	static const char *const cases[][2] = {
		{ "203.0.113.7", SBX_NP_RESERVED },	/* documentation */
		{ "198.18.0.1", SBX_NP_RESERVED },	/* benchmark */
		{ "240.0.0.1", SBX_NP_RESERVED },
		{ "255.255.255.255", SBX_NP_RESERVED },
		{ "2001:db8::1", SBX_NP_RESERVED },
		{ "fec0::1", SBX_NP_RESERVED },
		{ "127.0.0.1", SBX_NP_LOOPBACK },
		{ "::1", SBX_NP_LOOPBACK },
		{ "::ffff:127.0.0.2", SBX_NP_LOOPBACK },
		{ "10.1.2.3", SBX_NP_PRIVATE },
		{ "172.16.0.1", SBX_NP_PRIVATE },
		{ "192.168.1.1", SBX_NP_PRIVATE },
		{ "100.64.0.1", SBX_NP_PRIVATE },
		{ "fd12:3456::1", SBX_NP_PRIVATE },
		{ "169.254.1.1", SBX_NP_LINKLOCAL },
		{ "fe80::1", SBX_NP_LINKLOCAL },
		{ "169.254.169.254", SBX_NP_METADATA },
		{ "100.100.100.200", SBX_NP_METADATA },
		{ "fd00:ec2::254", SBX_NP_METADATA },
		{ "224.0.0.1", SBX_NP_MULTICAST },
		{ "ff02::1", SBX_NP_MULTICAST },
		{ "0.0.0.0", SBX_NP_UNSPEC },
		{ "::", SBX_NP_UNSPEC },
	};
	struct sockaddr_storage	 ss;
	struct sbx_netpolicy	 np;
	char			 t[64];
	size_t			 i;

	sbx_np_init(&np);
	for (i = 0; i < NITEMS(cases); i++) {
		is_str(check(&np, cases[i][0]), cases[i][1], cases[i][0]);
		mkaddr(cases[i][0], &ss);
		is_str(sbx_np_addr_reason((struct sockaddr *)&ss), cases[i][1],
		    "  sbx_np_addr_reason");
		ok(sbx_np_is_addr_reason(cases[i][1]), "  an address reason");
	}
	mkaddr("8.8.8.8", &ss);
	ok(sbx_np_addr_reason((struct sockaddr *)&ss) == NULL,
	    "global: no reason");
	is_str(sbx_np_addr_text((struct sockaddr *)&ss, t, sizeof(t)),
	    "8.8.8.8", "addr_text v4");
	mkaddr("fd00:ec2::254", &ss);
	is_str(sbx_np_addr_text((struct sockaddr *)&ss, t, sizeof(t)),
	    "fd00:ec2::254", "addr_text v6");
	is_str(sbx_np_addr_hint(SBX_NP_RESERVED),
	    "allow it with allow_private_domains or allowed_cidrs",
	    "hint: reserved");
	is_str(sbx_np_addr_hint(SBX_NP_LOOPBACK),
	    "allow it with allow_private_domains or allowed_cidrs",
	    "hint: loopback");
	ok(strstr(sbx_np_addr_hint(SBX_NP_METADATA), "allowed_cidrs") !=
	    NULL && strstr(sbx_np_addr_hint(SBX_NP_METADATA),
	    "allow_private_domains") == NULL, "hint: metadata");
	ok(sbx_np_addr_hint(SBX_NP_NOT_ALLOWED) == NULL &&
	    sbx_np_addr_hint(NULL) == NULL && !sbx_np_is_addr_reason(
	    SBX_NP_DENIED), "no hint for a name reason");
	sbx_np_free(&np);
}

static const char *
cidr(const char *s)
{
	static char		 res[128];
	struct sbx_np_cidr	 c;
	const char		*why;

	if (sbx_np_cidr_parse(s, strlen(s), &c, &why) == -1)
		return why != NULL ? "bad" : "(bug: no reason)";
	snprintf(res, sizeof(res), "%s", c.text);
	return res;
}

static int
in_cidr(const char *range, const char *addr)
{
	struct sockaddr_storage	 ss;
	struct sbx_np_cidr	 c;
	const char		*why;

	if (sbx_np_cidr_parse(range, strlen(range), &c, &why) == -1 ||
	    mkaddr(addr, &ss) == -1)
		return -1;
	return sbx_np_cidr_match(&c, (struct sockaddr *)&ss);
}

static void
test_cidr(void)
{
	static const char *const good[][2] = {
		{ "10.0.0.0/8", "10.0.0.0/8" },
		{ "127.0.0.0/8", "127.0.0.0/8" },
		{ "203.0.113.0/24", "203.0.113.0/24" },
		{ "10.1.2.3/32", "10.1.2.3/32" },
		{ "10.1.2.3", "10.1.2.3/32" },
		{ "0.0.0.0/1", "0.0.0.0/1" },
		{ "fd00::/8", "fd00::/8" },
		{ "FD00:0::/8", "fd00::/8" },
		{ "fc00::/7", "fc00::/7" },
		{ "fd00:ec2::254/128", "fd00:ec2::254/128" },
		{ "::1", "::1/128" },
		{ "2001:db8::/32", "2001:db8::/32" },
	};
	static const char *const bad[] = {
		"", "/", "/8", "10.0.0.0/", "10.0.0.0/0", "::/0",
		"10.0.0.0/33", "fd00::/129", "10.0.0.0/08", "10.0.0.0/+8",
		"10.0.0.0/-8", "10.0.0.0/8 ", " 10.0.0.0/8", "10.0.0.0 /8",
		"10.0.0.0/ 8", "10.1.2.3/8", "10.0.0.1/24", "fd00::1/8",
		"10.1/16", "10/8", "012.0.0.0/8", "0x0a.0.0.0/8",
		"10.0.0.256/32",
		"10.0.0.0/8/8", "10.0.0.0/1000", "example.com/8",
		"::ffff:10.0.0.0/104", "::ffff:0:0/96", "fe80::1%eth0/128",
		"10.0.0.0/8,", "10.0.0.0\n/8", "1.2.3.4.5/32",
	};
	struct sbx_np_cidr	 c;
	const char		*why;
	size_t			 i;

	for (i = 0; i < NITEMS(good); i++)
		is_str(cidr(good[i][0]), good[i][1], good[i][0]);
	for (i = 0; i < NITEMS(bad); i++)
		is_str(cidr(bad[i]), "bad", bad[i]);
	ok(sbx_np_cidr_parse("10.0.0.0/8\0x", 12, &c, &why) == -1,
	    "cidr with NUL refused");
	ok(sbx_np_cidr_parse("10.1.2.3/8", 10, &c, &why) == -1 &&
	    strstr(why, "host bits") != NULL, "  host bits: says so (%s)",
	    why);
	ok(sbx_np_cidr_parse("10.0.0.0/0", 10, &c, &why) == -1 &&
	    strstr(why, "allow_private") != NULL, "  /0: says so (%s)", why);
	ok(sbx_np_cidr_parse("::ffff:0:0/96", 13, &c, &why) == -1 &&
	    strstr(why, "IPv4") != NULL, "  mapped: says so (%s)", why);

	is_int(in_cidr("10.0.0.0/8", "10.255.1.2"), 1, "10/8 has 10.255.1.2");
	is_int(in_cidr("10.0.0.0/8", "11.0.0.0"), 0, "10/8 not 11.0.0.0");
	is_int(in_cidr("10.0.0.0/8", "9.255.255.255"), 0,
	    "10/8 not 9.255.255.255");
	is_int(in_cidr("172.16.0.0/12", "172.31.255.255"), 1, "/12 edge in");
	is_int(in_cidr("172.16.0.0/12", "172.32.0.0"), 0, "/12 edge out");
	is_int(in_cidr("127.0.0.0/8", "127.0.0.1"), 1, "127/8 has 127.0.0.1");
	is_int(in_cidr("10.1.2.3/32", "10.1.2.3"), 1, "/32 exact");
	is_int(in_cidr("10.1.2.3/32", "10.1.2.4"), 0, "/32 only it");
	is_int(in_cidr("10.0.0.0/8", "::ffff:10.1.2.3"), 1,
	    "mapped IPv6 matched as IPv4");
	is_int(in_cidr("10.0.0.0/8", "::10.1.2.3"), 0,
	    "IPv4-compatible is not IPv4");
	is_int(in_cidr("10.0.0.0/8", "64:ff9b::a01:203"), 0,
	    "NAT64 is not IPv4");
	is_int(in_cidr("fd00::/8", "fd12::1"), 1, "fd00::/8 has fd12::1");
	is_int(in_cidr("fd00::/8", "fc00::1"), 0, "fd00::/8 not fc00::1");
	is_int(in_cidr("fc00::/7", "fdff::1"), 1, "fc00::/7 has fdff::1");
	is_int(in_cidr("fd00::/8", "10.0.0.1"), 0, "v6 range, v4 address");
	is_int(in_cidr("10.0.0.0/8", "fd00::1"), 0, "v4 range, v6 address");
	ok(sbx_np_cidr_match(NULL, NULL) == 0, "NULL matches nothing");
}

static void
test_private_settings(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	char			 by[256];
	struct sockaddr_storage	 ss;

	/* allowed_cidrs: for allowlisted names, those ranges only. */
	ok(load(&np, "{\"allowed_domains\":[\"*.corp.example\"],"
	    "\"allowed_cidrs\":[\"10.0.0.0/8\",\"fd00::/8\","
	    "\"169.254.0.0/16\",\"127.0.0.0/8\"]}", &e) == 0 &&
	    np.ncidrs == 4, "allowed_cidrs loads");
	is_str(check(&np, "10.20.30.40"), "dial", "cidrs: 10.20.30.40");
	is_str(check(&np, "fd00::5"), "dial", "cidrs: fd00::5");
	is_str(check(&np, "127.0.0.1"), "dial", "cidrs: 127.0.0.1");
	is_str(check(&np, "192.168.1.1"), SBX_NP_PRIVATE,
	    "cidrs: 192.168.1.1 not in them");
	is_str(check(&np, "203.0.113.7"), SBX_NP_RESERVED,
	    "cidrs: 203.0.113.7 not in them");
	is_str(check(&np, "169.254.1.1"), "dial", "cidrs: link-local in");
	is_str(check(&np, "169.254.169.254"), SBX_NP_METADATA,
	    "cidrs: a range covering metadata does not open it");
	is_str(check(&np, "8.8.8.8"), "dial", "cidrs: global still dialled");
	mkaddr("10.1.1.1", &ss);
	ok(sbx_np_addr_check(&np, "x.corp.example", (struct sockaddr *)&ss,
	    by, sizeof(by)) == NULL && strcmp(by, "allowed_cidrs 10.0.0.0/8")
	    == 0, "  by: %s", by);
	mkaddr("8.8.8.8", &ss);
	ok(sbx_np_addr_check(&np, "x.corp.example", (struct sockaddr *)&ss,
	    by, sizeof(by)) == NULL && by[0] == '\0', "  by: global is ''");
	sbx_np_free(&np);

	/* Metadata: only an entry that is exactly it. */
	ok(load(&np, "{\"allowed_cidrs\":[\"169.254.169.254/32\","
	    "\"fd00:ec2::254\"]}", &e) == 0, "exact metadata cidrs load");
	is_str(check(&np, "169.254.169.254"), "dial", "metadata /32 dialled");
	is_str(check(&np, "::ffff:169.254.169.254"), "dial",
	    "  its mapped form too");
	is_str(check(&np, "fd00:ec2::254"), "dial", "metadata /128 dialled");
	is_str(check(&np, "169.254.170.2"), SBX_NP_METADATA,
	    "  another metadata address is not");
	sbx_np_free(&np);

	/* allow_private_domains: any non-global address, for those names. */
	ok(load(&np, "{\"allowed_domains\":[\"*.corp.example\","
	    "\"public.example\"],\"allow_private_domains\":"
	    "[\"Mirror.Corp.Example.\",\"*.int.corp.example\"]}", &e) == 0
	    && np.nprivate == 2 && strcmp(np.private_domains[0],
	    "mirror.corp.example") == 0, "allow_private_domains loads");
	is_str(check_host(&np, "mirror.corp.example", "10.1.2.3"), "dial",
	    "private name: 10.1.2.3");
	is_str(check_host(&np, "mirror.corp.example", "203.0.113.7"), "dial",
	    "private name: 203.0.113.7");
	is_str(check_host(&np, "mirror.corp.example", "127.0.0.1"), "dial",
	    "private name: 127.0.0.1");
	is_str(check_host(&np, "a.b.int.corp.example", "192.168.0.1"),
	    "dial", "private wildcard: 192.168.0.1");
	is_str(check_host(&np, "int.corp.example", "192.168.0.1"),
	    SBX_NP_PRIVATE, "private wildcard: not the apex");
	is_str(check_host(&np, "other.corp.example", "10.1.2.3"),
	    SBX_NP_PRIVATE, "another name: refused");
	is_str(check_host(&np, "public.example", "203.0.113.7"),
	    SBX_NP_RESERVED, "another name: reserved_address");
	is_str(check_host(&np, "mirror.corp.example", "169.254.169.254"),
	    SBX_NP_METADATA, "private name: metadata still refused");
	is_str(check_host(&np, NULL, "10.1.2.3"), SBX_NP_PRIVATE,
	    "no host: refused");
	mkaddr("10.1.1.1", &ss);
	ok(sbx_np_addr_check(&np, "x.int.corp.example", (struct sockaddr *)
	    &ss, by, sizeof(by)) == NULL && strcmp(by,
	    "allow_private_domains *.int.corp.example") == 0, "  by: %s", by);
	/* It adds nothing to the allowlist. */
	is_str(verdict(&np, "mirror.corp.example", 443), "allowed",
	    "decide: allowed by allowed_domains");
	sbx_np_free(&np);
	ok(load(&np, "{\"allowed_domains\":[\"public.example\"],"
	    "\"allow_private_domains\":[\"mirror.corp.example\"]}", &e) ==
	    0, "private name not allowlisted loads");
	is_str(verdict(&np, "mirror.corp.example", 443), SBX_NP_NOT_ALLOWED,
	    "  but is not allowlisted by it");
	sbx_np_free(&np);

	/* Refused at load, with the key and the element. */
	load_bad("{\"allowed_cidrs\":\"10.0.0.0/8\"}",
	    "`allowed_cidrs` must be an array");
	load_bad("{\"allowed_cidrs\":[10]}", "not a string");
	load_bad("{\"allowed_cidrs\":[\"10.0.0.0/8\",\"10.1.2.3/8\"]}",
	    "`allowed_cidrs[1]` \"10.1.2.3/8\" has host bits set");
	load_bad("{\"allowed_cidrs\":[\"10.0.0.0/0\"]}", "every address");
	load_bad("{\"allowed_cidrs\":[\"10.0.0.0/33\"]}", "over 32");
	load_bad("{\"allowed_cidrs\":[\"corp\"]}", "not an address range");
	load_bad("{\"allowed_cidrs\":[\"\\u001b[31m\"]}", "\\x1b");
	load_bad("{\"allow_private_domains\":\"a.example\"}",
	    "`allow_private_domains` must be an array");
	load_bad("{\"allow_private_domains\":[\"*\"]}", "bare `*`");
	load_bad("{\"allow_private_domains\":[\"*.com\"]}",
	    "single-label wildcard");
	load_bad("{\"allow_private_domains\":[\"10.0.0.1\"]}",
	    "is an IP address");
	load_bad("{\"allow_private_domains\":[\"a.*.example\"]}",
	    "wildcard");
	/* A refused file leaves the policy as it was. */
	ok(load(&np, "{\"allowed_cidrs\":[\"10.0.0.0/8\"]}", &e) == 0,
	    "first file loads");
	{
		json_t	*j = json_loads("{\"allowed_cidrs\":[\"fd00::/8\","
		    "\"bad\"],\"allow_private_domains\":[\"a.example\"]}",
		    0, NULL);

		ok(sbx_np_load(&np, j, "b.json", &e) == -1 && np.ncidrs == 1 &&
		    np.nprivate == 0, "a refused second file changes nothing");
		json_decref(j);
	}
	sbx_np_free(&np);
}

static void
test_global(void)
{
	struct sbx_netpolicy	 np;
	struct sbx_error	 e;
	json_t			*g;

	sbx_np_init(&np);
	g = json_loads("{\"max_connections\":5,\"allowed_cidrs\":"
	    "[\"203.0.113.0/24\"],\"allow_private_domains\":"
	    "[\"*.mirror.example\"]}", 0, NULL);
	ok(sbx_np_load_global(&np, g, &e) == 0 && np.ncidrs == 1 &&
	    np.nprivate == 1, "global settings load");
	json_decref(g);
	sbx_np_free(&np);
	sbx_np_init(&np);
	g = json_loads("{\"allowed_cidrs\":[\"203.0.113.0/24\"]}", 0, NULL);
	sbx_np_load_global(&np, g, &e);
	json_decref(g);
	g = json_loads("{\"allowed_cidrs\":[\"10.0.0.0/8\"]}", 0, NULL);
	ok(sbx_np_load(&np, g, "config/agents/a.json", &e) == 0 &&
	    np.ncidrs == 2, "agent settings add to the global ones");
	json_decref(g);
	is_str(check(&np, "203.0.113.7"), "dial", "global range applies");
	is_str(check(&np, "10.0.0.7"), "dial", "agent range applies");
	sbx_np_free(&np);

	sbx_np_init(&np);
	g = json_loads("{\"allowed_cidrs\":[\"203.0.113.7/24\"]}", 0, NULL);
	ok(sbx_np_load_global(&np, g, &e) == -1 && strcmp(e.reason,
	    "config_invalid") == 0 && strstr(e.message,
	    "config/sandbox.json: `proxy.allowed_cidrs[0]`") != NULL,
	    "global: bad range names proxy.allowed_cidrs (%s)", e.message);
	json_decref(g);
	g = json_loads("{\"allow_private_domains\":[\"*\"]}", 0, NULL);
	ok(sbx_np_load_global(&np, g, &e) == -1 && strstr(e.message,
	    "`proxy.allow_private_domains[0]`") != NULL,
	    "global: bad pattern names proxy.allow_private_domains (%s)",
	    e.message);
	json_decref(g);
	ok(np.ncidrs == 0 && np.nprivate == 0, "  and nothing was added");
	ok(sbx_np_load_global(&np, NULL, &e) == 0, "global: NULL is none");
	sbx_np_free(&np);
}

int
main(void)
{
	test_np04();
	test_np06();
	test_host();
	test_port();
	test_match();
	test_decide();
	test_load();
	test_resolve_nul_key();
	test_allow();
	test_host_port();
	test_override();
	test_addr();
	test_reasons();
	test_cidr();
	test_private_settings();
	test_global();
	return done_testing();
}
