/*
 * plugin.c: the plugin library and each agent's installed plugins
 * (plugin.h).
 *
 * The library is the single source of truth: an install copies a recipe
 * and records its hash; a run reads the installed copy (host-side, in
 * agents/A/plugins/, where the sandbox cannot write), so a changed recipe
 * in the library is an update for a person to apply.  The files go into
 * the agent's home because that is what the sandbox sees; the agent may
 * change them there as it may change anything of its own, and gains
 * nothing by it: a plugin's run has no right the agent's own runs lack
 * beyond the declared network names and secrets it already holds.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "envelope.h"
#include "fsutil.h"
#include "install.h"
#include "layout.h"
#include "plugin.h"
#include "recipe.h"
#include "time.h"
#include "utf8.h"

/* Did the open fail only because the file is not there? */
static int
absent(const struct sbx_error *e)
{
	return e->sys_errno == ENOENT ||
	    (e->reason != NULL && strcmp(e->reason, "not_found") == 0);
}

/* Limits of a directory source. */
struct dirsrc {
	json_t *files;
	size_t	total;
	char	field[SBX_RECIPE_PATH_MAX + 16];
};

static int
dir_walk(int dfd, const char *prefix, int depth, struct dirsrc *s,
    struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	struct stat    st;
	char	     **names, path[SBX_RECIPE_PATH_MAX + 2];
	size_t	       n, i;
	int	       fd, rc = -1;

	if ((names = sbx_fs_sorted_names(dfd, &n)) == NULL)
		return sbx_error_sys(e, "read_failed", "cannot list %s",
		    *prefix ? prefix : "the recipe directory");
	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", prefix,
			*prefix ? "/" : "", names[i]) >= sizeof(path))
			snprintf(path, sizeof(path), "%.*s",
			    SBX_RECIPE_PATH_MAX + 1, prefix);
		if (depth == 0 && strcmp(names[i], SBX_RECIPE_FILE) == 0)
			continue;
		if (sbx_recipe_path_valid(path, strlen(path), e) == -1)
			goto out;
		snprintf(s->field, sizeof(s->field), "files[%s]", path);
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1) {
			sbx_error_sys(e, "read_failed", "cannot stat %s", path);
			goto out;
		}
		/* A link could name anything of the host's: its target is
		 * never read, and the recipe is refused rather than
		 * silently shorter. */
		if (S_ISLNK(st.st_mode)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, s->field,
			    "symlink", "recipe: `%s` is a symbolic link",
			    s->field);
			goto out;
		}
		if (S_ISDIR(st.st_mode)) {
			if ((fd = openat(dfd, names[i],
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC)) == -1) {
				sbx_error_sys(e, "read_failed",
				    "cannot open "
				    "%s",
				    path);
				goto out;
			}
			rc = dir_walk(fd, path, depth + 1, s, e);
			close(fd);
			if (rc == -1)
				goto out;
			rc = -1;
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, s->field,
			    "not_regular",
			    "recipe: `%s` is not a regular "
			    "file",
			    s->field);
			goto out;
		}
		if (json_object_size(s->files) >= SBX_RECIPE_NFILES_MAX ||
		    (size_t)st.st_size > SBX_RECIPE_FILE_MAX ||
		    s->total + (size_t)st.st_size > SBX_RECIPE_FILES_MAX) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, s->field,
			    "files_too_large",
			    "recipe: the files are more "
			    "than %d or larger than %u bytes",
			    SBX_RECIPE_NFILES_MAX, SBX_RECIPE_FILES_MAX);
			goto out;
		}
		sbx_buf_reset(&b);
		if (sbx_fs_read_file_at(dfd, names[i], SBX_RECIPE_FILE_MAX, &b,
			e) == -1)
			goto out;
		if ((b.len > 0 && memchr(b.p, '\0', b.len) != NULL) ||
		    !sbx_utf8_valid(b.p != NULL ? b.p : "", b.len)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, s->field,
			    "not_text", "recipe: `%s` is not UTF-8 text",
			    s->field);
			goto out;
		}
		s->total += b.len;
		json_object_set_new(s->files, path,
		    json_stringn(b.p != NULL ? b.p : "", b.len));
	}
	rc = 0;
out:
	sbx_buf_release(&b);
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return rc;
}

