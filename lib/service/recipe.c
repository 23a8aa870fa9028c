/*
 * recipe.c: plugin recipes judged, made canonical, and their tools'
 * parameters turned into a run's environment (recipe.h, sbx-recipe(5)).
 *
 * A recipe is untrusted input twice over: a person may add one from the
 * internet, and an agent may write one (sbx plugin register).  Nothing
 * here runs anything; what is refused is refused before a byte is stored,
 * and what is accepted is rebuilt key by key (never copied wholesale), so
 * the library holds only what this file understood.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "install.h"
#include "names.h"
#include "netpolicy.h"
#include "recipe.h"
#include "secret.h"
#include "utf8.h"

/* The field of the last refusal ("tools[0].id"). */
static char fld[SBX_RECIPE_PATH_MAX + 64];

static int refuse(struct sbx_error *e, const char *reason, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* invalid_args naming fld; the message is prefixed with the field. */
static int
refuse(struct sbx_error *e, const char *reason, const char *fmt, ...)
{
	char	m[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	return sbx_error_set(e, SBX_K_INVALID_ARGS, fld, reason,
	    "recipe: `%s` %s", fld, m);
}

static void setf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
setf(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(fld, sizeof(fld), fmt, ap);
	va_end(ap);
}

/* A string of at most max bytes, valid UTF-8, without control characters
 * but (when multiline) newlines and tabs. */
static int
text_ok(const json_t *v, size_t max, int multiline, struct sbx_error *e)
{
	const char *s;
	size_t	    i, n;

	if (!json_is_string(v))
		return refuse(e, "not_a_string", "must be a string");
	s = json_string_value(v);
	n = json_string_length(v);
	if (n > max)
		return refuse(e, "too_long", "is longer than %zu bytes", max);
	if (!sbx_utf8_valid(s, n))
		return refuse(e, "not_utf8", "is not valid UTF-8");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '\0')
			return refuse(e, "nul_byte", "holds a NUL byte");
		if ((c < 0x20 || c == 0x7f) &&
		    !(multiline && (c == '\n' || c == '\t' || c == '\r')))
			return refuse(e, "control_character",
			    "holds a control character");
	}
	return 0;
}

int
sbx_recipe_id(const char *name, char id[SBX_RECIPE_ID_MAX + 1],
    struct sbx_error *e)
{
	size_t i, n = strlen(name);

	id[0] = '\0';
	if (n == 0 || n > SBX_RECIPE_ID_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    n == 0 ? "empty" : "too_long",
		    "recipe: `name` must "
		    "have 1 to %d characters",
		    SBX_RECIPE_ID_MAX);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)name[i];

		id[i] = c == ' '	   ? '-' :
		    (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') :
					     (char)c;
	}
	id[n] = '\0';
	if (sbx_names_agent_valid(id, "name", e) == -1) {
		id[0] = '\0';
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
		    "invalid_name",
		    "recipe: `name` must give an id (lowercased, "
		    "spaces as `-`) matching ^[a-z0-9][a-z0-9_-]{0,31}$");
	}
	return 0;
}

