/*
 * manifest.c: what a template holds, described (manifest.json: each
 * entry's path, type, mode, size, sha256, target) and checked against its
 * manifest (sbx provision image verify, sbx preflight --deep).
 *
 * No libarchive here: sbx-preflight verifies templates without loading it
 * (and libxml2, ICU and libstdc++ behind it).  SHA-256 comes from nettle,
 * which uses the CPU's SHA extensions where there are some (about five
 * times libsodium's portable code on the reference machine).
 */
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <linux/fs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <nettle/sha2.h>
#include <sodium.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "imageref.h"
#include "layout.h"
#include "manifest.h"

/* The digest of c as 64 lowercase hex digits (c is reset for reuse). */
void
sbx_manifest_sha_hex(struct sha256_ctx *c, char out[SBX_DIGEST_HEX + 1])
{
	unsigned char	 h[SHA256_DIGEST_SIZE];

	sha256_digest(c, sizeof(h), h);
	sodium_bin2hex(out, SBX_DIGEST_HEX + 1, h, sizeof(h));
}

/*
 * The read buffers of this module (SBX_IMAGE_IOBUF_RING of SBX_IMAGE_READ_BUF bytes),
 * mapped once per process with MAP_POPULATE: touched page by page, fresh
 * memory costs a page fault a page, which on the reference machine (a
 * paravirtualized guest) is ~14 us, ten times what populating it in one
 * call costs.  Never used by two callers at once (hash_fd, unpack() and
 * its hasher thread take turns; the module is not for concurrent use).
 */
unsigned char *
sbx_manifest_iobuf(void)
{
	static unsigned char	*buf;
	void			*p;

	if (buf == NULL) {
		p = mmap(NULL,
		    (size_t)SBX_IMAGE_IOBUF_RING * SBX_IMAGE_READ_BUF,
		    PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		if (p != MAP_FAILED)
			buf = p;
	}
	return buf;
}

int
sbx_manifest_hash_fd(int fd, unsigned long long cap,
    char out[SBX_DIGEST_HEX + 1], unsigned long long *total)
{
	struct sha256_ctx	 st;
	unsigned char		*buf;
	unsigned long long	 n = 0;
	ssize_t			 r;

	if ((buf = sbx_manifest_iobuf()) == NULL)
		return -1;
	sha256_init(&st);
	for (;;) {
		r = read(fd, buf, SBX_IMAGE_READ_BUF);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			break;
		n += (unsigned long long)r;
		if (cap && n > cap) {
			errno = EFBIG;
			return -1;
		}
		sha256_update(&st, (size_t)r, buf);
	}
	sbx_manifest_sha_hex(&st, out);
	if (total)
		*total = n;
	return 0;
}

/* ---- manifest ----------------------------------------------------------- */

static const char *
type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "dir";
	if (S_ISLNK(m))
		return "symlink";
	return "other";
}

/*
 * The manifest entries of the tree under dfd.  sums, when given, maps
 * paths to [size, sha256] recorded while the files were unpacked: a
 * regular file found there with that size is not read again (see
 * extract() for why the record is sure to describe the file).
 */
