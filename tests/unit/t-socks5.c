/* t-socks5: the strict SOCKS5 framing (lib/net/socks5.c): every message
 * complete, split at every byte, and refused with its reason. */
#include <stdlib.h>

#include "tap.h"

#include "socks5.h"

#define B(s)	(const unsigned char *)(s), sizeof(s) - 1

/* Every proper prefix of a complete message needs more bytes. */
static int
prefixes_need_more(int kind, const unsigned char *b, size_t len)
{
	char		 u[256], p[256], h[256];
	const char	*why;
	size_t		 i, used, hl;
	unsigned	 port;
	int		 rep, r;

	for (i = 0; i < len; i++) {
		r = kind == 0 ? sbx_socks5_greeting(b, i, &used, &why) :
		    kind == 1 ? sbx_socks5_auth(b, i, &used, u, p, &why) :
		    sbx_socks5_request(b, i, &used, h, &hl, &port, &why, &rep);
		if (r != 0)
			return 0;
	}
	return 1;
}

static void
test_greeting(void)
{
	const char	*why = NULL;
	size_t		 used = 0;

	ok(sbx_socks5_greeting(B("\x05\x01\x02"), &used, &why) == 1 &&
	    used == 3, "user/pass only");
	ok(sbx_socks5_greeting(B("\x05\x03\x00\x01\x02" "rest"), &used, &why)
	    == 1 && used == 5, "among others; what follows is not used");
	ok(prefixes_need_more(0, B("\x05\x03\x00\x01\x02")),
	    "every prefix needs more");
	ok(sbx_socks5_greeting(B("\x05\x01\x00"), &used, &why) == -1 &&
	    strcmp(why, "socks_no_acceptable_method") == 0,
	    "no authentication only: refused");
	ok(sbx_socks5_greeting(B("\x04\x01\x00"), &used, &why) == -1 &&
	    strcmp(why, "socks_bad_version") == 0, "SOCKS4: bad version");
	ok(sbx_socks5_greeting(B("\x04"), &used, &why) == -1,
	    "  known from the first byte");
	ok(sbx_socks5_greeting(B("GET / HTTP/1.1\r\n"), &used, &why) == -1,
	    "HTTP on the SOCKS port: bad version");
	ok(sbx_socks5_greeting(B("\x05\x00"), &used, &why) == -1 &&
	    strcmp(why, "socks_bad_greeting") == 0, "no method");
	ok(sbx_socks5_greeting(B("\x05\xff\x02"), &used, &why) == 0,
	    "255 methods announced, 1 sent: more");
}

static void
test_auth(void)
{
	char		 u[256], p[256];
	const char	*why;
	size_t		 used;
	unsigned char	 big[3 + 255 + 255];

	ok(sbx_socks5_auth(B("\x01\x05" "alice" "\x03" "tok"), &used, u, p,
	    &why) == 1 && used == 11 && strcmp(u, "alice") == 0 &&
	    strcmp(p, "tok") == 0, "alice:tok");
	ok(prefixes_need_more(1, B("\x01\x05" "alice" "\x03" "tok")),
	    "every prefix needs more");
	ok(sbx_socks5_auth(B("\x05\x01\x02"), &used, u, p, &why) == -1 &&
	    strcmp(why, "socks_bad_auth_version") == 0, "version 5: refused");
	ok(sbx_socks5_auth(B("\x01\x00\x01x"), &used, u, p, &why) == -1 &&
	    strcmp(why, "socks_bad_auth") == 0, "empty user");
	ok(sbx_socks5_auth(B("\x01\x01x\x00"), &used, u, p, &why) == -1,
	    "empty password");
	memset(big, 'a', sizeof(big));
	big[0] = 1;
	big[1] = 255;
	big[2 + 255] = 255;
	ok(sbx_socks5_auth(big, sizeof(big), &used, u, p, &why) == 1 &&
	    strlen(u) == 255 && strlen(p) == 255, "255 and 255: the most");
	ok(sbx_socks5_auth(big, sizeof(big) - 1, &used, u, p, &why) == 0,
	    "  one byte short: more");
}

