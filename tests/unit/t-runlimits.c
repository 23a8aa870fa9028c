/* t-runlimits: limit defaults, the `limits` JSON merge (ranges, types,
 * precedence of asked-for limits), flag values, and sbx_settings_load on a
 * temporary root. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "fsutil.h"
#include "runlimits.h"
#include "settings.h"

static const struct {
	const char	*key;
	unsigned	 bit;
	int		 real;
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
#define NKEYS	(sizeof(keys) / sizeof(*keys))

static char	 root[64];
/* The last merged object: an error's field names one of its keys. */
static json_t	*last;

/* The value of the field behind a key. */
static double
value_of(const struct sbx_runlimits *l, unsigned bit)
{
	switch (bit) {
	case SBX_RL_MEMORY:	return (double)l->memory_mib;
	case SBX_RL_CPUS:	return l->cpus;
	case SBX_RL_PIDS:	return (double)l->pids;
	case SBX_RL_DISK:	return (double)l->disk_mib;
	case SBX_RL_WALL:	return l->wall_timeout;
	case SBX_RL_NOFILE:	return (double)l->nofile;
	case SBX_RL_FSIZE:	return (double)l->file_size_mib;
	}
	return -1;
}

/* Merge the JSON text over l; the return value, e filled. */
static int
merge(struct sbx_runlimits *l, const char *text, int explicit,
    struct sbx_error *e)
{
	json_error_t	 je;
	json_t		*j;
	int		 rc;

	memset(e, 0, sizeof(*e));
	json_decref(last);
	last = NULL;
	if ((j = json_loads(text, JSON_DECODE_ANY, &je)) == NULL) {
		diag("test bug: bad JSON %s: %s", text, je.text);
		return -2;
	}
	rc = sbx_limits_merge_json(l, j, explicit, "agent.json", e);
	last = j;
	return rc;
}

static int
is_err(struct sbx_error *e, const char *kind, const char *field,
    const char *reason, const char *words)
{
	int	 good;

	good = e->kind != NULL && strcmp(e->kind, kind) == 0 &&
	    (field == NULL ? e->field == NULL : (e->field != NULL &&
	    strcmp(e->field, field) == 0)) &&
	    e->reason != NULL && strcmp(e->reason, reason) == 0 &&
	    (words == NULL || strstr(e->message, words) != NULL);
	if (!good)
		diag("  got kind %s field %s reason %s: %s",
		    e->kind ? e->kind : "(null)",
		    e->field ? e->field : "(null)",
		    e->reason ? e->reason : "(null)", e->message);
	return good;
}

static void
test_defaults(void)
{
	struct sbx_runlimits	 l;
	unsigned long long	 half;

	memset(&l, 0xa5, sizeof(l));
	sbx_limits_defaults(&l);
	half = (unsigned long long)sysconf(_SC_PHYS_PAGES) *
	    (unsigned long long)sysconf(_SC_PAGESIZE) / 2 / (1024 * 1024);
	ok(l.pids == SBX_DEFAULT_PIDS && l.pids == 1024,
	    "defaults: 1024 tasks");
	ok(l.memory_mib == half && half > 0,
	    "defaults: half of physical memory (%llu MiB)", half);
	ok(l.cpus == 0 && l.disk_mib == 0 && l.wall_timeout == 0 &&
	    l.nofile == 0 && l.file_size_mib == 0,
	    "defaults: nothing else is limited");
	ok(l.explicit_mask == 0 && l.soft == 0,
	    "defaults: nothing asked for, not soft");
}

