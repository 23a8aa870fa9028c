/*
 * proxyask.c: the table of sbx-proxy's pending asks (proxyask.h): bounded
 * in all and per agent, each with an id nobody can guess, in the order of
 * their connections.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "dlist.h"
#include "proxyask.h"
#include "time.h"

static struct {
	struct sbx_proxyask	*head, *tail;
	unsigned		 n;
} A;

void
sbx_proxyask_reset(void)
{
	memset(&A, 0, sizeof(A));
}

/*
 * An agent that asks about a flood of names holds its own few, and
 * refusals beyond them, never the others'.  The whole table fills only
 * when SBX_PROXYASK_MAX / SBX_PROXYASK_MAX_AGENT agents each hold their
 * share, so no agent's asks can crowd another's out.
 */
int
sbx_proxyask_hold(struct sbx_proxyask *a, const char *agent, const char *run,
    const char *host, unsigned port, long long t_start, void *owner)
{
	struct sbx_proxyask	*o;
	unsigned char		 rnd[8];
	unsigned		 mine = 0;

	/* Counted by agent name, over every run of the agent: counted by
	 * session, one agent's runs together could fill the table and
	 * every other agent's asks would be refused. */
	for (o = A.head; o != NULL; o = o->next)
		if (strcmp(o->agent, agent) == 0)
			mine++;
	if (A.n >= SBX_PROXYASK_MAX || mine >= SBX_PROXYASK_MAX_AGENT)
		return -1;
	randombytes_buf(rnd, sizeof(rnd));
	sodium_bin2hex(a->id, sizeof(a->id), rnd, sizeof(rnd));
	a->agent = agent;
	a->run = run;
	a->host = host;
	a->port = port;
	a->t_start = t_start;
	a->owner = owner;
	/* After every ask of a connection that started no later. */
	for (o = A.tail; o != NULL && o->t_start > t_start; o = o->prev)
		;
	a->prev = o;
	a->next = o != NULL ? o->next : A.head;
	if (a->next != NULL)
		a->next->prev = a;
	else
		A.tail = a;
	if (o != NULL)
		o->next = a;
	else
		A.head = a;
	A.n++;
	return 0;
}

void
sbx_proxyask_drop(struct sbx_proxyask *a)
{
	SBX_DLIST_UNLINK_TAIL(A.head, A.tail, a);
	A.n--;
}

json_t *
sbx_proxyask_json(const struct sbx_proxyask *a, const char *event)
{
	json_t	*o = json_pack("{s:s,s:s,s:s,s:i,s:s,s:I}", "id", a->id,
	    "agent", a->agent, "host", a->host, "port", (int)a->port, "run",
	    a->run, "age_ms", (json_int_t)(sbx_now_ms() - a->t_start));

	if (o != NULL && event != NULL)
		json_object_set_new(o, "event", json_string(event));
	return o;
}

json_t *
sbx_proxyask_list(void)
{
	struct sbx_proxyask	*a;
	json_t			*l = json_array();

	for (a = A.head; a != NULL; a = a->next)
		json_array_append_new(l, sbx_proxyask_json(a, NULL));
	return json_pack("{s:b,s:o}", "ok", 1, "asks", l);
}

struct sbx_proxyask *
sbx_proxyask_answer(const json_t *req, const char **ans, int *always,
    int *deny, struct sbx_error *e)
{
	const char		*id = json_string_value(json_object_get(req,
				    "id"));
	struct sbx_proxyask	*a;

	*ans = json_string_value(json_object_get(req, "answer"));
	if (*ans == NULL || (strcmp(*ans, "allow-once") != 0 &&
	    strcmp(*ans, "allow-always") != 0 && strcmp(*ans, "deny") != 0 &&
	    strcmp(*ans, "deny-always") != 0)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "answer", "bad_answer",
		    "the answer must be allow-once, allow-always, deny or "
		    "deny-always");
		return NULL;
	}
	for (a = A.head; a != NULL; a = a->next)
		if (id != NULL && strcmp(a->id, id) == 0)
			break;
	if (a == NULL) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "id", "no_such_ask",
		    "no pending ask `%.40s` in this state root's proxy",
		    id != NULL ? id : "");
		return NULL;
	}
	*always = strstr(*ans, "-always") != NULL;
	*deny = strncmp(*ans, "deny", 4) == 0;
	return a;
}

struct sbx_proxyask *
sbx_proxyask_newest(void)
{
	return A.tail;
}
