/* seccomp.h: the seccomp filter every sandboxed process runs under. */
#ifndef SBX_SECCOMP_H
#define SBX_SECCOMP_H

struct sbx_error;

/*
 * Returns a file descriptor (O_RDONLY, close-on-exec, offset 0) holding
 * the raw BPF program for `bwrap --seccomp FD`.  The program is built
 * once and cached in cache_dirfd (the state root's cache/ directory; -1
 * for no cache) as seccomp-<sha256 of policy id and arch>.bpf.  On
 * failure returns -1 and fills e (kind "unavailable", reason
 * "seccomp_unavailable").
 */
int		 sbx_seccomp_fd(int cache_dirfd, struct sbx_error *e);

/* The policy version string; it changes whenever the rules change. */
const char	*sbx_seccomp_policy_id(void);

#endif /* SBX_SECCOMP_H */
