/*
 * proxy.c: the event loop of sbx-proxy.
 *
 * One thread runs an epoll loop over: the control socket (sessions opened
 * by sbx-exec; the protocol is session.c's), each session's control
 * connection and channel (over which sbx-init passes the sandbox's TCP
 * connections), and every proxied connection's two sockets.  Names are
 * resolved asynchronously in the same loop (resolver.c: c-ares, its
 * sockets in an epoll set of their own), so a slow DNS server holds no
 * thread and no lookup blocks another; lookups wait in a bounded queue
 * that serves the agents round-robin (dnsq.h), a lookup whose connection
 * is gone is cancelled or its answer dropped, and one that is still with
 * the resolver counts against its agent's connection cap until the
 * resolver lets it go.  Nothing is threaded.  Bytes of an established
 * connection move between the sockets with splice(2) through a pipe,
 * never through user-space buffers.
 *
 * A name no rule allows or denies may be asked about instead of refused
 * (network_ask, --ask): the connection is held in proxyask.c's table
 * until someone answers or the ask times out.
 *
 * Order of the checks for a request (a denied request is never resolved,
 * so no DNS query leaks a denied name): parse, token, host syntax and IP
 * literals, denied and allowed domains, port; then resolve, refuse any
 * non-global address, and connect to an address that was checked.
 *
 * Credentials (issue 34): a session may carry credential rules with a
 * placeholder and a value each.  A placeholder of the session seen in a
 * request head the loop reads (plain HTTP, a CONNECT, a SOCKS5 name) is
 * refused before the name is judged or resolved (credential_host_mismatch).
 * A tunnel to a host:port a rule names, once dialled as any other, is
 * handed to a worker thread (credinject.c says why a thread) that
 * terminates TLS with the state root's CA, checks and injects each
 * request; the loop only reads its events from a pipe and closes its
 * descriptors when it is done.  Every other tunnel stays opaque.
 */
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ares.h>
#include <jansson.h>
#include <openssl/ssl.h>
#include <sodium.h>

#include "buf.h"
#include "config.h"
#include "credinject.h"
#include "daemon.h"
#include "dlist.h"
#include "dnsq.h"
#include "envelope.h"
#include "fsutil.h"
#include "httpreq.h"
#include "layout.h"
#include "names.h"
#include "netpolicy.h"
#include "provision.h"
#include "proxy.h"
#include "proxyask.h"
#include "proxycfg.h"
#include "resolver.h"
#include "scrub.h"
#include "secret.h"
#include "session.h"
#include "settings.h"
#include "socks5.h"
#include "time.h"
#include "tlsca.h"

#define MAX_ADDRS	SBX_RESOLVER_ADDRS
#define PIPE_SIZE	(256 << 10)
#define VIOLATIONS_MAX	100
#define CTL_TIMEOUT_MS	5000
#define LINGER_MS	1000
#define SWEEP_MS	200

enum cstate {
	C_HEAD,		/* reading the request head */
	C_SOCKS,	/* reading the SOCKS5 greeting, auth, request */
	C_ASK,		/* held: a person or an orchestrator is asked */
	C_RESOLVE,	/* its lookup is queued or with the resolver */
	C_CONNECT,	/* non-blocking connect in progress */
	C_UPHEAD,	/* CONNECT sent to the parent proxy, its answer due */
	C_RELAY,	/* bytes flow */
	C_LINGER,	/* answered a refusal; draining before close */
	C_INJECT	/* with a credential worker (credinject.c) */
};

struct conn;
struct session;

/* The longest response head the proxy gives "Connection: close" to
 * (resp_head); a longer one goes on unchanged. */
#define RESP_HEAD_MAX	(64 * 1024)

/* What an epoll event points at. */
enum ktype { K_LISTEN, K_DNS, K_CTL, K_CHAN, K_CLIENT, K_UPSTREAM,
	K_WORKER };
struct key {
	enum ktype	 type;
	void		*p;
};

struct agentcount {
	char			 name[SBX_AGENT_MAX + 1];
	unsigned		 n;		/* connections */
	unsigned		 orphans;	/* lookups of closed ones */
	struct sbx_dnsq_agent	 q;
	struct agentcount	*next;
};

struct session {
	/* ctl, chan (-1 until opened, -2 once the sandbox is gone), the
	 * agent and its token, the line being read (session.h). */
	struct sbx_session	 ss;
	struct key		 kctl, kchan;
	char			 run[80];
	struct sbx_netpolicy	 pol;
	unsigned short		 opaque[SBX_PROXY_OPAQUE_MAX];
	size_t			 nopaque;
	/* The parent proxy of this agent's connections, if any. */
	struct sbx_upstream	 up;
	int			 have_up;
	/* Ask about names no rule allows or denies (network_ask, --ask),
	 * for at most ask_ms; follow: a control connection that gets every
	 * ask and answer as a line (sbx proxy asks --follow). */
	int			 ask;
	long long		 ask_ms;
	int			 follow;
	json_t			*violations;
	/* Credential rules with placeholders and values (sodium memory),
	 * and what the run used: [{"secret","host","port"}]. */
	struct sbx_cred		*creds;
	size_t			 ncreds;
	json_t			*credused;
	unsigned long long	 denied;
	unsigned		 nconns;
	int			 ended;
	int			 closed;
	struct session		*gnext;
};

struct conn {
	struct key		 kc, ku;
	struct session		*s;
	enum cstate		 state;
	int			 cfd, ufd;
	unsigned		 evc, evu;	/* registered interest */
	int			 creg, ureg;	/* cfd, ufd in epoll */
	int			 c_hup, u_hup;	/* EPOLLHUP/ERR seen */
	char			*buf;		/* head (C_HEAD), first record
						 * (C_HELLO), pending bytes */
	size_t			 len, cap;
	size_t			 sendoff;	/* of buf, already sent up */
	/* The request, once parsed. */
	int			 connect;
	char			 method[24];
	char			 host[SBX_NP_HOST_MAX + 1];
	unsigned		 port;
	long long		 body_left;	/* plain HTTP: body to pass */
	int			 via_up; /* through the parent proxy */
	int			 socks; /* from 1080: SOCKS5 */
	struct sbx_proxyask	 ask;	/* C_ASK: its pending decision */
	int			 sstage; /* 0 greeting, 1 auth, 2 request */
	struct sockaddr_storage	 addrs[MAX_ADDRS];
	socklen_t		 addrlens[MAX_ADDRS];
	int			 naddrs, ai;
	/* Relay. */
	int			 p_cu[2], p_uc[2];	/* client->up, up->client */
	size_t			 q_cu, q_uc;		/* bytes in the pipes */
	int			 eof_c, eof_u, shut_u, shut_c;
	/* Plain HTTP: the response head, read here rather than spliced,
	 * goes to the client with "Connection: close" (resp_head): 1 while
	 * it is read, 2 while it is sent, 0 once it went. */
	int			 rhead;
	char			*rb;
	size_t			 rblen, rboff, rbscan;
	/* CONNECT: nothing goes either way before the client's first bytes
	 * were judged (a ClientHello's SNI, or an HTTP request's Host),
	 * unless the port is opaque. */
	int			 hello;
	long long		 t_hello;
	unsigned long long	 bytes_in, bytes_out;
	long long		 t_start, t_last, t_deadline;
	struct sbx_resolver_job	*job;		/* its lookup */
	int			 closed;
	struct conn		*gnext;		/* the graveyard */
	int			 logged;
	int			 status;
	/* The address a refusal of its class is about, as text. */
	char			 refused[INET6_ADDRSTRLEN];
	/* The secret whose placeholder a refusal is about. */
	char			 secret[SBX_CRED_PLACEHOLDER_MAX + 1];
	struct injw		*w;	/* C_INJECT: its worker */
	void			*w_ctx;	/* its leaf's SSL_CTX, a reference */
	struct conn		*prev, *next;
};

/* A credential worker as the loop sees it: the descriptors it closes
 * once the worker is done, and what the log line needs after the
 * connection is gone. */
struct injw {
	struct conn	*c;	/* NULL once the connection was closed */
	int		 cfd, ufd;
	char		 agent[SBX_AGENT_MAX + 1];
	char		 run[80];
	char		 host[SBX_NP_HOST_MAX + 1];
	unsigned	 port;
	long long	 t_start;
	json_t		*used;	/* secrets used on it */
};

static struct {
	const struct sbx_proxy_config	*cfg;
	int			 rootfd, runfd, ep, lfd, logfd;
	unsigned long long	 logsize;
	struct key		 klisten, kdns;
	struct sbx_sessions	 sessions;
	struct conn		*conns;
	unsigned		 nconns;
	struct agentcount	*counts;
	/* Closed in this batch of events, freed after it: later events of
	 * the same batch may still point at them. */
	struct conn		*grave;
	struct session		*sgrave;
	/* Credential workers: their event pipe, the CA (loaded at the first
	 * injected connection), the TLS context to real hosts. */
	int			 evr, evw;
	struct key		 kev;
	unsigned		 nworkers;
	struct sbx_tlsca	*ca;
	void			*cctx;
	int			 stop;
	long long		 t_idle, t_start;
} P;

static void conn_close(struct conn *);
static void conn_update(struct conn *);
static void ask_publish(json_t *);

/* The session after s in the daemon's list, the first after NULL (a
 * struct session begins with its struct sbx_session). */
static struct session *
session_next(const struct session *s)
{
	return (struct session *)(void *)(s != NULL ? s->ss.next :
	    P.sessions.head);
}


/* ---- log -------------------------------------------------------------- */

static void
log_open(void)
{
	struct stat	 st;

	if (P.logfd >= 0)
		close(P.logfd);
	P.logfd = openat(P.runfd, "proxy.log",
	    O_RDWR | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	/* A last line cut short (a full disk, a kill mid-write) is dropped
	 * so the next one starts on its own line (issue 30). */
	if (P.logfd >= 0)
		(void)sbx_fs_repair_tail(P.logfd);
	P.logsize = 0;
	if (P.logfd >= 0 && fstat(P.logfd, &st) == 0)
		P.logsize = (unsigned long long)st.st_size;
}

/*
 * A log line quotes the sandbox (the host it named, its method), in the
 * proxy's spelling: a secret used as a host name arrives lowercased.  The
 * line is scrubbed of the agent's secrets (the scrubber ignores ASCII
 * case) before it is written.  When the agent's store cannot be opened
 * here (sealed with a passphrase, or a key file named in an environment
 * the proxy does not have), what the sandbox spelled is withheld: the
 * log must not be the way around the scrubber.
 */
static void
log_scrub(json_t *o)
{
	static const char *const ours[] = { "agent", "run", "time",
		"verdict", "reason", "answer", "hint", "id" };
	struct sbx_error	 e;
	struct sbx_scrub	*sc;
	const char		*agent, *k;
	json_t			*v;
	void			*tmp;
	size_t			 i;

	agent = json_string_value(json_object_get(o, "agent"));
	if (agent == NULL || *agent == '\0')
		return;
	memset(&e, 0, sizeof(e));
	if (sbx_secret_scrubber_cached(P.rootfd, agent, &sc, &e) == 0) {
		sbx_scrub_json(sc, o);
		return;
	}
	json_object_foreach_safe (o, tmp, k, v) {
		for (i = 0; i < sizeof(ours) / sizeof(*ours); i++)
			if (strcmp(k, ours[i]) == 0)
				break;
		if (i == sizeof(ours) / sizeof(*ours) && json_is_string(v))
			json_object_set_new(o, k,
			    json_string("[REDACTED:unscrubbed]"));
	}
}

static void
log_json(json_t *o)
{
	char		 t[SBX_TIME_ISO_MAX], *s;
	size_t		 n;
	ssize_t		 w;

	log_scrub(o);
	sbx_time_utc_iso_ms(t);
	json_object_set_new(o, "time", json_string(t));
	s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);
	json_decref(o);
	if (s == NULL)
		return;
	n = strlen(s);
	s[n] = '\n';
	if (P.logfd >= 0 && P.logsize + n + 1 > P.cfg->log_max_bytes) {
		/* Rotate: one previous generation is kept. */
		(void)renameat(P.runfd, "proxy.log", P.runfd, "proxy.log.1");
		log_open();
	}
	if (P.logfd >= 0) {
		w = write(P.logfd, s, n + 1);
		if (w == (ssize_t)(n + 1))
			P.logsize += n + 1;
		else if (w > 0)
			/* Cut short (the disk is full): the part written is
			 * taken back, or the next line would be glued to
			 * it. */
			(void)sbx_fs_repair_tail(P.logfd);
	}
	free(s);
}

