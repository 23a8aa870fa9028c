/* t-layout: the layout table is consistent, its paths are built safely, and
 * a freshly provisioned root is exactly what the table says. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "tap.h"

#include "layout.h"
#include "provision.h"

/* The order of sbx preflight's `locations` (its golden file). */
static const char *const report_order[] = {
	"root", "config", "sandbox_json", "config_agents", "agent_config",
	"workspace", "workspace_agents", "agent_home", "workspace_shared",
	"output", "agent_output", "images", "envs", "agents", "agent_records",
	"plugins", "run", "run_tokens", "agent_token", "proxy_socket",
	"bridge_socket", "cache", NULL
};

static void
table_checks(void)
{
	const struct sbx_layout_entry	*l, *pa;
	char				 want[SBX_LAYOUT_PATH_MAX];
	int				 i, k, bad_parent = 0, bad_prefix = 0;
	int				 bad_pct = 0, dup = 0, bad_chain = 0;
	int				 bad_mode = 0, r = 0;

	for (i = 0; i < SBX_L_N; i++) {
		l = sbx_layout_get(i);
		if (l == NULL || l->name == NULL || l->path == NULL) {
			ok(0, "entry %d is filled in", i);
			return;
		}
		for (k = 0; k < i; k++)
			if (strcmp(sbx_layout_get(k)->name, l->name) == 0 ||
			    strcmp(sbx_layout_get(k)->path, l->path) == 0)
				dup++;
		if (i == SBX_L_ROOT) {
			if (l->parent != -1 || strcmp(l->path, ".") != 0)
				bad_parent++;
			continue;
		}
		if (l->parent < 0 || l->parent >= i) {
			bad_parent++;
			continue;
		}
		pa = sbx_layout_get(l->parent);
		if (pa->type != SBX_LT_DIR)
			bad_parent++;
		/* A child's path is its parent's plus one component. */
		if (l->parent == SBX_L_ROOT)
			snprintf(want, sizeof(want), "%s", "");
		else
			snprintf(want, sizeof(want), "%s/", pa->path);
		if (strncmp(l->path, want, strlen(want)) != 0 ||
		    strchr(l->path + strlen(want), '/') != NULL)
			bad_prefix++;
		if ((strstr(l->path, "%s") != NULL) !=
		    ((l->flags & (SBX_LF_AGENT | SBX_LF_ARG)) != 0))
			bad_pct++;
		/* What provision makes or preflight reports hangs below
		 * what it makes or reports. */
		if (((l->flags & SBX_LF_CREATE) &&
		    !(pa->flags & SBX_LF_CREATE)) ||
		    ((l->flags & SBX_LF_REPORT) &&
		    !(pa->flags & SBX_LF_REPORT)))
			bad_chain++;
		if ((l->flags & SBX_LF_REACH) && l->type != SBX_LT_DIR)
			bad_mode++;
		/* Nothing sbx makes is writable by group or others. */
		if (l->mode & 022)
			bad_mode++;
	}
	is_int(dup, 0, "names and paths are unique");
	is_int(bad_parent, 0, "parents come first and are directories");
	is_int(bad_prefix, 0, "each path is its parent's plus one component");
	is_int(bad_pct, 0, "\"%s\" exactly in the per-agent and digest paths");
	is_int(bad_chain, 0, "created and reported entries hang below created "
	    "and reported ones");
	is_int(bad_mode, 0, "modes: reach only on directories, nothing "
	    "group/other-writable");
	for (i = 0, k = 0; i < SBX_L_N; i++) {
		l = sbx_layout_get(i);
		if (!(l->flags & SBX_LF_REPORT))
			continue;
		if (report_order[k] == NULL ||
		    strcmp(report_order[k], l->name) != 0)
			r++;
		k++;
	}
	ok(r == 0 && report_order[k] == NULL,
	    "the reported entries are "
	    "preflight's locations, in its order");
	ok(sbx_layout_get(SBX_L_N) == NULL && sbx_layout_get(-1) == NULL,
	    "out-of-range ids have no entry");
	is_int(sbx_layout_mode(SBX_L_WS_AGENTS, 1), 0711,
	    "reach: 0711 as root");
	is_int(sbx_layout_mode(SBX_L_WS_AGENTS, 0), 0700, "reach: 0700 else");
	is_int(sbx_layout_mode(SBX_L_RUN, 0), 0711, "run/ is 0711");
	is_int(sbx_layout_mode(SBX_L_AGENT_TOKEN, 1), 0600, "a token is 0600");
	/* bwrap, as the sandbox's uid, resolves cache/etc by path. */
	is_int(sbx_layout_mode(SBX_L_CACHE, 1), 0711, "cache/ is 0711 as root");
	is_int(sbx_layout_mode(SBX_L_CACHE, 0), 0700, "cache/ is 0700 else");
}

