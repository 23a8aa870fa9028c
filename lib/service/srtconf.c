/*
 * srtconf.c: srt's settings file as an sbx policy (see srtconf.h and
 * sbx-srt(1), which lists every key and what it becomes).
 *
 * The rule of this file: a key is mapped, or refused by name.  srt reads
 * its file with a schema that drops keys it does not know; sbx refuses
 * them, so that a setting the user relies on is never silently without
 * effect (a typo in "denyRead" would otherwise show the file it meant to
 * hide).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "recipe.h"
#include "srtconf.h"

#define MAX_ENTRIES	256
#define MAX_WRITABLE	8	/* sbx exec: --workdir, 8 in all */

/*
 * sbx's safer defaults: credential files srt leaves readable.  Hidden
 * unless allowRead names them (or a directory holding them).
 */
static const char *const hidden_default[] = {
	".ssh", ".aws", ".config/gh", ".netrc", ".gnupg", ".docker",
	".kube", ".bash_history", ".zsh_history", ".python_history",
	".local/share/fish/fish_history", ".node_repl_history",
	".psql_history", ".mysql_history", ".lesshst",
};

/* Keys srt has that sbx does not implement: refused by name. */
static const char *const unsupported_top[] = {
	"credentials", "ripgrep", "seccomp", "bwrapPath", "socatPath",
	"javaAgentJarPath", "windows", "git",
};
static const char *const unsupported_net[] = {
	"deniedDomainReasons", "deniedResolvedAddresses", "httpProxyPort",
	"socksProxyPort", "mitmProxy", "filterRequest",
	"allowPlaintextHeaderSet", "stripResponseHeaders",
	"refuseOpaqueTunnels", "requireHostMatch", "ambiguousRequestTarget",
	"tlsTerminate",
};
/* srt's macOS-only switches: false (their meaning on Linux) or refused. */
static const char *const macos_top[] = {
	"allowPty", "enableWeakerNetworkIsolation", "allowAppleEvents",
};

static int
in_list(const char *k, const char *const *l, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (strcmp(k, l[i]) == 0)
			return 1;
	return 0;
}

#define IN(k, l) in_list((k), (l), sizeof(l) / sizeof((l)[0]))

static void note(struct sbx_srtconf *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void
note(struct sbx_srtconf *c, const char *fmt, ...)
{
	char	 b[1024];
	va_list	 ap;

	if (c == NULL || c->notes == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(b, sizeof(b), fmt, ap);
	va_end(ap);
	json_array_append_new(c->notes, json_string(b));
}

/*
 * The field of an error must outlive the call (struct sbx_error keeps a
 * pointer): the names made here ("network.allowedDomains[2]") are kept in
 * one static buffer, the last error's.  sbx srt is one thread.
 */
static const char *
keep(const char *field)
{
	static char	 b[160];

	snprintf(b, sizeof(b), "%s", field);
	return b;
}

static int
unsupported(struct sbx_error *e, const char *field, const char *why)
{
	sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field), "unsupported_key",
	    "srt setting `%s` is not supported by sbx srt: %s", field, why);
	sbx_error_hint(e, "remove it from the settings file (sbx-srt(1) lists "
	    "what each key becomes)");
	return -1;
}

static int
wrong_type(struct sbx_error *e, const char *field, const char *want)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field), "wrong_type",
	    "srt setting `%s` must be %s", field, want);
}

/* ---- domains ---------------------------------------------------------- */

static int
label_ok(const char *s, size_t n)
{
	size_t	 i;

	if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-')
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		    s[i] == '_'))
			return 0;
	return 1;
}

/* srt's domain pattern: "localhost", a name with a dot, or "*." and a
 * name with a dot ("*.com" is too broad); no scheme, path or wildcard
 * elsewhere. */
