/*
 * fuzz-bridge: libFuzzer target for sbx-bridge's request path past the
 * transport, without I/O: the input is "METHOD PATH\n" and a body; the
 * route is found on the raw path (sbx_bridge_route_find), the body parsed
 * as the server does (sbx_json_parse, capped, duplicate keys refused), and
 * the handler run against stub stores (make fuzz).  Aborts when an
 * invariant breaks:
 *   - a decoded {name} is 1..128 bytes, never `.` or `..`, and holds no
 *     `/`, `\`, NUL or control byte;
 *   - a route is found only for a path that starts with its prefix;
 *   - every handler answers a status and a JSON document, an error one for
 *     every status >= 400.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge.h"
#include "bridgestore.h"
#include "envelope.h"
#include "plugin.h"
#include "settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* The stores: refuse everything (the handlers' own checks are fuzzed). */
static json_t *
no(struct sbx_error *e)
{
	sbx_error_set(e, SBX_K_NOT_FOUND, NULL, "stub", "stub");
	return NULL;
}
int
sbx_bstore_scrub(int r, const char *a, json_t *j, struct sbx_error *e)
{
	return 0;
}
json_t *
sbx_bstore_secret(int r, const char *a, const char *p, const char *n,
    const json_t *h, struct sbx_error *e)
{
	return no(e);
}
json_t *
sbx_bstore_config(int r, const char *a, const char *p, const char *k, json_t *v,
    int op, struct sbx_error *e)
{
	return no(e);
}
long long
sbx_bstore_append(int r, const char *a, enum sbx_bstore_log w, json_t *ev,
    size_t m, struct sbx_error *e)
{
	no(e);
	return -1;
}
json_t *
sbx_bstore_events_read(int r, const char *a, enum sbx_bstore_log w, long long s,
    size_t l, struct sbx_error *e)
{
	return json_array();
}
long long
sbx_bstore_memory_add(int r, const char *a, const json_t *b, size_t m,
    struct sbx_error *e)
{
	no(e);
	return -1;
}
json_t *
sbx_bstore_memory_query(int r, const char *a, const json_t *b,
    struct sbx_error *e)
{
	return no(e);
}
json_t *
sbx_bstore_task_add(int r, const char *a, const json_t *b, struct sbx_error *e)
{
	return no(e);
}
json_t *
sbx_bstore_task_get(int r, const char *a, const char *i, struct sbx_error *e)
{
	return no(e);
}
/* POST /v1/plugins: the recipe checks have their own unit tests
 * (t-recipe); here the handler's answer to a refusal. */
int
sbx_settings_global(int r, json_t **out, struct sbx_error *e)
{
	*out = NULL;
	return 0;
}
int
sbx_plugin_register(int r, const char *a, const json_t *in, const json_t *c,
    json_t *w, json_t **res, struct sbx_error *e)
{
	*res = NULL;
	sbx_error_set(e, SBX_K_INVALID_ARGS, "name", "stub", "stub");
	return -1;
}
void
sbx_bridge_inference(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	sbx_bridge_error(r, 503, "inference_off", "off");
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sbx_bridge_config cfg = { .rate = { 1, 1, 1 } };
	const struct sbx_bridge_route  *rt;
	struct sbx_bridge_req		q;
	struct sbx_bridge_resp		r;
	struct sbx_error		e = { 0 };
	char				param[SBX_BRIDGE_NAME_MAX + 1];
	char				head[2048], *sp, *nl;
	unsigned			st = 0;
	size_t				n, i;

	nl = memchr(data, '\n', size);
	n = nl != NULL ? (size_t)((const uint8_t *)nl - data) : size;
	if (n >= sizeof(head))
		return 0;
	memcpy(head, data, n);
	head[n] = '\0';
	if ((sp = strchr(head, ' ')) == NULL)
		return 0;
	*sp++ = '\0';
	rt = sbx_bridge_route_find(head, sp, param, &st);
	if (rt == NULL) {
		if (st != 400 && st != 404 && st != 405)
			abort();
		return 0;
	}
	if (strncmp(sp, rt->prefix, strlen(rt->prefix)) != 0)
		abort();
	if (rt->flags & SBX_BR_PARAM) {
		n = strlen(param);
		if (n == 0 || n > SBX_BRIDGE_NAME_MAX ||
		    strcmp(param, ".") == 0 || strcmp(param, "..") == 0)
			abort();
		for (i = 0; i < n; i++)
			if ((unsigned char)param[i] < 0x20 || param[i] == '/' ||
			    param[i] == '\\' || param[i] == 0x7f)
				abort();
	}
	memset(&q, 0, sizeof(q));
	q.agent = "a";
	q.method = rt->method;
	q.param = param;
	q.cfg = &cfg;
	q.rootfd = -1;
	if (nl != NULL && (rt->flags & (SBX_BR_BODY | SBX_BR_VALUE))) {
		q.body = sbx_json_parse(nl + 1, size - n - 1, 1u << 20, &e);
		if (q.body == NULL)
			return 0;
	} else if (rt->flags & (SBX_BR_BODY | SBX_BR_VALUE))
		return 0;
	memset(&r, 0, sizeof(r));
	r.stream_fd = -1;
	rt->fn(&q, &r);
	json_decref(q.body);
	if (r.status < 200 || r.status > 599 || r.json == NULL)
		abort();
	if (r.status >= 400 &&
	    !json_is_string(
		json_object_get(json_object_get(r.json, "error"), "code")))
		abort();
	json_decref(r.json);
	return 0;
}
