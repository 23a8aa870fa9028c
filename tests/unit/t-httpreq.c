/* t-httpreq: the proxy's request-head parser and TLS SNI reader
 * (HOSTILE-CASES NP-10 to NP-14). */
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "httpreq.h"

static struct sbx_http_req req, req2;

/*
 * Parse buf whole, then again fed one byte more at a time: every prefix
 * must answer 0 until the first non-zero answer, and that answer must be
 * the whole buffer's (a refusal decided early is the refusal the whole
 * head gets; a head is complete at the same byte).  Each prefix is copied
 * to a buffer of its exact size so that the sanitizer build catches a
 * read past it.  Returns the whole buffer's answer.
 */
static int
parse_both(const char *buf, size_t len, int *status, const char **reason,
    int *consistent)
{
	const char *r2;
	size_t	    i, step;
	char	   *p;
	int	    rc, rc2 = 0, st2;

	rc = sbx_http_parse(buf, len, &req, status, reason);
	*consistent = 1;
	/* Byte by byte for small inputs; coarser for the big ones. */
	step = len <= 4096 ? 1 : 509;
	for (i = 0; i <= len; i += step) {
		if ((p = malloc(i ? i : 1)) == NULL)
			abort();
		memcpy(p, buf, i);
		rc2 = sbx_http_parse(p, i, &req2, &st2, &r2);
		free(p);
		if (rc2 != 0)
			break;
	}
	if (rc2 == 0 && i > len)
		rc2 = sbx_http_parse(buf, len, &req2, &st2, &r2);
	if (rc2 != rc)
		*consistent = 0;
	else if (rc == -1 && (st2 != *status || strcmp(r2, *reason) != 0))
		*consistent = 0;
	else if (rc == 1 &&
	    (req2.head_len != req.head_len ||
		strcmp(req2.rewritten, req.rewritten) != 0))
		*consistent = 0;
	return rc;
}

static void
refuse(const char *buf, size_t len, int status, const char *reason,
    const char *name)
{
	const char *r;
	int	    rc, st, cons;

	rc = parse_both(buf, len, &st, &r, &cons);
	if (!ok(rc == -1 && st == status && r != NULL &&
		    strcmp(r, reason) == 0 && cons,
		"%s: %d %s", name, status, reason))
		diag("  got rc %d status %d reason %s%s", rc, st,
		    r ? r : "(null)", cons ? "" : " (prefixes disagree)");
}

static int
accept_req(const char *buf, size_t len, const char *name)
{
	const char *r;
	int	    rc, st, cons;

	rc = parse_both(buf, len, &st, &r, &cons);
	if (!ok(rc == 1 && cons, "%s: parsed", name))
		diag("  got rc %d status %d reason %s%s", rc, st,
		    r ? r : "(null)", cons ? "" : " (prefixes disagree)");
	return rc == 1;
}

#define REFUSE(s, st, r, name) refuse(s, sizeof(s) - 1, st, r, name)
#define ACCEPT(s, name)	       accept_req(s, sizeof(s) - 1, name)
#define GET(target)	       "GET " target " HTTP/1.1\r\n"
#define H		       "Host: example.com\r\n"

struct bad {
	const char *req;
	int	    status;
	const char *reason;
	const char *name;
};

