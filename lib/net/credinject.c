/*
 * credinject.c: credentials injected by sbx-proxy (credinject.h).
 *
 * Why a thread per injected connection when the rest of the proxy is one
 * epoll loop: an injected connection is two TLS sessions and an HTTP/1.1
 * parser with request and response framing, scanning and masking in
 * between.  Written as a state machine over non-blocking OpenSSL (want
 * read / want write on either side, mid-record, mid-chunk) it would be
 * most of the proxy's code again, for the few connections that go to a
 * host a credential rule names.  A worker with blocking I/O, fixed
 * buffers and socket timeouts is a straight loop that is easy to check;
 * it shares nothing with the loop but a pipe (one pointer per event,
 * freed by the loop) and reference-counted SSL_CTXs, and its rules are
 * its own copies.  Every other connection stays in the loop and is
 * spliced as before.
 */
#include <sys/socket.h>
#include <sys/time.h>

#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <sodium.h>

#include "buf.h"
#include "credinject.h"
#include "time.h"

#define MARKER	   SBX_CRED_PREFIX
#define MARKER_LEN (sizeof(MARKER) - 1)
#define HEXWIN	   12
#define HEAD_MAX   (64 << 10)
#define IOBUF	   (64 << 10)
#define LINE_MAX_  4096

/* ---- the session's rules ------------------------------------------------ */

static void
wipe_json_string(json_t *v)
{
	const char *s;

	/* The request's copy of a value: jansson frees with free(), so it
	 * is wiped here first. */
	if ((s = json_string_value(v)) != NULL)
		sodium_memzero((char *)(uintptr_t)s, json_string_length(v));
}

static int
header_value_ok(const char *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] < 0x20 || (unsigned char)v[i] == 0x7f)
			return 0;
	return 1;
}

int
sbx_cred_parse(json_t *arr, struct sbx_cred **out, size_t *np,
    struct sbx_error *e)
{
	struct sbx_cred *c = NULL;
	json_t		*r, *copy, *ph, *val;
	char		 where[64];
	size_t		 i, j, n;

	*out = NULL;
	*np = 0;
	if (arr == NULL || json_is_null(arr))
		return 0;
	if (!json_is_array(arr))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
		    "malformed", "credentials must be an array");
	if ((n = json_array_size(arr)) == 0)
		return 0;
	if (n > SBX_CRED_RULES_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
		    "too_many", "at most %d credentials", SBX_CRED_RULES_MAX);
	if ((c = calloc(n, sizeof(*c))) == NULL)
		return sbx_error_sys(e, "nomem", "out of memory");
	json_array_foreach (arr, i, r) {
		snprintf(where, sizeof(where), "credentials[%zu]", i);
		ph = json_object_get(r, "placeholder");
		val = json_object_get(r, "value");
		if (!json_is_object(r) || !json_is_string(ph) ||
		    !json_is_string(val)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
			    "malformed",
			    "%s: needs placeholder and value "
			    "strings",
			    where);
			goto bad;
		}
		if ((copy = json_copy(r)) == NULL) {
			sbx_error_sys(e, "nomem", "out of memory");
			goto bad;
		}
		json_object_del(copy, "placeholder");
		json_object_del(copy, "value");
		if (sbx_credrule_parse(copy, where, &c[i].rule, e) == -1) {
			json_decref(copy);
			goto bad;
		}
		json_decref(copy);
		if (!sbx_credrule_placeholder_ok(&c[i].rule,
			json_string_value(ph))) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
			    "bad_placeholder",
			    "%s: placeholder is not "
			    "sbx-cred-<32 hex>-%s",
			    where, c[i].rule.secret);
			goto bad;
		}
		snprintf(c[i].ph, sizeof(c[i].ph), "%s", json_string_value(ph));
		for (j = 0; j < i; j++)
			if (strcmp(c[j].ph, c[i].ph) == 0) {
				sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "credentials", "bad_placeholder",
				    "%s: placeholder used twice", where);
				goto bad;
			}
		c[i].vlen = json_string_length(val);
		/* A value goes into a header line as it is (header rules):
		 * a CR or LF in it would end the line and start another. */
		if (c[i].vlen == 0 || c[i].vlen > 65536 ||
		    memchr(json_string_value(val), '\0', c[i].vlen) != NULL ||
		    (c[i].rule.kind == SBX_CRED_HEADER &&
			!header_value_ok(json_string_value(val), c[i].vlen))) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "credentials",
			    "bad_value",
			    "%s: the value of %s is empty, too "
			    "long or has control characters",
			    where, c[i].rule.secret);
			goto bad;
		}
		if ((c[i].val = sodium_malloc(c[i].vlen + 1)) == NULL) {
			sbx_error_sys(e, "nomem", "out of memory");
			goto bad;
		}
		memcpy(c[i].val, json_string_value(val), c[i].vlen + 1);
		wipe_json_string(val);
	}
	*out = c;
	*np = n;
	return 0;
bad:
	json_array_foreach (arr, i, r)
		wipe_json_string(json_object_get(r, "value"));
	sbx_cred_free(c, n);
	return -1;
}

struct sbx_cred *
sbx_cred_copy(const struct sbx_cred *c, size_t n)
{
	struct sbx_cred *d;
	size_t		 i;

	if ((d = calloc(n ? n : 1, sizeof(*d))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		d[i] = c[i];
		if ((d[i].val = sodium_malloc(c[i].vlen + 1)) == NULL) {
			sbx_cred_free(d, i);
			return NULL;
		}
		memcpy(d[i].val, c[i].val, c[i].vlen + 1);
	}
	return d;
}

void
sbx_cred_free(struct sbx_cred *c, size_t n)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < n; i++)
		if (c[i].val != NULL)
			sodium_free(c[i].val); /* wiped by sodium */
	sodium_memzero(c, n * sizeof(*c));
	free(c);
}

int
sbx_cred_find(const struct sbx_cred *c, size_t n, const char *host,
    unsigned port)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (port <= 65535 &&
		    sbx_credrule_match(&c[i].rule, host, (unsigned short)port))
			return (int)i;
	return -1;
}

/* ---- looking for placeholders ------------------------------------------- */

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* One level of percent-decoding, in place; the new length. */
static size_t
pct_decode(char *s, size_t n)
{
	size_t i, o = 0;
	int    h, l;

	for (i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n &&
		    (h = hexval((unsigned char)s[i + 1])) >= 0 &&
		    (l = hexval((unsigned char)s[i + 2])) >= 0) {
			s[o++] = (char)(h * 16 + l);
			i += 2;
		} else
			s[o++] = s[i];
	}
	return o;
}

static void
lower(char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		s[i] = (char)((unsigned char)s[i] +
		    ((unsigned)((unsigned char)s[i] - 'A') < 26u) * 32);
}

/* Remove every obs-fold (CRLF or LF, then spaces or tabs) and every
 * whitespace run right after a colon-free line break: a value split over
 * two lines reads as one. */
static size_t
unfold(char *s, size_t n)
{
	size_t i, o = 0;

	for (i = 0; i < n; i++) {
		if ((s[i] == '\r' && i + 2 < n && s[i + 1] == '\n' &&
			(s[i + 2] == ' ' || s[i + 2] == '\t')) ||
		    (s[i] == '\n' && i + 1 < n &&
			(s[i + 1] == ' ' || s[i + 1] == '\t'))) {
			i += s[i] == '\r' ? 2 : 1;
			while (i < n && (s[i] == ' ' || s[i] == '\t'))
				i++;
			i--;
			continue;
		}
		s[o++] = s[i];
	}
	return o;
}