static int
host_ok(const char *h, size_t n)
{
	const char	*p, *dot;
	int		 wild = 0, dots = 0;

	if (n == 9 && strncmp(h, "localhost", 9) == 0)
		return 1;
	if (n > 2 && h[0] == '*' && h[1] == '.') {
		wild = 1;
		h += 2;
		n -= 2;
	}
	if (n == 0 || n > 253)
		return 0;
	for (p = h; p < h + n; p = dot + 1) {
		dot = memchr(p, '.', (size_t)(h + n - p));
		if (dot == NULL)
			dot = h + n;
		if (!label_ok(p, (size_t)(dot - p)))
			return 0;
		if (dot < h + n)
			dots++;
	}
	return dots >= 1 && (!wild || dots >= 1);
}

/* An allowedDomains/deniedDomains entry: host, or host:port (1-65535);
 * deny also takes "*" (deny-all).  *port is 0 when none. */
static int
domain_entry(const char *s, int deny, unsigned *port)
{
	const char	*colon = strrchr(s, ':');
	char		*end;
	unsigned long	 v;
	size_t		 n = strlen(s);

	*port = 0;
	if (strstr(s, "://") != NULL || strchr(s, '/') != NULL ||
	    strchr(s, '[') != NULL)
		return 0;
	if (colon != NULL) {
		if (colon[1] < '0' || colon[1] > '9')
			return 0;
		errno = 0;
		v = strtoul(colon + 1, &end, 10);
		if (*end != '\0' || v < 1 || v > 65535 || errno != 0)
			return 0;
		*port = (unsigned)v;
		n = (size_t)(colon - s);
	}
	if (deny && n == 1 && s[0] == '*')
		return 1;
	return host_ok(s, n);
}

static int
domains(const json_t *net, const char *key, int deny, json_t *out,
    int *deny_all, struct sbx_error *e)
{
	const json_t	*v = json_object_get(net, key), *x;
	char		 field[96];
	unsigned	 port;
	size_t		 i;

	if (v == NULL)
		return 0;
	snprintf(field, sizeof(field), "network.%s", key);
	if (!json_is_array(v) || json_array_size(v) > MAX_ENTRIES)
		return wrong_type(e, field, "an array of domain patterns");
	json_array_foreach (v, i, x) {
		const char *s = json_string_value(x);

		snprintf(field, sizeof(field), "network.%s[%zu]", key, i);
		if (s == NULL)
			return wrong_type(e, field, "a string");
		if (!domain_entry(s, deny, &port))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
			    "invalid_domain", "srt setting `%s`: `%s` is not a "
			    "domain pattern (example.com, *.example.com, an "
			    "optional :PORT%s)", field, s, deny ?
			    "; or * to deny all" : "");
		/* "*": nothing gets through; "*:PORT" is sbx's own. */
		if (deny && s[0] == '*' && s[1] == '\0') {
			*deny_all = 1;
			continue;
		}
		json_array_append_new(out, json_string(s));
	}
	return 0;
}

/* ---- paths ------------------------------------------------------------ */

/* An entry of denyRead/allowRead/allowWrite/denyWrite as an absolute,
 * normalised path in out (PATH_MAX): ~ is home, a relative path is under
 * cwd, "." and ".." are resolved in the text; a glob is refused unless
 * the entry is {"path": P, "literal": true}. */