/* Tool ids and parameter names: ^[a-z][a-z0-9_]{0,63}$. */
static int
ident_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64 || !(s[0] >= 'a' && s[0] <= 'z'))
		return 0;
	for (i = 1; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
			(s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return 0;
	return 1;
}

int
sbx_recipe_path_valid(const char *p, size_t len, struct sbx_error *e)
{
	size_t i, start = 0, depth = 0;

	setf("files[%.*s]", (int)(len > 256 ? 256 : len), p);
	/* Each rule is a way out of the plugin directory or a way to fool
	 * a reader: `..` and absolute paths escape, a NUL cuts the name
	 * the kernel sees, a backslash or a control character makes one
	 * name look like another, a leading `-` becomes an option to the
	 * command that is handed the name. */
	if (len == 0)
		return refuse(e, "empty_path", "is an empty path");
	if (len > SBX_RECIPE_PATH_MAX)
		return refuse(e, "too_long", "is longer than %d bytes",
		    SBX_RECIPE_PATH_MAX);
	if (memchr(p, '\0', len) != NULL)
		return refuse(e, "nul_byte", "holds a NUL byte");
	if (p[0] == '/')
		return refuse(e, "absolute_path", "is an absolute path");
	if (!sbx_utf8_valid(p, len))
		return refuse(e, "not_utf8", "is not valid UTF-8");
	for (i = 0; i <= len; i++) {
		if (i < len &&
		    ((unsigned char)p[i] < 0x20 || (unsigned char)p[i] == 0x7f))
			return refuse(e, "control_character",
			    "holds a control character");
		if (i < len && p[i] == '\\')
			return refuse(e, "backslash", "holds a backslash");
		if (i < len && p[i] != '/')
			continue;
		if (i == start)
			return refuse(e, "empty_component",
			    "has an empty component");
		if ((i - start == 1 && p[start] == '.') ||
		    (i - start == 2 && p[start] == '.' && p[start + 1] == '.'))
			return refuse(e, "traversal",
			    "has a `.` or `..` "
			    "component");
		if (p[start] == '-')
			return refuse(e, "option_like",
			    "has a component "
			    "starting with `-`");
		if (++depth > SBX_RECIPE_DEPTH_MAX)
			return refuse(e, "too_deep",
			    "has more than %d "
			    "components",
			    SBX_RECIPE_DEPTH_MAX);
		start = i + 1;
	}
	return 0;
}

/* ---- commands and the hosts they name ----------------------------------- */

struct hosts {
	const json_t	      *network; /* array of domain entries, or NULL */
	struct sbx_install_reg reg[SBX_INSTALL_NMGR];
	int		       used[SBX_INSTALL_NMGR];
};

/* Is host (normalised) covered by a declared dependency's registry or by
 * permissions.network? */
static int
host_covered(const struct hosts *h, const char *host)
{
	const json_t *v;
	size_t	      i;
	int	      m, k;

	json_array_foreach (h->network, i, v)
		if (sbx_np_match(json_string_value(v), host))
			return 1;
	for (m = 0; m < SBX_INSTALL_NMGR; m++)
		for (k = 0; h->used[m] && k < h->reg[m].nhosts; k++)
			if (strcmp(h->reg[m].host[k], host) == 0)
				return 1;
	return 0;
}

/*
 * A command (setup, run, daemon): text, and every host it names in a URL
 * (SCHEME://[USER@]HOST...) covered.  A host that is not a plain name
 * ($VAR, an address) can never be checked, so it is refused as well.
 */
static int
command_ok(const json_t *v, const struct hosts *h, struct sbx_error *e)
{
	const char *s, *p, *q, *at, *end;
	char	    host[SBX_NP_HOST_MAX + 1], raw[300];
	const char *why;

	if (text_ok(v, SBX_RECIPE_CMD_MAX, 1, e) == -1)
		return -1;
	s = json_string_value(v);
	if (*s == '\0')
		return refuse(e, "empty", "is empty");
	for (p = s; (p = strstr(p, "://")) != NULL; p += 3) {
		/* The scheme before it: letters, digits, + - . */
		for (q = p; q > s &&
		     (isalnum((unsigned char)q[-1]) || q[-1] == '+' ||
			 q[-1] == '-' || q[-1] == '.');
		     q--)
			;
		if (q == p)
			continue;
		for (end = p + 3; *end != '\0' && *end != '/' && *end != '?' &&
		     *end != '#' && !isspace((unsigned char)*end) &&
		     *end != '\'' && *end != '"' && *end != '`' && *end != ')';
		     end++)
			;
		snprintf(raw, sizeof(raw), "%.*s", (int)(end - (p + 3)), p + 3);
		if ((at = strrchr(raw, '@')) != NULL)
			memmove(raw, at + 1, strlen(at + 1) + 1);
		/* A port: the last ':' of a name ([v6] is refused below). */
		if (raw[0] != '[' && (q = strrchr(raw, ':')) != NULL)
			raw[q - raw] = '\0';
		if ((why = sbx_np_host(raw, strlen(raw), host)) != NULL)
			return refuse(e, "unverifiable_host",
			    "names a host "
			    "that is not a plain domain name (`%.64s`: %s); "
			    "only declared names can be checked",
			    raw, why);
		if (!host_covered(h, host))
			return refuse(e, "host_not_declared",
			    "reaches %s, "
			    "which neither a declared dependency's registry "
			    "nor permissions.network covers",
			    host);
	}
	return 0;
}

/* ---- parameters (a JSON Schema object) ---------------------------------- */

static const char *const types[] = { "string", "integer", "number", "boolean",
	"array", "object" };

/* Does v have JSON Schema type t? */
static int
type_is(const json_t *v, const char *t)
{
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v) ||
		    (json_is_real(v) &&
			floor(json_real_value(v)) == json_real_value(v));
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	return json_is_object(v);
}

static json_t *
property_check(const char *tf, const char *name, const json_t *in,
    struct sbx_error *e)
{
	const char   *k, *t;
	const json_t *v, *x;
	json_t	     *out;
	size_t	      i;

