/*
 * diskimg.h: an agent's own file system, the hard disk limit that needs no
 * quota support in the kernel (issue 32).
 *
 * agents/A/disk.img is an ext4 image of the asked size (mkfs.ext4, Debian's
 * e2fsprogs).  Loop-mounted once per agent (LOOP_CONFIGURE with autoclear:
 * the loop device goes with the last unmount) at run/disk-A, it holds
 * home/, output/, tmp/ and shm/; home/ and output/ are bound over the
 * state root's workspace/agents/A and output/A, so every program that
 * opens the agent's home by the layout's path reaches the image.  A run
 * holds agents/A/disk.lock shared for its whole life; mounting and
 * unmounting take it exclusive, so gc never unmounts an image in use.
 * Root only: a plain user cannot mount (the caller says so).
 */
#ifndef SBX_DISKIMG_H
#define SBX_DISKIMG_H

#include <sys/types.h>

#include "error.h"

/* Smallest and largest image (MiB): ext4 with a journal needs a few. */
#define SBX_DISKIMG_MIN_MIB 8ULL
#define SBX_DISKIMG_MAX_MIB (1ULL << 24)

struct sbx_diskimg_stat {
	int		   present; /* agents/A/disk.img exists */
	int		   mounted; /* mounted at run/disk-A */
	unsigned long long size_mib; /* the image file's size */
	unsigned long long total_kib; /* statfs: blocks (mounted) */
	unsigned long long avail_kib; /* statfs: free to users */
	unsigned long long files_free; /* statfs: free inodes */
};

/* Parse a size: MiB, or with a unit (512m, 1g, 1t).  -1: invalid_args
 * (field, reason bad_size). */
int sbx_diskimg_parse_size(const char *, const char *field,
    unsigned long long *mib, struct sbx_error *);
/* Why the kernel cannot loop-mount here, or NULL when it can (root,
 * /dev/loop-control).  The string is static. */
const char *sbx_diskimg_unusable(void);
/* What is there (no lock taken). */
int sbx_diskimg_stat(int rootfd, const char *agent, struct sbx_diskimg_stat *,
    struct sbx_error *);
/* Make agents/A/disk.img of size_mib (a new file; EEXIST is an error),
 * its root and home/ output/ tmp/ shm/ owned by uid:gid. */
int sbx_diskimg_create(int rootfd, const char *agent,
    unsigned long long size_mib, uid_t, gid_t, struct sbx_error *);
/*
 * For a run: take the agent's disk lock, mount the image when it is not
 * (image, then the two binds), and keep the lock shared.  Returns the
 * descriptor that holds it (close it when the run is over), or -1.
 * *mounted_now says whether this call mounted it.
 */
int sbx_diskimg_acquire(int rootfd, const char *agent, int *mounted_now,
    struct sbx_error *);
/* Mount only the image at run/disk-A, no binds (migration); caller
 * holds the lock exclusive. */
int sbx_diskimg_mount_image(int rootfd, const char *agent, struct sbx_error *);
/* The binds over home and output (caller holds the lock exclusive). */
int sbx_diskimg_bind(int rootfd, const char *agent, struct sbx_error *);
/* Take the lock: exclusive or shared, waiting or not (-1, errno
 * EWOULDBLOCK: taken). */
int sbx_diskimg_lock(int rootfd, const char *agent, int exclusive, int wait);
/*
 * Unmount the binds and the image when no run holds it (the lock taken
 * exclusive without waiting).  1: unmounted, 0: nothing mounted, 2: in
 * use (left alone), -1: error.
 */
int sbx_diskimg_release_idle(int rootfd, const char *agent, struct sbx_error *);
/* Same, the caller holding the lock exclusive already. */
int
sbx_diskimg_unmount_locked(int rootfd, const char *agent, struct sbx_error *);
/* Grow or shrink the image to size_mib (resize2fs; unmounted, under the
 * lock; a shrink below what is used fails and leaves it as it was).  Its
 * file system still alive in another mount namespace: disk_in_use, the
 * image untouched. */
int sbx_diskimg_resize(int rootfd, const char *agent,
    unsigned long long size_mib, struct sbx_error *);
/* Run a helper program by absolute path (found by sbx_tools_find) with
 * an empty environment; its stderr's first line goes into e's message on
 * failure.  0 or -1. */
int sbx_diskimg_tool(const char *name, char *const *args, struct sbx_error *);
/* After a run: nonzero when the image is full (blocks or inodes). */
int sbx_diskimg_full(const struct sbx_diskimg_stat *);

#endif

/*
 * Migration between the agent's home (and output) on the state root and
 * its image, the caller holding no lock (this takes it exclusive, without
 * waiting: a run in progress makes it fail, reason disk_in_use).
 * Resumable and never losing a file: agents/A/disk.migrating says a
 * migration is under way; the files are copied (cp -a), compared (diff
 * -r), and only then the originals set aside and removed.  Running it
 * again after an interruption finishes it.  size_mib 0: out of the
 * image, back to plain directories (the image is removed last).
 * *did: 1 something was done, 0 it was so already.
 */
int sbx_diskimg_migrate(int rootfd, const char *agent,
    unsigned long long size_mib, uid_t, gid_t, int *did, struct sbx_error *);
/* Nonzero when a migration was interrupted (the marker is there). */
int sbx_diskimg_migrating(int rootfd, const char *agent);
/* sbx exec gc: unmount every agent's image no run holds (an idle one, or
 * one a run killed with SIGKILL left mounted).  Counts in *unmounted and
 * *busy (held by a run: left alone).  An agent with a migration under way
 * is left to sbx provision. */
int sbx_diskimg_gc(int rootfd, int *unmounted, int *busy, struct sbx_error *);