json_t *
sbx_plugin_source_read(int dirfd, const char *name, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	struct dirsrc  s;
	struct stat    st;
	const char    *k;
	json_t	      *r = NULL, *files, *v;
	int	       fd;

	/* O_NONBLOCK: a FIFO under the name (an agent's directory) must not
	 * hang the reader; it is refused as not a regular file. */
	if ((fd = sbx_fs_open_beneath(dirfd, name,
	    O_RDONLY | O_NOCTTY | O_NONBLOCK, e)) == -1)
		return NULL;
	if (fstat(fd, &st) == -1) {
		sbx_error_sys(e, "read_failed", "cannot stat %s", name);
		goto out;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (sbx_fs_read_file_at(dirfd, name, SBX_RECIPE_MAX, &b, e) ==
		    0)
			r = sbx_json_parse(b.p, b.len, SBX_RECIPE_MAX, e);
		goto out;
	}
	if (sbx_fs_read_file_at(fd, SBX_RECIPE_FILE, SBX_RECIPE_MAX, &b, e) ==
		-1 ||
	    (r = sbx_json_parse(b.p, b.len, SBX_RECIPE_MAX, e)) == NULL)
		goto out;
	if (!json_is_object(r)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "recipe", "not_an_object",
		    "a recipe is a JSON object");
		goto bad;
	}
	if ((files = json_object_get(r, "files")) == NULL) {
		files = json_object();
		json_object_set_new(r, "files", files);
	}
	if (!json_is_object(files)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "files", "not_an_object",
		    "recipe: `files` must be an object {path: text}");
		goto bad;
	}
	memset(&s, 0, sizeof(s));
	s.files = json_object();
	if (dir_walk(fd, "", 0, &s, e) == -1) {
		json_decref(s.files);
		goto bad;
	}
	json_object_foreach (s.files, k, v) {
		if (json_object_get(files, k) != NULL) {
			snprintf(s.field, sizeof(s.field), "files[%s]", k);
			sbx_error_set(e, SBX_K_INVALID_ARGS, s.field,
			    "duplicate_file",
			    "recipe: `%s` is both in "
			    "recipe.json and in the directory",
			    s.field);
			json_decref(s.files);
			goto bad;
		}
		json_object_set(files, k, v);
	}
	json_decref(s.files);
	goto out;
bad:
	json_decref(r);
	r = NULL;
out:
	/* A parse error names the source, not an argument of ours. */
	sbx_buf_release(&b);
	close(fd);
	return r;
}

/* ---- the library ---------------------------------------------------------- */

static int
lib_lock(int rootfd, int *dfd, struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX];
	int  fd;

	if ((*dfd = sbx_layout_mkdirs(rootfd, SBX_L_PLUGINS, NULL, e)) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_PLUGINS_LOCK, NULL);
	if ((fd = sbx_install_lock(*dfd, sbx_layout_leaf(rel),
		 SBX_PLUGIN_LOCK_WAIT, e)) == -1) {
		close(*dfd);
		*dfd = -1;
	}
	return fd;
}

static const char *
leaf_of(enum sbx_layout_id id, const char *arg, char *buf, size_t n)
{
	if (sbx_layout_path(id, arg, buf, n, NULL) == -1)
		return "";
	return sbx_layout_leaf(buf);
}

json_t *
sbx_plugin_summary(const json_t *r, const char *sha)
{
	const json_t *t;
	json_t	     *tools = json_array(), *s;
	char	      id[SBX_RECIPE_ID_MAX + 1];
	size_t	      i;

	json_array_foreach (json_object_get(r, "tools"), i, t)
		json_array_append(tools, json_object_get(t, "id"));
	if (sbx_recipe_id(json_string_value(json_object_get(r, "name")) ?
		    json_string_value(json_object_get(r, "name")) :
		    "",
		id, NULL) == -1)
		snprintf(id, sizeof(id), "?");
	s = json_pack("{s:s,s:O,s:O,s:s,s:o,s:O,s:O}", "id", id, "name",
	    json_object_get(r, "name"), "description",
	    json_object_get(r, "description"), "sha256", sha, "tools", tools,
	    "permissions", json_object_get(r, "permissions"), "secrets",
	    json_object_get(r, "secrets"));
	if (s == NULL)
		return NULL;
	json_object_set(s, "version",
	    json_object_get(r, "version") ? json_object_get(r, "version") :
					    json_null());
	json_object_set(s, "created_by",
	    json_object_get(json_object_get(r, "metadata"), "created_by"));
	return s;
}

