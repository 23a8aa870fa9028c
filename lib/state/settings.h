/* settings.h: the settings users edit (config/sandbox.json, the global
 * ones, and config/agents/A.json, an agent's), loaded once per process.
 *
 * Every program reads them through here, at the paths of the layout table
 * (SBX_L_SANDBOX_JSON, SBX_L_AGENT_CONFIG), so that a file is parsed once
 * and every reader gives the same error for it: "<path>: <why>", kind
 * invalid_args, reason config_invalid.  What the values mean is each
 * loader's (runlimits, netpolicy, the proxy's settings...); the schema
 * `sbx config` edits is lib/service/cfgcheck.h.
 */
#ifndef SBX_SETTINGS_H
#define SBX_SETTINGS_H

#include <jansson.h>

#include "error.h"

/* A settings file may not be larger than this. */
#define SBX_SETTINGS_MAX	(1u << 20)

/*
 * The global settings of the root rootfd: a new reference to the document
 * (the caller json_decref()s it and never changes it: it is shared), or
 * NULL when the file is absent.  Loaded the first time and kept; a later
 * call reads the file again only when it changed (another inode, size or
 * time), so a daemon sees an edit without re-reading on every request.
 * Malformed JSON or an unreadable file: -1, e as described above.
 * Thread-safe (sbx-bridge's connections call it).
 */
int	sbx_settings_global(int rootfd, json_t **out, struct sbx_error *);
/* The same for the settings of agent (a valid name). */
int	sbx_settings_agent(int rootfd, const char *agent, json_t **out,
	    struct sbx_error *);
/* Load a settings file rel (relative to the root) afresh: a document of
 * the caller's own, to change (`sbx config`, the proxy's ask); NULL *out
 * when absent. */
int	sbx_settings_load(int rootfd, const char *rel, json_t **out,
	    struct sbx_error *);
/* The host keys of config/sandbox.json (cgroup_v2_root, run_as,
 * preflight.min_free_bytes): one set of rules, for preflight and for
 * `sbx config` alike (kind invalid_args, reason config_invalid). */
int	sbx_settings_check_host(const json_t *doc, struct sbx_error *);

#endif
