/* capture.h: bounded capture of a stream, keeping its head and its tail. */
#ifndef SBX_CAPTURE_H
#define SBX_CAPTURE_H

#include <stddef.h>

#include "buf.h"

struct sbx_capture {
	size_t			 cap;		/* bytes kept at most */
	struct sbx_buf		 head;		/* first cap/2 bytes */
	char			*ring;		/* last cap - cap/2 bytes */
	size_t			 ring_cap, ring_len, ring_pos;
	unsigned long long	 total;		/* bytes seen */
	int			 keep;		/* 0: only count */
};

void	sbx_capture_init(struct sbx_capture *, size_t cap, int keep);
int	sbx_capture_add(struct sbx_capture *, const char *, size_t);
int	sbx_capture_truncated(const struct sbx_capture *);
/* head, then "\n[sbx: N bytes omitted]\n" when truncated, then tail. */
int	sbx_capture_render(const struct sbx_capture *, struct sbx_buf *);
void	sbx_capture_release(struct sbx_capture *);

#endif
