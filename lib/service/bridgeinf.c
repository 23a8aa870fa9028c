/*
 * bridgeinf.c: POST /v1/inference/chat, forwarded with libcurl to the
 * OpenAI-compatible endpoint of config/sandbox.json (bridge.inference:
 * url, key_agent and key_secret naming the API key in a host-side secret
 * store, timeout_s, tokens_per_day).  Off unless a url is set.
 *
 * The sandbox never sees the key: it is read from the store for each
 * request and goes only into the upstream request's Authorization header.
 * Only the fields below are forwarded (the sandbox cannot set headers or
 * a URL), no redirect is followed, the whole exchange is bounded by
 * timeout_s and the answer by 8 MiB.  With "stream": true the upstream's
 * server-sent events are relayed as they come, through a pipe fed by a
 * thread of this request (libmicrohttpd gives each connection a thread).
 *
 * Budgets: requests by the rate limiter (service inference, 60 a minute by
 * default), tokens by tokens_per_day, counted from the answers' "usage"
 * (a streamed answer counts one token per event, as it carries no usage).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "bridge.h"
#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "secret.h"
#include "time.h"

#define ANSWER_MAX (8u << 20)

static pthread_mutex_t usage_lock = PTHREAD_MUTEX_INITIALIZER;

void
sbx_bridge_inference_init(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* One upstream exchange. */
struct xfer {
	CURL		  *c;
	struct curl_slist *hdrs;
	char		  *body;
	struct sbx_buf	   out; /* not streamed: the answer */
	int		   wfd; /* streamed: the pipe */
	long		   events; /* streamed: "data:" lines */
	int		   stream;
	/* Streamed: the handler waits for the status under lock. */
	pthread_mutex_t m;
	pthread_cond_t	cv;
	long		status; /* 0 until the head is in */
	int		done;
	CURLcode	rc;
	int		refs; /* handler + thread */
	char		agent[64];
	int		rootfd;
};

/* Tokens used today by agent (agents/A/bridge/usage.json), plus add. */
static long long
usage_add(int rootfd, const char *agent, long long add)
{
	struct sbx_error e = { 0 };
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 day[64], s[128];
	json_t		*doc;
	long long	 n = 0;
	int		 dfd;

	sbx_time_utc_iso(day);
	day[10] = '\0';
	pthread_mutex_lock(&usage_lock);
	if ((dfd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_BRIDGE, agent, &e)) ==
	    -1) {
		pthread_mutex_unlock(&usage_lock);
		return 0;
	}
	if (sbx_fs_read_file_at(dfd, "usage.json", 4096, &b, &e) == 0 &&
	    (doc = json_loadb(b.p, b.len, 0, NULL)) != NULL) {
		if (json_is_string(json_object_get(doc, "day")) &&
		    strcmp(json_string_value(json_object_get(doc, "day")),
			day) == 0)
			n = json_integer_value(json_object_get(doc, "tokens"));
		json_decref(doc);
	}
	sbx_buf_release(&b);
	if (add > 0) {
		n += add;
		snprintf(s, sizeof(s), "{\"day\":\"%s\",\"tokens\":%lld}\n",
		    day, n);
		(void)sbx_fs_write_atomic(dfd, "usage.json", s, strlen(s), 0600,
		    &e);
	}
	close(dfd);
	pthread_mutex_unlock(&usage_lock);
	return n;
}

static size_t
on_data(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	size_t	     len = sz * n, i;

	if (!x->stream) {
		if (x->out.len + len > ANSWER_MAX)
			return 0; /* aborts the transfer */
		return sbx_buf_append(&x->out, p, len) == 0 ? len : 0;
	}
	/* An error's body is not relayed (the handler answers 502). */
	if (x->status != 200)
		return len;
	for (i = 0; i + 5 <= len; i++)
		if (memcmp(p + i, "data:", 5) == 0 &&
		    (i == 0 || p[i - 1] == '\n'))
			x->events++;
	/* The reader gone (the sandbox hung up): stop. */
	return sbx_fs_write_all(x->wfd, p, len) == 0 ? len : 0;
}

static size_t
on_header(char *p, size_t sz, size_t n, void *arg)
{
	struct xfer *x = arg;
	long	     st = 0;

	if (sz * n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &st);
		if (st >= 200) {
			pthread_mutex_lock(&x->m);
			x->status = st;
			pthread_cond_broadcast(&x->cv);
			pthread_mutex_unlock(&x->m);
		}
	}
	return sz * n;
}

