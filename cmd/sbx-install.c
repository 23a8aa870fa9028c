/*
 * sbx-install: validated package installs into an agent's sandbox, with a
 * lock, one cleanup and retry on a transient failure, failure classes and
 * a manifest.  See sbx-install(1).
 *
 * Parse, validate (lib/exec/install.c), check the registries against the
 * proxy's policy, then run the manager inside the agent's sandbox through
 * the exec engine (lib/exec/exec.c), which this short-lived program links
 * directly (DESIGN.md §2).  The manager runs as the agent, never as the
 * caller: the same sandbox as sbx exec, with the registries added to the
 * proxy allowlist of that run alone.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "exec.h"
#include "fsutil.h"
#include "imageref.h"
#include "install.h"
#include "layout.h"
#include "names.h"
#include "netpolicy.h"
#include "opts.h"
#include "provision.h"
#include "proxy.h"
#include "root.h"
#include "runlimits.h"
#include "sandbox.h"
#include "time.h"
#include "utf8.h"

#define PROG	"sbx-install"

/* How long an install waits for another install of the same agent (or
 * rootfs) without --timeout. */
#define LOCK_WAIT_S	600
/* Exit statuses of the scripts below that mean "the manager is missing". */
#define RC_NO_MANAGER	90
#define RC_NO_VENV	91
#define RC_FOREIGN	92 /* apt: a package has files of other owners */

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

/* The one option table (lib/opts.h): getopt_long, --help and
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
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
	    "~/.local/share/sbx)", S_ALL, 0 },
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "print one JSON envelope (also SBX_JSON=1)", S_ALL, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no progress or warnings on stderr", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "show the bwrap command lines on stderr", S_MAIN | S_RECONCILE,
	    0 },
	{ 'h', "help", 'h', SBX_OPT_NONE, NULL, NULL, "this help", S_ALL, 0 },
	{ OPT_VERSION, "version", 0, SBX_OPT_NONE, NULL, NULL,
	    "print the version", S_MAIN, 0 },
};

static const struct sbx_opts table = { PROG, "sbx install", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), S_MAIN, NULL, 21 };

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

static struct {
	const char	*agent, *home, *manager, *timeout;
	int		 allow_url, json, quiet, verbose;
	char	       **pkgs;
	int		 npkgs;
	const char	*sub;		/* list, reconcile, or NULL */
	double		 timeout_s;
	int		 mgr;
} O;

static char		 tool[32] = "install";
/* apt: runs see the agent's own rootfs copy read-write, as uid 0. */
static int		 rootfs_rw;
static struct sbx_root	 root = SBX_ROOT_INIT;
static json_t		*warnings;

static void
emit(json_t *env)
{
	sbx_cmd_emit(env);
}

static void __attribute__((noreturn))
fail_extra(const struct sbx_error *e, json_t *extra)
{
	if (!O.json)
		sbx_cmd_print_warnings(PROG, warnings, O.quiet);
	if (O.json && json_array_size(warnings) > 0) {
		if (extra == NULL)
			extra = json_object();
		json_object_set(extra, "warnings", warnings);
	}
	sbx_cmd_fail(PROG, tool, O.json, e, extra, emit, -1);
}

static void __attribute__((noreturn))
fail(const struct sbx_error *e)
{
	fail_extra(e, NULL);
}

static void __attribute__((noreturn))
usage(const struct sbx_error *e)
{
	sbx_cmd_usage(PROG, tool, O.json, e, usage_text, emit);
	exit(SBX_EX_USAGE);
}

static void
warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
warn(const char *fmt, ...)
{
	char	 m[512];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(m, sizeof(m), fmt, ap);
	va_end(ap);
	json_array_append_new(warnings, json_string(m));
}

