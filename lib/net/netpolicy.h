/* netpolicy.h: the egress policy of sbx-proxy: which host names an agent
 * may reach, on which ports, and which resolved addresses are refused.
 *
 * Pure logic, no I/O: the proxy parses a request (httpreq.h), asks
 * sbx_np_host() and sbx_np_decide() before any DNS lookup (a denied name
 * is never resolved), then resolves and asks sbx_np_addr_check() of every
 * address before it connects to one of them.  allow_private_domains and
 * allowed_cidrs only ever widen the address check of a name the
 * allowlist already allows: they never add a name to it.
 *
 * Reasons are stable snake_case strings shared by the proxy's 403/400
 * answers (X-Proxy-Error), its log and the envelope's violations.
 */
#ifndef SBX_NETPOLICY_H
#define SBX_NETPOLICY_H

#include <sys/socket.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "error.h"

/* The longest DNS name accepted (without a trailing dot). */
#define SBX_NP_HOST_MAX		253

/* Reasons.  The HTTP status the proxy answers with is in brackets. */
#define SBX_NP_INVALID_HOST	"invalid_host"		/* 400 */
#define SBX_NP_INVALID_PORT	"invalid_port"		/* 400 */
#define SBX_NP_IP_LITERAL	"ip_literal"		/* 403 */
#define SBX_NP_DENIED		"denied_domain"		/* 403 */
#define SBX_NP_NOT_ALLOWED	"not_allowlisted"	/* 403 */
#define SBX_NP_PORT		"port_not_allowed"	/* 403 */
/*
 * A resolved address that is not global is refused with the reason of its
 * class (sbx_np_addr_reason), so that the refusal says what the address
 * is and sbx_np_addr_hint() which setting would allow it.
 */
#define SBX_NP_PRIVATE		"private_address"	/* 403 */
#define SBX_NP_LOOPBACK		"loopback_address"	/* 403 */
#define SBX_NP_LINKLOCAL	"link_local_address"	/* 403 */
#define SBX_NP_METADATA		"metadata_address"	/* 403 */
#define SBX_NP_MULTICAST	"multicast_address"	/* 403 */
#define SBX_NP_UNSPEC		"unspecified_address"	/* 403 */
#define SBX_NP_RESERVED		"reserved_address"	/* 403 */

/* An address range of allowed_cidrs: family, network (host bits zero),
 * prefix length, and the normalised text ("10.0.0.0/8"). */
struct sbx_np_cidr {
	int			 family;	/* AF_INET or AF_INET6 */
	unsigned char		 addr[16];	/* IPv4 in the first 4 */
	unsigned		 bits;
	char			 text[64];
};

/* A test-only name -> address override (agent setting `resolve`). */
struct sbx_np_override {
	char			*name;		/* normalised */
	struct sockaddr_storage	 addr;		/* port 0 */
	socklen_t		 addrlen;
};

struct sbx_netpolicy {
	char			**allowed;	/* normalised entries */
	size_t			  nallowed;
	char			**denied;
	size_t			  ndenied;
	uint16_t		 *ports;	/* default 80, 443 */
	size_t			  nports;
	int			  allow_private;
	struct sbx_np_override	 *resolve;
	size_t			  nresolve;
	char			**private_domains;	/* normalised */
	size_t			  nprivate;
	struct sbx_np_cidr	 *cidrs;
	size_t			  ncidrs;
};

/* Forget the allowed names (a run that brings exactly its own). */
void	sbx_np_allow_reset(struct sbx_netpolicy *);
/* Forget the denied names (sbx srt --control-fd replaces them). */
void	sbx_np_deny_reset(struct sbx_netpolicy *);
/* Defaults: nothing allowed, nothing denied, ports 80 and 443, private
 * addresses refused, no overrides. */
void	 sbx_np_init(struct sbx_netpolicy *);
void	 sbx_np_free(struct sbx_netpolicy *);

