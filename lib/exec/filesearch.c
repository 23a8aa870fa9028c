/*
 * filesearch.c: sbx file search (see filesearch.h).
 *
 * ripgrep runs inside the agent's sandbox, not on the host: it then sees
 * the home exactly as the agent does (a symbolic link planted to /etc
 * leads to the sandbox's /etc, not the host's), runs under the agent's
 * limits and seccomp filter, and its output is scrubbed of the agent's
 * secrets by sbx exec like any command's.  We reach it through the
 * process boundary (sbx exec --json, argv only: no shell ever sees the
 * pattern), as DESIGN.md asks of everything that is not the engine.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "envelope.h"
#include "filesearch.h"
#include "tools.h"

extern char **environ;

int
sbx_filesearch_argv(const struct sbx_filesearch *q, const char *exec,
    struct sbx_strv *v, struct sbx_error *e)
{
	size_t i, n = strlen(q->pattern);

	if (n == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "pattern", "empty",
		    "argument `pattern` is empty");
	if (n > SBX_FILESEARCH_PATTERN_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "pattern",
		    "too_long", "argument `pattern` is longer than %d bytes",
		    SBX_FILESEARCH_PATTERN_MAX);
	for (i = 0; i < q->nglobs; i++)
		if (*q->globs[i] == '\0' || strlen(q->globs[i]) > 1024)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "glob",
			    "bad_glob",
			    "argument `glob` must be 1 to 1024 "
			    "bytes");
	/* Network none: a search never needs one, whatever the agent's
	 * setting.  --max-output bounds what comes back; --timeout a
	 * search that stops producing output. */
	if (sbx_strv_push(v, exec) == -1 || sbx_strv_push(v, "--json") == -1 ||
	    sbx_strv_push(v, "--agent") == -1 ||
	    sbx_strv_push(v, q->agent) == -1 ||
	    (q->home != NULL &&
		(sbx_strv_push(v, "--home") == -1 ||
		    sbx_strv_push(v, q->home) == -1)) ||
	    sbx_strv_push(v, "--stdin") == -1 ||
	    sbx_strv_push(v, "null") == -1 ||
	    sbx_strv_push(v, "--network") == -1 ||
	    sbx_strv_push(v, "none") == -1 ||
	    sbx_strv_push(v, "--timeout") == -1 ||
	    sbx_strv_push(v, "60") == -1 ||
	    sbx_strv_pushf(v, "--max-output=%u", SBX_FILESEARCH_OUTPUT_MAX) ==
		-1 ||
	    sbx_strv_push(v, "--") == -1 || sbx_strv_push(v, "rg") == -1 ||
	    sbx_strv_push(v, "--no-config") == -1 ||
	    sbx_strv_push(v, q->files ? "--files-with-matches" : "--json") ==
		-1 ||
	    sbx_strv_pushf(v, "--max-count=%u", q->max) == -1 ||
	    (!q->files && q->context > 0 &&
		sbx_strv_pushf(v, "--context=%u", q->context) == -1))
		return sbx_error_sys(e, "nomem", "search");
	for (i = 0; i < q->nglobs; i++)
		if (sbx_strv_pushf(v, "--glob=%s", q->globs[i]) == -1)
			return sbx_error_sys(e, "nomem", "search");
	/* --regexp=: a pattern that starts with `-` stays a pattern; `--`:
	 * the path too. */
	if (sbx_strv_pushf(v, "--regexp=%s", q->pattern) == -1 ||
	    sbx_strv_push(v, "--") == -1 || sbx_strv_push(v, q->path) == -1)
		return sbx_error_sys(e, "nomem", "search");
	return 0;
}

/* ---- parsing ------------------------------------------------------------ */

/* rg's {"text": ...} or {"bytes": base64} as a JSON string: cut at
 * SBX_FILESEARCH_TEXT_MAX characters, a trailing newline dropped. */
