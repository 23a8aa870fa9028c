/*
 * bridge.c: sbx-bridge's server.
 *
 * The main thread runs an epoll loop over the control socket
 * (run/bridge.sock: sessions opened by sbx exec, status and stop), each
 * session's control connection and its channel, over which the sandbox's
 * sbx-init passes the connections it accepts on /run/sbx/bridge.sock.
 * Each such connection is given to libmicrohttpd with MHD_add_connection()
 * (no listening socket of its own), tagged with the session's agent and
 * token: the identity of a request is the channel it came over, never
 * anything it says.  libmicrohttpd runs a thread per connection, so that a
 * slow model behind /v1/inference blocks nobody else; the stores are
 * reached under one lock.
 *
 * Bounds, each decided before the next byte is read: a connection count
 * per agent and in all (over it, a canned 503 and the connection closed,
 * before libmicrohttpd sees it); the head within 16 KiB (libmicrohttpd's
 * memory pool answers 431) and within header_timeout_ms (a sweep shuts
 * slow heads down: slowloris); a quiet connection closed after
 * idle_timeout_s; a body of at most 8 MiB, 413 from Content-Length before
 * it is read and by a running count for chunked bodies; the token checked
 * (401) before the body is read; rate limits per agent and service (429).
 *
 * A session also says which plugin it is for (`sbx plugin run`, with the
 * digests of the secret values its run holds) and may hand over the run's
 * values (the "scrub" op) for the records it sends; neither is ever taken
 * from a request (issue 27).
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "bridge.h"
#include "bridgestore.h"
#include "buf.h"
#include "credrule.h"
#include "daemon.h"
#include "dlist.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "names.h"
#include "scrub.h"
#include "secret.h"
#include "session.h"
#include "time.h"
#include "token.h"

/* A session line: a plugin's session names the digests of the values its
 * run holds (64 hex digits and a name each). */
#define CTL_LINE_MAX 16384
#define FD_TABLE     65536

/* An agent the bridge has seen: its connections and rate windows. */
struct agent {
	char	 name[64];
	unsigned nconns;
	/* Sliding windows: the times of the last rate[svc] requests. */
	long long    *ring[SBX_BSVC_N];
	unsigned      head[SBX_BSVC_N], count[SBX_BSVC_N];
	struct agent *next;
};

/*
 * A run's own secret values, as a scrubber (the "scrub" op): shared by
 * the session and its connections, which may outlive it; counted under
 * P.lock.
 */
struct rscrub {
	struct sbx_scrub *sc;
	unsigned	  refs;
};

/* Its values are at most this much in all (a run's environment is). */
#define RSCRUB_MAX (8u << 20)

struct session {
	struct sbx_session ss; /* ctl, chan, agent, token (session.h) */
	struct rscrub	  *rsc; /* the run's values, or NULL */
	char		   plugin[64]; /* sbx plugin run's, or "" */
	json_t		  *secrets; /* with plugin: {name: digest} */
};

/* One connection handed to libmicrohttpd. */
struct conn {
	struct agent *ag;
	char	      token[SBX_TOKEN_LEN + 1];
	char	      plugin[64]; /* the session's */
	json_t	     *secrets; /* the session's (a copy) */
	struct rscrub *rsc; /* the session's, or NULL */
	int	      fd;
	ino_t	      ino;
	long long     t_start;
	int	      headers_done;
	struct conn  *prev, *next;
};

/* One request's state between libmicrohttpd's calls. */
struct rq {
	const struct sbx_bridge_route *route;
	char			       param[SBX_BRIDGE_NAME_MAX + 1];
	struct sbx_buf		       body;
	int			       too_large, answered;
};

static struct {
	int				rootfd, lfd, ep;
	const struct sbx_bridge_config *cfg;
	struct MHD_Daemon	       *d;
	pthread_mutex_t			lock; /* all below, and stores */
	struct agent		       *agents;
	struct sbx_sessions		sessions;
	struct conn		       *conns;
	struct conn		       *pending[FD_TABLE];
	unsigned			nconns;
	long long			t_idle;
	int				stop;
} P = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Answers written straight to the socket, before libmicrohttpd could. */
static const char too_large[] =
    "HTTP/1.1 413 Content Too Large\r\n"
    "Content-Type: application/json\r\nConnection: close\r\n"
    "Content-Length: 71\r\n\r\n"
    "{\"error\":{\"code\":\"body_too_large\",\"message\":\"the body is over 8 MiB\"}}\n";