/* One line per decision. */
static void
conn_log(struct conn *c, const char *verdict, const char *reason)
{
	json_t	*o;

	if (c->logged)
		return;
	c->logged = 1;
	o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:i}",
	    "agent", c->s != NULL ? c->s->ss.agent : "",
	    "run", c->s != NULL ? c->s->run : "",
	    "host", c->host,
	    "method", c->method,
	    "port", (int)c->port,
	    "bytes_in", (json_int_t)c->bytes_in,
	    "bytes_out", (json_int_t)c->bytes_out,
	    "duration_ms", (json_int_t)(sbx_now_ms() - c->t_start),
	    "status", c->status);
	if (o == NULL)
		return;
	json_object_set_new(o, "verdict", json_string(verdict));
	if (reason != NULL)
		json_object_set_new(o, "reason", json_string(reason));
	if (c->secret[0] != '\0')
		json_object_set_new(o, "secret", json_string(c->secret));
	/* An address refused for its class: which one, and what would
	 * allow it, so that the log says how to fix it. */
	if (reason != NULL && c->refused[0] != '\0') {
		json_object_set_new(o, "address", json_string(c->refused));
		if (sbx_np_addr_hint(reason) != NULL)
			json_object_set_new(o, "hint",
			    json_string(sbx_np_addr_hint(reason)));
	}
	log_json(o);
}

/* ---- answers ---------------------------------------------------------- */

static const char *
status_text(int status)
{
	switch (status) {
	case 200: return "Connection established";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 413: return "Payload Too Large";
	case 414: return "URI Too Long";
	case 431: return "Request Header Fields Too Large";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	default:  return "Error";
	}
}

/* Shut our side, then read and drop what the client still sends for a
 * moment: closing with unread data would reset the connection and the
 * client might never see the answer. */
static void
conn_linger(struct conn *c)
{
	(void)shutdown(c->cfd, SHUT_WR);
	if (c->ureg) {
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->ufd, NULL);
		c->ureg = 0;
	}
	if (c->ufd >= 0) {
		close(c->ufd);
		c->ufd = -1;
	}
	c->state = C_LINGER;
	c->t_deadline = sbx_now_ms() + LINGER_MS;
	conn_update(c);
}

/*
 * A SOCKS5 client gets the framing it speaks: before its request, a
 * refused method or credentials (05 FF, 01 01); after it, a reply whose
 * code says what the HTTP status would (the reason is in the log and the
 * run's violations).
 */
static void
socks_refuse(struct conn *c, int status, const char *reason)
{
	unsigned char	 r[10];
	int		 code;

	if (c->sstage == 0) {
		(void)!send(c->cfd, "\x05\xff", 2, MSG_NOSIGNAL | MSG_DONTWAIT);
		return;
	}
	if (c->sstage == 1) {
		(void)!send(c->cfd, "\x01\x01", 2, MSG_NOSIGNAL | MSG_DONTWAIT);
		return;
	}
	if (strcmp(reason, "socks_bad_command") == 0)
		code = SBX_SOCKS5_CMD;
	else if (strcmp(reason, "socks_bad_address_type") == 0)
		code = SBX_SOCKS5_ATYP;
	else if (status == 403)
		code = SBX_SOCKS5_DENIED;
	else if (status == 502 || status == 504)
		code = SBX_SOCKS5_UNREACH;
	else
		code = SBX_SOCKS5_FAIL;
	sbx_socks5_reply(r, code);
	(void)!send(c->cfd, r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/*
 * Refuse: answer status with X-Proxy-Error: reason, log the decision and
 * record it as a violation of the run when it is a policy denial.
 */
static void
conn_refuse(struct conn *c, int status, const char *reason)
{
	char		 head[768], body[600];
	int		 hn, bn;
	const char	*verdict, *hint;
	json_t		*viol;

	c->status = status;
	hint = c->refused[0] != '\0' ? sbx_np_addr_hint(reason) : NULL;
	if (c->socks) {
		socks_refuse(c, status, reason);
		hn = 0;
		goto judged;
	}
	bn = snprintf(body, sizeof(body), "sbx-proxy: %s%s%u: %s%s%s%s%s\n",
	    c->host[0] ? c->host : "-", ":", c->port, reason,
	    c->refused[0] != '\0' ? " " : "", c->refused,
	    hint != NULL ? "; " : "", hint != NULL ? hint : "");
	if (bn < 0 || (size_t)bn >= sizeof(body))
		bn = (int)strlen(body);
	hn = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "X-Proxy-Error: %s\r\n%s"
	    "Content-Type: text/plain\r\nConnection: close\r\n"
	    "Content-Length: %d\r\n\r\n", status, status_text(status), reason,
	    status == 407 ? "Proxy-Authenticate: Basic realm=\"sbx\"\r\n" : "",
	    bn);
	if (hn > 0 && (size_t)hn < sizeof(head)) {
		(void)!send(c->cfd, head, (size_t)hn, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
		(void)!send(c->cfd, body, (size_t)bn, MSG_NOSIGNAL |
		    MSG_DONTWAIT);
	}
judged:
	verdict = (status == 403 || status == 400 || status == 405 ||
	    status == 407 || status == 414 || status == 431 ||
	    status == 413) ? "deny" : "error";
	conn_log(c, verdict, reason);
	/* Every refusal of the policy or of the parser is a violation of
	 * the run; upstream failures and limits are not. */
	if (c->s != NULL && strcmp(verdict, "deny") == 0) {
		c->s->denied++;
		if (json_array_size(c->s->violations) < VIOLATIONS_MAX &&
		    (viol = json_pack("{s:s,s:s,s:i,s:s}", "type", "network",
		    "host", c->host[0] ? c->host : "-", "port", (int)c->port,
		    "reason", reason)) != NULL) {
			if (c->refused[0] != '\0')
				json_object_set_new(viol, "address",
				    json_string(c->refused));
			if (hint != NULL)
				json_object_set_new(viol, "hint",
				    json_string(hint));
			if (c->secret[0] != '\0')
				json_object_set_new(viol, "secret",
				    json_string(c->secret));
			json_array_append_new(c->s->violations, viol);
		}
	}
	conn_linger(c);
}

/* ---- connections ------------------------------------------------------ */

static struct agentcount *
agent_count(const char *agent)
{
	struct agentcount	*a;

	for (a = P.counts; a != NULL; a = a->next)
		if (strcmp(a->name, agent) == 0)
			return a;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	snprintf(a->name, sizeof(a->name), "%s", agent);
	a->next = P.counts;
	P.counts = a;
	return a;
}

static void
ep_set(int fd, struct key *k, unsigned *have, unsigned want, int *reg)
{
	struct epoll_event	 ev;

	if (reg != NULL && !*reg) {
		if (want == 0)
			return;
		ev.events = want;
		ev.data.ptr = k;
		if (epoll_ctl(P.ep, EPOLL_CTL_ADD, fd, &ev) == 0) {
			*reg = 1;
			*have = want;
		}
		return;
	}
	if (*have == want)
		return;
	ev.events = want;
	ev.data.ptr = k;
	if (epoll_ctl(P.ep, EPOLL_CTL_MOD, fd, &ev) == 0)
		*have = want;
}

/* The interest of both sockets, from the state. */
static void
conn_update(struct conn *c)
{
	unsigned	 wc = 0, wu = 0;

	switch (c->state) {
	case C_HEAD:
	case C_SOCKS:
	case C_LINGER:
		wc = EPOLLIN | EPOLLRDHUP;
		break;
	case C_INJECT:
		/* Not in the set at all (the worker reads and writes). */
		return;
	case C_RESOLVE:
	case C_ASK:
		/* Nothing asked of the client meanwhile: a half-close
		 * (the request sent, then shutdown) is legitimate, and
		 * EPOLLHUP/EPOLLERR of a reset arrive without asking. */
		break;
	case C_CONNECT:
		wu = EPOLLOUT;
		break;
	case C_UPHEAD:
		wu = EPOLLIN;
		break;
	case C_RELAY:
		/* Read a side only while its pipe has room and the
		 * direction is still open; write a side while its pipe
		 * holds bytes. */
		if (c->hello ? c->len < SBX_TLS_RECORD_MAX : !c->eof_c &&
		    c->q_cu < PIPE_SIZE && (c->connect || c->body_left > 0))
			wc |= EPOLLIN;
		if (c->q_uc > 0 || c->rhead == 2)
			wc |= EPOLLOUT;
		if (!c->hello && !c->eof_u && c->q_uc < PIPE_SIZE &&
		    c->rhead != 2)
			wu |= EPOLLIN;
		if (!c->hello && (c->q_cu > 0 || c->sendoff < c->len))
			wu |= EPOLLOUT;
		break;
	}
	/* A hung-up socket reports EPOLLHUP whatever it is asked: while
	 * nothing is wanted of it, it leaves the set (level-triggered, it
	 * would otherwise spin the loop). */
	if (c->c_hup && wc == 0 && c->creg) {
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->cfd, NULL);
		c->creg = 0;
		c->evc = 0;
	} else
		ep_set(c->cfd, &c->kc, &c->evc, wc, &c->creg);
	if (c->ufd >= 0 && c->u_hup && wu == 0 && c->ureg) {
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->ufd, NULL);
		c->ureg = 0;
		c->evu = 0;
	} else if (c->ufd >= 0)
		ep_set(c->ufd, &c->ku, &c->evu, wu, &c->ureg);
}

static void
conn_free(struct conn *c)
{
	free(c->buf);
	free(c->rb);
	free(c);
}

/*
 * The connection no longer wants its lookup.  Still queued: taken out,
 * never sent.  With the resolver (c-ares cannot cancel one query): the
 * answer will be dropped, and until it comes the lookup counts against
 * the agent's connection cap, so that lookups abandoned at once cannot
 * pile up beyond what live connections could.
 */
static void
conn_unresolve(struct conn *c)
{
	if (c->job == NULL)
		return;
	sbx_resolver_cancel(c->job);
	c->job = NULL;
}

static void
conn_close(struct conn *c)
{
	struct agentcount	*a;

	conn_unresolve(c);
	if (c->state == C_ASK) {
		/* The client gave up before anyone answered. */
		ask_publish(sbx_proxyask_json(&c->ask, "gone"));
		sbx_proxyask_drop(&c->ask);
		c->state = C_HEAD;
	}
	if (c->state == C_INJECT) {
		/* Its worker is told to stop (the descriptors stay open
		 * until it says it is done) and logs the connection. */
		c->logged = 1;
		if (c->w != NULL) {
			(void)shutdown(c->w->cfd, SHUT_RDWR);
			(void)shutdown(c->w->ufd, SHUT_RDWR);
			c->w->c = NULL;
			c->w = NULL;
		}
	}
	if (c->state == C_RELAY)
		conn_log(c, "allow", NULL);
	else if (!c->logged)
		conn_log(c, "error", "closed");
	if (c->cfd >= 0) {
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->cfd, NULL);
		close(c->cfd);
	}
	if (c->ufd >= 0) {
		if (c->ureg)
			epoll_ctl(P.ep, EPOLL_CTL_DEL, c->ufd, NULL);
		close(c->ufd);
	}
	if (c->p_cu[0] >= 0) {
		close(c->p_cu[0]);
		close(c->p_cu[1]);
	}
	if (c->p_uc[0] >= 0) {
		close(c->p_uc[0]);
		close(c->p_uc[1]);
	}
	c->cfd = c->ufd = c->p_cu[0] = c->p_uc[0] = -1;
	SBX_DLIST_UNLINK(P.conns, c);
	P.nconns--;
	if (c->s != NULL) {
		c->s->nconns--;
		if ((a = agent_count(c->s->ss.agent)) != NULL && a->n > 0)
			a->n--;
	}
	c->s = NULL;
	if (P.nconns == 0)
		P.t_idle = sbx_now_ms();
	c->closed = 1;
	c->gnext = P.grave;
	P.grave = c;
}

static void
conn_new(struct session *s, int fd, int socks)
{
	struct conn		*c;
	struct agentcount	*a;
	int			 one = 1;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		return;
	}
	c->kc.type = K_CLIENT;
	c->kc.p = c;
	c->ku.type = K_UPSTREAM;
	c->ku.p = c;
	c->cfd = fd;
	c->ufd = -1;
	c->p_cu[0] = c->p_cu[1] = c->p_uc[0] = c->p_uc[1] = -1;
	c->t_start = c->t_last = sbx_now_ms();
	c->t_deadline = c->t_start + P.cfg->header_timeout_ms;
	c->s = s;
	c->state = socks ? C_SOCKS : C_HEAD;
	c->socks = socks;
	c->body_left = 0;
	snprintf(c->method, sizeof(c->method), socks ? "SOCKS5" : "-");
	c->next = P.conns;
	if (P.conns != NULL)
		P.conns->prev = c;
	P.conns = c;
	P.nconns++;
	s->nconns++;
	a = agent_count(s->ss.agent);
	if (a != NULL)
		a->n++;
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	conn_update(c);
	/* The limits are checked once the connection exists, so that the
	 * refusal is an answer the client can read, not a reset. */
	if (P.nconns + sbx_resolver_orphans() > P.cfg->max_conns ||
	    (a != NULL && a->n + a->orphans > P.cfg->max_conns_agent))
		conn_refuse(c, 503, "too_many_connections");
}

