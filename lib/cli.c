/* cli.c: shared command-line helpers (formatting only; cmd/ prints). */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "utf8.h"

int
sbx_cli_error_text(const char *prog, const struct sbx_error *e,
    struct sbx_buf *b)
{
	int	 rc = 0;

	rc |= sbx_buf_printf(b, "%s: ", prog);
	rc |= sbx_str_escape_line(b, e->message, strlen(e->message));
	rc |= sbx_buf_puts(b, "\n");
	if (e->hint[0]) {
		rc |= sbx_buf_printf(b, "%s: hint: ", prog);
		rc |= sbx_str_escape_line(b, e->hint, strlen(e->hint));
		rc |= sbx_buf_puts(b, "\n");
	}
	return rc ? -1 : 0;
}

int
sbx_cli_json_env(void)
{
	const char	*v = getenv("SBX_JSON");

	return v != NULL && strcmp(v, "1") == 0;
}

int
sbx_parse_seconds(const char *s, double max, double *out)
{
	char	*end;
	double	 d;
	const char *p;

	/* Digits and at most one dot only: no sign, exponent, hex, inf. */
	for (p = s; *p; p++)
		if (!((*p >= '0' && *p <= '9') || *p == '.'))
			return -1;
	if (*s == '\0' || strchr(s, '.') != strrchr(s, '.'))
		return -1;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end != '\0' || !isfinite(d) || d <= 0 || d > max)
		return -1;
	*out = d;
	return 0;
}

int
sbx_parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char			*end;
	unsigned long long	 v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end != '\0' || v > max)
		return -1;
	*out = v;
	return 0;
}

int
sbx_parse_bytes(const char *s, unsigned long long *out)
{
	char			*end;
	unsigned long long	 v, mul = 1;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	if (*end != '\0') {
		switch (*end) {
		case 'k': case 'K': mul = 1ULL << 10; break;
		case 'm': case 'M': mul = 1ULL << 20; break;
		case 'g': case 'G': mul = 1ULL << 30; break;
		default: return -1;
		}
		if (end[1] != '\0' && strcmp(end + 1, "iB") != 0 &&
		    strcmp(end + 1, "B") != 0)
			return -1;
	}
	if (v > (~0ULL) / mul)
		return -1;
	*out = v * mul;
	return 0;
}