/* Basic credentials anywhere ("basic" then base64), decoded, appended
 * to out: a placeholder inside user:password is seen too. */
static void
basic_decoded(const char *s, size_t n, struct sbx_buf *out)
{
	unsigned char dec[4096];
	size_t	      i, j, dlen;

	for (i = 0; i + 6 < n; i++) {
		if (strncasecmp(s + i, "basic", 5) != 0 ||
		    (s[i + 5] != ' ' && s[i + 5] != '\t'))
			continue;
		for (j = i + 5; j < n && (s[j] == ' ' || s[j] == '\t'); j++)
			;
		i = j;
		while (j < n && j - i < sizeof(dec) &&
		    (isalnum((unsigned char)s[j]) || s[j] == '+' ||
			s[j] == '/' || s[j] == '=' || s[j] == '-' ||
			s[j] == '_'))
			j++;
		if (j == i)
			continue;
		if (sodium_base642bin(dec, sizeof(dec), s + i, j - i, "=",
			&dlen, NULL, sodium_base64_VARIANT_ORIGINAL) == 0 ||
		    sodium_base642bin(dec, sizeof(dec), s + i, j - i, "=",
			&dlen, NULL, sodium_base64_VARIANT_URLSAFE) == 0) {
			sbx_buf_puts(out, "\n");
			sbx_buf_append(out, dec, dlen);
		}
	}
}

/* The rule whose placeholder (or part of it) is in s (normalised), n
 * for the marker alone, or -1. */
static int
scan_normal(const struct sbx_cred *c, size_t n, const char *s, size_t len)
{
	char   ph[SBX_CRED_PLACEHOLDER_MAX + 1];
	size_t i, j, k, run;

	for (i = 0; i < n; i++) {
		snprintf(ph, sizeof(ph), "%s", c[i].ph);
		lower(ph, strlen(ph));
		if (memmem(s, len, ph, strlen(ph)) != NULL)
			return (int)i;
	}
	/* Parts: twelve hex digits of a random part (48 bits: never by
	 * chance in a head), then the marker. */
	for (j = 0; j < len; j = k + 1) {
		for (k = j; k < len && hexval((unsigned char)s[k]) >= 0 &&
		     !isupper((unsigned char)s[k]);
		     k++)
			;
		run = k - j;
		if (run < HEXWIN)
			continue;
		for (; j + HEXWIN <= k; j++)
			for (i = 0; i < n; i++)
				if (memmem(c[i].ph + MARKER_LEN,
					SBX_CRED_RAND_HEX, s + j,
					HEXWIN) != NULL)
					return (int)i;
	}
	if (memmem(s, len, MARKER, MARKER_LEN) != NULL)
		return (int)n;
	return -1;
}

int
sbx_cred_scan(const struct sbx_cred *c, size_t n, const char *buf, size_t len)
{
	struct sbx_buf b = SBX_BUF_INIT;
	size_t	       m;
	int	       k, lvl;

	if (n == 0 || len == 0)
		return -1;
	if (sbx_buf_append(&b, buf, len) == -1)
		return (int)n; /* fail closed */
	b.len = unfold(b.p, b.len);
	m = b.len;
	/* Three levels of percent-encoding (%2573 is %73 is s). */
	for (lvl = 0; lvl < 3; lvl++)
		b.len = pct_decode(b.p, b.len);
	basic_decoded(b.p, m < b.len ? m : b.len, &b);
	lower(b.p, b.len);
	k = scan_normal(c, n, b.p, b.len);
	sbx_buf_release(&b);
	return k;
}

/* ---- a request head ----------------------------------------------------- */

struct span {
	size_t s, e; /* [s, e) of the head */
	int    rule;
};

struct hline {
	size_t s, e; /* the line, without its CRLF */
	size_t ns, ne; /* the name */
	size_t vs, ve; /* the value, trimmed */
	int    fold; /* starts with a space: obs-fold */
	int    inject; /* rule index, or -1 */
};

#define HLINES_MAX 256

static int
name_is(const char *h, const struct hline *l, const char *name)
{
	return l->ne - l->ns == strlen(name) &&
	    strncasecmp(h + l->ns, name, l->ne - l->ns) == 0;
}

static int
has_token(const char *v, size_t n, const char *tok)
{
	size_t i, j, t = strlen(tok);

	for (i = 0; i < n; i = j + 1) {
		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		for (j = i; j < n && v[j] != ','; j++)
			;
		{
			size_t e = j;

			while (e > i && (v[e - 1] == ' ' || v[e - 1] == '\t'))
				e--;
			if (e - i == t && strncasecmp(v + i, tok, t) == 0)
				return 1;
		}
	}
	return 0;
}

static const char HEX[] = "0123456789ABCDEF";

/* Percent-encode all but unreserved characters. */
static size_t
pct_encode(char *o, const char *s, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			o[k++] = (char)c;
		else {
			o[k++] = '%';
			o[k++] = HEX[c >> 4];
			o[k++] = HEX[c & 15];
		}
	}
	return k;
}

static int
refuse(int *status, const char **reason, int st, const char *why)
{
	*status = st;
	*reason = why;
	return -1;
}

/* Does the Host header name host:port? */
static int
host_ok(const char *v, size_t n, const char *host, unsigned port)
{
	char want[300];
	int  v6 = strchr(host, ':') != NULL;

	snprintf(want, sizeof(want), "%s%s%s", v6 ? "[" : "", host,
	    v6 ? "]" : "");
	if (n == strlen(want) && strncasecmp(v, want, n) == 0)
		return port == 443;
	snprintf(want + strlen(want), sizeof(want) - strlen(want), ":%u", port);
	return n == strlen(want) && strncasecmp(v, want, n) == 0;
}

int
sbx_cred_request(const struct sbx_cred *c, size_t n, const char *host,
    unsigned port, const char *h, size_t len, unsigned long long max_body,
    struct sbx_cred_req *r, int *status, const char **reason, int *which)
{
	static __thread struct hline L[HLINES_MAX];
	struct span		     sp[SBX_CRED_RULES_MAX * 2 + 8];
	struct sbx_buf		     res = SBX_BUF_INIT;
	size_t			     nl = 0, nsp = 0, i, j, k, p, q;
	size_t			     ts, te, qs, vs_, ve_;
	size_t			     need;
	int			     match[SBX_CRED_RULES_MAX];
	int			     nhost = 0, fold = 0, te_seen = 0;
	int			     w, badver;
	long long		     cl = -1;
	char			    *o;

