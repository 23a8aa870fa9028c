/*
 * tlsca.c: the state root's certificate authority (tlsca.h), with
 * OpenSSL's libcrypto and libssl: the library the host's libcurl already
 * uses on Debian (libcurl4-openssl-dev), so the proxy adds no TLS stack
 * of its own and trusts what the host's tools trust (its default verify
 * paths, SSL_CERT_FILE and SSL_CERT_DIR included).
 *
 * The CA key is the one secret here: it could mint a certificate any
 * sandbox trusts for any name.  So it is made with O_EXCL under a lock,
 * 0600, beneath the state root's descriptor without following a link
 * (fsutil), refused when it is readable by anyone else, and it never
 * leaves this process: leaves are minted here, only for the hosts a
 * credential rule names (the proxy asks for no other), with a key of
 * their own, for a day.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "buf.h"
#include "fsutil.h"
#include "tlsca.h"

#define CA_DIR		"config/ca"
#define CA_KEY		"ca.key"
#define CA_CRT		"ca.crt"
#define CA_BUNDLE	"bundle.pem"
#define CA_LOCK		"ca.lock"
#define CA_DAYS		3650
#define LEAF_SECS	(24L * 3600)
/* A leaf is made again when it has less than this left. */
#define LEAF_RENEW	(3600L)
#define LEAF_CACHE	256
#define FILE_CAP	(1 << 20)
#define BUNDLE_CAP	(16 << 20)

struct leaf {
	char		 host[256];
	SSL_CTX		*ctx;
	time_t		 expires;
	unsigned long	 used;
};

struct sbx_tlsca {
	EVP_PKEY	*key;
	X509		*crt;
	EVP_PKEY	*leafkey;	/* one key for every leaf */
	struct leaf	 leaves[LEAF_CACHE];
	size_t		 nleaves;
	unsigned long	 clock;
};

const char *
sbx_tlsca_bundle_rel(void)
{
	return CA_DIR "/" CA_BUNDLE;
}

/* OpenSSL's last error, for a message. */
static const char *
ossl_err(void)
{
	static __thread char	 b[256];
	unsigned long		 c = ERR_get_error();

	if (c == 0)
		return "unknown error";
	ERR_error_string_n(c, b, sizeof(b));
	ERR_clear_error();
	return b;
}

static int
ca_fail(struct sbx_error *e, const char *file, const char *reason,
    const char *what)
{
	sbx_error_set(e, SBX_K_REJECTED, "ca", reason, "%s/%s: %s", CA_DIR,
	    file, what);
	sbx_error_hint(e, "remove %s/ to make a new CA (the sandboxes trust "
	    "the new one from their next run)", CA_DIR);
	return -1;
}

static EVP_PKEY *
new_key(void)
{
	return EVP_EC_gen("P-256");
}

