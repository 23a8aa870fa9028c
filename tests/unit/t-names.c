/* t-names: agent names, job ids and environment assignments. */
#include "tap.h"

#include "names.h"

int
main(void)
{
	struct sbx_error	 e;
	static const char *const good[] = { "default", "a", "0", "a-b_c",
	    "abcdefghijklmnopqrstuvwxyz012345" };
	static const char *const bad[] = { "", "../b", "a/../../etc", ".",
	    "..", "a\nb", "-rf", "_a", "a,b", "a:b", "A", "a b",
	    "abcdefghijklmnopqrstuvwxyz0123456", "\xd0\xb0gent", "a/b" };
	static const char *const env_ok[] = { "FOO=bar", "a=", "_X1=1=2",
	    "LANGUAGE=en", "PATHX=1" };
	static const char *const env_bad[][2] = {
		{ "1A=x", "invalid_name" }, { "A-B=x", "invalid_name" },
		{ "=x", "invalid_name" }, { "NOEQUALS", "missing_equals" },
		{ "PATH=/x", "reserved_name" }, { "HOME=/", "reserved_name" },
		{ "LD_PRELOAD=/x.so", "reserved_name" },
		{ "LD_LIBRARY_PATH=/x", "reserved_name" },
		{ "BASH_ENV=/x", "reserved_name" }, { "ENV=/x", "reserved_name" },
		{ "SBX_FOO=1", "reserved_name" },
		{ "BASH_FUNC_x%%=() { :; }", "invalid_name" },
		{ "GCONV_PATH=/x", "reserved_name" },
		{ "GLIBC_TUNABLES=x", "reserved_name" },
		{ "http_proxy=x", "reserved_name" },
		{ "A\nB=x", "invalid_name" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++)
		ok(sbx_names_agent_valid(good[i], "agent", &e) == 0,
		    "agent '%s' ok", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		ok(sbx_names_agent_valid(bad[i], "agent", &e) == -1 &&
		    strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 &&
		    strcmp(e.field, "agent") == 0, "agent #%zu rejected", i);
	}
	ok(sbx_names_job_id_valid("0123456789abcdef", &e) == 0, "job id ok");
	ok(sbx_names_job_id_valid("0123456789ABCDEF", &e) == -1,
	    "uppercase job id");
	ok(sbx_names_job_id_valid("../../etc/passwd", &e) == -1,
	    "traversal job id");
	ok(sbx_names_job_id_valid("0123456789abcde", &e) == -1, "short job id");
	for (i = 0; i < sizeof(env_ok) / sizeof(*env_ok); i++)
		ok(sbx_names_env_assign_valid(env_ok[i], &e) == 0,
		    "env '%s' ok", env_ok[i]);
	for (i = 0; i < sizeof(env_bad) / sizeof(*env_bad); i++) {
		int r = sbx_names_env_assign_valid(env_bad[i][0], &e);
		ok(r == -1 && strcmp(e.reason, env_bad[i][1]) == 0 &&
		    strcmp(e.field, "env") == 0, "env #%zu rejected: %s", i,
		    env_bad[i][1]);
	}
	return done_testing();
}