static int
buf_reserve(struct conn *c, size_t want)
{
	char	*p;
	size_t	 cap;

	if (c->cap >= want)
		return 0;
	cap = c->cap ? c->cap : 1024;
	while (cap < want)
		cap *= 2;
	if ((p = realloc(c->buf, cap)) == NULL)
		return -1;
	c->buf = p;
	c->cap = cap;
	return 0;
}

static void conn_resolved(struct conn *, const struct sockaddr_storage *,
    const socklen_t *, int);

/* The resolver's answer to a connection that still waits for it. */
static void
conn_answer(void *arg, const struct sockaddr_storage *addrs,
    const socklen_t *lens, int n)
{
	struct conn	*c = arg;

	c->job = NULL;
	if (c->state == C_RESOLVE)
		conn_resolved(c, addrs, lens, n);
}

/* Queue the name for the resolver. */
static void
conn_resolve(struct conn *c)
{
	const struct sbx_np_override	*ov;
	struct agentcount		*a;
	struct sbx_resolver_job		*j;

	c->state = C_RESOLVE;
	c->t_deadline = sbx_now_ms() + P.cfg->connect_timeout_ms;
	conn_update(c);
	if (c->via_up && c->s->up.literal) {
		conn_resolved(c, &c->s->up.addr, &c->s->up.addrlen, 1);
		return;
	}
	/* Through a parent, the name looked up is the parent's own (the
	 * sandbox's names are the parent's to resolve); test overrides
	 * are for the sandbox's names only. */
	if (!c->via_up &&
	    (ov = sbx_np_override(&c->s->pol, c->host)) != NULL) {
		/* A test override: no resolver involved, but the same
		 * path as an answer (and so the same address checks). */
		conn_resolved(c, &ov->addr, &ov->addrlen, 1);
		return;
	}
	if ((a = agent_count(c->s->ss.agent)) == NULL) {
		conn_refuse(c, 502, "resolve_failed");
		return;
	}
	if ((j = sbx_resolver_lookup(c->via_up ? c->s->up.host : c->host,
	    &a->q, &a->orphans, conn_answer, c)) == NULL) {
		/* The agent (or everyone) has enough lookups waiting. */
		if (errno == EAGAIN)
			conn_refuse(c, 503, "too_many_lookups");
		else
			conn_refuse(c, 502, "resolve_failed");
		return;
	}
	c->job = j;
	sbx_resolver_pump();
}

/* ---- asking about unknown names ---------------------------------------- */

/* Send a line to every follower (sbx proxy asks --follow). */
static void
ask_publish(json_t *ev)
{
	struct session	*s;
	char		*line;
	size_t		 n;

	line = json_dumps(ev, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(ev);
	if (line == NULL)
		return;
	n = strlen(line);
	line[n] = '\n';
	for (s = session_next(NULL); s != NULL; s = session_next(s))
		if (s->follow && !s->closed)
			(void)!send(s->ss.ctl, line, n + 1, MSG_NOSIGNAL |
			    MSG_DONTWAIT);
	free(line);
}

/* Is a refusal of this reason one to ask about instead?  Only a name
 * that no rule allows or denies, and only when the session asks. */
static int
conn_askable(const struct conn *c, const char *why)
{
	return c->s->ask && strcmp(why, SBX_NP_NOT_ALLOWED) == 0;
}

/*
 * Hold the connection and publish a pending decision.  It keeps counting
 * against its agent's connection cap; the agent's pending asks are capped
 * too (a flood is refused, 503 too_many_asks), and an unanswered ask is a
 * denial after ask_ms.
 */
static void
conn_ask(struct conn *c)
{
	if (sbx_proxyask_hold(&c->ask, c->s->ss.agent, c->s->run, c->host,
	    c->port, c->t_start, c) == -1) {
		conn_refuse(c, 503, "too_many_asks");
		return;
	}
	c->state = C_ASK;
	c->t_deadline = sbx_now_ms() + c->s->ask_ms;
	conn_update(c);
	{
		json_t	*l = sbx_proxyask_json(&c->ask, NULL);

		json_object_set_new(l, "verdict", json_string("ask"));
		json_object_set_new(l, "method", json_string(c->method));
		json_object_del(l, "age_ms");
		log_json(l);
	}
	ask_publish(sbx_proxyask_json(&c->ask, "ask"));
}

/* The answer (allow-once, allow-always, deny, deny-always, or "timeout"
 * when nobody answered): logged, published, acted on. */
static void
ask_release(struct conn *c, const char *answer)
{
	json_t	*l;

	c->state = C_HEAD;
	l = sbx_proxyask_json(&c->ask, NULL);
	json_object_set_new(l, "verdict", json_string("answer"));
	json_object_set_new(l, "answer", json_string(answer));
	json_object_del(l, "age_ms");
	log_json(l);
	l = sbx_proxyask_json(&c->ask, "answered");
	sbx_proxyask_drop(&c->ask);
	json_object_set_new(l, "answer", json_string(answer));
	ask_publish(l);
	if (strncmp(answer, "allow", 5) == 0) {
		conn_resolve(c);
		return;
	}
	conn_refuse(c, 403, strcmp(answer, "timeout") == 0 ? "ask_timeout" :
	    "ask_denied");
}

/*
 * allow-always, deny-always: the entry goes into the agent's own config
 * file through the config code (the same checks as `sbx config add`),
 * then into the policy of every session of the agent, so that the next
 * request is decided without asking.  A port outside allowed_ports is
 * kept in the entry (NAME:PORT).
 */
static int
ask_remember(const struct conn *c, int deny, struct sbx_error *e)
{
	struct session	*s;
	json_t		*doc = NULL;
	char		 entry[SBX_NP_HOST_MAX + 8], rel[128];
	int		 rc = -1;

	if (deny || !sbx_np_port_listed(&c->s->pol, c->port))
		snprintf(entry, sizeof(entry), "%s:%u", c->host, c->port);
	else
		snprintf(entry, sizeof(entry), "%s", c->host);
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, c->s->ss.agent);
	if (sbx_cfg_load(P.rootfd, c->s->ss.agent, &doc, e) == -1 ||
	    sbx_cfg_add(doc, deny ? "denied_domains" : "allowed_domains",
	    json_string(entry), e) == -1 ||
	    (P.cfg->validate == NULL ? sbx_error_set(e, SBX_K_UNAVAILABLE,
	    "config", "no_checks", "%s: no settings checks: not written",
	    rel) : P.cfg->validate(doc, 1, rel, e)) == -1 ||
	    sbx_cfg_store(P.rootfd, c->s->ss.agent, doc, e) == -1)
		goto out;
	for (s = session_next(NULL); s != NULL; s = session_next(s))
		if (!s->closed && s->ss.chan != -1 &&
		    strcmp(s->ss.agent, c->s->ss.agent) == 0 && (deny ?
		    sbx_np_deny(&s->pol, entry, e) : sbx_np_allow(&s->pol,
		    entry, e)) == -1)
			goto out;
	rc = 0;
out:
	json_decref(doc);
	return rc;
}

/* `answer` on the control socket: the ask of that id in this proxy (so
 * of this state root), else not_found. */
static json_t *
ask_answer(json_t *req, struct sbx_error *e)
{
	struct sbx_proxyask	*a, *o, *older;
	struct conn		*c;
	const char		*ans;
	char			 agent[SBX_AGENT_MAX + 1];
	char			 host[SBX_NP_HOST_MAX + 1];
	unsigned		 port;
	int			 always, deny, n = 0;

	if ((a = sbx_proxyask_answer(req, &ans, &always, &deny, e)) == NULL)
		return NULL;
	c = a->owner;
	if (always && ask_remember(c, deny, e) == -1)
		return NULL;
	snprintf(agent, sizeof(agent), "%s", c->s->ss.agent);
	snprintf(host, sizeof(host), "%s", c->host);
	port = c->port;
	if (!always) {
		ask_release(c, ans);
		return json_pack("{s:b,s:i}", "ok", 1, "released", 1);
	}
	/* Remembered: every pending ask it decides gets the answer. */
	for (o = sbx_proxyask_newest(); o != NULL; o = older) {
		older = o->prev;
		if (strcmp(o->agent, agent) == 0 && strcmp(o->host, host) ==
		    0 && o->port == port) {
			ask_release(o->owner, ans);
			n++;
		}
	}
	return json_pack("{s:b,s:i}", "ok", 1, "released", n);
}

/*
 * A placeholder of the session's credentials in what the loop reads of a
 * request (a plain HTTP head, a CONNECT, a SOCKS5 name): refused before
 * the name is judged or looked up, so that not even a DNS query carries
 * it.  A value is only ever put in a request inside a tunnel to its own
 * host (plain HTTP would show it to the network).  1 when refused.
 */
static int
conn_cred_check(struct conn *c, const char *buf, size_t len)
{
	int	 w;

	if (c->s->ncreds == 0 ||
	    (w = sbx_cred_scan(c->s->creds, c->s->ncreds, buf, len)) < 0)
		return 0;
	snprintf(c->secret, sizeof(c->secret), "%s", (size_t)w <
	    c->s->ncreds ? c->s->creds[w].rule.secret : "unknown");
	conn_refuse(c, 403, "credential_host_mismatch");
	return 1;
}

/*
 * The name and port of a request (HTTP or SOCKS5), in the order of the
 * checks (the host's syntax and IP literals, then the policy): 0 with
 * *why NULL (allowed) or the reason to ask about, or -1 when refused.
 */
static int
conn_judge(struct conn *c, const char *raw, size_t n, const char **why)
{
	char	 host[SBX_NP_HOST_MAX + 1];

	if ((*why = sbx_np_host(raw, n, host)) != NULL) {
		conn_refuse(c, strcmp(*why, SBX_NP_IP_LITERAL) == 0 ? 403 :
		    400, *why);
		return -1;
	}
	snprintf(c->host, sizeof(c->host), "%s", host);
	if ((*why = sbx_np_decide(&c->s->pol, c->host, c->port)) != NULL &&
	    !conn_askable(c, *why)) {
		conn_refuse(c, 403, *why);
		return -1;
	}
	return 0;
}

/* Judged: ask (why set), or resolve and dial, through the parent if the
 * agent has one. */
static void
conn_go(struct conn *c, const char *why)
{
	c->sendoff = 0;
	c->via_up = c->s->have_up;
	if (why != NULL)
		conn_ask(c);
	else
		conn_resolve(c);
}

