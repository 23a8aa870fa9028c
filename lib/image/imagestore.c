/*
 * imagestore.c: the templates under images/ by name and digest: the names
 * map (images/names.json), resolving a reference, listing, removing.
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

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "imagestore.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "provision.h"

#define NAMES_FILE	"names.json"
#define NAMES_MAX	(1u << 20)

/* ---- names -------------------------------------------------------------- */

json_t *
sbx_imagestore_names_load(int imagesfd, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*j, *v;
	const char	*k;

	if (sbx_fs_read_file_at(imagesfd, NAMES_FILE, NAMES_MAX, &b, &e2) ==
	    -1) {
		sbx_buf_release(&b);
		if (e2.kind && strcmp(e2.kind, SBX_K_NOT_FOUND) == 0)
			return json_object();
		*e = e2;
		return NULL;
	}
	j = sbx_json_parse(b.p, b.len, NAMES_MAX, &e2);
	sbx_buf_release(&b);
	if (j != NULL)
		json_object_foreach (j, k, v)
			if (!sbx_names_image_valid(k) ||
			    !sbx_names_digest_valid(json_string_value(v))) {
				json_decref(j);
				j = NULL;
				break;
			}
	if (j == NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "names",
		    "config_invalid", "images/names.json is malformed");
		sbx_error_hint(e, "move it aside and name the templates again "
		    "(sbx provision image add ... --name NAME; the templates "
		    "themselves are kept)");
	}
	return j;
}

int
sbx_imagestore_names_save(int imagesfd, json_t *names, struct sbx_error *e)
{
	char	*s = sbx_envelope_dump(names);
	int	 rc;

	if (s == NULL)
		return sbx_error_sys(e, "nomem", "names");
	rc = sbx_fs_write_atomic(imagesfd, NAMES_FILE, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

int
sbx_imagestore_open(int rootfd, int create, struct sbx_error *e)
{
	/* images/ is opened component-wise without following symlinks: a
	 * planted link never gets a template (or a temp dir) written
	 * through it. */
	if (create)
		return sbx_fs_mkdirs_at(rootfd, "images", 0700, e);
	return sbx_fs_open_beneath(rootfd, "images", O_RDONLY | O_DIRECTORY, e);
}

int
sbx_imagestore_complete(int imagesfd, const char *digest)
{
	char		 rel[SBX_DIGEST_HEX + 32];
	struct stat	 st;

	snprintf(rel, sizeof(rel), "%s/%s", digest, SBX_IMAGE_MANIFEST);
	return fstatat(imagesfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode);
}

/* ---- resolve, list, rm, verify ------------------------------------------ */

int
sbx_imagestore_resolve(int rootfd, const char *ref, int need_complete,
    char digest[SBX_DIGEST_HEX + 1], struct sbx_error *e)
{
	json_t		*names;
	const char	*d = NULL;
	int		 imagesfd;

	if (!sbx_names_digest_valid(ref) && !sbx_names_image_valid(ref))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "image",
		    "invalid_name", "argument `image` must be an image name or "
		    "a sha256 digest");
	if ((imagesfd = sbx_imagestore_open(rootfd, 0, e)) == -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			goto missing;
		return -1;
	}
	if (sbx_names_digest_valid(ref))
		d = ref;
	else {
		if ((names = sbx_imagestore_names_load(imagesfd, e)) == NULL) {
			close(imagesfd);
			return -1;
		}
		if ((d = json_string_value(json_object_get(names, ref))))
			memcpy(digest, d, SBX_DIGEST_HEX + 1);
		json_decref(names);
		d = d ? digest : NULL;
	}
	if (d != NULL &&
	    (!need_complete || sbx_imagestore_complete(imagesfd, d))) {
		if (d != digest)
			memcpy(digest, d, SBX_DIGEST_HEX + 1);
		close(imagesfd);
		return 0;
	}
	close(imagesfd);
missing:
	sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
	    "no image %s in the state root", sbx_names_digest_valid(ref) ?
	    "with that digest" : "of that name");
	sbx_error_hint(e, "add it with `sbx provision image add SOURCE "
	    "--sha256 HEX --name NAME`");
	return -1;
}

json_t *
sbx_imagestore_list(int rootfd, struct sbx_error *e)
{
	json_t		*out = json_array(), *names, *nl, *v;
	char		**dn;
	const char	*k;
	size_t		 n, i;
	int		 imagesfd;

	if (rootfd < 0)
		return out;
	if ((imagesfd = sbx_imagestore_open(rootfd, 0, e)) == -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			return out;
		json_decref(out);
		return NULL;
	}
	if ((names = sbx_imagestore_names_load(imagesfd, e)) == NULL ||
	    (dn = sbx_fs_sorted_names(imagesfd, &n)) == NULL) {
		json_decref(names);
		json_decref(out);
		close(imagesfd);
		return NULL;
	}
	for (i = 0; i < n; i++) {
		if (sbx_names_digest_valid(dn[i])) {
			nl = json_array();
			json_object_foreach (names, k, v)
				if (strcmp(json_string_value(v), dn[i]) == 0)
					json_array_append_new(nl,
					    json_string(k));
			json_array_append_new(out,
			    json_pack("{s:s,s:o,s:b}", "digest", dn[i], "names",
				nl, "complete",
				sbx_imagestore_complete(imagesfd, dn[i])));
		}
		free(dn[i]);
	}
	free(dn);
	json_decref(names);
	close(imagesfd);
	return out;
}

