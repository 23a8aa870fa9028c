/*
 * exec.c: prepare, run and judge one sandbox run (see exec.h).
 *
 * The code moved here from cmd/sbx-exec.c unchanged in substance: what
 * used to print and exit now returns a struct sbx_error or adds a
 * warning, so that sbx exec, its unit tests and the installer can share it.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agentns.h"
#include "bridge.h"
#include "buf.h"
#include "cgroup.h"
#include "cli.h"
#include "credbind.h"
#include "credrule.h"
#include "daemon.h"
#include "envelope.h"
#include "etccache.h"
#include "exec.h"
#include "fsutil.h"
#include "idmount.h"
#include "imageref.h"
#include "install.h"
#include "joblog.h"
#include "jobsup.h"
#include "layout.h"
#include "names.h"
#include "netpolicy.h"
#include "provision.h"
#include "proxy.h"
#include "proxyclient.h"
#include "root.h"
#include "rootfs.h"
#include "run.h"
#include "runlimits.h"
#include "sandbox.h"
#include "scrub.h"
#include "seccomp.h"
#include "settings.h"
#include "tlsca.h"
#include "tools.h"
#include "userns.h"
#include "users.h"
#include "utf8.h"
#include "workdir.h"

static int	 sigpipe_fds[2] = { -1, -1 };

static void
warn_add(struct sbx_exec *p, const char *msg)
{
	json_array_append_new(p->warnings, json_string(msg));
}

/*
 * A path of --ro or read_paths: absolute, canonical, an existing
 * directory or file, and nothing the sandbox must not see: /, the system
 * trees (there already), the state root, the caller's home itself and
 * (unless the agent's configuration names it) its hidden directories.
 */
static int
ro_path_ok(struct sbx_exec *p, const char *path, int from_config,
    struct sbx_error *e)
{
	char		 canon[PATH_MAX];
	const char	*home = getenv("HOME"), *field = from_config ?
			    "read_paths" : "ro";
	size_t		 n;
	int		 fd;

	if (sbx_fs_path_check(path, field, e) == -1)
		return -1;
	if (strcmp(path, "/") == 0 || sbx_workdir_is_system_dir(path) ||
	    strcmp(path, "/etc") == 0) {
		sbx_error_set(e, SBX_K_REJECTED, field, "system_directory",
		    "argument `%s`: %s is a system directory (already "
		    "read-only in the sandbox, or not to be shown)", field,
		    path);
		return -1;
	}
	if ((fd = sbx_fs_resolve_nofollow(path, canon, sizeof(canon), NULL,
	    NULL, e)) == -1) {
		e->field = field;
		return -1;
	}
	close(fd);
	n = strlen(p->root.path);
	if ((strncmp(canon, p->root.path, n) == 0 && (canon[n] == '\0' ||
	    canon[n] == '/')) || (strncmp(p->root.path, canon,
	    strlen(canon)) == 0 && p->root.path[strlen(canon)] == '/')) {
		sbx_error_set(e, SBX_K_REJECTED, field, "state_root",
		    "argument `%s`: %s holds or is inside the state root",
		    field, path);
		return -1;
	}
	if (home != NULL && home[0] == '/' && strcmp(home, "/") != 0) {
		n = strlen(home);
		while (n > 1 && home[n - 1] == '/')
			n--;
		if (strncmp(canon, home, n) == 0 && canon[n] == '\0') {
			sbx_error_set(e, SBX_K_REJECTED, field,
			    "home_directory", "argument `%s`: %s is your home "
			    "directory", field, path);
			return -1;
		}
		if (!from_config && strncmp(canon, home, n) == 0 &&
		    canon[n] == '/' && canon[n + 1] == '.') {
			sbx_error_set(e, SBX_K_REJECTED, field, "home_dotdir",
			    "argument `%s`: %s is a hidden directory of your "
			    "home", field, path);
			sbx_error_hint(e, "name it in the agent's read_paths "
			    "if the sandbox must read it");
			return -1;
		}
	}
	return 0;
}

/*
 * run/empty: an empty read-only file bound over the files of deny_paths.
 * In sbx's state root, never in the user's tree; run/ is out of every
 * sandbox's reach, and a file found there that is not empty is replaced.
 */
static int
empty_file(struct sbx_exec *p, char *out, size_t cap, struct sbx_error *e)
{
	char		 rel[SBX_LAYOUT_PATH_MAX];
	const char	*leaf;
	struct stat	 st;
	int		 dfd, fd;

	(void)SBX_LPATH(rel, SBX_L_RUN_EMPTY, NULL);
	leaf = sbx_layout_leaf(rel);
	if ((dfd = sbx_layout_mkdirs(p->root.fd, SBX_L_RUN, NULL, e)) == -1)
		return -1;
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd >= 0 && (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size != 0)) {
		close(fd);
		fd = -1;
		(void)unlinkat(dfd, leaf, 0);
	}
	if (fd == -1)
		fd = openat(dfd, leaf, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC,
		    sbx_layout_get(SBX_L_RUN_EMPTY)->mode);
	close(dfd);
	if (fd == -1)
		return sbx_error_sys(e, "empty_file", "%s/%s", p->root.path,
		    rel);
	close(fd);
	snprintf(out, cap, "%s/%s", p->root.path, rel);
	return 0;
}

static int
is_under(const char *path, const char *dir)
{
	size_t	 n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/');
}

/* The host view's cwd is under the sandbox's own /tmp or /run and in no
 * writable root: it would not be there. */
static int
host_view_cwd_hidden(const struct sbx_exec *p)
{
	int	 k;

	if (!is_under(p->cwd, "/tmp") && !is_under(p->cwd, "/run") &&
	    !is_under(p->cwd, "/dev"))
		return 0;
	if (p->workdir != NULL && is_under(p->cwd, p->workdir))
		return 0;
	for (k = 0; k < p->nxwd; k++)
		if (is_under(p->cwd, p->xwd[k].path))
			return 0;
	return strcmp(p->cwd, "/tmp") != 0 && strcmp(p->cwd, "/run") != 0 &&
	    strcmp(p->cwd, "/dev") != 0;
}

/* read_paths of the configuration, then --ro of the run. */
static int
ro_paths(struct sbx_exec *p, struct sbx_strv *ro, struct sbx_error *e)
{
	const json_t	*v, *x;
	size_t		 i;

	v = json_object_get(p->agent_cfg, "read_paths");
	json_array_foreach (v, i, x)
		if (ro_path_ok(p, json_string_value(x), 1, e) == -1 ||
		    sbx_fspolicy_ro(&p->fs, json_string_value(x), e) == -1 ||
		    sbx_strv_push(ro, json_string_value(x)) == -1)
			return -1;
	for (i = 0; i < p->req->ro.n; i++)
		if (ro_path_ok(p, p->req->ro.v[i], 0, e) == -1 ||
		    sbx_fspolicy_ro(&p->fs, p->req->ro.v[i], e) == -1 ||
		    sbx_strv_push(ro, p->req->ro.v[i]) == -1)
			return -1;
	return 0;
}

/*
 * The file-system policy (fspolicy.c): protected paths in the
 * workdir, --ro and read_paths, deny_paths, and the unix-socket guard in
 * none and proxy modes.
 */
static int
prep_fspolicy(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_strv	 entries = SBX_STRV_INIT, un = SBX_STRV_INIT;
	struct sbx_strv	 ro = SBX_STRV_INIT, allow = SBX_STRV_INIT;
	const json_t	*v, *x;
	char		 src[64], w[PATH_MAX + 128], empty[PATH_MAX];
	size_t		 i, n;
	int		 rc = -1, k;

	empty[0] = '\0';
	sbx_fspolicy_init(&p->fs);
	if (sbx_fspolicy_config_check(p->agent_cfg, p->agent_rel, e) == -1)
		return -1;
	p->fs.git_search = sbx_fspolicy_git_search(p->agent_cfg);
	for (i = 0; i < p->req->unprotect.n; i++) {
		const char *u = p->req->unprotect.v[i];

		if (p->workdir == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "unprotect",
			    "requires_workdir", "--unprotect needs --workdir");
			goto out;
		}
		n = strlen(p->workdir);
		if (u[0] == '/' && strncmp(u, p->workdir, n) == 0 &&
		    u[n] == '/')
			u += n + 1;
		for (k = 0; u[0] == '/' && k < p->nxwd; k++)
			if (n = strlen(p->xwd[k].path),
			    strncmp(u, p->xwd[k].path, n) == 0 && u[n] == '/')
				u += n + 1;
		if (sbx_strv_push(&un, u) == -1)
			goto nomem;
	}
	if (p->workdir != NULL) {
		char *roots[SBX_MAX_XWORKDIRS + 1];

		if (sbx_fspolicy_entries(p->agent_cfg, un.v, un.n, &entries,
			e) == -1)
			goto out;
		roots[0] = p->workdir;
		for (k = 0; k < p->nxwd; k++)
			roots[k + 1] = p->xwd[k].path;
		/* Every writable root gets the same protection. */
		for (k = -1; k < p->nxwd; k++) {
			snprintf(src, sizeof(src), "/proc/self/fd/%d",
			    k < 0 ? SBX_FD_WORKDIR : SBX_FD_XWORKDIR + k);
			if (sbx_fspolicy_protect(&p->fs,
				k < 0 ? p->workdir_fd : p->xwd[k].fd,
				roots[k + 1], src, roots, (size_t)p->nxwd + 1,
				&entries, e) == -1)
				goto out;
		}
		for (i = 0; i < p->fs.warnings.n; i++)
			warn_add(p, p->fs.warnings.v[i]);
		for (i = 0; i < un.n; i++) {
			snprintf(w, sizeof(w),
			    "protection lifted for this "
			    "run: %s/%s (--unprotect)",
			    p->workdir, un.v[i]);
			warn_add(p, w);
		}
	}
	/* Read-only paths: the configuration's, then the run's (in the
	 * host view, after the hidden ones: what is given back inside a
	 * hidden directory is bound over its tmpfs, srt's allowRead). */
	if (!p->sb.host_view && ro_paths(p, &ro, e) == -1)
		goto out;
	/* Hidden paths: relative ones in the workdir; absolute ones must
	 * be inside the workdir or a read-only path. */
	v = json_object_get(p->agent_cfg, "deny_paths");
	json_array_foreach (v, i, x) {
		const char *d = json_string_value(x);
		int	    inside = 0;

		if (d[0] != '/') {
			/* Relative: in every writable root. */
			for (k = -1; k < p->nxwd && p->workdir != NULL; k++) {
				snprintf(w, sizeof(w), "%s/%s",
				    k < 0 ? p->workdir : p->xwd[k].path, d);
				if (empty[0] == '\0' &&
				    empty_file(p, empty, sizeof(empty), e) ==
					-1)
					goto out;
				if (sbx_fspolicy_deny(&p->fs, w, empty, e) ==
				    -1)
					goto out;
			}
			continue;
		}
		for (k = 0; k < p->nxwd; k++)
			inside |= is_under(d, p->xwd[k].path);
		inside |= p->workdir != NULL && is_under(d, p->workdir);
		for (n = 0; n < ro.n; n++)
			inside |= is_under(d, ro.v[n]);
		inside |= p->sb.host_view;
		if (!inside)
			continue; /* not visible anyway */
		if (empty[0] == '\0' &&
		    empty_file(p, empty, sizeof(empty), e) == -1)
			goto out;
		if (sbx_fspolicy_deny(&p->fs, d, empty, e) == -1)
			goto out;
	}
	/*
	 * The host view shows the host: never the state root (tokens,
	 * sealed secrets, other agents' homes), which is hidden under an
	 * empty tmpfs as deny_paths are.
	 */
	if (p->sb.host_view) {
		if (empty[0] == '\0' &&
		    empty_file(p, empty, sizeof(empty), e) == -1)
			goto out;
		if (sbx_fspolicy_deny(&p->fs, p->root.path, empty, e) == -1 ||
		    ro_paths(p, &ro, e) == -1)
			goto out;
		/*
		 * The command starts where it was started: a directory under
		 * what the sandbox has of its own (/tmp), outside every
		 * writable root, is shown read-only at its place, as the
		 * rest of the host is.
		 */
		if (host_view_cwd_hidden(p) &&
		    (ro_path_ok(p, p->cwd, 1, e) == -1 ||
			sbx_fspolicy_ro(&p->fs, p->cwd, e) == -1))
			goto out;
	}
	/* Unix sockets: a door out that --network none leaves open. */
	if (sbx_netmode_row(p->network)->netns && !p->req->seccomp_off) {
		v = json_object_get(p->agent_cfg, "allow_unix_sockets");
		json_array_foreach (v, i, x)
			if (sbx_strv_push(&allow, json_string_value(x)) == -1)
				goto nomem;
		if (sbx_fspolicy_unix(&p->fs, allow.v, allow.n, e) == -1)
			goto out;
	}
	/*
	 * --seccomp off is for diagnosis: no filter at all, the guard's
	 * included.  What exists stays read-only (mounts); names that do
	 * not exist yet are not guarded, and the run says so.
	 */
	if (p->req->seccomp_off && p->fs.init.n > 0) {
		sbx_strv_release(&p->fs.init);
		warn_add(p, "seccomp is off: protected paths that do not exist "
		    "yet can be created in this run (existing ones stay "
		    "read-only)");
	}
	rc = 0;
	goto out;
nomem:
	sbx_error_sys(e, "nomem", "file-system policy");
out:
	sbx_strv_release(&entries);
	sbx_strv_release(&un);
	sbx_strv_release(&ro);
	sbx_strv_release(&allow);
	return rc;
}

/* Validate --cwd against HOME (or the workdir) and check it exists there,
 * without following symlinks out. */
static int
prep_cwd(struct sbx_exec *p, struct sbx_error *e)
{
	const char		*base = NULL, *rel = NULL;
	int			 basefd = -1, fd, i;
	size_t			 n;

	if (p->sb.rootfs_rw) {
		snprintf(p->cwd, sizeof(p->cwd), "/");
		return 0;
	}
	if (p->req->cwd == NULL) {
		snprintf(p->cwd, sizeof(p->cwd), "%s",
		    p->workdir ? p->workdir : p->home);
		return 0;
	}
	if (sbx_fs_path_check(p->req->cwd, "cwd", e) == -1)
		return -1;
	if (p->req->cwd[0] != '/') {
		if ((size_t)snprintf(p->cwd, sizeof(p->cwd), "%s/%s", p->home,
		    p->req->cwd) >= sizeof(p->cwd)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "cwd",
			    "too_long", "argument `cwd` is too long");
			return -1;
		}
	} else
		snprintf(p->cwd, sizeof(p->cwd), "%s", p->req->cwd);
	n = strlen(p->home);
	if (strncmp(p->cwd, p->home, n) == 0 &&
	    (p->cwd[n] == '\0' || p->cwd[n] == '/')) {
		base = p->home;
		basefd = p->home_fd;
		rel = p->cwd + n;
	} else if (p->workdir != NULL && (n = strlen(p->workdir),
	    strncmp(p->cwd, p->workdir, n) == 0) &&
	    (p->cwd[n] == '\0' || p->cwd[n] == '/')) {
		base = p->workdir;
		basefd = p->workdir_fd;
		rel = p->cwd + n;
	}
	for (i = 0; base == NULL && i < p->nxwd; i++)
		if ((n = strlen(p->xwd[i].path), strncmp(p->cwd,
		    p->xwd[i].path, n) == 0) && (p->cwd[n] == '\0' ||
		    p->cwd[n] == '/')) {
			base = p->xwd[i].path;
			basefd = p->xwd[i].fd;
			rel = p->cwd + n;
		}
	/* The host view: the host's directories are there, read-only; the
	 * command may start in any of them (a hidden one fails at chdir,
	 * inside). */
	if (base == NULL && p->sb.host_view) {
		struct stat st;

		if (stat(p->cwd, &st) == 0 && S_ISDIR(st.st_mode))
			return 0;
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "cwd",
		    "not_found", "argument `cwd` rejected: %s is not a "
		    "directory", p->req->cwd);
	}
	if (base == NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "cwd", "outside_home",
		    "argument `cwd` rejected: %s is outside %s%s%s", p->req->cwd,
		    p->home, p->workdir ? " and " : "",
		    p->workdir ? p->workdir : "");
		return -1;
	}
	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		return 0;
	fd = sbx_fs_open_beneath(basefd, rel, O_PATH | O_DIRECTORY, e);
	if (fd == -1) {
		e->kind = SBX_K_INVALID_ARGS;
		e->retryable = 0;
		e->field = "cwd";
		if (e->reason && strcmp(e->reason, "not_found") == 0)
			e->reason = "not_found";
		else if (e->reason && strcmp(e->reason, "symlink_in_path") == 0)
			e->reason = "symlink";
		snprintf(e->message, sizeof(e->message), "argument `cwd` "
		    "rejected: %s is not a directory inside %s (missing, or "
		    "reached through a symlink)", p->req->cwd, base);
		return -1;
	}
	close(fd);
	return 0;
}

