/* cgroup.c: per-run cgroups (v2 first, v1 as the fallback).
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
#include "fsutil.h"

#define CG_PERIOD_US		100000ULL
#define CG_QUOTA_MIN_US		1000ULL		/* the kernel's minimum */
#define CG_PIDS_MAX		4194304ULL	/* PID_MAX_LIMIT, 64-bit */
#define CG_FILE_CAP		(64 * 1024)
#define CG_PROCS_CAP		(8 * 1024 * 1024)
#define CG_DESTROY_MS		5000
#define CG_DRAIN_MS		1000
#define CG_FREEZE_MS		1000
#define CG_MAX_DEPTH		32
#define CG_DEFAULT_ROOT		"/sys/fs/cgroup"
#define CG_HYBRID_V2		"/sys/fs/cgroup/unified"
#define CG_HINT \
	"on cgroup v2, run sbx in a delegated cgroup of its own (for example " \
	"`systemd-run --user --scope -p Delegate=yes sbx ...`) or set " \
	"cgroup_v2_root to a delegated cgroup with +memory +pids +cpu in its " \
	"cgroup.subtree_control; on cgroup v1, run as root"

/* The v1 hierarchies we join, with a file that proves the controller is
 * really attached to the hierarchy (present in non-root cgroups only). */
static const struct {
	const char	*ctl;
	const char	*probe;
} v1_tab[SBX_CG1_N] = {
	[SBX_CG1_MEMORY] = { "memory", "memory.limit_in_bytes" },
	[SBX_CG1_PIDS] = { "pids", "pids.max" },
	[SBX_CG1_CPU] = { "cpu", "cpu.cfs_quota_us" },
	[SBX_CG1_FREEZER] = { "freezer", "freezer.state" },
	[SBX_CG1_CPUACCT] = { "cpuacct", "cpuacct.usage" },
};

/* The v2 controllers each limit needs. */
static const struct {
	unsigned	 lim;
	const char	*ctl;
} v2_tab[] = {
	{ SBX_LIM_MEMORY, "memory" },
	{ SBX_LIM_PIDS, "pids" },
	{ SBX_LIM_CPUS, "cpu" },
};
#define V2_NCTL		(sizeof(v2_tab) / sizeof(v2_tab[0]))

/*
 * Process-wide: this process moved itself into <parent>/sbx-<pid>-self to
 * obey cgroup v2's no-internal-processes rule (see self_move). It is state
 * of the process, not of one run, since several runs share the leaf; pid
 * makes a forked child (which inherits this memory) see it as not its own.
 */
static struct {
	pid_t		 pid;		/* getpid() of the mover, 0: none */
	unsigned	 enabled;	/* SBX_LIM_* controllers we enabled */
	dev_t		 dev;		/* the parent directory */
	ino_t		 ino;
} cg_self;

/* Where a run's cgroup goes in one hierarchy. */
struct where {
	int		 fd;		/* the parent directory */
	char		 path[PATH_MAX];
	int		 own;		/* it is the caller's own cgroup */
	int		 leaf;		/* we sit in <parent>/sbx-<pid>-self */
};

