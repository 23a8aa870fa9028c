/* cfgcheck.c: the schema of the settings users edit, each key with the
 * check of the loader a run uses (cfgcheck.h).  It sits above every module
 * it checks; the edits themselves are lib/state/config.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "bridge.h"
#include "buf.h"
#include "cfgcheck.h"
#include "config.h"
#include "credbind.h"
#include "fspolicy.h"
#include "idalloc.h"
#include "imageref.h"
#include "install.h"
#include "joblog.h"
#include "mcpconf.h"
#include "netmode.h"
#include "netpolicy.h"
#include "proxycfg.h"
#include "runlimits.h"
#include "sandbox.h"
#include "settings.h"

/* ---- checks: the loaders the runs use ----------------------------------- */

/* sbx exec's network mode (cmd/sbx-exec.c prep_network). */
static int
check_network(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	const json_t	*v = json_object_get(doc, "network");
	enum sbx_netmode m;
	char		 l[SBX_NETMODE_LIST_MAX];

	if (v == NULL || sbx_netmode_parse(json_string_value(v), &m) == 0)
		return 0;
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "config", "config_invalid",
	    "%s: `network` must be %s", origin, sbx_netmode_list(l, sizeof(l)));
}

/* sbx exec and sbx preflight: limits over the defaults. */
static int
check_limits(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_runlimits	 l;

	sbx_limits_defaults(&l);
	return sbx_limits_merge_json(&l, json_object_get(doc, "limits"),
	    agent, origin, e);
}

/* The proxy's policy of an agent (allowlist, ports, private names). */
static int
check_policy(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_netpolicy	 np;
	int			 rc;

	sbx_np_init(&np);
	rc = sbx_np_load(&np, doc, origin, e);
	sbx_np_free(&np);
	return rc;
}

/* The proxy's own settings (config/sandbox.json `proxy`), as the proxy
 * loads them, and an agent's `opaque_ports`. */
static int
check_proxy(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	if (agent)
		return sbx_proxy_agent_check(doc, origin, e);
	return sbx_proxy_config_check(doc, e);
}

/* sbx-bridge's settings (lib/net/bridgecfg.c). */
static int
check_bridge(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	return sbx_bridge_config_check(doc, agent, origin, e);
}

/* A binding an older sbx kept in the agent's config (still honoured
 * while no record exists). */
static int
check_legacy_image(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	char	 d[SBX_DIGEST_HEX + 1];
	int	 env;

	return sbx_imageref_of(-1, doc, origin, "A", d, &env, e) == -1 ? -1 : 0;
}

/* sbx exec (cgroup_v2_root), sbx provision (run_as), sbx preflight
 * (preflight.min_free_bytes): the rules preflight applies (settings.c). */
static int
check_host(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	return sbx_settings_check_host(doc, e);
}

/* Per-agent uids (idalloc.c): identity.per_agent, base and size. */
static int
check_identity(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_idcfg c;
	const json_t	*ws = json_object_get(doc, "workspace_shared");

	if (ws != NULL && !json_is_boolean(ws))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "workspace_shared",
		    "config_invalid", "%s: workspace_shared must be true or "
		    "false", origin);
	memset(&c, 0, sizeof(c));
	c.base = SBX_IDALLOC_BASE;
	c.size = SBX_IDALLOC_SIZE;
	return sbx_idalloc_apply(doc, &c, e);
}

/* Background jobs: the log cap (joblog.c). */
static int
check_jobs(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	unsigned long long	 cap;

	return sbx_joblog_cap_config(doc, &cap, e);
}

/* The file-system policy of an agent (fspolicy.c). */
static int
check_fs(const json_t *doc, int agent, const char *origin, struct sbx_error *e)
{
	return sbx_fspolicy_config_check(doc, origin, e);
}

/* Images and environments (image.c: sbx_image_limits, rootfs.c:
 * sbx_rootfs_limits), the same rules and messages. */
static int
check_images(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	static const char *const keys[] = { "max_bytes", "max_unpacked",
	    "download_timeout" };
	const json_t	*im, *v;
	size_t		 i;

	if ((im = json_object_get(doc, "images")) != NULL)
		for (i = 0; i < 3; i++) {
			if ((v = json_object_get(im, keys[i])) == NULL)
				continue;
			if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
			    (i == 2 && json_integer_value(v) > 7 * 86400))
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "config", "config_invalid",
				    "config/sandbox.json: images.%s must be a "
				    "positive integer%s", keys[i], i == 2 ?
				    " (seconds, at most 604800)" : "");
		}
	if ((v = json_object_get(doc, "max_envs")) != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 100000))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "config/sandbox.json: max_envs must be "
		    "a positive integer");
	return 0;
}