static void
conn_parse(struct conn *c)
{
	static struct sbx_http_req	 req;	/* one thread: scratch */
	static char			 up[SBX_HTTP_HEAD_MAX + 64 +
					    SBX_UPSTREAM_AUTH_MAX + 600];
	const char			*reason, *why;
	int				 r, status;
	size_t				 n, hl;

	r = sbx_http_parse(c->buf, c->len, &req, &status, &reason);
	if (r == 0)
		return;
	if (r == -1) {
		conn_refuse(c, status, reason);
		return;
	}
	c->connect = req.connect;
	snprintf(c->method, sizeof(c->method), "%s", req.method);
	c->port = req.port;
	/* What is logged before the host is known to be valid: a
	 * printable prefix. */
	n = req.hostlen < sizeof(c->host) - 1 ? req.hostlen :
	    sizeof(c->host) - 1;
	memcpy(c->host, req.host, n);
	c->host[n] = '\0';
	for (n = 0; c->host[n] != '\0'; n++)
		if ((unsigned char)c->host[n] < 0x21 ||
		    (unsigned char)c->host[n] > 0x7e)
			c->host[n] = '?';

	/* Identity: the session fixes the agent; the token must be that
	 * agent's.  A token of another agent is as good as none. */
	if (req.auth == SBX_AUTH_NONE) {
		conn_refuse(c, 407, "missing_token");
		return;
	}
	if (req.auth == SBX_AUTH_INVALID ||
	    strlen(req.token) != SBX_TOKEN_LEN ||
	    sodium_memcmp(req.token, c->s->ss.token, SBX_TOKEN_LEN) != 0 ||
	    (req.auth == SBX_AUTH_BASIC && strcmp(req.user, c->s->ss.agent) !=
	    0)) {
		sodium_memzero(req.token, sizeof(req.token));
		conn_refuse(c, 407, "bad_token");
		return;
	}
	sodium_memzero(req.token, sizeof(req.token));

	if (conn_cred_check(c, c->buf, req.head_len))
		return;
	if (conn_judge(c, req.host, req.hostlen, &why) == -1)
		return;
	if (!c->connect && req.content_length > 0 &&
	    (unsigned long long)req.content_length >
	    P.cfg->max_request_bytes) {
		conn_refuse(c, 413, "request_too_large");
		return;
	}
	/* Keep what goes up: for plain HTTP the rewritten head and the
	 * body bytes already received; for CONNECT whatever the client
	 * sent after the head (the start of its first TLS record). */
	if (c->connect) {
		memmove(c->buf, c->buf + req.head_len, c->len - req.head_len);
		c->len -= req.head_len;
		c->body_left = 0;
	} else {
		size_t	 extra = c->len - req.head_len;
		long long cl = req.content_length > 0 ? req.content_length : 0;
		char	*nb;

		/* Exactly one request per connection: bytes beyond its
		 * body are dropped, never forwarded. */
		if ((long long)extra > cl)
			extra = (size_t)cl;
		if ((nb = malloc(sizeof(up) + extra + 1)) == NULL) {
			conn_refuse(c, 502, "no_memory");
			return;
		}
		hl = req.rewritten_len;
		memcpy(nb, req.rewritten, hl);
		/* To a parent proxy: absolute-form, with its credentials
		 * (which never came from, nor go back to, the sandbox). */
		if (c->s->have_up && (n = (size_t)sbx_upstream_absolute(
		    &c->s->up, req.rewritten, req.rewritten_len, c->host,
		    c->port, up, sizeof(up))) != (size_t)-1) {
			memcpy(nb, up, n);
			hl = n;
			sodium_memzero(up, sizeof(up));
		}
		memcpy(nb + hl, c->buf + req.head_len, extra);
		free(c->buf);
		c->buf = nb;
		c->len = hl + extra;
		c->cap = sizeof(up) + extra + 1;
		c->body_left = cl - (long long)extra;
		c->bytes_in += extra;
	}
	conn_go(c, why);
}

/*
 * A SOCKS5 connection: greeting, then the agent's name and token
 * (RFC 1929), then a CONNECT to a name, each answered as it completes;
 * then the same checks, in the same order, as a CONNECT of HTTP.
 */
static void
conn_socks(struct conn *c)
{
	char		 user[256], pass[256], raw[256];
	const char	*why;
	size_t		 used, n;
	int		 r, code;
	unsigned	 port;

	for (;;) {
		used = 0;
		if (c->sstage == 0) {
			r = sbx_socks5_greeting((unsigned char *)c->buf, c->len,
			    &used, &why);
			if (r == 1)
				(void)!send(c->cfd, "\x05\x02", 2,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		} else if (c->sstage == 1) {
			r = sbx_socks5_auth((unsigned char *)c->buf, c->len,
			    &used, user, pass, &why);
			/* Identity, as for HTTP: the session fixes the
			 * agent, the password must be its token. */
			if (r == 1 && (strcmp(user, c->s->ss.agent) != 0 ||
			    strlen(pass) != SBX_TOKEN_LEN ||
			    sodium_memcmp(pass, c->s->ss.token,
			    SBX_TOKEN_LEN) != 0)) {
				sodium_memzero(pass, sizeof(pass));
				conn_refuse(c, 407, "bad_token");
				return;
			}
			sodium_memzero(pass, sizeof(pass));
			if (r == 1)
				(void)!send(c->cfd, "\x01\x00", 2,
				    MSG_NOSIGNAL | MSG_DONTWAIT);
		} else {
			r = sbx_socks5_request((unsigned char *)c->buf, c->len,
			    &used, raw, &n, &port, &why, &code);
		}
		if (r == 0) {
			if (c->len >= SBX_SOCKS5_AUTH_MAX)
				conn_refuse(c, 400, "socks_too_long");
			return;
		}
		if (r == -1) {
			if (c->sstage == 2 && strcmp(why, "ip_literal") == 0)
				conn_refuse(c, 403, why);
			else
				conn_refuse(c, c->sstage == 1 ? 407 : 400, why);
			return;
		}
		memmove(c->buf, c->buf + used, c->len - used);
		c->len -= used;
		if (c->sstage++ == 2)
			break;
	}
	c->connect = 1;
	c->port = port;
	snprintf(c->host, sizeof(c->host), "%.200s", raw);
	for (used = 0; c->host[used] != '\0'; used++)
		if ((unsigned char)c->host[used] < 0x21 ||
		    (unsigned char)c->host[used] > 0x7e)
			c->host[used] = '?';
	c->sstage = 2;
	if (conn_cred_check(c, raw, n))
		return;
	if (conn_judge(c, raw, n, &why) == -1)
		return;
	/* What the client sent after its request (the start of a TLS
	 * record) stays in buf, to be judged as a tunnel's first bytes. */
	c->body_left = 0;
	conn_go(c, why);
}

/*
 * Read what the client sent next into buf, at most room bytes: 1 when
 * some came; 0 when none did yet, or when the client is gone (c is then
 * closed, and logged as client_closed unless quiet: a connection closed
 * before it asked anything decided nothing, and is not logged).
 */
static int
conn_recv(struct conn *c, size_t room, int quiet)
{
	ssize_t	 r;

	r = recv(c->cfd, c->buf + c->len, room, 0);
	if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
		if (quiet)
			c->logged = 1;
		else
			conn_log(c, "error", "client_closed");
		conn_close(c);
		return 0;
	}
	if (r < 0)
		return 0;
	c->len += (size_t)r;
	c->t_last = sbx_now_ms();
	return 1;
}

static void
conn_read_socks(struct conn *c)
{
	if (buf_reserve(c, SBX_TLS_RECORD_MAX) == -1) {
		conn_close(c);
		return;
	}
	if (c->len >= SBX_TLS_RECORD_MAX)
		return;
	if (conn_recv(c, SBX_TLS_RECORD_MAX - c->len,
	    c->len == 0 && c->sstage == 0))
		conn_socks(c);
}

static void
conn_read_head(struct conn *c)
{
	size_t	 room;

	/* One byte over the cap is enough for the parser to answer 431. */
	if (buf_reserve(c, c->len + 4096) == -1) {
		conn_close(c);
		return;
	}
	room = c->cap - c->len;
	if (c->len + room > SBX_HTTP_HEAD_MAX + 1)
		room = SBX_HTTP_HEAD_MAX + 1 - c->len;
	if (conn_recv(c, room, c->len == 0))
		conn_parse(c);
}

static int
pipes_open(struct conn *c)
{
	if (pipe2(c->p_cu, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	if (pipe2(c->p_uc, O_NONBLOCK | O_CLOEXEC) == -1) {
		close(c->p_cu[0]);
		close(c->p_cu[1]);
		c->p_cu[0] = c->p_cu[1] = -1;
		return -1;
	}
	(void)fcntl(c->p_cu[1], F_SETPIPE_SZ, PIPE_SIZE);
	(void)fcntl(c->p_uc[1], F_SETPIPE_SZ, PIPE_SIZE);
	return 0;
}

static void
relay_start(struct conn *c)
{
	if (pipes_open(c) == -1) {
		conn_log(c, "error", "no_pipes");
		conn_close(c);
		return;
	}
	c->state = C_RELAY;
	c->t_last = sbx_now_ms();
	c->t_deadline = c->t_start + P.cfg->max_duration_ms;
	if (!c->connect) {
		if ((c->rb = malloc(RESP_HEAD_MAX)) == NULL) {
			conn_log(c, "error", "no_memory");
			conn_close(c);
			return;
		}
		c->rhead = 1;
	}
	conn_update(c);
}

/* Is the port of this connection one whose tunnels are not judged? */
static int
conn_opaque(const struct conn *c)
{
	size_t	 i;

	/* SSH: git over SSH works out of the box for a name allowed on
	 * port 22 (the name, port and address checks still apply). */
	if (c->port == 22)
		return 1;
	for (i = 0; i < P.cfg->nopaque; i++)
		if (P.cfg->opaque_ports[i] == c->port)
			return 1;
	for (i = 0; c->s != NULL && i < c->s->nopaque; i++)
		if (c->s->opaque[i] == c->port)
			return 1;
	return 0;
}

/* A tunnel refused on its first bytes: a denial of the run, then closed
 * without an answer (the client speaks TLS or nothing we know). */
static void
tunnel_deny(struct conn *c, const char *reason)
{
	conn_log(c, "deny", reason);
	if (c->s != NULL) {
		c->s->denied++;
		if (json_array_size(c->s->violations) < VIOLATIONS_MAX)
			json_array_append_new(c->s->violations, json_pack(
			    "{s:s,s:s,s:i,s:s}", "type", "network", "host",
			    c->host, "port", (int)c->port, "reason", reason));
	}
	conn_close(c);
}

/*
 * The first request in a tunnel, in plain HTTP.  The upstream routes it on
 * its Host header, so that must name the authority the tunnel was checked
 * for: otherwise CONNECT allowed:80 would reach every virtual host on the
 * same address.  One request, as for absolute-form: its head rewritten
 * (Connection: close, no Proxy-*), exactly Content-Length bytes of body,
 * nothing after it, so that no second request with another Host follows
 * on the same connection.
 */
static void
conn_hello_http(struct conn *c)
{
	static struct sbx_http_req	 req;	/* one thread: scratch */
	const char			*reason;
	int				 r, status;
	size_t				 extra;
	long long			 cl;
	char				*nb;

	r = sbx_http_parse_tunnel(c->buf, c->len, c->host, c->port, &req,
	    &status, &reason);
	if (r == 0)
		return;
	if (r == -1) {
		if (strcmp(reason, "tunnel_not_tls_or_http") == 0)
			tunnel_deny(c, reason);
		else
			/* It speaks HTTP: it can read why. */
			conn_refuse(c, status, reason);
		return;
	}
	cl = req.content_length > 0 ? req.content_length : 0;
	if ((unsigned long long)cl > P.cfg->max_request_bytes) {
		conn_refuse(c, 413, "request_too_large");
		return;
	}
	extra = c->len - req.head_len;
	if ((long long)extra > cl)
		extra = (size_t)cl;
	if ((nb = malloc(req.rewritten_len + extra + 1)) == NULL) {
		conn_log(c, "error", "no_memory");
		conn_close(c);
		return;
	}
	memcpy(nb, req.rewritten, req.rewritten_len);
	memcpy(nb + req.rewritten_len, c->buf + req.head_len, extra);
	free(c->buf);
	c->buf = nb;
	c->len = req.rewritten_len + extra;
	c->cap = c->len + 1;
	c->body_left = cl - (long long)extra;
	/* From here on it is relayed as an absolute-form request is: the
	 * body, then the response until the upstream closes. */
	c->connect = 0;
	c->hello = 0;
	c->sendoff = 0;
	conn_update(c);
}

/*
 * The tunnel is up: judge the client's first bytes before a byte of them
 * goes upstream and before a byte of the upstream comes back.  A TLS
 * ClientHello must name the CONNECT host (SNI); on any other port than
 * 443, a plain HTTP request must name it in Host.  Anything else would be
 * a tunnel to whatever the address serves under other names, or a
 * protocol nobody checks: refused, unless an administrator listed the
 * port in opaque_ports.
 */
static void
conn_hello(struct conn *c)
{
	char		 sni[256], norm[SBX_NP_HOST_MAX + 1];
	const char	*reason;
	int		 r;

	if (c->len == 0)
		return;
	if ((unsigned char)c->buf[0] != 0x16) {
		/* On 443 only TLS: whoever asks for the HTTPS port and
		 * speaks something else is tunnelling. */
		if (c->port == 443) {
			tunnel_deny(c, "not_tls");
			return;
		}
		conn_hello_http(c);
		return;
	}
	r = sbx_tls_sni((const unsigned char *)c->buf, c->len, sni,
	    sizeof(sni), &reason);
	if (r == 0) {
		if (c->len >= SBX_TLS_RECORD_MAX)
			tunnel_deny(c, "malformed_tls");
		return;
	}
	if (r == -1) {
		tunnel_deny(c, reason);
		return;
	}
	if (sbx_np_host(sni, strlen(sni), norm) != NULL ||
	    strcmp(norm, c->host) != 0) {
		tunnel_deny(c, "sni_mismatch");
		return;
	}
	c->hello = 0;
	c->sendoff = 0;
	conn_update(c);
}

static void
conn_read_hello(struct conn *c)
{
	ssize_t	 r;

	if (buf_reserve(c, SBX_TLS_RECORD_MAX) == -1) {
		conn_close(c);
		return;
	}
	if (c->len >= SBX_TLS_RECORD_MAX)
		return;
	r = recv(c->cfd, c->buf + c->len, SBX_TLS_RECORD_MAX - c->len, 0);
	if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR)) {
		/* Gone before its first bytes could be judged: nothing
		 * of it went anywhere. */
		conn_close(c);
		return;
	}
	if (r < 0)
		return;
	c->len += (size_t)r;
	c->bytes_in += (size_t)r;
	conn_hello(c);
}

