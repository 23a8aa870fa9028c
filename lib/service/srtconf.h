/*
 * srtconf.h: the settings file of Anthropic's sandbox-runtime (srt,
 * ~/.srt-settings.json) read as an sbx policy, for sbx srt (sbx-srt(1)).
 *
 * Every key of srt's schema is either mapped onto sbx's policy (an agent's
 * settings, config/agents/A.json, and the options of an sbx exec run) or
 * refused by name: nothing is ignored silently.  srt's precedence is kept:
 * allowRead beats denyRead, denyWrite beats allowWrite, denied domains are
 * judged first, a file without "network" means no network.  sbx's safer
 * defaults stay on: the credential files srt leaves readable are hidden
 * unless allowRead names them.
 */
#ifndef SBX_SRTCONF_H
#define SBX_SRTCONF_H

#include <jansson.h>

#include "buf.h"
#include "error.h"

/* Largest settings file (and control line) read. */
#define SBX_SRTCONF_MAX		(1u << 20)
/* "srt-" and 16 hex digits of the policy's SHA-256. */
#define SBX_SRTCONF_AGENT_LEN	20

struct sbx_srtconf {
	/* The agent settings the file becomes (its keys: network,
	 * allowed_domains, denied_domains, upstream, allow_unix_sockets,
	 * deny_paths, read_paths, protected_paths, allow_git_config, and
	 * what the file's "sbx" object adds). */
	json_t		*cfg;
	/* "none" or "proxy". */
	const char	*network;
	/* The writable directories (--workdir), canonical. */
	struct sbx_strv	 writable;
	/* ignoreViolations, as the file has it (or NULL). */
	json_t		*ignore;
	/* How each key was read, for --explain (strings). */
	json_t		*notes;
	/* The agent whose settings cfg is: srt-<digest of cfg>. */
	char		 agent[SBX_SRTCONF_AGENT_LEN + 1];
};

void	sbx_srtconf_init(struct sbx_srtconf *);
void	sbx_srtconf_release(struct sbx_srtconf *);

/*
 * Map settings (a parsed srt settings file, or NULL for a missing one:
 * srt's defaults) with home ($HOME, for "~") and cwd (for relative paths;
 * both absolute).  The file system is looked at (what exists, what is a
 * directory).  0, or -1 with e: invalid_args, field naming the key
 * ("network.allowedDomains[2]"), reason unknown_key, unsupported_key,
 * wrong_type, invalid_domain, invalid_path, unsupported_value.
 */
int	sbx_srtconf_map(const json_t *settings, const char *home,
	    const char *cwd, struct sbx_srtconf *, struct sbx_error *);

/*
 * The network part of settings as the proxy's live policy of a run
 * (sbx srt --control-fd): {"allow":[...],"deny":[...]}, checked as
 * sbx_srtconf_map checks it (the whole line must be a valid settings
 * object; its other keys are checked too, but only the network applies to
 * a running command).  NULL with e when invalid.
 */
json_t	*sbx_srtconf_netpolicy(const json_t *settings, const char *home,
	    const char *cwd, struct sbx_error *);

/* Is a violation on path (a file-system one) ignored for command by
 * ignoreViolations ("*" or a pattern the command contains)? */
int	sbx_srtconf_ignored(const json_t *ignore, const char *command,
	    const char *path);

/* srt's quoting of an argv into one bash word list: each argument in
 * single quotes unless it is made of safe characters only. */
int	sbx_srtconf_quote(char *const *argv, int argc, struct sbx_buf *out);

#endif