static void
test_request(void)
{
	char		 h[256];
	const char	*why;
	size_t		 used, hl;
	unsigned	 port;
	int		 rep;
	unsigned char	 big[7 + 255];

	ok(sbx_socks5_request(B("\x05\x01\x00\x03\x0b" "example.com"
	    "\x01\xbb"), &used, h, &hl, &port, &why, &rep) == 1 &&
	    used == 18 && strcmp(h, "example.com") == 0 && hl == 11 &&
	    port == 443, "CONNECT example.com:443");
	ok(prefixes_need_more(2, B("\x05\x01\x00\x03\x0b" "example.com"
	    "\x01\xbb")), "every prefix needs more");
	ok(sbx_socks5_request(B("\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50"),
	    &used, h, &hl, &port, &why, &rep) == -1 &&
	    strcmp(why, "ip_literal") == 0 && rep == SBX_SOCKS5_DENIED,
	    "IPv4 address type: ip_literal, denied");
	ok(sbx_socks5_request(B("\x05\x01\x00\x04"), &used, h, &hl, &port,
	    &why, &rep) == -1 && strcmp(why, "ip_literal") == 0,
	    "IPv6 address type (IPv4-mapped or not): known at once");
	ok(sbx_socks5_request(B("\x05\x01\x00\x04\0\0\0\0\0\0\0\0\0\0\xff\xff"
	    "\x7f\0\0\x01\0\x50"), &used, h, &hl, &port, &why, &rep) == -1 &&
	    strcmp(why, "ip_literal") == 0, "::ffff:127.0.0.1: ip_literal");
	ok(sbx_socks5_request(B("\x05\x02\x00\x03"), &used, h, &hl, &port,
	    &why, &rep) == -1 && strcmp(why, "socks_bad_command") == 0 &&
	    rep == SBX_SOCKS5_CMD, "BIND refused");
	ok(sbx_socks5_request(B("\x05\x03"), &used, h, &hl, &port, &why,
	    &rep) == -1 && rep == SBX_SOCKS5_CMD, "UDP ASSOCIATE refused");
	ok(sbx_socks5_request(B("\x05\x01\x01\x03"), &used, h, &hl, &port,
	    &why, &rep) == -1 && strcmp(why, "socks_bad_reserved") == 0,
	    "reserved byte not 0");
	ok(sbx_socks5_request(B("\x05\x01\x00\x05"), &used, h, &hl, &port,
	    &why, &rep) == -1 && rep == SBX_SOCKS5_ATYP, "address type 5");
	ok(sbx_socks5_request(B("\x04\x01"), &used, h, &hl, &port, &why,
	    &rep) == -1 && strcmp(why, "socks_bad_version") == 0,
	    "bad version");
	ok(sbx_socks5_request(B("\x05\x01\x00\x03\x00\x00\x50"), &used, h,
	    &hl, &port, &why, &rep) == -1 && strcmp(why, "invalid_host") == 0,
	    "empty name");
	ok(sbx_socks5_request(B("\x05\x01\x00\x03\x01" "a\x00\x00"), &used,
	    h, &hl, &port, &why, &rep) == -1 && strcmp(why, "invalid_port") ==
	    0, "port 0");
	memset(big, 'a', sizeof(big));
	memcpy(big, "\x05\x01\x00\x03\xff", 5);
	big[5 + 255] = 0;
	big[6 + 255] = 80;
	ok(sbx_socks5_request(big, sizeof(big), &used, h, &hl, &port, &why,
	    &rep) == 1 && hl == 255 && port == 80,
	    "a 255-byte name is framed (sbx_np_host refuses it later)");
	ok(sbx_socks5_request(B("\x05\x01\x00\x03\x05" "a\0b.c" "\x00\x50"),
	    &used, h, &hl, &port, &why, &rep) == 1 && hl == 5,
	    "a NUL in the name: hostlen says 5 (sbx_np_host refuses it)");
}

int
main(void)
{
	unsigned char	 r[10];

	test_greeting();
	test_auth();
	test_request();
	sbx_socks5_reply(r, SBX_SOCKS5_DENIED);
	ok(memcmp(r, "\x05\x02\x00\x01\0\0\0\0\0\0", 10) == 0, "reply");
	return done_testing();
}
