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

#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "imageref.h"
#include "imagestore.h"
#include "install.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "rootfs.h"
#include "runlimits.h"
#include "time.h"
#include "users.h"
#include "utf8.h"

#define PROG	"sbx-provision"

static const char usage_text[] =
"usage: sbx provision [--agent A] [--image NAME|DIGEST]\n"
"                     [--own-rootfs | --no-own-rootfs] [--no-create-user]\n"
"                     [--home DIR] [--json] [-q] [-v]\n"
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

/* The one option table (lib/opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent name (default: $SBX_AGENT or \"default\")",
	    S_MAIN | S_STATUS | S_UNPROVISION, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
	    "~/.local/share/sbx)", S_ALL, 0 },
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
	{ 'j', "json", 'j', SBX_OPT_NONE, NULL, NULL,
	    "print one JSON envelope (also SBX_JSON=1)", S_ALL, 0 },
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "print nothing but errors", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "also list what was already present", S_MAIN, 0 },
	{ 'h', "help", 'h', SBX_OPT_NONE, NULL, NULL, "this help", S_ALL, 0 },
	{ OPT_VERSION, "version", 0, SBX_OPT_NONE, NULL, NULL,
	    "print the version", S_MAIN, 0 },
};

static const struct sbx_opts table = { PROG, "sbx provision", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), S_MAIN, NULL, 20 };

static struct {
	const char	*agent;
	const char	*home;
	const char	*sub;		/* NULL: provision */
	const char	*image;		/* --image */
	int		 env;		/* --own-rootfs */
	int		 no_env;	/* --no-own-rootfs */
	const char	*old_flag;	/* --env or --no-env was used */
	int		 no_create_user;	/* --no-create-user */
	const char	*sha256;
	const char	*name;
	const char	*pos[3];	/* image ACTION [ARG] */
	int		 npos;
	int		 agent_given;
	int		 yes;
	int		 force;
	int		 json;
	int		 quiet;
	int		 verbose;
} O;

static const char	*tool = "provision";
static char		 tool_buf[32];
static struct sbx_root	 root = SBX_ROOT_INIT;

/* The getopt_long arguments of the table, and the options seen (checked
 * against the subcommand once it is known). */
static struct sbx_opts_getopt	 g;
static struct sbx_opts_seen	 seen;

/* A usage error: an invalid_args envelope under --json (field and
 * reason of e), the message and the synopsis on stderr; exit 64. */
static void __attribute__((noreturn))
usage_err(const struct sbx_error *e)
{
	sbx_cmd_usage(PROG, tool, O.json, e, usage_text, sbx_cmd_emit);
	exit(SBX_EX_USAGE);
}

static void __attribute__((noreturn))
usage(const char *why)
{
	struct sbx_error	 e;

	if (why == NULL)
		usage_err(NULL);
	sbx_error_set(&e, SBX_K_INVALID_ARGS, "arguments",
	    strcmp(why, "too many arguments") == 0 ? "unexpected_argument" :
	    strcmp(why, "unknown subcommand") == 0 ? "unknown_subcommand" :
	    "usage", "%s", why);
	usage_err(&e);
}

static void
emit(json_t *env)
{
	sbx_cmd_emit(env);
}

/* Report a failure (envelope or text) and exit (code < 0: the status
 * of the one table, sbx_exit_for). */
static void __attribute__((noreturn))
fail_extra(struct sbx_error *e, int code, json_t *extra)
{
	sbx_cmd_fail(PROG, tool, O.json, e, extra, emit, code);
}

static void __attribute__((noreturn))
fail(struct sbx_error *e)
{
	fail_extra(e, -1, NULL);
}

/* A path or message for a terminal: control characters escaped. */
static void
print_line(FILE *f, const char *prefix, const char *s, const char *suffix)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (sbx_str_escape_line(&b, s, strlen(s)) == 0)
		fprintf(f, "%s%s%s\n", prefix, b.p ? b.p : "", suffix);
	sbx_buf_release(&b);
}

static void
print_list(const char *label, json_t *arr)
{
	json_t	*v;
	size_t	 i;

	json_array_foreach(arr, i, v)
		print_line(stdout, label, json_string_value(v), "");
}

static void
print_warnings(json_t *warnings)
{
	sbx_cmd_print_warnings(PROG, warnings, O.quiet);
}

static json_t *
root_json(void)
{
	return json_pack("{s:s,s:s}", "path", root.path, "source", root.source);
}

static void
parse(int argc, char *argv[])
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	int			 ch;

	opterr = 0;	/* a refused option is reported by usage_err() */
	while ((ch = getopt_long(argc, argv, g.optstring, g.longopts, NULL))
	    != -1) {
		ch = sbx_opts_id(&g, ch);
		if (ch != '?' && ch != ':')
			sbx_opts_seen(&seen, ch);
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
		case OPT_SHA256:
			O.sha256 = optarg;
			break;
		case OPT_NAME:
			O.name = optarg;
			break;
		case 'j':
			O.json = 1;
			break;
		case 'q':
			O.quiet = 1;
			break;
		case 'v':
			O.verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(help_text, stdout);
			if (sbx_opts_help(&table, S_ALL, &b) == 0 && b.p)
				fputs(b.p, stdout);
			exit(0);
		case OPT_VERSION:
			printf("%s %s\n", PROG, SBX_VERSION);
			exit(0);
		default:
			sbx_cli_getopt_error(argc, argv, g.optstring,
			    g.longopts, &e);
			usage_err(&e);
		}
	}
}

static void
parse_args(int argc, char *argv[])
{
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported. */
	if (sbx_opts_getopt(&table, S_MAIN, "+", &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring + 1, g.longopts,
	    NULL);
	parse(argc, argv);
	if (optind >= argc)
		return;
	O.sub = argv[optind];
	/* Options may also follow the subcommand. */
	argc -= optind;
	argv += optind;
	optind = 0;	/* 0: restart, re-reading the optstring's flags */
	if (strcmp(O.sub, "image") == 0 || strcmp(O.sub, "images") == 0) {
		/* image ACTION [ARG]: positionals and options in any order
		 * (no child argv here to protect from reordering). */
		for (;;) {
			parse(argc, argv);
			if (optind >= argc)
				break;
			if (O.npos >= 3)
				usage("too many arguments");
			O.pos[O.npos++] = argv[optind];
			argc -= optind;
			argv += optind;
			optind = 0;
		}
		return;
	}
	parse(argc, argv);
	if (optind < argc)
		usage("too many arguments");
}

/* Every option given must go with the (sub)command bit. */
static void
check_options(unsigned bit)
{
	struct sbx_error	 e;

	if (sbx_opts_check(&table, &seen, bit, &e) == -1)
		usage_err(&e);
}

/* Open the root without creating it: -1 when it does not exist. */
static int
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
	fail(&e);
}

