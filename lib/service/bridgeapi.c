/*
 * bridgeapi.c: the bridge's routes (one table) and their handlers.
 *
 * A handler is plain: it gets a request already authenticated as one
 * agent, with its {name} decoded and validated and its body parsed, and
 * touches only that agent's records, beneath the state root's descriptor,
 * through lib/state/bridgestore.c.  Adding a route is one row below.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge.h"
#include "bridgestore.h"
#include "plugin.h"
#include "settings.h"

void
sbx_bridge_error(struct sbx_bridge_resp *r, unsigned status, const char *code,
    const char *fmt, ...)
{
	char	msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	json_decref(r->json);
	r->status = status;
	r->json =
	    json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg);
}

/* A failure of the store: its kind decides the status. */
static void
store_error(struct sbx_bridge_resp *r, const struct sbx_error *e)
{
	unsigned st = 500;

	const char *k = e->kind != NULL ? e->kind : "";

	if (strcmp(k, SBX_K_INVALID_ARGS) == 0)
		st = 400;
	else if (strcmp(k, SBX_K_NOT_FOUND) == 0)
		st = 404;
	else if (e->reason != NULL &&
	    strcmp(e->reason, "secret_not_in_run") == 0)
		st = 409;	/* refused for now: a new run may have it */
	else if (strcmp(k, SBX_K_REJECTED) == 0)
		st = 403;
	else if (strcmp(k, SBX_K_UNAVAILABLE) == 0 ||
	    strcmp(k, SBX_K_TIMEOUT) == 0)
		st = 503;
	sbx_bridge_error(r, st, e->reason != NULL ? e->reason : "error", "%s",
	    e->message);
}

static void
ok(struct sbx_bridge_resp *r, json_t *doc)
{
	r->status = 200;
	r->json = doc;
}

static void
h_whoami(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	const struct sbx_bridge_route *t;
	json_t			      *may;
	size_t			       i, n;

	may = json_array();
	t = sbx_bridge_routes(&n);
	for (i = 0; i < n; i++)
		if (strcmp(t[i].what, "inference") != 0 ||
		    q->cfg->inf_url != NULL)
			json_array_append_new(may,
			    json_sprintf("%s %s%s", t[i].method, t[i].prefix,
				(t[i].flags & SBX_BR_PARAM) ? "{name}" : ""));
	ok(r,
	    json_pack("{s:s,s:o,s:b}", "agent", q->agent, "may", may,
		"inference", q->cfg->inf_url != NULL));
	/* The session's plugin (sbx plugin run), as the bridge sees it. */
	if (q->plugin != NULL)
		json_object_set_new(r->json, "plugin", json_string(q->plugin));
}

/*
 * A secret, to a plugin's run only: the plugin is the session's (`sbx
 * plugin run`), the store says whether it is installed and declared the
 * name, and the value must be the one the run holds (its digest is in the
 * session): that run's scrubber then redacts it from everything the
 * sandbox prints.  A value set since the run started is refused: served,
 * it would come back unscrubbed.
 */
static void
h_secret(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*doc;

	if (q->plugin == NULL) {
		sbx_bridge_error(r, 403, "plugin_required",
		    "secrets are given to a plugin's own run only (sbx plugin "
		    "run); the agent's own secrets are in its environment");
		return;
	}
	if ((doc = sbx_bstore_secret(q->rootfd, q->agent, q->plugin, q->param,
		 q->secrets, &e)) == NULL) {
		store_error(r, &e);
		return;
	}
	ok(r, doc);
}

static void
h_config_get(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*v;

	if ((v = sbx_bstore_config(q->rootfd, q->agent, q->plugin, q->param,
		 NULL, 0, &e)) == NULL) {
		store_error(r, &e);
		return;
	}
	ok(r, json_pack("{s:s,s:o}", "key", q->param, "value", v));
}

static void
h_config_put(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*v;

	if ((v = sbx_bstore_config(q->rootfd, q->agent, q->plugin, q->param,
		 q->body, 1, &e)) == NULL) {
		store_error(r, &e);
		return;
	}
	json_decref(v);
	ok(r, json_pack("{s:s,s:b}", "key", q->param, "stored", 1));
}

