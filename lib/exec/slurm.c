/*
 * sbx on a Slurm cluster: the SPANK plugin's decisions (see slurm.h and
 * sbx-slurm(7)).  Nothing here knows Slurm's API: cmd/spank-sbx.c hands
 * in strings and gets back a verdict and an argv, so that every rule of
 * the plugin has a unit test (tests/unit/t-slurm.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"

static const char *const net_names[] = { "none", "proxy", "outbound" };

/* Passed into the sandbox whatever the job says: what a task needs to
 * know where it runs in the job and which devices are its own. */
static const char *const env_fixed[] = {
	"SLURMD_NODENAME",
	"CUDA_VISIBLE_DEVICES",
	"GPU_DEVICE_ORDINAL",
	"ROCR_VISIBLE_DEVICES",
	"OMP_NUM_THREADS",
};

const char *
sbx_slurm_net_name(int n)
{
	if (n < 0 || n >= (int)(sizeof(net_names) / sizeof(*net_names)))
		return "unset";
	return net_names[n];
}

static int
net_parse(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(net_names) / sizeof(*net_names); i++)
		if (strcmp(s, net_names[i]) == 0)
			return (int)i;
	return SBX_SLURM_NET_UNSET;
}

void
sbx_slurm_site_init(struct sbx_slurm_site *s, const char *sbx)
{
	memset(s, 0, sizeof(*s));
	s->network = SBX_SLURM_NET_NONE;
	s->max_network = SBX_SLURM_NET_PROXY;
	strcpy(s->agent, "default");
	snprintf(s->sbx, sizeof(s->sbx), "%s", sbx);
}

/* An absolute path without a `..` component (a path from plugstack.conf
 * or a job's option becomes a bind mount or a program to run). */
static int
abs_path_ok(const char *p)
{
	const char *c;

	if (p[0] != '/')
		return 0;
	for (c = p; (c = strstr(c, "..")) != NULL; c += 2)
		if (c[-1] == '/' && (c[2] == '/' || c[2] == '\0'))
			return 0;
	return 1;
}

/* home=: absolute, and no % but %u, %U and %%. */
static int
home_template_ok(const char *p)
{
	if (!abs_path_ok(p))
		return 0;
	for (; *p != '\0'; p++)
		if (*p == '%') {
			p++;
			if (*p != 'u' && *p != 'U' && *p != '%')
				return 0;
		}
	return 1;
}

/* env=: names of the sandbox's environment, comma-separated. */
static int
names_ok(const char *s)
{
	const char *p;

	for (p = s; *p != '\0'; p++)
		if (!((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
			(*p >= '0' && *p <= '9') || *p == '_' || *p == ','))
			return 0;
	return 1;
}

static int
onoff(const char *v)
{
	if (strcmp(v, "on") == 0 || strcmp(v, "yes") == 0)
		return 1;
	if (strcmp(v, "off") == 0 || strcmp(v, "no") == 0)
		return 0;
	return -1;
}

static int
site_bad(struct sbx_error *e, const char *key, const char *reason,
    const char *what)
{
	return sbx_error_set(e, SBX_K_INVALID_ARGS, key, reason,
	    "plugstack.conf: sbx.so %s= %s", key, what);
}

/* Copy a value into a fixed field; too long is an error. */
static int
set_str(char *dst, size_t size, const char *v)
{
	if (strlen(v) >= size)
		return -1;
	memcpy(dst, v, strlen(v) + 1);
	return 0;
}

int
sbx_slurm_site_parse(struct sbx_slurm_site *s, int ac, char **av,
    struct sbx_error *e)
{
	const char *eq, *v;
	char	    key[32];
	int	    i, n;

	for (i = 0; i < ac; i++) {
		if ((eq = strchr(av[i], '=')) == NULL ||
		    (size_t)(eq - av[i]) >= sizeof(key))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "argument",
			    "not_key_value",
			    "plugstack.conf: sbx.so argument "
			    "`%.64s` is not KEY=VALUE",
			    av[i]);
		memcpy(key, av[i], (size_t)(eq - av[i]));
		key[eq - av[i]] = '\0';
		v = eq + 1;
		if (strcmp(key, "default") == 0) {
			if ((n = onoff(v)) < 0)
				return site_bad(e, key, "invalid_value",
				    "must be on or off");
			s->default_on = n;
		} else if (strcmp(key, "network") == 0 ||
		    strcmp(key, "max_network") == 0) {
			if ((n = net_parse(v)) < 0)
				return site_bad(e, key, "invalid_value",
				    "must be none, proxy or outbound");
			if (key[0] == 'n')
				s->network = n;
			else
				s->max_network = n;
		} else if (strcmp(key, "agent") == 0) {
			if (sbx_names_agent_valid(v, "agent", e) < 0 ||
			    set_str(s->agent, sizeof(s->agent), v) < 0)
				return site_bad(e, key, "invalid_name",
				    "is not an agent name "
				    "(^[a-z0-9][a-z0-9_-]{0,31}$)");
		} else if (strcmp(key, "home") == 0) {
			if ((*v != '\0' && !home_template_ok(v)) ||
			    set_str(s->home, sizeof(s->home), v) < 0)
				return site_bad(e, key, "invalid_path",
				    "must be an absolute path without `..` "
				    "(%u: the user, %U: the uid)");
		} else if (strcmp(key, "sbx") == 0 ||
		    strcmp(key, "libexec") == 0) {
			if ((key[0] == 's' && *v == '\0') ||
			    (*v != '\0' && !abs_path_ok(v)) ||
			    set_str(key[0] == 's' ? s->sbx : s->libexec,
				sizeof(s->sbx), v) < 0)
				return site_bad(e, key, "invalid_path",
				    "must be an absolute path without `..`");
		} else if (strcmp(key, "env") == 0) {
			if (!names_ok(v) ||
			    set_str(s->env, sizeof(s->env), v) < 0)
				return site_bad(e, key, "invalid_value",
				    "must be variable names, comma-separated");
		} else
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "argument",
			    "unknown_key",
			    "plugstack.conf: sbx.so has no "
			    "argument `%s` (default, network, max_network, "
			    "agent, home, sbx, libexec, env)",
			    key);
	}
	if (s->network > s->max_network)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "network",
		    "beyond_max",
		    "plugstack.conf: sbx.so network=%s is "
		    "beyond max_network=%s",
		    sbx_slurm_net_name(s->network),
		    sbx_slurm_net_name(s->max_network));
	return 0;
}