	memset(r, 0, sizeof(*r));
	r->content_length = -1;
	*which = -1;
	for (i = 0; i < n && i < SBX_CRED_RULES_MAX; i++)
		match[i] =
		    sbx_credrule_match(&c[i].rule, host, (unsigned short)port);
	/* Request line: METHOD SP target SP HTTP/1.x CRLF */
	for (i = 0; i < len && h[i] != '\r' && h[i] != '\n'; i++)
		;
	if (i + 1 >= len || h[i] != '\r' || h[i + 1] != '\n')
		return refuse(status, reason, 400, "malformed_request");
	for (p = 0; p < i && h[p] != ' '; p++)
		if (!isalpha((unsigned char)h[p]) && h[p] != '-' && h[p] != '_')
			return refuse(status, reason, 400, "malformed_request");
	if (p == 0 || p >= i || p >= sizeof(r->method))
		return refuse(status, reason, 400, "malformed_request");
	memcpy(r->method, h, p);
	r->method[p] = '\0';
	ts = p + 1;
	for (te = ts; te < i && h[te] != ' '; te++)
		if ((unsigned char)h[te] <= 0x20 ||
		    (unsigned char)h[te] >= 0x7f)
			return refuse(status, reason, 400, "malformed_request");
	if (te == ts || te >= i)
		return refuse(status, reason, 400, "malformed_request");
	/* Placeholders first: whatever else is wrong with the head, one
	 * seen where it does not belong is what is reported. */
	qs = ts;
	while (qs < te && h[qs] != '?')
		qs++;
	for (p = qs + 1; p < te; p = q + 1) {
		for (q = p; q < te && h[q] != '&' && h[q] != '#'; q++)
			;
		for (k = p; k < q && h[k] != '='; k++)
			;
		if (k < q) {
			char   name[80], val[SBX_CRED_PLACEHOLDER_MAX * 3 + 8];
			size_t nn = k - p, vn = q - k - 1;

			if (nn < sizeof(name) && vn < sizeof(val)) {
				memcpy(name, h + p, nn);
				nn = pct_decode(name, nn);
				name[nn] = '\0';
				memcpy(val, h + k + 1, vn);
				vn = pct_decode(val, vn);
				val[vn] = '\0';
				for (j = 0; j < n; j++)
					if (match[j] &&
					    c[j].rule.kind == SBX_CRED_QUERY &&
					    strcmp(name, c[j].rule.qname) ==
						0 &&
					    strcmp(val, c[j].ph) == 0 &&
					    nsp < sizeof(sp) / sizeof(*sp)) {
						sp[nsp].s = k + 1;
						sp[nsp].e = q;
						sp[nsp++].rule = (int)j;
						break;
					}
			}
		}
		if (q < te && h[q] == '#')
			break;
	}
	badver = strncmp(h + te, " HTTP/1.1\r\n", 11) != 0 &&
	    strncmp(h + te, " HTTP/1.0\r\n", 11) != 0;
	if (!badver && h[te + 8] == '0')
		r->close = 1;
	/* Header lines. */
	for (p = i + 2; p + 1 < len; p = q + 2) {
		struct hline *l;

		for (q = p; q < len && h[q] != '\r' && h[q] != '\n'; q++)
			;
		if (q + 1 >= len || h[q] != '\r' || h[q + 1] != '\n')
			return refuse(status, reason, 400, "malformed_request");
		if (q == p)
			break; /* the blank line */
		if (nl == HLINES_MAX)
			return refuse(status, reason, 431, "too_many_headers");
		l = &L[nl++];
		memset(l, 0, sizeof(*l));
		l->s = p;
		l->e = q;
		l->inject = -1;
		if (h[p] == ' ' || h[p] == '\t') {
			l->fold = fold = 1;
			continue;
		}
		for (k = p; k < q && h[k] != ':'; k++)
			;
		l->ns = p;
		l->ne = k;
		if (k == q || k == p) {
			l->fold = fold = 1; /* no name: refused below */
			continue;
		}
		for (k++; k < q && (h[k] == ' ' || h[k] == '\t'); k++)
			;
		vs_ = k;
		ve_ = q;
		while (ve_ > vs_ && (h[ve_ - 1] == ' ' || h[ve_ - 1] == '\t'))
			ve_--;
		l->vs = vs_;
		l->ve = ve_;
		/* A rule's own header, with its placeholder: the place. */
		for (j = 0; j < n && l->inject == -1; j++) {
			const char *at;

			if (!match[j] || c[j].rule.kind == SBX_CRED_QUERY ||
			    !name_is(h, l, c[j].rule.hname))
				continue;
			if (c[j].rule.kind == SBX_CRED_HEADER) {
				at = memmem(h + vs_, ve_ - vs_, c[j].ph,
				    strlen(c[j].ph));
				if (at != NULL &&
				    nsp < sizeof(sp) / sizeof(*sp)) {
					l->inject = (int)j;
					sp[nsp].s = (size_t)(at - h);
					sp[nsp].e = sp[nsp].s + strlen(c[j].ph);
					sp[nsp++].rule = (int)j;
				}
			} else if (ve_ - vs_ > 6 &&
			    strncasecmp(h + vs_, "basic ", 6) == 0) {
				unsigned char dec[600];
				size_t	      dl, pl = strlen(c[j].ph);
				size_t	      bs = vs_ + 6;

				while (bs < ve_ && h[bs] == ' ')
					bs++;
				if (sodium_base642bin(dec, sizeof(dec) - 1,
					h + bs, ve_ - bs, NULL, &dl, NULL,
					sodium_base64_VARIANT_ORIGINAL) == 0 &&
				    dl > pl && dec[dl - pl - 1] == ':' &&
				    memcmp(dec + dl - pl, c[j].ph, pl) == 0 &&
				    nsp < sizeof(sp) / sizeof(*sp)) {
					l->inject = (int)j;
					sp[nsp].s = bs;
					sp[nsp].e = ve_;
					sp[nsp++].rule = (int)j;
				}
				sodium_memzero(dec, sizeof(dec));
			}
		}
	}
	if (p + 1 >= len)
		return refuse(status, reason, 400, "malformed_request");
	/* The head but the places of the rules of this host, scanned. */
	for (k = 0, p = 0; k <= nsp; k++) {
		size_t s = k < nsp ? sp[k].s : len;

		/* spans are in head order: the target's first, then the
		 * headers' */
		if (s > p)
			sbx_buf_append(&res, h + p, s - p);
		if (k < nsp)
			p = sp[k].e;
	}
	if (res.p == NULL && sbx_buf_puts(&res, "") == -1) {
		*which = (int)n;
		return refuse(status, reason, 403, "credential_host_mismatch");
	}
	w = sbx_cred_scan(c, n, res.p, res.len);
	sbx_buf_release(&res);
	if (w >= 0) {
		*which = w;
		return refuse(status, reason, 403, "credential_host_mismatch");
	}
	if (badver)
		return refuse(status, reason, 505,
		    strncmp(h + te, " HTTP/2", 7) == 0 ? "http2_not_supported" :
							 "bad_version");
	if (fold)
		return refuse(status, reason, 400, "obs_fold");
	if (strcmp(r->method, "CONNECT") == 0)
		return refuse(status, reason, 405, "method_not_allowed");
	if (h[ts] != '/' && !(te - ts == 1 && h[ts] == '*'))
		return refuse(status, reason, 400, "bad_target");
	if (strcmp(r->method, "HEAD") == 0)
		r->head = 1;
	for (k = 0; k < nl; k++) {
		const struct hline *l = &L[k];
		const char	   *v = h + l->vs;
		size_t		    vn = l->ve - l->vs;

		if (name_is(h, l, "host")) {
			nhost++;
			if (!host_ok(v, vn, host, port))
				return refuse(status, reason, 403,
				    "tunnel_host_mismatch");
		} else if (name_is(h, l, "content-length")) {
			long long x = 0;

			if (vn == 0 || vn > 18)
				return refuse(status, reason, 400,
				    "bad_content_length");
			for (j = 0; j < vn; j++) {
				if (!isdigit((unsigned char)v[j]))
					return refuse(status, reason, 400,
					    "bad_content_length");
				x = x * 10 + (v[j] - '0');
			}
			if (cl != -1 && cl != x)
				return refuse(status, reason, 400,
				    "bad_content_length");
			cl = x;
		} else if (name_is(h, l, "transfer-encoding")) {
			/* chunked alone: anything else (or chunked not last)
			 * frames the body in a way the next hop may read
			 * otherwise. */
			if (te_seen || vn != 7 ||
			    strncasecmp(v, "chunked", 7) != 0)
				return refuse(status, reason, 501,
				    "bad_transfer_encoding");
			te_seen = 1;
		} else if (name_is(h, l, "connection")) {
			if (has_token(v, vn, "close"))
				r->close = 1;
		} else if (name_is(h, l, "expect")) {
			if (vn != 12 || strncasecmp(v, "100-continue", 12) != 0)
				return refuse(status, reason, 417,
				    "expectation_failed");
			r->expect = 1;
		}
	}
	if (nhost != 1)
		return refuse(status, reason, 400,
		    nhost == 0 ? "missing_host" : "duplicate_host");
	if (te_seen && cl != -1)
		return refuse(status, reason, 400, "ambiguous_length");
	if (cl > 0 && (unsigned long long)cl > max_body)
		return refuse(status, reason, 413, "request_too_large");
	r->content_length = cl;
	r->chunked = te_seen;
	/* The head to send, with the values: sodium_malloc'd, wiped. */
	need = len + 64;
	for (k = 0; k < nsp; k++) {
		const struct sbx_cred *x = &c[sp[k].rule];

		need += 3 * x->vlen + strlen(x->rule.tmpl) +
		    4 * (strlen(x->rule.user) + x->vlen + 3) / 3 + 128;
	}
	if ((r->out = sodium_malloc(need)) == NULL)
		return refuse(status, reason, 502, "no_memory");
	r->outcap = need;
	o = r->out;
	/* Request line, the query's placeholders replaced. */
	memcpy(o, h, ts);
	o += ts;
	for (p = ts, k = 0; k < nsp && sp[k].s < te; k++) {
		memcpy(o, h + p, sp[k].s - p);
		o += sp[k].s - p;
		o += pct_encode(o, c[sp[k].rule].val, c[sp[k].rule].vlen);
		p = sp[k].e;
		r->used |= 1u << sp[k].rule;
	}
	memcpy(o, h + p, i + 2 - p);
	o += i + 2 - p;
	for (k = 0; k < nl; k++) {
		const struct hline    *l = &L[k];
		const struct sbx_cred *x;

		/* Hop-by-hop and proxy headers stop here; so does an
		 * upgrade (the proxy reads HTTP/1.1, nothing after it),
		 * and Expect (the proxy answers 100 itself). */
		if (name_is(h, l, "proxy-authorization") ||
		    name_is(h, l, "proxy-connection") ||
		    name_is(h, l, "upgrade") ||
		    name_is(h, l, "http2-settings") || name_is(h, l, "expect"))
			continue;
		if (l->inject < 0) {
			memcpy(o, h + l->s, l->e - l->s);
			o += l->e - l->s;
			*o++ = '\r';
			*o++ = '\n';
			continue;
		}
		x = &c[l->inject];
		r->used |= 1u << l->inject;
		o += sprintf(o, "%s: ", x->rule.hname);
		if (x->rule.kind == SBX_CRED_HEADER) {
			const char *t = strstr(x->rule.tmpl, "{}");

			memcpy(o, x->rule.tmpl, (size_t)(t - x->rule.tmpl));
			o += t - x->rule.tmpl;
			memcpy(o, x->val, x->vlen);
			o += x->vlen;
			o += sprintf(o, "%s", t + 2);
		} else {
			/* Basic base64(user:value) */
			size_t ul = strlen(x->rule.user), pl = ul + 1 + x->vlen;
			char  *plain = sodium_malloc(pl + 1);

			if (plain == NULL) {
				sbx_cred_req_release(r);
				return refuse(status, reason, 502, "no_memory");
			}
			memcpy(plain, x->rule.user, ul);
			plain[ul] = ':';
			memcpy(plain + ul + 1, x->val, x->vlen);
			o += sprintf(o, "Basic ");
			sodium_bin2base64(o,
			    sodium_base64_ENCODED_LEN(pl,
				sodium_base64_VARIANT_ORIGINAL),
			    (unsigned char *)plain, pl,
			    sodium_base64_VARIANT_ORIGINAL);
			o += strlen(o);
			sodium_free(plain);
		}
		*o++ = '\r';
		*o++ = '\n';
	}
	*o++ = '\r';
	*o++ = '\n';
	r->outlen = (size_t)(o - r->out);
	return 0;
}

