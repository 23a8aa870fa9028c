/*
 * layout.c: the state root's layout (DESIGN.md §3), one table.
 *
 * Modes: everything is private to the user running sbx (0700/0600) except
 * run/, which is 0711 so that a sandbox can later be handed a socket path
 * inside it without being able to list it (the tokens beneath stay
 * 0700/0600).  When sbx runs as root its sandboxes run as an unprivileged
 * uid (sbx_identity_get), which bwrap needs to reach the homes with:
 * SBX_LF_REACH directories are then 0711 (search, not list), and
 * SBX_LF_SANDBOX entries (what the sandbox writes) belong to that uid.
 *
 * no_write: group or other bits that let someone else plant a file or a
 * symbolic link (preflight: blocked); no_read: bits that let someone else
 * read what is private (preflight: a warning).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>

#include "fsutil.h"
#include "layout.h"
#include "root.h"

#define A	SBX_LF_AGENT
#define R	SBX_LF_REACH
#define S	SBX_LF_SANDBOX
#define C	SBX_LF_CREATE
#define P	SBX_LF_REPORT
#define D	SBX_LT_DIR
#define F	SBX_LT_FILE
#define K	SBX_LT_SOCK

static const struct sbx_layout_entry layout[SBX_L_N] = {
[SBX_L_ROOT] =		{ "root", ".", -1, D, 0700, 022, 0, R | C | P },
[SBX_L_CONFIG] =	{ "config", "config", SBX_L_ROOT, D, 0700, 022, 077,
			    C | P },
[SBX_L_SANDBOX_JSON] =	{ "sandbox_json", "config/sandbox.json",
			    SBX_L_CONFIG, F, 0600, 022, 0,
			    P | SBX_LF_OPTIONAL },
[SBX_L_CONFIG_AGENTS] =	{ "config_agents", "config/agents", SBX_L_CONFIG, D,
			    0700, 022, 077, C | P },
[SBX_L_AGENT_CONFIG] =	{ "agent_config", "config/agents/%s.json",
			    SBX_L_CONFIG_AGENTS, F, 0600, 022, 0, A | C | P },
[SBX_L_WORKSPACE] =	{ "workspace", "workspace", SBX_L_ROOT, D, 0700, 022,
			    0, R | C | P },
[SBX_L_WS_AGENTS] =	{ "workspace_agents", "workspace/agents",
			    SBX_L_WORKSPACE, D, 0700, 022, 0, R | C | P },
[SBX_L_AGENT_HOME] =	{ "agent_home", "workspace/agents/%s",
			    SBX_L_WS_AGENTS, D, 0700, 022, 077,
			    A | S | C | P },
/* The agent's own file: any mode it chose is its business. */
[SBX_L_SOUL] =		{ "soul", "workspace/agents/%s/SOUL.md",
			    SBX_L_AGENT_HOME, F, 0, 0, 0, A | S | C },
[SBX_L_WS_SHARED] =	{ "workspace_shared", "workspace/shared",
			    SBX_L_WORKSPACE, D, 0700, 022, 0, C | P },
[SBX_L_OUTPUT] =	{ "output", "output", SBX_L_ROOT, D, 0700, 022, 0,
			    R | C | P },
[SBX_L_AGENT_OUTPUT] =	{ "agent_output", "output/%s", SBX_L_OUTPUT, D, 0700,
			    022, 0, A | S | C | P },
[SBX_L_IMAGES] =	{ "images", "images", SBX_L_ROOT, D, 0700, 022, 0,
			    R | C | P },
[SBX_L_ENVS] =		{ "envs", "envs", SBX_L_ROOT, D, 0700, 022, 0,
			    R | C | P },
[SBX_L_AGENTS] =	{ "agents", "agents", SBX_L_ROOT, D, 0700, 022, 077,
			    C | P },
[SBX_L_AGENT_RECORDS] =	{ "agent_records", "agents/%s", SBX_L_AGENTS, D,
			    0700, 022, 077, A | C | P },
[SBX_L_PLUGINS] =	{ "plugins", "plugins", SBX_L_ROOT, D, 0700, 022, 0,
			    C | P },
