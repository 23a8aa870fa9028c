/* tap.h: a tiny TAP producer for the unit tests (run by prove). */
#ifndef SBX_TAP_H
#define SBX_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/*
 * diag: a TAP comment, "# " before every line of the message, on stdout
 * with the test lines (prove shows it with -v, and next to a failure).
 */
__attribute__((format(printf, 1, 2), unused)) static void
diag(const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[4096], *p, *nl;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (p = msg;; p = nl + 1) {
		if ((nl = strchr(p, '\n')) != NULL)
			*nl = '\0';
		printf("# %s\n", p);
		if (nl == NULL || nl[1] == '\0')
			break;
	}
	fflush(stdout);
}

/* The reason of a skip, on one line: a newline would end the TAP line. */
__attribute__((format(printf, 3, 0), unused)) static void
tap_reason(char *msg, size_t size, const char *fmt, va_list ap)
{
	char	*p;

	vsnprintf(msg, size, fmt, ap);
	for (p = msg; *p != '\0'; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
}

/* skip_n: n tests that cannot run here, each "ok N # skip reason". */
__attribute__((format(printf, 2, 3), unused)) static void
skip_n(int n, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];

	va_start(ap, fmt);
	tap_reason(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	while (n-- > 0)
		printf("ok %d # skip %s\n", ++tap_n, msg);
	fflush(stdout);
}

/* skip: one test that cannot run here. */
__attribute__((format(printf, 1, 2), unused)) static void
skip(const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];

	va_start(ap, fmt);
	tap_reason(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("ok %d # skip %s\n", ++tap_n, msg);
	fflush(stdout);
}

/* skip_all: nothing of the file can run here; before any test only.
 * Prints the plan "1..0 # skip reason" and exits 0. */
__attribute__((format(printf, 1, 2), noreturn, unused)) static void
skip_all(const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[1024];

	va_start(ap, fmt);
	tap_reason(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("1..0 # skip %s\n", msg);
	fflush(stdout);
	exit(0);
}

#define is_str(got, want, name) do {					\
	const char *g_ = (got), *w_ = (want);				\
	if (!ok(g_ != NULL && w_ != NULL && strcmp(g_, w_) == 0,	\
	    "%s", (name)))						\
		diag("  got:  '%s'\n  want: '%s'",			\
		    g_ ? g_ : "(null)", w_ ? w_ : "(null)");		\
} while (0)

#define is_int(got, want, name) do {					\
	long long g_ = (got), w_ = (want);				\
	if (!ok(g_ == w_, "%s", (name)))				\
		diag("  got: %lld want: %lld", g_, w_);			\
} while (0)

static int
done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