json_t *
sbx_plugin_lib_get(int rootfd, const char *id, char sha[SBX_RECIPE_SHA_HEX + 1],
    struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	       rel[SBX_LAYOUT_PATH_MAX];
	json_t	      *r;

	if (sbx_recipe_id(id, rel, e) == -1 || strcmp(rel, id) != 0) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "id", "invalid_name",
		    "a plugin id matches ^[a-z0-9][a-z0-9_-]{0,31}$");
		return NULL;
	}
	if (sbx_layout_path(SBX_L_PLUGIN, id, rel, sizeof(rel), e) == -1)
		return NULL;
	if (sbx_fs_read_file_at(rootfd, rel, SBX_RECIPE_MAX + 4096, &b, e) ==
	    -1) {
		if (absent(e)) {
			sbx_error_set(e, SBX_K_NOT_FOUND, "id",
			    "plugin_not_found", "no plugin %s in the library",
			    id);
			sbx_error_hint(e, "sbx plugin list");
		}
		return NULL;
	}
	if (sha != NULL)
		sbx_recipe_sha256(b.p, b.len, sha);
	if ((r = sbx_json_parse(b.p, b.len, SBX_RECIPE_MAX + 4096, e)) == NULL)
		sbx_error_in_file(e, rel,
		    "add the plugin to the library "
		    "again (sbx plugin add)");
	sbx_buf_release(&b);
	return r;
}

int
sbx_plugin_lib_put(int rootfd, const json_t *recipe,
    char id[SBX_RECIPE_ID_MAX + 1], char sha[SBX_RECIPE_SHA_HEX + 1],
    int *replaced, struct sbx_error *e)
{
	struct sbx_error e2;
	const json_t	*om, *nm;
	json_t		*old;
	char  *text, rel[SBX_LAYOUT_PATH_MAX], osha[SBX_RECIPE_SHA_HEX + 1];
	size_t n;
	int    dfd, lock, rc = -1;

	*replaced = 0;
	if (sbx_recipe_id(json_string_value(json_object_get(recipe, "name")),
		id, e) == -1)
		return -1;
	if ((text = sbx_recipe_canonical(recipe, &n, sha)) == NULL)
		return sbx_error_sys(e, "nomem", "recipe");
	if ((lock = lib_lock(rootfd, &dfd, e)) == -1) {
		free(text);
		return -1;
	}
	if ((old = sbx_plugin_lib_get(rootfd, id, osha, &e2)) != NULL) {
		om = json_object_get(old, "metadata");
		nm = json_object_get(recipe, "metadata");
		/* An agent may update its own recipe, never a person's nor
		 * another agent's: those may be installed elsewhere, and
		 * their next install would take the agent's words. */
		if (json_is_string(json_object_get(nm, "created_by")) &&
		    strcmp(json_string_value(json_object_get(nm, "created_by")),
			"agent") == 0 &&
		    !(json_equal(json_object_get(om, "created_by"),
			  json_object_get(nm, "created_by")) &&
			json_equal(json_object_get(om, "agent"),
			    json_object_get(nm, "agent")))) {
			sbx_error_set(e, SBX_K_REJECTED, "name", "id_taken",
			    "the library already has a plugin %s that this "
			    "agent did not write",
			    id);
			sbx_error_hint(e, "choose another name");
			json_decref(old);
			goto out;
		}
		*replaced = strcmp(osha, sha) != 0;
		json_decref(old);
	}
	if (sbx_fs_write_atomic(dfd,
		leaf_of(SBX_L_PLUGIN, id, rel, sizeof(rel)), text, n, 0600,
		e) == -1)
		goto out;
	rc = 0;
out:
	free(text);
	close(lock);
	close(dfd);
	return rc;
}

