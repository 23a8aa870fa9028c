/* complete.c: candidates for the shell completions (complete.h). */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "complete.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "names.h"
#include "provision.h"
#include "root.h"

/* Largest images/names.json read (as image.c). */
#define NAMES_MAX	(1u << 20)

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
sort(struct sbx_strv *v)
{
	if (v->n > 1)
		qsort(v->v, v->n, sizeof(*v->v), cmp_str);
}

/* The state root, opened without creating it: 0, 1 when it does not
 * exist (nothing to offer), -1 on error. */
static int
open_root(const char *home, struct sbx_root *r, struct sbx_error *e)
{
	if (sbx_root_resolve(home, r, e) == -1)
		return -1;
	if (sbx_root_open(r, 0, e) == -1) {
		if (e->kind != NULL && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			return 1;
		return -1;
	}
	return 0;
}

int
sbx_complete_agents(const char *home, struct sbx_strv *out, struct sbx_error *e)
{
	struct sbx_root	 r = SBX_ROOT_INIT;
	json_t		*list, *row;
	const char	*a;
	size_t		 i;
	int		 rc;

	if ((rc = open_root(home, &r, e)) != 0) {
		sbx_root_release(&r);
		return rc == 1 ? 0 : -1;
	}
	list = sbx_provision_list(r.fd, e);
	sbx_root_release(&r);
	if (list == NULL)
		return -1;
	rc = 0;
	for (i = 0; i < json_array_size(list); i++) {
		row = json_array_get(list, i);
		a = json_string_value(json_object_get(row, "agent"));
		if (a != NULL && sbx_names_agent_valid(a, "agent", e) == 0 &&
		    sbx_strv_push(out, a) == -1)
			rc = sbx_error_sys(e, "nomem", "agents");
	}
	json_decref(list);
	sort(out);
	return rc;
}

/* The NAME of each DIR/NAME.json beneath the root that valid() accepts,
 * sorted; none when the directory is not there. */
static int
json_names(const char *home, const char *rel, int (*valid)(const char *),
    struct sbx_strv *out, struct sbx_error *e)
{
	struct sbx_root	 r = SBX_ROOT_INIT;
	struct sbx_error e2;
	struct dirent	*de;
	DIR		*d;
	char		 id[64];
	size_t		 n;
	int		 fd, rc;

	if ((rc = open_root(home, &r, e)) != 0) {
		sbx_root_release(&r);
		return rc == 1 ? 0 : -1;
	}
	fd = sbx_fs_open_beneath(r.fd, rel, O_RDONLY | O_DIRECTORY, &e2);
	sbx_root_release(&r);
	if (fd == -1)
		return 0;	/* none yet */
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return sbx_error_sys(e, "complete", "cannot read %s", rel);
	}
	rc = 0;
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (n < 6 || n - 5 >= sizeof(id) ||
		    strcmp(de->d_name + n - 5, ".json") != 0)
			continue;
		memcpy(id, de->d_name, n - 5);
		id[n - 5] = '\0';
		if (valid(id) && sbx_strv_push(out, id) == -1)
			rc = sbx_error_sys(e, "nomem", "%s", rel);
	}
	closedir(d);
	sort(out);
	return rc;
}

static int
job_ok(const char *id)
{
	struct sbx_error e;

	return sbx_names_job_id_valid(id, &e) == 0;
}

static int
plugin_ok(const char *id)
{
	struct sbx_error e;

	return sbx_names_agent_valid(id, "id", &e) == 0;
}

int
sbx_complete_jobs(const char *home, const char *agent, struct sbx_strv *out,
    struct sbx_error *e)
{
	char	 rel[128];

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_JOBS, agent);
	return json_names(home, rel, job_ok, out, e);
}

int
sbx_complete_plugins(const char *home, struct sbx_strv *out,
    struct sbx_error *e)
{
	return json_names(home, "plugins", plugin_ok, out, e);
}

int
sbx_complete_images(const char *home, struct sbx_strv *out, struct sbx_error *e)
{
	struct sbx_root	 r = SBX_ROOT_INIT;
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*names;
	const char	*k;
	void		*it;
	int		 rc;

	if ((rc = open_root(home, &r, e)) != 0) {
		sbx_root_release(&r);
		return rc == 1 ? 0 : -1;
	}
	rc = sbx_fs_read_file_at(r.fd, "images/names.json", NAMES_MAX, &b, &e2);
	sbx_root_release(&r);
	if (rc == -1) {
		sbx_buf_release(&b);
		return 0;	/* no names yet */
	}
	names = sbx_json_parse(b.p, b.len, NAMES_MAX, e);
	sbx_buf_release(&b);
	if (names == NULL)
		return -1;
	rc = 0;
	for (it = json_object_iter(names); it != NULL;
	    it = json_object_iter_next(names, it)) {
		k = json_object_iter_key(it);
		if (sbx_names_image_valid(k) && sbx_strv_push(out, k) == -1)
			rc = sbx_error_sys(e, "nomem", "images");
	}
	json_decref(names);
	sort(out);
	return rc;
}
