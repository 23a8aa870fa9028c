/*
 * preflightrender.c: sbx preflight's report for people (a checklist grouped
 * by area, optionally coloured) and for CI (JUnit XML).  Only reads the
 * report preflight.c built.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "buf.h"
#include "preflight.h"
#include "preflightrender.h"
#include "utf8.h"

/* Severities and statuses of a finding (preflight.h). */
#define S_OK		SBX_PREFLIGHT_SEV_OK
#define S_INFO		SBX_PREFLIGHT_SEV_INFO
#define S_WARNING	SBX_PREFLIGHT_SEV_WARNING
#define S_BLOCKED	SBX_PREFLIGHT_SEV_BLOCKED
#define T_PASSED	SBX_PREFLIGHT_ST_PASSED
#define T_MISSING	SBX_PREFLIGHT_ST_MISSING
#define T_FAILED	SBX_PREFLIGHT_ST_FAILED
#define T_UNPROVEN	SBX_PREFLIGHT_ST_UNPROVEN

/* ------------------------------------------------------------------ */
/* text */

static const char *
area_title(const char *id, size_t *plen)
{
	static const struct { const char *prefix, *title; } t[] = {
		{ "dependency", "Dependencies" },
		{ "installation", "Installation" },
		{ "host", "Host settings" },
		{ "capability", "Sandbox capabilities" },
		{ "state_root", "State root" },
		{ "configuration", "Configuration" },
		{ "images", "Images" },
		{ "daemon", "Daemons" },
	};
	size_t	 i;

	*plen = strcspn(id, ".");
	for (i = 0; i < sizeof(t) / sizeof(*t); i++)
		if (strlen(t[i].prefix) == *plen &&
		    strncmp(id, t[i].prefix, *plen) == 0)
			return t[i].title;
	return NULL;
}

static const char *
sgr(const char *sev, const char *st)
{
	if (st != NULL && strcmp(st, T_UNPROVEN) == 0)
		return "\033[35m";
	if (strcmp(sev, S_OK) == 0)
		return "\033[32m";
	if (strcmp(sev, S_INFO) == 0)
		return "\033[36m";
	if (strcmp(sev, S_WARNING) == 0)
		return "\033[33m";
	return "\033[31m";
}

static int
esc(struct sbx_buf *b, const char *s)
{
	if (s == NULL)
		s = "";
	return sbx_utf8_escape_line(b, s, strlen(s));
}

static int
text_field(struct sbx_buf *b, const char *label, const char *v)
{
	int	 rc = 0;

	if (v == NULL || *v == '\0')
		return 0;
	rc |= sbx_buf_printf(b, "      %s: ", label);
	rc |= esc(b, v);
	rc |= sbx_buf_puts(b, "\n");
	return rc;
}

#define JS(o, k)	json_string_value(json_object_get((o), (k)))

