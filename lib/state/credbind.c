/*
 * credbind.c: an agent's credential rules in its settings, loaded for a
 * run and edited by `sbx secret bind` and `unbind` (credbind.h).  What a
 * rule means (hosts, placement, the placeholder) is credrule.c's.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>

#include "credbind.h"
#include "credrule.h"

/* Same host entry (name, wildcard, port). */
static int
host_eq(const struct sbx_cred_host *a, const struct sbx_cred_host *b)
{
	return a->wildcard == b->wildcard && a->port == b->port &&
	    strcmp(a->name, b->name) == 0;
}

/* Where in a request the rule puts its credential: two rules that put
 * theirs in the same place of requests to the same host collide. */
static int
same_place(const struct sbx_credrule *a, const struct sbx_credrule *b)
{
	if ((a->kind == SBX_CRED_QUERY) != (b->kind == SBX_CRED_QUERY))
		return 0;
	if (a->kind == SBX_CRED_QUERY)
		return strcmp(a->qname, b->qname) == 0;
	/* Header names are case-insensitive (RFC 9110). */
	return strcasecmp(a->hname, b->hname) == 0;
}

/* The same placement, to the byte: a bind that only adds hosts. */
static int
same_placement(const struct sbx_credrule *a, const struct sbx_credrule *b)
{
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case SBX_CRED_HEADER:
		return strcasecmp(a->hname, b->hname) == 0 &&
		    strcmp(a->tmpl, b->tmpl) == 0;
	case SBX_CRED_BASIC:
		return strcmp(a->user, b->user) == 0;
	case SBX_CRED_QUERY:
		return strcmp(a->qname, b->qname) == 0;
	}
	return 0;
}

void
sbx_credbind_host_str(const struct sbx_cred_host *h, char *out, size_t outsz)
{
	if (h->port == 443)
		snprintf(out, outsz, "%s%s", h->wildcard ? "*." : "", h->name);
	else
		snprintf(out, outsz, "%s%s:%u", h->wildcard ? "*." : "",
		    h->name, h->port);
}

int
sbx_credbind_load(const json_t *doc, const char *origin,
    struct sbx_credset *set, struct sbx_error *e)
{
	const json_t *a, *v;
	char	      where[192], hs[300];
	size_t	      i, j, k, l;

	set->n = 0;
	if (doc == NULL || (a = json_object_get(doc, "credentials")) == NULL)
		return 0;
	if (!json_is_array(a))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid",
		    "%s: `credentials` must be an array of "
		    "rules",
		    origin);
	if (json_array_size(a) > SBX_CRED_RULES_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "too_many_rules",
		    "%s: `credentials` holds %zu rules; at "
		    "most %d",
		    origin, json_array_size(a), SBX_CRED_RULES_MAX);
	json_array_foreach (a, i, v) {
		snprintf(where, sizeof(where), "%s: credentials[%zu]", origin,
		    i);
		if (sbx_credrule_parse(v, where, &set->rule[i], e) == -1)
			return -1;
		set->n = i + 1;
	}
	for (i = 0; i < set->n; i++)
		for (j = i + 1; j < set->n; j++) {
			const struct sbx_credrule *x = &set->rule[i],
			    *y = &set->rule[j];

			if (strcmp(x->secret, y->secret) == 0)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "config", "duplicate_rule", "%s: "
				    "credentials[%zu] and [%zu] both bind %s "
				    "(one rule a secret)", origin, i, j,
				    x->secret);
			if (!same_place(x, y))
				continue;
			for (k = 0; k < x->nhosts; k++)
				for (l = 0; l < y->nhosts; l++)
					if (host_eq(&x->hosts[k],
					    &y->hosts[l])) {
						sbx_credbind_host_str(
						    &x->hosts[k], hs,
						    sizeof(hs));
						return sbx_error_set(e,
						    SBX_K_INVALID_ARGS,
						    "config", "rules_collide",
						    "%s: %s and %s would both "
						    "set %s in requests to %s",
						    origin, x->secret,
						    y->secret, x->kind ==
						    SBX_CRED_QUERY ? x->qname :
						    x->hname, hs);
					}
		}
	return 0;
}

const struct sbx_credrule *
sbx_credbind_find(const struct sbx_credset *set, const char *name)
{
	size_t	 i;

	for (i = 0; i < set->n; i++)
		if (strcmp(set->rule[i].secret, name) == 0)
			return &set->rule[i];
	return NULL;
}

/* The index of name's rule in the array a, or -1. */
static ssize_t
rule_index(const json_t *a, const char *name)
{
	const json_t *v;
	const char   *s;
	size_t	      i;

	json_array_foreach (a, i, v)
		if ((s = json_string_value(json_object_get(v, "secret"))) !=
			NULL &&
		    strcmp(s, name) == 0)
			return (ssize_t)i;
	return -1;
}

/* Rule at of the array a, parsed into r; on failure a is released. */
static int
rule_at(json_t *a, ssize_t at, const char *origin, struct sbx_credrule *r,
    struct sbx_error *e)
{
	char	 where[192];

	snprintf(where, sizeof(where), "%s: credentials[%zd]", origin, at);
	if (sbx_credrule_parse(json_array_get(a, (size_t)at), where, r,
	    e) == -1) {
		json_decref(a);
		return -1;
	}
	return 0;
}

/* Check the edited array as a run would load it, then put it in doc
 * (steals a; an empty array removes the key). */
