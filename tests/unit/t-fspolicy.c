/* t-fspolicy: the file-system policy's configuration, entries and plan. */
#include <sys/stat.h>

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "fspolicy.h"
#include "initproto.h"

/* mkdir -p dir of rel beneath base, then rel itself: a file, or a
 * directory when it ends in /. */
static void
mk(const char *base, const char *rel)
{
	char	 path[PATH_MAX];
	size_t	 i, n;

	n = (size_t)snprintf(path, sizeof(path), "%s/%s", base, rel);
	for (i = strlen(base) + 1; i < n; i++)
		if (path[i] == '/') {
			path[i] = '\0';
			mkdir(path, 0755);
			path[i] = '/';
		}
	if (path[n - 1] != '/')
		close(open(path, O_WRONLY | O_CREAT, 0644));
}

static json_t *
js(const char *s)
{
	return json_loads(s, 0, NULL);
}

static int
has(const struct sbx_strv *v, const char *s)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return 1;
	return 0;
}

/* Is the triple (op, a, b) among v's? */
static int
has3(const struct sbx_strv *v, const char *op, const char *a, const char *b)
{
	size_t	 i;

	for (i = 0; i + 2 < v->n; i++)
		if (strcmp(v->v[i], op) == 0 && strcmp(v->v[i + 1], a) == 0 &&
		    strcmp(v->v[i + 2], b) == 0)
			return 1;
	return 0;
}

