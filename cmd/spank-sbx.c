/*
 * sbx.so: the SPANK plugin that runs a Slurm job step's tasks in sbx
 * sandboxes (sbx-slurm(7)).  Loaded by srun, sbatch and salloc (options,
 * early refusals) and by slurmstepd on the node (the wrapping itself).
 *
 * The rules live in lib/exec/slurm.c (unit-tested); this file is the glue
 * to Slurm's API.  In the task's context, as the job's user, the task's
 * argv becomes `sbx exec --agent A --network N ... -- ARGV`: with
 * spank_prepend_task_argv where Slurm has it (23.02.5 and later), else
 * (Debian's 22.05) by executing sbx from slurm_spank_task_init itself,
 * the last thing slurmstepd would have done with the same argv and
 * environment.
 *
 * Fail closed: a step that asked for a sandbox (or a site that forces
 * one) and cannot have it is failed here, with the reason on the job's
 * standard error (slurmstepd set up the task's stdio before this hook) and
 * a non-zero exit; it never runs without the sandbox.
 */
#include <sys/types.h>

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/spank.h>

#include "slurm.h"

#ifndef SBX_BINDIR
#define SBX_BINDIR "/usr/local/bin"
#endif

SPANK_PLUGIN(sbx, 1);

/* Slurm 23.02.5 and later; NULL in the older slurmstepd that loads us. */
extern spank_err_t
spank_prepend_task_argv(spank_t, int, const char *[]) __attribute__((weak));

static struct sbx_slurm_site site;
static struct sbx_slurm_job  job;
static struct sbx_error	     site_err;
static int		     site_ok;

static int opt_cb(int, const char *, int);

struct spank_option spank_options[] = {
	{ "sbx", "[AGENT]",
	    "run every task of the step in an sbx sandbox "
	    "as AGENT (default: the site's agent=); sbx-slurm(7)",
	    2, SBX_SLURM_OPT_SBX, opt_cb },
	{ "sbx-network", "none|proxy|outbound",
	    "the sandbox's network "
	    "(up to the site's max_network=)",
	    1, SBX_SLURM_OPT_NETWORK, opt_cb },
	{ "sbx-allow-domain", "D",
	    "proxy mode: also allow D or *.D "
	    "(repeatable)",
	    1, SBX_SLURM_OPT_ALLOW, opt_cb },
	{ "sbx-workdir", "[DIR]",
	    "bind DIR (default: the job's working "
	    "directory) read-write and start there",
	    2, SBX_SLURM_OPT_WORKDIR, opt_cb },
	{ "sbx-env", "NAMES",
	    "also pass these variables of the job's "
	    "environment into the sandbox (comma-separated; repeatable)",
	    1, SBX_SLURM_OPT_ENV, opt_cb },
	SPANK_OPTIONS_TABLE_END
};

static int
opt_cb(int val, const char *arg, int remote)
{
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	if (sbx_slurm_job_opt(&job, val, arg, &e) < 0) {
		slurm_error("sbx: %s", e.message);
		return -1;
	}
	return 0;
}

int
slurm_spank_init(spank_t sp, int ac, char **av)
{
	struct spank_option *o;

	/* sbatch and salloc do not read the static table: its options are
	 * registered here (as Slurm's spank(8) says). */
	if (spank_context() == S_CTX_ALLOCATOR)
		for (o = spank_options; o->name != NULL; o++)
			if (spank_option_register(sp, o) != ESPANK_SUCCESS) {
				slurm_error("sbx: cannot register --%s",
				    o->name);
				return -1;
			}
	sbx_slurm_site_init(&site, SBX_BINDIR "/sbx");
	sbx_slurm_job_init(&job);
	memset(&site_err, 0, sizeof(site_err));
	site_ok = sbx_slurm_site_parse(&site, ac, av, &site_err) == 0;
	if (!site_ok) {
		/* A site whose arguments are wrong runs nothing: a typo in
		 * default=on must not let every job out of its sandbox. */
		slurm_error("sbx: %s", site_err.message);
		return -1;
	}
	return 0;
}

/* srun, sbatch, salloc: refuse what the site refuses before anything
 * is queued or launched. */
int
slurm_spank_init_post_opt(spank_t sp, int ac, char **av)
{
	struct sbx_error e;
	int		 net;

	if (spank_remote(sp) || !site_ok)
		return 0;
	memset(&e, 0, sizeof(e));
	if (sbx_slurm_decide(&site, &job, &net, &e) < 0) {
		slurm_error("sbx: %s%s%s", e.message, e.hint[0] ? "; " : "",
		    e.hint);
		return -1;
	}
	return 0;
}

/* The step's refusal: on the job's stderr and in slurmd's log; the
 * task then exits 1 (slurmstepd's answer to a failed task_init). */