static void
path_checks(void)
{
	struct sbx_error	 e;
	char			 b[SBX_LAYOUT_PATH_MAX], small[8];

	ok(sbx_layout_path(SBX_L_AGENT_HOME, "a1", b, sizeof(b), &e) == 0,
	    "agent home built");
	is_str(b, "workspace/agents/a1", "agent home path");
	SBX_LPATH(b, SBX_L_AGENT_CONFIG, "a1");
	is_str(b, "config/agents/a1.json", "agent settings path");
	SBX_LPATH(b, SBX_L_IMAGE_ROOTFS, "abc");
	is_str(b, "images/abc/rootfs", "an image's rootfs path");
	SBX_LPATH(b, SBX_L_CACHE, NULL);
	is_str(b, "cache", "a path without an argument ignores it");
	SBX_LPATH(b, SBX_L_RUN_XWORKDIR, "3");
	is_str(b, "run/workdir-3", "an extra workdir's mount point");
	SBX_LPATH(b, SBX_L_CACHE_ETC, NULL);
	is_str(b, "cache/etc", "the prepared /etc");
	is_str(sbx_layout_leaf(b), "etc", "its leaf");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, "../x", b, sizeof(b), &e) == -1 &&
	    strcmp(e.reason, "invalid_component") == 0 && b[0] == '\0',
	    "a `/` in the agent is refused, the buffer left empty");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, "..", b, sizeof(b), &e) == -1,
	    "`..` refused");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, ".", b, sizeof(b), &e) == -1,
	    "`.` refused");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, "", b, sizeof(b), &e) == -1,
	    "an empty agent refused");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, NULL, b, sizeof(b), &e) == -1,
	    "a missing agent refused");
	ok(sbx_layout_path(SBX_L_IMAGE, "x/y", b, sizeof(b), &e) == -1 &&
	    strcmp(e.field, "digest") == 0, "a digest argument is named so");
	ok(sbx_layout_path(SBX_L_AGENT_HOME, "a1", small, sizeof(small),
	    &e) == -1 && small[0] == '\0', "a path that does not fit fails");
	is_str(sbx_layout_leaf("workspace/agents/a1"), "a1", "leaf");
	is_str(sbx_layout_leaf("cache"), "cache", "leaf of a top directory");
}

