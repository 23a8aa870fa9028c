/*
 * install.c: the decisions of sbx install that need no sandbox: managers,
 * request validation, failure classes, the manifest and the locks.
 *
 * Package names end up in a package manager's argv (never in a shell),
 * but a manager reads options and URLs out of its operands: a name that
 * starts with `-` is an option to it, `git+https://...` makes npm clone
 * and run a repository's scripts, `foo-` makes apt remove foo.  So each
 * manager gets a grammar of its own, narrower than what it accepts, and
 * anything outside it is refused before anything runs.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "identity.h"
#include "install.h"
#include "layout.h"
#include "netpolicy.h"
#include "rootfs.h"
#include "utf8.h"

static const char *const mgr_names[SBX_INSTALL_NMGR] = { "apt", "npm", "pip" };

int
sbx_install_manager(const char *s, struct sbx_error *e)
{
	int i;

	for (i = 0; s != NULL && i < SBX_INSTALL_NMGR; i++)
		if (strcmp(s, mgr_names[i]) == 0)
			return i;
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "manager",
	    s == NULL ? "missing_argument" : "unknown_manager",
	    "argument `manager` must be apt, npm or pip");
}

const char *
sbx_install_manager_name(int m)
{
	return m >= 0 && m < SBX_INSTALL_NMGR ? mgr_names[m] : "?";
}

/* ASCII classes, byte-wise: no locale, no look-alikes. */
static int
is_lower_digit(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static int
is_alnum(int c)
{
	return is_lower_digit(c) || (c >= 'A' && c <= 'Z');
}

static int
all_in(const char *s, size_t n, const char *extra, int upper)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (!(upper ? is_alnum((unsigned char)s[i]) :
		    is_lower_digit((unsigned char)s[i])) &&
		    strchr(extra, s[i]) == NULL)
			return 0;
	return 1;
}

/* Does s look like a URL, a VCS reference or a local path to a manager? */
static int
url_like(int mgr, const char *s)
{
	static const char *const npm_pfx[] = { "git+", "git:", "file:",
	    "http:", "https:", "github:", "gitlab:", "bitbucket:", "gist:",
	    "link:", "npm:", "workspace:", ".", "/", "~", NULL };
	const char *const	*p;
	const char		*at;

	if (strstr(s, "://") != NULL)
		return 1;
	switch (mgr) {
	case SBX_INSTALL_NPM:
		for (p = npm_pfx; *p != NULL; p++)
			if (strncasecmp(s, *p, strlen(*p)) == 0)
				return 1;
		/* A spec after the name may be one as well: x@git+ssh:..,
		 * x@file:.., x@npm:other; "user/repo" is GitHub. */
		at = *s == '@' ? strchr(s + 1, '@') : strchr(s, '@');
		if (at != NULL)
			for (p = npm_pfx; *p != NULL; p++)
				if (strncasecmp(at + 1, *p, strlen(*p)) == 0 &&
				    **p != '~')
					return 1;
		if (*s != '@' && strchr(s, '/') != NULL)
			return 1;
		if (strchr(s, ':') != NULL)
			return 1;
		return 0;
	case SBX_INSTALL_PIP:
		/* name @ URL (PEP 440 direct references), archives and
		 * paths. */
		return strchr(s, '@') != NULL || strchr(s, '/') != NULL ||
		    *s == '.' || *s == '~';
	default:
		/* apt: a path to a .deb ("./x.deb", "/tmp/x.deb"). */
		return strchr(s, '/') != NULL &&
		    (*s == '.' || *s == '/' || *s == '~');
	}
}

/* A refusal of packages[i]: the message names the field, never the
 * package itself (it may hold anything). */
static int bad(struct sbx_error *, const char *, const char *, const char *,
    ...) __attribute__((format(printf, 4, 5)));

static int
bad(struct sbx_error *e, const char *field, const char *reason, const char *fmt,
    ...)
{
	va_list ap;

	sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason, "%s", "");
	va_start(ap, fmt);
	vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
	return -1;
}

/* Debian: NAME (policy 5.6.1: [a-z0-9][a-z0-9+.-]+), :ARCH, then
 * =VERSION or /RELEASE. */
