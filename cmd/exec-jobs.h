/* exec-jobs.h: the job subcommands of sbx exec (cmd/exec-jobs.c). */
#ifndef SBX_EXEC_JOBS_H
#define SBX_EXEC_JOBS_H

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

#endif
