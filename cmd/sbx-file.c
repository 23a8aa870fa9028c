/*
 * sbx-file: bounded file tools on an agent's home (agentfs.c): read,
 * search (ripgrep inside the sandbox, filesearch.c), write, edit,
 * list.  See sbx-file(1).  As root, everything but search runs as the
 * sandbox's uid once the home is open (sbx_identity_become).  The text
 * renderings of a listing and a search are cmd/file-text.c.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agentfs.h"
#include "agentns.h"
#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "file-int.h"
#include "filesearch.h"
#include "fsutil.h"
#include "idalloc.h"
#include "layout.h"
#include "identity.h"
#include "names.h"
#include "opts.h"
#include "root.h"
#include "scrub.h"
#include "sandbox.h"
#include "secret.h"
#include "utf8.h"

static const char usage_text[] =
    "usage: sbx file read PATH [--start-line N] [--line-count N]\n"
    "                [--tail-lines N] [--max-chars N] [--agent A] [--home DIR]\n"
    "                [--json] [-q]\n"
    "       sbx file search PATTERN [--path P] [--glob G]... [--files]\n"
    "                [--context N] [--max N] [--agent A] [--home DIR] [--json]\n"
    "                [-q]\n"
    "       sbx file write PATH [--create-dirs] [--mode MODE] [--agent A]\n"
    "                [--home DIR] [--json] [-q]\n"
    "       sbx file edit PATH --old TEXT --new TEXT [--all] [--agent A]\n"
    "                [--home DIR] [--json] [-q]\n"
    "       sbx file list PATH [--depth N] [--agent A] [--home DIR] [--json]\n"
    "                [-q]\n";

static const char help_text[] =
    "\n"
    "Bounded file tools on an agent's home, for agent frameworks.  PATH is\n"
    "relative to the home or absolute under /workspace/agents/A; `..`, empty\n"
    "components, NUL and control characters are refused, and a symbolic link\n"
    "that leads out of the home is refused by the kernel (openat2).\n"
    "\n"
    "  read PATH     a regular file's text (at most 15,000 characters unless\n"
    "                --max-chars; a directory: its listing)\n"
    "  search PAT    ripgrep inside the agent's sandbox; matches with context\n"
    "  write PATH    standard input replaces PATH atomically (at most 16 MiB)\n"
    "  edit PATH     replace the exact text --old by --new (unique unless\n"
    "                --all)\n"
    "  list PATH     the entries of a directory, --depth levels down\n"
    "\n";

enum {
	OPT_HOME = 256,
	OPT_VERSION,
	OPT_START,
	OPT_COUNT,
	OPT_TAIL,
	OPT_CHARS,
	OPT_PATH,
	OPT_GLOB,
	OPT_FILES,
	OPT_CONTEXT,
	OPT_MAX,
	OPT_DIRS,
	OPT_MODE,
	OPT_OLD,
	OPT_NEW,
	OPT_ALL,
	OPT_DEPTH
};

enum {
	S_READ = 1,
	S_SEARCH = 2,
	S_WRITE = 4,
	S_EDIT = 8,
	S_LIST = 16,
	S_ALL = 31,
};

static const struct sbx_opts_sub subs[] = {
	{ "read", S_READ, "@text" },
	{ "search", S_SEARCH, "@text" },
	{ "write", S_WRITE, "@text" },
	{ "edit", S_EDIT, "@text" },
	{ "list", S_LIST, "@cwd" },
};

static const struct sbx_opt rows[] = {
	{ OPT_START, "start-line", 0, SBX_OPT_REQ, "N", NULL,
	    "read: the first line shown (1-based)", S_READ, 0 },
	{ OPT_COUNT, "line-count", 0, SBX_OPT_REQ, "N", NULL,
	    "read: at most N lines", S_READ, 0 },
	{ OPT_TAIL, "tail-lines", 0, SBX_OPT_REQ, "N", NULL,
	    "read: the last N lines", S_READ, 0 },
	{ OPT_CHARS, "max-chars", 0, SBX_OPT_REQ, "N", NULL,
	    "read: at most N characters (default 15000)", S_READ, 0 },
	{ OPT_PATH, "path", 0, SBX_OPT_REQ, "P", "@cwd",
	    "search: below P only (default: the home)", S_SEARCH, 0 },
	{ OPT_GLOB, "glob", 0, SBX_OPT_REQ, "G", NULL,
	    "search: files matching G only (!G: not; repeatable)", S_SEARCH,
	    0 },
	{ OPT_FILES, "files", 0, SBX_OPT_NONE, NULL, NULL,
	    "search: the files that would be searched", S_SEARCH, 0 },
	{ OPT_CONTEXT, "context", 0, SBX_OPT_REQ, "N", NULL,
	    "search: N lines before and after each match", S_SEARCH, 0 },
	{ OPT_MAX, "max", 0, SBX_OPT_REQ, "N", NULL,
	    "search: at most N results (default 100, at most 500)", S_SEARCH,
	    0 },
	{ OPT_DIRS, "create-dirs", 0, SBX_OPT_NONE, NULL, NULL,
	    "write: create missing directories", S_WRITE, 0 },
	{ OPT_MODE, "mode", 0, SBX_OPT_REQ, "MODE", NULL,
	    "write: octal mode (default: kept, new 0644)", S_WRITE, 0 },
	{ OPT_OLD, "old", 0, SBX_OPT_REQ, "TEXT", NULL,
	    "edit: the exact text to replace", S_EDIT, 0 },
	{ OPT_NEW, "new", 0, SBX_OPT_REQ, "TEXT", NULL,
	    "edit: what replaces it", S_EDIT, 0 },
	{ OPT_ALL, "all", 0, SBX_OPT_NONE, NULL, NULL,
	    "edit: replace every occurrence", S_EDIT, 0 },
	{ OPT_DEPTH, "depth", 0, SBX_OPT_REQ, "N", NULL,
	    "list: N levels (default 1, at most 16)", S_LIST, 0 },
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "the agent (default: $SBX_AGENT or \"default\")", S_ALL, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME,\n"
	    "$XDG_DATA_HOME/sbx, ~/.local/share/sbx)",
	    S_ALL, 0 },
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL, "no warnings on stderr",
	    S_ALL, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_ALL),
};

static const struct sbx_opts table = { PROG, "sbx file", rows, SBX_OPTS_N(rows),
	subs, SBX_OPTS_N(subs), 0, NULL, 25, 0 };

static struct sbx_opts_getopt g;
static struct sbx_opts_seen   seen;

static struct {
	const char     *agent, *home, *path, *mode, *old, *new;
	const char     *start, *count, *tail, *chars, *context, *max, *depth;
	struct sbx_strv globs;
	int		json, quiet, dirs, files, all;
	char	      **argv; /* the operands */
	int		nargs;
} O;

