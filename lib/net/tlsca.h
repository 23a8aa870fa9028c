/*
 * tlsca.h: the state root's own certificate authority (issue 34), with
 * which sbx-proxy terminates TLS for the hosts a credential rule names,
 * and only those.  Made at first use under the state root:
 *
 *   config/ca/ca.key   the private key, 0600, owned by the state root's
 *                      owner, never mounted into a sandbox
 *   config/ca/ca.crt   the certificate (CA:TRUE, pathlen 0, keyCertSign)
 *   config/ca/bundle.pem  the host's system bundle followed by ca.crt:
 *                      what SSL_CERT_FILE, NODE_EXTRA_CA_CERTS and
 *                      REQUESTS_CA_BUNDLE name inside a sandbox whose run
 *                      has a credential rule
 *
 * Creation is locked and atomic (temp file, fsync, rename); a damaged or
 * mismatched key/certificate pair is an error naming the file, never
 * silently replaced.
 */
#ifndef SBX_TLSCA_H
#define SBX_TLSCA_H

#include "error.h"

/* Make the CA if there is none; (re)write bundle.pem when the host's
 * bundle or ca.crt is newer.  0, or -1 with e. */
int sbx_tlsca_ensure(int rootfd, struct sbx_error *);
/* The bundle's path relative to the state root: a macro, so that
 * sbx-exec, which only opens it, links none of OpenSSL. */
#define SBX_TLSCA_BUNDLE "config/ca/bundle.pem"
const char *sbx_tlsca_bundle_rel(void);

struct sbx_tlsca; /* loaded key and certificate, and a leaf cache */
/* Load the CA (the proxy, once).  NULL with e. */
struct sbx_tlsca *sbx_tlsca_load(int rootfd, struct sbx_error *);
/* An SSL_CTX that presents a leaf certificate for HOST (a DNS name or an
 * IP literal), signed by the CA, cached per host; borrowed (freed with
 * the CA).  Only ever asked for a host a credential rule names.  NULL
 * with e. */
void *
sbx_tlsca_server_ctx(struct sbx_tlsca *, const char *host, struct sbx_error *);
void sbx_tlsca_free(struct sbx_tlsca *);

#endif
