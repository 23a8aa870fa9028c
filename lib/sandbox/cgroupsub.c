/* cgroupsub.c: a warm session's cgroups (cgroup.h): the session's own
 * leaf on v2, and one cgroup per command beneath the session's.  The
 * trust model is cgroup.c's. */
#include <sys/stat.h>
#include <sys/types.h>

#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "cgroupint.h"
#include "error.h"

static const char *const slot_names[SBX_CG1_N] = {
	[SBX_CG1_MEMORY] = "memory",
	[SBX_CG1_PIDS] = "pids",
	[SBX_CG1_CPU] = "cpu",
	[SBX_CG1_FREEZER] = "freezer",
	[SBX_CG1_CPUACCT] = "cpuacct",
};

const char *
sbx_cgroup_slot_name(int slot)
{
	return slot >= 0 && slot < SBX_CG1_N ? slot_names[slot] : NULL;
}

void
sbx_cgroup_where(const struct sbx_cgroup *cg, struct sbx_cg_where *w)
{
	int i;

	memset(w, 0, sizeof(*w));
	if (!cg->inited_)
		return;
	w->backend = cg->backend;
	w->v2 = cg->backend == SBX_CG_V2 ? cg->v2 : NULL;
	for (i = 0; i < SBX_CG1_N; i++)
		w->v1[i] = cg->backend == SBX_CG_V1 ? cg->v1[i] : NULL;
}

int
sbx_cgroup_leaf(struct sbx_cgroup *cg, struct sbx_error *e)
{
	if (!cg->inited_ || cg->backend != SBX_CG_V2)
		return 0;
	if (sbx_cg2_leaf(cg, SBX_CG_SESSION_LEAF) == -1)
		return sbx_error_sys(e, "cgroup_failed",
		    "cannot make the "
		    "session's leaf %s/%s",
		    cg->v2, SBX_CG_SESSION_LEAF);
	return 0;
}

void
sbx_cgroup_child_limits(const struct sbx_limits *ses, struct sbx_limits *cmd)
{
	unsigned long long r;

	*cmd = *ses;
	if (ses->memory_bytes) {
		r = ses->memory_bytes / 8;
		if (r > 16ULL << 20)
			r = 16ULL << 20;
		cmd->memory_bytes = ses->memory_bytes - r;
	}
	if (ses->pids) {
		r = ses->pids / 4;
		if (r > 4)
			r = 4;
		cmd->pids = ses->pids - r;
	}
}

/* Open a directory the session's record names: absolute, on a cgroup
 * file system of the kind expected, its last component the session's
 * run name (sbx-<pid>-...).  The record is the owner's own file, but the
 * check keeps a damaged one from sending limit writes elsewhere. */
