/*
 * tooldefs.c: the table of built-in tools (tooldefs.h).  The schemas are
 * JSON text, parsed on demand: the table stays plain constant data, and
 * t-tooldefs checks that every schema parses and is an object schema
 * that refuses unknown properties.
 *
 * The descriptions are written for a model: what the tool does, what it
 * returns, when to use another tool.  Limits in the schemas (maxLength,
 * maximum) are the first bound on what a client may send; the programs
 * behind the tools check their own limits again.  file_edit's old and new
 * travel as arguments of sbx file edit: 32,000 characters (at most 4
 * bytes each) stay under the kernel's 128 KiB for one argument.
 */
#include <string.h>

#include <jansson.h>

#include "netmode.h"
#include "tooldefs.h"

static const struct sbx_tooldef defs[] = {
	{ "shell_run", "Run a command in the sandbox",
	    "Run a command in the agent's Linux sandbox and wait for it to "
	    "finish. Returns exit_code, stdout and stderr (capped; secret "
	    "values redacted). The sandbox has the agent's home as HOME and "
	    "working directory, a private /tmp, read-only system directories "
	    "and no network unless asked. Use sandbox_process for servers or "
	    "anything that runs longer than a few minutes.",
	    "{\"type\":\"object\",\"properties\":{\"command\":{\"type\":\"strin"
	    "g\",\"description\":\"Shell command line run by /bin/sh -c inside "
	    "the sandbox (pipes, redirections, && work). Give this or argv.\","
	    "\"minLength\":1,\"maxLength\":65536},\"argv\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"string\",\"maxLength\":65536},"
	    "\"minItems\":1,\"maxItems\":4096,\"description\":\"The command as "
	    "an argument vector, run without a shell (argv[0] is looked up on "
	    "PATH). Give this or command.\"},\"cwd\":{\"type\":\"string\","
	    "\"description\":\"Working directory: relative to the agent's home "
	    "(default) or absolute inside it.\",\"maxLength\":4096},"
	    "\"env\":{\"type\":\"object\","
	    "\"additionalProperties\":{\"type\":\"string\","
	    "\"maxLength\":65536},\"maxProperties\":256,"
	    "\"description\":\"Extra environment variables (NAME: value). PATH,"
	    " HOME, LD_* and SBX_* are reserved.\"},"
	    "\"network\":{\"type\":\"string\",\"description\":\"Network for "
	    "this run: none (loopback only, the default), proxy (allowlisted "
	    "destinations through the egress proxy) or outbound; only what the "
	    "agent's configuration allows.\"},\"timeout\":{\"type\":\"number\","
	    "\"exclusiveMinimum\":0,\"maximum\":86400,"
	    "\"description\":\"Seconds without output after which the command "
	    "is killed (exit code 124).\"},\"fail_on_violation\":{\"type\":"
	    "\"boolean\",\"description\":\"Make a run in which the sandbox "
	    "refused a network request or a file access an error (kind "
	    "rejected, the violations listed), even when the command exited "
	    "0.\"}},\"additionalProperties\":false}",
	    "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":\"int"
	    "eger\"},\"stdout\":{\"type\":\"string\"},"
	    "\"stderr\":{\"type\":\"string\"},\"cwd\":{\"type\":\"string\"},"
	    "\"duration_ms\":{\"type\":\"integer\"},"
	    "\"network\":{\"type\":\"string\"}}}",
	    SBX_TOOL_DESTRUCTIVE | SBX_TOOL_OPEN_WORLD },
	{ "sandbox_process", "Background processes in the sandbox",
	    "Manage long-running processes (servers, watchers, long builds) in "
	    "the agent's sandbox: start one in the background, poll its state "
	    "and output, wait for it to end, kill it, or list the agent's "
	    "jobs. Each job is supervised; its output goes to a capped log.",
	    "{\"type\":\"object\",\"properties\":{\"action\":{\"type\":\"string"
	    "\",\"description\":\"start: run command/argv in the background "
	    "and return its job id; poll: state and output tail of a job; "
	    "wait: block until it ends (up to timeout seconds); kill: stop it; "
	    "list: the agent's jobs.\",\"enum\":[\"start\",\"poll\",\"wait\","
	    "\"kill\",\"list\"]},\"command\":{\"type\":\"string\","
	    "\"description\":\"Shell command line run by /bin/sh -c inside the "
	    "sandbox (pipes, redirections, && work). Give this or argv.\","
	    "\"minLength\":1,\"maxLength\":65536},\"argv\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"string\",\"maxLength\":65536},"
	    "\"minItems\":1,\"maxItems\":4096,\"description\":\"The command as "
	    "an argument vector, run without a shell (argv[0] is looked up on "
	    "PATH). Give this or command.\"},\"cwd\":{\"type\":\"string\","
	    "\"description\":\"Working directory: relative to the agent's home "
	    "(default) or absolute inside it.\",\"maxLength\":4096},"
	    "\"env\":{\"type\":\"object\","
	    "\"additionalProperties\":{\"type\":\"string\","
	    "\"maxLength\":65536},\"maxProperties\":256,"
	    "\"description\":\"Extra environment variables (NAME: value). PATH,"
	    " HOME, LD_* and SBX_* are reserved.\"},"
	    "\"network\":{\"type\":\"string\",\"description\":\"Network for "
	    "this run: none (loopback only, the default), proxy (allowlisted "
	    "destinations through the egress proxy) or outbound; only what the "
	    "agent's configuration allows.\"},\"job\":{\"type\":\"string\",\"description\":\"Job "
	    "id returned by start (poll, wait, kill).\",\"minLength\":1,"
	    "\"maxLength\":64},\"tail_lines\":{\"type\":\"integer\","
	    "\"description\":\"Lines of output to return from the end of the "
	    "job's log (poll, wait).\",\"minimum\":0,\"maximum\":10000},"
	    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,"
	    "\"maximum\":3600,\"description\":\"wait: seconds to wait before "
	    "returning with the job still running.\"},"
	    "\"force\":{\"type\":\"boolean\",\"description\":\"kill: SIGKILL "
	    "at once instead of SIGTERM first.\"}},"
	    "\"additionalProperties\":false,\"required\":[\"action\"]}",
	    "{\"type\":\"object\",\"properties\":{\"job\":{\"type\":\"string\"}"
	    ",\"state\":{\"type\":\"string\"},"
	    "\"exit_code\":{\"type\":[\"integer\",\"null\"]},"
	    "\"jobs\":{\"type\":\"array\"}}}",
	    SBX_TOOL_DESTRUCTIVE | SBX_TOOL_OPEN_WORLD },
	{ "file_read", "Read a file",
	    "Read a text file in the agent's home (or /workspace/shared). "
	    "Returns its content, capped at max_chars (default 15000); use "
	    "start_line/line_count or tail_lines to page through a large file. "
	    "A directory returns a listing. Symbolic links leading outside the "
	    "home, FIFOs, sockets and devices are refused.",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    ",\"description\":\"Path relative to the agent's home, or absolute "
	    "under /workspace/agents/<agent> (or /workspace/shared when "
	    "enabled). No '..' components.\",\"minLength\":1,"
	    "\"maxLength\":4096},\"start_line\":{\"type\":\"integer\","
	    "\"description\":\"First line to return (1-based).\","
	    "\"minimum\":1},\"line_count\":{\"type\":\"integer\","
	    "\"description\":\"Number of lines to return from start_line.\","
	    "\"minimum\":1},\"tail_lines\":{\"type\":\"integer\","
	    "\"description\":\"Return only the last N lines.\",\"minimum\":1},"
	    "\"max_chars\":{\"type\":\"integer\",\"description\":\"Cap on "
	    "characters returned (default 15000).\",\"minimum\":1,"
	    "\"maximum\":1048576}},\"additionalProperties\":false,"
	    "\"required\":[\"path\"]}",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"content\":{\"type\":\"string\"},"
	    "\"truncated\":{\"type\":\"boolean\"},"
	    "\"entries\":{\"type\":\"array\"}}}",
	    SBX_TOOL_READ_ONLY | SBX_TOOL_IDEMPOTENT },
	{ "file_search", "Search files",
	    "Search file contents with ripgrep inside the sandbox (it sees "
	    "exactly what commands see). pattern is a regular expression (Rust "
	    "regex syntax). Returns matches {path, line, column, text, "
	    "before[], after[]}; binary files are skipped. files: true returns "
	    "only the names of matching files.",
	    "{\"type\":\"object\",\"properties\":{\"pattern\":{\"type\":\"strin"
	    "g\",\"description\":\"Regular expression to search for.\","
	    "\"minLength\":1,\"maxLength\":4096},\"path\":{\"type\":\"string\","
	    "\"description\":\"Directory or file to search (default: the "
	    "home). Path relative to the agent's home, or absolute under "
	    "/workspace/agents/<agent> (or /workspace/shared when enabled). No "
	    "'..' components.\",\"maxLength\":4096},"
	    "\"glob\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
	    "\"minLength\":1,\"maxLength\":1024},\"maxItems\":64,"
	    "\"description\":\"Only files whose path matches these globs "
	    "(ripgrep -g; !GLOB excludes).\"},\"files\":{\"type\":\"boolean\","
	    "\"description\":\"Return the matching files only, not the "
	    "lines.\"},\"context\":{\"type\":\"integer\","
	    "\"description\":\"Lines of context before and after each match.\","
	    "\"minimum\":0,\"maximum\":20},\"max\":{\"type\":\"integer\","
	    "\"description\":\"Maximum matches returned (default 100).\","
	    "\"minimum\":1,\"maximum\":500}},\"additionalProperties\":false,"
	    "\"required\":[\"pattern\"]}",
	    "{\"type\":\"object\",\"properties\":{\"matches\":{\"type\":\"array"
	    "\"},\"files\":{\"type\":\"array\"},"
	    "\"truncated\":{\"type\":\"boolean\"}}}",
	    SBX_TOOL_READ_ONLY | SBX_TOOL_IDEMPOTENT },
	{ "file_write", "Write a file",
	    "Create or replace a file in the agent's home (or "
	    "/workspace/shared) with content. The write is atomic (a temporary "
	    "file renamed into place) and keeps an existing file's mode. "
	    "create_dirs makes missing parent directories. Prefer file_edit "
	    "for small changes to an existing file.",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    ",\"description\":\"Path relative to the agent's home, or absolute "
	    "under /workspace/agents/<agent> (or /workspace/shared when "
	    "enabled). No '..' components.\",\"minLength\":1,"
	    "\"maxLength\":4096},\"content\":{\"type\":\"string\","
	    "\"description\":\"The complete new content of the file.\","
	    "\"maxLength\":8388608},\"create_dirs\":{\"type\":\"boolean\","
	    "\"description\":\"Create missing parent directories.\"},"
	    "\"mode\":{\"type\":\"string\",\"description\":\"Octal mode of a "
	    "new file, e.g. 0644 or 0755.\",\"pattern\":\"^0?[0-7]{3}$\"}},"
	    "\"additionalProperties\":false,\"required\":[\"path\","
	    "\"content\"]}",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"bytes\":{\"type\":\"integer\"}}}",
	    SBX_TOOL_DESTRUCTIVE | SBX_TOOL_IDEMPOTENT },
	{ "file_edit", "Edit a file",
	    "Replace an exact piece of text in a file in the agent's home. old "
	    "must occur exactly once (include enough surrounding lines to make "
	    "it unique) unless all is true, which replaces every occurrence. "
	    "Returns replacements, bytes_before and bytes_after; no match or "
	    "several matches fail with the count and the first line numbers.",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    ",\"description\":\"Path relative to the agent's home, or absolute "
	    "under /workspace/agents/<agent> (or /workspace/shared when "
	    "enabled). No '..' components.\",\"minLength\":1,"
	    "\"maxLength\":4096},\"old\":{\"type\":\"string\","
	    "\"description\":\"Exact text to replace (whitespace and "
	    "indentation included).\",\"minLength\":1,\"maxLength\":32000},"
	    "\"new\":{\"type\":\"string\",\"description\":\"Replacement "
	    "text.\",\"maxLength\":32000},\"all\":{\"type\":\"boolean\","
	    "\"description\":\"Replace every occurrence of old.\"}},"
	    "\"additionalProperties\":false,\"required\":[\"path\",\"old\","
	    "\"new\"]}",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"replacements\":{\"type\":\"integer\"},"
	    "\"bytes_before\":{\"type\":\"integer\"},"
	    "\"bytes_after\":{\"type\":\"integer\"}}}",
	    SBX_TOOL_DESTRUCTIVE },
	{ "file_list", "List a directory",
	    "List a directory in the agent's home (or /workspace/shared): "
	    "entries {name, path, type, size}, descending depth levels "
	    "(default 1).",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    ",\"description\":\"Directory to list (default: the home). Path "
	    "relative to the agent's home, or absolute under "
	    "/workspace/agents/<agent> (or /workspace/shared when enabled). No "
	    "'..' components.\",\"maxLength\":4096},"
	    "\"depth\":{\"type\":\"integer\",\"description\":\"Levels to "
	    "descend (1: the directory itself).\",\"minimum\":1,"
	    "\"maximum\":10}},\"additionalProperties\":false}",
	    "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\""
	    "},\"entries\":{\"type\":\"array\"}}}",
	    SBX_TOOL_READ_ONLY | SBX_TOOL_IDEMPOTENT },
	{ "sandbox_install", "Install packages",
	    "Install packages into the agent's sandbox: pip into ~/.venv, npm "
	    "into the agent's node workspace (both on PATH in later runs), apt "
	    "only when the agent has its own root filesystem. Package names "
	    "are checked first; only the package registries are reachable "
	    "during the install.",
	    "{\"type\":\"object\",\"properties\":{\"manager\":{\"type\":\"strin"
	    "g\",\"description\":\"Package manager.\",\"enum\":[\"apt\","
	    "\"pip\",\"npm\"]},\"packages\":{\"type\":\"array\","
	    "\"items\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256},"
	    "\"minItems\":1,\"maxItems\":64,\"description\":\"Package names, "
	    "optionally with a version (pip: name==1.2, npm: name@1.2).\"},"
	    "\"timeout\":{\"type\":\"number\",\"exclusiveMinimum\":0,"
	    "\"maximum\":3600,\"description\":\"Seconds before the install is "
	    "stopped.\"}},\"additionalProperties\":false,"
	    "\"required\":[\"manager\",\"packages\"]}",
	    "{\"type\":\"object\",\"properties\":{\"manager\":{\"type\":\"strin"
	    "g\"},\"packages\":{\"type\":\"array\"}}}",
	    SBX_TOOL_OPEN_WORLD },
	{ "secret_check", "Check a secret",
	    "Tell whether the agent has a secret named name (it is then in the "
	    "environment of shell_run commands as $NAME). Never returns the "
	    "value.",
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\""
	    ",\"description\":\"Secret name, e.g. GITHUB_TOKEN.\","
	    "\"minLength\":1,\"maxLength\":128}},"
	    "\"additionalProperties\":false,\"required\":[\"name\"]}",
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\""
	    "},\"present\":{\"type\":\"boolean\"}}}",
	    SBX_TOOL_READ_ONLY | SBX_TOOL_IDEMPOTENT },
	{ "secret_request", "Ask the user for a secret",
	    "Ask the user to provide a secret the task needs. Secrets are "
	    "never passed through this conversation: the result tells the user "
	    "which command to run (sbx secret set NAME --agent A); once they "
	    "have, the secret is in the environment of later shell_run "
	    "commands.",
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\""
	    ",\"description\":\"Secret name, e.g. GITHUB_TOKEN.\","
	    "\"minLength\":1,\"maxLength\":128},"
	    "\"reason\":{\"type\":\"string\",\"description\":\"Why the task "
	    "needs it, shown to the user.\",\"maxLength\":1024}},"
	    "\"additionalProperties\":false,\"required\":[\"name\"]}",
	    "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\""
	    "},\"command\":{\"type\":\"string\"},"
	    "\"present\":{\"type\":\"boolean\"}}}",
	    SBX_TOOL_READ_ONLY },
};

