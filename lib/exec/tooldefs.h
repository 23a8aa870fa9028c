/*
 * tooldefs.h: the built-in tools an agent framework may call, one table
 * shared by `sbx mcp` (tools/list, argument checks) and `sbx tools`: per
 * tool its name, title, a description written for a model, the JSON
 * Schema of its arguments and of its result, and its annotations.
 */
#ifndef SBX_TOOLDEFS_H
#define SBX_TOOLDEFS_H

#include <stddef.h>

#include <jansson.h>

/* Annotations (MCP ToolAnnotations): hints for a client, never trusted. */
#define SBX_TOOL_READ_ONLY	0x1	/* readOnlyHint: changes nothing */
#define SBX_TOOL_DESTRUCTIVE	0x2	/* destructiveHint: may overwrite or
					 * delete */
#define SBX_TOOL_OPEN_WORLD	0x4	/* openWorldHint: may reach beyond
					 * the sandbox (network, registries) */
#define SBX_TOOL_IDEMPOTENT	0x8	/* idempotentHint: repeating it has no
					 * further effect */

struct sbx_tooldef {
	const char	*name;		/* e.g. "shell_run" */
	const char	*title;		/* for people */
	const char	*description;	/* for a model */
	const char	*input_schema;	/* JSON text: an object schema */
	const char	*result_schema;	/* JSON text: the envelope's `result` */
	unsigned	 hints;		/* SBX_TOOL_* */
};

size_t			 sbx_tooldefs_count(void);
/* The i-th tool, or NULL past the end. */
const struct sbx_tooldef *sbx_tooldef_at(size_t);
/* The tool of that name, or NULL. */
const struct sbx_tooldef *sbx_tooldef_find(const char *);
/*
 * A tool name every client takes: ^[a-zA-Z0-9_-]{1,64}$ (Claude Desktop
 * refuses a whole tool list, and the OpenAI-style APIs a call, for one
 * name outside it; the MCP specification would allow dots).
 */
int			 sbx_tooldef_name_valid(const char *);
/* The parsed inputSchema (a new reference), or NULL on memory failure. */
json_t			*sbx_tooldef_input(const struct sbx_tooldef *);
/* The outputSchema: the sbx envelope (DESIGN.md §5) whose `result` is the
 * tool's result schema (a new reference), or NULL. */
json_t			*sbx_tooldef_output(const struct sbx_tooldef *);
/* The MCP Tool object: name, title, description, inputSchema,
 * outputSchema, annotations (a new reference), or NULL. */
json_t			*sbx_tooldef_json(const struct sbx_tooldef *);

#endif