/* sbx install's registries (install.c), the same rules. */
static int
check_install(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	return sbx_install_config_check(doc, e);
}

/* sbx exec's fail_on_violation (lib/exec/exec.c prep_network): true or
 * false, nothing else (a string "false" would read as false there, and
 * a person who wrote it meant something). */
static int
check_exec(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	const json_t	*v = json_object_get(doc, "fail_on_violation");
	const json_t	*h = json_object_get(doc, "require_hard_limits");

	/* require_hard_limits (exec.c prep_limits, issue 32): the same. */
	if (h != NULL && !json_is_boolean(h))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `require_hard_limits` must be true "
		    "or false", origin);
	if (v == NULL || json_is_boolean(v))
		return 0;
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "config", "config_invalid",
	    "%s: `fail_on_violation` must be true or false", origin);
}

/* sbx mcp's limits (lib/state/mcpconf.c). */
static int
check_mcp(const json_t *doc, int agent, const char *origin, struct sbx_error *e)
{
	return sbx_mcpconf_check(doc, agent, origin, e);
}

/* An agent's credential rules (credbind.c): the loader sbx exec uses. */
static int
check_credentials(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_credset	*set;
	int			 rc;

	if (json_object_get(doc, "credentials") == NULL)
		return 0;
	if ((set = malloc(sizeof(*set))) == NULL)
		return sbx_error_sys(e, "nomem", "credential rules");
	rc = sbx_credbind_load(doc, origin, set, e);
	free(set);
	return rc;
}

/* ---- the schema --------------------------------------------------------- */

#define A	SBX_CFG_AGENT
#define G	SBX_CFG_GLOBAL
#define S	SBX_CFG_STRING
#define I	SBX_CFG_INT
#define N	SBX_CFG_NUMBER
#define B	SBX_CFG_BOOL
#define SS	SBX_CFG_STRINGS
#define IS	SBX_CFG_INTS
#define O	SBX_CFG_OBJECT

/*
 * Every key a program reads from config/sandbox.json or
 * config/agents/A.json.  A key added to a loader is added here, or `sbx
 * config` refuses it: tests/unit/t-config.c keeps the two in step for
 * the keys it knows.
 */
