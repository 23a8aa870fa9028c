/* proxycfg.h: sbx-proxy's settings (the `proxy` object of
 * config/sandbox.json, an agent's own proxy keys) and an agent's policy
 * as the proxy applies it.  No event loop and no resolver here: `sbx
 * config` and the installer read them without linking the proxy. */
#ifndef SBX_PROXYCFG_H
#define SBX_PROXYCFG_H

#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "error.h"
#include "upstream.h"

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
	/* The checks an agent's settings file passes before the proxy
	 * writes it (an ask answered allow-always or deny-always): the
	 * program sets sbx_cfg_validate (lib/service/cfgcheck.c, a layer
	 * above the proxy); NULL refuses the write. */
	sbx_cfg_check_fn validate;
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

/* `opaque_ports` (of origin's `where`: "proxy." or ""): absent, or an
 * array of 1..65535, at most SBX_PROXY_OPAQUE_MAX, into out. */
int	 sbx_proxy_cfg_ports(const json_t *v, const char *origin,
	    const char *where, unsigned short *out, size_t *n,
	    struct sbx_error *);
/* `upstream` and `upstream_auth_file` of o (where: "proxy." or ""): the
 * parent proxy, and its credentials read from config/ when rootfd is a
 * root. */
int	 sbx_proxy_cfg_upstream(int rootfd, const json_t *o,
	    const char *origin, const char *where, struct sbx_upstream *,
	    int *have, struct sbx_error *);

#endif
