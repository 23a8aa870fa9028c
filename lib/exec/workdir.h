/*
 * workdir.h: the --workdir directories of a run (lib/exec/exec.h) and
 * what the sandbox's uid must reach.
 *
 * A workdir is walked from / one component at a time, no link followed,
 * and refused when it is a system directory, a person's home (or a hidden
 * directory of one), or holds or lies inside an sbx state root; as root it
 * is handed to the sandbox's uid as a private, idmapped copy of its mount
 * when that uid cannot write or reach it.  Part of lib/exec: the functions
 * work on a struct sbx_exec being prepared; nothing here prints or exits.
 */
#ifndef SBX_WORKDIR_H
#define SBX_WORKDIR_H

#include "error.h"

struct sbx_exec;

/* The first --workdir (req->workdir): checked, opened (workdir_fd), and
 * as root its copy made (workdir_tree, workdir_mnt). */
int	sbx_workdir_prepare(struct sbx_exec *, struct sbx_error *);
/* The other --workdir directories (req->xworkdirs), each checked as the
 * first, into xwd[]; directories that overlap are refused. */
int	sbx_workdir_prepare_others(struct sbx_exec *, struct sbx_error *);
/* Is path / or a system directory (or inside one that must stay
 * read-only)? */
int	sbx_workdir_is_system_dir(const char *path);
/* Can anyone walk down to path and read it (every ancestor o+x)? */
int	sbx_workdir_others_can_reach(const char *path);
/* As root: the state root reachable by the sandbox's uid (its ancestors
 * searchable, the directories down to the homes 0711), or rejected. */
int	sbx_workdir_reachable_root(struct sbx_exec *, struct sbx_error *);

#endif
