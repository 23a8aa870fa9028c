/*
 * filesearch.h: sbx file search: ripgrep run inside the agent's sandbox
 * through `sbx exec --json` (the process boundary: the sandbox sees the
 * home exactly as the agent does, and exec scrubs the agent's secrets
 * from what comes back), its --json output parsed into matches.
 */
#ifndef SBX_FILESEARCH_H
#define SBX_FILESEARCH_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"

#define SBX_FILESEARCH_MAX_DEFAULT 100
#define SBX_FILESEARCH_MAX	   500 /* --max at most */
#define SBX_FILESEARCH_CONTEXT_MAX 50 /* --context at most */
#define SBX_FILESEARCH_PATTERN_MAX 4096 /* bytes */
#define SBX_FILESEARCH_OUTPUT_MAX  (4u << 20) /* rg's output kept */
#define SBX_FILESEARCH_TEXT_MAX	   2000 /* a line, in characters */

struct sbx_filesearch {
	const char	  *agent;
	const char	  *home; /* the state root, or NULL */
	const char	  *pattern; /* a ripgrep regular expression */
	const char	  *path; /* relative to the home, checked */
	const char *const *globs;
	size_t		   nglobs;
	int		   files; /* --files: names, no search */
	unsigned	   context; /* lines before and after */
	unsigned	   max; /* results at most */
	const char	  *exec; /* sbx-exec; NULL: next to us */
};

/* The argv of the sbx-exec run (exec: the program's path). */
int sbx_filesearch_argv(const struct sbx_filesearch *, const char *exec,
    struct sbx_strv *, struct sbx_error *);
/*
 * rg's output (n bytes: --json lines, or with files one name a line)
 * into the result: {pattern, path, matches[{path, line, column, text,
 * before[], after[]}] or files[], count, truncated, binary_skipped}.
 * Files ripgrep found binary are left out; text is cut at
 * SBX_FILESEARCH_TEXT_MAX characters; at most q->max results.
 */
int sbx_filesearch_parse(const struct sbx_filesearch *, const char *out,
    size_t n, json_t **res, struct sbx_error *);
/* Run the search (sbx exec --json -- rg ...) and parse it. */
int sbx_filesearch_run(const struct sbx_filesearch *, json_t **res,
    struct sbx_error *);

#endif
