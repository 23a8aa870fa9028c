/* t-tools: helper programs are found by absolute path only: the override
 * variable, or fixed system directories where a binary must belong to
 * root and be writable by nobody else; $PATH is never searched.
 *
 * The ownership cases put files in /usr/local/bin, which this test mounts
 * a tmpfs over in a mount namespace of its own (a user namespace too when
 * not root): nothing on the host changes.  Where neither is possible,
 * they skip with the reason.
 */
#include <sys/mount.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "tools.h"

#define ENVVAR	"SBX_T_TOOLS_BIN"
#define LOCAL	"/usr/local/bin"

static char	 tmp[64];
static char	 name[64];	/* a tool no system has */

static int
is_err(const struct sbx_error *e, const char *kind, const char *reason,
    const char *words)
{
	int	 good;

	good = e->kind != NULL && strcmp(e->kind, kind) == 0 &&
	    e->reason != NULL && strcmp(e->reason, reason) == 0 &&
	    (words == NULL || strstr(e->message, words) != NULL);
	if (!good)
		diag("  got kind %s reason %s: %s", e->kind ? e->kind :
		    "(null)", e->reason ? e->reason : "(null)", e->message);
	return good;
}

static int
make_file(const char *path, mode_t mode)
{
	int	 fd;

	(void)unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0600)) == -1)
		return -1;
	if (write(fd, "#!/bin/sh\nexit 0\n", 17) != 17) {
		close(fd);
		return -1;
	}
	close(fd);
	return chmod(path, mode);
}

static void
test_override(void)
{
	struct sbx_error	 e;
	char			 path[128];
	char			*out;
	int			 rc;

	/* Relative: refused, never looked up. */
	setenv(ENVVAR, "bwrap", 1);
	memset(&e, 0, sizeof(e));
	out = (char *)"unset";
	ok(sbx_tools_find("bwrap", ENVVAR, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_INVALID_ARGS, "not_absolute", ENVVAR) &&
	    e.field != NULL && strcmp(e.field, ENVVAR) == 0,
	    "override: a relative path is refused, naming the variable");
	setenv(ENVVAR, "./x", 1);
	ok(sbx_tools_find("bwrap", ENVVAR, &out, &e) == -1 && out == NULL,
	    "override: ./x is refused too");

	/* Missing, a directory, not executable. */
	snprintf(path, sizeof(path), "%s/missing", tmp);
	setenv(ENVVAR, path, 1);
	memset(&e, 0, sizeof(e));
	ok(sbx_tools_find("bwrap", ENVVAR, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_missing", path) &&
	    strstr(e.hint, "bubblewrap") != NULL && strstr(e.hint, ENVVAR),
	    "override: a missing file, the hint names the Debian package");
	setenv(ENVVAR, tmp, 1);
	ok(sbx_tools_find("rg", ENVVAR, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_missing", NULL) &&
	    strstr(e.hint, "ripgrep") != NULL,
	    "override: a directory is refused (rg: package ripgrep)");
	snprintf(path, sizeof(path), "%s/noexec", tmp);
	if (make_file(path, 0644) == -1)
		ok(0, "create %s: %s", path, strerror(errno));
	setenv(ENVVAR, path, 1);
	/* access(X_OK) holds even for root only when some x bit is set. */
	ok(sbx_tools_find("socat", ENVVAR, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_missing",
	    "not an executable file"),
	    "override: a file without x bits is refused");

	/* Executable: taken as given, whoever owns it (the caller chose
	 * it; set-id programs never honour the variable). */
	snprintf(path, sizeof(path), "%s/mybwrap", tmp);
	if (make_file(path, 0755) == -1)
		ok(0, "create %s: %s", path, strerror(errno));
	setenv(ENVVAR, path, 1);
	out = NULL;
	ok(sbx_tools_find("bwrap", ENVVAR, &out, &e) == 0 && out != NULL &&
	    strcmp(out, path) == 0, "override: an executable file is used");
	free(out);

	/* Empty: as if unset, the system directories. */
	setenv(ENVVAR, "", 1);
	out = NULL;
	rc = sbx_tools_find("sh", ENVVAR, &out, &e);
	ok(rc == 0 && out != NULL && out[0] == '/' && strcmp(out, path) != 0,
	    "override: empty is ignored (sh found at %s)", out ? out : "-");
	free(out);
	unsetenv(ENVVAR);
}

static void
test_no_path(void)
{
	struct sbx_error	 e;
	char			 path[128], *out, *old;
	int			 rc;

	/* A tool found only through $PATH is not found. */
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	if (make_file(path, 0755) == -1)
		ok(0, "create %s: %s", path, strerror(errno));
	old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
	setenv("PATH", tmp, 1);
	out = (char *)"unset";
	memset(&e, 0, sizeof(e));
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_missing", "is not installed")
	    && strstr(e.hint, "apt-get install") != NULL,
	    "$PATH is not searched: a tool only there is not installed");

	/* A shadowing `sh` first in $PATH does not win either. */
	snprintf(path, sizeof(path), "%s/sh", tmp);
	if (make_file(path, 0755) == -1)
		ok(0, "create %s: %s", path, strerror(errno));
	out = NULL;
	rc = sbx_tools_find("sh", NULL, &out, &e);
	ok(rc == 0 && out != NULL &&
	    strncmp(out, tmp, strlen(tmp)) != 0 && (strcmp(out,
	    "/usr/bin/sh") == 0 || strcmp(out, "/bin/sh") == 0),
	    "sh comes from the system directories, not $PATH (%s)",
	    out ? out : "-");
	free(out);
	(void)unlink(path);
	if (old != NULL) {
		setenv("PATH", old, 1);
		free(old);
	} else
		unsetenv("PATH");
}

static void
test_self_dir(void)
{
	char	 exe[PATH_MAX], *dir;
	ssize_t	 n;

	dir = sbx_tools_self_dir();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0)
		exe[n] = '\0';
	ok(dir != NULL && n > 0 && strcmp(dir, dirname(exe)) == 0 &&
	    dir[0] == '/', "sbx_tools_self_dir: this test's directory (%s)",
	    dir ? dir : "-");
	free(dir);
}

