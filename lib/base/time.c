/* time.c: the clocks sbx reads, and its one UTC timestamp format. */
#include <stdio.h>
#include <time.h>

#include "time.h"

long long
sbx_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
utc(time_t t, long ms, char out[SBX_TIME_ISO_MAX])
{
	struct tm	 tm;
	size_t		 n;

	/* gmtime_r, never localtime: the output does not depend on TZ or
	 * on /etc/localtime (which a sandbox may not have). */
	if (gmtime_r(&t, &tm) == NULL) {
		snprintf(out, SBX_TIME_ISO_MAX, "1970-01-01T00:00:00Z");
		return;
	}
	n = strftime(out, SBX_TIME_ISO_MAX - 5, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ms < 0)
		snprintf(out + n, SBX_TIME_ISO_MAX - n, "Z");
	else
		snprintf(out + n, SBX_TIME_ISO_MAX - n, ".%03ldZ", ms % 1000);
}

void
sbx_time_utc_iso_at(time_t t, char out[SBX_TIME_ISO_MAX])
{
	utc(t, -1, out);
}

void
sbx_time_utc_iso(char out[SBX_TIME_ISO_MAX])
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	utc(ts.tv_sec, -1, out);
}

void
sbx_time_utc_iso_ms(char out[SBX_TIME_ISO_MAX])
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	utc(ts.tv_sec, ts.tv_nsec / 1000000, out);
}
