/*
 * fspolicy.h: a run's file-system policy beyond "system read-only, one
 * workdir read-write": protected paths inside writable roots, extra
 * read-only paths, hidden paths, and the unix-socket guard.  What it
 * decides becomes bwrap arguments (ops) and sbx-init arguments (the
 * guard, cmd/init-guard.c).
 */
#ifndef SBX_FSPOLICY_H
#define SBX_FSPOLICY_H

#include <jansson.h>

#include "buf.h"
#include "error.h"

struct sbx_fspolicy {
	/* bwrap arguments, in order, after the writable roots' binds */
	struct sbx_strv	 ops;
	/* sbx-init arguments: -N DEV:INO:NAME, -R PATH, -g ROOT, -G GITDIR,
	 * -X NAME, -U, -A DEV:INO */
	struct sbx_strv	 init;
	/* writable roots without a .git at the start (a repository the run
	 * creates is reported after it) */
	struct sbx_strv	 no_git;
	int		 nprotected;	/* entries bound or guarded */
	/* directories read, per writable root, in the search for nested
	 * repositories (git_search_limit; 0: no search), and how many
	 * roots the bound stopped */
	long		 git_search;
	int		 git_search_hit;
	/* for the run's warnings */
	struct sbx_strv	 warnings;
};

#define SBX_GIT_SEARCH_DEFAULT	4096L
/* Levels below a writable root the search reads (a repository whose work
 * tree is that deep or shallower is found): the depth of the state-root
 * scan (SBX_ROOT_SCAN_DEPTH) and of srt's mandatoryDenySearchDepth. */
#define SBX_GIT_SEARCH_DEPTH	3
#define SBX_GIT_SEARCH_MAX	10000000L

/* git_search_limit of an agent configuration (checked), or the default. */
long	sbx_fspolicy_git_search(const json_t *cfg);

/* The protected entries of every writable root, by default. */
extern const char *const sbx_fspolicy_default[];

void	sbx_fspolicy_init(struct sbx_fspolicy *);
void	sbx_fspolicy_release(struct sbx_fspolicy *);

/* The agent configuration's keys (protected_paths, allow_git_config,
 * read_paths, deny_paths, allow_unix_sockets): 0, or -1 (config_invalid). */
int	sbx_fspolicy_config_check(const json_t *doc, const char *origin,
	    struct sbx_error *);

/*
 * The entries to protect: the defaults, plus the config's protected_paths,
 * minus each of unprotect (which must name a protected entry:
 * invalid_args "unprotect" otherwise).  ".git" is the git rule (a git
 * directory read-only but for what commits write; sbx-exec(1)); "/NAME"
 * exempts NAME of every git directory from it (allow_git_config gives
 * "/config", --unprotect .git/NAME "/NAME"; no other entry starts with /).
 */
int	sbx_fspolicy_entries(const json_t *cfg, char *const *unprotect,
	    size_t nunprotect, struct sbx_strv *out, struct sbx_error *);

/*
 * Protect entries in one writable root: root_fd (opened, checked), its
 * path inside the sandbox (= on the host) and the path bwrap binds it
 * from (/proc/self/fd/N).  Existing entries become read-only binds, their
 * directories self-binds (a mount point cannot be renamed away), missing
 * ones guarded names.  A protected symlink is followed once, to a target
 * inside a writable root (roots, nroots); a loop refuses the run
 * (rejected, reason symlink_loop).
 */
int	sbx_fspolicy_protect(struct sbx_fspolicy *, int root_fd,
	    const char *inside, const char *src, char *const *roots,
	    size_t nroots, const struct sbx_strv *entries, struct sbx_error *);

/* Hide path (a deny_paths entry, absolute, inside a root): an empty
 * read-only tmpfs over a directory, the empty file `empty` (a host path
 * of sbx's own) over a file. */
int	sbx_fspolicy_deny(struct sbx_fspolicy *, const char *path,
	    const char *empty, struct sbx_error *);

/* A read-only path at its own place (--ro, read_paths). */
int	sbx_fspolicy_ro(struct sbx_fspolicy *, const char *path,
	    struct sbx_error *);

/* Unix sockets: the guard on, and the sockets allowed through it. */
int	sbx_fspolicy_unix(struct sbx_fspolicy *, char *const *allowed,
	    size_t nallowed, struct sbx_error *);

/* Does pattern (fnmatch, components separated by /) match rel? */
int	sbx_fspolicy_match(const char *pattern, const char *rel);

#endif