static int
env_find(struct sbx_strv *env, const char *assign)
{
	size_t	 i, n = strcspn(assign, "=");

	for (i = 0; i < env->n; i++)
		if (strncmp(env->v[i], assign, n) == 0 && env->v[i][n] == '=')
			return (int)i;
	return -1;
}

static int
safe_value(const char *v)
{
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		    (*v >= '0' && *v <= '9') || strchr("._-+@", *v)))
			return 0;
	return 1;
}

static const char *cred_placeholder(const struct sbx_exec *, const char *);

/*
 * PATH, with the agent's own tools first: ~/.venv/bin (and VIRTUAL_ENV)
 * when sbx install made a venv there, ~/.sbx/node_workspace/
 * node_modules/.bin (and NODE_PATH) when it installed npm packages.  Two
 * fstatat(2) calls beneath the home's descriptor, no walk.
 */
static void
prep_env_path(struct sbx_exec *p, struct sbx_strv *env)
{
	struct stat	 st;
	struct sbx_buf	 b = SBX_BUF_INIT;
	int		 venv, npm;

	venv = p->home_fd >= 0 && fstatat(p->home_fd, SBX_INSTALL_VENV_DIR
	    "/bin/python", &st, AT_SYMLINK_NOFOLLOW) == 0;
	npm = p->home_fd >= 0 && fstatat(p->home_fd, SBX_INSTALL_NPM_DIR
	    "/node_modules", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode);
	sbx_buf_puts(&b, "PATH=");
	if (venv)
		sbx_buf_printf(&b, "%s/" SBX_INSTALL_VENV_DIR "/bin:", p->home);
	if (npm)
		sbx_buf_printf(&b, "%s/" SBX_INSTALL_NPM_DIR
		    "/node_modules/.bin:", p->home);
	sbx_buf_puts(&b, SBX_SANDBOX_PATH);
	if (b.p != NULL)
		sbx_strv_push(env, b.p);
	sbx_buf_release(&b);
	if (venv)
		sbx_strv_pushf(env, "VIRTUAL_ENV=%s/" SBX_INSTALL_VENV_DIR,
		    p->home);
	/* require("pkg") from anywhere finds what sbx install put there. */
	if (npm)
		sbx_strv_pushf(env, "NODE_PATH=%s/" SBX_INSTALL_NPM_DIR
		    "/node_modules", p->home);
}

static int
prep_env(struct sbx_exec *p)
{
	struct sbx_strv	 env = SBX_STRV_INIT;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*v;
	size_t		 i;
	int		 k, fd;

	/* The fixed allowlist; nothing else of the caller's environment
	 * reaches the sandbox.  What sbx install put in the home (a venv,
	 * npm's workspace) comes first on PATH, as an activated venv. */
	prep_env_path(p, &env);
	sbx_strv_pushf(&env, "HOME=%s", p->home);
	sbx_strv_pushf(&env, "USER=%s", p->sb.agent);
	sbx_strv_pushf(&env, "LOGNAME=%s", p->sb.agent);
	v = getenv("LANG");
	sbx_strv_pushf(&env, "LANG=%s", v && *v && strlen(v) < 64 &&
	    safe_value(v) ? v : "C.UTF-8");
	v = getenv("TERM");
	if (v && *v && strlen(v) < 64 && safe_value(v))
		sbx_strv_pushf(&env, "TERM=%s", v);
	/*
	 * Without a terminal, Python holds its output in a block buffer, so
	 * a script that prints every second looks silent to --timeout and
	 * to whoever watches the stream.  Unbuffered, as it would be on a
	 * terminal; --env PYTHONUNBUFFERED= turns it off.
	 */
	sbx_strv_push(&env, "PYTHONUNBUFFERED=1");
	/*
	 * The sandbox trusts what the host (or the image) trusts: node,
	 * python's requests and OpenSSL are pointed at the system bundle,
	 * which they would otherwise ignore for a store of their own.  Set
	 * before --env, which may override them.
	 */
	if (p->sb.ca_bundle)
		v = SBX_IN_CA_BUNDLE;
	else
		v = sbx_sandbox_ca_bundle(&p->sb);
	if (v != NULL) {
		sbx_strv_pushf(&env, "SSL_CERT_FILE=%s", v);
		sbx_strv_pushf(&env, "NODE_EXTRA_CA_CERTS=%s", v);
		sbx_strv_pushf(&env, "REQUESTS_CA_BUNDLE=%s", v);
	}
	/*
	 * npm passes a `cafile` of its config (a distribution's or an
	 * administrator's npmrc often pins the system bundle) to Node.js as
	 * its whole store, and Node.js then ignores NODE_EXTRA_CA_CERTS: a
	 * run with bound credentials would fail every request to a rule's
	 * host.  The copy holds the system bundle too; --env overrides it.
	 */
	if (p->sb.ca_bundle)
		sbx_strv_pushf(&env, "npm_config_cafile=%s", SBX_IN_CA_BUNDLE);
	if (sbx_netmode_row(p->network)->relay) {
		/* The relay of sbx-init listens here; the token names the
		 * agent to the proxy.  Set before --env so that a caller
		 * can still override them (it only hurts itself). */
		static const char *const names[] = { "HTTP_PROXY",
		    "HTTPS_PROXY", "http_proxy", "https_proxy" };

		for (k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
			sbx_strv_pushf(&env, "%s=http://%s:%s@127.0.0.1:%d",
			    names[k], p->sb.agent, p->proxy_token,
			    SBX_PROXY_PORT);
		/* Clients that prefer SOCKS (and curl for what is not
		 * HTTP) get the SOCKS5 listener, names only (socks5h). */
		sbx_strv_pushf(&env, "ALL_PROXY=socks5h://%s:%s@127.0.0.1:%d",
		    p->sb.agent, p->proxy_token, SBX_INIT_SOCKS_PORT);
		sbx_strv_pushf(&env, "all_proxy=socks5h://%s:%s@127.0.0.1:%d",
		    p->sb.agent, p->proxy_token, SBX_INIT_SOCKS_PORT);
		sbx_strv_push(&env, "NO_PROXY=localhost,127.0.0.1,::1");
		/* Git over SSH, through the proxy (port 22 is opaque
		 * there): a user's --env GIT_SSH_COMMAND still wins. */
		if (p->sb.host_cli != NULL)
			sbx_strv_push(&env,
			    "GIT_SSH_COMMAND=ssh -o "
			    "ProxyCommand='" SBX_INIT_HOST_CLI
			    " connect %h %p'");
		sbx_strv_push(&env, "no_proxy=localhost,127.0.0.1,::1");
	}
	if (p->bridge) {
		/* sbx-host reads these (and /run/sbx/token, which sbx-init
		 * writes from the first and removes from nothing). */
		sbx_strv_pushf(&env, "SBX_BRIDGE_TOKEN=%s", p->proxy_token);
		sbx_strv_push(&env, "SBX_BRIDGE_SOCK=" SBX_INIT_BRIDGE_SOCK);
	}
	/*
	 * The agent's secrets: only ever in this memfd, which sbx-init
	 * reads; never in bwrap's argv or environment nor in ours.  Names
	 * are checked at `secret set` (none is reserved); --env, the
	 * caller's explicit word for this run, still overrides one.
	 */
	for (i = 0; i < p->secrets.n; i++) {
		const char *ph = cred_placeholder(p, p->secrets.assign[i]);

		/* A bound secret: its placeholder, never its value (the
		 * proxy puts the value in requests to the rule's hosts). */
		if (ph != NULL)
			sbx_strv_pushf(&env, "%.*s=%s", (int)(strchr(
			    p->secrets.assign[i], '=') - p->secrets.assign[i]),
			    p->secrets.assign[i], ph);
		else if (!p->secrets_per_command)
			sbx_strv_push(&env, p->secrets.assign[i]);
	}
	for (i = 0; i < p->req->env.n; i++) {
		if ((k = env_find(&env, p->req->env.v[i])) >= 0) {
			free(env.v[k]);
			env.v[k] = strdup(p->req->env.v[i]);
		} else
			sbx_strv_push(&env, p->req->env.v[i]);
	}
	for (i = 0; i < env.n; i++)
		sbx_buf_append(&b, env.v[i], strlen(env.v[i]) + 1);
	fd = sbx_fs_memfd_data("sbx-env", b.p ? b.p : "", b.len);
	/* Copies of the values: wiped, not just freed. */
	if (p->secrets.n > 0) {
		for (i = 0; i < env.n; i++)
			explicit_bzero(env.v[i], strlen(env.v[i]));
		if (b.p != NULL)
			explicit_bzero(b.p, b.cap);
	}
	sbx_buf_release(&b);
	sbx_strv_release(&env);
	return fd;
}

/* ---- credential rules (issue 34) --------------------------------------- */

/* The placeholder of the secret of assignment "NAME=VALUE" when a rule
 * of the run binds it, else NULL. */
static const char *
cred_placeholder(const struct sbx_exec *p, const char *assign)
{
	const char	*eq = strchr(assign, '=');
	size_t		 i, nl;

	if (p->creds == NULL || eq == NULL)
		return NULL;
	nl = (size_t)(eq - assign);
	for (i = 0; i < p->creds->n; i++)
		if (strlen(p->creds->rule[i].secret) == nl &&
		    memcmp(p->creds->rule[i].secret, assign, nl) == 0)
			return p->creds_ph + i * (SBX_CRED_PLACEHOLDER_MAX + 1);
	return NULL;
}

/* The value of secret name in this run ("NAME=VALUE"), or NULL. */
static const char *
cred_value(const struct sbx_exec *p, const char *name)
{
	size_t	 i, nl = strlen(name);

	for (i = 0; i < p->secrets.n; i++)
		if (strncmp(p->secrets.assign[i], name, nl) == 0 &&
		    p->secrets.assign[i][nl] == '=')
			return p->secrets.assign[i] + nl + 1;
	return NULL;
}

/*
 * The agent's rules that bind a secret of this run (none with
 * --no-secrets; with --secret, those of the names given), into p->creds.
 * Checked before anything starts: a run whose network bypasses the proxy
 * (outbound: the host's network) could only be handed the real value,
 * and it never is silently; network none gets the placeholder (there is
 * nothing to send it to).
 */
static int
prep_creds_rules(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_credset	*all;
	size_t			 i, j, k;
	int			 keep;

	if (p->req->no_secrets)
		return 0;
	if ((all = malloc(sizeof(*all))) == NULL)
		return sbx_error_sys(e, "nomem", "credential rules");
	if (sbx_credbind_load(p->agent_cfg, p->agent_rel, all, e) == -1) {
		free(all);
		return -1;
	}
	for (i = j = 0; i < all->n; i++) {
		keep = p->req->secrets.n == 0;
		for (k = 0; !keep && k < p->req->secrets.n; k++)
			keep = strcmp(p->req->secrets.v[k],
			    all->rule[i].secret) == 0;
		if (keep)
			all->rule[j++] = all->rule[i];
	}
	all->n = j;
	if (all->n == 0) {
		free(all);
		return 0;
	}
	p->creds = all;
	if (!sbx_netmode_row(p->network)->netns) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "network",
		    "credentials_need_proxy", "%s is bound to hosts (%s): "
		    "bound credentials need --network proxy, which puts them "
		    "in requests; network %s would hand the sandbox the value "
		    "itself", all->rule[0].secret, p->agent_rel,
		    sbx_netmode_name(p->network));
		sbx_error_hint(e, "use --network proxy, or run without the "
		    "secret (--no-secrets, or --secret naming others)");
		return -1;
	}
	return 0;
}

/*
 * After the secrets are loaded: each rule's secret must be one of them
 * (a rule naming a secret the agent lacks is an error naming it, never a
 * silent skip), a fresh placeholder is drawn for it, and the scrubber is
 * rebuilt to redact the placeholders too (a placeholder in the output
 * says nothing of the value, but it is this run's and no business of the
 * transcript's).  In proxy mode the run will want the CA's bundle
 * (ca_open).
 */
static int
prep_creds(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_scrub	*sc;
	const char		*v, *eq;
	char			*ph;
	char			 name[SBX_SECRET_NAME_MAX + 1];
	size_t			 i, nl;

	if (p->creds == NULL)
		return 0;
	if ((p->creds_ph = calloc(p->creds->n, SBX_CRED_PLACEHOLDER_MAX +
	    1)) == NULL)
		return sbx_error_sys(e, "nomem", "placeholders");
	for (i = 0; i < p->creds->n; i++) {
		if (cred_value(p, p->creds->rule[i].secret) == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "secret",
			    "secret_missing", "%s binds the secret %s, which "
			    "agent %s does not have", p->agent_rel,
			    p->creds->rule[i].secret, p->sb.agent);
			sbx_error_hint(e, "sbx secret set %s --agent %s, or "
			    "sbx secret unbind %s --agent %s",
			    p->creds->rule[i].secret, p->sb.agent,
			    p->creds->rule[i].secret, p->sb.agent);
			return -1;
		}
		ph = p->creds_ph + i * (SBX_CRED_PLACEHOLDER_MAX + 1);
		sbx_credrule_placeholder(p->creds->rule[i].secret, ph);
	}
	if ((sc = sbx_scrub_new()) == NULL)
		return sbx_error_sys(e, "nomem", "scrubber");
	for (i = 0; i < p->secrets.n; i++) {
		v = p->secrets.assign[i];
		if ((eq = strchr(v, '=')) == NULL || (nl = (size_t)(eq - v)) >=
		    sizeof(name))
			continue;
		memcpy(name, v, nl);
		name[nl] = '\0';
		if (sbx_scrub_add(sc, name, eq + 1, strlen(eq + 1)) == -1)
			goto nomem;
	}
	for (i = 0; i < p->creds->n; i++) {
		ph = p->creds_ph + i * (SBX_CRED_PLACEHOLDER_MAX + 1);
		if (sbx_scrub_add(sc, p->creds->rule[i].secret, ph,
		    strlen(ph)) == -1)
			goto nomem;
	}
	if (sbx_scrub_compile(sc) == -1)
		goto nomem;
	sbx_scrub_free(p->secrets.scrub);
	p->secrets.scrub = sc;
	/* In proxy mode the sandbox trusts the CA the proxy signs the
	 * rules' hosts with: the proxy makes it when the session opens
	 * (ca_open, after it), so that OpenSSL stays out of sbx-exec. */
	p->want_ca = sbx_netmode_row(p->network)->relay && p->creds->n > 0;
	return 0;
nomem:
	sbx_scrub_free(sc);
	return sbx_error_sys(e, "nomem", "scrubber");
}

/* The rules for the proxy's session: each with its placeholder and
 * value (a new array; wipe it with cred_session_wipe). */
