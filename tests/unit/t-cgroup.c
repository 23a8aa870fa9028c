/* t-cgroup: per-run cgroups: limits written, enter, kill, pids, OOM, gc.
 *
 * Needs a usable backend (root on cgroup v1, or a delegated cgroup v2);
 * skips with the reason otherwise. Leaves no cgroup, process or temp dir
 * behind even when a check fails: everything is undone from atexit.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "cgroup.h"
#include "proc.h"

#define MIB		(1024ULL * 1024ULL)
#define STALE		"sbx-99999999-x"
#define MAXDIRS		16

static struct sbx_cgroup cg, cg2;
static pid_t	 kids[16];
static int	 nkids;
static char	 tmpdir[64];
static char	*planted[MAXDIRS];
static int	 nplanted;
static char	*prepared;

static void
cleanup(void)
{
	struct sbx_error	 e;
	int			 i;

	for (i = 0; i < nkids; i++)
		if (kids[i] > 0) {
			kill(kids[i], SIGKILL);
			waitpid(kids[i], NULL, 0);
		}
	(void)sbx_cgroup_destroy(&cg, &e);
	(void)sbx_cgroup_destroy(&cg2, &e);
	for (i = 0; i < nplanted; i++) {
		(void)rmdir(planted[i]);
		free(planted[i]);
	}
	if (prepared != NULL) {
		(void)rmdir(prepared);
		free(prepared);
	}
	if (tmpdir[0] != '\0') {
		(void)chmod(tmpdir, 0700);
		(void)rmdir(tmpdir);
	}
	/* Orphans reparented to us (subreaper). */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static pid_t
spawn(int (*fn)(void *), void *arg)
{
	pid_t	 pid;

	fflush(stdout);
	if ((pid = fork()) == 0)
		_exit(fn(arg));
	if (pid > 0 && nkids < (int)(sizeof(kids) / sizeof(kids[0])))
		kids[nkids++] = pid;
	return pid;
}

static int
reap(pid_t pid)
{
	int	 st, i;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	for (i = 0; i < nkids; i++)
		if (kids[i] == pid)
			kids[i] = 0;
	return st;
}

/* A file's first line. */
static int
read_line(const char *dir, const char *file, char *out, size_t len)
{
	char	 path[PATH_MAX];
	ssize_t	 n;
	int	 fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, out, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

static int
file_is(const char *dir, const char *file, const char *want)
{
	char	 got[256];

	if (read_line(dir, file, got, sizeof(got)) == -1) {
		diag("cannot read %s/%s", dir, file);
		return 0;
	}
	if (strcmp(got, want) != 0)
		diag("%s/%s: got '%s' want '%s'", dir, file, got, want);
	return strcmp(got, want) == 0;
}

/* Is pid listed in dir/cgroup.procs? */
static int
listed(const char *dir, pid_t pid)
{
	char	 path[PATH_MAX], line[32];
	FILE	*f;
	int	 found = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL)
		if (atol(line) == (long)pid)
			found = 1;
	fclose(f);
	return found;
}

static int
nprocs_in(const char *dir)
{
	char	 path[PATH_MAX], line[32];
	FILE	*f;
	int	 n = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		n++;
	fclose(f);
	return n;
}

/* The run's directories (v2, or the distinct v1 ones). */
static int
run_dirs(const struct sbx_cgroup *c, const char **dirs)
{
	int	 i, n = 0;

	if (c->v2 != NULL)
		dirs[n++] = c->v2;
	for (i = 0; i < SBX_CG1_N; i++)
		if (c->v1[i] != NULL)
			dirs[n++] = c->v1[i];
	return n;
}

/* Every directory a run of ours could have been created under: the own
 * cgroup in the v2 mount and in each v1 hierarchy. */
