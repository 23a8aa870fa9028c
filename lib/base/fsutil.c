/* fsutil.c: openat-based helpers. */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

/* Split rel into components; refuse anything that could climb or alias. */
static int
next_component(const char **p, char *out, size_t outsz, const char *rel,
    struct sbx_error *e)
{
	const char	*s = *p, *end;
	size_t		 n;

	while (*s == '/')
		s++;
	if (*s == '\0')
		return 0;
	end = strchrnul(s, '/');
	n = (size_t)(end - s);
	if (n >= outsz || n > NAME_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "component_too_long", "path component too long in %s",
		    rel);
	if (n == 2 && s[0] == '.' && s[1] == '.')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "traversal", "path %s contains `..`", rel);
	if (n == 1 && s[0] == '.') {
		/* `.` names the same directory: skip it. */
		*p = end;
		return next_component(p, out, outsz, rel, e);
	}
	memcpy(out, s, n);
	out[n] = '\0';
	*p = end;
	return 1;
}

/*
 * The fast way of sbx_fs_open_beneath: one openat2 with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, the kernel's own promise of what the walk checks.
 * Only for a plain path (components that are names: no `.`, `..` or
 * empty one, which the walk skips or refuses) and flags that create
 * nothing; -1 for everything else and every failure (ENOSYS before Linux
 * 5.6 and under sbx's own filter), left to the walk.
 */
static int
open_beneath_fast(int dirfd, const char *rel, int flags)
{
	static int	 no_openat2;
	struct open_how	 how;
	const char	*s = rel, *end;
	size_t		 n;
	int		 fd;

	/* O_TMPFILE holds O_DIRECTORY's bit: all of it, not any. */
	if (no_openat2 || (flags & O_CREAT) != 0 ||
	    (flags & O_TMPFILE) == O_TMPFILE)
		return -2;
	for (;;) {
		end = strchrnul(s, '/');
		n = (size_t)(end - s);
		if (n == 0 || n > NAME_MAX || (n == 1 && s[0] == '.') ||
		    (n == 2 && s[0] == '.' && s[1] == '.'))
			return -2;
		if (*end == '\0')
			break;
		s = end + 1;
	}
	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
	    RESOLVE_NO_MAGICLINKS;
	fd = (int)syscall(SYS_openat2, dirfd, rel, &how, sizeof(how));
	if (fd == -1 && (errno == ENOSYS || errno == EPERM || errno == E2BIG)) {
		no_openat2 = 1;
		return -2;
	}
	return fd;
}

