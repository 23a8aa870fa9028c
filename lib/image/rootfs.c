/*
 * rootfs.c: an agent's own writable copy of a template (envs/<agent>/rootfs,
 * `sbx provision --own-rootfs`), cloned file by file (reflinks where the
 * file system can), at most max_envs of them, the least recently used
 * evicted first.
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
#include <sodium.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "imageref.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "provision.h"
#include "rootfs.h"
#include "settings.h"
#include "time.h"

#define ENVS_DIR	"envs"

int
sbx_rootfs_limits(int rootfd, unsigned *max_envs, struct sbx_error *e)
{
	json_t	*cfg = NULL, *v;

	*max_envs = SBX_ROOTFS_MAX;
	if (rootfd >= 0 && sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	if (cfg == NULL || (v = json_object_get(cfg, "max_envs")) == NULL) {
		json_decref(cfg);
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 1 ||
	    json_integer_value(v) > 100000) {
		json_decref(cfg);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "config/sandbox.json: max_envs must be "
		    "a positive integer");
	}
	*max_envs = (unsigned)json_integer_value(v);
	json_decref(cfg);
	return 0;
}

struct clone {
	int			 reflink;	/* still trying FICLONE */
	unsigned long long	 files, bytes;
	unsigned char		*buf;		/* read/write fallback */
};

/* read(2)/write(2), when even copy_file_range(2) is not to be had. */
static int
copy_rw(int sf, int df, struct clone *c)
{
	ssize_t	 r;

	if (c->buf == NULL && (c->buf = sbx_manifest_iobuf()) == NULL)
		return -1;
	for (;;) {
		r = read(sf, c->buf, SBX_IMAGE_READ_BUF);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return (int)r;
		if (sbx_fs_write_all(df, c->buf, (size_t)r) == -1)
			return -1;
	}
}

/* The data of sf into the empty df: a reflink clone where the file system
 * shares extents (instant, no space used until either is written), else
 * a copy inside the kernel. */
static int
copy_data(int sf, int df, const struct stat *st, struct clone *c)
{
	ssize_t	 r;

	if (st->st_size == 0)
		return 0;
	if (c->reflink) {
		if (ioctl(df, FICLONE, sf) == 0)
			return 0;
		/* Not this file system (or not across these two): copy
		 * from now on.  Anything else is a real error. */
		if (errno != EOPNOTSUPP && errno != EXDEV && errno != EINVAL &&
		    errno != ENOTTY && errno != ENOSYS && errno != EPERM)
			return -1;
		c->reflink = 0;
	}
	for (;;) {
		r = copy_file_range(sf, NULL, df, NULL, 1 << 30, 0);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 && (errno == EXDEV || errno == ENOSYS ||
		    errno == EINVAL || errno == EOPNOTSUPP))
			return copy_rw(sf, df, c);
		if (r <= 0)
			return (int)r;
	}
}

static int
clone_file(int sfd, int dfd, const char *name, const struct stat *st,
    struct clone *c, struct sbx_error *e)
{
	struct timespec	 ts[2] = { st->st_atim, st->st_mtim };
	int		 sf, df, rc = 0;

	/* O_NOFOLLOW on both sides, O_EXCL on ours: nothing planted is
	 * read or written through. */
	if ((sf = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC)) == -1)
		return sbx_error_sys(e, "read_failed", "cannot open a file of "
		    "the template");
	if ((df = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1) {
		close(sf);
		return sbx_error_sys(e, "create_failed", "cannot create a file "
		    "of the environment");
	}
	if (copy_data(sf, df, st, c) == -1)
		rc = sbx_error_sys(e, "copy_failed", "cannot copy a file of "
		    "the template");
	/* The template lost its write bits when it was sealed: the owner
	 * gets them back in its own copy.  No setuid/setgid ever. */
	else if (fchmod(df, (st->st_mode & 0777) | 0200) == -1 ||
	    futimens(df, ts) == -1)
		rc = sbx_error_sys(e, "chmod_failed", "cannot set the mode of "
		    "a file of the environment");
	close(sf);
	if (close(df) == -1 && rc == 0)
		rc = sbx_error_sys(e, "write_failed", "cannot write a file of "
		    "the environment");
	if (rc == 0) {
		c->files++;
		c->bytes += (unsigned long long)st->st_size;
	}
	return rc;
}