/* Start the next non-blocking connect, to an address that was checked. */
static void
conn_dial(struct conn *c)
{
	struct sockaddr_storage	*ss;
	int			 fd, one = 1;
	unsigned		 port = c->via_up ? c->s->up.port : c->port;

	while (c->ai < c->naddrs) {
		ss = &c->addrs[c->ai++];
		if (ss->ss_family == AF_INET)
			((struct sockaddr_in *)ss)->sin_port =
			    htons((uint16_t)port);
		else
			((struct sockaddr_in6 *)ss)->sin6_port =
			    htons((uint16_t)port);
		fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0);
		if (fd == -1)
			continue;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		if (connect(fd, (struct sockaddr *)ss, c->addrlens[c->ai - 1])
		    == -1 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		if (c->ufd >= 0) {
			if (c->ureg)
				epoll_ctl(P.ep, EPOLL_CTL_DEL, c->ufd, NULL);
			close(c->ufd);
		}
		c->ufd = fd;
		c->ureg = 0;
		c->evu = 0;
		c->u_hup = 0;
		c->state = C_CONNECT;
		c->t_deadline = sbx_now_ms() + P.cfg->connect_timeout_ms;
		conn_update(c);
		return;
	}
	conn_refuse(c, 502, "upstream_unreachable");
}

/* ---- credential workers ----------------------------------------------- */

/* The CA and the two contexts of an injected connection; -1 when it is
 * refused (502, the reason logged). */
static int
inject_prepare(struct conn *c)
{
	struct sbx_error	 e;
	void			*ctx;

	memset(&e, 0, sizeof(e));
	if (P.ca == NULL && (P.ca = sbx_tlsca_load(P.rootfd, &e)) == NULL) {
		snprintf(c->refused, sizeof(c->refused), "%.45s",
		    e.reason != NULL ? e.reason : "ca");
		conn_refuse(c, 502, "ca_unavailable");
		return -1;
	}
	if (P.cctx == NULL && (P.cctx = sbx_cred_client_ctx(&e)) == NULL) {
		conn_refuse(c, 502, "tls_unavailable");
		return -1;
	}
	/* A leaf only for a host a rule names: the check above. */
	if ((ctx = sbx_tlsca_server_ctx(P.ca, c->host, &e)) == NULL) {
		conn_refuse(c, 502, "ca_unavailable");
		return -1;
	}
	SSL_CTX_up_ref(ctx);
	c->w_ctx = ctx;
	return 0;
}

/* Hand the connection to a worker: its descriptors leave the loop's set
 * (the loop still closes them, after the worker's last event). */
static void
inject_start(struct conn *c)
{
	struct sbx_cred_conn	*k;
	struct injw		*w;

	k = calloc(1, sizeof(*k));
	w = calloc(1, sizeof(*w));
	if (k == NULL || w == NULL || (k->creds = sbx_cred_copy(c->s->creds,
	    c->s->ncreds)) == NULL || (w->used = json_array()) == NULL ||
	    (c->len > 0 && (k->pre = malloc(c->len)) == NULL)) {
		if (k != NULL)
			sbx_cred_free(k->creds, c->s->ncreds);
		if (w != NULL)
			json_decref(w->used);
		free(k);
		free(w);
		SSL_CTX_free(c->w_ctx);
		conn_log(c, "error", "no_memory");
		conn_close(c);
		return;
	}
	if (c->creg)
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->cfd, NULL);
	if (c->ureg)
		epoll_ctl(P.ep, EPOLL_CTL_DEL, c->ufd, NULL);
	c->creg = c->ureg = 0;
	c->evc = c->evu = 0;
	w->c = c;
	w->cfd = c->cfd;
	w->ufd = c->ufd;
	snprintf(w->agent, sizeof(w->agent), "%s", c->s->ss.agent);
	snprintf(w->run, sizeof(w->run), "%s", c->s->run);
	snprintf(w->host, sizeof(w->host), "%s", c->host);
	w->port = c->port;
	w->t_start = c->t_start;
	k->tag = w;
	k->cfd = c->cfd;
	k->ufd = c->ufd;
	k->evfd = P.evw;
	k->server_ctx = c->w_ctx;
	SSL_CTX_up_ref(P.cctx);
	k->client_ctx = P.cctx;
	snprintf(k->host, sizeof(k->host), "%s", c->host);
	k->port = c->port;
	k->ncreds = c->s->ncreds;
	if (c->len > 0)
		memcpy(k->pre, c->buf, c->len);
	k->npre = c->len;
	k->idle_ms = P.cfg->idle_timeout_ms;
	k->max_ms = P.cfg->max_duration_ms;
	k->max_request = P.cfg->max_request_bytes;
	k->max_response = P.cfg->max_response_bytes;
	c->cfd = c->ufd = -1;
	c->w = w;
	c->w_ctx = NULL;
	c->state = C_INJECT;
	if (sbx_cred_conn_start(k) == -1) {
		SSL_CTX_free(k->server_ctx);
		SSL_CTX_free(k->client_ctx);
		sbx_cred_free(k->creds, k->ncreds);
		free(k->pre);
		free(k);
		close(w->cfd);
		close(w->ufd);
		json_decref(w->used);
		free(w);
		c->w = NULL;
		conn_log(c, "error", "no_thread");
		conn_close(c);
		return;
	}
	P.nworkers++;
}

/* One event of a worker: its violations and what it used go to its
 * session, its refusals and its end to the log. */
static void
inject_event(struct sbx_cred_event *ev)
{
	struct injw	*w = ev->tag;
	struct conn	*c = w->c;
	struct session	*s = c != NULL ? c->s : NULL;
	json_t		*o, *v;
	size_t		 i;
	int		 deny;

	switch (ev->type) {
	case SBX_CRED_EV_USED:
		v = json_pack("{s:s,s:s,s:i}", "secret", ev->secret, "host",
		    w->host, "port", (int)w->port);
		json_array_append(w->used, v);
		if (s != NULL) {
			json_t	*u;

			json_array_foreach (s->credused, i, u)
				if (json_equal(u, v))
					break;
			if (i == json_array_size(s->credused))
				json_array_append(s->credused, v);
		}
		json_decref(v);
		return;
	case SBX_CRED_EV_REFUSED:
	case SBX_CRED_EV_ERROR:
		/* As conn_refuse: refusals of the policy or of the parser
		 * are the run's violations, failures are not. */
		deny = ev->type == SBX_CRED_EV_REFUSED && (ev->status == 400 ||
		    ev->status == 403 || ev->status == 405 ||
		    ev->status == 413 || ev->status == 431);
		o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:s,s:s,s:i}", "agent",
		    w->agent, "run", w->run, "host", w->host, "method",
		    ev->method[0] ? ev->method : "-", "port", (int)w->port,
		    "verdict", deny ? "deny" : "error", "reason", ev->reason,
		    "status", ev->status);
		if (o != NULL && ev->secret[0] != '\0')
			json_object_set_new(o, "secret",
			    json_string(ev->secret));
		if (o != NULL && ev->detail[0] != '\0')
			json_object_set_new(o, "detail",
			    json_string(ev->detail));
		if (o != NULL)
			json_object_set_new(o, "injected", json_true());
		if (o != NULL)
			log_json(o);
		if (deny && s != NULL) {
			s->denied++;
			if (json_array_size(s->violations) < VIOLATIONS_MAX &&
			    (v = json_pack("{s:s,s:s,s:i,s:s}", "type",
			    "network", "host", w->host, "port", (int)w->port,
			    "reason", ev->reason)) != NULL) {
				if (ev->secret[0] != '\0')
					json_object_set_new(v, "secret",
					    json_string(ev->secret));
				json_array_append_new(s->violations, v);
			}
		}
		if (c != NULL)
			c->status = ev->status;
		return;
	case SBX_CRED_EV_DONE:
		o = json_pack("{s:s,s:s,s:s,s:s,s:i,s:I,s:I,s:I,s:s,s:i,s:O}",
		    "agent", w->agent, "run", w->run, "host", w->host,
		    "method", "CONNECT", "port", (int)w->port, "bytes_in",
		    (json_int_t)ev->bytes_in, "bytes_out",
		    (json_int_t)ev->bytes_out, "duration_ms",
		    (json_int_t)(sbx_now_ms() - w->t_start), "verdict", "allow",
		    "requests", (int)ev->requests, "credentials", w->used);
		if (o != NULL) {
			json_object_set_new(o, "injected", json_true());
			log_json(o);
		}
		close(w->cfd);
		close(w->ufd);
		if (c != NULL) {
			c->w = NULL;
			conn_close(c);
		}
		json_decref(w->used);
		free(w);
		P.nworkers--;
		return;
	}
}

/* Read what the workers said (the pipe is non-blocking). */
static void
inject_events(void)
{
	struct sbx_cred_event	*evs[64];
	ssize_t			 r;
	size_t			 i;

	for (;;) {
		r = read(P.evr, evs, sizeof(evs));
		if (r <= 0)
			return;
		for (i = 0; i < (size_t)r / sizeof(evs[0]); i++) {
			inject_event(evs[i]);
			free(evs[i]);
		}
	}
}

/* Wait (at most ms) for the workers of s (all when s is NULL) to be
 * done, their events read: a run's end answer then has all of them. */
static void
inject_settle(struct session *s, long long ms)
{
	struct pollfd	 pfd;
	struct conn	*c;
	long long	 end = sbx_now_ms() + ms;
	int		 busy;

	for (;;) {
		busy = 0;
		if (s == NULL)
			busy = P.nworkers > 0;
		else
			for (c = P.conns; c != NULL && !busy; c = c->next)
				busy = c->s == s && c->state == C_INJECT;
		if (!busy || sbx_now_ms() >= end)
			return;
		pfd.fd = P.evr;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 50) > 0)
			inject_events();
	}
}

/* The tunnel is open (to the origin, or through the parent): say so to
 * the client, then judge its first bytes. */
static void
conn_tunnel_ready(struct conn *c)
{
	static const char	 ok[] = "HTTP/1.1 200 Connection established"
	    "\r\n\r\n";

	unsigned char		 sok[10];
	int			 inj = 0;

	/* A host:port a credential rule names: the worker's, once the
	 * CA and the contexts are ready (a refusal before the 200 can
	 * still be read by the client). */
	if (c->connect && c->s->ncreds > 0 && sbx_cred_find(c->s->creds,
	    c->s->ncreds, c->host, c->port) >= 0) {
		if (inject_prepare(c) == -1)
			return;
		inj = 1;
	}
	c->status = 200;
	sbx_socks5_reply(sok, SBX_SOCKS5_OK);
	if (c->connect) {
		if (c->socks ? send(c->cfd, sok, sizeof(sok), MSG_NOSIGNAL |
		    MSG_DONTWAIT) != (ssize_t)sizeof(sok) : send(c->cfd, ok,
		    sizeof(ok) - 1, MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t)(sizeof(ok) - 1)) {
			if (inj)
				SSL_CTX_free(c->w_ctx);
			conn_close(c);
			return;
		}
		if (inj) {
			inject_start(c);
			return;
		}
		/* An opaque port (SSH...) relays whatever comes, either
		 * way first: the administrator's choice, for protocols
		 * that are neither TLS nor HTTP. */
		c->hello = !conn_opaque(c);
		c->t_hello = sbx_now_ms() + P.cfg->header_timeout_ms;
		c->sendoff = 0;
		relay_start(c);
		if (!c->closed && c->hello)
			conn_hello(c);
		return;
	}
	relay_start(c);
}

static void
conn_connected(struct conn *c)
{
	char		 req[SBX_UPSTREAM_AUTH_MAX + 2 * SBX_NP_HOST_MAX + 128];
	int		 err = 0, n;
	socklen_t	 len = sizeof(err);

	if (getsockopt(c->ufd, SOL_SOCKET, SO_ERROR, &err, &len) == -1 ||
	    err != 0) {
		conn_dial(c);
		return;
	}
	if (!c->via_up || !c->connect) {
		conn_tunnel_ready(c);
		return;
	}
	/* A tunnel through the parent: ask it for one to the checked
	 * name and port, with the parent's credentials, and wait for its
	 * answer before the client hears anything. */
	n = sbx_upstream_connect_req(&c->s->up, c->host, c->port, req,
	    sizeof(req));
	if (n < 0 || send(c->ufd, req, (size_t)n, MSG_NOSIGNAL |
	    MSG_DONTWAIT) != n) {
		sodium_memzero(req, sizeof(req));
		conn_refuse(c, 502, "upstream_unreachable");
		return;
	}
	sodium_memzero(req, sizeof(req));
	c->state = C_UPHEAD;
	c->t_deadline = sbx_now_ms() + P.cfg->connect_timeout_ms;
	conn_update(c);
}

