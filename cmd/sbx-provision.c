/*
 * sbx-provision: create or repair the state root and an agent (home,
 * SOUL.md, token, settings); list, inspect, unprovision, reset, remove.
 * See sbx-provision(1).
 */
#include <sys/stat.h>

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

#include "agentset.h"
#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "imageref.h"
#include "imagestore.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "rootfs.h"
#include "time.h"
#include "users.h"
#include "utf8.h"

#include "provision-int.h"


static const char usage_text[] =
"usage: sbx provision [--agent A] [--image NAME|DIGEST]\n"
"                     [--own-rootfs | --no-own-rootfs] [--no-create-user]\n"
"                     [--disk-image SIZE|off] [--disk-resize SIZE]\n"
"                     [--migrate-identity] [--home DIR] [--json] [-q] [-v]\n"
"       sbx provision list [--home DIR] [--json] [-q]\n"
"       sbx provision status [--agent A] [--home DIR] [--json] [-q]\n"
"       sbx provision unprovision --agent A [--home DIR] [--json] [-q]\n"
"       sbx provision reset [--home DIR] [--json] [-q]\n"
"       sbx provision remove [--yes] [--home DIR] [--json] [-q]\n"
"       sbx provision image add SOURCE|URL --sha256 HEX [--name NAME]\n"
"                     [--home DIR] [--json] [-q]\n"
"       sbx provision image list [--home DIR] [--json] [-q]\n"
"       sbx provision image rm NAME|DIGEST [--force] [--home DIR] [--json]\n"
"                     [-q]\n"
"       sbx provision image verify [NAME|DIGEST] [--home DIR] [--json] [-q]\n";

static const char help_text[] =
"\n"
"Create or repair the state root and the agent A: the directories of the\n"
"layout with safe modes, the agent's home with SOUL.md, its token and its\n"
"settings. Running it again changes nothing that is already right; a\n"
"symlink planted in the state root is refused, never followed.\n"
"\n"
"  list          the agents, and whether each has a token, a home, settings\n"
"  status        what exists, is missing or has a wrong mode; changes nothing\n"
"                (exit 1 when something is not right)\n"
"  unprovision   delete the agent's token and host-side records; keep its\n"
"                home\n"
"  reset         empty envs/ and cache/; keep homes, images and settings\n"
"                (agents keep asking for their own copies: --own-rootfs\n"
"                remakes one)\n"
"  remove        delete everything in the state root except workspace/\n"
"                (only with --yes)\n"
"  image add     unpack a rootfs tarball (.tar, .tar.gz, .tar.xz, .tar.zst)\n"
"                whose sha256 is given, local or at an https:// URL (plain\n"
"                http only to 127.0.0.1 or [::1]), or an OCI image layout\n"
"                directory whose manifest has that sha256, into a read-only\n"
"                template; a download shows a progress bar on a terminal\n"
"  image list    the templates and their names, and the environments\n"
"  image rm      remove a name; the template goes with its last name when\n"
"                no agent is bound to it (rm DIGEST: the template and its\n"
"                names, refused while an agent is bound to it)\n"
"  image verify  compare templates with their manifests (exit 1 if damaged)\n"
"\n";

enum {
	OPT_HOME = 256, OPT_VERSION, OPT_IMAGE, OPT_SHA256, OPT_NAME, OPT_ENV,
	OPT_NO_ENV, OPT_FORCE, OPT_NO_CREATE_USER, OPT_ENV_OLD, OPT_NO_ENV_OLD,
	OPT_DISK_IMAGE, OPT_DISK_RESIZE,
	OPT_MIGRATE_IDENTITY,
};

/* Provision itself (S_MAIN) and its subcommands. */
enum {
	S_MAIN = 1, S_LIST = 2, S_STATUS = 4, S_UNPROVISION = 8, S_RESET = 16,
	S_REMOVE = 32, S_IMAGE_ADD = 64, S_IMAGE_LIST = 128, S_IMAGE_RM = 256,
	S_IMAGE_VERIFY = 512, S_ALL = 1023,
};

