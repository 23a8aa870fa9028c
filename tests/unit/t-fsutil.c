/* t-fsutil: symlink-safe file-system helpers, state root, parsers. */
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "cli.h"
#include "fsutil.h"
#include "root.h"
#include "sandbox.h"

/* dfd/name/d/d/.../d, `levels` deep, with a file at the bottom: built
 * with mkdirat/openat so that PATH_MAX does not limit the test itself. */
static int
make_deep(int dfd, const char *name, int levels)
{
	int	 fd, nfd, i;

	if (mkdirat(dfd, name, 0755) == -1 ||
	    (fd = openat(dfd, name, O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	for (i = 1; i < levels; i++) {
		if (mkdirat(fd, "d", 0755) == -1 ||
		    (nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY)) == -1) {
			close(fd);
			return -1;
		}
		close(fd);
		fd = nfd;
	}
	nfd = openat(fd, "f", O_WRONLY | O_CREAT | O_EXCL, 0400);
	close(fd);
	if (nfd == -1)
		return -1;
	close(nfd);
	return 0;
}

static int
touch_at(int dfd, const char *name, mode_t mode)
{
	int	 fd;

	if ((fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL, mode)) == -1)
		return -1;
	(void)!write(fd, "x", 1);
	return close(fd);
}

/* As root, in a private mount namespace: a tmpfs and a bind mount inside
 * a tree stop its removal, and nothing beneath them is touched.  Exit 0
 * when they do, 1 when not, 2 when this cannot be tested. */
static int
mount_case(int dfd, const char *dir)
{
	struct sbx_error	 e;
	char			 p[600], q[600];
	int			 st, fd;
	pid_t			 pid;

	if ((pid = fork()) == -1)
		return 2;
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) == -1 ||
		    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
			_exit(2);
		/* A descriptor opened before unshare() still walks the old
		 * namespace's mounts: open the directory again. */
		if ((dfd = open(dir, O_RDONLY | O_DIRECTORY)) == -1)
			_exit(2);
		if (mkdirat(dfd, "mnt", 0755) == -1 ||
		    mkdirat(dfd, "mnt/a", 0755) == -1 ||
		    mkdirat(dfd, "mnt/a/m", 0755) == -1 ||
		    mkdirat(dfd, "mnt/b", 0755) == -1 ||
		    mkdirat(dfd, "mnt/b/m", 0755) == -1 ||
		    mkdirat(dfd, "bsrc", 0755) == -1 ||
		    touch_at(dfd, "bsrc/precious", 0644) == -1)
			_exit(2);
		snprintf(p, sizeof(p), "%s/mnt/a/m", dir);
		if (mount("t", p, "tmpfs", 0, NULL) == -1 ||
		    (fd = open(p, O_RDONLY | O_DIRECTORY)) == -1 ||
		    touch_at(fd, "precious", 0644) == -1)
			_exit(2);
		if (sbx_fs_rm_tree_at(dfd, "mnt/a", &e) != -1 ||
		    strcmp(e.reason, "mount_point") != 0 ||
		    faccessat(fd, "precious", F_OK, 0) == -1)
			_exit(1);
		/* A bind mount of the same file system: same st_dev. */
		snprintf(p, sizeof(p), "%s/mnt/b/m", dir);
		snprintf(q, sizeof(q), "%s/bsrc", dir);
		if (mount(q, p, NULL, MS_BIND, NULL) == -1)
			_exit(2);
		if (sbx_fs_rm_tree_at(dfd, "mnt/b", &e) != -1 ||
		    strcmp(e.reason, "mount_point") != 0 ||
		    faccessat(dfd, "bsrc/precious", F_OK, 0) == -1)
			_exit(1);
		_exit(0);
	}
	if (waitpid(pid, &st, 0) == -1 || !WIFEXITED(st))
		return 1;
	if (WEXITSTATUS(st) != 0)
		diag("mount case: exit %d", WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

/* sbx_fs_resolve_nofollow's visitor: counts, remembers the first and
 * the last path, refuses the path in `stop`. */
struct visits {
	int		 n;
	char		 first[PATH_MAX], last[PATH_MAX];
	const char	*stop;
};

static int
count_visit(int dirfd, const char *path, void *arg, struct sbx_error *e)
{
	struct visits	*v = arg;
	struct stat	 st;

	if (fstat(dirfd, &st) == -1 || !S_ISDIR(st.st_mode))
		return sbx_error_set(e, SBX_K_REJECTED, NULL, "bad_fd", "x");
	if (v->n++ == 0)
		snprintf(v->first, sizeof(v->first), "%s", path);
	snprintf(v->last, sizeof(v->last), "%s", path);
	if (v->stop != NULL && strcmp(path, v->stop) == 0)
		return sbx_error_set(e, SBX_K_REJECTED, NULL, "stopped", "x");
	return 0;
}

/* Resolve base + rel; -1 or the fd; reason in *reason. */
static int
resolve(const char *base, const char *rel, char *out, size_t outsz,
    struct visits *v, const char **reason, struct sbx_error *e)
{
	char	 p[PATH_MAX];
	int	 fd;

	snprintf(p, sizeof(p), "%s%s", base, rel);
	*reason = NULL;
	fd = sbx_fs_resolve_nofollow(p, out, outsz, v ? count_visit : NULL, v,
	    e);
	if (fd == -1)
		*reason = e->reason;
	return fd;
}

/*
 * The component-wise resolver (the --workdir walk): a symlink anywhere on
 * the way is refused and named, never followed.  Run twice: with openat2,
 * and (label "fallback") in a child whose seccomp filter answers ENOSYS to
 * openat2, as an old kernel would.  Returns the number of failed checks.
 */
static int
resolve_cases(const char *tmpl, const char *label)
{
	struct sbx_error	 e;
	struct visits		 v;
	struct stat		 st, st2;
	const char		*reason;
	char			 base[PATH_MAX], out[PATH_MAX];
	char			 want[PATH_MAX + 16];
	int			 fd, failed = tap_failed;

	/* tmpl may itself be reached through a link (/tmp on some systems):
	 * the tests below are about links beneath it. */
	if (realpath(tmpl, base) == NULL)
		return 1;
	strcat(base, "/res");

	memset(&v, 0, sizeof(v));
	fd = resolve(base, "/a/b", out, sizeof(out), &v, &reason, &e);
	snprintf(want, sizeof(want), "%s/a/b", base);
	ok(fd >= 0 && strcmp(out, want) == 0, "%s: a plain path resolves to "
	    "itself", label);
	ok(fd >= 0 && fstat(fd, &st) == 0 && stat(want, &st2) == 0 &&
	    st.st_ino == st2.st_ino && st.st_dev == st2.st_dev &&
	    (fcntl(fd, F_GETFL) & O_PATH), "%s: the descriptor is that "
	    "directory, O_PATH", label);
	ok(strcmp(v.first, "/") == 0 && strcmp(v.last, want) == 0,
	    "%s: visited / first and the directory itself last", label);
	if (fd >= 0)
		close(fd);
	fd = resolve(base, "//a/./b/", out, sizeof(out), NULL, &reason, &e);
	ok(fd >= 0 && strcmp(out, want) == 0, "%s: `.`, doubled and trailing "
	    "slashes are skipped", label);
	if (fd >= 0)
		close(fd);

	fd = resolve(base, "/link/b", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "symlink") == 0 &&
	    strstr(e.message, "`link`") != NULL, "%s: a symlink in the middle "
	    "is refused and named", label);
	fd = resolve(base, "/a/last", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "symlink") == 0 &&
	    strstr(e.message, "`last`") != NULL, "%s: a symlink as the last "
	    "component is refused", label);
	fd = resolve(base, "/a/dangling", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "symlink") == 0, "%s: a "
	    "dangling symlink is refused as a symlink", label);
	fd = resolve("", "/proc/self/root/etc", out, sizeof(out), NULL,
	    &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "symlink") == 0, "%s: a "
	    "/proc magic link is not followed", label);
	fd = resolve(base, "/a/../a", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "traversal") == 0,
	    "%s: `..` is refused", label);
	fd = resolve("", "res/a", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "relative") == 0,
	    "%s: a relative path is refused", label);
	fd = resolve(base, "/a/missing/x", out, sizeof(out), NULL, &reason,
	    &e);
	ok(fd == -1 && reason && strcmp(reason, "not_found") == 0,
	    "%s: a missing component is not_found", label);
	fd = resolve(base, "/a/file", out, sizeof(out), NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "not_a_directory") == 0,
	    "%s: a file is not_a_directory", label);
	fd = resolve(base, "/a/b", out, 8, NULL, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "too_long") == 0,
	    "%s: a path longer than the output is refused", label);
	memset(&v, 0, sizeof(v));
	snprintf(want, sizeof(want), "%s/a", base);
	v.stop = want;
	fd = resolve(base, "/a/b", out, sizeof(out), &v, &reason, &e);
	ok(fd == -1 && reason && strcmp(reason, "stopped") == 0 &&
	    strcmp(v.last, want) == 0, "%s: a visitor's refusal stops the "
	    "walk there", label);
	return tap_failed - failed;
}

