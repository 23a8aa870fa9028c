/* dnsq.h: the lookup queue of sbx-proxy: bounded, fair between agents.
 *
 * Pure bookkeeping, no I/O and no allocation: items and agents are
 * embedded in the caller's structures.  A lookup is queued (push), taken
 * to be sent to the resolver (next), and finished (done); a queued lookup
 * whose connection is gone is taken out unsent (cancel).
 *
 * Why: one agent must not be able to make another agent's names wait.
 * The queue holds at most max_agent lookups of one agent and max_total in
 * all (push fails: the proxy answers 503); at most inflight_agent lookups
 * of one agent and inflight_total in all are with the resolver at a time;
 * next() serves the agents round-robin, each agent's lookups in order.
 */
#ifndef SBX_DNSQ_H
#define SBX_DNSQ_H

struct sbx_dnsq_agent;

struct sbx_dnsq_item {
	struct sbx_dnsq_agent	*agent;	/* set by push */
	struct sbx_dnsq_item	*prev, *next;
	int			 queued;
};

struct sbx_dnsq_agent {
	struct sbx_dnsq_item	*head, *tail;	/* queued, oldest first */
	unsigned		 nqueued, ninflight;
	/* In the ring of agents with queued lookups. */
	struct sbx_dnsq_agent	*rprev, *rnext;
	int			 inring;
};

struct sbx_dnsq {
	unsigned		 max_total, max_agent;
	unsigned		 inflight_total, inflight_agent;
	unsigned		 nqueued, ninflight;
	struct sbx_dnsq_agent	*ring;	/* the next agent to serve */
};

void	 sbx_dnsq_init(struct sbx_dnsq *, unsigned max_total,
	    unsigned max_agent, unsigned inflight_total,
	    unsigned inflight_agent);
/* Queue it at the end of the agent's lookups: 0, or -1 when the agent's
 * queue or the whole queue is full. */
int	 sbx_dnsq_push(struct sbx_dnsq *, struct sbx_dnsq_agent *,
	    struct sbx_dnsq_item *);
/* The next lookup to send, counted as in flight, or NULL when none is
 * queued or the in-flight bounds leave no room for any agent that has
 * one. */
struct sbx_dnsq_item *sbx_dnsq_next(struct sbx_dnsq *);
/* A lookup that next() returned has finished. */
void	 sbx_dnsq_done(struct sbx_dnsq *, struct sbx_dnsq_item *);
/* Take a queued lookup out, unsent. */
void	 sbx_dnsq_cancel(struct sbx_dnsq *, struct sbx_dnsq_item *);

#endif