int
sbx_preflightrender_text(const json_t *r, unsigned flags, struct sbx_buf *b)
{
	const json_t	*findings = json_object_get(r, "findings");
	const char	*ready = JS(r, "overall_readiness"), *sev, *st, *id;
	const char	*title, *last = NULL, *reset = "\033[0m", *limits;
	size_t		 i, plen, lastlen = 0;
	json_t		*f;
	int		 rc = 0, color = flags & SBX_PREFLIGHT_TEXT_COLOR;
	int		 nb = 0, nu = 0, nw = 0, ni = 0, np = 0;

	ready = ready ? ready : "unproven";
	rc |= sbx_buf_printf(b, "sbx preflight: %s%s%s\n", color ?
	    (strcmp(ready, "ready") == 0 ? "\033[1;32m" : strcmp(ready,
	    "needs_setup") == 0 ? "\033[1;33m" : strcmp(ready, "unproven")
	    == 0 ? "\033[1;35m" : "\033[1;31m") : "", ready, color ? reset :
	    "");
	rc |= sbx_buf_puts(b, "state root: ");
	rc |= esc(b, JS(json_object_get(r, "root"), "path"));
	rc |= sbx_buf_puts(b, " (");
	rc |= esc(b, JS(json_object_get(r, "root"), "source"));
	rc |= sbx_buf_puts(b, ")\nconfiguration: ");
	rc |= esc(b, JS(json_object_get(r, "configuration"), "path"));
	rc |= sbx_buf_puts(b, " (");
	rc |= esc(b, JS(json_object_get(r, "configuration"), "source"));
	rc |= sbx_buf_puts(b, ")\n");
	limits = JS(r, "limits");
	if (limits != NULL) {
		rc |= sbx_buf_puts(b, "limits: ");
		rc |= sbx_buf_puts(b, strcmp(limits, "hard") == 0 ? "hard (a "
		    "cgroup holds memory and task limits)" : strcmp(limits,
		    "soft") == 0 ? "soft (warning: no cgroup can hold them "
		    "here; memory and task limits are rlimits only)" :
		    "unproven (the test cgroup could not be tried)");
		rc |= sbx_buf_puts(b, "\n");
	}

	json_array_foreach (findings, i, f) {
		sev = JS(f, "severity");
		st = JS(f, "status");
		id = JS(f, "id");
		sev = sev ? sev : "?";
		st = st ? st : "?";
		id = id ? id : "";
		if (strcmp(sev, S_BLOCKED) == 0)
			nb++;
		else if (strcmp(st, T_UNPROVEN) == 0 && strcmp(sev, S_INFO))
			nu++;
		else if (strcmp(sev, S_WARNING) == 0)
			nw++;
		else if (strcmp(sev, S_INFO) == 0)
			ni++;
		else
			np++;
		if ((flags & SBX_PREFLIGHT_TEXT_QUIET) &&
		    strcmp(st, T_PASSED) == 0)
			continue;
		title = area_title(id, &plen);
		if (last == NULL || plen != lastlen ||
		    strncmp(id, last, plen)) {
			rc |= sbx_buf_puts(b, "\n");
			if (title != NULL)
				rc |= sbx_buf_printf(b, "%s\n", title);
			else {
				rc |= sbx_utf8_escape_line(b, id, plen);
				rc |= sbx_buf_puts(b, "\n");
			}
			last = id;
			lastlen = plen;
		}
		rc |= sbx_buf_printf(b, "  %s[", color ? sgr(sev, st) : "");
		rc |= esc(b, sev);
		/* Info is worth knowing and never changes the readiness:
		 * "[info/failed]" read as a failure.  Its status stays in
		 * the JSON report. */
		if (strcmp(sev, S_INFO) != 0) {
			rc |= sbx_buf_puts(b, "/");
			rc |= esc(b, st);
		}
		rc |= sbx_buf_printf(b, "]%s ", color ? reset : "");
		rc |= esc(b, JS(f, "code"));
		rc |= sbx_buf_puts(b, ": ");
		rc |= esc(b, JS(f, "title"));
		rc |= sbx_buf_puts(b, "\n");
		if (strcmp(sev, S_OK) != 0 ||
		    (flags & SBX_PREFLIGHT_TEXT_VERBOSE)) {
			rc |= text_field(b, "detail", JS(f, "detail"));
			rc |= text_field(b, "path", JS(f, "path"));
			rc |= text_field(b, "repair",
			    JS(f, "repair_suggestion"));
		}
	}
	rc |= sbx_buf_printf(b, "\n%s: %d blocked, %d unproven, %d warning%s, "
	    "%d info, %d passed\n", ready, nb, nu, nw, nw == 1 ? "" : "s", ni,
	    np);
	return rc ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* JUnit XML */

int
sbx_preflightrender_xml_escape(struct sbx_buf *b, const char *src, size_t n)
{
	const unsigned char	*s = (const unsigned char *)src;
	unsigned long		 cp;
	size_t			 i = 0, k, j;
	char			 hex[8];
	int			 rc = 0;

	while (i < n && rc == 0) {
		switch (s[i]) {
		case '&': rc = sbx_buf_puts(b, "&amp;"); i++; continue;
		case '<': rc = sbx_buf_puts(b, "&lt;"); i++; continue;
		case '>': rc = sbx_buf_puts(b, "&gt;"); i++; continue;
		case '"': rc = sbx_buf_puts(b, "&quot;"); i++; continue;
		case '\'': rc = sbx_buf_puts(b, "&apos;"); i++; continue;
		case '\t': rc = sbx_buf_puts(b, "&#9;"); i++; continue;
		case '\n': rc = sbx_buf_puts(b, "&#10;"); i++; continue;
		case '\r': rc = sbx_buf_puts(b, "&#13;"); i++; continue;
		}
		k = sbx_utf8_decode(src + i, n - i, &cp);
		/* XML 1.0 has no way to carry C0 controls (not even as
		 * &#N;), and U+FFFE/U+FFFF are not characters; DEL and the
		 * C1 controls are legal but drive terminals. */
		if (k == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) ||
		    cp == 0xfffe || cp == 0xffff) {
			if (k == 0)
				k = 1;
			for (j = 0; j < k && rc == 0; j++) {
				snprintf(hex, sizeof(hex), "\\x%02x", s[i + j]);
				rc = sbx_buf_puts(b, hex);
			}
			i += k;
			continue;
		}
		rc = sbx_buf_append(b, src + i, k);
		i += k;
	}
	return rc;
}

