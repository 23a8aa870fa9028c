/*
 * fspolicy.c: a run's file-system policy (sbx-exec(1) PROTECTED PATHS,
 * READ-ONLY AND HIDDEN PATHS, UNIX SOCKETS).
 *
 * A writable root (--workdir) is what a build needs and what an attacker
 * needs: a command that writes .git/hooks/pre-commit, .git/config
 * (core.fsmonitor, core.pager), .envrc, .vscode/tasks.json or a shell rc
 * file there runs code on the host the next time a person runs git, opens
 * the editor or enters the directory.  Those names are protected in every
 * writable root:
 *
 *  - one that exists is bound read-only over itself (a mount point also
 *    cannot be unlinked or renamed away), and each directory on the way
 *    to it is bound over itself: a directory that holds a mount point can
 *    be renamed, mounts and all, and a fresh one put in its place; a
 *    mount point cannot;
 *  - one that does not exist is a name sbx-init's guard refuses to create
 *    in that directory (device, inode, name; cmd/init-guard.c).  It is
 *    never a placeholder file in the user's tree: bwrap would create the
 *    mount point through the read-write bind, on the host, and it would
 *    outlive the run.
 *
 * Everything is looked at without following a symlink (fstatat with
 * AT_SYMLINK_NOFOLLOW beneath the root's descriptor).  A protected name
 * that is a symlink is followed once: to a target inside a writable root,
 * which is protected in its place; elsewhere the target is not writable
 * in the sandbox anyway.  The link's own name stays guarded, so that it
 * cannot be swapped for a directory.  A loop refuses the run.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/openat2.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fspolicy.h"
#include "fsutil.h"
#include "initproto.h"

/* ".git" is the git rule (git_root below), not one read-only path. */
const char *const sbx_fspolicy_default[] = { ".git", ".gitmodules",
	".gitconfig", ".envrc", ".vscode", ".idea", ".claude", ".cursor",
	".mcp.json", ".devcontainer", ".bashrc", ".bash_profile", ".bash_login",
	".profile", ".zshrc", ".zprofile", ".zshenv", ".ripgreprc", ".npmrc",
	".pypirc", ".netrc", ".ssh", ".gnupg", NULL };

#define MAX_ENTRY   256
#define MAX_ENTRIES 256
#define SEARCH_BUF  (32 * 1024)

struct root {
	struct sbx_fspolicy *pol;
	int		     fd;
	const char	    *inside, *src;
	char *const	    *roots;
	size_t		     nroots;
	struct sbx_strv	     bound; /* rels bound rw over themselves */
	struct sbx_strv	     ro; /* rels bound read-only */
	struct sbx_strv	     gitdirs; /* rels under the git rule */
	const struct sbx_strv *entries;
};

void
sbx_fspolicy_init(struct sbx_fspolicy *p)
{
	memset(p, 0, sizeof(*p));
	p->git_search = SBX_GIT_SEARCH_DEFAULT;
}

void
sbx_fspolicy_release(struct sbx_fspolicy *p)
{
	sbx_strv_release(&p->ops);
	sbx_strv_release(&p->init);
	sbx_strv_release(&p->no_git);
	sbx_strv_release(&p->warnings);
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

/* Is rel equal to or under one of v's? */
static int
under(const struct sbx_strv *v, const char *rel)
{
	size_t	 i, n;

	for (i = 0; i < v->n; i++) {
		n = strlen(v->v[i]);
		if (strncmp(rel, v->v[i], n) == 0 && (rel[n] == '\0' ||
		    rel[n] == '/'))
			return 1;
	}
	return 0;
}

/* A relative entry: no empty, `.` or `..` component, no leading /. */
static int
entry_ok(const char *s)
{
	const char	*c = s;
	size_t		 n;

	if (*s == '\0' || *s == '/' || strlen(s) > MAX_ENTRY)
		return 0;
	while (*c != '\0') {
		n = strcspn(c, "/");
		if (n == 0 && c[n] == '/')
			return 0;
		if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' &&
		    c[1] == '.'))
			return 0;
		c += n;
		if (*c == '/')
			c++;
	}
	return 1;
}

static int
strings(const json_t *doc, const char *key, const char *origin, int absolute,
    struct sbx_error *e)
{
	const json_t	*v = json_object_get(doc, key), *x;
	struct sbx_error ignored;
	size_t		 i;

	if (v == NULL)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > MAX_ENTRIES)
		goto bad;
	json_array_foreach (v, i, x) {
		const char *s = json_string_value(x);

		if (s == NULL)
			goto bad;
		if (absolute == 1 ? s[0] != '/' ||
			    sbx_fs_path_check(s, key, &ignored) == -1 ||
			    strcmp(s, "/") == 0 :
			absolute == 0 ? !entry_ok(s) :
					(s[0] == '/' ? sbx_fs_path_check(s, key,
							   &ignored) == -1 ||
						    strcmp(s, "/") == 0 :
						       !entry_ok(s)))
			goto bad;
	}
	return 0;
bad:
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "config", "config_invalid",
	    "%s: `%s` must be an array of %s", origin, key,
	    absolute == 1 ?
		"absolute paths (no `..`, not /)" :
		absolute == 0 ?
		"paths relative to each writable root (no `..`, no leading /)" :
		"paths, absolute or relative to the workdir (no `..`)");
}

int
sbx_fspolicy_config_check(const json_t *doc, const char *origin,
    struct sbx_error *e)
{
	const json_t *v;

	if (strings(doc, "protected_paths", origin, 0, e) == -1 ||
	    strings(doc, "read_paths", origin, 1, e) == -1 ||
	    strings(doc, "deny_paths", origin, 2, e) == -1 ||
	    strings(doc, "allow_unix_sockets", origin, 1, e) == -1)
		return -1;
	if ((v = json_object_get(doc, "allow_git_config")) != NULL &&
	    !json_is_boolean(v))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `allow_git_config` must be true "
		    "or false", origin);
	if ((v = json_object_get(doc, "git_search_limit")) != NULL &&
	    (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > SBX_GIT_SEARCH_MAX))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `git_search_limit` must be an "
		    "integer from 0 to %ld", origin, SBX_GIT_SEARCH_MAX);
	return 0;
}

long
sbx_fspolicy_git_search(const json_t *cfg)
{
	const json_t	*v = json_object_get(cfg, "git_search_limit");

	return json_is_integer(v) ? (long)json_integer_value(v) :
	    SBX_GIT_SEARCH_DEFAULT;
}

int
sbx_fspolicy_match(const char *pattern, const char *rel)
{
	return fnmatch(pattern, rel, FNM_PATHNAME | FNM_PERIOD) == 0;
}

