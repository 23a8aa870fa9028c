/*
 * sbx provision --disk-image SIZE|off, --disk-resize SIZE: the agent's own
 * file system, its hard disk limit (lib/sandbox/diskimg.c, sbx-provision(1)
 * DISK IMAGES).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "diskimg.h"
#include "error.h"
#include "fsutil.h"
#include "identity.h"

#include "provision-int.h"

static void
refuse_unusable(const char *opt)
{
	struct sbx_error e;
	const char	*why = sbx_diskimg_unusable();

	if (why == NULL)
		return;
	memset(&e, 0, sizeof(e));
	sbx_error_set(&e, SBX_K_UNAVAILABLE, opt, "disk_limit_unavailable",
	    "%s", why);
	sbx_error_hint(&e,
	    "run sbx provision as root on a host with loop "
	    "devices (modprobe loop), or use project quotas where the kernel "
	    "has them");
	sbx_cmd_die(&e);
}

static void
mount_existing(void)
{
	struct sbx_diskimg_stat st;
	struct sbx_error	e;
	int			fd, now;

	/* An image not mounted (after sbx exec gc): mounted before the
	 * home is checked, so that nothing is made in the directory under
	 * it.  An unfinished migration is left to --disk-image. */
	if (sbx_diskimg_stat(root.fd, O.agent, &st, &e) == -1 || !st.present ||
	    sbx_diskimg_migrating(root.fd, O.agent) ||
	    sbx_diskimg_unusable() != NULL)
		return;
	/* With --disk-image, files written under the unmounted home are
	 * the migration's to move: not an error here. */
	if ((fd = sbx_diskimg_acquire(root.fd, O.agent, &now, &e)) == -1) {
		if (O.disk_image != NULL)
			return;
		sbx_cmd_die(&e);
	}
	close(fd);
}

json_t *
prov_disk_pre(void)
{
	struct sbx_diskimg_stat st;
	struct sbx_error	e;

	/* An image there already: a migration (finishing one, taking in
	 * files written while it was not mounted, or going back) comes
	 * before the home is checked, which would otherwise fill the
	 * directory under the mount with a new SOUL.md. */
	if (O.disk_image != NULL &&
	    sbx_diskimg_stat(root.fd, O.agent, &st, &e) == 0 &&
	    (st.present || sbx_diskimg_migrating(root.fd, O.agent)))
		return prov_disk();
	mount_existing();
	return NULL;
}

json_t *
prov_disk(void)
{
	struct sbx_diskimg_stat st;
	struct sbx_error	e;
	unsigned long long	mib = 0;
	uid_t			uid;
	gid_t			gid;
	int			did = 0;
	char			sum[200];

	if (O.disk_image == NULL && O.disk_resize == NULL)
		return NULL;
	if (O.disk_image != NULL && O.disk_resize != NULL)
		usage("--disk-image and --disk-resize are one change at a "
		      "time");
	memset(&e, 0, sizeof(e));
	if (O.disk_image != NULL) {
		if (strcmp(O.disk_image, "off") != 0 &&
		    sbx_diskimg_parse_size(O.disk_image, "disk-image", &mib,
			&e) == -1)
			sbx_cmd_die(&e);
		refuse_unusable("disk-image");
		if (sbx_identity_get(root.fd, &uid, &gid, &e) == -1 ||
		    sbx_diskimg_migrate(root.fd, O.agent, mib, uid, gid, &did,
			&e) == -1)
			sbx_cmd_die(&e);
	} else {
		if (sbx_diskimg_parse_size(O.disk_resize, "disk-resize", &mib,
			&e) == -1)
			sbx_cmd_die(&e);
		refuse_unusable("disk-resize");
		if (sbx_diskimg_stat(root.fd, O.agent, &st, &e) == -1)
			sbx_cmd_die(&e);
		if (!st.present) {
			sbx_error_set(&e, SBX_K_NOT_FOUND, "disk-resize",
			    "no_disk_image", "agent %s has no disk image",
			    O.agent);
			sbx_error_hint(&e, "make one with --disk-image SIZE");
			sbx_cmd_die(&e);
		}
		if (st.size_mib != mib) {
			int fd = sbx_diskimg_lock(root.fd, O.agent, 1, 0);

			if (fd == -1) {
				sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL,
				    "disk_in_use",
				    "agent %s has a run in "
				    "progress on its disk image",
				    O.agent);
				sbx_cmd_die(&e);
			}
			if (sbx_diskimg_unmount_locked(root.fd, O.agent, &e) ==
				-1 ||
			    sbx_diskimg_resize(root.fd, O.agent, mib, &e) ==
				-1) {
				close(fd);
				/* As it was: mounted again, then the
				 * error. */
				mount_existing();
				sbx_cmd_die(&e);
			}
			close(fd);
			did = 1;
		}
		mount_existing();
	}
	if (sbx_diskimg_stat(root.fd, O.agent, &st, &e) == -1)
		sbx_cmd_die(&e);
	if (!st.present)
		snprintf(sum, sizeof(sum), "off%s",
		    did ? " (home and output "
			  "moved back)" :
			  "");
	else
		snprintf(sum, sizeof(sum), "agents/%s/disk.img: %llu MiB%s",
		    O.agent, st.size_mib,
		    !did	      ? ", already present" :
			O.disk_resize ? ", resized" :
					", home and output on it");
	return json_pack("{s:s,s:I,s:b,s:b,s:s}", "mechanism",
	    st.present ? "image" : "none", "size_mib", (json_int_t)st.size_mib,
	    "changed", did, "mounted", st.mounted, "summary", sum);
}

/*
 * unprovision and remove delete agents/A, where an agent's disk image
 * lives, and with it the home and /output on it: never that.  The home
 * goes back to a plain directory first (--disk-image off).  agent NULL:
 * every agent of the root.
 */
void
prov_disk_refuse_removal(int rootfd, const char *agent)
{
	struct sbx_diskimg_stat st;
	struct sbx_error	e;
	char		      **names = NULL;
	size_t			n = 0, i;
	int			fd;

	if (rootfd < 0)
		return;
	if (agent == NULL) {
		if ((fd = openat(rootfd, "agents", O_RDONLY | O_DIRECTORY |
			 O_NOFOLLOW | O_CLOEXEC)) == -1)
			return;
		names = sbx_fs_sorted_names(fd, &n);
		close(fd);
	}
	for (i = 0; i < (agent != NULL ? 1 : n); i++) {
		const char *a = agent != NULL ? agent : names[i];

		memset(&e, 0, sizeof(e));
		if (sbx_diskimg_stat(rootfd, a, &st, &e) == 0 && !st.present &&
		    !sbx_diskimg_migrating(rootfd, a))
			continue;
		sbx_error_set(&e, SBX_K_REJECTED, "agent", "disk_image_present",
		    "agent %s's home and output live on its disk image "
		    "(agents/%s/disk.img), which this would delete",
		    a, a);
		sbx_error_hint(&e, "move them back first: sbx provision "
				   "--agent %s --disk-image off",
		    a);
		sbx_cmd_die(&e);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
}
