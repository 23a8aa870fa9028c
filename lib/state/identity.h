/* identity.h: who the sandboxes of a state root run as. */
#ifndef SBX_IDENTITY_H
#define SBX_IDENTITY_H

#include <sys/types.h>

#include "error.h"

/* The uid/gid sandboxes run as, and so the owner of homes and outputs:
 * the caller's own; as root (never root itself) run_as in
 * config/sandbox.json (rootfd may be -1), else the `sbx` user, else nobody
 * (65534), as sbx-exec decides. */
int	sbx_identity_get(int rootfd, uid_t *, gid_t *, struct sbx_error *);
/* 1 when the caller is root, config/sandbox.json names no run_as and no
 * `sbx` user exists: sandboxes would run as nobody, so `sbx provision`
 * creates the sbx user (sbx_user_create); 0 otherwise, -1 on a bad
 * config. */
int	sbx_identity_wants_user(int rootfd, struct sbx_error *);
/* As root, become uid/gid for good (no supplementary groups; real,
 * effective and saved ids), so that the kernel checks every later file
 * access as the sandbox would and what is created belongs to it; as
 * anyone else, nothing (they are the sandbox's uid already). */
int	sbx_identity_become(uid_t, gid_t, struct sbx_error *);

#endif