/*
 * Load an agent's settings (the object of config/agents/<agent>.json; NULL
 * means defaults) on top of sbx_np_init()'s defaults.  Keys read:
 * allowed_domains, denied_domains (arrays of entries), allowed_ports
 * (array of 1..65535), allow_private (boolean), resolve (object
 * name -> IPv4/IPv6 address string), allow_private_domains (array of
 * entries, as allowed_domains), allowed_cidrs (array of CIDR strings,
 * sbx_np_cidr_parse).  Other keys are ignored (they belong to other parts
 * of sbx).  `origin` names the file in messages.
 *
 * Entries are normalised (ASCII lowercased, one trailing dot stripped) and
 * must then be a valid name (sbx_np_host) or "*." followed by one, then
 * optionally ":PORT" (1..65535) in allowed_domains and denied_domains,
 * where an entry with a port applies to that port alone (one without
 * uses allowed_ports; a denial without denies every port).  denied_domains
 * may also hold "*:PORT" (every host on that port).  Refused: an IP
 * literal, a non-ASCII name (use its xn-- form), "*" alone, "*:PORT" in
 * an allowlist, a scheme or a path, a wildcard whose rest is a public
 * suffix ("*.com", "*.co.uk": psl.h; every wildcard when the list cannot
 * be read), or a wildcard anywhere but the first label: -1, kind
 * invalid_args, field "config", reason "config_invalid".  `resolve` without allow_private true is refused the
 * same way (the default must stay strict).
 */
int	 sbx_np_load(struct sbx_netpolicy *, const json_t *agent,
	    const char *origin, struct sbx_error *);
/*
 * Load the settings of config/sandbox.json's `proxy` object that apply to
 * every agent (allow_private_domains, allowed_cidrs; other keys are the
 * proxy's own and ignored here) on top of np.  NULL means none.  Errors as
 * sbx_np_load, naming `proxy.KEY` of config/sandbox.json.
 */
int	 sbx_np_load_global(struct sbx_netpolicy *, const json_t *proxy,
	    struct sbx_error *);
/*
 * Parse a CIDR strictly: an IPv4 dotted quad or an IPv6 address
 * (inet_pton(3) forms only), '/', a prefix length in decimal without
 * leading zeros (1..32, 1..128), host bits zero.  A bare address is the
 * range of that one address (/32, /128).  Refused: /0 (that is
 * allow_private), IPv4-mapped IPv6 ranges (write the IPv4 form: mapped
 * addresses are matched as IPv4), zones, spaces, anything else.  0, or
 * -1 with *why set to the end of a sentence ("has host bits set...").
 */
int	 sbx_np_cidr_parse(const char *s, size_t len, struct sbx_np_cidr *,
	    const char **why);
/* Is the address in the range?  IPv4-mapped IPv6 addresses
 * (::ffff:a.b.c.d) are matched as the IPv4 address they are. */
int	 sbx_np_cidr_match(const struct sbx_np_cidr *, const struct sockaddr *);
/* Add one allowlist entry (sbx exec --allow-domain D): the same checks as
 * sbx_np_load, failing with field "allow_domain", reason "invalid_domain". */
int	 sbx_np_allow(struct sbx_netpolicy *, const char *entry,
	    struct sbx_error *);
/* Add one deny-list entry (an ask answered deny-always): the checks of
 * denied_domains, failing with field "deny_domain". */
int	 sbx_np_deny(struct sbx_netpolicy *, const char *entry,
	    struct sbx_error *);

/*
 * Validate and normalise a request host (no port, no brackets expected,
 * though brackets are recognised so that "[::1]" reports ip_literal).
 * On success returns NULL and writes the lowercased name without one
 * trailing dot to out.  Otherwise returns SBX_NP_INVALID_HOST (empty,
 * over 253 characters, a label over 63 or empty, a character other than
 * ASCII letters, digits, '-' and '.', a label starting or ending with '-',
 * an embedded NUL since len counts bytes) or SBX_NP_IP_LITERAL (every
 * spelling of an address: dotted, decimal, hex, octal, short forms such as
 * 127.1, any name whose last label is numeric or 0x-hex, IPv6 with or
 * without brackets, IPv4-mapped).
 */
const char *sbx_np_host(const char *in, size_t len,
	    char out[SBX_NP_HOST_MAX + 1]);
/* Parse a port: 1..65535, decimal digits only, no sign, no leading zero.
 * 0 and fills *port, or -1. */
