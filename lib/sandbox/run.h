/* run.h: running one sandbox and supervising it to the end. */
#ifndef SBX_RUN_H
#define SBX_RUN_H

#include <sys/types.h>

#include "buf.h"
#include "capture.h"
#include "error.h"
#include "sandbox.h"
#include "scrub.h"
#include "time.h"

/* Grace between SIGTERM to the whole sandbox and SIGKILL. */
#define SBX_KILL_GRACE_MS	3000

#define SBX_RUN_SPAWN	((pid_t)-2)	/* fork_hook: start it the cheap way */

#define SBX_RUN_NWATCH	4

struct sbx_run {
	/* in */
	char *const	 *bwrap_argv;
	int		  slot[SBX_FD_MAX + 1];	/* fds for SBX_FD_*; -1 */
	int		  stdin_fd;		/* -1: /dev/null */
	int		  out_fd, err_fd;	/* relay targets, or -1 */
	/* When set, output for out_fd/err_fd goes through this instead of
	 * write(2) (a job's capped log); 0, or -1 with errno. */
	int		(*sink_write)(void *, const void *, size_t);
	void		 *sink_arg;
	int		  capture;		/* keep output (max_output) */
	size_t		  max_output;
	long long	  idle_timeout_ms;	/* 0: none */
	long long	  wall_timeout_ms;	/* 0: none */
	int		  signal_fd;		/* caller's signal self-pipe */
	int		  notify_fd;		/* once: R0 running, E<errno>, F0 */
	int		  hold_stderr;		/* until ready (setup errors) */
	/* Called in the forked child before exec (async-signal-safe work
	 * only, e.g. joining the run's cgroup); nonzero return aborts. */
	int		(*child_hook)(void *);
	void		 *child_hook_arg;
	/* Forks the child, e.g. straight into the run's cgroup; called
	 * with child_hook_arg.  NULL, or SBX_RUN_SPAWN returned: the child
	 * is started the cheap way, as posix_spawn(3) does (CLONE_VM |
	 * CLONE_VFORK), and child_hook then runs in sbx's memory: it must
	 * write nothing of it. */
	pid_t		(*fork_hook)(void *);
	/* When set, bwrap and the sandbox run as this host uid/gid (no
	 * supplementary groups): sbx started as root never runs a sandbox
	 * as host root. */
	int		  drop_privs;
	uid_t		  run_uid;
	gid_t		  run_gid;
	/* Per-agent uids (lib/state/idalloc.c).  As root, the one
	 * supplementary group of drop_privs: workspace/shared's, for an
	 * agent that opted in (0: none).  As a plain user, agent_ns > 0:
	 * the user namespace of sbx_agentns_run, entered before bwrap as
	 * agent_uid/agent_gid. */
	gid_t		  run_group;
	int		  agent_ns;
	unsigned long	  agent_uid, agent_gid;
	/* Called when the sandbox must die at once (hard kill). */
	void		(*kill_hook)(void *);
	/*
	 * -t: the command runs on a pseudo-terminal that sbx-init makes
	 * inside the sandbox and whose master it sends here over the status
	 * socket.  The master's output goes to out_fd (stdout and stderr
	 * are one stream on a terminal); stdin_fd, when set, is relayed
	 * into it instead of being the command's stdin, and its end is
	 * passed on as the terminal's end-of-file character.  SIGWINCH read
	 * from signal_fd copies the window size of tty_size_fd (-1: none)
	 * to the master.
	 */
	int		  tty;
	int		  tty_size_fd;
	/*
	 * When set, every byte of output (relayed, captured, logged, and
	 * the set-up errors) goes through this first: secret values are
	 * redacted.  Bytes that may start a value are held back until the
	 * stream has been quiet for SBX_SCRUB_IDLE_MS.  NULL: no filter,
	 * no cost.
	 */
	struct sbx_scrub *scrub;
	/*
	 * When >= 0, a socket on which the caller holds the output while it
	 * asks the person at the terminal (sbx exec --ask): a byte 'H' stops
	 * the relay and is answered 'h' once nothing more will be written to
	 * out_fd or err_fd; 'R', or the end of the socket, relays again.
	 * While held, the sandbox's pipes are not read (a command that keeps
	 * writing blocks once they are full: backpressure, no memory grows,
	 * nothing is lost), nor is the caller's stdin, and neither the idle
	 * clock nor the drain after the end runs.
	 */
	int		  hold_fd;
	/*
	 * Not -t: stdin_fd is read by sbx and written into a pipe that is
	 * the command's stdin, instead of being handed to the sandbox; so
	 * the sandbox never holds the caller's terminal (to write to it,
	 * read from it or change its modes) and hold_fd can stop its input
	 * too.  The pipe is closed at the end of stdin_fd.
	 */
	int		  stdin_relay;
	/*
	 * Descriptors the loop also polls for the caller (sbx exec's relays
	 * to sbx-proxy and sbx-bridge, lib/exec/exec.c): an entry with fd -1
	 * is skipped; on an event, watch_cb(watch_arg, r, i, revents) runs
	 * and may change watch[i] (fd, events) for the next round.  It must
	 * not block for long: the loop keeps the run's deadlines.
	 */
	struct {
		int	  fd;
		short	  events;
	}		  watch[SBX_RUN_NWATCH];
	void		(*watch_cb)(void *, struct sbx_run *, int, short);
	void		 *watch_arg;

	/* out */
	pid_t		  bwrap_pid;
	int		  started;		/* sbx-init reported ready */
	int		  running;		/* the command was executed */
	int		  exit_code;		/* -1: unknown */
	int		  signo;		/* killed by this signal */
	int		  exec_errno;		/* exec of the command failed */
	int		  nopipefail;
	int		  sink_errno;		/* relaying output failed (not
						 * EPIPE): the write's errno */
	const char	 *killed_by;		/* "timeout", "user", NULL */
	const char	 *limit;		/* "wall_time", ... */
	int		  user_signal;
	long long	  duration_ms;
	struct sbx_capture out, err;
	struct sbx_buf	  setup_err;		/* stderr before ready */
	/* Writes the file-system guard refused (sbx-init's "fsdeny PATH"
	 * and "sockdeny PATH" lines), in order, at most 64 each. */
	struct sbx_strv	  fsdeny, sockdeny;
};

void	sbx_run_init(struct sbx_run *);
int	sbx_run_sandbox(struct sbx_run *, struct sbx_error *);
void	sbx_run_release(struct sbx_run *);

#endif
