/* secret.c: the sealed per-agent secret store (see secret.h). */
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "buf.h"
#include "envelope.h"
#include "fsutil.h"
#include "job.h"
#include "layout.h"
#include "names.h"
#include "scrub.h"
#include "secret.h"
#include "time.h"

#define STORE		"secrets.json"
#define STORE_PREV	"secrets.json.prev"
#define STORE_TMP	"secrets.json.tmp"
#define STORE_ASIDE	"secrets.json.damaged"
#define STORE_LOCK	"secrets.lock"
#define STORE_CAP	(64u << 20)
#define KEYLEN		crypto_aead_xchacha20poly1305_ietf_KEYBYTES
#define NONCELEN	crypto_aead_xchacha20poly1305_ietf_NPUBBYTES
#define TAGLEN		crypto_aead_xchacha20poly1305_ietf_ABYTES

static const char reserved_list[] = "PATH HOME USER LOGNAME SHELL TERM LANG "
    "TZ PWD, LD_*, BASH_ENV, ENV, PYTHON*, NODE_OPTIONS, PERL5*, RUBY*, "
    "SBX_*, the proxy variables (HTTP_PROXY...), SSL_CERT_*, *_CA_* and "
    "the names `sbx exec --env` refuses";

int
sbx_secret_name_valid(const char *s, struct sbx_error *e)
{
	static const char *const exact[] = { "PATH", "HOME", "USER",
	    "LOGNAME", "SHELL", "TERM", "LANG", "TZ", "PWD", "BASH_ENV",
	    "ENV", "NODE_OPTIONS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
	    "NO_PROXY", "FTP_PROXY" };
	static const char *const prefix[] = { "LD_", "PYTHON", "PERL5",
	    "RUBY", "SBX_", "SSL_CERT_" };
	size_t	 i, n;

	if (s == NULL || *s == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "name", "empty",
		    "the secret name is empty");
	n = strlen(s);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || c == '_' ||
		    (i > 0 && c >= '0' && c <= '9')) || n > SBX_SECRET_NAME_MAX)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "name",
			    "invalid_name", "secret name `%.80s` must match "
			    "^[A-Z_][A-Z0-9_]{0,63}$", s);
	}
	for (i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (strcmp(s, exact[i]) == 0)
			goto reserved;
	for (i = 0; i < sizeof(prefix) / sizeof(*prefix); i++)
		if (strncmp(s, prefix[i], strlen(prefix[i])) == 0)
			goto reserved;
	/* CA bundles decide whom the sandbox trusts (*_CA_*, also at the
	 * start or the end: CA_BUNDLE, NODE_EXTRA_CA). */
	if (strstr(s, "_CA_") != NULL || strncmp(s, "CA_", 3) == 0 ||
	    (n >= 3 && strcmp(s + n - 3, "_CA") == 0))
		goto reserved;
	if (sbx_names_env_reserved(s, n))
		goto reserved;
	return 0;
reserved:
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "name", "reserved_name",
	    "secret name `%s` is reserved; reserved are %s", s,
	    reserved_list);
}

void
sbx_secret_protect(void)
{
	/* No core file and no ptrace by the same uid while a key or a value
	 * is in memory. */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int
agent_dir(int rootfd, const char *agent, int create, struct sbx_error *e)
{
	char	 rel[128];

	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, agent);
	if (create)
		return sbx_fs_mkdirs_at(rootfd, rel, 0700, e);
	return sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC, e);
}

