/*
 * host-connect.c: `sbx-host connect HOST PORT`, the ProxyCommand of git
 * over SSH in `--network proxy` (GIT_SSH_COMMAND, set by sbx exec):
 * a tunnel through the in-sandbox proxy endpoint, 127.0.0.1:3128, with
 * the agent's credentials of $HTTPS_PROXY (or $HTTP_PROXY), then stdin
 * and stdout relayed to it.  The proxy applies its policy as to any
 * CONNECT (name, port, deny list, addresses); port 22 is opaque there, so
 * SSH passes uninspected.
 *
 * Part of sbx-host: static, libc only, nothing of lib/ (see sbx-host.c).
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-connect.h"

#define HC_HEAD_MAX	8192
#define HC_CRED_MAX	512

static int __attribute__((format(printf, 2, 3)))
fail(int code, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "sbx-host: connect: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return code;
}

static void
b64(const unsigned char *in, size_t n, char *out)
{
	static const char	 t[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t			 i, o = 0;
	unsigned		 v;

	for (i = 0; i + 2 < n; i += 3) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8 |
		    in[i + 2];
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = t[v >> 6 & 63];
		out[o++] = t[v & 63];
	}
	if (n - i == 1) {
		v = (unsigned)in[i] << 16;
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = '=';
		out[o++] = '=';
	} else if (n - i == 2) {
		v = (unsigned)in[i] << 16 | (unsigned)in[i + 1] << 8;
		out[o++] = t[v >> 18 & 63];
		out[o++] = t[v >> 12 & 63];
		out[o++] = t[v >> 6 & 63];
		out[o++] = '=';
	}
	out[o] = '\0';
}

/* "http://USER:TOKEN@127.0.0.1:3128": the credentials into cred, the
 * port into *port.  Only the loopback endpoint sbx-init serves. */
static int
proxy_url(const char *u, char *cred, size_t credsz, unsigned *port)
{
	const char	*at, *p;
	char		*end;
	unsigned long	 v;

	if (u == NULL || strncmp(u, "http://", 7) != 0 ||
	    (at = strrchr(u, '@')) == NULL || (size_t)(at - u - 7) >= credsz)
		return -1;
	memcpy(cred, u + 7, (size_t)(at - u - 7));
	cred[at - u - 7] = '\0';
	p = at + 1;
	if (strncmp(p, "127.0.0.1:", 10) != 0)
		return -1;
	errno = 0;
	v = strtoul(p + 10, &end, 10);
	if (errno != 0 || v == 0 || v > 65535 || (*end != '\0' &&
	    strcmp(end, "/") != 0))
		return -1;
	*port = (unsigned)v;
	return 0;
}

/* HOST: a name as ssh passes %h (the proxy judges it); PORT 1..65535. */
static int
target_ok(const char *host, const char *port)
{
	const char	*c;
	char		*end;
	unsigned long	 v;

	if (*host == '\0' || strlen(host) > 253)
		return 0;
	for (c = host; *c != '\0'; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return 0;
	errno = 0;
	v = strtoul(port, &end, 10);
	return errno == 0 && *end == '\0' && v >= 1 && v <= 65535 &&
	    port[0] != '0';
}

/* Read the proxy's answer head, a byte at a time (nothing of the tunnel
 * after it is read here); its status, or -1. */
static int
answer(int fd, char *why, size_t whysz)
{
	char	 h[HC_HEAD_MAX + 1], *x;
	size_t	 n = 0;
	ssize_t	 r;

	while (n < HC_HEAD_MAX) {
		r = read(fd, h + n, 1);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		n++;
		if (n >= 4 && memcmp(h + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	h[n] = '\0';
	if (n < 12 || strncmp(h, "HTTP/1.", 7) != 0)
		return -1;
	why[0] = '\0';
	if ((x = strstr(h, "\r\nX-Proxy-Error: ")) != NULL)
		snprintf(why, whysz, "%.*s", (int)strcspn(x + 17, "\r\n"),
		    x + 17);
	return atoi(h + 9);
}

/* stdin -> fd, fd -> stdout, until the tunnel closes. */
static int
relay(int fd)
{
	struct pollfd	 p[2];
	char		 b[65536];
	ssize_t		 r;
	int		 in_open = 1;

	for (;;) {
		p[0].fd = in_open ? 0 : -1;
		p[0].events = POLLIN;
		p[1].fd = fd;
		p[1].events = POLLIN;
		if (poll(p, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = read(0, b, sizeof(b));
			if (r <= 0) {
				in_open = 0;
				(void)shutdown(fd, SHUT_WR);
			} else if (write(fd, b, (size_t)r) != r)
				return 1;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			r = read(fd, b, sizeof(b));
			if (r <= 0)
				return 0;
			if (write(1, b, (size_t)r) != r)
				return 1;
		}
	}
}

int
sbx_host_connect(const char *host, const char *port)
{
	struct sockaddr_in	 sin;
	char			 cred[HC_CRED_MAX], auth[HC_CRED_MAX * 2];
	char			 req[HC_CRED_MAX * 2 + 600], why[128];
	const char		*u;
	unsigned		 pport;
	int			 fd, n, st, one = 1;

	if (!target_ok(host, port))
		return fail(64, "bad target `%s:%s`", host, port);
	u = getenv("HTTPS_PROXY");
	if (u == NULL || *u == '\0')
		u = getenv("HTTP_PROXY");
	if (proxy_url(u, cred, sizeof(cred), &pport) == -1)
		return fail(69, "no proxy credentials in HTTPS_PROXY (is "
		    "this `--network proxy`?)");
	b64((const unsigned char *)cred, strlen(cred), auth);
	memset(cred, 0, sizeof(cred));
	n = snprintf(req, sizeof(req), "CONNECT %s:%s HTTP/1.1\r\nHost: "
	    "%s:%s\r\nProxy-Authorization: Basic %s\r\n\r\n", host, port,
	    host, port, auth);
	memset(auth, 0, sizeof(auth));
	if (n < 0 || (size_t)n >= sizeof(req))
		return fail(64, "target too long: `%s:%s`", host, port);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return fail(71, "socket: %s", strerror(errno));
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)pport);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    write(fd, req, (size_t)n) != n) {
		memset(req, 0, sizeof(req));
		return fail(69, "cannot reach the proxy endpoint: %s",
		    strerror(errno));
	}
	memset(req, 0, sizeof(req));
	if ((st = answer(fd, why, sizeof(why))) != 200) {
		char	 code[16];

		snprintf(code, sizeof(code), "%d", st);
		fprintf(stderr, "sbx-host: connect: the proxy refused "
		    "%s:%s: %s%s%s\n", host, port, st < 0 ? "no answer" : code,
		    why[0] ? " " : "", why);
		return 1;
	}
	return relay(fd);
}
