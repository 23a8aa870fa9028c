/* seccomp.h: the seccomp filter every sandboxed process runs under. */
#ifndef SBX_SECCOMP_H
#define SBX_SECCOMP_H

struct sbx_error;

/*
 * Returns a file descriptor (O_RDONLY, close-on-exec, offset 0) of a
 * sealed memory file holding the raw BPF program for `bwrap --seccomp
 * FD`.  cache_dirfd (the state root's cache/ directory; -1 for none)
 * keeps a copy as seccomp-<sha256 of policy id and arch>.bpf.  The copy
 * is used only when its SHA-256 is the digest compiled into the binary
 * (the program this binary builds); otherwise the program is built, and
 * a copy that differs from it is replaced, and *warning (when warning is
 * not NULL) is set to one of the messages below; else to NULL.  On
 * failure returns -1 and fills e (kind "unavailable", reason
 * "seccomp_unavailable").
 */
int		 sbx_seccomp_fd(int cache_dirfd, const char **warning,
		    struct sbx_error *e);

/* How sbx_seccomp_fd_info() came by the program. */
struct sbx_seccomp_info {
	const char	*warning;	/* as sbx_seccomp_fd's, or NULL */
	int		 cached;	/* the cache's bytes, digest checked */
	int		 built;		/* built with libseccomp */
	/* built, and its digest is the compiled-in one */
	int		 digest_match;
};

/* sbx_seccomp_fd(), saying how in *info (when not NULL). */
int		 sbx_seccomp_fd_info(int cache_dirfd,
		    struct sbx_seccomp_info *info, struct sbx_error *e);

#define SBX_SECCOMP_WARN_REPLACED "the cached seccomp program " \
	"(cache/seccomp-*.bpf) differed from the filter this sbx builds " \
	"(changed outside sbx, or left by another version): it was not " \
	"used, and has been replaced"
#define SBX_SECCOMP_WARN_KEPT "the cached seccomp program " \
	"(cache/seccomp-*.bpf) differed from the filter this sbx builds " \
	"(changed outside sbx, or left by another version): it was not " \
	"used, and could not be replaced"

/* The policy version string; it changes whenever the rules change. */
const char	*sbx_seccomp_policy_id(void);

#endif /* SBX_SECCOMP_H */
