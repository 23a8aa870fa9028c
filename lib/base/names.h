/* names.h: the grammars of names that end up in paths or environments. */
#ifndef SBX_NAMES_H
#define SBX_NAMES_H

#include "error.h"

#define SBX_AGENT_MAX	32
#define SBX_JOB_LEN	16

/* ^[a-z0-9][a-z0-9_-]{0,31}$ */
int	sbx_names_agent_valid(const char *, const char *field,
	    struct sbx_error *);
/* ^[0-9a-f]{16}$ */
int	sbx_names_job_id_valid(const char *, struct sbx_error *);
/* NAME=VALUE for the sandbox environment: a portable name that is not
 * reserved (loader, shell start-up, sbx's own and sandbox-owned names). */
int	sbx_names_env_assign_valid(const char *, struct sbx_error *);
int	sbx_names_env_reserved(const char *name, size_t len);

#endif
