/* t-upstream: the parent proxy's URL, credentials, CONNECT request and
 * answer parser (lib/net/upstream.c). */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "upstream.h"

static void
test_parse(void)
{
	static const char *const bad[] = { "", "http://", "http://host",
	    "http://host:", "http://host:0", "http://host:65536",
	    "https://host:3128", "socks5://host:1080", "host:3128",
	    "http://u:p@host:3128", "http://host:3128/path",
	    "http://host:3128?x", "http://ho st:3128", "http://[::1:3128",
	    "http://[::1]", "http://[nope]:3128", "http://a_b:3128",
	    "http://host:3128//", "http://h\x01:1" };
	struct sbx_upstream	 up;
	struct sbx_error	 e;
	size_t			 i;

	memset(&e, 0, sizeof(e));
	ok(sbx_upstream_parse("http://Proxy.Corp.example:3128/", &up, "o",
	    "proxy.upstream", &e) == 0 && strcmp(up.host,
	    "proxy.corp.example") == 0 && up.port == 3128 && !up.literal,
	    "a name, normalised");
	ok(sbx_upstream_parse("http://127.0.0.1:8080", &up, "o", "k", &e) ==
	    0 && up.literal && up.port == 8080 && up.addr.ss_family ==
	    AF_INET, "an IPv4 address (the administrator's choice)");
	ok(sbx_upstream_parse("http://[::1]:8080", &up, "o", "k", &e) == 0 &&
	    up.literal && up.addr.ss_family == AF_INET6 &&
	    strcmp(up.host, "::1") == 0, "a bracketed IPv6 address");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&e, 0, sizeof(e));
		ok(sbx_upstream_parse(bad[i], &up, "o", "proxy.upstream", &e)
		    == -1 && e.reason != NULL && strcmp(e.reason,
		    "config_invalid") == 0 && up.host[0] == '\0',
		    "refused: %s (%s)", bad[i], e.message);
	}
	ok(sbx_upstream_parse("http://u:p@h:1", &up, "o", "k", &e) == -1 &&
	    strstr(e.message, "upstream_auth_file") != NULL,
	    "credentials: the message says where they go");
}

static void
test_auth(void)
{
	struct sbx_upstream	 up;
	struct sbx_error	 e;
	char			 dir[] = "/tmp/t-upstream.XXXXXX";
	int			 root, fd;

	memset(&up, 0, sizeof(up));
	if ((root = t_tmpdir(dir)) == -1) {
		skip_n(5, "no temp directory");
		return;
	}
	(void)!mkdirat(root, "config", 0700);
	fd = openat(root, "config/up.auth", O_WRONLY | O_CREAT, 0600);
	(void)!write(fd, "alice:s3cret\nignored\n", 21);
	close(fd);
	memset(&e, 0, sizeof(e));
	ok(sbx_upstream_load_auth(root, "up.auth", &up, "o", &e) == 0 &&
	    strcmp(up.auth, "Basic YWxpY2U6czNjcmV0") == 0,
	    "user:password as Basic (%s)", up.auth);
	(void)!fchmodat(root, "config/up.auth", 0644, 0);
	ok(sbx_upstream_load_auth(root, "up.auth", &up, "o", &e) == -1 &&
	    strcmp(e.reason, "auth_file_mode") == 0, "0644 refused");
	ok(sbx_upstream_load_auth(root, "../up.auth", &up, "o", &e) == -1 &&
	    sbx_upstream_load_auth(root, "", &up, "o", &e) == -1,
	    "a path or nothing refused");
	(void)!symlinkat("up.auth", root, "config/link.auth");
	(void)!fchmodat(root, "config/up.auth", 0600, 0);
	ok(sbx_upstream_load_auth(root, "link.auth", &up, "o", &e) == -1,
	    "a symlink refused");
	fd = openat(root, "config/nocolon", O_WRONLY | O_CREAT, 0600);
	(void)!write(fd, "token\n", 6);
	close(fd);
	ok(sbx_upstream_load_auth(root, "nocolon", &up, "o", &e) == -1,
	    "no user:password refused");
	close(root);
}

