/*
 * exec-jobs.c: sbx exec ps, poll, wait, kill and gc: lib/jobsup's answers
 * rendered as text or envelopes; and a run's warnings and failure, for
 * people.  Linked into sbx-exec and the front-end.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "cli.h"
#include "cmd.h"
#include "diskimg.h"
#include "envelope.h"
#include "exec.h"
#include "exec-jobs.h"
#include "jobsup.h"
#include "layout.h"
#include "names.h"
#include "root.h"
#include "utf8.h"
#include "warm.h"

#define PROG	"sbx-exec"

static const char	*tool = "exec";

static void
emit(json_t *env)
{
	sbx_cmd_emit(env);
}

const char *
exec_jobs_tool(const char *sub)
{
	return strcmp(sub, "ps") == 0 ? "exec.ps" : strcmp(sub, "poll") == 0 ?
	    "exec.poll" : strcmp(sub, "wait") == 0 ? "exec.wait" :
	    strcmp(sub, "kill") == 0 ? "exec.kill" : "exec.gc";
}

/* A failure of a job subcommand: code, or when negative the status of
 * the one table (sbx_exit_for). */
static int
report(const struct sbx_error *e, int code, json_t *extra, int json)
{
	sbx_cmd_report(PROG, tool, json, e, extra, emit);
	return code < 0 ? sbx_exit_for(e) : code;
}


static void
print_tail(json_t *res)
{
	const char	*t = json_string_value(json_object_get(res, "log_tail"));

	if (t && *t) {
		fputs(t, stdout);
		if (t[strlen(t) - 1] != '\n')
			putchar('\n');
	}
}

/* The text of ps: a header and one escaped line per job. */
static void
print_ps(json_t *jobs)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*row, *c;
	size_t		 i, k;
	char		 code[24];

	printf("%-16s  %-7s  %-4s  %-20s  %s\n", "JOB", "STATE", "EXIT",
	    "STARTED", "COMMAND");
	json_array_foreach(jobs, i, row) {
		sbx_buf_reset(&b);
		if (json_is_string(json_object_get(row, "message"))) {
			/* A damaged record: what is wrong, in place of the
			 * command. */
			const char *m =
			    json_string_value(json_object_get(row, "message"));

			sbx_utf8_escape_line(&b, m, strlen(m));
		}
		json_array_foreach(json_object_get(row, "command"), k, c) {
			const char *s = json_string_value(c);
			if (k)
				sbx_buf_puts(&b, " ");
			if (s)
				sbx_utf8_escape_line(&b, s, strlen(s));
		}
		if (json_object_get(row, "exit_code"))
			snprintf(code, sizeof(code), "%lld", (long long)
			    json_integer_value(json_object_get(row,
			    "exit_code")));
		else
			snprintf(code, sizeof(code), "-");
		printf("%-16s  %-7s  %-4s  %-20s  %s\n",
		    json_string_value(json_object_get(row, "job")),
		    json_string_value(json_object_get(row, "state")), code,
		    json_string_value(json_object_get(row, "started_at")) ?
		    json_string_value(json_object_get(row, "started_at")) : "",
		    b.p ? b.p : "");
	}
	sbx_buf_release(&b);
}

/* A job's result, for people. */
static void
print_job(const struct exec_jobs *J, const char *sub, json_t *res,
    const char *id)
{
	json_t	*code = json_object_get(res, "exit_code");
	int	 killed = json_is_true(json_object_get(res, "killed"));

	if (strcmp(sub, "poll") == 0) {
		printf("job %s: %s", id, json_string_value(json_object_get(res,
		    "state")));
		if (code != NULL)
			printf(" (exit %lld)", (long long)json_integer_value(
			    code));
		putchar('\n');
		print_tail(res);
	} else if (strcmp(sub, "wait") == 0) {
		print_tail(res);
		if (json_is_true(json_object_get(res, "timed_out")))
			fprintf(stderr, "%s: job %s still running after %s "
			    "seconds\n", PROG, id, J->timeout ? J->timeout :
			    "300");
	} else if (killed)
		printf("job %s: sent %s to the sandbox\n", id, J->force ?
		    "KILL" : "TERM");
	else
		printf("job %s: not running\n", id);
}

