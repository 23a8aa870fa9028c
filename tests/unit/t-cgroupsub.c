/*
 * t-cgroupsub: a warm session's cgroups (cgroupsub.c): a command's limits
 * beneath the session's, the command's cgroup made beneath the session's
 * from the paths its record keeps, entered by a child through the open
 * file alone, removed with its counters read, and gc of a command's
 * cgroup whose client died while the session lives.  The real cgroup part
 * runs where a cgroup can be made (root here) and skips with the reason
 * otherwise; nothing is left behind.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "cgroup.h"
#include "error.h"

static void
test_child_limits(void)
{
	struct sbx_limits s, c;

	memset(&s, 0, sizeof(s));
	s.memory_bytes = 64ULL << 20;
	s.pids = 32;
	s.cpus = 0.5;
	s.wanted = SBX_LIM_MEMORY | SBX_LIM_PIDS | SBX_LIM_CPUS;
	sbx_cgroup_child_limits(&s, &c);
	ok(c.memory_bytes == 56ULL << 20, "64 MiB session: 56 MiB a command");
	ok(c.pids == 28, "32 tasks: 28 a command (got %llu)", c.pids);
	ok(c.cpus == 0.5 && c.wanted == s.wanted, "cpus and flags as is");
	s.memory_bytes = 1ULL << 30;
	s.pids = 1024;
	sbx_cgroup_child_limits(&s, &c);
	ok(c.memory_bytes == (1ULL << 30) - (16ULL << 20),
	    "1 GiB: the reserve stops at 16 MiB");
	ok(c.pids == 1020, "1024 tasks: the reserve stops at 4");
	s.pids = 3;
	sbx_cgroup_child_limits(&s, &c);
	ok(c.pids == 3, "3 tasks: no reserve to take (got %llu)", c.pids);
	s.pids = 1;
	s.memory_bytes = 0;
	s.wanted = SBX_LIM_PIDS;
	sbx_cgroup_child_limits(&s, &c);
	ok(c.pids == 1 && c.memory_bytes == 0 && c.wanted == SBX_LIM_PIDS,
	    "1 task stays 1; no memory limit stays none");
}

static void
test_no_cgroup(void)
{
	struct sbx_cg_where w;
	struct sbx_cgroup   cg;
	struct sbx_limits   l;
	struct sbx_error    e;
	char name[SBX_CG_NAME_MAX + 1], dir[] = "/tmp/t-cgsub.XXXXXX";
	char path[PATH_MAX];
	int  rc;

	memset(&l, 0, sizeof(l));
	l.pids = 8;
	l.wanted = SBX_LIM_PIDS;
	memset(&w, 0, sizeof(w));
	sbx_cgroup_name(name, sizeof(name));
	memset(&e, 0, sizeof(e));
	rc = sbx_cgroup_create_child(&w, name, &l, &cg, &e);
	ok(rc == 0 && cg.backend == SBX_CG_NONE && cg.why[0] != '\0',
	    "a session without a cgroup: none, and why (%s)", cg.why);
	sbx_cgroup_destroy(&cg, &e);
	rc = sbx_cgroup_create_child(&w, "sbx-1-x", &l, &cg, &e);
	ok(rc == -1 && e.reason != NULL &&
		strcmp(e.reason, "invalid_name") == 0,
	    "a name without our pid is refused");
	sbx_cgroup_destroy(&cg, &e);
	/* A record that names a directory which is no cgroup: nothing is
	 * made in it. */
	if (mkdtemp(dir) == NULL) {
		skip("mkdtemp: %s", strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/sbx-%ld-abc", dir, (long)getpid());
	(void)mkdir(path, 0755);
	w.backend = SBX_CG_V1;
	w.v1[SBX_CG1_PIDS] = path;
	rc = sbx_cgroup_create_child(&w, name, &l, &cg, &e);
	ok(rc == 0 && cg.backend == SBX_CG_NONE,
	    "a parent that is no cgroup file system: none (%s)", cg.why);
	sbx_cgroup_destroy(&cg, &e);
	snprintf(path + strlen(path), sizeof(path) - strlen(path), "/%s", name);
	ok(access(path, F_OK) == -1, "and nothing made in it");
	*strrchr(path, '/') = '\0';
	rmdir(path);
	rmdir(dir);
}

/* The directory of the child's cgroup in the pids hierarchy (v1) or the
 * unified one (v2). */
static const char *
dir_of(const struct sbx_cgroup *cg)
{
	return cg->backend == SBX_CG_V2 ? cg->v2 : cg->v1[SBX_CG1_PIDS];
}

static long long
read_num(const char *dir, const char *file)
{
	char  path[PATH_MAX + 32], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fgets(buf, sizeof(buf), f) == NULL) {
		fclose(f);
		return -1;
	}
	fclose(f);
	return strtoll(buf, NULL, 10);
}

