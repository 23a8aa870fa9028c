/*
 * image.c: root filesystem templates (images/<sha256>/rootfs).
 *
 * A template is built from a local rootfs tarball whose sha256 the caller
 * names: the digest is checked over the whole file before anything is
 * unpacked, and again over the very bytes libarchive reads (the file
 * could change between the two).  Unpacking happens in images/.tmp-X,
 * with every entry judged first: an absolute path, a `..`, a control
 * character, a hard link leaving the tree or reached through a symlink
 * refuses the whole image; device nodes, FIFOs and sockets are dropped;
 * setuid, setgid and sticky bits, owners, ACLs, xattrs (and so file
 * capabilities) are never restored.  The template is then made read-only,
 * described in manifest.json and renamed into place atomically.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <sodium.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "provision.h"
#include "runlimits.h"

#define NAMES_FILE	"names.json"
#define MANIFEST_MAX	(256u << 20)
#define NAMES_MAX	(1u << 20)
#define WALK_DEPTH	128

/* ---- small helpers ------------------------------------------------------ */

int
sbx_image_path_norm(const char *in, char *out, size_t outsz)
{
	const char	*p = in, *q;
	size_t		 len, o = 0, i;

	if (in == NULL || *in == '/')
		return -1;
	while (*p != '\0') {
		for (q = p; *q != '\0' && *q != '/'; q++)
			;
		len = (size_t)(q - p);
		if (len == 0 || (len == 1 && p[0] == '.'))
			goto next;
		/* `..` would climb out of the template; a newline (or any
		 * control character) would forge lines in manifests, logs
		 * and listings. */
		if (len == 2 && p[0] == '.' && p[1] == '.')
			return -1;
		if (len > NAME_MAX)
			return -1;
		for (i = 0; i < len; i++)
			if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
				return -1;
		if (o + len + 2 > outsz)
			return -1;
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, p, len);
		o += len;
next:
		p = *q ? q + 1 : q;
	}
	if (o == 0) {
		if (outsz < 2)
			return -1;
		out[o++] = '.';
	}
	out[o] = '\0';
	return 0;
}

