/*
 * execreq.c: a request envelope for sbx exec (`--request FILE|-`), read
 * into the same struct sbx_exec_req the options fill.  The keys are the
 * long options with `-` as `_`; the command is `command` (an array of
 * strings) or `shell` (a string) with `args` ($0, $1...).  What the
 * envelope reader (sbx_json_parse: size cap, duplicate keys) lets through
 * is checked here for keys and types only; sbx_exec_validate() judges the
 * values, as it does the options'.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "error.h"
#include "exec.h"

/* clang-format off */
#define STR	SBX_EXEC_F_STR
#define NUM	SBX_EXEC_F_NUM
#define BOOL	SBX_EXEC_F_BOOL
#define STRV	SBX_EXEC_F_STRV
#define LIMIT	SBX_EXEC_F_LIMIT
#define ARGV	SBX_EXEC_F_ARGV
#define ROOTS	SBX_EXEC_F_ROOTS
#define PROG	SBX_EXEC_F_PROG
#define F(option, key, type, field, limit, mcp)			\
	{ option, key, type, offsetof(struct sbx_exec_req, field), limit, mcp }
#define P(option)	{ option, NULL, PROG, 0, NULL, NULL }

/* The request's fields (exec.h): option, key, type, field, limit, mcp. */
static const struct sbx_exec_field fields[] = {
	F("agent", "agent", STR, agent, NULL, NULL),
	F("home", NULL, STR, home, NULL, NULL),
	F("cwd", "cwd", STR, cwd, NULL, "cwd"),
	/* --workdir repeated: more writable roots (cmd/sbx-exec.c) */
	F("workdir", "workdir", STR, workdir, NULL, NULL),
	F(NULL, "workdirs", ROOTS, xworkdirs, NULL, NULL),
	F("workdir-follow-symlinks", "workdir_follow_symlinks", BOOL,
	    workdir_follow, NULL, NULL),
	F("ro", "ro", STRV, ro, NULL, NULL),
	F("unprotect", "unprotect", STRV, unprotect, NULL, NULL),
	/* MCP: an object of NAME: value (lib/service/mcptools.c) */
	F("env", "env", STRV, env, NULL, "env"),
	F("secret", "secrets", STRV, secrets, NULL, NULL),
	F("no-secrets", "no_secrets", BOOL, no_secrets, NULL, NULL),
	F("timeout", "timeout", NUM, timeout, NULL, "timeout"),
	F("tty", "tty", BOOL, tty, NULL, NULL),
	F("network", "network", STR, network, NULL, "network"),
	F("allow-domain", "allow_domain", STRV, allow, NULL, NULL),
	F("ask", "ask", BOOL, ask, NULL, NULL),
	F("c", "shell", STR, shell, NULL, "command"),
	F(NULL, "command", ARGV, argv, NULL, "argv"),
	F(NULL, "args", ARGV, argv, NULL, NULL),
	F("max-output", "max_output", NUM, max_output, NULL, NULL),
	F("stdin", "stdin", STR, stdin_mode, NULL, NULL),
	F("memory", "memory", LIMIT, limit_keys, "memory_mib", NULL),
	F("cpus", "cpus", LIMIT, limit_keys, "cpus", NULL),
	F("pids", "pids", LIMIT, limit_keys, "pids", NULL),
	F("disk", "disk", LIMIT, limit_keys, "disk_mib", NULL),
	F("wall-timeout", "wall_timeout", LIMIT, limit_keys, "wall_timeout",
	    NULL),
	F("nofile", "nofile", LIMIT, limit_keys, "nofile", NULL),
	F("file-size", "file_size", LIMIT, limit_keys, "file_size_mib", NULL),
	F("soft-limits", "soft_limits", BOOL, soft_limits, NULL, NULL),
	F("hard-limits", "hard_limits", BOOL, hard_limits, NULL, NULL),
	F("disk-tmp", "disk_tmp", BOOL, disk_tmp, NULL, NULL),
	F("seccomp", "seccomp", STR, seccomp, NULL, NULL),
	F("fail-on-violation", "fail_on_violation", BOOL, fail_on_violation,
	    NULL, "fail_on_violation"),
	F("host-view", "host_view", BOOL, host_view, NULL, NULL),
	F("background", "background", BOOL, background, NULL, NULL),
	F("session", "session", STR, session_name, NULL, NULL),
	P("request"), P("envelope-fd"), P("tail-lines"), P("force"),
	P("json"), P("quiet"), P("verbose"), P("help"), P("version"),
};
/* clang-format on */

