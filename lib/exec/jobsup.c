/*
 * jobsup.c: background jobs (see jobsup.h), moved from cmd/sbx-exec.c.
 */
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "cli.h"
#include "envelope.h"
#include "exec.h"
#include "fsutil.h"
#include "job.h"
#include "joblog.h"
#include "jobsup.h"
#include "layout.h"
#include "names.h"
#include "proc.h"
#include "root.h"
#include "run.h"
#include "scrub.h"
#include "settings.h"
#include "time.h"

static int
jobs_dir(struct sbx_root *root, const char *agent, int create,
    struct sbx_error *e)
{
	char	 rel[128];

	SBX_LPATH(rel, SBX_L_AGENT_JOBS, agent);
	if (create)
		return sbx_fs_mkdirs_at(root->fd, rel, 0700, e);
	return sbx_fs_open_beneath(root->fd, rel, O_RDONLY | O_DIRECTORY, e);
}

static int
log_sink(void *log, const void *data, size_t n)
{
	return sbx_joblog_write(log, data, n);
}

/*
 * The run's verdict into its record: the one a foreground run's envelope
 * gives (sbx_exec_outcome_run: its status, the result object, the failure
 * and its kind), so that poll and wait say what the envelope would have;
 * and the fields a record has always had, for ps and older readers.
 */
static void
record_outcome(struct sbx_exec *p, json_t *rec, struct sbx_joblog *jl)
{
	struct sbx_run		*r = &p->run;
	struct sbx_exec_outcome	 o;
	json_t			*res;

	/* sbx exec kill --force is the supervisor's SIGUSR1: it stands for
	 * the SIGKILL it sends the sandbox. */
	if (r->killed_by != NULL && strcmp(r->killed_by, "user") == 0 &&
	    r->user_signal == SIGUSR1)
		r->user_signal = SIGKILL;
	sbx_exec_outcome_run(p, &o);
	json_object_set_new(rec, "state", json_string("exited"));
	if (!r->started) {
		json_object_set_new(rec, "error", sbx_json_bytes(
		    r->setup_err.p ? r->setup_err.p : "", r->setup_err.len));
		(void)sbx_joblog_write(jl, r->setup_err.p ? r->setup_err.p :
		    "", r->setup_err.len);
	} else if (r->exec_errno)
		json_object_set_new(rec, "error", json_string(
		    strerror(r->exec_errno)));
	json_object_set_new(rec, "exit_code", json_integer(o.code));
	if (r->signo)
		json_object_set_new(rec, "signal", json_integer(r->signo));
	if (r->killed_by)
		json_object_set_new(rec, "killed_by",
		    json_string(r->killed_by));
	if (r->limit)
		json_object_set_new(rec, "limit", json_string(r->limit));
	json_object_set_new(rec, "duration_ms", json_integer(r->duration_ms));
	if ((res = sbx_exec_outcome_result(&o)) != NULL)
		json_object_set(rec, "result", res);
	json_object_set_new(rec, "outcome", sbx_exec_outcome_verdict(&o));
	sbx_exec_outcome_release(&o);
}

