/*
 * proxy-ask.c: sbx proxy asks and sbx proxy answer, the host side of
 * asking about unknown names (issue 20).  The proxy holds a request for a
 * name no rule allows or denies (agent setting network_ask, or sbx exec
 * --ask) and publishes a pending decision; these read and answer them on
 * the proxy's control socket, so only the owner of the state root can,
 * and an id is only ever known to the proxy of its own root.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cmd.h"
#include "proxy-int.h"
#include "proxyclient.h"
#include "utf8.h"

/* A string of the proxy's answer, escaped for one line of a terminal: the
 * proxy checked the names, this does not rely on it. */
static void
safe(struct sbx_buf *b, const json_t *a, const char *key)
{
	const char	*s = json_string_value(json_object_get(a, key));

	if (s == NULL)
		s = "?";
	(void)sbx_utf8_escape_line(b, s, strlen(s));
}

/* A pending ask, for people: "ID agent alice asks example.org:443 (run R,
 * 3 s)". */
static void
ask_line(struct sbx_buf *b, const json_t *a)
{
	safe(b, a, "id");
	sbx_buf_printf(b, " agent ");
	safe(b, a, "agent");
	sbx_buf_printf(b, " asks ");
	safe(b, a, "host");
	sbx_buf_printf(b, ":%lld (run ",
	    json_integer_value(json_object_get(a, "port")));
	safe(b, a, "run");
	sbx_buf_printf(b, ", %lld s)\n",
	    json_integer_value(json_object_get(a, "age_ms")) / 1000);
}

/* --follow: the proxy's lines as they come, as JSON lines (the first, the
 * pending asks, one per line too), until it or we go. */
static int
follow(int ctl)
{
	char	 buf[4096];
	ssize_t	 r;

	for (;;) {
		r = read(ctl, buf, sizeof(buf));
		if (r <= 0)
			return 0;
		if (fwrite(buf, 1, (size_t)r, stdout) != (size_t)r ||
		    fflush(stdout) == EOF)
			return SBX_EX_IOERR;
	}
}

int
proxy_cmd_asks(struct sbx_root *root)
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	json_t			*ans, *asks, *a;
	size_t			 i;
	int			 ctl;

	memset(&e, 0, sizeof(e));
	if (root->fd < 0 ||
	    (ctl = sbx_proxyclient_connect(root->fd, &e)) == -1) {
		/* No proxy: nothing is held. */
		if (O.follow)
			sbx_cmd_die(&e);
		sbx_cmd_done(json_pack("{s:[]}", "asks"), NULL);
		return 0;
	}
	ans = sbx_proxyclient_call(ctl,
	    json_pack("{s:s,s:b}", "op", "asks", "follow", O.follow), -1, 5000,
	    &e);
	if (ans == NULL)
		sbx_cmd_die(&e);
	asks = json_object_get(ans, "asks");
	if (O.follow) {
		json_array_foreach (asks, i, a) {
			json_t	*l = json_deep_copy(a);
			char	*s;

			json_object_set_new(l, "event", json_string("ask"));
			s = json_dumps(l, JSON_COMPACT | JSON_SORT_KEYS);
			json_decref(l);
			if (s != NULL)
				printf("%s\n", s);
			free(s);
		}
		fflush(stdout);
		json_decref(ans);
		i = (size_t)follow(ctl);
		close(ctl);
		return (int)i;
	}
	close(ctl);
	json_array_foreach (asks, i, a)
		ask_line(&b, a);
	if (b.len > 0)
		b.p[--b.len] = '\0';	/* sbx_cmd_done adds the newline */
	sbx_cmd_done(json_pack("{s:O}", "asks", asks),
	    b.len > 0 ? b.p : (O.quiet ? NULL : "sbx-proxy: no pending asks"));
	sbx_buf_release(&b);
	json_decref(ans);
	return 0;
}

int
proxy_cmd_answer(struct sbx_root *root, const char *id, const char *answer)
{
	struct sbx_error	 e;
	json_t			*ans;
	char			 text[160];
	int			 ctl;

	memset(&e, 0, sizeof(e));
	if (strcmp(answer, "allow-once") != 0 &&
	    strcmp(answer, "allow-always") != 0 && strcmp(answer, "deny") !=
	    0 && strcmp(answer, "deny-always") != 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "answer", "bad_answer",
		    "the answer must be allow-once, allow-always, deny or "
		    "deny-always");
		sbx_cmd_die(&e);
	}
	if (root->fd < 0 || (ctl = sbx_proxyclient_connect(root->fd, &e)) ==
	    -1) {
		sbx_error_set(&e, SBX_K_NOT_FOUND, "id", "no_such_ask",
		    "no pending ask `%.40s`: the proxy of this state root is "
		    "not running", id);
		sbx_cmd_die(&e);
	}
	ans = sbx_proxyclient_call(ctl, json_pack("{s:s,s:s,s:s}", "op",
	    "answer", "id", id, "answer", answer), -1, 5000, &e);
	close(ctl);
	if (ans == NULL)
		sbx_cmd_die(&e);
	snprintf(text, sizeof(text), "sbx-proxy: %.40s: %s (%lld released)",
	    id, answer, json_integer_value(json_object_get(ans, "released")));
	sbx_cmd_done(json_pack("{s:s,s:s,s:O}", "id", id, "answer", answer,
	    "released", json_object_get(ans, "released")), text);
	json_decref(ans);
	return 0;
}