static int
strip_push(struct sbx_strv *v, const char *s)
{
	char	 buf[MAX_ENTRY + 1];
	size_t	 n;

	n = strlen(s);
	if (n > MAX_ENTRY)
		return -1;
	memcpy(buf, s, n + 1);
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	if (has(v, buf))
		return 0;
	return sbx_strv_push(v, buf);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
sbx_fspolicy_entries(const json_t *cfg, char *const *unprotect, size_t nun,
    struct sbx_strv *out, struct sbx_error *e)
{
	struct sbx_strv all = { 0 };
	const json_t   *v, *x;
	size_t		i, j;
	int		git_ok, rc = -1;

	git_ok = json_is_true(json_object_get(cfg, "allow_git_config"));
	for (i = 0; sbx_fspolicy_default[i] != NULL; i++)
		if (strip_push(&all, sbx_fspolicy_default[i]) == -1)
			goto nomem;
	/* An exemption from the git rule is "/NAME" (no entry starts with
	 * a /): that name at the top of the git directory stays writable. */
	if (git_ok && strip_push(&all, "/config") == -1)
		goto nomem;
	v = json_object_get(cfg, "protected_paths");
	json_array_foreach (v, i, x)
		if (json_string_value(x) != NULL &&
		    entry_ok(json_string_value(x)) &&
		    strip_push(&all, json_string_value(x)) == -1)
			goto nomem;
	for (j = 0; j < nun; j++) {
		char   u[MAX_ENTRY + 1];
		size_t n = strlen(unprotect[j]);
		int    found = 0;

		if (n > MAX_ENTRY || !entry_ok(unprotect[j])) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "unprotect",
			    "invalid",
			    "argument `unprotect`: %s is not a path "
			    "inside the workdir",
			    unprotect[j]);
			goto out;
		}
		memcpy(u, unprotect[j], n + 1);
		while (n > 1 && u[n - 1] == '/')
			u[--n] = '\0';
		/* .git/NAME: one name of the git directory, writable. */
		if (strncmp(u, ".git/", 5) == 0 && has(&all, ".git") &&
		    strchr(u + 5, '/') == NULL &&
		    !sbx_git_name_writable(u + 5)) {
			if (strip_push(&all, u + 4) == -1)
				goto nomem;
			continue;
		}
		for (i = 0; i < all.n; i++)
			if (strcmp(all.v[i], u) == 0) {
				free(all.v[i]);
				memmove(all.v + i, all.v + i + 1,
				    (all.n - i) * sizeof(*all.v));
				all.n--;
				found = 1;
				break;
			}
		if (!found) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "unprotect",
			    "not_protected",
			    "argument `unprotect`: %s is not "
			    "a protected path",
			    u);
			sbx_error_hint(e,
			    "protected: the defaults (sbx-exec(1) "
			    "PROTECTED PATHS) and the agent's protected_paths");
			goto out;
		}
	}
	/* Ancestors first: what is under a read-only bind is done. */
	if (all.n > 0)
		qsort(all.v, all.n, sizeof(*all.v), cmp_str);
	for (i = 0; i < all.n; i++)
		if (sbx_strv_push(out, all.v[i]) == -1)
			goto nomem;
	rc = 0;
	goto out;
nomem:
	sbx_error_sys(e, "nomem", "protected paths");
out:
	sbx_strv_release(&all);
	return rc;
}

static int
block(struct root *r, int dfd, const char *name)
{
	struct stat	 st;

	if (fstat(dfd, &st) == -1)
		return -1;
	r->pol->nprotected++;
	return sbx_strv_push(&r->pol->init, SBX_INIT_OPT_BLOCK) |
	    sbx_strv_pushf(&r->pol->init, "%llu:%llu:%s",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	    name);
}

static int
self_bind(struct root *r, const char *rel)
{
	if (has(&r->bound, rel))
		return 0;
	if (sbx_strv_push(&r->bound, rel) == -1)
		return -1;
	return sbx_strv_push(&r->pol->ops, "--bind") |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->src, rel) |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->inside, rel);
}

static int
ro_bind(struct root *r, const char *rel, int entry)
{
	if (under(&r->ro, rel) || has(&r->bound, rel))
		return 0;
	r->pol->nprotected++;
	/* A .git file is bound, but what it names is still to do: it is
	 * not an entry that covers what is under its name. */
	if (sbx_strv_push(entry ? &r->ro : &r->bound, rel) == -1)
		return -1;
	return sbx_strv_push(&r->pol->ops, "--ro-bind") |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->src, rel) |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->inside, rel) |
	    sbx_strv_push(&r->pol->init, SBX_INIT_OPT_PROTECTED) |
	    sbx_strv_pushf(&r->pol->init, "%s/%s", r->inside, rel);
}

static int	protect_one(struct root *, const char *rel, int follow,
		    struct sbx_error *);

/* abs (canonical) relative to this root, or NULL when outside it. */
static const char *
rel_to(const struct root *r, const char *abs)
{
	size_t	 n = strlen(r->inside);

	if (strncmp(abs, r->inside, n) != 0)
		return NULL;
	if (abs[n] == '\0')
		return "";
	return abs[n] == '/' ? abs + n + 1 : NULL;
}

/*
 * A protected name that is a symlink (or a .git file): where it leads, if
 * that is inside this root, is protected in its place, rest appended.
 * Only this root's inside paths are resolvable here: a target in another
 * writable root, or outside all, is left alone (not writable through
 * this root; another root has its own protection).
 */
static int
follow_to(struct root *r, const char *target, const char *rest,
    struct sbx_error *e)
{
	char		 abs[PATH_MAX], canon[PATH_MAX], dir[PATH_MAX], *slash;
	char		 next[PATH_MAX];
	const char	*rel;

	if (snprintf(abs, sizeof(abs), "%s", target) >= (int)sizeof(abs))
		return 0;
	if (realpath(abs, canon) == NULL) {
		if (errno == ELOOP)
			goto loop;
		/* Missing: its directory must exist and be ours. */
		snprintf(dir, sizeof(dir), "%s", abs);
		if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
			return 0;
		*slash = '\0';
		if (realpath(dir, canon) == NULL) {
			if (errno == ELOOP)
				goto loop;
			return 0;
		}
		if (strlen(canon) + strlen(slash + 1) + 2 > sizeof(canon))
			return 0;
		strcat(canon, "/");
		strcat(canon, slash + 1);
	}
	if ((rel = rel_to(r, canon)) == NULL || *rel == '\0')
		return 0;
	if (snprintf(next, sizeof(next), "%s%s%s", rel, *rest ? "/" : "",
	    rest) >= (int)sizeof(next))
		return 0;
	return protect_one(r, next, 0, e);
loop:
	return sbx_error_set(e, SBX_K_REJECTED, "workdir", "symlink_loop",
	    "refusing to run: the protected path %s is a symlink that loops "
	    "(%s)", target, strerror(ELOOP));
}

