/* socks5.c: the SOCKS5 framing of sbx-proxy (see socks5.h). */
#include <string.h>

#include "socks5.h"

int
sbx_socks5_greeting(const unsigned char *b, size_t len, size_t *used,
    const char **reason)
{
	size_t	 i, n;

	if (len >= 1 && b[0] != 5) {
		*reason = "socks_bad_version";
		return -1;
	}
	if (len < 2)
		return 0;
	if ((n = b[1]) == 0) {
		*reason = "socks_bad_greeting";
		return -1;
	}
	if (len < 2 + n)
		return 0;
	/* Only username/password: the password is the agent's token.
	 * "No authentication" is never selected, even when offered. */
	for (i = 0; i < n; i++)
		if (b[2 + i] == SBX_SOCKS5_M_USERPASS) {
			*used = 2 + n;
			return 1;
		}
	*reason = "socks_no_acceptable_method";
	return -1;
}

int
sbx_socks5_auth(const unsigned char *b, size_t len, size_t *used,
    char user[256], char pass[256], const char **reason)
{
	size_t	 ul, pl;

	if (len >= 1 && b[0] != 1) {
		*reason = "socks_bad_auth_version";
		return -1;
	}
	if (len < 2)
		return 0;
	if ((ul = b[1]) == 0) {
		*reason = "socks_bad_auth";
		return -1;
	}
	if (len < 3 + ul)
		return 0;
	if ((pl = b[2 + ul]) == 0) {
		*reason = "socks_bad_auth";
		return -1;
	}
	if (len < 3 + ul + pl)
		return 0;
	memcpy(user, b + 2, ul);
	user[ul] = '\0';
	memcpy(pass, b + 3 + ul, pl);
	pass[pl] = '\0';
	*used = 3 + ul + pl;
	return 1;
}

int
sbx_socks5_request(const unsigned char *b, size_t len, size_t *used,
    char host[256], size_t *hostlen, unsigned *port, const char **reason,
    int *rep)
{
	size_t	 n;

	*rep = SBX_SOCKS5_FAIL;
	if (len >= 1 && b[0] != 5) {
		*reason = "socks_bad_version";
		return -1;
	}
	if (len >= 2 && b[1] != 1) {
		*reason = "socks_bad_command";
		*rep = SBX_SOCKS5_CMD;
		return -1;
	}
	if (len >= 3 && b[2] != 0) {
		*reason = "socks_bad_reserved";
		return -1;
	}
	if (len < 4)
		return 0;
	/*
	 * Names only (socks5h): an address, IPv4, IPv6 or IPv4-mapped,
	 * would skip every name rule, so it is refused as an IP literal
	 * in a CONNECT is, without reading it.
	 */
	if (b[3] == 1 || b[3] == 4) {
		*reason = "ip_literal";
		*rep = SBX_SOCKS5_DENIED;
		return -1;
	}
	if (b[3] != 3) {
		*reason = "socks_bad_address_type";
		*rep = SBX_SOCKS5_ATYP;
		return -1;
	}
	if (len < 5)
		return 0;
	if ((n = b[4]) == 0) {
		*reason = "invalid_host";
		return -1;
	}
	if (len < 5 + n + 2)
		return 0;
	*port = ((unsigned)b[5 + n] << 8) | b[6 + n];
	if (*port == 0) {
		*reason = "invalid_port";
		return -1;
	}
	memcpy(host, b + 5, n);
	host[n] = '\0';
	*hostlen = n;
	*used = 7 + n;
	return 1;
}

void
sbx_socks5_reply(unsigned char out[10], int rep)
{
	memset(out, 0, 10);
	out[0] = 5;
	out[1] = (unsigned char)rep;
	out[3] = 1;
}