void
sbx_slurm_job_init(struct sbx_slurm_job *j)
{
	memset(j, 0, sizeof(*j));
	j->network = SBX_SLURM_NET_UNSET;
}

/* A name for --allow-domain: sbx exec judges it fully; here only what
 * keeps it one plain argument (letters, digits, `.`, `-`, a leading *.). */
static int
domain_ok(const char *d)
{
	const char *p = d;
	size_t	    n = strlen(d);

	if (n == 0 || n > SBX_SLURM_DOMAIN_MAX || d[0] == '-' || d[0] == '.')
		return 0;
	if (strncmp(p, "*.", 2) == 0)
		p += 2;
	for (; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			(*p >= '0' && *p <= '9') || *p == '.' || *p == '-'))
			return 0;
	return 1;
}

int
sbx_slurm_job_opt(struct sbx_slurm_job *j, int opt, const char *arg,
    struct sbx_error *e)
{
	/* Any --sbx-* option asks for the sandbox: a policy given for a
	 * step that then ran without one would be a silent unsandboxed
	 * run. */
	j->asked = 1;
	switch (opt) {
	case SBX_SLURM_OPT_SBX:
		if (arg == NULL || *arg == '\0')
			return 0;
		if (sbx_names_agent_valid(arg, "sbx", e) < 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx",
			    "invalid_name",
			    "--sbx=%.40s: not an agent name "
			    "(^[a-z0-9][a-z0-9_-]{0,31}$)",
			    arg);
		return set_str(j->agent, sizeof(j->agent), arg);
	case SBX_SLURM_OPT_NETWORK:
		if (arg == NULL || (j->network = net_parse(arg)) < 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "sbx-network", "invalid_value",
			    "--sbx-network=%.40s:"
			    " must be none, proxy or outbound",
			    arg != NULL ? arg : "");
		return 0;
	case SBX_SLURM_OPT_ALLOW:
		if (arg == NULL || !domain_ok(arg))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "sbx-allow-domain", "invalid_domain",
			    "--sbx-allow-domain=%.64s: not a domain name",
			    arg != NULL ? arg : "");
		if (j->n_domains == SBX_SLURM_MAX_DOMAINS)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "sbx-allow-domain", "too_many",
			    "--sbx-allow-domain"
			    " given more than %d times",
			    SBX_SLURM_MAX_DOMAINS);
		strcpy(j->domains[j->n_domains++], arg);
		return 0;
	case SBX_SLURM_OPT_WORKDIR:
		j->workdir = 1;
		if (arg == NULL || *arg == '\0')
			return 0;
		if (!abs_path_ok(arg) ||
		    set_str(j->workdir_dir, sizeof(j->workdir_dir), arg) < 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "sbx-workdir", "invalid_path",
			    "--sbx-workdir=%.64s:"
			    " must be an absolute path without `..`",
			    arg);
		return 0;
	case SBX_SLURM_OPT_ENV:
		/* Repeatable: the names add up, comma-separated. */
		if (arg == NULL || *arg == '\0' || !names_ok(arg) ||
		    strlen(j->env) + 1 + strlen(arg) >= sizeof(j->env))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx-env",
			    "invalid_value",
			    "--sbx-env=%.64s: must be "
			    "variable names, comma-separated",
			    arg != NULL ? arg : "");
		if (j->env[0] != '\0')
			strcat(j->env, ",");
		strcat(j->env, arg);
		return 0;
	}
	return sbx_error_set(e, SBX_K_INVALID_ARGS, "option", "unknown_option",
	    "unknown sbx option %d", opt);
}