static mode_t
lmode(int rootfd, const char *rel, int *type)
{
	struct stat	 st;

	if (fstatat(rootfd, rel, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return (mode_t)-1;
	*type = S_ISDIR(st.st_mode) ? SBX_LT_DIR : S_ISREG(st.st_mode) ?
	    SBX_LT_FILE : S_ISSOCK(st.st_mode) ? SBX_LT_SOCK : -1;
	return st.st_mode & 07777;
}

/* Provision a1 in a fresh root and walk the table against it. */
static void
root_checks(void)
{
	struct sbx_provision	 p;
	struct sbx_error	 e;
	const struct sbx_layout_entry *l;
	char			 base[64], rel[SBX_LAYOUT_PATH_MAX];
	struct dirent		*de;
	DIR			*d;
	mode_t			 m;
	int			 rootfd, tmpfd, i, k, type, as_root;
	int			 missing = 0, wrong = 0, extra = 0, stray = 0;
	int			 fd;

	as_root = geteuid() == 0;
	snprintf(base, sizeof(base), "/tmp/t-layout.XXXXXX");
	if (mkdtemp(base) == NULL) {
		skip_n(8, "mkdtemp: %s", strerror(errno));
		return;
	}
	rootfd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ok(sbx_provision_init(&p, rootfd, "a1") == 0 &&
	    sbx_provision_agent(&p, &e) == 0, "a fresh root provisioned");
	for (i = 0, k = 0; i < SBX_L_N; i++)
		k += (sbx_layout_get(i)->flags & SBX_LF_CREATE) != 0;
	is_int(json_array_size(p.created) + json_array_size(p.repaired) +
	    json_array_size(p.present), k, "provision reports one item per "
	    "entry it makes");
	for (i = 0; i < SBX_L_N; i++) {
		l = sbx_layout_get(i);
		if (sbx_layout_path(i, "a1", rel, sizeof(rel), &e) == -1) {
			if (!(l->flags & SBX_LF_ARG))
				wrong++;
			continue;
		}
		m = lmode(rootfd, rel, &type);
		if (!(l->flags & SBX_LF_CREATE)) {
			/* Optional files, sockets of daemons that are not
			 * running, what other modules make on demand; the
			 * lock provision took stays, as flock(2) files do. */
			if (m != (mode_t)-1 && i != SBX_L_PROVISION_LOCK) {
				diag("%s exists", rel);
				extra++;
			}
			continue;
		}
		if (m == (mode_t)-1) {
			diag("%s is missing", rel);
			missing++;
		} else if ((int)l->type != type || (l->mode != 0 &&
		    m != sbx_layout_mode(i, as_root))) {
			diag("%s: mode %04o, want %04o", rel, (unsigned)m,
			    (unsigned)sbx_layout_mode(i, as_root));
			wrong++;
		}
	}
	is_int(missing, 0, "every entry provision makes exists");
	is_int(wrong, 0, "with the table's type and mode");
	is_int(extra, 0, "nothing else of the table exists");
	/* Nothing at the top that the table does not name. */
	if ((d = fdopendir(dup(rootfd))) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			for (k = 0; k < SBX_L_N; k++)
				if (strcmp(sbx_layout_get(k)->path,
				    de->d_name) == 0)
					break;
			if (k == SBX_L_N) {
				diag("stray %s", de->d_name);
				stray++;
			}
		}
		closedir(d);
	}
	is_int(stray, 0, "the root holds only what the table names");

	/* The helpers: on-demand directories get the table's mode. */
	fd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_JOBS, "a1", &e);
	ok(fd >= 0 && lmode(rootfd, "agents/a1/jobs", &type) == 0700,
	    "sbx_layout_mkdirs: agents/a1/jobs made 0700");
	if (fd >= 0)
		close(fd);
	/* A planted symlink is refused, never followed. */
	ok(symlinkat("/", rootfd, "envs/a1") == 0,
	    "a symlink planted at envs/a1");
	fd = sbx_layout_open(rootfd, SBX_L_ENV_ROOTFS, "a1",
	    O_RDONLY | O_DIRECTORY, &e);
	ok(fd == -1 && strcmp(e.reason, "symlink_in_path") == 0,
	    "sbx_layout_open refuses a symlink in the way");
	fd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_HOME, "", &e);
	ok(fd == -1, "sbx_layout_mkdirs never opens the root for a bad name");
	if (fd >= 0)
		close(fd);

	sbx_provision_release(&p);
	close(rootfd);
	tmpfd = open("/tmp", O_RDONLY | O_DIRECTORY);
	ok(sbx_provision_rm_tree(tmpfd, base + 5, &e) == 0, "root removed");
	close(tmpfd);
}

int
main(void)
{
	table_checks();
	path_checks();
	root_checks();
	return done_testing();
}
