/*
 * etccache.c: the sandbox's /etc as one prepared directory.
 *
 * bwrap re-reads /proc/self/mountinfo after every read-only bind, so 25
 * single-file binds of /etc cost more than the rest of the sandbox
 * together.  One tree, built once and bound read-only as a whole, costs
 * one.  Checking that it is current is one stat per host file copied
 * (and per directory: its mtime moves when an entry is added, removed or
 * replaced, which is how symlinks change), and one per file of the copy.
 * Version 2: the farms of symlinks are in the tree (hard links), not
 * empty mount points.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "etccache.h"
#include "fsutil.h"

#define MANIFEST	"MANIFEST"
#define TREE		"etc"
#define COPY_MAX	(64UL << 20)	/* bytes copied at most */
#define ENTRIES_MAX	8192		/* entries copied at most */
#define DEPTH_MAX	16
#define STALE_SEC	60		/* a replaced tree lives this long */
#define MANIFEST_MAX	(4UL << 20)

struct build {
	struct sbx_buf	 man;
	size_t		 bytes, entries;
	const struct sbx_etc_spec *spec;
	int		 linking;	/* in a farm: symlinks hard-linked */
};

/* Is hostpath a farm of symlinks (spec->mounts)? */
static int
is_mount(const struct build *b, const char *hostpath)
{
	size_t	 i;

	for (i = 0; i < b->spec->nmounts; i++)
		if (strcmp(b->spec->mounts[i], hostpath) == 0)
			return 1;
	return 0;
}

static uint64_t
fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char	*s = p;

	while (n-- > 0) {
		h ^= *s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* One manifest line: what a stat said, as text compared byte for byte. */
static int
line(struct sbx_buf *b, char tag, const struct stat *st, const char *path)
{
	return sbx_buf_printf(b, "%c %llu %llu %o %lld %lld.%09ld %lld.%09ld "
	    "%s\n", tag, (unsigned long long)st->st_dev,
	    (unsigned long long)st->st_ino, (unsigned)st->st_mode,
	    (long long)st->st_size, (long long)st->st_mtim.tv_sec,
	    st->st_mtim.tv_nsec, (long long)st->st_ctim.tv_sec,
	    st->st_ctim.tv_nsec, path);
}

/* Ours, and writable by nobody else. */
static int
trusted(const struct stat *st)
{
	return st->st_uid == geteuid() && !(st->st_mode & 022);
}

static int
copy_data(struct build *b, int in, int out)
{
	char	 buf[65536];
	ssize_t	 n;

	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if ((b->bytes += (size_t)n) > COPY_MAX) {
			errno = EFBIG;
			return -1;
		}
		if (sbx_fs_write_all(out, buf, (size_t)n) == -1)
			return -1;
	}
	return 0;
}

static int copy_node(struct build *, int, const char *, int, const char *, int,
    const char *, int);

/*
 * A farm of symlinks (/etc/alternatives, /etc/ssl/certs: hundreds each).
 * A symlink made is an inode made, and on some file systems (this host's
 * ext4) that costs a millisecond: 800 made a new state root's first run
 * take a second.  So the host's symlinks are hard-linked instead (a name,
 * no inode: 800 in 50 ms there); their regular files are copied as
 * anywhere else.  A symlink's target cannot be changed in place, only the
 * name replaced, which moves the directory's mtime, recorded here: the
 * copy holds what a read-only bind of the directory showed.  Where a link
 * cannot be made (another file system; fs.protected_hardlinks when the
 * symlinks are not ours, as for any user but root) the directory is left
 * empty, a mount point, recorded as "M path": the caller binds the host's
 * over it.  (Measured again for issue 19: made anew, the symlinks cost a
 * fresh state root's first run 0.3 to 1 s here instead of 0.07 s, and
 * the test suite four minutes; the two binds cost a run 0.7 ms.)
 */
static int
copy_farm(struct build *b, int src_dir, const char *name, int follow,
    const char *hostpath, int dst_dir, const char *dname, int depth)
{
	struct sbx_error	 e;
	size_t			 mark = b->man.len, entries = b->entries;
	int			 rc;

	b->linking = 1;
	rc = copy_node(b, src_dir, name, follow, hostpath, dst_dir, dname,
	    depth);
	b->linking = 0;
	if (rc == 0 || (errno != EPERM && errno != EXDEV && errno != EMLINK &&
	    errno != EACCES))
		return rc;
	memset(&e, 0, sizeof(e));
	b->man.len = mark;
	b->entries = entries;
	if (sbx_fs_rm_tree_at(dst_dir, dname, &e) == -1 && errno != ENOENT)
		return -1;
	if (mkdirat(dst_dir, dname, 0700) == -1)
		return -1;
	return sbx_buf_printf(&b->man, "M %s\n", hostpath);
}