int
sbx_slurm_decide(const struct sbx_slurm_site *s, const struct sbx_slurm_job *j,
    int *net, struct sbx_error *e)
{
	int n;

	if (!s->default_on && !j->asked)
		return 0;
	n = j->network;
	if (n == SBX_SLURM_NET_UNSET)
		n = j->n_domains > 0 && s->network == SBX_SLURM_NET_NONE ?
		    SBX_SLURM_NET_PROXY :
		    s->network;
	if (n > s->max_network) {
		sbx_error_set(e, SBX_K_REJECTED, "sbx-network",
		    "beyond_site_max",
		    "--sbx-network=%s is beyond this "
		    "site's maximum (max_network=%s in plugstack.conf)",
		    sbx_slurm_net_name(n), sbx_slurm_net_name(s->max_network));
		sbx_error_hint(e, "ask for --sbx-network=%s or less",
		    sbx_slurm_net_name(s->max_network));
		return -1;
	}
	if (j->n_domains > 0 && n != SBX_SLURM_NET_PROXY)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx-allow-domain",
		    "needs_proxy",
		    "--sbx-allow-domain needs "
		    "--sbx-network=proxy (the step's network is %s)",
		    sbx_slurm_net_name(n));
	*net = n;
	return 1;
}

/* Does the comma-separated list hold NAME (an item NAME=VALUE counts)? */
static int
list_has(const char *list, const char *name, size_t len)
{
	const char *p, *end;
	size_t	    k;

	for (p = list; p != NULL && *p != '\0'; p = *end ? end + 1 : end) {
		if ((end = strchr(p, ',')) == NULL)
			end = p + strlen(p);
		k = (size_t)(end - p);
		if (memchr(p, '=', k) != NULL)
			k = (size_t)((const char *)memchr(p, '=', k) - p);
		if (k == len && memcmp(p, name, len) == 0)
			return 1;
	}
	return 0;
}

int
sbx_slurm_env_passed(const struct sbx_slurm_site *s,
    const struct sbx_slurm_job *j, const char *export, const char *name,
    size_t len)
{
	size_t i;

	if (len == 0 || sbx_names_env_reserved(name, len))
		return 0;
	if (len > 6 && memcmp(name, "SLURM_", 6) == 0)
		return 1;
	for (i = 0; i < sizeof(env_fixed) / sizeof(*env_fixed); i++)
		if (strlen(env_fixed[i]) == len &&
		    memcmp(env_fixed[i], name, len) == 0)
			return 1;
	/* --export=ALL, NONE and NIL are modes, not names; a user's
	 * NAME=VALUE in it arrives in the environment as NAME. */
	if ((len == 3 &&
		(memcmp(name, "ALL", 3) == 0 || memcmp(name, "NIL", 3) == 0)) ||
	    (len == 4 && memcmp(name, "NONE", 4) == 0))
		return 0;
	return list_has(export, name, len) || list_has(j->env, name, len) ||
	    list_has(s->env, name, len);
}

struct vec {
	char **v;
	int    n, cap;
};

static int
push(struct vec *a, const char *s)
{
	char **nv;

	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? a->cap * 2 : 32;
		if ((nv = realloc(a->v, (size_t)a->cap * sizeof(*nv))) == NULL)
			return -1;
		a->v = nv;
	}
	if ((a->v[a->n] = strdup(s)) == NULL)
		return -1;
	a->v[++a->n] = NULL;
	return 0;
}

/* home= with %u and %U replaced. */
static int
home_expand(const char *t, const struct sbx_slurm_task *k, char *out,
    size_t size, struct sbx_error *e)
{
	size_t	    n = 0, w;
	char	    num[24];
	const char *sub;

	for (; *t != '\0'; t++) {
		sub = NULL;
		if (*t == '%') {
			t++;
			if (*t == 'u') {
				/* A user name becomes one path component. */
				if (k->user == NULL || k->user[0] == '\0' ||
				    strchr(k->user, '/') != NULL ||
				    strcmp(k->user, ".") == 0 ||
				    strcmp(k->user, "..") == 0)
					return sbx_error_set(e,
					    SBX_K_UNAVAILABLE, "home",
					    "user_unknown",
					    "home=%%u: the "
					    "job's user name is unknown or "
					    "not a file name");
				sub = k->user;
			} else if (*t == 'U') {
				snprintf(num, sizeof(num), "%lu",
				    (unsigned long)k->uid);
				sub = num;
			} else
				sub = "%";
		}
		w = sub != NULL ? strlen(sub) : 1;
		if (n + w >= size)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "home",
			    "too_long", "home=: the expanded path is too long");
		memcpy(out + n, sub != NULL ? sub : t, w);
		n += w;
	}
	out[n] = '\0';
	return 0;
}

