/* psl.c: the Public Suffix List (see psl.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "fsutil.h"
#include "psl.h"

#define LABEL_MAX	63
#define NAME_MAX_	253

/* ---- punycode (RFC 3492 section 6.3, the encoder) -------------------- */

enum { P_BASE = 36, P_TMIN = 1, P_TMAX = 26, P_SKEW = 38, P_DAMP = 700,
	P_BIAS = 72, P_N = 0x80 };

static uint32_t
adapt(uint32_t delta, uint32_t n, int first)
{
	uint32_t	 k = 0;

	delta = first ? delta / P_DAMP : delta / 2;
	delta += delta / n;
	while (delta > ((P_BASE - P_TMIN) * P_TMAX) / 2) {
		delta /= P_BASE - P_TMIN;
		k += P_BASE;
	}
	return k + (P_BASE - P_TMIN + 1) * delta / (delta + P_SKEW);
}

static char
digit(uint32_t d)
{
	return (char)(d < 26 ? 'a' + d : '0' + d - 26);
}

/* UTF-8 to code points; -1 on anything malformed. */
static int
utf8_decode(const char *s, size_t len, uint32_t *cp, size_t max, size_t *n)
{
	const unsigned char	*p = (const unsigned char *)s;
	size_t			 i = 0, k, more;
	uint32_t		 c, min;

	*n = 0;
	while (i < len) {
		c = p[i];
		if (c < 0x80) {
			more = 0;
			min = 0;
		} else if ((c & 0xe0) == 0xc0) {
			more = 1;
			c &= 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			more = 2;
			c &= 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			more = 3;
			c &= 0x07;
			min = 0x10000;
		} else
			return -1;
		if (more > 0 && i + more >= len)
			return -1;
		for (k = 1; k <= more; k++) {
			if ((p[i + k] & 0xc0) != 0x80)
				return -1;
			c = (c << 6) | (p[i + k] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ||
		    *n >= max)
			return -1;
		cp[(*n)++] = c;
		i += more + 1;
	}
	return 0;
}

int
sbx_psl_punycode(const char *label, size_t len, char *out, size_t outsz)
{
	uint32_t	 cp[LABEL_MAX * 4], n = P_N, delta = 0, bias = P_BIAS;
	uint32_t	 m, q, k, t, h, b;
	size_t		 ncp, i, o = 0;

	if (utf8_decode(label, len, cp, sizeof(cp) / sizeof(cp[0]), &ncp) ==
	    -1 || ncp == 0 || outsz < 5)
		return -1;
	memcpy(out, "xn--", 4);
	o = 4;
	for (i = 0; i < ncp; i++)
		if (cp[i] < 0x80) {
			if (o + 1 >= outsz)
				return -1;
			out[o++] = (char)cp[i];
		}
	h = b = (uint32_t)(o - 4);
	if (b > 0) {
		if (o + 1 >= outsz)
			return -1;
		out[o++] = '-';
	}
	while (h < ncp) {
		for (m = UINT32_MAX, i = 0; i < ncp; i++)
			if (cp[i] >= n && cp[i] < m)
				m = cp[i];
		if ((m - n) > (UINT32_MAX - delta) / (h + 1))
			return -1;
		delta += (m - n) * (h + 1);
		n = m;
		for (i = 0; i < ncp; i++) {
			if (cp[i] < n && ++delta == 0)
				return -1;
			if (cp[i] != n)
				continue;
			for (q = delta, k = P_BASE;; k += P_BASE) {
				t = k <= bias ? P_TMIN : k >= bias + P_TMAX ?
				    P_TMAX : k - bias;
				if (q < t)
					break;
				if (o + 1 >= outsz)
					return -1;
				out[o++] = digit(t + (q - t) % (P_BASE - t));
				q = (q - t) / (P_BASE - t);
			}
			if (o + 1 >= outsz)
				return -1;
			out[o++] = digit(q);
			bias = adapt(delta, h + 1, h == b);
			delta = 0;
			h++;
		}
		delta++;
		n++;
	}
	out[o] = '\0';
	return 0;
}

/* ---- the list --------------------------------------------------------- */

static int
cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A rule, normalised into out ("!" or "*." kept in front): lowercase
 * ASCII labels of letters, digits and '-', or Unicode labels converted.
 * 0, or -1 to skip it. */
static int
rule_norm(const char *s, size_t len, char *out, size_t outsz)
{
	size_t		 i, j, k, o = 0, pre = 0;
	unsigned char	 c;
	int		 ascii;

	if (len > 0 && s[0] == '!')
		pre = 1;
	else if (len > 1 && s[0] == '*' && s[1] == '.')
		pre = 2;
	if (pre >= len || pre + 1 > outsz)
		return -1;
	memcpy(out, s, pre);
	o = pre;
	for (i = pre; i < len; i = j + 1) {
		for (j = i; j < len && s[j] != '.'; j++)
			;
		if (j == i || j - i > 4 * LABEL_MAX)
			return -1;
		for (ascii = 1, k = i; k < j; k++)
			if ((unsigned char)s[k] >= 0x80)
				ascii = 0;
		if (o > pre) {
			if (o + 1 >= outsz)
				return -1;
			out[o++] = '.';
		}
		if (ascii) {
			if (j - i > LABEL_MAX || o + (j - i) >= outsz)
				return -1;
			for (; i < j; i++) {
				c = (unsigned char)s[i];
				if (c >= 'A' && c <= 'Z')
					c = (unsigned char)(c - 'A' + 'a');
				if (!((c >= 'a' && c <= 'z') ||
				    (c >= '0' && c <= '9') || c == '-'))
					return -1;
				out[o++] = (char)c;
			}
		} else {
			/* Unicode labels of the list are lowercase already
			 * (the list says so); only ASCII is folded. */
			if (sbx_psl_punycode(s + i, j - i, out + o, outsz - o)
			    == -1 || strlen(out + o) > LABEL_MAX)
				return -1;
			o += strlen(out + o);
		}
		if (j == len)
			break;
	}
	if (o - pre > NAME_MAX_ || (len > 0 && s[len - 1] == '.'))
		return -1;
	out[o] = '\0';
	return 0;
}

void
sbx_psl_free(struct sbx_psl *l)
{
	size_t	 i;

	for (i = 0; i < l->n; i++)
		free(l->rules[i]);
	free(l->rules);
	l->rules = NULL;
	l->n = 0;
}

int
sbx_psl_parse(struct sbx_psl *l, const char *text, size_t len,
    struct sbx_error *e)
{
	static const char	 begin[] = "// ===BEGIN ICANN DOMAINS===";
	static const char	 end[] = "// ===END ICANN DOMAINS===";
	const char		*p = text, *eol, *lim = text + len;
	char			 rule[NAME_MAX_ + 8], **v;
	size_t			 cap = 0, n;
	int			 sectioned, in;

	memset(l, 0, sizeof(*l));
	sectioned = memmem(text, len, begin, sizeof(begin) - 1) != NULL;
	in = !sectioned;
	for (; p < lim; p = eol + 1) {
		if ((eol = memchr(p, '\n', (size_t)(lim - p))) == NULL)
			eol = lim;
		n = (size_t)(eol - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		if (n >= sizeof(begin) - 1 &&
		    memcmp(p, begin, sizeof(begin) - 1) == 0)
			in = 1;
		else if (n >= sizeof(end) - 1 &&
		    memcmp(p, end, sizeof(end) - 1) == 0)
			in = 0;
		if (eol == lim && n == 0)
			break;
		if (!in || n == 0 || (n >= 2 && p[0] == '/' && p[1] == '/'))
			continue;
		/* The rule is the first word of the line. */
		n = strcspn(p, " \t\r\n") < n ? strcspn(p, " \t\r\n") : n;
		if (rule_norm(p, n, rule, sizeof(rule)) == -1)
			continue;
		if (l->n == cap) {
			cap = cap ? cap * 2 : 1024;
			if ((v = realloc(l->rules, cap * sizeof(*v))) == NULL)
				goto nomem;
			l->rules = v;
		}
		if ((l->rules[l->n] = strdup(rule)) == NULL)
			goto nomem;
		l->n++;
		if (eol == lim)
			break;
	}
	if (l->n > 0)
		qsort(l->rules, l->n, sizeof(*l->rules), cmp);
	return 0;
nomem:
	sbx_psl_free(l);
	return sbx_error_sys(e, "nomem", "cannot hold the public suffix list");
}

static int
has(const struct sbx_psl *l, const char *s)
{
	return l->n > 0 && bsearch(&s, l->rules, l->n, sizeof(*l->rules),
	    cmp) != NULL;
}

int
sbx_psl_is_suffix(const struct sbx_psl *l, const char *name)
{
	char		 buf[NAME_MAX_ + 8];
	const char	*dot;

	if (name == NULL || *name == '\0')
		return 0;
	/* The implicit "*" rule: every TLD is a public suffix. */
	if ((dot = strchr(name, '.')) == NULL)
		return 1;
	if (strlen(name) > NAME_MAX_)
		return 0;
	if (has(l, name))
		return 1;
	snprintf(buf, sizeof(buf), "!%s", name);
	if (has(l, buf))
		return 0;
	snprintf(buf, sizeof(buf), "*.%s", dot + 1);
	return has(l, buf);
}

const struct sbx_psl *
sbx_psl_system(const char *path, struct sbx_error *e)
{
	static struct sbx_psl	 sys;
	static int		 loaded;
	struct sbx_buf		 b = SBX_BUF_INIT;
	int			 fd, r;

	if (loaded)
		return &sys;
	if (path == NULL)
		path = SBX_PSL_PATH;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		goto missing;
	r = sbx_fs_read_fd(fd, &b, SBX_PSL_FILE_MAX);
	close(fd);
	if (r == -1 || b.len == 0) {
		sbx_buf_release(&b);
		goto missing;
	}
	if (sbx_psl_parse(&sys, b.p, b.len, e) == -1) {
		sbx_buf_release(&b);
		return NULL;
	}
	sbx_buf_release(&b);
	loaded = 1;
	return &sys;
missing:
	sbx_error_set(e, SBX_K_UNAVAILABLE, "psl", "psl_missing",
	    "cannot read the public suffix list %s, which wildcard entries "
	    "are checked against; install Debian's `publicsuffix` package",
	    path);
	return NULL;
}
