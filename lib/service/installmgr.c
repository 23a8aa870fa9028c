/*
 * installmgr.c: what sbx install runs and asks around a run (see
 * installmgr.h).  Nothing here runs a sandbox: cmd/install-run.c does,
 * through the exec engine.
 */
#include <sys/socket.h>

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fsutil.h"
#include "installmgr.h"
#include "layout.h"
#include "netpolicy.h"
#include "proxy.h"
#include "resolver.h"
#include "settings.h"

static const char npm_script[] =
    "command -v npm >/dev/null 2>&1 || {\n"
    "  echo 'sbx-install: npm is not available in the sandbox' >&2; exit 90; }\n"
    "d=\"$HOME/.sbx/node_workspace\"\n"
    "mkdir -p \"$d\" && cd \"$d\" || exit 1\n"
    "[ -e package.json ] ||\n"
    "  printf '%s\\n' '{\"name\":\"sbx-node-workspace\",\"private\":true}' "
    ">package.json || exit 1\n"
    "exec npm install --no-audit --no-fund --no-update-notifier -- \"$@\"\n";

static const char npm_cleanup[] =
    "npm cache clean --force || exit 1\n"
    "rm -f \"$HOME/.sbx/node_workspace/node_modules/.package-lock.json\"\n";

static const char npm_list[] =
    "cd \"$HOME/.sbx/node_workspace\" 2>/dev/null || { echo '{}'; exit 0; }\n"
    "npm ls --json --depth=0 2>/dev/null\n"
    "exit 0\n";

static const char pip_script[] =
    "v=\"$HOME/.venv\"\n"
    "if [ ! -x \"$v/bin/python\" ]; then\n"
    "  command -v python3 >/dev/null 2>&1 || {\n"
    "    echo 'sbx-install: python3 is not available in the sandbox' >&2;"
    " exit 90; }\n"
    "  python3 -c 'import venv, ensurepip' 2>/dev/null || {\n"
    "    echo 'sbx-install: python3 has no venv module (python3-venv)' >&2;"
    " exit 91; }\n"
    "  python3 -m venv \"$v\" || exit 1\n"
    "fi\n"
    "exec \"$v/bin/python\" -m pip install --disable-pip-version-check "
    "--no-input -- \"$@\"\n";

static const char pip_cleanup[] =
    "[ -x \"$HOME/.venv/bin/python\" ] || exit 0\n"
    "\"$HOME/.venv/bin/python\" -m pip cache purge "
    "--disable-pip-version-check\n";

static const char pip_list[] =
    "[ -x \"$HOME/.venv/bin/python\" ] || { echo '[]'; exit 0; }\n"
    "exec \"$HOME/.venv/bin/python\" -m pip list --format=json --not-required "
    "--exclude pip --exclude setuptools --disable-pip-version-check\n";

/*
 * apt, as uid 0 of the sandbox's user namespace over the agent's copy.
 * That namespace maps ids 1..$INSTALL_MAPPED_IDS besides (a subordinate
 * range, exec's prep_subids; 0 without one), so a package with files of
 * an owner beyond them, or with a set-id bit (which the seccomp filter
 * refuses), could only half-install: the archives are downloaded first
 * and every one is checked before dpkg runs.
 */