size_t
sbx_tooldefs_count(void)
{
	return sizeof(defs) / sizeof(*defs);
}

const struct sbx_tooldef *
sbx_tooldef_at(size_t i)
{
	return i < sbx_tooldefs_count() ? &defs[i] : NULL;
}

const struct sbx_tooldef *
sbx_tooldef_find(const char *name)
{
	size_t i;

	for (i = 0; i < sbx_tooldefs_count(); i++)
		if (strcmp(defs[i].name, name) == 0)
			return &defs[i];
	return NULL;
}

int
sbx_tooldef_name_valid(const char *s)
{
	size_t i, n = s != NULL ? strlen(s) : 0;

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
			(s[i] >= 'A' && s[i] <= 'Z') ||
			(s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
			s[i] == '-'))
			return 0;
	return 1;
}

/*
 * A tool's `network` is sbx exec's network mode: the enum of its schema
 * is the table's names (lib/base/netmode.h), never a list of its own.
 */
static int
network_enum(json_t *schema)
{
	json_t	*p, *a;
	int	 m;

	p = json_object_get(json_object_get(schema, "properties"), "network");
	if (p == NULL)
		return 0;
	if ((a = json_array()) == NULL)
		return -1;
	for (m = 0; m < SBX_NETMODE_COUNT; m++)
		if (json_array_append_new(a, json_string(sbx_netmode_name(
		    (enum sbx_netmode)m))) == -1) {
			json_decref(a);
			return -1;
		}
	return json_object_set_new(p, "enum", a);
}