/*
 * Copy src_dir/name (the host's hostpath) to dst_dir/name.  At the top
 * (follow), a symlink is followed, as a bind of that path would; below,
 * symlinks are recreated as they are (they resolve inside, as they did in
 * a bound directory).  What others cannot read on the host is left out:
 * as root sbx reads what the sandbox's uid could not (/etc/ssl/private).
 */
static int
copy_node(struct build *b, int src_dir, const char *name, int follow,
    const char *hostpath, int dst_dir, const char *dname, int depth)
{
	struct stat	 st;
	char		 target[PATH_MAX], sub[PATH_MAX];
	struct dirent	*de;
	DIR		*d;
	ssize_t		 n;
	int		 fd, out, rc = 0;

	if (++b->entries > ENTRIES_MAX || depth > DEPTH_MAX) {
		errno = E2BIG;
		return -1;
	}
	if (fstatat(src_dir, name, &st, follow ? 0 : AT_SYMLINK_NOFOLLOW) ==
	    -1) {
		if (errno != ENOENT)
			return -1;
		/* Absent: noticed when it appears. */
		return follow ? sbx_buf_printf(&b->man, "- %s\n", hostpath) : 0;
	}
	if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(src_dir, name, target,
		    sizeof(target) - 1)) <= 0)
			return 0;
		target[n] = '\0';
		/* In a farm, the host's symlink itself, one more name for
		 * its inode: no inode to make (see copy_farm). */
		if (b->linking)
			return linkat(src_dir, name, dst_dir, dname, 0);
		return symlinkat(target, dst_dir, dname);
	}
	if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode))
		return line(&b->man, follow ? 'H' : 'h', &st, hostpath);
	if (S_ISDIR(st.st_mode) && is_mount(b, hostpath) && !b->linking)
		return copy_farm(b, src_dir, name, follow, hostpath, dst_dir,
		    dname, depth);
	/* O_NONBLOCK: a FIFO swapped in meanwhile cannot make us wait. */
	fd = openat(src_dir, name, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK | (follow ? 0 : O_NOFOLLOW) |
	    (S_ISDIR(st.st_mode) ? O_DIRECTORY : 0));
	if (fd == -1)
		return errno == EACCES ? line(&b->man, follow ? 'H' : 'h', &st,
		    hostpath) : -1;
	if (fstat(fd, &st) == -1 || line(&b->man, follow ? 'H' : 'h', &st,
	    hostpath) == -1) {
		close(fd);
		return -1;
	}
	if (S_ISREG(st.st_mode)) {
		if ((st.st_mode & S_IROTH) == 0) {
			close(fd);
			return 0;
		}
		out = openat(dst_dir, dname, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out == -1 || copy_data(b, fd, out) == -1 ||
		    fchmod(out, (st.st_mode & 0555) | 0444) == -1)
			rc = -1;
		if (out != -1)
			close(out);
		close(fd);
		return rc;
	}
	if (!S_ISDIR(st.st_mode) || (st.st_mode & (S_IROTH | S_IXOTH)) !=
	    (S_IROTH | S_IXOTH)) {
		close(fd);
		return 0;
	}
	if (mkdirat(dst_dir, dname, 0700) == -1 || (out = openat(dst_dir, dname,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		close(fd);
		return -1;
	}
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		close(out);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    strchr(de->d_name, '\n') != NULL)
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", hostpath,
		    de->d_name) >= sizeof(sub))
			continue;
		rc = copy_node(b, dirfd(d), de->d_name, 0, sub, out,
		    de->d_name, depth + 1);
	}
	closedir(d);
	close(out);
	return rc;
}