int
sbx_fs_mkdirs_at(int dirfd, const char *rel, mode_t mode, struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1];
	const char	*p = rel;
	int		 fd, nfd, r;

	/* An empty path would hand back dirfd itself: a name that failed to
	 * build (sbx_layout_path leaves it empty) must open nothing. */
	if (*rel == '/' || *rel == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "absolute",
		    "path `%s` must be relative and non-empty", rel);
	/* All there already (the usual case): one openat2, as in
	 * sbx_fs_open_beneath. */
	if ((fd = open_beneath_fast(dirfd, rel, O_RDONLY | O_DIRECTORY)) >= 0)
		return fd;
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return sbx_error_sys(e, "dup", "dup");
	while ((r = next_component(&p, comp, sizeof(comp), rel, e)) == 1) {
		if (mkdirat(fd, comp, mode) == -1 && errno != EEXIST) {
			sbx_error_sys(e, "mkdir_failed", "cannot create %s "
			    "(in %s)", comp, rel);
			close(fd);
			return -1;
		}
		/* O_NOFOLLOW: a symlink planted in the state root is an
		 * attack or a mistake; either way it must not redirect us. */
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (nfd == -1) {
			int saved = errno;
			close(fd);
			errno = saved;
			if (saved == ELOOP || saved == ENOTDIR)
				return sbx_error_set(e, SBX_K_REJECTED, "path",
				    "symlink_in_path", "%s in %s is a symlink "
				    "or not a directory; refusing to follow it",
				    comp, rel);
			return sbx_error_sys(e, "open_failed", "cannot open "
			    "%s (in %s)", comp, rel);
		}
		close(fd);
		fd = nfd;
	}
	if (r == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

int
sbx_fs_open_beneath(int dirfd, const char *rel, int flags, struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1];
	const char	*p = rel, *q;
	int		 fd, nfd, r, last;

	if (*rel == '/' || *rel == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "absolute",
		    "path `%s` must be relative and non-empty", rel);
	/* One openat2 where the kernel walks it the same way: beneath
	 * dirfd, no link followed.  A name that is not there is the walk's
	 * answer too (no link is followed either way): said here, without
	 * the walk (a missing settings file is the usual case).  Anything
	 * else, another failure included, takes the walk below, which says
	 * why. */
	if ((fd = open_beneath_fast(dirfd, rel, flags)) >= 0)
		return fd;
	if (fd == -1 && errno == ENOENT)
		return sbx_error_set(e, SBX_K_NOT_FOUND, "path", "not_found",
		    "`%s` does not exist", rel);
	if ((fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return sbx_error_sys(e, "dup", "dup");
	for (;;) {
		r = next_component(&p, comp, sizeof(comp), rel, e);
		if (r != 1)
			break;
		for (q = p; *q == '/'; q++)
			;
		last = (*q == '\0');
		nfd = openat(fd, comp, (last ? flags : O_RDONLY | O_DIRECTORY) |
		    O_NOFOLLOW | O_CLOEXEC);
		if (nfd == -1) {
			int saved = errno;
			struct stat lst;
			if (saved == ELOOP || (saved == ENOTDIR && (!last ||
			    (fstatat(fd, comp, &lst, AT_SYMLINK_NOFOLLOW) == 0
			    && S_ISLNK(lst.st_mode))))) {
				close(fd);
				return sbx_error_set(e, SBX_K_REJECTED, "path",
				    "symlink_in_path", "`%s` in `%s` is a "
				    "symlink or not a directory", comp, rel);
			}
			close(fd);
			errno = saved;
			if (saved == ENOENT)
				return sbx_error_set(e, SBX_K_NOT_FOUND, "path",
				    "not_found", "`%s` does not exist", rel);
			return sbx_error_sys(e, "open_failed", "cannot open "
			    "`%s`", rel);
		}
		close(fd);
		fd = nfd;
		if (last)
			return fd;
	}
	if (r == 0 && fd != dirfd && p != rel)
		return fd;	/* ended on `.` components */
	close(fd);
	if (r == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "empty",
		    "path `%s` has no components", rel);
	return -1;
}

int
sbx_fs_write_all(int fd, const void *data, size_t n)
{
	const char	*p = data;
	ssize_t		 w;

	while (n > 0) {
		w = write(fd, p, n);
		if (w == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

off_t
sbx_fs_repair_tail(int fd)
{
	char	    buf[4096], *nl;
	struct stat st;
	off_t	    end, off;
	ssize_t	    n;
	size_t	    want;

	if (fstat(fd, &st) == -1)
		return -1;
	if (!S_ISREG(st.st_mode) || st.st_size == 0)
		return 0;
	end = st.st_size;
	if (pread(fd, buf, 1, end - 1) != 1)
		return -1;
	if (buf[0] == '\n')
		return 0;
	/* Back to the last newline, a block at a time; none at all: the
	 * whole file is one unfinished line. */
	for (off = end; off > 0; off -= (off_t)want) {
		want = off > (off_t)sizeof(buf) ? sizeof(buf) : (size_t)off;
		if ((n = pread(fd, buf, want, off - (off_t)want)) !=
		    (ssize_t)want)
			return n == -1 ? -1 : (errno = EIO, -1);
		if ((nl = memrchr(buf, '\n', want)) != NULL) {
			off = off - (off_t)want + (nl - buf) + 1;
			break;
		}
	}
	if (off < 0)
		off = 0;
	if (ftruncate(fd, off) == -1)
		return -1;
	return end - off;
}

/*
 * Temp file, write, fsync, rename, fsync.  exact: the temp name does not
 * grow with the name (".sbx-PID-I.tmp": an agent's file names may be
 * NAME_MAX long) and the mode is set with fchmod, not left to the umask.
 */
static int
write_atomic(int dirfd, const char *name, const void *data, size_t n,
    mode_t mode, int exact, struct sbx_error *e)
{
	char	 tmp[NAME_MAX + 1];
	int	 fd, i;

	if (strchr(name, '/') || (!exact && strlen(name) + 16 > NAME_MAX))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "invalid_name", "bad file name %s", name);
	for (i = 0; i < 100; i++) {
		if (exact)
			snprintf(tmp, sizeof(tmp), ".sbx-%d-%d.tmp",
			    (int)getpid(), i);
		else
			snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name,
			    (int)getpid(), i);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd != -1 || errno != EEXIST)
			break;
	}
	if (fd == -1)
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    tmp);
	if ((exact && fchmod(fd, mode) == -1) ||
	    sbx_fs_write_all(fd, data, n) == -1 || fsync(fd) == -1) {
		sbx_error_sys(e, "write_failed", "cannot write %s", name);
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	close(fd);
	if (renameat(dirfd, tmp, dirfd, name) == -1) {
		sbx_error_sys(e, "write_failed", "cannot rename into %s",
		    name);
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	(void)fsync(dirfd);
	return 0;
}

int
sbx_fs_write_atomic(int dirfd, const char *name, const void *data, size_t n,
    mode_t mode, struct sbx_error *e)
{
	return write_atomic(dirfd, name, data, n, mode, 0, e);
}

int
sbx_fs_replace_at(int dirfd, const char *name, const void *data, size_t n,
    mode_t mode, struct sbx_error *e)
{
	return write_atomic(dirfd, name, data, n, mode, 1, e);
}

int
sbx_fs_read_file_at(int dirfd, const char *name, size_t cap, struct sbx_buf *b,
    struct sbx_error *e)
{
	int	 fd, rc;

	/* O_NONBLOCK: a FIFO planted under the name would block the open
	 * forever; it is refused below as not a regular file instead. */
	if ((fd = sbx_fs_open_beneath(dirfd, name, O_RDONLY | O_NONBLOCK, e)) ==
	    -1)
		return -1;
	rc = sbx_fs_read_file_fd(fd, NULL, name, cap, b, e);
	close(fd);
	return rc;
}

int
sbx_fs_read_file_fd(int fd, const struct stat *stp, const char *name,
    size_t cap, struct sbx_buf *b, struct sbx_error *e)
{
	struct stat	 st;

	if (stp == NULL) {
		if (fstat(fd, &st) == -1)
			st.st_mode = 0;
		stp = &st;
	}
	if (!S_ISREG(stp->st_mode))
		return sbx_error_set(e, SBX_K_REJECTED, "path", "wrong_type",
		    "%s is not a regular file", name);
	if ((size_t)stp->st_size > cap)
		return sbx_error_set(e, SBX_K_REJECTED, "path", "too_large",
		    "%s is larger than %zu bytes", name, cap);
	if (sbx_fs_read_fd(fd, b, cap) == -1) {
		if (errno == EFBIG)
			return sbx_error_set(e, SBX_K_REJECTED, "path",
			    "too_large", "%s grew past %zu bytes", name, cap);
		if (errno == ENOMEM)
			return sbx_error_sys(e, "nomem", "read %s", name);
		return sbx_error_sys(e, "read_failed", "cannot read %s", name);
	}
	return 0;
}

int
sbx_fs_read_fd(int fd, struct sbx_buf *b, size_t cap)
{
	char	 chunk[16384];
	ssize_t	 r;

	for (;;) {
		r = read(fd, chunk, sizeof(chunk));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			break;
		if (b->len + (size_t)r > cap) {
			errno = EFBIG;
			return -1;
		}
		if (sbx_buf_append(b, chunk, (size_t)r) == -1) {
			errno = ENOMEM;
			return -1;
		}
	}
	return sbx_buf_append(b, "", 0) == -1 ? (errno = ENOMEM, -1) : 0;
}

static int
is_kept(int fd, const int *keep, size_t nkeep)
{
	size_t	 i;

	for (i = 0; i < nkeep; i++)
		if (keep[i] == fd)
			return 1;
	return 0;
}

/*
 * A program started with fd 0, 1 or 2 closed hands that number to the next
 * file it opens: sbx-exec's descriptor of sbx-init became the sandbox's
 * stdin (the command could read sbx's binary, and find its host path);
 * an error message could land in a state file.  /dev/null fills the gap,
 * without close-on-exec: the standard streams must survive exec.
 */
int
sbx_fs_sanitize_std(void)
{
	int	 fd, nfd;

	for (fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		/* The lowest free number: fd itself, as those below are open. */
		if ((nfd = open("/dev/null", O_RDWR)) == -1)
			return -1;
		if (nfd != fd) {
			close(nfd);
			errno = EBADF;
			return -1;
		}
	}
	return 0;
}

void
sbx_fs_close_from(int lowfd, const int *keep, size_t nkeep)
{
	DIR		*d;
	struct dirent	*de;
	int		 fd, dfd;

	if (nkeep == 0) {
#ifdef SYS_close_range
		if (syscall(SYS_close_range, (unsigned)lowfd, ~0U, 0) == 0)
			return;
#endif
	}
	if ((d = opendir("/proc/self/fd")) == NULL) {
		for (fd = lowfd; fd < 65536; fd++)
			if (!is_kept(fd, keep, nkeep))
				close(fd);
		return;
	}
	dfd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		fd = atoi(de->d_name);
		if (fd >= lowfd && fd != dfd && !is_kept(fd, keep, nkeep))
			close(fd);
	}
	closedir(d);
}

int
sbx_fs_memfd_data(const char *name, const void *data, size_t n)
{
	int	 fd;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1)
		return -1;
	if (sbx_fs_write_all(fd, data, n) == -1 ||
	    lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	/* Sealed: nothing can change what the sandbox will read. */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL);
	return fd;
}

int
sbx_fs_path_check(const char *path, const char *field, struct sbx_error *e)
{
	const char	*s, *end;
	size_t		 n;

	if (*path == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field, "empty",
		    "argument `%s` is empty", field);
	if (strlen(path) >= PATH_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field, "too_long",
		    "argument `%s` is longer than %d bytes", field, PATH_MAX - 1);
	for (s = path; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
			    "control_character", "argument `%s` contains a "
			    "control character", field);
	for (s = path; *s; s = end) {
		while (*s == '/')
			s++;
		end = strchrnul(s, '/');
		n = (size_t)(end - s);
		if (n == 2 && s[0] == '.' && s[1] == '.')
			return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
			    "traversal", "argument `%s` rejected: path "
			    "contains `..`", field);
		if (n > NAME_MAX)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
			    "too_long", "argument `%s` has a component longer "
			    "than %d bytes", field, NAME_MAX);
	}
	return 0;
}