/* ---- images ------------------------------------------------------------- */

static json_t *
image_warnings(const struct sbx_image_add *a)
{
	json_t	*w = json_array();
	char	 msg[160];

	if (a->dropped > 0) {
		snprintf(msg, sizeof(msg), "%llu device nodes, FIFOs or "
		    "sockets in the archive were dropped", a->dropped);
		json_array_append_new(w, json_string(msg));
	}
	if (a->stripped > 0) {
		snprintf(msg, sizeof(msg), "setuid, setgid or sticky bits were "
		    "removed from %llu entries", a->stripped);
		json_array_append_new(w, json_string(msg));
	}
	return w;
}

/* A progress bar on standard error, only when it is a terminal (and not
 * with -q): lib/download.c calls this as data arrives. */
static struct {
	int		 on;
	int		 shown;
	long long	 last_ms;
} bar;


static void
progress(void *arg, unsigned long long now, unsigned long long total)
{
	char		 fill[31];
	long long	 t = sbx_now_ms();
	unsigned	 k;

	(void)arg;
	if (!bar.on || (t - bar.last_ms < 100 && (total == 0 || now < total)))
		return;
	bar.last_ms = t;
	bar.shown = 1;
	if (total == 0) {
		fprintf(stderr, "\r%s: downloading %.1f MiB", PROG,
		    (double)now / 1048576.0);
		return;
	}
	k = (unsigned)(now * 30 / total);
	memset(fill, '#', k > 30 ? 30 : k);
	memset(fill + (k > 30 ? 30 : k), ' ', 30 - (k > 30 ? 30 : k));
	fill[30] = '\0';
	fprintf(stderr, "\r%s: [%s] %3u%% %.1f/%.1f MiB", PROG, fill,
	    (unsigned)(now * 100 / total), (double)now / 1048576.0,
	    (double)total / 1048576.0);
}

static void
progress_end(void)
{
	if (bar.shown)
		fputc('\n', stderr);
	bar.shown = 0;
}

/* Fetch a URL source into cache/ (an unnamed file) for image add. */
static int
download(struct sbx_image_add *a, struct sbx_download *d)
{
	struct sbx_error	 e;
	int			 cachefd, fd;

	memset(d, 0, sizeof(*d));
	d->url = a->source;
	d->max_bytes = a->max_bytes;
	d->timeout = a->download_timeout;
	d->expect = a->sha256;
	d->progress = progress;
	bar.on = !O.quiet && isatty(STDERR_FILENO);
	if ((cachefd = sbx_mkdirs_at(root.fd, "cache", 0700, &e)) == -1)
		fail(&e);
	fd = sbx_download_fetch(cachefd, d, &e);
	progress_end();
	close(cachefd);
	if (fd == -1)
		fail(&e);
	a->use_fd = 1;
	a->fd = fd;
	return fd;
}

static int
do_image_add(void)
{
	struct sbx_image_add	 a;
	struct sbx_download	 d;
	struct sbx_error	 e;
	json_t			*res, *w;
	char			 rel[SBX_DIGEST_HEX + 32];
	int			 plain, url, fd = -1, downloaded;

	if (O.npos != 2)
		usage("image add needs SOURCE");
	if (O.sha256 == NULL)
		usage("image add needs --sha256 HEX");
	memset(&a, 0, sizeof(a));
	memset(&d, 0, sizeof(d));
	a.source = O.pos[1];
	a.sha256 = O.sha256;
	a.name = O.name;
	/* Refuse a malformed digest or name before touching anything. */
	if (!sbx_image_digest_valid(a.sha256) || (a.name != NULL &&
	    !sbx_image_name_valid(a.name))) {
		if (sbx_image_add(-1, &a, &e) == -1)
			fail(&e);
	}
	/* And a URL against the download policy before anything is
	 * created, resolved or dialled. */
	if ((url = sbx_download_is_url(a.source)) &&
	    sbx_download_check(a.source, &plain, &e) == -1)
		fail(&e);
	if (sbx_root_open(&root, 1, &e) == -1)
		fail(&e);
	umask(077);
	if (sbx_image_limits(root.fd, &a, &e) == -1)
		fail(&e);
	/* Already there (the digest names the content): no download. */
	if (url) {
		a.present_only = 1;
		if (sbx_image_add(root.fd, &a, &e) == -1)
			fail(&e);
		a.present_only = 0;
		if (!a.present)
			fd = download(&a, &d);
	}
	if (!a.present && sbx_image_add(root.fd, &a, &e) == -1)
		fail(&e);
	if ((downloaded = fd != -1))
		close(fd);
	SBX_LPATH(rel, SBX_L_IMAGE_ROOTFS, a.sha256);
	w = image_warnings(&a);
	if (O.json) {
		res = json_pack("{s:s,s:s,s:b,s:o,s:I,s:I,s:I,s:I}", "digest",
		    a.sha256, "path", rel, "present", a.present, "root",
		    root_json(), "entries", (json_int_t)a.entries, "bytes",
		    (json_int_t)a.bytes, "dropped", (json_int_t)a.dropped,
		    "stripped", (json_int_t)a.stripped);
		/* Never the URL itself: it may carry a signed query. */
		if (downloaded)
			json_object_set_new(res, "download", json_pack(
			    "{s:I,s:i,s:I}", "bytes", (json_int_t)d.bytes,
			    "redirects", (int)d.redirects, "status",
			    (json_int_t)d.status));
		if (a.name != NULL)
			json_object_set_new(res, "name", json_string(a.name));
		if (a.layers > 0)
			json_object_set_new(res, "layers",
			    json_integer((json_int_t)a.layers));
		emit(sbx_envelope_ok(tool, res, w));
		return 0;
	}
	if (!O.quiet) {
		print_warnings(w);
		if (a.present)
			printf("image %s already present%s%s\n", a.sha256,
			    a.name ? "; named " : "", a.name ? a.name : "");
		else
			printf("image %s added: %llu entries, %llu bytes%s%s\n",
			    a.sha256, a.entries, a.bytes, a.name ?
			    "; named " : "", a.name ? a.name : "");
	}
	json_decref(w);
	return 0;
}

