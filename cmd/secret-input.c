/*
 * secret-input.c: how sbx secret reads a value or a passphrase: a
 * terminal prompt without echo (asked twice for a new one), standard
 * input, --from-fd or --from-env; never argv.  Buffers are
 * sodium_malloc'd (guarded, never swapped) and wiped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <sodium.h>

#include "cli.h"
#include "cmd.h"
#include "secret-int.h"
#include "secret.h"

/* ---- reading a value ---------------------------------------------------- */

/* Read all of fd into a sodium_malloc'd buffer of cap bytes at most. */
static int
read_fd(int fd, unsigned char **out, size_t *len, struct sbx_error *e)
{
	unsigned char *b;
	size_t	       n = 0;
	ssize_t	       k;

	if ((b = sodium_malloc(SBX_SECRET_VALUE_MAX + 3)) == NULL)
		return sbx_error_sys(e, "nomem", "reading the value");
	for (;;) {
		k = read(fd, b + n, SBX_SECRET_VALUE_MAX + 2 - n);
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1) {
			sodium_free(b);
			return sbx_error_sys(e, "read_failed",
			    "reading the "
			    "value");
		}
		if (k == 0)
			break;
		n += (size_t)k;
		if (n >= SBX_SECRET_VALUE_MAX + 2)
			break;
	}
	/* One trailing newline is the end of a line, not of the value. */
	if (n > 0 && b[n - 1] == '\n')
		n--;
	if (n > 0 && b[n - 1] == '\r')
		n--;
	*out = b;
	*len = n;
	return 0;
}

/* One line from the terminal on fd 0, echo off. */
static int
prompt_line(const char *what, unsigned char *buf, size_t cap, size_t *len)
{
	struct termios t, off;
	ssize_t	       k;
	size_t	       n = 0;
	char	       c;

	fprintf(stderr, "%s", what);
	fflush(stderr);
	if (tcgetattr(0, &t) == -1)
		return -1;
	off = t;
	off.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
	off.c_lflag |= ICANON;
	(void)tcsetattr(0, TCSANOW, &off);
	for (;;) {
		k = read(0, &c, 1);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0 || c == '\n')
			break;
		if (n < cap)
			buf[n] = (unsigned char)c;
		n++;
	}
	(void)tcsetattr(0, TCSANOW, &t);
	fputc('\n', stderr);
	*len = n;
	sodium_memzero(&c, 1);
	return k < 0 ? -1 : 0;
}

/* Asked twice; the two must agree. */
static int
prompt_twice(const char *what, unsigned char **out, size_t *len,
    struct sbx_error *e)
{
	unsigned char *a, *b;
	size_t	       na, nb;
	char	       p2[160];

	a = sodium_malloc(SBX_SECRET_VALUE_MAX + 1);
	b = sodium_malloc(SBX_SECRET_VALUE_MAX + 1);
	if (a == NULL || b == NULL)
		return sbx_error_sys(e, "nomem", "reading the value");
	snprintf(p2, sizeof(p2), "%s (again): ", what);
	{
		char p1[160];
		snprintf(p1, sizeof(p1), "%s: ", what);
		if (prompt_line(p1, a, SBX_SECRET_VALUE_MAX + 1, &na) == -1 ||
		    prompt_line(p2, b, SBX_SECRET_VALUE_MAX + 1, &nb) == -1) {
			sodium_free(a);
			sodium_free(b);
			return sbx_error_sys(e, "read_failed",
			    "reading the "
			    "terminal");
		}
	}
	if (na != nb ||
	    sodium_memcmp(a, b,
		na < SBX_SECRET_VALUE_MAX + 1 ?
		    na :
		    SBX_SECRET_VALUE_MAX + 1) != 0) {
		sodium_free(a);
		sodium_free(b);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "value", "mismatch",
		    "the two entries differ; nothing was stored");
	}
	sodium_free(b);
	*out = a;
	*len = na;
	return 0;
}

int
read_value(unsigned char **v, size_t *n, struct sbx_error *e)
{
	unsigned long long fd;
	const char	  *s;

	if (O.from_fd != NULL && O.from_env != NULL)
		sbx_cmd_usage_why(
		    "--from-fd and --from-env exclude each other");
	if (O.from_env != NULL) {
		/* For CI systems whose secrets arrive as variables. */
		if ((s = getenv(O.from_env)) == NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "from_env",
			    "unset", "the environment variable %s is not set",
			    O.from_env);
		*n = strlen(s);
		if (*n > SBX_SECRET_VALUE_MAX)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "value",
			    "too_long", "a secret value is at most %d bytes",
			    SBX_SECRET_VALUE_MAX);
		if ((*v = sodium_malloc(*n + 1)) == NULL)
			return sbx_error_sys(e, "nomem", "reading the value");
		memcpy(*v, s, *n);
		return 0;
	}
	if (O.from_fd != NULL) {
		if (sbx_cli_parse_uint(O.from_fd, 1 << 20, &fd) == -1 ||
		    fcntl((int)fd, F_GETFD) == -1)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "from_fd",
			    "bad_fd",
			    "argument `from-fd` must name an open "
			    "file descriptor");
		return read_fd((int)fd, v, n, e);
	}
	if (isatty(0)) {
		char what[128];
		snprintf(what, sizeof(what), "value of %s", O.name);
		return prompt_twice(what, v, n, e);
	}
	return read_fd(0, v, n, e);
}

/* The passphrase, when one is asked for or the store needs one. */
int
get_passphrase(int creating, struct sbx_error *e)
{
	const char    *env = getenv("SBX_SECRET_PASSPHRASE");
	unsigned char *v;
	size_t	       n;

	memset(&auth, 0, sizeof(auth));
	if (env != NULL && *env != '\0') {
		n = strlen(env);
		if ((pass = sodium_malloc(n + 1)) == NULL)
			return sbx_error_sys(e, "nomem", "passphrase");
		memcpy(pass, env, n + 1);
	} else if (O.passphrase ||
	    (root.fd >= 0 && O.agent != NULL &&
		sbx_secret_needs_passphrase(root.fd, O.agent))) {
		if (!isatty(0))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "passphrase", "passphrase_required",
			    "a passphrase "
			    "is needed and there is no terminal to ask it on: "
			    "set SBX_SECRET_PASSPHRASE");
		if (creating && !sbx_secret_store_exists(root.fd, O.agent)) {
			if (prompt_twice("passphrase", &v, &n, e) == -1)
				return -1;
		} else {
			if ((v = sodium_malloc(1025)) == NULL)
				return sbx_error_sys(e, "nomem", "passphrase");
			if (prompt_line("passphrase: ", v, 1024, &n) == -1) {
				sodium_free(v);
				return sbx_error_sys(e, "read_failed",
				    "reading the terminal");
			}
			if (n > 1024)
				n = 1024;
		}
		pass = (char *)v;
		pass[n] = '\0';
	} else
		return 0;
	auth.passphrase = pass;
	auth.passphrase_len = strlen(pass);
	auth.use_passphrase = 1;
	return 0;
}
