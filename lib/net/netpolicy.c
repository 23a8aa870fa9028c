/* netpolicy.c: the egress policy of sbx-proxy (see netpolicy.h).
 *
 * Everything here is a pure function of its arguments: no DNS, no I/O, no
 * locale.  The proxy is only as strict as these answers, so every test is
 * written to fail closed: when in doubt a host is invalid, an address is
 * not global and a port is not allowed.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netpolicy.h"
#include "psl.h"

/* Address classes (sbx_np_addr_class). */
#define C_GLOBAL	"global"
#define C_UNSPEC	"unspecified"
#define C_LOOPBACK	"loopback"
#define C_PRIVATE	"private"
#define C_CGNAT		"cgnat"
#define C_LINKLOCAL	"link_local"
#define C_MULTICAST	"multicast"
#define C_RESERVED	"reserved"
#define C_BROADCAST	"broadcast"
#define C_ULA		"unique_local"
#define C_BENCHMARK	"benchmark"
#define C_DOC		"documentation"
#define C_METADATA	"metadata"

/* An entry is "*." and a name and ":PORT" at most: room for all and the
 * NUL. */
#define ENTRY_MAX	(2 + SBX_NP_HOST_MAX + 6)

/* What entry_check accepts beyond a name or a "*." wildcard. */
#define E_PORT		0x1	/* ":PORT" */
#define E_STAR		0x2	/* "*:PORT" (denied_domains only) */

#define CFG_ERR(e, ...)							\
	sbx_error_set((e), SBX_K_INVALID_ARGS, "config", "config_invalid", \
	    __VA_ARGS__)

/*
 * ASCII only, on purpose: tolower(3) and strcasecmp(3) follow the locale,
 * and a policy decision must not depend on LC_CTYPE.
 */
static unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static int
ascii_eq(const char *a, const char *b, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

static int
is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex(unsigned char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/*
 * Does a (lowercased) name end in a number, in the WHATWG URL standard's
 * sense?  Then a browser, curl or inet_aton(3) would read the whole name
 * as an IPv4 address (127.1, 0x7f.1, 0177.0.0.1, 2130706433, 0x7f000001,
 * 0 all mean an address), so it is an IP literal however it is spelled,
 * even when it is not a valid address at all (1.2.3.4.5, 99999999999):
 * there is no such name in the DNS and no reason to let one through.
 */
static int
ends_in_number(const char *s, size_t len)
{
	const char	*p;
	size_t		 i, n;

	for (p = s + len; p > s && p[-1] != '.'; p--)
		continue;
	n = (size_t)(s + len - p);
	if (n == 0)
		return 0;
	if (n >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		/* "0x" alone is a number too (it reads as 0). */
		for (i = 2; i < n; i++)
			if (!is_hex((unsigned char)p[i]))
				return 0;
		return 1;
	}
	for (i = 0; i < n; i++)
		if (!is_digit((unsigned char)p[i]))
			return 0;
	return 1;
}

/*
 * A host with ':', '[' or ']' can only be an IPv6 literal: none of them is
 * allowed in a name.  It is ip_literal when it parses as one (brackets and
 * a zone removed) and invalid_host otherwise; either way it is refused.
 */
static const char *
v6_literal(const char *in, size_t len)
{
	char		 buf[INET6_ADDRSTRLEN];
	unsigned char	 a[16];
	const char	*p = in, *pct;
	size_t		 i, n = len;

	if (p[0] == '[') {
		if (n < 2 || p[n - 1] != ']')
			return SBX_NP_INVALID_HOST;
		p++;
		n -= 2;
	}
	if (memchr(p, '[', n) != NULL || memchr(p, ']', n) != NULL)
		return SBX_NP_INVALID_HOST;
	/*
	 * A zone ("fe80::1%eth0", "%25eth0" in a URL) names an interface of
	 * the host, never a destination of ours: it is cut off and the
	 * address alone decides.  It must still be printable, so that what
	 * the proxy logs is what it saw.
	 */
	if ((pct = memchr(p, '%', n)) != NULL) {
		if (pct + 1 == p + n)
			return SBX_NP_INVALID_HOST;
		for (i = (size_t)(pct - p) + 1; i < n; i++)
			if ((unsigned char)p[i] <= ' ' ||
			    (unsigned char)p[i] >= 0x7f)
				return SBX_NP_INVALID_HOST;
		n = (size_t)(pct - p);
	}
	/* inet_pton(3) reads a C string: an embedded NUL would cut it. */
	if (n == 0 || n >= sizeof(buf) || memchr(p, '\0', n) != NULL)
		return SBX_NP_INVALID_HOST;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return inet_pton(AF_INET6, buf, a) == 1 ? SBX_NP_IP_LITERAL :
	    SBX_NP_INVALID_HOST;
}

const char *
sbx_np_host(const char *in, size_t len, char out[SBX_NP_HOST_MAX + 1])
{
	size_t		 i, label;
	unsigned char	 c;

	out[0] = '\0';
	if (in == NULL || len == 0)
		return SBX_NP_INVALID_HOST;
	if (memchr(in, ':', len) != NULL || memchr(in, '[', len) != NULL ||
	    memchr(in, ']', len) != NULL)
		return v6_literal(in, len);
	/*
	 * "example.com." is the same name as "example.com" (the root label
	 * made explicit); strip exactly one dot so that both forms meet the
	 * same entry.  A second one leaves an empty label below.
	 */
	if (in[len - 1] == '.')
		len--;
	if (len == 0 || len > SBX_NP_HOST_MAX)
		goto invalid;
	/*
	 * Letters, digits, '-' and '.' only (RFC 1123 host names), byte by
	 * byte.  This refuses NUL (len counts bytes, so "a.com\0.evil" cannot
	 * hide behind a C string), control characters, spaces, '%' (encoded
	 * forms), '@' and '/' and '\' (URL confusion), '*', '_' and every
	 * non-ASCII byte: an IDN must arrive as its xn-- form, so that a
	 * homoglyph is just another name that is not allowlisted.
	 */
	label = 0;
	for (i = 0; i < len; i++) {
		c = lower((unsigned char)in[i]);
		if (c == '.') {
			/* Empty label (leading or double dot), or one ending
			 * with '-'. */
			if (label == 0 || out[i - 1] == '-')
				goto invalid;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || is_digit(c) || c == '-') {
			if ((label == 0 && c == '-') || ++label > 63)
				goto invalid;
		} else
			goto invalid;
		out[i] = (char)c;
	}
	if (label == 0 || out[len - 1] == '-')
		goto invalid;
	out[len] = '\0';
	if (ends_in_number(out, len)) {
		out[0] = '\0';
		return SBX_NP_IP_LITERAL;
	}
	return NULL;
invalid:
	out[0] = '\0';
	return SBX_NP_INVALID_HOST;
}

int
sbx_np_port(const char *s, size_t len, unsigned *port)
{
	unsigned	 v = 0;
	size_t		 i;

	/*
	 * One spelling per port: no sign, no leading zero ("0443" is
	 * refused rather than read as 443 by us and as octal by someone
	 * else), at most 5 digits so that the sum cannot overflow.
	 */
	if (s == NULL || len == 0 || len > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < len; i++) {
		if (!is_digit((unsigned char)s[i]))
			return -1;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > 65535)
		return -1;
	*port = v;
	return 0;
}

/*
 * The name part of a normalised entry and its port (0: none): entries
 * are "NAME", "*.NAME" or "*", then ":PORT" or nothing, as entry_check()
 * wrote them.
 */
static size_t
entry_split(const char *entry, unsigned *port)
{
	const char	*colon = strchr(entry, ':');

	*port = 0;
	if (colon == NULL)
		return strlen(entry);
	if (sbx_np_port(colon + 1, strlen(colon + 1), port) == -1)
		*port = 65536;	/* matches no port: fail closed */
	return (size_t)(colon - entry);
}

/* Does the name part entry[0..el) match the host? */
static int
name_match(const char *entry, size_t el, const char *host)
{
	size_t	 hl;

	/* A host with '*' is a pattern, not a name: it matches nothing. */
	if (entry == NULL || host == NULL || *host == '\0' ||
	    strchr(host, '*') != NULL)
		return 0;
	hl = strlen(host);
	/* "*" alone (only ever "*:PORT" of denied_domains): every host. */
	if (el == 1 && entry[0] == '*')
		return 1;
	if (el >= 2 && entry[0] == '*' && entry[1] == '.') {
		/*
		 * Compare against ".example.com", dot included: the dot pins
		 * the match to a label boundary (never "evil-example.com" or
		 * "xexample.com"), the suffix anchors it at the end (never
		 * "example.com.evil.net") and the host must be strictly
		 * longer, with a non-empty label in front (never the apex).
		 */
		entry++;
		el--;
		return hl > el && host[hl - el - 1] != '.' &&
		    ascii_eq(host + hl - el, entry, el);
	}
	return el == hl && ascii_eq(entry, host, el);
}

int
sbx_np_match(const char *entry, const char *host)
{
	unsigned	 port;

	if (entry == NULL)
		return 0;
	return name_match(entry, entry_split(entry, &port), host);
}

const char *
sbx_np_decide(const struct sbx_netpolicy *np, const char *host,
    unsigned port)
{
	size_t		 i, el;
	unsigned	 ep;
	int		 named = 0;

	if (np == NULL || host == NULL)
		return SBX_NP_NOT_ALLOWED;
	/* Denials first: a denied name stays denied whatever allows it; a
	 * denial with a port ("*:22", "example.com:25") only on that
	 * port. */
	for (i = 0; i < np->ndenied; i++) {
		el = entry_split(np->denied[i], &ep);
		if ((ep == 0 || ep == port) &&
		    name_match(np->denied[i], el, host))
			return SBX_NP_DENIED;
	}
	/*
	 * Then the allowlist; an empty one lets nothing through.  An entry
	 * with a port allows that port alone, one without the ports of
	 * allowed_ports; the host is allowed when any matching entry
	 * allows the port.
	 */
	for (i = 0; i < np->nallowed; i++) {
		el = entry_split(np->allowed[i], &ep);
		if (!name_match(np->allowed[i], el, host))
			continue;
		named = 1;
		if (ep != 0 ? ep == port : sbx_np_port_listed(np, port))
			return NULL;
	}
	return named ? SBX_NP_PORT : SBX_NP_NOT_ALLOWED;
}

int
sbx_np_port_listed(const struct sbx_netpolicy *np, unsigned port)
{
	size_t	 i;

	for (i = 0; i < np->nports; i++)
		if (np->ports[i] == port)
			return 1;
	return 0;
}

/*
 * IPv4 special-purpose blocks (IANA registry, RFC 6890 and successors),
 * most specific first: the first match decides.  Everything else is
 * global.  192.0.0.0/24 is reserved as a whole, although two of its /32
 * are anycast services: no one needs to reach them through this proxy.
 */
static const struct v4block {
	uint32_t	 net;
	unsigned	 bits;
	const char	*cls;
} v4blocks[] = {
	{ 0xffffffffu, 32, C_BROADCAST },	/* 255.255.255.255 */
	{ 0x00000000u, 8, C_UNSPEC },		/* 0/8, "this network" */
	{ 0x0a000000u, 8, C_PRIVATE },		/* 10/8 */
	/*
	 * Cloud metadata endpoints hand out credentials to whoever asks
	 * from the machine: their own class, which allow_private does not
	 * open (see sbx_np_addr_check).  Alibaba Cloud's sits in CGNAT,
	 * AWS ECS's and EKS's next to the well-known one.
	 */
	{ 0x646464c8u, 32, C_METADATA },	/* 100.100.100.200 */
	{ 0x64400000u, 10, C_CGNAT },		/* 100.64/10 */
	{ 0x7f000000u, 8, C_LOOPBACK },		/* 127/8 */
	{ 0xa9fea9feu, 32, C_METADATA },	/* 169.254.169.254 */
	{ 0xa9feaa02u, 32, C_METADATA },	/* 169.254.170.2, ECS */
	{ 0xa9feaa17u, 32, C_METADATA },	/* 169.254.170.23, EKS */
	{ 0xa9fe0000u, 16, C_LINKLOCAL },	/* 169.254/16 */
	{ 0xac100000u, 12, C_PRIVATE },		/* 172.16/12 */
	{ 0xc0000000u, 24, C_RESERVED },	/* 192.0.0/24 */
	{ 0xc0000200u, 24, C_DOC },		/* 192.0.2/24 */
	{ 0xc0586300u, 24, C_RESERVED },	/* 192.88.99/24, 6to4 relay */
	{ 0xc0a80000u, 16, C_PRIVATE },		/* 192.168/16 */
	{ 0xc6120000u, 15, C_BENCHMARK },	/* 198.18/15 */
	{ 0xc6336400u, 24, C_DOC },		/* 198.51.100/24 */
	{ 0xcb007100u, 24, C_DOC },		/* 203.0.113/24 */
	{ 0xe0000000u, 4, C_MULTICAST },	/* 224/4 */
	{ 0xf0000000u, 4, C_RESERVED },		/* 240/4 */
};

static const char *
v4_class(const unsigned char b[4])
{
	uint32_t	 a, mask;
	size_t		 i;

	a = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 |
	    (uint32_t)b[2] << 8 | (uint32_t)b[3];
	for (i = 0; i < sizeof(v4blocks) / sizeof(*v4blocks); i++) {
		mask = 0xffffffffu << (32 - v4blocks[i].bits);
		if ((a & mask) == v4blocks[i].net)
			return v4blocks[i].cls;
	}
	return C_GLOBAL;
}

/* Where an IPv6 block carries IPv4 addresses. */
enum v6embed {
	E_NONE,
	E_LAST32,	/* bytes 12..15: mapped, compatible, NAT64 /96 */
	E_6TO4		/* bytes 2..5 */
};

/*
 * IPv6 special-purpose blocks, most specific first: the first match
 * decides.  For a block that carries IPv4 addresses, an embedded address
 * that is not global gives the class (::ffff:127.0.0.1 is loopback, the
 * NAT64 and 6to4 forms of 169.254.169.254 are link_local): the packet ends
 * up at that IPv4 address, so it must pass the IPv4 check.  Otherwise
 * `cls` is the class, and NULL there means "as the embedded address"
 * (global for the mapped, NAT64 or 6to4 form of a public address).
 */
static const struct v6block {
	unsigned char	 p[16];
	unsigned	 bits;
	enum v6embed	 embed;
	const char	*cls;
} v6blocks[] = {
	{ { 0 }, 128, E_NONE, C_UNSPEC },			/* :: */
	{ { [15] = 1 }, 128, E_NONE, C_LOOPBACK },		/* ::1 */
	/* ::ffff:0:0/96, IPv4-mapped */
	{ { [10] = 0xff, 0xff }, 96, E_LAST32, NULL },
	/* ::ffff:0:0:0/96, SIIT's "IPv4-translated" form. */
	{ { [8] = 0xff, 0xff }, 96, E_LAST32, C_RESERVED },
	/* ::/96, IPv4-compatible: deprecated, never meant to be dialled. */
	{ { 0 }, 96, E_LAST32, C_RESERVED },
	/* 64:ff9b::/96, NAT64 (RFC 6052) */
	{ { 0, 0x64, 0xff, 0x9b }, 96, E_LAST32, NULL },
	/*
	 * 64:ff9b:1::/48, local-use NAT64 (RFC 8215): its last 32 bits give
	 * the reason, but it is reserved anyway.  The operator picks where
	 * the IPv4 address sits (any RFC 6052 layout) and the block is not
	 * globally reachable, so no reading of it is safe to dial.
	 */
	{ { 0, 0x64, 0xff, 0x9b, 0, 1 }, 48, E_LAST32, C_RESERVED },
	{ { 1, 0 }, 64, E_NONE, C_RESERVED },			/* 100::/64 */
	{ { 0x20, 0x02 }, 16, E_6TO4, NULL },			/* 2002::/16 */
	/* 2001:db8::/32 */
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, E_NONE, C_DOC },
	/*
	 * 2001::/32, Teredo, reserved outright: it carries a server and an
	 * (inverted) client IPv4 address and reaches them through relays we
	 * do not know; none of that is a destination to dial.
	 */
	{ { 0x20, 0x01, 0, 0 }, 32, E_NONE, C_RESERVED },
	/* 2001:2::/48 */
	{ { 0x20, 0x01, 0, 2, 0, 0 }, 48, E_NONE, C_BENCHMARK },
	/* 2001::/23, IETF protocol assignments (ORCHID, AMT, AS112...). */
	{ { 0x20, 0x01, 0, 0 }, 23, E_NONE, C_RESERVED },
	{ { 0x3f, 0xff, 0 }, 20, E_NONE, C_DOC },		/* 3fff::/20 */
	/* fd00:ec2::254 (AWS metadata), fd00:ec2::23 (EKS). */
	{ { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54 },
	    128, E_NONE, C_METADATA },
	{ { 0xfd, 0, 0x0e, 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x23 },
	    128, E_NONE, C_METADATA },
	{ { 0xfc }, 7, E_NONE, C_ULA },				/* fc00::/7 */
	{ { 0xfe, 0x80 }, 10, E_NONE, C_LINKLOCAL },		/* fe80::/10 */
	/* fec0::/10, site-local: deprecated (RFC 3879), still seen inside
	 * old networks, never on the Internet. */
	{ { 0xfe, 0xc0 }, 10, E_NONE, C_RESERVED },
	{ { 0xff }, 8, E_NONE, C_MULTICAST },			/* ff00::/8 */
};

static int
v6_prefix(const unsigned char a[16], const unsigned char p[16],
    unsigned bits)
{
	unsigned	 n = bits / 8, r = bits % 8;
	unsigned char	 mask;

	if (memcmp(a, p, n) != 0)
		return 0;
	if (r == 0)
		return 1;
	mask = (unsigned char)(0xff << (8 - r));
	return (a[n] & mask) == (p[n] & mask);
}

/* The IPv4 address an address of a block carries, if any. */
static int
v6_embedded(const unsigned char a[16], enum v6embed how, unsigned char v4[4])
{
	switch (how) {
	case E_LAST32:
		memcpy(v4, a + 12, 4);
		return 1;
	case E_6TO4:
		memcpy(v4, a + 2, 4);
		return 1;
	case E_NONE:
		break;
	}
	return 0;
}

static const char *
v6_class(const unsigned char a[16])
{
	const struct v6block	*b;
	const char		*c;
	unsigned char		 v4[4];
	size_t			 i;

	for (i = 0; i < sizeof(v6blocks) / sizeof(*v6blocks); i++) {
		b = &v6blocks[i];
		if (!v6_prefix(a, b->p, b->bits))
			continue;
		if (!v6_embedded(a, b->embed, v4))
			return b->cls != NULL ? b->cls : C_RESERVED;
		c = v4_class(v4);
		if (b->cls == NULL || strcmp(c, C_GLOBAL) != 0)
			return c;
		return b->cls;
	}
	/*
	 * Only 2000::/3 is allocated for global unicast.  The rest of the
	 * space is special or unassigned, and nothing unassigned is a
	 * destination the proxy should dial.
	 */
	return (a[0] & 0xe0) == 0x20 ? C_GLOBAL : C_RESERVED;
}

const char *
sbx_np_addr_class(const struct sockaddr *sa)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	if (sa == NULL)
		return C_RESERVED;
	switch (sa->sa_family) {
	case AF_INET:
		sin = (const struct sockaddr_in *)(const void *)sa;
		return v4_class((const unsigned char *)&sin->sin_addr);
	case AF_INET6:
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		return v6_class(sin6->sin6_addr.s6_addr);
	default:
		/* Not an Internet address: nothing to dial. */
		return C_RESERVED;
	}
}