static int
do_image_list(void)
{
	struct sbx_error	 e;
	json_t			*imgs, *envs = NULL, *it, *v;
	size_t			 i, j;
	int			 rootfd;

	if (O.npos != 1)
		usage("too many arguments");
	rootfd = open_root_existing(0);
	if ((imgs = sbx_imagestore_list(rootfd, &e)) == NULL ||
	    (envs = sbx_rootfs_list(rootfd, &e)) == NULL)
		fail(&e);
	if (O.json) {
		emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o,s:o}", "images",
		    imgs, "envs", envs, "root", root_json()), NULL));
		return 0;
	}
	if (!O.quiet) {
		printf("%-64s  %-8s  %s\n", "DIGEST", "COMPLETE", "NAMES");
		json_array_foreach(imgs, i, it) {
			printf("%-64s  %-8s  ", json_string_value(
			    json_object_get(it, "digest")), json_is_true(
			    json_object_get(it, "complete")) ? "yes" : "no");
			json_array_foreach(json_object_get(it, "names"), j, v)
				printf("%s%s", j ? "," : "",
				    json_string_value(v));
			printf("\n");
		}
		if (json_array_size(envs) > 0)
			printf("\n%-32s  %-12s  %-24s  %s\n", "ENV (AGENT)",
			    "IMAGE", "LAST USED", "CLONE");
		json_array_foreach(envs, i, it) {
			const char *dg = json_string_value(json_object_get(it,
			    "digest"));
			const char *lu = json_string_value(json_object_get(it,
			    "last_used"));
			const char *cl = json_string_value(json_object_get(it,
			    "clone"));
			printf("%-32s  %-12.12s  %-24s  %s\n",
			    json_string_value(json_object_get(it, "agent")),
			    dg ? dg : "?", lu ? lu : "?", cl ? cl : "?");
		}
	}
	json_decref(imgs);
	json_decref(envs);
	return 0;
}

static int
do_image_rm(void)
{
	struct sbx_error	 e;
	json_t			*res, *a;
	size_t			 i;
	int			 rootfd, kept;

	if (O.npos != 2)
		usage("image rm needs NAME or DIGEST");
	if ((rootfd = open_root_existing(0)) < 0) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "image", "image_missing",
		    "there is no state root, so no image");
		fail(&e);
	}
	res = json_object();
	if (sbx_imagestore_rm(rootfd, O.pos[1], O.force, res, &e) == -1)
		fail(&e);
	kept = strcmp(json_string_value(json_object_get(res, "template")),
	    "kept") == 0;
	json_object_set_new(res, "root", root_json());
	if (O.json) {
		emit(sbx_envelope_ok(tool, res, NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", json_object_get(res, "removed"));
		json_array_foreach(json_object_get(res, "names_removed"), i, a)
			printf("name %s removed\n", json_string_value(a));
		if (kept)
			printf("template %.12s kept: %zu other name%s, %zu "
			    "agent%s bound to it\n", json_string_value(
			    json_object_get(res, "digest")),
			    json_array_size(json_object_get(res, "names_left")),
			    json_array_size(json_object_get(res,
			    "names_left")) == 1 ? "" : "s",
			    json_array_size(json_object_get(res,
			    "agents_bound")), json_array_size(json_object_get(
			    res, "agents_bound")) == 1 ? "" : "s");
	}
	/* Said even with -q: a forced removal broke these agents. */
	json_array_foreach(json_object_get(res, "broken_agents"), i, a)
		fprintf(stderr, "%s: warning: agent %s was bound to the "
		    "removed image; its runs are refused until it is bound to "
		    "another (sbx provision --agent %s --image NAME)\n", PROG,
		    json_string_value(a), json_string_value(a));
	json_decref(res);
	return 0;
}

static int
do_image_verify(void)
{
	struct sbx_error	 e;
	json_t			*imgs, *it, *d, *diffs, *out;
	char			 digest[SBX_DIGEST_HEX + 1];
	const char		*dg;
	size_t			 i, j;
	int			 rootfd, damaged = 0;

	if (O.npos > 2)
		usage("too many arguments");
	rootfd = open_root_existing(0);
	if (O.npos == 2) {
		if (rootfd < 0 || (!sbx_image_digest_valid(O.pos[1]) &&
		    sbx_imagestore_resolve(rootfd, O.pos[1], 0, digest, &e) ==
		    -1)) {
			if (rootfd < 0)
				sbx_error_set(&e, SBX_K_NOT_FOUND, "image",
				    "image_missing", "there is no state root, "
				    "so no image");
			fail(&e);
		}
		if (sbx_image_digest_valid(O.pos[1]))
			snprintf(digest, sizeof(digest), "%s", O.pos[1]);
		imgs = json_pack("[{s:s}]", "digest", digest);
	} else if ((imgs = sbx_imagestore_list(rootfd, &e)) == NULL)
		fail(&e);
	out = json_array();
	json_array_foreach(imgs, i, it) {
		dg = json_string_value(json_object_get(it, "digest"));
		diffs = json_array();
		if (sbx_manifest_verify(rootfd, dg, diffs, &e) == -1)
			fail(&e);
		if (json_array_size(diffs) > 0)
			damaged = 1;
		json_array_append_new(out, json_pack("{s:s,s:b,s:o}", "digest",
		    dg, "ok", json_array_size(diffs) == 0, "differences",
		    diffs));
	}
	json_decref(imgs);
	if (O.json) {
		emit(sbx_envelope_ok(tool, json_pack("{s:o,s:b,s:o}", "images",
		    out, "ok", !damaged, "root", root_json()), NULL));
		return damaged ? SBX_EX_NEGATIVE : 0;
	}
	if (!O.quiet)
		json_array_foreach(out, i, it) {
			diffs = json_object_get(it, "differences");
			printf("image %s: %s\n", json_string_value(
			    json_object_get(it, "digest")),
			    json_array_size(diffs) ? "damaged" : "ok");
			json_array_foreach(diffs, j, d) {
				char pre[64];
				snprintf(pre, sizeof(pre), "  %-8s ",
				    json_string_value(json_object_get(d,
				    "change")));
				print_line(stdout, pre, json_string_value(
				    json_object_get(d, "path")), "");
			}
		}
	json_decref(out);
	return damaged ? SBX_EX_NEGATIVE : 0;
}

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
	snprintf(tool_buf, sizeof(tool_buf), "provision.image.%s", act);
	tool = tool_buf;
	{
		char	*w[2] = { (char *)"image", (char *)act };

		check_options(sbx_opts_sub_find(&table, 2, w, NULL));
	}
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		fail(&e);
	if (strcmp(act, "add") == 0)
		return do_image_add();
	if (strcmp(act, "list") == 0)
		return do_image_list();
	if (strcmp(act, "rm") == 0)
		return do_image_rm();
	return do_image_verify();
}

