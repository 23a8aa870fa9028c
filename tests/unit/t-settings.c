/* t-settings: the settings read once per process (lib/state/settings.c):
 * the same document for every reader while the file is the same, the new
 * one once it changed, the layout's paths in the errors, and nothing
 * kept that a later refusal would have to be bypassed for. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "fsutil.h"
#include "settings.h"

static char	 root[64], root2[64];

static int
put(int dfd, const char *rel, const char *text)
{
	int	 fd, rc;

	if ((fd = openat(dfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1)
		return -1;
	rc = sbx_fs_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

/* What `sbx config` does: a new file renamed over the old one. */
static int
replace(int dfd, const char *dir, const char *name, const char *text)
{
	struct sbx_error e;
	int		 fd, rc;

	if ((fd = openat(dfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	rc = sbx_fs_write_atomic(fd, name, text, strlen(text), 0600, &e);
	close(fd);
	return rc;
}

static long long
val(const json_t *doc, const char *key)
{
	return json_integer_value(json_object_get(doc, key));
}

static int
is_err(const struct sbx_error *e, const char *start)
{
	int	 good;

	good = e->kind != NULL && strcmp(e->kind, SBX_K_INVALID_ARGS) == 0 &&
	    e->reason != NULL && strcmp(e->reason, "config_invalid") == 0 &&
	    strncmp(e->message, start, strlen(start)) == 0;
	if (!good)
		diag("  got kind %s reason %s: %s",
		    e->kind ? e->kind : "(null)",
		    e->reason ? e->reason : "(null)", e->message);
	return good;
}

static void
test_global(int dfd, int dfd2)
{
	struct sbx_error e;
	json_t		*a, *b, *c;

	memset(&e, 0, sizeof(e));
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == 0 && a == NULL,
	    "no config/: no settings, no error");
	(void)mkdirat(dfd, "config", 0700);
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == 0 && a == NULL,
	    "no config/sandbox.json: no settings, no error");

	put(dfd, "config/sandbox.json", "{\"n\": 1}");
	a = b = NULL;
	ok(sbx_settings_global(dfd, &a, &e) == 0 && val(a, "n") == 1,
	    "the file is read");
	ok(sbx_settings_global(dfd, &b, &e) == 0 && b == a,
	    "read once: a second reader gets the same document");
	json_decref(b);

	/* Replaced as sbx config replaces it: read again. */
	replace(dfd, "config", "sandbox.json", "{\"n\": 2}");
	ok(sbx_settings_global(dfd, &b, &e) == 0 && b != a &&
	    val(b, "n") == 2, "a replaced file is read again");
	ok(val(a, "n") == 1, "the document an earlier reader holds is "
	    "left as it was");
	json_decref(a);
	json_decref(b);

	/* Edited in place (another size): read again. */
	put(dfd, "config/sandbox.json", "{\"n\": 333}");
	ok(sbx_settings_global(dfd, &a, &e) == 0 && val(a, "n") == 333,
	    "a file edited in place is read again");
	json_decref(a);

	/* Another root, the same relative path: its own document. */
	(void)mkdirat(dfd2, "config", 0700);
	put(dfd2, "config/sandbox.json", "{\"n\": 4}");
	ok(sbx_settings_global(dfd2, &c, &e) == 0 && val(c, "n") == 4 &&
	    sbx_settings_global(dfd, &a, &e) == 0 && val(a, "n") == 333,
	    "each state root has its own settings");
	json_decref(a);
	json_decref(c);

	/* Broken after it was kept: refused as a first read would be. */
	put(dfd, "config/sandbox.json", "{\"n\": ");
	memset(&e, 0, sizeof(e));
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == -1 && a == NULL &&
	    is_err(&e, "config/sandbox.json: "),
	    "malformed JSON: config_invalid, naming config/sandbox.json");
	ok(strstr(e.hint, "sbx config") != NULL,
	    "with the hint of the loader");

	/* A symlink planted where the kept file was: refused, never the
	 * kept document. */
	put(dfd, "config/sandbox.json", "{\"n\": 5}");
	ok(sbx_settings_global(dfd, &a, &e) == 0 && val(a, "n") == 5,
	    "read again once repaired");
	json_decref(a);
	put(dfd, "elsewhere.json", "{\"n\": 6}");
	(void)unlinkat(dfd, "config/sandbox.json", 0);
	(void)!symlinkat("../elsewhere.json", dfd, "config/sandbox.json");
	memset(&e, 0, sizeof(e));
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == -1 && a == NULL &&
	    is_err(&e, "config/sandbox.json: "),
	    "a symlink in the file's place is refused");
	(void)unlinkat(dfd, "config/sandbox.json", 0);
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == 0 && a == NULL,
	    "a removed file: no settings again");

	/* Larger than a settings file may be: refused from the one
	 * descriptor the cache opened, in the loader's words. */
	{
		int	fd = openat(dfd, "config/sandbox.json",
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		ok(fd >= 0 && ftruncate(fd, SBX_SETTINGS_MAX + 1) == 0,
		    "a settings file of 1 MiB and a byte");
		if (fd >= 0)
			close(fd);
	}
	memset(&e, 0, sizeof(e));
	a = (json_t *)&e;
	ok(sbx_settings_global(dfd, &a, &e) == -1 && a == NULL &&
	    is_err(&e, "config/sandbox.json: ") &&
	    strstr(e.message, "larger than") != NULL,
	    "too large: config_invalid, naming the file");
	(void)unlinkat(dfd, "config/sandbox.json", 0);
}

