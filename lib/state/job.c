/* job.c: background job records. */
#include <sys/random.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "envelope.h"
#include "fsutil.h"
#include "job.h"

int
sbx_job_new_id(char out[SBX_JOB_LEN + 1])
{
	unsigned char	 r[SBX_JOB_LEN / 2];
	size_t		 i;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	for (i = 0; i < sizeof(r); i++)
		snprintf(out + 2 * i, 3, "%02x", r[i]);
	return 0;
}

int
sbx_job_write(int jobs_fd, const char *id, const json_t *rec,
    struct sbx_error *e)
{
	char	 name[64];
	char	*s;
	int	 rc;

	snprintf(name, sizeof(name), "%s.json", id);
	if ((s = sbx_envelope_dump(rec)) == NULL)
		return sbx_error_sys(e, "nomem", "job record");
	rc = sbx_fs_write_atomic(jobs_fd, name, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

json_t *
sbx_job_read(int jobs_fd, const char *id, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 name[64];
	json_t		*j;

	if (sbx_names_job_id_valid(id, e) == -1)
		return NULL;
	snprintf(name, sizeof(name), "%s.json", id);
	if (sbx_fs_read_file_at(jobs_fd, name, SBX_JOB_RECORD_MAX, &b, e) ==
	    -1) {
		if (e->kind && strcmp(e->kind, SBX_K_NOT_FOUND) == 0)
			sbx_error_set(e, SBX_K_NOT_FOUND, "job", "unknown_job",
			    "no job %s for this agent", id);
		sbx_buf_release(&b);
		return NULL;
	}
	j = sbx_json_parse(b.p, b.len, SBX_JOB_RECORD_MAX, e);
	sbx_buf_release(&b);
	return j;
}

int
sbx_job_proc_starttime(pid_t pid, unsigned long long *out)
{
	char	 path[64], buf[1024], *p;
	int	 fd, i;
	ssize_t	 n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* comm may contain spaces and parentheses: skip past the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL)
		return -1;
	p++;
	for (i = 3; i <= 22 && p; i++) {
		while (*p == ' ')
			p++;
		if (i == 22)
			return sscanf(p, "%llu", out) == 1 ? 0 : -1;
		p = strchr(p, ' ');
	}
	return -1;
}

/* A zombie has exited: it only waits to be reaped. */
static int
proc_is_zombie(pid_t pid)
{
	char	 path[64], buf[512], *p;
	int	 fd;
	ssize_t	 n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ')
		return 0;
	return p[2] == 'Z' || p[2] == 'X';
}

int
sbx_job_alive(const json_t *rec)
{
	json_int_t		 pid;
	unsigned long long	 st, want;

	pid = json_integer_value(json_object_get(rec, "pid"));
	want = (unsigned long long)json_integer_value(json_object_get(rec,
	    "pid_start"));
	if (pid <= 1 || (kill((pid_t)pid, 0) == -1 && errno == ESRCH))
		return 0;
	if (sbx_job_proc_starttime((pid_t)pid, &st) == -1)
		return 0;
	return st == want && !proc_is_zombie((pid_t)pid);
}

int
sbx_job_expired(const json_t *rec, time_t now, unsigned days)
{
	const char	*s = json_string_value(json_object_get(rec,
			    "ended_at"));
	struct tm	 tm;
	char		*end;
	time_t		 t;

	if (s == NULL || days == 0)
		return 0;
	memset(&tm, 0, sizeof(tm));
	if ((end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) == NULL ||
	    *end != '\0' || (t = timegm(&tm)) == (time_t)-1)
		return 0;
	return now - t > (time_t)days * 86400;
}

int
sbx_job_remove(int jobs_fd, const char *id)
{
	char	 name[64];
	int	 rc = 0;

	/* The log first: a record without its log is still listed and can
	 * be pruned again; a log without a record would be found by no one. */
	snprintf(name, sizeof(name), "%s.log", id);
	if (unlinkat(jobs_fd, name, 0) == -1 && errno != ENOENT)
		rc = -1;
	snprintf(name, sizeof(name), "%s.json", id);
	if (unlinkat(jobs_fd, name, 0) == -1 && errno != ENOENT)
		rc = -1;
	return rc;
}

