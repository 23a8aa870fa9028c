/*
 * mcpconf.c: sbx mcp's per-agent limits read from the settings
 * (mcpconf.h).  The files are read beneath the root's fd, without
 * following a symlink, size-capped; a value out of range is refused, not
 * clamped, so that a typo never silently lifts a limit.
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "mcpconf.h"
#include "netmode.h"

#define SETTINGS_MAX (1u << 20)

static int
one(const json_t *mcp, const char *key, unsigned lo, unsigned hi,
    const char *origin, unsigned *out, struct sbx_error *e)
{
	const json_t *v = json_object_get(mcp, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid",
		    "%s: mcp.%s must be an integer from %u "
		    "to %u",
		    origin, key, lo, hi);
	*out = (unsigned)json_integer_value(v);
	return 0;
}

int
sbx_mcpconf_apply(const json_t *doc, const char *origin,
    struct sbx_mcp_limits *l, struct sbx_error *e)
{
	const json_t *mcp = json_object_get(doc, "mcp");

	if (mcp == NULL)
		return 0;
	if (!json_is_object(mcp))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: mcp must be an object", origin);
	if (one(mcp, "max_runs", 1, SBX_MCP_RUNS_LIMIT, origin, &l->max_runs,
		e) == -1 ||
	    one(mcp, "max_per_minute", 0, SBX_MCP_PER_MINUTE_LIMIT, origin,
		&l->per_minute, e) == -1)
		return -1;
	return 0;
}

int
sbx_mcpconf_check(const json_t *doc, int agent, const char *origin,
    struct sbx_error *e)
{
	struct sbx_mcp_limits l;

	return sbx_mcpconf_apply(doc, origin, &l, e);
}

static int
load_one(int rootfd, const char *rel, int agent, struct sbx_mcp_limits *l,
    struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	json_t	      *doc;
	int	       rc;

	if (sbx_fs_read_file_at(rootfd, rel, SETTINGS_MAX, &b, e) == -1) {
		sbx_buf_release(&b);
		return e->kind != NULL &&
			strcmp(e->kind, SBX_K_NOT_FOUND) == 0 ?
		    0 :
		    -1;
	}
	doc = sbx_json_parse(b.p ? b.p : "", b.len, SETTINGS_MAX, e);
	sbx_buf_release(&b);
	if (doc == NULL) {
		e->reason = "config_invalid";
		sbx_error_in_file(e, rel, "correct its JSON by hand, or move "
		    "it aside (the defaults then apply) and set the values "
		    "again with sbx config");
		return -1;
	}
	rc = sbx_mcpconf_apply(doc, rel, l, e);
	if (rc == 0 && agent && json_is_string(json_object_get(doc, "network")))
		snprintf(l->network, sizeof(l->network), "%s",
		    json_string_value(json_object_get(doc, "network")));
	json_decref(doc);
	return rc;
}

int
sbx_mcpconf_load(int rootfd, const char *agent, struct sbx_mcp_limits *l,
    struct sbx_error *e)
{
	char rel[128];

	l->max_runs = SBX_MCP_RUNS_DEFAULT;
	l->per_minute = SBX_MCP_PER_MINUTE_DEFAULT;
	snprintf(l->network, sizeof(l->network), "%s",
	    sbx_netmode_name(SBX_NETMODE_NONE));
	if (load_one(rootfd, "config/sandbox.json", 0, l, e) == -1)
		return -1;
	snprintf(rel, sizeof(rel), "config/agents/%s.json", agent);
	return load_one(rootfd, rel, 1, l, e);
}