static json_t *
cred_session(const struct sbx_exec *p)
{
	json_t	*a, *o;
	size_t	 i;

	if (p->creds == NULL)
		return NULL;
	a = json_array();
	for (i = 0; i < p->creds->n; i++) {
		o = sbx_credrule_json(&p->creds->rule[i]);
		json_object_set_new(o, "placeholder", json_string(p->creds_ph +
		    i * (SBX_CRED_PLACEHOLDER_MAX + 1)));
		json_object_set_new(o, "value", json_string(cred_value(p,
		    p->creds->rule[i].secret)));
		json_array_append_new(a, o);
	}
	return a;
}

/* The values in the session's array are wiped, not just freed. */
static void
cred_session_wipe(json_t *a)
{
	json_t	   *o;
	const char *v;
	size_t	    i;

	json_array_foreach (a, i, o)
		if ((v = json_string_value(json_object_get(o, "value"))) !=
		    NULL)
			explicit_bzero((char *)v, strlen(v));
	json_decref(a);
}

/*
 * The agent's secrets (all, or those --secret names), when it has a store:
 * a run without one pays one failed stat.  A store sealed with a
 * passphrase is opened with $SBX_SECRET_PASSPHRASE.
 */
static int
prep_secrets(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_secret_auth	 a;
	const char		*pw = getenv("SBX_SECRET_PASSPHRASE");
	size_t			 i;
	json_t			*w;

	memset(&a, 0, sizeof(a));
	if (pw != NULL && *pw != '\0') {
		a.passphrase = pw;
		a.passphrase_len = strlen(pw);
	}
	if (sbx_secret_load_env(p->root.fd, p->sb.agent, p->req->secrets.v,
	    p->req->secrets.n, &a, &p->secrets, e) == -1) {
		if (e->reason != NULL && (strcmp(e->reason, "wrong_key") == 0 ||
		    strcmp(e->reason, "passphrase_required") == 0 ||
		    strcmp(e->reason, "secret_store_unreadable") == 0) &&
		    e->hint[0] == '\0')
			sbx_error_hint(e, "sbx exec --no-secrets runs without "
			    "them");
		return -1;
	}
	json_array_foreach(p->secrets.warnings, i, w)
		json_array_append(p->warnings, w);
	return 0;
}

static int
etc_fd(const char *name, struct sbx_buf *b)
{
	int	 fd = sbx_fs_memfd_data(name, b->p ? b->p : "", b->len);

	sbx_buf_release(b);
	return fd;
}

/*
 * Host mode: the sandbox's /etc as one cached tree (etccache.c).  When
 * it cannot be had, the single-file binds do the same job, slower; a cache
 * that is not sbx's alone is a sign worth a warning.
 */
static void
prep_etc(struct sbx_exec *p, struct sbx_buf *pw, struct sbx_buf *gr,
    struct sbx_buf *hosts)
{
	struct sbx_error	 e;
	struct sbx_etc_made	 made[3] = {
		{ "passwd", pw->p ? pw->p : "", pw->len },
		{ "group", gr->p ? gr->p : "", gr->len },
		{ "hosts", hosts->p ? hosts->p : "", hosts->len },
	};
	struct sbx_etc_spec	 spec;
	const char		*copy[64], *mounts[8];
	struct stat		 st;
	int			 built;

	memset(&e, 0, sizeof(e));
	/* As root, bwrap runs as the sandbox's uid and resolves the tree's
	 * path: cache/ must let it search (not list) on the way, as the
	 * homes' directories do; everything in the tree is a copy of what
	 * any user may read.  Provision makes it so too; this covers a root
	 * made by runs alone, or by an older sbx. */
	if (p->drop_privs && fstat(p->cache_fd, &st) == 0 &&
	    (st.st_mode & 07777) != sbx_layout_mode(SBX_L_CACHE, 1))
		(void)fchmod(p->cache_fd, sbx_layout_mode(SBX_L_CACHE, 1));
	spec.copy = copy;
	spec.ncopy = sbx_sandbox_etc_copies(&p->sb, copy,
	    sizeof(copy) / sizeof(*copy));
	spec.mounts = mounts;
	spec.nmounts = sbx_sandbox_etc_mounts(mounts,
	    sizeof(mounts) / sizeof(*mounts));
	spec.made = made;
	spec.nmade = 3;
	spec.bound = &p->sb.etc_bound;
	if ((p->etc_fd = sbx_etccache_open(p->cache_fd, &spec, &built,
	    &e)) >= 0)
		p->sb.etc_cached = 1;
	else if (e.reason != NULL && strcmp(e.reason, "cache_untrusted") == 0)
		warn_add(p, e.message);
}

/* Does bwrap know --disable-userns?  A yes is asked once per bwrap
 * binary and remembered under cache/, keyed by its inode and mtime. */
static int
bwrap_has_disable_userns(struct sbx_exec *p)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 name[128], out[16384];
	int			 cfd, fd, pfd[2], status, yes = 0;
	size_t			 len = 0;
	ssize_t			 n;
	pid_t			 pid;

	if (stat(p->bwrap, &st) == -1)
		return 0;
	snprintf(name, sizeof(name), "bwrap-%llu-%lld-%lld.features",
	    (unsigned long long)st.st_ino, (long long)st.st_mtime,
	    (long long)st.st_size);
	cfd = p->cache_fd;
	/*
	 * Only a yes is taken from the cache.  The state root may be within
	 * a sandbox's reach (a --workdir holding it), and a planted no would
	 * drop --disable-userns; a planted yes can only add the option,
	 * which a bwrap without it refuses, so the run fails closed.  A no
	 * is asked again, and never written.  O_NONBLOCK: a FIFO planted at
	 * the name cannot make us wait.
	 */
	if (cfd >= 0 && (fd = openat(cfd, name, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK)) >= 0) {
		n = read(fd, out, sizeof(out) - 1);
		close(fd);
		if (n > 0 && out[0] == '1')
			return 1;
	}
	if (pipe2(pfd, O_CLOEXEC) == -1)
		goto done;
	if ((pid = fork()) == 0) {
		dup2(pfd[1], 1);
		execve(p->bwrap, (char *[]){ p->bwrap, "--help", NULL },
		    (char *[]){ NULL });
		_exit(127);
	}
	close(pfd[1]);
	while (len < sizeof(out) - 1 &&
	    (n = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	yes = strstr(out, "--disable-userns") != NULL;
	if (cfd >= 0 && yes)
		(void)sbx_fs_write_atomic(cfd, name, "1\n", 2, 0600,
		    &e);
done:
	return yes;
}

/* Whole numbers as integers, so that 0 prints as 0, not 0.0. */
static json_t *
number(double d)
{
	if (d == (double)(json_int_t)d)
		return json_integer((json_int_t)d);
	return json_real(d);
}

static const char *
limit_backend_of(unsigned bit, struct sbx_exec *p)
{
	unsigned	 cgbit = bit == SBX_RL_MEMORY ? SBX_LIM_MEMORY :
			    bit == SBX_RL_CPUS ? SBX_LIM_CPUS : SBX_LIM_PIDS;

	if (p->cg.backend != SBX_CG_NONE && (p->cg.enforced & cgbit))
		return sbx_cgroup_backend_name(p->cg.backend);
	return "none";
}

/* Run-engine hooks: join the cgroup in the child, kill it at once. */
static int
cg_enter_hook(void *arg)
{
	struct sbx_exec	*p = arg;
	int		 i, unshared = 0;

	/* The workdir's private copy, while still root (see workdir_copy).
	 * This runs in the child, in sbx's memory (SBX_RUN_SPAWN: it writes
	 * none of it), which exits 125 on failure: its stderr is the only
	 * place left to say why (the one message lib/ writes itself). */
	if (p->workdir_tree >= 0 && sbx_idmount_attach(p->workdir_tree,
	    p->workdir_mnt, p->workdir_mnt_st.st_dev,
	    p->workdir_mnt_st.st_ino, &unshared) == -1) {
		dprintf(2, "sbx: cannot attach the copy of the workdir at "
		    "%s: %s\n", p->workdir_mnt, strerror(errno));
		return -1;
	}
	for (i = 0; i < p->nxwd; i++)
		if (p->xwd[i].tree >= 0 && sbx_idmount_attach(p->xwd[i].tree,
		    p->xwd[i].mnt, p->xwd[i].mnt_st.st_dev,
		    p->xwd[i].mnt_st.st_ino, &unshared) == -1) {
			dprintf(2, "sbx: cannot attach the copy of the "
			    "workdir at %s: %s\n", p->xwd[i].mnt,
			    strerror(errno));
			return -1;
		}
	if (p->cg.backend == SBX_CG_NONE)
		return 0;
	return sbx_cgroup_enter(&p->cg) == -1 ? -1 : 0;
}

static pid_t
cg_fork_hook(void *arg)
{
	struct sbx_exec	*p = arg;

	/* Placed by the clone itself (v2), or by cg_enter_hook: then the
	 * cheap start (lib/sandbox/run.c, spawn()). */
	if (!sbx_cgroup_places(&p->cg))
		return SBX_RUN_SPAWN;
	return sbx_cgroup_fork(&p->cg);
}

static void
cg_kill_hook(void *arg)
{
	struct sbx_exec	*p = arg;

	if (p->cg.backend != SBX_CG_NONE)
		(void)sbx_cgroup_kill(&p->cg);
}

/*
 * The walk of every hierarchy for leftovers costs ~130 system calls, on
 * every run, for what a killed supervisor leaves once in a while: once a
 * minute per state root is enough (cache/cgroup-gc, touched when it runs).
 * A stamp planted in the future counts as absent; one planted by whoever
 * can write the state root can delay a reaping, nothing more.
 */
static int
cgroup_gc_due(struct sbx_exec *p)
{
	char		 rel[SBX_LAYOUT_PATH_MAX];
	const char	*leaf;
	struct stat	 st;
	time_t		 now = time(NULL);
	int		 fd;

	if (p->cache_fd < 0)
		return 1;
	(void)SBX_LPATH(rel, SBX_L_CGROUP_GC, NULL);
	leaf = sbx_layout_leaf(rel);
	if (fstatat(p->cache_fd, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_mtime <= now &&
	    now - st.st_mtime < 60)
		return 0;
	if ((fd = openat(p->cache_fd, leaf, O_WRONLY | O_CREAT | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC,
	    sbx_layout_get(SBX_L_CGROUP_GC)->mode)) >= 0) {
		(void)futimens(fd, NULL);
		close(fd);
	}
	return 1;
}

/* Create this run's cgroup with the memory, cpu and task limits. */
int
sbx_exec_cgroup(struct sbx_exec *p, const char *v2root, struct sbx_error *e)
{
	struct sbx_limits	 l;
	char			 name[SBX_CG_NAME_MAX];

	memset(&l, 0, sizeof(l));
	if (p->lim.memory_mib) {
		l.memory_bytes = p->lim.memory_mib << 20;
		l.wanted |= SBX_LIM_MEMORY;
	}
	if (p->lim.cpus > 0) {
		l.cpus = p->lim.cpus;
		l.wanted |= SBX_LIM_CPUS;
	}
	if (p->lim.pids) {
		l.pids = p->lim.pids;
		l.wanted |= SBX_LIM_PIDS;
	}
	if (l.wanted == 0)
		return 0;
	/* A supervisor killed with -9 leaves its cgroup behind; a later
	 * run reaps such leftovers (`sbx exec gc` at once). */
	if (cgroup_gc_due(p))
		(void)sbx_cgroup_gc(e);
	if (sbx_cgroup_name(name, sizeof(name)) == -1) {
		sbx_error_sys(e, "cgroup_failed", "naming the run's cgroup");
		return -1;
	}
	if (sbx_cgroup_create_at(v2root, NULL, name, &l, &p->cg, e) == -1)
		return -1;
	return 0;
}

/*
 * Limits: defaults (pids, memory), then config/sandbox.json, then the
 * agent's config and the flags, which count as asked for.  What a cgroup
 * cannot hold is refused when it was asked for, unless --soft-limits
 * accepts what rlimits can do; defaults go ahead with a warning.
 */
static int prep_disk(struct sbx_exec *, int, struct sbx_error *);

static int
prep_limits(struct sbx_exec *p, struct sbx_error *e)
{
	json_t			*cfg, *enf, *v;
	size_t			 i;
	unsigned		 unenforced = 0;
	char			*v2root = NULL;
	int			 hard;
	static const struct { unsigned bit; const char *name; } cg[] = {
		{ SBX_RL_MEMORY, "memory" }, { SBX_RL_CPUS, "cpus" },
		{ SBX_RL_PIDS, "pids" },
	};

	sbx_limits_defaults(&p->lim);
	if (sbx_settings_global(p->root.fd, &cfg, e) == -1)
		return -1;
	if (cfg != NULL && sbx_limits_merge_json(&p->lim, json_object_get(cfg,
	    "limits"), 0, "config/sandbox.json", e) == -1)
		return -1;
	v = cfg ? json_object_get(cfg, "cgroup_v2_root") : NULL;
	if (v != NULL && (!json_is_string(v) ||
	    json_string_value(v)[0] != '/')) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "cgroup_v2_root",
		    "config_invalid", "config/sandbox.json: cgroup_v2_root "
		    "must be an absolute path");
		return -1;
	}
	if (v != NULL)
		v2root = strdup(json_string_value(v));
	if (p->req->background && sbx_joblog_cap_config(cfg, &p->log_cap, e) == -1)
		return -1;
	hard = p->req->hard_limits || (cfg != NULL && json_is_true(
	    json_object_get(cfg, "require_hard_limits")));
	json_decref(cfg);
	if (p->agent_cfg != NULL && sbx_limits_merge_json(&p->lim,
	    json_object_get(p->agent_cfg, "limits"), 1, p->agent_rel, e) == -1)
		return -1;
	for (i = 0; i + 1 < p->req->limit_keys.n; i += 2)
		if (sbx_limits_set(&p->lim, p->req->limit_keys.v[i],
		    p->req->limit_keys.v[i + 1], e) == -1)
			return -1;
	p->lim.soft = p->req->soft_limits;
	p->cg_v2root = v2root;
	if (sbx_exec_cgroup(p, v2root, e) == -1)
		return -1;

	enf = json_object();
	for (i = 0; i < sizeof(cg) / sizeof(*cg); i++) {
		int want = (cg[i].bit == SBX_RL_MEMORY && p->lim.memory_mib) ||
		    (cg[i].bit == SBX_RL_CPUS && p->lim.cpus > 0) ||
		    (cg[i].bit == SBX_RL_PIDS && p->lim.pids);
		const char *how = limit_backend_of(cg[i].bit, p);
		if (!want)
			continue;
		if (strcmp(how, "none") == 0)
			unenforced |= cg[i].bit;
		json_object_set_new(enf, cg[i].name, json_string(how));
	}
	if ((unenforced & p->lim.explicit_mask) && !p->lim.soft) {
		json_decref(enf);
		unsigned m = unenforced & p->lim.explicit_mask;
		sbx_error_set(e, SBX_K_REJECTED, "limits",
		    "resource_limits_unsupported", "the limits asked for "
		    "(%s%s%s%s%s) cannot be enforced here: no writable cgroup",
		    (m & SBX_RL_MEMORY) ? "memory" : "",
		    (m & SBX_RL_MEMORY) && (m & (SBX_RL_CPUS | SBX_RL_PIDS)) ?
		    ", " : "", (m & SBX_RL_CPUS) ? "cpus" : "",
		    (m & SBX_RL_CPUS) && (m & SBX_RL_PIDS) ? ", " : "",
		    (m & SBX_RL_PIDS) ? "pids" : "");
		sbx_error_hint(e, "delegate a cgroup v2 subtree (systemd: "
		    "`systemd-run --user -p Delegate=yes --scope sbx exec ...`,"
		    " or name a prepared one as cgroup_v2_root in "
		    "config/sandbox.json), or accept rlimits with --soft-limits");
		return -1;
	}
	/*
	 * Said after every run's output, a note about the defaults would be
	 * noise a plain user can do nothing about: a person hears it only
	 * when a limit was asked for (sbx preflight reports the machine);
	 * the envelope keeps it, with `enforced` saying what holds.
	 */
	if ((unenforced & p->lim.explicit_mask) || (unenforced && p->req->capture))
		warn_add(p, "no writable cgroup: memory, cpu and task limits "
		    "are not enforced by a cgroup (rlimits only)");
	/* rlimits: always available, inherited by bwrap and everything
	 * below it. */
	if (p->lim.nofile) {
		p->sb.rlimit[p->sb.nrlimit].name = "nofile";
		p->sb.rlimit[p->sb.nrlimit++].value = p->lim.nofile;
		json_object_set_new(enf, "nofile", json_string("rlimit"));
	}
	if (p->lim.file_size_mib || p->lim.disk_mib) {
		unsigned long long m = p->lim.file_size_mib;
		if (p->lim.disk_mib && (m == 0 || p->lim.disk_mib < m))
			m = p->lim.disk_mib;
		p->sb.rlimit[p->sb.nrlimit].name = "fsize";
		p->sb.rlimit[p->sb.nrlimit++].value = m << 20;
		json_object_set_new(enf, "file_size", json_string("rlimit"));
	}
	if ((unenforced & SBX_RL_MEMORY) && p->lim.soft &&
	    (p->lim.explicit_mask & SBX_RL_MEMORY)) {
		p->sb.rlimit[p->sb.nrlimit].name = "as";
		p->sb.rlimit[p->sb.nrlimit++].value = p->lim.memory_mib << 20;
		json_object_set_new(enf, "memory", json_string("rlimit"));
	}
	if (p->agent_cfg != NULL && json_is_true(json_object_get(p->agent_cfg,
	    "require_hard_limits")))
		hard = 1;
	if (prep_disk(p, hard, e) == -1) {
		json_decref(enf);
		return -1;
	}
	if (p->disk.mech != NULL && strcmp(p->disk.mech, "soft") != 0)
		json_object_set_new(enf, "disk", json_string(p->disk.mech));
	else if (p->lim.disk_mib) {
		p->sb.tmp_size = p->lim.disk_mib << 20;
		/* /tmp is capped exactly; the home and /output only per
		 * file (RLIMIT_FSIZE): honestly soft. */
		json_object_set_new(enf, "disk", json_string("soft"));
	}
	if (p->lim.wall_timeout > 0)
		json_object_set_new(enf, "wall_timeout",
		    json_string("supervisor"));
	p->limits = json_pack("{s:s,s:I,s:o,s:I,s:I,s:o,s:I,s:I,s:o}",
	    "backend", sbx_cgroup_backend_name(p->cg.backend),
	    "memory_mib", (json_int_t)p->lim.memory_mib,
	    "cpus", number(p->lim.cpus),
	    "pids", (json_int_t)p->lim.pids,
	    "disk_mib", (json_int_t)p->lim.disk_mib,
	    "wall_timeout", number(p->lim.wall_timeout),
	    "nofile", (json_int_t)p->lim.nofile,
	    "file_size_mib", (json_int_t)p->lim.file_size_mib,
	    "enforced", enf);
	if (p->disk.mech != NULL && strcmp(p->disk.mech, "image") == 0)
		json_object_set_new(p->limits, "disk_image_mib",
		    json_integer((json_int_t)p->disk.limit_mib));
	return 0;
}

