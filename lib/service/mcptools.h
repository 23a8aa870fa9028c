/*
 * mcptools.h: what sbx mcp runs for a tool call, and how the program's
 * envelope becomes an MCP tool result.  Every tool is a child program
 * (sbx-exec, sbx-file, sbx-install, sbx-secret, sbx-plugin) started from
 * an argv array: sbx mcp never links the exec engine (DESIGN.md §2).
 */
#ifndef SBX_MCPTOOLS_H
#define SBX_MCPTOOLS_H

#include <jansson.h>

#include "buf.h"
#include "error.h"

/* Where the child's envelope comes from. */
/* --json: the last line of stdout. */
#define SBX_MCP_ENV_STDOUT 1
/* sbx exec --envelope-fd 3: stdout and stderr are the command's. */
#define SBX_MCP_ENV_FD	   3

struct sbx_mcp_who {
	const char *libexec; /* directory of the sbx-* programs */
	const char *agent;
	const char *home; /* --home, or NULL */
	/* none, proxy or outbound: the most a call may ask (NULL: none) */
	const char *network_max;
	/* The client's warm session (sbx session), or NULL: shell_run
	 * calls that ask no network of their own run in it. */
	const char *session;
};

struct sbx_mcp_spawn {
	struct sbx_strv argv; /* argv[0]: the program's path */
	struct sbx_buf	input; /* the child's stdin */
	int		envelope; /* SBX_MCP_ENV_* */
	const char     *tool; /* envelope tool, if it gives none */
	int		background; /* starts a job: remember its id */
};

void sbx_mcp_spawn_release(struct sbx_mcp_spawn *);

/*
 * The child that runs built-in tool name with args (already checked
 * against its inputSchema); plugin is the plugin tool's entry of `sbx
 * tools` (NULL for a built-in).  -1 with an invalid_args error for what
 * the schema cannot say (command and argv both, a job id missing).
 */
int sbx_mcp_tool_spawn(const struct sbx_mcp_who *, const char *name,
    const json_t *plugin, const json_t *args, struct sbx_mcp_spawn *,
    struct sbx_error *);

/* What the child left, for the result. */
struct sbx_mcp_done {
	const char *name; /* the tool called */
	json_t	   *envelope; /* parsed, or NULL (borrowed) */
	const char *out; /* the command's stdout (ENV_FD) */
	/* its stderr (ENV_FD), or the program's (ENV_STDOUT) */
	const char   *err;
	int	      status; /* wait status */
	int	      structured; /* structuredContent (2025-06-18+) */
	const char   *agent;
	const json_t *args; /* the call's arguments */
};

/*
 * The MCP CallToolResult: text content a model can read (stdout, stderr
 * and exit code of a run; the content of a file read; the failure and
 * its hint), the envelope as structuredContent, isError when the
 * envelope is not ok.  Without an envelope (the program is missing or
 * died) one is made: kind unavailable or execution_error.
 */
json_t *sbx_mcp_tool_result(const struct sbx_mcp_done *);

/* A tool error result for a failure found before any child ran. */
json_t *sbx_mcp_tool_error(const char *tool, const struct sbx_error *,
    json_t *extra, int structured);

#endif