/* A path for a message: printable ASCII only, bounded. */
static void
printable(const char *s, char *out, size_t sz)
{
	size_t	 o = 0;

	for (; s && *s && o + 1 < sz; s++)
		out[o++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
	out[o] = '\0';
}

static void
hex_digest(const unsigned char h[crypto_hash_sha256_BYTES],
    char out[SBX_DIGEST_HEX + 1])
{
	sodium_bin2hex(out, SBX_DIGEST_HEX + 1, h, crypto_hash_sha256_BYTES);
}

static int
hash_fd(int fd, unsigned long long cap, char out[SBX_DIGEST_HEX + 1],
    unsigned long long *total)
{
	crypto_hash_sha256_state st;
	unsigned char		 buf[65536], h[crypto_hash_sha256_BYTES];
	unsigned long long	 n = 0;
	ssize_t			 r;

	crypto_hash_sha256_init(&st);
	for (;;) {
		r = read(fd, buf, sizeof(buf));
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
		crypto_hash_sha256_update(&st, buf, (unsigned long long)r);
	}
	crypto_hash_sha256_final(&st, h);
	hex_digest(h, out);
	if (total)
		*total = n;
	return 0;
}

/* ---- manifest ----------------------------------------------------------- */

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char **
sorted_names(int dfd, size_t *np)
{
	DIR		*d;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;
	int		 fd;

	*np = 0;
	if ((fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return NULL;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			goto fail;
		n++;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_str);
	*np = n;
	if (v == NULL)
		v = calloc(1, sizeof(*v));
	return v;
fail:
	while (n > 0)
		free(v[--n]);
	free(v);
	closedir(d);
	return NULL;
}

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

static int
walk(int dfd, const char *prefix, int make_ro, json_t *entries, int depth,
    struct sbx_error *e)
{
	struct stat	 st;
	char		 path[PATH_MAX], target[PATH_MAX], digest[SBX_DIGEST_HEX + 1];
	char		**names;
	json_t		*it;
	size_t		 n, i;
	ssize_t		 tl;
	int		 fd, rc = 0;

	if (depth > WALK_DEPTH)
		return sbx_error_set(e, SBX_K_REJECTED, "source", "too_deep",
		    "the tree is nested more than %d levels", WALK_DEPTH);
	if ((names = sorted_names(dfd, &n)) == NULL)
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
		if (S_ISREG(st.st_mode)) {
			fd = openat(dfd, names[i], O_RDONLY | O_NOFOLLOW |
			    O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
			if (fd == -1 || hash_fd(fd, 0, digest, NULL) == -1) {
				if (fd != -1)
					close(fd);
				json_decref(it);
				rc = sbx_error_sys(e, "read_failed", "cannot "
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
			rc = walk(fd, path, make_ro, entries, depth + 1, e);
			close(fd);
		}
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

json_t *
sbx_image_manifest_build(int dirfd, int make_ro, struct sbx_error *e)
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
	if (walk(dirfd, NULL, make_ro, entries, 0, e) == -1) {
		json_decref(entries);
		return NULL;
	}
	m = json_pack("{s:i,s:o}", "version", 1, "entries", entries);
	return m;
}

/* {path: entry} from a manifest's entries. */
static json_t *
by_path(const json_t *m)
{
	json_t		*o = json_object(), *it;
	size_t		 i;
	const char	*p;

	json_array_foreach(json_object_get(m, "entries"), i, it)
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
sbx_image_manifest_diff(const json_t *want, const json_t *got, json_t *diffs)
{
	static const char *const keys[] = { "type", "mode", "size", "sha256",
	    "target" };
	json_t		*w = by_path(want), *g = by_path(got), *a, *b, *va, *vb;
	const char	*path;
	size_t		 i;

	json_object_foreach(w, path, a) {
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
	json_object_foreach(g, path, b)
		if (json_object_get(w, path) == NULL)
			diff_add(diffs, path, "added", NULL, NULL);
	json_decref(w);
	json_decref(g);
	return 0;
}

/* ---- names -------------------------------------------------------------- */

json_t *
sbx_image_names_load(int imagesfd, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*j, *v;
	const char	*k;

	if (sbx_read_file_at(imagesfd, NAMES_FILE, NAMES_MAX, &b, &e2) == -1) {
		sbx_buf_release(&b);
		if (e2.kind && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return json_object();
		*e = e2;
		return NULL;
	}
	j = sbx_json_parse(b.p, b.len, NAMES_MAX, &e2);
	sbx_buf_release(&b);
	if (j != NULL)
		json_object_foreach(j, k, v)
			if (!sbx_image_name_valid(k) ||
			    !sbx_image_digest_valid(json_string_value(v))) {
				json_decref(j);
				j = NULL;
				break;
			}
	if (j == NULL)
		sbx_error_set(e, SBX_K_INVALID_ARGS, "names",
		    "config_invalid", "images/names.json is malformed");
	return j;
}

static int
names_save(int imagesfd, json_t *names, struct sbx_error *e)
{
	char	*s = sbx_envelope_dump(names);
	int	 rc;

	if (s == NULL)
		return sbx_error_sys(e, "nomem", "names");
	rc = sbx_write_atomic(imagesfd, NAMES_FILE, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

static int
open_images(int rootfd, int create, struct sbx_error *e)
{
	/* images/ is opened component-wise without following symlinks: a
	 * planted link never gets a template (or a temp dir) written
	 * through it. */
	if (create)
		return sbx_mkdirs_at(rootfd, "images", 0700, e);
	return sbx_open_beneath(rootfd, "images", O_RDONLY | O_DIRECTORY, e);
}

static int
complete(int imagesfd, const char *digest)
{
	char		 rel[SBX_DIGEST_HEX + 32];
	struct stat	 st;

	snprintf(rel, sizeof(rel), "%s/%s", digest, SBX_IMAGE_MANIFEST);
	return fstatat(imagesfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

/* ---- add ---------------------------------------------------------------- */

int
sbx_image_limits(int rootfd, struct sbx_image_add *a, struct sbx_error *e)
{
	json_t			*cfg = NULL, *im, *v;
	static const char *const keys[] = { "max_bytes",
	    "max_unpacked_bytes" };
	unsigned long long	*dst[2];
	size_t			 i;

	a->max_bytes = SBX_IMAGE_MAX_BYTES;
	a->max_unpacked = SBX_IMAGE_MAX_UNPACKED;
	a->max_entries = SBX_IMAGE_MAX_ENTRIES;
	dst[0] = &a->max_bytes;
	dst[1] = &a->max_unpacked;
	if (rootfd >= 0 && sbx_config_load(rootfd, "config/sandbox.json",
	    &cfg, e) == -1)
		return -1;
	if (cfg == NULL || (im = json_object_get(cfg, "images")) == NULL) {
		json_decref(cfg);
		return 0;
	}
	for (i = 0; i < 2; i++) {
		if ((v = json_object_get(im, keys[i])) == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) <= 0) {
			json_decref(cfg);
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "config/sandbox.json: images.%s "
			    "must be a positive integer", keys[i]);
		}
		*dst[i] = (unsigned long long)json_integer_value(v);
	}
	json_decref(cfg);
	return 0;
}

/* libarchive reads through this: the bytes unpacked are the bytes hashed. */
struct src {
	int			 fd;
	crypto_hash_sha256_state st;
	unsigned long long	 n, cap;
	unsigned char		 buf[65536];
};

static la_ssize_t
src_read(struct archive *ar, void *cd, const void **out)
{
	struct src	*s = cd;
	ssize_t		 r;

	do
		r = read(s->fd, s->buf, sizeof(s->buf));
	while (r == -1 && errno == EINTR);
	if (r == -1) {
		archive_set_error(ar, errno, "read error");
		return -1;
	}
	s->n += (unsigned long long)r;
	if (s->n > s->cap) {
		archive_set_error(ar, EFBIG, "the file grew");
		return -1;
	}
	crypto_hash_sha256_update(&s->st, s->buf, (unsigned long long)r);
	*out = s->buf;
	return r;
}

static int
unsafe(struct sbx_error *e, const char *path, const char *why)
{
	char	 p[128];

	printable(path, p, sizeof(p));
	return sbx_error_set(e, SBX_K_REJECTED, "source", "unsafe_entry",
	    "archive entry `%s` refused: %s", p, why);
}

/* A hard link must name a regular file already unpacked, reached without
 * a symlink: link(2) follows symlinks in the directories of its source,
 * which would let an archive link a host file into the template. */
static int
hardlink_ok(int rootfd, const char *target)
{
	char		 dir[PATH_MAX];
	const char	*slash = strrchr(target, '/'), *leaf = target;
	struct stat	 st;
	struct sbx_error e2;
	int		 dfd, ok;

	if (slash != NULL) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - target),
		    target);
		leaf = slash + 1;
		if ((dfd = sbx_open_beneath(rootfd, dir, O_PATH | O_DIRECTORY,
		    &e2)) == -1)
			return 0;
	} else if ((dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return 0;
	ok = fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
	close(dfd);
	return ok;
}

/*
 * An OCI whiteout, in pass 1 of a layer (before the layer's own entries
 * are written, so that it only hides what lower layers made):
 * `dir/.wh.NAME` removes dir/NAME, `dir/.wh..wh..opq` empties dir.  The
 * directory is reached without following a symlink; `.wh..` and `.wh..`
 * plus nothing are refused.
 */
static int
whiteout(int rootfd, const char *norm, const char *path, struct sbx_error *e)
{
	struct sbx_error e2;
	char		 dir[PATH_MAX], **names;
	const char	*slash = strrchr(norm, '/'), *leaf, *name;
	size_t		 n, i;
	int		 dfd, rc = 0;

	leaf = slash ? slash + 1 : norm;
	name = leaf + 4;
	if (slash != NULL) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - norm), norm);
		dfd = sbx_open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY,
		    &e2);
	} else
		dfd = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
	if (strcmp(leaf, ".wh..wh..opq") != 0 && (*name == '\0' ||
	    strcmp(name, ".") == 0 || strcmp(name, "..") == 0)) {
		if (dfd != -1)
			close(dfd);
		return unsafe(e, path, "a whiteout of `.` or `..`");
	}
	if (dfd == -1) {
		if (e2.kind && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return 0;	/* nothing below to hide */
		return unsafe(e, path, "a whiteout through a symlink");
	}
	if (strcmp(leaf, ".wh..wh..opq") == 0) {
		if ((names = sorted_names(dfd, &n)) == NULL) {
			close(dfd);
			return sbx_error_sys(e, "read_failed", "whiteout");
		}
		for (i = 0; i < n; i++) {
			if (rc == 0)
				rc = sbx_provision_rm_tree(dfd, names[i], e);
			free(names[i]);
		}
		free(names);
	} else
		rc = sbx_provision_rm_tree(dfd, name, e);
	close(dfd);
	return rc;
}

static int
is_whiteout(const char *norm)
{
	const char	*slash = strrchr(norm, '/');

	return strncmp(slash ? slash + 1 : norm, ".wh.", 4) == 0;
}

/* pass: 0 a plain rootfs tarball; 1 an OCI layer's whiteouts only;
 * 2 an OCI layer's other entries. */
static int
extract(struct archive *ar, struct archive *w, int rootfd,
    struct sbx_image_add *a, int pass, struct sbx_error *e)
{
	struct archive_entry	*ent;
	char			 norm[PATH_MAX], lnorm[PATH_MAX];
	const char		*path, *hl;
	const void		*blk;
	size_t			 len;
	la_int64_t		 off, sz;
	mode_t			 type, perm;
	int			 r;

	for (;;) {
		r = archive_read_next_header(ar, &ent);
		if (r == ARCHIVE_EOF)
			return 0;
		if (r < ARCHIVE_WARN)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
			    "malformed_archive", "the archive is malformed or "
			    "truncated: %s", archive_error_string(ar) ?
			    archive_error_string(ar) : "read error");
		if (pass != 2 && ++a->count > a->max_entries)
			return sbx_error_set(e, SBX_K_REJECTED, "source",
			    "too_large", "the archive has more than %llu "
			    "entries", a->max_entries);
		path = archive_entry_pathname(ent);
		if (path == NULL)
			return unsafe(e, "?", "no path (or not encodable)");
		if (sbx_image_path_norm(path, norm, sizeof(norm)) == -1)
			return unsafe(e, path, *path == '/' ? "absolute path" :
			    "`..`, a control character or an overlong "
			    "component in the path");
		if (pass == 1) {
			if (is_whiteout(norm) && whiteout(rootfd, norm, path,
			    e) == -1)
				return -1;
			continue;
		}
		if (pass == 2 && is_whiteout(norm))
			continue;
		type = archive_entry_filetype(ent);
		hl = archive_entry_hardlink(ent);
		if (hl != NULL) {
			if (sbx_image_path_norm(hl, lnorm, sizeof(lnorm)) == -1
			    || strcmp(lnorm, ".") == 0)
				return unsafe(e, path, "hard link outside the "
				    "tree");
			if (!hardlink_ok(rootfd, lnorm))
				return unsafe(e, path, "hard link to something "
				    "that is not a regular file of the tree, or "
				    "through a symlink");
			archive_entry_set_hardlink(ent, lnorm);
		} else if (type != AE_IFREG && type != AE_IFDIR &&
		    type != AE_IFLNK) {
			/* Devices, FIFOs and sockets have no place in a
			 * template: /dev is the sandbox's own. */
			a->dropped++;
			continue;
		}
		if (strcmp(norm, ".") == 0)
			continue;	/* the root itself: ours */
		perm = archive_entry_perm(ent);
		if (perm & 07000)
			a->stripped++;
		/* No setuid/setgid/sticky ever; the owner keeps read (and
		 * write until the template is sealed) to walk and hash it. */
		perm = (perm & 0777) | (type == AE_IFDIR ? 0700 : 0600);
		archive_entry_set_perm(ent, perm);
		archive_entry_xattr_clear(ent);
		archive_entry_acl_clear(ent);
		if (hl == NULL && archive_entry_size_is_set(ent)) {
			/* Declared sizes count: a sparse 10 GB file is
			 * refused before a byte of it is written. */
			sz = archive_entry_size(ent);
			if (sz < 0 || (a->declared += (unsigned long long)sz) >
			    a->max_unpacked)
				return sbx_error_set(e, SBX_K_REJECTED,
				    "source", "too_large", "the archive "
				    "unpacks to more than %llu bytes",
				    a->max_unpacked);
		}
		archive_entry_set_pathname(ent, norm);
		if (archive_write_header(w, ent) < ARCHIVE_WARN)
			return unsafe(e, path, archive_error_string(w) ?
			    archive_error_string(w) : "cannot be written");
		if (type == AE_IFREG && archive_entry_size(ent) > 0) {
			while ((r = archive_read_data_block(ar, &blk, &len,
			    &off)) == ARCHIVE_OK) {
				if ((a->written += len) > a->max_unpacked)
					return sbx_error_set(e, SBX_K_REJECTED,
					    "source", "too_large", "the archive "
					    "unpacks to more than %llu bytes",
					    a->max_unpacked);
				if (archive_write_data_block(w, blk, len, off)
				    < ARCHIVE_OK)
					return sbx_error_set(e,
					    SBX_K_EXECUTION_ERROR, "source",
					    "write_failed", "cannot write: %s",
					    archive_error_string(w));
			}
			if (r != ARCHIVE_EOF)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "source", "malformed_archive", "the archive "
				    "is malformed or truncated: %s",
				    archive_error_string(ar) ?
				    archive_error_string(ar) : "read error");
		}
		if (archive_write_finish_entry(w) < ARCHIVE_WARN)
			return unsafe(e, path, archive_error_string(w) ?
			    archive_error_string(w) : "cannot be written");
	}
}

/* sbx binds its own passwd, group, hosts (and, with host networking,
 * resolv.conf) over these: they must exist as regular files in the
 * read-only template, since bwrap cannot create mount points there. */
static int
etc_placeholders(int rootfd, struct sbx_error *e)
{
	static const char *const files[] = { "passwd", "group", "hosts",
	    "resolv.conf" };
	struct stat	 st;
	size_t		 i;
	int		 etc, fd;

	if (mkdirat(rootfd, "etc", 0755) == -1 && errno != EEXIST)
		return sbx_error_sys(e, "mkdir_failed", "cannot create etc");
	if ((etc = openat(rootfd, "etc", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return sbx_error_set(e, SBX_K_REJECTED, "source",
		    "unsafe_entry", "the image's /etc is not a directory");
	for (i = 0; i < sizeof(files) / sizeof(*files); i++) {
		if (fstatat(etc, files[i], &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISREG(st.st_mode))
				continue;
			if (S_ISDIR(st.st_mode) || unlinkat(etc, files[i], 0)
			    == -1) {
				close(etc);
				return sbx_error_set(e, SBX_K_REJECTED,
				    "source", "unsafe_entry", "the image's "
				    "/etc/%s is not a regular file", files[i]);
			}
		}
		if ((fd = openat(etc, files[i], O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0644)) == -1) {
			close(etc);
			return sbx_error_sys(e, "create_failed", "cannot "
			    "create etc/%s", files[i]);
		}
		close(fd);
	}
	close(etc);
	return 0;
}

static int
unpack(int srcfd, int rootfd, struct sbx_image_add *a, const char *expect,
    int pass, struct sbx_error *e)
{
	struct archive	*ar, *w;
	struct src	*s;
	unsigned char	 h[crypto_hash_sha256_BYTES];
	char		 got[SBX_DIGEST_HEX + 1];
	const void	*dummy;
	int		 cwd, rc;
	mode_t		 um;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return sbx_error_sys(e, "nomem", "unpack");
	s->fd = srcfd;
	s->cap = a->max_bytes;
	crypto_hash_sha256_init(&s->st);
	if (lseek(srcfd, 0, SEEK_SET) == -1) {
		free(s);
		return sbx_error_sys(e, "read_failed", "cannot rewind");
	}
	ar = archive_read_new();
	w = archive_write_disk_new();
	if (ar == NULL || w == NULL) {
		archive_read_free(ar);
		archive_write_free(w);
		free(s);
		return sbx_error_sys(e, "nomem", "libarchive");
	}
	/* Tar only (ustar, pax, GNU), under any compression filter. */
	archive_read_support_filter_all(ar);
	archive_read_support_format_tar(ar);
	/* No OWNER, PERM, ACL, XATTR, FFLAGS: files belong to us, with
	 * plain permission bits.  The SECURE_* flags are libarchive's own
	 * line of defence behind the checks in extract(). */
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME |
	    ARCHIVE_EXTRACT_SECURE_NODOTDOT |
	    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
	    ARCHIVE_EXTRACT_SECURE_SYMLINKS);
	if ((cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		archive_read_free(ar);
		archive_write_free(w);
		free(s);
		return sbx_error_sys(e, "cwd", "cannot open the current "
		    "directory");
	}
	/* libarchive writes by path: relative to the template, which is
	 * our working directory for the duration. */
	um = umask(022);
	if (fchdir(rootfd) == -1)
		rc = sbx_error_sys(e, "chdir_failed", "cannot enter the "
		    "template");
	else if (archive_read_open(ar, s, NULL, src_read, NULL) != ARCHIVE_OK)
		rc = sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
		    "malformed_archive", "not a tar archive: %s",
		    archive_error_string(ar) ? archive_error_string(ar) : "?");
	else
		rc = extract(ar, w, rootfd, a, pass, e);
	if (archive_write_close(w) != ARCHIVE_OK && rc == 0)
		rc = sbx_error_set(e, SBX_K_EXECUTION_ERROR, "source",
		    "write_failed", "cannot finish unpacking: %s",
		    archive_error_string(w));
	if (fchdir(cwd) == -1 && rc == 0)
		rc = sbx_error_sys(e, "chdir_failed", "cannot return to the "
		    "working directory");
	close(cwd);
	umask(um);
	/* Hash to the very end of what libarchive did not need. */
	if (rc == 0) {
		while (src_read(ar, s, &dummy) > 0)
			;
		crypto_hash_sha256_final(&s->st, h);
		hex_digest(h, got);
		if (strcmp(got, expect) != 0)
			rc = sbx_error_set(e, SBX_K_REJECTED, "source",
			    "integrity_check_failed", "the file changed while "
			    "it was unpacked (sha256 %s)", got);
	}
	archive_read_free(ar);
	archive_write_free(w);
	sodium_memzero(s, sizeof(*s));
	free(s);
	return rc;
}


/* ---- OCI image layout --------------------------------------------------- */

#define OCI_JSON_MAX	(4u << 20)
#define OCI_LAYERS_MAX	256

static json_t *
oci_json(int dfd, const char *rel, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*j = NULL;

	if (sbx_read_file_at(dfd, rel, OCI_JSON_MAX, &b, &e2) == -1 ||
	    (j = sbx_json_parse(b.p, b.len, OCI_JSON_MAX, &e2)) == NULL)
		sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
		    "malformed_archive", "OCI layout: %s: %s", rel, e2.message);
	sbx_buf_release(&b);
	return j;
}

/* "sha256:<hex>" -> hex, or NULL. */
static const char *
oci_hex(const json_t *desc)
{
	const char	*d = json_string_value(json_object_get(desc, "digest"));

	if (d == NULL || strncmp(d, "sha256:", 7) != 0 ||
	    !sbx_image_digest_valid(d + 7))
		return NULL;
	return d + 7;
}

/* Open blobs/sha256/<hex> beneath the layout (no symlink followed). */
static int
oci_blob(int dfd, const char *hex, struct stat *st, struct sbx_error *e)
{
	char	 rel[SBX_DIGEST_HEX + 16];
	int	 fd;

	snprintf(rel, sizeof(rel), "blobs/sha256/%s", hex);
	if ((fd = sbx_open_beneath(dfd, rel, O_RDONLY | O_NONBLOCK, e)) == -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		close(fd);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
		    "malformed_archive", "OCI layout: blob %.12s is not a "
		    "regular file", hex);
	}
	return fd;
}

static int
oci_check_blob(int fd, const char *hex, unsigned long long cap,
    struct sbx_error *e)
{
	char	 got[SBX_DIGEST_HEX + 1];

	if (hash_fd(fd, cap, got, NULL) == -1)
		return errno == EFBIG ? sbx_error_set(e, SBX_K_REJECTED,
		    "source", "too_large", "an OCI blob is larger than "
		    "allowed") : sbx_error_sys(e, "read_failed", "cannot read "
		    "an OCI blob");
	if (strcmp(got, hex) != 0)
		return sbx_error_set(e, SBX_K_REJECTED, "source",
		    "integrity_check_failed", "OCI blob %.12s has sha256 %s",
		    hex, got);
	return 0;
}

/*
 * The layers of the manifest named by a->sha256 in index.json, every
 * blob's digest checked before anything is unpacked.  Returns an array of
 * layer hex digests, in order.
 */
static json_t *
oci_layers(int dfd, struct sbx_image_add *a, struct sbx_error *e)
{
	struct stat		 st;
	json_t			*idx, *man = NULL, *out = NULL, *d, *ls;
	const char		*hex, *mt;
	unsigned long long	 total = 0;
	size_t			 i;
	int			 fd;

	if ((idx = oci_json(dfd, "index.json", e)) == NULL)
		return NULL;
	json_array_foreach(json_object_get(idx, "manifests"), i, d)
		if ((hex = oci_hex(d)) && strcmp(hex, a->sha256) == 0)
			break;
	if (i == json_array_size(json_object_get(idx, "manifests"))) {
		json_decref(idx);
		sbx_error_set(e, SBX_K_REJECTED, "sha256",
		    "integrity_check_failed", "index.json of the OCI layout "
		    "lists no manifest with the expected digest");
		return NULL;
	}
	json_decref(idx);
	{
		/* The manifest is parsed from the very bytes hashed. */
		struct sbx_buf b = SBX_BUF_INIT;
		struct sbx_error e2;
		unsigned char h[crypto_hash_sha256_BYTES];
		char rel[SBX_DIGEST_HEX + 16], got[SBX_DIGEST_HEX + 1];

		snprintf(rel, sizeof(rel), "blobs/sha256/%s", a->sha256);
		if (sbx_read_file_at(dfd, rel, OCI_JSON_MAX, &b, &e2) == -1) {
			sbx_buf_release(&b);
			sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
			    "malformed_archive", "OCI layout: manifest: %s",
			    e2.message);
			return NULL;
		}
		crypto_hash_sha256(h, (const unsigned char *)b.p, b.len);
		hex_digest(h, got);
		if (strcmp(got, a->sha256) != 0) {
			sbx_buf_release(&b);
			sbx_error_set(e, SBX_K_REJECTED, "sha256",
			    "integrity_check_failed", "the OCI manifest blob "
			    "has sha256 %s", got);
			return NULL;
		}
		man = sbx_json_parse(b.p, b.len, OCI_JSON_MAX, &e2);
		sbx_buf_release(&b);
		if (man == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
			    "malformed_archive", "OCI manifest: %s",
			    e2.message);
			return NULL;
		}
	}
	ls = json_object_get(man, "layers");
	if (!json_is_array(ls) || json_array_size(ls) == 0 ||
	    json_array_size(ls) > OCI_LAYERS_MAX) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
		    "malformed_archive", "OCI manifest: no layers, or more "
		    "than %d", OCI_LAYERS_MAX);
		goto fail;
	}
	out = json_array();
	json_array_foreach(ls, i, d) {
		mt = json_string_value(json_object_get(d, "mediaType"));
		if ((hex = oci_hex(d)) == NULL || mt == NULL ||
		    strstr(mt, "tar") == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
			    "malformed_archive", "OCI manifest: layer %zu has "
			    "no sha256 digest or is not a tar layer", i);
			goto fail;
		}
		if ((fd = oci_blob(dfd, hex, &st, e)) == -1)
			goto fail;
		total += (unsigned long long)st.st_size;
		if (total > a->max_bytes) {
			close(fd);
			sbx_error_set(e, SBX_K_REJECTED, "source", "too_large",
			    "the layers are more than images.max_bytes (%llu)",
			    a->max_bytes);
			goto fail;
		}
		if (oci_check_blob(fd, hex, a->max_bytes, e) == -1) {
			close(fd);
			goto fail;
		}
		close(fd);
		json_array_append_new(out, json_string(hex));
	}
	json_decref(man);
	return out;
