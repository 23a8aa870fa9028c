/*
 * disklimit.c: a run's disk limit, hard where the host can prove one
 * (see disklimit.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "diskimg.h"
#include "disklimit.h"
#include "layout.h"
#include "pquota.h"

/* The setup an administrator needs, in the refusal's hint. */
static void
refuse(struct sbx_error *e, const char *agent, const char *why)
{
	sbx_error_set(e, SBX_K_UNAVAILABLE, "disk", "disk_limit_unavailable",
	    "a hard disk limit was asked for but cannot be enforced here: %s",
	    why);
	sbx_error_hint(e,
	    "as root, give the agent a file system of its own "
	    "(`sbx provision --agent %s --disk-image SIZE`; needs loop "
	    "devices), or use project quotas (%s); or drop --hard-limits "
	    "(require_hard_limits) for the soft limit",
	    agent, SBX_PQUOTA_SETUP);
}

int
sbx_disklimit_choose(int rootfd, const char *agent, unsigned long long disk_mib,
    int hard, struct sbx_disklimit *dl, struct sbx_error *e)
{
	struct sbx_diskimg_stat st;
	struct sbx_pquota_probe pq;
	const char	       *why;
	char			msg[400];

	memset(dl, 0, sizeof(*dl));
	dl->lock_fd = -1;
	if (sbx_diskimg_stat(rootfd, agent, &st, e) == -1)
		return -1;
	/* Half moved: the home is neither here nor there. */
	if (sbx_diskimg_migrating(rootfd, agent)) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "disk",
		    "disk_migration_unfinished",
		    "agent %s's home is being "
		    "moved to or from its disk image",
		    agent);
		sbx_error_hint(e,
		    "finish it: run the same `sbx provision "
		    "--agent %s --disk-image SIZE|off` again",
		    agent);
		return -1;
	}
	if (st.present) {
		/* The home lives on the image: without it mounted a run
		 * would see an empty directory, so refuse, hard or not. */
		if ((why = sbx_diskimg_unusable()) != NULL) {
			snprintf(msg, sizeof(msg),
			    "agent %s's home is on its "
			    "disk image, which cannot be mounted: %s",
			    agent, why);
			refuse(e, agent, msg);
			return -1;
		}
		/* Never a limit larger than asked: a hard limit is the
		 * image's size, so an image larger than --disk cannot be
		 * it. */
		if (disk_mib && st.size_mib > disk_mib) {
			snprintf(msg, sizeof(msg),
			    "the agent's disk image is "
			    "%llu MiB, more than the %llu MiB asked for",
			    st.size_mib, disk_mib);
			if (hard) {
				sbx_error_set(e, SBX_K_REJECTED, "disk",
				    "disk_image_larger", "%s", msg);
				sbx_error_hint(e,
				    "shrink it (`sbx provision "
				    "--agent %s --disk-resize %lluM`) or ask "
				    "for its size",
				    agent, disk_mib);
				return -1;
			}
			why = msg;
			goto soft_why;
		}
		if ((dl->lock_fd = sbx_diskimg_acquire(rootfd, agent,
			 &dl->mounted_now, e)) == -1)
			return -1;
		dl->mech = "image";
		dl->limit_mib = st.size_mib;
		return 0;
	}
	if (!disk_mib)
		return 0;
	if (hard) {
		/* quotactl_fd(2) takes no O_PATH descriptor. */
		int fd =
		    openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		sbx_pquota_probe(fd >= 0 ? fd : rootfd, &pq);
		if (fd >= 0)
			close(fd);
		/* Project quotas proven here would be the way; sbx does
		 * not set them up yet (a project per agent), so they
		 * cannot hold this run either: say which of both failed. */
		snprintf(msg, sizeof(msg),
		    "agent %s has no disk image, and "
		    "project quotas: %s",
		    agent,
		    pq.available ? "available "
				   "but no project is set up for the agent" :
				   pq.reason);
		refuse(e, agent, msg);
		return -1;
	}
	why = "no hard mechanism is set up for the agent";
soft_why:
	dl->mech = "soft";
	dl->limit_mib = disk_mib;
	snprintf(dl->warning, sizeof(dl->warning),
	    "the disk limit is soft "
	    "(a sized /tmp, a largest file): %s; --hard-limits refuses "
	    "instead",
	    why);
	return 0;
}

int
sbx_disklimit_reached(int rootfd, const char *agent,
    const struct sbx_disklimit *dl)
{
	struct sbx_diskimg_stat st;

	if (dl->mech == NULL || strcmp(dl->mech, "image") != 0)
		return 0;
	if (sbx_diskimg_stat(rootfd, agent, &st, NULL) == -1)
		return 0;
	return sbx_diskimg_full(&st);
}

void
sbx_disklimit_release(struct sbx_disklimit *dl)
{
	if (dl->lock_fd >= 0)
		close(dl->lock_fd);
	dl->lock_fd = -1;
}