static void
test_wire(void)
{
	struct sbx_upstream	 up;
	struct sbx_error	 e;
	char			 b[2048];
	const char		*h;
	size_t			 hl;
	int			 st;

	sbx_upstream_parse("http://127.0.0.1:3128", &up, "o", "k", &e);
	ok(sbx_upstream_connect_req(&up, "a.test", 443, b, sizeof(b)) > 0 &&
	    strcmp(b, "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n"
	    "\r\n") == 0, "CONNECT without credentials");
	snprintf(up.auth, sizeof(up.auth), "Basic eDp5");
	ok(sbx_upstream_connect_req(&up, "a.test", 22, b, sizeof(b)) > 0 &&
	    strstr(b, "\r\nProxy-Authorization: Basic eDp5\r\n\r\n") != NULL,
	    "CONNECT with credentials");
	ok(sbx_upstream_connect_req(&up, "a.test", 22, b, 10) == -1,
	    "too small: -1");

	h = "HTTP/1.1 200 Connection established\r\n\r\nDATA";
	ok(sbx_upstream_response(h, strlen(h), &st, &hl) == 1 && st == 200 &&
	    hl == strlen(h) - 4, "200, head length");
	h = "HTTP/1.0 407 Auth\r\nProxy-Authenticate: Basic\r\n\r\n";
	ok(sbx_upstream_response(h, strlen(h), &st, &hl) == 1 && st == 407,
	    "407");
	h = "HTTP/1.1 200\r\n\r\n";
	ok(sbx_upstream_response(h, strlen(h), &st, &hl) == 1 && st == 200,
	    "no reason phrase");
	h = "HTTP/1.1 200 OK\r\n";
	ok(sbx_upstream_response(h, strlen(h), &st, &hl) == 0, "incomplete");
	ok(sbx_upstream_response("HTT", 3, &st, &hl) == 0, "a prefix");
	ok(sbx_upstream_response("SSH-2.0", 7, &st, &hl) == -1,
	    "garbage: -1 at once");
	ok(sbx_upstream_response("HTTP/1.1 2x0", 12, &st, &hl) == -1,
	    "bad status");
	ok(sbx_upstream_response("HTTP/1.1 200 OK\n\n", 17, &st, &hl) == -1,
	    "bare LF");
	ok(sbx_upstream_response("HTTP/1.1 200 OK\r\nX: \x01\r\n\r\n", 25,
	    &st, &hl) == -1, "a control byte");
	memset(b, 'a', sizeof(b));
	memcpy(b, "HTTP/1.1 200 ", 13);
	{
		char	*big = malloc(SBX_UPSTREAM_HEAD_MAX + 10);

		memset(big, 'a', SBX_UPSTREAM_HEAD_MAX + 10);
		memcpy(big, "HTTP/1.1 200 ", 13);
		ok(sbx_upstream_response(big, SBX_UPSTREAM_HEAD_MAX + 10, &st,
		    &hl) == -1, "over the cap: -1");
		free(big);
	}

	h = "GET /p?q HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n";
	ok(sbx_upstream_absolute(&up, h, strlen(h), "a.test", 80, b,
	    sizeof(b)) > 0 && strcmp(b, "GET http://a.test/p?q HTTP/1.1\r\n"
	    "Proxy-Authorization: Basic eDp5\r\nHost: a.test\r\n"
	    "Connection: close\r\n\r\n") == 0, "absolute-form, port 80");
	ok(sbx_upstream_absolute(&up, h, strlen(h), "a.test", 8080, b,
	    sizeof(b)) > 0 && strncmp(b, "GET http://a.test:8080/p?q ", 27) ==
	    0, "absolute-form, another port");
	ok(sbx_upstream_absolute(&up, "GET http://x/ HTTP/1.1\r\n\r\n", 26,
	    "a.test", 80, b, sizeof(b)) == -1, "not origin-form: -1");
}

int
main(void)
{
	test_parse();
	test_auth();
	test_wire();
	return done_testing();
}
