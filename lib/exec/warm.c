/*
 * warm.c: warm sessions (warm.h): the detached supervisor of a session
 * (the sandbox's run in a child of its own, the control socket, the
 * channel to pid 1), stopping one, the policy a session fixes, and the
 * client side of the control socket (sbx exec --session).
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "credbind.h"
#include "daemon.h"
#include "exec.h"
#include "fsutil.h"
#include "initproto.h"
#include "job.h"
#include "layout.h"
#include "netmode.h"
#include "provision.h"
#include "run.h"
#include "scrub.h"
#include "time.h"
#include "warm.h"

/* What a request key of the policy says (the options that fix a
 * session); per-command keys (cwd, env, timeout, the command...) and the
 * agent are not here. */
static const char *const policy_keys[] = { "workdir", "workdirs",
	"workdir_follow_symlinks", "ro", "unprotect", "secrets", "no_secrets",
	"network", "allow_domain", "memory", "cpus", "pids", "disk", "nofile",
	"file_size", "soft_limits", "seccomp", "host_view", NULL };

static int
is_policy_key(const char *k)
{
	size_t i;

	for (i = 0; policy_keys[i] != NULL; i++)
		if (strcmp(policy_keys[i], k) == 0)
			return 1;
	return 0;
}

json_t *
sbx_warm_policy(const struct sbx_exec_req *q)
{
	const struct sbx_exec_field *f;
	const struct sbx_strv	    *v;
	const char		    *at;
	json_t			    *o = json_object(), *a;
	size_t			     n, i, k;

	f = sbx_exec_fields(&n);
	for (i = 0; o != NULL && i < n; i++) {
		if (f[i].key == NULL || !is_policy_key(f[i].key))
			continue;
		at = (const char *)q + f[i].offset;
		switch (f[i].type) {
		case SBX_EXEC_F_STR:
		case SBX_EXEC_F_NUM:
			if (*(const char *const *)(const void *)at != NULL)
				json_object_set_new(o, f[i].key,
				    json_string(*(
					const char *const *)(const void *)at));
			break;
		case SBX_EXEC_F_BOOL:
			if (*(const int *)(const void *)at > 0)
				json_object_set_new(o, f[i].key, json_true());
			break;
		case SBX_EXEC_F_STRV:
		case SBX_EXEC_F_ROOTS:
			v = (const struct sbx_strv *)(const void *)at;
			if (v->n == 0)
				break;
			a = json_array();
			for (k = 0; k < v->n; k++)
				json_array_append_new(a, json_string(v->v[k]));
			json_object_set_new(o, f[i].key, a);
			break;
		case SBX_EXEC_F_LIMIT:
			for (k = 0; k + 1 < q->limit_keys.n; k += 2)
				if (strcmp(q->limit_keys.v[k], f[i].limit) == 0)
					json_object_set_new(o, f[i].key,
					    json_string(
						q->limit_keys.v[k + 1]));
			break;
		default: break;
		}
	}
	return o;
}

int
sbx_warm_check_req(const struct sbx_exec_req *q, const json_t *rec,
    struct sbx_error *e)
{
	const json_t *pol = json_object_get(rec, "policy");
	const char   *name = json_string_value(json_object_get(rec, "name"));
	const char   *k, *a = json_string_value(json_object_get(rec, "agent"));
	json_t	     *mine, *v;

	/* What a session cannot do for one command, said, not ignored. */
	if (q->tty)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "tty",
		    "session_unsupported",
		    "argument `tty` cannot be used with "
		    "a session: run `sbx exec --tty` without --session");
	if (q->ask)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "ask",
		    "session_unsupported",
		    "argument `ask` cannot be used with "
		    "a session: run `sbx exec --ask` without --session");
	if (q->agent != NULL && a != NULL && strcmp(q->agent, a) != 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "agent",
		    "session_agent", "session %s belongs to agent %s, not %s",
		    name, a, q->agent);
	if ((mine = sbx_warm_policy(q)) == NULL)
		return sbx_error_sys(e, "nomem", "session policy");
	json_object_foreach (mine, k, v) {
		if (json_equal(v, json_object_get(pol, k)))
			continue;
		/* The network in force is the record's, whoever chose it
		 * (the option or the agent's setting). */
		if (strcmp(k, "network") == 0 &&
		    json_equal(v, json_object_get(rec, "network")))
			continue;
		sbx_error_set(e, SBX_K_INVALID_ARGS, k, "session_policy",
		    "argument `%s` differs from session %s's: a session's "
		    "policy is fixed when it starts (sbx session show %s)",
		    k, name, name);
		json_decref(mine);
		return -1;
	}
	json_decref(mine);
	return 0;
}

/* ---- the supervisor ---- */

struct sup {
	struct sbx_exec *p;
	const char	*name;
	int		 runfd, lfd, chan, notify, errfd;
	int		 busy; /* pid 1 serves a client */
	int		 jobs; /* background jobs running in it */
	struct sbx_cgroup cmdcg; /* the commands' (sup_cmdcg) */
	pid_t		 engine;
	long long	 idle_ms, life_ms, started, last, checked;
};

static volatile sig_atomic_t stop_sig;

static void
on_stop(int sig)
{
	stop_sig = sig;
}

/* The sandbox's run, in a child of the supervisor's: it dies with the
 * supervisor (PDEATHSIG), and bwrap with it (--die-with-parent). */
