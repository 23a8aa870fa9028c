/*
 * userns.h: a user namespace made with the maps sbx chooses, for bwrap
 * --userns (a range of ids, which bwrap's own --unshare-user cannot map)
 * and for idmapped mounts.
 */
#ifndef SBX_USERNS_H
#define SBX_USERNS_H

#include <sys/types.h>

#include "error.h"
#include "identity.h"	/* SBX_NEWUIDMAP, SBX_NEWGIDMAP */

/* One line of a uid_map or gid_map: inside, outside, count. */
struct sbx_userns_map {
	int n;
	struct {
		unsigned long in, out, count;
	} line[4];
};

/*
 * A user namespace owned by owner_uid:owner_gid (the process that made
 * it had those ids, so a process running as them may enter it with all
 * capabilities inside: bwrap --userns), with the maps given.  As root
 * the maps are written directly; anyone else's go through newuidmap and
 * newgidmap (setuid helpers that check /etc/subuid and /etc/subgid).
 * no_nested: no user namespace can be made inside it
 * (user.max_user_namespaces 0 in it), which is what bwrap's
 * --disable-userns gives and cannot give with --userns.  setgroups is
 * denied.  Returns a descriptor of the namespace, or -1 with e filled
 * (reason userns_failed).
 */
int sbx_userns_make(uid_t owner_uid, gid_t owner_gid,
    const struct sbx_userns_map *uids, const struct sbx_userns_map *gids,
    int no_nested, struct sbx_error *e);

#endif
