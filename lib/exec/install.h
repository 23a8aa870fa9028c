/*
 * install.h: what sbx install decides without running anything: the
 * package managers, the validation of a request's package names, the
 * classification of a failed run (and its transient signatures), the
 * manifest agents/<a>/installed-packages.json and the install locks.
 */
#ifndef SBX_INSTALL_H
#define SBX_INSTALL_H

#include <stddef.h>

#include <sys/types.h>

#include <jansson.h>

#include "error.h"

enum sbx_install_mgr {
	SBX_INSTALL_APT,
	SBX_INSTALL_NPM,
	SBX_INSTALL_PIP,
	SBX_INSTALL_NMGR
};

/* Limits of a request (the validation rules). */
#define SBX_INSTALL_MAX_PKGS	32
#define SBX_INSTALL_MAX_PKG_LEN	256
/* Bytes of the manager's output kept in the result's log_tail. */
#define SBX_INSTALL_LOG_TAIL	4096
/* The manifest's name under agents/<a>/, and its size cap. */
#define SBX_INSTALL_MANIFEST	"installed-packages.json"
#define SBX_INSTALL_MANIFEST_MAX	(1u << 20)
/* Where npm installs, relative to the agent's home. */
#define SBX_INSTALL_NPM_DIR	".sbx/node_workspace"
#define SBX_INSTALL_VENV_DIR	".venv"

/* "apt", "npm", "pip" -> the manager, or -1 (invalid_args, field
 * "manager", reason unknown_manager). */
int		 sbx_install_manager(const char *, struct sbx_error *);
const char	*sbx_install_manager_name(int);

/*
 * Check a request's packages before anything runs: at most 32, each at
 * most 256 bytes, no control characters, no leading `-`, and the
 * manager's grammar (apt: NAME[:ARCH][=VERSION|/RELEASE], no trailing
 * +/- action; pip: a PEP 508 name, extras, version specifiers; npm:
 * [@SCOPE/]NAME[@TAG|@RANGE]).  URLs, VCS and local paths are refused
 * unless allow_url.  A refusal is invalid_args with field "packages[i]"
 * (storage of this module, valid until the next call) and a reason:
 * no_packages, too_many_packages, too_long, control_character,
 * option_like, url_not_allowed, action_suffix, invalid_name,
 * invalid_version, markers_not_supported.
 */
int	sbx_install_validate(int mgr, char *const *pkgs, int n, int allow_url,
	    struct sbx_error *);

/* The bare name of a validated spec (what the manifest keeps): npm
 * "@s/x@^1" -> "@s/x", pip "Req[x]>=2" -> "Req", apt "jq=1.6" -> "jq".
 * Caller frees; NULL on ENOMEM. */
char	*sbx_install_pkg_name(int mgr, const char *spec);

/* Failure classes of a manager's run. */
#define SBX_INSTALL_C_NOT_FOUND		"package_not_found"
#define SBX_INSTALL_C_RESOLUTION	"resolution"
#define SBX_INSTALL_C_NETWORK		"network"
#define SBX_INSTALL_C_LOCK		"lock"
#define SBX_INSTALL_C_DISK_FULL		"disk_full"
#define SBX_INSTALL_C_PERMISSION	"permission"
#define SBX_INSTALL_C_UNKNOWN		"unknown"

struct sbx_install_class {
	const char	*cls;		/* one of SBX_INSTALL_C_* */
	int		 retryable;	/* follows the class */
	const char	*transient;	/* the transient signature seen (one
					 * cleanup and one retry), or NULL */
};

/* Classify a failed run (exit_code != 0) from its exit status and its
 * output (stdout and stderr together). */
void	sbx_install_classify(int mgr, int exit_code, const char *out,
	    size_t len, struct sbx_install_class *);

/*
 * The manifest {apt:[], npm:[], pip:[]}: names trimmed, deduplicated
 * case-insensitively (the first spelling stays), sorted.  read: a missing
 * file is an empty manifest; a malformed one is rejected
 * (manifest_invalid).  normalize: rebuilt in place from any object
 * (unknown keys and non-strings dropped).  add: names (specs) of mgr
 * merged.  write: atomically under the agent's directory fd.
 */
