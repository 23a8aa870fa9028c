/*
 * jget: the jq invocations the integration tests make most, answered
 * without jq's start-up cost.
 *
 *   jget [-r] [-c] [-e] [-j] FILTER [FILE]
 *
 * jq 1.6 compiles its builtins on every start: about 40 ms of CPU, and the
 * test suite runs jq many thousands of times (measured: over half of the
 * suite's CPU time went to jq).  tests/integration/lib.bash routes `jq`
 * through jget.  jget answers only what it is sure to answer byte for byte
 * as jq 1.6 does:
 *
 *   FILTER  a plain path: `.`, then `.name`, `[N]` (N >= 0) and `[]`
 *           steps, optionally followed by `| length`;
 *   input   one or more JSON texts whose numbers are integers of at most
 *           2^53 in magnitude, without duplicate keys;
 *   output  not to a terminal (jq colours it there).
 *
 * Anything else (another option, any other filter, a real number, invalid
 * JSON, a step jq would refuse, such as `.a` of a string) is handed to jq
 * itself, unchanged: the same arguments and the same input bytes, nothing
 * printed before.  tests/integration/0001-jget.sh compares the two on a
 * table of inputs and filters, so a jq upgrade that changes its output
 * shows up there first.  With JGET_STRICT set in the environment, jget
 * exits 3 instead of running jq (that test's check of what jget answers).
 *
 * Built without sbx's library; links jansson (host only, never in a
 * sandbox).
 */
#include <sys/mman.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS_MAX 32
#define INT_EXACT (INT64_C(1) << 53)

enum { STEP_KEY, STEP_INDEX, STEP_ITER };

struct step {
	int	    kind;
	const char *key;
	size_t	    keylen;
	size_t	    index;
};

struct out {
	char  *buf;
	size_t len;
	size_t cap;
};

static char **g_argv;
static char  *g_in; /* input read from stdin, or NULL */
static size_t g_inlen;

static int o_raw, o_compact, o_exit, o_join;

static void fallback(void) __attribute__((noreturn));

/*
 * fallback: run jq itself with our arguments.  Input we read from stdin
 * is given to it through a memory file, from its first byte.
 */
static void
fallback(void)
{
	int fd;

	/* The differential test asks which cases jget answers itself. */
	if (getenv("JGET_STRICT") != NULL)
		exit(3);
	if (g_in != NULL) {
		fd = memfd_create("jget", 0);
		if (fd == -1)
			goto fail;
		for (size_t off = 0; off < g_inlen;) {
			ssize_t n = write(fd, g_in + off, g_inlen - off);
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0)
				goto fail;
			off += (size_t)n;
		}
		if (lseek(fd, 0, SEEK_SET) != 0 || dup2(fd, 0) == -1)
			goto fail;
		close(fd);
	}
	g_argv[0] = "jq";
	execvp("jq", g_argv);
fail:
	fprintf(stderr, "jget: cannot run jq: %s\n", strerror(errno));
	exit(2);
}

