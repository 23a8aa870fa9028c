/* cgroup2.c: a run's cgroup on cgroup v2 (the unified hierarchy).
 * The trust model is cgroup.c's. */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/vfs.h>

#include <linux/magic.h>
#include <linux/sched.h>

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

/* The cgroup2 mount: root, else /sys/fs/cgroup, else the hybrid layout's
 * /sys/fs/cgroup/unified. */
static int
open_v2_top(const char *root, char *path, size_t pathsz, struct sbx_cgroup *cg)
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
		if (sbx_cg_is_fs(fd, CGROUP2_SUPER_MAGIC)) {
			snprintf(path, pathsz, "%s", cand[i]);
			return fd;
		}
		close(fd);
	}
	sbx_cg_why_add(cg, "cgroup2: no cgroup2 file system at %s", root ?
	    root : CG_DEFAULT_ROOT " or " CG_HYBRID_V2);
	return -1;
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
int
sbx_cg2_self_restore(int pfd)
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
	sbx_cg_self_leaf_name(leaf, sizeof(leaf));
	if (sbx_cg_subdirs(pfd, &sub) == -1)
		return -1;
	for (i = 0; i < sub.n; i++)
		if (strcmp(sub.v[i], leaf) != 0) {
			sbx_strv_release(&sub);
			return 0;
		}
	sbx_strv_release(&sub);
	ctl_list(val, sizeof(val), cg_self.enabled, '-');
	if (val[0] != '\0' &&
	    sbx_cg_write(pfd, "cgroup.subtree_control", val) == -1)
		return -1;
	cg_self.enabled = 0;
	lfd = openat(pfd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (lfd == -1)
		return -1;
	for (tries = 0; tries < 100; tries++) {
		if (sbx_cg_read_pids(lfd, &pv) == -1 || pv.n == 0)
			break;
		for (i = 0; i < pv.n; i++) {
			snprintf(val, sizeof(val), "%ld", (long)pv.v[i]);
			(void)sbx_cg_write(pfd, "cgroup.procs", val);
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

	if (sbx_cg_read_pids(w->fd, &pv) == -1 || pv.n != 1 ||
	    pv.v[0] != getpid()) {
		sbx_cg_why_add(cg, "cgroup2: own cgroup %s holds other "
		    "processes, so it cannot pass memory, pids or cpu to a "
		    "child", w->path);
		free(pv.v);
		return -1;
	}
	free(pv.v);
	sbx_cg_self_leaf_name(leaf, sizeof(leaf));
	if (mkdirat(w->fd, leaf, 0755) == 0)
		made = 1;
	else if (errno != EEXIST)
		goto fail;
	lfd = openat(w->fd, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (lfd == -1)
		goto fail;
	if (sbx_cg_write(lfd, "cgroup.procs", "0") == -1) {
		close(lfd);
		goto fail;
	}
	close(lfd);
	if (sbx_cg_write(w->fd, "cgroup.subtree_control", enable) == -1) {
		/* Somebody else came in meanwhile: put things back. */
		(void)sbx_cg_write(w->fd, "cgroup.procs", "0");
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
	sbx_cg_why_add(cg, "cgroup2: cannot move into leaf %s/%s to enable "
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
	if (sbx_cg_read(w->fd, "cgroup.controllers", &b, CG_FILE_CAP) == -1) {
		sbx_cg_why_add(cg, "cgroup2: cannot read "
		    "%s/cgroup.controllers: %s", w->path, strerror(errno));
		goto fail;
	}
	for (i = 0; i < V2_NCTL; i++)
		if ((need & v2_tab[i].lim) &&
		    !sbx_cg_word_in(b.p, v2_tab[i].ctl))
			missing |= v2_tab[i].lim;
	if (missing) {
		ctl_list(enable, sizeof(enable), missing, '\0');
		sbx_cg_why_add(cg, "cgroup2: controller(s) %s not delegated "
		    "to %s", enable, w->path);
		goto fail;
	}
	if (sbx_cg_read(w->fd, "cgroup.subtree_control", &b,
	    CG_FILE_CAP) == -1) {
		sbx_cg_why_add(cg, "cgroup2: cannot read "
		    "%s/cgroup.subtree_control: %s", w->path, strerror(errno));
		goto fail;
	}
	for (i = 0; i < V2_NCTL; i++)
		if ((need & v2_tab[i].lim) &&
		    !sbx_cg_word_in(b.p, v2_tab[i].ctl))
			missing |= v2_tab[i].lim;
	sbx_buf_release(&b);
	if (missing == 0)
		return 0;
	ctl_list(enable, sizeof(enable), missing, '+');
	if (sbx_cg_write(w->fd, "cgroup.subtree_control", enable) == 0) {
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
	sbx_cg_why_add(cg, "cgroup2: cannot enable %s in "
	    "%s/cgroup.subtree_control: %s", enable, w->path, strerror(errno));
	return -1;
fail:
	sbx_buf_release(&b);
	return -1;
}

/* Write the limits into the v2 directory dfd: the SBX_LIM_* written, or
 * -1 with errno. */
int
sbx_cg2_limits(int dfd, const struct sbx_limits *lim, struct sbx_cgroup *cg)
{
	char	 val[64];
	unsigned enforced = 0;

	if (lim->wanted & SBX_LIM_MEMORY) {
		snprintf(val, sizeof(val), "%llu", lim->memory_bytes);
		if (sbx_cg_write(dfd, "memory.max", val) == -1)
			return -1;
		/* Without this the limit bounds RAM only and the rest goes
		 * to swap, slowly, for the whole machine. Absent when the
		 * kernel does no swap accounting (then there is none to
		 * cap and swap_limited says so). */
		if (sbx_cg_has_file(dfd, "memory.swap.max")) {
			if (sbx_cg_write(dfd, "memory.swap.max", "0") == -1)
				return -1;
			cg->swap_limited = 1;
		}
		enforced |= SBX_LIM_MEMORY;
	}
	if (lim->wanted & SBX_LIM_PIDS) {
		snprintf(val, sizeof(val), "%llu", lim->pids);
		if (sbx_cg_write(dfd, "pids.max", val) == -1)
			return -1;
		enforced |= SBX_LIM_PIDS;
	}
	if (lim->wanted & SBX_LIM_CPUS) {
		snprintf(val, sizeof(val), "%llu %llu", sbx_cg_cpu_quota(lim),
		    CG_PERIOD_US);
		if (sbx_cg_write(dfd, "cpu.max", val) == -1)
			return -1;
		enforced |= SBX_LIM_CPUS;
	}
	return (int)enforced;
}

/*
 * A warm session's processes (bwrap, its pid 1) go to <run>/<leaf>, and
 * the controllers of the limits are enabled in <run> for its children:
 * cgroup v2's "no internal processes" rule forbids both in one cgroup,
 * and each command of the session gets a cgroup of its own beside the
 * leaf (sbx_cgroup_create_child).  Nothing runs in <run> yet.  0, or -1
 * with errno (nothing changed but maybe an empty leaf, removed with the
 * run).
 */
int
sbx_cg2_leaf(struct sbx_cgroup *cg, const char *leaf)
{
	char enable[64];
	int  lfd, pfd;

	ctl_list(enable, sizeof(enable), cg->enforced, '+');
	if (mkdirat(cg->v2_fd_, leaf, 0755) == -1 && errno != EEXIST)
		return -1;
	if ((lfd = openat(cg->v2_fd_, leaf,
		 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if ((enable[0] != '\0' &&
		sbx_cg_write(cg->v2_fd_, "cgroup.subtree_control", enable) ==
		    -1) ||
	    (pfd = openat(lfd, "cgroup.procs",
		 O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		close(lfd);
		return -1;
	}
	sbx_cg_close_fd(&cg->procs_fd[0]);
	cg->procs_fd[0] = pfd;
	cg->nprocs = 1;
	sbx_cg_close_fd(&cg->v2_place_fd_);
	cg->v2_place_fd_ = lfd;
	return 0;
}

/* 1: v2 in place; 0: unusable (why given, nothing left); -1: error. */
int
sbx_cg2_try(struct procinfo *pi, const char *root, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg, struct sbx_error *e)
{
	struct where	 w = { -1, "", 0, 0 };
	char		 top_path[PATH_MAX];
	unsigned	 need = 0, enforced = 0;
	size_t		 i;
	int		 top, dfd = -1, rc = 0, r;

	if ((top = open_v2_top(root, top_path, sizeof(top_path), cg)) == -1)
		return 0;
	if (sbx_cg_find_parent(pi, top, top_path, NULL, &w, cg) == -1)
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
		if (!sbx_cg_mkdir_unusable(errno)) {
			rc = sbx_error_sys(e, "cgroup_failed", "cannot create "
			    "cgroup %s/%s", w.path, name);
			goto undo;
		}
		sbx_cg_why_add(cg, "cgroup2: cannot create %s/%s: %s", w.path,
		    name, strerror(errno));
		goto undo;
	}
	dfd = openat(w.fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dfd == -1)
		goto limits_failed;
	if ((r = sbx_cg2_limits(dfd, lim, cg)) == -1)
		goto limits_failed;
	enforced = (unsigned)r;
	cg->procs_fd[0] = openat(dfd, "cgroup.procs", O_WRONLY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (cg->procs_fd[0] == -1)
		goto limits_failed;
	if (asprintf(&cg->v2, "%s/%s", w.path, name) == -1) {
		cg->v2 = NULL;
		sbx_cg_close_fd(&cg->procs_fd[0]);
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
	sbx_cg_why_add(cg, "cgroup2: cannot set up %s/%s: %s", w.path, name,
	    strerror(errno));
rmdir:
	sbx_cg_close_fd(&dfd);
	cg->swap_limited = 0;
	if (sbx_cg_remove_tree(w.fd, name, 0, sbx_cg_now_ms() +
	    CG_DESTROY_MS) == -1)
		rc = sbx_error_sys(e, "cgroup_busy", "cannot remove cgroup "
		    "%s/%s", w.path, name);
undo:
	(void)sbx_cg2_self_restore(w.fd);
out:
	sbx_cg_close_fd(&w.fd);
	close(top);
	return rc;
}


/* gc beneath the v2 parent create would use. */
int
sbx_cg2_gc(struct procinfo *pi, const char *root, struct sbx_cgroup *cg)
{
	struct where	 w;
	char		 path[PATH_MAX];
	int		 top, n, count = 0;

	if ((top = open_v2_top(root, path, sizeof(path), cg)) != -1) {
		if (sbx_cg_find_parent(pi, top, path, NULL, &w, cg) == 0) {
			if ((n = sbx_cg_gc_parent(w.fd)) > 0)
				count += n;
			close(w.fd);
		}
		close(top);
	}
	return count;
}

/*
 * A fork that puts the child in the cgroup as it is born.  Writing a pid
 * to cgroup.procs takes the kernel's threadgroup lock for writing, which
 * waits for an RCU grace period (4-21 ms here) unless the hierarchy was
 * mounted with favordynmods; a child created inside needs no migration
 * at all.  The child only arranges descriptors and execs (run.c), so
 * the libc state a raw clone3 leaves stale (the cached thread id) is not
 * used before exec.
 */
pid_t
sbx_cg2_clone_into(int dirfd)
{
	struct clone_args	 a;

	memset(&a, 0, sizeof(a));
	a.flags = CLONE_INTO_CGROUP;
	a.exit_signal = SIGCHLD;
	a.cgroup = (unsigned long long)dirfd;
	return (pid_t)syscall(SYS_clone3, &a, sizeof(a));
}
