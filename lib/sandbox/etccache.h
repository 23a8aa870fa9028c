/* etccache.h: the sandbox's /etc, built once into cache/etc and reused. */
#ifndef SBX_ETCCACHE_H
#define SBX_ETCCACHE_H

#include <stddef.h>

#include "error.h"

/* A file sbx writes itself (passwd, group, hosts): name under /etc. */
struct sbx_etc_made {
	const char	*name;
	const char	*data;
	size_t		 len;
};

/*
 * What the tree holds: copies of host paths (absolute, under /etc/; a
 * missing one is left out, as bwrap's --ro-bind-try did) and the files sbx
 * makes.  The first level of each copied path is followed as a bind mount
 * would; below it, symlinks stay symlinks.
 */
struct sbx_etc_spec {
	const char *const	*copy;
	size_t			 ncopy;
	/* Directories of symlinks among those copied (at most 32): their
	 * symlinks are hard-linked, not made (see copy_farm); where that
	 * cannot be, an empty directory is left, a mount point, and bit i
	 * of *bound (if not NULL) tells the caller to bind mounts[i] over
	 * the tree. */
	const char *const	*mounts;
	size_t			 nmounts;
	const struct sbx_etc_made *made;
	size_t			 nmade;
	unsigned		*bound;
};

/*
 * An O_PATH descriptor of a directory holding the sandbox's /etc as spec
 * says, under cache_fd/etc/<key> (key: a digest of the spec).  Reused while
 * every host file it copied is unchanged (device, inode, size, mtime and
 * ctime, checked with one stat each) and the copy itself is untouched;
 * rebuilt otherwise, atomically (built aside, then exchanged), so that
 * concurrent runs see one whole tree or the other.  *built says whether
 * this call built it.  -1 with e set (reason "cache_untrusted" when the
 * cache is not owned by this uid or writable by others).
 */
int	sbx_etccache_open(int cache_fd, const struct sbx_etc_spec *, int *built,
	    struct sbx_error *);

#endif