static char		  tool[32] = "file";
static struct sbx_root	  root = SBX_ROOT_INIT;
static struct sbx_agentfs fs = SBX_AGENTFS_INIT;
static struct sbx_scrub	 *scrub; /* the agent's secrets, or NULL */

/* The options every program has (cmd/common.c). */
static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, S_ALL, &O.json, &O.quiet, NULL, NULL, .tool = tool };

static void
parse_args(int argc, char *argv[])
{
	int	       ch;

	if (sbx_opts_getopt(&table, ~0u, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	/* Decided before getopt, skipping option arguments: an --old TEXT
	 * that reads "--json" is not the flag. */
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	opterr = 0;	/* a refused option: sbx_cmd_usage_exit() */
	while ((ch = sbx_cmd_getopt(argc, argv, &g, &seen)) != -1) {
		switch (ch) {
		case OPT_START: O.start = optarg; break;
		case OPT_COUNT: O.count = optarg; break;
		case OPT_TAIL: O.tail = optarg; break;
		case OPT_CHARS: O.chars = optarg; break;
		case OPT_PATH: O.path = optarg; break;
		case OPT_GLOB:
			if (sbx_strv_push(&O.globs, optarg) == -1)
				exit(SBX_EX_OSERR);
			break;
		case OPT_FILES: O.files = 1; break;
		case OPT_CONTEXT: O.context = optarg; break;
		case OPT_MAX: O.max = optarg; break;
		case OPT_DIRS: O.dirs = 1; break;
		case OPT_MODE: O.mode = optarg; break;
		case OPT_OLD: O.old = optarg; break;
		case OPT_NEW: O.new = optarg; break;
		case OPT_ALL: O.all = 1; break;
		case OPT_DEPTH: O.depth = optarg; break;
		case 'a': O.agent = optarg; break;
		case OPT_HOME: O.home = optarg; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	O.nargs = argc - optind;
	O.argv = argv + optind;
}

/* A number option: absent leaves *v; else 0 < N <= max (0 allowed with
 * zero_ok). */
static void
number(const char *s, const char *field, unsigned long long max, int zero_ok,
    unsigned long *v)
{
	struct sbx_error   e;
	unsigned long long n;

	if (s == NULL)
		return;
	if (sbx_cli_parse_uint(s, max, &n) == -1 || (n == 0 && !zero_ok)) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, field, "out_of_range",
		    "argument `%s` must be a number from %d to %llu", field,
		    zero_ok ? 0 : 1, max);
		sbx_cmd_die(&e);
	}
	*v = (unsigned long)n;
}

/* The operand as a path relative to the home. */
static void
home_path(const char *p, char *rel, size_t relsz)
{
	struct sbx_error e;

	if (sbx_agentfs_path(fs.home, p, strlen(p), rel, relsz, &e) == -1)
		sbx_cmd_die(&e);
}

/*
 * The agent's secrets, as patterns: what sbx file returns is scrubbed as
 * exec's output is, or a value the sandbox never showed (exec scrubs its
 * output) would come back through read or search (a line ripgrep's JSON
 * escaped slips past exec's filter).  Loaded as root, before becoming
 * the sandbox's uid: the key is root's.
 */
static void
load_scrub(void)
{
	struct sbx_error e;

	if (sbx_secret_scrubber(root.fd, O.agent, &scrub, &e) == -1)
		sbx_cmd_die(&e);
}

/*
 * Per-agent uids of a plain user's subordinate range: the home is the
 * agent's id's, 0700.  Read, write, edit and list become that id, in its
 * namespace (agentns.c), before the home is opened: as root's
 * sbx_identity_become below, the kernel then checks each access as it
 * would for the agent.  The secrets (the scrubber) are read before.
 */
static int joined;	/* join_agent became the agent's id */

static void
join_agent(void)
{
	struct sbx_agentid a;
	struct sbx_error   e;
	uid_t		   ju;
	gid_t		   jg;
	char		   rel[SBX_LAYOUT_PATH_MAX];
	const char	  *rels[1] = { rel };
	int		   pa, fd, hfd;

	if (geteuid() == 0)
		return;
	if (sbx_idalloc_agent(root.fd, O.agent, &ju, &jg, &pa, &a, &e) == -1)
		sbx_cmd_die(&e);
	if (!pa || !a.subordinate)
		return;
	SBX_LPATH(rel, SBX_L_AGENT_HOME, O.agent);
	/* The home opened as the namespace's 0 (the caller, with its
	 * capabilities over the agent's id): the agent's own uid could not
	 * open the 0711 directories on the way. */
	if ((fd = sbx_agentns_run(&a, &e)) == -1 ||
	    sbx_agentns_open(fd, root.fd, rels, 1, a.uid, a.gid, &hfd,
		&e) == -1)
		sbx_cmd_die(&e);
	fs.home_fd = hfd;
	snprintf(fs.home, sizeof(fs.home), "%s/%s", SBX_IN_AGENTS, O.agent);
	if (sbx_agentns_join(fd, a.uid, a.gid) == -1) {
		sbx_error_sys(&e, "userns_failed", "cannot become uid %lu of "
		    "agent %s", a.uid, O.agent);
		sbx_cmd_die(&e);
	}
	close(fd);
	joined = 1;
}

/* Every string of a result, scrubbed. */
static void
clean(json_t *res)
{
	if (scrub != NULL)
		sbx_scrub_json(scrub, res);
}

static void
done(json_t *res, const char *text)
{
	struct sbx_buf l = SBX_BUF_INIT;

	if (O.json) {
		json_object_set_new(res, "home", json_string(fs.home));
		sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
		return;
	}
	if (text != NULL && !O.quiet) {
		sbx_utf8_escape_line(&l, text, strlen(text));
		printf("%s\n", l.p != NULL ? l.p : "");
		sbx_buf_release(&l);
	}
	json_decref(res);
}

static int
do_read(const char *rel)
{
	struct sbx_agentfs_readopt o = { 0, 0, 0, 0 };
	struct sbx_error	   e;
	json_t			  *res;
	const char		  *c;

	number(O.start, "start_line", 1UL << 31, 0, &o.start_line);
	number(O.count, "line_count", 1UL << 31, 0, &o.line_count);
	number(O.tail, "tail_lines", 1UL << 31, 0, &o.tail_lines);
	number(O.chars, "max_chars", SBX_AGENTFS_CHARS_MAX, 0, &o.max_chars);
	if (O.tail != NULL && (O.start != NULL || O.count != NULL))
		sbx_cmd_usage_why(
		    "--tail-lines excludes --start-line and --line-count");
	if (sbx_agentfs_read(&fs, rel, &o, &res, &e) == -1)
		sbx_cmd_die(&e);
	clean(res);
	if (O.json) {
		done(res, NULL);
		return 0;
	}
	if (strcmp(json_string_value(json_object_get(res, "type")),
		"directory") == 0)
		file_print_listing(res, O.quiet);
	else {
		c = json_string_value(json_object_get(res, "content"));
		fputs(c, stdout);
		if (json_is_true(json_object_get(res, "truncated")) && !O.quiet)
			fprintf(stderr,
			    "%s: warning: cut at %lu characters; "
			    "--start-line %lld goes on\n",
			    PROG, o.max_chars ? o.max_chars : SBX_AGENTFS_CHARS,
			    (long long)json_integer_value(
				json_object_get(res, "next_start_line")));
	}
	json_decref(res);
	return 0;
}

static int
do_list(const char *rel)
{
	struct sbx_error e;
	unsigned long	 depth = 1;
	json_t		*res;

	number(O.depth, "depth", SBX_AGENTFS_DEPTH_MAX, 0, &depth);
	if (sbx_agentfs_list(&fs, rel, (int)depth, &res, &e) == -1)
		sbx_cmd_die(&e);
	clean(res);
	if (!O.json)
		file_print_listing(res, O.quiet);
	done(res, NULL);
	return 0;
}

/* Standard input, at most SBX_AGENTFS_WRITE_MAX bytes (one more is
 * refused, never cut). */
static void
read_stdin(struct sbx_buf *b)
{
	struct sbx_error e;
	char		 chunk[65536];
	ssize_t		 k;

	for (;;) {
		k = read(0, chunk, sizeof(chunk));
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1) {
			sbx_error_sys(&e, "read_failed",
			    "reading standard "
			    "input");
			sbx_cmd_die(&e);
		}
		if (k == 0)
			break;
		if (b->len + (size_t)k > SBX_AGENTFS_WRITE_MAX) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "content",
			    "too_large",
			    "the content on standard input is "
			    "more than %u bytes",
			    SBX_AGENTFS_WRITE_MAX);
			sbx_cmd_die(&e);
		}
		if (sbx_buf_append(b, chunk, (size_t)k) == -1)
			exit(SBX_EX_OSERR);
	}
}

