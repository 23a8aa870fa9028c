/*
 * agentfs.c: sbx file's view of an agent's home (see agentfs.h).
 *
 * The threat is the agent itself: between any two of our steps it can
 * rename, replace or plant anything in its home (a symbolic link to /etc,
 * to another agent's home, to /proc/self/root; a FIFO; a socket).  So no
 * string check decides where a path leads: every open goes through the
 * kernel from the home's descriptor with RESOLVE_BENEATH (nothing resolves
 * above the home: not `..`, not an absolute link, not a link that climbs)
 * and RESOLVE_NO_MAGICLINKS (/proc/PID/fd/N, /proc/self/root), and every
 * decision about a file is made on the descriptor we then read from.  The
 * caller (sbx-file) runs as the sandbox's uid by then (as root it became
 * it, sbx_identity_become), so the kernel checks permissions as the
 * sandbox would, a race can reach only what the agent reaches anyway, and
 * what we create belongs to the agent.
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agentfs.h"
#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "sandbox.h"

/* ---- paths ------------------------------------------------------------ */

int
sbx_agentfs_path(const char *home, const char *p, size_t len, char *rel,
    size_t relsz, struct sbx_error *e)
{
	struct sbx_buf abs = SBX_BUF_INIT;
	const char    *s, *end, *top;
	size_t	       i, n, hl;
	int	       r = -1;

	if (len == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "empty",
		    "argument `path` is empty; give a path relative to the "
		    "home, or `.` for the home itself");
	if (memchr(p, '\0', len) != NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "nul_byte",
		    "argument `path` contains a NUL byte");
	for (i = 0; i < len; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "control_character",
			    "argument `path` contains a "
			    "control character (byte 0x%02x at offset %zu)",
			    (unsigned)(unsigned char)p[i], i);
	if (len >= PATH_MAX || len >= relsz)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "too_long",
		    "argument `path` is longer than %d bytes", PATH_MAX - 1);
	/* One trailing slash is how people name a directory ("src/"). */
	if (len > 1 && p[len - 1] == '/')
		len--;
	/* Rebuild the path from its checked components: `.` dropped, an
	 * empty component (`a//b`) or `..` refused, never normalised away
	 * (`a/../..` is no spelling of anything we accept). */
	for (s = p + (*p == '/'); len > 1 || *p != '/';) {
		end = memchr(s, '/', (size_t)(p + len - s));
		if (end == NULL)
			end = p + len;
		n = (size_t)(end - s);
		if (n == 0) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "empty_component",
			    "argument `path` has an empty "
			    "component (`//`)");
			goto out;
		}
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "traversal",
			    "argument `path` rejected: path "
			    "contains `..`");
			goto out;
		}
		if (n > NAME_MAX) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "component_too_long",
			    "argument `path` has a "
			    "component longer than %d bytes",
			    NAME_MAX);
			goto out;
		}
		if (n > 0 && !(n == 1 && s[0] == '.') &&
		    (sbx_buf_append(&abs, "/", 1) == -1 ||
			sbx_buf_append(&abs, s, n) == -1)) {
			sbx_error_sys(e, "nomem", "path");
			goto out;
		}
		if (end == p + len)
			break;
		s = end + 1;
	}
	top = abs.p != NULL ? abs.p : "";
	if (*p == '/') {
		/* Absolute: under the home as the sandbox names it, compared
		 * on whole components ("/workspace/agents/ab" is not under
		 * "/workspace/agents/a"). */
		hl = strlen(home);
		if (strncmp(top, home, hl) != 0 ||
		    (top[hl] != '\0' && top[hl] != '/')) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
			    "outside_home",
			    "argument `path` is outside the "
			    "agent's home %s (the only root sbx file serves; "
			    "/workspace/shared is not enabled)",
			    home);
			goto out;
		}
		top += hl;
	}
	if (*top == '/')
		top++;
	if (*top == '\0')
		top = ".";
	if (strlen(top) >= relsz) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "too_long",
		    "argument `path` is too long");
		goto out;
	}
	strcpy(rel, top);
	r = 0;