/* Does /proc/pid/cgroup name `name` (any hierarchy)? */
static int
proc_in(pid_t pid, const char *name)
{
	char	path[64], buf[4096];
	ssize_t n;
	int	fd;

	snprintf(path, sizeof(path), "/proc/%ld/cgroup", (long)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strstr(buf, name) != NULL;
}

static void
test_real(void)
{
	struct sbx_cgroup   ses, cmd;
	struct sbx_cg_where w;
	struct sbx_limits   l, cl;
	struct sbx_error    e;
	struct sbx_cg_stats st;
	char		    sname[SBX_CG_NAME_MAX + 1];
	char		    cname[SBX_CG_NAME_MAX + 1], stale[PATH_MAX];
	char		    cpath[PATH_MAX];
	int		    rc, status, p[2];
	pid_t		    pid, dead;
	char		    c;

	memset(&l, 0, sizeof(l));
	l.pids = 32;
	l.memory_bytes = 64ULL << 20;
	l.wanted = SBX_LIM_PIDS | SBX_LIM_MEMORY;
	sbx_cgroup_name(sname, sizeof(sname));
	memset(&e, 0, sizeof(e));
	rc = sbx_cgroup_create(sname, &l, &ses, &e);
	if (rc == -1 || ses.backend == SBX_CG_NONE) {
		skip_n(14, "no writable cgroup here (%s)",
		    geteuid() == 0 ? ses.why : "not root, none delegated");
		sbx_cgroup_destroy(&ses, &e);
		return;
	}
	rc = sbx_cgroup_leaf(&ses, &e);
	ok(rc == 0, "the session's leaf (%s)", rc == 0 ? "ok" : e.message);
	sbx_cgroup_where(&ses, &w);
	sbx_cgroup_child_limits(&l, &cl);
	sbx_cgroup_name(cname, sizeof(cname));
	rc = sbx_cgroup_create_child(&w, cname, &cl, &cmd, &e);
	ok(rc == 0 && cmd.backend == ses.backend &&
		cmd.enforced == (SBX_LIM_PIDS | SBX_LIM_MEMORY),
	    "a command's cgroup, %s, both limits (%s)",
	    sbx_cgroup_backend_name(cmd.backend),
	    rc == 0 ? cmd.why : e.message);
	if (rc == -1 || cmd.backend == SBX_CG_NONE) {
		skip_n(12, "no command cgroup");
		sbx_cgroup_destroy(&cmd, &e);
		sbx_cgroup_destroy(&ses, &e);
		return;
	}
	snprintf(cpath, sizeof(cpath), "%s", dir_of(&cmd));
	ok(strncmp(cpath, dir_of(&ses), strlen(dir_of(&ses))) == 0 &&
		read_num(cpath, "pids.max") == 28,
	    "beneath the session's, pids.max 28 (%s)", cpath);
	/* A child enters by the open file alone, as pid 1's child does. */
	if (pipe(p) == -1 || (pid = fork()) == -1) {
		skip_n(10, "pipe/fork: %s", strerror(errno));
		sbx_cgroup_destroy(&cmd, &e);
		sbx_cgroup_destroy(&ses, &e);
		return;
	}
	if (pid == 0) {
		close(p[0]);
		c = sbx_cgroup_enter(&cmd) == 0 ? 'y' : 'n';
		(void)!write(p[1], &c, 1);
		pause();
		_exit(0);
	}
	close(p[1]);
	c = 'n';
	(void)!read(p[0], &c, 1);
	close(p[0]);
	ok(c == 'y' && proc_in(pid, cname), "the child is in it");
	rc = sbx_cgroup_stats(&cmd, &st);
	ok(rc == 0 && st.have_pids_events && st.pids_max_events == 0,
	    "its counters read");
	/* A client's view of it (the record's paths): opened for its
	 * counters, let go without removing anything. */
	{
		struct sbx_cgroup   view;
		struct sbx_cg_where vw;
		struct sbx_cg_stats vs;

		sbx_cgroup_where(&cmd, &vw);
		rc = sbx_cgroup_open_where(&vw, &view);
		ok(rc == 0 && view.backend == cmd.backend,
		    "opened from its paths, %s",
		    sbx_cgroup_backend_name(view.backend));
		rc = sbx_cgroup_stats(&view, &vs);
		ok(rc == 0 && vs.have_pids_events == st.have_pids_events,
		    "the same counters through it");
		rc = sbx_cgroup_peak_reset(&view);
		ok(view.backend == SBX_CG_V1 ? rc == 0 : rc == -1,
		    "the peak restarts on v1 only (%d)", rc);
		sbx_cgroup_close(&view);
		ok(access(cpath, F_OK) == 0 && proc_in(pid, cname),
		    "closing it removes nothing");
		vw.v2 = vw.backend == SBX_CG_V2 ? "/tmp" : NULL;
		if (vw.backend == SBX_CG_V1)
			vw.v1[SBX_CG1_PIDS] = "/tmp";
		rc = sbx_cgroup_open_where(&vw, &view);
		ok(rc == -1,
		    "a path that is not one of sbx's cgroups: refused");
		sbx_cgroup_close(&view);
	}
	rc = sbx_cgroup_destroy(&cmd, &e);
	waitpid(pid, &status, 0);
	ok(rc == 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL &&
		access(cpath, F_OK) == -1,
	    "destroy killed the child and removed the cgroup");
	ok(access(dir_of(&ses), F_OK) == 0, "the session's cgroup stays");
	/* A client killed with -9 left its command's cgroup: gc removes
	 * it, and leaves the live session's. */
	if ((dead = fork()) == 0)
		_exit(0);
	waitpid(dead, &status, 0);
	snprintf(stale, sizeof(stale), "%s/sbx-%ld-deadbeef", dir_of(&ses),
	    (long)dead);
	rc = mkdir(stale, 0755);
	(void)sbx_cgroup_gc(&e);
	ok(rc == 0 && access(stale, F_OK) == -1 &&
		access(dir_of(&ses), F_OK) == 0,
	    "gc removes a dead client's command cgroup, not the session's");
	(void)rmdir(stale);
	rc = sbx_cgroup_destroy(&ses, &e);
	ok(rc == 0, "the session's cgroup removed");
}

/* What a command's counters are: the difference of two readings. */
static void
test_since(void)
{
	struct sbx_cg_stats a, b;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.have_oom = b.have_oom = 1;
	a.oom_kills = 2;
	b.oom_kills = 3;
	a.have_pids_events = b.have_pids_events = 1;
	a.pids_max_events = b.pids_max_events = 7;
	a.have_cpu = b.have_cpu = 1;
	a.cpu_usage_usec = 1000;
	b.cpu_usage_usec = 4500;
	b.have_peak = 1;
	b.memory_peak = 42;
	b.have_failcnt = 1;
	b.memory_failcnt = 9;
	sbx_cgroup_stats_since(&b, &a);
	ok(b.have_oom && b.oom_kills == 1, "one OOM kill since");
	ok(b.have_pids_events && b.pids_max_events == 0,
	    "no task-limit hit since");
	ok(b.have_cpu && b.cpu_usage_usec == 3500, "3.5 ms of CPU since");
	ok(b.have_peak && b.memory_peak == 42, "the peak as read");
	ok(!b.have_failcnt, "a counter the first reading lacked: dropped");
	a.oom_kills = 5;
	b.oom_kills = 1;
	b.have_oom = 1;
	sbx_cgroup_stats_since(&b, &a);
	ok(b.oom_kills == 0, "a counter that went back: 0, not a wrap");
}

int
main(void)
{
	test_since();
	test_child_limits();
	test_no_cgroup();
	test_real();
	return done_testing();
}