static const char busy[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json\r\nConnection: close\r\n"
    "Retry-After: 1\r\nContent-Length: 80\r\n\r\n"
    "{\"error\":{\"code\":\"too_many_connections\",\"message\":\"too many "
    "open connections\"}}\n";

/* ---- a run's scrubber (under P.lock) ------------------------------------ */

static void
rscrub_put(struct rscrub *r)
{
	if (r == NULL || --r->refs > 0)
		return;
	sbx_scrub_free(r->sc); /* its values wiped */
	free(r);
}

/* ---- agents and rate limits (under P.lock) ------------------------------ */

static struct agent *
agent_get(const char *name)
{
	struct agent *a;
	int	      i;

	for (a = P.agents; a != NULL; a = a->next)
		if (strcmp(a->name, name) == 0)
			return a;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	snprintf(a->name, sizeof(a->name), "%s", name);
	for (i = 0; i < SBX_BSVC_N; i++)
		if ((a->ring[i] = calloc(P.cfg->rate[i], sizeof(long long))) ==
		    NULL) {
			while (i-- > 0)
				free(a->ring[i]);
			free(a);
			return NULL;
		}
	a->next = P.agents;
	P.agents = a;
	return a;
}

/* 0: allowed (counted); else the seconds until the oldest request of
 * the window leaves it. */
static unsigned
rate_take(struct agent *a, enum sbx_bridge_svc svc)
{
	unsigned  max = P.cfg->rate[svc], oldest;
	long long t = sbx_now_ms(), age;

	if (a->count[svc] == max) {
		oldest = a->head[svc]; /* the next slot is the oldest */
		age = t - a->ring[svc][oldest];
		if (age < 60000)
			return (unsigned)((60000 - age + 999) / 1000);
	} else
		a->count[svc]++;
	a->ring[svc][a->head[svc]] = t;
	a->head[svc] = (a->head[svc] + 1) % max;
	return 0;
}

/* ---- responses ---------------------------------------------------------- */

static enum MHD_Result
respond_json(struct MHD_Connection *c, unsigned status, json_t *doc,
    int close_conn, unsigned retry_after)
{
	struct MHD_Response *r;
	enum MHD_Result	     ret;
	char		    *s, n[16];

	s = doc != NULL ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(doc);
	if (s == NULL && (s = strdup("{}")) == NULL)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(s), s,
	    MHD_RESPMEM_MUST_FREE);
	if (r == NULL) {
		free(s);
		return MHD_NO;
	}
	MHD_add_response_header(r, "Content-Type", "application/json");
	if (close_conn)
		MHD_add_response_header(r, "Connection", "close");
	if (retry_after > 0) {
		snprintf(n, sizeof(n), "%u", retry_after);
		MHD_add_response_header(r, "Retry-After", n);
	}
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result
respond_err(struct MHD_Connection *c, unsigned status, const char *code,
    const char *msg, int close_conn)
{
	return respond_json(c, status,
	    json_pack("{s:{s:s,s:s}}", "error", "code", code, "message", msg),
	    close_conn, 0);
}

static ssize_t
stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	int	fd = (int)(intptr_t)cls;
	ssize_t r;

	/* A thread per connection: blocking here blocks this one only. */
	while ((r = read(fd, buf, max)) == -1 && errno == EINTR)
		;
	if (r == 0)
		return MHD_CONTENT_READER_END_OF_STREAM;
	if (r < 0)
		return MHD_CONTENT_READER_END_WITH_ERROR;
	return r;
}

static void
stream_free(void *cls)
{
	close((int)(intptr_t)cls);
}

static enum MHD_Result
respond(struct MHD_Connection *c, struct sbx_bridge_resp *r)
{
	struct MHD_Response *mr;
	enum MHD_Result	     ret;

	if (r->stream_fd < 0)
		return respond_json(c, r->status, r->json, 0, r->retry_after);
	json_decref(r->json);
	mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384,
	    stream_read, (void *)(intptr_t)r->stream_fd, stream_free);
	if (mr == NULL) {
		close(r->stream_fd);
		return MHD_NO;
	}
	MHD_add_response_header(mr, "Content-Type",
	    r->content_type != NULL ? r->content_type :
				      "application/octet-stream");
	MHD_add_response_header(mr, "Cache-Control", "no-cache");
	ret = MHD_queue_response(c, r->status, mr);
	MHD_destroy_response(mr);
	return ret;
}

/* ---- requests ----------------------------------------------------------- */

struct auth_scan {
	int	    n;
	const char *value;
};

static enum MHD_Result
auth_iter(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct auth_scan *s = cls;

	if (strcasecmp(key, "Authorization") == 0) {
		s->n++;
		s->value = value;
	}
	return MHD_YES;
}

