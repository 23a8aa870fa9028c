/* tools.c: vetted absolute paths for helper programs. */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools.h"

static const char *const tool_dirs[] = {
	"/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin",
};

static const char *
tool_package(const char *name)
{
	if (strcmp(name, "bwrap") == 0)
		return "bubblewrap";
	if (strcmp(name, "rg") == 0)
		return "ripgrep";
	return name;
}

int
sbx_tools_find(const char *name, const char *env, char **out,
    struct sbx_error *e)
{
	char		 path[PATH_MAX];
	struct stat	 st;
	const char	*v;
	size_t		 i;
	int		 untrusted = 0;

	*out = NULL;
	v = env ? secure_getenv(env) : NULL;
	if (v != NULL && *v != '\0') {
		if (*v != '/')
			return sbx_error_set(e, SBX_K_INVALID_ARGS, env,
			    "not_absolute", "%s must be an absolute path", env);
		if (stat(v, &st) == -1 || !S_ISREG(st.st_mode) ||
		    access(v, X_OK) == -1) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, env,
			    "tool_missing", "%s (from %s) is not an "
			    "executable file", v, env);
			sbx_error_hint(e, "unset %s, or run scripts/deps.sh "
			    "(Debian package %s)", env, tool_package(name));
			return -1;
		}
		if ((*out = strdup(v)) == NULL)
			return sbx_error_sys(e, "nomem", "strdup");
		return 0;
	}
	for (i = 0; i < sizeof(tool_dirs) / sizeof(*tool_dirs); i++) {
		snprintf(path, sizeof(path), "%s/%s", tool_dirs[i], name);
		if (stat(path, &st) == -1 || !S_ISREG(st.st_mode))
			continue;
		/* A helper anyone but root can rewrite is a way to run code
		 * outside the sandbox; skip it rather than run it. */
		if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH))) {
			untrusted = 1;
			continue;
		}
		if (access(path, X_OK) == -1)
			continue;
		if ((*out = strdup(path)) == NULL)
			return sbx_error_sys(e, "nomem", "strdup");
		return 0;
	}
	sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
	    untrusted ? "tool_untrusted" : "tool_missing",
	    untrusted ? "%s is installed but not owned by root or writable by "
	    "others; refusing to use it" : "%s is not installed", name);
	sbx_error_hint(e, "run scripts/deps.sh, or apt-get install %s",
	    tool_package(name));
	return -1;
}

char *
sbx_tools_self_dir(void)
{
	char	 buf[PATH_MAX];
	ssize_t	 n;
	char	*slash;

	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	if ((slash = strrchr(buf, '/')) == NULL)
		return NULL;
	if (slash == buf)
		slash++;
	*slash = '\0';
	return strdup(buf);
}