/*
 * The classes grouped into reasons a person can act on: what matters is
 * where the address points (this machine, an internal network, a cloud's
 * credentials), not which RFC reserved it.  Everything not named here is
 * reserved_address (203.0.113.7 of a documentation range included).
 */
static const struct {
	const char	*cls;
	const char	*reason;
} class_reasons[] = {
	{ C_LOOPBACK, SBX_NP_LOOPBACK },
	{ C_PRIVATE, SBX_NP_PRIVATE },
	{ C_ULA, SBX_NP_PRIVATE },
	{ C_CGNAT, SBX_NP_PRIVATE },
	{ C_LINKLOCAL, SBX_NP_LINKLOCAL },
	{ C_METADATA, SBX_NP_METADATA },
	{ C_MULTICAST, SBX_NP_MULTICAST },
	{ C_UNSPEC, SBX_NP_UNSPEC },
};

const char *
sbx_np_addr_reason(const struct sockaddr *sa)
{
	const char	*c = sbx_np_addr_class(sa);
	size_t		 i;

	if (strcmp(c, C_GLOBAL) == 0)
		return NULL;
	for (i = 0; i < sizeof(class_reasons) / sizeof(*class_reasons); i++)
		if (strcmp(class_reasons[i].cls, c) == 0)
			return class_reasons[i].reason;
	return SBX_NP_RESERVED;
}

