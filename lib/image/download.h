/* download.h: image sources fetched over https with libcurl.
 *
 * Only sbx-provision links this (libcurl stays out of sbx-exec and the
 * front-end).  The policy, checked before any connection and again at
 * every redirect: https, or plain http to a loopback address literal
 * (127.0.0.0/8, ::1: for tests), no credentials in the URL, a redirect
 * never to another scheme, host class or downgrade; bounded size and
 * time; the body hashed as it arrives. */
#ifndef SBX_DOWNLOAD_H
#define SBX_DOWNLOAD_H

#include "error.h"
#include "imageref.h"

#define SBX_DOWNLOAD_CONNECT_TIMEOUT	30L	/* seconds */
/* Slower than this many bytes a second for LOW_SPEED_TIME seconds
 * gives up (a stalled server), whatever the total timeout. */
#define SBX_DOWNLOAD_LOW_SPEED		1024L
#define SBX_DOWNLOAD_LOW_SPEED_TIME	60L
#define SBX_DOWNLOAD_MAX_REDIRS		5

struct sbx_download {
	/* in */
	const char		*url;
	unsigned long long	 max_bytes;	/* more: rejected, too_large */
	long			 timeout;	/* the whole download, seconds */
	const char		*expect;	/* sha256 (hex) or NULL */
	/* called as data arrives (total 0: unknown); lib never prints */
	void			(*progress)(void *, unsigned long long now,
				    unsigned long long total);
	void			*progress_arg;
	/* out */
	char			 sha256[SBX_DIGEST_HEX + 1];
	unsigned long long	 bytes;
	long			 status;	/* the last HTTP status */
	unsigned		 redirects;
};

/* Does the source look like a URL (`scheme://`)?  Anything else is a
 * local path. */
int	sbx_download_is_url(const char *);
/*
 * Check url against the policy, without touching the network: kind
 * invalid_args, field source, reason invalid_url, unsupported_scheme
 * (not https or http), insecure_http (http to anything but a loopback
 * address literal; a name, even localhost, is never resolved) or
 * credentials_in_url.  *plain is set for a loopback http URL.
 */
int	sbx_download_check(const char *url, int *plain, struct sbx_error *);
/*
 * Download d->url into an unnamed file (O_TMPFILE, else a name unlinked
 * at once) beneath cachefd: nothing is left behind however it ends.
 * Returns the file's descriptor at offset 0, with d->sha256 the digest
 * of its bytes.  Failures: the check above; rejected too_large (more than
 * max_bytes, announced or sent), integrity_check_failed (not d->expect),
 * redirect_refused, too_many_redirects, tls_verification_failed;
 * unavailable http_error (the message names the status) or
 * download_failed (connection, DNS, TLS handshake); timeout.
 */
int	sbx_download_fetch(int cachefd, struct sbx_download *,
	    struct sbx_error *);

#endif