static int
commit(json_t *doc, const char *origin, json_t *a, struct sbx_error *e)
{
	struct sbx_credset	*set;
	json_t			*tmp;
	int			 rc;

	if ((set = malloc(sizeof(*set))) == NULL) {
		json_decref(a);
		return sbx_error_sys(e, "nomem", "credential rules");
	}
	tmp = json_pack("{s:O}", "credentials", a);
	rc = sbx_credbind_load(tmp, origin, set, e);
	json_decref(tmp);
	free(set);
	if (rc == -1) {
		json_decref(a);
		return -1;
	}
	if (json_array_size(a) == 0) {
		json_decref(a);
		json_object_del(doc, "credentials");
		return 0;
	}
	return json_object_set_new(doc, "credentials", a) == 0 ? 0 :
	    sbx_error_sys(e, "nomem", "credential rules");
}

/* The array of doc's rules, a copy to edit (empty when none); NULL with
 * e when the key is not an array. */
static json_t *
rules_copy(const json_t *doc, const char *origin, struct sbx_error *e)
{
	const json_t	*a = json_object_get(doc, "credentials");

	if (a == NULL)
		return json_array();
	if (!json_is_array(a))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `credentials` must be an array of "
		    "rules", origin), NULL;
	return json_deep_copy(a);
}

int
sbx_credbind_bind(json_t *doc, const char *origin,
    const struct sbx_credrule *r, struct sbx_error *e)
{
	struct sbx_credrule	 old;
	json_t			*a, *hosts, *o;
	ssize_t			 at;
	size_t			 i, j, added = 0;
	char			 hs[300];

	if ((a = rules_copy(doc, origin, e)) == NULL)
		return -1;
	if ((at = rule_index(a, r->secret)) == -1) {
		json_array_append_new(a, sbx_credrule_json(r));
		return commit(doc, origin, a, e) == -1 ? -1 : 1;
	}
	if (rule_at(a, at, origin, &old, e) == -1)
		return -1;
	if (!same_placement(&old, r)) {
		json_decref(a);
		sbx_error_set(e, SBX_K_INVALID_ARGS, "placement",
		    "binding_differs", "%s is bound already, to another place "
		    "in the request (%s); a binding's placement is never "
		    "changed by adding hosts", r->secret, origin);
		sbx_error_hint(e, "sbx secret unbind %s first", r->secret);
		return -1;
	}
	o = sbx_credrule_json(&old);
	hosts = json_object_get(o, "hosts");
	for (i = 0; i < r->nhosts; i++) {
		for (j = 0; j < old.nhosts; j++)
			if (host_eq(&r->hosts[i], &old.hosts[j]))
				break;
		if (j < old.nhosts)
			continue;
		sbx_credbind_host_str(&r->hosts[i], hs, sizeof(hs));
		json_array_append_new(hosts, json_string(hs));
		added++;
	}
	if (added == 0) {
		json_decref(o);
		json_decref(a);
		return 0;
	}
	json_array_set_new(a, (size_t)at, o);
	return commit(doc, origin, a, e) == -1 ? -1 : 1;
}

/* A host in a rule's syntax, parsed by the rule parser itself (one
 * grammar): a rule of that one host. */
static int
parse_host(const char *name, const char *h, struct sbx_cred_host *out,
    struct sbx_error *e)
{
	struct sbx_credrule	 r;
	json_t			*j;
	int			 rc;

	j = json_pack("{s:s,s:[s],s:s}", "secret", name, "hosts", h,
	    "header", "X-Sbx-Host: {}");
	if (j == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "host",
		    "bad_host", "--host must be text");
	rc = sbx_credrule_parse(j, "--host", &r, e);
	json_decref(j);
	if (rc == 0)
		*out = r.hosts[0];
	return rc;
}

int
sbx_credbind_unbind(json_t *doc, const char *origin, const char *name,
    char *const *hosts, size_t nhosts, struct sbx_error *e)
{
	struct sbx_credrule	 old;
	struct sbx_cred_host	 h;
	json_t			*a, *o, *kept;
	ssize_t			 at;
	size_t			 i, j;
	char			 hs[300];
	int			 drop[SBX_CRED_HOSTS_MAX] = { 0 };

	if ((a = rules_copy(doc, origin, e)) == NULL)
		return -1;
	if ((at = rule_index(a, name)) == -1) {
		json_decref(a);
		sbx_error_set(e, SBX_K_NOT_FOUND, "name", "not_bound",
		    "%s is not bound to any host (%s)", name, origin);
		return -1;
	}
	if (nhosts == 0) {
		json_array_remove(a, (size_t)at);
		return commit(doc, origin, a, e) == -1 ? -1 : 1;
	}
	if (rule_at(a, at, origin, &old, e) == -1)
		return -1;
	for (i = 0; i < nhosts; i++) {
		if (parse_host(name, hosts[i], &h, e) == -1) {
			json_decref(a);
			return -1;
		}
		for (j = 0; j < old.nhosts; j++)
			if (host_eq(&h, &old.hosts[j]))
				break;
		if (j == old.nhosts) {
			json_decref(a);
			sbx_credbind_host_str(&h, hs, sizeof(hs));
			sbx_error_set(e, SBX_K_NOT_FOUND, "host",
			    "host_not_bound", "%s is not bound to %s", name,
			    hs);
			return -1;
		}
		drop[j] = 1;
	}
	o = sbx_credrule_json(&old);
	kept = json_array();
	for (j = 0; j < old.nhosts; j++)
		if (!drop[j]) {
			sbx_credbind_host_str(&old.hosts[j], hs, sizeof(hs));
			json_array_append_new(kept, json_string(hs));
		}
	if (json_array_size(kept) == 0) {
		json_decref(kept);
		json_decref(o);
		json_array_remove(a, (size_t)at);
	} else {
		json_object_set_new(o, "hosts", kept);
		json_array_set_new(a, (size_t)at, o);
	}
	return commit(doc, origin, a, e) == -1 ? -1 : 1;
}
