/*
 * idalloc.c: per-agent uids.  An agent's uid and gid come from a range
 * sbx owns; the record (agents/A/identity.json) is the allocation, the
 * host-wide registry keeps two state roots from handing out one id, and
 * /etc/passwd, /etc/group, /etc/subuid and /etc/subgid are never
 * trespassed: an id of someone else's is someone else's files.
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "idalloc.h"
#include "identity.h"
#include "layout.h"
#include "settings.h"
#include "users.h"

#define RECORD_MAX   4096
#define REGISTRY_MAX (4u << 20)

const char *
sbx_idalloc_mode(int per_agent)
{
	return per_agent ? "per_agent" : "shared";
}

/* ---- settings ----------------------------------------------------------- */

static int
cfg_int(const json_t *o, const char *key, unsigned long lo, unsigned long hi,
    unsigned long *out, struct sbx_error *e)
{
	const json_t *v = json_object_get(o, key);

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo ||
	    json_integer_value(v) > (json_int_t)hi)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "identity",
		    "config_invalid",
		    "config/sandbox.json: identity.%s must "
		    "be an integer from %lu to %lu",
		    key, lo, hi);
	*out = (unsigned long)json_integer_value(v);
	return 0;
}

/* The identity object of a settings document (cfgcheck's check too). */
int
sbx_idalloc_apply(const json_t *doc, struct sbx_idcfg *c, struct sbx_error *e)
{
	const json_t *id = json_object_get(doc, "identity"), *pa;

	if (id == NULL)
		return 0;
	if (!json_is_object(id))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "identity",
		    "config_invalid",
		    "config/sandbox.json: identity must be "
		    "an object");
	if ((pa = json_object_get(id, "per_agent")) != NULL) {
		if (!json_is_boolean(pa))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "identity.per_agent", "config_invalid",
			    "config/sandbox.json: identity.per_agent must be "
			    "true or false");
		c->per_agent = json_is_true(pa);
	}
	/* Never below 65536 (the ids of real users and of nobody) and the
	 * whole range below 2^31 (the largest id every tool handles). */
	if (cfg_int(id, "base", 65536, 0x7ffffffeUL, &c->base, e) == -1 ||
	    cfg_int(id, "size", 2, SBX_IDALLOC_MAX_SIZE, &c->size, e) == -1)
		return -1;
	if (c->base + c->size > 0x7fffffffUL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "identity.size",
		    "config_invalid",
		    "config/sandbox.json: identity.base + "
		    "identity.size must stay below 2147483647");
	return 0;
}

static void
registry_path(struct sbx_idcfg *c)
{
	const char *env = getenv("SBX_IDENTITY_REGISTRY"), *d, *h;

	if (env != NULL && env[0] == '/') {
		snprintf(c->registry, sizeof(c->registry), "%s", env);
		return;
	}
	if (geteuid() == 0) {
		snprintf(c->registry, sizeof(c->registry), "%s",
		    SBX_IDALLOC_REGISTRY);
		return;
	}
	if ((d = getenv("XDG_DATA_HOME")) != NULL && d[0] == '/')
		snprintf(c->registry, sizeof(c->registry), "%s/sbx-identities",
		    d);
	else if ((h = getenv("HOME")) != NULL && h[0] == '/')
		snprintf(c->registry, sizeof(c->registry),
		    "%s/.local/share/sbx-identities", h);
	else
		c->registry[0] = '\0';
}