/*
 * The token must be the one of the agent whose session the connection
 * came over: exactly one Authorization header, "Bearer " and the token,
 * compared in constant time.  Two headers are refused rather than one
 * picked, so that no proxy or client library can make us read another.
 */
static int
authorized(struct MHD_Connection *c, const struct conn *cn)
{
	struct auth_scan s = { 0, NULL };
	const char	*t;

	MHD_get_connection_values(c, MHD_HEADER_KIND, auth_iter, &s);
	if (s.n != 1 || s.value == NULL || strncmp(s.value, "Bearer ", 7) != 0)
		return 0;
	t = s.value + 7;
	return sbx_bridge_token_eq(t, strlen(t), cn->token, strlen(cn->token));
}

struct claim_scan {
	const char *plugin;
	int	    bad;
};

static enum MHD_Result
claim_iter(void *cls, enum MHD_ValueKind kind, const char *key,
    const char *value)
{
	struct claim_scan *s = cls;

	if (strcasecmp(key, "X-Sbx-Plugin") == 0 &&
	    (s->plugin[0] == '\0' || strcmp(value, s->plugin) != 0))
		s->bad = 1;
	return MHD_YES;
}

/*
 * Which plugin asks is the session's (`sbx plugin run` opens it with the
 * plugin's id), never what the sandbox writes: any code in any run could
 * write X-Sbx-Plugin.  The header is still accepted when it says what the
 * session says (sbx-host --plugin), and refused when it says anything
 * else, in every copy, rather than ignored: a client that believes it
 * speaks for a plugin learns that it does not.
 */
static int
plugin_claim_ok(struct MHD_Connection *c, const struct conn *cn)
{
	struct claim_scan s = { cn->plugin, 0 };

	MHD_get_connection_values(c, MHD_HEADER_KIND, claim_iter, &s);
	return !s.bad;
}

static int
has_body(struct MHD_Connection *c, unsigned long long *clen, int *bad)
{
	const char *v, *te;
	char	   *end;

	*bad = 0;
	*clen = 0;
	te = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
	    "Transfer-Encoding");
	v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
	if (v != NULL) {
		errno = 0;
		*clen = strtoull(v, &end, 10);
		if (*v < '0' || *v > '9' || *end != '\0' || errno != 0)
			*bad = 1;
	}
	return te != NULL || *clen > 0;
}

static void
run_handler(const struct sbx_bridge_route *rt, struct conn *cn,
    struct MHD_Connection *c, struct rq *q, json_t *body,
    struct sbx_bridge_resp *r)
{
	struct sbx_bridge_req req;

	memset(&req, 0, sizeof(req));
	req.rootfd = P.rootfd;
	req.agent = cn->ag->name;
	/* The session's plugin, never a header (plugin_claim). */
	req.plugin = cn->plugin[0] != '\0' ? cn->plugin : NULL;
	req.secrets = cn->secrets;
	req.method = rt->method;
	req.param = (rt->flags & SBX_BR_PARAM) ? q->param : NULL;
	req.query_since =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "since");
	req.query_limit =
	    MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit");
	req.body = body;
	req.cfg = P.cfg;
	/* Inference waits on the network, unlocked; the stores are
	 * serialized. */
	if (rt->svc == SBX_BSVC_INFERENCE) {
		rt->fn(&req, r);
		return;
	}
	pthread_mutex_lock(&P.lock);
	sbx_bstore_run_scrubber(cn->rsc != NULL ? cn->rsc->sc : NULL);
	rt->fn(&req, r);
	sbx_bstore_run_scrubber(NULL);
	pthread_mutex_unlock(&P.lock);
}

