/*
 * host-http.c: sbx-host's byte strings and its transport: the agent's
 * token, one HTTP/1.1 request over the bridge's unix socket, the answer
 * (Content-Length, chunked, or to the end; a stream relayed as it comes)
 * and its status as an exit code.  See cmd/sbx-host.c.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-int.h"

const char *host_plugin;

void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

void
s_add(struct str *s, const void *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		char  *q;

		while (cap < s->len + n + 1)
			cap *= 2;
		if ((q = realloc(s->p, cap)) == NULL)
			die(EX_OSERR, "out of memory");
		s->p = q;
		s->cap = cap;
	}
	memcpy(s->p + s->len, p, n);
	s->len += n;
	s->p[s->len] = '\0';
}

void
s_puts(struct str *s, const char *p)
{
	s_add(s, p, strlen(p));
}

/* A JSON string literal of the bytes of p (control characters escaped;
 * the bridge judges the UTF-8). */
void
s_json(struct str *s, const char *p)
{
	char u[8];

	s_add(s, "\"", 1);
	for (; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if (c == '"' || c == '\\') {
			s_add(s, "\\", 1);
			s_add(s, p, 1);
		} else if (c < 0x20) {
			snprintf(u, sizeof(u), "\\u%04x", c);
			s_puts(s, u);
		} else
			s_add(s, p, 1);
	}
	s_add(s, "\"", 1);
}

/* One path segment, percent-encoded: everything but unreserved
 * characters, so that a `/` or `..` in a name stays inside its segment
 * (the bridge refuses those anyway). */
void
s_seg(struct str *s, const char *p)
{
	static const char hex[] = "0123456789ABCDEF";
	char		  e[3];

	if (*p == '\0')
		die(EX_USAGE, "empty name");
	for (; *p != '\0'; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		    c == '.' || c == '~') {
			s_add(s, p, 1);
			continue;
		}
		e[0] = '%';
		e[1] = hex[c >> 4];
		e[2] = hex[c & 15];
		s_add(s, e, 3);
	}
}

/* A JSON value given on the command line: passed as it is (the bridge
 * parses it strictly); a word that is not JSON-looking becomes a
 * string, so that `config set k hello` works. */
void
s_value(struct str *s, const char *v)
{
	const char *p = v;

	while (*p == ' ' || *p == '\t' || *p == '\n')
		p++;
	if (*p == '{' || *p == '[' || *p == '"' || *p == '-' ||
	    (*p >= '0' && *p <= '9') || strcmp(p, "true") == 0 ||
	    strcmp(p, "false") == 0 || strcmp(p, "null") == 0)
		s_puts(s, v);
	else
		s_json(s, v);
}

/* All of standard input, capped. */
void
s_stdin(struct str *s)
{
	char	b[65536];
	ssize_t r;

	for (;;) {
		r = read(0, b, sizeof(b));
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			die(EX_IOERR, "cannot read standard input: %s",
			    strerror(errno));
		if (r == 0)
			break;
		if (s->len + (size_t)r > BODY_MAX)
			die(EX_DATAERR, "standard input is over %u bytes",
			    BODY_MAX);
		s_add(s, b, (size_t)r);
	}
}

/* ---- the transport ------------------------------------------------------ */

/* The agent's token: the environment first, then the file sbx-init
 * wrote.  Missing: a clear message and 77. */
