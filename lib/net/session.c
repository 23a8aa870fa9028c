/*
 * session.c: the control protocol of sbx-proxy and sbx-bridge (session.h):
 * reading a request line and its descriptor, answering, opening a session
 * (its agent, its channel, the agent's token).  The daemons keep their
 * own event loops and ops; this is what they had written twice.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "daemon.h"
#include "dlist.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "session.h"
#include "time.h"

void *
sbx_session_accept(struct sbx_sessions *l, int lfd, size_t size)
{
	struct sbx_session	*s;
	int			 fd;

	while ((fd = sbx_daemon_accept(lfd)) >= 0) {
		if ((s = calloc(1, size)) == NULL) {
			close(fd);
			continue;
		}
		s->ctl = fd;
		s->chan = -1;
		s->fd_in = -1;
		s->t_open = sbx_now_ms();
		s->next = l->head;
		if (l->head != NULL)
			l->head->prev = s;
		l->head = s;
		l->n++;
		return s;
	}
	return NULL;
}

void
sbx_session_close(struct sbx_sessions *l, struct sbx_session *s, int ep)
{
	if (s->prev != NULL || l->head == s) {
		SBX_DLIST_UNLINK(l->head, s);
		s->prev = s->next = NULL;
		l->n--;
	}
	if (s->ctl >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, s->ctl, NULL);
		close(s->ctl);
	}
	if (s->chan >= 0) {
		epoll_ctl(ep, EPOLL_CTL_DEL, s->chan, NULL);
		close(s->chan);
	}
	s->ctl = s->chan = -1;
	if (s->fd_in >= 0)
		close(s->fd_in);
	s->fd_in = -1;
	explicit_bzero(s->token, sizeof(s->token));
	free(s->line);
	s->line = NULL;
	s->len = 0;
}

int
sbx_session_read(struct sbx_session *s, size_t max, int fd_ok, int *fd)
{
	char		 data[4096], *nl, *p;
	ssize_t		 r;
	size_t		 nfd;
	int		 got;

	*fd = -1;
	r = sbx_fs_recv_fds(s->ctl, data, sizeof(data), &got, 1, &nfd,
	    MSG_DONTWAIT);
	if (r == -1 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (nfd == 1) {
		/* One descriptor per request line, and only where the
		 * daemon takes one (a session's channel, the bridge's
		 * scrub): it may come before the line's end and is kept
		 * until then.  Any other is from no client of sbx's. */
		if (!fd_ok || s->fd_in >= 0) {
			close(got);
			return -1;
		}
		s->fd_in = got;
	}
	/* The client is gone (or abusive): so is its session. */
	if (r <= 0 || s->len + (size_t)r > max ||
	    (p = realloc(s->line, s->len + (size_t)r + 1)) == NULL)
		return -1;
	s->line = p;
	memcpy(s->line + s->len, data, (size_t)r);
	s->len += (size_t)r;
	s->line[s->len] = '\0';
	if ((nl = memchr(s->line, '\n', s->len)) == NULL)
		return 0;
	*nl = '\0';
	s->len = 0;
	*fd = s->fd_in;
	s->fd_in = -1;
	return 1;
}

json_t *
sbx_session_request(const char *line, size_t max, const char **op,
    struct sbx_error *e)
{
	json_t	*req;

	*op = NULL;
	if ((req = sbx_json_parse(line, strlen(line), max, e)) == NULL)
		return NULL;
	if ((*op = json_string_value(json_object_get(req, "op"))) == NULL) {
		json_decref(req);
		sbx_error_set(e, SBX_K_INVALID_ARGS, "op", "bad_op", "no op");
		return NULL;
	}
	return req;
}

int
sbx_session_unknown_op(struct sbx_error *e)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "op", "unknown_op",
	    "unknown control operation");
}

void
sbx_session_answer(int fd, json_t *o)
{
	char	*s = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
	size_t	 n;

	json_decref(o);
	if (s == NULL)
		return;
	n = strlen(s);
	s[n] = '\n';
	/* One send, newline included: a client reading one line gets it
	 * whole.  Small; the peer waits for it.  A peer that does not read
	 * is dropped rather than waited for. */
	(void)!send(fd, s, n + 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(s);
}

json_t *
sbx_session_error(const struct sbx_error *e)
{
	return json_pack("{s:b,s:s,s:s,s:s}", "ok", 0, "kind",
	    e->kind != NULL ? e->kind : SBX_K_EXECUTION_ERROR, "reason",
	    e->reason != NULL ? e->reason : "error", "message", e->message);
}

const char *
sbx_session_agent(const json_t *req, int chan, struct sbx_error *e)
{
	const char	*agent;
	int		 type = 0;
	socklen_t	 len = sizeof(type);

	agent = json_string_value(json_object_get(req, "agent"));
	if (agent == NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "agent", "missing",
		    "session without an agent");
		return NULL;
	}
	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return NULL;
	if (chan < 0 || getsockopt(chan, SOL_SOCKET, SO_TYPE, &type, &len) ==
	    -1 || type != SOCK_SEQPACKET) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "channel", "bad_channel",
		    "a session needs a SOCK_SEQPACKET channel");
		return NULL;
	}
	return agent;
}

int
sbx_session_token(int rootfd, const char *agent,
    char token[SBX_TOKEN_LEN + 1], struct sbx_error *e)
{
	struct sbx_buf	 tok = SBX_BUF_INIT;
	char		 rel[SBX_LAYOUT_PATH_MAX];

	/* Beneath the root, never through a link, never blocking on a
	 * FIFO planted under the name (sbx_fs_read_file_at). */
	SBX_LPATH(rel, SBX_L_AGENT_TOKEN, agent);
	if (sbx_fs_read_file_at(rootfd, rel, 256, &tok, e) == -1)
		return -1;
	while (tok.len > 0 && tok.p[tok.len - 1] == '\n')
		tok.p[--tok.len] = '\0';
	if (!sbx_token_valid(tok.p, tok.len)) {
		explicit_bzero(tok.p, tok.len);
		sbx_buf_release(&tok);
		return sbx_error_set(e, SBX_K_REJECTED, "token", "bad_token",
		    "%s is not a valid token; run `sbx provision --agent %s`",
		    rel, agent);
	}
	memcpy(token, tok.p, SBX_TOKEN_LEN);
	token[SBX_TOKEN_LEN] = '\0';
	explicit_bzero(tok.p, tok.len);
	sbx_buf_release(&tok);
	return 0;
}

int
sbx_session_stream_ok(int fd, int inet)
{
	struct stat	 st;
	int		 type, dom;
	socklen_t	 len = sizeof(type);

	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) == -1 ||
	    type != SOCK_STREAM)
		return 0;
	if (!inet)
		return 1;
	len = sizeof(dom);
	return getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &len) == 0 &&
	    (dom == AF_INET || dom == AF_INET6);
}

void
sbx_session_stopping(const struct sbx_session *s)
{
	(void)!send(s->ctl, SBX_DAEMON_STOPPING "\n",
	    sizeof(SBX_DAEMON_STOPPING), MSG_NOSIGNAL | MSG_DONTWAIT);
}
