/* proxyclient.h: starting and reaching the proxy of a state root (its
 * control socket run/proxy.sock), for sbx exec and sbx proxy. */
#ifndef SBX_PROXYCLIENT_H
#define SBX_PROXYCLIENT_H

#include <jansson.h>

#include "error.h"

/* Connect to a running proxy's control socket: the fd, or -1 with kind
 * unavailable (reason not_running) when none answers. */
int	sbx_proxyclient_connect(int rootfd, struct sbx_error *);
/* One request line (steals req) and its one-line answer, read with a cap
 * and a timeout.  fd_pass >= 0 is attached to the request. */
json_t	*sbx_proxyclient_call(int ctl, json_t *req, int fd_pass, int timeout_ms,
	    struct sbx_error *);
/* A control connection to the proxy of this root, starting it first
 * (`prog serve --home home -q`, under run/proxy.lock) when none runs. */
int	sbx_proxyclient_ensure(int rootfd, const char *prog, const char *home,
	    struct sbx_error *);
/* Open a session on ctl for agent (extra allowlist entries in allow, may
 * be NULL) and set *channel to the descriptor sbx-init must get.  Keep ctl
 * open for the run: closing it ends the session.  Flags: ASK holds
 * requests for names no rule decides and asks, as the agent setting
 * network_ask does; ALLOW_ONLY makes allow replace the agent's allowed
 * names instead of adding to them (a plugin's permissions.network: exactly
 * those names; the agent's denials, ports and address rules still apply). */
#define SBX_PROXYCLIENT_ASK		1
#define SBX_PROXYCLIENT_ALLOW_ONLY	2
/*
 * creds (may be NULL): the run's credential rules (credrule.h's form,
 * each with "placeholder" and "value"), which the proxy applies to the
 * session's requests.  The values travel only on this host-side
 * control socket (0600, peer uid checked); the request line that
 * carried them is wiped before it is freed.
 */
int	sbx_proxyclient_session(int ctl, const char *agent, json_t *allow,
	    json_t *creds, int flags, const char *run, int *channel,
	    struct sbx_error *);
/* End it: the run's violations (array, new reference) or NULL. */
json_t	*sbx_proxyclient_end(int ctl, struct sbx_error *);
/* The same, and in *creds (when not NULL) the credentials the run used,
 * from the answer's "credentials": [{"secret","host","port"}] (a new
 * array, empty when the proxy names none). */
json_t	*sbx_proxyclient_end_creds(int ctl, json_t **creds,
	    struct sbx_error *);
/* A warm session's record since the last take (lib/exec/warm.c), through
 * a control connection of its own: the violations (a new array), and the
 * credentials used into *creds when creds is not NULL.  NULL with e. */
json_t	*sbx_proxyclient_take(int rootfd, const char *agent, const char *run,
	    json_t **creds, struct sbx_error *e);

#endif
