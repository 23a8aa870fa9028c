/*
 * sbx-file's text output (see cmd/file-int.h): a listing and the results
 * of a search, a line each, escaped for the terminal; --json prints the
 * envelope instead (cmd/sbx-file.c).
 */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "agentfs.h"
#include "buf.h"
#include "file-int.h"
#include "utf8.h"

/* Text output of a listing: "TYPE SIZE PATH" a line. */
void
file_print_listing(json_t *res, int quiet)
{
	struct sbx_buf l = SBX_BUF_INIT;
	json_t	      *ent;
	const char    *p;
	size_t	       i;

	json_array_foreach (json_object_get(res, "entries"), i, ent) {
		p = json_string_value(json_object_get(ent, "path"));
		sbx_buf_reset(&l);
		sbx_utf8_escape_line(&l, p, strlen(p));
		printf("%-9s %10lld  %s\n",
		    json_string_value(json_object_get(ent, "type")),
		    (long long)json_integer_value(json_object_get(ent, "size")),
		    l.p != NULL ? l.p : "");
	}
	sbx_buf_release(&l);
	if (json_is_true(json_object_get(res, "truncated")) && !quiet)
		fprintf(stderr,
		    "%s: warning: listing truncated at %d "
		    "entries\n",
		    PROG, SBX_AGENTFS_ENTRIES_MAX);
}

/* Text output of a search: "PATH:LINE:COLUMN:TEXT", or the names. */
void
file_print_search(json_t *res, int quiet)
{
	struct sbx_buf l = SBX_BUF_INIT;
	json_t	      *m;
	size_t	       i;

	json_array_foreach (json_object_get(res, "files"), i, m) {
		sbx_buf_reset(&l);
		sbx_utf8_escape_line(&l, json_string_value(m),
		    json_string_length(m));
		printf("%s\n", l.p != NULL ? l.p : "");
	}
	json_array_foreach (json_object_get(res, "matches"), i, m) {
		sbx_buf_reset(&l);
		sbx_buf_printf(&l, "%s:%lld:%lld:%s",
		    json_string_value(json_object_get(m, "path")),
		    (long long)json_integer_value(json_object_get(m, "line")),
		    (long long)json_integer_value(json_object_get(m, "column")),
		    json_string_value(json_object_get(m, "text")));
		{
			struct sbx_buf t = SBX_BUF_INIT;
			sbx_utf8_escape_line(&t, l.p, l.len);
			printf("%s\n", t.p != NULL ? t.p : "");
			sbx_buf_release(&t);
		}
	}
	sbx_buf_release(&l);
	if (json_is_true(json_object_get(res, "truncated")) && !quiet)
		fprintf(stderr, "%s: warning: results truncated (--max)\n",
		    PROG);
}
