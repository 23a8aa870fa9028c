/*
 * sbx-install: validated package installs into an agent's sandbox, with a
 * lock, one cleanup and retry on a transient failure, failure classes and
 * a manifest.  See sbx-install(1).
 *
 * This file parses, opens the agent and does list and reconcile; the
 * install itself (registries, lock, the sandboxed runs, retry, manifest)
 * is cmd/install-run.c; the managers' scripts and the registry checks are
 * lib/service/installmgr.c, the names' grammars, failure classes and the
 * manifest lib/exec/install.c.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "fsutil.h"
#include "imageref.h"
#include "install-int.h"
#include "install.h"
#include "installmgr.h"
#include "layout.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "sandbox.h"

static const char usage_text[] =
"usage: sbx install [--agent A] [--home DIR] --manager apt|pip|npm [--json]\n"
"                   [--timeout SECONDS] [--allow-url] [-q] [-v] PKG...\n"
"       sbx install list [--agent A] [--home DIR] [--json] [-q]\n"
"       sbx install reconcile [--agent A] [--home DIR] [--json] [-q] [-v]\n";

static const char help_text[] =
"\n"
"Install packages into the agent's sandbox, as the agent: pip into\n"
"~/.venv, npm into ~/.sbx/node_workspace (both first on PATH in later\n"
"runs); apt only into the agent's own root filesystem copy (provision\n"
"--own-rootfs).  Names are checked before anything runs; the registries\n"
"are allowed through the proxy for this run alone; a transient failure\n"
"gets one cleanup and one retry.  What was installed is kept in\n"
"agents/A/installed-packages.json.\n"
"\n"
"  list                 print the manifest\n"
"  reconcile            rebuild the manifest from what is installed\n"
"\n";

enum { S_MAIN = 1, S_LIST = 2, S_RECONCILE = 4, S_ALL = 7 };
enum { OPT_HOME = 256, OPT_VERSION, OPT_TIMEOUT, OPT_ALLOW_URL };

static const struct sbx_opts_sub subs[] = {
	{ "list", S_LIST, NULL }, { "reconcile", S_RECONCILE, NULL },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent name (default: $SBX_AGENT or \"default\")", S_ALL, 0 },
	{ 'm', "manager", 'm', SBX_OPT_REQ, "M", "apt|pip|npm",
	    "apt, pip or npm", S_MAIN, 0 },
	{ OPT_TIMEOUT, "timeout", 0, SBX_OPT_REQ, "S", NULL,
	    "give up after S seconds (the lock wait included)", S_MAIN, 0 },
	{ OPT_ALLOW_URL, "allow-url", 0, SBX_OPT_NONE, NULL, NULL,
	    "accept URLs, VCS references and local paths", S_MAIN, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, S_ALL),
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no progress or warnings on stderr", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "show the bwrap command lines on stderr", S_MAIN | S_RECONCILE,
	    0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_MAIN),
};

static const struct sbx_opts table = { PROG, "sbx install", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), S_MAIN, NULL, 21, 0 };

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

struct install_opts O;
char		    tool[32] = "install";
struct sbx_root	    root = SBX_ROOT_INIT;
json_t		   *warnings;

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL, .tool = tool,
	.warnings = &warnings };

static void
parse_args(int argc, char *argv[])
{
	struct sbx_error	 e;
	unsigned		 bit = S_MAIN;
	int			 ch;

	/* Every option of the table; the subcommand's refuses the others
	 * once it is known. */
	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	/* Decided before getopt, skipping option arguments: a value that
	 * reads "--json" (a description, a setting) is not the flag. */
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	opterr = 0;
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a': O.agent = optarg; break;
		case 'm': O.manager = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		case OPT_TIMEOUT: O.timeout = optarg; break;
		case OPT_ALLOW_URL: O.allow_url = 1; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	O.pkgs = argv + optind;
	O.npkgs = argc - optind;
	/* A subcommand only without --manager: `sbx install --manager npm
	 * list` installs the npm package called list. */
	if (O.manager == NULL && O.npkgs > 0 && (strcmp(O.pkgs[0], "list") ==
	    0 || strcmp(O.pkgs[0], "reconcile") == 0)) {
		O.sub = O.pkgs[0];
		bit = strcmp(O.sub, "list") == 0 ? S_LIST : S_RECONCILE;
		snprintf(tool, sizeof(tool), "install.%s", O.sub);
		O.pkgs++;
		O.npkgs--;
		if (O.npkgs > 0) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "args",
			    "unexpected_argument", "%s takes no argument",
			    O.sub);
			sbx_cmd_usage_exit(&e);
		}
	}
	/* An option of another subcommand (--timeout with list) is a usage
	 * error, named. */
	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		sbx_cmd_usage_exit(&e);
	if (O.sub == NULL && O.manager == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "manager",
		    "missing_argument", "--manager apt|pip|npm is needed");
		sbx_cmd_usage_exit(&e);
	}
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") != NULL && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
}

/* The root and the agent: provisioned, not revoked.  Nothing is created
 * here (sbx provision does that). */
void
open_agent(void)
{
	struct sbx_error	 e;

	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "home", "not_provisioned",
		    "no state root at %s", root.path != NULL ? root.path :
		    "(unresolved)");
		sbx_error_hint(&e, "create it: sbx provision --agent %s",
		    O.agent);
		sbx_cmd_die(&e);
	}
	if (sbx_provision_require(root.fd, O.agent, &e) == -1)
		sbx_cmd_die(&e);
}

