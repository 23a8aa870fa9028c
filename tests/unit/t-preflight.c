/* t-preflight.c: readiness rules, renderers and escaping of sbx-preflight. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "preflight.h"
#include "preflightrender.h"
#include "tap.h"

static json_t *
F(const char *id, const char *sev, const char *st)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", id, "code",
	    "c", "severity", sev, "status", st, "title", "t", "detail", "",
	    "repair_suggestion", "");
}

/* The readiness of findings given as (severity, status) pairs. */
static const char *
ready_of(int n, ...)
{
	static char	 out[32];
	va_list		 ap;
	json_t		*a = json_array();
	int		 i;

	va_start(ap, n);
	for (i = 0; i < n; i++) {
		const char *sev = va_arg(ap, const char *);
		const char *st = va_arg(ap, const char *);
		json_array_append_new(a, F("x.y", sev, st));
	}
	va_end(ap);
	snprintf(out, sizeof(out), "%s", sbx_preflight_readiness(a));
	json_decref(a);
	return out;
}

static char *
xml(const char *s, size_t n)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	sbx_preflightrender_xml_escape(&b, s, n);
	return sbx_buf_detach(&b);
}

static int
has_raw_control(const char *s, int allow_nl)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && !(allow_nl && *s == '\n')) ||
		    *s == 0x7f)
			return 1;
	return 0;
}

static const char hostile[] = "\n\"ready\": true,\x1b[2K\rREADY <&'\\>\x01";

static json_t *
hostile_report(void)
{
	json_t	*r, *fs;

	fs = json_array();
	json_array_append_new(fs, F("state_root.root", "ok", "passed"));
	json_array_append_new(fs, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,"
	    "s:s}", "id", "images.unexpected_entry", "code",
	    "image_unexpected_entry", "severity", "info", "status", "failed",
	    "title", hostile, "detail", hostile, "repair_suggestion", hostile,
	    "path", hostile));
	json_array_append_new(fs, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
	    "id", "configuration.sandbox_json", "code", "config_invalid",
	    "severity", "warning", "status", "failed", "title", "bad",
	    "detail", hostile, "repair_suggestion", "fix"));
	json_array_append_new(fs, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
	    "id", "capability.seccomp", "code", "capability_unproven",
	    "severity", "warning", "status", "unproven", "title", "t",
	    "detail", "", "repair_suggestion", ""));
	r = json_pack("{s:i,s:s,s:s,s:s,s:{s:s,s:s},s:{s:s,s:s},s:o}",
	    "schema_version", 1, "generated_at", "2025-01-01T00:00:00Z",
	    "sbx_version", "0.1.0", "overall_readiness", "unproven", "root",
	    "path", hostile, "source", "flag_override", "configuration",
	    "path", hostile, "source", "invalid_using_defaults", "findings",
	    fs);
	return r;
}

