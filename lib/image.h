/* image.h: root filesystem templates under images/ (DESIGN.md §3):
 * adding a verified rootfs tarball, listing, removing, verifying; and the
 * per-agent environments under envs/ cloned from them.
 * Uses libarchive: only sbx-provision links this (sbx-exec uses
 * lib/imageref.h). */
#ifndef SBX_IMAGE_H
#define SBX_IMAGE_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "imageref.h"

/* Defaults of config/sandbox.json `images`. */
#define SBX_IMAGE_MAX_BYTES		(2ULL << 30)	/* the archive */
#define SBX_IMAGE_MAX_UNPACKED		(8ULL << 30)	/* declared sizes */
#define SBX_IMAGE_MAX_ENTRIES		1000000ULL
/* A download of an image gives up after this long (images.
 * download_timeout, seconds). */
#define SBX_IMAGE_DOWNLOAD_TIMEOUT	3600L

struct sbx_image_add {
	/* in */
	const char		*source;	/* local path of a tarball */
	int			 use_fd;	/* read fd instead (a download) */
	int			 fd;
	int			 present_only;	/* only look for a complete
						   template (and name it): no
						   source is read */
	const char		*sha256;	/* expected, 64 lowercase hex */
	const char		*name;		/* or NULL */
	unsigned long long	 max_bytes;
	unsigned long long	 max_unpacked;
	unsigned long long	 max_entries;
	long			 download_timeout;	/* seconds */
	/* out */
	int			 present;	/* it was already there */
	unsigned long long	 entries;	/* in the manifest */
	unsigned long long	 bytes;		/* regular file bytes */
	unsigned long long	 dropped;	/* devices, fifos, sockets */
	unsigned long long	 stripped;	/* setuid/setgid/sticky bits */
	unsigned long long	 layers;	/* OCI layers applied */
	/* internal: running totals across layers; the sha256 of each
	 * file as it was unpacked, {path: [size, hex]} */
	unsigned long long	 count, declared, written;
	json_t			*sums;
};

/* Fill the limits from config/sandbox.json `images` (max_bytes,
 * max_unpacked_bytes, download_timeout), defaults otherwise. */
int	sbx_image_limits(int rootfd, struct sbx_image_add *,
	    struct sbx_error *);
/*
 * Add a template: digest syntax checked first (invalid_args, reason
 * invalid_digest), size cap (rejected, too_large), the whole file hashed
 * (rejected, integrity_check_failed on a mismatch), then unpacked under
 * images/.tmp-XXXXXX with every unsafe entry refused (rejected,
 * unsafe_entry), a manifest written and the directory renamed to
 * images/<sha256>.  Nothing is left behind on failure.
 */
int	sbx_image_add(int rootfd, struct sbx_image_add *, struct sbx_error *);
/* NAME or DIGEST to a digest; with need_complete, of a complete image
 * only (kind not_found, reason image_missing otherwise). */
int	sbx_image_resolve(int rootfd, const char *ref, int need_complete,
	    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *);
/* [{digest, names, complete}] sorted by digest. */
json_t	*sbx_image_list(int rootfd, struct sbx_error *);
/*
 * rm NAME removes that name, and the template too when no other name and
 * no agent refers to it; rm DIGEST removes the template and its names,
 * refused (rejected, image_in_use) while an agent is bound to it; force
 * removes the template whatever refers to it.  Fills res with digest,
 * removed (paths), names_removed, template ("removed" or "kept"),
 * names_left, and agents_bound (kept) or broken_agents (removed).
 */
int	sbx_image_rm(int rootfd, const char *ref, int force, json_t *res,
	    struct sbx_error *);
/* Compare images/<digest>/rootfs with its manifest; appends
 * {path, change[, want, got]} to diffs (change: added, missing, type,
 * mode, size, sha256, target, manifest). Returns 0 (diffs may be
 * non-empty) or -1. */
int	sbx_image_verify(int rootfd, const char *digest, json_t *diffs,
	    struct sbx_error *);

/* ---- building blocks, exposed for the unit tests ------------------- */

/* Normalize an archive path: "./a//b/" -> "a/b"; "" or "." -> ".".
 * Refuses (returns -1) absolute paths, `..` components, a newline or
 * other control character in a component, or one longer than NAME_MAX. */
int	sbx_image_path_norm(const char *in, char *out, size_t outsz);
/* The manifest of a tree: {"version":1,"entries":[{path, type, mode,
 * size?, sha256?, target?}...]} sorted by path; with make_ro, write
 * bits are removed from everything first. */
json_t	*sbx_image_manifest_build(int dirfd, int make_ro, struct sbx_error *);
/* Differences between two manifests (as sbx_image_verify). */
int	sbx_image_manifest_diff(const json_t *want, const json_t *got,
	    json_t *diffs);
/* The names map images/names.json ({} when absent). */
json_t	*sbx_image_names_load(int imagesfd, struct sbx_error *);

/* ---- per-agent environments (envs/<agent>) ------------------------- */

/* Default of config/sandbox.json `max_envs`. */
#define SBX_ENV_MAX		3

struct sbx_env {
	/* in */
	const char		*agent;		/* validated */
	const char		*digest;	/* the image it is made from */
	unsigned		 max_envs;
	/* out */
	int			 present;	/* already there, from digest */
	int			 replaced;	/* one from another image went */
	const char		*clone;		/* "reflink" or "copy" */
	unsigned long long	 files;		/* regular files cloned */
	unsigned long long	 bytes;
	double			 clone_ms;
	json_t			*evicted;	/* [{agent, digest, last_used}] */
	json_t			*warnings;	/* strings */
};

/* max_envs of config/sandbox.json (a positive integer), else the
 * default. */
int	sbx_env_limits(int rootfd, unsigned *max_envs, struct sbx_error *);
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
int	sbx_env_create(int rootfd, struct sbx_env *, struct sbx_error *);
/* Remove envs/<agent> (appending it to removed); 0 when there is none. */
int	sbx_env_remove(int rootfd, const char *agent, json_t *removed,
	    struct sbx_error *);
/* [{agent, digest, created, last_used, clone}] of envs/, by agent. */
json_t	*sbx_env_list(int rootfd, struct sbx_error *);
/* Clone the tree under sfd into the empty directory dfd (building block
 * of sbx_env_create).  *reflink: 1 to try FICLONE, set to 0 when a file
 * had to be copied. */
int	sbx_env_clone_tree(int sfd, int dfd, int *reflink,
	    unsigned long long *files, unsigned long long *bytes,
	    struct sbx_error *);

#endif