static int
sub_job(const struct exec_jobs *J, const char *agent, struct sbx_root *root)
{
	struct sbx_error	 e;
	json_t			*res;
	double			 timeout = 300;
	size_t			 pruned;
	int			 code = 0, sig;
	const char		*id = J->argv[0];

	if (strcmp(J->sub, "ps") == 0) {
		if ((res = sbx_jobsup_ps(root, agent, &pruned, &e)) == NULL)
			return report(&e, -1, NULL, J->json);
		if (!J->json) {
			print_ps(res);
			json_decref(res);
		} else
			emit(sbx_envelope_ok(tool, json_pack("{s:o,s:s,s:I}",
			    "jobs", res, "agent", agent, "pruned",
			    (json_int_t)pruned), NULL));
		return 0;
	}
	if (strcmp(J->sub, "poll") == 0)
		res = sbx_jobsup_poll(root, agent, id, J->tail_lines, &e);
	else if (strcmp(J->sub, "kill") == 0)
		res = sbx_jobsup_kill(root, agent, id, J->force, &e);
	else if (J->timeout != NULL && sbx_cli_parse_seconds(J->timeout,
	    31 * 86400.0, &timeout) == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number", "argument `timeout` must be a positive "
		    "number of seconds");
		return report(&e, -1, NULL, J->json);
	} else if ((res = sbx_jobsup_wait(root, agent, id, timeout,
	    J->tail_lines, &code, &sig, &e)) == NULL && sig != 0)
		return 128 + sig;
	if (res == NULL)
		return report(&e, -1, NULL, J->json);
	if (strcmp(J->sub, "kill") == 0 &&
	    !json_is_true(json_object_get(res, "killed")))
		code = SBX_EX_NEGATIVE;
	if (!J->json)
		print_job(J, J->sub, res, id);
	else
		emit(sbx_envelope_ok(tool, json_incref(res), NULL));
	json_decref(res);
	return code;
}

/* gc's part for disk images (diskimg.h): root only (no plain user mounts
 * one), and a state root that exists. */
static int
gc_disks(const struct exec_jobs *J, int *um, int *busy, struct sbx_error *e)
{
	struct sbx_root	 root = { .fd = -1 };
	int		 rc;

	if (geteuid() != 0)
		return 0;
	if (sbx_root_resolve(J->home, &root, e) == -1)
		return -1;
	if (sbx_root_open(&root, 0, e) == -1) {
		sbx_root_release(&root);
		return 0;
	}
	rc = sbx_diskimg_gc(root.fd, um, busy, e);
	sbx_root_release(&root);
	return rc;
}