static int
apt_check(const char *s, const char *field, struct sbx_error *e)
{
	size_t	 n = strlen(s), k;
	const char *rest;

	k = strcspn(s, ":=/");
	if (k > 0 && (s[k - 1] == '+' || s[k - 1] == '-') && s[k] == '\0')
		return bad(e, field, "action_suffix", "argument `%s`: a "
		    "trailing + or - is an apt action (install, remove), not "
		    "part of a name; give NAME/RELEASE or NAME=VERSION for a "
		    "package whose name ends in one", field);
	if (k < 2 || !is_lower_digit((unsigned char)s[0]) ||
	    !all_in(s, k, "+.-", 0))
		return bad(e, field, "invalid_name", "argument `%s` is not a "
		    "Debian package name ([a-z0-9][a-z0-9+.-]+, then "
		    ":ARCH, =VERSION or /RELEASE)", field);
	rest = s + k;
	if (*rest == ':') {
		k = strcspn(rest + 1, "=/");
		if (k == 0 || !all_in(rest + 1, k, "-", 0))
			return bad(e, field, "invalid_name", "argument `%s`: "
			    "bad architecture after the name", field);
		rest += 1 + k;
	}
	if (*rest == '=') {
		rest++;
		if (*rest == '\0' || !is_alnum((unsigned char)*rest) ||
		    !all_in(rest, strlen(rest), ".+~:-", 1))
			return bad(e, field, "invalid_version", "argument "
			    "`%s`: a Debian version is [0-9A-Za-z.+~:-]",
			    field);
	} else if (*rest == '/') {
		rest++;
		if (*rest == '\0' || !all_in(rest, strlen(rest), ".+_-", 1))
			return bad(e, field, "invalid_version", "argument "
			    "`%s`: a release is [0-9A-Za-z.+_-]", field);
	}
	(void)n;
	return 0;
}

/* PEP 508 name: letters, digits, . _ -, starting and ending with a letter
 * or digit.  Returns its length, or 0. */
static size_t
pep508_name(const char *s)
{
	size_t	 k = 0;

	while (is_alnum((unsigned char)s[k]) || s[k] == '.' || s[k] == '_' ||
	    s[k] == '-')
		k++;
	if (k == 0 || !is_alnum((unsigned char)s[0]) ||
	    !is_alnum((unsigned char)s[k - 1]))
		return 0;
	return k;
}

/* One PEP 440 specifier clause: OP VERSION.  Returns its length or 0. */
static size_t
pep440_clause(const char *s)
{
	static const char *const ops[] = { "===", "~=", "==", "!=", "<=",
	    ">=", "<", ">", NULL };
	size_t	 i, k = 0, v;

	for (i = 0; ops[i] != NULL; i++)
		if (strncmp(s, ops[i], strlen(ops[i])) == 0) {
			k = strlen(ops[i]);
			break;
		}
	if (k == 0)
		return 0;
	for (v = k; is_alnum((unsigned char)s[v]) || strchr(".*+!_-",
	    s[v]) != NULL; v++)
		if (s[v] == '\0')
			break;
	return v > k ? v : 0;
}

static int
pip_check(const char *s, const char *field, struct sbx_error *e)
{
	size_t	 k, c;

	if (strchr(s, ';') != NULL)
		return bad(e, field, "markers_not_supported", "argument `%s`: "
		    "environment markers (`; ...`) are not accepted", field);
	if ((k = pep508_name(s)) == 0)
		return bad(e, field, "invalid_name", "argument `%s` is not a "
		    "Python requirement (NAME[EXTRAS][SPECIFIERS], PEP 508)",
		    field);
	s += k;
	if (*s == '[') {
		for (s++;;) {
			if ((k = pep508_name(s)) == 0)
				return bad(e, field, "invalid_name", "argument "
				    "`%s`: bad extras ([a,b])", field);
			s += k;
			if (*s == ',') {
				s++;
				continue;
			}
			if (*s++ != ']')
				return bad(e, field, "invalid_name", "argument "
				    "`%s`: bad extras ([a,b])", field);
			break;
		}
	}
	if (*s == '\0')
		return 0;
	for (;;) {
		if ((c = pep440_clause(s)) == 0)
			return bad(e, field, "invalid_version", "argument "
			    "`%s`: bad version specifier (==1.0, >=2,<3, "
			    "~=1.4)", field);
		s += c;
		if (*s == '\0')
			return 0;
		if (*s++ != ',')
			return bad(e, field, "invalid_version", "argument "
			    "`%s`: bad version specifier (==1.0, >=2,<3, "
			    "~=1.4)", field);
	}
}

/* npm: [@scope/]name[@spec], names of the registry's grammar (lowercase
 * for new names; old ones may hold capitals), a tag or a semver range. */
