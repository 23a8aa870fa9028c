/* root.c: resolving and opening the state root. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "root.h"
#include "users.h"

static char *
absolutize(const char *p)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 cwd[PATH_MAX];

	if (*p == '/')
		return strdup(p);
	if (getcwd(cwd, sizeof(cwd)) == NULL)
		return NULL;
	if (sbx_buf_printf(&b, "%s/%s", cwd, p) == -1) {
		sbx_buf_release(&b);
		return NULL;
	}
	return sbx_buf_detach(&b);
}

int
sbx_root_resolve(const char *flag, struct sbx_root *r, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*v, *home;
	char		*pwhome = NULL;

	r->fd = -1;
	if (flag != NULL) {
		r->source = "flag_override";
		v = flag;
	} else if ((v = secure_getenv("SBX_HOME")) != NULL && *v) {
		r->source = "environment_override";
		/* An environment variable outlives the directory it was set
		 * in: a relative one would name another root in every cwd. */
		if (*v != '/')
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "home",
			    "relative_path", "SBX_HOME must be an absolute "
			    "path, not `%s`; use --home for a path relative "
			    "to the current directory", v);
	} else {
		r->source = "default_home";
		v = secure_getenv("XDG_DATA_HOME");
		if (geteuid() == 0) {
			/* Root's sandboxes run as an unprivileged uid, which
			 * must be able to reach the homes: not under /root. */
			sbx_buf_puts(&b, "/var/lib/sbx");
		} else if (v != NULL && *v == '/') {
			sbx_buf_printf(&b, "%s/sbx", v);
		} else {
			home = secure_getenv("HOME");
			if (home == NULL || *home != '/')
				home = pwhome = sbx_user_home(getuid());
			if (home == NULL || *home != '/') {
				free(pwhome);
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    "home", "no_home", "cannot find a home "
				    "directory for the state root; use --home "
				    "or SBX_HOME");
			}
			sbx_buf_printf(&b, "%s/.local/share/sbx", home);
			free(pwhome);
		}
		if (b.p == NULL)
			return sbx_error_sys(e, "nomem", "state root");
		v = b.p;
	}
	if (sbx_fs_path_check(v, "home", e) == -1) {
		sbx_buf_release(&b);
		return -1;
	}
	r->path = absolutize(v);
	sbx_buf_release(&b);
	if (r->path == NULL)
		return sbx_error_sys(e, "nomem", "state root");
	/* Strip trailing slashes; refuse the file-system root itself. */
	while (strlen(r->path) > 1 && r->path[strlen(r->path) - 1] == '/')
		r->path[strlen(r->path) - 1] = '\0';
	if (strcmp(r->path, "/") == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "home",
		    "root_directory", "the state root cannot be /");
	return 0;
}

static int
mkdir_parents(const char *path)
{
	char	 tmp[PATH_MAX];
	char	*s;

	if (strlen(path) >= sizeof(tmp))
		return -1;
	strcpy(tmp, path);
	for (s = tmp + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(tmp, 0755) == -1 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return 0;
}

int
sbx_root_open(struct sbx_root *r, int create, struct sbx_error *e)
{
	struct stat	 st;
	int		 fd;

	if (create) {
		if (mkdir_parents(r->path) == -1 ||
		    (mkdir(r->path, 0700) == -1 && errno != EEXIST))
			return sbx_error_sys(e, "state_root_unusable",
			    "cannot create the state root %s", r->path);
	}
	fd = open(r->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT) {
			sbx_error_set(e, SBX_K_NOT_FOUND, "home",
			    "state_root_missing", "state root %s does not "
			    "exist", r->path);
			sbx_error_hint(e, "run `sbx provision` (or any `sbx "
			    "exec`) to make it");
			return -1;
		}
		if (errno == ENOTDIR)
			return sbx_error_set(e, SBX_K_REJECTED, "home",
			    "state_root_not_directory", "state root %s is not "
			    "a directory", r->path);
		return sbx_error_sys(e, "state_root_unusable",
		    "cannot open the state root %s", r->path);
	}
	if (fstat(fd, &st) == -1) {
		close(fd);
		return sbx_error_sys(e, "state_root_unusable", "stat %s",
		    r->path);
	}
	/* A root someone else owns or can write to could hold planted
	 * records, tokens or symlinks: refuse it rather than trust it. */
	if (st.st_uid != geteuid()) {
		close(fd);
		sbx_error_set(e, SBX_K_REJECTED, "home", "insecure_state_root",
		    "state root %s is owned by uid %u, not by uid %u", r->path,
		    (unsigned)st.st_uid, (unsigned)geteuid());
		sbx_error_hint(e, "use a state root you own (--home DIR)");
		return -1;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		sbx_error_set(e, SBX_K_REJECTED, "home", "insecure_state_root",
		    "state root %s is writable by group or others (mode %04o)",
		    r->path, (unsigned)(st.st_mode & 07777));
		sbx_error_hint(e, "chmod 700 %s", r->path);
		return -1;
	}
	r->fd = fd;
	return 0;
}

