/* buf.h: growable byte buffers and NULL-terminated string vectors. */
#ifndef SBX_BUF_H
#define SBX_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct sbx_buf {
	char	*p;		/* always NUL-terminated when non-NULL */
	size_t	 len;
	size_t	 cap;
};

#define SBX_BUF_INIT { NULL, 0, 0 }

int	 sbx_buf_append(struct sbx_buf *, const void *, size_t);
int	 sbx_buf_puts(struct sbx_buf *, const char *);
int	 sbx_buf_printf(struct sbx_buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
int	 sbx_buf_vprintf(struct sbx_buf *, const char *, va_list)
	    __attribute__((format(printf, 2, 0)));
char	*sbx_buf_detach(struct sbx_buf *);
void	 sbx_buf_reset(struct sbx_buf *);
void	 sbx_buf_release(struct sbx_buf *);

struct sbx_strv {
	char	**v;		/* NULL-terminated */
	size_t	  n;
	size_t	  cap;
};

#define SBX_STRV_INIT { NULL, 0, 0 }

int	 sbx_strv_push(struct sbx_strv *, const char *);
int	 sbx_strv_pushf(struct sbx_strv *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
void	 sbx_strv_release(struct sbx_strv *);

#endif
