/* t-bridge: the bridge's routing and name decoding, the constant-time token
 * check, the FTS5 query builder, and the per-agent stores (config, events
 * with rotation, memory ranking and syntax injection, dispatch). */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "bridge.h"
#include "bridgestore.h"
#include "fixture.h"
#include "fsutil.h"
#include "tap.h"

static void
route(const char *m, const char *path, const char *want_prefix,
    const char *want_param, unsigned want_status)
{
	const struct sbx_bridge_route *r;
	char			       param[SBX_BRIDGE_NAME_MAX + 1];
	unsigned		       st = 0;

	r = sbx_bridge_route_find(m, path, param, &st);
	if (want_prefix == NULL)
		ok(r == NULL && st == want_status, "%s %s: %u (got %u)", m,
		    path, want_status, st);
	else
		ok(r != NULL && strcmp(r->prefix, want_prefix) == 0 &&
			strcmp(r->method, m) == 0 &&
			(want_param == NULL || strcmp(param, want_param) == 0),
		    "%s %s -> %s %s", m, path, want_prefix,
		    want_param ? want_param : "");
}

/* Write s at rel beneath rootfd: appended (a torn write) or replacing. */
static void
put(int rootfd, const char *rel, const char *s, int append)
{
	int fd;

	fd = openat(rootfd, rel,
	    O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC),
	    0600);
	if (fd == -1 || sbx_fs_write_all(fd, s, strlen(s)) == -1) {
		diag("cannot write %s", rel);
		exit(1);
	}
	close(fd);
}