static int
path_entry(const json_t *x, const char *field, const char *home,
    const char *cwd, char *out, struct sbx_error *e)
{
	const char	*s, *p, *q;
	char		 buf[PATH_MAX];
	size_t		 n, len;
	int		 literal = 0;

	if (json_is_object(x)) {
		const char	*k;
		const json_t	*y;

		json_object_foreach ((json_t *)x, k, y)
			if (strcmp(k, "path") != 0 && strcmp(k, "literal") != 0)
				return wrong_type(e, field, "a path, or "
				    "{\"path\": P, \"literal\": true}");
		if (!json_is_true(json_object_get(x, "literal")))
			return wrong_type(e, field, "a path, or "
			    "{\"path\": P, \"literal\": true}");
		x = json_object_get(x, "path");
		literal = 1;
	}
	if ((s = json_string_value(x)) == NULL)
		return wrong_type(e, field, "a path");
	if (*s == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
		    "invalid_path", "srt setting `%s`: a path cannot be empty",
		    field);
	if (strlen(s) != json_string_length(x))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
		    "invalid_path", "srt setting `%s`: the path holds a NUL "
		    "byte", field);
	if (!literal && strpbrk(s, "*?[") != NULL)
		return unsupported(e, field, "glob patterns (sbx hides and "
		    "binds paths, not patterns; give the paths, or "
		    "{\"path\": P, \"literal\": true})");
	if (s[0] == '~' && (s[1] == '\0' || s[1] == '/'))
		len = (size_t)snprintf(buf, sizeof(buf), "%s/%s", home, s + 1);
	else if (s[0] == '/')
		len = (size_t)snprintf(buf, sizeof(buf), "%s", s);
	else
		len = (size_t)snprintf(buf, sizeof(buf), "%s/%s", cwd, s);
	if (len >= sizeof(buf))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
		    "invalid_path", "srt setting `%s`: the path is too long",
		    field);
	/* Normalise component by component. */
	n = 0;
	for (p = buf; *p != '\0'; p = q) {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		q = p + strcspn(p, "/");
		if (q - p == 1 && p[0] == '.')
			continue;
		if (q - p == 2 && p[0] == '.' && p[1] == '.') {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			continue;
		}
		out[n++] = '/';
		memcpy(out + n, p, (size_t)(q - p));
		n += (size_t)(q - p);
	}
	if (n == 0)
		out[n++] = '/';
	out[n] = '\0';
	return 0;
}

static int
is_under(const char *path, const char *dir)
{
	size_t	 n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return 1;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/');
}

static int
paths(const json_t *fs, const char *key, const char *home, const char *cwd,
    struct sbx_strv *out, struct sbx_error *e)
{
	const json_t	*v = json_object_get(fs, key), *x;
	char		 field[96], p[PATH_MAX];
	size_t		 i;

	if (v == NULL)
		return 0;
	snprintf(field, sizeof(field), "filesystem.%s", key);
	if (!json_is_array(v) || json_array_size(v) > MAX_ENTRIES)
		return wrong_type(e, field, "an array of paths");
	json_array_foreach (v, i, x) {
		snprintf(field, sizeof(field), "filesystem.%s[%zu]", key, i);
		if (path_entry(x, field, home, cwd, p, e) == -1)
			return -1;
		if (sbx_strv_push(out, p) == -1)
			return sbx_error_sys(e, "nomem", "%s", field);
	}
	return 0;
}

static int
any_under(const struct sbx_strv *v, const char *path, int reverse)
{
	size_t	 i;

	for (i = 0; i < v->n; i++)
		if (reverse ? is_under(v->v[i], path) : is_under(path,
		    v->v[i]))
			return 1;
	return 0;
}

static int
bool_key(const json_t *o, const char *key, const char *field, int *out,
    struct sbx_error *e)
{
	const json_t	*v = json_object_get(o, key);

	*out = 0;
	if (v == NULL)
		return 0;
	if (!json_is_boolean(v))
		return wrong_type(e, field, "true or false");
	*out = json_is_true(v);
	return 0;
}

/* ---- the sections ----------------------------------------------------- */