json_t *
sbx_plugin_lib_list(int rootfd, struct sbx_error *e)
{
	struct sbx_error e2;
	json_t		*out = json_array(), *r;
	char	       **names, sha[SBX_RECIPE_SHA_HEX + 1], id[64];
	size_t		 n, i, l;
	int		 dfd;

	if ((dfd = sbx_layout_open(rootfd, SBX_L_PLUGINS, NULL,
		 O_RDONLY | O_DIRECTORY, e)) == -1)
		return absent(e) ? out : (json_decref(out), NULL);
	if ((names = sbx_fs_sorted_names(dfd, &n)) == NULL) {
		close(dfd);
		json_decref(out);
		sbx_error_sys(e, "read_failed", "cannot list plugins/");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		l = strlen(names[i]);
		if (l > 5 && l - 5 < sizeof(id) &&
		    strcmp(names[i] + l - 5, ".json") == 0) {
			snprintf(id, sizeof(id), "%.*s", (int)(l - 5),
			    names[i]);
			if ((r = sbx_plugin_lib_get(rootfd, id, sha, &e2)) !=
			    NULL) {
				json_array_append_new(out,
				    sbx_plugin_summary(r, sha));
				json_decref(r);
			}
		}
		free(names[i]);
	}
	free(names);
	close(dfd);
	return out;
}

int
sbx_plugin_lib_rm(int rootfd, const char *id, struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX], chk[SBX_RECIPE_ID_MAX + 1];
	int  dfd, lock, rc;

	if (sbx_recipe_id(id, chk, e) == -1 || strcmp(chk, id) != 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "id",
		    "invalid_name",
		    "a plugin id matches "
		    "^[a-z0-9][a-z0-9_-]{0,31}$");
	if ((lock = lib_lock(rootfd, &dfd, e)) == -1)
		return -1;
	rc = unlinkat(dfd, leaf_of(SBX_L_PLUGIN, id, rel, sizeof(rel)), 0);
	if (rc == -1 && errno != ENOENT)
		rc = sbx_error_sys(e, "remove_failed", "cannot remove %s", rel);
	else
		rc = rc == 0;
	close(lock);
	close(dfd);
	return rc;
}

int
sbx_plugin_register(int rootfd, const char *agent, const json_t *in,
    const json_t *sandboxcfg, json_t *warnings, json_t **result,
    struct sbx_error *e)
{
	json_t *r, *copy;
	char	id[SBX_RECIPE_ID_MAX + 1], sha[SBX_RECIPE_SHA_HEX + 1];
	int	replaced;

	*result = NULL;
	/* metadata.agent is sbx's to set, as created_by is. */
	copy = json_deep_copy(in);
	if (json_is_object(json_object_get(copy, "metadata")))
		json_object_del(json_object_get(copy, "metadata"), "agent");
	r = sbx_recipe_check(copy, SBX_RECIPE_AGENT, sandboxcfg, warnings, e);
	json_decref(copy);
	if (r == NULL)
		return -1;
	json_object_set_new(json_object_get(r, "metadata"), "agent",
	    json_string(agent));
	if (sbx_plugin_lib_put(rootfd, r, id, sha, &replaced, e) == -1) {
		json_decref(r);
		return -1;
	}
	*result = json_pack("{s:s,s:s,s:b,s:O,s:s,s:s}", "id", id, "sha256",
	    sha, "replaced", replaced, "network",
	    json_object_get(json_object_get(r, "permissions"), "network"),
	    "created_by", "agent", "agent", agent);
	json_decref(r);
	return 0;
}

/* ---- per agent ------------------------------------------------------------ */

static int
agent_dir(int rootfd, const char *agent, struct sbx_error *e)
{
	return sbx_layout_mkdirs(rootfd, SBX_L_AGENT_RECORDS, agent, e);
}

int
sbx_plugin_agent_lock(int rootfd, const char *agent, struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX];
	int  afd, fd;

	if ((afd = agent_dir(rootfd, agent, e)) == -1)
		return -1;
	fd = sbx_install_lock(afd,
	    leaf_of(SBX_L_AGENT_PLUGINS_LOCK, agent, rel, sizeof(rel)),
	    SBX_PLUGIN_LOCK_WAIT, e);
	close(afd);
	return fd;
}