out:
	sbx_buf_release(&abs);
	return r;
}

int
sbx_agentfs_open(struct sbx_agentfs *fs, int rootfd, const char *agent,
    struct sbx_error *e)
{
	fs->home_fd = sbx_layout_open(rootfd, SBX_L_AGENT_HOME, agent,
	    O_RDONLY | O_DIRECTORY, e);
	if (fs->home_fd == -1) {
		if (e != NULL && e->reason != NULL &&
		    strcmp(e->reason, "not_found") == 0) {
			sbx_error_set(e, SBX_K_NOT_FOUND, "agent",
			    "agent_home_missing", "agent %s has no home yet",
			    agent);
			sbx_error_hint(e,
			    "sbx provision --agent %s (or any sbx "
			    "exec --agent %s) makes it",
			    agent, agent);
		}
		return -1;
	}
	snprintf(fs->home, sizeof(fs->home), "%s/%s", SBX_IN_AGENTS, agent);
	return 0;
}

void
sbx_agentfs_close(struct sbx_agentfs *fs)
{
	if (fs->home_fd >= 0)
		close(fs->home_fd);
	fs->home_fd = -1;
}

/* ---- opening ------------------------------------------------------------ */

/* The envelope error of a failed open of rel; errno is kept. */
static int
open_error(int err, const char *rel, struct sbx_error *e)
{
	switch (err) {
	case ENOENT:
		sbx_error_set(e, SBX_K_NOT_FOUND, "path", "not_found",
		    "%s does not exist in the home", rel);
		break;
	case EXDEV:
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "symlink_escape",
		    "%s leads outside the home (through a symbolic link); "
		    "only what lies in the home can be used",
		    rel);
		break;
	case ELOOP:
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "symlink",
		    "%s goes through a symbolic link that is not followed "
		    "(a /proc link, a loop, or a link where a file must be)",
		    rel);
		break;
	case ENOTDIR:
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "not_a_directory",
		    "a component of %s is not a "
		    "directory",
		    rel);
		break;
	case EACCES:
	case EPERM:
		sbx_error_set(e, SBX_K_REJECTED, "path", "permission_denied",
		    "%s: permission denied", rel);
		break;
	case ENXIO:
		/* open(2) of a unix socket. */
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "not_regular_file",
		    "%s is a socket, not a regular file", rel);
		break;
	case ENAMETOOLONG:
		sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "too_long",
		    "%s is too long", rel);
		break;
	default:
		errno = err;
		sbx_error_sys(e, "open_failed", "cannot open %s", rel);
		break;
	}
	errno = err;
	return -1;
}

/*
 * Open rel beneath dirfd: openat2 with RESOLVE_BENEATH (the kernel
 * refuses, EXDEV, any resolution that would leave dirfd: `..` at the top,
 * an absolute symbolic link, a relative one that climbs out) and
 * RESOLVE_NO_MAGICLINKS (ELOOP for /proc/self/root and its kin, which
 * would jump anywhere).  Symbolic links that stay inside are followed, as
 * the agent's own tools would.  Where the kernel lacks openat2 (ENOSYS)
 * the component walk of sbx_fs_open_beneath refuses every link instead.
 */
static int
open_in(int dirfd, const char *rel, int flags, struct sbx_error *e)
{
	static int	no_openat2;
	struct open_how how;
	int		fd = -1, i;

	if (strcmp(rel, ".") == 0) {
		if ((fd = openat(dirfd, ".", flags | O_CLOEXEC)) == -1)
			return open_error(errno, rel, e);
		return fd;
	}
	if (!no_openat2) {
		memset(&how, 0, sizeof(how));
		how.flags = (unsigned long long)(flags | O_CLOEXEC);
		how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
		/* EAGAIN: a rename raced the lookup; the kernel asks us to
		 * retry rather than risk a wrong answer. */
		for (i = 0; i < 16; i++) {
			fd = (int)syscall(SYS_openat2, dirfd, rel, &how,
			    sizeof(how));
			if (fd >= 0 || errno != EAGAIN)
				break;
		}
		if (fd >= 0)
			return fd;
		if (errno != ENOSYS)
			return open_error(errno, rel, e);
		no_openat2 = 1;
	}
	return sbx_fs_open_beneath(dirfd, rel, flags, e);
}