static int
map_network(const json_t *net, struct sbx_srtconf *c, json_t *allow,
    json_t *deny, struct sbx_error *e)
{
	static const char *const known[] = { "allowedDomains",
	    "deniedDomains", "allowUnixSockets", "allowAllUnixSockets",
	    "allowLocalBinding", "parentProxy", "strictAllowlist",
	    "allowMachLookup" };
	const char	*k;
	const json_t	*v, *x;
	char		 field[96];
	int		 deny_all = 0, b;
	size_t		 i;

	if (!json_is_object(net))
		return wrong_type(e, "network", "an object");
	json_object_foreach ((json_t *)net, k, v) {
		snprintf(field, sizeof(field), "network.%s", k);
		if (IN(k, unsupported_net))
			return unsupported(e, field, "sbx's proxy has no such "
			    "feature yet");
		if (!IN(k, known))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
			    "unknown_key", "unknown srt setting `%s`", field);
	}
	if (domains(net, "allowedDomains", 0, allow, &deny_all, e) == -1 ||
	    domains(net, "deniedDomains", 1, deny, &deny_all, e) == -1)
		return -1;
	if (deny_all) {
		/* Denied first: nothing allowed can get through. */
		json_array_clear(allow);
		note(c, "network.deniedDomains: \"*\" denies every name: "
		    "allowedDomains has no effect");
	}
	if (bool_key(net, "allowAllUnixSockets", "network.allowAllUnixSockets",
	    &b, e) == -1)
		return -1;
	if (b)
		return unsupported(e, "network.allowAllUnixSockets", "sbx's "
		    "unix-socket guard cannot be switched off; name the "
		    "sockets in allowUnixSockets");
	if ((v = json_object_get(net, "allowUnixSockets")) != NULL) {
		json_t *a = json_array();

		if (!json_is_array(v))
			return json_decref(a), wrong_type(e,
			    "network.allowUnixSockets", "an array of paths");
		json_array_foreach (v, i, x) {
			const char *s = json_string_value(x);

			snprintf(field, sizeof(field),
			    "network.allowUnixSockets[%zu]", i);
			if (s == NULL || s[0] != '/')
				return json_decref(a), wrong_type(e, field,
				    "an absolute path");
			json_array_append_new(a, json_string(s));
		}
		if (json_array_size(a) > 0) {
			json_object_set_new(c->cfg, "allow_unix_sockets", a);
			note(c, "network.allowUnixSockets: allow_unix_sockets "
			    "(sbx guards sockets by path on Linux, where srt "
			    "ignores the list)");
		} else
			json_decref(a);
	}
	if (bool_key(net, "allowLocalBinding", "network.allowLocalBinding", &b,
	    e) == -1)
		return -1;
	note(c, "network.allowLocalBinding: %s", b ? "kept: the command may "
	    "bind the loopback of its own network namespace" : "sbx always "
	    "lets the command bind its own loopback (unreachable from the "
	    "host)");
	if (bool_key(net, "strictAllowlist", "network.strictAllowlist", &b,
	    e) == -1 || bool_key(net, "allowMachLookup",
	    "network.allowMachLookup", &b, e) == -1)
		return -1;
	if (json_object_get(net, "allowMachLookup") != NULL && b)
		return unsupported(e, "network.allowMachLookup", "macOS only");
	if ((v = json_object_get(net, "parentProxy")) != NULL) {
		const char *h, *hs;

		if (!json_is_object(v))
			return wrong_type(e, "network.parentProxy",
			    "an object");
		json_object_foreach ((json_t *)v, k, x) {
			snprintf(field, sizeof(field), "network.parentProxy.%s",
			    k);
			if (strcmp(k, "noProxy") == 0)
				return unsupported(e, field,
				    "sbx's parent proxy takes every connection");
			if (strcmp(k, "http") != 0 && strcmp(k, "https") != 0)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    keep(field), "unknown_key",
				    "unknown srt setting `%s`", field);
			if (!json_is_string(x))
				return wrong_type(e, field, "a URL");
		}
		h = json_string_value(json_object_get(v, "http"));
		hs = json_string_value(json_object_get(v, "https"));
		if (h != NULL && hs != NULL && strcmp(h, hs) != 0)
			return unsupported(e, "network.parentProxy",
			    "one parent for HTTP and another for HTTPS (sbx "
			    "has one `upstream`)");
		if (h == NULL)
			h = hs;
		if (h != NULL) {
			json_object_set_new(c->cfg, "upstream", json_string(h));
			note(c, "network.parentProxy: upstream %s", h);
		}
	}
	return 0;
}

/*
 * The host view: everything read-only but what allowWrite names; hidden
 * what denyRead (and sbx's defaults) name, but what allowRead gives back.
 */
