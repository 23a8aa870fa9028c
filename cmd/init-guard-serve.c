/*
 * init-guard-serve.c: sbx-init's guard (see cmd/init-guard.c): pid 1
 * answering each notification of the filter and performing the approved
 * call on the checked directory itself (the socket calls are
 * cmd/init-guard-sock.c's).
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"

#include "init-guard-int.h"

void
answer(int nfd, uint64_t id, long long val, int err)
{
	struct seccomp_notif_resp	 resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.val = val;
	resp.error = err ? -err : 0;
	(void)ioctl(nfd, SECCOMP_IOCTL_NOTIF_SEND, &resp);
}

int
still_valid(int nfd, uint64_t id)
{
	return ioctl(nfd, SECCOMP_IOCTL_NOTIF_ID_VALID, &id) == 0;
}

/* Resolve and check a destination name; EROFS when it is protected. */
static int
dest(int status_fd, pid_t pid, int dirfd, const char *path, int follow,
    int *dfd, char name[NAME_MAX + 1], int *slash)
{
	char	 full[PATH_MAX];

	if (resolve(pid, dirfd, path, follow, dfd, name, slash) == -1)
		return -1;
	if (blocked(*dfd, name) || git_refused(*dfd, name)) {
		if (dir_path(*dfd, name, full, sizeof(full)) == 0)
			report_path(status_fd, SBX_INIT_W_FSDENY, full);
		close(*dfd);
		*dfd = -1;
		return errno = EROFS, -1;
	}
	return 0;
}

/*
 * A hard link's source under the git rule: a second name for a git
 * directory's config or hook, outside it, would take the writes the rule
 * refuses.  (The read-only mounts need no such check: a link across
 * mounts fails with EXDEV.)  fdpath names the source's open file.
 */
static int
link_src_refused(int status_fd, const char *fdpath)
{
	char	 full[PATH_MAX];
	ssize_t	 n;

	if (ngit_roots == 0 && ngit_dirs == 0)
		return 0;
	if ((n = readlink(fdpath, full, sizeof(full) - 1)) <= 0)
		return errno = EROFS, 1;	/* fail closed */
	full[n] = '\0';
	if (!git_path_refused(full))
		return 0;
	report_path(status_fd, SBX_INIT_W_FSDENY, full);
	errno = EROFS;
	return 1;
}

