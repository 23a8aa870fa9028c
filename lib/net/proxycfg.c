/* proxycfg.c: the proxy's settings (proxycfg.h): no event loop, no
 * resolver, so that the settings editor and the installer read them
 * without linking the proxy. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "netpolicy.h"
#include "proxycfg.h"
#include "settings.h"
#include "upstream.h"

/* ---- configuration ---------------------------------------------------- */

static int
cfg_num(const json_t *o, const char *key, unsigned long long lo,
    unsigned long long hi, unsigned long long *out, struct sbx_error *e)
{
	const json_t	*v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < lo ||
	    (unsigned long long)json_integer_value(v) > hi)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "config/sandbox.json: `proxy.%s` must "
		    "be an integer from %llu to %llu", key, lo, hi);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

/*
 * The numeric settings of `proxy`, one row each, in the order they are
 * checked: the key, how the field holds it (a count; milliseconds given
 * as ms, or as seconds; bytes), the field, the default (in the key's
 * unit) and the range.
 */
enum { NK_COUNT, NK_MS, NK_S, NK_BYTES };
static const struct numkey {
	const char		*key;
	int			 type;
	size_t			 off;
	unsigned long long	 dflt, lo, hi;
} numkeys[] = {
#define F(f)	offsetof(struct sbx_proxy_config, f)
	{ "max_connections", NK_COUNT, F(max_conns), 4096, 1, 1000000 },
	{ "max_connections_per_agent", NK_COUNT, F(max_conns_agent), 256, 1,
	    1000000 },
	{ "connect_timeout_ms", NK_MS, F(connect_timeout_ms), 10000, 10,
	    600000 },
	{ "header_timeout_ms", NK_MS, F(header_timeout_ms), 10000, 10,
	    600000 },
	{ "idle_timeout_ms", NK_MS, F(idle_timeout_ms), 300000, 10,
	    86400000ULL },
	{ "max_duration_s", NK_S, F(max_duration_ms), 3600, 1, 31 * 86400ULL },
	{ "max_request_bytes", NK_BYTES, F(max_request_bytes), 1ULL << 30, 0,
	    1ULL << 50 },
	{ "max_response_bytes", NK_BYTES, F(max_response_bytes), 16ULL << 30,
	    0, 1ULL << 50 },
	{ "log_max_bytes", NK_BYTES, F(log_max_bytes), 10ULL << 20, 4096,
	    1ULL << 40 },
	{ "idle_exit_s", NK_S, F(idle_exit_ms), 300, 1, 31 * 86400ULL },
	{ "max_lookups", NK_COUNT, F(max_lookups), 1024, 1, 1000000 },
	{ "max_lookups_per_agent", NK_COUNT, F(max_lookups_agent), 64, 1,
	    1000000 },
#undef F
};
#define NNUMKEYS	(sizeof(numkeys) / sizeof(numkeys[0]))

/* A row's value (in the key's unit) into c's field. */
static void
numkey_set(struct sbx_proxy_config *c, const struct numkey *k,
    unsigned long long n)
{
	char	*f = (char *)c + k->off;

	switch (k->type) {
	case NK_COUNT:
		*(unsigned *)(void *)f = (unsigned)n;
		break;
	case NK_MS:
		*(long long *)(void *)f = (long long)n;
		break;
	case NK_S:
		*(long long *)(void *)f = (long long)n * 1000;
		break;
	default:
		*(unsigned long long *)(void *)f = n;
		break;
	}
}

/* `opaque_ports` (of origin's `where`): absent, or an array of 1..65535,
 * at most SBX_PROXY_OPAQUE_MAX. */
int
sbx_proxy_cfg_ports(const json_t *v, const char *origin, const char *where,
    unsigned short *out, size_t *n, struct sbx_error *e)
{
	const json_t	*p;
	size_t		 i;

	*n = 0;
	if (v == NULL)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > SBX_PROXY_OPAQUE_MAX)
		goto bad;
	json_array_foreach (v, i, p) {
		if (!json_is_integer(p) || json_integer_value(p) < 1 ||
		    json_integer_value(p) > 65535)
			goto bad;
		out[(*n)++] = (unsigned short)json_integer_value(p);
	}
	return 0;