static const char *
type_name(mode_t m)
{
	if (S_ISREG(m))
		return "file";
	if (S_ISDIR(m))
		return "directory";
	if (S_ISLNK(m))
		return "symlink";
	if (S_ISFIFO(m))
		return "fifo";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "char_device";
	if (S_ISBLK(m))
		return "block_device";
	return "other";
}

static int
not_regular(const char *rel, mode_t m, struct sbx_error *e)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "not_regular_file",
	    "%s is a %s, not a regular file", rel, type_name(m));
}

static int
too_large(const char *rel, unsigned long long size, struct sbx_error *e)
{
	sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "too_large",
	    "%s is %llu bytes, more than the %u bytes sbx file reads", rel,
	    size, SBX_AGENTFS_FILE_MAX);
	sbx_error_hint(e,
	    "read a part of it with a command (sbx exec -- "
	    "head -c N FILE)");
	return -1;
}

/*
 * Open rel for reading as a regular file, never opening anything else:
 * an O_PATH descriptor first (opens nothing: no FIFO waits for a writer,
 * no device driver sees an open), its type and size checked, then the
 * real open, O_NONBLOCK all the same (the name may have been swapped for
 * a FIFO in between), checked again with fstat on what we will read.
 * *dir is set (and -1 returned without an error) for a directory when
 * dir is not NULL.
 */
static int
open_regular(int home, const char *rel, struct stat *st, int *dir,
    struct sbx_error *e)
{
	int pfd, fd;

	if ((pfd = open_in(home, rel, O_PATH, e)) == -1)
		return -1;
	if (fstat(pfd, st) == -1) {
		sbx_error_sys(e, "stat_failed", "cannot stat %s", rel);
		close(pfd);
		return -1;
	}
	close(pfd);
	if (S_ISDIR(st->st_mode) && dir != NULL) {
		*dir = 1;
		return -1;
	}
	if (!S_ISREG(st->st_mode))
		return not_regular(rel, st->st_mode, e);
	if ((unsigned long long)st->st_size > SBX_AGENTFS_FILE_MAX)
		return too_large(rel, (unsigned long long)st->st_size, e);
	if ((fd = open_in(home, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, e)) ==
	    -1)
		return -1;
	if (fstat(fd, st) == -1 || !S_ISREG(st->st_mode)) {
		close(fd);
		return not_regular(rel, st->st_mode, e);
	}
	return fd;
}

/* All of fd (a regular file), at most SBX_AGENTFS_FILE_MAX bytes: a file
 * that grew past the cap since fstat is refused, not cut. */
static int
read_capped(int fd, const char *rel, struct sbx_buf *b, struct sbx_error *e)
{
	char	chunk[65536];
	ssize_t k;

	for (;;) {
		k = read(fd, chunk, sizeof(chunk));
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1)
			return sbx_error_sys(e, "read_failed", "cannot read %s",
			    rel);
		if (k == 0)
			break;
		if (b->len + (size_t)k > SBX_AGENTFS_FILE_MAX)
			return too_large(rel, b->len + (size_t)k, e);
		if (sbx_buf_append(b, chunk, (size_t)k) == -1)
			return sbx_error_sys(e, "nomem", "reading %s", rel);
	}
	if (b->p == NULL && sbx_buf_append(b, "", 0) == -1)
		return sbx_error_sys(e, "nomem", "reading %s", rel);
	return 0;
}

/* ---- read ----------------------------------------------------------------- */

/* Offset of the start of line (1-based) in p[0..n]; n when beyond. */
static size_t
line_offset(const char *p, size_t n, unsigned long line)
{
	const char *q;
	size_t	    off = 0;

	while (line > 1 && off < n) {
		if ((q = memchr(p + off, '\n', n - off)) == NULL)
			return n;
		off = (size_t)(q - p) + 1;
		line--;
	}
	return off;
}

