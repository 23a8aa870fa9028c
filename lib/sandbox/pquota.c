/*
 * pquota.c: can this kernel and file system enforce a project quota?
 *
 * Asked of the kernel, never assumed from a version or a mount option
 * string: quotactl_fd(2) answers ENOSYS when the kernel has no quota
 * support at all (CONFIG_QUOTA off: the quotactl family is not built),
 * ESRCH when the file system does not account projects (not mounted with
 * prjquota), and the limits' state otherwise.
 */
#include <sys/ioctl.h>
#include <sys/quota.h>
#include <sys/syscall.h>

#include <errno.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pquota.h"

#ifndef PRJQUOTA
#define PRJQUOTA 2
#endif
#ifndef SYS_quotactl_fd
#define SYS_quotactl_fd 443
#endif

static void
no(struct sbx_pquota_probe *pr, const char *code, const char *msg, int err)
{
	pr->available = 0;
	pr->code = code;
	snprintf(pr->reason, sizeof(pr->reason), "%s (quotactl: %s)", msg,
	    strerrorname_np(err) ? strerrorname_np(err) : "?");
}

void
sbx_pquota_probe(int dirfd, struct sbx_pquota_probe *pr)
{
	struct if_dqinfo info;
	struct fsxattr	 fx;
	const char	*t = getenv("SBX_TEST_PQUOTA_ERRNO");
	int		 rc, err;

	memset(pr, 0, sizeof(*pr));
	memset(&info, 0, sizeof(info));
	rc = (int)syscall(SYS_quotactl_fd, (unsigned)dirfd,
	    QCMD(Q_GETINFO, PRJQUOTA), 0, &info);
	err = errno;
	/* A test's stand-in for a kernel that answers otherwise: it can
	 * only say no (a number that is an errno), never yes. */
	if (t != NULL && atoi(t) > 0)
		rc = -1, err = atoi(t);
	if (rc == -1) {
		switch (err) {
		case ENOSYS:
			no(pr, "kernel_no_quota",
			    "the kernel has no quota "
			    "support (built without CONFIG_QUOTA)",
			    err);
			return;
		case ESRCH:
			no(pr, "accounting_off",
			    "project quota accounting is "
			    "off on the state root's file system (not mounted "
			    "with prjquota)",
			    err);
			return;
		case EINVAL:
		case ENOTTY:
		case EOPNOTSUPP:
		case ENOENT:
		case ENODEV:
			no(pr, "fs_unsupported",
			    "the state root's file system "
			    "has no project quotas",
			    err);
			return;
		default:
			no(pr, "probe_failed",
			    "asking the kernel about project "
			    "quotas failed",
			    err);
			return;
		}
	}
	/* Quotas on: the project id is set through the file's attributes,
	 * which the file system must offer too. */
	if (ioctl(dirfd, FS_IOC_FSGETXATTR, &fx) == -1) {
		no(pr, "fs_unsupported",
		    "the state root's file system has no "
		    "project ids (FS_IOC_FSGETXATTR)",
		    errno);
		return;
	}
	pr->available = 1;
	pr->code = "available";
}
