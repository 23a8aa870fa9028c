/* config.c: `sbx config`'s edits of the settings users edit (the schema
 * they are judged by: lib/service/cfgcheck.c). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "config.h"
#include "fsutil.h"
#include "layout.h"
#include "names.h"
#include "settings.h"
#include "utf8.h"

/* ---- the document ------------------------------------------------------- */

/* The object holding the last component of key, and that component;
 * create: intermediate objects are made.  NULL when a component on the
 * way is not an object (or is absent and !create). */
static json_t *
parent_of(json_t *doc, const char *key, int create, char *leaf,
    size_t leafsz)
{
	const char	*p = key, *dot;
	char		 part[128];
	json_t		*o = doc, *next;
	size_t		 n;

	while ((dot = strchr(p, '.')) != NULL) {
		n = (size_t)(dot - p);
		if (n == 0 || n >= sizeof(part))
			return NULL;
		memcpy(part, p, n);
		part[n] = '\0';
		next = json_object_get(o, part);
		if (next == NULL) {
			if (!create)
				return NULL;
			next = json_object();
			if (json_object_set_new(o, part, next) == -1)
				return NULL;
		}
		if (!json_is_object(next))
			return NULL;
		o = next;
		p = dot + 1;
	}
	if (*p == '\0' || strlen(p) >= leafsz)
		return NULL;
	snprintf(leaf, leafsz, "%s", p);
	return o;
}

json_t *
sbx_cfg_get(const json_t *doc, const char *key)
{
	char	 leaf[128];
	json_t	*o;

	if (doc == NULL || (o = parent_of((json_t *)doc, key, 0, leaf,
	    sizeof(leaf))) == NULL)
		return NULL;
	return json_object_get(o, leaf);
}

/* Remove the empty objects left on the way to key, deepest first. */
static void
prune(json_t *doc, const char *key)
{
	char	 path[256], *dot;
	json_t	*o;

	snprintf(path, sizeof(path), "%s", key);
	while ((dot = strrchr(path, '.')) != NULL) {
		*dot = '\0';
		o = sbx_cfg_get(doc, path);
		if (o == NULL || !json_is_object(o) || json_object_size(o) > 0)
			return;
		{
			char	 leaf[128];
			json_t	*p = parent_of(doc, path, 0, leaf,
				    sizeof(leaf));

			if (p != NULL)
				json_object_del(p, leaf);
		}
	}
}

static int
not_object(const char *key, struct sbx_error *e)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "key", "config_invalid",
	    "a part of `%s` is set but is not an object", key);
}

int
sbx_cfg_put(json_t *doc, const char *key, json_t *value,
    struct sbx_error *e)
{
	char	 leaf[128];
	json_t	*o, *cur;

	if (value == NULL) {
		if ((o = parent_of(doc, key, 0, leaf, sizeof(leaf))) == NULL ||
		    json_object_get(o, leaf) == NULL)
			return 0;
		json_object_del(o, leaf);
		prune(doc, key);
		return 1;
	}
	if ((o = parent_of(doc, key, 1, leaf, sizeof(leaf))) == NULL) {
		json_decref(value);
		return not_object(key, e);
	}
	cur = json_object_get(o, leaf);
	if (cur != NULL && json_equal(cur, value)) {
		json_decref(value);
		return 0;
	}
	json_object_set_new(o, leaf, value);
	return 1;
}

static int
not_array(const char *key, struct sbx_error *e)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "key", "config_invalid",
	    "`%s` is set but is not an array", key);
}

int
sbx_cfg_add(json_t *doc, const char *key, json_t *elem, struct sbx_error *e)
{
	json_t	*a, *v;
	size_t	 i;

	if ((a = sbx_cfg_get(doc, key)) == NULL) {
		a = json_array();
		json_array_append_new(a, elem);
		return sbx_cfg_put(doc, key, a, e);
	}
	/* A list given as one string (install.registries.npm written as
	 * npm's own `registry` is) is a list of that one string. */
	if (json_is_string(a) && json_is_string(elem)) {
		if (json_equal(a, elem)) {
			json_decref(elem);
			return 0;
		}
		v = json_array();
		json_array_append(v, a);
		json_array_append_new(v, elem);
		return sbx_cfg_put(doc, key, v, e);
	}
	if (!json_is_array(a)) {
		json_decref(elem);
		return not_array(key, e);
	}
	json_array_foreach(a, i, v)
		if (json_equal(v, elem)) {
			json_decref(elem);
			return 0;
		}
	json_array_append_new(a, elem);
	return 1;
}

int
sbx_cfg_rm(json_t *doc, const char *key, const json_t *elem,
    struct sbx_error *e)
{
	json_t	*a;
	size_t	 i;
	int	 changed = 0;

	if ((a = sbx_cfg_get(doc, key)) == NULL)
		return 0;
	/* One string: a list of one (sbx_cfg_add). */
	if (json_is_string(a))
		return json_equal(a, elem) ? sbx_cfg_put(doc, key, NULL, e) : 0;
	if (!json_is_array(a))
		return not_array(key, e);
	for (i = json_array_size(a); i-- > 0;)
		if (json_equal(json_array_get(a, i), elem)) {
			json_array_remove(a, i);
			changed = 1;
		}
	return changed;
}

