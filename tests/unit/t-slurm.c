/* t-slurm: the SPANK plugin's decisions (lib/exec/slurm.c): the site's
 * arguments, a job's options, the verdict and the wrapped argv. */
#include "tap.h"

#include "slurm.h"

/* The argv joined with spaces, for one comparison. */
static const char *
joined(char **v)
{
	static char buf[8192];
	size_t	    n = 0;

	buf[0] = '\0';
	for (; v != NULL && *v != NULL; v++)
		n += (size_t)snprintf(buf + n, sizeof(buf) - n, "%s%s",
		    n ? " " : "", *v);
	return buf;
}

static int
site(struct sbx_slurm_site *s, const char *a1, const char *a2,
    struct sbx_error *e)
{
	char *av[2];
	int   ac = 0;

	sbx_slurm_site_init(s, "/usr/bin/sbx");
	memset(e, 0, sizeof(*e));
	if (a1 != NULL)
		av[ac++] = (char *)a1;
	if (a2 != NULL)
		av[ac++] = (char *)a2;
	return sbx_slurm_site_parse(s, ac, av, e);
}

static void
test_site(void)
{
	struct sbx_slurm_site	 s;
	struct sbx_error	 e;
	static const char *const bad[][2] = {
		{ "default=maybe", "invalid_value" },
		{ "network=outbound", "beyond_max" },
		{ "max_network=all", "invalid_value" },
		{ "home=relative/x", "invalid_path" },
		{ "home=/var/lib/../etc", "invalid_path" },
		{ "home=/x/%s", "invalid_path" },
		{ "sbx=", "invalid_path" },
		{ "sbx=bin/sbx", "invalid_path" },
		{ "agent=../x", "invalid_name" },
		{ "env=A;B", "invalid_value" },
		{ "colour=red", "unknown_key" },
		{ "default", "not_key_value" },
	};
	size_t i;

	is_int(site(&s, NULL, NULL, &e), 0, "no arguments: the defaults");
	ok(!s.default_on && s.network == SBX_SLURM_NET_NONE &&
		s.max_network == SBX_SLURM_NET_PROXY,
	    "default=off network=none "
	    "max_network=proxy");
	is_str(s.agent, "default", "agent=default");
	is_str(s.sbx, "/usr/bin/sbx", "sbx= the installed front-end");
	is_str(s.home, "", "home= unset: sbx's own resolution");
	is_int(site(&s, "default=on", "home=/scratch/sbx/%u-%U", &e), 0,
	    "default=on home=/scratch/sbx/%%u-%%U");
	ok(s.default_on, "default=on read");
	is_int(site(&s, "max_network=outbound", "network=proxy", &e), 0,
	    "network=proxy under max_network=outbound");
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		is_int(site(&s, bad[i][0], NULL, &e), -1, bad[i][0]);
		is_str(e.reason, bad[i][1], "  its reason");
	}
	site(&s, "colour=red", NULL, &e);
	ok(strstr(e.message, "plugstack.conf") != NULL &&
		strstr(e.message, "colour") != NULL,
	    "the message names the file "
	    "and the key: %s",
	    e.message);
}

