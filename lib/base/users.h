/* users.h: /etc/passwd look-ups without NSS (safe in static binaries). */
#ifndef SBX_USERS_H
#define SBX_USERS_H

#include <sys/types.h>

#include "error.h"

#define SBX_USERADD		"/usr/sbin/useradd"
#define SBX_NOLOGIN		"/usr/sbin/nologin"
/* The system user root's sandboxes run as when run_as is not set. */
#define SBX_RUN_USER		"sbx"
/* Room for sbx_user_create_argv's argv, NULL included. */
#define SBX_USERADD_ARGV	16

/* 0 and the ids of the local user `name`, or -1. */
int	 sbx_user_by_name(const char *name, uid_t *, gid_t *);
/* The useradd argv that creates the system user `name`: --system, its
 * own group, no home (/nonexistent), no login shell; --prefix DIR (the
 * passwd files under DIR/etc, a scratch root for tests) when prefix is
 * not NULL.  Returns argc. */
int	 sbx_user_create_argv(const char *useradd, const char *prefix,
	    const char *name, const char *argv[SBX_USERADD_ARGV]);
/* Run that argv (absolute path, fixed environment, no shell), then read
 * the passwd file back: 0 and the new ids, or -1 (reason useradd_failed,
 * with useradd's own words and a hint). */
int	 sbx_user_create(const char *useradd, const char *prefix,
	    const char *name, uid_t *, gid_t *, struct sbx_error *);
/* The home directory of uid from /etc/passwd (caller frees), or NULL. */
char	*sbx_user_home(uid_t);
/* fn(name, uid, home, arg) for each entry of /etc/passwd, until fn returns
 * non-zero (that value is returned); 0 at the end, -1 if unreadable. */
int	 sbx_user_each(int (*fn)(const char *, uid_t, const char *, void *),
	    void *);

#endif
