/* imageref.c: an agent's image (or environment), as sbx-exec finds and
 * checks it. */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "identity.h"
#include "imageref.h"
#include "layout.h"
#include "names.h"
#include "rootfs.h"
#include "settings.h"
#include "time.h"

int
sbx_imageref_agent(int rootfd, const char *agent,
    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *e)
{
	int	 env;

	return sbx_imageref_agent_env(rootfd, agent, digest, &env, e);
}

int
sbx_imageref_agent_env(int rootfd, const char *agent,
    char digest[SBX_DIGEST_HEX + 1], int *env, struct sbx_error *e)
{
	char		 rel[128];
	json_t		*cfg = NULL;
	int		 r;

	*env = 0;
	/* The record first: the config file is read only when there is
	 * none (an old root, before `sbx provision` migrated it). */
	if ((r = sbx_imageref_record(rootfd, agent, digest, env, e)) != 0)
		return r == 1 && digest[0] != '\0' ? 1 : r == 1 ? 0 : -1;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, agent);
	if (sbx_settings_agent(rootfd, agent, &cfg, e) == -1)
		return -1;
	r = sbx_imageref_of(-1, cfg, rel, agent, digest, env, e);
	json_decref(cfg);
	return r;
}

static int
record_bad(struct sbx_error *e, const char *agent)
{
	sbx_error_set(e, SBX_K_INVALID_ARGS, "image", "record_invalid",
	    "agents/%s/%s is not a valid image record", agent,
	    SBX_IMAGE_RECORD);
	sbx_error_hint(e, "bind the agent again with `sbx provision --agent "
	    "%s --image NAME` (or `--image none`)", agent);
	return -1;
}

int
sbx_imageref_record(int rootfd, const char *agent,
    char digest[SBX_DIGEST_HEX + 1], int *env, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*rec, *d, *v;
	char		 rel[128];

	digest[0] = '\0';
	*env = 0;
	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_IMAGE, agent);
	/* Beneath the root, no symlink followed; small, bounded. */
	if (sbx_fs_read_file_at(rootfd, rel, 4096, &b, &e2) == -1) {
		sbx_buf_release(&b);
		if (e2.kind != NULL && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return 0;
		return record_bad(e, agent);
	}
	rec = sbx_json_parse(b.p, b.len, 4096, &e2);
	sbx_buf_release(&b);
	if (rec == NULL || !json_is_object(rec)) {
		json_decref(rec);
		return record_bad(e, agent);
	}
	d = json_object_get(rec, "digest");
	v = json_object_get(rec, "env");
	if ((d != NULL && !json_is_null(d) && (!json_is_string(d) ||
	    !sbx_names_digest_valid(json_string_value(d)))) ||
	    (v != NULL && !json_is_boolean(v))) {
		json_decref(rec);
		return record_bad(e, agent);
	}
	if (json_is_string(d)) {
		memcpy(digest, json_string_value(d), SBX_DIGEST_HEX + 1);
		*env = json_is_true(v);
	}
	json_decref(rec);
	return 1;
}

int
sbx_imageref_record_write(int rootfd, const char *agent, const char *digest,
    int env, struct sbx_error *e)
{
	json_t	*rec;
	char	 rel[96], *s;
	int	 dfd, rc;

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if ((dfd = sbx_fs_mkdirs_at(rootfd, rel, 0700, e)) == -1)
		return -1;
	rec = json_pack("{s:o,s:b}", "digest", digest[0] ?
	    json_string(digest) : json_null(), "env", digest[0] && env);
	s = rec != NULL ? sbx_envelope_dump(rec) : NULL;
	json_decref(rec);
	if (s == NULL) {
		close(dfd);
		return sbx_error_sys(e, "nomem", "image record");
	}
	rc = sbx_fs_write_atomic(dfd, SBX_IMAGE_RECORD, s, strlen(s), 0600, e);
	free(s);
	close(dfd);
	return rc;
}

int
sbx_imageref_of(int rootfd, const json_t *cfg, const char *origin,
    const char *agent, char digest[SBX_DIGEST_HEX + 1], int *env,
    struct sbx_error *e)
{
	const json_t	*v;
	int		 r;