static int
candidate_parents(char **out, int max)
{
	static const char *ctl[] = { "memory", "pids", "cpu", "cpuacct",
	    "freezer" };
	char	 line[PATH_MAX + 64], path[PATH_MAX + 64], *c1, *c2, *tok,
		*save;
	FILE	*f;
	size_t	 i;
	int	 n = 0;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL)
		return 0;
	while (fgets(line, sizeof(line), f) != NULL && n + 2 <= max) {
		line[strcspn(line, "\n")] = '\0';
		if ((c1 = strchr(line, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c2++ = '\0';
		if (c1[1] == '\0') {
			snprintf(path, sizeof(path), "/sys/fs/cgroup%s", c2);
			out[n++] = strdup(path);
			snprintf(path, sizeof(path), "/sys/fs/cgroup/unified%s",
			    c2);
			out[n++] = strdup(path);
			continue;
		}
		for (tok = strtok_r(c1 + 1, ",", &save); tok != NULL;
		    tok = strtok_r(NULL, ",", &save))
			for (i = 0; i < sizeof(ctl) / sizeof(ctl[0]); i++)
				if (strcmp(tok, ctl[i]) == 0 && n < max) {
					snprintf(path, sizeof(path),
					    "/sys/fs/cgroup/%s%s", ctl[i], c2);
					out[n++] = strdup(path);
				}
	}
	fclose(f);
	return n;
}

/* Directories named sbx-<our pid>-* or the planted stale name. */
static int
count_ours(void)
{
	char		*par[MAXDIRS], pfx[32];
	struct dirent	*de;
	DIR		*d;
	int		 n, i, count = 0;

	snprintf(pfx, sizeof(pfx), "sbx-%ld-", (long)getpid());
	n = candidate_parents(par, MAXDIRS);
	for (i = 0; i < n; i++) {
		if (par[i] != NULL && (d = opendir(par[i])) != NULL) {
			while ((de = readdir(d)) != NULL)
				if (strncmp(de->d_name, pfx, strlen(pfx)) ==
				    0 || strcmp(de->d_name, STALE) == 0)
					count++;
			closedir(d);
		}
		free(par[i]);
	}
	return count;
}

static int
count_fds(void)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static int sync_fd[2];

/* Child: join the cgroup, say so, wait to be killed. */
static int
child_pause(void *arg)
{
	const struct sbx_cgroup *c = arg;

	if (sbx_cgroup_enter(c) == -1)
		return 99;
	if (write(sync_fd[1], "x", 1) != 1)
		return 97;
	for (;;)
		pause();
}

/* Child: join, fork 100 times; exit with the forks that worked, +128 if
 * one failed with EAGAIN. */
static int
child_forker(void *arg)
{
	const struct sbx_cgroup *c = arg;
	pid_t	 p;
	int	 i, okc = 0, again = 0;

	if (sbx_cgroup_enter(c) == -1)
		return 99;
	for (i = 0; i < 100; i++) {
		p = fork();
		if (p == 0) {
			for (;;)
				pause();
		}
		if (p > 0)
			okc++;
		else if (errno == EAGAIN)
			again = 1;
	}
	return (okc > 100 ? 100 : okc) | (again ? 128 : 0);
}

/* Child: join, then allocate and touch 256 MiB. */
static int
child_hog(void *arg)
{
	const struct sbx_cgroup *c = arg;
	size_t	 n = 256 * MIB, i;
	char	*p;

	if (sbx_cgroup_enter(c) == -1)
		return 99;
	if ((p = malloc(n)) == NULL)
		return 98;
	for (i = 0; i < n; i += 4096)
		p[i] = (char)i;
	return p[n / 2] == 0 ? 0 : 1;
}

/* Child: move itself into the planted stale cgroups, wait. */
static int
child_stale(void *arg)
{
	char	 path[PATH_MAX];
	int	 i, fd;

	(void)arg;
	for (i = 0; i < nplanted; i++) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", planted[i]);
		if ((fd = open(path, O_WRONLY)) == -1 || write(fd, "0", 1) != 1)
			return 99;
		close(fd);
	}
	if (write(sync_fd[1], "x", 1) != 1)
		return 97;
	for (;;)
		pause();
}

/* Child: exit at once (a zombie until we reap it). */
static int
child_exit(void *arg)
{
	(void)arg;
	return 0;
}

/* Child: wait to be killed. */
static int
child_wait(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return 0;
}

/* Plant parent/sbx-<pid>-0badc0de[-<start>] (start 0: none); its path is
 * kept in planted[] for the clean-up. */
static char *
plant(const char *parent, pid_t pid, unsigned long long start)
{
	char	 path[PATH_MAX];
	int	 n;

	if (nplanted >= MAXDIRS)
		return NULL;
	if (start != 0)
		n = snprintf(path, sizeof(path), "%s/sbx-%ld-0badc0de-%llu",
		    parent, (long)pid, start);
	else
		n = snprintf(path, sizeof(path), "%s/sbx-%ld-0badc0de",
		    parent, (long)pid);
	if (n < 0 || (size_t)n >= sizeof(path) || mkdir(path, 0755) == -1)
		return NULL;
	return planted[nplanted++] = strdup(path);
}

static int
all_gone(char **dirs, int n)
{
	struct stat	 st;
	int		 i, gone = 1;

	for (i = 0; i < n; i++)
		if (stat(dirs[i], &st) == 0 || errno != ENOENT) {
			diag("still there: %s", dirs[i]);
			gone = 0;
		}
	return gone;
}

static void
test_api(void)
{
	struct sbx_cgroup	 c;
	struct sbx_limits	 lim = { 0, 0, 0, 0 };
	struct sbx_error	 e;
	char			 name[SBX_CG_NAME_MAX + 1], want[32];

	is_str(sbx_cgroup_backend_name(SBX_CG_V2), "cgroup2", "name v2");
	is_str(sbx_cgroup_backend_name(SBX_CG_V1), "cgroup1", "name v1");
	is_str(sbx_cgroup_backend_name(SBX_CG_NONE), "none", "name none");
	ok(sbx_cgroup_name(name, sizeof(name)) == 0, "sbx_cgroup_name");
	snprintf(want, sizeof(want), "sbx-%ld-", (long)getpid());
	{
		struct sbx_proc_stat	 ps;
		char			 st[32];

		ok(sbx_proc_stat(getpid(), &ps) == 0, "our start time");
		snprintf(st, sizeof(st), "-%llu", ps.start);
		ok(strncmp(name, want, strlen(want)) == 0 &&
		    strlen(name) == strlen(want) + 8 + strlen(st) &&
		    strcmp(name + strlen(want) + 8, st) == 0,
		    "name is %s<8 hex>%s: %s", want, st, name);
	}
	ok(sbx_cgroup_name(name, 8) == -1, "short buffer refused");

	memset(&c, 0, sizeof(c));
	ok(sbx_cgroup_destroy(&c, &e) == 0, "destroy of a zeroed cgroup");
	ok(sbx_cgroup_create("../etc", &lim, &c, &e) == -1 &&
	    strcmp(e.reason, "invalid_name") == 0, "`../etc` refused");
	ok(sbx_cgroup_create("sbx-1-x", &lim, &c, &e) == -1 &&
	    strcmp(e.reason, "invalid_name") == 0, "another pid refused");
	snprintf(name, sizeof(name), "sbx-%ld-A", (long)getpid());
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0, "upper case refused");
	ok(c.backend == SBX_CG_NONE && sbx_cgroup_destroy(&c, &e) == 0,
	    "failed create leaves a destroyable cgroup");
	snprintf(name, sizeof(name), "sbx-%ld-x", (long)getpid());
	lim.wanted = SBX_LIM_MEMORY;
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.reason, "limits_inconsistent") == 0,
	    "flag without a value refused");
	lim.wanted = 0;
	lim.pids = 5;
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.reason, "limits_inconsistent") == 0,
	    "value without its flag refused");
	lim.pids = 5000000;
	lim.wanted = SBX_LIM_PIDS;
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.field, "pids") == 0, "pids above PID_MAX_LIMIT refused");
	lim.pids = 0;
	lim.cpus = 0.001;
	lim.wanted = SBX_LIM_CPUS;
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.field, "cpus") == 0, "cpus 0.001 refused");
	sbx_cgroup_destroy(&c, &e);
}