	setf("%s.properties.%s", tf, name);
	if (!json_is_object(in))
		return refuse(e, "not_an_object", "must be an object"), NULL;
	json_object_foreach ((json_t *)in, k, v)
		if (strcmp(k, "type") != 0 && strcmp(k, "description") != 0 &&
		    strcmp(k, "default") != 0 && strcmp(k, "enum") != 0 &&
		    strcmp(k, "title") != 0) {
			setf("%s.properties.%s.%.64s", tf, name, k);
			return refuse(e, "unsupported_keyword",
				   "is not one "
				   "of type, description, default, enum, title"),
			       NULL;
		}
	setf("%s.properties.%s.type", tf, name);
	v = json_object_get(in, "type");
	for (i = 0; json_is_string(v) && i < sizeof(types) / sizeof(types[0]);
	     i++)
		if (strcmp(json_string_value(v), types[i]) == 0)
			break;
	if (!json_is_string(v) || i == sizeof(types) / sizeof(types[0]))
		return refuse(e, "invalid_type",
			   "must be one of string, "
			   "integer, number, boolean, array, object"),
		       NULL;
	t = json_string_value(v);
	out = json_pack("{s:s}", "type", t);
	if ((v = json_object_get(in, "description")) != NULL) {
		setf("%s.properties.%s.description", tf, name);
		if (text_ok(v, SBX_RECIPE_TEXT_MAX, 1, e) == -1)
			goto bad;
		json_object_set(out, "description", (json_t *)v);
	}
	if ((v = json_object_get(in, "title")) != NULL) {
		setf("%s.properties.%s.title", tf, name);
		if (text_ok(v, 256, 0, e) == -1)
			goto bad;
		json_object_set(out, "title", (json_t *)v);
	}
	if ((v = json_object_get(in, "enum")) != NULL) {
		setf("%s.properties.%s.enum", tf, name);
		if (!json_is_array(v) || json_array_size(v) == 0 ||
		    json_array_size(v) > 256) {
			refuse(e, "invalid_enum",
			    "must be an array of 1 to "
			    "256 values");
			goto bad;
		}
		json_array_foreach (v, i, x)
			if (!type_is(x, t)) {
				refuse(e, "invalid_enum",
				    "holds a value that "
				    "is not of type %s",
				    t);
				goto bad;
			}
		json_object_set(out, "enum", (json_t *)v);
	}
	if ((v = json_object_get(in, "default")) != NULL) {
		setf("%s.properties.%s.default", tf, name);
		if (!type_is(v, t)) {
			refuse(e, "invalid_default", "is not of type %s", t);
			goto bad;
		}
		if ((x = json_object_get(out, "enum")) != NULL) {
			for (i = 0; i < json_array_size(x); i++)
				if (json_equal(json_array_get(x, i),
					(json_t *)v))
					break;
			if (i == json_array_size(x)) {
				refuse(e, "invalid_default",
				    "is not one of "
				    "enum");
				goto bad;
			}
		}
		json_object_set(out, "default", (json_t *)v);
	}
	return out;
bad:
	json_decref(out);
	return NULL;
}

/* Does the array a hold a value equal to v? */
static int
strv_has(const json_t *a, const json_t *v)
{
	const json_t *w;
	size_t	      i;

	json_array_foreach (a, i, w)
		if (json_equal((json_t *)w, (json_t *)v))
			return 1;
	return 0;
}

static json_t *
params_check(const char *tf, const json_t *in, struct sbx_error *e)
{
	const char   *k;
	const json_t *v, *props, *req;
	json_t	     *out, *p, *op, *oreq;
	size_t	      i;

	setf("%s", tf);
	if (in == NULL)
		return json_pack("{s:s,s:{},s:[]}", "type", "object",
		    "properties", "required");
	if (!json_is_object(in))
		return refuse(e, "not_an_object",
			   "must be a JSON Schema "
			   "object"),
		       NULL;
	json_object_foreach ((json_t *)in, k, v)
		if (strcmp(k, "type") != 0 && strcmp(k, "properties") != 0 &&
		    strcmp(k, "required") != 0 &&
		    strcmp(k, "description") != 0 &&
		    strcmp(k, "additionalProperties") != 0) {
			setf("%s.%.64s", tf, k);
			return refuse(e, "unsupported_keyword",
				   "is not one "
				   "of type, properties, required, description, "
				   "additionalProperties"),
			       NULL;
		}
	setf("%s.type", tf);
	if ((v = json_object_get(in, "type")) != NULL &&
	    (!json_is_string(v) || strcmp(json_string_value(v), "object") != 0))
		return refuse(e, "invalid_type", "must be \"object\""), NULL;
	setf("%s.additionalProperties", tf);
	if ((v = json_object_get(in, "additionalProperties")) != NULL &&
	    !json_is_false(v))
		return refuse(e, "invalid_value",
			   "may only be false (unknown "
			   "parameters are always refused)"),
		       NULL;
	out = json_pack("{s:s}", "type", "object");
	if ((v = json_object_get(in, "description")) != NULL) {
		setf("%s.description", tf);
		if (text_ok(v, SBX_RECIPE_TEXT_MAX, 1, e) == -1)
			goto bad;
		json_object_set(out, "description", (json_t *)v);
	}
	op = json_object();
	json_object_set_new(out, "properties", op);
	props = json_object_get(in, "properties");
	setf("%s.properties", tf);
	if (props != NULL && !json_is_object(props)) {
		refuse(e, "not_an_object", "must be an object");
		goto bad;
	}
	if (json_object_size(props) > SBX_RECIPE_NPARAMS_MAX) {
		refuse(e, "too_many", "has more than %d parameters",
		    SBX_RECIPE_NPARAMS_MAX);
		goto bad;
	}
	json_object_foreach ((json_t *)props, k, v) {
		if (!ident_ok(k)) {
			setf("%s.properties.%.64s", tf, k);
			refuse(e, "invalid_name",
			    "must match "
			    "^[a-z][a-z0-9_]{0,63}$");
			goto bad;
		}
		if ((p = property_check(tf, k, v, e)) == NULL)
			goto bad;
		json_object_set_new(op, k, p);
	}
	oreq = json_array();
	json_object_set_new(out, "required", oreq);
	setf("%s.required", tf);
	if ((req = json_object_get(in, "required")) != NULL &&
	    !json_is_array(req)) {
		refuse(e, "not_an_array", "must be an array of names");
		goto bad;
	}
	json_array_foreach (req, i, v) {
		setf("%s.required[%zu]", tf, i);
		if (!json_is_string(v) ||
		    json_object_get(op, json_string_value(v)) == NULL) {
			refuse(e, "unknown_parameter", "must name a property");
			goto bad;
		}
		if (strv_has(oreq, v)) {
			refuse(e, "duplicate", "names a parameter twice");
			goto bad;
		}
		json_array_append(oreq, (json_t *)v);
	}
	return out;
bad:
	json_decref(out);
	return NULL;
}