static void __attribute__((noreturn))
engine(struct sup *S, int chan_end, pid_t sup)
{
	struct sbx_exec *p = S->p;
	struct sbx_run	*r = &p->run;
	struct sbx_error e;
	struct sbx_buf	 b = SBX_BUF_INIT;
	int		 rc;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid() != sup)
		_exit(1);
	close(S->lfd);
	close(S->chan);
	close(S->notify);
	memset(&e, 0, sizeof(e));
	/* The session's cgroup is the supervisor's (sup_cgroup). */
	p->session_fd = chan_end;
	(void)sbx_exec_signals(1);
	sbx_exec_run_setup(p, r);
	r->out_fd = 1;
	r->err_fd = 2;
	r->stdin_fd = -1;
	/* The session's own end is the supervisor's (--max-lifetime). */
	r->wall_timeout_ms = 0;
	r->idle_timeout_ms = 0;
	rc = sbx_run_sandbox(r, &e);
	json_decref(sbx_exec_finish_limits(p, r));
	if (!r->running) {
		if (rc == -1)
			sbx_buf_printf(&b, "%s", e.message);
		else if (r->setup_err.len > 0)
			sbx_buf_printf(&b, "%.*s", (int)r->setup_err.len,
			    r->setup_err.p);
		else
			sbx_buf_printf(&b,
			    "the session's sandbox ended "
			    "before it was ready");
		if (b.p != NULL)
			(void)sbx_fs_write_all(S->errfd, b.p, b.len);
	}
	_exit(0);
}

static int
send_line(int fd, const char *s)
{
	return sbx_fs_write_all(fd, s, strlen(s));
}

/* The end: the sandbox (closing pid 1's channel ends it), the engine,
 * the socket and the record. */
static void __attribute__((noreturn)) sup_exit(struct sup *S)
{
	long long deadline = sbx_now_ms() + SBX_KILL_GRACE_MS;
	int	  status = 0;

	close(S->lfd);
	(void)sbx_warmrec_remove(S->runfd, S->name);
	if (S->chan >= 0)
		close(S->chan);
	while (waitpid(S->engine, &status, WNOHANG) == 0) {
		if (sbx_now_ms() > deadline) {
			/* It runs the sandbox's kill on SIGUSR1 (a hard
			 * kill, as a job's supervisor). */
			kill(S->engine, SIGUSR1);
			deadline = sbx_now_ms() + SBX_KILL_GRACE_MS;
		}
		poll(NULL, 0, 5);
	}
	/* The engine removes the session's cgroup, the commands' beneath
	 * it first, when the sandbox ends; an engine that died of a
	 * signal could not. */
	if (!WIFEXITED(status)) {
		struct sbx_error e;

		(void)sbx_cgroup_destroy(&S->p->cg, &e);
	}
	_exit(0);
}

/*
 * A client, accepted (our uid, sbx_daemon_accept), handed to pid 1 as
 * is: pid 1 reads its request and answers it directly, and the
 * supervisor stays out of the data path.  0, or -1: the channel is gone.
 */
static int
sup_hand(struct sup *S, int fd)
{
	char c = SBX_WARM_O_CONN;

	if (sbx_fs_send_fd(S->chan, &c, 1, fd, 0) != 1)
		return -1;
	S->busy = 1;
	return 0;
}

/* pid 1 is done with a client (SBX_WARM_O_END): the session is free for
 * the next; a background job started or ended (its idle time counts
 * from the last).  Its end of file ends the session. */
static void
sup_from_init(struct sup *S)
{
	char	buf[64];
	ssize_t n;
	size_t	i;

	n = read(S->chan, buf, sizeof(buf));
	if (n <= 0) {
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			return;
		sup_exit(S);
	}
	for (i = 0; i < (size_t)n; i++) {
		if (buf[i] == SBX_WARM_O_END)
			S->busy = 0;
		else if (buf[i] == SBX_WARM_O_JOB)
			S->jobs++;
		else if (buf[i] == SBX_WARM_O_JOBEND && S->jobs > 0)
			S->jobs--;
		S->last = sbx_now_ms();
	}
}

/* Is the session's agent still there?  A removed agent's session
 * stops. */
static int
agent_present(struct sup *S)
{
	int fd;

	fd = sbx_layout_open(S->p->root.fd, SBX_L_AGENT_HOME, S->p->sb.agent,
	    O_PATH | O_DIRECTORY | O_CLOEXEC, NULL);
	if (fd == -1)
		return 0;
	close(fd);
	return 1;
}

static int still_wanted(struct sup *);

static void __attribute__((noreturn)) supervise(struct sup *S)
{
	struct pollfd pfd[2];
	long long     now, until;
	int	      tmo, fd;

	for (;;) {
		now = sbx_now_ms();
		if (stop_sig)
			sup_exit(S);
		until = -1;
		if (S->life_ms > 0)
			until = S->started + S->life_ms;
		/* Idle: no command, no background job. */
		if (S->idle_ms > 0 && !S->busy && S->jobs == 0 &&
		    (until < 0 || S->last + S->idle_ms < until))
			until = S->last + S->idle_ms;
		if (until >= 0 && now >= until)
			sup_exit(S);
		/* Once a second: is the session still wanted? */
		if (now >= S->checked + 1000) {
			S->checked = now;
			if (!still_wanted(S))
				sup_exit(S);
		}
		tmo =
		    until < 0 || until - now > 1000 ? 1000 : (int)(until - now);
		pfd[0].fd = S->busy ? -1 : S->lfd;
		pfd[0].events = POLLIN;
		pfd[1].fd = S->chan;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, tmo) == -1) {
			if (errno == EINTR)
				continue;
			sup_exit(S);
		}
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
			sup_from_init(S);
		if (pfd[0].fd >= 0 && (pfd[0].revents & POLLIN) &&
		    (fd = sbx_daemon_accept(S->lfd)) >= 0) {
			if (!agent_present(S)) {
				(void)send_line(fd, "gone agent_removed\n");
				close(fd);
				sup_exit(S);
			}
			if (sup_hand(S, fd) == -1) {
				close(fd);
				sup_exit(S);
			}
			/* pid 1 holds it now. */
			close(fd);
		}
	}
}

