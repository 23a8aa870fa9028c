/*
 * sbx-host: the client of the host bridge, inside the sandbox.
 *
 *	sbx-host [--json] [--plugin ID] COMMAND [ARG...]
 *
 * Each command is one HTTP/1.1 request on the unix socket sbx-init serves
 * (/run/sbx/bridge.sock, or $SBX_BRIDGE_SOCK) with the agent's token
 * ($SBX_BRIDGE_TOKEN, else /run/sbx/token); the bridge's JSON answer goes
 * to stdout as it is, and the HTTP status becomes an exit code of
 * DESIGN.md section 5.  See sbx-host(1).
 *
 * Statically linked and dependent on nothing but the C library: it is
 * bound into sandboxes whose root file system is an image, which carries
 * no library of ours.  So it includes nothing of lib/ (jansson and the
 * others are not static-friendly), and builds its small JSON bodies by
 * hand, escaping every string it puts in them.
 *
 * The command table below is the one place a command is added: its words,
 * its operands, and the function that turns them into a request.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host-connect.h"
#include "host-int.h"

/* ---- the commands ------------------------------------------------------ */

/* Options a command takes after its words: --name VALUE or --flag. */
static const char *
opt(int *argc, char **argv, const char *name, int flag)
{
	int i, j;

	for (i = 0; i < *argc; i++) {
		const char *v;

		if (strcmp(argv[i], "--") == 0)
			return NULL;
		if (strcmp(argv[i], name) != 0)
			continue;
		if (!flag && i + 1 >= *argc)
			die(EX_USAGE, "option %s needs a value", name);
		v = flag ? argv[i] : argv[i + 1];
		for (j = i; j + (flag ? 1 : 2) <= *argc; j++)
			argv[j] = argv[j + (flag ? 1 : 2)];
		*argc -= flag ? 1 : 2;
		return v;
	}
	return NULL;
}

static void
c_whoami(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/whoami");
}

static void
c_secret_get(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/secrets/");
	s_seg(&r->path, argv[0]);
}

static void
c_config(struct req *r, const char *method, const char *key)
{
	r->method = method;
	s_puts(&r->path, "/v1/config/");
	s_seg(&r->path, key);
}

static void
c_config_get(struct req *r, int argc, char **argv)
{
	c_config(r, "GET", argv[0]);
}

static void
c_config_set(struct req *r, int argc, char **argv)
{
	c_config(r, "PUT", argv[0]);
	if (argc > 1)
		s_value(&r->body, argv[1]);
	else
		s_stdin(&r->body);
}

static void
c_config_rm(struct req *r, int argc, char **argv)
{
	c_config(r, "DELETE", argv[0]);
}

/* POST path {"key": argv[0], "data": argv[1] if given}. */
static void
post_with_data(struct req *r, const char *path, const char *key, int argc,
    char **argv)
{
	r->method = "POST";
	s_puts(&r->path, path);
	s_puts(&r->body, "{\"");
	s_puts(&r->body, key);
	s_puts(&r->body, "\":");
	s_json(&r->body, argv[0]);
	if (argc > 1) {
		s_puts(&r->body, ",\"data\":");
		s_value(&r->body, argv[1]);
	}
	s_puts(&r->body, "}");
}

static void
c_events_emit(struct req *r, int argc, char **argv)
{
	post_with_data(r, "/v1/events", "type", argc, argv);
}

static void
c_events_list(struct req *r, int argc, char **argv)
{
	const char *since, *limit;

	since = opt(&argc, argv, "--since", 0);
	limit = opt(&argc, argv, "--limit", 0);
	if (argc != 0)
		die(EX_USAGE, "usage: events list [--since ID] [--limit N]");
	r->method = "GET";
	s_puts(&r->path, "/v1/events?since=");
	s_seg(&r->path, since != NULL ? since : "0");
	if (limit != NULL) {
		s_puts(&r->path, "&limit=");
		s_seg(&r->path, limit);
	}
}