static const struct sbx_opts_sub subs[] = {
	{ "list", S_LIST, NULL }, { "status", S_STATUS, NULL },
	{ "unprovision", S_UNPROVISION, NULL }, { "reset", S_RESET, NULL },
	{ "remove", S_REMOVE, NULL }, { "image add", S_IMAGE_ADD, "@file" },
	{ "image list", S_IMAGE_LIST, NULL },
	{ "image rm", S_IMAGE_RM, "@image" },
	{ "image verify", S_IMAGE_VERIFY, "@image" },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent name (default: $SBX_AGENT or \"default\")",
	    S_MAIN | S_STATUS | S_UNPROVISION, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, S_ALL),
	{ 'y', "yes", 'y', SBX_OPT_NONE, NULL, NULL, "remove: really remove",
	    S_REMOVE, 0 },
	{ OPT_IMAGE, "image", 0, SBX_OPT_REQ, "REF", "@image|none",
	    "bind the agent to an image (name or digest; `none`\n"
	    "unbinds): sbx exec then uses its system directories", S_MAIN,
	    0 },
	{ OPT_ENV, "own-rootfs", 0, SBX_OPT_NONE, NULL, NULL,
	    "give the agent its own writable copy of its image\n"
	    "(envs/A/rootfs: a reflink clone, else a copy); at most\n"
	    "max_envs (default 3) are kept, least recently used\n"
	    "evicted", S_MAIN, 0 },
	{ OPT_NO_ENV, "no-own-rootfs", 0, SBX_OPT_NONE, NULL, NULL,
	    "remove the agent's own copy; back to the template", S_MAIN,
	    0 },
	/* The old names, deprecated (exec's --env sets a variable): hidden
	 * rows, accepted but neither in --help nor completed. */
	{ OPT_ENV_OLD, "env", 0, SBX_OPT_NONE, NULL, NULL, NULL, S_MAIN, 0 },
	{ OPT_NO_ENV_OLD, "no-env", 0, SBX_OPT_NONE, NULL, NULL, NULL, S_MAIN,
	    0 },
	{ OPT_NO_CREATE_USER, "no-create-user", 0, SBX_OPT_NONE, NULL, NULL,
	    "as root without run_as or an `sbx` user: do not\n"
	    "create the system user sbx; sandboxes run as nobody\n"
	    "(also SBX_NO_CREATE_USER=1)", S_MAIN, 0 },
	{ OPT_SHA256, "sha256", 0, SBX_OPT_REQ, "HEX", NULL,
	    "image add: the expected sha256 of SOURCE", S_IMAGE_ADD, 0 },
	{ OPT_NAME, "name", 0, SBX_OPT_REQ, "NAME", NULL,
	    "image add: a name for the image", S_IMAGE_ADD, 0 },
	{ OPT_FORCE, "force", 0, SBX_OPT_NONE, NULL, NULL,
	    "image rm: remove the template even when other names\n"
	    "or agents refer to it (says which agents it breaks)",
	    S_IMAGE_RM, 0 },
	{ OPT_MIGRATE_IDENTITY, "migrate-identity", 0, SBX_OPT_NONE, NULL,
	    NULL, "identity.per_agent: hand the agent's files to its\n"
	    "own uid (resumable, idempotent); a run refuses an\n"
	    "agent until it is done", S_MAIN, 0 },
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing but errors", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "also list what was already present", S_MAIN, 0 },
	{ OPT_DISK_IMAGE, "disk-image", 0, SBX_OPT_REQ, "SIZE", NULL,
	    "root: give the agent a file system of its own of\n"
	    "SIZE (MiB, or 512m, 2g): its home and /output move\n"
	    "onto it, a hard disk limit; `off` moves them back\n"
	    "(copied, compared, then removed; re-run to finish\n"
	    "an interrupted one)", S_MAIN, 0 },
	{ OPT_DISK_RESIZE, "disk-resize", 0, SBX_OPT_REQ, "SIZE", NULL,
	    "grow or shrink the agent's disk image to SIZE (no\n"
	    "run may be using it)", S_MAIN, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_MAIN),
};