json_t *
sbx_tooldef_input(const struct sbx_tooldef *d)
{
	json_t	*s;

	s = json_loads(d->input_schema, JSON_REJECT_DUPLICATES, NULL);
	if (s != NULL && network_enum(s) == -1) {
		json_decref(s);
		return NULL;
	}
	return s;
}

/*
 * The envelope of DESIGN.md §5.  structuredContent is the envelope as the
 * program printed it, so the schema lists its keys without closing it:
 * an envelope may carry keys of its own tool (documented in the man
 * pages), and a client that validates structuredContent against this
 * schema must not reject a correct answer.
 */
json_t *
sbx_tooldef_output(const struct sbx_tooldef *d)
{
	json_t *res;

	if ((res = json_loads(d->result_schema, JSON_REJECT_DUPLICATES,
		 NULL)) == NULL)
		return NULL;
	return json_pack("{s:s,s:{s:{s:s},s:{s:s},s:o,s:{s:s},s:{s:s},"
			 "s:{s:s},s:{s:s},s:{s:s},s:{s:s,s:{s:s}}},s:[s,s]}",
	    "type", "object", "properties", "ok", "type", "boolean", "tool",
	    "type", "string", "result", res, "kind", "type", "string", "field",
	    "type", "string", "reason", "type", "string", "message", "type",
	    "string", "retryable", "type", "boolean", "warnings", "type",
	    "array", "items", "type", "string", "required", "ok", "tool");
}

json_t *
sbx_tooldef_json(const struct sbx_tooldef *d)
{
	json_t *in, *out;

	in = sbx_tooldef_input(d);
	out = sbx_tooldef_output(d);
	if (in == NULL || out == NULL) {
		json_decref(in);
		json_decref(out);
		return NULL;
	}
	return json_pack("{s:s,s:s,s:s,s:o,s:o,s:{s:s,s:b,s:b,s:b,s:b}}",
	    "name", d->name, "title", d->title, "description", d->description,
	    "inputSchema", in, "outputSchema", out, "annotations", "title",
	    d->title, "readOnlyHint", (d->hints & SBX_TOOL_READ_ONLY) != 0,
	    "destructiveHint", (d->hints & SBX_TOOL_DESTRUCTIVE) != 0,
	    "idempotentHint", (d->hints & SBX_TOOL_IDEMPOTENT) != 0,
	    "openWorldHint", (d->hints & SBX_TOOL_OPEN_WORLD) != 0);
}