int
sbx_np_is_addr_reason(const char *reason)
{
	size_t	 i;

	if (reason == NULL)
		return 0;
	if (strcmp(reason, SBX_NP_RESERVED) == 0)
		return 1;
	for (i = 0; i < sizeof(class_reasons) / sizeof(*class_reasons); i++)
		if (strcmp(class_reasons[i].reason, reason) == 0)
			return 1;
	return 0;
}

const char *
sbx_np_addr_hint(const char *reason)
{
	if (!sbx_np_is_addr_reason(reason))
		return NULL;
	if (strcmp(reason, SBX_NP_METADATA) == 0)
		return "only an allowed_cidrs entry naming exactly this "
		    "address allows it";
	return "allow it with allow_private_domains or allowed_cidrs";
}

/* The address as a CIDR would name it: IPv4-mapped IPv6 as IPv4. */
static int
cidr_form(const struct sockaddr *sa, unsigned char a[16])
{
	static const unsigned char	 mapped[12] = { [10] = 0xff,
					    [11] = 0xff };
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;

	memset(a, 0, 16);
	if (sa == NULL)
		return 0;
	if (sa->sa_family == AF_INET) {
		sin = (const struct sockaddr_in *)(const void *)sa;
		memcpy(a, &sin->sin_addr, 4);
		return AF_INET;
	}
	if (sa->sa_family != AF_INET6)
		return 0;
	sin6 = (const struct sockaddr_in6 *)(const void *)sa;
	/*
	 * ::ffff:a.b.c.d is a.b.c.d on the wire (the kernel dials it over
	 * IPv4), so it is the IPv4 ranges that must decide, never a v6
	 * range that happens to cover ::ffff:0:0/96.
	 */
	if (memcmp(sin6->sin6_addr.s6_addr, mapped, 12) == 0) {
		memcpy(a, sin6->sin6_addr.s6_addr + 12, 4);
		return AF_INET;
	}
	memcpy(a, sin6->sin6_addr.s6_addr, 16);
	return AF_INET6;
}

int
sbx_np_cidr_match(const struct sbx_np_cidr *c, const struct sockaddr *sa)
{
	unsigned char	 a[16];
	int		 fam;

	if (c == NULL || (fam = cidr_form(sa, a)) == 0 || fam != c->family)
		return 0;
	return v6_prefix(a, c->addr, c->bits);
}

