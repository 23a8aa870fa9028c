/*
 * proxyclient.c: the sbx-exec side of sbx-proxy: find (or start) the proxy
 * of this state root, open a session for a run, end it.
 *
 * Kept apart from proxy.c so that sbx-exec links no server code.
 */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "daemon.h"
#include "fsutil.h"
#include "proxy.h"
#include "proxyclient.h"

extern char **environ;

int
sbx_proxyclient_connect(int rootfd, struct sbx_error *e)
{
	return sbx_daemon_connect(rootfd, "proxy.sock", "proxy", e);
}

json_t *
sbx_proxyclient_call(int ctl, json_t *req, int fd_pass, int timeout_ms,
    struct sbx_error *e)
{
	char		*s, buf[4096];
	struct pollfd	 pfd;
	struct timespec	 t0, t1;
	size_t		 n, len = 0, cap = 0;
	ssize_t		 r;
	char		*line = NULL, *nl;
	json_t		*ans;
	json_error_t	 jerr;
	long long	 left;

	s = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(req);
	if (s == NULL)
		return sbx_error_sys(e, "nomem", "control request"), NULL;
	n = strlen(s);
	s[n] = '\n';
	r = fd_pass >= 0 ? sbx_fs_send_fd(ctl, s, n + 1, fd_pass, 0) :
	    send(ctl, s, n + 1, MSG_NOSIGNAL);
	/* A session's line may carry credential values: never left in
	 * freed memory. */
	explicit_bzero(s, n + 1);
	free(s);
	if (r != (ssize_t)(n + 1))
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
		    "proxy_unreachable", "cannot talk to the proxy"), NULL;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &t1);
		left = timeout_ms - ((t1.tv_sec - t0.tv_sec) * 1000LL +
		    (t1.tv_nsec - t0.tv_nsec) / 1000000);
		pfd.fd = ctl;
		pfd.events = POLLIN;
		if (left <= 0 || poll(&pfd, 1, (int)left) == 0) {
			free(line);
			return sbx_error_set(e, SBX_K_TIMEOUT, NULL,
			    "proxy_timeout", "the proxy did not answer"), NULL;
		}
		/*
		 * The answer's line and no byte more: on a connection that
		 * follows the asks (sbx exec --ask, sbx proxy asks
		 * --follow) the next lines are events that may already be
		 * there, and whoever follows must get them.  So peek, and
		 * take up to the end of the line only.
		 */
		r = recv(ctl, buf, sizeof(buf), MSG_PEEK);
		if (r > 0) {
			char *end = memchr(buf, '\n', (size_t)r);

			r = read(ctl, buf, end != NULL ? (size_t)(end - buf +
			    1) : (size_t)r);
		}
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			free(line);
			return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
			    "proxy_unreachable", "the proxy closed the "
			    "connection"), NULL;
		}
		if (len + (size_t)r + 1 > SBX_PROXY_LINE_MAX) {
			free(line);
			return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
			    "proxy_answer", "the proxy's answer is too long"),
			    NULL;
		}
		if (len + (size_t)r + 1 > cap) {
			char *p;

			cap = (len + (size_t)r + 1) * 2;
			if ((p = realloc(line, cap)) == NULL) {
				free(line);
				return sbx_error_sys(e, "nomem", "answer"),
				    NULL;
			}
			line = p;
		}
		memcpy(line + len, buf, (size_t)r);
		len += (size_t)r;
		line[len] = '\0';
		if ((nl = memchr(line, '\n', len)) != NULL) {
			*nl = '\0';
			break;
		}
	}
	ans = json_loads(line, JSON_REJECT_DUPLICATES, &jerr);
	free(line);
	if (!json_is_object(ans)) {
		json_decref(ans);
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "proxy_answer", "malformed answer from the proxy"), NULL;
	}
	if (!json_is_true(json_object_get(ans, "ok"))) {
		const char *kind, *reason, *msg;

		kind = json_string_value(json_object_get(ans, "kind"));
		reason = json_string_value(json_object_get(ans, "reason"));
		msg = json_string_value(json_object_get(ans, "message"));
		/* Map back to the static kind strings. */
		if (kind != NULL && strcmp(kind, SBX_K_INVALID_ARGS) == 0)
			kind = SBX_K_INVALID_ARGS;
		else if (kind != NULL && strcmp(kind, SBX_K_REJECTED) == 0)
			kind = SBX_K_REJECTED;
		else if (kind != NULL && strcmp(kind, SBX_K_NOT_FOUND) == 0)
			kind = SBX_K_NOT_FOUND;
		else
			kind = SBX_K_UNAVAILABLE;
		/* The reasons a caller acts on, kept (static strings). */
		if (reason != NULL && strcmp(reason, "no_such_ask") == 0)
			reason = "no_such_ask";
		else if (reason != NULL && strcmp(reason, "bad_answer") == 0)
			reason = "bad_answer";
		else
			reason = "proxy_refused";
		sbx_error_set(e, kind, NULL, reason, "sbx-proxy: %s",
		    msg != NULL ? msg : "refused");
		json_decref(ans);
		return NULL;
	}
	return ans;
}

