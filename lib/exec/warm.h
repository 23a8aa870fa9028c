/*
 * warm.h: warm sessions (sbx session, sbx exec --session): one sandbox
 * kept running per session, its pid 1 in session mode (sbx-init -S, the
 * protocol of initproto.h), supervised by a detached process that owns the
 * sandbox's run and the session's control socket (run/session-NAME.sock,
 * 0600, peer uid checked), and the commands run in it one at a time.
 *
 * Two modules: warmrec.c, the session records (run/session-NAME.json:
 * read, written, listed, reaped), which need nothing of the run engine
 * (sbx provision status and sbx exec gc read them); warm.c, the
 * supervisor and the client side of the control socket.  Nothing here
 * prints or exits (the supervisor's own process excepted).
 */
#ifndef SBX_WARM_H
#define SBX_WARM_H

#include <sys/types.h>

#include <jansson.h>

#include "cgroup.h"
#include "error.h"

struct sbx_exec;
struct sbx_exec_req;

#define SBX_WARM_NAME_MAX   32
#define SBX_WARM_RECORD_MAX (1u << 20)

/* warmrec.c */
/* A session name: the agents' grammar, ^[a-z0-9][a-z0-9_-]{0,31}$. */
int sbx_warm_name_valid(const char *, struct sbx_error *);
/* A new name for the agent's session: AGENT-XXXXXX (hex). */
int sbx_warm_new_name(const char *agent, char out[SBX_WARM_NAME_MAX + 8]);
/* The socket's and the record's names under run/. */
void sbx_warm_sock_name(const char *name, char *buf, size_t);
void sbx_warm_rec_name(const char *name, char *buf, size_t);
int  sbx_warmrec_write(int runfd, const char *name, const json_t *,
     struct sbx_error *);
/* A session's record; kind not_found when there is none. */
json_t *sbx_warmrec_load(int runfd, const char *name, struct sbx_error *);
/* Is its supervisor the process it was (pid and start time)? */
int sbx_warmrec_alive(const json_t *);
/* The record and the socket removed: 0, or -1 with errno. */
int sbx_warmrec_remove(int runfd, const char *name);
/* Every session's record (agent NULL: all agents), by name, with
 * "alive" set; those whose supervisor is gone are removed on the way when
 * reap (then counted in *reaped). */
json_t *sbx_warmrec_list(int runfd, const char *agent, int reap, size_t *reaped,
    struct sbx_error *);

/* warm.c */
/* What `sbx session start` asks beyond the run itself. */
struct sbx_warm_opts {
	const char *name; /* NULL: a new one */
	double	    idle_timeout; /* seconds without a command; 0 none */
	double	    max_lifetime; /* seconds in all; 0: none */
	json_t	   *policy; /* the options that fix it (borrowed) */
};

/*
 * Start a session for the prepared run p (p->req->session set): a
 * detached supervisor runs the sandbox and serves its control socket.
 * Returns the record once pid 1 is ready (caller's), or NULL with e.
 */
json_t *sbx_warm_start(struct sbx_exec *p, const struct sbx_warm_opts *,
    struct sbx_error *);
/* Stop a session (its supervisor ends the sandbox and its record), wait
 * at most timeout_ms: 0, or -1 with e. */
int
sbx_warm_stop(int rootfd, const char *name, int timeout_ms, struct sbx_error *);
/*
 * The policy options of a request that fix a session, as one object of
 * request keys (sbx_exec_fields): what `start` records and what `sbx exec
 * --session` compares.  NULL out of memory.
 */
json_t *sbx_warm_policy(const struct sbx_exec_req *);
/*
 * A request for a session: invalid_args naming the first option set in
 * req whose value differs from the session's policy (or that a session
 * cannot take: --background, --tty, --ask).  0 when none.
 */
int sbx_warm_check_req(const struct sbx_exec_req *, const json_t *rec,
    struct sbx_error *);

/* One command run in a session: what the caller gives and gets. */
struct sbx_warm_cmd {
	/* in */
	char *const *argv; /* the command, or $0... with shell */
	const char  *shell; /* -c STRING, or NULL */
	const char  *cwd; /* NULL: the session's */
	char *const *env; /* NAME=VALUE over the session's */
	char *const *rlimits; /* NAME=VALUE (nofile, fsize, as) */
	int	     fd[3]; /* its stdin, stdout, stderr */
	int	     background; /* a job of the session ('B') */
	long long    idle_timeout_ms; /* 0: none; output is the
					 * caller's to watch: it calls
					 * sbx_warm_kill */
	/* out */
	int	running; /* the command was executed */
	int	exec_errno; /* it could not be */
	int	cgroup_errno; /* not run: it could not enter its cgroup */
	int	fork_errno; /* no process for it (pids) */
	int	exit_code; /* -1 unknown */
	int	signo;
	json_t *fsdeny; /* refused writes, or NULL */
	/* sbx_warm_recv's partial line */
	char   lbuf[4200];
	size_t llen;
};

/* Connect to a session's control socket: the fd, or -1 with e
 * (not_found: no such session; unavailable: it does not answer). */
int sbx_warm_connect(int rootfd, const char *name, struct sbx_error *);
/* Send the command on the connection: 0, or -1 with e. */
int sbx_warm_send(int conn, const struct sbx_warm_cmd *, struct sbx_error *);
/* Read what the session says (non-blocking use: call on POLLIN): 1 the
 * command ended (c filled), 0 not yet, -1 the session is gone (e). */
int sbx_warm_recv(int conn, struct sbx_warm_cmd *, struct sbx_error *);
/* Kill the command now (its end follows on conn). */
int sbx_warm_kill(int conn);
struct sbx_run;
/* A session's background job, run by its detached supervisor (the
 * run_hook of sbx_exec, with run_arg a struct sbx_warm_cmd): 0, or -1
 * with e (it did not start). */
int sbx_warm_job_run(struct sbx_exec *, struct sbx_run *, struct sbx_error *);

/* The session's cgroup as its record names it (cmd: the commands' one
 * beneath it), and the limits it holds (those a cgroup enforces): 1, or 0
 * when there is none (w's backend SBX_CG_NONE).  w's strings are rec's. */
int sbx_warm_cgroup_of(const json_t *rec, int cmd, struct sbx_cg_where *w,
    struct sbx_limits *lim);

#endif
