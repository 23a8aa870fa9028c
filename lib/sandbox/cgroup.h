/* cgroup.h: one cgroup per run for hard limits and a reliable kill.
 *
 * cgroup v2 first (the caller's own delegated cgroup, or a root the admin
 * prepared), v1 as the fallback (a child of the caller's cgroup in each of
 * the memory, pids, cpu, freezer and cpuacct hierarchies), else none; the
 * caller decides whether "none" is fatal (rlimits are its last resort).
 *
 * Life cycle (supervisor):
 *	sbx_cgroup_name(name, sizeof(name));
 *	sbx_cgroup_create(name, &lim, &cg, &e);	(0, cg.backend may be NONE)
 *	pid = sbx_cgroup_fork(&cg);		(or fork())
 *	child: sbx_cgroup_enter(&cg) before exec, _exit on -1
 *	... sbx_cgroup_kill(&cg) when the sandbox must die at once ...
 *	sbx_cgroup_stats(&cg, &st);
 *	sbx_cgroup_destroy(&cg, &e);		(always, whatever create said)
 */
#ifndef SBX_CGROUP_H
#define SBX_CGROUP_H

#include <sys/types.h>

#include <stddef.h>

#include "error.h"

#define SBX_LIM_MEMORY		0x01
#define SBX_LIM_CPUS		0x02
#define SBX_LIM_PIDS		0x04

struct sbx_limits {
	unsigned long long	 memory_bytes;	/* 0 = no limit */
	double			 cpus;		/* 0 = no limit; e.g. 0.5 */
	unsigned long long	 pids;		/* 0 = no limit */
	unsigned		 wanted;	/* SBX_LIM_* of those set */
};

enum sbx_cg_backend { SBX_CG_NONE = 0, SBX_CG_V2, SBX_CG_V1 };

/* Slots of sbx_cgroup.v1[]. */
#define SBX_CG1_MEMORY		0
#define SBX_CG1_PIDS		1
#define SBX_CG1_CPU		2
#define SBX_CG1_FREEZER		3
#define SBX_CG1_CPUACCT		4	/* NULL when co-mounted with cpu */
#define SBX_CG1_N		5

/* A run's name: "sbx-<pid>-<8 hex>", pid = getpid() of the supervisor. */
#define SBX_CG_NAME_MAX		64

struct sbx_cgroup {
	enum sbx_cg_backend	 backend;
	unsigned		 enforced;	/* SBX_LIM_* actually written */
	char			*v2;		/* v2 dir of the run or NULL */
	char			*v1[SBX_CG1_N];	/* v1 dirs, NULL: unused */
	int			 procs_fd[SBX_CG1_N];	/* v1: "tasks" */
	int			 nprocs;	/* procs_fd[0..nprocs-1] open */
	int			 swap_limited;	/* 0: RAM only, not swap */
	char			 why[768];	/* why backends were skipped */
	/* private */
	int			 inited_;
	int			 placed_;	/* child born inside (clone3) */
	char			 name_[SBX_CG_NAME_MAX + 1];
	int			 v2_fd_, v2_parent_fd_;
	int			 v2_place_fd_; /* a session's leaf, or -1 */
	int			 v1_fd_[SBX_CG1_N], v1_parent_fd_[SBX_CG1_N];
	unsigned		 v1_alias_;	/* slots sharing a dir */
};

struct sbx_cg_stats {
	unsigned long long	 oom_kills;
	unsigned long long	 pids_max_events;
	unsigned long long	 cpu_usage_usec;
	unsigned long long	 memory_peak;
	unsigned long long	 memory_failcnt;	/* v1: limit hits */
	int			 have_oom, have_pids_events, have_cpu,
				 have_peak, have_failcnt;
};

/* "cgroup2", "cgroup1", "none". */
const char	*sbx_cgroup_backend_name(enum sbx_cg_backend);