int
sbx_secret_store_exists(int rootfd, const char *agent)
{
	char		 rel[160];
	struct stat	 st;

	SBX_LPATH(rel, SBX_L_AGENT_SECRETS, agent);
	if (fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	SBX_LPATH(rel, SBX_L_AGENT_SECRETS_PREV, agent);
	return fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static char *
b64enc(const unsigned char *p, size_t n)
{
	size_t	 m = sodium_base64_encoded_len(n,
	    sodium_base64_VARIANT_ORIGINAL);
	char	*s = malloc(m);

	if (s != NULL)
		sodium_bin2base64(s, m, p, n, sodium_base64_VARIANT_ORIGINAL);
	return s;
}

/* Decode a base64 string member; exactly `want` bytes unless want is 0
 * (then at most cap).  malloc'd, or NULL. */
static unsigned char *
b64dec(json_t *o, const char *key, size_t want, size_t cap, size_t *len)
{
	const char	*s = json_string_value(json_object_get(o, key));
	unsigned char	*p;
	size_t		 n, max;

	if (s == NULL)
		return NULL;
	max = want ? want : cap;
	if ((p = malloc(max + 1)) == NULL)
		return NULL;
	if (sodium_base642bin(p, max, s, strlen(s), NULL, &n, NULL,
	    sodium_base64_VARIANT_ORIGINAL) != 0 || (want && n != want)) {
		free(p);
		return NULL;
	}
	if (len != NULL)
		*len = n;
	return p;
}

static void
ad_make(struct sbx_buf *b, const char *what, const char *agent,
    const char *name)
{
	sbx_buf_reset(b);
	sbx_buf_puts(b, what);
	sbx_buf_append(b, "", 1);
	sbx_buf_puts(b, agent);
	sbx_buf_append(b, "", 1);
	if (name != NULL)
		sbx_buf_puts(b, name);
}

/* Is the document a store of this agent, in the shape we write? */
static int
doc_sound(json_t *doc, const char *agent)
{
	json_t		*k, *s, *r, *kdf;
	const char	*name;
	struct sbx_error e;

	if (!json_is_object(doc) ||
	    json_integer_value(json_object_get(doc, "version")) != 1 ||
	    !json_is_string(json_object_get(doc, "agent")) ||
	    strcmp(json_string_value(json_object_get(doc, "agent")),
	    agent) != 0)
		return 0;
	k = json_object_get(doc, "key");
	if (!json_is_object(k) || !json_is_string(json_object_get(k,
	    "nonce")) || !json_is_string(json_object_get(k, "sealed")))
		return 0;
	kdf = json_object_get(doc, "kdf");
	if (kdf != NULL && !json_is_null(kdf) && (!json_is_object(kdf) ||
	    !json_is_string(json_object_get(kdf, "salt")) ||
	    !json_is_integer(json_object_get(kdf, "opslimit")) ||
	    !json_is_integer(json_object_get(kdf, "memlimit"))))
		return 0;
	s = json_object_get(doc, "secrets");
	if (!json_is_object(s))
		return 0;
	json_object_foreach(s, name, r)
		if (sbx_secret_name_valid(name, &e) == -1 ||
		    !json_is_object(r) ||
		    !json_is_string(json_object_get(r, "nonce")) ||
		    !json_is_string(json_object_get(r, "value")))
			return 0;
	return 1;
}

static json_t *
load(int dirfd, const char *name, const char *agent, int *present)
{
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_error	 e;
	json_t			*doc;

	*present = 0;
	if (faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == -1)
		return NULL;
	*present = 1;
	if (sbx_fs_read_file_at(dirfd, name, STORE_CAP, &b, &e) == -1)
		return NULL;
	doc = sbx_json_parse(b.p ? b.p : "", b.len, STORE_CAP, &e);
	sbx_buf_release(&b);
	if (doc != NULL && !doc_sound(doc, agent)) {
		json_decref(doc);
		doc = NULL;
	}
	return doc;
}

/* The master key: from the file (created when create is set), or from
 * the passphrase and the store's kdf parameters. */
static int
master_key(struct sbx_secret_store *s, const struct sbx_secret_auth *a,
    json_t *kdf, int create, unsigned char *mk, struct sbx_error *e)
{
	const char	*f, *cd;
	char		 path[4096];
	unsigned char	*salt;
	struct stat	 st;
	int		 fd = -1, rc = -1;
	ssize_t		 n;
	size_t		 bin;

	if (kdf != NULL && !json_is_null(kdf)) {
		if (a == NULL || a->passphrase == NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "passphrase", "passphrase_required", "the secrets "
			    "of agent %s are sealed with a passphrase: give "
			    "--passphrase or set SBX_SECRET_PASSPHRASE",
			    s->agent);
		if ((salt = b64dec(kdf, "salt", crypto_pwhash_SALTBYTES, 0,
		    NULL)) == NULL)
			return sbx_error_set(e, SBX_K_REJECTED, NULL,
			    "secret_store_unreadable",
			    "the secret store of "
			    "agent %s has a damaged salt (agents/%s/%s)",
			    s->agent, s->agent, STORE);
		if (crypto_pwhash(mk, KEYLEN, a->passphrase,
		    a->passphrase_len, salt,
		    (unsigned long long)json_integer_value(json_object_get(kdf,
		    "opslimit")),
		    (size_t)json_integer_value(json_object_get(kdf,
		    "memlimit")), crypto_pwhash_ALG_ARGON2ID13) != 0) {
			free(salt);
			return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
			    "kdf_failed", "stretching the passphrase failed "
			    "(out of memory?)");
		}
		free(salt);
		return 0;
	}
	/* The key file: given, a systemd credential, or ours. */
	f = secure_getenv("SBX_SECRET_KEY_FILE");
	cd = secure_getenv("CREDENTIALS_DIRECTORY");
	if (f != NULL && *f != '\0')
		snprintf(path, sizeof(path), "%s", f);
	else if (cd != NULL && *cd == '/' && snprintf(path, sizeof(path),
	    "%s/sbx-secret-key", cd) > 0 && access(path, F_OK) == 0)
		;
	else
		path[0] = '\0';
	if (path[0] != '\0') {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd == -1)
			return sbx_error_set(e, SBX_K_UNAVAILABLE, "key_file",
			    "key_file_unreadable", "cannot read the secret key "
			    "file %s: %s", path, strerror(errno));
	} else {
		struct sbx_error	 ce;
		int			 cfd;

		if ((cfd = sbx_fs_mkdirs_at(s->rootfd, "config", 0700,
		    &ce)) == -1)
			return sbx_error_set(e, SBX_K_UNAVAILABLE, "key_file",
			    "key_file_unreadable", "%s", ce.message);
		snprintf(path, sizeof(path), "%s", SBX_SECRET_KEY_NAME);
		fd = openat(cfd, "secret.key", O_RDONLY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd == -1 && errno == ENOENT && create) {
			unsigned char	 k[KEYLEN];

			/* Created once, 0600, never replaced: O_EXCL, so
			 * two first writers cannot each make their own. */
			randombytes_buf(k, sizeof(k));
			fd = openat(cfd, "secret.key", O_WRONLY | O_CREAT |
			    O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (fd >= 0) {
				if (sbx_fs_write_all(fd, k, sizeof(k)) == -1 ||
				    fsync(fd) == -1) {
					sodium_memzero(k, sizeof(k));
					close(fd);
					close(cfd);
					return sbx_error_sys(e,
					    "key_file_unwritable", "writing "
					    "%s", path);
				}
				close(fd);
				(void)fsync(cfd);
			}
			sodium_memzero(k, sizeof(k));
			fd = openat(cfd, "secret.key", O_RDONLY | O_NOFOLLOW |
			    O_CLOEXEC);
		}
		close(cfd);
		if (fd == -1)
			return sbx_error_set(e, SBX_K_REJECTED, "key_file",
			    errno == ENOENT ? "wrong_key" :
			    "key_file_unreadable", errno == ENOENT ? "the "
			    "secret key file %s is missing: the secrets of "
			    "agent %s cannot be opened" : "cannot read the "
			    "secret key file %s: %s", path, errno == ENOENT ?
			    s->agent : strerror(errno));
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		sbx_error_set(e, SBX_K_REJECTED, "key_file", "key_file_invalid",
		    "the secret key file %s is not a regular file", path);
		goto out;
	}
	/* A key others can read is no key: refuse it, as ssh does. */
	if ((st.st_mode & 0077) != 0) {
		sbx_error_set(e, SBX_K_REJECTED, "key_file",
		    "key_file_permissions", "the secret key file %s is "
		    "readable by others (mode %04o); it must be 0600", path,
		    (unsigned)(st.st_mode & 07777));
		sbx_error_hint(e, "chmod 600 %s", path);
		goto out;
	}
	{
		char kb[130];
		n = read(fd, kb, sizeof(kb));
		if (n == (ssize_t)KEYLEN) {
			memcpy(mk, kb, KEYLEN);
			rc = 0;
		} else if ((n == 64 || (n == 65 && kb[64] == '\n')) &&
		    sodium_hex2bin(mk, KEYLEN, kb, 64, NULL, &bin, NULL) ==
		    0 && bin == KEYLEN)
			rc = 0;
		sodium_memzero(kb, sizeof(kb));
		if (rc == -1) {
			sbx_error_set(e, SBX_K_REJECTED, "key_file",
			    "key_file_invalid", "the secret key file %s must "
			    "hold 32 bytes (or 64 hex digits)", path);
			sbx_error_hint(e,
			    "restore %s from a backup: without "
			    "it the agents' secrets cannot be opened",
			    path);
		}
	}
	if (rc == 0)
		snprintf(s->keyfile, sizeof(s->keyfile), "%s", path);
out:
	close(fd);
	return rc;
}

/* A new store document, its data key sealed under the master key. */
static int
seal_dk(struct sbx_secret_store *s, const unsigned char *mk, json_t *doc,
    struct sbx_error *e)
{
	unsigned char	 nonce[NONCELEN], sealed[KEYLEN + TAGLEN];
	struct sbx_buf	 ad = SBX_BUF_INIT;
	char		*n64, *s64;

	randombytes_buf(nonce, sizeof(nonce));
	ad_make(&ad, "sbx-secret-key-v1", s->agent, NULL);
	crypto_aead_xchacha20poly1305_ietf_encrypt(sealed, NULL, s->dk,
	    KEYLEN, (unsigned char *)ad.p, ad.len, NULL, nonce, mk);
	sbx_buf_release(&ad);
	n64 = b64enc(nonce, sizeof(nonce));
	s64 = b64enc(sealed, sizeof(sealed));
	if (n64 == NULL || s64 == NULL) {
		free(n64);
		free(s64);
		return sbx_error_sys(e, "nomem", "sealing the data key");
	}
	json_object_set_new(doc, "key", json_pack("{s:s,s:s}", "nonce", n64,
	    "sealed", s64));
	free(n64);
	free(s64);
	return 0;
}

static int
open_dk(struct sbx_secret_store *s, const unsigned char *mk,
    struct sbx_error *e)
{
	json_t		*k = json_object_get(s->doc, "key");
	unsigned char	*nonce, *sealed;
	struct sbx_buf	 ad = SBX_BUF_INIT;
	int		 rc = -1;

	nonce = b64dec(k, "nonce", NONCELEN, 0, NULL);
	sealed = b64dec(k, "sealed", KEYLEN + TAGLEN, 0, NULL);
	ad_make(&ad, "sbx-secret-key-v1", s->agent, NULL);
	if (nonce != NULL && sealed != NULL &&
	    crypto_aead_xchacha20poly1305_ietf_decrypt(s->dk, NULL, NULL,
	    sealed, KEYLEN + TAGLEN, (unsigned char *)ad.p, ad.len, nonce,
	    mk) == 0)
		rc = 0;
	else if (nonce == NULL || sealed == NULL)
		sbx_error_set(e, SBX_K_REJECTED, NULL,
		    "secret_store_unreadable",
		    "the secret store of agent %s "
		    "is damaged (its sealed key is malformed: agents/%s/%s)",
		    s->agent, s->agent, STORE);
	else {
		sbx_error_set(e, SBX_K_REJECTED, NULL, "wrong_key",
		    "the key "
		    "(%s) does not open the secret store of agent %s, "
		    "agents/%s/%s (a wrong or damaged key or passphrase, or a "
		    "store copied from another agent)",
		    s->keyfile[0] != '\0' ? s->keyfile : "the passphrase",
		    s->agent, s->agent, STORE);
		sbx_error_hint(e,
		    "use the key file or passphrase the store "
		    "was made with (SBX_SECRET_KEY_FILE, --passphrase); a "
		    "damaged key file must be restored from a backup");
	}
	free(nonce);
	free(sealed);
	sbx_buf_release(&ad);
	return rc;
}

int
sbx_secret_needs_passphrase(int rootfd, const char *agent)
{
	struct sbx_error	 e;
	json_t			*doc, *kdf;
	int			 dfd, present, r;

	if ((dfd = agent_dir(rootfd, agent, 0, &e)) == -1)
		return 0;
	if ((doc = load(dfd, STORE, agent, &present)) == NULL)
		doc = load(dfd, STORE_PREV, agent, &present);
	close(dfd);
	kdf = json_object_get(doc, "kdf");
	r = kdf != NULL && !json_is_null(kdf);
	json_decref(doc);
	return r;
}

static int record_opens(struct sbx_secret_store *, const char *);

/*
 * A writer takes every record that does not open out of the document: the
 * next generation must not carry it on (it would block every run of the
 * agent again), and it is not thrown away either; sbx_secret_commit keeps
 * it in secrets.json.damaged and leaves secrets.json.prev, the last copy
 * that may hold it whole, as it was.
 */
static void
set_aside(struct sbx_secret_store *s)
{
	json_t	   *secrets = json_object_get(s->doc, "secrets"), *rec;
	const char *name;
	void	   *tmp;

	json_object_foreach_safe (secrets, tmp, name, rec) {
		if (record_opens(s, name))
			continue;
		if (s->aside == NULL)
			s->aside = json_object();
		json_object_set(s->aside, name, rec);
		json_object_del(secrets, name);
		s->dirty = 1;
	}
}

int
sbx_secret_open(struct sbx_secret_store *s, int rootfd, const char *agent,
    int write, const struct sbx_secret_auth *a, struct sbx_error *e)
{
	unsigned char	*mk = NULL;
	int		 present = 0, prev_present = 0;
	json_t		*kdf;

	memset(s, 0, sizeof(*s));
	s->rootfd = rootfd;
	s->dirfd = s->lockfd = -1;
	s->warnings = json_array();
	snprintf(s->agent, sizeof(s->agent), "%s", agent);
	if (sodium_init() == -1)
		return sbx_error_set(e, SBX_K_UNAVAILABLE, NULL,
		    "crypto_unavailable", "libsodium cannot be initialised");
	sbx_secret_protect();
	if ((s->dirfd = agent_dir(rootfd, agent, write, e)) == -1) {
		if (!write && e->reason != NULL && (strcmp(e->reason,
		    "not_found") == 0 || e->sys_errno == ENOENT))
			return 0;	/* no agent dir: no secrets */
		return -1;
	}
	/* One writer at a time per agent; readers see whole generations. */
	s->lockfd = openat(s->dirfd, STORE_LOCK, (write ? O_RDWR | O_CREAT :
	    O_RDONLY) | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->lockfd == -1 && !(errno == ENOENT && !write))
		return sbx_error_sys(e, "lock_failed", "opening the lock of "
		    "agent %s's secrets", agent);
	if (s->lockfd >= 0 && flock(s->lockfd, write ? LOCK_EX : LOCK_SH) ==
	    -1)
		return sbx_error_sys(e, "lock_failed", "locking agent %s's "
		    "secrets", agent);
	s->doc = load(s->dirfd, STORE, agent, &present);
	if (s->doc == NULL) {
		s->doc = load(s->dirfd, STORE_PREV, agent, &prev_present);
		if (s->doc == NULL && (present || prev_present)) {
			sbx_error_set(e, SBX_K_REJECTED, NULL,
			    "secret_store_unreadable",
			    "the secret store of "
			    "agent %s is damaged and has no sound previous "
			    "generation (agents/%s/%s)",
			    agent, agent, STORE);
			sbx_error_hint(e,
			    "move agents/%s/%s and %s aside and "
			    "set the agent's secrets again (sbx secret set "
			    "NAME --agent %s)",
			    agent, STORE, STORE_PREV, agent);
			return -1;
		}
		if (s->doc != NULL && present) {
			s->from_prev = 1;
			json_array_append_new(s->warnings, json_sprintf(
			    "the secret store of agent %s was damaged (a torn "
			    "or truncated write?): its previous generation "
			    "is used", agent));
		}
	}
	if (s->doc == NULL && !write)
		return 0;
	if ((s->dk = sodium_malloc(KEYLEN)) == NULL ||
	    (mk = sodium_malloc(KEYLEN)) == NULL) {
		sodium_free(mk);
		return sbx_error_sys(e, "nomem", "allocating key memory");
	}
	if (s->doc == NULL) {
		/* A new store: a data key, sealed under the master key. */
		s->doc = json_pack("{s:i,s:s,s:i,s:{}}", "version", 1, "agent",
		    agent, "generation", 0, "secrets");
		if (a != NULL && a->use_passphrase) {
			unsigned char salt[crypto_pwhash_SALTBYTES];
			char *s64;

			randombytes_buf(salt, sizeof(salt));
			s64 = b64enc(salt, sizeof(salt));
			json_object_set_new(s->doc, "kdf", json_pack(
			    "{s:s,s:s,s:I,s:I}", "alg", "argon2id13", "salt",
			    s64 ? s64 : "", "opslimit",
			    (json_int_t)crypto_pwhash_OPSLIMIT_INTERACTIVE,
			    "memlimit",
			    (json_int_t)crypto_pwhash_MEMLIMIT_INTERACTIVE));
			free(s64);
		}
		randombytes_buf(s->dk, KEYLEN);
		kdf = json_object_get(s->doc, "kdf");
		if (master_key(s, a, kdf, 1, mk, e) == -1 ||
		    seal_dk(s, mk, s->doc, e) == -1)
			goto fail;
		s->dirty = 1;
	} else {
		kdf = json_object_get(s->doc, "kdf");
		if (master_key(s, a, kdf, 0, mk, e) == -1 ||
		    open_dk(s, mk, e) == -1)
			goto fail;
		if (write)
			set_aside(s);
	}
	s->mk = mk;
	return 0;
fail:
	sodium_free(mk);
	return -1;
}

static int
seal_value(struct sbx_secret_store *s, const char *name,
    const unsigned char *val, size_t len, json_t *rec, struct sbx_error *e)
{
	unsigned char	 nonce[NONCELEN], *ct;
	struct sbx_buf	 ad = SBX_BUF_INIT;
	char		*n64, *c64;

	if ((ct = malloc(len + TAGLEN)) == NULL)
		return sbx_error_sys(e, "nomem", "sealing");
	/* A fresh random nonce per record (XChaCha's 192 bits make a
	 * collision negligible), the agent and the name bound. */
	randombytes_buf(nonce, sizeof(nonce));
	ad_make(&ad, "sbx-secret-v1", s->agent, name);
	crypto_aead_xchacha20poly1305_ietf_encrypt(ct, NULL, val, len,
	    (unsigned char *)ad.p, ad.len, NULL, nonce, s->dk);
	sbx_buf_release(&ad);
	n64 = b64enc(nonce, sizeof(nonce));
	c64 = b64enc(ct, len + TAGLEN);
	free(ct);
	if (n64 == NULL || c64 == NULL) {
		free(n64);
		free(c64);
		return sbx_error_sys(e, "nomem", "sealing");
	}
	json_object_set_new(rec, "nonce", json_string(n64));
	json_object_set_new(rec, "value", json_string(c64));
	free(n64);
	free(c64);
	return 0;
}

/* A record that does not open: the refusal names the store and says
 * how to repair (the next write sets the record aside). */
static void
record_damaged(struct sbx_error *e, const char *agent, const char *name)
{
	char path[128];

	SBX_LPATH(path, SBX_L_AGENT_SECRETS, agent);
	sbx_error_in_file(e, path,
	    "set it again (sbx secret set %s --agent "
	    "%s; the damaged record is kept in agents/%s/%s), or remove it "
	    "(sbx secret rm %s --agent %s)",
	    name, agent, agent, STORE_ASIDE, name, agent);
}

int
sbx_secret_get(struct sbx_secret_store *s, const char *name,
    unsigned char **val, size_t *len, struct sbx_error *e)
{
	json_t		*rec;
	unsigned char	*nonce, *ct, *pt;
	struct sbx_buf	 ad = SBX_BUF_INIT;
	size_t		 clen;

	*val = NULL;
	*len = 0;
	rec = s->doc != NULL ? json_object_get(json_object_get(s->doc,
	    "secrets"), name) : NULL;
	if (rec == NULL) {
		sbx_error_set(e, SBX_K_NOT_FOUND, "name", "secret_missing",
		    "agent %s has no secret %s", s->agent, name);
		sbx_error_hint(e, "sbx secret set %s --agent %s", name,
		    s->agent);
		return -1;
	}
	nonce = b64dec(rec, "nonce", NONCELEN, 0, NULL);
	ct = b64dec(rec, "value", 0, SBX_SECRET_VALUE_MAX + TAGLEN, &clen);
	if (nonce == NULL || ct == NULL || clen < TAGLEN ||
	    (pt = sodium_malloc(clen - TAGLEN + 1)) == NULL) {
		free(nonce);
		free(ct);
		sbx_error_set(e, SBX_K_REJECTED, "name",
		    "secret_store_unreadable",
		    "the record of secret %s of "
		    "agent %s is damaged",
		    name, s->agent);
		record_damaged(e, s->agent, name);
		return -1;
	}
	ad_make(&ad, "sbx-secret-v1", s->agent, name);
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(pt, NULL, NULL, ct,
	    clen, (unsigned char *)ad.p, ad.len, nonce, s->dk) != 0) {
		sodium_free(pt);
		free(nonce);
		free(ct);
		sbx_buf_release(&ad);
		sbx_error_set(e, SBX_K_REJECTED, "name",
		    "secret_store_unreadable",
		    "the record of secret %s does "
		    "not open for agent %s (damaged, or copied from another "
		    "agent or name)",
		    name, s->agent);
		record_damaged(e, s->agent, name);
		return -1;
	}
	pt[clen - TAGLEN] = '\0';
	free(nonce);
	free(ct);
	sbx_buf_release(&ad);
	*val = pt;
	*len = clen - TAGLEN;
	return 0;
}

