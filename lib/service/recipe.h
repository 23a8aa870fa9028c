/*
 * recipe.h: plugin recipes (sbx-recipe(5)): a JSON document that gives an
 * agent new tools, with the files, dependencies, secrets and network
 * permissions they need.  This module judges one recipe without touching
 * the system, builds its canonical form (what the library stores and
 * hashes), and turns a tool's parameters into a run's environment.
 *
 * Every refusal is invalid_args with the field at fault ("name",
 * "files[bin/x.sh]", "tools[0].parameters.max.default"...: storage of
 * this module, valid until the next call) and a stable reason.
 */
#ifndef SBX_RECIPE_H
#define SBX_RECIPE_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"

/* Size caps (bytes, counts). */
#define SBX_RECIPE_MAX		(4u << 20) /* the recipe's JSON text */
#define SBX_RECIPE_FILE_MAX	(1u << 20) /* one file */
#define SBX_RECIPE_FILES_MAX	(2u << 20) /* every file together */
#define SBX_RECIPE_NFILES_MAX	256
#define SBX_RECIPE_PATH_MAX	512 /* a file's path */
#define SBX_RECIPE_DEPTH_MAX	16 /* its components */
#define SBX_RECIPE_NTOOLS_MAX	64
#define SBX_RECIPE_NPARAMS_MAX	64
#define SBX_RECIPE_CMD_MAX	8192 /* setup, run, daemon */
#define SBX_RECIPE_TEXT_MAX	4096 /* description and such */
#define SBX_RECIPE_NDOMAINS_MAX 32
#define SBX_RECIPE_NSECRETS_MAX 32
#define SBX_RECIPE_ID_MAX	32 /* the agent name grammar */
#define SBX_RECIPE_SHA_HEX	64

/* The recipe file in a directory given to `sbx plugin add DIR`. */
#define SBX_RECIPE_FILE "recipe.json"

/* sbx_recipe_check() flags. */
#define SBX_RECIPE_AGENT 0x1 /* agent-authored: restricted defaults */

/*
 * Judge a recipe object and return its canonical form (a new object), or
 * NULL with e.  The canonical form has every key of the format with its
 * default (dependencies {apt,npm,pip}, files {}, secrets [], permissions
 * {network, inference}, metadata {}), unknown top-level keys moved into
 * metadata (with a warning appended to warnings, which may be NULL).
 * sandboxcfg (config/sandbox.json, may be NULL) names the registries a
 * declared dependency covers (install.registries).
 *
 * Agent-authored (SBX_RECIPE_AGENT): a network that is not a list of valid
 * domain patterns becomes "none", inference becomes false, and
 * metadata.created_by is "agent" (each change with a warning); otherwise
 * such a network is refused and created_by is "person".
 */
json_t *sbx_recipe_check(const json_t *in, unsigned flags,
    const json_t *sandboxcfg, json_t *warnings, struct sbx_error *);
/* The id of a name: lowercased, spaces as '-', then the agent name
 * grammar (field "name", reason invalid_name).  0 or -1. */
int sbx_recipe_id(const char *name, char id[SBX_RECIPE_ID_MAX + 1],
    struct sbx_error *);
/* A file path of `files`: relative, components neither empty, `.`, `..`
 * nor starting with '-', no backslash, no control character, valid
 * UTF-8, at most SBX_RECIPE_PATH_MAX bytes and SBX_RECIPE_DEPTH_MAX
 * components.  0, or -1 (field "files[PATH]"). */
int sbx_recipe_path_valid(const char *path, size_t len, struct sbx_error *);
/* The canonical text (compact, keys sorted, one newline) of a checked
 * recipe, and its SHA-256 in hex.  Caller frees; NULL on ENOMEM. */
char *sbx_recipe_canonical(const json_t *recipe, size_t *len,
    char sha[SBX_RECIPE_SHA_HEX + 1]);
/*
 * The name a client sees for tool TOOL of plugin ID (sbx tools, sbx mcp).
 * The id "plugin.ID.TOOL" has dots, which the MCP specification allows
 * but the clients people use do not: Claude Desktop refuses a server's
 * whole tool list, and the OpenAI-style function APIs a call, when a name
 * is not ^[a-zA-Z0-9_-]{1,64}$.  So the name is the id with its dots made
 * dashes, "plugin-ID-TOOL": a tool id has no dash, so the last dash ends
 * the plugin id and no two ids share a name, and no built-in tool has a
 * dash.  A name longer than SBX_TOOL_NAME_MAX (a long plugin id and a long
 * tool id) is cut to its first 55 characters, a dash and the first 8
 * hexadecimal digits of the SHA-256 of the id, in capitals: what follows
 * its last dash then is no tool id (those are lowercase and start with a
 * letter), so a cut name never equals a whole one.  The caller still
 * refuses a second tool of the same name (two cut names could share
 * both their head and their 32 bits).  ID and TOOL are checked ones.
 */
#define SBX_TOOL_NAME_MAX	64
void sbx_recipe_tool_name(const char *id, const char *tool,
    char name[SBX_TOOL_NAME_MAX + 1]);
/* Hex SHA-256 of bytes. */
void sbx_recipe_sha256(const void *, size_t, char sha[SBX_RECIPE_SHA_HEX + 1]);
/* The tool `id` of a checked recipe (borrowed), or NULL. */
const json_t *sbx_recipe_tool(const json_t *recipe, const char *id);
/* A tool's input as a JSON Schema (draft 2020-12) object: its
 * parameters, with additionalProperties false.  New reference. */
json_t *sbx_recipe_input_schema(const json_t *tool);

/*
 * The values of a tool's parameters: args (an object name -> value, may
 * be NULL) checked against the tool's schema (unknown name, wrong type,
 * not in enum: invalid_args, field "parameters.NAME"), defaults filled,
 * a missing required one refused (reason missing_parameter).  Returns a
 * new object, or NULL.
 */
json_t *
sbx_recipe_params(const json_t *tool, const json_t *args, struct sbx_error *);
/* NAME=TEXT from the command line: the text read as the parameter's
 * type says (a string as it is, integer, number, boolean true/false,
 * arrays and objects as JSON) and set in args.  0 or -1. */
int sbx_recipe_param_arg(const json_t *tool, const char *kv, json_t *args,
    struct sbx_error *);
/* PARAM_<NAME>=value for each parameter (name upper-cased): strings as
 * they are, numbers and booleans as text, others as compact JSON.  A
 * value with a NUL byte is refused (invalid_args). */
int sbx_recipe_params_env(const json_t *values, struct sbx_strv *env,
    struct sbx_error *);

#endif