static int
add_ext(X509 *issuer, X509 *x, int nid, const char *value)
{
	X509V3_CTX	 ctx;
	X509_EXTENSION	*ext;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, x, NULL, NULL, 0);
	if ((ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	if (!X509_add_ext(x, ext, -1)) {
		X509_EXTENSION_free(ext);
		return -1;
	}
	X509_EXTENSION_free(ext);
	return 0;
}

static int
rand_serial(X509 *x)
{
	unsigned char	 r[16];
	BIGNUM		*bn;
	int		 ok;

	if (RAND_bytes(r, sizeof(r)) != 1)
		return -1;
	r[0] &= 0x7f;	/* positive */
	if ((bn = BN_bin2bn(r, sizeof(r), NULL)) == NULL)
		return -1;
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

/* The CA's own certificate: CA:TRUE with pathlen 0 (it signs leaves,
 * never another CA), keyCertSign and cRLSign only, ten years. */
static X509 *
make_ca(EVP_PKEY *key)
{
	X509		*x;
	X509_NAME	*n;
	char		 cn[128], host[64];

	if ((x = X509_new()) == NULL)
		return NULL;
	if (gethostname(host, sizeof(host)) == -1)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(cn, sizeof(cn), "sbx proxy CA (%s)", host);
	n = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || rand_serial(x) == -1 ||
	    !X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8,
	    (const unsigned char *)"sbx", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, n) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 86400L * CA_DAYS) ||
	    !X509_set_pubkey(x, key) ||
	    add_ext(x, x, NID_basic_constraints, "critical,CA:TRUE,pathlen:0")
	    == -1 ||
	    add_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ==
	    -1 ||
	    add_ext(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    !X509_sign(x, key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	return x;
}

static char *
pem_key(EVP_PKEY *k, size_t *n)
{
	BIO	*b;
	char	*p, *out = NULL;
	long	 len;

	if ((b = BIO_new(BIO_s_secmem())) == NULL)
		return NULL;
	if (PEM_write_bio_PrivateKey(b, k, NULL, NULL, 0, NULL, NULL) &&
	    (len = BIO_get_mem_data(b, &p)) > 0 &&
	    (out = malloc((size_t)len)) != NULL) {
		memcpy(out, p, (size_t)len);
		*n = (size_t)len;
	}
	BIO_free(b);
	return out;
}

static char *
pem_crt(X509 *x, size_t *n)
{
	BIO	*b;
	char	*p, *out = NULL;
	long	 len;

	if ((b = BIO_new(BIO_s_mem())) == NULL)
		return NULL;
	if (PEM_write_bio_X509(b, x) && (len = BIO_get_mem_data(b, &p)) > 0 &&
	    (out = malloc((size_t)len + 1)) != NULL) {
		memcpy(out, p, (size_t)len);
		out[len] = '\0';
		*n = (size_t)len;
	}
	BIO_free(b);
	return out;
}

/* The state root's owner, for files a root-run process makes in a root
 * someone else owns. */
static void
own(int dirfd, const char *name, int rootfd)
{
	struct stat	 st;

	if (geteuid() != 0 || fstat(rootfd, &st) == -1 || st.st_uid == 0)
		return;
	(void)!fchownat(dirfd, name, st.st_uid, st.st_gid,
	    AT_SYMLINK_NOFOLLOW);
}

/* Does dirfd/name exist (as anything, a link included)? 1, 0, -1. */
static int
present(int dirfd, const char *name, struct stat *st)
{
	if (fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

/* Read dirfd/name (no link followed) into b; with key, the file must be
 * a regular file readable by its owner alone. */
static int
read_ca_file(int dirfd, const char *name, int key, struct sbx_buf *b,
    struct sbx_error *e)
{
	struct stat	 st;
	int		 fd;

	if ((fd = sbx_fs_open_beneath(dirfd, name, O_RDONLY | O_NONBLOCK,
	    e)) == -1) {
		if (e->reason != NULL && strcmp(e->reason, "not_found") != 0)
			return ca_fail(e, name, "ca_unreadable", e->message);
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ca_fail(e, name, "ca_unreadable", "not a regular file");
	}
	/* Readable by anyone but its owner, or owned by someone else
	 * (root reads a user's root): refused, never used or repaired. */
	if (key && ((st.st_mode & 077) != 0 || (st.st_uid != geteuid() &&
	    geteuid() != 0))) {
		close(fd);
		return ca_fail(e, name, "ca_key_exposed", "the CA key must be "
		    "mode 0600 and owned by the state root's owner");
	}
	if (sbx_fs_read_fd(fd, b, FILE_CAP) == -1) {
		close(fd);
		return ca_fail(e, name, "ca_unreadable", strerror(errno));
	}
	close(fd);
	return 0;
}

/* The key and certificate as files say; the pair must match and the
 * certificate must be a CA's. */
static int
load_pair(int dirfd, EVP_PKEY **kp, X509 **xp, struct sbx_error *e)
{
	struct sbx_buf	 kb = SBX_BUF_INIT, cb = SBX_BUF_INIT;
	BIO		*b;
	EVP_PKEY	*k = NULL;
	X509		*x = NULL;
	int		 rc = -1;

	if (read_ca_file(dirfd, CA_KEY, 1, &kb, e) == -1 ||
	    read_ca_file(dirfd, CA_CRT, 0, &cb, e) == -1)
		goto out;
	if ((b = BIO_new_mem_buf(kb.p, (int)kb.len)) != NULL) {
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	if (k == NULL) {
		ca_fail(e, CA_KEY, "ca_damaged", "not a PEM private key");
		goto out;
	}
	if ((b = BIO_new_mem_buf(cb.p, (int)cb.len)) != NULL) {
		x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		BIO_free(b);
	}
	if (x == NULL) {
		ca_fail(e, CA_CRT, "ca_damaged", "not a PEM certificate");
		goto out;
	}
	if (X509_check_ca(x) < 1) {
		ca_fail(e, CA_CRT, "ca_damaged", "not a CA certificate");
		goto out;
	}
	if (X509_check_private_key(x, k) != 1) {
		ERR_clear_error();
		ca_fail(e, CA_CRT, "ca_mismatch",
		    "the certificate is not ca.key's");
		goto out;
	}
	*kp = k;
	*xp = x;
	k = NULL;
	x = NULL;
	rc = 0;
out:
	if (kb.p != NULL)
		OPENSSL_cleanse(kb.p, kb.cap);
	sbx_buf_release(&kb);
	sbx_buf_release(&cb);
	EVP_PKEY_free(k);
	X509_free(x);
	return rc;
}

/* Make the key and the certificate: both written to temp names first,
 * the key renamed in before the certificate (a crash between leaves a
 * key without a certificate, which is refused, never a certificate
 * whose key is lost). */
static int
create_ca(int dirfd, int rootfd, struct sbx_error *e)
{
	EVP_PKEY	*k;
	X509		*x = NULL;
	char		*kp = NULL, *cp = NULL;
	size_t		 kn = 0, cn = 0;
	int		 rc = -1;

	if ((k = new_key()) == NULL || (x = make_ca(k)) == NULL ||
	    (kp = pem_key(k, &kn)) == NULL || (cp = pem_crt(x, &cn)) == NULL) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, "ca", "ca_create",
		    "cannot make the proxy's CA: %s", ossl_err());
		goto out;
	}
	if (sbx_fs_replace_at(dirfd, CA_KEY, kp, kn, 0600, e) == -1)
		goto out;
	own(dirfd, CA_KEY, rootfd);
	if (sbx_fs_replace_at(dirfd, CA_CRT, cp, cn, 0644, e) == -1)
		goto out;
	own(dirfd, CA_CRT, rootfd);
	rc = 0;
out:
	if (kp != NULL) {
		OPENSSL_cleanse(kp, kn);
		free(kp);
	}
	free(cp);
	X509_free(x);
	EVP_PKEY_free(k);
	return rc;
}

/* The host's bundle, as OpenSSL finds it (SSL_CERT_FILE first). */
static const char *
host_bundle(void)
{
	const char	*f = getenv(X509_get_default_cert_file_env());

	return f != NULL && *f != '\0' ? f : X509_get_default_cert_file();
}

static int
newer(const struct stat *a, const struct stat *b)
{
	return a->st_mtim.tv_sec > b->st_mtim.tv_sec ||
	    (a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec > b->st_mtim.tv_nsec);
}

/* bundle.pem: the host's bundle, then ca.crt. */
static int
write_bundle(int dirfd, int rootfd, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct stat	 hs, cs, bs;
	int		 fd, hb, rc = -1;

	if (fstatat(dirfd, CA_CRT, &cs, AT_SYMLINK_NOFOLLOW) == -1)
		return ca_fail(e, CA_CRT, "ca_unreadable", strerror(errno));
	hb = stat(host_bundle(), &hs) == 0 && S_ISREG(hs.st_mode);
	if (present(dirfd, CA_BUNDLE, &bs) == 1 && S_ISREG(bs.st_mode) &&
	    !newer(&cs, &bs) && (!hb || !newer(&hs, &bs)))
		return 0;
	/* The host's own file, outside the state root: read as it is
	 * (a distribution's bundle is often a link). */
	if (hb && (fd = open(host_bundle(), O_RDONLY | O_CLOEXEC |
	    O_NONBLOCK)) != -1) {
		if (sbx_fs_read_fd(fd, &b, BUNDLE_CAP) == -1)
			sbx_buf_reset(&b);
		close(fd);
		if (b.len > 0 && b.p[b.len - 1] != '\n')
			sbx_buf_puts(&b, "\n");
	}
	if ((fd = sbx_fs_open_beneath(dirfd, CA_CRT, O_RDONLY | O_NONBLOCK,
	    e)) == -1)
		goto out;
	if (sbx_fs_read_fd(fd, &b, BUNDLE_CAP + FILE_CAP) == -1) {
		close(fd);
		ca_fail(e, CA_CRT, "ca_unreadable", strerror(errno));
		goto out;
	}
	close(fd);
	if (sbx_fs_replace_at(dirfd, CA_BUNDLE, b.p, b.len, 0644, e) == -1)
		goto out;
	own(dirfd, CA_BUNDLE, rootfd);
	rc = 0;
out:
	sbx_buf_release(&b);
	return rc;
}

/* config/ca, locked: the descriptors of the directory and the lock. */
static int
ca_open(int rootfd, int *lockfd, struct sbx_error *e)
{
	int	 dirfd;

	if ((dirfd = sbx_fs_mkdirs_at(rootfd, CA_DIR, 0755, e)) == -1)
		return -1;
	*lockfd = openat(dirfd, CA_LOCK, O_RDWR | O_CREAT | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (*lockfd == -1 || flock(*lockfd, LOCK_EX) == -1) {
		sbx_error_sys(e, "ca_lock", "cannot lock %s/%s", CA_DIR,
		    CA_LOCK);
		if (*lockfd != -1)
			close(*lockfd);
		close(dirfd);
		return -1;
	}
	own(dirfd, CA_LOCK, rootfd);
	return dirfd;
}

/* Under the lock: make the pair when neither is there, refuse half of
 * one, check a whole one, then the bundle. */
static int
ensure_locked(int dirfd, int rootfd, EVP_PKEY **kp, X509 **xp,
    struct sbx_error *e)
{
	struct stat	 st;
	EVP_PKEY	*k = NULL;
	X509		*x = NULL;
	int		 hk, hc;

	if ((hk = present(dirfd, CA_KEY, &st)) == -1 ||
	    (hc = present(dirfd, CA_CRT, &st)) == -1)
		return sbx_error_sys(e, "ca_unreadable", "cannot look at %s",
		    CA_DIR);
	if (!hk && !hc) {
		if (create_ca(dirfd, rootfd, e) == -1)
			return -1;
	} else if (!hc)
		return ca_fail(e, CA_CRT, "ca_damaged", "missing, but ca.key "
		    "is there");
	else if (!hk)
		return ca_fail(e, CA_KEY, "ca_damaged", "missing, but ca.crt "
		    "is there");
	if (load_pair(dirfd, &k, &x, e) == -1)
		return -1;
	if (write_bundle(dirfd, rootfd, e) == -1) {
		EVP_PKEY_free(k);
		X509_free(x);
		return -1;
	}
	if (kp != NULL)
		*kp = k;
	else
		EVP_PKEY_free(k);
	if (xp != NULL)
		*xp = x;
	else
		X509_free(x);
	return 0;
}

int
sbx_tlsca_ensure(int rootfd, struct sbx_error *e)
{
	int	 dirfd, lockfd, rc;

	if ((dirfd = ca_open(rootfd, &lockfd, e)) == -1)
		return -1;
	rc = ensure_locked(dirfd, rootfd, NULL, NULL, e);
	close(lockfd);
	close(dirfd);
	return rc;
}

struct sbx_tlsca *
sbx_tlsca_load(int rootfd, struct sbx_error *e)
{
	struct sbx_tlsca	*ca;
	int			 dirfd, lockfd, rc;

	if ((ca = calloc(1, sizeof(*ca))) == NULL) {
		sbx_error_sys(e, "nomem", "out of memory");
		return NULL;
	}
	if ((dirfd = ca_open(rootfd, &lockfd, e)) == -1) {
		free(ca);
		return NULL;
	}
	rc = ensure_locked(dirfd, rootfd, &ca->key, &ca->crt, e);
	close(lockfd);
	close(dirfd);
	if (rc == -1) {
		free(ca);
		return NULL;
	}
	if ((ca->leafkey = new_key()) == NULL) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, "ca", "ca_create",
		    "cannot make a leaf key: %s", ossl_err());
		sbx_tlsca_free(ca);
		return NULL;
	}
	return ca;
}

/* ALPN: HTTP/1.1 only.  A client that offers h2 as well gets HTTP/1.1;
 * one that offers nothing else gets no protocol (and falls back or
 * fails): the proxy reads requests as HTTP/1.1 alone. */
static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned int	 i;

	(void)ssl;
	(void)arg;
	for (i = 0; i < inlen; i += 1 + in[i])
		if (in[i] == 8 && i + 9 <= inlen &&
		    memcmp(in + i + 1, "http/1.1", 8) == 0) {
			*out = in + i + 1;
			*outlen = 8;
			return SSL_TLSEXT_ERR_OK;
		}
	return SSL_TLSEXT_ERR_NOACK;
}

static X509 *
make_leaf(struct sbx_tlsca *ca, const char *host, time_t *expires)
{
	X509		*x;
	X509_NAME	*n;
	unsigned char	 a[16];
	char		 san[300], cn[65];
	int		 ip;

	ip = inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host,
	    a) == 1;
	snprintf(san, sizeof(san), "%s:%s", ip ? "IP" : "DNS", host);
	snprintf(cn, sizeof(cn), "%s", host);
	if ((x = X509_new()) == NULL)
		return NULL;
	n = X509_get_subject_name(x);
	if (!X509_set_version(x, 2) || rand_serial(x) == -1 ||
	    !X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->crt)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), -3600) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), LEAF_SECS) ||
	    !X509_set_pubkey(x, ca->leafkey) ||
	    add_ext(ca->crt, x, NID_basic_constraints, "critical,CA:FALSE") ==
	    -1 ||
	    add_ext(ca->crt, x, NID_key_usage, "critical,digitalSignature") ==
	    -1 ||
	    add_ext(ca->crt, x, NID_ext_key_usage, "serverAuth") == -1 ||
	    add_ext(ca->crt, x, NID_subject_alt_name, san) == -1 ||
	    add_ext(ca->crt, x, NID_authority_key_identifier, "keyid:always")
	    == -1 ||
	    !X509_sign(x, ca->key, EVP_sha256())) {
		X509_free(x);
		return NULL;
	}
	*expires = time(NULL) + LEAF_SECS;
	return x;
}

