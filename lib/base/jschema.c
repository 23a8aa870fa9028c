/*
 * jschema.c: a JSON value checked against a schema of sbx's own (the
 * subset jschema.h names).  The schemas are ours and trusted; the values
 * come from a client and are not: every check is bounded by the value's
 * size, recursion by the schema's depth, and a failure names the path of
 * the value so that a model can repair its call.
 */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "jschema.h"

#define DEPTH_MAX 16

static char field[256];

/* The path of a value, "a.b[3]", truncated when long. */
struct path {
	char   s[sizeof(field)];
	size_t len;
};

static size_t
path_push(struct path *p, const char *key, size_t idx, int is_idx)
{
	size_t was = p->len;
	int    n;

	if (is_idx)
		n = snprintf(p->s + p->len, sizeof(p->s) - p->len, "[%zu]",
		    idx);
	else
		n = snprintf(p->s + p->len, sizeof(p->s) - p->len, "%s%.64s",
		    p->len ? "." : "", key);
	if (n > 0)
		p->len += (size_t)n < sizeof(p->s) - p->len ?
		    (size_t)n :
		    sizeof(p->s) - p->len - 1;
	return was;
}

static void
path_pop(struct path *p, size_t was)
{
	p->len = was;
	p->s[was] = '\0';
}

static int
fail(struct sbx_error *e, const struct path *p, const char *reason,
    const char *what)
{
	snprintf(field, sizeof(field), "%s", p->len ? p->s : "arguments");
	return sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason,
	    "argument `%s` %s", field, what);
}

static int
type_is(const json_t *v, const char *t)
{
	if (strcmp(t, "object") == 0)
		return json_is_object(v);
	if (strcmp(t, "array") == 0)
		return json_is_array(v);
	if (strcmp(t, "string") == 0)
		return json_is_string(v);
	if (strcmp(t, "boolean") == 0)
		return json_is_boolean(v);
	if (strcmp(t, "null") == 0)
		return json_is_null(v);
	if (strcmp(t, "number") == 0)
		return json_is_number(v);
	/* 3.0 is an integer to JSON Schema, as it is to a JavaScript
	 * client that cannot tell the two apart. */
	if (strcmp(t, "integer") == 0)
		return json_is_integer(v) ||
		    (json_is_real(v) &&
			json_real_value(v) ==
			    (double)(long long)json_real_value(v));
	return 0;
}

static int
type_ok(const json_t *s, const json_t *v)
{
	const json_t *t = json_object_get(s, "type");
	size_t	      i;

	if (json_is_string(t))
		return type_is(v, json_string_value(t));
	if (!json_is_array(t))
		return 1;
	for (i = 0; i < json_array_size(t); i++)
		if (json_is_string(json_array_get(t, i)) &&
		    type_is(v, json_string_value(json_array_get(t, i))))
			return 1;
	return 0;
}

/* Characters (UTF-8 code points: jansson's strings are valid UTF-8). */
static size_t
chars(const char *s, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			c++;
	return c;
}

static int
num(const json_t *s, const char *k, double *out)
{
	const json_t *v = json_object_get(s, k);

	if (!json_is_number(v))
		return 0;
	*out = json_number_value(v);
	return 1;
}

static int
check_string(const json_t *s, const json_t *v, const struct path *p,
    struct sbx_error *e)
{
	const char   *str = json_string_value(v);
	size_t	      n = chars(str, json_string_length(v));
	const json_t *pat;
	regex_t	      re;
	double	      lim;
	int	      m;

	if (num(s, "maxLength", &lim) && (double)n > lim)
		return fail(e, p, "too_long", "is longer than allowed");
	if (num(s, "minLength", &lim) && (double)n < lim)
		return fail(e, p, "too_short",
		    n == 0 ? "is empty" : "is shorter than allowed");
	if (json_is_string(pat = json_object_get(s, "pattern"))) {
		if (regcomp(&re, json_string_value(pat),
			REG_EXTENDED | REG_NOSUB) != 0)
			return fail(e, p, "bad_format", "cannot be checked");
		/* A NUL inside the string would end it early for regexec:
		 * such a string never matches. */
		m = strlen(str) == json_string_length(v) &&
		    regexec(&re, str, 0, NULL, 0) == 0;
		regfree(&re);
		if (!m)
			return fail(e, p, "bad_format",
			    "does not have the "
			    "expected form");
	}
	return 0;
}

