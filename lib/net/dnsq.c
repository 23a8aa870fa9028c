/*
 * dnsq.c: the lookup queue of sbx-proxy, bounded and round-robin between
 * agents (see dnsq.h).
 *
 * The agents that have queued lookups form a ring; q->ring is the one
 * served next.  An agent that gets its first queued lookup joins the ring
 * just before q->ring, that is at the end of the current round, so a
 * newcomer never jumps ahead of agents already waiting, and an agent that
 * queues thousands of lookups gets one turn a round like any other.
 */
#include <stddef.h>

#include "dlist.h"
#include "dnsq.h"

void
sbx_dnsq_init(struct sbx_dnsq *q, unsigned max_total, unsigned max_agent,
    unsigned inflight_total, unsigned inflight_agent)
{
	q->max_total = max_total;
	q->max_agent = max_agent;
	q->inflight_total = inflight_total;
	q->inflight_agent = inflight_agent;
	q->nqueued = q->ninflight = 0;
	q->ring = NULL;
}

static void
ring_add(struct sbx_dnsq *q, struct sbx_dnsq_agent *a)
{
	if (a->inring)
		return;
	a->inring = 1;
	if (q->ring == NULL) {
		a->rprev = a->rnext = a;
		q->ring = a;
		return;
	}
	a->rnext = q->ring;
	a->rprev = q->ring->rprev;
	a->rprev->rnext = a;
	q->ring->rprev = a;
}

static void
ring_del(struct sbx_dnsq *q, struct sbx_dnsq_agent *a)
{
	if (!a->inring)
		return;
	a->inring = 0;
	if (a->rnext == a)
		q->ring = NULL;
	else {
		a->rprev->rnext = a->rnext;
		a->rnext->rprev = a->rprev;
		if (q->ring == a)
			q->ring = a->rnext;
	}
	a->rprev = a->rnext = NULL;
}

static void
unlink_item(struct sbx_dnsq *q, struct sbx_dnsq_item *it)
{
	struct sbx_dnsq_agent	*a = it->agent;

	SBX_DLIST_UNLINK_TAIL(a->head, a->tail, it);
	it->queued = 0;
	a->nqueued--;
	q->nqueued--;
	if (a->head == NULL)
		ring_del(q, a);
}

int
sbx_dnsq_push(struct sbx_dnsq *q, struct sbx_dnsq_agent *a,
    struct sbx_dnsq_item *it)
{
	if (q->nqueued >= q->max_total || a->nqueued >= q->max_agent)
		return -1;
	it->agent = a;
	it->next = NULL;
	it->prev = a->tail;
	if (a->tail != NULL)
		a->tail->next = it;
	else
		a->head = it;
	a->tail = it;
	it->queued = 1;
	a->nqueued++;
	q->nqueued++;
	ring_add(q, a);
	return 0;
}

struct sbx_dnsq_item *
sbx_dnsq_next(struct sbx_dnsq *q)
{
	struct sbx_dnsq_agent	*a, *start;
	struct sbx_dnsq_item	*it;

	if (q->ring == NULL || q->ninflight >= q->inflight_total)
		return NULL;
	a = start = q->ring;
	do {
		if (a->ninflight < q->inflight_agent) {
			it = a->head;
			/* The turn passes to the next agent whatever this
			 * one still has queued. */
			q->ring = a->rnext;
			unlink_item(q, it);
			a->ninflight++;
			q->ninflight++;
			return it;
		}
		a = a->rnext;
	} while (a != start);
	return NULL;
}

void
sbx_dnsq_done(struct sbx_dnsq *q, struct sbx_dnsq_item *it)
{
	if (it->agent == NULL)
		return;
	if (it->agent->ninflight > 0)
		it->agent->ninflight--;
	if (q->ninflight > 0)
		q->ninflight--;
	it->agent = NULL;
}

void
sbx_dnsq_cancel(struct sbx_dnsq *q, struct sbx_dnsq_item *it)
{
	/* One with the resolver stays counted until sbx_dnsq_done(). */
	if (!it->queued)
		return;
	unlink_item(q, it);
	it->agent = NULL;
}