/* The first call: the head is complete, nothing of the body was read. */
static enum MHD_Result
begin(struct MHD_Connection *c, struct conn *cn, const char *url,
    const char *method, void **con_cls)
{
	const struct sbx_bridge_route *rt;
	struct rq		      *q;
	unsigned long long	       clen;
	unsigned		       status = 404, wait;
	int			       body, bad;
	char			       param[SBX_BRIDGE_NAME_MAX + 1];

	pthread_mutex_lock(&P.lock);
	cn->headers_done = 1;
	pthread_mutex_unlock(&P.lock);
	body = has_body(c, &clen, &bad);
	/* Who first: nothing else is said to a caller without the token. */
	if (!authorized(c, cn))
		return respond_err(c, 401, "unauthorized",
		    "a valid "
		    "`Authorization: Bearer TOKEN` header (the agent's token, "
		    "$SBX_BRIDGE_TOKEN) is required",
		    body);
	if (!plugin_claim_ok(c, cn))
		return respond_err(c, 403, "plugin_not_in_session",
		    "X-Sbx-Plugin does not name this run's plugin: a plugin "
		    "is the run's (`sbx plugin run`), never a header", body);
	if (bad)
		return respond_err(c, 400, "bad_length",
		    "malformed "
		    "Content-Length",
		    1);
	if (clen > SBX_BRIDGE_BODY_MAX)
		return respond_err(c, 413, "body_too_large",
		    "the body is "
		    "over 8 MiB",
		    1);
	if ((rt = sbx_bridge_route_find(method, url, param, &status)) == NULL)
		return respond_err(c, status,
		    status == 400     ? "bad_name" :
			status == 405 ? "method_not_allowed" :
					"no_such_route",
		    status == 400 ?
			"a name in the path is empty, too long, "
			"`.`/`..`, or holds `/`, NUL or a control character" :
			status == 405 ? "this path does not take that method" :
					"no such route",
		    body);
	pthread_mutex_lock(&P.lock);
	wait = rate_take(cn->ag, rt->svc);
	pthread_mutex_unlock(&P.lock);
	if (wait > 0) {
		json_t *doc = json_pack("{s:{s:s,s:s}}", "error", "code",
		    "rate_limited", "message",
		    "too many requests for this "
		    "service; retry later");

		json_object_set_new(json_object_get(doc, "error"), "service",
		    json_string(sbx_bridge_svc_names[rt->svc]));
		return respond_json(c, 429, doc, body, wait);
	}
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return MHD_NO;
	q->route = rt;
	memcpy(q->param, param, sizeof(param));
	*con_cls = q;
	return MHD_YES;
}

static enum MHD_Result
on_request(void *cls, struct MHD_Connection *c, const char *url,
    const char *method, const char *version, const char *upload_data,
    size_t *upload_data_size, void **con_cls)
{
	const union MHD_ConnectionInfo *ci;
	struct conn		       *cn;
	struct rq		       *q = *con_cls;
	struct sbx_bridge_resp		r;
	struct sbx_error		e = { 0 };
	json_t			       *body = NULL;

	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	cn = ci != NULL ? ci->socket_context : NULL;
	/* No identity, no answer (a connection that did not come over a
	 * session; cannot happen, fails closed if it does). */
	if (cn == NULL)
		return MHD_NO;
	if (q == NULL)
		return begin(c, cn, url, method, con_cls);
	if (q->answered)
		return MHD_YES;
	if (*upload_data_size > 0) {
		/* A chunked body is counted as it comes: past the cap, 413
		 * and the connection closed, the rest never read. */
		if (q->body.len + *upload_data_size > SBX_BRIDGE_BODY_MAX) {
			/*
			 * libmicrohttpd cannot answer in the middle of an
			 * upload: the 413 is written here, in this
			 * connection's own thread, our side shut, and the
			 * connection dropped.  The client reads the answer
			 * before it sees the end.
			 */
			(void)!send(cn->fd, too_large, sizeof(too_large) - 1,
			    MSG_NOSIGNAL);
			(void)shutdown(cn->fd, SHUT_WR);
			return MHD_NO;
		}
		if (sbx_buf_append(&q->body, upload_data, *upload_data_size) ==
		    -1)
			return MHD_NO;
		*upload_data_size = 0;
		return MHD_YES;
	}
	q->answered = 1;
	memset(&r, 0, sizeof(r));
	r.stream_fd = -1;
	if (q->route->flags & SBX_BR_BODY) {
		body = sbx_json_parse(q->body.p != NULL ? q->body.p : "",
		    q->body.len, SBX_BRIDGE_BODY_MAX, &e);
		if (body == NULL)
			return respond_err(c, 400, "bad_json", e.message, 0);
	} else if (q->route->flags & SBX_BR_VALUE) {
		json_error_t je;

		/* Any JSON value, as strictly: duplicate keys refused;
		 * jansson bounds the nesting depth and refuses integers it
		 * cannot hold. */
		body = json_loadb(q->body.p != NULL ? q->body.p : "",
		    q->body.len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
		if (body == NULL)
			return respond_err(c, 400, "bad_json", je.text, 0);
	}
	run_handler(q->route, cn, c, q, body, &r);
	json_decref(body);
	if (r.status == 0) {
		json_decref(r.json);
		return respond_err(c, 500, "internal", "no answer", 0);
	}
	return respond(c, &r);
}

static void
on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
    enum MHD_RequestTerminationCode toe)
{
	struct rq *q = *con_cls;

