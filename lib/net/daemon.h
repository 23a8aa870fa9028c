/*
 * daemon.h: what the state root's daemons (sbx-proxy, sbx-bridge) share:
 * their control socket under run/ (bound, reached, started on demand
 * under a lock) and the hardening of the daemon process.
 */
#ifndef SBX_DAEMON_H
#define SBX_DAEMON_H

#include "error.h"

/* Drop every capability (root keeps its uid, which owns the state root,
 * but nothing more), forbid gaining any back, not dumpable. */
void	sbx_daemon_harden(void);
/* Bind and listen on run/SOCK, 0600, through /proc/self/fd of runfd
 * (opened without following symlinks), after removing a stale one. */
int	sbx_daemon_bind(int runfd, const char *sock, struct sbx_error *);
/* Connect to run/SOCK: the fd, or -1 with kind unavailable (reason
 * not_running; the message names what, "the proxy"). */
int	sbx_daemon_connect(int rootfd, const char *sock, const char *what,
	    struct sbx_error *);
/* A connection to run/SOCK, starting `prog serve --home home -q` under
 * run/LOCK first when none answers. */
int	sbx_daemon_ensure(int rootfd, const char *sock, const char *lock,
	    const char *what, const char *prog, const char *home,
	    struct sbx_error *);

#endif
