/* error.c: filling struct sbx_error. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

int
sbx_error_kind_retryable(const char *kind)
{
	return kind != NULL && (strcmp(kind, SBX_K_UNAVAILABLE) == 0 ||
	    strcmp(kind, SBX_K_TIMEOUT) == 0);
}

static void
error_vset(struct sbx_error *e, const char *kind, const char *field,
    const char *reason, const char *fmt, va_list ap)
{
	e->kind = kind;
	e->field = field;
	e->reason = reason;
	e->retryable = sbx_error_kind_retryable(kind);
	e->hint[0] = '\0';
	if (vsnprintf(e->message, sizeof(e->message), fmt, ap) < 0)
		e->message[0] = '\0';
}

/* Always returns -1 so that callers can write `return sbx_error_set(...)`. */
int
sbx_error_set(struct sbx_error *e, const char *kind, const char *field,
    const char *reason, const char *fmt, ...)
{
	va_list	 ap;
	int	 saved = errno;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	error_vset(e, kind, field, reason, fmt, ap);
	va_end(ap);
	e->sys_errno = 0;
	errno = saved;
	return -1;
}

/* A system call failed: execution_error with strerror(errno) appended. */
int
sbx_error_sys(struct sbx_error *e, const char *reason, const char *fmt, ...)
{
	va_list	 ap;
	size_t	 n;
	int	 saved = errno;

	if (e == NULL)
		return -1;
	va_start(ap, fmt);
	error_vset(e, SBX_K_EXECUTION_ERROR, NULL, reason, fmt, ap);
	va_end(ap);
	n = strlen(e->message);
	if (n < sizeof(e->message))
		snprintf(e->message + n, sizeof(e->message) - n, ": %s",
		    strerror(saved));
	e->sys_errno = saved;
	errno = saved;
	return -1;
}

void
sbx_error_hint(struct sbx_error *e, const char *fmt, ...)
{
	va_list	 ap;

	if (e == NULL)
		return;
	va_start(ap, fmt);
	if (vsnprintf(e->hint, sizeof(e->hint), fmt, ap) < 0)
		e->hint[0] = '\0';
	va_end(ap);
}

int
sbx_error_absent(const struct sbx_error *e)
{
	return e->sys_errno == ENOENT ||
	    (e->kind != NULL && strcmp(e->kind, SBX_K_NOT_FOUND) == 0);
}

void
sbx_error_in_file(struct sbx_error *e, const char *path, const char *fmt, ...)
{
	char	msg[2 * sizeof(e->message)];
	va_list ap;

	if (e == NULL || path == NULL)
		return;
	/* Already named (a message of the form "PATH: ..." or naming it
	 * elsewhere): left as it is. */
	if (strstr(e->message, path) == NULL) {
		snprintf(msg, sizeof(msg), "%s: %s", path,
		    e->message[0] != '\0' ? e->message : "cannot be read");
		memcpy(e->message, msg, sizeof(e->message) - 1);
		e->message[sizeof(e->message) - 1] = '\0';
	}
	if (fmt != NULL) {
		va_start(ap, fmt);
		if (vsnprintf(e->hint, sizeof(e->hint), fmt, ap) < 0)
			e->hint[0] = '\0';
		va_end(ap);
	}
}
