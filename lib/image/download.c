/*
 * download.c: an image source over https, with libcurl.
 *
 * curl follows no redirect by itself: each Location is judged by the same
 * policy as the URL the caller gave (sbx_download_check), with two more
 * rules: an https download stays https, and a loopback http one stays on
 * loopback http.  Every hop is also fenced by CURLOPT_PROTOCOLS_STR, so a
 * mistake in the check above cannot reach another scheme.  The body is
 * written to an unnamed file beneath the state root's cache/ and hashed
 * as it arrives; a body over the cap aborts the transfer.
 *
 * libcurl is loaded with dlopen(3) the first time a URL is met, not
 * linked: it and the two dozen libraries it needs (TLS, HTTP/2, IDN,
 * Kerberos, LDAP...) cost every sbx provision about 10 ms and 400 page
 * faults at start-up (measured), and most never download anything.
 */
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "download.h"
#include "fsutil.h"
#include "time.h"

/* PROTOCOLS_STR and REDIR_PROTOCOLS_STR, the fence on every hop. */
#define CURL_NEEDED	0x075500	/* 7.85.0 */

static struct {
	int			 loaded;
	void			*h;
	CURLcode		(*global_init)(long);
	curl_version_info_data	*(*version_info)(CURLversion);
	CURL			*(*easy_init)(void);
	CURLcode		(*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode		(*easy_perform)(CURL *);
	CURLcode		(*easy_getinfo)(CURL *, CURLINFO, ...);
	void			(*easy_cleanup)(CURL *);
	const char		*(*easy_strerror)(CURLcode);
	CURLU			*(*url)(void);
	CURLUcode		(*url_set)(CURLU *, CURLUPart, const char *,
				    unsigned int);
	CURLUcode		(*url_get)(CURLU *, CURLUPart, char **,
				    unsigned int);
	void			(*url_cleanup)(CURLU *);
	const char		*(*url_strerror)(CURLUcode);
	void			(*free)(void *);
} C;

static int
curl_load(struct sbx_error *e)
{
	static const char *const sonames[] = { "libcurl.so.4",
	    "libcurl-gnutls.so.4" };
	static const struct {
		const char	*name;
		size_t		 off;
	} syms[] = {
#define SYM(f, m) { f, offsetof(__typeof__(C), m) }
		SYM("curl_global_init", global_init),
		SYM("curl_version_info", version_info),
		SYM("curl_easy_init", easy_init),
		SYM("curl_easy_setopt", easy_setopt),
		SYM("curl_easy_perform", easy_perform),
		SYM("curl_easy_getinfo", easy_getinfo),
		SYM("curl_easy_cleanup", easy_cleanup),
		SYM("curl_easy_strerror", easy_strerror),
		SYM("curl_url", url),
		SYM("curl_url_set", url_set),
		SYM("curl_url_get", url_get),
		SYM("curl_url_cleanup", url_cleanup),
		SYM("curl_url_strerror", url_strerror),
		SYM("curl_free", free),
#undef SYM
	};
	curl_version_info_data	*v;
	void			*f;
	size_t			 i;

	if (C.loaded)
		return 0;
	/* By soname, through the ordinary search path: the library the
	 * system's libcurl package installed, as a link would find it. */
	for (i = 0; i < sizeof(sonames) / sizeof(*sonames) && C.h == NULL;
	    i++)
		C.h = dlopen(sonames[i], RTLD_NOW | RTLD_LOCAL);
	if (C.h == NULL)
		goto missing;
	for (i = 0; i < sizeof(syms) / sizeof(*syms); i++) {
		if ((f = dlsym(C.h, syms[i].name)) == NULL)
			goto missing;
		memcpy((char *)&C + syms[i].off, &f, sizeof(f));
	}
	/* An older libcurl would ignore the protocol fence (an unknown
	 * option): refuse to download with it at all. */
	if ((v = C.version_info(CURLVERSION_NOW)) == NULL ||
	    v->version_num < CURL_NEEDED) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "source", "curl_too_old",
		    "libcurl %s is too old to download images: 7.85 or later "
		    "is needed", v && v->version ? v->version : "?");
		goto fail;
	}
	if (C.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, "source", "curl_missing",
		    "libcurl cannot start");
		goto fail;
	}
	C.loaded = 1;
	return 0;