int
sbx_idalloc_config(int rootfd, struct sbx_idcfg *c, struct sbx_error *e)
{
	struct sbx_subids sub;
	json_t		 *doc = NULL;
	int		  r;

	memset(c, 0, sizeof(*c));
	c->base = SBX_IDALLOC_BASE;
	c->size = SBX_IDALLOC_SIZE;
	if (rootfd >= 0 && sbx_settings_global(rootfd, &doc, e) == -1)
		return -1;
	r = doc != NULL ? sbx_idalloc_apply(doc, c, e) : 0;
	json_decref(doc);
	if (r == -1)
		return -1;
	registry_path(c);
	if (!c->per_agent || geteuid() == 0)
		return 0;
	/* A plain user: its own subordinate range, or the shared identity
	 * (reported as such; nothing else could keep agents apart). */
	if ((r = sbx_identity_subids(rootfd, &sub, c->why_shared,
		 sizeof(c->why_shared), e)) == -1)
		return -1;
	if (r == 1 && sub.count < SBX_IDALLOC_SUB_LAST)
		snprintf(c->why_shared, sizeof(c->why_shared),
		    "the "
		    "subordinate range of uid %u has %lu ids, fewer than "
		    "the %lu per-agent uids need",
		    (unsigned)getuid(), sub.count, SBX_IDALLOC_SUB_LAST);
	else if (r == 1 && sub.uid != sub.gid)
		snprintf(c->why_shared, sizeof(c->why_shared),
		    "the "
		    "subordinate uid and gid ranges of uid %u start at "
		    "different ids",
		    (unsigned)getuid());
	if (r == 1 && c->why_shared[0] == '\0') {
		c->subordinate = 1;
		c->sub_start = sub.uid;
		c->base = sub.uid + SBX_IDALLOC_SUB_FIRST - 1;
		c->size = SBX_IDALLOC_SUB_LAST - SBX_IDALLOC_SUB_FIRST + 1;
		return 0;
	}
	c->per_agent = 0;
	return 0;
}

/* ---- collisions --------------------------------------------------------- */

/*
 * Each "NAME:...:ID:..." (field idf) or "NAME:START:COUNT" (idf -1) line
 * of PREFIX/etc/FILE: the first one that meets [lo, lo + n) is named in
 * who.  1 found, 0 not (an absent file is no one's).
 */
static int
colon_file(const char *prefix, const char *file, int idf, unsigned long lo,
    unsigned long n, char *who, size_t whosz)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e;
	char		 dir[PATH_MAX], *line, *save = NULL, *f[8], *end;
	unsigned long	 s, c;
	int		 dfd, rc, nf, found = 0;

	snprintf(dir, sizeof(dir), "%s/etc", prefix != NULL ? prefix : "");
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	rc = sbx_fs_read_file_at(dfd, file, 16u << 20, &b, &e);
	close(dfd);
	if (rc == -1 || b.p == NULL)
		return 0;
	for (line = strtok_r(b.p, "\n", &save); line != NULL && !found;
	     line = strtok_r(NULL, "\n", &save)) {
		for (nf = 0, f[0] = line; nf < 7 && f[nf] != NULL; nf++)
			if ((f[nf + 1] = strchr(f[nf], ':')) != NULL)
				*f[nf + 1]++ = '\0';
		if (line[0] == '#' || nf < (idf < 0 ? 3 : idf + 1))
			continue;
		errno = 0;
		s = strtoul(f[idf < 0 ? 1 : idf], &end, 10);
		if (errno != 0 || end == f[idf < 0 ? 1 : idf])
			continue;
		c = 1;
		if (idf < 0 &&
		    ((c = strtoul(f[2], &end, 10)) == 0 || errno != 0))
			continue;
		if (s < lo + n && lo < s + c) {
			if (idf < 0)
				snprintf(who, whosz,
				    "%s's subordinate ids "
				    "%lu-%lu in /etc/%s",
				    f[0], s, s + c - 1, file);
			else
				snprintf(who, whosz, "%s (id %lu) in /etc/%s",
				    f[0], s, file);
			found = 1;
		}
	}
	sbx_buf_release(&b);
	return found;
}

int
sbx_idalloc_check_range(const struct sbx_idcfg *c, const char *prefix,
    struct sbx_error *e)
{
	char who[320];

