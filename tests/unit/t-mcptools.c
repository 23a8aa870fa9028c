/* t-mcptools: a tool call as a child's argv and stdin, and the child's
 * envelope as an MCP result (lib/service/mcptools.c). */
#include <sys/wait.h>

#include "tap.h"

#include "mcptools.h"

static struct sbx_mcp_who who = { "/lx", "alice", NULL, "proxy", NULL };

/* The argv of a call, joined with '|', or the error's reason. */
static char *
argv_of(const char *tool, const char *args, const char *plugin,
    struct sbx_mcp_spawn *sp)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e;
	json_t		*a, *pl;
	size_t		 i;

	memset(sp, 0, sizeof(*sp));
	a = json_loads(args, 0, NULL);
	pl = plugin ? json_loads(plugin, 0, NULL) : NULL;
	if (sbx_mcp_tool_spawn(&who, tool, pl, a, sp, &e) == -1)
		sbx_buf_printf(&b, "error:%s", e.reason);
	else
		for (i = 0; i < sp->argv.n; i++)
			sbx_buf_printf(&b, "%s%s", i ? "|" : "", sp->argv.v[i]);
	json_decref(a);
	json_decref(pl);
	return b.p;
}

static void
is(const char *tool, const char *args, const char *plugin, const char *want,
    const char *input)
{
	struct sbx_mcp_spawn sp;
	char		    *got = argv_of(tool, args, plugin, &sp);

	ok(got != NULL && strcmp(got, want) == 0 &&
		(input == NULL ||
		    (sp.input.p != NULL && strstr(sp.input.p, input) != NULL)),
	    "%s %s", tool, args);
	if (got == NULL || strcmp(got, want) != 0)
		diag("got  %s\nwant %s", got ? got : "(null)", want);
	if (input != NULL &&
	    (sp.input.p == NULL || strstr(sp.input.p, input) == NULL))
		diag("input %s lacks %s", sp.input.p ? sp.input.p : "", input);
	free(got);
	sbx_mcp_spawn_release(&sp);
}