/* Wait for pid 1's "ready" on the channel: 0, or -1 (it ended). */
static int
wait_ready(struct sup *S)
{
	char	buf[64];
	ssize_t n;
	size_t	len = 0;

	while (len < sizeof(buf) - 1) {
		n = read(S->chan, buf + len, sizeof(buf) - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		len += (size_t)n;
		buf[len] = '\0';
		if (strncmp(buf, SBX_INIT_W_READY "\n", 6) == 0)
			return 0;
	}
	return -1;
}

/*
 * Descriptors the starter inherited from its caller (a test harness's
 * pipe, a shell's): sbx opens all of its own close-on-exec, so one
 * without the flag is someone else's, and a supervisor that kept it would
 * hold its reader's end of file for the session's whole life.
 */
static void
close_foreign(void)
{
	DIR	      *d;
	struct dirent *de;
	int	       fd, fl;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		fd = atoi(de->d_name);
		if (fd <= 2 || fd == dirfd(d))
			continue;
		if ((fl = fcntl(fd, F_GETFD)) != -1 && !(fl & FD_CLOEXEC))
			close(fd);
	}
	closedir(d);
}

/* Is the session still wanted: its record in place (a state root
 * removed, or the record deleted, ends it) and its agent provisioned? */
static int
still_wanted(struct sup *S)
{
	char	    fn[80];
	struct stat st;

	sbx_warm_rec_name(S->name, fn, sizeof(fn));
	return fstatat(S->runfd, fn, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    agent_present(S);
}

/* The where of a cgroup, as the record has it (sbx_warm_cgroup_of reads
 * it back). */
static json_t *
where_json(const struct sbx_cg_where *w)
{
	json_t *o, *v1;
	int	i;

	o = json_pack("{s:s}", "backend", sbx_cgroup_backend_name(w->backend));
	if (w->v2 != NULL)
		json_object_set_new(o, "v2", json_string(w->v2));
	if (w->backend == SBX_CG_V1) {
		v1 = json_object();
		for (i = 0; i < SBX_CG1_N; i++)
			if (w->v1[i] != NULL)
				json_object_set_new(v1, sbx_cgroup_slot_name(i),
				    json_string(w->v1[i]));
		json_object_set_new(o, "v1", v1);
	}
	return o;
}

/*
 * The commands' cgroup (issue 31: each command's "own limits, a child
 * cgroup where cgroups are writable"): one beneath the session's, made
 * here once and reused by every foreground command in turn, since they
 * run one at a time and the sweep empties it after each; its limits are
 * the session's less a reserve for pid 1 (sbx_cgroup_child_limits), so
 * that a command's memory hog or fork bomb is stopped in it, not in pid 1.
 * Named after the supervisor, as the session's is: gc removes both when
 * it is gone.  Where it cannot be made, commands run in the session's
 * cgroup and say so (its "command" is then absent from the record).
 */
static int
sup_cmdcg(struct sup *S, json_t *o, const struct sbx_cg_where *ses)
{
	struct sbx_limits   lim, cmd;
	struct sbx_cg_where w;
	struct sbx_error    e;
	char		    name[SBX_CG_NAME_MAX + 1];
	json_t		   *c;
	int		    i;

	memset(&e, 0, sizeof(e));
	memset(&lim, 0, sizeof(lim));
	if (S->p->cg.enforced & SBX_LIM_MEMORY) {
		lim.memory_bytes = S->p->lim.memory_mib << 20;
		lim.wanted |= SBX_LIM_MEMORY;
	}
	if (S->p->cg.enforced & SBX_LIM_PIDS) {
		lim.pids = S->p->lim.pids;
		lim.wanted |= SBX_LIM_PIDS;
	}
	if (S->p->cg.enforced & SBX_LIM_CPUS) {
		lim.cpus = S->p->lim.cpus;
		lim.wanted |= SBX_LIM_CPUS;
	}
	sbx_cgroup_child_limits(&lim, &cmd);
	/*
	 * On v1, only the hierarchies of its limits: each one a command
	 * enters is a migration (~0.2 ms here, on its critical path); the
	 * freezer is not needed, since pid 1's sweep empties the cgroup and
	 * the session's own freezer cgroup still holds the command.
	 */
	w = *ses;
	if (w.backend == SBX_CG_V1)
		for (i = 0; i < SBX_CG1_N; i++)
			if (!((i == SBX_CG1_MEMORY &&
				  (cmd.wanted & SBX_LIM_MEMORY)) ||
				(i == SBX_CG1_PIDS &&
				    (cmd.wanted & SBX_LIM_PIDS)) ||
				((i == SBX_CG1_CPU || i == SBX_CG1_CPUACCT) &&
				    (cmd.wanted & SBX_LIM_CPUS))))
				w.v1[i] = NULL;
	if (sbx_cgroup_name(name, sizeof(name)) == -1 ||
	    sbx_cgroup_create_child(&w, name, &cmd, &S->cmdcg, &e) == -1 ||
	    S->cmdcg.backend == SBX_CG_NONE) {
		json_object_set_new(o, "command_why",
		    json_string(e.message[0] ? e.message :
			S->cmdcg.why[0]	     ? S->cmdcg.why :
					       "no cgroup name"));
		return 0;
	}
	sbx_cgroup_where(&S->cmdcg, &w);
	c = where_json(&w);
	if (S->cmdcg.enforced & SBX_LIM_MEMORY)
		json_object_set_new(c, "memory_bytes",
		    json_integer((json_int_t)cmd.memory_bytes));
	if (S->cmdcg.enforced & SBX_LIM_PIDS)
		json_object_set_new(c, "pids",
		    json_integer((json_int_t)cmd.pids));
	if (S->cmdcg.enforced & SBX_LIM_CPUS)
		json_object_set_new(c, "cpus", json_real(cmd.cpus));
	json_object_set_new(o, "command", c);
	return 0;
}

/* Pass pid 1 the commands' cgroup files (SBX_WARM_O_CGROUP), once: -1
 * when the channel is gone. */
static int
sup_send_cmdcg(struct sup *S)
{
	char c = SBX_WARM_O_CGROUP;
	int  n = S->cmdcg.nprocs, i;

	if (!S->cmdcg.inited_ || S->cmdcg.backend == SBX_CG_NONE || n <= 0)
		return 0;
	if (n > SBX_WARM_CG_MAX)
		n = SBX_WARM_CG_MAX;
	if (sbx_fs_send_fds(S->chan, &c, 1, S->cmdcg.procs_fd, (size_t)n, 0) !=
	    1)
		return -1;
	/* pid 1 holds them now; the directories stay ours. */
	for (i = 0; i < SBX_CG1_N; i++)
		if (S->cmdcg.procs_fd[i] >= 0) {
			close(S->cmdcg.procs_fd[i]);
			S->cmdcg.procs_fd[i] = -1;
		}
	S->cmdcg.nprocs = 0;
	return 0;
}

/*
 * The session's cgroup, made by the supervisor: its pid in the name is
 * what gc goes by (the engine, its child, dies with it), and its record
 * names the directories, for each command's client to make the command's
 * cgroup beneath (sbx_cgroup_create_child); on cgroup v2 the session's
 * own processes go to a leaf beside them.  0, or -1 with e.
 */
static int
sup_cgroup(struct sup *S, json_t *rec, struct sbx_error *e)
{
	struct sbx_exec	   *p = S->p;
	struct sbx_cg_where w;
	json_t		   *o;

	if (p->cg.backend == SBX_CG_NONE)
		return 0;
	if (sbx_exec_cgroup(p, p->cg_v2root, e) == -1 ||
	    sbx_cgroup_leaf(&p->cg, e) == -1)
		return -1;
	if (p->cg.backend == SBX_CG_NONE)
		return 0;
	sbx_cgroup_where(&p->cg, &w);
	o = where_json(&w);
	if (p->cg.enforced & SBX_LIM_MEMORY)
		json_object_set_new(o, "memory_bytes",
		    json_integer((json_int_t)(p->lim.memory_mib << 20)));
	if (p->cg.enforced & SBX_LIM_PIDS)
		json_object_set_new(o, "pids",
		    json_integer((json_int_t)p->lim.pids));
	if (p->cg.enforced & SBX_LIM_CPUS)
		json_object_set_new(o, "cpus", json_real(p->lim.cpus));
	json_object_set_new(rec, "cgroup", o);
	return sup_cmdcg(S, o, &w);
}

int
sbx_warm_cgroup_of(const json_t *rec, int cmd, struct sbx_cg_where *w,
    struct sbx_limits *lim)
{
	const json_t *o = json_object_get(rec, "cgroup"), *v1, *v;
	const char   *b;
	int	      i;

	memset(w, 0, sizeof(*w));
	memset(lim, 0, sizeof(*lim));
	if (cmd)
		o = json_object_get(o, "command");
	if ((b = json_string_value(json_object_get(o, "backend"))) == NULL)
		return 0;
	if (strcmp(b, "cgroup2") == 0) {
		w->backend = SBX_CG_V2;
		w->v2 = json_string_value(json_object_get(o, "v2"));
	} else if (strcmp(b, "cgroup1") == 0) {
		w->backend = SBX_CG_V1;
		v1 = json_object_get(o, "v1");
		for (i = 0; i < SBX_CG1_N; i++)
			w->v1[i] = json_string_value(
			    json_object_get(v1, sbx_cgroup_slot_name(i)));
	} else
		return 0;
	if ((v = json_object_get(o, "memory_bytes")) != NULL &&
	    json_integer_value(v) > 0) {
		lim->memory_bytes = (unsigned long long)json_integer_value(v);
		lim->wanted |= SBX_LIM_MEMORY;
	}
	if ((v = json_object_get(o, "pids")) != NULL &&
	    json_integer_value(v) > 0) {
		lim->pids = (unsigned long long)json_integer_value(v);
		lim->wanted |= SBX_LIM_PIDS;
	}
	if ((v = json_object_get(o, "cpus")) != NULL &&
	    json_number_value(v) > 0) {
		lim->cpus = json_number_value(v);
		lim->wanted |= SBX_LIM_CPUS;
	}
	return 1;
}

static void __attribute__((noreturn))
sup_main(struct sup *S, json_t *rec, int chan_end)
{
	struct sigaction   sa;
	struct sbx_error   e;
	unsigned long long st = 0;
	int		   devnull, ep[2], status;
	char		   msg[1024];
	ssize_t		   n;
	pid_t		   me = getpid();

	if ((devnull = open("/dev/null", O_RDWR)) >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	if (S->p->req->detach_fd > 2)
		close(S->p->req->detach_fd);
	close_foreign();
	(void)!chdir("/");
	/* Whatever mask the starter had (sbx mcp blocks its signals for a
	 * signalfd), the supervisor hears SIGTERM. */
	{
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	sbx_job_proc_starttime(me, &st);
	json_object_set_new(rec, "pid", json_integer(me));
	json_object_set_new(rec, "pid_start", json_integer((json_int_t)st));
	memset(&e, 0, sizeof(e));
	if (sup_cgroup(S, rec, &e) == -1 || pipe2(ep, O_CLOEXEC) == -1 ||
	    sbx_warmrec_write(S->runfd, S->name, rec, &e) == -1) {
		struct sbx_error e2;

		(void)sbx_cgroup_destroy(&S->cmdcg, &e2);
		(void)sbx_cgroup_destroy(&S->p->cg, &e2);
		(void)send_line(S->notify, "F");
		(void)send_line(S->notify, e.message[0] ? e.message : "pipe");
		(void)send_line(S->notify, "\n");
		(void)sbx_warmrec_remove(S->runfd, S->name);
		_exit(0);
	}
	S->errfd = ep[1];
	if ((S->engine = fork()) == -1) {
		(void)send_line(S->notify, "Fcannot fork the session's run\n");
		(void)sbx_warmrec_remove(S->runfd, S->name);
		_exit(0);
	}
	if (S->engine == 0) {
		close(ep[0]);
		engine(S, chan_end, me);
	}
	close(ep[1]);
	close(chan_end);
	S->errfd = -1;
	if (wait_ready(S) == -1) {
		waitpid(S->engine, &status, 0);
		n = read(ep[0], msg + 1, sizeof(msg) - 3);
		msg[0] = 'F';
		if (n <= 0)
			n = snprintf(msg + 1, sizeof(msg) - 2,
			    "the session's "
			    "sandbox could not be set up");
		for (ssize_t i = 1; i <= n; i++)
			if (msg[i] == '\n')
				msg[i] = ' ';
		msg[n + 1] = '\n';
		(void)sbx_fs_write_all(S->notify, msg, (size_t)n + 2);
		(void)sbx_warmrec_remove(S->runfd, S->name);
		_exit(0);
	}
	close(ep[0]);
	if (sup_send_cmdcg(S) == -1) {
		(void)send_line(S->notify, "Fthe session's sandbox ended "
		    "before it was ready\n");
		sup_exit(S);
	}
	(void)send_line(S->notify, "OK\n");
	close(S->notify);
	S->notify = -1;
	S->started = S->last = sbx_now_ms();
	json_decref(rec);
	supervise(S);
}

json_t *
sbx_warm_start(struct sbx_exec *p, const struct sbx_warm_opts *o,
    struct sbx_error *e)
{
	struct sup	    S;
	char		    name[SBX_WARM_NAME_MAX + 8], sock[80];
	char		    now[32], buf[1100], rel[SBX_LAYOUT_PATH_MAX];
	struct stat	    st;
	int		    sv[2], np[2], status;
	size_t		    len = 0;
	ssize_t		    n;
	pid_t		    pid;
	json_t		   *rec, *old;
	enum sbx_cg_backend had_cg = p->cg.backend;
	struct pollfd	    pfd;
	long long	    deadline;
	struct sbx_error    e2;

	memset(&S, 0, sizeof(S));
	S.p = p;
	if (o->name != NULL)
		snprintf(name, sizeof(name), "%s", o->name);
	else if (sbx_warm_new_name(p->sb.agent, name) == -1)
		return sbx_error_sys(e, "random_failed", "getrandom"), NULL;
	if (sbx_warm_name_valid(name, e) == -1)
		return NULL;
	S.name = name;
	/* A fresh state root: sbx exec provisions the agent on the way (for
	 * its token), but a session without a proxy or a bridge never asks
	 * for one; provisioned here (idempotent), which makes run/. */
	SBX_LPATH(rel, SBX_L_RUN, NULL);
	if (fstatat(p->root.fd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1 &&
	    errno == ENOENT) {
		struct sbx_provision pv;
		int		     prc;

		sbx_provision_init(&pv, p->root.fd, p->sb.agent);
		prc = sbx_provision_agent(&pv, e);
		sbx_provision_release(&pv);
		if (prc == -1)
			return NULL;
	}
	if ((S.runfd = sbx_layout_open(p->root.fd, SBX_L_RUN, NULL,
		 O_RDONLY | O_DIRECTORY | O_CLOEXEC, e)) == -1)
		return NULL;
	memset(&e2, 0, sizeof(e2));
	if ((old = sbx_warmrec_load(S.runfd, name, &e2)) != NULL) {
		if (sbx_warmrec_alive(old)) {
			json_decref(old);
			close(S.runfd);
			sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
			    "session_exists",
			    "a session named %s is running "
			    "already",
			    name);
			return NULL;
		}
		json_decref(old);
		(void)sbx_warmrec_remove(S.runfd, name);
	}
	sbx_warm_sock_name(name, sock, sizeof(sock));
	if ((S.lfd = sbx_daemon_bind(S.runfd, sock, e)) == -1) {
		close(S.runfd);
		return NULL;
	}
	(void)fcntl(S.lfd, F_SETFL, O_NONBLOCK);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1 ||
	    pipe2(np, O_CLOEXEC) == -1) {
		sbx_error_sys(e, "socket", "session channel");
		goto fail;
	}
	S.chan = sv[0];
	S.notify = np[1];
	S.idle_ms = (long long)(o->idle_timeout * 1000.0);
	S.life_ms = (long long)(o->max_lifetime * 1000.0);
	sbx_time_utc_iso(now);
	rec = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:i,s:f,s:f,s:s}", "name",
	    name, "agent", p->sb.agent, "cwd", p->cwd, "network",
	    sbx_netmode_name(p->network), "started_at", now, "policy",
	    o->policy, "uid", (int)geteuid(), "idle_timeout", o->idle_timeout,
	    "max_lifetime", o->max_lifetime, "state", "running");
	if (p->limits != NULL)
		json_object_set(rec, "limits", p->limits);
	/* The proxy's session of the sandbox: each command's client takes
	 * its violations and credentials from it by this run id
	 * (sbx_proxyclient_take). */
	if (p->proxy_ctl >= 0) {
		json_object_set_new(rec, "proxy_run",
		    json_string(p->proxy_run));
		json_object_set_new(rec, "credentials",
		    json_boolean(p->creds != NULL && p->creds->n > 0));
	}
	/* The secrets whose placeholder the session's environment holds:
	 * each command's client sends the others' current values
	 * (secrets_per_command), never these (the proxy injects them). */
	if (p->creds != NULL && p->creds->n > 0) {
		json_t *b = json_array();
		size_t	i;

		for (i = 0; i < p->creds->n; i++)
			json_array_append_new(b,
			    json_string(p->creds->rule[i].secret));
		json_object_set_new(rec, "bound_secrets", b);
	}
	fflush(NULL);
	/* The starter's cgroup proved the limits can be enforced; the
	 * session's supervisor makes its own (see sup_cgroup()). */
	if (sbx_cgroup_destroy(&p->cg, e) == -1) {
		json_decref(rec);
		goto fail;
	}
	p->cg.backend = had_cg;
	if ((pid = fork()) == -1) {
		json_decref(rec);
		sbx_error_sys(e, "fork_failed", "fork");
		goto fail;
	}
	if (pid == 0) {
		close(np[0]);
		setsid();
		if ((pid = fork()) != 0)
			_exit(pid == -1 ? 1 : 0);
		sup_main(&S, rec, sv[1]);
	}
	json_decref(rec);
	close(np[1]);
	close(sv[0]);
	close(sv[1]);
	close(S.lfd);
	waitpid(pid, &status, 0);
	deadline = sbx_now_ms() + 60000;
	while (sbx_now_ms() < deadline && len < sizeof(buf) - 1) {
		pfd.fd = np[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - sbx_now_ms())) <= 0)
			break;
		if ((n = read(np[0], buf + len, sizeof(buf) - 1 - len)) <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strchr(buf, '\n') != NULL)
			break;
	}
	close(np[0]);
	buf[len] = '\0';
	if (strncmp(buf, "OK\n", 3) == 0) {
		rec = sbx_warmrec_load(S.runfd, name, e);
		close(S.runfd);
		return rec;
	}
	buf[strcspn(buf, "\n")] = '\0';
	sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "sandbox_setup_failed",
	    "session %s could not start: %s", name,
	    len > 1 ? buf + 1 : "its supervisor did not answer");
	(void)sbx_warmrec_remove(S.runfd, name);
	close(S.runfd);
	return NULL;
