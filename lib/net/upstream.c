/* upstream.c: the parent proxy (see upstream.h). */
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "buf.h"
#include "fsutil.h"
#include "layout.h"
#include "netpolicy.h"
#include "upstream.h"

#define BAD(e, ...)							\
	sbx_error_set((e), SBX_K_INVALID_ARGS, "config", "config_invalid", \
	    __VA_ARGS__)

int
sbx_upstream_parse(const char *url, struct sbx_upstream *up,
    const char *origin, const char *key, struct sbx_error *e)
{
	const char		*p, *hp, *colon, *end;
	char			 host[254], norm[SBX_NP_HOST_MAX + 1];
	struct sockaddr_in	*sin;
	struct sockaddr_in6	*sin6;
	size_t			 hl, len;

	memset(up, 0, sizeof(*up));
	sin = (struct sockaddr_in *)(void *)&up->addr;
	sin6 = (struct sockaddr_in6 *)(void *)&up->addr;
	if (url == NULL || (len = strlen(url)) == 0 || len > 300)
		goto bad;
	if (strncmp(url, "http://", 7) != 0) {
		if (strstr(url, "://") != NULL)
			return BAD(e, "%s: `%s` must be an http:// URL (the "
			    "parent is spoken to in plain HTTP)", origin, key);
		goto bad;
	}
	hp = url + 7;
	end = url + len;
	if (end > hp && end[-1] == '/')
		end--;
	if (memchr(hp, '@', (size_t)(end - hp)) != NULL)
		return BAD(e, "%s: `%s` must not carry credentials; put them "
		    "in a file named by upstream_auth_file", origin, key);
	for (p = hp; p < end; p++)
		if (*p == '/' || *p == '?' || *p == '#' ||
		    (unsigned char)*p <= 0x20 || (unsigned char)*p >= 0x7f)
			goto bad;
	if (*hp == '[') {
		if ((p = memchr(hp, ']', (size_t)(end - hp))) == NULL ||
		    p + 1 >= end || p[1] != ':')
			goto bad;
		hl = (size_t)(p - hp - 1);
		colon = p + 1;
		if (hl == 0 || hl >= sizeof(host))
			goto bad;
		memcpy(host, hp + 1, hl);
		host[hl] = '\0';
		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			goto bad;
		sin6->sin6_family = AF_INET6;
		up->addrlen = sizeof(*sin6);
		up->literal = 1;
	} else {
		if ((colon = memchr(hp, ':', (size_t)(end - hp))) == NULL)
			goto bad;
		hl = (size_t)(colon - hp);
		if (hl == 0 || hl >= sizeof(host))
			goto bad;
		memcpy(host, hp, hl);
		host[hl] = '\0';
		if (inet_pton(AF_INET, host, &sin->sin_addr) == 1) {
			sin->sin_family = AF_INET;
			up->addrlen = sizeof(*sin);
			up->literal = 1;
		} else if (sbx_np_host(host, hl, norm) != NULL)
			goto bad;	/* not a name, not a plain address */
		else
			snprintf(host, sizeof(host), "%s", norm);
	}
	if (sbx_np_port(colon + 1, (size_t)(end - colon - 1), &up->port) ==
	    -1)
		goto bad;
	snprintf(up->host, sizeof(up->host), "%s", host);
	if (sin->sin_family == AF_INET)
		sin->sin_port = htons((uint16_t)up->port);
	else if (sin6->sin6_family == AF_INET6)
		sin6->sin6_port = htons((uint16_t)up->port);
	return 0;
bad:
	memset(up, 0, sizeof(*up));
	return BAD(e, "%s: `%s` must be \"http://HOST:PORT\" (a name, an "
	    "IPv4 address or a bracketed IPv6 address, and a port)", origin,
	    key);
}