/* The detached supervisor of a background job. */
static void __attribute__((noreturn))
monitor(struct sbx_exec *p, const char *id, int jobs_fd, int log_fd,
    int notify_fd, json_t *rec)
{
	struct sbx_error	 e;
	struct sbx_run		*r = &p->run;
	struct sbx_joblog	 jl;
	unsigned long long	 st = 0;
	char			 now[32], line[32];
	int			 devnull, rc;
	size_t			 nwarn;

	if ((devnull = open("/dev/null", O_RDWR)) >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	/* Like stdout, the caller's envelope descriptor is released: whoever
	 * reads it to its end must not wait for the job's. */
	if (p->req->detach_fd > 2)
		close(p->req->detach_fd);
	(void)!chdir("/");
	(void)sbx_exec_signals(1);
	signal(SIGPIPE, SIG_IGN);
	sbx_job_proc_starttime(getpid(), &st);
	json_object_set_new(rec, "pid", json_integer(getpid()));
	json_object_set_new(rec, "pid_start", json_integer((json_int_t)st));
	json_object_set_new(rec, "state", json_string("running"));
	/*
	 * The record is the job: without it `ps` never lists the job and
	 * `poll` says there is none.  So the caller prints the job's id only
	 * once the record is on disk (written, fsync'd, renamed into place,
	 * the directory fsync'd); on a full disk it says why instead and
	 * nothing is left behind (issue 30: a job id was printed, no record
	 * was written, an empty log stayed).
	 */
	memset(&e, 0, sizeof(e));
	if (sbx_job_write(jobs_fd, id, rec, &e) == -1)
		rc = e.sys_errno > 0 ? e.sys_errno : EIO;
	else
		rc = fsync(jobs_fd) == -1 ? errno : 0;
	if (rc != 0) {
		(void)sbx_job_remove(jobs_fd, id);
		snprintf(line, sizeof(line), "W%d\n", rc);
		(void)sbx_fs_write_all(notify_fd, line, strlen(line));
		_exit(0);
	}
	snprintf(line, sizeof(line), "P%d\n", (int)getpid());
	(void)sbx_fs_write_all(notify_fd, line, strlen(line));

	/* The cgroup carries the supervisor's pid in its name (that is how
	 * `gc` tells leftovers from live runs): make it here, not in the
	 * parent that is about to exit. */
	if (p->cg.backend != SBX_CG_NONE &&
	    sbx_exec_cgroup(p, p->cg_v2root, &e) == -1) {
		json_object_set_new(rec, "state", json_string("failed"));
		json_object_set_new(rec, "error", json_string(e.message));
		(void)sbx_fs_write_all(notify_fd, "F0\n", 3);
		sbx_time_utc_iso(now);
		json_object_set_new(rec, "ended_at", json_string(now));
		sbx_job_write(jobs_fd, id, rec, &e);
		_exit(0);
	}
	sbx_exec_run_setup(p, r);
	r->out_fd = log_fd;
	r->err_fd = log_fd;
	/* Through the capped log: the head and the latest output are
	 * kept, the file never grows past log_cap (see background()). */
	sbx_joblog_init(&jl, log_fd, p->log_cap);
	r->sink_write = log_sink;
	r->sink_arg = &jl;
	r->notify_fd = notify_fd;
	nwarn = json_array_size(p->warnings);
	if (p->run_hook != NULL) {
		rc = p->run_hook(p, r, &e);
		if (rc == -1 && r->notify_fd >= 0)
			(void)sbx_fs_write_all(r->notify_fd, "F0\n", 3);
	} else {
		rc = sbx_run_sandbox(r, &e);
		p->events = sbx_exec_finish_limits(p, r);
	}
	if (p->events != NULL && json_object_size(p->events) > 0)
		json_object_set(rec, "limit_events", p->events);
	if (rc == -1) {
		json_object_set_new(rec, "state", json_string("failed"));
		json_object_set_new(rec, "error", json_string(e.message));
	} else
		record_outcome(p, rec, &jl);
	/* What happened during the run (a daemon restarted, see relay_open
	 * in exec.c; what the verdict warns of) for poll and wait: there is
	 * no envelope of the run. */
	if (json_array_size(p->warnings) > nwarn) {
		json_t	*w = json_array();
		size_t	 k;

		for (k = nwarn; k < json_array_size(p->warnings); k++)
			json_array_append(w, json_array_get(p->warnings, k));
		sbx_scrub_json(p->secrets.scrub, w);
		json_object_set_new(rec, "warnings", w);
	}
	/* In order on disk for whoever reads the file itself. */
	(void)sbx_joblog_finish(&jl);
	json_object_set_new(rec, "log_truncated", json_boolean(jl.truncated));
	json_object_set_new(rec, "log_dropped_bytes", json_integer(
	    (json_int_t)sbx_joblog_dropped(&jl)));
	sbx_time_utc_iso(now);
	json_object_set_new(rec, "ended_at", json_string(now));
	sbx_job_write(jobs_fd, id, rec, &e);
	_exit(0);
}

int
sbx_jobsup_start(struct sbx_exec *p, struct sbx_error *e)
{
	char			 id[SBX_JOB_LEN + 1], name[64], now[32];
	char			 buf[128], *logpath = p->logpath;
	char			 jobs[SBX_LAYOUT_PATH_MAX];
	int			 jobs_fd, log_fd, np[2], status, jpid = 0;
	size_t			 len = 0;
	ssize_t			 n;
	pid_t			 pid;
	json_t			*rec;
	char			 what = 0;
	int			 val = 0, werr = 0;
	enum sbx_cg_backend	 had_cg = p->cg.backend;
	struct pollfd		 pfd;
	long long		 deadline;

	if ((jobs_fd = jobs_dir(&p->root, p->sb.agent, 1, e)) == -1)
		return -1;
	if (sbx_job_new_id(id) == -1)
		return sbx_error_sys(e, "random_failed", "getrandom");
	snprintf(p->job, sizeof(p->job), "%s", id);
	snprintf(name, sizeof(name), "%s.log", id);
	/* Read and written at offsets (the ring of a capped log), so not
	 * O_APPEND. */
	log_fd = openat(jobs_fd, name, O_RDWR | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd == -1)
		return sbx_error_sys(e, "log_failed", "cannot create the job "
		    "log %s/agents/%s/jobs/%s", p->root.path, p->sb.agent,
		    name);
	/*
	 * The log is the sandbox's output, so it is bounded as the
	 * sandbox's own files are: never more than jobs.max_log_bytes, nor
	 * than the run's largest file (--file-size, --disk).  The
	 * supervisor writes it, and as root it stays root (it must remove
	 * the run's cgroup): a write of root's may use the file system's
	 * reserved blocks, which only the cap keeps in bounds.  The file
	 * belongs to the sandbox's uid, so that disk quotas charge the
	 * sandbox's user, not root; it stays in root's 0700 jobs directory,
	 * out of that uid's reach.
	 */
	{
		unsigned long long m = p->lim.file_size_mib;

		if (p->lim.disk_mib && (m == 0 || p->lim.disk_mib < m))
			m = p->lim.disk_mib;
		if (m != 0 && (m << 20) < p->log_cap)
			p->log_cap = m << 20;
	}
	if (p->drop_privs && fchown(log_fd, p->run_uid, p->run_gid) == -1) {
		sbx_error_sys(e, "log_failed", "cannot hand the job log to "
		    "uid %u", (unsigned)p->run_uid);
		close(log_fd);
		return -1;
	}
	SBX_LPATH(jobs, SBX_L_AGENT_JOBS, p->sb.agent);
	snprintf(logpath, sizeof(p->logpath), "%s/%s/%s", p->root.path, jobs,
	    name);
	sbx_time_utc_iso(now);
	rec = json_pack("{s:s,s:s,s:o,s:s,s:s,s:s,s:s,s:I}", "job", id, "agent",
	    p->sb.agent, "command", sbx_exec_command_json(p->req), "cwd",
	    p->cwd, "log_file", logpath, "started_at", now, "network",
	    sbx_netmode_name(p->network), "log_max_bytes",
	    (json_int_t)p->log_cap);
	/* A session's job says which (its processes live and die with
	 * it). */
	if (p->req->session_name != NULL)
		json_object_set_new(rec, "session",
		    json_string(p->req->session_name));
	if (pipe2(np, O_CLOEXEC) == -1) {
		json_decref(rec);
		close(log_fd);
		return sbx_error_sys(e, "pipe_failed", "pipe");
	}
	fflush(NULL);
	/* The parent's cgroup proved the limits can be enforced; the
	 * supervisor makes its own (see monitor()). */
	if (sbx_cgroup_destroy(&p->cg, e) == -1)
		goto fail;
	p->cg.backend = had_cg;
	if ((pid = fork()) == -1) {
		sbx_error_sys(e, "fork_failed", "fork");
		goto fail;
	}
	if (pid == 0) {
		/* Detach: own session, and reparented to init (or the
		 * nearest subreaper) so the caller can exit. */
		close(np[0]);
		setsid();
		if ((pid = fork()) != 0)
			_exit(pid == -1 ? 1 : 0);
		monitor(p, id, jobs_fd, log_fd, np[1], rec);
	}
	close(np[1]);
	close(log_fd);
	waitpid(pid, &status, 0);
	/* Wait (bounded) for the supervisor's pid, then for the sandbox to
	 * start or fail, so that a bad command is reported here. */
	deadline = sbx_now_ms() + 30000;
	while (sbx_now_ms() < deadline && len < sizeof(buf) - 1) {
		pfd.fd = np[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - sbx_now_ms())) <= 0)
			break;
		n = read(np[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (sscanf(buf, "P%d\n%c%d", &jpid, &what, &val) == 3)
			break;
		if (buf[0] == 'W' && strchr(buf, '\n') != NULL &&
		    sscanf(buf, "W%d", &werr) == 1)
			break;
	}
	close(np[0]);
	json_decref(rec);
	if (werr > 0) {
		/* The supervisor could not record the job: it removed the
		 * log and whatever it wrote, and ran nothing. */
		(void)sbx_job_remove(jobs_fd, id);
		errno = werr;
		sbx_error_sys(e, "job_record_failed", "cannot record the job "
		    "in %s/agents/%s/jobs/%s.json, so it was not started",
		    p->root.path, p->sb.agent, id);
		if (werr == ENOSPC || werr == EDQUOT)
			sbx_error_hint(e, "the file system of the state root "
			    "is full: free space there and start the job "
			    "again");
		return -1;
	}
	if (jpid <= 0)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "supervisor_failed", "the job supervisor did not start");
	if (what == 'F' || what == 'E') {
		/* Let the supervisor finish its record first (a zombie
		 * has: its reaper may be slow to wait for it). */
		for (n = 0; n < 100 && sbx_proc_running(jpid, 0); n++)
			usleep(10000);
	}
	p->job_pid = jpid;
	p->job_what = what == 'F' || what == 'E' ? what : 'R';
	p->job_val = val;
	return 0;
fail:
	json_decref(rec);
	close(np[0]);
	close(np[1]);
	close(log_fd);
	return -1;
}