/* The same cases without openat2: a child whose filter answers ENOSYS. */
static void
resolve_fallback(const char *tmpl)
{
	scmp_filter_ctx	 ctx;
	pid_t		 pid;
	int		 st, n;

	fflush(stdout);
	if ((pid = fork()) == 0) {
		ctx = seccomp_init(SCMP_ACT_ALLOW);
		if (ctx == NULL || seccomp_rule_add(ctx,
		    SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0) != 0 ||
		    seccomp_load(ctx) != 0)
			_exit(100);
		if (syscall(SYS_openat2, AT_FDCWD, "/", NULL, 0) != -1 ||
		    errno != ENOSYS)
			_exit(101);
		/* The child's lines number on from the parent's; it
		 * tells how many it printed, and whether one failed. */
		n = tap_n;
		st = resolve_cases(tmpl, "fallback");
		fflush(stdout);
		_exit((tap_n - n) | (st ? 64 : 0));
	}
	if (pid == -1 || waitpid(pid, &st, 0) == -1 || !WIFEXITED(st)) {
		ok(0, "fallback: the child ran");
		return;
	}
	n = WEXITSTATUS(st);
	if (n == 100 || n == 101) {
		skip("no seccomp here to hide openat2");
		return;
	}
	tap_n += n & 63;
	if (n & 64)
		tap_failed++;
	ok((n & 63) > 0, "fallback: the O_NOFOLLOW walk ran its cases");
}

