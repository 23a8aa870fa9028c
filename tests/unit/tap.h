/* tap.h: a tiny TAP producer for the unit tests (run by prove). */
#ifndef SBX_TAP_H
#define SBX_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

__attribute__((unused)) static void
plan(int n)
{
	printf("1..%d\n", n);
}

__attribute__((format(printf, 2, 3))) static int
ok(int cond, const char *fmt, ...)
{
	va_list	 ap;

	tap_n++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (!cond)
		tap_failed++;
	fflush(stdout);
	return cond;
}

#define is_str(got, want, name) do {					\
	const char *g_ = (got), *w_ = (want);				\
	if (!ok(g_ != NULL && w_ != NULL && strcmp(g_, w_) == 0,	\
	    "%s", (name)))						\
		printf("#   got:  '%s'\n#   want: '%s'\n",		\
		    g_ ? g_ : "(null)", w_ ? w_ : "(null)");		\
} while (0)

#define is_int(got, want, name) do {					\
	long long g_ = (got), w_ = (want);				\
	if (!ok(g_ == w_, "%s", (name)))				\
		printf("#   got: %lld want: %lld\n", g_, w_);	\
} while (0)

static int
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