/* ---- ps, poll, wait, kill ---------------------------------------------- */

static void
job_status_fields(json_t *res, json_t *rec, int *alive)
{
	const char	*state = json_string_value(json_object_get(rec,
			    "state"));
	json_t		*v;

	*alive = state && strcmp(state, "running") == 0 && sbx_job_alive(rec);
	if (state && strcmp(state, "running") == 0 && !*alive)
		state = "lost";	/* the supervisor died without a record */
	json_object_set_new(res, "alive", json_boolean(*alive));
	json_object_set_new(res, "state", json_string(state ? state : "lost"));
	if (!*alive && (v = json_object_get(rec, "exit_code")) != NULL)
		json_object_set(res, "exit_code", v);
	if ((v = json_object_get(rec, "killed_by")) != NULL)
		json_object_set(res, "killed_by", v);
	if ((v = json_object_get(rec, "limit")) != NULL)
		json_object_set(res, "limit", v);
	if ((v = json_object_get(rec, "warnings")) != NULL &&
	    json_is_array(v))
		json_object_set(res, "warnings", v);
}

/*
 * An ended job's verdict into res (poll, wait): the result object of the
 * run, as a foreground run's envelope has it (the job's own fields above
 * win: exit_code is the status sbx exec would have exited with, limit
 * names the idle timeout too), and the verdict (outcome: ok, code, and
 * the failure's kind, reason and message).  A record of an older sbx has
 * neither.
 */
