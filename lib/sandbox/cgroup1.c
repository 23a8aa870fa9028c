/* cgroup1.c: a run's cgroups on cgroup v1 (one hierarchy per controller).
 * The trust model is cgroup.c's. */
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
	if (!sbx_cg_is_fs(fd, CGROUP_SUPER_MAGIC)) {
		close(fd);
		errno = EMEDIUMTYPE;
		return -1;
	}
	snprintf(path, pathsz, "%s/%s", toppath, ctl);
	return fd;
}

/* ---- v1 -------------------------------------------------------------- */

static int
v1_undo(struct sbx_cgroup *cg, const char *name, struct sbx_error *e)
{
	int	 i, rc = 0;

	for (i = 0; i < SBX_CG1_N; i++) {
		sbx_cg_close_fd(&cg->v1_fd_[i]);
		if (cg->v1_parent_fd_[i] != -1 &&
		    !(cg->v1_alias_ & (1u << i)) &&
		    sbx_cg_remove_tree(cg->v1_parent_fd_[i], name, 0,
		    sbx_cg_now_ms() + CG_DESTROY_MS) == -1)
			rc = sbx_error_sys(e, "cgroup_busy", "cannot remove "
			    "cgroup %s", cg->v1[i] ? cg->v1[i] : name);
		sbx_cg_close_fd(&cg->v1_parent_fd_[i]);
		free(cg->v1[i]);
		cg->v1[i] = NULL;
	}
	cg->v1_alias_ = 0;
	cg->swap_limited = 0;
	return rc;
}

/* Write the limits into the v1 directories of cg (memory, pids, cpu
 * slots open): the SBX_LIM_* written, or -1 with errno. */
int
sbx_cg1_limits(struct sbx_cgroup *cg, const struct sbx_limits *lim)
{
	char	 val[64];
	unsigned enforced = 0;
	int	 dfd;

	if (lim->wanted & SBX_LIM_MEMORY) {
		dfd = cg->v1_fd_[SBX_CG1_MEMORY];
		snprintf(val, sizeof(val), "%llu", lim->memory_bytes);
		if (sbx_cg_write(dfd, "memory.limit_in_bytes", val) == -1)
			return -1;
		/* RAM plus swap, set to the same value: no swap at all.
		 * Absent without swap accounting (swapaccount=0). */
		if (sbx_cg_has_file(dfd, "memory.memsw.limit_in_bytes")) {
			if (sbx_cg_write(dfd, "memory.memsw.limit_in_bytes",
				val) == -1)
				return -1;
			cg->swap_limited = 1;
		}
		enforced |= SBX_LIM_MEMORY;
	}
	if (lim->wanted & SBX_LIM_PIDS) {
		snprintf(val, sizeof(val), "%llu", lim->pids);
		if (sbx_cg_write(cg->v1_fd_[SBX_CG1_PIDS], "pids.max", val) ==
		    -1)
			return -1;
		enforced |= SBX_LIM_PIDS;
	}
	if (lim->wanted & SBX_LIM_CPUS) {
		dfd = cg->v1_fd_[SBX_CG1_CPU];
		snprintf(val, sizeof(val), "%llu", sbx_cg_cpu_quota(lim));
		if (sbx_cg_write(dfd, "cpu.cfs_period_us", "100000") == -1 ||
		    sbx_cg_write(dfd, "cpu.cfs_quota_us", val) == -1)
			return -1;
		enforced |= SBX_LIM_CPUS;
	}
	return (int)enforced;
}

/*
 * Open "tasks" of each distinct hierarchy in `have` (SBX_CG1_* bits) into
 * cg->procs_fd.  0, or -1 with errno.
 *
 * The child enters with "0" written to tasks, not cgroup.procs:
 * moving a whole thread group takes the kernel's global
 * cgroup_threadgroup_rwsem for writing, and the first such write of
 * a while waits out an RCU grace period (4-22 ms measured here, the
 * larger part of a root run's start-up).  Moving only the writing
 * thread, the kernel skips that lock ("cgroup: Optimize single
 * thread migration": Linux 6.0, and the 5.4+ stable series since
 * September 2022; before, it takes it as cgroup.procs does).  The
 * writer is a child just forked, which has one thread (fork copies
 * the caller only), so the thread is the whole process: the same
 * placement, and everything it starts (bwrap, sbx-init, the
 * command) is born inside.
 */
