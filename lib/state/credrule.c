/*
 * credrule.c: credential rules (issue 34): one rule's JSON form parsed and
 * checked, made again, matched against a host and port; placeholders.
 */
#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "credrule.h"
#include "secret.h"

/* The keys of the settings' form. */
static const char *const rule_keys[] = { "secret", "hosts", "header",
	"basic_user", "query" };

/*
 * Headers a template may not set: the ones that frame or route the
 * request (Host, the lengths, hop-by-hop headers) would let a rule
 * rewrite where and how much goes, not only who is asking; proxy headers
 * are the proxy's own.
 */
static const char *const forbidden_headers[] = { "host", "content-length",
	"transfer-encoding", "connection", "keep-alive", "te", "trailer",
	"upgrade", "expect", "cookie" };

static int
bad(struct sbx_error *e, const char *where, const char *reason,
    const char *what)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials", reason,
	    "%s: %s", where, what);
}

/* An HTTP token (RFC 9110 tchar). */
static int
is_token(const char *s, size_t n)
{
	size_t	 i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!isalnum(c) && strchr("!#$%&'*+-.^_`|~", c) == NULL)
			return 0;
	}
	return 1;
}

/* A query parameter's name: unreserved characters only (RFC 3986), so
 * that it is found in a target whatever its encoding. */
static int
is_qname(const char *s)
{
	size_t	 i;

	if (*s == '\0' || strlen(s) >= 64)
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!isalnum((unsigned char)s[i]) && strchr("-._~", s[i]) ==
		    NULL)
			return 0;
	return 1;
}

/* Printable ASCII and spaces, no control characters: what goes in a
 * header line as it is. */
static int
is_vchar(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return 0;
	return 1;
}

/* A host name (letters, digits, hyphens, dots; labels of 1-63) or an IP
 * literal, lowercased into out. */
static int
host_name(const char *s, size_t n, char *out, size_t outsz)
{
	unsigned char	 a[16];
	char		 tmp[64];
	size_t		 i, lab = 0;

	if (n == 0 || n >= outsz || n > 253)
		return -1;
	if (s[0] == '[') {
		/* [v6] */
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(tmp))
			return -1;
		memcpy(tmp, s + 1, n - 2);
		tmp[n - 2] = '\0';
		if (inet_pton(AF_INET6, tmp, a) != 1)
			return -1;
		inet_ntop(AF_INET6, a, out, (socklen_t)outsz);
		return 0;
	}
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (lab == 0)
				return -1;
			lab = 0;
			out[i] = '.';
			continue;
		}
		if (!isalnum(c) && c != '-')
			return -1;
		if (++lab > 63)
			return -1;
		out[i] = (char)tolower(c);
	}
	if (lab == 0)
		return -1;
	out[n] = '\0';
	if (out[0] == '-' || strstr(out, ".-") != NULL ||
	    strstr(out, "-.") != NULL || out[n - 1] == '-')
		return -1;
	return 0;
}

/* "name", "*.name", with ":port" (1-65535) or without (443); IPv6 in
 * brackets. */
static int
parse_host(const char *s, struct sbx_cred_host *h)
{
	const char	*colon, *end;
	char		*ep;
	long		 port = 443;
	size_t		 n;

	memset(h, 0, sizeof(*h));
	if (strncmp(s, "*.", 2) == 0) {
		h->wildcard = 1;
		s += 2;
	}
	if (s[0] == '[') {
		if ((end = strchr(s, ']')) == NULL || h->wildcard)
			return -1;
		colon = end[1] == ':' ? end + 1 : NULL;
		if (end[1] != '\0' && colon == NULL)
			return -1;
		n = (size_t)(end - s) + 1;
	} else {
		colon = strchr(s, ':');
		n = colon != NULL ? (size_t)(colon - s) : strlen(s);
	}
	if (colon != NULL) {
		if (!isdigit((unsigned char)colon[1]))
			return -1;
		port = strtol(colon + 1, &ep, 10);
		if (*ep != '\0' || port < 1 || port > 65535)
			return -1;
	}
	if (host_name(s, n, h->name, sizeof(h->name)) == -1)
		return -1;
	/* A wildcard over a single label would be a whole TLD. */
	if (h->wildcard && strchr(h->name, '.') == NULL)
		return -1;
	h->port = (unsigned short)port;
	return 0;
}

