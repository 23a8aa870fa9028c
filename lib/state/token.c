/*
 * token.c: an agent's token (run/tokens/<agent>), its identity towards the
 * proxy and the bridge: 32 bytes of libsodium's CSPRNG, base64url without
 * padding.  Its bytes are wiped after use and never leave this module but
 * to the file and to a comparison.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "token.h"

int
sbx_token_new(char out[SBX_TOKEN_LEN + 1])
{
	unsigned char	 bin[32];

	if (sodium_init() < 0)
		return -1;
	randombytes_buf(bin, sizeof(bin));
	sodium_bin2base64(out, SBX_TOKEN_LEN + 1, bin, sizeof(bin),
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	sodium_memzero(bin, sizeof(bin));
	return strlen(out) == SBX_TOKEN_LEN ? 0 : -1;
}

int
sbx_token_valid(const char *s, size_t n)
{
	size_t	 i;

	if (n != SBX_TOKEN_LEN)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') ||
		    (s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '-'))
			return 0;
	return 1;
}

int
sbx_token_fd_valid(int fd)
{
	char	 buf[SBX_TOKEN_LEN + 8];
	size_t	 len = 0;
	ssize_t	 r;
	int	 valid;

	while (len < sizeof(buf)) {
		r = read(fd, buf + len, sizeof(buf) - len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	valid = sbx_token_valid(buf, len);
	sodium_memzero(buf, sizeof(buf));
	return valid;
}