static int
npm_check(const char *s, const char *field, struct sbx_error *e)
{
	const char	*name = s, *at, *sl;
	size_t		 k;

	if (*s == '@') {
		sl = strchr(s, '/');
		if (sl == NULL || sl == s + 1 || !all_in(s + 1, (size_t)(sl -
		    s - 1), "-._~", 0) || s[1] == '.' || s[1] == '_')
			return bad(e, field, "invalid_name", "argument `%s`: "
			    "bad scope (@scope/name)", field);
		name = sl + 1;
	}
	at = strchr(name, '@');
	k = at != NULL ? (size_t)(at - name) : strlen(name);
	if (k == 0 || k > 214 || name[0] == '.' || name[0] == '_' ||
	    !all_in(name, k, "-._~", 1))
		return bad(e, field, "invalid_name", "argument `%s` is not an "
		    "npm package name ([@scope/]name[@version|@tag])", field);
	if (at == NULL)
		return 0;
	at++;
	if (*at == '\0' || !all_in(at, strlen(at), ".-_^~<>=*|+ ", 1))
		return bad(e, field, "invalid_version", "argument `%s`: the "
		    "part after @ must be a tag or a semver range", field);
	return 0;
}

int
sbx_install_validate(int mgr, char *const *pkgs, int n, int allow_url,
    struct sbx_error *e)
{
	static char	 field[32];
	const char	*s;
	int		 i, rc;
	size_t		 j, len;

	if (n <= 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "packages",
		    "no_packages", "name at least one package");
	if (n > SBX_INSTALL_MAX_PKGS)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "packages",
		    "too_many_packages", "at most %d packages per install",
		    SBX_INSTALL_MAX_PKGS);
	for (i = 0; i < n; i++) {
		s = pkgs[i];
		snprintf(field, sizeof(field), "packages[%d]", i);
		len = strlen(s);
		if (len == 0)
			return bad(e, field, "invalid_name", "argument `%s` is "
			    "empty", field);
		if (len > SBX_INSTALL_MAX_PKG_LEN)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
			    "too_long", "argument `%s` is longer than %d "
			    "bytes", field, SBX_INSTALL_MAX_PKG_LEN);
		for (j = 0; j < len; j++)
			if ((unsigned char)s[j] < 0x20 || s[j] == 0x7f)
				return bad(e, field, "control_character",
				    "argument `%s` holds a control character",
				    field);
		if (*s == '-')
			return bad(e, field, "option_like", "argument `%s`: "
			    "package-manager options are not accepted as "
			    "package names", field);
		if (url_like(mgr, s)) {
			if (allow_url)
				continue;
			return bad(e, field, "url_not_allowed", "argument "
			    "`%s`: URLs, VCS references and local paths are "
			    "refused without --allow-url", field);
		}
		if (mgr == SBX_INSTALL_APT)
			rc = apt_check(s, field, e);
		else if (mgr == SBX_INSTALL_PIP)
			rc = pip_check(s, field, e);
		else
			rc = npm_check(s, field, e);
		if (rc == -1)
			return -1;
	}
	return 0;
}

char *
sbx_install_pkg_name(int mgr, const char *s)
{
	size_t	 k;

	switch (mgr) {
	case SBX_INSTALL_APT:
		k = strcspn(s, ":=/");
		break;
	case SBX_INSTALL_PIP:
		k = pep508_name(s);
		if (k == 0)	/* a URL under --allow-url: as given */
			k = strlen(s);
		break;
	default:
		k = strcspn(s + (*s == '@'), "@") + (*s == '@');
		break;
	}
	return strndup(s, k);
}

/*
 * Failure classification.  Patterns are matched in order, first match
 * wins, so specific signatures (No space left) come before generic ones
 * (an OSError).  `transient` marks the signatures the issue names as
 * races or hiccups a cleanup and one retry cure.
 */
struct pattern {
	const char	*needle;
	const char	*cls;
	int		 transient;
};