/* "Name: template" */
static int
parse_header(const char *s, struct sbx_credrule *r, const char *where,
    struct sbx_error *e)
{
	const char	*colon, *v, *p;
	size_t		 n, i;
	char		 lname[64];

	if ((colon = strchr(s, ':')) == NULL)
		return bad(e, where, "bad_header",
		    "header must be \"Name: value with {}\"");
	n = (size_t)(colon - s);
	if (!is_token(s, n) || n >= sizeof(r->hname))
		return bad(e, where, "bad_header",
		    "header name is not an HTTP token");
	for (i = 0; i < n; i++)
		lname[i] = (char)tolower((unsigned char)s[i]);
	lname[n] = '\0';
	for (i = 0; i < sizeof(forbidden_headers) /
	    sizeof(*forbidden_headers); i++)
		if (strcmp(lname, forbidden_headers[i]) == 0)
			return bad(e, where, "bad_header",
			    "a credential cannot go in this header");
	if (strncmp(lname, "proxy-", 6) == 0)
		return bad(e, where, "bad_header",
		    "a credential cannot go in a proxy header");
	v = colon + 1;
	while (*v == ' ' || *v == '\t')
		v++;
	if (!is_vchar(v) || strlen(v) >= sizeof(r->tmpl))
		return bad(e, where, "bad_header",
		    "header value has control characters or is too long");
	if ((p = strstr(v, "{}")) == NULL || strstr(p + 2, "{}") != NULL)
		return bad(e, where, "bad_header",
		    "header value must hold {} exactly once");
	memcpy(r->hname, s, n);
	r->hname[n] = '\0';
	snprintf(r->tmpl, sizeof(r->tmpl), "%s", v);
	r->kind = SBX_CRED_HEADER;
	return 0;
}

int
sbx_credrule_parse(const json_t *o, const char *where, struct sbx_credrule *r,
    struct sbx_error *e)
{
	struct sbx_error	 se;
	const char		*k, *secret, *s;
	json_t			*v, *hosts;
	size_t			 i, j, nwhere = 0;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(o))
		return bad(e, where, "malformed", "a rule is an object");
	json_object_foreach ((json_t *)o, k, v) {
		for (i = 0; i < sizeof(rule_keys) / sizeof(*rule_keys); i++)
			if (strcmp(k, rule_keys[i]) == 0)
				break;
		if (i == sizeof(rule_keys) / sizeof(*rule_keys))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "credentials", "unknown_key", "%s: unknown key %s",
			    where, k);
		if (strcmp(k, "hosts") != 0 && !json_is_string(v))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "credentials", "malformed", "%s: %s must be a "
			    "string", where, k);
	}
	secret = json_string_value(json_object_get(o, "secret"));
	memset(&se, 0, sizeof(se));
	if (secret == NULL)
		return bad(e, where, "missing", "secret is required");
	if (sbx_secret_name_valid(secret, &se) == -1)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
		    "bad_secret", "%s: secret: %s", where, se.message);
	snprintf(r->secret, sizeof(r->secret), "%s", secret);
	hosts = json_object_get(o, "hosts");
	if (!json_is_array(hosts) || json_array_size(hosts) == 0)
		return bad(e, where, "missing",
		    "hosts must be a non-empty array of names");
	if (json_array_size(hosts) > SBX_CRED_HOSTS_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
		    "too_many", "%s: at most %d hosts", where,
		    SBX_CRED_HOSTS_MAX);
	json_array_foreach (hosts, i, v) {
		if ((s = json_string_value(v)) == NULL ||
		    parse_host(s, &r->hosts[r->nhosts]) == -1)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "credentials", "bad_host", "%s: hosts[%zu]: not "
			    "a host name, *.name or [IPv6] with an optional "
			    ":port", where, i);
		for (j = 0; j < r->nhosts; j++)
			if (memcmp(&r->hosts[j], &r->hosts[r->nhosts],
			    sizeof(r->hosts[j])) == 0)
				break;
		if (j == r->nhosts)
			r->nhosts++;
	}
	if ((s = json_string_value(json_object_get(o, "header"))) != NULL) {
		nwhere++;
		if (parse_header(s, r, where, e) == -1)
			return -1;
	}
	if ((s = json_string_value(json_object_get(o, "basic_user"))) !=
	    NULL) {
		nwhere++;
		/* user:value: a colon in the user would move the split. */
		if (*s == '\0' || strchr(s, ':') != NULL || !is_vchar(s) ||
		    strlen(s) >= sizeof(r->user))
			return bad(e, where, "bad_user", "basic_user must be "
			    "printable, without a colon");
		snprintf(r->user, sizeof(r->user), "%s", s);
		snprintf(r->hname, sizeof(r->hname), "Authorization");
		r->kind = SBX_CRED_BASIC;
	}
	if ((s = json_string_value(json_object_get(o, "query"))) != NULL) {
		nwhere++;
		if (!is_qname(s))
			return bad(e, where, "bad_query", "query must be a "
			    "parameter name of letters, digits and -._~");
		snprintf(r->qname, sizeof(r->qname), "%s", s);
		r->kind = SBX_CRED_QUERY;
	}
	if (nwhere != 1)
		return bad(e, where, "bad_where",
		    "exactly one of header, basic_user, query");
	return 0;
}

