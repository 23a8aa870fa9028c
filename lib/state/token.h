/* token.h: an agent's token: made, checked. */
#ifndef SBX_TOKEN_H
#define SBX_TOKEN_H

#include <stddef.h>

/* 32 random bytes, base64url without padding. */
#define SBX_TOKEN_LEN		43

/* A new token (NUL-terminated) from libsodium's CSPRNG. */
int	sbx_token_new(char out[SBX_TOKEN_LEN + 1]);
/* Is it exactly SBX_TOKEN_LEN characters of [A-Za-z0-9_-]? */
int	sbx_token_valid(const char *, size_t);
/* Is what the open file holds (read from its offset) a well-formed
 * token?  The bytes read are wiped. */
int	sbx_token_fd_valid(int fd);

#endif