static void
parse_args(int argc, char *argv[])
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	unsigned		 bit = S_MAIN;
	int			 ch;

	/* Every option of the table; the subcommand's refuses the others
	 * once it is known. */
	if (sbx_opts_getopt(&table, ~0u, "", &g) == -1)
		exit(SBX_EX_SOFTWARE);
	/* Decided before getopt, skipping option arguments: a value that
	 * reads "--json" (a description, a setting) is not the flag. */
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.optstring, g.longopts, NULL))
	    != -1) {
		ch = sbx_opts_id(&g, ch);
		if (ch != '?' && ch != ':')
			sbx_opts_seen(&seen, ch);
		switch (ch) {
		case 'a': O.agent = optarg; break;
		case 'm': O.manager = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		case OPT_TIMEOUT: O.timeout = optarg; break;
		case OPT_ALLOW_URL: O.allow_url = 1; break;
		case 'j': O.json = 1; break;
		case 'q': O.quiet = 1; break;
		case 'v': O.verbose = 1; break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(help_text, stdout);
			if (sbx_opts_help(&table, S_ALL, &b) == 0 && b.p)
				fputs(b.p, stdout);
			sbx_buf_release(&b);
			exit(0);
		case OPT_VERSION:
			printf("%s %s\n", PROG, SBX_VERSION);
			exit(0);
		default:
			sbx_cli_getopt_error(argc, argv, g.optstring,
			    g.longopts, &e);
			usage(&e);
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
			usage(&e);
		}
	}
	/* An option of another subcommand (--timeout with list) is a usage
	 * error, named. */
	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		usage(&e);
	if (O.sub == NULL && O.manager == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "manager",
		    "missing_argument", "--manager apt|pip|npm is needed");
		usage(&e);
	}
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") != NULL && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
}

/* The root and the agent: provisioned, not revoked.  Nothing is created
 * here (sbx provision does that). */
static void
open_agent(void)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 rel[128];

	if (sbx_agent_valid(O.agent, "agent", &e) == -1)
		fail(&e);
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "home", "not_provisioned",
		    "no state root at %s", root.path != NULL ? root.path :
		    "(unresolved)");
		sbx_error_hint(&e, "create it: sbx provision --agent %s",
		    O.agent);
		fail(&e);
	}
	if (sbx_provision_revoked(root.fd, O.agent, &e) != 0) {
		sbx_provision_revoked_error(O.agent, &e);
		fail(&e);
	}
	snprintf(rel, sizeof(rel), "workspace/agents/%s", O.agent);
	if (fstatat(root.fd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "agent",
		    "agent_not_provisioned", "agent %s is not provisioned",
		    O.agent);
		sbx_error_hint(&e, "sbx provision --agent %s", O.agent);
		fail(&e);
	}
}

/* agents/A/, created 0700 as provision makes it. */
/* The name of an install lock in agents/A (lib/state/layout.c). */
static const char *
lock_name(enum sbx_layout_id id)
{
	static char	 rel[SBX_LAYOUT_PATH_MAX];

	SBX_LPATH(rel, id, O.agent);
	return sbx_layout_leaf(rel);
}

static int
agent_dir(struct sbx_error *e)
{
	char	 rel[128];

	snprintf(rel, sizeof(rel), "agents/%s", O.agent);
	return sbx_mkdirs_at(root.fd, rel, 0700, e);
}

/*
 * Before anything runs: every registry host must pass the agent's proxy
 * policy (with the registries added, as the run will have them) and, as
 * `sbx proxy check --resolve` does, its addresses too.  A refusal is
 * `rejected` with the proxy's reason and the setting that would allow it.
 */
