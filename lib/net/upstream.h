/* upstream.h: the parent proxy sbx-proxy chains to (`proxy.upstream` of
 * config/sandbox.json, or an agent's `upstream`): its address, the
 * credentials it wants, the CONNECT request sent to it and its answer.
 *
 * Pure logic, no I/O but sbx_upstream_load_auth().  The policy is
 * applied by sbx first, exactly as without a parent; the parent then
 * resolves the names, so the private-address rule applies to nothing
 * the sandbox asks for (the parent's network decides), and the parent
 * itself may be on any address: the administrator's choice.
 */
#ifndef SBX_UPSTREAM_H
#define SBX_UPSTREAM_H

#include <sys/socket.h>

#include <stddef.h>

#include "error.h"

/* The answer head of a parent may not be longer than this. */
#define SBX_UPSTREAM_HEAD_MAX	8192
/* Proxy-Authorization value: "Basic " and base64 of user:password. */
#define SBX_UPSTREAM_AUTH_MAX	1024

struct sbx_upstream {
	char			 host[254];	/* a name or an address */
	unsigned		 port;
	int			 literal;	/* host is an address */
	struct sockaddr_storage	 addr;		/* when literal, port set */
	socklen_t		 addrlen;
	char			 auth[SBX_UPSTREAM_AUTH_MAX];	/* "" none */
};

/*
 * Parse "http://HOST:PORT" (a trailing "/" allowed): HOST a DNS name, an
 * IPv4 address or a bracketed IPv6 address; PORT 1..65535, required.
 * Refused (invalid_args, reason config_invalid, the message naming
 * origin and key): any other scheme (https:// parents are not
 * supported), credentials in the URL (they belong in a host-side file:
 * upstream_auth_file), a path, a query, anything else.
 */
int	 sbx_upstream_parse(const char *url, struct sbx_upstream *,
	    const char *origin, const char *key, struct sbx_error *);
/*
 * The credentials: config/NAME under the state root (one component, a
 * regular 0600 file of ours, no symlink), holding "user:password" on its
 * first line.  Sets up->auth to the Basic Proxy-Authorization value.
 * With rootfd -1 only the name is checked.
 */
int	 sbx_upstream_load_auth(int rootfd, const char *name,
	    struct sbx_upstream *, const char *origin, struct sbx_error *);
/* The request to open a tunnel to host:port through the parent, with its
 * credentials: the length written, or -1 when it does not fit. */
int	 sbx_upstream_connect_req(const struct sbx_upstream *,
	    const char *host, unsigned port, char *buf, size_t size);
/*
 * The parent's answer head in buf[0..len): 1 complete (*status its
 * status code, *headlen its length with the final CRLF CRLF), 0 more
 * bytes needed, -1 not an HTTP/1.x answer (a bad status line, bare LF,
 * a control byte, a head over SBX_UPSTREAM_HEAD_MAX).
 */
int	 sbx_upstream_response(const char *buf, size_t len, int *status,
	    size_t *headlen);
/*
 * An origin-form head (the proxy's rewritten request: "METHOD /path
 * HTTP/1.1\r\n...") made absolute-form for the parent, with the
 * credentials after the request line.  The length written to out, or -1
 * when it does not fit or the head is not origin-form.
 */
int	 sbx_upstream_absolute(const struct sbx_upstream *, const char *head,
	    size_t len, const char *host, unsigned port, char *out,
	    size_t size);

#endif
