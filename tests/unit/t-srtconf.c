/* t-srtconf: srt's argument quoting, ignoreViolations, the control line's
 * network policy, and mapping rules the data-driven test (0681) cannot
 * see from outside (the normalised paths of hostile spellings). */
#include "tap.h"

#include <sys/stat.h>

#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include "buf.h"
#include "srtconf.h"

static char	 dir[] = "/tmp/t-srtconf.XXXXXX";

static int
quoted(char *const *argv, int argc, const char *want)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	int		 r;

	r = sbx_srtconf_quote(argv, argc, &b) == 0 && b.p != NULL &&
	    strcmp(b.p, want) == 0;
	if (!r)
		diag("got [%s] want [%s]", b.p ? b.p : "(null)", want);
	sbx_buf_release(&b);
	return r;
}

static json_t *
j(const char *s)
{
	json_error_t	 je;

	return json_loads(s, JSON_REJECT_DUPLICATES, &je);
}

static void
test_quote(void)
{
	char	*a1[] = { "echo", "hi" };
	char	*a2[] = { "printf", "%s|", "a b", "it's", "$HOME", "" };
	char	*a3[] = { "x;rm -rf /", "`id`", "$(id)", "a\nb" };

	ok(quoted(a1, 2, "echo hi"), "quote: plain words stay");
	ok(quoted(a2, 6, "printf '%s|' 'a b' 'it'\\''s' '$HOME' ''"),
	    "quote: spaces, quotes, $ and the empty word");
	ok(quoted(a3, 4, "'x;rm -rf /' '`id`' '$(id)' 'a\nb'"),
	    "quote: ; ` $( and a newline are inert");
}

static void
test_ignored(void)
{
	json_t	*ig = j("{\"*\":[\"/usr/bin\"],\"git push\":[\"/tmp/x\"]}");

	ok(sbx_srtconf_ignored(ig, "ls", "/usr/bin/ls") == 1,
	    "ignored: * matches every command");
	ok(sbx_srtconf_ignored(ig, "ls", "/usr/binary") == 0,
	    "ignored: by component, not by string prefix");
	ok(sbx_srtconf_ignored(ig, "git push origin", "/tmp/x/y") == 1 &&
	    sbx_srtconf_ignored(ig, "git pull", "/tmp/x/y") == 0,
	    "ignored: a command pattern the command contains");
	ok(sbx_srtconf_ignored(NULL, "ls", "/usr/bin") == 0,
	    "ignored: no ignoreViolations, nothing ignored");
	json_decref(ig);
}

static void
test_netpolicy(void)
{
	struct sbx_error	 e;
	json_t			*s, *p;

	s = j("{\"network\":{\"allowedDomains\":[\"a.example.com\","
	    "\"*.b.example.com:8443\"],\"deniedDomains\":[\"c.example.com\"]}}");
	p = sbx_srtconf_netpolicy(s, dir, dir, &e);
	ok(p != NULL && json_array_size(json_object_get(p, "allow")) == 2 &&
	    strcmp(json_string_value(json_array_get(json_object_get(p,
	    "deny"), 0)), "c.example.com") == 0,
	    "control line: allow and deny");
	json_decref(p);
	json_decref(s);
	s = j("{\"network\":{\"allowedDomains\":[\"a.example.com\"],"
	    "\"deniedDomains\":[\"*\"]}}");
	p = sbx_srtconf_netpolicy(s, dir, dir, &e);
	ok(p != NULL && json_array_size(json_object_get(p, "allow")) == 0,
	    "control line: a denied * empties the allowlist");
	json_decref(p);
	json_decref(s);
	s = j("{\"network\":{\"allowedDomains\":[\"a.example.com\"],"
	    "\"bogus\":1}}");
	p = sbx_srtconf_netpolicy(s, dir, dir, &e);
	ok(p == NULL && strcmp(e.reason, "unknown_key") == 0 &&
	    strcmp(e.field, "network.bogus") == 0,
	    "control line: an unknown key refuses the whole line");
	json_decref(s);
	s = j("{}");
	p = sbx_srtconf_netpolicy(s, dir, dir, &e);
	ok(p != NULL && json_array_size(json_object_get(p, "allow")) == 0,
	    "control line: no network, nothing allowed");
	json_decref(p);
	json_decref(s);
}

static void
test_paths(void)
{
	struct sbx_srtconf	 c;
	struct sbx_error	 e;
	char			 w[PATH_MAX], want[PATH_MAX];
	json_t			*s;

	snprintf(w, sizeof(w), "%s/w", dir);
	mkdir(w, 0700);
	sbx_srtconf_init(&c);
	/* .. above / stays at /; repeated slashes and dots collapse. */
	s = j("{\"filesystem\":{\"allowWrite\":[\"./w//.\","
	    "\"../../../../../../..\"]}}");
	ok(sbx_srtconf_map(s, dir, dir, &c, &e) == -1 &&
	    strcmp(e.reason, "unsupported_value") == 0,
	    "allowWrite of / (.. past the root) is refused");
	json_decref(s);
	sbx_srtconf_release(&c);
	s = j("{\"filesystem\":{\"allowWrite\":[\"./w//.\", \"w/../w\"]}}");
	ok(sbx_srtconf_map(s, dir, dir, &c, &e) == 0 && c.writable.n == 1 &&
	    realpath(w, want) != NULL && strcmp(c.writable.v[0], want) == 0,
	    "allowWrite: spellings of one directory make one workdir");
	ok(strncmp(c.agent, "srt-", 4) == 0 &&
	    strlen(c.agent) == SBX_SRTCONF_AGENT_LEN,
	    "the agent is srt- and 16 hex digits");
	json_decref(s);
	sbx_srtconf_release(&c);
	s = j("{\"filesystem\":{\"denyRead\":[\"a\\u0000b\"]}}");
	ok(s == NULL || (sbx_srtconf_map(s, dir, dir, &c, &e) == -1 &&
	    strcmp(e.reason, "invalid_path") == 0),
	    "a path with a NUL byte is refused");
	json_decref(s);
	sbx_srtconf_release(&c);
	rmdir(w);
}

int
main(void)
{
	if (mkdtemp(dir) == NULL) {
		printf("Bail out! no temp dir\n");
		return 1;
	}
	test_quote();
	test_ignored();
	test_netpolicy();
	test_paths();
	rmdir(dir);
	return done_testing();
}