/* ---- the recipe --------------------------------------------------------- */

static const char *const known_keys[] = { "name", "description", "version",
	"author", "source", "dependencies", "setup", "daemon", "files", "tools",
	"secrets", "permissions", "metadata" };

static int
known(const char *k)
{
	size_t i;

	for (i = 0; i < sizeof(known_keys) / sizeof(known_keys[0]); i++)
		if (strcmp(k, known_keys[i]) == 0)
			return 1;
	return 0;
}

static void
warn(json_t *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void
warn(json_t *w, const char *fmt, ...)
{
	char	m[512];
	va_list ap;

	if (w == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_array_append_new(w, json_string(m));
}

/* dependencies {apt,npm,pip}: each an array checked by sbx install's
 * grammar (no URLs); the managers used cover their registries' hosts. */
static json_t *
deps_check(const json_t *in, const json_t *sandboxcfg, struct hosts *h,
    struct sbx_error *e)
{
	static const char *const mgrs[] = { "apt", "npm", "pip" };
	const json_t		*a, *v;
	const char		*k;
	json_t			*out = json_object();
	char			*pk[SBX_INSTALL_MAX_PKGS];
	size_t			 i, j;
	int			 m;

	setf("dependencies");
	if (in != NULL && !json_is_object(in)) {
		refuse(e, "not_an_object", "must be an object {apt, npm, pip}");
		goto bad;
	}
	json_object_foreach ((json_t *)in, k, v)
		if (strcmp(k, "apt") != 0 && strcmp(k, "npm") != 0 &&
		    strcmp(k, "pip") != 0) {
			setf("dependencies.%.64s", k);
			refuse(e, "unknown_manager", "is not apt, npm or pip");
			goto bad;
		}
	for (i = 0; i < 3; i++) {
		a = json_object_get(in, mgrs[i]);
		setf("dependencies.%s", mgrs[i]);
		if (a != NULL && !json_is_array(a)) {
			refuse(e, "not_an_array", "must be an array");
			goto bad;
		}
		if (json_array_size(a) > SBX_INSTALL_MAX_PKGS) {
			refuse(e, "too_many_packages",
			    "has more than %d "
			    "packages",
			    SBX_INSTALL_MAX_PKGS);
			goto bad;
		}
		json_array_foreach (a, j, v) {
			if (!json_is_string(v)) {
				setf("dependencies.%s[%zu]", mgrs[i], j);
				refuse(e, "not_a_string", "must be a string");
				goto bad;
			}
			pk[j] = (char *)json_string_value(v);
		}
		m = sbx_install_manager(mgrs[i], e);
		if (json_array_size(a) > 0) {
			if (sbx_install_validate(m, pk, (int)json_array_size(a),
				0, e) == -1) {
				/* install's field is "packages[i]". */
				setf("dependencies.%s%s", mgrs[i],
				    e->field != NULL &&
					    strncmp(e->field, "packages", 8) ==
						0 ?
					e->field + 8 :
					"");
				e->field = fld;
				goto bad;
			}
			if (sbx_install_registry(sandboxcfg, m, &h->reg[m],
				e) == -1)
				goto bad;
			h->used[m] = 1;
		}
		json_object_set_new(out, mgrs[i],
		    a != NULL ? json_copy((json_t *)a) : json_array());
	}
	return out;
bad:
	json_decref(out);
	return NULL;
}

/* permissions {network: "none" | [domains], inference: bool}. */
static json_t *
perms_check(const json_t *in, unsigned flags, json_t *w, struct sbx_error *e)
{
	struct sbx_netpolicy np;
	struct sbx_error     e2;
	const json_t	    *net, *inf, *v;
	const char	    *k;
	json_t		    *out, *doms;
	size_t		     i;
	int		     bad = 0;

	setf("permissions");
	if (in != NULL && !json_is_object(in))
		return refuse(e, "not_an_object", "must be an object"), NULL;
	json_object_foreach ((json_t *)in, k, v)
		if (strcmp(k, "network") != 0 && strcmp(k, "inference") != 0) {
			setf("permissions.%.64s", k);
			return refuse(e, "unknown_key",
				   "is not network or "
				   "inference"),
			       NULL;
		}
	net = json_object_get(in, "network");
	inf = json_object_get(in, "inference");
	setf("permissions.inference");
	if (inf != NULL && !json_is_boolean(inf))
		return refuse(e, "not_a_boolean", "must be true or false"),
		       NULL;
	if ((flags & SBX_RECIPE_AGENT) && json_is_true(inf)) {
		warn(w,
		    "permissions.inference: an agent-authored recipe "
		    "gets no inference (set to false)");
		inf = NULL;
	}
	out = json_pack("{s:b}", "inference", json_is_true(inf));
	setf("permissions.network");
	if (net == NULL ||
	    (json_is_string(net) &&
		strcmp(json_string_value(net), "none") == 0)) {
		json_object_set_new(out, "network", json_string("none"));
		return out;
	}
	/* The one allowlist grammar of the proxy (sbx_np_allow): what
	 * passes here is what the proxy would accept for --allow-domain. */
	doms = json_array();
	sbx_np_init(&np);
	if (!json_is_array(net) || json_array_size(net) == 0 ||
	    json_array_size(net) > SBX_RECIPE_NDOMAINS_MAX)
		bad = 1;
	json_array_foreach (net, i, v) {
		if (bad)
			break;
		if (!json_is_string(v) ||
		    sbx_np_allow(&np, json_string_value(v), &e2) == -1) {
			setf("permissions.network[%zu]", i);
			bad = 1;
			break;
		}
		json_array_append_new(doms, json_string(np.allowed[i]));
	}
	sbx_np_free(&np);
	if (!bad) {
		json_object_set_new(out, "network", doms);
		return out;
	}
	json_decref(doms);
	if (flags & SBX_RECIPE_AGENT) {
		/* An agent asks; it does not get to widen its own reach
		 * with "outbound" or a pattern the proxy would refuse. */
		warn(w,
		    "permissions.network: an agent-authored recipe may "
		    "only list valid domain patterns; network set to none");
		json_object_set_new(out, "network", json_string("none"));
		return out;
	}
	json_decref(out);
	return refuse(e, "invalid_network",
		   "must be \"none\" or an array of "
		   "1 to %d domain patterns (example.com, *.example.com)",
		   SBX_RECIPE_NDOMAINS_MAX),
	       NULL;
}

static json_t *
files_check(const json_t *in, struct sbx_error *e)
{
	const char   *k, *s, *o;
	const json_t *v, *w;
	json_t	     *out;
	size_t	      total = 0, n, kl, ol;

	setf("files");
	if (in == NULL)
		return json_object();
	if (!json_is_object(in))
		return refuse(e, "not_an_object",
			   "must be an object "
			   "{path: text}"),
		       NULL;
	if (json_object_size(in) > SBX_RECIPE_NFILES_MAX)
		return refuse(e, "too_many_files", "has more than %d files",
			   SBX_RECIPE_NFILES_MAX),
		       NULL;
	json_object_foreach ((json_t *)in, k, v) {
		if (sbx_recipe_path_valid(k, strlen(k), e) == -1)
			return NULL;
		if (!json_is_string(v))
			return refuse(e, "not_text",
				   "must be a string (the "
				   "file's text)"),
			       NULL;
		s = json_string_value(v);
		n = json_string_length(v);
		if (memchr(s, '\0', n) != NULL || !sbx_utf8_valid(s, n))
			return refuse(e, "not_text", "is not UTF-8 text"), NULL;
		if (n > SBX_RECIPE_FILE_MAX)
			return refuse(e, "file_too_large",
				   "is larger than "
				   "%u bytes",
				   SBX_RECIPE_FILE_MAX),
			       NULL;
		if ((total += n) > SBX_RECIPE_FILES_MAX) {
			setf("files");
			return refuse(e, "files_too_large",
				   "hold more than "
				   "%u bytes together",
				   SBX_RECIPE_FILES_MAX),
			       NULL;
		}
		/* A file cannot also be a directory of another ("a" and
		 * "a/b"). */
		kl = strlen(k);
		json_object_foreach ((json_t *)in, o, w) {
			ol = strlen(o);
			if (ol > kl && strncmp(o, k, kl) == 0 && o[kl] == '/')
				return refuse(e, "file_conflict",
					   "is a file "
					   "and the directory of %.128s",
					   o),
				       NULL;
		}
	}
	out = json_deep_copy(in);
	return out;
}

static json_t *
tools_check(const json_t *in, const struct hosts *h, struct sbx_error *e)
{
	const json_t *t, *v;
	const char   *k;
	json_t	     *out, *o, *p;
	size_t	      i, j;
	char	      tf[48];

	setf("tools");
	if (!json_is_array(in) || json_array_size(in) == 0)
		return refuse(e, in == NULL ? "missing" : "not_an_array",
			   "must be an array of 1 to %d tools",
			   SBX_RECIPE_NTOOLS_MAX),
		       NULL;
	if (json_array_size(in) > SBX_RECIPE_NTOOLS_MAX)
		return refuse(e, "too_many", "has more than %d tools",
			   SBX_RECIPE_NTOOLS_MAX),
		       NULL;
	out = json_array();
	json_array_foreach (in, i, t) {
		snprintf(tf, sizeof(tf), "tools[%zu]", i);
		setf("%s", tf);
		if (!json_is_object(t)) {
			refuse(e, "not_an_object", "must be an object");
			goto bad;
		}
		json_object_foreach ((json_t *)t, k, v)
			if (strcmp(k, "id") != 0 &&
			    strcmp(k, "description") != 0 &&
			    strcmp(k, "parameters") != 0 &&
			    strcmp(k, "run") != 0) {
				setf("%s.%.64s", tf, k);
				refuse(e, "unknown_key",
				    "is not id, "
				    "description, parameters or run");
				goto bad;
			}
		setf("%s.id", tf);
		v = json_object_get(t, "id");
		if (!json_is_string(v) || !ident_ok(json_string_value(v))) {
			refuse(e, v == NULL ? "missing" : "invalid_name",
			    "must match ^[a-z][a-z0-9_]{0,63}$");
			goto bad;
		}
		for (j = 0; j < i; j++)
			if (json_equal(
				json_object_get(json_array_get(in, j), "id"),
				(json_t *)v)) {
				refuse(e, "duplicate_tool",
				    "names a tool "
				    "twice");
				goto bad;
			}
		o = json_pack("{s:O}", "id", v);
		json_array_append_new(out, o);
		setf("%s.description", tf);
		if ((v = json_object_get(t, "description")) == NULL) {
			refuse(e, "missing", "is required");
			goto bad;
		}
		if (text_ok(v, SBX_RECIPE_TEXT_MAX, 1, e) == -1)
			goto bad;
		json_object_set(o, "description", (json_t *)v);
		setf("%s.run", tf);
		if ((v = json_object_get(t, "run")) == NULL) {
			refuse(e, "missing", "is required");
			goto bad;
		}
		if (command_ok(v, h, e) == -1)
			goto bad;
		json_object_set(o, "run", (json_t *)v);
		snprintf(tf, sizeof(tf), "tools[%zu].parameters", i);
		if ((p = params_check(tf, json_object_get(t, "parameters"),
			 e)) == NULL)
			goto bad;
		json_object_set_new(o, "parameters", p);
	}
	return out;
bad:
	json_decref(out);
	return NULL;
}

static json_t *
secrets_check(const json_t *in, struct sbx_error *e)
{
	struct sbx_error e2;
	const json_t	*v;
	size_t		 i, j;

	setf("secrets");
	if (in == NULL)
		return json_array();
	if (!json_is_array(in) || json_array_size(in) > SBX_RECIPE_NSECRETS_MAX)
		return refuse(e, "not_an_array",
			   "must be an array of at most "
			   "%d names",
			   SBX_RECIPE_NSECRETS_MAX),
		       NULL;
	json_array_foreach (in, i, v) {
		setf("secrets[%zu]", i);
		if (!json_is_string(v) ||
		    sbx_secret_name_valid(json_string_value(v), &e2) == -1)
			return refuse(e, "invalid_name",
				   "must be a secret "
				   "name (^[A-Z_][A-Z0-9_]{0,63}$, not reserved)"),
			       NULL;
		for (j = 0; j < i; j++)
			if (json_equal(json_array_get(in, j), (json_t *)v))
				return refuse(e, "duplicate",
					   "names a "
					   "secret twice"),
				       NULL;
	}
	return json_deep_copy(in);
}

json_t *
sbx_recipe_check(const json_t *in, unsigned flags, const json_t *sandboxcfg,
    json_t *w, struct sbx_error *e)
{
	static const char *const texts[] = { "version", "author", "source" };
	struct hosts		*h;
	const json_t		*v;
	const char		*k;
	json_t			*out, *x, *meta;
	char			 id[SBX_RECIPE_ID_MAX + 1];
	size_t			 i;

	if (!json_is_object(in)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "recipe", "not_an_object",
		    "a recipe is a JSON object");
		return NULL;
	}
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		sbx_error_sys(e, "nomem", "recipe");
		return NULL;
	}
	out = json_object();
	setf("name");
	if ((v = json_object_get(in, "name")) == NULL) {
		refuse(e, "missing", "is required");
		goto bad;
	}
	if (text_ok(v, SBX_RECIPE_ID_MAX, 0, e) == -1 ||
	    sbx_recipe_id(json_string_value(v), id, e) == -1)
		goto bad;
	json_object_set(out, "name", (json_t *)v);
	setf("description");
	if ((v = json_object_get(in, "description")) == NULL) {
		refuse(e, "missing", "is required");
		goto bad;
	}
	if (text_ok(v, SBX_RECIPE_TEXT_MAX, 1, e) == -1)
		goto bad;
	json_object_set(out, "description", (json_t *)v);
	for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
		if ((v = json_object_get(in, texts[i])) != NULL) {
			setf("%s", texts[i]);
			if (text_ok(v, i == 0 ? 64 : 1024, 0, e) == -1)
				goto bad;
			json_object_set(out, texts[i], (json_t *)v);
		}
	/* metadata: free-form, but an object; unknown top-level keys join
	 * it (kept, never interpreted). */
	setf("metadata");
	if ((v = json_object_get(in, "metadata")) != NULL &&
	    !json_is_object(v)) {
		refuse(e, "not_an_object", "must be an object");
		goto bad;
	}
	meta = v != NULL ? json_deep_copy(v) : json_object();
	json_object_set_new(out, "metadata", meta);
	json_object_foreach ((json_t *)in, k, v)
		if (!known(k)) {
			warn(w, "unknown key `%.64s` kept in metadata", k);
			if (json_object_get(meta, k) == NULL)
				json_object_set(meta, k, (json_t *)v);
		}
	if ((flags & SBX_RECIPE_AGENT) ||
	    json_object_get(meta, "created_by") != NULL) {
		const char *want =
		    flags & SBX_RECIPE_AGENT ? "agent" : "person";

		x = json_object_get(meta, "created_by");
		if (x != NULL &&
		    !(json_is_string(x) &&
			strcmp(json_string_value(x), want) == 0))
			warn(w, "metadata.created_by is set by sbx: %s", want);
	}
	json_object_set_new(meta, "created_by",
	    json_string(flags & SBX_RECIPE_AGENT ? "agent" : "person"));

	if ((x = perms_check(json_object_get(in, "permissions"), flags, w,
		 e)) == NULL)
		goto bad;
	json_object_set_new(out, "permissions", x);
	if (json_is_array(json_object_get(x, "network")))
		h->network = json_object_get(x, "network");
	if ((x = deps_check(json_object_get(in, "dependencies"), sandboxcfg, h,
		 e)) == NULL)
		goto bad;
	json_object_set_new(out, "dependencies", x);
	for (i = 0; i < 2; i++) {
		k = i == 0 ? "setup" : "daemon";
		if ((v = json_object_get(in, k)) != NULL) {
			setf("%s", k);
			if (command_ok(v, h, e) == -1)
				goto bad;
			json_object_set(out, k, (json_t *)v);
		}
	}
	if ((x = files_check(json_object_get(in, "files"), e)) == NULL)
		goto bad;
	json_object_set_new(out, "files", x);
	if ((x = tools_check(json_object_get(in, "tools"), h, e)) == NULL)
		goto bad;
	json_object_set_new(out, "tools", x);
	if ((x = secrets_check(json_object_get(in, "secrets"), e)) == NULL)
		goto bad;
	json_object_set_new(out, "secrets", x);
	free(h);
	return out;
bad:
	free(h);
	json_decref(out);
	return NULL;
}

