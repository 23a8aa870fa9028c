/* names.c: name grammars. */
#include <string.h>

#include "names.h"

int
sbx_names_agent_valid(const char *s, const char *field, struct sbx_error *e)
{
	size_t	 i, n;

	if (s == NULL || *s == '\0')
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field, "empty",
		    "argument `%s` is empty", field);
	n = strlen(s);
	if (n > SBX_AGENT_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, field, "too_long",
		    "argument `%s` is longer than %d characters", field,
		    SBX_AGENT_MAX);
	/* Byte-wise ASCII classes on purpose: no locale, no look-alikes. */
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    (i > 0 && (c == '_' || c == '-'));
		if (!ok)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, field,
			    "invalid_name", "argument `%s` must match "
			    "^[a-z0-9][a-z0-9_-]{0,31}$", field);
	}
	return 0;
}

int
sbx_names_job_id_valid(const char *s, struct sbx_error *e)
{
	size_t	 i;

	if (s == NULL || strlen(s) != SBX_JOB_LEN)
		goto bad;
	for (i = 0; i < SBX_JOB_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			goto bad;
	return 0;
bad:
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "job", "invalid_job_id",
	    "argument `job` must be %d lowercase hex digits", SBX_JOB_LEN);
}

/*
 * Names a caller may not set.  PATH, HOME, USER, LANG and TERM belong to
 * sbx's fixed allowlist; the loader's LD_* and glibc's GCONV_PATH,
 * GLIBC_TUNABLES, LOCPATH... change how every binary loads; BASH_ENV, ENV,
 * SHELLOPTS, BASH_FUNC_* and PS4 run code in every shell; SBX_* is sbx's own
 * namespace; the proxy variables are owned by the network mode.
 */
static const char *const reserved_exact[] = {
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "TERM", "PWD",
	"OLDPWD", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS",
	"CDPATH", "GLOBIGNORE", "PROMPT_COMMAND", "GCONV_PATH",
	"GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF",
	"RES_OPTIONS", "LOCALDOMAIN", "TMPDIR", "MALLOC_CHECK_",
	"MALLOC_TRACE", "MALLOC_PERTURB_", "PYTHONSTARTUP", "PERL5OPT",
	"NODE_OPTIONS", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
	"http_proxy", "https_proxy", "all_proxy", "no_proxy", "FTP_PROXY",
	"ftp_proxy",
};

static const char *const reserved_prefix[] = {
	"LD_", "SBX_", "BASH_FUNC_", "DYLD_", "GLIBC_",
};

int
sbx_names_env_reserved(const char *name, size_t len)
{
	size_t	 i, k;

	for (i = 0; i < sizeof(reserved_exact) / sizeof(*reserved_exact); i++)
		if (strlen(reserved_exact[i]) == len &&
		    memcmp(reserved_exact[i], name, len) == 0)
			return 1;
	for (i = 0; i < sizeof(reserved_prefix) / sizeof(*reserved_prefix);
	    i++) {
		k = strlen(reserved_prefix[i]);
		if (len >= k && memcmp(reserved_prefix[i], name, k) == 0)
			return 1;
	}
	return 0;
}

int
sbx_names_env_assign_valid(const char *s, struct sbx_error *e)
{
	const char	*eq;
	size_t		 i, n;

	if ((eq = strchr(s, '=')) == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env",
		    "missing_equals", "argument `env` must be NAME=VALUE");
	n = (size_t)(eq - s);
	if (n == 0)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env",
		    "invalid_name", "argument `env` has an empty name");
	if (n > 128)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env", "too_long",
		    "argument `env` has a name longer than 128 characters");
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    c == '_' || (i > 0 && c >= '0' && c <= '9')))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "env",
			    "invalid_name", "argument `env`: name must match "
			    "^[A-Za-z_][A-Za-z0-9_]*$");
	}
	if (sbx_names_env_reserved(s, n))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env",
		    "reserved_name", "argument `env`: %.*s is reserved and "
		    "cannot be set", (int)n, s);
	if (strlen(eq + 1) > 128 * 1024)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "env", "too_long",
		    "argument `env`: value longer than 128 KiB");
	return 0;
}

int
sbx_names_digest_valid(const char *s)
{
	size_t	 i;

	if (s == NULL)
		return 0;
	for (i = 0; i < SBX_DIGEST_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return s[i] == '\0';
}

int
sbx_names_image_valid(const char *s)
{
	size_t	 i;

	if (s == NULL || !((s[0] >= 'a' && s[0] <= 'z') ||
	    (s[0] >= '0' && s[0] <= '9')))
		return 0;
	for (i = 1; s[i] != '\0'; i++) {
		if (i >= 64)
			return 0;
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		    (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		    s[i] == '_' || s[i] == '-'))
			return 0;
	}
	/* A name that looks like a digest would shadow one. */
	return !sbx_names_digest_valid(s);
}
