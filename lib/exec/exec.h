/*
 * exec.h: the run engine of sbx exec.
 *
 * A plain-data request (struct sbx_exec_req, what the options of sbx exec
 * or a request envelope say) is checked by sbx_exec_validate(), turned
 * into an opened, ready-to-run sandbox by sbx_exec_prepare(), run by
 * sbx_exec_run() (in the foreground, or as a supervised background job,
 * jobsup.c) and judged by sbx_exec_outcome() (outcome.h), which maps
 * what happened to an envelope kind and an exit status, for foreground
 * runs and jobs alike.  sbx_exec_release() frees it.  The --workdir
 * checks are workdir.c's.
 * Nothing here prints or exits: failures are a struct sbx_error, notes
 * for people are collected in the warnings array.
 */
#ifndef SBX_EXEC_H
#define SBX_EXEC_H

#include <sys/stat.h>
#include <sys/types.h>

#include <limits.h>
#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "disklimit.h"
#include "error.h"
#include "fspolicy.h"
#include "idalloc.h"
#include "outcome.h"
#include "provision.h"
#include "root.h"
#include "run.h"
#include "runlimits.h"
#include "sandbox.h"
#include "secret.h"

struct sbx_credset;

enum sbx_exec_stdin {
	SBX_EXEC_STDIN_AUTO,	/* null for a terminal under capture */
	SBX_EXEC_STDIN_INHERIT,
	SBX_EXEC_STDIN_NULL,
};

/*
 * What to run, and how.  Strings are borrowed (the caller keeps them
 * alive); the numeric fields below `parsed` are filled by
 * sbx_exec_validate() from the strings above them.
 */
struct sbx_exec_req {
	const char	*agent;		/* NULL: $SBX_AGENT, else "default" */
	const char	*home;		/* state root, or NULL (the default) */
	const char	*cwd;		/* NULL: the workdir, else HOME */
	const char	*workdir;	/* host directory bound rw, or NULL */
	int		 workdir_follow;	/* follow symlinks in it */
	struct sbx_strv	 xworkdirs;	/* --workdir repeated: the others */
	struct sbx_strv	 unprotect;	/* --unprotect PATH (relative to the
					 * workdir, or inside it) */
	struct sbx_strv	 ro;		/* --ro PATH: read-only at its path */
	/* --host-view: the host's file system read-only as the root (sbx
	 * srt); its hidden and read-only paths come from the agent's
	 * settings, the state root is hidden. */
	int		 host_view;
	struct sbx_strv	 env;		/* NAME=VALUE */
	const char	*network;	/* NULL: the agent's setting, else none */
	struct sbx_strv	 allow;		/* extra allowed domains (proxy) */
	int		 ask;		/* ask about names no rule decides */
	int		 allow_only;	/* allow: the only names (a plugin's) */
	struct sbx_strv	 limit_keys;	/* key, value, ... (sbx_limits_set) */
	int		 soft_limits;
	int		 hard_limits;	/* --hard-limits: the disk too */
	int		 disk_tmp;	/* --disk-tmp: /tmp on the image */
	const char	*seccomp;	/* "on" (NULL) or "off" */
	const char	*shell;		/* -c STRING, or NULL */
	char	       **argv;		/* the command; with shell: $0, $1... */
	int		 argc;
	int		 capture;	/* output kept for an envelope (--json) */
	int		 capture_tee;	/* capture, and stream it to stderr */
	const char	*max_output;	/* bytes kept per stream; NULL: 1M */
	const char	*stdin_mode;	/* inherit, null, or NULL (auto) */
	int		 tty;		/* a terminal of its own inside */
	const char	*timeout;	/* idle timeout, seconds, or NULL */
	int		 background;
	const char	*session_name;	/* --session: a warm session's */
	int		 verbose;	/* keep the bwrap command line */
	const char	*libexec;	/* where sbx-init is; NULL: beside us */
	int		 detach_fd;	/* a descriptor of the caller's that a
					 * job's supervisor closes, or -1 */
	int		 rootfs_rw; /* sbx install --manager apt: the
					 * agent's own rootfs copy read-write
					 * as /, as uid 0 of the userns */
	/* With rootfs_rw: ids 1..subid_count inside are host ids
	 * subid_uid.. and subid_gid.. (a subordinate range,
	 * sbx_identity_subids), so files of other owners (man, _apt) can
	 * be had; 0: uid 0 alone is mapped. */
	unsigned long	 subid_uid, subid_gid, subid_count;
	/* --fail-on-violation: 1 a violation fails the run (rejected,
	 * exit status); 0 the agent's fail_on_violation decides; -1 never
	 * (sbx install judges its own runs) */
	int		 fail_on_violation;
	struct sbx_strv	 secrets;	/* --secret: these only (else all) */
	int		 no_secrets;	/* --no-secrets */
	/* sbx plugin run: the plugin whose bridge session this is (its
	 * declared secrets are served over the bridge to this run only).
	 * Set by the program, never read from a request envelope. */
	const char	*plugin;
	/* sbx session start: sbx-init is a session's pid 1 (-S) and the
	 * command is not run (lib/exec/warm.c).  Set by the program. */
	int		 session;