void
sbx_recipe_sha256(const void *p, size_t n, char sha[SBX_RECIPE_SHA_HEX + 1])
{
	unsigned char h[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(h, p, n);
	sodium_bin2hex(sha, SBX_RECIPE_SHA_HEX + 1, h, sizeof(h));
}

void
sbx_recipe_tool_name(const char *id, const char *tool,
    char name[SBX_TOOL_NAME_MAX + 1])
{
	char	 full[8 + SBX_RECIPE_ID_MAX + 1 + 64 + 1];
	char	 sha[SBX_RECIPE_SHA_HEX + 1];
	size_t	 i;
	int	 n;

	n = snprintf(full, sizeof(full), "plugin-%s-%s", id, tool);
	if (n >= 0 && (size_t)n <= SBX_TOOL_NAME_MAX &&
	    (size_t)n < sizeof(full)) {
		memcpy(name, full, (size_t)n + 1);
		return;
	}
	/* The hash is of the id as people know it, "plugin.ID.TOOL"
	 * (printf 'plugin.%s.%s' ID TOOL | sha256sum). */
	n = snprintf(full, sizeof(full), "plugin.%s.%s", id, tool);
	sbx_recipe_sha256(full, n < 0 ? 0 : strlen(full), sha);
	snprintf(full, sizeof(full), "plugin-%s-%s", id, tool);
	memcpy(name, full, 55);
	name[55] = '-';
	for (i = 0; i < 8; i++)
		name[56 + i] = (char)toupper((unsigned char)sha[i]);
	name[64] = '\0';
}

char *
sbx_recipe_canonical(const json_t *r, size_t *len,
    char sha[SBX_RECIPE_SHA_HEX + 1])
{
	char  *s, *t;
	size_t n;

	if ((s = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS)) == NULL)
		return NULL;
	n = strlen(s);
	if ((t = realloc(s, n + 2)) == NULL) {
		free(s);
		return NULL;
	}
	t[n++] = '\n';
	t[n] = '\0';
	if (len != NULL)
		*len = n;
	if (sha != NULL)
		sbx_recipe_sha256(t, n, sha);
	return t;
}

