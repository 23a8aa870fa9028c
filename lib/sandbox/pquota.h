/*
 * pquota.h: project quotas, the hard disk limit of a file system that
 * counts blocks and inodes per project id (XFS, ext4 with prjquota), as
 * Sage's sandbox uses them (issue 32).  This module proves whether the
 * state root's file system and the kernel can enforce one; a kernel built
 * without CONFIG_QUOTA cannot, and says so.
 */
#ifndef SBX_PQUOTA_H
#define SBX_PQUOTA_H

#include <stddef.h>

struct sbx_pquota_probe {
	int available; /* accounting and enforcement on */
	/* Why not, for people (empty when available), and a stable code:
	 * kernel_no_quota, accounting_off, fs_unsupported, probe_failed. */
	char	    reason[200];
	const char *code;
};

/* Probe the file system of the open directory dirfd (quotactl_fd(2),
 * Q_GETINFO for PRJQUOTA; FS_IOC_FSGETXATTR).  Never fails: the answer
 * is in pr. */
void sbx_pquota_probe(int dirfd, struct sbx_pquota_probe *pr);
/* What an administrator does to have project quotas here. */
#define SBX_PQUOTA_SETUP \
	"a kernel with CONFIG_QUOTA and CONFIG_QFMT_V2 (ext4) or " \
	"CONFIG_XFS_QUOTA, and the state root on a file system mounted " \
	"with prjquota"

#endif
