/*
 * disklimit.h: which mechanism holds a run's disk limit (issue 32): the
 * agent's own file system (diskimg.c), a project quota (pquota.c), or
 * today's soft caps (a sized /tmp, RLIMIT_FSIZE).  Chosen by what the host
 * can prove; with hard limits asked, a run that cannot have one is refused
 * (unavailable, with the reason and the administrator's setup).
 */
#ifndef SBX_DISKLIMIT_H
#define SBX_DISKLIMIT_H

#include "error.h"

struct sbx_disklimit {
	const char	  *mech; /* "image", "project_quota", "soft"
					   or NULL (no disk limit) */
	unsigned long long limit_mib; /* what holds (the image's size) */
	int		   lock_fd; /* the image held for the run, -1 */
	int		   mounted_now; /* this run mounted it */
	char		   warning[512]; /* soft fallback: why, or "" */
};

/*
 * Choose for agent under the root rootfd: disk_mib the asked limit (0:
 * none), hard nonzero when --hard-limits or require_hard_limits.  On
 * success with mech "image" the image is mounted and held (lock_fd);
 * sbx_disklimit_release lets go of it.  -1: refused (unavailable, reason
 * disk_limit_unavailable; rejected, reason disk_image_larger) or failed.
 */
int
sbx_disklimit_choose(int rootfd, const char *agent, unsigned long long disk_mib,
    int hard, struct sbx_disklimit *, struct sbx_error *);
/* After the run: nonzero when the image is full (the command met ENOSPC
 * there). */
int  sbx_disklimit_reached(int rootfd, const char *agent,
     const struct sbx_disklimit *);
void sbx_disklimit_release(struct sbx_disklimit *);

#endif
