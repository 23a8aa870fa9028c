/* t-session: the control protocol of sbx-proxy and sbx-bridge
 * (lib/net/session.c): a request line read with its descriptor, parsed
 * and judged; the session's agent, channel and token; the answers. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "daemon.h"
#include "fsutil.h"
#include "session.h"

#define TOKEN "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"

static int rootfd = -1;
static char root[] = "/tmp/t-session.XXXXXX";

static void
put(const char *rel, const char *data)
{
	char	 path[512];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if ((f = fopen(path, "w")) == NULL) {
		perror(path);
		exit(1);
	}
	fputs(data, f);
	fclose(f);
}

/* A session whose control connection is the far end of a stream pair:
 * the test writes into sv[0] what a client would. */
static void
pair(struct sbx_session *s, int sv[2])
{
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		perror("socketpair");
		exit(1);
	}
	memset(s, 0, sizeof(*s));
	s->ctl = sv[1];
	s->chan = -1;
	s->fd_in = -1;
}

static void
unpair(struct sbx_session *s, int sv[2])
{
	struct sbx_sessions	 none = { NULL, 0 };

	/* Closes sv[1], the daemon's end (and no epoll set: -1). */
	sbx_session_close(&none, s, -1);
	close(sv[0]);
}

/* What a client of sbx sends: bytes, with a descriptor or not. */
static void
client(int fd, const char *data, int pass)
{
	ssize_t	 r;

	r = pass >= 0 ? sbx_fs_send_fd(fd, data, strlen(data), pass, 0) :
	    send(fd, data, strlen(data), MSG_NOSIGNAL);
	if (r != (ssize_t)strlen(data)) {
		perror("send");
		exit(1);
	}
}

static int
isopen(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static void
test_read(void)
{
	struct sbx_session	 s;
	int			 sv[2], fd, p[2], r;
	char			 big[600];

	pair(&s, sv);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 0 && fd == -1,
	    "nothing yet: more to come");
	client(sv[0], "{\"op\":", -1);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 0, "half a line: more");
	client(sv[0], "\"status\"}\n", -1);
	r = sbx_session_read(&s, 1024, 1, &fd);
	ok(r == 1 && fd == -1 && strcmp(s.line, "{\"op\":\"status\"}") == 0,
	    "a line in two pieces, its newline dropped");
	client(sv[0], "{\"op\":\"end\"}\ntrailing", -1);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 1 &&
	    strcmp(s.line, "{\"op\":\"end\"}") == 0,
	    "bytes after the newline are dropped");
	unpair(&s, sv);

	/* The descriptor comes before the line's end: kept until then. */
	pair(&s, sv);
	if (pipe(p) == -1)
		exit(1);
	client(sv[0], "{\"op\":\"session\",", p[0]);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 0 && fd == -1 &&
	    s.fd_in >= 0, "a descriptor before the newline is held");
	client(sv[0], "\"agent\":\"a\"}\n", -1);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 1 && fd >= 0 &&
	    s.fd_in == -1, "  and given with its line");
	close(fd);
	unpair(&s, sv);

	/* A descriptor where none is taken ends the session, closed. */
	pair(&s, sv);
	client(sv[0], "{\"op\":\"status\"}\n", p[0]);
	ok(sbx_session_read(&s, 1024, 0, &fd) == -1 && fd == -1 &&
	    s.fd_in == -1, "an unwanted descriptor: the session ends");
	unpair(&s, sv);
	/* Two before one line's end: the second is not wanted. */
	pair(&s, sv);
	client(sv[0], "{", p[0]);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 0, "one descriptor held");
	client(sv[0], "}", p[1]);
	ok(sbx_session_read(&s, 1024, 1, &fd) == -1,
	    "a second before the newline: the session ends");
	ok(s.fd_in >= 0, "  (the first is sbx_session_close's to close)");
	fd = s.fd_in;
	unpair(&s, sv);
	ok(!isopen(fd), "  and sbx_session_close closes it");
	close(p[0]);
	close(p[1]);

	/* A line longer than max, newline included, ends the session. */
	pair(&s, sv);
	memset(big, 'x', sizeof(big));
	big[511] = '\n';
	big[512] = '\0';
	client(sv[0], big, -1);
	ok(sbx_session_read(&s, 512, 1, &fd) == 1 && strlen(s.line) == 511,
	    "511 bytes and the newline fit in 512");
	big[511] = 'x';
	big[512] = '\n';
	big[513] = '\0';
	client(sv[0], big, -1);
	ok(sbx_session_read(&s, 512, 1, &fd) == -1,
	    "512 bytes and the newline do not");
	unpair(&s, sv);

	/* The peer closed. */
	pair(&s, sv);
	client(sv[0], "{\"op\":", -1);
	ok(sbx_session_read(&s, 1024, 1, &fd) == 0, "half a line");
	shutdown(sv[0], SHUT_WR);
	ok(sbx_session_read(&s, 1024, 1, &fd) == -1,
	    "then the peer closes: the session ends");
	unpair(&s, sv);
}