/*
 * The agent's image and environment settings: sbx-managed state, in the
 * record agents/A/image.json (lib/imageref.h), never in
 * config/agents/A.json, which users edit (a rewrite of that file must not
 * unbind the image).  Under the provision lock: the record is written,
 * then the keys an older sbx kept in the config (`image`, `env`) are
 * removed from it, atomically.  digest "" unbinds.  With migrate set,
 * only an old config without a record is moved (digest and env are
 * ignored): provision does that on every run.
 */
static int
write_settings(struct sbx_provision *p, const char *digest, int env,
    int migrate, struct sbx_error *e)
{
	json_t	*cfg;
	char	 rel[128], name[64], cur[SBX_DIGEST_HEX + 1], *s;
	int	 lock, dfd, rc = -1, r, cur_env;

	if ((lock = sbx_provision_lock(p->rootfd, e)) == -1)
		return -1;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, O.agent);
	snprintf(name, sizeof(name), "%s.json", O.agent);
	if (sbx_config_load(p->rootfd, rel, &cfg, e) == -1)
		goto out;
	if (migrate) {
		if ((r = sbx_imageref_record(p->rootfd, O.agent, cur, &cur_env,
		    e)) != 0 || cfg == NULL || (json_object_get(cfg, "image") ==
		    NULL && json_object_get(cfg, "env") == NULL)) {
			rc = r == -1 ? -1 : 0;
			json_decref(cfg);
			goto out;
		}
		if (sbx_imageref_of(-1, cfg, rel, O.agent, cur, &cur_env,
		    e) == -1) {
			json_decref(cfg);
			goto out;
		}
		digest = cur;
		env = cur_env;
	}
	if (sbx_imageref_record_write(p->rootfd, O.agent, digest, env,
	    e) == -1) {
		json_decref(cfg);
		goto out;
	}
	if (cfg == NULL || (json_object_get(cfg, "image") == NULL &&
	    json_object_get(cfg, "env") == NULL)) {
		json_decref(cfg);
		rc = 0;
		goto out;
	}
	json_object_del(cfg, "image");
	json_object_del(cfg, "env");
	s = sbx_envelope_dump(cfg);
	json_decref(cfg);
	if (s == NULL) {
		sbx_error_sys(e, "nomem", "agent settings");
		goto out;
	}
	if ((dfd = sbx_layout_open(p->rootfd, SBX_L_CONFIG_AGENTS, NULL,
	    O_RDONLY | O_DIRECTORY, e)) != -1) {
		rc = sbx_write_atomic(dfd, name, s, strlen(s), 0600, e);
		close(dfd);
	}
	free(s);
out:
	close(lock);
	return rc;
}

/* What --image, --env and --no-env did, for the envelope. */
struct settled {
	char		 digest[SBX_DIGEST_HEX + 1];	/* "" none */
	int		 env;		/* the agent has (asked for) one */
	int		 made;		/* sbx_rootfs_create ran */
	struct sbx_rootfs	 x;
	json_t		*removed;
};

/*
 * Bind the agent to an image (--image; `none` unbinds) and give it its
 * own environment (--env) or take it away (--no-env).  An agent that has
 * an environment keeps one across a rebinding: it is made again from the
 * new image.  Unbinding removes it.
 */
static int
settle(struct sbx_provision *p, struct settled *st, struct sbx_error *e)
{
	char	 cur[SBX_DIGEST_HEX + 1];
	int	 r, had_env = 0;

	memset(st, 0, sizeof(*st));
	st->removed = json_array();
	st->x.evicted = json_array();
	st->x.warnings = json_array();
	/* The current settings (a malformed image setting is replaced when
	 * --image is given). */
	r = sbx_imageref_agent_env(p->rootfd, O.agent, cur, &had_env, e);
	if (r == -1 && O.image == NULL)
		return -1;
	if (r != 1)
		cur[0] = '\0';
	if (O.image == NULL)
		memcpy(st->digest, cur, sizeof(cur));
	else if (strcmp(O.image, "none") != 0 &&
	    sbx_imagestore_resolve(p->rootfd, O.image, 1, st->digest, e) == -1)
		return -1;
	st->env = O.env || (had_env && !O.no_env);
	if (O.env && st->digest[0] == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env", "no_image",
		    "agent %s is not bound to an image: an environment is a "
		    "copy of one; give --image NAME with --own-rootfs",
		    O.agent);
	if (st->digest[0] == '\0')
		st->env = 0;
	if (write_settings(p, st->digest, st->env, 0, e) == -1)
		return -1;
	if (st->env) {
		st->x.agent = O.agent;
		st->x.digest = st->digest;
		if (sbx_rootfs_limits(p->rootfd, &st->x.max_envs, e) == -1 ||
		    sbx_rootfs_create(p->rootfd, &st->x, e) == -1)
			return -1;
		st->made = 1;
	} else if (had_env || O.no_env)
		return sbx_rootfs_remove(p->rootfd, O.agent, st->removed, e);
	return 0;
}

