/*
 * sbx-secret: an agent's sealed secrets (secret.c): set, check, list,
 * rm, rotate-key, get --reveal, the scrub filter (scrub.c), and bind and
 * unbind, the credential rules of the agent's settings (credbind.c): a
 * bound secret's value is added by the proxy to requests for its hosts
 * and never enters the sandbox.  See sbx-secret(1).  Values never come from argv: a terminal prompt without
 * echo, standard input, --from-fd or --from-env (cmd/secret-input.c).
 */

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "buf.h"
#include "cfgcheck.h"
#include "cli.h"
#include "cmd.h"
#include "config.h"
#include "credbind.h"
#include "credrule.h"
#include "envelope.h"
#include "fsutil.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "scrub.h"
#include "secret-int.h"
#include "secret.h"
#include "settings.h"
#include "utf8.h"

static const char usage_text[] =
"usage: sbx secret set NAME [--from-fd N | --from-env VAR]\n"
"                  [--description TEXT] [--passphrase] [--agent A]\n"
"                  [--home DIR] [--json] [-q]\n"
"       sbx secret check|rm NAME [--agent A] [--home DIR] [--json] [-q]\n"
"       sbx secret list|rotate-key|scrub [--agent A] [--home DIR] [--json]\n"
"                  [-q]\n"
"       sbx secret get NAME --reveal [--agent A] [--home DIR]\n"
"       sbx secret bind NAME --host H [--host H ...]\n"
"                  --header TEMPLATE | --basic-user U | --query P\n"
"                  [--agent A] [--home DIR] [--json] [-q]\n"
"       sbx secret unbind NAME [--host H ...] [--agent A] [--home DIR]\n"
"                  [--json] [-q]\n";

static const char help_text[] =
"\n"
"An agent's secrets, sealed under agents/A/secrets.json; `sbx exec` gives\n"
"them to the command as environment variables and scrubs their values\n"
"(and their base64, hex and percent-encoded forms) from everything the\n"
"sandbox prints.\n"
"\n"
"  set NAME      store a value: from a terminal prompt (asked twice), else\n"
"                standard input (one trailing newline dropped), --from-fd\n"
"                or --from-env; never from the command line\n"
"  check NAME    is it there and does it open (exit 1 when absent)\n"
"  list          names, descriptions, times and bound hosts, never values\n"
"  rm NAME       remove it (exit 1 when absent)\n"
"  rotate-key    a new data key; every record re-sealed at once\n"
"  scrub         standard input to standard output, secrets redacted\n"
"  get NAME --reveal   print the value, on a terminal only\n"
"  bind NAME     the proxy puts the value in requests to the --host\n"
"                names (--header, --basic-user or --query says where);\n"
"                the sandbox's variable holds only a placeholder\n"
"  unbind NAME   remove the binding (or only the --host names given)\n"
"\n";

static const char help_tail[] =
"\n"
"The key: $SBX_SECRET_KEY_FILE, $CREDENTIALS_DIRECTORY/sbx-secret-key, or\n"
"config/secret.key under the state root (32 bytes, 0600, made on first\n"
"use).  Values shorter than 6 bytes are stored but not scrubbed.\n";

enum { OPT_HOME = 256, OPT_VERSION, OPT_FROM_FD, OPT_FROM_ENV, OPT_DESC,
    OPT_PASSPHRASE, OPT_REVEAL, OPT_HOST, OPT_HEADER, OPT_BASIC_USER,
    OPT_QUERY };

/* The subcommands; the program has no form without one. */
enum {
	S_SET = 1, S_CHECK = 2, S_LIST = 4, S_RM = 8, S_ROTATE = 16,
	S_SCRUB = 32, S_GET = 64, S_BIND = 128, S_UNBIND = 256, S_ALL = 511,
	/* get --reveal writes to a terminal only: no envelope, and the
	 * value is the whole output. */
	S_NOGET = S_ALL & ~S_GET,
};

