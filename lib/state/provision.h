/* provision.h: creating, checking and clearing the state root of
 * DESIGN.md §3 for an agent (home, SOUL.md, token, settings). */
#ifndef SBX_PROVISION_H
#define SBX_PROVISION_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "identity.h"
#include "token.h"

/* How long a provision waits for run/provision.lock (seconds). */
#define SBX_PROVISION_LOCK_WAIT	60

/* What a provision did, as relative paths ("." is the root itself). */
struct sbx_provision {
	int		 rootfd;	/* the opened state root (borrowed) */
	const char	*agent;		/* validated */
	int		 root_created;	/* set by the caller that made it */
	int		 restore;	/* set by `sbx provision`: lifts an
					 * unprovision; without it a revoked
					 * agent is refused */
	int		 as_root;	/* set by sbx_provision_agent: */
	uid_t		 run_uid;	/* who the sandbox runs as, and so */
	gid_t		 run_gid;	/* owns the home and output */
	int		 restored;	/* an unprovision was lifted */
	json_t		*created;
	json_t		*repaired;
	json_t		*present;
	json_t		*warnings;	/* strings for people */
	json_t		*problems;	/* on refusal: [{path, state}] */
};

int	 sbx_provision_init(struct sbx_provision *, int rootfd,
	    const char *agent);
void	 sbx_provision_release(struct sbx_provision *);
/* Create or repair the layout and the agent, under run/provision.lock.
 * A symlink, a wrong file type or a foreign owner anywhere in the layout
 * refuses the whole operation before anything is changed (kind rejected,
 * reason symlink_in_path, wrong_type or wrong_owner; p->problems lists
 * them). */
int	 sbx_provision_agent(struct sbx_provision *, struct sbx_error *);
/* Inspect without changing anything (rootfd may be -1: nothing exists).
 * Returns [{path, type, state, mode?, want_mode?}] where state is
 * present, missing, wrong_mode, symlink, wrong_type, wrong_owner or
 * malformed; *ready is set when every state is present. */
json_t	*sbx_provision_status(int rootfd, const char *agent, int *ready,
	    json_t *warnings, struct sbx_error *);
/* [{agent, home, token, config}] from workspace/agents/ and
 * config/agents/, sorted by name (rootfd may be -1). */
json_t	*sbx_provision_list(int rootfd, struct sbx_error *);
/* Take run/provision.lock (creating run/ 0711 if needed), waiting at most
 * SBX_PROVISION_LOCK_WAIT seconds. Returns the fd that holds it. */
int	 sbx_provision_lock(int rootfd, struct sbx_error *);
/* Delete the agent's token and host-side records (installed-packages.json,
 * plugins/installed.json, jobs/); keep its home. Appends what it removed
 * to `removed`. Takes the lock. */
int	 sbx_provision_unprovision(int rootfd, const char *agent,
	    json_t *removed, json_t *warnings, struct sbx_error *);
/* The marker unprovision leaves (agents/A/unprovisioned): until `sbx
 * provision` runs again, no run of the agent may re-provision it.  1 when
 * the agent is revoked, 0 when not, -1 on a refusal (a symlink there). */
#define SBX_REVOKED_MARKER	"unprovisioned"
int	 sbx_provision_revoked(int rootfd, const char *agent,
	    struct sbx_error *);
/* The refusal of a revoked agent: kind rejected, reason
 * agent_unprovisioned, with the command that restores it.  Returns -1. */
int	 sbx_provision_revoked_error(const char *agent, struct sbx_error *);
/* An agent that can run: not unprovisioned (the error above) and its
 * home a directory (else not_found, agent_not_provisioned); 0 or -1. */
int	 sbx_provision_require(int rootfd, const char *agent,
	    struct sbx_error *);
/* Empty envs/ and cache/. Takes the lock. */
int	 sbx_provision_reset(int rootfd, json_t *removed, struct sbx_error *);
/* The root's entries except workspace/, sorted (rootfd may be -1). */
json_t	*sbx_provision_remove_targets(int rootfd, struct sbx_error *);
/* Remove them (run/ and its lock last). Takes the lock. */
int	 sbx_provision_remove(int rootfd, json_t *removed, struct sbx_error *);
/* Remove dirfd/name and everything beneath it without following a
 * symlink (a symlink is removed, never its target). */
int	 sbx_provision_rm_tree(int dirfd, const char *name, struct sbx_error *);

#endif