static const struct pattern npm_pat[] = {
	{ "ENOSPC", SBX_INSTALL_C_DISK_FULL, 0 },
	{ "Tracker \"idealTree\" already exists", SBX_INSTALL_C_LOCK, 1 },
	{ "ELOCKED", SBX_INSTALL_C_LOCK, 1 },
	{ "ENOTEMPTY", SBX_INSTALL_C_LOCK, 1 },
	{ "EEXIST", SBX_INSTALL_C_LOCK, 1 },
	{ "E404", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "is not in this registry", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "ETARGET", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "No matching version found", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "ERESOLVE", SBX_INSTALL_C_RESOLUTION, 0 },
	{ "EACCES", SBX_INSTALL_C_PERMISSION, 0 },
	{ "EPERM", SBX_INSTALL_C_PERMISSION, 0 },
	{ "E403", SBX_INSTALL_C_PERMISSION, 0 },
	{ "ENOTFOUND", SBX_INSTALL_C_NETWORK, 0 },
	{ "EAI_AGAIN", SBX_INSTALL_C_NETWORK, 0 },
	{ "ECONNREFUSED", SBX_INSTALL_C_NETWORK, 0 },
	{ "ECONNRESET", SBX_INSTALL_C_NETWORK, 0 },
	{ "ETIMEDOUT", SBX_INSTALL_C_NETWORK, 0 },
	{ "ERR_SOCKET_TIMEOUT", SBX_INSTALL_C_NETWORK, 0 },
	{ "E502", SBX_INSTALL_C_NETWORK, 0 },
	{ "E503", SBX_INSTALL_C_NETWORK, 0 },
	{ "network", SBX_INSTALL_C_NETWORK, 0 },
	{ NULL, NULL, 0 }
};

static const struct pattern pip_pat[] = {
	{ "No space left on device", SBX_INSTALL_C_DISK_FULL, 0 },
	{ "[Errno 28]", SBX_INSTALL_C_DISK_FULL, 0 },
	{ "ReadTimeoutError", SBX_INSTALL_C_NETWORK, 1 },
	{ "Permission denied", SBX_INSTALL_C_PERMISSION, 0 },
	{ "[Errno 13]", SBX_INSTALL_C_PERMISSION, 0 },
	{ "Could not install packages due to an OSError",
	    SBX_INSTALL_C_UNKNOWN, 1 },
	{ "ResolutionImpossible", SBX_INSTALL_C_RESOLUTION, 0 },
	{ "conflicting dependencies", SBX_INSTALL_C_RESOLUTION, 0 },
	{ "No matching distribution found", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "Could not find a version that satisfies",
	    SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "NewConnectionError", SBX_INSTALL_C_NETWORK, 0 },
	{ "ProxyError", SBX_INSTALL_C_NETWORK, 0 },
	{ "ConnectionError", SBX_INSTALL_C_NETWORK, 0 },
	{ "Max retries exceeded", SBX_INSTALL_C_NETWORK, 0 },
	{ NULL, NULL, 0 }
};

static const struct pattern apt_pat[] = {
	{ "No space left on device", SBX_INSTALL_C_DISK_FULL, 0 },
	{ "Could not get lock", SBX_INSTALL_C_LOCK, 1 },
	{ "Unable to acquire the dpkg frontend lock", SBX_INSTALL_C_LOCK, 0 },
	{ "Temporary failure resolving", SBX_INSTALL_C_NETWORK, 1 },
	{ "Hash Sum mismatch", SBX_INSTALL_C_NETWORK, 1 },
	{ "Unable to locate package", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "has no installation candidate", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "Version '", SBX_INSTALL_C_NOT_FOUND, 0 },
	{ "Unmet dependencies", SBX_INSTALL_C_RESOLUTION, 0 },
	{ "held broken packages", SBX_INSTALL_C_RESOLUTION, 0 },
	{ "are you root?", SBX_INSTALL_C_PERMISSION, 0 },
	{ "Permission denied", SBX_INSTALL_C_PERMISSION, 0 },
	{ "Operation not permitted", SBX_INSTALL_C_PERMISSION, 0 },
	{ "Failed to fetch", SBX_INSTALL_C_NETWORK, 0 },
	{ "Could not connect", SBX_INSTALL_C_NETWORK, 0 },
	{ "Connection failed", SBX_INSTALL_C_NETWORK, 0 },
	{ NULL, NULL, 0 }
};

static const struct pattern *const patterns[SBX_INSTALL_NMGR] = {
	apt_pat, npm_pat, pip_pat
};

void
sbx_install_classify(int mgr, int code, const char *out, size_t len,
    struct sbx_install_class *c)
{
	const struct pattern	*p;

	c->cls = SBX_INSTALL_C_UNKNOWN;
	c->retryable = 0;
	c->transient = NULL;
	if (code == 0 || mgr < 0 || mgr >= SBX_INSTALL_NMGR)
		return;
	for (p = patterns[mgr]; out != NULL && p->needle != NULL; p++)
		if (memmem(out, len, p->needle, strlen(p->needle)) != NULL) {
			c->cls = p->cls;
			if (p->transient)
				c->transient = p->needle;
			break;
		}
	/* pip and npm exit 1 for everything; apt 100.  A signal (128+n)
	 * or a sandbox failure says nothing about the package. */
	c->retryable = strcmp(c->cls, SBX_INSTALL_C_NETWORK) == 0 ||
	    strcmp(c->cls, SBX_INSTALL_C_LOCK) == 0;
}

