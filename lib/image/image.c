/*
 * image.c: adding a root filesystem template (images/<sha256>/rootfs) from
 * a rootfs tarball or an OCI image layout, with libarchive.  The names of
 * templates are imagestore.c's, their manifests manifest.c's,
 * the agents' own copies rootfs.c's.
 *
 * A template is built from a rootfs tarball whose sha256 the caller
 * names: the digest is checked over the whole file before anything is
 * unpacked, and again over the very bytes libarchive reads (the file
 * could change between the two).  Both passes stream through one small
 * buffer: reading the file into memory once instead costs more in page
 * faults than the second pass costs (measured).  Unpacking happens in
 * images/.tmp-X, with every entry judged first: an absolute path, a
 * `..`, a control character, a hard link leaving the tree or reached
 * through a symlink refuses the whole image; device nodes, FIFOs and
 * sockets are dropped; setuid, setgid and sticky bits, owners, ACLs,
 * xattrs (and so file capabilities) are never restored.  The template is
 * then made read-only, described in manifest.json (the sha256 of each
 * file taken from the data as it was unpacked) and renamed into place
 * atomically.
 *
 * SHA-256 comes from nettle, which libarchive loads anyway: it uses the
 * CPU's SHA extensions where there are some (about five times libsodium's
 * portable code on the reference machine).
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
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <archive.h>
#include <archive_entry.h>
#include <jansson.h>
#include <nettle/sha2.h>
#include <sodium.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "imagestore.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "provision.h"
#include "settings.h"
#include "time.h"

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
sha_mem(const void *p, size_t n, char out[SBX_DIGEST_HEX + 1])
{
	struct sha256_ctx	 c;

	sha256_init(&c);
	sha256_update(&c, n, p);
	sbx_manifest_sha_hex(&c, out);
}

/* A source whose digest was checked, and which unpack() hashes again. */
struct blob {
	int		 fd;
	const char	*hex;		/* the expected digest */
};

/*
 * Check fd (from offset 0) against hex: 0 when it matches, 1 when it does
 * not (got filled), -1 with errno otherwise (EFBIG: over cap).
 */
static int
blob_check(int fd, const char *hex, unsigned long long cap, struct blob *b,
    char got[SBX_DIGEST_HEX + 1])
{
	struct stat	 sb;

	b->fd = fd;
	b->hex = hex;
	if (fstat(fd, &sb) == -1 || lseek(fd, 0, SEEK_SET) == -1)
		return -1;
	if ((unsigned long long)sb.st_size > cap) {
		errno = EFBIG;
		return -1;
	}
	if (sbx_manifest_hash_fd(fd, cap, got, NULL) == -1)
		return -1;
	return strcmp(got, hex) != 0;
}

/* ---- add ---------------------------------------------------------------- */

/* A new file dirfd/name holding data, created exclusively (no symlink
 * followed), mode set exactly; shown is its path from the state root, for
 * messages. */
static int
write_new(int dirfd, const char *name, const char *shown, const void *data,
    size_t n, mode_t mode, struct sbx_error *e)
{
	int	 fd;

	if ((fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1)
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    shown);
	if (sbx_fs_write_all(fd, data, n) == -1 || fchmod(fd, mode) == -1) {
		sbx_error_sys(e, "write_failed", "cannot write %s", shown);
		close(fd);
		(void)unlinkat(dirfd, name, 0);
		return -1;
	}
	if (close(fd) == -1) {
		(void)unlinkat(dirfd, name, 0);
		return sbx_error_sys(e, "write_failed", "cannot write %s",
		    shown);
	}
	return 0;
}

