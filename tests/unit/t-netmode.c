/* t-netmode: the network modes' table (lib/base/netmode.c), parse and
 * format, and the lists made from it (the MCP schema's enum). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tap.h"

#include "netmode.h"
#include "tooldefs.h"

/* The names joined with sep. */
static void
joined(char *buf, size_t size, const char *sep)
{
	size_t i;

	buf[0] = '\0';
	for (i = 0; i < SBX_NETMODE_COUNT; i++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s%s",
		    i ? sep : "", sbx_netmode_name((enum sbx_netmode)i));
}

/* Does the tool's input schema take exactly the table's names as its
 * `network`, and does its description name them? */
static int
schema_enum_is_table(const char *tool)
{
	json_t	   *s, *en;
	const char *desc;
	size_t	    i;
	int	    same;

	s = sbx_tooldef_input(sbx_tooldef_find(tool));
	en = json_object_get(
	    json_object_get(json_object_get(s, "properties"), "network"),
	    "enum");
	same = json_array_size(en) == SBX_NETMODE_COUNT;
	for (i = 0; same && i < SBX_NETMODE_COUNT; i++)
		same = json_is_string(json_array_get(en, i)) &&
		    strcmp(json_string_value(json_array_get(en, i)),
			sbx_netmode_name((enum sbx_netmode)i)) == 0;
	/* Its description, for a model, names each of them. */
	desc = json_string_value(json_object_get(
	    json_object_get(json_object_get(s, "properties"), "network"),
	    "description"));
	for (i = 0; same && i < SBX_NETMODE_COUNT; i++)
		same = desc != NULL &&
		    strstr(desc, sbx_netmode_name((enum sbx_netmode)i)) != NULL;
	json_decref(s);
	return same;
}

int
main(void)
{
	static const char *const      bad[] = { "", "None", "NONE", "proxy ",
		     " proxy", "out", "outbound!", "host", "none|proxy" };
	const struct sbx_netmode_row *r;
	enum sbx_netmode	      m;
	char   buf[SBX_NETMODE_LIST_MAX], want[256], tiny[8];
	size_t i, j;
	int    rows_ok = 1, names_ok = 1, ranks_ok = 1, rt_ok = 1;

	/* The table: one row per mode, in enum order, names unique words of
	 * [a-z], ranks strictly rising (each mode reaches further). */
	for (i = 0; i < SBX_NETMODE_COUNT; i++) {
		r = sbx_netmode_row((enum sbx_netmode)i);
		rows_ok &= r->mode == (enum sbx_netmode)i && r->name != NULL;
		names_ok &= r->name != NULL && r->name[0] != '\0' &&
		    strspn(r->name, "abcdefghijklmnopqrstuvwxyz") ==
			strlen(r->name);
		for (j = 0; j < i; j++)
			names_ok &=
			    strcmp(r->name,
				sbx_netmode_name((enum sbx_netmode)j)) != 0;
		if (i > 0)
			ranks_ok &= r->rank >
			    sbx_netmode_row((enum sbx_netmode)(i - 1))->rank;
		rt_ok &= sbx_netmode_parse(r->name, &m) == 0 &&
		    m == (enum sbx_netmode)i &&
		    sbx_netmode_rank(r->name) == r->rank;
	}
	ok(rows_ok, "one row per mode, in enum order");
	ok(names_ok, "names are unique lowercase words");
	ok(ranks_ok, "ranks rise with the modes");
	ok(rt_ok, "parse(name(m)) == m, and the rank of each name");
	ok(SBX_NETMODE_NONE == 0, "none is the zero value (the default)");

	/* What each mode means (sandbox.c and exec.c act on these). */
	r = sbx_netmode_row(SBX_NETMODE_NONE);
	ok(strcmp(r->name, "none") == 0 && r->netns && !r->relay &&
		r->warning == NULL,
	    "none: own namespace, no relay, no warning");
	r = sbx_netmode_row(SBX_NETMODE_PROXY);
	ok(strcmp(r->name, "proxy") == 0 && r->netns && r->relay &&
		r->warning == NULL,
	    "proxy: own namespace and the relay");
	r = sbx_netmode_row(SBX_NETMODE_OUTBOUND);
	ok(strcmp(r->name, "outbound") == 0 && !r->netns && !r->relay &&
		r->warning != NULL &&
		strcmp(r->warning,
		    "network outbound: the "
		    "sandbox shares the host network") == 0,
	    "outbound: the host's network, and its warning");
	ok(sbx_netmode_rank("none") < sbx_netmode_rank("proxy") &&
		sbx_netmode_rank("proxy") < sbx_netmode_rank("outbound"),
	    "rank: none < proxy < outbound");

	/* Parse: exact names only. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		m = SBX_NETMODE_PROXY;
		errno = 0;
		ok(sbx_netmode_parse(bad[i], &m) == -1 && errno == EINVAL &&
			m == SBX_NETMODE_PROXY,
		    "parse refuses \"%s\"", bad[i]);
	}
	ok(sbx_netmode_parse(NULL, &m) == -1, "parse refuses NULL");
	ok(sbx_netmode_rank(NULL) == sbx_netmode_row(SBX_NETMODE_NONE)->rank &&
		sbx_netmode_rank("bogus") ==
		    sbx_netmode_row(SBX_NETMODE_NONE)->rank,
	    "an unknown name ranks as none");
	ok(sbx_netmode_row((enum sbx_netmode)SBX_NETMODE_COUNT) ==
		    sbx_netmode_row(SBX_NETMODE_NONE) &&
		sbx_netmode_row((enum sbx_netmode) - 1) ==
		    sbx_netmode_row(SBX_NETMODE_NONE),
	    "out of range: the none row");

	/* Format: the lists made from the table. */
	is_str(sbx_netmode_list(buf, sizeof(buf)), "none, proxy or outbound",
	    "the list for messages");
	memset(tiny, 'x', sizeof(tiny));
	sbx_netmode_list(tiny, sizeof(tiny));
	ok(tiny[sizeof(tiny) - 1] == '\0' && strcmp(tiny, "none, p") == 0,
	    "a short buffer is cut, NUL-terminated");
	joined(want, sizeof(want), "|");
	is_str(SBX_NETMODE_CHOICES, want,
	    "SBX_NETMODE_CHOICES: the names "
	    "joined with |");
	is_str(SBX_NETMODE_CHOICES, "none|proxy|outbound",
	    "--network's "
	    "values");
	ok(schema_enum_is_table("shell_run"),
	    "shell_run's network enum and description follow the table");
	ok(schema_enum_is_table("sandbox_process"),
	    "sandbox_process's network enum and description follow the "
	    "table");
	return done_testing();
}
