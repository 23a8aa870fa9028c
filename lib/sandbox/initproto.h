/*
 * initproto.h: the protocol between the run engine (run.c, sandbox.c)
 * and sbx-init, pid 1 of every sandbox (cmd/sbx-init.c).
 *
 * Header only, with no dependency but the C library: sbx-init is linked
 * statically on its own, never against libsbx.a.  Both sides include it, so
 * a slot, a word or a port is defined once.
 *
 * bwrap starts `SBX_INIT_PATH [-r NAME=VALUE]... [-W DEV:INO PATH]...
 * [-N DEV:INO:NAME | -R PATH | -g ROOT | -G GITDIR | -X NAME | -U |
 * -A DEV:INO]... [-T ROWS:COLS] [-P] [-B] [-c]
 * -- COMMAND...`, the options in this order.
 */
#ifndef SBX_INITPROTO_H
#define SBX_INITPROTO_H

#include <string.h>

/*
 * File descriptors as the bwrap process, then sbx-init, sees them.  The run
 * engine (run.c) dup2()s everything into these slots and closes every
 * other descriptor, so that nothing of sbx leaks into bwrap and, through
 * sbx-init, into the sandbox; sbx-init closes every one above SBX_FD_ENV.
 */
#define SBX_FD_STATUS	3	/* out: the status words below */
#define SBX_FD_CTL	4	/* in: the orders below; EOF = kill */
#define SBX_FD_ENV	5	/* in: NAME=VALUE\0..., sealed memfd */
#define SBX_FD_HOME	6	/* O_PATH of the agent's home */
#define SBX_FD_OUTPUT	7	/* O_PATH of output/<agent> */
#define SBX_FD_WORKDIR	8	/* O_PATH of --workdir, if any */
#define SBX_FD_PASSWD	9	/* memfds for synthesized /etc files */
#define SBX_FD_GROUP	10
#define SBX_FD_HOSTS	11
#define SBX_FD_SECCOMP	12	/* BPF program, if any */
#define SBX_FD_INIT	13	/* O_PATH of sbx-init */
#define SBX_FD_PROXY	14	/* the channel to sbx-proxy (-P) */
#define SBX_FD_ETC	15	/* O_PATH of the prepared /etc (etccache) */
#define SBX_FD_XWORKDIR	16	/* O_PATH of the 2nd, 3rd... --workdir */
#define SBX_MAX_XWORKDIRS 7	/* so 8 workdirs in all */
#define SBX_FD_BRIDGE	  23 /* the channel to sbx-bridge (-B) */
#define SBX_FD_CA	  24 /* the state root's CA bundle, to copy in */
/* --disk-tmp (issue 32): O_PATH of the run's /tmp and /dev/shm, directories
 * of the agent's disk image. */
#define SBX_FD_DISK_TMP	  25
#define SBX_FD_DISK_SHM	  26
#define SBX_FD_SESSION	  27 /* a session's channel to its supervisor (-S) */
#define SBX_FD_MAX	  SBX_FD_SESSION

/* Status words, one per line on SBX_FD_STATUS, in this order:
 * "tty" (with -T, carrying the terminal's master by SCM_RIGHTS), "ready",
 * "warn nopipefail", then "running" or "exec ERRNO", then "exit CODE" or
 * "signal SIGNO". */
#define SBX_INIT_W_TTY		"tty"
#define SBX_INIT_W_READY	"ready"
#define SBX_INIT_W_NOPIPEFAIL	"warn nopipefail"
#define SBX_INIT_W_RUNNING	"running"
#define SBX_INIT_W_EXEC		"exec"		/* "exec %d": errno */
#define SBX_INIT_W_EXIT		"exit"		/* "exit %d": status */
#define SBX_INIT_W_SIGNAL	"signal"	/* "signal %d": signo */
/* At any time while the command runs, with the file-system guard: */
#define SBX_INIT_W_FSDENY	"fsdeny"	/* "fsdeny PATH" */
#define SBX_INIT_W_SOCKDENY	"sockdeny"	/* "sockdeny PATH" */

/* Orders, one byte each on SBX_FD_CTL. */
#define SBX_INIT_O_TERM		'T'	/* SIGTERM + SIGCONT to everything */
#define SBX_INIT_O_KILL		'K'	/* SIGKILL to everything */

/* Where sbx-init listens for the proxy inside the sandbox (-P), on
 * 127.0.0.1 of the sandbox's own network namespace. */
#define SBX_INIT_PROXY_PORT	3128
/* And its SOCKS5 listener (socks5h only), on the same channel; each
 * connection passed is tagged: 'C' from 3128, 'S' from 1080. */
#define SBX_INIT_SOCKS_PORT	1080

/* The largest environment sbx-init reads from SBX_FD_ENV. */
#define SBX_INIT_ENV_MAX	(8u << 20)

