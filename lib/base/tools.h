/* tools.h: finding the helper programs sbx runs, by absolute path. */
#ifndef SBX_TOOLS_H
#define SBX_TOOLS_H

#include "error.h"

/* Find `name` (bwrap, socat, rg) without searching $PATH: the override
 * variable `env` (absolute path, honoured only when not set-id) or a fixed
 * list of system directories, where the binary must be owned by root and
 * not writable by group or others. Caller frees *out. */
int	sbx_tools_find(const char *name, const char *env, char **out,
	    struct sbx_error *);
/* The directory the running program lives in (from /proc/self/exe). */
char	*sbx_tools_self_dir(void);

#endif