static json_t *
rg_text(json_t *o, int *cut)
{
	const char    *t, *b64;
	unsigned char *raw = NULL;
	size_t	       n, rawn, i, chars = 0;
	json_t	      *r;

	if ((t = json_string_value(json_object_get(o, "text"))) != NULL)
		n = json_string_length(json_object_get(o, "text"));
	else if ((b64 = json_string_value(json_object_get(o, "bytes"))) !=
	    NULL) {
		n = strlen(b64);
		if ((raw = malloc(n + 1)) == NULL ||
		    sodium_base642bin(raw, n + 1, b64, n, NULL, &rawn, NULL,
			sodium_base64_VARIANT_ORIGINAL) != 0) {
			free(raw);
			return json_string("");
		}
		t = (const char *)raw;
		n = rawn;
	} else
		return json_string("");
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r'))
		n--;
	for (i = 0; i < n; i++) {
		if (((unsigned char)t[i] & 0xc0) == 0x80)
			continue;
		if (chars++ == SBX_FILESEARCH_TEXT_MAX) {
			n = i;
			if (cut != NULL)
				*cut = 1;
			break;
		}
	}
	r = sbx_json_bytes(t, n);
	free(raw);
	return r;
}

/* A path as rg printed it, without the "./" of a search of ".". */
static json_t *
rg_path(json_t *data)
{
	json_t	   *p = rg_text(json_object_get(data, "path"), NULL);
	const char *s = json_string_value(p);
	json_t	   *r;

	if (s == NULL || strncmp(s, "./", 2) != 0)
		return p;
	r = json_string(s + 2);
	json_decref(p);
	return r;
}

/* The lines of one file: matches and context, by line number. */
struct file {
	json_t *lines; /* "N" -> text */
	json_t *matches; /* pending matches of the file */
};

static void
file_flush(struct file *f, const struct sbx_filesearch *q, json_t *out,
    int binary, int *truncated, unsigned *skipped)
{
	json_t	  *m, *b, *a, *t;
	json_int_t ln, k;
	size_t	   i;
	char	   key[32];

	if (binary && json_array_size(f->matches) > 0)
		(*skipped)++;
	json_array_foreach (f->matches, i, m) {
		if (binary)
			break;
		if (json_array_size(out) >= q->max) {
			*truncated = 1;
			break;
		}
		ln = json_integer_value(json_object_get(m, "line"));
		b = json_array();
		a = json_array();
		for (k = ln - (json_int_t)q->context; k < ln; k++) {
			snprintf(key, sizeof(key), "%lld", (long long)k);
			if (k > 0 &&
			    (t = json_object_get(f->lines, key)) != NULL)
				json_array_append(b, t);
		}
		for (k = ln + 1; k <= ln + (json_int_t)q->context; k++) {
			snprintf(key, sizeof(key), "%lld", (long long)k);
			if ((t = json_object_get(f->lines, key)) != NULL)
				json_array_append(a, t);
		}
		json_object_set_new(m, "before", b);
		json_object_set_new(m, "after", a);
		json_array_append(out, m);
	}
	json_object_clear(f->lines);
	json_array_clear(f->matches);
}