static int
record_opens(struct sbx_secret_store *s, const char *name)
{
	struct sbx_error e;
	unsigned char	*v;
	size_t		 len;

	if (sbx_secret_get(s, name, &v, &len, &e) == -1)
		return 0;
	sodium_free(v);
	return 1;
}

void
sbx_secret_free_value(unsigned char *v, size_t n)
{
	(void)n;
	sodium_free(v);		/* wipes, and unmaps with its guard pages */
}

int
sbx_secret_put(struct sbx_secret_store *s, const char *name,
    const unsigned char *val, size_t len, const char *description,
    struct sbx_error *e)
{
	json_t	*secrets = json_object_get(s->doc, "secrets"), *rec, *old;
	char	 now[SBX_TIME_ISO_MAX];

	if (len > SBX_SECRET_VALUE_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "value",
		    "too_long", "a secret value is at most %d bytes",
		    SBX_SECRET_VALUE_MAX);
	if (memchr(val, '\0', len) != NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "value",
		    "nul_byte", "a secret value cannot contain a NUL byte (it "
		    "becomes an environment variable)");
	sbx_time_utc_iso(now);
	old = json_object_get(secrets, name);
	rec = json_object();
	json_object_set_new(rec, "created", json_string(old != NULL &&
	    json_is_string(json_object_get(old, "created")) ?
	    json_string_value(json_object_get(old, "created")) : now));
	json_object_set_new(rec, "updated", json_string(now));
	if (description != NULL)
		json_object_set_new(rec, "description",
		    json_string(description));
	else if (old != NULL && json_is_string(json_object_get(old,
	    "description")))
		json_object_set(rec, "description", json_object_get(old,
		    "description"));
	if (seal_value(s, name, val, len, rec, e) == -1) {
		json_decref(rec);
		return -1;
	}
	json_object_set_new(secrets, name, rec);
	s->dirty = 1;
	return 0;
}

