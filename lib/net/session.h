/* session.h: a session on a daemon's control socket, the one protocol of
 * sbx-proxy (run/proxy.sock) and sbx-bridge (run/bridge.sock).
 *
 * A control client (sbx exec, sbx proxy/bridge status and stop, sbx proxy
 * asks) is our own uid: the socket is 0600 and the peer's uid is checked
 * (daemon.h).  It writes one JSON object a line, {"op": ...}, and reads
 * one line back: {"ok":true, ...}, or {"ok":false,"kind","reason",
 * "message"}.  `session` ({"agent": A, ...}, with one descriptor passed
 * with its line: a SOCK_SEQPACKET channel whose far end sbx-init holds)
 * binds the control connection to an agent, whose token the daemon reads
 * then; from then on every connection sbx-init hands over that channel is
 * the agent's, whatever it says.  The ops beyond `session` are each
 * daemon's (status, stop, end; the proxy's asks and answer; the bridge's
 * scrub), as is what a session holds beyond this common part.
 */
#ifndef SBX_SESSION_H
#define SBX_SESSION_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

#include "error.h"
#include "names.h"
#include "token.h"

/* The common part of a daemon's session; the daemon's own struct begins
 * with it (sbx_session_accept allocates the whole). */
struct sbx_session {
	int		 ctl;	/* the control connection */
	int		 chan;	/* the channel: -1 until the session opens */
	int		 fd_in;	/* received; its line not yet complete */
	char		 agent[SBX_AGENT_MAX + 1];	/* "" until then */
	char		 token[SBX_TOKEN_LEN + 1];	/* the agent's */
	char		*line;	/* the request line being read */
	size_t		 len;
	long long	 t_open;
	struct sbx_session *prev, *next;	/* in the daemon's list */
};

/* A daemon's sessions, newest first. */
struct sbx_sessions {
	struct sbx_session	*head;
	unsigned		 n;
};

/* The next connection on the listening control socket lfd (peer checked,
 * sbx_daemon_accept) as a new session of size bytes (zeroed but for the
 * common part) at the head of l, or NULL when none is pending. */
void	*sbx_session_accept(struct sbx_sessions *l, int lfd, size_t size);
/* The session out of l, and what its common part holds released: ctl
 * and chan out of the daemon's epoll set ep and closed, the descriptor
 * held closed, the token wiped, the line freed.  The memory is the
 * daemon's to free. */
void	 sbx_session_close(struct sbx_sessions *l, struct sbx_session *,
	    int ep);

/*
 * Read what the control connection has.  1: a line is complete, in
 * s->line (NUL-terminated, the newline and any bytes after it dropped),
 * with *fd the descriptor that came with it or -1; 0: more is to come;
 * -1: the session is over (the peer closed or failed, the line is longer
 * than max bytes with its newline, or a descriptor came that was not
 * wanted: fd_ok 0, or one already held).
 */
int	 sbx_session_read(struct sbx_session *, size_t max, int fd_ok,
	    int *fd);
/* A request line (at most max bytes): the object, with *op its "op"
 * (borrowed).  NULL with invalid_args: malformed_json, not_an_object,
 * too_large (field input, sbx_json_parse), or bad_op (no string op). */
json_t	*sbx_session_request(const char *line, size_t max, const char **op,
	    struct sbx_error *);
/* The error of an op that this daemon does not have, or not now: -1. */
int	 sbx_session_unknown_op(struct sbx_error *);
/* Answer one line on fd (o stolen).  The peer waits for it; one that
 * does not read is dropped rather than waited for. */
void	 sbx_session_answer(int fd, json_t *o);
/* A failure as the protocol answers it. */
json_t	*sbx_session_error(const struct sbx_error *);
/* The session's agent (borrowed from req) when it names a valid one and
 * chan is a SOCK_SEQPACKET socket; NULL with invalid_args otherwise. */
const char *sbx_session_agent(const json_t *req, int chan,
	    struct sbx_error *);
/* The agent's token (run/tokens/A), read now: a run that started before
 * `sbx provision` rotated it keeps the one it was given.  0, or -1
 * (rejected, bad_token, when the file holds no valid token). */
int	 sbx_session_token(int rootfd, const char *agent,
	    char token[SBX_TOKEN_LEN + 1], struct sbx_error *);
/* Is fd a stream socket (with inet: TCP over IPv4 or IPv6)?  What the
 * sandbox passes over a channel is served only then. */
int	 sbx_session_stream_ok(int fd, int inet);
/* A stop asked for: tell the run's sbx exec (SBX_DAEMON_STOPPING), which
 * would take the end of its session for a crash and start the daemon
 * again otherwise. */
void	 sbx_session_stopping(const struct sbx_session *);

#endif
