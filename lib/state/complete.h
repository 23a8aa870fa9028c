/*
 * complete.h: what the shell completions offer besides options (those
 * come from each program's option table, opts.h): the agents, the
 * background jobs and the image names of a state root, resolved as every
 * program resolves it (--home, SBX_HOME, root's /var/lib/sbx, XDG...).
 * Read only: nothing is created, pruned or followed through a symlink.
 */
#ifndef SBX_COMPLETE_H
#define SBX_COMPLETE_H

#include "buf.h"
#include "error.h"

/* The agents of the state root (home: the --home given, or NULL), sorted;
 * none when the root does not exist. */
int	sbx_complete_agents(const char *home, struct sbx_strv *,
	    struct sbx_error *);
/* The ids of the agent's background jobs (agents/A/jobs/ID.json), sorted. */
int	sbx_complete_jobs(const char *home, const char *agent,
	    struct sbx_strv *, struct sbx_error *);
/* The ids of the plugin library (plugins/ID.json), sorted. */
int	sbx_complete_plugins(const char *home, struct sbx_strv *,
	    struct sbx_error *);
/* The image names (images/names.json), sorted. */
int	sbx_complete_images(const char *home, struct sbx_strv *,
	    struct sbx_error *);

#endif