const struct sbx_exec_field *
sbx_exec_fields(size_t *n)
{
	*n = sizeof(fields) / sizeof(*fields);
	return fields;
}

const struct sbx_exec_field *
sbx_exec_field_option(const char *name)
{
	size_t i;

	for (i = 0; name != NULL && i < sizeof(fields) / sizeof(*fields); i++)
		if (fields[i].option != NULL &&
		    strcmp(fields[i].option, name) == 0)
			return &fields[i];
	return NULL;
}

const struct sbx_exec_field *
sbx_exec_field_key(const char *name)
{
	size_t	 i;

	for (i = 0; name != NULL && i < sizeof(fields) / sizeof(*fields); i++)
		if (fields[i].key != NULL && strcmp(fields[i].key, name) == 0)
			return &fields[i];
	return NULL;
}

int
sbx_exec_field_set(struct sbx_exec_req *q, const struct sbx_exec_field *f,
    const char *v)
{
	char *at = (char *)q + f->offset;

	switch (f->type) {
	case STR:
	case NUM: *(const char **)(void *)at = v; return 0;
	case BOOL: *(int *)(void *)at = 1; return 0;
	case STRV: return sbx_strv_push((struct sbx_strv *)(void *)at, v);
	case LIMIT:
		return sbx_strv_push(&q->limit_keys, f->limit) == -1 ||
			sbx_strv_push(&q->limit_keys, v) == -1 ?
		    -1 :
		    0;
	case ARGV:
	case ROOTS:
	case PROG: break;
	}
	return 0;
}

/* A string the request owns (lives as long as req->own). */
static const char *
own(struct sbx_exec_req *q, const char *s)
{
	if (sbx_strv_push(&q->own, s) == -1)
		return NULL;
	return q->own.v[q->own.n - 1];
}

/* A number or a string, as the option's text (strings keep suffixes:
 * "1M"); NUL bytes inside a string are refused by jansson's reader. */
static const char *
num_text(struct sbx_exec_req *q, const json_t *v)
{
	char	 buf[64];

	if (json_is_string(v))
		return own(q, json_string_value(v));
	if (json_is_integer(v))
		snprintf(buf, sizeof(buf), "%lld",
		    (long long)json_integer_value(v));
	else
		snprintf(buf, sizeof(buf), "%.17g", json_real_value(v));
	return own(q, buf);
}

#define bad(e, field, reason, ...) \
	sbx_error_set(e, SBX_K_INVALID_ARGS, field, reason, __VA_ARGS__)

int
sbx_exec_req_json(struct sbx_exec_req *q, const json_t *o,
    struct sbx_error *e)
{
	const struct sbx_exec_field *k;
	const char		*key, *s;
	json_t			*v, *it, *cmd, *args;
	size_t			 i, n;
	int			 argc = 0;