static const struct sbx_opts_sub subs[] = {
	{ "set", S_SET, "@text" }, { "check", S_CHECK, "@text" },
	{ "list", S_LIST, NULL }, { "rm", S_RM, "@text" },
	{ "rotate-key", S_ROTATE, NULL }, { "scrub", S_SCRUB, NULL },
	{ "get", S_GET, "@text" }, { "bind", S_BIND, "@text" },
	{ "unbind", S_UNBIND, "@text" },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it.  Values never come from argv: there
 * is no --value row. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "the agent (default: $SBX_AGENT or \"default\")", S_ALL, 0 },
	{ OPT_FROM_FD, "from-fd", 0, SBX_OPT_REQ, "N", NULL,
	    "read the value from descriptor N", S_SET, 0 },
	{ OPT_FROM_ENV, "from-env", 0, SBX_OPT_REQ, "VAR", NULL,
	    "take the value from the environment variable VAR", S_SET, 0 },
	{ OPT_DESC, "description", 0, SBX_OPT_REQ, "TEXT", NULL,
	    "what the secret is for (shown by list)", S_SET, 0 },
	{ OPT_PASSPHRASE, "passphrase", 0, SBX_OPT_NONE, NULL, NULL,
	    "seal a new store with a passphrase (Argon2id);\n"
	    "asked on the terminal, or $SBX_SECRET_PASSPHRASE", S_SET, 0 },
	{ OPT_REVEAL, "reveal", 0, SBX_OPT_NONE, NULL, NULL,
	    "get: print the value", S_GET, 0 },
	{ OPT_HOST, "host", 0, SBX_OPT_REQ, "H", "@text",
	    "bind, unbind: a host the value may be sent to:\n"
	    "NAME, *.NAME (names under it), NAME:PORT (443);\n"
	    "repeatable", S_BIND | S_UNBIND, 0 },
	{ OPT_HEADER, "header", 0, SBX_OPT_REQ, "TEMPLATE", "@text",
	    "bind: a header, the value at {}:\n"
	    "'Authorization: Bearer {}', 'x-api-key: {}'", S_BIND, 0 },
	{ OPT_BASIC_USER, "basic-user", 0, SBX_OPT_REQ, "U", "@text",
	    "bind: Authorization: Basic of U:value", S_BIND, 0 },
	{ OPT_QUERY, "query", 0, SBX_OPT_REQ, "P", "@text",
	    "bind: the query parameter P=value", S_BIND, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME,\n"
	    "$XDG_DATA_HOME/sbx, ~/.local/share/sbx)", S_ALL, 0 },
	SBX_OPT_ROW_JSON(S_NOGET),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no warnings on stderr", S_NOGET, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx secret", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), 0, NULL, 25, 0 };

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

struct secret_opts	 O;
static char		 tool[32] = "secret";
struct sbx_root		 root = SBX_ROOT_INIT;
struct sbx_secret_auth	 auth;
char			*pass; /* sodium_malloc, or NULL */

/* Before a failure exits: the passphrase's memory cleared. */
static void
free_pass(void)
{
	if (pass != NULL)
		sodium_free(pass);
}

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	help_tail, &table, S_ALL, &O.json, &O.quiet, NULL, NULL, .tool = tool,
	.cleanup = free_pass };

static void
parse_args(int argc, char *argv[])
{
	int		 ch;

	/* Every option of the table (GNU order: options and operands mixed);
	 * the subcommand's refuses the others once it is known. */
	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	/* Decided before getopt, skipping option arguments: a value that
	 * reads "--json" (a description, a setting) is not the flag. */
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a': O.agent = optarg; break;
		case OPT_FROM_FD: O.from_fd = optarg; break;
		case OPT_FROM_ENV: O.from_env = optarg; break;
		case OPT_DESC: O.desc = optarg; break;
		case OPT_PASSPHRASE: O.passphrase = 1; break;
		case OPT_REVEAL: O.reveal = 1; break;
		case OPT_HOST:
			if (O.nhosts == SBX_CRED_HOSTS_MAX)
				sbx_cmd_usage_why("too many --host (at most "
				    "16)");
			O.hosts[O.nhosts++] = optarg;
			break;
		case OPT_HEADER: O.header = optarg; break;
		case OPT_BASIC_USER: O.basic_user = optarg; break;
		case OPT_QUERY: O.query = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	O.nargs = argc - optind;
	O.argv = argv + optind;
	if (O.nargs > 0)
		O.sub = argv[optind];
	if (O.nargs > 1)
		O.name = argv[optind + 1];
}

/* ---- the subcommands ---------------------------------------------------- */

static void
done(json_t *result, json_t *warnings, const char *text)
{
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, result,
		    json_incref(warnings)));
		return;
	}
	sbx_cmd_print_warnings(PROG, warnings, O.quiet);
	json_decref(result);
	if (text != NULL && !O.quiet)
		printf("%s\n", text);
}