[SBX_L_RUN] =		{ "run", "run", SBX_L_ROOT, D, 0711, 022, 044,
			    C | P },
/* Anything but the owner's bits on a token directory or a token is
 * blocked: a token read is an agent's identity taken. */
[SBX_L_RUN_TOKENS] =	{ "run_tokens", "run/tokens", SBX_L_RUN, D, 0700,
			    077, 0, C | P },
[SBX_L_AGENT_TOKEN] =	{ "agent_token", "run/tokens/%s", SBX_L_RUN_TOKENS,
			    F, 0600, 077, 0, A | C | P | SBX_LF_NONEMPTY },
[SBX_L_PROXY_SOCK] =	{ "proxy_socket", "run/proxy.sock", SBX_L_RUN, K, 0,
			    0, 0, P | SBX_LF_DAEMON },
[SBX_L_BRIDGE_SOCK] =	{ "bridge_socket", "run/bridge.sock", SBX_L_RUN, K,
			    0, 0, 0, P | SBX_LF_DAEMON },
/* Reachable as well: cache/ holds the sandbox's prepared /etc, which bwrap
 * resolves by path as the sandbox's uid (etccache.c); nothing in cache/
 * is readable by that uid but the tree. */
[SBX_L_CACHE] =		{ "cache", "cache", SBX_L_ROOT, D, 0700, 022, 0,
			    R | C | P },
/* Written last by provision: a directory holding it is a state root. */
[SBX_L_MARKER] =	{ "marker", SBX_ROOT_MARKER, SBX_L_ROOT, F, 0600, 022,
			    0, C },
[SBX_L_IMAGE] =		{ "image", "images/%s", SBX_L_IMAGES, D, 0700, 022,
			    0, SBX_LF_ARG },
[SBX_L_IMAGE_ROOTFS] =	{ "image_rootfs", "images/%s/rootfs", SBX_L_IMAGE, D,
			    0, 022, 0, SBX_LF_ARG },
[SBX_L_ENV] =		{ "env", "envs/%s", SBX_L_ENVS, D, 0700, 022, 0, A },
[SBX_L_ENV_ROOTFS] =	{ "env_rootfs", "envs/%s/rootfs", SBX_L_ENV, D, 0,
			    022, 0, A },
[SBX_L_AGENT_JOBS] =	{ "agent_jobs", "agents/%s/jobs", SBX_L_AGENT_RECORDS,
			    D, 0700, 022, 077, A },
