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

static char	 base[64];

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
	ok(sbx_provision_token_new(tok) == 0, "token generated");
	is_int(strlen(tok), 43, "43 characters");
	ok(sbx_provision_token_valid(tok, strlen(tok)), "base64url, no "
	    "padding");
	ok(sbx_provision_token_new(tok2) == 0 && strcmp(tok, tok2) != 0,
	    "two tokens differ");
	ok(!sbx_provision_token_valid(tok, 42), "42 characters refused");
	memcpy(buf, tok, 43);
	buf[42] = '=';
	ok(!sbx_provision_token_valid(buf, 43), "padding refused");
	buf[42] = '+';
	ok(!sbx_provision_token_valid(buf, 43), "standard alphabet refused");
	buf[42] = '\n';
	ok(!sbx_provision_token_valid(buf, 43), "newline refused");

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
	ok(sbx_provision_identity(rootfd, &uid, &gid, &e) == 0 &&
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
	    sbx_provision_token_valid(tok, 43), "the token file holds a token");
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
	    sbx_provision_token_valid(tok2, 43) && strcmp(tok, tok2) != 0,
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
	ok(items != NULL && !ready && json_array_size(items) == 20,
	    "status without a root: everything missing");
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
