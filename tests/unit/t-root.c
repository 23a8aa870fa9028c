/* t-root: recognising sbx state roots (the marker, the older shape) and
 * the bounded look for one below a directory (sbx exec --workdir). */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "root.h"

static int
dir_at(int dfd, const char *rel)
{
	return openat(dfd, rel, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

/* Is dfd/rel a state root?  -2: cannot open it. */
static int
is_root_at(int dfd, const char *rel)
{
	int	 fd, r;

	if ((fd = dir_at(dfd, rel)) == -1)
		return -2;
	r = sbx_root_is_state_root(fd);
	close(fd);
	return r;
}

/* sbx_root_find_below on dfd/rel: its answer, the path found in out. */
static int
find_at(int dfd, const char *rel, int depth, size_t budget, char *out,
    size_t outsz, struct sbx_error *e)
{
	int	 fd, r;

	if ((fd = dir_at(dfd, rel)) == -1)
		return -2;
	r = sbx_root_find_below(fd, depth, budget, out, outsz, e);
	close(fd);
	return r;
}

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_root		 r = SBX_ROOT_INIT;
	struct stat		 st;
	char			 tmpl[] = "/tmp/t-root.XXXXXX", path[PATH_MAX];
	char			 found[PATH_MAX];
	int			 dfd, i, rc;

	if (mkdtemp(tmpl) == NULL)
		return 1;
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY);

	/* sbx_root_open creates; sbx_root_mark marks. */
	snprintf(path, sizeof(path), "%s/state", tmpl);
	ok(sbx_root_resolve(path, &r, &e) == 0 && sbx_root_open(&r, 1, &e) ==
	    0, "a new state root opens");
	ok(fstatat(dfd, "state/" SBX_ROOT_MARKER, &st, AT_SYMLINK_NOFOLLOW) ==
	    -1 && errno == ENOENT, "opening it writes nothing in it");
	ok(is_root_at(dfd, "state") == 0, "an empty, unmarked root is not "
	    "recognised (sbx exec checks the one in use by its path)");
	ok(sbx_root_mark(r.fd, &e) == 0 && fstatat(dfd, "state/"
	    SBX_ROOT_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600,
	    "marked, it carries the marker, a 0600 file");
	ok(sbx_root_mark(r.fd, &e) == 0, "marking again is harmless");
	sbx_root_release(&r);
	ok(is_root_at(dfd, "state") == 1, "a marked root is recognised");
	ok(is_root_at(dfd, ".") == 0, "its parent is not a state root");

	/* A marker planted as a symlink still marks: refusing more is the
	 * safe side; and sbx_root_mark never writes through it. */
	ok(mkdirat(dfd, "lnk", 0700) == 0 &&
	    symlinkat("/nonexistent-t-root", dfd, "lnk/" SBX_ROOT_MARKER) == 0,
	    "a marker planted as a dangling symlink");
	ok(is_root_at(dfd, "lnk") == 1, "a symlink marker still marks");
	i = dir_at(dfd, "lnk");
	ok(i >= 0 && sbx_root_mark(i, &e) == 0 &&
	    access("/nonexistent-t-root", F_OK) == -1, "mark does not write "
	    "through it");
	if (i >= 0)
		close(i);

	/* The shape of roots made before the marker. */
	ok(mkdirat(dfd, "old", 0700) == 0 && mkdirat(dfd, "old/config", 0700)
	    == 0 && mkdirat(dfd, "old/run", 0700) == 0, "an unmarked root: "
	    "config/ and run/");
	ok(is_root_at(dfd, "old") == 0, "without run/tokens it is not one");
	ok(mkdirat(dfd, "old/run/tokens", 0700) == 0 &&
	    is_root_at(dfd, "old") == 1, "with run/tokens and config/ it is");
	ok(mkdirat(dfd, "half", 0700) == 0 && mkdirat(dfd, "half/run", 0700)
	    == 0 && mkdirat(dfd, "half/run/tokens", 0700) == 0 &&
	    is_root_at(dfd, "half") == 0, "run/tokens without config/ is not");
	ok(mkdirat(dfd, "half2", 0700) == 0 && mkdirat(dfd, "half2/config",
	    0700) == 0 && mkdirat(dfd, "half2/real", 0700) == 0 &&
	    mkdirat(dfd, "half2/real/tokens", 0700) == 0 &&
	    symlinkat("real", dfd, "half2/run") == 0 &&
	    is_root_at(dfd, "half2") == 0, "run/ as a symlink is not followed");

	/* The bounded look below a directory. */
	ok(mkdirat(dfd, "w", 0755) == 0 && mkdirat(dfd, "w/a", 0755) == 0 &&
	    mkdirat(dfd, "w/a/b", 0755) == 0 && mkdirat(dfd, "w/a/b/c", 0755)
	    == 0 && mkdirat(dfd, "w/src", 0755) == 0, "a tree w/a/b/c");
	rc = find_at(dfd, "w", SBX_ROOT_SCAN_DEPTH, SBX_ROOT_SCAN_BUDGET, found,
	    sizeof(found), &e);
	ok(rc == 0, "no state root below w");
	i = openat(dfd, "w/a/b/c/" SBX_ROOT_MARKER, O_WRONLY | O_CREAT, 0600);
	ok(i >= 0, "a marker three levels down");
	if (i >= 0)
		close(i);
	rc = find_at(dfd, "w", 3, SBX_ROOT_SCAN_BUDGET, found, sizeof(found),
	    &e);
	ok(rc == 1 && strcmp(found, "a/b/c") == 0, "found three levels down");
	rc = find_at(dfd, "w", 2, SBX_ROOT_SCAN_BUDGET, found, sizeof(found),
	    &e);
	ok(rc == 0, "not looked for beyond the depth asked");
	rc = find_at(dfd, "w/a", 3, SBX_ROOT_SCAN_BUDGET, found,
	    sizeof(found), &e);
	ok(rc == 1 && strcmp(found, "b/c") == 0, "found from w/a");
	rc = find_at(dfd, "w/a/b/c", 3, SBX_ROOT_SCAN_BUDGET, found,
	    sizeof(found), &e);
	ok(rc == 0, "a root is not below itself (its ancestors are the "
	    "walk's business)");
	rc = find_at(dfd, "w", 3, 2, found, sizeof(found), &e);
	ok(rc == -1 && strcmp(e.reason, "state_root_unchecked") == 0,
	    "a budget too small to look everywhere: cannot tell");
	/* A symlink below leads nowhere the sandbox could follow. */
	ok(mkdirat(dfd, "s", 0755) == 0 && symlinkat("../state", dfd,
	    "s/link") == 0, "s holds only a symlink to a root");
	rc = find_at(dfd, "s", 3, SBX_ROOT_SCAN_BUDGET, found, sizeof(found),
	    &e);
	ok(rc == 0, "a symlink to a root is not a root below");
	/* The older shape counts below too. */
	ok(mkdirat(dfd, "o", 0755) == 0 && renameat(dfd, "old", dfd, "o/old")
	    == 0, "an old-shape root one level down");
	rc = find_at(dfd, "o", 3, SBX_ROOT_SCAN_BUDGET, found, sizeof(found),
	    &e);
	ok(rc == 1 && strcmp(found, "old") == 0, "found by its shape");

	/* One of our own directories we cannot read could hide a root that
	 * a sandbox running as us could open up again. */
	if (geteuid() == 0) {
		skip("root reads every directory");
	} else {
		ok(mkdirat(dfd, "u", 0755) == 0 && mkdirat(dfd, "u/locked",
		    0000) == 0, "an unreadable directory of ours");
		rc = find_at(dfd, "u", 3, SBX_ROOT_SCAN_BUDGET, found,
		    sizeof(found), &e);
		ok(rc == -1 && strcmp(e.reason, "state_root_unchecked") == 0,
		    "cannot tell what it holds");
		(void)!fchmodat(dfd, "u/locked", 0700, 0);
	}

	snprintf(path, sizeof(path), "rm -rf %s", tmpl);
	(void)!system(path);
	return done_testing();
}