static int
do_write(const char *rel)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e;
	char		*end, text[PATH_MAX + 64];
	long		 mode = -1;
	json_t		*res;

	if (O.mode != NULL) {
		errno = 0;
		mode = strtol(O.mode, &end, 8);
		if (errno != 0 || end == O.mode || *end != '\0' ||
		    *O.mode == '-' || *O.mode == '+' || mode > 07777) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "mode",
			    "bad_mode",
			    "argument `mode` must be an octal "
			    "mode such as 0644");
			sbx_cmd_die(&e);
		}
	}
	read_stdin(&b);
	if (sbx_agentfs_write(&fs, rel, b.p != NULL ? b.p : "", b.len, O.dirs,
		(int)mode, &res, &e) == -1)
		sbx_cmd_die(&e);
	snprintf(text, sizeof(text), "wrote %zu bytes to %s", b.len, rel);
	sbx_buf_release(&b);
	done(res, text);
	return 0;
}

static int
do_edit(const char *rel)
{
	struct sbx_error e;
	char		 text[PATH_MAX + 64];
	json_t		*res, *extra;

	if (O.old == NULL || O.new == NULL)
		sbx_cmd_usage_why("edit needs --old TEXT and --new TEXT");
	if (sbx_agentfs_edit(&fs, rel, O.old, strlen(O.old), O.new,
		strlen(O.new), O.all, &res, &extra, &e) == -1)
		sbx_cmd_die_extra(&e, extra, -1);
	snprintf(text, sizeof(text), "replaced %lld occurrence%s in %s",
	    (long long)json_integer_value(json_object_get(res, "replacements")),
	    json_integer_value(json_object_get(res, "replacements")) == 1 ? "" :
									    "s",
	    rel);
	done(res, text);
	return 0;
}