/*
 * One step of sbx_fs_resolve_nofollow: the directory `comp` beneath fd.
 * openat2() with RESOLVE_NO_SYMLINKS is the kernel's own promise that no
 * link is followed; where it is missing (ENOSYS: before Linux 5.6, or a
 * seccomp filter that hides it) O_NOFOLLOW gives the same answer for a
 * single component, which is all we ever open.
 */
static int
open_dir_nofollow(int fd, const char *comp)
{
	static int		 no_openat2;
	struct open_how		 how;
	int			 nfd;

	if (!no_openat2) {
		memset(&how, 0, sizeof(how));
		how.flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
		how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
		nfd = (int)syscall(SYS_openat2, fd, comp, &how, sizeof(how));
		if (nfd >= 0 || errno != ENOSYS)
			return nfd;
		no_openat2 = 1;
	}
	return openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int
sbx_fs_resolve_nofollow(const char *path, char *out, size_t outsz,
    sbx_fs_visit_fn visit, void *arg, struct sbx_error *e)
{
	struct stat	 st;
	const char	*s, *end;
	size_t		 n, len;
	int		 fd, nfd, saved;

	if (*path != '/')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "relative",
		    "path %s must be absolute", path);
	if (outsz < 2)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "too_long",
		    "path %s is too long", path);
	if ((fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return sbx_error_sys(e, "unusable", "cannot open /");
	strcpy(out, "/");
	len = 1;
	if (visit != NULL && visit(fd, out, arg, e) == -1)
		goto fail;
	for (s = path; *s != '\0'; s = end) {
		while (*s == '/')
			s++;
		if (*s == '\0')
			break;
		end = strchrnul(s, '/');
		n = (size_t)(end - s);
		if (n == 1 && s[0] == '.')
			continue;
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "traversal", "path %s contains `..`", path);
			goto fail;
		}
		if (n > NAME_MAX || len + (len > 1) + n >= outsz) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "too_long", "path %s is too long", path);
			goto fail;
		}
		if (len > 1)
			out[len++] = '/';
		memcpy(out + len, s, n);
		len += n;
		out[len] = '\0';
		nfd = open_dir_nofollow(fd, out + len - n);
		if (nfd == -1) {
			saved = errno;
			/* ELOOP (openat2) or ENOTDIR (O_PATH|O_NOFOLLOW on a
			 * link): look at what is there to say which. */
			if (fstatat(fd, out + len - n, &st,
			    AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
				sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
				    "symlink", "`%.*s` in %s is a symbolic "
				    "link", (int)n, s, path);
			else if (saved == ENOENT)
				sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
				    "not_found", "%s does not exist (no `%.*s` "
				    "in %.*s)", path, (int)n, s,
				    len - n > 1 ? (int)(len - n - 1) : 1, out);
			else if (saved == ENOTDIR)
				sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
				    "not_a_directory", "%s is not a directory",
				    out);
			else {
				errno = saved;
				sbx_error_sys(e, "unusable", "cannot open %s",
				    out);
			}
			goto fail;
		}
		close(fd);
		fd = nfd;
		if (visit != NULL && visit(fd, out, arg, e) == -1)
			goto fail;
	}
	return fd;
