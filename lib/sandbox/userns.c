/*
 * userns.c: a user namespace made with the maps sbx chooses
 * (user_namespaces(7)).  A child process unshares one and waits while the
 * parent writes its maps (or has newuidmap and newgidmap write them) and
 * opens a descriptor to it; then the child exits and the namespace lives
 * on in the descriptor alone.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "identity.h"
#include "userns.h"

static int
write_file(const char *path, const char *s)
{
	ssize_t n;
	int	fd, saved;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, s, strlen(s));
	saved = errno;
	close(fd);
	errno = saved;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* As root: the map written to /proc/PID/{uid,gid}_map. */
static int
write_map(pid_t pid, const char *which, const struct sbx_userns_map *m)
{
	char   path[64], buf[256];
	size_t off = 0;
	int    i;

	for (i = 0; i < m->n && i < 4; i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
		    "%lu %lu %lu\n", m->line[i].in, m->line[i].out,
		    m->line[i].count);
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, which);
	return write_file(path, buf);
}

/*
 * Anyone else: newuidmap PID IN OUT COUNT... (and newgidmap), run with an
 * empty environment; they check the ranges against /etc/subuid and
 * /etc/subgid and write the map.  What they say on failure goes into
 * why (nothing is printed here).
 */
static int
helper_map(pid_t pid, const char *helper, const struct sbx_userns_map *m,
    char *why, size_t whysz)
{
	char	args[4][3][24], spid[24];
	char   *argv[2 + 4 * 3 + 1];
	pid_t	h;
	ssize_t n;
	size_t	got = 0;
	int	i, k = 0, status, err[2];

	argv[k++] = (char *)helper;
	snprintf(spid, sizeof(spid), "%d", (int)pid);
	argv[k++] = spid;
	for (i = 0; i < m->n && i < 4; i++) {
		snprintf(args[i][0], sizeof(args[i][0]), "%lu", m->line[i].in);
		snprintf(args[i][1], sizeof(args[i][1]), "%lu", m->line[i].out);
		snprintf(args[i][2], sizeof(args[i][2]), "%lu",
		    m->line[i].count);
		argv[k++] = args[i][0];
		argv[k++] = args[i][1];
		argv[k++] = args[i][2];
	}
	argv[k] = NULL;
	if (pipe2(err, O_CLOEXEC) == -1)
		return -1;
	if ((h = fork()) == -1) {
		close(err[0]);
		close(err[1]);
		return -1;
	}
	if (h == 0) {
		int devnull = open("/dev/null", O_RDWR);

		if (devnull == -1 || dup2(devnull, 0) == -1 ||
		    dup2(devnull, 1) == -1 || dup2(err[1], 2) == -1)
			_exit(127);
		execve(helper, argv, (char *[]){ NULL });
		_exit(127);
	}
	close(err[1]);
	while (got + 1 < whysz &&
	    (n = read(err[0], why + got, whysz - 1 - got)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			break;
		got += (size_t)n;
	}
	why[got] = '\0';
	while (got > 0 && (why[got - 1] == '\n' || why[got - 1] == ' '))
		why[--got] = '\0';
	close(err[0]);
	while (waitpid(h, &status, 0) == -1)
		if (errno != EINTR)
			return -1;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		if (got == 0)
			snprintf(why, whysz, "%s failed", helper);
		errno = EPERM;
		return -1;
	}
	return 0;
}

int
sbx_userns_make(uid_t owner_uid, gid_t owner_gid,
    const struct sbx_userns_map *uids, const struct sbx_userns_map *gids,
    int no_nested, struct sbx_error *e)
{
	char	    path[64], why[256] = "", c = 0;
	int	    ready[2], go[2], fd = -1, saved = 0, status, root;
	pid_t	    pid;
	const char *step = "fork";

	root = geteuid() == 0;
	if (pipe2(ready, O_CLOEXEC) == -1)
		return sbx_error_sys(e, "userns_failed", "pipe");
	if (pipe2(go, O_CLOEXEC) == -1) {
		saved = errno;
		close(ready[0]);
		close(ready[1]);
		errno = saved;
		return sbx_error_sys(e, "userns_failed", "pipe");
	}
	if ((pid = fork()) == -1) {
		saved = errno;
		goto out;
	}
	if (pid == 0) {
		/* Nothing but the namespace: no handler, no exit hooks.  As
		 * root, first become its owner: the namespace belongs to the
		 * effective uid that made it. */
		close(ready[0]);
		close(go[1]);
		if (root && owner_uid != 0 &&
		    sbx_identity_become(owner_uid, owner_gid, e) == -1)
			_exit(1);
		if (unshare(CLONE_NEWUSER) == -1)
			_exit(1);
		/* uid 0 of the new namespace has every capability in it,
		 * CAP_SYS_RESOURCE included: the limit is its own. */
		if (no_nested &&
		    write_file("/proc/sys/user/"
			       "max_user_namespaces",
			"0\n") == -1)
			_exit(1);
		if (write(ready[1], &c, 1) != 1)
			_exit(1);
		if (read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(ready[1]);
	ready[1] = -1;
	step = "unshare";
	if (read(ready[0], &c, 1) != 1) {
		saved = ECHILD;
		goto reap;
	}
	step = "uid_map";
	if ((root ? write_map(pid, "uid_map", uids) :
		    helper_map(pid, SBX_NEWUIDMAP, uids, why, sizeof(why))) ==
	    -1) {
		saved = errno;
		goto reap;
	}
	step = "gid_map";
	snprintf(path, sizeof(path), "/proc/%d/setgroups", (int)pid);
	if (root)
		(void)write_file(path, "deny\n");
	if ((root ? write_map(pid, "gid_map", gids) :
		    helper_map(pid, SBX_NEWGIDMAP, gids, why, sizeof(why))) ==
	    -1) {
		saved = errno;
		goto reap;
	}
	step = "open";
	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		saved = errno;
reap:
	close(go[1]);
	go[1] = -1;
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
out:
	close(ready[0]);
	if (ready[1] >= 0)
		close(ready[1]);
	close(go[0]);
	if (go[1] >= 0)
		close(go[1]);
	if (fd == -1) {
		errno = saved;
		if (why[0] != '\0')
			return sbx_error_set(e, SBX_K_UNAVAILABLE, "userns",
			    "userns_failed",
			    "cannot make the sandbox's user "
			    "namespace (%s): %s",
			    step, why);
		return sbx_error_sys(e, "userns_failed",
		    "cannot make the "
		    "sandbox's user namespace (%s)",
		    step);
	}
	return fd;
}