/* Fill buf (>= SBX_CG_NAME_MAX + 1 bytes) with
 * "sbx-<getpid()>-<random>-<start>", start being this process's start time
 * (/proc/self/stat; the part is left out where /proc cannot say): with the
 * pid it names the supervisor, so that sbx_cgroup_gc tells it from a later
 * process that got the same pid.  Returns 0, or -1 when buf is too small. */
int	sbx_cgroup_name(char *buf, size_t len);

/* Create this run's cgroup(s) named `name` with the limits written, under
 * the default roots: /sys/fs/cgroup (cgroup2, or cgroup2 at
 * /sys/fs/cgroup/unified on hybrid systems) and /sys/fs/cgroup/<ctl> for
 * v1. SBX_CGROUP_ROOT=DIR (secure_getenv) replaces both roots, for tests.
 * `name` must be "sbx-<getpid()>-[a-z0-9-]+": sbx_cgroup_gc keys on the pid.
 * Returns 0 (cg->backend may be SBX_CG_NONE: then nothing was created,
 * cg->why says why and e is filled with kind unavailable, reason
 * cgroup_unavailable and a hint, for the caller to report if it makes the
 * run fail) or -1 on real errors (bad name or limits, a name that already
 * exists, cleanup that failed), e filled. Nothing is left behind when no
 * backend was chosen. cg is always initialised: call sbx_cgroup_destroy. */
int	sbx_cgroup_create(const char *name, const struct sbx_limits *,
	    struct sbx_cgroup *, struct sbx_error *);
/* The same with explicit roots (NULL = default). root_v2 is either a
 * cgroup2 mount point (the run goes beneath the caller's own cgroup there)
 * or a cgroup the admin prepared and delegated (the run goes directly
 * beneath it). root_v1 holds the v1 hierarchies as <root_v1>/<controller>. */
int	sbx_cgroup_create_at(const char *root_v2, const char *root_v1,
	    const char *name, const struct sbx_limits *, struct sbx_cgroup *,
	    struct sbx_error *);

/* Fork the run's child.  On cgroup v2 the child is born inside the run's
 * cgroup (clone3 with CLONE_INTO_CGROUP): no migration, whose write lock
 * costs the caller a grace period of the kernel (~10 ms); sbx_cgroup_enter
 * in the child is then a no-op.  Elsewhere, or where the kernel refuses
 * it, a plain fork().  Returns as fork(). */
pid_t	sbx_cgroup_fork(struct sbx_cgroup *);

/* Would sbx_cgroup_fork() place the child itself (cgroup v2)?  If not,
 * the caller may start it any way it likes, vfork included, provided
 * the child calls sbx_cgroup_enter() before it execs. */
int	sbx_cgroup_places(struct sbx_cgroup *);

/* Async-signal-safe, for the forked child before exec: moves the calling
 * process into the run's cgroup(s). Returns 0, or -1 with errno (the child
 * must then not exec: its limits would not hold). */
int	sbx_cgroup_enter(const struct sbx_cgroup *);

/* SIGKILL every process in the run's cgroup(s): v2 cgroup.kill, else
 * freeze, kill and thaw (v1 freezer, v2 cgroup.freeze); then kill again
 * until the cgroups are empty, for up to ~1 s. Returns 0, or -1 when some
 * process could not be signalled or was still there. */
int	sbx_cgroup_kill(struct sbx_cgroup *);

/* Read the counters for the envelope; missing files leave have_* at 0. */
int	sbx_cgroup_stats(const struct sbx_cgroup *, struct sbx_cg_stats *);

/* Kill what is left, wait (~5 s at most) until empty, remove the
 * directories, close the fds and free the strings. Safe on a cg that create
 * initialised whatever it returned, and on a zeroed one; idempotent.
 * Returns -1 (e filled, reason cgroup_busy) when a directory stayed. */
int	sbx_cgroup_destroy(struct sbx_cgroup *, struct sbx_error *);

/* Remove the cgroups named sbx-<pid>-* under the parents create would use,
 * whose <pid> is no longer alive (a supervisor killed with -9): their
 * processes are killed first. Returns how many directories were removed,
 * or -1 (e filled) on a real error. */
