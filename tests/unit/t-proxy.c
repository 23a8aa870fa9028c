/*
 * t-proxy: sbx-proxy's configuration, and its engine driven over real
 * sockets: a session opened on the control socket, TCP connections passed
 * over the channel as sbx-init does, a loopback upstream.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "dnsq.h"
#include "fsutil.h"
#include "netpolicy.h"
#include "provision.h"
#include "proxy.h"
#include "proxyclient.h"

static char	 root[] = "/tmp/t-proxy.XXXXXX";
static int	 rootfd = -1;

static void
put(const char *rel, const char *text)
{
	struct sbx_error	 e;
	char			 dir[256], *slash;
	int			 fd;

	snprintf(dir, sizeof(dir), "%s", rel);
	slash = strrchr(dir, '/');
	*slash = '\0';
	if ((fd = sbx_fs_mkdirs_at(rootfd, dir, 0700, &e)) == -1 ||
	    sbx_fs_write_atomic(fd, slash + 1, text, strlen(text), 0600, &e) ==
	    -1) {
		printf("Bail out! cannot write %s: %s\n", rel, e.message);
		exit(1);
	}
	close(fd);
}

static int
load(const char *sandbox_json, struct sbx_proxy_config *c,
    struct sbx_error *e)
{
	put("config/sandbox.json", sandbox_json);
	return sbx_proxy_config_load(rootfd, c, e);
}

static void
test_config(void)
{
	struct sbx_proxy_config	 c;
	struct sbx_error	 e;
	static const char *const bad[] = {
		"{\"proxy\":[]}",
		"{\"proxy\":{\"nope\":1}}",
		"{\"proxy\":{\"max_connections\":0}}",
		"{\"proxy\":{\"max_connections\":\"10\"}}",
		"{\"proxy\":{\"header_timeout_ms\":-5}}",
		"{\"proxy\":{\"dns_server\":\"127.0.0.1\"}}",
		"{\"proxy\":{\"dns_server\":\"localhost:53\"}}",
		"{\"proxy\":{\"dns_server\":\"127.0.0.1:0\"}}",
		"{\"proxy\":{\"dns_server\":\"127.0.0.1:99999\"}}",
		"{\"proxy\":{\"log_max_bytes\":1}}",
		"{\"proxy\":",
		"{\"proxy\":{\"opaque_ports\":22}}",
		"{\"proxy\":{\"opaque_ports\":[0]}}",
		"{\"proxy\":{\"opaque_ports\":[65536]}}",
		"{\"proxy\":{\"opaque_ports\":[\"22\"]}}",
		"{\"proxy\":{\"opaque_ports\":[22.0]}}",
		"{\"proxy\":{\"max_lookups\":0}}",
		"{\"proxy\":{\"max_lookups_per_agent\":-1}}",
		"{\"proxy\":{\"allowed_cidrs\":[\"10.1.2.3/8\"]}}",
		"{\"proxy\":{\"allowed_cidrs\":\"10.0.0.0/8\"}}",
		"{\"proxy\":{\"allow_private_domains\":[\"*\"]}}",
	};
	size_t	 i;

	memset(&e, 0, sizeof(e));
	ok(sbx_proxy_config_load(-1, &c, &e) == 0 && c.max_conns == 4096 &&
	    c.max_conns_agent == 256 && c.header_timeout_ms == 10000 &&
	    c.idle_exit_ms == 300000 && c.dns_server[0] == '\0' &&
	    c.max_lookups == 1024 && c.max_lookups_agent == 64 &&
	    c.nopaque == 0,
	    "defaults without a root");
	ok(load("{}", &c, &e) == 0 && c.max_conns == 4096,
	    "defaults without a proxy object");
	ok(load("{\"proxy\":{\"max_connections\":10,"
	    "\"max_connections_per_agent\":3,\"header_timeout_ms\":500,"
	    "\"max_duration_s\":7,\"idle_exit_s\":2,"
	    "\"dns_server\":\"127.0.0.1:5353\"}}", &c, &e) == 0 &&
	    c.max_conns == 10 && c.max_conns_agent == 3 &&
	    c.header_timeout_ms == 500 && c.max_duration_ms == 7000 &&
	    c.idle_exit_ms == 2000 && strcmp(c.dns_server,
	    "127.0.0.1:5353") == 0, "settings are read");
	ok(load("{\"proxy\":{\"opaque_ports\":[22,2222],\"max_lookups\":9,"
	    "\"max_lookups_per_agent\":2}}", &c, &e) == 0 &&
	    c.nopaque == 2 && c.opaque_ports[0] == 22 &&
	    c.opaque_ports[1] == 2222 && c.max_lookups == 9 &&
	    c.max_lookups_agent == 2, "opaque_ports and the lookup queue "
	    "bounds are read");
	{
		char	 big[1024];
		int	 n, k;

		n = snprintf(big, sizeof(big), "{\"proxy\":{\"opaque_ports\":[");
		for (k = 0; k <= SBX_PROXY_OPAQUE_MAX; k++)
			n += snprintf(big + n, sizeof(big) - (size_t)n, "%s%d",
			    k ? "," : "", k + 1);
		snprintf(big + n, sizeof(big) - (size_t)n, "]}}");
		ok(load(big, &c, &e) == -1, "more than %d opaque_ports are "
		    "refused", SBX_PROXY_OPAQUE_MAX);
	}
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		memset(&e, 0, sizeof(e));
		ok(load(bad[i], &c, &e) == -1 && e.kind != NULL &&
		    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 &&
		    strcmp(e.reason, "config_invalid") == 0,
		    "bad config #%zu refused: %s", i, e.message);
	}
	/* Issue 11 item 7: the policy settings of every agent. */
	ok(load("{\"proxy\":{\"allowed_cidrs\":[\"203.0.113.0/24\"],"
	    "\"allow_private_domains\":[\"*.mirror.example\"]}}", &c, &e) ==
	    0 && c.policy != NULL && json_array_size(json_object_get(c.policy,
	    "allowed_cidrs")) == 1, "global allowed_cidrs and "
	    "allow_private_domains are read");
	{
		struct sbx_netpolicy	 np;
		json_t			*a = json_pack("{s:[s]}",
					    "allowed_cidrs", "10.0.0.0/8");

		ok(sbx_proxy_policy(&c, a, "config/agents/a.json", &np, &e) ==
		    0 && np.ncidrs == 2 && np.nprivate == 1,
		    "an agent's policy has the global settings and its own");
		sbx_np_free(&np);
		json_decref(a);
	}
	sbx_proxy_config_release(&c);
	ok(c.policy == NULL, "released");
	put("config/sandbox.json", "{}");
}