/*
 * The disk limit (issue 32): the agent's own file system when it has one
 * (mounted and held for the run; the home and output fds opened again,
 * on the image), else soft with a warning, or refused when hard was
 * asked for.
 */
static void close_fd(int *);
static int own_dir(struct sbx_exec *, int, const char *, struct sbx_error *);

/*
 * --disk-tmp: the run's /tmp and /dev/shm are new directories tmp/NAME
 * and shm/NAME of the agent's image (1777, as a tmpfs /tmp is), bound
 * from their descriptors (sandbox.c), and removed after the run (a
 * killed run's by sbx exec gc).
 */
static int
prep_disk_tmp(struct sbx_exec *p, struct sbx_error *e)
{
	static const char *const sub[2] = { "tmp", "shm" };
	char	 rel[SBX_LAYOUT_PATH_MAX], name[80];
	int	 mfd, i;

	SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, p->sb.agent);
	if ((mfd = sbx_fs_open_beneath(p->root.fd, rel, O_RDONLY |
	    O_DIRECTORY, e)) == -1)
		return -1;
	snprintf(p->disk_tmp, sizeof(p->disk_tmp), "run-%d-%lld",
	    (int)getpid(), sbx_now_ms());
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s/%s", sub[i], p->disk_tmp);
		if (mkdirat(mfd, name, 0700) == -1 ||
		    fchmodat(mfd, name, 01777, 0) == -1 ||
		    (p->disk_tmp_fd[i] = openat(mfd, name, O_PATH |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
			sbx_error_sys(e, "disk_tmp_failed", "%s/%s", rel, name);
			close(mfd);
			return -1;
		}
	}
	close(mfd);
	p->sb.disk_tmp = 1;
	return 0;
}

static void
release_disk_tmp(struct sbx_exec *p)
{
	char	 rel[SBX_LAYOUT_PATH_MAX], name[80];
	int	 mfd, i;

	close_fd(&p->disk_tmp_fd[0]);
	close_fd(&p->disk_tmp_fd[1]);
	if (p->disk_tmp[0] == '\0')
		return;
	SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, p->sb.agent);
	if ((mfd = sbx_fs_open_beneath(p->root.fd, rel, O_RDONLY |
	    O_DIRECTORY, NULL)) == -1)
		return;
	for (i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "%s", i ? "shm" : "tmp");
		int sfd = openat(mfd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC);
		if (sfd >= 0) {
			(void)sbx_fs_rm_tree_at(sfd, p->disk_tmp, NULL);
			close(sfd);
		}
	}
	close(mfd);
	p->disk_tmp[0] = '\0';
}

static int
prep_disk(struct sbx_exec *p, int hard, struct sbx_error *e)
{
	char	 rel[SBX_LAYOUT_PATH_MAX];

	if (sbx_disklimit_choose(p->root.fd, p->sb.agent, p->lim.disk_mib,
	    hard, &p->disk, e) == -1)
		return -1;
	if (p->disk.warning[0] != '\0' && p->lim.disk_mib &&
	    (p->lim.explicit_mask & SBX_RL_DISK))
		warn_add(p, p->disk.warning);
	if (p->req->disk_tmp && (p->disk.mech == NULL ||
	    strcmp(p->disk.mech, "image") != 0)) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "disk-tmp",
		    "disk_limit_unavailable", "--disk-tmp counts /tmp in the "
		    "agent's disk image, and agent %s has none", p->sb.agent);
		sbx_error_hint(e, "as root: sbx provision --agent %s "
		    "--disk-image SIZE", p->sb.agent);
		return -1;
	}
	if (p->disk.mech == NULL || strcmp(p->disk.mech, "image") != 0)
		return 0;
	/* The descriptors taken before the image was held may name the
	 * directories under its mount: take them again. */
	close_fd(&p->home_fd);
	close_fd(&p->output_fd);
	SBX_LPATH(rel, SBX_L_AGENT_HOME, p->sb.agent);
	if ((p->home_fd = sbx_fs_mkdirs_at(p->root.fd, rel, 0700, e)) == -1 ||
	    own_dir(p, p->home_fd, rel, e) == -1)
		return -1;
	if (p->req->disk_tmp && prep_disk_tmp(p, e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_OUTPUT, p->sb.agent);
	if ((p->output_fd = sbx_fs_mkdirs_at(p->root.fd, rel, 0700, e)) == -1 ||
	    own_dir(p, p->output_fd, rel, e) == -1)
		return -1;
	return 0;
}

/*
 * Who runs the sandbox.  A normal user: that user.  Root: never root (see
 * run.c), but the uid/gid named by `run_as` in config/sandbox.json, or
 * the `sbx` system user when there is one, or nobody (65534).
 */
static int prep_shared(struct sbx_exec *, struct sbx_error *);

static int
prep_identity(struct sbx_exec *p, struct sbx_error *e)
{

	struct sbx_idcfg idc;

	/* Per-agent uids: the agent's own ids (a new agent's allocated
	 * now), or today's shared identity (sbx_identity_get) when they
	 * are off; a half-migrated agent is refused with the command that
	 * finishes it. */
	if (sbx_idalloc_config(p->root.fd, &idc, e) == -1 ||
	    sbx_idalloc_provisioned(p->root.fd, p->root.path, p->sb.agent,
	    NULL, sbx_agentns_enter_range, &idc, e) == -1)
		return -1;
	/* Asked for, not possible (a plain user without a subordinate
	 * range): the shared identity, said in the envelope. */
	if (idc.why_shared[0] != '\0') {
		char msg[400];

		snprintf(msg, sizeof(msg), "identity.per_agent is on, but the "
		    "sandbox runs as the shared uid: %s", idc.why_shared);
		warn_add(p, msg);
	}
	if (sbx_idalloc_agent(p->root.fd, p->sb.agent, &p->run_uid,
	    &p->run_gid, &p->per_agent, &p->agentid, e) == -1)
		return -1;
	if (p->per_agent && p->agentid.subordinate) {
		/* A plain user: bwrap starts as the agent's id of the
		 * range, in a namespace mapping it alone; the sandbox sees
		 * (and /etc/passwd names) the inside id. */
		p->run_uid = (uid_t)p->agentid.uid;
		p->run_gid = (gid_t)p->agentid.gid;
		if ((p->agent_ns_fd = sbx_agentns_run(&p->agentid, e)) == -1)
			return -1;
		/* bwrap, as that id, resolves its sources' paths: the root,
		 * workspace/, output/ and cache/ searchable (0711, as for
		 * root's sandbox uid), never listable. */
		if (sbx_workdir_reachable_root(p, e) == -1)
			return -1;
		(void)sbx_fs_chmod_dir_pinned(p->root.fd, "cache", 0711);
		return 0;
	}
	if (geteuid() != 0)
		return 0;
	p->drop_privs = 1;
	if (p->per_agent && prep_shared(p, e) == -1)
		return -1;
	/* Bind sbx-init by path when the sandbox uid can reach it (an
	 * installed sbx); copy it in otherwise (a checkout under /root). */
	p->sb.init_by_copy = !sbx_workdir_others_can_reach(p->init);
	return sbx_workdir_reachable_root(p, e);
}

/*
 * workspace/shared for an agent that opted in (workspace_shared in its
 * settings), per-agent uids as root: a directory of root's, 02770, whose
 * group only the agents that opted in carry (run.c's one supplementary
 * group).  What an agent makes there gets the group (setgid); what it
 * keeps 0600 no other agent reads.
 */
static int
prep_shared(struct sbx_exec *p, struct sbx_error *e)
{
	struct stat	 st;
	json_t		*doc = NULL;
	char		*path;
	int		 fd, on;

	if (sbx_settings_agent(p->root.fd, p->sb.agent, &doc, e) == -1)
		return -1;
	on = doc != NULL && json_is_true(json_object_get(doc,
	    "workspace_shared"));
	json_decref(doc);
	if (!on)
		return 0;
	if ((fd = sbx_layout_mkdirs(p->root.fd, SBX_L_WS_SHARED, NULL, e)) ==
	    -1)
		return -1;
	if (fstat(fd, &st) == -1 || ((st.st_gid != p->agentid.shared_gid ||
	    (st.st_mode & 07777) != 02770) && (fchown(fd, (uid_t)-1,
	    (gid_t)p->agentid.shared_gid) == -1 || fchmod(fd, 02770) == -1))) {
		close(fd);
		return sbx_error_sys(e, "chown_failed", "cannot hand "
		    "workspace/shared to the shared group %lu",
		    p->agentid.shared_gid);
	}
	close(fd);
	if (asprintf(&path, "%s/workspace/shared", p->root.path) == -1)
		return sbx_error_sys(e, "nomem", "path");
	free((char *)p->sb.shared_dir);
	p->sb.shared_dir = path;
	p->run_group = (gid_t)p->agentid.shared_gid;
	return 0;
}

/* A plain user's per-agent uid: the home and output belong to the agent's
 * id of the range, 0700; they are opened in its namespace (agentns.c). */
static int
prep_agent_dirs(struct sbx_exec *p, struct sbx_error *e)
{
	char		 h[SBX_LAYOUT_PATH_MAX], o[SBX_LAYOUT_PATH_MAX];
	const char	*rels[2] = { h, o };
	int		 fds[2];

	SBX_LPATH(h, SBX_L_AGENT_HOME, p->sb.agent);
	SBX_LPATH(o, SBX_L_AGENT_OUTPUT, p->sb.agent);
	if (sbx_agentns_open(p->agent_ns_fd, p->root.fd, rels, 2,
	    p->agentid.uid, p->agentid.gid, fds, e) == -1)
		return -1;
	p->home_fd = fds[0];
	p->output_fd = fds[1];
	return 0;
}

/*
 * sbx-init executed from its descriptor, nothing mounted for it (see
 * sandbox.c), when any uid may execute it: the sandbox's uid is the
 * caller's, nobody, or uid 0 of a namespace where host root is unmapped.
 * Not when the command is sbx-init itself by its path inside (sbx
 * preflight's probe): then it is bound there as before.
 */
static int
init_exec_fd(const struct sbx_exec *p)
{
	struct stat	 st;

	if (p->sb.shell == NULL && p->sb.argv != NULL &&
	    p->sb.argv[0] != NULL && strcmp(p->sb.argv[0], SBX_IN_INIT) == 0)
		return 0;
	return fstat(p->init_fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 0111) == 0111;
}

/* The sandbox's writable directories belong to the uid that runs it. */
static int
own_dir(struct sbx_exec *p, int fd, const char *rel, struct sbx_error *e)
{
	struct stat		 st;

	if (!p->drop_privs || fstat(fd, &st) == -1)
		return 0;
	if (st.st_uid == p->run_uid && st.st_gid == p->run_gid)
		return 0;
	if (fchown(fd, p->run_uid, p->run_gid) == -1) {
		sbx_error_sys(e, "chown_failed", "cannot hand %s to uid %u",
		    rel, (unsigned)p->run_uid);
		return -1;
	}
	return 0;
}

/*
 * Image mode, when the agent is bound to one (its record
 * agents/A/image.json, or an old config's `image`): its template must be there and complete (a cheap check, no
 * walk); a missing or damaged one refuses the run, never falls back to
 * the host's system directories.
 */
static int prep_image(struct sbx_exec *, struct sbx_error *);

/*
 * A subordinate range over the agent's own rootfs copy: a user namespace
 * made here (bwrap cannot map a range) and entered by bwrap with
 * --userns.  It is owned by the uid bwrap runs as, so bwrap has every
 * capability in it for the set-up, and no user namespace can be made
 * inside it (bwrap's --disable-userns needs --unshare-user).
 *
 * sbx install (rootfs_rw): uid 0 inside is the sandbox uid, as bwrap's
 * own --uid 0 would make it, and ids 1..N are the range; dpkg, as uid 0,
 * keeps CHOWN, DAC_OVERRIDE, FOWNER, SETUID and SETGID (sandbox.c):
 * capabilities of this namespace, over what it maps, which is nothing on
 * the host but the copy and the range's ids.
 *
 * An ordinary run over a copy that such an install wrote (its stamp
 * names the range): the agent stays the sandbox uid S, mapped to itself
 * as bwrap's --unshare-user does, and the range is mapped around it, so
 * the packages' files show their owners (man, _apt) instead of the
 * overflow id, which is also the uid of a sandbox run as nobody.  No
 * capability: the mapping changes what ls shows, not what the agent may
 * do.
 */
