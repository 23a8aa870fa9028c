/* fsutil.h: file-system helpers that never follow a planted symlink. */
#ifndef SBX_FSUTIL_H
#define SBX_FSUTIL_H

#include <sys/types.h>

#include <stddef.h>

#include "buf.h"
#include "error.h"

/* Create (as needed) and open the directory `rel` beneath dirfd, one
 * component at a time with O_NOFOLLOW: a symlink anywhere on the way is
 * refused (reason "symlink_in_path"), never followed. New directories get
 * `mode`. Returns an O_DIRECTORY|O_CLOEXEC fd or -1. */
int	sbx_fs_mkdirs_at(int dirfd, const char *rel, mode_t mode,
	    struct sbx_error *);
/* Open an existing path beneath dirfd without following symlinks in any
 * component; `..`, empty components and absolute paths are refused. */
int	sbx_fs_open_beneath(int dirfd, const char *rel, int flags,
	    struct sbx_error *);
/* Write data to dirfd/name atomically: temp file, fsync, rename, fsync. */
int	sbx_fs_write_atomic(int dirfd, const char *name, const void *, size_t,
	    mode_t, struct sbx_error *);
/* sbx_fs_write_atomic for names of any length, the mode set exactly (fchmod,
 * whatever the umask): the temp file is .sbx-PID-N.tmp in dirfd. */
int	sbx_fs_replace_at(int dirfd, const char *name, const void *, size_t,
	    mode_t, struct sbx_error *);
/* Read a regular file beneath dirfd (no symlinks) of at most cap bytes. */
struct stat;
int	sbx_fs_read_file_at(int dirfd, const char *name, size_t cap,
	    struct sbx_buf *, struct sbx_error *);
/* The same for a file already open (its fstat in st, or NULL): a regular
 * file of at most cap bytes, read to its end; name is for the message. */
int	sbx_fs_read_file_fd(int fd, const struct stat *st, const char *name,
	    size_t cap, struct sbx_buf *, struct sbx_error *);
/* Open /dev/null on whichever of descriptors 0, 1 and 2 is closed, so that
 * the next file opened can never become a standard stream.  First thing in
 * every main().  0, or -1 with errno. */
int	sbx_fs_sanitize_std(void);
/* Remove dirfd/name and everything beneath it (absent: 0).  Iterative,
 * with no depth limit and a bounded number of open descriptors; a symlink
 * is unlinked, never followed; a mount point inside is not crossed (the
 * removal stops, reason "mount_point"); our own directories without
 * owner permission (mode 000) are made u+rwx to be emptied. */
int	sbx_fs_rm_tree_at(int dirfd, const char *name, struct sbx_error *);
/* chmod our own directory DIRFD/NAME (never through a symlink) to MODE,
 * or with MODE 0 to its mode plus u+rwx; EACCES when it is not ours. */
int	sbx_fs_chmod_dir_pinned(int dirfd, const char *name, mode_t mode);
/* Close every fd >= lowfd except those listed (keep may be NULL). */
void	sbx_fs_close_from(int lowfd, const int *keep, size_t nkeep);
/* A sealed, read-only memfd holding data, positioned at 0. */
int	sbx_fs_memfd_data(const char *name, const void *, size_t);
/* Write all of buf, retrying on EINTR and short writes. */
int	sbx_fs_write_all(int fd, const void *, size_t);
/* An append-only log of lines (fd open for reading and writing): a last
 * line without its newline (a write cut short by a full disk or a kill)
 * is cut off, so the next line starts on its own.  The bytes dropped
 * (0 when the tail was whole), or -1 with errno. */
off_t sbx_fs_repair_tail(int fd);
/* Read fd to its end, appended to b (always NUL-terminated, b->p never
 * NULL on success) while b->len stays within cap: 0, or -1 with errno
 * (EFBIG past cap, ENOMEM, or read's). */
int	sbx_fs_read_fd(int fd, struct sbx_buf *b, size_t cap);
/* Sandbox-path check: absolute, no `..`, `.`, empty components or NUL;
 * at most PATH_MAX. Returns 0 or -1 with reason in e (field given). */
int	sbx_fs_path_check(const char *, const char *field, struct sbx_error *);
/* Called by sbx_fs_resolve_nofollow for each directory of the walk: its
 * descriptor (O_PATH) and its path so far.  -1 (with e set) stops it. */
typedef int (*sbx_fs_visit_fn)(int dirfd, const char *path, void *arg,
	    struct sbx_error *);
/* Open the directory named by the absolute `path` one component at a time
 * from `/`, refusing every symbolic link on the way (openat2 with
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS; an O_NOFOLLOW walk where the
 * kernel lacks openat2): reasons "symlink" (the message names the
 * component), "not_found", "not_a_directory", "traversal" (`..`),
 * "relative".  `.` and empty components are skipped.  The path walked,
 * canonical since no link was followed, goes to out; visit (may be NULL)
 * sees `/` and every directory after it, the last one included.  Returns
 * an O_PATH | O_DIRECTORY | O_CLOEXEC descriptor or -1. */
int	sbx_fs_resolve_nofollow(const char *path, char *out, size_t outsz,
	    sbx_fs_visit_fn visit, void *arg, struct sbx_error *);
/* sendmsg() of len bytes of buf with nfds (1 to 16) descriptors
 * attached (SCM_RIGHTS); flags as for sendmsg. */
ssize_t	sbx_fs_send_fds(int sock, const void *buf, size_t len,
	    const int *fds, size_t nfds, int flags);
/* The same with one descriptor. */
ssize_t	sbx_fs_send_fd(int sock, const void *buf, size_t len, int fd,
	    int flags);
/* recvmsg() of at most len bytes and at most maxfds descriptors (made
 * close-on-exec; any beyond maxfds are closed); *nfds tells how many
 * arrived.  flags as for recvmsg. */
ssize_t	sbx_fs_recv_fds(int sock, void *buf, size_t len, int *fds,
	    size_t maxfds, size_t *nfds, int flags);
/* The names in the directory dfd (but `.` and `..`), sorted (strcmp),
 * each and the vector to be freed; *np gets the count.  NULL on failure. */
char	**sbx_fs_sorted_names(int dfd, size_t *np);

#endif