	/* parsed */
	double		 timeout_s;
	size_t		 max_output_n;
	enum sbx_exec_stdin stdin_v;
	int		 seccomp_off;
	/* Strings the request reader made (sbx_exec_req_json) live here. */
	struct sbx_strv	 own;
	char	       **own_argv;
};

/* Everything a run needs, validated and opened, and what happened. */
/* A relay between sbx-init and a daemon (see relay_open in exec.c). */
struct sbx_exec_relay {
	int	 init_end;	/* sbx-init's fd 14 or 23 */
	int	 mine;		/* what sbx-init sends arrives here */
	int	 held;		/* a connection waiting for room, or -1 */
	char	 tag;		/* its tag */
	int	 restarts;	/* of the daemon, this run */
	int	 ctl_watch;	/* watch the control connection for EOF */
	int	 stopped;	/* the daemon was stopped on purpose */
};

struct sbx_exec {
	const struct sbx_exec_req *req;
	enum sbx_netmode	 network;	/* the mode in force */
	struct sbx_root		 root;
	struct sbx_sandbox	 sb;
	struct sbx_fspolicy	 fs;
	struct sbx_strv		 bwrap_argv;
	char			*bwrap;
	char			*init;
	char			 home[PATH_MAX];
	char			*workdir;	/* canonical */
	int			 workdir_tree;	/* its private copy, or -1 */
	char			*workdir_mnt;	/* where the copy goes */
	struct stat		 workdir_mnt_st;
	const char		*workdir_resolved; /* = workdir, when asked
						 * to follow symlinks */
	/* The other writable roots, each checked as the first. */
	struct {
		char		*path;		/* canonical */
		int		 fd, tree;
		char		*mnt;
		struct stat	 mnt_st;
	}			 xwd[SBX_MAX_XWORKDIRS];
	int			 nxwd;
	int			 wd_mnt_n;	/* run/workdir(-N): 0, N */
	char			 cwd[PATH_MAX];
	int			 home_fd, output_fd, workdir_fd;
	int			 env_fd, passwd_fd, group_fd, hosts_fd;
	int			 seccomp_fd, cache_fd, init_fd;
	int			 etc_fd;	/* cached /etc tree, or -1 */
	int			 userns_fd; /* subid_count: the user
						 * namespace bwrap enters */
	int			 drop_privs;	/* sbx is root: run as run_uid */
	uid_t			 run_uid;
	gid_t			 run_gid;
	struct sbx_runlimits	 lim;
	unsigned long long	 log_cap;	/* a job's log, bytes */
	json_t			*agent_cfg;	/* config/agents/A.json, or
						 * NULL: read once a run */
	char			 agent_rel[128];
	int			 proxy_ctl, proxy_chan;
	char			 proxy_run[64];	/* the session's run id */
	json_t			*proxy_allow;	/* the session's allowlist */
	/* sbx-init's channels to the proxy [0] and the bridge [1] end
	 * here: sbx passes the connections on and restarts a daemon that
	 * died (relay_open in exec.c). */
	struct sbx_exec_relay	 relay[2];
	char			 proxy_token[SBX_TOKEN_LEN + 1];
	json_t			*violations;	/* proxy mode, after the run */
	int			 fail_on_violation; /* in force */
	int			 bridge; /* bridge.enabled */
	int			 bridge_ctl, bridge_chan;
	char			 bridge_run[64]; /* the session's run id */
	char			*host_cli; /* sbx-host, or NULL */
	struct sbx_cgroup	 cg;
	char			*cg_v2root;	/* cgroup_v2_root, or NULL */
	json_t			*limits;	/* what is enforced, and how */
	json_t			*warnings;
	int			 tty_size_fd;	/* caller's terminal, or -1 */
	/* Set by the caller before sbx_exec_run: the socket on which the
	 * asker of `sbx exec --ask` holds the output while a question is
	 * on the terminal (sbx_run's hold_fd), or -1.  With it, a terminal
	 * on stdin is relayed through a pipe, never handed to the sandbox
	 * (which could otherwise draw over the question, or read the
	 * answer, through it). */
	int			 ask_hold_fd;
	char			*bwrap_line;	/* verbose: the command line */
	/* The agent's secrets for this run (secret.h): their values go
	 * into the environment memfd only, and secrets.scrub (when some
	 * value is long enough) filters every byte that comes out. */
	struct sbx_secret_env	 secrets;
	/* Credential rules (issue 34, credbind.h) of this run's secrets:
	 * each bound secret's variable holds placeholder i (creds_ph,
	 * SBX_CRED_PLACEHOLDER_MAX + 1 bytes each) and the proxy puts the
	 * value in requests to the rule's hosts.  NULL: no rule in play.
	 * ca_fd: the state root's bundle (tlsca.h), bound read-only, when
	 * want_ca (a proxy run with rules). */
	struct sbx_credset	*creds;
	char			*creds_ph;
	int			 ca_fd;
	int			 want_ca;
	json_t			*credentials;	/* the proxy's list, after */
	/* A session (req->session): pid 1's channel to the supervisor,
	 * SBX_FD_SESSION; set by the caller before sbx_exec_run, or -1. */
	int			 session_fd;
	/* A session's start: the secrets' values stay out of the sandbox's
	 * environment (each command's client sends the current ones); a
	 * bound secret's placeholder, fixed for the session, stays in. */
	int			 secrets_per_command;
	/* A background job run elsewhere than in a sandbox of its own (a
	 * session's: sbx_warm_job_run): the job's supervisor calls it
	 * instead of sbx_run_sandbox. */
	int	(*run_hook)(struct sbx_exec *, struct sbx_run *,
	    struct sbx_error *);
	void	*run_arg;

