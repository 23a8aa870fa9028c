/* socks5.h: the SOCKS5 framing of sbx-proxy's in-sandbox listener on
 * 127.0.0.1:1080 (RFC 1928, with RFC 1929 username/password), parsed
 * strictly: version 5, username/password as the only method (the user is
 * the agent, the password its token), CONNECT as the only command, a
 * domain name as the only address type (socks5h: the proxy resolves; an
 * IPv4 or IPv6 address is refused as an IP literal is), no zero-length
 * field, no reserved byte but zero.
 *
 * Pure logic, no I/O, no allocation, fuzzed (tests/fuzz/fuzz-socks5.c):
 * each function looks at the bytes received so far from the start of its
 * message and answers 1 (complete; *used its length), 0 (need more) or
 * -1 (*reason, a stable snake_case code), never reading past len.
 */
#ifndef SBX_SOCKS5_H
#define SBX_SOCKS5_H

#include <stddef.h>

/* Reply codes (RFC 1928 section 6). */
#define SBX_SOCKS5_OK		0x00
#define SBX_SOCKS5_FAIL		0x01	/* general failure */
#define SBX_SOCKS5_DENIED	0x02	/* not allowed by ruleset */
#define SBX_SOCKS5_NETUNREACH	0x03
#define SBX_SOCKS5_UNREACH	0x04	/* host unreachable */
#define SBX_SOCKS5_REFUSED	0x05
#define SBX_SOCKS5_TTL		0x06
#define SBX_SOCKS5_CMD		0x07	/* command not supported */
#define SBX_SOCKS5_ATYP		0x08	/* address type not supported */

/* The method the proxy selects, and "no acceptable method". */
#define SBX_SOCKS5_M_USERPASS	0x02
#define SBX_SOCKS5_M_NONE	0xff

/* The longest message of each kind: 2 + 255, 3 + 2 * 255, 7 + 255. */
#define SBX_SOCKS5_GREETING_MAX	257
#define SBX_SOCKS5_AUTH_MAX	513
#define SBX_SOCKS5_REQUEST_MAX	262

/* The greeting: VER NMETHODS METHODS.  Complete only when it offers
 * username/password; otherwise -1 "socks_no_acceptable_method" (answer
 * 05 FF), "socks_bad_version", "socks_bad_greeting" (no method). */
int	 sbx_socks5_greeting(const unsigned char *, size_t len, size_t *used,
	    const char **reason);
/* RFC 1929: VER(1) ULEN UNAME PLEN PASSWD; user and pass NUL-terminated
 * into buffers of 256.  -1 "socks_bad_auth_version",
 * "socks_bad_auth" (an empty name or password). */
int	 sbx_socks5_auth(const unsigned char *, size_t len, size_t *used,
	    char user[256], char pass[256], const char **reason);
/*
 * The request: VER CMD RSV ATYP DST.ADDR DST.PORT.  host (NUL-terminated,
 * as sent: the caller validates it with sbx_np_host) gets the domain
 * name, *hostlen its length, *port the port.  -1 with *reason and *rep
 * (the reply code to send): "socks_bad_version", "socks_bad_reserved"
 * (FAIL), "socks_bad_command" (CMD: BIND, UDP ASSOCIATE, anything but
 * CONNECT), "ip_literal" (DENIED: IPv4 or IPv6 address types, whatever
 * address they carry), "socks_bad_address_type" (ATYP), "invalid_host"
 * (an empty name), "invalid_port" (port 0).
 */
int	 sbx_socks5_request(const unsigned char *, size_t len, size_t *used,
	    char host[256], size_t *hostlen, unsigned *port,
	    const char **reason, int *rep);
/* A reply: 05 REP 00 01 0.0.0.0 0 into out (10 bytes). */
void	 sbx_socks5_reply(unsigned char out[10], int rep);

#endif