static const char apt_script[] =
    "command -v apt-get >/dev/null 2>&1 || {\n"
    "  echo 'sbx-install: apt-get is not available in the sandbox' >&2; exit 90; }\n"
    "export DEBIAN_FRONTEND=noninteractive\n"
    "a() { apt-get -o APT::Sandbox::User=root "
    "-o \"Acquire::http::Proxy=$http_proxy\" "
    "-o \"Acquire::https::Proxy=$https_proxy\" -o Dpkg::Use-Pty=0 "
    "-o quiet=1 \"$@\"; }\n"
    /* An install killed inside dpkg leaves packages half-configured;
     * finish them first (nothing to do otherwise). */
    "dpkg --configure -a || exit\n"
    "a update || exit\n"
    "a install -y --no-install-recommends --download-only -- \"$@\" || exit\n"
    "bad=0\n"
    "for f in /var/cache/apt/archives/*.deb; do\n"
    "  [ -f \"$f\" ] || continue\n"
    "  dpkg-deb --fsys-tarfile \"$f\" | tar -tvf - --numeric-owner |\n"
    "  awk -v f=\"${f##*/}\" -v n=\"${INSTALL_MAPPED_IDS:-0}\" '\n"
    "    { split($2, o, \"/\") }\n"
    "    o[1] + 0 > n + 0 || o[2] + 0 > n + 0 || substr($1, 4, 1) ~ /[sS]/ ||\n"
    "      substr($1, 7, 1) ~ /[sS]/ { print \"sbx-install: \" f \": \" $0;"
    " bad = 1 }\n"
    "    END { exit bad }' >&2 || { rm -f \"$f\"; bad=1; }\n"
    "done\n"
    "[ \"$bad\" = 0 ] || exit 92\n"
    "a install -y --no-install-recommends -- \"$@\"\n";

static const char apt_cleanup[] =
    "set -- -o APT::Sandbox::User=root -o \"Acquire::http::Proxy=$http_proxy\" "
    "-o \"Acquire::https::Proxy=$https_proxy\" -o quiet=1\n"
    "apt-get \"$@\" clean && apt-get \"$@\" update\n";

static const char apt_list[] =
    "exec dpkg-query -W -f '${db:Status-Status}\\t${Package}\\n'\n";

const char *
sbx_installmgr_script(int mgr, enum sbx_installmgr_script which)
{
	static const char *const s[SBX_INSTALL_NMGR][3] = {
		[SBX_INSTALL_APT] = { apt_script, apt_cleanup, apt_list },
		[SBX_INSTALL_NPM] = { npm_script, npm_cleanup, npm_list },
		[SBX_INSTALL_PIP] = { pip_script, pip_cleanup, pip_list },
	};

	if (mgr < 0 || mgr >= SBX_INSTALL_NMGR || which > SBX_INSTALLMGR_LIST)
		return NULL;
	return s[mgr][which];
}

int
sbx_installmgr_env(int mgr, const struct sbx_install_reg *reg,
    struct sbx_strv *env)
{
	int rc = 0;

	if (mgr == SBX_INSTALL_NPM) {
		rc |= sbx_strv_pushf(env, "npm_config_registry=%s", reg->url);
		rc |= sbx_strv_push(env, "npm_config_update_notifier=false");
	} else if (mgr == SBX_INSTALL_PIP) {
		rc |= sbx_strv_pushf(env, "PIP_INDEX_URL=%s", reg->url);
		/* pip ignores an http:// index unless told to trust it;
		 * the proxy policy has already judged the host. */
		if (reg->plain_http)
			rc |= sbx_strv_pushf(env, "PIP_TRUSTED_HOST=%s",
			    reg->host[0]);
	}
	return rc ? -1 : 0;
}

static void
names_apt(const char *p, size_t n, json_t *out)
{
	const char *end = p + n, *nl, *t;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		if ((size_t)(nl - p) > 10 &&
		    memcmp(p, "installed\t", 10) == 0) {
			t = p + 10;
			json_array_append_new(out,
			    json_stringn(t, (size_t)(nl - t)));
		}
	}
}

/* Names from `npm ls --json` (dependencies' keys) or `pip list
 * --format=json` ([{name, version}]); dpkg-query's lines for apt. */
json_t *
sbx_installmgr_names(int mgr, const char *p, size_t n)
{
	json_t	   *j, *out, *v;
	const char *k;
	size_t	    i;

	if (p == NULL || (out = json_array()) == NULL)
		return NULL;
	if (mgr == SBX_INSTALL_APT) {
		/* dpkg-query: "installed<TAB>name" lines, not JSON. */
		names_apt(p, n, out);
		return out;
	}
	/* stdout comes first; the JSON document is its start. */
	if ((j = json_loadb(p, n, JSON_DISABLE_EOF_CHECK, NULL)) == NULL) {
		json_decref(out);
		return NULL;
	}
	if (mgr == SBX_INSTALL_NPM)
		json_object_foreach (json_object_get(j, "dependencies"), k, v)
			json_array_append_new(out, json_string(k));
	else
		json_array_foreach (j, i, v)
			if (json_is_string(json_object_get(v, "name")))
				json_array_append(out,
				    json_object_get(v, "name"));
	json_decref(j);
	return out;
}

