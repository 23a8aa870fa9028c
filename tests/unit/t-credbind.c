/* t-credbind: an agent's credential rules in its settings: loaded (the
 * set's own refusals: too many, a secret twice, two rules in one place of
 * one host), bound (hosts added, another placement refused), unbound (a
 * host, the whole rule), and a refused edit leaving the document as it
 * was. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"

#include "buf.h"
#include "cfgcheck.h"
#include "credbind.h"
#include "credrule.h"

static struct sbx_credset set;

static json_t *
doc(const char *js)
{
	json_error_t	 je;
	json_t		*d = json_loads(js, 0, &je);

	if (d == NULL)
		diag("bad test JSON: %s", je.text);
	return d;
}

static char *
dump(const json_t *d)
{
	return json_dumps(d, JSON_COMPACT | JSON_SORT_KEYS);
}

static int
load(const char *js, struct sbx_error *e)
{
	json_t	*d = doc(js);
	int	 rc;

	memset(e, 0, sizeof(*e));
	rc = sbx_credbind_load(d, "config/agents/a.json", &set, e);
	json_decref(d);
	return rc;
}

static void
load_refused(const char *js, const char *reason)
{
	struct sbx_error	 e;
	int			 rc = load(js, &e);

	ok(rc == -1 && e.reason != NULL && strcmp(e.reason, reason) == 0 &&
	    strstr(e.message, "config/agents/a.json") != NULL,
	    "load refused (%s)", reason);
	if (rc != -1 || e.reason == NULL || strcmp(e.reason, reason) != 0)
		diag("rc %d reason %s: %s", rc, e.reason ? e.reason : "-",
		    e.message);
}

static int
rule(const char *js, struct sbx_credrule *r)
{
	struct sbx_error	 e;
	json_t			*o = doc(js);
	int			 rc;

	rc = sbx_credrule_parse(o, "test", r, &e);
	json_decref(o);
	if (rc == -1)
		diag("%s", e.message);
	return rc;
}

int
main(void)
{
	struct sbx_credrule	 r;
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	json_t			*d;
	char			*s, *before, hs[300];
	char			*hosts[2];
	int			 i;

	/* Loading. */
	ok(load("{}", &e) == 0 && set.n == 0, "no key: no rule");
	ok(sbx_credbind_load(NULL, "x", &set, &e) == 0 && set.n == 0,
	    "no document: no rule");
	ok(load("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\","
	    "\"*.b.com:8443\"],\"header\":\"x-api-key: {}\"}]}", &e) == 0 &&
	    set.n == 1 && set.rule[0].nhosts == 2, "one rule, two hosts");
	ok(sbx_credbind_find(&set, "K") == &set.rule[0] &&
	    sbx_credbind_find(&set, "L") == NULL, "find by secret");
	sbx_credbind_host_str(&set.rule[0].hosts[0], hs, sizeof(hs));
	is_str(hs, "a.com", "host text: port 443 left out");
	sbx_credbind_host_str(&set.rule[0].hosts[1], hs, sizeof(hs));
	is_str(hs, "*.b.com:8443", "host text: wildcard and port");
	load_refused("{\"credentials\":{}}", "config_invalid");
	load_refused("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[],"
	    "\"header\":\"x: {}\"}]}", "missing");
	load_refused("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\""
	    "],\"header\":\"x: {}\"},{\"secret\":\"K\",\"hosts\":[\"b.com\"],"
	    "\"query\":\"k\"}]}", "duplicate_rule");
	/* Two secrets in one header of one host: the proxy would have to
	 * choose.  The same header for other hosts, or another header for
	 * the same host, is fine. */
	load_refused("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\""
	    "],\"header\":\"X-Key: {}\"},{\"secret\":\"L\",\"hosts\":[\"b.com\","
	    "\"A.com\"],\"header\":\"x-key: t {}\"}]}", "rules_collide");
	load_refused("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\""
	    "],\"basic_user\":\"u\"},{\"secret\":\"L\",\"hosts\":[\"a.com\"],"
	    "\"header\":\"Authorization: Bearer {}\"}]}", "rules_collide");
	ok(load("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\"],"
	    "\"header\":\"X-Key: {}\"},{\"secret\":\"L\",\"hosts\":["
	    "\"a.com:8443\",\"b.com\"],\"header\":\"X-Key: {}\"},{\"secret\":"
	    "\"M\",\"hosts\":[\"a.com\"],\"query\":\"key\"}]}", &e) == 0 &&
	    set.n == 3, "same header on other hosts, a query beside it");
	sbx_buf_puts(&b, "{\"credentials\":[");
	for (i = 0; i <= SBX_CRED_RULES_MAX; i++)
		sbx_buf_printf(&b, "%s{\"secret\":\"K%d\",\"hosts\":["
		    "\"h%d.com\"],\"query\":\"k\"}", i ? "," : "", i, i);
	sbx_buf_puts(&b, "]}");
	load_refused(b.p, "too_many_rules");
	sbx_buf_release(&b);

	/* Binding. */
	d = doc("{\"network\":\"proxy\"}");
	ok(rule("{\"secret\":\"K\",\"hosts\":[\"a.com\"],\"header\":"
	    "\"Authorization: Bearer {}\"}", &r) == 0 &&
	    sbx_credbind_bind(d, "cfg", &r, &e) == 1, "bind: a new rule");
	ok(rule("{\"secret\":\"K\",\"hosts\":[\"a.com\",\"b.com:8443\"],"
	    "\"header\":\"Authorization: Bearer {}\"}", &r) == 0 &&
	    sbx_credbind_bind(d, "cfg", &r, &e) == 1, "bind: a host added");
	ok(sbx_credbind_bind(d, "cfg", &r, &e) == 0, "bind: nothing new");
	s = dump(d);
	is_str(s, "{\"credentials\":[{\"header\":\"Authorization: Bearer {}\","
	    "\"hosts\":[\"a.com\",\"b.com:8443\"],\"secret\":\"K\"}],"
	    "\"network\":\"proxy\"}", "the settings' form, hosts merged");
	free(s);
	before = dump(d);
	ok(rule("{\"secret\":\"K\",\"hosts\":[\"c.com\"],\"query\":\"k\"}",
	    &r) == 0 && sbx_credbind_bind(d, "cfg", &r, &e) == -1 &&
	    strcmp(e.reason, "binding_differs") == 0,
	    "bind: another placement is refused");
	s = dump(d);
	is_str(s, before, "... and the document is unchanged");
	free(s);
	ok(rule("{\"secret\":\"L\",\"hosts\":[\"b.com:8443\"],\"header\":"
	    "\"authorization: Token {}\"}", &r) == 0 &&
	    sbx_credbind_bind(d, "cfg", &r, &e) == -1 &&
	    strcmp(e.reason, "rules_collide") == 0,
	    "bind: a rule colliding with another is refused");
	s = dump(d);
	is_str(s, before, "... and the document is unchanged");
	free(s);
	for (i = 0; i < SBX_CRED_HOSTS_MAX; i++) {
		snprintf(hs, sizeof(hs), "{\"secret\":\"K\",\"hosts\":["
		    "\"m%d.com\"],\"header\":\"Authorization: Bearer {}\"}",
		    i);
		if (rule(hs, &r) == -1 || sbx_credbind_bind(d, "cfg", &r,
		    &e) == -1)
			break;
	}
	ok(i == SBX_CRED_HOSTS_MAX - 2 && e.reason != NULL,
	    "bind: at most %d hosts a rule (%s)", SBX_CRED_HOSTS_MAX,
	    e.reason ? e.reason : "-");
	free(before);
	json_decref(d);

	/* Unbinding. */
	d = doc("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\","
	    "\"b.com:8443\"],\"header\":\"x: {}\"},{\"secret\":\"L\",\"hosts\":"
	    "[\"a.com\"],\"query\":\"k\"}]}");
	before = dump(d);
	hosts[0] = "nope.com";
	ok(sbx_credbind_unbind(d, "cfg", "K", hosts, 1, &e) == -1 &&
	    strcmp(e.reason, "host_not_bound") == 0 &&
	    strcmp(e.kind, SBX_K_NOT_FOUND) == 0, "unbind: a host not bound");
	hosts[0] = "a.com";
	hosts[1] = "bad host";
	ok(sbx_credbind_unbind(d, "cfg", "K", hosts, 2, &e) == -1,
	    "unbind: a bad host is refused (%s)", e.reason ? e.reason : "-");
	ok(sbx_credbind_unbind(d, "cfg", "Z", NULL, 0, &e) == -1 &&
	    strcmp(e.reason, "not_bound") == 0, "unbind: a secret not bound");
	s = dump(d);
	is_str(s, before, "refusals leave the document as it was");
	free(s);
	free(before);
	hosts[0] = "B.com:8443";
	ok(sbx_credbind_unbind(d, "cfg", "K", hosts, 1, &e) == 1,
	    "unbind: one host (case-folded)");
	s = dump(d);
	is_str(s, "{\"credentials\":[{\"header\":\"x: {}\",\"hosts\":["
	    "\"a.com\"],\"secret\":\"K\"},{\"hosts\":[\"a.com\"],\"query\":"
	    "\"k\",\"secret\":\"L\"}]}", "one host left");
	free(s);
	hosts[0] = "a.com";
	ok(sbx_credbind_unbind(d, "cfg", "K", hosts, 1, &e) == 1,
	    "unbind: the last host takes the rule");
	ok(sbx_credbind_unbind(d, "cfg", "L", NULL, 0, &e) == 1,
	    "unbind: a whole rule");
	s = dump(d);
	is_str(s, "{}", "no rule left: no key");
	free(s);
	json_decref(d);

	/* The schema (sbx config) checks the key with the same loader. */
	d = doc("{\"credentials\":[{\"secret\":\"K\",\"hosts\":[\"a.com\"],"
	    "\"header\":\"Host: {}\"}]}");
	ok(sbx_cfg_validate(d, 1, "config/agents/a.json", &e) == -1,
	    "sbx config refuses a bad rule (%s)", e.reason ? e.reason : "-");
	json_decref(d);
	ok(sbx_cfg_key_find("credentials", SBX_CFG_AGENT) != NULL &&
	    sbx_cfg_key_find("credentials", SBX_CFG_GLOBAL) == NULL,
	    "credentials: an agent key only");
	return done_testing();
}