void
guard_serve(int nfd, int status_fd)
{
	static struct seccomp_notif	 *req;
	static struct seccomp_notif_sizes sz;
	struct seccomp_notif_addfd	  add;
	char				  path[PATH_MAX], path2[PATH_MAX];
	char	  name[NAME_MAX + 1], name2[NAME_MAX + 1];
	char	  p[64];
	uint64_t *a;
	mode_t	  um, old;
	pid_t	  pid;
	int	  mfd = -1, dfd = -1, dfd2 = -1, fd = -1;
	int	  nr, err = 0, slash, slash2, flags;
	long long val = 0;

	if (req == NULL) {
		if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) == -1)
			sz.seccomp_notif = sizeof(*req);
		if (sz.seccomp_notif < sizeof(*req))
			sz.seccomp_notif = sizeof(*req);
		if ((req = calloc(1, sz.seccomp_notif)) == NULL)
			return;
	}
	memset(req, 0, sz.seccomp_notif);
	if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_RECV, req) == -1)
		return;
	pid = (pid_t)req->pid;
	nr = req->data.nr;
	a = (uint64_t *)req->data.args;
	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	/* Fail closed: a caller whose memory cannot be read (it made
	 * itself undumpable) cannot create names. */
	if ((mfd = open(p, O_RDONLY | O_CLOEXEC)) == -1 ||
	    !still_valid(nfd, req->id)) {
		err = mfd == -1 ? EPERM : ENOENT;
		goto done;
	}
	/* The socket calls: cmd/init-guard-sock.c. */
	if (nr == SYS_connect || nr == SYS_bind || nr == SYS_sendto ||
	    nr == SYS_sendmsg || nr == SYS_sendmmsg) {
		serve_sock(nfd, req, mfd, status_fd);
		close(mfd);
		return;
	}
	um = caller_umask(pid);
	switch (nr) {
	case SYS_open:
	case SYS_openat:
	case SYS_creat: {
		int	 dirfd = nr == SYS_openat ? (int)a[0] : AT_FDCWD;
		mode_t	 mode;

		if (read_str(mfd, nr == SYS_openat ? a[1] : a[0], path,
		    sizeof(path)) == -1)
			goto fail;
		flags = nr == SYS_creat ? O_CREAT | O_WRONLY | O_TRUNC :
		    (int)(nr == SYS_openat ? a[2] : a[1]);
		mode = (mode_t)(nr == SYS_openat ? a[3] : nr == SYS_creat ?
		    a[1] : a[2]);
		if (dest(status_fd, pid, dirfd, path, !(flags & (O_EXCL |
		    O_NOFOLLOW)), &dfd, name, &slash) == -1)
			goto fail;
		if (slash)
			goto isdir;
		old = umask(um);
		/* The last name was resolved above: a symlink swapped in
		 * now is refused, not followed.  Never a controlling
		 * terminal for pid 1; never blocking pid 1 on a FIFO. */
		fd = openat(dfd, name, (flags & ~O_CLOEXEC) | O_CLOEXEC |
		    O_NOCTTY | ((flags & O_EXCL) ? 0 : O_NOFOLLOW) |
		    O_NONBLOCK, mode);
		umask(old);
		if (fd == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		if (!(flags & O_NONBLOCK))
			(void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) &
			    ~O_NONBLOCK);
		memset(&add, 0, sizeof(add));
		add.id = req->id;
		add.flags = SECCOMP_ADDFD_FLAG_SEND;
		add.srcfd = (unsigned)fd;
		add.newfd_flags = (flags & O_CLOEXEC) ? O_CLOEXEC : 0;
		/* Answered by the kernel with the new descriptor. */
		if (ioctl(nfd, SECCOMP_IOCTL_NOTIF_ADDFD, &add) == -1) {
			err = errno;
			goto done;
		}
		close(fd);
		close(dfd);
		close(mfd);
		return;
	}
	case SYS_mkdir:
	case SYS_mkdirat:
	case SYS_mknod:
	case SYS_mknodat: {
		int	 at = nr == SYS_mkdirat || nr == SYS_mknodat;

		if (read_str(mfd, a[at], path, sizeof(path)) == -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[0] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		old = umask(um);
		if (nr == SYS_mkdir || nr == SYS_mkdirat)
			val = mkdirat(dfd, name, (mode_t)a[at + 1]);
		else if (slash) {
			umask(old);
			goto isdir;
		} else
			val = mknodat(dfd, name, (mode_t)a[at + 1],
			    (dev_t)a[at + 2]);
		umask(old);
		if (val == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	case SYS_symlink:
	case SYS_symlinkat:
		if (read_str(mfd, a[0], path2, sizeof(path2)) == -1 ||
		    read_str(mfd, a[nr == SYS_symlinkat ? 2 : 1], path,
		    sizeof(path)) == -1)
			goto fail;
		if (dest(status_fd, pid, nr == SYS_symlinkat ? (int)a[1] :
		    AT_FDCWD, path, 0, &dfd, name, &slash) == -1)
			goto fail;
		if ((val = symlinkat(path2, dfd, name)) == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	case SYS_link:
	case SYS_linkat: {
		int	 at = nr == SYS_linkat, lflags = at ? (int)a[4] : 0;
		int	 ofd, sfd;

		if (read_str(mfd, a[at ? 3 : 1], path, sizeof(path)) == -1 ||
		    read_str(mfd, a[at ? 1 : 0], path2, sizeof(path2)) == -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[2] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		if (at && (lflags & AT_EMPTY_PATH) && path2[0] == '\0') {
			/* linkat(fd, "", ...): the caller's open file. */
			snprintf(path2, sizeof(path2), "/proc/%d/fd/%d",
			    (int)pid, (int)a[0]);
			if (link_src_refused(status_fd, path2))
				goto fail;
			val = linkat(AT_FDCWD, path2, dfd, name,
			    AT_SYMLINK_FOLLOW);
		} else {
			if ((ofd = base_fd(pid, at ? (int)a[0] : AT_FDCWD,
			    path2)) == -1)
				goto fail;
			/* The source opened once, checked, and linked from
			 * that descriptor: a name swapped meanwhile is not
			 * what gets linked. */
			sfd = openat(ofd, path2, O_PATH | O_CLOEXEC |
			    ((lflags & AT_SYMLINK_FOLLOW) ? 0 : O_NOFOLLOW));
			err = errno;
			close(ofd);
			if (sfd == -1) {
				errno = err;
				goto fail;
			}
			snprintf(path2, sizeof(path2), "/proc/self/fd/%d",
			    sfd);
			if (link_src_refused(status_fd, path2)) {
				close(sfd);
				goto fail;
			}
			val = linkat(AT_FDCWD, path2, dfd, name,
			    AT_SYMLINK_FOLLOW);
			err = errno;
			close(sfd);
			errno = err;
			err = 0;
		}
		if (val == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	case SYS_rename:
	case SYS_renameat:
	case SYS_renameat2: {
		int	 at = nr != SYS_rename;
		unsigned rflags = nr == SYS_renameat2 ? (unsigned)a[4] : 0;

		if (read_str(mfd, a[at ? 1 : 0], path2, sizeof(path2)) ==
		    -1 || read_str(mfd, a[at ? 3 : 1], path, sizeof(path)) ==
		    -1)
			goto fail;
		if (dest(status_fd, pid, at ? (int)a[2] : AT_FDCWD, path, 0,
		    &dfd, name, &slash) == -1)
			goto fail;
		/* An exchange creates both names. */
		if ((rflags & RENAME_EXCHANGE ? dest(status_fd, pid, at ?
		    (int)a[0] : AT_FDCWD, path2, 0, &dfd2, name2, &slash2) :
		    resolve(pid, at ? (int)a[0] : AT_FDCWD, path2, 0, &dfd2,
		    name2, &slash2)) == -1)
			goto fail;
		if ((val = (long long)syscall(SYS_renameat2, dfd2, name2, dfd,
		    name, rflags)) == -1) {
			maybe_report(status_fd, dfd, name, errno);
			goto fail;
		}
		break;
	}
	default:
		err = ENOSYS;
		goto done;
	}
	goto done;
isdir:
	err = EISDIR;
	goto done;
fail:
	err = errno ? errno : EPERM;
	val = -1;
done:
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	if (dfd2 >= 0)
		close(dfd2);
	if (mfd >= 0)
		close(mfd);
	answer(nfd, req->id, err ? -1 : val, err);
}
