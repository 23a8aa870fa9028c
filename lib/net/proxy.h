/* proxy.h: sbx-proxy, the filtering egress proxy of `--network proxy`
 * (DESIGN.md §4, man sbx-proxy(1)), and the client side sbx-exec uses.
 *
 * The sandbox never sees a socket path: sbx-exec opens a session on the
 * control socket run/proxy.sock and hands one end of a SOCK_SEQPACKET
 * socketpair to the proxy with it; the other end goes to sbx-init, which
 * passes every TCP connection accepted on 127.0.0.1:3128 inside the
 * sandbox over that channel.  The session binds the channel to one agent.
 */
#ifndef SBX_PROXY_H
#define SBX_PROXY_H

#include <sys/socket.h>

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "initproto.h"
#include "proxycfg.h"

#define SBX_PROXY_SOCK		"run/proxy.sock"
#define SBX_PROXY_PORT		SBX_INIT_PROXY_PORT
/* A control line (JSON) may not be longer than this. */
#define SBX_PROXY_LINE_MAX	(256u << 10)
/* sbx proxy check --resolve: the addresses of host judged as the proxy
 * judges them, [{address, class, range, allowed[, allowed_by]}]; *why,
 * *status and refused set when a run would refuse, one line per address
 * appended to lines, err set when the lookup failed. */
struct sbx_buf;
json_t	*sbx_proxy_check_addresses(const struct sbx_proxy_config *,
	    const struct sbx_netpolicy *, const char *host, const char **why,
	    int *status, char *refused, size_t rsize, struct sbx_buf *lines,
	    struct sbx_error *err);

/* Serve until told to stop or idle for idle_exit_ms.  listen_fd is the
 * bound, listening control socket; rootfd the state root. */
int	 sbx_proxy_serve(int rootfd, int listen_fd,
	    const struct sbx_proxy_config *, struct sbx_error *);

#endif