static void
test_none(void)
{
	struct sbx_limits	 lim = { 64 * MIB, 0.5, 16, SBX_LIM_MEMORY |
				     SBX_LIM_CPUS | SBX_LIM_PIDS };
	struct sbx_error	 e;
	struct sbx_cgroup	 c;
	char			 name[SBX_CG_NAME_MAX + 1];
	DIR			*d;
	struct dirent		*de;
	int			 rc, entries = 0;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/t-cgroup.XXXXXX");
	if (mkdtemp(tmpdir) == NULL) {
		tmpdir[0] = '\0';
		skip("mkdtemp failed");
		return;
	}
	chmod(tmpdir, 0555);
	setenv("SBX_CGROUP_ROOT", tmpdir, 1);
	sbx_cgroup_name(name, sizeof(name));
	memset(&e, 0, sizeof(e));
	rc = sbx_cgroup_create(name, &lim, &c, &e);
	ok(rc == 0 && c.backend == SBX_CG_NONE,
	    "SBX_CGROUP_ROOT=<empty dir>: backend none (rc %d)", rc);
	ok(e.kind != NULL && strcmp(e.kind, SBX_K_UNAVAILABLE) == 0 &&
	    strcmp(e.reason, "cgroup_unavailable") == 0 && e.hint[0] != '\0',
	    "... reported as unavailable with a hint");
	diag("why: %s", c.why);
	ok(c.nprocs == 0 && c.enforced == 0, "... nothing to enter");
	ok(sbx_cgroup_enter(&c) == 0, "... enter is a no-op");
	if ((d = opendir(tmpdir)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				entries++;
		closedir(d);
	}
	is_int(entries, 0, "... nothing created in it");
	ok(sbx_cgroup_destroy(&c, &e) == 0, "... destroy");
	is_int(sbx_cgroup_gc(&e), 0, "... gc finds nothing");
	setenv("SBX_CGROUP_ROOT", "relative", 1);
	ok(sbx_cgroup_create(name, &lim, &c, &e) == -1 &&
	    strcmp(e.field, "SBX_CGROUP_ROOT") == 0,
	    "relative SBX_CGROUP_ROOT refused");
	sbx_cgroup_destroy(&c, &e);
	unsetenv("SBX_CGROUP_ROOT");
	chmod(tmpdir, 0700);
	rmdir(tmpdir);
	tmpdir[0] = '\0';
}

/* v2 without limits: on a hybrid machine the unified hierarchy has no
 * controllers but can still hold a run for cgroup.kill. */
static void
test_v2_plain(void)
{
	struct sbx_limits	 lim = { 0, 0, 0, 0 };
	struct sbx_error	 e;
	char			 name[SBX_CG_NAME_MAX + 1], c;
	char			*dir;
	pid_t			 pid;
	int			 st;

	sbx_cgroup_name(name, sizeof(name));
	if (sbx_cgroup_create(name, &lim, &cg2, &e) == -1 ||
	    cg2.backend != SBX_CG_V2) {
		skip("no cgroup2 hierarchy usable without limits");
		sbx_cgroup_destroy(&cg2, &e);
		return;
	}
	ok(cg2.v2 != NULL && cg2.nprocs == 1 && cg2.enforced == 0,
	    "cgroup2 without limits: %s", cg2.v2);
	if (pipe2(sync_fd, O_CLOEXEC) == -1)
		return;
	pid = spawn(child_pause, &cg2);
	close(sync_fd[1]);
	ok(read(sync_fd[0], &c, 1) == 1, "child entered");
	close(sync_fd[0]);
	ok(listed(cg2.v2, pid), "child listed in %s/cgroup.procs", cg2.v2);
	ok(sbx_cgroup_kill(&cg2) == 0, "kill (cgroup.kill)");
	st = reap(pid);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child got SIGKILL");
	dir = strdup(cg2.v2);
	ok(sbx_cgroup_destroy(&cg2, &e) == 0, "destroy");
	ok(all_gone(&dir, 1), "directory removed");
	free(dir);
}

/* An admin-prepared cgroup2 root (not a mount point): the run goes
 * directly beneath it. */
static void
test_v2_prepared(void)
{
	struct sbx_limits	 lim = { 0, 0, 0, 0 };
	struct sbx_error	 e;
	struct sbx_cgroup	 c;
	char			 name[SBX_CG_NAME_MAX + 1], path[PATH_MAX];
	char			*par[MAXDIRS];
	int			 i, n, rc;

	n = candidate_parents(par, MAXDIRS);
	for (i = 0; i < n; i++) {
		/* Only a cgroup2 directory (it has cgroup.controllers) can
		 * be a prepared root. */
		snprintf(path, sizeof(path), "%s/cgroup.controllers",
		    par[i] ? par[i] : "");
		if (prepared == NULL && par[i] != NULL &&
		    access(path, F_OK) == 0 && access(par[i], W_OK) == 0) {
			snprintf(path, sizeof(path), "%s%ssbx-%ld-prep", par[i],
			    par[i][strlen(par[i]) - 1] == '/' ? "" : "/",
			    (long)getpid());
			if (mkdir(path, 0755) == 0)
				prepared = strdup(path);
		}
		free(par[i]);
	}
	if (prepared == NULL) {
		skip("cannot prepare a cgroup2 directory");
		return;
	}
	sbx_cgroup_name(name, sizeof(name));
	rc = sbx_cgroup_create_at(prepared, "/nonexistent", name, &lim, &c,
	    &e);
	snprintf(path, sizeof(path), "%s/%s", prepared, name);
	ok(rc == 0 && c.backend == SBX_CG_V2 && c.v2 != NULL &&
	    strcmp(c.v2, path) == 0, "prepared root used as is: %s",
	    c.v2 ? c.v2 : c.why);
	ok(sbx_cgroup_destroy(&c, &e) == 0, "destroy");
	ok(rmdir(prepared) == 0, "prepared root empty again");
	free(prepared);
	prepared = NULL;
}

int
main(void)
{
	struct sbx_limits	 lim = { 64 * MIB, 0.5, 16, SBX_LIM_MEMORY |
				     SBX_LIM_CPUS | SBX_LIM_PIDS };
	struct sbx_cg_stats	 cs;
	struct sbx_error	 e;
	const char		*dirs[SBX_CG1_N + 1];
	char			*saved[SBX_CG1_N + 1], *slash;
	char			 name[SBX_CG_NAME_MAX + 1], c, want[64];
	int			 before, fds_before, nd, i, st, rc, n, inall;
	pid_t			 pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	atexit(cleanup);
	/* Orphans of the forking child come back to us, to be reaped. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	fds_before = count_fds();
	before = count_ours();

	test_api();
	test_none();

	sbx_cgroup_name(name, sizeof(name));
	memset(&e, 0, sizeof(e));
	rc = sbx_cgroup_create(name, &lim, &cg, &e);
	ok(rc == 0, "create %s (%s)", name, rc == 0 ? "ok" : e.message);
	if (rc == -1 || cg.backend == SBX_CG_NONE) {
		diag("%s", cg.why);
		skip(geteuid() == 0 ? "no usable cgroup backend" :
		    "no usable cgroup backend (not root, none delegated)");
		sbx_cgroup_destroy(&cg, &e);
		test_v2_plain();
		return done_testing();
	}
	diag("backend %s, why others were passed over: %s",
	    sbx_cgroup_backend_name(cg.backend), cg.why);
	is_int(cg.enforced, SBX_LIM_MEMORY | SBX_LIM_CPUS | SBX_LIM_PIDS,
	    "all three limits enforced");
	nd = run_dirs(&cg, dirs);
	ok(nd >= 1 && cg.nprocs == nd, "%d directories, %d procs fds", nd,
	    cg.nprocs);
	for (i = 0; i < nd; i++)
		diag("dir %s", dirs[i]);
	ok(cg.procs_fd[0] >= 0 &&
	    (fcntl(cg.procs_fd[0], F_GETFD) & FD_CLOEXEC),
	    "procs fds are close-on-exec");

	if (cg.backend == SBX_CG_V2) {
		ok(file_is(cg.v2, "memory.max", "67108864"), "memory.max");
		ok(file_is(cg.v2, "pids.max", "16"), "pids.max");
		ok(file_is(cg.v2, "cpu.max", "50000 100000"), "cpu.max");
		if (cg.swap_limited)
			ok(file_is(cg.v2, "memory.swap.max", "0"),
			    "memory.swap.max");
	} else {
		ok(file_is(cg.v1[SBX_CG1_MEMORY], "memory.limit_in_bytes",
		    "67108864"), "memory.limit_in_bytes");
		if (cg.swap_limited)
			ok(file_is(cg.v1[SBX_CG1_MEMORY],
			    "memory.memsw.limit_in_bytes", "67108864"),
			    "memory.memsw.limit_in_bytes");
		ok(file_is(cg.v1[SBX_CG1_PIDS], "pids.max", "16"), "pids.max");
		ok(file_is(cg.v1[SBX_CG1_CPU], "cpu.cfs_period_us", "100000"),
		    "cpu.cfs_period_us");
		ok(file_is(cg.v1[SBX_CG1_CPU], "cpu.cfs_quota_us", "50000"),
		    "cpu.cfs_quota_us");
		ok(cg.v1[SBX_CG1_FREEZER] != NULL, "freezer joined");
	}

	/* enter + kill */
	if (pipe2(sync_fd, O_CLOEXEC) == -1)
		return 1;
	pid = spawn(child_pause, &cg);
	close(sync_fd[1]);
	ok(read(sync_fd[0], &c, 1) == 1, "child entered");
	close(sync_fd[0]);
	for (inall = 1, i = 0; i < nd; i++)
		if (!listed(dirs[i], pid))
			inall = 0;
	ok(inall, "child %ld listed in every cgroup.procs", (long)pid);
	ok(sbx_cgroup_kill(&cg) == 0, "kill");
	st = reap(pid);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child got SIGKILL");

	/* pids.max 16 */
	pid = spawn(child_forker, &cg);
	st = reap(pid);
	n = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	ok(n >= 0 && n != 99 && (n & 127) < 16, "forks under pids.max 16: %d",
	    n & 127);
	ok(n >= 0 && (n & 128), "a fork failed with EAGAIN");
	ok(nprocs_in(dirs[0]) >= 10, "grandchildren still in the cgroup");
	ok(sbx_cgroup_kill(&cg) == 0, "kill the grandchildren");
	for (inall = 1, i = 0; i < nd; i++)
		if (nprocs_in(dirs[i]) != 0)
			inall = 0;
	ok(inall, "cgroup empty after kill");
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	/* memory.max 64 MiB */
	pid = spawn(child_hog, &cg);
	st = reap(pid);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "256 MiB hog killed (status 0x%x)", st);
	ok(sbx_cgroup_stats(&cg, &cs) == 0, "stats");
	ok((cs.have_oom && cs.oom_kills >= 1) ||
	    (cs.have_failcnt && cs.memory_failcnt > 0),
	    "OOM counted: oom_kill %llu (have %d), failcnt %llu (have %d)",
	    cs.oom_kills, cs.have_oom, cs.memory_failcnt, cs.have_failcnt);
	ok(cs.have_pids_events && cs.pids_max_events >= 1,
	    "pids max events %llu", cs.pids_max_events);
	ok(cs.have_cpu && cs.cpu_usage_usec > 0, "cpu usage %llu us",
	    cs.cpu_usage_usec);
	ok(!cs.have_peak || (cs.memory_peak > 0 &&
	    cs.memory_peak <= 64 * MIB), "memory peak %llu <= 64 MiB",
	    cs.memory_peak);

	/* destroy */
	for (i = 0; i < nd; i++)
		saved[i] = strdup(dirs[i]);
	ok(sbx_cgroup_destroy(&cg, &e) == 0, "destroy");
	ok(all_gone(saved, nd), "directories removed");
	ok(sbx_cgroup_destroy(&cg, &e) == 0, "destroy twice is harmless");

	/* gc: a stale run of a supervisor killed with -9, with a process */
	for (i = 0; i < nd; i++) {
		if ((slash = strrchr(saved[i], '/')) == NULL)
			continue;
		*slash = '\0';
		snprintf(want, sizeof(want), "/%s", STALE);
		planted[nplanted] = malloc(strlen(saved[i]) + sizeof(want));
		strcpy(planted[nplanted], saved[i]);
		strcat(planted[nplanted], want);
		if (mkdir(planted[nplanted], 0755) == 0)
			nplanted++;
		else
			free(planted[nplanted]);
	}
	for (i = 0; i < nd; i++)
		free(saved[i]);
	is_int(nplanted, nd, "planted stale " STALE " next to each run");
	if (pipe2(sync_fd, O_CLOEXEC) == -1)
		return 1;
	pid = spawn(child_stale, NULL);
	close(sync_fd[1]);
	ok(read(sync_fd[0], &c, 1) == 1, "a process lives in it");
	close(sync_fd[0]);
	n = sbx_cgroup_gc(&e);
	ok(n >= nplanted, "gc removed %d directories", n);
	ok(all_gone(planted, nplanted), "stale cgroups removed");
	st = reap(pid);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "its process was killed");
	is_int(sbx_cgroup_gc(&e), 0, "second gc finds nothing");

	/* gc goes by what the kernel says of a supervisor, not only by
	 * kill(pid, 0): one killed with -9 whose parent never reaps it is a
	 * zombie (kill succeeds on it) and dead; a pid that a later process
	 * got (another start time) is dead; a running supervisor with its
	 * start time, or in a name made before the start time was there,
	 * is alive.  Issue 30: 4 of 30 supervisors killed under a parent
	 * that had not reaped them yet kept their cgroups. */
	if (nplanted > 0) {
		struct sbx_proc_stat	 ps;
		char			 par[PATH_MAX], *zd, *rd, *ld, *od;
		pid_t			 zpid, lpid;
		unsigned long long	 zstart = 0, lstart = 0;

		snprintf(par, sizeof(par), "%s", planted[0]);
		*strrchr(par, '/') = '\0';
		zpid = spawn(child_exit, NULL);
		for (i = 0; i < 3000; i++) {
			if (sbx_proc_stat(zpid, &ps) == 0 && ps.state == 'Z')
				break;
			usleep(10000);
		}
		rc = kill(zpid, 0);
		ok(i < 3000 && rc == 0, "child %ld is a zombie "
		    "(state %c), and kill(pid, 0) finds it", (long)zpid,
		    ps.state);
		zstart = ps.start;
		lpid = spawn(child_wait, NULL);
		memset(&ps, 0, sizeof(ps));
		rc = sbx_proc_stat(lpid, &ps);
		ok(rc == 0 && ps.start != 0 && ps.state != 'Z',
		    "a running child: state %c, start %llu", ps.state,
		    ps.start);
		lstart = ps.start;
		zd = plant(par, zpid, zstart);
		rd = plant(par, lpid, lstart > 1 ? lstart - 1 : 2);
		ld = plant(par, lpid, lstart);
		od = plant(par, lpid, 0);
		ok(zd && rd && ld && od, "planted four runs in %s", par);
		n = sbx_cgroup_gc(&e);
		ok(zd && access(zd, F_OK) == -1 && errno == ENOENT,
		    "a zombie supervisor's run is removed");
		ok(rd && access(rd, F_OK) == -1 && errno == ENOENT,
		    "a reused pid's run (another start time) is removed");
		ok(ld && access(ld, F_OK) == 0, "a running supervisor's run "
		    "is kept");
		ok(od && access(od, F_OK) == 0, "... and one named without a "
		    "start time");
		ok(n >= 2, "gc counted them: %d", n);
		kill(lpid, SIGKILL);
		reap(lpid);
		reap(zpid);
		ok(sbx_cgroup_gc(&e) >= 2 && access(ld, F_OK) == -1 &&
		    access(od, F_OK) == -1, "once it is gone, gc removes the "
		    "other two");
	}

	test_v2_plain();
	test_v2_prepared();

	is_int(count_ours(), before, "as many sbx cgroups as before");
	is_int(count_fds(), fds_before, "no fd leaked");
	return done_testing();
}