json_t *
sbx_plugin_installed_read(int rootfd, const char *agent, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	       rel[SBX_LAYOUT_PATH_MAX];
	json_t	      *d;

	if (sbx_layout_path(SBX_L_AGENT_PLUGINS, agent, rel, sizeof(rel), e) ==
	    -1)
		return NULL;
	if (sbx_fs_read_file_at(rootfd, rel, 1 << 20, &b, e) == -1) {
		if (absent(e))
			return json_pack("{s:i,s:[]}", "version", 1, "plugins");
		return NULL;
	}
	d = sbx_json_parse(b.p, b.len, 1 << 20, e);
	sbx_buf_release(&b);
	if (d != NULL && !json_is_array(json_object_get(d, "plugins"))) {
		json_decref(d);
		d = NULL;
		sbx_error_set(e, SBX_K_INVALID_ARGS, "plugins",
		    "record_invalid", "%s has no `plugins` array", rel);
	}
	if (d == NULL)
		sbx_error_in_file(e, rel,
		    "move it aside and install the "
		    "agent's plugins again (sbx plugin install ID --agent %s)",
		    agent);
	return d;
}

static int
by_id(const void *a, const void *b)
{
	const json_t *const *x = a, *const *y = b;
	const char	    *p = json_string_value(json_object_get(*x, "id"));
	const char	    *q = json_string_value(json_object_get(*y, "id"));

	return strcmp(p ? p : "", q ? q : "");
}

int
sbx_plugin_installed_write(int rootfd, const char *agent, const json_t *doc,
    struct sbx_error *e)
{
	const json_t *a = json_object_get(doc, "plugins");
	json_t	    **v, *out, *arr;
	char	     *s, rel[SBX_LAYOUT_PATH_MAX];
	size_t	      n = json_array_size(a), i;
	int	      afd, rc;

	if ((v = calloc(n + 1, sizeof(*v))) == NULL)
		return sbx_error_sys(e, "nomem", "plugins.json");
	for (i = 0; i < n; i++)
		v[i] = json_array_get(a, i);
	qsort(v, n, sizeof(*v), by_id);
	arr = json_array();
	for (i = 0; i < n; i++)
		json_array_append(arr, v[i]);
	free(v);
	out = json_pack("{s:i,s:o}", "version", 1, "plugins", arr);
	s = json_dumps(out, JSON_INDENT(2) | JSON_SORT_KEYS);
	json_decref(out);
	if (s == NULL)
		return sbx_error_sys(e, "nomem", "plugins.json");
	if ((afd = agent_dir(rootfd, agent, e)) == -1) {
		free(s);
		return -1;
	}
	rc = sbx_fs_write_atomic(afd,
	    leaf_of(SBX_L_AGENT_PLUGINS, agent, rel, sizeof(rel)), s, strlen(s),
	    0600, e);
	free(s);
	close(afd);
	return rc;
}

json_t *
sbx_plugin_installed_find(const json_t *doc, const char *id)
{
	json_t *p;
	size_t	i;

	json_array_foreach (json_object_get(doc, "plugins"), i, p)
		if (json_is_string(json_object_get(p, "id")) &&
		    strcmp(json_string_value(json_object_get(p, "id")), id) ==
			0)
			return p;
	return NULL;
}

int
sbx_plugin_installed_del(json_t *doc, const char *id)
{
	json_t *a = json_object_get(doc, "plugins"), *p;
	size_t	i;

	json_array_foreach (a, i, p)
		if (json_is_string(json_object_get(p, "id")) &&
		    strcmp(json_string_value(json_object_get(p, "id")), id) ==
			0) {
			json_array_remove(a, i);
			return 1;
		}
	return 0;
}

int
sbx_plugin_installed_set(json_t *doc, const json_t *r, const char *id,
    const char *sha)
{
	const char *by;
	json_t	   *ent;
	char	    now[SBX_TIME_ISO_MAX];

	sbx_time_utc_iso(now);
	by = json_string_value(
	    json_object_get(json_object_get(r, "metadata"), "created_by"));
	ent = json_pack("{s:s,s:s,s:s,s:O,s:s,s:s}", "id", id, "version",
	    json_string_value(json_object_get(r, "version")) ?
		json_string_value(json_object_get(r, "version")) :
		"0",
	    "sha256", sha, "secrets", json_object_get(r, "secrets"),
	    "created_by",
	    by != NULL && strcmp(by, "agent") == 0 ? "agent" : "person",
	    "installed_at", now);
	if (ent == NULL)
		return -1;
	sbx_plugin_installed_del(doc, id);
	return json_array_append_new(json_object_get(doc, "plugins"), ent);
}

