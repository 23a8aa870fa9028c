/* utf8.c: UTF-8 validation and sanitising. */
#include <stdio.h>

#include "utf8.h"

size_t
sbx_utf8_decode(const char *src, size_t n, unsigned long *cpp)
{
	const unsigned char	*s = (const unsigned char *)src;
	unsigned int		 c = s[0];
	size_t			 len, i;
	unsigned long		 cp;

	if (c < 0x80) {
		*cpp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*cpp = cp;
	return len;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t
utf8_seq(const unsigned char *s, size_t n)
{
	unsigned long	 cp;

	return sbx_utf8_decode((const char *)s, n, &cp);
}

int
sbx_utf8_valid(const char *src, size_t len)
{
	const unsigned char	*s = (const unsigned char *)src;
	size_t			 i = 0, k;

	while (i < len) {
		if ((k = utf8_seq(s + i, len - i)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

int
sbx_utf8_sanitize(struct sbx_buf *dst, const char *src, size_t len)
{
	const unsigned char	*s = (const unsigned char *)src;
	size_t			 i = 0, start = 0, k;

	while (i < len) {
		if ((k = utf8_seq(s + i, len - i)) != 0) {
			i += k;
			continue;
		}
		if (sbx_buf_append(dst, src + start, i - start) == -1 ||
		    sbx_buf_append(dst, "\xef\xbf\xbd", 3) == -1)
			return -1;
		i++;
		start = i;
	}
	return sbx_buf_append(dst, src + start, i - start);
}

int
sbx_utf8_escape_line(struct sbx_buf *dst, const char *src, size_t len)
{
	const unsigned char	*s = (const unsigned char *)src;
	size_t			 i, k;
	char			 hex[8];

	for (i = 0; i < len; ) {
		if (s[i] == '\\') {
			if (sbx_buf_append(dst, "\\\\", 2) == -1)
				return -1;
			i++;
			continue;
		}
		if (s[i] < 0x20 || s[i] == 0x7f) {
			snprintf(hex, sizeof(hex), "\\x%02x", s[i]);
			if (sbx_buf_puts(dst, hex) == -1)
				return -1;
			i++;
			continue;
		}
		k = utf8_seq(s + i, len - i);
		/* C1 controls (U+0080..U+009F) act like ESC on some terminals. */
		if (k == 0 || (k == 2 && s[i] == 0xc2 && s[i + 1] < 0xa0)) {
			snprintf(hex, sizeof(hex), "\\x%02x", s[i]);
			if (sbx_buf_puts(dst, hex) == -1)
				return -1;
			i++;
			continue;
		}
		if (sbx_buf_append(dst, src + i, k) == -1)
			return -1;
		i += k;
	}
	return 0;
}