/* A line the protocol refuses, with its reason. */
static void
refused(const char *line, size_t max, const char *why, const char *what)
{
	struct sbx_error	 e;
	const char		*op = "";
	json_t			*r;

	memset(&e, 0, sizeof(e));
	r = sbx_session_request(line, max, &op, &e);
	ok(r == NULL && op == NULL && e.kind != NULL &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 && e.reason != NULL &&
	    strcmp(e.reason, why) == 0, "%s: %s", what, why);
	json_decref(r);
}

static void
test_request(void)
{
	struct sbx_error	 e;
	const char		*op;
	json_t			*r;

	memset(&e, 0, sizeof(e));
	r = sbx_session_request("{\"op\":\"status\"}", 100, &op, &e);
	ok(r != NULL && strcmp(op, "status") == 0, "a request and its op");
	json_decref(r);
	refused("{\"op\":", 100, "malformed_json", "cut short");
	refused("", 100, "malformed_json", "empty");
	refused("{\"op\":\"a\",\"op\":\"b\"}", 100, "malformed_json",
	    "a key twice");
	refused("[\"op\"]", 100, "not_an_object", "an array");
	refused("\"status\"", 100, "malformed_json",
	    "a bare string (no object or array)");
	refused("{\"op\":\"status\"}", 10, "too_large", "over its cap");
	refused("{}", 100, "bad_op", "no op");
	refused("{\"op\":1}", 100, "bad_op", "a number for op");
	refused("{\"op\":null}", 100, "bad_op", "a null op");
	refused("{\"op\":\"st\\u0000atus\"}", 100, "malformed_json",
	    "a NUL in op");
	ok(sbx_session_unknown_op(&e) == -1 &&
	    strcmp(e.reason, "unknown_op") == 0 &&
	    strcmp(e.field, "op") == 0, "an op the daemon lacks: unknown_op");
}

static void
test_agent(void)
{
	struct sbx_error	 e;
	json_t			*req;
	const char		*a;
	int			 sp[2], st[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, st) == -1)
		exit(1);
	memset(&e, 0, sizeof(e));
	req = json_pack("{s:s,s:s}", "op", "session", "agent", "alice");
	a = sbx_session_agent(req, sp[0], &e);
	ok(a != NULL && strcmp(a, "alice") == 0, "agent and channel");
	ok(sbx_session_agent(req, st[0], &e) == NULL &&
	    strcmp(e.reason, "bad_channel") == 0,
	    "a stream socket for a channel: bad_channel");
	ok(sbx_session_agent(req, -1, &e) == NULL &&
	    strcmp(e.reason, "bad_channel") == 0, "no channel: bad_channel");
	json_decref(req);
	req = json_pack("{s:s}", "op", "session");
	ok(sbx_session_agent(req, sp[0], &e) == NULL &&
	    strcmp(e.reason, "missing") == 0 && strcmp(e.field, "agent") == 0,
	    "no agent: missing");
	json_decref(req);
	req = json_pack("{s:s,s:i}", "op", "session", "agent", 7);
	ok(sbx_session_agent(req, sp[0], &e) == NULL &&
	    strcmp(e.reason, "missing") == 0, "a number for agent: missing");
	json_decref(req);
	req = json_pack("{s:s,s:s}", "op", "session", "agent", "../bob");
	ok(sbx_session_agent(req, sp[0], &e) == NULL &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0,
	    "an agent name that is a path: refused");
	json_decref(req);
	req = json_pack("{s:s,s:s}", "op", "session", "agent", "Alice");
	ok(sbx_session_agent(req, sp[0], &e) == NULL,
	    "an agent name outside the grammar: refused");
	json_decref(req);
	close(sp[0]);
	close(sp[1]);
	close(st[0]);
	close(st[1]);
}

static void
test_token(void)
{
	struct sbx_error	 e;
	char			 tok[SBX_TOKEN_LEN + 1], path[512];

	memset(&e, 0, sizeof(e));
	put("run/tokens/alice", TOKEN "\n");
	ok(sbx_session_token(rootfd, "alice", tok, &e) == 0 &&
	    strcmp(tok, TOKEN) == 0, "the agent's token, its newline dropped");
	ok(sbx_session_token(rootfd, "bob", tok, &e) == -1,
	    "no token file: refused");
	put("run/tokens/carol", "short\n");
	ok(sbx_session_token(rootfd, "carol", tok, &e) == -1 &&
	    strcmp(e.reason, "bad_token") == 0 &&
	    strstr(e.message, "sbx provision --agent carol") != NULL,
	    "not a token: bad_token, and how to repair it");
	snprintf(path, sizeof(path), "%s/run/tokens/dave", root);
	ok(symlink("alice", path) == 0 &&
	    sbx_session_token(rootfd, "dave", tok, &e) == -1,
	    "a link planted for a token is not followed");
	snprintf(path, sizeof(path), "%s/run/tokens/erin", root);
	ok(mkfifo(path, 0600) == 0 &&
	    sbx_session_token(rootfd, "erin", tok, &e) == -1,
	    "a FIFO planted for a token: refused, not waited on");
}

