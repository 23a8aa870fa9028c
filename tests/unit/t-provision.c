/* t-provision: tokens, idempotence, SOUL.md kept, symlinks refused. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tap.h"

#include "provision.h"
#include "users.h"

static char	 base[64];

static int
argv_has(const char **argv, const char *a, const char *b)
{
	size_t	 i;

	for (i = 0; argv[i] != NULL; i++)
		if (strcmp(argv[i], a) == 0 && (b == NULL ||
		    (argv[i + 1] != NULL && strcmp(argv[i + 1], b) == 0)))
			return 1;
	return 0;
}

/* Copy /etc/NAME to dir/etc/NAME (absent: skipped). */
static int
copy_etc(const char *dir, const char *name)
{
	char	 src[256], dst[512], b[8192];
	FILE	*in, *out;
	size_t	 n;
	int	 rc = 0;

	snprintf(src, sizeof(src), "/etc/%s", name);
	snprintf(dst, sizeof(dst), "%s/etc/%s", dir, name);
	if ((in = fopen(src, "r")) == NULL)
		return 0;
	if ((out = fopen(dst, "w")) == NULL) {
		fclose(in);
		return -1;
	}
	while ((n = fread(b, 1, sizeof(b), in)) > 0)
		if (fwrite(b, 1, n, out) != n)
			rc = -1;
	fclose(in);
	if (fclose(out) != 0)
		rc = -1;
	return rc;
}

