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
#include "upstream.h"

#define SBX_PROXY_SOCK		"run/proxy.sock"
#define SBX_PROXY_PORT		SBX_INIT_PROXY_PORT
/* A control line (JSON) may not be longer than this. */
#define SBX_PROXY_LINE_MAX	(256u << 10)
/* At most this many opaque_ports, globally and per agent. */
#define SBX_PROXY_OPAQUE_MAX	64

struct sbx_proxy_config {
	unsigned	 max_conns;		/* in total */
	unsigned	 max_conns_agent;	/* per agent */
	long long	 connect_timeout_ms;
	long long	 header_timeout_ms;
	long long	 idle_timeout_ms;	/* no byte either way */
	long long	 max_duration_ms;	/* per connection */
	unsigned long long max_request_bytes;	/* client -> upstream */
	unsigned long long max_response_bytes;	/* upstream -> client */
	long long	 idle_exit_ms;		/* no session, no connection */
	unsigned long long log_max_bytes;
	char		 dns_server[64];	/* "ADDR:PORT" or "" */
	unsigned	 max_lookups;		/* waiting, in all */
	unsigned	 max_lookups_agent;	/* waiting, per agent */
	/* Ports whose tunnels are relayed without looking at the first
	 * bytes (SSH...): an administrator's choice, default none. */
	unsigned short	 opaque_ports[SBX_PROXY_OPAQUE_MAX];
	size_t		 nopaque;
	/* The policy settings of every agent (allow_private_domains,
	 * allowed_cidrs), validated; NULL when none.  Owned. */
	json_t		*policy;
	/* The parent proxy every allowed connection goes through
	 * (`upstream`, `upstream_auth_file`), when have_upstream. */
	struct sbx_upstream upstream;
	int		 have_upstream;
};

struct sbx_netpolicy;

/* Defaults, then the `proxy` object of config/sandbox.json (rootfd may be
 * -1).  Unknown keys and bad values: invalid_args, reason config_invalid.
 * sbx_proxy_config_release() frees what it holds. */
int	 sbx_proxy_config_load(int rootfd, struct sbx_proxy_config *,
	    struct sbx_error *);
void	 sbx_proxy_config_release(struct sbx_proxy_config *);
/* The same checks on a document (config/sandbox.json's object, may be
 * NULL), for sbx config: 0, or -1 with the error a load would give. */
int	 sbx_proxy_config_check(const json_t *doc, struct sbx_error *);
/* An agent's proxy settings of its own (`opaque_ports`, `upstream`,
 * `upstream_auth_file`), checked as a session checks them. */
int	 sbx_proxy_agent_check(const json_t *agentcfg, const char *origin,
	    struct sbx_error *);

/* An agent's policy as the proxy applies it: defaults, the global
 * settings of cfg, then the agent's (agentcfg, the object of `rel`, may
 * be NULL).  On failure np is freed. */
int	 sbx_proxy_policy(const struct sbx_proxy_config *,
	    const json_t *agentcfg, const char *rel, struct sbx_netpolicy *,
	    struct sbx_error *);

/* Resolve a normalised host as the proxy would (its resolver settings,
 * dns_server included, connect_timeout_ms), blocking: the number of
 * addresses (at most max) written to addrs/lens, 0 when the name has
 * none, or -1 with kind unavailable (reason resolve_failed). */
int	 sbx_proxy_lookup(const struct sbx_proxy_config *, const char *host,
	    struct sockaddr_storage *addrs, socklen_t *lens, int max,
	    struct sbx_error *);
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
