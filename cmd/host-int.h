/*
 * host-int.h: what the files of sbx-host share (cmd/sbx-host.c: the
 * commands and main; cmd/host-http.c: the byte strings, the token and the
 * HTTP/1.1 exchange over the bridge's socket).  libc only: sbx-host is
 * static and includes nothing of lib/.
 */
#ifndef SBX_HOST_INT_H
#define SBX_HOST_INT_H

#include <stddef.h>

#define PROG	     "sbx-host"
#define SOCK_DEFAULT "/run/sbx/bridge.sock"
#define TOKEN_FILE   "/run/sbx/token"
#define TOKEN_MAX    256
#define BODY_MAX     (8u << 20) /* the bridge's own cap */
#define HEAD_MAX     (16u << 10)
#define TIMEOUT_MS   (600 * 1000) /* a stalled bridge, not a slow model */

/* Exit codes (DESIGN.md section 5). */
#define EX_NEGATIVE    1
#define EX_USAGE       64
#define EX_DATAERR     65
#define EX_UNAVAILABLE 69
#define EX_SOFTWARE    70
#define EX_OSERR       71
#define EX_IOERR       74
#define EX_TEMPFAIL    75
#define EX_NOPERM      77

/* A growable byte string. */
struct str {
	char  *p;
	size_t len, cap;
};

/* One request, as a command builds it. */
struct req {
	const char *method;
	struct str  path; /* /v1/..., percent-encoded */
	struct str  body; /* JSON, or empty */
	int	    stream; /* relay the body as it comes */
};

extern const char *host_plugin;	/* --plugin, or $SBX_PLUGIN */

void	die(int code, const char *fmt, ...)
	    __attribute__((noreturn, format(printf, 2, 3)));
void	s_add(struct str *, const void *, size_t);
void	s_puts(struct str *, const char *);
/* A JSON string literal of the bytes. */
void	s_json(struct str *, const char *);
/* One path segment, percent-encoded. */
void	s_seg(struct str *, const char *);
/* A JSON value from the command line (a bare word becomes a string). */
void	s_value(struct str *, const char *);
/* All of standard input, capped. */
void	s_stdin(struct str *);
/* The agent's token; missing: a message and exit 77. */
char	*host_token(void);
/* Send r with the token, print the answer; the exit code. */
int	host_run(const struct req *, const char *tok);

#endif