	*env = 0;
	if (rootfd >= 0 && (r = sbx_imageref_record(rootfd, agent, digest, env,
	    e)) != 0)
		return r == 1 && digest[0] != '\0' ? 1 : r == 1 ? 0 : -1;
	/* No record: the keys an older sbx kept in the agent's config. */
	if (cfg == NULL)
		return 0;
	v = json_object_get(cfg, "image");
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v) || !sbx_names_digest_valid(
	    json_string_value(v))) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: image must be a sha256 digest "
		    "(64 lowercase hex digits)", origin);
		sbx_error_hint(e, "bind the agent again with `sbx provision "
		    "--agent %s --image NAME`", agent);
		return -1;
	}
	memcpy(digest, json_string_value(v), SBX_DIGEST_HEX + 1);
	*env = json_is_true(json_object_get(cfg, "env"));
	return 1;
}

static int
refuse(struct sbx_error *e, const char *reason, const char *digest,
    const char *what)
{
	sbx_error_set(e, SBX_K_REJECTED, "image", reason, "image %.12s %s",
	    digest, what);
	sbx_error_hint(e, "add it again with `sbx provision image add "
	    "SOURCE --sha256 %s`, then check it with `sbx provision image "
	    "verify`", digest);
	return -1;
}

/* The files sbx binds over: bwrap cannot create mount points in a
 * read-only tree, so they must be there as regular files. */
static int
has_etc_files(int fd)
{
	static const char *const need[] = { "etc/passwd", "etc/group",
	    "etc/hosts", "etc/resolv.conf" };
	struct stat	 st;
	size_t		 i;

	for (i = 0; i < sizeof(need) / sizeof(*need); i++)
		if (fstatat(fd, need[i], &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode))
			return 0;
	return 1;
}