/*
 * The parent's answer to CONNECT: peeked, so that what follows its head
 * (the origin's first bytes) stays in the socket for the relay.  Only a
 * 2xx opens the tunnel; anything else is a 502 of its own reason, and a
 * parent that does not answer in connect_timeout_ms is one too (sweep).
 */
static void
conn_uphead(struct conn *c)
{
	char		 b[SBX_UPSTREAM_HEAD_MAX];
	ssize_t		 r;
	size_t		 hl;
	int		 st, k;

	r = recv(c->ufd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		conn_refuse(c, 502, "upstream_closed");
		return;
	}
	if ((k = sbx_upstream_response(b, (size_t)r, &st, &hl)) == 0)
		return;
	if (k == -1) {
		conn_refuse(c, 502, "upstream_bad_response");
		return;
	}
	if (recv(c->ufd, b, hl, MSG_DONTWAIT) != (ssize_t)hl) {
		conn_refuse(c, 502, "upstream_bad_response");
		return;
	}
	if (st / 100 != 2) {
		snprintf(c->refused, sizeof(c->refused), "%d", st);
		conn_refuse(c, 502, st == 407 ? "upstream_auth_required" :
		    "upstream_refused");
		return;
	}
	conn_tunnel_ready(c);
}

/* The addresses of the connection's name: check every one, then dial. */
static void
conn_resolved(struct conn *c, const struct sockaddr_storage *addrs,
    const socklen_t *lens, int n)
{
	const char	*why;
	int		 i;

	c->state = C_HEAD;	/* leaves C_RESOLVE */
	if (n == 0) {
		conn_refuse(c, 502,
		    c->via_up ? "upstream_resolve_failed" : "resolve_failed");
		return;
	}
	/* Every address must be global (or allowed for this name), not
	 * just the first: a name with one public and one private address
	 * could otherwise be steered to the private one.  The addresses of
	 * a parent proxy are the administrator's choice: not checked. */
	if (!c->via_up &&
	    (why = sbx_np_addrs_check(&c->s->pol, c->host, addrs, n, &i)) !=
		NULL) {
		sbx_np_addr_text((const struct sockaddr *)&addrs[i],
		    c->refused, sizeof(c->refused));
		conn_refuse(c, 403, why);
		return;
	}
	for (i = 0; i < n; i++) {
		memcpy(&c->addrs[i], &addrs[i], sizeof(addrs[i]));
		c->addrlens[i] = lens[i];
	}
	c->naddrs = n;
	c->ai = 0;
	conn_dial(c);
}

/*
 * The response to a plain HTTP request, its head: read here, not spliced,
 * and sent on as sbx_http_resp_close makes it, with "Connection: close" in
 * place of its Connection, Keep-Alive and Proxy-Connection headers.  The
 * proxy passes one request per connection and closes it after the
 * response (NP-12); a client that keeps connections alive (urllib3, npm)
 * must hear so, or it sends its next request on the closing connection
 * and gets a reset instead of an answer.  Interim answers (1xx) go on as
 * they are and the next head is read; 101 (an upgrade), a head that does
 * not end within RESP_HEAD_MAX, and an upstream that ends before the head
 * does go on unchanged.
 */
static int
resp_head_rewrite(struct conn *c, size_t hlen)
{
	size_t	 cap = RESP_HEAD_MAX + SBX_HTTP_RESP_GROWTH, n;
	char	*nb;

	if ((nb = malloc(cap)) == NULL)
		return -1;
	memcpy(nb, c->rb, c->rbscan);
	n = sbx_http_resp_close(c->rb + c->rbscan, hlen, nb + c->rbscan,
	    cap - c->rbscan);
	/* Cannot fail (the buffer holds the head and its growth), but a
	 * miscount must close the connection, never write past it. */
	if (n == 0 || c->rblen - c->rbscan - hlen > cap - c->rbscan - n) {
		free(nb);
		return -1;
	}
	n += c->rbscan;
	/* What came after the head (the body's first bytes). */
	memcpy(nb + n, c->rb + c->rbscan + hlen, c->rblen - c->rbscan - hlen);
	n += c->rblen - c->rbscan - hlen;
	free(c->rb);
	c->rb = nb;
	c->rblen = n;
	return 0;
}

/* 1 once the head went (splicing goes on), 0 for later, -1 to close. */
static int
resp_head(struct conn *c)
{
	size_t		 hlen;
	ssize_t		 r;
	int		 code;

	while (c->rhead == 1) {
		/* Every complete head in hand: interim ones pass. */
		while ((hlen = sbx_http_resp_end(c->rb + c->rbscan,
		    c->rblen - c->rbscan, &code)) > 0) {
			if (code >= 100 && code < 200 && code != 101) {
				c->rbscan += hlen;
				continue;
			}
			if (code != 101 && resp_head_rewrite(c, hlen) == -1)
				return -1;
			c->rhead = 2;
			break;
		}
		if (c->rhead != 1)
			break;
		if (c->rblen == RESP_HEAD_MAX) {
			c->rhead = 2;
			break;
		}
		r = recv(c->ufd, c->rb + c->rblen, RESP_HEAD_MAX - c->rblen,
		    MSG_DONTWAIT);
		if (r == 0) {
			c->eof_u = 1;
			c->rhead = 2;
			break;
		}
		if (r < 0)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		c->rblen += (size_t)r;
		c->t_last = sbx_now_ms();
	}
	while (c->rboff < c->rblen) {
		r = send(c->cfd, c->rb + c->rboff, c->rblen - c->rboff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r > 0) {
			c->rboff += (size_t)r;
			c->bytes_out += (unsigned long long)r;
			c->t_last = sbx_now_ms();
			continue;
		}
		return r == -1 && (errno == EAGAIN || errno == EINTR) ? 0 : -1;
	}
	free(c->rb);
	c->rb = NULL;
	c->rhead = 0;
	return 1;
}

/* Splice what can move in one direction: from -> pipe -> to. */
static int
relay_dir(int from, int to, int p[2], size_t *q, int *eof,
    unsigned long long *count, unsigned long long cap, long long *left,
    int *capped)
{
	ssize_t		 r;
	size_t		 want;
	int		 moved = 0;

	if (!*eof && *q < PIPE_SIZE) {
		want = PIPE_SIZE - *q;
		if (left != NULL && (long long)want > *left)
			want = (size_t)*left;
		if (*count + want > cap) {
			want = cap > *count ? (size_t)(cap - *count) : 0;
			if (want == 0)
				*capped = 1;
		}
		if (want > 0) {
			r = splice(from, NULL, p[1], NULL, want,
			    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
			if (r == 0)
				*eof = 1;
			else if (r > 0) {
				*q += (size_t)r;
				*count += (unsigned long long)r;
				if (left != NULL)
					*left -= r;
				moved = 1;
			} else if (errno != EAGAIN && errno != EINTR)
				return -1;
		}
	}
	if (*q > 0) {
		r = splice(p[0], NULL, to, NULL, *q, SPLICE_F_MOVE |
		    SPLICE_F_NONBLOCK);
		if (r > 0) {
			*q -= (size_t)r;
			moved = 1;
		} else if (r == -1 && errno != EAGAIN && errno != EINTR)
			return -1;
	}
	return moved;
}

static void
conn_relay(struct conn *c)
{
	ssize_t	 r;
	int	 capped_in = 0, capped_out = 0, m1, m2, round, moved = 0;

	if (c->hello) {
		conn_read_hello(c);
		if (c->closed)
			return;
	}
	/* First the bytes held in user space (the rewritten head, the
	 * first TLS record), then splice. */
	while (!c->hello && c->sendoff < c->len) {
		r = send(c->ufd, c->buf + c->sendoff, c->len - c->sendoff,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r > 0) {
			c->sendoff += (size_t)r;
			continue;
		}
		if (r == -1 && (errno == EAGAIN || errno == EINTR)) {
			conn_update(c);
			return;
		}
		conn_close(c);
		return;
	}
	if (c->rhead != 0 && (r = resp_head(c)) == -1) {
		conn_close(c);
		return;
	}
	if (c->bytes_out > P.cfg->max_response_bytes) {
		conn_log(c, "error", "response_too_large");
		conn_close(c);
		return;
	}
	/* Move what can move now, a few rounds at most: fewer wake-ups
	 * per byte, and no connection holds the loop for long. */
	for (round = 0, m1 = m2 = 1; round < 4 && (m1 == 1 || m2 == 1);
	    round++) {
		m1 = c->hello ? 0 : relay_dir(c->cfd, c->ufd, c->p_cu,
		    &c->q_cu, &c->eof_c, &c->bytes_in,
		    P.cfg->max_request_bytes, c->connect ? NULL :
		    &c->body_left, &capped_in);
		if (m1 == -1)
			break;
		m2 = c->hello || c->rhead ? 0 : relay_dir(c->ufd, c->cfd,
		    c->p_uc, &c->q_uc, &c->eof_u, &c->bytes_out,
		    P.cfg->max_response_bytes, NULL, &capped_out);
		if (m1 == 1 || m2 == 1)
			moved = 1;
		if (m2 == -1 || capped_in || capped_out)
			break;
	}
	if (m1 == -1 || m2 == -1) {
		conn_close(c);
		return;
	}
	if (moved)
		c->t_last = sbx_now_ms();
	if (capped_in || capped_out) {
		conn_log(c, "error", capped_in ? "request_too_large" :
		    "response_too_large");
		conn_close(c);
		return;
	}
	/* Half-closes travel on: EOF from one side, once its pipe is
	 * drained, becomes a shutdown of the other side's write. */
	if (c->eof_c && c->q_cu == 0 && !c->shut_u && c->connect) {
		(void)shutdown(c->ufd, SHUT_WR);
		c->shut_u = 1;
	}
	if (c->eof_u && c->q_uc == 0 && c->rhead == 0) {
		if (!c->connect || c->eof_c) {
			conn_close(c);
			return;
		}
		if (!c->shut_c) {
			(void)shutdown(c->cfd, SHUT_WR);
			c->shut_c = 1;
		}
	}
	conn_update(c);
}

static void
conn_event(struct conn *c, int upstream, unsigned ev)
{
	char	 junk[4096];

	if (ev & (EPOLLHUP | EPOLLERR)) {
		if (upstream)
			c->u_hup = 1;
		else
			c->c_hup = 1;
	}
	switch (c->state) {
	case C_HEAD:
		if (!upstream && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP |
		    EPOLLRDHUP)))
			conn_read_head(c);
		break;
	case C_SOCKS:
		if (!upstream && (ev & (EPOLLIN | EPOLLERR | EPOLLHUP |
		    EPOLLRDHUP)))
			conn_read_socks(c);
		break;
	case C_RESOLVE:
	case C_ASK:
		if (ev & (EPOLLHUP | EPOLLERR))
			conn_close(c);
		break;
	case C_CONNECT:
		if (upstream)
			conn_connected(c);
		else if (ev & (EPOLLHUP | EPOLLERR))
			conn_close(c);
		break;
	case C_UPHEAD:
		if (upstream)
			conn_uphead(c);
		else if (ev & (EPOLLHUP | EPOLLERR))
			conn_close(c);
		break;
	case C_RELAY:
		conn_relay(c);
		break;
	case C_INJECT:
		break;
	case C_LINGER: {
		ssize_t r = recv(c->cfd, junk, sizeof(junk), 0);

		if (r == 0 || (r == -1 && errno != EAGAIN && errno != EINTR) ||
		    (ev & (EPOLLHUP | EPOLLERR)))
			conn_close(c);
		break;
	}
	}
}

/* Deadlines, checked a few times a second rather than per event. */
static void
sweep(void)
{
	struct conn	*c, *next;
	long long	 t = sbx_now_ms();

	for (c = P.conns; c != NULL; c = next) {
		next = c->next;
		switch (c->state) {
		case C_HEAD:
		case C_SOCKS:
			if (t >= c->t_deadline)
				conn_refuse(c, 408, "header_timeout");
			break;
		case C_RESOLVE:
			if (t >= c->t_deadline) {
				conn_unresolve(c);
				conn_refuse(c, 504, "resolve_timeout");
			}
			break;
		case C_ASK:
			/* Nobody answered: no. */
			if (t >= c->t_deadline)
				ask_release(c, "timeout");
			break;
		case C_CONNECT:
		case C_UPHEAD:
			/* A parent that hangs is bounded as a dial is. */
			if (t >= c->t_deadline && c->via_up)
				conn_refuse(c, 502, "upstream_timeout");
			else if (t >= c->t_deadline)
				conn_refuse(c, 504, "connect_timeout");
			break;
		case C_RELAY:
			if (c->hello && t >= c->t_hello) {
				/* No first bytes to judge in time. */
				conn_log(c, "deny", "hello_timeout");
				conn_close(c);
			} else if (t >= c->t_deadline) {
				conn_log(c, "error", "max_duration");
				conn_close(c);
			} else if (t - c->t_last >= P.cfg->idle_timeout_ms) {
				conn_log(c, "error", "idle_timeout");
				conn_close(c);
			}
			break;
		case C_LINGER:
			if (t >= c->t_deadline)
				conn_close(c);
			break;
		case C_INJECT:
			/* The worker keeps its own time (socket timeouts,
			 * max_duration). */
			break;
		}
	}
}