	/* A plain user's range is its own by /etc/subuid: only root's
	 * range must be no one else's. */
	if (c->subordinate)
		return 0;
	who[0] = '\0';
	if (colon_file(prefix, "passwd", 2, c->base, c->size, who,
		sizeof(who)) ||
	    colon_file(prefix, "group", 2, c->base, c->size, who,
		sizeof(who)) ||
	    colon_file(prefix, "subuid", -1, c->base, c->size, who,
		sizeof(who)) ||
	    colon_file(prefix, "subgid", -1, c->base, c->size, who,
		sizeof(who))) {
		sbx_error_set(e, SBX_K_REJECTED, "identity.base",
		    "identity_range_collision",
		    "the per-agent id range "
		    "%lu-%lu collides with %s",
		    c->base, c->base + c->size - 1, who);
		sbx_error_hint(e,
		    "choose a free range: sbx config set --global "
		    "identity.base N (and identity.size)");
		return -1;
	}
	return 0;
}

/* ---- the record --------------------------------------------------------- */

int
sbx_idalloc_read(int rootfd, const char *agent, struct sbx_agentid *a,
    struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	       rel[SBX_LAYOUT_PATH_MAX];
	json_t	      *doc;
	json_int_t     u, g, hu, hg, sg, fu = -1, fg = -1;
	const char    *state;
	int	       sub = 0;

	memset(a, 0, sizeof(*a));
	if (sbx_layout_path(SBX_L_AGENT_IDENTITY, agent, rel, sizeof(rel), e) ==
	    -1)
		return -1;
	if (sbx_fs_read_file_at(rootfd, rel, RECORD_MAX, &b, e) == -1) {
		if (sbx_error_absent(e)) {
			memset(e, 0, sizeof(*e));
			return 0;
		}
		return -1;
	}
	doc = sbx_json_parse(b.p, b.len, RECORD_MAX, e);
	sbx_buf_release(&b);
	if (doc == NULL ||
	    json_unpack(doc,
		"{s:I,s:I,s:I,s:I,s:I,s:s,s?I,"
		"s?I,s?b}",
		"uid", &u, "gid", &g, "host_uid", &hu, "host_gid", &hg,
		"shared_gid", &sg, "state", &state, "from_uid", &fu, "from_gid",
		&fg, "subordinate", &sub) == -1 ||
	    u <= 0 || g <= 0 || hu <= 0 || hg <= 0 || sg <= 0 ||
	    u > 0x7fffffff || hu > 0x7fffffff || g > 0x7fffffff ||
	    hg > 0x7fffffff || sg > 0x7fffffff ||
	    (strcmp(state, "done") != 0 && strcmp(state, "migrating") != 0)) {
		json_decref(doc);
		sbx_error_set(e, SBX_K_REJECTED, "identity", "record_damaged",
		    "the identity record of agent %s is damaged", agent);
		sbx_error_in_file(e, rel,
		    "sbx provision --agent %s "
		    "--migrate-identity writes it again after it is removed",
		    agent);
		return -1;
	}
	a->uid = (unsigned long)u;
	a->gid = (unsigned long)g;
	a->host_uid = (unsigned long)hu;
	a->host_gid = (unsigned long)hg;
	a->shared_gid = (unsigned long)sg;
	a->from_uid = fu < 0 ? 0 : (unsigned long)fu;
	a->from_gid = fg < 0 ? 0 : (unsigned long)fg;
	a->subordinate = sub;
	a->migrated = strcmp(state, "done") == 0;
	json_decref(doc);
	return 1;
}

int
sbx_idalloc_write(int rootfd, const char *agent, const struct sbx_agentid *a,
    struct sbx_error *e)
{
	char	rel[SBX_LAYOUT_PATH_MAX], *s;
	json_t *doc;
	int	dfd, rc;

	if ((dfd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_RECORDS, agent, e)) ==
	    -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_IDENTITY, agent);
	doc = json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:b,s:s}", "uid",
	    (json_int_t)a->uid, "gid", (json_int_t)a->gid, "host_uid",
	    (json_int_t)a->host_uid, "host_gid", (json_int_t)a->host_gid,
	    "shared_gid", (json_int_t)a->shared_gid, "from_uid",
	    (json_int_t)a->from_uid, "from_gid", (json_int_t)a->from_gid,
	    "subordinate", a->subordinate, "state",
	    a->migrated ? "done" : "migrating");
	s = doc != NULL ? json_dumps(doc, JSON_SORT_KEYS | JSON_COMPACT) : NULL;
	json_decref(doc);
	if (s == NULL) {
		close(dfd);
		return sbx_error_sys(e, "nomem", "identity record");
	}
	rc =
	    sbx_fs_replace_at(dfd, sbx_layout_leaf(rel), s, strlen(s), 0600, e);
	free(s);
	close(dfd);
	return rc;
}

