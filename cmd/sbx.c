/*
 * sbx: the front-end.  `sbx foo ARGS` executes sbx-foo ARGS from the libexec
 * directory fixed at build time, as git does with git-foo; $PATH is never
 * searched, so nothing a user or an agent drops on $PATH is ever run.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PROG	"sbx"

static const char usage_text[] =
"usage: sbx [--version] [--help] [--list-commands] COMMAND [ARG...]\n"
"       sbx help [COMMAND]\n";

static const char help_text[] =
"\n"
"sbx runs untrusted commands in bubblewrap sandboxes: per-agent homes,\n"
"every namespace unshared, no network by default.\n"
"\n"
"Commands (sbx help COMMAND for each):\n"
"  exec        run a command in an agent's sandbox (foreground or background)\n"
"  provision   create or repair the state root and agents\n"
"  status      the same as `sbx provision status`\n"
"  preflight   can this machine run sbx safely? (a report CI keeps)\n"
"\n"
"  -h, --help            this help\n"
"      --version         print the version\n"
"      --list-commands   list the installed commands, one per line\n"
"\n"
"Environment: SBX_HOME (state root), SBX_AGENT (default agent), SBX_JSON=1\n"
"(JSON envelopes), SBX_EXEC_PATH (where the sbx-* programs are).\n";

/* Commands that exist as programs but are not for people. */
static int
internal(const char *name)
{
	return strcmp(name, "init") == 0;
}

static const char *
exec_path(void)
{
	const char	*p;

	/* secure_getenv: ignored in a set-id context, where it would let
	 * the caller pick the programs that run with our privilege. */
	p = secure_getenv("SBX_EXEC_PATH");
	if (p != NULL && *p == '/')
		return p;
	return SBX_LIBEXECDIR;
}

static int
valid_name(const char *s)
{
	size_t	 i;

	if (*s < 'a' || *s > 'z' || strlen(s) > 64)
		return 0;
	for (i = 1; s[i]; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return 1;
}

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int
list_commands(void)
{
	DIR		*d;
	struct dirent	*de;
	char		*names[256], path[PATH_MAX];
	size_t		 n = 0, i;

	if ((d = opendir(exec_path())) == NULL) {
		fprintf(stderr, "%s: cannot read %s: %s\n", PROG, exec_path(),
		    strerror(errno));
		return 69;
	}
	while ((de = readdir(d)) != NULL && n < 256) {
		if (strncmp(de->d_name, "sbx-", 4) != 0 ||
		    !valid_name(de->d_name + 4) || internal(de->d_name + 4))
			continue;
		snprintf(path, sizeof(path), "%s/%s", exec_path(), de->d_name);
		if (access(path, X_OK) != 0)
			continue;
		names[n++] = strdup(de->d_name + 4);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (i = 0; i < n; i++) {
		printf("%s\n", names[i]);
		free(names[i]);
	}
	return 0;
}

#ifdef SBX_WITH_EXEC
/* cmd/sbx-exec.c, compiled in with its main() renamed. */
int	sbx_exec_main(int, char *[]);
#endif

static void __attribute__((noreturn))
run(const char *name, int argc, char *argv[])
{
	char	 path[PATH_MAX], arg0[80];
	char	**nargv;
	int	 i;

	if (!valid_name(name) || internal(name)) {
		fprintf(stderr, "%s: '%s' is not an sbx command; see 'sbx "
		    "--list-commands'\n", PROG, valid_name(name) ? name :
		    "(invalid name)");
		exit(127);
	}
	snprintf(path, sizeof(path), "%s/sbx-%s", exec_path(), name);
	snprintf(arg0, sizeof(arg0), "sbx-%s", name);
	if ((nargv = calloc((size_t)argc + 1, sizeof(*nargv))) == NULL)
		exit(71);
	nargv[0] = arg0;
	for (i = 1; i < argc; i++)
		nargv[i] = argv[i];
#ifdef SBX_WITH_EXEC
	/*
	 * `exec` is built in, as git builds in its hot commands: on the
	 * reference machine every exec(2) costs about 1.5 ms, a tenth of a
	 * whole sandbox.  sbx-exec stays a program of its own.
	 */
	if (strcmp(name, "exec") == 0)
		exit(sbx_exec_main(argc, nargv));
#endif
	execv(path, nargv);
	free(nargv);
	if (errno == ENOENT) {
		fprintf(stderr, "%s: '%s' is not an sbx command; see 'sbx "
		    "--list-commands'\n", PROG, name);
		exit(127);
	}
	fprintf(stderr, "%s: cannot run %s: %s\n", PROG, path,
	    strerror(errno));
	exit(126);
}

static int
help(const char *name)
{
	char	 page[96], path[PATH_MAX];

	if (name == NULL) {
		fputs(usage_text, stdout);
		fputs(help_text, stdout);
		return 0;
	}
	if (!valid_name(name) || internal(name)) {
		fprintf(stderr, "%s: no help for '%s'\n", PROG,
		    valid_name(name) ? name : "(invalid name)");
		return 64;
	}
	snprintf(path, sizeof(path), "%s/sbx-%s", exec_path(), name);
	if (access(path, X_OK) != 0) {
		fprintf(stderr, "%s: '%s' is not an sbx command; see 'sbx "
		    "--list-commands'\n", PROG, name);
		return 127;
	}
	/* The man page when man(1) and the page are there, else --help. */
	snprintf(page, sizeof(page), "sbx-%s", name);
	if (access("/usr/bin/man", X_OK) == 0 && isatty(1)) {
		pid_t pid = fork();
		int st;
		if (pid == 0) {
			int fd = open("/dev/null", 1);
			if (fd >= 0)
				dup2(fd, 2);
			execl("/usr/bin/man", "man", "-w", page, (char *)NULL);
			_exit(127);
		}
		if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
		    WEXITSTATUS(st) == 0) {
			execl("/usr/bin/man", "man", page, (char *)NULL);
		}
	}
	execl(path, page, "--help", (char *)NULL);
	fprintf(stderr, "%s: cannot run %s: %s\n", PROG, path,
	    strerror(errno));
	return 126;
}

int
main(int argc, char *argv[])
{
	const char	*a;

	if (argc < 2) {
		fputs(usage_text, stderr);
		return 64;
	}
	a = argv[1];
	if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0)
		return help(NULL);
	if (strcmp(a, "--version") == 0) {
		printf("sbx %s\n", SBX_VERSION);
		return 0;
	}
	if (strcmp(a, "--list-commands") == 0)
		return list_commands();
	if (strcmp(a, "help") == 0)
		return help(argc > 2 ? argv[2] : NULL);
	if (a[0] == '-') {
		fprintf(stderr, "%s: unknown option %s\n", PROG, a);
		fputs(usage_text, stderr);
		return 64;
	}
	/* Aliases: `sbx status` is `sbx provision status`. */
	if (strcmp(a, "status") == 0) {
		char	**nargv = calloc((size_t)argc + 2, sizeof(*nargv));
		int	  i;

		if (nargv == NULL)
			return 71;
		nargv[0] = "provision";
		nargv[1] = "status";
		for (i = 2; i < argc; i++)
			nargv[i] = argv[i];
		run("provision", argc, nargv);
	}
	run(a, argc - 1, argv + 1);
}