/* Manifest. */

static int
name_cmp(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int	    r = strcasecmp(x, y);

	return r != 0 ? r : strcmp(x, y);
}

/* The names of arr (strings, trimmed, non-empty) deduplicated
 * case-insensitively and sorted, as a new array. */
static json_t *
names_clean(const json_t *arr, const json_t *more)
{
	const json_t *src[2] = { arr, more };
	char	    **v = NULL, *s, **nv;
	const char   *t;
	size_t	      n = 0, i, j, k, l;
	json_t	     *out, *it;

	for (k = 0; k < 2; k++) {
		if (!json_is_array(src[k]))
			continue;
		json_array_foreach (src[k], i, it) {
			if (!json_is_string(it))
				continue;
			t = json_string_value(it);
			while (*t == ' ' || *t == '\t')
				t++;
			l = strlen(t);
			while (l > 0 &&
			    (t[l - 1] == ' ' || t[l - 1] == '\t' ||
				t[l - 1] == '\n' || t[l - 1] == '\r'))
				l--;
			if (l == 0 || l > SBX_INSTALL_MAX_PKG_LEN)
				continue;
			for (j = 0; j < n; j++)
				if (strncasecmp(v[j], t, l) == 0 &&
				    v[j][l] == '\0')
					break;
			if (j < n)
				continue;
			if ((s = strndup(t, l)) == NULL ||
			    (nv = reallocarray(v, n + 1, sizeof(*v))) == NULL) {
				free(s);
				goto fail;
			}
			v = nv;
			v[n++] = s;
		}
	}
	if (n > 0)
		qsort(v, n, sizeof(*v), name_cmp);
	out = json_array();
	for (i = 0; out != NULL && i < n; i++)
		json_array_append_new(out, json_string(v[i]));
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return out;
fail:
	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return NULL;
}

json_t *
sbx_install_manifest_normalize(const json_t *m)
{
	json_t	*out = json_object(), *a;
	int	 i;

	for (i = 0; out != NULL && i < SBX_INSTALL_NMGR; i++) {
		a = names_clean(json_is_object(m) ? json_object_get(m,
		    mgr_names[i]) : NULL, NULL);
		if (a == NULL || json_object_set_new(out, mgr_names[i], a)) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}

void
sbx_install_manifest_named(struct sbx_error *e, const char *agent)
{
	char rel[SBX_LAYOUT_PATH_MAX];

	SBX_LPATH(rel, SBX_L_AGENT_INSTALLED, agent);
	sbx_error_in_file(e, rel,
	    "sbx install reconcile --agent %s rebuilds "
	    "it from what is installed",
	    agent);
}

json_t *
sbx_install_manifest_read(int agentfd, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct stat	 st;
	json_t		*j, *m;

	if (fstatat(agentfd, SBX_INSTALL_MANIFEST, &st,
	    AT_SYMLINK_NOFOLLOW) == -1 && errno == ENOENT)
		return sbx_install_manifest_normalize(NULL);
	if (sbx_fs_read_file_at(agentfd, SBX_INSTALL_MANIFEST,
		SBX_INSTALL_MANIFEST_MAX, &b, e) == -1) {
		if (e->sys_errno == EFBIG) {
			/* Past its cap: damaged too (sbx never writes one
			 * that large), so reconcile may rebuild it. */
			sbx_error_set(e, SBX_K_REJECTED, "manifest",
			    "manifest_invalid", "%s is larger than %u bytes",
			    SBX_INSTALL_MANIFEST,
			    (unsigned)SBX_INSTALL_MANIFEST_MAX);
			sbx_error_hint(e,
			    "`sbx install reconcile` rebuilds "
			    "it from what is installed");
		}
		return NULL;
	}
	j = sbx_json_parse(b.p ? b.p : "", b.len, SBX_INSTALL_MANIFEST_MAX, e);
	sbx_buf_release(&b);
	if (j == NULL || !json_is_object(j)) {
		json_decref(j);
		sbx_error_set(e, SBX_K_REJECTED, "manifest",
		    "manifest_invalid", "%s is not a JSON object",
		    SBX_INSTALL_MANIFEST);
		sbx_error_hint(e, "`sbx install reconcile` rebuilds it from "
		    "what is installed");
		return NULL;
	}
	m = sbx_install_manifest_normalize(j);
	json_decref(j);
	return m;
}

int
sbx_install_manifest_set(json_t *m, int mgr, const json_t *names)
{
	json_t	*a;

	if ((a = names_clean(names, NULL)) == NULL)
		return -1;
	return json_object_set_new(m, mgr_names[mgr], a);
}

int
sbx_install_manifest_add(json_t *m, int mgr, char *const *specs, int n)
{
	json_t	*more = json_array(), *a;
	char	*s;
	int	 i;

	for (i = 0; more != NULL && i < n; i++) {
		if ((s = sbx_install_pkg_name(mgr, specs[i])) == NULL)
			break;
		json_array_append_new(more, json_string(s));
		free(s);
	}
	if (more == NULL || i < n) {
		json_decref(more);
		return -1;
	}
	a = names_clean(json_object_get(m, mgr_names[mgr]), more);
	json_decref(more);
	if (a == NULL)
		return -1;
	return json_object_set_new(m, mgr_names[mgr], a);
}

int
sbx_install_manifest_write(int agentfd, const json_t *m, struct sbx_error *e)
{
	char *s;
	int   rc;

	if ((s = json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT)) == NULL)
		return sbx_error_sys(e, "out_of_memory",
		    "cannot encode the "
		    "manifest");
	rc = sbx_fs_write_atomic(agentfd, SBX_INSTALL_MANIFEST, s, strlen(s),
	    0600, e);
	free(s);
	return rc;
}

