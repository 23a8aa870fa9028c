/* t-tlsca: the state root's CA: made once (0600 key, CA:TRUE pathlen 0),
 * kept, refused when damaged, exposed or planted as a link; leaves per
 * host that verify against it by name, cached. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "tap.h"
#include "fixture.h"

#include "tlsca.h"

static char	 root[PATH_MAX];

static char *
slurp(const char *rel, size_t *n)
{
	char	 p[PATH_MAX + 64], *b;
	FILE	*f;
	long	 len;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if ((f = fopen(p, "rb")) == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	b = calloc(1, (size_t)len + 1);
	if (b != NULL && fread(b, 1, (size_t)len, f) != (size_t)len) {
		free(b);
		b = NULL;
	}
	fclose(f);
	if (n != NULL)
		*n = (size_t)len;
	return b;
}

static X509 *
read_crt(const char *rel)
{
	char	 p[PATH_MAX + 64];
	FILE	*f;
	X509	*x;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	if ((f = fopen(p, "r")) == NULL)
		return NULL;
	x = PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	return x;
}

/* Does the leaf of ctx verify against ca for name (a DNS name or IP)? */
static int
verifies(SSL_CTX *ctx, X509 *ca, const char *name, int ip)
{
	X509_STORE	*st = X509_STORE_new();
	X509_STORE_CTX	*sc = X509_STORE_CTX_new();
	X509		*leaf = SSL_CTX_get0_certificate(ctx);
	int		 ok;

	X509_STORE_add_cert(st, ca);
	X509_STORE_CTX_init(sc, st, leaf, NULL);
	if (ip)
		X509_VERIFY_PARAM_set1_ip_asc(X509_STORE_CTX_get0_param(sc),
		    name);
	else
		X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(sc),
		    name, 0);
	X509_VERIFY_PARAM_set_purpose(X509_STORE_CTX_get0_param(sc),
	    X509_PURPOSE_SSL_SERVER);
	ok = X509_verify_cert(sc) == 1;
	X509_STORE_CTX_free(sc);
	X509_STORE_free(st);
	return ok;
}