static void
open_store(struct sbx_secret_store *s, int write)
{
	struct sbx_error	 e;

	if (sbx_secret_open(s, root.fd, O.agent, write, &auth, &e) == -1)
		sbx_cmd_die(&e);
}

static int
do_set(void)
{
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	unsigned char		*v;
	size_t			 n;
	int			 replaced;
	char			 text[256];

	if (O.desc != NULL && (strlen(O.desc) > SBX_SECRET_DESC_MAX ||
	    !sbx_utf8_valid(O.desc, strlen(O.desc))))
		sbx_cmd_usage_why(
		    "--description must be UTF-8 text of at most 256 bytes");
	if (read_value(&v, &n, &e) == -1)
		sbx_cmd_die(&e);
	if (n == 0) {
		sodium_free(v);
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "value", "empty",
		    "the value of %s is empty; nothing was stored", O.name);
		sbx_cmd_die(&e);
	}
	open_store(&s, 1);
	replaced = json_object_get(json_object_get(s.doc, "secrets"),
	    O.name) != NULL;
	if (sbx_secret_put(&s, O.name, v, n, O.desc, &e) == -1 ||
	    sbx_secret_commit(&s, &e) == -1) {
		sodium_free(v);
		sbx_secret_close(&s);
		sbx_cmd_die(&e);
	}
	sodium_free(v);
	if (n < SBX_SCRUB_MIN)
		json_array_append_new(s.warnings, json_sprintf("the value of "
		    "%s is shorter than %d bytes: it is not scrubbed from "
		    "output", O.name, SBX_SCRUB_MIN));
	snprintf(text, sizeof(text), "%s %s for agent %s", replaced ?
	    "replaced" : "stored", O.name, O.agent);
	done(json_pack("{s:s,s:s,s:b}", "agent", O.agent, "name", O.name,
	    "replaced", replaced), s.warnings, text);
	sbx_secret_close(&s);
	return 0;
}

static int
do_check(void)
{
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	unsigned char		*v;
	size_t			 n;
	json_t			*rec, *res;

	open_store(&s, 0);
	if (sbx_secret_get(&s, O.name, &v, &n, &e) == -1) {
		sbx_secret_close(&s);
		sbx_cmd_die(&e);
	}
	sodium_free(v);
	rec = json_object_get(json_object_get(s.doc, "secrets"), O.name);
	res = json_pack("{s:s,s:s,s:b}", "agent", O.agent, "name", O.name,
	    "present", 1);
	json_object_set(res, "created", json_object_get(rec, "created"));
	json_object_set(res, "updated", json_object_get(rec, "updated"));
	if (json_object_get(rec, "description") != NULL)
		json_object_set(res, "description", json_object_get(rec,
		    "description"));
	done(res, s.warnings, NULL);
	if (!O.json && !O.quiet)
		printf("%s: present (agent %s)\n", O.name, O.agent);
	sbx_secret_close(&s);
	return 0;
}

static void	hosts_text(const struct sbx_credrule *, struct sbx_buf *);

/*
 * The agent's bindings (credbind.c), for list: rules in *set (n 0 when
 * none), and their settings form, a new array.  A settings file a run
 * would refuse is a warning here: the list of secrets is still shown.
 */
static json_t *
list_bindings(struct sbx_credset *set, json_t *warnings)
{
	struct sbx_error	 e;
	json_t			*doc = NULL, *a = json_array();
	char			 rel[128];
	size_t			 i;

	set->n = 0;
	if (sbx_cfg_path(O.agent, rel, sizeof(rel), &e) == -1 ||
	    sbx_settings_agent(root.fd, O.agent, &doc, &e) == -1 ||
	    sbx_credbind_load(doc, rel, set, &e) == -1) {
		set->n = 0;
		json_array_append_new(warnings, json_sprintf("bindings not "
		    "shown: %s", e.message));
	}
	json_decref(doc);
	for (i = 0; i < set->n; i++)
		json_array_append_new(a, sbx_credrule_json(&set->rule[i]));
	return a;
}