static void
on_alarm(int sig)
{
	(void)sig;
}

int
sbx_install_lock(int dirfd, const char *name, int wait_s, struct sbx_error *e)
{
	struct sigaction sa, old;
	int		 fd, rc, saved;

	fd = openat(dirfd, name,
	    O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd == -1)
		return sbx_error_sys(e, "lock_failed",
		    "cannot open the "
		    "install lock %s",
		    name);
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno != EWOULDBLOCK || wait_s <= 0)
		goto busy;
	/* Wait with a bound: an alarm interrupts flock (no SA_RESTART). */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	alarm((unsigned)wait_s);
	rc = flock(fd, LOCK_EX);
	saved = errno;
	alarm(0);
	sigaction(SIGALRM, &old, NULL);
	if (rc == 0)
		return fd;
	errno = saved;
busy:
	close(fd);
	sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "install_locked",
	    "another install holds %s", name);
	sbx_error_hint(e, "wait for it to finish, then try again");
	return -1;
}

char *
sbx_install_log_tail(const char *out, size_t len, size_t cap)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*p = out, *nl;
	size_t		 n = len;

	if (out == NULL)
		return strdup("");
	if (n > cap) {
		p = out + (len - cap);
		n = cap;
		/* Start on a line where one begins in the first quarter. */
		if ((nl = memchr(p, '\n', cap / 4)) != NULL) {
			n -= (size_t)(nl + 1 - p);
			p = nl + 1;
		}
	}
	if (sbx_utf8_sanitize(&b, p, n) == -1 || b.p == NULL) {
		sbx_buf_release(&b);
		return strdup("");
	}
	return sbx_buf_detach(&b);
}

int
sbx_install_url_host(const char *url, char host[254], unsigned *port,
    int *https)
{
	const char	*h, *end, *colon;
	char		 norm[SBX_NP_HOST_MAX + 1];
	size_t		 n;

	if (strncmp(url, "https://", 8) == 0) {
		*https = 1;
		h = url + 8;
	} else if (strncmp(url, "http://", 7) == 0) {
		*https = 0;
		h = url + 7;
	} else
		return -1;
	end = h + strcspn(h, "/?#");
	/* user:password@ would end up in logs and in argv. */
	if (memchr(h, '@', (size_t)(end - h)) != NULL)
		return -1;
	colon = memchr(h, ':', (size_t)(end - h));
	n = (size_t)((colon != NULL ? colon : end) - h);
	if (n == 0 || sbx_np_host(h, n, norm) != NULL)
		return -1;
	*port = *https ? 443 : 80;
	if (colon != NULL && sbx_np_port(colon + 1, (size_t)(end - colon - 1),
	    port) == -1)
		return -1;
	/* Printable ASCII only: the URL goes into the sandbox's
	 * environment and into messages. */
	for (n = 0; url[n] != '\0'; n++)
		if ((unsigned char)url[n] <= 0x20 || url[n] == 0x7f ||
		    (unsigned char)url[n] >= 0x80)
			return -1;
	snprintf(host, 254, "%s", norm);
	return 0;
}

