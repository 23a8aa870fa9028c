/*
 * install-int.h: what the files of sbx-install share: the options, the
 * state root, the output helpers and the agent's directory of
 * cmd/sbx-install.c (parse, list, reconcile), and the sandboxed runs of
 * cmd/install-run.c (install).  Internal to that program.
 */
#ifndef SBX_INSTALL_INT_H
#define SBX_INSTALL_INT_H

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "install.h"
#include "layout.h"
#include "root.h"
#include "token.h"

#define PROG "sbx-install"

/* How long an install waits for another install of the same agent (or
 * rootfs) without --timeout. */
#define LOCK_WAIT_S 600

struct install_opts {
	const char *agent, *home, *manager, *timeout;
	int	    allow_url, json, quiet, verbose;
	char	  **pkgs;
	int	    npkgs;
	const char *sub; /* list, reconcile, or NULL */
	double	    timeout_s;
	int	    mgr;
};

extern struct install_opts O;
extern char		   tool[32];
extern struct sbx_root	   root;
extern json_t		  *warnings;

void	    open_agent(void);
int	    agent_dir(struct sbx_error *);
const char *lock_name(enum sbx_layout_id);

/* cmd/install-run.c: what one sandboxed run gave. */
struct run {
	int		 ok; /* it ran to its end */
	int		 exit_code;
	struct sbx_buf	 out; /* stdout then stderr */
	struct sbx_error err; /* !ok: why */
	char		 token[SBX_TOKEN_LEN + 1];
};

/* Run a fixed script with args as $1...: the registries of reg allowed
 * through the proxy (no network without reg); rootfs_rw: apt's copy
 * read-write as /; tee: the output on stderr as it comes. */
void run_script(const char *script, char **args, int nargs,
    const struct sbx_install_reg *reg, const char *const *env, int rootfs_rw,
    int tee, struct run *);
int  do_install(void);

#endif
