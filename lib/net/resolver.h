/* resolver.h: sbx-proxy's resolver: c-ares inside the daemon's event loop.
 *
 * Names are resolved asynchronously in the proxy's one thread: c-ares's
 * sockets sit in an epoll set of their own (sbx_resolver_fd(), one
 * readable descriptor in the daemon's loop), so a slow DNS server holds
 * no thread and no lookup blocks another.  Lookups wait in a bounded
 * queue that serves the agents round-robin (dnsq.h).  A lookup whose
 * requester is gone is taken out of the queue, or, already with c-ares
 * (which cannot cancel one query), its answer is dropped; until then it
 * is an orphan, counted against its agent (the proxy's connection caps
 * count orphans, so that abandoned lookups cannot pile up beyond what
 * live connections could).  One resolver per process (the daemon's).
 *
 * The address checks of an answer are the caller's (sbx_np_addrs_check):
 * the resolver only says what the name's addresses are.
 */
#ifndef SBX_RESOLVER_H
#define SBX_RESOLVER_H

#include <sys/socket.h>

#include <ares.h>

#include "error.h"

struct sbx_dnsq_agent;
struct sbx_proxy_config;
struct sbx_resolver_job;

/* At most this many addresses of one name are kept. */
#define SBX_RESOLVER_ADDRS	16

/* A lookup's answer: n addresses (0 when the name has none or the lookup
 * failed).  Called from sbx_resolver_pump() (a name of /etc/hosts) or
 * sbx_resolver_events()/_process(); never for a cancelled lookup. */
typedef void (*sbx_resolver_fn)(void *arg, const struct sockaddr_storage *,
    const socklen_t *, int n);

/*
 * The channel: the system's resolver configuration (resolv.conf, hosts),
 * or only the config's dns_server when set; names looked up as given,
 * never with the search domains appended; each query's deadline from
 * connect_timeout_ms.  cb (may be NULL) mirrors c-ares's sockets.  For
 * the daemon's resolver and for a blocking lookup alike.
 */
int	 sbx_resolver_channel(const struct sbx_proxy_config *, ares_channel *,
	    ares_sock_state_cb cb, struct sbx_error *);

/* The daemon's resolver: its channel and queue (the config's max_lookups
 * and max_lookups_agent).  sbx_resolver_end() releases it (failed or
 * not). */
int	 sbx_resolver_init(const struct sbx_proxy_config *,
	    struct sbx_error *);
void	 sbx_resolver_end(void);
/* The descriptor to watch (readable: call sbx_resolver_events()). */
int	 sbx_resolver_fd(void);
/* Queue a lookup of host for agent (whose orphans counter it keeps up to
 * date); it goes to c-ares at the next sbx_resolver_pump().  NULL with
 * errno EAGAIN when the agent (or everyone) has enough lookups waiting,
 * ENOMEM. */
struct sbx_resolver_job *
	 sbx_resolver_lookup(const char *host, struct sbx_dnsq_agent *agent,
	    unsigned *orphans, sbx_resolver_fn fn, void *arg);
/* The requester no longer wants its lookup (fn is not called). */
void	 sbx_resolver_cancel(struct sbx_resolver_job *);
/* Hand c-ares what the queue lets through, fairly. */
void	 sbx_resolver_pump(void);
/* c-ares's sockets are ready; its timeouts and retries are due. */
void	 sbx_resolver_events(void);
void	 sbx_resolver_process(void);
/* timeout_ms, or less when a retry is due before. */
int	 sbx_resolver_timeout(int timeout_ms);
/* Lookups with c-ares whose requester is gone, in all. */
unsigned sbx_resolver_orphans(void);

/* Resolve a normalised host as the proxy would (its resolver settings,
 * dns_server included, connect_timeout_ms), blocking: the number of
 * addresses (at most max) written to addrs/lens, 0 when the name has
 * none, or -1 with kind unavailable (reason resolve_failed). */
int	 sbx_resolver_blocking(const struct sbx_proxy_config *,
	    const char *host,
	    struct sockaddr_storage *addrs, socklen_t *lens, int max,
	    struct sbx_error *);

#endif