json_t	*sbx_install_manifest_read(int agentfd, struct sbx_error *);
/* e, a failure of agent's manifest, names agents/A/installed-packages.json
 * and its repair (sbx install reconcile), for every program that reads it. */
void	 sbx_install_manifest_named(struct sbx_error *, const char *agent);
json_t	*sbx_install_manifest_normalize(const json_t *);
int	 sbx_install_manifest_add(json_t *, int mgr, char *const *specs,
	    int n);
int	 sbx_install_manifest_set(json_t *, int mgr, const json_t *names);
int	 sbx_install_manifest_write(int agentfd, const json_t *,
	    struct sbx_error *);

/*
 * Take the install lock dirfd/name (created 0600, never through a
 * symlink): flock(LOCK_EX), waiting at most wait_s seconds (0: do not
 * wait).  The kernel releases it when the holder dies, so a crashed
 * install never blocks the next one.  Returns the fd that holds it, or -1
 * (unavailable, reason install_locked, when it stays taken).
 */
int	sbx_install_lock(int dirfd, const char *name, int wait_s,
	    struct sbx_error *);

/*
 * Where a manager downloads from: its registry URL (npm's registry,
 * pip's index; "" for apt, whose sources are the image's) and the hosts
 * (and ports) the install run's proxy allowlist gets for that run alone.
 * Defaults: npm https://registry.npmjs.org/, pip https://pypi.org/simple/
 * (and files.pythonhosted.org); config/sandbox.json
 * `install.registries.MANAGER` (an array of URLs: the first is the
 * registry, the others more hosts to allow; or one URL, as npm's own
 * `registry` is written) overrides them.  A bad entry
 * is invalid_args, reason config_invalid.
 */
#define SBX_INSTALL_MAX_HOSTS	8
struct sbx_install_reg {
	char		 url[512];
	int		 nhosts;
	char		 host[SBX_INSTALL_MAX_HOSTS][254];
	unsigned	 port[SBX_INSTALL_MAX_HOSTS];
	int		 plain_http;	/* the registry is http:// */
};

int	sbx_install_registry(const json_t *sandboxcfg, int mgr,
	    struct sbx_install_reg *, struct sbx_error *);
/* http(s)://HOST[:PORT][/PATH] -> host (a name: no IP literal, no
 * credentials), port (default 80/443), *https.  0 or -1. */
int	sbx_install_url_host(const char *url, char host[254], unsigned *port,
	    int *https);
/* The config check of `install.registries` (sbx config). */
int	sbx_install_config_check(const json_t *sandboxcfg, struct sbx_error *);

/* apt: add the http(s) hosts of a sources file (one-line format, or
 * deb822 `URIs:` fields) to r.  -1 when more hosts than r holds. */
int
sbx_install_apt_sources(const char *text, int deb822, struct sbx_install_reg *);
/*
 * Hand every entry of the agent's root file system copy
 * (envs/<agent>/rootfs) to uid:gid, the sandbox's uid 0, except the ids
 * of the subordinate range sub (NULL: none), which dpkg gave to the
 * packages' own users and which stay; no symlink is followed.  Once per
 * copy: the stamp SBX_ROOTFS_OWN_STAMP (rootfs.h) beside it records the copy
 * (device, inode), the ids and the range, and a copy that matches it is
 * not walked again (nothing but sandboxes of that identity writes it
 * afterwards, and they can only give what they write to mapped ids).
 * Returns 1 (walked), 0 (the stamp matched), or -1.
 */
struct sbx_subids;
int sbx_install_rootfs_own(int rootfd, const char *agent, uid_t, gid_t,
    const struct sbx_subids *sub, struct sbx_error *);

/* The tail of out (at most cap bytes, starting after a newline where one
 * is near), as valid UTF-8 for an envelope.  Caller frees. */
char	*sbx_install_log_tail(const char *out, size_t len, size_t cap);

#endif