static const struct sbx_opts table = { PROG, "sbx provision", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), S_MAIN, NULL, 20, 0 };

struct prov_opts O;

char		 tool[32] = "provision";
struct sbx_root	 root = SBX_ROOT_INIT;

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, &O.verbose, NULL,
	.tool = tool };

void __attribute__((noreturn))
usage(const char *why)
{
	struct sbx_error	 e;

	if (why == NULL)
		sbx_cmd_usage_exit(NULL);
	sbx_error_set(&e, SBX_K_INVALID_ARGS, "arguments",
	    strcmp(why, "too many arguments") == 0 ? "unexpected_argument" :
	    strcmp(why, "unknown subcommand") == 0 ? "unknown_subcommand" :
	    "usage", "%s", why);
	sbx_cmd_usage_exit(&e);
}

/* A path or message for a terminal: control characters escaped. */
void
print_line(FILE *f, const char *prefix, const char *s, const char *suffix)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (sbx_utf8_escape_line(&b, s, strlen(s)) == 0)
		fprintf(f, "%s%s%s\n", prefix, b.p ? b.p : "", suffix);
	sbx_buf_release(&b);
}

void
print_list(const char *label, json_t *arr)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(arr, i, v)
		print_line(stdout, label, json_string_value(v), "");
}

void
print_warnings(json_t *warnings)
{
	sbx_cmd_print_warnings(PROG, warnings, O.quiet);
}

json_t *
root_json(void)
{
	return json_pack("{s:s,s:s}", "path", root.path, "source", root.source);
}

static void
parse(int argc, char *argv[])
{
	int			 ch;

	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			O.agent_given = 1;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		case 'y':
			O.yes = 1;
			break;
		case OPT_IMAGE:
			O.image = optarg;
			break;
		case OPT_ENV_OLD:
			O.old_flag = "--env";
			/* FALLTHROUGH */
		case OPT_ENV:
			O.env = 1;
			break;
		case OPT_NO_ENV_OLD:
			O.old_flag = "--no-env";
			/* FALLTHROUGH */
		case OPT_NO_ENV:
			O.no_env = 1;
			break;
		case OPT_NO_CREATE_USER:
			O.no_create_user = 1;
			break;
		case OPT_FORCE:
			O.force = 1;
			break;
		case OPT_DISK_IMAGE:
			O.disk_image = optarg;
			break;
		case OPT_DISK_RESIZE:
			O.disk_resize = optarg;
			break;
		case OPT_MIGRATE_IDENTITY:
			O.migrate_identity = 1;
			break;
		case OPT_SHA256:
			O.sha256 = optarg;
			break;
		case OPT_NAME:
			O.name = optarg;
			break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
}