/* ---- sessions and control --------------------------------------------- */

static void
session_free(struct session *s)
{
	struct conn	*c, *next;

	for (c = P.conns; c != NULL; c = next) {
		next = c->next;
		if (c->s == s)
			conn_close(c);
	}
	sbx_session_close(&P.sessions, &s->ss, P.ep);
	sbx_np_free(&s->pol);
	sodium_memzero(s->up.auth, sizeof(s->up.auth));
	json_decref(s->violations);
	s->violations = NULL;
	sbx_cred_free(s->creds, s->ncreds);
	s->creds = NULL;
	s->ncreds = 0;
	json_decref(s->credused);
	s->credused = NULL;
	s->closed = 1;
	s->gnext = P.sgrave;
	P.sgrave = s;
	if (P.sessions.n == 0 && P.nconns == 0)
		P.t_idle = sbx_now_ms();
}

/* Open a session: the agent's policy and token, plus the run's extra
 * allowlist entries, bound to the channel descriptor. */
static json_t *
session_open(struct session *s, json_t *req, int chan, struct sbx_error *e)
{
	const char		*agent, *run;
	json_t			*allow, *v, *cfg = NULL;
	struct epoll_event	 ev;
	char			 rel[128];
	size_t			 i;

	if ((agent = sbx_session_agent(req, chan, e)) == NULL)
		return NULL;
	/* The run's credentials: checked as settings are, the values moved
	 * to sodium memory and wiped from the request. */
	if (sbx_cred_parse(json_object_get(req, "credentials"), &s->creds,
	    &s->ncreds, e) == -1)
		return NULL;
	/* A run with credentials needs the CA (made at first use, here:
	 * sbx-exec opens its bundle once this session is open, and links
	 * none of OpenSSL): a state root whose CA is damaged fails the run
	 * now, not its first request.  Loaded once; the bundle is checked
	 * (and rewritten when the host's bundle changed, or remade when
	 * removed) for every such run. */
	if (s->ncreds > 0 && (P.ca == NULL ?
	    (P.ca = sbx_tlsca_load(P.rootfd, e)) == NULL :
	    sbx_tlsca_ensure(P.rootfd, e) == -1))
		return NULL;
	run = json_string_value(json_object_get(req, "run"));
	allow = json_object_get(req, "allow");
	snprintf(s->ss.agent, sizeof(s->ss.agent), "%s", agent);
	snprintf(s->run, sizeof(s->run), "%s", run != NULL ? run : "");
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, agent);
	if (sbx_settings_agent(P.rootfd, agent, &cfg, e) == -1)
		return NULL;
	if (sbx_proxy_agent_check(cfg, rel, e) == -1 ||
	    sbx_proxy_policy(P.cfg, cfg, rel, &s->pol, e) == -1 ||
	    sbx_proxy_cfg_ports(json_object_get(cfg, "opaque_ports"), rel, "",
		s->opaque, &s->nopaque, e) == -1 ||
	    sbx_proxy_cfg_upstream(P.rootfd, cfg, rel, "", &s->up, &s->have_up,
		e) == -1) {
		json_decref(cfg);
		return NULL;
	}
	/* Asking: the agent's setting, or this run's --ask. */
	s->ask = json_is_true(json_object_get(cfg, "network_ask")) ||
	    json_is_true(json_object_get(req, "ask"));
	s->ask_ms = json_is_integer(json_object_get(cfg, "ask_timeout_s")) ?
	    json_integer_value(json_object_get(cfg, "ask_timeout_s")) * 1000 :
	    30000;
	/* The agent's own parent, else the one of every agent. */
	if (!s->have_up && P.cfg->have_upstream) {
		s->up = P.cfg->upstream;
		s->have_up = 1;
	}
	json_decref(cfg);
	/*
	 * A plugin's run: its declared names are the only ones allowed, not
	 * added to the agent's; nothing to ask about either.  The agent's
	 * denials, ports and address rules stay.
	 */
	if (json_is_true(json_object_get(req, "allow_only"))) {
		sbx_np_allow_reset(&s->pol);
		s->ask = 0;
	}
	if (allow != NULL && json_is_array(allow))
		json_array_foreach(allow, i, v)
			if (!json_is_string(v) || sbx_np_allow(&s->pol,
			    json_string_value(v), e) == -1)
				return NULL;
	if (sbx_session_token(P.rootfd, agent, s->ss.token, e) == -1)
		return NULL;
	s->ss.chan = chan;
	s->kchan.type = K_CHAN;
	s->kchan.p = s;
	ev.events = EPOLLIN;
	ev.data.ptr = &s->kchan;
	if (epoll_ctl(P.ep, EPOLL_CTL_ADD, chan, &ev) == -1) {
		s->ss.chan = -1;
		sbx_error_sys(e, "epoll", "cannot watch the channel");
		return NULL;
	}
	s->violations = json_array();
	s->credused = json_array();
	return json_pack("{s:b}", "ok", 1);
}

/*
 * `policy` (sbx srt --control-fd): replace the allowed and denied names
 * of a running session, found by its agent and the pid of the sbx-exec
 * that holds it (its run id starts "PID-"; a pid names one live process,
 * and the session lives as long as that process).  All entries are
 * checked before any is applied: a bad line changes nothing.  The
 * agent's ports, address rules and settings file are untouched; a
 * restarted proxy starts again from the agent's settings.
 */
static json_t *
session_policy(json_t *req, struct sbx_error *e)
{
	const char		*agent = json_string_value(json_object_get(req,
				    "agent"));
	json_t			*allow = json_object_get(req, "allow");
	json_t			*deny = json_object_get(req, "deny");
	json_int_t		 pid = json_integer_value(json_object_get(req,
				    "pid"));
	struct sbx_netpolicy	 chk;
	struct session		*s;
	json_t			*v;
	char			 pre[32];
	size_t			 i, n = 0;

	if (agent == NULL || pid <= 0 || !json_is_array(allow) ||
	    !json_is_array(deny)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "policy", "malformed",
		    "policy needs agent, pid, allow and deny");
		return NULL;
	}
	sbx_np_init(&chk);
	json_array_foreach (allow, i, v)
		if (!json_is_string(v) ||
		    sbx_np_allow(&chk, json_string_value(v), e) == -1)
			goto bad;
	json_array_foreach (deny, i, v)
		if (!json_is_string(v) ||
		    sbx_np_deny(&chk, json_string_value(v), e) == -1)
			goto bad;
	sbx_np_free(&chk);
	snprintf(pre, sizeof(pre), "%lld-", (long long)pid);
	for (s = session_next(NULL); s != NULL; s = session_next(s)) {
		if (s->closed || s->ss.chan == -1 ||
		    strcmp(s->ss.agent, agent) != 0 ||
		    strncmp(s->run, pre, strlen(pre)) != 0)
			continue;
		sbx_np_allow_reset(&s->pol);
		sbx_np_deny_reset(&s->pol);
		json_array_foreach (allow, i, v)
			(void)sbx_np_allow(&s->pol, json_string_value(v), e);
		json_array_foreach (deny, i, v)
			(void)sbx_np_deny(&s->pol, json_string_value(v), e);
		n++;
	}
	if (n == 0) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "policy", "no_session",
		    "no running session of that agent and pid");
		return NULL;
	}
	return json_pack("{s:b,s:I}", "ok", 1, "sessions", (json_int_t)n);
bad:
	if (!json_is_string(v))
		sbx_error_set(e, SBX_K_INVALID_ARGS, "policy", "malformed",
		    "policy entries must be strings");
	sbx_np_free(&chk);
	return NULL;
}

/* The values of a request's credentials, wiped before the request is
 * freed (jansson frees with free()). */
static void
req_wipe(json_t *req)
{
	json_t		*a, *r, *v;
	const char	*p;
	size_t		 i;

	a = json_object_get(req, "credentials");
	json_array_foreach (a, i, r)
		if ((v = json_object_get(r, "value")) != NULL &&
		    (p = json_string_value(v)) != NULL)
			sodium_memzero((char *)(uintptr_t)p,
			    json_string_length(v));
}

/* The "take" of a plain control connection: {run, agent}. */
static json_t *
session_take(json_t *req, struct sbx_error *e)
{
	const char	*run, *agent;
	struct session	*t;
	json_t		*ans;

	run = json_string_value(json_object_get(req, "run"));
	agent = json_string_value(json_object_get(req, "agent"));
	if (run == NULL || agent == NULL || *run == '\0') {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "run", "malformed",
		    "take needs a run and an agent");
		return NULL;
	}
	for (t = session_next(NULL); t != NULL; t = session_next(t))
		if (t->ss.chan >= 0 && !t->ended && strcmp(t->run, run) == 0 &&
		    strcmp(t->ss.agent, agent) == 0)
			break;
	if (t == NULL) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "run", "no_session",
		    "no session of agent %s for run %s", agent, run);
		return NULL;
	}
	/* Injected connections of the ended command report first (its
	 * processes are gone: they end at once). */
	inject_settle(t, 1000);
	ans = json_pack("{s:b,s:o,s:I,s:o}", "ok", 1, "violations",
	    t->violations != NULL ? t->violations : json_array(), "denied",
	    (json_int_t)t->denied, "credentials", t->credused != NULL ?
	    t->credused : json_array());
	t->violations = json_array();
	t->credused = json_array();
	t->denied = 0;
	return ans;
}

static void
ctl_line(struct session *s, char *line, int fd_in)
{
	struct sbx_error	 e;
	json_t			*req, *ans;
	const char		*op;

	memset(&e, 0, sizeof(e));
	req = sbx_session_request(line, SBX_PROXY_LINE_MAX, &op, &e);
	/* The line may hold credential values: parsed, it is wiped. */
	sodium_memzero(line, strlen(line));
	if (req == NULL) {
		sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
		goto drop;
	}
	if (strcmp(op, "status") == 0) {
		sbx_session_answer(s->ss.ctl, json_pack("{s:b,s:i,s:i,s:i,s:I}",
		    "ok", 1, "pid", (int)getpid(), "sessions",
		    (int)P.sessions.n - 1, "connections", (int)P.nconns,
		    "uptime_s", (json_int_t)((sbx_now_ms() - P.t_start) /
		    1000)));
		goto drop;
	}
	if (strcmp(op, "asks") == 0 && s->ss.chan == -1) {
		sbx_session_answer(s->ss.ctl, sbx_proxyask_list());
		if (json_is_true(json_object_get(req, "follow"))) {
			/* Kept open: every ask and answer follows. */
			s->follow = 1;
			req_wipe(req);
			json_decref(req);
			return;
		}
		goto drop;
	}
	if (strcmp(op, "answer") == 0 && s->ss.chan == -1) {
		ans = ask_answer(req, &e);
		sbx_session_answer(s->ss.ctl, ans != NULL ? ans :
		    sbx_session_error(&e));
		goto drop;
	}
	/*
	 * Like asks and answer, only a plain control connection (the
	 * host's sbx srt; run/proxy.sock is the state root owner's) may
	 * rewrite a run's policy: a connection that holds a session is a
	 * run's own, and a run never widens its own policy.
	 */
	if (strcmp(op, "policy") == 0 && s->ss.chan == -1) {
		ans = session_policy(req, &e);
		sbx_session_answer(s->ss.ctl, ans != NULL ? ans :
		    sbx_session_error(&e));
		goto drop;
	}
	/*
	 * A warm session's command has ended (lib/exec/warm.c): what its
	 * session recorded since the last take, and the record emptied, so
	 * that each command's envelope holds its own violations and
	 * credentials.  Only on a plain control connection (the state root
	 * owner's, as asks and policy), for a session of the agent named.
	 */
	if (strcmp(op, "take") == 0 && s->ss.chan == -1) {
		ans = session_take(req, &e);
		sbx_session_answer(s->ss.ctl, ans != NULL ? ans :
		    sbx_session_error(&e));
		goto drop;
	}
	if (strcmp(op, "stop") == 0) {
		sbx_session_answer(s->ss.ctl, json_pack("{s:b}", "ok", 1));
		P.stop = 1;
		goto drop;
	}
	if (strcmp(op, "session") == 0 && s->ss.chan < 0 && !s->ended) {
		if ((ans = session_open(s, req, fd_in, &e)) == NULL) {
			sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
			goto drop;
		}
		sbx_session_answer(s->ss.ctl, ans);
		req_wipe(req);
		json_decref(req);
		return;
	}
	if (strcmp(op, "end") == 0 && s->ss.chan >= 0) {
		/* The run's injected connections say what they did first
		 * (the sandbox is gone: they end at once). */
		inject_settle(s, 1000);
		sbx_session_answer(s->ss.ctl, json_pack("{s:b,s:O,s:I,s:o}",
		    "ok", 1, "violations", s->violations, "denied",
		    (json_int_t)s->denied, "credentials", s->credused != NULL ?
		    json_incref(s->credused) : json_array()));
		goto drop;
	}
	sbx_session_unknown_op(&e);
	sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
drop:
	if (fd_in >= 0 && fd_in != s->ss.chan)
		close(fd_in);
	req_wipe(req);
	json_decref(req);
	session_free(s);
}

