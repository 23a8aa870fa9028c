/* capture.c: head + tail ring capture; memory never exceeds cap. */
#include <stdlib.h>
#include <string.h>

#include "capture.h"

void
sbx_capture_init(struct sbx_capture *c, size_t cap, int keep)
{
	memset(c, 0, sizeof(*c));
	c->cap = cap;
	c->keep = keep;
}

int
sbx_capture_add(struct sbx_capture *c, const char *p, size_t n)
{
	size_t	 hcap = c->cap / 2, room, k;

	c->total += n;
	if (!c->keep)
		return 0;
	if (c->head.len < hcap) {
		room = hcap - c->head.len;
		k = n < room ? n : room;
		if (sbx_buf_append(&c->head, p, k) == -1)
			return -1;
		p += k;
		n -= k;
	}
	if (n == 0)
		return 0;
	if (c->ring == NULL) {
		c->ring_cap = c->cap - hcap;
		if (c->ring_cap == 0)
			return 0;
		if ((c->ring = malloc(c->ring_cap)) == NULL)
			return -1;
	}
	/* Only the last ring_cap bytes of this chunk can survive. */
	if (n > c->ring_cap) {
		p += n - c->ring_cap;
		n = c->ring_cap;
	}
	while (n > 0) {
		k = c->ring_cap - c->ring_pos;
		if (k > n)
			k = n;
		memcpy(c->ring + c->ring_pos, p, k);
		c->ring_pos = (c->ring_pos + k) % c->ring_cap;
		c->ring_len = c->ring_len + k > c->ring_cap ? c->ring_cap :
		    c->ring_len + k;
		p += k;
		n -= k;
	}
	return 0;
}

int
sbx_capture_truncated(const struct sbx_capture *c)
{
	return c->total > (unsigned long long)(c->head.len + c->ring_len);
}

int
sbx_capture_render(const struct sbx_capture *c, struct sbx_buf *out)
{
	size_t	 start;

	if (c->head.len && sbx_buf_append(out, c->head.p, c->head.len) == -1)
		return -1;
	if (sbx_capture_truncated(c) && sbx_buf_printf(out,
	    "\n[sbx: %llu bytes omitted]\n", c->total - c->head.len -
	    c->ring_len) == -1)
		return -1;
	if (c->ring_len == 0)
		return out->p ? 0 : sbx_buf_append(out, "", 0);
	start = c->ring_len < c->ring_cap ? 0 : c->ring_pos;
	if (c->ring_len < c->ring_cap)
		return sbx_buf_append(out, c->ring, c->ring_len);
	if (sbx_buf_append(out, c->ring + start, c->ring_cap - start) == -1)
		return -1;
	return sbx_buf_append(out, c->ring, start);
}

void
sbx_capture_release(struct sbx_capture *c)
{
	sbx_buf_release(&c->head);
	free(c->ring);
	c->ring = NULL;
	c->ring_len = c->ring_pos = 0;
}