static void
settled_release(struct settled *st)
{
	json_decref(st->removed);
	json_decref(st->x.evicted);
	json_decref(st->x.warnings);
}

/* {path, digest, present, replaced, clone, files, bytes, clone_us} */
static json_t *
env_json(const struct settled *st)
{
	char	 rel[96];

	SBX_LPATH(rel, SBX_L_ENV_ROOTFS, O.agent);
	return json_pack("{s:s,s:s,s:b,s:b,s:s,s:I,s:I,s:I}", "path", rel,
	    "digest", st->digest, "present", st->x.present, "replaced",
	    st->x.replaced, "clone", st->x.clone ? st->x.clone : "copy",
	    "files", (json_int_t)st->x.files, "bytes",
	    (json_int_t)st->x.bytes, "clone_us", (json_int_t)(st->x.clone_ms *
	    1000.0));
}

/* ---- provision ---------------------------------------------------------- */

/* As root, sandboxes run as another uid, which bwrap needs to walk down to
 * the homes with: say so now rather than at the first sbx exec. */
static void
check_reachable(struct sbx_provision *p)
{
	struct stat	 st;
	char		 path[PATH_MAX], msg[PATH_MAX + 256], *s;

	if (!p->as_root || strlen(root.path) >= sizeof(path))
		return;
	snprintf(path, sizeof(path), "%s", root.path);
	while ((s = strrchr(path, '/')) != NULL) {
		s[s == path ? 1 : 0] = '\0';
		if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH)) {
			snprintf(msg, sizeof(msg), "sandboxes run as uid %u, "
			    "which cannot reach the state root through %s; "
			    "sbx exec will refuse it", (unsigned)p->run_uid,
			    path);
			json_array_append_new(p->warnings, sbx_json_bytes(msg,
			    strlen(msg)));
			return;
		}
		if (s == path)
			break;
	}
}

/*
 * As root, sandboxes run as run_as (config/sandbox.json), else the `sbx`
 * system user, else nobody.  nobody is shared: host daemons run as it too,
 * and the per-uid budgets a sandbox can exhaust (RLIMIT_NPROC, inotify
 * instances, the keyring quota) are theirs as well, as are files only
 * nobody can read.  So provision creates the sbx user when neither is
 * there, and fails closed when it cannot: running as nobody is a choice
 * made out loud (--no-create-user, with a warning), never a fallback.
 */
static json_t *
ensure_run_user(json_t *warnings)
{
	struct sbx_error	 e;
	const char		*env = getenv("SBX_NO_CREATE_USER");
	uid_t			 uid;
	gid_t			 gid;
	int			 r;

	if ((r = sbx_identity_wants_user(root.fd, &e)) == -1)
		fail(&e);
	if (r == 0)
		return NULL;
	if (O.no_create_user || (env != NULL && strcmp(env, "1") == 0)) {
		json_array_append_new(warnings, json_string("no `sbx` user and "
		    "no run_as in config/sandbox.json: sandboxes run as nobody "
		    "(65534), whose per-uid limits host daemons share; "
		    "`sbx provision` without --no-create-user creates the sbx "
		    "user"));
		return NULL;
	}
	if (sbx_user_create(SBX_USERADD, NULL, SBX_RUN_USER, &uid, &gid,
	    &e) == -1) {
		/* A provision running at the same time may have made it. */
		if (sbx_user_by_name(SBX_RUN_USER, &uid, &gid) == 0 &&
		    uid != 0)
			return NULL;
		fail(&e);
	}
	if (!O.quiet)
		fprintf(stderr, "%s: created the system user %s (uid %u, gid "
		    "%u): root's sandboxes run as it\n", PROG, SBX_RUN_USER,
		    (unsigned)uid, (unsigned)gid);
	return json_pack("{s:s,s:I,s:I}", "name", SBX_RUN_USER, "uid",
	    (json_int_t)uid, "gid", (json_int_t)gid);
}

static int
do_provision(void)
{
	struct sbx_provision	 p;
	struct sbx_error	 e;
	struct stat		 st;
	struct settled		 set;
	char			*token_file = NULL;
	json_t			*res, *v, *uwarn, *new_user;
	size_t			 i;
	int			 created, settling;

	created = stat(root.path, &st) == -1 && errno == ENOENT;
	if (sbx_root_open(&root, 1, &e) == -1)
		fail(&e);
	/* Before the umask below: useradd writes the passwd files. */
	if ((uwarn = json_array()) == NULL)
		exit(SBX_EX_OSERR);
	new_user = ensure_run_user(uwarn);
	/* Every mode is set explicitly below; this umask only makes mkdir
	 * produce them exactly (0711 and 0700 alike), so that a concurrent
	 * provision never sees a half-made directory as one to repair, and
	 * it never lets group or others read or write. */
	umask(066);
	if (sbx_provision_init(&p, root.fd, O.agent) == -1) {
		sbx_error_sys(&e, "nomem", "provision");
		fail(&e);
	}
	p.root_created = created;
	/* Running `sbx provision` is what lifts an unprovision. */
	p.restore = 1;
	if (sbx_provision_agent(&p, &e) == -1) {
		json_t *extra = NULL;

		if (json_array_size(p.problems) > 0)
			extra = json_pack("{s:O}", "problems", p.problems);
		if (!O.json && !O.quiet) {
			json_array_foreach(p.problems, i, v) {
				print_line(stderr, PROG ": refused: ",
				    json_string_value(json_object_get(v,
				    "path")), strcmp(json_string_value(
				    json_object_get(v, "state")), "symlink") ==
				    0 ? " (a symlink)" : " (wrong type or "
				    "owner)");
			}
		}
		fail_extra(&e, -1, extra);
	}
	check_reachable(&p);
	settling = O.image != NULL || O.env || O.no_env;
	/* An old config's image binding moves into the record. */
	if (!settling && write_settings(&p, "", 0, 1, &e) == -1)
		fail(&e);
	memset(&set, 0, sizeof(set));
	if (settling && settle(&p, &set, &e) == -1)
		fail(&e);
	json_array_extend(p.warnings, set.x.warnings);
	json_array_extend(p.warnings, uwarn);
	json_decref(uwarn);
	if (asprintf(&token_file, "%s/run/tokens/%s", root.path, O.agent) == -1)
		exit(SBX_EX_OSERR);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:s,s:O,s:O,s:O}", "agent", O.agent,
		    "root", root_json(), "token_file", token_file, "created",
		    p.created, "repaired", p.repaired, "present", p.present);
		if (new_user != NULL)
			json_object_set(res, "created_user", new_user);
		if (settling) {
			json_object_set_new(res, "image", set.digest[0] ?
			    json_string(set.digest) : json_null());
			json_object_set_new(res, "env", set.made ?
			    env_json(&set) : json_null());
			json_object_set(res, "evicted", set.x.evicted);
			json_object_set(res, "removed", set.removed);
		}
		emit(sbx_envelope_ok(tool, res, json_incref(p.warnings)));
	} else if (!O.quiet) {
		print_warnings(p.warnings);
		print_list("created   ", p.created);
		print_list("repaired  ", p.repaired);
		if (O.verbose)
			print_list("present   ", p.present);
		printf("agent %s provisioned in %s: %zu created, %zu repaired, "
		    "%zu already present\n", O.agent, root.path,
		    json_array_size(p.created), json_array_size(p.repaired),
		    json_array_size(p.present));
		print_line(stdout, "token file ", token_file, "");
		if (settling)
			printf("image %s\n", set.digest[0] ? set.digest :
			    "none");
		/* Nothing was copied for one already there: no counters,
		 * which would read as an empty environment. */
		if (set.made && set.x.present)
			printf("env envs/%s/rootfs: already present\n",
			    O.agent);
		else if (set.made)
			printf("env envs/%s/rootfs: %s (%s, %llu files, %llu "
			    "bytes, %.1f ms)\n", O.agent, set.x.replaced ?
			    "replaced" : "created", set.x.clone ? set.x.clone :
			    "copy", set.x.files, set.x.bytes, set.x.clone_ms);
		json_array_foreach(set.x.evicted, i, v)
			printf("evicted   %s (last used %s)\n",
			    json_string_value(json_object_get(v, "path")),
			    json_string_value(json_object_get(v,
			    "last_used")));
		print_list("removed   ", set.removed);
	}
	free(token_file);
	json_decref(new_user);
	if (settling)
		settled_release(&set);
	sbx_provision_release(&p);
	return 0;
}

