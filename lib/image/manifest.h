/* manifest.h: what a template holds (manifest.json), described and
 * checked; the hashing every image module shares.  No libarchive. */
#ifndef SBX_MANIFEST_H
#define SBX_MANIFEST_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>
#include <nettle/sha2.h>

#include "error.h"
#include "imageref.h"

/* Reads go through SBX_IMAGE_IOBUF_RING buffers of this size. */
#define SBX_IMAGE_READ_BUF	(64u << 10)
#define SBX_IMAGE_IOBUF_RING	4
/* The largest manifest.json read. */
#define SBX_IMAGE_MANIFEST_MAX	(256u << 20)
/* Trees nested deeper are refused. */
#define SBX_IMAGE_WALK_DEPTH	128

/* Compare images/<digest>/rootfs with its manifest; appends
 * {path, change[, want, got]} to diffs (change: added, missing, type,
 * mode, size, sha256, target, manifest). Returns 0 (diffs may be
 * non-empty) or -1. */
int	sbx_manifest_verify(int rootfd, const char *digest, json_t *diffs,
	    struct sbx_error *);

/* The manifest of a tree: {"version":1,"entries":[{path, type, mode,
 * size?, sha256?, target?}...]} sorted by path; with make_ro, write
 * bits are removed from everything first. */
json_t	*sbx_manifest_build(int dirfd, int make_ro, struct sbx_error *);
/* Differences between two manifests (as sbx_manifest_verify). */
int	sbx_manifest_diff(const json_t *want, const json_t *got,
	    json_t *diffs);
/* The manifest of the tree under dirfd, the sha256 of a regular file taken
 * from sums ({path: [size, hex]}, may be NULL) when its size matches. */
json_t	*sbx_manifest_build_sums(int dirfd, int make_ro, json_t *sums,
	    struct sbx_error *);
/* The digest of c as 64 lowercase hex digits (c is reset for reuse). */
void	sbx_manifest_sha_hex(struct sha256_ctx *,
	    char out[SBX_DIGEST_HEX + 1]);
/* The SBX_IMAGE_IOBUF_RING read buffers of the process (NULL: no memory);
 * never used by two callers at once. */
unsigned char *sbx_manifest_iobuf(void);
/* The sha256 of what fd holds from its offset on, at most cap bytes (0:
 * no cap; EFBIG beyond); *total (may be NULL) gets the length. */
int	sbx_manifest_hash_fd(int fd, unsigned long long cap,
	    char out[SBX_DIGEST_HEX + 1], unsigned long long *total);

#endif
