/*
 * config.h: the edits `sbx config` (and the proxy's ask) make to the
 * settings users edit (config/sandbox.json and config/agents/A.json): a
 * value at a dotted path, set, added, removed, and the file loaded and
 * stored.  The schema they are judged by (every key with the loader a
 * run uses) sits above the loaders: lib/service/cfgcheck.h.
 */
#ifndef SBX_CONFIG_H
#define SBX_CONFIG_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

enum sbx_cfg_type {
	SBX_CFG_STRING,		/* a string */
	SBX_CFG_INT,		/* an integer */
	SBX_CFG_NUMBER,		/* an integer or a decimal number */
	SBX_CFG_BOOL,		/* true or false */
	SBX_CFG_STRINGS,	/* an array of strings (add, rm) */
	SBX_CFG_INTS,		/* an array of integers (add, rm) */
	SBX_CFG_OBJECT,		/* an object: --json-value only */
};

/* Where a key may be set. */
#define SBX_CFG_AGENT	0x1	/* config/agents/A.json */
#define SBX_CFG_GLOBAL	0x2	/* config/sandbox.json */

/* A whole-file check: the loader a run uses, on the document doc of
 * origin (agent: config/agents/A.json, else config/sandbox.json). */
typedef int (*sbx_cfg_check_fn)(const json_t *doc, int agent,
    const char *origin, struct sbx_error *);

struct sbx_cfg_key {
	const char		*key;	/* dotted path: "limits.memory_mib" */
	enum sbx_cfg_type	 type;
	unsigned		 scope;	/* SBX_CFG_AGENT | SBX_CFG_GLOBAL */
	sbx_cfg_check_fn	 check;
	const char		*doc;	/* one line, for `sbx config keys` */
};

/* The value at the dotted path (borrowed), or NULL. */
json_t	*sbx_cfg_get(const json_t *doc, const char *key);
/* Parse a command-line VALUE for k: with json_value, as JSON; otherwise
 * by the key's type (an integer, a number, true/false), and anything
 * that does not read as the type is kept as a string, so that the
 * loader refuses it with the run's own message.  For array keys, one
 * element.  Returns a new reference, or NULL with e set. */
json_t	*sbx_cfg_parse_value(const struct sbx_cfg_key *k, const char *s,
	    int json_value, struct sbx_error *);
/* Set (value stolen), or remove (value NULL) the dotted path; removing
 * leaves no empty object behind.  1 changed, 0 unchanged, -1. */
int	sbx_cfg_put(json_t *doc, const char *key, json_t *value,
	    struct sbx_error *);
/* Add one element to the array at key (created when absent) unless it is
 * there already; remove every element equal to it.  1 changed, 0 not
 * (already there / not there), -1 (not an array). */
int	sbx_cfg_add(json_t *doc, const char *key, json_t *elem,
	    struct sbx_error *);
int	sbx_cfg_rm(json_t *doc, const char *key, const json_t *elem,
	    struct sbx_error *);

/* "config/sandbox.json" or "config/agents/A.json" into rel. */
int	sbx_cfg_path(const char *agent, char *rel, size_t relsz,
	    struct sbx_error *);
/* Load the file (agent NULL: config/sandbox.json); an absent file is an
 * empty object.  Malformed JSON: invalid_args, reason config_invalid. */
int	sbx_cfg_load(int rootfd, const char *agent, json_t **doc,
	    struct sbx_error *);
/* Write it atomically, 0600, under the directory fd (config/ or
 * config/agents/, created 0700), never following a symlink. */
int	sbx_cfg_store(int rootfd, const char *agent, const json_t *doc,
	    struct sbx_error *);

struct sbx_buf;
/* A value for people and scripts, appended to out: a string as itself,
 * an array one element a line, anything else as compact JSON; each line
 * escaped (sbx_utf8_escape_line) and ended with a newline. */
int sbx_cfg_value_text(const json_t *v, struct sbx_buf *out);

#endif