__attribute__((format(printf, 1, 2))) static int
refuse(const char *fmt, ...)
{
	va_list ap;
	char	msg[2048], host[256];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (gethostname(host, sizeof(host)) < 0)
		strcpy(host, "?");
	host[sizeof(host) - 1] = '\0';
	dprintf(STDERR_FILENO,
	    "sbx: %s (node %s); the step does not run "
	    "unsandboxed\n",
	    msg, host);
	slurm_error("sbx: %s", msg);
	return -1;
}

/* sbx exec runs with the job's environment less sbx's own variables: a
 * job's SBX_BWRAP or SBX_HOME must not steer the sandbox a site forces
 * (the sandbox's own environment is the --env list, built before). */
static int
scrub_env(spank_t sp)
{
	char **env = NULL, *names[64], *eq;
	int    i, n;

	do {
		if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS ||
		    env == NULL)
			return 0;
		for (n = 0, i = 0; env[i] != NULL && n < 64; i++)
			if (strncmp(env[i], "SBX_", 4) == 0 &&
			    (eq = strchr(env[i], '=')) != NULL &&
			    (names[n] = strndup(env[i],
				 (size_t)(eq - env[i]))) != NULL)
				n++;
		for (i = 0; i < n; i++) {
			spank_unsetenv(sp, names[i]);
			free(names[i]);
		}
	} while (n == 64);
	if (site.libexec[0] != '\0' &&
	    spank_setenv(sp, "SBX_EXEC_PATH", site.libexec, 1) !=
		ESPANK_SUCCESS)
		return -1;
	return 0;
}

int
slurm_spank_task_init(spank_t sp, int ac, char **av)
{
	struct sbx_slurm_task task;
	struct sbx_error      e;
	struct passwd	      pw, *pwp = NULL;
	char		      pwbuf[4096], cwd[SBX_SLURM_PATH_MAX];
	char		    **argv = NULL, **env = NULL, **pre = NULL;
	char		    **full;
	uint32_t	      stepid = 0;
	uid_t		      uid = (uid_t)-1;
	int		      argc = 0, npre = 0, net, i, r;
	spank_err_t	      sr;

	if (!spank_remote(sp))
		return 0;
	if (!site_ok)
		return refuse("%s", site_err.message);
	memset(&e, 0, sizeof(e));
	if ((r = sbx_slurm_decide(&site, &job, &net, &e)) == 0)
		return 0;
	if (r < 0)
		return refuse("%s", e.message);

	memset(&task, 0, sizeof(task));
	if (spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_STEPID, &stepid) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ARGV, &argc, &argv) != ESPANK_SUCCESS ||
	    spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS ||
	    argv == NULL || argc < 1)
		return refuse("cannot read the task's argv and environment "
			      "from Slurm");
	if (getpwuid_r(uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 &&
	    pwp != NULL)
		task.user = pw.pw_name;
	task.uid = uid;
	task.cwd = getcwd(cwd, sizeof(cwd));
	task.env = env;
	if (stepid == SLURM_BATCH_SCRIPT)
		task.script = argv[0];
	if (sbx_slurm_argv(&site, &job, &task, &pre, &npre, &e) < 0)
		return refuse("%s", e.message);
	if (access(site.sbx, X_OK) != 0) {
		sbx_slurm_argv_free(pre);
		return refuse("%s: %s (sbx= in plugstack.conf)", site.sbx,
		    strerror(errno));
	}
	if (scrub_env(sp) < 0) {
		sbx_slurm_argv_free(pre);
		return refuse("cannot set the environment of sbx exec");
	}

	if (spank_prepend_task_argv != NULL) {
		sr = spank_prepend_task_argv(sp, npre, (const char **)pre);
		sbx_slurm_argv_free(pre);
		if (sr != ESPANK_SUCCESS)
			return refuse("spank_prepend_task_argv: %s",
			    spank_strerror(sr));
		return 0;
	}

	/* Slurm before 23.02.5: slurmstepd's next steps (TaskProlog, the
	 * exec of argv) cannot be given a longer argv, so the task becomes
	 * sbx exec here, with the environment slurmstepd would have given
	 * (sbx.so must be the last plugin of plugstack.conf). */
	if ((full = calloc((size_t)npre + (size_t)argc + 1, sizeof(*full))) ==
	    NULL) {
		sbx_slurm_argv_free(pre);
		return refuse("out of memory");
	}
	for (i = 0; i < npre; i++)
		full[i] = pre[i];
	for (i = 0; i < argc; i++)
		full[npre + i] = argv[i];
	env = NULL;
	if (spank_get_item(sp, S_JOB_ENV, &env) != ESPANK_SUCCESS ||
	    env == NULL) {
		free(full);
		sbx_slurm_argv_free(pre);
		return refuse("cannot read the task's environment from Slurm");
	}
	execve(site.sbx, full, env);
	r = errno;
	free(full);
	sbx_slurm_argv_free(pre);
	return refuse("cannot execute %s: %s", site.sbx, strerror(r));
}
