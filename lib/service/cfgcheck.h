/* cfgcheck.h: the schema of the settings users edit (config/sandbox.json
 * and config/agents/A.json): every key, its type, where it may be set and
 * the check it passes, which is the loader a run uses (sbx_limits_merge_json,
 * sbx_np_load, the proxy's settings...), so that what `sbx config set`
 * accepts is exactly what a run accepts.  Above every module it checks
 * (lib/README); the edits of a document are config.h's. */
#ifndef SBX_CFGCHECK_H
#define SBX_CFGCHECK_H

#include <stddef.h>

#include <jansson.h>

#include "config.h"
#include "error.h"

/* The table, in the order `sbx config keys` lists it. */
const struct sbx_cfg_key *sbx_cfg_keys(size_t *n);
/* The key of that name settable in scope, or NULL. */
const struct sbx_cfg_key *sbx_cfg_key_find(const char *key, unsigned scope);
/* "string", "integer", "number", "boolean", "strings", "integers",
 * "object". */
const char *sbx_cfg_type_name(enum sbx_cfg_type);
/* Is key the dotted prefix of keys of scope ("limits", "proxy")? */
int	sbx_cfg_is_group(const char *key, unsigned scope);
/* Unknown key: invalid_args, field "key", reason unknown_key, naming the
 * known keys of scope.  Returns -1. */
int	sbx_cfg_unknown(const char *key, unsigned scope, struct sbx_error *);

/* Every check of the scope over doc (NULL: an absent file, valid):
 * 0, or -1 with the error the run would give. */
int	sbx_cfg_validate(const json_t *doc, int agent, const char *origin,
	    struct sbx_error *);

#endif
