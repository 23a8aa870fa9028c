/*
 * fuzz-policy: libFuzzer target for the whole decision of sbx-proxy on a
 * request head, without I/O: sbx_http_parse, then sbx_np_host on the
 * authority it found, then sbx_np_decide against a fixed policy (make
 * fuzz).  Aborts when an invariant breaks:
 *   - a host accepted by sbx_np_host is 1..253 characters of [a-z0-9.-],
 *     without a leading, trailing or doubled dot, and normalising it again
 *     gives it back unchanged;
 *   - a host that is an IP literal is never allowed;
 *   - an allowed host is example.com or a strict subdomain of
 *     wild.sbx.test, never no.wild.sbx.test, and its port is 80 or 443.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpreq.h"
#include "netpolicy.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct sbx_http_req	 req;
static struct sbx_netpolicy	 pol;
static int			 ready;

static int
suffix(const char *s, const char *suf)
{
	size_t	 n = strlen(s), m = strlen(suf);

	return n > m && strcmp(s + n - m, suf) == 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char			 host[SBX_NP_HOST_MAX + 1], again[SBX_NP_HOST_MAX + 1];
	const char		*reason, *why;
	struct sbx_error	 e;
	size_t			 i, n;
	int			 status;

	if (!ready) {
		sbx_np_init(&pol);
		if (sbx_np_allow(&pol, "example.com", &e) == -1 ||
		    sbx_np_allow(&pol, "*.wild.sbx.test", &e) == -1)
			abort();
		pol.denied = calloc(1, sizeof(char *));
		pol.denied[0] = strdup("no.wild.sbx.test");
		pol.ndenied = 1;
		ready = 1;
	}
	if (sbx_http_parse((const char *)data, size, &req, &status,
	    &reason) != 1)
		return 0;
	why = sbx_np_host(req.host, req.hostlen, host);
	if (why != NULL)
		return 0;
	n = strlen(host);
	if (n == 0 || n > SBX_NP_HOST_MAX || host[0] == '.' ||
	    host[n - 1] == '.' || strstr(host, "..") != NULL)
		abort();
	for (i = 0; i < n; i++)
		if (!((host[i] >= 'a' && host[i] <= 'z') ||
		    (host[i] >= '0' && host[i] <= '9') || host[i] == '-' ||
		    host[i] == '.'))
			abort();
	if (sbx_np_host(host, n, again) != NULL || strcmp(host, again) != 0)
		abort();
	if (sbx_np_decide(&pol, host, req.port) == NULL) {
		if (req.port != 80 && req.port != 443)
			abort();
		if (strcmp(host, "example.com") != 0 &&
		    !suffix(host, ".wild.sbx.test"))
			abort();
		if (strcmp(host, "no.wild.sbx.test") == 0)
			abort();
	}
	return 0;
}