static long long
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
sleep_ms(long ms)
{
	struct timespec	 ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

static void
close_fd(int *fd)
{
	if (*fd != -1) {
		close(*fd);
		*fd = -1;
	}
}

__attribute__((format(printf, 2, 3))) static void
why_add(struct sbx_cgroup *cg, const char *fmt, ...)
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

static int
has_file(int dirfd, const char *name)
{
	struct stat	 st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int
is_fs(int fd, unsigned long magic)
{
	struct statfs	 sf;

	return fstatfs(fd, &sf) == 0 && (unsigned long)sf.f_type == magic;
}

/* Write one value to a control file, in one write(2) as cgroupfs wants. */
static int
cg_write(int dirfd, const char *file, const char *val)
{
	int	 fd, rc, saved;

	if ((fd = openat(dirfd, file, O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	rc = sbx_write_all(fd, val, strlen(val));
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

static int
cg_read(int dirfd, const char *file, struct sbx_buf *b, size_t cap)
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
static int
cg_number(int dirfd, const char *file, const char *key,
    unsigned long long *out)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*line, *v;
	char		*end;
	size_t		 klen = key ? strlen(key) : 0;
	int		 found = 0;

	if (cg_read(dirfd, file, &b, CG_FILE_CAP) == -1) {
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
static int
word_in(const char *list, const char *w)
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
static long
name_pid(const char *name, const char **restp)
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

static void
self_leaf_name(char *buf, size_t len)
{
	snprintf(buf, len, "sbx-%ld-self", (long)getpid());
}

/* /proc/self/cgroup and /proc/self/mountinfo, read at most once per
 * create or gc (tens of microseconds each, once per hierarchy otherwise). */
struct procinfo {
	struct sbx_buf	 cgroup, mountinfo;
	int		 have_cgroup, have_mountinfo;	/* 1 read, -1 failed */
};

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

static void
procinfo_release(struct procinfo *pi)
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
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", fd);
	if (fstat(fd, &st) == -1 ||
	    (n = readlink(lnk, path, sizeof(path) - 1)) <= 0)
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
static int
find_parent(struct procinfo *pi, int top, const char *toppath,
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
		why_add(cg, "%s: %s", label, r == 0 ?
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
		why_add(cg, "%s: own cgroup %s is outside the mounted part %s",
		    label, own, mroot);
		return -1;
	}
	while (*rel == '/')
		rel++;
	memmove(own, rel, strlen(rel) + 1);
	/* Our own leaf from an earlier run (v2 only): the runs go next to
	 * it, in the parent whose controllers we enabled. */
	self_leaf_name(leaf, sizeof(leaf));
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
		w->fd = sbx_open_beneath(top, own, O_RDONLY | O_DIRECTORY,
		    &scratch);
	if (w->fd == -1) {
		why_add(cg, "%s: cannot open own cgroup %s/%s: %s", label,
		    toppath, own, strerror(errno));
		return -1;
	}
	snprintf(w->path, sizeof(w->path), "%s%s%s", toppath,
	    own[0] ? "/" : "", own);
	return 0;
}

/* The cgroup2 mount: root, else /sys/fs/cgroup, else the hybrid layout's
 * /sys/fs/cgroup/unified. */
static int
open_v2_top(const char *root, char *path, size_t pathsz,
    struct sbx_cgroup *cg)
{
	const char	*cand[2];
	int		 i, n, fd;

	n = 0;
	if (root != NULL)
		cand[n++] = root;
	else {
		cand[n++] = CG_DEFAULT_ROOT;
		cand[n++] = CG_HYBRID_V2;
	}
	for (i = 0; i < n; i++) {
		fd = open(cand[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd == -1)
			continue;
		/* Only the kernel's cgroupfs enforces anything; a directory
		 * that merely looks like one must not make us claim limits. */
		if (is_fs(fd, CGROUP2_SUPER_MAGIC)) {
			snprintf(path, pathsz, "%s", cand[i]);
			return fd;
		}
		close(fd);
	}
	why_add(cg, "cgroup2: no cgroup2 file system at %s", root ? root :
	    CG_DEFAULT_ROOT " or " CG_HYBRID_V2);
	return -1;
}

/* Open one v1 hierarchy <top>/<ctl>. */
static int
open_v1_hier(int top, const char *toppath, const char *ctl, char *path,
    size_t pathsz)
{
	char	 target[NAME_MAX + 1];
	ssize_t	 n;
	int	 fd, i;

	fd = openat(top, ctl, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && (errno == ELOOP || errno == ENOTDIR)) {
		/* systemd links cpu -> cpu,cpuacct in the root-owned tmpfs
		 * of /sys/fs/cgroup. Follow such a link only to a sibling
		 * name, never to a path, so it can only lead to another
		 * hierarchy of the same directory. */
		n = readlinkat(top, ctl, target, sizeof(target) - 1);
		if (n <= 0)
			return -1;
		target[n] = '\0';
		for (i = 0; i < n; i++)
			if (!((target[i] >= 'a' && target[i] <= 'z') ||
			    target[i] == ',' || target[i] == '_'))
				return -1;
		fd = openat(top, target, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		ctl = target;
	}
	if (fd == -1)
		return -1;
	if (!is_fs(fd, CGROUP_SUPER_MAGIC)) {
		close(fd);
		errno = EMEDIUMTYPE;
		return -1;
	}
	snprintf(path, pathsz, "%s/%s", toppath, ctl);
	return fd;
}

static const char *
env_root(void)
{
	const char	*s = secure_getenv("SBX_CGROUP_ROOT");

	return s != NULL && *s != '\0' ? s : NULL;
}

/* ---- killing ---------------------------------------------------------- */

struct pidv {
	pid_t	*v;
	size_t	 n, cap;
};

static int
read_pids(int dirfd, struct pidv *pv)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*p;
	char		*end;
	pid_t		*nv;
	long		 pid;

	pv->n = 0;
	if (cg_read(dirfd, "cgroup.procs", &b, CG_PROCS_CAP) == -1) {
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

	if (read_pids(dirfd, &a) == -1)
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
	if (read_pids(dirfd, &b) == -1)
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
static int
subdirs(int dirfd, struct sbx_strv *out)
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
	if (depth >= CG_MAX_DEPTH || subdirs(dirfd, &sub) == -1) {
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
	long long	 deadline = now_ms() + CG_FREEZE_MS;
	int		 v1;

	if (has_file(dirfd, "cgroup.freeze"))
		v1 = 0;
	else if (has_file(dirfd, "freezer.state"))
		v1 = 1;
	else
		return 0;
	if (!on) {
		(void)cg_write(dirfd, v1 ? "freezer.state" : "cgroup.freeze",
		    v1 ? "THAWED" : "0");
		return 1;
	}
	if (cg_write(dirfd, v1 ? "freezer.state" : "cgroup.freeze",
	    v1 ? "FROZEN" : "1") == -1)
		return 0;
	/* Freezing is asynchronous; a task in uninterruptible sleep can hold
	 * it in FREEZING for long, so wait a bounded time and go on. */
	while (now_ms() < deadline) {
		if (v1) {
			if (cg_read(dirfd, "freezer.state", &b, 64) == 0 &&
			    strncmp(b.p, "FROZEN", 6) == 0)
				break;
		} else if (cg_number(dirfd, "cgroup.events", "frozen", &v) &&
		    v == 1)
			break;
		sleep_ms(1);
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
static int
kill_dir(int dirfd)
{
	int	 frozen, n;

	if (has_file(dirfd, "cgroup.kill") &&
	    cg_write(dirfd, "cgroup.kill", "1") == 0)
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
static int
drain(const int *fds, int nfd, long long deadline)
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
		if (now_ms() >= deadline)
			return -1;
		sleep_ms(1);
	}
}

/* rmdir parent/name and the cgroups beneath it, retrying while the kernel
 * still sees the cgroup as busy (exiting tasks, dying css). */
static int
remove_tree(int pfd, const char *name, int depth, long long deadline)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	size_t		 i;
	int		 fd, rc = 0;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	/* Children first: a sandbox that reached cgroupfs may have made
	 * some, and a cgroup with children cannot be removed. */
	if (depth < CG_MAX_DEPTH && subdirs(fd, &sub) == 0)
		for (i = 0; i < sub.n; i++)
			if (remove_tree(fd, sub.v[i], depth + 1,
			    deadline) == -1)
				rc = -1;
	sbx_strv_release(&sub);
	close(fd);
	for (;;) {
		if (unlinkat(pfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
			return rc;
		if (errno != EBUSY || now_ms() >= deadline)
			return -1;
		sleep_ms(10);
	}
}

/* ---- v2 -------------------------------------------------------------- */

static void
ctl_list(char *buf, size_t len, unsigned mask, char sign)
{
	size_t	 i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < V2_NCTL; i++)
		if (mask & v2_tab[i].lim)
			n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
			    "%s%.*s%s", n ? " " : "", sign ? 1 : 0, &sign,
			    v2_tab[i].ctl);
}

/*
 * Undo self_move once no run uses the parent any more: disable what we
 * enabled, move everything in the leaf (us and what we forked while in
 * it) back to the parent, remove the leaf. Leaves things as they are when
 * another run still lives in the parent. Returns -1 if the leaf stayed.
 */
static int
self_restore(int pfd)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	struct pidv	 pv = { NULL, 0, 0 };
	struct stat	 st;
	char		 leaf[64], val[64];
	size_t		 i;
	int		 lfd, tries, rc = -1;

	if (cg_self.pid != getpid() || fstat(pfd, &st) == -1 ||
	    st.st_dev != cg_self.dev || st.st_ino != cg_self.ino)
		return 0;
	self_leaf_name(leaf, sizeof(leaf));
	if (subdirs(pfd, &sub) == -1)
		return -1;
	for (i = 0; i < sub.n; i++)
		if (strcmp(sub.v[i], leaf) != 0) {
			sbx_strv_release(&sub);
			return 0;
		}
	sbx_strv_release(&sub);
	ctl_list(val, sizeof(val), cg_self.enabled, '-');
	if (val[0] != '\0' &&
	    cg_write(pfd, "cgroup.subtree_control", val) == -1)
		return -1;
	cg_self.enabled = 0;
	lfd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (lfd == -1)
		return -1;
	for (tries = 0; tries < 100; tries++) {
		if (read_pids(lfd, &pv) == -1 || pv.n == 0)
			break;
		for (i = 0; i < pv.n; i++) {
			snprintf(val, sizeof(val), "%ld", (long)pv.v[i]);
			(void)cg_write(pfd, "cgroup.procs", val);
		}
	}
	close(lfd);
	free(pv.v);
	if (unlinkat(pfd, leaf, AT_REMOVEDIR) == 0) {
		cg_self.pid = 0;
		rc = 0;
	}
	return rc;
}

/*
 * cgroup v2's "no internal processes" rule: a cgroup that holds processes
 * (ours does: we are in it) cannot enable memory for its children. The
 * documented way out for a delegated cgroup (systemd's cgroup delegation
 * notes and DelegateSubgroup=, nsjail's NSJAIL_SELF.<pid>) is for the
 * manager to move itself into a leaf below and enable the controllers in
 * the now empty parent. We do it only when we are the only process there:
 * moving anybody else (the user's shell, a terminal) would change
 * processes that are not ours to manage. Returns 0, or -1 (why given).
 */
static int
self_move(struct where *w, const char *enable, unsigned mask,
    struct sbx_cgroup *cg)
{
	struct pidv	 pv = { NULL, 0, 0 };
	struct stat	 st;
	char		 leaf[64];
	int		 lfd, made = 0;

	if (read_pids(w->fd, &pv) == -1 || pv.n != 1 || pv.v[0] != getpid()) {
		why_add(cg, "cgroup2: own cgroup %s holds other processes, so "
		    "it cannot pass memory, pids or cpu to a child", w->path);
		free(pv.v);
		return -1;
	}
	free(pv.v);
	self_leaf_name(leaf, sizeof(leaf));
	if (mkdirat(w->fd, leaf, 0755) == 0)
		made = 1;
	else if (errno != EEXIST)
		goto fail;
	lfd = openat(w->fd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (lfd == -1)
		goto fail;
	if (cg_write(lfd, "cgroup.procs", "0") == -1) {
		close(lfd);
		goto fail;
	}
	close(lfd);
	if (cg_write(w->fd, "cgroup.subtree_control", enable) == -1) {
		/* Somebody else came in meanwhile: put things back. */
		(void)cg_write(w->fd, "cgroup.procs", "0");
		goto fail;
	}
	if (fstat(w->fd, &st) == 0) {
		cg_self.pid = getpid();
		cg_self.enabled |= mask;
		cg_self.dev = st.st_dev;
		cg_self.ino = st.st_ino;
	}
	w->own = 0;
	w->leaf = 1;
	return 0;
fail:
	why_add(cg, "cgroup2: cannot move into leaf %s/%s to enable "
	    "controllers: %s", w->path, leaf, strerror(errno));
	if (made)
		(void)unlinkat(w->fd, leaf, AT_REMOVEDIR);
	return -1;
}

/* Make the controllers the limits need available to children of w. */
static int
v2_enable(struct where *w, unsigned need, struct sbx_cgroup *cg)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 enable[64];
	unsigned	 missing = 0;
	size_t		 i;
	struct stat	 st;

	if (need == 0)
		return 0;
	if (cg_read(w->fd, "cgroup.controllers", &b, CG_FILE_CAP) == -1) {
		why_add(cg, "cgroup2: cannot read %s/cgroup.controllers: %s",
		    w->path, strerror(errno));
		goto fail;
	}
	for (i = 0; i < V2_NCTL; i++)
		if ((need & v2_tab[i].lim) && !word_in(b.p, v2_tab[i].ctl))
			missing |= v2_tab[i].lim;
	if (missing) {
		ctl_list(enable, sizeof(enable), missing, '\0');
		why_add(cg, "cgroup2: controller(s) %s not delegated to %s",
		    enable, w->path);
		goto fail;
	}
	if (cg_read(w->fd, "cgroup.subtree_control", &b, CG_FILE_CAP) == -1) {
		why_add(cg, "cgroup2: cannot read %s/cgroup.subtree_control: "
		    "%s", w->path, strerror(errno));
		goto fail;
	}
	for (i = 0; i < V2_NCTL; i++)
		if ((need & v2_tab[i].lim) && !word_in(b.p, v2_tab[i].ctl))
			missing |= v2_tab[i].lim;
	sbx_buf_release(&b);
	if (missing == 0)
		return 0;
	ctl_list(enable, sizeof(enable), missing, '+');
	if (cg_write(w->fd, "cgroup.subtree_control", enable) == 0) {
		if (w->leaf && fstat(w->fd, &st) == 0) {
			cg_self.pid = getpid();
			cg_self.enabled |= missing;
			cg_self.dev = st.st_dev;
			cg_self.ino = st.st_ino;
		}
		return 0;
	}
	if (errno == EBUSY && w->own)
		return self_move(w, enable, missing, cg);
	why_add(cg, "cgroup2: cannot enable %s in %s/cgroup.subtree_control: "
	    "%s", enable, w->path, strerror(errno));
	return -1;
fail:
	sbx_buf_release(&b);
	return -1;
}

/* cpus as a CFS quota in microseconds per CG_PERIOD_US, rounded. */
static unsigned long long
cpu_quota(const struct sbx_limits *lim)
{
	return (unsigned long long)(lim->cpus * (double)CG_PERIOD_US + 0.5);
}

/* mkdir errors that mean "not here" rather than "something is wrong". */
static int
mkdir_unusable(int err)
{
	return err == EACCES || err == EPERM || err == EROFS ||
	    err == ENOSPC || err == EAGAIN || err == ENOENT || err == EDQUOT;
}

/* 1: v2 in place; 0: unusable (why given, nothing left); -1: error. */
static int
try_v2(struct procinfo *pi, const char *root, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg, struct sbx_error *e)
{
	struct where	 w = { -1, "", 0, 0 };
	char		 top_path[PATH_MAX], val[64];
	unsigned	 need = 0, enforced = 0;
	size_t		 i;
	int		 top, dfd = -1, rc = 0;

	if ((top = open_v2_top(root, top_path, sizeof(top_path), cg)) == -1)
		return 0;
	if (find_parent(pi, top, top_path, NULL, &w, cg) == -1)
		goto out;
	for (i = 0; i < V2_NCTL; i++)
		if (lim->wanted & v2_tab[i].lim)
			need |= v2_tab[i].lim;
	if (v2_enable(&w, need, cg) == -1)
		goto undo;
	if (mkdirat(w.fd, name, 0755) == -1) {
		if (errno == EEXIST) {
			rc = sbx_error_set(e, SBX_K_EXECUTION_ERROR, "name",
			    "cgroup_exists", "cgroup %s/%s already exists",
			    w.path, name);
			goto undo;
		}
		if (!mkdir_unusable(errno)) {
			rc = sbx_error_sys(e, "cgroup_failed", "cannot create "
			    "cgroup %s/%s", w.path, name);
			goto undo;
		}
		why_add(cg, "cgroup2: cannot create %s/%s: %s", w.path, name,
		    strerror(errno));
		goto undo;
	}
	dfd = openat(w.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1)
		goto limits_failed;
	if (lim->wanted & SBX_LIM_MEMORY) {
		snprintf(val, sizeof(val), "%llu", lim->memory_bytes);
		if (cg_write(dfd, "memory.max", val) == -1)
			goto limits_failed;
		/* Without this the limit bounds RAM only and the rest goes
		 * to swap, slowly, for the whole machine. Absent when the
		 * kernel does no swap accounting (then there is none to
		 * cap and swap_limited says so). */
		if (has_file(dfd, "memory.swap.max")) {
			if (cg_write(dfd, "memory.swap.max", "0") == -1)
				goto limits_failed;
			cg->swap_limited = 1;
		}
		enforced |= SBX_LIM_MEMORY;
	}
	if (lim->wanted & SBX_LIM_PIDS) {
		snprintf(val, sizeof(val), "%llu", lim->pids);
		if (cg_write(dfd, "pids.max", val) == -1)
			goto limits_failed;
		enforced |= SBX_LIM_PIDS;
	}
	if (lim->wanted & SBX_LIM_CPUS) {
		snprintf(val, sizeof(val), "%llu %llu", cpu_quota(lim),
		    CG_PERIOD_US);
		if (cg_write(dfd, "cpu.max", val) == -1)
			goto limits_failed;
		enforced |= SBX_LIM_CPUS;
	}
	cg->procs_fd[0] = openat(dfd, "cgroup.procs", O_WRONLY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (cg->procs_fd[0] == -1)
		goto limits_failed;
	if (asprintf(&cg->v2, "%s/%s", w.path, name) == -1) {
		cg->v2 = NULL;
		close_fd(&cg->procs_fd[0]);
		rc = sbx_error_sys(e, "nomem", "cgroup");
		goto rmdir;
	}
	cg->nprocs = 1;
	cg->v2_fd_ = dfd;
	cg->v2_parent_fd_ = w.fd;
	cg->enforced = enforced;
	cg->backend = SBX_CG_V2;
	close(top);
	return 1;
limits_failed:
	why_add(cg, "cgroup2: cannot set up %s/%s: %s", w.path, name,
	    strerror(errno));
rmdir:
	close_fd(&dfd);
	cg->swap_limited = 0;
	if (remove_tree(w.fd, name, 0, now_ms() + CG_DESTROY_MS) == -1)
		rc = sbx_error_sys(e, "cgroup_busy", "cannot remove cgroup "
		    "%s/%s", w.path, name);
undo:
	(void)self_restore(w.fd);
out:
	close_fd(&w.fd);
	close(top);
	return rc;
}

/* ---- v1 -------------------------------------------------------------- */

static int
v1_undo(struct sbx_cgroup *cg, const char *name, struct sbx_error *e)
{
	int	 i, rc = 0;

	for (i = 0; i < SBX_CG1_N; i++) {
		close_fd(&cg->v1_fd_[i]);
		if (cg->v1_parent_fd_[i] != -1 &&
		    !(cg->v1_alias_ & (1u << i)) &&
		    remove_tree(cg->v1_parent_fd_[i], name, 0,
		    now_ms() + CG_DESTROY_MS) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot remove "
			    "cgroup %s", cg->v1[i] ? cg->v1[i] : name);
		close_fd(&cg->v1_parent_fd_[i]);
		free(cg->v1[i]);
		cg->v1[i] = NULL;
	}
	cg->v1_alias_ = 0;
	cg->swap_limited = 0;
	return rc;
}

/* 1: v1 in place; 0: unusable (why given, nothing left); -1: error. */
static int
try_v1(struct procinfo *pi, const char *root, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg, struct sbx_error *e)
{
	struct where	 w;
	struct stat	 st;
	char		 hpath[PATH_MAX], val[64];
	dev_t		 dev[SBX_CG1_N];
	unsigned	 have = 0, need = 0, enforced = 0;
	const char	*toppath = root ? root : CG_DEFAULT_ROOT;
	int		 top, h, i, j, dfd;

	if ((top = open(toppath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		why_add(cg, "cgroup1: cannot open %s: %s", toppath,
		    strerror(errno));
		return 0;
	}
	for (i = 0; i < SBX_CG1_N; i++) {
		/* Every hierarchy costs a mkdir and an rmdir per run: the
		 * cpu ones only when a CPU limit was asked for. */
		if ((i == SBX_CG1_CPU || i == SBX_CG1_CPUACCT) &&
		    !(lim->wanted & SBX_LIM_CPUS))
			continue;
		if ((h = open_v1_hier(top, toppath, v1_tab[i].ctl, hpath,
		    sizeof(hpath))) == -1) {
			why_add(cg, "cgroup1: no %s hierarchy at %s/%s",
			    v1_tab[i].ctl, toppath, v1_tab[i].ctl);
			continue;
		}
		if (fstat(h, &st) == -1) {
			close(h);
			continue;
		}
		dev[i] = st.st_dev;
		/* Co-mounted controllers (cpu,cpuacct) share one directory:
		 * create it once, use it for both. */
		for (j = 0; j < i; j++)
			if ((have & (1u << j)) && dev[j] == dev[i])
				break;
		if (j < i) {
			close(h);
			cg->v1_fd_[i] = fcntl(cg->v1_fd_[j], F_DUPFD_CLOEXEC,
			    3);
			if (cg->v1_fd_[i] != -1) {
				cg->v1_alias_ |= 1u << i;
				have |= 1u << i;
			}
			continue;
		}
		if (find_parent(pi, h, hpath, v1_tab[i].ctl, &w, cg) == -1) {
			close(h);
			continue;
		}
		close(h);
		if (mkdirat(w.fd, name, 0755) == -1) {
			if (errno == EEXIST || !mkdir_unusable(errno)) {
				if (errno == EEXIST)
					sbx_error_set(e, SBX_K_EXECUTION_ERROR,
					    "name", "cgroup_exists", "cgroup "
					    "%s/%s already exists", w.path,
					    name);
				else
					sbx_error_sys(e, "cgroup_failed",
					    "cannot create cgroup %s/%s",
					    w.path, name);
				close(w.fd);
				close(top);
				(void)v1_undo(cg, name, NULL);
				return -1;
			}
			why_add(cg, "cgroup1: cannot create %s/%s: %s", w.path,
			    name, strerror(errno));
			close(w.fd);
			continue;
		}
		cg->v1_parent_fd_[i] = w.fd;
		if (asprintf(&cg->v1[i], "%s/%s", w.path, name) == -1) {
			cg->v1[i] = NULL;
			close(top);
			(void)v1_undo(cg, name, NULL);
			return sbx_error_sys(e, "nomem", "cgroup");
		}
		dfd = openat(w.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (dfd == -1 || !has_file(dfd, v1_tab[i].probe)) {
			/* Not the controller we took it for (the probe file
			 * is missing): a name=... hierarchy, a fake. */
			why_add(cg, "cgroup1: %s is not a %s cgroup", cg->v1[i],
			    v1_tab[i].ctl);
			if (dfd != -1)
				close(dfd);
			if (unlinkat(w.fd, name, AT_REMOVEDIR) == -1) {
				close(top);
				(void)v1_undo(cg, name, NULL);
				return sbx_error_sys(e, "cgroup_busy", "cannot "
				    "remove cgroup %s/%s", w.path, name);
			}
			close_fd(&cg->v1_parent_fd_[i]);
			free(cg->v1[i]);
			cg->v1[i] = NULL;
			continue;
		}
		cg->v1_fd_[i] = dfd;
		have |= 1u << i;
	}
	close(top);
	if (lim->wanted & SBX_LIM_MEMORY)
		need |= 1u << SBX_CG1_MEMORY;
	if (lim->wanted & SBX_LIM_PIDS)
		need |= 1u << SBX_CG1_PIDS;
	if (lim->wanted & SBX_LIM_CPUS)
		need |= 1u << SBX_CG1_CPU;
	if ((have & need) != need || have == 0) {
		for (i = 0; i < SBX_CG1_N; i++)
			if ((need & ~have) & (1u << i))
				why_add(cg, "cgroup1: %s unusable",
				    v1_tab[i].ctl);
		if (have == 0)
			why_add(cg, "cgroup1: no hierarchy usable");
		return v1_undo(cg, name, e) == -1 ? -1 : 0;
	}
	if (lim->wanted & SBX_LIM_MEMORY) {
		dfd = cg->v1_fd_[SBX_CG1_MEMORY];
		snprintf(val, sizeof(val), "%llu", lim->memory_bytes);
		if (cg_write(dfd, "memory.limit_in_bytes", val) == -1)
			goto limits_failed;
		/* RAM plus swap, set to the same value: no swap at all.
		 * Absent without swap accounting (swapaccount=0). */
		if (has_file(dfd, "memory.memsw.limit_in_bytes")) {
			if (cg_write(dfd, "memory.memsw.limit_in_bytes",
			    val) == -1)
				goto limits_failed;
			cg->swap_limited = 1;
		}
		enforced |= SBX_LIM_MEMORY;
	}
	if (lim->wanted & SBX_LIM_PIDS) {
		snprintf(val, sizeof(val), "%llu", lim->pids);
		if (cg_write(cg->v1_fd_[SBX_CG1_PIDS], "pids.max", val) == -1)
			goto limits_failed;
		enforced |= SBX_LIM_PIDS;
	}
	if (lim->wanted & SBX_LIM_CPUS) {
		dfd = cg->v1_fd_[SBX_CG1_CPU];
		snprintf(val, sizeof(val), "%llu", cpu_quota(lim));
		if (cg_write(dfd, "cpu.cfs_period_us", "100000") == -1 ||
		    cg_write(dfd, "cpu.cfs_quota_us", val) == -1)
			goto limits_failed;
		enforced |= SBX_LIM_CPUS;
	}
	for (i = 0; i < SBX_CG1_N; i++) {
		if (!(have & (1u << i)) || (cg->v1_alias_ & (1u << i)))
			continue;
		cg->procs_fd[cg->nprocs] = openat(cg->v1_fd_[i], "cgroup.procs",
		    O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (cg->procs_fd[cg->nprocs] == -1)
			goto limits_failed;
		cg->nprocs++;
	}
	cg->enforced = enforced;
	cg->backend = SBX_CG_V1;
	return 1;
limits_failed:
	why_add(cg, "cgroup1: cannot set up %s: %s", name, strerror(errno));
	for (i = 0; i < cg->nprocs; i++)
		close_fd(&cg->procs_fd[i]);
	cg->nprocs = 0;
	return v1_undo(cg, name, e) == -1 ? -1 : 0;
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
	n = snprintf(buf, len, "sbx-%ld-%08x", (long)getpid(), r);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static void
cg_init(struct sbx_cgroup *cg)
{
	int	 i;

	memset(cg, 0, sizeof(*cg));
	cg->v2_fd_ = cg->v2_parent_fd_ = -1;
	for (i = 0; i < SBX_CG1_N; i++) {
		cg->procs_fd[i] = -1;
		cg->v1_fd_[i] = cg->v1_parent_fd_[i] = -1;
	}
	cg->inited_ = 1;
}

static int
check_limits(const struct sbx_limits *lim, struct sbx_error *e)
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

	cg_init(cg);
	/* The pid in the name is how sbx_cgroup_gc tells a live run from a
	 * stale one: it must be the supervisor's, which outlives the run. */
	if (name_pid(name, NULL) != (long)getpid())
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name", "cgroup name `%s` is not "
		    "sbx-%ld-[a-z0-9-]+", name, (long)getpid());
	if (check_limits(lim, e) == -1)
		return -1;
	snprintf(cg->name_, sizeof(cg->name_), "%s", name);
	if ((env = env_root()) != NULL) {
		if (env[0] != '/')
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "SBX_CGROUP_ROOT", "absolute", "SBX_CGROUP_ROOT "
			    "must be an absolute path");
		root_v2 = root_v1 = env;
	}
	r = try_v2(&pi, root_v2, name, lim, cg, e);
	if (r == 0)
		r = try_v1(&pi, root_v1, name, lim, cg, e);
	procinfo_release(&pi);
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

	for (i = 0; i < cg->nprocs; i++) {
		while ((r = write(cg->procs_fd[i], "0", 1)) == -1 &&
		    errno == EINTR)
			;
		if (r != 1)
			return -1;
	}
	return 0;
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
		rc = kill_dir(cg->v2_fd_);
	else if (cg->v1_fd_[SBX_CG1_FREEZER] != -1)
		rc = kill_dir(cg->v1_fd_[SBX_CG1_FREEZER]);
	n = run_dirs(cg, fds);
	if (drain(fds, n, now_ms() + CG_DRAIN_MS) == -1)
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
		st->have_oom = cg_number(fd, "memory.events", "oom_kill",
		    &st->oom_kills);
		st->have_pids_events = cg_number(fd, "pids.events", "max",
		    &st->pids_max_events);
		st->have_cpu = cg_number(fd, "cpu.stat", "usage_usec",
		    &st->cpu_usage_usec);
		st->have_peak = cg_number(fd, "memory.peak", NULL,
		    &st->memory_peak);
		return 0;
	}
	if ((fd = cg->v1_fd_[SBX_CG1_MEMORY]) != -1) {
		/* oom_kill is in memory.oom_control since 4.13. */
		st->have_oom = cg_number(fd, "memory.oom_control", "oom_kill",
		    &st->oom_kills);
		st->have_failcnt = cg_number(fd, "memory.failcnt", NULL,
		    &st->memory_failcnt);
		st->have_peak = cg_number(fd, "memory.max_usage_in_bytes",
		    NULL, &st->memory_peak);
	}
	if ((fd = cg->v1_fd_[SBX_CG1_PIDS]) != -1)
		st->have_pids_events = cg_number(fd, "pids.events", "max",
		    &st->pids_max_events);
	fd = cg->v1_fd_[SBX_CG1_CPUACCT];
	if (fd == -1)
		fd = cg->v1_fd_[SBX_CG1_CPU];
	if (fd != -1 && cg_number(fd, "cpuacct.usage", NULL, &v)) {
		st->cpu_usage_usec = v / 1000;
		st->have_cpu = 1;
	}
	return 0;
}

int
sbx_cgroup_destroy(struct sbx_cgroup *cg, struct sbx_error *e)
{
	int		 fds[SBX_CG1_N + 1], n, i, rc = 0;
	long long	 deadline = now_ms() + CG_DESTROY_MS;

	if (!cg->inited_)
		return 0;
	if (cg->backend != SBX_CG_NONE) {
		(void)sbx_cgroup_kill(cg);
		n = run_dirs(cg, fds);
		(void)drain(fds, n, deadline);
	}
	for (i = 0; i < SBX_CG1_N; i++)
		close_fd(&cg->procs_fd[i]);
	cg->nprocs = 0;
	if (cg->backend == SBX_CG_V2) {
		close_fd(&cg->v2_fd_);
		if (remove_tree(cg->v2_parent_fd_, cg->name_, 0,
		    deadline) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot remove "
			    "cgroup %s", cg->v2);
		else if (self_restore(cg->v2_parent_fd_) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot return "
			    "from the leaf cgroup next to %s", cg->v2);
	} else if (cg->backend == SBX_CG_V1) {
		for (i = 0; i < SBX_CG1_N; i++) {
			close_fd(&cg->v1_fd_[i]);
			if (cg->v1_parent_fd_[i] == -1 ||
			    (cg->v1_alias_ & (1u << i)))
				continue;
			if (remove_tree(cg->v1_parent_fd_[i], cg->name_, 0,
			    deadline) == -1 && rc == 0)
				rc = sbx_error_sys(e, "cgroup_busy", "cannot "
				    "remove cgroup %s", cg->v1[i]);
		}
	}
	close_fd(&cg->v2_fd_);
	close_fd(&cg->v2_parent_fd_);
	free(cg->v2);
	for (i = 0; i < SBX_CG1_N; i++) {
		close_fd(&cg->v1_fd_[i]);
		close_fd(&cg->v1_parent_fd_[i]);
		free(cg->v1[i]);
	}
	memset(cg, 0, sizeof(*cg));
	return rc;
}

/* Collect the stale runs in one parent. Returns how many directories were
 * removed, or -1. */
static int
gc_parent(int pfd)
{
	struct sbx_strv	 sub = SBX_STRV_INIT;
	const char	*rest;
	size_t		 i;
	long		 pid;
	int		 fd, count = 0;

	if (subdirs(pfd, &sub) == -1)
		return -1;
	for (i = 0; i < sub.n; i++) {
		if ((pid = name_pid(sub.v[i], &rest)) <= 0 ||
		    pid == (long)getpid())
			continue;
		/* Alive, or at least its pid is: it may be another process
		 * by now, but then we leak a directory rather than kill a
		 * live run. EPERM means alive too (another uid's). Runs go
		 * beneath their supervisor's own cgroup, so the supervisors
		 * sharing a parent normally share our pid namespace too; one
		 * in another pid namespace but the same cgroup would look
		 * dead here (use a cgroup per pid namespace). */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
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
		(void)kill_dir(fd);
		(void)drain(&fd, 1, now_ms() + CG_DRAIN_MS);
		close(fd);
		if (remove_tree(pfd, sub.v[i], 0, now_ms() + CG_DESTROY_MS) ==
		    0)
			count++;
	}
	sbx_strv_release(&sub);
	return count;
}

int
sbx_cgroup_gc_at(const char *root_v2, const char *root_v1,
    struct sbx_error *e)
{
	struct procinfo		 pi = PROCINFO_INIT;
	struct sbx_cgroup	*cg;
	struct where		 w;
	struct stat		 st;
	char			 path[PATH_MAX];
	const char		*env, *toppath;
	dev_t			 seen[SBX_CG1_N];
	int			 top, h, i, j, nseen = 0, n, count = 0;

	if ((env = env_root()) != NULL) {
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
	if ((top = open_v2_top(root_v2, path, sizeof(path), cg)) != -1) {
		if (find_parent(&pi, top, path, NULL, &w, cg) == 0) {
			if ((n = gc_parent(w.fd)) > 0)
				count += n;
			close(w.fd);
		}
		close(top);
	}
	toppath = root_v1 ? root_v1 : CG_DEFAULT_ROOT;
	if ((top = open(toppath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1) {
		/* Freezer first: its kill is the race-free one, and the
		 * other hierarchies then hold only empty directories. */
		static const int order[SBX_CG1_N] = {
			SBX_CG1_FREEZER, SBX_CG1_MEMORY, SBX_CG1_PIDS,
			SBX_CG1_CPU, SBX_CG1_CPUACCT,
		};
		for (i = 0; i < SBX_CG1_N; i++) {
			h = open_v1_hier(top, toppath, v1_tab[order[i]].ctl,
			    path, sizeof(path));
			if (h == -1)
				continue;
			if (fstat(h, &st) == -1) {
				close(h);
				continue;
			}
			for (j = 0; j < nseen; j++)
				if (seen[j] == st.st_dev)
					break;
			if (j < nseen) {
				close(h);
				continue;
			}
			seen[nseen++] = st.st_dev;
			if (find_parent(&pi, h, path,
			    v1_tab[order[i]].ctl, &w, cg) == 0) {
				if ((n = gc_parent(w.fd)) > 0)
					count += n;
				close(w.fd);
			}
			close(h);
		}
		close(top);
	}
	procinfo_release(&pi);
	free(cg);
	return count;
}

int
sbx_cgroup_gc(struct sbx_error *e)
{
	return sbx_cgroup_gc_at(NULL, NULL, e);
}
