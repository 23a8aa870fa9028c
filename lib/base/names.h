/* names.h: the grammars of names that end up in paths or environments. */
#ifndef SBX_NAMES_H
#define SBX_NAMES_H

#include "error.h"

#define SBX_AGENT_MAX	32
#define SBX_JOB_LEN	16
/* A sha256 digest in hex: exactly this many lowercase hex digits. */
#define SBX_DIGEST_HEX		64

/* ^[a-z0-9][a-z0-9_-]{0,31}$ */
int	sbx_names_agent_valid(const char *, const char *field,
	    struct sbx_error *);
/* ^[0-9a-f]{16}$ */
int	sbx_names_job_id_valid(const char *, struct sbx_error *);
/* NAME=VALUE for the sandbox environment: a portable name that is not
 * reserved (loader, shell start-up, sbx's own and sandbox-owned names). */
int	sbx_names_env_assign_valid(const char *, struct sbx_error *);
int	sbx_names_env_reserved(const char *name, size_t len);
/* Is s exactly 64 lowercase hex digits (an image digest)? */
int	sbx_names_digest_valid(const char *s);
/* Is s a valid image name: ^[a-z0-9][a-z0-9._-]{0,63}$ (never 64 hex
 * digits, which would read as a digest)? */
int	sbx_names_image_valid(const char *s);

#endif
