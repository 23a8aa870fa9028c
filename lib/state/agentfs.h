/*
 * agentfs.h: an agent's home as sbx file sees it: paths checked component
 * by component, opened beneath the home's descriptor with openat2
 * (RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), regular files only, sizes
 * capped before reading, writes atomic.  Results are the `result` objects
 * of sbx-file(1)'s envelopes.
 */
#ifndef SBX_AGENTFS_H
#define SBX_AGENTFS_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define SBX_AGENTFS_FILE_MAX	(16u << 20) /* read, edit: a file */
#define SBX_AGENTFS_WRITE_MAX	(16u << 20) /* write: the content */
#define SBX_AGENTFS_CHARS	15000 /* read's default cap */
#define SBX_AGENTFS_CHARS_MAX	(1u << 20) /* --max-chars at most */
#define SBX_AGENTFS_DEPTH_MAX	16 /* list --depth at most */
#define SBX_AGENTFS_ENTRIES_MAX 5000 /* list: entries at most */
#define SBX_AGENTFS_LINES_SHOWN 10 /* edit: match lines reported */

struct sbx_agentfs {
	int  home_fd; /* the agent's home, O_DIRECTORY */
	char home[96]; /* its path inside the sandbox */
};

#define SBX_AGENTFS_INIT \
	{ \
		-1, "" \
	}

/*
 * A path an agent gives (len bytes, so that a NUL inside is seen):
 * relative to its home, or absolute under `home` (the home inside the
 * sandbox).  Refused with invalid_args, field "path": reasons empty,
 * nul_byte, control_character, empty_component, traversal (a `..`
 * component), too_long, component_too_long, outside_home.  One trailing
 * `/` and `.` components are allowed.  rel gets the path relative to the
 * home, "." for the home itself.
 */
int sbx_agentfs_path(const char *home, const char *p, size_t len, char *rel,
    size_t relsz, struct sbx_error *);
/* Open the existing home of agent beneath rootfd (never through a
 * symbolic link); not_found (reason agent_home_missing) without one. */
int  sbx_agentfs_open(struct sbx_agentfs *, int rootfd, const char *agent,
     struct sbx_error *);
void sbx_agentfs_close(struct sbx_agentfs *);

struct sbx_agentfs_readopt {
	unsigned long start_line; /* 1-based; 0: 1 */
	unsigned long line_count; /* 0: to the end */
	unsigned long tail_lines; /* 0: none; else the last N lines */
	unsigned long max_chars; /* 0: SBX_AGENTFS_CHARS */
};

/* read: {path, type:"file", content, size, total_lines, start_line,
 * end_line, truncated, binary}; a directory gives list's result at depth
 * 1.  Non-regular files are refused (reason not_regular_file, never
 * opened for reading), files over SBX_AGENTFS_FILE_MAX too (too_large). */
int sbx_agentfs_read(struct sbx_agentfs *, const char *rel,
    const struct sbx_agentfs_readopt *, json_t	     **res, struct sbx_error *);
/* list: {path, type:"directory", depth, entries[{name, path, type,
 * size}], truncated}; paths relative to the home; symbolic links are
 * listed, never followed. */
int sbx_agentfs_list(struct sbx_agentfs *, const char *rel, int depth,
    json_t **res, struct sbx_error *);
/* write: data replaces (or creates) rel atomically (temp file and rename
 * in its directory); mode: -1 keeps an existing file's (new: 0644).
 * {path, bytes, created, mode}. */
int sbx_agentfs_write(struct sbx_agentfs *, const char *rel, const void *data,
    size_t n, int create_dirs, int mode, json_t **res, struct sbx_error *);
/* edit: exact, non-overlapping matches of old replaced by new; old must
 * occur once, or any number of times (at least once) with all.  On no or
 * several matches *extra (may be NULL) gets {count, lines} (the lines of
 * the first matches).  {path, replacements, bytes_before, bytes_after}. */
int sbx_agentfs_edit(struct sbx_agentfs *, const char *rel, const char *old,
    size_t oldn, const char *new, size_t newn, int all, json_t **res,
    json_t **extra, struct sbx_error *);

#endif