static int
do_list(void)
{
	struct sbx_secret_store	 s;
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_credset	*set;
	const struct sbx_credrule *r;
	json_t			*a, *o, *creds, *h;
	size_t			 i, k;
	char			 hs[300];

	if ((set = malloc(sizeof(*set))) == NULL) {
		struct sbx_error e;

		sbx_error_sys(&e, "nomem", "credential rules");
		sbx_cmd_die(&e);
	}
	open_store(&s, 0);
	a = sbx_secret_list(&s);
	creds = list_bindings(set, s.warnings);
	/* Each secret's bound hosts (names and hosts, never a value). */
	json_array_foreach (a, i, o)
		if ((r = sbx_credbind_find(set,
			 json_string_value(json_object_get(o, "name")))) !=
		    NULL) {
			h = json_array();
			for (k = 0; k < r->nhosts; k++) {
				sbx_credbind_host_str(&r->hosts[k], hs,
				    sizeof(hs));
				json_array_append_new(h, json_string(hs));
			}
			json_object_set_new(o, "hosts", h);
		}
	/* A rule whose secret is gone: every run would refuse it. */
	for (i = 0; i < set->n; i++) {
		json_array_foreach (a, k, o)
			if (strcmp(
				json_string_value(json_object_get(o, "name")),
				set->rule[i].secret) == 0)
				break;
		if (k == json_array_size(a))
			json_array_append_new(s.warnings,
			    json_sprintf(
				"%s is "
				"bound but agent %s has no such secret: its runs "
				"fail until `sbx secret set %s` or `sbx secret "
				"unbind %s`",
				set->rule[i].secret, O.agent,
				set->rule[i].secret, set->rule[i].secret));
	}
	if (!O.json) {
		sbx_cmd_print_warnings(PROG, s.warnings, O.quiet);
		json_array_foreach(a, i, o) {
			const char *d = json_string_value(json_object_get(o,
			    "description"));
			sbx_buf_reset(&b);
			sbx_buf_printf(&b, "%-24s %s  %s",
			    json_string_value(json_object_get(o, "name")),
			    json_string_value(json_object_get(o, "updated")),
			    d != NULL ? d : "");
			if ((r = sbx_credbind_find(set, json_string_value(
			    json_object_get(o, "name")))) != NULL) {
				sbx_buf_puts(&b, d != NULL ? "  " : "");
				sbx_buf_puts(&b, "-> ");
				hosts_text(r, &b);
			}
			{
				struct sbx_buf l = SBX_BUF_INIT;
				sbx_utf8_escape_line(&l, b.p, b.len);
				printf("%s\n", l.p ? l.p : "");
				sbx_buf_release(&l);
			}
		}
		sbx_buf_release(&b);
		json_decref(a);
		json_decref(creds);
	} else
		done(json_pack("{s:s,s:o,s:o}", "agent", O.agent, "secrets", a,
		    "credentials", creds), s.warnings, NULL);
	sbx_secret_close(&s);
	free(set);
	return 0;
}

static int
do_rm(void)
{
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	char			 text[160];
	int			 r;

	if (!sbx_secret_store_exists(root.fd, O.agent)) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "name", "secret_missing",
		    "agent %s has no secret %s", O.agent, O.name);
		sbx_cmd_die(&e);
	}
	open_store(&s, 1);
	if ((r = sbx_secret_del(&s, O.name, &e)) == 0) {
		sbx_secret_close(&s);
		sbx_error_set(&e, SBX_K_NOT_FOUND, "name", "secret_missing",
		    "agent %s has no secret %s", O.agent, O.name);
		sbx_cmd_die(&e);
	}
	if (sbx_secret_commit(&s, &e) == -1) {
		sbx_secret_close(&s);
		sbx_cmd_die(&e);
	}
	snprintf(text, sizeof(text), "removed %s from agent %s", O.name,
	    O.agent);
	/* A binding left behind fails every run of the agent: said now. */
	{
		struct sbx_credset *set = malloc(sizeof(*set));
		json_t		   *cr = NULL;

		if (set != NULL) {
			cr = list_bindings(set, s.warnings);
			if (sbx_credbind_find(set, O.name) != NULL)
				json_array_append_new(s.warnings,
				    json_sprintf("%s is still bound to hosts: "
				    "the agent's runs fail until `sbx secret "
				    "unbind %s --agent %s`", O.name, O.name,
				    O.agent));
		}
		json_decref(cr);
		free(set);
	}
	done(json_pack("{s:s,s:s}", "agent", O.agent, "name", O.name),
	    s.warnings, text);
	sbx_secret_close(&s);
	return 0;
}