/* ---- the lookup queue -------------------------------------------------- */

#define NI	200

/* Which agent an item belongs to, by its index: items[0..100) are A's,
 * [100..200) B's, and so on. */
static struct sbx_dnsq_item	 items[NI];

static int
who(const struct sbx_dnsq_item *it)
{
	return it == NULL ? -1 : (int)((it - items) / 100);
}

static void
test_dnsq(void)
{
	struct sbx_dnsq		 q;
	struct sbx_dnsq_agent	 a, b, c;
	struct sbx_dnsq_item	*it, *got[16];
	char			 order[64];
	int			 i, n, pushed;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	memset(items, 0, sizeof(items));
	/* Bounds: 10 waiting per agent, 15 in all; plenty in flight. */
	sbx_dnsq_init(&q, 15, 10, 100, 100);
	for (i = pushed = 0; i < 100; i++)
		if (sbx_dnsq_push(&q, &a, &items[i]) == 0)
			pushed++;
	ok(pushed == 10 && a.nqueued == 10, "one agent: at most max_agent "
	    "waiting (%d)", pushed);
	for (i = pushed = 0; i < 100; i++)
		if (sbx_dnsq_push(&q, &b, &items[100 + i]) == 0)
			pushed++;
	ok(pushed == 5 && q.nqueued == 15, "in all: at most max_total "
	    "waiting (%d more)", pushed);
	/* A flooded first; B is served every other turn, each in order. */
	for (n = 0; n < 15 && (it = sbx_dnsq_next(&q)) != NULL; n++)
		order[n] = (char)('A' + who(it));
	order[n] = '\0';
	is_str(order, "ABABABABABAAAAA", "round-robin between agents");
	ok(items[0].agent == &a && items[9].agent == &a &&
	    a.ninflight == 10 && b.ninflight == 5 && q.ninflight == 15,
	    "in flight: counted per agent and in all");

	/* FIFO within an agent, and cancellation. */
	sbx_dnsq_init(&q, 100, 100, 100, 100);
	memset(&a, 0, sizeof(a));
	memset(items, 0, sizeof(items));
	for (i = 0; i < 5; i++)
		sbx_dnsq_push(&q, &a, &items[i]);
	sbx_dnsq_cancel(&q, &items[1]);
	sbx_dnsq_cancel(&q, &items[3]);
	for (n = 0; n < 5 && (got[n] = sbx_dnsq_next(&q)) != NULL; n++)
		;
	ok(n == 3 && got[0] == &items[0] && got[1] == &items[2] &&
	    got[2] == &items[4], "FIFO within an agent; cancelled lookups "
	    "are never handed out");
	ok(a.nqueued == 0 && q.nqueued == 0 && q.ring == NULL,
	    "the queue is empty after");
	sbx_dnsq_cancel(&q, &items[4]);	/* in flight: nothing to take out */
	ok(q.ninflight == 3, "cancel leaves a lookup in flight counted");
	for (i = 0; i < 3; i++)
		sbx_dnsq_done(&q, got[i]);
	ok(q.ninflight == 0 && a.ninflight == 0, "done gives the slots back");

	/* In-flight bounds: A at its share waits, B and C still go. */
	sbx_dnsq_init(&q, 100, 100, 4, 2);
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	memset(&c, 0, sizeof(c));
	memset(items, 0, sizeof(items));
	for (i = 0; i < 50; i++)
		sbx_dnsq_push(&q, &a, &items[i]);
	got[0] = sbx_dnsq_next(&q);
	got[1] = sbx_dnsq_next(&q);
	ok(who(got[0]) == 0 && who(got[1]) == 0 && sbx_dnsq_next(&q) == NULL,
	    "an agent at its in-flight share gets no more");
	sbx_dnsq_push(&q, &b, &items[100]);
	sbx_dnsq_push(&q, &c, &items[150]);
	got[2] = sbx_dnsq_next(&q);
	got[3] = sbx_dnsq_next(&q);
	ok(got[2] == &items[100] && got[3] == &items[150],
	    "other agents are served at once");
	sbx_dnsq_push(&q, &b, &items[101]);
	ok(sbx_dnsq_next(&q) == NULL, "nothing beyond the total in flight");
	sbx_dnsq_done(&q, got[0]);
	it = sbx_dnsq_next(&q);
	ok(it == &items[101] || it == &items[2], "a slot freed is used "
	    "(%d)", who(it));
}