int
main(void)
{
	struct sbx_mcp_done d;
	struct sbx_mcp_spawn sp2;
	json_t		   *r, *env;
	const char	   *t;
	char		   *s;

	is("shell_run",
	    "{\"command\":\"echo $A\",\"env\":{\"A\":\"1\"},"
	    "\"cwd\":\"src\",\"timeout\":5}",
	    NULL, "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"shell\":\"echo $A\"");
	is("shell_run", "{\"command\":\"x\",\"fail_on_violation\":true}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"fail_on_violation\":true");
	is("shell_run", "{\"command\":\"x\",\"env\":{\"A\":\"1\"}}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q", "\"env\":[\"A=1\"]");
	is("shell_run", "{\"argv\":[\"-rf\",\"/\"]}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"command\":[\"-rf\",\"/\"]");
	is("shell_run", "{\"argv\":[\"a\"]}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"agent\":\"alice\"");
	is("shell_run", "{}", NULL, "error:command_or_argv", NULL);
	/* The network within the agent's setting (here proxy). */
	is("shell_run", "{\"argv\":[\"a\"],\"network\":\"proxy\"}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"network\":\"proxy\"");
	is("shell_run", "{\"argv\":[\"a\"],\"network\":\"outbound\"}", NULL,
	    "error:network_not_allowed", NULL);
	is("sandbox_process",
	    "{\"action\":\"start\",\"argv\":[\"a\"],"
	    "\"network\":\"outbound\"}",
	    NULL, "error:network_not_allowed", NULL);
	is("sandbox_process", "{\"action\":\"start\",\"command\":\"s\"}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"background\":true");
	is("sandbox_process",
	    "{\"action\":\"wait\",\"job\":\"0123\","
	    "\"timeout\":2,\"tail_lines\":5}",
	    NULL,
	    "/lx/sbx-exec|wait|0123|"
	    "--agent|alice|--json|--tail-lines|5|--timeout|2",
	    NULL);
	is("sandbox_process",
	    "{\"action\":\"kill\",\"job\":\"0123\","
	    "\"force\":true}",
	    NULL,
	    "/lx/sbx-exec|kill|0123|--agent|alice|"
	    "--json|--force",
	    NULL);
	is("sandbox_process", "{\"action\":\"list\"}", NULL,
	    "/lx/sbx-exec|ps|--agent|alice|--json", NULL);
	is("sandbox_process", "{\"action\":\"poll\"}", NULL,
	    "error:missing_property", NULL);
	/* Operands from the client follow "--": never an option. */
	is("file_search",
	    "{\"pattern\":\"--pre=sh\",\"glob\":[\"*.c\"],"
	    "\"files\":true}",
	    NULL,
	    "/lx/sbx-file|search|--agent|alice|"
	    "--json|--files|--glob|*.c|--|--pre=sh",
	    NULL);
	is("file_read", "{\"path\":\"-x\",\"max_chars\":10}", NULL,
	    "/lx/sbx-file|read|--agent|alice|--json|--max-chars|10|--|-x",
	    NULL);
	is("file_write",
	    "{\"path\":\"a\",\"content\":\"body\\n\","
	    "\"mode\":\"0600\"}",
	    NULL,
	    "/lx/sbx-file|write|--agent|alice|"
	    "--json|--mode|0600|--|a",
	    "body\n");
	is("file_edit",
	    "{\"path\":\"a\",\"old\":\"-o\",\"new\":\"n\","
	    "\"all\":true}",
	    NULL,
	    "/lx/sbx-file|edit|--agent|alice|--json|"
	    "--old|-o|--new|n|--all|--|a",
	    NULL);
	is("file_list", "{}", NULL,
	    "/lx/sbx-file|list|--agent|alice|--json|--|.", NULL);
	is("sandbox_install",
	    "{\"manager\":\"pip\",\"packages\":[\"-e\","
	    "\"x\"]}",
	    NULL,
	    "/lx/sbx-install|--agent|alice|--json|--manager|"
	    "pip|--|-e|x",
	    NULL);
	is("secret_request", "{\"name\":\"TOKEN\"}", NULL,
	    "/lx/sbx-secret|"
	    "check|--agent|alice|--json|--|TOKEN",
	    NULL);
	is("plugin-greet-hello", "{\"who\":\"a b\",\"n\":2}",
	    "{\"name\":\"plugin-greet-hello\",\"plugin\":\"greet\","
	    "\"tool\":\"hello\"}",
	    "/lx/sbx-plugin|run|--agent|alice|--json|--param|who=a b|"
	    "--param|n=2|--|greet|hello",
	    NULL);
	is("nope", "{}", NULL, "error:unknown_tool", NULL);

	/* A run's result: the text a model reads, the envelope. */
	env = json_loads("{\"ok\":true,\"tool\":\"exec\",\"result\":"
			 "{\"exit_code\":3}}",
	    0, NULL);
	memset(&d, 0, sizeof(d));
	d.name = "shell_run";
	d.envelope = env;
	d.out = "hi\n";
	d.err = "";
	d.structured = 1;
	r = sbx_mcp_tool_result(&d);
	t = json_string_value(json_object_get(
	    json_array_get(json_object_get(r, "content"), 0), "text"));
	ok(t != NULL && strstr(t, "exit code: 3\nstdout:\nhi\n") != NULL &&
		json_is_false(json_object_get(r, "isError")) &&
		strcmp(
		    json_string_value(json_object_get(
			json_object_get(json_object_get(r, "structuredContent"),
			    "result"),
			"stdout")),
		    "hi\n") == 0,
	    "shell_run: exit code and stdout in text and "
	    "structuredContent");
	json_decref(r);
	json_decref(env);
	/* No envelope: the program is missing (127). */
	memset(&d, 0, sizeof(d));
	d.name = "file_read";
	d.status = 127 << 8;
	d.structured = 0;
	r = sbx_mcp_tool_result(&d);
	ok(json_is_true(json_object_get(r, "isError")) &&
		json_object_get(r, "structuredContent") == NULL &&
		json_array_size(json_object_get(r, "content")) == 2 &&
		strstr(json_string_value(json_object_get(
			   json_array_get(json_object_get(r, "content"), 1),
			   "text")),
		    "program_missing") != NULL,
	    "no envelope: unavailable, the envelope as text before "
	    "2025-06-18");
	json_decref(r);
	/* A background start: the job id, never the host's log path. */
	env = json_loads("{\"ok\":true,\"tool\":\"exec\",\"result\":"
			 "{\"job\":\"0123456789abcdef\",\"background\":true,"
			 "\"pid\":7,\"log_file\":\"/var/lib/sbx/agents/alice/"
			 "jobs/0123456789abcdef.log\"}}",
	    0, NULL);
	memset(&d, 0, sizeof(d));
	d.name = "sandbox_process";
	d.envelope = env;
	d.out = "";
	d.structured = 1;
	r = sbx_mcp_tool_result(&d);
	s = json_dumps(r, JSON_COMPACT);
	ok(s != NULL && strstr(s, "/var/lib/sbx") == NULL &&
		strstr(s, "log_file") == NULL &&
		strstr(s, "job=\\\"0123456789abcdef\\\"") != NULL,
	    "a job's start: its id, "
	    "no host path: %s",
	    s ? s : "");
	free(s);
	json_decref(r);
	json_decref(env);
	/* A run rejected for a violation: the verdict and the output. */
	env = json_loads("{\"ok\":false,\"tool\":\"exec\",\"kind\":"
			 "\"rejected\",\"reason\":\"violation\",\"message\":"
			 "\"refused\",\"result\":{\"exit_code\":0},"
			 "\"violations\":[{\"type\":\"network\"}]}",
	    0, NULL);
	memset(&d, 0, sizeof(d));
	d.name = "shell_run";
	d.envelope = env;
	d.out = "curl saw 403\n";
	d.err = "";
	d.structured = 1;
	r = sbx_mcp_tool_result(&d);
	t = json_string_value(json_object_get(
	    json_array_get(json_object_get(r, "content"), 0), "text"));
	ok(json_is_true(json_object_get(r, "isError")) && t != NULL &&
		strstr(t, "error: rejected (violation)") != NULL &&
		strstr(t, "stdout:\ncurl saw 403\n") != NULL,
	    "a rejected run: isError, the verdict and its output: %s",
	    t ? t : "");
	json_decref(r);
	json_decref(env);

	/* A warm session (sbx mcp's default): shell_run runs in it unless
	 * it asks a network of its own; background jobs never do. */
	who.session = "alice-0a1b2c";
	is("shell_run", "{\"command\":\"x\"}", NULL,
	    "/lx/sbx-exec|--request|-|--envelope-fd|3|-q",
	    "\"session\":\"alice-0a1b2c\"");
	s = argv_of("shell_run", "{\"command\":\"x\",\"network\":\"none\"}",
	    NULL, &sp2);
	ok(sp2.input.p != NULL && strstr(sp2.input.p, "session") == NULL,
	    "a call with its own network runs one-shot: %s",
	    sp2.input.p ? sp2.input.p : "");
	free(s);
	sbx_mcp_spawn_release(&sp2);
	who.session = NULL;
	return done_testing();
}