static void
h_config_del(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*v;

	if ((v = sbx_bstore_config(q->rootfd, q->agent, q->plugin, q->param,
		 NULL, 2, &e)) == NULL) {
		store_error(r, &e);
		return;
	}
	json_decref(v);
	ok(r, json_pack("{s:s,s:b}", "key", q->param, "removed", 1));
}

static int
query_num(const char *s, unsigned long long max, unsigned long long dflt,
    unsigned long long *out)
{
	char *end;

	if (s == NULL) {
		*out = dflt;
		return 0;
	}
	if (*s < '0' || *s > '9' || strlen(s) > 19)
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return *end != '\0' || errno != 0 || *out > max ? -1 : 0;
}

static void
h_events_get(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error   e = { 0 };
	unsigned long long since, limit;
	json_t		  *a;

	if (query_num(q->query_since, ~0ULL >> 1, 0, &since) == -1 ||
	    query_num(q->query_limit, 1000, 100, &limit) == -1 || limit == 0) {
		sbx_bridge_error(r, 400, "bad_query",
		    "since must be an event "
		    "id, limit a number from 1 to 1000");
		return;
	}
	if ((a = sbx_bstore_events_read(q->rootfd, q->agent, SBX_BSTORE_EVENTS,
		 since, (size_t)limit, &e)) == NULL) {
		store_error(r, &e);
		return;
	}
	ok(r, json_pack("{s:o}", "events", a));
}

static void
h_events_post(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	const char	*type;
	json_t		*ev;
	long long	 id;

	type = json_string_value(json_object_get(q->body, "type"));
	if (type == NULL || *type == '\0' || strlen(type) > 64) {
		sbx_bridge_error(r, 400, "bad_type",
		    "an event needs a "
		    "`type` string of 1 to 64 bytes");
		return;
	}
	ev = json_pack("{s:s,s:O*}", "type", type, "data",
	    json_object_get(q->body, "data"));
	if ((id = sbx_bstore_append(q->rootfd, q->agent, SBX_BSTORE_EVENTS, ev,
		 q->cfg->events_max_bytes, &e)) == -1) {
		json_decref(ev);
		store_error(r, &e);
		return;
	}
	json_decref(ev);
	ok(r, json_pack("{s:I}", "id", (json_int_t)id));
}

static void
h_log(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	static const char *const levels[] = { "debug", "info", "notice",
		"warning", "error" };
	struct sbx_error	 e = { 0 };
	const char		*level, *msg;
	json_t			*ev;
	size_t			 i;
	long long		 id;

	level = json_string_value(json_object_get(q->body, "level"));
	msg = json_string_value(json_object_get(q->body, "message"));
	for (i = 0; level != NULL && i < sizeof(levels) / sizeof(*levels); i++)
		if (strcmp(level, levels[i]) == 0)
			break;
	if (level == NULL || i == sizeof(levels) / sizeof(*levels)) {
		sbx_bridge_error(r, 400, "bad_level",
		    "`level` must be debug, "
		    "info, notice, warning or error");
		return;
	}
	if (msg == NULL || strlen(msg) > 65536) {
		sbx_bridge_error(r, 400, "bad_message",
		    "`message` must be a "
		    "string of at most 64 KiB");
		return;
	}
	ev = json_pack("{s:s,s:s}", "level", level, "message", msg);
	id = sbx_bstore_append(q->rootfd, q->agent, SBX_BSTORE_LOG, ev,
	    q->cfg->events_max_bytes, &e);
	json_decref(ev);
	if (id == -1) {
		store_error(r, &e);
		return;
	}
	ok(r, json_pack("{s:I}", "id", (json_int_t)id));
}

static void
h_memory_store(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	long long	 id;

	if ((id = sbx_bstore_memory_add(q->rootfd, q->agent, q->body,
		 q->cfg->memory_max_entries, &e)) == -1) {
		store_error(r, &e);
		return;
	}
	ok(r, json_pack("{s:I}", "id", (json_int_t)id));
}

