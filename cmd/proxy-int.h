/*
 * proxy-int.h: what the files of sbx-proxy share: the options and the
 * output helpers of cmd/sbx-proxy.c, which parses and dispatches, and the
 * ask subcommands of cmd/proxy-ask.c.  Internal to that program.
 */
#ifndef SBX_PROXY_INT_H
#define SBX_PROXY_INT_H

#include <jansson.h>

#include "error.h"
#include "root.h"

#define PROG	"sbx-proxy"

struct proxy_opts {
	const char	*agent;
	const char	*home;
	json_t		*allow;
	const char	*install;	/* check --install MANAGER */
	int		 foreground, json, quiet, verbose, resolve, follow;
};

extern struct proxy_opts	 O;

/* sbx proxy check HOST[:PORT] (cmd/proxy-check.c). */
int	proxy_cmd_check(struct sbx_root *, const char *target);
/* sbx proxy asks [--follow], sbx proxy answer ID ANSWER. */
int	proxy_cmd_asks(struct sbx_root *);
int	proxy_cmd_answer(struct sbx_root *, const char *id,
	    const char *answer);

#endif