static void
test_merge_keys(void)
{
	struct sbx_runlimits	 l;
	struct sbx_error	 e;
	char			 text[256], words[128];
	size_t			 i;
	int			 rc;

	for (i = 0; i < NKEYS; i++) {
		/* Integers are good for every key; the maximum is in. */
		sbx_limits_defaults(&l);
		snprintf(text, sizeof(text), "{\"%s\": %.0f}", keys[i].key,
		    keys[i].max);
		rc = merge(&l, text, 1, &e);
		ok(rc == 0 && value_of(&l, keys[i].bit) == keys[i].max &&
		    l.explicit_mask == keys[i].bit,
		    "%s: the maximum %.0f is taken and marked asked-for",
		    keys[i].key, keys[i].max);

		/* One past the maximum. */
		sbx_limits_defaults(&l);
		snprintf(text, sizeof(text), "{\"%s\": %.0f}", keys[i].key,
		    keys[i].max + 1);
		rc = merge(&l, text, 1, &e);
		ok(rc == -1 && is_err(&e, SBX_K_INVALID_ARGS, keys[i].key,
		    "config_invalid", "out of range") &&
		    strstr(e.message, "agent.json") != NULL,
		    "%s: above the maximum is out of range, naming the origin",
		    keys[i].key);

		/* Negative. */
		snprintf(text, sizeof(text), "{\"%s\": -1}", keys[i].key);
		rc = merge(&l, text, 1, &e);
		ok(rc == -1 && is_err(&e, SBX_K_INVALID_ARGS, keys[i].key,
		    "config_invalid", "out of range"),
		    "%s: negative is out of range", keys[i].key);

		/* A string, a boolean, null, an array: never a number. */
		snprintf(text, sizeof(text), "{\"%s\": \"5\"}", keys[i].key);
		rc = merge(&l, text, 1, &e);
		snprintf(words, sizeof(words), "limit `%s` must be a",
		    keys[i].key);
		ok(rc == -1 && is_err(&e, SBX_K_INVALID_ARGS, keys[i].key,
		    "config_invalid", words), "%s: a string is refused",
		    keys[i].key);
		snprintf(text, sizeof(text), "{\"%s\": true}", keys[i].key);
		ok(merge(&l, text, 1, &e) == -1 && is_err(&e,
		    SBX_K_INVALID_ARGS, keys[i].key, "config_invalid", words),
		    "%s: a boolean is refused", keys[i].key);
		snprintf(text, sizeof(text), "{\"%s\": null}", keys[i].key);
		ok(merge(&l, text, 1, &e) == -1 && is_err(&e,
		    SBX_K_INVALID_ARGS, keys[i].key, "config_invalid", words),
		    "%s: null is refused", keys[i].key);
		snprintf(text, sizeof(text), "{\"%s\": [1]}", keys[i].key);
		ok(merge(&l, text, 1, &e) == -1 && is_err(&e,
		    SBX_K_INVALID_ARGS, keys[i].key, "config_invalid", words),
		    "%s: an array is refused", keys[i].key);

		/* A fraction: only the real-valued keys take one. */
		sbx_limits_defaults(&l);
		snprintf(text, sizeof(text), "{\"%s\": 1.5}", keys[i].key);
		rc = merge(&l, text, 1, &e);
		if (keys[i].real)
			ok(rc == 0 && value_of(&l, keys[i].bit) == 1.5,
			    "%s: 1.5 is taken", keys[i].key);
		else
			ok(rc == -1 && is_err(&e, SBX_K_INVALID_ARGS,
			    keys[i].key, "config_invalid", "an integer"),
			    "%s: 1.5 is refused, an integer is needed",
			    keys[i].key);
	}

	/* Huge reals: out of range, never converted. */
	sbx_limits_defaults(&l);
	ok(merge(&l, "{\"cpus\": 1e300}", 1, &e) == -1 && is_err(&e,
	    SBX_K_INVALID_ARGS, "cpus", "config_invalid", "out of range") &&
	    l.cpus == 0, "cpus 1e300: out of range, cpus unchanged");
	ok(merge(&l, "{\"wall_timeout\": 2678400.5}", 1, &e) == -1,
	    "wall_timeout: a fraction above 31 days is out of range");
}

