/* cgroup.c: per-run cgroups, the front (v2 first, v1 as the fallback):
 * what both versions share, the public calls; cgroup2.c and cgroup1.c
 * hold what is particular to each.
 *
 * Trust model. The cgroup file systems are the kernel's; the directories
 * beneath the caller's own cgroup may be delegated to the caller's uid, the
 * same uid the sandbox runs as, so anything found there could have been
 * planted by an earlier sandbox. Hence: every directory is opened beneath
 * an already opened parent with O_NOFOLLOW, every file system is checked
 * to really be cgroupfs (statfs magic) before we report a limit as
 * enforced, and names are restricted to [a-z0-9-].
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/vfs.h>

#include <linux/magic.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "cgroup.h"
#include "error.h"
#include "cgroupint.h"
#include "fsutil.h"
#include "proc.h"

long long
sbx_cg_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void
sbx_cg_sleep_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

void
sbx_cg_close_fd(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

__attribute__((format(printf, 2, 3))) void
sbx_cg_why_add(struct sbx_cgroup *cg, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 n = strlen(cg->why);

	if (n > 0 && n + 2 < sizeof(cg->why)) {
		memcpy(cg->why + n, "; ", 3);
		n += 2;
	}
	if (n + 1 >= sizeof(cg->why))
		return;
	va_start(ap, fmt);
	(void)vsnprintf(cg->why + n, sizeof(cg->why) - n, fmt, ap);
	va_end(ap);
}

int
sbx_cg_has_file(int dirfd, const char *name)
{
	struct stat	 st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int
sbx_cg_is_fs(int fd, unsigned long magic)
{
	struct statfs	 sf;

	return fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == magic;
}

/* Write one value to a control file, in one write(2) as cgroupfs wants. */
int
sbx_cg_write(int dirfd, const char *file, const char *val)
{
	int	 fd, rc, saved;

	if ((fd = openat(dirfd, file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	rc = sbx_fs_write_all(fd, val, strlen(val));
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

static int
read_fd(int fd, struct sbx_buf *b, size_t cap)
{
	char	 chunk[4096];
	ssize_t	 r;

	sbx_buf_reset(b);
	for (;;) {
		r = read(fd, chunk, sizeof(chunk));
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (b->len + (size_t)r > cap) {
			errno = EFBIG;
			return -1;
		}
		if (sbx_buf_append(b, chunk, (size_t)r) == -1)
			return -1;
	}
	if (r == -1)
		return -1;
	return sbx_buf_append(b, "", 0);
}

int
sbx_cg_read(int dirfd, const char *file, struct sbx_buf *b, size_t cap)
{
	int	 fd, rc, saved;

	if ((fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	rc = read_fd(fd, b, cap);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/* "key N" in a flat-keyed file (memory.events, cpu.stat, ...), or the
 * first number of the file when key is NULL. 1: found, 0: not. */
int
sbx_cg_number(int dirfd, const char *file, const char *key,
    unsigned long long *out)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*line, *v;
	char		*end;
	size_t		 klen = key ? strlen(key) : 0;
	int		 found = 0;

	if (sbx_cg_read(dirfd, file, &b, CG_FILE_CAP) == -1) {
		sbx_buf_release(&b);
		return 0;
	}
	for (line = b.p; line != NULL && *line != '\0'; ) {
		v = NULL;
		if (key == NULL)
			v = line;
		else if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			v = line + klen + 1;
		if (v != NULL && *v >= '0' && *v <= '9') {
			errno = 0;
			*out = strtoull(v, &end, 10);
			found = (errno == 0 && end != v);
			break;
		}
		if ((line = strchr(line, '\n')) != NULL)
			line++;
	}
	sbx_buf_release(&b);
	return found;
}

/* Is w one of the space-separated words of list? */
int
sbx_cg_word_in(const char *list, const char *w)
{
	size_t		 n = strlen(w);
	const char	*p = list;

	while ((p = strstr(p, w)) != NULL) {
		if ((p == list || p[-1] == ' ') &&
		    (p[n] == '\0' || p[n] == ' ' || p[n] == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

/* Run names are sbx-<pid>-<rest> with rest in [a-z0-9-]: nothing that can
 * climb, hide or collide with the kernel's files (which all contain a dot).
 * Returns the pid, or -1 when the name is not one of ours. */
long
sbx_cg_name_pid(const char *name, const char **restp)
{
	const char	*p;
	long		 pid = 0;

	if (strlen(name) > SBX_CG_NAME_MAX || strncmp(name, "sbx-", 4) != 0 ||
	    name[4] < '1' || name[4] > '9')
		return -1;
	for (p = name + 4; *p >= '0' && *p <= '9'; p++) {
		if (pid > 100000000L)
			return -1;
		pid = pid * 10 + (*p - '0');
	}
	if (*p != '-' || p[1] == '\0')
		return -1;
	if (restp != NULL)
		*restp = p + 1;
	for (p++; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '-'))
			return -1;
	return pid;
}

void
sbx_cg_self_leaf_name(char *buf, size_t len)
{
	snprintf(buf, len, "sbx-%ld-self", (long)getpid());
}

#define PROCINFO_INIT	{ SBX_BUF_INIT, SBX_BUF_INIT, 0, 0 }

static const char *
proc_text(struct sbx_buf *b, int *have, const char *path)
{
	int	 fd;

	if (*have == 0) {
		*have = -1;
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
			if (read_fd(fd, b, CG_PROCS_CAP) == 0)
				*have = 1;
			close(fd);
		}
	}
	return *have == 1 ? b->p : NULL;
}

void
sbx_cg_procinfo_release(struct procinfo *pi)
{
	sbx_buf_release(&pi->cgroup);
	sbx_buf_release(&pi->mountinfo);
}

/* Copy the line at *p into buf (skipping lines that do not fit) and
 * advance *p. Returns 0 at the end of the text. */
static int
next_line(const char **p, char *buf, size_t bufsz)
{
	size_t	 n;

	while (**p != '\0') {
		n = strcspn(*p, "\n");
		if (n < bufsz) {
			memcpy(buf, *p, n);
			buf[n] = '\0';
		}
		*p += n + ((*p)[n] == '\n');
		if (n < bufsz)
			return 1;
	}
	return 0;
}

/* The caller's cgroup in one hierarchy, from /proc/self/cgroup; ctl NULL
 * is the v2 line "0::/path". 1: found, 0: no such line (or the cgroup was
 * removed under us), -1: /proc unreadable. */
static int
self_cgroup(struct procinfo *pi, const char *ctl, char *out, size_t outsz)
{
	char		 line[PATH_MAX + 256];
	char		*c1, *c2, *tok, *save;
	const char	*p;
	int		 found = 0;

	if ((p = proc_text(&pi->cgroup, &pi->have_cgroup,
	    "/proc/self/cgroup")) == NULL)
		return -1;
	while (!found && next_line(&p, line, sizeof(line))) {
		if ((c1 = strchr(line, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c1 = *c2 = '\0';
		if (ctl == NULL) {
			found = strcmp(line, "0") == 0 && c1[1] == '\0';
		} else {
			for (tok = strtok_r(c1 + 1, ",", &save); tok != NULL;
			    tok = strtok_r(NULL, ",", &save))
				if (strcmp(tok, ctl) == 0)
					found = 1;
		}
		if (found && (c2[1] != '/' || strlen(c2 + 1) >= outsz ||
		    strstr(c2 + 1, " (deleted)") != NULL))
			return 0;
		if (found)
			memcpy(out, c2 + 1, strlen(c2 + 1) + 1);
	}
	return found;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void
unescape_octal(char *s)
{
	char	*d = s;

	while (*s != '\0') {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' &&
		    s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
			    (s[3] - '0'));
			s += 4;
		} else
			*d++ = *s++;
	}
	*d = '\0';
}

/*
 * Does this mount of a hierarchy show all of it, as the caller's cgroup
 * paths are written?  The top of a hierarchy is inode 1 (kernfs numbers
 * its root first), and /proc/self/cgroup is written from the top when we
 * are in the initial cgroup namespace (its inode is a constant of the
 * kernel's, PROC_CGROUP_INIT_INO).  Then mountinfo, whose every line the
 * kernel formats anew on each read (~0.1 ms a run here, issue 19), has
 * nothing to add.  In any other namespace, or for a mount of a part, it
 * is read.
 */
static int
shows_whole(const struct stat *top)
{
	static int	 initial = -1;
	struct stat	 st;

	if (top->st_ino != 1)
		return 0;
	if (initial == -1)
		initial = stat("/proc/self/ns/cgroup", &st) == 0 &&
		    st.st_ino == 0xEFFFFFFBUL;
	return initial;
}

/* Which cgroup a mount of a cgroup hierarchy shows: mountinfo's root
 * field, "/" unless bind-mounted from a sub-cgroup (docker on v1 without
 * a cgroup namespace does that). Defaults to "/" when not found. */
static void
mount_root(struct procinfo *pi, int fd, char *out, size_t outsz)
{
	struct stat	 st;
	char		 lnk[64], path[PATH_MAX], devs[32];
	char		 line[3 * PATH_MAX], *cur, *f[5];
	const char	*p;
	ssize_t		 n;
	int		 i;

	snprintf(out, outsz, "/");
	if (fstat(fd, &st) == -1 || shows_whole(&st))
		return;
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	if ((n = readlink(lnk, path, sizeof(path) - 1)) <= 0)
		return;
	path[n] = '\0';
	snprintf(devs, sizeof(devs), "%u:%u", major(st.st_dev),
	    minor(st.st_dev));
	if ((p = proc_text(&pi->mountinfo, &pi->have_mountinfo,
	    "/proc/self/mountinfo")) == NULL)
		return;
	while (next_line(&p, line, sizeof(line))) {
		cur = line;
		for (i = 0; i < 5; i++)
			if ((f[i] = strsep(&cur, " ")) == NULL)
				break;
		if (i < 5 || strcmp(f[2], devs) != 0)
			continue;
		unescape_octal(f[4]);
		if (strcmp(f[4], path) != 0)
			continue;
		unescape_octal(f[3]);
		if (strlen(f[3]) < outsz)
			memcpy(out, f[3], strlen(f[3]) + 1);
		return;
	}
}

static int
is_mount_root(int fd)
{
	struct stat	 a, b;

	if (fstat(fd, &a) == -1 || fstatat(fd, "..", &b, 0) == -1)
		return 0;
	return a.st_dev != b.st_dev || a.st_ino == b.st_ino;
}

/*
 * The parent of this run's cgroup in one hierarchy (ctl NULL: v2), given
 * the hierarchy's top directory. A mount point means "beneath the caller's
 * own cgroup": a child of our own cgroup is the only place a delegated user
 * may create anything, and nesting keeps whatever limits the admin put on
 * us above the run. Any other directory is a cgroup the admin prepared for
 * sbx, used as is. Returns 0, or -1 (why given) when unusable.
 */
int
sbx_cg_find_parent(struct procinfo *pi, int top, const char *toppath,
    const char *ctl, struct where *w, struct sbx_cgroup *cg)
{
	struct sbx_error	 scratch;
	char			 own[PATH_MAX], mroot[PATH_MAX], leaf[64];
	const char		*rel, *label = ctl ? ctl : "cgroup2";
	char			*slash;
	size_t			 n;
	int			 r;

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	if (!is_mount_root(top)) {
		if ((w->fd = fcntl(top, F_DUPFD_CLOEXEC, 3)) == -1)
			return -1;
		snprintf(w->path, sizeof(w->path), "%s", toppath);
		return 0;
	}
	if ((r = self_cgroup(pi, ctl, own, sizeof(own))) != 1) {
		sbx_cg_why_add(cg, "%s: %s", label, r == 0 ?
		    "this process is in no cgroup of that hierarchy" :
		    "cannot read /proc/self/cgroup");
		return -1;
	}
	mount_root(pi, top, mroot, sizeof(mroot));
	n = strlen(mroot);
	if (strcmp(mroot, "/") == 0)
		rel = own;
	else if (strncmp(own, mroot, n) == 0 &&
	    (own[n] == '\0' || own[n] == '/'))
		rel = own + n;
	else {
		sbx_cg_why_add(cg, "%s: own cgroup %s is outside the mounted "
		    "part %s", label, own, mroot);
		return -1;
	}
	while (*rel == '/')
		rel++;
	memmove(own, rel, strlen(rel) + 1);
	/* Our own leaf from an earlier run (v2 only): the runs go next to
	 * it, in the parent whose controllers we enabled. */
	sbx_cg_self_leaf_name(leaf, sizeof(leaf));
	slash = strrchr(own, '/');
	if (ctl == NULL && strcmp(slash ? slash + 1 : own, leaf) == 0) {
		if (slash != NULL)
			*slash = '\0';
		else
			own[0] = '\0';
		w->leaf = 1;
	} else
		w->own = 1;
	if (own[0] == '\0')
		w->fd = fcntl(top, F_DUPFD_CLOEXEC, 3);
	else
		/* O_NOFOLLOW all the way down: the subtree may be delegated
		 * to the uid our sandboxes run as. */
		w->fd = sbx_fs_open_beneath(top, own, O_RDONLY | O_DIRECTORY,
		    &scratch);
	if (w->fd == -1) {
		sbx_cg_why_add(cg, "%s: cannot open own cgroup %s/%s: %s",
		    label, toppath, own, strerror(errno));
		return -1;
	}
	snprintf(w->path, sizeof(w->path), "%s%s%s", toppath,
	    own[0] ? "/" : "", own);
	return 0;
}


const char *
sbx_cg_env_root(void)
{
	const char	*s = secure_getenv("SBX_CGROUP_ROOT");

	return s != NULL && *s != '\0' ? s : NULL;
}

/* ---- killing ---------------------------------------------------------- */

int
sbx_cg_read_pids(int dirfd, struct pidv *pv)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*p;
	char		*end;
	pid_t		*nv;
	long		 pid;

	pv->n = 0;
	if (sbx_cg_read(dirfd, "cgroup.procs", &b, CG_PROCS_CAP) == -1) {
		sbx_buf_release(&b);
		return -1;
	}
	for (p = b.p; *p != '\0'; p = end) {
		pid = strtol(p, &end, 10);
		if (end == p) {
			end = (char *)p + 1;
			continue;
		}
		if (pid <= 0)
			continue;
		if (pv->n == pv->cap) {
			pv->cap = pv->cap ? pv->cap * 2 : 64;
			nv = reallocarray(pv->v, pv->cap, sizeof(*nv));
			if (nv == NULL) {
				sbx_buf_release(&b);
				return -1;
			}
			pv->v = nv;
		}
		pv->v[pv->n++] = (pid_t)pid;
	}
	sbx_buf_release(&b);
	return 0;
}

static int
pid_in(const struct pidv *pv, pid_t pid)
{
	size_t	 i;

	for (i = 0; i < pv->n; i++)
		if (pv->v[i] == pid)
			return 1;
	return 0;
}

/*
 * SIGKILL the processes listed in one cgroup directory. kill(2) on a pid
 * read from a file races with the pid's reuse by an unrelated process; so
 * each pid is first pinned with a pidfd, the list is read again, and only
 * the pids still listed are signalled through their pidfd (a pidfd of a
 * process that died meanwhile signals nothing). Returns how many
 * processes were listed (0: empty), or -1.
 */
static int
kill_listed(int dirfd, int dokill)
{
	struct pidv	 a = { NULL, 0, 0 }, b = { NULL, 0, 0 };
	int		*pfd = NULL, nopidfd = 0;
	size_t		 i;
	int		 rc = -1;

	if (sbx_cg_read_pids(dirfd, &a) == -1)
		goto out;
	if (a.n == 0 || !dokill) {
		rc = (int)(a.n > INT_MAX ? INT_MAX : a.n);
		goto out;
	}
	if ((pfd = calloc(a.n, sizeof(*pfd))) == NULL)
		goto out;
	for (i = 0; i < a.n; i++) {
		pfd[i] = -1;
#ifdef SYS_pidfd_open
		if (!nopidfd) {
			pfd[i] = (int)syscall(SYS_pidfd_open, a.v[i], 0);
			if (pfd[i] == -1 && errno == ENOSYS)
				nopidfd = 1;
		}
#else
		nopidfd = 1;
#endif
	}
	if (sbx_cg_read_pids(dirfd, &b) == -1)
		goto out;
	for (i = 0; i < a.n; i++) {
		if (!pid_in(&b, a.v[i]))
			continue;
#ifdef SYS_pidfd_send_signal
		if (pfd[i] != -1) {
			(void)syscall(SYS_pidfd_send_signal, pfd[i], SIGKILL,
			    NULL, 0);
			continue;
		}
#endif
		/* Kernels before 5.3: the window is the time between two
		 * reads of the list; callers freeze the cgroup first when
		 * they can, which closes it. */
		if (nopidfd)
			(void)kill(a.v[i], SIGKILL);
	}
	rc = (int)(a.n > INT_MAX ? INT_MAX : a.n);
out:
	if (pfd != NULL) {
		for (i = 0; i < a.n; i++)
			if (pfd[i] != -1)
				close(pfd[i]);
		free(pfd);
	}
	free(a.v);
	free(b.v);
	return rc;
}

/* Names of the subdirectories of dirfd (cgroups: the files have dots). */
int
sbx_cg_subdirs(int dirfd, struct sbx_strv *out)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd;

	/* A new open file description: a dup would share (and advance) the
	 * directory offset of dirfd, and the next listing would be empty. */
	if ((fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_type != DT_DIR && !(de->d_type == DT_UNKNOWN &&
		    fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)))
			continue;
		if (sbx_strv_push(out, de->d_name) == -1) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	return 0;
}

/* kill_listed in dirfd and every cgroup beneath (cgroup.procs lists each
 * cgroup's own processes only); dokill 0 only counts. Returns the total
 * listed, or -1. */
static int
kill_tree(int dirfd, int depth, int dokill)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	size_t		 i;
	int		 n, m, fd;

	if ((n = kill_listed(dirfd, dokill)) == -1)
		return -1;
	if (depth >= CG_MAX_DEPTH || sbx_cg_subdirs(dirfd, &sub) == -1) {
		sbx_strv_release(&sub);
		return n;
	}
	for (i = 0; i < sub.n; i++) {
		fd = openat(dirfd, sub.v[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1)
			continue;
		if ((m = kill_tree(fd, depth + 1, dokill)) > 0)
			n += m;
		close(fd);
	}
	sbx_strv_release(&sub);
	return n;
}

/* Freeze (on) or thaw a cgroup: v2 cgroup.freeze, v1 freezer.state.
 * Returns 1 when it has a freezer (and, freezing, waited for it, bounded),
 * 0 when it has none. */
static int
freeze(int dirfd, int on)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	unsigned long long v;
	long long	 deadline = sbx_cg_now_ms() + CG_FREEZE_MS;
	int		 v1;

	if (sbx_cg_has_file(dirfd, "cgroup.freeze"))
		v1 = 0;
	else if (sbx_cg_has_file(dirfd, "freezer.state"))
		v1 = 1;
	else
		return 0;
	if (!on) {
		(void)sbx_cg_write(dirfd, v1 ? "freezer.state" :
		    "cgroup.freeze", v1 ? "THAWED" : "0");
		return 1;
	}
	if (sbx_cg_write(dirfd, v1 ? "freezer.state" : "cgroup.freeze",
	    v1 ? "FROZEN" : "1") == -1)
		return 0;
	/* Freezing is asynchronous; a task in uninterruptible sleep can hold
	 * it in FREEZING for long, so wait a bounded time and go on. */
	while (sbx_cg_now_ms() < deadline) {
		if (v1) {
			if (sbx_cg_read(dirfd, "freezer.state", &b, 64) == 0 &&
			    strncmp(b.p, "FROZEN", 6) == 0)
				break;
		} else if (sbx_cg_number(dirfd, "cgroup.events", "frozen",
		    &v) && v == 1)
			break;
		sbx_cg_sleep_ms(1);
	}
	sbx_buf_release(&b);
	return 1;
}

/*
 * Kill everything in one cgroup. v2 cgroup.kill (5.14+) is atomic and
 * reaches processes being forked. Otherwise freeze first, so that nothing
 * forks or exits between reading the list and signalling it, then thaw:
 * a v1 frozen task dies only once thawed.
 */
int
sbx_cg_kill_dir(int dirfd)
{
	int	 frozen, n;

	if (sbx_cg_has_file(dirfd, "cgroup.kill") &&
	    sbx_cg_write(dirfd, "cgroup.kill", "1") == 0)
		return 0;
	/* Nothing inside: nothing can fork its way in either (only members
	 * create members), and freezing costs milliseconds on v1. */
	if (kill_tree(dirfd, 0, 0) == 0)
		return 0;
	frozen = freeze(dirfd, 1);
	n = kill_tree(dirfd, 0, 1);
	if (frozen)
		(void)freeze(dirfd, 0);
	return n == -1 ? -1 : 0;
}

/* Kill repeatedly until every listed cgroup is empty or the deadline;
 * catches children forked by processes the first pass missed. */
int
sbx_cg_drain(const int *fds, int nfd, long long deadline)
{
	int	 i, n, total;

	for (;;) {
		total = 0;
		for (i = 0; i < nfd; i++) {
			if (fds[i] == -1)
				continue;
			if ((n = kill_tree(fds[i], 0, 1)) > 0)
				total += n;
		}
		if (total == 0)
			return 0;
		if (sbx_cg_now_ms() >= deadline)
			return -1;
		sbx_cg_sleep_ms(1);
	}
}

/* rmdir parent/name and the cgroups beneath it, retrying while the kernel
 * still sees the cgroup as busy (exiting tasks, dying css). */
int
sbx_cg_remove_tree(int pfd, const char *name, int depth, long long deadline)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	size_t		 i;
	int		 fd, rc = 0;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	/* Children first: a sandbox that reached cgroupfs may have made
	 * some, and a cgroup with children cannot be removed. */
	if (depth < CG_MAX_DEPTH && sbx_cg_subdirs(fd, &sub) == 0)
		for (i = 0; i < sub.n; i++)
			if (sbx_cg_remove_tree(fd, sub.v[i], depth + 1,
			    deadline) == -1)
				rc = -1;
	sbx_strv_release(&sub);
	close(fd);
	for (;;) {
		if (unlinkat(pfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return rc;
		if (errno != EBUSY || sbx_cg_now_ms() >= deadline)
			return -1;
		sbx_cg_sleep_ms(10);
	}
}

/* cpus as a CFS quota in microseconds per CG_PERIOD_US, rounded. */
unsigned long long
sbx_cg_cpu_quota(const struct sbx_limits *lim)
{
	return (unsigned long long)(lim->cpus * (double)CG_PERIOD_US + 0.5);
}

/* mkdir errors that mean "not here" rather than "something is wrong". */
int
sbx_cg_mkdir_unusable(int err)
{
	return err == EACCES || err == EPERM || err == EROFS ||
	    err == ENOSPC || err == EAGAIN || err == ENOENT || err == EDQUOT;
}

/* ---- public ---------------------------------------------------------- */

const char *
sbx_cgroup_backend_name(enum sbx_cg_backend b)
{
	switch (b) {
	case SBX_CG_V2:
		return "cgroup2";
	case SBX_CG_V1:
		return "cgroup1";
	default:
		return "none";
	}
}

/* This process's start time (0: unknown), read once per process. */
static unsigned long long
self_start(void)
{
	static pid_t			 pid;
	static unsigned long long	 start;
	struct sbx_proc_stat		 ps;

	if (pid != getpid()) {
		start = sbx_proc_stat(getpid(), &ps) == 0 ? ps.start : 0;
		pid = getpid();
	}
	return start;
}

int
sbx_cgroup_name(char *buf, size_t len)
{
	unsigned int	 r;
	struct timespec	 ts;
	int		 n;

	if (getentropy(&r, sizeof(r)) == -1) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		r = (unsigned int)ts.tv_nsec ^ (unsigned int)getpid() << 16;
	}
	if (self_start() != 0)
		n = snprintf(buf, len, "sbx-%ld-%08x-%llu", (long)getpid(), r,
		    self_start());
	else
		n = snprintf(buf, len, "sbx-%ld-%08x", (long)getpid(), r);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

void
sbx_cg_init(struct sbx_cgroup *cg)
{
	int	 i;

	memset(cg, 0, sizeof(*cg));
	cg->v2_fd_ = cg->v2_parent_fd_ = cg->v2_place_fd_ = -1;
	for (i = 0; i < SBX_CG1_N; i++) {
		cg->procs_fd[i] = -1;
		cg->v1_fd_[i] = cg->v1_parent_fd_[i] = -1;
	}
	cg->inited_ = 1;
}

int
sbx_cg_check_limits(const struct sbx_limits *lim, struct sbx_error *e)
{
	unsigned	 set = 0;

	if (lim->memory_bytes)
		set |= SBX_LIM_MEMORY;
	if (lim->cpus != 0.0)
		set |= SBX_LIM_CPUS;
	if (lim->pids)
		set |= SBX_LIM_PIDS;
	/* A bit without a value would be a limit silently not applied; a
	 * value without its bit, a limit applied but not reported. */
	if (set != lim->wanted)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "limits",
		    "limits_inconsistent", "limit flags 0x%x do not match the "
		    "limits given (0x%x)", lim->wanted, set);
	if (lim->memory_bytes > (unsigned long long)LLONG_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "memory",
		    "out_of_range", "memory limit %llu is too large",
		    lim->memory_bytes);
	/* Above PID_MAX_LIMIT the kernel refuses the write, which would
	 * read as "no cgroup here" instead of a bad argument. */
	if (lim->pids > CG_PIDS_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "pids",
		    "out_of_range", "pids limit %llu is above %llu", lim->pids,
		    CG_PIDS_MAX);
	/* The kernel's quota floor is 1 ms per 100 ms period. The test is
	 * written so that NaN fails it too. */
	if ((set & SBX_LIM_CPUS) && !(lim->cpus * (double)CG_PERIOD_US >=
	    (double)CG_QUOTA_MIN_US && lim->cpus <= 65536.0))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "cpus",
		    "out_of_range", "cpus must be between 0.01 and 65536");
	return 0;
}

int
sbx_cgroup_create_at(const char *root_v2, const char *root_v1,
    const char *name, const struct sbx_limits *lim, struct sbx_cgroup *cg,
    struct sbx_error *e)
{
	struct procinfo	 pi = PROCINFO_INIT;
	const char	*env;
	int		 r;

	sbx_cg_init(cg);
	/* The pid in the name is how sbx_cgroup_gc tells a live run from a
	 * stale one: it must be the supervisor's, which outlives the run. */
	if (sbx_cg_name_pid(name, NULL) != (long)getpid())
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name", "cgroup name `%s` is not "
		    "sbx-%ld-[a-z0-9-]+", name, (long)getpid());
	if (sbx_cg_check_limits(lim, e) == -1)
		return -1;
	snprintf(cg->name_, sizeof(cg->name_), "%s", name);
	if ((env = sbx_cg_env_root()) != NULL) {
		if (env[0] != '/')
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "SBX_CGROUP_ROOT", "absolute", "SBX_CGROUP_ROOT "
			    "must be an absolute path");
		root_v2 = root_v1 = env;
	}
	r = sbx_cg2_try(&pi, root_v2, name, lim, cg, e);
	if (r == 0)
		r = sbx_cg1_try(&pi, root_v1, name, lim, cg, e);
	sbx_cg_procinfo_release(&pi);
	if (r != 0)
		return r == 1 ? 0 : -1;
	sbx_error_set(e, SBX_K_UNAVAILABLE, "limits", "cgroup_unavailable",
	    "no usable cgroup for this run: %s", cg->why);
	sbx_error_hint(e, "%s", CG_HINT);
	return 0;
}

int
sbx_cgroup_create(const char *name, const struct sbx_limits *lim,
    struct sbx_cgroup *cg, struct sbx_error *e)
{
	return sbx_cgroup_create_at(NULL, NULL, name, lim, cg, e);
}

/* Only write(2): this runs in a forked child of a possibly threaded
 * parent. "0" is the writer itself, which needs no pid formatting. */
int
sbx_cgroup_enter(const struct sbx_cgroup *cg)
{
	ssize_t	 r;
	int	 i;

	if (cg->placed_)
		return 0;
	for (i = 0; i < cg->nprocs; i++) {
		while ((r = write(cg->procs_fd[i], "0", 1)) == -1 &&
		    errno == EINTR)
			;
		if (r != 1)
			return -1;
	}
	return 0;
}

int
sbx_cgroup_places(struct sbx_cgroup *cg)
{
	cg->placed_ = 0;
	return cg->backend == SBX_CG_V2 && cg->v2_fd_ >= 0;
}

pid_t
sbx_cgroup_fork(struct sbx_cgroup *cg)
{
	pid_t	 pid;
	int	 into;

	cg->placed_ = 0;
	if (cg->backend == SBX_CG_V2 && cg->v2_fd_ >= 0) {
		/* A session's processes go to its leaf (sbx_cgroup_leaf). */
		into = cg->v2_place_fd_ >= 0 ? cg->v2_place_fd_ : cg->v2_fd_;
		cg->placed_ = 1;
		if ((pid = sbx_cg2_clone_into(into)) != -1)
			return pid;
		cg->placed_ = 0;
	}
	return fork();
}

/* Every distinct directory of the run, for draining. */
static int
run_dirs(const struct sbx_cgroup *cg, int *fds)
{
	int	 i, n = 0;

	if (cg->backend == SBX_CG_V2)
		fds[n++] = cg->v2_fd_;
	else if (cg->backend == SBX_CG_V1)
		for (i = 0; i < SBX_CG1_N; i++)
			if (cg->v1_fd_[i] != -1 &&
			    !(cg->v1_alias_ & (1u << i)))
				fds[n++] = cg->v1_fd_[i];
	return n;
}

int
sbx_cgroup_kill(struct sbx_cgroup *cg)
{
	int	 fds[SBX_CG1_N + 1], n, rc = 0;

	if (!cg->inited_ || cg->backend == SBX_CG_NONE)
		return 0;
	if (cg->backend == SBX_CG_V2)
		rc = sbx_cg_kill_dir(cg->v2_fd_);
	else if (cg->v1_fd_[SBX_CG1_FREEZER] != -1)
		rc = sbx_cg_kill_dir(cg->v1_fd_[SBX_CG1_FREEZER]);
	n = run_dirs(cg, fds);
	if (sbx_cg_drain(fds, n, sbx_cg_now_ms() + CG_DRAIN_MS) == -1)
		rc = -1;
	return rc;
}

int
sbx_cgroup_stats(const struct sbx_cgroup *cg, struct sbx_cg_stats *st)
{
	unsigned long long v;
	int		 fd;

	memset(st, 0, sizeof(*st));
	if (!cg->inited_ || cg->backend == SBX_CG_NONE)
		return 0;
	if (cg->backend == SBX_CG_V2) {
		fd = cg->v2_fd_;
		st->have_oom = sbx_cg_number(fd, "memory.events", "oom_kill",
		    &st->oom_kills);
		st->have_pids_events = sbx_cg_number(fd, "pids.events", "max",
		    &st->pids_max_events);
		st->have_cpu = sbx_cg_number(fd, "cpu.stat", "usage_usec",
		    &st->cpu_usage_usec);
		st->have_peak = sbx_cg_number(fd, "memory.peak", NULL,
		    &st->memory_peak);
		return 0;
	}
	if ((fd = cg->v1_fd_[SBX_CG1_MEMORY]) != -1) {
		/* oom_kill is in memory.oom_control since 4.13. */
		st->have_oom = sbx_cg_number(fd, "memory.oom_control",
		    "oom_kill", &st->oom_kills);
		st->have_failcnt = sbx_cg_number(fd, "memory.failcnt", NULL,
		    &st->memory_failcnt);
		st->have_peak = sbx_cg_number(fd, "memory.max_usage_in_bytes",
		    NULL, &st->memory_peak);
	}
	if ((fd = cg->v1_fd_[SBX_CG1_PIDS]) != -1)
		st->have_pids_events = sbx_cg_number(fd, "pids.events", "max",
		    &st->pids_max_events);
	fd = cg->v1_fd_[SBX_CG1_CPUACCT];
	if (fd == -1)
		fd = cg->v1_fd_[SBX_CG1_CPU];
	if (fd != -1 && sbx_cg_number(fd, "cpuacct.usage", NULL, &v)) {
		st->cpu_usage_usec = v / 1000;
		st->have_cpu = 1;
	}
	return 0;
}

int
sbx_cgroup_destroy(struct sbx_cgroup *cg, struct sbx_error *e)
{
	int		 fds[SBX_CG1_N + 1], n, i, rc = 0;
	long long	 deadline = sbx_cg_now_ms() + CG_DESTROY_MS;

	if (!cg->inited_)
		return 0;
	/* Drained once more, for longer, only if the kill's own drain
	 * found the run's cgroups still occupied when its time was up. */
	if (cg->backend != SBX_CG_NONE && sbx_cgroup_kill(cg) == -1) {
		n = run_dirs(cg, fds);
		(void)sbx_cg_drain(fds, n, deadline);
	}
	for (i = 0; i < SBX_CG1_N; i++)
		sbx_cg_close_fd(&cg->procs_fd[i]);
	cg->nprocs = 0;
	sbx_cg_close_fd(&cg->v2_place_fd_);
	if (cg->backend == SBX_CG_V2) {
		sbx_cg_close_fd(&cg->v2_fd_);
		if (sbx_cg_remove_tree(cg->v2_parent_fd_, cg->name_, 0,
		    deadline) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot remove "
			    "cgroup %s", cg->v2);
		else if (sbx_cg2_self_restore(cg->v2_parent_fd_) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot return "
			    "from the leaf cgroup next to %s", cg->v2);
	} else if (cg->backend == SBX_CG_V1) {
		for (i = 0; i < SBX_CG1_N; i++) {
			sbx_cg_close_fd(&cg->v1_fd_[i]);
			if (cg->v1_parent_fd_[i] == -1 ||
			    (cg->v1_alias_ & (1u << i)))
				continue;
			if (sbx_cg_remove_tree(cg->v1_parent_fd_[i],
			    cg->name_, 0, deadline) == -1 && rc == 0)
				rc = sbx_error_sys(e, "cgroup_busy", "cannot "
				    "remove cgroup %s", cg->v1[i]);
		}
	}
	sbx_cg_close_fd(&cg->v2_fd_);
	sbx_cg_close_fd(&cg->v2_parent_fd_);
	free(cg->v2);
	for (i = 0; i < SBX_CG1_N; i++) {
		sbx_cg_close_fd(&cg->v1_fd_[i]);
		sbx_cg_close_fd(&cg->v1_parent_fd_[i]);
		free(cg->v1[i]);
	}
	memset(cg, 0, sizeof(*cg));
	return rc;
}

/* The supervisor's start time in the rest of a run's name,
 * "<random>-<start>" (sbx_cgroup_name); 0 when the name has none. */
static unsigned long long
name_start(const char *rest)
{
	const char	*p = strrchr(rest, '-');
	char		*end;
	unsigned long long v;

	if (p == NULL || p == rest || p[1] < '1' || p[1] > '9')
		return 0;
	errno = 0;
	v = strtoull(p + 1, &end, 10);
	return errno != 0 || *end != '\0' ? 0 : v;
}

/* Collect the stale runs in one parent, and beneath a live one (a warm
 * session's) the stale commands' cgroups when depth is 0. Returns how
 * many directories were removed, or -1. */
static int
gc_dir(int pfd, int depth)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	const char	*rest;
	size_t		 i;
	long		 pid;
	int		 fd, n, count = 0;

	if (sbx_cg_subdirs(pfd, &sub) == -1)
		return -1;
	for (i = 0; i < sub.n; i++) {
		if ((pid = sbx_cg_name_pid(sub.v[i], &rest)) <= 0 ||
		    (pid == (long)getpid() && depth > 0))
			continue;
		/* Is the supervisor still running?  Not only whether its
		 * pid is: a supervisor killed with -9 stays a zombie until
		 * its parent reaps it (kill(pid, 0) succeeds on a zombie,
		 * and a parent that never waits kept such runs forever),
		 * and by the time gc runs the pid may name a later process
		 * (the start time in the name tells them apart; names
		 * without it, made before it was there, go by pid and
		 * state).  What /proc cannot tell (EPERM, hidepid) counts
		 * as running: we leak a directory rather than kill a live
		 * run. Runs go beneath their supervisor's own cgroup, so
		 * the supervisors sharing a parent normally share our pid
		 * namespace too; one in another pid namespace but the same
		 * cgroup would look dead here (use a cgroup per pid
		 * namespace). */
		if (pid == (long)getpid() ||
		    sbx_proc_running((pid_t)pid, name_start(rest))) {
			/* A live session's cgroup holds one cgroup per
			 * command, named after the command's client: one
			 * killed with -9 left its own (empty: pid 1 killed
			 * the command when the client's connection ended). */
			if (depth > 0 || strcmp(rest, "self") == 0 ||
			    (fd = openat(pfd, sub.v[i],
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC)) == -1)
				continue;
			if ((n = gc_dir(fd, depth + 1)) > 0)
				count += n;
			close(fd);
			continue;
		}
		if (strcmp(rest, "self") == 0) {
			/* A dead supervisor's own leaf: empty unless it left
			 * daemons behind, which are not sandbox processes
			 * and are never killed here. */
			if (unlinkat(pfd, sub.v[i], AT_REMOVEDIR) == 0)
				count++;
			continue;
		}
		fd = openat(pfd, sub.v[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1)
			continue;
		(void)sbx_cg_kill_dir(fd);
		(void)sbx_cg_drain(&fd, 1, sbx_cg_now_ms() + CG_DRAIN_MS);
		close(fd);
		if (sbx_cg_remove_tree(pfd, sub.v[i], 0, sbx_cg_now_ms() +
		    CG_DESTROY_MS) == 0)
			count++;
	}
	sbx_strv_release(&sub);
	return count;
}

int
sbx_cg_gc_parent(int pfd)
{
	return gc_dir(pfd, 0);
}

int
sbx_cgroup_gc_at(const char *root_v2, const char *root_v1,
    struct sbx_error *e)
{
	struct procinfo		 pi = PROCINFO_INIT;
	struct sbx_cgroup	*cg;
	const char		*env;
	int			 count;

	if ((env = sbx_cg_env_root()) != NULL) {
		if (env[0] != '/')
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "SBX_CGROUP_ROOT", "absolute", "SBX_CGROUP_ROOT "
			    "must be an absolute path");
		root_v2 = root_v1 = env;
	}
	/* find_parent reports through a cgroup's why; this one is thrown
	 * away (gc has nothing to report about roots it cannot use). */
	if ((cg = calloc(1, sizeof(*cg))) == NULL)
		return sbx_error_sys(e, "nomem", "cgroup gc");
	count = sbx_cg2_gc(&pi, root_v2, cg);
	count += sbx_cg1_gc(&pi, root_v1, cg);
	sbx_cg_procinfo_release(&pi);
	free(cg);
	return count;
}

int
sbx_cgroup_gc(struct sbx_error *e)
{
	return sbx_cgroup_gc_at(NULL, NULL, e);
}

