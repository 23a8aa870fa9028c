/* time.h: the clocks sbx reads, and its one UTC timestamp format. */
#ifndef SBX_TIME_H
#define SBX_TIME_H

#include <time.h>

/* "YYYY-MM-DDTHH:MM:SS.mmmZ" and its terminating NUL fit. */
#define SBX_TIME_ISO_MAX	32

/* Milliseconds of CLOCK_MONOTONIC: for deadlines and durations, never for
 * what a person reads (it does not jump with the wall clock). */
long long sbx_now_ms(void);
/* The wall-clock time t as RFC 3339 UTC, "YYYY-MM-DDTHH:MM:SSZ". */
void	sbx_time_utc_iso_at(time_t t, char out[SBX_TIME_ISO_MAX]);
/* Now, as RFC 3339 UTC, "YYYY-MM-DDTHH:MM:SSZ" (records, reports). */
void	sbx_time_utc_iso(char out[SBX_TIME_ISO_MAX]);
/* Now, with milliseconds, "YYYY-MM-DDTHH:MM:SS.mmmZ" (logs, bindings). */
void	sbx_time_utc_iso_ms(char out[SBX_TIME_ISO_MAX]);

#endif
