/*
 * agentns.c: the user namespaces of per-agent uids as a plain user.
 * newuidmap writes their maps, after checking /etc/subuid: sbx never
 * maps an id the caller was not given.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "agentns.h"
#include "userns.h"

int
sbx_agentns_run(const struct sbx_agentid *a, struct sbx_error *e)
{
	struct sbx_userns_map um, gm;

	memset(&um, 0, sizeof(um));
	memset(&gm, 0, sizeof(gm));
	um.n = gm.n = 1;
	um.line[0].in = a->uid;
	um.line[0].out = a->host_uid;
	um.line[0].count = 1;
	gm.line[0].in = a->gid;
	gm.line[0].out = a->host_gid;
	gm.line[0].count = 1;
	/* Nested namespaces stay possible in it: bwrap makes the sandbox's
	 * own inside it (--unshare-user, then --disable-userns there). */
	return sbx_userns_make(getuid(), getgid(), &um, &gm, 0, e);
}

int
sbx_agentns_join(int nsfd, unsigned long uid, unsigned long gid)
{
	/*
	 * The caller owns the namespace, so entering it gives every
	 * capability in it, and with them the right to become the agent's
	 * id, the only one mapped; the capabilities go with the exec of
	 * bwrap (a uid other than 0 keeps none across execve).
	 * Supplementary groups cannot change (setgroups is denied there).
	 */
	if (setns(nsfd, CLONE_NEWUSER) == -1 ||
	    setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) == -1 ||
	    setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) == -1)
		return -1;
	return getuid() == (uid_t)uid && geteuid() == (uid_t)uid ? 0 : -1;
}

int
sbx_agentns_enter_range(void *arg, struct sbx_error *e)
{
	const struct sbx_idcfg *c = arg;
	struct sbx_userns_map	um, gm;
	int			fd, rc;

	memset(&um, 0, sizeof(um));
	um.n = 2;
	um.line[0].in = 0;
	um.line[0].out = getuid();
	um.line[0].count = 1;
	um.line[1].in = 1;
	um.line[1].out = c->sub_start;
	um.line[1].count = SBX_IDALLOC_SUB_LAST;
	gm = um;
	gm.line[0].out = getgid();
	if ((fd = sbx_userns_make(getuid(), getgid(), &um, &gm, 1, e)) == -1)
		return -1;
	rc = setns(fd, CLONE_NEWUSER);
	close(fd);
	if (rc == -1)
		return sbx_error_sys(e, "userns_failed", "cannot enter the "
		    "namespace of the subordinate range");
	return 0;
}