/*
 * apt: the registries are the hosts of the copy's own sources
 * (install.registries.apt, already in reg, overrides), read beneath the
 * state root without following a symlink.
 */
int
sbx_installmgr_apt_registry(int rootfd, const char *agent,
    struct sbx_install_reg *reg, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	struct dirent	*de;
	DIR		*d;
	char		 rel[PATH_MAX], envrel[SBX_LAYOUT_PATH_MAX];
	size_t		 n;
	int		 fd, dfd, deb822;

	if (reg->nhosts > 0)
		return 0;
	SBX_LPATH(envrel, SBX_L_ENV_ROOTFS, agent);
	snprintf(rel, sizeof(rel), "%s/etc/apt", envrel);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 &e2)) >= 0) {
		if (sbx_fs_read_file_at(fd, "sources.list", 1 << 20, &b, &e2) ==
			0 &&
		    b.p != NULL)
			(void)sbx_install_apt_sources(b.p, 0, reg);
		sbx_buf_release(&b);
		if ((dfd = openat(fd, "sources.list.d",
			 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) >=
			0 &&
		    (d = fdopendir(dfd)) != NULL) {
			while ((de = readdir(d)) != NULL) {
				n = strlen(de->d_name);
				deb822 = n > 8 &&
				    strcmp(de->d_name + n - 8, ".sources") == 0;
				if (!deb822 &&
				    !(n > 5 &&
					strcmp(de->d_name + n - 5, ".list") ==
					    0))
					continue;
				if (sbx_fs_read_file_at(dirfd(d), de->d_name,
					1 << 20, &b, &e2) == 0 &&
				    b.p != NULL)
					(void)sbx_install_apt_sources(b.p,
					    deb822, reg);
				sbx_buf_release(&b);
			}
			closedir(d);
		} else if (dfd >= 0)
			close(dfd);
		close(fd);
	}
	if (reg->nhosts == 0) {
		sbx_error_set(e, SBX_K_REJECTED, "registry", "no_apt_sources",
		    "the root file system of %s names no http(s) apt source "
		    "(/etc/apt/sources.list, sources.list.d)",
		    agent);
		sbx_error_hint(e,
		    "add one to the image, or set "
		    "install.registries.apt in config/sandbox.json");
		return -1;
	}
	return 0;
}

int
sbx_installmgr_registries(int rootfd, const char *agent, int mgr,
    struct sbx_install_reg *reg, struct sbx_error *e)
{
	json_t	*cfg = NULL;
	int	 rc;

	/* No state root yet: the defaults (apt: no copy, no sources). */
	if (rootfd >= 0 && sbx_settings_global(rootfd, &cfg, e) == -1)
		return -1;
	rc = sbx_install_registry(cfg, mgr, reg, e);
	json_decref(cfg);
	if (rc == 0 && mgr == SBX_INSTALL_APT)
		rc = sbx_installmgr_apt_registry(rootfd, agent, reg, e);
	return rc;
}

int
sbx_installmgr_allow(const struct sbx_install_reg *reg,
    struct sbx_netpolicy *pol, struct sbx_error *e)
{
	int	 i;

	for (i = 0; i < reg->nhosts; i++)
		if (sbx_np_allow(pol, reg->host[i], e) == -1)
			return -1;
	return 0;
}

/* One refused registry host: what refused it, and the address. */
struct refusal {
	int		 i;		/* index in reg */
	const char	*why;		/* SBX_NP_*, or "resolve_failed" */
	char		 addr[64];	/* the refused address, or "" */
};

/* " A B C" of the refusals whose reason matches (want; NULL: address
 * refusals other than metadata), hosts or ports. */
