/* provision.c: the state root's layout (DESIGN.md §3), created, repaired,
 * inspected and cleared beneath directory descriptors.
 *
 * Nothing here ever opens a path by name from the top: every step is an
 * *at() call on the descriptor of a directory that was itself opened with
 * O_NOFOLLOW, so a symlink planted anywhere in the root (by mistake, by
 * another program, or by an agent through its home) is refused or removed,
 * never followed.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "envelope.h"
#include "fsutil.h"
#include "idalloc.h"
#include "identity.h"
#include "job.h"
#include "layout.h"
#include "names.h"
#include "provision.h"
#include "secret.h"
#include "root.h"
#include "time.h"
#include "token.h"
#include "users.h"

/* The layout's entries, as provision handles them; `l` is the table's. */
typedef struct sbx_layout_entry entry_t;
#define layout_at(i)	sbx_layout_get((enum sbx_layout_id)(i))
#define NENT		SBX_L_N
#define is_entry(en, id) ((en) == layout_at(id))
#define is_dir(en)	((en)->type == SBX_LT_DIR)

static const char soul_text[] =
"# SOUL.md\n"
"\n"
"This file is yours to keep. Record here the stable preferences you learn\n"
"while you work: how the user likes things done, conventions of this\n"
"workspace, tools to prefer or avoid. Keep entries short and factual, and\n"
"rewrite them when they change; do not use this file as a scratch pad.\n"
"\n"
"sbx creates this file once and never overwrites it. Edits take effect at\n"
"the start of your next session, not in the current one.\n";

/* The agent name was validated (sbx_names_agent_valid) before any walk; were it
 * not, the path is left empty and names nothing. */
static void
entry_path(int i, const char *agent, char *buf, size_t sz)
{
	(void)sbx_layout_path((enum sbx_layout_id)i, agent, buf, sz, NULL);
}

#define leaf(rel)	sbx_layout_leaf(rel)

/* Who owns what, in this run. */
struct who {
	int	 as_root;
	int	 reach;		/* per-agent uids of a plain user's range:
				 * the reachable directories 0711 too */
	int	 shared;	/* per-agent uids as root: workspace/shared
				 * is 02770, its group the opted-in agents' */
	uid_t	 uid;		/* owner of what the sandbox writes */
	gid_t	 gid;
};

static mode_t
want_mode(const entry_t *en, const struct who *w)
{
	return (w->as_root || w->reach) && (en->flags & SBX_LF_REACH) ? 0711 :
	    en->mode;
}

static uid_t
want_uid(const entry_t *en, const struct who *w)
{
	return en->flags & SBX_LF_SANDBOX ? w->uid : geteuid();
}

/* Is the owner right?  The group is checked only for what the sandbox
 * owns when we hand it over (as root). */
static int
owner_ok(const entry_t *en, const struct who *w, const struct stat *st)
{
	if (st->st_uid != want_uid(en, w))
		return 0;
	return !(w->as_root && (en->flags & SBX_LF_SANDBOX)) ||
	    st->st_gid == w->gid;
}

static int
who_init(struct who *w, int rootfd, const char *agent, struct sbx_error *e)
{
	struct sbx_agentid a;
	struct sbx_idcfg   c;
	int		   r;

	w->as_root = geteuid() == 0;
	w->reach = w->shared = 0;
	if (sbx_identity_get(rootfd, &w->uid, &w->gid, e) == -1)
		return -1;
	/* Per-agent uids: a migrated agent's files are its own ids'; until
	 * then (no record, or half-way) the shared identity's, the home's
	 * directory itself changing last. */
	if (agent == NULL || rootfd < 0)
		return 0;
	if (sbx_idalloc_config(rootfd, &c, e) == -1)
		return -1;
	if (!c.per_agent)
		return 0;
	w->reach = c.subordinate;
	w->shared = w->as_root;
	if ((r = sbx_idalloc_read(rootfd, agent, &a, e)) == -1)
		return -1;
	if (r == 1 && a.migrated) {
		w->uid = (uid_t)a.host_uid;
		w->gid = (gid_t)a.host_gid;
	}
	return 0;
}

static void
note(json_t *arr, const char *rel)
{
	if (arr != NULL)
		json_array_append_new(arr, sbx_json_bytes(rel, strlen(rel)));
}

static void
warn(json_t *warnings, const char *msg)
{
	if (warnings != NULL)
		json_array_append_new(warnings, sbx_json_bytes(msg,
		    strlen(msg)));
}

static int
reject(struct sbx_error *e, const char *reason, const char *rel,
    const char *what)
{
	if (strcmp(reason, "symlink_in_path") == 0)
		sbx_error_set(e, SBX_K_REJECTED, "path", reason, "%s in the "
		    "state root is a symlink; refusing to follow it", rel);
	else if (strcmp(reason, "wrong_owner") == 0)
		sbx_error_set(e, SBX_K_REJECTED, "path", reason, "%s in the "
		    "state root is not owned by uid %u", rel,
		    (unsigned)geteuid());
	else
		sbx_error_set(e, SBX_K_REJECTED, "path", reason, "%s in the "
		    "state root is not a %s", rel, what);
	sbx_error_hint(e, "move %s out of the state root and run `sbx "
	    "provision` again", rel);
	return -1;
}

/* ---- small file-system steps ------------------------------------------- */

/* Open an existing directory O_NOFOLLOW; classify refusals. */
static int
open_dir(int pfd, const char *name, const char *rel, mode_t want, int *fixed,
    struct sbx_error *e)
{
	struct stat	 st;
	int		 fd;

	fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1 && errno == EACCES && want != 0 &&
	    sbx_fs_chmod_dir_pinned(pfd, name, want) == 0) {
		*fixed = 1;
		fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	}
	if (fd >= 0)
		return fd;
	if (errno == ELOOP || errno == ENOTDIR) {
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISLNK(st.st_mode))
			return reject(e, "wrong_type", rel, "directory");
		return reject(e, "symlink_in_path", rel, NULL);
	}
	if (errno == ENOENT)
		return sbx_error_set(e, SBX_K_NOT_FOUND, "path", "not_found",
		    "%s does not exist in the state root", rel);
	return sbx_error_sys(e, "open_failed", "cannot open %s", rel);
}