static int
parse_json_lines(const struct sbx_filesearch *q, const char *out, size_t n,
    json_t *matches, int *truncated, unsigned *skipped, int *cut)
{
	struct file f;
	const char *p = out, *nl, *type;
	json_t	   *ev, *data, *sub, *m;
	json_int_t  ln, col;
	char	    key[32];

	f.lines = json_object();
	f.matches = json_array();
	if (f.lines == NULL || f.matches == NULL)
		return -1;
	for (; p < out + n; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(out + n - p))) == NULL)
			break; /* a cut last line (--max-output) */
		if ((ev = json_loadb(p, (size_t)(nl - p), JSON_ALLOW_NUL,
			 NULL)) == NULL)
			continue;
		type = json_string_value(json_object_get(ev, "type"));
		data = json_object_get(ev, "data");
		if (type == NULL || data == NULL) {
			json_decref(ev);
			continue;
		}
		ln = json_integer_value(json_object_get(data, "line_number"));
		if (strcmp(type, "match") == 0 ||
		    strcmp(type, "context") == 0) {
			snprintf(key, sizeof(key), "%lld", (long long)ln);
			json_object_set_new(f.lines, key,
			    rg_text(json_object_get(data, "lines"), cut));
		}
		if (strcmp(type, "match") == 0) {
			sub = json_array_get(
			    json_object_get(data, "submatches"), 0);
			col =
			    json_integer_value(json_object_get(sub, "start")) +
			    1;
			m = json_pack("{s:o,s:I,s:I,s:O}", "path",
			    rg_path(data), "line", ln, "column", col, "text",
			    json_object_get(f.lines, key));
			json_array_append_new(f.matches, m);
		} else if (strcmp(type, "end") == 0)
			file_flush(&f, q, matches,
			    !json_is_null(
				json_object_get(data, "binary_offset")) &&
				json_object_get(data, "binary_offset") != NULL,
			    truncated, skipped);
		json_decref(ev);
	}
	/* Output cut before a file's end: what came of it still counts. */
	if (json_array_size(f.matches) > 0) {
		*truncated = 1;
		file_flush(&f, q, matches, 0, truncated, skipped);
	}
	json_decref(f.lines);
	json_decref(f.matches);
	return 0;
}

int
sbx_filesearch_parse(const struct sbx_filesearch *q, const char *out, size_t n,
    json_t **res, struct sbx_error *e)
{
	json_t	   *items, *one;
	const char *p, *nl;
	unsigned    skipped = 0;
	int	    truncated = 0, cut = 0;

	if ((items = json_array()) == NULL)
		return sbx_error_sys(e, "nomem", "search");
	if (q->files) {
		for (p = out; p < out + n; p = nl + 1) {
			if ((nl = memchr(p, '\n', (size_t)(out + n - p))) ==
			    NULL)
				break;
			if (nl == p)
				continue;
			if (json_array_size(items) >= q->max) {
				truncated = 1;
				break;
			}
			one = sbx_json_bytes(p +
				(strncmp(p, "./", 2) == 0 ? 2 : 0),
			    (size_t)(nl - p) -
				(strncmp(p, "./", 2) == 0 ? 2 : 0));
			json_array_append_new(items, one);
		}
	} else if (parse_json_lines(q, out, n, items, &truncated, &skipped,
		       &cut) == -1) {
		json_decref(items);
		return sbx_error_sys(e, "nomem", "search");
	}
	*res = json_pack("{s:s,s:s,s:I,s:o,s:b,s:I,s:b}", "pattern", q->pattern,
	    "path", q->path, "count", (json_int_t)json_array_size(items),
	    q->files ? "files" : "matches", items, "truncated", truncated,
	    "binary_skipped", (json_int_t)skipped, "lines_cut", cut);
	if (*res == NULL)
		return sbx_error_sys(e, "nomem", "search");
	return 0;
}

/* ---- running ------------------------------------------------------------ */

/* Run argv with stdin /dev/null and stdout into b (at most cap bytes;
 * more is drained and dropped); its wait status in *status. */
static int
run_capture(char **argv, struct sbx_buf *b, size_t cap, int *status,
    struct sbx_error *e)
{
	posix_spawn_file_actions_t fa;
	char			   chunk[65536];
	ssize_t			   k;
	pid_t			   pid;
	int			   pfd[2], rc;

	if (pipe2(pfd, O_CLOEXEC) == -1)
		return sbx_error_sys(e, "pipe", "search");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (rc != 0) {
		close(pfd[0]);
		errno = rc;
		return sbx_error_sys(e, "exec_unavailable", "cannot run %s",
		    argv[0]);
	}
	for (;;) {
		k = read(pfd[0], chunk, sizeof(chunk));
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		if (b->len + (size_t)k <= cap)
			(void)sbx_buf_append(b, chunk, (size_t)k);
	}
	close(pfd[0]);
	while (waitpid(pid, status, 0) == -1)
		if (errno != EINTR)
			return sbx_error_sys(e, "wait", "search");
	return 0;
}

