/* exec-ask.h: the terminal prompt of `sbx exec --ask` (cmd/exec-ask.c). */
#ifndef SBX_EXEC_ASK_H
#define SBX_EXEC_ASK_H

#include <sys/types.h>

struct sbx_exec;

/* When the run asks (--ask, proxy mode) and a person is at the terminal
 * (stdin and stderr are one, sbx in its foreground, not --tty, not --json,
 * not --background): a child that asks on /dev/tty for each ask of this
 * run and answers it, holding the run's output meanwhile through
 * x->ask_hold_fd (set here).  Its pid, or -1 when there is none to
 * start. */
pid_t	exec_ask_start(struct sbx_exec *);
/* End it (after the run). */
void	exec_ask_stop(pid_t);

#endif