static int
reg_add(struct sbx_install_reg *r, const char *url, int first)
{
	char		 h[254];
	unsigned	 port;
	int		 https, i;

	if (strlen(url) >= sizeof(r->url) ||
	    sbx_install_url_host(url, h, &port, &https) == -1)
		return -1;
	if (first) {
		snprintf(r->url, sizeof(r->url), "%s", url);
		r->plain_http = !https;
	}
	for (i = 0; i < r->nhosts; i++)
		if (strcmp(r->host[i], h) == 0 && r->port[i] == port)
			return 0;
	if (r->nhosts == SBX_INSTALL_MAX_HOSTS)
		return -1;
	snprintf(r->host[r->nhosts], sizeof(r->host[0]), "%s", h);
	r->port[r->nhosts++] = port;
	return 0;
}

int
sbx_install_registry(const json_t *cfg, int mgr, struct sbx_install_reg *r,
    struct sbx_error *e)
{
	static const char *const defaults[SBX_INSTALL_NMGR][3] = {
		{ NULL, NULL, NULL },
		{ "https://registry.npmjs.org/", NULL, NULL },
		{ "https://pypi.org/simple/", "https://files.pythonhosted.org/",
		    NULL },
	};
	const json_t	*v, *it;
	size_t		 i;

	memset(r, 0, sizeof(*r));
	v = json_object_get(json_object_get(json_object_get(cfg, "install"),
	    "registries"), mgr_names[mgr]);
	if (v == NULL) {
		for (i = 0; defaults[mgr][i] != NULL; i++)
			(void)reg_add(r, defaults[mgr][i], i == 0);
		return 0;
	}
	/* One URL alone, as npm's own `registry` setting is written, is
	 * that registry and no more hosts. */
	if (json_is_string(v)) {
		if (reg_add(r, json_string_value(v), 1) == -1)
			goto bad;
	} else if (!json_is_array(v) || json_array_size(v) == 0 ||
	    json_array_size(v) > SBX_INSTALL_MAX_HOSTS)
		goto bad;
	json_array_foreach (v, i, it)
		if (!json_is_string(it) ||
		    reg_add(r, json_string_value(it), i == 0) == -1)
			goto bad;
	if (mgr == SBX_INSTALL_APT)
		r->url[0] = '\0';
	return 0;
bad:
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "config/sandbox.json: install.registries.%s "
	    "must be a URL or an array of 1 to %d URLs "
	    "http(s)://HOST[:PORT]/PATH (a host name, no credentials)",
	    mgr_names[mgr],
	    SBX_INSTALL_MAX_HOSTS);
}

int
sbx_install_config_check(const json_t *cfg, struct sbx_error *e)
{
	struct sbx_install_reg	 r;
	int			 m;

	for (m = 0; m < SBX_INSTALL_NMGR; m++)
		if (sbx_install_registry(cfg, m, &r, e) == -1)
			return -1;
	return 0;
}

/*
 * One URI of a sources file: http(s) only (file:, cdrom:, mirror+...
 * need no proxy or are not followed).  -1 when the table is full.
 */
static int
apt_uri(struct sbx_install_reg *r, const char *s, size_t n)
{
	char u[512];

	if (n == 0 || n >= sizeof(u))
		return 0;
	memcpy(u, s, n);
	u[n] = '\0';
	if (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0)
		return 0;
	/* A URI sbx cannot judge (credentials, an IP literal) adds no
	 * host: the run then fails on the proxy, said in its log. */
	if (reg_add(r, u, 0) == -1 && r->nhosts == SBX_INSTALL_MAX_HOSTS)
		return -1;
	return 0;
}