int
sbx_proxyclient_ensure(int rootfd, const char *prog, const char *home,
    struct sbx_error *e)
{
	return sbx_daemon_ensure(rootfd, "proxy.sock", "proxy.lock", "proxy",
	    prog, home, e);
}

int
sbx_proxyclient_session(int ctl, const char *agent, json_t *allow,
    json_t *creds, int flags, const char *run, int *channel,
    struct sbx_error *e)
{
	int	 sp[2];
	json_t	*req, *ans;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return sbx_error_sys(e, "socketpair", "cannot create the "
		    "proxy channel");
	req = json_pack("{s:s,s:s,s:s,s:o,s:b,s:b}", "op", "session", "agent",
	    agent, "run", run, "allow", allow != NULL ? json_incref(allow) :
	    json_array(), "ask", (flags & SBX_PROXYCLIENT_ASK) != 0,
	    "allow_only", (flags & SBX_PROXYCLIENT_ALLOW_ONLY) != 0);
	/* Only a run with rules sends the key (credrule.h's form, with
	 * each rule's placeholder and value). */
	if (creds != NULL && json_array_size(creds) > 0)
		json_object_set(req, "credentials", creds);
	ans = sbx_proxyclient_call(ctl, req, sp[0], 10000, e);
	close(sp[0]);
	if (ans == NULL) {
		close(sp[1]);
		return -1;
	}
	json_decref(ans);
	*channel = sp[1];
	return 0;
}

json_t *
sbx_proxyclient_end(int ctl, struct sbx_error *e)
{
	return sbx_proxyclient_end_creds(ctl, NULL, e);
}

/* The violations of an "end" or "take" answer, and its credentials. */
static json_t *
record_of(json_t *ans, json_t **creds)
{
	json_t	*v, *c, *x;
	size_t	 i;

	v = json_object_get(ans, "violations");
	v = json_is_array(v) ? json_incref(v) : json_array();
	if (creds != NULL) {
		/* Names and hosts only, whatever else an answer holds: the
		 * list goes into envelopes. */
		*creds = json_array();
		json_array_foreach (json_object_get(ans, "credentials"), i, c) {
			if (!json_is_string(json_object_get(c, "secret")) ||
			    !json_is_string(json_object_get(c, "host")))
				continue;
			x = json_pack("{s:O,s:O}", "secret",
			    json_object_get(c, "secret"), "host",
			    json_object_get(c, "host"));
			if (json_is_integer(json_object_get(c, "port")))
				json_object_set(x, "port",
				    json_object_get(c, "port"));
			json_array_append_new(*creds, x);
		}
	}
	return v;
}

json_t *
sbx_proxyclient_end_creds(int ctl, json_t **creds, struct sbx_error *e)
{
	json_t	*ans, *v;

	ans = sbx_proxyclient_call(ctl, json_pack("{s:s}", "op", "end"), -1,
	    10000, e);
	if (ans == NULL)
		return NULL;
	v = record_of(ans, creds);
	json_decref(ans);
	return v;
}

json_t *
sbx_proxyclient_take(int rootfd, const char *agent, const char *run,
    json_t **creds, struct sbx_error *e)
{
	json_t	*ans, *v;
	int	 ctl;

	if ((ctl = sbx_proxyclient_connect(rootfd, e)) == -1)
		return NULL;
	ans = sbx_proxyclient_call(ctl, json_pack("{s:s,s:s,s:s}", "op",
	    "take", "agent", agent, "run", run), -1, 10000, e);
	close(ctl);
	if (ans == NULL)
		return NULL;
	v = record_of(ans, creds);
	json_decref(ans);
	return v;
}
