/*
 * fuzz-httpreq: libFuzzer target for sbx_http_parse (make fuzz).
 *
 * Parses the input whole, then fed in pieces of a few sizes as the proxy
 * would see it arrive, and aborts when an invariant breaks:
 *   - the answer is -1, 0 or 1;
 *   - 1: head_len <= len, host and rewritten NUL-terminated, the rewrite
 *     of a non-CONNECT ending in "Connection: close" CRLF CRLF;
 *   - -1: status 400, 405, 414 or 431 and a reason;
 *   - 0: len < SBX_HTTP_HEAD_MAX (a client cannot make the proxy buffer
 *     more than the cap);
 *   - prefixes answer 0 until the first non-zero answer, which is the
 *     whole input's (a refusal decided early is the refusal the whole head
 *     gets; a head is complete at the same byte whatever follows).
 * The bytes past each prefix are poisoned so that ASan sees any read
 * beyond it.  The same input is also read as the first request inside a
 * tunnel (sbx_http_parse_tunnel): -1 is then 400, 403, 405, 414 or 431,
 * 1 a head whose rewrite ends the same way, and the prefixes agree.
 *
 * The input is also read as a response head from upstream
 * (sbx_http_resp_end, sbx_http_resp_close, proxy.c's resp_head): a head
 * found is at most the input, its rewrite fits in the head plus
 * SBX_HTTP_RESP_GROWTH, ends in "Connection: close" CRLF CRLF and has no
 * other Connection, Keep-Alive or Proxy-Connection line.
 *
 * Speed: every input is parsed whole (the single feed) and checked; the
 * chunked re-feeds reparse from the start at every piece, quadratic in the
 * input (about 650 execs/s when every input got them), so they run on a
 * sample: one input in SBX_FUZZ_CHUNKED (default 256; 1 = every input, the
 * old exhaustive mode; 0 = never).  The sample is chosen by a hash of the
 * input, not at random, so that a crash's input replays the same checks.
 */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpreq.h"

int LLVMFuzzerInitialize(int *, char ***);
int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct sbx_http_req whole, part;
static unsigned long chunked_every = 256;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*s = getenv("SBX_FUZZ_CHUNKED");
	char		*end;

	(void)argc;
	(void)argv;
	if (s != NULL && *s != '\0') {
		chunked_every = strtoul(s, &end, 10);
		if (*end != '\0')
			abort();
	}
	return 0;
}

/* Does this input get the chunked re-feeds?  FNV-1a of its bytes. */
static int
sampled(const uint8_t *data, size_t len)
{
	uint32_t	 h = 2166136261u;
	size_t		 i;

	if (chunked_every == 0)
		return 0;
	for (i = 0; i < len; i++)
		h = (h ^ data[i]) * 16777619u;
	return h % chunked_every == 0;
}

static void
check(int rc, const struct sbx_http_req *req, size_t len, int status,
    const char *reason)
{
	static const char tail[] = "Connection: close\r\n\r\n";
	size_t		  rl;

	switch (rc) {
	case 1:
		if (req->head_len > len || req->head_len < 4 ||
		    req->head_len > SBX_HTTP_HEAD_MAX)
			abort();
		if (req->hostlen == 0 || req->hostlen >= sizeof(req->host) ||
		    strlen(req->host) != req->hostlen)
			abort();
		if (req->port < 1 || req->port > 65535)
			abort();
		if (req->content_length < -1)
			abort();
		if (req->connect) {
			if (req->rewritten_len != 0 ||
			    req->rewritten[0] != '\0')
				abort();
			break;
		}
		rl = req->rewritten_len;
		if (rl >= sizeof(req->rewritten) ||
		    req->rewritten[rl] != '\0' ||
		    strlen(req->rewritten) != rl || rl < sizeof(tail) - 1 ||
		    memcmp(req->rewritten + rl - (sizeof(tail) - 1), tail,
			sizeof(tail) - 1) != 0)
			abort();
		if (memmem(req->rewritten, rl, "\r\n\r\n", 4) !=
		    req->rewritten + rl - 4)
			abort();
		break;
	case 0:
		if (len >= SBX_HTTP_HEAD_MAX)
			abort();
		break;
	case -1:
		if (reason == NULL ||
		    (status != 400 && status != 405 && status != 414 &&
			status != 431))
			abort();
		break;
	default:
		abort();
	}
	if (req->auth != SBX_AUTH_NONE && req->auth != SBX_AUTH_BASIC &&
	    req->auth != SBX_AUTH_BEARER && req->auth != SBX_AUTH_INVALID)
		abort();
	if (memchr(req->user, '\0', sizeof(req->user)) == NULL ||
	    memchr(req->token, '\0', sizeof(req->token)) == NULL)
		abort();
}