const json_t *
sbx_recipe_tool(const json_t *r, const char *id)
{
	const json_t *t;
	size_t	      i;

	json_array_foreach (json_object_get(r, "tools"), i, t)
		if (json_is_string(json_object_get(t, "id")) &&
		    strcmp(json_string_value(json_object_get(t, "id")), id) ==
			0)
			return t;
	return NULL;
}

json_t *
sbx_recipe_input_schema(const json_t *tool)
{
	json_t *s;

	s = json_deep_copy(json_object_get(tool, "parameters"));
	if (s == NULL)
		s = json_pack("{s:s,s:{}}", "type", "object", "properties");
	json_object_set_new(s, "additionalProperties", json_false());
	return s;
}

/* ---- parameter values ---------------------------------------------------- */

json_t *
sbx_recipe_params(const json_t *tool, const json_t *args, struct sbx_error *e)
{
	const json_t *props, *p, *v, *en;
	const char   *k, *t;
	json_t	     *out;
	size_t	      i;

	props =
	    json_object_get(json_object_get(tool, "parameters"), "properties");
	if (args != NULL && !json_is_object(args)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "parameters",
		    "not_an_object", "the parameters are an object");
		return NULL;
	}
	out = json_object();
	json_object_foreach ((json_t *)args, k, v) {
		setf("parameters.%.64s", k);
		if ((p = json_object_get(props, k)) == NULL) {
			refuse(e, "unknown_parameter",
			    "is not a parameter of "
			    "this tool");
			goto bad;
		}
		t = json_string_value(json_object_get(p, "type"));
		if (t == NULL || !type_is(v, t)) {
			refuse(e, "invalid_type", "must be of type %s",
			    t != NULL ? t : "?");
			goto bad;
		}
		if ((en = json_object_get(p, "enum")) != NULL) {
			for (i = 0; i < json_array_size(en); i++)
				if (json_equal(json_array_get(en, i),
					(json_t *)v))
					break;
			if (i == json_array_size(en)) {
				refuse(e, "not_in_enum",
				    "must be one of the "
				    "values of its enum");
				goto bad;
			}
		}
		json_object_set(out, k, (json_t *)v);
	}
	json_object_foreach ((json_t *)props, k, p)
		if (json_object_get(out, k) == NULL &&
		    (v = json_object_get(p, "default")) != NULL)
			json_object_set(out, k, (json_t *)v);
	json_array_foreach (
	    json_object_get(json_object_get(tool, "parameters"), "required"), i,
	    v)
		if (json_object_get(out, json_string_value(v)) == NULL) {
			setf("parameters.%.64s", json_string_value(v));
			refuse(e, "missing_parameter", "is required");
			goto bad;
		}
	return out;
