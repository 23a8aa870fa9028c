/* fsutil.c: openat-based helpers. */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

int
sbx_mkdirs_at(int dirfd, const char *rel, mode_t mode, struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1];
	const char	*p = rel;
	int		 fd, nfd, r;

	if (*rel == '/')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "absolute",
		    "path %s must be relative", rel);
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
sbx_open_beneath(int dirfd, const char *rel, int flags, struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1];
	const char	*p = rel, *q;
	int		 fd, nfd, r, last;

	if (*rel == '/' || *rel == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "absolute",
		    "path `%s` must be relative and non-empty", rel);
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
sbx_write_all(int fd, const void *data, size_t n)
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

int
sbx_write_atomic(int dirfd, const char *name, const void *data, size_t n,
    mode_t mode, struct sbx_error *e)
{
	char	 tmp[NAME_MAX + 1];
	int	 fd, i;

	if (strchr(name, '/') || strlen(name) + 16 > NAME_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "invalid_name", "bad file name %s", name);
	for (i = 0; i < 100; i++) {
		snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name, (int)getpid(),
		    i);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd != -1 || errno != EEXIST)
			break;
	}
	if (fd == -1)
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    tmp);
	if (sbx_write_all(fd, data, n) == -1 || fsync(fd) == -1) {
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
sbx_read_file_at(int dirfd, const char *name, size_t cap, struct sbx_buf *b,
    struct sbx_error *e)
{
	struct stat	 st;
	char		 chunk[16384];
	ssize_t		 r;
	int		 fd;

	if ((fd = sbx_open_beneath(dirfd, name, O_RDONLY, e)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return sbx_error_set(e, SBX_K_REJECTED, "path", "wrong_type",
		    "%s is not a regular file", name);
	}
	if ((size_t)st.st_size > cap) {
		close(fd);
		return sbx_error_set(e, SBX_K_REJECTED, "path", "too_large",
		    "%s is larger than %zu bytes", name, cap);
	}
	for (;;) {
		r = read(fd, chunk, sizeof(chunk));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (b->len + (size_t)r > cap) {
			close(fd);
			return sbx_error_set(e, SBX_K_REJECTED, "path",
			    "too_large", "%s grew past %zu bytes", name, cap);
		}
		if (sbx_buf_append(b, chunk, (size_t)r) == -1) {
			close(fd);
			return sbx_error_sys(e, "nomem", "read %s", name);
		}
	}
	if (r == -1) {
		sbx_error_sys(e, "read_failed", "cannot read %s", name);
		close(fd);
		return -1;
	}
	close(fd);
	if (b->p == NULL)
		sbx_buf_append(b, "", 0);
	return 0;
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

void
sbx_close_from(int lowfd, const int *keep, size_t nkeep)
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
sbx_memfd_data(const char *name, const void *data, size_t n)
{
	int	 fd;

	fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1)
		return -1;
	if (sbx_write_all(fd, data, n) == -1 || lseek(fd, 0, SEEK_SET) == -1) {
		close(fd);
		return -1;
	}
	/* Sealed: nothing can change what the sandbox will read. */
	(void)fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL);
	return fd;
}

int
sbx_path_check(const char *path, const char *field, struct sbx_error *e)
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

ssize_t
sbx_send_fd(int sock, const void *buf, size_t len, int fd, int flags)
{
	char		 cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;

	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	iov.iov_base = (void *)buf;
	iov.iov_len = len;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, flags | MSG_NOSIGNAL);
}

ssize_t
sbx_recv_fds(int sock, void *buf, size_t len, int *fds, size_t maxfds,
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