static void
test_job(void)
{
	struct sbx_slurm_site s;
	struct sbx_slurm_job  j;
	struct sbx_error      e;
	int		      net = -2;

	site(&s, NULL, NULL, &e);
	sbx_slurm_job_init(&j);
	is_int(sbx_slurm_decide(&s, &j, &net, &e), 0,
	    "default=off, no option: the step is left as it is");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_SBX, NULL, &e), 0, "--sbx");
	is_int(sbx_slurm_decide(&s, &j, &net, &e), 1, "--sbx: sandboxed");
	is_int(net, SBX_SLURM_NET_NONE, "  network none (the site's)");

	sbx_slurm_job_init(&j);
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_NETWORK, "proxy", &e), 0,
	    "--sbx-network=proxy alone");
	is_int(sbx_slurm_decide(&s, &j, &net, &e), 1,
	    "  asks for the sandbox too (never a policy without one)");

	sbx_slurm_job_init(&j);
	memset(&e, 0, sizeof(e));
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_NETWORK, "outbound", &e);
	is_int(sbx_slurm_decide(&s, &j, &net, &e), -1,
	    "--sbx-network=outbound beyond max_network=proxy: refused");
	is_str(e.kind, SBX_K_REJECTED, "  rejected");
	is_str(e.reason, "beyond_site_max", "  beyond_site_max");
	ok(strstr(e.message, "max_network=proxy") != NULL,
	    "  says the "
	    "maximum: %s",
	    e.message);

	sbx_slurm_job_init(&j);
	memset(&e, 0, sizeof(e));
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ALLOW, "example.org", &e);
	is_int(sbx_slurm_decide(&s, &j, &net, &e), 1,
	    "--sbx-allow-domain alone: sandboxed");
	is_int(net, SBX_SLURM_NET_PROXY, "  in proxy mode");
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_NETWORK, "none", &e);
	is_int(sbx_slurm_decide(&s, &j, &net, &e), -1,
	    "--sbx-allow-domain with --sbx-network=none: refused");
	is_str(e.reason, "needs_proxy", "  needs_proxy");

	sbx_slurm_job_init(&j);
	memset(&e, 0, sizeof(e));
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_SBX, "../etc", &e), -1,
	    "--sbx=../etc refused");
	is_str(e.reason, "invalid_name", "  invalid_name");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_NETWORK, "all", &e), -1,
	    "--sbx-network=all refused");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ALLOW, "-x", &e), -1,
	    "--sbx-allow-domain=-x refused (never an option)");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ALLOW, "a b", &e), -1,
	    "--sbx-allow-domain='a b' refused");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ALLOW, "*.pypi.org", &e), 0,
	    "--sbx-allow-domain=*.pypi.org");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_WORKDIR, "../x", &e), -1,
	    "--sbx-workdir=../x refused");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_WORKDIR, "/a/../b", &e), -1,
	    "--sbx-workdir=/a/../b refused");
	is_int(sbx_slurm_job_opt(&j, 99, "x", &e), -1, "an unknown option");

	site(&s, "default=on", NULL, &e);
	sbx_slurm_job_init(&j);
	is_int(sbx_slurm_decide(&s, &j, &net, &e), 1,
	    "default=on, no option: sandboxed all the same");
}

static void
test_env(void)
{
	struct sbx_slurm_site s;
	struct sbx_slurm_job  j;
	struct sbx_error      e;

#define P(exp, n) sbx_slurm_env_passed(&s, &j, (exp), (n), strlen(n))
	site(&s, "env=SITE_VAR,OTHER", NULL, &e);
	sbx_slurm_job_init(&j);
	ok(!P(NULL, "JOBVAR"), "JOBVAR not passed");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ENV, "JOBVAR", &e), 0,
	    "--sbx-env=JOBVAR");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ENV, "B1,B2", &e), 0,
	    "--sbx-env=B1,B2 (repeated: the names add up)");
	ok(P(NULL, "JOBVAR") && P(NULL, "B1") && P(NULL, "B2"),
	    "  JOBVAR, B1 and B2 passed");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ENV, "A=1", &e), -1,
	    "--sbx-env=A=1 refused (names only)");
	is_int(sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ENV, "", &e), -1,
	    "--sbx-env= refused");
	ok(P(NULL, "SLURM_JOB_ID"), "SLURM_JOB_ID passed");
	ok(P(NULL, "SLURMD_NODENAME"), "SLURMD_NODENAME passed");
	ok(P(NULL, "CUDA_VISIBLE_DEVICES"), "CUDA_VISIBLE_DEVICES passed");
	ok(!P(NULL, "SLURM_"), "SLURM_ alone not passed");
	ok(!P(NULL, "AWS_SECRET_ACCESS_KEY"), "an unlisted name not passed");
	ok(P(NULL, "SITE_VAR") && P(NULL, "OTHER"), "the site's env= passed");
	ok(P("FOO,BAR=1", "FOO") && P("FOO,BAR=1", "BAR"),
	    "--export=FOO,BAR=1: FOO and BAR passed");
	ok(!P("FOO", "FO") && !P("FOO", "FOOD"), "no prefix matches");
	ok(!P("ALL,NONE", "ALL") && !P("NONE", "NONE"),
	    "ALL and NONE are modes, not names");
	ok(!P("LD_PRELOAD,PATH,SBX_HOME", "LD_PRELOAD") &&
		!P("LD_PRELOAD,PATH", "PATH") && !P("SBX_HOME", "SBX_HOME"),
	    "reserved names never passed, even when exported");