/* sbx_fs_repair_tail on a file holding s: what is left, bytes cut. */
static void
tail_case(const char *s, const char *want, long long cut, const char *what)
{
	char	tmp[] = "/tmp/t-fsutil-tail.XXXXXX", buf[8192];
	ssize_t n;
	off_t	got;
	int	fd;

	if ((fd = mkstemp(tmp)) == -1) {
		ok(0, "%s: mkstemp", what);
		return;
	}
	unlink(tmp);
	if (sbx_fs_write_all(fd, s, strlen(s)) == -1) {
		ok(0, "%s: write", what);
		close(fd);
		return;
	}
	got = sbx_fs_repair_tail(fd);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	ok(got == cut && strcmp(buf, want) == 0, "repair_tail: %s (cut %lld)",
	    what, (long long)got);
	close(fd);
}

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_root		 r = SBX_ROOT_INIT;
	struct sbx_strv		 v = SBX_STRV_INIT;
	struct sbx_sandbox	 sb;
	char			 tmpl[] = "/tmp/t-fsutil.XXXXXX", path[512];
	char			*argv[] = { "--help", NULL };
	unsigned long long	 u;
	double			 d;
	int			 dfd, fd, i, dd, d2, ro, u0;
	struct stat		 st;

	if (mkdtemp(tmpl) == NULL)
		return 1;
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY);

	fd = sbx_fs_mkdirs_at(dfd, "a/b/c", 0700, &e);
	ok(fd >= 0, "mkdirs_at creates a chain");
	close(fd);
	snprintf(path, sizeof(path), "%s/a/b/c", tmpl);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "mode 0700");
	snprintf(path, sizeof(path), "%s/link", tmpl);
	ok(symlink("/etc", path) == 0, "planted a symlink");
	ok(sbx_fs_mkdirs_at(dfd, "link/x", 0700, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "symlink not followed");
	ok(access("/etc/x", F_OK) == -1, "nothing created through it");
	ok(sbx_fs_mkdirs_at(dfd, "a/../../x", 0700, &e) == -1 &&
	    strcmp(e.reason, "traversal") == 0, "`..` refused");
	ok(sbx_fs_mkdirs_at(dfd, "/etc", 0700, &e) == -1, "absolute refused");

	ok(sbx_fs_write_atomic(dfd, "f.json", "{}", 2, 0600, &e) == 0,
	    "atomic write");
	ok(sbx_fs_read_file_at(dfd, "f.json", 100, &b, &e) == 0 &&
	    strcmp(b.p, "{}") == 0, "read back");
	sbx_buf_release(&b);
	ok(sbx_fs_read_file_at(dfd, "f.json", 1, &b, &e) == -1 &&
	    strcmp(e.reason, "too_large") == 0, "read cap");
	sbx_buf_release(&b);
	snprintf(path, sizeof(path), "%s/passwd-link", tmpl);
	ok(symlink("/etc/passwd", path) == 0, "planted a symlink");
	ok(sbx_fs_read_file_at(dfd, "passwd-link", 100000, &b, &e) == -1,
	    "read through a symlink refused");
	sbx_buf_release(&b);
	ok(sbx_fs_open_beneath(dfd, "link/passwd", O_RDONLY, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "open_beneath: symlink");
	ok(sbx_fs_open_beneath(dfd, "nope", O_RDONLY, &e) == -1 &&
	    strcmp(e.kind, SBX_K_NOT_FOUND) == 0, "open_beneath: not found");
	fd = sbx_fs_open_beneath(dfd, "a/b", O_RDONLY | O_DIRECTORY, &e);
	ok(fd >= 0, "open_beneath: ok");
	close(fd);
	/* The one-openat2 way and the walk answer alike: a link is never
	 * followed, even one that stays beneath; `.` is skipped. */
	ok(sbx_fs_open_beneath(dfd, "passwd-link", O_RDONLY, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0,
	    "open_beneath: a link as the last name");
	snprintf(path, sizeof(path), "%s/inlink", tmpl);
	ok(symlink("a", path) == 0, "planted a link that stays beneath");
	ok(sbx_fs_open_beneath(dfd, "inlink/b", O_RDONLY | O_DIRECTORY,
	    &e) == -1 && strcmp(e.reason, "symlink_in_path") == 0,
	    "open_beneath: a link beneath is not followed either");
	ok(sbx_fs_mkdirs_at(dfd, "inlink/b", 0700, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0,
	    "mkdirs_at: an existing path through a link is refused");
	fd = sbx_fs_open_beneath(dfd, "a/./b", O_RDONLY | O_DIRECTORY, &e);
	ok(fd >= 0, "open_beneath: `.` skipped");
	close(fd);
	fd = sbx_fs_mkdirs_at(dfd, "a/b", 0700, &e);
	ok(fd >= 0, "mkdirs_at: all there already");
	close(fd);
	/* A directory, O_PATH or not, takes the one-openat2 way too
	 * (O_TMPFILE holds O_DIRECTORY's bit: O_DIRECTORY alone is not it). */
	fd = sbx_fs_open_beneath(dfd, "a/b", O_PATH | O_DIRECTORY, &e);
	ok(fd >= 0 && (fcntl(fd, F_GETFL) & O_PATH) &&
	    (fcntl(fd, F_GETFD) & FD_CLOEXEC),
	    "open_beneath: O_PATH of a directory, close-on-exec");
	if (fd >= 0)
		close(fd);
	memset(&e, 0, sizeof(e));
	ok(sbx_fs_open_beneath(dfd, "a/nope/x", O_RDONLY | O_DIRECTORY,
	    &e) == -1 && strcmp(e.kind, SBX_K_NOT_FOUND) == 0 &&
	    strcmp(e.reason, "not_found") == 0 &&
	    strcmp(e.message, "`a/nope/x` does not exist") == 0,
	    "open_beneath: a missing name is not_found, as the walk says it");
	ok(sbx_fs_open_beneath(dfd, "inlink/nope", O_RDONLY, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0,
	    "open_beneath: a link on the way to a missing name is the link");

	ok(sbx_fs_path_check("/workspace/x", "cwd", &e) == 0, "path ok");
	ok(sbx_fs_path_check("a/../b", "cwd", &e) == -1 &&
	    strcmp(e.reason, "traversal") == 0, "path traversal");
	ok(sbx_fs_path_check("a\nb", "cwd", &e) == -1 &&
	    strcmp(e.reason, "control_character") == 0, "path newline");
	ok(sbx_fs_path_check("", "cwd", &e) == -1, "path empty");
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	ok(sbx_fs_path_check(path, "cwd", &e) == -1 &&
	    strcmp(e.reason, "too_long") == 0, "component too long");

	/* State root resolution order. */
	setenv("SBX_HOME", "/tmp/x-env", 1);
	ok(sbx_root_resolve("/tmp/x-flag", &r, &e) == 0 &&
	    strcmp(r.source, "flag_override") == 0, "flag wins");
	sbx_root_release(&r);
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.source, "environment_override") == 0 &&
	    strcmp(r.path, "/tmp/x-env") == 0, "SBX_HOME next");
	sbx_root_release(&r);
	unsetenv("SBX_HOME");
	setenv("XDG_DATA_HOME", "/tmp/xdg", 1);
	/* Root's sandboxes run unprivileged: its root is /var/lib/sbx. */
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.path, geteuid() == 0 ? "/var/lib/sbx" : "/tmp/xdg/sbx")
	    == 0 && strcmp(r.source, "default_home") == 0, "XDG_DATA_HOME");
	sbx_root_release(&r);
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/tmp/h", 1);
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.path, geteuid() == 0 ? "/var/lib/sbx" :
	    "/tmp/h/.local/share/sbx") == 0, "~/.local/share");
	sbx_root_release(&r);
	ok(sbx_root_resolve("/", &r, &e) == -1, "/ refused as a root");
	sbx_root_release(&r);
	snprintf(path, sizeof(path), "%s/root", tmpl);
	ok(sbx_root_resolve(path, &r, &e) == 0 && sbx_root_open(&r, 1, &e)
	    == 0, "root created");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "root 0700");
	sbx_root_release(&r);
	chmod(path, 0777);
	ok(sbx_root_resolve(path, &r, &e) == 0 && sbx_root_open(&r, 1, &e)
	    == -1 && strcmp(e.reason, "insecure_state_root") == 0,
	    "world-writable root refused");
	sbx_root_release(&r);
	ok(sbx_root_path_overlaps("/a/b", "/a/b/c") &&
	    sbx_root_path_overlaps("/a/b/c", "/a/b") &&
	    !sbx_root_path_overlaps("/a/bc", "/a/b"), "overlaps");

	/* Parsers. */
	ok(sbx_cli_parse_seconds("2", 10, &d) == 0 && d == 2, "seconds 2");
	ok(sbx_cli_parse_seconds("0.5", 10, &d) == 0 && d == 0.5,
	    "seconds 0.5");
	ok(sbx_cli_parse_seconds("-1", 10, &d) == -1, "seconds -1");
	ok(sbx_cli_parse_seconds("0", 10, &d) == -1, "seconds 0");
	ok(sbx_cli_parse_seconds("1e3", 1e9, &d) == -1, "seconds 1e3");
	ok(sbx_cli_parse_seconds("inf", 1e9, &d) == -1, "seconds inf");
	ok(sbx_cli_parse_seconds("abc", 10, &d) == -1, "seconds abc");
	ok(sbx_cli_parse_seconds("1.2.3", 10, &d) == -1, "seconds 1.2.3");
	ok(sbx_cli_parse_seconds("11", 10, &d) == -1, "seconds over max");
	ok(sbx_cli_parse_bytes("64K", &u) == 0 && u == 65536, "bytes 64K");
	ok(sbx_cli_parse_bytes("1MiB", &u) == 0 && u == 1048576, "bytes 1MiB");
	ok(sbx_cli_parse_bytes("1X", &u) == -1, "bytes bad suffix");
	ok(sbx_cli_parse_bytes("-1", &u) == -1, "bytes negative");
	ok(sbx_cli_parse_bytes("99999999999999999999G", &u) == -1,
	    "bytes overflow");

	/* The bwrap command line: argv only after `--`, key isolation. */
	memset(&sb, 0, sizeof(sb));
	sb.bwrap = "/usr/bin/bwrap";
	sb.init = "/x/sbx-init";
	sb.agent = "a";
	sb.home = "/workspace/agents/a";
	sb.cwd = sb.home;
	sb.network = SBX_NETMODE_NONE;
	sb.disable_userns = 1;
	sb.argv = argv;
	ok(sbx_sandbox_argv(&sb, &v, &e) == 0, "argv built");
	for (i = 0, dd = -1; i < (int)v.n; i++)
		if (strcmp(v.v[i], "--") == 0) {
			dd = i;
			break;
		}
	ok(dd > 0 && strcmp(v.v[dd + 1], SBX_IN_INIT) == 0 &&
	    strcmp(v.v[dd + 2], "--") == 0 &&
	    strcmp(v.v[dd + 3], "--help") == 0 && v.v[dd + 4] == NULL,
	    "command after -- for bwrap and for sbx-init");
