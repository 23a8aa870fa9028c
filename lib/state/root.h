/* root.h: the state root of DESIGN.md §3. */
#ifndef SBX_ROOT_H
#define SBX_ROOT_H

#include "error.h"

struct sbx_root {
	char		*path;		/* absolute */
	const char	*source;	/* flag_override, environment_override,
					   default_home */
	int		 fd;		/* O_DIRECTORY, or -1 until opened */
};

#define SBX_ROOT_INIT { NULL, NULL, -1 }

/* The file that marks a directory as an sbx state root (written by
 * provision, as part of the layout, and by sbx exec), so that sbx can
 * recognise any state root, not only the one it was given. */
#define SBX_ROOT_MARKER	".sbx-state-root"
/* How far below a directory sbx_root_find_below looks, and at most how
 * many directories it examines. */
#define SBX_ROOT_SCAN_DEPTH	3
#define SBX_ROOT_SCAN_BUDGET	4096

/* Resolve the path (no file-system access beyond getcwd): --home flag,
 * SBX_HOME, $XDG_DATA_HOME/sbx, ~/.local/share/sbx. */
int	sbx_root_resolve(const char *flag, struct sbx_root *,
	    struct sbx_error *);
/* Open the root, creating it 0700 (and missing parents) when create is
 * set. Refuses a root not owned by us or writable by group or others. */
int	sbx_root_open(struct sbx_root *, int create, struct sbx_error *);
void	sbx_root_release(struct sbx_root *);
/* Create SBX_ROOT_MARKER in the root (O_EXCL, never through a symlink);
 * an existing one is left alone. */
int	sbx_root_mark(int rootfd, struct sbx_error *);
/* Is the directory dirfd a state root: does it hold SBX_ROOT_MARKER (of
 * any type), or, for roots made before the marker existed, both
 * run/tokens and config/?  1 yes, 0 no, -1 (errno EACCES...) cannot
 * tell. */
int	sbx_root_is_state_root(int dirfd);
/* Look for a state root strictly below dirfd, at most `depth` levels down,
 * examining at most `budget` directories, without following symbolic
 * links.  1: found (its path relative to dirfd in rel), 0: none, -1: cannot
 * tell (reason "state_root_unchecked": the budget ran out, or a directory
 * of ours could not be read, which a sandbox running as us could undo). */
int	sbx_root_find_below(int dirfd, int depth, size_t budget, char *rel,
	    size_t relsz, struct sbx_error *);
/* Nonzero when `path` names the root, lies inside it, or is one of its
 * ancestors (so binding it would expose the root). Paths are canonical. */
int	sbx_root_path_overlaps(const char *path, const char *other);

#endif
