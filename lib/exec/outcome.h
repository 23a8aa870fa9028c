/*
 * outcome.h: the verdict on a run of lib/exec (exec.h), for foreground
 * runs and background jobs alike: what happened (the sandbox could not be
 * set up, the command was not found or could not be executed, a limit or
 * a timeout ended it, a signal to sbx did, the sandbox refused something
 * that --fail-on-violation makes a failure, or it ran to its end) as an
 * envelope's kind, its result object and sbx exec's exit status; and the
 * run's violations and signals in words for people.  Part of lib/exec:
 * nothing here prints or exits.
 */
#ifndef SBX_OUTCOME_H
#define SBX_OUTCOME_H

#include <jansson.h>

#include "error.h"

struct sbx_exec;

/* The verdict on a run: a success or failure envelope, and the status. */
struct sbx_exec_outcome {
	int		 ok;
	int		 code; /* exit status of sbx exec */
	struct sbx_error err; /* when !ok */
	json_t		*result; /* ok: the result object (owned) */
	json_t		*extra; /* !ok: keys beside the error, or NULL */
};

/*
 * After sbx_exec_run: the verdict, scrubbed of the run's secrets.  For a
 * background run, the verdict on starting the job (its id, or why it did
 * not start); for the run itself, in the foreground or in a job's
 * supervisor, sbx_exec_outcome_run.
 */
void	 sbx_exec_outcome(struct sbx_exec *, struct sbx_exec_outcome *);
/* The verdict on the run in exec->run (and exec->events), whatever its
 * mode: what a job's supervisor records for poll and wait. */
void	 sbx_exec_outcome_run(struct sbx_exec *, struct sbx_exec_outcome *);
/* The run's result object of an outcome (borrowed; NULL when the sandbox
 * never started): o->result, or the "result" beside a failure. */
json_t	*sbx_exec_outcome_result(const struct sbx_exec_outcome *);
/* The verdict as one object for a job's record: ok, code and, for a
 * failure, kind, reason, message and the field and hint when set. */
json_t	*sbx_exec_outcome_verdict(const struct sbx_exec_outcome *);
void	 sbx_exec_outcome_release(struct sbx_exec_outcome *);
/* After the run, proxy mode: the proxy's denials as one line for people
 * ("proxy denied 2 requests: a:443 (...)"), or NULL; caller frees. */
char	*sbx_exec_violations_text(const struct sbx_exec *);
/* A signal's name ("SIGTERM"), in static storage for unknown ones. */
const char *sbx_exec_signame(int);

#endif
