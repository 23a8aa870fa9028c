/* t-credrule: credential rules: the JSON form, its refusals, host
 * matching, placeholders. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <sodium.h>

#include "tap.h"

#include "credrule.h"

static int
parse(const char *js, struct sbx_credrule *r, struct sbx_error *e)
{
	json_t	    *o;
	json_error_t je;
	int	     rc;

	memset(e, 0, sizeof(*e));
	if ((o = json_loads(js, 0, &je)) == NULL)
		return -2;
	rc = sbx_credrule_parse(o, "test", r, e);
	json_decref(o);
	return rc;
}

static void
refused(const char *js, const char *reason)
{
	struct sbx_credrule r;
	struct sbx_error    e;
	int		    rc = parse(js, &r, &e);

	ok(rc == -1 && e.reason != NULL && strcmp(e.reason, reason) == 0 &&
		strcmp(e.kind, SBX_K_INVALID_ARGS) == 0,
	    "refused (%s): %s", reason, js);
	if (rc != -1 || e.reason == NULL || strcmp(e.reason, reason) != 0)
		diag("rc %d reason %s: %s", rc, e.reason ? e.reason : "-",
		    e.message);
}

static void
roundtrip(const char *js, const char *want)
{
	struct sbx_credrule r;
	struct sbx_error    e;
	json_t		   *o;
	char		   *s = NULL;

	if (parse(js, &r, &e) == 0 && (o = sbx_credrule_json(&r)) != NULL) {
		s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
		json_decref(o);
	} else
		diag("%s", e.message);
	is_str(s != NULL ? s : "(null)", want, "json form of a rule");
	free(s);
}

int
main(void)
{
	struct sbx_credrule r;
	struct sbx_error    e;
	char		    ph[SBX_CRED_PLACEHOLDER_MAX + 1];
	char		    ph2[SBX_CRED_PLACEHOLDER_MAX + 1];

	if (sodium_init() < 0)
		return 1;
	ok(parse("{\"secret\":\"OPENAI_API_KEY\",\"hosts\":"
		 "[\"API.openai.com\",\"*.example.com:8443\"],"
		 "\"header\":\"Authorization: Bearer {}\"}",
	       &r, &e) == 0,
	    "a header rule parses");
	ok(r.kind == SBX_CRED_HEADER && strcmp(r.hname, "Authorization") == 0 &&
		strcmp(r.tmpl, "Bearer {}") == 0,
	    "header name and template");
	ok(r.nhosts == 2 && strcmp(r.hosts[0].name, "api.openai.com") == 0 &&
		r.hosts[0].port == 443 && !r.hosts[0].wildcard &&
		r.hosts[1].wildcard && r.hosts[1].port == 8443 &&
		strcmp(r.hosts[1].name, "example.com") == 0,
	    "hosts lowercased, "
	    "ports, wildcard");
	ok(sbx_credrule_match(&r, "api.openai.com", 443), "exact host");
	ok(!sbx_credrule_match(&r, "api.openai.com", 80), "other port");
	ok(!sbx_credrule_match(&r, "xapi.openai.com", 443), "other name");
	ok(sbx_credrule_match(&r, "a.b.example.com", 8443), "under wildcard");
	ok(!sbx_credrule_match(&r, "example.com", 8443),
	    "a wildcard is not its own base");
	ok(!sbx_credrule_match(&r, "badexample.com", 8443),
	    "a wildcard is label-wise");
	ok(!sbx_credrule_match(&r, "a.example.com", 443),
	    "wildcard with its port only");

	roundtrip("{\"secret\":\"K\",\"hosts\":[\"A.b\",\"*.c.d:8443\"],"
		  "\"header\":\"x-api-key: {}\"}",
	    "{\"header\":\"x-api-key: {}\",\"hosts\":[\"a.b\",\"*.c.d:8443\"],"
	    "\"secret\":\"K\"}");
	roundtrip("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"basic_user\":"
		  "\"bob\"}",
	    "{\"basic_user\":\"bob\",\"hosts\":[\"a.b\"],"
	    "\"secret\":\"K\"}");
	roundtrip("{\"secret\":\"K\",\"hosts\":[\"127.0.0.1:9\",\"[::1]:8\"],"
		  "\"query\":\"key\"}",
	    "{\"hosts\":[\"127.0.0.1:9\",\"[::1]:8\"],"
	    "\"query\":\"key\",\"secret\":\"K\"}");
	ok(parse("{\"secret\":\"K\",\"hosts\":[\"[::1]:8\"],\"query\":\"k\"}",
	       &r, &e) == 0 &&
		sbx_credrule_match(&r, "::1", 8),
	    "IPv6 literal");

	refused("[]", "malformed");
	refused("{\"hosts\":[\"a.b\"],\"query\":\"k\"}", "missing");
	refused("{\"secret\":\"bad-name\",\"hosts\":[\"a.b\"],\"query\":\"k\"}",
	    "bad_secret");
	refused("{\"secret\":\"K\",\"hosts\":[],\"query\":\"k\"}", "missing");
	refused("{\"secret\":\"K\",\"hosts\":[\"*\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"*.com\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b:*\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b:0\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"a_b.c\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b/x\"],\"query\":\"k\"}",
	    "bad_host");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"]}", "bad_where");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":\"k\","
		"\"basic_user\":\"u\"}",
	    "bad_where");
	refused(
	    "{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":\"Host: {}\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"content-length: {}\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"Proxy-Authorization: {}\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"X-Key: a {} {}\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"X-Key: none\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"{}: x\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"header\":"
		"\"X-Key: {}\\r\\nX-Evil: 1\"}",
	    "bad_header");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"basic_user\":\"a:b\"}",
	    "bad_user");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":\"a=b\"}",
	    "bad_query");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":\"k\","
		"\"value\":\"v\"}",
	    "unknown_key");
	refused("{\"secret\":\"K\",\"hosts\":[\"a.b\"],\"query\":7}",
	    "malformed");

	ok(parse("{\"secret\":\"OPENAI_API_KEY\",\"hosts\":[\"a.b\"],"
		 "\"query\":\"k\"}",
	       &r, &e) == 0,
	    "a query rule");
	sbx_credrule_placeholder("OPENAI_API_KEY", ph);
	sbx_credrule_placeholder("OPENAI_API_KEY", ph2);
	ok(strncmp(ph, "sbx-cred-", 9) == 0 && strlen(ph) == 9 + 32 + 1 + 14 &&
		strcmp(ph + 42, "OPENAI_API_KEY") == 0,
	    "placeholder form: %s", ph);
	ok(strcmp(ph, ph2) != 0, "placeholders are drawn afresh");
	ok(sbx_credrule_placeholder_ok(&r, ph), "placeholder checks");
	ok(!sbx_credrule_placeholder_ok(&r, "sbx-cred-00-OPENAI_API_KEY"),
	    "short random part refused");
	ph[12] = 'A';
	ok(!sbx_credrule_placeholder_ok(&r, ph), "upper-case hex refused");
	ok(!sbx_credrule_placeholder_ok(&r, ph2 + 1), "prefix required");
	ph2[strlen(ph2) - 1] = 'X';
	ok(!sbx_credrule_placeholder_ok(&r, ph2), "another secret's name");
	return done_testing();
}