bad:
	*n = 0;
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "%s: `%sopaque_ports` must be an array of at "
	    "most %d ports 1..65535", origin, where, SBX_PROXY_OPAQUE_MAX);
}

/*
 * `upstream` and `upstream_auth_file` of o (where: "proxy." or ""): the
 * parent proxy and the file of its credentials under config/.  The file
 * is read only when rootfd is a root (a check of an edit names it).
 */
int
sbx_proxy_cfg_upstream(int rootfd, const json_t *o, const char *origin,
    const char *where, struct sbx_upstream *up, int *have,
    struct sbx_error *e)
{
	const json_t	*u = json_object_get(o, "upstream");
	const json_t	*a = json_object_get(o, "upstream_auth_file");
	char		 key[64];

	*have = 0;
	snprintf(key, sizeof(key), "%supstream", where);
	if (u == NULL && a == NULL)
		return 0;
	if (u == NULL || !json_is_string(u))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `%s` must be \"http://HOST:PORT\"%s",
		    origin, key, u == NULL ? " when upstream_auth_file is set" :
		    "");
	if (sbx_upstream_parse(json_string_value(u), up, origin, key, e) ==
	    -1)
		return -1;
	if (a != NULL && (!json_is_string(a) ||
	    sbx_upstream_load_auth(rootfd, json_string_value(a), up, origin,
	    e) == -1)) {
		if (!json_is_string(a))
			sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "%s: `%supstream_auth_file` must "
			    "be a file name", origin, where);
		memset(up, 0, sizeof(*up));
		return -1;
	}
	*have = 1;
	return 0;
}

/* The loader; with doc given (borrowed), that document instead of the
 * file (sbx config checks an edit before writing it). */
static int
config_parse(int rootfd, const json_t *doc, struct sbx_proxy_config *c,
    struct sbx_error *e)
{
	/* Besides numkeys' keys. */
	static const char *const known[] = { "dns_server", "opaque_ports",
	    "allow_private_domains", "allowed_cidrs", "upstream",
	    "upstream_auth_file", NULL };
	json_t			*cfg = NULL, *o;
	const char		*k;
	json_t			*v;
	unsigned long long	 n;
	size_t			 i;
	int			 rc = -1;

