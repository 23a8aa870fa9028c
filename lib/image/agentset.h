/*
 * agentset.h: an agent's image binding and own environment (the record
 * sbx keeps, `sbx provision --image/--own-rootfs/--no-own-rootfs`), and
 * the summary of what its runs will use (`sbx provision status`).
 * Returns json and struct sbx_error; never prints.
 */
#ifndef SBX_AGENTSET_H
#define SBX_AGENTSET_H

#include <jansson.h>

#include "error.h"
#include "image.h"
#include "imageref.h"
#include "provision.h"
#include "rootfs.h"

/* What --image, --env and --no-env did, for the envelope. */
struct sbx_agentset {
	char		 digest[SBX_DIGEST_HEX + 1];	/* "" none */
	int		 env;		/* the agent has (asked for) one */
	int		 made;		/* sbx_rootfs_create ran */
	struct sbx_rootfs	 x;
	json_t		*removed;
};
/* The warnings of an image add (entries dropped or stripped), strings. */
json_t	*sbx_agentset_image_warnings(const struct sbx_image_add *);

/*
 * Record the agent's image (digest, "" unbinds) and environment flag,
 * moving an old image/env setting out of agents/<agent>.json, under
 * run/provision.lock.  With migrate set only that move is done.
 */
int	 sbx_agentset_write(struct sbx_provision *, const char *agent,
	    const char *digest, int env, int migrate, struct sbx_error *);

/*
 * Apply --image (image, "none" unbinds, NULL keeps), --own-rootfs
 * (want_env) and --no-own-rootfs (no_env); st is filled either way and
 * released with sbx_agentset_release.
 */
int	 sbx_agentset_settle(struct sbx_provision *, const char *agent,
	    const char *image, int want_env, int no_env, struct sbx_agentset *,
	    struct sbx_error *);
void	 sbx_agentset_release(struct sbx_agentset *);
/* {path, digest, present, replaced, clone, files, bytes, clone_us} */
json_t	*sbx_agentset_env_json(const char *agent, const struct sbx_agentset *);

/* What the runs of the agent (the string) under the root (the fd) will
 * use; *ok = 0 with repairs in problems when it is not ready. */
json_t	*sbx_agentset_summary(int, const char *, int *ok, json_t *problems);

#endif