static int
xml_s(struct sbx_buf *b, const char *s)
{
	if (s == NULL)
		s = "";
	return sbx_preflightrender_xml_escape(b, s, strlen(s));
}

static int
junit_body(struct sbx_buf *b, const json_t *f)
{
	int	 rc = 0;

	rc |= xml_s(b, JS(f, "severity"));
	rc |= sbx_buf_puts(b, "/");
	rc |= xml_s(b, JS(f, "status"));
	rc |= sbx_buf_puts(b, " ");
	rc |= xml_s(b, JS(f, "code"));
	rc |= sbx_buf_puts(b, ": ");
	rc |= xml_s(b, JS(f, "title"));
	if (JS(f, "detail") && *JS(f, "detail")) {
		rc |= sbx_buf_puts(b, "\ndetail: ");
		rc |= xml_s(b, JS(f, "detail"));
	}
	if (JS(f, "path")) {
		rc |= sbx_buf_puts(b, "\npath: ");
		rc |= xml_s(b, JS(f, "path"));
	}
	if (JS(f, "repair_suggestion") && *JS(f, "repair_suggestion")) {
		rc |= sbx_buf_puts(b, "\nrepair: ");
		rc |= xml_s(b, JS(f, "repair_suggestion"));
	}
	return rc;
}

static int
junit_kind(const json_t *f)
{
	const char	*sev = JS(f, "severity"), *st = JS(f, "status");

	if (sev == NULL || st == NULL)
		return 2;
	if (strcmp(st, T_UNPROVEN) == 0)
		return 2;			/* skipped */
	if (strcmp(sev, S_BLOCKED) == 0 || strcmp(sev, S_WARNING) == 0)
		return 1;			/* failure */
	return 0;
}