static int
map_filesystem(const json_t *fs, const char *home, const char *cwd,
    struct sbx_srtconf *c, struct sbx_error *e)
{
	static const char *const known[] = { "denyRead", "allowRead",
	    "allowWrite", "denyWrite", "allowGitConfig", "disabled" };
	struct sbx_strv	 dr = SBX_STRV_INIT, ar = SBX_STRV_INIT;
	struct sbx_strv	 aw = SBX_STRV_INIT, dw = SBX_STRV_INIT;
	struct sbx_strv	 deny = SBX_STRV_INIT;
	json_t		*dp, *rp, *pp;
	struct stat	 st;
	char		 field[96], p[PATH_MAX], canon[PATH_MAX];
	const char	*k;
	const json_t	*v;
	size_t		 i, j;
	int		 b, rc = -1, skip;

	if (fs != NULL && !json_is_object(fs))
		return wrong_type(e, "filesystem", "an object");
	json_object_foreach ((json_t *)fs, k, v) {
		snprintf(field, sizeof(field), "filesystem.%s", k);
		if (!IN(k, known))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(field),
			    "unknown_key", "unknown srt setting `%s`", field);
	}
	if (bool_key(fs, "disabled", "filesystem.disabled", &b, e) == -1)
		return -1;
	if (b)
		return unsupported(e, "filesystem.disabled", "sbx never runs "
		    "a command with the host's file system writable");
	if (paths(fs, "denyRead", home, cwd, &dr, e) == -1 ||
	    paths(fs, "allowRead", home, cwd, &ar, e) == -1 ||
	    paths(fs, "allowWrite", home, cwd, &aw, e) == -1 ||
	    paths(fs, "denyWrite", home, cwd, &dw, e) == -1)
		goto out;
	for (i = 0; i < sizeof(hidden_default) / sizeof(*hidden_default);
	    i++) {
		snprintf(p, sizeof(p), "%s/%s", home, hidden_default[i]);
		if (sbx_strv_push(&dr, p) == -1)
			goto nomem;
	}
	dp = json_array();
	rp = json_array();
	pp = json_array();
	json_object_set_new(c->cfg, "deny_paths", dp);
	json_object_set_new(c->cfg, "read_paths", rp);
	json_object_set_new(c->cfg, "protected_paths", pp);
	/* denyRead: hidden, unless allowRead gives it back (an entry
	 * equal to it or holding it).  Only what exists can be hidden;
	 * nothing is there to read otherwise. */
	for (i = 0; i < dr.n; i++) {
		if (any_under(&ar, dr.v[i], 0)) {
			note(c, "denyRead %s: shown (allowRead beats denyRead)",
			    dr.v[i]);
			continue;
		}
		if (lstat(dr.v[i], &st) == -1 || any_under(&deny, dr.v[i], 0))
			continue;
		if (strcmp(dr.v[i], "/") == 0) {
			sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "filesystem.denyRead", "unsupported_value",
			    "srt setting `filesystem.denyRead`: sbx srt "
			    "cannot hide / itself");
			goto out;
		}
		if (sbx_strv_push(&deny, dr.v[i]) == -1)
			goto nomem;
		json_array_append_new(dp, json_string(dr.v[i]));
	}
	/* allowRead inside a hidden path: bound back, read-only. */
	for (i = 0; i < ar.n; i++) {
		if (!any_under(&deny, ar.v[i], 0)) {
			note(c, "allowRead %s: readable already", ar.v[i]);
			continue;
		}
		if (lstat(ar.v[i], &st) == -1) {
			note(c, "allowRead %s: does not exist", ar.v[i]);
			continue;
		}
		json_array_append_new(rp, json_string(ar.v[i]));
	}
	/* allowWrite: writable roots (sbx exec --workdir), directories
	 * that exist, outermost only, canonical. */
	for (i = 0; i < aw.n; i++) {
		if (strcmp(aw.v[i], "/") == 0) {
			sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "filesystem.allowWrite", "unsupported_value",
			    "srt setting `filesystem.allowWrite`: sbx never "
			    "makes the whole host writable (/)");
			goto out;
		}
		skip = 0;
		for (j = 0; j < aw.n; j++)
			if (j != i && is_under(aw.v[i], aw.v[j]) &&
			    (strcmp(aw.v[i], aw.v[j]) != 0 || j < i))
				skip = 1;
		if (skip)
			continue;
		if (stat(aw.v[i], &st) == -1) {
			note(c, "allowWrite %s: does not exist, skipped",
			    aw.v[i]);
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			snprintf(field, sizeof(field), "filesystem.allowWrite");
			unsupported(e, field, "a file: sbx makes directories "
			    "writable; name the directory holding it");
			goto out;
		}
		if (realpath(aw.v[i], canon) == NULL) {
			sbx_error_sys(e, "realpath", "%s", aw.v[i]);
			goto out;
		}
		if (strcmp(canon, aw.v[i]) != 0)
			note(c, "allowWrite %s: is %s", aw.v[i], canon);
		if (c->writable.n == MAX_WRITABLE) {
			sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "filesystem.allowWrite", "unsupported_value",
			    "srt setting `filesystem.allowWrite`: sbx binds "
			    "at most %d writable directories", MAX_WRITABLE);
			goto out;
		}
		if (sbx_strv_push(&c->writable, canon) == -1)
			goto nomem;
	}
	/* denyWrite beats allowWrite: inside a writable root, a protected
	 * entry (sbx exec's protected paths: an existing one is bound
	 * read-only, a missing one cannot be created), relative to the root
	 * and so protected in every writable root; outside, it is read-only
	 * already. */
	for (i = 0; i < dw.n; i++) {
		const char *root = NULL, *rel;

		for (j = 0; j < c->writable.n; j++)
			if (is_under(dw.v[i], c->writable.v[j]))
				root = c->writable.v[j];
		if (root == NULL) {
			note(c, "denyWrite %s: read-only already", dw.v[i]);
			continue;
		}
		if (strcmp(dw.v[i], root) == 0) {
			sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "filesystem.denyWrite", "unsupported_value",
			    "srt setting `filesystem.denyWrite`: %s is a whole "
			    "allowWrite directory; remove it from allowWrite",
			    dw.v[i]);
			goto out;
		}
		rel = dw.v[i] + strlen(root) + (strcmp(root, "/") != 0);
		if (strpbrk(rel, "*?[") != NULL) {
			unsupported(e, "filesystem.denyWrite", "a name with "
			    "*, ? or [ inside a writable directory (sbx "
			    "protects names by pattern)");
			goto out;
		}
		json_array_append_new(pp, json_string(rel));
		note(c, "denyWrite %s: protected as %s in every writable "
		    "directory", dw.v[i], rel);
	}
	if (json_array_size(pp) == 0)
		json_object_del(c->cfg, "protected_paths");
	if (json_array_size(rp) == 0)
		json_object_del(c->cfg, "read_paths");
	if (json_array_size(dp) == 0)
		json_object_del(c->cfg, "deny_paths");
	if (bool_key(fs, "allowGitConfig", "filesystem.allowGitConfig", &b, e)
	    == -1)
		goto out;
	if (b)
		json_object_set_new(c->cfg, "allow_git_config", json_true());
	rc = 0;
	goto out;