missing:
	sbx_error_set(e, SBX_K_UNAVAILABLE, "source", "curl_missing",
	    "libcurl (libcurl.so.4) is not installed: URL sources need it");
	sbx_error_hint(e, "install libcurl4 (Debian: apt-get install "
	    "libcurl4), or download the file and add it locally");
fail:
	if (C.h != NULL)
		dlclose(C.h);
	memset(&C, 0, sizeof(C));
	return -1;
}

int
sbx_download_is_url(const char *s)
{
	const char	*p = s;

	if (s == NULL || !((*p >= 'a' && *p <= 'z') || (*p >= 'A' &&
	    *p <= 'Z')))
		return 0;
	for (p++; (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	    (*p >= '0' && *p <= '9') || *p == '+' || *p == '-' || *p == '.';
	    p++)
		;
	return strncmp(p, "://", 3) == 0;
}

/* A host as curl parsed it: an IPv4 literal in 127.0.0.0/8, or [::1]. */
static int
loopback_literal(const char *host)
{
	struct in_addr	 a4;
	struct in6_addr	 a6;
	char		 buf[64];
	size_t		 n;

	if (host[0] == '[') {
		n = strlen(host);
		if (n < 3 || n - 2 >= sizeof(buf) || host[n - 1] != ']')
			return 0;
		memcpy(buf, host + 1, n - 2);
		buf[n - 2] = '\0';
		/* A zone id (fe80::1%eth0) is no loopback address anyway;
		 * inet_pton refuses it. */
		return inet_pton(AF_INET6, buf, &a6) == 1 &&
		    IN6_IS_ADDR_LOOPBACK(&a6);
	}
	/* inet_pton takes only the dotted quad; curl normalizes the other
	 * spellings of an IPv4 address (127.1, 0x7f.1) to it, and a name
	 * fails here: it would need a resolver, which is not a literal. */
	return inet_pton(AF_INET, host, &a4) == 1 &&
	    (ntohl(a4.s_addr) >> 24) == 127;
}

static int __attribute__((format(printf, 3, 4)))
bad_url(struct sbx_error *e, const char *reason, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[sizeof(e->message)];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	sbx_error_set(e, SBX_K_INVALID_ARGS, "source", reason, "%s", msg);
	sbx_error_hint(e, "give an https:// URL (plain http only to "
	    "127.0.0.1 or [::1]), or a local file");
	return -1;
}

/* Printable ASCII only, bounded: what a message may quote of a URL. */
static void
printable(const char *s, char *out, size_t sz)
{
	size_t	 o = 0;

	for (; s && *s && o + 1 < sz; s++)
		out[o++] = (*s > 0x20 && *s < 0x7f) ? *s : '?';
	out[o] = '\0';
}

/* Parse and judge; on success *up is the parsed URL (caller frees) and
 * host a printable copy of its host. */
static int
check(const char *url, int *plain, CURLU **up, char *host, size_t hostsz,
    struct sbx_error *e)
{
	CURLU		*u;
	CURLUcode	 uc;
	char		*scheme = NULL, *h = NULL, *user = NULL, *pw = NULL;
	char		 p[32];
	int		 rc = -1;

	*plain = 0;
	if (up != NULL)
		*up = NULL;
	if (!sbx_download_is_url(url))
		return bad_url(e, "invalid_url", "the source is not a URL");
	if (strlen(url) > 8192)
		return bad_url(e, "invalid_url", "the URL is longer than 8192 "
		    "characters");
	if (curl_load(e) == -1)
		return -1;
	if ((u = C.url()) == NULL)
		return sbx_error_sys(e, "nomem", "URL");
	uc = C.url_set(u, CURLUPART_URL, url, 0);
	if (uc == CURLUE_UNSUPPORTED_SCHEME) {
		printable(url, p, sizeof(p));
		p[strcspn(p, ":")] = '\0';
		bad_url(e, "unsupported_scheme", "the URL scheme `%s` is not "
		    "supported: https only", p);
		goto out;
	}
	if (uc != CURLUE_OK ||
	    C.url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK) {
		bad_url(e, "invalid_url", "the URL is malformed: %s",
		    C.url_strerror(uc));
		goto out;
	}
	if (strcmp(scheme, "https") != 0 && strcmp(scheme, "http") != 0) {
		printable(scheme, p, sizeof(p));
		bad_url(e, "unsupported_scheme", "the URL scheme `%s` is not "
		    "supported: https only", p);
		goto out;
	}
	/* Credentials would travel in argv and process listings, and land
	 * in shell histories; the download has no use for them. */
	if (C.url_get(u, CURLUPART_USER, &user, 0) == CURLUE_OK ||
	    C.url_get(u, CURLUPART_PASSWORD, &pw, 0) == CURLUE_OK) {
		bad_url(e, "credentials_in_url", "the URL carries credentials "
		    "(user@ or user:password@)");
		goto out;
	}
	if (C.url_get(u, CURLUPART_HOST, &h, 0) != CURLUE_OK ||
	    *h == '\0') {
		bad_url(e, "invalid_url", "the URL has no host");
		goto out;
	}
	printable(h, host, hostsz);
	if (strcmp(scheme, "http") == 0) {
		/* Plain http has no integrity of its own; the digest would
		 * catch tampering, but not the disclosure of what is being
		 * fetched from where.  It exists for tests, on loopback,
		 * decided here before anything is resolved or dialled. */
		if (!loopback_literal(h)) {
			bad_url(e, "insecure_http", "plain http is only "
			    "allowed to a loopback address (127.0.0.0/8, "
			    "[::1]), not to %s", host);
			goto out;
		}
		*plain = 1;
	}
	rc = 0;
out:
	C.free(scheme);
	C.free(h);
	C.free(user);
	C.free(pw);
	if (rc == 0 && up != NULL)
		*up = u;
	else
		C.url_cleanup(u);
	return rc;
}

int
sbx_download_check(const char *url, int *plain, struct sbx_error *e)
{
	char	 host[256];

	return check(url, plain, NULL, host, sizeof(host), e);
}

/* One transfer's state, for the callbacks. */
struct xfer {
	CURL			*h;
	int			 fd;
	crypto_hash_sha256_state st;
	unsigned long long	 n, cap;
	int			 status_ok;	/* -1 unknown, 0 no, 1 2xx */
	int			 too_large;
	int			 write_failed;
	struct sbx_download	*d;
};

static size_t
on_data(char *p, size_t size, size_t nmemb, void *arg)
{
	struct xfer	*x = arg;
	size_t		 n = size * nmemb;
	long		 code = 0;

	if (x->status_ok == -1) {
		C.easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &code);
		x->status_ok = code >= 200 && code < 300;
	}
	/* The body of an error page or a redirect is not the image. */
	if (!x->status_ok)
		return n;
	if (x->n + n > x->cap) {
		x->too_large = 1;
		return 0;	/* aborts the transfer */
	}
	if (sbx_fs_write_all(x->fd, p, n) == -1) {
		x->write_failed = errno ? errno : EIO;
		return 0;
	}
	crypto_hash_sha256_update(&x->st, (const unsigned char *)p, n);
	x->n += n;
	return n;
}