void *
sbx_tlsca_server_ctx(struct sbx_tlsca *ca, const char *host,
    struct sbx_error *e)
{
	struct leaf	*l = NULL;
	SSL_CTX		*ctx;
	X509		*x;
	time_t		 now = time(NULL), exp;
	size_t		 i;

	if (*host == '\0' || strlen(host) >= sizeof(l->host)) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "host", "bad_host",
		    "no certificate for an empty or long name");
		return NULL;
	}
	for (i = 0; i < ca->nleaves; i++)
		if (strcmp(ca->leaves[i].host, host) == 0) {
			l = &ca->leaves[i];
			if (l->expires - now > LEAF_RENEW) {
				l->used = ++ca->clock;
				return l->ctx;
			}
			break;
		}
	if ((x = make_leaf(ca, host, &exp)) == NULL) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, "ca", "leaf_failed",
		    "cannot make a certificate for %s: %s", host, ossl_err());
		return NULL;
	}
	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL ||
	    !SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) ||
	    SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, ca->leafkey) != 1) {
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, "ca", "leaf_failed",
		    "cannot serve a certificate for %s: %s", host,
		    ossl_err());
		SSL_CTX_free(ctx);
		X509_free(x);
		return NULL;
	}
	X509_free(x);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_NO_COMPRESSION);
	if (l == NULL && ca->nleaves < LEAF_CACHE)
		l = &ca->leaves[ca->nleaves++];
	else if (l == NULL) {
		/* Full: the least recently used goes. */
		l = &ca->leaves[0];
		for (i = 1; i < ca->nleaves; i++)
			if (ca->leaves[i].used < l->used)
				l = &ca->leaves[i];
	}
	SSL_CTX_free(l->ctx);
	snprintf(l->host, sizeof(l->host), "%s", host);
	l->ctx = ctx;
	l->expires = exp;
	l->used = ++ca->clock;
	return ctx;
}

void
sbx_tlsca_free(struct sbx_tlsca *ca)
{
	size_t	 i;

	if (ca == NULL)
		return;
	for (i = 0; i < ca->nleaves; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leafkey);
	X509_free(ca->crt);
	free(ca);
}
