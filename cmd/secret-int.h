/*
 * secret-int.h: what the files of sbx-secret share: the options, the
 * state root and the store's authentication of cmd/sbx-secret.c, and the
 * value and passphrase input of cmd/secret-input.c.  Internal to that
 * program.
 */
#ifndef SBX_SECRET_INT_H
#define SBX_SECRET_INT_H

#include <stddef.h>

#include "error.h"
#include "root.h"
#include "secret.h"

#define PROG "sbx-secret"

struct secret_opts {
	const char *agent, *home, *from_fd, *from_env, *desc;
	int	    passphrase, reveal, json, quiet;
	const char *sub, *name;
	/* bind, unbind */
	char	   *hosts[16];
	size_t	    nhosts;
	const char *header, *basic_user, *query;
	char	  **argv; /* the operands */
	int	    nargs;
};

extern struct secret_opts     O;
extern struct sbx_root	      root;
extern struct sbx_secret_auth auth;
extern char		     *pass; /* sodium_malloc, or NULL */

/* cmd/secret-input.c: the value of `set` (sodium_malloc'd, *n bytes),
 * and the passphrase into auth when one is given or needed. */
int read_value(unsigned char **v, size_t *n, struct sbx_error *);
int get_passphrase(int creating, struct sbx_error *);

#endif