/* ---- the registry ------------------------------------------------------- */

/* Open and lock the registry (created 0644: ids are not secrets). */
static int
registry_open(const struct sbx_idcfg *c, struct sbx_error *e)
{
	int fd;

	if (c->registry[0] != '/')
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "identity",
		    "registry_unavailable",
		    "no place for the registry of "
		    "per-agent ids (set SBX_IDENTITY_REGISTRY or HOME)");
	if ((fd = open(c->registry, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		 0644)) == -1 ||
	    flock(fd, LOCK_EX) == -1) {
		sbx_error_sys(e, "registry_unavailable",
		    "cannot open the "
		    "registry of per-agent ids %s",
		    c->registry);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Does the state root at path still hold agent's record of uid?  A line
 * of a root that is gone, or of an agent removed, is stale. */
static int
registry_live(const char *root, const char *agent, unsigned long uid)
{
	struct sbx_agentid a;
	struct sbx_error   e;
	int		   fd, r;

	if ((fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errno == ENOENT || errno == ENOTDIR ? 0 : 1;
	r = sbx_idalloc_read(fd, agent, &a, &e);
	close(fd);
	/* Damaged: kept, so an id is never handed out twice by mistake. */
	return r == -1 || (r == 1 && a.host_uid == uid);
}

struct reg {
	struct sbx_buf keep; /* the live lines */
	unsigned long *ids;
	size_t	       n, cap;
	char	       taken_by[PATH_MAX + 64];
};

/* Read the registry: live lines kept (and their ids), stale ones
 * dropped; the line of (root, agent) dropped when drop is set. */
static int
registry_load(int fd, struct reg *r, const char *root, const char *agent,
    int drop)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	      *line, *save = NULL, *sp1, *sp2, *end;
	unsigned long  id, *ni;

	if (sbx_fs_read_fd(fd, &b, REGISTRY_MAX) == -1)
		return -1;
	for (line = strtok_r(b.p, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save)) {
		if ((sp1 = strchr(line, ' ')) == NULL ||
		    (sp2 = strrchr(line, ' ')) == sp1)
			continue;
		*sp1++ = '\0';
		*sp2++ = '\0';
		errno = 0;
		id = strtoul(line, &end, 10);
		if (errno != 0 || *end != '\0')
			continue;
		if (drop && strcmp(sp1, root) == 0 && strcmp(sp2, agent) == 0)
			continue;
		if (!registry_live(sp1, sp2, id))
			continue;
		if (r->n == r->cap) {
			r->cap = r->cap ? r->cap * 2 : 64;
			if ((ni = realloc(r->ids, r->cap * sizeof(*ni))) ==
			    NULL) {
				sbx_buf_release(&b);
				return -1;
			}
			r->ids = ni;
		}
		r->ids[r->n++] = id;
		if (sbx_buf_printf(&r->keep, "%lu %s %s\n", id, sp1, sp2) ==
		    -1) {
			sbx_buf_release(&b);
			return -1;
		}
	}
	sbx_buf_release(&b);
	return 0;
}

static int
registry_store(int fd, const struct reg *r)
{
	if (ftruncate(fd, 0) == -1 || lseek(fd, 0, SEEK_SET) == -1)
		return -1;
	if (r->keep.len > 0 &&
	    sbx_fs_write_all(fd, r->keep.p, r->keep.len) == -1)
		return -1;
	return fsync(fd);
}

static int
taken(const struct reg *r, unsigned long id)
{
	size_t i;

	for (i = 0; i < r->n; i++)
		if (r->ids[i] == id)
			return 1;
	return 0;
}

static int
lock_file(int rootfd, enum sbx_layout_id id, const char *agent,
    struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX];
	int  dfd, fd;

	if ((dfd = sbx_layout_mkdirs(rootfd, sbx_layout_get(id)->parent, agent,
		 e)) == -1)
		return -1;
	SBX_LPATH(rel, id, agent);
	fd = openat(dfd, sbx_layout_leaf(rel),
	    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	close(dfd);
	if (fd == -1 || flock(fd, LOCK_EX) == -1) {
		sbx_error_sys(e, "lock_failed", "cannot lock %s", rel);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

int
sbx_idalloc_assign(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *c, int migrated, unsigned long from_uid,
    unsigned long from_gid, struct sbx_agentid *a, struct sbx_error *e)
{
	struct reg    r;
	char	      who[320];
	unsigned long id;
	int	      lfd, rfd = -1, got, rc = -1;

	memset(&r, 0, sizeof(r));
	if ((lfd = lock_file(rootfd, SBX_L_IDENTITY_LOCK, NULL, e)) == -1)
		return -1;
	if ((got = sbx_idalloc_read(rootfd, agent, a, e)) != 0) {
		rc = got == 1 ? 0 : -1;
		goto out;
	}
	if (sbx_idalloc_check_range(c, NULL, e) == -1 ||
	    (rfd = registry_open(c, e)) == -1)
		goto out;
	if (registry_load(rfd, &r, rootpath, agent, 1) == -1) {
		sbx_error_sys(e, "registry_unavailable",
		    "cannot read the "
		    "registry of per-agent ids %s",
		    c->registry);
		goto out;
	}
	/* The first id is the group of workspace/shared, never an agent's;
	 * an id of a passwd or group entry is skipped (a plain user's range
	 * was not checked as a whole). */
	for (id = c->base + 1; id < c->base + c->size; id++) {
		who[0] = '\0';
		if (!taken(&r, id) &&
		    !colon_file(NULL, "passwd", 2, id, 1, who, sizeof(who)) &&
		    !colon_file(NULL, "group", 2, id, 1, who, sizeof(who)))
			break;
	}
	if (id >= c->base + c->size) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "identity",
		    "identity_range_exhausted",
		    "every id of the per-agent "
		    "range %lu-%lu is taken (%zu agents in %s)",
		    c->base, c->base + c->size - 1, r.n, c->registry);
		sbx_error_hint(e,
		    "remove agents no longer used (sbx provision "
		    "remove) or widen the range: sbx config set --global identity.size "
		    "N");
		e->retryable = 0;
		goto out;
	}
	memset(a, 0, sizeof(*a));
	a->host_uid = a->host_gid = id;
	a->shared_gid = c->base;
	a->uid = a->gid = c->subordinate ? id - c->sub_start + 1 : id;
	a->subordinate = c->subordinate;
	a->from_uid = from_uid;
	a->from_gid = from_gid;
	a->migrated = migrated;
	if (sbx_buf_printf(&r.keep, "%lu %s %s\n", id, rootpath, agent) == -1 ||
	    registry_store(rfd, &r) == -1) {
		sbx_error_sys(e, "registry_unavailable",
		    "cannot write the "
		    "registry of per-agent ids %s",
		    c->registry);
		goto out;
	}
	rc = sbx_idalloc_write(rootfd, agent, a, e);
out:
	if (rfd >= 0)
		close(rfd);
	close(lfd);
	sbx_buf_release(&r.keep);
	free(r.ids);
	return rc;
}

int
sbx_idalloc_release(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *c, struct sbx_error *e)
{
	struct reg r;
	char	   rel[SBX_LAYOUT_PATH_MAX];
	int	   rfd, dfd, rc = 0;

	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if ((dfd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) >= 0) {
		(void)unlinkat(dfd, "identity.json", 0);
		close(dfd);
	}
	memset(&r, 0, sizeof(r));
	if (c->registry[0] != '/' || access(c->registry, F_OK) == -1)
		return 0;
	if ((rfd = registry_open(c, e)) == -1)
		return -1;
	if (registry_load(rfd, &r, rootpath, agent, 1) == -1 ||
	    registry_store(rfd, &r) == -1)
		rc = sbx_error_sys(e, "registry_unavailable",
		    "cannot rewrite "
		    "the registry of per-agent ids %s",
		    c->registry);
	close(rfd);
	sbx_buf_release(&r.keep);
	free(r.ids);
	return rc;
}

int
sbx_idalloc_agent(int rootfd, const char *agent, uid_t *uid, gid_t *gid,
    int *per_agent, struct sbx_agentid *a, struct sbx_error *e)
{
	struct sbx_idcfg c;
	int		 r;

	*per_agent = 0;
	memset(a, 0, sizeof(*a));
	if (sbx_identity_get(rootfd, uid, gid, e) == -1 ||
	    sbx_idalloc_config(rootfd, &c, e) == -1)
		return -1;
	if (!c.per_agent)
		return 0;
	if ((r = sbx_idalloc_read(rootfd, agent, a, e)) == -1)
		return -1;
	if (r == 0 || !a->migrated) {
		sbx_error_set(e, SBX_K_REJECTED, "identity",
		    "identity_migration_pending",
		    "agent %s %s its own uid "
		    "(identity.per_agent is on)",
		    agent,
		    r == 0 ?
			"has no identity record yet: its files still belong to "
			"the shared uid, not" :
			"is half-migrated to");
		sbx_error_hint(e, "sbx provision --agent %s --migrate-identity",
		    agent);
		return -1;
	}
	*uid = (uid_t)a->host_uid;
	*gid = (gid_t)a->host_gid;
	*per_agent = 1;
	return 0;
}

/* ---- migration ---------------------------------------------------------- */

struct walk {
	unsigned long fu, fg, tu, tg;
	long	      limit, changed;
	int	      stopped;
	char	      where[PATH_MAX];
};

/*
 * fchownat beneath dirfd, never through a symlink (a symlink itself is
 * an entry of the agent's and gets its owner), a mount point never
 * crossed: only what belonged to the shared identity changes, so a
 * second pass, or one after an interruption, changes only what is left.
 */
static int
walk_dir(struct walk *w, int dfd, dev_t dev, int depth, struct sbx_error *e)
{
	struct dirent *de;
	struct stat    st;
	DIR	      *d;
	int	       cfd, rc = 0, dup_fd;

	if (depth > 512)
		return sbx_error_set(e, SBX_K_REJECTED, "path", "too_deep",
		    "a tree deeper than 512 directories under %s", w->where);
	if ((dup_fd = dup(dfd)) == -1 || (d = fdopendir(dup_fd)) == NULL) {
		if (dup_fd >= 0)
			close(dup_fd);
		return sbx_error_sys(e, "migrate_failed", "cannot list %s",
		    w->where);
	}
	while (rc == 0 && !w->stopped && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (S_ISDIR(st.st_mode) && st.st_dev == dev) {
			cfd = openat(dfd, de->d_name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cfd >= 0) {
				rc = walk_dir(w, cfd, dev, depth + 1, e);
				close(cfd);
			}
		}
		if (rc != 0 || w->stopped || st.st_dev != dev)
			continue;
		if (st.st_uid != w->fu && st.st_gid != w->fg)
			continue;
		if (w->limit > 0 && w->changed >= w->limit) {
			w->stopped = 1;
			break;
		}
		if (fchownat(dfd, de->d_name,
			st.st_uid == w->fu ? w->tu : st.st_uid,
			st.st_gid == w->fg ? w->tg : st.st_gid,
			AT_SYMLINK_NOFOLLOW) == -1)
			rc = sbx_error_sys(e, "chown_failed",
			    "cannot hand "
			    "%s/%s to uid %lu",
			    w->where, de->d_name, w->tu);
		else
			w->changed++;
	}
	closedir(d);
	return rc;
}

/* One tree, the directory itself last (its owner says "done"). */
static int
walk_tree(struct walk *w, int rootfd, const char *rel, struct sbx_error *e)
{
	struct stat st;
	int	    fd, rc;

	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) == -1) {
		if (sbx_error_absent(e) || errno == ENOENT) {
			memset(e, 0, sizeof(*e));
			return 0;
		}
		return -1;
	}
	snprintf(w->where, sizeof(w->where), "%s", rel);
	if (fstat(fd, &st) == -1) {
		close(fd);
		return sbx_error_sys(e, "migrate_failed", "cannot stat %s",
		    rel);
	}
	rc = walk_dir(w, fd, st.st_dev, 0, e);
	if (rc == 0 && !w->stopped &&
	    (st.st_uid == w->fu || st.st_gid == w->fg)) {
		if (w->limit > 0 && w->changed >= w->limit)
			w->stopped = 1;
		else if (fchown(fd, st.st_uid == w->fu ? w->tu : st.st_uid,
			     st.st_gid == w->fg ? w->tg : st.st_gid) == -1)
			rc = sbx_error_sys(e, "chown_failed",
			    "cannot hand %s "
			    "to uid %lu",
			    rel, w->tu);
		else
			w->changed++;
	}
	close(fd);
	return rc;
}

