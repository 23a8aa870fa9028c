/*
 * bridgecfg.c: sbx-bridge's settings, the "bridge" object of
 * config/sandbox.json (and bridge.enabled of an agent's), kept apart from
 * the server so that sbx config and sbx exec check and read them without
 * linking libmicrohttpd.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge.h"
#include "settings.h"

const char *const sbx_bridge_svc_names[SBX_BSVC_N] = { "other", "inference",
	"dispatch" };

static int
cfg_uint(const json_t *o, const char *key, unsigned long long lo,
    unsigned long long hi, unsigned long long *out, struct sbx_error *e)
{
	const json_t *v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    (unsigned long long)json_integer_value(v) > hi)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, key, "bad_value",
		    "config/sandbox.json: bridge.%s must be an integer from "
		    "%llu to %llu",
		    key, lo, hi);
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

int
sbx_bridge_config_from(const json_t *doc, struct sbx_bridge_config *c,
    struct sbx_error *e)
{
	const json_t	  *br, *inf, *rate;
	unsigned long long n;
	int		   i;

	memset(c, 0, sizeof(*c));
	c->idle_exit_ms = 300 * 1000LL;
	c->header_timeout_ms = 10000;
	c->idle_timeout_s = 120;
	c->max_conns = 256;
	c->max_conns_agent = 32;
	c->rate[SBX_BSVC_OTHER] = 120;
	c->rate[SBX_BSVC_INFERENCE] = 60;
	c->rate[SBX_BSVC_DISPATCH] = 10;
	c->events_max_bytes = 4u << 20;
	c->memory_max_entries = 100000;
	c->inf_timeout_s = 120;
	br = json_object_get(doc, "bridge");
	if (br != NULL && !json_is_object(br)) {
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "bridge",
		    "bad_value",
		    "config/sandbox.json: bridge must be an "
		    "object");
	}
#define U(key, lo, hi, dst) \
	do { \
		n = (unsigned long long)(dst); \
		if (cfg_uint(br, key, lo, hi, &n, e) == -1) \
			goto fail; \
		(dst) = n; \
	} while (0)
	n = (unsigned long long)(c->idle_exit_ms / 1000);
	if (cfg_uint(br, "idle_exit_s", 1, 31 * 86400ULL, &n, e) == -1)
		goto fail;
	c->idle_exit_ms = (long long)n * 1000;
	U("header_timeout_ms", 100, 600000, c->header_timeout_ms);
	U("idle_timeout_s", 1, 86400, c->idle_timeout_s);
	U("max_connections", 1, 4096, c->max_conns);
	U("max_connections_per_agent", 1, 4096, c->max_conns_agent);
	U("events_max_bytes", 4096, 1ULL << 30, c->events_max_bytes);
	U("memory_max_entries", 1, 10000000, c->memory_max_entries);
	rate = json_object_get(br, "rate_limits");
	if (rate != NULL && !json_is_object(rate)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "bridge.rate_limits",
		    "bad_value", "config/sandbox.json: bridge.rate_limits must "
		    "be an object");
		goto fail;
	}
	for (i = 0; i < SBX_BSVC_N; i++) {
		if (json_object_get(rate, sbx_bridge_svc_names[i]) == NULL)
			continue;
		if (cfg_uint(rate, sbx_bridge_svc_names[i], 1, 100000, &n, e) ==
		    -1)
			goto fail;
		c->rate[i] = (unsigned)n;
	}
	inf = json_object_get(br, "inference");
	if (inf != NULL) {
		const char *url =
		    json_string_value(json_object_get(inf, "url"));
		const char *ka =
		    json_string_value(json_object_get(inf, "key_agent"));
		const char *kn =
		    json_string_value(json_object_get(inf, "key_secret"));

		if (url == NULL ||
		    (strncmp(url, "http://", 7) != 0 &&
			strncmp(url, "https://", 8) != 0)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "bridge.inference",
			    "bad_value",
			    "config/sandbox.json: bridge."
			    "inference.url must be an http(s) URL");
			goto fail;
		}
		c->inf_url = strdup(url);
		c->inf_key_agent = ka != NULL ? strdup(ka) : NULL;
		c->inf_key_name = kn != NULL ? strdup(kn) : NULL;
		n = (unsigned long long)c->inf_timeout_s;
		if (cfg_uint(inf, "timeout_s", 1, 3600, &n, e) == -1)
			goto fail;
		c->inf_timeout_s = (long)n;
		n = 0;
		if (cfg_uint(inf, "tokens_per_day", 0, 1ULL << 40, &n, e) == -1)
			goto fail;
		c->inf_tokens_day = (long long)n;
	}
#undef U
	return 0;
fail:
	sbx_bridge_config_free(c);
	return -1;
}

int
sbx_bridge_config_load(int rootfd, struct sbx_bridge_config *c,
    struct sbx_error *e)
{
	json_t *doc = NULL;
	int	rc;

	if (sbx_settings_global(rootfd, &doc, e) == -1)
		return -1;
	rc = sbx_bridge_config_from(doc, c, e);
	json_decref(doc);
	return rc;
}

int
sbx_bridge_config_check(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_bridge_config c;
	const json_t		*br = json_object_get(doc, "bridge");
	const char		*k;
	json_t			*v;

	if (agent) {
		/* An agent says only whether its runs get the bridge. */
		if (br == NULL)
			return 0;
		if (!json_is_object(br))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "bridge",
			    "bad_value", "%s: bridge must be an object",
			    origin);
		json_object_foreach ((json_t *)br, k, v)
			if (strcmp(k, "enabled") != 0 || !json_is_boolean(v))
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "bridge", "bad_value",
				    "%s: bridge takes "
				    "only `enabled` (true or false) in an "
				    "agent's settings",
				    origin);
		return 0;
	}
	if (json_object_get(br, "enabled") != NULL &&
	    !json_is_boolean(json_object_get(br, "enabled")))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "bridge.enabled",
		    "bad_value", "%s: bridge.enabled must be true or false",
		    origin);
	if (sbx_bridge_config_from(doc, &c, e) == -1)
		return -1;
	sbx_bridge_config_free(&c);
	return 0;
}

int
sbx_bridge_enabled(const json_t *global, const json_t *agent)
{
	const json_t *v;

	v = json_object_get(json_object_get(agent, "bridge"), "enabled");
	if (v == NULL)
		v = json_object_get(json_object_get(global, "bridge"),
		    "enabled");
	return json_is_true(v);
}

void
sbx_bridge_config_free(struct sbx_bridge_config *c)
{
	free(c->inf_url);
	free(c->inf_key_agent);
	free(c->inf_key_name);
	c->inf_url = c->inf_key_agent = c->inf_key_name = NULL;
}
