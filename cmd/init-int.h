/*
 * init-int.h: what the files of sbx-init share (cmd/sbx-init.c is main,
 * cmd/init-setup.c its helpers).  Internal to the sbx-init program.
 */
#ifndef SBX_INIT_INT_H
#define SBX_INIT_INT_H

#include <sys/types.h>

#include <signal.h>

#include "initproto.h"

#define FD_STATUS	SBX_FD_STATUS
#define FD_CTL		SBX_FD_CTL
#define FD_ENV		SBX_FD_ENV
#define FD_PROXY	SBX_FD_PROXY
#define FD_BRIDGE	SBX_FD_BRIDGE
#define FD_SESSION	SBX_FD_SESSION

/* What main learns from its arguments and sets up, phase by phase. */
struct run {
	char		**cmd, **envp, *tty;
	int		  proxy, bridge, shell, session;
	sigset_t	  mask;
	int		  sfd, lfd, blfd, tfd, gfd;
	pid_t		  child;
};
#define PROXY_PORT	SBX_INIT_PROXY_PORT
#define SOCKS_PORT	SBX_INIT_SOCKS_PORT
#define ENV_MAX		SBX_INIT_ENV_MAX

/* The connection waiting for the proxy channel, and the SOCKS5
 * listener (cmd/init-setup.c). */
extern int	 held;
extern int	 socks_lfd;

void	report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	ctl_order(void);
void	close_others(int keep_proxy, int keep_bridge, int keep_session);
int	proxy_listen(void);
int	proxy_accept(int lfd);
int	socks_listen(void);
int	socks_accept(void);
int	relay_accept(int lfd, int chan, int *heldp, char tag, char *heldtag);
/* One message with descriptors (SCM_RIGHTS): at most SEND_FDS_MAX. */
#define SEND_FDS_MAX	4
ssize_t	send_fds(int sock, const void *buf, size_t len, const int *fds,
	    size_t n, int flags);
/* The bridge (cmd/init-bridge.c). */
int		 bridge_listen(char **envp);
int		 bridge_accept(int lfd);
int		 bridge_held(void);
int	set_rlimit(const char *spec);
int	check_workdir(const char *devino, const char *path);
int	open_tty(const char *size);
char	**read_env(void);
const char	*errname(int e);
void	status_field(const char *name);
int	probe(void);
/* -c: ir->cmd made bash -o pipefail -c's argv (sbx-init.c). */
int	shell_argv(struct run *ir, int argc);
/* -S: pid 1 of a session (cmd/init-session.c); returns the exit code. */
int	session_main(struct run *ir);

#endif
