/* job.h: background job records under agents/<agent>/jobs/. */
#ifndef SBX_JOB_H
#define SBX_JOB_H

#include <sys/types.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "names.h"

#define SBX_JOB_RECORD_MAX	(1u << 20)

int	 sbx_job_new_id(char out[SBX_JOB_LEN + 1]);
int	 sbx_job_write(int jobs_fd, const char *id, const json_t *,
	    struct sbx_error *);
json_t	*sbx_job_read(int jobs_fd, const char *id, struct sbx_error *);
/* Start time of pid in clock ticks since boot (/proc/PID/stat field 22):
 * with the pid it names one process, immune to pid reuse. */
int	 sbx_job_proc_starttime(pid_t, unsigned long long *);
/* Is the record's supervisor still the process it was? */
int	 sbx_job_alive(const json_t *);
/* The tail of a job's log: sbx_joblog_tail() in joblog.h. */
/* Has the finished job of this record (ended_at set) ended more than
 * days days before now?  0 when running, undated or days is 0. */
int	 sbx_job_expired(const json_t *, time_t now, unsigned days);
/* Remove a job's record and log from jobs_fd: 0, or -1 with errno. */
int	 sbx_job_remove(int jobs_fd, const char *id);

#endif