/* Write "what" to /proc/self/FILE. */
static int
put_proc(const char *file, const char *what)
{
	char	 path[64];
	int	 fd, rc;

	snprintf(path, sizeof(path), "/proc/self/%s", file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	rc = write(fd, what, strlen(what)) == (ssize_t)strlen(what) ? 0 : -1;
	close(fd);
	return rc;
}

/*
 * A private /usr/local/bin: root unshares the mount namespace; anyone
 * else a user namespace as well, as its root (files they create then
 * belong to "root" inside, but chown to another uid is impossible).
 */
static int
private_local(int *can_chown)
{
	char	 map[64];
	uid_t	 uid = geteuid();
	gid_t	 gid = getegid();

	*can_chown = uid == 0;
	if (uid == 0) {
		if (unshare(CLONE_NEWNS) == -1)
			return -1;
	} else {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) == -1)
			return -1;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		if (put_proc("setgroups", "deny") == -1 ||
		    put_proc("uid_map", map) == -1)
			return -1;
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		if (put_proc("gid_map", map) == -1)
			return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("t-tools", LOCAL, "tmpfs", MS_NOSUID | MS_NODEV,
	    "mode=0755") == -1)
		return -1;
	return 0;
}

static void
test_ownership(void)
{
	struct sbx_error	 e;
	char			 path[128], target[128], *out;
	int			 can_chown;

	if (private_local(&can_chown) == -1) {
		skip_n(7, "cannot mount a private %s here (%s): needs root "
		    "or user namespaces", LOCAL, strerror(errno));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", LOCAL, name);

	/* Root's, 0755: the one case that is used. */
	if (make_file(path, 0755) == -1) {
		skip_n(7, "cannot create %s: %s", path, strerror(errno));
		return;
	}
	out = NULL;
	ok(sbx_tools_find(name, NULL, &out, &e) == 0 && out != NULL &&
	    strcmp(out, path) == 0, "root's 0755 binary in %s is used",
	    LOCAL);
	free(out);

	/* Writable by others, by the group: refused, said as untrusted. */
	(void)chmod(path, 0757);
	out = (char *)"unset";
	memset(&e, 0, sizeof(e));
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_untrusted",
	    "not owned by root or writable by others"),
	    "a binary writable by others is refused (tool_untrusted)");
	(void)chmod(path, 0775);
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_untrusted", NULL),
	    "a binary writable by its group is refused");

	/* Not executable: missing, not untrusted. */
	(void)chmod(path, 0644);
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && is_err(&e,
	    SBX_K_UNAVAILABLE, "tool_missing", NULL),
	    "root's file without x bits is not a tool");

	/* A directory of that name is passed over. */
	(void)unlink(path);
	(void)mkdir(path, 0755);
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && is_err(&e,
	    SBX_K_UNAVAILABLE, "tool_missing", NULL),
	    "a directory of that name is not a tool");
	(void)rmdir(path);

	/* Owned by someone else; and reached through a root-owned
	 * symlink: stat() sees the target's owner. */
	if (!can_chown) {
		skip_n(2, "someone else's binary: needs root to chown");
		return;
	}
	(void)make_file(path, 0755);
	(void)!chown(path, 65534, 65534);
	ok(sbx_tools_find(name, NULL, &out, &e) == -1 && out == NULL &&
	    is_err(&e, SBX_K_UNAVAILABLE, "tool_untrusted", NULL),
	    "a 0755 binary owned by uid 65534 is refused");
	(void)unlink(path);
	snprintf(target, sizeof(target), "%s/theirs", tmp);
	if (make_file(target, 0755) == -1 ||
	    chown(target, 65534, 65534) == -1 || symlink(target, path) == -1)
		ok(0, "plant a symlink: %s", strerror(errno));
	else
		ok(sbx_tools_find(name, NULL, &out, &e) == -1 && out == NULL &&
		    is_err(&e, SBX_K_UNAVAILABLE, "tool_untrusted", NULL),
		    "a symlink to someone else's binary is refused");
	(void)unlink(path);
}

static void
cleanup(void)
{
	char	 path[128];

	if (tmp[0] == '\0')
		return;
	snprintf(path, sizeof(path), "%s/noexec", tmp);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/mybwrap", tmp);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/theirs", tmp);
	(void)unlink(path);
	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	(void)unlink(path);
	(void)rmdir(tmp);
}

int
main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/t-tools.XXXXXX");
	if (mkdtemp(tmp) == NULL)
		skip_all("no temp dir: %s", strerror(errno));
	/* Readable by uid 65534 for the symlink case. */
	(void)chmod(tmp, 0755);
	atexit(cleanup);
	snprintf(name, sizeof(name), "sbx-t-tools-%ld", (long)getpid());

	test_override();
	test_no_path();
	test_self_dir();
	test_ownership();
	return done_testing();
}