const char *
sbx_np_addr_check(const struct sbx_netpolicy *np, const char *host,
    const struct sockaddr *sa, char *by, size_t bysize)
{
	const char	*reason;
	size_t		 i;
	int		 meta;

	if (by != NULL && bysize > 0)
		by[0] = '\0';
	if ((reason = sbx_np_addr_reason(sa)) == NULL)
		return NULL;
	/* Nothing opens another family: there is nothing to dial. */
	if (np == NULL || sa == NULL ||
	    (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
		return reason;
	meta = strcmp(reason, SBX_NP_METADATA) == 0;
	/*
	 * The narrowest setting first, so that `by` names it.  A metadata
	 * endpoint answers with the machine's cloud credentials: a range
	 * that merely covers it (169.254.0.0/16 for link-local services)
	 * must not open it, only an entry that is exactly it.
	 */
	for (i = 0; i < np->ncidrs; i++) {
		if (!sbx_np_cidr_match(&np->cidrs[i], sa))
			continue;
		if (meta && np->cidrs[i].bits !=
		    (np->cidrs[i].family == AF_INET ? 32u : 128u))
			continue;
		if (by != NULL)
			snprintf(by, bysize, "allowed_cidrs %s",
			    np->cidrs[i].text);
		return NULL;
	}
	if (meta)
		return reason;
	/* allow_private_domains widens the address check of a name that
	 * is allowlisted already (sbx_np_decide ran first); it is
	 * allow_private for the names it matches. */
	for (i = 0; host != NULL && i < np->nprivate; i++)
		if (sbx_np_match(np->private_domains[i], host)) {
			if (by != NULL)
				snprintf(by, bysize, "allow_private_domains "
				    "%s", np->private_domains[i]);
			return NULL;
		}
	/*
	 * allow_private, the blunt switch (tests that serve on loopback, a
	 * machine whose every destination is internal), opens the special
	 * ranges of IPv4 and IPv6, metadata excepted.
	 */
	if (np->allow_private) {
		if (by != NULL)
			snprintf(by, bysize, "allow_private");
		return NULL;
	}
	return reason;
}

const char *
sbx_np_addrs_check(const struct sbx_netpolicy *np, const char *host,
    const struct sockaddr_storage *addrs, int n, int *bad)
{
	const char	*why;
	int		 i;

	*bad = 0;
	for (i = 0; i < n; i++)
		if ((why = sbx_np_addr_check(np, host,
		    (const struct sockaddr *)(const void *)&addrs[i], NULL,
		    0)) != NULL) {
			*bad = i;
			return why;
		}
	return NULL;
}

const char *
sbx_np_addr_text(const struct sockaddr *sa, char *buf, size_t size)
{
	const void	*a;

	if (sa != NULL && sa->sa_family == AF_INET)
		a = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa != NULL && sa->sa_family == AF_INET6)
		a = &((const struct sockaddr_in6 *)(const void *)sa)->
		    sin6_addr;
	else
		a = NULL;
	if (a == NULL || size < 2 ||
	    inet_ntop(sa->sa_family, a, buf, (socklen_t)size) == NULL)
		snprintf(buf, size, "?");
	return buf;
}

int
sbx_np_cidr_parse(const char *s, size_t len, struct sbx_np_cidr *c,
    const char **why)
{
	char		 buf[INET6_ADDRSTRLEN + 8], txt[INET6_ADDRSTRLEN];
	const char	*slash;
	unsigned char	 a[16], net[16];
	unsigned	 bits, max, i;
	size_t		 alen;

	memset(c, 0, sizeof(*c));
	*why = "is not an address range such as 10.0.0.0/8 or fd00::/8";
	if (s == NULL || len == 0 || len >= sizeof(buf) ||
	    memchr(s, '\0', len) != NULL)
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	slash = strchr(buf, '/');
	alen = slash != NULL ? (size_t)(slash - buf) : len;
	buf[alen] = '\0';
	/* inet_pton(3): a dotted quad of four decimals, or IPv6; never
	 * inet_aton(3)'s 10.1 or 012.0.0.1. */
	memset(a, 0, sizeof(a));
	if (inet_pton(AF_INET, buf, a) == 1) {
		c->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, a) == 1) {
		c->family = AF_INET6;
		max = 128;
		if (a[10] == 0xff && a[11] == 0xff &&
		    memcmp(a, "\0\0\0\0\0\0\0\0\0\0", 10) == 0) {
			*why = "is an IPv4-mapped IPv6 range; write it as "
			    "IPv4 (mapped addresses are matched as IPv4)";
			return -1;
		}
	} else
		return -1;
	if (slash == NULL)
		bits = max;
	else {
		/* 1..max in decimal, no sign, no leading zero, no space. */
		const char	*p = slash + 1;
		size_t		 n = len - alen - 1;

		if (n == 0 || n > 3 || (p[0] == '0' && n > 1))
			return -1;
		for (bits = 0, i = 0; i < n; i++) {
			if (!is_digit((unsigned char)p[i]))
				return -1;
			bits = bits * 10 + (unsigned)(p[i] - '0');
		}
		if (bits > max) {
			*why = c->family == AF_INET ? "has a prefix length "
			    "over 32" : "has a prefix length over 128";
			return -1;
		}
		if (bits == 0) {
			*why = "would allow every address; that is "
			    "`allow_private: true`";
			return -1;
		}
	}
	/* Host bits set is a mistake (10.1.2.3/8 meant 10.0.0.0/8, or
	 * 10.1.2.3/32?): refused rather than guessed. */
	memset(net, 0, sizeof(net));
	for (i = 0; i < bits; i++)
		if (a[i / 8] & (0x80 >> (i % 8)))
			net[i / 8] |= (unsigned char)(0x80 >> (i % 8));
	if (memcmp(a, net, sizeof(a)) != 0) {
		*why = "has host bits set after the prefix length";
		return -1;
	}
	memcpy(c->addr, net, sizeof(net));
	c->bits = bits;
	inet_ntop(c->family, c->addr, txt, sizeof(txt));
	snprintf(c->text, sizeof(c->text), "%s/%u", txt, bits);
	*why = NULL;
	return 0;
}

static struct sbx_np_override *
find_override(struct sbx_np_override *v, size_t nv, const char *host)
{
	size_t	 i, n;

	if (host == NULL)
		return NULL;
	n = strlen(host);
	for (i = 0; i < nv; i++)
		if (strlen(v[i].name) == n && ascii_eq(v[i].name, host, n))
			return &v[i];
	return NULL;
}

const struct sbx_np_override *
sbx_np_override(const struct sbx_netpolicy *np, const char *host)
{
	if (np == NULL)
		return NULL;
	return find_override(np->resolve, np->nresolve, host);
}

void
sbx_np_init(struct sbx_netpolicy *np)
{
	memset(np, 0, sizeof(*np));
	/* Should this fail, no port is allowed: closed, not open. */
	if ((np->ports = malloc(2 * sizeof(*np->ports))) != NULL) {
		np->ports[0] = 80;
		np->ports[1] = 443;
		np->nports = 2;
	}
}

static void
strv_free(char **v, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
sbx_np_free(struct sbx_netpolicy *np)
{
	size_t	 i;

	if (np == NULL)
		return;
	strv_free(np->allowed, np->nallowed);
	strv_free(np->denied, np->ndenied);
	free(np->ports);
	for (i = 0; i < np->nresolve; i++)
		free(np->resolve[i].name);
	free(np->resolve);
	strv_free(np->private_domains, np->nprivate);
	free(np->cidrs);
	memset(np, 0, sizeof(*np));
}

/*
 * A bounded, printable copy of an untrusted string for a message: bytes
 * outside printable ASCII are shown as \xNN, so that a hostile config or
 * argument cannot put escape sequences on the user's terminal.
 */
static const char *
printable(char *buf, size_t size, const char *s, size_t len)
{
	static const char	 hex[] = "0123456789abcdef";
	size_t			 i, o = 0;
	unsigned char		 c;

	for (i = 0; i < len; i++) {
		if (o + 8 > size) {
			memcpy(buf + o, "...", 4);
			return buf;
		}
		c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '\\' || c == '"') {
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 0xf];
		} else
			buf[o++] = (char)c;
	}
	buf[o] = '\0';
	return buf;
}