/* rg's stderr on one line (blanks squeezed), for a message. */
static void
one_line(const char *s, char *out, size_t outsz)
{
	size_t n = 0;
	int    blank = 1;

	for (; *s != '\0' && n + 1 < outsz; s++) {
		if (*s == '\n' || *s == ' ' || *s == '\t') {
			if (!blank)
				out[n++] = ' ';
			blank = 1;
			continue;
		}
		out[n++] = *s;
		blank = 0;
	}
	while (n > 0 && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

int
sbx_filesearch_run(const struct sbx_filesearch *q, json_t **res,
    struct sbx_error *e)
{
	struct sbx_strv v = SBX_STRV_INIT;
	struct sbx_buf	b = SBX_BUF_INIT;
	char	       *dir = NULL, *exec = NULL, line[320];
	const char     *out, *err;
	json_t	       *env = NULL, *r;
	json_int_t	code;
	int		status, rv = -1;

	if (q->exec == NULL) {
		if ((dir = sbx_tools_self_dir()) == NULL ||
		    asprintf(&exec, "%s/sbx-exec", dir) == -1) {
			exec = NULL;
			sbx_error_sys(e, "self_unknown",
			    "cannot locate "
			    "sbx-exec");
			goto out;
		}
	}
	if (sbx_filesearch_argv(q, exec != NULL ? exec : q->exec, &v, e) ==
		-1 ||
	    run_capture(v.v, &b, SBX_ENVELOPE_MAX, &status, e) == -1)
		goto out;
	if (b.len == 0 ||
	    (env = sbx_json_parse(b.p, b.len, SBX_ENVELOPE_MAX, e)) == NULL) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL, "exec_failed",
		    "sbx exec gave no envelope (status %d)", status);
		goto out;
	}
	if (!json_is_true(json_object_get(env, "ok"))) {
		/* exec's own failure (no bwrap, a bad setting...): its
		 * kind and reason are ours. */
		sbx_error_set(e,
		    json_string_value(json_object_get(env, "kind")) != NULL &&
			    strcmp(
				json_string_value(json_object_get(env, "kind")),
				SBX_K_TIMEOUT) == 0 ?
			SBX_K_TIMEOUT :
			SBX_K_UNAVAILABLE,
		    NULL, "exec_failed",
		    "the search could not run in the sandbox: %s",
		    json_string_value(json_object_get(env, "message")) ?
			json_string_value(json_object_get(env, "message")) :
			"?");
		goto out;
	}
	r = json_object_get(env, "result");
	code = json_integer_value(json_object_get(r, "exit_code"));
	out = json_string_value(json_object_get(r, "stdout"));
	err = json_string_value(json_object_get(r, "stderr"));
	one_line(err != NULL ? err : "", line, sizeof(line));
	if (code == 127 || code == 126) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "ripgrep_missing",
		    "ripgrep (rg) cannot run in agent %s's sandbox", q->agent);
		sbx_error_hint(e, "sbx install --agent %s apt:ripgrep",
		    q->agent);
		goto out;
	}
	if (code == 2 && err != NULL && strstr(err, "regex parse error")) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "pattern", "bad_pattern",
		    "argument `pattern` is not a valid regular expression: %s",
		    line);
		goto out;
	}
	if (code == 2 && err != NULL && strstr(err, "No such file")) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "path", "not_found",
		    "%s does not exist in the home", q->path);
		goto out;
	}
	if (code != 0 && code != 1 && code != 2) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL, "search_failed",
		    "ripgrep failed (exit %lld): %s", (long long)code, line);
		goto out;
	}
	if (sbx_filesearch_parse(q, out != NULL ? out : "",
		out != NULL ? json_string_length(json_object_get(r, "stdout")) :
			      0,
		res, e) == -1)
		goto out;
	/* Exit 2 with results: some files could not be read. */
	if (code == 2)
		json_object_set_new(*res, "error", json_string(line));
	if (json_object_get(r, "truncated") != NULL)
		json_object_set_new(*res, "truncated", json_true());
	rv = 0;
out:
	json_decref(env);
	sbx_buf_release(&b);
	sbx_strv_release(&v);
	free(exec);
	free(dir);
	return rv;
}