/* Its options, in the order it reads them. */
#define SBX_INIT_OPT_RLIMIT	"-r"	/* NAME=VALUE: nofile, fsize, as */
#define SBX_INIT_OPT_WORKDIR	"-W"	/* DEV:INO PATH, one per workdir */
/* The file-system guard (fspolicy.c -> cmd/init-guard.c), repeated: */
#define SBX_INIT_OPT_BLOCK	"-N"	/* DEV:INO:NAME not to be created */
#define SBX_INIT_OPT_PROTECTED	"-R"	/* PATH, a protected path */
#define SBX_INIT_OPT_GITROOT	"-g"	/* ROOT: .git beneath it, git rule */
#define SBX_INIT_OPT_GITDIR	"-G"	/* GITDIR: a git dir, git rule */
#define SBX_INIT_OPT_GITOPEN	"-X"	/* NAME: left writable by the rule */
#define SBX_INIT_OPT_UNIX	"-U"	/* unix sockets made outside: no */
#define SBX_INIT_OPT_SOCKET	"-A"	/* DEV:INO, a socket left reachable */
#define SBX_INIT_OPT_TTY	"-T"	/* ROWS:COLS */
#define SBX_INIT_OPT_PROXY	"-P"
#define SBX_INIT_OPT_BRIDGE	"-B" /* after -P */
#define SBX_INIT_OPT_SESSION	"-S" /* after -B: a warm session (below) */
#define SBX_INIT_OPT_SHELL	"-c"
/* Not pid 1: run as a command, print what the sandbox enforces. */
#define SBX_INIT_OPT_PROBE	"--probe"

/*
 * The git rule (fspolicy.c mounts it, sbx-init's guard refuses the
 * names): a git directory is read-only as a whole but for what commits,
 * fetches, merges, stashes and gc write.  Git finds configuration and
 * hooks through many names (config, config.worktree, commondir, hooks,
 * info/attributes, modules/<name>, worktrees/<id>/gitdir...) and new git
 * versions add more: an allowlist of what may be written stays safe when
 * they do, a list of what may not would not.  Everything here is data
 * (objects, refs, reflogs, the index, pseudo-refs such as HEAD or
 * MERGE_MSG, lock files); none of it names a program or another
 * directory that git would read configuration from.  Deliberately not:
 * rebase-merge, rebase-apply and sequencer, whose todo lists run `exec`
 * lines when a person continues them on the host.
 */
static inline int
sbx_git_name_writable(const char *n)
{
	static const char *const names[] = { "objects", "refs", "logs",
	    "index", "packed-refs", "packed-refs.new", "shallow", "rr-cache",
	    "lfs", "gc.pid", "gc.log" };
	const char	*c;
	size_t		 len = strlen(n), i;

	for (i = 0; i < sizeof(names) / sizeof(*names); i++)
		if (strcmp(n, names[i]) == 0)
			return 1;
	/* Lock files: what git writes, then renames over a name that is
	 * judged on its own (a read-only mount, or refused). */
	if (len > 5 && strcmp(n + len - 5, ".lock") == 0)
		return 1;
	/* index.stash.PID (git stash), sharedindex.SHA (split index). */
	if ((len > 6 && strncmp(n, "index.", 6) == 0) || (len > 12 &&
	    strncmp(n, "sharedindex.", 12) == 0))
		return 1;
	/* Pseudo-refs and messages: HEAD, ORIG_HEAD, FETCH_HEAD, MERGE_*,
	 * CHERRY_PICK_HEAD, COMMIT_EDITMSG, BISECT_*: upper case and _. */
	if (n[0] < 'A' || n[0] > 'Z')
		return 0;
	for (c = n; *c != '\0'; c++)
		if (!((*c >= 'A' && *c <= 'Z') || *c == '_'))
			return 0;
	return 1;
}