fail:
	close(fd);
	return -1;
}

ssize_t
sbx_fs_send_fds(int sock, const void *buf, size_t len, const int *fds,
    size_t nfds, int flags)
{
	char		 cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;

	if (nfds == 0 || nfds > 16) {
		errno = EINVAL;
		return -1;
	}
	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
	return sendmsg(sock, &m, flags | MSG_NOSIGNAL);
}

ssize_t
sbx_fs_send_fd(int sock, const void *buf, size_t len, int fd, int flags)
{
	return sbx_fs_send_fds(sock, buf, len, &fd, 1, flags);
}

ssize_t
sbx_fs_recv_fds(int sock, void *buf, size_t len, int *fds, size_t maxfds,
    size_t *nfds, int flags)
{
	char		 cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	ssize_t		 r;
	size_t		 i, n;
	int		 fd;

	*nfds = 0;
	memset(&m, 0, sizeof(m));
	iov.iov_base = buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	r = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
	if (r == -1)
		return -1;
	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		n = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < n; i++) {
			memcpy(&fd, CMSG_DATA(cm) + i * sizeof(int),
			    sizeof(int));
			/* A peer cannot make us keep more than asked. */
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd);
		}
	}
	return r;
}

/* ---- tree removal -------------------------------------------------------- */

