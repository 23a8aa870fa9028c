/* imageref.h: what sbx-exec needs of images (DESIGN.md §3, images/):
 * which image an agent is bound to, and a cheap check that its template
 * is there.  No libarchive here: sbx-exec links this, never image.c. */
#ifndef SBX_IMAGEREF_H
#define SBX_IMAGEREF_H

#include <jansson.h>

#include "error.h"
#include "names.h"

/* The manifest written next to images/<digest>/rootfs. */
#define SBX_IMAGE_MANIFEST	"manifest.json"
/* The record next to envs/<agent>/rootfs: {agent, digest, created,
 * last_used, clone, files, bytes}; times as SBX_TIME_FMT. */
#define SBX_ENV_RECORD		"env.json"
#define SBX_ENV_RECORD_MAX	(64u << 10)

/*
 * The agent's image binding is sbx-managed state, kept in a host-side
 * record (agents/A/image.json: {"digest": HEX|null, "env": bool}), never
 * in config/agents/A.json, which users edit: rewriting that file must
 * not unbind the image.  An old config/agents/A.json with keys `image`
 * and `env` is still honoured while no record exists (sbx provision
 * moves them into the record).
 */
#define SBX_IMAGE_RECORD	"image.json"
/* The digest bound to the agent: 1 and digest filled, 0 when none, -1 on
 * a malformed record or setting. */
int	sbx_imageref_agent(int rootfd, const char *agent,
	    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *);
/* The same, and *env set when the agent has asked for its own
 * environment. */
int	sbx_imageref_agent_env(int rootfd, const char *agent,
	    char digest[SBX_DIGEST_HEX + 1], int *env, struct sbx_error *);
/* The same, with the agent's settings already loaded (cfg may be NULL;
 * origin names the file in messages): the record when there is one (one
 * small file read), else the old keys of cfg. */
int	sbx_imageref_of(int rootfd, const json_t *cfg, const char *origin,
	    const char *agent, char digest[SBX_DIGEST_HEX + 1], int *env,
	    struct sbx_error *);
/* Only the record: 1 (digest "" when it says unbound), 0 none, -1. */
int	sbx_imageref_record(int rootfd, const char *agent,
	    char digest[SBX_DIGEST_HEX + 1], int *env, struct sbx_error *);
/* Write the record atomically (agents/A/ created 0700; digest "" writes
 * an unbound record).  The caller holds run/provision.lock. */
int	sbx_imageref_record_write(int rootfd, const char *agent,
	    const char *digest, int env, struct sbx_error *);
/* Open images/<digest>/rootfs (O_PATH|O_DIRECTORY, no symlink followed)
 * after a cheap check: the manifest is present and the template holds
 * the /etc files sbx binds over.  -1 with kind rejected and reason
 * image_missing or image_damaged (with a repair hint) otherwise. */
int	sbx_imageref_open(int rootfd, const char *digest, struct sbx_error *);
/*
 * The agent's environment for sbx exec: envs/<agent>/rootfs opened
 * (O_RDONLY|O_DIRECTORY, no symlink followed on the way) and
 * share-locked with flock(2) for as long as the descriptor lives, which
 * keeps eviction away from it; last_used of env.json is brought up to
 * date (without fsync: it is advice for eviction).  -1 otherwise, with
 * kind not_found and reason env_missing (none, or one being removed) or
 * env_stale (made from another image than digest): the caller may run on
 * the template instead; any other kind (a symlink planted on the way,
 * env_damaged) must refuse the run.
 */
int	sbx_imageref_env_open(int rootfd, const char *agent,
	    const char *digest, struct sbx_error *);

struct sbx_subids;
/* The range the stamp of the agent's copy names, when the copy is the
 * one stamped, for uid:gid, with a range: 1; else 0. */
int	sbx_imageref_rootfs_subids(int rootfd, const char *agent, uid_t,
	    gid_t, struct sbx_subids *);

#endif
