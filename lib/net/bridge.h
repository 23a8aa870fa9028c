/*
 * bridge.h: sbx-bridge, the host API for code inside the sandbox.
 *
 * sbx exec opens a session on run/bridge.sock (as for the proxy: one
 * SOCK_SEQPACKET channel per run, whose far end sbx-init holds); every
 * connection sbx-init accepts on /run/sbx/bridge.sock inside comes over
 * that channel and is served by libmicrohttpd as that session's agent.
 * A request is answered only when its bearer token is that agent's.
 *
 * The routes are one table (bridgeapi.c): method, path pattern, the rate
 * limit service that pays for it, and the handler.  A handler gets a
 * parsed request (the agent, the path's {name}, the JSON body) and fills
 * a response; it never sees a socket.
 */
#ifndef SBX_BRIDGE_H
#define SBX_BRIDGE_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define SBX_BRIDGE_SOCK	    "bridge.sock" /* in run/ */
#define SBX_BRIDGE_LOCK	    "bridge.lock"
#define SBX_BRIDGE_PID	    "bridge.pid"
#define SBX_BRIDGE_BODY_MAX (8u << 20) /* 413 past it */
#define SBX_BRIDGE_HEAD_MAX (16u << 10) /* 431 past it */
#define SBX_BRIDGE_NAME_MAX 128 /* a {name} or {key} */

/* Rate limit services (sliding 60 s windows, per agent). */
enum sbx_bridge_svc {
	SBX_BSVC_NONE = -1,
	SBX_BSVC_OTHER, /* 120 a minute */
	SBX_BSVC_INFERENCE, /* 60 */
	SBX_BSVC_DISPATCH, /* 10 */
	SBX_BSVC_N
};

/* The daemon's settings (config/sandbox.json "bridge"). */
struct sbx_bridge_config {
	long long idle_exit_ms; /* no session, no connection */
	long long header_timeout_ms; /* the head must be in by then */
	unsigned  idle_timeout_s; /* a quiet connection */
	unsigned  max_conns; /* in all */
	unsigned  max_conns_agent; /* per agent */
	unsigned  rate[SBX_BSVC_N]; /* per minute */
	size_t	  events_max_bytes; /* rotation of events.jsonl */
	size_t	  memory_max_entries;
	/* Inference: off unless a url is set. */
	char	 *inf_url; /* .../v1/chat/completions */
	char	 *inf_key_agent; /* secret store holding the key */
	char	 *inf_key_name; /* its name there */
	long	  inf_timeout_s; /* whole exchange */
	long long inf_tokens_day; /* per agent; 0: unlimited */
};

/* One request, as a handler sees it. */
struct sbx_bridge_req {
	int	    rootfd;
	const char *agent; /* the session's: never from headers */
	const char *plugin; /* the session's (sbx plugin run), or
					 * NULL: never from a header */
	const json_t *secrets; /* with plugin: {name: digest} of
					 * the values the run holds */
	const char *method;
	const char *param; /* the decoded {name}, or NULL */
	const char *query_since, *query_limit;
	json_t	   *body; /* parsed JSON (object; any value with
					 * SBX_BR_VALUE), or NULL */
	const struct sbx_bridge_config *cfg;
};

/*
 * What a handler answers: a status and a JSON document (stolen), or a
 * stream: stream_fd is read to EOF and relayed as it comes with
 * content_type (server-sent events).
 */
struct sbx_bridge_resp {
	unsigned    status;
	json_t	   *json;
	int	    stream_fd;
	const char *content_type;
	unsigned    retry_after; /* 429: seconds */
};

typedef void (
    *sbx_bridge_fn)(const struct sbx_bridge_req *, struct sbx_bridge_resp *);

#define SBX_BR_BODY  0x1 /* needs a JSON object body */
#define SBX_BR_PARAM 0x2 /* the pattern ends in {name} */
#define SBX_BR_VALUE 0x4 /* needs a JSON body, any value */

struct sbx_bridge_route {
	const char	   *method; /* "GET", "PUT"... */
	const char	   *prefix; /* "/v1/config/" with PARAM */
	unsigned	    flags;
	enum sbx_bridge_svc svc;
	sbx_bridge_fn	    fn;
	const char	   *what; /* for whoami */
};

/* The table (bridgeapi.c). */
const struct sbx_bridge_route *sbx_bridge_routes(size_t *n);
/*
 * The route of method and raw path (before any decoding), with the
 * decoded {name} in param (of size SBX_BRIDGE_NAME_MAX + 1).  NULL with
 * *status 404 (no such path), 405 (not that method) or 400 (a {name}
 * that is empty, too long, `.`/`..`, or decodes to a `/`, a NUL or a
 * control character).
 */
const struct sbx_bridge_route *sbx_bridge_route_find(const char *method,
    const char *path, char *param, unsigned *status);
/* An error body {"error":{"code","message"}} into r (status kept). */
void
sbx_bridge_error(struct sbx_bridge_resp *, unsigned status, const char *code,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The services' names, as in bridge.rate_limits. */
extern const char *const sbx_bridge_svc_names[SBX_BSVC_N];
/* Defaults, then config/sandbox.json's "bridge" object (bridgecfg.c). */
int  sbx_bridge_config_from(const json_t *sandbox_json,
     struct sbx_bridge_config *, struct sbx_error *);
int  sbx_bridge_config_load(int rootfd, struct sbx_bridge_config *,
     struct sbx_error *);
void sbx_bridge_config_free(struct sbx_bridge_config *);
/* sbx config's check of either file (agent: only bridge.enabled). */
int sbx_bridge_config_check(const json_t *doc, int agent, const char *origin,
    struct sbx_error *);
/* Do the agent's runs get the bridge?  The agent's bridge.enabled, else
 * the global one, else no. */
int sbx_bridge_enabled(const json_t *global, const json_t *agent);
/* Constant-time token comparison: 1 equal. */
int sbx_bridge_token_eq(const char *a, size_t alen, const char *b, size_t blen);

/* POST /v1/inference/chat (bridgeinf.c), and its one-time set-up. */
void
sbx_bridge_inference(const struct sbx_bridge_req *, struct sbx_bridge_resp *);
void sbx_bridge_inference_init(void);

/* The daemon: serve the listening control socket until idle or stopped. */
int sbx_bridge_serve(int rootfd, int listen_fd,
    const struct sbx_bridge_config *, struct sbx_error *);

#endif
