/* exec-jobs.h: the job subcommands of sbx exec (cmd/exec-jobs.c). */
#ifndef SBX_EXEC_JOBS_H
#define SBX_EXEC_JOBS_H

#include <jansson.h>

#include "error.h"

struct exec_jobs {
	const char	*sub;		/* ps, poll, wait, kill or gc */
	const char	*agent;		/* NULL: $SBX_AGENT, else "default" */
	const char	*home;		/* --home, or NULL */
	const char	*timeout;	/* wait --timeout, or NULL (300 s) */
	int		 json, quiet, force, tail_lines;
	char	       **argv;		/* the operands (the job id) */
	int		 argc;
};

/* The envelope's tool: exec.ps, exec.poll... */
const char	*exec_jobs_tool(const char *sub);
/* The exit status, or -1 for a usage error (the caller says it). */
int	exec_jobs(const struct exec_jobs *);

/* The warnings of a run on stderr, "sbx-exec: warning: ...", unless
 * quiet. */
void	exec_print_warnings(json_t *w, int quiet);
/* A failed run, for people (the envelope is the same for all). */
void	exec_say_outcome(const struct sbx_error *err, json_t *warnings,
	    int quiet);
/* The outcome of a run, rendered (cmd/exec-jobs.c); out NULL: no
 * envelope. */
struct sbx_exec_outcome;
void	exec_render_outcome(struct sbx_exec_outcome *, char *violations,
	    json_t *warnings, const char *job, int json, int quiet,
	    void (*out)(json_t *), const char *name);

#endif
