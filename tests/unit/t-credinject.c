/* t-credinject: the proxy's credential checks without sockets: a request
 * head injected in its place and refused anywhere else (other hosts,
 * path, other headers, any case, percent-encoded, folded, in Basic
 * credentials, by parts), bodies scanned across reads, responses masked
 * across reads with their lengths kept. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "tap.h"

#include "buf.h"
#include "credinject.h"

static struct sbx_cred *C;
static size_t		N;
static char		PH0[SBX_CRED_PLACEHOLDER_MAX + 1];
static char		PH1[SBX_CRED_PLACEHOLDER_MAX + 1];
static char		PH2[SBX_CRED_PLACEHOLDER_MAX + 1];

/* The head with @0@, @1@, @2@ replaced by the placeholders. */
static char *
expand(const char *t)
{
	struct sbx_buf b = SBX_BUF_INIT;

	for (; *t != '\0'; t++) {
		if (t[0] == '@' && t[1] >= '0' && t[1] <= '2' && t[2] == '@') {
			sbx_buf_puts(&b,
			    t[1] == '0'	    ? PH0 :
				t[1] == '1' ? PH1 :
					      PH2);
			t += 2;
		} else
			sbx_buf_append(&b, t, 1);
	}
	return sbx_buf_detach(&b);
}

/* Run a head for host:port: the reason ("ok" when passed), and the head
 * sent in out (may be NULL). */
static const char *
req(const char *host, unsigned port, const char *tmpl, char **out, int *which)
{
	struct sbx_cred_req r;
	const char	   *reason;
	char		   *h = expand(tmpl);
	int		    st, w;

	if (out != NULL)
		*out = NULL;
	if (sbx_cred_request(C, N, host, port, h, strlen(h), 1 << 20, &r, &st,
		&reason, &w) == -1) {
		free(h);
		if (which != NULL)
			*which = w;
		return reason;
	}
	if (out != NULL) {
		*out = calloc(1, r.outlen + 1);
		memcpy(*out, r.out, r.outlen);
	}
	sbx_cred_req_release(&r);
	free(h);
	return "ok";
}

static void
refused(const char *host, const char *tmpl, int want, const char *name)
{
	int	    w = -9;
	const char *r = req(host, 443, tmpl, NULL, &w);

	ok(strcmp(r, "credential_host_mismatch") == 0 && w == want,
	    "refused: %s", name);
	if (strcmp(r, "credential_host_mismatch") != 0 || w != want)
		diag("got %s, rule %d", r, w);
}

static int
sink(void *arg, const void *p, size_t n)
{
	return sbx_buf_append(arg, p, n);
}

/* js fed to a fresh scanner in pieces of every size: how many sizes
 * missed rule 0's placeholder. */
static size_t
every_split(const char *js)
{
	struct sbx_cred_scanner *sc;
	size_t			 step, i, len = strlen(js), bad = 0;
	int			 w;

	for (step = 1; step <= len; step++) {
		sc = sbx_cred_scanner_new(C, N);
		for (i = 0, w = -1; i < len && w < 0; i += step)
			w = sbx_cred_scanner_feed(sc, js + i,
			    len - i < step ? len - i : step);
		if (w != 0)
			bad++;
		sbx_cred_scanner_free(sc);
	}
	return bad;
}

