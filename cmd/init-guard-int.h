/*
 * init-guard-int.h: what the files of sbx-init's guard share (cmd/init-guard.c
 * holds the policy and installs the filter, cmd/init-guard-path.c resolves
 * and checks paths, cmd/init-guard-serve.c answers the notifications,
 * cmd/init-guard-sock.c the socket calls).
 * Internal to the sbx-init program; see cmd/initguard.h for its interface.
 */
#ifndef SBX_INIT_GUARD_INT_H
#define SBX_INIT_GUARD_INT_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE	(1 << 1)
#endif
/* Linux 5.3 and 5.6; older headers lack the numbers (the guard fails
 * closed where the kernel lacks the calls). */
#ifndef SYS_pidfd_open
#define SYS_pidfd_open	434
#endif
#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd	438
#endif

#define MAX_BLOCK	2048
#define MAX_PROT	4096
#define MAX_SOCK	64
#define MAX_REPORTED	64
#define MAX_HOPS	40
#define MAX_GIT		64

struct block {
	unsigned long long	 dev, ino;
	char			*name;
};

struct guard_sock {
	unsigned long long	 dev, ino;
};

/* The policy (cmd/init-guard.c), set from the command line before the
 * command starts and only read afterwards. */
extern struct block	 blocks[MAX_BLOCK];
extern int		 nblocks;
extern char		*prot[MAX_PROT];
extern int		 nprot;
extern struct guard_sock socks[MAX_SOCK];
extern int		 nsocks;
extern int		 unix_on;
extern char		*reported[MAX_REPORTED];
extern int		 nreported;
/* The git rule (-g ROOT, -G GITDIR). */
extern char		*git_roots[MAX_GIT];
extern int		 ngit_roots;
extern char		*git_dirs[MAX_GIT];
extern int		 ngit_dirs;
extern char		*git_open[MAX_GIT];
extern int		 ngit_open;

struct seccomp_notif;

/* cmd/init-guard-serve.c */
void	answer(int nfd, uint64_t id, long long val, int err);
int	still_valid(int nfd, uint64_t id);

/* cmd/init-guard-sock.c: connect, bind, sendto, sendmsg, sendmmsg. */
void	serve_sock(int nfd, struct seccomp_notif *req, int mfd,
	    int status_fd);

/* cmd/init-guard-path.c */
void	report_path(int status_fd, const char *what, const char *path);
int	dir_path(int dfd, const char *name, char *out, size_t cap);
int	under_protected(const char *path);
void	maybe_report(int status_fd, int dfd, const char *name, int err);
int	blocked(int dfd, const char *name);
int	git_path_refused(const char *path);
int	git_refused(int dfd, const char *name);
int	read_str(int mfd, uint64_t addr, char *buf, size_t cap);
int	base_fd(pid_t pid, int dirfd, const char *path);
int	resolve(pid_t pid, int dirfd, const char *path, int follow, int *dfd,
	    char name[NAME_MAX + 1], int *slash);
mode_t	caller_umask(pid_t pid);

#endif
