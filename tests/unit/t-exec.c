/*
 * t-exec: the request validator of lib/exec (what 0130-exec-input.bats
 * checked with one sandbox per case) and the request envelope reader.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tap.h"

#include "envelope.h"
#include "exec.h"

static char	*cmd_true[] = { "true", NULL };
static char	*cmd_empty[] = { "", NULL };

/* A request for `true` with one field changed by set(). */
static int
check(void (*set)(struct sbx_exec_req *, const char *), const char *v,
    const char *field, const char *reason, int want)
{
	struct sbx_exec_req	 q;
	struct sbx_error	 e;
	int			 rc, good;

	sbx_exec_req_init(&q);
	q.argv = cmd_true;
	q.argc = 1;
	memset(&e, 0, sizeof(e));
	set(&q, v);
	rc = sbx_exec_validate(&q, &e);
	good = rc == want && (want == 0 || (e.kind != NULL &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 && e.retryable == 0 &&
	    e.field != NULL && strcmp(e.field, field) == 0 &&
	    (reason == NULL || (e.reason && strcmp(e.reason, reason) == 0))));
	if (!good)
		diag("rc %d field %s reason %s: %s", rc, e.field ? e.field :
		    "-", e.reason ? e.reason : "-", e.message);
	sbx_exec_req_release(&q);
	return good;
}

static void set_agent(struct sbx_exec_req *q, const char *v) { q->agent = v; }
static void set_timeout(struct sbx_exec_req *q, const char *v) { q->timeout = v; }
static void set_network(struct sbx_exec_req *q, const char *v) { q->network = v; }
static void set_stdin(struct sbx_exec_req *q, const char *v) { q->stdin_mode = v; }
static void set_seccomp(struct sbx_exec_req *q, const char *v) { q->seccomp = v; }
static void set_max(struct sbx_exec_req *q, const char *v) { q->max_output = v; }
static void set_shell(struct sbx_exec_req *q, const char *v) { q->shell = v; }

static void
set_env(struct sbx_exec_req *q, const char *v)
{
	sbx_strv_push(&q->env, v);
}

static void
set_nocmd(struct sbx_exec_req *q, const char *v)
{
	q->argc = 0;
	q->argv = cmd_true + 1;
}

static void
set_emptycmd(struct sbx_exec_req *q, const char *v)
{
	q->argv = cmd_empty;
}

static void
set_bgstdin(struct sbx_exec_req *q, const char *v)
{
	q->background = 1;
	q->stdin_mode = "inherit";
}

static void
set_ttyjson(struct sbx_exec_req *q, const char *v)
{
	q->tty = 1;
	q->capture = *v == 'j';
	q->background = *v == 'b';
}

/* A request envelope: 0 and the request, or -1 with field and reason. */
static int
req(const char *text, const char *field, const char *reason)
{
	struct sbx_exec_req	 q;
	struct sbx_error	 e;
	json_t			*o;
	int			 rc;

	sbx_exec_req_init(&q);
	memset(&e, 0, sizeof(e));
	o = sbx_json_parse(text, strlen(text), 1 << 16, &e);
	rc = o == NULL ? -1 : sbx_exec_req_json(&q, o, &e);
	if (rc == 0)
		rc = sbx_exec_validate(&q, &e);
	json_decref(o);
	sbx_exec_req_release(&q);
	if (field == NULL)
		return rc == 0;
	if (rc == 0 || e.kind == NULL || strcmp(e.kind, SBX_K_INVALID_ARGS))
		return 0;
	if (reason != NULL && (e.reason == NULL || strcmp(e.reason, reason))) {
		diag("reason %s: %s", e.reason ? e.reason : "-", e.message);
		return 0;
	}
	/* "*": whatever field the envelope reader names. */
	return *field == '*' || (e.field != NULL && strcmp(e.field, field) == 0);
}