/* Does the line at p (n bytes, without its CRLF) name header h? */
static int
line_is(const char *p, size_t n, const char *h)
{
	size_t k = strlen(h), i;

	if (n <= k)
		return 0;
	for (i = 0; i < k; i++)
		if (p[i] != h[i] && !(p[i] >= 'A' && p[i] <= 'Z' &&
		    p[i] + ('a' - 'A') == h[i]))
			return 0;
	for (; i < n && (p[i] == ' ' || p[i] == '\t'); i++)
		;
	return i < n && p[i] == ':';
}

static void
resp(const char *buf, size_t len)
{
	static const char tail[] = "Connection: close\r\n\r\n";
	char	   *out;
	const char *p, *nl;
	size_t	    hlen, n, conns = 0;
	int	    st;

	if ((hlen = sbx_http_resp_end(buf, len, &st)) == 0)
		return;
	if (hlen > len || hlen < 4 || st < 0 || st > 599)
		abort();
	if ((out = malloc(hlen + SBX_HTTP_RESP_GROWTH)) == NULL)
		abort();
	n = sbx_http_resp_close(buf, hlen, out, hlen + SBX_HTTP_RESP_GROWTH);
	if (n == 0 || n > hlen + SBX_HTTP_RESP_GROWTH ||
	    n < sizeof(tail) - 1 ||
	    memcmp(out + n - (sizeof(tail) - 1), tail, sizeof(tail) - 1) != 0)
		abort();
	/* Header lines (the first line is the status line). */
	for (p = out; p < out + n - 2; p = nl + 2) {
		nl = memmem(p, (size_t)(out + n - p), "\r\n", 2);
		if (nl == NULL)
			abort();
		if (p == out)
			continue;
		if (line_is(p, (size_t)(nl - p), "connection"))
			conns++;
		if (line_is(p, (size_t)(nl - p), "keep-alive") ||
		    line_is(p, (size_t)(nl - p), "proxy-connection"))
			abort();
	}
	if (conns != 1)
		abort();
	free(out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const size_t steps[] = {1, 7, 64, 1000};
	const char	   *reason, *r2;
	size_t		    k, i;
	char		   *buf;
	int		    rc, rc2, status, st2, chunked;

	if ((buf = malloc(len ? len : 1)) == NULL)
		abort();
	memcpy(buf, data, len);
	chunked = sampled(data, len);
	rc = sbx_http_parse(buf, len, &whole, &status, &reason);
	check(rc, &whole, len, status, reason);
	for (k = 0; chunked && k < sizeof(steps) / sizeof(*steps); k++) {
		/* Each step reparses from the start: small steps only for
		 * small inputs, to keep the run fast. */
		if (len / steps[k] > 512)
			continue;
		rc2 = 0;
		for (i = 0; i < len && rc2 == 0;) {
			i = len - i < steps[k] ? len : i + steps[k];
			ASAN_POISON_MEMORY_REGION(buf + i, len - i);
			rc2 = sbx_http_parse(buf, i, &part, &st2, &r2);
			ASAN_UNPOISON_MEMORY_REGION(buf + i, len - i);
			check(rc2, &part, i, st2, r2);
		}
		if (rc2 != rc)
			abort();
		if (rc == -1 && (st2 != status || strcmp(r2, reason) != 0))
			abort();
		if (rc == 1 &&
		    (part.head_len != whole.head_len ||
			part.connect != whole.connect ||
			part.port != whole.port ||
			strcmp(part.host, whole.host) != 0 ||
			part.auth != whole.auth ||
			strcmp(part.token, whole.token) != 0 ||
			part.content_length != whole.content_length ||
			strcmp(part.rewritten, whole.rewritten) != 0))
			abort();
	}
	/* As the first bytes in a tunnel to a.example:8080. */
	rc = sbx_http_parse_tunnel(buf, len, "a.example", 8080, &whole,
	    &status, &reason);
	if (rc == -1 && status == 403)
		status = 400;	/* tunnel_host_mismatch: check() knows 400 */
	check(rc, &whole, len, status, reason);
	if (rc == 1 && (whole.connect || whole.port != 8080 ||
	    strcmp(whole.host, "a.example") != 0 ||
	    whole.auth != SBX_AUTH_NONE))
		abort();
	if (chunked && len <= 2048) {
		rc2 = 0;
		for (i = 0; i < len && rc2 == 0; i++) {
			ASAN_POISON_MEMORY_REGION(buf + i, len - i);
			rc2 = sbx_http_parse_tunnel(buf, i, "a.example", 8080,
			    &part, &st2, &r2);
			ASAN_UNPOISON_MEMORY_REGION(buf + i, len - i);
		}
		if (rc2 != 0 && rc2 != rc)
			abort();
	}
	resp(buf, len);
	free(buf);
	return 0;
}
