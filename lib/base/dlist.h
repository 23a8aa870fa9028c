/*
 * dlist.h: the one unlink of sbx's intrusive doubly-linked lists (the
 * proxy's and the bridge's connections, the daemons' sessions, the
 * pending asks, the lookup queue).  A node has `prev` and `next`; a list
 * is its first node and, where it keeps one, its last.
 */
#ifndef SBX_DLIST_H
#define SBX_DLIST_H

/* Take n out of the list whose first node is the lvalue head; n's own
 * links are left as they were (a caller walking on may still read
 * n->next). */
#define SBX_DLIST_UNLINK(head, n)					\
	do {								\
		if ((n)->prev != NULL)					\
			(n)->prev->next = (n)->next;			\
		else							\
			(head) = (n)->next;				\
		if ((n)->next != NULL)					\
			(n)->next->prev = (n)->prev;			\
	} while (0)

/* The same for a list that also keeps its last node in the lvalue tail;
 * n's links are cleared. */
#define SBX_DLIST_UNLINK_TAIL(head, tail, n)				\
	do {								\
		if ((n)->next == NULL)					\
			(tail) = (n)->prev;				\
		SBX_DLIST_UNLINK(head, n);				\
		(n)->prev = (n)->next = NULL;				\
	} while (0)

#endif
