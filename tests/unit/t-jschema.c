/* t-jschema: tool arguments against sbx's schemas (lib/base/jschema.c). */
#include "tap.h"

#include "jschema.h"
#include "tooldefs.h"

/* check SCHEMA-NAME ARGS-JSON: 0, or -1 with the reason and field. */
static int
check(const char *tool, const char *args, const char *reason, const char *field)
{
	struct sbx_error e;
	json_t		*s, *a;
	int		 rc, good;

	s = sbx_tooldef_input(sbx_tooldef_find(tool));
	a = json_loads(args, JSON_ALLOW_NUL, NULL);
	memset(&e, 0, sizeof(e));
	rc = sbx_jschema_check(s, a, &e);
	if (reason == NULL)
		good = rc == 0;
	else
		good = rc == -1 && strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 &&
		    strcmp(e.reason, reason) == 0 &&
		    (field == NULL || strcmp(e.field, field) == 0);
	if (!good)
		diag("%s %s: rc %d reason %s field %s", tool, args, rc,
		    e.reason ? e.reason : "-", e.field ? e.field : "-");
	json_decref(s);
	json_decref(a);
	return good;
}

int
main(void)
{
	char *big;

	ok(check("shell_run", "{\"command\":\"ls\"}", NULL, NULL),
	    "a plain call conforms");
	ok(check("shell_run", "{}", NULL, NULL),
	    "no properties: the schema has no required one");
	ok(check("shell_run", "{\"command\":\"ls\",\"x\":1}",
	       "unknown_property", "x"),
	    "an extra property is refused, named");
	ok(check("shell_run", "{\"command\":1}", "wrong_type", "command"),
	    "a number for a string");
	ok(check("shell_run", "{\"command\":\"\"}", "too_short", "command"),
	    "an empty command");
	ok(check("shell_run", "{\"argv\":[\"a\",2]}", "wrong_type", "argv[1]"),
	    "an array item of the wrong type, with its index");
	ok(check("shell_run", "{\"argv\":[]}", "too_short", "argv"),
	    "minItems");
	ok(check("shell_run", "{\"env\":{\"A\":\"1\",\"B\":false}}",
	       "wrong_type", "env.B"),
	    "additionalProperties as a schema");
	ok(check("shell_run", "{\"network\":\"all\"}", "not_allowed",
	       "network"),
	    "enum");
	ok(check("shell_run", "{\"timeout\":0}", "out_of_range", "timeout"),
	    "exclusiveMinimum");
	ok(check("shell_run", "{\"timeout\":86401}", "out_of_range", "timeout"),
	    "maximum");
	ok(check("sandbox_process",
	       "{\"action\":\"poll\",\"tail_lines\":"
	       "2.0}",
	       NULL, NULL),
	    "2.0 is an integer");
	ok(check("sandbox_process",
	       "{\"action\":\"poll\",\"tail_lines\":"
	       "2.5}",
	       "wrong_type", "tail_lines"),
	    "2.5 is not");
	ok(check("sandbox_process", "{}", "missing_property", "action"),
	    "a required property");
	ok(check("file_write",
	       "{\"path\":\"a\",\"content\":\"\","
	       "\"mode\":\"0644\"}",
	       NULL, NULL),
	    "a mode that fits the pattern");
	ok(check("file_write",
	       "{\"path\":\"a\",\"content\":\"\","
	       "\"mode\":\"4755\"}",
	       "bad_format", "mode"),
	    "a set-id mode does "
	    "not");
	ok(check("file_write",
	       "{\"path\":\"a\",\"content\":\"\","
	       "\"mode\":\"0644\\u0000x\"}",
	       "bad_format", "mode"),
	    "a NUL inside does not hide the rest");
	ok(check("file_read", "{\"path\":\"\\u00e9\"}", NULL, NULL),
	    "a one-character name (two bytes) is one character");
	if ((big = malloc(70001)) != NULL) {
		char *a;

		memset(big, 'x', 70000);
		big[70000] = '\0';
		if (asprintf(&a, "{\"command\":\"%s\"}", big) != -1) {
			ok(check("shell_run", a, "too_long", "command"),
			    "a huge string: maxLength");
			free(a);
		}
		free(big);
	}
	return done_testing();
}
