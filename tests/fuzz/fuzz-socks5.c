/* fuzz-socks5: the SOCKS5 framing (lib/net/socks5.c) on any bytes: the
 * three messages in a row, as the proxy reads them; every answer is one
 * of 1, 0 and -1, never a read past the end (ASan). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "socks5.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		 u[256], p[256], h[256];
	const char	*why;
	size_t		 used = 0, off = 0, hl, i;
	unsigned	 port;
	int		 rep, r;

	for (i = 0; i <= size; i++)
		(void)sbx_socks5_greeting(data, i, &used, &why);
	if (sbx_socks5_greeting(data, size, &used, &why) != 1)
		return 0;
	off = used;
	r = sbx_socks5_auth(data + off, size - off, &used, u, p, &why);
	if (r != 1)
		return 0;
	if (strlen(u) > 255 || strlen(p) > 255)
		__builtin_trap();
	off += used;
	r = sbx_socks5_request(data + off, size - off, &used, h, &hl, &port,
	    &why, &rep);
	if (r == 1 && (hl == 0 || hl > 255 || port == 0 || port > 65535 ||
	    off + used > size))
		__builtin_trap();
	return 0;
}
