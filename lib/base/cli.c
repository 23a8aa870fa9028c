/* cli.c: shared command-line helpers (formatting only; cmd/ prints). */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
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
	rc |= sbx_utf8_escape_line(b, e->message, strlen(e->message));
	rc |= sbx_buf_puts(b, "\n");
	if (e->hint[0]) {
		rc |= sbx_buf_printf(b, "%s: hint: ", prog);
		rc |= sbx_utf8_escape_line(b, e->hint, strlen(e->hint));
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

/* The long option NAME (len n) names: exact, else a unique prefix, as
 * getopt_long matches. */
static const struct option *
long_lookup(const struct option *lo, const char *name, size_t n)
{
	const struct option	*hit = NULL;
	size_t			 i;

	for (i = 0; lo != NULL && lo[i].name != NULL; i++) {
		if (strncmp(lo[i].name, name, n) != 0)
			continue;
		if (lo[i].name[n] == '\0')
			return &lo[i];
		if (hit != NULL && (hit->has_arg != lo[i].has_arg ||
		    hit->val != lo[i].val))
			return NULL;	/* ambiguous */
		hit = &lo[i];
	}
	return hit;
}

/* The short option letter of --json, or 0. */
static int
json_letter(const char *optstring, const struct option *lo)
{
	const struct option	*o = long_lookup(lo, "json", 4);

	if (o == NULL || o->val <= 0 || o->val > 127 || o->val == ':' ||
	    strchr(optstring, o->val) == NULL)
		return 0;
	return o->val;
}

static int
is_json(const struct option *o)
{
	return o != NULL && strcmp(o->name, "json") == 0;
}

int
sbx_cli_wants_json(int argc, char *const argv[], const char *optstring,
    const struct option *longopts, const char *const *subs)
{
	const struct option	*o;
	const char		*a, *p, *q, *eq;
	size_t			 k;
	int			 i, j, stop, letter;

	if (sbx_cli_json_env())
		return 1;
	stop = *optstring == '+';
	while (*optstring == '+' || *optstring == '-' || *optstring == ':')
		optstring++;
	letter = json_letter(optstring, longopts);
	for (i = 1; i < argc; i++) {
		a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0') {
			if (!stop)
				continue;
			for (k = 0; subs != NULL && subs[k] != NULL; k++)
				if (strcmp(a, subs[k]) == 0)
					break;
			if (subs == NULL || subs[k] == NULL)
				break;
			stop = 0;	/* a subcommand: its options follow */
			continue;
		}
		if (a[1] == '-') {
			eq = strchr(a + 2, '=');
			o = long_lookup(longopts, a + 2,
			    eq ? (size_t)(eq - a - 2) : strlen(a + 2));
			if (is_json(o) && eq == NULL)
				return 1;
			if (o != NULL && o->has_arg == required_argument &&
			    eq == NULL)
				i++;	/* its argument, whatever it says */
			continue;
		}
		for (j = 1; a[j] != '\0'; j++) {
			if (a[j] == letter)
				return 1;
			p = a[j] == ':' ? NULL : strchr(optstring, a[j]);
			if (p == NULL || p[1] != ':')
				continue;
			/* The rest of the cluster, or the next word, is the
			 * argument (an optional one only when attached). */
			q = p + 2;
			if (a[j + 1] == '\0' && *q != ':')
				i++;
			break;
		}
	}
	return 0;
}

const char *
sbx_cli_option_field(const char *opt, size_t n)
{
	static char	 field[68];
	size_t		 i;

	if (n > sizeof(field) - 4) {
		memcpy(field, opt, sizeof(field) - 4);
		memcpy(field + sizeof(field) - 4, "...", 4);
		n = sizeof(field) - 1;
	} else {
		memcpy(field, opt, n);
		field[n] = '\0';
	}
	/* Only printable ASCII: the field is a JSON string and a key that
	 * scripts match on, and argv bytes are the caller's. */
	for (i = 0; i < n; i++)
		if (field[i] < 33 || field[i] > 126)
			field[i] = '?';
	return field;
}

size_t
sbx_cli_distance(const char *a, const char *b)
{
	size_t	 la = strlen(a), lb = strlen(b), i, j, c, v, d[65][65];

	if (la > 64 || lb > 64)
		return SIZE_MAX;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++)
		for (j = 1; j <= lb; j++) {
			c = a[i - 1] != b[j - 1];
			v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (d[i - 1][j - 1] + c < v)
				v = d[i - 1][j - 1] + c;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[la][lb];
}