static void
job_outcome_fields(json_t *res, json_t *rec)
{
	json_t	*v;

	if ((v = json_object_get(rec, "result")) != NULL && json_is_object(v))
		json_object_update_missing(res, v);
	if ((v = json_object_get(rec, "outcome")) != NULL && json_is_object(v))
		json_object_set(res, "outcome", v);
}

/* log_tail, log_truncated and log_dropped_bytes of a job into res. */
static void
log_tail_json(json_t *res, int jobs_fd, const char *id, const json_t *rec,
    int tail_lines)
{
	struct sbx_buf		 b = SBX_BUF_INIT;
	unsigned long long	 dropped = 0, cap;
	char			 name[64];

	snprintf(name, sizeof(name), "%s.log", id);
	/* The cap the supervisor wrote with, which tells where the ring
	 * is; a record without one (an older sbx) has a plain log. */
	cap = (unsigned long long)json_integer_value(json_object_get(rec,
	    "log_max_bytes"));
	(void)sbx_joblog_tail(jobs_fd, name, cap, tail_lines, &b, &dropped);
	json_object_set_new(res, "log_tail", sbx_json_bytes(b.p ? b.p : "",
	    b.len));
	json_object_set_new(res, "log_truncated", json_boolean(dropped > 0));
	json_object_set_new(res, "log_dropped_bytes",
	    json_integer((json_int_t)dropped));
	sbx_buf_release(&b);
}

