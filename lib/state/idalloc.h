/*
 * idalloc.h: per-agent uids.  Each agent of a state root gets a uid and
 * gid of its own from a range sbx owns (settings identity.per_agent,
 * identity.base, identity.size), recorded in agents/A/identity.json and
 * in a host-wide registry, never reused while the agent exists.
 */
#ifndef SBX_IDALLOC_H
#define SBX_IDALLOC_H

#include <sys/types.h>

#include <limits.h>

#include <jansson.h>

#include "error.h"

/* Root's range: just above the subordinate range root's apt copies use
 * (SBX_SUBID_BASE, 65536 ids), below 2^31.  The first id of the range
 * is the group of workspace/shared; agents take the ones after it. */
#define SBX_IDALLOC_BASE      0x70010000UL
#define SBX_IDALLOC_SIZE      4096UL
#define SBX_IDALLOC_MAX_SIZE  (1UL << 20)
/* The host-wide registry of every state root's allocations (root), one
 * "UID ROOT AGENT" line each; SBX_IDENTITY_REGISTRY names another (a
 * plain user's is under its XDG data directory). */
#define SBX_IDALLOC_REGISTRY  "/var/lib/sbx-identities"
/*
 * A plain user with a subordinate range (/etc/subuid): inside ids
 * SUB_FIRST.. are host ids start + id - 1, the convention of sbx
 * install's apt copies; SUB_FIRST itself is the shared group.  Debian
 * reserves 65000-65533 (no package owns a file there), so an agent's id
 * never meets a package owner of a copy mapped over the same range.
 */
#define SBX_IDALLOC_SUB_FIRST 65000UL
#define SBX_IDALLOC_SUB_LAST  65533UL

struct sbx_idcfg {
	int	      per_agent; /* identity.per_agent (default off) */
	int	      subordinate; /* a plain user's range is used */
	unsigned long base, size; /* host ids (as root) */
	unsigned long sub_start; /* host id of inside id 1 */
	char	      registry[PATH_MAX];
	char	      why_shared[256]; /* per_agent on, yet shared: why */
};

/* An agent's identity (its record). */
struct sbx_agentid {
	unsigned long uid, gid; /* as the sandbox sees them */
	unsigned long host_uid, host_gid; /* on the host */
	unsigned long shared_gid; /* workspace/shared's group (host) */
	unsigned long from_uid, from_gid; /* the shared identity before */
	int	      subordinate;
	int	      migrated; /* 0: a migration is under way */
};

/*
 * The settings (config/sandbox.json's identity object; rootfd may be -1)
 * and what the caller can do: as root the range; a plain user needs a
 * subordinate range of at least SUB_LAST ids and newuidmap, else
 * per_agent is cleared and why_shared says why.  -1 on a bad setting.
 */
int sbx_idalloc_config(int rootfd, struct sbx_idcfg *, struct sbx_error *);
/* The whole range checked against /etc/passwd, /etc/group, /etc/subuid
 * and /etc/subgid (prefix: another root for tests, or NULL): -1,
 * rejected/identity_range_collision naming the owner, when any id of
 * it belongs to someone else. */
int sbx_idalloc_check_range(const struct sbx_idcfg *, const char *prefix,
    struct sbx_error *);
/* The record: 1 and it, 0 when there is none, -1 when it is damaged. */
int sbx_idalloc_read(int rootfd, const char *agent, struct sbx_agentid *,
    struct sbx_error *);
int sbx_idalloc_write(int rootfd, const char *agent, const struct sbx_agentid *,
    struct sbx_error *);
/*
 * The agent's identity, allocated when it has none (under run/identity.lock
 * and the registry's lock): the lowest id of the range that no record of
 * this root, no other root's registry line whose record still exists, no
 * /etc/passwd or /etc/group entry holds.  migrated: the new record's state
 * (1 for a new agent; 0 for one whose files still belong to from_*).
 * -1 with unavailable/identity_range_exhausted when the range is full.
 */
int sbx_idalloc_assign(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *, int migrated, unsigned long from_uid,
    unsigned long from_gid, struct sbx_agentid *, struct sbx_error *);
/* Drop the agent's record and its registry line (sbx provision remove). */
int sbx_idalloc_release(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *, struct sbx_error *);
/*
 * Who runs the agent's sandboxes and owns its files: with per_agent on,
 * its record's host ids (*per_agent set); a missing or half-migrated
 * record is refused (rejected, identity_migration_pending, with the
 * command that finishes it).  Off, or a plain user without a range:
 * sbx_identity_get's shared identity.
 */
int sbx_idalloc_agent(int rootfd, const char *agent, uid_t *, gid_t *,
    int *per_agent, struct sbx_agentid *, struct sbx_error *);
/* sbx_idalloc_agent's uid and gid alone: who sbx file, sbx install and
 * plugin installs act as for the agent (sbx_identity_become). */
int sbx_idalloc_owner(int rootfd, const char *agent, uid_t *, gid_t *,
    struct sbx_error *);
/*
 * Migrate the agent's files to its own ids, under agents/A/identity.lock:
 * its home, output and (as root) its rootfs copy's files that belonged to
 * the shared identity.  Resumable (the record says "migrating" until the
 * end) and idempotent.  limit > 0: stop after that many changes, as an
 * interruption would (tests; -1, reason migration_interrupted).
 * *changed: entries changed.  A plain user's chowns need a user namespace
 * that maps the caller (as 0) and its range (1..): enter, handed in by the
 * program (lib/sandbox/agentns.c), moves a child process into it.
 */
typedef int (*sbx_idalloc_enter_fn)(void *arg, struct sbx_error *);
int sbx_idalloc_migrate(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *, sbx_idalloc_enter_fn enter, void *arg, long limit,
    long *changed, struct sbx_agentid *, struct sbx_error *);
/* The walk itself: beneath rootfd, the agent's trees' entries owned by
 * fu (or fg) handed to tu (tg); with_env: its rootfs copy too. */
int sbx_idalloc_chown_trees(int rootfd, const char *agent, unsigned long fu,
    unsigned long fg, unsigned long tu, unsigned long tg, int with_env,
    long limit, long *changed, int *stopped, struct sbx_error *);
/* The identity object of a settings document applied to c (and checked:
 * cfgcheck's rule). */
int
sbx_idalloc_apply(const json_t *doc, struct sbx_idcfg *c, struct sbx_error *);
/* After sbx_provision_agent: an agent whose home it created (in created,
 * the provision's list; NULL: when it has none yet) gets its identity at
 * once, when per_agent is on; an existing one is left to
 * sbx_idalloc_migrate. */
int sbx_idalloc_provisioned(int rootfd, const char *rootpath, const char *agent,
    const json_t *created, sbx_idalloc_enter_fn, void *arg, struct sbx_error *);
/* "per_agent" or "shared": the envelope's identity. */
const char *sbx_idalloc_mode(int per_agent);

#endif
