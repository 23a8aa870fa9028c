/*
 * warmrec.c: the records of warm sessions (warm.h): run/session-NAME.json
 * beside the session's socket run/session-NAME.sock.  No run engine here:
 * sbx provision status and sbx exec gc link this alone.
 */
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "job.h"
#include "names.h"
#include "warm.h"

#define REC_PREFIX "session-"
#define REC_SUFFIX ".json"

int
sbx_warm_name_valid(const char *name, struct sbx_error *e)
{
	const char *c;

	if (name == NULL || *name == '\0' || strlen(name) > SBX_WARM_NAME_MAX)
		goto bad;
	if (!((*name >= 'a' && *name <= 'z') || (*name >= '0' && *name <= '9')))
		goto bad;
	for (c = name; *c != '\0'; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
			*c == '_' || *c == '-'))
			goto bad;
	return 0;
bad:
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "session", "bad_name",
	    "argument `session` must match ^[a-z0-9][a-z0-9_-]{0,31}$");
}

int
sbx_warm_new_name(const char *agent, char out[SBX_WARM_NAME_MAX + 8])
{
	unsigned char r[3];
	char	      a[SBX_WARM_NAME_MAX - 6];

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return -1;
	/* AGENT-XXXXXX within the grammar: the agent's name cut short. */
	snprintf(a, sizeof(a), "%s", agent);
	snprintf(out, SBX_WARM_NAME_MAX + 8, "%s-%02x%02x%02x", a, r[0], r[1],
	    r[2]);
	return 0;
}

void
sbx_warm_sock_name(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, REC_PREFIX "%s.sock", name);
}

void
sbx_warm_rec_name(const char *name, char *buf, size_t n)
{
	snprintf(buf, n, REC_PREFIX "%s" REC_SUFFIX, name);
}

int
sbx_warmrec_write(int runfd, const char *name, const json_t *rec,
    struct sbx_error *e)
{
	char fn[80], *s;
	int  rc;

	sbx_warm_rec_name(name, fn, sizeof(fn));
	if ((s = sbx_envelope_dump(rec)) == NULL)
		return sbx_error_sys(e, "nomem", "session record");
	rc = sbx_fs_write_atomic(runfd, fn, s, strlen(s), 0600, e);
	free(s);
	return rc;
}

json_t *
sbx_warmrec_load(int runfd, const char *name, struct sbx_error *e)
{
	struct sbx_buf b = SBX_BUF_INIT;
	char	       fn[80];
	json_t	      *j;

	if (sbx_warm_name_valid(name, e) == -1)
		return NULL;
	sbx_warm_rec_name(name, fn, sizeof(fn));
	if (sbx_fs_read_file_at(runfd, fn, SBX_WARM_RECORD_MAX, &b, e) == -1) {
		if (sbx_error_absent(e))
			sbx_error_set(e, SBX_K_NOT_FOUND, "session",
			    "no_such_session", "no session named %s", name);
		return NULL;
	}
	j = sbx_json_parse(b.p, b.len, SBX_WARM_RECORD_MAX, e);
	sbx_buf_release(&b);
	if (j != NULL && !json_is_object(j)) {
		json_decref(j);
		j = NULL;
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, "session",
		    "damaged_record", "the record of session %s is damaged",
		    name);
	}
	return j;
}

int
sbx_warmrec_alive(const json_t *rec)
{
	/* The same pid and start time as a job's supervisor. */
	return sbx_job_alive(rec);
}

int
sbx_warmrec_remove(int runfd, const char *name)
{
	char fn[80];
	int  rc = 0;

	sbx_warm_sock_name(name, fn, sizeof(fn));
	if (unlinkat(runfd, fn, 0) == -1 && errno != ENOENT)
		rc = -1;
	sbx_warm_rec_name(name, fn, sizeof(fn));
	if (unlinkat(runfd, fn, 0) == -1 && errno != ENOENT)
		rc = -1;
	return rc;
}

json_t *
sbx_warmrec_list(int runfd, const char *agent, int reap, size_t *reaped,
    struct sbx_error *e)
{
	json_t	   *out = json_array(), *rec;
	char	  **names, name[SBX_WARM_NAME_MAX + 1];
	size_t	    n, i, len, pl = strlen(REC_PREFIX), sl = strlen(REC_SUFFIX);
	const char *a;
	struct sbx_error e2;
	int		 alive;

	if (reaped != NULL)
		*reaped = 0;
	if ((names = sbx_fs_sorted_names(runfd, &n)) == NULL) {
		json_decref(out);
		sbx_error_sys(e, "read_failed", "run/");
		return NULL;
	}
	for (i = 0; i < n; i++) {
		len = strlen(names[i]);
		if (len <= pl + sl || len - pl - sl > SBX_WARM_NAME_MAX ||
		    strncmp(names[i], REC_PREFIX, pl) != 0 ||
		    strcmp(names[i] + len - sl, REC_SUFFIX) != 0)
			continue;
		memcpy(name, names[i] + pl, len - pl - sl);
		name[len - pl - sl] = '\0';
		memset(&e2, 0, sizeof(e2));
		if ((rec = sbx_warmrec_load(runfd, name, &e2)) == NULL)
			continue;
		a = json_string_value(json_object_get(rec, "agent"));
		if (agent != NULL && (a == NULL || strcmp(a, agent) != 0)) {
			json_decref(rec);
			continue;
		}
		alive = sbx_warmrec_alive(rec);
		if (!alive && reap) {
			/* Its supervisor was killed: the sandbox died with
			 * it (bwrap --die-with-parent); what is left is this
			 * record and the socket (the cgroup is sbx exec gc's). */
			(void)sbx_warmrec_remove(runfd, name);
			if (reaped != NULL)
				(*reaped)++;
			json_decref(rec);
			continue;
		}
		json_object_set_new(rec, "alive", json_boolean(alive));
		json_array_append_new(out, rec);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return out;
}
