/*
 * sbx-host: the client of the host bridge, inside the sandbox.
 *
 *	sbx-host [--json] [--plugin ID] COMMAND [ARG...]
 *
 * Each command is one HTTP/1.1 request on the unix socket sbx-init serves
 * (/run/sbx/bridge.sock, or $SBX_BRIDGE_SOCK) with the agent's token
 * ($SBX_BRIDGE_TOKEN, else /run/sbx/token); the bridge's JSON answer goes
 * to stdout as it is, and the HTTP status becomes an exit code of
 * DESIGN.md section 5.  See sbx-host(1).
 *
 * Statically linked and dependent on nothing but the C library: it is
 * bound into sandboxes whose root file system is an image, which carries
 * no library of ours.  So it includes nothing of lib/ (jansson and the
 * others are not static-friendly), and builds its small JSON bodies by
 * hand, escaping every string it puts in them.
 *
 * The command table below is the one place a command is added: its words,
 * its operands, and the function that turns them into a request.
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

#include "host-connect.h"

#define PROG		"sbx-host"
#define SOCK_DEFAULT	"/run/sbx/bridge.sock"
#define TOKEN_FILE	"/run/sbx/token"
#define TOKEN_MAX	256
#define BODY_MAX	(8u << 20)	/* the bridge's own cap */
#define HEAD_MAX	(16u << 10)
#define TIMEOUT_MS	(600 * 1000)	/* a stalled bridge, not a slow model */

/* Exit codes (DESIGN.md section 5). */
#define EX_NEGATIVE	1
#define EX_USAGE	64
#define EX_DATAERR	65
#define EX_UNAVAILABLE	69
#define EX_SOFTWARE	70
#define EX_OSERR	71
#define EX_IOERR	74
#define EX_TEMPFAIL	75
#define EX_NOPERM	77

/* A growable byte string. */
struct str {
	char	*p;
	size_t	 len, cap;
};

/* One request, as a command builds it. */
struct req {
	const char	*method;
	struct str	 path;		/* /v1/..., percent-encoded */
	struct str	 body;		/* JSON, or empty */
	int		 stream;	/* relay the body as it comes */
};

static const char	*plugin;	/* --plugin, or $SBX_PLUGIN */