fail:
	close(S.lfd);
	(void)sbx_warmrec_remove(S.runfd, name);
	close(S.runfd);
	return NULL;
}

/* ---- the client ---- */

int
sbx_warm_connect(int rootfd, const char *name, struct sbx_error *e)
{
	struct ucred cr;
	socklen_t    cl = sizeof(cr);
	char	     sock[80];
	int	     fd, err;

	if (sbx_warm_name_valid(name, e) == -1)
		return -1;
	sbx_warm_sock_name(name, sock, sizeof(sock));
	/* Through run/ opened without following symlinks (daemon.c). */
	if ((fd = sbx_daemon_connect(rootfd, sock, "session", e)) == -1) {
		err = e->sys_errno;
		if (err == ENOENT)
			return sbx_error_set(e, SBX_K_NOT_FOUND, "session",
			    "no_such_session", "no session named %s", name);
		if (err == EACCES || err == EPERM)
			return sbx_error_set(e, SBX_K_USER_DENIED, "session",
			    "session_owner",
			    "session %s belongs to another user", name);
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "session",
		    "session_gone",
		    "session %s is not running (its "
		    "supervisor is gone; sbx exec gc removes what is left)",
		    name);
	}
	/* Our descriptors go to whoever serves the socket: only to a
	 * supervisor of our own uid (a socket of another's, however it got
	 * its name, gets nothing). */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) == -1 ||
	    cr.uid != geteuid()) {
		close(fd);
		return sbx_error_set(e, SBX_K_USER_DENIED, "session",
		    "session_owner", "session %s belongs to another user",
		    name);
	}
	return fd;
}

