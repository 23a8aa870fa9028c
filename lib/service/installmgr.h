/*
 * installmgr.h: what sbx install runs and asks around a run: each
 * manager's fixed scripts (install, cleanup before the one retry, list)
 * and environment, the names a listing gives, the apt sources of an
 * agent's copy, and the proxy policy's verdict on the registries.
 */
#ifndef SBX_INSTALLMGR_H
#define SBX_INSTALLMGR_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"
#include "install.h"

/* Exit statuses of the scripts that mean something of their own. */
#define SBX_INSTALLMGR_RC_NO_MANAGER 90 /* the manager is missing */
#define SBX_INSTALLMGR_RC_NO_VENV    91 /* python3 without venv */
#define SBX_INSTALLMGR_RC_FOREIGN \
	92 /* apt: owners or set-id bits
						 * the sandbox cannot keep */

enum sbx_installmgr_script {
	SBX_INSTALLMGR_INSTALL, /* the packages are "$@" */
	SBX_INSTALLMGR_CLEANUP, /* before the one retry */
	SBX_INSTALLMGR_LIST /* what is installed (reconcile) */
};

/*
 * The fixed script (sh -c) of a manager: never built from the packages,
 * which are its arguments after `--`, so a manager never reads one as an
 * option.
 */
const char *sbx_installmgr_script(int mgr, enum sbx_installmgr_script);

/* The manager's environment for a run: where its registry is. */
int
sbx_installmgr_env(int mgr, const struct sbx_install_reg *, struct sbx_strv *);

/* The names a listing's output gives: dpkg-query lines, `npm ls --json`
 * or `pip list --format=json`; NULL when it cannot be read. */
json_t *sbx_installmgr_names(int mgr, const char *out, size_t len);

/*
 * apt: the http(s) hosts of the sources of envs/<agent>/rootfs
 * (sources.list, sources.list.d/ *.list and *.sources), read beneath the
 * state root without following a symlink, added to reg.  None is
 * rejected, reason no_apt_sources.
 */
int sbx_installmgr_apt_registry(int rootfd, const char *agent,
    struct sbx_install_reg *, struct sbx_error *);

struct sbx_netpolicy;

/*
 * The registries of an install run of mgr for agent: install.registries
 * of config/sandbox.json or the defaults, and for apt (unless that names
 * them) the hosts of the agent's copy's sources.
 */
int sbx_installmgr_registries(int rootfd, const char *agent, int mgr,
    struct sbx_install_reg *, struct sbx_error *);

/* Allow reg's hosts in a policy, as the install run's allowlist does
 * (`sbx proxy check --install`). */
int sbx_installmgr_allow(const struct sbx_install_reg *,
    struct sbx_netpolicy *, struct sbx_error *);

/*
 * Before anything runs, as `sbx proxy check --install MGR --resolve`
 * would: every host of reg passes the agent's proxy policy (with reg's
 * hosts allowed, as the run will have them), and so do its addresses.
 * Every host is judged first; the refusal names each refused one and why
 * (rejected, or unavailable when no name resolves; reason: the first
 * refusal's), and its hint the exact commands that allow them, all hosts
 * of a kind in one: `sbx config add allow_private_domains H1 H2 --agent
 * A`, `sbx config add allowed_ports P --agent A`.
 */
int sbx_installmgr_check_registries(int rootfd, const char *agent, int mgr,
    const struct sbx_install_reg *, struct sbx_error *);

#endif
