/*
 * identity.c: who the sandboxes of a state root run as.  Never root: as
 * root, run_as of config/sandbox.json, else the system user sbx, else
 * nobody; as anyone else, that user.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "fsutil.h"
#include "identity.h"
#include "settings.h"
#include "users.h"

int
sbx_identity_get(int rootfd, uid_t *uid, gid_t *gid, struct sbx_error *e)
{
	uid_t		 su;
	gid_t		 sg;
	json_t		*cfg = NULL, *ra;
	json_int_t	 u = 65534, g = 65534;

	*uid = getuid();
	*gid = getgid();
	if (geteuid() != 0)
		return 0;
	/* The same choice as sbx-exec's: never root; run_as, else the sbx
	 * user, else nobody. */
	if (sbx_user_by_name("sbx", &su, &sg) == 0 && su != 0) {
		u = su;
		g = sg;
	}
	if (rootfd >= 0 && sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	if (cfg != NULL && (ra = json_object_get(cfg, "run_as")) != NULL &&
	    (json_unpack(ra, "{s:I,s:I}", "uid", &u, "gid", &g) == -1 ||
	    u <= 0 || g <= 0 || u > 0x7fffffff || g > 0x7fffffff)) {
		json_decref(cfg);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "run_as",
		    "config_invalid", "config/sandbox.json: run_as must be "
		    "{\"uid\": N, \"gid\": N} with N > 0");
	}
	json_decref(cfg);
	*uid = (uid_t)u;
	*gid = (gid_t)g;
	return 0;
}

int
sbx_identity_wants_user(int rootfd, struct sbx_error *e)
{
	uid_t		 su;
	gid_t		 sg;
	json_t		*cfg = NULL;
	int		 configured;

	if (geteuid() != 0 || sbx_user_by_name(SBX_RUN_USER, &su, &sg) == 0)
		return 0;
	if (rootfd >= 0 && sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	configured = cfg != NULL && json_object_get(cfg, "run_as") != NULL;
	json_decref(cfg);
	/* Else every agent would run as nobody, whose per-uid budgets
	 * (RLIMIT_NPROC, the kernel's per-user counts) host daemons share,
	 * and whose files those daemons can read. */
	return !configured;
}

int
sbx_identity_become(uid_t uid, gid_t gid, struct sbx_error *e)
{
	if (geteuid() != 0)
		return 0;
	if (uid == 0)
		return sbx_error_set(e, SBX_K_REJECTED, NULL, "run_as_root",
		    "refusing to act as root for a sandbox");
	/* Groups first: once the uid is gone, so is the right to drop
	 * them.  Checked after, as setresuid's failure modes are many. */
	if (setgroups(0, NULL) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1 || getuid() != uid ||
	    geteuid() != uid || getegid() != gid)
		return sbx_error_sys(e, "drop_privileges", "cannot become "
		    "uid %u gid %u", (unsigned)uid, (unsigned)gid);
	return 0;
}

struct name_of {
	uid_t uid;
	char  name[64];
};

static int
name_cb(const char *name, uid_t uid, const char *home, void *arg)
{
	struct name_of *n = arg;

	if (uid != n->uid)
		return 0;
	snprintf(n->name, sizeof(n->name), "%s", name);
	return 1;
}

/*
 * /etc/subuid or /etc/subgid: the first entry "NAME:START:COUNT" (or
 * "UID:START:COUNT") of the user, into *start and *count (1 found, 0
 * not).  With overlap set instead, 1 when any entry overlaps
 * [*start, *start + *count).
 */
static int
subid_file(const char *path, const char *name, unsigned long id, int overlap,
    unsigned long *start, unsigned long *count)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e;
	char		*line, *save = NULL, *who, *f1, *f2, *end;
	char		 ids[24];
	unsigned long	 s, c;
	int		 found = 0, dfd, rc;

	/* /etc/subuid: read beneath /etc, the file itself no symlink. */
	if (strncmp(path, "/etc/", 5) != 0 ||
	    (dfd = open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	rc = sbx_fs_read_file_at(dfd, path + 5, 1 << 20, &b, &e);
	close(dfd);
	if (rc == -1 || b.p == NULL)
		return 0;
	snprintf(ids, sizeof(ids), "%lu", id);
	for (line = strtok_r(b.p, "\n", &save); line != NULL && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		if ((f1 = strchr(line, ':')) == NULL ||
		    (f2 = strchr(f1 + 1, ':')) == NULL)
			continue;
		who = line;
		*f1++ = '\0';
		*f2++ = '\0';
		errno = 0;
		s = strtoul(f1, &end, 10);
		if (errno != 0 || *end != '\0' || end == f1)
			continue;
		c = strtoul(f2, &end, 10);
		if (errno != 0 || (*end != '\0' && *end != ' ') || c == 0)
			continue;
		if (overlap) {
			found = s < *start + *count && *start < s + c;
			continue;
		}
		if ((name != NULL && strcmp(who, name) == 0) ||
		    strcmp(who, ids) == 0) {
			*start = s;
			*count = c;
			found = 1;
		}
	}
	sbx_buf_release(&b);
	return found;
}

int
sbx_identity_subids(int rootfd, struct sbx_subids *r, char *why, size_t whysz,
    struct sbx_error *e)
{
	struct name_of n;
	unsigned long  us, uc, gs, gc;
	uid_t	       uid;
	gid_t	       gid;

	if (sbx_identity_get(rootfd, &uid, &gid, e) == -1)
		return -1;
	memset(&n, 0, sizeof(n));
	n.uid = uid;
	(void)sbx_user_each(name_cb, &n);
	if (subid_file(SBX_SUBUID_FILE, n.name[0] ? n.name : NULL, uid, 0, &us,
		&uc) &&
	    subid_file(SBX_SUBGID_FILE, n.name[0] ? n.name : NULL, uid, 0, &gs,
		&gc)) {
		if (geteuid() != 0 &&
		    (access(SBX_NEWUIDMAP, X_OK) == -1 ||
			access(SBX_NEWGIDMAP, X_OK) == -1)) {
			snprintf(why, whysz,
			    "newuidmap and newgidmap are not "
			    "installed (package uidmap)");
			return 0;
		}
		r->uid = us;
		r->gid = gs;
		r->count = uc < gc ? uc : gc;
		if (r->count > SBX_SUBID_COUNT)
			r->count = SBX_SUBID_COUNT;
		return 1;
	}
	if (geteuid() != 0) {
		snprintf(why, whysz,
		    "%s (uid %u) has no subordinate ids in "
		    "%s and %s",
		    n.name[0] ? n.name : "this user", (unsigned)uid,
		    SBX_SUBUID_FILE, SBX_SUBGID_FILE);
		return 0;
	}
	/* Root may map any range; the default must be no one else's. */
	us = gs = SBX_SUBID_BASE;
	uc = gc = SBX_SUBID_COUNT;
	if (subid_file(SBX_SUBUID_FILE, NULL, 0, 1, &us, &uc) ||
	    subid_file(SBX_SUBGID_FILE, NULL, 0, 1, &gs, &gc)) {
		snprintf(why, whysz,
		    "the default range %lu-%lu overlaps an "
		    "entry of %s or %s, and %s has none of its own",
		    SBX_SUBID_BASE, SBX_SUBID_BASE + SBX_SUBID_COUNT - 1,
		    SBX_SUBUID_FILE, SBX_SUBGID_FILE,
		    n.name[0] ? n.name : "the sandbox user");
		return 0;
	}
	r->uid = us;
	r->gid = gs;
	r->count = SBX_SUBID_COUNT;
	return 1;
}