	if (q == NULL)
		return;
	sbx_buf_release(&q->body);
	free(q);
	*con_cls = NULL;
}

static void
on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
    enum MHD_ConnectionNotificationCode toe)
{
	const union MHD_ConnectionInfo *ci;
	struct conn		       *cn;
	int				fd;

	pthread_mutex_lock(&P.lock);
	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		ci = MHD_get_connection_info(c,
		    MHD_CONNECTION_INFO_CONNECTION_FD);
		fd = ci != NULL ? ci->connect_fd : -1;
		if (fd >= 0 && fd < FD_TABLE && (cn = P.pending[fd]) != NULL) {
			P.pending[fd] = NULL;
			*socket_context = cn;
			cn->next = P.conns;
			if (P.conns != NULL)
				P.conns->prev = cn;
			P.conns = cn;
		}
	} else if ((cn = *socket_context) != NULL) {
		SBX_DLIST_UNLINK(P.conns, cn);
		cn->ag->nconns--;
		P.nconns--;
		if (P.nconns == 0)
			P.t_idle = sbx_now_ms();
		explicit_bzero(cn->token, sizeof(cn->token));
		json_decref(cn->secrets);
		rscrub_put(cn->rsc);
		free(cn);
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&P.lock);
}

/* libmicrohttpd decodes %HH in the path before routing; we route on the
 * raw path and decode each {name} ourselves (bridgeapi.c), so that an
 * encoded `/` or NUL cannot change what was routed. */
static size_t
no_unescape(void *cls, struct MHD_Connection *c, char *s)
{
	return strlen(s);
}

/* ---- sessions ----------------------------------------------------------- */

/* The session after s in the daemon's list, the first after NULL (a
 * struct session begins with its struct sbx_session). */
static struct session *
session_next(const struct session *s)
{
	return (struct session *)(void *)(s != NULL ? s->ss.next :
	    P.sessions.head);
}

static void
session_free(struct session *s)
{
	sbx_session_close(&P.sessions, &s->ss, P.ep);
	json_decref(s->secrets);
	pthread_mutex_lock(&P.lock);
	rscrub_put(s->rsc);
	pthread_mutex_unlock(&P.lock);
	free(s);
	if (P.sessions.n == 0 && P.nconns == 0)
		P.t_idle = sbx_now_ms();
}

/*
 * A session of `sbx plugin run` names its plugin, and the digests of the
 * secret values its run holds (lib/exec/exec.c, bridge_session): a
 * session without a plugin is given no secret at all.  Only sbx itself
 * opens sessions (the control socket is 0600, its peer's uid checked);
 * the sandbox never reaches it.
 */
static int
session_plugin(struct session *s, json_t *req, struct sbx_error *e)
{
	const json_t *pl = json_object_get(req, "plugin"),
		     *sec = json_object_get(req, "secrets"), *v;
	const char   *k;

	if (pl == NULL && sec == NULL)
		return 0;
	if (!json_is_string(pl) || sbx_names_agent_valid(json_string_value(pl),
	    "plugin", e) == -1)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "plugin",
		    "bad_plugin", "a session's plugin must be a plugin id");
	if (sec != NULL && !json_is_object(sec))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "secrets",
		    "bad_secrets", "a session's secrets are {name: digest}");
	/* A digest, or a bound secret's placeholder (credrule.h). */
	json_object_foreach ((json_t *)sec, k, v)
		if (!json_is_string(v) || (strlen(json_string_value(v)) !=
		    SBX_SECRET_DIGEST_HEX && (strncmp(json_string_value(v),
		    SBX_CRED_PREFIX, strlen(SBX_CRED_PREFIX)) != 0 ||
		    strlen(json_string_value(v)) > SBX_CRED_PLACEHOLDER_MAX)))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "secrets",
			    "bad_secrets", "a session's secrets are {name: "
			    "digest or placeholder}");
	snprintf(s->plugin, sizeof(s->plugin), "%s", json_string_value(pl));
	s->secrets = sec != NULL ? json_deep_copy(sec) : json_object();
	return s->secrets != NULL ? 0 : sbx_error_sys(e, "nomem", "session");
}