const char *
sbx_cli_nearest(const char *word, const char *const *names)
{
	const char	*best = NULL;
	size_t		 i, d, bestd = SIZE_MAX;

	for (i = 0; names[i] != NULL; i++) {
		d = sbx_cli_distance(word, names[i]);
		if (strlen(word) >= 2 &&
		    strncmp(names[i], word, strlen(word)) == 0)
			d = 1;
		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	return bestd <= 2 ? best : NULL;
}

/* The long option nearest to the unknown --NAME (n bytes), or NULL. */
static const char *
nearest_long(const struct option *lo, const char *name, size_t n)
{
	const char	*names[128], *hit;
	char		 word[65];
	size_t		 i;

	if (n == 0 || n >= sizeof(word))
		return NULL;
	memcpy(word, name, n);
	word[n] = '\0';
	for (i = 0; lo != NULL && lo[i].name != NULL && i < 127; i++)
		names[i] = lo[i].name;
	names[i] = NULL;
	hit = sbx_cli_nearest(word, names);
	/* Only a name getopt_long did not take as it is. */
	return hit != NULL && strcmp(hit, word) != 0 ? hit : NULL;
}

void
sbx_cli_getopt_error(int argc, char *const argv[], const char *optstring,
    const struct option *longopts, struct sbx_error *e)
{
	const struct option	*o = NULL;
	const char		*a = NULL, *eq = NULL, *p, *reason, *field;
	const char		*hit;
	char			 buf[68];
	size_t			 n = 0;

	while (*optstring == '+' || *optstring == '-' || *optstring == ':')
		optstring++;
	if (optind >= 1 && optind <= argc && argv[optind - 1] != NULL &&
	    strncmp(argv[optind - 1], "--", 2) == 0)
		a = argv[optind - 1];
	/* glibc: optopt is 0 for an unknown or ambiguous long option, the
	 * option's val for a long one with a missing or unwanted argument,
	 * and the letter for a short one. */
	if (a != NULL) {
		eq = strchr(a, '=');
		n = eq ? (size_t)(eq - a) : strlen(a);
		o = long_lookup(longopts, a + 2, n - 2);
		if (optopt != 0 && (o == NULL || o->val != optopt))
			a = NULL;	/* a short option after a long one */
	}
	if (a != NULL) {
		if (optopt == 0 || o == NULL)
			reason = "unknown_option";
		else if (eq != NULL && o->has_arg == no_argument)
			reason = "unexpected_argument";
		else
			reason = "missing_argument";
		if (o != NULL && optopt != 0) {
			snprintf(buf, sizeof(buf), "--%s", o->name);
			field = sbx_cli_option_field(buf, strlen(buf));
		} else
			field = sbx_cli_option_field(a, n);
	} else {
		p = optopt > 0 && optopt < 128 && optopt != ':' ?
		    strchr(optstring, optopt) : NULL;
		reason = p != NULL && p[1] == ':' ? "missing_argument" :
		    "unknown_option";
		snprintf(buf, sizeof(buf), "-%c", optopt);
		field = sbx_cli_option_field(buf, strlen(buf));
	}
	if (strcmp(reason, "unknown_option") == 0) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason,
		    "unknown option `%s`", field);
		/* A typo: the nearest option, as git suggests a command. */
		if (a != NULL &&
		    (hit = nearest_long(longopts, a + 2, n - 2)) != NULL)
			sbx_error_hint(e, "did you mean `--%s`?", hit);
	} else if (strcmp(reason, "missing_argument") == 0)
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason,
		    "option `%s` needs an argument", field);
	else
		sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason,
		    "option `%s` takes no argument", field);
}

int
sbx_cli_parse_seconds(const char *s, double max, double *out)
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
sbx_cli_parse_uint(const char *s, unsigned long long max,
    unsigned long long *out)
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
sbx_cli_parse_mib(const char *s, unsigned long long max,
    unsigned long long *out)
{
	static const char	 units[] = "kmgt";
	const char		*end, *u;
	unsigned long long	 v;
	size_t			 n;
	int			 shift;	/* of the unit, against one MiB */

	n = strspn(s, "0123456789");
	if (n == 0 || n > 19)
		return -1;
	end = s + n;
	shift = 0;
	if (*end != '\0') {
		if ((u = strchr(units, end[0] | 0x20)) == NULL)
			return -1;
		shift = ((int)(u - units) - 1) * 10;	/* k -10, m 0, g 10 */
		end++;
		if ((*end | 0x20) == 'i' && (end[1] | 0x20) == 'b')
			end += 2;
		else if ((*end | 0x20) == 'b')
			end++;
		if (*end != '\0')
			return -1;
	}
	errno = 0;
	v = strtoull(s, NULL, 10);
	if (errno != 0)
		return -1;
	if (shift < 0) {
		/* KiB: only a whole number of MiB. */
		if (v % 1024 != 0)
			return -1;
		v /= 1024;
	} else if (shift > 0) {
		if (v > max >> shift)
			return -1;
		v <<= shift;
	}
	if (v == 0 || v > max)
		return -1;
	*out = v;
	return 0;
}

int
sbx_cli_parse_bytes(const char *s, unsigned long long *out)
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

/* The one exit table (cli.h); reasons first, then kinds. */
static const struct {
	const char	*kind;		/* NULL: any kind */
	const char	*reason;	/* NULL: any reason */
	int		 code;
} exit_table[] = {
	{ NULL,			"config_invalid",	SBX_EX_CONFIG },
	{ NULL,			"stdout_write",		SBX_EX_IOERR },
	{ SBX_K_INVALID_ARGS,	NULL,			SBX_EX_DATAERR },
	{ SBX_K_REJECTED,	NULL,			SBX_EX_NOPERM },
	{ SBX_K_UNAVAILABLE,	NULL,			SBX_EX_UNAVAILABLE },
	{ SBX_K_TIMEOUT,	NULL,			SBX_EX_TEMPFAIL },
	{ SBX_K_EXECUTION_ERROR, NULL,			SBX_EX_OSERR },
	{ SBX_K_NOT_FOUND,	NULL,			SBX_EX_NEGATIVE },
	{ SBX_K_USER_DENIED,	NULL,			SBX_EX_NEGATIVE },
};

int
sbx_exit_for(const struct sbx_error *e)
{
	size_t	 i;

	if (e == NULL || e->kind == NULL)
		return SBX_EX_SOFTWARE;
	for (i = 0; i < sizeof(exit_table) / sizeof(exit_table[0]); i++) {
		if (exit_table[i].reason != NULL && (e->reason == NULL ||
		    strcmp(e->reason, exit_table[i].reason) != 0))
			continue;
		if (exit_table[i].kind != NULL &&
		    strcmp(e->kind, exit_table[i].kind) != 0)
			continue;
		return exit_table[i].code;
	}
	return SBX_EX_SOFTWARE;
}