int
sbx_secret_del(struct sbx_secret_store *s, const char *name,
    struct sbx_error *e)
{
	json_t	*secrets = json_object_get(s->doc, "secrets");

	(void)e;
	if (json_object_get(secrets, name) == NULL)
		return 0;
	json_object_del(secrets, name);
	s->dirty = 1;
	return 1;
}

int
sbx_secret_rotate(struct sbx_secret_store *s, struct sbx_error *e)
{
	json_t		*secrets = json_object_get(s->doc, "secrets"), *rec;
	const char	*name;
	unsigned char	*ndk, *v;
	size_t		 len;
	struct sbx_secret_store	 tmp;
	json_t		*nsec;
	int		 rc = -1;

	/* Every value opened under the old key first: one that does not
	 * open stops the rotation before anything changed. */
	if ((ndk = sodium_malloc(KEYLEN)) == NULL)
		return sbx_error_sys(e, "nomem", "allocating key memory");
	randombytes_buf(ndk, KEYLEN);
	tmp = *s;
	tmp.dk = ndk;
	nsec = json_object();
	json_object_foreach(secrets, name, rec) {
		json_t *nrec = json_deep_copy(rec);
		if (sbx_secret_get(s, name, &v, &len, e) == -1) {
			json_decref(nrec);
			goto out;
		}
		rc = seal_value(&tmp, name, v, len, nrec, e);
		sodium_free(v);
		if (rc == -1) {
			json_decref(nrec);
			goto out;
		}
		rc = -1;
		json_object_set_new(nsec, name, nrec);
	}
	/* The data key changes: seal the new one under the master key
	 * (sbx_secret_commit writes both in one file). */
	if (seal_dk(&tmp, s->mk, s->doc, e) == -1)
		goto out;
	json_object_set_new(s->doc, "secrets", nsec);
	nsec = NULL;
	sodium_free(s->dk);
	s->dk = ndk;
	ndk = NULL;
	s->dirty = 1;
	rc = 0;
out:
	json_decref(nsec);
	sodium_free(ndk);
	return rc;
}