/* mkdirat + open, never through a link; chown'd when uid is not ours. */
static int
mkdir_open(int dfd, const char *name, struct sbx_error *e)
{
	int fd;

	if (mkdirat(dfd, name, 0700) == -1 && errno != EEXIST)
		return sbx_error_sys(e, "mkdir_failed", "cannot create %s",
		    name);
	if ((fd = openat(dfd, name,
		 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return sbx_error_sys(e, "symlink_in_path",
		    "cannot open %s "
		    "(not a directory, or a symbolic link)",
		    name);
	return fd;
}

/* Hand fd to uid:gid (as root) with mode; nothing to do otherwise. */
static int
own(int fd, uid_t uid, gid_t gid, mode_t mode, struct sbx_error *e)
{
	if (geteuid() == 0 && fchown(fd, uid, gid) == -1)
		return sbx_error_sys(e, "chown_failed",
		    "cannot hand a plugin "
		    "file to the sandbox's uid");
	if (fchmod(fd, mode) == -1)
		return sbx_error_sys(e, "chmod_failed",
		    "cannot set a plugin "
		    "file's mode");
	return 0;
}

/* The home's .sbx/plugins, made (and handed to the sandbox's uid) as
 * needed. */
static int
plugin_dirs(int rootfd, const char *agent, uid_t uid, gid_t gid,
    struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX];
	int  home, a, b;

	SBX_LPATH(rel, SBX_L_AGENT_HOME, agent);
	if ((home = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) == -1)
		return -1;
	a = mkdir_open(home, ".sbx", e);
	close(home);
	if (a == -1)
		return -1;
	b = mkdir_open(a, "plugins", e);
	if (b != -1 &&
	    (own(a, uid, gid, 0755, e) == -1 ||
		own(b, uid, gid, 0755, e) == -1)) {
		close(b);
		b = -1;
	}
	close(a);
	return b;
}

/* Write one file of the recipe beneath the plugin directory pfd; the
 * directories on its way are made and listed in dirs (handed over
 * last). */
static int
put_file(int pfd, const char *path, const json_t *text, uid_t uid, gid_t gid,
    struct sbx_error *e)
{
	char	    comp[SBX_RECIPE_PATH_MAX + 1];
	const char *p = path, *q;
	const char *s = json_string_value(text);
	size_t	    n = json_string_length(text);
	int	    dfd, nfd, fd, rc;

	if ((dfd = fcntl(pfd, F_DUPFD_CLOEXEC, 3)) == -1)
		return sbx_error_sys(e, "dup_failed", "plugin directory");
	while ((q = strchr(p, '/')) != NULL) {
		snprintf(comp, sizeof(comp), "%.*s", (int)(q - p), p);
		nfd = mkdir_open(dfd, comp, e);
		if (nfd != -1 && own(nfd, uid, gid, 0755, e) == -1) {
			close(nfd);
			nfd = -1;
		}
		close(dfd);
		if ((dfd = nfd) == -1)
			return -1;
		p = q + 1;
	}
	/* O_EXCL in a directory made afresh: nothing is overwritten, and
	 * a name planted meanwhile fails the install. */
	if ((fd = openat(dfd, p,
		 O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) ==
	    -1) {
		close(dfd);
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    path);
	}
	close(dfd);
	rc = sbx_fs_write_all(fd, s, n) == -1 ?
	    sbx_error_sys(e, "write_failed", "cannot write %s", path) :
	    own(fd, uid, gid, n > 2 && s[0] == '#' && s[1] == '!' ? 0755 : 0644,
		e);
	close(fd);
	return rc;
}

int
sbx_plugin_files_put(int rootfd, const char *agent, const char *id,
    const json_t *recipe, uid_t uid, gid_t gid, struct sbx_error *e)
{
	const char   *k;
	const json_t *v;
	char	     *text, rel[SBX_LAYOUT_PATH_MAX];
	size_t	      n;
	int	      dirs, pfd = -1, rfd = -1, rc = -1;

	if ((dirs = plugin_dirs(rootfd, agent, uid, gid, e)) == -1)
		return -1;
	/* Made afresh: what a previous version (or the agent) left there
	 * goes, links unfollowed (sbx_fs_rm_tree_at). */
	if (sbx_fs_rm_tree_at(dirs, id, e) == -1 ||
	    (pfd = mkdir_open(dirs, id, e)) == -1)
		goto out;
	json_object_foreach ((json_t *)json_object_get(recipe, "files"), k, v)
		if (sbx_recipe_path_valid(k, strlen(k), e) == -1 ||
		    put_file(pfd, k, v, uid, gid, e) == -1)
			goto out;
	if (own(pfd, uid, gid, 0755, e) == -1)
		goto out;
	if ((rfd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_PLUGIN_RECIPES, agent,
		 e)) == -1)
		goto out;
	if ((text = sbx_recipe_canonical(recipe, &n, NULL)) == NULL) {
		sbx_error_sys(e, "nomem", "recipe");
		goto out;
	}
	snprintf(rel, sizeof(rel), "%s.json", id);
	rc = sbx_fs_write_atomic(rfd, rel, text, n, 0600, e);
	free(text);
out:
	if (rfd >= 0)
		close(rfd);
	if (pfd >= 0)
		close(pfd);
	close(dirs);
	return rc;
}

int
sbx_plugin_files_remove(int rootfd, const char *agent, const char *id,
    struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX], name[SBX_RECIPE_ID_MAX + 8];
	int  fd, rc = 0;

	SBX_LPATH(rel, SBX_L_AGENT_PLUGIN_DIRS, agent);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) >= 0) {
		rc = sbx_fs_rm_tree_at(fd, id, e);
		close(fd);
	}
	SBX_LPATH(rel, SBX_L_AGENT_PLUGIN_RECIPES, agent);
	snprintf(name, sizeof(name), "%s.json", id);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) >= 0) {
		if (unlinkat(fd, name, 0) == -1 && errno != ENOENT)
			rc = sbx_error_sys(e, "remove_failed",
			    "cannot "
			    "remove %s/%s",
			    rel, name);
		close(fd);
	}
	return rc;
}

