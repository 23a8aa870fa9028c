/*
 * mcpconf.h: sbx mcp's per-agent limits in the settings: `mcp.max_runs`
 * (tool calls at once) and `mcp.max_per_minute` (tool calls started in
 * 60 s), in config/sandbox.json for every agent and in
 * config/agents/A.json for one.  Checked by `sbx config` with the same
 * rules (lib/service/cfgcheck.c).
 */
#ifndef SBX_MCPCONF_H
#define SBX_MCPCONF_H

#include <jansson.h>

#include "error.h"

#define SBX_MCP_RUNS_DEFAULT	   8
#define SBX_MCP_RUNS_LIMIT	   64 /* at most, whatever is asked */
#define SBX_MCP_PER_MINUTE_DEFAULT 120
#define SBX_MCP_PER_MINUTE_LIMIT   100000

struct sbx_mcp_limits {
	unsigned max_runs;
	unsigned per_minute; /* 0: no limit */
	/* the agent's `network`, or "none": the most a call may ask */
	char network[16];
};

/* The "mcp" settings of one document: checked, and put into *l where
 * given.  -1 with a config_invalid error naming origin. */
int sbx_mcpconf_apply(const json_t *doc, const char *origin,
    struct sbx_mcp_limits *, struct sbx_error *);
/* For sbx config's key table. */
int sbx_mcpconf_check(const json_t *doc, int agent, const char *origin,
    struct sbx_error *);
/* The defaults, then config/sandbox.json, then config/agents/A.json of
 * the root open at rootfd (a file that is not there changes nothing);
 * network from the agent's file alone. */
int sbx_mcpconf_load(int rootfd, const char *agent, struct sbx_mcp_limits *,
    struct sbx_error *);

#endif