fail:
	json_decref(man);
	json_decref(out);
	return NULL;
}

static int
oci_unpack(int dfd, json_t *layers, int rfd, struct sbx_image_add *a,
    struct sbx_error *e)
{
	struct stat	 st;
	json_t		*v;
	size_t		 i;
	int		 fd, rc = 0;

	json_array_foreach(layers, i, v) {
		if ((fd = oci_blob(dfd, json_string_value(v), &st, e)) == -1)
			return -1;
		/* Whiteouts first, so they hide only lower layers. */
		rc = unpack(fd, rfd, a, json_string_value(v), 1, e);
		if (rc == 0)
			rc = unpack(fd, rfd, a, json_string_value(v), 2, e);
		close(fd);
		if (rc == -1)
			return -1;
		a->layers++;
	}
	return 0;
}

/*
 * Remove what killed adds left: every images/.tmp-* directory whose lock
 * we can take (a running add holds its own for its whole life).
 */
static void
sweep_temps(int imagesfd)
{
	struct sbx_error e2;
	char		**names;
	size_t		 n, i;
	int		 fd;

	if ((names = sorted_names(imagesfd, &n)) == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (strncmp(names[i], ".tmp-", 5) == 0 &&
		    (fd = openat(imagesfd, names[i], O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) >= 0) {
			if (flock(fd, LOCK_EX | LOCK_NB) == 0)
				(void)sbx_provision_rm_tree(imagesfd, names[i],
				    &e2);
			close(fd);
		}
		free(names[i]);
	}
	free(names);
}

static int
set_name(int imagesfd, const char *name, const char *digest,
    struct sbx_error *e)
{
	json_t	*names;
	int	 rc;

	if ((names = sbx_image_names_load(imagesfd, e)) == NULL)
		return -1;
	json_object_set_new(names, name, json_string(digest));
	rc = names_save(imagesfd, names, e);
	json_decref(names);
	return rc;
}

int
sbx_image_add(int rootfd, struct sbx_image_add *a, struct sbx_error *e)
{
	struct stat		 st;
	char			 got[SBX_DIGEST_HEX + 1], tmp[32];
	unsigned char		 rnd[8];
	unsigned long long	 n;
	json_t			*m;
	char			*s;
	int			 fd = -1, imagesfd = -1, tmpfd = -1, rfd = -1;
	int			 lock = -1, rc = -1, made = 0;
	mode_t			 um = (mode_t)-1;
	json_t			*layers = NULL;

	/* Cheap refusals first: nothing is read before the digest and the
	 * name are well-formed. */
	if (!sbx_image_digest_valid(a->sha256))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "sha256",
		    "invalid_digest", "argument `sha256` must be 64 lowercase "
		    "hex digits");
	if (a->name != NULL && !sbx_image_name_valid(a->name))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name", "argument `name` must match "
		    "[a-z0-9][a-z0-9._-]{0,63} and not be a digest");
	/* O_NONBLOCK: a FIFO given as the source must not hang us before
	 * fstat() refuses it. */
	if ((fd = open(a->source, O_RDONLY | O_NOCTTY | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return sbx_error_set(e, SBX_K_NOT_FOUND, "source",
			    "not_found", "the source file does not exist");
		return sbx_error_sys(e, "open_failed", "cannot open the "
		    "source file");
	}
	if (fstat(fd, &st) == -1 || !(S_ISREG(st.st_mode) ||
	    S_ISDIR(st.st_mode))) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "source", "not_regular",
		    "the source must be a regular file (a rootfs tarball) or "
		    "an OCI layout directory");
		goto out;
	}
	/* An OCI image layout: --sha256 names the manifest; it and every
	 * layer are checked against their digests before unpacking. */
	if (S_ISDIR(st.st_mode)) {
		if ((layers = oci_layers(fd, a, e)) == NULL)
			goto out;
		goto checked;
	}
	if ((unsigned long long)st.st_size > a->max_bytes) {
		sbx_error_set(e, SBX_K_REJECTED, "source", "too_large",
		    "the source is %lld bytes, more than images.max_bytes "
		    "(%llu)", (long long)st.st_size, a->max_bytes);
		goto out;
	}
	/* The whole file, before a single entry is looked at. */
	if (hash_fd(fd, a->max_bytes, got, &n) == -1) {
		if (errno == EFBIG)
			sbx_error_set(e, SBX_K_REJECTED, "source", "too_large",
			    "the source grew beyond images.max_bytes (%llu)",
			    a->max_bytes);
		else
			sbx_error_sys(e, "read_failed", "cannot read the "
			    "source file");
		goto out;
	}
	if (strcmp(got, a->sha256) != 0) {
		sbx_error_set(e, SBX_K_REJECTED, "sha256",
		    "integrity_check_failed", "sha256 of the source is %s, "
		    "not the expected %s", got, a->sha256);
		sbx_error_hint(e, "check the source and the digest you were "
		    "given; nothing was unpacked");
		goto out;
	}