int
sbx_idalloc_chown_trees(int rootfd, const char *agent, unsigned long fu,
    unsigned long fg, unsigned long tu, unsigned long tg, int with_env,
    long limit, long *changed, int *stopped, struct sbx_error *e)
{
	/* Job records and logs stay in agents/A (0700, the host side's):
	 * the supervisor writes them, the sandbox never reads them. */
	static const enum sbx_layout_id trees[] = { SBX_L_AGENT_HOME,
		SBX_L_AGENT_OUTPUT, SBX_L_ENV_ROOTFS };
	struct walk			w;
	char				rel[SBX_LAYOUT_PATH_MAX];
	size_t				i;
	int				rc = 0;

	memset(&w, 0, sizeof(w));
	w.fu = fu;
	w.fg = fg;
	w.tu = tu;
	w.tg = tg;
	w.limit = limit;
	for (i = 0; rc == 0 && !w.stopped &&
	     i < sizeof(trees) / sizeof(*trees) - (with_env ? 0 : 1);
	     i++) {
		SBX_LPATH(rel, trees[i], agent);
		rc = walk_tree(&w, rootfd, rel, e);
	}
	*changed = w.changed;
	*stopped = w.stopped;
	return rc;
}

/* What a child in the plain user's namespace reports back. */
struct migrate_msg {
	long changed;
	int  stopped, failed;
	char reason[32];
	char message[sizeof(((struct sbx_error *)0)->message)];
};