/* A job record that cannot be read: the refusal names it and says what
 * is left (the log) and how to repair. */
static void
job_damaged(struct sbx_error *e, const char *agent, const char *id)
{
	char dir[128], rel[192];

	SBX_LPATH(dir, SBX_L_AGENT_JOBS, agent);
	snprintf(rel, sizeof(rel), "%s%s%s.json", dir,
	    dir[0] != '\0' && dir[strlen(dir) - 1] == '/' ? "" : "/", id);
	sbx_error_in_file(e, rel,
	    "the job's status is lost (its output may remain in %.*s.log); "
	    "stop it with sbx exec kill if it still runs, then move the "
	    "record aside",
	    (int)(strlen(rel) - 5), rel);
}

json_t *
sbx_jobsup_load(struct sbx_root *root, const char *agent, const char *id,
    int *jobs_fd_out, struct sbx_error *e)
{
	json_t			*rec;
	int			 jobs_fd;

	if (sbx_names_job_id_valid(id, e) == -1)
		return NULL;
	if ((jobs_fd = jobs_dir(root, agent, 0, e)) == -1 ||
	    (rec = sbx_job_read(jobs_fd, id, e)) == NULL) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			sbx_error_set(e, SBX_K_NOT_FOUND, "job",
			    "unknown_job", "no job %s for agent %s", id,
			    agent);
		else if (jobs_fd >= 0)
			job_damaged(e, agent, id);
		if (jobs_fd >= 0)
			close(jobs_fd);
		return NULL;
	}
	*jobs_fd_out = jobs_fd;
	return rec;
}

/*
 * The record and its status fields.  The record is read before the
 * supervisor's liveness is checked: one that wrote its last record and
 * exited in between would look lost (a running record, nobody alive).
 * Read again after its death, the record is its last.
 */
static json_t *
load_status(struct sbx_root *root, const char *agent, const char *id,
    int *jobs_fd, json_t *res, int *alive, struct sbx_error *e)
{
	json_t		*rec;
	const char	*st;
	int		 again;

	for (again = 0;; again++) {
		if ((rec = sbx_jobsup_load(root, agent, id, jobs_fd, e)) ==
		    NULL)
			return NULL;
		job_status_fields(res, rec, alive);
		st = json_string_value(json_object_get(res, "state"));
		if (*alive || again || st == NULL || strcmp(st, "lost") != 0)
			return rec;
		json_decref(rec);
		close(*jobs_fd);
	}
}