/* ---- status ------------------------------------------------------------- */

static const char *
item_str(json_t *it, const char *key)
{
	const char	*s = json_string_value(json_object_get(it, key));

	return s ? s : "";
}

/* One checklist line: `  [ok]          run (0711)`.  Paths are the
 * layout's own, with a validated agent name: nothing to escape. */
static void
print_item(json_t *it)
{
	const char	*state = item_str(it, "state");
	char		 tag[32], extra[64];

	if (strcmp(state, "present") == 0)
		state = "ok";
	snprintf(tag, sizeof(tag), "[%s]", state);
	extra[0] = '\0';
	if (strcmp(state, "wrong_mode") == 0)
		snprintf(extra, sizeof(extra), " (mode %s, want %s)",
		    item_str(it, "mode"), item_str(it, "want_mode"));
	else if (strcmp(state, "ok") == 0 && json_object_get(it, "mode"))
		snprintf(extra, sizeof(extra), " (%s)", item_str(it, "mode"));
	printf("  %-14s %s%s\n", tag, item_str(it, "path"), extra);
}

/*
 * What the agent's runs will use: its image (by name when one names it,
 * else the short digest) and environment, from the record sbx keeps, and
 * its network mode and allowlist from the settings users edit.  A bound
 * image that is gone or damaged, a revoked agent or settings a run would
 * refuse make the agent not ready (*ok = 0), each with its repair in
 * `problems`.
 */
static json_t *
agent_summary(int rootfd, int *ok, json_t *problems)
{
	struct sbx_error	 e;
	json_t			*res, *cfg = NULL, *list, *it, *img = json_null();
	const json_t		*v;
	const char		*name = NULL;
	char			 rel[128], digest[SBX_DIGEST_HEX + 1];
	char			 net[16] = "none";
	size_t			 i, nallow = 0;
	int			 r, env = 0, fd;

	*ok = 1;
	res = json_object();
	if (rootfd < 0)
		return res;
	SBX_LPATH(rel, SBX_L_AGENT_CONFIG, O.agent);
	if (sbx_config_load(rootfd, rel, &cfg, &e) == -1) {
		*ok = 0;
		json_array_append_new(problems, json_pack("{s:s,s:s,s:s,s:s}",
		    "path", rel, "state", "invalid", "message", e.message,
		    "repair", "correct it with `sbx config`"));
	}
	if ((v = json_object_get(cfg, "network")) != NULL &&
	    json_is_string(v))
		snprintf(net, sizeof(net), "%s", json_string_value(v));
	if ((v = json_object_get(cfg, "allowed_domains")) != NULL &&
	    json_is_array(v))
		nallow = json_array_size(v);
	r = sbx_imageref_of(rootfd, cfg, rel, O.agent, digest, &env, &e);
	json_decref(cfg);
	if (r == -1) {
		*ok = 0;
		json_array_append_new(problems, json_pack("{s:s,s:s,s:s,s:s}",
		    "path", "agents/", "state", "invalid", "message",
		    e.message, "repair", e.hint));
	} else if (r == 1) {
		list = sbx_imagestore_list(rootfd, &e);
		json_array_foreach(list, i, it)
			if (strcmp(json_string_value(json_object_get(it,
			    "digest")), digest) == 0)
				name = json_string_value(json_array_get(
				    json_object_get(it, "names"), 0));
		img = json_pack("{s:s,s:s?}", "digest", digest, "name", name);
		json_decref(list);
		if ((fd = sbx_imageref_open(rootfd, digest, &e)) >= 0) {
			close(fd);
			json_object_set_new(img, "present", json_true());
		} else {
			*ok = 0;
			json_object_set_new(img, "present", json_false());
			json_array_append_new(problems, json_pack(
			    "{s:s+,s:s,s:s,s:s}", "path", "images/", digest,
			    "state", e.reason, "message", e.message, "repair",
			    e.hint));
		}
	}
	if ((r = sbx_provision_revoked(rootfd, O.agent, &e)) != 0) {
		char	 hint[128];

		*ok = 0;
		snprintf(hint, sizeof(hint), "restore it with `sbx provision "
		    "--agent %s`", O.agent);
		json_array_append_new(problems, json_pack("{s:s+++,s:s,s:s,"
		    "s:s}", "path", "agents/", O.agent, "/",
		    SBX_REVOKED_MARKER, "state", "unprovisioned", "message",
		    "the agent was unprovisioned (its token is revoked)",
		    "repair", hint));
	}
	json_object_set_new(res, "image", img);
	json_object_set_new(res, "env", json_boolean(r >= 0 && env));
	json_object_set_new(res, "network", json_string(net));
	json_object_set_new(res, "allowed_domains", json_integer(
	    (json_int_t)nallow));
	json_object_set_new(res, "unprovisioned", json_boolean(r == 1));
	return res;
}