int	 sbx_np_port(const char *s, size_t len, unsigned *port);
/* Does a normalised host match a normalised entry's name (its port, if
 * any, aside)?  Exact entries match exactly; "*.example.com" matches
 * every strict subdomain, at any depth (a.example.com, a.b.example.com),
 * never example.com itself; "*" (of "*:PORT") every host. */
int	 sbx_np_match(const char *entry, const char *host);
/* Is the port in allowed_ports? */
int	 sbx_np_port_listed(const struct sbx_netpolicy *, unsigned port);
/* The decision for a normalised host and a port: NULL = allowed, else
 * SBX_NP_DENIED (a denied_domains entry matches the host, and the port
 * when it names one), SBX_NP_NOT_ALLOWED (no allowlist entry matches;
 * an empty allowlist denies everything) or SBX_NP_PORT (entries match
 * the host, none allows the port). */
const char *sbx_np_decide(const struct sbx_netpolicy *, const char *host,
	    unsigned port);
/*
 * The class of an address: "global" or one of "unspecified", "loopback",
 * "private" (RFC 1918), "cgnat" (100.64/10), "link_local" (169.254/16,
 * fe80::/10), "multicast", "reserved" (240/4 and other IANA special
 * purpose blocks), "broadcast", "unique_local" (fc00::/7), "benchmark",
 * "documentation"...  IPv4-mapped (::ffff:a.b.c.d), IPv4-compatible
 * (::a.b.c.d), NAT64 (64:ff9b::/96, 64:ff9b:1::/48), 6to4 (2002::/16)
 * and Teredo (2001::/32) forms are classified by the IPv4 address they
 * carry (an embedded non-global address makes the whole address
 * non-global).
 */
const char *sbx_np_addr_class(const struct sockaddr *);
/*
 * The class of an address as a refusal reason: NULL for a global address,
 * else SBX_NP_LOOPBACK (127/8, ::1), SBX_NP_PRIVATE (RFC 1918, fc00::/7,
 * CGNAT 100.64/10), SBX_NP_LINKLOCAL (169.254/16, fe80::/10),
 * SBX_NP_METADATA (the cloud metadata endpoints: 169.254.169.254,
 * 169.254.170.2, 169.254.170.23, 100.100.100.200, fd00:ec2::254,
 * fd00:ec2::23), SBX_NP_MULTICAST, SBX_NP_UNSPEC (0/8, ::) or
 * SBX_NP_RESERVED (documentation, benchmark, broadcast, 240/4 and every
 * other special or unassigned range, and anything not IPv4 or IPv6).
 */
const char *sbx_np_addr_reason(const struct sockaddr *);
/*
 * May the address be dialled for this (allowlisted, normalised) host?
 * NULL when it may: it is global, or in a range of allowed_cidrs, or the
 * host matches allow_private_domains, or allow_private is set.  A
 * metadata address is dialled only when an allowed_cidrs entry is exactly
 * that address (/32, /128): neither allow_private, allow_private_domains
 * nor a wider range opens it.  Otherwise the reason (sbx_np_addr_reason).
 * When by is not NULL it receives what allowed a non-global address
 * ("allowed_cidrs 10.0.0.0/8", "allow_private_domains *.corp.example",
 * "allow_private"), or "" (global, or refused).
 */
const char *sbx_np_addr_check(const struct sbx_netpolicy *, const char *host,
	    const struct sockaddr *, char *by, size_t bysize);
/* sbx_np_addr_check() of n addresses, in order: NULL when every one may
 * be dialled, else the reason of the first that may not (its index in
 * *bad). */
const char *sbx_np_addrs_check(const struct sbx_netpolicy *, const char *host,
	    const struct sockaddr_storage *, int n, int *bad);
/* An address as text (inet_ntop(3); "?" for another family). */
const char *sbx_np_addr_text(const struct sockaddr *, char *buf, size_t size);
/* What would allow an address refused with this reason, for people (a
 * clause: "allow it with allow_private_domains or allowed_cidrs"), or
 * NULL when nothing can. */
const char *sbx_np_addr_hint(const char *reason);
/* Is this reason one of an address class (sbx_np_addr_reason)? */
int	 sbx_np_is_addr_reason(const char *reason);
/* The override for a normalised host, or NULL. */
const struct sbx_np_override *sbx_np_override(const struct sbx_netpolicy *,
	    const char *host);

#endif
