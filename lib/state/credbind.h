/*
 * credbind.h: an agent's credential rules as its settings hold them
 * (config/agents/A.json, "credentials": [rule, ...], each in credrule.h's
 * JSON form), loaded for a run and edited by `sbx secret bind` and
 * `unbind` (issue 34).  Agent settings only: a rule names one of the
 * agent's own secrets, which no global default could know.
 *
 * A set is at most SBX_CRED_RULES_MAX rules, one per secret, and no two
 * rules put a credential in the same place (header or query name) of
 * requests to the same host and port: the proxy would have to choose.
 */
#ifndef SBX_CREDBIND_H
#define SBX_CREDBIND_H

#include <stddef.h>

#include <jansson.h>

#include "credrule.h"
#include "error.h"

struct sbx_credset {
	struct sbx_credrule rule[SBX_CRED_RULES_MAX];
	size_t		    n;
};

/* The rules of an agent's settings doc (NULL or no key: none); origin
 * names the file in messages.  invalid_args, reason config_invalid (or
 * the rule's own reason), naming the rule ("origin: credentials[2]"). */
int sbx_credbind_load(const json_t *doc, const char *origin,
    struct sbx_credset *, struct sbx_error *);
/* The rule of secret name in the set, or NULL. */
const struct sbx_credrule *
sbx_credbind_find(const struct sbx_credset *, const char *name);
/*
 * Bind (in doc, an agent's settings, changed in place): add rule r, or,
 * when the secret has a rule with the same placement, add r's hosts to
 * it.  A rule of the secret with another placement is refused
 * (binding_differs): where a credential goes is never changed silently.
 * 1 changed, 0 unchanged (every host there already), -1 with e (the
 * resulting set checked as sbx_credbind_load does; doc unchanged).
 */
int	sbx_credbind_bind(json_t *doc, const char *origin,
	    const struct sbx_credrule *r, struct sbx_error *);
/*
 * Unbind: the secret's whole rule (nhosts 0) or those hosts of it (a
 * rule left without a host goes).  1 changed; -1 with e: not_found
 * (reason not_bound, or host_not_bound) or a bad host.  The hosts are
 * in a rule's host syntax.
 */
int	sbx_credbind_unbind(json_t *doc, const char *origin, const char *name,
	    char *const *hosts, size_t nhosts, struct sbx_error *);
/* One host of a rule as written in settings: "name", "*.name",
 * "name:port" (port 443 left out). */
void	sbx_credbind_host_str(const struct sbx_cred_host *, char *out,
	    size_t outsz);

#endif
