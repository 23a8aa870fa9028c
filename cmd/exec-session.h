/*
 * exec-session.h: sbx exec --session (cmd/exec-session.c), linked into
 * sbx-exec and the front-end.
 */
#ifndef SBX_EXEC_SESSION_H
#define SBX_EXEC_SESSION_H

#include <jansson.h>

#include "error.h"

struct sbx_exec;
struct sbx_exec_req;

/* How sbx exec reports (cmd/sbx-exec.c's functions and flags). */
struct exec_session_out {
	int	    json, quiet, envelope;
	const char *tool;
	void (*emit)(json_t *);
	int (*usage)(const struct sbx_error *);
	int (*report)(const struct sbx_error *);
};

/* Run R's command in the session R->session_name: the exit status. */
int exec_session(struct sbx_exec_req *R, struct sbx_exec *X,
    const struct exec_session_out *);

#endif
