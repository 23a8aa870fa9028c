/* preflight.h: the typed readiness report of sbx-preflight(1).
 *
 * sbx_preflight_run() proves what it can by doing (a probe sandbox, a test
 * cgroup, a temp file in each directory) and reads the rest (versions,
 * sysctls, modes) without changing anything the user owns: the state root
 * is never created or repaired, and a probe that cannot use it runs in a
 * temporary one.  The report is a JSON object (keys in sbx-preflight(1));
 * the renderers turn it into text for people and JUnit XML for CI.
 */
#ifndef SBX_PREFLIGHT_H
#define SBX_PREFLIGHT_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "error.h"

/* A finding's severity and status. */
#define SBX_PREFLIGHT_SEV_OK		"ok"
#define SBX_PREFLIGHT_SEV_INFO		"info"
#define SBX_PREFLIGHT_SEV_WARNING	"warning"
#define SBX_PREFLIGHT_SEV_BLOCKED	"blocked"
#define SBX_PREFLIGHT_ST_PASSED		"passed"
#define SBX_PREFLIGHT_ST_MISSING	"missing"
#define SBX_PREFLIGHT_ST_FAILED		"failed"
#define SBX_PREFLIGHT_ST_UNPROVEN	"unproven"

#define SBX_PREFLIGHT_SCHEMA		1
#define SBX_PREFLIGHT_MIN_FREE		(1ULL << 30)
#define SBX_PREFLIGHT_BWRAP_MIN		"0.4.1"

/* Exit statuses: the readiness. */
#define SBX_PREFLIGHT_EX_READY		0
#define SBX_PREFLIGHT_EX_NEEDS_SETUP	1
#define SBX_PREFLIGHT_EX_UNPROVEN	2
#define SBX_PREFLIGHT_EX_BLOCKED	3

struct sbx_preflight_opts {
	const char	*root_path;	/* resolved state root (absolute) */
	const char	*root_source;	/* flag_override, ... */
	const char	*agent;		/* validated */
	int		 agent_flag;	/* --agent given: repeat it in repairs */
	const char	*exec_dir;	/* where sbx-exec and sbx-init are */
	const char	*front_end;	/* the sbx front-end, or NULL */
	const char	*sysctl_dir;	/* /proc/sys, or a mock for tests */
	const char	*tmp_dir;	/* for a temporary probe root */
	int		 deep;		/* --deep */
	int		 probe_timeout_ms;	/* 0: 15 s */
};

/* Build the report. Returns 0 (*report set; caller decrefs) or -1 on an
 * internal error (out of memory), e filled. Findings, not errors, describe
 * everything the machine lacks. */
int		 sbx_preflight_run(const struct sbx_preflight_opts *,
		    json_t **report, struct sbx_error *);

/* The readiness of an array of findings, first match wins: any severity
 * blocked -> "blocked"; any status unproven (severity other than info) ->
 * "unproven"; any severity warning -> "needs_setup"; else "ready". A finding
 * that is malformed (unknown severity or status, or severity ok with a
 * status other than passed) counts as unproven: nothing is passed unless
 * it says so. */
const char	*sbx_preflight_readiness(const json_t *findings);
/* 0 ready, 1 needs_setup, 2 unproven, 3 blocked (anything else: 2). */
int		 sbx_preflight_exit_status(const char *readiness);

/* Compare dotted numeric versions ("0.11.1" < "0.12"); missing parts
 * are 0, anything after the numbers is ignored. */
int		 sbx_preflight_version_cmp(const char *, const char *);
/* The version in the output of `bwrap --version`, `socat -V` or
 * `rg --version` (tool: bwrap, socat, rg): 0 and ver filled, or -1. */
int		 sbx_preflight_version_of(const char *tool, const char *out,
		    size_t len, char *ver, size_t vlen);

#endif
