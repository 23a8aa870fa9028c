/*
 * identity.c: who the sandboxes of a state root run as.  Never root: as
 * root, run_as of config/sandbox.json, else the system user sbx, else
 * nobody; as anyone else, that user.
 */
#include <sys/types.h>

#include <grp.h>

#include <unistd.h>

#include <jansson.h>

#include "identity.h"
#include "runlimits.h"
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
	if (rootfd >= 0 && sbx_config_load(rootfd, "config/sandbox.json", &cfg,
	    e) == -1)
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
	if (rootfd >= 0 && sbx_config_load(rootfd, "config/sandbox.json", &cfg,
	    e) == -1)
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