/* The agent's token, read when the session opens (session.h). */
static int
session_open(struct session *s, json_t *req, int chan, struct sbx_error *e)
{
	const char	  *agent;
	struct epoll_event ev;

	if ((agent = sbx_session_agent(req, chan, e)) == NULL ||
	    sbx_session_token(P.rootfd, agent, s->ss.token, e) == -1 ||
	    session_plugin(s, req, e) == -1)
		return -1;
	snprintf(s->ss.agent, sizeof(s->ss.agent), "%s", agent);
	(void)fcntl(chan, F_SETFL, fcntl(chan, F_GETFL) | O_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.u64 = ((uint64_t)2 << 32) | (uint32_t)chan;
	if (epoll_ctl(P.ep, EPOLL_CTL_ADD, chan, &ev) == -1)
		return sbx_error_sys(e, "epoll", "cannot watch the channel");
	s->ss.chan = chan;
	return 0;
}

/* A connection from the sandbox, for s's agent. */
static void
conn_add(struct session *s, int fd)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct stat	   st;
	struct agent	  *a;
	struct conn	  *cn;

	/* Only stream sockets are served; anything else is closed. */
	if (fd >= FD_TABLE || !sbx_session_stream_ok(fd, 0) ||
	    fstat(fd, &st) == -1) {
		close(fd);
		return;
	}
	pthread_mutex_lock(&P.lock);
	a = agent_get(s->ss.agent);
	/* Caps per agent and in all: one agent's thousand idle connections
	 * must not starve another's. */
	if (a == NULL || a->nconns >= P.cfg->max_conns_agent ||
	    P.nconns >= P.cfg->max_conns ||
	    (cn = calloc(1, sizeof(*cn))) == NULL) {
		pthread_mutex_unlock(&P.lock);
		(void)!send(fd, busy, sizeof(busy) - 1,
		    MSG_DONTWAIT | MSG_NOSIGNAL);
		close(fd);
		return;
	}
	cn->ag = a;
	memcpy(cn->token, s->ss.token, sizeof(cn->token));
	memcpy(cn->plugin, s->plugin, sizeof(cn->plugin));
	/* A copy: the connection may outlive the session, in another
	 * thread. */
	if (s->secrets != NULL && (cn->secrets = json_deep_copy(s->secrets)) ==
	    NULL) {
		pthread_mutex_unlock(&P.lock);
		free(cn);
		close(fd);
		return;
	}
	if ((cn->rsc = s->rsc) != NULL)
		cn->rsc->refs++;
	cn->fd = fd;
	cn->ino = st.st_ino;
	cn->t_start = sbx_now_ms();
	a->nconns++;
	P.nconns++;
	P.pending[fd] = cn;
	pthread_mutex_unlock(&P.lock);
	if (MHD_add_connection(P.d, fd, (struct sockaddr *)&sun,
		sizeof(sun.sun_family)) != MHD_YES) {
		/* libmicrohttpd closed it. */
		pthread_mutex_lock(&P.lock);
		if (P.pending[fd] == cn) {
			P.pending[fd] = NULL;
			a->nconns--;
			P.nconns--;
			explicit_bzero(cn->token, sizeof(cn->token));
			json_decref(cn->secrets);
			rscrub_put(cn->rsc);
			free(cn);
		}
		pthread_mutex_unlock(&P.lock);
	}
}

static void
chan_read(struct session *s)
{
	char	b[16];
	int	fds[8];
	size_t	nfd, i;
	ssize_t r;

	for (;;) {
		r = sbx_fs_recv_fds(s->ss.chan, b, sizeof(b), fds, 8, &nfd,
		    MSG_DONTWAIT);
		if (r == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r <= 0) {
			/* The sandbox is gone: so is the channel.  The
			 * session ends when sbx exec closes its control. */
			for (i = 0; r == 0 && i < nfd; i++)
				close(fds[i]);
			epoll_ctl(P.ep, EPOLL_CTL_DEL, s->ss.chan, NULL);
			close(s->ss.chan);
			s->ss.chan = -1;
			return;
		}
		for (i = 0; i < nfd; i++)
			conn_add(s, fds[i]);
	}
}

/*
 * The "scrub" op: after its session, the run (sbx exec, the same uid: the
 * control socket is 0600 and its peer checked) passes a memfd of its
 * secret values, "NAME=VALUE" each NUL-terminated, so that the records it
 * sends are scrubbed of them even when this process cannot open the
 * agent's store itself (sealed with a passphrase, or a key file named in
 * the caller's environment).  Read once, wiped, closed.
 */