int
sbx_imageref_open(int rootfd, const char *digest, struct sbx_error *e)
{
	struct sbx_error e2;
	struct stat	 st;
	char		 rel[SBX_DIGEST_HEX + 64];
	int		 dfd, fd;

	if (!sbx_names_digest_valid(digest))
		return refuse(e, "image_missing", "?", "is not a digest");
	SBX_LPATH(rel, SBX_L_IMAGE, digest);
	/* Beneath the root, no symlink followed: a planted images/ or
	 * images/<digest> link never redirects what the sandbox sees. */
	if ((dfd = sbx_fs_open_beneath(rootfd, rel, O_PATH | O_DIRECTORY, &e2))
	    == -1) {
		if (e2.kind != NULL && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return refuse(e, "image_missing", digest, "is not in "
			    "images/ of the state root");
		return refuse(e, "image_damaged", digest, "cannot be opened "
		    "safely");
	}
	/* Cheap on purpose (no tree walk at start-up, DESIGN.md §7): the
	 * manifest is written last, just before the atomic rename, so its
	 * presence means the unpacking completed; `image verify` does the
	 * full comparison. */
	if (fstatat(dfd, SBX_IMAGE_MANIFEST, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size == 0) {
		close(dfd);
		return refuse(e, "image_damaged", digest, "has no manifest");
	}
	fd = openat(dfd, "rootfs", O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	close(dfd);
	if (fd == -1)
		return refuse(e, "image_damaged", digest, "has no rootfs "
		    "directory");
	if (!has_etc_files(fd)) {
		close(fd);
		return refuse(e, "image_damaged", digest, "lacks a regular "
		    "/etc/passwd, group, hosts or resolv.conf");
	}
	return fd;
}

static int
env_missing(struct sbx_error *e, const char *agent, const char *reason,
    const char *what)
{
	sbx_error_set(e, SBX_K_NOT_FOUND, "env", reason, "the environment of "
	    "agent %s %s", agent, what);
	sbx_error_hint(e, "make it again with `sbx provision --agent %s "
	    "--env`", agent);
	return -1;
}

/*
 * last_used, for eviction: env.json rewritten through a temporary file
 * and a rename (readers never see half a record), without fsync: losing
 * the update in a crash only makes an environment look older, and an
 * fsync on every sbx exec would cost more than the sandbox.
 */
static void
env_touch(int dfd, json_t *rec)
{
	char		 now[32], tmp[64];
	char		*s;
	size_t		 n;
	int		 fd;

	sbx_time_utc_iso_ms(now);
	json_object_set_new(rec, "last_used", json_string(now));
	if ((s = sbx_envelope_dump(rec)) == NULL)
		return;
	snprintf(tmp, sizeof(tmp), ".%s.%d.tmp", SBX_ENV_RECORD, (int)getpid());
	n = strlen(s);
	if ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) != -1) {
		if (sbx_fs_write_all(fd, s, n) == 0 && close(fd) == 0)
			(void)renameat(dfd, tmp, dfd, SBX_ENV_RECORD);
		else
			(void)unlinkat(dfd, tmp, 0);
	}
	free(s);
}

int
sbx_imageref_env_open(int rootfd, const char *agent, const char *digest,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	struct stat	 st;
	json_t		*rec;
	const char	*d;
	char		 rel[96];
	int		 dfd, fd;

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_ENV, agent);
	/* Beneath the root, no symlink followed: a link planted as envs/
	 * or envs/<agent> is refused, never used as a root file system. */
	if ((dfd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
	    &e2)) == -1) {
		if (e2.kind != NULL && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return env_missing(e, agent, "env_missing", "does not "
			    "exist (evicted, reset or never made)");
		*e = e2;
		return -1;
	}
	if (sbx_fs_read_file_at(dfd, SBX_ENV_RECORD, SBX_ENV_RECORD_MAX, &b,
	    &e2) == -1 || (rec = sbx_json_parse(b.p, b.len,
	    SBX_ENV_RECORD_MAX, &e2)) == NULL) {
		sbx_buf_release(&b);
		close(dfd);
		/* No record: an env being made or removed right now. */
		return env_missing(e, agent, "env_missing", "has no record");
	}
	sbx_buf_release(&b);
	d = json_string_value(json_object_get(rec, "digest"));
	if (d == NULL || strcmp(d, digest) != 0) {
		json_decref(rec);
		close(dfd);
		return env_missing(e, agent, "env_stale", "was made from "
		    "another image");
	}
	fd = openat(dfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1) {
		json_decref(rec);
		close(dfd);
		if (errno == ENOENT)
			return env_missing(e, agent, "env_missing", "has no "
			    "rootfs");
		sbx_error_set(e, SBX_K_REJECTED, "env", "symlink_in_path",
		    "envs/%s/rootfs is a symlink or not a directory", agent);
		sbx_error_hint(e, "make it again with `sbx provision --agent "
		    "%s --env`", agent);
		return -1;
	}
	/* Shared: any number of runs; eviction and replacement take it
	 * exclusively and leave an env alone while a run holds it.  One
	 * being removed (held exclusively, or already unlinked) is as good
	 * as gone. */
	if (flock(fd, LOCK_SH | LOCK_NB) == -1 || fstat(fd, &st) == -1 ||
	    st.st_nlink == 0) {
		json_decref(rec);
		close(fd);
		close(dfd);
		return env_missing(e, agent, "env_missing", "is being "
		    "removed");
	}
	if (!has_etc_files(fd)) {
		json_decref(rec);
		close(fd);
		close(dfd);
		sbx_error_set(e, SBX_K_REJECTED, "env", "env_damaged", "the "
		    "environment of agent %s lacks a regular /etc/passwd, "
		    "group, hosts or resolv.conf", agent);
		sbx_error_hint(e, "make it again with `sbx provision --agent "
		    "%s --no-env` then `--env`", agent);
		return -1;
	}
	env_touch(dfd, rec);
	json_decref(rec);
	close(dfd);
	return fd;
}

int
sbx_imageref_rootfs_subids(int rootfd, const char *agent, uid_t uid, gid_t gid,
    struct sbx_subids *sub)
{
	struct sbx_buf	   b = SBX_BUF_INIT;
	struct sbx_error   e;
	struct stat	   st;
	unsigned long long dev, ino;
	unsigned	   u, g;
	char		   rel[SBX_LAYOUT_PATH_MAX];
	int		   envfd, ok = 0;

	SBX_LPATH(rel, SBX_L_ENV, agent);
	if ((envfd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 &e)) == -1)
		return 0;
	if (sbx_fs_read_file_at(envfd, SBX_ROOTFS_OWN_STAMP, 256, &b, &e) ==
		0 &&
	    b.p != NULL &&
	    sscanf(b.p, "%llu %llu %u %u %lu %lu %lu", &dev, &ino, &u, &g,
		&sub->uid, &sub->gid, &sub->count) == 7 &&
	    u == uid && g == gid && sub->count > 0 &&
	    sub->count <= SBX_SUBID_COUNT &&
	    fstatat(envfd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino)
		ok = 1;
	sbx_buf_release(&b);
	close(envfd);
	return ok;
}
