/* t-etccache: the sandbox's /etc, built once, reused, rebuilt when stale. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "error.h"
#include "etccache.h"
#include "fsutil.h"

static const char *const copy[] = {
	"/etc/os-release", "/etc/sbx-test-absent", "/etc/ld.so.conf.d",
};

/* The content of tree/name, or "" (static buffer). */
static const char *
slurp(int tree, const char *name)
{
	static char	 buf[8192];
	ssize_t		 n;
	int		 fd;

	buf[0] = '\0';
	if ((fd = openat(tree, name, O_RDONLY | O_CLOEXEC)) == -1)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* An O_PATH descriptor opened for reading what is under it. */
static int
reopen(int fd)
{
	char	 p[64];

	snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
	return open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/*
 * Rewrite the first "H " line of the only tree's MANIFEST under
 * cache/etc: how names the edit.  0, or -1.
 */
static int
edit_manifest(const char *cache, int how)
{
	char		 path[PATH_MAX], buf[65536], *h, *nl, *sp;
	struct dirent	*de;
	DIR		*d;
	ssize_t		 n;
	size_t		 len;
	int		 fd, i;

	snprintf(path, sizeof(path), "%s/etc", cache);
	if ((d = opendir(path)) == NULL)
		return -1;
	path[0] = '\0';
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			snprintf(path, sizeof(path), "%s/etc/%s/MANIFEST",
			    cache, de->d_name);
	closedir(d);
	if (path[0] == '\0' || (fd = open(path, O_RDWR)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0 || (h = strstr(buf, "\nH ")) == NULL ||
	    (nl = strchr(h + 1, '\n')) == NULL) {
		close(fd);
		return -1;
	}
	buf[n] = '\0';
	h++;
	/* sp: the fifth field, the size; then mtime sec.nsec. */
	for (sp = h, i = 0; i < 4 && sp != NULL; i++)
		if ((sp = strchr(sp, ' ')) != NULL)
			sp++;
	if (sp == NULL || sp > nl) {
		close(fd);
		return -1;
	}
	switch (how) {
	case 0:		/* the size, one more */
		*sp = *sp == '9' ? '8' : (char)(*sp + 1);
		break;
	case 1:		/* a letter in it */
		*sp = 'x';
		break;
	case 2:		/* cut after the size: no times, no path */
		sp = strchr(sp, ' ');
		memmove(sp, nl, strlen(nl) + 1);
		break;
	case 3:		/* a second space before the path */
		for (sp = h, i = 0; i < 7 && sp != NULL && sp < nl; i++)
			if ((sp = strchr(sp, ' ')) != NULL)
				sp++;
		if (sp == NULL || sp > nl) {
			close(fd);
			return -1;
		}
		memmove(sp + 1, sp, strlen(sp) + 1);
		*sp = ' ';
		break;
	}
	len = strlen(buf);
	if (ftruncate(fd, 0) == -1 || pwrite(fd, buf, len, 0) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_etc_made	 made[] = {
		{ "passwd", "a:x:1:1::/h:/bin/sh\n", 20 },
		{ "hosts", "127.0.0.1 localhost\n", 20 },
	};
	struct sbx_etc_spec	 spec = { copy, 3, NULL, 0, made, 2, NULL };
	struct stat		 st, st2;
	char			 tmpl[] = "/tmp/t-etccache.XXXXXX";
	char			 path[PATH_MAX], host[8192];
	int			 cache, tree, t, built, fd;
	ssize_t			 n;

	if (mkdtemp(tmpl) == NULL ||
	    (cache = open(tmpl, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 1;
	memset(&e, 0, sizeof(e));

	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree >= 0 && built == 1, "first use builds the tree (%s)",
	    e.message);
	t = reopen(tree);
	host[0] = '\0';
	if ((fd = open("/etc/os-release", O_RDONLY)) >= 0) {
		n = read(fd, host, sizeof(host) - 1);
		host[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	ok(strcmp(slurp(t, "os-release"), host) == 0,
	    "a host file is copied, its symlink followed");
	ok(strcmp(slurp(t, "passwd"), made[0].data) == 0 &&
	    fstatat(t, "passwd", &st, 0) == 0 && (st.st_mode & 0777) == 0444,
	    "a made file holds its data, read-only");
	ok(fstatat(t, "sbx-test-absent", &st, 0) == -1 && errno == ENOENT,
	    "a missing host path is left out");
	ok(fstat(t, &st) == 0 && (st.st_mode & 0777) == 0755 &&
	    st.st_uid == geteuid(), "the tree is ours, 0755");
	close(t);
	close(tree);

	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree >= 0 && built == 0, "the second use reuses it");
	fstat(tree, &st);
	close(tree);

	/* A copy changed after the build: its ctime moved, rebuilt. */
	snprintf(path, sizeof(path), "%s/etc", tmpl);
	{
		char	 key[PATH_MAX];
		int	 etc = open(path, O_RDONLY | O_DIRECTORY), k;
		DIR	*d = fdopendir(dup(etc));
		struct dirent *de;

		key[0] = '\0';
		while (d && (de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				snprintf(key, sizeof(key), "%s", de->d_name);
		if (d)
			closedir(d);
		snprintf(path, sizeof(path), "%s/etc/passwd", key);
		k = openat(etc, path, O_RDONLY);
		ok(k >= 0 && fchmod(k, 0644) == 0, "tamper: chmod a copy");
		if (k >= 0)
			close(k);
		close(etc);
	}
	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree >= 0 && built == 1, "a tampered copy is rebuilt");
	t = reopen(tree);
	ok(fstatat(t, "passwd", &st2, 0) == 0 && (st2.st_mode & 0777) == 0444,
	    "the rebuilt copy is read-only again");
	close(t);
	close(tree);

	/* A manifest line that no longer says what the host file is, or
	 * that cannot be read as one: rebuilt, never taken as current. */
	{
		static const char *const what[] = { "a size off by one",
		    "a letter in a number", "a line cut after the size",
		    "a second space before the path" };
		int	 how;

		for (how = 0; how < 4; how++) {
			int ed = edit_manifest(tmpl, how);

			tree = sbx_etccache_open(cache, &spec, &built, &e);
			ok(ed == 0 && tree >= 0 && built == 1,
			    "a manifest with %s: rebuilt", what[how]);
			if (tree >= 0)
				close(tree);
		}
		tree = sbx_etccache_open(cache, &spec, &built, &e);
		ok(tree >= 0 && built == 0, "the rebuilt one is current");
		if (tree >= 0)
			close(tree);
	}

	/* Another spec, another tree. */
	made[0].data = "b:x:2:2::/h:/bin/sh\n";
	tree = sbx_etccache_open(cache, &spec, &built, &e);
	t = reopen(tree);
	ok(tree >= 0 && built == 1 &&
	    strcmp(slurp(t, "passwd"), made[0].data) == 0,
	    "other made data, other tree");
	close(t);
	close(tree);

	/* cache/etc writable by others: refused, with a reason. */
	snprintf(path, sizeof(path), "%s/etc", tmpl);
	chmod(path, 0777);
	memset(&e, 0, sizeof(e));
	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree == -1 && e.reason && strcmp(e.reason, "cache_untrusted") == 0,
	    "cache/etc writable by others is refused (%s)", e.message);
	chmod(path, 0711);

	/* A symlink planted at cache/etc is never followed. */
	snprintf(host, sizeof(host), "rm -rf %s/etc && mkdir %s/elsewhere && "
	    "ln -s elsewhere %s/etc", tmpl, tmpl, tmpl);
	(void)!system(host);
	memset(&e, 0, sizeof(e));
	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree == -1, "a symlink at cache/etc is refused (%s)", e.message);
	snprintf(path, sizeof(path), "%s/elsewhere", tmpl);
	ok(rmdir(path) == 0, "nothing was written through it");
	snprintf(path, sizeof(path), "%s/etc", tmpl);
	ok(unlink(path) == 0 && lstat(path, &st) == -1,
	    "the planted symlink itself is left as it was");
	memset(&e, 0, sizeof(e));
	tree = sbx_etccache_open(cache, &spec, &built, &e);
	ok(tree >= 0 && built == 1, "with it gone, the tree is built again");
	if (tree >= 0)
		close(tree);

	/* A farm of symlinks: hard-linked as root (the same inodes as the
	 * host's); as anyone else, protected_hardlinks refuses the links
	 * and it is left empty, to be bound. */
	{
		static const char *const mnt[] = { "/etc/alternatives" };
		struct dirent	*de;
		DIR		*d;
		unsigned	 bound = 7;
		int		 nent = 0, nhost = 0, same = 0;

		static const char *const copy2[] = { "/etc/os-release",
		    "/etc/alternatives" };

		spec.copy = copy2;
		spec.ncopy = 2;
		spec.mounts = mnt;
		spec.nmounts = 1;
		spec.bound = &bound;
		if ((d = opendir("/etc/alternatives")) != NULL) {
			while (readdir(d) != NULL)
				nhost++;
			closedir(d);
		}
		memset(&e, 0, sizeof(e));
		tree = sbx_etccache_open(cache, &spec, &built, &e);
		t = reopen(tree);
		fd = openat(t, "alternatives", O_RDONLY | O_DIRECTORY);
		if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				nent++;
				if (de->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path),
				    "/etc/alternatives/%s", de->d_name);
				if (lstat(path, &st) == 0 && fstatat(dirfd(d),
				    de->d_name, &st2, AT_SYMLINK_NOFOLLOW) ==
				    0 && (!S_ISLNK(st.st_mode) ||
				    st.st_ino == st2.st_ino))
					same++;
			}
			closedir(d);
		}
		if (nhost == 0)
			skip_n(1, "no /etc/alternatives here");
		else if (geteuid() == 0)
			ok(tree >= 0 && built == 1 && bound == 0 &&
			    nent == nhost && same == nhost - 2,
			    "a farm is hard-linked (%d of %d entries, %d the "
			    "host's, bound %u)", nent, nhost, same, bound);
		else
			ok(tree >= 0 && built == 1 && ((bound == 1 &&
			    nent == 2) || (bound == 0 && nent == nhost)),
			    "a farm is hard-linked or left to bind (%d "
			    "entries, bound %u)", nent, bound);
		bound = 7;
		memset(&e, 0, sizeof(e));
		close(t);
		close(tree);
		tree = sbx_etccache_open(cache, &spec, &built, &e);
		ok(tree >= 0 && built == 0 && bound != 7,
		    "reused, it says again what to bind (%u)", bound);
		close(tree);
	}

	close(cache);
	snprintf(path, sizeof(path), "rm -rf %s", tmpl);
	(void)!system(path);
	return done_testing();
}