/* The name of an install lock in agents/A (lib/state/layout.c). */
const char *
lock_name(enum sbx_layout_id id)
{
	static char	 rel[SBX_LAYOUT_PATH_MAX];

	SBX_LPATH(rel, id, O.agent);
	return sbx_layout_leaf(rel);
}

/* agents/A/, created 0700 as provision makes it. */
int
agent_dir(struct sbx_error *e)
{
	char	 rel[128];

	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, O.agent);
	return sbx_fs_mkdirs_at(root.fd, rel, 0700, e);
}

static int
do_list(void)
{
	struct sbx_error e;
	json_t		*m, *v;
	const char	*k;
	size_t		 i;
	int		 afd;
	char		 rel[128];

	open_agent();
	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, O.agent);
	if ((afd = sbx_fs_open_beneath(root.fd, rel, O_RDONLY | O_DIRECTORY,
		 &e)) == -1)
		m = sbx_install_manifest_normalize(NULL);
	else if ((m = sbx_install_manifest_read(afd, &e)) == NULL) {
		sbx_install_manifest_named(&e, O.agent);
		sbx_cmd_die(&e);
	}
	if (afd >= 0)
		close(afd);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool,
		    json_pack("{s:s,s:o}", "agent", O.agent, "packages", m),
		    NULL));
		return 0;
	}
	json_object_foreach (m, k, v)
		for (i = 0; i < json_array_size(v); i++)
			printf("%s\t%s\n", k,
			    json_string_value(json_array_get(v, i)));
	json_decref(m);
	return 0;
}

static int
do_reconcile(void)
{
	char			 digest[SBX_DIGEST_HEX + 1];
	int			 env_own = 0;
	struct sbx_error	 e;
	struct run		 rr;
	json_t			*m, *names;
	int			 afd, lock, mgr;

	open_agent();
	if ((afd = agent_dir(&e)) == -1 ||
	    (lock = sbx_install_lock(afd, lock_name(SBX_L_AGENT_INSTALL_LOCK),
		 LOCK_WAIT_S, &e)) == -1)
		sbx_cmd_die(&e);
	if ((m = sbx_install_manifest_read(afd, &e)) == NULL) {
		/*
		 * Damaged: rebuilt from what is installed, which is what
		 * reconcile is for; the old file is kept aside for a person
		 * to look at.  Any other failure (permissions, I/O) is not
		 * damage and is not papered over.
		 */
		if (e.reason == NULL ||
		    strcmp(e.reason, "manifest_invalid") != 0)
			sbx_cmd_die(&e);
		if (renameat(afd, SBX_INSTALL_MANIFEST, afd,
			SBX_INSTALL_MANIFEST ".damaged") == -1) {
			sbx_error_sys(&e, "write",
			    "cannot move the damaged "
			    "%s aside",
			    SBX_INSTALL_MANIFEST);
			sbx_cmd_die(&e);
		}
		sbx_cmd_warnf(warnings,
		    "agents/%s/%s was damaged: rebuilt "
		    "from what is installed (the old file is %s.damaged)",
		    O.agent, SBX_INSTALL_MANIFEST, SBX_INSTALL_MANIFEST);
		m = sbx_install_manifest_normalize(NULL);
	}
	for (mgr = 0; mgr < SBX_INSTALL_NMGR; mgr++) {
		if (mgr == SBX_INSTALL_APT &&
		    (sbx_imageref_agent_env(root.fd, O.agent, digest, &env_own,
			 &e) == -1 ||
			!env_own)) {
			/* apt: only an agent's own rootfs copy holds what
			 * sbx installed; without one there is nothing. */
			json_object_set_new(m, "apt", json_array());
			continue;
		}
		run_script(sbx_installmgr_script(mgr, SBX_INSTALLMGR_LIST),
		    NULL, 0, NULL, NULL, 0, 0, &rr);
		names = rr.ok && rr.exit_code == 0 ?
		    sbx_installmgr_names(mgr, rr.out.p, rr.out.len) :
		    NULL;
		if (names == NULL)
			sbx_cmd_warnf(warnings, "%s: could not list what is "
			    "installed; its entries are kept",
			    sbx_install_manager_name(mgr));
		else {
			sbx_install_manifest_set(m, mgr, names);
			json_decref(names);
		}
		sbx_buf_release(&rr.out);
	}
	if (sbx_install_manifest_write(afd, m, &e) == -1)
		sbx_cmd_die(&e);
	close(lock);
	close(afd);
	if (O.json)
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:s,s:o}",
		    "agent", O.agent, "packages", m), json_incref(warnings)));
	else {
		sbx_cmd_print_warnings(PROG, warnings, O.quiet);
		if (!O.quiet)
			printf("reconciled: apt %zu, npm %zu, pip %zu\n",
			    json_array_size(json_object_get(m, "apt")),
			    json_array_size(json_object_get(m, "npm")),
			    json_array_size(json_object_get(m, "pip")));
		json_decref(m);
	}
	return 0;
}

int
main(int argc, char *argv[])
{
	struct sbx_error	 e;
	int			 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	warnings = json_array();
	parse_args(argc, argv);
	if (sbx_sandbox_refuse_nested(&e) == -1)
		sbx_cmd_die(&e);
	if (O.sub != NULL && strcmp(O.sub, "list") == 0)
		return do_list();
	if (O.sub != NULL)
		return do_reconcile();
	return do_install();
}