static void
check_registries(const struct sbx_install_reg *reg)
{
	struct sbx_proxy_config		 pcfg;
	struct sbx_netpolicy		 pol;
	struct sockaddr_storage		 ss[16];
	socklen_t			 lens[16];
	const struct sbx_np_override	*ov;
	struct sbx_error		 e;
	json_t				*cfg = NULL;
	const char			*why, *hint;
	char				 rel[128], addr[64];
	int				 i, n, bad;

	memset(&e, 0, sizeof(e));
	if (sbx_proxy_config_load(root.fd, &pcfg, &e) == -1)
		fail(&e);
	snprintf(rel, sizeof(rel), "config/agents/%s.json", O.agent);
	if (sbx_config_load(root.fd, rel, &cfg, &e) == -1)
		fail(&e);
	if (sbx_proxy_policy(&pcfg, cfg, rel, &pol, &e) == -1)
		fail(&e);
	json_decref(cfg);
	for (i = 0; i < reg->nhosts; i++)
		if (sbx_np_allow(&pol, reg->host[i], &e) == -1)
			fail(&e);
	for (i = 0; i < reg->nhosts; i++) {
		if ((why = sbx_np_decide(&pol, reg->host[i], reg->port[i])) !=
		    NULL) {
			sbx_error_set(&e, SBX_K_REJECTED, "registry", why,
			    "the proxy policy refuses the registry %s:%u (%s)",
			    reg->host[i], reg->port[i], why);
			if (strcmp(why, SBX_NP_PORT) == 0)
				sbx_error_hint(&e, "add %u to the agent's "
				    "allowed_ports: sbx config add "
				    "allowed_ports %u --agent %s",
				    reg->port[i], reg->port[i], O.agent);
			else
				sbx_error_hint(&e, "remove it from the agent's "
				    "denied_domains");
			goto refused;
		}
		if ((ov = sbx_np_override(&pol, reg->host[i])) != NULL) {
			memcpy(&ss[0], &ov->addr, sizeof(ss[0]));
			n = 1;
		} else if ((n = sbx_proxy_lookup(&pcfg, reg->host[i], ss, lens,
				16, &e)) <= 0) {
			if (n == 0)
				sbx_error_set(&e, SBX_K_UNAVAILABLE, "registry",
				    "resolve_failed",
				    "the "
				    "registry %s has no address",
				    reg->host[i]);
			sbx_error_hint(&e,
			    "check the name, or set "
			    "install.registries.%s in config/sandbox.json",
			    sbx_install_manager_name(O.mgr));
			goto refused;
		}
		if ((why = sbx_np_addrs_check(&pol, reg->host[i], ss, n,
			 &bad)) != NULL) {
			sbx_np_addr_text(
			    (const struct sockaddr *)(const void *)&ss[bad],
			    addr, sizeof(addr));
			sbx_error_set(&e, SBX_K_REJECTED, "registry", why,
			    "the proxy refuses the registry %s: its address "
			    "%s is %s",
			    reg->host[i], addr, why);
			hint = sbx_np_addr_hint(why);
			sbx_error_hint(&e, "%s",
			    hint != NULL ?
				hint :
				"allow_private_domains lets a mirror on a private "
				"address through");
			goto refused;
		}
	}
	sbx_np_free(&pol);
	sbx_proxy_config_release(&pcfg);
	return;
refused:
	sbx_np_free(&pol);
	sbx_proxy_config_release(&pcfg);
	fail(&e);
}

/* What one sandboxed run gave. */
struct run {
	int		 ok;		/* it ran to its end */
	int		 exit_code;
	struct sbx_buf	 out;		/* stdout then stderr */
	struct sbx_error err;		/* !ok: why */
	char		 token[SBX_TOKEN_LEN + 1];
};

/* The proxy token never leaves in a log tail (a manager may print its
 * proxy URL, credentials and all). */
static void
scrub(struct sbx_buf *b, const char *secret)
{
	size_t	 n = strlen(secret), i;
	char	*p;

	if (n < 8 || b->p == NULL)
		return;
	while ((p = memmem(b->p, b->len, secret, n)) != NULL)
		for (i = 0; i < n; i++)
			p[i] = '*';
}

/*
 * Run a fixed script (sh -c, never built from the packages: they are its
 * arguments, $1...) in the agent's sandbox: network proxy with the
 * registries allowed when reg is given, else none.  The output is kept
 * (for the classification and the log tail) and, in transparent mode,
 * shown on stderr as it comes.
 */
static void
run_script(const char *script, char **args, int nargs,
    const struct sbx_install_reg *reg, const char *const *env, int tee,
    struct run *rr)
{
	static struct sbx_exec	 X;
	struct sbx_exec_req	 R;
	struct sbx_exec_outcome	 o;
	const json_t		*res;
	char			*argv[SBX_INSTALL_MAX_PKGS + 2], wall[32], *v;
	int			 i;

