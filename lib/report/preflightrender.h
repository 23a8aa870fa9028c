/* preflightrender.h: sbx preflight's report as text and as JUnit XML. */
#ifndef SBX_PREFLIGHTRENDER_H
#define SBX_PREFLIGHTRENDER_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"

/* Text for people: a checklist grouped by area. Every string of the
 * report is escaped (sbx_utf8_escape_line), so nothing in it can forge a
 * line or drive the terminal. */
#define SBX_PREFLIGHT_TEXT_COLOR	0x1	/* ANSI colours */
#define SBX_PREFLIGHT_TEXT_VERBOSE	0x2	/* details of passed ones too */
#define SBX_PREFLIGHT_TEXT_QUIET	0x4	/* only what is not passed */
int	sbx_preflightrender_text(const json_t *report, unsigned flags,
	    struct sbx_buf *);
/* JUnit XML: one testcase per finding; <failure> for blocked and warning,
 * <skipped> for unproven. */
int	sbx_preflightrender_junit(const json_t *report, struct sbx_buf *);
/* Append src as XML character data or attribute value: the five special
 * characters as entities, tab/newline/CR as character references, other
 * characters XML 1.0 forbids (C0 controls, U+FFFE, U+FFFF) and invalid
 * UTF-8 as the text \xHH (U+FFFD for the non-characters). */
int	sbx_preflightrender_xml_escape(struct sbx_buf *, const char *, size_t);

#endif