static int
push_tok(struct sbx_buf *b, char t, const char *v)
{
	return sbx_buf_append(b, &t, 1) | sbx_buf_append(b, v, strlen(v) + 1);
}

/* The request carries the secrets' values: wiped, not just freed. */
static void
buf_wipe(struct sbx_buf *b)
{
	if (b->p != NULL)
		explicit_bzero(b->p, b->cap);
	sbx_buf_release(b);
}

int
sbx_warm_send(int conn, const struct sbx_warm_cmd *c, struct sbx_error *e)
{
	struct sbx_buf	b = SBX_BUF_INIT;
	struct msghdr	m;
	struct iovec	iov[3];
	struct cmsghdr *cm;
	union {
		char	       b[CMSG_SPACE(3 * sizeof(int))];
		struct cmsghdr align;
	} u;
	char	 q = c->background ? SBX_WARM_O_BG : SBX_WARM_O_REQ;
	uint32_t len;
	size_t	 i;
	ssize_t	 n;
	int	 rc = 0;

	if (c->shell != NULL)
		rc |= push_tok(&b, SBX_WARM_T_SHELL, c->shell);
	for (i = 0; c->argv != NULL && c->argv[i] != NULL; i++)
		rc |= push_tok(&b, SBX_WARM_T_ARG, c->argv[i]);
	for (i = 0; c->env != NULL && c->env[i] != NULL; i++)
		rc |= push_tok(&b, SBX_WARM_T_ENV, c->env[i]);
	for (i = 0; c->rlimits != NULL && c->rlimits[i] != NULL; i++)
		rc |= push_tok(&b, SBX_WARM_T_RLIMIT, c->rlimits[i]);
	if (c->cwd != NULL)
		rc |= push_tok(&b, SBX_WARM_T_CWD, c->cwd);
	if (rc != 0) {
		buf_wipe(&b);
		return sbx_error_sys(e, "nomem", "session request");
	}
	if (b.len > SBX_WARM_REQ_MAX) {
		buf_wipe(&b);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "command",
		    "too_long",
		    "the command and its environment exceed %u "
		    "bytes",
		    SBX_WARM_REQ_MAX);
	}
	len = (uint32_t)b.len;
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	iov[0].iov_base = &q;
	iov[0].iov_len = 1;
	iov[1].iov_base = &len;
	iov[1].iov_len = sizeof(len);
	/* All in one message where it fits: pid 1 reads it in one wake-up
	 * (the rest, if any, follows). */
	iov[2].iov_base = b.p;
	iov[2].iov_len = b.len;
	m.msg_iov = iov;
	m.msg_iovlen = 3;
	m.msg_control = u.b;
	m.msg_controllen = sizeof(u.b);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(3 * sizeof(int));
	memcpy(CMSG_DATA(cm), c->fd, 3 * sizeof(int));
	if ((n = sendmsg(conn, &m, MSG_NOSIGNAL)) < 5 ||
	    sbx_fs_write_all(conn, b.p + (n - 5), b.len - (size_t)(n - 5)) ==
		-1) {
		buf_wipe(&b);
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "session",
		    "session_gone",
		    "the session ended before the command "
		    "was sent");
	}
	buf_wipe(&b);
	return 0;
}