/* The agents bound to digest, in name order. */
static json_t *
bound_agents(int rootfd, const char *digest, struct sbx_error *e)
{
	struct sbx_error e2;
	json_t		*list, *out, *a;
	const char	*name;
	char		 d[SBX_DIGEST_HEX + 1];
	size_t		 i;

	if ((list = sbx_provision_list(rootfd, e)) == NULL)
		return NULL;
	out = json_array();
	json_array_foreach (list, i, a) {
		name = json_string_value(json_object_get(a, "agent"));
		/* A malformed binding names no image: it cannot break. */
		if (name != NULL &&
		    sbx_imageref_agent(rootfd, name, d, &e2) == 1 &&
		    strcmp(d, digest) == 0)
			json_array_append_new(out, json_string(name));
	}
	json_decref(list);
	return out;
}

int
sbx_imagestore_rm(int rootfd, const char *ref, int force, json_t *res,
    struct sbx_error *e)
{
	struct stat	 st;
	json_t		*names, *v, *removed, *gone, *left, *agents = NULL;
	const char	*k;
	void		*tmp;
	char		 digest[SBX_DIGEST_HEX + 1], rel[SBX_DIGEST_HEX + 16];
	int		 imagesfd, lock, rc = -1, by_name, have;

	if (!sbx_names_digest_valid(ref) && !sbx_names_image_valid(ref))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "image",
		    "invalid_name", "argument `image` must be an image name or "
		    "a sha256 digest");
	if ((imagesfd = sbx_imagestore_open(rootfd, 0, e)) == -1)
		return -1;
	if ((lock = sbx_provision_lock(rootfd, e)) == -1) {
		close(imagesfd);
		return -1;
	}
	removed = json_array();
	gone = json_array();
	left = json_array();
	if ((names = sbx_imagestore_names_load(imagesfd, e)) == NULL)
		goto out;
	by_name = !sbx_names_digest_valid(ref);
	if (!by_name)
		memcpy(digest, ref, sizeof(digest));
	else if ((k = json_string_value(json_object_get(names, ref))))
		memcpy(digest, k, sizeof(digest));
	else {
		sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "no image of that name");
		goto out;
	}
	have = fstatat(imagesfd, digest, &st, AT_SYMLINK_NOFOLLOW) == 0;
	if ((agents = bound_agents(rootfd, digest, e)) == NULL)
		goto out;
	json_object_foreach (names, k, v)
		if (strcmp(json_string_value(v), digest) == 0 &&
		    !(by_name && strcmp(k, ref) == 0))
			json_array_append_new(left, json_string(k));

	/*
	 * rm NAME takes that name away; the template itself goes only when
	 * nothing refers to it any more: no other name, no agent bound to
	 * it.  rm DIGEST means the template: refused while an agent is bound
	 * to it.  --force removes the template whatever refers to it, and
	 * says which agents it leaves without their image.
	 */
	if (!by_name && !force && json_array_size(agents) > 0) {
		sbx_error_set(e, SBX_K_REJECTED, "image", "image_in_use",
		    "image %.12s is bound to %zu agent%s (%s%s)", digest,
		    json_array_size(agents), json_array_size(agents) == 1 ?
		    "" : "s", json_string_value(json_array_get(agents, 0)),
		    json_array_size(agents) > 1 ? ", ..." : "");
		sbx_error_hint(e, "bind the agents to another image first, or "
		    "remove it anyway with --force");
		goto out;
	}
	if (!have && by_name == 0 && json_array_size(left) == 0) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "no image with that digest");
		goto out;
	}
	if (by_name) {
		json_object_del(names, ref);
		json_array_append_new(gone, json_string(ref));
	}
	if (have && (force || !by_name || (json_array_size(left) == 0 &&
	    json_array_size(agents) == 0))) {
		if (sbx_provision_rm_tree(imagesfd, digest, e) == -1)
			goto out;
		SBX_LPATH(rel, SBX_L_IMAGE, digest);
		json_array_append_new(removed, json_string(rel));
		have = 0;
	}
	if (!have) {
		/* No template: no name may point at it any more. */
		json_object_foreach_safe (names, tmp, k, v)
			if (strcmp(json_string_value(v), digest) == 0) {
				/* k is the object's own key: freed by the
				 * delete, so recorded first. */
				json_array_append_new(gone, json_string(k));
				json_object_del(names, k);
			}
		json_array_clear(left);
	}
	if (json_array_size(gone) > 0 &&
	    sbx_imagestore_names_save(imagesfd, names, e) == -1)
		goto out;
	json_object_set_new(res, "digest", json_string(digest));
	json_object_set(res, "removed", removed);
	json_object_set(res, "names_removed", gone);
	json_object_set_new(res, "template",
	    json_string(have ? "kept" : "removed"));
	json_object_set(res, "names_left", left);
	json_object_set(res, have ? "agents_bound" : "broken_agents", agents);
	rc = 0;
out:
	json_decref(names);
	json_decref(removed);
	json_decref(gone);
	json_decref(left);
	json_decref(agents);
	close(lock);
	close(imagesfd);
	return rc;
}
