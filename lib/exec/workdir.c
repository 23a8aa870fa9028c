/*
 * workdir.c: the --workdir directories of a run, and the state root as
 * the sandbox's uid must reach it (see workdir.h).  Moved from exec.c.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "error.h"
#include "exec.h"
#include "fsutil.h"
#include "idmount.h"
#include "layout.h"
#include "root.h"
#include "users.h"
#include "workdir.h"

int
sbx_workdir_is_system_dir(const char *path)
{
	static const char *const exact[] = {
		"/", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/usr", "/var", "/home", "/opt", "/srv", "/mnt", "/media",
		"/tmp", "/var/tmp",
	};
	/* Binding these, or anything inside them, read-write would let
	 * the sandbox change the host's configuration or kernel state. */
	static const char *const inside[] = {
		"/proc", "/sys", "/dev", "/etc", "/boot", "/run",
		"/usr", "/var/lib", "/var/run", "/var/log", "/var/cache",
		"/var/spool", "/var/mail", "/bin", "/sbin", "/lib", "/lib64",
	};
	size_t	 i, n;

	for (i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (strcmp(path, exact[i]) == 0)
			return 1;
	for (i = 0; i < sizeof(inside) / sizeof(*inside); i++) {
		n = strlen(inside[i]);
		if (strncmp(path, inside[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return 1;
	}
	return 0;
}

/*
 * Each directory of the --workdir walk, from / down to the workdir itself:
 * none may be an sbx state root.  Binding one, or anything inside one,
 * would hand the sandbox that root's tokens, agent settings, other agents'
 * homes and the seccomp programs cached for every later run.
 */
static int
workdir_visit(int dirfd, const char *path, void *arg, struct sbx_error *e)
{
	struct stat	 st;

	switch (sbx_root_is_state_root(dirfd)) {
	case 0:
		return 0;
	case -1:
		/* Someone else's directory we cannot look into is as closed
		 * to the sandbox (it runs as us, or unprivileged); the walk
		 * stops there, or the checks below refuse it. */
		if (errno == EACCES && fstat(dirfd, &st) == 0 &&
		    st.st_uid != geteuid())
			return 0;
		sbx_error_set(e, SBX_K_REJECTED, "workdir",
		    "state_root_unchecked", "refusing to bind %s: cannot tell "
		    "whether %s is an sbx state root: %s", (const char *)arg,
		    path, strerror(errno));
		break;
	case 1:
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "state_root",
		    "refusing to bind %s: %s is an sbx state root",
		    (const char *)arg, path);
		break;
	}
	sbx_error_hint(e, "keep state roots out of directories given to "
	    "--workdir, and bind a project directory beside them");
	return -1;
}

/*
 * The caller's home, from $HOME and from the password file (either may be
 * what the caller thinks of as home): neither it nor an ancestor may be
 * bound, and nothing under a dot-directory of it (~/.ssh, ~/.config,
 * ~/.local/bin, ~/.gnupg...): that is where the caller's keys, shell and
 * editor start-up files and the programs on its PATH live.
 */
static int
check_home(const char *canon, const char *home, const char *user,
    struct sbx_error *e)
{
	char			 hc[PATH_MAX];
	size_t			 n;

	if (home == NULL || *home != '/' || realpath(home, hc) == NULL)
		return 0;
	if (sbx_root_path_overlaps(canon, hc) && strlen(canon) <= strlen(hc)) {
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "home_directory",
		    "refusing to bind %s: it is %s%s%s home directory or "
		    "contains it", canon, user ? "the user " : "your",
		    user ? user : "", user ? "'s" : "");
		sbx_error_hint(e, "bind a project directory inside it instead");
		return -1;
	}
	n = strlen(hc);
	if (strcmp(hc, "/") != 0 && strncmp(canon, hc, n) == 0 &&
	    canon[n] == '/' && canon[n + 1] == '.') {
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "home_dotdir",
		    "refusing to bind %s: it is in %.*s, a hidden directory of "
		    "%s%s%s home, where keys, settings and start-up files live",
		    canon, (int)(n + 1 + strcspn(canon + n + 1, "/")), canon,
		    user ? "the user " : "your", user ? user : "",
		    user ? "'s" : "");
		sbx_error_hint(e, "bind a project directory instead");
		return -1;
	}
	return 0;
}