static int
do_search(const char *pattern)
{
	struct sbx_filesearch q;
	struct sbx_error      e;
	unsigned long	      ctx = 0, max = SBX_FILESEARCH_MAX_DEFAULT;
	char		      rel[PATH_MAX];
	json_t		     *res;

	number(O.context, "context", SBX_FILESEARCH_CONTEXT_MAX, 1, &ctx);
	number(O.max, "max", SBX_FILESEARCH_MAX, 0, &max);
	home_path(O.path != NULL ? O.path : ".", rel, sizeof(rel));
	memset(&q, 0, sizeof(q));
	q.agent = O.agent;
	q.home = root.path;
	q.pattern = pattern;
	q.path = rel;
	q.globs = (const char *const *)O.globs.v;
	q.nglobs = O.globs.n;
	q.files = O.files;
	q.context = (unsigned)ctx;
	q.max = (unsigned)max;
	if (sbx_filesearch_run(&q, &res, &e) == -1)
		sbx_cmd_die(&e);
	clean(res);
	if (!O.json)
		file_print_search(res, O.quiet);
	done(res, NULL);
	return 0;
}

int
main(int argc, char *argv[])
{
	struct sbx_error e;
	char		 rel[PATH_MAX];
	unsigned	 bit;
	uid_t		 uid;
	gid_t		 gid;
	int		 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	if (O.nargs < 1)
		sbx_cmd_usage_why("a subcommand is needed");
	if (strlen(O.argv[0]) < 20)
		snprintf(tool, sizeof(tool), "file.%s", O.argv[0]);
	if ((bit = sbx_opts_sub_find(&table, 1, O.argv, NULL)) == 0)
		sbx_cmd_usage_why("unknown subcommand");
	if (sbx_opts_check(&table, &seen, bit, &e) == -1) {
		sbx_cmd_report(PROG, tool, O.json, &e, NULL, sbx_cmd_emit);
		fputs(usage_text, stderr);
		exit(SBX_EX_USAGE);
	}
	if (O.nargs != 2)
		sbx_cmd_usage_why(bit == S_SEARCH ? "search takes one PATTERN" :
					"this subcommand takes one PATH");
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") :
		    "default";
	if (sbx_names_agent_valid(O.agent, "agent", &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1)
		sbx_cmd_die(&e);
	load_scrub();
	if (bit != S_SEARCH)
		join_agent();
	if (fs.home_fd < 0 && sbx_agentfs_open(&fs, root.fd, O.agent, &e) ==
	    -1)
		sbx_cmd_die(&e);
	if (bit == S_SEARCH)
		return do_search(O.argv[1]);
	/*
	 * From here on we are the sandbox's uid, not root: the kernel then
	 * checks every access as it would for the agent (a 0444 file, a
	 * 0555 directory), what we create is the agent's, and whatever the
	 * agent plants in its home between two of our steps can reach only
	 * what the agent reaches anyway.
	 */
	if (!joined && (sbx_idalloc_owner(root.fd, O.agent, &uid, &gid,
	    &e) == -1 || sbx_identity_become(uid, gid, &e) == -1))
		sbx_cmd_die(&e);
	home_path(O.argv[1], rel, sizeof(rel));
	switch (bit) {
	case S_READ: return do_read(rel);
	case S_WRITE: return do_write(rel);
	case S_EDIT: return do_edit(rel);
	default: return do_list(rel);
	}
}
