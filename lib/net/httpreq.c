/*
 * httpreq.c: the request-head parser of sbx-proxy and its TLS ClientHello
 * reader.
 *
 * Both read bytes straight from the sandbox, that is from whoever we are
 * defending against.  The rules are deliberately narrower than RFC 9112
 * allows: whatever two HTTP implementations could read two ways (line
 * endings, folding, framing, which Host wins, where the authority ends) is
 * refused rather than interpreted, because the proxy checks one request
 * and the upstream server would act on another (HOSTILE-CASES NP-10 to
 * NP-14).
 *
 * The parser keeps no state between calls: it is handed everything
 * received so far and reads it again from the start.  It reads line by
 * line and reports the first fault it meets, so a refusal decided on a
 * prefix is the refusal the whole head would get, and the caps are
 * checked on the bytes seen so far so that a client can never make the
 * proxy hold more than SBX_HTTP_HEAD_MAX bytes of a head.
 *
 * Nothing here uses str*() on the input: it may contain NUL bytes.
 */
#include <stdint.h>
#include <string.h>

#include "httpreq.h"

/* Verdicts: the internal answer of every step. */
enum {
	V_OK = 0,
	V_MORE,
	V_BAD_REQUEST_LINE,
	V_BAD_VERSION,
	V_ORIGIN_FORM,
	V_BAD_SCHEME,
	V_USERINFO,
	V_BAD_AUTHORITY,
	V_BAD_PORT,
	V_HOST_MISMATCH,
	V_MISSING_HOST,
	V_DUPLICATE_HOST,
	V_TRANSFER_ENCODING,
	V_BAD_CONTENT_LENGTH,
	V_UPGRADE,
	V_OBS_FOLD,
	V_BARE_CR,
	V_BARE_LF,
	V_BAD_HEADER,
	V_BODY_ON_CONNECT,
	V_LINE_TOO_LONG,
	V_HEAD_TOO_LARGE,
	V_TOO_MANY_HEADERS,
	V_BAD_METHOD,
	V_TUNNEL_NOT_HTTP,
	V_TUNNEL_HOST,
	V_COUNT
};

/* clang-format off */
static const struct {
	const char	*reason;
	int		 status;
} verdicts[V_COUNT] = {
	[V_BAD_REQUEST_LINE] = { "bad_request_line", 400 },
	[V_BAD_VERSION] = { "bad_version", 400 },
	[V_ORIGIN_FORM] = { "origin_form", 400 },
	[V_BAD_SCHEME] = { "bad_scheme", 400 },
	[V_USERINFO] = { "userinfo", 400 },
	[V_BAD_AUTHORITY] = { "bad_authority", 400 },
	[V_BAD_PORT] = { "bad_port", 400 },
	[V_HOST_MISMATCH] = { "host_mismatch", 400 },
	[V_MISSING_HOST] = { "missing_host", 400 },
	[V_DUPLICATE_HOST] = { "duplicate_host", 400 },
	[V_TRANSFER_ENCODING] = { "transfer_encoding", 400 },
	[V_BAD_CONTENT_LENGTH] = { "bad_content_length", 400 },
	[V_UPGRADE] = { "upgrade", 400 },
	[V_OBS_FOLD] = { "obs_fold", 400 },
	[V_BARE_CR] = { "bare_cr", 400 },
	[V_BARE_LF] = { "bare_lf", 400 },
	[V_BAD_HEADER] = { "bad_header", 400 },
	[V_BODY_ON_CONNECT] = { "body_on_connect", 400 },
	[V_LINE_TOO_LONG] = { "line_too_long", 414 },
	[V_HEAD_TOO_LARGE] = { "head_too_large", 431 },
	[V_TOO_MANY_HEADERS] = { "too_many_headers", 431 },
	[V_BAD_METHOD] = { "bad_method", 405 },
	[V_TUNNEL_NOT_HTTP] = { "tunnel_not_tls_or_http", 400 },
	[V_TUNNEL_HOST] = { "tunnel_host_mismatch", 403 },
};
/* clang-format on */

/* What the header lines have shown so far. */
struct head {
	int	    tunnel; /* first request in a CONNECT tunnel */
	int	    line_ok; /* the request line was read */
	int	    http10;
	const char *auth; /* the URI authority as sent */
	size_t	    authlen;
	int	    nhost;
	int	    te;
	int	    ncl;
	int	    nauth;
	int	    nheaders;
	char	   *w; /* the rewritten head being built */
	size_t	    wlen;
	size_t	    wcap;
	int	    woverflow;
};

/* host[:port] split out of a request target or a Host value. */
struct authority {
	const char *host;
	size_t	    hostlen;
	unsigned    port;
	int	    has_port;
};

/* clang-format off */
static const char *const methods[] = {
	"CONNECT", "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS",
};
/* clang-format on */

/* ASCII only, on purpose: no locale may change what a byte means. */
static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_hex(int c)
{
	return is_digit(c) || (lower(c) >= 'a' && lower(c) <= 'f');
}

static int
is_scheme_char(int c)
{
	return is_alpha(c) || is_digit(c) || c == '+' || c == '-' || c == '.';
}

