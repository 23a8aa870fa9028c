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
 *    in that directory (device, inode, name; cmd/initguard.c).  It is
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

const char *const sbx_fspolicy_default[] = { ".git/config", ".git/hooks",
	".git/info/attributes", ".gitmodules", ".gitconfig", ".envrc",
	".vscode", ".idea", ".claude", ".cursor", ".mcp.json", ".devcontainer",
	".bashrc", ".bash_profile", ".bash_login", ".profile", ".zshrc",
	".zprofile", ".zshenv", ".ripgreprc", ".npmrc", ".pypirc", ".netrc",
	".ssh", ".gnupg", NULL };

#define MAX_ENTRY   256
#define MAX_ENTRIES 256

struct root {
	struct sbx_fspolicy *pol;
	int		     fd;
	const char	    *inside, *src;
	char *const	    *roots;
	size_t		     nroots;
	struct sbx_strv	     bound; /* rels bound rw over themselves */
	struct sbx_strv	     ro; /* rels bound read-only */
};

void
sbx_fspolicy_init(struct sbx_fspolicy *p)
{
	memset(p, 0, sizeof(*p));
}

void
sbx_fspolicy_release(struct sbx_fspolicy *p)
{
	sbx_strv_release(&p->ops);
	sbx_strv_release(&p->init);
	sbx_strv_release(&p->no_git);
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
	return 0;
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
		if (!(git_ok &&
			strcmp(sbx_fspolicy_default[i], ".git/config") == 0) &&
		    strip_push(&all, sbx_fspolicy_default[i]) == -1)
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
			 * A repository that does not exist yet: `git init`
			 * in the sandbox makes it, config and hooks
			 * included; the run reports it (no_git).
			 */
			if (first && strcmp(comp, ".git") == 0 && *rest) {
				if (!has(&r->pol->no_git, r->inside))
					rc = sbx_strv_push(&r->pol->no_git,
					    r->inside);
				break;
			}
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

int
sbx_fspolicy_protect(struct sbx_fspolicy *p, int root_fd, const char *inside,
    const char *src, char *const *roots, size_t nroots,
    const struct sbx_strv *entries, struct sbx_error *e)
{
	struct root	 r;
	size_t		 i;
	int		 rc = 0, dfd;

	memset(&r, 0, sizeof(r));
	r.pol = p;
	r.fd = root_fd;
	r.inside = inside;
	r.src = src;
	r.roots = roots;
	r.nroots = nroots;
	for (i = 0; rc == 0 && i < entries->n; i++) {
		const char *s = entries->v[i];

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
	sbx_strv_release(&r.bound);
	sbx_strv_release(&r.ro);
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