int
sbx_warm_recv(int conn, struct sbx_warm_cmd *c, struct sbx_error *e)
{
	ssize_t n;
	char   *nl, *l;
	size_t	ll;
	int	v, done = 0;

	n = read(conn, c->lbuf + c->llen, sizeof(c->lbuf) - 1 - c->llen);
	if (n == -1 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "session",
		    "session_gone",
		    "the session ended while the command "
		    "ran");
	c->llen += (size_t)n;
	while (!done && (nl = memchr(c->lbuf, '\n', c->llen)) != NULL) {
		*nl = '\0';
		l = c->lbuf;
		ll = (size_t)(nl - c->lbuf) + 1;
		if (strcmp(l, SBX_INIT_W_RUNNING) == 0)
			c->running = 1;
		else if (sscanf(l, SBX_INIT_W_EXEC " %d", &v) == 1)
			c->exec_errno = v;
		else if (sscanf(l, SBX_WARM_W_CGROUP " %d", &v) == 1)
			c->cgroup_errno = v;
		else if (sscanf(l, SBX_WARM_W_FORK " %d", &v) == 1) {
			c->fork_errno = v;
			done = 1;
		} else if (sscanf(l, SBX_INIT_W_EXIT " %d", &v) == 1) {
			c->exit_code = v;
			done = 1;
		} else if (sscanf(l, SBX_INIT_W_SIGNAL " %d", &v) == 1) {
			c->signo = v;
			c->exit_code = 128 + v;
			done = 1;
		} else if (strncmp(l, SBX_INIT_W_FSDENY " ", 7) == 0 ||
		    strncmp(l, SBX_INIT_W_SOCKDENY " ", 9) == 0) {
			if (c->fsdeny == NULL)
				c->fsdeny = json_array();
			if (json_array_size(c->fsdeny) < 64)
				json_array_append_new(c->fsdeny,
				    json_string(l));
		} else if (strncmp(l, SBX_WARM_W_ERROR " ", 6) == 0) {
			/* pid 1 refused the request (a client of ours
			 * that broke the protocol): this one only. */
			sbx_error_set(e, SBX_K_EXECUTION_ERROR, "session",
			    "session_request",
			    "session refused the request (%.64s)", l + 6);
			return -1;
		} else if (strncmp(l, "gone ", 5) == 0) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, "session",
			    "session_gone", "the session ended (%s)", l + 5);
			return -1;
		}
		memmove(c->lbuf, c->lbuf + ll, c->llen - ll);
		c->llen -= ll;
	}
	if (c->llen == sizeof(c->lbuf) - 1)
		c->llen = 0;
	return done;
}