int
sbx_image_limits(int rootfd, struct sbx_image_add *a, struct sbx_error *e)
{
	json_t			*cfg = NULL, *im, *v;
	static const char *const keys[] = { "max_bytes",
	    "max_unpacked_bytes", "download_timeout" };
	unsigned long long	*dst[3], timeout = SBX_IMAGE_DOWNLOAD_TIMEOUT;
	size_t			 i;

	a->max_bytes = SBX_IMAGE_MAX_BYTES;
	a->max_unpacked = SBX_IMAGE_MAX_UNPACKED;
	a->max_entries = SBX_IMAGE_MAX_ENTRIES;
	a->download_timeout = SBX_IMAGE_DOWNLOAD_TIMEOUT;
	dst[0] = &a->max_bytes;
	dst[1] = &a->max_unpacked;
	dst[2] = &timeout;
	if (rootfd >= 0 && sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	if (cfg == NULL || (im = json_object_get(cfg, "images")) == NULL) {
		json_decref(cfg);
		return 0;
	}
	for (i = 0; i < 3; i++) {
		if ((v = json_object_get(im, keys[i])) == NULL)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) <= 0 ||
		    (i == 2 && json_integer_value(v) > 7 * 86400)) {
			json_decref(cfg);
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "config/sandbox.json: images.%s "
			    "must be a positive integer%s", keys[i], i == 2 ?
			    " (seconds, at most 604800)" : "");
		}
		*dst[i] = (unsigned long long)json_integer_value(v);
	}
	a->download_timeout = (long)timeout;
	json_decref(cfg);
	return 0;
}

/*
 * libarchive reads through this: the bytes unpacked are the bytes hashed.
 * The hashing runs on a second thread, on a ring of buffers, alongside
 * the unpacking (which has the manifest's hashing of its own to do); a
 * slot is refilled only once libarchive is done with it (it asks for the
 * next block) and the hasher too.  Without the thread, inline.
 */
struct src {
	const struct blob	*b;
	struct sha256_ctx	 st;
	unsigned long long	 n, cap;
	int			 threaded;
	pthread_t		 th;
	pthread_mutex_t		 mu;
	pthread_cond_t		 cv;
	int			 head, tail, count, done;
	int			 hwait, rwait;	/* who sleeps on cv */
	size_t			 len[SBX_IMAGE_IOBUF_RING];
	unsigned char
	    *buf[SBX_IMAGE_IOBUF_RING]; /* slots of sbx_manifest_iobuf() */
};

static void *
src_hasher(void *arg)
{
	struct src	*s = arg;
	int		 i, k, slot;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		while (s->count == 0 && !s->done) {
			s->hwait = 1;
			pthread_cond_wait(&s->cv, &s->mu);
			s->hwait = 0;
		}
		if (s->count == 0)
			break;
		/* All that is there, in one go: fewer wake-ups. */
		k = s->count;
		slot = s->tail;
		pthread_mutex_unlock(&s->mu);
		for (i = 0; i < k; i++)
			sha256_update(&s->st,
			    s->len[(slot + i) % SBX_IMAGE_IOBUF_RING],
			    s->buf[(slot + i) % SBX_IMAGE_IOBUF_RING]);
		pthread_mutex_lock(&s->mu);
		s->tail = (s->tail + k) % SBX_IMAGE_IOBUF_RING;
		s->count -= k;
		if (s->rwait)
			pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static la_ssize_t
src_read(struct archive *ar, void *cd, const void **out)
{
	struct src	*s = cd;
	ssize_t		 r;
	int		 slot;

	if (s->threaded) {
		pthread_mutex_lock(&s->mu);
		while (s->count == SBX_IMAGE_IOBUF_RING) {
			s->rwait = 1;
			pthread_cond_wait(&s->cv, &s->mu);
			s->rwait = 0;
		}
		pthread_mutex_unlock(&s->mu);
	}
	slot = s->head;
	do
		r = read(s->b->fd, s->buf[slot], SBX_IMAGE_READ_BUF);
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
	if (r > 0 && s->threaded) {
		pthread_mutex_lock(&s->mu);
		s->len[slot] = (size_t)r;
		s->head = (s->head + 1) % SBX_IMAGE_IOBUF_RING;
		s->count++;
		/* Woken for half a ring at a time (src_finish wakes it for
		 * the rest). */
		if (s->hwait && s->count >= SBX_IMAGE_IOBUF_RING / 2)
			pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
	} else if (r > 0) {
		sha256_update(&s->st, (size_t)r, s->buf[slot]);
		s->head = (s->head + 1) % SBX_IMAGE_IOBUF_RING;
	}
	*out = s->buf[slot];
	return r;
}

/* Wait for the hasher to finish what it was given. */
static void
src_finish(struct src *s)
{
	if (!s->threaded)
		return;
	pthread_mutex_lock(&s->mu);
	s->done = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->th, NULL);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->cv);
	s->threaded = 0;
}