static int
migrate_in_child(int rootfd, const char *agent, sbx_idalloc_enter_fn enter,
    void *arg, const struct sbx_agentid *a, long limit, long *changed,
    int *stopped, struct sbx_error *e)
{
	struct migrate_msg m;
	struct sbx_error   ce;
	pid_t		   pid;
	ssize_t		   n;
	int		   p[2], status;

	if (pipe2(p, O_CLOEXEC) == -1)
		return sbx_error_sys(e, "migrate_failed", "pipe");
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return sbx_error_sys(e, "migrate_failed", "fork");
	}
	if (pid == 0) {
		memset(&m, 0, sizeof(m));
		memset(&ce, 0, sizeof(ce));
		close(p[0]);
		/* In the namespace the caller is 0 and the range 1..: the
		 * shared identity's files show as 0, the agent's id as its
		 * inside id. */
		if (enter(arg, &ce) == -1 ||
		    sbx_idalloc_chown_trees(rootfd, agent, 0, 0, a->uid, a->gid,
			0, limit, &m.changed, &m.stopped, &ce) == -1) {
			m.failed = 1;
			snprintf(m.reason, sizeof(m.reason), "%s",
			    ce.reason != NULL ? ce.reason : "migrate_failed");
			snprintf(m.message, sizeof(m.message), "%s",
			    ce.message);
		}
		(void)sbx_fs_write_all(p[1], &m, sizeof(m));
		_exit(0);
	}
	close(p[1]);
	memset(&m, 0, sizeof(m));
	do
		n = read(p[0], &m, sizeof(m));
	while (n == -1 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(m))
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, "identity",
		    "migrate_failed", "the migration's helper process died");
	*changed = m.changed;
	*stopped = m.stopped;
	if (m.failed)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, "identity",
		    "migrate_failed", "%s", m.message);
	return 0;
}