/* The records set aside, added to agents/A/secrets.json.damaged (name,
 * and when set aside) before the new generation drops them. */
static int
keep_aside(struct sbx_secret_store *s, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e2;
	json_t		*doc = NULL, *recs, *rec;
	const char	*name;
	char		 now[SBX_TIME_ISO_MAX], key[128], *text;
	int		 rc;

	if (sbx_fs_read_file_at(s->dirfd, STORE_ASIDE, STORE_CAP, &b, &e2) == 0)
		doc = json_loadb(b.p, b.len, 0, NULL);
	sbx_buf_release(&b);
	if (!json_is_object(doc) ||
	    !json_is_object(json_object_get(doc, "records"))) {
		/* Unreadable itself: started again (it only ever holds
		 * records that did not open). */
		json_decref(doc);
		doc = json_pack("{s:s,s:{}}", "agent", s->agent, "records");
	}
	recs = json_object_get(doc, "records");
	sbx_time_utc_iso(now);
	json_object_foreach (s->aside, name, rec) {
		snprintf(key, sizeof(key), "%s@%s", name, now);
		json_object_set(recs, key, rec);
		json_array_append_new(s->warnings,
		    json_sprintf(
			"the record of secret %s of agent %s does not open "
			"(damaged): it is set aside in agents/%s/%s and "
			"agents/%s/%s is kept as it was; set the secret again "
			"(sbx secret set %s --agent %s)",
			name, s->agent, s->agent, STORE_ASIDE, s->agent,
			STORE_PREV, name, s->agent));
	}
	text = json_dumps(doc, JSON_SORT_KEYS | JSON_INDENT(1));
	json_decref(doc);
	if (text == NULL)
		return sbx_error_sys(e, "nomem",
		    "writing agent %s's damaged "
		    "secrets",
		    s->agent);
	rc = sbx_fs_write_atomic(s->dirfd, STORE_ASIDE, text, strlen(text),
	    0600, e);
	free(text);
	return rc;
}