int
sbx_slurm_argv(const struct sbx_slurm_site *s, const struct sbx_slurm_job *j,
    const struct sbx_slurm_task *k, char ***out, int *outc, struct sbx_error *e)
{
	struct vec a = { NULL, 0, 0 };
	char	   home[SBX_SLURM_PATH_MAX], sdir[SBX_SLURM_PATH_MAX];
	const char *export = NULL, *eq, *wd, *slash;
	char *const *ep;
	int	     i, net, n_env = 0;

	*out = NULL;
	*outc = 0;
	if (sbx_slurm_decide(s, j, &net, e) != 1)
		return e->kind != NULL ?
		    -1 :
		    sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx", "not_sandboxed",
			"this step is not to be sandboxed");
	if (s->home[0] != '\0' &&
	    home_expand(s->home, k, home, sizeof(home), e) < 0)
		return -1;
	wd = j->workdir_dir[0] != '\0' ? j->workdir_dir : k->cwd;
	if (j->workdir && (wd == NULL || !abs_path_ok(wd)))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "sbx-workdir",
		    "invalid_path",
		    "--sbx-workdir: the task's working "
		    "directory is not an absolute path");
	if (push(&a, s->sbx) < 0 || push(&a, "exec") < 0)
		goto nomem;
	if (s->home[0] != '\0' &&
	    (push(&a, "--home") < 0 || push(&a, home) < 0))
		goto nomem;
	if (push(&a, "--agent") < 0 ||
	    push(&a, j->agent[0] != '\0' ? j->agent : s->agent) < 0 ||
	    push(&a, "--network") < 0 || push(&a, sbx_slurm_net_name(net)) < 0)
		goto nomem;
	for (i = 0; i < j->n_domains; i++)
		if (push(&a, "--allow-domain") < 0 ||
		    push(&a, j->domains[i]) < 0)
			goto nomem;
	if (j->workdir && (push(&a, "--workdir") < 0 || push(&a, wd) < 0))
		goto nomem;
	/* A batch script lives in slurmd's spool directory, which the
	 * sandbox does not see: the job's own directory there (the script
	 * and nothing of other jobs) is bound read-only at its own path. */
	if (k->script != NULL) {
		slash = strrchr(k->script, '/');
		if (!abs_path_ok(k->script) || slash == k->script ||
		    (size_t)(slash - k->script) >= sizeof(sdir)) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "script",
			    "invalid_path",
			    "the batch script's path is not "
			    "an absolute path in a directory");
			goto fail;
		}
		memcpy(sdir, k->script, (size_t)(slash - k->script));
		sdir[slash - k->script] = '\0';
		if (push(&a, "--ro") < 0 || push(&a, sdir) < 0)
			goto nomem;
	}
	for (ep = k->env; ep != NULL && *ep != NULL; ep++)
		if (strncmp(*ep, "SLURM_EXPORT_ENV=", 17) == 0)
			export = *ep + 17;
	for (ep = k->env; ep != NULL && *ep != NULL; ep++) {
		if ((eq = strchr(*ep, '=')) == NULL ||
		    !sbx_slurm_env_passed(s, j, export, *ep,
			(size_t)(eq - *ep)))
			continue;
		/* What sbx exec would refuse (a name outside its grammar, a
		 * value over its size) is left out, not the step failed. */
		if (sbx_names_env_assign_valid(*ep, e) < 0) {
			memset(e, 0, sizeof(*e));
			continue;
		}
		if (++n_env > SBX_SLURM_MAX_ENV) {
			sbx_error_set(e, SBX_K_INVALID_ARGS, "env", "too_many",
			    "more than %d variables to pass into the sandbox",
			    SBX_SLURM_MAX_ENV);
			goto fail;
		}
		if (push(&a, "--env") < 0 || push(&a, *ep) < 0)
			goto nomem;
	}
	if (push(&a, "--") < 0)
		goto nomem;
	*out = a.v;
	*outc = a.n;
	return 0;
nomem:
	sbx_error_sys(e, "out_of_memory", "building the sbx exec command");
fail:
	sbx_slurm_argv_free(a.v);
	return -1;
}

void
sbx_slurm_argv_free(char **v)
{
	char **p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}
