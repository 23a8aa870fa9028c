/* t-cgroup2: a run's child born inside its cgroup v2 (CLONE_INTO_CGROUP). */
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>

#include <linux/magic.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "cgroup.h"
#include "error.h"

/* A cgroup2 mount the test may create a cgroup in (as root): the unified
 * hierarchy, at either of the places create looks. */
static const char *
v2_mount(void)
{
	static const char *const cand[] = { "/sys/fs/cgroup",
	    "/sys/fs/cgroup/unified" };
	struct statfs	 sf;
	size_t		 i;

	for (i = 0; i < 2; i++)
		if (statfs(cand[i], &sf) == 0 &&
		    sf.f_type == CGROUP2_SUPER_MAGIC)
			return cand[i];
	return NULL;
}

/* In the child: is the "0::" line of /proc/self/cgroup the run's? */
static int
in_cgroup(const char *name)
{
	char	 buf[4096], *l;
	ssize_t	 n;
	int	 fd;

	if ((fd = open("/proc/self/cgroup", O_RDONLY)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if ((l = strstr(buf, "0::")) == NULL)
		return 0;
	*strchrnul(l, '\n') = '\0';
	return strlen(l) > strlen(name) &&
	    strcmp(l + strlen(l) - strlen(name), name) == 0 &&
	    l[strlen(l) - strlen(name) - 1] == '/';
}

int
main(void)
{
	struct sbx_cgroup	 cg;
	struct sbx_limits	 lim;
	struct sbx_error	 e;
	const char		*root = v2_mount();
	char			 name[SBX_CG_NAME_MAX + 1];
	pid_t			 pid;
	int			 st;

	if (geteuid() != 0 || root == NULL) {
		skip_n(4, "needs root and a cgroup2 mount");
		return done_testing();
	}
	memset(&lim, 0, sizeof(lim));
	memset(&e, 0, sizeof(e));
	sbx_cgroup_name(name, sizeof(name));
	/* No limits: no controller needed, so any cgroup2 mount will do. */
	if (sbx_cgroup_create_at(root, "/nonexistent", name, &lim, &cg,
	    &e) == -1 || cg.backend != SBX_CG_V2) {
		skip_n(4, "no cgroup v2 of our own here: %s", cg.why);
		sbx_cgroup_destroy(&cg, &e);
		return done_testing();
	}
	pid = sbx_cgroup_fork(&cg);
	if (pid == 0)
		_exit(sbx_cgroup_enter(&cg) == 0 && in_cgroup(name) ? 0 : 1);
	ok(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0, "the child is born in the run's cgroup");
	ok(cg.placed_ == 1, "without a migration (clone3 CLONE_INTO_CGROUP)");
	ok(!in_cgroup(name), "the parent stays where it was");
	ok(sbx_cgroup_destroy(&cg, &e) == 0, "the cgroup is removed (%s)",
	    e.message);
	return done_testing();
}