static void
join_hosts(struct sbx_buf *b, const struct sbx_install_reg *reg,
    const struct refusal *r, int n, const char *want, int ports)
{
	int	 k, j, dup;

	for (k = 0; k < n; k++) {
		if (want != NULL ? strcmp(r[k].why, want) != 0 :
				   !sbx_np_is_addr_reason(r[k].why) ||
			    strcmp(r[k].why, SBX_NP_METADATA) == 0)
			continue;
		/* one word per host (or port), in the order of reg */
		for (dup = 0, j = 0; j < k; j++)
			if (strcmp(r[j].why, r[k].why) == 0 &&
			    (ports ? reg->port[r[j].i] == reg->port[r[k].i] :
				     strcmp(reg->host[r[j].i],
					 reg->host[r[k].i]) == 0))
				dup = 1;
		if (dup)
			continue;
		if (ports)
			(void)sbx_buf_printf(b, " %u", reg->port[r[k].i]);
		else
			(void)sbx_buf_printf(b, " %s", reg->host[r[k].i]);
	}
}

int
sbx_installmgr_check_registries(int rootfd, const char *agent, int mgr,
    const struct sbx_install_reg *reg, struct sbx_error *e)
{
	struct sbx_proxy_config	      pcfg;
	struct sbx_netpolicy	      pol;
	struct sockaddr_storage	      ss[16];
	socklen_t		      lens[16];
	const struct sbx_np_override *ov;
	struct refusal		      r[2 * SBX_INSTALL_MAX_HOSTS];
	struct sbx_error	      e2;
	struct sbx_buf		      msg = SBX_BUF_INIT, hint = SBX_BUF_INIT;
	struct sbx_buf		      w = SBX_BUF_INIT;
	json_t			     *cfg = NULL;
	const char		     *why, *mname;
	char			      rel[128];
	int			      i, k, n, bad, nr = 0, nresolve = 0;
	int			      have_ports;

	mname = sbx_install_manager_name(mgr);
	if (sbx_proxy_config_load(rootfd, &pcfg, e) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, agent);
	if (sbx_settings_agent(rootfd, agent, &cfg, e) == -1)
		goto fail;
	i = sbx_proxy_policy(&pcfg, cfg, rel, &pol, e);
	have_ports = json_object_get(cfg, "allowed_ports") != NULL;
	json_decref(cfg);
	if (i == -1)
		goto fail;
	if (sbx_installmgr_allow(reg, &pol, e) == -1) {
		sbx_np_free(&pol);
		goto fail;
	}
	/*
	 * Every host is judged before the refusal is said, so that one
	 * attempt names them all (apt's sources are often several mirrors
	 * behind one private range): a user fixes them in one go, not one
	 * failed install at a time.
	 */
	for (i = 0; i < reg->nhosts; i++) {
		r[nr].i = i;
		r[nr].addr[0] = '\0';
		if ((why = sbx_np_decide(&pol, reg->host[i], reg->port[i])) !=
		    NULL) {
			r[nr++].why = why;
			/* A port is not the only thing that can be wrong with
			 * a mirror: its addresses are judged too.  (These are
			 * the configuration's names, not the sandbox's, so
			 * resolving a refused one tells nobody anything.) */
			if (strcmp(why, SBX_NP_PORT) != 0)
				continue;
			r[nr].i = i;
			r[nr].addr[0] = '\0';
		}
		if ((ov = sbx_np_override(&pol, reg->host[i])) != NULL) {
			memcpy(&ss[0], &ov->addr, sizeof(ss[0]));
			n = 1;
		} else if ((n = sbx_resolver_blocking(&pcfg, reg->host[i], ss,
				lens, 16, &e2)) <= 0) {
			if (nr > 0 && r[nr - 1].i == i)
				continue; /* refused by its port already */
			r[nr++].why = "resolve_failed";
			nresolve++;
			continue;
		}
		if ((why = sbx_np_addrs_check(&pol, reg->host[i], ss, n,
			 &bad)) != NULL) {
			sbx_np_addr_text(
			    (const struct sockaddr *)(const void *)&ss[bad],
			    r[nr].addr, sizeof(r[nr].addr));
			r[nr++].why = why;
		}
	}
	sbx_np_free(&pol);
	sbx_proxy_config_release(&pcfg);
	if (nr == 0)
		return 0;

	/* The message: each refused host and why. */
	for (k = 0, n = 0; k < nr; k++)
		n += k == 0 || r[k - 1].i != r[k].i;
	(void)sbx_buf_printf(&msg,
	    n == 1 ? "the proxy refuses the registry" :
		     "the proxy refuses %d registries:",
	    n);
	for (k = 0; k < nr; k++) {
		i = r[k].i;
		if (k > 0 && r[k - 1].i == i)
			(void)sbx_buf_printf(&msg, "; ");
		else
			(void)sbx_buf_printf(&msg, "%s %s:%u (",
			    k > 0 ? ")," : "", reg->host[i], reg->port[i]);
		if (strcmp(r[k].why, "resolve_failed") == 0)
			(void)sbx_buf_printf(&msg, "it has no address");
		else if (r[k].addr[0] != '\0')
			(void)sbx_buf_printf(&msg, "its address %s is %s",
			    r[k].addr, r[k].why);
		else
			(void)sbx_buf_printf(&msg, "%s", r[k].why);
	}
	(void)sbx_buf_printf(&msg, ")");
	/* The repair: the exact commands, every host of a kind at once. */
	join_hosts(&w, reg, r, nr, NULL, 0);
	if (w.len > 0)
		(void)sbx_buf_printf(&hint,
		    "%ssbx config add "
		    "allow_private_domains%s --agent %s",
		    hint.len ? "; " : "", w.p, agent);
	sbx_buf_reset(&w);
	join_hosts(&w, reg, r, nr, SBX_NP_PORT, 1);
	/* A list of ports replaces the default 80 and 443: an agent
	 * without one keeps them by naming them. */
	if (w.len > 0)
		(void)sbx_buf_printf(&hint,
		    "%ssbx config add allowed_ports%s%s "
		    "--agent %s",
		    hint.len ? "; " : "", have_ports ? "" : " 80 443", w.p,
		    agent);
	for (k = 0; k < nr; k++)
		if (strcmp(r[k].why, SBX_NP_METADATA) == 0)
			(void)sbx_buf_printf(&hint,
			    "%sa metadata address "
			    "opens only to an allowed_cidrs entry that is "
			    "exactly it: sbx config add allowed_cidrs %s --agent "
			    "%s",
			    hint.len ? "; " : "", r[k].addr, agent);
	sbx_buf_reset(&w);
	join_hosts(&w, reg, r, nr, SBX_NP_DENIED, 0);
	if (w.len > 0)
		(void)sbx_buf_printf(&hint,
		    "%sremove the entries that match"
		    "%s from the agent's denied_domains",
		    hint.len ? "; " : "", w.p);
	if (nresolve > 0)
		(void)sbx_buf_printf(&hint,
		    "%scheck the name%s, or set "
		    "install.registries.%s in config/sandbox.json",
		    hint.len ? "; " : "", nresolve > 1 ? "s" : "", mname);
	for (k = 0; k < nr; k++)
		if (strcmp(r[k].why, SBX_NP_PORT) != 0 &&
		    strcmp(r[k].why, SBX_NP_DENIED) != 0 &&
		    strcmp(r[k].why, "resolve_failed") != 0 &&
		    !sbx_np_is_addr_reason(r[k].why))
			(void)sbx_buf_printf(&hint, "%s%s: %s",
			    hint.len ? "; " : "", reg->host[r[k].i], r[k].why);
	sbx_error_set(e, nresolve == nr ? SBX_K_UNAVAILABLE : SBX_K_REJECTED,
	    "registry", r[0].why, "%s", msg.p != NULL ? msg.p : "");
	if (hint.p != NULL)
		sbx_error_hint(e, "%s", hint.p);
	sbx_buf_release(&msg);
	sbx_buf_release(&hint);
	sbx_buf_release(&w);
	return -1;
fail:
	sbx_proxy_config_release(&pcfg);
	return -1;
}