/*
 * sbx_fs_rm_tree_at walks the tree with an explicit stack, not recursion: a
 * tree the sandbox built (it owns /output and its home) can be as deep as
 * it likes, and a walk that stops at a depth cap, or at PATH_MAX, leaves
 * it behind.  Only the deepest RM_OPEN_MAX directories stay open, so a
 * tree 5,000 levels deep does not need 5,000 descriptors; a directory
 * above them is opened again by name from the nearest open one (never
 * through `..`) and must still be the directory it was.
 */
#define RM_OPEN_MAX	64
/* How often a directory that refills while we empty it is emptied again. */
#define RM_RETRIES	8

struct rm_frame {
	char	*name;		/* in the frame above (frame 0: in pfd) */
	DIR	*d;		/* NULL while closed */
	dev_t	 dev;
	ino_t	 ino;
	int	 tries;
};

struct rm_walk {
	int			 pfd;
	const char		*top;
	dev_t			 dev;	/* the top's file system */
	struct rm_frame		*v;
	size_t			 n, cap;
	struct sbx_error	*e;
};

/*
 * chmod a directory of ours whose owner may lack read or search
 * permission (mode 000, say: it cannot be opened O_RDONLY), through an
 * O_PATH descriptor that pins the inode: a name swapped for a symlink in
 * between changes nothing.  Only our own directories: someone else's
 * stays as it is (EACCES).  MODE 0 means "the current mode plus u+rwx".
 */
int
sbx_fs_chmod_dir_pinned(int dirfd, const char *name, mode_t mode)
{
	struct stat	 st;
	char		 p[64];
	int		 fd, r;

	fd = openat(dirfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid()) {
		close(fd);
		errno = EACCES;
		return -1;
	}
	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	r = chmod(p, mode != 0 ? mode : (st.st_mode & 07777) | 0700);
	close(fd);
	if (r == -1)
		errno = EACCES;
	return r;
}