/*
 * Every person's home is as much off limits as the caller's own: root
 * could otherwise bind /home/alice (and her ~/.ssh) into a sandbox.  Root
 * and the ordinary uids are people; system accounts' homes are service
 * directories (the system ones among them are refused as such).
 */
struct other_home {
	const char		*canon;
	struct sbx_error	*e;
	int			 failed;
};

static int
other_home(const char *name, uid_t uid, const char *home, void *arg)
{
	struct other_home	*oh = arg;

	if ((uid == 0 || uid >= 1000) && uid != 65534 && uid != getuid() &&
	    check_home(oh->canon, home, name, oh->e) == -1) {
		oh->failed = 1;
		return -1;
	}
	return 0;
}

/*
 * Can uid/gid (no supplementary groups: run.c drops them) search the
 * directory st, or, with w, write to it?
 */
static int
id_may(const struct stat *st, uid_t uid, gid_t gid, int w)
{
	mode_t	 m = w ? S_IWUSR | S_IXUSR : S_IXUSR;

	if (st->st_uid == uid)
		return (st->st_mode & m) == m;
	if (st->st_gid == gid)
		return (st->st_mode & (m >> 3)) == (m >> 3);
	return (st->st_mode & (m >> 6)) == (m >> 6);
}

/* Can uid/gid walk from / down to path (every ancestor searchable)? */
static int
id_can_reach(const char *path, uid_t uid, gid_t gid)
{
	struct stat	 st;
	char		 buf[PATH_MAX], *s;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((s = strrchr(buf, '/')) != NULL) {
		s[s == buf ? 1 : 0] = '\0';
		if (stat(buf, &st) == -1 || !id_may(&st, uid, gid, 0))
			return 0;
		if (s == buf)
			break;
	}
	return 1;
}

/*
 * Root's sandbox runs as run_uid.  A workdir that uid cannot write (a
 * root-owned checkout: every CI job in a container) or cannot reach (one
 * under /root, 0700: bwrap resolves bind sources by path, as that uid) is
 * handed over as a private copy of its mount (idmount.c): idmapped so
 * that its owner's files are run_uid's inside and what the sandbox creates
 * is its owner's on disk, and attached at the state root's run/workdir,
 * which the sandbox's uid can reach, in a mount namespace of the run's own
 * (cg_enter_hook).  Where the filesystem cannot idmap, the run is refused
 * now, with the fix, rather than failing half-way through a build.
 */
static int
workdir_copy(struct sbx_exec *p, const struct stat *st, struct sbx_error *e)
{
	char			 rel[SBX_LAYOUT_PATH_MAX], num[16];
	enum sbx_layout_id	 id;
	int			 idmap, fd;

	idmap = !id_may(st, p->run_uid, p->run_gid, 1) &&
	    (st->st_mode & S_IWUSR);
	if (!idmap && id_can_reach(p->workdir, p->run_uid, p->run_gid))
		return 0;
	p->workdir_tree = sbx_idmount_clone(p->workdir_fd, idmap, st->st_uid,
	    st->st_gid, p->run_uid, p->run_gid, e);
	if (p->workdir_tree == -1) {
		if (e->reason == NULL || strcmp(e->reason, "idmap_unsupported"))
			return -1;
		sbx_error_set(e, SBX_K_REJECTED, "workdir",
		    "workdir_not_writable",
		    "sbx runs as root, so the sandbox "
		    "runs as uid %u, which cannot write to %s (owned by uid "
		    "%u), and its filesystem cannot map the owner onto the "
		    "sandbox's uid (idmapped mount: %s)",
		    (unsigned)p->run_uid, p->workdir, (unsigned)st->st_uid,
		    strerror(e->sys_errno));
		if (st->st_uid != 0)
			sbx_error_hint(e,
			    "chown -R %u:%u %s, or set \"run_as\" "
			    "in %s/config/sandbox.json to its owner (uid %u)",
			    (unsigned)p->run_uid, (unsigned)p->run_gid,
			    p->workdir, p->root.path, (unsigned)st->st_uid);
		else
			sbx_error_hint(e,
			    "chown -R %u:%u %s, or use a "
			    "directory on a filesystem with idmapped mounts "
			    "(ext4, xfs, btrfs, tmpfs; Linux 5.12 or later)",
			    (unsigned)p->run_uid, (unsigned)p->run_gid,
			    p->workdir);
		return -1;
	}
	/* The mount point: a directory of the state root's that nothing
	 * else uses, empty on the host, 0711 like run/ itself. */
	snprintf(num, sizeof(num), "%d", p->wd_mnt_n);
	id = p->wd_mnt_n == 0 ? SBX_L_RUN_WORKDIR : SBX_L_RUN_XWORKDIR;
	if (sbx_layout_path(id, num, rel, sizeof(rel), e) == -1 ||
	    (fd = sbx_layout_mkdirs(p->root.fd, id, num, e)) == -1)
		return -1;
	if (fstat(fd, &p->workdir_mnt_st) == -1 ||
	    asprintf(&p->workdir_mnt, "%s/%s", p->root.path, rel) == -1) {
		sbx_error_sys(e, "workdir_mount_point", "%s/%s",
		    p->root.path, rel);
		return -1;
	}
	(void)fchmod(fd, 0711);
	close(fd);
	return 0;
}

