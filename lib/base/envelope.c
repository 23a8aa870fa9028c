/* envelope.c: building, printing and reading envelopes. */
#include <sys/random.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "envelope.h"
#include "utf8.h"

json_t *
sbx_envelope_ok(const char *tool, json_t *result, json_t *warnings)
{
	json_t	*env;

	if ((env = json_object()) == NULL)
		goto fail;
	json_object_set_new(env, "ok", json_true());
	json_object_set_new(env, "tool", json_string(tool));
	json_object_set_new(env, "result", result ? result : json_object());
	if (warnings != NULL && json_array_size(warnings) > 0)
		json_object_set_new(env, "warnings", warnings);
	else
		json_decref(warnings);
	return env;
fail:
	json_decref(result);
	json_decref(warnings);
	return NULL;
}

json_t *
sbx_envelope_err(const char *tool, const struct sbx_error *e, json_t *extra)
{
	json_t		*env;
	const char	*kind;

	if ((env = json_object()) == NULL) {
		json_decref(extra);
		return NULL;
	}
	if (extra != NULL) {
		json_object_update(env, extra);
		json_decref(extra);
	}
	kind = e->kind ? e->kind : SBX_K_EXECUTION_ERROR;
	json_object_set_new(env, "ok", json_false());
	json_object_set_new(env, "tool", json_string(tool));
	json_object_set_new(env, "kind", json_string(kind));
	if (e->field)
		json_object_set_new(env, "field", json_string(e->field));
	if (e->reason)
		json_object_set_new(env, "reason", json_string(e->reason));
	json_object_set_new(env, "message",
	    sbx_json_bytes(e->message, strlen(e->message)));
	json_object_set_new(env, "retryable", json_boolean(e->retryable));
	if (e->hint[0])
		json_object_set_new(env, "hint",
		    sbx_json_bytes(e->hint, strlen(e->hint)));
	return env;
}

char *
sbx_envelope_dump(const json_t *env)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		*s;

	if (env == NULL)
		return NULL;
	s = json_dumps(env, JSON_COMPACT | JSON_SORT_KEYS);
	if (s == NULL)
		return NULL;
	if (sbx_buf_puts(&b, s) == -1 || sbx_buf_append(&b, "\n", 1) == -1) {
		free(s);
		sbx_buf_release(&b);
		return NULL;
	}
	free(s);
	return sbx_buf_detach(&b);
}

json_t *
sbx_json_parse(const char *p, size_t n, size_t cap, struct sbx_error *e)
{
	json_error_t	 je;
	json_t		*j;

	if (n > cap) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "input", "too_large",
		    "input of %zu bytes exceeds the %zu-byte limit", n, cap);
		return NULL;
	}
	j = json_loadb(p, n, JSON_REJECT_DUPLICATES, &je);
	if (j == NULL) {
		sbx_error_set(e, SBX_K_INVALID_ARGS, "input", "malformed_json",
		    "malformed JSON at line %d column %d: %s", je.line,
		    je.column, je.text);
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		sbx_error_set(e, SBX_K_INVALID_ARGS, "input", "not_an_object",
		    "expected a JSON object");
		return NULL;
	}
	return j;
}

json_t *
sbx_json_bytes(const char *p, size_t n)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*j;

	if (sbx_utf8_valid(p, n))
		return json_stringn(p, n);
	if (sbx_utf8_sanitize(&b, p, n) == -1) {
		sbx_buf_release(&b);
		return NULL;
	}
	j = json_stringn(b.p, b.len);
	sbx_buf_release(&b);
	return j;
}

void
sbx_json_seed(void)
{
	uint32_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) ==
	    (ssize_t)sizeof(seed) && seed != 0)
		json_object_seed((size_t)seed);
}