static void
h_memory_query(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*a;

	if ((a = sbx_bstore_memory_query(q->rootfd, q->agent, q->body, &e)) ==
	    NULL) {
		store_error(r, &e);
		return;
	}
	ok(r, json_pack("{s:o}", "results", a));
}

static void
h_dispatch_post(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	const char	*other;
	json_t		*t;

	/* A task is queued for the agent that asked, never for another:
	 * naming one is refused, not silently ignored. */
	other = json_string_value(json_object_get(q->body, "agent_id"));
	if (json_object_get(q->body, "agent_id") != NULL &&
	    (other == NULL || strcmp(other, q->agent) != 0)) {
		sbx_bridge_error(r, 403, "other_agent",
		    "a task can only be "
		    "queued for the agent that asks");
		return;
	}
	if ((t = sbx_bstore_task_add(q->rootfd, q->agent, q->body, &e)) ==
	    NULL) {
		store_error(r, &e);
		return;
	}
	r->status = 202;
	r->json = t;
}

static void
h_dispatch_get(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error e = { 0 };
	json_t		*t;

	if ((t = sbx_bstore_task_get(q->rootfd, q->agent, q->param, &e)) ==
	    NULL) {
		store_error(r, &e);
		return;
	}
	ok(r, t);
}

/*
 * POST /v1/plugins: an agent registers a recipe it wrote (the body is the
 * recipe, files inline), judged with the restricted defaults of
 * sbx_plugin_register (lib/service/plugin.c, as `sbx plugin register`):
 * no network unless every entry is a valid domain pattern, no inference,
 * created_by "agent".  It lands in the library only; a person installs
 * it.  The bridge's per-agent rate limit (the route's service) applies.
 */
static void
h_plugins_post(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	struct sbx_error  e = { 0 };
	json_t		 *cfg = NULL, *w, *res, *body;

	/*
	 * The recipe is a record the run sends like any other, and a
	 * person reads it (sbx plugin list, show): it is scrubbed of the
	 * agent's secrets before it is judged and stored (issue 27), its
	 * files included.  Withheld when the store cannot be opened.
	 */
	if ((body = json_deep_copy(q->body)) == NULL) {
		sbx_bridge_error(r, 500, "nomem", "out of memory");
		return;
	}
	if (sbx_bstore_scrub(q->rootfd, q->agent, body, &e) == -1) {
		json_decref(body);
		store_error(r, &e);
		return;
	}
	if (sbx_settings_global(q->rootfd, &cfg, &e) == -1) {
		json_decref(body);
		store_error(r, &e);
		return;
	}
	w = json_array();
	if (sbx_plugin_register(q->rootfd, q->agent, body, cfg, w, &res,
		&e) == -1) {
		json_decref(body);
		store_error(r, &e);
		if (e.field != NULL)
			json_object_set_new(json_object_get(r->json, "error"),
			    "field", json_string(e.field));
		json_decref(w);
		json_decref(cfg);
		return;
	}
	json_decref(cfg);
	json_decref(body);
	json_object_set_new(res, "warnings", w);
	r->status = 201;
	r->json = res;
}

