/* t-recipe: plugin recipes judged (every refusal), made canonical,
 * agent-authored defaults, parameters to values and environment. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "recipe.h"

/* A tool that is fine: recipes below are this plus what they test. */
#define TOOL "{\"id\":\"x\",\"description\":\"d\",\"run\":\"true\"}"
#define HEAD "\"name\":\"T\",\"description\":\"d\","
#define OK_R "{" HEAD "\"tools\":[" TOOL "]}"

struct refusal {
	const char *json;
	const char *field;
	const char *reason;
};

static const struct refusal refusals[] = {
	{ "[]", "recipe", "not_an_object" },
	{ "{\"description\":\"d\",\"tools\":[" TOOL "]}", "name", "missing" },
	{ "{\"name\":\"\",\"description\":\"d\",\"tools\":[" TOOL "]}", "name",
	    "empty" },
	{ "{\"name\":\"a/b\",\"description\":\"d\",\"tools\":[" TOOL "]}",
	    "name", "invalid_name" },
	{ "{\"name\":\"-x\",\"description\":\"d\",\"tools\":[" TOOL "]}",
	    "name", "invalid_name" },
	{ "{\"name\":\"T\",\"tools\":[" TOOL "]}", "description", "missing" },
	{ "{\"name\":\"T\",\"description\":3,\"tools\":[" TOOL "]}",
	    "description", "not_a_string" },
	{ "{" HEAD "\"version\":\"1\\u0001\",\"tools\":[" TOOL "]}", "version",
	    "control_character" },
	{ "{" HEAD "\"tools\":[]}", "tools", "not_an_array" },
	{ "{" HEAD "\"x\":1}", "tools", "missing" },
	{ "{" HEAD "\"tools\":[{\"id\":\"X\",\"description\":\"d\","
	  "\"run\":\"true\"}]}",
	    "tools[0].id", "invalid_name" },
	{ "{" HEAD "\"tools\":[{\"id\":\"9a\",\"description\":\"d\","
	  "\"run\":\"true\"}]}",
	    "tools[0].id", "invalid_name" },
	{ "{" HEAD "\"tools\":[" TOOL "," TOOL "]}", "tools[1].id",
	    "duplicate_tool" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"run\":\"true\"}]}",
	    "tools[0].description", "missing" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\"}]}",
	    "tools[0].run", "missing" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"sudo\":1}]}",
	    "tools[0].sudo", "unknown_key" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"curl https://evil.example/x\"}]}",
	    "tools[0].run", "host_not_declared" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"curl http://$HOST/x\"}]}",
	    "tools[0].run", "unverifiable_host" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"curl http://127.0.0.1/x\"}]}",
	    "tools[0].run", "unverifiable_host" },
	{ "{" HEAD "\"setup\":\"wget https://u:p@other.example:8443/a\","
	  "\"permissions\":{\"network\":[\"*.sbx.test\"]},\"tools\":[" TOOL
	  "]}",
	    "setup", "host_not_declared" },
	{ "{" HEAD "\"daemon\":\"\",\"tools\":[" TOOL "]}", "daemon", "empty" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"type\":\"array\"}}]}",
	    "tools[0].parameters.type", "invalid_type" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"Bad\":"
	  "{\"type\":\"string\"}}}}]}",
	    "tools[0].parameters.properties.Bad", "invalid_name" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"a\":"
	  "{\"type\":\"str\"}}}}]}",
	    "tools[0].parameters.properties.a.type", "invalid_type" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"a\":"
	  "{\"type\":\"integer\",\"default\":\"1\"}}}}]}",
	    "tools[0].parameters.properties.a.default", "invalid_default" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"a\":"
	  "{\"type\":\"string\",\"enum\":[\"p\"],\"default\":\"q\"}}}}]}",
	    "tools[0].parameters.properties.a.default", "invalid_default" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"a\":"
	  "{\"type\":\"string\",\"enum\":[1]}}}}]}",
	    "tools[0].parameters.properties.a.enum", "invalid_enum" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{\"a\":"
	  "{\"type\":\"string\",\"pattern\":\".\"}}}}]}",
	    "tools[0].parameters.properties.a.pattern", "unsupported_keyword" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"properties\":{},"
	  "\"required\":[\"b\"]}}]}",
	    "tools[0].parameters.required[0]", "unknown_parameter" },
	{ "{" HEAD "\"tools\":[{\"id\":\"x\",\"description\":\"d\","
	  "\"run\":\"true\",\"parameters\":{\"additionalProperties\":true}}"
	  "]}",
	    "tools[0].parameters.additionalProperties", "invalid_value" },
	{ "{" HEAD "\"files\":{\"../x\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[../x]", "traversal" },
	{ "{" HEAD "\"files\":{\"a/../../x\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[a/../../x]", "traversal" },
	{ "{" HEAD "\"files\":{\"/etc/x\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[/etc/x]", "absolute_path" },
	{ "{" HEAD "\"files\":{\"\":\"a\"},\"tools\":[" TOOL "]}", "files[]",
	    "empty_path" },
	{ "{" HEAD "\"files\":{\"a//b\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[a//b]", "empty_component" },
	{ "{" HEAD "\"files\":{\"a\\\\b\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[a\\b]", "backslash" },
	{ "{" HEAD "\"files\":{\"a\\u001bb\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[a\x1b"
	    "b]",
	    "control_character" },
	{ "{" HEAD "\"files\":{\"d/-rf\":\"a\"},\"tools\":[" TOOL "]}",
	    "files[d/-rf]", "option_like" },
	{ "{" HEAD "\"files\":{\"a\":\"x\",\"a/b\":\"y\"},\"tools\":[" TOOL
	  "]}",
	    "files[a]", "file_conflict" },
	{ "{" HEAD "\"files\":{\"a\":3},\"tools\":[" TOOL "]}", "files[a]",
	    "not_text" },
	{ "{" HEAD "\"files\":[],\"tools\":[" TOOL "]}", "files",
	    "not_an_object" },
	{ "{" HEAD "\"dependencies\":{\"npm\":[\"--ignore-scripts=false\"]},"
	  "\"tools\":[" TOOL "]}",
	    "dependencies.npm[0]", "option_like" },
	{ "{" HEAD "\"dependencies\":{\"pip\":[\"ok\",\"git+https://x/y\"]},"
	  "\"tools\":[" TOOL "]}",
	    "dependencies.pip[1]", "url_not_allowed" },
	{ "{" HEAD "\"dependencies\":{\"apk\":[\"x\"]},\"tools\":[" TOOL "]}",
	    "dependencies.apk", "unknown_manager" },
	{ "{" HEAD "\"secrets\":[\"lower\"],\"tools\":[" TOOL "]}",
	    "secrets[0]", "invalid_name" },
	{ "{" HEAD "\"secrets\":[\"A\",\"A\"],\"tools\":[" TOOL "]}",
	    "secrets[1]", "duplicate" },
	{ "{" HEAD "\"permissions\":{\"network\":\"outbound\"},\"tools\":[" TOOL
	  "]}",
	    "permissions.network", "invalid_network" },
	{ "{" HEAD "\"permissions\":{\"network\":[\"ok.example\","
	  "\"1.2.3.4\"]},\"tools\":[" TOOL "]}",
	    "permissions.network[1]", "invalid_network" },
	{ "{" HEAD "\"permissions\":{\"network\":[\"*\"]},\"tools\":[" TOOL
	  "]}",
	    "permissions.network[0]", "invalid_network" },
	{ "{" HEAD "\"permissions\":{\"inference\":\"yes\"},\"tools\":[" TOOL
	  "]}",
	    "permissions.inference", "not_a_boolean" },
	{ "{" HEAD "\"permissions\":{\"shell\":true},\"tools\":[" TOOL "]}",
	    "permissions.shell", "unknown_key" },
	{ "{" HEAD "\"metadata\":[],\"tools\":[" TOOL "]}", "metadata",
	    "not_an_object" },
};

static json_t *
load(const char *s)
{
	json_error_t je;

	return json_loads(s, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
}

static json_t *
check(const char *s, unsigned flags, json_t *w, struct sbx_error *e)
{
	json_t *in = load(s), *r;

	if (in == NULL) {
		diag("bad test JSON: %s", s);
		return NULL;
	}
	r = sbx_recipe_check(in, flags, NULL, w, e);
	json_decref(in);
	return r;
}

int
main(void)
{
	struct sbx_error e;
	struct sbx_strv	 env = SBX_STRV_INIT;
	json_t		*r, *r2, *w, *t, *args, *vals, *s;
	char		*c1, *c2, sha1[65], sha2[65];
	char		 id[SBX_RECIPE_ID_MAX + 1];
	char		 big[600];
	size_t		 i, n1, n2;

	for (i = 0; i < sizeof(refusals) / sizeof(refusals[0]); i++) {
		memset(&e, 0, sizeof(e));
		r = check(refusals[i].json, 0, NULL, &e);
		if (!ok(r == NULL && e.kind != NULL &&
			    strcmp(e.kind, "invalid_args") == 0 &&
			    e.field != NULL &&
			    strcmp(e.field, refusals[i].field) == 0 &&
			    e.reason != NULL &&
			    strcmp(e.reason, refusals[i].reason) == 0,
			"refused: %s %s", refusals[i].field,
			refusals[i].reason))
			diag("json %s\ngot field %s reason %s: %s",
			    refusals[i].json, e.field ? e.field : "-",
			    e.reason ? e.reason : "-", e.message);
		json_decref(r);
	}

	/* Paths: NUL, too long, too deep. */
	ok(sbx_recipe_path_valid("a\0b", 3, &e) == -1 &&
		strcmp(e.reason, "nul_byte") == 0,
	    "a path with a NUL: refused");
	memset(big, 'a', sizeof(big));
	ok(sbx_recipe_path_valid(big, sizeof(big), &e) == -1 &&
		strcmp(e.reason, "too_long") == 0,
	    "a path too long: refused");
	ok(sbx_recipe_path_valid("a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a", 33, &e) ==
		    -1 &&
		strcmp(e.reason, "too_deep") == 0,
	    "17 components: refused");
	ok(sbx_recipe_path_valid("bin/run.sh", 10, &e) == 0 &&
		sbx_recipe_path_valid("é/x.py", strlen("é/x.py"), &e) == 0,
	    "ordinary paths pass");
	ok(sbx_recipe_path_valid("\xff", 1, &e) == -1 &&
		strcmp(e.reason, "not_utf8") == 0,
	    "invalid UTF-8: refused");
	{
		json_t *in = load("{" HEAD "\"files\":{\"a\":\"x\\u0000y\"},"
				  "\"tools\":[" TOOL "]}");

		r = sbx_recipe_check(in, 0, NULL, NULL, &e);
		ok(r == NULL && strcmp(e.reason, "not_text") == 0,
		    "a file with a NUL byte is not text");
		json_decref(in);
	}
	{
		/* Size caps: one file over 1 MiB, then three files of
		 * 0.9 MiB over the 2 MiB total. */
		json_t *in = load(OK_R), *f = json_object();
		char   *blob = malloc(SBX_RECIPE_FILE_MAX + 2);

		memset(blob, 'x', SBX_RECIPE_FILE_MAX + 1);
		blob[SBX_RECIPE_FILE_MAX + 1] = '\0';
		json_object_set_new(f, "big", json_string(blob));
		json_object_set_new(in, "files", f);
		r = sbx_recipe_check(in, 0, NULL, NULL, &e);
		ok(r == NULL && strcmp(e.reason, "file_too_large") == 0,
		    "a file over 1 MiB: file_too_large");
		blob[SBX_RECIPE_FILE_MAX * 9 / 10] = '\0';
		f = json_object();
		json_object_set_new(f, "a", json_string(blob));
		json_object_set_new(f, "b", json_string(blob));
		json_object_set_new(f, "c", json_string(blob));
		json_object_set_new(in, "files", f);
		r = sbx_recipe_check(in, 0, NULL, NULL, &e);
		ok(r == NULL && strcmp(e.reason, "files_too_large") == 0 &&
			strcmp(e.field, "files") == 0,
		    "files over 2 MiB together: files_too_large");
		free(blob);
		json_decref(in);
	}

	/* The id. */
	ok(sbx_recipe_id("Code Search", id, &e) == 0 &&
		strcmp(id, "code-search") == 0,
	    "id: lowercased, spaces as -");

	/* Canonical form: defaults filled, unknown keys into metadata
	 * (with a warning), the same hash for the same recipe however it
	 * is spelled. */
	w = json_array();
	r = check("{" HEAD "\"tools\":[" TOOL "],\"homepage\":\"h\"}", 0, w,
	    &e);
	ok(r != NULL, "a minimal recipe passes");
	is_str(json_string_value(
		   json_object_get(json_object_get(r, "metadata"), "homepage")),
	    "h",
	    "an unknown key is kept in "
	    "metadata");
	ok(json_array_size(w) == 1 &&
		strstr(json_string_value(json_array_get(w, 0)), "homepage") !=
		    NULL,
	    "with a warning");
	ok(json_object_get(r, "homepage") == NULL, "and not at the top");
	is_str(json_string_value(json_object_get(
		   json_object_get(r, "permissions"), "network")),
	    "none", "network defaults to none");
	is_str(json_string_value(json_object_get(json_object_get(r, "metadata"),
		   "created_by")),
	    "person", "created_by person");
	ok(json_is_array(
	       json_object_get(json_object_get(r, "dependencies"), "npm")),
	    "dependencies.npm defaults to []");
	r2 = check("{\"homepage\":\"h\",\"tools\":[" TOOL "]," HEAD
		   "\"files\":{}}",
	    0, NULL, &e);
	c1 = sbx_recipe_canonical(r, &n1, sha1);
	c2 = sbx_recipe_canonical(r2, &n2, sha2);
	ok(c1 && c2 && n1 == n2 && strcmp(c1, c2) == 0 &&
		strcmp(sha1, sha2) == 0 && strlen(sha1) == 64,
	    "the canonical text and hash do not "
	    "depend on key order");
	free(c1);
	free(c2);
	json_decref(r2);
	json_decref(r);
	json_decref(w);

	/* A host covered by permissions.network, by a wildcard, and by a
	 * declared dependency's registry. */
	r = check(
	    "{" HEAD "\"permissions\":{\"network\":[\"*.sbx.test\","
	    "\"API.Example.com\"]},\"setup\":\"curl -o x https://a.sbx.test:"
	    "8443/p && curl https://api.example.com/\",\"tools\":[" TOOL "]}",
	    0, NULL, &e);
	ok(r != NULL, "hosts covered by permissions.network pass");
	is_str(
	    json_string_value(json_array_get(
		json_object_get(json_object_get(r, "permissions"), "network"),
		1)),
	    "api.example.com", "domains are normalised");
	json_decref(r);
	r = check("{" HEAD "\"dependencies\":{\"npm\":[\"left-pad\"]},"
		  "\"setup\":\"curl https://registry.npmjs.org/left-pad\","
		  "\"tools\":[" TOOL "]}",
	    0, NULL, &e);
	ok(r != NULL, "the npm registry is covered by an npm dependency");
	json_decref(r);

	/* Agent-authored: outbound downgraded to none, inference off,
	 * created_by agent, each with a warning. */
	w = json_array();
	r = check(
	    "{" HEAD "\"permissions\":{\"network\":\"outbound\","
	    "\"inference\":true},\"metadata\":{\"created_by\":\"person\"},"
	    "\"tools\":[" TOOL "]}",
	    SBX_RECIPE_AGENT, w, &e);
	ok(r != NULL, "an agent's recipe asking for outbound is accepted");
	is_str(json_string_value(json_object_get(
		   json_object_get(r, "permissions"), "network")),
	    "none", "its network is none");
	ok(json_is_false(
	       json_object_get(json_object_get(r, "permissions"), "inference")),
	    "its inference is false");
	is_str(json_string_value(json_object_get(json_object_get(r, "metadata"),
		   "created_by")),
	    "agent",
	    "created_by agent, "
	    "whatever it claimed");
	is_int(json_array_size(w), 3, "three warnings");
	json_decref(r);
	json_decref(w);
	r = check("{" HEAD "\"permissions\":{\"network\":[\"*.ok.test\"]},"
		  "\"tools\":[" TOOL "]}",
	    SBX_RECIPE_AGENT, NULL, &e);
	ok(r != NULL &&
		json_is_array(json_object_get(json_object_get(r, "permissions"),
		    "network")),
	    "an agent's valid domain list is "
	    "kept");
	json_decref(r);

	/* Parameters: each type, defaults, required, enum. */
	r = check(
	    "{" HEAD "\"tools\":[{\"id\":\"t\",\"description\":\"d\","
	    "\"run\":\"true\",\"parameters\":{\"type\":\"object\","
	    "\"properties\":{\"s\":{\"type\":\"string\"},\"i\":{\"type\":"
	    "\"integer\",\"default\":5},\"n\":{\"type\":\"number\"},\"b\":"
	    "{\"type\":\"boolean\"},\"a\":{\"type\":\"array\"},\"o\":{\"type\":"
	    "\"object\"},\"m\":{\"type\":\"string\",\"enum\":[\"x\",\"y\"]}},"
	    "\"required\":[\"s\"]}}]}",
	    0, NULL, &e);
	ok(r != NULL, "a tool with every parameter type passes");
	t = (json_t *)sbx_recipe_tool(r, "t");
	ok(t != NULL && sbx_recipe_tool(r, "nope") == NULL, "tool lookup");
	args = json_object();
	ok(sbx_recipe_param_arg(t, "s=a b=c", args, &e) == 0 &&
		sbx_recipe_param_arg(t, "n=2.5", args, &e) == 0 &&
		sbx_recipe_param_arg(t, "b=true", args, &e) == 0 &&
		sbx_recipe_param_arg(t, "a=[1,\"x\"]", args, &e) == 0 &&
		sbx_recipe_param_arg(t, "o={\"k\":1}", args, &e) == 0,
	    "--param of each type");
	ok(sbx_recipe_param_arg(t, "i=1.5", args, &e) == -1 &&
		strcmp(e.reason, "invalid_type") == 0 &&
		strcmp(e.field, "parameters.i") == 0,
	    "an integer that is not: "
	    "invalid_type");
	ok(sbx_recipe_param_arg(t, "b=yes", args, &e) == -1,
	    "a boolean that is not");
	ok(sbx_recipe_param_arg(t, "a={}", args, &e) == -1,
	    "an array that is not");
	ok(sbx_recipe_param_arg(t, "zz=1", args, &e) == -1 &&
		strcmp(e.reason, "unknown_parameter") == 0,
	    "an unknown one");
	ok(sbx_recipe_param_arg(t, "s=again", args, &e) == -1 &&
		strcmp(e.reason, "duplicate_parameter") == 0,
	    "twice");
	ok(sbx_recipe_param_arg(t, "noeq", args, &e) == -1, "no =");
	vals = sbx_recipe_params(t, args, &e);
	ok(vals != NULL && json_integer_value(json_object_get(vals, "i")) == 5,
	    "the default fills a gap");
	ok(sbx_recipe_params_env(vals, &env, &e) == 0, "environment");
	{
		const char *want[] = { "PARAM_S=a b=c", "PARAM_I=5",
			"PARAM_N=2.5", "PARAM_B=true", "PARAM_A=[1,\"x\"]",
			"PARAM_O={\"k\":1}" };
		size_t	    j, k, found = 0;

		for (j = 0; j < sizeof(want) / sizeof(want[0]); j++)
			for (k = 0; k < env.n; k++)
				found += strcmp(env.v[k], want[j]) == 0;
		is_int((long long)found, 6,
		    "PARAM_* values: raw strings, "
		    "numbers as text, others as JSON");
	}
	sbx_strv_release(&env);
	json_decref(vals);
	json_object_del(args, "s");
	vals = sbx_recipe_params(t, args, &e);
	ok(vals == NULL && strcmp(e.reason, "missing_parameter") == 0 &&
		strcmp(e.field, "parameters.s") == 0,
	    "a missing required one: "
	    "missing_parameter");
	json_object_set_new(args, "s", json_string("x"));
	json_object_set_new(args, "m", json_string("z"));
	vals = sbx_recipe_params(t, args, &e);
	ok(vals == NULL && strcmp(e.reason, "not_in_enum") == 0,
	    "a value outside the enum");
	json_decref(args);
	s = sbx_recipe_input_schema(t);
	ok(json_is_false(json_object_get(s, "additionalProperties")) &&
		json_object_get(json_object_get(s, "properties"), "s") != NULL,
	    "the input schema: the parameters, additionalProperties false");
	json_decref(s);
	json_decref(r);
	/* Tool names clients take (sbx tools, sbx mcp). */
	{
		char m1[SBX_TOOL_NAME_MAX + 1], m2[SBX_TOOL_NAME_MAX + 1];
		char m3[SBX_TOOL_NAME_MAX + 1], sha[SBX_RECIPE_SHA_HEX + 1];
		char longid[SBX_RECIPE_ID_MAX + 1], longtool[65];
		const char *full;
		size_t	    j;

		sbx_recipe_tool_name("greet", "hello", m1);
		is_str(m1, "plugin-greet-hello",
		    "plugin.ID.TOOL: the dots "
		    "made dashes");
		sbx_recipe_tool_name("a-b", "c", m1);
		sbx_recipe_tool_name("a", "b_c", m2);
		ok(strcmp(m1, "plugin-a-b-c") == 0 &&
			strcmp(m2, "plugin-a-b_c") == 0,
		    "a dash in the plugin id, an "
		    "underscore in the tool's: two names");
		memset(longid, 'p', SBX_RECIPE_ID_MAX);
		longid[SBX_RECIPE_ID_MAX] = '\0';
		memset(longtool, 't', 64);
		longtool[64] = '\0';
		sbx_recipe_tool_name(longid, longtool, m1);
		ok(strlen(m1) == 64, "the longest ids: 64 characters");
		for (j = 0; m1[j] != '\0'; j++)
			if (!(isalnum((unsigned char)m1[j]) || m1[j] == '-' ||
				m1[j] == '_'))
				break;
		ok(m1[j] == '\0', "only letters, digits, - and _: %s", m1);
		full =
		    "plugin.pppppppppppppppppppppppppppppppp.tttttttttttttttt"
		    "tttttttttttttttttttttttttttttttttttttttttttttttt";
		sbx_recipe_sha256(full, strlen(full), sha);
		for (j = 0; j < 8; j++)
			sha[j] = (char)toupper((unsigned char)sha[j]);
		ok(strncmp(m1,
		       "plugin-pppppppppppppppppppppppppppppppp-"
		       "ttttttttttttttt-",
		       56) == 0 &&
			memcmp(m1 + 56, sha, 8) == 0,
		    "cut: 55 characters, a dash, the id's SHA-256 in 8 "
		    "capital hex digits");
		longtool[63] = 'u';
		sbx_recipe_tool_name(longid, longtool, m2);
		ok(strlen(m2) == 64 && strcmp(m1, m2) != 0,
		    "two long ids "
		    "that differ past the cut: two names");
		/* A whole name of 64 whose tool id looks like a hash: a
		 * tool id is lowercase, a cut name's tail is not. */
		sbx_recipe_tool_name("pppppppppppppppppppppppppppppppp",
		    "ttttttttttttttttabcdef12", m3);
		ok(strlen(m3) == 64 && strcmp(m3, m1) != 0 &&
			strcmp(m3, m2) != 0,
		    "a whole name of 64 never equals a "
		    "cut one");
		sbx_recipe_tool_name("greet", "hello", m3);
		sbx_recipe_tool_name("greet", "hello", m2);
		is_str(m2, m3, "stable: the same ids, the same name");
	}
	return done_testing();
}