static void
test_agent(int dfd)
{
	struct sbx_error e;
	json_t		*a, *b;

	(void)mkdirat(dfd, "config/agents", 0700);
	put(dfd, "config/agents/a1.json", "{\"n\": 7}");
	put(dfd, "config/agents/a2.json", "{\"n\": 8}");
	ok(sbx_settings_agent(dfd, "a1", &a, &e) == 0 && val(a, "n") == 7 &&
	    sbx_settings_agent(dfd, "a2", &b, &e) == 0 && val(b, "n") == 8,
	    "each agent's own file");
	json_decref(b);
	ok(sbx_settings_agent(dfd, "a1", &b, &e) == 0 && a == b,
	    "an agent's settings are read once too");
	json_decref(a);
	json_decref(b);
	put(dfd, "config/agents/a1.json", "[]");
	memset(&e, 0, sizeof(e));
	ok(sbx_settings_agent(dfd, "a1", &a, &e) == -1 &&
	    is_err(&e, "config/agents/a1.json: "),
	    "a broken agent file names its layout path");
	memset(&e, 0, sizeof(e));
	a = (json_t *)&e;
	ok(sbx_settings_agent(dfd, "../a1", &a, &e) == -1 && a == NULL,
	    "a name with a slash opens nothing");
}

static void
cleanup(void)
{
	struct sbx_error e;
	int		 tmp;

	if ((tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return;
	if (root[0] != '\0')
		(void)sbx_fs_rm_tree_at(tmp, root + 5, &e);
	if (root2[0] != '\0')
		(void)sbx_fs_rm_tree_at(tmp, root2 + 5, &e);
	close(tmp);
}

int
main(void)
{
	int	 dfd, dfd2;

	atexit(cleanup);
	snprintf(root, sizeof(root), "/tmp/t-settings.XXXXXX");
	snprintf(root2, sizeof(root2), "/tmp/t-settings.XXXXXX");
	if (mkdtemp(root) == NULL || mkdtemp(root2) == NULL ||
	    (dfd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (dfd2 = open(root2, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		skip_all("no temp dir: %s", strerror(errno));
	test_global(dfd, dfd2);
	test_agent(dfd);
	close(dfd);
	close(dfd2);
	return done_testing();
}