static void
out_put(struct out *o, const char *s, size_t n)
{
	if (o->cap - o->len < n) {
		size_t cap = o->cap ? o->cap : 4096;

		while (cap - o->len < n)
			cap *= 2;
		if ((o->buf = realloc(o->buf, cap)) == NULL)
			fallback();
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

static void
out_str(struct out *o, const char *s)
{
	out_put(o, s, strlen(s));
}

/* A string as jq 1.6's jvp_dump_string writes it (not ASCII-only). */
static void
dump_string(struct out *o, const char *s, size_t n)
{
	char u[8];

	out_put(o, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (c) {
		case '"': out_str(o, "\\\""); break;
		case '\\': out_str(o, "\\\\"); break;
		case '\b': out_str(o, "\\b"); break;
		case '\t': out_str(o, "\\t"); break;
		case '\r': out_str(o, "\\r"); break;
		case '\n': out_str(o, "\\n"); break;
		case '\f': out_str(o, "\\f"); break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(u, sizeof(u), "\\u%04x", c);
				out_str(o, u);
			} else
				out_put(o, (const char *)&c, 1);
		}
	}
	out_put(o, "\"", 1);
}

static void
newline_indent(struct out *o, int depth)
{
	out_put(o, "\n", 1);
	for (int i = 0; i < depth; i++)
		out_put(o, "  ", 2);
}

/* A value as jq 1.6 dumps it: compact (-c) or indented by two. */
static int
dump(struct out *o, json_t *v, int depth)
{
	char	    num[32];
	const char *k;
	json_t	   *e;
	size_t	    i;
	int	    first = 1;

	switch (json_typeof(v)) {
	case JSON_NULL: out_str(o, "null"); return 0;
	case JSON_TRUE: out_str(o, "true"); return 0;
	case JSON_FALSE: out_str(o, "false"); return 0;
	case JSON_INTEGER:
		if (json_integer_value(v) > INT_EXACT ||
		    json_integer_value(v) < -INT_EXACT)
			return -1;
		snprintf(num, sizeof(num), "%lld",
		    (long long)json_integer_value(v));
		out_str(o, num);
		return 0;
	case JSON_STRING:
		dump_string(o, json_string_value(v), json_string_length(v));
		return 0;
	case JSON_ARRAY:
		if (json_array_size(v) == 0) {
			out_str(o, "[]");
			return 0;
		}
		out_put(o, "[", 1);
		json_array_foreach (v, i, e) {
			if (!first)
				out_put(o, ",", 1);
			first = 0;
			if (!o_compact)
				newline_indent(o, depth + 1);
			if (dump(o, e, depth + 1) == -1)
				return -1;
		}
		if (!o_compact)
			newline_indent(o, depth);
		out_put(o, "]", 1);
		return 0;
	case JSON_OBJECT:
		if (json_object_size(v) == 0) {
			out_str(o, "{}");
			return 0;
		}
		out_put(o, "{", 1);
		json_object_foreach (v, k, e) {
			if (!first)
				out_put(o, ",", 1);
			first = 0;
			if (!o_compact)
				newline_indent(o, depth + 1);
			dump_string(o, k, strlen(k));
			out_str(o, o_compact ? ":" : ": ");
			if (dump(o, e, depth + 1) == -1)
				return -1;
		}
		if (!o_compact)
			newline_indent(o, depth);
		out_put(o, "}", 1);
		return 0;
	default: /* JSON_REAL: jq's number format is its own */ return -1;
	}
}

/* Per input, as jq 1.6's process(): 14 no output, 11 false/null, 0. */
static int g_ret;

static int
emit(struct out *o, json_t *v)
{
	if (o_raw && json_is_string(v)) {
		out_put(o, json_string_value(v), json_string_length(v));
		g_ret = 0;
	} else {
		g_ret = (json_is_null(v) || json_is_false(v)) ? 11 : 0;
		if (dump(o, v, 0) == -1)
			return -1;
	}
	if (!o_join)
		out_put(o, "\n", 1);
	return 0;
}

static int
is_ident_start(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int
is_ident(int c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* jq 1.6 keywords: not field names after a dot. */
static int
is_keyword(const char *s, size_t n)
{
	static const char *const kw[] = { "def", "if", "then", "elif", "else",
		"end", "as", "reduce", "foreach", "try", "catch", "label",
		"import", "include", "and", "or", "not", "__loc__" };

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (strlen(kw[i]) == n && memcmp(kw[i], s, n) == 0)
			return 1;
	return 0;
}

static const char *
skip_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	return p;
}

/* parse FILTER into steps; 1 if `| length` ends it; -1 if unsupported. */
static int
parse(const char *f, struct step *st, size_t *nst)
{
	const char *p = skip_ws(f);
	size_t	    n = 0;

	if (*p++ != '.')
		return -1;
	if (is_ident_start(*p)) {
		st[n].kind = STEP_KEY;
		st[n].key = p;
		while (is_ident(*p))
			p++;
		st[n].keylen = (size_t)(p - st[n].key);
		n++;
	}
	for (;;) {
		if (n == STEPS_MAX)
			return -1;
		if (p[0] == '[' && p[1] == ']') {
			st[n++].kind = STEP_ITER;
			p += 2;
		} else if (p[0] == '[' && p[1] >= '0' && p[1] <= '9') {
			size_t idx = 0;

			for (p++; *p >= '0' && *p <= '9'; p++) {
				if (idx > 100000)
					return -1;
				idx = idx * 10 + (size_t)(*p - '0');
			}
			if (*p++ != ']')
				return -1;
			st[n].kind = STEP_INDEX;
			st[n++].index = idx;
		} else if (p[0] == '.' && is_ident_start(p[1])) {
			st[n].kind = STEP_KEY;
			st[n].key = ++p;
			while (is_ident(*p))
				p++;
			st[n].keylen = (size_t)(p - st[n].key);
			n++;
		} else
			break;
	}
	for (size_t i = 0; i < n; i++)
		if (st[i].kind == STEP_KEY &&
		    is_keyword(st[i].key, st[i].keylen))
			return -1;
	*nst = n;
	p = skip_ws(p);
	if (*p == '\0')
		return 0;
	if (*p++ != '|')
		return -1;
	p = skip_ws(p);
	if (strncmp(p, "length", 6) != 0)
		return -1;
	p = skip_ws(p + 6);
	return *p == '\0' ? 1 : -1;
}

/* eval: apply steps to V, emitting each result; -1 where jq would fail. */
static int
eval(struct out *o, json_t *v, const struct step *st, size_t nst, int length)
{
	json_t	   *e, *r;
	const char *k;
	size_t	    i;
	char	    key[256];

	if (nst == 0) {
		if (!length)
			return emit(o, v);
		switch (json_typeof(v)) {
		case JSON_NULL: r = json_integer(0); break;
		case JSON_ARRAY:
			r = json_integer((json_int_t)json_array_size(v));
			break;
		case JSON_OBJECT:
			r = json_integer((json_int_t)json_object_size(v));
			break;
		default: return -1;
		}
		if (r == NULL)
			return -1;
		i = (size_t)emit(o, r);
		json_decref(r);
		return (int)i;
	}
	switch (st->kind) {
	case STEP_KEY:
		if (json_is_null(v))
			return eval(o, json_null(), st + 1, nst - 1, length);
		if (!json_is_object(v) || st->keylen >= sizeof(key))
			return -1;
		memcpy(key, st->key, st->keylen);
		key[st->keylen] = '\0';
		e = json_object_get(v, key);
		return eval(o, e ? e : json_null(), st + 1, nst - 1, length);
	case STEP_INDEX:
		if (json_is_null(v))
			return eval(o, json_null(), st + 1, nst - 1, length);
		if (!json_is_array(v))
			return -1;
		e = json_array_get(v, st->index);
		return eval(o, e ? e : json_null(), st + 1, nst - 1, length);
	default:
		if (json_is_array(v)) {
			json_array_foreach (v, i, e)
				if (eval(o, e, st + 1, nst - 1, length) == -1)
					return -1;
			return 0;
		}
		if (json_is_object(v)) {
			json_object_foreach (v, k, e)
				if (eval(o, e, st + 1, nst - 1, length) == -1)
					return -1;
			return 0;
		}
		return -1;
	}
}

static char *
slurp(int fd, size_t *len)
{
	size_t cap = 65536, n = 0;
	char  *b = malloc(cap + 1);

	if (b == NULL)
		return NULL;
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *nb = realloc(b, cap * 2 + 1);

			if (nb == NULL)
				return free(b), NULL;
			b = nb;
			cap *= 2;
		}
		r = read(fd, b + n, cap - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return free(b), NULL;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	b[n] = '\0';
	*len = n;
	return b;
}

int
main(int argc, char **argv)
{
	struct step st[STEPS_MAX];
	struct out  o = { NULL, 0, 0 };
	size_t	    nst, off, len, ninputs = 0;
	const char *filter = NULL, *file = NULL;
	char	   *in;
	int	    i, length, fd;

	g_argv = argv;
	for (i = 1; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
		for (const char *c = argv[i] + 1; *c != '\0'; c++) {
			switch (*c) {
			case 'r': o_raw = 1; break;
			case 'c': o_compact = 1; break;
			case 'e': o_exit = 1; break;
			case 'j': o_raw = o_join = 1; break;
			default: fallback();
			}
		}
	}
	if (i < argc)
		filter = argv[i++];
	if (i < argc)
		file = argv[i++];
	if (filter == NULL || i != argc || isatty(1))
		fallback();
	if ((length = parse(filter, st, &nst)) == -1)
		fallback();

	if (file != NULL) {
		if ((fd = open(file, O_RDONLY | O_CLOEXEC)) == -1)
			fallback();
		in = slurp(fd, &len);
		close(fd);
	} else
		in = g_in = slurp(0, &len), g_inlen = len;
	if (in == NULL)
		fallback();
	/* jq prints -0 as "-0"; jansson reads it as the integer 0. */
	if (memmem(in, len, "-0", 2) != NULL)
		fallback();

	for (off = 0;;) {
		json_error_t err;
		json_t	    *v;

		while (off < len && strchr(" \t\r\n", in[off]) != NULL)
			off++;
		if (off == len)
			break;
		v = json_loadb(in + off, len - off,
		    JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES |
			JSON_DECODE_ANY,
		    &err);
		if (v == NULL || err.position <= 0)
			fallback();
		off += (size_t)err.position;
		/* jq needs no separator between texts; be strict. */
		if (off < len && strchr(" \t\r\n", in[off]) == NULL)
			fallback();
		g_ret = 14;
		if (eval(&o, v, st, nst, length) == -1)
			fallback();
		json_decref(v);
		ninputs++;
	}
	/* -e after no input at all: leave the exact status to jq. */
	if (o_exit && ninputs == 0)
		fallback();
	if (o.len > 0 && fwrite(o.buf, 1, o.len, stdout) != o.len)
		return 2;
	if (fflush(stdout) == EOF)
		return 2;
	if (o_exit && g_ret >= 10)
		return g_ret - 10;
	return 0;
}