static unsigned long
count_lines(const char *p, size_t n)
{
	unsigned long c = 0;
	const char   *q = p, *end = p + n;

	while (q < end && (q = memchr(q, '\n', (size_t)(end - q))) != NULL) {
		c++;
		q++;
	}
	if (n > 0 && p[n - 1] != '\n')
		c++;
	return c;
}

int
sbx_agentfs_read(struct sbx_agentfs *fs, const char *rel,
    const struct sbx_agentfs_readopt *o, json_t **res, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	struct stat    st;
	unsigned long  total, start, count, endl, maxc, chars;
	size_t	       off, end, i;
	int	       fd, dir = 0, cut = 0;

	if ((fd = open_regular(fs->home_fd, rel, &st, &dir, e)) == -1)
		return dir ? sbx_agentfs_list(fs, rel, 1, res, e) : -1;
	if (read_capped(fd, rel, &b, e) == -1) {
		close(fd);
		sbx_buf_release(&b);
		return -1;
	}
	close(fd);
	total = count_lines(b.p, b.len);
	start = o->start_line > 0 ? o->start_line : 1;
	count = o->line_count;
	if (o->tail_lines > 0) {
		start = total > o->tail_lines ? total - o->tail_lines + 1 : 1;
		count = 0;
	}
	if (start > total && !(start == 1 && total == 0)) {
		sbx_buf_release(&b);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "start_line",
		    "beyond_end",
		    "%s has %lu lines; --start-line %lu is past "
		    "its end",
		    rel, total, start);
	}
	off = line_offset(b.p, b.len, start);
	end = count > 0 ? line_offset(b.p, b.len, start + count) : b.len;
	/* The cap counts characters (UTF-8 sequences), and cuts between
	 * them, never inside one. */
	maxc = o->max_chars > 0 ? o->max_chars : SBX_AGENTFS_CHARS;
	for (i = off, chars = 0; i < end; i++) {
		if (((unsigned char)b.p[i] & 0xc0) == 0x80)
			continue;
		if (chars == maxc) {
			end = i;
			cut = 1;
			break;
		}
		chars++;
	}
	endl =
	    end > off ? start + count_lines(b.p + off, end - off) - 1 : start;
	*res = json_pack("{s:s,s:s,s:o,s:I,s:I,s:I,s:I,s:b,s:b}", "path", rel,
	    "type", "file", "content", sbx_json_bytes(b.p + off, end - off),
	    "size", (json_int_t)b.len, "total_lines", (json_int_t)total,
	    "start_line", (json_int_t)start, "end_line", (json_int_t)endl,
	    "truncated", cut, "binary",
	    memchr(b.p + off, '\0', end - off) != NULL);
	/* Where to go on: after what was shown, when anything is left. */
	if (*res != NULL && end < b.len)
		json_object_set_new(*res, "next_start_line",
		    json_integer(
			(json_int_t)(end > off && b.p[end - 1] == '\n' ?
				endl + 1 :
				endl)));
	sbx_buf_release(&b);
	if (*res == NULL)
		return sbx_error_sys(e, "nomem", "reading %s", rel);
	return 0;
}

/* ---- list ----------------------------------------------------------------- */

struct walk {
	json_t *entries;
	size_t	n;
	int	truncated;
};

