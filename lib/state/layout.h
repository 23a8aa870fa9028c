/* layout.h: the state root's layout (DESIGN.md §3), one table.
 *
 * sbx provision creates from it, sbx preflight checks against it, and every
 * other module builds the paths it opens beneath the root through it, so a
 * location is named, moded and owned in one place.
 */
#ifndef SBX_LAYOUT_H
#define SBX_LAYOUT_H

#include <sys/types.h>

#include <stddef.h>

#include "error.h"

/* Parents come before their children; the order of the entries marked
 * SBX_LF_REPORT is the order of sbx preflight's `locations`. */
enum sbx_layout_id {
	SBX_L_ROOT,		/* .			the state root itself */
	SBX_L_CONFIG,		/* config/ */
	SBX_L_SANDBOX_JSON,	/* config/sandbox.json	optional */
	SBX_L_CONFIG_AGENTS,	/* config/agents/ */
	SBX_L_AGENT_CONFIG,	/* config/agents/A.json */
	SBX_L_WORKSPACE,	/* workspace/ */
	SBX_L_WS_AGENTS,	/* workspace/agents/ */
	SBX_L_AGENT_HOME,	/* workspace/agents/A/	HOME in the sandbox */
	SBX_L_SOUL,		/* workspace/agents/A/SOUL.md */
	SBX_L_WS_SHARED,	/* workspace/shared/ */
	SBX_L_OUTPUT,		/* output/ */
	SBX_L_AGENT_OUTPUT,	/* output/A/		/output inside */
	SBX_L_IMAGES,		/* images/ */
	SBX_L_ENVS,		/* envs/ */
	SBX_L_AGENTS,		/* agents/ */
	SBX_L_AGENT_RECORDS,	/* agents/A/		host-side records */
	SBX_L_PLUGINS,		/* plugins/ */
	SBX_L_RUN,		/* run/			0711 */
	SBX_L_RUN_TOKENS,	/* run/tokens/ */
	SBX_L_AGENT_TOKEN,	/* run/tokens/A */
	SBX_L_PROXY_SOCK,	/* run/proxy.sock	the proxy's */
	SBX_L_BRIDGE_SOCK,	/* run/bridge.sock	the bridge's */
	SBX_L_CACHE,		/* cache/ */
	SBX_L_MARKER,		/* .sbx-state-root */
	/* Addressed only: made by the module that owns them, on demand. */
	SBX_L_IMAGE,		/* images/D/		D: a sha256 digest */
	SBX_L_IMAGE_ROOTFS,	/* images/D/rootfs/ */
	SBX_L_ENV,		/* envs/A/ */
	SBX_L_ENV_ROOTFS,	/* envs/A/rootfs/	an agent's own copy */
	SBX_L_AGENT_JOBS,	/* agents/A/jobs/ */
	SBX_L_AGENT_IMAGE,	/* agents/A/image.json */
	SBX_L_AGENT_REVOKED,	/* agents/A/unprovisioned */
	SBX_L_AGENT_INSTALLED,	/* agents/A/installed-packages.json */
	SBX_L_AGENT_INSTALL_LOCK, /* agents/A/install.lock	pip, npm */
	SBX_L_AGENT_ROOTFS_LOCK, /* agents/A/rootfs.lock	apt: the copy */
	SBX_L_PLUGIN,		/* plugins/ID.json	a library recipe */
	SBX_L_PLUGINS_LOCK,	/* plugins/library.lock */
	SBX_L_AGENT_PLUGINS,	/* agents/A/plugins.json */
	SBX_L_AGENT_PLUGINS_LOCK, /* agents/A/plugins.lock */
	SBX_L_AGENT_PLUGIN_RECIPES, /* agents/A/plugins/ */
	SBX_L_AGENT_SBX_DIR,	/* workspace/agents/A/.sbx/ */
	SBX_L_AGENT_PLUGIN_DIRS, /* workspace/agents/A/.sbx/plugins/ (files) */
	SBX_L_RUN_WORKDIR,	/* run/workdir/		0711 */
	SBX_L_RUN_XWORKDIR,	/* run/workdir-N/	0711, N: 1, 2... */
	SBX_L_RUN_EMPTY,	/* run/empty		bound over deny_paths */
	SBX_L_CACHE_ETC,	/* cache/etc/		the prepared /etc */
	SBX_L_CGROUP_GC,	/* cache/cgroup-gc	the last reaping */
	SBX_L_PROVISION_LOCK,	/* run/provision.lock */
	SBX_L_PROXY_LOCK,	/* run/proxy.lock */
	SBX_L_BRIDGE_LOCK,	/* run/bridge.lock */
	/* sbx-bridge's records of an agent (lib/state/bridgestore.c). */
	SBX_L_AGENT_BRIDGE,	/* agents/A/bridge/ */
	SBX_L_AGENT_BR_CONFIG,	/* agents/A/bridge/config.json */
	SBX_L_AGENT_BR_EVENTS,	/* agents/A/bridge/events.jsonl (+ .1) */
	SBX_L_AGENT_BR_LOG,	/* agents/A/bridge/log.jsonl (+ .1) */
	SBX_L_AGENT_BR_MEMORY,	/* agents/A/bridge/memory.db	SQLite FTS5 */
	SBX_L_AGENT_BR_TASKS,	/* agents/A/bridge/tasks/	ID.json */
	/* sbx secret's sealed store of an agent (lib/state/secret.c). */
	SBX_L_AGENT_SECRETS,	/* agents/A/secrets.json */
	SBX_L_AGENT_SECRETS_PREV, /* agents/A/secrets.json.prev	the last one */
	/* A file an administrator keeps in config/ for a setting that names
	 * it (upstream_auth_file): one name, the argument. */
	SBX_L_CONFIG_FILE,	/* config/NAME */
	/* An agent's hard disk limit (lib/sandbox/diskimg.c): its image,
	 * where it is mounted, its lock and a migration's marker. */
	SBX_L_AGENT_DISK_IMG,	/* agents/A/disk.img */
	SBX_L_AGENT_DISK_MNT,	/* run/disk-A/		the image's mount */
	SBX_L_AGENT_DISK_LOCK,	/* agents/A/disk.lock */
	SBX_L_AGENT_DISK_MIGRATE, /* agents/A/disk.migrating */
	/* Per-agent uids (lib/state/idalloc.c): the agent's own ids, and
	 * the lock its allocation and migration take. */
	SBX_L_AGENT_IDENTITY,	/* agents/A/identity.json */
	SBX_L_AGENT_IDENTITY_LOCK, /* agents/A/identity.lock */
	SBX_L_IDENTITY_LOCK,	/* run/identity.lock	allocation */
	SBX_L_N
};