/* Did libarchive's write fail for want of a resource (a full disk, a
 * quota, an I/O error), not because it refused the entry? */
static int
resource_errno(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EIO || err == EROFS ||
	    err == EFBIG || err == ENOMEM || err == EMFILE || err == ENFILE;
}

/* A write of the template failed: name the file (under the state root)
 * and the errno, never libarchive's bare "Write failed". */
static int
io_failed(struct sbx_error *e, const struct sbx_image_add *a,
    const char *path, int err, const char *what)
{
	char	 p[128];

	printable(path, p, sizeof(p));
	if (err <= 0)
		err = EIO;
	sbx_error_set(e, SBX_K_EXECUTION_ERROR, "source", "write_failed",
	    "cannot %s %s%s%s: %s", what, a->where, a->where[0] ? "/" : "",
	    p, strerror(err));
	e->sys_errno = err;
	if (err == ENOSPC || err == EDQUOT)
		sbx_error_hint(e, "the file system of the state root is full "
		    "(or the user's quota is used up): free space there and "
		    "add the image again; nothing of it was kept");
	return -1;
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
		if ((dfd = sbx_fs_open_beneath(rootfd, dir,
			 O_PATH | O_DIRECTORY, &e2)) == -1)
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
		dfd = sbx_fs_open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY,
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
		if ((names = sbx_fs_sorted_names(dfd, &n)) == NULL) {
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
	struct sha256_ctx	 fc;
	char			 norm[PATH_MAX], lnorm[PATH_MAX];
	char			 hex[SBX_DIGEST_HEX + 1];
	const char		*path, *hl;
	const void		*blk;
	json_t			*rec;
	size_t			 len;
	la_int64_t		 off, sz;
	unsigned long long	 fh;
	mode_t			 type, perm;
	int			 r, inorder;

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
		if (archive_write_header(w, ent) < ARCHIVE_WARN) {
			if (resource_errno(archive_errno(w)))
				return io_failed(e, a, norm, archive_errno(w),
				    "create");
			return unsafe(e, path, archive_error_string(w) ?
			    archive_error_string(w) : "cannot be written");
		}
		sha256_init(&fc);
		fh = 0;
		inorder = 1;
		if (type == AE_IFREG && archive_entry_size(ent) > 0) {
			while ((r = archive_read_data_block(ar, &blk, &len,
			    &off)) == ARCHIVE_OK) {
				if ((a->written += len) > a->max_unpacked)
					return sbx_error_set(e, SBX_K_REJECTED,
					    "source", "too_large", "the archive "
					    "unpacks to more than %llu bytes",
					    a->max_unpacked);
				/* The manifest's sha256, from the data as it
				 * goes by; a sparse file's holes (a jump in
				 * the offsets) leave it to the walk. */
				if (inorder && off >= 0 &&
				    (unsigned long long)off == fh) {
					sha256_update(&fc, len, blk);
					fh += len;
				} else
					inorder = 0;
				if (archive_write_data_block(w, blk, len, off)
				    < ARCHIVE_OK)
					return io_failed(e, a, norm,
					    archive_errno(w), "write");
			}
			if (r != ARCHIVE_EOF)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "source", "malformed_archive", "the archive "
				    "is malformed or truncated: %s",
				    archive_error_string(ar) ?
				    archive_error_string(ar) : "read error");
		}
		if (archive_write_finish_entry(w) < ARCHIVE_WARN) {
			if (resource_errno(archive_errno(w)))
				return io_failed(e, a, norm, archive_errno(w),
				    "write");
			return unsafe(e, path, archive_error_string(w) ?
			    archive_error_string(w) : "cannot be written");
		}
		/*
		 * What the manifest may take from here.  Every regular file
		 * libarchive creates goes through this loop and replaces the
		 * record of its path (libarchive unlinks what is in the way
		 * and creates a new file).  A hard link names the inode of
		 * its target, whose record it shares; one that carries data
		 * rewrites that inode in place, under names we cannot list
		 * here, so every record is dropped and the walk reads all.
		 * The walk also checks the size.
		 */
		if (a->sums == NULL)
			continue;
		if (hl != NULL) {
			if (archive_entry_size(ent) > 0)
				json_object_clear(a->sums);
			else if ((rec = json_object_get(a->sums, lnorm)))
				json_object_set(a->sums, norm, rec);
			else
				json_object_del(a->sums, norm);
		} else if (type == AE_IFREG && inorder &&
		    fh == (unsigned long long)archive_entry_size(ent)) {
			sbx_manifest_sha_hex(&fc, hex);
			json_object_set_new(a->sums, norm, json_pack("[I,s]",
			    (json_int_t)fh, hex));
		} else
			json_object_del(a->sums, norm);
	}
}