static void
ctl_read(struct session *s)
{
	int	 fd;

	/* One descriptor per request line, and only before the session
	 * opens: the session's channel. */
	switch (sbx_session_read(&s->ss, SBX_PROXY_LINE_MAX, s->ss.chan == -1,
	    &fd)) {
	case -1:
		/* The client is gone (or abusive): so is its session. */
		session_free(s);
		break;
	case 1:
		ctl_line(s, s->ss.line, fd);
		break;
	}
}

/* The sandbox's init hands over accepted connections. */
static void
chan_read(struct session *s)
{
	char		 b[16];
	ssize_t		 r;
	int		 fds[8];
	size_t		 i, nfd;

	r = sbx_fs_recv_fds(s->ss.chan, b, sizeof(b), fds, 8, &nfd,
	    MSG_DONTWAIT);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		/* The sandbox is gone; the session lasts until sbx-exec
		 * ends it (it still wants the violations). */
		for (i = 0; i < nfd; i++)
			close(fds[i]);
		epoll_ctl(P.ep, EPOLL_CTL_DEL, s->ss.chan, NULL);
		close(s->ss.chan);
		s->ss.chan = -2;
		return;
	}
	{
		for (i = 0; i < nfd; i++) {
			/* Only TCP stream sockets are served: whatever else
			 * the sandbox might pass is closed unused. */
			if (!sbx_session_stream_ok(fds[i], 1)) {
				close(fds[i]);
				continue;
			}
			(void)fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) |
			    O_NONBLOCK);
			/* sbx-init tags each connection with its listener
			 * (one message, one byte, one descriptor): 'S' is
			 * 1080, SOCKS5; anything else is 3128, HTTP. */
			conn_new(s, fds[i], nfd == 1 && r == 1 && b[0] == 'S');
		}
	}
}

static void
listen_accept(void)
{
	struct session		*s;
	struct epoll_event	 ev;

	while ((s = sbx_session_accept(&P.sessions, P.lfd, sizeof(*s))) !=
	    NULL) {
		s->kctl.type = K_CTL;
		s->kctl.p = s;
		ev.events = EPOLLIN | EPOLLRDHUP;
		ev.data.ptr = &s->kctl;
		if (epoll_ctl(P.ep, EPOLL_CTL_ADD, s->ss.ctl, &ev) == -1) {
			sbx_session_close(&P.sessions, &s->ss, P.ep);
			free(s);
		}
	}
}

/* Control connections that never said anything are dropped. */
static void
sweep_sessions(void)
{
	struct session	*s, *next;
	long long	 t = sbx_now_ms();

	for (s = session_next(NULL); s != NULL; s = next) {
		next = session_next(s);
		if (s->ss.chan == -1 && !s->follow &&
		    t - s->ss.t_open > CTL_TIMEOUT_MS)
			session_free(s);
	}
}

static void
bury(void)
{
	struct conn	*c;
	struct session	*s;

	while ((c = P.grave) != NULL) {
		P.grave = c->gnext;
		conn_free(c);
	}
	while ((s = P.sgrave) != NULL) {
		P.sgrave = s->gnext;
		free(s);
	}
}

int
sbx_proxy_serve(int rootfd, int listen_fd,
    const struct sbx_proxy_config *cfg, struct sbx_error *e)
{
	struct epoll_event	 evs[64];
	struct rlimit		 rl;
	struct key		*k;
	long long		 t, next_sweep;
	int			 i, n, timeout;
	struct session		*s;

	memset(&P, 0, sizeof(P));
	sbx_proxyask_reset();
	P.cfg = cfg;
	P.rootfd = rootfd;
	P.lfd = listen_fd;
	P.logfd = -1;
	if (sodium_init() < 0)
		return sbx_error_sys(e, "sodium", "cannot initialise "
		    "libsodium");
	/* Every connection costs up to six descriptors. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if ((P.runfd = sbx_fs_open_beneath(rootfd, "run", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC, e)) == -1)
		return -1;
	log_open();
	if ((P.ep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return sbx_error_sys(e, "epoll", "cannot set up the event "
		    "loop");
	if (sbx_resolver_init(cfg, e) == -1) {
		sbx_resolver_end();
		return -1;
	}
	{
		int	 pf[2];

		/* The credential workers' events: one pointer per write
		 * (atomic under PIPE_BUF); the loop reads without blocking,
		 * a worker waits when the pipe is full. */
		if (pipe2(pf, O_CLOEXEC) == -1) {
			sbx_resolver_end();
			return sbx_error_sys(e, "pipe", "cannot set up the "
			    "event loop");
		}
		P.evr = pf[0];
		P.evw = pf[1];
		(void)fcntl(P.evr, F_SETFL, O_NONBLOCK);
	}
	P.kev.type = K_WORKER;
	P.klisten.type = K_LISTEN;
	P.kdns.type = K_DNS;
	{
		struct epoll_event ev;

		ev.events = EPOLLIN;
		ev.data.ptr = &P.klisten;
		epoll_ctl(P.ep, EPOLL_CTL_ADD, listen_fd, &ev);
		/* The resolver's sockets, as one readable descriptor. */
		ev.data.ptr = &P.kdns;
		epoll_ctl(P.ep, EPOLL_CTL_ADD, sbx_resolver_fd(), &ev);
		ev.data.ptr = &P.kev;
		epoll_ctl(P.ep, EPOLL_CTL_ADD, P.evr, &ev);
	}
	(void)fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) |
	    O_NONBLOCK);
	P.t_idle = P.t_start = sbx_now_ms();
	next_sweep = sbx_now_ms() + SWEEP_MS;
	while (!P.stop) {
		t = sbx_now_ms();
		if (P.nconns == 0 && P.sessions.n == 0 && P.nworkers == 0) {
			if (t - P.t_idle >= cfg->idle_exit_ms)
				break;
			timeout = (int)(cfg->idle_exit_ms - (t - P.t_idle));
			if (timeout > SWEEP_MS)
				timeout = SWEEP_MS * 5;
		} else
			timeout = (int)(next_sweep > t ? next_sweep - t : 0);
		/* Wake up for the resolver's next retry. */
		timeout = sbx_resolver_timeout(timeout);
		n = epoll_wait(P.ep, evs, 64, timeout);
		if (n == -1 && errno != EINTR)
			break;
		for (i = 0; i < n; i++) {
			k = evs[i].data.ptr;
			switch (k->type) {
			case K_LISTEN:
				listen_accept();
				break;
			case K_DNS:
				sbx_resolver_events();
				break;
			case K_CTL:
				if (!((struct session *)k->p)->closed)
					ctl_read(k->p);
				break;
			case K_CHAN:
				if (!((struct session *)k->p)->closed &&
				    ((struct session *)k->p)->ss.chan >= 0)
					chan_read(k->p);
				break;
			case K_CLIENT:
			case K_UPSTREAM:
				if (!((struct conn *)k->p)->closed)
					conn_event(k->p, k->type ==
					    K_UPSTREAM, evs[i].events);
				break;
			case K_WORKER:
				inject_events();
				break;
			}
		}
		/* The resolver's timeouts and retries; then the lookups
		 * that can go now (some may have ended in this batch). */
		sbx_resolver_process();
		sbx_resolver_pump();
		bury();
		if ((t = sbx_now_ms()) >= next_sweep) {
			sweep();
			sweep_sessions();
			next_sweep = t + SWEEP_MS;
		}
	}
	/*
	 * A stop asked for (sbx proxy stop, "its sessions end"): each run's
	 * sbx exec is told so first, because it takes the end of its
	 * session for a crash and starts the proxy again otherwise (see
	 * relay_open in lib/exec/exec.c).  A proxy that dies says nothing.
	 */
	if (P.stop)
		for (s = session_next(NULL); s != NULL; s = session_next(s))
			if (!s->closed && !s->follow && s->ss.chan >= 0)
				sbx_session_stopping(&s->ss);
	/* Shut down: sessions (and their connections) first. */
	while ((s = session_next(NULL)) != NULL)
		session_free(s);
	/* Their workers were told to stop: their last events are read and
	 * their descriptors closed before the proxy goes. */
	inject_settle(NULL, 3000);
	if (P.nworkers == 0) {
		/* (A worker still there keeps its pipe and its CA.) */
		close(P.evr);
		close(P.evw);
		sbx_tlsca_free(P.ca);
		SSL_CTX_free(P.cctx);
	}
	/* Every lookup left is an orphan now: the resolver's end answers
	 * them (ARES_EDESTRUCTION) and they are freed. */
	sbx_resolver_end();
	bury();
	return 0;
}

/*
 * sbx proxy check --resolve: the addresses of an allowed name, judged as
 * the proxy judges them (sbx_np_addrs_check, after its `resolve` overrides or its
 * resolver).  Sets *why, *status and refused (the address refused) when
 * the real run would refuse; appends one line per address to lines.  A
 * failed lookup (502 resolve_failed) is also said in err (zeroed first).
 */
json_t *
sbx_proxy_check_addresses(const struct sbx_proxy_config *pcfg,
    const struct sbx_netpolicy *pol, const char *host, const char **why,
    int *status, char *refused, size_t rsize, struct sbx_buf *lines,
    struct sbx_error *err)
{
	struct sockaddr_storage		 ss[16];
	socklen_t			 lens[16];
	const struct sbx_np_override	*ov;
	struct sbx_error		 e;
	const struct sockaddr		*sa;
	const char			*r;
	json_t				*a, *o;
	char				 t[INET6_ADDRSTRLEN], by[300];
	int				 i, n, bad;

	memset(&e, 0, sizeof(e));
	memset(err, 0, sizeof(*err));
	if ((ov = sbx_np_override(pol, host)) != NULL) {
		memcpy(&ss[0], &ov->addr, sizeof(ss[0]));
		lens[0] = ov->addrlen;
		n = 1;
	} else if ((n = sbx_resolver_blocking(pcfg, host, ss, lens, 16, &e)) <=
	    0) {
		/* What the proxy answers: 502 resolve_failed. */
		if (n == -1)
			*err = e;
		*why = "resolve_failed";
		*status = 502;
		return json_array();
	}
	a = json_array();
	for (i = 0; i < n; i++) {
		sa = (const struct sockaddr *)(const void *)&ss[i];
		sbx_np_addr_text(sa, t, sizeof(t));
		r = sbx_np_addr_check(pol, host, sa, by, sizeof(by));
		o = json_pack("{s:s,s:s,s:s,s:b}", "address", t, "class",
		    sbx_np_addr_reason(sa) != NULL ? sbx_np_addr_reason(sa) :
		    "global", "range", sbx_np_addr_class(sa), "allowed",
		    r == NULL);
		if (by[0] != '\0')
			json_object_set_new(o, "allowed_by", json_string(by));
		json_array_append_new(a, o);
		sbx_buf_printf(lines, "\n  %s: %s", t,
		    sbx_np_addr_reason(sa) != NULL ? sbx_np_addr_reason(sa) :
		    "global");
		if (strcmp(sbx_np_addr_class(sa), "global") != 0)
			sbx_buf_printf(lines, " (%s)", sbx_np_addr_class(sa));
		if (by[0] != '\0')
			sbx_buf_printf(lines, ", allowed by %s", by);
		else if (r != NULL)
			sbx_buf_puts(lines, ", refused");
	}
	if ((*why = sbx_np_addrs_check(pol, host, ss, n, &bad)) != NULL) {
		*status = 403;
		sa = (const struct sockaddr *)(const void *)&ss[bad];
		sbx_np_addr_text(sa, refused, rsize);
	}
	return a;
}
