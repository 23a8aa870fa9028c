/*
 * cgroupint.h: what cgroup.c, cgroup1.c and cgroup2.c share (private to
 * the cgroup module; users include cgroup.h).
 */
#ifndef SBX_CGROUPINT_H
#define SBX_CGROUPINT_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>

#include "buf.h"
#include "cgroup.h"
#include "error.h"

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

/* Where a run's cgroup goes in one hierarchy. */
struct where {
	int		 fd;		/* the parent directory */
	char		 path[PATH_MAX];
	int		 own;		/* it is the caller's own cgroup */
	int		 leaf;		/* we sit in <parent>/sbx-<pid>-self */
};

/* /proc/self/cgroup and /proc/self/mountinfo, read at most once per
 * create or gc (tens of microseconds each, once per hierarchy otherwise). */
struct procinfo {
	struct sbx_buf	 cgroup, mountinfo;
	int		 have_cgroup, have_mountinfo;	/* 1 read, -1 failed */
};

struct pidv {
	pid_t	*v;
	size_t	 n, cap;
};

long long	sbx_cg_now_ms(void);
void		sbx_cg_sleep_ms(long);
void		sbx_cg_close_fd(int *);
void		sbx_cg_why_add(struct sbx_cgroup *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
int		sbx_cg_has_file(int, const char *);
int		sbx_cg_is_fs(int, unsigned long);
int		sbx_cg_write(int, const char *, const char *);
int		sbx_cg_read(int, const char *, struct sbx_buf *, size_t);
int		sbx_cg_number(int, const char *, const char *,
		    unsigned long long *);
int		sbx_cg_word_in(const char *, const char *);
long		sbx_cg_name_pid(const char *, const char **);
void		sbx_cg_self_leaf_name(char *, size_t);
void		sbx_cg_procinfo_release(struct procinfo *);
int		sbx_cg_find_parent(struct procinfo *, int, const char *,
		    const char *, struct where *, struct sbx_cgroup *);
const char	*sbx_cg_env_root(void);
int		sbx_cg_read_pids(int, struct pidv *);
int		sbx_cg_subdirs(int, struct sbx_strv *);
int		sbx_cg_kill_dir(int);
int		sbx_cg_drain(const int *, int, long long);
int		sbx_cg_remove_tree(int, const char *, int, long long);
unsigned long long sbx_cg_cpu_quota(const struct sbx_limits *);
int		sbx_cg_mkdir_unusable(int);
/* Remove the stale sbx-<pid>-* cgroups under parent pfd (gc). */
int		sbx_cg_gc_parent(int);
/* A cg with every fd -1 and nothing made; limits checked as create does. */
void sbx_cg_init(struct sbx_cgroup *);
int  sbx_cg_check_limits(const struct sbx_limits *, struct sbx_error *);

/* cgroup2.c */
/* 1: v2 in place; 0: unusable (why given, nothing left); -1: error. */
int	sbx_cg2_try(struct procinfo *, const char *root, const char *name,
	    const struct sbx_limits *, struct sbx_cgroup *, struct sbx_error *);
/* Undo the move into a leaf once no run uses the parent (see cgroup2.c). */
int	sbx_cg2_self_restore(int pfd);
/* fork() into the cgroup dirfd (clone3, CLONE_INTO_CGROUP); -1 with
 * errno when the kernel cannot (the caller forks plainly). */
pid_t	sbx_cg2_clone_into(int dirfd);
/* Write the limits into a v2 directory: the SBX_LIM_* written, or -1. */
int sbx_cg2_limits(int dfd, const struct sbx_limits *, struct sbx_cgroup *);
/* A session's processes in <run>/<leaf>, the controllers on for <run>'s
 * children (sbx_cgroup_leaf). */
int sbx_cg2_leaf(struct sbx_cgroup *, const char *leaf);
/* gc beneath the v2 parent create would use; how many removed. */
int	sbx_cg2_gc(struct procinfo *, const char *root, struct sbx_cgroup *);

/* cgroup1.c */
int	sbx_cg1_try(struct procinfo *, const char *root, const char *name,
	    const struct sbx_limits *, struct sbx_cgroup *, struct sbx_error *);
int	sbx_cg1_gc(struct procinfo *, const char *root, struct sbx_cgroup *);
/* Write the limits into the v1 slots open in cg: the SBX_LIM_* written,
 * or -1; open "tasks" of the hierarchies in `have` (SBX_CG1_* bits). */
int sbx_cg1_limits(struct sbx_cgroup *, const struct sbx_limits *);
int sbx_cg1_open_tasks(struct sbx_cgroup *, unsigned have);

#endif