int
sbx_idalloc_migrate(int rootfd, const char *rootpath, const char *agent,
    const struct sbx_idcfg *c, sbx_idalloc_enter_fn enter, void *arg,
    long limit, long *changed, struct sbx_agentid *a, struct sbx_error *e)
{
	uid_t su;
	gid_t sg;
	int   lfd, stopped = 0, rc = -1;

	*changed = 0;
	if (!c->per_agent)
		return sbx_error_set(e, SBX_K_REJECTED, "identity",
		    "per_agent_off", "per-agent uids are off%s%s",
		    c->why_shared[0] ? ": " : " (identity.per_agent)",
		    c->why_shared);
	if (c->subordinate && enter == NULL)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "identity",
		    "migrate_failed", "no user namespace to migrate in");
	if (sbx_identity_get(rootfd, &su, &sg, e) == -1)
		return -1;
	if ((lfd = lock_file(rootfd, SBX_L_AGENT_IDENTITY_LOCK, agent, e)) ==
	    -1)
		return -1;
	if (sbx_idalloc_assign(rootfd, rootpath, agent, c, 0, su, sg, a, e) ==
	    -1)
		goto out;
	if (a->migrated) {
		rc = 0;
		goto out;
	}
	if (c->subordinate)
		rc = migrate_in_child(rootfd, agent, enter, arg, a, limit,
		    changed, &stopped, e);
	else
		rc = sbx_idalloc_chown_trees(rootfd, agent, a->from_uid,
		    a->from_gid, a->host_uid, a->host_gid, 1, limit, changed,
		    &stopped, e);
	if (rc == -1)
		goto out;
	if (stopped) {
		rc = sbx_error_set(e, SBX_K_EXECUTION_ERROR, "identity",
		    "migration_interrupted",
		    "the migration of agent %s "
		    "stopped after %ld changes",
		    agent, *changed);
		sbx_error_hint(e,
		    "sbx provision --agent %s "
		    "--migrate-identity",
		    agent);
		goto out;
	}
	a->migrated = 1;
	rc = sbx_idalloc_write(rootfd, agent, a, e);