static void
parse_args(int argc, char *argv[])
{
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported. */
	if (sbx_opts_getopt(&table, S_MAIN, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts,
	    NULL);
	/* Options anywhere before `--`, operands in order after it
	 * (sbx_cmd_getopt, opts.h): no child argv here to protect from
	 * reordering. */
	optind = 0;	/* 0: start, reading the optstring */
	parse(argc, argv);
	if (optind >= argc)
		return;
	O.sub = argv[optind++];
	if (strcmp(O.sub, "image") == 0 || strcmp(O.sub, "images") == 0) {
		/* image ACTION [ARG] */
		while (optind < argc) {
			if (O.npos >= 3)
				usage("too many arguments");
			O.pos[O.npos++] = argv[optind++];
		}
		return;
	}
	if (optind < argc)
		usage("too many arguments");
}

/* Every option given must go with the (sub)command bit. */
static void
check_options(unsigned bit)
{
	struct sbx_error	 e;

	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		sbx_cmd_usage_exit(&e);
}

/* Open the root without creating it: -1 when it does not exist. */
int
open_root_existing(int inspect)
{
	struct sbx_error	 e;
	int			 fd;

	if (sbx_root_open(&root, 0, &e) == 0)
		return root.fd;
	if (e.kind && strcmp(e.kind, SBX_K_NOT_FOUND) == 0)
		return -1;
	/* status reports an unsafe root rather than refusing to look at
	 * it; it only ever reads beneath it. */
	if (inspect && e.reason &&
	    strcmp(e.reason, "insecure_state_root") == 0 &&
	    (fd = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
		root.fd = fd;
		return fd;
	}
	sbx_cmd_die(&e);
}

/* ---- images ------------------------------------------------------------- */

static int
do_image(void)
{
	struct sbx_error	 e;
	const char		*act = O.npos > 0 ? O.pos[0] : NULL;

	if (act == NULL)
		usage("image needs add, list, rm or verify");
	if (strcmp(act, "add") != 0 && strcmp(act, "list") != 0 &&
	    strcmp(act, "rm") != 0 && strcmp(act, "verify") != 0)
		usage("unknown image subcommand");
	snprintf(tool, sizeof(tool), "provision.image.%s", act);
	{
		char	*w[2] = { (char *)"image", (char *)act };

		check_options(sbx_opts_sub_find(&table, 2, w, NULL));
	}
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
	if (strcmp(act, "add") == 0)
		return do_image_add();
	if (strcmp(act, "list") == 0)
		return do_image_list();
	if (strcmp(act, "rm") == 0)
		return do_image_rm();
	return do_image_verify();
}

/* The subcommands with an --agent (image has its own dispatch). */
static const struct {
	const char	*name;
	int		(*run)(void);
} cmds[] = {
	{ "status", do_status },
	{ "list", do_list },
	{ "unprovision", do_unprovision },
	{ "reset", do_reset },
	{ "remove", do_remove },
};

/* The options against the (sub)command s (NULL: provision), the agent
 * and the state root. */
static void
check_command(const char *s)
{
	struct sbx_error	 e;
	char			*w[1] = { (char *)s };

	/* Each option goes only with some (sub)commands: reset and remove,
	 * which act on the whole root, take no --agent (an --agent there
	 * would suggest they act on one agent only; see unprovision). */
	check_options(s == NULL ? S_MAIN : sbx_opts_sub_find(&table, 1, w,
	    NULL));
	if (O.env && O.no_env)
		usage("--own-rootfs and --no-own-rootfs exclude each other");
	/* The old names go after one release (sbx-provision(1)). */
	if (O.old_flag != NULL && !O.quiet)
		fprintf(stderr, "%s: warning: %s is deprecated; use %s\n", PROG,
		    O.old_flag, O.env ? "--own-rootfs" : "--no-own-rootfs");
	if (!O.agent_given && s != NULL && strcmp(s, "unprovision") == 0)
		usage("unprovision needs --agent");
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		sbx_cmd_die(&e);
}

int
main(int argc, char *argv[])
{
	int	(*run)(void) = do_provision;
	size_t	 i;
	int	 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	if (O.sub != NULL) {
		if (strcmp(O.sub, "image") == 0 || strcmp(O.sub, "images") == 0)
			return do_image();
		for (i = 0; i < SBX_OPTS_N(cmds); i++)
			if (strcmp(O.sub, cmds[i].name) == 0)
				break;
		if (i == SBX_OPTS_N(cmds))
			usage("unknown subcommand");
		run = cmds[i].run;
		snprintf(tool, sizeof(tool), "provision.%s", O.sub);
	}
	check_command(O.sub);
	if (O.migrate_identity) {
		if (O.image != NULL || O.env || O.no_env)
			usage("--migrate-identity takes no other change");
		snprintf(tool, sizeof(tool), "provision.migrate_identity");
		run = do_migrate_identity;
	}
	return run();
}