int
sbx_install_apt_sources(const char *text, int deb822, struct sbx_install_reg *r)
{
	const char *l, *nl, *p, *q, *end;

	for (l = text; l != NULL && *l != '\0';
	     l = nl != NULL ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		end = nl != NULL ? nl : l + strlen(l);
		for (p = l; p < end && (*p == ' ' || *p == '\t'); p++)
			;
		if (deb822) {
			/* URIs: a b c, continuation lines not used by
			 * apt for URIs in practice. */
			if ((size_t)(end - p) < 5 ||
			    strncasecmp(p, "URIs:", 5) != 0)
				continue;
			p += 5;
		} else {
			/* deb [opts] URI suite comp... */
			if (strncmp(p, "deb ", 4) == 0 ||
			    strncmp(p, "deb\t", 4) == 0)
				p += 4;
			else if (strncmp(p, "deb-src", 7) == 0 &&
			    (p[7] == ' ' || p[7] == '\t'))
				p += 8;
			else
				continue;
			while (p < end && (*p == ' ' || *p == '\t'))
				p++;
			if (p < end && *p == '[') {
				if ((q = memchr(p, ']', (size_t)(end - p))) ==
				    NULL)
					continue;
				p = q + 1;
			}
		}
		for (;;) {
			while (
			    p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
				p++;
			if (p >= end || *p == '#')
				break;
			for (q = p;
			     q < end && *q != ' ' && *q != '\t' && *q != '\r';
			     q++)
				;
			if (apt_uri(r, p, (size_t)(q - p)) == -1)
				return -1;
			p = q;
			if (!deb822)
				break;
		}
	}
	return 0;
}

/*
 * The copy belongs to the uid the sandbox runs as: uid 0 of its user
 * namespace is that uid; the ids of a subordinate range are the
 * packages' own users (keep_*: that range, count 0: none).  Entry by
 * entry, beneath dirfd, never following a symlink.
 */
struct own {
	uid_t	      uid;
	gid_t	      gid;
	unsigned long keep_uid, keep_gid, count;
};

static int
own_tree(int dfd, const struct own *o, int depth, struct sbx_error *e)
{
	DIR	      *d;
	struct dirent *de;
	struct stat    st;
	uid_t	       u;
	gid_t	       g;
	int	       fd, rc = 0;

	if (depth > 64)
		return sbx_error_set(e, SBX_K_REJECTED, "rootfs", "too_deep",
		    "the root file system copy is nested too "
		    "deep");
	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return sbx_error_sys(e, "read_failed", "rootfs");
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		u = st.st_uid - o->keep_uid < o->count ? st.st_uid : o->uid;
		g = st.st_gid - o->keep_gid < o->count ? st.st_gid : o->gid;
		if ((st.st_uid != u || st.st_gid != g) &&
		    fchownat(dfd, de->d_name, u, g, AT_SYMLINK_NOFOLLOW) ==
			-1) {
			rc = sbx_error_sys(e, "chown_failed",
			    "cannot hand "
			    "the root file system copy to uid %u",
			    (unsigned)o->uid);
			break;
		}
		/* chown clears set-id bits; the copy has none (owners and
		 * set-id bits are dropped when an image is added). */
		if (!S_ISDIR(st.st_mode))
			continue;
		if ((fd = openat(dfd, de->d_name,
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) ==
		    -1)
			continue;
		rc = own_tree(fd, o, depth + 1, e);
		close(fd);
	}
	closedir(d);
	return rc;
}

int
sbx_install_rootfs_own(int rootfd, const char *agent, uid_t uid, gid_t gid,
    const struct sbx_subids *sub, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	struct stat	 st;
	struct own	 o;
	char		 rel[SBX_LAYOUT_PATH_MAX], stamp[160];
	int		 envfd, fd, rc = -1;

	memset(&o, 0, sizeof(o));
	o.uid = uid;
	o.gid = gid;
	if (sub != NULL) {
		o.keep_uid = sub->uid;
		o.keep_gid = sub->gid;
		o.count = sub->count;
	}
	SBX_LPATH(rel, SBX_L_ENV, agent);
	if ((envfd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 e)) == -1)
		return -1;
	if ((fd = openat(envfd, "rootfs",
		 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    fstat(fd, &st) == -1) {
		sbx_error_sys(e, "open_failed", "envs/%s/rootfs", agent);
		goto out;
	}
	snprintf(stamp, sizeof(stamp), "%llu %llu %u %u %lu %lu %lu\n",
	    (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
	    (unsigned)uid, (unsigned)gid, o.keep_uid, o.keep_gid, o.count);
	if (sbx_fs_read_file_at(envfd, SBX_ROOTFS_OWN_STAMP, 256, &b, &e2) ==
		0 &&
	    b.p != NULL && strcmp(b.p, stamp) == 0) {
		rc = 0;
		goto out;
	}
	if ((st.st_uid != uid || st.st_gid != gid) &&
	    fchown(fd, uid, gid) == -1) {
		sbx_error_sys(e, "chown_failed",
		    "cannot hand the root file "
		    "system copy to uid %u",
		    (unsigned)uid);
		goto out;
	}
	if (own_tree(fd, &o, 0, e) == -1)
		goto out;
	/* Written once the walk is whole: a killed walk is done again. */
	rc = sbx_fs_write_atomic(envfd, SBX_ROOTFS_OWN_STAMP, stamp,
		 strlen(stamp), 0600, e) == -1 ?
	    -1 :
	    1;
out:
	sbx_buf_release(&b);
	if (fd >= 0)
		close(fd);
	close(envfd);
	return rc;
}