[SBX_L_AGENT_IMAGE] =	{ "agent_image", "agents/%s/image.json",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_REVOKED] =	{ "agent_revoked", "agents/%s/unprovisioned",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
/* sbx install's manifest and locks (lib/exec/install.c). */
[SBX_L_AGENT_INSTALLED] = { "agent_installed",
			    "agents/%s/installed-packages.json",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_INSTALL_LOCK] = { "agent_install_lock", "agents/%s/install.lock",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_ROOTFS_LOCK] = { "agent_rootfs_lock", "agents/%s/rootfs.lock",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
/* Plugin recipes (lib/service/plugin.c): the library, and per agent what
 * is installed (the record the bridge reads, a copy of each installed
 * recipe, which runs use: never the library's newer one) and the files,
 * in the home, where the sandbox sees them. */
[SBX_L_PLUGIN] =	{ "plugin", "plugins/%s.json", SBX_L_PLUGINS, F, 0600,
			    022, 0, SBX_LF_ARG },
[SBX_L_PLUGINS_LOCK] =	{ "plugins_lock", "plugins/library.lock",
			    SBX_L_PLUGINS, F, 0600, 022, 0, 0 },
[SBX_L_AGENT_PLUGINS] =	{ "agent_plugins", "agents/%s/plugins.json",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_PLUGINS_LOCK] = { "agent_plugins_lock", "agents/%s/plugins.lock",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_PLUGIN_RECIPES] = { "agent_plugin_recipes", "agents/%s/plugins",
			    SBX_L_AGENT_RECORDS, D, 0700, 022, 077, A },
[SBX_L_AGENT_SBX_DIR] =	{ "agent_sbx_dir", "workspace/agents/%s/.sbx",
			    SBX_L_AGENT_HOME, D, 0, 0, 0, A | S },
[SBX_L_AGENT_PLUGIN_DIRS] = { "agent_plugin_dirs",
			    "workspace/agents/%s/.sbx/plugins",
			    SBX_L_AGENT_SBX_DIR, D, 0, 0, 0, A | S },
[SBX_L_RUN_WORKDIR] =	{ "run_workdir", "run/workdir", SBX_L_RUN, D, 0711,
			    022, 0, 0 },
[SBX_L_RUN_XWORKDIR] =	{ "run_xworkdir", "run/workdir-%s", SBX_L_RUN, D,
			    0711, 022, 0, SBX_LF_ARG },
[SBX_L_RUN_EMPTY] =	{ "run_empty", "run/empty", SBX_L_RUN, F, 0444, 022,
			    0, 0 },
[SBX_L_CACHE_ETC] =	{ "cache_etc", "cache/etc", SBX_L_CACHE, D, 0711, 022,
			    0, 0 },
[SBX_L_CGROUP_GC] =	{ "cgroup_gc", "cache/cgroup-gc", SBX_L_CACHE, F, 0600,
			    022, 0, 0 },
[SBX_L_PROVISION_LOCK] = { "provision_lock", "run/provision.lock", SBX_L_RUN,
			    F, 0600, 022, 0, 0 },
[SBX_L_PROXY_LOCK] =	{ "proxy_lock", "run/proxy.lock", SBX_L_RUN, F, 0600,
			    022, 0, 0 },
[SBX_L_BRIDGE_LOCK] =	{ "bridge_lock", "run/bridge.lock", SBX_L_RUN, F, 0600,
			    022, 0, 0 },
/* The bridge's records: written by sbx-bridge only, never by the sandbox,
 * and read back only for the agent whose token asked. */
[SBX_L_AGENT_BRIDGE] =	{ "agent_bridge", "agents/%s/bridge",
			    SBX_L_AGENT_RECORDS, D, 0700, 077, 0, A },
[SBX_L_AGENT_BR_CONFIG] = { "agent_bridge_config",
			    "agents/%s/bridge/config.json", SBX_L_AGENT_BRIDGE,
			    F, 0600, 077, 0, A },
[SBX_L_AGENT_BR_EVENTS] = { "agent_bridge_events",
			    "agents/%s/bridge/events.jsonl", SBX_L_AGENT_BRIDGE,
			    F, 0600, 077, 0, A },
[SBX_L_AGENT_BR_LOG] =	{ "agent_bridge_log", "agents/%s/bridge/log.jsonl",
			    SBX_L_AGENT_BRIDGE, F, 0600, 077, 0, A },
[SBX_L_AGENT_BR_MEMORY] = { "agent_bridge_memory",
			    "agents/%s/bridge/memory.db", SBX_L_AGENT_BRIDGE,
			    F, 0600, 077, 0, A },
[SBX_L_AGENT_BR_TASKS] = { "agent_bridge_tasks", "agents/%s/bridge/tasks",
			    SBX_L_AGENT_BRIDGE, D, 0700, 077, 0, A },
/* The secret store (lib/state/secret.c): sealed, and its previous copy,
 * kept until the next write. */
[SBX_L_AGENT_SECRETS] =	{ "agent_secrets", "agents/%s/secrets.json",
			    SBX_L_AGENT_RECORDS, F, 0600, 077, 0, A },
[SBX_L_AGENT_SECRETS_PREV] = { "agent_secrets_prev",
			    "agents/%s/secrets.json.prev", SBX_L_AGENT_RECORDS,
			    F, 0600, 077, 0, A },
/* A setting's file in config/ (upstream_auth_file: lib/net/upstream.c). */
[SBX_L_CONFIG_FILE] =	{ "config_file", "config/%s", SBX_L_CONFIG, F, 0600,
			    077, 0, SBX_LF_ARG },
[SBX_L_AGENT_DISK_IMG] = { "agent_disk_img", "agents/%s/disk.img",
			    SBX_L_AGENT_RECORDS, F, 0600, 077, 0, A },
/* Under run/ (0711), not agents/ (0700): bubblewrap walks a bind's source
 * path as the sandbox's uid, and --disk-tmp binds directories of it. */
[SBX_L_AGENT_DISK_MNT] = { "agent_disk_mnt", "run/disk-%s", SBX_L_RUN, D,
			    0711, 022, 0, A },
[SBX_L_AGENT_DISK_LOCK] = { "agent_disk_lock", "agents/%s/disk.lock",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_DISK_MIGRATE] = { "agent_disk_migrate",
			    "agents/%s/disk.migrating", SBX_L_AGENT_RECORDS, F,
			    0600, 022, 0, A },
/* Per-agent uids (lib/state/idalloc.c). */
[SBX_L_AGENT_IDENTITY] = { "agent_identity", "agents/%s/identity.json",
			    SBX_L_AGENT_RECORDS, F, 0600, 022, 0, A },
[SBX_L_AGENT_IDENTITY_LOCK] = { "agent_identity_lock",
			    "agents/%s/identity.lock", SBX_L_AGENT_RECORDS, F,
			    0600, 022, 0, A },
[SBX_L_IDENTITY_LOCK] =	{ "identity_lock", "run/identity.lock", SBX_L_RUN, F,
			    0600, 022, 0, 0 },
};

#undef A
#undef R
#undef S
#undef C
#undef P
#undef D
#undef F
#undef K

const struct sbx_layout_entry *
sbx_layout_get(enum sbx_layout_id id)
{
	if ((int)id < 0 || id >= SBX_L_N)
		return NULL;
	return &layout[id];
}

mode_t
sbx_layout_mode(enum sbx_layout_id id, int as_root)
{
	const struct sbx_layout_entry	*l = sbx_layout_get(id);

	if (l == NULL)
		return 0;
	return as_root && (l->flags & SBX_LF_REACH) ? 0711 : l->mode;
}

int
sbx_layout_path(enum sbx_layout_id id, const char *arg, char *buf, size_t bufsz,
    struct sbx_error *e)
{
	const struct sbx_layout_entry	*l = sbx_layout_get(id);
	const char			*pct;
	int				 n;

	if (bufsz > 0)
		buf[0] = '\0';
	if (l == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "layout",
		    "unknown_location", "no such location in the layout");
	if ((pct = strstr(l->path, "%s")) == NULL)
		n = snprintf(buf, bufsz, "%s", l->path);
	else {
		/* The callers validated the name already; this is the last
		 * line: whatever gets here becomes one component beneath
		 * the root, never two and never a way out. */
		if (arg == NULL || *arg == '\0' || strchr(arg, '/') != NULL ||
		    strcmp(arg, ".") == 0 || strcmp(arg, "..") == 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    l->flags & SBX_LF_ARG ? "digest" : "agent",
			    "invalid_component", "`%s` cannot name a "
			    "location beneath the state root",
			    arg == NULL ? "" : arg);
		n = snprintf(buf, bufsz, "%.*s%s%s", (int)(pct - l->path),
		    l->path, arg, pct + 2);
	}
	if (n < 0 || (size_t)n >= bufsz) {
		if (bufsz > 0)
			buf[0] = '\0';
		errno = ENAMETOOLONG;
		return sbx_error_sys(e, "path_too_long", "%s", l->path);
	}
	return 0;
}

const char *
sbx_layout_leaf(const char *rel)
{
	const char	*s = strrchr(rel, '/');

	return s != NULL ? s + 1 : rel;
}

int
sbx_layout_open(int rootfd, enum sbx_layout_id id, const char *arg, int flags,
    struct sbx_error *e)
{
	char	 rel[SBX_LAYOUT_PATH_MAX];

	if (sbx_layout_path(id, arg, rel, sizeof(rel), e) == -1)
		return -1;
	return sbx_fs_open_beneath(rootfd, rel, flags, e);
}

int
sbx_layout_mkdirs(int rootfd, enum sbx_layout_id id, const char *arg,
    struct sbx_error *e)
{
	const struct sbx_layout_entry	*l = sbx_layout_get(id);
	char				 rel[SBX_LAYOUT_PATH_MAX];

	if (sbx_layout_path(id, arg, rel, sizeof(rel), e) == -1)
		return -1;
	return sbx_fs_mkdirs_at(rootfd, rel, l->mode != 0 ? l->mode : 0700, e);
}