/* ---- the engine ------------------------------------------------------- */

#define TOKEN	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
#define TOKEN_B	"BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB"

static pid_t	 server = -1;

static int
tcp_listener(unsigned *port)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd == -1 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 16) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) == -1)
		return -1;
	*port = ntohs(sin.sin_port);
	return fd;
}

/* A TCP connection as the sandbox would make it, handed to the proxy over
 * the channel; returns our end. */
static int
client(int chan, int lfd, unsigned port)
{
	struct sockaddr_in	 sin;
	int			 fd, acc;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    (acc = accept(lfd, NULL, NULL)) == -1)
		return -1;
	if (sbx_fs_send_fd(chan, "C", 1, acc, 0) != 1)
		return -1;
	close(acc);
	return fd;
}

/* Send a request, read the whole answer (the proxy closes). */
static char *
ask(int fd, const char *req)
{
	static char	 ans[8192];
	size_t		 n = 0;
	ssize_t		 r;
	struct pollfd	 pfd;

	if (write(fd, req, strlen(req)) != (ssize_t)strlen(req))
		return "write failed";
	pfd.fd = fd;
	pfd.events = POLLIN;
	while (n < sizeof(ans) - 1 && poll(&pfd, 1, 5000) == 1 &&
	    (r = read(fd, ans + n, sizeof(ans) - 1 - n)) > 0)
		n += (size_t)r;
	ans[n] = '\0';
	close(fd);
	return ans;
}