static int
subids_map(struct sbx_userns_map *m, unsigned long self, unsigned long base,
    unsigned long count, int zero)
{
	m->n = 0;
	if (zero) {
		m->line[m->n].in = 0;
		m->line[m->n].out = self;
		m->line[m->n++].count = 1;
		m->line[m->n].in = 1;
		m->line[m->n].out = base;
		m->line[m->n++].count = count;
		return 0;
	}
	/* Inside N (1..count) is base + N - 1; the agent's own id keeps
	 * its place and the range's id there is left out. */
	m->line[m->n].in = self;
	m->line[m->n].out = self;
	m->line[m->n++].count = 1;
	if (self >= 1 && self <= count) {
		if (self > 1) {
			m->line[m->n].in = 1;
			m->line[m->n].out = base;
			m->line[m->n++].count = self - 1;
		}
		if (self < count) {
			m->line[m->n].in = self + 1;
			m->line[m->n].out = base + self;
			m->line[m->n++].count = count - self;
		}
	} else {
		m->line[m->n].in = 1;
		m->line[m->n].out = base;
		m->line[m->n++].count = count;
	}
	return 0;
}

static int
prep_subids(struct sbx_exec *p, unsigned long su, unsigned long sg,
    unsigned long count, struct sbx_error *e)
{
	struct sbx_userns_map um, gm;
	uid_t		      u = p->drop_privs ? p->run_uid : getuid();
	gid_t		      g = p->drop_privs ? p->run_gid : getgid();

	if (count == 0)
		return 0;
	subids_map(&um, u, su, count, p->sb.rootfs_rw);
	subids_map(&gm, g, sg, count, p->sb.rootfs_rw);
	if ((p->userns_fd = sbx_userns_make(u, g, &um, &gm, 1, e)) == -1) {
		sbx_error_hint(e,
		    "the subordinate range %lu-%lu (uids) and "
		    "%lu-%lu (gids) must be free and, for a user other than "
		    "root, in /etc/subuid and /etc/subgid",
		    su, su + count - 1, sg, sg + count - 1);
		return -1;
	}
	p->sb.userns_slot = SBX_FD_USERNS;
	return 0;
}

/* An ordinary run over the agent's own copy: the range its last install
 * mapped, if any (the copy's stamp, lib/exec/install.c). */
static int
prep_view_subids(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_subids sub;
	char		  want[PATH_MAX];

	snprintf(want, sizeof(want), "%s/envs/%s/rootfs", p->root.path,
	    p->sb.agent);
	if (p->sb.rootfs_rw || p->sb.image_root == NULL ||
	    strcmp(p->sb.image_root, want) != 0 ||
	    sbx_imageref_rootfs_subids(p->root.fd, p->sb.agent, p->run_uid,
		p->run_gid, &sub) != 1)
		return 0;
	return prep_subids(p, sub.uid, sub.gid, sub.count, e);
}

/*
 * sbx install --manager apt: only the agent's own copy, never a template
 * (shared by every agent of the image), and nothing else writable.
 */
static int
prep_rootfs_rw(struct sbx_exec *p, struct sbx_error *e)
{
	static const char *const mnt[] = { "proc", "dev", "tmp", "run" };
	struct stat		 st;
	char			 want[PATH_MAX];
	size_t			 i;

	snprintf(want, sizeof(want), "%s/envs/%s/rootfs", p->root.path,
	    p->sb.agent);
	/* prep_image falls back to the template when the copy is gone. */
	if (p->sb.image_root == NULL || strcmp(p->sb.image_root, want) != 0) {
		sbx_error_set(e, SBX_K_REJECTED, "manager",
		    "no_writable_rootfs",
		    "agent %s has no root file system "
		    "copy of its own to write",
		    p->sb.agent);
		sbx_error_hint(e,
		    "sbx provision --agent %s --image IMAGE "
		    "--env",
		    p->sb.agent);
		return -1;
	}
	if (p->req->workdir != NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "workdir",
		    "conflicting_options",
		    "a read-write root file system "
		    "takes no workdir");
		return -1;
	}
	/*
	 * What bwrap mounts over inside the copy must not be a symlink: the
	 * copy is the agent's to change (a postinst runs as its uid 0), and
	 * bwrap resolves a mount point before pivot_root, where an absolute
	 * link would name a host path.  A missing one bwrap creates.
	 */
	for (i = 0; i < sizeof(mnt) / sizeof(*mnt); i++)
		if (fstatat(p->sb.image_fd, mnt[i], &st,
			AT_SYMLINK_NOFOLLOW) == 0 &&
		    !S_ISDIR(st.st_mode)) {
			sbx_error_set(e, SBX_K_REJECTED, "rootfs",
			    "rootfs_unsafe",
			    "/%s in the root file system copy of %s is not a "
			    "directory (a symlink?)",
			    mnt[i], p->sb.agent);
			sbx_error_hint(e, "make a new copy: sbx provision "
			    "--agent %s --no-env, then --env", p->sb.agent);
			return -1;
		}
	p->sb.rootfs_rw = 1;
	return prep_subids(p, p->req->subid_uid, p->req->subid_gid,
	    p->req->subid_count, e);
}

static int
prep_image(struct sbx_exec *p, struct sbx_error *e)
{
	struct stat		 st;
	char			 digest[SBX_DIGEST_HEX + 1], msg[1600], *root;
	char			 reach[2][64];
	int			 r, fd, env, nreach, i;

	if ((r = sbx_imageref_of(p->root.fd, p->agent_cfg, p->agent_rel,
	    p->sb.agent, digest, &env, e)) == -1)
		return -1;
	if (r == 0)
		return 0;
	/*
	 * The agent's own environment when it has one (`env`; mounted
	 * read-only all the same, as a template is).  One that is gone
	 * (evicted, reset) or was made from another image means the
	 * template, and a warning; one that is unsafe (a symlink planted on
	 * the way, damaged) refuses the run.  Opening it share-locks it
	 * for as long as this process lives: eviction passes it by.
	 */
	p->sb.image_fd = -1;
	if (env && (p->sb.image_fd = sbx_imageref_env_open(p->root.fd,
	    p->sb.agent, digest, e)) == -1) {
		if (e->kind == NULL || strcmp(e->kind, SBX_K_NOT_FOUND) != 0)
			return -1;
		snprintf(msg, sizeof(msg), "%s; running on the image template "
		    "(%s)", e->message, e->hint);
		warn_add(p, msg);
	}
	if (p->sb.image_fd != -1) {
		r = asprintf(&root, "%s/envs/%s/rootfs", p->root.path,
		    p->sb.agent);
		snprintf(reach[0], sizeof(reach[0]), "envs");
		SBX_LPATH(reach[1], SBX_L_ENV, p->sb.agent);
		nreach = 2;
	} else {
		if ((p->sb.image_fd = sbx_imageref_open(p->root.fd, digest,
		    e)) == -1)
			return -1;
		r = asprintf(&root, "%s/images/%s/rootfs", p->root.path,
		    digest);
		snprintf(reach[0], sizeof(reach[0]), "images");
		nreach = 1;
	}
	if (r == -1) {
		sbx_error_sys(e, "nomem", "image path");
		return -1;
	}
	p->sb.image_root = root;
	/* bwrap resolves bind sources by path, as the sandbox's uid: as
	 * root, that uid must be able to search images/ (or envs/ and
	 * envs/<agent>), not list them; the trees beneath are
	 * world-readable. */
	for (i = 0; p->drop_privs && i < nreach; i++)
		if ((fd = sbx_fs_open_beneath(p->root.fd, reach[i], O_RDONLY |
		    O_DIRECTORY, e)) >= 0) {
			if (fstat(fd, &st) == 0 && !(st.st_mode & S_IXOTH))
				(void)fchmod(fd, (st.st_mode & 0700) | 0011);
			close(fd);
		}
	return 0;
}

/* The request's network mode (none when it names none): 0, or -1 and e
 * when it names no mode. */
static int
network_of(const struct sbx_exec_req *q, enum sbx_netmode *m,
    struct sbx_error *e)
{
	char	 l[SBX_NETMODE_LIST_MAX];

	*m = SBX_NETMODE_NONE;
	if (q->network == NULL || sbx_netmode_parse(q->network, m) == 0)
		return 0;
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "network", "invalid_mode",
	    "argument `network` must be %s", sbx_netmode_list(l, sizeof(l)));
}

/*
 * The network mode: the flag, else the agent's `network` setting, else
 * none.  --allow-domain only means something in proxy mode: elsewhere it
 * is refused rather than silently ignored.
 */
static int
prep_network(struct sbx_exec *p, struct sbx_error *e)
{
	const char		*v;
	char			 l[SBX_NETMODE_LIST_MAX];
	int			 r;

	/* The agent's settings, read once for the whole run. */
	SBX_LPATH(p->agent_rel, SBX_L_AGENT_CONFIG, p->sb.agent);
	if (sbx_settings_agent(p->root.fd, p->sb.agent, &p->agent_cfg,
	    e) == -1)
		return -1;
	/* The bridge: the agent's bridge.enabled, else the global one. */
	{
		json_t *g = NULL;

		if (sbx_settings_global(p->root.fd, &g, e) == -1)
			return -1;
		p->bridge = sbx_bridge_enabled(g, p->agent_cfg);
		json_decref(g);
	}
	/* An unprovisioned agent stays revoked for every run, not only for
	 * the proxy runs that would mint it a new token, until `sbx
	 * provision` restores it. */
	if ((r = sbx_provision_revoked(p->root.fd, p->sb.agent, e)) == 1)
		sbx_provision_revoked_error(p->sb.agent, e);
	if (r != 0)
		return -1;
	/* --fail-on-violation, else the agent's fail_on_violation (for the
	 * runs whose caller lets the setting decide: not sbx install's). */
	if (json_object_get(p->agent_cfg, "fail_on_violation") != NULL &&
	    !json_is_boolean(json_object_get(p->agent_cfg,
	    "fail_on_violation"))) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "%s: `fail_on_violation` must be true or "
		    "false", p->agent_rel);
		return -1;
	}
	p->fail_on_violation = p->req->fail_on_violation > 0 ||
	    (p->req->fail_on_violation == 0 && !p->req->background &&
	    json_is_true(json_object_get(p->agent_cfg, "fail_on_violation")));
	if (p->req->network == NULL) {
		v = json_string_value(json_object_get(p->agent_cfg,
		    "network"));
		if (v != NULL && sbx_netmode_parse(v, &p->network) == -1) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "%s: `network` must be %s",
			    p->agent_rel, sbx_netmode_list(l, sizeof(l)));
			return -1;
		}
	}
	/* --allow-domain adds to what the proxy lets through: only a mode
	 * with the relay to the proxy has one. */
	if (p->req->allow.n > 0 && !sbx_netmode_row(p->network)->relay) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "allow_domain",
		    "requires_proxy", "--allow-domain needs --network proxy "
		    "(the network is %s)", sbx_netmode_name(p->network));
		return -1;
	}
	return prep_creds_rules(p, e);
}

/*
 * Proxy mode: check the agent's policy (a broken allowlist fails here,
 * before anything runs), make sure it has a token, and open a session
 * with the proxy of this root (starting it when none runs).  The channel
 * goes to sbx-init; the control connection stays here for the run.
 */
static int  agent_token(struct sbx_exec *, struct sbx_error *);
static int  proxy_open(struct sbx_exec *, struct sbx_error *);
static int  relay_open(struct sbx_exec_relay *, struct sbx_error *);
static int  bridge_open(struct sbx_exec *, struct sbx_error *);
static char *helper_path(struct sbx_exec *, const char *);
static void close_fd(int *);

/*
 * sbx-host, next to sbx-init, bound at /run/sbx/bin/sbx-host when it is
 * there and bubblewrap can reach it: the bridge's client, and in proxy
 * mode the ProxyCommand of git over SSH (`sbx-host connect %h %p`).
 * 0 (p->sb.host_cli set or not), -1 out of memory.
 */
static int
host_cli_find(struct sbx_exec *p)
{
	char	*slash;

	if (p->host_cli != NULL)
		return 0;
	if ((p->host_cli = malloc(strlen(p->init) + 16)) == NULL)
		return -1;
	strcpy(p->host_cli, p->init);
	slash = strrchr(p->host_cli, '/');
	strcpy(slash + 1, "sbx-host");
	if (access(p->host_cli, X_OK) == 0 && !p->sb.init_by_copy)
		p->sb.host_cli = p->host_cli;
	return 0;
}

/*
 * The state root's CA bundle (tlsca.h) for a run with credential rules,
 * opened once the proxy's session is open: the proxy made the CA (or
 * refreshed the bundle) when it took the session's rules.  Bound
 * read-only; its key stays in config/ca, which no sandbox binds.
 */