static const struct sbx_cfg_key keys[] = {
	{ "network", S, A, check_network,
	    "network mode of the agent's runs: none, proxy or outbound" },
	{ "fail_on_violation", B, A, check_exec,
	    "a run with a network or file-system violation fails (rejected)" },
	{ "require_hard_limits", B, A | G, check_exec,
	    "refuse a run whose disk limit cannot be hard (--hard-limits)" },
	{ "allowed_domains", SS, A, check_policy,
	    "names the proxy lets through (NAME, *.NAME, NAME:PORT)" },
	{ "denied_domains", SS, A, check_policy,
	    "names refused even when allowed (NAME[:PORT], *:PORT)" },
	{ "allowed_ports", IS, A, check_policy,
	    "ports the proxy lets through (default 80, 443)" },
	{ "allow_private", B, A, check_policy,
	    "let allowed names resolve to private addresses (blunt)" },
	{ "allow_private_domains", SS, A, check_policy,
	    "names allowed to resolve to non-global addresses" },
	{ "allowed_cidrs", SS, A, check_policy,
	    "address ranges allowed for allowlisted names" },
	{ "resolve", O, A, check_policy,
	    "tests only: name -> address overrides (needs allow_private)" },
	{ "opaque_ports", IS, A, check_proxy,
	    "ports whose tunnels are relayed without looking at them" },
	{ "network_ask", B, A, check_proxy,
	    "hold a request for a name no rule decides and ask (sbx proxy asks)" },
	{ "ask_timeout_s", I, A, check_proxy,
	    "how long an ask waits for an answer (default 30; then deny)" },
	{ "upstream", S, A, check_proxy,
	    "parent proxy of this agent's connections (http://HOST:PORT)" },
	{ "upstream_auth_file", S, A, check_proxy,
	    "file in config/ (0600) with user:password for the parent" },
	{ "credentials", O, A, check_credentials,
	    "secrets the proxy adds to requests for their hosts (sbx secret bind)" },
	{ "protected_paths", SS, A, check_fs,
	    "more protected paths in each writable root (globs)" },
	{ "allow_git_config", B, A, check_fs,
	    "let the sandbox write .git/config (remotes)" },
	{ "git_search_limit", I, A, check_fs,
	    "directories searched for nested git repositories (0: none)" },
	{ "read_paths", SS, A, check_fs,
	    "host paths bound read-only at their own path" },
	{ "deny_paths", SS, A, check_fs,
	    "paths in the workdir or read paths hidden from the sandbox" },
	{ "allow_unix_sockets", SS, A, check_fs,
	    "host unix sockets the sandbox may connect to" },
	{ "limits.memory_mib", I, A | G, check_limits,
	    "memory limit in MiB (0: none)" },
	{ "limits.cpus", N, A | G, check_limits, "CPU limit (0: none)" },
	{ "limits.pids", I, A | G, check_limits, "task limit (0: none)" },
	{ "limits.disk_mib", I, A | G, check_limits,
	    "size of /tmp in MiB (0: none)" },
	{ "limits.wall_timeout", N, A | G, check_limits,
	    "wall-clock limit in seconds (0: none)" },
	{ "limits.nofile", I, A | G, check_limits,
	    "open-file limit (0: inherit)" },
	{ "limits.file_size_mib", I, A | G, check_limits,
	    "largest file a run may write, MiB (0: none)" },
	{ "bridge.enabled", B, A | G, check_bridge,
	    "serve the host bridge (sbx-host) in the agent's runs" },
	{ "bridge.idle_exit_s", I, G, check_bridge,
	    "sbx-bridge exits after this long without work" },
	{ "bridge.header_timeout_ms", I, G, check_bridge,
	    "a request's head must arrive within this" },
	{ "bridge.idle_timeout_s", I, G, check_bridge,
	    "a quiet bridge connection is closed after this" },
	{ "bridge.max_connections", I, G, check_bridge,
	    "bridge connections in all" },
	{ "bridge.max_connections_per_agent", I, G, check_bridge,
	    "bridge connections per agent" },
	{ "bridge.events_max_bytes", I, G, check_bridge,
	    "an agent's event log is rotated past this" },
	{ "bridge.memory_max_entries", I, G, check_bridge,
	    "an agent's memory keeps at most this many entries" },
	{ "bridge.rate_limits", O, G, check_bridge,
	    "requests a minute per agent: {other, inference, dispatch}" },
	{ "bridge.inference", O, G, check_bridge,
	    "{url, key_agent, key_secret, timeout_s, tokens_per_day}" },
	{ "cgroup_v2_root", S, G, check_host,
	    "the delegated cgroup v2 directory to run under" },
	{ "workspace_shared", B, A, check_identity,
	    "per-agent uids as root: /workspace/shared, with its group" },
	{ "identity.per_agent", B, G, check_identity,
	    "each agent its own uid and gid (sbx provision --migrate-identity)" },
	{ "identity.base", I, G, check_identity,
	    "first id of the per-agent range (root; default 1879113728)" },
	{ "identity.size", I, G, check_identity,
	    "ids in the per-agent range (default 4096)" },
	{ "run_as", O, G, check_host,
	    "as root: {\"uid\": N, \"gid\": N} sandboxes run as" },
	{ "preflight.min_free_bytes", I, G, check_host,
	    "free space preflight asks of the state root" },
	{ "jobs.max_log_bytes", I, G, check_jobs,
	    "cap of a background job's log" },
	{ "jobs.keep_days", I, G, check_jobs,
	    "finished jobs older than this are pruned by exec ps (0: never)" },
	{ "images.max_bytes", I, G, check_images,
	    "largest image download or archive" },
	{ "images.max_unpacked", I, G, check_images, "largest unpacked image" },
	{ "images.download_timeout", I, G, check_images,
	    "image download time limit, seconds" },
	{ "max_envs", I, G, check_images,
	    "agent environments kept (least recently used evicted)" },
	{ "mcp.max_runs", I, A | G, check_mcp,
	    "sbx mcp: tool calls running at once (1 to 64, default 8)" },
	{ "mcp.max_per_minute", I, A | G, check_mcp,
	    "sbx mcp: tool calls started per minute (0: no limit)" },
	{ "install.registries.apt", SS, G, check_install,
	    "sbx install: apt hosts to allow (default: the image's sources)" },
	{ "install.registries.npm", SS, G, check_install,
	    "sbx install: npm registry URL, then more hosts to allow" },
	{ "install.registries.pip", SS, G, check_install,
	    "sbx install: pip index URL, then more hosts to allow" },
	{ "proxy.max_connections", I, G, check_proxy,
	    "connections the proxy holds in all" },
	{ "proxy.max_connections_per_agent", I, G, check_proxy,
	    "connections per agent" },
	{ "proxy.connect_timeout_ms", I, G, check_proxy,
	    "upstream connect timeout" },
	{ "proxy.header_timeout_ms", I, G, check_proxy,
	    "time to send a request head" },
	{ "proxy.idle_timeout_ms", I, G, check_proxy,
	    "a connection with no byte either way is closed" },
	{ "proxy.max_duration_s", I, G, check_proxy, "longest connection" },
	{ "proxy.max_request_bytes", I, G, check_proxy,
	    "bytes a connection may send" },
	{ "proxy.max_response_bytes", I, G, check_proxy,
	    "bytes a connection may receive" },
	{ "proxy.idle_exit_s", I, G, check_proxy,
	    "the proxy exits after this long unused" },
	{ "proxy.log_max_bytes", I, G, check_proxy,
	    "size of run/proxy.log before it is rotated" },
	{ "proxy.dns_server", S, G, check_proxy,
	    "resolver as IPv4:PORT (default: the host's)" },
	{ "proxy.max_lookups", I, G, check_proxy,
	    "name lookups waiting, in all" },
	{ "proxy.max_lookups_per_agent", I, G, check_proxy,
	    "name lookups waiting, per agent" },
	{ "proxy.opaque_ports", IS, G, check_proxy,
	    "ports relayed without looking, for every agent" },
	{ "proxy.allow_private_domains", SS, G, check_proxy,
	    "names allowed to resolve to non-global addresses, every agent" },
	{ "proxy.allowed_cidrs", SS, G, check_proxy,
	    "address ranges allowed for allowlisted names, every agent" },
	{ "proxy.upstream", S, G, check_proxy,
	    "parent proxy every allowed connection goes through" },
	{ "proxy.upstream_auth_file", S, G, check_proxy,
	    "file in config/ (0600) with user:password for the parent" },
};
#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

