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

/* Resolve the path (no file-system access beyond getcwd): --home flag,
 * SBX_HOME, $XDG_DATA_HOME/sbx, ~/.local/share/sbx. */
int	sbx_root_resolve(const char *flag, struct sbx_root *,
	    struct sbx_error *);
/* Open the root, creating it 0700 (and missing parents) when create is
 * set. Refuses a root not owned by us or writable by group or others. */
int	sbx_root_open(struct sbx_root *, int create, struct sbx_error *);
void	sbx_root_release(struct sbx_root *);
/* Nonzero when `path` names the root, lies inside it, or is one of its
 * ancestors (so binding it would expose the root). Paths are canonical. */
int	sbx_path_overlaps(const char *path, const char *other);

#endif
