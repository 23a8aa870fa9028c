/*
 * users.c: /etc/passwd look-ups.  fgetpwent() reads the file itself: no
 * NSS modules are loaded, which keeps statically linked programs honest and
 * means a directory service cannot hand sbx an identity.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "users.h"

#define PASSWD_MAX	(16UL << 20)

/*
 * The file read whole, then parsed from memory: fgetpwent() on the file
 * itself asks the kernel for its position after every entry, one lseek
 * per user of the host on every run (issue 19).
 */
struct pwfile {
	struct sbx_buf	 text;
	FILE		*f;
};

static FILE *
pw_open(struct pwfile *pf, const char *path)
{
	int	 fd, rc;

	memset(pf, 0, sizeof(*pf));
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return NULL;
	rc = sbx_fs_read_fd(fd, &pf->text, PASSWD_MAX);
	close(fd);
	/* An empty file: its terminating NUL, a stream with no entry. */
	if (rc == -1 || (pf->f = fmemopen(pf->text.p, pf->text.len > 0 ?
	    pf->text.len : 1, "r")) == NULL) {
		sbx_buf_release(&pf->text);
		return NULL;
	}
	return pf->f;
}

static void
pw_close(struct pwfile *pf)
{
	if (pf->f != NULL)
		fclose(pf->f);
	sbx_buf_release(&pf->text);
}

/* prefix/etc/passwd (prefix NULL: /etc/passwd). */
static int
user_in(const char *prefix, const char *name, uid_t *uid, gid_t *gid)
{
	struct passwd	*pw;
	struct pwfile	 pf;
	char		 path[4096];
	FILE		*f;
	int		 rc = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s/etc/passwd",
	    prefix != NULL ? prefix : "") >= sizeof(path))
		return -1;
	if ((f = pw_open(&pf, path)) == NULL)
		return -1;
	while ((pw = fgetpwent(f)) != NULL)
		if (strcmp(pw->pw_name, name) == 0) {
			*uid = pw->pw_uid;
			*gid = pw->pw_gid;
			rc = 0;
			break;
		}
	pw_close(&pf);
	return rc;
}

int
sbx_user_by_name(const char *name, uid_t *uid, gid_t *gid)
{
	return user_in(NULL, name, uid, gid);
}

int
sbx_user_create_argv(const char *useradd, const char *prefix,
    const char *name, const char *argv[SBX_USERADD_ARGV])
{
	size_t	 n = 0;

	/* Nothing here comes from the sandbox or the command line but the
	 * prefix of a test: the name is a constant of the caller. */
	argv[n++] = useradd;
	argv[n++] = "--system";		/* a system uid, no aging */
	argv[n++] = "--user-group";	/* its own group, not users' */
	argv[n++] = "--no-create-home";
	argv[n++] = "--home-dir";
	argv[n++] = "/nonexistent";
	argv[n++] = "--shell";		/* nobody logs in as it */
	argv[n++] = access(SBX_NOLOGIN, X_OK) == 0 ? SBX_NOLOGIN :
	    "/bin/false";
	argv[n++] = "--comment";
	argv[n++] = "sbx sandboxes";
	if (prefix != NULL) {
		argv[n++] = "--prefix";
		argv[n++] = prefix;
	}
	argv[n++] = "--";
	argv[n++] = name;
	argv[n] = NULL;
	return (int)n;
}

int
sbx_user_create(const char *useradd, const char *prefix, const char *name,
    uid_t *uid, gid_t *gid, struct sbx_error *e)
{
	static char *const env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
	    "LC_ALL=C", NULL };
	const char	*argv[SBX_USERADD_ARGV];
	char		 out[512];
	size_t		 len = 0, i;
	ssize_t		 r;
	pid_t		 pid;
	int		 p[2], st, nul;

	sbx_user_create_argv(useradd, prefix, name, argv);
	if (pipe2(p, O_CLOEXEC) == -1)
		return sbx_error_sys(e, "useradd_failed", "pipe");
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return sbx_error_sys(e, "useradd_failed", "fork");
	}
	if (pid == 0) {
		/* An argv array and a fixed environment: no shell, nothing
		 * of ours (SBX_*, LD_*) reaches the privileged tool. */
		nul = open("/dev/null", O_RDONLY);
		if (nul == -1 || dup2(nul, 0) == -1 || dup2(p[1], 1) == -1 ||
		    dup2(p[1], 2) == -1)
			_exit(127);
		execve(useradd, (char *const *)argv, env);
		_exit(127);
	}
	close(p[1]);
	for (;;) {
		r = read(p[0], out + len, sizeof(out) - 1 - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		if (len == sizeof(out) - 1) {
			char	 sink[512];

			/* Keep draining: the child must not block. */
			while ((r = read(p[0], sink, sizeof(sink))) > 0 ||
			    (r == -1 && errno == EINTR))
				;
			break;
		}
	}
	close(p[0]);
	out[len] = '\0';
	while (len > 0 && (out[len - 1] == '\n' || out[len - 1] == ' '))
		out[--len] = '\0';
	for (i = 0; i < len; i++)
		if ((unsigned char)out[i] < 0x20)
			out[i] = ' ';
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return sbx_error_sys(e, "useradd_failed", "waitpid");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL, "useradd_failed",
		    "cannot create the system user %s: %s %s%s%s", name,
		    useradd, WIFEXITED(st) ? (WEXITSTATUS(st) == 127 ?
		    "could not be run" : "failed") : "was killed",
		    len ? ": " : "", out);
		sbx_error_hint(e, "create it yourself (%s --system "
		    "--user-group --no-create-home --home-dir /nonexistent "
		    "--shell %s %s), or name the uid sandboxes run as in "
		    "config/sandbox.json (run_as)", SBX_USERADD, argv[7], name);
		return -1;
	}
	/* Trust the file, not the exit status: the user must be there now,
	 * and never be root. */
	if (user_in(prefix, name, uid, gid) == -1 || *uid == 0 || *gid == 0)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "useradd_failed", "%s succeeded but no usable user %s is "
		    "in the passwd file", useradd, name);
	return 0;
}

char *
sbx_user_home(uid_t uid)
{
	struct passwd	*pw;
	struct pwfile	 pf;
	FILE		*f;
	char		*home = NULL;

	if ((f = pw_open(&pf, "/etc/passwd")) == NULL)
		return NULL;
	while ((pw = fgetpwent(f)) != NULL)
		if (pw->pw_uid == uid) {
			home = strdup(pw->pw_dir);
			break;
		}
	pw_close(&pf);
	return home;
}

int
sbx_user_each(int (*fn)(const char *, uid_t, const char *, void *), void *arg)
{
	struct passwd	*pw;
	struct pwfile	 pf;
	FILE		*f;
	int		 rc = 0;

	if ((f = pw_open(&pf, "/etc/passwd")) == NULL)
		return -1;
	while (rc == 0 && (pw = fgetpwent(f)) != NULL)
		rc = fn(pw->pw_name, pw->pw_uid, pw->pw_dir, arg);
	pw_close(&pf);
	return rc;
}