/* The agent's settings, and the repair of each problem found in them. */
static void
print_summary(json_t *sum, json_t *problems)
{
	const json_t	*img = json_object_get(sum, "image");
	json_t		*it;
	const char	*name, *digest, *rep;
	size_t		 i;

	if (json_object_size(sum) == 0)
		return;
	name = json_string_value(json_object_get(img, "name"));
	digest = json_string_value(json_object_get(img, "digest"));
	if (digest == NULL)
		printf("  image          none (host system directories)\n");
	else
		printf("  image          %s%s%.12s%s%s\n", name ? name : "",
		    name ? " (" : "", digest, name ? ")" : "",
		    json_is_true(json_object_get(img, "present")) ? "" :
		    " MISSING");
	printf("  env            %s\n", json_is_true(json_object_get(sum,
	    "env")) ? "yes (its own copy of the image)" : "no");
	print_line(stdout, "  network        ", json_string_value(
	    json_object_get(sum, "network")), "");
	printf("  allowlist      %lld domain%s\n",
	    json_integer_value(json_object_get(sum, "allowed_domains")),
	    json_integer_value(json_object_get(sum, "allowed_domains")) == 1 ?
	    "" : "s");
	json_array_foreach(problems, i, it) {
		if ((rep = json_string_value(json_object_get(it, "repair"))) ==
		    NULL)
			continue;
		print_line(stdout, "  [problem]      ", json_string_value(
		    json_object_get(it, "message")), "");
		print_line(stdout, "                 repair: ", rep, "");
	}
}

/* What sbx install recorded for the agent: {apt: N, npm: N, pip: N}, or
 * NULL when nothing was ever installed (or the record is unreadable). */
static json_t *
package_counts(int rootfd)
{
	struct sbx_error e;
	json_t		*m, *c, *v;
	const char	*k;
	char		 rel[128];
	int		 afd;

	snprintf(rel, sizeof(rel), "agents/%s", O.agent);
	if (rootfd < 0 ||
	    (afd = sbx_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY, &e)) ==
		-1)
		return NULL;
	if (faccessat(afd, SBX_INSTALL_MANIFEST, F_OK, AT_SYMLINK_NOFOLLOW) ==
		-1 ||
	    (m = sbx_install_manifest_read(afd, &e)) == NULL) {
		close(afd);
		return NULL;
	}
	close(afd);
	c = json_object();
	json_object_foreach (m, k, v)
		json_object_set_new(c, k,
		    json_integer((json_int_t)json_array_size(v)));
	json_decref(m);
	return c;
}

static int
do_status(void)
{
	struct sbx_error	 e;
	json_t			*items, *warnings, *it, *res;
	json_t			*present, *missing, *wrong_mode, *problems;
	json_t			*summary, *pkgs;
	const char		*state, *path;
	size_t			 i;
	int			 rootfd, ready, agent_ok;

	rootfd = open_root_existing(1);
	warnings = json_array();
	if ((items = sbx_provision_status(rootfd, O.agent, &ready, warnings,
	    &e)) == NULL)
		fail(&e);
	present = json_array();
	missing = json_array();
	wrong_mode = json_array();
	problems = json_array();
	json_array_foreach(items, i, it) {
		state = json_string_value(json_object_get(it, "state"));
		path = json_string_value(json_object_get(it, "path"));
		if (strcmp(state, "present") == 0)
			json_array_append_new(present, json_string(path));
		else if (strcmp(state, "missing") == 0)
			json_array_append_new(missing, json_string(path));
		else if (strcmp(state, "wrong_mode") == 0)
			json_array_append_new(wrong_mode, json_string(path));
		else
			json_array_append_new(problems, json_pack("{s:s,s:s}",
			    "path", path, "state", state));
	}
	summary = agent_summary(rootfd, &agent_ok, problems);
	ready = ready && agent_ok;
	pkgs = package_counts(rootfd);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:b,s:b,s:o,s:o,s:o,s:o,s:o,s:o}",
		    "agent", O.agent, "root", root_json(), "exists",
		    rootfd >= 0, "ready", ready, "items", items, "present",
		    present, "missing", missing, "wrong_mode", wrong_mode,
		    "problems", problems, "settings", summary);
		if (pkgs != NULL)
			json_object_set_new(res, "packages", pkgs);
		emit(sbx_envelope_ok(tool, res, warnings));
		return ready ? 0 : SBX_EX_NEGATIVE;
	}
	if (!O.quiet) {
		print_line(stdout, "state root ", root.path, "");
		printf("agent %s\n", O.agent);
		json_array_foreach(items, i, it)
			print_item(it);
		print_summary(summary, problems);
		if (pkgs != NULL)
			printf("packages (sbx install): apt %lld, npm %lld, "
			       "pip %lld\n",
			    (long long)json_integer_value(
				json_object_get(pkgs, "apt")),
			    (long long)json_integer_value(
				json_object_get(pkgs, "npm")),
			    (long long)json_integer_value(
				json_object_get(pkgs, "pip")));
		print_warnings(warnings);
		if (ready)
			printf("ready\n");
		else
			printf("not ready: %zu missing, %zu with a wrong mode, "
			    "%zu other problems; `sbx provision` creates and "
			    "repairs what it can\n", json_array_size(missing),
			    json_array_size(wrong_mode),
			    json_array_size(problems));
	}
	json_decref(items);
	json_decref(warnings);
	json_decref(present);
	json_decref(missing);
	json_decref(wrong_mode);
	json_decref(problems);
	json_decref(summary);
	json_decref(pkgs);
	return ready ? 0 : SBX_EX_NEGATIVE;
}

