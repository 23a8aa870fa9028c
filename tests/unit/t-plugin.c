/* t-plugin: the plugin library and the per-agent records (lib/state/
 * plugin.c) in a scratch state root: put, get, list, rm, an agent's
 * recipe never replacing a person's, plugins.json, the files written
 * afresh without following a planted link, updates. */
#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "fsutil.h"
#include "plugin.h"
#include "recipe.h"

static json_t *
checked(const char *text, unsigned flags)
{
	struct sbx_error e;
	json_error_t	 je;
	json_t		*in = json_loads(text, 0, &je), *r;

	r = sbx_recipe_check(in, flags, NULL, NULL, &e);
	json_decref(in);
	if (r == NULL)
		diag("recipe refused: %s", e.message);
	return r;
}

int
main(void)
{
	struct sbx_error e;
	struct stat	 st;
	json_t		*r, *got, *l, *doc, *u, *res;
	char		 dir[] = "/tmp/t-plugin.XXXXXX", path[PATH_MAX];
	char		 id[SBX_RECIPE_ID_MAX + 1], sha[65], sha2[65];
	int		 rootfd, replaced;

	if ((rootfd = t_tmpdir(dir)) == -1)
		skip_all("mkdtemp failed");
	snprintf(path, sizeof(path), "%s/workspace/agents/a", dir);
	ok(sbx_fs_mkdirs_at(rootfd, "workspace/agents/a", 0700, &e) >= 0,
	    "a home");

	r = checked(
	    "{\"name\":\"My Tool\",\"description\":\"d\",\"files\":"
	    "{\"bin/run.sh\":\"#!/bin/sh\\necho hi\\n\",\"README\":\"x\"},"
	    "\"tools\":[{\"id\":\"go\",\"description\":\"d\",\"run\":"
	    "\"bin/run.sh\"}]}",
	    0);
	ok(r != NULL, "a recipe");
	ok(sbx_plugin_lib_put(rootfd, r, id, sha, &replaced, &e) == 0 &&
		strcmp(id, "my-tool") == 0 && !replaced,
	    "put: id my-tool");
	got = sbx_plugin_lib_get(rootfd, "my-tool", sha2, &e);
	ok(got != NULL && json_equal(got, r) && strcmp(sha, sha2) == 0,
	    "get: the same recipe, the same hash");
	json_decref(got);
	ok(sbx_plugin_lib_get(rootfd, "nope", sha2, &e) == NULL &&
		strcmp(e.kind, "not_found") == 0,
	    "get of an absent id: not_found");
	ok(sbx_plugin_lib_get(rootfd, "../x", sha2, &e) == NULL &&
		strcmp(e.kind, "invalid_args") == 0,
	    "get of a path: invalid_args");
	ok(sbx_plugin_lib_put(rootfd, r, id, sha, &replaced, &e) == 0 &&
		!replaced,
	    "the same recipe again: not a replacement");

	/* An agent's recipe of the same name: id_taken, nothing changed. */
	u = json_pack("{s:s,s:s,s:[{s:s,s:s,s:s}]}", "name", "my-tool",
	    "description", "agent's", "tools", "id", "x", "description", "d",
	    "run", "true");
	ok(sbx_plugin_register(rootfd, "a", u, NULL, NULL, &res, &e) == -1 &&
		strcmp(e.reason, "id_taken") == 0,
	    "register over a person's "
	    "recipe: id_taken");
	got = sbx_plugin_lib_get(rootfd, "my-tool", sha2, &e);
	ok(got != NULL && strcmp(sha, sha2) == 0,
	    "the person's recipe is "
	    "unchanged");
	json_decref(got);
	json_object_set_new(u, "name", json_string("agents-own"));
	ok(sbx_plugin_register(rootfd, "a", u, NULL, NULL, &res, &e) == 0,
	    "register of a new name");
	is_str(json_string_value(json_object_get(res, "created_by")), "agent",
	    "created_by agent");
	json_decref(res);
	ok(sbx_plugin_register(rootfd, "a", u, NULL, NULL, &res, &e) == 0,
	    "the same agent updates its own");
	json_decref(res);
	ok(sbx_plugin_register(rootfd, "b", u, NULL, NULL, &res, &e) == -1 &&
		strcmp(e.reason, "id_taken") == 0,
	    "another agent may not");
	json_decref(u);

	l = sbx_plugin_lib_list(rootfd, &e);
	ok(l != NULL && json_array_size(l) == 2 &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(l, 0), "id")),
		    "agents-own") == 0,
	    "list: two, sorted by id");
	json_decref(l);

	/* Per agent: the record, the files, updates. */
	doc = sbx_plugin_installed_read(rootfd, "a", &e);
	ok(doc != NULL && json_array_size(json_object_get(doc, "plugins")) == 0,
	    "no record: empty");
	ok(sbx_plugin_installed_set(doc, r, "my-tool", sha) == 0 &&
		sbx_plugin_installed_write(rootfd, "a", doc, &e) == 0,
	    "record written");
	json_decref(doc);
	doc = sbx_plugin_installed_read(rootfd, "a", &e);
	got = sbx_plugin_installed_find(doc, "my-tool");
	ok(got != NULL &&
		strcmp(json_string_value(json_object_get(got, "sha256")),
		    sha) == 0 &&
		json_object_size(got) == 6,
	    "record read back: six keys, the hash");
	/* A link planted where the plugin's directory goes. */
	snprintf(path, sizeof(path), "%s/workspace/agents/a/.sbx/plugins", dir);
	ok(sbx_fs_mkdirs_at(rootfd, "workspace/agents/a/.sbx/plugins", 0700,
	       &e) >= 0,
	    "the home's plugin directory");
	snprintf(path, sizeof(path),
	    "%s/workspace/agents/a/.sbx/plugins/"
	    "my-tool",
	    dir);
	ok(symlink("/", path) == 0, "a link planted at my-tool");
	ok(sbx_plugin_files_put(rootfd, "a", "my-tool", r, getuid(), getgid(),
	       &e) == 0,
	    "files put");
	ok(lstat(path, &st) == 0 && S_ISDIR(st.st_mode),
	    "the link is gone, "
	    "a directory made");
	snprintf(path, sizeof(path),
	    "%s/workspace/agents/a/.sbx/plugins/"
	    "my-tool/bin/run.sh",
	    dir);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0755,
	    "#! file: 0755");
	snprintf(path, sizeof(path),
	    "%s/workspace/agents/a/.sbx/plugins/"
	    "my-tool/README",
	    dir);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0644,
	    "other file: 0644");
	got = sbx_plugin_installed_recipe(rootfd, "a", "my-tool", &e);
	ok(got != NULL && json_equal(got, r), "the installed copy");
	json_decref(got);
	u = sbx_plugin_updates(rootfd, "a");
	ok(json_array_size(u) == 0, "no update");
	json_decref(u);
	json_object_set_new(r, "version", json_string("2"));
	ok(sbx_plugin_lib_put(rootfd, r, id, sha2, &replaced, &e) == 0 &&
		replaced,
	    "a new version: replaced");
	u = sbx_plugin_updates(rootfd, "a");
	ok(json_array_size(u) == 1 &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(u, 0), "available")),
		    sha2) == 0,
	    "an update is available");
	json_decref(u);
	got = sbx_plugin_installed_recipe(rootfd, "a", "my-tool", &e);
	ok(got != NULL && json_object_get(got, "version") == NULL,
	    "the installed copy is still the old one");
	json_decref(got);
	ok(sbx_plugin_lib_rm(rootfd, "my-tool", &e) == 1 &&
		sbx_plugin_lib_rm(rootfd, "my-tool", &e) == 0,
	    "rm: 1, then 0");
	u = sbx_plugin_updates(rootfd, "a");
	ok(json_array_size(u) == 1 &&
		json_is_null(
		    json_object_get(json_array_get(u, 0), "available")),
	    "gone from the library: "
	    "available null");
	json_decref(u);
	ok(sbx_plugin_files_remove(rootfd, "a", "my-tool", &e) == 0 &&
		sbx_plugin_installed_del(doc, "my-tool") == 1 &&
		sbx_plugin_installed_del(doc, "my-tool") == 0,
	    "removed");
	ok(sbx_plugin_installed_recipe(rootfd, "a", "my-tool", &e) == NULL &&
		strcmp(e.reason, "plugin_not_installed") == 0,
	    "not installed");
	json_decref(doc);
	json_decref(r);
	close(rootfd);
	sbx_fs_rm_tree_at(AT_FDCWD, dir, &e);
	return done_testing();
}