/* Create (or check) the directory of entry en, with exactly its mode and
 * owner; report it. */
static int
ensure_dir(struct sbx_provision *p, const struct who *w, int pfd,
    const entry_t *en, const char *rel, struct sbx_error *e)
{
	struct stat	 st;
	mode_t		 want = want_mode(en, w);
	const char	*name = leaf(rel);
	int		 fd, created = 0, fixed = 0;

	/* Per-agent uids: sbx exec made it the shared group's (02770) for
	 * the agents that opted in; left so. */
	if (w->shared && is_entry(en, SBX_L_WS_SHARED) &&
	    fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 02770)
		want = 02770;
	if (mkdirat(pfd, name, want) == 0)
		created = 1;
	else if (errno != EEXIST)
		return sbx_error_sys(e, "mkdir_failed", "cannot create %s",
		    rel);
	if ((fd = open_dir(pfd, name, rel, want, &fixed, e)) == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		sbx_error_sys(e, "stat_failed", "cannot stat %s", rel);
		close(fd);
		return -1;
	}
	/* fchown and fchmod on the descriptor we hold: the inode we checked
	 * is the one we change (and the umask does not decide the mode). */
	if (!owner_ok(en, w, &st)) {
		if (!w->as_root) {
			close(fd);
			return reject(e, "wrong_owner", rel, NULL);
		}
		if (fchown(fd, want_uid(en, w),
			en->flags & SBX_LF_SANDBOX ? w->gid : (gid_t)-1) ==
		    -1) {
			sbx_error_sys(e, "chown_failed", "cannot chown %s",
			    rel);
			close(fd);
			return -1;
		}
		fixed = 1;
	}
	if ((st.st_mode & 07777) != want) {
		if (fchmod(fd, want) == -1) {
			sbx_error_sys(e, "chmod_failed", "cannot chmod %s",
			    rel);
			close(fd);
			return -1;
		}
		fixed = 1;
	}
	note(created ? p->created : fixed ? p->repaired : p->present, rel);
	return fd;
}

/*
 * Create dirfd/name with data only if it does not exist, atomically: the
 * content is written and synced in an unnamed O_TMPFILE (or, where the file
 * system lacks it, an O_CREAT|O_EXCL temporary) and then linked into place;
 * link(2) fails with EEXIST instead of replacing anything, and never
 * follows a symlink at the target.  A crash leaves either no file or the
 * whole file.
 */
static int
create_exclusive(int dirfd, const char *name, const void *data, size_t n,
    mode_t mode, uid_t uid, gid_t gid, int *existed, const char *rel,
    struct sbx_error *e)
{
	char	 tmp[NAME_MAX + 1], proc[64];
	int	 fd, i, r, saved;

	*existed = 0;
	fd = openat(dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (fd >= 0) {
		if (sbx_fs_write_all(fd, data, n) == -1 ||
		    fchmod(fd, mode) == -1 ||
		    (uid != (uid_t)-1 && fchown(fd, uid, gid) == -1) ||
		    fsync(fd) == -1) {
			sbx_error_sys(e, "write_failed", "cannot write %s",
			    rel);
			close(fd);
			return -1;
		}
		snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
		r = linkat(AT_FDCWD, proc, dirfd, name, AT_SYMLINK_FOLLOW);
		saved = errno;
		close(fd);
		if (r == 0 || saved == EEXIST) {
			*existed = r == -1;
			(void)fsync(dirfd);
			return 0;
		}
		if (saved != ENOENT) {
			errno = saved;
			return sbx_error_sys(e, "write_failed", "cannot create "
			    "%s", rel);
		}
		/* No /proc: fall back to a named temporary. */
	} else if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    rel);

	for (i = 0, fd = -1; i < 100; i++) {
		snprintf(tmp, sizeof(tmp), ".%s.%d.%d.tmp", name, (int)getpid(),
		    i);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, mode);
		if (fd != -1 || errno != EEXIST)
			break;
	}
	if (fd == -1)
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    rel);
	if (sbx_fs_write_all(fd, data, n) == -1 || fchmod(fd, mode) == -1 ||
	    (uid != (uid_t)-1 && fchown(fd, uid, gid) == -1) ||
	    fsync(fd) == -1) {
		sbx_error_sys(e, "write_failed", "cannot write %s", rel);
		close(fd);
		unlinkat(dirfd, tmp, 0);
		return -1;
	}
	close(fd);
	r = linkat(dirfd, tmp, dirfd, name, 0);
	saved = errno;
	unlinkat(dirfd, tmp, 0);
	if (r == -1 && saved != EEXIST) {
		errno = saved;
		return sbx_error_sys(e, "write_failed", "cannot create %s",
		    rel);
	}
	*existed = r == -1;
	(void)fsync(dirfd);
	return 0;
}

/* Open an existing regular file of ours O_NOFOLLOW (as root, taking back
 * one owned by someone else: *fixed is set); -1 with errno ENOENT (and e
 * unset) when it does not exist. */
static int
open_file(int pfd, const char *name, const char *rel, struct stat *st,
    int *fixed, struct sbx_error *e)
{
	int	 fd;

	/* O_NONBLOCK: a FIFO planted here must not hang us. */
	fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return -1;
		if (errno == ELOOP)
			return reject(e, "symlink_in_path", rel, NULL);
		return sbx_error_sys(e, "open_failed", "cannot open %s", rel);
	}
	if (fstat(fd, st) == -1) {
		sbx_error_sys(e, "stat_failed", "cannot stat %s", rel);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		close(fd);
		errno = EINVAL;
		return reject(e, "wrong_type", rel, "regular file");
	}
	if (st->st_uid != geteuid()) {
		if (geteuid() != 0 || fchown(fd, 0, (gid_t)-1) == -1) {
			close(fd);
			errno = EPERM;
			return reject(e, "wrong_owner", rel, NULL);
		}
		*fixed = 1;
	}
	return fd;
}