static int
do_rotate(void)
{
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	char			 text[160];
	size_t			 n;

	if (!sbx_secret_store_exists(root.fd, O.agent)) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, NULL, "no_store",
		    "agent %s has no secrets", O.agent);
		sbx_cmd_die(&e);
	}
	open_store(&s, 1);
	n = json_object_size(json_object_get(s.doc, "secrets"));
	if (sbx_secret_rotate(&s, &e) == -1 ||
	    sbx_secret_commit(&s, &e) == -1) {
		sbx_secret_close(&s);
		sbx_cmd_die(&e);
	}
	snprintf(text, sizeof(text), "re-sealed %zu secret%s of agent %s "
	    "under a new key", n, n == 1 ? "" : "s", O.agent);
	done(json_pack("{s:s,s:I}", "agent", O.agent, "secrets",
	    (json_int_t)n), s.warnings, text);
	sbx_secret_close(&s);
	return 0;
}

static int
out_sink(void *arg, const void *p, size_t n)
{
	(void)arg;
	return sbx_fs_write_all(1, p, n);
}

/* stdin to stdout, scrubbed; held bytes go out after 50 ms of quiet. */
static int
do_scrub(void)
{
	struct sbx_secret_env	 env;
	struct sbx_scrub_stream	 st;
	struct sbx_error	 e;
	struct pollfd		 pfd;
	char			 buf[65536];
	ssize_t			 k;
	int			 r;

	if (sbx_secret_load_env(root.fd, O.agent, NULL, 0, &auth, &env,
	    &e) == -1)
		sbx_cmd_die(&e);
	sbx_cmd_print_warnings(PROG, env.warnings, O.quiet);
	/* The values themselves are not needed, only their patterns. */
	if (env.block != NULL)
		sodium_memzero(env.block, env.block_len);
	sbx_scrub_stream_init(&st, env.scrub, out_sink, NULL);
	pfd.fd = 0;
	pfd.events = POLLIN;
	for (;;) {
		if (sbx_scrub_held(&st) > 0) {
			r = poll(&pfd, 1, SBX_SCRUB_IDLE_MS);
			if (r == 0) {
				if (sbx_scrub_flush(&st) == -1)
					goto werr;
				continue;
			}
		}
		k = read(0, buf, sizeof(buf));
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1) {
			sbx_error_sys(&e, "read_failed", "reading standard "
			    "input");
			sbx_cmd_die(&e);
		}
		if (k == 0)
			break;
		if (sbx_scrub_write(&st, buf, (size_t)k) == -1)
			goto werr;
	}
	if (sbx_scrub_flush(&st) == -1)
		goto werr;
	sbx_scrub_stream_release(&st);
	sbx_secret_env_release(&env);
	return 0;
werr:
	sbx_error_sys(&e, "stdout_write", "writing standard output");
	sbx_cmd_die(&e);
}

static int
do_get(void)
{
	struct sbx_secret_store	 s;
	struct sbx_error	 e;
	unsigned char		*v;
	size_t			 n;

	/* A value on a screen is a choice a person makes; a value in a
	 * pipe or a file is a leak: terminals only. */
	if (!O.reveal)
		sbx_cmd_usage_why("get prints a value only with --reveal");
	if (O.json || !isatty(1)) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "not_a_terminal",
		    "get --reveal prints only to a terminal (standard output "
		    "is %s)", O.json ? "an envelope" : "not a terminal");
		sbx_cmd_die(&e);
	}
	open_store(&s, 0);
	if (sbx_secret_get(&s, O.name, &v, &n, &e) == -1) {
		sbx_secret_close(&s);
		sbx_cmd_die(&e);
	}
	(void)sbx_fs_write_all(1, v, n);
	(void)sbx_fs_write_all(1, "\n", 1);
	sodium_free(v);
	sbx_secret_close(&s);
	return 0;
}

/* ---- bind, unbind: the credential rules of the agent's settings ------- */

/* The agent's settings, loaded for an edit under the provision lock
 * (the lock of `sbx config`, whose writes go to the same file). */