/* A worktree's .git file: "gitdir: PATH", relative to the root. */
static int
git_file(struct root *r, int dfd, const char *rest, struct sbx_error *e)
{
	char	 buf[PATH_MAX + 16], abs[PATH_MAX * 2];
	ssize_t	 n;
	int	 fd;

	if ((fd = openat(dfd, ".git", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) ==
	    -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 8 || strncmp(buf, "gitdir: ", 8) != 0)
		return 0;
	buf[n] = '\0';
	buf[strcspn(buf, "\r\n")] = '\0';
	if (buf[8] == '/')
		snprintf(abs, sizeof(abs), "%s", buf + 8);
	else
		snprintf(abs, sizeof(abs), "%s/%s", r->inside, buf + 8);
	return follow_to(r, abs, rest, e);
}

static int
protect_one(struct root *r, const char *rel, int follow, struct sbx_error *e)
{
	char		 cur[PATH_MAX * 2], comp[NAME_MAX + 1], lnk[PATH_MAX];
	char		 abs[PATH_MAX * 2];
	const char	*c = rel, *rest;
	struct stat	 st;
	ssize_t		 n;
	size_t		 len;
	int		 fd, nfd, rc = 0, first = 1;

	if (under(&r->ro, rel))
		return 0;
	if ((fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return sbx_error_sys(e, "protect", "protecting %s", rel);
	cur[0] = '\0';
	while (*c != '\0') {
		len = strcspn(c, "/");
		if (len > NAME_MAX)
			break;
		memcpy(comp, c, len);
		comp[len] = '\0';
		rest = c + len + (c[len] == '/');
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno != ENOENT) {
				rc = sbx_error_sys(e, "protect", "cannot look "
				    "at %s/%s%s%s", r->inside, cur, *cur ? "/" :
				    "", comp);
				break;
			}
			/*
			 * A repository that does not exist yet: its name is
			 * the git rule's (the guard refuses it), or, with
			 * the rule lifted, the run's to make, and reported
			 * after it (no_git).
			 */
			if (first && strcmp(comp, ".git") == 0 && *rest)
				break;
			rc = block(r, fd, comp);
			break;
		}
		snprintf(abs, sizeof(abs), "%s%s%s", cur, *cur ? "/" : "",
		    comp);
		if (S_ISLNK(st.st_mode)) {
			/* The link's name stays: no directory in its
			 * place. */
			if ((rc = block(r, fd, comp)) == -1 || !follow)
				break;
			if ((n = readlinkat(fd, comp, lnk, sizeof(lnk) - 1)) <=
			    0)
				break;
			lnk[n] = '\0';
			if (lnk[0] == '/')
				snprintf(abs, sizeof(abs), "%s", lnk);
			else
				snprintf(abs, sizeof(abs), "%s%s%s/%s",
				    r->inside, *cur ? "/" : "", cur, lnk);
			rc = follow_to(r, abs, rest, e);
			break;
		}
		if (*rest == '\0') {
			rc = ro_bind(r, abs, 1);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (first && strcmp(comp, ".git") == 0 &&
			    S_ISREG(st.st_mode) && follow) {
				/* Where the repository is, written here:
				 * read-only too. */
				if ((rc = ro_bind(r, ".git", 0)) == 0)
					rc = git_file(r, fd, rest, e);
			}
			break;
		}
		if ((rc = self_bind(r, abs)) == -1)
			break;
		if ((nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1) {
			rc = sbx_error_sys(e, "protect", "cannot open %s/%s",
			    r->inside, abs);
			break;
		}
		close(fd);
		fd = nfd;
		snprintf(cur, sizeof(cur), "%s", abs);
		c = rest;
		first = 0;
	}
	close(fd);
	if (rc == -1 && e->kind == NULL)
		sbx_error_sys(e, "nomem", "protected paths");
	return rc;
}

/* Expand one glob entry against what exists, component by component. */
static int
glob_walk(struct root *r, int dfd, const char *prefix, const char *pat,
    struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1], rel[PATH_MAX];
	const char	*rest;
	struct dirent	*de;
	struct stat	 st;
	size_t		 len = strcspn(pat, "/");
	DIR		*d;
	int		 fd, rc = 0, sub;

	if (len > NAME_MAX)
		return 0;
	memcpy(comp, pat, len);
	comp[len] = '\0';
	rest = pat + len + (pat[len] == '/');
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") ==
		    0 || fnmatch(comp, de->d_name, FNM_PERIOD) != 0)
			continue;
		snprintf(rel, sizeof(rel), "%s%s%s", prefix, *prefix ? "/" :
		    "", de->d_name);
		if (*rest == '\0') {
			rc = protect_one(r, rel, 1, e);
			continue;
		}
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if ((sub = openat(dfd, de->d_name, O_PATH | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		rc = glob_walk(r, sub, rel, rest, e);
		close(sub);
	}
	closedir(d);
	return rc;
}

/*
 * The git rule.  Git finds configuration and hooks through many names of
 * a git directory, not only config and hooks: commondir (read for every
 * repository: a config of the run's own, core.fsmonitor and all, in a
 * directory it names), config.worktree, worktrees/ID/{commondir,gitdir},
 * modules/NAME (submodules, which `git status` recurses into), and more
 * with each version.  So the rule is the other way round: a git directory
 * is read-only as a whole, but for what commits, fetches, merges, stashes
 * and gc write (sbx_git_name_writable, initproto.h, shared with the
 * guard).  What exists is bound read-only here, the git directory itself
 * over itself (it cannot be renamed away); a name that does not exist is
 * refused by sbx-init's guard (-g, -G), which applies the same rule to a
 * .git at any depth of the writable root, existing or made by the run.
 */

/* Is rel the git rule's already? */
static int
git_done(struct root *r, const char *rel)
{
	return has(&r->gitdirs, rel) || under(&r->ro, rel);
}

/* Exempt from the rule by allow_git_config or --unprotect .git/NAME. */
static int
git_exempt(const struct root *r, const char *name)
{
	size_t	 i;

	for (i = 0; i < r->entries->n; i++)
		if (r->entries->v[i][0] == '/' &&
		    strcmp(r->entries->v[i] + 1, name) == 0)
			return 1;
	return 0;
}

/* Does rel have a .git component (the guard's -g covers it then)? */
static int
has_git_comp(const char *rel)
{
	const char	*c = rel;
	size_t		 n;

	for (;;) {
		n = strcspn(c, "/");
		if (n == 4 && strncmp(c, ".git", 4) == 0)
			return 1;
		if (c[n] == '\0')
			return 0;
		c += n + 1;
	}
}

static int	git_rule(struct root *, const char *rel, struct sbx_error *);
static int	rel_of(const struct root *, const char *base, const char *path,
		    char *out, size_t cap);

/* worktrees/ID/gitdir: the worktree's .git file, read-only if here. */
static int
worktree_file(struct root *r, const char *admin, struct sbx_error *e)
{
	struct sbx_error ignored;
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct stat	 st;
	char		 path[PATH_MAX], rel[PATH_MAX];
	int		 rc = 0;

	if (snprintf(path, sizeof(path), "%s/gitdir", admin) >=
	    (int)sizeof(path))
		return 0;
	if (sbx_fs_read_file_at(r->fd, path, PATH_MAX, &b, &ignored) == 0 &&
	    b.p != NULL) {
		b.p[strcspn(b.p, "\r\n")] = '\0';
		if (b.p[0] == '/' && rel_of(r, "", b.p, rel, sizeof(rel)) ==
		    0 && fstatat(r->fd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && !under(&r->ro, rel) &&
		    !has(&r->bound, rel))
			rc = ro_bind(r, rel, 0) == -1 ? sbx_error_sys(e,
			    "nomem", "protected paths") : 0;
	}
	sbx_buf_release(&b);
	return rc;
}

/* modules/ or worktrees/: read-only, each git directory in it by the rule. */
static int
git_nested(struct root *r, int dfd, const char *rel, struct sbx_error *e)
{
	char		 sub[PATH_MAX];
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd, rc = 0;

	/*
	 * Read-only over itself, but not an entry that covers what is
	 * below it: each git directory in it gets its writable parts bound
	 * again on top, and its config, hooks... read-only once more (they
	 * would be writable through that bind).  Counted as bound, so that
	 * nothing binds it read-write again as a directory on the way.
	 */
	if (!has(&r->bound, rel) && (sbx_strv_push(&r->bound, rel) |
	    sbx_strv_push(&r->pol->ops, "--ro-bind") |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->src, rel) |
	    sbx_strv_pushf(&r->pol->ops, "%s/%s", r->inside, rel) |
	    sbx_strv_push(&r->pol->init, SBX_INIT_OPT_PROTECTED) |
	    sbx_strv_pushf(&r->pol->init, "%s/%s", r->inside, rel)))
		return sbx_error_sys(e, "nomem", "protected paths");
	r->pol->nprotected++;
	if ((fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1)
		return 0;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISDIR(st.st_mode))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		if ((rc = git_rule(r, sub, e)) == -1)
			break;
		/* A linked worktree in this root: its .git file (named by
		 * worktrees/ID/gitdir) says where its git directory is. */
		if (strlen(rel) >= 10 &&
		    strcmp(rel + strlen(rel) - 10, "/worktrees") == 0)
			rc = worktree_file(r, sub, e);
	}
	closedir(d);
	return rc;
}

/* rel (a directory beneath the root, no symlink on the way): the rule. */
static int
git_rule(struct root *r, const char *rel, struct sbx_error *e)
{
	char		 sub[PATH_MAX];
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 dfd, fd, rc = 0;

	if (has(&r->gitdirs, rel))
		return 0;
	if (r->gitdirs.n >= MAX_ENTRIES)
		return sbx_error_set(e, SBX_K_REJECTED, "workdir",
		    "too_many_repositories",
		    "refusing to run: more than %d "
		    "git directories to protect in %s",
		    MAX_ENTRIES, r->inside);
	if (sbx_strv_push(&r->gitdirs, rel) == -1)
		return sbx_error_sys(e, "nomem", "protected paths");
	/* The directory over itself (and each one on the way): a mount
	 * point cannot be renamed away. */
	{
		char	 pre[PATH_MAX];
		size_t	 i;

		snprintf(pre, sizeof(pre), "%s", rel);
		for (i = 0; pre[i] != '\0'; i++)
			if (pre[i] == '/') {
				pre[i] = '\0';
				if (!under(&r->ro, pre) &&
				    self_bind(r, pre) == -1)
					return sbx_error_sys(e, "nomem",
					    "protected paths");
				pre[i] = '/';
			}
		if (self_bind(r, rel) == -1)
			return sbx_error_sys(e, "nomem", "protected paths");
	}
	/* A git directory named otherwise (a .git file's gitdir): the
	 * guard's -g sees no .git in its path. */
	if (!has_git_comp(rel) &&
	    (sbx_strv_push(&r->pol->init, SBX_INIT_OPT_GITDIR) |
	    sbx_strv_pushf(&r->pol->init, "%s/%s", r->inside, rel)))
		return sbx_error_sys(e, "nomem", "protected paths");
	r->pol->nprotected++;
	if ((dfd = sbx_fs_open_beneath(r->fd, rel, O_RDONLY | O_DIRECTORY,
	    e)) == -1)
		return -1;
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		return sbx_error_sys(e, "protect", "cannot read %s/%s",
		    r->inside, rel);
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 ||
		    sbx_git_name_writable(de->d_name) ||
		    git_exempt(r, de->d_name))
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		if ((strcmp(de->d_name, "modules") == 0 ||
		    strcmp(de->d_name, "worktrees") == 0) &&
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			int nfd = openat(dfd, de->d_name, O_PATH |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (nfd == -1)
				continue;
			rc = git_nested(r, nfd, sub, e);
			close(nfd);
			continue;
		}
		/* Files, directories, links (followed once, as every
		 * protected name). */
		rc = protect_one(r, sub, 1, e);
	}
	closedir(d);
	close(dfd);
	return rc;
}

