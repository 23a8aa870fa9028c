/*
 * init-int.h: what the files of sbx-init share (cmd/sbx-init.c is main,
 * cmd/init-setup.c its helpers).  Internal to the sbx-init program.
 */
#ifndef SBX_INIT_INT_H
#define SBX_INIT_INT_H

#include <sys/types.h>

#include "initproto.h"

#define FD_STATUS	SBX_FD_STATUS
#define FD_CTL		SBX_FD_CTL
#define FD_ENV		SBX_FD_ENV
#define FD_PROXY	SBX_FD_PROXY
#define FD_BRIDGE	SBX_FD_BRIDGE
#define PROXY_PORT	SBX_INIT_PROXY_PORT
#define ENV_MAX		SBX_INIT_ENV_MAX

/* The connection waiting for the proxy channel (cmd/init-setup.c). */
extern int	 held;

void	report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void	close_others(int keep_proxy, int keep_bridge);
int	proxy_listen(void);
int	proxy_accept(int lfd);
int	relay_accept(int lfd, int chan, int *heldp);
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

#endif
