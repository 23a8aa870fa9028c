/*
 * t-execreq: the one table of a request's fields (lib/exec/execreq.c)
 * against what still has words of its own: sbx exec's option table
 * (cmd/exec-opts.c, linked in) and the MCP schemas of shell_run and
 * sandbox_process (lib/exec/tooldefs.c).  An option, a request key or a
 * schema property without its row, or with another type, fails here.
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"

#include "envelope.h"
#include "exec-opts.h"
#include "exec.h"
#include "netmode.h"
#include "tooldefs.h"

/* The table's name of an option row: its long name, else its letter. */
static const char *
opt_name(const struct sbx_opt *o, char letter[2])
{
	if (o->name != NULL)
		return o->name;
	letter[0] = o->letter;
	letter[1] = '\0';
	return letter;
}

static const struct sbx_opt *
opt_find(const char *name)
{
	char   l[2];
	size_t i;

	for (i = 0; i < exec_table.nopt; i++)
		if (strcmp(opt_name(&exec_table.opt[i], l), name) == 0)
			return &exec_table.opt[i];
	return NULL;
}

/* "tail-lines" for "tail_lines". */
static void
dashed(char *out, size_t size, const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i + 1 < size; i++)
		out[i] = s[i] == '_' ? '-' : s[i];
	out[i] = '\0';
}

/* Does a schema's type fit the row's? */
static int
types_agree(const struct sbx_exec_field *f, const char *t)
{
	switch (f->type) {
	case SBX_EXEC_F_STR: return strcmp(t, "string") == 0;
	case SBX_EXEC_F_NUM:
	case SBX_EXEC_F_LIMIT:
		return strcmp(t, "number") == 0 || strcmp(t, "integer") == 0;
	case SBX_EXEC_F_BOOL: return strcmp(t, "boolean") == 0;
	case SBX_EXEC_F_STRV:
		/* env: an object of NAME: value there, NAME=VALUE strings
		 * here (lib/service/mcptools.c joins them). */
		return strcmp(t, "array") == 0 ||
		    (strcmp(f->key, "env") == 0 && strcmp(t, "object") == 0);
	case SBX_EXEC_F_ARGV:
	case SBX_EXEC_F_ROOTS: return strcmp(t, "array") == 0;
	case SBX_EXEC_F_PROG: break;
	}
	return 0;
}

/* A value of the row's type, as request JSON text. */
static const char *
sample(const struct sbx_exec_field *f)
{
	switch (f->type) {
	case SBX_EXEC_F_STR: return "\"x\"";
	case SBX_EXEC_F_NUM:
	case SBX_EXEC_F_LIMIT: return "1";
	case SBX_EXEC_F_BOOL: return "true";
	case SBX_EXEC_F_STRV:
	case SBX_EXEC_F_ARGV:
	case SBX_EXEC_F_ROOTS: return "[\"x\"]";
	case SBX_EXEC_F_PROG: break;
	}
	return "null";
}

/* Is the request {key: value} (with a shell for args) read, and is a
 * value of another type refused with wrong_type naming the key? */
static int
key_read(const struct sbx_exec_field *f)
{
	struct sbx_exec_req q;
	struct sbx_error    e;
	char		    t[256];
	json_t		   *o;
	int		    rc, good;

	snprintf(t, sizeof(t), "{\"%s\":%s%s}", f->key, sample(f),
	    strcmp(f->key, "args") == 0 ? ",\"shell\":\"s\"" : "");
	sbx_exec_req_init(&q);
	o = sbx_json_parse(t, strlen(t), 1 << 16, &e);
	rc = o == NULL ? -1 : sbx_exec_req_json(&q, o, &e);
	json_decref(o);
	sbx_exec_req_release(&q);
	if (rc != 0)
		diag("%s: %s", t, e.message);
	good = rc == 0;
	snprintf(t, sizeof(t), "{\"%s\":%s}", f->key,
	    f->type == SBX_EXEC_F_BOOL ? "\"yes\"" : "{}");
	sbx_exec_req_init(&q);
	o = sbx_json_parse(t, strlen(t), 1 << 16, &e);
	rc = o == NULL ? -1 : sbx_exec_req_json(&q, o, &e);
	json_decref(o);
	sbx_exec_req_release(&q);
	return good && rc == -1 && e.reason != NULL &&
	    strcmp(e.reason, "wrong_type") == 0 && e.field != NULL &&
	    strcmp(e.field, f->key) == 0;
}

/* The schema's properties that are not request fields: sandbox_process's
 * action and job (the subcommand and its operand), and the options of
 * the job subcommands (tail_lines: --tail-lines). */