checked:
	if ((imagesfd = open_images(rootfd, 1, e)) == -1)
		goto out;
	if (complete(imagesfd, a->sha256)) {
		a->present = 1;
		goto named;
	}
	sweep_temps(imagesfd);
	randombytes_buf(rnd, sizeof(rnd));
	memcpy(tmp, ".tmp-", 5);
	sodium_bin2hex(tmp + 5, sizeof(tmp) - 5, rnd, sizeof(rnd));
	if (mkdirat(imagesfd, tmp, 0700) == -1) {
		sbx_error_sys(e, "mkdir_failed", "cannot create images/%s",
		    tmp);
		goto out;
	}
	made = 1;
	/* The template must be readable by whoever runs the sandboxes
	 * (as root, another uid): modes are set explicitly, whatever the
	 * caller's umask. */
	um = umask(022);
	if ((tmpfd = openat(imagesfd, tmp, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    flock(tmpfd, LOCK_EX | LOCK_NB) == -1 ||
	    mkdirat(tmpfd, "rootfs", 0755) == -1 ||
	    (rfd = openat(tmpfd, "rootfs", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 || fchmod(rfd, 0755) == -1) {
		sbx_error_sys(e, "mkdir_failed", "cannot create the template");
		goto out;
	}
	if ((layers != NULL ? oci_unpack(fd, layers, rfd, a, e) :
	    unpack(fd, rfd, a, a->sha256, 0, e)) == -1 ||
	    etc_placeholders(rfd, e) == -1)
		goto out;
	if ((m = sbx_image_manifest_build(rfd, 1, e)) == NULL)
		goto out;
	json_object_set_new(m, "digest", json_string(a->sha256));
	a->entries = json_array_size(json_object_get(m, "entries"));
	{
		json_t *it;
		size_t i;
		a->bytes = 0;
		json_array_foreach(json_object_get(m, "entries"), i, it)
			a->bytes += (unsigned long long)json_integer_value(
			    json_object_get(it, "size"));
	}
	s = json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(m);
	if (s == NULL) {
		sbx_error_sys(e, "nomem", "manifest");
		goto out;
	}
	/* Written last: its presence is what marks a template complete. */
	rc = sbx_write_atomic(tmpfd, SBX_IMAGE_MANIFEST, s, strlen(s), 0444, e);
	if (rc == 0)
		rc = fchmodat(tmpfd, SBX_IMAGE_MANIFEST, 0444, 0) == -1 ?
		    sbx_error_sys(e, "chmod_failed", "manifest") : 0;
	free(s);
	if (rc == -1)
		goto out;
	rc = -1;
	(void)fchmod(tmpfd, 0555);
	if ((lock = sbx_provision_lock(rootfd, e)) == -1)
		goto out;
	/* An incomplete leftover (no manifest: an add killed before the
	 * rename cannot leave one, but a damaged template can) is
	 * replaced. */
	if (!complete(imagesfd, a->sha256) &&
	    sbx_provision_rm_tree(imagesfd, a->sha256, e) == -1)
		goto out;
	if (renameat(imagesfd, tmp, imagesfd, a->sha256) == -1) {
		if ((errno != EEXIST && errno != ENOTEMPTY) ||
		    !complete(imagesfd, a->sha256)) {
			sbx_error_sys(e, "rename_failed", "cannot move the "
			    "template into place");
			goto out;
		}
		/* Someone added the same image meanwhile: theirs stays. */
		a->present = 1;
	} else
		made = 0;
	fsync(imagesfd);
named:
	if (a->name != NULL) {
		if (lock == -1 && (lock = sbx_provision_lock(rootfd, e)) == -1)
			goto out;
		if (set_name(imagesfd, a->name, a->sha256, e) == -1)
			goto out;
	}
	if (a->present && a->entries == 0) {
		struct sbx_error e2;
		char rel[SBX_DIGEST_HEX + 32];
		struct sbx_buf b = SBX_BUF_INIT;
		snprintf(rel, sizeof(rel), "%s/%s", a->sha256,
		    SBX_IMAGE_MANIFEST);
		if (sbx_read_file_at(imagesfd, rel, MANIFEST_MAX, &b, &e2) == 0
		    && (m = sbx_json_parse(b.p, b.len, MANIFEST_MAX, &e2))) {
			a->entries = json_array_size(json_object_get(m,
			    "entries"));
			json_decref(m);
		}
		sbx_buf_release(&b);
	}
	rc = 0;
out:
	if (um != (mode_t)-1)
		umask(um);
	if (rfd != -1)
		close(rfd);
	if (tmpfd != -1)
		close(tmpfd);
	if (made) {
		struct sbx_error e2;
		(void)sbx_provision_rm_tree(imagesfd, tmp, &e2);
	}
	if (lock != -1)
		close(lock);
	if (imagesfd != -1)
		close(imagesfd);
	json_decref(layers);
	close(fd);
	return rc;
}

/* ---- resolve, list, rm, verify ------------------------------------------ */

int
sbx_image_resolve(int rootfd, const char *ref, int need_complete,
    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *e)
{
	json_t		*names;
	const char	*d = NULL;
	int		 imagesfd;

	if (!sbx_image_digest_valid(ref) && !sbx_image_name_valid(ref))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "image",
		    "invalid_name", "argument `image` must be an image name or "
		    "a sha256 digest");
	if ((imagesfd = open_images(rootfd, 0, e)) == -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			goto missing;
		return -1;
	}
	if (sbx_image_digest_valid(ref))
		d = ref;
	else {
		if ((names = sbx_image_names_load(imagesfd, e)) == NULL) {
			close(imagesfd);
			return -1;
		}
		if ((d = json_string_value(json_object_get(names, ref))))
			memcpy(digest, d, SBX_DIGEST_HEX + 1);
		json_decref(names);
		d = d ? digest : NULL;
	}
	if (d != NULL && (!need_complete || complete(imagesfd, d))) {
		if (d != digest)
			memcpy(digest, d, SBX_DIGEST_HEX + 1);
		close(imagesfd);
		return 0;
	}
	close(imagesfd);
missing:
	sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
	    "no image %s in the state root", sbx_image_digest_valid(ref) ?
	    "with that digest" : "of that name");
	sbx_error_hint(e, "add it with `sbx provision image add SOURCE "
	    "--sha256 HEX --name NAME`");
	return -1;
}

json_t *
sbx_image_list(int rootfd, struct sbx_error *e)
{
	json_t		*out = json_array(), *names, *nl, *v;
	char		**dn;
	const char	*k;
	size_t		 n, i;
	int		 imagesfd;

	if (rootfd < 0)
		return out;
	if ((imagesfd = open_images(rootfd, 0, e)) == -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			return out;
		json_decref(out);
		return NULL;
	}
	if ((names = sbx_image_names_load(imagesfd, e)) == NULL ||
	    (dn = sorted_names(imagesfd, &n)) == NULL) {
		json_decref(names);
		json_decref(out);
		close(imagesfd);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (sbx_image_digest_valid(dn[i])) {
			nl = json_array();
			json_object_foreach(names, k, v)
				if (strcmp(json_string_value(v), dn[i]) == 0)
					json_array_append_new(nl,
					    json_string(k));
			json_array_append_new(out, json_pack("{s:s,s:o,s:b}",
			    "digest", dn[i], "names", nl, "complete",
			    complete(imagesfd, dn[i])));
		}
		free(dn[i]);
	}
	free(dn);
	json_decref(names);
	close(imagesfd);
	return out;
}

int
sbx_image_rm(int rootfd, const char *ref, json_t *removed,
    struct sbx_error *e)
{
	struct stat	 st;
	json_t		*names, *v;
	const char	*k;
	void		*tmp;
	char		 digest[SBX_DIGEST_HEX + 1], rel[SBX_DIGEST_HEX + 16];
	int		 imagesfd, lock, rc = -1, changed = 0;

	if (!sbx_image_digest_valid(ref) && !sbx_image_name_valid(ref))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "image",
		    "invalid_name", "argument `image` must be an image name or "
		    "a sha256 digest");
	if ((imagesfd = open_images(rootfd, 0, e)) == -1)
		return -1;
	if ((lock = sbx_provision_lock(rootfd, e)) == -1) {
		close(imagesfd);
		return -1;
	}
	if ((names = sbx_image_names_load(imagesfd, e)) == NULL)
		goto out;
	if (sbx_image_digest_valid(ref))
		memcpy(digest, ref, sizeof(digest));
	else if ((k = json_string_value(json_object_get(names, ref))))
		memcpy(digest, k, sizeof(digest));
	else {
		sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "no image of that name");
		goto out;
	}
	if (fstatat(imagesfd, digest, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (sbx_provision_rm_tree(imagesfd, digest, e) == -1)
			goto out;
		snprintf(rel, sizeof(rel), "images/%s", digest);
		json_array_append_new(removed, json_string(rel));
	}
	json_object_foreach_safe(names, tmp, k, v)
		if (strcmp(json_string_value(v), digest) == 0) {
			json_object_del(names, k);
			changed = 1;
		}
	if (changed && names_save(imagesfd, names, e) == -1)
		goto out;
	if (json_array_size(removed) == 0 && !changed) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "no image with that digest");
		goto out;
	}
	rc = 0;