	memset(rr, 0, sizeof(*rr));
	sbx_exec_req_init(&R);
	sbx_exec_init(&X);
	R.agent = O.agent;
	R.home = root.path;
	R.shell = script;
	argv[0] = PROG;
	for (i = 0; i < nargs && i < SBX_INSTALL_MAX_PKGS; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	R.argv = argv;
	R.argc = i + 1;
	R.capture = 1;
	R.capture_tee = tee && !O.json && !O.quiet;
	R.max_output = "1M";
	R.stdin_mode = "null";
	R.verbose = O.verbose;
	R.rootfs_rw = rootfs_rw;
	R.network = reg != NULL ? SBX_NET_PROXY : SBX_NET_NONE;
	for (i = 0; reg != NULL && i < reg->nhosts; i++)
		sbx_strv_push(&R.allow, reg->host[i]);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		sbx_strv_push(&R.env, env[i]);
	if (O.timeout != NULL) {
		snprintf(wall, sizeof(wall), "%s", O.timeout);
		sbx_strv_push(&R.limit_keys, "wall_timeout");
		sbx_strv_push(&R.limit_keys, wall);
	}
	if (sbx_exec_validate(&R, &rr->err) != 0 ||
	    sbx_exec_prepare(&X, &R, &rr->err) == -1)
		goto out;
	if (X.bwrap_line != NULL)
		fprintf(stderr, "%s: %s\n", PROG, X.bwrap_line);
	snprintf(rr->token, sizeof(rr->token), "%s", X.proxy_token);
	fflush(NULL);
	if (sbx_exec_run(&X, &rr->err) == -1)
		goto out;
	if ((v = sbx_exec_violations_text(&X)) != NULL) {
		warn("%s", v);
		free(v);
	}
	sbx_exec_outcome(&X, &o);
	res = o.ok ? o.result : json_object_get(o.extra, "result");
	if (res != NULL) {
		sbx_buf_puts(&rr->out, json_string_value(json_object_get(res,
		    "stdout")) ? json_string_value(json_object_get(res,
		    "stdout")) : "");
		sbx_buf_puts(&rr->out, json_string_value(json_object_get(res,
		    "stderr")) ? json_string_value(json_object_get(res,
		    "stderr")) : "");
		rr->exit_code = (int)json_integer_value(json_object_get(res,
		    "exit_code"));
	}
	if (o.ok)
		rr->ok = 1;
	else
		rr->err = o.err;
	sbx_exec_outcome_release(&o);
out:
	/* The agent's secrets are scrubbed by the engine itself (the run's
	 * streams, tee and capture alike, and the outcome), so log_tail
	 * never holds one; the run's proxy token is not a secret of the
	 * store and is masked here. */
	scrub(&rr->out, rr->token);
	sbx_exec_release(&X);
	sbx_exec_req_release(&R);
}

/*
 * The scripts: fixed strings; the packages are "$@", after `--`, so a
 * manager never reads one as an option (validation refuses a leading
 * `-` already; this is the second wall).
 */
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
 * The user namespace maps that one uid (bwrap cannot map a range), so a
 * package with files of another owner or a set-id bit (which the seccomp
 * filter refuses anyway) could only half-install: the archives are
 * downloaded first and every one is checked before dpkg runs.
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
    "  awk -v f=\"${f##*/}\" '$2 != \"0/0\" || substr($1, 4, 1) ~ /[sS]/ ||\n"
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

/* The manager's environment: where its registry is. */
static void
manager_env(const struct sbx_install_reg *reg, struct sbx_strv *env)
{
	if (O.mgr == SBX_INSTALL_NPM) {
		sbx_strv_pushf(env, "npm_config_registry=%s", reg->url);
		sbx_strv_push(env, "npm_config_update_notifier=false");
	} else if (O.mgr == SBX_INSTALL_PIP) {
		sbx_strv_pushf(env, "PIP_INDEX_URL=%s", reg->url);
		/* pip ignores an http:// index unless told to trust it;
		 * the proxy policy has already judged the host. */
		if (reg->plain_http)
			sbx_strv_pushf(env, "PIP_TRUSTED_HOST=%s",
			    reg->host[0]);
	}
}


static json_t *
result_of(const struct run *rr, int retried, long long t0)
{
	json_t	*r, *inst;
	char	*tail, *s;
	int	 i;

	inst = json_array();
	for (i = 0; i < O.npkgs; i++)
		if ((s = sbx_install_pkg_name(O.mgr, O.pkgs[i])) != NULL) {
			json_array_append_new(inst, json_string(s));
			free(s);
		}
	tail = sbx_install_log_tail(rr->out.p, rr->out.len,
	    SBX_INSTALL_LOG_TAIL);
	r = json_pack("{s:s,s:o,s:i,s:b,s:I,s:s}", "manager",
	    sbx_install_manager_name(O.mgr), "installed", inst, "exit_code",
	    rr->exit_code, "retried", retried, "duration_ms",
	    (json_int_t)(sbx_now_ms() - t0), "log_tail", tail ? tail : "");
	free(tail);
	return r;
}

static void
update_manifest(int lockdirfd)
{
	struct sbx_error	 e;
	json_t			*m;
	int			 afd;

	if ((afd = agent_dir(&e)) == -1 ||
	    (m = sbx_install_manifest_read(afd, &e)) == NULL) {
		warn("the manifest was not updated: %s", e.message);
		if (afd >= 0)
			close(afd);
		return;
	}
	if (sbx_install_manifest_add(m, O.mgr, O.pkgs, O.npkgs) == -1 ||
	    sbx_install_manifest_write(afd, m, &e) == -1)
		warn("the manifest was not updated: %s", e.message);
	json_decref(m);
	close(afd);
	(void)lockdirfd;
}

/*
 * apt: the registries are the hosts of the copy's own sources
 * (install.registries.apt overrides), read beneath the state root
 * without following a symlink; as root, the copy is handed to the
 * sandbox uid, which is uid 0 inside.
 */
static void
apt_prepare(struct sbx_install_reg *reg)
{
	struct sbx_error e;
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct dirent	*de;
	DIR		*d;
	char		 rel[PATH_MAX];
	size_t		 n;
	uid_t		 uid;
	gid_t		 gid;
	int		 fd, dfd, deb822;

	if (geteuid() == 0) {
		snprintf(rel, sizeof(rel), "envs/%s/rootfs", O.agent);
		if ((fd = sbx_open_beneath(root.fd, rel, O_RDONLY | O_DIRECTORY,
			 &e)) == -1 ||
		    sbx_identity_get(root.fd, &uid, &gid, &e) == -1 ||
		    sbx_install_rootfs_own(fd, uid, gid, &e) == -1)
			fail(&e);
		close(fd);
	}
	if (reg->nhosts > 0)
		return;
	snprintf(rel, sizeof(rel), "envs/%s/rootfs/etc/apt", O.agent);
	if ((fd = sbx_open_beneath(root.fd, rel, O_RDONLY | O_DIRECTORY, &e)) >=
	    0) {
		if (sbx_read_file_at(fd, "sources.list", 1 << 20, &b, &e) ==
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
				if (sbx_read_file_at(dirfd(d), de->d_name,
					1 << 20, &b, &e) == 0 &&
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
		sbx_error_set(&e, SBX_K_REJECTED, "registry", "no_apt_sources",
		    "the root file system of %s names no http(s) apt source "
		    "(/etc/apt/sources.list, sources.list.d)",
		    O.agent);
		sbx_error_hint(&e,
		    "add one to the image, or set "
		    "install.registries.apt in config/sandbox.json");
		fail(&e);
	}
}

static int
do_install(void)
{
	struct sbx_install_class c;
	struct sbx_install_reg	 reg;
	struct sbx_error	 e;
	struct sbx_strv		 env = SBX_STRV_INIT;
	struct run		 rr, cr;
	json_t			*cfg = NULL, *res, *extra;
	const char		*script, *cleanup;
	long long		 t0 = sbx_now_ms();
	int			 afd, lock, retried = 0, cleanup_failed = 0;
	int			 env_own = 0;
	char			 digest[SBX_DIGEST_HEX + 1];

	if ((O.mgr = sbx_install_manager(O.manager, &e)) == -1)
		fail(&e);
	if (O.timeout != NULL && sbx_parse_seconds(O.timeout, 86400,
	    &O.timeout_s) == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number", "argument `timeout` must be a number of "
		    "seconds from 0 to 86400");
		fail(&e);
	}
	/* Every name is judged before anything is opened or run. */
	if (sbx_install_validate(O.mgr, O.pkgs, O.npkgs, O.allow_url, &e) ==
	    -1)
		fail(&e);
	open_agent();
	if (O.mgr == SBX_INSTALL_APT) {
		if (sbx_imageref_agent_env(root.fd, O.agent, digest, &env_own,
		    &e) == -1)
			fail(&e);
		if (!env_own) {
			sbx_error_set(&e, SBX_K_REJECTED, "manager",
			    "no_writable_rootfs", "apt installs only into the "
			    "agent's own root filesystem copy, and %s has "
			    "none", O.agent);
			sbx_error_hint(&e, "sbx provision --agent %s --image "
			    "IMAGE --own-rootfs", O.agent);
			fail(&e);
		}
		rootfs_rw = 1;
	}
	if (sbx_config_load(root.fd, "config/sandbox.json", &cfg, &e) == -1 ||
	    sbx_install_registry(cfg, O.mgr, &reg, &e) == -1)
		fail(&e);
	json_decref(cfg);
	if (O.mgr == SBX_INSTALL_APT)
		apt_prepare(&reg);
	check_registries(&reg);

	/* One install per agent at a time; another agent's runs alongside.
	 * apt: one per rootfs copy (the agent's own, so its own lock).
	 * A flock: the kernel drops it when an install is killed. */
	if ((afd = agent_dir(&e)) == -1)
		fail(&e);
	if ((lock = sbx_install_lock(afd, lock_name(O.mgr == SBX_INSTALL_APT ?
		 SBX_L_AGENT_ROOTFS_LOCK : SBX_L_AGENT_INSTALL_LOCK),
		 O.timeout != NULL ? (int)O.timeout_s + 1 : LOCK_WAIT_S, &e)) ==
	    -1)
		fail(&e);

	manager_env(&reg, &env);
	script = O.mgr == SBX_INSTALL_NPM ? npm_script :
	    O.mgr == SBX_INSTALL_PIP	  ? pip_script :
					    apt_script;
	cleanup = O.mgr == SBX_INSTALL_NPM ? npm_cleanup :
	    O.mgr == SBX_INSTALL_PIP	   ? pip_cleanup :
					     apt_cleanup;
	run_script(script, O.pkgs, O.npkgs, &reg, (const char *const *)env.v,
	    1, &rr);
	if (rr.ok && rr.exit_code != 0) {
		sbx_install_classify(O.mgr, rr.exit_code, rr.out.p, rr.out.len,
		    &c);
		/* One cleanup, then exactly one retry; a failed cleanup is
		 * said, never retried over. */
		if (c.transient != NULL) {
			if (!O.quiet && !O.json)
				fprintf(stderr, "%s: transient failure (%s): "
				    "cleaning up and retrying once\n", PROG,
				    c.transient);
			/* apt's cleanup is `apt-get update`: its network. */
			run_script(cleanup, NULL, 0, rootfs_rw ? &reg : NULL,
			    NULL, 1, &cr);
			if (!cr.ok || cr.exit_code != 0)
				cleanup_failed = 1;
			sbx_buf_release(&cr.out);
			if (!cleanup_failed) {
				sbx_buf_release(&rr.out);
				run_script(script, O.pkgs, O.npkgs, &reg,
				    (const char *const *)env.v, 1, &rr);
				retried = 1;
			}
		}
	}
	sbx_strv_release(&env);
	if (!rr.ok) {
		close(lock);
		fail(&rr.err);
	}
	res = result_of(&rr, retried, t0);
	if (cleanup_failed)
		json_object_set_new(res, "cleanup_failed", json_true());
	if (rootfs_rw && rr.exit_code == RC_FOREIGN) {
		sbx_error_set(&e, SBX_K_REJECTED, "packages", "foreign_owner",
		    "a package has files owned by another user than root or "
		    "with a set-user-ID or set-group-ID bit; the sandbox maps "
		    "one uid only, so dpkg was not run (nothing was "
		    "installed)");
		sbx_error_hint(&e,
		    "see the log tail for the files; install "
		    "that package into the image before `sbx provision "
		    "--image`");
		e.retryable = 0;
		json_array_clear(json_object_get(res, "installed"));
		close(lock);
		fail_extra(&e, json_pack("{s:o}", "result", res));
	}
	if (rr.exit_code == RC_NO_MANAGER || rr.exit_code == RC_NO_VENV) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "manager",
		    rr.exit_code == RC_NO_VENV ? "no_venv" : "no_manager", "%s",
		    rr.exit_code == RC_NO_VENV ?
			"the sandbox's python3 "
			"has no venv module" :
			O.mgr == SBX_INSTALL_NPM ?
			"npm is "
			"not available in the sandbox" :
			O.mgr == SBX_INSTALL_APT ?
			"apt-get is not available in the agent's root file system" :
			"python3 is not available in the sandbox");
		sbx_error_hint(&e, "use an image that has it (python3-venv, "
		    "npm)");
		e.retryable = 0;
		close(lock);
		fail_extra(&e, json_pack("{s:o}", "result", res));
	}
	if (rr.exit_code != 0) {
		sbx_install_classify(O.mgr, rr.exit_code, rr.out.p, rr.out.len,
		    &c);
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL, c.cls,
		    "%s install failed (exit %d, %s)%s",
		    sbx_install_manager_name(O.mgr), rr.exit_code, c.cls,
		    cleanup_failed ? "; the cleanup before a retry failed" :
		    retried ? " after one retry" : "");
		e.retryable = c.retryable;
		json_array_clear(json_object_get(res, "installed"));
		extra = json_pack("{s:o,s:s}", "result", res, "class", c.cls);
		if (retried)
			json_object_set_new(extra, "retried", json_true());
		if (cleanup_failed)
			json_object_set_new(extra, "cleanup_failed",
			    json_true());
		close(lock);
		sbx_buf_release(&rr.out);
		fail_extra(&e, extra);
	}
	update_manifest(afd);
	close(lock);
	close(afd);
	sbx_buf_release(&rr.out);
	if (O.json)
		emit(sbx_envelope_ok(tool, res, json_incref(warnings)));
	else {
		sbx_cmd_print_warnings(PROG, warnings, O.quiet);
		if (!O.quiet)
			printf("installed with %s: %d package%s%s\n",
			    sbx_install_manager_name(O.mgr), O.npkgs,
			    O.npkgs == 1 ? "" : "s", retried ?
			    " (after one retry)" : "");
		json_decref(res);
	}
	return 0;
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
	snprintf(rel, sizeof(rel), "agents/%s", O.agent);
	if ((afd = sbx_open_beneath(root.fd, rel, O_RDONLY | O_DIRECTORY,
		 &e)) == -1)
		m = sbx_install_manifest_normalize(NULL);
	else if ((m = sbx_install_manifest_read(afd, &e)) == NULL)
		fail(&e);
	if (afd >= 0)
		close(afd);
	if (O.json) {
		emit(sbx_envelope_ok(tool,
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
 * --format=json` ([{name, version}]). */
static json_t *
names_from(int mgr, const struct run *rr)
{
	struct sbx_error	 e;
	json_t			*j, *out = json_array(), *v;
	const char		*k;
	size_t			 i, n;

	if (!rr->ok || rr->exit_code != 0 || rr->out.p == NULL)
		return NULL;
	/* stdout comes first in out; the JSON document is its start. */
	n = rr->out.len;
	j = mgr == SBX_INSTALL_APT ?
	    NULL :
	    json_loadb(rr->out.p, n, JSON_DISABLE_EOF_CHECK, NULL);
	(void)e;
	if (j == NULL && mgr != SBX_INSTALL_APT) {
		json_decref(out);
		return NULL;
	}
	if (mgr == SBX_INSTALL_APT) {
		/* dpkg-query: "installed<TAB>name" lines, not JSON. */
		names_apt(rr->out.p, n, out);
		return out;
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

static int
do_reconcile(void)
{
	static const char *const scripts[SBX_INSTALL_NMGR] = { apt_list,
		npm_list, pip_list };
	char			 digest[SBX_DIGEST_HEX + 1];
	int			 env_own = 0;
	struct sbx_error	 e;
	struct run		 rr;
	json_t			*m, *names;
	int			 afd, lock, mgr;

	open_agent();
	if ((afd = agent_dir(&e)) == -1 ||
	    (lock = sbx_install_lock(afd,
	    lock_name(SBX_L_AGENT_INSTALL_LOCK), LOCK_WAIT_S, &e)) ==
	    -1 || (m = sbx_install_manifest_read(afd, &e)) == NULL)
		fail(&e);
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
		run_script(scripts[mgr], NULL, 0, NULL, NULL, 0, &rr);
		if ((names = names_from(mgr, &rr)) == NULL)
			warn("%s: could not list what is installed; its "
			    "entries are kept", sbx_install_manager_name(mgr));
		else {
			sbx_install_manifest_set(m, mgr, names);
			json_decref(names);
		}
		sbx_buf_release(&rr.out);
	}
	if (sbx_install_manifest_write(afd, m, &e) == -1)
		fail(&e);
	close(lock);
	close(afd);
	if (O.json)
		emit(sbx_envelope_ok(tool, json_pack("{s:s,s:o}", "agent",
		    O.agent, "packages", m), json_incref(warnings)));
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

	if (sbx_fd_sanitize_std() == -1)
		return SBX_EX_OSERR;
	sbx_cmd_finish_init(PROG);
	if (sbx_cmd_complete(&table, argc, argv, &rc))
		return rc;
	warnings = json_array();
	parse_args(argc, argv);
	if (sbx_sandbox_inside()) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "nested_sandbox",
		    "sbx is running inside an sbx sandbox; nested sandboxes "
		    "are not supported");
		fail(&e);
	}
	if (O.sub != NULL && strcmp(O.sub, "list") == 0)
		return do_list();
	if (O.sub != NULL)
		return do_reconcile();
	return do_install();
}
