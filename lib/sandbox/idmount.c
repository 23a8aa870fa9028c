/*
 * idmount.c: a private, possibly idmapped, copy of a --workdir's mount.
 *
 * Root never runs a sandbox as root (run.c): bwrap and the command run
 * as an unprivileged uid S.  A checkout owned by root (every CI job in a
 * container) would be read-only to S, and one under /root (0700) not even
 * reachable, since bwrap resolves bind sources by path as S.  An idmapped
 * mount (Documentation/filesystems/idmappings.rst) fixes the first: through
 * it, files the filesystem stores as owned by the directory's owner O are
 * seen as owned by S, and what S creates is stored as owned by O.  The map
 * is taken from a user namespace whose uid_map reads "O S 1": a mount
 * idmapping maps the filesystem's id O up through it to kernel id S.  The
 * copy is attached in a mount namespace that only the sandbox's bwrap and
 * its descendants share, at a path S can reach, so no other process on the
 * host ever sees it and it goes away with the run.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "idmount.h"
#include "userns.h"

int
sbx_idmount_clone(int dirfd, int idmap, uid_t owner_uid, gid_t owner_gid,
    uid_t uid, gid_t gid, struct sbx_error *e)
{
	struct mount_attr	 attr;
	struct sbx_userns_map	 um = { 1, { { 0, 0, 1 } } };
	struct sbx_userns_map	 gm = { 1, { { 0, 0, 1 } } };
	int			 tree, ns, saved;

	/*
	 * Not AT_RECURSIVE: what is mounted below the directory stays out.
	 * Each submount would need its own filesystem's idmap support, and
	 * a mount someone placed inside a checkout (a proc, a device, a
	 * bind of another tree) is nothing a build should be handed
	 * read-write under the owner's identity.  The clone is of the mount
	 * at the descriptor sbx checked, not of a path looked up again.
	 */
	tree = (int)syscall(SYS_open_tree, dirfd, "",
	    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	if (tree == -1)
		return sbx_error_sys(e, errno == ENOSYS ? "idmap_unsupported" :
		    "clone_failed", "cannot copy the mount of the workdir");
	if (!idmap)
		return tree;
	/* Owned by us (root), mapping the owner O to S: the map of the
	 * mount. */
	um.line[0].in = owner_uid;
	um.line[0].out = uid;
	gm.line[0].in = owner_gid;
	gm.line[0].out = gid;
	if ((ns = sbx_userns_make(geteuid(), getegid(), &um, &gm, 0, e)) ==
	    -1) {
		saved = errno;
		close(tree);
		errno = saved;
		return sbx_error_sys(e, "clone_failed", "cannot make the user "
		    "namespace for the workdir's idmap");
	}
	memset(&attr, 0, sizeof(attr));
	attr.attr_set = MOUNT_ATTR_IDMAP;
	attr.userns_fd = (unsigned long long)ns;
	if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr,
	    sizeof(attr)) == -1) {
		saved = errno;
		close(ns);
		close(tree);
		errno = saved;
		return sbx_error_sys(e, (saved == EINVAL ||
		    saved == EOPNOTSUPP || saved == EPERM || saved == ENOSYS) ?
		    "idmap_unsupported" : "clone_failed", "cannot idmap the "
		    "mount of the workdir");
	}
	/* The mount holds its own reference to the namespace. */
	close(ns);
	return tree;
}

int
sbx_idmount_attach(int tree_fd, const char *target, dev_t dev, ino_t ino,
    int *unshared_p)
{
	struct stat	 st;
	int		 fd, rc, saved, unshared = *unshared_p;

	/* Once per child: the copies of several workdirs go into one
	 * namespace (a second unshare would leave the first copy behind,
	 * in a namespace bwrap never sees).  The flag is the caller's, on
	 * the child's own stack: the child may share its parent's memory
	 * (lib/sandbox/run.c, spawn()), where a static would stay set for
	 * the parent's next child. */
	if (!unshared && unshare(CLONE_NEWNS) == -1)
		return -1;
	/*
	 * Private before anything is mounted: the copy of the host's
	 * mounts we now hold may be shared with the host's, and a mount
	 * made on a shared one would propagate back to every namespace of
	 * its peer group.
	 */
	if (!unshared && mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ==
	    -1)
		return -1;
	*unshared_p = 1;
	/* Looked up in this namespace (a descriptor opened before unshare
	 * names the old namespace's mount), and checked to be the same
	 * directory, so that no link or rename moves where it lands. */
	fd = open(target, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || st.st_dev != dev || st.st_ino != ino) {
		close(fd);
		errno = ESTALE;
		return -1;
	}
	rc = (int)syscall(SYS_move_mount, tree_fd, "", fd, "",
	    MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}