static int
mcp_maps(const char *tool, const char *prop, const char *type)
{
	const struct sbx_exec_field *f;
	const struct sbx_exec_field *all;
	const struct sbx_opt	    *o;
	char			     d[64];
	size_t			     n, i;

	all = sbx_exec_fields(&n);
	for (i = 0; i < n; i++) {
		f = &all[i];
		if (f->mcp != NULL && strcmp(f->mcp, prop) == 0) {
			if (!types_agree(f, type))
				diag("%s.%s: %s, the row says %d", tool, prop,
				    type, (int)f->type);
			return types_agree(f, type);
		}
	}
	if (strcmp(tool, "sandbox_process") != 0)
		return 0;
	if (strcmp(prop, "action") == 0 || strcmp(prop, "job") == 0)
		return 1;
	dashed(d, sizeof(d), prop);
	o = opt_find(d);
	return o != NULL && (o->subs & S_RUN) == 0;
}

static int
schema_has(const char *tool, const char *prop)
{
	json_t *s = sbx_tooldef_input(sbx_tooldef_find(tool));
	int	has;

	has = json_object_get(json_object_get(s, "properties"), prop) != NULL;
	json_decref(s);
	return has;
}

int
main(void)
{
	static const char *const     renamed[][2] = { { "secret", "secrets" },
		    { "c", "shell" } };
	const struct sbx_exec_field *all, *f;
	const struct sbx_opt	    *o;
	struct sbx_exec_req	     q;
	struct sbx_error	     e;
	const char *tools[] = { "shell_run", "sandbox_process" };
	const char *prop;
	char	    l[2], d[64], want[128];
	json_t	   *s, *p;
	size_t	    n, i, j, t;
	int	    good, renamed_ok;

	all = sbx_exec_fields(&n);

	/* The table itself. */
	good = 1;
	for (i = 0; i < n; i++)
		for (j = 0; j < i; j++) {
			if (all[i].option != NULL && all[j].option != NULL &&
			    strcmp(all[i].option, all[j].option) == 0)
				good = 0,
				diag("option %s twice", all[i].option);
			if (all[i].key != NULL && all[j].key != NULL &&
			    strcmp(all[i].key, all[j].key) == 0)
				good = 0, diag("key %s twice", all[i].key);
		}
	ok(good, "options and keys are unique");
	good = 1;
	for (i = 0; i < n; i++) {
		f = &all[i];
		if (f->option == NULL || f->key == NULL)
			continue;
		dashed(d, sizeof(d), f->key);
		renamed_ok = 0;
		for (j = 0; j < sizeof(renamed) / sizeof(renamed[0]); j++)
			renamed_ok |= strcmp(f->option, renamed[j][0]) == 0 &&
			    strcmp(f->key, renamed[j][1]) == 0;
		if (strcmp(d, f->option) != 0 && !renamed_ok)
			good = 0, diag("--%s is \"%s\"", f->option, f->key);
		if ((f->type == SBX_EXEC_F_LIMIT) != (f->limit != NULL))
			good = 0, diag("%s: a limit key iff a limit", f->key);
	}
	ok(good, "a key is its option with - as _ (but secrets, shell)");
	good = 1;
	for (i = 0; i < n; i++)
		if ((all[i].type == SBX_EXEC_F_PROG) !=
		    (all[i].key == NULL && all[i].offset == 0))
			good = 0,
			diag("row %zu: a program's option has no "
			     "key nor field",
			    i);
	ok(good, "PROG rows, and only they, have no field");
	ok(sbx_exec_field_option("network") == sbx_exec_field_key("network") &&
		sbx_exec_field_option("c") == sbx_exec_field_key("shell") &&
		sbx_exec_field_option("nosuch") == NULL &&
		sbx_exec_field_key("home") == NULL,
	    "look-ups by option and key");

	/* sbx exec's options: every one has its row, of its kind. */
	good = 1;
	for (i = 0; i < exec_table.nopt; i++) {
		o = &exec_table.opt[i];
		if ((f = sbx_exec_field_option(opt_name(o, l))) == NULL) {
			good = 0, diag("--%s: no row", opt_name(o, l));
			continue;
		}
		if (f->type != SBX_EXEC_F_PROG &&
		    (f->type == SBX_EXEC_F_BOOL) != (o->arg == SBX_OPT_NONE))
			good = 0,
			diag("--%s: a flag iff a BOOL row", opt_name(o, l));
		if (f->key != NULL && (o->subs & S_RUN) == 0)
			good = 0,
			diag("--%s: a request key, not a run's "
			     "option",
			    opt_name(o, l));
	}
	ok(good, "every option of sbx exec has its row, of its kind");
	good = 1;
	for (i = 0; i < n; i++)
		if (all[i].option != NULL && opt_find(all[i].option) == NULL)
			good = 0,
			diag("row --%s: no such option", all[i].option);
	ok(good, "every row's option is an option of sbx exec");

	/* The request envelope: every key is read, of its type. */
	for (i = 0; i < n; i++)
		if (all[i].key != NULL)
			ok(key_read(&all[i]), "request key %s (%s%s)",
			    all[i].key, all[i].option ? "--" : "no option",
			    all[i].option ? all[i].option : "");
	{
		const char *t0 = "{\"bogus\":1}";
		json_t	   *o0 = sbx_json_parse(t0, strlen(t0), 1 << 16, &e);

		sbx_exec_req_init(&q);
		ok(sbx_exec_req_json(&q, o0, &e) == -1 &&
			strcmp(e.reason, "unknown_key") == 0,
		    "a key of no row is refused");
		json_decref(o0);
		sbx_exec_req_release(&q);
	}
	/* The offsets: a request and the options fill the same fields. */
	{
		const char *t0 =
		    "{\"network\":\"proxy\",\"cwd\":\"src\","
		    "\"memory\":\"1g\",\"env\":[\"A=1\"],\"tty\":true,"
		    "\"secrets\":[\"S\"],\"timeout\":2.5,\"shell\":\"sh\","
		    "\"args\":[\"a0\"],\"fail_on_violation\":true}";
		json_t *o0 = sbx_json_parse(t0, strlen(t0), 1 << 16, &e);

		sbx_exec_req_init(&q);
		ok(sbx_exec_req_json(&q, o0, &e) == 0 && q.network != NULL &&
			strcmp(q.network, "proxy") == 0 &&
			strcmp(q.cwd, "src") == 0 && q.limit_keys.n == 2 &&
			strcmp(q.limit_keys.v[0], "memory_mib") == 0 &&
			strcmp(q.limit_keys.v[1], "1g") == 0 && q.env.n == 1 &&
			strcmp(q.env.v[0], "A=1") == 0 && q.tty == 1 &&
			q.secrets.n == 1 && strcmp(q.timeout, "2.5") == 0 &&
			strcmp(q.shell, "sh") == 0 && q.argc == 1 &&
			q.fail_on_violation == 1,
		    "a request lands in its fields");
		json_decref(o0);
		sbx_exec_req_release(&q);
		sbx_exec_req_init(&q);
		ok(sbx_exec_field_set(&q, sbx_exec_field_option("network"),
		       "outbound") == 0 &&
			sbx_exec_field_set(&q, sbx_exec_field_option("cpus"),
			    "0.5") == 0 &&
			sbx_exec_field_set(&q,
			    sbx_exec_field_option("allow-domain"),
			    "a.test") == 0 &&
			sbx_exec_field_set(&q, sbx_exec_field_option("ask"),
			    NULL) == 0 &&
			strcmp(q.network, "outbound") == 0 &&
			strcmp(q.limit_keys.v[0], "cpus") == 0 &&
			q.allow.n == 1 && q.ask == 1,
		    "options land in the same fields");
		sbx_exec_req_release(&q);
	}

	/* The MCP schemas: every property maps to a row (or to a job
	 * subcommand's option), types agree; every row given to a model is
	 * a property of shell_run (sandbox_process starts a background run:
	 * no timeout nor fail_on_violation). */
	for (t = 0; t < sizeof(tools) / sizeof(tools[0]); t++) {
		s = sbx_tooldef_input(sbx_tooldef_find(tools[t]));
		good = s != NULL;
		json_object_foreach (json_object_get(s, "properties"), prop,
		    p) {
			const char *ty =
			    json_string_value(json_object_get(p, "type"));

			if (ty == NULL || !mcp_maps(tools[t], prop, ty))
				good = 0, diag("%s.%s: no row", tools[t], prop);
		}
		ok(good, "%s: every property is a request field's", tools[t]);
		json_decref(s);
	}
	good = 1;
	for (i = 0; i < n; i++)
		if (all[i].mcp != NULL && !schema_has("shell_run", all[i].mcp))
			good = 0,
			diag("%s: no property %s", all[i].key, all[i].mcp);
	ok(good, "every row given to a model is in shell_run's schema");

	/* --network: its values and words are the network modes'. */
	o = opt_find("network");
	ok(o != NULL && strcmp(o->values, SBX_NETMODE_CHOICES) == 0,
	    "--network completes the table's modes");
	good = o != NULL;
	for (i = 0; good && i < SBX_NETMODE_COUNT; i++)
		good = strstr(o->help, sbx_netmode_name((enum sbx_netmode)i)) !=
		    NULL;
	ok(good, "--network's help names every mode");
	snprintf(want, sizeof(want), "[--network %s]", SBX_NETMODE_CHOICES);
	ok(strstr(exec_usage_text, want) != NULL, "the usage says %s", want);
	return done_testing();
}
