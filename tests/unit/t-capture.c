/* t-capture: bounded head+tail capture and UTF-8 handling. */
#include <stdlib.h>

#include "tap.h"

#include "capture.h"
#include "envelope.h"
#include "utf8.h"

int
main(void)
{
	struct sbx_capture	 c;
	struct sbx_buf		 b = SBX_BUF_INIT;
	char			 chunk[1000];
	int			 i;
	json_t			*j;

	sbx_capture_init(&c, 100, 1);
	sbx_capture_add(&c, "hello", 5);
	sbx_capture_render(&c, &b);
	is_str(b.p, "hello", "small output kept whole");
	ok(!sbx_capture_truncated(&c), "not truncated");
	sbx_capture_release(&c);
	sbx_buf_release(&b);

	/* 1 MB through a 100-byte capture: head, marker, tail. */
	sbx_capture_init(&c, 100, 1);
	for (i = 0; i < 1000; i++) {
		memset(chunk, 'a' + (i % 26), sizeof(chunk));
		sbx_capture_add(&c, chunk, sizeof(chunk));
	}
	sbx_capture_add(&c, "THE-END", 7);
	ok(c.head.len == 50 && c.ring_len == 50, "memory bounded by the cap");
	sbx_capture_render(&c, &b);
	ok(sbx_capture_truncated(&c), "truncated");
	ok(strncmp(b.p, "aaaa", 4) == 0, "head kept");
	ok(b.len >= 7 && strcmp(b.p + b.len - 7, "THE-END") == 0, "tail kept");
	ok(strstr(b.p, "[sbx: 999907 bytes omitted]") != NULL, "marker: %s",
	    strstr(b.p, "[sbx:") ? "present" : "missing");
	is_int((long long)c.total, 1000007, "total counted");
	sbx_capture_release(&c);
	sbx_buf_release(&b);

	/* Counting only. */
	sbx_capture_init(&c, 100, 0);
	sbx_capture_add(&c, "abc", 3);
	ok(c.total == 3 && c.head.len == 0 && c.ring == NULL, "count-only");
	sbx_capture_release(&c);

	/* UTF-8 */
	ok(sbx_utf8_valid("h\xc3\xa9llo", 6), "valid utf-8");
	ok(!sbx_utf8_valid("\xff", 1), "0xff invalid");
	ok(!sbx_utf8_valid("\xc0\xaf", 2), "overlong invalid");
	ok(!sbx_utf8_valid("\xed\xa0\x80", 3), "surrogate invalid");
	sbx_utf8_sanitize(&b, "a\xffz", 3);
	is_str(b.p, "a\xef\xbf\xbdz", "invalid byte replaced by U+FFFD");
	sbx_buf_release(&b);
	j = sbx_json_bytes("x\x80y", 3);
	ok(j != NULL && json_is_string(j), "json from invalid bytes");
	json_decref(j);
	sbx_utf8_escape_line(&b, "a\x1b[2Jb\nREADY\\", 13);
	is_str(b.p, "a\\x1b[2Jb\\x0aREADY\\\\", "terminal escaping");
	sbx_buf_release(&b);
	sbx_utf8_escape_line(&b, "\xc2\x9b" "x", 3);
	is_str(b.p, "\\xc2\\x9bx", "C1 control escaped");
	sbx_buf_release(&b);
	return done_testing();
}