json_t *
sbx_cfg_parse_value(const struct sbx_cfg_key *k, const char *s,
    int json_value, struct sbx_error *e)
{
	json_error_t	 je;
	json_t		*v;
	char		*end;
	long long	 ll;
	double		 d;

	if (json_value) {
		if ((v = json_loads(s, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES,
		    &je)) == NULL)
			sbx_error_set(e, SBX_K_INVALID_ARGS, "value",
			    "invalid_json", "--json-value: %s", je.text);
		return v;
	}
	if (k->type == SBX_CFG_OBJECT) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "value", "needs_json",
		    "`%s` is an object: give it with --json-value", k->key);
		return NULL;
	}
	switch (k->type) {
	case SBX_CFG_INT:
	case SBX_CFG_INTS:
	case SBX_CFG_NUMBER:
		errno = 0;
		ll = strtoll(s, &end, 10);
		if (*s != '\0' && *end == '\0' && errno == 0)
			return json_integer((json_int_t)ll);
		errno = 0;
		d = strtod(s, &end);
		if (*s != '\0' && *end == '\0' && errno == 0 && isfinite(d))
			return json_real(d);
		break;
	case SBX_CFG_BOOL:
		if (strcmp(s, "true") == 0)
			return json_true();
		if (strcmp(s, "false") == 0)
			return json_false();
		break;
	default:
		break;
	}
	/* As given: what does not read as the type is left to the loader,
	 * which refuses it as a run would. */
	if ((v = json_stringn(s, strlen(s))) == NULL)
		sbx_error_set(e, SBX_K_INVALID_ARGS, "value", "invalid_utf8",
		    "the value of `%s` is not valid UTF-8", k->key);
	return v;
}

/* ---- the files ---------------------------------------------------------- */

int
sbx_cfg_path(const char *agent, char *rel, size_t relsz, struct sbx_error *e)
{
	if (agent == NULL)
		return sbx_layout_path(SBX_L_SANDBOX_JSON, NULL, rel, relsz, e);
	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	return sbx_layout_path(SBX_L_AGENT_CONFIG, agent, rel, relsz, e);
}

int
sbx_cfg_load(int rootfd, const char *agent, json_t **doc, struct sbx_error *e)
{
	char	 rel[128];

	*doc = NULL;
	if (sbx_cfg_path(agent, rel, sizeof(rel), e) == -1)
		return -1;
	if (rootfd >= 0 && sbx_settings_load(rootfd, rel, doc, e) == -1)
		return -1;
	if (*doc != NULL && !json_is_object(*doc)) {
		json_decref(*doc);
		*doc = NULL;
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: settings must be an object", rel);
	}
	if (*doc == NULL && (*doc = json_object()) == NULL)
		return sbx_error_sys(e, "nomem", "%s", rel);
	return 0;
}

int
sbx_cfg_store(int rootfd, const char *agent, const json_t *doc,
    struct sbx_error *e)
{
	char	 rel[128], *s;
	int	 dfd, rc;

	if (sbx_cfg_path(agent, rel, sizeof(rel), e) == -1)
		return -1;
	/* Component by component, no symlink followed: a link planted as
	 * config/ or config/agents/ never redirects the write. */
	if ((dfd = sbx_fs_mkdirs_at(rootfd, agent ? "config/agents" : "config",
	    0700, e)) == -1)
		return -1;
	if ((s = json_dumps(doc, JSON_INDENT(2) | JSON_SORT_KEYS)) == NULL) {
		close(dfd);
		return sbx_error_sys(e, "nomem", "%s", rel);
	}
	{
		size_t	 n = strlen(s);
		char	*t = realloc(s, n + 2);

		if (t == NULL) {
			free(s);
			close(dfd);
			return sbx_error_sys(e, "nomem", "%s", rel);
		}
		s = t;
		s[n] = '\n';
		s[n + 1] = '\0';
	}
	rc = sbx_fs_write_atomic(dfd, strrchr(rel, '/') + 1, s, strlen(s), 0600,
	    e);
	free(s);
	close(dfd);
	return rc;
}

int
sbx_cfg_value_text(const json_t *v, struct sbx_buf *out)
{
	const json_t *it;
	char	     *s;
	size_t	      i;
	int	      rc;

	if (json_is_string(v))
		return sbx_utf8_escape_line(out, json_string_value(v),
			   json_string_length(v)) == 0 ?
		    sbx_buf_puts(out, "\n") :
		    -1;
	if (json_is_array(v)) {
		json_array_foreach (v, i, it)
			if (sbx_cfg_value_text(it, out) == -1)
				return -1;
		return 0;
	}
	if ((s = json_dumps(v,
		 JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY)) == NULL)
		return -1;
	rc = sbx_utf8_escape_line(out, s, strlen(s)) == 0 ?
	    sbx_buf_puts(out, "\n") :
	    -1;
	free(s);
	return rc;
}