/*
 * Check and normalise a policy entry into out: a name, or "*." and a name,
 * then ":PORT" when flags has E_PORT; "*:PORT" when it has E_STAR.
 * Returns NULL, or why it is refused (the end of a sentence).
 */
static const char *
entry_check(const char *s, size_t len, char out[ENTRY_MAX + 1], int flags)
{
	const struct sbx_psl	*psl;
	struct sbx_error	 pe;
	const char		*r, *colon;
	size_t			 i, off = 0;
	unsigned		 port = 0;

	out[0] = '\0';
	if (memchr(s, '\0', len) == NULL && len >= 3 &&
	    memmem(s, len, "://", 3) != NULL)
		return "has a scheme; write the host name alone, as in "
		    "example.com or example.com:443";
	if (memchr(s, '/', len) != NULL)
		return "has a path; write the host name alone";
	if ((colon = memrchr(s, ':', len)) != NULL && memchr(s, '[', len) ==
	    NULL && memchr(s, ':', (size_t)(colon - s)) == NULL) {
		if (!(flags & E_PORT))
			return "has a port, which this setting does not "
			    "take";
		if (sbx_np_port(colon + 1, len - (size_t)(colon - s) - 1,
		    &port) == -1)
			return "has a port that is not a number from 1 to "
			    "65535";
		len = (size_t)(colon - s);
	}
	if (len == 1 && s[0] == '*') {
		if (port == 0)
			return "is a bare `*`, which would allow every host";
		if (!(flags & E_STAR))
			return "is `*` with a port, which would allow every "
			    "host on that port (only denied_domains may say "
			    "`*:PORT`)";
		snprintf(out, ENTRY_MAX + 1, "*:%u", port);
		return NULL;
	}
	if (len >= 2 && s[0] == '*' && s[1] == '.')
		off = 2;
	r = sbx_np_host(s + off, len - off, out + off);
	if (r != NULL && strcmp(r, SBX_NP_IP_LITERAL) == 0)
		return "is an IP address; the proxy only allows names";
	if (r != NULL) {
		for (i = 0; i < len; i++)
			if ((unsigned char)s[i] >= 0x80)
				return "is not ASCII; write the name in its "
				    "xn-- (punycode) form";
		if (memchr(s + off, '*', len - off) != NULL)
			return "has a wildcard that is not the whole first "
			    "label, as in *.example.com";
		return "is not a valid domain name";
	}
	if (off == 2) {
		/* "*.com" would open a whole top-level domain. */
		if (strchr(out + 2, '.') == NULL)
			return "is a single-label wildcard; name at least "
			    "two labels after `*.`";
		/*
		 * And "*.co.uk" every company of the UK: a wildcard under
		 * a public suffix is refused, and so is every wildcard
		 * when the list cannot be read (fail closed).
		 */
		memset(&pe, 0, sizeof(pe));
		if ((psl = sbx_psl_system(NULL, &pe)) == NULL)
			return "cannot be checked against the public suffix "
			    "list (" SBX_PSL_PATH " is missing: install "
			    "Debian's `publicsuffix`)";
		if (sbx_psl_is_suffix(psl, out + 2))
			return "is a wildcard under a public suffix, which "
			    "would allow every domain registered there; name "
			    "a domain below it";
		out[0] = '*';
		out[1] = '.';
	}
	if (port != 0)
		snprintf(out + strlen(out), ENTRY_MAX + 1 - strlen(out), ":%u",
		    port);
	return NULL;
}

/*
 * Make room for `more` elements after the n of a vector.  On failure the
 * vector is as it was (errno ENOMEM); on success its count is unchanged
 * and the caller fills the room.
 */
static int
reserve_strv(char ***v, size_t n, size_t more)
{
	char	**p;

	if (more == 0)
		return 0;
	if (more > SIZE_MAX / sizeof(*p) - n) {
		errno = ENOMEM;
		return -1;
	}
	if ((p = realloc(*v, (n + more) * sizeof(*p))) == NULL)
		return -1;
	*v = p;
	return 0;
}

static int
reserve_ovr(struct sbx_np_override **v, size_t n, size_t more)
{
	struct sbx_np_override	*p;

	if (more == 0)
		return 0;
	if (more > SIZE_MAX / sizeof(*p) - n) {
		errno = ENOMEM;
		return -1;
	}
	if ((p = realloc(*v, (n + more) * sizeof(*p))) == NULL)
		return -1;
	*v = p;
	return 0;
}

/* Read allowed_domains, denied_domains or allow_private_domains into *v
 * (appended).  `pfx` is what messages put before the key ("proxy."). */
static int
load_entries_pfx(const json_t *agent, const char *pfx, const char *key,
    int flags, char ***v, size_t *n, const char *origin, struct sbx_error *e)
{
	json_t		*a, *it;
	const char	*s, *why;
	char		 norm[ENTRY_MAX + 1], shown[128];
	size_t		 i, len;

	if ((a = json_object_get(agent, key)) == NULL)
		return 0;
	if (!json_is_array(a))
		return CFG_ERR(e, "%s: `%s%s` must be an array of domain "
		    "names", origin, pfx, key);
	if (reserve_strv(v, *n, json_array_size(a)) == -1)
		return sbx_error_sys(e, "nomem", "%s: `%s`", origin, key);
	json_array_foreach(a, i, it) {
		if (!json_is_string(it))
			return CFG_ERR(e, "%s: `%s%s` must be an array of "
			    "domain names (element %zu is not a string)",
			    origin, pfx, key, i);
		s = json_string_value(it);
		len = json_string_length(it);
		if ((why = entry_check(s, len, norm, flags)) != NULL)
			return CFG_ERR(e, "%s: `%s%s[%zu]` \"%s\" %s", origin,
			    pfx, key, i, printable(shown, sizeof(shown), s,
			    len), why);
		if (((*v)[*n] = strdup(norm)) == NULL)
			return sbx_error_sys(e, "nomem", "%s: `%s`", origin,
			    key);
		(*n)++;
	}
	return 0;
}

static int
load_entries(const json_t *agent, const char *key, int flags, char ***v,
    size_t *n, const char *origin, struct sbx_error *e)
{
	return load_entries_pfx(agent, "", key, flags, v, n, origin, e);
}