char *
host_token(void)
{
	static char b[TOKEN_MAX + 1];
	const char *t;
	ssize_t	    n;
	int	    fd;

	if ((t = getenv("SBX_BRIDGE_TOKEN")) != NULL && *t != '\0') {
		if (strlen(t) > TOKEN_MAX)
			die(EX_NOPERM, "SBX_BRIDGE_TOKEN is too long");
		snprintf(b, sizeof(b), "%s", t);
		return b;
	}
	if ((fd = open(TOKEN_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		die(EX_NOPERM,
		    "no bridge token: SBX_BRIDGE_TOKEN is unset "
		    "and %s cannot be read (%s); is the bridge enabled for "
		    "this agent?",
		    TOKEN_FILE, strerror(errno));
	n = read(fd, b, TOKEN_MAX);
	close(fd);
	if (n <= 0)
		die(EX_NOPERM, "no bridge token: %s is empty", TOKEN_FILE);
	b[n] = '\0';
	b[strcspn(b, "\r\n")] = '\0';
	return b;
}

static int
dial(void)
{
	struct sockaddr_un sun;
	const char	  *path;
	int		   fd;

	path = getenv("SBX_BRIDGE_SOCK");
	if (path == NULL || *path == '\0')
		path = SOCK_DEFAULT;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		die(EX_USAGE, "socket path too long: %s", path);
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		die(EX_OSERR, "socket: %s", strerror(errno));
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		die(EX_UNAVAILABLE, "cannot reach the bridge at %s: %s", path,
		    strerror(errno));
	return fd;
}

static int
send_all(int fd, const char *p, size_t n)
{
	ssize_t w;

	while (n > 0) {
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* The response reader: a buffer over the socket. */
static struct {
	int    fd;
	char   b[65536];
	size_t off, len;
} in;

static int
fill(void)
{
	struct pollfd pfd = { .fd = in.fd, .events = POLLIN };
	ssize_t	      r;
	int	      n;

	if (in.off > 0 && in.off == in.len)
		in.off = in.len = 0;
	if (in.len == sizeof(in.b)) {
		memmove(in.b, in.b + in.off, in.len - in.off);
		in.len -= in.off;
		in.off = 0;
	}
	for (;;) {
		if ((n = poll(&pfd, 1, TIMEOUT_MS)) == -1 && errno == EINTR)
			continue;
		if (n == 0)
			die(EX_TEMPFAIL, "the bridge did not answer in time");
		r = read(in.fd, in.b + in.len, sizeof(in.b) - in.len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			die(EX_UNAVAILABLE, "reading from the bridge: %s",
			    strerror(errno));
		in.len += (size_t)r;
		return r > 0;
	}
}

/* One line (CRLF or LF) of the head into line; 0 at a clean EOF. */
static int
getline_(char *line, size_t max)
{
	char  *nl;
	size_t n;

	for (;;) {
		nl = memchr(in.b + in.off, '\n', in.len - in.off);
		if (nl != NULL)
			break;
		if (in.len - in.off >= max)
			die(EX_SOFTWARE,
			    "the bridge's answer has a line over "
			    "%zu bytes",
			    max);
		if (!fill())
			return 0;
	}
	n = (size_t)(nl - (in.b + in.off));
	memcpy(line, in.b + in.off, n);
	if (n > 0 && line[n - 1] == '\r')
		n--;
	line[n] = '\0';
	in.off = (size_t)(nl - in.b) + 1;
	return 1;
}

/* Copy n bytes (or to EOF when n is -1) of the body to out. */
static void
copy_body(long long n, struct str *out, int relay)
{
	size_t k;

	while (n != 0) {
		if (in.off == in.len && !fill()) {
			if (n > 0)
				die(EX_UNAVAILABLE,
				    "the bridge closed the "
				    "connection in the middle of its answer");
			return;
		}
		k = in.len - in.off;
		if (n > 0 && (long long)k > n)
			k = (size_t)n;
		if (relay) {
			if (fwrite(in.b + in.off, 1, k, stdout) != k)
				die(EX_IOERR, "cannot write to stdout");
			fflush(stdout);
		} else {
			if (out->len + k > 4 * BODY_MAX)
				die(EX_SOFTWARE,
				    "the bridge's answer is too "
				    "long");
			s_add(out, in.b + in.off, k);
		}
		in.off += k;
		if (n > 0)
			n -= (long long)k;
	}
}

/* The status and body of one answer. */
static int
response(struct str *body, int relay)
{
	char	  line[HEAD_MAX];
	long long clen = -1;
	int	  status, chunked = 0;

	if (!getline_(line, sizeof(line)))
		die(EX_UNAVAILABLE,
		    "the bridge closed the connection without "
		    "answering");
	if (sscanf(line, "HTTP/1.%*d %d", &status) != 1 || status < 100 ||
	    status > 599)
		die(EX_SOFTWARE, "malformed answer from the bridge");
	for (;;) {
		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE,
			    "the bridge closed the connection "
			    "in the middle of its answer");
		if (line[0] == '\0')
			break;
		if (strncasecmp(line, "Content-Length:", 15) == 0)
			clen = strtoll(line + 15, NULL, 10);
		else if (strncasecmp(line, "Transfer-Encoding:", 18) == 0 &&
		    strstr(line + 18, "chunked") != NULL)
			chunked = 1;
	}
	if (!chunked) {
		copy_body(clen, body, relay);
		return status;
	}
	for (;;) {
		long long n;
		char	 *end;

		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE,
			    "the bridge closed the connection "
			    "in the middle of its answer");
		n = strtoll(line, &end, 16);
		if (end == line || n < 0)
			die(EX_SOFTWARE, "malformed chunk from the bridge");
		if (n == 0)
			break;
		copy_body(n, body, relay);
		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE,
			    "the bridge closed the connection "
			    "in the middle of its answer");
	}
	return status;
}

/* HTTP status to exit code (DESIGN.md section 5). */
static int
exit_for(int status)
{
	if (status >= 200 && status < 300)
		return 0;
	switch (status) {
	case 400:
	case 413:
	case 414:
	case 415:
	case 422:
	case 431: return EX_DATAERR;
	case 401:
	case 403: return EX_NOPERM;
	case 404: return EX_NEGATIVE;
	case 409: /* a secret changed since the run began: run again */
	case 429:
	case 408: return EX_TEMPFAIL;
	case 502:
	case 503:
	case 504: return EX_UNAVAILABLE;
	default: return status >= 500 ? EX_SOFTWARE : EX_NEGATIVE;
	}
}

int
host_run(const struct req *r, const char *tok)
{
	struct str head = { 0 }, body = { 0 };
	char	   n[32];
	int	   status;

	in.fd = dial();
	s_puts(&head, r->method);
	s_puts(&head, " ");
	s_puts(&head, r->path.p);
	s_puts(&head,
	    " HTTP/1.1\r\nHost: sbx-bridge\r\nConnection: close"
	    "\r\nAuthorization: Bearer ");
	s_puts(&head, tok);
	s_puts(&head, "\r\n");
	if (host_plugin != NULL) {
		if (strpbrk(host_plugin, "\r\n") != NULL)
			die(EX_USAGE, "bad plugin id");
		s_puts(&head, "X-Sbx-Plugin: ");
		s_puts(&head, host_plugin);
		s_puts(&head, "\r\n");
	}
	if (r->body.len > 0 || strcmp(r->method, "GET") != 0) {
		s_puts(&head, "Content-Type: application/json\r\n");
		snprintf(n, sizeof(n), "%zu", r->body.len);
		s_puts(&head, "Content-Length: ");
		s_puts(&head, n);
		s_puts(&head, "\r\n");
	}
	if (r->stream)
		s_puts(&head, "Accept: text/event-stream\r\n");
	s_puts(&head, "\r\n");
	/* The bridge may answer before the body is in (401, 413, 429) and
	 * close: a failed send still reads that answer. */
	if (send_all(in.fd, head.p, head.len) == 0 && r->body.len > 0)
		(void)send_all(in.fd, r->body.p, r->body.len);
	explicit_bzero(head.p, head.len);
	free(head.p);
	status = response(&body, r->stream);
	if (!r->stream && body.len > 0) {
		FILE *f = status < 300 ? stdout : stderr;

		fwrite(body.p, 1, body.len, f);
		if (body.p[body.len - 1] != '\n')
			fputc('\n', f);
	}
	free(body.p);
	close(in.fd);
	if (fflush(stdout) == EOF)
		die(EX_IOERR, "cannot write to stdout");
	return exit_for(status);
}