#undef A
#undef G
#undef S
#undef I
#undef N
#undef B
#undef SS
#undef IS
#undef O

const struct sbx_cfg_key *
sbx_cfg_keys(size_t *n)
{
	*n = NKEYS;
	return keys;
}

const struct sbx_cfg_key *
sbx_cfg_key_find(const char *key, unsigned scope)
{
	size_t	 i;

	for (i = 0; i < NKEYS; i++)
		if ((keys[i].scope & scope) && strcmp(keys[i].key, key) == 0)
			return &keys[i];
	return NULL;
}

const char *
sbx_cfg_type_name(enum sbx_cfg_type t)
{
	switch (t) {
	case SBX_CFG_STRING:	return "string";
	case SBX_CFG_INT:	return "integer";
	case SBX_CFG_NUMBER:	return "number";
	case SBX_CFG_BOOL:	return "boolean";
	case SBX_CFG_STRINGS:	return "strings";
	case SBX_CFG_INTS:	return "integers";
	case SBX_CFG_OBJECT:	return "object";
	}
	return "?";
}

int
sbx_cfg_is_group(const char *key, unsigned scope)
{
	size_t	 i, n = strlen(key);

	for (i = 0; i < NKEYS; i++)
		if ((keys[i].scope & scope) && strncmp(keys[i].key, key, n) ==
		    0 && keys[i].key[n] == '.')
			return 1;
	return 0;
}

int
sbx_cfg_unknown(const char *key, unsigned scope, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 shown[80];
	size_t		 i, j;

	for (i = 0; i < NKEYS; i++)
		if (keys[i].scope & scope) {
			if (b.len > 0)
				sbx_buf_puts(&b, ", ");
			sbx_buf_puts(&b, keys[i].key);
		}
	/* The key is the caller's: printable ASCII only in a message. */
	for (i = j = 0; key[i] != '\0' && j + 1 < sizeof(shown); i++)
		shown[j++] = key[i] >= 0x20 && key[i] < 0x7f ? key[i] : '?';
	shown[j] = '\0';
	sbx_error_set(e, SBX_K_INVALID_ARGS, "key", "unknown_key",
	    "unknown %s setting `%s`", scope == SBX_CFG_AGENT ? "agent" :
	    "global", shown);
	sbx_error_hint(e, "known keys: %s", b.p != NULL ? b.p : "");
	sbx_buf_release(&b);
	return -1;
}

int
sbx_cfg_validate(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	sbx_cfg_check_fn done[NKEYS];
	size_t		 i, j, nd = 0;
	unsigned	 scope = agent ? SBX_CFG_AGENT : SBX_CFG_GLOBAL;

	if (doc == NULL)
		return 0;
	if (!json_is_object(doc))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: settings must be an object",
		    origin);
	if (agent && check_legacy_image(doc, agent, origin, e) == -1)
		return -1;
	/* Each loader once, in table order. */
	for (i = 0; i < NKEYS; i++) {
		if (!(keys[i].scope & scope))
			continue;
		for (j = 0; j < nd; j++)
			if (done[j] == keys[i].check)
				break;
		if (j < nd)
			continue;
		done[nd++] = keys[i].check;
		if (keys[i].check(doc, agent, origin, e) == -1)
			return -1;
	}
	return 0;
}
