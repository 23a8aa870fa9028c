/*
 * agentns.c: the user namespaces of per-agent uids as a plain user.
 * newuidmap writes their maps, after checking /etc/subuid: sbx never
 * maps an id the caller was not given.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "agentns.h"
#include "fsutil.h"
#include "userns.h"

int
sbx_agentns_run(const struct sbx_agentid *a, struct sbx_error *e)
{
	struct sbx_userns_map um, gm;

	memset(&um, 0, sizeof(um));
	memset(&gm, 0, sizeof(gm));
	/* The caller is 0 (sbx's helper opens the agent's directories as
	 * it, sbx_agentns_open), the agent its own id; nothing else. */
	um.n = gm.n = 2;
	um.line[0].in = 0;
	um.line[0].out = getuid();
	um.line[0].count = 1;
	um.line[1].in = a->uid;
	um.line[1].out = a->host_uid;
	um.line[1].count = 1;
	gm.line[0].in = 0;
	gm.line[0].out = getgid();
	gm.line[0].count = 1;
	gm.line[1].in = a->gid;
	gm.line[1].out = a->host_gid;
	gm.line[1].count = 1;
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
		return sbx_error_sys(e, "userns_failed",
		    "cannot enter the "
		    "namespace of the subordinate range");
	return 0;
}

int
sbx_agentns_open(int nsfd, int rootfd, const char *const *rels, int n,
    unsigned long uid, unsigned long gid, int *fds, struct sbx_error *e)
{
	struct stat	 st;
	struct sbx_error ce;
	pid_t		 pid;
	ssize_t		 got;
	size_t		 nf;
	char		 c;
	int		 sv[2], i, fd, status, rc = 0;

	for (i = 0; i < n; i++)
		fds[i] = -1;
	if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == -1)
		return sbx_error_sys(e, "userns_failed", "socketpair");
	if ((pid = fork()) == -1) {
		close(sv[0]);
		close(sv[1]);
		return sbx_error_sys(e, "userns_failed", "fork");
	}
	if (pid == 0) {
		/* Uid 0 of the agent's namespace, with its capabilities over
		 * what it maps: the agent's directories, 0700 and its own,
		 * open for sbx (never for the sandbox of another agent).
		 * Each one beneath rootfd, without following a link. */
		close(sv[0]);
		if (setns(nsfd, CLONE_NEWUSER) == -1)
			_exit(1);
		for (i = 0; i < n; i++) {
			memset(&ce, 0, sizeof(ce));
			fd = sbx_fs_mkdirs_at(rootfd, rels[i], 0700, &ce);
			/* One just made is the caller's (0 here): the
			 * agent's, as root's own_dir hands it over. */
			if (fd >= 0 && fstat(fd, &st) == 0 && st.st_uid == 0 &&
			    fchown(fd, (uid_t)uid, (gid_t)gid) == -1) {
				close(fd);
				fd = -1;
			}
			c = fd >= 0 ? 'y' : 'n';
			if (sbx_fs_send_fd(sv[1], &c, 1, fd, 0) != 1)
				_exit(1);
		}
		_exit(0);
	}
	close(sv[1]);
	for (i = 0; i < n && rc == 0; i++) {
		nf = 0;
		fd = -1;
		got = sbx_fs_recv_fds(sv[0], &c, 1, &fd, 1, &nf, 0);
		if (got != 1 || c != 'y' || nf != 1) {
			if (fd >= 0)
				close(fd);
			rc = sbx_error_set(e, SBX_K_EXECUTION_ERROR, "identity",
			    "open_failed",
			    "cannot open %s as agent's "
			    "namespace's 0",
			    rels[i]);
		} else
			fds[i] = fd;
	}
	close(sv[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (rc == -1)
		for (i = 0; i < n; i++)
			if (fds[i] >= 0) {
				close(fds[i]);
				fds[i] = -1;
			}
	return rc;
}