static int
rm_open(int dirfd, const char *name)
{
	int	 fd;

	/* O_NOFOLLOW|O_DIRECTORY: a symlink is never entered. */
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1 && errno == EACCES &&
	    sbx_fs_chmod_dir_pinned(dirfd, name, 0) == 0)
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	return fd;
}

/* Is fd the root of a mount (a bind mount from the same file system has
 * the same st_dev: statx tells, where the kernel knows)? */
static int
rm_mount_root(int fd)
{
#ifdef STATX_ATTR_MOUNT_ROOT
	struct statx	 sx;

	if (statx(fd, "", AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW, STATX_INO,
	    &sx) == 0 && (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT))
		return (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
#else
	(void)fd;
#endif
	return 0;
}

static void
rm_release(struct rm_walk *w)
{
	size_t	 i;

	for (i = 0; i < w->n; i++) {
		if (w->v[i].d != NULL)
			closedir(w->v[i].d);
		free(w->v[i].name);
	}
	free(w->v);
	w->v = NULL;
	w->n = w->cap = 0;
}

static int
rm_fail(struct rm_walk *w, const char *what, const char *name)
{
	if (w->n == 0)
		return sbx_error_sys(w->e, "remove_failed", "cannot %s %s",
		    what, name);
	return sbx_error_sys(w->e, "remove_failed", "cannot %s %s (%zu "
	    "levels down in %s)", what, name, w->n, w->top);
}

/* Open frame i again, and those above it up to RM_OPEN_MAX, by name from
 * the nearest frame still open (or pfd). */
static int
rm_reopen(struct rm_walk *w, size_t i)
{
	struct stat	 st;
	size_t		 j, k, keep;
	int		 cur, tmp = -1, nfd;

	for (j = i; j > 0 && w->v[j - 1].d == NULL; j--)
		;
	cur = j == 0 ? w->pfd : dirfd(w->v[j - 1].d);
	keep = i + 1 > RM_OPEN_MAX ? i + 1 - RM_OPEN_MAX : 0;
	for (k = j; k <= i; k++) {
		nfd = rm_open(cur, w->v[k].name);
		if (nfd == -1)
			rm_fail(w, "open again", w->v[k].name);
		if (tmp != -1)
			close(tmp);
		tmp = -1;
		if (nfd == -1)
			return -1;
		/* Renamed or replaced while we worked: where the name leads
		 * now is not the tree we were asked to remove. */
		if (fstat(nfd, &st) == -1 || st.st_dev != w->v[k].dev ||
		    st.st_ino != w->v[k].ino) {
			close(nfd);
			return sbx_error_set(w->e, SBX_K_REJECTED, "path",
			    "tree_changed", "%s changed while it was being "
			    "removed (at %s)", w->top, w->v[k].name);
		}
		if (k >= keep) {
			if ((w->v[k].d = fdopendir(nfd)) == NULL) {
				close(nfd);
				return rm_fail(w, "read", w->v[k].name);
			}
		} else
			tmp = nfd;
		cur = nfd;
	}
	return 0;
}

/* Remove the entry `name` of parent fd pfd: unlink it, or, for a
 * directory, push a frame to empty it first. */
static int
rm_entry(struct rm_walk *w, int pfd, const char *name)
{
	struct rm_frame	*f;
	struct stat	 st;
	void		*nv;
	size_t		 ncap;
	int		 fd;

	/* A symlink or any other non-directory is unlinked itself: its
	 * target, wherever it points, is never touched.  unlink(2) of a
	 * directory fails with EISDIR, which also settles DT_UNKNOWN. */
	if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return rm_fail(w, "remove", name);
	if ((fd = rm_open(pfd, name)) == -1) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP || errno == ENOTDIR) {
			/* Swapped for a non-directory meanwhile. */
			if (unlinkat(pfd, name, 0) == 0 || errno == ENOENT)
				return 0;
			return rm_fail(w, "remove", name);
		}
		return rm_fail(w, "open", name);
	}
	if (fstat(fd, &st) == -1) {
		close(fd);
		return rm_fail(w, "stat", name);
	}
	if (w->n == 0)
		w->dev = st.st_dev;
	/*
	 * Never cross into another mount: a file system mounted (or bound)
	 * inside the tree is not ours to empty, and emptying it would delete
	 * whatever it shows (a bind mount of a host directory, say).  Stop
	 * with an error rather than leave it half-emptied.
	 */
	if (st.st_dev != w->dev || rm_mount_root(fd)) {
		close(fd);
		sbx_error_set(w->e, SBX_K_REJECTED, "path", "mount_point",
		    "%s (%zu levels down in %s) is a mount point; refusing "
		    "to remove what is mounted there", name, w->n, w->top);
		sbx_error_hint(w->e, "unmount it and try again");
		return -1;
	}
	/* We need write and search permission to empty it (our own; a
	 * foreign directory fails below with a clear error). */
	if ((st.st_mode & 0700) != 0700)
		(void)fchmod(fd, (st.st_mode & 07777) | 0700);
	if (w->n == w->cap) {
		ncap = w->cap ? w->cap * 2 : 64;
		if ((nv = reallocarray(w->v, ncap, sizeof(*w->v))) == NULL) {
			close(fd);
			return sbx_error_sys(w->e, "nomem", "removing %s",
			    w->top);
		}
		w->v = nv;
		w->cap = ncap;
	}
	f = &w->v[w->n];
	memset(f, 0, sizeof(*f));
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	if ((f->name = strdup(name)) == NULL ||
	    (f->d = fdopendir(fd)) == NULL) {
		free(f->name);
		close(fd);
		return sbx_error_sys(w->e, "nomem", "removing %s", w->top);
	}
	w->n++;
	/* Keep only the deepest RM_OPEN_MAX open (see above). */
	if (w->n > RM_OPEN_MAX && w->v[w->n - 1 - RM_OPEN_MAX].d != NULL) {
		closedir(w->v[w->n - 1 - RM_OPEN_MAX].d);
		w->v[w->n - 1 - RM_OPEN_MAX].d = NULL;
	}
	return 0;
}