int
sbx_workdir_prepare(struct sbx_exec *p, struct sbx_error *e)
{
	char			 abspath[PATH_MAX], canon[PATH_MAX];
	char			 check[PATH_MAX], lnk[64], below[PATH_MAX];
	char			 msg[sizeof(e->message)], *pwhome;
	struct stat		 st;
	struct other_home	 oh;
	ssize_t			 n;
	int			 r;

	if (sbx_fs_path_check(p->req->workdir, "workdir", e) == -1)
		return -1;
	/*
	 * What to walk.  By default the argument itself, made absolute
	 * against getcwd(3): the physical current directory, free of
	 * symlinks, so that the caller's own way into its cwd (a logical
	 * $PWD through a link) does not count, while every symlink in the
	 * argument does: an earlier sandbox that could write to a parent
	 * may have planted it (proj/build -> ../.ssh).  Only
	 * --workdir-follow-symlinks resolves links, and says where to.
	 */
	if (p->req->workdir_follow) {
		if (realpath(p->req->workdir, abspath) == NULL) {
			if (errno == ENOENT)
				sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir",
				    "not_found", "argument `workdir`: %s does "
				    "not exist", p->req->workdir);
			else
				sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir",
				    "unusable", "argument `workdir`: %s: %s",
				    p->req->workdir, strerror(errno));
			return -1;
		}
	} else if (p->req->workdir[0] == '/')
		snprintf(abspath, sizeof(abspath), "%s", p->req->workdir);
	else if (getcwd(check, sizeof(check)) == NULL ||
	    (size_t)snprintf(abspath, sizeof(abspath), "%s/%s", check,
	    p->req->workdir) >= sizeof(abspath)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir", "unusable",
		    "argument `workdir`: %s: cannot make it absolute: %s",
		    p->req->workdir, errno == 0 ? "too long" : strerror(errno));
		return -1;
	}
	/* One component at a time from /, no link followed, each directory
	 * on the way checked for a state root (workdir_visit). */
	p->workdir_fd = sbx_fs_resolve_nofollow(abspath, canon, sizeof(canon),
	    workdir_visit, (void *)p->req->workdir, e);
	if (p->workdir_fd == -1) {
		if (e->field == NULL || strcmp(e->field, "workdir") != 0) {
			snprintf(msg, sizeof(msg), "%s", e->message);
			e->field = "workdir";
			snprintf(e->message, sizeof(e->message), "argument "
			    "`workdir` rejected: %.*s",
			    (int)(sizeof(e->message) - 32), msg);
		}
		if (e->reason != NULL && strcmp(e->reason, "symlink") == 0)
			sbx_error_hint(e, "give the directory's real path, or "
			    "--workdir-follow-symlinks after checking where the "
			    "link leads");
		return -1;
	}
	if (sbx_workdir_is_system_dir(canon)) {
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "system_directory",
		    "refusing to bind %s read-write: it is the root or a system "
		    "directory", canon);
		return -1;
	}
	if (check_home(canon, getenv("HOME"), NULL, e) == -1)
		return -1;
	if ((pwhome = sbx_user_home(getuid())) != NULL) {
		r = check_home(canon, pwhome, NULL, e);
		free(pwhome);
		if (r == -1)
			return -1;
	}
	oh.canon = canon;
	oh.e = e;
	oh.failed = 0;
	(void)sbx_user_each(other_home, &oh);
	if (oh.failed)
		return -1;
	/* The state root in use, even when it was never marked. */
	if (realpath(p->root.path, check) != NULL &&
	    sbx_root_path_overlaps(canon, check)) {
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "state_root",
		    "refusing to bind %s: it overlaps the sbx state root %s",
		    canon, check);
		return -1;
	}
	/*
	 * Any other state root below it (the walk checked those above).
	 * The whole tree cannot be walked on every run: look a bounded
	 * number of levels down, and refuse when even that is too large to
	 * look through, rather than guess.
	 */
	r = sbx_root_find_below(p->workdir_fd, SBX_ROOT_SCAN_DEPTH,
	    SBX_ROOT_SCAN_BUDGET, below, sizeof(below), e);
	if (r != 0) {
		if (r == 1)
			sbx_error_set(e, SBX_K_REJECTED, "workdir",
			    "state_root",
			    "refusing to bind %s: it contains the "
			    "sbx state root %s/%s",
			    canon, canon, below);
		else {
			snprintf(msg, sizeof(msg), "%s", e->message);
			sbx_error_set(e, SBX_K_REJECTED, "workdir",
			    "state_root_unchecked",
			    "refusing to bind %s: %s "
			    "(sbx looks %d levels down, through at most %d "
			    "directories)",
			    canon, msg, SBX_ROOT_SCAN_DEPTH,
			    SBX_ROOT_SCAN_BUDGET);
		}
		sbx_error_hint(e,
		    "bind a smaller directory that holds no "
		    "state root");
		return -1;
	}
	/* The descriptor must name the directory we walked, even if a
	 * component was renamed in between. */
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", p->workdir_fd);
	n = readlink(lnk, check, sizeof(check) - 1);
	if (n <= 0 || (check[n] = '\0', strcmp(check, canon) != 0) ||
	    fstat(p->workdir_fd, &st) == -1) {
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "path_changed",
		    "argument `workdir`: %s changed while it was checked",
		    canon);
		return -1;
	}
	/* What sbx-init compares the mount with, inside. */
	p->sb.workdir_dev = (unsigned long long)st.st_dev;
	p->sb.workdir_ino = (unsigned long long)st.st_ino;
	if ((p->workdir = strdup(canon)) == NULL)
		return sbx_error_sys(e, "nomem", "workdir");
	/* The caller says where it leads (workdir_resolved). */
	if (p->req->workdir_follow)
		p->workdir_resolved = p->workdir;
	if (p->drop_privs && workdir_copy(p, &st, e) == -1)
		return -1;
	if (p->drop_privs && p->workdir_tree == -1 &&
	    !id_may(&st, p->run_uid, p->run_gid, 1)) {
		char	 w[PATH_MAX + 128];

		/* Read-only to its owner too: nothing to map. */
		snprintf(w, sizeof(w), "sbx runs as root, so the sandbox runs "
		    "as uid %u, which cannot write to %s", (unsigned)p->run_uid,
		    canon);
		json_array_append_new(p->warnings, json_string(w));
	}
	return 0;
}