static int
ca_open(struct sbx_exec *p, struct sbx_error *e)
{
	struct stat	 st;

	if (!p->want_ca || p->ca_fd != -1)
		return 0;
	if ((p->ca_fd = openat(p->root.fd, SBX_TLSCA_BUNDLE,
	    O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return sbx_error_sys(e, "ca_bundle", "cannot open %s",
		    SBX_TLSCA_BUNDLE);
	if (fstat(p->ca_fd, &st) == -1 || !S_ISREG(st.st_mode))
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "ca_bundle",
		    "%s is not a regular file", SBX_TLSCA_BUNDLE);
	p->sb.ca_bundle = 1;
	return 0;
}

static int
prep_proxy(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_netpolicy	 pol;
	json_t			*allow;
	char			 run[64];
	size_t			 i;

	sbx_np_init(&pol);
	if (sbx_np_load(&pol, p->agent_cfg, p->agent_rel, e) == -1)
		return -1;
	allow = json_array();
	for (i = 0; i < p->req->allow.n; i++) {
		if (sbx_np_allow(&pol, p->req->allow.v[i], e) == -1)
			return -1;
		json_array_append_new(allow, json_string(p->req->allow.v[i]));
	}
	if (pol.nallowed == 0)
		warn_add(p, "network proxy: the agent's allowlist is empty, "
		    "so every destination is refused (set allowed_domains "
		    "or use --allow-domain)");
	sbx_np_free(&pol);

	if (agent_token(p, e) == -1)
		return -1;

	snprintf(run, sizeof(run), "%d-%lld", (int)getpid(), sbx_now_ms());
	snprintf(p->proxy_run, sizeof(p->proxy_run), "%s", run);
	/* Kept for the run: a restarted proxy gets the same session. */
	p->proxy_allow = allow;
	if (proxy_open(p, e) == -1 || ca_open(p, e) == -1)
		return -1;
	return relay_open(&p->relay[0], e);
}

/* The program name next to sbx-init (sbx-proxy, sbx-bridge, ...). */
static char *
helper_path(struct sbx_exec *p, const char *name)
{
	char	*prog, *slash;

	if ((prog = malloc(strlen(p->init) + strlen(name) + 2)) == NULL)
		return NULL;
	strcpy(prog, p->init);
	slash = strrchr(prog, '/');
	strcpy(slash + 1, name);
	return prog;
}

/* A session with the proxy of this root, starting it when none runs:
 * p->proxy_ctl and p->proxy_chan, for the agent, p->proxy_allow and
 * p->proxy_run (at the start of the run, and again when it died). */
static int
proxy_open(struct sbx_exec *p, struct sbx_error *e)
{
	char	*prog;
	json_t	*creds;
	int	 i;

	if ((prog = helper_path(p, "sbx-proxy")) == NULL)
		return sbx_error_sys(e, "nomem", "proxy path");
	creds = cred_session(p);
	/* A proxy that is exiting because it was idle may still accept
	 * and then close: try again (it, or its successor, answers). */
	for (i = 0;; i++) {
		if ((p->proxy_ctl = sbx_proxyclient_ensure(p->root.fd, prog,
			 p->root.path, e)) != -1 &&
		    sbx_proxyclient_session(p->proxy_ctl, p->sb.agent,
			p->proxy_allow, creds,
			(p->req->ask ? SBX_PROXYCLIENT_ASK : 0) |
			(p->req->allow_only ? SBX_PROXYCLIENT_ALLOW_ONLY : 0),
			p->proxy_run, &p->proxy_chan, e) == 0)
			break;
		close_fd(&p->proxy_ctl);
		if (i == 3 || e->reason == NULL ||
		    (strcmp(e->reason, "proxy_unreachable") != 0 &&
			strcmp(e->reason, "not_running") != 0)) {
			sbx_error_hint(e,
			    "run `sbx proxy serve --foreground` "
			    "to see why the proxy does not answer");
			free(prog);
			cred_session_wipe(creds);
			return -1;
		}
		usleep(50000);
	}
	free(prog);
	cred_session_wipe(creds);
	return 0;
}

/*
 * The agent's token (run/tokens/A), for the proxy's credentials and the
 * bridge's bearer: read once a run into p->proxy_token; an agent without
 * one is provisioned (idempotent), which makes it.
 */
static int
agent_token(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_buf tok = SBX_BUF_INIT;
	char	       rel[128];

	if (p->proxy_token[0] != '\0')
		return 0;
	SBX_LPATH(rel, SBX_L_AGENT_TOKEN, p->sb.agent);
	if (sbx_fs_read_file_at(p->root.fd, rel, 256, &tok, e) == -1) {
		/* No token yet: provision the agent (idempotent), which
		 * creates one. */
		struct sbx_provision	 pv;

		struct sbx_idcfg	 idc;

		sbx_provision_init(&pv, p->root.fd, p->sb.agent);
		if (sbx_provision_agent(&pv, e) == -1)
			return -1;
		/* Per-agent uids: a new agent's own ids. */
		if (sbx_idalloc_config(p->root.fd, &idc, e) == -1 ||
		    sbx_idalloc_provisioned(p->root.fd, p->root.path,
		    p->sb.agent, pv.created, sbx_agentns_enter_range, &idc,
		    e) == -1) {
			sbx_provision_release(&pv);
			return -1;
		}
		sbx_provision_release(&pv);
		if (sbx_fs_read_file_at(p->root.fd, rel, 256, &tok, e) == -1)
			return -1;
	}
	while (tok.len > 0 && tok.p[tok.len - 1] == '\n')
		tok.p[--tok.len] = '\0';
	if (!sbx_token_valid(tok.p, tok.len)) {
		sbx_error_set(e, SBX_K_REJECTED, "token", "bad_token",
		    "%s is not a valid token", rel);
		sbx_error_hint(e, "run `sbx provision unprovision --agent %s` "
		    "and `sbx provision --agent %s`", p->sb.agent, p->sb.agent);
		return -1;
	}
	memcpy(p->proxy_token, tok.p, SBX_TOKEN_LEN + 1);
	explicit_bzero(tok.p, tok.len);
	sbx_buf_release(&tok);

	return 0;
}

/*
 * The run's secret values, for the bridge to scrub the records this run
 * sends (lib/state/bridgestore.c) even when it cannot open the agent's
 * store itself (sealed with a passphrase, or a key file named in our
 * environment, neither of which the bridge has): a memfd of the
 * "NAME=VALUE" strings, each NUL-terminated, over the 0600 control
 * socket, read once by the bridge.  A run without secrets sends none.
 */
static int
bridge_scrub(struct sbx_exec *p, struct sbx_error *e)
{
	json_t		*ans;
	char		*b;
	size_t		 i, n = 0, k;
	int		 fd;

	if (p->secrets.n == 0)
		return 0;
	/* One allocation, wiped: no copy left behind by a realloc. */
	for (i = 0; i < p->secrets.n; i++)
		n += strlen(p->secrets.assign[i]) + 1;
	if ((b = malloc(n)) == NULL)
		return sbx_error_sys(e, "nomem", "bridge scrub");
	for (i = n = 0; i < p->secrets.n; i++) {
		k = strlen(p->secrets.assign[i]) + 1;
		memcpy(b + n, p->secrets.assign[i], k);
		n += k;
	}
	fd = sbx_fs_memfd_data("sbx-bridge-scrub", b, n);
	explicit_bzero(b, n);
	free(b);
	if (fd == -1)
		return sbx_error_sys(e, "memfd_failed", "bridge scrub");
	ans = sbx_proxyclient_call(p->bridge_ctl, json_pack("{s:s}", "op",
	    "scrub"), fd, 10000, e);
	close(fd);
	if (ans == NULL)
		return -1;
	json_decref(ans);
	return 0;
}

/*
 * The session's request.  Identity is the session, never a header the
 * sandbox writes (DESIGN.md §2): the agent, and for `sbx plugin run` the
 * plugin, which the bridge needs to give a plugin its declared secrets.
 * With the plugin go digests of the secret values this run loaded (its
 * environment and its scrubber hold exactly these): the bridge serves a
 * secret only when the store still holds that value, so every value the
 * sandbox is given over the bridge is one this run's output scrubber
 * redacts.  A value set since the run started is refused, not served
 * unscrubbed.  Digests, not values: the bridge needs no copy of them.
 */
static int
bridge_session(struct sbx_exec *p, const char *run, struct sbx_error *e)
{
	char		 hex[SBX_SECRET_DIGEST_HEX + 1];
	char		 name[SBX_SECRET_NAME_MAX + 1];
	const char	*eq, *ph;
	json_t		*req, *dig, *ans;
	size_t		 i, nl;
	int		 sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return sbx_error_sys(e, "socketpair", "cannot create the "
		    "bridge channel");
	req = json_pack("{s:s,s:s,s:s}", "op", "session", "agent", p->sb.agent,
	    "run", run);
	if (p->req->plugin != NULL) {
		dig = json_object();
		for (i = 0; i < p->secrets.n; i++) {
			if ((eq = strchr(p->secrets.assign[i], '=')) == NULL ||
			    (nl = (size_t)(eq - p->secrets.assign[i])) >=
			    sizeof(name))
				continue;
			memcpy(name, p->secrets.assign[i], nl);
			name[nl] = '\0';
			/* A bound secret: the run holds its placeholder, and
			 * the bridge gives the plugin that, never the value
			 * (the proxy puts it in requests to the rule's
			 * hosts). */
			if ((ph = cred_placeholder(p,
			    p->secrets.assign[i])) != NULL) {
				json_object_set_new(dig, name,
				    json_string(ph));
				continue;
			}
			sbx_secret_digest(eq + 1, strlen(eq + 1), hex);
			json_object_set_new(dig, name, json_string(hex));
		}
		json_object_set_new(req, "plugin", json_string(p->req->plugin));
		json_object_set_new(req, "secrets", dig);
	}
	ans = sbx_proxyclient_call(p->bridge_ctl, req, sp[0], 10000, e);
	close(sp[0]);
	if (ans == NULL) {
		close(sp[1]);
		return -1;
	}
	json_decref(ans);
	if (bridge_scrub(p, e) == -1) {
		close(sp[1]);
		return -1;
	}
	p->bridge_chan = sp[1];
	return 0;
}

/* A session with the bridge of this root (starting it when none runs);
 * the channel goes to sbx-init, the control connection stays here for
 * the run. */
static int
prep_bridge(struct sbx_exec *p, struct sbx_error *e)
{
	if (agent_token(p, e) == -1)
		return -1;
	/* sbx-bridge and sbx-host live next to sbx-init. */
	if (host_cli_find(p) == -1)
		return sbx_error_sys(e, "nomem", "bridge path");
	if (p->sb.host_cli == NULL)
		warn_add(p, "bridge: sbx-host is not bound into this sandbox "
		    "(not found next to sbx-init, or not reachable by "
		    "bubblewrap); /run/sbx/bridge.sock still answers");
	snprintf(p->bridge_run, sizeof(p->bridge_run), "%d-%lld",
	    (int)getpid(), sbx_now_ms());
	if (bridge_open(p, e) == -1 || relay_open(&p->relay[1], e) == -1)
		return -1;
	p->sb.bridge = 1;
	return 0;
}

/* A session with the bridge of this root, starting it when none runs:
 * p->bridge_ctl and p->bridge_chan (at the start of the run, and again
 * when it died: the same agent, plugin, secret digests and scrub). */
static int
bridge_open(struct sbx_exec *p, struct sbx_error *e)
{
	char	*prog;
	int	 i;

	if ((prog = helper_path(p, "sbx-bridge")) == NULL)
		return sbx_error_sys(e, "nomem", "bridge path");
	/* A bridge exiting because it was idle may still accept and then
	 * close: try again (it, or its successor, answers). */
	for (i = 0;; i++) {
		if ((p->bridge_ctl = sbx_daemon_ensure(p->root.fd,
		    SBX_BRIDGE_SOCK, SBX_BRIDGE_LOCK, "bridge", prog,
		    p->root.path, e)) != -1 &&
		    bridge_session(p, p->bridge_run, e) == 0)
			break;
		close_fd(&p->bridge_ctl);
		if (i == 3 || e->reason == NULL ||
		    (strcmp(e->reason, "proxy_unreachable") != 0 &&
		    strcmp(e->reason, "not_running") != 0)) {
			sbx_error_hint(e,
			    "run `sbx bridge serve --foreground` "
			    "to see why the bridge does not answer");
			free(prog);
			return -1;
		}
		usleep(50000);
	}
	free(prog);
	return 0;
}

/*
 * The relays.  sbx-init hands every connection of the sandbox (the proxy's
 * listeners, the bridge's socket) with a one-byte tag over the channel it
 * has as fd 14 or 23.  That channel ends here, in sbx, which passes each
 * descriptor on, with its tag, to the daemon's session channel: only the
 * descriptor goes through sbx, the connection's data flows between the
 * sandbox and the daemon directly.  sbx holds the session (its control
 * connection) for the whole run and the daemon writes nothing on it
 * mid-run, so end of file there, or EPIPE on the session channel, means
 * the daemon died.  Then sbx starts it again and opens the same session
 * (agent, allowlist, run id, plugin, secret digests, scrub values), with
 * a warning in the envelope, and the sandbox's next connection works.
 * Lost: the connections in flight, the dead proxy's record of the run's
 * denials, the bridge's in-memory rate windows.  A restart that fails
 * leaves no channel: connections are closed as they arrive, as when no
 * daemon answered, never sent anywhere unfiltered.  RELAY_RESTARTS bounds
 * the restarts of a run, so a daemon that dies on every connection the
 * sandbox makes cannot keep sbx busy starting it.
 */
#define RELAY_RESTARTS	8

static int
relay_open(struct sbx_exec_relay *rl, struct sbx_error *e)
{
	int	 sp[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return sbx_error_sys(e, "socketpair", "cannot create the "
		    "relay channel");
	rl->init_end = sp[0];
	rl->mine = sp[1];
	rl->held = -1;
	rl->ctl_watch = 1;
	return 0;
}

static int *
relay_ctl(struct sbx_exec *p, int k)
{
	return k == 0 ? &p->proxy_ctl : &p->bridge_ctl;
}

static int *
relay_chan(struct sbx_exec *p, int k)
{
	return k == 0 ? &p->proxy_chan : &p->bridge_chan;
}

static void
relay_restart(struct sbx_exec *p, int k)
{
	struct sbx_exec_relay	*rl = &p->relay[k];
	struct sbx_error	 e;
	const char		*what = k == 0 ? "proxy" : "bridge";
	char			 msg[1400];

	close_fd(relay_chan(p, k));
	if (rl->stopped)
		return;
	close_fd(relay_ctl(p, k));
	rl->ctl_watch = 0;
	if (rl->restarts >= RELAY_RESTARTS) {
		if (rl->restarts++ == RELAY_RESTARTS) {
			snprintf(msg, sizeof(msg), "sbx-%s died again during "
			    "the run and was not restarted (at most %d times "
			    "a run): the sandbox's connections to it are "
			    "closed", what, RELAY_RESTARTS);
			warn_add(p, msg);
		}
		return;
	}
	rl->restarts++;
	memset(&e, 0, sizeof(e));
	if ((k == 0 ? proxy_open(p, &e) : bridge_open(p, &e)) == 0) {
		rl->ctl_watch = 1;
		snprintf(msg, sizeof(msg), "sbx-%s died during the run and "
		    "was restarted: connections in flight were lost%s", what,
		    k == 0 ? ", and denials before the restart are not in "
		    "this run's record" : ", and its rate limits start "
		    "afresh");
	} else
		snprintf(msg, sizeof(msg), "sbx-%s died during the run and "
		    "could not be restarted (%s): the sandbox's connections "
		    "to it are closed", what, e.message);
	warn_add(p, msg);
}

/* One descriptor and its tag from sbx-init: the descriptor; -1 when
 * nothing waits, -2 at the end, -3 for a message dropped (call again). */
static int
relay_recv(int fd, char *tag)
{
	char		 cbuf[CMSG_SPACE(4 * sizeof(int))];
	struct msghdr	 m;
	struct iovec	 iov;
	struct cmsghdr	*cm;
	ssize_t		 n;
	int		 got = -1, bad = 0, one, j, nfd;

	memset(&m, 0, sizeof(m));
	iov.iov_base = tag;
	iov.iov_len = 1;
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	n = recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n == -1)
		return errno == EAGAIN || errno == EINTR ? -1 : -2;
	if (n == 0 && m.msg_controllen == 0)
		return -2;
	/* Exactly one descriptor, as sbx-init sends: anything else is
	 * closed, not passed on. */
	for (cm = CMSG_FIRSTHDR(&m); cm != NULL; cm = CMSG_NXTHDR(&m, cm)) {
		if (cm->cmsg_level != SOL_SOCKET ||
		    cm->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (j = 0; j < nfd; j++) {
			memcpy(&one, CMSG_DATA(cm) + j * sizeof(int),
			    sizeof(int));
			if (got == -1)
				got = one;
			else {
				close(one);
				bad = 1;
			}
		}
	}
	if (got >= 0 && (bad || n != 1 || (m.msg_flags & MSG_CTRUNC))) {
		close(got);
		got = -1;
	}
	return got == -1 ? -3 : got;
}

/* Pass on what sbx-init sent, holding one descriptor while the daemon's
 * channel is full (sbx-init holds the next ones: backpressure). */
static void
relay_pump(struct sbx_exec *p, int k)
{
	struct sbx_exec_relay	*rl = &p->relay[k];
	int			*chan = relay_chan(p, k);
	int			 fd;

	for (;;) {
		if (rl->held < 0) {
			if ((fd = relay_recv(rl->mine, &rl->tag)) == -1)
				return;
			if (fd == -2) {
				/* sbx-init is gone. */
				close_fd(&rl->mine);
				return;
			}
			if (fd == -3)
				continue;
			rl->held = fd;
		}
		if (*chan < 0) {
			close_fd(&rl->held);
			continue;
		}
		if (sbx_fs_send_fd(*chan, &rl->tag, 1, rl->held,
		    MSG_DONTWAIT) == 1) {
			close_fd(&rl->held);
			continue;
		}
		if (errno == EAGAIN || errno == ENOBUFS)
			return;
		/* The daemon is gone: start it again and send this
		 * connection to the new one (bounded: see above). */
		relay_restart(p, k);
	}
}

/* What the run's loop polls for the relays. */
static void
relay_arm(struct sbx_exec *p, struct sbx_run *r)
{
	struct sbx_exec_relay	*rl;
	int			 k;

	for (k = 0; k < 2; k++) {
		rl = &p->relay[k];
		r->watch[2 * k].fd = rl->ctl_watch ? *relay_ctl(p, k) : -1;
		r->watch[2 * k].events = POLLIN;
		if (rl->held >= 0) {
			r->watch[2 * k + 1].fd = *relay_chan(p, k);
			r->watch[2 * k + 1].events = POLLOUT;
		} else {
			r->watch[2 * k + 1].fd = rl->mine;
			r->watch[2 * k + 1].events = POLLIN;
		}
	}
}

static void
relay_watch(void *arg, struct sbx_run *r, int i, short revents)
{
	struct sbx_exec	*p = arg;
	ssize_t		 n;
	char		 buf[64], msg[128];
	int		 k = i / 2;

	(void)revents;
	if (i % 2 == 0) {
		n = recv(*relay_ctl(p, k), buf, sizeof(buf), MSG_PEEK |
		    MSG_DONTWAIT);
		if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
			relay_restart(p, k);
		else if (n > 0) {
			/* Not ours to read mid-run (the end of the run
			 * reads the answers): stop watching.  A daemon
			 * stopped on purpose (`sbx proxy stop`) says so
			 * first, and is not started again: the run's
			 * connections end as the stop promises. */
			p->relay[k].ctl_watch = 0;
			if ((size_t)n >= sizeof(SBX_DAEMON_STOPPING) - 1 &&
			    memcmp(buf, SBX_DAEMON_STOPPING,
			    sizeof(SBX_DAEMON_STOPPING) - 1) == 0) {
				p->relay[k].stopped = 1;
				close_fd(relay_chan(p, k));
				snprintf(msg, sizeof(msg), "sbx-%s was "
				    "stopped (sbx %s stop) during the run: "
				    "the sandbox's connections to it are "
				    "closed", k == 0 ? "proxy" : "bridge",
				    k == 0 ? "proxy" : "bridge");
				warn_add(p, msg);
			}
		}
	} else
		relay_pump(p, k);
	relay_arm(p, r);
}

/* After the run: the proxy's denials, for the envelope and for people. */
static void
finish_proxy(struct sbx_exec *p)
{
	struct sbx_error	 e;

	if (p->proxy_ctl < 0)
		return;
	/* Stopped on purpose mid-run: the record went with it. */
	p->violations = p->relay[0].stopped ? NULL :
	    sbx_proxyclient_end_creds(p->proxy_ctl, p->creds != NULL ?
	    &p->credentials : NULL, &e);
	close(p->proxy_ctl);
	p->proxy_ctl = -1;
	if (p->violations == NULL) {
		warn_add(p, "the proxy's record of this run is unavailable");
		p->violations = json_array();
	}
	/*
	 * What the proxy reports is the sandbox's words (a host name, a
	 * method) in the proxy's spelling: a secret used as a host name
	 * comes back lowercased.  Scrubbed here, before it enters the
	 * envelope, a job's record or the "proxy denied" line (the scrubber
	 * ignores ASCII case).
	 */
	sbx_scrub_json(p->secrets.scrub, p->violations);
	/* The credentials the run used: names and hosts (the envelope's
	 * "credentials"); a run with rules always has the list. */
	if (p->creds != NULL && p->credentials == NULL)
		p->credentials = json_array();
	sbx_scrub_json(p->secrets.scrub, p->credentials);
}

/*
 * After the run: what the file-system guard refused (sbx-init's reports,
 * collected by run.c), as violations beside the proxy's; and a
 * repository the run created where none was (its config and hooks were
 * not protected: the sandbox wrote them).  Collecting costs nothing on
 * the way: the guard sees every refusal because it makes it.
 */
static void
finish_fs(struct sbx_exec *p)
{
	struct stat	 st;
	char		 w[PATH_MAX + 160];
	size_t		 i;

	if (p->violations == NULL && (p->run.fsdeny.n > 0 ||
	    p->run.sockdeny.n > 0))
		p->violations = json_array();
	for (i = 0; i < p->run.fsdeny.n; i++)
		json_array_append_new(p->violations, json_pack("{s:s,s:s,s:s}",
		    "type", "filesystem", "path", p->run.fsdeny.v[i], "reason",
		    "protected_path"));
	for (i = 0; i < p->run.sockdeny.n; i++)
		json_array_append_new(p->violations, json_pack("{s:s,s:s,s:s}",
		    "type", "filesystem", "path", p->run.sockdeny.v[i],
		    "reason", "unix_socket"));
	for (i = 0; i < p->fs.no_git.n; i++) {
		snprintf(w, sizeof(w), "%s/.git", p->fs.no_git.v[i]);
		if (lstat(w, &st) == -1)
			continue;
		snprintf(w, sizeof(w), "the run created a git repository in "
		    "%s: its config and hooks were written in the sandbox; "
		    "review them before running git there", p->fs.no_git.v[i]);
		warn_add(p, w);
	}
}

/*
 * -t: the command's terminal starts at the size of the caller's (stdin,
 * stdout or stderr, whichever is one), else at 24 by 80, as a terminal
 * that cannot tell its size is taken to be.  That terminal is the one whose
 * size the command's follows on SIGWINCH (tty_size_fd).
 */
static void
tty_prepare(struct sbx_exec *p)
{
	struct winsize	 ws;
	int		 fd;

	p->sb.tty = 1;
	p->sb.tty_rows = 24;
	p->sb.tty_cols = 80;
	for (fd = 0; fd <= 2; fd++)
		if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
		    ws.ws_col > 0) {
			p->sb.tty_rows = ws.ws_row;
			p->sb.tty_cols = ws.ws_col;
			p->tty_size_fd = fd;
			break;
		}
}

void
sbx_exec_req_init(struct sbx_exec_req *q)
{
	static const struct sbx_strv	 empty = SBX_STRV_INIT;

	memset(q, 0, sizeof(*q));
	q->env = q->allow = q->limit_keys = q->own = q->secrets = empty;
	q->unprotect = q->ro = q->xworkdirs = empty;
	q->max_output_n = 1 << 20;
	q->detach_fd = -1;
}

void
sbx_exec_req_release(struct sbx_exec_req *q)
{
	sbx_strv_release(&q->env);
	sbx_strv_release(&q->allow);
	sbx_strv_release(&q->limit_keys);
	sbx_strv_release(&q->secrets);
	sbx_strv_release(&q->unprotect);
	sbx_strv_release(&q->xworkdirs);
	sbx_strv_release(&q->ro);
	sbx_strv_release(&q->own);
	free(q->own_argv);
	q->own_argv = NULL;
}

/*
 * Everything that can be said of a request before anything is opened, in
 * a fixed order (not the order of the options): the modes and numbers,
 * the agent's name, then the command and its environment.
 */
int
sbx_exec_validate(struct sbx_exec_req *q, struct sbx_error *e)
{
	unsigned long long	 v;
	const char		*a;
	enum sbx_netmode	 net;
	size_t			 i;

	if (q->max_output != NULL) {
		if (sbx_cli_parse_bytes(q->max_output, &v) == -1 || v < 64 ||
		    v > (1ULL << 30))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "max_output", "out_of_range", "argument "
			    "`max-output` must be a byte count from 64 to 1G");
		q->max_output_n = (size_t)v;
	} else
		q->max_output_n = 1 << 20;
	if (q->stdin_mode == NULL)
		q->stdin_v = SBX_EXEC_STDIN_AUTO;
	else if (strcmp(q->stdin_mode, "inherit") == 0)
		q->stdin_v = SBX_EXEC_STDIN_INHERIT;
	else if (strcmp(q->stdin_mode, "null") == 0)
		q->stdin_v = SBX_EXEC_STDIN_NULL;
	else
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "stdin",
		    "invalid_mode", "argument `stdin` must be inherit or null");
	if (q->seccomp == NULL || strcmp(q->seccomp, "on") == 0)
		q->seccomp_off = 0;
	else if (strcmp(q->seccomp, "off") == 0)
		q->seccomp_off = 1;
	else
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "seccomp",
		    "invalid_mode", "argument `seccomp` must be on or off");
	/* A terminal is a session for a person: it has no place in an
	 * envelope, nor in a detached job nobody is attached to. */
	if (q->tty && (q->capture || q->background)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "tty", q->capture ?
		    "tty_with_json" : "tty_with_background", "-t/--tty cannot "
		    "be used with %s", q->capture ? "--json (or SBX_JSON=1): a "
		    "terminal's output is a session, not an envelope" :
		    "--background: a detached job has nobody at a terminal");
		return -2;
	}
	/* A job's record keeps no violations (the supervisor outlives the
	 * proxy's session of its start): a failure on one could not be
	 * given, so it is not promised. */
	if (q->fail_on_violation > 0 && q->background) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "fail_on_violation",
		    "fail_on_violation_with_background", "--fail-on-violation "
		    "cannot be used with --background: a job's record keeps "
		    "no violations");
		return -2;
	}
	if (q->agent == NULL) {
		a = getenv("SBX_AGENT");
		q->agent = a != NULL && *a != '\0' ? a : "default";
	}
	if (sbx_names_agent_valid(q->agent, "agent", e) == -1)
		return -1;
	if (q->argc == 0 && q->shell == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "missing", "no command given: use `-- COMMAND [ARG...]` or "
		    "`-c STRING`");
	q->timeout_s = 0;
	if (q->timeout != NULL &&
	    sbx_cli_parse_seconds(q->timeout, 31 * 86400.0, &q->timeout_s) ==
		-1)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number", "argument `timeout` must be a positive "
		    "number of seconds (at most 31 days)");
	if (network_of(q, &net, e) == -1)
		return -1;
	for (i = 0; i < q->env.n; i++)
		if (sbx_names_env_assign_valid(q->env.v[i], e) == -1)
			return -1;
	if (q->no_secrets && q->secrets.n > 0) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "secret",
		    "secret_with_no_secrets", "--secret and --no-secrets "
		    "exclude each other");
		return -2;
	}
	for (i = 0; i < q->secrets.n; i++)
		if (sbx_secret_name_valid(q->secrets.v[i], e) == -1) {
			e->field = "secret";
			return -1;
		}
	if (q->shell != NULL && *q->shell == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command", "empty",
		    "argument `-c` is an empty string");
	/* A detached job has no caller's stdin to read: refused rather than
	 * silently given /dev/null. */
	if (q->background && q->stdin_v == SBX_EXEC_STDIN_INHERIT)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "stdin",
		    "background_stdin", "--stdin inherit cannot be used with "
		    "--background (a job's stdin is /dev/null)");
	if (q->shell == NULL && q->argc > 0 && q->argv[0][0] == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command", "empty",
		    "the command name is empty");
	return 0;
}