static int
session_scrub(struct session *s, int fd, struct sbx_error *e)
{
	struct stat    st;
	struct rscrub *r;
	char	      *buf, *p, *end, *eq, *nul;
	char	       name[SBX_SECRET_NAME_MAX + 1];
	ssize_t	       n;
	size_t	       got = 0;

	if (fd < 0 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size <= 0 || st.st_size > (off_t)RSCRUB_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "fd", "bad_scrub",
		    "scrub takes a memfd of the run's values");
	if ((buf = malloc((size_t)st.st_size)) == NULL)
		return sbx_error_sys(e, "nomem", "scrub");
	while (got < (size_t)st.st_size &&
	    ((n = pread(fd, buf + got, (size_t)st.st_size - got,
		 (off_t)got)) > 0 || (n == -1 && errno == EINTR)))
		if (n > 0)
			got += (size_t)n;
	if ((r = calloc(1, sizeof(*r))) == NULL ||
	    (r->sc = sbx_scrub_new()) == NULL) {
		free(r);
		explicit_bzero(buf, got);
		free(buf);
		return sbx_error_sys(e, "nomem", "scrub");
	}
	r->refs = 1;
	for (p = buf, end = buf + got; p < end; p = nul + 1) {
		if ((nul = memchr(p, '\0', (size_t)(end - p))) == NULL)
			nul = end;
		if ((eq = memchr(p, '=', (size_t)(nul - p))) != NULL &&
		    (size_t)(eq - p) < sizeof(name)) {
			memcpy(name, p, (size_t)(eq - p));
			name[eq - p] = '\0';
			if (sbx_scrub_add(r->sc, name, eq + 1,
			    (size_t)(nul - eq - 1)) == -1)
				break;
		}
	}
	explicit_bzero(buf, got);
	free(buf);
	pthread_mutex_lock(&P.lock);
	rscrub_put(s->rsc);
	s->rsc = r;
	pthread_mutex_unlock(&P.lock);
	return 0;
}

static void
ctl_line(struct session *s, char *line, int fd_in)
{
	struct sbx_error e = { 0 };
	json_t		*req;
	const char	*op;

	if ((req = sbx_session_request(line, CTL_LINE_MAX, &op, &e)) == NULL) {
		if (fd_in >= 0)
			close(fd_in);
		sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
		session_free(s);
		return;
	}
	if (strcmp(op, "session") == 0 && s->ss.chan < 0 &&
	    s->ss.agent[0] == '\0') {
		if (session_open(s, req, fd_in, &e) == -1) {
			if (fd_in >= 0)
				close(fd_in);
			sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
			json_decref(req);
			session_free(s);
			return;
		}
		sbx_session_answer(s->ss.ctl, json_pack("{s:b}", "ok", 1));
		json_decref(req);
		return;
	}
	if (strcmp(op, "scrub") == 0 && s->ss.agent[0] != '\0' &&
	    s->rsc == NULL) {
		if (session_scrub(s, fd_in, &e) == -1) {
			if (fd_in >= 0)
				close(fd_in);
			sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
			json_decref(req);
			session_free(s);
			return;
		}
		close(fd_in);
		sbx_session_answer(s->ss.ctl, json_pack("{s:b}", "ok", 1));
		json_decref(req);
		return;
	}
	if (fd_in >= 0)
		close(fd_in);
	if (strcmp(op, "status") == 0) {
		pthread_mutex_lock(&P.lock);
		sbx_session_answer(s->ss.ctl,
		    json_pack("{s:b,s:i,s:i,s:i}", "ok", 1, "pid",
			(int)getpid(), "sessions", (int)P.sessions.n - 1,
			"connections", (int)P.nconns));
		pthread_mutex_unlock(&P.lock);
	} else if (strcmp(op, "stop") == 0) {
		sbx_session_answer(s->ss.ctl, json_pack("{s:b}", "ok", 1));
		P.stop = 1;
	} else if (strcmp(op, "end") == 0) {
		sbx_session_answer(s->ss.ctl, json_pack("{s:b}", "ok", 1));
	} else {
		sbx_session_unknown_op(&e);
		sbx_session_answer(s->ss.ctl, sbx_session_error(&e));
	}
	json_decref(req);
	session_free(s);
}

static void
ctl_read(struct session *s)
{
	int fd;

	/* After its session, a control connection may pass one descriptor
	 * more (the scrub op's), and no other.  A line and its newline fit
	 * in CTL_LINE_MAX - 1 bytes. */
	switch (sbx_session_read(&s->ss, CTL_LINE_MAX - 1,
	    s->ss.agent[0] == '\0' || s->rsc == NULL, &fd)) {
	case -1:
		/* The run is over (or the client is abusive). */
		session_free(s);
		break;
	case 1:
		ctl_line(s, s->ss.line, fd);
		break;
	}
}

