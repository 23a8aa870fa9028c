/*
 * plugin.h: the plugin library (plugins/ID.json beneath the state root:
 * canonical recipes, lib/service/recipe.h) and what each agent has
 * installed: agents/A/plugins.json (the record, read by the bridge too),
 * agents/A/plugins/ID.json (the installed recipe, what runs use: the
 * library's newer one is an update, never applied silently) and the files
 * in the agent's home, workspace/agents/A/.sbx/plugins/ID/.
 *
 * Nothing here runs a sandbox (cmd/sbx-plugin does, through lib/exec);
 * everything is opened beneath the root without following a symlink.
 */
#ifndef SBX_PLUGIN_H
#define SBX_PLUGIN_H

#include <sys/types.h>

#include <jansson.h>

#include "error.h"
#include "recipe.h"

/* Where the files are, relative to the agent's HOME inside the sandbox. */
#define SBX_PLUGIN_HOME_DIR  ".sbx/plugins"
/* How long a writer waits for the library's or an agent's lock. */
#define SBX_PLUGIN_LOCK_WAIT 30

/*
 * Read a recipe source: a file (JSON), or a directory holding
 * SBX_RECIPE_FILE and the recipe's files (every other regular file,
 * beneath it, joins `files`; a symbolic link or another kind of entry is
 * refused: invalid_args, field files[PATH], reason symlink or
 * not_regular).  dirfd/name is opened without following a link.  The
 * object as read (to be judged by sbx_recipe_check), or NULL.
 */
json_t *sbx_plugin_source_read(int dirfd, const char *name, struct sbx_error *);

/*
 * Store a checked recipe in the library (under plugins/library.lock,
 * atomically).  The id and the canonical hash are returned; *replaced
 * says whether another version was there.  An agent-authored recipe never
 * replaces a person's, nor another agent's (rejected, id_taken).
 */
int sbx_plugin_lib_put(int rootfd, const json_t *recipe,
    char id[SBX_RECIPE_ID_MAX + 1], char sha[SBX_RECIPE_SHA_HEX + 1],
    int *replaced, struct sbx_error *);
/* A recipe of the library (not_found when absent), and its hash. */
json_t *sbx_plugin_lib_get(int rootfd, const char *id,
    char sha[SBX_RECIPE_SHA_HEX + 1], struct sbx_error *);
/* Summaries of the library, sorted by id: [{id, name, version,
 * description, sha256, created_by, tools: [ids]}]. */
json_t *sbx_plugin_lib_list(int rootfd, struct sbx_error *);
/* Remove a recipe from the library: 1 removed, 0 absent, -1 error. */
int sbx_plugin_lib_rm(int rootfd, const char *id, struct sbx_error *);
/* The summary of one recipe. */
json_t *sbx_plugin_summary(const json_t *recipe, const char *sha);

/*
 * sbx plugin register and the bridge's POST /v1/plugins: an agent's
 * recipe, judged with the restricted defaults (SBX_RECIPE_AGENT;
 * metadata.agent names it), then stored.  *result gets {id, sha256,
 * replaced, network, created_by}.  warnings (may be NULL) get the
 * downgrades.
 */
int sbx_plugin_register(int rootfd, const char *agent, const json_t *in,
    const json_t *sandboxcfg, json_t *warnings, json_t **result,
    struct sbx_error *);

/* The agent's plugin lock (agents/A/plugins.lock, created with agents/A):
 * the fd that holds it, or -1. */
int sbx_plugin_agent_lock(int rootfd, const char *agent, struct sbx_error *);
/* agents/A/plugins.json: {"version":1,"plugins":[...]} (missing: empty);
 * write: sorted by id, atomically. */
json_t *
sbx_plugin_installed_read(int rootfd, const char *agent, struct sbx_error *);
int sbx_plugin_installed_write(int rootfd, const char *agent, const json_t *doc,
    struct sbx_error *);
/* The record's entry for id (borrowed), or NULL. */
json_t *sbx_plugin_installed_find(const json_t *doc, const char *id);
/* Add or replace id's entry {id, version, sha256, secrets, created_by,
 * installed_at}. */
int sbx_plugin_installed_set(json_t *doc, const json_t *recipe, const char *id,
    const char *sha);
/* Remove id's entry: 1 removed, 0 absent. */
int sbx_plugin_installed_del(json_t *doc, const char *id);

/*
 * Install the files of a recipe for an agent: its home's
 * .sbx/plugins/ID/ made afresh (owned by the sandbox's uid when sbx runs
 * as root; files 0644, 0755 when they start with "#!"), and the installed
 * copy agents/A/plugins/ID.json.  remove: both gone (absent is fine).
 */
int sbx_plugin_files_put(int rootfd, const char *agent, const char *id,
    const json_t *recipe, uid_t, gid_t, struct sbx_error *);
int sbx_plugin_files_remove(int rootfd, const char *agent, const char *id,
    struct sbx_error *);
/* The installed copy of id for agent (not_found when not installed). */
json_t *sbx_plugin_installed_recipe(int rootfd, const char *agent,
    const char *id, struct sbx_error *);
/* The agent's installed plugins whose library recipe differs:
 * [{id, installed, available}] (available null: gone from the library). */
json_t *sbx_plugin_updates(int rootfd, const char *agent);

#endif