static void
c_memory_store(struct req *r, int argc, char **argv)
{
	const char *tags, *sal;

	tags = opt(&argc, argv, "--tags", 0);
	sal = opt(&argc, argv, "--salience", 0);
	if (argc != 1)
		die(EX_USAGE,
		    "usage: memory store TEXT [--tags A,B] "
		    "[--salience X]");
	r->method = "POST";
	s_puts(&r->path, "/v1/memory");
	s_puts(&r->body, "{\"text\":");
	s_json(&r->body, argv[0]);
	if (tags != NULL) {
		char *t, *copy, *save = NULL;
		int   first = 1;

		if ((copy = strdup(tags)) == NULL)
			die(EX_OSERR, "out of memory");
		s_puts(&r->body, ",\"tags\":[");
		for (t = strtok_r(copy, ",", &save); t != NULL;
		     t = strtok_r(NULL, ",", &save)) {
			if (!first)
				s_puts(&r->body, ",");
			s_json(&r->body, t);
			first = 0;
		}
		s_puts(&r->body, "]");
		free(copy);
	}
	if (sal != NULL) {
		char *end;

		(void)strtod(sal, &end);
		if (*sal == '\0' || *end != '\0')
			die(EX_USAGE, "--salience needs a number");
		s_puts(&r->body, ",\"salience\":");
		s_puts(&r->body, sal);
	}
	s_puts(&r->body, "}");
}

static void
c_memory_query(struct req *r, int argc, char **argv)
{
	const char *limit;

	limit = opt(&argc, argv, "--limit", 0);
	if (argc != 1)
		die(EX_USAGE, "usage: memory query TEXT [--limit N]");
	r->method = "POST";
	s_puts(&r->path, "/v1/memory/query");
	s_puts(&r->body, "{\"text\":");
	s_json(&r->body, argv[0]);
	if (limit != NULL) {
		if (strspn(limit, "0123456789") != strlen(limit) ||
		    *limit == '\0' || strlen(limit) > 6)
			die(EX_USAGE, "--limit needs a number");
		s_puts(&r->body, ",\"limit\":");
		s_puts(&r->body, limit);
	}
	s_puts(&r->body, "}");
}

static void
c_inference_chat(struct req *r, int argc, char **argv)
{
	const char *model;
	int	    stream;

	model = opt(&argc, argv, "-m", 0);
	if (model == NULL)
		model = opt(&argc, argv, "--model", 0);
	stream = opt(&argc, argv, "--stream", 1) != NULL;
	if (model == NULL || argc != 0)
		die(EX_USAGE,
		    "usage: inference chat -m MODEL [--stream] "
		    "< messages.json");
	r->method = "POST";
	r->stream = stream;
	s_puts(&r->path, "/v1/inference/chat");
	s_puts(&r->body, "{\"model\":");
	s_json(&r->body, model);
	s_puts(&r->body, stream ? ",\"stream\":true" : ",\"stream\":false");
	s_puts(&r->body, ",\"messages\":");
	{
		struct str in = { 0 };

		s_stdin(&in);
		if (in.len == 0)
			die(EX_USAGE,
			    "inference chat reads the messages (a "
			    "JSON array) on standard input");
		s_add(&r->body, in.p, in.len);
		free(in.p);
	}
	s_puts(&r->body, "}");
}

static void
c_dispatch(struct req *r, int argc, char **argv)
{
	post_with_data(r, "/v1/dispatch", "task", argc, argv);
}

static void
c_dispatch_get(struct req *r, int argc, char **argv)
{
	r->method = "GET";
	s_puts(&r->path, "/v1/dispatch/");
	s_seg(&r->path, argv[0]);
}

static void
c_log(struct req *r, int argc, char **argv)
{
	r->method = "POST";
	s_puts(&r->path, "/v1/log");
	s_puts(&r->body, "{\"level\":");
	s_json(&r->body, argv[0]);
	s_puts(&r->body, ",\"message\":");
	s_json(&r->body, argv[1]);
	s_puts(&r->body, "}");
}

/* connect HOST PORT: not a bridge request, a tunnel through the proxy
 * (cmd/host-connect.c); it runs to the end here. */
static void
c_connect(struct req *r, int n, char **a)
{
	(void)r;
	(void)n;
	exit(sbx_host_connect(a[0], a[1]));
}

/*
 * The command table: one or two words, the operands (min, max; -1: the
 * builder checks them itself, after its options), the builder, and the
 * synopsis for usage.  Add a command here and in sbx-host(1).
 */