static const struct sbx_bridge_route routes[] = {
	{ "GET", "/v1/whoami", 0, SBX_BSVC_OTHER, h_whoami, "whoami" },
	{ "GET", "/v1/secrets/", SBX_BR_PARAM, SBX_BSVC_OTHER, h_secret,
	    "secrets" },
	{ "GET", "/v1/config/", SBX_BR_PARAM, SBX_BSVC_OTHER, h_config_get,
	    "config" },
	{ "PUT", "/v1/config/", SBX_BR_PARAM | SBX_BR_VALUE, SBX_BSVC_OTHER,
	    h_config_put, "config" },
	{ "DELETE", "/v1/config/", SBX_BR_PARAM, SBX_BSVC_OTHER, h_config_del,
	    "config" },
	{ "GET", "/v1/events", 0, SBX_BSVC_OTHER, h_events_get, "events" },
	{ "POST", "/v1/events", SBX_BR_BODY, SBX_BSVC_OTHER, h_events_post,
	    "events" },
	{ "POST", "/v1/memory", SBX_BR_BODY, SBX_BSVC_OTHER, h_memory_store,
	    "memory" },
	{ "POST", "/v1/memory/query", SBX_BR_BODY, SBX_BSVC_OTHER,
	    h_memory_query, "memory" },
	{ "POST", "/v1/inference/chat", SBX_BR_BODY, SBX_BSVC_INFERENCE,
	    sbx_bridge_inference, "inference" },
	{ "POST", "/v1/dispatch", SBX_BR_BODY, SBX_BSVC_DISPATCH,
	    h_dispatch_post, "dispatch" },
	{ "GET", "/v1/dispatch/", SBX_BR_PARAM, SBX_BSVC_OTHER, h_dispatch_get,
	    "dispatch" },
	{ "POST", "/v1/log", SBX_BR_BODY, SBX_BSVC_OTHER, h_log, "log" },
	{ "POST", "/v1/plugins", SBX_BR_BODY, SBX_BSVC_OTHER, h_plugins_post,
	    "plugins" },
};

const struct sbx_bridge_route *
sbx_bridge_routes(size_t *n)
{
	*n = sizeof(routes) / sizeof(*routes);
	return routes;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Decode one path segment into out.  The raw path reaches us undecoded
 * (bridge.c turns libmicrohttpd's unescaping off), so that `%2F` cannot
 * become a separator after routing, nor `%00` cut a name short: both,
 * and every control byte, are refused here, as are `.` and `..` whether
 * written plainly or as `%2e%2e`.  Names are opaque beyond that: the
 * stores use them as JSON keys or file names they have validated again.
 */
static int
decode_seg(const char *s, char *out, size_t outsz)
{
	size_t	      n = 0;
	int	      hi, lo;
	unsigned char c;

	for (; *s != '\0'; s++) {
		if (*s == '%') {
			if ((hi = hexval(s[1])) < 0 || (lo = hexval(s[2])) < 0)
				return -1;
			c = (unsigned char)(hi << 4 | lo);
			s += 2;
		} else
			c = (unsigned char)*s;
		if (c < 0x20 || c == 0x7f || c == '/' || c == '\\')
			return -1;
		if (n + 1 >= outsz)
			return -1;
		out[n++] = (char)c;
	}
	out[n] = '\0';
	if (n == 0 || strcmp(out, ".") == 0 || strcmp(out, "..") == 0)
		return -1;
	return 0;
}

const struct sbx_bridge_route *
sbx_bridge_route_find(const char *method, const char *path, char *param,
    unsigned *status)
{
	size_t	    i, n, plen;
	const char *rest;
	int	    path_seen = 0;

	param[0] = '\0';
	n = sizeof(routes) / sizeof(*routes);
	for (i = 0; i < n; i++) {
		plen = strlen(routes[i].prefix);
		if (strncmp(path, routes[i].prefix, plen) != 0)
			continue;
		rest = path + plen;
		if (!(routes[i].flags & SBX_BR_PARAM) && *rest != '\0')
			continue;
		if ((routes[i].flags & SBX_BR_PARAM) &&
		    (*rest == '\0' || strchr(rest, '/') != NULL)) {
			/* /v1/config/a/b: a `/` inside a name. */
			if (*rest != '\0' && !path_seen) {
				*status = 400;
				return NULL;
			}
			continue;
		}
		path_seen = 1;
		if (strcmp(method, routes[i].method) != 0)
			continue;
		if ((routes[i].flags & SBX_BR_PARAM) &&
		    decode_seg(rest, param, SBX_BRIDGE_NAME_MAX + 1) == -1) {
			*status = 400;
			return NULL;
		}
		return &routes[i];
	}
	*status = path_seen ? 405 : 404;
	return NULL;
}

int
sbx_bridge_token_eq(const char *a, size_t alen, const char *b, size_t blen)
{
	unsigned char d = 0;
	size_t	      i;

	/* The length is not a secret (every token has the same one); the
	 * bytes are compared in full whatever differs. */
	if (alen != blen)
		return 0;
	for (i = 0; i < alen; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}