	/* after sbx_exec_run */
	struct sbx_run		 run;
	json_t			*events;	/* cgroup evidence, or NULL */
	char			 job[32];	/* background: the job id */
	char			 logpath[PATH_MAX];
	int			 job_pid;
	char			 job_what;	/* 'R', 'E' (exec errno), 'F' */
	int			 job_val;
	/* The disk limit's mechanism (disklimit.h): an image held for
	 * the run until sbx_exec_release. */
	struct sbx_disklimit	 disk;
	int			 disk_full;	/* after the run */
	/* --disk-tmp: the run's tmp/NAME and shm/NAME on the image, and
	 * their O_PATH descriptors (SBX_FD_DISK_TMP, _SHM). */
	char			 disk_tmp[40];
	int			 disk_tmp_fd[2];

	/* Per-agent uids (lib/state/idalloc.c): the envelope's identity
	 * and, for a plain user with a subordinate range, the namespace
	 * bwrap starts in (lib/sandbox/agentns.c; -1: none). */
	int			 per_agent;
	struct sbx_agentid	 agentid;
	int			 agent_ns_fd;
	gid_t			 run_group;	/* workspace/shared's, or 0 */
};

/*
 * The fields of a request, one table (lib/exec/execreq.c): a row per
 * field, saying how sbx exec's option (`--foo`), the request envelope's
 * key (`"foo"`) and the property of sbx mcp's shell_run (and
 * sandbox_process start) reach it.  sbx exec's option table
 * (cmd/exec-opts.c: letters, help) and the MCP schemas
 * (lib/exec/tooldefs.c: descriptions) keep their own words; t-execreq
 * fails when they and this table disagree (an option, key or property
 * without its row, or of another type).
 */
