/* t-config: the schema of the settings users edit
 * (cfgcheck.c), and the edits sbx config makes
 * (config.c): every key is judged by the loader a run uses. */
#include <stdlib.h>

#include "cfgcheck.h"
#include "tap.h"

#include "config.h"
#include "imageref.h"
#include "netmode.h"

/* Validate a document given as JSON text. */
static int
valid(const char *text, int agent, struct sbx_error *e)
{
	json_t	*doc = json_loads(text, 0, NULL);
	int	 rc;

	if (doc == NULL)
		return -2;
	rc = sbx_cfg_validate(doc, agent, agent ? "config/agents/a.json" :
	    "config/sandbox.json", e);
	json_decref(doc);
	return rc;
}

/* {"a":{"b":V}} for key "a.b" and value text V. */
static json_t *
doc_with(const char *key, const char *vtext)
{
	struct sbx_error	 e;
	json_t			*doc = json_object();

	sbx_cfg_put(doc, key, json_loads(vtext, JSON_DECODE_ANY, NULL), &e);
	return doc;
}

/* A good and a bad value of every key: the good one passes the loader of
 * its scope, the bad one is refused by it (so no key is checked by
 * nothing, and no loader ignores a key the table claims). */
static const struct {
	const char	*key;
	const char	*good, *bad;
} samples[] = {
	{ "network", "\"proxy\"", "\"bogus\"" },
	{ "allowed_domains", "[\"example.org\", \"*.example.org\"]",
	    "[\"*.com\"]" },
	{ "denied_domains", "[\"evil.example\"]", "[\"1.2.3.4\"]" },
	{ "allowed_ports", "[443]", "[0]" },
	{ "allow_private", "true", "\"yes\"" },
	{ "allow_private_domains", "[\"mirror.example\"]", "[\"*\"]" },
	{ "allowed_cidrs", "[\"10.0.0.0/8\"]", "[\"10.0.0.1/8\"]" },
	{ "resolve", NULL, "[1]" },
	{ "opaque_ports", "[22]", "[70000]" },
	{ "network_ask", "true", "\"yes\"" },
	{ "ask_timeout_s", "60", "0" },
	{ "upstream", "\"http://proxy.corp.example:3128\"",
	    "\"http://u:p@proxy:3128\"" },
	{ "upstream_auth_file", NULL, "\"../x\"" },
	{ "credentials", "[{\"secret\": \"K\", \"hosts\": [\"api.example\"], "
	    "\"header\": \"Authorization: Bearer {}\"}]",
	    "[{\"secret\": \"K\", \"hosts\": [\"*\"], \"query\": \"k\"}]" },
	{ "limits.memory_mib", "512", "-1" },
	{ "limits.cpus", "1.5", "\"two\"" },
	{ "limits.pids", "64", "1.5" },
	{ "limits.disk_mib", "100", "-5" },
	{ "limits.wall_timeout", "30", "-1" },
	{ "limits.nofile", "1024", "true" },
	{ "limits.file_size_mib", "10", "\"x\"" },
	{ "cgroup_v2_root", "\"/sys/fs/cgroup/x\"", "\"relative\"" },
	{ "workspace_shared", "true", "\"yes\"" },
	{ "identity.per_agent", "true", "1" },
	{ "identity.base", "1879113728", "1000" },
	{ "identity.size", "4096", "1" },
	{ "run_as", "{\"uid\": 1000, \"gid\": 1000}", "{\"uid\": 0}" },
	{ "preflight.min_free_bytes", "1024", "-1" },
	{ "jobs.max_log_bytes", "1048576", "1" },
	{ "jobs.keep_days", "7", "-1" },
	{ "images.max_bytes", "1024", "0" },
	{ "images.max_unpacked", "1024", "-1" },
	{ "images.download_timeout", "60", "999999999" },
	{ "max_envs", "3", "0" },
	{ "proxy.max_connections", "10", "0" },
	{ "proxy.max_connections_per_agent", "10", "0" },
	{ "proxy.connect_timeout_ms", "1000", "1" },
	{ "proxy.header_timeout_ms", "1000", "1" },
	{ "proxy.idle_timeout_ms", "1000", "1" },
	{ "proxy.max_duration_s", "10", "0" },
	{ "proxy.max_request_bytes", "10", "-1" },
	{ "proxy.max_response_bytes", "10", "-1" },
	{ "proxy.idle_exit_s", "10", "0" },
	{ "proxy.log_max_bytes", "8192", "1" },
	{ "proxy.dns_server", "\"127.0.0.1:53\"", "\"localhost\"" },
	{ "proxy.max_lookups", "10", "0" },
	{ "proxy.max_lookups_per_agent", "10", "0" },
	{ "proxy.opaque_ports", "[22]", "[0]" },
	{ "proxy.allow_private_domains", "[\"mirror.example\"]", "[\"*\"]" },
	{ "proxy.allowed_cidrs", "[\"10.0.0.0/8\"]", "[\"x\"]" },
	{ "proxy.upstream", "\"http://10.0.0.1:3128\"", "\"https://p:1\"" },
	{ "proxy.upstream_auth_file", NULL, "\"a/b\"" },
	{ "mcp.max_runs", "4", "65" },
	{ "fail_on_violation", "true", "\"yes\"" },
	{ "require_hard_limits", "true", "\"yes\"" },
	{ "mcp.max_per_minute", "0", "-1" },
	{ "install.registries.apt", "[\"http://deb.debian.org/debian\"]",
	    "[\"ftp://x\"]" },
	{ "install.registries.npm", "[\"http://npm.sbx.test:8080/\"]",
	    "[\"http://u:p@npm.sbx.test/\"]" },
	{ "install.registries.pip", "[\"https://pypi.org/simple/\"]",
	    "[\"http://127.0.0.1/simple\"]" },
	{ "protected_paths", "[\"Makefile\"]", "[\"/abs\"]" },
	{ "allow_git_config", "true", "\"yes\"" },
	{ "git_search_limit", "100", "-1" },
	{ "read_paths", "[\"/opt/x\"]", "[\"rel\"]" },
	{ "deny_paths", "[\"secrets\"]", "[\"../x\"]" },
	{ "allow_unix_sockets", "[\"/run/x.sock\"]", "[\"x.sock\"]" },
	{ "bridge.enabled", "true", "\"yes\"" },
	{ "bridge.idle_exit_s", "60", "0" },
	{ "bridge.header_timeout_ms", "1000", "1" },
	{ "bridge.idle_timeout_s", "30", "0" },
	{ "bridge.max_connections", "64", "0" },
	{ "bridge.max_connections_per_agent", "8", "0" },
	{ "bridge.events_max_bytes", "65536", "1" },
	{ "bridge.memory_max_entries", "1000", "0" },
	{ "bridge.rate_limits", "{\"dispatch\": 5}", "{\"dispatch\": 0}" },
	{ "bridge.inference",
	    "{\"url\": \"http://127.0.0.1:1/v1/chat/completions\"}",
	    "{\"url\": \"ftp://x\"}" },
};