static json_t *
settings_open(int *lock, char *rel, size_t relsz)
{
	struct sbx_error	 e;
	json_t			*doc;

	if (sbx_cfg_path(O.agent, rel, relsz, &e) == -1 ||
	    (*lock = sbx_provision_lock(root.fd, &e)) == -1 ||
	    sbx_cfg_load(root.fd, O.agent, &doc, &e) == -1)
		sbx_cmd_die(&e);
	return doc;
}

/*
 * The edited file must load as a run loads it (the whole schema, as
 * `sbx config` checks it); then it is written atomically (temp file,
 * fsync, rename).  A refusal leaves the file as it was.
 */
static void
settings_store(json_t *doc, const char *rel)
{
	struct sbx_error	 e;

	if (sbx_cfg_validate(doc, 1, rel, &e) == -1)
		sbx_cmd_die_extra(&e, NULL, SBX_EX_DATAERR);
	if (sbx_cfg_store(root.fd, O.agent, doc, &e) == -1)
		sbx_cmd_die(&e);
}

/* The hosts of a rule, "h1, h2", into b. */
static void
hosts_text(const struct sbx_credrule *r, struct sbx_buf *b)
{
	char	 hs[300];
	size_t	 i;

	for (i = 0; i < r->nhosts; i++) {
		sbx_credbind_host_str(&r->hosts[i], hs, sizeof(hs));
		sbx_buf_printf(b, "%s%s", i ? ", " : "", hs);
	}
}

/* The rule of O.name in doc, as JSON (null when none). */
static json_t *
rule_of(const json_t *doc, const char *rel)
{
	struct sbx_credset		*set;
	const struct sbx_credrule	*r;
	struct sbx_error		 e;
	json_t				*out;

	if ((set = malloc(sizeof(*set))) == NULL)
		return json_null();
	if (sbx_credbind_load(doc, rel, set, &e) == -1) {
		free(set);
		sbx_cmd_die(&e);
	}
	r = sbx_credbind_find(set, O.name);
	out = r != NULL ? sbx_credrule_json(r) : json_null();
	free(set);
	return out;
}

static int
do_bind(void)
{
	struct sbx_credrule	 r;
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	json_t			*j, *hosts, *names, *doc;
	char			 rel[128];
	size_t			 i;
	int			 lock, changed, have = 0;

	if (O.nhosts == 0)
		sbx_cmd_usage_why("bind needs at least one --host");
	if ((O.header != NULL) + (O.basic_user != NULL) + (O.query != NULL)
	    != 1)
		sbx_cmd_usage_why("bind needs exactly one of --header, "
		    "--basic-user and --query");
	/* The rule in its one JSON form, judged by the one parser (the
	 * template, the header's name, each host). */
	hosts = json_array();
	for (i = 0; i < O.nhosts; i++)
		json_array_append_new(hosts, json_string(O.hosts[i]));
	j = json_pack("{s:s,s:o}", "secret", O.name, "hosts", hosts);
	if (O.header != NULL)
		json_object_set_new(j, "header", json_string(O.header));
	else if (O.basic_user != NULL)
		json_object_set_new(j, "basic_user",
		    json_string(O.basic_user));
	else
		json_object_set_new(j, "query", json_string(O.query));
	if (json_array_size(hosts) != O.nhosts || json_object_size(j) != 3) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "host", "not_utf8",
		    "--host, --header, --basic-user and --query must be UTF-8 "
		    "text");
		sbx_cmd_die(&e);
	}
	if (sbx_credrule_parse(j, "sbx secret bind", &r, &e) == -1)
		sbx_cmd_die(&e);
	json_decref(j);
	/* A binding of a secret the agent does not have would fail every
	 * run: refused now, with the command that makes it. */
	names = sbx_secret_names(root.fd, O.agent);
	for (i = 0; i < json_array_size(names); i++)
		if (strcmp(json_string_value(json_array_get(names, i)),
		    O.name) == 0)
			have = 1;
	json_decref(names);
	if (!have) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "name", "secret_missing",
		    "agent %s has no secret %s to bind", O.agent, O.name);
		sbx_error_hint(&e, "sbx secret set %s --agent %s", O.name,
		    O.agent);
		sbx_cmd_die(&e);
	}
	doc = settings_open(&lock, rel, sizeof(rel));
	if ((changed = sbx_credbind_bind(doc, rel, &r, &e)) == -1)
		sbx_cmd_die(&e);
	if (changed)
		settings_store(doc, rel);
	close(lock);
	j = rule_of(doc, rel);
	if (!json_is_null(j)) {
		struct sbx_credrule now;

		if (sbx_credrule_parse(j, rel, &now, &e) == 0)
			hosts_text(&now, &b);
	}
	{
		char text[1024];

		snprintf(text, sizeof(text), "%s %s of agent %s to %s",
		    changed ? "bound" : "already bound", O.name, O.agent,
		    b.p != NULL ? b.p : "");
		done(json_pack("{s:s,s:s,s:b,s:s,s:o}", "agent", O.agent,
		    "name", O.name, "changed", changed, "settings", rel,
		    "rule", j), NULL, text);
	}
	sbx_buf_release(&b);
	json_decref(doc);
	return 0;
}