int
main(void)
{
	struct sbx_error e = { 0 };
	char		 root[] = "/tmp/t-bridge.XXXXXX", *x;
	json_t		*v, *a;
	long long	 id;
	int		 rootfd, i;
	struct stat	 st;

	route("GET", "/v1/whoami", "/v1/whoami", NULL, 0);
	route("GET", "/v1/config/color", "/v1/config/", "color", 0);
	route("PUT", "/v1/config/a.b-c_d", "/v1/config/", "a.b-c_d", 0);
	route("GET", "/v1/config/%41%62", "/v1/config/", "Ab", 0);
	route("POST", "/v1/memory/query", "/v1/memory/query", NULL, 0);
	route("POST", "/v1/memory", "/v1/memory", NULL, 0);
	route("GET", "/v1/dispatch/t0123", "/v1/dispatch/", "t0123", 0);
	route("GET", "/v1/config/..", NULL, NULL, 400);
	route("GET", "/v1/config/.", NULL, NULL, 400);
	route("GET", "/v1/config/%2e%2e", NULL, NULL, 400);
	route("GET", "/v1/config/%2E%2E", NULL, NULL, 400);
	route("GET", "/v1/config/a%2fb", NULL, NULL, 400);
	route("GET", "/v1/config/a/b", NULL, NULL, 400);
	route("GET", "/v1/config/a%00b", NULL, NULL, 400);
	route("GET", "/v1/config/a%0d%0ab", NULL, NULL, 400);
	route("GET", "/v1/config/a%5cb", NULL, NULL, 400);
	route("GET", "/v1/config/a%zz", NULL, NULL, 400);
	route("GET", "/v1/config/a%2", NULL, NULL, 400);
	route("GET", "/v1/config/", NULL, NULL, 404);
	route("DELETE", "/v1/whoami", NULL, NULL, 405);
	route("GET", "/v1/nope", NULL, NULL, 404);
	route("GET", "/v1/whoami/x", NULL, NULL, 404);
	{
		char longname[300];

		memset(longname, 'a', sizeof(longname) - 1);
		longname[sizeof(longname) - 1] = '\0';
		memcpy(longname, "/v1/config/", 11);
		route("GET", longname, NULL, NULL, 400);
	}

	ok(sbx_bridge_token_eq("abc", 3, "abc", 3), "token: equal");
	ok(!sbx_bridge_token_eq("abc", 3, "abd", 3), "token: one byte off");
	ok(!sbx_bridge_token_eq("abc", 3, "abc ", 4), "token: trailing space");
	ok(!sbx_bridge_token_eq("", 0, "abc", 3), "token: empty");

	/* The FTS5 expression: words only, each quoted. */
	x = sbx_bstore_fts_expr("hello world");
	ok(x && strcmp(x, "\"hello\" OR \"world\"") == 0, "fts: %s", x);
	free(x);
	x = sbx_bstore_fts_expr("\"a\" NEAR(b c) text:d *e^ -f");
	ok(x &&
		strcmp(x,
		    "\"a\" OR \"NEAR\" OR \"b\" OR \"c\" OR \"text\" OR "
		    "\"d\" OR \"e\" OR \"f\"") == 0,
	    "fts: syntax dropped: %s", x);
	free(x);
	x = sbx_bstore_fts_expr("\" * : ( ) ^");
	ok(x == NULL, "fts: nothing but syntax: no query");
	x = sbx_bstore_fts_expr("caf\xc3\xa9 na\xc3\xafve");
	ok(x && strcmp(x, "\"caf\xc3\xa9\" OR \"na\xc3\xafve\"") == 0,
	    "fts: UTF-8 words whole");
	free(x);

	if ((rootfd = t_tmpdir(root)) == -1)
		return 1;
	/* The usual umask: modes below are sbx's own, not the umask's. */
	umask(022);

	/* Config, per agent and per plugin. */
	v = json_pack("{s:i}", "n", 3);
	ok(sbx_bstore_config(rootfd, "a", NULL, "k", v, 1, &e) != NULL,
	    "config put: %s", e.message);
	json_decref(v);
	v = sbx_bstore_config(rootfd, "a", NULL, "k", NULL, 0, &e);
	ok(v && json_integer_value(json_object_get(v, "n")) == 3, "config get");
	json_decref(v);
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_config(rootfd, "b", NULL, "k", NULL, 0, &e) == NULL &&
		strcmp(e.kind, SBX_K_NOT_FOUND) == 0,
	    "config: b does not see a's");
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_config(rootfd, "a", NULL, "../x", json_true(), 1, &e) ==
		    NULL &&
		strcmp(e.reason, "bad_key") == 0,
	    "config: bad key");
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_config(rootfd, "a", "plug", "k", json_true(), 1, &e) ==
		    NULL &&
		strcmp(e.kind, SBX_K_REJECTED) == 0,
	    "config: a plugin not installed has no namespace");
	ok(fstatat(rootfd, "agents/a/bridge/config.json", &st, 0) == 0 &&
		(st.st_mode & 0777) == 0600,
	    "config.json 0600");

	/* Events: ids, since, rotation. */
	for (i = 1; i <= 50; i++) {
		v = json_pack("{s:s,s:i}", "type", "t", "data", i);
		id = sbx_bstore_append(rootfd, "a", SBX_BSTORE_EVENTS, v, 2048,
		    &e);
		json_decref(v);
		if (id != i)
			break;
	}
	ok(i == 51, "50 events, ids 1..50");
	ok(fstatat(rootfd, "agents/a/bridge/events.jsonl", &st, 0) == 0 &&
		st.st_size <= 2048 &&
		fstatat(rootfd, "agents/a/bridge/events.jsonl.1", &st, 0) == 0,
	    "rotated at the cap");
	a = sbx_bstore_events_read(rootfd, "a", SBX_BSTORE_EVENTS, 45, 100, &e);
	ok(a && json_array_size(a) == 5 &&
		json_integer_value(
		    json_object_get(json_array_get(a, 0), "id")) == 46,
	    "since 45: 46..50");
	json_decref(a);
	a = sbx_bstore_events_read(rootfd, "b", SBX_BSTORE_EVENTS, 0, 100, &e);
	ok(a && json_array_size(a) == 0, "b has no events");
	json_decref(a);

	/* A partly written last line (a full disk, a kill mid-write): cut
	 * off on the next append, which keeps the ids going (issue 30). */
	for (i = 1; i <= 3; i++) {
		v = json_pack("{s:s,s:i}", "type", "t", "data", i);
		sbx_bstore_append(rootfd, "c", SBX_BSTORE_EVENTS, v, 1u << 20,
		    &e);
		json_decref(v);
	}
	put(rootfd, "agents/c/bridge/events.jsonl", "{\"data\":4,\"id\":4,\"ty",
	    1);
	v = json_pack("{s:s,s:i}", "type", "t", "data", 5);
	id = sbx_bstore_append(rootfd, "c", SBX_BSTORE_EVENTS, v, 1u << 20, &e);
	json_decref(v);
	ok(id == 4, "after a cut line: id 4 (got %lld)", id);
	a = sbx_bstore_events_list(rootfd, "c", SBX_BSTORE_EVENTS, 3, 100, &e);
	ok(a && json_array_size(a) == 1 &&
		json_integer_value(
		    json_object_get(json_array_get(a, 0), "data")) == 5,
	    "the entry after the cut line is whole, --since 3 shows it");
	json_decref(a);
	/* A garbled complete line: listed as damaged, and the ids do not
	 * start again at 1 past it. */
	put(rootfd, "agents/c/bridge/events.jsonl", "#garbled#\n", 1);
	v = json_pack("{s:s}", "type", "t");
	id = sbx_bstore_append(rootfd, "c", SBX_BSTORE_EVENTS, v, 1u << 20, &e);
	json_decref(v);
	ok(id == 5, "past a garbled line: id 5 (got %lld)", id);
	put(rootfd, "agents/c/bridge/events.jsonl", "#garbled#\n", 1);
	v = json_pack("{s:s}", "type", "t");
	id = sbx_bstore_append(rootfd, "c", SBX_BSTORE_EVENTS, v, 1u << 20, &e);
	json_decref(v);
	ok(id == 6, "a garbled last line: id 6 (got %lld)", id);
	a = sbx_bstore_events_list(rootfd, "c", SBX_BSTORE_EVENTS, 4, 100, &e);
	ok(a && json_array_size(a) == 4 &&
		json_is_true(
		    json_object_get(json_array_get(a, 0), "damaged")) &&
		json_integer_value(
		    json_object_get(json_array_get(a, 0), "line")) == 5 &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(a, 0), "file")),
		    "agents/c/bridge/events.jsonl") == 0 &&
		json_integer_value(
		    json_object_get(json_array_get(a, 1), "id")) == 5 &&
		json_is_true(json_object_get(json_array_get(a, 2), "damaged")),
	    "events list: the damaged lines where they stand, with file and "
	    "line");
	json_decref(a);
	a = sbx_bstore_events_read(rootfd, "c", SBX_BSTORE_EVENTS, 4, 100, &e);
	ok(a && json_array_size(a) == 2, "the bridge's own read skips them");
	json_decref(a);
	/* Rotated, and the new file holds only a cut line: the ids go on
	 * from events.jsonl.1. */
	ok(renameat(rootfd, "agents/c/bridge/events.jsonl", rootfd,
	       "agents/c/bridge/events.jsonl.1") == 0,
	    "rotate by hand");
	put(rootfd, "agents/c/bridge/events.jsonl", "{\"id\":7,", 0);
	v = json_pack("{s:s}", "type", "t");
	id = sbx_bstore_append(rootfd, "c", SBX_BSTORE_EVENTS, v, 1u << 20, &e);
	json_decref(v);
	ok(id == 7, "a cut line alone after rotation: id 7 (got %lld)", id);
	ok(fstatat(rootfd, "agents/c/bridge/events.jsonl", &st, 0) == 0 &&
		(st.st_mode & 0777) == 0600,
	    "events.jsonl 0600");

	/* Memory: ranking, salience, injection, eviction. */
	v = json_pack("{s:s,s:f}", "text", "rust borrow checker notes",
	    "salience", 0.2);
	ok(sbx_bstore_memory_add(rootfd, "a", v, 3, &e) > 0, "memory add: %s",
	    e.message);
	json_decref(v);
	v = json_pack("{s:s,s:f,s:[s]}", "text", "borrow money from the bank",
	    "salience", 1.0, "tags", "finance");
	ok(sbx_bstore_memory_add(rootfd, "a", v, 3, &e) > 0, "memory add 2");
	json_decref(v);
	v = json_pack("{s:s}", "text", "borrow");
	a = sbx_bstore_memory_query(rootfd, "a", v, &e);
	json_decref(v);
	ok(a && json_array_size(a) == 2 &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(a, 0), "text")),
		    "borrow money from the bank") == 0,
	    "salience ranks first");
	json_decref(a);
	{
		static const char *const inj[] = { "\"", "*", "NEAR(a b)",
			"text:x", "tags:finance", "a\" OR \"b", "')--",
			"{text}", "rank MATCH", "^borrow", "borrow*" };
		int			 good = 1;

		for (i = 0; i < (int)(sizeof(inj) / sizeof(*inj)); i++) {
			memset(&e, 0, sizeof(e));
			v = json_pack("{s:s}", "text", inj[i]);
			a = sbx_bstore_memory_query(rootfd, "a", v, &e);
			json_decref(v);
			if (a == NULL &&
			    (e.reason == NULL ||
				strcmp(e.reason, "empty_query") != 0))
				good = 0;
			json_decref(a);
		}
		ok(good, "FTS5 syntax in queries: no SQL or FTS5 error");
	}
	v = json_pack("{s:s}", "text", "tags:finance");
	a = sbx_bstore_memory_query(rootfd, "a", v, &e);
	json_decref(v);
	ok(a && json_array_size(a) == 1, "a column filter is a word: %zu",
	    a ? json_array_size(a) : 0);
	json_decref(a);
	for (i = 0; i < 3; i++) {
		v = json_pack("{s:s,s:f}", "text", "filler entry", "salience",
		    0.5);
		sbx_bstore_memory_add(rootfd, "a", v, 3, &e);
		json_decref(v);
	}
	v = json_pack("{s:s}", "text", "rust");
	a = sbx_bstore_memory_query(rootfd, "a", v, &e);
	json_decref(v);
	ok(a && json_array_size(a) == 0, "the least salient evicted past max");
	json_decref(a);
	v = json_pack("{s:s}", "text", "borrow");
	a = sbx_bstore_memory_query(rootfd, "b", v, &e);
	json_decref(v);
	ok(a && json_array_size(a) == 0, "b's memory is its own");
	json_decref(a);

	/* Dispatch. */
	v = json_pack("{s:s}", "task", "do it");
	a = sbx_bstore_task_add(rootfd, "a", v, &e);
	json_decref(v);
	ok(a &&
		sbx_bstore_task_id_valid(
		    json_string_value(json_object_get(a, "id"))),
	    "task queued");
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_task_get(rootfd, "b",
	       json_string_value(json_object_get(a, "id")), &e) == NULL &&
		strcmp(e.kind, SBX_K_NOT_FOUND) == 0,
	    "b cannot read a's task");
	v = sbx_bstore_task_done(rootfd, "a",
	    json_string_value(json_object_get(a, "id")), json_true(), &e);
	ok(v &&
		strcmp(json_string_value(json_object_get(v, "status")),
		    "done") == 0,
	    "task done");
	json_decref(v);
	json_decref(a);
	ok(!sbx_bstore_task_id_valid("t../../../etc") &&
		!sbx_bstore_task_id_valid("T0123456789abcdef") &&
		!sbx_bstore_task_id_valid("t0123456789ABCDEF"),
	    "task ids");

	/* Damaged records: listed, and every refusal names the file. */
	(void)mkdirat(rootfd, "agents/a/bridge/tasks", 0700);
	put(rootfd, "agents/a/bridge/tasks/t00000000000000aa.json",
	    "{\"id\":\"t00000", 0);
	put(rootfd, "agents/a/bridge/tasks/t00000000000000bb.json",
	    "{\"id\":\"t00000000000000bb\"}", 0);
	memset(&e, 0, sizeof(e));
	a = sbx_bstore_task_list(rootfd, "a", &e);
	ok(a && json_array_size(a) == 3 &&
		json_is_true(
		    json_object_get(json_array_get(a, 1), "damaged")) &&
		json_is_true(
		    json_object_get(json_array_get(a, 2), "damaged")) &&
		strcmp(json_string_value(
			   json_object_get(json_array_get(a, 1), "file")),
		    "agents/a/bridge/tasks/t00000000000000aa.json") == 0,
	    "tasks: the good one, then the damaged ones listed as such");
	json_decref(a);
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_task_get(rootfd, "a", "t00000000000000aa", &e) == NULL &&
		strstr(e.message,
		    "agents/a/bridge/tasks/t00000000000000aa.json") != NULL &&
		e.hint[0] != '\0',
	    "a damaged task's refusal names it and says how to repair: %s",
	    e.message);
	put(rootfd, "agents/a/plugins.json", "{\"plugins\":[", 0);
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_plugin(rootfd, "a", "plug", &e) == NULL &&
		strstr(e.message, "agents/a/plugins.json") != NULL &&
		e.hint[0] != '\0',
	    "a damaged plugins.json is named: %s", e.message);
	put(rootfd, "agents/a/bridge/config.json", "", 0);
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_config(rootfd, "a", NULL, "k", NULL, 0, &e) == NULL &&
		strstr(e.message, "agents/a/bridge/config.json") != NULL &&
		e.hint[0] != '\0',
	    "a damaged bridge config is named: %s", e.message);
	ok(fstatat(rootfd, "agents/a/bridge/memory.db", &st, 0) == 0 &&
		(st.st_mode & 0777) == 0600,
	    "memory.db 0600 (mode %o)", (unsigned)(st.st_mode & 0777));

	/* A garbled memory.db (agent d, never opened before): named, with
	 * the repair. */
	(void)mkdirat(rootfd, "agents/d", 0700);
	(void)mkdirat(rootfd, "agents/d/bridge", 0700);
	put(rootfd, "agents/d/bridge/memory.db",
	    "SQLite format 3\nthis is not a database at all, garbled", 0);
	v = json_pack("{s:s}", "text", "x");
	memset(&e, 0, sizeof(e));
	ok(sbx_bstore_memory_add(rootfd, "d", v, 10, &e) == -1 &&
		strstr(e.message, "agents/d/bridge/memory.db") != NULL &&
		strstr(e.hint, "memory.db aside") != NULL,
	    "a garbled memory.db is named: %s", e.message);
	json_decref(v);

	sbx_fs_rm_tree_at(AT_FDCWD, root, &e);
	return done_testing();
}