static void
test_merge_shape(void)
{
	struct sbx_runlimits	 l, before;
	struct sbx_error	 e;

	sbx_limits_defaults(&l);
	before = l;
	memset(&e, 0, sizeof(e));
	ok(sbx_limits_merge_json(&l, NULL, 1, "x", &e) == 0 &&
	    memcmp(&l, &before, sizeof(l)) == 0 && e.kind == NULL,
	    "no `limits` object: nothing changes");
	ok(merge(&l, "{}", 1, &e) == 0 && memcmp(&l, &before,
	    sizeof(l)) == 0, "an empty object changes nothing");
	ok(merge(&l, "[1, 2]", 1, &e) == -1 && is_err(&e, SBX_K_INVALID_ARGS,
	    "limits", "config_invalid", "agent.json: `limits` must be an "
	    "object"), "an array is refused");
	ok(merge(&l, "42", 0, &e) == -1 && is_err(&e, SBX_K_INVALID_ARGS,
	    "limits", "config_invalid", "must be an object"),
	    "a number is refused");
	ok(merge(&l, "{\"memory\": 5}", 1, &e) == -1 && is_err(&e,
	    SBX_K_INVALID_ARGS, "limits", "config_invalid",
	    "unknown limit `memory`"), "an unknown key is refused by name");
	ok(merge(&l, "{\"Memory_mib\": 5}", 1, &e) == -1 && is_err(&e,
	    SBX_K_INVALID_ARGS, "limits", "config_invalid", "unknown limit"),
	    "keys are case-sensitive");
	ok(merge(&l, "{\"soft\": 1}", 1, &e) == -1 &&
	    is_err(&e, SBX_K_INVALID_ARGS, "limits", "config_invalid", NULL),
	    "soft is not a limit key");
	ok(merge(&l, "{\"explicit_mask\": 1}", 1, &e) == -1,
	    "explicit_mask cannot be set from JSON");
}

static void
test_precedence(void)
{
	struct sbx_runlimits	 l;
	struct sbx_error	 e;

	/* sandbox.json (not asked for), then the agent's (asked for),
	 * then flags: the last word wins the value; asked-for bits come
	 * only from the explicit layers. */
	sbx_limits_defaults(&l);
	ok(merge(&l, "{\"memory_mib\": 512, \"cpus\": 2, \"pids\": 64}", 0,
	    &e) == 0 && l.memory_mib == 512 && l.cpus == 2 && l.pids == 64 &&
	    l.explicit_mask == 0,
	    "sandbox.json: values taken, none marked asked-for");
	ok(merge(&l, "{\"memory_mib\": 256, \"wall_timeout\": 30}", 1,
	    &e) == 0 && l.memory_mib == 256 && l.cpus == 2 &&
	    l.wall_timeout == 30 && l.explicit_mask == (SBX_RL_MEMORY |
	    SBX_RL_WALL), "agent: its keys override and are asked-for");
	ok(sbx_limits_set(&l, "cpus", "0.5", &e) == 0 && l.cpus == 0.5 &&
	    l.explicit_mask == (SBX_RL_MEMORY | SBX_RL_WALL | SBX_RL_CPUS),
	    "flag: overrides sandbox.json and is asked-for");
	ok(sbx_limits_set(&l, "memory_mib", "128", &e) == 0 &&
	    l.memory_mib == 128 && (l.explicit_mask & SBX_RL_MEMORY),
	    "flag: overrides the agent");
	ok(merge(&l, "{\"memory_mib\": 1024}", 0, &e) == 0 &&
	    l.memory_mib == 1024 && (l.explicit_mask & SBX_RL_MEMORY),
	    "a later implicit layer keeps the asked-for bit");
	ok(merge(&l, "{\"wall_timeout\": 0}", 1, &e) == 0 &&
	    l.wall_timeout == 0 && !(l.explicit_mask & SBX_RL_WALL),
	    "an explicit 0 removes the limit and its asked-for bit");
	ok(merge(&l, "{\"pids\": 0}", 0, &e) == 0 && l.pids == 0,
	    "an implicit 0 removes the default pids limit");
}

