/*
 * jobsup.h: background jobs of sbx exec: the detached supervisor that runs
 * a prepared sandbox (exec.h) and records it under agents/A/jobs/, and
 * what ps, poll, wait and kill say about jobs.  Nothing here prints or
 * exits (the supervisor's own process excepted, which ends with _exit).
 */
#ifndef SBX_JOBSUP_H
#define SBX_JOBSUP_H

#include <jansson.h>

#include "error.h"
#include "root.h"

struct sbx_exec;

/*
 * Start the prepared run as a background job: a detached supervisor runs
 * it; this returns once the sandbox started or failed to (exec->job,
 * job_pid, job_what, job_val, logpath; sbx_exec_outcome() judges them).
 */
int	 sbx_jobsup_start(struct sbx_exec *, struct sbx_error *);
/* One job's record: 0 and *rec, or -1 (kind not_found: no such job). */
json_t	*sbx_jobsup_load(struct sbx_root *, const char *agent, const char *id,
	    int *jobs_fd, struct sbx_error *);
/* {"job", "alive", "state", "exit_code"?, ...} and the log's tail; once
 * the job ended, its run's result keys and outcome (the verdict the
 * supervisor recorded, sbx_exec_outcome_run). */
json_t	*sbx_jobsup_poll(struct sbx_root *, const char *agent, const char *id,
	    int tail_lines, struct sbx_error *);
/*
 * Wait up to timeout seconds for the job to end (a signal to us ends the
 * wait: *sig is set).  The result has exited and timed_out; *code is the
 * exit status sbx exec wait gives (the job's, 124 on timeout, 125 lost).
 */
json_t	*sbx_jobsup_wait(struct sbx_root *, const char *agent, const char *id,
	    double timeout, int tail_lines, int *code, int *sig,
	    struct sbx_error *);
/* SIGTERM (force: the supervisor's SIGUSR1, a hard kill) to a live job. */
json_t	*sbx_jobsup_kill(struct sbx_root *, const char *agent, const char *id,
	    int force, struct sbx_error *);
/* The agent's jobs, oldest first; finished ones past jobs.keep_days are
 * removed on the way (*pruned). */
json_t	*sbx_jobsup_ps(struct sbx_root *, const char *agent, size_t *pruned,
	    struct sbx_error *);

#endif