/* ---- list --------------------------------------------------------------- */

static int
do_list(void)
{
	struct sbx_error	 e;
	json_t			*agents, *a;
	size_t			 i;
	int			 rootfd;

	rootfd = open_root_existing(0);
	if ((agents = sbx_provision_list(rootfd, &e)) == NULL)
		fail(&e);
	if (O.json) {
		emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o}", "agents",
		    agents, "root", root_json()), NULL));
		return 0;
	}
	if (!O.quiet) {
		printf("%-32s  %-5s  %-4s  %s\n", "AGENT", "TOKEN", "HOME",
		    "CONFIG");
		json_array_foreach(agents, i, a) {
			printf("%-32s  %-5s  %-4s  %s\n", json_string_value(
			    json_object_get(a, "agent")),
			    json_is_true(json_object_get(a, "token")) ? "yes" :
			    "no", json_is_true(json_object_get(a, "home")) ?
			    "yes" : "no", json_is_true(json_object_get(a,
			    "config")) ? "yes" : "no");
		}
	}
	json_decref(agents);
	return 0;
}

/* ---- unprovision, reset, remove ----------------------------------------- */

static int
do_unprovision(void)
{
	struct sbx_error	 e;
	json_t			*removed, *warnings, *res;
	char			 home[64];
	int			 rootfd;

	rootfd = open_root_existing(0);
	removed = json_array();
	warnings = json_array();
	/* No state root: nothing to revoke, and nothing to create. */
	if (rootfd >= 0 && sbx_provision_unprovision(rootfd, O.agent, removed,
	    warnings, &e) == -1)
		fail(&e);
	SBX_LPATH(home, SBX_L_AGENT_HOME, O.agent);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:o,s:[s]}", "agent", O.agent, "root",
		    root_json(), "removed", removed, "kept", home);
		emit(sbx_envelope_ok(tool, res, warnings));
		return 0;
	}
	if (!O.quiet) {
		print_warnings(warnings);
		print_list("removed   ", removed);
		printf("agent %s unprovisioned: %zu removed; home %s kept\n",
		    O.agent, json_array_size(removed), home);
	}
	json_decref(removed);
	json_decref(warnings);
	return 0;
}

static int
do_reset(void)
{
	struct sbx_error	 e;
	json_t			*removed;
	int			 rootfd;

	rootfd = open_root_existing(0);
	removed = json_array();
	if (rootfd >= 0 && sbx_provision_reset(rootfd, removed, &e) == -1)
		fail(&e);
	if (O.json) {
		emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o}", "root",
		    root_json(), "removed", removed), NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", removed);
		printf("reset %s: %zu removed from envs/ and cache/; homes, "
		    "images and settings kept\n", root.path,
		    json_array_size(removed));
	}
	json_decref(removed);
	return 0;
}

static int
do_remove(void)
{
	struct sbx_error	 e;
	json_t			*targets, *removed, *v;
	size_t			 i;
	int			 rootfd;

	rootfd = open_root_existing(0);
	if (!O.yes) {
		targets = sbx_provision_remove_targets(rootfd, &e);
		if (targets == NULL)
			fail(&e);
		sbx_error_set(&e, SBX_K_REJECTED, "yes",
		    "confirmation_required", "refusing to remove %zu "
		    "entr%s of the state root %s without --yes",
		    json_array_size(targets), json_array_size(targets) == 1 ?
		    "y" : "ies", root.path);
		sbx_error_hint(&e, "run `sbx provision remove --yes`; "
		    "workspace/ (the agents' homes) is kept");
		if (!O.json)
			json_array_foreach(targets, i, v)
				print_line(stderr, PROG ": would remove ",
				    json_string_value(v), "");
		fail_extra(&e, SBX_EX_NEGATIVE, json_pack("{s:o,s:o}",
		    "would_remove", targets, "root", root_json()));
	}
	removed = json_array();
	if (rootfd >= 0 && sbx_provision_remove(rootfd, removed, &e) == -1)
		fail(&e);
	if (O.json) {
		emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o,s:[s]}", "root",
		    root_json(), "removed", removed, "kept", "workspace"),
		    NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", removed);
		printf("removed %zu entries of %s; workspace/ kept\n",
		    json_array_size(removed), root.path);
	}
	json_decref(removed);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct sbx_error	 e;
	const char		*s = NULL;
	int			 rc;

	/* Before anything is opened: see sbx_fd_sanitize_std(). */
	if (sbx_fd_sanitize_std() == -1)
		return SBX_EX_OSERR;
	sbx_cmd_finish_init(PROG);
	if (sbx_cmd_complete(&table, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	if (O.sub != NULL) {
		s = O.sub;
		if (strcmp(s, "image") == 0 || strcmp(s, "images") == 0)
			return do_image();
		if (strcmp(s, "list") != 0 && strcmp(s, "status") != 0 &&
		    strcmp(s, "unprovision") != 0 && strcmp(s, "reset") != 0 &&
		    strcmp(s, "remove") != 0)
			usage("unknown subcommand");
		snprintf(tool_buf, sizeof(tool_buf), "provision.%s", s);
		tool = tool_buf;
	}
	/* Each option goes only with some (sub)commands: reset and remove,
	 * which act on the whole root, take no --agent (an --agent there
	 * would suggest they act on one agent only; see unprovision). */
	{
		char	*w[1] = { (char *)s };

		check_options(s == NULL ? S_MAIN : sbx_opts_sub_find(&table,
		    1, w, NULL));
	}
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
	if (sbx_agent_valid(O.agent, "agent", &e) == -1)
		fail(&e);
	if (sbx_root_resolve(O.home, &root, &e) == -1)
		fail(&e);

	if (s == NULL)
		return do_provision();
	if (strcmp(s, "status") == 0)
		return do_status();
	if (strcmp(s, "list") == 0)
		return do_list();
	if (strcmp(s, "unprovision") == 0)
		return do_unprovision();
	if (strcmp(s, "reset") == 0)
		return do_reset();
	return do_remove();
}