/*
 * --workdir repeated: each further directory is checked exactly as the
 * first (sbx_workdir_prepare, run on it), gets its own slot, its own
 * idmapped copy as root (run/workdir-N) and its own check by sbx-init.  Two roots that
 * overlap are refused: a root inside another would be bound over a
 * protected path of the outer one, or the other way round.
 */
int
sbx_workdir_prepare_others(struct sbx_exec *p, struct sbx_error *e)
{
	const struct sbx_exec_req	*orig = p->req;
	struct sbx_exec_req		 q;
	char				*w0, *m0;
	const char			*res0;
	struct stat			 ms0;
	unsigned long long		 d0, i0;
	int				 fd0, t0, j, k, rc = 0;
	size_t				 i;

	if (orig->xworkdirs.n == 0)
		return 0;
	if (orig->xworkdirs.n > SBX_MAX_XWORKDIRS)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir",
		    "too_many", "at most %d --workdir directories",
		    SBX_MAX_XWORKDIRS + 1);
	if (orig->workdir_follow)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir",
		    "follow_one", "--workdir-follow-symlinks takes one "
		    "--workdir");
	w0 = p->workdir; fd0 = p->workdir_fd; t0 = p->workdir_tree;
	m0 = p->workdir_mnt; ms0 = p->workdir_mnt_st;
	d0 = p->sb.workdir_dev; i0 = p->sb.workdir_ino;
	res0 = p->workdir_resolved;
	for (i = 0; rc == 0 && i < orig->xworkdirs.n; i++) {
		q = *orig;
		q.workdir = orig->xworkdirs.v[i];
		p->req = &q;
		p->workdir = NULL;
		p->workdir_fd = p->workdir_tree = -1;
		p->workdir_mnt = NULL;
		p->wd_mnt_n = (int)i + 1;
		rc = sbx_workdir_prepare(p, e);
		k = p->nxwd++;
		p->xwd[k].path = p->workdir;
		p->xwd[k].fd = p->workdir_fd;
		p->xwd[k].tree = p->workdir_tree;
		p->xwd[k].mnt = p->workdir_mnt;
		p->xwd[k].mnt_st = p->workdir_mnt_st;
		p->sb.xworkdir[k].dev = p->sb.workdir_dev;
		p->sb.xworkdir[k].ino = p->sb.workdir_ino;
		p->req = orig;
	}
	p->workdir = w0; p->workdir_fd = fd0; p->workdir_tree = t0;
	p->workdir_mnt = m0; p->workdir_mnt_st = ms0;
	p->sb.workdir_dev = d0; p->sb.workdir_ino = i0;
	p->workdir_resolved = res0;
	p->wd_mnt_n = 0;
	if (rc == -1)
		return -1;
	for (j = -1; j < p->nxwd; j++)
		for (k = j + 1; k < p->nxwd; k++) {
			const char *a = j < 0 ? p->workdir : p->xwd[j].path;

			if (sbx_root_path_overlaps(a, p->xwd[k].path))
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "workdir", "overlap", "--workdir %s and %s "
				    "overlap: give directories side by side",
				    a, p->xwd[k].path);
		}
	return 0;
}