static void
test_engine(void)
{
	struct sbx_error	 e;
	int			 lfd, in, up, ctl, chan, fd, acc = -1;
	unsigned		 inport, upport;
	char			 req[1024], agent_json[512], *a, b[64];
	json_t			*v;
	int			 status;
	ssize_t			 r;

	memset(&e, 0, sizeof(e));
	if ((in = tcp_listener(&inport)) == -1 ||
	    (up = tcp_listener(&upport)) == -1) {
		printf("Bail out! no loopback listener\n");
		exit(1);
	}
	snprintf(agent_json, sizeof(agent_json), "{\"allowed_domains\":["
	    "\"up.sbx.test\",\"*.wild.sbx.test\"],\"denied_domains\":["
	    "\"no.wild.sbx.test\"],\"allowed_ports\":[%u],"
	    "\"opaque_ports\":[%u],"
	    "\"allow_private\":true,\"resolve\":{\"up.sbx.test\":"
	    "\"127.0.0.1\",\"a.wild.sbx.test\":\"127.0.0.1\"}}", upport,
	    upport);
	put("config/agents/a.json", agent_json);
	put("config/agents/b.json", "{\"allowed_domains\":[\"strict.sbx."
	    "test\"],\"resolve\":{},\"allowed_ports\":[80]}");
	put("run/tokens/a", TOKEN "\n");
	put("run/tokens/b", TOKEN_B "\n");
	put("config/sandbox.json", "{\"proxy\":{\"header_timeout_ms\":300,"
	    "\"idle_exit_s\":1}}");

	/* The proxy, in a child, listening on a socket we made. */
	{
		struct sockaddr_un	 sun;
		struct sbx_proxy_config	 cfg;

		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/run/%s",
		    root, "proxy.sock");
		if (bind(lfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
		    listen(lfd, 16) == -1 ||
		    sbx_proxy_config_load(rootfd, &cfg, &e) == -1) {
			printf("Bail out! cannot set up: %s\n", e.message);
			exit(1);
		}
		if ((server = fork()) == 0) {
			signal(SIGPIPE, SIG_IGN);
			_exit(sbx_proxy_serve(rootfd, lfd, &cfg, &e) == 0 ?
			    0 : 1);
		}
		close(lfd);
	}

	ok((ctl = sbx_proxyclient_connect(rootfd, &e)) >= 0, "control socket");
	v = json_array();
	json_array_append_new(v, json_string("extra.sbx.test"));
	ok(sbx_proxyclient_session(ctl, "a", v, NULL, 0, "run1", &chan, &e) ==
		0,
	    "a session opens");
	json_decref(v);

	/* Denied by name: 403 with the reason, nothing dialled. */
	snprintf(req, sizeof(req), "CONNECT evil.sbx.test:%u HTTP/1.1\r\n"
	    "Proxy-Authorization: Bearer " TOKEN "\r\n\r\n", upport);
	a = ask(client(chan, in, inport), req);
	ok(strncmp(a, "HTTP/1.1 403 ", 13) == 0 &&
	    strstr(a, "X-Proxy-Error: not_allowlisted\r\n") != NULL,
	    "not allowlisted: 403 not_allowlisted");
	/* IP literal */
	snprintf(req, sizeof(req), "CONNECT 127.0.0.1:%u HTTP/1.1\r\n"
	    "Proxy-Authorization: Bearer " TOKEN "\r\n\r\n", upport);
	a = ask(client(chan, in, inport), req);
	ok(strstr(a, " 403 ") != NULL && strstr(a, "ip_literal") != NULL,
	    "IP literal: 403 ip_literal");
	/* Denied beats the wildcard */
	snprintf(req, sizeof(req), "CONNECT no.wild.sbx.test:%u HTTP/1.1\r\n"
	    "Proxy-Authorization: Bearer " TOKEN "\r\n\r\n", upport);
	a = ask(client(chan, in, inport), req);
	ok(strstr(a, "denied_domain") != NULL, "denied_domains first");
	/* Port */
	snprintf(req, sizeof(req), "CONNECT up.sbx.test:22 HTTP/1.1\r\n"
	    "Proxy-Authorization: Bearer " TOKEN "\r\n\r\n");
	a = ask(client(chan, in, inport), req);
	ok(strstr(a, "port_not_allowed") != NULL, "port not allowed");
	/* Tokens */
	snprintf(req, sizeof(req), "CONNECT up.sbx.test:%u HTTP/1.1\r\n\r\n",
	    upport);
	a = ask(client(chan, in, inport), req);
	ok(strncmp(a, "HTTP/1.1 407 ", 13) == 0 && strstr(a,
	    "Proxy-Authenticate: Basic") != NULL && strstr(a,
	    "missing_token") != NULL, "no token: 407");
	snprintf(req, sizeof(req), "CONNECT up.sbx.test:%u HTTP/1.1\r\n"
	    "Proxy-Authorization: Bearer " TOKEN_B "\r\n\r\n", upport);
	a = ask(client(chan, in, inport), req);
	ok(strstr(a, " 407 ") != NULL && strstr(a, "bad_token") != NULL,
	    "another agent's token: 407");
	/* Smuggling shape */
	a = ask(client(chan, in, inport), "GET http://up.sbx.test/ HTTP/1.1"
	    "\r\nHost: up.sbx.test\r\nContent-Length: 1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	ok(strstr(a, " 400 ") != NULL, "CL+TE: 400");
	/* Header timeout: a partial head is answered 408 and closed. */
	fd = client(chan, in, inport);
	a = ask(fd, "CONNECT up");
	ok(strstr(a, " 408 ") != NULL && strstr(a, "header_timeout") != NULL,
	    "partial head: 408 after the header timeout");

	/* Allowed: the tunnel reaches the upstream, bytes flow. */
	snprintf(req, sizeof(req), "CONNECT up.sbx.test:%u HTTP/1.1\r\n"
	    "Proxy-Authorization: Basic ", upport);
	{
		/* base64("a:" TOKEN) */
		char	 cred[128], b64[200];
		size_t	 i, o = 0, n;
		static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmn"
		    "opqrstuvwxyz0123456789+/";

		snprintf(cred, sizeof(cred), "a:%s", TOKEN);
		n = strlen(cred);
		for (i = 0; i < n; i += 3) {
			unsigned v3 = (unsigned char)cred[i] << 16 |
			    (i + 1 < n ? (unsigned char)cred[i + 1] << 8 : 0) |
			    (i + 2 < n ? (unsigned char)cred[i + 2] : 0);
			b64[o++] = al[v3 >> 18 & 63];
			b64[o++] = al[v3 >> 12 & 63];
			b64[o++] = i + 1 < n ? al[v3 >> 6 & 63] : '=';
			b64[o++] = i + 2 < n ? al[v3 & 63] : '=';
		}
		b64[o] = '\0';
		strncat(req, b64, sizeof(req) - strlen(req) - 8);
		strcat(req, "\r\n\r\n");
	}
	fd = client(chan, in, inport);
	ok(write(fd, req, strlen(req)) == (ssize_t)strlen(req) &&
	    (acc = accept(up, NULL, NULL)) >= 0, "allowed: the upstream is "
	    "dialled");
	r = read(fd, b, sizeof(b) - 1);
	b[r > 0 ? r : 0] = '\0';
	ok(strncmp(b, "HTTP/1.1 200 ", 13) == 0, "allowed: 200");
	/* Server speaks first (the agent's opaque port): relayed. */
	ok(write(acc, "hello\n", 6) == 6 && read(fd, b, 6) == 6 &&
	    memcmp(b, "hello\n", 6) == 0, "upstream bytes reach the client");
	ok(write(fd, "ping", 4) == 4 && read(acc, b, 4) == 4 &&
	    memcmp(b, "ping", 4) == 0, "client bytes reach the upstream");
	close(fd);
	ok(read(acc, b, 1) == 0, "a close travels on");
	close(acc);

	/* The session's violations. */
	v = sbx_proxyclient_end(ctl, &e);
	ok(v != NULL && json_array_size(v) >= 7, "violations returned "
	    "(%zu)", v != NULL ? json_array_size(v) : 0);
	ok(v != NULL && strcmp(json_string_value(json_object_get(
	    json_array_get(v, 0), "reason")), "not_allowlisted") == 0 &&
	    strcmp(json_string_value(json_object_get(json_array_get(v, 0),
	    "type")), "network") == 0, "first violation: network, "
	    "not_allowlisted");
	json_decref(v);
	close(ctl);
	close(chan);

	/* b's policy: resolve without allow_private is refused at load. */
	ctl = sbx_proxyclient_connect(rootfd, &e);
	ok(ctl >= 0 &&
		sbx_proxyclient_session(ctl, "b", NULL, NULL, 0, "run2", &chan,
		    &e) == 0,
	    "b: an empty resolve object is fine");
	if (ctl >= 0)
		close(ctl);
	put("config/agents/b.json", "{\"resolve\":{\"x.sbx.test\":"
	    "\"127.0.0.1\"}}");
	ctl = sbx_proxyclient_connect(rootfd, &e);
	ok(ctl >= 0 &&
		sbx_proxyclient_session(ctl, "b", NULL, NULL, 0, "run3", &chan,
		    &e) == -1,
	    "b: resolve without allow_private refuses the session: %s",
	    e.message);
	if (ctl >= 0)
		close(ctl);
	ctl = sbx_proxyclient_connect(rootfd, &e);
	ok(ctl >= 0 &&
		sbx_proxyclient_session(ctl, "nobody", NULL, NULL, 0, "run4",
		    &chan, &e) == -1,
	    "an agent without a token: refused");
	if (ctl >= 0)
		close(ctl);

	/* Idle: it exits by itself. */
	ok(waitpid(server, &status, 0) == server && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0, "the proxy exits when idle");
	server = -1;
	close(in);
	close(up);
}

/* A control call takes its answer's line and nothing more: on a
 * connection that follows the asks, an event right behind the answer
 * stays for the follower (it was read with the answer and lost). */
static void
test_client_line(void)
{
	struct sbx_error	 e;
	json_t			*a;
	char			 buf[256];
	const char		 two[] = "{\"asks\":[],\"ok\":true}\n"
				    "{\"event\":\"ask\",\"id\":\"x\"}\n";
	ssize_t			 n;
	int			 sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		skip("client: socketpair");
		return;
	}
	memset(&e, 0, sizeof(e));
	/* Both lines there before the call reads anything. */
	(void)!write(sv[1], two, sizeof(two) - 1);
	a = sbx_proxyclient_call(sv[0], json_pack("{s:s,s:b}", "op", "asks",
	    "follow", 1), -1, 5000, &e);
	n = recv(sv[0], buf, sizeof(buf) - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = '\0';
	ok(a != NULL && json_is_array(json_object_get(a, "asks")) &&
	    strcmp(buf, "{\"event\":\"ask\",\"id\":\"x\"}\n") == 0,
	    "client: the answer's line is taken, the event behind it stays");
	json_decref(a);
	close(sv[0]);
	close(sv[1]);
}

int
main(void)
{
	struct sbx_error	 e;

	signal(SIGPIPE, SIG_IGN);
	if ((rootfd = t_tmpdir(root)) == -1) {
		printf("Bail out! no temp dir\n");
		return 1;
	}
	test_config();
	test_dnsq();
	test_engine();
	test_client_line();
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
	}
	close(rootfd);
	if (sbx_provision_rm_tree(AT_FDCWD, root, &e) == -1)
		printf("# cannot remove %s: %s\n", root, e.message);
	return done_testing();
}