nomem:
	sbx_error_sys(e, "nomem", "srt settings");
out:
	sbx_strv_release(&dr);
	sbx_strv_release(&ar);
	sbx_strv_release(&aw);
	sbx_strv_release(&dw);
	sbx_strv_release(&deny);
	return rc;
}

static int
map_ignore(const json_t *v, struct sbx_srtconf *c, struct sbx_error *e)
{
	const char	*k;
	const json_t	*x, *y;
	char		 field[160];
	size_t		 i;

	if (v == NULL)
		return 0;
	if (!json_is_object(v))
		return wrong_type(e, "ignoreViolations", "an object of "
		    "command pattern: [paths]");
	json_object_foreach ((json_t *)v, k, x) {
		snprintf(field, sizeof(field), "ignoreViolations.%.100s", k);
		if (!json_is_array(x))
			return wrong_type(e, field, "an array of paths");
		json_array_foreach (x, i, y)
			if (!json_is_string(y))
				return wrong_type(e, field,
				    "an array of paths");
	}
	c->ignore = json_incref((json_t *)v);
	note(c, "%s", "ignoreViolations: these file-system violations are "
	    "not printed (still in the --json envelope)");
	return 0;
}

static int
map_top(const json_t *s, struct sbx_srtconf *c, struct sbx_error *e)
{
	static const char *const known[] = { "network", "filesystem",
	    "ignoreViolations", "mandatoryDenySearchDepth",
	    "enableWeakerNestedSandbox", "allowNestedUserNamespaces", "sbx" };
	const char	*k;
	const json_t	*v;
	json_int_t	 d;
	int		 b;

	json_object_foreach ((json_t *)s, k, v) {
		if (IN(k, unsupported_top))
			return unsupported(e, k, strcmp(k, "credentials") == 0 ?
			    "sbx has no credential masking yet (use sbx secret "
			    "to hand secrets to a run)" : "sbx finds and "
			    "configures its own tools");
		if (IN(k, macos_top)) {
			if (bool_key(s, k, k, &b, e) == -1)
				return -1;
			if (b)
				return unsupported(e, k, "macOS only");
			continue;
		}
		if (!IN(k, known))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, keep(k),
			    "unknown_key", "unknown srt setting `%s`", k);
	}
	if (bool_key(s, "enableWeakerNestedSandbox",
	    "enableWeakerNestedSandbox", &b, e) == -1)
		return -1;
	if (b)
		return unsupported(e, "enableWeakerNestedSandbox", "sbx "
		    "refuses to run weaker; it does not start inside a "
		    "sandbox of its own");
	if (bool_key(s, "allowNestedUserNamespaces",
	    "allowNestedUserNamespaces", &b, e) == -1)
		return -1;
	if (b)
		return unsupported(e, "allowNestedUserNamespaces", "sbx "
		    "always forbids user namespaces inside the sandbox");
	if ((v = json_object_get(s, "mandatoryDenySearchDepth")) != NULL) {
		if (!json_is_integer(v) || (d = json_integer_value(v)) < 1 ||
		    d > 10)
			return wrong_type(e, "mandatoryDenySearchDepth",
			    "an integer from 1 to 10");
		if (d > 3)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "mandatoryDenySearchDepth", "unsupported_value",
			    "srt setting `mandatoryDenySearchDepth`: sbx "
			    "looks 3 levels deep (bounded by the agent's "
			    "git_search_limit); %lld is not supported",
			    (long long)d);
		note(c, "mandatoryDenySearchDepth %lld: sbx looks 3 levels "
		    "deep, at least as deep", (long long)d);
	}
	return map_ignore(json_object_get(s, "ignoreViolations"), c, e);
}

