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

/*
 * Put a terminal that sandboxed code wrote to back into a state where what
 * sbx prints next is seen as printed: end any escape string left open (ST)
 * and cancel any sequence (CAN); plain attributes (no invisible or
 * same-colour text); the ASCII character set (no line-drawing look-alikes);
 * leave the alternate screen; with the cursor saved and restored around
 * them (both move it home), the full screen as the scroll region and
 * origin mode off; insert mode off, autowrap on, the cursor shown,
 * bracketed paste off.  Moves nothing and prints nothing visible.
 */
#define SBX_TERM_SANE	"\033\\\030\033[0m\033(B\017\033[?1049l" \
			"\0337\033[r\033[?6l\0338\033[4l\033[?7h\033[?25h" \
			"\033[?2004l"

#endif