/*
 * Lexically: base/path (path relative to base, both relative to the
 * root, or path absolute) as a path relative to the root, or -1 when it
 * is outside (or `..` climbs out of it).
 */
static int
rel_of(const struct root *r, const char *base, const char *path, char *out,
    size_t cap)
{
	char		 buf[PATH_MAX * 2];
	const char	*c, *rel;
	size_t		 o = 0, n;

	if (path[0] == '/') {
		if ((rel = rel_to(r, path)) == NULL)
			return -1;
		snprintf(buf, sizeof(buf), "%s", rel);
	} else if (snprintf(buf, sizeof(buf), "%s%s%s", base, *base ? "/" :
	    "", path) >= (int)sizeof(buf))
		return -1;
	out[0] = '\0';
	for (c = buf; *c != '\0'; c += *c == '/') {
		n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.')) {
			c += n;
			continue;
		}
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			char *sl;

			if (o == 0)
				return -1;
			sl = strrchr(out, '/');
			o = sl == NULL ? 0 : (size_t)(sl - out);
			out[o] = '\0';
			c += n;
			continue;
		}
		if (o + n + 2 > cap)
			return -1;
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, c, n);
		o += n;
		out[o] = '\0';
		c += n;
	}
	return o == 0 ? -1 : 0;
}