int
sbx_cg1_open_tasks(struct sbx_cgroup *cg, unsigned have)
{
	int i;

	for (i = 0; i < SBX_CG1_N; i++) {
		if (!(have & (1u << i)) || (cg->v1_alias_ & (1u << i)))
			continue;
		cg->procs_fd[cg->nprocs] = openat(cg->v1_fd_[i], "tasks",
		    O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
		if (cg->procs_fd[cg->nprocs] == -1)
			return -1;
		cg->nprocs++;
	}
	return 0;
}

/* 1: v1 in place; 0: unusable (why given, nothing left); -1: error. */
int
sbx_cg1_try(struct procinfo *pi, const char *root, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg, struct sbx_error *e)
{
	struct where	 w;
	struct stat	 st;
	char		 hpath[PATH_MAX];
	dev_t		 dev[SBX_CG1_N];
	unsigned	 have = 0, need = 0, enforced = 0;
	const char	*toppath = root ? root : CG_DEFAULT_ROOT;
	int		 top, h, i, j, dfd, r;

	if ((top = open(toppath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		sbx_cg_why_add(cg, "cgroup1: cannot open %s: %s", toppath,
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
			sbx_cg_why_add(cg, "cgroup1: no %s hierarchy at %s/%s",
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
		if (sbx_cg_find_parent(pi, h, hpath, v1_tab[i].ctl, &w,
		    cg) == -1) {
			close(h);
			continue;
		}
		close(h);
		if (mkdirat(w.fd, name, 0755) == -1) {
			if (errno == EEXIST || !sbx_cg_mkdir_unusable(errno)) {
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
			sbx_cg_why_add(cg, "cgroup1: cannot create %s/%s: %s",
			    w.path, name, strerror(errno));
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
		if (dfd == -1 || !sbx_cg_has_file(dfd, v1_tab[i].probe)) {
			/* Not the controller we took it for (the probe file
			 * is missing): a name=... hierarchy, a fake. */
			sbx_cg_why_add(cg, "cgroup1: %s is not a %s cgroup",
			    cg->v1[i], v1_tab[i].ctl);
			if (dfd != -1)
				close(dfd);
			if (unlinkat(w.fd, name, AT_REMOVEDIR) == -1) {
				close(top);
				(void)v1_undo(cg, name, NULL);
				return sbx_error_sys(e, "cgroup_busy", "cannot "
				    "remove cgroup %s/%s", w.path, name);
			}
			sbx_cg_close_fd(&cg->v1_parent_fd_[i]);
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
				sbx_cg_why_add(cg, "cgroup1: %s unusable",
				    v1_tab[i].ctl);
		if (have == 0)
			sbx_cg_why_add(cg, "cgroup1: no hierarchy usable");
		return v1_undo(cg, name, e) == -1 ? -1 : 0;
	}
	if ((r = sbx_cg1_limits(cg, lim)) == -1 ||
	    sbx_cg1_open_tasks(cg, have) == -1)
		goto limits_failed;
	enforced = (unsigned)r;
	cg->enforced = enforced;
	cg->backend = SBX_CG_V1;
	return 1;
limits_failed:
	sbx_cg_why_add(cg, "cgroup1: cannot set up %s: %s", name,
	    strerror(errno));
	for (i = 0; i < cg->nprocs; i++)
		sbx_cg_close_fd(&cg->procs_fd[i]);
	cg->nprocs = 0;
	return v1_undo(cg, name, e) == -1 ? -1 : 0;
}


/* gc beneath the v1 parents create would use, one per hierarchy. */
int
sbx_cg1_gc(struct procinfo *pi, const char *root, struct sbx_cgroup *cg)
{
	struct where	 w;
	struct stat	 st;
	char		 path[PATH_MAX];
	const char	*toppath = root ? root : CG_DEFAULT_ROOT;
	dev_t		 seen[SBX_CG1_N];
	int		 top, h, i, j, nseen = 0, n, count = 0;
	/* Freezer first: its kill is the race-free one, and the other
	 * hierarchies then hold only empty directories. */
	static const int order[SBX_CG1_N] = {
		SBX_CG1_FREEZER, SBX_CG1_MEMORY, SBX_CG1_PIDS,
		SBX_CG1_CPU, SBX_CG1_CPUACCT,
	};

	if ((top = open(toppath, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	for (i = 0; i < SBX_CG1_N; i++) {
		h = open_v1_hier(top, toppath, v1_tab[order[i]].ctl, path,
		    sizeof(path));
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
		if (sbx_cg_find_parent(pi, h, path, v1_tab[order[i]].ctl, &w,
		    cg) == 0) {
			if ((n = sbx_cg_gc_parent(w.fd)) > 0)
				count += n;
			close(w.fd);
		}
		close(h);
	}
	close(top);
	return count;
}
