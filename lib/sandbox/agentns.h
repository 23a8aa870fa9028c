/*
 * agentns.h: the user namespaces of per-agent uids as a plain user
 * (lib/state/idalloc.c): a user with a subordinate range maps each agent
 * to an id of that range, through newuidmap and newgidmap.
 */
#ifndef SBX_AGENTNS_H
#define SBX_AGENTNS_H

#include "error.h"
#include "idalloc.h"

/*
 * For a run: a user namespace where the agent's inside ids are its host
 * ids of the range and nothing else is mapped (bwrap nests its own in
 * it).  The child that starts bwrap enters it (sbx_agentns_join) and
 * becomes the agent: every file it creates, every signal it may send,
 * every /proc entry it may read is that uid's on the host.
 */
int sbx_agentns_run(const struct sbx_agentid *, struct sbx_error *);
/* Open the agent's directories rels (beneath rootfd; made 0700 and
 * handed to uid/gid, the agent's inside ids, when missing) as uid 0 of
 * that namespace, in a helper process: they are the agent's uid's, 0700,
 * which the caller itself may not open.  fds[i] for rels[i]; 0, or -1
 * with none open. */
int sbx_agentns_open(int nsfd, int rootfd, const char *const *rels, int n,
    unsigned long uid, unsigned long gid, int *fds, struct sbx_error *);
/* In a forked child: enter nsfd and become uid/gid there (async-signal
 * safe: setns and set*id only).  0 or -1 with errno. */
int sbx_agentns_join(int nsfd, unsigned long uid, unsigned long gid);
/*
 * sbx_idalloc_migrate's enter (arg: the struct sbx_idcfg): make a user
 * namespace where the caller is 0 and its range 1.. (SUB_LAST ids) and
 * move this process into it, with every capability there: the chowns of
 * a migration are then the caller's own files handed to its own range.
 */
int sbx_agentns_enter_range(void *arg, struct sbx_error *);

#endif