void
sbx_exec_init(struct sbx_exec *p)
{
	int	 i;

	memset(p, 0, sizeof(*p));
	p->root.fd = -1;
	p->home_fd = p->output_fd = p->workdir_fd = p->workdir_tree = -1;
	p->env_fd = p->passwd_fd = p->group_fd = p->hosts_fd = -1;
	p->seccomp_fd = p->cache_fd = p->init_fd = -1;
	p->etc_fd = p->userns_fd = -1;
	p->agent_ns_fd = -1;
	p->proxy_ctl = p->proxy_chan = -1;
	p->ca_fd = -1;
	p->session_fd = -1;
	p->bridge_ctl = p->bridge_chan = -1;
	for (i = 0; i < 2; i++)
		p->relay[i].init_end = p->relay[i].mine =
		    p->relay[i].held = -1;
	p->tty_size_fd = -1;
	p->ask_hold_fd = -1;
	p->sb.image_fd = -1;
	p->disk.lock_fd = -1;
	p->disk_tmp_fd[0] = p->disk_tmp_fd[1] = -1;
	p->cg.backend = SBX_CG_NONE;
	sbx_run_init(&p->run);
}

/* The request must have passed sbx_exec_validate(). */
int
sbx_exec_prepare(struct sbx_exec *p, const struct sbx_exec_req *q,
    struct sbx_error *e)
{
	struct sbx_buf		 pw = SBX_BUF_INIT, gr = SBX_BUF_INIT;
	struct sbx_buf		 hosts = SBX_BUF_INIT;
	char			 rel[128], *dir;
	size_t			 i;

	p->req = q;
	p->warnings = json_array();
	if (network_of(q, &p->network, e) == -1)
		return -1;
	p->sb.agent = q->agent;
	if (sbx_root_resolve(q->home, &p->root, e) == -1)
		return -1;

	/* Fail closed: no bwrap, no run. */
	if (sbx_tools_find("bwrap", "SBX_BWRAP", &p->bwrap, e) == -1)
		return -1;
	/*
	 * sbx-init lives next to sbx-exec, or where the caller says (the
	 * front-end, with exec built in: its exec path).
	 */
	dir = q->libexec != NULL ? strdup(q->libexec) : sbx_tools_self_dir();
	if (dir == NULL || asprintf(&p->init, "%s/sbx-init", dir) == -1) {
		sbx_error_sys(e, "self_unknown", "cannot locate sbx-init");
		return -1;
	}
	free(dir);
	if (access(p->init, X_OK) == -1 || (p->init_fd = open(p->init,
	    O_RDONLY | O_CLOEXEC)) == -1) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "init_missing",
		    "%s is missing; the installation is incomplete", p->init);
		return -1;
	}

	if (sbx_root_open(&p->root, 1, e) == -1)
		return -1;
	/* A root made by a run alone is as much a state root as one made
	 * by provision: mark it, so that --workdir never binds it into
	 * another run (see workdir.c).  This run's own isolation does not
	 * depend on it (its root is checked by path): a root that cannot
	 * take the marker (read-only) only gets a warning. */
	if (sbx_root_mark(p->root.fd, e) == -1)
		warn_add(p, e->message);
	if (prep_identity(p, e) == -1)
		return -1;
	if (prep_network(p, e) == -1)
		return -1;
	if (p->agent_ns_fd >= 0) {
		if (prep_agent_dirs(p, e) == -1)
			return -1;
		goto dirs_done;
	}
	SBX_LPATH(rel, SBX_L_AGENT_HOME, p->sb.agent);
	if ((p->home_fd = sbx_fs_mkdirs_at(p->root.fd, rel, 0700, e)) == -1)
		return -1;
	if (own_dir(p, p->home_fd, rel, e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_OUTPUT, p->sb.agent);
	if ((p->output_fd = sbx_fs_mkdirs_at(p->root.fd, rel, 0700, e)) == -1)
		return -1;
	if (own_dir(p, p->output_fd, rel, e) == -1)
		return -1;
dirs_done:
	snprintf(p->home, sizeof(p->home), "%s/%s", SBX_IN_AGENTS,
	    p->sb.agent);
	p->sb.host_view = p->req->host_view;
	if (prep_image(p, e) == -1)
		return -1;
	if (p->req->rootfs_rw && prep_rootfs_rw(p, e) == -1)
		return -1;
	if (prep_view_subids(p, e) == -1)
		return -1;
	if (p->req->workdir != NULL && sbx_workdir_prepare(p, e) == -1)
		return -1;
	if (sbx_workdir_prepare_others(p, e) == -1)
		return -1;
	if (prep_cwd(p, e) == -1)
		return -1;
	if (prep_fspolicy(p, e) == -1)
		return -1;

	p->sb.bwrap = p->bwrap;
	p->sb.init = p->init;
	p->sb.home = p->home;
	p->sb.workdir = p->workdir;
	p->sb.cwd = p->cwd;
	p->sb.network = p->network;
	p->sb.fs_ops = p->fs.ops.v;
	for (i = 0; i < (size_t)p->nxwd; i++) {
		p->sb.xworkdir[i].path = p->xwd[i].path;
	}
	p->sb.nxworkdir = p->nxwd;
	p->sb.fs_init = p->fs.init.v;
	/* With -c, the arguments after the string are $0, $1... */
	p->sb.argv = p->req->argv;
	p->sb.shell = p->req->shell;
	p->sb.session = p->req->session;
	p->sb.init_exec_fd = init_exec_fd(p);
	if (p->req->tty)
		tty_prepare(p);
	p->sb.tmp_size = 1ULL << 30;
	p->cache_fd = sbx_layout_mkdirs(p->root.fd, SBX_L_CACHE, NULL, e);
	p->sb.disable_userns = bwrap_has_disable_userns(p);
	if (prep_limits(p, e) == -1)
		return -1;
	/* The filter is part of the sandbox: when it cannot be had, nothing
	 * runs (unless the caller turned it off, for diagnosis). */
	p->seccomp_fd = -1;
	if (!p->req->seccomp_off) {
		const char	*sw;

		if ((p->seccomp_fd = sbx_seccomp_fd(p->cache_fd, &sw,
		    e)) == -1)
			return -1;
		/* Someone wrote the cached copy: say so, it is a sign. */
		if (sw != NULL)
			warn_add(p, sw);
		p->sb.seccomp = 1;
	} else
		warn_add(p, "seccomp is off (--seccomp=off): the kernel's "
		    "whole system call surface is reachable");
	if (!p->sb.disable_userns)
		warn_add(p, "this bubblewrap cannot disable nested user "
		    "namespaces (--disable-userns needs bwrap >= 0.8.0)");
	if (sbx_netmode_row(p->network)->warning != NULL)
		warn_add(p, sbx_netmode_row(p->network)->warning);

	/* Secrets first: a plugin's bridge session names the values this
	 * run holds (bridge_session), the proxy's session the values of
	 * the run's credential rules. */
	if (!q->no_secrets && prep_secrets(p, e) == -1)
		return -1;
	if (prep_creds(p, e) == -1)
		return -1;
	if (sbx_netmode_row(p->network)->relay)
		if (prep_proxy(p, e) == -1 || host_cli_find(p) == -1)
		return -1;
	if (p->bridge && prep_bridge(p, e) == -1)
		return -1;
	if ((p->env_fd = prep_env(p)) == -1 || sbx_sandbox_etc(&p->sb,
	    p->run_uid, p->run_gid, &pw, &gr, &hosts) == -1) {
		sbx_error_sys(e, "memfd_failed", "preparing the sandbox");
		return -1;
	}
	/* The host view shows the host's own /etc (passwd, group and
	 * hosts still sbx's, bound over it). */
	if (p->sb.image_root == NULL && p->cache_fd >= 0 && !p->sb.host_view)
		prep_etc(p, &pw, &gr, &hosts);
	if (!p->sb.etc_cached && (
	    (p->passwd_fd = etc_fd("sbx-passwd", &pw)) == -1 ||
	    (p->group_fd = etc_fd("sbx-group", &gr)) == -1 ||
	    (p->hosts_fd = etc_fd("sbx-hosts", &hosts)) == -1)) {
		sbx_error_sys(e, "memfd_failed", "preparing the sandbox");
		return -1;
	}
	if (sbx_sandbox_argv(&p->sb, &p->bwrap_argv, e) == -1)
		return -1;
	if (p->req->verbose) {
		struct sbx_buf b = SBX_BUF_INIT;
		for (i = 0; i < p->bwrap_argv.n; i++) {
			if (i)
				sbx_buf_puts(&b, " ");
			sbx_utf8_escape_line(&b, p->bwrap_argv.v[i],
			    strlen(p->bwrap_argv.v[i]));
		}
		p->bwrap_line = sbx_buf_detach(&b);
	}
	return 0;
}

