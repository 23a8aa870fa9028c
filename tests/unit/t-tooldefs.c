/* t-tooldefs: the built-in tool table shared by sbx mcp and sbx tools. */
#include "tap.h"

#include "tooldefs.h"

/* Every property of an object schema is typed and described, and every
 * nested object schema refuses unknown properties too. */
static int
props_ok(json_t *schema)
{
	json_t	   *props, *p, *ap;
	const char *k;

	props = json_object_get(schema, "properties");
	if (!json_is_object(props))
		return 0;
	ap = json_object_get(schema, "additionalProperties");
	if (!json_is_false(ap))
		return 0;
	json_object_foreach (props, k, p) {
		if (!json_is_object(p) || json_object_get(p, "type") == NULL ||
		    !json_is_string(json_object_get(p, "description")))
			return 0;
	}
	return 1;
}

int
main(void)
{
	const struct sbx_tooldef *d;
	json_t			 *in, *out, *tool, *req, *v;
	size_t			  i, j, n;
	static const char *const  want[] = { "shell_run", "sandbox_process",
		 "file_read", "file_search", "file_write", "file_edit",
		 "file_list", "sandbox_install", "secret_check",
		 "secret_request" };

	n = sbx_tooldefs_count();
	ok(n == sizeof(want) / sizeof(*want), "%zu built-in tools", n);
	for (i = 0; i < sizeof(want) / sizeof(*want); i++)
		ok(sbx_tooldef_find(want[i]) != NULL, "%s is defined", want[i]);
	ok(sbx_tooldef_find("nope") == NULL, "unknown name: NULL");
	/* Names every client takes: ^[a-zA-Z0-9_-]{1,64}$. */
	for (i = 0; (d = sbx_tooldef_at(i)) != NULL; i++)
		ok(sbx_tooldef_name_valid(d->name) &&
			strchr(d->name, '-') == NULL,
		    "%s: a name clients take, no dash (the plugin "
		    "tools' mark)",
		    d->name);
	ok(sbx_tooldef_name_valid("plugin-a_b-C9") &&
		!sbx_tooldef_name_valid("plugin.greet.hello") &&
		!sbx_tooldef_name_valid("") && !sbx_tooldef_name_valid("a b") &&
		!sbx_tooldef_name_valid("caf\xc3\xa9") &&
		sbx_tooldef_name_valid(
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxx") &&
		!sbx_tooldef_name_valid(
		    "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		    "xxxxxxxxxxxxxxxxxxxxxx"),
	    "name_valid: letters, digits, _ and -, "
	    "1 to 64; no dot, space, UTF-8");
	in = sbx_tooldef_input(sbx_tooldef_find("shell_run"));
	ok(json_is_object(json_object_get(json_object_get(in, "properties"),
	       "fail_on_violation")),
	    "shell_run takes fail_on_violation");
	json_decref(in);
	ok(sbx_tooldef_at(n) == NULL, "past the end: NULL");
	for (i = 0; (d = sbx_tooldef_at(i)) != NULL; i++) {
		in = sbx_tooldef_input(d);
		ok(json_is_object(in) &&
			json_is_string(json_object_get(in, "type")) &&
			strcmp(json_string_value(json_object_get(in, "type")),
			    "object") == 0,
		    "%s: inputSchema parses, type "
		    "object",
		    d->name);
		ok(in != NULL && props_ok(in),
		    "%s: properties typed, "
		    "described, additionalProperties false",
		    d->name);
		req = json_object_get(in, "required");
		json_array_foreach (req, j, v)
			if (!json_is_string(v) ||
			    json_object_get(json_object_get(in, "properties"),
				json_string_value(v)) == NULL)
				break;
		ok(req == NULL || j == json_array_size(req),
		    "%s: required "
		    "names defined properties",
		    d->name);
		out = sbx_tooldef_output(d);
		ok(json_is_object(out) &&
			strcmp(json_string_value(json_object_get(out, "type")),
			    "object") == 0 &&
			json_is_object(json_object_get(
			    json_object_get(out, "properties"), "result")),
		    "%s: outputSchema is the "
		    "envelope with its result",
		    d->name);
		tool = sbx_tooldef_json(d);
		ok(tool != NULL &&
			json_is_object(json_object_get(tool, "annotations")) &&
			json_is_boolean(json_object_get(
			    json_object_get(tool, "annotations"),
			    "readOnlyHint")) &&
			strlen(json_string_value(
			    json_object_get(tool, "description"))) > 40,
		    "%s: MCP tool object", d->name);
		ok(!((d->hints & SBX_TOOL_READ_ONLY) &&
		       (d->hints & SBX_TOOL_DESTRUCTIVE)),
		    "%s: read-only tools "
		    "are not destructive",
		    d->name);
		json_decref(in);
		json_decref(out);
		json_decref(tool);
	}
	return done_testing();
}
