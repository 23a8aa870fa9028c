/* proc.h: what the kernel says of a process (/proc/PID/stat). */
#ifndef SBX_PROC_H
#define SBX_PROC_H

#include <sys/types.h>

struct sbx_proc_stat {
	char			state;	/* R, S, D, Z, X, ... (field 3) */
	unsigned long long	start;	/* clock ticks since boot (field 22) */
};

/* Read /proc/PID/stat: 0, or -1 with errno (ENOENT: no such process, or
 * one this /proc does not show).  With its pid, the start time names one
 * process: a pid reused by a later process has a later start. */
int	sbx_proc_stat(pid_t, struct sbx_proc_stat *);
/* Is the process that pid named when its start time was want (0: any)
 * still running?  A zombie (Z) or a dying process (X) is not: it has
 * exited and only waits for its parent to reap it.  Unknown (no /proc,
 * or a /proc mounted with hidepid that hides it while kill(2) still
 * finds it) counts as running: callers destroy what a dead process left,
 * and leaking a directory is better than killing a live run. */
int	sbx_proc_running(pid_t, unsigned long long want);

#endif