#undef P
}

static void
test_argv(void)
{
	struct sbx_slurm_site s;
	struct sbx_slurm_job  j;
	struct sbx_slurm_task k;
	struct sbx_error      e;
	char		    **v = NULL;
	int		      n;
	char		      big[140 * 1024];
	char *const	      env[] = { "PATH=/usr/bin", "SLURM_JOB_ID=7",
			  "SLURM_EXPORT_ENV=MYVAR", "MYVAR=x y", "SECRET=s",
			  "LD_PRELOAD=/evil.so", "SLURM_BAD-NAME=1", big, NULL };

	memcpy(big, "SLURM_BIG=", 10);
	memset(big + 10, 'a', sizeof(big) - 11);
	big[sizeof(big) - 1] = '\0';
	memset(&k, 0, sizeof(k));
	k.user = "alice";
	k.uid = 1001;
	k.cwd = "/home/alice/run";
	k.env = env;

	site(&s, "home=/scratch/%u/%U/sbx%%", "sbx=/opt/sbx/bin/sbx", &e);
	sbx_slurm_job_init(&j);
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_SBX, "alice", &e);
	is_int(sbx_slurm_argv(&s, &j, &k, &v, &n, &e), 0, "argv built");
	is_str(joined(v),
	    "/opt/sbx/bin/sbx exec --home /scratch/alice/1001/"
	    "sbx% --agent alice --network none --env SLURM_JOB_ID=7 "
	    "--env SLURM_EXPORT_ENV=MYVAR --env MYVAR=x y --",
	    "  the argv: "
	    "home expanded, only the listed variables, each one argument");
	is_int(n, 15, "  its length");
	ok(v != NULL && v[n] == NULL, "  NULL-ended");
	sbx_slurm_argv_free(v);

	site(&s, "max_network=proxy", NULL, &e);
	sbx_slurm_job_init(&j);
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_ALLOW, "pypi.org", &e);
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_WORKDIR, NULL, &e);
	k.env = NULL;
	k.script = "/var/spool/slurmd/job00042/slurm_script";
	is_int(sbx_slurm_argv(&s, &j, &k, &v, &n, &e), 0,
	    "argv of a batch step with --sbx-workdir");
	is_str(joined(v),
	    "/usr/bin/sbx exec --agent default --network proxy "
	    "--allow-domain pypi.org --workdir /home/alice/run --ro "
	    "/var/spool/slurmd/job00042 --",
	    "  no --home (sbx's own), the "
	    "task's cwd bound, the script's directory bound read-only");
	sbx_slurm_argv_free(v);

	sbx_slurm_job_init(&j);
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_WORKDIR, "/data/x", &e);
	k.script = NULL;
	sbx_slurm_argv(&s, &j, &k, &v, &n, &e);
	is_str(joined(v),
	    "/usr/bin/sbx exec --agent default --network none "
	    "--workdir /data/x --",
	    "--sbx-workdir=/data/x");
	sbx_slurm_argv_free(v);

	site(&s, "home=/s/%u", NULL, &e);
	k.user = "..";
	memset(&e, 0, sizeof(e));
	is_int(sbx_slurm_argv(&s, &j, &k, &v, &n, &e), -1,
	    "home=/s/%%u with the user `..`: refused");
	ok(v == NULL, "  no argv");
	is_str(e.reason, "user_unknown", "  user_unknown");

	site(&s, NULL, NULL, &e);
	sbx_slurm_job_init(&j);
	memset(&e, 0, sizeof(e));
	is_int(sbx_slurm_argv(&s, &j, &k, &v, &n, &e), -1,
	    "no argv for a step that is not sandboxed");
	sbx_slurm_job_opt(&j, SBX_SLURM_OPT_NETWORK, "outbound", &e);
	memset(&e, 0, sizeof(e));
	is_int(sbx_slurm_argv(&s, &j, &k, &v, &n, &e), -1,
	    "nor for one beyond the site's maximum");
	is_str(e.reason, "beyond_site_max", "  beyond_site_max");
}

int
main(void)
{
	test_site();
	test_job();
	test_env();
	test_argv();
	return done_testing();
}