/* clang-format off */
static const struct bad refusals[] = {
	/* request line */
	{ "GET  http://example.com/ HTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "two spaces after the method" },
	{ "GET http://example.com/  HTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "two spaces before the version" },
	{ "GET http://example.com/ HTTP/1.1 \r\n" H "\r\n", 400,
	  "bad_request_line", "trailing space" },
	{ " GET http://example.com/ HTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "leading space" },
	{ "GET http://example.com/\r\n" H "\r\n", 400, "bad_request_line",
	  "no version (HTTP/0.9)" },
	{ "\r\nGET http://example.com/ HTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "empty line before the request line" },
	{ "GET\thttp://example.com/\tHTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "tabs as separators" },
	{ GET("http://example.com/#frag") H "\r\n", 400, "bad_request_line",
	  "fragment" },
	{ GET("http://example.com#@evil.sbx.test/") H "\r\n", 400,
	  "bad_request_line", "fragment hiding an authority" },
	{ GET("example.com:80") H "\r\n", 400, "bad_request_line",
	  "authority-form with GET" },
	{ GET("http:example.com/") H "\r\n", 400, "bad_request_line",
	  "scheme without //" },
	{ GET("http://example.com/a\x01") H "\r\n", 400, "bad_request_line",
	  "control character in the path" },
	{ GET("http://example.com/\xc3\xa9") H "\r\n", 400,
	  "bad_request_line", "non-ASCII path" },
	{ "G(T http://example.com/ HTTP/1.1\r\n" H "\r\n", 400,
	  "bad_request_line", "method outside token characters" },
	/* method */
	{ "get http://example.com/ HTTP/1.1\r\n" H "\r\n", 405, "bad_method",
	  "lowercase method" },
	{ "TRACE http://example.com/ HTTP/1.1\r\n" H "\r\n", 405,
	  "bad_method", "TRACE" },
	{ "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 405, "bad_method",
	  "HTTP/2 preface" },
	/* version */
	{ "GET http://example.com/ HTTP/1.2\r\n" H "\r\n", 400, "bad_version",
	  "HTTP/1.2" },
	{ "GET http://example.com/ http/1.1\r\n" H "\r\n", 400, "bad_version",
	  "lowercase version" },
	{ "GET http://example.com/ HTTP/2.0\r\n" H "\r\n", 400, "bad_version",
	  "HTTP/2.0" },
	{ "CONNECT example.com:443 HTTP/1.1x\r\n\r\n", 400, "bad_version",
	  "version with a suffix" },
	/* target forms (NP-10) */
	{ "GET / HTTP/1.1\r\nHost: evil.sbx.test:18080\r\n\r\n", 400,
	  "origin_form", "origin-form (NP-10)" },
	{ "OPTIONS * HTTP/1.1\r\n" H "\r\n", 400, "origin_form",
	  "asterisk-form" },
	{ "CONNECT / HTTP/1.1\r\n\r\n", 400, "origin_form",
	  "CONNECT with a path" },
	{ GET("https://example.com/") H "\r\n", 400, "bad_scheme",
	  "https absolute-form" },
	{ GET("HTTPS://example.com/") H "\r\n", 400, "bad_scheme",
	  "HTTPS absolute-form" },
	{ GET("ftp://example.com/") H "\r\n", 400, "bad_scheme", "ftp" },
	{ GET("ws://example.com/") H "\r\n", 400, "bad_scheme", "ws" },
	{ GET("http://example.com@evil.sbx.test:18080/")
	  "Host: evil.sbx.test:18080\r\n\r\n", 400, "userinfo",
	  "userinfo (NP-10)" },
	{ GET("http://example.com:80@evil.sbx.test:18080/") "\r\n", 400,
	  "userinfo", "userinfo with a port (NP-10)" },
	{ GET("http://@example.com/") H "\r\n", 400, "userinfo",
	  "empty userinfo" },
	{ "CONNECT user@example.com:443 HTTP/1.1\r\n\r\n", 400, "userinfo",
	  "userinfo in CONNECT" },
	/* authority */
	{ GET("http:///path") H "\r\n", 400, "bad_authority", "empty host" },
	{ GET("http://") H "\r\n", 400, "bad_authority", "nothing after //" },
	{ GET("http://exa%6dple.com/") H "\r\n", 400, "bad_authority",
	  "percent-encoded host" },
	{ GET("http://example.com\\.evil.sbx.test/") H "\r\n", 400,
	  "bad_authority", "backslash in the authority" },
	{ GET("http://example.com\\@evil.sbx.test/") H "\r\n", 400,
	  "userinfo", "backslash and userinfo" },
	{ GET("http://[]/") H "\r\n", 400, "bad_authority", "empty brackets" },
	{ GET("http://[::1/") H "\r\n", 400, "bad_authority",
	  "unclosed bracket" },
	{ GET("http://[evil.com]/") H "\r\n", 400, "bad_authority",
	  "name in brackets" },
	{ GET("http://[::1]x/") H "\r\n", 400, "bad_authority",
	  "junk after the brackets" },
	{ GET("http://a]b/") H "\r\n", 400, "bad_authority",
	  "stray bracket" },
	{ "CONNECT :443 HTTP/1.1\r\n\r\n", 400, "bad_authority",
	  "CONNECT without a host" },
	{ "CONNECT exa\tmple.com:443 HTTP/1.1\r\n\r\n", 400, "bad_authority",
	  "CONNECT host with a tab" },
	{ "CONNECT exa\x01mple.com:443 HTTP/1.1\r\n\r\n", 400,
	  "bad_authority", "CONNECT host with a control character" },
	{ "CONNECT example.com%00:443 HTTP/1.1\r\n\r\n", 400, "bad_authority",
	  "CONNECT host with %00" },
	{ "CONNECT http://example.com:443 HTTP/1.1\r\n\r\n", 400,
	  "bad_authority", "CONNECT with a URI" },
	{ "CONNECT [fe80::1%25eth0]:443 HTTP/1.1\r\n\r\n", 400,
	  "bad_authority", "IPv6 zone id" },
	/* ports (NP-16) */
	{ "CONNECT example.com HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "CONNECT without a port" },
	{ "CONNECT example.com: HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "CONNECT with an empty port" },
	{ "CONNECT example.com:0 HTTP/1.1\r\n\r\n", 400, "bad_port", "port 0" },
	{ "CONNECT example.com:65536 HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port 65536" },
	{ "CONNECT example.com:-1 HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port -1" },
	{ "CONNECT example.com:443x HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port 443x" },
	{ "CONNECT example.com:0443 HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port 0443" },
	{ "CONNECT example.com:+443 HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port +443" },
	{ "CONNECT example.com:4294967739 HTTP/1.1\r\n\r\n", 400, "bad_port",
	  "port 2^32+443" },
	{ "CONNECT a:b:443 HTTP/1.1\r\n\r\n", 400, "bad_port", "two colons" },
	{ "CONNECT ::1:443 HTTP/1.1\r\n\r\n", 400, "bad_authority",
	  "IPv6 without brackets" },
	{ GET("http://example.com:/") H "\r\n", 400, "bad_port",
	  "empty port in a URI" },
	{ GET("http://example.com:80x/") H "\r\n", 400, "bad_port",
	  "bad port in a URI" },
	/* Host (NP-10) */
	{ GET("http://evil.sbx.test:18080/") H "\r\n", 400, "host_mismatch",
	  "URI evil, Host example.com (NP-10)" },
	{ GET("http://example.com/") "Host: evil.sbx.test:18080\r\n\r\n", 400,
	  "host_mismatch", "URI example.com, Host evil (NP-10)" },
	{ GET("http://example.com/") "Host: example.com:8080\r\n\r\n", 400,
	  "host_mismatch", "Host with another port" },
	{ GET("http://example.com:8080/") H "\r\n", 400, "host_mismatch",
	  "URI with another port" },
	{ GET("http://example.com/") "Host: example.com.\r\n\r\n", 400,
	  "host_mismatch", "Host with a trailing dot" },
	{ GET("http://example.com/") "Host: example.com:080\r\n\r\n", 400,
	  "host_mismatch", "Host with a leading-zero port" },
	{ GET("http://example.com/") "Host: \r\n\r\n", 400, "host_mismatch",
	  "empty Host" },
	{ GET("http://example.com/") "Host: example.com/x\r\n\r\n", 400,
	  "host_mismatch", "Host with a path" },
	{ "CONNECT example.com:443 HTTP/1.1\r\nHost: evil.sbx.test:443\r\n\r\n",
	  400, "host_mismatch", "CONNECT Host differs" },
	{ "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com\r\n\r\n", 400,
	  "host_mismatch", "CONNECT Host without the port" },
	{ GET("http://example.com/") "\r\n", 400, "missing_host",
	  "HTTP/1.1 without Host" },
	{ GET("http://example.com/") H H "\r\n", 400, "duplicate_host",
	  "two identical Host" },
	{ GET("http://example.com/") H "Host: evil.sbx.test\r\n\r\n", 400,
	  "duplicate_host", "two different Host" },
	{ "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n"
	  "host: example.com:443\r\n\r\n", 400, "duplicate_host",
	  "CONNECT with two Host" },
	/* framing (NP-11) */
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
	  "transfer_encoding", "chunked request" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H "Content-Length: 4\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", 400, "bad_content_length",
	  "CL then TE (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n", 400,
	  "bad_content_length", "TE then CL (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: xchunked\r\n\r\n", 400, "transfer_encoding",
	  "TE xchunked (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding : chunked\r\n\r\n", 400, "bad_header",
	  "space before the colon (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding:\tchunked\r\n\r\n", 400, "transfer_encoding",
	  "TE with a tab (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: chunked, identity\r\n\r\n", 400,
	  "transfer_encoding", "TE chunked, identity (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: identity\r\nTransfer-Encoding: chunked\r\n\r\n",
	  400, "transfer_encoding", "two TE (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "X: y\r\n Transfer-Encoding: chunked\r\n\r\n", 400, "obs_fold",
	  "obs-fold TE (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "X: y\r\n\tTransfer-Encoding: chunked\r\n\r\n", 400, "obs_fold",
	  "obs-fold with a tab" },
	{ "POST http://example.com/ HTTP/1.1\r\n Host: example.com\r\n\r\n",
	  400, "obs_fold", "folded first header" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Transfer-Encoding: chunked\r\n\r\n1;a=\"b\r\nx\r\n", 400,
	  "transfer_encoding", "chunk extension with an open quote (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 5\r\nContent-Length: 6\r\n\r\n", 400,
	  "bad_content_length", "two CL, different (NP-11)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 5\r\nContent-Length: 5\r\n\r\n", 400,
	  "bad_content_length", "two CL, equal" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 5, 5\r\n\r\n", 400, "bad_content_length",
	  "CL list" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: -1\r\n\r\n", 400, "bad_content_length",
	  "negative CL" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: +5\r\n\r\n", 400, "bad_content_length",
	  "CL with a sign" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 0x10\r\n\r\n", 400, "bad_content_length",
	  "hex CL" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 012\r\n\r\n", 400, "bad_content_length",
	  "CL with a leading zero" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H "Content-Length:\r\n\r\n",
	  400, "bad_content_length", "empty CL" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 1 2\r\n\r\n", 400, "bad_content_length",
	  "CL with a space inside" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "Content-Length: 1234567890123456789\r\n\r\n", 400,
	  "bad_content_length", "CL of 19 digits" },
	{ "CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
	  "0123456789", 400, "body_on_connect", "CONNECT with a body" },
	{ "CONNECT example.com:443 HTTP/1.1\r\n"
	  "Transfer-Encoding: chunked\r\n\r\n", 400, "transfer_encoding",
	  "CONNECT with TE" },
	/* line endings (NP-11) */
	{ "GET http://example.com/ HTTP/1.1\n" H "\r\n", 400, "bare_lf",
	  "bare LF after the request line" },
	{ "GET http://example.com/ HTTP/1.1\r\nHost: example.com\n\r\n", 400,
	  "bare_lf", "bare LF after a header" },
	{ "GET http://example.com/ HTTP/1.1\r\n" H "\n", 400, "bare_lf",
	  "bare LF ending the head" },
	{ "GET http://example.com/ HTTP/1.1\r\nX: a\nTransfer-Encoding: "
	  "chunked\r\n" H "\r\n", 400, "bare_lf", "bare LF hiding TE" },
	{ "GET http://example.com/ HTTP/1.1\r" H "\r\n", 400, "bare_cr",
	  "bare CR after the request line" },
	{ "GET http://example.com/ HTTP/1.1\r\nX: a\rb\r\n" H "\r\n", 400,
	  "bare_cr", "bare CR in a value" },
	{ "GET http://example.com/ HTTP/1.1\r\n" H "\rX\r\n\r\n", 400,
	  "bare_cr", "bare CR at a line start" },
	{ "GET http://example.com/ HTTP/1.1\r\r\n" H "\r\n", 400, "bare_cr",
	  "CR CR LF" },
	/* header syntax */
	{ GET("http://example.com/") H "NoColon\r\n\r\n", 400, "bad_header",
	  "no colon" },
	{ GET("http://example.com/") H ": value\r\n\r\n", 400, "bad_header",
	  "empty name" },
	{ GET("http://example.com/") H "X Y: z\r\n\r\n", 400, "bad_header",
	  "space in the name" },
	{ GET("http://example.com/") H "X(Y): z\r\n\r\n", 400, "bad_header",
	  "name outside token characters" },
	{ GET("http://example.com/") H "X\x01: z\r\n\r\n", 400, "bad_header",
	  "control character in the name" },
	{ GET("http://example.com/") H "X: a\x01" "b\r\n\r\n", 400,
	  "bad_header", "control character in a value" },
	{ GET("http://example.com/") H "X: a\x7f\r\n\r\n", 400, "bad_header",
	  "DEL in a value" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H "Content-Length: 4\r\n"
	  "Content_Length: 40\r\n\r\n", 400, "bad_header",
	  "Content_Length (CGI look-alike)" },
	{ "POST http://example.com/ HTTP/1.1\r\n" H
	  "transfer_encoding: chunked\r\n\r\n", 400, "bad_header",
	  "transfer_encoding (CGI look-alike)" },
	{ GET("http://example.com/") "Host: example.com\x0b\r\n\r\n", 400,
	  "bad_header", "vertical tab after Host" },
	/* upgrades (NP-13) */
	{ GET("http://example.com/") H "Connection: Upgrade, HTTP2-Settings\r\n"
	  "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQAAP__\r\n\r\n", 400,
	  "upgrade", "h2c (NP-13)" },
	{ GET("http://example.com/") H "Upgrade: websocket\r\n"
	  "Connection: Upgrade\r\n\r\n", 400, "upgrade",
	  "websocket (NP-13)" },
	{ GET("http://example.com/") H "Connection: keep-alive ,\tUPGRADE\r\n"
	  "\r\n", 400, "upgrade", "Connection listing upgrade" },
	{ GET("http://example.com/") H "HTTP2-Settings: AAMAAABk\r\n\r\n", 400,
	  "upgrade", "HTTP2-Settings alone" },
	{ GET("http://example.com/") H "upgrade:\r\n\r\n", 400, "upgrade",
	  "empty Upgrade" },
	{ "CONNECT example.com:443 HTTP/1.1\r\nUpgrade: h2c\r\n\r\n", 400,
	  "upgrade", "CONNECT with Upgrade" },
};
/* clang-format on */

/* The head that a request with these headers is rewritten to. */
static void
check_rewrite(const char *in, const char *want, const char *name)
{
	const char *r;
	int	    st;

	if (sbx_http_parse(in, strlen(in), &req, &st, &r) != 1) {
		ok(0, "%s: parsed (%s)", name, r ? r : "?");
		return;
	}
	is_str(req.rewritten, want, name);
	ok(req.rewritten_len == strlen(want), "%s: rewritten_len", name);
}

static void
check_auth(const char *value, enum sbx_http_auth auth, const char *user,
    const char *token, const char *name)
{
	char	    buf[2048];
	const char *r;
	int	    st, rc;

	snprintf(buf, sizeof(buf),
	    "CONNECT example.com:443 HTTP/1.1\r\n"
	    "Proxy-Authorization: %s\r\n\r\n",
	    value);
	rc = sbx_http_parse(buf, strlen(buf), &req, &st, &r);
	if (!ok(rc == 1 && req.auth == auth && strcmp(req.user, user) == 0 &&
		    strcmp(req.token, token) == 0,
		"auth: %s", name))
		diag("  rc %d auth %d user '%s' token '%s'", rc,
		    (int)req.auth, req.user, req.token);
}

static void
test_accept(void)
{
	static const char tail[] = ":443 HTTP/1.1\r\n\r\n";
	static char	  big[400];
	const char	 *r;
	size_t		  i, n;
	int		  st;

	if (ACCEPT(GET("http://example.com/a?b=c") H "Accept: */*\r\n\r\n",
		"plain GET")) {
		is_str(req.method, "GET", "method");
		is_str(req.host, "example.com", "host");
		is_int(req.hostlen, 11, "hostlen");
		is_int(req.port, 80, "default port");
		is_int(req.connect, 0, "not CONNECT");
		is_int(req.content_length, -1, "no Content-Length");
		is_int(req.auth, SBX_AUTH_NONE, "no auth");
		is_int(req.head_len,
		    strlen(GET("http://example.com/a?b=c") H
			"Accept: */*\r\n\r\n"),
		    "head_len");
	}
	ACCEPT(GET("HTTP://Example.COM/") "Host: example.com:80\r\n\r\n",
	    "Host with the default port, case differs");
	ACCEPT(GET("http://example.com:80/") "Host: EXAMPLE.com\r\n\r\n",
	    "URI with the default port");
	if (ACCEPT(GET("http://example.com:8080") "Host: example.com:8080\r\n"
						  "\r\n",
		"explicit port, empty path"))
		is_int(req.port, 8080, "port 8080");
	ACCEPT(GET("http://a_b.example.com/") "Host: a_b.example.com\r\n\r\n",
	    "odd but printable name left to the policy");
	if (ACCEPT(GET("http://[::1]:8080/") "Host: [::1]:8080\r\n\r\n",
		"bracketed IPv6 literal passes, for the policy to refuse"))
		is_str(req.host, "[::1]", "brackets kept");
	ACCEPT(GET("http://example.com/") "Host:example.com\r\n\r\n",
	    "Host without OWS");
	ACCEPT(GET("http://example.com/") "Host: \texample.com \t\r\n\r\n",
	    "Host with OWS around");
	ACCEPT("GET http://example.com/ HTTP/1.0\r\n\r\n",
	    "HTTP/1.0 without Host");
	ACCEPT(GET("http://example.com/") H "X: caf\xc3\xa9\r\n\r\n",
	    "obs-text in a value");
	ACCEPT(GET("http://example.com/") H "X:\r\n\r\n", "empty value");
	ACCEPT(GET("http://example.com/") H "X_Y: z\r\n\r\n",
	    "underscore in another name");
	if (ACCEPT("POST http://example.com/ HTTP/1.1\r\n" H
		   "Content-Length: 5\r\n\r\nhello",
		"POST with a body")) {
		is_int(req.content_length, 5, "content_length");
		is_int(req.head_len,
		    strlen("POST http://example.com/ "
			   "HTTP/1.1\r\n" H "Content-Length: 5\r\n\r\n"),
		    "head_len stops before the body");
	}
	if (ACCEPT("POST http://example.com/ HTTP/1.1\r\n" H
		   "Content-Length: 123456789012345678\r\n\r\n",
		"CL of 18 digits"))
		is_int(req.content_length, 123456789012345678LL,
		    "content_length of 18 digits");
	if (ACCEPT("POST http://example.com/ HTTP/1.1\r\n" H
		   "Content-Length: 0\r\n\r\n",
		"CL 0"))
		is_int(req.content_length, 0, "content_length 0");
	if (ACCEPT("CONNECT example.com:443 HTTP/1.1\r\n"
		   "Host: Example.com:443\r\nUser-Agent: curl\r\n\r\n",
		"CONNECT")) {
		is_int(req.connect, 1, "connect");
		is_str(req.method, "CONNECT", "method CONNECT");
		is_str(req.host, "example.com", "CONNECT host");
		is_int(req.port, 443, "CONNECT port");
		is_int(req.rewritten_len, 0, "no rewrite for CONNECT");
		is_str(req.rewritten, "", "empty rewrite for CONNECT");
	}
	ACCEPT("CONNECT example.com:443 HTTP/1.1\r\n\r\n",
	    "CONNECT without Host");
	ACCEPT("CONNECT example.com:443 HTTP/1.0\r\n\r\n", "CONNECT HTTP/1.0");
	ACCEPT("CONNECT example.com:443 HTTP/1.1\r\nContent-Length: 0\r\n\r\n",
	    "CONNECT with Content-Length 0");
	if (ACCEPT("CONNECT [::ffff:127.0.0.1]:443 HTTP/1.1\r\n\r\n",
		"CONNECT to an IPv6 literal"))
		is_str(req.host, "[::ffff:127.0.0.1]", "IPv6 host as sent");
	ACCEPT("CONNECT 2130706433:65535 HTTP/1.1\r\n\r\n",
	    "CONNECT to a decimal IP (the policy refuses it)");
	ACCEPT("CONNECT \x62\xc3\xbc\x63her.sbx.test:443 HTTP/1.1\r\n\r\n",
	    "CONNECT to a non-ASCII name (the policy refuses it)");

	/* NP-14: a 300-character host is the policy's to refuse. */
	n = (size_t)snprintf(big, sizeof(big), "CONNECT ");
	for (i = 0; i < 300; i++)
		big[n++] = 'a';
	memcpy(big + n, tail, sizeof(tail) - 1);
	n += sizeof(tail) - 1;
	if (accept_req(big, n, "CONNECT host of 300 characters (NP-14)"))
		is_int(req.hostlen, 300, "hostlen 300");

	/* NP-12: pipelined requests; only the first is parsed. */
	{
		static const char pipe[] = GET("http://example.com/") H
		    "\r\n"
		    "GET http://evil.sbx.test:18080/ HTTP/1.1\r\n"
		    "Host: evil.sbx.test:18080\r\n\r\n";
		if (ACCEPT(pipe, "two pipelined requests (NP-12)")) {
			is_str(req.host, "example.com", "the first one");
			is_int(req.head_len,
			    strlen(GET("http://example.com/") H "\r\n"),
			    "head_len points at the second");
			ok(strstr(req.rewritten, "evil") == NULL,
			    "nothing of the second in the rewrite");
		}
	}
	/* The cap is on the head, not on the buffer: a complete head is
	 * parsed even when more than the cap has arrived behind it. */
	{
		static char body[SBX_HTTP_HEAD_MAX * 2];
		const char *hd = "POST http://example.com/ HTTP/1.1\r\n" H
				 "Content-Length: 30000\r\n\r\n";
		memset(body, 'x', sizeof(body));
		memcpy(body, hd, strlen(hd));
		ok(sbx_http_parse(body, sizeof(body), &req, &st, &r) == 1 &&
			req.head_len == strlen(hd),
		    "body beyond the head cap");
	}
}

static void
test_rewrite(void)
{
	check_rewrite(GET("http://example.com/a/b?c=d&e") H
	    "Proxy-Authorization: Basic YTpi\r\n"
	    "Proxy-Connection: keep-alive\r\n"
	    "Accept:  */*  \r\n"
	    "Connection: keep-alive, x-foo\r\n"
	    "Keep-Alive: timeout=5\r\n"
	    "TE: trailers\r\n"
	    "Trailer: X\r\n"
	    "X-Foo: \tbar\r\n"
	    "proxy-whatever: 1\r\n"
	    "Content-Length: 0\r\n\r\n",
	    "GET /a/b?c=d&e HTTP/1.1\r\n" H "Accept:  */*  \r\n"
	    "X-Foo: \tbar\r\n"
	    "Content-Length: 0\r\n"
	    "Connection: close\r\n\r\n",
	    "rewrite drops hop-by-hop headers, keeps the rest byte for byte");
	check_rewrite(GET("http://example.com") H "\r\n",
	    "GET / HTTP/1.1\r\n" H "Connection: close\r\n\r\n",
	    "rewrite: empty path becomes /");
	check_rewrite(GET("http://example.com?q") H "\r\n",
	    "GET /?q HTTP/1.1\r\n" H "Connection: close\r\n\r\n",
	    "rewrite: query without a path");
	check_rewrite("DELETE http://Example.com:8080/x HTTP/1.1\r\n"
		      "host: example.COM:8080\r\n\r\n",
	    "DELETE /x HTTP/1.1\r\nhost: example.COM:8080\r\n"
	    "Connection: close\r\n\r\n",
	    "rewrite: Host left as sent");
	check_rewrite("HEAD http://example.com:8080/x HTTP/1.0\r\n"
		      "Accept: */*\r\n\r\n",
	    "HEAD /x HTTP/1.1\r\nAccept: */*\r\nHost: example.com:8080\r\n"
	    "Connection: close\r\n\r\n",
	    "rewrite: HTTP/1.0 gains the checked Host");
}

static void
test_auth(void)
{
	char   v[1024];
	size_t i;

	/* "agent:s3cr3t" */
	check_auth("Basic YWdlbnQ6czNjcjN0", SBX_AUTH_BASIC, "agent", "s3cr3t",
	    "Basic");
	check_auth("bAsIc   YWdlbnQ6czNjcjN0", SBX_AUTH_BASIC, "agent",
	    "s3cr3t", "scheme case-insensitive, several spaces");
	/* "a:b:c": the password may hold a colon, the user may not */
	check_auth("Basic YTpiOmM=", SBX_AUTH_BASIC, "a", "b:c",
	    "Basic with padding and a colon in the password");
	check_auth("Bearer abc.DEF-123_~+/==", SBX_AUTH_BEARER, "",
	    "abc.DEF-123_~+/==", "Bearer");
	check_auth("BEARER tok", SBX_AUTH_BEARER, "", "tok",
	    "Bearer, upper case");
	check_auth("Basic YWdlbnQ6czNjcjN0=", SBX_AUTH_INVALID, "", "",
	    "Basic: length not a multiple of 4");
	check_auth("Basic YWdlbnQ6czNjcjN", SBX_AUTH_INVALID, "", "",
	    "Basic: truncated");
	check_auth("Basic YTpiOmN=", SBX_AUTH_INVALID, "", "",
	    "Basic: non-zero padding bits");
	check_auth("Basic YW=6czNj", SBX_AUTH_INVALID, "", "",
	    "Basic: padding in the middle");
	check_auth("Basic YWdl bnQ6", SBX_AUTH_INVALID, "", "",
	    "Basic: space inside");
	check_auth("Basic YWdlbnQ-czNj", SBX_AUTH_INVALID, "", "",
	    "Basic: URL-safe alphabet");
	check_auth("Basic YWdlbnQ=", SBX_AUTH_INVALID, "", "",
	    "Basic: no colon");
	check_auth("Basic OnRvaw==", SBX_AUTH_INVALID, "", "",
	    "Basic: empty user");
	check_auth("Basic YTo=", SBX_AUTH_INVALID, "", "",
	    "Basic: empty password");
	check_auth("Basic YQBiOmM=", SBX_AUTH_INVALID, "", "",
	    "Basic: NUL in the user");
	check_auth("Basic", SBX_AUTH_INVALID, "", "", "Basic alone");
	check_auth("Basic ", SBX_AUTH_INVALID, "", "", "Basic and a space");
	check_auth("Bearer a b", SBX_AUTH_INVALID, "", "",
	    "Bearer with a space");
	check_auth("Bearer =abc", SBX_AUTH_INVALID, "", "",
	    "Bearer starting with =");
	check_auth("Bearer ab=c", SBX_AUTH_INVALID, "", "",
	    "Bearer with = inside");
	check_auth("Bearer\ttok", SBX_AUTH_INVALID, "", "",
	    "Bearer with a tab");
	check_auth("Digest username=\"a\"", SBX_AUTH_INVALID, "", "", "Digest");
	check_auth("", SBX_AUTH_INVALID, "", "", "empty");
	memcpy(v, "Bearer ", 7);
	for (i = 0; i < SBX_HTTP_AUTH_MAX; i++)
		v[7 + i] = 't';
	v[7 + i] = '\0';
	check_auth(v, SBX_AUTH_BEARER, "", v + 7, "Bearer of AUTH_MAX");
	v[7 + i] = 't';
	v[8 + i] = '\0';
	check_auth(v, SBX_AUTH_INVALID, "", "", "Bearer over AUTH_MAX");
	{
		static const char two[] =
		    "CONNECT example.com:443 HTTP/1.1\r\n"
		    "Proxy-Authorization: Bearer a\r\n"
		    "Proxy-Authorization: Bearer a\r\n\r\n";
		const char *r;
		int	    st;
		ok(sbx_http_parse(two, sizeof(two) - 1, &req, &st, &r) == 1 &&
			req.auth == SBX_AUTH_INVALID && req.token[0] == '\0',
		    "auth: two Proxy-Authorization are invalid");
	}
}

static void
test_caps(void)
{
	static char buf[1024 * 1024 + 64];
	const char *r;
	size_t	    n, i;
	int	    st, rc;

	/* NP-14: a 1 MiB request line is 414, known after LINE_MAX+1 bytes
	 * without waiting for more. */
	n = (size_t)snprintf(buf, sizeof(buf), "GET http://example.com/");
	memset(buf + n, 'a', sizeof(buf) - n);
	rc = sbx_http_parse(buf, SBX_HTTP_LINE_MAX, &req, &st, &r);
	is_int(rc, 0, "LINE_MAX bytes of a request line: need more");
	rc = sbx_http_parse(buf, SBX_HTTP_LINE_MAX + 1, &req, &st, &r);
	ok(rc == -1 && st == 414 && strcmp(r, "line_too_long") == 0,
	    "414 after LINE_MAX+1 bytes");
	rc = sbx_http_parse(buf, 1024 * 1024, &req, &st, &r);
	ok(rc == -1 && st == 414 && strcmp(r, "line_too_long") == 0,
	    "1 MiB request line: 414 (NP-14)");
	/* A line of exactly LINE_MAX is fine. */
	n = (size_t)snprintf(buf, sizeof(buf), "GET http://example.com/");
	memset(buf + n, 'a', SBX_HTTP_LINE_MAX - n - 9);
	n = SBX_HTTP_LINE_MAX - 9;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n,
	    " HTTP/1.1\r\n" H "\r\n");
	ok(sbx_http_parse(buf, n, &req, &st, &r) == 1,
	    "request line of exactly LINE_MAX");
	buf[SBX_HTTP_LINE_MAX] = 'x';
	ok(sbx_http_parse(buf, n, &req, &st, &r) == -1 &&
		strcmp(r, "line_too_long") == 0,
	    "one byte more: 414");

	/* NP-14: 10,000 headers are 431 after the 100th. */
	n = (size_t)snprintf(buf, sizeof(buf), GET("http://example.com/") H);
	for (i = 0; i < 10000; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X: y\r\n");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	refuse(buf, n, 431, "too_many_headers", "10,000 headers (NP-14)");
	/* Exactly HEADERS_MAX is fine. */
	n = (size_t)snprintf(buf, sizeof(buf), GET("http://example.com/") H);
	for (i = 1; i < SBX_HTTP_HEADERS_MAX; i++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "X: y\r\n");
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n");
	accept_req(buf, n, "HEADERS_MAX headers");
	/* ...and the 101st is refused as soon as its first byte is seen. */
	n -= 2;
	buf[n] = 'X';
	rc = sbx_http_parse(buf, n + 1, &req, &st, &r);
	ok(rc == -1 && st == 431 && strcmp(r, "too_many_headers") == 0,
	    "431 at the first byte of header HEADERS_MAX+1");

	/* NP-14: one header of 256 KiB. */
	n = (size_t)snprintf(buf, sizeof(buf),
	    GET("http://example.com/") H "X-Big: ");
	memset(buf + n, 'b', 256 * 1024);
	n += 256 * 1024;
	n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\r\n\r\n");
	refuse(buf, n, 431, "head_too_large", "one header of 256 KiB (NP-14)");
	rc = sbx_http_parse(buf, SBX_HTTP_HEAD_MAX - 1, &req, &st, &r);
	is_int(rc, 0, "HEAD_MAX-1 bytes: need more");
	rc = sbx_http_parse(buf, SBX_HTTP_HEAD_MAX, &req, &st, &r);
	ok(rc == -1 && st == 431 && strcmp(r, "head_too_large") == 0,
	    "HEAD_MAX bytes without the end: 431");

	/* A head of exactly HEAD_MAX is fine, one byte more is not. */
	n = (size_t)snprintf(buf, sizeof(buf),
	    GET("http://example.com/") H "X-Big: ");
	memset(buf + n, 'b', SBX_HTTP_HEAD_MAX - n - 4);
	memcpy(buf + SBX_HTTP_HEAD_MAX - 4, "\r\n\r\n", 4);
	rc = sbx_http_parse(buf, SBX_HTTP_HEAD_MAX, &req, &st, &r);
	ok(rc == 1 && req.head_len == SBX_HTTP_HEAD_MAX,
	    "head of exactly HEAD_MAX");
	ok(rc == 1 && req.rewritten_len < sizeof(req.rewritten) &&
		req.rewritten[req.rewritten_len] == '\0',
	    "its rewrite fits");
	n = (size_t)snprintf(buf, sizeof(buf),
	    GET("http://example.com/") H "X-Big: ");
	memset(buf + n, 'b', SBX_HTTP_HEAD_MAX + 1 - n - 4);
	memcpy(buf + SBX_HTTP_HEAD_MAX + 1 - 4, "\r\n\r\n", 4);
	rc = sbx_http_parse(buf, SBX_HTTP_HEAD_MAX + 1, &req, &st, &r);
	ok(rc == -1 && st == 431, "head of HEAD_MAX+1: 431");
}

static void
test_incremental(void)
{
	static const char in[] =
	    "POST http://example.com:8080/p HTTP/1.1\r\n"
	    "Host: example.com:8080\r\nProxy-Authorization: Basic "
	    "YWdlbnQ6czNjcjN0\r\nContent-Length: 3\r\n\r\nabc";
	const char *r;
	size_t	    i, hl = sizeof(in) - 1 - 3;
	int	    st, rc, bad = 0;

	for (i = 0; i < hl; i++) {
		rc = sbx_http_parse(in, i, &req, &st, &r);
		if (rc != 0) {
			bad++;
			diag("prefix %zu: rc %d %s", i, rc, r ? r : "");
		}
	}
	ok(bad == 0, "byte by byte: 0 until the head is complete");
	for (i = hl; i < sizeof(in); i++) {
		rc = sbx_http_parse(in, i, &req, &st, &r);
		if (rc != 1 || req.head_len != hl || req.port != 8080 ||
		    req.auth != SBX_AUTH_BASIC ||
		    strcmp(req.token, "s3cr3t") != 0 || req.content_length != 3)
			bad++;
	}
	ok(bad == 0, "then 1 with the same result");
	rc = sbx_http_parse(NULL, 0, &req, &st, &r);
	is_int(rc, 0, "nothing yet: need more");
	rc = sbx_http_parse(in, 10, &req, &st, &r);
	ok(rc == 0 && req.auth == SBX_AUTH_NONE && req.head_len == 0 &&
		req.rewritten[0] == '\0',
	    "need more leaves nothing behind");
}

/* A ClientHello sent by curl 7.88 (OpenSSL 3.0) for example.com. */
/* clang-format off */
static const unsigned char ch_curl[] = {
	0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01,
	0xfc, 0x03, 0x03, 0x14, 0x02, 0x26, 0xc0, 0xc8,
	0x5f, 0x79, 0x13, 0x30, 0x51, 0xf3, 0x4e, 0xc3,
	0x0a, 0xfc, 0x5b, 0xc0, 0xf2, 0xcd, 0x1e, 0x69,
	0x43, 0xf2, 0x63, 0x23, 0x29, 0x62, 0xf3, 0x01,
	0x98, 0xbe, 0x27, 0x20, 0x79, 0xc1, 0x1e, 0x3b,
	0x5f, 0xe4, 0x8a, 0xb2, 0x34, 0xe7, 0x16, 0x93,
	0x0a, 0xd3, 0xf7, 0x83, 0x52, 0x65, 0xbe, 0xe9,
	0x95, 0xbc, 0xd9, 0xe7, 0x50, 0xff, 0x8e, 0x89,
	0x96, 0x4c, 0x66, 0x8f, 0x00, 0x3e, 0x13, 0x02,
	0x13, 0x03, 0x13, 0x01, 0xc0, 0x2c, 0xc0, 0x30,
	0x00, 0x9f, 0xcc, 0xa9, 0xcc, 0xa8, 0xcc, 0xaa,
	0xc0, 0x2b, 0xc0, 0x2f, 0x00, 0x9e, 0xc0, 0x24,
	0xc0, 0x28, 0x00, 0x6b, 0xc0, 0x23, 0xc0, 0x27,
	0x00, 0x67, 0xc0, 0x0a, 0xc0, 0x14, 0x00, 0x39,
	0xc0, 0x09, 0xc0, 0x13, 0x00, 0x33, 0x00, 0x9d,
	0x00, 0x9c, 0x00, 0x3d, 0x00, 0x3c, 0x00, 0x35,
	0x00, 0x2f, 0x00, 0xff, 0x01, 0x00, 0x01, 0x75,
	0x00, 0x00, 0x00, 0x10, 0x00, 0x0e, 0x00, 0x00,
	0x0b, 0x65, 0x78, 0x61, 0x6d, 0x70, 0x6c, 0x65,
	0x2e, 0x63, 0x6f, 0x6d, 0x00, 0x0b, 0x00, 0x04,
	0x03, 0x00, 0x01, 0x02, 0x00, 0x0a, 0x00, 0x16,
	0x00, 0x14, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x1e,
	0x00, 0x19, 0x00, 0x18, 0x01, 0x00, 0x01, 0x01,
	0x01, 0x02, 0x01, 0x03, 0x01, 0x04, 0x00, 0x10,
	0x00, 0x0e, 0x00, 0x0c, 0x02, 0x68, 0x32, 0x08,
	0x68, 0x74, 0x74, 0x70, 0x2f, 0x31, 0x2e, 0x31,
	0x00, 0x16, 0x00, 0x00, 0x00, 0x17, 0x00, 0x00,
	0x00, 0x31, 0x00, 0x00, 0x00, 0x0d, 0x00, 0x2a,
	0x00, 0x28, 0x04, 0x03, 0x05, 0x03, 0x06, 0x03,
	0x08, 0x07, 0x08, 0x08, 0x08, 0x09, 0x08, 0x0a,
	0x08, 0x0b, 0x08, 0x04, 0x08, 0x05, 0x08, 0x06,
	0x04, 0x01, 0x05, 0x01, 0x06, 0x01, 0x03, 0x03,
	0x03, 0x01, 0x03, 0x02, 0x04, 0x02, 0x05, 0x02,
	0x06, 0x02, 0x00, 0x2b, 0x00, 0x09, 0x08, 0x03,
	0x04, 0x03, 0x03, 0x03, 0x02, 0x03, 0x01, 0x00,
	0x2d, 0x00, 0x02, 0x01, 0x01, 0x00, 0x33, 0x00,
	0x26, 0x00, 0x24, 0x00, 0x1d, 0x00, 0x20, 0xa0,
	0xbb, 0x5a, 0xc7, 0x6b, 0x27, 0x57, 0x13, 0x2e,
	0xaf, 0x5b, 0x36, 0xd5, 0xdc, 0x9e, 0x43, 0x50,
	0x52, 0x28, 0x51, 0x1f, 0xb7, 0xf8, 0x5e, 0xe0,
	0xc9, 0x27, 0x78, 0xf4, 0xeb, 0x98, 0x44, 0x00,
	0x15, 0x00, 0xb2, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00
};
/* clang-format on */

/* ClientHello builder, for the malformed ones. */
enum {
	CH_NO_EXT = 1, /* no extensions block at all */
	CH_NO_SNI = 2, /* extensions, none of them server_name */
	CH_DUP_EXT = 4, /* two server_name extensions */
	CH_TWO_NAMES = 8, /* two host_name entries */
	CH_OTHER_TYPE = 16, /* a name of another type first */
	CH_SESSION = 32, /* a 32-byte session id */
};

static size_t
put16(unsigned char *p, size_t at, size_t v)
{
	p[at] = (unsigned char)(v >> 8);
	p[at + 1] = (unsigned char)v;
	return at + 2;
}

static size_t
sni_ext(unsigned char *p, size_t n, const char *name, int flags)
{
	size_t ext = n, list, nl = strlen(name);

	n = put16(p, n, 0); /* type server_name */
	n += 2; /* length, later */
	list = n;
	n += 2;
	if (flags & CH_OTHER_TYPE) {
		p[n++] = 7;
		n = put16(p, n, 3);
		memcpy(p + n, "abc", 3);
		n += 3;
	}
	p[n++] = 0;
	n = put16(p, n, nl);
	memcpy(p + n, name, nl);
	n += nl;
	if (flags & CH_TWO_NAMES) {
		p[n++] = 0;
		n = put16(p, n, 8);
		memcpy(p + n, "evil.sbx", 8);
		n += 8;
	}
	put16(p, ext + 2, n - ext - 4);
	put16(p, list, n - list - 2);
	return n;
}

static size_t
build_ch(unsigned char *p, const char *name, int flags)
{
	size_t n = 0, hs, exts, i;

	p[n++] = 22;
	p[n++] = 3;
	p[n++] = 1;
	n += 2; /* record length */
	hs = n;
	p[n++] = 1; /* ClientHello */
	n += 3; /* handshake length */
	n = put16(p, n, 0x0303);
	for (i = 0; i < 32; i++)
		p[n++] = (unsigned char)i;
	if (flags & CH_SESSION) {
		p[n++] = 32;
		memset(p + n, 0xaa, 32);
		n += 32;
	} else
		p[n++] = 0;
	n = put16(p, n, 4);
	n = put16(p, n, 0x1301);
	n = put16(p, n, 0x1302);
	p[n++] = 1;
	p[n++] = 0;
	if (!(flags & CH_NO_EXT)) {
		exts = n;
		n += 2;
		/* supported_versions first, as real clients mix them */
		n = put16(p, n, 43);
		n = put16(p, n, 3);
		p[n++] = 2;
		n = put16(p, n, 0x0304);
		if (!(flags & CH_NO_SNI))
			n = sni_ext(p, n, name, flags);
		if (flags & CH_DUP_EXT)
			n = sni_ext(p, n, "evil.sbx.test", 0);
		n = put16(p, n, 16); /* ALPN, after */
		n = put16(p, n, 5);
		n = put16(p, n, 3);
		p[n++] = 2;
		p[n++] = 'h';
		p[n++] = '2';
		put16(p, exts, n - exts - 2);
	}
	put16(p, 3, n - 5);
	p[hs + 1] = (unsigned char)((n - hs - 4) >> 16);
	put16(p, hs + 2, n - hs - 4);
	return n;
}

static void
tls_is(const unsigned char *b, size_t n, int want, const char *wreason,
    const char *wsni, const char *name)
{
	char	    sni[256];
	const char *r;
	int	    rc;

	memset(sni, 'x', sizeof(sni));
	rc = sbx_tls_sni(b, n, sni, sizeof(sni), &r);
	if (!ok(rc == want &&
		    (wreason == NULL ? r == NULL
				     : r != NULL && strcmp(r, wreason) == 0) &&
		    (wsni == NULL ? sni[0] == '\0' : strcmp(sni, wsni) == 0),
		"tls: %s", name))
		diag("  rc %d reason %s sni '%.255s'", rc,
		    r ? r : "(null)", sni);
}

static void
test_tls(void)
{
	static unsigned char b[SBX_TLS_RECORD_MAX + 16], c[sizeof(b)];
	char		     sni[256], longname[300];
	const char	    *r;
	size_t		     n, i;
	int		     bad = 0;

	tls_is(ch_curl, sizeof(ch_curl), 1, NULL, "example.com",
	    "curl's ClientHello");
	for (i = 0; i < sizeof(ch_curl); i++)
		if (sbx_tls_sni(ch_curl, i, sni, sizeof(sni), &r) != 0)
			bad++;
	ok(bad == 0, "tls: every prefix of the record: need more");
	tls_is(ch_curl, 3, 0, NULL, NULL, "tls: first 3 bytes: need more");
	tls_is((const unsigned char *)"GET / HTTP/1.1\r\n", 16, -1, "not_tls",
	    NULL, "plain HTTP");
	tls_is((const unsigned char *)"G", 1, -1, "not_tls", NULL,
	    "plain HTTP, first byte");
	tls_is((const unsigned char *)"", 0, 0, NULL, NULL, "nothing yet");

	n = build_ch(b, "example.com", 0);
	tls_is(b, n, 1, NULL, "example.com", "built ClientHello");
	memcpy(c, b, n);
	c[n] = 0x17;
	tls_is(c, n + 1, 1, NULL, "example.com",
	    "bytes after the record are not read");
	n = build_ch(b, "a.example.com", CH_SESSION | CH_OTHER_TYPE);
	tls_is(b, n, 1, NULL, "a.example.com",
	    "session id, other name type first");
	n = build_ch(b, "example.com", CH_NO_SNI);
	tls_is(b, n, -1, "no_sni", NULL, "no server_name");
	n = build_ch(b, "example.com", CH_NO_EXT);
	tls_is(b, n, -1, "no_sni", NULL, "no extensions");
	n = build_ch(b, "example.com", CH_DUP_EXT);
	tls_is(b, n, -1, "malformed_tls", NULL, "two server_name extensions");
	n = build_ch(b, "example.com", CH_TWO_NAMES);
	tls_is(b, n, -1, "malformed_tls", NULL, "two host_names");
	n = build_ch(b, "exa mple.com", 0);
	tls_is(b, n, -1, "malformed_tls", NULL, "space in the name");
	n = build_ch(b, "exa\x01mple.com", 0);
	tls_is(b, n, -1, "malformed_tls", NULL, "control in the name");
	n = build_ch(b, "", 0);
	tls_is(b, n, -1, "malformed_tls", NULL, "empty name");
	memset(longname, 'a', 256);
	longname[256] = '\0';
	n = build_ch(b, longname, 0);
	tls_is(b, n, -1, "malformed_tls", NULL, "name of 256");
	longname[255] = '\0';
	n = build_ch(b, longname, 0);
	tls_is(b, n, 1, NULL, longname, "name of 255");
	ok(sbx_tls_sni(b, n, sni, 100, &r) == -1 &&
		strcmp(r, "malformed_tls") == 0,
	    "tls: name larger than the buffer");

	/* Record header. */
	n = build_ch(b, "example.com", 0);
	memcpy(c, b, n);
	c[0] = 23;
	tls_is(c, n, -1, "not_tls", NULL, "application data record");
	memcpy(c, b, n);
	c[1] = 2;
	tls_is(c, n, -1, "not_tls", NULL, "SSLv2-ish version");
	memcpy(c, b, n);
	c[2] = 0;
	tls_is(c, n, -1, "not_tls", NULL, "record version 3.0");
	memcpy(c, b, n);
	c[2] = 5;
	tls_is(c, n, -1, "not_tls", NULL, "record version 3.5");
	memcpy(c, b, n);
	c[5] = 2;
	tls_is(c, n, -1, "not_tls", NULL, "ServerHello");
	memcpy(c, b, 5);
	put16(c, 3, 16385);
	tls_is(c, 5, -1, "malformed_tls", NULL, "record over 2^14");
	put16(c, 3, 0);
	tls_is(c, 5, -1, "malformed_tls", NULL, "empty record");

	/* Lengths that do not add up. */
	memcpy(c, b, n);
	c[8]++; /* handshake length one more than the record */
	tls_is(c, n, -1, "malformed_tls", NULL, "handshake beyond the record");
	memcpy(c, b, n);
	c[6] = 1; /* handshake length 2^16 more */
	tls_is(c, n, -1, "malformed_tls", NULL, "handshake length huge");
	memcpy(c, b, n);
	put16(c, 3, 20); /* the record ends inside the ClientHello */
	tls_is(c, 25, -1, "malformed_tls", NULL, "ClientHello cut short");
	memcpy(c, b, n);
	c[5 + 4 + 2 + 32] = 33; /* session id of 33 */
	tls_is(c, n, -1, "malformed_tls", NULL, "session id over 32");
	memcpy(c, b, n);
	c[5 + 4 + 2 + 32 + 1 + 1] = 3; /* odd cipher_suites length */
	tls_is(c, n, -1, "malformed_tls", NULL, "odd cipher suites");
	memcpy(c, b, n);
	c[5 + 4 + 2 + 32 + 1 + 6] = 0; /* no compression method */
	tls_is(c, n, -1, "malformed_tls", NULL, "no compression method");
	/* extensions length (at 5+4+2+32+1+6+2) one too many, one short */
	i = 5 + 4 + 2 + 32 + 1 + 6 + 2;
	memcpy(c, b, n);
	c[i + 1]++;
	tls_is(c, n, -1, "malformed_tls", NULL, "extensions overrun");
	memcpy(c, b, n);
	c[i + 1]--;
	tls_is(c, n, -1, "malformed_tls", NULL, "extensions fall short");
	memcpy(c, b, n);
	c[i + 2 + 7 + 3]++; /* server_name extension length */
	tls_is(c, n, -1, "malformed_tls", NULL, "server_name length off");
	memcpy(c, b, n);
	c[i + 2 + 7 + 5]++; /* server_name list length */
	tls_is(c, n, -1, "malformed_tls", NULL, "name list length off");
	memcpy(c, b, n);
	c[i + 2 + 7 + 8]++; /* host_name length */
	tls_is(c, n, -1, "malformed_tls", NULL, "host_name length off");
	memcpy(c, b, n);
	c[i + 2 + 7 + 8] = 0xff;
	tls_is(c, n, -1, "malformed_tls", NULL, "host_name length huge");
	/* Split across segments: 0 up to the last byte, then 1. */
	for (bad = 0, i = 0; i < n; i++)
		if (sbx_tls_sni(b, i, sni, sizeof(sni), &r) != 0)
			bad++;
	ok(bad == 0 && sbx_tls_sni(b, n, sni, sizeof(sni), &r) == 1,
	    "tls: split record: 0 until complete, then 1");
}

/* ---- the first request inside a CONNECT tunnel -------------------------- */

/* Every prefix answers 0 or the whole input's answer. */
static int
tunnel(const char *buf, const char *host, unsigned port, int *status,
    const char **reason, int *consistent)
{
	static struct sbx_http_req	 treq, treq2;
	const char			*r2;
	size_t				 i, len = strlen(buf);
	int				 rc, rc2 = 0, st2;

	rc = sbx_http_parse_tunnel(buf, len, host, port, &treq, status,
	    reason);
	*consistent = 1;
	for (i = 0; i < len && rc2 == 0; i++)
		rc2 = sbx_http_parse_tunnel(buf, i, host, port, &treq2, &st2,
		    &r2);
	if (rc2 == 0)
		rc2 = rc, st2 = *status, r2 = *reason;
	if (rc2 != rc || (rc == -1 && (st2 != *status ||
	    strcmp(r2, *reason) != 0)))
		*consistent = 0;
	return rc;
}

static void
test_tunnel(void)
{
	static const struct {
		const char	*req;
		int		 status;
		const char	*reason;
		const char	*name;
	} bad[] = {
	    { "GET / HTTP/1.1\r\nHost: other.example\r\n\r\n", 403,
		"tunnel_host_mismatch", "another Host" },
	    { "GET / HTTP/1.1\r\nHost: a.example\r\n\r\n", 403,
		"tunnel_host_mismatch", "Host without the port (80 implied)" },
	    { "GET / HTTP/1.1\r\nHost: a.example:81\r\n\r\n", 403,
		"tunnel_host_mismatch", "another port" },
	    { "GET / HTTP/1.1\r\nHost: a.example.:8080\r\n\r\n", 403,
		"tunnel_host_mismatch", "a trailing dot is another name" },
	    { "GET / HTTP/1.1\r\n\r\n", 403, "tunnel_host_mismatch",
		"no Host" },
	    { "GET / HTTP/1.0\r\n\r\n", 403, "tunnel_host_mismatch",
		"no Host, HTTP/1.0 too" },
	    { "GET / HTTP/1.1\r\nHost: a.example:8080\r\n"
		"Host: a.example:8080\r\n\r\n", 403, "tunnel_host_mismatch",
		"two Hosts" },
	    { "hello", 400, "tunnel_not_tls_or_http", "garbage" },
	    { "SSH-2.0-x\r\n", 400, "tunnel_not_tls_or_http", "SSH" },
	    { "G", 0, NULL, "a prefix of GET waits" },
	    { "GETX / HTTP/1.1\r\n", 400, "tunnel_not_tls_or_http",
		"GETX" },
	    { "get / HTTP/1.1\r\n", 400, "tunnel_not_tls_or_http",
		"lowercase method" },
	    { "CONNECT b.example:443 HTTP/1.1\r\n\r\n", 400,
		"tunnel_not_tls_or_http", "CONNECT in a tunnel" },
	    { "GET http://other.example/ HTTP/1.1\r\n"
		"Host: a.example:8080\r\n\r\n", 400,
		"tunnel_not_tls_or_http", "absolute-form in a tunnel" },
	    { "OPTIONS * HTTP/1.1\r\nHost: a.example:8080\r\n\r\n", 400,
		"tunnel_not_tls_or_http", "asterisk-form" },
	    { "GET / HTTP/2.0\r\n", 400, "tunnel_not_tls_or_http",
		"HTTP/2" },
	    { "GET /\n", 400, "tunnel_not_tls_or_http", "bare LF" },
	    { "POST / HTTP/1.1\r\nHost: a.example:8080\r\n"
		"Transfer-Encoding: chunked\r\n\r\n", 400,
		"transfer_encoding", "Transfer-Encoding" },
	    { "GET / HTTP/1.1\r\nHost: a.example:8080\r\nUpgrade: h2c\r\n"
		"\r\n", 400, "upgrade", "Upgrade" },
	};
	static struct sbx_http_req	 treq;
	const char			*r;
	size_t				 i;
	int				 rc, st, cons;
	const char			*good = "POST /p?q HTTP/1.0\r\n"
	    "HOST: A.example:8080\r\nProxy-Authorization: Basic eDp5\r\n"
	    "Connection: keep-alive\r\nContent-Length: 3\r\n\r\nabcGET";

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		rc = tunnel(bad[i].req, "a.example", 8080, &st, &r, &cons);
		if (bad[i].reason == NULL)
			ok(rc == 0, "tunnel: %s", bad[i].name);
		else if (!ok(rc == -1 && st == bad[i].status &&
		    strcmp(r, bad[i].reason) == 0 && cons, "tunnel: %s: %d %s",
		    bad[i].name, bad[i].status, bad[i].reason))
			diag("  got rc %d status %d reason %s", rc, st,
			    r ? r : "(null)");
	}
	rc = tunnel("GET / HTTP/1.1\r\nHost: a.example\r\n\r\n", "a.example",
	    80, &st, &r, &cons);
	ok(rc == 1, "tunnel: Host without a port matches port 80");
	rc = sbx_http_parse_tunnel(good, strlen(good), "a.example", 8080,
	    &treq, &st, &r);
	ok(rc == 1 && !treq.connect && treq.port == 8080 &&
	    strcmp(treq.host, "a.example") == 0 &&
	    treq.content_length == 3 && treq.head_len == strlen(good) - 6 &&
	    treq.auth == SBX_AUTH_NONE && treq.token[0] == '\0',
	    "tunnel: a matching request is parsed; credentials not kept");
	is_str(treq.rewritten, "POST /p?q HTTP/1.1\r\nHOST: A.example:8080"
	    "\r\nContent-Length: 3\r\nConnection: close\r\n\r\n",
	    "tunnel: the rewrite: HTTP/1.1, no Proxy-* or Connection, "
	    "Connection: close");
}

/* One response head through sbx_http_resp_end and sbx_http_resp_close. */
static void
resp_case(const char *in, int status, const char *want, const char *name)
{
	char	out[512];
	size_t	hlen, n;
	int	st;

	hlen = sbx_http_resp_end(in, strlen(in), &st);
	ok(hlen > 0 && st == status, "%s: head found, status %d (got %d)",
	    name, status, st);
	n = sbx_http_resp_close(in, hlen, out, sizeof(out));
	ok(n == strlen(want) && n <= hlen + SBX_HTTP_RESP_GROWTH &&
	    memcmp(out, want, n) == 0, "%s: rewritten", name);
	if (n != strlen(want) || memcmp(out, want, n) != 0)
		diag("got: %.*s", (int)n, out);
}

static void
test_resp(void)
{
	static const char full[] = "HTTP/1.1 200 OK\r\nA: b\r\n\r\n";
	char	out[64];
	int	st;

	resp_case("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\n", 200,
	    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	    "Connection: close\r\n\r\n", "no Connection header");
	resp_case("HTTP/1.1 404 Not Found\r\nconnection: Keep-Alive\r\n"
	    "KEEP-ALIVE: timeout=5,\r\n max=100\r\nProxy-Connection :x\r\n"
	    "Content-Length: 0\r\n\r\n", 404,
	    "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n"
	    "Connection: close\r\n\r\n",
	    "Connection, folded Keep-Alive, Proxy-Connection dropped");
	resp_case("HTTP/1.0 302 Found\r\nX-Connection: a\r\n"
	    "Connection-Id: 7\r\nLocation: /x\r\n\r\n", 302,
	    "HTTP/1.0 302 Found\r\nX-Connection: a\r\nConnection-Id: 7\r\n"
	    "Location: /x\r\nConnection: close\r\n\r\n",
	    "names that only contain connection are kept");
	resp_case("HTTP/1.1 100 Continue\r\n\r\n", 100,
	    "HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\n",
	    "an interim head (the proxy passes these unchanged)");
	resp_case("garbage\r\n\r\n", 0,
	    "garbage\r\nConnection: close\r\n\r\n", "no status line");
	resp_case("HTTP/1.1 2000 OK\r\n\r\n", 0,
	    "HTTP/1.1 2000 OK\r\nConnection: close\r\n\r\n",
	    "a four-digit status is no status");
	ok(sbx_http_resp_end("HTTP/1.1 200 OK\r\nA: b\r\n", 25, &st) == 0,
	    "incomplete head: 0");
	ok(sbx_http_resp_end("HTTP/1.1 200 OK\r\nA: b\r\n\r\nbody",
	    sizeof(full) - 1 + 4, &st) == sizeof(full) - 1,
	    "the head ends at its blank line, body after");
	ok(sbx_http_resp_close(full, sizeof(full) - 1, out, 30) == 0,
	    "a short output buffer: 0, nothing past it");
	ok(sbx_http_resp_close(full, sizeof(full) - 3, out, sizeof(out)) ==
	    0, "not a head: 0");
}

int
main(void)
{
	size_t i;

	for (i = 0; i < sizeof(refusals) / sizeof(*refusals); i++)
		refuse(refusals[i].req, strlen(refusals[i].req),
		    refusals[i].status, refusals[i].reason, refusals[i].name);
	/* Embedded NULs (strlen would stop at them). */
	REFUSE("GE\0T http://example.com/ HTTP/1.1\r\n" H "\r\n", 400,
	    "bad_request_line", "NUL in the method");
	REFUSE(GET("http://example.com/") H "X: a\0b\r\n\r\n", 400,
	    "bad_header", "NUL in a value");
	REFUSE("CONNECT example.com\0.evil:443 HTTP/1.1\r\n\r\n", 400,
	    "bad_authority", "NUL in the CONNECT host");
	REFUSE(GET("http://example.com/") "Host: example.com\0\r\n\r\n", 400,
	    "bad_header", "NUL after Host");
	test_accept();
	test_tunnel();
	test_rewrite();
	test_auth();
	test_caps();
	test_incremental();
	test_tls();
	test_resp();
	return done_testing();
}