out:
	json_decref(names);
	close(lock);
	close(imagesfd);
	return rc;
}

int
sbx_image_verify(int rootfd, const char *digest, json_t *diffs,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*want = NULL, *got = NULL;
	char		 rel[SBX_DIGEST_HEX + 32];
	int		 imagesfd, rfd = -1, rc = -1;

	if ((imagesfd = open_images(rootfd, 0, e)) == -1)
		return -1;
	snprintf(rel, sizeof(rel), "%s/%s", digest, SBX_IMAGE_MANIFEST);
	if (sbx_read_file_at(imagesfd, rel, MANIFEST_MAX, &b, &e2) == -1 ||
	    (want = sbx_json_parse(b.p, b.len, MANIFEST_MAX, &e2)) == NULL) {
		diff_add(diffs, SBX_IMAGE_MANIFEST, "manifest", NULL, NULL);
		rc = 0;
		goto out;
	}
	snprintf(rel, sizeof(rel), "%s/rootfs", digest);
	if ((rfd = sbx_open_beneath(imagesfd, rel, O_RDONLY | O_DIRECTORY,
	    &e2)) == -1) {
		diff_add(diffs, ".", "missing", NULL, NULL);
		rc = 0;
		goto out;
	}
	if ((got = sbx_image_manifest_build(rfd, 0, e)) == NULL)
		goto out;
	rc = sbx_image_manifest_diff(want, got, diffs);
out:
	sbx_buf_release(&b);
	json_decref(want);
	json_decref(got);
	if (rfd != -1)
		close(rfd);
	close(imagesfd);
	return rc;
}
