/* file-int.h: what sbx-file's two files share (cmd/sbx-file.c: the
 * command line and the calls into agentfs.c and filesearch.c;
 * cmd/file-text.c: the text output of list and search). */
#ifndef SBX_FILE_INT_H
#define SBX_FILE_INT_H

#include <jansson.h>

#define PROG "sbx-file"

/* "TYPE SIZE PATH" a line; a warning on stderr when truncated (unless
 * quiet). */
void file_print_listing(json_t *res, int quiet);
/* "PATH:LINE:COLUMN:TEXT" a line, or the names (--files); a warning on
 * stderr when truncated (unless quiet). */
void file_print_search(json_t *res, int quiet);

#endif
