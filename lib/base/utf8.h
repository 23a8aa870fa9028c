/* utf8.h: making arbitrary bytes safe for JSON strings and terminals. */
#ifndef SBX_UTF8_H
#define SBX_UTF8_H

#include <stddef.h>

#include "buf.h"

/* Append src to dst, replacing each invalid UTF-8 sequence with U+FFFD. */
int	sbx_utf8_sanitize(struct sbx_buf *dst, const char *src, size_t len);
/* Nonzero when src is valid UTF-8 (overlongs, surrogates rejected). */
int	sbx_utf8_valid(const char *src, size_t len);
/* The valid UTF-8 sequence at src (n > 0 bytes there): its length (1..4)
 * and its code point in *cp, or 0 when it is not one (overlong,
 * surrogate, truncated). */
size_t	sbx_utf8_decode(const char *src, size_t n, unsigned long *cp);
/* Append src escaped for one line on a terminal: control characters
 * (C0, DEL, C1, ESC) become \xHH, backslash becomes \\, so a hostile string
 * can neither forge a line nor drive the terminal. */
int	sbx_utf8_escape_line(struct sbx_buf *dst, const char *src, size_t len);

#endif
