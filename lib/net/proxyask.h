/* proxyask.h: sbx-proxy's asks: connections held while a person or an
 * orchestrator decides about a name that no rule allows or denies
 * (network_ask, sbx exec --ask; sbx proxy asks and answer).
 *
 * The table of pending asks, its bounds and the protocol's shapes of an
 * ask; what becomes of the connection (resolved, refused, remembered in
 * the agent's settings) is the proxy's.  An ask is embedded in its
 * connection and borrows its strings; the proxy drops it before either
 * goes.  One table per process (the daemon's).
 */
#ifndef SBX_PROXYASK_H
#define SBX_PROXYASK_H

#include <jansson.h>

#include "error.h"

/* Pending asks, in all and per agent (not per run: an agent may have any
 * number of runs at once). */
#define SBX_PROXYASK_MAX	256
#define SBX_PROXYASK_MAX_AGENT	16

struct sbx_proxyask {
	char			 id[17];	/* 16 hex digits */
	const char		*agent, *run, *host;
	unsigned		 port;
	long long		 t_start;	/* the connection's */
	void			*owner;		/* the connection */
	struct sbx_proxyask	*prev, *next;	/* by t_start */
};

/* Empty the table (a new daemon). */
void	 sbx_proxyask_reset(void);
/* Hold a: a fresh id, in the table.  -1 when the table or the agent's
 * share of it is full (the proxy answers 503 too_many_asks). */
int	 sbx_proxyask_hold(struct sbx_proxyask *a, const char *agent,
	    const char *run, const char *host, unsigned port,
	    long long t_start, void *owner);
/* Out of the table: answered, timed out, or its connection gone. */
void	 sbx_proxyask_drop(struct sbx_proxyask *);
/* A pending ask as the control protocol shows it, {id, agent, host,
 * port, run, age_ms} and the event when given. */
json_t	*sbx_proxyask_json(const struct sbx_proxyask *, const char *event);
/* `asks`: {"ok":true,"asks":[...]}, the pending decisions, oldest
 * first. */
json_t	*sbx_proxyask_list(void);
/* `answer` ({id, answer}): the pending ask it names, with *ans its answer
 * (allow-once, allow-always, deny or deny-always; borrowed from req),
 * *always and *deny; NULL with invalid_args bad_answer, or not_found
 * no_such_ask. */
struct sbx_proxyask *sbx_proxyask_answer(const json_t *req,
	    const char **ans, int *always, int *deny, struct sbx_error *);
/* The newest pending ask (walk ->prev to the older ones), or NULL. */
struct sbx_proxyask *sbx_proxyask_newest(void);

#endif
