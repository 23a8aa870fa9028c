/* t-time: the monotonic clock and the one UTC timestamp format. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"

#include "time.h"

/* Does s match the pattern, where `9` is any digit? */
static int
shaped(const char *s, const char *pat)
{
	for (; *pat != '\0'; s++, pat++)
		if (*pat == '9' ? !isdigit((unsigned char)*s) : *s != *pat)
			return 0;
	return *s == '\0';
}

int
main(void)
{
	char		 b[SBX_TIME_ISO_MAX], c[SBX_TIME_ISO_MAX];
	long long	 a, z;
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };

	a = sbx_now_ms();
	nanosleep(&ts, NULL);
	z = sbx_now_ms();
	ok(a > 0 && z - a >= 20, "sbx_now_ms: monotonic milliseconds");

	sbx_time_utc_iso_at(0, b);
	is_str(b, "1970-01-01T00:00:00Z", "the epoch");
	sbx_time_utc_iso_at(1700000000, b);
	is_str(b, "2023-11-14T22:13:20Z", "a known instant, UTC");
	/* TZ is never consulted. */
	setenv("TZ", "Asia/Kolkata", 1);
	tzset();
	sbx_time_utc_iso_at(1700000000, c);
	is_str(c, b, "the same under another TZ");
	sbx_time_utc_iso_at(253402300799, b);
	is_str(b, "9999-12-31T23:59:59Z", "the last second of year 9999");

	sbx_time_utc_iso(b);
	ok(shaped(b, "9999-99-99T99:99:99Z"), "now: YYYY-MM-DDTHH:MM:SSZ (%s)",
	    b);
	sbx_time_utc_iso_ms(c);
	ok(shaped(c, "9999-99-99T99:99:99.999Z"), "now with milliseconds: "
	    "YYYY-MM-DDTHH:MM:SS.mmmZ (%s)", c);
	return done_testing();
}
