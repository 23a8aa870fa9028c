/*
 * provision-agent.c: sbx provision itself: create or repair the state root
 * and an agent (provision.c), bind its image and own environment
 * (agentset.c), make the run user; rendered.  Part of sbx-provision
 * (cmd/sbx-provision.c parses).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "agentset.h"
#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "download.h"
#include "envelope.h"
#include "fsutil.h"
#include "image.h"
#include "imageref.h"
#include "imagestore.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "opts.h"
#include "provision.h"
#include "root.h"
#include "rootfs.h"
#include "time.h"
#include "users.h"
#include "utf8.h"

#include "provision-int.h"

/* ---- provision ---------------------------------------------------------- */

/* As root, sandboxes run as another uid, which bwrap needs to walk down to
 * the homes with: say so now rather than at the first sbx exec. */
static void
check_reachable(struct sbx_provision *p)
{
	struct stat	 st;
	char		 path[PATH_MAX], msg[PATH_MAX + 256], *s;

	if (!p->as_root || strlen(root.path) >= sizeof(path))
		return;
	snprintf(path, sizeof(path), "%s", root.path);
	while ((s = strrchr(path, '/')) != NULL) {
		s[s == path ? 1 : 0] = '\0';
		if (stat(path, &st) == 0 && !(st.st_mode & S_IXOTH)) {
			snprintf(msg, sizeof(msg), "sandboxes run as uid %u, "
			    "which cannot reach the state root through %s; "
			    "sbx exec will refuse it", (unsigned)p->run_uid,
			    path);
			json_array_append_new(p->warnings, sbx_json_bytes(msg,
			    strlen(msg)));
			return;
		}
		if (s == path)
			break;
	}
}

/*
 * As root, sandboxes run as run_as (config/sandbox.json), else the `sbx`
 * system user, else nobody.  nobody is shared: host daemons run as it too,
 * and the per-uid budgets a sandbox can exhaust (RLIMIT_NPROC, inotify
 * instances, the keyring quota) are theirs as well, as are files only
 * nobody can read.  So provision creates the sbx user when neither is
 * there, and fails closed when it cannot: running as nobody is a choice
 * made out loud (--no-create-user, with a warning), never a fallback.
 */
static json_t *
ensure_run_user(json_t *warnings)
{
	struct sbx_error	 e;
	const char		*env = getenv("SBX_NO_CREATE_USER");
	uid_t			 uid;
	gid_t			 gid;
	int			 r;

	if ((r = sbx_identity_wants_user(root.fd, &e)) == -1)
		sbx_cmd_die(&e);
	if (r == 0)
		return NULL;
	if (O.no_create_user || (env != NULL && strcmp(env, "1") == 0)) {
		json_array_append_new(warnings, json_string("no `sbx` user and "
		    "no run_as in config/sandbox.json: sandboxes run as nobody "
		    "(65534), whose per-uid limits host daemons share; "
		    "`sbx provision` without --no-create-user creates the sbx "
		    "user"));
		return NULL;
	}
	if (sbx_user_create(SBX_USERADD, NULL, SBX_RUN_USER, &uid, &gid,
	    &e) == -1) {
		/* A provision running at the same time may have made it. */
		if (sbx_user_by_name(SBX_RUN_USER, &uid, &gid) == 0 &&
		    uid != 0)
			return NULL;
		sbx_cmd_die(&e);
	}
	if (!O.quiet)
		fprintf(stderr, "%s: created the system user %s (uid %u, gid "
		    "%u): root's sandboxes run as it\n", PROG, SBX_RUN_USER,
		    (unsigned)uid, (unsigned)gid);
	return json_pack("{s:s,s:I,s:I}", "name", SBX_RUN_USER, "uid",
	    (json_int_t)uid, "gid", (json_int_t)gid);
}