/* Read allowed_cidrs into *v (appended). */
static int
load_cidrs(const json_t *obj, const char *pfx, struct sbx_np_cidr **v,
    size_t *n, const char *origin, struct sbx_error *e)
{
	struct sbx_np_cidr	*p;
	json_t			*a, *it;
	const char		*why;
	char			 shown[128];
	size_t			 i, more;

	if ((a = json_object_get(obj, "allowed_cidrs")) == NULL)
		return 0;
	if (!json_is_array(a))
		return CFG_ERR(e, "%s: `%sallowed_cidrs` must be an array of "
		    "address ranges such as \"10.0.0.0/8\"", origin, pfx);
	more = json_array_size(a);
	if (more > 0) {
		if (more > SIZE_MAX / sizeof(*p) - *n ||
		    (p = realloc(*v, (*n + more) * sizeof(*p))) == NULL)
			return sbx_error_sys(e, "nomem",
			    "%s: `%sallowed_cidrs`", origin, pfx);
		*v = p;
	}
	json_array_foreach(a, i, it) {
		if (!json_is_string(it))
			return CFG_ERR(e, "%s: `%sallowed_cidrs` must be an "
			    "array of strings (element %zu is not a string)",
			    origin, pfx, i);
		if (sbx_np_cidr_parse(json_string_value(it),
		    json_string_length(it), &(*v)[*n], &why) == -1)
			return CFG_ERR(e, "%s: `%sallowed_cidrs[%zu]` \"%s\" "
			    "%s", origin, pfx, i, printable(shown,
			    sizeof(shown), json_string_value(it),
			    json_string_length(it)), why);
		(*n)++;
	}
	return 0;
}

/* Append t's allow_private_domains and allowed_cidrs to np (nothing
 * fails once this succeeded; t's vectors are taken). */
static int
move_private(struct sbx_netpolicy *np, struct sbx_netpolicy *t)
{
	struct sbx_np_cidr	*p;

	if (reserve_strv(&np->private_domains, np->nprivate, t->nprivate) ==
	    -1)
		return -1;
	if (t->ncidrs > 0) {
		if ((p = realloc(np->cidrs, (np->ncidrs + t->ncidrs) *
		    sizeof(*p))) == NULL)
			return -1;
		np->cidrs = p;
		memcpy(np->cidrs + np->ncidrs, t->cidrs, t->ncidrs *
		    sizeof(*p));
		np->ncidrs += t->ncidrs;
	}
	if (t->nprivate > 0)
		memcpy(np->private_domains + np->nprivate, t->private_domains,
		    t->nprivate * sizeof(char *));
	np->nprivate += t->nprivate;
	free(t->private_domains);
	free(t->cidrs);
	t->private_domains = NULL;
	t->cidrs = NULL;
	t->nprivate = t->ncidrs = 0;
	return 0;
}

int
sbx_np_load_global(struct sbx_netpolicy *np, const json_t *proxy,
    struct sbx_error *e)
{
	static const char	 origin[] = "config/sandbox.json";
	struct sbx_netpolicy	 t;

	if (proxy == NULL)
		return 0;
	if (!json_is_object(proxy))
		return CFG_ERR(e, "%s: `proxy` must be an object", origin);
	memset(&t, 0, sizeof(t));
	if (load_entries_pfx(proxy, "proxy.", "allow_private_domains", 0,
	    &t.private_domains, &t.nprivate, origin, e) == -1 ||
	    load_cidrs(proxy, "proxy.", &t.cidrs, &t.ncidrs, origin, e) == -1)
		goto fail;
	if (move_private(np, &t) == -1) {
		sbx_error_sys(e, "nomem", "%s", origin);
		goto fail;
	}
	return 0;
fail:
	sbx_np_free(&t);
	return -1;
}

static int
load_ports(const json_t *a, struct sbx_netpolicy *t, const char *origin,
    struct sbx_error *e)
{
	json_t		*it;
	json_int_t	 v;
	size_t		 i;

	if (!json_is_array(a))
		goto bad;
	/* calloc(3): an empty list still allocates, and checks overflow. */
	if ((t->ports = calloc(json_array_size(a) + 1, sizeof(*t->ports))) ==
	    NULL)
		return sbx_error_sys(e, "nomem", "%s: `allowed_ports`", origin);
	json_array_foreach(a, i, it) {
		/* Integers only: 443.0, "443" and true are mistakes. */
		if (!json_is_integer(it))
			goto bad;
		v = json_integer_value(it);
		if (v < 1 || v > 65535)
			goto bad;
		t->ports[t->nports++] = (uint16_t)v;
	}
	return 0;
bad:
	return CFG_ERR(e, "%s: `allowed_ports` must be an array of integers "
	    "1..65535", origin);
}

/* Add or replace the override of a name in t; the name is taken. */
static int
put_override(struct sbx_netpolicy *t, char *name,
    const struct sockaddr_storage *ss, socklen_t sslen)
{
	struct sbx_np_override	*o;

	if ((o = find_override(t->resolve, t->nresolve, name)) != NULL)
		free(name);
	else {
		if (reserve_ovr(&t->resolve, t->nresolve, 1) == -1)
			return -1;
		o = &t->resolve[t->nresolve++];
		o->name = name;
	}
	memcpy(&o->addr, ss, sizeof(*ss));
	o->addrlen = sslen;
	return 0;
}

static int
load_resolve(const json_t *obj, struct sbx_netpolicy *t, const char *origin,
    struct sbx_error *e)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	socklen_t		 sslen;
	const char		*key, *s;
	json_t			*v;
	char			 name[SBX_NP_HOST_MAX + 1], shown[128], *dup;
	size_t			 keylen;

	if (!json_is_object(obj))
		return CFG_ERR(e, "%s: `resolve` must be an object mapping "
		    "names to IP addresses", origin);
	json_object_keylen_foreach((json_t *)obj, key, keylen, v) {
		/* The key is a name as a request would carry it, exact (no
		 * wildcard): the override stands in for its DNS answer. */
		if ((s = sbx_np_host(key, keylen, name)) != NULL)
			return CFG_ERR(e, "%s: `resolve` key \"%s\" is not a "
			    "%s", origin,
			    printable(shown, sizeof(shown), key, keylen),
			    strcmp(s, SBX_NP_IP_LITERAL) == 0 ?
			    "name but an IP address" : "valid domain name");
		/* Strict forms only (inet_pton(3), not inet_aton(3)). */
		memset(&ss, 0, sizeof(ss));
		s = json_string_value(v);
		sin = (struct sockaddr_in *)(void *)&ss;
		sin6 = (struct sockaddr_in6 *)(void *)&ss;
		if (s != NULL && strlen(s) == json_string_length(v) &&
		    inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
			sin->sin_family = AF_INET;
			sslen = sizeof(*sin);
		} else if (s != NULL && strlen(s) == json_string_length(v) &&
		    inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
			sin6->sin6_family = AF_INET6;
			sslen = sizeof(*sin6);
		} else
			return CFG_ERR(e, "%s: `resolve.%s` must be an IPv4 or "
			    "IPv6 address string", origin, name);
		if ((dup = strdup(name)) == NULL ||
		    put_override(t, dup, &ss, sslen) == -1) {
			free(dup);
			return sbx_error_sys(e, "nomem", "%s: `resolve`",
			    origin);
		}
	}
	return 0;
}