int
sbx_warm_kill(int conn)
{
	return send(conn, "K", 1, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int
sbx_warm_stop(int rootfd, const char *name, int timeout_ms, struct sbx_error *e)
{
	long long  deadline = sbx_now_ms() + timeout_ms;
	json_t	  *rec;
	json_int_t pid;
	int	   runfd;

	if ((runfd = sbx_layout_open(rootfd, SBX_L_RUN, NULL,
		 O_RDONLY | O_DIRECTORY | O_CLOEXEC, e)) == -1) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "session", "no_such_session",
		    "no session named %s", name);
		return -1;
	}
	if ((rec = sbx_warmrec_load(runfd, name, e)) == NULL) {
		close(runfd);
		return -1;
	}
	pid = json_integer_value(json_object_get(rec, "pid"));
	if (!sbx_warmrec_alive(rec)) {
		/* Its supervisor is gone: what is left goes now. */
		(void)sbx_warmrec_remove(runfd, name);
		json_decref(rec);
		close(runfd);
		return 0;
	}
	/* The supervisor ends the sandbox, a command running in it
	 * included, and removes the record.  kill(2) tells whose it is. */
	if (kill((pid_t)pid, SIGTERM) == -1) {
		json_decref(rec);
		close(runfd);
		if (errno == EPERM)
			return sbx_error_set(e, SBX_K_USER_DENIED, "session",
			    "session_owner",
			    "session %s belongs to another "
			    "user",
			    name);
		return sbx_error_sys(e, "kill_failed", "session %s", name);
	}
	while (sbx_warmrec_alive(rec) && sbx_now_ms() < deadline)
		poll(NULL, 0, 10);
	if (sbx_warmrec_alive(rec)) {
		json_decref(rec);
		close(runfd);
		return sbx_error_set(e, SBX_K_TIMEOUT, "session",
		    "stop_timeout", "session %s did not stop in time", name);
	}
	json_decref(rec);
	close(runfd);
	return 0;
}

