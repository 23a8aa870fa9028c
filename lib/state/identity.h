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

/*
 * A subordinate id range for the sandbox's own root file system copy
 * (sbx install --manager apt: packages with files of other owners): ids
 * 1..count inside the sandbox's user namespace are host ids uid.. and
 * gid..  The entry of the sandbox's user in /etc/subuid and /etc/subgid
 * (at most SBX_SUBID_COUNT ids of it); as root without one,
 * SBX_SUBID_COUNT ids from SBX_SUBID_BASE, unless an entry of someone
 * else overlaps them.  Anyone else also needs newuidmap and newgidmap.
 * Returns 1 and the range, 0 when there is none (why: the reason, for a
 * refusal), -1 on error.
 */
#define SBX_SUBID_COUNT 65536UL
#define SBX_SUBID_BASE \
	1879048192UL /* 0x70000000: above systemd's
					 * container range, below 2^31 */
#define SBX_SUBUID_FILE "/etc/subuid"
#define SBX_SUBGID_FILE "/etc/subgid"
/* The setuid helpers that write an unprivileged user's maps (uidmap):
 * lib/sandbox/userns.c runs them, sbx_identity_subids looks for them. */
#define SBX_NEWUIDMAP "/usr/bin/newuidmap"
#define SBX_NEWGIDMAP "/usr/bin/newgidmap"

struct sbx_subids {
	unsigned long uid, gid, count;
};

int sbx_identity_subids(int rootfd, struct sbx_subids *, char *why,
    size_t whysz, struct sbx_error *);

#endif