int
main(void)
{
	const struct sbx_cfg_key	*keys, *k;
	struct sbx_error		 e;
	json_t				*doc, *v;
	size_t				 n, i, j;
	char				 name[160];
	int				 dup = 0, covered;

	/* The table. */
	keys = sbx_cfg_keys(&n);
	ok(n > 30, "the schema has %zu keys", n);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (strcmp(keys[i].key, keys[j].key) == 0)
				dup = 1;
	ok(!dup, "no key twice");
	for (i = 0; i < n; i++) {
		covered = 0;
		for (j = 0; j < sizeof(samples) / sizeof(*samples); j++)
			if (strcmp(samples[j].key, keys[i].key) == 0)
				covered = 1;
		ok(covered && keys[i].check != NULL && keys[i].doc != NULL &&
		    keys[i].scope != 0, "%s: has a check, a scope and a test",
		    keys[i].key);
	}
	for (j = 0; j < sizeof(samples) / sizeof(*samples); j++) {
		k = sbx_cfg_key_find(samples[j].key, SBX_CFG_AGENT |
		    SBX_CFG_GLOBAL);
		if (!ok(k != NULL, "%s is in the table", samples[j].key))
			continue;
		if (samples[j].good != NULL) {
			doc = doc_with(k->key, samples[j].good);
			ok(sbx_cfg_validate(doc, (k->scope & SBX_CFG_AGENT) !=
			    0, "f", &e) == 0, "%s = %s accepted", k->key,
			    samples[j].good);
			json_decref(doc);
		}
		doc = doc_with(k->key, samples[j].bad);
		ok(sbx_cfg_validate(doc, (k->scope & SBX_CFG_AGENT) != 0, "f",
		    &e) == -1 && strcmp(e.kind, SBX_K_INVALID_ARGS) == 0,
		    "%s = %s refused", k->key, samples[j].bad);
		json_decref(doc);
	}

	/* Scopes. */
	ok(sbx_cfg_key_find("network", SBX_CFG_GLOBAL) == NULL,
	    "network is an agent setting only");
	ok(sbx_cfg_key_find("proxy.max_connections", SBX_CFG_AGENT) == NULL,
	    "proxy.* are global only");
	ok(sbx_cfg_key_find("limits.pids", SBX_CFG_AGENT) != NULL &&
	    sbx_cfg_key_find("limits.pids", SBX_CFG_GLOBAL) != NULL,
	    "limits are both");
	ok(sbx_cfg_key_find("image", SBX_CFG_AGENT) == NULL &&
	    sbx_cfg_key_find("env", SBX_CFG_AGENT) == NULL,
	    "the image binding is not a setting");
	ok(sbx_cfg_is_group("limits", SBX_CFG_AGENT) &&
	    !sbx_cfg_is_group("limit", SBX_CFG_AGENT) &&
	    !sbx_cfg_is_group("proxy", SBX_CFG_AGENT), "groups");
	ok(sbx_cfg_unknown("nope\n", SBX_CFG_AGENT, &e) == -1 &&
	    strcmp(e.reason, "unknown_key") == 0 &&
	    strstr(e.hint, "limits.memory_mib") != NULL &&
	    strchr(e.message, '\n') == NULL, "unknown key: the known ones, "
	    "the name escaped");

	/* The loaders' own messages. */
	ok(valid("{\"limits\":{\"memory_mib\":-1}}", 1, &e) == -1 &&
	    strstr(e.message, "limit `memory_mib` is out of range") != NULL,
	    "limits: the runlimits message");
	ok(valid("{\"proxy\":{\"nosuch\":1}}", 0, &e) == -1 &&
	    strstr(e.message, "unknown setting `proxy.nosuch`") != NULL,
	    "proxy: the proxy loader's unknown key");
	ok(valid("{\"image\":\"abc\"}", 1, &e) == -1,
	    "an old image key that is not a digest is refused");
	ok(valid("{\"unrelated\":1,\"network\":\"none\"}", 1, &e) == 0,
	    "keys of no loader are left alone");
	ok(valid("[]", 1, &e) == -1, "not an object");
	/* The network modes are the table's (lib/base/netmode.h): every
	 * name is accepted, the message and `sbx config keys` list them. */
	{
		char	 nd[256], l[SBX_NETMODE_LIST_MAX];
		int	 m, all = 1;

		for (m = 0; m < SBX_NETMODE_COUNT; m++) {
			snprintf(nd, sizeof(nd), "{\"network\":\"%s\"}",
			    sbx_netmode_name((enum sbx_netmode)m));
			all &= valid(nd, 1, &e) == 0;
		}
		ok(all, "network: every mode of the table is accepted");
		sbx_netmode_list(l, sizeof(l));
		snprintf(nd, sizeof(nd), "`network` must be %s", l);
		ok(valid("{\"network\":\"host\"}", 1, &e) == -1 &&
		    strstr(e.message, nd) != NULL &&
		    strcmp(e.reason, "config_invalid") == 0,
		    "network: the message lists the table's modes");
		snprintf(nd, sizeof(nd), "network mode of the agent's "
		    "runs: %s", l);
		k = sbx_cfg_key_find("network", SBX_CFG_AGENT);
		ok(k != NULL && strcmp(k->doc, nd) == 0,
		    "network: `sbx config keys` lists the table's modes");
	}
	ok(sbx_cfg_validate(NULL, 1, "f", &e) == 0, "absent: valid");

	/* Values by type. */
	k = sbx_cfg_key_find("limits.memory_mib", SBX_CFG_AGENT);
	v = sbx_cfg_parse_value(k, "512", 0, &e);
	ok(json_is_integer(v) && json_integer_value(v) == 512, "integer");
	json_decref(v);
	v = sbx_cfg_parse_value(k, "-1", 0, &e);
	ok(json_is_integer(v) && json_integer_value(v) == -1,
	    "a negative integer is kept for the loader to refuse");
	json_decref(v);
	v = sbx_cfg_parse_value(k, "12abc", 0, &e);
	ok(json_is_string(v), "not a number: a string, for the loader");
	json_decref(v);
	k = sbx_cfg_key_find("limits.cpus", SBX_CFG_AGENT);
	v = sbx_cfg_parse_value(k, "1.5", 0, &e);
	ok(json_is_real(v) && json_real_value(v) == 1.5, "number");
	json_decref(v);
	k = sbx_cfg_key_find("allow_private", SBX_CFG_AGENT);
	v = sbx_cfg_parse_value(k, "true", 0, &e);
	ok(json_is_true(v), "boolean");
	json_decref(v);
	k = sbx_cfg_key_find("network", SBX_CFG_AGENT);
	v = sbx_cfg_parse_value(k, "123", 0, &e);
	ok(json_is_string(v) && strcmp(json_string_value(v), "123") == 0,
	    "a string key keeps digits as a string");
	json_decref(v);
	k = sbx_cfg_key_find("run_as", SBX_CFG_GLOBAL);
	ok(sbx_cfg_parse_value(k, "1000", 0, &e) == NULL &&
	    strcmp(e.reason, "needs_json") == 0, "an object needs --json-value");
	v = sbx_cfg_parse_value(k, "{\"uid\":1,\"gid\":1}", 1, &e);
	ok(json_is_object(v), "--json-value");
	json_decref(v);
	ok(sbx_cfg_parse_value(k, "{\"a\":1,\"a\":2}", 1, &e) == NULL,
	    "--json-value: duplicate keys refused");

	/* Edits. */
	doc = json_object();
	ok(sbx_cfg_put(doc, "limits.pids", json_integer(5), &e) == 1 &&
	    json_integer_value(sbx_cfg_get(doc, "limits.pids")) == 5,
	    "put makes the intermediate object");
	ok(sbx_cfg_put(doc, "limits.pids", json_integer(5), &e) == 0,
	    "the same value: unchanged");
	ok(sbx_cfg_put(doc, "limits.pids", NULL, &e) == 1 &&
	    json_object_get(doc, "limits") == NULL,
	    "unset leaves no empty object");
	ok(sbx_cfg_put(doc, "limits.pids", NULL, &e) == 0, "unset again: 0");
	json_object_set_new(doc, "limits", json_integer(3));
	ok(sbx_cfg_put(doc, "limits.pids", json_integer(5), &e) == -1,
	    "a non-object on the way is refused");
	ok(sbx_cfg_add(doc, "allowed_domains", json_string("a.example"),
	    &e) == 1 && sbx_cfg_add(doc, "allowed_domains",
	    json_string("b.example"), &e) == 1 && sbx_cfg_add(doc,
	    "allowed_domains", json_string("a.example"), &e) == 0 &&
	    json_array_size(sbx_cfg_get(doc, "allowed_domains")) == 2,
	    "add: once");
	v = json_string("a.example");
	ok(sbx_cfg_rm(doc, "allowed_domains", v, &e) == 1 &&
	    sbx_cfg_rm(doc, "allowed_domains", v, &e) == 0 &&
	    json_array_size(sbx_cfg_get(doc, "allowed_domains")) == 1,
	    "rm");
	json_decref(v);
	v = json_string("x");
	ok(sbx_cfg_add(doc, "limits", json_string("x"), &e) == -1 &&
	    sbx_cfg_rm(doc, "limits", v, &e) == -1, "add/rm on a non-array");
	json_decref(v);
	/* A list written as one string (npm's own `registry` is): add
	 * makes it a list of both, rm of that string unsets it. */
	ok(sbx_cfg_put(doc, "install.registries.npm",
	    json_string("https://a.example/"), &e) == 1 &&
	    sbx_cfg_add(doc, "install.registries.npm",
	    json_string("https://a.example/"), &e) == 0 &&
	    sbx_cfg_add(doc, "install.registries.npm",
	    json_string("https://b.example/"), &e) == 1 &&
	    json_array_size(sbx_cfg_get(doc, "install.registries.npm")) == 2 &&
	    strcmp(json_string_value(json_array_get(sbx_cfg_get(doc,
	    "install.registries.npm"), 0)), "https://a.example/") == 0,
	    "add to a one-string list: a list of both, the string first");
	sbx_cfg_put(doc, "install.registries.npm",
	    json_string("https://a.example/"), &e);
	v = json_string("https://b.example/");
	ok(sbx_cfg_rm(doc, "install.registries.npm", v, &e) == 0, "rm of "
	    "another string from a one-string list: unchanged");
	json_decref(v);
	v = json_string("https://a.example/");
	ok(sbx_cfg_rm(doc, "install.registries.npm", v, &e) == 1 &&
	    sbx_cfg_get(doc, "install") == NULL, "rm of that string: unset");
	json_decref(v);
	json_decref(doc);

	/* Paths. */
	ok(sbx_cfg_path("../x", name, sizeof(name), &e) == -1,
	    "an invalid agent name never makes a path");
	ok(sbx_cfg_path(NULL, name, sizeof(name), &e) == 0 &&
	    strcmp(name, "config/sandbox.json") == 0, "the global file");
	return done_testing();
}