json_t *
sbx_credrule_json(const struct sbx_credrule *r)
{
	json_t	*o, *h;
	char	 b[600];
	size_t	 i;

	h = json_array();
	for (i = 0; i < r->nhosts; i++) {
		const struct sbx_cred_host *x = &r->hosts[i];
		int v6 = strchr(x->name, ':') != NULL;

		if (x->port == 443)
			snprintf(b, sizeof(b), "%s%s%s%s", x->wildcard ? "*." :
			    "", v6 ? "[" : "", x->name, v6 ? "]" : "");
		else
			snprintf(b, sizeof(b), "%s%s%s%s:%u", x->wildcard ?
			    "*." : "", v6 ? "[" : "", x->name, v6 ? "]" : "",
			    x->port);
		json_array_append_new(h, json_string(b));
	}
	o = json_pack("{s:s,s:o}", "secret", r->secret, "hosts", h);
	if (o == NULL)
		return NULL;
	switch (r->kind) {
	case SBX_CRED_HEADER:
		snprintf(b, sizeof(b), "%s: %s", r->hname, r->tmpl);
		json_object_set_new(o, "header", json_string(b));
		break;
	case SBX_CRED_BASIC:
		json_object_set_new(o, "basic_user", json_string(r->user));
		break;
	case SBX_CRED_QUERY:
		json_object_set_new(o, "query", json_string(r->qname));
		break;
	}
	return o;
}

int
sbx_credrule_match(const struct sbx_credrule *r, const char *host,
    unsigned short port)
{
	size_t	 i, hn, nn;

	hn = strlen(host);
	for (i = 0; i < r->nhosts; i++) {
		const struct sbx_cred_host *x = &r->hosts[i];

		if (x->port != port)
			continue;
		if (!x->wildcard) {
			if (strcmp(x->name, host) == 0)
				return 1;
			continue;
		}
		/* Strictly under name: "a.b.example.com" for
		 * "*.example.com", never "example.com" itself nor
		 * "badexample.com". */
		nn = strlen(x->name);
		if (hn > nn + 1 && host[hn - nn - 1] == '.' &&
		    strcmp(host + hn - nn, x->name) == 0)
			return 1;
	}
	return 0;
}

void
sbx_credrule_placeholder(const char *name, char *out)
{
	unsigned char	 rnd[SBX_CRED_RAND_HEX / 2];
	char		 hex[SBX_CRED_RAND_HEX + 1];

	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(hex, sizeof(hex), rnd, sizeof(rnd));
	snprintf(out, SBX_CRED_PLACEHOLDER_MAX + 1, "%s%s-%s", SBX_CRED_PREFIX,
	    hex, name);
}

int
sbx_credrule_placeholder_ok(const struct sbx_credrule *r, const char *ph)
{
	size_t	 i, n = strlen(SBX_CRED_PREFIX);

	if (strncmp(ph, SBX_CRED_PREFIX, n) != 0)
		return 0;
	for (i = 0; i < SBX_CRED_RAND_HEX; i++)
		if (!isxdigit((unsigned char)ph[n + i]) ||
		    isupper((unsigned char)ph[n + i]))
			return 0;
	return ph[n + i] == '-' && strcmp(ph + n + i + 1, r->secret) == 0;
}
