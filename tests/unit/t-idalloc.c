/* t-idalloc: per-agent uids: the settings, the range's collisions with
 * the passwd, group and subordinate id files, allocation (stable, never
 * two agents one id, across state roots through the registry, exhaustion),
 * the record, and the migration's walk (interrupted, resumed). */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tap.h"

#include "idalloc.h"
#include "layout.h"

static void
put(const char *dir, const char *name, const char *text)
{
	char  p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	if ((f = fopen(p, "w")) != NULL) {
		fputs(text, f);
		fclose(f);
	}
}

static int
applied(const char *json, struct sbx_idcfg *c, struct sbx_error *e)
{
	json_t *doc = json_loads(json, 0, NULL);
	int	r;

	memset(c, 0, sizeof(*c));
	c->base = SBX_IDALLOC_BASE;
	c->size = SBX_IDALLOC_SIZE;
	memset(e, 0, sizeof(*e));
	r = sbx_idalloc_apply(doc, c, e);
	json_decref(doc);
	return r;
}

static int
mkroot(const char *tmp, const char *name, char *path, size_t sz)
{
	snprintf(path, sz, "%s/%s", tmp, name);
	if (mkdir(path, 0700) == -1)
		return -1;
	return open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int
main(void)
{
	struct sbx_idcfg   c;
	struct sbx_agentid a, b, x;
	struct sbx_error   e;
	char		   tmpl[] = "/tmp/t-idalloc.XXXXXX", etc[8 * PATH_MAX];
	char		   r1[256], r2[256], cmd[512];
	char		   rel[SBX_LAYOUT_PATH_MAX];
	struct stat	   st;
	long		   changed;
	int		   fd1, fd2, stopped;

	if (mkdtemp(tmpl) == NULL)
		return 1;

	/* The settings. */
	ok(applied("{}", &c, &e) == 0 && !c.per_agent &&
		c.base == SBX_IDALLOC_BASE,
	    "off by default, the default range");
	ok(applied("{\"identity\":{\"per_agent\":true,\"base\":100000,"
		   "\"size\":10}}",
	       &c, &e) == 0 &&
		c.per_agent && c.base == 100000 && c.size == 10,
	    "per_agent, base and size are read");
	ok(applied("{\"identity\":{\"per_agent\":1}}", &c, &e) == -1 &&
		strcmp(e.reason, "config_invalid") == 0,
	    "per_agent must be a "
	    "boolean");
	ok(applied("{\"identity\":{\"base\":1000}}", &c, &e) == -1 &&
		strstr(e.message, "65536") != NULL,
	    "a base among real users' "
	    "ids is refused");
	ok(applied("{\"identity\":{\"base\":2147483000,\"size\":1000}}", &c,
	       &e) == -1 &&
		strstr(e.message, "below") != NULL,
	    "a range past "
	    "2^31 is refused");
	ok(applied("{\"identity\":{\"size\":1}}", &c, &e) == -1,
	    "a range with no room for an agent is refused");
	ok(applied("{\"identity\":[]}", &c, &e) == -1,
	    "identity must be an "
	    "object");

	/* Collisions, against a scratch /etc. */
	snprintf(etc, sizeof(etc), "%s/etc", tmpl);
	mkdir(etc, 0755);
	put(etc, "passwd", "root:x:0:0::/root:/bin/sh\n");
	put(etc, "group", "root:x:0:\n");
	memset(&c, 0, sizeof(c));
	c.per_agent = 1;
	c.base = 200000;
	c.size = 100;
	ok(sbx_idalloc_check_range(&c, tmpl, &e) == 0, "a free range passes");
	put(etc, "passwd",
	    "root:x:0:0::/root:/bin/sh\n"
	    "mallory:x:200050:200050::/home/m:/bin/sh\n");
	ok(sbx_idalloc_check_range(&c, tmpl, &e) == -1 &&
		strcmp(e.reason, "identity_range_collision") == 0 &&
		strstr(e.message, "mallory (id 200050) in /etc/passwd") != NULL,
	    "a real user in the range is refused, named: %s", e.message);
	put(etc, "passwd", "root:x:0:0::/root:/bin/sh\n");
	put(etc, "group", "root:x:0:\nstaff:x:200099:\n");
	ok(sbx_idalloc_check_range(&c, tmpl, &e) == -1 &&
		strstr(e.message, "staff (id 200099) in /etc/group") != NULL,
	    "so is a group");
	put(etc, "group", "root:x:0:\n");
	put(etc, "subuid", "alice:199000:1001\n");
	ok(sbx_idalloc_check_range(&c, tmpl, &e) == -1 &&
		strstr(e.message, "alice's subordinate ids 199000-200000") !=
		    NULL,
	    "and a subordinate range that overlaps it by one id");
	put(etc, "subuid", "alice:199000:1000\n");
	ok(sbx_idalloc_check_range(&c, tmpl, &e) == 0,
	    "one that ends just "
	    "below it is no collision");

	/* Allocation: two roots, one registry. */
	memset(&c, 0, sizeof(c));
	c.per_agent = 1;
	c.base = SBX_IDALLOC_BASE;
	c.size = 4; /* the group, then three agents */
	snprintf(c.registry, sizeof(c.registry), "%s/registry", tmpl);
	fd1 = mkroot(tmpl, "r1", r1, sizeof(r1));
	fd2 = mkroot(tmpl, "r2", r2, sizeof(r2));
	ok(sbx_idalloc_assign(fd1, r1, "a", &c, 1, 65534, 65534, &a, &e) == 0 &&
		a.host_uid == SBX_IDALLOC_BASE + 1 && a.uid == a.host_uid &&
		a.shared_gid == SBX_IDALLOC_BASE && a.migrated,
	    "the first agent gets the id after the shared group");
	ok(sbx_idalloc_assign(fd1, r1, "a", &c, 1, 65534, 65534, &x, &e) == 0 &&
		x.host_uid == a.host_uid,
	    "asked again, the same id");
	ok(sbx_idalloc_read(fd1, "a", &x, &e) == 1 &&
		x.host_uid == a.host_uid && x.from_uid == 65534,
	    "the record holds it");
	ok(sbx_idalloc_assign(fd2, r2, "a", &c, 1, 65534, 65534, &b, &e) == 0 &&
		b.host_uid == SBX_IDALLOC_BASE + 2,
	    "another root's agent "
	    "of the same name gets another id (the registry)");
	ok(sbx_idalloc_assign(fd1, r1, "c", &c, 1, 65534, 65534, &x, &e) == 0 &&
		x.host_uid == SBX_IDALLOC_BASE + 3,
	    "a third agent, the "
	    "last id");
	ok(sbx_idalloc_assign(fd1, r1, "d", &c, 1, 65534, 65534, &x, &e) ==
		    -1 &&
		strcmp(e.reason, "identity_range_exhausted") == 0 &&
		strcmp(e.kind, "unavailable") == 0 && e.hint[0] != '\0',
	    "a full range is a clear error: %s", e.message);
	SBX_LPATH(rel, SBX_L_AGENT_IDENTITY, "d");
	ok(fstatat(fd1, rel, &st, AT_SYMLINK_NOFOLLOW) == -1,
	    "and leaves no record");
	ok(sbx_idalloc_release(fd1, r1, "c", &c, &e) == 0 &&
		sbx_idalloc_read(fd1, "c", &x, &e) == 0 &&
		sbx_idalloc_assign(fd1, r1, "d", &c, 1, 65534, 65534, &x, &e) ==
		    0 &&
		x.host_uid == SBX_IDALLOC_BASE + 3,
	    "a removed agent's id "
	    "is free again");
	close(fd2);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r2);
	(void)!system(cmd);
	ok(sbx_idalloc_assign(fd1, r1, "e", &c, 1, 65534, 65534, &x, &e) == 0 &&
		x.host_uid == SBX_IDALLOC_BASE + 2,
	    "so is the id of a state "
	    "root that is gone");

	/* A damaged record is refused, never overwritten. */
	SBX_LPATH(rel, SBX_L_AGENT_IDENTITY, "a");
	put(r1, rel, "{\"uid\":0}");
	ok(sbx_idalloc_read(fd1, "a", &x, &e) == -1 &&
		strcmp(e.reason, "record_damaged") == 0,
	    "a damaged record is "
	    "refused: %s",
	    e.message);
	ok(sbx_idalloc_assign(fd1, r1, "a", &c, 1, 65534, 65534, &x, &e) == -1,
	    "and not replaced by a new allocation");

	/* The walk: as root only (chown). */
	if (geteuid() != 0) {
		skip("the migration's chowns need root (uid %u)",
		    (unsigned)geteuid());
	} else {
		snprintf(cmd, sizeof(cmd), "%s/workspace/agents/m/d", r1);
		snprintf(etc, sizeof(etc),
		    "mkdir -p %s && touch %s/f1 %s/f2 "
		    "%s/f3 && ln -s /etc/passwd %s/l && chown -R -h 4242:4242 "
		    "%s/workspace/agents/m",
		    cmd, cmd, cmd, cmd, cmd, r1);
		ok(system(etc) == 0, "a home of uid 4242");
		ok(sbx_idalloc_chown_trees(fd1, "m", 4242, 4242, 5151, 5151, 1,
		       2, &changed, &stopped, &e) == 0 &&
			stopped && changed == 2,
		    "stopped after 2 changes (an interruption)");
		snprintf(cmd, sizeof(cmd), "%s/workspace/agents/m", r1);
		ok(stat(cmd, &st) == 0 && st.st_uid == 4242,
		    "the home itself "
		    "still says the old owner: not done");
		ok(sbx_idalloc_chown_trees(fd1, "m", 4242, 4242, 5151, 5151, 1,
		       0, &changed, &stopped, &e) == 0 &&
			!stopped && changed == 4,
		    "resumed, it changes only what is left");
		ok(stat(cmd, &st) == 0 && st.st_uid == 5151 &&
			st.st_gid == 5151,
		    "the home is the new owner's");
		ok(stat("/etc/passwd", &st) == 0 && st.st_uid == 0,
		    "a symlink in it was not followed");
		ok(sbx_idalloc_chown_trees(fd1, "m", 4242, 4242, 5151, 5151, 1,
		       0, &changed, &stopped, &e) == 0 &&
			changed == 0,
		    "a third pass changes nothing");
	}
	close(fd1);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	(void)!system(cmd);
	return done_testing();
}