static void
listen_accept(void)
{
	struct epoll_event	 ev;
	struct session		*s;

	while ((s = sbx_session_accept(&P.sessions, P.lfd, sizeof(*s))) !=
	    NULL) {
		ev.events = EPOLLIN;
		ev.data.u64 = ((uint64_t)1 << 32) | (uint32_t)s->ss.ctl;
		if (epoll_ctl(P.ep, EPOLL_CTL_ADD, s->ss.ctl, &ev) == -1) {
			sbx_session_close(&P.sessions, &s->ss, P.ep);
			free(s);
		}
	}
}

static struct session *
session_by_fd(int fd, int chan)
{
	struct session *s;

	for (s = session_next(NULL); s != NULL; s = session_next(s))
		if ((chan ? s->ss.chan : s->ss.ctl) == fd)
			return s;
	return NULL;
}

/* Heads that take too long (slowloris) are shut down; libmicrohttpd's
 * thread then sees the end and lets the connection go. */
static void
sweep(void)
{
	struct conn *cn;
	struct stat  st;
	long long    t = sbx_now_ms();

	pthread_mutex_lock(&P.lock);
	for (cn = P.conns; cn != NULL; cn = cn->next)
		if (!cn->headers_done &&
		    t - cn->t_start > P.cfg->header_timeout_ms &&
		    fstat(cn->fd, &st) == 0 && st.st_ino == cn->ino)
			(void)shutdown(cn->fd, SHUT_RDWR);
	pthread_mutex_unlock(&P.lock);
}

int
sbx_bridge_serve(int rootfd, int listen_fd, const struct sbx_bridge_config *cfg,
    struct sbx_error *e)
{
	struct epoll_event evs[32], ev;
	struct session	  *s;
	long long	   t;
	unsigned	   nc;
	int		   n, i, kind, fd;

	P.rootfd = rootfd;
	P.lfd = listen_fd;
	P.cfg = cfg;
	signal(SIGPIPE, SIG_IGN);
	sbx_bridge_inference_init();
	P.d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_THREAD_PER_CONNECTION | MHD_USE_NO_LISTEN_SOCKET |
		MHD_USE_ITC,
	    0, NULL, NULL, on_request, NULL, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
	    (size_t)SBX_BRIDGE_HEAD_MAX, MHD_OPTION_STRICT_FOR_CLIENT, (int)1,
	    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)cfg->idle_timeout_s,
	    MHD_OPTION_CONNECTION_LIMIT, (unsigned)cfg->max_conns + 8,
	    MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
	    MHD_OPTION_NOTIFY_CONNECTION, on_connection, NULL,
	    MHD_OPTION_UNESCAPE_CALLBACK, no_unescape, NULL,
	    MHD_OPTION_THREAD_STACK_SIZE, (size_t)(256u << 10), MHD_OPTION_END);
	if (P.d == NULL)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "mhd_start",
		    "libmicrohttpd did not start");
	if ((P.ep = epoll_create1(EPOLL_CLOEXEC)) == -1) {
		MHD_stop_daemon(P.d);
		return sbx_error_sys(e, "epoll", "epoll_create1");
	}
	(void)fcntl(listen_fd, F_SETFL, fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
	ev.events = EPOLLIN;
	ev.data.u64 = (uint32_t)listen_fd;
	epoll_ctl(P.ep, EPOLL_CTL_ADD, listen_fd, &ev);
	P.t_idle = sbx_now_ms();
	while (!P.stop) {
		t = sbx_now_ms();
		pthread_mutex_lock(&P.lock);
		nc = P.nconns;
		pthread_mutex_unlock(&P.lock);
		if (nc == 0 && P.sessions.n == 0 &&
		    t - P.t_idle >= cfg->idle_exit_ms)
			break;
		n = epoll_wait(P.ep, evs, 32, 250);
		for (i = 0; i < n; i++) {
			kind = (int)(evs[i].data.u64 >> 32);
			fd = (int)(uint32_t)evs[i].data.u64;
			if (kind == 0) {
				listen_accept();
				continue;
			}
			if ((s = session_by_fd(fd, kind == 2)) == NULL)
				continue;
			if (kind == 1)
				ctl_read(s);
			else
				chan_read(s);
		}
		sweep();
	}
	/* A stop asked for: each run's sbx exec is told, so that it does
	 * not start the bridge again (session.h). */
	if (P.stop)
		for (s = session_next(NULL); s != NULL; s = session_next(s))
			if (s->ss.chan >= 0)
				sbx_session_stopping(&s->ss);
	while ((s = session_next(NULL)) != NULL)
		session_free(s);
	MHD_stop_daemon(P.d);
	close(P.ep);
	return 0;
}