static int
walk_dir(int dfd, const char *prefix, int depth, struct walk *w)
{
	struct stat st;
	char	  **names, path[PATH_MAX];
	size_t	    i, n;
	int	    sub;
	json_t	   *ent;

	if ((names = sbx_fs_sorted_names(dfd, &n)) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (w->n >= SBX_AGENTFS_ENTRIES_MAX) {
			w->truncated = 1;
			break;
		}
		if (fstatat(dfd, names[i], &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue; /* gone since readdir */
		if ((size_t)snprintf(path, sizeof(path), "%s%s%s", prefix,
			*prefix ? "/" : "", names[i]) >= sizeof(path))
			continue;
		ent = json_pack("{s:o,s:o,s:s,s:I}", "name",
		    sbx_json_bytes(names[i], strlen(names[i])), "path",
		    sbx_json_bytes(path, strlen(path)), "type",
		    type_name(st.st_mode), "size", (json_int_t)st.st_size);
		if (ent == NULL || json_array_append_new(w->entries, ent) == -1)
			break;
		w->n++;
		if (!S_ISDIR(st.st_mode) || depth <= 1)
			continue;
		/* O_NOFOLLOW: the entry was a directory a moment ago; if it
		 * is a link now, it is not entered. */
		sub = openat(dfd, names[i],
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC);
		if (sub == -1)
			continue;
		(void)walk_dir(sub, path, depth - 1, w);
		close(sub);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return 0;
}

int
sbx_agentfs_list(struct sbx_agentfs *fs, const char *rel, int depth,
    json_t **res, struct sbx_error *e)
{
	struct walk w = { NULL, 0, 0 };
	int	    dfd;

	if (depth < 1 || depth > SBX_AGENTFS_DEPTH_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "depth",
		    "out_of_range", "argument `depth` must be 1 to %d",
		    SBX_AGENTFS_DEPTH_MAX);
	if ((dfd = open_in(fs->home_fd, rel,
		 O_RDONLY | O_DIRECTORY | O_NONBLOCK, e)) == -1)
		return -1;
	if ((w.entries = json_array()) == NULL ||
	    walk_dir(dfd, strcmp(rel, ".") == 0 ? "" : rel, depth, &w) == -1) {
		sbx_error_sys(e, "list_failed", "cannot list %s", rel);
		close(dfd);
		json_decref(w.entries);
		return -1;
	}
	close(dfd);
	*res =
	    json_pack("{s:s,s:s,s:i,s:o,s:b}", "path", rel, "type", "directory",
		"depth", depth, "entries", w.entries, "truncated", w.truncated);
	if (*res == NULL)
		return sbx_error_sys(e, "nomem", "listing %s", rel);
	return 0;
}

/* ---- write and edit ------------------------------------------------------- */

/* rel's directory (open) and last component. */
static int
open_parent(int home, const char *rel, int create, char *leaf, size_t leafsz,
    int *made, struct sbx_error *e)
{
	char	    parent[PATH_MAX], comp[NAME_MAX + 1];
	const char *slash = strrchr(rel, '/'), *s, *end;
	int	    fd, nfd;

	if (strcmp(rel, ".") == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "is_a_directory", "the home is a directory, not a file");
	snprintf(leaf, leafsz, "%s", slash != NULL ? slash + 1 : rel);
	snprintf(parent, sizeof(parent), "%.*s",
	    slash != NULL ? (int)(slash - rel) : 1, slash != NULL ? rel : ".");
	fd = open_in(home, parent, O_RDONLY | O_DIRECTORY, e);
	if (fd >= 0 || !create || errno != ENOENT)
		return fd;
	/* --create-dirs: one component at a time, each opened beneath the
	 * one before (so no link out of it is followed), new ones made as
	 * the agent (mode 0755 less its umask, as mkdir -p). */
	if ((fd = fcntl(home, F_DUPFD_CLOEXEC, 3)) == -1)
		return sbx_error_sys(e, "dup", "dup");
	for (s = parent; *s != '\0'; s = *end ? end + 1 : end) {
		end = strchrnul(s, '/');
		snprintf(comp, sizeof(comp), "%.*s", (int)(end - s), s);
		if (mkdirat(fd, comp, 0755) == 0)
			(*made)++;
		else if (errno != EEXIST) {
			open_error(errno, parent, e);
			close(fd);
			return -1;
		}
		nfd = open_in(fd, comp, O_RDONLY | O_DIRECTORY, e);
		close(fd);
		if (nfd == -1)
			return -1;
		fd = nfd;
	}
	return fd;
}

/*
 * May we replace dfd/leaf?  The rename only needs the directory, so a
 * read-only file would be overwritten where the agent's own tools stop:
 * ask the kernel (faccessat2, as the uid we run as) whether the file
 * itself is writable.  st describes it.
 */
static int
check_writable(int dfd, const char *leaf, const char *rel,
    const struct stat *st, struct sbx_error *e)
{
	if (S_ISLNK(st->st_mode))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path", "symlink",
		    "%s is a symbolic link; write to the file it names "
		    "instead",
		    rel);
	if (S_ISDIR(st->st_mode))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "path",
		    "is_a_directory", "%s is a directory", rel);
	if (!S_ISREG(st->st_mode))
		return not_regular(rel, st->st_mode, e);
	if (faccessat(dfd, leaf, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) ==
		-1 &&
	    (errno == EACCES || errno == EPERM || errno == EROFS)) {
		sbx_error_set(e, SBX_K_REJECTED, "path", "read_only",
		    "%s is read-only (mode %04o)", rel,
		    (unsigned)(st->st_mode & 07777));
		sbx_error_hint(e,
		    "make it writable first (chmod u+w) if it "
		    "is meant to change");
		return -1;
	}
	return 0;
}

static int
replace(int dfd, const char *leaf, const char *rel, const void *data, size_t n,
    mode_t mode, struct sbx_error *e)
{
	if (sbx_fs_replace_at(dfd, leaf, data, n, mode, e) == 0)
		return 0;
	if (e != NULL &&
	    (e->sys_errno == EACCES || e->sys_errno == EPERM ||
		e->sys_errno == EROFS)) {
		sbx_error_set(e, SBX_K_REJECTED, "path", "read_only_directory",
		    "the directory of %s is not writable", rel);
		sbx_error_hint(e, "make it writable first (chmod u+w DIR)");
	} else if (e != NULL && e->sys_errno == ENOSPC)
		e->reason = "no_space";
	return -1;
}

static json_t *
mode_string(mode_t m)
{
	return json_sprintf("%04o", (unsigned)(m & 07777));
}

int
sbx_agentfs_write(struct sbx_agentfs *fs, const char *rel, const void *data,
    size_t n, int create_dirs, int mode, json_t **res, struct sbx_error *e)
{
	struct stat st;
	char	    leaf[NAME_MAX + 1];
	mode_t	    m;
	int	    dfd, created = 0, made = 0;

	if (n > SBX_AGENTFS_WRITE_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "content",
		    "too_large", "the content is more than %u bytes",
		    SBX_AGENTFS_WRITE_MAX);
	if (mode > 0777)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "mode",
		    "mode_not_allowed",
		    "argument `mode` must be 0000 to 0777 "
		    "(no setuid, setgid or sticky bit)");
	if ((dfd = open_parent(fs->home_fd, rel, create_dirs, leaf,
		 sizeof(leaf), &made, e)) == -1)
		return -1;
	if (fstatat(dfd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (check_writable(dfd, leaf, rel, &st, e) == -1)
			goto fail;
		m = mode >= 0 ? (mode_t)mode : st.st_mode & 0777;
	} else if (errno == ENOENT) {
		created = 1;
		m = mode >= 0 ? (mode_t)mode : 0644;
	} else {
		open_error(errno, rel, e);
		goto fail;
	}
	if (replace(dfd, leaf, rel, data, n, m, e) == -1)
		goto fail;
	close(dfd);
	*res = json_pack("{s:s,s:I,s:b,s:o,s:i}", "path", rel, "bytes",
	    (json_int_t)n, "created", created, "mode", mode_string(m),
	    "dirs_created", made);
	if (*res == NULL)
		return sbx_error_sys(e, "nomem", "writing %s", rel);
	return 0;
fail:
	close(dfd);
	return -1;
}

int
sbx_agentfs_edit(struct sbx_agentfs *fs, const char *rel, const char *old,
    size_t oldn, const char *new, size_t newn, int all, json_t **res,
    json_t **extra, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT, out = SBX_BUF_INIT;
	struct stat    st, now;
	char	       leaf[NAME_MAX + 1];
	const char    *p, *q, *lp;
	json_t	      *lines = NULL;
	size_t	       count = 0, line = 1;
	int	       fd, dfd = -1, made = 0, r = -1;

	if (extra != NULL)
		*extra = NULL;
	if (oldn == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "old", "empty",
		    "argument `old` is empty; give the exact text to replace");
	if ((fd = open_regular(fs->home_fd, rel, &st, NULL, e)) == -1)
		return -1;
	if (read_capped(fd, rel, &b, e) == -1) {
		close(fd);
		goto out;
	}
	close(fd);
	if ((lines = json_array()) == NULL)
		goto nomem;
	/* Count every match, non-overlapping, and the lines of the first
	 * few, so that an agent can widen `old` to the one it means. */
	for (p = lp = b.p;
	     (q = memmem(p, b.len - (size_t)(p - b.p), old, oldn)) != NULL;
	     p = q + oldn) {
		if (json_array_size(lines) < SBX_AGENTFS_LINES_SHOWN) {
			for (; lp < q; lp++)
				line += *lp == '\n';
			json_array_append_new(lines,
			    json_integer((json_int_t)line));
		}
		count++;
		if (sbx_buf_append(&out, p, (size_t)(q - p)) == -1 ||
		    sbx_buf_append(&out, new, newn) == -1)
			goto nomem;
		if (out.len > SBX_AGENTFS_FILE_MAX) {
			too_large(rel, out.len, e);
			goto out;
		}
	}
	if (count != 1 && !(all && count > 0)) {
		if (count == 0)
			sbx_error_set(e, SBX_K_INVALID_ARGS, "old", "no_match",
			    "argument `old` does not occur in %s (the match "
			    "is exact: spaces, tabs and newlines count)",
			    rel);
		else
			sbx_error_set(e, SBX_K_INVALID_ARGS, "old",
			    "multiple_matches",
			    "argument `old` occurs %zu "
			    "times in %s; give more of the text around it to "
			    "make it unique, or --all to replace each",
			    count, rel);
		if (extra != NULL) {
			*extra = json_pack("{s:I,s:O}", "count",
			    (json_int_t)count, "lines", lines);
		}
		goto out;
	}
	if (sbx_buf_append(&out, p, b.len - (size_t)(p - b.p)) == -1 ||
	    (out.p == NULL && sbx_buf_append(&out, "", 0) == -1))
		goto nomem;
	if (out.len > SBX_AGENTFS_FILE_MAX) {
		too_large(rel, out.len, e);
		goto out;
	}
	if ((dfd = open_parent(fs->home_fd, rel, 0, leaf, sizeof(leaf), &made,
		 e)) == -1)
		goto out;
	/* What we read must still be what the name holds: a link put in
	 * its place is not replaced by a file, a different file is not
	 * overwritten with an edit of another. */
	if (fstatat(dfd, leaf, &now, AT_SYMLINK_NOFOLLOW) == -1) {
		open_error(errno, rel, e);
		goto out;
	}
	if (check_writable(dfd, leaf, rel, &now, e) == -1)
		goto out;
	if (now.st_dev != st.st_dev || now.st_ino != st.st_ino) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "path", "changed",
		    "%s changed while it was being edited; nothing was "
		    "written",
		    rel);
		goto out;
	}
	if (replace(dfd, leaf, rel, out.p, out.len, st.st_mode & 07777, e) ==
	    -1)
		goto out;
	*res = json_pack("{s:s,s:I,s:I,s:I,s:O}", "path", rel, "replacements",
	    (json_int_t)count, "bytes_before", (json_int_t)b.len, "bytes_after",
	    (json_int_t)out.len, "lines", lines);
	if (*res == NULL)
		goto nomem;
	r = 0;
	goto out;
nomem:
	sbx_error_sys(e, "nomem", "editing %s", rel);
out:
	if (dfd >= 0)
		close(dfd);
	json_decref(lines);
	sbx_buf_release(&b);
	sbx_buf_release(&out);
	return r;
}