void
sbx_cred_req_release(struct sbx_cred_req *r)
{
	if (r->out != NULL)
		sodium_free(r->out);
	r->out = NULL;
	r->outlen = r->outcap = 0;
}

/* ---- streamed bodies ---------------------------------------------------- */

struct sbx_cred_scanner {
	size_t n;
	char (*ph)[SBX_CRED_PLACEHOLDER_MAX + 1]; /* lowercased */
	size_t *phlen;
	size_t	keep; /* longest - 1 */
	char  *w; /* carry, then the new bytes */
	size_t wlen, wcap;
	int    pst; /* 0, 1 ('%'), 2 ('%' and a digit) */
	char   pend[2];
};

struct sbx_cred_scanner *
sbx_cred_scanner_new(const struct sbx_cred *c, size_t n)
{
	struct sbx_cred_scanner *s;
	size_t			 i, l;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->n = n;
	if ((s->ph = calloc(n ? n : 1, sizeof(*s->ph))) == NULL ||
	    (s->phlen = calloc(n ? n : 1, sizeof(*s->phlen))) == NULL)
		goto bad;
	for (i = 0; i < n; i++) {
		snprintf(s->ph[i], sizeof(s->ph[i]), "%s", c[i].ph);
		l = strlen(s->ph[i]);
		lower(s->ph[i], l);
		s->phlen[i] = l;
		if (l - 1 > s->keep)
			s->keep = l - 1;
	}
	s->wcap = s->keep + IOBUF + 8;
	if ((s->w = malloc(s->wcap)) == NULL)
		goto bad;
	return s;
bad:
	sbx_cred_scanner_free(s);
	return NULL;
}

/* ASCII case folding of one byte, with no locale. */
static inline unsigned char
fold(unsigned char c)
{
	return (unsigned char)(c + ((unsigned)(c - 'A') < 26u) * 32);
}

/*
 * A placeholder in the window, whatever the case of its letters (the
 * window holds raw bytes where a chunk had no escapes, folded ones where
 * it was decoded; the comparison folds both alike).  Every placeholder
 * starts with the marker, whose first '-' comes after three letters:
 * memchr() finds the candidates at the speed of memory, where folding
 * every byte first cost more than the proxy's own TLS (measured with
 * perf on a 1 GiB upload).
 */
static int
scanner_search(struct sbx_cred_scanner *s)
{
	const unsigned char *w = (const unsigned char *)s->w, *e = w + s->wlen;
	const unsigned char *p = w + 3, *st;
	size_t		     i, j, l;

	if (s->wlen < MARKER_LEN)
		return -1;
	while (p < e && (p = memchr(p, '-', (size_t)(e - p))) != NULL) {
		st = p - 3;
		p++;
		if (fold(st[0]) != (unsigned char)MARKER[0] ||
		    fold(st[1]) != (unsigned char)MARKER[1] ||
		    fold(st[2]) != (unsigned char)MARKER[2])
			continue;
		for (i = 0; i < s->n; i++) {
			l = s->phlen[i];
			if ((size_t)(e - st) < l)
				continue;
			for (j = 0; j < l; j++)
				if (fold(st[j]) != (unsigned char)s->ph[i][j])
					break;
			if (j == l)
				return (int)i;
		}
	}
	return -1;
}