out:
	close(lfd);
	return rc;
}

int
sbx_idalloc_provisioned(int rootfd, const char *rootpath, const char *agent,
    const json_t *created, sbx_idalloc_enter_fn enter, void *arg,
    struct sbx_error *e)
{
	struct sbx_agentid a;
	struct sbx_idcfg   c;
	struct stat	   st;
	char		   rel[SBX_LAYOUT_PATH_MAX];
	const json_t	  *v;
	size_t		   i;
	long		   changed;
	int		   r, fresh = 0;

	if (sbx_idalloc_config(rootfd, &c, e) == -1)
		return -1;
	if (!c.per_agent)
		return 0;
	if ((r = sbx_idalloc_read(rootfd, agent, &a, e)) != 0)
		return r == -1 ? -1 : 0;
	SBX_LPATH(rel, SBX_L_AGENT_HOME, agent);
	if (created == NULL)
		fresh = fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1 &&
		    errno == ENOENT;
	json_array_foreach (created, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), rel) == 0)
			fresh = 1;
	/* An agent made just now has nothing of the shared identity's to
	 * keep: its ids at once.  One that existed before is migrated by
	 * its own command, which a run names when it refuses it. */
	if (!fresh)
		return 0;
	return sbx_idalloc_migrate(rootfd, rootpath, agent, &c, enter, arg, 0,
	    &changed, &a, e);
}

int
sbx_idalloc_owner(int rootfd, const char *agent, uid_t *uid, gid_t *gid,
    struct sbx_error *e)
{
	struct sbx_agentid a;
	int		   pa;

	return sbx_idalloc_agent(rootfd, agent, uid, gid, &pa, &a, e);
}