static int
fresh_root(int *rootfd)
{
	snprintf(root, sizeof(root), "/tmp/t-tlsca.XXXXXX");
	*rootfd = t_tmpdir(root);
	return *rootfd;
}

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_tlsca	*ca;
	struct stat		 st;
	BASIC_CONSTRAINTS	*bc;
	ASN1_BIT_STRING		*ku;
	X509			*x, *other;
	SSL_CTX			*c1, *c2, *c3;
	char			*k1, *k2, *crt, *bundle, p[PATH_MAX + 64];
	size_t			 n, cn;
	int			 rootfd, crit = 0, days = 0, secs = 0;

	if (fresh_root(&rootfd) == -1)
		return 1;
	memset(&e, 0, sizeof(e));
	ok(sbx_tlsca_ensure(rootfd, &e) == 0, "ensure makes the CA: %s",
	    e.message);
	snprintf(p, sizeof(p), "%s/config/ca/ca.key", root);
	ok(lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
	    (st.st_mode & 0777) == 0600 && st.st_uid == geteuid(),
	    "ca.key is a regular file, 0600, ours");
	k1 = slurp("config/ca/ca.key", NULL);
	crt = slurp("config/ca/ca.crt", &cn);
	bundle = slurp(sbx_tlsca_bundle_rel(), &n);
	is_str(sbx_tlsca_bundle_rel(), "config/ca/bundle.pem", "bundle path");
	ok(k1 != NULL && strstr(k1, "PRIVATE KEY") != NULL, "a PEM key");
	ok(crt != NULL && bundle != NULL && n >= cn &&
	    memcmp(bundle + n - cn, crt, cn) == 0, "bundle ends with ca.crt");
	if (access(X509_get_default_cert_file(), R_OK) == 0 &&
	    getenv("SSL_CERT_FILE") == NULL)
		ok(n > cn + 1000, "bundle holds the host's bundle too (%zu "
		    "bytes)", n);
	else
		skip("the host has no readable system bundle");

	x = read_crt("config/ca/ca.crt");
	ok(x != NULL && X509_check_ca(x) >= 1, "ca.crt is a CA");
	bc = x != NULL ? X509_get_ext_d2i(x, NID_basic_constraints, &crit,
	    NULL) : NULL;
	ok(bc != NULL && bc->ca && crit == 1 && bc->pathlen != NULL &&
	    ASN1_INTEGER_get(bc->pathlen) == 0,
	    "basicConstraints critical, CA:TRUE, pathlen 0");
	BASIC_CONSTRAINTS_free(bc);
	ku = x != NULL ? X509_get_ext_d2i(x, NID_key_usage, &crit, NULL) :
	    NULL;
	ok(ku != NULL && crit == 1 && (X509_get_key_usage(x) ==
	    (KU_KEY_CERT_SIGN | KU_CRL_SIGN)), "keyUsage keyCertSign, cRLSign");
	ASN1_BIT_STRING_free(ku);
	ok(x != NULL && ASN1_TIME_diff(&days, &secs, NULL,
	    X509_get0_notAfter(x)) && days > 3600 && days < 3700,
	    "valid about ten years (%d days)", days);

	ok(sbx_tlsca_ensure(rootfd, &e) == 0, "ensure again");
	k2 = slurp("config/ca/ca.key", NULL);
	ok(k1 != NULL && k2 != NULL && strcmp(k1, k2) == 0,
	    "the key is kept, never made again");
	free(k2);

	memset(&e, 0, sizeof(e));
	ca = sbx_tlsca_load(rootfd, &e);
	ok(ca != NULL, "load: %s", e.message);
	c1 = ca != NULL ? sbx_tlsca_server_ctx(ca, "api.example.com", &e) :
	    NULL;
	c2 = ca != NULL ? sbx_tlsca_server_ctx(ca, "api.example.com", &e) :
	    NULL;
	c3 = ca != NULL ? sbx_tlsca_server_ctx(ca, "127.0.0.1", &e) : NULL;
	ok(c1 != NULL && c1 == c2, "a leaf per host, cached");
	ok(c1 != NULL && verifies(c1, x, "api.example.com", 0),
	    "the leaf verifies for its name");
	ok(c1 != NULL && !verifies(c1, x, "other.example.com", 0),
	    "and for no other name");
	ok(c3 != NULL && c3 != c1 && verifies(c3, x, "127.0.0.1", 1),
	    "an IP literal gets an IP SAN");
	ok(c1 != NULL && X509_check_ca(SSL_CTX_get0_certificate(c1)) == 0,
	    "a leaf cannot sign (CA:FALSE)");
	ok(c1 != NULL && ASN1_TIME_diff(&days, &secs, NULL,
	    X509_get0_notAfter(SSL_CTX_get0_certificate(c1))) &&
	    days * 86400 + secs <= 86400 && days * 86400 + secs > 3600,
	    "a leaf lives a day at most");
	sbx_tlsca_free(ca);

	/* Hostile and damaged roots. */
	if (chmod(p, 0644) == 0) {
		memset(&e, 0, sizeof(e));
		ca = sbx_tlsca_load(rootfd, &e);
		ok(ca == NULL && e.reason != NULL &&
		    strcmp(e.reason, "ca_key_exposed") == 0 &&
		    strstr(e.message, "config/ca/ca.key") != NULL,
		    "a key readable by others is refused: %s", e.message);
		sbx_tlsca_free(ca);
		chmod(p, 0600);
	} else
		skip("chmod");

	/* Another CA's certificate with our key: a mismatch, named. */
	snprintf(p, sizeof(p), "%s/config/ca/ca.crt", root);
	{
		char	 r2[PATH_MAX];
		int	 fd2;
		FILE	*f;

		snprintf(r2, sizeof(r2), "/tmp/t-tlsca2.XXXXXX");
		fd2 = t_tmpdir(r2);
		sbx_tlsca_ensure(fd2, &e);
		snprintf(r2 + strlen(r2), sizeof(r2) - strlen(r2),
		    "/config/ca/ca.crt");
		f = fopen(r2, "r");
		other = f != NULL ? PEM_read_X509(f, NULL, NULL, NULL) : NULL;
		if (f != NULL)
			fclose(f);
		f = fopen(p, "w");
		if (f != NULL && other != NULL)
			PEM_write_X509(f, other);
		if (f != NULL)
			fclose(f);
		memset(&e, 0, sizeof(e));
		ok(sbx_tlsca_ensure(rootfd, &e) == -1 && e.reason != NULL &&
		    strcmp(e.reason, "ca_mismatch") == 0 &&
		    strstr(e.message, "ca.crt") != NULL,
		    "a mismatched pair is refused, never replaced: %s",
		    e.message);
		k2 = slurp("config/ca/ca.key", NULL);
		ok(k2 != NULL && strcmp(k1, k2) == 0, "the key is untouched");
		free(k2);
		X509_free(other);
		close(fd2);
	}
	/* The certificate gone, the key there: refused. */
	unlink(p);
	memset(&e, 0, sizeof(e));
	ok(sbx_tlsca_ensure(rootfd, &e) == -1 && e.reason != NULL &&
	    strcmp(e.reason, "ca_damaged") == 0, "a key without its "
	    "certificate is refused: %s", e.message);

	/* A planted link in place of the key: never followed. */
	if (fresh_root(&rootfd) != -1) {
		char	 tgt[PATH_MAX + 64];
		FILE	*f;

		snprintf(p, sizeof(p), "%s/config", root);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/config/ca", root);
		mkdir(p, 0755);
		snprintf(tgt, sizeof(tgt), "%s/elsewhere", root);
		f = fopen(tgt, "w");
		if (f != NULL)
			fclose(f);
		snprintf(p, sizeof(p), "%s/config/ca/ca.key", root);
		(void)!symlink(tgt, p);
		snprintf(p, sizeof(p), "%s/config/ca/ca.crt", root);
		(void)!symlink(tgt, p);
		memset(&e, 0, sizeof(e));
		ok(sbx_tlsca_ensure(rootfd, &e) == -1,
		    "a planted link is refused: %s", e.message);
		ok(lstat(tgt, &st) == 0 && st.st_size == 0,
		    "its target is untouched");
		/* And a link for the directory itself. */
		fresh_root(&rootfd);
		snprintf(p, sizeof(p), "%s/config", root);
		mkdir(p, 0755);
		snprintf(p, sizeof(p), "%s/config/ca", root);
		(void)!symlink("/tmp", p);
		memset(&e, 0, sizeof(e));
		ok(sbx_tlsca_ensure(rootfd, &e) == -1,
		    "config/ca as a link is refused: %s", e.message);
	}
	X509_free(x);
	free(k1);
	free(crt);
	free(bundle);
	return done_testing();
}