/* ---- a background job of a session (its host side) ---- */

static int
job_deliver(void *arg, const void *p, size_t n)
{
	struct sbx_run *r = arg;

	if (r->sink_write != NULL && r->sink_write(r->sink_arg, p, n) == -1 &&
	    r->sink_errno == 0)
		r->sink_errno = errno != 0 ? errno : EIO;
	return 0;
}

/*
 * The run of a session's background job, in its detached supervisor
 * (jobsup.c's monitor, through sbx_exec.run_hook): the command goes to
 * the session's pid 1 as a job ('B'), which starts it under a subreaper
 * of its own; its output (standard output and error, one pipe) goes
 * through the scrubber into the job's log; a signal to the supervisor
 * (sbx exec kill) is a 'K'; the session's end is the job's.
 */
int
sbx_warm_job_run(struct sbx_exec *p, struct sbx_run *r, struct sbx_error *e)
{
	struct sbx_warm_cmd    *c = p->run_arg;
	struct sbx_scrub_stream ss;
	struct pollfd		pfd[3];
	char			buf[16384];
	ssize_t			n;
	long long		t0 = sbx_now_ms();
	int			conn, pp[2], devnull, ended = 0, said = 0;
	int			rc;
	unsigned char		sig;

	if ((conn = sbx_warm_connect(p->root.fd, p->req->session_name, e)) ==
	    -1)
		return -1;
	if (pipe2(pp, O_CLOEXEC) == -1 ||
	    (devnull = open("/dev/null", O_RDWR | O_CLOEXEC)) == -1) {
		close(conn);
		return sbx_error_sys(e, "pipe_failed", "pipe");
	}
	c->fd[0] = devnull;
	c->fd[1] = c->fd[2] = pp[1];
	c->background = 1;
	rc = sbx_warm_send(conn, c, e);
	close(pp[1]);
	close(devnull);
	if (rc == -1) {
		close(pp[0]);
		close(conn);
		return -1;
	}
	if (r->scrub != NULL)
		sbx_scrub_stream_init(&ss, r->scrub, job_deliver, r);
	while (!ended || pp[0] >= 0) {
		pfd[0].fd = ended ? -1 : conn;
		pfd[0].events = POLLIN;
		pfd[1].fd = pp[0];
		pfd[1].events = POLLIN;
		pfd[2].fd = ended ? -1 : r->signal_fd;
		pfd[2].events = POLLIN;
		if (poll(pfd, 3, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP))) {
			n = read(pp[0], buf, sizeof(buf));
			if (n > 0 && r->scrub != NULL)
				(void)sbx_scrub_write(&ss, buf, (size_t)n);
			else if (n > 0)
				(void)job_deliver(r, buf, (size_t)n);
			else if (n == 0 || errno != EINTR) {
				if (r->scrub != NULL)
					(void)sbx_scrub_flush(&ss);
				close(pp[0]);
				pp[0] = -1;
			}
		}
		if (pfd[2].fd >= 0 && (pfd[2].revents & POLLIN) &&
		    read(r->signal_fd, &sig, 1) == 1 && r->killed_by == NULL) {
			/* sbx exec kill: the job's every process goes. */
			r->killed_by = "user";
			r->user_signal = sig;
			(void)sbx_warm_kill(conn);
		}
		if (pfd[0].fd >= 0 &&
		    (pfd[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			rc = sbx_warm_recv(conn, c, e);
			if (!said && (c->running || c->exec_errno)) {
				/* The starter waits for this (jobsup.c). */
				said = 1;
				if (r->notify_fd >= 0) {
					n = snprintf(buf, sizeof(buf), "%c%d\n",
					    c->exec_errno ? 'E' : 'R',
					    c->exec_errno);
					(void)sbx_fs_write_all(r->notify_fd,
					    buf, (size_t)n);
					close(r->notify_fd);
					r->notify_fd = -1;
				}
			}
			if (rc == -1) {
				/* The session stopped (or its pid 1 refused
				 * the job): the job went with it. */
				if (!c->running && !c->exec_errno) {
					close(conn);
					if (pp[0] >= 0)
						close(pp[0]);
					return -1;
				}
				if (r->killed_by == NULL)
					r->killed_by = "session_stopped";
				c->signo = SIGKILL;
				c->exit_code = 128 + SIGKILL;
				ended = 1;
			} else if (rc == 1)
				ended = 1;
		}
	}
	close(conn);
	if (c->fork_errno != 0) {
		errno = c->fork_errno;
		return sbx_error_sys(e, "pids_exhausted",
		    "session %s has no room for the job's process",
		    p->req->session_name);
	}
	r->started = 1;
	r->running = c->running;
	r->exec_errno = c->exec_errno;
	r->exit_code = c->exit_code;
	r->signo = c->signo;
	r->duration_ms = sbx_now_ms() - t0;
	return 0;
}
