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

enum rtype { R_STR, R_BOOL, R_NUM, R_STRV, R_LIMIT };

static const struct rkey {
	const char	*name;
	enum rtype	 type;
	const char	*limit;		/* R_LIMIT: the sbx_limits_set key */
} rkeys[] = {
	{ "agent",	R_STR, NULL },
	{ "allow_domain", R_STRV, NULL },
	{ "args",	R_STRV, NULL },
	{ "ask",	R_BOOL, NULL },
	{ "background",	R_BOOL, NULL },
	{ "command",	R_STRV, NULL },
	{ "cpus",	R_LIMIT, "cpus" },
	{ "cwd",	R_STR, NULL },
	{ "disk",	R_LIMIT, "disk_mib" },
	{ "env",	R_STRV, NULL },
	{ "fail_on_violation", R_BOOL, NULL },
	{ "host_view",	R_BOOL, NULL },
	{ "file_size",	R_LIMIT, "file_size_mib" },
	{ "max_output",	R_NUM, NULL },
	{ "memory",	R_LIMIT, "memory_mib" },
	{ "network",	R_STR, NULL },
	{ "no_secrets",	R_BOOL, NULL },
	{ "nofile",	R_LIMIT, "nofile" },
	{ "pids",	R_LIMIT, "pids" },
	{ "ro",		R_STRV, NULL },
	{ "seccomp",	R_STR, NULL },
	{ "secrets",	R_STRV, NULL },
	{ "shell",	R_STR, NULL },
	{ "soft_limits", R_BOOL, NULL },
	{ "stdin",	R_STR, NULL },
	{ "timeout",	R_NUM, NULL },
	{ "tty",	R_BOOL, NULL },
	{ "unprotect",	R_STRV, NULL },
	{ "wall_timeout", R_LIMIT, "wall_timeout" },
	{ "workdir",	R_STR, NULL },
	{ "workdir_follow_symlinks", R_BOOL, NULL },
	{ "workdirs",	R_STRV, NULL },
};

static const struct rkey *
rkey_find(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof(rkeys) / sizeof(*rkeys); i++)
		if (strcmp(rkeys[i].name, name) == 0)
			return &rkeys[i];
	return NULL;
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
	const struct rkey	*k;
	const char		*key, *s;
	json_t			*v, *it, *cmd, *args;
	size_t			 i, n;
	int			 argc = 0;

	if (!json_is_object(o))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "request",
		    "not_an_object", "the request must be a JSON object");
	json_object_foreach((json_t *)o, key, v) {
		if ((k = rkey_find(key)) == NULL)
			return bad(e, "request", "unknown_key", "request: "
			    "unknown key `%.64s`", key);
		switch (k->type) {
		case R_STR:
			if (!json_is_string(v))
				return bad(e, k->name, "wrong_type", "request: "
				    "`%s` must be a string", k->name);
			break;
		case R_BOOL:
			if (!json_is_boolean(v))
				return bad(e, k->name, "wrong_type", "request: "
				    "`%s` must be true or false", k->name);
			break;
		case R_NUM:
		case R_LIMIT:
			if (!json_is_number(v) && !json_is_string(v))
				return bad(e, k->name, "wrong_type", "request: "
				    "`%s` must be a number", k->name);
			break;
		case R_STRV:
			if (!json_is_array(v))
				return bad(e, k->name, "wrong_type", "request: "
				    "`%s` must be an array of strings", k->name);
			json_array_foreach(v, i, it)
				if (!json_is_string(it))
					return bad(e, k->name, "wrong_type",
					    "request: `%s` must be an array of "
					    "strings", k->name);
			break;
		}
		if (k->type == R_LIMIT) {
			if ((s = num_text(q, v)) == NULL ||
			    sbx_strv_push(&q->limit_keys, k->limit) == -1 ||
			    sbx_strv_push(&q->limit_keys, s) == -1)
				return sbx_error_sys(e, "nomem", "request");
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
	/* Copies: the request outlives the parsed envelope. */
#define STR(name)	(json_object_get(o, name) == NULL ? NULL : \
	    own(q, json_string_value(json_object_get(o, name))))
#define BOOL(name)	(json_is_true(json_object_get(o, name)))
	if (json_object_get(o, "agent") != NULL)
		q->agent = STR("agent");
	q->cwd = STR("cwd");
	q->workdir = STR("workdir");
	q->workdir_follow = BOOL("workdir_follow_symlinks");
	q->network = STR("network");
	q->seccomp = STR("seccomp");
	q->shell = STR("shell");
	q->stdin_mode = STR("stdin");
	q->tty = BOOL("tty");
	q->background = BOOL("background");
	q->soft_limits = BOOL("soft_limits");
	q->no_secrets = BOOL("no_secrets");
	q->ask = BOOL("ask");
	q->host_view = BOOL("host_view");
	if (BOOL("fail_on_violation"))
		q->fail_on_violation = 1;
	if ((v = json_object_get(o, "timeout")) != NULL &&
	    (q->timeout = num_text(q, v)) == NULL)
		return sbx_error_sys(e, "nomem", "request");
	if ((v = json_object_get(o, "max_output")) != NULL &&
	    (q->max_output = num_text(q, v)) == NULL)
		return sbx_error_sys(e, "nomem", "request");
#undef STR
#undef BOOL
	json_array_foreach(json_object_get(o, "env"), i, it)
		if (sbx_strv_push(&q->env, json_string_value(it)) == -1)
			return sbx_error_sys(e, "nomem", "request");
	json_array_foreach(json_object_get(o, "secrets"), i, it)
		if (sbx_strv_push(&q->secrets, json_string_value(it)) == -1)
			return sbx_error_sys(e, "nomem", "request");
	json_array_foreach(json_object_get(o, "allow_domain"), i, it)
		if (sbx_strv_push(&q->allow, json_string_value(it)) == -1)
			return sbx_error_sys(e, "nomem", "request");
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
	json_array_foreach (json_object_get(o, "ro"), i, it)
		if (sbx_strv_push(&q->ro, json_string_value(it)) == -1)
			return sbx_error_sys(e, "nomem", "request");
	json_array_foreach (json_object_get(o, "unprotect"), i, it)
		if (sbx_strv_push(&q->unprotect, json_string_value(it)) == -1)
			return sbx_error_sys(e, "nomem", "request");
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
