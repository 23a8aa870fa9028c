/*
 * credinject.h: what sbx-proxy does with the credentials of a session
 * (issue 34): the session request's rules with their placeholders and
 * values, the placeholder checks of a request head or body, and the
 * worker that relays one injected connection (the client's TLS
 * terminated with the CA's leaf for the rule's host, a verified TLS
 * connection to the real host, HTTP/1.1 requests one by one).
 *
 * A placeholder is looked for case-folded, percent-decoded (three levels
 * in a head, one in a body), across obs-folds, inside Basic credentials,
 * and by its parts (the "sbx-cred-" marker, any 12 hex digits of its
 * random part) in heads; in a body, whole, across reads (a carry-over of
 * its length - 1 bytes).
 */
#ifndef SBX_CREDINJECT_H
#define SBX_CREDINJECT_H

#include <stddef.h>

#include <jansson.h>

#include "credrule.h"
#include "error.h"

/* One rule of a session, with its placeholder and its value. */
struct sbx_cred {
	struct sbx_credrule rule;
	char		    ph[SBX_CRED_PLACEHOLDER_MAX + 1];
	char		   *val; /* sodium_malloc, NUL-terminated */
	size_t		    vlen;
};

/* The session request's "credentials" (may be NULL: none): each a rule
 * in credrule.h's form plus "placeholder" and "value".  The values go
 * to sodium_malloc memory; the request's copies are wiped.  0, or -1
 * with invalid_args. */
int sbx_cred_parse(json_t *arr, struct sbx_cred **out, size_t *n,
    struct sbx_error *);
/* A copy (for a worker that may outlive its session); NULL on ENOMEM. */
struct sbx_cred *sbx_cred_copy(const struct sbx_cred *, size_t n);
/* Values wiped and freed. */
void sbx_cred_free(struct sbx_cred *, size_t n);
/* The index of the first rule for host:port, or -1. */
int sbx_cred_find(const struct sbx_cred *, size_t n, const char *host,
    unsigned port);

/* Is a placeholder of these rules (or a part of one) in buf (a head, a
 * CONNECT target, a SOCKS5 name)?  -1 when not; else the index of the
 * rule it is from, or n when only the marker was seen. */
int
sbx_cred_scan(const struct sbx_cred *, size_t n, const char *buf, size_t len);

/* What sbx_cred_request made of a request head. */
struct sbx_cred_req {
	char	  method[24];
	long long content_length; /* -1: none */
	int	  chunked;
	int	  close; /* the connection ends after it */
	int	  expect; /* Expect: 100-continue (removed) */
	int	  head; /* HEAD: no response body */
	unsigned  used; /* bit i: rule i injected */
	char	 *out; /* the head to send (sodium_malloc) */
	size_t	  outlen, outcap;
};

/*
 * A request head (through its blank line) in a connection to host:port:
 * checked and, where a rule of host:port has its placeholder in its
 * place, injected.  0: r->out is the head to send (sbx_cred_req_release
 * wipes it).  -1: refused, *status and *reason set, and *which the rule
 * whose placeholder was seen (n: the marker alone), or -1 when the
 * refusal is not about a placeholder.
 */
int  sbx_cred_request(const struct sbx_cred *, size_t n, const char *host,
     unsigned port, const char *head, size_t len, unsigned long long max_body,
     struct sbx_cred_req *r, int *status, const char **reason, int *which);
void sbx_cred_req_release(struct sbx_cred_req *);

/* A streamed body scanned for whole placeholders (case-folded, one level
 * of percent-decoding), across reads. */
struct sbx_cred_scanner;
struct sbx_cred_scanner *
sbx_cred_scanner_new(const struct sbx_cred *, size_t n);
/* -1: nothing yet; else the rule whose placeholder was completed. */
int  sbx_cred_scanner_feed(struct sbx_cred_scanner *, const void *, size_t);
void sbx_cred_scanner_free(struct sbx_cred_scanner *);

/* A streamed response masked: each value (ASCII case ignored, of at
 * least 6 bytes) replaced by as many '*', so that Content-Length and
 * chunk sizes stay right; holds back at most (longest value - 1) bytes. */
struct sbx_cred_mask;
typedef int (*sbx_cred_sink)(void *, const void *, size_t);
struct sbx_cred_mask	 *
sbx_cred_mask_new(const struct sbx_cred *, size_t n, sbx_cred_sink, void *);
int sbx_cred_mask_write(struct sbx_cred_mask *, const void *, size_t);
int sbx_cred_mask_flush(struct sbx_cred_mask *);
unsigned long long sbx_cred_mask_hits(const struct sbx_cred_mask *);
void		   sbx_cred_mask_free(struct sbx_cred_mask *);

/* ---- the worker --------------------------------------------------------- */

enum sbx_cred_ev {
	SBX_CRED_EV_REFUSED, /* a request refused (violation when 403) */
	SBX_CRED_EV_USED, /* a secret went to host:port (once each) */
	SBX_CRED_EV_ERROR, /* the connection failed (TLS, upstream) */
	SBX_CRED_EV_DONE /* the worker is gone: the loop closes the
				 * fds */
};

/* What a worker tells the event loop, one pointer written to the pipe
 * per event (the loop frees it). */
struct sbx_cred_event {
	void		  *tag;
	enum sbx_cred_ev   type;
	int		   status;
	char		   reason[64];
	char		   secret[SBX_CRED_PLACEHOLDER_MAX + 1];
	char		   method[24];
	char		   detail[160];
	unsigned long long bytes_in, bytes_out;
	unsigned	   requests;
};

/* One injected connection, handed over: the worker uses the fds (the
 * loop closes them after SBX_CRED_EV_DONE; it may shutdown(2) them to
 * stop the worker) and owns the rule copies and the prefix. */
struct sbx_cred_conn {
	void		  *tag; /* the loop's, echoed */
	int		   cfd, ufd;
	int		   evfd; /* the pipe's write end */
	void		  *server_ctx; /* SSL_CTX, a reference */
	void		  *client_ctx; /* SSL_CTX, a reference */
	char		   host[256];
	unsigned	   port;
	struct sbx_cred	  *creds;
	size_t		   ncreds;
	char		  *pre; /* bytes the client sent already */
	size_t		   npre;
	long long	   idle_ms, max_ms;
	unsigned long long max_request, max_response;
};

/* The SSL_CTX of connections to real hosts: the host's CA store
 * (OpenSSL's default paths: SSL_CERT_FILE, SSL_CERT_DIR), peer
 * verification, TLS 1.2 at least, ALPN http/1.1.  NULL with e. */
void *sbx_cred_client_ctx(struct sbx_error *);
/* Start the worker (a detached thread).  0, or -1 with errno: the caller
 * still owns everything. */
int sbx_cred_conn_start(struct sbx_cred_conn *);

#endif
