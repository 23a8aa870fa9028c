/* root.c: resolving and opening the state root. */
#include <sys/stat.h>

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
	if (sbx_path_check(v, "home", e) == -1) {
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
		if (errno == ENOENT)
			return sbx_error_set(e, SBX_K_NOT_FOUND, "home",
			    "state_root_missing", "state root %s does not "
			    "exist", r->path);
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
sbx_path_overlaps(const char *path, const char *other)
{
	return is_prefix_path(path, other) || is_prefix_path(other, path);
}
