/* httpreq.h: the request-head parser of sbx-proxy, and the TLS
 * ClientHello reader that checks SNI against a CONNECT host.
 *
 * Pure logic, no I/O, no allocation beyond the request it fills: the
 * proxy feeds it the bytes received so far and it answers "need more",
 * "complete" or "refuse with status S and reason R".  It is fuzzed
 * (make fuzz): any input must end in one of those three answers.
 *
 * The proxy is strict on purpose (HOSTILE-CASES NP-10..NP-14): exactly one
 * request per connection, nothing a smuggling attack could use is let
 * through, and the check and the dial use the same authority.
 */
#ifndef SBX_HTTPREQ_H
#define SBX_HTTPREQ_H

#include <stddef.h>

/* Caps. A head larger than SBX_HTTP_HEAD_MAX is 431; a request line
 * longer than SBX_HTTP_LINE_MAX is 414. */
#define SBX_HTTP_HEAD_MAX	16384
#define SBX_HTTP_LINE_MAX	8192
#define SBX_HTTP_HEADERS_MAX	100	/* more header lines: 431 */
#define SBX_HTTP_AUTH_MAX	256	/* user or credential */

enum sbx_http_auth {
	SBX_AUTH_NONE = 0,
	SBX_AUTH_BASIC,		/* user:password, password = token */
	SBX_AUTH_BEARER,	/* token */
	SBX_AUTH_INVALID	/* present but malformed (answer 407) */
};

struct sbx_http_req {
	int		 connect;	/* 1 for CONNECT host:port */
	char		 method[24];
	/* The authority as sent: CONNECT's host:port, or an absolute-form
	 * http:// URI's host and port (default 80).  Not yet validated as a
	 * name: the caller runs sbx_np_host() on it.  Brackets of an IPv6
	 * literal are kept so that it reads as one. */
	char		 host[SBX_HTTP_LINE_MAX];
	size_t		 hostlen;
	unsigned	 port;
	enum sbx_http_auth auth;
	char		 user[SBX_HTTP_AUTH_MAX + 1];	/* Basic only */
	char		 token[SBX_HTTP_AUTH_MAX + 1];
	long long	 content_length;	/* -1: none */
	size_t		 head_len;	/* bytes of the head, final CRLF CRLF
					 * included; what follows is body or
					 * tunnel data */
	/* For a non-CONNECT request: the head to send upstream, NUL
	 * terminated: the origin-form request line as HTTP/1.1, the
	 * client's headers in order and byte for byte minus every Proxy-*
	 * header, Connection, Keep-Alive, TE and Trailer, a Host line with
	 * the checked authority when an HTTP/1.0 client sent none, and
	 * "Connection: close".  Empty for CONNECT. */
	char		 rewritten[SBX_HTTP_HEAD_MAX + 64];
	size_t		 rewritten_len;
};

/*
 * Parse the head in buf[0..len).  Returns 1 when a complete head was
 * parsed (req filled), 0 when more bytes are needed (and len is below the
 * caps), -1 when the request is refused: *status is 400, 405 (a method
 * other than CONNECT, GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS), 414
 * or 431, and *reason a stable snake_case code:
 *   bad_request_line, bad_version (only HTTP/1.1 and HTTP/1.0),
 *   origin_form (a proxy needs CONNECT or an absolute http:// URI),
 *   bad_scheme (https:// absolute-form: use CONNECT), userinfo
 *   (user@host in the URI), bad_authority, bad_port, host_mismatch (Host
 *   differs from the URI's authority, compared case-insensitively, with
 *   the default port made explicit), missing_host (HTTP/1.1 without Host),
 *   duplicate_host, transfer_encoding (any Transfer-Encoding on a
 *   request), bad_content_length (invalid, negative, duplicate, or both
 *   with Transfer-Encoding), upgrade (Upgrade or HTTP2-Settings headers,
 *   or Connection naming upgrade), obs_fold, bare_cr, bare_lf (lines must
 *   end in CRLF), bad_header (no colon, empty name, space before the
 *   colon, a name outside the token characters, a control character in
 *   a value), body_on_connect, line_too_long (414), head_too_large and
 *   too_many_headers (431), bad_method (405).
 * A request is never partially acted on: a refusal is decided on the
 * whole head.  It may come before the head is complete, as soon as no
 * continuation could be accepted (a bad request line, a bare LF, a cap
 * reached...); it is then the refusal the whole head would get.
 */
int	 sbx_http_parse(const char *buf, size_t len, struct sbx_http_req *,
	    int *status, const char **reason);

/*
 * The first request inside a CONNECT tunnel to host:port (host as checked:
 * normalised, without port), on a port that is not opaque.  The same
 * strict rules as sbx_http_parse, but the target must be origin-form
 * ("/path"), the method anything sbx_http_parse accepts but CONNECT, and a
 * Host header must name host[:port] exactly as an absolute-form request's
 * authority would (port 80 when it has none; HTTP/1.0 included), because
 * the upstream routes on it.  Returns 1 with req filled (host and port are
 * the tunnel's; rewritten is the head to send up, ending in "Connection:
 * close"), 0 for more bytes, -1 with *status and *reason:
 * "tunnel_not_tls_or_http" (400; the first bytes are not an HTTP request
 * line, known as soon as they cannot start one), "tunnel_host_mismatch"
 * (403; Host missing, duplicated or naming another authority), or any
 * header fault of sbx_http_parse (transfer_encoding, upgrade...).
 */
int	 sbx_http_parse_tunnel(const char *buf, size_t len, const char *host,
	    unsigned port, struct sbx_http_req *, int *status,
	    const char **reason);

/*
 * A response head from upstream, for a proxy that closes the connection
 * after one response.  sbx_http_resp_end: the length of the first head in
 * p[0..n) (up to and with its blank line), 0 while it is incomplete; its
 * status code in *status (0 when the first line is not "HTTP/1.x NNN").
 * sbx_http_resp_close: that head (p[0..hlen), as sbx_http_resp_end found
 * it) into out, without its Connection, Keep-Alive and Proxy-Connection
 * headers (and their folded lines), with "Connection: close" as its last
 * header; the length written, or 0 when outsz is short (hlen +
 * SBX_HTTP_RESP_GROWTH always suffices).
 */
size_t	 sbx_http_resp_end(const char *p, size_t n, int *status);
size_t	 sbx_http_resp_close(const char *p, size_t hlen, char *out,
	    size_t outsz);
#define SBX_HTTP_RESP_GROWTH	19	/* "Connection: close\r\n" */

/*
 * Read the first TLS record of a tunnel (buf[0..len)) and extract the
 * server_name of its ClientHello.  Returns 1 and writes the name (NUL
 * terminated, as sent: the caller compares it to the normalised CONNECT
 * host with sbx_np_host) to sni, 0 when the record is not complete yet
 * (the whole record is needed: it may arrive split across segments),
 * -1 with *reason "not_tls" (not a handshake record / not a ClientHello;
 * known from the first bytes, before the record is complete),
 * "malformed_tls" (lengths that do not add up) or "no_sni".
 */
int	 sbx_tls_sni(const unsigned char *buf, size_t len, char *sni,
	    size_t snisz, const char **reason);
/* The most bytes sbx_tls_sni may need: one record of 2^14 + 5. */
#define SBX_TLS_RECORD_MAX	(16384 + 5)

#endif