int
sbx_secret_commit(struct sbx_secret_store *s, struct sbx_error *e)
{
	char	*text;
	int	 fd, rc;

	if (!s->dirty)
		return 0;
	json_object_set_new(s->doc, "generation", json_integer(
	    json_integer_value(json_object_get(s->doc, "generation")) + 1));
	text = json_dumps(s->doc, JSON_SORT_KEYS | JSON_INDENT(1));
	if (text == NULL)
		return sbx_error_sys(e, "nomem", "writing the secret store");
	(void)unlinkat(s->dirfd, STORE_TMP, 0);
	fd = openat(s->dirfd, STORE_TMP, O_WRONLY | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		free(text);
		return sbx_error_sys(e, "write_failed", "writing agent %s's "
		    "secrets", s->agent);
	}
	rc = sbx_fs_write_all(fd, text, strlen(text));
	if (rc == 0)
		rc = sbx_fs_write_all(fd, "\n", 1);
	if (rc == 0)
		rc = fsync(fd);
	close(fd);
	free(text);
	if (rc == -1) {
		sbx_error_sys(e, "write_failed", "writing agent %s's secrets",
		    s->agent);
		(void)unlinkat(s->dirfd, STORE_TMP, 0);
		return -1;
	}
	if (s->aside != NULL && keep_aside(s, e) == -1) {
		(void)unlinkat(s->dirfd, STORE_TMP, 0);
		return -1;
	}
	/*
	 * The current file becomes the previous generation (a hard link, so
	 * that the current name never goes missing) unless it is the damaged
	 * one, or holds a record that does not open: the previous generation
	 * may be the last copy where that record is whole.  Then the new
	 * file takes the current name.
	 */
	if (!s->from_prev && s->aside == NULL &&
	    faccessat(s->dirfd, STORE, F_OK, AT_SYMLINK_NOFOLLOW) == 0) {
		(void)unlinkat(s->dirfd, STORE_PREV, 0);
		if (linkat(s->dirfd, STORE, s->dirfd, STORE_PREV, 0) == -1) {
			sbx_error_sys(e, "write_failed", "keeping the previous "
			    "generation of agent %s's secrets", s->agent);
			(void)unlinkat(s->dirfd, STORE_TMP, 0);
			return -1;
		}
	}
	if (renameat(s->dirfd, STORE_TMP, s->dirfd, STORE) == -1) {
		sbx_error_sys(e, "write_failed", "writing agent %s's secrets",
		    s->agent);
		(void)unlinkat(s->dirfd, STORE_TMP, 0);
		return -1;
	}
	(void)fsync(s->dirfd);
	s->dirty = 0;
	s->from_prev = 0;
	json_decref(s->aside);
	s->aside = NULL;
	return 0;
}

json_t *
sbx_secret_list(const struct sbx_secret_store *s)
{
	json_t		*a = json_array(), *rec, *o;
	const char	*name;
	const char	*keys[] = { "description", "created", "updated" };
	size_t		 i;

	if (s->doc == NULL)
		return a;
	/* jansson iterates in insertion order; the file is written sorted
	 * and new names are sorted in below. */
	json_object_foreach(json_object_get(s->doc, "secrets"), name, rec) {
		o = json_pack("{s:s}", "name", name);
		for (i = 0; i < 3; i++)
			if (json_is_string(json_object_get(rec, keys[i])))
				json_object_set(o, keys[i],
				    json_object_get(rec, keys[i]));
		for (i = 0; i < json_array_size(a); i++)
			if (strcmp(json_string_value(json_object_get(
			    json_array_get(a, i), "name")), name) > 0)
				break;
		json_array_insert_new(a, i, o);
	}
	return a;
}

void
sbx_secret_close(struct sbx_secret_store *s)
{
	if (s->dk != NULL)
		sodium_free(s->dk);
	if (s->mk != NULL)
		sodium_free(s->mk);
	s->dk = s->mk = NULL;
	json_decref(s->doc);
	json_decref(s->warnings);
	json_decref(s->aside);
	s->doc = s->warnings = s->aside = NULL;
	if (s->lockfd >= 0)
		close(s->lockfd);
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->lockfd = s->dirfd = -1;
}