/* sbx binds its own passwd, group, hosts (and, with host networking,
 * resolv.conf) over these: they must exist as regular files in the
 * read-only template, since bwrap cannot create mount points there. */
static int
etc_placeholders(int rootfd, json_t *sums, struct sbx_error *e)
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
		if (sums != NULL) {
			char rel[32];
			snprintf(rel, sizeof(rel), "etc/%s", files[i]);
			json_object_del(sums, rel);
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
unpack(const struct blob *b, int rootfd, struct sbx_image_add *a, int pass,
    struct sbx_error *e)
{
	struct archive	*ar, *w;
	struct src	*s;
	char		 got[SBX_DIGEST_HEX + 1];
	const void	*dummy;
	int		 cwd, rc;
	mode_t		 um;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    sbx_manifest_iobuf() == NULL) {
		free(s);
		return sbx_error_sys(e, "nomem", "unpack");
	}
	for (cwd = 0; cwd < SBX_IMAGE_IOBUF_RING; cwd++)
		s->buf[cwd] =
		    sbx_manifest_iobuf() + (size_t)cwd * SBX_IMAGE_READ_BUF;
	s->b = b;
	s->cap = a->max_bytes;
	sha256_init(&s->st);
	if (lseek(b->fd, 0, SEEK_SET) == -1) {
		free(s);
		return sbx_error_sys(e, "read_failed", "cannot rewind");
	}
	if (pthread_mutex_init(&s->mu, NULL) == 0) {
		if (pthread_cond_init(&s->cv, NULL) == 0) {
			if (pthread_create(&s->th, NULL, src_hasher, s) == 0)
				s->threaded = 1;
			else
				pthread_cond_destroy(&s->cv);
		}
		if (!s->threaded)
			pthread_mutex_destroy(&s->mu);
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
	if (archive_write_close(w) != ARCHIVE_OK && rc == 0) {
		rc = sbx_error_set(e, SBX_K_EXECUTION_ERROR, "source",
		    "write_failed", "cannot finish unpacking into %s: %s%s%s",
		    a->where[0] ? a->where : "the template",
		    archive_error_string(w) ? archive_error_string(w) : "?",
		    archive_errno(w) > 0 ? ": " : "",
		    archive_errno(w) > 0 ? strerror(archive_errno(w)) : "");
		e->sys_errno = archive_errno(w) > 0 ? archive_errno(w) : 0;
	}
	if (fchdir(cwd) == -1 && rc == 0)
		rc = sbx_error_sys(e, "chdir_failed", "cannot return to the "
		    "working directory");
	close(cwd);
	umask(um);
	/* Hash to the very end of what libarchive did not need, and compare
	 * with the digest checked before. */
	if (rc == 0)
		while (src_read(ar, s, &dummy) > 0)
			;
	src_finish(s);
	if (rc == 0) {
		sbx_manifest_sha_hex(&s->st, got);
		if (strcmp(got, b->hex) != 0)
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

	if (sbx_fs_read_file_at(dfd, rel, OCI_JSON_MAX, &b, &e2) == -1 ||
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
	    !sbx_names_digest_valid(d + 7))
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
	if ((fd = sbx_fs_open_beneath(dfd, rel, O_RDONLY | O_NONBLOCK, e)) ==
	    -1)
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

	if (sbx_manifest_hash_fd(fd, cap, got, NULL) == -1)
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
		char rel[SBX_DIGEST_HEX + 16], got[SBX_DIGEST_HEX + 1];

		snprintf(rel, sizeof(rel), "blobs/sha256/%s", a->sha256);
		if (sbx_fs_read_file_at(dfd, rel, OCI_JSON_MAX, &b, &e2) ==
		    -1) {
			sbx_buf_release(&b);
			sbx_error_set(e, SBX_K_INVALID_ARGS, "source",
			    "malformed_archive", "OCI layout: manifest: %s",
			    e2.message);
			return NULL;
		}
		sha_mem(b.p, b.len, got);
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

	struct blob	 b;
	const char	*hex;

	json_array_foreach(layers, i, v) {
		hex = json_string_value(v);
		if ((fd = oci_blob(dfd, hex, &st, e)) == -1)
			return -1;
		/* Every layer was checked before the first was unpacked;
		 * each pass hashes it again as it reads. */
		b.fd = fd;
		b.hex = hex;
		/* Whiteouts first, so they hide only lower layers. */
		rc = unpack(&b, rfd, a, 1, e);
		if (rc == 0)
			rc = unpack(&b, rfd, a, 2, e);
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

	if ((names = sbx_fs_sorted_names(imagesfd, &n)) == NULL)
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

	if ((names = sbx_imagestore_names_load(imagesfd, e)) == NULL)
		return -1;
	json_object_set_new(names, name, json_string(digest));
	rc = sbx_imagestore_names_save(imagesfd, names, e);
	json_decref(names);
	return rc;
}

int
sbx_image_add(int rootfd, struct sbx_image_add *a, struct sbx_error *e)
{
	struct stat		 st;
	struct blob		 b = { -1, NULL };
	char			 got[SBX_DIGEST_HEX + 1], tmp[32], shown[96];
	unsigned char		 rnd[8];
	json_t			*m;
	char			*s;
	int			 fd = -1, imagesfd = -1, tmpfd = -1, rfd = -1;
	int			 lock = -1, rc = -1, made = 0, r;
	mode_t			 um = (mode_t)-1;
	json_t			*layers = NULL;

	/* Cheap refusals first: nothing is read before the digest and the
	 * name are well-formed. */
	if (!sbx_names_digest_valid(a->sha256))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "sha256",
		    "invalid_digest", "argument `sha256` must be 64 lowercase "
		    "hex digits");
	if (a->name != NULL && !sbx_names_image_valid(a->name))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name", "argument `name` must match "
		    "[a-z0-9][a-z0-9._-]{0,63} and not be a digest");
	/* The digest names the content: a complete template of it needs
	 * no source (a URL need not be fetched again). */
	if (a->present_only) {
		if ((imagesfd = sbx_imagestore_open(rootfd, 1, e)) == -1)
			goto out;
		if (!sbx_imagestore_complete(imagesfd, a->sha256)) {
			rc = 0;
			goto out;
		}
		a->present = 1;
		goto named;
	}
	/* A download hands over its temporary file, already open. */
	if (a->use_fd) {
		if ((fd = fcntl(a->fd, F_DUPFD_CLOEXEC, 3)) == -1)
			return sbx_error_sys(e, "dup", "dup");
	/* O_NONBLOCK: a FIFO given as the source must not hang us before
	 * fstat() refuses it. */
	} else if ((fd = open(a->source, O_RDONLY | O_NOCTTY | O_NONBLOCK |
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
	if ((r = blob_check(fd, a->sha256, a->max_bytes, &b, got)) == -1) {
		if (errno == EFBIG)
			sbx_error_set(e, SBX_K_REJECTED, "source", "too_large",
			    "the source grew beyond images.max_bytes (%llu)",
			    a->max_bytes);
		else
			sbx_error_sys(e, "read_failed", "cannot read the "
			    "source file");
		goto out;
	}
	if (r == 1) {
		sbx_error_set(e, SBX_K_REJECTED, "sha256",
		    "integrity_check_failed", "sha256 of the source is %s, "
		    "not the expected %s", got, a->sha256);
		sbx_error_hint(e, "check the source and the digest you were "
		    "given; nothing was unpacked");
		goto out;
	}
checked:
	if ((imagesfd = sbx_imagestore_open(rootfd, 1, e)) == -1)
		goto out;
	if (sbx_imagestore_complete(imagesfd, a->sha256)) {
		a->present = 1;
		goto named;
	}
	sweep_temps(imagesfd);
	randombytes_buf(rnd, sizeof(rnd));
	memcpy(tmp, ".tmp-", 5);
	sodium_bin2hex(tmp + 5, sizeof(tmp) - 5, rnd, sizeof(rnd));
	snprintf(a->where, sizeof(a->where), "images/%s/rootfs", tmp);
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
	if ((a->sums = json_object()) == NULL) {
		sbx_error_sys(e, "nomem", "manifest");
		goto out;
	}
	if ((layers != NULL ? oci_unpack(fd, layers, rfd, a, e) :
	    unpack(&b, rfd, a, 0, e)) == -1 ||
	    etc_placeholders(rfd, a->sums, e) == -1)
		goto out;
	if ((m = sbx_manifest_build_sums(rfd, 1, a->sums, e)) == NULL)
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
	/*
	 * Written last: its presence is what marks a template complete.  In
	 * the private temporary directory, so no temp-and-rename of its own
	 * (the directory's rename is the atomic step) and no fsync: the
	 * template's files are not synced either (a syncfs would cost as much
	 * as the whole unpacking); after a power loss `image verify` tells.
	 */
	snprintf(shown, sizeof(shown), "images/%s/%s", tmp,
	    SBX_IMAGE_MANIFEST);
	rc = write_new(tmpfd, SBX_IMAGE_MANIFEST, shown, s, strlen(s), 0444,
	    e);
	free(s);
	if (rc == -1) {
		if (e->sys_errno == ENOSPC || e->sys_errno == EDQUOT)
			sbx_error_hint(e, "the file system of the state root "
			    "is full: free space there and add the image "
			    "again; nothing of it was kept");
		goto out;
	}
	rc = -1;
	(void)fchmod(tmpfd, 0555);
	if ((lock = sbx_provision_lock(rootfd, e)) == -1)
		goto out;
	/* An incomplete leftover (no manifest: an add killed before the
	 * rename cannot leave one, but a damaged template can) is
	 * replaced. */
	if (!sbx_imagestore_complete(imagesfd, a->sha256) &&
	    sbx_provision_rm_tree(imagesfd, a->sha256, e) == -1)
		goto out;
	if (renameat(imagesfd, tmp, imagesfd, a->sha256) == -1) {
		if ((errno != EEXIST && errno != ENOTEMPTY) ||
		    !sbx_imagestore_complete(imagesfd, a->sha256)) {
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
		struct sbx_buf mb = SBX_BUF_INIT;
		snprintf(rel, sizeof(rel), "%s/%s", a->sha256,
		    SBX_IMAGE_MANIFEST);
		if (sbx_fs_read_file_at(imagesfd, rel, SBX_IMAGE_MANIFEST_MAX,
			&mb, &e2) == 0 &&
		    (m = sbx_json_parse(mb.p, mb.len, SBX_IMAGE_MANIFEST_MAX,
			 &e2))) {
			a->entries = json_array_size(json_object_get(m,
			    "entries"));
			json_decref(m);
		}
		sbx_buf_release(&mb);
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
	json_decref(a->sums);
	a->sums = NULL;
	if (fd != -1)
		close(fd);
	return rc;
}