	if (!json_is_object(o))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "request",
		    "not_an_object", "the request must be a JSON object");
	json_object_foreach((json_t *)o, key, v) {
		if ((k = sbx_exec_field_key(key)) == NULL)
			return bad(e, "request", "unknown_key", "request: "
			    "unknown key `%.64s`", key);
		switch (k->type) {
		case STR:
			if (!json_is_string(v))
				return bad(e, k->key, "wrong_type",
				    "request: "
				    "`%s` must be a string",
				    k->key);
			break;
		case BOOL:
			if (!json_is_boolean(v))
				return bad(e, k->key, "wrong_type",
				    "request: "
				    "`%s` must be true or false",
				    k->key);
			break;
		case NUM:
		case LIMIT:
			if (!json_is_number(v) && !json_is_string(v))
				return bad(e, k->key, "wrong_type",
				    "request: "
				    "`%s` must be a number",
				    k->key);
			break;
		case STRV:
		case ARGV:
		case ROOTS:
			if (!json_is_array(v))
				return bad(e, k->key, "wrong_type",
				    "request: "
				    "`%s` must be an array of strings",
				    k->key);
			json_array_foreach(v, i, it)
				if (!json_is_string(it))
					return bad(e, k->key, "wrong_type",
					    "request: `%s` must be an array of "
					    "strings",
					    k->key);
			break;
		case PROG: break;
		}
	}
	cmd = json_object_get(o, "command");
	args = json_object_get(o, "args");
	if (cmd != NULL && json_object_get(o, "shell") != NULL)
		return bad(e, "command", "command_and_shell", "request: give "
		    "`command` or `shell` (with `args`), not both");
	if (args != NULL && json_object_get(o, "shell") == NULL)
		return bad(e, "args", "args_without_shell", "request: `args` "
		    "are $0, $1... of `shell`");
	/* Copies, as the table says: the request outlives the parsed
	 * envelope. */
	json_object_foreach ((json_t *)o, key, v) {
		k = sbx_exec_field_key(key);
		s = NULL;
		switch (k->type) {
		case STR:
			if ((s = own(q, json_string_value(v))) == NULL ||
			    sbx_exec_field_set(q, k, s) == -1)
				return sbx_error_sys(e, "nomem", "request");
			break;
		case NUM:
		case LIMIT:
			if ((s = num_text(q, v)) == NULL ||
			    sbx_exec_field_set(q, k, s) == -1)
				return sbx_error_sys(e, "nomem", "request");
			break;
		case BOOL:
			if (json_is_true(v) &&
			    sbx_exec_field_set(q, k, NULL) == -1)
				return sbx_error_sys(e, "nomem", "request");
			break;
		case STRV:
			json_array_foreach (v, i, it)
				if (sbx_exec_field_set(q, k,
					json_string_value(it)) == -1)
					return sbx_error_sys(e, "nomem",
					    "request");
			break;
		case ARGV:
		case ROOTS:
		case PROG: break;
		}
	}
	/* workdirs: every writable root, the first being the default
	 * cwd; instead of workdir, not with it. */
	if ((v = json_object_get(o, "workdirs")) != NULL) {
		if (q->workdir != NULL || json_array_size(v) == 0)
			return bad(e, "workdirs", "invalid",
			    "request: "
			    "`workdirs` is a non-empty array, and excludes "
			    "`workdir`");
		json_array_foreach (v, i, it)
			if (i == 0 &&
			    (q->workdir = own(q, json_string_value(it))) ==
				NULL)
				return sbx_error_sys(e, "nomem", "request");
			else if (i == 0)
				continue;
			else if (sbx_strv_push(&q->xworkdirs,
				     json_string_value(it)) == -1)
				return sbx_error_sys(e, "nomem", "request");
	}
	v = cmd != NULL ? cmd : args;
	n = json_array_size(v);
	if ((q->own_argv = calloc(n + 1, sizeof(char *))) == NULL)
		return sbx_error_sys(e, "nomem", "request");
	json_array_foreach(v, i, it) {
		/* The argv of a command is bytes, and a string with a NUL in
		 * it cannot be one: jansson's length tells. */
		if (strlen(json_string_value(it)) != json_string_length(it))
			return bad(e, "command", "nul_byte", "request: an "
			    "argument holds a NUL byte");
		if ((q->own_argv[argc++] = (char *)own(q,
		    json_string_value(it))) == NULL)
			return sbx_error_sys(e, "nomem", "request");
	}
	q->argv = q->own_argv;
	q->argc = argc;
	return 0;
}

int
sbx_exec_req_read(struct sbx_exec_req *q, int fd, size_t cap,
    struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*o;
	char		 chunk[65536];
	ssize_t		 n;
	int		 rc;

	/* One byte past the cap is enough to refuse it. */
	while (b.len <= cap && ((n = read(fd, chunk, sizeof(chunk))) > 0 ||
	    (n == -1 && errno == EINTR)))
		if (n > 0 && sbx_buf_append(&b, chunk, (size_t)n) == -1) {
			sbx_buf_release(&b);
			return sbx_error_sys(e, "nomem", "request");
		}
	o = sbx_json_parse(b.p ? b.p : "", b.len, cap, e);
	sbx_buf_release(&b);
	if (o == NULL) {
		e->field = "request";
		return -1;
	}
	rc = sbx_exec_req_json(q, o, e);
	json_decref(o);
	return rc;
}

int
sbx_exec_req_load(struct sbx_exec_req *q, const char *path, size_t cap,
    struct sbx_error *e)
{
	int	 fd, rc;

	fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC |
	    O_NOCTTY);
	if (fd == -1)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "request",
		    "unreadable", "cannot read the request %s: %s", path,
		    strerror(errno));
	rc = sbx_exec_req_read(q, fd, cap, e);
	if (fd != 0)
		close(fd);
	if (rc == -1)
		return -1;
	/* Standard input carried the request: the command gets none. */
	if (fd == 0 && q->stdin_mode != NULL &&
	    strcmp(q->stdin_mode, "inherit") == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "stdin",
		    "stdin_consumed", "request: `stdin` cannot be inherit when "
		    "the request is read from standard input");
	if (fd == 0)
		q->stdin_mode = "null";
	return 0;
}
