/*
 * init-guard-path.c: sbx-init's guard (see cmd/init-guard.c): reading a path from the
 * caller's memory, resolving its parent directory as the kernel would, and
 * deciding on that directory and the last name; refused writes on protected
 * paths are reported.
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

/* One line for sbx on the status socket, once per path. */
void
report_path(int status_fd, const char *what, const char *path)
{
	char	 line[PATH_MAX + 32];
	int	 i, len;

	for (i = 0; i < nreported; i++)
		if (strcmp(reported[i], path) == 0)
			return;
	if (nreported == MAX_REPORTED)
		return;
	if ((reported[nreported] = strdup(path)) == NULL)
		return;
	nreported++;
	len = snprintf(line, sizeof(line), "%s %s\n", what, path);
	if (len <= 0 || (size_t)len >= sizeof(line))
		return;
	/* A newline in a name must not end the line early. */
	for (i = (int)strlen(what) + 1; i < len - 1; i++)
		if (line[i] == '\n' || line[i] == '\r')
			line[i] = '?';
	(void)!write(status_fd, line, (size_t)len);
}

int
dir_path(int dfd, const char *name, char *out, size_t cap)
{
	char	 lnk[64], buf[PATH_MAX];
	ssize_t	 n;

	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", dfd);
	if ((n = readlink(lnk, buf, sizeof(buf) - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	if (name == NULL)
		return snprintf(out, cap, "%s", buf) >= (int)cap ? -1 : 0;
	return snprintf(out, cap, "%s%s%s", buf, strcmp(buf, "/") == 0 ?
	    "" : "/", name) >= (int)cap ? -1 : 0;
}

int
under_protected(const char *path)
{
	size_t	 n;
	int	 i;

	for (i = 0; i < nprot; i++) {
		n = strlen(prot[i]);
		if (strncmp(path, prot[i], n) == 0 && (path[n] == '\0' ||
		    path[n] == '/'))
			return 1;
	}
	return 0;
}

/* A refused write: reported when it falls on a protected path. */
void
maybe_report(int status_fd, int dfd, const char *name, int err)
{
	char	 path[PATH_MAX];

	if (err != EROFS && err != EBUSY && err != EACCES && err != EPERM)
		return;
	if (dir_path(dfd, name, path, sizeof(path)) == 0 &&
	    under_protected(path))
		report_path(status_fd, SBX_INIT_W_FSDENY, path);
}

int
blocked(int dfd, const char *name)
{
	struct stat	 st;
	int		 i;

	if (nblocks == 0)
		return 0;
	if (fstat(dfd, &st) == -1)
		return 1;	/* fail closed */
	for (i = 0; i < nblocks; i++)
		if (blocks[i].dev == (unsigned long long)st.st_dev &&
		    blocks[i].ino == (unsigned long long)st.st_ino &&
		    strcmp(blocks[i].name, name) == 0)
			return 1;
	return 0;
}

/*
 * The git rule below a git directory: rel is what follows it.  A name
 * at its top is writable when git's commits and fetches write it
 * (sbx_git_name_writable); modules/NAME and worktrees/ID are git
 * directories of their own, judged the same way one level down (a
 * submodule whose name holds a / stays read-only).  The directory's own
 * name, and modules or worktrees themselves, are never made here.
 */
static int
git_rel_refused(const char *rel)
{
	char		 first[NAME_MAX + 1];
	const char	*rest;
	size_t		 n;
	int		 i;

	for (;;) {
		n = strcspn(rel, "/");
		if (n == 0 || n > NAME_MAX)
			return 1;
		memcpy(first, rel, n);
		first[n] = '\0';
		rest = rel + n + (rel[n] == '/');
		for (i = 0; i < ngit_open; i++)
			if (strcmp(first, git_open[i]) == 0)
				return 0;
		if (strcmp(first, "modules") != 0 &&
		    strcmp(first, "worktrees") != 0)
			return !sbx_git_name_writable(first);
		/* modules/NAME/...: NAME's own rule. */
		n = strcspn(rest, "/");
		if (n == 0 || rest[n] != '/')
			return 1;
		rel = rest + n + 1;
	}
}

/* Is path (absolute, as pid 1 resolved it) refused by the git rule? */
int
git_path_refused(const char *path)
{
	const char	*c, *rel;
	size_t		 n;
	int		 i;

	for (i = 0; i < ngit_dirs; i++) {
		n = strlen(git_dirs[i]);
		if (strncmp(path, git_dirs[i], n) == 0 && (path[n] == '\0' ||
		    path[n] == '/'))
			if (path[n] == '\0' || git_rel_refused(path + n + 1))
				return 1;
	}
	for (i = 0; i < ngit_roots; i++) {
		n = strlen(git_roots[i]);
		if (strncmp(path, git_roots[i], n) != 0 || path[n] != '/')
			continue;
		/*
		 * The first .git component beneath the root: a repository at
		 * any depth, one that exists (a submodule, a vendored clone)
		 * or one the run would make (git init, a planted .git file
		 * naming a git directory of the run's own).  Its own name is
		 * never created; what is below follows the rule.  A bare
		 * repository, NAME.git by custom, is one too (a push to it
		 * on the host runs its hooks); its name may be made, what
		 * is in it follows the rule.
		 */
		for (c = path + n + 1; *c != '\0'; c += *c == '/') {
			n = strcspn(c, "/");
			if (n >= 4 && strncmp(c + n - 4, ".git", 4) == 0) {
				rel = c + n;
				if (*rel == '\0' ? n == 4 :
				    git_rel_refused(rel + 1))
					return 1;
				break;
			}
			c += n;
		}
	}
	return 0;
}

/* The git rule for name in dfd; fails closed when the path is unknown. */
int
git_refused(int dfd, const char *name)
{
	char	 path[PATH_MAX];

	if (ngit_roots == 0 && ngit_dirs == 0)
		return 0;
	if (dir_path(dfd, name, path, sizeof(path)) == -1)
		return 1;
	return git_path_refused(path);
}

/* A string argument, read once from the caller's memory. */
int
read_str(int mfd, uint64_t addr, char *buf, size_t cap)
{
	size_t	 len = 0;
	ssize_t	 r;
	char	*z;

	if (addr == 0)
		return errno = EFAULT, -1;
	while (len < cap) {
		r = pread(mfd, buf + len, cap - len > 256 ? 256 : cap - len,
		    (off_t)(addr + len));
		if (r <= 0)
			return errno = EFAULT, -1;
		if ((z = memchr(buf + len, '\0', (size_t)r)) != NULL)
			return 0;
		len += (size_t)r;
	}
	return errno = ENAMETOOLONG, -1;
}

/* Where a path argument starts: /, the caller's cwd, or its dirfd. */
int
base_fd(pid_t pid, int dirfd, const char *path)
{
	char	 p[64];

	if (path[0] == '/')
		return open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dirfd == AT_FDCWD)
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
	else
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, dirfd);
	return open(p, O_PATH | O_CLOEXEC);
}

/*
 * Split path into the directory that holds its last name (opened, as the
 * kernel resolves it) and that name.  With follow, a last name that is a
 * symlink is followed, as open(O_CREAT) without O_EXCL does.  0, or -1
 * with errno; *dfd is to be closed.
 */
int
resolve(pid_t pid, int dirfd, const char *path, int follow, int *dfd,
    char name[NAME_MAX + 1], int *slash)
{
	char		 buf[PATH_MAX], lnk[PATH_MAX], *last;
	struct stat	 st;
	ssize_t		 n;
	size_t		 len;
	int		 base, hops = 0, nd;

	*dfd = -1;
	*slash = 0;
	if (path[0] == '\0')
		return errno = ENOENT, -1;
	if ((base = base_fd(pid, dirfd, path)) == -1)
		return -1;
	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		len = strlen(buf);
		while (len > 1 && buf[len - 1] == '/') {
			buf[--len] = '\0';
			*slash = 1;
		}
		if ((last = strrchr(buf, '/')) == NULL) {
			nd = openat(base, ".", O_PATH | O_DIRECTORY |
			    O_CLOEXEC);
			last = buf;
		} else if (last == buf) {
			nd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			last++;
		} else {
			*last++ = '\0';
			nd = openat(base, buf, O_PATH | O_DIRECTORY |
			    O_CLOEXEC);
		}
		close(base);
		if (nd == -1)
			return -1;
		if (*last == '\0')
			last = ".";
		if (strlen(last) > NAME_MAX) {
			close(nd);
			return errno = ENAMETOOLONG, -1;
		}
		memmove(name, last, strlen(last) + 1);
		if (!follow || *slash ||
		    fstatat(nd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISLNK(st.st_mode)) {
			*dfd = nd;
			return 0;
		}
		if (++hops > MAX_HOPS) {
			close(nd);
			return errno = ELOOP, -1;
		}
		if ((n = readlinkat(nd, name, lnk, sizeof(lnk) - 1)) <= 0) {
			close(nd);
			return errno = ELOOP, -1;
		}
		lnk[n] = '\0';
		memcpy(buf, lnk, (size_t)n + 1);
		base = nd;
		if (buf[0] == '/') {
			close(nd);
			if ((base = open("/", O_PATH | O_DIRECTORY |
			    O_CLOEXEC)) == -1)
				return -1;
		}
	}
}

mode_t
caller_umask(pid_t pid)
{
	char	 p[64], line[256];
	FILE	*f;
	mode_t	 m = 022;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)pid);
	if ((f = fopen(p, "re")) == NULL)
		return m;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Umask:", 6) == 0) {
			m = (mode_t)strtoul(line + 6, NULL, 8) & 0777;
			break;
		}
	fclose(f);
	return m;
}