static int
ensure_soul(struct sbx_provision *p, const struct who *w, int pfd,
    const char *rel, struct sbx_error *e)
{
	struct stat	 st, st2;
	char		 msg[256];
	int		 existed, fd;

	/* The home belongs to the agent: whatever is there is its own and is
	 * left alone (a symlink here only resolves inside the sandbox). */
	if (fstatat(pfd, "SOUL.md", &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode)) {
			snprintf(msg, sizeof(msg), "%s is not a regular file; "
			    "left as it is", rel);
			warn(p->warnings, msg);
		} else if (w->as_root && st.st_uid == 0 && st.st_nlink == 1 &&
		    (fd = openat(pfd, "SOUL.md", O_RDONLY | O_NOFOLLOW |
		    O_NONBLOCK | O_CLOEXEC)) >= 0) {
			/* One that root made (and only that: not linked
			 * elsewhere) goes to the uid the sandbox runs as,
			 * which could not read it otherwise. */
			if (fstat(fd, &st2) == 0 && S_ISREG(st2.st_mode) &&
			    st2.st_uid == 0 && st2.st_nlink == 1 &&
			    fchown(fd, w->uid, w->gid) == 0) {
				close(fd);
				note(p->repaired, rel);
				return 0;
			}
			close(fd);
		}
		note(p->present, rel);
		return 0;
	}
	if (errno != ENOENT)
		return sbx_error_sys(e, "stat_failed", "cannot stat %s", rel);
	if (create_exclusive(pfd, "SOUL.md", soul_text, sizeof(soul_text) - 1,
	    0600, w->as_root ? w->uid : (uid_t)-1, w->gid, &existed, rel,
	    e) == -1)
		return -1;
	note(existed ? p->present : p->created, rel);
	return 0;
}

/* A file of the root that exists (fd, its stat): made 0600 when it was
 * not, noted present or repaired (fixed: already repaired), closed. */
static int
keep_0600(struct sbx_provision *p, int fd, const struct stat *st, int fixed,
    const char *rel, struct sbx_error *e)
{
	if ((st->st_mode & 07777) != 0600) {
		if (fchmod(fd, 0600) == -1) {
			sbx_error_sys(e, "chmod_failed", "cannot chmod %s",
			    rel);
			close(fd);
			return -1;
		}
		fixed = 1;
	}
	note(fixed ? p->repaired : p->present, rel);
	close(fd);
	return 0;
}

static int
ensure_config(struct sbx_provision *p, int pfd, const char *rel,
    struct sbx_error *e)
{
	struct stat	 st;
	json_t		*cfg;
	char		*s;
	int		 fd, existed, rc, fixed = 0;

	if ((fd = open_file(pfd, leaf(rel), rel, &st, &fixed, e)) >= 0)
		return keep_0600(p, fd, &st, fixed, rel, e);
	if (errno != ENOENT)
		return -1;
	cfg = json_pack("{s:s,s:[],s:[],s:[i,i],s:b,s:{}}", "network", "none",
	    "allowed_domains", "denied_domains", "allowed_ports", 80, 443,
	    "allow_private", 0, "limits");
	s = sbx_envelope_dump(cfg);
	json_decref(cfg);
	if (s == NULL)
		return sbx_error_sys(e, "nomem", "agent settings");
	rc = create_exclusive(pfd, leaf(rel), s, strlen(s), 0600, (uid_t)-1,
	    (gid_t)-1, &existed, rel, e);
	free(s);
	if (rc == 0)
		note(existed ? p->present : p->created, rel);
	return rc;
}

/* The marker by which every sbx run recognises a state root, this one
 * included when it is not the one in use (sbx_root_is_state_root): its
 * presence is what counts. */
static int
ensure_marker(struct sbx_provision *p, int pfd, const char *rel,
    struct sbx_error *e)
{
	struct stat	 st;
	int		 fd, fixed = 0;

	if ((fd = open_file(pfd, rel, rel, &st, &fixed, e)) >= 0)
		return keep_0600(p, fd, &st, fixed, rel, e);
	if (errno != ENOENT || sbx_root_mark(pfd, e) == -1)
		return -1;
	note(p->created, rel);
	return 0;
}

static int
write_token(int pfd, const char *name, const char *rel, struct sbx_error *e)
{
	struct stat	 st;
	char		 tok[SBX_TOKEN_LEN + 1];
	int		 rc, fd, fixed = 0;

	if (sbx_token_new(tok) == -1)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "random_failed", "cannot initialise the random number "
		    "generator");
	rc = sbx_fs_write_atomic(pfd, name, tok, SBX_TOKEN_LEN, 0600, e);
	sodium_memzero(tok, sizeof(tok));
	if (rc == -1)
		return -1;
	/* The umask may have taken bits away: make it exactly 0600. */
	if ((fd = open_file(pfd, name, rel, &st, &fixed, e)) == -1)
		return -1;
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) == -1) {
		sbx_error_sys(e, "chmod_failed", "cannot chmod %s", rel);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Remove temporaries an interrupted sbx_fs_write_atomic left in run/tokens
 * (only provision writes there, and we hold the lock). */
static void
clean_stale_temps(int dirfd)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	size_t		 n;
	int		 fd;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		n = strlen(de->d_name);
		if (de->d_name[0] != '.' || n < 6 ||
		    strcmp(de->d_name + n - 4, ".tmp") != 0)
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			(void)unlinkat(dirfd, de->d_name, 0);
	}
	closedir(d);
}

static int
ensure_token(struct sbx_provision *p, int pfd, const char *rel,
    struct sbx_error *e)
{
	struct stat	 st;
	char		 msg[256];
	int		 fd, fixed = 0;

	clean_stale_temps(pfd);
	if ((fd = open_file(pfd, p->agent, rel, &st, &fixed, e)) == -1) {
		if (errno != ENOENT)
			return -1;
		if (write_token(pfd, p->agent, rel, e) == -1)
			return -1;
		note(p->created, rel);
		return 0;
	}
	/* A token is stable: rewritten only when it is not one. */
	if (!sbx_token_fd_valid(fd)) {
		close(fd);
		if (write_token(pfd, p->agent, rel, e) == -1)
			return -1;
		snprintf(msg, sizeof(msg), "%s was malformed; a new token was "
		    "written", rel);
		warn(p->warnings, msg);
		note(p->repaired, rel);
		return 0;
	}
	return keep_0600(p, fd, &st, fixed, rel, e);
}