int
sbx_preflightrender_junit(const json_t *r, struct sbx_buf *b)
{
	const json_t	*findings = json_object_get(r, "findings");
	const char	*ts = JS(r, "generated_at"), *id;
	char		 stamp[32];
	size_t		 i, j, plen, qlen, n = json_array_size(findings);
	json_t		*f, *g;
	int		 rc = 0, fails = 0, skips = 0, k;

	snprintf(stamp, sizeof(stamp), "%s", ts ? ts : "");
	if (stamp[0] && stamp[strlen(stamp) - 1] == 'Z')
		stamp[strlen(stamp) - 1] = '\0';
	json_array_foreach (findings, i, f) {
		k = junit_kind(f);
		fails += k == 1;
		skips += k == 2;
	}
	rc |= sbx_buf_puts(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	rc |= sbx_buf_printf(b,
	    "<testsuites name=\"sbx preflight\" "
	    "tests=\"%zu\" failures=\"%d\" errors=\"0\" skipped=\"%d\">\n",
	    n, fails, skips);
	/* One suite per area, in report order (findings are grouped). */
	for (i = 0; i < n; i = j) {
		int sf = 0, ss = 0;

		f = json_array_get(findings, i);
		id = JS(f, "id") ? JS(f, "id") : "";
		plen = strcspn(id, ".");
		for (j = i; j < n; j++) {
			const char *id2;
			g = json_array_get(findings, j);
			id2 = JS(g, "id") ? JS(g, "id") : "";
			qlen = strcspn(id2, ".");
			if (qlen != plen || strncmp(id, id2, plen) != 0)
				break;
			k = junit_kind(g);
			sf += k == 1;
			ss += k == 2;
		}
		rc |= sbx_buf_puts(b, "  <testsuite name=\"sbx.preflight.");
		rc |= sbx_preflightrender_xml_escape(b, id, plen);
		rc |= sbx_buf_printf(b, "\" tests=\"%zu\" failures=\"%d\" "
		    "errors=\"0\" skipped=\"%d\" timestamp=\"", j - i, sf, ss);
		rc |= xml_s(b, stamp);
		rc |= sbx_buf_puts(b, "\">\n");
		if (i == 0) {
			rc |= sbx_buf_puts(b, "    <properties>\n"
			    "      <property name=\"overall_readiness\" value=\"");
			rc |= xml_s(b, JS(r, "overall_readiness"));
			rc |= sbx_buf_puts(b, "\"/>\n      <property "
			    "name=\"root\" value=\"");
			rc |= xml_s(b, JS(json_object_get(r, "root"), "path"));
			rc |= sbx_buf_puts(b, "\"/>\n      <property "
			    "name=\"sbx_version\" value=\"");
			rc |= xml_s(b, JS(r, "sbx_version"));
			rc |= sbx_buf_puts(b, "\"/>\n    </properties>\n");
		}
		for (; i < j; i++) {
			g = json_array_get(findings, i);
			rc |= sbx_buf_puts(b, "    <testcase classname=\""
			    "sbx.preflight.");
			rc |= sbx_preflightrender_xml_escape(b, id, plen);
			rc |= sbx_buf_puts(b, "\" name=\"");
			rc |= xml_s(b, JS(g, "id"));
			rc |= sbx_buf_puts(b, ": ");
			rc |= xml_s(b, JS(g, "code"));
			rc |= sbx_buf_puts(b, "\" time=\"0\"");
			switch (junit_kind(g)) {
			case 1:
				rc |= sbx_buf_puts(b,
				    ">\n      <failure "
				    "type=\"");
				rc |= xml_s(b, JS(g, "severity"));
				rc |= sbx_buf_puts(b, "\" message=\"");
				rc |= xml_s(b, JS(g, "title"));
				rc |= sbx_buf_puts(b, "\">");
				rc |= junit_body(b, g);
				rc |= sbx_buf_puts(b,
				    "</failure>\n"
				    "    </testcase>\n");
				break;
			case 2:
				rc |= sbx_buf_puts(b,
				    ">\n      <skipped "
				    "message=\"");
				rc |= xml_s(b, JS(g, "title"));
				rc |=
				    sbx_buf_puts(b, "\"/>\n      <system-out>");
				rc |= junit_body(b, g);
				rc |= sbx_buf_puts(b,
				    "</system-out>\n"
				    "    </testcase>\n");
				break;
			default:
				rc |= sbx_buf_puts(b, ">\n      <system-out>");
				rc |= junit_body(b, g);
				rc |= sbx_buf_puts(b,
				    "</system-out>\n"
				    "    </testcase>\n");
			}
		}
		rc |= sbx_buf_puts(b, "  </testsuite>\n");
	}
	rc |= sbx_buf_puts(b, "</testsuites>\n");
	return rc ? -1 : 0;
}
