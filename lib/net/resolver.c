/*
 * resolver.c: sbx-proxy's resolver (resolver.h): a c-ares channel whose
 * sockets are in an epoll set of their own, fed from a bounded queue that
 * is fair between agents (dnsq.h).  Nothing is threaded.
 */
#include <sys/epoll.h>
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ares.h>

#include "dnsq.h"
#include "netpolicy.h"
#include "proxy.h"
#include "resolver.h"

/* Lookups with the resolver at a time, in all and for one agent: an agent
 * that floods the resolver (abandoned lookups of random names under an
 * allowed wildcard) fills its own share, never the others'. */
#define LOOKUPS_INFLIGHT	64
#define LOOKUPS_INFLIGHT_AGENT	8

/* A lookup.  Its requester may go while it is with the resolver: arg is
 * then NULL and the answer is dropped. */
struct sbx_resolver_job {
	struct sbx_dnsq_item	 qi;
	sbx_resolver_fn		 fn;
	void			*arg;
	unsigned		*orphans;	/* its agent's */
	char			 host[SBX_NP_HOST_MAX + 1];
};

static struct {
	/* A c-ares channel whose sockets are in dep. */
	ares_channel		 ch;
	int			 have_ch, pumping, dep;
	struct sbx_dnsq		 q;
	unsigned		 norphans;	/* lookups of closed conns */
} R = { .dep = -1 };

/* c-ares's answer to one lookup; may come from within ares_getaddrinfo
 * (a name of /etc/hosts) or ares_process_fd. */
static void
dns_answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct sbx_resolver_job		*j = arg;
	struct ares_addrinfo_node	*ai;
	struct sockaddr_storage		 addrs[SBX_RESOLVER_ADDRS];
	socklen_t			 lens[SBX_RESOLVER_ADDRS] = { 0 };
	int				 n = 0;

	(void)timeouts;
	sbx_dnsq_done(&R.q, &j->qi);
	if (j->arg == NULL) {
		/* Its connection is gone: the answer is dropped, and the
		 * agent has its slot back. */
		if (*j->orphans > 0)
			(*j->orphans)--;
		if (R.norphans > 0)
			R.norphans--;
	} else {
		if (status == ARES_SUCCESS && res != NULL)
			for (ai = res->nodes;
			    ai != NULL && n < SBX_RESOLVER_ADDRS;
			    ai = ai->ai_next) {
				if ((ai->ai_family != AF_INET &&
				    ai->ai_family != AF_INET6) ||
				    ai->ai_addrlen > sizeof(addrs[0]))
					continue;
				memset(&addrs[n], 0, sizeof(addrs[n]));
				memcpy(&addrs[n], ai->ai_addr, ai->ai_addrlen);
				lens[n++] = ai->ai_addrlen;
			}
		j->fn(j->arg, addrs, lens, n);
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	free(j);
}

/* Hand the resolver what the queue lets through, fairly. */
void
sbx_resolver_pump(void)
{
	struct ares_addrinfo_hints	 hints;
	struct sbx_dnsq_item		*it;
	struct sbx_resolver_job		*j;

	/* dns_answer may run inside ares_getaddrinfo; it never pumps, but
	 * what it closes could: one pump at a time. */
	if (R.pumping)
		return;
	R.pumping = 1;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NOSORT;
	while ((it = sbx_dnsq_next(&R.q)) != NULL) {
		j = (struct sbx_resolver_job *)(void *)((char *)it -
		    offsetof(struct sbx_resolver_job, qi));
		ares_getaddrinfo(R.ch, j->host, NULL, &hints, dns_answer, j);
	}
	R.pumping = 0;
}