static int
map_sbx(const json_t *x, struct sbx_srtconf *c, struct sbx_error *e)
{
	const char	*k;
	const json_t	*v;

	if (x == NULL)
		return 0;
	if (!json_is_object(x))
		return wrong_type(e, "sbx", "an object of sbx agent settings");
	json_object_foreach ((json_t *)x, k, v) {
		if (json_object_get(c->cfg, k) != NULL ||
		    strcmp(k, "network") == 0 ||
		    strcmp(k, "allowed_domains") == 0 ||
		    strcmp(k, "denied_domains") == 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx",
			    "conflict", "sbx setting `sbx.%s` is what the srt "
			    "keys of the file set: set it there", k);
		json_object_set(c->cfg, k, (json_t *)v);
	}
	if (json_object_size(x) > 0)
		note(c, "sbx: agent settings added as given (sbx-config(1))");
	return 0;
}

void
sbx_srtconf_init(struct sbx_srtconf *c)
{
	memset(c, 0, sizeof(*c));
}

void
sbx_srtconf_release(struct sbx_srtconf *c)
{
	json_decref(c->cfg);
	json_decref(c->ignore);
	json_decref(c->notes);
	sbx_strv_release(&c->writable);
	memset(c, 0, sizeof(*c));
}

/* The whole file; net (when non-NULL) gets the network lists alone. */
static int
map(const json_t *s, const char *home, const char *cwd, struct sbx_srtconf *c,
    json_t *allow, json_t *deny, struct sbx_error *e)
{
	const json_t	*net;
	char		 sha[SBX_RECIPE_SHA_HEX + 1], *dump;

	c->cfg = json_object();
	c->notes = json_array();
	if (s == NULL) {
		note(c, "no settings file: srt's defaults (no network, "
		    "nothing writable)");
	} else if (!json_is_object(s))
		return wrong_type(e, "settings", "a JSON object");
	if (s != NULL && map_top(s, c, e) == -1)
		return -1;
	net = s != NULL ? json_object_get(s, "network") : NULL;
	if (net == NULL) {
		c->network = "none";
		note(c, "network: absent, so no network (loopback only)");
	} else {
		if (map_network(net, c, allow, deny, e) == -1)
			return -1;
		c->network = "proxy";
	}
	json_object_set_new(c->cfg, "network", json_string(c->network));
	if (json_array_size(allow) > 0)
		json_object_set(c->cfg, "allowed_domains", allow);
	if (json_array_size(deny) > 0)
		json_object_set(c->cfg, "denied_domains", deny);
	if (map_filesystem(s != NULL ? json_object_get(s, "filesystem") : NULL,
	    home, cwd, c, e) == -1)
		return -1;
	if (s != NULL && map_sbx(json_object_get(s, "sbx"), c, e) == -1)
		return -1;
	/* One agent per policy: its name is the digest of its settings, so
	 * runs of the same file share it and two files never do. */
	if ((dump = json_dumps(c->cfg, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return sbx_error_sys(e, "nomem", "srt settings");
	sbx_recipe_sha256(dump, strlen(dump), sha);
	free(dump);
	snprintf(c->agent, sizeof(c->agent), "srt-%.16s", sha);
	return 0;
}

int
sbx_srtconf_map(const json_t *s, const char *home, const char *cwd,
    struct sbx_srtconf *c, struct sbx_error *e)
{
	json_t	*allow = json_array(), *deny = json_array();
	int	 rc;

	sbx_srtconf_release(c);
	rc = map(s, home, cwd, c, allow, deny, e);
	json_decref(allow);
	json_decref(deny);
	return rc;
}

json_t *
sbx_srtconf_netpolicy(const json_t *s, const char *home, const char *cwd,
    struct sbx_error *e)
{
	struct sbx_srtconf	 c;
	json_t			*allow = json_array(), *deny = json_array();

	sbx_srtconf_init(&c);
	if (map(s, home, cwd, &c, allow, deny, e) == -1) {
		sbx_srtconf_release(&c);
		json_decref(allow);
		json_decref(deny);
		return NULL;
	}
	sbx_srtconf_release(&c);
	return json_pack("{s:o,s:o}", "allow", allow, "deny", deny);
}

int
sbx_srtconf_ignored(const json_t *ignore, const char *command,
    const char *path)
{
	const char	*k;
	const json_t	*x, *y;
	size_t		 i;

	json_object_foreach ((json_t *)ignore, k, x) {
		if (strcmp(k, "*") != 0 && (command == NULL ||
		    strstr(command, k) == NULL))
			continue;
		json_array_foreach (x, i, y)
			if (is_under(path, json_string_value(y)))
				return 1;
	}
	return 0;
}

int
sbx_srtconf_quote(char *const *argv, int argc, struct sbx_buf *out)
{
	const char	*s;
	int		 i, rc = 0;

	for (i = 0; i < argc; i++) {
		s = argv[i];
		if (i > 0)
			rc |= sbx_buf_puts(out, " ");
		if (*s != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,+@%") ==
		    strlen(s)) {
			rc |= sbx_buf_puts(out, s);
			continue;
		}
		rc |= sbx_buf_puts(out, "'");
		for (; *s != '\0'; s++)
			rc |= *s == '\'' ? sbx_buf_puts(out, "'\\''") :
			    sbx_buf_append(out, s, 1);
		rc |= sbx_buf_puts(out, "'");
	}
	return rc ? -1 : 0;
}
