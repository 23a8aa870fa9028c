/* idmount.h: a private copy of one directory's mount, idmapped or not, for
 * a --workdir that root's unprivileged sandbox could not write or reach. */
#ifndef SBX_IDMOUNT_H
#define SBX_IDMOUNT_H

#include <sys/types.h>

#include "error.h"

/*
 * A detached copy of the mount at dirfd's directory (that directory and
 * nothing mounted below it).  With idmap set, files owned on disk by
 * owner_uid/owner_gid appear through the copy as uid/gid, and what uid/gid
 * create lands on disk as owner_uid/owner_gid.  Returns the copy's
 * descriptor (close-on-exec), or -1: reason idmap_unsupported when the
 * kernel or the filesystem cannot idmap (errno EINVAL, EOPNOTSUPP, EPERM or
 * ENOSYS), clone_failed otherwise.  Needs CAP_SYS_ADMIN.
 */
int	 sbx_idmount_clone(int dirfd, int idmap, uid_t owner_uid,
	    gid_t owner_gid, uid_t uid, gid_t gid, struct sbx_error *);
/*
 * In the child that becomes bwrap, still privileged: a mount namespace of
 * its own whose mounts propagate nowhere, and the copy attached there on
 * top of the directory at `target`, which must still be the directory
 * dev/ino (no symbolic link followed).  Nothing of it is visible outside
 * the new namespace, which ends with its last process.  *unshared (0
 * before the child's first call) says the namespace was made.  0, or -1
 * with errno.
 */
int	 sbx_idmount_attach(int tree_fd, const char *target, dev_t, ino_t,
	    int *unshared);

#endif
