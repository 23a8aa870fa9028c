/* rootfs.h: an agent's own writable copy of a template, envs/<agent>/rootfs
 * (sbx provision --own-rootfs). */
#ifndef SBX_ROOTFS_H
#define SBX_ROOTFS_H

#include <jansson.h>

#include "error.h"

/* Default of config/sandbox.json `max_envs`. */
#define SBX_ROOTFS_MAX		3

struct sbx_rootfs {
	/* in */
	const char		*agent;		/* validated */
	const char		*digest;	/* the image it is made from */
	unsigned		 max_envs;
	/* out */
	int			 present;	/* already there, from digest */
	int			 replaced;	/* one of another image went */
	const char		*clone;		/* "reflink" or "copy" */
	unsigned long long	 files;		/* regular files cloned */
	unsigned long long	 bytes;
	double			 clone_ms;
	json_t			*evicted;	/* [{agent,digest,last_used}] */
	json_t			*warnings;	/* strings */
};

/* max_envs of config/sandbox.json (a positive integer), else the
 * default. */
int	sbx_rootfs_limits(int rootfd, unsigned *max_envs, struct sbx_error *);
/*
 * Give the agent envs/<agent>/rootfs, a writable copy of the complete
 * template images/<digest>/rootfs: each regular file a reflink clone
 * (FICLONE) where the file system can, else a copy (copy_file_range);
 * modes (plus the owner's write bit, which templates lose), symlinks and
 * times kept.  Built in envs/.tmp-X and renamed into place; an env of
 * that image already there is kept (present), one of another image is
 * replaced.  Then the least recently used environments of other agents
 * are removed until at most max_envs remain; one in use by a running
 * sbx exec is skipped (a warning says so).  Takes the provision lock for
 * the renames.  e->evicted and e->warnings must be arrays.
 */
int	sbx_rootfs_create(int rootfd, struct sbx_rootfs *, struct sbx_error *);
/* Remove envs/<agent> (appending it to removed); 0 when there is none. */
int	sbx_rootfs_remove(int rootfd, const char *agent, json_t *removed,
	    struct sbx_error *);
/* [{agent, digest, created, last_used, clone}] of envs/, by agent. */
json_t	*sbx_rootfs_list(int rootfd, struct sbx_error *);
/* Clone the tree under sfd into the empty directory dfd (building block
 * of sbx_rootfs_create).  *reflink: 1 to try FICLONE, set to 0 when a file
 * had to be copied. */
int	sbx_rootfs_clone_tree(int sfd, int dfd, int *reflink,
	    unsigned long long *files, unsigned long long *bytes,
	    struct sbx_error *);

/* The stamp beside an agent's copy (envs/A/rootfs.owner) once sbx install
 * has handed the copy to the sandbox's ids (sbx_install_rootfs_own). */
#define SBX_ROOTFS_OWN_STAMP "rootfs.owner"

#endif