/* c-ares opens, watches and closes its sockets: mirror that in dep. */
static void
dns_sock(void *data, ares_socket_t fd, int readable, int writable)
{
	struct epoll_event	 ev;

	(void)data;
	if (!readable && !writable) {
		(void)epoll_ctl(R.dep, EPOLL_CTL_DEL, fd, NULL);
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.events = (readable ? EPOLLIN : 0) | (writable ? EPOLLOUT : 0);
	ev.data.fd = fd;
	if (epoll_ctl(R.dep, EPOLL_CTL_MOD, fd, &ev) == -1 && errno == ENOENT)
		(void)epoll_ctl(R.dep, EPOLL_CTL_ADD, fd, &ev);
}

void
sbx_resolver_events(void)
{
	struct epoll_event	 evs[16];
	int			 i, n;

	n = epoll_wait(R.dep, evs, 16, 0);
	for (i = 0; i < n; i++)
		ares_process_fd(R.ch, (evs[i].events & (EPOLLIN | EPOLLERR |
		    EPOLLHUP)) ? evs[i].data.fd : ARES_SOCKET_BAD,
		    (evs[i].events & EPOLLOUT) ? evs[i].data.fd :
		    ARES_SOCKET_BAD);
}

/*
 * The channel: the system's resolver configuration (resolv.conf, hosts),
 * or only dns_server when set.  Names are looked up as given, never with
 * the search domains appended.  Each query has a deadline: tries of
 * connect_timeout_ms / 3, then twice that, so a lookup whose connection
 * is gone holds its slot about as long as a connection would wait.
 */
int
sbx_resolver_channel(const struct sbx_proxy_config *cfg, ares_channel *ch,
    ares_sock_state_cb cb, struct sbx_error *e)
{
	struct ares_options	 o;
	int			 mask, r;
	char			 lookups[] = "b";

	if ((r = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, "resolver",
		    "resolver_init", "cannot initialise c-ares: %s",
		    ares_strerror(r));
	memset(&o, 0, sizeof(o));
	o.sock_state_cb = cb;
	o.timeout = (int)(cfg->connect_timeout_ms / 3 > 10 ?
	    cfg->connect_timeout_ms / 3 : 10);
	o.tries = 2;
	o.flags = ARES_FLAG_NOSEARCH;
	o.ndomains = 0;
	o.domains = NULL;
	mask = (cb != NULL ? ARES_OPT_SOCK_STATE_CB : 0) | ARES_OPT_TIMEOUTMS |
	    ARES_OPT_TRIES | ARES_OPT_FLAGS | ARES_OPT_DOMAINS;
	if (cfg->dns_server[0] != '\0') {
		/* DNS only: no hosts file between a test and its stub. */
		o.lookups = lookups;
		mask |= ARES_OPT_LOOKUPS;
	}
	if ((r = ares_init_options(ch, &o, mask)) != ARES_SUCCESS)
		return sbx_error_set(e, SBX_K_EXECUTION_ERROR, "resolver",
		    "resolver_init", "cannot initialise c-ares: %s",
		    ares_strerror(r));
	if (cfg->dns_server[0] != '\0' &&
	    (r = ares_set_servers_ports_csv(*ch, cfg->dns_server)) !=
	    ARES_SUCCESS) {
		ares_destroy(*ch);
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "config",
		    "config_invalid", "proxy.dns_server: %s",
		    ares_strerror(r));
	}
	return 0;
}

int
sbx_resolver_init(const struct sbx_proxy_config *cfg, struct sbx_error *e)
{
	memset(&R, 0, sizeof(R));
	if ((R.dep = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return sbx_error_sys(e, "epoll", "cannot set up the event "
		    "loop");
	if (sbx_resolver_channel(cfg, &R.ch, dns_sock, e) == -1)
		return -1;
	R.have_ch = 1;
	sbx_dnsq_init(&R.q, cfg->max_lookups, cfg->max_lookups_agent,
	    LOOKUPS_INFLIGHT, LOOKUPS_INFLIGHT_AGENT);
	return 0;
}

/* Every lookup left is an orphan now: ares_destroy answers them
 * (ARES_EDESTRUCTION) and they are freed. */
void
sbx_resolver_end(void)
{
	if (R.have_ch)
		ares_destroy(R.ch);
	R.have_ch = 0;
	if (R.dep >= 0)
		close(R.dep);
	R.dep = -1;
}

int
sbx_resolver_fd(void)
{
	return R.dep;
}

struct sbx_resolver_job *
sbx_resolver_lookup(const char *host, struct sbx_dnsq_agent *agent,
    unsigned *orphans, sbx_resolver_fn fn, void *arg)
{
	struct sbx_resolver_job	*j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		return NULL;
	j->fn = fn;
	j->arg = arg;
	j->orphans = orphans;
	snprintf(j->host, sizeof(j->host), "%s", host);
	if (sbx_dnsq_push(&R.q, agent, &j->qi) == -1) {
		/* The agent (or everyone) has enough lookups waiting. */
		free(j);
		errno = EAGAIN;
		return NULL;
	}
	return j;
}

/*
 * Still queued: taken out, never sent.  With the resolver (c-ares cannot
 * cancel one query): the answer will be dropped, and until it comes the
 * lookup is its agent's orphan.
 */
void
sbx_resolver_cancel(struct sbx_resolver_job *j)
{
	j->arg = NULL;
	if (j->qi.queued) {
		sbx_dnsq_cancel(&R.q, &j->qi);
		free(j);
		return;
	}
	(*j->orphans)++;
	R.norphans++;
}

void
sbx_resolver_process(void)
{
	if (R.q.ninflight > 0)
		ares_process_fd(R.ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
}

int
sbx_resolver_timeout(int timeout)
{
	struct timeval	 tv, *tvp;

	/* Wake up for the resolver's next retry. */
	if (R.q.ninflight > 0 && (tvp = ares_timeout(R.ch, NULL, &tv)) !=
	    NULL && tvp->tv_sec * 1000 + tvp->tv_usec / 1000 < timeout)
		timeout = (int)(tvp->tv_sec * 1000 +
		    (tvp->tv_usec + 999) / 1000);
	return timeout;
}

unsigned
sbx_resolver_orphans(void)
{
	return R.norphans;
}

/* ---- a blocking lookup ---------------------------------------------- */

/* The answer of a blocking lookup (sbx_resolver_blocking). */
struct lookup {
	int			 done, status, n, max;
	struct sockaddr_storage	*addrs;
	socklen_t		*lens;
};

static void
lookup_answer(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct lookup			*l = arg;
	struct ares_addrinfo_node	*ai;

	(void)timeouts;
	l->done = 1;
	l->status = status;
	if (status == ARES_SUCCESS && res != NULL)
		for (ai = res->nodes; ai != NULL && l->n < l->max;
		    ai = ai->ai_next) {
			if ((ai->ai_family != AF_INET &&
			    ai->ai_family != AF_INET6) ||
			    ai->ai_addrlen > sizeof(l->addrs[0]))
				continue;
			memset(&l->addrs[l->n], 0, sizeof(l->addrs[0]));
			memcpy(&l->addrs[l->n], ai->ai_addr, ai->ai_addrlen);
			l->lens[l->n++] = ai->ai_addrlen;
		}
	if (res != NULL)
		ares_freeaddrinfo(res);
}

/*
 * The same channel and the same query as the daemon's (resolver.c),
 * driven by poll(2) until it answers: `sbx proxy check --resolve` must
 * see what a request would.
 */
int
sbx_resolver_blocking(const struct sbx_proxy_config *cfg, const char *host,
    struct sockaddr_storage *addrs, socklen_t *lens, int max,
    struct sbx_error *e)
{
	struct ares_addrinfo_hints	 hints;
	struct pollfd			 pfd[ARES_GETSOCK_MAXNUM];
	struct timeval			 tv, *tvp;
	struct lookup			 l;
	ares_socket_t			 socks[ARES_GETSOCK_MAXNUM];
	ares_channel			 ch;
	int				 bits, i, np;

	if (sbx_resolver_channel(cfg, &ch, NULL, e) == -1)
		return -1;
	memset(&l, 0, sizeof(l));
	l.addrs = addrs;
	l.lens = lens;
	l.max = max;
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = ARES_AI_NOSORT;
	ares_getaddrinfo(ch, host, NULL, &hints, lookup_answer, &l);
	while (!l.done) {
		bits = ares_getsock(ch, socks, ARES_GETSOCK_MAXNUM);
		for (i = np = 0; i < ARES_GETSOCK_MAXNUM; i++) {
			/* c-ares's ARES_GETSOCK_WRITABLE shifts a signed 1
			 * by up to 31 (undefined; UBSan reports it): the
			 * same bits, unsigned. */
			unsigned rd = (unsigned)bits & (1u << i);
			unsigned wr = (unsigned)bits &
			    (1u << (i + ARES_GETSOCK_MAXNUM));

			if (!rd && !wr)
				continue;
			pfd[np].fd = socks[i];
			pfd[np].events = (rd ? POLLIN : 0) | (wr ? POLLOUT : 0);
			pfd[np++].revents = 0;
		}
		tvp = ares_timeout(ch, NULL, &tv);
		if (poll(pfd, (nfds_t)np, tvp != NULL ? (int)(tvp->tv_sec *
		    1000 + tvp->tv_usec / 1000) + 1 : 1000) == -1 &&
		    errno != EINTR)
			break;
		if (np == 0)
			ares_process_fd(ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
		for (i = 0; i < np; i++)
			ares_process_fd(ch, (pfd[i].revents & (POLLIN |
			    POLLERR | POLLHUP)) ? pfd[i].fd : ARES_SOCKET_BAD,
			    (pfd[i].revents & POLLOUT) ? pfd[i].fd :
			    ARES_SOCKET_BAD);
	}
	ares_destroy(ch);
	if (!l.done || (l.status != ARES_SUCCESS &&
	    l.status != ARES_ENOTFOUND && l.status != ARES_ENODATA))
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "host",
		    "resolve_failed", "cannot resolve `%s`: %s", host,
		    ares_strerror(l.done ? l.status : ARES_ETIMEOUT));
	return l.n;
}