int
sbx_upstream_load_auth(int rootfd, const char *name, struct sbx_upstream *up,
    const char *origin, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct stat	 st;
	char		 rel[128], b64[SBX_UPSTREAM_AUTH_MAX - 8];
	size_t		 n;
	int		 fd;

	if (name == NULL || *name == '\0' || strlen(name) > 64 ||
	    strchr(name, '/') != NULL || name[0] == '.')
		return BAD(e, "%s: `upstream_auth_file` must name a file in "
		    "config/ (one name, no slash, not hidden)", origin);
	if (rootfd < 0)
		return 0;
	SBX_LPATH(rel, SBX_L_CONFIG_FILE, name);
	/* Credentials: ours alone, or they are not used. */
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_CLOEXEC, e)) ==
	    -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
		close(fd);
		return sbx_error_set(e, SBX_K_REJECTED, "config",
		    "auth_file_mode", "%s must be a regular file of ours with "
		    "mode 0600", rel);
	}
	close(fd);
	if (sbx_fs_read_file_at(rootfd, rel, 1024, &b, e) == -1)
		return -1;
	n = strcspn(b.p != NULL ? b.p : "", "\r\n");
	if (n == 0 || memchr(b.p, ':', n) == NULL ||
	    sodium_base64_ENCODED_LEN(n, sodium_base64_VARIANT_ORIGINAL) >
	    sizeof(b64)) {
		if (b.p != NULL)
			sodium_memzero(b.p, b.len);
		sbx_buf_release(&b);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s must hold user:password on its "
		    "first line", rel);
	}
	sodium_bin2base64(b64, sizeof(b64), (const unsigned char *)b.p, n,
	    sodium_base64_VARIANT_ORIGINAL);
	snprintf(up->auth, sizeof(up->auth), "Basic %s", b64);
	sodium_memzero(b64, sizeof(b64));
	sodium_memzero(b.p, b.len);
	sbx_buf_release(&b);
	return 0;
}

int
sbx_upstream_connect_req(const struct sbx_upstream *up, const char *host,
    unsigned port, char *buf, size_t size)
{
	int	 n;

	n = snprintf(buf, size, "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n"
	    "%s%s%s\r\n", host, port, host, port,
	    up->auth[0] != '\0' ? "Proxy-Authorization: " : "", up->auth,
	    up->auth[0] != '\0' ? "\r\n" : "");
	return n < 0 || (size_t)n >= size ? -1 : n;
}

int
sbx_upstream_response(const char *buf, size_t len, int *status,
    size_t *headlen)
{
	size_t		 i;
	unsigned char	 c;

	/* Judged byte by byte as it comes: a parent that answers garbage
	 * is refused at once, not after the cap. */
	for (i = 0; i < len && i < SBX_UPSTREAM_HEAD_MAX; i++) {
		c = (unsigned char)buf[i];
		if (i < 9) {
			if (i < 7 ? c != (unsigned char)"HTTP/1."[i] :
			    i == 7 ? (c != '0' && c != '1') : c != ' ')
				return -1;
			continue;
		}
		if (i < 12) {
			if (c < '0' || c > '9')
				return -1;
			continue;
		}
		if (i == 12 && c != ' ' && c != '\r')
			return -1;
		if (c == '\n' && buf[i - 1] != '\r')
			return -1;
		if (c == '\r' && i + 1 < len && buf[i + 1] != '\n')
			return -1;
		if ((c < 0x20 && c != '\r' && c != '\n' && c != '\t') ||
		    c == 0x7f)
			return -1;
		if (c == '\n' && i >= 3 && buf[i - 2] == '\n' &&
		    buf[i - 3] == '\r') {
			*status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 +
			    (buf[11] - '0');
			*headlen = i + 1;
			return 1;
		}
	}
	return len >= SBX_UPSTREAM_HEAD_MAX ? -1 : 0;
}

int
sbx_upstream_absolute(const struct sbx_upstream *up, const char *head,
    size_t len, const char *host, unsigned port, char *out, size_t size)
{
	const char	*sp, *eol;
	char		 auth[SBX_UPSTREAM_AUTH_MAX + 40] = "", ps[8] = "";
	int		 n;

	if ((sp = memchr(head, ' ', len)) == NULL || (size_t)(sp - head) + 1
	    >= len || sp[1] != '/' ||
	    (eol = memmem(head, len, "\r\n", 2)) == NULL || eol < sp)
		return -1;
	if (up->auth[0] != '\0')
		snprintf(auth, sizeof(auth), "Proxy-Authorization: %s\r\n",
		    up->auth);
	if (port != 80)
		snprintf(ps, sizeof(ps), ":%u", port);
	n = snprintf(out, size, "%.*s http://%s%s%.*s%s%.*s",
	    (int)(sp - head), head, host, ps,
	    (int)(eol + 2 - (sp + 1)), sp + 1, auth,
	    (int)(len - (size_t)(eol + 2 - head)), eol + 2);
	return n < 0 || (size_t)n >= size ? -1 : n;
}
