/*
 * daemon-serve.h: `serve` of the state root's daemons (sbx proxy serve,
 * sbx bridge serve), in one place: become the daemon of run/ or say the
 * one that runs, harden, bind, serve, leave.  Linked into sbx-proxy and
 * sbx-bridge only.
 */
#ifndef SBX_DAEMON_SERVE_H
#define SBX_DAEMON_SERVE_H

#include "error.h"
#include "root.h"

struct sbx_cmd_daemon {
	const char	*prog;		/* "sbx-proxy": messages */
	const char	*tool;		/* the envelope's tool */
	const char	*what;		/* "proxy": lib/daemon.h's */
	const char	*pidname;	/* in run/: the lock and the pid */
	const char	*sock;		/* in run/: the control socket */
	int		 json, quiet, foreground;
	/* The daemon's loop on the listening socket lfd, until it is done. */
	int		(*serve)(int rootfd, int lfd, void *arg,
			    struct sbx_error *);
	void		*arg;
};

/*
 * Serve root as d says.  Returns 0 when another daemon of root runs (said
 * on stdout); else it does not return: the starter exits 0 once its
 * daemon is ready, the daemon when it is done (a failure is reported
 * when in the foreground, else it exits 71).
 */
int	sbx_cmd_daemon_serve(const struct sbx_cmd_daemon *d,
	    const struct sbx_root *root);

#endif
