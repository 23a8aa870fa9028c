/* envelope.h: the JSON envelope of DESIGN.md §5, built with jansson. */
#ifndef SBX_ENVELOPE_H
#define SBX_ENVELOPE_H

#include <stddef.h>

#include <jansson.h>

#include "error.h"

/* Largest envelope or record a program reads (bytes). */
#define SBX_ENVELOPE_MAX	(16u << 20)

/* {"ok":true,"tool":T,"result":R,"warnings":W}; steals result and
 * warnings (either may be NULL; an empty warnings array is omitted). */
json_t	*sbx_envelope_ok(const char *tool, json_t *result, json_t *warnings);
/* {"ok":false,"tool":T,"kind":...,"field"?,"reason"?,"message","retryable",
 * "hint"?}; extra (stolen, may be NULL) is merged in. */
json_t	*sbx_envelope_err(const char *tool, const struct sbx_error *,
	    json_t *extra);
/* One compact line, keys sorted, with a trailing newline; caller frees. */
char	*sbx_envelope_dump(const json_t *);
/* Parse one JSON object from untrusted bytes: size-capped, duplicate keys
 * rejected. Returns NULL and fills the error (invalid_args) on failure. */
json_t	*sbx_json_parse(const char *, size_t, size_t cap, struct sbx_error *);
/* jansson's hash seed from getrandom(2), before the first object: one
 * call, where jansson would open and read /dev/urandom (a command in a
 * warm session counts its system calls).  Without it, jansson's own. */
void	 sbx_json_seed(void);
/* A JSON string from arbitrary bytes (invalid UTF-8 becomes U+FFFD). */
json_t	*sbx_json_bytes(const char *, size_t);

#endif
