/* plugin-int.h: what sbx-plugin's files share (cmd/sbx-plugin.c: the
 * command line and the library; cmd/plugin-source.c: reading a recipe;
 * cmd/plugin-run.c: install, uninstall, run and the tools list, which run
 * sandboxes). */
#ifndef SBX_PLUGIN_INT_H
#define SBX_PLUGIN_INT_H

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "root.h"

#define PROG "sbx-plugin"

struct plugin_opts {
	const char     *agent, *home, *sha256, *timeout;
	int		json, quiet, verbose, agent_given;
	struct sbx_strv params; /* --param NAME=VALUE */
	char	      **ops; /* operands after the subcommand */
	int		nops;
	const char     *sub;
};

extern struct plugin_opts O;
extern struct sbx_root	  root;
extern json_t		 *warnings;
extern char		  tool[160];

/* The root, opened (not_provisioned when there is none). */
void plugin_open_root(void);
/* The root and the agent: provisioned, not revoked. */
void plugin_open_agent(void);
/* config/sandbox.json (NULL when absent). */
json_t *plugin_sandbox_cfg(void);
/* The success envelope (json) or nothing; warnings printed for people. */
void plugin_ok(json_t *result);

/* A recipe from a file or directory, or from an URL (--sha256 needed):
 * the parsed JSON, or sbx_cmd_die(). */
json_t *plugin_read_source(const char *);
json_t *plugin_read_url(const char *);

int plugin_install(void);
int plugin_uninstall(void);
int plugin_run(void);
int plugin_tools(void);

#endif