json_t *
sbx_secret_names(int rootfd, const char *agent)
{
	struct sbx_error	 e;
	json_t			*doc, *a = json_array(), *rec;
	const char		*name;
	int			 dfd, present;

	if ((dfd = agent_dir(rootfd, agent, 0, &e)) == -1)
		return a;
	if ((doc = load(dfd, STORE, agent, &present)) == NULL)
		doc = load(dfd, STORE_PREV, agent, &present);
	close(dfd);
	json_object_foreach(json_object_get(doc, "secrets"), name, rec)
		json_array_append_new(a, json_string(name));
	json_decref(doc);
	return a;
}

int
sbx_secret_remove_store(int rootfd, const char *agent, struct sbx_error *e)
{
	static const char *const files[] = { STORE, STORE_PREV, STORE_TMP,
	    STORE_LOCK };
	size_t	 i;
	int	 dfd;

	if ((dfd = agent_dir(rootfd, agent, 0, e)) == -1)
		return e->sys_errno == ENOENT || (e->reason != NULL &&
		    strcmp(e->reason, "not_found") == 0) ? 0 : -1;
	for (i = 0; i < sizeof(files) / sizeof(*files); i++)
		if (unlinkat(dfd, files[i], 0) == -1 && errno != ENOENT) {
			sbx_error_sys(e, "remove_failed", "removing agent %s's "
			    "%s", agent, files[i]);
			close(dfd);
			return -1;
		}
	close(dfd);
	return 0;
}

static int
selected(char *const *sel, size_t nsel, const char *name)
{
	size_t	 i;

	if (nsel == 0)
		return 1;
	for (i = 0; i < nsel; i++)
		if (strcmp(sel[i], name) == 0)
			return 1;
	return 0;
}

int
sbx_secret_load_env(int rootfd, const char *agent, char *const *sel,
    size_t nsel, const struct sbx_secret_auth *a, struct sbx_secret_env *out,
    struct sbx_error *e)
{
	struct sbx_secret_store	 s;
	struct sbx_buf		 ad = SBX_BUF_INIT;
	json_t			*secrets, *rec;
	const char		*name;
	unsigned char		 nonce[NONCELEN], *ct = NULL;
	char			*p;
	size_t			 i, total = 0, count = 0, clen, nl, bin;
	int			 rc = -1;