/* Can anyone walk down to path and read it (every ancestor o+x)? */
int
sbx_workdir_others_can_reach(const char *path)
{
	struct stat	 st;
	char		 buf[PATH_MAX], *s;

	if (stat(path, &st) == -1 || !(st.st_mode & S_IROTH) ||
	    !(st.st_mode & S_IXOTH))
		return 0;
	snprintf(buf, sizeof(buf), "%s", path);
	while ((s = strrchr(buf, '/')) != NULL && s != buf) {
		*s = '\0';
		if (stat(buf, &st) == -1 || !(st.st_mode & S_IXOTH))
			return 0;
	}
	return 1;
}

/*
 * As root, the sandbox's uid must be able to walk down to the homes:
 * bwrap resolves bind sources by path, as that uid.  Every ancestor of the
 * state root must let others search it, and the directories between the
 * root and the homes become 0711 (search, not list).
 */
int
sbx_workdir_reachable_root(struct sbx_exec *p, struct sbx_error *e)
{
	struct stat		 st;
	char			 path[PATH_MAX], *s;
	static const char *const inner[] = { "workspace", "workspace/agents",
	    "output" };
	size_t			 i;
	int			 fd;

	snprintf(path, sizeof(path), "%s", p->root.path);
	while ((s = strrchr(path, '/')) != NULL) {
		s[s == path ? 1 : 0] = '\0';
		if (stat(path, &st) == -1 || !(st.st_mode & S_IXOTH)) {
			sbx_error_set(e, SBX_K_REJECTED, "home",
			    "state_root_unreachable",
			    "%s, so the "
			    "sandbox runs as uid %u, which cannot reach the "
			    "state root %s through %s", p->agent_ns_fd >= 0 ?
			    "per-agent uids are on" : "sbx runs as root",
			    (unsigned)p->run_uid, p->root.path, path);
			sbx_error_hint(e,
			    "use a state root under a searchable "
			    "directory (root's default is /var/lib/sbx)");
			return -1;
		}
		if (s == path)
			break;
	}
	(void)fchmod(p->root.fd, 0711);
	for (i = 0; i < sizeof(inner) / sizeof(*inner); i++) {
		if ((fd = sbx_fs_mkdirs_at(p->root.fd, inner[i], 0711, e)) ==
		    -1)
			return -1;
		(void)fchmod(fd, 0711);
		close(fd);
	}
	return 0;
}