int	sbx_cgroup_gc(struct sbx_error *);
int	sbx_cgroup_gc_at(const char *root_v2, const char *root_v1,
	    struct sbx_error *);

/*
 * Warm sessions (sbx session): one cgroup for the session, made by its
 * supervisor as a run's is, and one per command beneath it, made by the
 * command's client, which passes the open "0"-entry files (procs_fd) to
 * the session's pid 1: the command's child writes "0" into each before it
 * execs, and the kernel judges the write by the credentials of the file's
 * opener (the session's owner, on the host), so nothing inside ever sees
 * a cgroup path or needs a right to one.
 */

/* Where a session's cgroup is (its record keeps the paths). */
struct sbx_cg_where {
	enum sbx_cg_backend backend;
	const char	   *v2; /* v2: the session's dir */
	const char	   *v1[SBX_CG1_N]; /* v1: per slot, or NULL */
};

/* The leaf a v2 session's own processes live in. */
#define SBX_CG_SESSION_LEAF "init"

/* Make cg (just created, nothing in it) a session's: on v2 its processes
 * go to <run>/SBX_CG_SESSION_LEAF (sbx_cgroup_fork and procs_fd place
 * them there) and the controllers of its limits are enabled for its
 * children, as the no-internal-process rule wants; v1 needs nothing.
 * 0, or -1 with e. */
int sbx_cgroup_leaf(struct sbx_cgroup *, struct sbx_error *);

/* A command's limits in a session of limits `ses`: the session's, less a
 * reserve for what the session itself runs (bwrap, its pid 1): 1/8 of the
 * memory up to 16 MiB, and a quarter of the tasks up to 4, so that a
 * command at its limit is killed or refused inside its own cgroup while
 * the session's still has room for the next command.  The CPU quota is
 * the session's. */
void
sbx_cgroup_child_limits(const struct sbx_limits *ses, struct sbx_limits *cmd);

/* Create a command's cgroup `name` ("sbx-<getpid()>-...", as
 * sbx_cgroup_name makes it) beneath the session's cgroup at w, with the
 * limits written; the stale command cgroups there (their client's pid
 * dead: a client killed with -9) are removed first.  Returns 0
 * (cg->backend SBX_CG_NONE with cg->why when w has no cgroup or it cannot
 * be used: the session's own limits still hold) or -1 with e. cg is
 * always initialised: call sbx_cgroup_destroy.  stats, kill and destroy
 * work on it as on a run's. */
int sbx_cgroup_create_child(const struct sbx_cg_where *, const char *name,
    const struct sbx_limits *, struct sbx_cgroup *, struct sbx_error *);

/* Open the cgroup w names (a session's commands', from its record) for
 * its counters only: nothing is made, and sbx_cgroup_close, not destroy,
 * lets it go.  0 (cg's backend NONE when w has none), or -1 (errno). */
int sbx_cgroup_open_where(const struct sbx_cg_where *, struct sbx_cgroup *);
/* Restart its memory high-water mark (v1); -1 where it cannot be (v2):
 * the caller then does not report a peak. */
int sbx_cgroup_peak_reset(const struct sbx_cgroup *);
/* now -= then for the counters that only grow (OOM kills, task-limit
 * hits, CPU time, limit hits): what happened between the two readings;
 * one that either reading lacks is dropped.  The peak is left as is. */
void sbx_cgroup_stats_since(struct sbx_cg_stats *now,
    const struct sbx_cg_stats *then);
/* Close and free without removing anything. */
void sbx_cgroup_close(struct sbx_cgroup *);

/* Fill w from cg (the strings are cg's). */
void sbx_cgroup_where(const struct sbx_cgroup *, struct sbx_cg_where *);

/* The slot names of sbx_cg_where.v1 ("memory", "pids", "cpu", "freezer",
 * "cpuacct"), for records. */
const char *sbx_cgroup_slot_name(int slot);

#endif
