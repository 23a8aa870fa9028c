/* runlimits.c: resource limits from defaults, configuration and flags. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "cli.h"
#include "envelope.h"
#include "fsutil.h"
#include "runlimits.h"


void
sbx_limits_defaults(struct sbx_runlimits *l)
{
	long	 pages = sysconf(_SC_PHYS_PAGES);
	long	 psz = sysconf(_SC_PAGESIZE);

	memset(l, 0, sizeof(*l));
	/* Even when nothing is asked, a careless fork bomb or leak must not
	 * take the host down: bounded tasks and half of the memory. */
	l->pids = SBX_DEFAULT_PIDS;
	if (pages > 0 && psz > 0)
		l->memory_mib = (unsigned long long)pages *
		    (unsigned long long)psz / 2 / (1024 * 1024);
}

static const struct key {
	const char	*name;
	unsigned	 bit;
	int		 real;		/* a decimal number, not an integer */
	double		 max;
} keys[] = {
	{ "memory_mib",		SBX_RL_MEMORY,	0, 1 << 30 },
	{ "cpus",		SBX_RL_CPUS,	1, 4096 },
	{ "pids",		SBX_RL_PIDS,	0, 1 << 22 },
	{ "disk_mib",		SBX_RL_DISK,	0, 1 << 30 },
	{ "wall_timeout",	SBX_RL_WALL,	1, 31 * 86400 },
	{ "nofile",		SBX_RL_NOFILE,	0, 1 << 20 },
	{ "file_size_mib",	SBX_RL_FSIZE,	0, 1 << 30 },
};

static const struct key *
find_key(const char *name)
{
	size_t	 i;

	for (i = 0; i < sizeof(keys) / sizeof(*keys); i++)
		if (strcmp(keys[i].name, name) == 0)
			return &keys[i];
	return NULL;
}

static void
store(struct sbx_runlimits *l, const struct key *k, double v, int explicit)
{
	switch (k->bit) {
	case SBX_RL_MEMORY: l->memory_mib = (unsigned long long)v; break;
	case SBX_RL_CPUS: l->cpus = v; break;
	case SBX_RL_PIDS: l->pids = (unsigned long long)v; break;
	case SBX_RL_DISK: l->disk_mib = (unsigned long long)v; break;
	case SBX_RL_WALL: l->wall_timeout = v; break;
	case SBX_RL_NOFILE: l->nofile = (unsigned long long)v; break;
	case SBX_RL_FSIZE: l->file_size_mib = (unsigned long long)v; break;
	}
	if (explicit && v > 0)
		l->explicit_mask |= k->bit;
	else if (explicit)
		l->explicit_mask &= ~k->bit;
}

int
sbx_limits_merge_json(struct sbx_runlimits *l, const json_t *obj,
    int explicit, const char *origin, struct sbx_error *e)
{
	const char		*name;
	const struct key	*k;
	json_t			*v;
	double			 d;

	if (obj == NULL)
		return 0;
	if (!json_is_object(obj))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "limits",
		    "config_invalid", "%s: `limits` must be an object", origin);
	json_object_foreach((json_t *)obj, name, v) {
		if ((k = find_key(name)) == NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, "limits",
			    "config_invalid", "%s: unknown limit `%s`", origin,
			    name);
		if (!json_is_number(v) || (!k->real && !json_is_integer(v)))
			return sbx_error_set(e, SBX_K_INVALID_ARGS, name,
			    "config_invalid", "%s: limit `%s` must be a%s "
			    "number", origin, name, k->real ? "" : "n integer");
		d = json_number_value(v);
		if (!isfinite(d) || d < 0 || d > k->max)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, name,
			    "config_invalid", "%s: limit `%s` is out of range",
			    origin, name);
		store(l, k, d, explicit);
	}
	return 0;
}

/* A size in MiB (memory_mib, disk_mib, file_size_mib)? */
static int
is_mib(const struct key *k)
{
	return k->bit == SBX_RL_MEMORY || k->bit == SBX_RL_DISK ||
	    k->bit == SBX_RL_FSIZE;
}

/* The command-line option behind a key, for messages. */
static const char *
option_of(const char *key)
{
	static const char *const map[][2] = {
		{ "memory_mib", "--memory" }, { "cpus", "--cpus" },
		{ "pids", "--pids" }, { "disk_mib", "--disk" },
		{ "wall_timeout", "--wall-timeout" }, { "nofile", "--nofile" },
		{ "file_size_mib", "--file-size" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(map) / sizeof(*map); i++)
		if (strcmp(map[i][0], key) == 0)
			return map[i][1];
	return key;
}

int
sbx_limits_set(struct sbx_runlimits *l, const char *key, const char *value,
    struct sbx_error *e)
{
	const struct key	*k = find_key(key);
	unsigned long long	 u;
	double			 d;

	if (k == NULL)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, key, "unknown",
		    "unknown limit %s", key);
	if (k->real) {
		if (sbx_cli_parse_seconds(value, k->max, &d) == -1)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, key,
			    "invalid_number", "argument `%s` must be a positive "
			    "number up to %.0f", option_of(key), k->max);
	} else if (is_mib(k)) {
		/* 1g, 512m, as docker reads --memory; a plain number is
		 * MiB, as it always was. */
		if (sbx_cli_parse_mib(value, (unsigned long long)k->max, &u) ==
		    -1)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, key,
			    "invalid_number", "argument `%s` must be a size "
			    "from 1 MiB to %.0f MiB: a whole number of MiB "
			    "(512), or a number with a unit k, m, g or t "
			    "(512m, 1g; binary, a whole number of MiB)",
			    option_of(key), k->max);
		d = (double)u;
	} else {
		if (sbx_cli_parse_uint(value, (unsigned long long)k->max, &u) ==
			-1 ||
		    u == 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS, key,
			    "invalid_number", "argument `%s` must be an integer "
			    "from 1 to %.0f", option_of(key), k->max);
		d = (double)u;
	}
	store(l, k, d, 1);
	return 0;
}