enum sbx_exec_ftype {
	SBX_EXEC_F_STR,		/* const char *: the text */
	SBX_EXEC_F_NUM,		/* const char *: a number, as text (a request
				 * may give a JSON number) */
	SBX_EXEC_F_BOOL,	/* int: 1 when given (true) */
	SBX_EXEC_F_STRV,	/* struct sbx_strv: repeatable */
	SBX_EXEC_F_LIMIT,	/* limit_keys: the row's limit, the value */
	SBX_EXEC_F_ARGV,	/* the command (argv): read by its own code */
	SBX_EXEC_F_ROOTS,	/* workdirs: workdir, then xworkdirs */
	SBX_EXEC_F_PROG,	/* an option of the program, not of the
				 * request (--json, --request...) */
};

struct sbx_exec_field {
	const char	*option;	/* sbx exec's long option ("c": the
					 * letter alone), or NULL */
	const char	*key;		/* the request envelope's, or NULL */
	enum sbx_exec_ftype type;
	size_t		 offset;	/* in struct sbx_exec_req */
	const char	*limit;		/* SBX_EXEC_F_LIMIT: sbx_limits_set's
					 * key */
	const char	*mcp;		/* shell_run's property, or NULL: not
					 * given to a model */
};

/* The table; n rows in *n. */
const struct sbx_exec_field *sbx_exec_fields(size_t *n);
/* The row of an option ("network", "c"), or of a request key; NULL. */
const struct sbx_exec_field *sbx_exec_field_option(const char *);
const struct sbx_exec_field *sbx_exec_field_key(const char *);
/*
 * An option's value into the request as the row says (a string is
 * borrowed: the caller keeps it alive; a BOOL ignores it): 0, or -1 out
 * of memory.  Rows of type ARGV, ROOTS and PROG are the caller's.
 */
int	sbx_exec_field_set(struct sbx_exec_req *, const struct sbx_exec_field *,
	    const char *);

void	sbx_exec_req_init(struct sbx_exec_req *);
void	sbx_exec_req_release(struct sbx_exec_req *);
/*
 * Fill req from a request envelope (a JSON object whose keys are the
 * table's: sbx_exec_fields, the long options with `-` as `_`, and
 * command, args, workdirs, secrets).  Unknown keys and wrong types are
 * invalid_args.
 */
int	sbx_exec_req_json(struct sbx_exec_req *, const json_t *,
	    struct sbx_error *);
/* Read one request envelope from fd (at most cap bytes, duplicate keys
 * refused: sbx_json_parse) into req; invalid_args when it is bad. */
int	sbx_exec_req_read(struct sbx_exec_req *, int fd, size_t cap,
	    struct sbx_error *);
/* --request PATH: sbx_exec_req_read of the file, or of standard input
 * ("-"), which then is not the command's (its stdin is "null"). */
int	sbx_exec_req_load(struct sbx_exec_req *, const char *path, size_t cap,
	    struct sbx_error *);
/*
 * Check a request without touching the system: 0, or -1 with e.  A
 * request that no run could ever satisfy as written (options that
 * exclude each other) returns -2: a usage error.
 */
int	sbx_exec_validate(struct sbx_exec_req *, struct sbx_error *);
void	sbx_exec_init(struct sbx_exec *);
int	sbx_exec_prepare(struct sbx_exec *, const struct sbx_exec_req *,
	    struct sbx_error *);
int	sbx_exec_run(struct sbx_exec *, struct sbx_error *);
void	sbx_exec_release(struct sbx_exec *);

/* Shared with jobsup.c. */
int	sbx_exec_signals(int with_usr1);
int	sbx_exec_cgroup(struct sbx_exec *, const char *v2root,
	    struct sbx_error *);
void	sbx_exec_run_setup(struct sbx_exec *, struct sbx_run *);
json_t	*sbx_exec_finish_limits(struct sbx_exec *, struct sbx_run *);
/* The cgroup part of it (p->cg: a run's, or a session command's): its
 * counters as limit events (killed_by "limit", limit "memory" after an
 * OOM kill; a warning after pids.max), then kill, empty and remove it.
 * Returns the events object (or NULL). */
json_t	*sbx_exec_cg_events(struct sbx_exec *, struct sbx_run *);
/* The events of counters read elsewhere (a session's command: what its
 * cgroup counted while it ran, sbx_cgroup_stats_since). */
struct sbx_cg_stats;
json_t	*sbx_exec_cg_events_of(struct sbx_exec *, struct sbx_run *,
	    const struct sbx_cg_stats *);
json_t	*sbx_exec_command_json(const struct sbx_exec_req *);

#endif