static int
open_parent(const char *path, unsigned long magic)
{
	const char *base;
	int	    fd;

	if (path == NULL || path[0] != '/' ||
	    (base = strrchr(path, '/')) == NULL ||
	    sbx_cg_name_pid(base + 1, NULL) <= 0) {
		errno = EINVAL;
		return -1;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -1;
	if (!sbx_cg_is_fs(fd, magic)) {
		close(fd);
		errno = EMEDIUMTYPE;
		return -1;
	}
	return fd;
}

/* mkdir parent/name and open it: the fd, or -1. */
static int
make_dir(int pfd, const char *name)
{
	if (mkdirat(pfd, name, 0755) == -1)
		return -1;
	return openat(pfd, name,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

static int
child_v2(const struct sbx_cg_where *w, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg)
{
	int pfd, dfd, r;

	if ((pfd = open_parent(w->v2, CGROUP2_SUPER_MAGIC)) == -1)
		return -1;
	(void)sbx_cg_gc_parent(pfd);
	cg->v2_parent_fd_ = pfd;
	if ((dfd = make_dir(pfd, name)) == -1)
		return -1;
	cg->v2_fd_ = dfd;
	if (asprintf(&cg->v2, "%s/%s", w->v2, name) == -1) {
		cg->v2 = NULL;
		return -1;
	}
	if ((r = sbx_cg2_limits(dfd, lim, cg)) == -1)
		return -1;
	cg->enforced = (unsigned)r;
	/* cgroup.procs, not clone3 into the directory: pid 1 forks inside
	 * its cgroup namespace, whose root is the session's leaf, and a
	 * clone3 there is judged against that namespace (the command's
	 * cgroup is outside it), while a write to a file opened here is
	 * judged by the namespace and credentials of its opener. */
	if ((cg->procs_fd[0] = openat(dfd, "cgroup.procs",
		 O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	cg->nprocs = 1;
	cg->backend = SBX_CG_V2;
	return 0;
}

static int
child_v1(const struct sbx_cg_where *w, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg)
{
	unsigned have = 0, need = 0;
	int	 i, j, pfd, dfd, r;

	for (i = 0; i < SBX_CG1_N; i++) {
		if (w->v1[i] == NULL)
			continue;
		/* Co-mounted controllers share one directory. */
		for (j = 0; j < i; j++)
			if ((have & (1u << j)) && w->v1[j] != NULL &&
			    strcmp(w->v1[j], w->v1[i]) == 0)
				break;
		if (j < i) {
			if ((cg->v1_fd_[i] = fcntl(cg->v1_fd_[j],
				 F_DUPFD_CLOEXEC, 3)) == -1)
				return -1;
			cg->v1_alias_ |= 1u << i;
			have |= 1u << i;
			continue;
		}
		if ((pfd = open_parent(w->v1[i], CGROUP_SUPER_MAGIC)) == -1)
			return -1;
		(void)sbx_cg_gc_parent(pfd);
		cg->v1_parent_fd_[i] = pfd;
		if ((dfd = make_dir(pfd, name)) == -1)
			return -1;
		cg->v1_fd_[i] = dfd;
		if (asprintf(&cg->v1[i], "%s/%s", w->v1[i], name) == -1) {
			cg->v1[i] = NULL;
			return -1;
		}
		have |= 1u << i;
	}
	if (lim->wanted & SBX_LIM_MEMORY)
		need |= 1u << SBX_CG1_MEMORY;
	if (lim->wanted & SBX_LIM_PIDS)
		need |= 1u << SBX_CG1_PIDS;
	if (lim->wanted & SBX_LIM_CPUS)
		need |= 1u << SBX_CG1_CPU;
	if ((have & need) != need || have == 0) {
		errno = ENOENT;
		return -1;
	}
	if ((r = sbx_cg1_limits(cg, lim)) == -1 ||
	    sbx_cg1_open_tasks(cg, have) == -1)
		return -1;
	cg->enforced = (unsigned)r;
	cg->backend = SBX_CG_V1;
	return 0;
}

int
sbx_cgroup_create_child(const struct sbx_cg_where *w, const char *name,
    const struct sbx_limits *lim, struct sbx_cgroup *cg, struct sbx_error *e)
{
	const char *where;
	int	    r, err, i;

	sbx_cg_init(cg);
	if (sbx_cg_check_limits(lim, e) == -1)
		return -1;
	if (sbx_cg_name_pid(name, NULL) != (long)getpid())
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name",
		    "cgroup name `%s` is not "
		    "sbx-%ld-[a-z0-9-]+",
		    name, (long)getpid());
	snprintf(cg->name_, sizeof(cg->name_), "%s", name);
	if (w->backend == SBX_CG_NONE) {
		sbx_cg_why_add(cg, "the session has no cgroup");
		return 0;
	}
	r = w->backend == SBX_CG_V2 ? child_v2(w, name, lim, cg) :
				      child_v1(w, name, lim, cg);
	if (r == 0)
		return 0;
	err = errno;
	for (i = 0, where = w->v2; where == NULL && i < SBX_CG1_N; i++)
		where = w->v1[i];
	sbx_cg_why_add(cg,
	    "cannot make the command's cgroup beneath the "
	    "session's (%s): %s",
	    where != NULL ? where : "no directory", strerror(err));
	/* Undo what was made: destroy on a cg of backend NONE only frees,
	 * so the backend it was meant to have goes in for the removal. */
	for (i = 0; i < SBX_CG1_N; i++)
		sbx_cg_close_fd(&cg->procs_fd[i]);
	cg->nprocs = 0;
	cg->backend = w->backend;
	{
		char why[sizeof(cg->why)];

		memcpy(why, cg->why, sizeof(why));
		if (sbx_cgroup_destroy(cg, e) == -1)
			return -1;
		sbx_cg_init(cg);
		memcpy(cg->why, why, sizeof(why));
	}
	errno = err;
	return 0;
}

int
sbx_cgroup_open_where(const struct sbx_cg_where *w, struct sbx_cgroup *cg)
{
	int i, j;

	sbx_cg_init(cg);
	if (w->backend == SBX_CG_V2) {
		if ((cg->v2_fd_ = open_parent(w->v2, CGROUP2_SUPER_MAGIC)) ==
		    -1)
			return -1;
		cg->backend = SBX_CG_V2;
		return 0;
	}
	if (w->backend != SBX_CG_V1)
		return 0;
	for (i = 0; i < SBX_CG1_N; i++) {
		if (w->v1[i] == NULL)
			continue;
		for (j = 0; j < i; j++)
			if (w->v1[j] != NULL && strcmp(w->v1[j], w->v1[i]) == 0)
				break;
		cg->v1_fd_[i] = j < i ?
		    fcntl(cg->v1_fd_[j], F_DUPFD_CLOEXEC, 3) :
		    open_parent(w->v1[i], CGROUP_SUPER_MAGIC);
		if (cg->v1_fd_[i] == -1) {
			sbx_cgroup_close(cg);
			return -1;
		}
	}
	cg->backend = SBX_CG_V1;
	return 0;
}

int
sbx_cgroup_peak_reset(const struct sbx_cgroup *cg)
{
	int fd;

	/* v1 resets the high-water mark on any write; v2's memory.peak
	 * resets only for the writer's own open file (6.12), which a
	 * reader in another process cannot use: not reset there. */
	if (!cg->inited_ || cg->backend != SBX_CG_V1 ||
	    cg->v1_fd_[SBX_CG1_MEMORY] == -1)
		return -1;
	if ((fd = openat(cg->v1_fd_[SBX_CG1_MEMORY],
		 "memory.max_usage_in_bytes",
		 O_WRONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	if (write(fd, "0", 1) != 1) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

void
sbx_cgroup_stats_since(struct sbx_cg_stats *now,
    const struct sbx_cg_stats *then)
{
#define SINCE(f, h)                                            \
	do {                                                   \
		if (then->h && now->h)                         \
			now->f = now->f >= then->f ?           \
			    now->f - then->f : 0;              \
		else                                           \
			now->h = 0;                            \
	} while (0)
	SINCE(oom_kills, have_oom);
	SINCE(pids_max_events, have_pids_events);
	SINCE(cpu_usage_usec, have_cpu);
	SINCE(memory_failcnt, have_failcnt);
#undef SINCE
}

void
sbx_cgroup_close(struct sbx_cgroup *cg)
{
	int i;

	if (!cg->inited_)
		return;
	for (i = 0; i < SBX_CG1_N; i++) {
		sbx_cg_close_fd(&cg->procs_fd[i]);
		sbx_cg_close_fd(&cg->v1_fd_[i]);
		sbx_cg_close_fd(&cg->v1_parent_fd_[i]);
		free(cg->v1[i]);
		cg->v1[i] = NULL;
	}
	sbx_cg_close_fd(&cg->v2_fd_);
	sbx_cg_close_fd(&cg->v2_parent_fd_);
	sbx_cg_close_fd(&cg->v2_place_fd_);
	free(cg->v2);
	cg->v2 = NULL;
	cg->nprocs = 0;
	cg->inited_ = 0;
}
