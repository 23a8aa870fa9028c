/* settings.c: the settings files, loaded once per process (settings.h). */
#include <sys/stat.h>

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "settings.h"

/*
 * What was loaded: a document per (state root, file), with the identity
 * of the file it came from.  A handful of entries: a process reads the
 * global settings and those of an agent or two (the proxy and the bridge,
 * of the agents of their sessions: an evicted entry is read again).
 */
#define NCACHE	16

struct cached {
	dev_t		 rdev;		/* the state root */
	ino_t		 rino;
	char		 rel[SBX_LAYOUT_PATH_MAX];
	struct stat	 st;		/* the file as it was read */
	json_t		*doc;
};

static struct cached	 cache[NCACHE];
static unsigned		 cache_next;
static pthread_mutex_t	 cache_lock = PTHREAD_MUTEX_INITIALIZER;

static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* The JSON of rel in b (released): 0 and *out, or -1 and why. */
static int
parse(const char *rel, struct sbx_buf *b, json_t **out, struct sbx_error *e)
{
	struct sbx_error e2;
	json_t		*j;

	j = sbx_json_parse(b->p, b->len, SBX_SETTINGS_MAX, &e2);
	sbx_buf_release(b);
	if (j == NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "config", "config_invalid",
		    "%s: %s", rel, e2.message);
		sbx_error_hint(e,
		    "correct its JSON by hand, or move it aside "
		    "(the defaults then apply) and set the values again with "
		    "sbx config");
		return -1;
	}
	*out = j;
	return 0;
}

/* The document of rel read from fd (st its fstat), as sbx_settings_load
 * reads it from the name. */
static int
load_fd(int fd, const struct stat *st, const char *rel, json_t **out,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;

	*out = NULL;
	if (sbx_fs_read_file_fd(fd, st, rel, SBX_SETTINGS_MAX, &b, &e2) ==
	    -1) {
		sbx_buf_release(&b);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: %s", rel, e2.message);
	}
	return parse(rel, &b, out, e);
}

/*
 * The file is opened beneath the root as the loader opens it (never
 * through a planted symlink), once: the document kept is returned when
 * it is that same file, else it is read from that descriptor.  The
 * identity is taken before the read: a file replaced in between is read
 * again next time, never kept under the wrong identity.  A file that is
 * not there is no document; any other trouble is the loader's to say.
 */
static int
cached_load(int rootfd, const char *rel, json_t **out, struct sbx_error *e)
{
	struct stat	 rst, st;
	struct sbx_error e2;
	struct cached	*c;
	json_t		*doc;
	unsigned	 i;
	int		 fd, rc;

	*out = NULL;
	memset(&e2, 0, sizeof(e2));
	if (fstat(rootfd, &rst) == -1)
		return sbx_settings_load(rootfd, rel, out, e);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_NONBLOCK,
	    &e2)) == -1) {
		if (e2.kind != NULL && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return 0;
		return sbx_settings_load(rootfd, rel, out, e);
	}
	/* Not a regular file: load_fd refuses it, as the loader would. */
	if (fstat(fd, &st) == -1)
		st.st_mode = 0;
	pthread_mutex_lock(&cache_lock);
	for (i = 0; S_ISREG(st.st_mode) && i < NCACHE; i++) {
		c = &cache[i];
		if (c->doc != NULL && c->rdev == rst.st_dev &&
		    c->rino == rst.st_ino && strcmp(c->rel, rel) == 0) {
			if (same_file(&c->st, &st)) {
				*out = json_incref(c->doc);
				pthread_mutex_unlock(&cache_lock);
				close(fd);
				return 0;
			}
			json_decref(c->doc);
			c->doc = NULL;
		}
	}
	pthread_mutex_unlock(&cache_lock);
	rc = load_fd(fd, &st, rel, &doc, e);
	close(fd);
	if (rc == -1)
		return -1;
	if (doc == NULL || strlen(rel) >= sizeof(c->rel)) {
		*out = doc;
		return 0;
	}
	pthread_mutex_lock(&cache_lock);
	for (i = 0; i < NCACHE && cache[i].doc != NULL; i++)
		;
	if (i == NCACHE)
		i = cache_next++ % NCACHE;
	c = &cache[i];
	json_decref(c->doc);
	c->rdev = rst.st_dev;
	c->rino = rst.st_ino;
	memcpy(c->rel, rel, strlen(rel) + 1);
	c->st = st;
	c->doc = json_incref(doc);
	pthread_mutex_unlock(&cache_lock);
	*out = doc;
	return 0;
}

/* The settings file of the layout's entry id (of agent), cached. */
static int
cached_entry(int rootfd, enum sbx_layout_id id, const char *agent,
    json_t **out, struct sbx_error *e)
{
	char	 rel[SBX_LAYOUT_PATH_MAX];

	*out = NULL;
	if (sbx_layout_path(id, agent, rel, sizeof(rel), e) == -1)
		return -1;
	return cached_load(rootfd, rel, out, e);
}

int
sbx_settings_global(int rootfd, json_t **out, struct sbx_error *e)
{
	return cached_entry(rootfd, SBX_L_SANDBOX_JSON, NULL, out, e);
}

int
sbx_settings_agent(int rootfd, const char *agent, json_t **out,
    struct sbx_error *e)
{
	return cached_entry(rootfd, SBX_L_AGENT_CONFIG, agent, out, e);
}

int
sbx_settings_load(int rootfd, const char *rel, json_t **out,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;

	*out = NULL;
	if (sbx_fs_read_file_at(rootfd, rel, SBX_SETTINGS_MAX, &b, &e2) == -1) {
		sbx_buf_release(&b);
		if (e2.kind && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return 0;
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: %s", rel, e2.message);
	}
	return parse(rel, &b, out, e);
}

int
sbx_settings_check_host(const json_t *doc, struct sbx_error *e)
{
	const json_t	*v, *m;
	json_int_t	 u, g;

	v = json_object_get(doc, "cgroup_v2_root");
	if (v != NULL && (!json_is_string(v) ||
	    json_string_value(v)[0] != '/'))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "cgroup_v2_root",
		    "config_invalid", "config/sandbox.json: cgroup_v2_root "
		    "must be an absolute path");
	if ((v = json_object_get(doc, "run_as")) != NULL &&
	    (json_unpack((json_t *)v, "{s:I,s:I}", "uid", &u, "gid", &g) ==
	    -1 || u <= 0 || g <= 0 || u > 0x7fffffff || g > 0x7fffffff))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "run_as",
		    "config_invalid", "config/sandbox.json: run_as must be "
		    "{\"uid\": N, \"gid\": N} with N > 0");
	if ((v = json_object_get(doc, "preflight")) != NULL) {
		if (!json_is_object(v))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "preflight",
			    "config_invalid", "config/sandbox.json: preflight "
			    "must be an object");
		m = json_object_get(v, "min_free_bytes");
		if (m != NULL && (!json_is_integer(m) ||
		    json_integer_value(m) < 0))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "min_free_bytes", "config_invalid",
			    "config/sandbox.json: preflight.min_free_bytes "
			    "must be a non-negative integer");
	}
	return 0;
}
