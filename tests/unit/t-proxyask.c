/* t-proxyask: the table of sbx-proxy's pending asks (lib/net/proxyask.c):
 * its bounds, per agent and in all; ids; the order of `asks`; what an
 * `answer` names and how it is refused. */
#include <stdio.h>
#include <string.h>

#include "tap.h"

#include "proxyask.h"

static struct sbx_proxyask asks[SBX_PROXYASK_MAX + 1];
static char agents[SBX_PROXYASK_MAX + 1][16];

static json_t *
answer(const char *id, const char *ans, const char **a, int *always,
    int *deny, struct sbx_proxyask **out, struct sbx_error *e)
{
	json_t	*req = json_pack("{s:s}", "op", "answer");

	if (id != NULL)
		json_object_set_new(req, "id", json_string(id));
	if (ans != NULL)
		json_object_set_new(req, "answer", json_string(ans));
	memset(e, 0, sizeof(*e));
	*out = sbx_proxyask_answer(req, a, always, deny, e);
	return req;
}

int
main(void)
{
	struct sbx_proxyask	*p, *o;
	struct sbx_error	 e;
	const char		*ans;
	json_t			*l, *req;
	size_t			 i;
	int			 always, deny, n, r;

	sbx_proxyask_reset();
	ok(sbx_proxyask_newest() == NULL, "an empty table");
	/* Three asks, held out of their connections' order. */
	ok(sbx_proxyask_hold(&asks[0], "alice", "r1", "b.example", 443, 200,
	    &asks[0]) == 0, "held");
	ok(strlen(asks[0].id) == 16 && strspn(asks[0].id,
	    "0123456789abcdef") == 16, "the id: 16 hex digits");
	ok(sbx_proxyask_hold(&asks[1], "alice", "r1", "a.example", 443, 100,
	    &asks[1]) == 0 && strcmp(asks[0].id, asks[1].id) != 0,
	    "another, another id");
	ok(sbx_proxyask_hold(&asks[2], "bob", "r2", "b.example", 443, 300,
	    &asks[2]) == 0, "another agent's");
	l = sbx_proxyask_list();
	ok(json_is_true(json_object_get(l, "ok")) &&
	    json_array_size(json_object_get(l, "asks")) == 3 &&
	    strcmp(json_string_value(json_object_get(json_array_get(
	    json_object_get(l, "asks"), 0), "host")), "a.example") == 0 &&
	    strcmp(json_string_value(json_object_get(json_array_get(
	    json_object_get(l, "asks"), 2), "agent")), "bob") == 0,
	    "asks: oldest connection first");
	json_decref(l);
	l = sbx_proxyask_json(&asks[2], "ask");
	ok(json_object_size(l) == 7 && json_integer_value(json_object_get(l,
	    "port")) == 443 && strcmp(json_string_value(json_object_get(l,
	    "event")), "ask") == 0 && strcmp(json_string_value(
	    json_object_get(l, "run")), "r2") == 0 && json_is_integer(
	    json_object_get(l, "age_ms")),
	    "an ask: id, agent, host, port, run, age_ms, event");
	json_decref(l);
	for (n = 0, o = sbx_proxyask_newest(); o != NULL; o = o->prev)
		n++;
	ok(n == 3 && sbx_proxyask_newest() == &asks[2],
	    "walked newest first");

	/* answer */
	req = answer(asks[0].id, "allow-always", &ans, &always, &deny, &p,
	    &e);
	ok(p == &asks[0] && always && !deny && strcmp(ans, "allow-always") ==
	    0, "allow-always names its ask");
	json_decref(req);
	req = answer(asks[1].id, "deny", &ans, &always, &deny, &p, &e);
	ok(p == &asks[1] && !always && deny, "deny: once");
	json_decref(req);
	req = answer(asks[1].id, "allow", &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "bad_answer") == 0 &&
	    strcmp(e.field, "answer") == 0, "allow alone: bad_answer");
	json_decref(req);
	req = answer(asks[1].id, NULL, &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "bad_answer") == 0,
	    "no answer: bad_answer");
	json_decref(req);
	req = answer("0123456789abcdef", "deny", &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "no_such_ask") == 0 &&
	    strcmp(e.kind, SBX_K_NOT_FOUND) == 0, "an unknown id: not_found");
	json_decref(req);
	req = answer(NULL, "deny", &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "no_such_ask") == 0,
	    "no id: no_such_ask");
	json_decref(req);
	req = answer("", "deny", &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "no_such_ask") == 0,
	    "an empty id: no_such_ask");
	json_decref(req);
	sbx_proxyask_drop(&asks[1]);
	req = answer(asks[1].id, "deny", &ans, &always, &deny, &p, &e);
	ok(p == NULL && strcmp(e.reason, "no_such_ask") == 0,
	    "a dropped ask is no longer found");
	json_decref(req);
	sbx_proxyask_drop(&asks[0]);
	sbx_proxyask_drop(&asks[2]);
	ok(sbx_proxyask_newest() == NULL, "all dropped: empty");

	/* The bounds: an agent's share, then the whole table. */
	for (i = 0, r = 0; i < SBX_PROXYASK_MAX_AGENT; i++)
		r |= sbx_proxyask_hold(&asks[i], "alice", "r", "x.example", 443,
		    (long long)i, NULL);
	ok(r == 0 && sbx_proxyask_hold(&asks[i], "alice", "r2", "y.example",
	    443, 1000, NULL) == -1,
	    "an agent's share is %d, over all its runs",
	    SBX_PROXYASK_MAX_AGENT);
	ok(sbx_proxyask_hold(&asks[i], "bob", "r", "y.example", 443, 1000,
	    NULL) == 0, "another agent still asks");
	for (i++; i < SBX_PROXYASK_MAX; i++) {
		snprintf(agents[i], sizeof(agents[i]), "a%zu",
		    i / SBX_PROXYASK_MAX_AGENT);
		r |= sbx_proxyask_hold(&asks[i], agents[i], "r", "z.example",
		    443, 2000, NULL);
	}
	ok(r == 0 && sbx_proxyask_hold(&asks[i], "zed", "r", "z.example",
	    443, 3000, NULL) == -1, "the table holds %d in all",
	    SBX_PROXYASK_MAX);
	sbx_proxyask_drop(&asks[3]);
	ok(sbx_proxyask_hold(&asks[3], "zed", "r", "z.example", 443, 3000,
	    NULL) == 0, "one dropped, one more held");
	return done_testing();
}
