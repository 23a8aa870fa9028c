/* runlimits.h: the resource limits of a run, from defaults, config and flags. */
#ifndef SBX_RUNLIMITS_H
#define SBX_RUNLIMITS_H

#include <jansson.h>

#include "error.h"

/* Bits of sbx_runlimits.explicit_mask / .set_mask. */
#define SBX_RL_MEMORY		0x01
#define SBX_RL_CPUS		0x02
#define SBX_RL_PIDS		0x04
#define SBX_RL_DISK		0x08
#define SBX_RL_WALL		0x10
#define SBX_RL_NOFILE		0x20
#define SBX_RL_FSIZE		0x40

#define SBX_DEFAULT_PIDS	1024

struct sbx_runlimits {
	unsigned long long	 memory_mib;	/* 0 = none */
	double			 cpus;		/* 0 = none */
	unsigned long long	 pids;		/* 0 = none */
	unsigned long long	 disk_mib;	/* 0 = none */
	double			 wall_timeout;	/* seconds, 0 = none */
	unsigned long long	 nofile;	/* 0 = inherit */
	unsigned long long	 file_size_mib;	/* 0 = none */
	unsigned		 explicit_mask;	/* asked for: must be hard */
	int			 soft;		/* --soft-limits */
};

/* Defaults: pids 1024, memory half of physical RAM; nothing else. */
void	sbx_limits_defaults(struct sbx_runlimits *);
/* Merge a `limits` object (from sandbox.json or an agent's json) over l.
 * `explicit` marks the keys given as asked-for (agent config, flags).
 * Unknown keys and bad values are refused (invalid_args, field = key). */
int	sbx_limits_merge_json(struct sbx_runlimits *, const json_t *,
	    int explicit, const char *origin, struct sbx_error *);
/* Parse one flag value into l (key as in JSON, e.g. "memory_mib"). */
int	sbx_limits_set(struct sbx_runlimits *, const char *key,
	    const char *value, struct sbx_error *);
#endif