bad:
	json_decref(out);
	return NULL;
}

int
sbx_recipe_param_arg(const json_t *tool, const char *kv, json_t *args,
    struct sbx_error *e)
{
	const json_t *p;
	const char   *eq = strchr(kv, '='), *val, *t;
	json_t	     *v = NULL;
	json_error_t  je;
	char	      name[65], *end;
	long long     ll;
	double	      d;

	if (eq == NULL || eq == kv || eq - kv > 64)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "param",
		    "invalid_param", "--param takes NAME=VALUE");
	snprintf(name, sizeof(name), "%.*s", (int)(eq - kv), kv);
	val = eq + 1;
	setf("parameters.%s", name);
	if ((p = json_object_get(
		 json_object_get(json_object_get(tool, "parameters"),
		     "properties"),
		 name)) == NULL)
		return refuse(e, "unknown_parameter",
		    "is not a parameter of "
		    "this tool");
	if (json_object_get(args, name) != NULL)
		return refuse(e, "duplicate_parameter", "is given twice");
	t = json_string_value(json_object_get(p, "type"));
	errno = 0;
	if (t == NULL)
		return refuse(e, "invalid_type", "has no type");
	if (strcmp(t, "string") == 0)
		v = json_string(val);
	else if (strcmp(t, "integer") == 0) {
		ll = strtoll(val, &end, 10);
		if (*val != '\0' && *end == '\0' && errno == 0)
			v = json_integer(ll);
	} else if (strcmp(t, "number") == 0) {
		d = strtod(val, &end);
		if (*val != '\0' && *end == '\0' && errno == 0 && isfinite(d))
			v = json_real(d);
	} else if (strcmp(t, "boolean") == 0) {
		if (strcmp(val, "true") == 0 || strcmp(val, "false") == 0)
			v = json_boolean(strcmp(val, "true") == 0);
	} else
		v = json_loads(val, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY,
		    &je);
	if (v == NULL || !type_is(v, t)) {
		json_decref(v);
		return refuse(e, "invalid_type", "must be of type %s", t);
	}
	json_object_set_new(args, name, v);
	return 0;
}

