/* users.h: /etc/passwd look-ups without NSS (safe in static binaries). */
#ifndef SBX_USERS_H
#define SBX_USERS_H

#include <sys/types.h>

/* 0 and the ids of the local user `name`, or -1. */
int	 sbx_user_by_name(const char *name, uid_t *, gid_t *);
/* The home directory of uid from /etc/passwd (caller frees), or NULL. */
char	*sbx_user_home(uid_t);

#endif