/* A .git file at rel ("" for the root's): read-only; its gitdir, when in
 * this root, by the rule. */
static int
git_file_rule(struct root *r, const char *dir, struct sbx_error *e)
{
	struct sbx_error ignored;
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct stat	 st;
	char		 name[PATH_MAX], rel[PATH_MAX];
	char		*v;
	int		 rc = 0;

	snprintf(name, sizeof(name), "%s%s.git", dir, *dir ? "/" : "");
	if (ro_bind(r, name, 0) == -1)
		return sbx_error_sys(e, "nomem", "protected paths");
	if (sbx_fs_read_file_at(r->fd, name, PATH_MAX, &b, &ignored) == -1)
		return 0;
	if (b.len > 8 && strncmp(b.p, "gitdir: ", 8) == 0) {
		v = b.p + 8;
		v[strcspn(v, "\r\n")] = '\0';
		if (rel_of(r, dir, v, rel, sizeof(rel)) == 0 &&
		    !git_done(r, rel) && fstatat(r->fd, rel, &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			rc = git_rule(r, rel, e);
	}
	sbx_buf_release(&b);
	return rc;
}

/* The repository at dir ("" for the root): .git a directory, a file, a
 * link (followed once) or nothing (its name refused by the guard). */
static int
git_at(struct root *r, const char *dir, struct sbx_error *e)
{
	struct stat	 st;
	char		 name[PATH_MAX];

	snprintf(name, sizeof(name), "%s%s.git", dir, *dir ? "/" : "");
	if (fstatat(r->fd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;
	if (S_ISDIR(st.st_mode))
		return git_rule(r, name, e);
	if (S_ISREG(st.st_mode))
		return git_file_rule(r, dir, e);
	return protect_one(r, name, 1, e);
}

/* One value of a git config: unquoted, comments and escapes gone. */
static void
cfg_value(char *v)
{
	char	*o = v;
	int	 q = 0;

	for (; *v != '\0'; v++) {
		if (*v == '"') {
			q = !q;
			continue;
		}
		if (!q && (*v == '#' || *v == ';'))
			break;
		if (*v == '\\' && v[1] != '\0')
			v++;
		*o++ = *v;
	}
	while (o > v && (o[-1] == ' ' || o[-1] == '\t'))
		o--;
	*o = '\0';
}

/* A path from a config: protected when it is in this root. */
static int
cfg_protect(struct root *r, const char *base, const char *path,
    struct sbx_error *e)
{
	char	 rel[PATH_MAX], abs[PATH_MAX];
	char	*sl;
	int	 rc;

	if (strncmp(path, "~/", 2) == 0 && getenv("HOME") != NULL) {
		snprintf(abs, sizeof(abs), "%s/%s", getenv("HOME"), path + 2);
		path = abs;
	}
	if (rel_of(r, base, path, rel, sizeof(rel)) == -1 ||
	    !entry_ok(rel))
		return 0;
	/* husky 9: core.hooksPath=.husky/_, whose hooks run the scripts
	 * one level up: that directory as a whole (first: a directory
	 * bound read-write on the way to the other could not be bound
	 * read-only after). */
	if ((sl = strrchr(rel, '/')) != NULL && strcmp(sl, "/_") == 0) {
		*sl = '\0';
		if ((rc = protect_one(r, rel, 1, e)) == -1)
			return -1;
		*sl = '/';
	}
	return protect_one(r, rel, 1, e);
}

/*
 * What a git config names that runs or is read as configuration, and
 * may be in the writable root: core.hooksPath (relative to the work
 * tree), include.path and includeIf.*.path (relative to the config's
 * directory), and the commands git runs on its own (core.fsmonitor in
 * every `git status`, filters on checkout and status, pagers, editors,
 * helpers) when they are a path.  Any of them in the tree would be code
 * the run could write for the host's next git.
 */
static int
git_cfg_paths(struct root *r, const char *text, const char *cfgdir,
    const char *wt, struct sbx_error *e)
{
	static const char *const cmds[] = { "core.fsmonitor", "core.pager",
	    "core.editor", "core.askpass", "core.sshcommand",
	    "sequence.editor", "gpg.program", "credential.helper",
	    "*.clean", "*.smudge", "*.process", "*.textconv", "*.command",
	    "*.driver", "*.program", "*.helper", NULL };
	char		 sect[128] = "", key[256], line[PATH_MAX + 256];
	const char	*c = text;
	char		*k, *v, *end;
	size_t		 n, i;
	int		 rc = 0;

	while (rc == 0 && *c != '\0') {
		n = strcspn(c, "\n");
		if (n >= sizeof(line)) {
			c += n + (c[n] == '\n');
			continue;
		}
		memcpy(line, c, n);
		line[n] = '\0';
		c += n + (c[n] == '\n');
		for (k = line; *k == ' ' || *k == '\t'; k++)
			;
		if (*k == '[') {
			/* [core], [includeIf "gitdir:x"], [a.b]: the
			 * section's first word is what matters here. */
			n = strcspn(k + 1, " \t\"]");
			if (n >= sizeof(sect))
				n = sizeof(sect) - 1;
			for (i = 0; i < n; i++)
				sect[i] = (char)(k[1 + i] | 0x20);
			sect[n] = '\0';
			continue;
		}
		if ((v = strchr(k, '=')) == NULL)
			continue;
		*v++ = '\0';
		for (end = v - 1; end > k && (end[-1] == ' ' ||
		    end[-1] == '\t'); end--)
			;
		*end = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		cfg_value(v);
		if (snprintf(key, sizeof(key), "%s.%s", sect, k) >=
		    (int)sizeof(key))
			continue;
		for (i = 0; key[i] != '\0'; i++)
			key[i] = (char)(key[i] >= 'A' && key[i] <= 'Z' ?
			    key[i] | 0x20 : key[i]);
		if (strcmp(key, "core.hookspath") == 0) {
			rc = cfg_protect(r, wt, v, e);
			continue;
		}
		if (strcmp(key, "include.path") == 0 ||
		    strcmp(key, "includeif.path") == 0) {
			rc = cfg_protect(r, cfgdir, v, e);
			continue;
		}
		for (i = 0; cmds[i] != NULL; i++) {
			const char *dot = strrchr(key, '.');

			if (cmds[i][0] == '*' ? dot == NULL ||
			    strcmp(dot, cmds[i] + 1) != 0 :
			    strcmp(key, cmds[i]) != 0)
				continue;
			/* The command's first word, when it is a path. */
			if (*v == '!')
				v++;
			v[strcspn(v, " \t")] = '\0';
			if (strchr(v, '/') != NULL)
				rc = cfg_protect(r, wt, v, e);
			break;
		}
	}
	return rc;
}

/* The work tree of gitdir (DIR/.git: DIR, "" for the root's), which a
 * relative core.hooksPath or command of its config is relative to; -1
 * when it is not known here (a bare one, modules/NAME). */
static int
work_tree(const char *gitdir, char *out, size_t cap)
{
	size_t	 n = strlen(gitdir);

	if (strcmp(gitdir, ".git") == 0) {
		out[0] = '\0';
		return 0;
	}
	if (n < 5 || strcmp(gitdir + n - 5, "/.git") != 0 || n - 5 >= cap)
		return -1;
	memcpy(out, gitdir, n - 5);
	out[n - 5] = '\0';
	return 0;
}

/* The root's repository config (beneath the root) and the caller's own
 * (~/.gitconfig, $XDG_CONFIG_HOME/git/config): what they name. */
static int
git_configs(struct root *r, struct sbx_error *e)
{
	struct sbx_error ignored;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*home = getenv("HOME");
	const char	*xdg = getenv("XDG_CONFIG_HOME");
	char		 path[PATH_MAX], wt[PATH_MAX];
	size_t		 i;
	int		 fd, rc = 0;

	for (i = 0; rc == 0 && i < r->gitdirs.n; i++) {
		/* The repository's own, and its worktree config. */
		static const char *const names[] = { "config",
			"config.worktree" };
		size_t			 j;

		for (j = 0; rc == 0 && j < 2; j++) {
			snprintf(path, sizeof(path), "%s/%s", r->gitdirs.v[i],
			    names[j]);
			sbx_buf_reset(&b);
			if (sbx_fs_read_file_at(r->fd, path, 1 << 20, &b,
				&ignored) != 0 ||
			    b.p == NULL)
				continue;
			if (work_tree(r->gitdirs.v[i], wt, sizeof(wt)) != 0)
				wt[0] = '\0';
			rc = git_cfg_paths(r, b.p, r->gitdirs.v[i], wt, e);
		}
	}
	for (i = 0; rc == 0 && i < 2; i++) {
		if (i == 0 && home != NULL)
			snprintf(path, sizeof(path), "%s/.gitconfig", home);
		else if (i == 1 && xdg != NULL && xdg[0] == '/')
			snprintf(path, sizeof(path), "%s/git/config", xdg);
		else if (i == 1 && home != NULL)
			snprintf(path, sizeof(path), "%s/.config/git/config",
			    home);
		else
			continue;
		if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) ==
		    -1)
			continue;
		sbx_buf_reset(&b);
		if (sbx_fs_read_fd(fd, &b, 1 << 20) == 0 && b.p != NULL)
			rc = git_cfg_paths(r, b.p, "", "", e);
		close(fd);
	}
	sbx_buf_release(&b);
	return rc;
}

/*
 * Hook managers whose hook, in .git/hooks, runs what a file in the work
 * tree says: the pre-commit framework (.pre-commit-config.yaml, `entry:`
 * commands of `repo: local`), lefthook (lefthook.yml and its variants).
 * Husky is core.hooksPath (git_cfg_paths).  When the repository has a hook
 * of its own (not a sample), those files are protected like an entry: a
 * run that rewrote one would run code at the person's next commit.
 */
static int
git_hook_configs(struct root *r, const char *gitdir, const char *wt,
    struct sbx_error *e)
{
	static const char *const files[] = { ".pre-commit-config.yaml",
	    "lefthook.yml", ".lefthook.yml", "lefthook.yaml",
	    ".lefthook.yaml", "lefthook-local.yml", ".lefthook-local.yml",
	    NULL };
	struct sbx_error ignored;
	struct dirent	*de;
	char		 rel[PATH_MAX];
	size_t		 i, n;
	int		 dfd, fd, any = 0, rc = 0;
	DIR		*d;

	if (snprintf(rel, sizeof(rel), "%s/hooks", gitdir) >=
	    (int)sizeof(rel))
		return 0;
	if ((dfd = sbx_fs_open_beneath(r->fd, rel, O_RDONLY | O_DIRECTORY,
	    &ignored)) == -1)
		return 0;
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		close(dfd);
		return 0;
	}
	while (!any && (de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		any = de->d_name[0] != '.' && !(n > 7 &&
		    strcmp(de->d_name + n - 7, ".sample") == 0);
	}
	closedir(d);
	close(dfd);
	for (i = 0; any && rc == 0 && files[i] != NULL; i++) {
		if (snprintf(rel, sizeof(rel), "%s%s%s", wt, *wt ? "/" : "",
		    files[i]) >= (int)sizeof(rel))
			continue;
		rc = protect_one(r, rel, 1, e);
	}
	return rc;
}

/*
 * The other repositories below the root: a checkout inside the checkout
 * (vendor/foo/.git), a directory of separately cloned repositories, a
 * bare NAME.git, a git directory made with --separate-git-dir.  The
 * guard refuses *creating* a name in a .git, but an existing config or
 * hooks/post-checkout opened for writing without O_CREAT (>, cp, mv over
 * it, truncate) is not something it sees, and the host's next `git
 * status` in that directory would run what the sandbox wrote.  So they
 * are searched for when the run is prepared and get the same rule as the
 * root's .git.
 *
 * Breadth first, so that the shallow repositories (where a person runs
 * git) are found first, and bounded: SBX_GIT_SEARCH_DEPTH levels down,
 * and at most `limit` directories are read (git_search_limit,
 * sbx-config(1), 0 for none); the search skips nothing by
 * name (a repository can be anywhere, node_modules included).  Past the
 * bound the rest of the tree is not searched and the run says so in a
 * warning: refusing every run in a large tree would only teach people to
 * turn the search off.  A directory is a repository when it has a .git
 * (directory, file or link: git_at), and a git directory itself when it
 * holds HEAD, objects and refs (what git's is_git_directory asks): that
 * covers NAME.git and --separate-git-dir, whatever the name.  Neither is
 * descended into (git_rule handles modules/ and worktrees/).  Symlinks
 * are not followed: a link to a repository in this root is searched at
 * its real place, one elsewhere is not writable here.
 */
/* A directory of the search, beneath the root, no symlink on the way: one
 * openat2 (the kernel walks the path), or a walk of openat per component
 * where the kernel lacks it. */
static int
search_open(int rootfd, const char *rel)
{
	static int	 no_openat2;
	struct sbx_error ignored;
	struct open_how	 how;
	int		 fd;

	if (*rel == '\0')
		return openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (!no_openat2) {
		memset(&how, 0, sizeof(how));
		how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
		    RESOLVE_NO_MAGICLINKS;
		fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
		if (fd >= 0 || (errno != ENOSYS && errno != E2BIG &&
		    errno != EPERM))
			return fd;
		no_openat2 = 1;
	}
	return sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
	    &ignored);
}

/* Levels of rel below the root: "" 0, "a" 1, "a/b" 2. */
static int
depth_of(const char *rel)
{
	int d = *rel != '\0';

	for (; *rel != '\0'; rel++)
		d += *rel == '/';
	return d;
}

static int
git_search(struct root *r, struct sbx_error *e)
{
	struct sbx_strv	 q = SBX_STRV_INIT, kids = SBX_STRV_INIT;
	struct dirent64	*de;
	struct stat	 st;
	char		 rel[PATH_MAX], *buf;
	const char	*dir;
	size_t		 head = 0, i;
	ssize_t		 n, off;
	int		 fd, rc = 0, gitdir, dot_git, dropped = 0;
	unsigned	 marks;

	if (r->pol->git_search <= 0)
		return 0;
	/* getdents64 into one buffer, not opendir: a directory costs an
	 * open, its reads and a close (this runs before every run). */
	if ((buf = malloc(SEARCH_BUF)) == NULL || sbx_strv_push(&q, "") == -1) {
		free(buf);
		return sbx_error_sys(e, "nomem", "protected paths");
	}
	while (rc == 0 && head < q.n) {
		dir = q.v[head++];
		if ((fd = search_open(r->fd, dir)) == -1)
			continue;	/* gone, or no longer a directory */
		marks = 0;
		dot_git = 0;
		sbx_strv_release(&kids);
		while (rc == 0 && (n = getdents64(fd, buf, SEARCH_BUF)) > 0) {
			for (off = 0; rc == 0 && off < n; off += de->d_reclen) {
				de = (struct dirent64 *)(void *)(buf + off);
				if (strcmp(de->d_name, ".") == 0 ||
				    strcmp(de->d_name, "..") == 0)
					continue;
				if (strcmp(de->d_name, ".git") == 0) {
					dot_git = 1;
					continue;
				}
				marks |= strcmp(de->d_name, "HEAD") == 0 ? 1 :
				    strcmp(de->d_name, "objects") == 0 ? 2 :
				    strcmp(de->d_name, "refs") == 0 ? 4 : 0;
				if (de->d_type == DT_UNKNOWN) {
					if (fstatat(fd, de->d_name, &st,
					    AT_SYMLINK_NOFOLLOW) == -1 ||
					    !S_ISDIR(st.st_mode))
						continue;
				} else if (de->d_type != DT_DIR)
					continue;
				if (snprintf(rel, sizeof(rel), "%s%s%s", dir,
				    *dir ? "/" : "", de->d_name) >=
				    (int)sizeof(rel))
					continue;
				if (sbx_strv_push(&kids, rel) == -1) {
					rc = sbx_error_sys(e, "nomem",
					    "protected paths");
					break;
				}
			}
		}
		close(fd);
		if (rc == -1)
			break;
		/* The root's own .git is git_root's; a git directory is not
		 * a work tree to search. */
		gitdir = *dir != '\0' && marks == 7;
		if (gitdir) {
			if (!git_done(r, dir))
				rc = git_rule(r, dir, e);
			continue;
		}
		if (dot_git && *dir != '\0' && strlen(dir) < PATH_MAX - 6)
			rc = git_at(r, dir, e);
		/* The bound: a directory past it is never read (nor kept:
		 * one huge directory costs no more than the bound). */
		/* The depth bound: a per-run walk of the whole tree is what
		 * DESIGN §7 rules out; nested repositories sit near the top
		 * (vendor/X, packages/X).  Deeper ones get the guard only. */
		if (depth_of(dir) >= SBX_GIT_SEARCH_DEPTH)
			continue;
		for (i = 0; rc == 0 && i < kids.n; i++) {
			if (under(&r->ro, kids.v[i]))
				continue;
			if (q.n >= (size_t)r->pol->git_search) {
				dropped = 1;
				break;
			}
			if (sbx_strv_push(&q, kids.v[i]) == -1)
				rc = sbx_error_sys(e, "nomem",
				    "protected paths");
		}
	}
	if (rc == 0 && dropped) {
		r->pol->git_search_hit++;
		if (sbx_strv_pushf(&r->pol->warnings, "the search for git "
		    "repositories below %s stopped at %ld directories "
		    "(git_search_limit): a repository deeper in the tree is "
		    "not protected from writes to its existing config and "
		    "hooks", r->inside, r->pol->git_search) == -1)
			rc = sbx_error_sys(e, "nomem", "protected paths");
	}
	sbx_strv_release(&kids);
	sbx_strv_release(&q);
	free(buf);
	return rc;
}

/*
 * The root's repository, and the submodules its .gitmodules names
 * (`git status` recurses into them): each one's .git (a file naming
 * .git/modules/NAME, or a directory) by the rule.  Then every other
 * repository below the root that a bounded search finds (git_search).
 */
static int
git_root(struct root *r, struct sbx_error *e)
{
	struct sbx_error ignored;
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 rel[PATH_MAX];
	char		*c, *line, *v;
	size_t		 n, i;
	int		 rc;

	if (sbx_strv_push(&r->pol->init, SBX_INIT_OPT_GITROOT) |
	    sbx_strv_push(&r->pol->init, r->inside))
		return sbx_error_sys(e, "nomem", "protected paths");
	/* The exemptions, for the guard too (once per run). */
	for (i = 0; i < r->entries->n; i++)
		if (r->entries->v[i][0] == '/' &&
		    !has(&r->pol->init, r->entries->v[i] + 1) &&
		    (sbx_strv_push(&r->pol->init, SBX_INIT_OPT_GITOPEN) |
		    sbx_strv_push(&r->pol->init, r->entries->v[i] + 1)))
			return sbx_error_sys(e, "nomem", "protected paths");
	if ((rc = git_at(r, "", e)) == -1)
		return -1;
	if (sbx_fs_read_file_at(r->fd, ".gitmodules", 1 << 20, &b,
	    &ignored) == 0 && b.p != NULL) {
		for (c = b.p; rc == 0 && *c != '\0'; c += n + (c[n] == '\n')) {
			n = strcspn(c, "\n");
			line = c;
			while (*line == ' ' || *line == '\t')
				line++;
			if (strncmp(line, "path", 4) != 0)
				continue;
			v = line + 4;
			while (*v == ' ' || *v == '\t')
				v++;
			if (*v != '=' || (size_t)(v - c) >= n)
				continue;
			v++;
			while (*v == ' ' || *v == '\t')
				v++;
			if ((size_t)(v - c) >= n ||
			    (size_t)(c + n - v) >= sizeof(rel))
				continue;
			memcpy(rel, v, (size_t)(c + n - v));
			rel[c + n - v] = '\0';
			cfg_value(rel);
			if (entry_ok(rel) && strlen(rel) < PATH_MAX - 6)
				rc = git_at(r, rel, e);
		}
	}
	sbx_buf_release(&b);
	if (rc == 0)
		rc = git_search(r, e);
	if (rc == 0)
		rc = git_configs(r, e);
	/* The root's repository (first), and each nested one whose work
	 * tree is known (DIR/.git). */
	for (i = 0; rc == 0 && i < r->gitdirs.n; i++) {
		char wt[PATH_MAX];

		if (work_tree(r->gitdirs.v[i], wt, sizeof(wt)) == 0)
			rc = git_hook_configs(r, r->gitdirs.v[i], wt, e);
		else if (i == 0)
			rc = git_hook_configs(r, r->gitdirs.v[i], "", e);
	}
	return rc;
}

int
sbx_fspolicy_protect(struct sbx_fspolicy *p, int root_fd, const char *inside,
    const char *src, char *const *roots, size_t nroots,
    const struct sbx_strv *entries, struct sbx_error *e)
{
	struct root	 r;
	struct stat	 st;
	size_t		 i;
	int		 rc = 0, dfd;

	memset(&r, 0, sizeof(r));
	r.pol = p;
	r.fd = root_fd;
	r.inside = inside;
	r.src = src;
	r.roots = roots;
	r.nroots = nroots;
	r.entries = entries;
	for (i = 0; rc == 0 && i < entries->n; i++) {
		const char *s = entries->v[i];

		if (s[0] == '/')
			continue;	/* an exemption from the git rule */
		if (strcmp(s, ".git") == 0) {
			rc = git_root(&r, e);
			continue;
		}
		if (strpbrk(s, "*?[") == NULL) {
			rc = protect_one(&r, s, 1, e);
			continue;
		}
		/* A glob protects what matches when the run starts. */
		if ((dfd = fcntl(root_fd, F_DUPFD_CLOEXEC, 0)) == -1)
			return sbx_error_sys(e, "protect", "protected paths");
		{
			/* readdir needs a readable descriptor of the
			 * root, not an O_PATH one. */
			char lnk[64];
			int rd;

			snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", dfd);
			rd = open(lnk, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			close(dfd);
			if (rd == -1)
				continue;
			rc = glob_walk(&r, rd, "", s, e);
			close(rd);
		}
	}
	/* The rule lifted (--unprotect .git): a repository the run makes
	 * is reported after it. */
	if (rc == 0 && !has(entries, ".git") && fstatat(root_fd, ".git",
	    &st, AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT &&
	    !has(&p->no_git, inside) && sbx_strv_push(&p->no_git, inside) == -1)
		rc = sbx_error_sys(e, "nomem", "protected paths");
	sbx_strv_release(&r.bound);
	sbx_strv_release(&r.ro);
	sbx_strv_release(&r.gitdirs);
	return rc;
}

int
sbx_fspolicy_deny(struct sbx_fspolicy *p, const char *path, const char *empty,
    struct sbx_error *e)
{
	struct stat	 st;

	if (lstat(path, &st) == -1)
		return 0;	/* nothing to hide */
	if (S_ISDIR(st.st_mode)) {
		/* Empty, and read-only: a tmpfs alone would take writes
		 * that then vanish. */
		if (sbx_strv_push(&p->ops, "--tmpfs") |
		    sbx_strv_push(&p->ops, path) |
		    sbx_strv_push(&p->ops, "--remount-ro") |
		    sbx_strv_push(&p->ops, path))
			return sbx_error_sys(e, "nomem", "deny_paths");
	} else if (S_ISREG(st.st_mode) || S_ISSOCK(st.st_mode) ||
	    S_ISFIFO(st.st_mode)) {
		/* An empty file of sbx's own, not /dev/null: a device on
		 * a nodev mount cannot even be opened for reading. */
		if (sbx_strv_push(&p->ops, "--ro-bind") |
		    sbx_strv_push(&p->ops, empty) |
		    sbx_strv_push(&p->ops, path))
			return sbx_error_sys(e, "nomem", "deny_paths");
	} else
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "deny_paths",
		    "not_hideable", "deny_paths: %s is neither a directory "
		    "nor a file (a symlink is hidden by hiding its target)",
		    path);
	return 0;
}

int
sbx_fspolicy_ro(struct sbx_fspolicy *p, const char *path, struct sbx_error *e)
{
	if (sbx_strv_push(&p->ops, "--ro-bind") |
	    sbx_strv_push(&p->ops, path) | sbx_strv_push(&p->ops, path))
		return sbx_error_sys(e, "nomem", "read-only paths");
	return 0;
}

int
sbx_fspolicy_unix(struct sbx_fspolicy *p, char *const *allowed, size_t n,
    struct sbx_error *e)
{
	struct stat	 st;
	size_t		 i;

	if (sbx_strv_push(&p->init, SBX_INIT_OPT_UNIX) == -1)
		return sbx_error_sys(e, "nomem", "unix sockets");
	for (i = 0; i < n; i++) {
		/* A socket that is not there is not allowed when it comes:
		 * what is allowed is that inode. */
		if (stat(allowed[i], &st) == -1 || !S_ISSOCK(st.st_mode))
			continue;
		if (sbx_strv_push(&p->init, SBX_INIT_OPT_SOCKET) |
		    sbx_strv_pushf(&p->init, "%llu:%llu",
		    (unsigned long long)st.st_dev,
		    (unsigned long long)st.st_ino))
			return sbx_error_sys(e, "nomem", "unix sockets");
	}
	return 0;
}