int
do_provision(void)
{
	struct sbx_provision	 p;
	struct sbx_error	 e;
	struct stat		 st;
	struct sbx_agentset	 set;
	char			*token_file = NULL;
	json_t			*res, *v, *uwarn, *new_user, *disk;
	size_t			 i;
	int			 created, settling;

	created = stat(root.path, &st) == -1 && errno == ENOENT;
	if (sbx_root_open(&root, 1, &e) == -1)
		sbx_cmd_die(&e);
	/* Before the umask below: useradd writes the passwd files. */
	if ((uwarn = json_array()) == NULL)
		exit(SBX_EX_OSERR);
	new_user = ensure_run_user(uwarn);
	/* Every mode is set explicitly below; this umask only makes mkdir
	 * produce them exactly (0711 and 0700 alike), so that a concurrent
	 * provision never sees a half-made directory as one to repair, and
	 * it never lets group or others read or write. */
	umask(066);
	if (sbx_provision_init(&p, root.fd, O.agent) == -1) {
		sbx_error_sys(&e, "nomem", "provision");
		sbx_cmd_die(&e);
	}
	p.root_created = created;
	/* Running `sbx provision` is what lifts an unprovision. */
	p.restore = 1;
	disk = prov_disk_pre();
	if (sbx_provision_agent(&p, &e) == -1) {
		json_t *extra = NULL;

		if (json_array_size(p.problems) > 0)
			extra = json_pack("{s:O}", "problems", p.problems);
		if (!O.json && !O.quiet) {
			json_array_foreach(p.problems, i, v) {
				print_line(stderr, PROG ": refused: ",
				    json_string_value(json_object_get(v,
				    "path")), strcmp(json_string_value(
				    json_object_get(v, "state")), "symlink") ==
				    0 ? " (a symlink)" : " (wrong type or "
				    "owner)");
			}
		}
		sbx_cmd_die_extra(&e, extra, -1);
	}
	check_reachable(&p);
	identity_provisioned(O.agent, p.created);
	settling = O.image != NULL || O.env || O.no_env;
	/* An old config's image binding moves into the record. */
	if (!settling && sbx_agentset_write(&p, O.agent, "", 0, 1, &e) == -1)
		sbx_cmd_die(&e);
	memset(&set, 0, sizeof(set));
	if (settling && sbx_agentset_settle(&p, O.agent, O.image,
	    O.env, O.no_env, &set, &e) == -1)
		sbx_cmd_die(&e);
	if (disk == NULL)
		disk = prov_disk();
	json_array_extend(p.warnings, set.x.warnings);
	json_array_extend(p.warnings, uwarn);
	json_decref(uwarn);
	if (asprintf(&token_file, "%s/run/tokens/%s", root.path, O.agent) == -1)
		exit(SBX_EX_OSERR);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:s,s:O,s:O,s:O}", "agent", O.agent,
		    "root", root_json(), "token_file", token_file, "created",
		    p.created, "repaired", p.repaired, "present", p.present);
		json_object_set_new(res, "restored",
		    json_boolean(p.restored));
		if (new_user != NULL)
			json_object_set(res, "created_user", new_user);
		if (disk != NULL)
			json_object_set(res, "disk", disk);
		if (settling) {
			json_object_set_new(res, "image", set.digest[0] ?
			    json_string(set.digest) : json_null());
			json_object_set_new(res, "env", set.made ?
			    sbx_agentset_env_json(O.agent, &set) : json_null());
			json_object_set(res, "evicted", set.x.evicted);
			json_object_set(res, "removed", set.removed);
		}
		sbx_cmd_emit(sbx_envelope_ok(tool, res,
		    json_incref(p.warnings)));
	} else if (!O.quiet) {
		print_warnings(p.warnings);
		print_list("created   ", p.created);
		print_list("repaired  ", p.repaired);
		if (O.verbose)
			print_list("present   ", p.present);
		if (p.restored)
			printf("agent %s restored: it had been unprovisioned; "
			    "a new token is issued\n", O.agent);
		printf("agent %s provisioned in %s: %zu created, %zu repaired, "
		    "%zu already present\n", O.agent, root.path,
		    json_array_size(p.created), json_array_size(p.repaired),
		    json_array_size(p.present));
		print_line(stdout, "token file ", token_file, "");
		if (settling)
			printf("image %s\n", set.digest[0] ? set.digest :
			    "none");
		/* Nothing was copied for one already there: no counters,
		 * which would read as an empty environment. */
		if (set.made && set.x.present)
			printf("env envs/%s/rootfs: already present\n",
			    O.agent);
		else if (set.made)
			printf("env envs/%s/rootfs: %s (%s, %llu files, %llu "
			    "bytes, %.1f ms)\n", O.agent, set.x.replaced ?
			    "replaced" : "created", set.x.clone ? set.x.clone :
			    "copy", set.x.files, set.x.bytes, set.x.clone_ms);
		json_array_foreach(set.x.evicted, i, v)
			printf("evicted   %s (last used %s)\n",
			    json_string_value(json_object_get(v, "path")),
			    json_string_value(json_object_get(v,
			    "last_used")));
		print_list("removed   ", set.removed);
		if (disk != NULL)
			printf("disk %s\n", json_string_value(json_object_get(
			    disk, "summary")));
	}
	json_decref(disk);
	free(token_file);
	json_decref(new_user);
	if (settling)
		sbx_agentset_release(&set);
	sbx_provision_release(&p);
	return 0;
}