static void __attribute__((noreturn, format(printf, 2, 3)))
die(int code, const char *fmt, ...)
{
	va_list	 ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

static void
s_add(struct str *s, const void *p, size_t n)
{
	if (s->len + n + 1 > s->cap) {
		size_t	 cap = s->cap ? s->cap : 256;
		char	*q;

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

static void
s_puts(struct str *s, const char *p)
{
	s_add(s, p, strlen(p));
}

/* A JSON string literal of the bytes of p (control characters escaped;
 * the bridge judges the UTF-8). */
static void
s_json(struct str *s, const char *p)
{
	char	 u[8];

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
static void
s_seg(struct str *s, const char *p)
{
	static const char	 hex[] = "0123456789ABCDEF";
	char			 e[3];

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
static void
s_value(struct str *s, const char *v)
{
	const char	*p = v;

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
static void
s_stdin(struct str *s)
{
	char	 b[65536];
	ssize_t	 r;

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

/* ---- the commands ------------------------------------------------------ */

/* Options a command takes after its words: --name VALUE or --flag. */
static const char *
opt(int *argc, char **argv, const char *name, int flag)
{
	int	 i, j;

	for (i = 0; i < *argc; i++) {
		const char *v;

		if (strcmp(argv[i], "--") == 0)
			return NULL;
		if (strcmp(argv[i], name) != 0)
			continue;
		if (!flag && i + 1 >= *argc)
			die(EX_USAGE, "option %s needs a value", name);
		v = flag ? argv[i] : argv[i + 1];
		for (j = i; j + (flag ? 1 : 2) <= *argc; j++)
			argv[j] = argv[j + (flag ? 1 : 2)];
		*argc -= flag ? 1 : 2;
		return v;
	}
	return NULL;
}

static void
c_whoami(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/whoami");
}

static void
c_secret_get(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/secrets/");
	s_seg(&r->path, argv[0]);
}

static void
c_config(struct req *r, const char *method, const char *key)
{
	r->method = method;
	s_puts(&r->path, "/v1/config/");
	s_seg(&r->path, key);
}

static void
c_config_get(struct req *r, int argc, char **argv)
{
	c_config(r, "GET", argv[0]);
}

static void
c_config_set(struct req *r, int argc, char **argv)
{
	c_config(r, "PUT", argv[0]);
	if (argc > 1)
		s_value(&r->body, argv[1]);
	else
		s_stdin(&r->body);
}

static void
c_config_rm(struct req *r, int argc, char **argv)
{
	c_config(r, "DELETE", argv[0]);
}

static void
c_events_emit(struct req *r, int argc, char **argv)
{
	r->method = "POST";
	s_puts(&r->path, "/v1/events");
	s_puts(&r->body, "{\"type\":");
	s_json(&r->body, argv[0]);
	if (argc > 1) {
		s_puts(&r->body, ",\"data\":");
		s_value(&r->body, argv[1]);
	}
	s_puts(&r->body, "}");
}

static void
c_events_list(struct req *r, int argc, char **argv)
{
	const char	*since, *limit;

	since = opt(&argc, argv, "--since", 0);
	limit = opt(&argc, argv, "--limit", 0);
	if (argc != 0)
		die(EX_USAGE, "usage: events list [--since ID] [--limit N]");
	r->method = "GET";
	s_puts(&r->path, "/v1/events?since=");
	s_seg(&r->path, since != NULL ? since : "0");
	if (limit != NULL) {
		s_puts(&r->path, "&limit=");
		s_seg(&r->path, limit);
	}
}

static void
c_memory_store(struct req *r, int argc, char **argv)
{
	const char	*tags, *sal;

	tags = opt(&argc, argv, "--tags", 0);
	sal = opt(&argc, argv, "--salience", 0);
	if (argc != 1)
		die(EX_USAGE, "usage: memory store TEXT [--tags A,B] "
		    "[--salience X]");
	r->method = "POST";
	s_puts(&r->path, "/v1/memory");
	s_puts(&r->body, "{\"text\":");
	s_json(&r->body, argv[0]);
	if (tags != NULL) {
		char	*t, *copy, *save = NULL;
		int	 first = 1;

		if ((copy = strdup(tags)) == NULL)
			die(EX_OSERR, "out of memory");
		s_puts(&r->body, ",\"tags\":[");
		for (t = strtok_r(copy, ",", &save); t != NULL;
		    t = strtok_r(NULL, ",", &save)) {
			if (!first)
				s_puts(&r->body, ",");
			s_json(&r->body, t);
			first = 0;
		}
		s_puts(&r->body, "]");
		free(copy);
	}
	if (sal != NULL) {
		char	*end;

		(void)strtod(sal, &end);
		if (*sal == '\0' || *end != '\0')
			die(EX_USAGE, "--salience needs a number");
		s_puts(&r->body, ",\"salience\":");
		s_puts(&r->body, sal);
	}
	s_puts(&r->body, "}");
}

static void
c_memory_query(struct req *r, int argc, char **argv)
{
	const char	*limit;

	limit = opt(&argc, argv, "--limit", 0);
	if (argc != 1)
		die(EX_USAGE, "usage: memory query TEXT [--limit N]");
	r->method = "POST";
	s_puts(&r->path, "/v1/memory/query");
	s_puts(&r->body, "{\"text\":");
	s_json(&r->body, argv[0]);
	if (limit != NULL) {
		if (strspn(limit, "0123456789") != strlen(limit) ||
		    *limit == '\0' || strlen(limit) > 6)
			die(EX_USAGE, "--limit needs a number");
		s_puts(&r->body, ",\"limit\":");
		s_puts(&r->body, limit);
	}
	s_puts(&r->body, "}");
}

static void
c_inference_chat(struct req *r, int argc, char **argv)
{
	const char	*model;
	int		 stream;

	model = opt(&argc, argv, "-m", 0);
	if (model == NULL)
		model = opt(&argc, argv, "--model", 0);
	stream = opt(&argc, argv, "--stream", 1) != NULL;
	if (model == NULL || argc != 0)
		die(EX_USAGE, "usage: inference chat -m MODEL [--stream] "
		    "< messages.json");
	r->method = "POST";
	r->stream = stream;
	s_puts(&r->path, "/v1/inference/chat");
	s_puts(&r->body, "{\"model\":");
	s_json(&r->body, model);
	s_puts(&r->body, stream ? ",\"stream\":true" : ",\"stream\":false");
	s_puts(&r->body, ",\"messages\":");
	{
		struct str	 in = { 0 };

		s_stdin(&in);
		if (in.len == 0)
			die(EX_USAGE, "inference chat reads the messages (a "
			    "JSON array) on standard input");
		s_add(&r->body, in.p, in.len);
		free(in.p);
	}
	s_puts(&r->body, "}");
}

static void
c_dispatch(struct req *r, int argc, char **argv)
{
	r->method = "POST";
	s_puts(&r->path, "/v1/dispatch");
	s_puts(&r->body, "{\"task\":");
	s_json(&r->body, argv[0]);
	if (argc > 1) {
		s_puts(&r->body, ",\"data\":");
		s_value(&r->body, argv[1]);
	}
	s_puts(&r->body, "}");
}

static void
c_dispatch_get(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/dispatch/");
	s_seg(&r->path, argv[0]);
}

static void
c_log(struct req *r, int argc, char **argv)
{
	r->method = "POST";
	s_puts(&r->path, "/v1/log");
	s_puts(&r->body, "{\"level\":");
	s_json(&r->body, argv[0]);
	s_puts(&r->body, ",\"message\":");
	s_json(&r->body, argv[1]);
	s_puts(&r->body, "}");
}

/* connect HOST PORT: not a bridge request, a tunnel through the proxy
 * (cmd/host-connect.c); it runs to the end here. */
static void
c_connect(struct req *r, int n, char **a)
{
	(void)r;
	(void)n;
	exit(sbx_host_connect(a[0], a[1]));
}

/*
 * The command table: one or two words, the operands (min, max; -1: the
 * builder checks them itself, after its options), the builder, and the
 * synopsis for usage.  Add a command here and in sbx-host(1).
 */
static const struct cmd {
	const char	*w1, *w2;
	int		 min, max;
	void		(*build)(struct req *, int, char **);
	const char	*synopsis;
} cmds[] = {
	{ "whoami", NULL, 0, 0, c_whoami, "whoami" },
	{ "secret", "get", 1, 1, c_secret_get, "secret get NAME" },
	{ "config", "get", 1, 1, c_config_get, "config get KEY" },
	{ "config", "set", 1, 2, c_config_set, "config set KEY [JSON]" },
	{ "config", "rm", 1, 1, c_config_rm, "config rm KEY" },
	{ "events", "emit", 1, 2, c_events_emit, "events emit TYPE [JSON]" },
	{ "events", "list", -1, -1, c_events_list,
	    "events list [--since ID] [--limit N]" },
	{ "memory", "store", -1, -1, c_memory_store,
	    "memory store TEXT [--tags A,B] [--salience X]" },
	{ "memory", "query", -1, -1, c_memory_query,
	    "memory query TEXT [--limit N]" },
	{ "inference", "chat", -1, -1, c_inference_chat,
	    "inference chat -m MODEL [--stream] < messages.json" },
	{ "dispatch", "get", 1, 1, c_dispatch_get, "dispatch get ID" },
	{ "dispatch", NULL, 1, 2, c_dispatch, "dispatch TASK [JSON]" },
	{ "log", NULL, 2, 2, c_log, "log LEVEL MESSAGE" },
	{ "connect", NULL, 2, 2, c_connect, "connect HOST PORT" },
};

static void __attribute__((noreturn))
usage(int code)
{
	size_t	 i;
	FILE	*f = code == 0 ? stdout : stderr;

	fprintf(f, "usage: %s [--plugin ID] COMMAND [ARG...]\n", PROG);
	for (i = 0; i < sizeof(cmds) / sizeof(*cmds); i++)
		fprintf(f, "       %s %s\n", PROG, cmds[i].synopsis);
	exit(code);
}

/* ---- the transport ------------------------------------------------------ */

/* The agent's token: the environment first, then the file sbx-init
 * wrote.  Missing: a clear message and 77. */
static char *
token(void)
{
	static char	 b[TOKEN_MAX + 1];
	const char	*t;
	ssize_t		 n;
	int		 fd;

	if ((t = getenv("SBX_BRIDGE_TOKEN")) != NULL && *t != '\0') {
		if (strlen(t) > TOKEN_MAX)
			die(EX_NOPERM, "SBX_BRIDGE_TOKEN is too long");
		snprintf(b, sizeof(b), "%s", t);
		return b;
	}
	if ((fd = open(TOKEN_FILE, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
		die(EX_NOPERM, "no bridge token: SBX_BRIDGE_TOKEN is unset "
		    "and %s cannot be read (%s); is the bridge enabled for "
		    "this agent?", TOKEN_FILE, strerror(errno));
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
	struct sockaddr_un	 sun;
	const char		*path;
	int			 fd;

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

static void
send_all(int fd, const char *p, size_t n)
{
	ssize_t	 w;

	while (n > 0) {
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			die(EX_UNAVAILABLE, "the bridge closed the connection "
			    "(%s)", strerror(errno));
		}
		p += w;
		n -= (size_t)w;
	}
}

/* The response reader: a buffer over the socket. */
static struct {
	int	 fd;
	char	 b[65536];
	size_t	 off, len;
} in;

static int
fill(void)
{
	struct pollfd	 pfd = { .fd = in.fd, .events = POLLIN };
	ssize_t		 r;
	int		 n;

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
	char	*nl;
	size_t	 n;

	for (;;) {
		nl = memchr(in.b + in.off, '\n', in.len - in.off);
		if (nl != NULL)
			break;
		if (in.len - in.off >= max)
			die(EX_SOFTWARE, "the bridge's answer has a line over "
			    "%zu bytes", max);
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
	size_t	 k;

	while (n != 0) {
		if (in.off == in.len && !fill()) {
			if (n > 0)
				die(EX_UNAVAILABLE, "the bridge closed the "
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
				die(EX_SOFTWARE, "the bridge's answer is too "
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
	char		 line[HEAD_MAX];
	long long	 clen = -1;
	int		 status, chunked = 0;

	if (!getline_(line, sizeof(line)))
		die(EX_UNAVAILABLE, "the bridge closed the connection without "
		    "answering");
	if (sscanf(line, "HTTP/1.%*d %d", &status) != 1 || status < 100 ||
	    status > 599)
		die(EX_SOFTWARE, "malformed answer from the bridge");
	for (;;) {
		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE, "the bridge closed the connection "
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
		long long	 n;
		char		*end;

		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE, "the bridge closed the connection "
			    "in the middle of its answer");
		n = strtoll(line, &end, 16);
		if (end == line || n < 0)
			die(EX_SOFTWARE, "malformed chunk from the bridge");
		if (n == 0)
			break;
		copy_body(n, body, relay);
		if (!getline_(line, sizeof(line)))
			die(EX_UNAVAILABLE, "the bridge closed the connection "
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
	case 400: case 413: case 414: case 415: case 422: case 431:
		return EX_DATAERR;
	case 401: case 403:
		return EX_NOPERM;
	case 404:
		return EX_NEGATIVE;
	case 429: case 408:
		return EX_TEMPFAIL;
	case 502: case 503: case 504:
		return EX_UNAVAILABLE;
	default:
		return status >= 500 ? EX_SOFTWARE : EX_NEGATIVE;
	}
}

static int
run(const struct req *r, const char *tok)
{
	struct str	 head = { 0 }, body = { 0 };
	char		 n[32];
	int		 status;

	in.fd = dial();
	s_puts(&head, r->method);
	s_puts(&head, " ");
	s_puts(&head, r->path.p);
	s_puts(&head, " HTTP/1.1\r\nHost: sbx-bridge\r\nConnection: close"
	    "\r\nAuthorization: Bearer ");
	s_puts(&head, tok);
	s_puts(&head, "\r\n");
	if (plugin != NULL) {
		if (strpbrk(plugin, "\r\n") != NULL)
			die(EX_USAGE, "bad plugin id");
		s_puts(&head, "X-Sbx-Plugin: ");
		s_puts(&head, plugin);
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
	send_all(in.fd, head.p, head.len);
	if (r->body.len > 0)
		send_all(in.fd, r->body.p, r->body.len);
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

int
main(int argc, char *argv[])
{
	const struct cmd	*c = NULL;
	struct req		 r;
	size_t			 i;
	int			 skip, nops;
	char			*tok;

	signal(SIGPIPE, SIG_IGN);
	argc--;
	argv++;
	while (argc > 0 && argv[0][0] == '-') {
		if (strcmp(argv[0], "-h") == 0 || strcmp(argv[0], "--help")
		    == 0)
			usage(0);
		if (strcmp(argv[0], "--version") == 0) {
			printf("%s %s\n", PROG, SBX_VERSION);
			return 0;
		}
		if (strcmp(argv[0], "--plugin") == 0 && argc > 1) {
			plugin = argv[1];
			argc -= 2;
			argv += 2;
			continue;
		}
		if (strcmp(argv[0], "--json") == 0) {	/* always JSON */
			argc--;
			argv++;
			continue;
		}
		fprintf(stderr, "%s: unknown option %s\n", PROG, argv[0]);
		usage(EX_USAGE);
	}
	if (plugin == NULL)
		plugin = getenv("SBX_PLUGIN");
	if (argc == 0)
		usage(EX_USAGE);
	for (i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		if (strcmp(argv[0], cmds[i].w1) != 0)
			continue;
		if (cmds[i].w2 == NULL || (argc > 1 && strcmp(argv[1],
		    cmds[i].w2) == 0)) {
			c = &cmds[i];
			break;
		}
	}
	if (c == NULL) {
		fprintf(stderr, "%s: unknown command `%s`\n", PROG, argv[0]);
		usage(EX_USAGE);
	}
	skip = c->w2 != NULL ? 2 : 1;
	nops = argc - skip;
	if (c->min >= 0 && (nops < c->min || nops > c->max)) {
		fprintf(stderr, "usage: %s %s\n", PROG, c->synopsis);
		return EX_USAGE;
	}
	/* connect needs the proxy, not the bridge's token. */
	if (c->build == c_connect)
		c_connect(NULL, nops, argv + skip);
	tok = token();
	memset(&r, 0, sizeof(r));
	c->build(&r, nops, argv + skip);
	return run(&r, tok);
}