/* RFC 9110 tchar. */
static int
is_tchar(int c)
{
	if (is_alpha(c) || is_digit(c))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int
is_token(const char *s, size_t n)
{
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (!is_tchar((unsigned char)s[i]))
			return 0;
	return 1;
}

static int
ci_equal(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t i;

	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return 0;
	return 1;
}

static int
name_is(const char *s, size_t n, const char *name)
{
	return ci_equal(s, n, name, strlen(name));
}

/* A header name as it came (trailing blanks allowed), against name. */
static int
trimmed_is(const char *s, size_t n, const char *name)
{
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	return name_is(s, n, name);
}

static void
wput(struct head *h, const char *s, size_t n)
{
	/* Cannot happen (the rewrite is at most 20 bytes longer than a
	 * head within the cap, see parse_request_line), but a miscount must
	 * end in a refusal, never in a write past the buffer. */
	if (h->woverflow || n > h->wcap - 1 - h->wlen) {
		h->woverflow = 1;
		return;
	}
	memcpy(h->w + h->wlen, s, n);
	h->wlen += n;
	h->w[h->wlen] = '\0';
}

static void
wputs(struct head *h, const char *s)
{
	wput(h, s, strlen(s));
}

/*
 * Find the CRLF ending the line that starts at off, looking at buf[off..lim)
 * only.  Every line ends in CRLF: a CR or LF alone is refused rather than
 * taken as a line end, since servers disagree on them and the difference
 * is a smuggling vector (NP-11).  A line whose content exceeds max bytes is
 * refused as soon as its max+1st byte is seen, without waiting for its end.
 */
static int
line_end(const char *buf, size_t off, size_t lim, size_t max, size_t *eol)
{
	size_t i;

	for (i = off; i < lim; i++) {
		if (i - off >= max && buf[i] != '\r')
			return V_LINE_TOO_LONG;
		if (buf[i] == '\n')
			return V_BARE_LF;
		if (buf[i] == '\r') {
			if (i + 1 >= lim)
				return V_MORE;
			if (buf[i + 1] != '\n')
				return V_BARE_CR;
			*eol = i;
			return V_OK;
		}
	}
	return V_MORE;
}

/* A port: 1..65535 in decimal, no sign, no leading zero, not empty, so
 * that "0443", "+443" or "443x" never mean 443 to one reader and something
 * else to another (NP-16). */
static int
parse_port(const char *s, size_t n, unsigned *port)
{
	unsigned v = 0;
	size_t	 i;

	if (n == 0 || n > 5 || s[0] == '0')
		return -1;
	for (i = 0; i < n; i++) {
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
 * Characters that never belong in an authority.  They are refused here
 * rather than left to the policy because they are framing, not naming:
 * '%' would be decoded by someone downstream, '\\' is read as '/' by
 * WHATWG parsers, '/', '?' and '#' end an authority, '@' starts userinfo,
 * and whitespace or controls split or truncate it in other readers.
 * Printable oddities ("a_b", non-ASCII) are names: the policy judges them.
 */
static int
authority_weird(int c)
{
	return c <= 0x20 || c == 0x7f || strchr("%\\/?#@", c) != NULL;
}

/* Split host[:port]; host may be a bracketed IPv6 literal, kept with its
 * brackets.  Without a port, port is 80 (http's default). */
static int
split_authority(const char *a, size_t n, struct authority *au)
{
	const char *p;
	size_t	    i, hlen;

	if (n == 0)
		return V_BAD_AUTHORITY;
	for (i = 0; i < n; i++)
		if (authority_weird((unsigned char)a[i]))
			return V_BAD_AUTHORITY;
	if (a[0] == '[') {
		if ((p = memchr(a, ']', n)) == NULL)
			return V_BAD_AUTHORITY;
		hlen = (size_t)(p - a) + 1;
		if (hlen == 2)
			return V_BAD_AUTHORITY;
		/* Only what an IPv6 literal is made of: the policy refuses
		 * every literal anyway, but "[evil.com]" must not reach it
		 * looking like a name in disguise. */
		for (i = 1; i < hlen - 1; i++)
			if (!is_hex((unsigned char)a[i]) && a[i] != ':' &&
			    a[i] != '.')
				return V_BAD_AUTHORITY;
	} else {
		p = memchr(a, ':', n);
		hlen = p != NULL ? (size_t)(p - a) : n;
		if (hlen == 0)
			return V_BAD_AUTHORITY;
		if (memchr(a, '[', hlen) != NULL ||
		    memchr(a, ']', hlen) != NULL)
			return V_BAD_AUTHORITY;
	}
	au->host = a;
	au->hostlen = hlen;
	au->port = 80;
	au->has_port = 0;
	if (hlen == n)
		return V_OK;
	if (a[hlen] != ':')
		return V_BAD_AUTHORITY;
	if (parse_port(a + hlen + 1, n - hlen - 1, &au->port) == -1)
		return V_BAD_PORT;
	au->has_port = 1;
	return V_OK;
}

static int
set_authority(struct sbx_http_req *req, const struct authority *au)
{
	if (au->hostlen >= sizeof(req->host))
		return V_BAD_AUTHORITY;
	memcpy(req->host, au->host, au->hostlen);
	req->host[au->hostlen] = '\0';
	req->hostlen = au->hostlen;
	req->port = au->port;
	return V_OK;
}

/* CONNECT host:port (authority-form, RFC 9112 3.2.3). */
static int
parse_connect_target(const char *t, size_t n, struct sbx_http_req *req)
{
	struct authority au;
	int		 v;

	if (t[0] == '/' || (n == 1 && t[0] == '*'))
		return V_ORIGIN_FORM;
	/* Authority-form has no userinfo; "a@b:443" is a confusion
	 * attempt (which host is it?), not a name. */
	if (memchr(t, '@', n) != NULL)
		return V_USERINFO;
	if ((v = split_authority(t, n, &au)) != V_OK)
		return v;
	/* CONNECT has no default port. */
	if (!au.has_port)
		return V_BAD_PORT;
	return set_authority(req, &au);
}

/*
 * http://host[:port][/path][?query] (absolute-form).  The authority that
 * is checked is the one that is dialled; the path goes upstream unjudged.
 */
static int
parse_absolute_target(const char *t, size_t n, struct sbx_http_req *req,
    struct head *h, const char **path, size_t *pathlen)
{
	struct authority au;
	const char	*a;
	size_t		 i, k, alen, rest;
	int		 v;

	/* A fragment never travels in a request: refused rather than
	 * stripped, since "http://a#@b/" is read as two hosts by two
	 * parsers. */
	if (memchr(t, '#', n) != NULL)
		return V_BAD_REQUEST_LINE;
	if (t[0] == '/' || (n == 1 && t[0] == '*'))
		return V_ORIGIN_FORM;
	for (k = 0; k < n && t[k] != ':'; k++) {
		int c = (unsigned char)t[k];
		/* scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) */
		if (!is_alpha(c) && (k == 0 || !is_scheme_char(c)))
			return V_BAD_REQUEST_LINE;
	}
	if (k == 0 || n - k < 3 || t[k + 1] != '/' || t[k + 2] != '/')
		return V_BAD_REQUEST_LINE;
	/* https:// in absolute form would have the proxy speak TLS on the
	 * client's behalf; clients must tunnel with CONNECT instead. */
	if (!ci_equal(t, k, "http", 4))
		return V_BAD_SCHEME;
	a = t + k + 3;
	rest = n - k - 3;
	for (alen = 0; alen < rest && a[alen] != '/' && a[alen] != '?'; alen++)
		;
	/* "http://example.com@evil/" names evil; some readers think it
	 * names example.com (NP-10).  There are no credentials to pass. */
	if (memchr(a, '@', alen) != NULL)
		return V_USERINFO;
	if ((v = split_authority(a, alen, &au)) != V_OK)
		return v;
	*path = a + alen;
	*pathlen = rest - alen;
	/* The path goes upstream byte for byte: nothing a server could
	 * read as a line end or a separator, nothing but ASCII. */
	for (i = 0; i < *pathlen; i++) {
		int c = (unsigned char)(*path)[i];
		if (c <= 0x20 || c >= 0x7f)
			return V_BAD_REQUEST_LINE;
	}
	h->auth = a;
	h->authlen = alen;
	return set_authority(req, &au);
}

/*
 * The target of a request inside a CONNECT tunnel: origin-form only.  The
 * authority is the tunnel's (already in req), named again by the Host
 * header.  An absolute-form target is refused: a server routes on its
 * authority rather than on Host (RFC 9112 3.2.2), a second name the check
 * would have to follow; CONNECT inside a tunnel chains to another proxy.
 */
static int
parse_tunnel_target(const char *s, size_t mlen, const char *t, size_t n,
    struct sbx_http_req *req, struct head *h)
{
	size_t i;

	if (req->connect || t[0] != '/')
		return V_BAD_REQUEST_LINE;
	for (i = 0; i < n; i++) {
		int c = (unsigned char)t[i];
		if (c <= 0x20 || c >= 0x7f || c == '#')
			return V_BAD_REQUEST_LINE;
	}
	wput(h, s, mlen + 1);
	wput(h, t, n);
	wputs(h, " HTTP/1.1\r\n");
	return V_OK;
}

/* METHOD SP target SP HTTP/1.x, single spaces. */
static int
parse_request_line(const char *s, size_t n, struct sbx_http_req *req,
    struct head *h)
{
	const char *sp1, *sp2, *t, *ver, *path = NULL;
	size_t	    i, mlen, tlen, vlen, pathlen = 0;
	int	    v;

	if ((sp1 = memchr(s, ' ', n)) == NULL)
		return V_BAD_REQUEST_LINE;
	mlen = (size_t)(sp1 - s);
	t = sp1 + 1;
	if ((sp2 = memchr(t, ' ', n - mlen - 1)) == NULL)
		return V_BAD_REQUEST_LINE;
	tlen = (size_t)(sp2 - t);
	ver = sp2 + 1;
	vlen = n - mlen - tlen - 2;
	/* An empty field means two spaces in a row: refused, since some
	 * servers collapse them and others do not. */
	if (mlen == 0 || tlen == 0 || vlen == 0 ||
	    memchr(ver, ' ', vlen) != NULL || !is_token(s, mlen))
		return V_BAD_REQUEST_LINE;
	for (i = 0; i < sizeof(methods) / sizeof(*methods); i++)
		if (strlen(methods[i]) == mlen &&
		    memcmp(methods[i], s, mlen) == 0)
			break;
	/* Case-sensitive (RFC 9110 9.1): "get" is another method. */
	if (i == sizeof(methods) / sizeof(*methods))
		return V_BAD_METHOD;
	memcpy(req->method, s, mlen);
	req->method[mlen] = '\0';
	req->connect = i == 0;
	if (vlen == 8 && memcmp(ver, "HTTP/1.0", 8) == 0)
		h->http10 = 1;
	else if (vlen != 8 || memcmp(ver, "HTTP/1.1", 8) != 0)
		return V_BAD_VERSION;
	if (h->tunnel)
		return parse_tunnel_target(s, mlen, t, tlen, req, h);
	if (req->connect)
		return parse_connect_target(t, tlen, req);
	if ((v = parse_absolute_target(t, tlen, req, h, &path, &pathlen)) !=
	    V_OK)
		return v;
	/*
	 * Origin-form upstream, always as HTTP/1.1 (an intermediary sends
	 * its own version, RFC 9110 6.2).  This line is at least 7 bytes
	 * shorter than the one received ("http://" and the authority are
	 * gone, at most a '/' is added), which pays for the Host line a
	 * HTTP/1.0 request may need; "Connection: close" adds 19: the
	 * rewrite fits in SBX_HTTP_HEAD_MAX + 64.
	 */
	wput(h, s, mlen + 1);
	if (pathlen == 0 || path[0] == '?')
		wputs(h, "/");
	wput(h, path, pathlen);
	wputs(h, " HTTP/1.1\r\n");
	return V_OK;
}

/* Does a Host value name the same authority as the request target?
 * Case-insensitive, the default port made explicit on both sides. */
static int
host_matches(const char *v, size_t n, const struct sbx_http_req *req)
{
	struct authority au;

	if (split_authority(v, n, &au) != V_OK)
		return 0;
	return au.port == req->port &&
	    ci_equal(au.host, au.hostlen, req->host, req->hostlen);
}

/* Does a Connection value list the token "upgrade"? */
static int
connection_upgrade(const char *v, size_t n)
{
	size_t i = 0, b, e;

	while (i < n) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		b = i;
		while (i < n && v[i] != ',')
			i++;
		e = i;
		while (e > b && (v[e - 1] == ' ' || v[e - 1] == '\t'))
			e--;
		if (name_is(v + b, e - b, "upgrade"))
			return 1;
	}
	return 0;
}

static int
b64_value(int c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (is_digit(c))
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/*
 * Strict base64 (RFC 4648 4): the standard alphabet, padding required,
 * '=' only at the end, no whitespace, and the unused bits of the last
 * group zero, so that one credential has exactly one spelling.
 */
static int
b64_decode(const char *s, size_t n, unsigned char *out, size_t outsz,
    size_t *outlen)
{
	size_t i, o = 0;
	int    q[4], k, pad;

	if (n == 0 || n % 4 != 0 || n / 4 * 3 > outsz)
		return -1;
	for (i = 0; i < n; i += 4) {
		pad = 0;
		for (k = 0; k < 4; k++) {
			if (s[i + k] == '=' && i + 4 == n && k >= 2) {
				q[k] = 0;
				pad++;
				continue;
			}
			/* A '=' followed by data, or data after padding. */
			if (pad > 0 || (q[k] = b64_value(s[i + k])) < 0)
				return -1;
		}
		out[o++] = (unsigned char)(q[0] << 2 | q[1] >> 4);
		if (pad == 2) {
			if ((q[1] & 0x0f) != 0)
				return -1;
			break;
		}
		out[o++] = (unsigned char)((q[1] & 0x0f) << 4 | q[2] >> 2);
		if (pad == 1) {
			if ((q[2] & 0x03) != 0)
				return -1;
			break;
		}
		out[o++] = (unsigned char)((q[2] & 0x03) << 6 | q[3]);
	}
	*outlen = o;
	return 0;
}

/* A user or credential: printable ASCII without space, 1..AUTH_MAX. */
static int
auth_part_ok(const unsigned char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > SBX_HTTP_AUTH_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (s[i] <= 0x20 || s[i] >= 0x7f)
			return 0;
	return 1;
}

static void
auth_invalid(struct sbx_http_req *req)
{
	req->auth = SBX_AUTH_INVALID;
	explicit_bzero(req->user, sizeof(req->user));
	explicit_bzero(req->token, sizeof(req->token));
}

/*
 * Proxy-Authorization: Basic base64(user:password) or Bearer token68.
 * A malformed value is not a parse error: the proxy answers 407 as it
 * does to a missing one, and reveals nothing about why.
 */
static void
parse_proxy_auth(const char *v, size_t n, struct sbx_http_req *req)
{
	unsigned char	     dec[(SBX_HTTP_AUTH_MAX * 2 + 3) / 3 * 3 + 3];
	const unsigned char *colon;
	const char	    *cred;
	size_t		     i, slen, clen, dlen, ulen, plen;

	for (slen = 0; slen < n && v[slen] != ' '; slen++)
		;
	for (i = slen; i < n && v[i] == ' '; i++)
		;
	cred = v + i;
	clen = n - i;
	if (slen == 0 || clen == 0) {
		auth_invalid(req);
		return;
	}
	if (ci_equal(v, slen, "basic", 5)) {
		if (b64_decode(cred, clen, dec, sizeof(dec), &dlen) == -1 ||
		    (colon = memchr(dec, ':', dlen)) == NULL) {
			explicit_bzero(dec, sizeof(dec));
			auth_invalid(req);
			return;
		}
		ulen = (size_t)(colon - dec);
		plen = dlen - ulen - 1;
		if (!auth_part_ok(dec, ulen) ||
		    !auth_part_ok(colon + 1, plen)) {
			explicit_bzero(dec, sizeof(dec));
			auth_invalid(req);
			return;
		}
		memcpy(req->user, dec, ulen);
		req->user[ulen] = '\0';
		memcpy(req->token, colon + 1, plen);
		req->token[plen] = '\0';
		explicit_bzero(dec, sizeof(dec));
		req->auth = SBX_AUTH_BASIC;
		return;
	}
	if (ci_equal(v, slen, "bearer", 6)) {
		/* token68: 1*(ALPHA / DIGIT / "-._~+/") *"=" */
		for (i = 0; i < clen; i++) {
			int c = (unsigned char)cred[i];
			if (!is_alpha(c) && !is_digit(c) &&
			    (c == '\0' || strchr("-._~+/", c) == NULL))
				break;
		}
		if (i == 0) {
			auth_invalid(req);
			return;
		}
		while (i < clen && cred[i] == '=')
			i++;
		if (i != clen || clen > SBX_HTTP_AUTH_MAX) {
			auth_invalid(req);
			return;
		}
		memcpy(req->token, cred, clen);
		req->token[clen] = '\0';
		req->user[0] = '\0';
		req->auth = SBX_AUTH_BEARER;
		return;
	}
	auth_invalid(req);
}

/*
 * Headers that end at this hop and are not passed upstream.  Fields that
 * the client's Connection header names are passed on: the client's
 * Connection itself is not, so no server further on strips them (the
 * "Connection: Content-Length" trick needs a hop that honours it), and the
 * ones that matter for framing and routing were checked above.
 */
static int
hop_by_hop(const char *name, size_t n)
{
	return (n >= 6 && ci_equal(name, 6, "proxy-", 6)) ||
	    name_is(name, n, "connection") || name_is(name, n, "keep-alive") ||
	    name_is(name, n, "te") || name_is(name, n, "trailer");
}

/*
 * "Content_Length", "Transfer_Encoding", "HTTP2_Settings": CGI-style
 * servers map '-' to '_' and may take one for the real header, which this
 * parser would have let through unchecked.
 */
static int
framing_lookalike(const char *s, size_t n)
{
	static const char *const names[] = {"content-length",
	    "transfer-encoding", "http2-settings"};
	size_t			 i, k;

	if (memchr(s, '_', n) == NULL)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(*names); i++) {
		if (strlen(names[i]) != n)
			continue;
		for (k = 0; k < n; k++)
			if (lower((unsigned char)s[k]) != names[i][k] &&
			    !(s[k] == '_' && names[i][k] == '-'))
				break;
		if (k == n)
			return 1;
	}
	return 0;
}

/* One header line, s[0..n) without its CRLF. */
static int
parse_header(const char *s, size_t n, struct sbx_http_req *req, struct head *h)
{
	const char *colon, *v;
	size_t	    i, nlen, vlen;
	long long   cl;

	/* obs-fold: a continuation of the previous value for some readers,
	 * a new (hidden) header for others (NP-11). */
	if (n > 0 && (s[0] == ' ' || s[0] == '\t'))
		return V_OBS_FOLD;
	if ((colon = memchr(s, ':', n)) == NULL)
		return V_BAD_HEADER;
	nlen = (size_t)(colon - s);
	/* The token rule also refuses "Transfer-Encoding : chunked", which
	 * some servers read as Transfer-Encoding and others ignore. */
	if (!is_token(s, nlen) || framing_lookalike(s, nlen))
		return V_BAD_HEADER;
	v = colon + 1;
	vlen = n - nlen - 1;
	/* No controls but HTAB in a value: a NUL truncates it for C
	 * readers, a lone CR or other control is read differently by
	 * others.  obs-text (0x80-0xff) is allowed, as RFC 9110 5.5 does. */
	for (i = 0; i < vlen; i++) {
		int c = (unsigned char)v[i];
		if ((c < 0x20 && c != '\t') || c == 0x7f)
			return V_BAD_HEADER;
	}
	while (vlen > 0 && (v[0] == ' ' || v[0] == '\t')) {
		v++;
		vlen--;
	}
	while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
		vlen--;

	if (name_is(s, nlen, "content-length")) {
		/* One occurrence of 1..18 digits: no list, no sign, no
		 * duplicate even if equal, no leading zero (an octal
		 * reader would see another length), so that no reader can
		 * frame the body otherwise than we do (NP-11).  18 digits
		 * cannot overflow a long long. */
		if (++h->ncl > 1 || vlen == 0 || vlen > 18 ||
		    (vlen > 1 && v[0] == '0'))
			return V_BAD_CONTENT_LENGTH;
		for (cl = 0, i = 0; i < vlen; i++) {
			if (!is_digit((unsigned char)v[i]))
				return V_BAD_CONTENT_LENGTH;
			cl = cl * 10 + (v[i] - '0');
		}
		req->content_length = cl;
	} else if (name_is(s, nlen, "transfer-encoding")) {
		/* Any Transfer-Encoding is refused at the end of the head
		 * (together with a Content-Length it is reported as such):
		 * chunked request bodies are the classic desync, and every
		 * obfuscation of the value ("xchunked", "chunked, identity")
		 * is another. */
		h->te = 1;
	} else if (name_is(s, nlen, "host")) {
		/* Exactly one Host, equal to the authority that is checked
		 * and dialled: otherwise the upstream may route on a name
		 * the policy never saw (NP-10). */
		if (++h->nhost > 1)
			return V_DUPLICATE_HOST;
		if (!host_matches(v, vlen, req))
			return V_HOST_MISMATCH;
	} else if (name_is(s, nlen, "upgrade") ||
	    name_is(s, nlen, "http2-settings")) {
		/* An upgrade turns the connection into an opaque stream
		 * the proxy would relay uninspected: h2c smuggling (NP-13). */
		return V_UPGRADE;
	} else if (name_is(s, nlen, "connection")) {
		if (connection_upgrade(v, vlen))
			return V_UPGRADE;
	} else if (name_is(s, nlen, "proxy-authorization")) {
		/* Two credentials: which one would be the identity?
		 * Neither. */
		if (++h->nauth > 1)
			auth_invalid(req);
		else
			parse_proxy_auth(v, vlen, req);
	}
	if (!req->connect && !hop_by_hop(s, nlen))
		wput(h, s, n + 2); /* byte for byte, with its CRLF */
	return V_OK;
}

/* The decisions that need the whole head. */
static int
finish_head(struct sbx_http_req *req, struct head *h)
{
	if (h->te)
		return h->ncl > 0 ? V_BAD_CONTENT_LENGTH : V_TRANSFER_ENCODING;
	/* A CONNECT body would reach the tunnel as if the client had sent
	 * it after the 200: data smuggled past the SNI check. */
	if (req->connect && req->content_length > 0)
		return V_BODY_ON_CONNECT;
	if (req->connect)
		return V_OK;
	if (h->nhost == 0) {
		/* In a tunnel the Host header is the only name the server
		 * sees: HTTP/1.0 must send it too. */
		if (!h->http10 || h->tunnel)
			return V_MISSING_HOST;
		/* We speak HTTP/1.1 upstream, where Host is required: add
		 * the authority that was checked. */
		wputs(h, "Host: ");
		wput(h, h->auth, h->authlen);
		wputs(h, "\r\n");
	}
	/* Exactly one request per connection (NP-12). */
	wputs(h, "Connection: close\r\n\r\n");
	if (h->woverflow)
		return V_HEAD_TOO_LARGE;
	req->rewritten_len = h->wlen;
	return V_OK;
}

static void
req_reset(struct sbx_http_req *req)
{
	req->connect = 0;
	req->method[0] = '\0';
	req->host[0] = '\0';
	req->hostlen = 0;
	req->port = 0;
	req->auth = SBX_AUTH_NONE;
	explicit_bzero(req->user, sizeof(req->user));
	explicit_bzero(req->token, sizeof(req->token));
	req->content_length = -1;
	req->head_len = 0;
	req->rewritten[0] = '\0';
	req->rewritten_len = 0;
}

static int
parse_head(const char *buf, size_t len, struct sbx_http_req *req,
    struct head *h)
{
	size_t lim, off, eol = 0;
	int    v;

	/* Never look past the cap: a head that is not complete within
	 * SBX_HTTP_HEAD_MAX bytes is refused whatever follows. */
	lim = len < SBX_HTTP_HEAD_MAX ? len : SBX_HTTP_HEAD_MAX;
	if ((v = line_end(buf, 0, lim, SBX_HTTP_LINE_MAX, &eol)) != V_OK ||
	    (v = parse_request_line(buf, eol, req, h)) != V_OK)
		return v;
	h->line_ok = 1;
	for (off = eol + 2;; off = eol + 2) {
		if (off >= lim)
			return V_MORE;
		if (buf[off] == '\r') {
			if (off + 1 >= lim)
				return V_MORE;
			if (buf[off + 1] != '\n')
				return V_BARE_CR;
			req->head_len = off + 2;
			return finish_head(req, h);
		}
		/* Decided at the first byte of the line that cannot be the
		 * end of the head, without waiting for its end. */
		if (h->nheaders == SBX_HTTP_HEADERS_MAX)
			return V_TOO_MANY_HEADERS;
		if ((v = line_end(buf, off, lim, SIZE_MAX, &eol)) != V_OK)
			return v;
		h->nheaders++;
		if ((v = parse_header(buf + off, eol - off, req, h)) != V_OK)
			return v;
	}
}

int
sbx_http_parse(const char *buf, size_t len, struct sbx_http_req *req,
    int *status, const char **reason)
{
	struct head h;
	int	    v;

	*status = 0;
	*reason = NULL;
	req_reset(req);
	if (buf == NULL)
		len = 0;
	memset(&h, 0, sizeof(h));
	h.w = req->rewritten;
	h.wcap = sizeof(req->rewritten);
	v = parse_head(buf, len, req, &h);
	if (v == V_MORE && len >= SBX_HTTP_HEAD_MAX)
		v = V_HEAD_TOO_LARGE;
	if (v == V_OK)
		return 1;
	/* Nothing of a request that is incomplete or refused is left to
	 * be acted on, least of all its credentials. */
	req_reset(req);
	if (v == V_MORE)
		return 0;
	*status = verdicts[v].status;
	*reason = verdicts[v].reason;
	return -1;
}

/* Could buf[0..len) start "METHOD " for a method a tunnel may carry? */
static int
tunnel_method_prefix(const char *buf, size_t len)
{
	size_t i, m, n;

	for (i = 1; i < sizeof(methods) / sizeof(*methods); i++) {
		m = strlen(methods[i]);
		n = len < m ? len : m;
		if (memcmp(buf, methods[i], n) != 0)
			continue;
		if (len <= m || buf[m] == ' ')
			return 1;
	}
	return 0;
}

int
sbx_http_parse_tunnel(const char *buf, size_t len, const char *host,
    unsigned port, struct sbx_http_req *req, int *status,
    const char **reason)
{
	struct head h;
	size_t	    hl;
	int	    v;

	*status = 0;
	*reason = NULL;
	req_reset(req);
	if (buf == NULL)
		len = 0;
	hl = host != NULL ? strlen(host) : 0;
	memset(&h, 0, sizeof(h));
	h.tunnel = 1;
	h.w = req->rewritten;
	h.wcap = sizeof(req->rewritten);
	if (hl == 0 || hl >= sizeof(req->host)) {
		v = V_TUNNEL_HOST;
		goto out;
	}
	/* What the tunnel was opened for: the Host header must name it. */
	memcpy(req->host, host, hl + 1);
	req->hostlen = hl;
	req->port = port;
	/* Not HTTP is known from the first bytes: a server-first protocol's
	 * client or plain garbage is refused at once, not at the header
	 * timeout. */
	if (!tunnel_method_prefix(buf, len)) {
		v = V_TUNNEL_NOT_HTTP;
		goto out;
	}
	v = parse_head(buf, len, req, &h);
	if (v == V_MORE && len >= SBX_HTTP_HEAD_MAX)
		v = V_HEAD_TOO_LARGE;
	/* The request line is where HTTP is recognised; after it, the
	 * faults are those of any request, Host's being the tunnel's. */
	if (v != V_OK && v != V_MORE && !h.line_ok)
		v = V_TUNNEL_NOT_HTTP;
	else if (v == V_HOST_MISMATCH || v == V_MISSING_HOST ||
	    v == V_DUPLICATE_HOST)
		v = V_TUNNEL_HOST;
out:
	if (v == V_OK) {
		/* Credentials sent inside a tunnel are nobody's business
		 * here: not kept, and not passed on (Proxy-* are dropped). */
		req->auth = SBX_AUTH_NONE;
		explicit_bzero(req->user, sizeof(req->user));
		explicit_bzero(req->token, sizeof(req->token));
		return 1;
	}
	req_reset(req);
	if (v == V_MORE)
		return 0;
	*status = verdicts[v].status;
	*reason = verdicts[v].reason;
	return -1;
}

/* A bounds-checked reader over a byte range. */
struct rd {
	const unsigned char *p;
	size_t		     n;
};

static int
rd_u8(struct rd *r, size_t *v)
{
	if (r->n < 1)
		return -1;
	*v = r->p[0];
	r->p++;
	r->n--;
	return 0;
}

static int
rd_u16(struct rd *r, size_t *v)
{
	if (r->n < 2)
		return -1;
	*v = (size_t)r->p[0] << 8 | r->p[1];
	r->p += 2;
	r->n -= 2;
	return 0;
}

static int
rd_u24(struct rd *r, size_t *v)
{
	if (r->n < 3)
		return -1;
	*v = (size_t)r->p[0] << 16 | (size_t)r->p[1] << 8 | r->p[2];
	r->p += 3;
	r->n -= 3;
	return 0;
}

/* Take the next n bytes as sub (NULL: skip them). */
static int
rd_sub(struct rd *r, size_t n, struct rd *sub)
{
	if (r->n < n)
		return -1;
	if (sub != NULL) {
		sub->p = r->p;
		sub->n = n;
	}
	r->p += n;
	r->n -= n;
	return 0;
}

/* A vector with a length prefix of lb bytes, taken whole. */
static int
rd_vec(struct rd *r, int lb, struct rd *sub)
{
	size_t n;

	if ((lb == 1 ? rd_u8(r, &n) : rd_u16(r, &n)) == -1)
		return -1;
	return rd_sub(r, n, sub);
}

/*
 * The server_name extension (RFC 6066 3).  Exactly one host_name: with
 * two, the proxy and the server could each pick a different one.
 */
static int
sni_extension(struct rd ext, char *sni, size_t snisz, int *found)
{
	struct rd list, name;
	size_t	  i, type;

	if (rd_vec(&ext, 2, &list) == -1 || ext.n != 0 || list.n == 0)
		return -1;
	while (list.n > 0) {
		if (rd_u8(&list, &type) == -1 || rd_vec(&list, 2, &name) == -1)
			return -1;
		if (type != 0)
			continue;
		if (*found || name.n == 0 || name.n > 255 || name.n >= snisz)
			return -1;
		for (i = 0; i < name.n; i++)
			if (name.p[i] <= 0x20 || name.p[i] >= 0x7f)
				return -1;
		memcpy(sni, name.p, name.n);
		sni[name.n] = '\0';
		*found = 1;
	}
	return 0;
}

int
sbx_tls_sni(const unsigned char *buf, size_t len, char *sni, size_t snisz,
    const char **reason)
{
	struct rd rec, ch, exts, ext;
	size_t	  rlen, type, hlen, ver, elen, n;
	int	  found = 0, seen = 0;

	*reason = NULL;
	if (sni != NULL && snisz > 0)
		sni[0] = '\0';
	if (buf == NULL || sni == NULL)
		len = 0;
	/* The record header is judged on the bytes already there: a client
	 * that speaks anything but TLS is known from its first byte. */
	if ((len >= 1 && buf[0] != 22) || (len >= 2 && buf[1] != 3) ||
	    (len >= 3 && (buf[2] < 1 || buf[2] > 4)))
		goto not_tls;
	if (len < 5)
		return 0;
	rlen = (size_t)buf[3] << 8 | buf[4];
	if (rlen == 0 || rlen > 16384)
		goto malformed;
	/* The whole record, also when it arrives in pieces. */
	if (len - 5 < rlen)
		return 0;
	rec.p = buf + 5;
	rec.n = rlen;
	if (rd_u8(&rec, &type) == -1)
		goto malformed;
	if (type != 1)
		goto not_tls;
	/* Only the first record is read: a ClientHello fragmented over
	 * records is refused, not reassembled (no real client does it
	 * below 16 KiB). */
	if (rd_u24(&rec, &hlen) == -1 || rd_sub(&rec, hlen, &ch) == -1)
		goto malformed;
	/* legacy_version, random */
	if (rd_u16(&ch, &ver) == -1 || ver >> 8 != 3 ||
	    rd_sub(&ch, 32, NULL) == -1)
		goto malformed;
	/* legacy_session_id <0..32> */
	if (rd_u8(&ch, &n) == -1 || n > 32 || rd_sub(&ch, n, NULL) == -1)
		goto malformed;
	/* cipher_suites <2..2^16-2>, two bytes each */
	if (rd_u16(&ch, &n) == -1 || n < 2 || n % 2 != 0 ||
	    rd_sub(&ch, n, NULL) == -1)
		goto malformed;
	/* legacy_compression_methods <1..2^8-1> */
	if (rd_u8(&ch, &n) == -1 || n < 1 || rd_sub(&ch, n, NULL) == -1)
		goto malformed;
	/* No extensions at all (an SSL 3.0-style hello): no SNI. */
	if (ch.n == 0)
		goto no_sni;
	/* The extensions fill the rest of the ClientHello exactly. */
	if (rd_vec(&ch, 2, &exts) == -1 || ch.n != 0)
		goto malformed;
	while (exts.n > 0) {
		if (rd_u16(&exts, &type) == -1 || rd_u16(&exts, &elen) == -1 ||
		    rd_sub(&exts, elen, &ext) == -1)
			goto malformed;
		if (type != 0)
			continue;
		/* One server_name extension (RFC 8446 4.2): first-wins and
		 * last-wins readers must not disagree. */
		if (seen++ > 0 || sni_extension(ext, sni, snisz, &found) == -1)
			goto malformed;
	}
	if (!found)
		goto no_sni;
	return 1;
not_tls:
	*reason = "not_tls";
	goto fail;
malformed:
	*reason = "malformed_tls";
	goto fail;
no_sni:
	*reason = "no_sni";
fail:
	if (sni != NULL && snisz > 0)
		sni[0] = '\0';
	return -1;
}

size_t
sbx_http_resp_end(const char *p, size_t n, int *status)
{
	const char	*e;
	size_t		 hlen;

	*status = 0;
	if ((e = memmem(p, n, "\r\n\r\n", 4)) == NULL)
		return 0;
	hlen = (size_t)(e - p) + 4;
	if (hlen > 12 && memcmp(p, "HTTP/1.", 7) == 0 && p[8] == ' ' &&
	    p[9] >= '1' && p[9] <= '5' && p[10] >= '0' && p[10] <= '9' &&
	    p[11] >= '0' && p[11] <= '9' && (p[12] == ' ' || p[12] == '\r'))
		*status = (p[9] - '0') * 100 + (p[10] - '0') * 10 +
		    (p[11] - '0');
	return hlen;
}

size_t
sbx_http_resp_close(const char *p, size_t hlen, char *out, size_t outsz)
{
	static const char close_hdr[] = "Connection: close\r\n\r\n";
	const char	*e = p + hlen - 2, *nl, *colon;
	size_t		 n = 0, len;
	int		 skip = 0, first = 1;

	/* Every line up to the blank one ends in CRLF: the head ends in
	 * CRLF CRLF (sbx_http_resp_end). */
	if (hlen < 4 || memcmp(p + hlen - 4, "\r\n\r\n", 4) != 0)
		return 0;
	while (p < e) {
		nl = memmem(p, (size_t)(e - p), "\r\n", 2);
		len = (size_t)(nl - p) + 2;
		if (first)
			skip = 0;
		else if (*p != ' ' && *p != '\t') {
			/* A folded line belongs to the header above. */
			colon = memchr(p, ':', len - 2);
			skip = colon != NULL && (trimmed_is(p,
			    (size_t)(colon - p), "connection") ||
			    trimmed_is(p, (size_t)(colon - p), "keep-alive") ||
			    trimmed_is(p, (size_t)(colon - p),
				"proxy-connection"));
		}
		first = 0;
		if (!skip) {
			if (len > outsz - n)
				return 0;
			memcpy(out + n, p, len);
			n += len;
		}
		p += len;
	}
	if (sizeof(close_hdr) - 1 > outsz - n)
		return 0;
	memcpy(out + n, close_hdr, sizeof(close_hdr) - 1);
	return n + sizeof(close_hdr) - 1;
}

