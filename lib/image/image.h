/* image.h: adding a root filesystem template under images/ (DESIGN.md §3)
 * from a verified rootfs tarball or OCI image layout.
 * Uses libarchive: only sbx-provision links this (sbx-exec uses
 * imageref.h, sbx-preflight manifest.h). */
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
	/* internal: where the template is being unpacked, relative to the
	 * state root ("images/.tmp-XXXX/rootfs"), for messages */
	char			 where[64];
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
/* ---- building blocks, exposed for the unit tests ------------------- */

/* Normalize an archive path: "./a//b/" -> "a/b"; "" or "." -> ".".
 * Refuses (returns -1) absolute paths, `..` components, a newline or
 * other control character in a component, or one longer than NAME_MAX. */
int	sbx_image_path_norm(const char *in, char *out, size_t outsz);
#endif