static int
do_unbind(void)
{
	struct sbx_error	 e;
	json_t			*doc, *j;
	char			 rel[128], text[256];
	int			 lock;

	doc = settings_open(&lock, rel, sizeof(rel));
	if (sbx_credbind_unbind(doc, rel, O.name, O.hosts, O.nhosts,
	    &e) == -1)
		sbx_cmd_die(&e);
	settings_store(doc, rel);
	close(lock);
	j = rule_of(doc, rel);
	snprintf(text, sizeof(text), "%s %s of agent %s", json_is_null(j) ?
	    "unbound" : "removed hosts from the binding of", O.name, O.agent);
	done(json_pack("{s:s,s:s,s:b,s:s,s:o}", "agent", O.agent, "name",
	    O.name, "changed", 1, "settings", rel, "rule", j), NULL, text);
	json_decref(doc);
	return 0;
}

/* The subcommand: known, with the options and operands it takes.
 * Returns whether it takes a NAME. */
static int
check_sub(void)
{
	struct sbx_error	 e;
	unsigned		 bit;
	int			 want_name;

	if (O.sub == NULL)
		sbx_cmd_usage_why("a subcommand is needed");
	if (strlen(O.sub) < 20)
		snprintf(tool, sizeof(tool), "secret.%s", O.sub);
	if ((bit = sbx_opts_sub_find(&table, 1, O.argv, NULL)) == 0)
		sbx_cmd_usage_why("unknown subcommand");
	/* An option of another subcommand (--from-fd with get, --reveal
	 * with list, --json with get) is a usage error, named. */
	if (sbx_opts_check(&table, &seen, bit, &e) == -1) {
		if (O.json)
			sbx_cmd_emit(sbx_envelope_err(tool, &e, NULL));
		else
			sbx_cmd_report(PROG, tool, 0, &e, NULL, sbx_cmd_emit);
		fputs(usage_text, stderr);
		exit(SBX_EX_USAGE);
	}
	want_name = (bit & (S_SET | S_CHECK | S_RM | S_GET | S_BIND |
	    S_UNBIND)) != 0;
	if (want_name && O.nargs != 2)
		sbx_cmd_usage_why("this subcommand takes one NAME");
	if (!want_name && O.nargs != 1)
		sbx_cmd_usage_why("this subcommand takes no argument");
	return want_name;
}

int
main(int argc, char *argv[])
{
	struct sbx_error e;
	int		 want_name, creating, rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	sbx_secret_protect();
	parse_args(argc, argv);
	if (sodium_init() == -1) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL, "crypto_unavailable",
		    "libsodium cannot be initialised");
		sbx_cmd_die(&e);
	}
	want_name = check_sub();
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (want_name && sbx_secret_name_valid(O.name, &e) == -1)
		sbx_cmd_die(&e);
	creating = strcmp(O.sub, "set") == 0;
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 1, &e) == -1)
		sbx_cmd_die(&e);
	/* The bindings are settings, not records of the store: no key or
	 * passphrase is needed to edit them. */
	if (strcmp(O.sub, "bind") == 0)
		return do_bind();
	if (strcmp(O.sub, "unbind") == 0)
		return do_unbind();
	if (get_passphrase(creating, &e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(O.sub, "set") == 0)
		return do_set();
	if (strcmp(O.sub, "check") == 0)
		return do_check();
	if (strcmp(O.sub, "list") == 0)
		return do_list();
	if (strcmp(O.sub, "rm") == 0)
		return do_rm();
	if (strcmp(O.sub, "rotate-key") == 0)
		return do_rotate();
	if (strcmp(O.sub, "scrub") == 0)
		return do_scrub();
	return do_get();
}
