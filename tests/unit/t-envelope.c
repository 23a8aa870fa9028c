/* t-envelope: building and reading envelopes. */
#include <stdlib.h>

#include "tap.h"

#include "envelope.h"

int
main(void)
{
	struct sbx_error	 e;
	json_t			*env, *w;
	char			*s;

	env = sbx_envelope_ok("exec", json_pack("{s:i,s:s}", "exit_code", 0,
	    "stdout", "hi\n"), json_array());
	s = sbx_envelope_dump(env);
	is_str(s, "{\"ok\":true,\"result\":{\"exit_code\":0,\"stdout\":"
	    "\"hi\\n\"},\"tool\":\"exec\"}\n", "ok envelope, sorted, compact, "
	    "empty warnings omitted");
	free(s);
	json_decref(env);

	w = json_array();
	json_array_append_new(w, json_string("careful"));
	env = sbx_envelope_ok("exec", NULL, w);
	s = sbx_envelope_dump(env);
	is_str(s, "{\"ok\":true,\"result\":{},\"tool\":\"exec\",\"warnings\":"
	    "[\"careful\"]}\n", "warnings kept when present");
	free(s);
	json_decref(env);

	sbx_error_set(&e, SBX_K_INVALID_ARGS, "cwd", "traversal",
	    "argument `cwd` rejected: path contains `..`");
	env = sbx_envelope_err("exec", &e, NULL);
	s = sbx_envelope_dump(env);
	is_str(s, "{\"field\":\"cwd\",\"kind\":\"invalid_args\",\"message\":"
	    "\"argument `cwd` rejected: path contains `..`\",\"ok\":false,"
	    "\"reason\":\"traversal\",\"retryable\":false,\"tool\":\"exec\"}\n",
	    "error envelope as in DESIGN.md");
	free(s);
	json_decref(env);

	sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL, "x", "down");
	ok(e.retryable == 1, "unavailable is retryable");
	sbx_error_set(&e, SBX_K_TIMEOUT, NULL, "x", "slow");
	ok(e.retryable == 1, "timeout is retryable");

	ok(sbx_json_parse("{\"a\":1,\"a\":2}", 13, 100, &e) == NULL &&
	    strcmp(e.reason, "malformed_json") == 0, "duplicate keys rejected");
	ok(sbx_json_parse("{\"a\":1}", 7, 3, &e) == NULL &&
	    strcmp(e.reason, "too_large") == 0, "size cap enforced");
	ok(sbx_json_parse("[1]", 3, 100, &e) == NULL &&
	    strcmp(e.reason, "not_an_object") == 0, "non-object rejected");
	ok(sbx_json_parse("{\"a\":", 5, 100, &e) == NULL &&
	    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0, "truncated rejected");
	env = sbx_json_parse("{\"a\":1}", 7, 100, &e);
	ok(env != NULL, "valid object parsed");
	json_decref(env);
	return done_testing();
}