static void
test_answer(void)
{
	struct sbx_error	 e;
	char			 buf[512];
	ssize_t			 r;
	int			 sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1)
		exit(1);
	sbx_session_answer(sv[1], json_pack("{s:b,s:i}", "ok", 1, "n", 2));
	r = read(sv[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	ok(strcmp(buf, "{\"n\":2,\"ok\":true}\n") == 0,
	    "an answer: one compact line, keys sorted");
	memset(&e, 0, sizeof(e));
	sbx_error_set(&e, SBX_K_REJECTED, "token", "bad_token", "no %s",
	    "good");
	sbx_session_answer(sv[1], sbx_session_error(&e));
	r = read(sv[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	ok(strcmp(buf, "{\"kind\":\"rejected\",\"message\":\"no good\","
	    "\"ok\":false,\"reason\":\"bad_token\"}\n") == 0,
	    "a failure: kind, reason, message");
	memset(&e, 0, sizeof(e));
	sbx_session_answer(sv[1], sbx_session_error(&e));
	r = read(sv[0], buf, sizeof(buf) - 1);
	buf[r > 0 ? r : 0] = '\0';
	ok(strstr(buf, "\"kind\":\"execution_error\"") != NULL &&
	    strstr(buf, "\"reason\":\"error\"") != NULL,
	    "an empty error still says a kind and a reason");
	{
		struct sbx_session s = { .ctl = sv[1] };

		sbx_session_stopping(&s);
		r = read(sv[0], buf, sizeof(buf) - 1);
		buf[r > 0 ? r : 0] = '\0';
		ok(strcmp(buf, SBX_DAEMON_STOPPING "\n") == 0,
		    "a stop is said as one line");
	}
	ok(sbx_session_stream_ok(sv[0], 0) && !sbx_session_stream_ok(sv[0],
	    1), "a unix stream socket: a stream, not TCP");
	close(sv[0]);
	close(sv[1]);
	ok(!sbx_session_stream_ok(rootfd, 0),
	    "a directory is no stream socket");
}

/* A daemon's list: accepted newest first, closed from anywhere. */
static void
test_list(void)
{
	struct sbx_sessions	 l = { NULL, 0 };
	struct sbx_session	*s[3];
	struct sockaddr_un	 sun = { .sun_family = AF_UNIX };
	int			 lfd, c[3], i, fine = 1;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/ctl.sock", root);
	lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (lfd == -1 ||
	    bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(lfd, 8) == -1) {
		perror("listen");
		exit(1);
	}
	ok(sbx_session_accept(&l, lfd, 64) == NULL && l.n == 0,
	    "nobody connected: no session");
	for (i = 0; i < 3; i++) {
		if ((c[i] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) ==
		    -1 || connect(c[i], (struct sockaddr *)&sun,
		    sizeof(sun)) == -1) {
			perror("connect");
			exit(1);
		}
		s[i] = sbx_session_accept(&l, lfd, 4096);
		fine &= s[i] != NULL && s[i]->ctl >= 0 && s[i]->chan == -1 &&
		    s[i]->fd_in == -1 && s[i]->t_open > 0 &&
		    s[i]->agent[0] == '\0';
	}
	ok(fine && l.n == 3, "three connections, three sessions");
	ok(l.head == s[2] && s[2]->next == s[1] && s[1]->next == s[0] &&
	    s[0]->next == NULL && s[0]->prev == s[1], "newest first");
	sbx_session_close(&l, s[1], -1);
	ok(l.n == 2 && l.head == s[2] && s[2]->next == s[0] &&
	    s[0]->prev == s[2], "one out of the middle");
	sbx_session_close(&l, s[2], -1);
	ok(l.n == 1 && l.head == s[0] && s[0]->prev == NULL, "the head");
	sbx_session_close(&l, s[0], -1);
	ok(l.n == 0 && l.head == NULL, "the last: empty");
	ok(s[0]->ctl == -1 && s[0]->chan == -1, "  its descriptors closed");
	for (i = 0; i < 3; i++) {
		free(s[i]);
		close(c[i]);
	}
	close(lfd);
}

int
main(void)
{
	char	 path[512];

	if (mkdtemp(root) == NULL || (rootfd = open(root, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC)) == -1) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/run", root);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/run/tokens", root);
	mkdir(path, 0700);
	test_read();
	test_request();
	test_agent();
	test_token();
	test_answer();
	test_list();
	close(rootfd);
	{
		struct sbx_error e;

		memset(&e, 0, sizeof(e));
		(void)sbx_fs_rm_tree_at(AT_FDCWD, root, &e);
	}
	return done_testing();
}