static void
xfer_unref(struct xfer *x)
{
	int last;

	pthread_mutex_lock(&x->m);
	last = --x->refs == 0;
	pthread_mutex_unlock(&x->m);
	if (!last)
		return;
	curl_easy_cleanup(x->c);
	curl_slist_free_all(x->hdrs);
	if (x->body != NULL)
		explicit_bzero(x->body, strlen(x->body));
	free(x->body);
	sbx_buf_release(&x->out);
	if (x->wfd >= 0)
		close(x->wfd);
	pthread_mutex_destroy(&x->m);
	pthread_cond_destroy(&x->cv);
	free(x);
}

static void *
stream_thread(void *arg)
{
	struct xfer *x = arg;
	CURLcode     rc;

	rc = curl_easy_perform(x->c);
	if (x->events > 0)
		(void)usage_add(x->rootfd, x->agent, x->events);
	pthread_mutex_lock(&x->m);
	x->rc = rc;
	x->done = 1;
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->m);
	/* The end of the pipe is the end of the relayed stream. */
	close(x->wfd);
	x->wfd = -1;
	xfer_unref(x);
	return NULL;
}

/* The API key, from the host-side store named in the config (never from
 * the sandbox's agent unless the config names it). */
static int
api_key_header(const struct sbx_bridge_config *cfg, int rootfd,
    struct curl_slist **hdrs, struct sbx_error *e)
{
	struct sbx_secret_store st;
	struct sbx_secret_auth	auth = { 0 };
	unsigned char	       *v = NULL;
	size_t			n = 0;
	char		       *h;

	if (cfg->inf_key_agent == NULL || cfg->inf_key_name == NULL)
		return 0;
	memset(&st, 0, sizeof(st));
	if (sbx_secret_open(&st, rootfd, cfg->inf_key_agent, 0, &auth, e) == -1)
		return -1;
	if (sbx_secret_get(&st, cfg->inf_key_name, &v, &n, e) == -1) {
		sbx_secret_close(&st);
		return -1;
	}
	sbx_secret_close(&st);
	if ((h = malloc(n + 32)) == NULL) {
		sbx_secret_free_value(v, n);
		return sbx_error_sys(e, "nomem", "key");
	}
	memcpy(h, "Authorization: Bearer ", 22);
	memcpy(h + 22, v, n);
	h[22 + n] = '\0';
	sbx_secret_free_value(v, n);
	if (strpbrk(h + 22, "\r\n") == NULL)
		*hdrs = curl_slist_append(*hdrs, h);
	explicit_bzero(h, n + 22);
	free(h);
	return 0;
}

/* What is forwarded: the model, the messages, and a few sampling knobs. */
static char *
upstream_body(const json_t *in, int stream, struct sbx_bridge_resp *r)
{
	static const char *const pass[] = { "max_tokens", "temperature",
		"top_p", "stop", "seed" };
	const json_t		*model, *msgs, *v;
	json_t			*out;
	size_t			 i;
	char			*s;

	model = json_object_get(in, "model");
	msgs = json_object_get(in, "messages");
	if (!json_is_string(model) || json_string_length(model) == 0 ||
	    json_string_length(model) > 128) {
		sbx_bridge_error(r, 400, "bad_model",
		    "`model` must be a "
		    "string of 1 to 128 bytes");
		return NULL;
	}
	if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
		sbx_bridge_error(r, 400, "bad_messages",
		    "`messages` must be "
		    "a non-empty array");
		return NULL;
	}
	out = json_pack("{s:O,s:O,s:b}", "model", model, "messages", msgs,
	    "stream", stream);
	for (i = 0; i < sizeof(pass) / sizeof(*pass); i++)
		if ((v = json_object_get(in, pass[i])) != NULL)
			json_object_set(out, pass[i], (json_t *)v);
	s = json_dumps(out, JSON_COMPACT);
	json_decref(out);
	return s;
}

static void
upstream_failed(struct sbx_bridge_resp *r, CURLcode rc, long status)
{
	if (rc == CURLE_OPERATION_TIMEDOUT)
		sbx_bridge_error(r, 504, "upstream_timeout",
		    "the model "
		    "endpoint did not answer in time");
	else if (rc != CURLE_OK)
		sbx_bridge_error(r, 502, "upstream_unreachable",
		    "the model "
		    "endpoint failed: %s",
		    curl_easy_strerror(rc));
	else
		sbx_bridge_error(r, 502, "upstream_error",
		    "the model endpoint "
		    "answered %ld",
		    status);
}