int
main(void)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*r, *a;
	char		 ver[64], *s;
	const char	*line;
	int		 forged;

	/* Readiness: first match wins. */
	is_str(ready_of(1, "ok", "passed"), "ready", "all passed: ready");
	is_str(ready_of(2, "ok", "passed", "info", "missing"), "ready",
	    "info never changes readiness");
	is_str(ready_of(2, "ok", "passed", "info", "unproven"), "ready",
	    "an unproven info finding does not either");
	is_str(ready_of(2, "ok", "passed", "warning", "missing"),
	    "needs_setup", "a warning: needs_setup");
	is_str(ready_of(2, "warning", "failed", "warning", "unproven"),
	    "unproven", "unproven beats warning");
	is_str(ready_of(3, "warning", "unproven", "blocked", "failed", "ok",
	    "passed"), "blocked", "blocked beats everything");
	is_str(ready_of(1, "blocked", "missing"), "blocked",
	    "a missing blocker is blocked");
	is_str(ready_of(1, "ok", "missing"), "unproven",
	    "ok with status missing is never a pass");
	is_str(ready_of(1, "ok", "unproven"), "unproven",
	    "ok with status unproven is never a pass");
	is_str(ready_of(1, "ok", "bogus"), "unproven", "unknown status");
	is_str(ready_of(1, "fatal", "failed"), "unproven", "unknown severity");
	is_str(ready_of(0), "unproven", "no findings prove nothing");
	a = json_array();
	json_array_append_new(a, json_pack("{s:s}", "id", "x"));
	is_str(sbx_preflight_readiness(a), "unproven",
	    "a finding without severity counts as unproven");
	json_decref(a);
	is_str(sbx_preflight_readiness(NULL), "unproven", "NULL");

	is_int(sbx_preflight_exit_status("ready"), 0, "exit 0 ready");
	is_int(sbx_preflight_exit_status("needs_setup"), 1, "exit 1");
	is_int(sbx_preflight_exit_status("unproven"), 2, "exit 2");
	is_int(sbx_preflight_exit_status("blocked"), 3, "exit 3");
	is_int(sbx_preflight_exit_status("bogus"), 2, "unknown: unproven");

	/* Versions. */
	ok(sbx_preflight_version_cmp("0.4.0", "0.4.1") < 0, "0.4.0 < 0.4.1");
	ok(sbx_preflight_version_cmp("0.4.1", "0.4.1") == 0, "0.4.1 == 0.4.1");
	ok(sbx_preflight_version_cmp("0.10.0", "0.4.1") > 0, "0.10.0 > 0.4.1");
	ok(sbx_preflight_version_cmp("0.11", "0.11.0") == 0, "0.11 == 0.11.0");
	ok(sbx_preflight_version_cmp("0.11.1", "0.11.0") > 0,
	    "0.11.1 > 0.11.0");
	ok(sbx_preflight_version_cmp("1.0", "0.99.99") > 0, "1.0 > 0.99.99");
	ok(sbx_preflight_version_of("bwrap", "bubblewrap 0.8.0\n", 17, ver,
	    sizeof(ver)) == 0 && strcmp(ver, "0.8.0") == 0,
	    "bwrap --version");
	s = "socat by Gerhard Rieger and contributors - see www.dest-unreach."
	    "org\nsocat version 1.7.4.4 on 06 Nov 2022 08:15:51\n";
	ok(sbx_preflight_version_of("socat", s, strlen(s), ver, sizeof(ver))
	    == 0 && strcmp(ver, "1.7.4.4") == 0, "socat -V");
	s = "ripgrep 13.0.0\n-SIMD -AVX (compiled)\n";
	ok(sbx_preflight_version_of("rg", s, strlen(s), ver, sizeof(ver))
	    == 0 && strcmp(ver, "13.0.0") == 0, "rg --version");
	ok(sbx_preflight_version_of("bwrap", "bubblewrap x\n", 13, ver,
	    sizeof(ver)) == -1, "no version: -1");
	ok(sbx_preflight_version_of("bwrap", "bubblewrap 7\n", 13, ver,
	    sizeof(ver)) == -1, "a bare number is not a version");
	ok(sbx_preflight_version_of("bwrap", "", 0, ver, sizeof(ver)) == -1,
	    "empty output: -1");

	/* XML escaping. */
	s = xml("a&b<c>d\"e'f", 11);
	is_str(s, "a&amp;b&lt;c&gt;d&quot;e&apos;f", "the five entities");
	free(s);
	s = xml("x\ty\nz\r", 6);
	is_str(s, "x&#9;y&#10;z&#13;", "tab, newline, CR as references");
	free(s);
	s = xml("\x1b[2K\x01", 5);
	is_str(s, "\\x1b[2K\\x01", "C0 controls as text");
	free(s);
	s = xml("a\0b", 3);
	is_str(s, "a\\x00b", "NUL as text");
	free(s);
	s = xml("\xff\xfe", 2);
	is_str(s, "\\xff\\xfe", "invalid UTF-8 as text");
	free(s);
	s = xml("\xef\xbf\xbe", 3);
	is_str(s, "\\xef\\xbf\\xbe", "U+FFFE is not an XML character");
	free(s);
	s = xml("\xc2\x9b", 2);
	is_str(s, "\\xc2\\x9b", "C1 CSI escaped");
	free(s);
	s = xml("\x7f", 1);
	is_str(s, "\\x7f", "DEL escaped");
	free(s);
	s = xml("h\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", 12);
	is_str(s, "h\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80",
	    "valid UTF-8 passes through");
	free(s);
	s = xml("\xed\xa0\x80", 3);
	is_str(s, "\\xed\\xa0\\x80", "surrogates are invalid");
	free(s);

	/* Renderers on hostile strings. */
	r = hostile_report();
	ok(sbx_preflightrender_text(r, 0, &b) == 0, "text renders");
	ok(strchr(b.p, '\x1b') == NULL, "text: no raw ESC");
	ok(!has_raw_control(b.p, 1), "text: no raw control characters");
	forged = 0;
	for (line = b.p; line != NULL && *line; ) {
		if (strncmp(line, "\"ready\"", 7) == 0 ||
		    strncmp(line, "READY", 5) == 0)
			forged = 1;
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	ok(!forged, "text: no forged line");
	ok(strstr(b.p, "\\x0a\"ready\": true,\\x1b[2K\\x0dREADY") != NULL,
	    "text: the hostile string is shown escaped");
	ok(strstr(b.p, "  [warning/unproven] capability_unproven: t\n") !=
	    NULL, "text: [severity/status] code: title");
	sbx_buf_reset(&b);
	ok(sbx_preflightrender_text(r, SBX_PREFLIGHT_TEXT_QUIET, &b) == 0 &&
	    strstr(b.p, "[ok/passed]") == NULL, "quiet: no passed lines");
	sbx_buf_reset(&b);
	ok(sbx_preflightrender_text(r, SBX_PREFLIGHT_TEXT_COLOR, &b) == 0 &&
	    strstr(b.p, "\033[33m[warning/failed]\033[0m") != NULL,
	    "colour only when asked");
	sbx_buf_reset(&b);

	ok(sbx_preflightrender_junit(r, &b) == 0, "junit renders");
	ok(!has_raw_control(b.p, 1), "junit: no raw control characters");
	ok(strstr(b.p, "<testsuites name=\"sbx preflight\" tests=\"4\" "
	    "failures=\"1\" errors=\"0\" skipped=\"1\">") != NULL,
	    "junit: counts (warning failed = failure, unproven = skipped, "
	    "info = pass)");
	ok(strstr(b.p, "<skipped message=\"t\"/>") != NULL,
	    "junit: unproven is skipped");
	ok(strstr(b.p, "<failure type=\"warning\" message=\"bad\">") != NULL,
	    "junit: a warning is a failure");
	ok(strstr(b.p, "&#10;&quot;ready&quot;: true,\\x1b[2K&#13;READY "
	    "&lt;&amp;&apos;\\&gt;\\x01") != NULL,
	    "junit: the hostile string is escaped");
	ok(strstr(b.p, "timestamp=\"2025-01-01T00:00:00\"") != NULL,
	    "junit: timestamp without the zone letter");
	sbx_buf_release(&b);
	json_decref(r);
	return done_testing();
}