int
main(void)
{
	static const char *const agents[][2] = {
		{ "../b", "invalid_name" }, { "a/../../etc", NULL },
		{ ".", NULL }, { "..", NULL }, { "", "empty" },
		{ "a\nb", NULL }, { "-rf", NULL }, { "a,b", NULL },
		{ "a:b", NULL }, { "A", NULL }, { "Default", NULL },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "too_long" },
		{ "\xd0\xb0gent", "invalid_name" }, { "a b", NULL },
		{ "a;b", NULL }, { "$(id)", NULL }, { "a/b", NULL },
		{ "/abs", NULL }, { "a*", NULL }, { "a\tb", NULL },
	};
	static const char *const envs[][2] = {
		{ "1A=x", "invalid_name" }, { "A-B=x", NULL }, { "=x",
		"invalid_name" }, { "NOEQUALS", "missing_equals" },
		{ "A B=x", NULL }, { "A.B=x", NULL }, { "A\nB=x", NULL },
		{ "\xc3\x84=x", NULL },
		{ "PATH=/tmp", "reserved_name" }, { "HOME=x", NULL },
		{ "LD_PRELOAD=/tmp/x.so", "reserved_name" },
		{ "LD_LIBRARY_PATH=x", NULL }, { "LD_AUDIT=x", NULL },
		{ "BASH_ENV=x", NULL }, { "ENV=x", NULL },
		{ "SBX_FOO=1", "reserved_name" }, { "SBX_AGENT=x", NULL },
		{ "BASH_FUNC_x%%=x", NULL }, { "BASH_FUNC_x=x", NULL },
		{ "GCONV_PATH=x", NULL }, { "GLIBC_TUNABLES=x", NULL },
		{ "SHELLOPTS=x", NULL }, { "PS4=x", NULL }, { "IFS=x", NULL },
		{ "USER=x", NULL }, { "LANG=x", NULL }, { "TERM=x", NULL },
		{ "HTTP_PROXY=x", NULL }, { "https_proxy=x", NULL },
	};
	static const char *const timeouts[] = { "-1", "abc", "0", "1e3",
	    "inf", "nan", "-inf", "", " 1", "1s", "0x10", "99999999999" };
	static const char *const networks[] = { "bogus", "", "NONE" };
	size_t	 i;

	/* Agent names (IV-09): the same check for --agent and $SBX_AGENT. */
	for (i = 0; i < sizeof(agents) / sizeof(*agents); i++)
		ok(check(set_agent, agents[i][0], "agent", agents[i][1], -1),
		    "agent #%zu refused", i);
	ok(check(set_agent, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL, NULL, 0),
	    "a 32-character agent name is allowed");
	setenv("SBX_AGENT", "../b", 1);
	ok(check(set_agent, NULL, "agent", NULL, -1), "SBX_AGENT is checked");
	unsetenv("SBX_AGENT");

	/* --env: invalid and reserved names. */
	for (i = 0; i < sizeof(envs) / sizeof(*envs); i++)
		ok(check(set_env, envs[i][0], "env", envs[i][1] ? envs[i][1] :
		    NULL, -1), "env %zu refused", i);
	ok(check(set_env, "WITH_SPACE=a b;$(id)", NULL, NULL, 0),
	    "a value is data");

	/* --timeout, the command, --network. */
	for (i = 0; i < sizeof(timeouts) / sizeof(*timeouts); i++)
		ok(check(set_timeout, timeouts[i], "timeout", "invalid_number",
		    -1), "timeout '%s' refused", timeouts[i]);
	ok(check(set_timeout, "0.5", NULL, NULL, 0), "timeout 0.5 allowed");
	ok(check(set_nocmd, NULL, "command", "missing", -1),
	    "no command: missing");
	ok(check(set_emptycmd, NULL, "command", "empty", -1),
	    "an empty command name");
	ok(check(set_shell, "", "command", "empty", -1), "-c ''");
	for (i = 0; i < sizeof(networks) / sizeof(*networks); i++)
		ok(check(set_network, networks[i], "network", "invalid_mode",
		    -1), "network '%s' refused", networks[i]);
	ok(check(set_network, "proxy", NULL, NULL, 0), "network proxy");

	/* Modes and sizes. */
	ok(check(set_stdin, "maybe", "stdin", "invalid_mode", -1), "stdin");
	ok(check(set_seccomp, "no", "seccomp", "invalid_mode", -1), "seccomp");
	ok(check(set_max, "63", "max_output", "out_of_range", -1),
	    "max-output below 64");
	ok(check(set_max, "2G", "max_output", "out_of_range", -1),
	    "max-output above 1G");
	ok(check(set_max, "1K", NULL, NULL, 0), "max-output 1K");
	ok(check(set_bgstdin, NULL, "stdin", "background_stdin", -1),
	    "--background with --stdin inherit");
	ok(check(set_ttyjson, "j", "tty", "tty_with_json", -2),
	    "--tty with --json: a usage error");
	ok(check(set_ttyjson, "b", "tty", "tty_with_background", -2),
	    "--tty with --background: a usage error");

	/* Request envelopes. */
	ok(req("{\"command\":[\"true\"]}", NULL, NULL), "a minimal request");
	ok(req("{\"shell\":\"echo $1\",\"args\":[\"n\",\"x\"],\"timeout\":2,"
	    "\"memory\":512,\"env\":[\"A=1\"],\"agent\":\"ci\","
	    "\"max_output\":\"1M\",\"background\":false}", NULL, NULL),
	    "a request with most keys");
	ok(req("{\"command\":[\"true\"],\"bogus\":1}", "request",
	    "unknown_key"), "an unknown key");
	ok(req("{\"command\":[\"true\"],\"home\":\"/x\"}", "request",
	    "unknown_key"), "home is not a request key");
	ok(req("{\"command\":[\"true\"],\"command\":[\"id\"]}", NULL, NULL) ==
	    0, "a duplicate key");
	ok(req("{\"command\":\"true\"}", "command", "wrong_type"),
	    "command must be an array");
	ok(req("{\"command\":[1]}", "command", "wrong_type"),
	    "command of strings");
	ok(req("{\"command\":[\"true\"],\"tty\":1}", "tty", "wrong_type"),
	    "tty must be a boolean");
	ok(req("{\"command\":[\"true\"],\"timeout\":[]}", "timeout",
	    "wrong_type"), "timeout must be a number");
	ok(req("{\"command\":[\"true\"],\"shell\":\"x\"}", "command",
	    "command_and_shell"), "command and shell");
	ok(req("{\"command\":[\"true\"],\"args\":[\"x\"]}", "args",
	    "args_without_shell"), "args without shell");
	ok(req("[\"true\"]", "*", NULL), "not an object");
	ok(req("{\"command\":[\"a\\u0000b\"]}", "*", NULL),
	    "a NUL byte in an argument");
	ok(req("{\"command\":[\"true\"]", "*", NULL), "malformed JSON");
	ok(req("{\"command\":[\"true\"],\"timeout\":0}", "timeout",
	    "invalid_number"), "values are validated as options are");
	ok(req("{}", "command", "missing"), "an empty request runs nothing");
	{
		/* --request FILE (sbx_exec_req_load): read from a file,
		 * stdin may stay inherit; a missing file is unreadable. */
		struct sbx_exec_req	 q;
		struct sbx_error	 e;
		char			 path[] = "/tmp/t-exec-req-XXXXXX";
		const char		*body = "{\"command\":[\"true\"],"
					    "\"stdin\":\"inherit\"}";
		int			 fd;

		fd = mkstemp(path);
		ok(fd >= 0 && write(fd, body, strlen(body)) ==
		    (ssize_t)strlen(body), "request file written");
		if (fd >= 0)
			close(fd);
		sbx_exec_req_init(&q);
		ok(sbx_exec_req_load(&q, path, 1 << 20, &e) == 0 &&
		    q.stdin_mode != NULL &&
		    strcmp(q.stdin_mode, "inherit") == 0,
		    "a request file keeps stdin inherit");
		sbx_exec_req_release(&q);
		unlink(path);
		sbx_exec_req_init(&q);
		ok(sbx_exec_req_load(&q, path, 1 << 20, &e) == -1 &&
		    strcmp(e.reason, "unreadable") == 0,
		    "a missing request file is unreadable");
		sbx_exec_req_release(&q);
	}
	return done_testing();
}
