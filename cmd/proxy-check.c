/*
 * proxy-check.c: sbx proxy check HOST[:PORT]: the policy's decision for
 * an agent, as the proxy would take it (and, with --resolve, its address
 * checks), without connecting.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "cmd.h"
#include "install.h"
#include "installmgr.h"
#include "layout.h"
#include "names.h"
#include "netpolicy.h"
#include "proxy-int.h"
#include "proxy.h"
#include "settings.h"

int
proxy_cmd_check(struct sbx_root *root, const char *target)
{
	struct sbx_netpolicy	 pol;
	struct sbx_proxy_config	 pcfg;
	struct sbx_error	 e;
	struct sbx_buf		 lines = SBX_BUF_INIT;
	json_t			*cfg = NULL, *res, *v, *addrs = NULL;
	char			 rel[128], norm[SBX_NP_HOST_MAX + 1];
	char			 text[4096];
	char			 refused[INET6_ADDRSTRLEN] = "";
	const char		*colon, *why, *hostp = target, *hint;
	size_t			 hostlen, i;
	unsigned		 port = 443;
	int			 status;

	memset(&e, 0, sizeof(e));
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	/* HOST[:PORT]; a bracketed IPv6 literal keeps its colons. */
	colon = strrchr(target, ':');
	if (target[0] == '[') {
		const char *rb = strchr(target, ']');

		colon = rb != NULL && rb[1] == ':' ? rb + 1 : NULL;
	} else if (colon != NULL && strchr(target, ':') != colon)
		colon = NULL;	/* bare IPv6: all host */
	hostlen = colon != NULL ? (size_t)(colon - target) : strlen(target);
	if (colon != NULL && sbx_np_port(colon + 1, strlen(colon + 1), &port)
	    == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "host", "invalid_port",
		    "`%s`: the port must be a number from 1 to 65535", target);
		sbx_cmd_die(&e);
	}
	/* The proxy's settings too: the global policy settings apply to
	 * every agent, and --resolve uses its resolver. */
	if (sbx_proxy_config_load(root->fd, &pcfg, &e) == -1)
		sbx_cmd_die(&e);
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, O.agent);
	if (root->fd >= 0 &&
	    sbx_settings_agent(root->fd, O.agent, &cfg, &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_proxy_policy(&pcfg, cfg, rel, &pol, &e) == -1)
		sbx_cmd_die(&e);
	json_decref(cfg);
	json_array_foreach (O.allow, i, v)
		if (sbx_np_allow(&pol, json_string_value(v), &e) == -1)
			sbx_cmd_die(&e);
	/* --install: the allowlist an install run of that manager has
	 * (its registries, for that run alone), so that the answer is the
	 * one sbx install gets before it runs anything. */
	if (O.install != NULL) {
		struct sbx_install_reg reg;
		int mgr;

		/* checked by the option parser */
		if ((mgr = sbx_install_manager(O.install, &e)) == -1)
			sbx_cmd_die(&e);
		if (sbx_installmgr_registries(root->fd, O.agent, mgr, &reg,
		    &e) == -1 || sbx_installmgr_allow(&reg, &pol, &e) == -1)
			sbx_cmd_die(&e);
	}
	why = sbx_np_host(hostp, hostlen, norm);
	if (why != NULL) {
		status = strcmp(why, SBX_NP_IP_LITERAL) == 0 ? 403 : 400;
		snprintf(norm, sizeof(norm), "%.*s", (int)(hostlen < 200 ?
		    hostlen : 200), hostp);
	} else if ((why = sbx_np_decide(&pol, norm, port)) != NULL)
		status = 403;
	else
		status = 200;
	/* As the proxy: a name the policy refuses is never resolved. */
	if (why == NULL && O.resolve) {
		addrs = sbx_proxy_check_addresses(&pcfg, &pol, norm, &why,
		    &status, refused, sizeof(refused), &lines, &e);
		/* What the proxy answers: 502 resolve_failed. */
		if (e.kind != NULL && !O.quiet && !O.json)
			fprintf(stderr, "%s: %s\n", PROG, e.message);
	}
	sbx_np_free(&pol);
	sbx_proxy_config_release(&pcfg);
	res = json_pack("{s:s,s:s,s:i,s:s,s:i}", "agent", O.agent, "host",
	    norm, "port", (int)port, "verdict", why == NULL ? "allow" : "deny",
	    "status", status);
	if (O.install != NULL)
		json_object_set_new(res, "install", json_string(O.install));
	if (why != NULL)
		json_object_set_new(res, "reason", json_string(why));
	if (addrs != NULL)
		json_object_set_new(res, "addresses", addrs);
	hint = refused[0] != '\0' ? sbx_np_addr_hint(why) : NULL;
	if (refused[0] != '\0')
		json_object_set_new(res, "address", json_string(refused));
	if (hint != NULL)
		json_object_set_new(res, "hint", json_string(hint));
	if (why == NULL)
		snprintf(text, sizeof(text), "allow %s:%u", norm, port);
	else
		snprintf(text, sizeof(text), "deny %s:%u (%s%s%s%s%s, HTTP %d)",
		    norm, port, why, refused[0] != '\0' ? " " : "", refused,
		    hint != NULL ? "; " : "", hint != NULL ? hint : "",
		    status);
	if (status == 400 && !O.json) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "host", why, "`%s` is "
		    "not a valid host name (%s)", norm, why);
		json_decref(res);
		sbx_cmd_die(&e);
	}
	/* The verdict, then one line per address. */
	if (lines.len > 0)
		snprintf(text + strlen(text), sizeof(text) - strlen(text),
		    "%s", lines.p);
	sbx_buf_release(&lines);
	sbx_cmd_done(res, text);
	return why == NULL ? 0 : status == 400 ? SBX_EX_DATAERR :
	    SBX_EX_NEGATIVE;
}
