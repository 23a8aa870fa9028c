/*
 * mcp.h: the MCP server of sbx mcp: JSON-RPC 2.0 over a pair of file
 * descriptors (one message a line), one client, one agent.  Tools run as
 * child programs (mcptools.h); the server never links the exec engine.
 */
#ifndef SBX_MCP_H
#define SBX_MCP_H

#include <stddef.h>

#include "error.h"

/* Protocol revisions, newest first: the first is offered to a client
 * that asks for one we do not speak. */
extern const char *const sbx_mcp_revisions[];

#define SBX_MCP_MSG_MAX	 (16u << 20) /* default message cap */
#define SBX_MCP_RUNS_MAX 64 /* = SBX_MCP_RUNS_LIMIT */

struct sbx_mcp_conf {
	const char *libexec; /* directory of the sbx-* programs */
	const char *agent;
	const char *home; /* --home, or NULL */
	int	    in_fd, out_fd;
	unsigned    max_runs; /* tool calls running at once */
	unsigned    per_minute; /* tool calls started in 60 s */
	size_t	    msg_max; /* largest message, bytes */
	const char *version; /* serverInfo.version */
	const char *network_max; /* the agent's network setting */
	/* --no-session: every shell_run a one-shot sandbox; otherwise the
	 * first starts a warm session (sbx session) that the others run
	 * in, stopped when the client is done. */
	int	    no_session;
};

/*
 * Serve until the client closes in_fd and every call in flight has been
 * answered, or out_fd fails, or SIGTERM, SIGINT or SIGHUP: 0 then, after
 * what still runs is killed and reaped.  -1 with the error when
 * the server cannot run at all (no pipes, no signalfd).
 */
int sbx_mcp_serve(const struct sbx_mcp_conf *, struct sbx_error *);

#endif