/* ---- inspection --------------------------------------------------------- */

static const char *
judge(const entry_t *en, const struct who *w, const struct stat *st)
{
	mode_t	 want = want_mode(en, w);

	if (is_entry(en, SBX_L_SOUL)) {
		/* Anything the agent put there is its own; only a file
		 * root made that the sandbox cannot read is wrong. */
		if (w->as_root && S_ISREG(st->st_mode) && st->st_uid == 0 &&
		    w->uid != 0)
			return "wrong_owner";
		return "present";
	}
	if (S_ISLNK(st->st_mode))
		return "symlink";
	if (is_dir(en) ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
		return "wrong_type";
	if (!owner_ok(en, w, st))
		return "wrong_owner";
	if (w->shared && is_entry(en, SBX_L_WS_SHARED) &&
	    (st->st_mode & 07777) == 02770)
		return "present";	/* the shared group's (ensure_dir) */
	if (want != 0 && (st->st_mode & 07777) != want)
		return "wrong_mode";
	return "present";
}

static void
mode_str(char out[8], mode_t m)
{
	snprintf(out, 8, "%04o", (unsigned)(m & 07777));
}

json_t *
sbx_provision_status(int rootfd, const char *agent, int *ready,
    json_t *warnings, struct sbx_error *e)
{
	struct stat	 st;
	struct who	 w;
	json_t		*items, *it;
	char		 rel[128], m[8], msg[256];
	const char	*state, *name, *states[NENT];
	int		 fds[NENT], i, pfd, have, fd;

	if (who_init(&w, rootfd, agent, e) == -1)
		return NULL;
	if ((items = json_array()) == NULL) {
		sbx_error_sys(e, "nomem", "status");
		return NULL;
	}
	*ready = 1;
	for (i = 0; i < NENT; i++)
		fds[i] = -1;
	for (i = 0; i < NENT; i++) {
		const entry_t *en = layout_at(i);

		if (!(en->flags & SBX_LF_CREATE))
			continue;
		entry_path(i, agent, rel, sizeof(rel));
		name = leaf(rel);
		have = 0;
		state = "missing";
		pfd = en->parent < 0 ? -1 : fds[en->parent];
		if (i == SBX_L_ROOT) {
			if (rootfd >= 0 && fstat(rootfd, &st) == 0)
				have = 1;
		} else if (pfd >= 0) {
			if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
				have = 1;
			else if (errno == EACCES && w.reach &&
			    en->parent == SBX_L_AGENT_HOME)
				state = "present";	/* the agent's: below */
			else if (errno != ENOENT)
				state = "inaccessible";
		} else if (w.reach && en->parent == SBX_L_AGENT_HOME &&
		    strcmp(states[en->parent], "present") == 0)
			/* Per-agent uids of a plain user's range: the home
			 * is the agent's id's, 0700, and what is in it the
			 * agent's (as judge says of SOUL.md). */
			state = "present";
		else if (strcmp(states[en->parent], "missing") != 0)
			state = "inaccessible";	/* cannot look inside */
		if (have)
			state = judge(en, &w, &st);
		if (have && is_entry(en, SBX_L_SOUL) && !S_ISREG(st.st_mode)) {
			snprintf(msg, sizeof(msg), "%s is not a regular file",
			    rel);
			warn(warnings, msg);
		}
		if (have && is_dir(en) && (strcmp(state, "present") ==
		    0 || strcmp(state, "wrong_mode") == 0 ||
		    strcmp(state, "wrong_owner") == 0)) {
			/* O_PATH: look, do not touch (no atime, no read
			 * permission needed). */
			if (i == SBX_L_ROOT)
				fds[i] = fcntl(rootfd, F_DUPFD_CLOEXEC, 3);
			else
				fds[i] = openat(pfd, name, O_PATH |
				    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
		if (have && is_entry(en, SBX_L_AGENT_TOKEN) &&
		    (strcmp(state, "present") == 0 ||
			strcmp(state, "wrong_mode") == 0)) {
			fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW |
			    O_NONBLOCK | O_CLOEXEC);
			if (fd == -1 || !sbx_token_fd_valid(fd))
				state = "malformed";
			if (fd >= 0)
				close(fd);
		}
		it = json_pack("{s:s,s:s,s:s}", "path", rel, "type",
		    is_dir(en) ? "directory" : "file", "state", state);
		if (have && !S_ISLNK(st.st_mode)) {
			mode_str(m, st.st_mode);
			json_object_set_new(it, "mode", json_string(m));
			json_object_set_new(it, "uid", json_integer(st.st_uid));
		}
		if (want_mode(en, &w) != 0) {
			mode_str(m, want_mode(en, &w));
			json_object_set_new(it, "want_mode", json_string(m));
		}
		json_object_set_new(it, "want_uid", json_integer(
		    is_entry(en, SBX_L_SOUL) && !w.as_root ? geteuid() :
		    want_uid(en, &w)));
		json_array_append_new(items, it);
		states[i] = state;
		if (strcmp(state, "present") != 0)
			*ready = 0;
	}
	for (i = 0; i < NENT; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	return items;
}

/* ---- provisioning ------------------------------------------------------- */

int
sbx_provision_init(struct sbx_provision *p, int rootfd, const char *agent)
{
	memset(p, 0, sizeof(*p));
	p->rootfd = rootfd;
	p->agent = agent;
	p->created = json_array();
	p->repaired = json_array();
	p->present = json_array();
	p->warnings = json_array();
	p->problems = json_array();
	if (!p->created || !p->repaired || !p->present || !p->warnings ||
	    !p->problems) {
		sbx_provision_release(p);
		return -1;
	}
	return 0;
}

void
sbx_provision_release(struct sbx_provision *p)
{
	json_decref(p->created);
	json_decref(p->repaired);
	json_decref(p->present);
	json_decref(p->warnings);
	json_decref(p->problems);
	p->created = p->repaired = p->present = p->warnings = NULL;
	p->problems = NULL;
}

/* Refuse before changing anything when the layout holds something that
 * must not be followed or taken over. */
static int
precheck(struct sbx_provision *p, struct sbx_error *e)
{
	json_t		*items, *it;
	const char	*state, *first_state = NULL, *first = NULL;
	size_t		 i;
	int		 ready;

	if ((items = sbx_provision_status(p->rootfd, p->agent, &ready, NULL,
	    e)) == NULL)
		return -1;
	json_array_foreach(items, i, it) {
		state = json_string_value(json_object_get(it, "state"));
		/* Root can give an entry back to its owner; anyone else
		 * must not take over what another user made. */
		if (strcmp(state, "symlink") != 0 &&
		    strcmp(state, "wrong_type") != 0 &&
		    (strcmp(state, "wrong_owner") != 0 || geteuid() == 0))
			continue;
		json_array_append_new(p->problems, json_pack("{s:O,s:s}",
		    "path", json_object_get(it, "path"), "state", state));
		if (first == NULL) {
			first = json_string_value(json_object_get(it, "path"));
			first_state = state;
		}
	}
	if (first != NULL) {
		if (strcmp(first_state, "symlink") == 0)
			reject(e, "symlink_in_path", first, NULL);
		else
			reject(e, first_state, first,
			    "file of the expected type");
		json_decref(items);
		return -1;
	}
	json_decref(items);
	return 0;
}

int
sbx_provision_agent(struct sbx_provision *p, struct sbx_error *e)
{
	struct stat	 st;
	struct who	 w;
	char		 rel[128];
	mode_t		 want;
	int		 fds[NENT], i, lockfd = -1, rc = -1, pfd, r = 0, r2;

	for (i = 0; i < NENT; i++)
		fds[i] = -1;
	if (sbx_names_agent_valid(p->agent, "agent", e) == -1)
		return -1;
	if (who_init(&w, p->rootfd, p->agent, e) == -1)
		return -1;
	p->as_root = w.as_root;
	p->run_uid = w.uid;
	p->run_gid = w.gid;
	if (precheck(p, e) == -1)
		return -1;

	/* The root itself: sbx_root_open checked the owner and refused a
	 * root others can write to; a merely too open one is tightened. */
	if (fstat(p->rootfd, &st) == -1)
		return sbx_error_sys(e, "stat_failed", "cannot stat the state "
		    "root");
	want = want_mode(layout_at(SBX_L_ROOT), &w);
	if ((st.st_mode & 07777) != want) {
		if (fchmod(p->rootfd, want) == -1)
			return sbx_error_sys(e, "chmod_failed", "cannot chmod "
			    "the state root");
		note(p->root_created ? p->created : p->repaired, ".");
	} else
		note(p->root_created ? p->created : p->present, ".");

	/* run/ first: it holds the lock that serialises the rest. */
	if ((fds[SBX_L_RUN] = ensure_dir(p, &w, p->rootfd,
	    layout_at(SBX_L_RUN), "run", e)) == -1)
		return -1;
	close(fds[SBX_L_RUN]);
	if ((lockfd = sbx_provision_lock(p->rootfd, e)) == -1)
		return -1;
	/* Reopen run/ now that we hold the lock: the lock proved that this
	 * is the run/ the lock file lives in. */
	fds[SBX_L_RUN] = openat(p->rootfd, "run", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC);
	if (fds[SBX_L_RUN] == -1) {
		reject(e, "symlink_in_path", "run", NULL);
		goto out;
	}
	/*
	 * A revoked agent (sbx provision unprovision) stays revoked until
	 * someone runs `sbx provision` for it: a run's implicit provision
	 * must not mint it a new token behind the revocation.  Checked and
	 * lifted under the lock, so an unprovision cannot slip in between.
	 */
	if ((r = sbx_provision_revoked(p->rootfd, p->agent, e)) == -1)
		goto out;
	if (r == 1 && !p->restore) {
		sbx_provision_revoked_error(p->agent, e);
		goto out;
	}
	fds[SBX_L_ROOT] = p->rootfd;
	/* The table's order: parents first, the marker last. */
	for (i = 0; i < NENT; i++) {
		const entry_t *en = layout_at(i);

		if (!(en->flags & SBX_LF_CREATE) || i == SBX_L_ROOT ||
		    i == SBX_L_RUN)
			continue;
		entry_path(i, p->agent, rel, sizeof(rel));
		pfd = fds[en->parent];
		/*
		 * Per-agent uids of a plain user's range: an agent's home (and
		 * output) that is its id's, 0700, is its own; sbx cannot open
		 * it and leaves it, and what is in it, as it is.
		 */
		if (w.reach && (en->flags & SBX_LF_SANDBOX) &&
		    (i == SBX_L_AGENT_HOME || i == SBX_L_AGENT_OUTPUT) &&
		    pfd >= 0 && fstatat(pfd, leaf(rel), &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == w.uid && st.st_uid != geteuid()) {
			note(p->present, rel);
			continue;
		}
		if (w.reach && en->parent == SBX_L_AGENT_HOME &&
		    fds[en->parent] < 0)
			continue;
		if (is_dir(en)) {
			if ((fds[i] = ensure_dir(p, &w, pfd, en, rel, e)) == -1)
				goto out;
			continue;
		}
		switch (i) {
		case SBX_L_SOUL:
			r2 = ensure_soul(p, &w, pfd, rel, e);
			break;
		case SBX_L_AGENT_CONFIG:
			r2 = ensure_config(p, pfd, rel, e);
			break;
		case SBX_L_AGENT_TOKEN:
			r2 = ensure_token(p, pfd, rel, e);
			break;
		case SBX_L_MARKER:
			r2 = ensure_marker(p, pfd, rel, e);
			break;
		default:
			r2 = 0;
			break;
		}
		if (r2 == -1)
			goto out;
	}
	/* Everything is in place: the revocation is lifted last. */
	if (r == 1) {
		if (unlinkat(fds[SBX_L_AGENT_RECORDS], SBX_REVOKED_MARKER, 0) ==
		    -1 &&
		    errno != ENOENT) {
			sbx_error_sys(e, "unlink_failed", "cannot remove "
			    "agents/%s/%s", p->agent, SBX_REVOKED_MARKER);
			goto out;
		}
		/* A restore, not a repair: nothing was broken, and
		 * "repaired agents/A/unprovisioned" read as the opposite of
		 * what happened. */
		p->restored = 1;
	}
	rc = 0;
out:
	for (i = 1; i < NENT; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	close(lockfd);
	return rc;
}

/* ---- the lock ----------------------------------------------------------- */


static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

int
sbx_provision_lock(int rootfd, struct sbx_error *e)
{
	struct stat	 a, b, c, d;
	struct timespec	 ts;
	long long	 deadline;
	long		 wait_ms = 2;
	int		 runfd, fd, fixed, attempt;

	deadline = sbx_now_ms() + SBX_PROVISION_LOCK_WAIT * 1000LL;
	for (attempt = 0; attempt < 100; attempt++) {
		if (mkdirat(rootfd, "run", 0711) == 0) {
			if ((runfd = open_dir(rootfd, "run", "run", 0711,
			    &fixed, e)) == -1)
				return -1;
			(void)fchmod(runfd, 0711);
		} else if (errno != EEXIST)
			return sbx_error_sys(e, "mkdir_failed", "cannot create "
			    "run");
		else if ((runfd = open_dir(rootfd, "run", "run", 0711, &fixed,
		    e)) == -1)
			return -1;
		fd = openat(runfd, "provision.lock", O_RDWR | O_CREAT |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
		if (fd == -1) {
			close(runfd);
			if (errno == ELOOP)
				return reject(e, "symlink_in_path",
				    "run/provision.lock", NULL);
			return sbx_error_sys(e, "lock_failed", "cannot open "
			    "run/provision.lock");
		}
		if (fstat(fd, &a) == -1 || !S_ISREG(a.st_mode)) {
			close(fd);
			close(runfd);
			return reject(e, "wrong_type", "run/provision.lock",
			    "regular file");
		}
		while (flock(fd, LOCK_EX | LOCK_NB) == -1) {
			if (errno != EWOULDBLOCK && errno != EINTR) {
				sbx_error_sys(e, "lock_failed", "cannot lock "
				    "run/provision.lock");
				goto fail;
			}
			if (sbx_now_ms() >= deadline) {
				sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
				    "lock_timeout", "another sbx provision has "
				    "held run/provision.lock for %d seconds",
				    SBX_PROVISION_LOCK_WAIT);
				goto fail;
			}
			ts.tv_sec = 0;
			ts.tv_nsec = wait_ms * 1000000L;
			nanosleep(&ts, NULL);
			if (wait_ms < 50)
				wait_ms *= 2;
		}
		/* The lock counts only if its file is still the one at
		 * run/provision.lock: a concurrent `remove` may have unlinked
		 * it, or run/ itself, while we waited. */
		if (fstat(fd, &a) == 0 && a.st_nlink > 0 &&
		    fstatat(runfd, "provision.lock", &b, AT_SYMLINK_NOFOLLOW) ==
		    0 && same_file(&a, &b) && fstat(runfd, &c) == 0 &&
		    fstatat(rootfd, "run", &d, AT_SYMLINK_NOFOLLOW) == 0 &&
		    same_file(&c, &d)) {
			close(runfd);
			return fd;
		}
		close(fd);
		close(runfd);
	}
	return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "lock_failed",
	    "run/provision.lock keeps changing under us");
fail:
	close(fd);
	close(runfd);
	return -1;
}

/* ---- removal ------------------------------------------------------------ */

/* One removal for the whole tree: sbx_fs_rm_tree_at (fsutil.c), which
 * has no depth cap for a deep tree the sandbox built to defeat. */
int
sbx_provision_rm_tree(int dirfd, const char *name, struct sbx_error *e)
{
	return sbx_fs_rm_tree_at(dirfd, name, e);
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void
names_free(char **v)
{
	size_t	 i;

	if (v == NULL)
		return;
	for (i = 0; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* The names in a directory (without . and ..), sorted, NULL-terminated;
 * raw bytes, so that any name can be removed. */
static char **
dir_names(int dirfd, struct sbx_error *e)
{
	struct dirent	*de;
	DIR		*d;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;
	int		 fd;

	fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		sbx_error_sys(e, "read_failed", "cannot read a directory");
		return NULL;
	}
	for (;;) {
		if (n + 1 >= cap) {
			cap = cap ? cap * 2 : 16;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto nomem;
			v = nv;
		}
		v[n] = NULL;
		if ((de = readdir(d)) == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if ((v[n] = strdup(de->d_name)) == NULL)
			goto nomem;
		v[++n] = NULL;
	}
	closedir(d);
	if (n > 0)
		qsort(v, n, sizeof(*v), cmp_str);
	return v;
nomem:
	closedir(d);
	names_free(v);
	sbx_error_sys(e, "nomem", "reading a directory");
	return NULL;
}

/* Open rel beneath the root if it exists: the fd, -1 with e set on
 * refusal, or -2 when it does not exist. */
static int
open_existing(int rootfd, const char *rel, struct sbx_error *e)
{
	int	 fd;

	fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY, e);
	if (fd == -1 && e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
		return -2;
	return fd;
}

static void
warn_running_jobs(int jobsfd, const char *agent, json_t *warnings)
{
	struct sbx_error e;
	json_t		*rec;
	char		**names, id[SBX_JOB_LEN + 1], msg[256];
	const char	*s;
	size_t		 i;

	if ((names = dir_names(jobsfd, &e)) == NULL)
		return;
	for (i = 0; names[i] != NULL; i++) {
		s = names[i];
		if (strlen(s) != SBX_JOB_LEN + 5 ||
		    strcmp(s + SBX_JOB_LEN, ".json") != 0)
			continue;
		memcpy(id, s, SBX_JOB_LEN);
		id[SBX_JOB_LEN] = '\0';
		if ((rec = sbx_job_read(jobsfd, id, &e)) == NULL)
			continue;
		if (sbx_job_alive(rec)) {
			snprintf(msg, sizeof(msg), "job %s of agent %s is "
			    "still running; its record was removed", id,
			    agent);
			warn(warnings, msg);
		}
		json_decref(rec);
	}
	names_free(names);
}

int
sbx_provision_unprovision(int rootfd, const char *agent, json_t *removed,
    json_t *warnings, struct sbx_error *e)
{
	struct stat	 st;
	char		 rel[128];
	int		 lockfd, fd = -1, sub, rc = -1;

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	if ((lockfd = sbx_provision_lock(rootfd, e)) == -1)
		return -1;

	/* Revoke the token: whatever is at its name goes (a symlink is
	 * unlinked, never followed). */
	fd = open_existing(rootfd, layout_at(SBX_L_RUN_TOKENS)->path, e);
	if (fd == -1)
		goto out;
	if (fd >= 0) {
		if (fstatat(fd, agent, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (sbx_provision_rm_tree(fd, agent, e) == -1)
				goto out;
			SBX_LPATH(rel, SBX_L_AGENT_TOKEN, agent);
			note(removed, rel);
		}
		close(fd);
	}

	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if ((fd = open_existing(rootfd, rel, e)) == -1)
		goto out;
	if (fd >= 0) {
		if (fstatat(fd, "installed-packages.json", &st,
		    AT_SYMLINK_NOFOLLOW) == 0) {
			if (sbx_provision_rm_tree(fd, "installed-packages.json",
			    e) == -1)
				goto out;
			snprintf(rel, sizeof(rel),
			    "agents/%s/installed-packages.json", agent);
			note(removed, rel);
		}
		if (fstatat(fd, "plugins", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				snprintf(rel, sizeof(rel), "agents/%s/plugins",
				    agent);
				reject(e, S_ISLNK(st.st_mode) ?
				    "symlink_in_path" : "wrong_type", rel,
				    "directory");
				goto out;
			}
			sub = sbx_fs_open_beneath(fd, "plugins", O_RDONLY |
			    O_DIRECTORY, e);
			if (sub == -1)
				goto out;
			if (fstatat(sub, "installed.json", &st,
			    AT_SYMLINK_NOFOLLOW) == 0) {
				if (sbx_provision_rm_tree(sub, "installed.json",
				    e) == -1) {
					close(sub);
					goto out;
				}
				snprintf(rel, sizeof(rel),
				    "agents/%s/plugins/installed.json", agent);
				note(removed, rel);
			}
			close(sub);
			/* Only when nothing else is in it. */
			(void)unlinkat(fd, "plugins", AT_REMOVEDIR);
		}
		if (fstatat(fd, "jobs", &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISDIR(st.st_mode) &&
			    (sub = sbx_fs_open_beneath(fd, "jobs",
				 O_RDONLY | O_DIRECTORY, e)) >= 0) {
				warn_running_jobs(sub, agent, warnings);
				close(sub);
			}
			if (sbx_provision_rm_tree(fd, "jobs", e) == -1)
				goto out;
			SBX_LPATH(rel, SBX_L_AGENT_JOBS, agent);
			note(removed, rel);
		}
		close(fd);
	}
	/*
	 * The revocation is recorded, so that it holds: the next run of the
	 * agent (which would otherwise provision it again and mint a new
	 * token) is refused until `sbx provision` restores it.
	 */
	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if ((fd = sbx_fs_mkdirs_at(rootfd, rel, 0700, e)) == -1)
		goto out;
	if (sbx_fs_write_atomic(fd, SBX_REVOKED_MARKER, "", 0, 0600, e) == -1)
		goto out;
	close(fd);
	fd = -1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	close(lockfd);
	return rc;
}

int
sbx_provision_revoked(int rootfd, const char *agent, struct sbx_error *e)
{
	struct stat	 st;
	char		 rel[128];
	int		 fd;

	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if ((fd = open_existing(rootfd, rel, e)) == -2)
		return 0;
	if (fd == -1)
		return -1;
	/* Whatever is at its name counts (a symlink too, never followed):
	 * failing closed keeps a revoked agent revoked. */
	if (fstatat(fd, SBX_REVOKED_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		close(fd);
		return 1;
	}
	close(fd);
	return 0;
}

int
sbx_provision_revoked_error(const char *agent, struct sbx_error *e)
{
	sbx_error_set(e, SBX_K_REJECTED, "agent", "agent_unprovisioned",
	    "agent %s was unprovisioned (its token is revoked)", agent);
	sbx_error_hint(e, "restore it with `sbx provision --agent %s`", agent);
	return -1;
}

int
sbx_provision_require(int rootfd, const char *agent, struct sbx_error *e)
{
	struct stat	 st;
	char		 rel[SBX_LAYOUT_PATH_MAX];

	if (sbx_provision_revoked(rootfd, agent, e) != 0)
		return sbx_provision_revoked_error(agent, e);
	SBX_LPATH(rel, SBX_L_AGENT_HOME, agent);
	if (fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "agent",
		    "agent_not_provisioned", "agent %s is not provisioned",
		    agent);
		sbx_error_hint(e, "sbx provision --agent %s", agent);
		return -1;
	}
	return 0;
}

/* Remove every entry of rootfd/dir (keeping dir), noting dir/NAME. */
static int
empty_dir(int rootfd, const char *dir, json_t *removed, struct sbx_error *e)
{
	char	**names, rel[PATH_MAX];
	size_t	 i;
	int	 fd, rc = 0;

	if ((fd = open_existing(rootfd, dir, e)) == -2)
		return 0;
	if (fd == -1)
		return -1;
	if ((names = dir_names(fd, e)) == NULL) {
		close(fd);
		return -1;
	}
	for (i = 0; names[i] != NULL; i++) {
		if ((rc = sbx_provision_rm_tree(fd, names[i], e)) == -1)
			break;
		snprintf(rel, sizeof(rel), "%s/%s", dir, names[i]);
		note(removed, rel);
	}
	names_free(names);
	close(fd);
	return rc;
}

int
sbx_provision_reset(int rootfd, json_t *removed, struct sbx_error *e)
{
	int	 lockfd, rc;

	if ((lockfd = sbx_provision_lock(rootfd, e)) == -1)
		return -1;
	rc = empty_dir(rootfd, "envs", removed, e);
	if (rc == 0)
		rc = empty_dir(rootfd, "cache", removed, e);
	close(lockfd);
	return rc;
}

json_t *
sbx_provision_remove_targets(int rootfd, struct sbx_error *e)
{
	json_t	*out;
	char	**names;
	size_t	 i;

	if ((out = json_array()) == NULL || rootfd < 0)
		return out;
	if ((names = dir_names(rootfd, e)) == NULL) {
		json_decref(out);
		return NULL;
	}
	for (i = 0; names[i] != NULL; i++)
		if (strcmp(names[i], "workspace") != 0)
			note(out, names[i]);
	names_free(names);
	/* Secrets go with agents/ and config/: said by name. */
	sbx_secret_describe_stores(rootfd, out);
	return out;
}

int
sbx_provision_remove(int rootfd, json_t *removed, struct sbx_error *e)
{
	char	**names = NULL;
	size_t	 i;
	int	 lockfd, runfd, rc = -1;

	if ((lockfd = sbx_provision_lock(rootfd, e)) == -1)
		return -1;
	sbx_secret_describe_stores(rootfd, removed);
	if ((names = dir_names(rootfd, e)) == NULL)
		goto out;
	for (i = 0; names[i] != NULL; i++) {
		/* The homes stay: they are the agents' work. */
		if (strcmp(names[i], "workspace") == 0 ||
		    strcmp(names[i], "run") == 0)
			continue;
		if (sbx_provision_rm_tree(rootfd, names[i], e) == -1)
			goto out;
		note(removed, names[i]);
	}
	names_free(names);
	names = NULL;
	/* run/ last, and its lock file last in it: whoever waits for the
	 * lock finds it unlinked and starts over (sbx_provision_lock). */
	runfd = openat(rootfd, "run", O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (runfd >= 0) {
		if ((names = dir_names(runfd, e)) == NULL) {
			close(runfd);
			goto out;
		}
		for (i = 0; names[i] != NULL; i++) {
			if (strcmp(names[i], "provision.lock") != 0 &&
			    sbx_provision_rm_tree(runfd, names[i], e) == -1) {
				close(runfd);
				goto out;
			}
		}
		(void)unlinkat(runfd, "provision.lock", 0);
		close(runfd);
		if (unlinkat(rootfd, "run", AT_REMOVEDIR) == -1 &&
		    errno != ENOENT) {
			sbx_error_sys(e, "remove_failed", "cannot remove run");
			goto out;
		}
		note(removed, "run");
	}
	rc = 0;
out:
	names_free(names);
	close(lockfd);
	return rc;
}

/* ---- listing ------------------------------------------------------------ */

static int
valid_name(const char *s)
{
	struct sbx_error	 e;

	return sbx_names_agent_valid(s, "agent", &e) == 0;
}

/* Add the agent names found in rel (with suffix stripped) to set. */
static int
collect(int rootfd, const char *rel, const char *suffix, int want_dir,
    json_t *set, struct sbx_error *e)
{
	struct stat	 st;
	char		**names, name[NAME_MAX + 1];
	const char	*s;
	size_t		 i, n, sl = strlen(suffix);
	int		 fd;

	if ((fd = open_existing(rootfd, rel, e)) == -2)
		return 0;
	if (fd == -1)
		return -1;
	if ((names = dir_names(fd, e)) == NULL) {
		close(fd);
		return -1;
	}
	for (i = 0; names[i] != NULL; i++) {
		s = names[i];
		n = strlen(s);
		if (n <= sl || n - sl >= sizeof(name) ||
		    strcmp(s + n - sl, suffix) != 0)
			continue;
		memcpy(name, s, n - sl);
		name[n - sl] = '\0';
		if (!valid_name(name) ||
		    fstatat(fd, s, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)))
			continue;
		json_object_set_new(set, name, json_true());
	}
	names_free(names);
	close(fd);
	return 0;
}

/* Does rel exist beneath the root, reached without symlinks, as a
 * directory (want_dir) or a regular file? */
static int
exists_as(int rootfd, const char *rel, int want_dir)
{
	struct sbx_error	 e;
	struct stat		 st;
	int			 fd, r;

	fd = sbx_fs_open_beneath(rootfd, rel, O_PATH, &e);
	if (fd == -1)
		return 0;
	r = fstat(fd, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) :
	    S_ISREG(st.st_mode));
	close(fd);
	return r;
}

static int
has_token(int rootfd, const char *agent)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 rel[128];
	int			 fd, r;

	SBX_LPATH(rel, SBX_L_AGENT_TOKEN, agent);
	fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_NONBLOCK, &e);
	if (fd == -1)
		return 0;
	r = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    sbx_token_fd_valid(fd);
	close(fd);
	return r;
}

json_t *
sbx_provision_list(int rootfd, struct sbx_error *e)
{
	json_t		*set, *out, *val;
	const char	*key, **v;
	char		 home[PATH_MAX], cfg[PATH_MAX];
	size_t		 n, i = 0;

	if ((out = json_array()) == NULL || rootfd < 0)
		return out;
	set = json_object();
	if (collect(rootfd, layout_at(SBX_L_WS_AGENTS)->path, "", 1, set,
	    e) == -1 || collect(rootfd, layout_at(SBX_L_CONFIG_AGENTS)->path,
	    ".json", 0, set, e) == -1) {
		json_decref(set);
		json_decref(out);
		return NULL;
	}
	n = json_object_size(set);
	if ((v = calloc(n + 1, sizeof(*v))) == NULL) {
		json_decref(set);
		json_decref(out);
		sbx_error_sys(e, "nomem", "list");
		return NULL;
	}
	json_object_foreach(set, key, val)
		v[i++] = key;
	qsort(v, n, sizeof(*v), cmp_str);
	for (i = 0; i < n; i++) {
		SBX_LPATH(home, SBX_L_AGENT_HOME, v[i]);
		SBX_LPATH(cfg, SBX_L_AGENT_CONFIG, v[i]);
		json_array_append_new(out, json_pack("{s:s,s:b,s:b,s:b}",
		    "agent", v[i], "token", has_token(rootfd, v[i]), "home",
		    exists_as(rootfd, home, 1), "config",
		    exists_as(rootfd, cfg, 0)));
	}
	free(v);
	json_decref(set);
	return out;
}
