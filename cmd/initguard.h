/*
 * initguard.h: sbx-init's guard of the file-system policy (sbx-exec(1),
 * PROTECTED PATHS and UNIX SOCKETS).  Part of sbx-init: static, links
 * nothing of lib/.
 */
#ifndef SBX_INITGUARD_H
#define SBX_INITGUARD_H

#include <sys/types.h>

/* -N DEV:INO:NAME: NAME may not be created in that directory. */
int	guard_add_block(const char *);
/* -R PATH: a protected path inside (a refused write there is reported). */
int	guard_add_protected(const char *);
/* -g ROOT: beneath ROOT, a name under a .git component follows the git
 * rule (git_path_refused); -G GITDIR: a git directory named otherwise
 * (a .git file's gitdir), the same rule beneath it. */
int	guard_add_gitroot(const char *);
int	guard_add_gitdir(const char *);
/* -X NAME: a name at the top of every git directory left writable
 * (allow_git_config, --unprotect .git/NAME). */
int	guard_add_gitopen(const char *);
/* -U: connect() to a unix socket made outside is refused; -A DEV:INO
 * names a socket that stays reachable (allow_unix_sockets). */
void	guard_unix(void);
int	guard_add_socket(const char *);
/* Nonzero when the command must run under the guard. */
int	guard_active(void);
/* In the command's process, before exec: install the filter and hand its
 * listener to pid 1 over sock; sock -1 (no guard): only refuse
 * pidfd_getfd.  0, or -1 with errno. */
int	guard_install(int sock);
/* In pid 1: take the listener from child, or -1. */
int	guard_receive(int sock, pid_t child);
/* In pid 1: answer one notification from the listener. */
void	guard_serve(int nfd, int status_fd);

#endif