static int
walk(int dfd, const char *prefix, int make_ro, json_t *sums, json_t *entries,
    int depth, struct sbx_error *e)
{
	struct stat	 st;
	char		 path[PATH_MAX], target[PATH_MAX];
	char		 digest[SBX_DIGEST_HEX + 1];
	char		**names;
	json_t		*it, *rec;
	const char	*hex;
	size_t		 n, i;
	ssize_t		 tl;
	int		 fd, rc = 0;

	if (depth > SBX_IMAGE_WALK_DEPTH)
		return sbx_error_set(e, SBX_K_REJECTED, "source", "too_deep",
		    "the tree is nested more than %d levels",
		    SBX_IMAGE_WALK_DEPTH);
	if ((names = sbx_fs_sorted_names(dfd, &n)) == NULL)
		return sbx_error_sys(e, "read_failed", "cannot read %s",
		    prefix ? prefix : ".");
	for (i = 0; i < n && rc == 0; i++) {
		if (prefix)
			snprintf(path, sizeof(path), "%s/%s", prefix, names[i]);
		else
			snprintf(path, sizeof(path), "%s", names[i]);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1) {
			rc = sbx_error_sys(e, "stat_failed", "cannot stat an "
			    "entry of the template");
			break;
		}
		/* Immutable template: no write bit for anyone.  Symlinks
		 * have no mode of their own. */
		if (make_ro && !S_ISLNK(st.st_mode) && (st.st_mode & 0222)) {
			if (fchmodat(dfd, names[i], st.st_mode & 07555, 0) ==
			    -1) {
				rc = sbx_error_sys(e, "chmod_failed", "cannot "
				    "make the template read-only");
				break;
			}
			st.st_mode &= ~(mode_t)0222;
		}
		/* sbx_json_bytes: a name that is not UTF-8 must not fail
		 * the manifest (it is recorded with U+FFFD, both when
		 * written and when verified). */
		it = json_pack("{s:o,s:s,s:i}", "path", sbx_json_bytes(path,
		    strlen(path)), "type", type_name(st.st_mode), "mode",
		    (int)(st.st_mode & 07777));
		if (it == NULL) {
			rc = sbx_error_sys(e, "nomem", "manifest");
			break;
		}
		if (S_ISREG(st.st_mode) && sums != NULL &&
		    (rec = json_object_get(sums, path)) != NULL &&
		    json_integer_value(json_array_get(rec, 0)) ==
		    (json_int_t)st.st_size &&
		    (hex = json_string_value(json_array_get(rec, 1))) != NULL) {
			json_object_set_new(it, "size",
			    json_integer((json_int_t)st.st_size));
			json_object_set_new(it, "sha256", json_string(hex));
		} else if (S_ISREG(st.st_mode)) {
			fd = openat(dfd, names[i],
			    O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
				O_CLOEXEC);
			if (fd == -1 ||
			    sbx_manifest_hash_fd(fd, 0, digest, NULL) == -1) {
				if (fd != -1)
					close(fd);
				json_decref(it);
				rc = sbx_error_sys(e, "read_failed",
				    "cannot "
				    "hash a file of the template");
				break;
			}
			close(fd);
			json_object_set_new(it, "size",
			    json_integer((json_int_t)st.st_size));
			json_object_set_new(it, "sha256", json_string(digest));
		} else if (S_ISLNK(st.st_mode)) {
			tl = readlinkat(dfd, names[i], target,
			    sizeof(target) - 1);
			target[tl > 0 ? tl : 0] = '\0';
			json_object_set_new(it, "target", sbx_json_bytes(target,
			    strlen(target)));
		}
		json_array_append_new(entries, it);
		if (S_ISDIR(st.st_mode)) {
			fd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (fd == -1) {
				rc = sbx_error_sys(e, "read_failed", "cannot "
				    "open a directory of the template");
				break;
			}
			rc = walk(fd, path, make_ro, sums, entries, depth + 1,
			    e);
			close(fd);
		}
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

json_t *
sbx_manifest_build_sums(int dirfd, int make_ro, json_t *sums,
    struct sbx_error *e)
{
	struct stat	 st;
	json_t		*entries, *m;

	if (fstat(dirfd, &st) == -1) {
		sbx_error_sys(e, "stat_failed", "template");
		return NULL;
	}
	if (make_ro && (st.st_mode & 0222) &&
	    fchmod(dirfd, st.st_mode & 07555) == 0)
		st.st_mode &= ~(mode_t)0222;
	entries = json_array();
	json_array_append_new(entries, json_pack("{s:s,s:s,s:i}", "path", ".",
	    "type", "dir", "mode", (int)(st.st_mode & 07777)));
	if (walk(dirfd, NULL, make_ro, sums, entries, 0, e) == -1) {
		json_decref(entries);
		return NULL;
	}
	m = json_pack("{s:i,s:o}", "version", 1, "entries", entries);
	return m;
}

json_t *
sbx_manifest_build(int dirfd, int make_ro, struct sbx_error *e)
{
	return sbx_manifest_build_sums(dirfd, make_ro, NULL, e);
}

/* {path: entry} from a manifest's entries. */
static json_t *
by_path(const json_t *m)
{
	json_t		*o = json_object(), *it;
	size_t		 i;
	const char	*p;

	json_array_foreach (json_object_get(m, "entries"), i, it)
		if ((p = json_string_value(json_object_get(it, "path"))))
			json_object_set(o, p, it);
	return o;
}

static void
diff_add(json_t *diffs, const char *path, const char *change, json_t *want,
    json_t *got)
{
	json_t	*d = json_pack("{s:s,s:s}", "path", path, "change", change);

	if (want)
		json_object_set(d, "want", want);
	if (got)
		json_object_set(d, "got", got);
	json_array_append_new(diffs, d);
}

int
sbx_manifest_diff(const json_t *want, const json_t *got, json_t *diffs)
{
	static const char *const keys[] = { "type", "mode", "size", "sha256",
	    "target" };
	json_t		*w = by_path(want), *g = by_path(got), *a, *b, *va, *vb;
	const char	*path;
	size_t		 i;

	json_object_foreach (w, path, a) {
		if ((b = json_object_get(g, path)) == NULL) {
			diff_add(diffs, path, "missing", NULL, NULL);
			continue;
		}
		for (i = 0; i < sizeof(keys) / sizeof(*keys); i++) {
			va = json_object_get(a, keys[i]);
			vb = json_object_get(b, keys[i]);
			if ((va == NULL) != (vb == NULL) ||
			    (va != NULL && !json_equal(va, vb))) {
				diff_add(diffs, path, keys[i], va, vb);
				/* A type change makes the rest noise. */
				if (i == 0)
					break;
			}
		}
	}
	json_object_foreach (g, path, b)
		if (json_object_get(w, path) == NULL)
			diff_add(diffs, path, "added", NULL, NULL);
	json_decref(w);
	json_decref(g);
	return 0;
}

int
sbx_manifest_verify(int rootfd, const char *digest, json_t *diffs,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*want = NULL, *got = NULL;
	char		 rel[SBX_DIGEST_HEX + 32];
	int		 imagesfd, rfd = -1, rc = -1;

	if ((imagesfd = sbx_layout_open(rootfd, SBX_L_IMAGES, NULL,
		 O_RDONLY | O_DIRECTORY, e)) == -1)
		return -1;
	snprintf(rel, sizeof(rel), "%s/%s", digest, SBX_IMAGE_MANIFEST);
	if (sbx_fs_read_file_at(imagesfd, rel, SBX_IMAGE_MANIFEST_MAX, &b,
		&e2) == -1 ||
	    (want = sbx_json_parse(b.p, b.len, SBX_IMAGE_MANIFEST_MAX, &e2)) ==
		NULL) {
		diff_add(diffs, SBX_IMAGE_MANIFEST, "manifest", NULL, NULL);
		rc = 0;
		goto out;
	}
	snprintf(rel, sizeof(rel), "%s/rootfs", digest);
	if ((rfd = sbx_fs_open_beneath(imagesfd, rel, O_RDONLY | O_DIRECTORY,
	    &e2)) == -1) {
		diff_add(diffs, ".", "missing", NULL, NULL);
		rc = 0;
		goto out;
	}
	if ((got = sbx_manifest_build(rfd, 0, e)) == NULL)
		goto out;
	rc = sbx_manifest_diff(want, got, diffs);
out:
	sbx_buf_release(&b);
	json_decref(want);
	json_decref(got);
	if (rfd != -1)
		close(rfd);
	close(imagesfd);
	return rc;
}