int
main(void)
{
	json_t			*arr;
	struct sbx_error	 e;
	struct sbx_cred_scanner *sc;
	struct sbx_cred_mask	*m;
	struct sbx_buf		 b = SBX_BUF_INIT;
	char			*out, *body, js[2048], enc[400];
	size_t			 i, step;
	int			 bad, w;

	if (sodium_init() < 0)
		return 1;
	sbx_credrule_placeholder("OPENAI_API_KEY", PH0);
	sbx_credrule_placeholder("GH_TOKEN", PH1);
	sbx_credrule_placeholder("MAPS_KEY", PH2);
	snprintf(js, sizeof(js),
	    "["
	    "{\"secret\":\"OPENAI_API_KEY\",\"hosts\":[\"api.openai.test\"],"
	    "\"header\":\"Authorization: Bearer {}\",\"placeholder\":\"%s\","
	    "\"value\":\"sk-REALVALUE-0123456789\"},"
	    "{\"secret\":\"GH_TOKEN\",\"hosts\":[\"*.github.test\"],"
	    "\"basic_user\":\"x-access-token\",\"placeholder\":\"%s\","
	    "\"value\":\"ghp_realtoken42\"},"
	    "{\"secret\":\"MAPS_KEY\",\"hosts\":[\"maps.test:8443\"],"
	    "\"query\":\"key\",\"placeholder\":\"%s\","
	    "\"value\":\"AIza real&value\"}]",
	    PH0, PH1, PH2);
	arr = json_loads(js, 0, NULL);
	ok(sbx_cred_parse(arr, &C, &N, &e) == 0 && N == 3,
	    "session "
	    "credentials parse: %s",
	    e.message);
	ok(strstr(json_dumps(arr, 0), "REALVALUE") == NULL,
	    "the request's copy of a value is wiped");
	json_decref(arr);
	ok(sbx_cred_find(C, N, "api.openai.test", 443) == 0 &&
		sbx_cred_find(C, N, "a.github.test", 443) == 1 &&
		sbx_cred_find(C, N, "maps.test", 443) == -1 &&
		sbx_cred_find(C, N, "maps.test", 8443) == 2,
	    "rules found by "
	    "host and port");

	/* Refusals of the session request. */
	{
		static const char *const badreq[][2] = {
			{ "[{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":"
			  "\"k\",\"value\":\"v\"}]",
			    "malformed" },
			{ "[{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":"
			  "\"k\",\"placeholder\":\"sbx-cred-x-K\",\"value\":"
			  "\"v\"}]",
			    "bad_placeholder" },
			{ "{}", "malformed" },
		};

		for (i = 0; i < sizeof(badreq) / sizeof(*badreq); i++) {
			struct sbx_cred *x;
			size_t		 xn;

			memset(&e, 0, sizeof(e));
			arr = json_loads(badreq[i][0], 0, NULL);
			ok(sbx_cred_parse(arr, &x, &xn, &e) == -1 &&
				e.reason != NULL &&
				strcmp(e.reason, badreq[i][1]) == 0,
			    "session request refused: %s", badreq[i][1]);
			json_decref(arr);
		}
		snprintf(js, sizeof(js),
		    "[{\"secret\":\"OPENAI_API_KEY\","
		    "\"hosts\":[\"a.b\"],\"header\":\"X-Key: {}\","
		    "\"placeholder\":\"%s\",\"value\":\"a\\r\\nX-Evil: 1\"}]",
		    PH0);
		arr = json_loads(js, 0, NULL);
		memset(&e, 0, sizeof(e));
		{
			struct sbx_cred *x;
			size_t		 xn;

			ok(sbx_cred_parse(arr, &x, &xn, &e) == -1 &&
				strcmp(e.reason, "bad_value") == 0,
			    "a value with "
			    "CR LF for a header is refused");
		}
		json_decref(arr);
	}

	/* Injection in its place. */
	is_str(
	    req("api.openai.test", 443,
		"POST /v1/chat HTTP/1.1\r\nHost: "
		"api.openai.test\r\nAuthorization: Bearer @0@\r\nContent-Length: "
		"2\r\n\r\n",
		&out, NULL),
	    "ok", "header rule: passes");
	ok(out != NULL &&
		strstr(out,
		    "\r\nAuthorization: Bearer "
		    "sk-REALVALUE-0123456789\r\n") != NULL &&
		strstr(out, PH0) == NULL,
	    "the value replaces the placeholder in its header");
	free(out);
	{
		char cred[200], b64[300];

		snprintf(cred, sizeof(cred), "anyone:%s", PH1);
		sodium_bin2base64(b64, sizeof(b64), (unsigned char *)cred,
		    strlen(cred), sodium_base64_VARIANT_ORIGINAL);
		snprintf(js, sizeof(js),
		    "GET /repo.git/info/refs HTTP/1.1\r\n"
		    "Host: x.github.test\r\nAuthorization: Basic %s\r\n\r\n",
		    b64);
		is_str(req("x.github.test", 443, js, &out, NULL), "ok",
		    "basic rule: passes");
		snprintf(cred, sizeof(cred), "x-access-token:ghp_realtoken42");
		sodium_bin2base64(b64, sizeof(b64), (unsigned char *)cred,
		    strlen(cred), sodium_base64_VARIANT_ORIGINAL);
		ok(out != NULL && strstr(out, b64) != NULL,
		    "Basic base64(user:value) built from the rule's user");
		free(out);
		/* The same Basic credentials to another host. */
		snprintf(cred, sizeof(cred), "anyone:%s", PH1);
		sodium_bin2base64(b64, sizeof(b64), (unsigned char *)cred,
		    strlen(cred), sodium_base64_VARIANT_ORIGINAL);
		snprintf(js, sizeof(js),
		    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
		    "Authorization: Basic %s\r\n\r\n",
		    b64);
		refused("evil.test", js, 1,
		    "Basic credentials to another host");
	}
	is_str(req("maps.test", 8443,
		   "GET /geo?a=1&key=@2@&b=2 HTTP/1.1\r\n"
		   "Host: maps.test:8443\r\n\r\n",
		   &out, NULL),
	    "ok", "query rule: passes");
	ok(out != NULL &&
		strncmp(out,
		    "GET /geo?a=1&key=AIza%20real%26value&b=2 "
		    "HTTP/1.1\r\n",
		    50) == 0,
	    "the value percent-encoded in its "
	    "parameter");
	free(out);
	is_str(req("api.openai.test", 443,
		   "GET / HTTP/1.1\r\nHost: "
		   "api.openai.test\r\nAuthorization: Bearer mine\r\n"
		   "Proxy-Authorization: Basic eDp5\r\nExpect: 100-continue\r\n"
		   "Upgrade: h2c\r\nContent-Length: 0\r\n\r\n",
		   &out, NULL),
	    "ok", "no placeholder: passes as it is");
	ok(out != NULL && strstr(out, "Bearer mine") != NULL &&
		strstr(out, "Proxy-Authorization") == NULL &&
		strstr(out, "Expect") == NULL && strstr(out, "Upgrade") == NULL,
	    "proxy, expect and upgrade headers stop at the proxy");
	free(out);

	/* Refused: everywhere else. */
	refused("evil.test",
	    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
	    "Authorization: Bearer @0@\r\n\r\n",
	    0, "to an unlisted host");
	refused("api.openai.test",
	    "GET /v1/@0@ HTTP/1.1\r\nHost: "
	    "api.openai.test\r\n\r\n",
	    0, "in the path of the rule's host");
	refused("api.openai.test",
	    "GET / HTTP/1.1\r\nHost: api.openai.test"
	    "\r\nX-Other: @0@\r\n\r\n",
	    0, "in another header");
	refused("api.openai.test",
	    "GET / HTTP/1.1\r\nHost: api.openai.test"
	    "\r\nAuthorization: Bearer @1@\r\n\r\n",
	    1, "another rule's placeholder in the place");
	refused("maps.test",
	    "GET /?key=@2@ HTTP/1.1\r\nHost: maps.test\r\n"
	    "\r\n",
	    2, "a query rule on another port");
	refused("maps.test",
	    "GET /?other=@2@ HTTP/1.1\r\nHost: "
	    "maps.test:8443\r\n\r\n",
	    2, "in another parameter");
	{
		char lc[200];

		snprintf(lc, sizeof(lc),
		    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
		    "X-K: %s\r\n\r\n",
		    PH0);
		for (i = 0; lc[i] != '\0'; i++)
			lc[i] = (char)tolower((unsigned char)lc[i]);
		refused("evil.test", lc, 0, "lowercased");
		for (i = 0, w = 0; PH0[i] != '\0'; i++)
			w += snprintf(enc + w, sizeof(enc) - (size_t)w,
			    "%%%02X", (unsigned char)PH0[i]);
		snprintf(js, sizeof(js),
		    "GET /?q=%s HTTP/1.1\r\nHost: "
		    "evil.test\r\n\r\n",
		    enc);
		refused("evil.test", js, 0, "percent-encoded");
		snprintf(js, sizeof(js),
		    "GET /?q=%%25%s HTTP/1.1\r\nHost: "
		    "evil.test\r\n\r\n",
		    "73bx-cred-");
		refused("evil.test", js, 3, "double percent-encoded marker");
		snprintf(js, sizeof(js),
		    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
		    "X-K: %.20s\r\n %s\r\n\r\n",
		    PH0, PH0 + 20);
		refused("evil.test", js, 0, "split across an obs-fold");
		snprintf(js, sizeof(js),
		    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
		    "X-A: %.20s\r\nX-B: %s\r\n\r\n",
		    PH0, PH0 + 20);
		refused("evil.test", js, 0, "split across two header lines");
		snprintf(js, sizeof(js),
		    "GET / HTTP/1.1\r\nHost: evil.test\r\n"
		    "X-A: %.6s\r\nX-B: %s\r\n\r\n",
		    PH0, PH0 + 6);
		refused("evil.test", js, 0,
		    "split inside the marker (the "
		    "random part)");
	}
	is_str(req("evil.test", 443,
		   "GET /sbx-cre HTTP/1.1\r\nHost: "
		   "evil.test\r\n\r\n",
		   NULL, NULL),
	    "ok", "an unrelated head passes");
	is_str(req("api.openai.test", 443,
		   "GET / HTTP/1.1\r\nHost: "
		   "evil.test\r\n\r\n",
		   NULL, NULL),
	    "tunnel_host_mismatch", "Host must name the connection's host");
	is_str(req("api.openai.test", 443,
		   "GET / HTTP/1.1\r\nHost: "
		   "api.openai.test\r\nX: a\r\n b\r\n\r\n",
		   NULL, NULL),
	    "obs_fold", "an obs-fold is refused");
	is_str(
	    req("api.openai.test", 443, "PRI * HTTP/2.0\r\n\r\n", NULL, NULL),
	    "http2_not_supported", "the HTTP/2 preface: 505");
	is_str(req("api.openai.test", 443,
		   "POST / HTTP/1.1\r\nHost: "
		   "api.openai.test\r\nContent-Length: 1\r\nTransfer-Encoding: "
		   "chunked\r\n\r\n",
		   NULL, NULL),
	    "ambiguous_length", "Content-Length with chunked is refused");
	is_str(
	    req("api.openai.test", 443,
		"POST / HTTP/1.1\r\nHost: "
		"api.openai.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		NULL, NULL),
	    "bad_transfer_encoding", "other codings refused");
	ok(sbx_cred_scan(C, N, "CONNECT x.test:443 HTTP/1.1\r\n", 29) == -1,
	    "scan: nothing in a plain CONNECT");

	/* Bodies, every split. */
	snprintf(js, sizeof(js), "{\"prompt\":\"leak %s now\"}", PH0);
	bad = every_split(js);
	ok(bad == 0, "a body's placeholder is caught at every split");
	snprintf(js, sizeof(js), "q=%s", enc);
	bad = every_split(js);
	ok(bad == 0, "percent-encoded in a body, at every split");
	/* Upper case, at every split (the search folds raw bytes). */
	snprintf(js, sizeof(js), "x-%s-y", PH0);
	for (i = 0; js[i] != '\0'; i++)
		js[i] = (char)toupper((unsigned char)js[i]);
	bad = every_split(js);
	ok(bad == 0, "upper-cased in a body, at every split");
	/* Half in a chunk with an escape (decoded), half in one without
	 * (raw): the carried window mixes both. */
	{
		char	c1[256], c2[256];
		size_t	h = strlen(PH0) / 2;

		snprintf(c1, sizeof(c1), "%%41 %.*s", (int)h, PH0);
		snprintf(c2, sizeof(c2), "%s tail", PH0 + h);
		for (i = 0; c2[i] != '\0'; i++)
			c2[i] = (char)toupper((unsigned char)c2[i]);
		sc = sbx_cred_scanner_new(C, N);
		ok(sbx_cred_scanner_feed(sc, c1, strlen(c1)) == -1 &&
		    sbx_cred_scanner_feed(sc, c2, strlen(c2)) == 0,
		    "split between a decoded chunk and a raw one");
		sbx_cred_scanner_free(sc);
	}
	/* Many near misses: the marker's letters and dashes everywhere. */
	{
		static char big[1 << 17];

		for (i = 0; i + 9 <= sizeof(big); i += 9)
			memcpy(big + i, "sbx-cred-", 9);
		sc = sbx_cred_scanner_new(C, N);
		ok(sbx_cred_scanner_feed(sc, big, sizeof(big)) == -1,
		    "markers without a placeholder pass");
		sbx_cred_scanner_free(sc);
	}
	sc = sbx_cred_scanner_new(C, N);
	ok(sbx_cred_scanner_feed(sc, "sbx-cred-0123 plain text", 24) == -1,
	    "a body without a placeholder passes");
	sbx_cred_scanner_free(sc);

	/* Responses: masked at every split, length kept. */
	body = "{\"echo\":\"Bearer sk-realvalue-0123456789\",\"n\":1}";
	for (step = 1, bad = 0; step <= strlen(body); step++) {
		b.len = 0;
		m = sbx_cred_mask_new(C, N, sink, &b);
		for (i = 0; i < strlen(body); i += step)
			sbx_cred_mask_write(m, body + i,
			    strlen(body) - i < step ? strlen(body) - i : step);
		sbx_cred_mask_flush(m);
		sbx_buf_append(&b, "", 0);
		if (b.len != strlen(body) ||
		    strstr(b.p, "*********************** ") != NULL ||
		    strstr(b.p, "realvalue") != NULL ||
		    sbx_cred_mask_hits(m) != 1) {
			if (!bad)
				diag("step %zu: %s", step, b.p);
			bad++;
		}
		sbx_cred_mask_free(m);
	}
	ok(bad == 0,
	    "an echoed value is masked at every split, any case, "
	    "the length kept");
	sbx_buf_release(&b);
	sbx_cred_free(C, N);
	return done_testing();
}