int
sbx_root_mark(int rootfd, struct sbx_error *e)
{
	static const char text[] = "This directory is an sbx state root. "
	    "sbx exec refuses to bind it, anything\ninside it or any "
	    "directory that contains it into a sandbox (sbx-exec(1)).\n";
	int	 fd;

	/* O_EXCL|O_NOFOLLOW: never through a planted symlink, never over
	 * what is there; an existing marker of any type marks the root. */
	fd = openat(rootfd, SBX_ROOT_MARKER, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		if (errno == EEXIST)
			return 0;
		return sbx_error_sys(e, "state_root_unusable", "cannot create "
		    "%s in the state root", SBX_ROOT_MARKER);
	}
	if (sbx_fs_write_all(fd, text, sizeof(text) - 1) == -1) {
		sbx_error_sys(e, "state_root_unusable", "cannot write %s in the "
		    "state root", SBX_ROOT_MARKER);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

int
sbx_root_is_state_root(int dirfd)
{
	struct stat	 st;
	int		 fd, r;

	if (fstatat(dirfd, SBX_ROOT_MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	if (errno != ENOENT)
		return -1;
	/* A root made before the marker: run/tokens and config/. */
	if (fstatat(dirfd, "config", &st, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? 0 : -1;
	fd = openat(dirfd, "run", O_PATH | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT || errno == ENOTDIR || errno == ELOOP ?
		    0 : -1;
	r = fstatat(fd, "tokens", &st, AT_SYMLINK_NOFOLLOW) == 0 ? 1 :
	    errno == ENOENT ? 0 : -1;
	close(fd);
	return r;
}

struct scan {
	size_t			 budget;
	char			*rel;
	size_t			 relsz;
	struct sbx_error	*e;
};

/*
 * fd (at rel) could not be looked into.  Someone else's directory is as
 * closed to the sandbox as it is to us; one of our own is not: code running
 * as our uid can chmod it open, so what it holds cannot be ruled out.
 */
static int
scan_unreadable(int fd, struct scan *s)
{
	struct stat	 st;

	if (fstat(fd, &st) == 0 && st.st_uid != geteuid())
		return 0;
	return sbx_error_set(s->e, SBX_K_REJECTED, NULL,
	    "state_root_unchecked", "cannot look inside %s to rule out an sbx "
	    "state root there", *s->rel ? s->rel : ".");
}

static int
scan_dir(int dfd, int depth, size_t rlen, struct scan *s)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 n;
	int		 rfd, cfd, r = 0;

	if ((rfd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return errno == EACCES ? scan_unreadable(dfd, s) :
		    sbx_error_sys(s->e, "state_root_unchecked", "cannot read "
		    "%s", *s->rel ? s->rel : ".");
	if ((d = fdopendir(rfd)) == NULL) {
		close(rfd);
		return sbx_error_sys(s->e, "nomem", "opendir");
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		/* Only real directories: a symlink leads nowhere the
		 * sandbox could reach through it. */
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (s->budget == 0) {
			r = sbx_error_set(s->e, SBX_K_REJECTED, NULL,
			    "state_root_unchecked", "too many directories to "
			    "rule out an sbx state root inside");
			break;
		}
		s->budget--;
		cfd = openat(dirfd(d), de->d_name, O_PATH | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (cfd == -1) {
			if (errno == EACCES && (r = scan_unreadable(dfd, s))
			    == -1)
				break;
			continue;	/* not a directory, or gone */
		}
		n = strlen(de->d_name);
		if (rlen + n + 2 > s->relsz) {
			close(cfd);
			r = sbx_error_set(s->e, SBX_K_REJECTED, NULL,
			    "state_root_unchecked", "path too long below %s",
			    s->rel);
			break;
		}
		if (rlen > 0)
			s->rel[rlen] = '/';
		memcpy(s->rel + rlen + (rlen > 0), de->d_name, n + 1);
		r = sbx_root_is_state_root(cfd);
		if (r == -1)
			r = scan_unreadable(cfd, s);
		else if (r == 0 && depth > 1)
			r = scan_dir(cfd, depth - 1, rlen + (rlen > 0) + n, s);
		close(cfd);
		if (r != 0)
			break;
		s->rel[rlen] = '\0';
	}
	closedir(d);
	return r;
}

int
sbx_root_find_below(int dirfd, int depth, size_t budget, char *rel,
    size_t relsz, struct sbx_error *e)
{
	struct scan	 s;

	if (relsz == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, NULL, "too_long",
		    "no room for a path");
	rel[0] = '\0';
	s.budget = budget;
	s.rel = rel;
	s.relsz = relsz;
	s.e = e;
	return depth > 0 ? scan_dir(dirfd, depth, 0, &s) : 0;
}

void
sbx_root_release(struct sbx_root *r)
{
	if (r->fd >= 0)
		close(r->fd);
	free(r->path);
	r->path = NULL;
	r->fd = -1;
}

/* Is a equal to b or an ancestor of b (component-wise)? */
static int
is_prefix_path(const char *a, const char *b)
{
	size_t	 n = strlen(a);

	if (strcmp(a, "/") == 0)
		return 1;
	return strncmp(a, b, n) == 0 && (b[n] == '\0' || b[n] == '/');
}

int
sbx_root_path_overlaps(const char *path, const char *other)
{
	return is_prefix_path(path, other) || is_prefix_path(other, path);
}