	memset(out, 0, sizeof(*out));
	/* The common case costs one failed stat: no store, no work. */
	if (nsel == 0 && !sbx_secret_store_exists(rootfd, agent))
		return 0;
	if (sbx_secret_open(&s, rootfd, agent, 0, a, e) == -1) {
		sbx_secret_close(&s);
		return -1;
	}
	secrets = s.doc != NULL ? json_object_get(s.doc, "secrets") : NULL;
	for (i = 0; i < nsel; i++)
		if (json_object_get(secrets, sel[i]) == NULL) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "secret",
			    "secret_missing", "agent %s has no secret %s",
			    agent, sel[i]);
			sbx_error_hint(e, "sbx secret set %s --agent %s",
			    sel[i], agent);
			goto out;
		}
	json_object_foreach(secrets, name, rec) {
		const char *v = json_string_value(json_object_get(rec,
		    "value"));
		if (!selected(sel, nsel, name))
			continue;
		total += strlen(name) + 2 + strlen(v) / 4 * 3 + 3;
		count++;
	}
	if (count == 0) {
		rc = 0;
		goto out;
	}
	if ((out->assign = calloc(count + 1, sizeof(char *))) == NULL ||
	    (out->block = sodium_malloc(total)) == NULL ||
	    (ct = malloc(SBX_SECRET_VALUE_MAX + TAGLEN + 4)) == NULL ||
	    (out->scrub = sbx_scrub_new()) == NULL) {
		sbx_error_sys(e, "nomem", "loading secrets");
		goto out;
	}
	out->block_len = total;
	p = out->block;
	json_object_foreach(secrets, name, rec) {
		const char *n64 = json_string_value(json_object_get(rec,
		    "nonce"));
		const char *c64 = json_string_value(json_object_get(rec,
		    "value"));
		if (!selected(sel, nsel, name))
			continue;
		if (sodium_base642bin(nonce, sizeof(nonce), n64, strlen(n64),
		    NULL, &bin, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
		    bin != NONCELEN || sodium_base642bin(ct,
		    SBX_SECRET_VALUE_MAX + TAGLEN, c64, strlen(c64), NULL,
		    &clen, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
		    clen < TAGLEN)
			goto bad;
		nl = strlen(name);
		memcpy(p, name, nl);
		p[nl] = '=';
		ad_make(&ad, "sbx-secret-v1", agent, name);
		if (crypto_aead_xchacha20poly1305_ietf_decrypt(
		    (unsigned char *)p + nl + 1, NULL, NULL, ct, clen,
		    (unsigned char *)ad.p, ad.len, nonce, s.dk) != 0)
			goto bad;
		p[nl + 1 + clen - TAGLEN] = '\0';
		out->assign[out->n++] = p;
		if (sbx_scrub_add(out->scrub, name, p + nl + 1,
		    clen - TAGLEN) == -1) {
			sbx_error_sys(e, "nomem", "loading secrets");
			goto out;
		}
		p += nl + 1 + clen - TAGLEN + 1;
		continue;
bad:
		sbx_error_set(e, SBX_K_REJECTED, "secret",
		    "secret_store_unreadable", "the record of secret %s does "
		    "not open for agent %s (damaged, or copied from another "
		    "agent or name)", name, agent);
		record_damaged(e, agent, name);
		goto out;
	}
	if (sbx_scrub_values(out->scrub) == 0) {
		sbx_scrub_free(out->scrub);
		out->scrub = NULL;
	}
	rc = 0;
out:
	if (json_array_size(s.warnings) > 0)
		out->warnings = json_incref(s.warnings);
	free(ct);
	sbx_buf_release(&ad);
	sbx_secret_close(&s);
	if (rc == -1)
		sbx_secret_env_release(out);
	return rc;
}

void
sbx_secret_env_release(struct sbx_secret_env *v)
{
	if (v->block != NULL)
		sodium_free(v->block);
	free(v->assign);
	sbx_scrub_free(v->scrub);
	json_decref(v->warnings);
	memset(v, 0, sizeof(*v));
}

int
sbx_secret_scrubber(int rootfd, const char *agent, struct sbx_scrub **out,
    struct sbx_error *e)
{
	struct sbx_secret_auth	 a;
	struct sbx_secret_env	 env;
	const char		*pw = getenv("SBX_SECRET_PASSPHRASE");

	*out = NULL;
	if (!sbx_secret_store_exists(rootfd, agent))
		return 0;
	memset(&a, 0, sizeof(a));
	if (pw != NULL && *pw != '\0') {
		a.passphrase = pw;
		a.passphrase_len = strlen(pw);
	}
	if (sbx_secret_load_env(rootfd, agent, NULL, 0, &a, &env, e) == -1)
		return -1;
	*out = env.scrub;
	env.scrub = NULL;
	sbx_secret_env_release(&env);	/* the values, zeroed */
	return 0;
}

/*
 * A daemon (the bridge, the proxy) scrubs what a run sends it with the
 * agent's secrets; unsealing the store for every record would cost a
 * decryption each, so the scrubber is kept while the store is the same
 * file.  Every write of the store is a rename of a new file (and a key
 * rotation re-seals into one), so inode, size and times change with any
 * value.
 */
struct scache {
	char		 agent[64];
	int		 have;		/* the store existed */
	dev_t		 dev;
	ino_t		 ino;
	off_t		 size;
	struct timespec	 mtim, ctim;
	struct sbx_scrub *sc;
	struct scache	*next;
};

static struct scache	*scaches;

static int
store_stat(int rootfd, const char *agent, struct stat *st)
{
	char	 rel[160];

	snprintf(rel, sizeof(rel), "agents/%s/" STORE, agent);
	if (fstatat(rootfd, rel, st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	snprintf(rel, sizeof(rel), "agents/%s/" STORE_PREV, agent);
	return fstatat(rootfd, rel, st, AT_SYMLINK_NOFOLLOW) == 0;
}

int
sbx_secret_scrubber_cached(int rootfd, const char *agent,
    struct sbx_scrub **out, struct sbx_error *e)
{
	struct scache	*c;
	struct stat	 st;
	int		 have;

	*out = NULL;
	if (sbx_names_agent_valid(agent, "agent", e) == -1)
		return -1;
	have = store_stat(rootfd, agent, &st);
	for (c = scaches; c != NULL; c = c->next)
		if (strcmp(c->agent, agent) == 0)
			break;
	if (c != NULL && c->have == have && (!have || (c->dev == st.st_dev &&
	    c->ino == st.st_ino && c->size == st.st_size &&
	    c->mtim.tv_sec == st.st_mtim.tv_sec &&
	    c->mtim.tv_nsec == st.st_mtim.tv_nsec &&
	    c->ctim.tv_sec == st.st_ctim.tv_sec &&
	    c->ctim.tv_nsec == st.st_ctim.tv_nsec))) {
		*out = c->sc;
		return 0;
	}
	if (c == NULL) {
		if ((c = calloc(1, sizeof(*c))) == NULL)
			return sbx_error_sys(e, "nomem", "scrubber cache");
		snprintf(c->agent, sizeof(c->agent), "%s", agent);
		c->next = scaches;
		scaches = c;
	}
	sbx_scrub_free(c->sc);
	c->sc = NULL;
	c->have = -1;	/* stale until rebuilt */
	if (have && sbx_secret_scrubber(rootfd, agent, &c->sc, e) == -1)
		return -1;
	/* An empty store is no filter (sbx_scrub_json passes all). */
	c->have = have;
	if (have) {
		c->dev = st.st_dev;
		c->ino = st.st_ino;
		c->size = st.st_size;
		c->mtim = st.st_mtim;
		c->ctim = st.st_ctim;
	}
	*out = c->sc;
	return 0;
}

void
sbx_secret_digest(const void *val, size_t len,
    char hex[SBX_SECRET_DIGEST_HEX + 1])
{
	unsigned char	 h[SBX_SECRET_DIGEST_HEX / 2];

	crypto_generichash(h, sizeof(h), val, len, NULL, 0);
	sodium_bin2hex(hex, SBX_SECRET_DIGEST_HEX + 1, h, sizeof(h));
	sodium_memzero(h, sizeof(h));
}

void
sbx_secret_describe_stores(int rootfd, json_t *out)
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct dirent		*d;
	struct stat		 st;
	DIR			*dir;
	json_t			*names, *n;
	size_t			 i;
	int			 fd;

	if (rootfd < 0 || (fd = sbx_fs_open_beneath(rootfd, "agents", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC, &e)) == -1)
		goto key;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		goto key;
	}
	while ((d = readdir(dir)) != NULL) {
		if (d->d_name[0] == '.' ||
		    sbx_names_agent_valid(d->d_name, "agent", &e) == -1 ||
		    !sbx_secret_store_exists(rootfd, d->d_name))
			continue;
		names = sbx_secret_names(rootfd, d->d_name);
		sbx_buf_reset(&b);
		sbx_buf_printf(&b, "agents/%s/%s (secrets:", d->d_name, STORE);
		json_array_foreach(names, i, n)
			sbx_buf_printf(&b, "%s %s", i ? "," : "",
			    json_string_value(n));
		if (json_array_size(names) == 0)
			sbx_buf_puts(&b, " unreadable");
		sbx_buf_puts(&b, ")");
		json_array_append_new(out, json_string(b.p));
		json_decref(names);
	}
	closedir(dir);
key:
	if (rootfd >= 0 && fstatat(rootfd, SBX_SECRET_KEY_NAME, &st,
	    AT_SYMLINK_NOFOLLOW) == 0)
		json_array_append_new(out, json_string(SBX_SECRET_KEY_NAME
		    " (the key of the secrets)"));
	sbx_buf_release(&b);
}