json_t *
sbx_jobsup_poll(struct sbx_root *root, const char *agent, const char *id,
    int tail_lines, struct sbx_error *e)
{
	json_t	*rec, *res;
	int	 jobs_fd, alive;

	res = json_pack("{s:s}", "job", id);
	if ((rec = load_status(root, agent, id, &jobs_fd, res, &alive,
	    e)) == NULL) {
		json_decref(res);
		return NULL;
	}
	if (!alive)
		job_outcome_fields(res, rec);
	log_tail_json(res, jobs_fd, id, rec, tail_lines);
	close(jobs_fd);
	json_decref(rec);
	return res;
}

json_t *
sbx_jobsup_wait(struct sbx_root *root, const char *agent, const char *id,
    double timeout, int tail_lines, int *code, int *sig, struct sbx_error *e)
{
	json_t			*rec, *res;
	int			 jobs_fd, alive, pidfd, sfd;
	long long		 deadline;
	struct pollfd		 pfd;
	char			 c;

	*sig = 0;
	deadline = sbx_now_ms() + (long long)(timeout * 1000);
	sfd = sbx_exec_signals(0);
	for (;;) {
		res = json_pack("{s:s}", "job", id);
		if ((rec = load_status(root, agent, id, &jobs_fd, res, &alive,
		    e)) == NULL) {
			json_decref(res);
			return NULL;
		}
		if (!alive || sbx_now_ms() >= deadline)
			break;
		/* Sleep until the supervisor exits, a signal, or 200 ms. */
		pidfd = (int)syscall(SYS_pidfd_open,
		    (pid_t)json_integer_value(json_object_get(rec, "pid")), 0);
		pfd.fd = pidfd >= 0 ? pidfd : sfd;
		pfd.events = POLLIN;
		(void)poll(&pfd, 1, 200);
		if (pidfd >= 0)
			close(pidfd);
		json_decref(rec);
		json_decref(res);
		close(jobs_fd);
		if (sfd >= 0 && read(sfd, &c, 1) == 1) {
			*sig = (unsigned char)c;
			return NULL;
		}
	}
	if (!alive)
		job_outcome_fields(res, rec);
	json_object_set_new(res, "exited", json_boolean(!alive));
	json_object_set_new(res, "timed_out", json_boolean(alive));
	log_tail_json(res, jobs_fd, id, rec, tail_lines);
	close(jobs_fd);
	*code = alive ? SBX_EX_TIMEOUT : (int)json_integer_value(
	    json_object_get(res, "exit_code"));
	if (!alive && json_object_get(res, "exit_code") == NULL)
		*code = SBX_EX_FAILED;	/* lost: no status to give */
	if (!alive && json_is_string(json_object_get(res, "limit")) &&
	    strcmp(json_string_value(json_object_get(res, "limit")),
	    "wall_time") == 0)
		*code = SBX_EX_TIMEOUT;	/* as in the foreground */
	json_decref(rec);
	return res;
}

json_t *
sbx_jobsup_kill(struct sbx_root *root, const char *agent, const char *id,
    int force, struct sbx_error *e)
{
	json_t		*rec, *res;
	int		 jobs_fd, alive, i, killed = 0;
	pid_t		 pid;

	if ((rec = sbx_jobsup_load(root, agent, id, &jobs_fd, e)) == NULL)
		return NULL;
	close(jobs_fd);
	res = json_pack("{s:s}", "job", id);
	job_status_fields(res, rec, &alive);
	pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	/* The pid is trusted only together with its start time: a
	 * recycled pid is never signalled. */
	if (alive && kill(pid, force ? SIGUSR1 : SIGTERM) == 0) {
		killed = 1;
		for (i = 0; i < 500 && sbx_job_alive(rec); i++)
			usleep(10000);
	}
	if (killed) {
		json_decref(rec);
		if ((rec = sbx_jobsup_load(root, agent, id, &jobs_fd, e)) ==
		    NULL) {
			json_decref(res);
			return NULL;
		}
		close(jobs_fd);
		job_status_fields(res, rec, &alive);
	}
	json_object_set_new(res, "killed", json_boolean(killed));
	json_object_set_new(res, "signal", json_string(force ? "KILL" :
	    "TERM"));
	json_decref(rec);
	return res;
}

