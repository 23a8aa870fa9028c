/*
 * slurm.h: sbx on a Slurm cluster (sbx-slurm(7)).  What the SPANK plugin
 * (cmd/spank-sbx.c) decides, without Slurm: the site's arguments from
 * plugstack.conf, a job's --sbx options, whether a step is sandboxed and
 * within the site's limits, and the `sbx exec` argv its task is wrapped in.
 *
 * Self-contained on purpose: only names.c and error.c besides it, so the
 * plugin (a shared object loaded into srun, sbatch and slurmstepd) links
 * these three compiled -fPIC and nothing else of libsbx.
 */
#ifndef SBX_SLURM_H
#define SBX_SLURM_H

#include <sys/types.h>

#include "error.h"
#include "names.h"

#define SBX_SLURM_PATH_MAX    4096
#define SBX_SLURM_MAX_DOMAINS 32
#define SBX_SLURM_DOMAIN_MAX  253
#define SBX_SLURM_MAX_ENV     512
#define SBX_SLURM_NAMES_MAX   1024

/* Network modes, in the order of what they open (a maximum compares). */
enum sbx_slurm_net {
	SBX_SLURM_NET_UNSET = -1,
	SBX_SLURM_NET_NONE,
	SBX_SLURM_NET_PROXY,
	SBX_SLURM_NET_OUTBOUND,
};

/* The job options, each the value of a SPANK option's callback. */
enum sbx_slurm_opt {
	SBX_SLURM_OPT_SBX = 1, /* --sbx[=AGENT] */
	SBX_SLURM_OPT_NETWORK, /* --sbx-network=MODE */
	SBX_SLURM_OPT_ALLOW, /* --sbx-allow-domain=D */
	SBX_SLURM_OPT_WORKDIR, /* --sbx-workdir[=DIR] */
	SBX_SLURM_OPT_ENV, /* --sbx-env=NAME[,NAME...] */
};

/* The site: the plugin's arguments in plugstack.conf. */
struct sbx_slurm_site {
	int  default_on; /* default=on: every step, no opt-out */
	int  network; /* network=: a job's mode by default */
	int  max_network; /* max_network=: the most a job may ask */
	char agent[SBX_AGENT_MAX + 1]; /* agent=: --sbx without one */
	char home[SBX_SLURM_PATH_MAX]; /* home=: "" sbx's own; %u %U */
	char sbx[SBX_SLURM_PATH_MAX]; /* sbx=: the front-end */
	char libexec[SBX_SLURM_PATH_MAX]; /* libexec=: "" sbx's own */
	char env[SBX_SLURM_NAMES_MAX]; /* env=: more names, a,b,c */
};

/* A job's options. */
struct sbx_slurm_job {
	int  asked; /* --sbx or any --sbx-* option */
	char agent[SBX_AGENT_MAX + 1]; /* "" the site's */
	int  network; /* SBX_SLURM_NET_UNSET: the site's */
	int  n_domains;
	char domains[SBX_SLURM_MAX_DOMAINS][SBX_SLURM_DOMAIN_MAX + 1];
	int  workdir; /* --sbx-workdir given */
	char workdir_dir[SBX_SLURM_PATH_MAX]; /* "" the task's cwd */
	char env[SBX_SLURM_NAMES_MAX]; /* --sbx-env names, a,b,c */
};

/* What the task is, for its argv. */
struct sbx_slurm_task {
	const char  *user; /* the job's user name (home=%u) */
	uid_t	     uid; /* its uid (home=%U) */
	const char  *cwd; /* the task's working directory */
	const char  *script; /* a batch step's script, else NULL */
	char *const *env; /* the job's environment, or NULL */
};

const char *sbx_slurm_net_name(int);
/* The defaults; sbx is the front-end's installed path. */
void sbx_slurm_site_init(struct sbx_slurm_site *, const char *sbx);
/* KEY=VALUE arguments of plugstack.conf; an unknown key is an error. */
int  sbx_slurm_site_parse(struct sbx_slurm_site *, int ac, char **av,
     struct sbx_error *);
void sbx_slurm_job_init(struct sbx_slurm_job *);
/* One option's value (arg NULL: the option without one). */
int sbx_slurm_job_opt(struct sbx_slurm_job *, int opt, const char *arg,
    struct sbx_error *);
/* 1: sandbox the step; 0: leave it as it is; -1: refuse it (e says why).
 * *net is the mode the step gets. */
int sbx_slurm_decide(const struct sbx_slurm_site *,
    const struct sbx_slurm_job *, int *net, struct sbx_error *);
/* Is NAME passed from the job's environment into the sandbox?  The fixed
 * list (SLURM_*, SLURMD_NODENAME, the GPU and thread variables), the
 * names of SLURM_EXPORT_ENV when the step has it, the job's --sbx-env
 * and the site's env=; never a name sbx reserves
 * (sbx_names_env_reserved). */
int sbx_slurm_env_passed(const struct sbx_slurm_site *,
    const struct sbx_slurm_job *, const char *export, const char *name,
    size_t len);
/* The `sbx exec ... --` prefix of a sandboxed task's argv, NULL-ended,
 * in *out (free with sbx_slurm_argv_free), its length in *outc.  Only
 * for a step sbx_slurm_decide said 1 to. */
int  sbx_slurm_argv(const struct sbx_slurm_site *, const struct sbx_slurm_job *,
     const struct sbx_slurm_task *, char ***out, int *outc, struct sbx_error *);
void sbx_slurm_argv_free(char **);

#endif
