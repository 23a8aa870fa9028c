/*
 * jschema.h: checking a JSON value against the subset of JSON Schema that
 * sbx's own schemas use (lib/exec/tooldefs.c): type, properties, required,
 * additionalProperties, enum, minimum, maximum, exclusiveMinimum,
 * minLength, maxLength (in characters), pattern (POSIX extended),
 * items, minItems, maxItems, maxProperties.  Any other keyword is ignored,
 * so a schema that uses one is not enforced by it: keep the schemas to
 * this subset.
 */
#ifndef SBX_JSCHEMA_H
#define SBX_JSCHEMA_H

#include <jansson.h>

#include "error.h"

/*
 * 0 when value conforms to schema; else -1 with an invalid_args error
 * whose field is the path of the offending value ("env.FOO", "argv[2]")
 * and whose reason is one of unknown_property, missing_property,
 * wrong_type, not_allowed (enum), too_long, too_short, out_of_range,
 * too_many, bad_format (pattern).  The field lives in static storage until
 * the next call.
 */
int sbx_jschema_check(const json_t *schema, const json_t *value,
    struct sbx_error *);

#endif