/* The dead sessions of the state root, removed: how many. */
static size_t
gc_sessions(const char *home)
{
	struct sbx_root		 root = { .fd = -1 };
	struct sbx_error	 e;
	json_t			*l;
	size_t			 n = 0;
	int			 runfd;

	memset(&e, 0, sizeof(e));
	if (sbx_root_resolve(home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1)
		return 0;
	if ((runfd = sbx_layout_open(root.fd, SBX_L_RUN, NULL, O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC, NULL)) >= 0) {
		l = sbx_warmrec_list(runfd, NULL, 1, &n, &e);
		json_decref(l);
		close(runfd);
	}
	sbx_root_release(&root);
	return n;
}

int
exec_jobs(const struct exec_jobs *J)
{
	struct sbx_error	 e;
	struct sbx_root		 root = { .fd = -1 };
	const char		*agent = J->agent;
	int			 n, um = 0, busy = 0;
	size_t			 ns;

	tool = exec_jobs_tool(J->sub);
	if (strcmp(J->sub, "gc") == 0) {
		/* Reap what supervisors killed with -9 left behind: their
		 * cgroups and everything still running in them. */
		if (J->argc != 0)
			return -1;
		if ((n = sbx_cgroup_gc(&e)) == -1)
			return report(&e, -1, NULL, J->json);
		/* And the agents' disk images no run holds (a run killed
		 * with -9 leaves its image mounted), and the records and
		 * sockets of warm sessions whose supervisor was killed
		 * (lib/exec/warmrec.c). */
		if (gc_disks(J, &um, &busy, &e) == -1)
			return report(&e, -1, NULL, J->json);
		ns = gc_sessions(J->home);
		if (J->json)
			emit(sbx_envelope_ok(tool,
			    json_pack("{s:i,s:i,s:i,s:i}", "removed_cgroups", n,
				"unmounted_disks", um, "busy_disks", busy,
				"removed_sessions", (int)ns),
			    NULL));
		else if (!J->quiet) {
			printf("removed %d stale cgroup%s\n", n,
			    n == 1 ? "" : "s");
			if (um || busy)
				printf("unmounted %d idle disk image%s (%d in "
				       "use)\n",
				    um, um == 1 ? "" : "s", busy);
			if (ns > 0)
				printf("removed %zu dead session%s\n", ns,
				    ns == 1 ? "" : "s");
		}
		return 0;
	}
	tool = exec_jobs_tool(J->sub);
	if (agent == NULL)
		agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") :
		    "default";
	if (sbx_names_agent_valid(agent, "agent", &e) == -1 ||
	    sbx_root_resolve(J->home, &root, &e) == -1)
		return report(&e, -1, NULL, J->json);
	if ((strcmp(J->sub, "ps") == 0) != (J->argc == 0) || J->argc > 1)
		return -1;
	if (sbx_root_open(&root, 0, &e) == -1) {
		if (e.kind == NULL || strcmp(e.kind, SBX_K_NOT_FOUND) != 0)
			return report(&e, -1, NULL, J->json);
		if (strcmp(J->sub, "ps") == 0) {
			if (J->json)
				emit(sbx_envelope_ok(tool, json_pack(
				    "{s:[],s:s}", "jobs", "agent", agent),
				    NULL));
			return 0;
		}
		/* No state root yet: no job can exist. */
		if (sbx_names_job_id_valid(J->argv[0], &e) == -1)
			return report(&e, -1, NULL, J->json);
		sbx_error_set(&e, SBX_K_NOT_FOUND, "job", "unknown_job",
		    "no job %s for agent %s", J->argv[0], agent);
		return report(&e, SBX_EX_NEGATIVE, NULL, J->json);
	}
	n = sub_job(J, agent, &root);
	sbx_root_release(&root);
	return n;
}

/* ---- a run's outcome, for people ---------------------------------------- */

void
exec_print_warnings(json_t *w, int quiet)
{
	size_t	 i;

	if (quiet)
		return;
	for (i = 0; i < json_array_size(w); i++)
		fprintf(stderr, "%s: warning: %s\n", PROG,
		    json_string_value(json_array_get(w, i)));
}

void
exec_say_outcome(const struct sbx_error *err, json_t *warnings, int quiet)
{
	const char	*r = err->reason != NULL ? err->reason : "";
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (strcmp(r, "memory_limit") == 0) {
		exec_print_warnings(warnings, quiet);
		if (!quiet)
			fprintf(stderr, "%s: %s\n", PROG, err->message);
	} else if (strcmp(r, "interrupted") == 0) {
		if (!quiet)
			fprintf(stderr, "%s: %s\n", PROG, err->message);
	} else if (strcmp(r, "idle_timeout") == 0 ||
	    strcmp(r, "wall_time") == 0) {
		exec_print_warnings(warnings, quiet);
		fprintf(stderr, "%s: %s\n", PROG, err->message);
	} else if (strcmp(r, "violation") == 0) {
		/* The run ran: its warnings (an empty allowlist) say why
		 * as much as the verdict does.  -q keeps all three to the
		 * status (sbx mcp: stderr is the command's). */
		exec_print_warnings(warnings, quiet);
		if (!quiet && sbx_cli_error_text(PROG, err, &b) == 0)
			fputs(b.p, stderr);
	} else if (sbx_cli_error_text(PROG, err, &b) == 0)
		fputs(b.p, stderr);
	sbx_buf_release(&b);
}

/* The outcome of a run: the denials (violations, freed), the job id
 * (background), warnings and failure for people; the envelope (of the
 * tool name) through out when it is not NULL (json or --envelope-fd).  The result and extra
 * of o are consumed. */
void
exec_render_outcome(struct sbx_exec_outcome *o, char *violations,
    json_t *warnings, const char *job, int json, int quiet,
    void (*out)(json_t *), const char *name)
{
	/* The sandbox wrote to this terminal: whatever state it left it in
	 * (invisible or same-colour text, the alternate screen, an escape
	 * string left open) must not hide or disguise what sbx says of the
	 * run, its violations above all.  Only when sbx has something to
	 * say: a run that ends quietly stays transparent. */
	if (!json && isatty(STDERR_FILENO) && (violations != NULL || !o->ok ||
	    (!quiet && json_array_size(warnings) > 0)))
		fputs(SBX_TERM_SANE, stderr);
	if (violations != NULL) {
		fprintf(stderr, "sbx: %s\n", violations);
		free(violations);
	}
	if (o->ok) {
		exec_print_warnings(warnings, quiet || json);
		if (job != NULL && !json)
			printf("%s\n", job);
		if (out != NULL)
			out(sbx_envelope_ok(name, o->result,
			    json_incref(warnings)));
		o->result = NULL;
	} else {
		if (!json)
			exec_say_outcome(&o->err, warnings, quiet);
		if (out != NULL)
			out(sbx_envelope_err(name, &o->err, o->extra));
		else
			json_decref(o->extra);
		o->extra = NULL;
	}
}