/* --memory 1g, --disk 512m (issue 28 item 9): docker's units. */
static void
test_set_units(void)
{
	struct sbx_runlimits	 l;
	struct sbx_error	 e;

	sbx_limits_defaults(&l);
	ok(sbx_limits_set(&l, "memory_mib", "1g", &e) == 0 &&
	    l.memory_mib == 1024, "--memory 1g: 1024 MiB");
	ok(sbx_limits_set(&l, "disk_mib", "512m", &e) == 0 &&
	    l.disk_mib == 512, "--disk 512m: 512 MiB");
	ok(sbx_limits_set(&l, "file_size_mib", "2GiB", &e) == 0 &&
	    l.file_size_mib == 2048, "--file-size 2GiB: 2048 MiB");
	memset(&e, 0, sizeof(e));
	ok(sbx_limits_set(&l, "memory_mib", "1q", &e) == -1 &&
	    strstr(e.message, "k, m, g or t") != NULL &&
	    strstr(e.message, "--memory") != NULL,
	    "an unknown unit: the message names the option and the units");
	ok(sbx_limits_set(&l, "pids", "1k", &e) == -1,
	    "no units for a count (--pids)");
}

static void
test_set(void)
{
	static const char *const bad_int[] = {
		"0", "-1", "+5", " 5", "5 ", "5k", "1.5", "", "0x10", "abc",
		"99999999999999999999999",
	};
	static const char *const bad_real[] = {
		"0", "-1", "+1", "1e3", "inf", "nan", "1..2", ".", "", "0x1",
		"1,5", " 1",
	};
	struct sbx_runlimits	 l;
	struct sbx_error	 e;
	char			 v[64];
	size_t			 i, j;
	int			 good;

	for (i = 0; i < NKEYS; i++) {
		sbx_limits_defaults(&l);
		snprintf(v, sizeof(v), "%.0f", keys[i].max);
		ok(sbx_limits_set(&l, keys[i].key, v, &e) == 0 &&
		    value_of(&l, keys[i].bit) == keys[i].max &&
		    l.explicit_mask == keys[i].bit,
		    "set %s %s: taken, asked-for", keys[i].key, v);
		ok(sbx_limits_set(&l, keys[i].key, "1", &e) == 0 &&
		    value_of(&l, keys[i].bit) == 1, "set %s 1: the minimum",
		    keys[i].key);
		snprintf(v, sizeof(v), "%.0f", keys[i].max + 1);
		memset(&e, 0, sizeof(e));
		ok(sbx_limits_set(&l, keys[i].key, v, &e) == -1 && is_err(&e,
		    SBX_K_INVALID_ARGS, keys[i].key, "invalid_number",
		    keys[i].real ? "must be a positive number up to" :
		    strstr(keys[i].key, "_mib") != NULL ?
		    "must be a size from 1 MiB to" :
		    "must be an integer from 1 to") &&
		    value_of(&l, keys[i].bit) == 1,
		    "set %s %s: above the maximum, value unchanged",
		    keys[i].key, v);
		good = 1;
		if (keys[i].real) {
			for (j = 0; j < sizeof(bad_real) / sizeof(*bad_real);
			    j++)
				if (sbx_limits_set(&l, keys[i].key, bad_real[j],
				    &e) != -1) {
					diag("  `%s` was taken", bad_real[j]);
					good = 0;
				}
		} else {
			for (j = 0; j < sizeof(bad_int) / sizeof(*bad_int);
			    j++)
				if (sbx_limits_set(&l, keys[i].key, bad_int[j],
				    &e) != -1) {
					diag("  `%s` was taken", bad_int[j]);
					good = 0;
				}
		}
		ok(good && value_of(&l, keys[i].bit) == 1,
		    "set %s: zero, signs, spaces, suffixes, garbage refused",
		    keys[i].key);
	}
	sbx_limits_defaults(&l);
	ok(sbx_limits_set(&l, "cpus", "1.25", &e) == 0 && l.cpus == 1.25,
	    "set cpus 1.25: a fraction");
	ok(sbx_limits_set(&l, "wall_timeout", "0.5", &e) == 0 &&
	    l.wall_timeout == 0.5, "set wall_timeout 0.5: a fraction");
	ok(sbx_limits_set(&l, "memory_mib", "x", &e) == -1 &&
	    strstr(e.message, "--memory") != NULL,
	    "a bad value names the option (--memory)");
	ok(sbx_limits_set(&l, "file_size_mib", "x", &e) == -1 &&
	    strstr(e.message, "--file-size") != NULL,
	    "a bad value names the option (--file-size)");
	ok(sbx_limits_set(&l, "wall_timeout", "x", &e) == -1 &&
	    strstr(e.message, "--wall-timeout") != NULL,
	    "a bad value names the option (--wall-timeout)");
	memset(&e, 0, sizeof(e));
	ok(sbx_limits_set(&l, "memory", "5", &e) == -1 &&
	    is_err(&e, SBX_K_INVALID_ARGS, "memory", "unknown", "memory"),
	    "set: an unknown key is refused");
}