/*
 * After the run: read the cgroup's counters as evidence of a limit that
 * ended or hindered the run, then kill what is left, wait for the cgroup
 * to empty and remove it.  Returns the events object (or NULL).
 */
static json_t *
disk_events(struct sbx_exec *p, json_t *ev)
{
	if (!p->disk_full)
		return ev;
	if (ev == NULL)
		ev = json_object();
	json_object_set_new(ev, "disk_limit_reached", json_true());
	return ev;
}

json_t *
sbx_exec_finish_limits(struct sbx_exec *p, struct sbx_run *r)
{
	/* The image full after the run: the command met ENOSPC there
	 * (nothing of it is removed; the next run has what is left). */
	if (sbx_disklimit_reached(p->root.fd, p->sb.agent, &p->disk)) {
		warn_add(p, "the disk limit was reached: the agent's disk "
		    "image is full (writes failed with ENOSPC); free space "
		    "in the home or /output, or grow it with sbx provision "
		    "--disk-resize");
		p->disk_full = 1;
	}
	/* The run's /tmp goes with it, as a tmpfs would (--disk-tmp). */
	release_disk_tmp(p);
	return disk_events(p, sbx_exec_cg_events(p, r));
}

json_t *
sbx_exec_cg_events_of(struct sbx_exec *p, struct sbx_run *r,
    const struct sbx_cg_stats *st)
{
	json_t *ev = json_object();

	if (st->have_oom && st->oom_kills > 0)
		json_object_set_new(ev, "oom_kills",
		    json_integer((json_int_t)st->oom_kills));
	if (st->have_pids_events && st->pids_max_events > 0)
		json_object_set_new(ev, "pids_max",
		    json_integer((json_int_t)st->pids_max_events));
	if (st->have_cpu)
		json_object_set_new(ev, "cpu_usage_ms",
		    json_integer((json_int_t)(st->cpu_usage_usec / 1000)));
	if (st->have_peak)
		json_object_set_new(ev, "memory_peak_mib",
		    json_integer((json_int_t)(st->memory_peak >> 20)));
	if (st->have_oom && st->oom_kills > 0 && r->exit_code != 0 &&
	    r->killed_by == NULL) {
		r->killed_by = "limit";
		r->limit = "memory";
	}
	if (st->have_pids_events && st->pids_max_events > 0)
		warn_add(p, "the task limit was reached: some fork() "
		    "or clone() calls failed with EAGAIN");
	return ev;
}

json_t *
sbx_exec_cg_events(struct sbx_exec *p, struct sbx_run *r)
{
	struct sbx_error    e;
	struct sbx_cg_stats st;
	json_t		   *ev = NULL;

	if (p->cg.backend == SBX_CG_NONE)
		return NULL;
	memset(&st, 0, sizeof(st));
	if (sbx_cgroup_stats(&p->cg, &st) == 0)
		ev = sbx_exec_cg_events_of(p, r, &st);
	if (sbx_cgroup_destroy(&p->cg, &e) == -1)
		warn_add(p, e.message);
	return ev;
}

void
sbx_exec_run_setup(struct sbx_exec *p, struct sbx_run *r)
{
	int	 i;

	sbx_run_init(r);
	r->bwrap_argv = p->bwrap_argv.v;
	r->slot[SBX_FD_ENV] = p->env_fd;
	r->slot[SBX_FD_HOME] = p->home_fd;
	r->slot[SBX_FD_OUTPUT] = p->output_fd;
	r->slot[SBX_FD_WORKDIR] = p->workdir_tree >= 0 ? p->workdir_tree :
	    p->workdir_fd;
	r->slot[SBX_FD_PASSWD] = p->passwd_fd;
	r->slot[SBX_FD_GROUP] = p->group_fd;
	r->slot[SBX_FD_HOSTS] = p->hosts_fd;
	r->slot[SBX_FD_ETC] = p->etc_fd;
	/* Image mode (no prepared /etc): the slot carries the user
	 * namespace bwrap enters (--userns). */
	if (p->userns_fd >= 0)
		r->slot[SBX_FD_USERNS] = p->userns_fd;
	r->slot[SBX_FD_SECCOMP] = p->seccomp_fd;
	r->slot[SBX_FD_INIT] = p->init_fd;
	/* sbx-init's channels end here, at the relays (see relay_open). */
	r->slot[SBX_FD_PROXY] = p->relay[0].init_end;
	r->slot[SBX_FD_BRIDGE] = p->relay[1].init_end;
	r->slot[SBX_FD_CA] = p->ca_fd;
	r->slot[SBX_FD_DISK_TMP] = p->disk_tmp_fd[0];
	r->slot[SBX_FD_DISK_SHM] = p->disk_tmp_fd[1];
	r->slot[SBX_FD_SESSION] = p->session_fd;
	if (p->relay[0].mine >= 0 || p->relay[1].mine >= 0) {
		relay_arm(p, r);
		r->watch_cb = relay_watch;
		r->watch_arg = p;
	}
	for (i = 0; i < p->nxwd; i++)
		r->slot[SBX_FD_XWORKDIR + i] = p->xwd[i].tree >= 0 ?
		    p->xwd[i].tree : p->xwd[i].fd;
	r->drop_privs = p->drop_privs;
	r->run_uid = p->run_uid;
	r->run_gid = p->run_gid;
	r->run_group = p->run_group;
	if (p->agent_ns_fd >= 0) {
		r->agent_ns = p->agent_ns_fd;
		r->agent_uid = p->agentid.uid;
		r->agent_gid = p->agentid.gid;
	}
	r->wall_timeout_ms = (long long)(p->lim.wall_timeout * 1000.0);
	r->child_hook = cg_enter_hook;
	r->fork_hook = cg_fork_hook;
	r->kill_hook = cg_kill_hook;
	r->child_hook_arg = p;
	r->max_output = p->req->max_output_n;
	r->idle_timeout_ms = (long long)(p->req->timeout_s * 1000.0);
	r->hold_stderr = 1;
	r->signal_fd = sigpipe_fds[0];
	r->scrub = p->secrets.scrub;
}

/*
 * Signals reach the run's supervision loop through a self-pipe (the run
 * engine polls it): the first of INT, TERM, HUP (and USR1, a job's hard
 * kill) ends the sandbox in order.  Returns the pipe's read end, or -1.
 */
static void
on_signal(int sig)
{
	unsigned char	 c = (unsigned char)sig;
	int		 saved = errno;

	if (sigpipe_fds[1] >= 0)
		(void)!write(sigpipe_fds[1], &c, 1);
	errno = saved;
}

int
sbx_exec_signals(int with_usr1)
{
	struct sigaction	 sa;

	if (sigpipe_fds[0] == -1 &&
	    pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (with_usr1)
		sigaction(SIGUSR1, &sa, NULL);
	return sigpipe_fds[0];
}

/*
 * The caller's terminal, when the sandbox gets it as stdin.  Its settings
 * are the caller's, not the sandbox's: `stty -echo` or raw mode left behind
 * by the command (or by one killed half-way) would outlive the run, so
 * they are put back however the run ends (exit() runs restore_tty too).
 */
static struct termios	 saved_tty;
static int		 saved_tty_ok;

static void
restore_tty(void)
{
	struct sigaction	 ign, old;

	if (!saved_tty_ok)
		return;
	/* A background sbx (`sbx exec ... &`) would be stopped by SIGTTOU
	 * on tcsetattr(): ignored for the call, as shells do. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGTTOU, &ign, &old);
	(void)tcsetattr(0, TCSANOW, &saved_tty);
	sigaction(SIGTTOU, &old, NULL);
}

/*
 * What the sandbox reads.  The caller's stdin, except a terminal in a run
 * that is not interactive (--json: the caller reads an envelope, not a
 * session): there the command would read keystrokes meant for the caller,
 * and could change the terminal's modes or wait on it.  --stdin decides.
 */
static int
stdin_for_run(const struct sbx_exec *p)
{
	int	 fd = 0;

	if (p->req->stdin_v == SBX_EXEC_STDIN_NULL ||
	    (p->req->stdin_v == SBX_EXEC_STDIN_AUTO && p->req->capture &&
	    isatty(0)))
		fd = -1;
	if (fd == 0 && isatty(0) && tcgetattr(0, &saved_tty) == 0 &&
	    !saved_tty_ok) {
		saved_tty_ok = 1;
		atexit(restore_tty);
	}
	return fd;
}

/*
 * -t: the command's terminal is the one sbx-init made inside; the caller's
 * terminal only carries keystrokes to it and its output back, so it goes
 * raw (no echo or line editing of its own; ^C, ^Z and ^D pass as bytes,
 * and the command's terminal makes of them what a terminal does) until
 * the run ends, however it ends (restore_tty).  Its window size follows
 * the caller's (SIGWINCH).
 */
static void
tty_start(struct sbx_exec *p, struct sbx_run *r)
{
	struct sigaction	 sa;
	struct termios		 raw;

	r->tty = 1;
	r->tty_size_fd = p->tty_size_fd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	if (!saved_tty_ok)
		return;
	raw = saved_tty;
	cfmakeraw(&raw);
	(void)tcsetattr(0, TCSADRAIN, &raw);
}

/* The run in the foreground: output streamed (or kept, capture). */
static int
foreground(struct sbx_exec *p, struct sbx_error *e)
{
	struct sbx_run	*r = &p->run;

	sbx_exec_signals(0);
	signal(SIGPIPE, SIG_IGN);
	sbx_exec_run_setup(p, r);
	r->stdin_fd = stdin_for_run(p);
	if (p->req->tty)
		tty_start(p, r);
	r->hold_fd = p->ask_hold_fd;
	r->stdin_relay = p->ask_hold_fd >= 0 && r->stdin_fd >= 0 &&
	    isatty(r->stdin_fd);
	if (p->req->capture) {
		r->capture = 1;
		/* sbx install: kept for the envelope and shown as it comes. */
		if (p->req->capture_tee)
			r->out_fd = r->err_fd = 2;
	} else {
		r->out_fd = 1;
		r->err_fd = 2;
	}
	if (sbx_run_sandbox(r, e) == -1) {
		restore_tty();
		json_decref(sbx_exec_finish_limits(p, r));
		return -1;
	}
	restore_tty();
	p->events = sbx_exec_finish_limits(p, r);
	finish_proxy(p);
	/* Closing the control connection ends the bridge session. */
	close_fd(&p->bridge_ctl);
	finish_fs(p);
	return 0;
}

int
sbx_exec_run(struct sbx_exec *p, struct sbx_error *e)
{
	if (p->req->background)
		return sbx_jobsup_start(p, e);
	return foreground(p, e);
}

static void
close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Free what a run holds (the run's cgroup went with the run). */
void
sbx_exec_release(struct sbx_exec *p)
{
	int	 i;

	close_fd(&p->proxy_ctl);
	close_fd(&p->proxy_chan);
	close_fd(&p->bridge_ctl);
	close_fd(&p->bridge_chan);
	for (i = 0; i < 2; i++) {
		close_fd(&p->relay[i].init_end);
		close_fd(&p->relay[i].mine);
		close_fd(&p->relay[i].held);
	}
	json_decref(p->proxy_allow);
	p->proxy_allow = NULL;
	free(p->host_cli);
	p->host_cli = NULL;
	close_fd(&p->home_fd);
	close_fd(&p->output_fd);
	close_fd(&p->workdir_fd);
	release_disk_tmp(p);
	sbx_disklimit_release(&p->disk);
	close_fd(&p->workdir_tree);
	close_fd(&p->userns_fd);
	close_fd(&p->agent_ns_fd);
	free((char *)p->sb.shared_dir);
	p->sb.shared_dir = NULL;
	for (i = 0; i < p->nxwd; i++) {
		close_fd(&p->xwd[i].fd);
		close_fd(&p->xwd[i].tree);
		free(p->xwd[i].path);
		free(p->xwd[i].mnt);
	}
	close_fd(&p->env_fd);
	sbx_secret_env_release(&p->secrets);
	free(p->creds);
	p->creds = NULL;
	free(p->creds_ph);
	p->creds_ph = NULL;
	close_fd(&p->ca_fd);
	json_decref(p->credentials);
	p->credentials = NULL;
	close_fd(&p->passwd_fd);
	close_fd(&p->group_fd);
	close_fd(&p->hosts_fd);
	close_fd(&p->etc_fd);
	close_fd(&p->seccomp_fd);
	close_fd(&p->cache_fd);
	close_fd(&p->init_fd);
	sbx_run_release(&p->run);
	sbx_fspolicy_release(&p->fs);
	sbx_strv_release(&p->bwrap_argv);
	json_decref(p->agent_cfg);
	json_decref(p->violations);
	json_decref(p->limits);
	json_decref(p->warnings);
	json_decref(p->events);
	free(p->bwrap);
	free(p->init);
	free(p->workdir);
	free(p->workdir_mnt);
	free(p->cg_v2root);
	free(p->bwrap_line);
	free((char *)p->sb.image_root);
	if (p->sb.image_fd >= 0)
		close(p->sb.image_fd);
	sbx_root_release(&p->root);
	explicit_bzero(p->proxy_token, sizeof(p->proxy_token));
	sbx_exec_init(p);
}

json_t *
sbx_exec_command_json(const struct sbx_exec_req *q)
{
	json_t	*a = json_array();
	int	 i;

	if (q->shell) {
		json_array_append_new(a, json_string("-c"));
		json_array_append_new(a, sbx_json_bytes(q->shell,
		    strlen(q->shell)));
	}
	for (i = 0; i < q->argc; i++)
		json_array_append_new(a, sbx_json_bytes(q->argv[i],
		    strlen(q->argv[i])));
	return a;
}
