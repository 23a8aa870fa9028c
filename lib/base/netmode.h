/*
 * netmode.h: sbx exec's network modes, one table (DESIGN.md §4).  A row
 * per mode:
 *
 *	X(MODE, name, netns, relay, rank, warning)
 *
 * MODE names the enum (SBX_NETMODE_MODE); name is the word of --network,
 * of the `network` setting, of a request and of every envelope; netns:
 * the sandbox gets a network namespace of its own (only loopback), else
 * it shares the host's; relay: sbx-init relays 127.0.0.1:3128 to
 * sbx-proxy and the proxy variables are set; rank: how far the mode
 * reaches (sbx mcp lets a tool call ask for a mode up to the rank of the
 * agent's setting); warning: what every run in the mode says, or NULL.
 *
 * The list of modes (--network's values, the settings check, the MCP
 * schema's enum, the messages that name them) comes from this table; the
 * code that acts on a mode switches on the enum or reads the row.
 */
#ifndef SBX_NETMODE_H
#define SBX_NETMODE_H

#include <stddef.h>

/* clang-format off */
#define SBX_NETMODE_TABLE(X)						\
	X(NONE, "none", 1, 0, 0, NULL)					\
	X(PROXY, "proxy", 1, 1, 1, NULL)				\
	X(OUTBOUND, "outbound", 0, 0, 2,				\
	    "network outbound: the sandbox shares the host network")

#define SBX_NETMODE_ENUM_(m, name, netns, relay, rank, warning)	\
	SBX_NETMODE_##m,
#define SBX_NETMODE_BAR_(m, name, netns, relay, rank, warning)	"|" name
/* clang-format on */

/* SBX_NETMODE_NONE (the default: 0), ..., and their number. */
enum sbx_netmode { SBX_NETMODE_TABLE(SBX_NETMODE_ENUM_) SBX_NETMODE_COUNT };

/* "none|proxy|outbound", a constant: an option table's `values`. */
#define SBX_NETMODE_CHOICES	(SBX_NETMODE_TABLE(SBX_NETMODE_BAR_) + 1)

struct sbx_netmode_row {
	enum sbx_netmode mode;
	const char	*name;
	int		 netns;		/* a network namespace of its own */
	int		 relay;		/* sbx-init's relay to sbx-proxy */
	int		 rank;		/* how far it reaches */
	const char	*warning;	/* in every run's warnings, or NULL */
};

/* The row of a mode; the first (none) for a value out of range. */
const struct sbx_netmode_row *sbx_netmode_row(enum sbx_netmode);
/* Its name: "none", "proxy"... */
const char	*sbx_netmode_name(enum sbx_netmode);
/* The mode of a name (exactly as written): 0, else -1 (EINVAL). */
int		 sbx_netmode_parse(const char *, enum sbx_netmode *);
/* The rank of a name; an unknown name (or NULL) ranks as none. */
int		 sbx_netmode_rank(const char *);
/*
 * The names for people, "none, proxy or outbound", into buf (truncated
 * to size, NUL-terminated); buf.  SBX_NETMODE_LIST_MAX always fits.
 */
#define SBX_NETMODE_LIST_MAX	128
const char	*sbx_netmode_list(char *buf, size_t size);

#endif