/* Write text to root/rel. */
static int
put(int dfd, const char *rel, const char *text)
{
	int	 fd, rc;

	if ((fd = openat(dfd, rel, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1)
		return -1;
	rc = sbx_fs_write_all(fd, text, strlen(text));
	close(fd);
	return rc;
}

static void
test_config_load(void)
{
	struct sbx_error	 e;
	json_t			*j = NULL;
	char			*big;
	int			 dfd;

	snprintf(root, sizeof(root), "/tmp/t-runlimits.XXXXXX");
	if ((dfd = t_tmpdir(root)) == -1) {
		skip_n(12, "no temp dir: %s", strerror(errno));
		return;
	}
	j = (json_t *)&e;
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == 0 &&
	    j == NULL, "missing config/ directory: no config, no error");
	(void)mkdirat(dfd, "config", 0755);
	j = (json_t *)&e;
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == 0 &&
	    j == NULL, "missing file: no config, no error");

	put(dfd, "config/sandbox.json",
	    "{\"limits\": {\"memory_mib\": 64}}\n");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == 0 &&
	    j != NULL && json_integer_value(json_object_get(json_object_get(j,
	    "limits"), "memory_mib")) == 64, "an object is loaded");
	json_decref(j);

	put(dfd, "config/sandbox.json", "[1, 2]");
	memset(&e, 0, sizeof(e));
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL && is_err(&e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "config/sandbox.json: "),
	    "a non-object is config_invalid, naming the file");
	put(dfd, "config/sandbox.json", "\"text\"");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL, "a string is refused");
	put(dfd, "config/sandbox.json", "{\"limits\": ");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL && is_err(&e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "malformed JSON"), "invalid JSON is refused");
	put(dfd, "config/sandbox.json", "");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL, "an empty file is refused");
	put(dfd, "config/sandbox.json", "{\"a\": 1, \"a\": 2}");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL, "duplicate keys are refused");

	/* Over the size cap (1 MiB). */
	if ((big = malloc((1u << 20) + 16)) != NULL) {
		memset(big, ' ', (1u << 20) + 15);
		big[0] = '{';
		big[(1u << 20) + 14] = '}';
		big[(1u << 20) + 15] = '\0';
		put(dfd, "config/sandbox.json", big);
		free(big);
	}
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL && is_err(&e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "larger than"), "a file over 1 MiB is refused");

	/* Not followed: a symlink, and a directory in the file's place. */
	(void)unlinkat(dfd, "config/sandbox.json", 0);
	put(dfd, "real.json", "{}");
	(void)!symlinkat("../real.json", dfd, "config/sandbox.json");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL && is_err(&e, SBX_K_INVALID_ARGS, "config",
	    "config_invalid", "symlink"), "a symlinked file is refused");
	(void)unlinkat(dfd, "config/sandbox.json", 0);
	(void)mkdirat(dfd, "config/sandbox.json", 0755);
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL, "a directory is refused");
	(void)unlinkat(dfd, "config/sandbox.json", AT_REMOVEDIR);
	(void)unlinkat(dfd, "config", AT_REMOVEDIR);
	(void)!symlinkat(".", dfd, "config");
	put(dfd, "sandbox.json", "{}");
	ok(sbx_settings_load(dfd, "config/sandbox.json", &j, &e) == -1 &&
	    j == NULL, "a symlinked config/ directory is refused");
	close(dfd);
}

int
main(void)
{
	test_defaults();
	test_merge_keys();
	test_merge_shape();
	test_precedence();
	test_set();
	test_set_units();
	test_config_load();
	json_decref(last);
	return done_testing();
}