static const struct cmd {
	const char *w1, *w2;
	int	    min, max;
	void (*build)(struct req *, int, char **);
	const char *synopsis;
} cmds[] = {
	{ "whoami", NULL, 0, 0, c_whoami, "whoami" },
	{ "secret", "get", 1, 1, c_secret_get, "secret get NAME" },
	{ "config", "get", 1, 1, c_config_get, "config get KEY" },
	{ "config", "set", 1, 2, c_config_set, "config set KEY [JSON]" },
	{ "config", "rm", 1, 1, c_config_rm, "config rm KEY" },
	{ "events", "emit", 1, 2, c_events_emit, "events emit TYPE [JSON]" },
	{ "events", "list", -1, -1, c_events_list,
	    "events list [--since ID] [--limit N]" },
	{ "memory", "store", -1, -1, c_memory_store,
	    "memory store TEXT [--tags A,B] [--salience X]" },
	{ "memory", "query", -1, -1, c_memory_query,
	    "memory query TEXT [--limit N]" },
	{ "inference", "chat", -1, -1, c_inference_chat,
	    "inference chat -m MODEL [--stream] < messages.json" },
	{ "dispatch", "get", 1, 1, c_dispatch_get, "dispatch get ID" },
	{ "dispatch", NULL, 1, 2, c_dispatch, "dispatch TASK [JSON]" },
	{ "log", NULL, 2, 2, c_log, "log LEVEL MESSAGE" },
	{ "connect", NULL, 2, 2, c_connect, "connect HOST PORT" },
};

static void __attribute__((noreturn)) usage(int code)
{
	size_t i;
	FILE  *f = code == 0 ? stdout : stderr;

	fprintf(f, "usage: %s [--plugin ID] COMMAND [ARG...]\n", PROG);
	for (i = 0; i < sizeof(cmds) / sizeof(*cmds); i++)
		fprintf(f, "       %s %s\n", PROG, cmds[i].synopsis);
	exit(code);
}

/* The command named by argv: one word, or two for the grouped ones. */
static const struct cmd *
find_cmd(int argc, char **argv)
{
	size_t i;

	for (i = 0; i < sizeof(cmds) / sizeof(*cmds); i++) {
		if (strcmp(argv[0], cmds[i].w1) != 0)
			continue;
		if (cmds[i].w2 == NULL ||
		    (argc > 1 && strcmp(argv[1], cmds[i].w2) == 0))
			return &cmds[i];
	}
	return NULL;
}

int
main(int argc, char *argv[])
{
	const struct cmd *c;
	struct req	  r;
	int		  skip, nops;
	char		 *tok;

	signal(SIGPIPE, SIG_IGN);
	argc--;
	argv++;
	while (argc > 0 && argv[0][0] == '-') {
		if (strcmp(argv[0], "-h") == 0 ||
		    strcmp(argv[0], "--help") == 0)
			usage(0);
		if (strcmp(argv[0], "--version") == 0) {
			printf("%s %s\n", PROG, SBX_VERSION);
			return 0;
		}
		if (strcmp(argv[0], "--plugin") == 0 && argc > 1) {
			host_plugin = argv[1];
			argc -= 2;
			argv += 2;
			continue;
		}
		if (strcmp(argv[0], "--json") == 0) { /* always JSON */
			argc--;
			argv++;
			continue;
		}
		fprintf(stderr, "%s: unknown option %s\n", PROG, argv[0]);
		usage(EX_USAGE);
	}
	if (host_plugin == NULL)
		host_plugin = getenv("SBX_PLUGIN");
	if (argc == 0)
		usage(EX_USAGE);
	if ((c = find_cmd(argc, argv)) == NULL) {
		fprintf(stderr, "%s: unknown command `%s`\n", PROG, argv[0]);
		usage(EX_USAGE);
	}
	skip = c->w2 != NULL ? 2 : 1;
	nops = argc - skip;
	if (c->min >= 0 && (nops < c->min || nops > c->max)) {
		fprintf(stderr, "usage: %s %s\n", PROG, c->synopsis);
		return EX_USAGE;
	}
	/* connect needs the proxy, not the bridge's token. */
	if (c->build == c_connect)
		c_connect(NULL, nops, argv + skip);
	tok = host_token();
	memset(&r, 0, sizeof(r));
	c->build(&r, nops, argv + skip);
	return host_run(&r, tok);
}
