/*
 * secret.h: an agent's sealed secret store (agents/<agent>/secrets.json).
 *
 * Every value is sealed on its own (XChaCha20-Poly1305, a fresh nonce per
 * record) under the store's data key, with "sbx-secret-v1", the agent and
 * the name as associated data: a record copied to another agent or name
 * does not open.  The data key is itself sealed under the master key,
 * bound to the agent: the key file (32 bytes, 0600; $SBX_SECRET_KEY_FILE,
 * else $CREDENTIALS_DIRECTORY/sbx-secret-key, else config/secret.key under
 * the state root, created on first use), or a passphrase stretched with
 * Argon2id (parameters and salt stored in the store).  rotate-key draws a
 * new data key and re-seals every record, in one atomic write.
 *
 * Writes: locked per agent (secrets.lock), temp file, fsync, the current
 * file kept as secrets.json.prev, rename.  A damaged current file (torn,
 * truncated) makes the previous generation the one read (with a warning);
 * with none, the reason is "secret_store_unreadable".  A record that does
 * not open is set aside when the store is written (secrets.json.damaged),
 * and that write keeps secrets.json.prev as it was: a backup is never
 * rotated over the last good copy.  A key that does not
 * open the store is "wrong_key".  Keys and values live in sodium_malloc()
 * memory, wiped when freed; the process is made non-dumpable first.
 */
#ifndef SBX_SECRET_H
#define SBX_SECRET_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define SBX_SECRET_VALUE_MAX	(64 * 1024)
#define SBX_SECRET_NAME_MAX	64
#define SBX_SECRET_DESC_MAX	256
#define SBX_SECRET_KEY_NAME	"config/secret.key"

/* How the master key is had. */
struct sbx_secret_auth {
	const char	*passphrase;	/* NULL: the key file */
	size_t		 passphrase_len;
	/* A new store is sealed with the passphrase (else the key file). */
	int		 use_passphrase;
};

struct sbx_secret_store {
	int		 rootfd;	/* borrowed */
	int		 dirfd;		/* agents/<agent>, or -1 (no store) */
	int		 lockfd;
	char		 agent[64];
	json_t		*doc;		/* NULL: no store yet */
	int		 from_prev;	/* the current file was damaged */
	int		 dirty;
	unsigned char	*dk;		/* data key (sodium_malloc), or NULL */
	unsigned char	*mk;		/* master key (sodium_malloc), or NULL */
	json_t		*warnings;
	json_t		*aside; /* damaged records set aside, or NULL */
	char		 keyfile[256]; /* the key file read, for messages */
};

/* ^[A-Z_][A-Z0-9_]{0,63}$, and not reserved (the message lists them). */
int	sbx_secret_name_valid(const char *, struct sbx_error *);
/* Does the agent have a store file? */
int	sbx_secret_store_exists(int rootfd, const char *agent);
/* Make the process non-dumpable (no core, no ptrace by the same user). */
void	sbx_secret_protect(void);

/*
 * Open an agent's store: for writing (lock exclusive; the store and the
 * key file are created when missing) or reading (shared lock; a missing
 * store is an empty one, doc NULL).  0, or -1 with e.
 */
int	sbx_secret_open(struct sbx_secret_store *, int rootfd,
	    const char *agent, int write, const struct sbx_secret_auth *,
	    struct sbx_error *);
/* Does the store need a passphrase (it was sealed with one)? */
int	sbx_secret_needs_passphrase(int rootfd, const char *agent);
/* A value, in sodium_malloc() memory (free with sbx_secret_free_value);
 * not_found when absent; secret_store_unreadable when it does not open. */
int	sbx_secret_get(struct sbx_secret_store *, const char *name,
	    unsigned char **val, size_t *len, struct sbx_error *);
void	sbx_secret_free_value(unsigned char *, size_t);
int	sbx_secret_put(struct sbx_secret_store *, const char *name,
	    const unsigned char *val, size_t len, const char *description,
	    struct sbx_error *);
/* 1 removed, 0 absent, -1 error. */
int	sbx_secret_del(struct sbx_secret_store *, const char *name,
	    struct sbx_error *);
/* A new data key; every record re-sealed (in memory until commit). */
int	sbx_secret_rotate(struct sbx_secret_store *, struct sbx_error *);
/* Write the store atomically, keeping the previous generation. */
int	sbx_secret_commit(struct sbx_secret_store *, struct sbx_error *);
/* [{"name","description","created","updated"}], sorted by name. */
json_t	*sbx_secret_list(const struct sbx_secret_store *);
void	sbx_secret_close(struct sbx_secret_store *);
/* The names of the agent's secrets (for remove's confirmation): a JSON
 * array, empty when none or unreadable. */
json_t	*sbx_secret_names(int rootfd, const char *agent);
/*
 * What a run gets: "NAME=VALUE" strings in one sodium_malloc() block (n of
 * them, in assign), and a scrubber holding every value of >=
 * SBX_SCRUB_MIN bytes (NULL when none is that long: output is then never
 * filtered).  sel (nsel names) picks some; nsel 0 takes all.  A selected
 * name the store lacks is invalid_args (field "secret", reason
 * "secret_missing") with the `sbx secret set` command that fixes it.  No
 * store and no selection: 0 and nothing.
 */
struct sbx_scrub;
struct sbx_secret_env {
	char			**assign;
	size_t			  n;
	void			 *block;
	size_t			  block_len;
	struct sbx_scrub	 *scrub;
	json_t			 *warnings;	/* or NULL */
};
int	sbx_secret_load_env(int rootfd, const char *agent,
	    char *const *sel, size_t nsel, const struct sbx_secret_auth *,
	    struct sbx_secret_env *, struct sbx_error *);
void	sbx_secret_env_release(struct sbx_secret_env *);
/* The scrubber of an agent's secrets alone (the values are not kept):
 * NULL in *out when the agent has no store; the passphrase, when the
 * store needs one, from SBX_SECRET_PASSPHRASE, as for sbx exec. */
int	sbx_secret_scrubber(int rootfd, const char *agent,
	    struct sbx_scrub **out, struct sbx_error *);

/*
 * The same, kept between calls while agents/A/secrets.json is the same
 * file (any write or rotation makes a new one): a borrowed pointer, valid
 * until the next call for that agent; NULL when the agent has no store.
 * For daemons that scrub every record a run sends; callers serialize.
 * -1 with e when the store cannot be opened (a passphrase the process
 * does not have): the caller fails closed.
 */
int	sbx_secret_scrubber_cached(int rootfd, const char *agent,
	    struct sbx_scrub **out, struct sbx_error *e);
/* BLAKE2b-256 of a value, in hex: how a run tells the bridge which value
 * its scrubber holds without sending the value. */
#define SBX_SECRET_DIGEST_HEX	64
void	sbx_secret_digest(const void *val, size_t len,
	    char hex[SBX_SECRET_DIGEST_HEX + 1]);

/* For the confirmation of `sbx provision remove`: one line per agent with
 * a store, "agents/A/secrets.json (secrets: X, Y)", and the key file;
 * appended to out. */
void	sbx_secret_describe_stores(int rootfd, json_t *out);
/* Delete an agent's store files (provision remove).  0 or -1. */
int	sbx_secret_remove_store(int rootfd, const char *agent,
	    struct sbx_error *);

#endif