json_t *
sbx_plugin_installed_recipe(int rootfd, const char *agent, const char *id,
    struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	       rel[SBX_LAYOUT_PATH_MAX];
	json_t	      *r;
	size_t	       n;

	SBX_LPATH(rel, SBX_L_AGENT_PLUGIN_RECIPES, agent);
	n = strlen(rel);
	snprintf(rel + n, sizeof(rel) - n, "/%s.json", id);
	if (strchr(id, '/') != NULL ||
	    sbx_fs_read_file_at(rootfd, rel, SBX_RECIPE_MAX + 4096, &b, e) ==
		-1) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "id", "plugin_not_installed",
		    "plugin %s is not installed for agent %s", id, agent);
		sbx_error_hint(e, "sbx plugin install %s --agent %s", id,
		    agent);
		return NULL;
	}
	if ((r = sbx_json_parse(b.p, b.len, SBX_RECIPE_MAX + 4096, e)) == NULL)
		sbx_error_in_file(e, rel,
		    "install the plugin again (sbx "
		    "plugin install %s --agent %s)",
		    id, agent);
	sbx_buf_release(&b);
	return r;
}

json_t *
sbx_plugin_updates(int rootfd, const char *agent)
{
	struct sbx_error e;
	json_t		*doc, *out = json_array(), *p, *r;
	const char	*id, *sha;
	char		 lsha[SBX_RECIPE_SHA_HEX + 1];
	size_t		 i;

	if ((doc = sbx_plugin_installed_read(rootfd, agent, &e)) == NULL)
		return out;
	json_array_foreach (json_object_get(doc, "plugins"), i, p) {
		id = json_string_value(json_object_get(p, "id"));
		sha = json_string_value(json_object_get(p, "sha256"));
		if (id == NULL || sha == NULL)
			continue;
		r = sbx_plugin_lib_get(rootfd, id, lsha, &e);
		if (r == NULL || strcmp(lsha, sha) != 0)
			json_array_append_new(out,
			    json_pack("{s:s,s:s,s:o}", "id", id, "installed",
				sha, "available",
				r != NULL ? json_string(lsha) : json_null()));
		json_decref(r);
	}
	json_decref(doc);
	return out;
}