int
sbx_recipe_params_env(const json_t *vals, struct sbx_strv *env,
    struct sbx_error *e)
{
	const char   *k;
	const json_t *v;
	char	      up[65], *s;
	size_t	      i;

	json_object_foreach ((json_t *)vals, k, v) {
		for (i = 0; k[i] != '\0' && i < 64; i++)
			up[i] = (char)toupper((unsigned char)k[i]);
		up[i] = '\0';
		if (json_is_string(v)) {
			if (memchr(json_string_value(v), '\0',
				json_string_length(v)) != NULL) {
				setf("parameters.%s", k);
				return refuse(e, "nul_byte",
				    "holds a NUL "
				    "byte");
			}
			s = strdup(json_string_value(v));
		} else if (json_is_integer(v)) {
			if (asprintf(&s, "%" JSON_INTEGER_FORMAT,
				json_integer_value(v)) == -1)
				s = NULL;
		} else if (json_is_real(v) &&
		    floor(json_real_value(v)) == json_real_value(v) &&
		    fabs(json_real_value(v)) < 1e15) {
			if (asprintf(&s, "%.0f", json_real_value(v)) == -1)
				s = NULL;
		} else if (json_is_boolean(v))
			s = strdup(json_is_true(v) ? "true" : "false");
		else
			s = json_dumps(v,
			    JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
		if (s == NULL ||
		    sbx_strv_pushf(env, "PARAM_%s=%s", up, s) == -1) {
			free(s);
			return sbx_error_sys(e, "nomem", "parameters");
		}
		free(s);
	}
	return 0;
}
