/*
 * fuzz-tls-sni: libFuzzer target for sbx_tls_sni (make fuzz).
 *
 * Invariants, aborting when one breaks: the answer is -1, 0 or 1; 1 gives
 * a NUL-terminated name of 1..255 printable ASCII characters; -1 gives
 * not_tls, malformed_tls or no_sni and an empty name; 0 only while less
 * than one record has arrived; and every prefix answers 0 until the first
 * non-zero answer, which is the whole input's (the record may arrive
 * split across segments), none of them reading past its prefix.
 */
#include <sanitizer/asan_interface.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "httpreq.h"

int LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
check(int rc, const char *sni, size_t len, const char *reason)
{
	size_t i, n;

	switch (rc) {
	case 1:
		n = strlen(sni);
		if (n == 0 || n > 255 || reason != NULL)
			abort();
		for (i = 0; i < n; i++)
			if (sni[i] <= 0x20 || sni[i] >= 0x7f)
				abort();
		break;
	case 0:
		if (len >= SBX_TLS_RECORD_MAX || reason != NULL ||
		    sni[0] != '\0')
			abort();
		break;
	case -1:
		if (reason == NULL || sni[0] != '\0' ||
		    (strcmp(reason, "not_tls") != 0 &&
			strcmp(reason, "malformed_tls") != 0 &&
			strcmp(reason, "no_sni") != 0))
			abort();
		break;
	default:
		abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static const size_t steps[] = {1, 13, 256};
	char		    sni[256], sni2[256];
	const char	   *reason, *r2;
	unsigned char	   *buf;
	char		   *small;
	size_t		    k, i;
	int		    rc, rc2;

	if ((buf = malloc(len ? len : 1)) == NULL ||
	    (small = malloc(16)) == NULL)
		abort();
	memcpy(buf, data, len);
	rc = sbx_tls_sni(buf, len, sni, sizeof(sni), &reason);
	check(rc, sni, len, reason);
	/* A small name buffer must never be overrun. */
	if (sbx_tls_sni(buf, len, small, 16, &r2) == 1 && strlen(small) >= 16)
		abort();
	free(small);
	for (k = 0; k < sizeof(steps) / sizeof(*steps); k++) {
		if (len / steps[k] > 1024)
			continue;
		rc2 = 0;
		for (i = 0; i < len && rc2 == 0;) {
			i = len - i < steps[k] ? len : i + steps[k];
			/* Poisoned past the prefix: ASan sees a read beyond. */
			ASAN_POISON_MEMORY_REGION(buf + i, len - i);
			rc2 = sbx_tls_sni(buf, i, sni2, sizeof(sni2), &r2);
			ASAN_UNPOISON_MEMORY_REGION(buf + i, len - i);
			check(rc2, sni2, i, r2);
		}
		if (len == 0)
			continue;
		if (rc2 != rc || (rc == -1 && strcmp(r2, reason) != 0) ||
		    (rc == 1 && strcmp(sni2, sni) != 0))
			abort();
	}
	free(buf);
	return 0;
}