int
sbx_cred_scanner_feed(struct sbx_cred_scanner *s, const void *buf, size_t n)
{
	const unsigned char *b = buf;
	size_t		     k, i, o;
	int		     h, l, r;

	if (s->n == 0)
		return -1;
	while (n > 0) {
		k = n < IOBUF ? n : IOBUF;
		o = s->wlen;
		if (s->pst == 0 && memchr(b, '%', k) == NULL) {
			/* The common case: no escapes; the raw bytes (the
			 * search folds). */
			memcpy(s->w + o, b, k);
			o += k;
		} else {
			for (i = 0; i < k; i++) {
				unsigned char ch = b[i];

				if (s->pst == 0) {
					if (ch == '%') {
						s->pst = 1;
						continue;
					}
					s->w[o++] = (char)tolower(ch);
				} else if (s->pst == 1) {
					if (hexval(ch) >= 0) {
						s->pend[0] = (char)ch;
						s->pst = 2;
					} else {
						s->w[o++] = '%';
						s->w[o++] = (char)tolower(ch);
						s->pst = 0;
					}
				} else {
					if ((h = hexval(
						 (unsigned char)s->pend[0])) >=
						0 &&
					    (l = hexval(ch)) >= 0)
						s->w[o++] =
						    (char)tolower(h * 16 + l);
					else {
						s->w[o++] = '%';
						s->w[o++] = (char)tolower(
						    (unsigned char)s->pend[0]);
						s->w[o++] = (char)tolower(ch);
					}
					s->pst = 0;
				}
			}
		}
		s->wlen = o;
		if ((r = scanner_search(s)) >= 0)
			return r;
		if (s->wlen > s->keep) {
			memmove(s->w, s->w + s->wlen - s->keep, s->keep);
			s->wlen = s->keep;
		}
		b += k;
		n -= k;
	}
	return -1;
}

void
sbx_cred_scanner_free(struct sbx_cred_scanner *s)
{
	if (s == NULL)
		return;
	free(s->ph);
	free(s->phlen);
	free(s->w);
	free(s);
}

struct sbx_cred_mask {
	size_t		   n;
	char		 **v; /* lowercased values */
	size_t		  *vl;
	size_t		   keep;
	char		  *w, *lw; /* held + new, and lowercased */
	size_t		   wlen, wcap;
	sbx_cred_sink	   sink;
	void		  *arg;
	unsigned long long hits;
};

struct sbx_cred_mask *
sbx_cred_mask_new(const struct sbx_cred *c, size_t n, sbx_cred_sink sink,
    void *arg)
{
	struct sbx_cred_mask *m;
	size_t		      i;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	m->sink = sink;
	m->arg = arg;
	if ((m->v = calloc(n ? n : 1, sizeof(*m->v))) == NULL ||
	    (m->vl = calloc(n ? n : 1, sizeof(*m->vl))) == NULL)
		goto bad;
	for (i = 0; i < n; i++) {
		/* Short values are not masked (as scrub.h: too many false
		 * hits). */
		if (c[i].vlen < 6)
			continue;
		if ((m->v[m->n] = sodium_malloc(c[i].vlen)) == NULL)
			goto bad;
		memcpy(m->v[m->n], c[i].val, c[i].vlen);
		lower(m->v[m->n], c[i].vlen);
		m->vl[m->n] = c[i].vlen;
		if (c[i].vlen - 1 > m->keep)
			m->keep = c[i].vlen - 1;
		m->n++;
	}
	m->wcap = m->keep + IOBUF;
	if ((m->w = malloc(m->wcap)) == NULL ||
	    (m->lw = malloc(m->wcap)) == NULL)
		goto bad;
	return m;
bad:
	sbx_cred_mask_free(m);
	return NULL;
}

int
sbx_cred_mask_write(struct sbx_cred_mask *m, const void *buf, size_t n)
{
	const char *b = buf, *p;
	size_t	    k, i, out;

	if (m->n == 0)
		return n > 0 ? m->sink(m->arg, buf, n) : 0;
	while (n > 0) {
		k = n < IOBUF ? n : IOBUF;
		memcpy(m->w + m->wlen, b, k);
		for (i = 0; i < k; i++)
			m->lw[m->wlen + i] = (char)((unsigned char)b[i] +
			    ((unsigned)((unsigned char)b[i] - 'A') < 26u) * 32);
		m->wlen += k;
		for (i = 0; i < m->n; i++)
			for (p = m->lw;
			     (p = memmem(p, m->wlen - (size_t)(p - m->lw),
				  m->v[i], m->vl[i])) != NULL;
			     p += m->vl[i]) {
				memset(m->w + (p - m->lw), '*', m->vl[i]);
				memset((char *)(uintptr_t)p, '*', m->vl[i]);
				m->hits++;
			}
		out = m->wlen > m->keep ? m->wlen - m->keep : 0;
		if (out > 0 && m->sink(m->arg, m->w, out) == -1)
			return -1;
		memmove(m->w, m->w + out, m->wlen - out);
		memmove(m->lw, m->lw + out, m->wlen - out);
		m->wlen -= out;
		b += k;
		n -= k;
	}
	return 0;
}

int
sbx_cred_mask_flush(struct sbx_cred_mask *m)
{
	size_t n = m->wlen;

	m->wlen = 0;
	return n > 0 ? m->sink(m->arg, m->w, n) : 0;
}

unsigned long long
sbx_cred_mask_hits(const struct sbx_cred_mask *m)
{
	return m->hits;
}

void
sbx_cred_mask_free(struct sbx_cred_mask *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; m->v != NULL && i < m->n; i++)
		sodium_free(m->v[i]);
	free(m->v);
	free(m->vl);
	if (m->w != NULL)
		sodium_memzero(m->w, m->wcap);
	free(m->w);
	if (m->lw != NULL)
		sodium_memzero(m->lw, m->wcap);
	free(m->lw);
	free(m);
}

/* ---- the worker --------------------------------------------------------- */

/* A socket BIO that first serves the bytes the loop had already read
 * (the start of a ClientHello sent with the CONNECT). */
struct pbio {
	int	    fd;
	const char *pre;
	size_t	    npre, off;
};

static BIO_METHOD    *pbio_meth;
static pthread_once_t pbio_once = PTHREAD_ONCE_INIT;

static int
pbio_read(BIO *b, char *out, int n)
{
	struct pbio *p = BIO_get_data(b);
	ssize_t	     r;
	size_t	     k;

	BIO_clear_retry_flags(b);
	if (n <= 0)
		return 0;
	if (p->off < p->npre) {
		k = p->npre - p->off < (size_t)n ? p->npre - p->off : (size_t)n;
		memcpy(out, p->pre + p->off, k);
		p->off += k;
		return (int)k;
	}
	do
		r = recv(p->fd, out, (size_t)n, 0);
	while (r == -1 && errno == EINTR);
	/* A timeout (SO_RCVTIMEO) is an error like any other: no retry. */
	return r < 0 ? -1 : (int)r;
}

static int
pbio_write(BIO *b, const char *in, int n)
{
	struct pbio *p = BIO_get_data(b);
	ssize_t	     r;

	BIO_clear_retry_flags(b);
	do
		r = send(p->fd, in, (size_t)n, MSG_NOSIGNAL);
	while (r == -1 && errno == EINTR);
	return r < 0 ? -1 : (int)r;
}

static long
pbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	(void)b;
	(void)num;
	(void)ptr;
	return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int
pbio_destroy(BIO *b)
{
	free(BIO_get_data(b));
	BIO_set_data(b, NULL);
	return 1;
}