static int
cmp_started(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a,
	    "started_at"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b,
	    "started_at"));

	return strcmp(x ? x : "", y ? y : "");
}

json_t *
sbx_jobsup_ps(struct sbx_root *root, const char *agent, size_t *pruned,
    struct sbx_error *e)
{
	struct sbx_error	 ign;
	DIR			*d;
	struct dirent		*de;
	json_t			*jobs, *rec, *row, **v, *cfg;
	char			 id[SBX_JOB_LEN + 1];
	int			 jobs_fd, alive;
	size_t			 i, n = 0;
	unsigned		 keep_days;
	time_t			 now = time(NULL);

	*pruned = 0;
	/* Finished jobs older than jobs.keep_days go, record and log, so
	 * that agents/A/jobs does not grow for ever. */
	if (sbx_settings_global(root->fd, &cfg, e) == -1)
		return NULL;
	if (sbx_joblog_keep_days(cfg, &keep_days, e) == -1) {
		json_decref(cfg);
		return NULL;
	}
	json_decref(cfg);
	jobs = json_array();
	if ((jobs_fd = jobs_dir(root, agent, 0, &ign)) >= 0 &&
	    (d = fdopendir(jobs_fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strlen(de->d_name) != SBX_JOB_LEN + 5 ||
			    strcmp(de->d_name + SBX_JOB_LEN, ".json") != 0)
				continue;
			memcpy(id, de->d_name, SBX_JOB_LEN);
			id[SBX_JOB_LEN] = '\0';
			if (sbx_names_job_id_valid(id, &ign) == -1)
				continue;
			if ((rec = sbx_job_read(dirfd(d), id, &ign)) == NULL) {
				/* Listed as damaged, never skipped: a job
				 * that silently left ps would be waited
				 * for by no one. */
				if (sbx_error_absent(&ign))
					continue;
				job_damaged(&ign, agent, id);
				json_array_append_new(jobs,
				    json_pack("{s:s,s:s,s:s,s:s}", "job", id,
					"state", "damaged", "message",
					ign.message, "repair", ign.hint));
				continue;
			}
			row = json_pack("{s:s}", "job", id);
			job_status_fields(row, rec, &alive);
			if (!alive && sbx_job_expired(rec, now, keep_days) &&
			    sbx_job_remove(dirfd(d), id) == 0) {
				(*pruned)++;
				json_decref(row);
				json_decref(rec);
				continue;
			}
			json_object_set(row, "pid", json_object_get(rec, "pid"));
			json_object_set(row, "started_at",
			    json_object_get(rec, "started_at"));
			json_object_set(row, "command",
			    json_object_get(rec, "command"));
			json_object_set(row, "cwd", json_object_get(rec, "cwd"));
			json_array_append_new(jobs, row);
			json_decref(rec);
		}
		closedir(d);
	} else if (jobs_fd >= 0)
		close(jobs_fd);
	n = json_array_size(jobs);
	if ((v = calloc(n + 1, sizeof(*v))) != NULL) {
		for (i = 0; i < n; i++)
			v[i] = json_incref(json_array_get(jobs, i));
		qsort(v, n, sizeof(*v), cmp_started);
		json_array_clear(jobs);
		for (i = 0; i < n; i++)
			json_array_append_new(jobs, v[i]);
		free(v);
	}
	return jobs;
}