static int
check(const json_t *, const json_t *, struct path *, int, struct sbx_error *);

static int
check_object(const json_t *s, const json_t *v, struct path *p, int depth,
    struct sbx_error *e)
{
	const json_t *props = json_object_get(s, "properties");
	const json_t *extra = json_object_get(s, "additionalProperties");
	const json_t *req = json_object_get(s, "required"), *ps, *x;
	const char   *k;
	double	      lim;
	size_t	      i, was;

	if (num(s, "maxProperties", &lim) && (double)json_object_size(v) > lim)
		return fail(e, p, "too_many", "has too many entries");
	json_array_foreach (req, i, x) {
		if (json_is_string(x) &&
		    json_object_get(v, json_string_value(x)) == NULL) {
			was = path_push(p, json_string_value(x), 0, 0);
			fail(e, p, "missing_property", "is required");
			path_pop(p, was);
			return -1;
		}
	}
	json_object_foreach ((json_t *)v, k, x) {
		was = path_push(p, k, 0, 0);
		if ((ps = json_object_get(props, k)) == NULL) {
			if (json_is_false(extra)) {
				fail(e, p, "unknown_property",
				    "is not a "
				    "parameter of this tool");
				return -1;
			}
			ps = json_is_object(extra) ? extra : NULL;
		}
		if (ps != NULL && check(ps, x, p, depth + 1, e) == -1)
			return -1;
		path_pop(p, was);
	}
	return 0;
}

static int
check_array(const json_t *s, const json_t *v, struct path *p, int depth,
    struct sbx_error *e)
{
	const json_t *items = json_object_get(s, "items");
	double	      lim;
	size_t	      i, was;

	if (num(s, "maxItems", &lim) && (double)json_array_size(v) > lim)
		return fail(e, p, "too_many", "has too many items");
	if (num(s, "minItems", &lim) && (double)json_array_size(v) < lim)
		return fail(e, p, "too_short", "has too few items");
	if (!json_is_object(items))
		return 0;
	for (i = 0; i < json_array_size(v); i++) {
		was = path_push(p, NULL, i, 1);
		if (check(items, json_array_get(v, i), p, depth + 1, e) == -1)
			return -1;
		path_pop(p, was);
	}
	return 0;
}

static int
check(const json_t *s, const json_t *v, struct path *p, int depth,
    struct sbx_error *e)
{
	const json_t *en;
	double	      lim, x;
	size_t	      i;

	if (depth > DEPTH_MAX)
		return fail(e, p, "too_deep", "is nested too deeply");
	if (!type_ok(s, v))
		return fail(e, p, "wrong_type", "has the wrong type");
	if (json_is_array(en = json_object_get(s, "enum"))) {
		for (i = 0; i < json_array_size(en); i++)
			if (json_equal(json_array_get(en, i), (json_t *)v))
				break;
		if (i == json_array_size(en))
			return fail(e, p, "not_allowed",
			    "is not one of the "
			    "allowed values");
	}
	if (json_is_number(v)) {
		x = json_number_value(v);
		if ((num(s, "minimum", &lim) && x < lim) ||
		    (num(s, "maximum", &lim) && x > lim) ||
		    (num(s, "exclusiveMinimum", &lim) && x <= lim))
			return fail(e, p, "out_of_range", "is out of range");
	}
	if (json_is_string(v))
		return check_string(s, v, p, e);
	if (json_is_object(v))
		return check_object(s, v, p, depth, e);
	if (json_is_array(v))
		return check_array(s, v, p, depth, e);
	return 0;
}

int
sbx_jschema_check(const json_t *schema, const json_t *value,
    struct sbx_error *e)
{
	struct path p = { "", 0 };

	return check(schema, value, &p, 0, e);
}