/*
 * -S, a session (sbx session, lib/exec/warm.c): sbx-init reports "ready"
 * and "running" on fd 3 at once and runs no command of its own.  Its
 * supervisor outside holds the other end of SBX_FD_SESSION (a SOCK_STREAM
 * socket that only pid 1 and the supervisor hold) and the session's
 * control socket; for each client it accepts (its uid checked) it passes
 * the client's connection itself to pid 1, which then talks to the client
 * directly (the supervisor is out of the data path):
 *
 *	supervisor -> pid 1:  'T' once, before any client, with the files of
 *	     the commands' cgroup (SBX_WARM_O_CGROUP); then 'C' with one
 *	     descriptor (SCM_RIGHTS): a client's connection.  One at a time:
 *	     the next comes after 'E'.
 *	pid 1 -> supervisor:  "ready\n" once; then 'E' each time it is done
 *	     with a connection (the command ended, the request was refused,
 *	     or a job took it), so that the supervisor knows busy from idle;
 *	     'J' and 'j' when a background job starts and ends.
 *	client -> pid 1 (on its connection):  'Q' with the command's stdin,
 *	     stdout and stderr (SCM_RIGHTS, exactly three), a 4-byte length
 *	     (host order, at most SBX_WARM_REQ_MAX), then the request: tokens
 *	     of a letter and a NUL-terminated value (SBX_WARM_T_*).  Then 'K'
 *	     or end of file: kill the command now.  'B' instead of 'Q': a
 *	     background job, run under a subreaper of its own (a child of
 *	     pid 1 that takes the connection); the sweep after a foreground
 *	     command spares the processes beneath it.
 *	pid 1 -> client:  lines: "running", "exec ERRNO", "cgroup ERRNO" (below)
 *	     or "fork ERRNO",
 *	     then "exit CODE" or "signal SIGNO"; "fsdeny PATH" and "sockdeny
 *	     PATH" while it runs; or "error REASON" (SBX_WARM_W_ERROR) for a
 *	     request it refused (the connection only: the session goes on).
 *
 * The client is not trusted as the supervisor is: a request that breaks
 * the protocol costs that connection, never the session, and pid 1 reads
 * it without blocking, with a deadline (SBX_WARM_REQ_MS).
 *
 * The command runs in a session and process group of its own; when it
 * ends, pid 1 kills every other process of the sandbox (whatever the
 * command left behind, reparented or not) and reaps them before it
 * reports the end: the next command finds the sandbox as empty as the
 * first did.  End of file on SBX_FD_SESSION: the supervisor is gone, the
 * sandbox ends.
 */
#define SBX_WARM_O_CONN		'C'
/* supervisor -> pid 1, once after "ready": the commands' cgroup files
 * (cgroup.procs on v2, tasks per v1 hierarchy; at most SBX_WARM_CG_MAX),
 * which each foreground command enters before it runs. */
#define SBX_WARM_O_CGROUP	'T'
#define SBX_WARM_O_END		'E'
#define SBX_WARM_O_BG		'B'	/* as 'Q', a background job */
#define SBX_WARM_O_JOB		'J'	/* pid 1: a job started */
#define SBX_WARM_O_JOBEND	'j'	/* pid 1: a job ended */
#define SBX_WARM_REQ_MS		5000
#define SBX_WARM_W_ERROR	"error"	/* "error REASON" */
#define SBX_WARM_O_REQ		'Q'
#define SBX_WARM_O_KILL		'K'
#define SBX_WARM_REQ_MAX	(4u << 20)
#define SBX_WARM_T_ARG		'A'	/* argv[i], in order */
#define SBX_WARM_T_ENV		'E'	/* NAME=VALUE over the session's */
#define SBX_WARM_T_CWD		'C'	/* the directory to start in */
#define SBX_WARM_T_RLIMIT	'R'	/* NAME=VALUE, as -r */
#define SBX_WARM_T_SHELL	'S'	/* the -c string; A: $0, $1... */
#define SBX_WARM_W_FORK		"fork"	/* "fork %d": errno */
/*
 * The commands' cgroup (where the host can make one): one for the whole
 * session, beneath the session's, with the session's limits less a small
 * reserve for pid 1 (lib/sandbox/cgroupsub.c), made by the supervisor
 * and reused by each foreground command in turn (one runs at a time, and
 * the sweep empties it after each), so that no command pays for making
 * one.  The supervisor passes pid 1 a file of it per hierarchy, opened
 * for writing (v2: cgroup.procs; v1: "tasks"); the command's child writes
 * "0" into each before it execs, and does not exec if one fails.  The
 * kernel judges the write by the opener's credentials and cgroup
 * namespace, so pid 1 needs no right to the cgroup and never sees its
 * path.  The client reads the counters before and after, and reports the
 * difference.
 */
#define SBX_WARM_W_CGROUP	"cgroup" /* "cgroup %d": errno; not run */
#define SBX_WARM_CG_MAX		5 /* at most, one per v1 hierarchy */

/* sbx-init's path inside the sandbox. */
#define SBX_INIT_PATH		"/run/sbx/init"

/* The bridge inside (-B): sbx-init listens on the socket and writes the
 * agent's token (from SBX_BRIDGE_TOKEN of the environment) to the file,
 * both 0600, in a tmpfs at SBX_INIT_RUN_DIR; sbx-host is bound there. */
#define SBX_INIT_RUN_DIR      "/run/sbx"
#define SBX_INIT_BRIDGE_SOCK  "/run/sbx/bridge.sock"
#define SBX_INIT_BRIDGE_TOKEN "/run/sbx/token"
#define SBX_INIT_HOST_CLI     "/run/sbx/bin/sbx-host"

#endif