/* The deepest frame reads empty: rmdir it from its parent. */
static int
rm_pop(struct rm_walk *w)
{
	struct rm_frame	*f = &w->v[w->n - 1];
	int		 pfd;

	closedir(f->d);
	f->d = NULL;
	if (w->n >= 2 && w->v[w->n - 2].d == NULL &&
	    rm_reopen(w, w->n - 2) == -1)
		return -1;
	pfd = w->n >= 2 ? dirfd(w->v[w->n - 2].d) : w->pfd;
	if (unlinkat(pfd, f->name, AT_REMOVEDIR) == 0 || errno == ENOENT) {
		free(f->name);
		w->n--;
		return 0;
	}
	/* Refilled while we emptied it (something still writes there):
	 * empty it again, a bounded number of times. */
	if ((errno == ENOTEMPTY || errno == EEXIST) &&
	    ++f->tries < RM_RETRIES)
		return rm_reopen(w, w->n - 1);
	return rm_fail(w, "remove", f->name);
}

int
sbx_fs_rm_tree_at(int pfd, const char *name, struct sbx_error *e)
{
	struct rm_walk	 w;
	struct rm_frame	*f;
	struct dirent	*de;

	memset(&w, 0, sizeof(w));
	w.pfd = pfd;
	w.top = name;
	w.e = e;
	if (rm_entry(&w, pfd, name) == -1)
		goto fail;
	while (w.n > 0) {
		f = &w.v[w.n - 1];
		if (f->d == NULL && rm_reopen(&w, w.n - 1) == -1)
			goto fail;
		errno = 0;
		if ((de = readdir(f->d)) == NULL) {
			if (errno != 0) {
				rm_fail(&w, "read", f->name);
				goto fail;
			}
			if (rm_pop(&w) == -1)
				goto fail;
			continue;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (rm_entry(&w, dirfd(f->d), de->d_name) == -1)
			goto fail;
	}
	rm_release(&w);
	return 0;
fail:
	rm_release(&w);
	return -1;
}

static int
sorted_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **
sbx_fs_sorted_names(int dfd, size_t *np)
{
	DIR		*d;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;
	int		 fd;

	*np = 0;
	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			goto fail;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), sorted_cmp);
	*np = n;
	if (v == NULL)
		v = calloc(1, sizeof(*v));
	return v;
fail:
	while (n > 0)
		free(v[--n]);
	free(v);
	closedir(d);
	return NULL;
}
