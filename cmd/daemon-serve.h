/*
 * daemon-serve.h: `serve`, `status` and `stop` of the state root's
 * daemons (sbx proxy, sbx bridge), in one place: become the daemon of
 * run/ or say the one that runs, harden, bind, serve, leave; ask it how
 * it is, or to stop.  Linked into sbx-proxy and sbx-bridge only; failures
 * and results go through the program's context (cmd.h, sbx_cmd_die).
 */
#ifndef SBX_DAEMON_SERVE_H
#define SBX_DAEMON_SERVE_H

#include "error.h"
#include "root.h"

struct sbx_cmd_daemon {
	const char	*prog;		/* "sbx-proxy": messages */
	const char	*what;		/* "proxy": daemon.h's */
	const char	*pidname;	/* in run/: the lock and the pid */
	const char	*sock;		/* in run/: the control socket */
	/* Set by sbx_cmd_daemon_serve. */
	int		 quiet, foreground;
	/* The daemon's settings into arg, before anything else. */
	int		(*load)(int rootfd, void *arg, struct sbx_error *);
	/* The daemon's loop on the listening socket lfd, until it is done. */
	int		(*serve)(int rootfd, int lfd, void *arg,
			    struct sbx_error *);
	void		*arg;
	/* status: the answer's integer keys the result carries besides
	 * pid, sessions and connections (NULL-terminated, or NULL), and
	 * whether the line for people names the socket. */
	const char *const *status_keys;
	int		 status_says_socket;
};

/*
 * Serve root as d says (its settings loaded first, a failure reported).
 * Returns 0 when another daemon of root runs (said on stdout unless
 * quiet); else it does not return: the starter exits 0 once its daemon
 * is ready, the daemon when it is done (a failure is reported when in the
 * foreground, else it exits 71).
 */
int	sbx_cmd_daemon_serve(const struct sbx_cmd_daemon *d,
	    const struct sbx_root *root, int quiet, int foreground);

/*
 * `status` (stop 0) or `stop` (1) of root's daemon: its answer on the
 * control socket as the result ("running" false when none answers), and
 * for stop, the daemon gone (its pid lock free) before it returns.  The
 * exit status: 0, or 1 when status finds none running.
 */
int	sbx_cmd_daemon_status(const struct sbx_cmd_daemon *d,
	    const struct sbx_root *root, int stop);

#endif