	memset(c, 0, sizeof(*c));
	for (i = 0; i < NNUMKEYS; i++)
		numkey_set(c, &numkeys[i], numkeys[i].dflt);
	if (doc != NULL)
		cfg = json_incref((json_t *)doc);
	else if (rootfd < 0)
		return 0;
	else if (sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	if (cfg == NULL || (o = json_object_get(cfg, "proxy")) == NULL) {
		json_decref(cfg);
		return 0;
	}
	if (!json_is_object(o)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "config", "config_invalid",
		    "config/sandbox.json: `proxy` must be an object");
		goto out;
	}
	json_object_foreach (o, k, v) {
		for (i = 0; i < NNUMKEYS; i++)
			if (strcmp(numkeys[i].key, k) == 0)
				break;
		if (i < NNUMKEYS)
			continue;
		for (i = 0; known[i] != NULL; i++)
			if (strcmp(known[i], k) == 0)
				break;
		if (known[i] == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid",
			    "config/sandbox.json: unknown setting `proxy.%s`",
			    k);
			goto out;
		}
	}
	for (i = 0; i < NNUMKEYS; i++) {
		n = numkeys[i].dflt;
		if (cfg_num(o, numkeys[i].key, numkeys[i].lo, numkeys[i].hi, &n,
		    e) == -1)
			goto out;
		numkey_set(c, &numkeys[i], n);
	}
	if (sbx_proxy_cfg_ports(json_object_get(o, "opaque_ports"),
	    "config/sandbox.json", "proxy.", c->opaque_ports, &c->nopaque,
	    e) == -1)
		goto out;
	if ((v = json_object_get(o, "dns_server")) != NULL) {
		struct in_addr	 a;
		char		 tmp[64], *colon;
		unsigned	 port;

		if (!json_is_string(v) || json_string_length(v) >=
		    sizeof(tmp)) {
bad_dns:
			sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "config/sandbox.json: "
			    "`proxy.dns_server` must be \"IPv4:PORT\"");
			goto out;
		}
		snprintf(tmp, sizeof(tmp), "%s", json_string_value(v));
		if ((colon = strrchr(tmp, ':')) == NULL)
			goto bad_dns;
		*colon = '\0';
		if (inet_pton(AF_INET, tmp, &a) != 1 ||
		    sbx_np_port(colon + 1, strlen(colon + 1), &port) == -1)
			goto bad_dns;
		snprintf(c->dns_server, sizeof(c->dns_server), "%s",
		    json_string_value(v));
	}
	if (sbx_proxy_cfg_upstream(rootfd, o, "config/sandbox.json", "proxy.",
	    &c->upstream, &c->have_upstream, e) == -1)
		goto out;
	/* The policy settings every agent gets: checked now (a bad range
	 * is a configuration error at start, not a refusal at the first
	 * request), applied per session by sbx_proxy_policy(). */
	if (json_object_get(o, "allow_private_domains") != NULL ||
	    json_object_get(o, "allowed_cidrs") != NULL) {
		struct sbx_netpolicy	 np;

		sbx_np_init(&np);
		i = sbx_np_load_global(&np, o, e) == -1;
		sbx_np_free(&np);
		if (i)
			goto out;
		c->policy = json_object();
		if ((v = json_object_get(o, "allow_private_domains")) != NULL)
			json_object_set(c->policy, "allow_private_domains", v);
		if ((v = json_object_get(o, "allowed_cidrs")) != NULL)
			json_object_set(c->policy, "allowed_cidrs", v);
	}
	rc = 0;
out:
	json_decref(cfg);
	return rc;
}

void
sbx_proxy_config_release(struct sbx_proxy_config *c)
{
	json_decref(c->policy);
	c->policy = NULL;
	sodium_memzero(c->upstream.auth, sizeof(c->upstream.auth));
}

int
sbx_proxy_config_load(int rootfd, struct sbx_proxy_config *c,
    struct sbx_error *e)
{
	return config_parse(rootfd, NULL, c, e);
}

int
sbx_proxy_config_check(const json_t *doc, struct sbx_error *e)
{
	struct sbx_proxy_config	 c;
	int			 rc;

	rc = config_parse(-1, doc, &c, e);
	sbx_proxy_config_release(&c);
	return rc;
}

int
sbx_proxy_agent_check(const json_t *agentcfg, const char *origin,
    struct sbx_error *e)
{
	unsigned short		 ports[SBX_PROXY_OPAQUE_MAX];
	struct sbx_upstream	 up;
	const json_t		*v;
	size_t			 n;
	int			 have;

	if (sbx_proxy_cfg_ports(json_object_get(agentcfg, "opaque_ports"),
		origin, "", ports, &n, e) == -1)
		return -1;
	if ((v = json_object_get(agentcfg, "network_ask")) != NULL &&
	    !json_is_boolean(v))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `network_ask` must be true or false",
		    origin);
	if ((v = json_object_get(agentcfg, "ask_timeout_s")) != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 3600))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `ask_timeout_s` must be an integer "
		    "from 1 to 3600", origin);
	return sbx_proxy_cfg_upstream(-1, agentcfg, origin, "", &up, &have, e);
}

int
sbx_proxy_policy(const struct sbx_proxy_config *c, const json_t *agentcfg,
    const char *rel, struct sbx_netpolicy *np, struct sbx_error *e)
{
	sbx_np_init(np);
	if (sbx_np_load_global(np, c != NULL ? c->policy : NULL, e) == -1 ||
	    sbx_np_load(np, agentcfg, rel, e) == -1) {
		sbx_np_free(np);
		return -1;
	}
	return 0;
}
