/* exec-opts.h: the option table of sbx exec (cmd/exec-opts.c), shared by
 * cmd/sbx-exec.c, which parses and renders. */
#ifndef SBX_EXEC_OPTS_H
#define SBX_EXEC_OPTS_H

#include "opts.h"

enum {
	OPT_HOME = 256, OPT_MAX_OUTPUT, OPT_TAIL, OPT_FORCE, OPT_VERSION,
	OPT_MEMORY, OPT_CPUS, OPT_PIDS, OPT_DISK, OPT_WALL, OPT_NOFILE,
	OPT_WORKDIR_FOLLOW,
	OPT_FSIZE, OPT_SOFT, OPT_SECCOMP, OPT_ALLOW, OPT_STDIN, OPT_TIMEOUT,
	OPT_REQUEST, OPT_ENVELOPE_FD, OPT_RO, OPT_UNPROTECT, OPT_SECRET,
	OPT_NO_SECRETS, OPT_ASK, OPT_FAIL_ON_VIOLATION, OPT_HOST_VIEW,
	OPT_HARD, OPT_DISK_TMP, OPT_SESSION,
};

/* The run itself (S_RUN) and the job subcommands. */
enum {
	S_RUN = 1, S_PS = 2, S_POLL = 4, S_WAIT = 8, S_KILL = 16, S_GC = 32,
	S_JOB = S_PS | S_POLL | S_WAIT | S_KILL, S_ALL = S_RUN | S_JOB | S_GC,
};

extern const char		exec_usage_text[];
/* The prose of --help, between the usage and the options. */
extern const char		exec_help_text[];
extern const struct sbx_opts	exec_table;

/* sbx exec itself (cmd/sbx-exec.c): its exit status.  builtin: called by
 * the front-end (sbx-init is then found in its exec path), else by the
 * program's main() (cmd/exec-main.c). */
int	cmd_exec(int argc, char *argv[], int builtin);

#endif