void
sbx_bridge_inference(const struct sbx_bridge_req *q, struct sbx_bridge_resp *r)
{
	const struct sbx_bridge_config *cfg = q->cfg;
	struct sbx_error		e = { 0 };
	struct xfer		       *x;
	pthread_t			th;
	pthread_attr_t			at;
	json_t			       *ans;
	int				stream, pfd[2];
	long				st = 0;
	CURLcode			rc;

	if (cfg->inf_url == NULL) {
		sbx_bridge_error(r, 503, "inference_off",
		    "inference is not "
		    "configured (bridge.inference.url in config/sandbox.json)");
		return;
	}
	if (cfg->inf_tokens_day > 0 &&
	    usage_add(q->rootfd, q->agent, 0) >= cfg->inf_tokens_day) {
		sbx_bridge_error(r, 429, "token_budget",
		    "the agent's tokens "
		    "for today are spent");
		r->retry_after = 3600;
		return;
	}
	stream = json_is_true(json_object_get(q->body, "stream"));
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		sbx_bridge_error(r, 500, "nomem", "out of memory");
		return;
	}
	x->wfd = -1;
	x->refs = 1;
	x->stream = stream;
	x->rootfd = q->rootfd;
	snprintf(x->agent, sizeof(x->agent), "%s", q->agent);
	pthread_mutex_init(&x->m, NULL);
	pthread_cond_init(&x->cv, NULL);
	if ((x->body = upstream_body(q->body, stream, r)) == NULL) {
		xfer_unref(x);
		return;
	}
	x->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	x->hdrs = curl_slist_append(x->hdrs, "Expect:");
	if (api_key_header(cfg, q->rootfd, &x->hdrs, &e) == -1) {
		sbx_bridge_error(r, 503, "inference_key",
		    "the API key is not "
		    "readable on the host: %s",
		    e.message);
		xfer_unref(x);
		return;
	}
	if ((x->c = curl_easy_init()) == NULL) {
		sbx_bridge_error(r, 500, "curl", "libcurl did not start");
		xfer_unref(x);
		return;
	}
	curl_easy_setopt(x->c, CURLOPT_URL, cfg->inf_url);
	curl_easy_setopt(x->c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(x->c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(x->c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(x->c, CURLOPT_HTTPHEADER, x->hdrs);
	curl_easy_setopt(x->c, CURLOPT_POSTFIELDS, x->body);
	curl_easy_setopt(x->c, CURLOPT_TIMEOUT, cfg->inf_timeout_s);
	curl_easy_setopt(x->c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(x->c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(x->c, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(x->c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(x->c, CURLOPT_HEADERDATA, x);
	if (!stream) {
		rc = curl_easy_perform(x->c);
		curl_easy_getinfo(x->c, CURLINFO_RESPONSE_CODE, &st);
		if (rc != CURLE_OK || st != 200) {
			upstream_failed(r, rc, st);
			xfer_unref(x);
			return;
		}
		ans = json_loadb(x->out.p != NULL ? x->out.p : "", x->out.len,
		    JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(ans)) {
			json_decref(ans);
			sbx_bridge_error(r, 502, "upstream_error",
			    "the model "
			    "endpoint's answer is not a JSON object");
			xfer_unref(x);
			return;
		}
		(void)usage_add(q->rootfd, q->agent,
		    json_integer_value(json_object_get(
			json_object_get(ans, "usage"), "total_tokens")));
		r->status = 200;
		r->json = ans;
		xfer_unref(x);
		return;
	}
	/* Streamed: the thread writes the events into a pipe that
	 * libmicrohttpd reads; we answer once the upstream's head is in. */
	if (pipe2(pfd, O_CLOEXEC) == -1) {
		sbx_bridge_error(r, 500, "pipe", "cannot make a pipe");
		xfer_unref(x);
		return;
	}
	x->wfd = pfd[1];
	x->refs = 2;
	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&at, 256u << 10);
	if (pthread_create(&th, &at, stream_thread, x) != 0) {
		pthread_attr_destroy(&at);
		close(pfd[0]);
		x->refs = 1;
		sbx_bridge_error(r, 500, "thread", "cannot start a thread");
		xfer_unref(x);
		return;
	}
	pthread_attr_destroy(&at);
	pthread_mutex_lock(&x->m);
	while (x->status == 0 && !x->done)
		pthread_cond_wait(&x->cv, &x->m);
	st = x->status;
	pthread_mutex_unlock(&x->m);
	if (st != 200) {
		/* Nothing relayed: wait for the end (bounded by timeout_s)
		 * and say why. */
		pthread_mutex_lock(&x->m);
		while (!x->done)
			pthread_cond_wait(&x->cv, &x->m);
		rc = x->rc;
		pthread_mutex_unlock(&x->m);
		close(pfd[0]);
		upstream_failed(r, rc, st);
		xfer_unref(x);
		return;
	}
	xfer_unref(x);
	r->status = 200;
	r->stream_fd = pfd[0];
	r->content_type = "text/event-stream";
}