/* A host path under /etc/, copied to the same place in the tree. */
static int
copy_top(struct build *b, int tree, const char *path)
{
	struct sbx_error	 e;
	char			 rel[PATH_MAX], *slash;
	int			 dst, rc;

	if (strncmp(path, "/etc/", 5) != 0 || (size_t)snprintf(rel,
	    sizeof(rel), "%s", path + 5) >= sizeof(rel)) {
		errno = EINVAL;
		return -1;
	}
	if ((slash = strrchr(rel, '/')) == NULL)
		return copy_node(b, AT_FDCWD, path, 1, path, tree, rel, 0);
	/* The CA bundle at /etc/pki/tls/certs/...: the one file, in the
	 * directories it needs. */
	*slash = '\0';
	if (access(path, F_OK) == -1)
		return sbx_buf_printf(&b->man, "- %s\n", path);
	if ((dst = sbx_fs_mkdirs_at(tree, rel, 0700, &e)) == -1)
		return -1;
	rc = copy_node(b, AT_FDCWD, path, 1, path, dst, slash + 1, 0);
	close(dst);
	return rc;
}

/*
 * Record the copy itself, every directory (made 0755 now that it is
 * complete) and regular file: a change to any of them moves its ctime,
 * which nobody can set back.
 */
static int
record_copy(struct build *b, int dir, const char *rel, int depth)
{
	struct stat	 st;
	struct dirent	*de;
	char		 sub[PATH_MAX];
	DIR		*d;
	int		 fd, rc = 0;

	if (depth > DEPTH_MAX || (fd = fcntl(dir, F_DUPFD_CLOEXEC, 3)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		int cfd;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			rc = -1;
			break;
		}
		snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name);
		if (S_ISREG(st.st_mode))
			rc = line(&b->man, 'c', &st, sub);
		else if (S_ISDIR(st.st_mode)) {
			if ((cfd = openat(dir, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
				rc = -1;
				break;
			}
			rc = record_copy(b, cfd, sub, depth + 1);
			close(cfd);
		}
	}
	closedir(d);
	if (rc == 0 && (fchmod(dir, 0755) == -1 || fstat(dir, &st) == -1 ||
	    line(&b->man, 'c', &st, rel) == -1))
		rc = -1;
	return rc;
}

static int
make_file(int tree, const struct sbx_etc_made *m)
{
	int	 fd, rc = 0;

	(void)unlinkat(tree, m->name, 0);
	if ((fd = openat(tree, m->name, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	if (sbx_fs_write_all(fd, m->data, m->len) == -1 ||
	    fchmod(fd, 0444) == -1)
		rc = -1;
	close(fd);
	return rc;
}

/* Trees replaced (or left by a crash) more than STALE_SEC ago. */
static void
gc(int etcdir)
{
	struct sbx_error	 e;
	struct stat		 st;
	struct dirent		*de;
	DIR			*d;
	int			 fd;
	time_t			 now = time(NULL);

	if ((fd = fcntl(etcdir, F_DUPFD_CLOEXEC, 3)) == -1)
		return;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, ".b-", 3) == 0 &&
		    fstatat(etcdir, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    0 && st.st_mtime + STALE_SEC < now)
			(void)sbx_fs_rm_tree_at(etcdir, de->d_name, &e);
	closedir(d);
}

static int
build(int etcdir, const char *key, const struct sbx_etc_spec *spec,
    struct sbx_error *e)
{
	struct build	 b;
	struct timespec	 ts;
	char		 tmp[96];
	size_t		 i;
	int		 bfd = -1, tree = -1, rc = -1;

	memset(&b, 0, sizeof(b));
	b.spec = spec;
	gc(etcdir);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	snprintf(tmp, sizeof(tmp), ".b-%s-%ld-%ld", key, (long)getpid(),
	    ts.tv_nsec);
	if (mkdirat(etcdir, tmp, 0700) == -1 || (bfd = openat(etcdir, tmp,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fchmod(bfd, 0711) == -1 ||
	    mkdirat(bfd, TREE, 0700) == -1 || (tree = openat(bfd, TREE,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		sbx_error_sys(e, "cache_failed", "cannot create cache/etc/%s",
		    tmp);
		goto out;
	}
	if (sbx_buf_printf(&b.man, "sbx-etc 2 %s\n", key) == -1)
		goto fail;
	for (i = 0; i < spec->ncopy; i++)
		if (copy_top(&b, tree, spec->copy[i]) == -1)
			goto fail;
	for (i = 0; i < spec->nmade; i++)
		if (make_file(tree, &spec->made[i]) == -1)
			goto fail;
	if (record_copy(&b, tree, ".", 0) == -1 ||
	    sbx_fs_write_atomic(bfd, MANIFEST, b.man.p, b.man.len, 0600, e) ==
		-1)
		goto fail;
	/* Published whole: a new key appears at once; a stale tree is
	 * exchanged with the new one in one step.  The old one stays
	 * (under the build's name) for runs that opened it a moment ago,
	 * until a later build removes it. */
	if (renameat2(etcdir, tmp, etcdir, key, RENAME_NOREPLACE) == -1) {
		if (errno != EEXIST || renameat2(etcdir, tmp, etcdir, key,
		    RENAME_EXCHANGE) == -1)
			goto fail;
		(void)utimensat(etcdir, tmp, NULL, AT_SYMLINK_NOFOLLOW);
	}
	rc = 0;
	goto out;
fail:
	sbx_error_sys(e, "cache_failed", "cannot build the sandbox's /etc "
	    "in cache/etc");
	(void)sbx_fs_rm_tree_at(etcdir, tmp, &(struct sbx_error){ 0 });
out:
	if (tree != -1)
		close(tree);
	if (bfd != -1)
		close(bfd);
	sbx_buf_release(&b.man);
	return rc;
}

/* One number of a manifest line, in base 8 or 10 (negative: signed,
 * as mtimes before 1970 are), then c; NULL if it is not there. */
static const char *
num(const char *p, int base, char c, unsigned long long *v)
{
	char	*end;

	if ((*p < '0' || *p > '9') && (*p != '-' || base > 0))
		return NULL;
	errno = 0;
	*v = base > 0 ? strtoull(p, &end, base) :
	    (unsigned long long)strtoll(p, &end, -base);
	return errno == 0 && end != p && *end == c ? end + 1 : NULL;
}

/*
 * Does a manifest line (after its tag) say what this stat says, and is
 * path what follows?  The numbers line() wrote are read back and
 * compared: formatting each stat anew to compare text cost as much as
 * the stats themselves (issue 19).
 */
static int
same(const char *p, const char *path, const struct stat *st)
{
	/* dev ino mode size mtime.nsec ctime.nsec */
	static const struct { int base; char end; } f[8] = {
		{ 10, ' ' }, { 10, ' ' }, { 8, ' ' }, { -10, ' ' },
		{ -10, '.' }, { -10, ' ' }, { -10, '.' }, { -10, ' ' },
	};
	unsigned long long	 v[8];
	size_t			 i;

	for (i = 0; i < 8; i++)
		if ((p = num(p, f[i].base, f[i].end, &v[i])) == NULL)
			return 0;
	return p == path && v[0] == (unsigned long long)st->st_dev &&
	    v[1] == (unsigned long long)st->st_ino &&
	    v[2] == (unsigned long long)(unsigned)st->st_mode &&
	    (long long)v[3] == (long long)st->st_size &&
	    (long long)v[4] == (long long)st->st_mtim.tv_sec &&
	    (long long)v[5] == (long long)st->st_mtim.tv_nsec &&
	    (long long)v[6] == (long long)st->st_ctim.tv_sec &&
	    (long long)v[7] == (long long)st->st_ctim.tv_nsec;
}

/* Is every line of the manifest still true?  Which farms are to be
 * bound (spec->bound). */
static int
current(int dfd, int tree, const char *key, const struct sbx_etc_spec *spec)
{
	size_t		 k;
	unsigned	 bound = 0;
	struct sbx_buf	 m = SBX_BUF_INIT;
	struct stat	 st;
	char		 head[64], *p, *nl, *path;
	int		 fd, ok = 0, i;
	ssize_t		 n;

	if ((fd = openat(dfd, MANIFEST, O_RDONLY | O_NOFOLLOW | O_CLOEXEC |
	    O_NONBLOCK)) == -1)
		return 0;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || !trusted(&st) ||
	    (size_t)st.st_size > MANIFEST_MAX ||
	    (m.p = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		goto out;
	}
	m.cap = (size_t)st.st_size + 1;
	while (m.len < (size_t)st.st_size && (n = read(fd, m.p + m.len,
	    (size_t)st.st_size - m.len)) > 0)
		m.len += (size_t)n;
	close(fd);
	if (m.len != (size_t)st.st_size)
		goto out;
	m.p[m.len] = '\0';
	snprintf(head, sizeof(head), "sbx-etc 2 %s\n", key);
	if (strncmp(m.p, head, strlen(head)) != 0)
		goto out;
	for (p = m.p + strlen(head); *p != '\0'; p = nl + 1) {
		if ((nl = strchr(p, '\n')) == NULL)
			goto out;
		*nl = '\0';
		if (p[0] == '-') {
			if (stat(p + 2, &st) == 0 || errno != ENOENT)
				goto out;
			continue;
		}
		if (p[0] == 'M') {
			for (k = 0; k < spec->nmounts; k++)
				if (strcmp(p + 2, spec->mounts[k]) == 0)
					bound |= 1u << k;
			continue;
		}
		/* The path is what follows the seventh space. */
		for (path = p, i = 0; i < 7 && path != NULL; i++)
			if ((path = strchr(path, ' ')) != NULL)
				path++;
		if (path == NULL || path > nl)
			goto out;
		if (p[0] == 'H' ? stat(path, &st) == -1 :
		    p[0] == 'h' ? lstat(path, &st) == -1 :
		    p[0] == 'c' ? fstatat(tree, path, &st,
		    AT_SYMLINK_NOFOLLOW) == -1 : 1)
			goto out;
		if (p[1] != ' ' || !same(p + 2, path, &st))
			goto out;
	}
	ok = 1;
	if (spec->bound != NULL)
		*spec->bound = bound;
out:
	sbx_buf_release(&m);
	return ok;
}

int
sbx_etccache_open(int cache_fd, const struct sbx_etc_spec *spec, int *built,
    struct sbx_error *e)
{
	struct stat	 st;
	uint64_t	 h = 0xcbf29ce484222325ULL;
	char		 key[32];
	size_t		 i;
	int		 etcdir, dfd, tree, attempt;

	*built = 0;
	h = fnv(h, "sbx-etc 2", 10);
	for (i = 0; i < spec->ncopy; i++)
		h = fnv(h, spec->copy[i], strlen(spec->copy[i]) + 1);
	h = fnv(h, "", 1);
	for (i = 0; i < spec->nmounts; i++)
		h = fnv(h, spec->mounts[i], strlen(spec->mounts[i]) + 1);
	for (i = 0; i < spec->nmade; i++) {
		h = fnv(h, spec->made[i].name, strlen(spec->made[i].name) + 1);
		h = fnv(h, spec->made[i].data, spec->made[i].len);
		h = fnv(h, "", 1);
	}
	snprintf(key, sizeof(key), "%016llx", (unsigned long long)h);

	/* 0711: bwrap, run as the sandbox's uid when sbx is root, resolves
	 * the tree's path (it holds only what any user may read). */
	if ((etcdir = sbx_fs_mkdirs_at(cache_fd, "etc", 0711, e)) == -1)
		return -1;
	/*
	 * Whatever is in here becomes every sandbox's /etc (ld.so.preload
	 * would run code in each): it must be ours and writable by nobody
	 * else, like the state root around it, every file of it is created
	 * beneath this descriptor without following a symlink, and a copy
	 * changed after it was built (its ctime moves) is rebuilt.
	 */
	if (fstat(etcdir, &st) == 0 && trusted(&st) &&
	    (st.st_mode & 07777) != 0711)
		(void)fchmod(etcdir, 0711);
	if (fstat(etcdir, &st) == -1 || !trusted(&st)) {
		close(etcdir);
		return sbx_error_set(e, SBX_K_REJECTED, NULL,
		    "cache_untrusted", "cache/etc is not owned by uid %u or "
		    "is writable by others", (unsigned)geteuid());
	}
	for (attempt = 0; attempt < 2; attempt++) {
		dfd = openat(etcdir, key, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (dfd != -1) {
			tree = -1;
			if (fstat(dfd, &st) == 0 && trusted(&st))
				tree = openat(dfd, TREE, O_PATH | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
			if (tree != -1 && fstat(tree, &st) == 0 &&
			    trusted(&st) && current(dfd, tree, key, spec)) {
				close(dfd);
				close(etcdir);
				return tree;
			}
			if (tree != -1)
				close(tree);
			close(dfd);
		}
		if (attempt == 0) {
			if (build(etcdir, key, spec, e) == -1)
				break;
			*built = 1;
		} else
			sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
			    "cache_failed", "the sandbox's /etc in cache/etc "
			    "changed while it was built");
	}
	close(etcdir);
	return -1;
}