int
main(void)
{
	static const char *const bad[] = {
		"{\"protected_paths\": \"x\"}",
		"{\"protected_paths\": [\"/abs\"]}",
		"{\"protected_paths\": [\"a/../b\"]}",
		"{\"protected_paths\": [\"\"]}",
		"{\"protected_paths\": [1]}",
		"{\"read_paths\": [\"rel\"]}",
		"{\"read_paths\": [\"/\"]}",
		"{\"read_paths\": [\"/a/../b\"]}",
		"{\"deny_paths\": [\"../up\"]}",
		"{\"allow_unix_sockets\": [\"run/x.sock\"]}",
		"{\"allow_git_config\": 1}",
		"{\"git_search_limit\": -1}",
		"{\"git_search_limit\": \"9\"}",
	};
	static const char *const good[] = {
		"{}",
		"{\"protected_paths\": [\"Makefile\", \"*.env\", \"ci/x\"]}",
		"{\"read_paths\": [\"/opt/tool\"], \"deny_paths\": "
		"[\"secrets\", \"/data/private\"]}",
		"{\"allow_unix_sockets\": [\"/run/x.sock\"], "
		"\"allow_git_config\": true}",
	};
	struct sbx_strv	    ent = SBX_STRV_INIT;
	struct sbx_fspolicy p;
	struct sbx_error    e;
	struct stat	    st;
	char		    tmpl[] = "/tmp/t-fspolicy.XXXXXX", buf[PATH_MAX];
	char		   *un[] = { ".envrc" }, *bogus[] = { "nope" };
	char		   *roots[1];
	json_t		   *cfg;
	size_t		    i;
	int		    fd;

	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		cfg = js(bad[i]);
		ok(sbx_fspolicy_config_check(cfg, "A.json", &e) == -1 &&
			strcmp(e.reason, "config_invalid") == 0,
		    "refused: %s", bad[i]);
		json_decref(cfg);
	}
	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		cfg = js(good[i]);
		ok(sbx_fspolicy_config_check(cfg, "A.json", &e) == 0,
		    "accepted: %s", good[i]);
		json_decref(cfg);
	}

	/* Entries: defaults, allow_git_config, unprotect, additions. */
	ok(sbx_fspolicy_entries(NULL, NULL, 0, &ent, &e) == 0 &&
	    has(&ent, ".git") && has(&ent, ".envrc") && has(&ent, ".ssh") &&
	    !has(&ent, "/config"),
	    "defaults: the git rule (.git), no exemption");
	sbx_strv_release(&ent);
	cfg = js("{\"allow_git_config\": true, \"protected_paths\": "
	    "[\"Makefile/\"]}");
	ok(sbx_fspolicy_entries(cfg, un, 1, &ent, &e) == 0 &&
	    has(&ent, "/config") && has(&ent, ".git") && !has(&ent, ".envrc") &&
	    has(&ent, "Makefile") && !has(&ent, "/hooks"),
	    "allow_git_config (config exempt), --unprotect .envrc, "
	    "protected_paths");
	for (i = 1; i < ent.n; i++)
		if (strcmp(ent.v[i - 1], ent.v[i]) >= 0)
			break;
	ok(i == ent.n, "entries sorted: ancestors first");
	sbx_strv_release(&ent);
	{
		char *u2[] = { ".git/hooks" }, *u3[] = { ".git/objects" };
		char *u4[] = { ".git" };

		ok(sbx_fspolicy_entries(NULL, u2, 1, &ent, &e) == 0 &&
		    has(&ent, "/hooks") && has(&ent, ".git"),
		    "--unprotect .git/hooks: one name exempt");
		sbx_strv_release(&ent);
		ok(sbx_fspolicy_entries(NULL, u3, 1, &ent, &e) == -1 &&
		    strcmp(e.reason, "not_protected") == 0,
		    "--unprotect .git/objects: writable already, refused");
		sbx_strv_release(&ent);
		ok(sbx_fspolicy_entries(NULL, u4, 1, &ent, &e) == 0 &&
		    !has(&ent, ".git"), "--unprotect .git: the rule lifted");
		sbx_strv_release(&ent);
		ok(sbx_git_name_writable("objects") &&
		    sbx_git_name_writable("index.lock") &&
		    sbx_git_name_writable("ORIG_HEAD") &&
		    sbx_git_name_writable("index.stash.12") &&
		    !sbx_git_name_writable("config") &&
		    !sbx_git_name_writable("commondir") &&
		    !sbx_git_name_writable("config.worktree") &&
		    !sbx_git_name_writable("hooks") &&
		    !sbx_git_name_writable("modules") &&
		    !sbx_git_name_writable("worktrees") &&
		    !sbx_git_name_writable("rebase-merge") &&
		    !sbx_git_name_writable("Head") &&
		    !sbx_git_name_writable(".lock"),
		    "the git rule's writable names");
	}
	ok(sbx_fspolicy_entries(cfg, bogus, 1, &ent, &e) == -1 &&
	    strcmp(e.reason, "not_protected") == 0 &&
	    strcmp(e.field, "unprotect") == 0, "--unprotect of an unprotected "
	    "path is refused");
	json_decref(cfg);
	sbx_strv_release(&ent);

	ok(sbx_fspolicy_match("*.env", "prod.env") &&
	    !sbx_fspolicy_match("*.env", "a/prod.env") &&
	    !sbx_fspolicy_match("*", ".hidden"), "globs: per component, "
	    "dot files only by name");

	/* The plan of a tree: .git/config exists, .git/hooks does not. */
	if ((fd = t_tmpdir(tmpl)) == -1)
		return 1;
	close(fd);
	snprintf(buf, sizeof(buf), "%s/.git", tmpl);
	mkdir(buf, 0755);
	snprintf(buf, sizeof(buf), "%s/.git/config", tmpl);
	close(open(buf, O_WRONLY | O_CREAT, 0644));
	snprintf(buf, sizeof(buf), "%s/.claude", tmpl);
	if (symlink(".cursor", buf) == -1)
		return 1;
	fd = open(tmpl, O_PATH | O_DIRECTORY);
	sbx_fspolicy_init(&p);
	sbx_fspolicy_entries(NULL, NULL, 0, &ent, &e);
	roots[0] = tmpl;
	ok(sbx_fspolicy_protect(&p, fd, tmpl, "/proc/self/fd/8", roots, 1,
	    &ent, &e) == 0, "plan made");
	snprintf(buf, sizeof(buf), "%s/.git", tmpl);
	ok(has3(&p.ops, "--bind", "/proc/self/fd/8/.git", buf),
	    ".git bound over itself (cannot be renamed away)");
	snprintf(buf, sizeof(buf), "%s/.git/config", tmpl);
	ok(has3(&p.ops, "--ro-bind", "/proc/self/fd/8/.git/config", buf),
	    ".git/config bound read-only");
	ok(has(&p.init, buf), ".git/config reported when refused (-R)");
	ok(has(&p.init, SBX_INIT_OPT_GITROOT) && has(&p.init, tmpl),
	    "missing .git/hooks, commondir...: the guard's git rule (-g)");
	stat(tmpl, &st);
	snprintf(buf, sizeof(buf), "%llu:%llu:.envrc",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	ok(has(&p.init, buf), "missing .envrc guarded by name");
	snprintf(buf, sizeof(buf), "%llu:%llu:.claude",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
	ok(has(&p.init, buf), "a symlinked .claude keeps its name guarded");
	for (i = 0; i < p.ops.n; i++)
		if (strncmp(p.ops.v[i], "/proc/self/fd/8/.envrc", 22) == 0)
			break;
	ok(i == p.ops.n, "nothing is mounted at a missing name");
	sbx_fspolicy_release(&p);

	/* A loop among protected names refuses the run. */
	snprintf(buf, sizeof(buf), "%s/.cursor", tmpl);
	if (symlink(".claude", buf) == -1)
		return 1;
	sbx_fspolicy_init(&p);
	ok(sbx_fspolicy_protect(&p, fd, tmpl, "/proc/self/fd/8", roots, 1,
	    &ent, &e) == -1 && strcmp(e.reason, "symlink_loop") == 0,
	    "symlink loop: refused (symlink_loop)");
	sbx_fspolicy_release(&p);
	sbx_strv_release(&ent);
	close(fd);
	t_rmtree(tmpl);

	/* Nested repositories: a checkout in the checkout, a bare one and
	 * a separate git directory by what they hold; not descended. */
	snprintf(tmpl, sizeof(tmpl), "/tmp/t-fspolicy.XXXXXX");
	if ((fd = t_tmpdir(tmpl)) == -1)
		return 1;
	close(fd);
	mk(tmpl, "sub/inner/.git/config");
	mk(tmpl, "sub/inner/.git/objects/");
	mk(tmpl, "srv/proj/HEAD");
	mk(tmpl, "srv/proj/config");
	mk(tmpl, "srv/proj/objects/");
	mk(tmpl, "srv/proj/refs/");
	mk(tmpl, "srv/proj/hooks/x/HEAD");
	mk(tmpl, "srv/proj/hooks/x/objects/");
	mk(tmpl, "srv/proj/hooks/x/refs/");
	mk(tmpl, "srv/half/HEAD");
	mk(tmpl, "srv/half/refs/");
	mk(tmpl, "srv/half/config");
	fd = open(tmpl, O_PATH | O_DIRECTORY);
	sbx_fspolicy_init(&p);
	ok(p.git_search == SBX_GIT_SEARCH_DEFAULT &&
	    sbx_fspolicy_git_search(NULL) == SBX_GIT_SEARCH_DEFAULT,
	    "git_search_limit: the default");
	sbx_fspolicy_entries(NULL, NULL, 0, &ent, &e);
	roots[0] = tmpl;
	ok(sbx_fspolicy_protect(&p, fd, tmpl, "/proc/self/fd/8", roots, 1,
	    &ent, &e) == 0, "nested: plan made");
	snprintf(buf, sizeof(buf), "%s/sub/inner/.git/config", tmpl);
	ok(has3(&p.ops, "--ro-bind", "/proc/self/fd/8/sub/inner/.git/config",
	    buf), "nested sub/inner/.git/config read-only");
	snprintf(buf, sizeof(buf), "%s/sub/inner/.git/objects", tmpl);
	ok(!has(&p.ops, buf), "nested: objects stays writable");
	snprintf(buf, sizeof(buf), "%s/srv/proj/config", tmpl);
	ok(has3(&p.ops, "--ro-bind", "/proc/self/fd/8/srv/proj/config", buf),
	    "a bare repository by HEAD, objects, refs: config read-only");
	snprintf(buf, sizeof(buf), "%s/srv/proj", tmpl);
	ok(has(&p.init, SBX_INIT_OPT_GITDIR) && has(&p.init, buf),
	    "a git directory not named .git: the guard's -G");
	snprintf(buf, sizeof(buf), "%s/srv/half/config", tmpl);
	ok(!has(&p.ops, buf), "HEAD and refs without objects: not a "
	    "git directory");
	snprintf(buf, sizeof(buf), "%s/srv/proj/hooks/x", tmpl);
	ok(!has(&p.init, buf), "a git directory is not searched inside");
	ok(p.warnings.n == 0 && p.git_search_hit == 0, "within the bound: "
	    "no warning");
	sbx_fspolicy_release(&p);

	/* The bound: the root and sub are read, sub/inner is not. */
	sbx_fspolicy_init(&p);
	p.git_search = 2;
	ok(sbx_fspolicy_protect(&p, fd, tmpl, "/proc/self/fd/8", roots, 1,
	    &ent, &e) == 0, "bounded: plan made");
	snprintf(buf, sizeof(buf), "%s/sub/inner/.git/config", tmpl);
	ok(!has(&p.ops, buf) && p.git_search_hit == 1 && p.warnings.n == 1 &&
	    strstr(p.warnings.v[0], "git_search_limit") != NULL,
	    "past the bound: not searched, and a warning that says so");
	sbx_fspolicy_release(&p);
	sbx_fspolicy_init(&p);
	p.git_search = 0;
	ok(sbx_fspolicy_protect(&p, fd, tmpl, "/proc/self/fd/8", roots, 1,
	    &ent, &e) == 0 && !has(&p.ops, buf) && p.warnings.n == 0,
	    "git_search_limit 0: no search, no warning");
	sbx_fspolicy_release(&p);
	sbx_strv_release(&ent);
	close(fd);
	return done_testing();
}
