/* buf.c: growable byte buffers and string vectors. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

static int
buf_grow(struct sbx_buf *b, size_t need)
{
	size_t	 cap;
	char	*p;

	if (need < b->len || need == (size_t)-1) {
		errno = EOVERFLOW;
		return -1;
	}
	if (need + 1 <= b->cap)
		return 0;
	cap = b->cap ? b->cap : 64;
	while (cap < need + 1) {
		if (cap > ((size_t)-1) / 2) {
			errno = ENOMEM;
			return -1;
		}
		cap *= 2;
	}
	if ((p = realloc(b->p, cap)) == NULL)
		return -1;
	b->p = p;
	b->cap = cap;
	return 0;
}

int
sbx_buf_append(struct sbx_buf *b, const void *data, size_t n)
{
	if (buf_grow(b, b->len + n) == -1)
		return -1;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int
sbx_buf_puts(struct sbx_buf *b, const char *s)
{
	return sbx_buf_append(b, s, strlen(s));
}

int
sbx_buf_vprintf(struct sbx_buf *b, const char *fmt, va_list ap)
{
	va_list	 ap2;
	int	 n;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -1;
	if (buf_grow(b, b->len + (size_t)n) == -1)
		return -1;
	if (vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap) != n)
		return -1;
	b->len += (size_t)n;
	return 0;
}

int
sbx_buf_printf(struct sbx_buf *b, const char *fmt, ...)
{
	va_list	 ap;
	int	 rc;

	va_start(ap, fmt);
	rc = sbx_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

char *
sbx_buf_detach(struct sbx_buf *b)
{
	char	*p;

	if (b->p == NULL && buf_grow(b, 0) == -1)
		return NULL;
	b->p[b->len] = '\0';
	p = b->p;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

void
sbx_buf_reset(struct sbx_buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

void
sbx_buf_release(struct sbx_buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

int
sbx_strv_push(struct sbx_strv *sv, const char *s)
{
	char	**v;
	char	 *d;
	size_t	  cap;

	if (sv->n + 2 > sv->cap) {
		cap = sv->cap ? sv->cap * 2 : 32;
		if ((v = reallocarray(sv->v, cap, sizeof(*v))) == NULL)
			return -1;
		sv->v = v;
		sv->cap = cap;
	}
	if ((d = strdup(s)) == NULL)
		return -1;
	sv->v[sv->n++] = d;
	sv->v[sv->n] = NULL;
	return 0;
}

int
sbx_strv_pushf(struct sbx_strv *sv, const char *fmt, ...)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	va_list		 ap;
	int		 rc;

	va_start(ap, fmt);
	rc = sbx_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	if (rc == 0)
		rc = sbx_strv_push(sv, b.p ? b.p : "");
	sbx_buf_release(&b);
	return rc;
}

void
sbx_strv_release(struct sbx_strv *sv)
{
	size_t	 i;

	for (i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}