static int
writefile(const char *p, const char *text)
{
	FILE	*f;

	if ((f = fopen(p, "w")) == NULL)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Does dir/etc/passwd (dir NULL: /etc) have a line starting with s? */
static int
passwd_has(const char *dir, const char *s)
{
	char	 p[512], line[1024];
	FILE	*f;
	int	 found = 0;

	snprintf(p, sizeof(p), "%s/etc/passwd", dir ? dir : "");
	if ((f = fopen(p, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, s, strlen(s)) == 0)
			found = 1;
	fclose(f);
	return found;
}

static int
has(json_t *arr, const char *s)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

static int
mode_of(const char *rel)
{
	struct stat	 st;
	char		 p[512];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (lstat(p, &st) == -1)
		return -1;
	return (int)(st.st_mode & 07777);
}

static int
owner_of(const char *rel)
{
	struct stat	 st;
	char		 p[512];

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if (lstat(p, &st) == -1)
		return -1;
	return (int)st.st_uid;
}

static int
read_small(const char *rel, char *buf, size_t sz)
{
	char	 p[512];
	FILE	*f;
	size_t	 n;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if ((f = fopen(p, "r")) == NULL)
		return -1;
	n = fread(buf, 1, sz - 1, f);
	buf[n] = '\0';
	fclose(f);
	return (int)n;
}

static int
write_small(const char *rel, const char *s)
{
	char	 p[512];
	FILE	*f;

	snprintf(p, sizeof(p), "%s/%s", base, rel);
	if ((f = fopen(p, "w")) == NULL)
		return -1;
	fputs(s, f);
	return fclose(f);
}

static int
run(int rootfd, const char *agent, struct sbx_provision *p,
    struct sbx_error *e)
{
	sbx_provision_release(p);
	if (sbx_provision_init(p, rootfd, agent) == -1)
		return -2;
	return sbx_provision_agent(p, e);
}

int
main(void)
{
	struct sbx_provision	 p;
	struct sbx_error	 e;
	char			 tok[SBX_TOKEN_LEN + 1];
	char			 tok2[SBX_TOKEN_LEN + 1];
	char			 buf[1024], path[512], other[64];
	json_t			*items, *list, *removed, *warnings;
	int			 rootfd, ready, tmpfd;
	uid_t			 uid;
	gid_t			 gid;

	/* Tokens. */
	ok(sbx_token_new(tok) == 0, "token generated");
	is_int(strlen(tok), 43, "43 characters");
	ok(sbx_token_valid(tok, strlen(tok)), "base64url, no "
	    "padding");
	ok(sbx_token_new(tok2) == 0 && strcmp(tok, tok2) != 0,
	    "two tokens differ");
	ok(!sbx_token_valid(tok, 42), "42 characters refused");
	memcpy(buf, tok, 43);
	buf[42] = '=';
	ok(!sbx_token_valid(buf, 43), "padding refused");
	buf[42] = '+';
	ok(!sbx_token_valid(buf, 43), "standard alphabet refused");
	buf[42] = '\n';
	ok(!sbx_token_valid(buf, 43), "newline refused");

	snprintf(base, sizeof(base), "/tmp/t-provision.XXXXXX");
	if (mkdtemp(base) == NULL)
		return 1;
	snprintf(other, sizeof(other), "/tmp/t-provision-other.XXXXXX");
	if (mkdtemp(other) == NULL)
		return 1;
	rootfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&p, 0, sizeof(p));

	/* Invalid agent. */
	ok(run(rootfd, "../b", &p, &e) == -1 &&
	    strcmp(e.kind, "invalid_args") == 0, "bad agent name refused");
	ok(mode_of("run") == -1, "and nothing created");

	/* A fresh root. */
	ok(run(rootfd, "a1", &p, &e) == 0, "provision a fresh root");
	ok(has(p.created, "run/tokens/a1") && has(p.created,
	    "workspace/agents/a1/SOUL.md") && has(p.created,
	    "config/agents/a1.json"), "token, SOUL.md, settings created");
	/* mkdtemp made the root 0700; as root it becomes 0711. */
	is_int(json_array_size(p.repaired), geteuid() == 0 ? 1 : 0,
	    "nothing repaired");
	/* As root, sandboxes run as another uid that must reach the homes. */
	is_int(mode_of("."), geteuid() == 0 ? 0711 : 0700, "root 0700 (0711 "
	    "as root)");
	is_int(mode_of("workspace/agents"), geteuid() == 0 ? 0711 : 0700,
	    "workspace/agents 0700 (0711 as root)");
	ok(sbx_identity_get(rootfd, &uid, &gid, &e) == 0 &&
	    (geteuid() != 0 || uid != 0), "sandboxes never run as root");
	ok(owner_of("workspace/agents/a1") == (int)uid &&
	    owner_of("workspace/agents/a1/SOUL.md") == (int)uid &&
	    owner_of("output/a1") == (int)uid, "the sandbox's uid owns the "
	    "home, SOUL.md and output");
	ok(owner_of("run/tokens/a1") == (int)geteuid(), "we own the token");
	is_int(mode_of("run"), 0711, "run 0711");
	is_int(mode_of("run/tokens"), 0700, "run/tokens 0700");
	is_int(mode_of("run/tokens/a1"), 0600, "token 0600");
	/* As root the sandbox uid must search images/ (0711). */
	is_int(mode_of("images"), geteuid() == 0 ? 0711 : 0700, "images mode");
	ok(read_small("run/tokens/a1", tok, sizeof(tok)) == 43 &&
	    sbx_token_valid(tok, 43), "the token file holds a token");
	ok(read_small("config/agents/a1.json", buf, sizeof(buf)) > 0 &&
	    strcmp(buf, "{\"allow_private\":false,\"allowed_domains\":[],"
	    "\"allowed_ports\":[80,443],\"denied_domains\":[],\"limits\":{},"
	    "\"network\":\"none\"}\n") == 0, "default settings, sorted keys");
	ok(read_small("workspace/agents/a1/SOUL.md", buf, sizeof(buf)) > 0 &&
	    strstr(buf, "next session") != NULL, "SOUL.md seeded");

	/* Idempotence. */
	ok(run(rootfd, "a1", &p, &e) == 0, "provision again");
	is_int(json_array_size(p.created), 0, "nothing created");
	is_int(json_array_size(p.repaired), 0, "nothing repaired");
	ok(read_small("run/tokens/a1", tok2, sizeof(tok2)) == 43 &&
	    strcmp(tok, tok2) == 0, "same token");

	/* SOUL.md is the agent's: never overwritten. */
	ok(write_small("workspace/agents/a1/SOUL.md", "mine\n") == 0,
	    "SOUL.md edited");
	ok(run(rootfd, "a1", &p, &e) == 0, "provision again");
	ok(read_small("workspace/agents/a1/SOUL.md", buf, sizeof(buf)) == 5 &&
	    strcmp(buf, "mine\n") == 0, "the edit survives");

	/* Repairs. */
	snprintf(path, sizeof(path), "%s/run", base);
	chmod(path, 0777);
	ok(run(rootfd, "a1", &p, &e) == 0 && has(p.repaired, "run"),
	    "run 0777 reported repaired");
	is_int(mode_of("run"), 0711, "and is 0711 again");
	ok(write_small("run/tokens/a1", "short") == 0, "token damaged");
	ok(run(rootfd, "a1", &p, &e) == 0 && has(p.repaired, "run/tokens/a1"),
	    "malformed token repaired");
	ok(read_small("run/tokens/a1", tok2, sizeof(tok2)) == 43 &&
	    sbx_token_valid(tok2, 43) && strcmp(tok, tok2) != 0,
	    "with a new token");
	is_int(mode_of("run/tokens/a1"), 0600, "token 0600");

	/* Status. */
	warnings = json_array();
	items = sbx_provision_status(rootfd, "a1", &ready, warnings, &e);
	ok(items != NULL && ready, "status: ready");
	json_decref(items);
	snprintf(path, sizeof(path), "%s/cache", base);
	rmdir(path);
	items = sbx_provision_status(rootfd, "a1", &ready, warnings, &e);
	ok(items != NULL && !ready, "status: cache missing, not ready");
	json_decref(items);
	ok(mode_of("cache") == -1, "status created nothing");
	items = sbx_provision_status(-1, "a1", &ready, warnings, &e);
	ok(items != NULL && !ready && json_array_size(items) == 21,
	    "status without a root: everything missing (20 places and the "
	    "state-root marker)");
	json_decref(items);
	json_decref(warnings);

	/* A planted symlink is refused, not followed. */
	snprintf(path, sizeof(path), "%s/images", base);
	ok(rmdir(path) == 0 && symlink(other, path) == 0, "images -> "
	    "elsewhere");
	ok(run(rootfd, "a2", &p, &e) == -1 && strcmp(e.kind, "rejected") == 0 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "provision refused");
	ok(json_array_size(p.problems) == 1, "the problem is listed");
	ok(mode_of("workspace/agents/a2") == -1 && mode_of("cache") == -1,
	    "nothing changed before the refusal");
	tmpfd = open(other, O_RDONLY | O_DIRECTORY);
	ok(rmdir(other) == 0 && mkdir(other, 0700) == 0, "nothing written "
	    "in the target");
	close(tmpfd);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run/tokens/a1", base);
	unlink(path);
	ok(symlink("/etc/passwd", path) == 0, "token -> /etc/passwd");
	ok(run(rootfd, "a1", &p, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "token symlink refused");
	unlink(path);
	ok(run(rootfd, "a1", &p, &e) == 0, "provision after clean-up");

	/* List. */
	list = sbx_provision_list(rootfd, &e);
	ok(list != NULL && json_array_size(list) == 1 && json_is_true(
	    json_object_get(json_array_get(list, 0), "token")), "list");
	json_decref(list);

	/* Unprovision keeps the home. */
	removed = json_array();
	ok(sbx_provision_unprovision(rootfd, "a1", removed, NULL, &e) == 0 &&
	    has(removed, "run/tokens/a1"), "unprovision revokes the token");
	ok(mode_of("run/tokens/a1") == -1, "token gone");
	ok(mode_of("workspace/agents/a1/SOUL.md") != -1, "home kept");
	json_decref(removed);

	/* rm_tree unlinks a symlink, never its target. */
	snprintf(path, sizeof(path), "%s/envs/x", base);
	ok(symlink(other, path) == 0, "envs/x -> elsewhere");
	snprintf(path, sizeof(path), "%s/keep", other);
	{
		FILE *f = fopen(path, "w");
		if (f)
			fclose(f);
	}
	removed = json_array();
	ok(sbx_provision_reset(rootfd, removed, &e) == 0 &&
	    has(removed, "envs/x"), "reset removes the link");
	ok(access(path, F_OK) == 0, "the target's file survives");
	json_decref(removed);
	unlink(path);

	/*
	 * Root mode identity (issue 10, item 10): as root, with neither
	 * run_as nor an sbx user, provision creates the system user sbx.
	 */
	{
		const char	*av[SBX_USERADD_ARGV];
		char		 scratch[64];
		uid_t		 su;
		gid_t		 sg;
		int		 n, w, has_sbx;

		n = sbx_user_create_argv(SBX_USERADD, NULL, "sbx", av);
		ok(n > 0 && strcmp(av[0], "/usr/sbin/useradd") == 0 &&
		    strcmp(av[n - 1], "sbx") == 0 && strcmp(av[n - 2], "--")
		    == 0 && av[n] == NULL, "useradd by absolute path, the name "
		    "last after --");
		ok(argv_has(av, "--system", NULL) &&
		    argv_has(av, "--user-group", NULL) &&
		    argv_has(av, "--no-create-home", NULL) &&
		    argv_has(av, "--home-dir", "/nonexistent") &&
		    (argv_has(av, "--shell", "/usr/sbin/nologin") ||
		    argv_has(av, "--shell", "/bin/false")) &&
		    !argv_has(av, "--prefix", NULL), "a system user, its own "
		    "group, no home, no login shell");
		sbx_user_create_argv(SBX_USERADD, "/scratch", "sbx", av);
		ok(argv_has(av, "--prefix", "/scratch"), "--prefix for a "
		    "scratch root");

		ok(sbx_user_create("/nonexistent/useradd", NULL, "sbx", &su,
		    &sg, &e) == -1 && strcmp(e.reason, "useradd_failed") == 0 &&
		    strstr(e.message, "could not be run") != NULL && e.hint[0],
		    "useradd missing: a clear error, fail closed");
		ok(sbx_user_create("/bin/false", NULL, "sbx", &su, &sg, &e) ==
		    -1 && strcmp(e.reason, "useradd_failed") == 0 &&
		    strstr(e.message, "failed") != NULL, "useradd failing: a "
		    "clear error");

		has_sbx = sbx_user_by_name("sbx", &su, &sg) == 0;
		w = sbx_identity_wants_user(rootfd, &e);
		if (geteuid() != 0)
			ok(w == 0, "not root: never creates a user");
		else if (has_sbx)
			ok(w == 0, "root, an sbx user exists: none created");
		else {
			ok(w == 1, "root, no run_as, no sbx user: create one");
			snprintf(path, sizeof(path), "%s/config/sandbox.json",
			    base);
			ok(writefile(path, "{\"run_as\":{\"uid\":65534,"
			    "\"gid\":65534}}") == 0 &&
			    sbx_identity_wants_user(rootfd, &e) == 0,
			    "root, run_as set: none created");
			unlink(path);
		}

		/* The real useradd, on a scratch copy of the passwd files
		 * (--prefix): nothing on the host changes. */
		snprintf(scratch, sizeof(scratch), "/tmp/t-users.XXXXXX");
		if (geteuid() != 0 || access(SBX_USERADD, X_OK) != 0 ||
		    mkdtemp(scratch) == NULL)
			skip("useradd needs root");
		else {
			snprintf(path, sizeof(path), "%s/etc", scratch);
			mkdir(path, 0755);
			copy_etc(scratch, "passwd");
			copy_etc(scratch, "group");
			copy_etc(scratch, "shadow");
			copy_etc(scratch, "gshadow");
			copy_etc(scratch, "login.defs");
			w = passwd_has(NULL, "sbxtest:");
			e.message[0] = '\0';
			ok(sbx_user_create(SBX_USERADD, scratch, "sbxtest", &su,
			    &sg, &e) == 0 && su > 0 && su < 1000 && sg > 0 &&
			    passwd_has(scratch, "sbxtest:x:") == 1 &&
			    passwd_has(NULL, "sbxtest:") == w, "useradd made a "
			    "system user in the scratch root only: %s",
			    e.message);
			tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY);
			sbx_provision_rm_tree(tmpfd, scratch + 5, &e);
			close(tmpfd);
		}
	}

	sbx_provision_release(&p);
	close(rootfd);
	/* Clean up with the remover under test. */
	tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	ok(sbx_provision_rm_tree(tmpfd, base + 5, &e) == 0 &&
	    sbx_provision_rm_tree(tmpfd, other + 5, &e) == 0,
	    "temporary directories removed");
	close(tmpfd);
	return done_testing();
}