/* Append the n strings of src to *dst, whose room was reserved. */
static void
strv_move(char **dst, size_t *ndst, char **src, size_t n)
{
	if (n > 0)
		memcpy(dst + *ndst, src, n * sizeof(*src));
	*ndst += n;
}

int
sbx_np_load(struct sbx_netpolicy *np, const json_t *agent,
    const char *origin, struct sbx_error *e)
{
	struct sbx_netpolicy	 t;
	struct sbx_np_override	*o;
	json_t			*v;
	size_t			 i;
	int			 have_ports = 0;

	if (agent == NULL)
		return 0;
	if (origin == NULL)
		origin = "agent settings";
	if (!json_is_object(agent))
		return CFG_ERR(e, "%s: agent settings must be an object",
		    origin);
	/*
	 * Everything is read into t and moved into np only once all of it
	 * is valid, so that a refused file leaves np as it was.
	 */
	memset(&t, 0, sizeof(t));
	t.allow_private = np->allow_private;
	if (load_entries(agent, "allowed_domains", E_PORT, &t.allowed,
	    &t.nallowed, origin, e) == -1 ||
	    load_entries(agent, "denied_domains", E_PORT | E_STAR, &t.denied,
	    &t.ndenied, origin, e) == -1 ||
	    load_entries(agent, "allow_private_domains", 0,
	    &t.private_domains, &t.nprivate, origin, e) == -1 ||
	    load_cidrs(agent, "", &t.cidrs, &t.ncidrs, origin, e) == -1)
		goto fail;
	if ((v = json_object_get(agent, "allowed_ports")) != NULL) {
		/* A list given replaces the default 80, 443. */
		have_ports = 1;
		if (load_ports(v, &t, origin, e) == -1)
			goto fail;
	}
	if ((v = json_object_get(agent, "allow_private")) != NULL) {
		if (!json_is_boolean(v)) {
			CFG_ERR(e, "%s: `allow_private` must be true or false",
			    origin);
			goto fail;
		}
		t.allow_private = json_is_true(v);
	}
	if ((v = json_object_get(agent, "resolve")) != NULL &&
	    load_resolve(v, &t, origin, e) == -1)
		goto fail;
	/*
	 * An override maps a name to any address, loopback included, so it
	 * is a way around the private-address check: it is refused unless
	 * that check is off anyway, and the default stays strict.
	 */
	if ((t.nresolve > 0 || np->nresolve > 0) && !t.allow_private) {
		CFG_ERR(e, "%s: `resolve` is for tests only and requires "
		    "`allow_private: true`", origin);
		goto fail;
	}
	if (reserve_strv(&np->allowed, np->nallowed, t.nallowed) == -1 ||
	    reserve_strv(&np->denied, np->ndenied, t.ndenied) == -1 ||
	    reserve_ovr(&np->resolve, np->nresolve, t.nresolve) == -1 ||
	    move_private(np, &t) == -1) {
		sbx_error_sys(e, "nomem", "%s", origin);
		goto fail;
	}
	/* From here on nothing fails. */
	strv_move(np->allowed, &np->nallowed, t.allowed, t.nallowed);
	strv_move(np->denied, &np->ndenied, t.denied, t.ndenied);
	if (have_ports) {
		free(np->ports);
		np->ports = t.ports;
		np->nports = t.nports;
		t.ports = NULL;
	}
	np->allow_private = t.allow_private;
	for (i = 0; i < t.nresolve; i++) {
		/* A later file's override of the same name wins. */
		if ((o = find_override(np->resolve, np->nresolve,
		    t.resolve[i].name)) != NULL) {
			free(o->name);
			*o = t.resolve[i];
		} else
			np->resolve[np->nresolve++] = t.resolve[i];
	}
	free(t.allowed);
	free(t.denied);
	free(t.ports);
	free(t.resolve);
	return 0;
fail:
	sbx_np_free(&t);
	return -1;
}

/* Add one entry to the allowlist or the deny list (flags of
 * entry_check); errors name `field`. */
static int
add_entry(struct sbx_netpolicy *np, const char *entry, int deny,
    const char *field, struct sbx_error *e)
{
	const char	*why;
	char		 norm[ENTRY_MAX + 1], shown[128], *dup;
	char		***v = deny ? &np->denied : &np->allowed;
	size_t		*n = deny ? &np->ndenied : &np->nallowed;

	if (entry == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
		    "invalid_domain", "argument `%s` is missing", field);
	if ((why = entry_check(entry, strlen(entry), norm, deny ?
	    E_PORT | E_STAR : E_PORT)) != NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
		    "invalid_domain", "argument `%s` \"%s\" %s", field,
		    printable(shown, sizeof(shown), entry, strlen(entry)),
		    why);
	if (reserve_strv(v, *n, 1) == -1 || (dup = strdup(norm)) == NULL)
		return sbx_error_sys(e, "nomem", "argument `%s`", field);
	(*v)[(*n)++] = dup;
	return 0;
}

void
sbx_np_allow_reset(struct sbx_netpolicy *np)
{
	strv_free(np->allowed, np->nallowed);
	np->allowed = NULL;
	np->nallowed = 0;
}

void
sbx_np_deny_reset(struct sbx_netpolicy *np)
{
	strv_free(np->denied, np->ndenied);
	np->denied = NULL;
	np->ndenied = 0;
}

int
sbx_np_allow(struct sbx_netpolicy *np, const char *entry, struct sbx_error *e)
{
	return add_entry(np, entry, 0, "allow_domain", e);
}

int
sbx_np_deny(struct sbx_netpolicy *np, const char *entry, struct sbx_error *e)
{
	return add_entry(np, entry, 1, "deny_domain", e);
}
