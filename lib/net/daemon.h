/*
 * daemon.h: what the state root's daemons (sbx-proxy, sbx-bridge) share:
 * their control socket under run/ (bound, reached, started on demand
 * under a lock) and the hardening of the daemon process.
 */
#ifndef SBX_DAEMON_H
#define SBX_DAEMON_H

#include <jansson.h>

#include "error.h"

/* Drop every capability (root keeps its uid, which owns the state root,
 * but nothing more), forbid gaining any back, not dumpable. */
void sbx_daemon_harden(void);
/* Bind and listen on run/SOCK, 0600, through /proc/self/fd of runfd
 * (opened without following symlinks), after removing a stale one. */
int sbx_daemon_bind(int runfd, const char *sock, struct sbx_error *);
/* The next control connection on lfd (non-blocking, close-on-exec) whose
 * peer is our own uid; others are closed.  -1 when none is pending. */
int	sbx_daemon_accept(int lfd);
/* Connect to run/SOCK: the fd, or -1 with kind unavailable (reason
 * not_running; the message names what, "the proxy"; sys_errno the
 * open's or the connect's errno). */
int sbx_daemon_connect(int rootfd, const char *sock, const char *what,
    struct sbx_error *);
/*
 * Ask the daemon on run/SOCK for op ("status", "stop"), what `sbx proxy
 * status` and `sbx bridge stop` say: 1 and its answer in *ans (the
 * caller's), 0 when none listens (rootfd < 0 too: no state root), -1
 * with e when it was reached but did not answer.
 */
int	sbx_daemon_ask(int rootfd, const char *sock, const char *what,
	    const char *op, json_t **ans, struct sbx_error *);
/*
 * Wait until the daemon of run/PIDNAME has exited (its lock is free), at
 * most timeout_ms: what `stop` waits for, so that stopped means stopped.
 * 0, or -1 with e (kind timeout).
 */
int	sbx_daemon_wait_gone(int rootfd, const char *pidname, const char *what,
	    int timeout_ms, struct sbx_error *);
/* A connection to run/SOCK, starting `prog serve --home home -q` under
 * run/LOCK first when none answers. */
/* The line a daemon stopped on purpose (`sbx proxy stop`, `sbx bridge
 * stop`) sends on each run's session before it closes it: sbx exec then
 * does not start it again as it does one that died. */
#define SBX_DAEMON_STOPPING	"{\"stopping\":true}"

int sbx_daemon_ensure(int rootfd, const char *sock, const char *lock,
    const char *what, const char *prog, const char *home, struct sbx_error *);

/*
 * Become the daemon of run/ (runfd) for what ("proxy", "bridge"), one per
 * state root: whoever holds the lock of run/PIDNAME.  Returns
 * SBX_DAEMON_RUNNING (another one does; its pid in d->pid),
 * SBX_DAEMON_STARTED (in the starter, once the daemon said it is ready:
 * the caller reports and exits), SBX_DAEMON_CHILD (in the daemon, or in
 * the caller itself with foreground: detached from the terminal, its pid
 * written; call sbx_daemon_ready once it listens), or -1 with e.
 */
#define SBX_DAEMON_RUNNING	1
#define SBX_DAEMON_STARTED	2
#define SBX_DAEMON_CHILD	3
struct sbx_daemon {
	int	 pidfd, ready;
	char	 pid[32];
};
int	sbx_daemon_start(int runfd, const char *pidname, const char *what,
	    int foreground, struct sbx_daemon *, struct sbx_error *);
/* The daemon listens: its starter may return. */
void	sbx_daemon_ready(struct sbx_daemon *);
/* The daemon is done: its pid file emptied (the lock goes at exit). */
void	sbx_daemon_done(struct sbx_daemon *);

#endif