static int
on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ut,
    curl_off_t un)
{
	struct xfer	*x = arg;

	(void)ut;
	(void)un;
	if (x->d->progress != NULL && x->status_ok == 1)
		x->d->progress(x->d->progress_arg, (unsigned long long)dlnow,
		    dltotal > 0 ? (unsigned long long)dltotal : 0);
	return 0;
}

/* An unnamed file beneath cachefd: it disappears with its last
 * descriptor, whether the download succeeds, fails or is killed. */
static int
tmpfile_at(int cachefd, struct sbx_error *e)
{
	unsigned char	 rnd[8];
	char		 name[40];
	int		 fd;

	fd = openat(cachefd, ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd != -1)
		return fd;
	/* No O_TMPFILE on this file system: a fresh name, created
	 * exclusively without following anything, unlinked at once. */
	randombytes_buf(rnd, sizeof(rnd));
	memcpy(name, "dl-", 3);
	sodium_bin2hex(name + 3, sizeof(name) - 3, rnd, sizeof(rnd));
	if ((fd = openat(cachefd, name, O_RDWR | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return sbx_error_sys(e, "create_failed", "cannot create a "
		    "temporary file in cache/");
	(void)unlinkat(cachefd, name, 0);
	return fd;
}


/* A curl failure in the envelope's terms. */
static int
curl_fail(struct sbx_error *e, CURLcode res, const char *host,
    const struct xfer *x)
{
	if (x->too_large || res == CURLE_FILESIZE_EXCEEDED)
		return sbx_error_set(e, SBX_K_REJECTED, "source", "too_large",
		    "the download is larger than images.max_bytes (%llu)",
		    x->cap);
	if (x->write_failed) {
		errno = x->write_failed;
		return sbx_error_sys(e, "write_failed", "cannot write the "
		    "download to cache/");
	}
	switch (res) {
	case CURLE_OPERATION_TIMEDOUT:
		return sbx_error_set(e, SBX_K_TIMEOUT, "source", "timeout",
		    "the download from %s took too long (or stalled)", host);
	case CURLE_PEER_FAILED_VERIFICATION:
#if LIBCURL_VERSION_NUM < 0x073e00
	case CURLE_SSL_CACERT:
#endif
	case CURLE_SSL_CACERT_BADFILE:
		sbx_error_set(e, SBX_K_REJECTED, "source",
		    "tls_verification_failed", "the TLS certificate of %s "
		    "could not be verified: %s", host, C.easy_strerror(res));
		sbx_error_hint(e, "sbx never downloads without verifying the "
		    "server; fetch the file another way and add it locally");
		return -1;
	case CURLE_UNSUPPORTED_PROTOCOL:
		return sbx_error_set(e, SBX_K_REJECTED, "source",
		    "redirect_refused", "the download from %s was refused: "
		    "not an allowed protocol", host);
	default:
		return sbx_error_set(e, SBX_K_UNAVAILABLE, "source",
		    "download_failed", "the download from %s failed: %s", host,
		    C.easy_strerror(res));
	}
}

int
sbx_download_fetch(int cachefd, struct sbx_download *d, struct sbx_error *e)
{
	struct xfer	 x;
	CURLU		*u = NULL;
	CURLcode	 res;
	unsigned char	 h[crypto_hash_sha256_BYTES];
	char		 host[256], nhost[256], *next = NULL;
	const char	*loc;
	long long	 deadline, left;
	int		 plain, first_plain, nplain, fd = -1, hop, rc;

	memset(&x, 0, sizeof(x));
	d->bytes = 0;
	d->status = 0;
	d->redirects = 0;
	d->sha256[0] = '\0';
	if (check(d->url, &first_plain, &u, host, sizeof(host), e) == -1)
		return -1;
	plain = first_plain;
	if ((fd = tmpfile_at(cachefd, e)) == -1) {
		C.url_cleanup(u);
		return -1;
	}
	x.fd = fd;
	x.cap = d->max_bytes;
	x.d = d;
	deadline = sbx_now_ms() + (d->timeout > 0 ? d->timeout : 3600) * 1000LL;
	for (hop = 0;; hop++) {
		if ((x.h = C.easy_init()) == NULL) {
			sbx_error_sys(e, "nomem", "libcurl");
			goto fail;
		}
		crypto_hash_sha256_init(&x.st);
		x.n = 0;
		x.status_ok = -1;
		if ((left = deadline - sbx_now_ms()) <= 0) {
			sbx_error_set(e, SBX_K_TIMEOUT, "source", "timeout",
			    "the download from %s took too long", host);
			goto fail;
		}
		/* The very URL that was checked (CURLOPT_CURLU), and only its
		 * protocol, for this hop and any redirect curl might think of
		 * following (it follows none: FOLLOWLOCATION is off).  Every
		 * option must take: one ignored would be a fence missing. */
		rc = C.easy_setopt(x.h, CURLOPT_CURLU, u);
		rc |= C.easy_setopt(x.h, CURLOPT_PROTOCOLS_STR, plain ? "http" :
		    "https");
		rc |= C.easy_setopt(x.h, CURLOPT_REDIR_PROTOCOLS_STR, plain ?
		    "http" : "https");
		rc |= C.easy_setopt(x.h, CURLOPT_FOLLOWLOCATION, 0L);
		rc |= C.easy_setopt(x.h, CURLOPT_NOSIGNAL, 1L);
		rc |= C.easy_setopt(x.h, CURLOPT_CONNECTTIMEOUT,
		    SBX_DOWNLOAD_CONNECT_TIMEOUT);
		rc |= C.easy_setopt(x.h, CURLOPT_TIMEOUT_MS, (long)left);
		rc |= C.easy_setopt(x.h, CURLOPT_LOW_SPEED_LIMIT,
		    SBX_DOWNLOAD_LOW_SPEED);
		rc |= C.easy_setopt(x.h, CURLOPT_LOW_SPEED_TIME,
		    SBX_DOWNLOAD_LOW_SPEED_TIME);
		/* An announced size over the cap is refused before the
		 * body; one that is not announced is counted (on_data). */
		rc |= C.easy_setopt(x.h, CURLOPT_MAXFILESIZE_LARGE,
		    (curl_off_t)d->max_bytes);
		rc |= C.easy_setopt(x.h, CURLOPT_SSL_VERIFYPEER, 1L);
		rc |= C.easy_setopt(x.h, CURLOPT_SSL_VERIFYHOST, 2L);
		rc |= C.easy_setopt(x.h, CURLOPT_SSLVERSION,
		    (long)CURL_SSLVERSION_TLSv1_2);
		rc |= C.easy_setopt(x.h, CURLOPT_USERAGENT, "sbx/" SBX_VERSION);
		/* Loopback is never reached through a proxy from the
		 * environment; https honours http(s)_proxy as curl does. */
		if (plain)
			rc |= C.easy_setopt(x.h, CURLOPT_NOPROXY, "*");
		rc |= C.easy_setopt(x.h, CURLOPT_WRITEFUNCTION, on_data);
		rc |= C.easy_setopt(x.h, CURLOPT_WRITEDATA, &x);
		rc |= C.easy_setopt(x.h, CURLOPT_XFERINFOFUNCTION, on_progress);
		rc |= C.easy_setopt(x.h, CURLOPT_XFERINFODATA, &x);
		rc |= C.easy_setopt(x.h, CURLOPT_NOPROGRESS, 0L);
		if (rc != CURLE_OK) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, "source",
			    "curl_missing", "this libcurl lacks an option sbx "
			    "needs to download safely");
			goto fail;
		}
		res = C.easy_perform(x.h);
		C.easy_getinfo(x.h, CURLINFO_RESPONSE_CODE, &d->status);
		if (res != CURLE_OK) {
			curl_fail(e, res, host, &x);
			goto fail;
		}
		if (d->status >= 200 && d->status < 300)
			break;
		if (d->status < 300 || d->status >= 400) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, "source",
			    "http_error", "the server %s answered HTTP %ld",
			    host, d->status);
			goto fail;
		}
		/* A redirect: judged as the first URL was, and more. */
		if (C.easy_getinfo(x.h, CURLINFO_REDIRECT_URL, &loc) !=
		    CURLE_OK || loc == NULL) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, "source",
			    "http_error", "the server %s answered HTTP %ld "
			    "without a location", host, d->status);
			goto fail;
		}
		if (hop + 1 > SBX_DOWNLOAD_MAX_REDIRS) {
			sbx_error_set(e, SBX_K_REJECTED, "source",
			    "too_many_redirects", "more than %d redirects",
			    SBX_DOWNLOAD_MAX_REDIRS);
			goto fail;
		}
		free(next);
		if ((next = strdup(loc)) == NULL) {
			sbx_error_sys(e, "nomem", "redirect");
			goto fail;
		}
		C.easy_cleanup(x.h);
		x.h = NULL;
		C.url_cleanup(u);
		u = NULL;
		if (check(next, &nplain, &u, nhost, sizeof(nhost), e) == -1 ||
		    nplain != first_plain) {
			/* https never downgrades to http, and loopback http
			 * never leaves loopback for https elsewhere. */
			char p[96];
			printable(next, p, sizeof(p));
			sbx_error_set(e, SBX_K_REJECTED, "source",
			    "redirect_refused", "the server %s redirected to "
			    "`%s`, which sbx does not follow (%s only)", host,
			    p, first_plain ? "loopback http" : "https");
			goto fail;
		}
		memcpy(host, nhost, sizeof(host));
		plain = nplain;
		d->redirects++;
	}
	C.easy_cleanup(x.h);
	x.h = NULL;
	crypto_hash_sha256_final(&x.st, h);
	sodium_bin2hex(d->sha256, sizeof(d->sha256), h, sizeof(h));
	d->bytes = x.n;
	if (d->expect != NULL && strcmp(d->sha256, d->expect) != 0) {
		sbx_error_set(e, SBX_K_REJECTED, "sha256",
		    "integrity_check_failed", "sha256 of the download is %s, "
		    "not the expected %s", d->sha256, d->expect);
		sbx_error_hint(e, "check the URL and the digest you were "
		    "given; nothing was unpacked and nothing was kept");
		goto fail;
	}
	if (lseek(fd, 0, SEEK_SET) == -1) {
		sbx_error_sys(e, "read_failed", "cannot rewind the download");
		goto fail;
	}
	C.url_cleanup(u);
	free(next);
	return fd;
fail:
	if (x.h != NULL)
		C.easy_cleanup(x.h);
	C.url_cleanup(u);
	free(next);
	close(fd);
	return -1;
}
