/* imagestore.h: the templates under images/ by name and digest. */
#ifndef SBX_IMAGESTORE_H
#define SBX_IMAGESTORE_H

#include <jansson.h>

#include "error.h"
#include "imageref.h"

/* NAME or DIGEST to a digest; with need_complete, of a complete image
 * only (kind not_found, reason image_missing otherwise). */
int	sbx_imagestore_resolve(int rootfd, const char *ref, int need_complete,
	    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *);
/* [{digest, names, complete}] sorted by digest. */
json_t	*sbx_imagestore_list(int rootfd, struct sbx_error *);
/*
 * rm NAME removes that name, and the template too when no other name and
 * no agent refers to it; rm DIGEST removes the template and its names,
 * refused (rejected, image_in_use) while an agent is bound to it; force
 * removes the template whatever refers to it.  Fills res with digest,
 * removed (paths), names_removed, template ("removed" or "kept"),
 * names_left, and agents_bound (kept) or broken_agents (removed).
 */
int	sbx_imagestore_rm(int rootfd, const char *ref, int force, json_t *res,
	    struct sbx_error *);
/* The names map images/names.json ({} when absent). */
json_t	*sbx_imagestore_names_load(int imagesfd, struct sbx_error *);

/* Write the names map atomically. */
int	sbx_imagestore_names_save(int imagesfd, json_t *names,
	    struct sbx_error *);
/* images/, opened beneath the root without following a symlink; create:
 * made first when missing. */
int	sbx_imagestore_open(int rootfd, int create, struct sbx_error *);
/* Is images/<digest> a complete template (its manifest written)? */
int	sbx_imagestore_complete(int imagesfd, const char *digest);

#endif