/* Enough for every path of the table (agent names are at most 32 bytes,
 * digests 64). */
#define SBX_LAYOUT_PATH_MAX	256

enum sbx_layout_type { SBX_LT_DIR, SBX_LT_FILE, SBX_LT_SOCK };

#define SBX_LF_AGENT	0x001	/* per agent: "%s" in the path is its name */
#define SBX_LF_REACH	0x002	/* 0711, not 0700, when sbx runs as root */
#define SBX_LF_SANDBOX	0x004	/* owned by the sandbox's uid (as root) */
#define SBX_LF_CREATE	0x008	/* sbx provision makes it; status lists it */
#define SBX_LF_REPORT	0x010	/* sbx preflight reports it */
#define SBX_LF_OPTIONAL	0x020	/* absent is normal (a settings file) */
#define SBX_LF_DAEMON	0x040	/* a daemon's socket: absent is normal */
#define SBX_LF_NONEMPTY	0x080	/* an empty file is broken */
#define SBX_LF_ARG	0x100	/* "%s" in the path is an argument, not an
				 * agent (the digest of an image, a number) */

struct sbx_layout_entry {
	const char		*name;	/* stable id in reports */
	const char		*path;	/* relative to the root; "%s": agent */
	int			 parent; /* enum sbx_layout_id; -1: none */
	enum sbx_layout_type	 type;
	mode_t			 mode;	/* what provision gives it; 0: any */
	mode_t			 no_write; /* bits that must be clear */
	mode_t			 no_read; /* bits that should be clear */
	unsigned		 flags;
};

/* The entry of id (never NULL for a valid id). */
const struct sbx_layout_entry *sbx_layout_get(enum sbx_layout_id);
/* The mode a directory should have: 0711 for SBX_LF_REACH entries when
 * sbx runs as root, else the table's. */
mode_t	sbx_layout_mode(enum sbx_layout_id, int as_root);
/* The path of id relative to the root, "%s" filled with arg (the agent or
 * digest; ignored where the path has none).  -1 with e set when arg is
 * missing, empty, `.`/`..` or holds a `/`, or the path does not fit. */
int	sbx_layout_path(enum sbx_layout_id, const char *arg, char *buf,
	    size_t bufsz, struct sbx_error *);
/* sbx_layout_path into an array, for names validated already (the
 * buffer is left empty on failure, which opens nothing). */
#define SBX_LPATH(buf, id, arg) \
	sbx_layout_path((id), (arg), (buf), sizeof(buf), NULL)
/* The last component of a path built by sbx_layout_path. */
const char *sbx_layout_leaf(const char *rel);
/* Open the existing location id beneath rootfd, never following a
 * symbolic link (sbx_fs_open_beneath); flags as for openat. */
int	sbx_layout_open(int rootfd, enum sbx_layout_id, const char *arg,
	    int flags, struct sbx_error *);
/* Create (as needed) and open the directory id beneath rootfd, one
 * component at a time (sbx_fs_mkdirs_at); new directories get the table's
 * mode (sbx provision widens SBX_LF_REACH ones for root). */
int	sbx_layout_mkdirs(int rootfd, enum sbx_layout_id, const char *arg,
	    struct sbx_error *);

#endif