#define HAS(s) ({ int f_ = 0; for (i = 0; i < dd; i++) if (!strcmp(v.v[i], s)) f_ = 1; f_; })
	ok(HAS("--unshare-net") && HAS("--unshare-user") && HAS("--unshare-pid")
	    && HAS("--unshare-ipc") && HAS("--unshare-uts"), "namespaces");
	ok(HAS("--die-with-parent") && HAS("--new-session") &&
	    HAS("--as-pid-1") && HAS("--disable-userns"), "lifetime flags");
	ok(!HAS("--clearenv") && !HAS("--setenv"), "no env in argv");
	sbx_strv_release(&v);
	sb.network = SBX_NETMODE_OUTBOUND;
	sbx_sandbox_argv(&sb, &v, &e);
	for (i = 0, dd = (int)v.n; i < (int)v.n; i++)
		if (strcmp(v.v[i], "--") == 0) {
			dd = i;
			break;
		}
	ok(!HAS("--unshare-net"), "outbound keeps the host network");
	sbx_strv_release(&v);
	/* apt (rootfs_rw): the copy read-write as /, uid 0, no home,
	 * output or passwd of sbx's, / not remounted read-only. */
	sb.network = SBX_NETMODE_NONE;
	sb.image_root = "/st/envs/a/rootfs";
	sb.image_fd = -1;
	sb.rootfs_rw = 1;
	sb.cwd = "/";
	ok(sbx_sandbox_argv(&sb, &v, &e) == 0, "rootfs_rw argv built");
	for (i = 0, dd = (int)v.n; i < (int)v.n; i++)
		if (strcmp(v.v[i], "--") == 0) {
			dd = i;
			break;
		}
	for (i = 0, d2 = -1; i + 2 < dd; i++)
		if (strcmp(v.v[i], "--bind") == 0 &&
		    strcmp(v.v[i + 1], "/st/envs/a/rootfs") == 0 &&
		    strcmp(v.v[i + 2], "/") == 0)
			d2 = i;
	ok(d2 > 0, "rootfs_rw: the copy bound read-write as /");
	for (i = 0, ro = 0, u0 = 0; i + 1 < dd; i++) {
		if (strcmp(v.v[i], "--remount-ro") == 0 &&
		    strcmp(v.v[i + 1], "/") == 0)
			ro = 1;
		if (strcmp(v.v[i], "--uid") == 0 &&
		    strcmp(v.v[i + 1], "0") == 0)
			u0 = 1;
	}
	ok(!ro && u0 && HAS("--cap-drop") && !HAS("/etc/passwd") &&
	    !HAS("/workspace/agents/a") && !HAS(SBX_IN_OUTPUT),
	    "rootfs_rw: uid 0, no capability, nothing else writable");
	sbx_strv_release(&v);
	sb.rootfs_rw = 0;
	sb.image_root = NULL;

	/*
	 * Issue 27 §6: every bwrap destination in a directory bound from the
	 * image (or the agent's copy) is reached there without a link.
	 */
	{
		char	 img[PATH_MAX];
		int	 ifd;

		snprintf(img, sizeof(img), "%s/img", tmpl);
		ok(mkdir(img, 0755) == 0 && mkdirat(dfd, "img/etc", 0755) ==
		    0 && mkdirat(dfd, "img/usr", 0755) == 0 &&
		    mkdirat(dfd, "img/var", 0755) == 0 &&
		    symlinkat("/oldroot/victim", dfd, "img/var/tmp") == 0,
		    "an image with a planted /var/tmp link");
		ifd = open(img, O_PATH | O_DIRECTORY | O_CLOEXEC);
		sb.image_root = img;
		sb.image_fd = ifd;
		sb.workdir = "/var/tmp/w";
		sb.cwd = "/var/tmp/w";
		memset(&e, 0, sizeof(e));
		ok(sbx_sandbox_argv(&sb, &v, &e) == -1 && e.reason != NULL &&
		    strcmp(e.reason, "rootfs_unsafe") == 0 &&
		    strstr(e.message, "/var/tmp/w") != NULL,
		    "a workdir through it: rootfs_unsafe");
		sbx_strv_release(&v);
		/* The link gone: a directory, the same argv is fine. */
		ok(unlinkat(dfd, "img/var/tmp", 0) == 0 &&
		    mkdirat(dfd, "img/var/tmp", 0755) == 0, "a directory");
		memset(&e, 0, sizeof(e));
		ok(sbx_sandbox_argv(&sb, &v, &e) == 0, "then the run may go");
		sbx_strv_release(&v);
		/* /usr a link (recreated as one): a --ro path below it. */
		ok(unlinkat(dfd, "img/usr", AT_REMOVEDIR) == 0 &&
		    symlinkat("/oldroot/victim", dfd, "img/usr") == 0,
		    "/usr a link");
		{
			struct sbx_strv ops = SBX_STRV_INIT;
			char *const   *save = sb.fs_ops;

			sbx_strv_push(&ops, "--ro-bind");
			sbx_strv_push(&ops, "/usr/share/x");
			sbx_strv_push(&ops, "/usr/share/x");
			sb.fs_ops = ops.v;
			memset(&e, 0, sizeof(e));
			ok(sbx_sandbox_argv(&sb, &v, &e) == -1 && e.reason !=
			    NULL && strcmp(e.reason, "rootfs_unsafe") == 0,
			    "a destination under it: rootfs_unsafe");
			sbx_strv_release(&v);
			sb.fs_ops = save;
			sbx_strv_release(&ops);
		}
		close(ifd);
		sb.image_root = NULL;
		sb.image_fd = -1;
		sb.workdir = NULL;
		sb.cwd = sb.home;
	}

	/*
	 * Tree removal (issue 10, item 9): a tree the sandbox built as deep
	 * as it likes must not defeat removal, with few descriptors.
	 */
	{
		struct rlimit	 old, low;
		int		 rc, keep;

		ok(make_deep(dfd, "deep", 5000) == 0, "a 5,000-level tree");
		getrlimit(RLIMIT_NOFILE, &old);
		low = old;
		low.rlim_cur = 128;	/* far fewer than 5,000 descriptors */
		setrlimit(RLIMIT_NOFILE, &low);
		rc = sbx_fs_rm_tree_at(dfd, "deep", &e);
		setrlimit(RLIMIT_NOFILE, &old);
		ok(rc == 0, "removed with 128 descriptors%s%s", rc ? ": " : "",
		    rc ? e.message : "");
		ok(fstatat(dfd, "deep", &st, AT_SYMLINK_NOFOLLOW) == -1 &&
		    errno == ENOENT, "nothing of it is left");
		ok(sbx_fs_rm_tree_at(dfd, "deep", &e) == 0,
		    "absent: nothing to do");

		/* Symlinks inside, to a directory and a file outside: unlinked,
		 * their targets survive. */
		ok(mkdirat(dfd, "keep", 0755) == 0 &&
		    touch_at(dfd, "keep/file", 0644) == 0 &&
		    mkdirat(dfd, "t", 0755) == 0 && mkdirat(dfd, "t/s", 0755)
		    == 0, "a tree and a directory outside it");
		snprintf(path, sizeof(path), "%s/keep", tmpl);
		ok(symlinkat(path, dfd, "t/s/dir") == 0 &&
		    symlinkat("../../keep/file", dfd, "t/s/file") == 0 &&
		    symlinkat(path, dfd, "top") == 0, "symlinks planted");
		/* Without write permission: files 0444, a directory 0500 with
		 * a file, and a directory 000 with a subdirectory in it. */
		ok(touch_at(dfd, "t/ro", 0444) == 0 &&
		    mkdirat(dfd, "t/r5", 0755) == 0 &&
		    touch_at(dfd, "t/r5/f", 0444) == 0 &&
		    fchmodat(dfd, "t/r5", 0500, 0) == 0 &&
		    mkdirat(dfd, "t/z", 0755) == 0 &&
		    mkdirat(dfd, "t/z/sub", 0700) == 0 &&
		    touch_at(dfd, "t/z/sub/f", 0600) == 0 &&
		    fchmodat(dfd, "t/z/sub", 0, 0) == 0 &&
		    fchmodat(dfd, "t/z", 0, 0) == 0, "unwritable entries");
		rc = sbx_fs_rm_tree_at(dfd, "t", &e);
		ok(rc == 0 && faccessat(dfd, "t", F_OK, AT_SYMLINK_NOFOLLOW)
		    == -1, "removed, mode 000 and 0500 directories included%s%s",
		    rc ? ": " : "", rc ? e.message : "");
		ok(faccessat(dfd, "keep/file", F_OK, 0) == 0,
		    "a symlink's target survives");
		ok(sbx_fs_rm_tree_at(dfd, "top", &e) == 0 &&
		    faccessat(dfd, "top", F_OK, AT_SYMLINK_NOFOLLOW) == -1 &&
		    faccessat(dfd, "keep/file", F_OK, 0) == 0,
		    "a symlink as the top: unlinked, not followed");
		ok(touch_at(dfd, "plain", 0400) == 0 &&
		    sbx_fs_rm_tree_at(dfd, "plain", &e) == 0 &&
		    faccessat(dfd, "plain", F_OK, 0) == -1, "a plain file");

		/* The directory holding the top is not part of the tree:
		 * never made writable; a clear error instead. */
		if (geteuid() != 0) {
			ok(mkdirat(dfd, "f", 0755) == 0 &&
			    mkdirat(dfd, "f/x", 0755) == 0, "a tree in f/");
			keep = fchmodat(dfd, "f", 0555, 0);
			ok(keep == 0 &&
				sbx_fs_rm_tree_at(dfd, "f/x", &e) == -1 &&
				e.sys_errno == EACCES &&
				strstr(e.message, "cannot remove f/x") != NULL,
			    "f/ 0555: an "
			    "error naming f/x, f/ left as it was");
			(void)!fchmodat(dfd, "f", 0755, 0);
		} else {
			rc = mount_case(dfd, tmpl);
			if (rc == 2)
				skip("cannot mount here");
			else
				ok(rc == 0, "a mount point inside stops the "
				    "removal; nothing mounted is touched");
		}
	}

	/* sbx_fs_resolve_nofollow: res/a/b, res/a/file, res/link -> a,
	 * res/a/last -> b, res/a/dangling -> nowhere. */
	snprintf(path, sizeof(path), "%s/res", tmpl);
	ok(mkdir(path, 0755) == 0 && mkdirat(dfd, "res/a", 0755) == 0 &&
	    mkdirat(dfd, "res/a/b", 0755) == 0 &&
	    touch_at(dfd, "res/a/file", 0644) == 0 &&
	    symlinkat("a", dfd, "res/link") == 0 &&
	    symlinkat("b", dfd, "res/a/last") == 0 &&
	    symlinkat("nowhere", dfd, "res/a/dangling") == 0,
	    "resolver tree made");
	(void)resolve_cases(tmpl, "openat2");
	resolve_fallback(tmpl);

	/* sbx_fs_sanitize_std, in a child: 0 and 2 closed come back as
	 * /dev/null, inherited across exec; 1 is left as it was. */
	{
		pid_t	 pid;
		int	 wst = -1;

		fflush(stdout);
		if ((pid = fork()) == 0) {
			char	 l0[64], l1[PATH_MAX], l1b[PATH_MAX], l2[64];
			ssize_t	 n0, n1, n1b, n2;
			int	 nfd;

			n1 = readlink("/proc/self/fd/1", l1, sizeof(l1));
			close(0);
			close(2);
			if (sbx_fs_sanitize_std() == -1)
				_exit(1);
			n0 = readlink("/proc/self/fd/0", l0, sizeof(l0));
			n1b = readlink("/proc/self/fd/1", l1b, sizeof(l1b));
			n2 = readlink("/proc/self/fd/2", l2, sizeof(l2));
			nfd = open("/dev/null", O_RDONLY);
			_exit(n0 == 9 && memcmp(l0, "/dev/null", 9) == 0 &&
			    n2 == 9 && memcmp(l2, "/dev/null", 9) == 0 &&
			    n1 > 0 && n1 == n1b && memcmp(l1, l1b, n1) == 0 &&
			    nfd > 2 && fcntl(0, F_GETFD) == 0 &&
			    fcntl(2, F_GETFD) == 0 &&
			    sbx_fs_sanitize_std() == 0 ? 0 : 2);
		}
		ok(pid > 0 && waitpid(pid, &wst, 0) == pid && WIFEXITED(wst) &&
			WEXITSTATUS(wst) == 0,
		    "sbx_fs_sanitize_std: closed 0 and 2 "
		    "become /dev/null (kept across exec), 1 is left alone");
	}

	snprintf(path, sizeof(path), "rm -rf %s", tmpl);
	(void)!system(path);
	tail_case("", "", 0, "empty");
	tail_case("a\nb\n", "a\nb\n", 0, "whole");
	tail_case("a\nb\n{\"id\":3", "a\nb\n", 7, "a cut last line");
	tail_case("{\"id\":1", "", 7, "only a cut line");
	{
		/* The newline is more than a block back. */
		static char big[6000];

		memset(big, 'x', sizeof(big) - 1);
		big[0] = 'a';
		big[1] = '\n';
		tail_case(big, "a\n", (long long)sizeof(big) - 3,
		    "a cut line longer than a block");
	}
	return done_testing();
}