static void
pbio_init(void)
{
	if ((pbio_meth =
		    BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK,
			"sbx-socket")) == NULL)
		return;
	BIO_meth_set_read(pbio_meth, pbio_read);
	BIO_meth_set_write(pbio_meth, pbio_write);
	BIO_meth_set_ctrl(pbio_meth, pbio_ctrl);
	BIO_meth_set_destroy(pbio_meth, pbio_destroy);
}

static BIO *
pbio_new(int fd, const char *pre, size_t npre)
{
	struct pbio *p;
	BIO	    *b;

	pthread_once(&pbio_once, pbio_init);
	if (pbio_meth == NULL || (p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->fd = fd;
	p->pre = pre;
	p->npre = npre;
	if ((b = BIO_new(pbio_meth)) == NULL) {
		free(p);
		return NULL;
	}
	BIO_set_data(b, p);
	BIO_set_init(b, 1);
	return b;
}

void *
sbx_cred_client_ctx(struct sbx_error *e)
{
	static const unsigned char alpn[] = "\x08http/1.1";
	SSL_CTX			  *ctx;

	/* Full verification against the host's store, as curl on the host
	 * would do: an administrator behind a private CA sets
	 * SSL_CERT_FILE (or SSL_CERT_DIR) for the proxy. */
	if ((ctx = SSL_CTX_new(TLS_client_method())) == NULL ||
	    !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_set_default_verify_paths(ctx) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
		SSL_CTX_free(ctx);
		sbx_error_set(e, SBX_K_UNAVAILABLE, "tls", "tls_setup",
		    "cannot set up TLS to upstream hosts");
		return NULL;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_options(ctx,
	    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION |
		SSL_OP_IGNORE_UNEXPECTED_EOF);
	return ctx;
}

/* A buffered reader over one TLS side. */
struct rd {
	SSL		   *ssl;
	char		   *b;
	size_t		    off, len, cap;
	int		    eof;
	unsigned long long *count;
};

struct worker {
	struct sbx_cred_conn	*k;
	SSL			*c, *u;
	struct rd		 rc, ru;
	struct sbx_cred_mask	*mask;
	struct sbx_cred_scanner *scan;
	unsigned		 used; /* bits: reported already */
	unsigned		 requests;
	unsigned long long	 bytes_in, bytes_out;
	long long		 t_end;
	int			 found; /* placeholder seen in a body */
	unsigned long long	 body; /* this request's body so far */
	int			 upfail;
};

static void
ev_send(struct worker *w, enum sbx_cred_ev type, int status, const char *reason,
    const char *secret, const char *method, const char *detail)
{
	struct sbx_cred_event *ev;
	ssize_t		       r;

	if ((ev = calloc(1, sizeof(*ev))) == NULL)
		return;
	ev->tag = w->k->tag;
	ev->type = type;
	ev->status = status;
	snprintf(ev->reason, sizeof(ev->reason), "%s", reason ? reason : "");
	snprintf(ev->secret, sizeof(ev->secret), "%s", secret ? secret : "");
	snprintf(ev->method, sizeof(ev->method), "%s", method ? method : "");
	snprintf(ev->detail, sizeof(ev->detail), "%s", detail ? detail : "");
	ev->bytes_in = w->bytes_in;
	ev->bytes_out = w->bytes_out;
	ev->requests = w->requests;
	do
		r = write(w->k->evfd, &ev, sizeof(ev));
	while (r == -1 && errno == EINTR);
	if (r != (ssize_t)sizeof(ev))
		free(ev);
}

static int
rd_fill(struct rd *r)
{
	int n;

	if (r->eof)
		return 0;
	if (r->off == r->len)
		r->off = r->len = 0;
	if (r->len == r->cap) {
		if (r->off == 0)
			return -1; /* full: the caller's cap */
		memmove(r->b, r->b + r->off, r->len - r->off);
		r->len -= r->off;
		r->off = 0;
	}
	n = SSL_read(r->ssl, r->b + r->len, (int)(r->cap - r->len));
	if (n <= 0) {
		if (SSL_get_error(r->ssl, n) == SSL_ERROR_ZERO_RETURN) {
			r->eof = 1;
			return 0;
		}
		ERR_clear_error();
		return -1;
	}
	r->len += (size_t)n;
	if (r->count != NULL)
		*r->count += (unsigned long long)n;
	return n;
}

/* A head (through its blank line) at r->b + r->off: its length, 0 on a
 * clean end before any byte, -1 on an error or an end mid-head, -2 when
 * larger than HEAD_MAX. */
static long
rd_head(struct rd *r)
{
	size_t from = 0;
	char  *p;
	int    k;

	for (;;) {
		if (r->len - r->off >= 4 &&
		    (p = memmem(r->b + r->off + from, r->len - r->off - from,
			 "\r\n\r\n", 4)) != NULL)
			return (long)(p + 4 - (r->b + r->off));
		if (r->len - r->off >= HEAD_MAX)
			return -2;
		from = r->len - r->off > 3 ? r->len - r->off - 3 : 0;
		if ((k = rd_fill(r)) == 0)
			return r->len == r->off ? 0 : -1;
		if (k < 0)
			return -1;
	}
}

/* A line (with its CRLF) of at most LINE_MAX_ bytes: its length, or -1. */
static long
rd_line(struct rd *r)
{
	char *p;
	int   k;

	for (;;) {
		if ((p = memmem(r->b + r->off, r->len - r->off, "\r\n", 2)) !=
		    NULL)
			return (long)(p + 2 - (r->b + r->off));
		if (r->len - r->off > LINE_MAX_)
			return -1;
		if ((k = rd_fill(r)) <= 0)
			return -1;
	}
}

static int
wr_all(SSL *s, const void *buf, size_t n)
{
	int k;

	while (n > 0) {
		k = SSL_write(s, buf, n > INT32_MAX ? INT32_MAX : (int)n);
		if (k <= 0) {
			ERR_clear_error();
			return -1;
		}
		buf = (const char *)buf + k;
		n -= (size_t)k;
	}
	return 0;
}

/* Where a body's bytes go: data (1) or framing (0). */
typedef int (*emit_fn)(struct worker *, const char *, size_t, int data);

/* Request bytes: data scanned first; the read in which a placeholder
 * completes is never sent. */
static int
emit_req(struct worker *w, const char *p, size_t n, int data)
{
	int k;

	if (data && (k = sbx_cred_scanner_feed(w->scan, p, n)) >= 0) {
		w->found = k;
		return -2;
	}
	/* A chunked body is bounded as a declared one is. */
	if (data && (w->body += n) > w->k->max_request)
		return -4;
	if (wr_all(w->u, p, n) == -1) {
		w->upfail = 1;
		return -3;
	}
	return 0;
}

static int
mask_sink(void *arg, const void *p, size_t n)
{
	struct worker *w = arg;

	return wr_all(w->c, p, n);
}

static int
emit_resp(struct worker *w, const char *p, size_t n, int data)
{
	(void)data;
	return sbx_cred_mask_write(w->mask, p, n) == -1 ? -1 : 0;
}

/* n bytes of data from r. */
static int
copy_n(struct worker *w, struct rd *r, unsigned long long n, emit_fn emit)
{
	size_t k;
	int    rc;

	while (n > 0) {
		if (r->off == r->len) {
			if (sbx_now_ms() > w->t_end || rd_fill(r) <= 0)
				return -1;
		}
		k = r->len - r->off;
		if (k > n)
			k = (size_t)n;
		if ((rc = emit(w, r->b + r->off, k, 1)) != 0)
			return rc;
		r->off += k;
		n -= k;
	}
	return 0;
}

/* A body framed as (chunked, length, or to the end when len < 0 and
 * !chunked). */
static int
copy_body(struct worker *w, struct rd *r, int chunked, long long len,
    emit_fn emit)
{
	unsigned long long size;
	long		   l;
	size_t		   i;
	int		   rc, d;

	if (!chunked && len >= 0)
		return copy_n(w, r, (unsigned long long)len, emit);
	if (!chunked) {
		for (;;) {
			if (r->off == r->len) {
				if (sbx_now_ms() > w->t_end)
					return -1;
				if ((rc = rd_fill(r)) == 0)
					return 0;
				if (rc < 0)
					return -1;
			}
			if ((rc = emit(w, r->b + r->off, r->len - r->off, 1)) !=
			    0)
				return rc;
			r->off = r->len;
		}
	}
	for (;;) {
		if ((l = rd_line(r)) <= 2)
			return -1;
		size = 0;
		for (i = 0; i < (size_t)l - 2; i++) {
			if ((d = hexval((unsigned char)r->b[r->off + i])) < 0)
				break;
			if (size >> 56)
				return -1;
			size = size * 16 + (unsigned)d;
		}
		/* Digits, then an extension (";...") or the CRLF. */
		if (i == 0 ||
		    (r->b[r->off + i] != ';' && r->b[r->off + i] != '\r' &&
			r->b[r->off + i] != ' ' && r->b[r->off + i] != '\t'))
			return -1;
		if ((rc = emit(w, r->b + r->off, (size_t)l, 0)) != 0)
			return rc;
		r->off += (size_t)l;
		if (size == 0)
			break;
		if ((rc = copy_n(w, r, size, emit)) != 0)
			return rc;
		if ((l = rd_line(r)) != 2)
			return -1;
		if ((rc = emit(w, r->b + r->off, 2, 0)) != 0)
			return rc;
		r->off += 2;
	}
	/* Trailers, scanned as data, then the blank line. */
	for (;;) {
		if ((l = rd_line(r)) < 2)
			return -1;
		if ((rc = emit(w, r->b + r->off, (size_t)l, l > 2)) != 0)
			return rc;
		r->off += (size_t)l;
		if (l == 2)
			return 0;
	}
}

static void
answer(struct worker *w, int status, const char *reason)
{
	char	    b[768];
	const char *text;
	int	    n, bn;
	char	    body[400];

	switch (status) {
	case 400: text = "Bad Request"; break;
	case 403: text = "Forbidden"; break;
	case 405: text = "Method Not Allowed"; break;
	case 413: text = "Payload Too Large"; break;
	case 417: text = "Expectation Failed"; break;
	case 431: text = "Request Header Fields Too Large"; break;
	case 501: text = "Not Implemented"; break;
	case 502: text = "Bad Gateway"; break;
	case 505: text = "HTTP Version Not Supported"; break;
	default: text = "Error"; break;
	}
	bn = snprintf(body, sizeof(body), "sbx-proxy: %s:%u: %s\n", w->k->host,
	    w->k->port, reason);
	if (bn < 0 || (size_t)bn >= sizeof(body))
		bn = (int)strlen(body);
	n = snprintf(b, sizeof(b),
	    "HTTP/1.1 %d %s\r\nX-Proxy-Error: %s\r\n"
	    "Content-Type: text/plain\r\nConnection: close\r\n"
	    "Content-Length: %d\r\n\r\n%s",
	    status, text, reason, bn, body);
	if (n > 0 && (size_t)n < sizeof(b))
		(void)wr_all(w->c, b, (size_t)n);
}

/* The response to one request: 1xx heads passed on, then the final head
 * and its body.  1: the connection may serve another request; 0: it
 * ends; -1: failed. */
static int
relay_response(struct worker *w, const struct sbx_cred_req *q)
{
	const char *h, *p, *e, *v;
	long	    hl;
	long long   cl;
	int	    status, chunked, close_ = 0, rc;
	size_t	    vn;

	for (;;) {
		if ((hl = rd_head(&w->ru)) <= 0)
			return -1;
		h = w->ru.b + w->ru.off;
		if (hl < 12 || strncmp(h, "HTTP/1.", 7) != 0 ||
		    !isdigit((unsigned char)h[9]) ||
		    !isdigit((unsigned char)h[10]) ||
		    !isdigit((unsigned char)h[11]))
			return -1;
		status =
		    (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
		if (h[7] == '0')
			close_ = 1;
		cl = -1;
		chunked = 0;
		for (p = memchr(h, '\n', (size_t)hl) + 1; p < h + hl - 2;
		     p = e + 2) {
			e = memmem(p, (size_t)(h + hl - p), "\r\n", 2);
			if (e == NULL)
				return -1;
			if ((v = memchr(p, ':', (size_t)(e - p))) == NULL)
				continue;
			vn = (size_t)(e - v - 1);
			for (v++; vn > 0 && (*v == ' ' || *v == '\t'); v++)
				vn--;
			while (
			    vn > 0 && (v[vn - 1] == ' ' || v[vn - 1] == '\t'))
				vn--;
			if (v - p > 14 &&
			    strncasecmp(p, "content-length:", 15) == 0) {
				cl = 0;
				for (; vn > 0 && isdigit((unsigned char)*v);
				     v++, vn--)
					cl = cl * 10 + (*v - '0');
				if (vn != 0 || cl < 0)
					return -1;
			} else if (v - p > 17 &&
			    strncasecmp(p, "transfer-encoding:", 18) == 0)
				chunked = has_token(v, vn, "chunked");
			else if (v - p > 10 &&
			    strncasecmp(p, "connection:", 11) == 0 &&
			    has_token(v, vn, "close"))
				close_ = 1;
		}
		/* The head, masked of the values, then flushed: it is
		 * whole. */
		if (sbx_cred_mask_write(w->mask, h, (size_t)hl) == -1 ||
		    sbx_cred_mask_flush(w->mask) == -1)
			return -1;
		w->ru.off += (size_t)hl;
		if (status == 101)
			return -1; /* no upgrade was asked for */
		if (status >= 100 && status < 200)
			continue;
		break;
	}
	if (q->head || status == 204 || status == 304)
		rc = 0;
	else {
		if (!chunked && cl < 0)
			close_ = 1;
		rc =
		    copy_body(w, &w->ru, chunked, chunked ? -1 : cl, emit_resp);
		if (rc == 0)
			rc = sbx_cred_mask_flush(w->mask);
	}
	if (rc != 0)
		return -1;
	if (w->bytes_out > w->k->max_response)
		return -1;
	return close_ || q->close ? 0 : 1;
}

/* One request: its head judged and injected, its body streamed and
 * scanned, its response relayed.  1: another may follow; 0: the end. */
static int
relay_request(struct worker *w)
{
	struct sbx_cred_req q;
	const char	   *reason;
	long		    hl;
	int		    status, which, rc;
	unsigned	    i;

	if (sbx_now_ms() > w->t_end)
		return 0;
	if ((hl = rd_head(&w->rc)) == 0)
		return 0;
	if (hl == -2) {
		answer(w, 431, "header_too_large");
		ev_send(w, SBX_CRED_EV_REFUSED, 431, "header_too_large", NULL,
		    "-", NULL);
		return 0;
	}
	if (hl < 0)
		return 0;
	if (w->upfail) {
		/* The upstream's TLS failed: the client hears why, in
		 * words, as a 502. */
		answer(w, 502, "upstream_tls_failed");
		return 0;
	}
	if (sbx_cred_request(w->k->creds, w->k->ncreds, w->k->host, w->k->port,
		w->rc.b + w->rc.off, (size_t)hl, w->k->max_request, &q, &status,
		&reason, &which) == -1) {
		answer(w, status, reason);
		ev_send(w, SBX_CRED_EV_REFUSED, status, reason,
		    which >= 0 && (size_t)which < w->k->ncreds ?
			w->k->creds[which].rule.secret :
			which >= 0 ? "unknown" :
				     NULL,
		    q.method[0] ? q.method : "-", "head");
		return 0;
	}
	w->rc.off += (size_t)hl;
	if (q.expect)
		(void)wr_all(w->c, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	rc = wr_all(w->u, q.out, q.outlen);
	sbx_cred_req_release(&q);
	if (rc == -1) {
		answer(w, 502, "upstream_closed");
		return 0;
	}
	rc = 0;
	w->body = 0;
	if (q.chunked || q.content_length > 0)
		rc = copy_body(w, &w->rc, q.chunked,
		    q.chunked ? -1 : q.content_length, emit_req);
	if (rc == -2) {
		/* A placeholder in the body: the upstream connection is
		 * dropped mid-body (the request never completes there). */
		answer(w, 403, "credential_host_mismatch");
		ev_send(w, SBX_CRED_EV_REFUSED, 403, "credential_host_mismatch",
		    w->k->creds[w->found].rule.secret, q.method, "body");
		return 0;
	}
	if (rc == -4) {
		answer(w, 413, "request_too_large");
		ev_send(w, SBX_CRED_EV_REFUSED, 413, "request_too_large", NULL,
		    q.method, NULL);
		return 0;
	}
	if (rc == -1) {
		ev_send(w, SBX_CRED_EV_ERROR, 0, "client_closed", NULL,
		    q.method, NULL);
		return 0;
	}
	w->requests++;
	for (i = 0; i < w->k->ncreds && i < 32; i++)
		if ((q.used & (1u << i)) && !(w->used & (1u << i))) {
			w->used |= 1u << i;
			ev_send(w, SBX_CRED_EV_USED, 0, NULL,
			    w->k->creds[i].rule.secret, q.method, NULL);
		}
	/* rc -3 (the upstream stopped reading): its answer, if any, is
	 * still relayed. */
	if ((rc = relay_response(w, &q)) == -1) {
		ev_send(w, SBX_CRED_EV_ERROR, 502, "upstream_failed", NULL,
		    q.method, NULL);
		return 0;
	}
	return rc;
}

static void *
worker_main(void *arg)
{
	struct sbx_cred_conn *k = arg;
	struct worker	      w;
	struct timeval	      tv;
	char		      detail[160];
	unsigned char	      ip[16];
	BIO		     *bc, *bu;
	long		      vr;

	memset(&w, 0, sizeof(w));
	w.k = k;
	w.t_end = sbx_now_ms() + k->max_ms;
	detail[0] = '\0';
	(void)fcntl(k->cfd, F_SETFL, fcntl(k->cfd, F_GETFL) & ~O_NONBLOCK);
	(void)fcntl(k->ufd, F_SETFL, fcntl(k->ufd, F_GETFL) & ~O_NONBLOCK);
	/* Blocking, but never for longer than the idle timeout. */
	tv.tv_sec = (time_t)(k->idle_ms / 1000);
	tv.tv_usec = (suseconds_t)(k->idle_ms % 1000) * 1000;
	(void)setsockopt(k->cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(k->cfd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	(void)setsockopt(k->ufd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(k->ufd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	w.rc.cap = w.ru.cap = IOBUF + HEAD_MAX;
	w.rc.b = malloc(w.rc.cap);
	w.ru.b = malloc(w.ru.cap);
	w.rc.count = &w.bytes_in;
	w.ru.count = &w.bytes_out;
	w.scan = sbx_cred_scanner_new(k->creds, k->ncreds);
	w.mask = sbx_cred_mask_new(k->creds, k->ncreds, mask_sink, &w);
	w.c = SSL_new(k->server_ctx);
	w.u = SSL_new(k->client_ctx);
	bc = pbio_new(k->cfd, k->pre, k->npre);
	bu = pbio_new(k->ufd, NULL, 0);
	if (w.rc.b == NULL || w.ru.b == NULL || w.scan == NULL ||
	    w.mask == NULL || w.c == NULL || w.u == NULL || bc == NULL ||
	    bu == NULL) {
		BIO_free(bc);
		BIO_free(bu);
		ev_send(&w, SBX_CRED_EV_ERROR, 0, "no_memory", NULL, "-", NULL);
		goto out;
	}
	SSL_set_bio(w.c, bc, bc);
	SSL_set_bio(w.u, bu, bu);
	w.rc.ssl = w.c;
	w.ru.ssl = w.u;
	/* The real host first, verified by name (or address) against the
	 * host's store: a host the host does not trust is refused as it
	 * would be without sbx. */
	if (inet_pton(AF_INET, k->host, ip) == 1 ||
	    inet_pton(AF_INET6, k->host, ip) == 1)
		X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(w.u), k->host);
	else {
		SSL_set_tlsext_host_name(w.u, k->host);
		SSL_set1_host(w.u, k->host);
	}
	if (SSL_connect(w.u) != 1) {
		vr = SSL_get_verify_result(w.u);
		snprintf(detail, sizeof(detail), "%s",
		    vr != X509_V_OK ? X509_verify_cert_error_string(vr) :
				      "handshake failed");
		ERR_clear_error();
		w.upfail = 1;
		ev_send(&w, SBX_CRED_EV_ERROR, 502,
		    vr != X509_V_OK ? "upstream_cert_untrusted" :
				      "upstream_tls_failed",
		    NULL, "-", detail);
	}
	if (SSL_accept(w.c) != 1) {
		ERR_clear_error();
		if (!w.upfail)
			ev_send(&w, SBX_CRED_EV_ERROR, 0, "client_tls_failed",
			    NULL, "-", NULL);
		goto out;
	}
	while (relay_request(&w) == 1)
		;
	(void)SSL_shutdown(w.c);
out:
	SSL_free(w.c);
	SSL_free(w.u);
	sbx_cred_scanner_free(w.scan);
	sbx_cred_mask_free(w.mask);
	if (w.rc.b != NULL)
		sodium_memzero(w.rc.b, w.rc.cap);
	free(w.rc.b);
	if (w.ru.b != NULL)
		sodium_memzero(w.ru.b, w.ru.cap);
	free(w.ru.b);
	SSL_CTX_free(k->server_ctx);
	SSL_CTX_free(k->client_ctx);
	sbx_cred_free(k->creds, k->ncreds);
	free(k->pre);
	ERR_clear_error();
	/* Last: the loop closes the descriptors once it reads this, so
	 * that their numbers are never reused under a shutdown(2) of its
	 * own. */
	ev_send(&w, SBX_CRED_EV_DONE, 0, NULL, NULL, NULL, NULL);
	free(k);
	return NULL;
}

int
sbx_cred_conn_start(struct sbx_cred_conn *k)
{
	pthread_attr_t a;
	pthread_t      t;
	sigset_t       all, old;
	int	       rc;

	if (pthread_attr_init(&a) != 0)
		return -1;
	(void)pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	(void)pthread_attr_setstacksize(&a, 256 << 10);
	/* Signals stay the loop's: the worker blocks them all. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&t, &a, worker_main, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return 0;
}