static int
clone_dir(int sfd, int dfd, struct clone *c, int depth, struct sbx_error *e)
{
	struct stat	 st;
	struct timespec	 ts[2];
	char		 target[PATH_MAX];
	char		**names;
	size_t		 n, i;
	ssize_t		 tl;
	int		 s2, d2, rc = 0;

	if (depth > SBX_IMAGE_WALK_DEPTH)
		return sbx_error_set(e, SBX_K_REJECTED, "image", "too_deep",
		    "the template is nested more than %d levels",
		    SBX_IMAGE_WALK_DEPTH);
	if ((names = sbx_fs_sorted_names(sfd, &n)) == NULL)
		return sbx_error_sys(e, "read_failed",
		    "cannot read a "
		    "directory of the template");
	for (i = 0; i < n && rc == 0; i++) {
		if (fstatat(sfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1) {
			rc = sbx_error_sys(e, "stat_failed",
			    "cannot stat an "
			    "entry of the template");
			break;
		}
		ts[0] = st.st_atim;
		ts[1] = st.st_mtim;
		if (S_ISREG(st.st_mode))
			rc = clone_file(sfd, dfd, names[i], &st, c, e);
		else if (S_ISLNK(st.st_mode)) {
			tl = readlinkat(sfd, names[i], target,
			    sizeof(target) - 1);
			if (tl < 0) {
				rc = sbx_error_sys(e, "read_failed", "cannot "
				    "read a symlink of the template");
				break;
			}
			target[tl] = '\0';
			/* Copied as a link, never resolved: what it points
			 * to is the sandbox's business, inside. */
			if (symlinkat(target, dfd, names[i]) == -1)
				rc = sbx_error_sys(e, "create_failed", "cannot "
				    "create a symlink of the environment");
			else
				(void)utimensat(dfd, names[i], ts,
				    AT_SYMLINK_NOFOLLOW);
		} else if (S_ISDIR(st.st_mode)) {
			if (mkdirat(dfd, names[i], 0700) == -1) {
				rc = sbx_error_sys(e, "mkdir_failed", "cannot "
				    "create a directory of the environment");
				break;
			}
			s2 = openat(sfd, names[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			d2 = openat(dfd, names[i], O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			if (s2 == -1 || d2 == -1)
				rc = sbx_error_sys(e, "open_failed", "cannot "
				    "open a directory");
			else
				rc = clone_dir(s2, d2, c, depth + 1, e);
			/* The mode last: the directory had to stay writable
			 * while it was filled. */
			if (rc == 0 && (fchmod(d2, (st.st_mode & 0777) |
			    0200) == -1 || futimens(d2, ts) == -1))
				rc = sbx_error_sys(e, "chmod_failed", "cannot "
				    "set the mode of a directory");
			if (s2 != -1)
				close(s2);
			if (d2 != -1)
				close(d2);
		}
		/* Anything else (a template has none) is left out. */
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

int
sbx_rootfs_clone_tree(int sfd, int dfd, int *reflink, unsigned long long *files,
    unsigned long long *bytes, struct sbx_error *e)
{
	struct clone	 c;
	int		 rc;

	memset(&c, 0, sizeof(c));
	c.reflink = *reflink;
	rc = clone_dir(sfd, dfd, &c, 0, e);
	*reflink = c.reflink;
	*files = c.files;
	*bytes = c.bytes;
	return rc;
}

/* envs/<name>/env.json, parsed, or NULL. */
static json_t *
env_record(int envsfd, const char *name)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	char		 rel[NAME_MAX + 16];
	json_t		*j = NULL;

	snprintf(rel, sizeof(rel), "%s/%s", name, SBX_ENV_RECORD);
	if (sbx_fs_read_file_at(envsfd, rel, SBX_ENV_RECORD_MAX, &b, &e2) == 0)
		j = sbx_json_parse(b.p, b.len, SBX_ENV_RECORD_MAX, &e2);
	sbx_buf_release(&b);
	return j;
}

/*
 * Take envs/<name> apart if nobody uses it: a builder holds the directory
 * itself, a running sbx exec holds its rootfs (flock, shared).  Returns 1
 * removed, 0 in use (left alone), -1 error.
 */
static int
env_rm_unused(int envsfd, const char *name, struct sbx_error *e)
{
	int	 dfd, rfd = -1, rc;

	if ((dfd = openat(envsfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 1;
		/* Not a directory (a planted symlink, a file): it is
		 * removed itself, never followed. */
		return sbx_provision_rm_tree(envsfd, name, e) == 0 ? 1 : -1;
	}
	if (flock(dfd, LOCK_EX | LOCK_NB) == -1) {
		close(dfd);
		return 0;
	}
	rfd = openat(dfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (rfd != -1 && flock(rfd, LOCK_EX | LOCK_NB) == -1) {
		close(rfd);
		close(dfd);
		return 0;
	}
	/* Held exclusively while it goes: a run starting meanwhile sees it
	 * as being removed and does not use it. */
	rc = sbx_provision_rm_tree(envsfd, name, e) == 0 ? 1 : -1;
	if (rfd != -1)
		close(rfd);
	close(dfd);
	return rc;
}

/* Remove what killed or superseded builds left in envs/.tmp-*. */
static void
env_sweep(int envsfd)
{
	struct sbx_error e2;
	char		**names;
	size_t		 n, i;

	if ((names = sbx_fs_sorted_names(envsfd, &n)) == NULL)
		return;
	for (i = 0; i < n; i++) {
		if (strncmp(names[i], ".tmp-", 5) == 0)
			(void)env_rm_unused(envsfd, names[i], &e2);
		free(names[i]);
	}
	free(names);
}

struct env_slot {
	char	 agent[64];
	char	 digest[SBX_DIGEST_HEX + 1];
	char	 last_used[32];
};

static int
slot_cmp(const void *a, const void *b)
{
	const struct env_slot	*x = a, *y = b;
	int			 c = strcmp(x->last_used, y->last_used);

	return c != 0 ? c : strcmp(x->agent, y->agent);
}

/* The environments of envs/, oldest use first. */
static struct env_slot *
env_slots(int envsfd, size_t *np)
{
	struct env_slot	*v;
	struct sbx_error e2;
	json_t		*rec;
	const char	*s;
	char		**names;
	size_t		 n, i, k = 0;

	*np = 0;
	if ((names = sbx_fs_sorted_names(envsfd, &n)) == NULL)
		return NULL;
	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		goto out;
	for (i = 0; i < n; i++) {
		if (sbx_names_agent_valid(names[i], "agent", &e2) == -1)
			continue;
		snprintf(v[k].agent, sizeof(v[k].agent), "%s", names[i]);
		/* No record (damaged, or a planted file): oldest of all,
		 * first to go. */
		if ((rec = env_record(envsfd, names[i])) != NULL) {
			if ((s = json_string_value(json_object_get(rec,
			    "last_used"))) != NULL)
				snprintf(v[k].last_used,
				    sizeof(v[k].last_used), "%s", s);
			if ((s = json_string_value(json_object_get(rec,
			    "digest"))) != NULL && sbx_names_digest_valid(s))
				memcpy(v[k].digest, s, sizeof(v[k].digest));
			json_decref(rec);
		}
		k++;
	}
	qsort(v, k, sizeof(*v), slot_cmp);
	*np = k;
out:
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return v;
}

/* Least recently used first, never `keep`, until at most max remain. */
static int
env_evict(int envsfd, struct sbx_rootfs *x, struct sbx_error *e)
{
	struct env_slot	*v;
	char		 msg[160];
	size_t		 n, i, left;
	int		 r;

	if ((v = env_slots(envsfd, &n)) == NULL)
		return sbx_error_sys(e, "read_failed", "cannot read envs/");
	left = n;
	for (i = 0; i < n && left > x->max_envs; i++) {
		if (strcmp(v[i].agent, x->agent) == 0)
			continue;
		/* Only ever envs/<agent>: homes (workspace/) and templates
		 * are not the business of eviction. */
		if ((r = env_rm_unused(envsfd, v[i].agent, e)) == -1) {
			free(v);
			return -1;
		}
		if (r == 0) {
			snprintf(msg, sizeof(msg), "the environment of agent "
			    "%s is in use by a running sbx exec and was not "
			    "evicted", v[i].agent);
			json_array_append_new(x->warnings, json_string(msg));
			continue;
		}
		SBX_LPATH(msg, SBX_L_ENV, v[i].agent);
		json_array_append_new(x->evicted, json_pack("{s:s,s:s,s:s,s:s}",
		    "agent", v[i].agent, "path", msg, "digest", v[i].digest,
		    "last_used", v[i].last_used));
		left--;
	}
	free(v);
	return 0;
}

static double
ms_since(const struct timespec *t0)
{
	struct timespec	 t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) * 1e3 +
	    (double)(t1.tv_nsec - t0->tv_nsec) / 1e6;
}

int
sbx_rootfs_create(int rootfd, struct sbx_rootfs *x, struct sbx_error *e)
{
	struct sbx_error e2;
	struct stat	 st;
	struct timespec	 t0;
	json_t		*rec = NULL;
	const char	*d;
	char		 rel[SBX_DIGEST_HEX + 32], tmp[32], now[32], *s = NULL;
	unsigned char	 rnd[8];
	int		 tfd = -1, envsfd = -1, tmpfd = -1, rfd = -1, lock = -1;
	int		 dfd, made = 0, rc = -1, reflink = 1;
	mode_t		 um;

	x->present = x->replaced = 0;
	x->clone = NULL;
	x->files = x->bytes = 0;
	x->clone_ms = 0;
	if (sbx_names_agent_valid(x->agent, "agent", e) == -1)
		return -1;
	/* The template must be complete (the same cheap check as sbx exec
	 * makes), and is read beneath the root, no symlink followed. */
	if ((dfd = sbx_imageref_open(rootfd, x->digest, e)) == -1)
		return -1;
	close(dfd);
	SBX_LPATH(rel, SBX_L_IMAGE_ROOTFS, x->digest);
	if ((tfd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) == -1)
		return -1;
	if ((envsfd = sbx_fs_mkdirs_at(rootfd, ENVS_DIR, 0700, e)) == -1)
		goto out;
	/* Kept when it is of the same image: it may hold what the agent
	 * installed. */
	if ((rec = env_record(envsfd, x->agent)) != NULL &&
	    (d = json_string_value(json_object_get(rec, "digest"))) != NULL &&
	    strcmp(d, x->digest) == 0 && (dfd = openat(envsfd, x->agent,
	    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
		if (fstatat(dfd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			x->present = 1;
			d = json_string_value(json_object_get(rec, "clone"));
			x->clone = d && strcmp(d, "reflink") == 0 ? "reflink" :
			    "copy";
			sbx_time_utc_iso_ms(now);
			json_object_set_new(rec, "last_used", json_string(now));
			if ((s = sbx_envelope_dump(rec)) == NULL ||
			    sbx_fs_write_atomic(dfd, SBX_ENV_RECORD, s,
			    strlen(s), 0600, e) == -1) {
				close(dfd);
				goto out;
			}
			close(dfd);
			goto evict;
		}
		close(dfd);
	}
	env_sweep(envsfd);
	randombytes_buf(rnd, sizeof(rnd));
	memcpy(tmp, ".tmp-", 5);
	sodium_bin2hex(tmp + 5, sizeof(tmp) - 5, rnd, sizeof(rnd));
	if (mkdirat(envsfd, tmp, 0700) == -1) {
		sbx_error_sys(e, "mkdir_failed", "cannot create envs/%s", tmp);
		goto out;
	}
	made = 1;
	um = umask(022);
	if ((tmpfd = openat(envsfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1 || flock(tmpfd, LOCK_EX | LOCK_NB) == -1 ||
	    mkdirat(tmpfd, "rootfs", 0700) == -1 || (rfd = openat(tmpfd,
	    "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		umask(um);
		sbx_error_sys(e, "mkdir_failed", "cannot create the "
		    "environment");
		goto out;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = sbx_rootfs_clone_tree(tfd, rfd, &reflink, &x->files, &x->bytes, e);
	x->clone_ms = ms_since(&t0);
	umask(um);
	if (rc == -1)
		goto out;
	rc = -1;
	x->clone = reflink ? "reflink" : "copy";
	if (fstat(tfd, &st) == -1 || fchmod(rfd, (st.st_mode & 0777) | 0200) ==
	    -1) {
		sbx_error_sys(e, "chmod_failed", "environment");
		goto out;
	}
	/* As root the sandbox runs as another uid, which bwrap binds the
	 * rootfs as: it must be able to search (not list) its way down. */
	(void)fchmod(tmpfd, geteuid() == 0 ? 0711 : 0700);
	sbx_time_utc_iso_ms(now);
	json_decref(rec);
	rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I}", "agent", x->agent,
	    "digest", x->digest, "created", now, "last_used", now, "clone",
	    x->clone, "files", (json_int_t)x->files, "bytes",
	    (json_int_t)x->bytes);
	free(s);
	if (rec == NULL || (s = sbx_envelope_dump(rec)) == NULL) {
		sbx_error_sys(e, "nomem", "environment record");
		goto out;
	}
	/* Written last: its presence marks the environment complete. */
	if (sbx_fs_write_atomic(tmpfd, SBX_ENV_RECORD, s, strlen(s), 0600, e) ==
	    -1)
		goto out;
	if ((lock = sbx_provision_lock(rootfd, e)) == -1)
		goto out;
	/* Into place.  Whatever was at envs/<agent> (an env of another
	 * image, a damaged one, a planted symlink) is swapped out, not
	 * followed, and removed unless a run still holds it. */
	if (renameat2(envsfd, tmp, envsfd, x->agent, RENAME_NOREPLACE) == 0)
		made = 0;
	else if (errno == EEXIST && renameat2(envsfd, tmp, envsfd, x->agent,
	    RENAME_EXCHANGE) == 0) {
		x->replaced = 1;
		close(tmpfd);
		tmpfd = -1;
		if (env_rm_unused(envsfd, tmp, &e2) != 1)
			json_array_append_new(x->warnings, json_string("the "
			    "previous environment is still in use by a "
			    "running sbx exec; it is removed later"));
		made = 0;
	} else {
		sbx_error_sys(e, "rename_failed", "cannot move the environment "
		    "into place");
		goto out;
	}
	(void)fsync(envsfd);
evict:
	if (lock == -1 && (lock = sbx_provision_lock(rootfd, e)) == -1)
		goto out;
	if (env_evict(envsfd, x, e) == -1)
		goto out;
	rc = 0;
out:
	if (rfd != -1)
		close(rfd);
	if (tmpfd != -1)
		close(tmpfd);
	if (made)
		(void)sbx_provision_rm_tree(envsfd, tmp, &e2);
	if (lock != -1)
		close(lock);
	if (envsfd != -1)
		close(envsfd);
	json_decref(rec);
	free(s);
	close(tfd);
	return rc;
}

int
sbx_rootfs_remove(int rootfd, const char *agent, json_t *removed,
    struct sbx_error *e)
{
	struct stat	 st;
	char		 rel[96];
	int		 envsfd, lock, rc = 0;

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	if ((envsfd = sbx_fs_open_beneath(rootfd, ENVS_DIR, O_RDONLY |
	    O_DIRECTORY, e)) == -1)
		return e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0 ? 0 :
		    -1;
	if ((lock = sbx_provision_lock(rootfd, e)) == -1) {
		close(envsfd);
		return -1;
	}
	if (fstatat(envsfd, agent, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		/* A run may be using it: removed all the same (asked for),
		 * and it runs on for what it already has open. */
		if ((rc = sbx_provision_rm_tree(envsfd, agent, e)) == 0) {
			SBX_LPATH(rel, SBX_L_ENV, agent);
			json_array_append_new(removed, json_string(rel));
		}
	}
	close(lock);
	close(envsfd);
	return rc;
}

json_t *
sbx_rootfs_list(int rootfd, struct sbx_error *e)
{
	struct sbx_error e2;
	json_t		*out = json_array(), *rec, *it;
	char		**names;
	size_t		 n, i;
	int		 envsfd;

	if (rootfd < 0)
		return out;
	if ((envsfd = sbx_fs_open_beneath(rootfd, ENVS_DIR, O_RDONLY |
	    O_DIRECTORY, e)) == -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			return out;
		json_decref(out);
		return NULL;
	}
	if ((names = sbx_fs_sorted_names(envsfd, &n)) == NULL) {
		close(envsfd);
		json_decref(out);
		sbx_error_sys(e, "read_failed", "cannot read envs/");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (sbx_names_agent_valid(names[i], "agent", &e2) == 0) {
			it = json_pack("{s:s}", "agent", names[i]);
			if ((rec = env_record(envsfd, names[i])) != NULL) {
				static const char *const k[] = { "digest",
				    "created", "last_used", "clone" };
				size_t j;
				for (j = 0; j < sizeof(k) / sizeof(*k); j++)
					if (json_is_string(json_object_get(rec,
					    k[j])))
						json_object_set(it, k[j],
						    json_object_get(rec, k[j]));
				json_decref(rec);
			}
			json_array_append_new(out, it);
		}
		free(names[i]);
	}
	free(names);
	close(envsfd);
	return out;
}
