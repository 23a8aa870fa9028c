/*
 * provision-remove.c: sbx provision unprovision, reset and remove, rendered.  Part of
 * sbx-provision (cmd/sbx-provision.c parses).
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

/* ---- unprovision, reset, remove ----------------------------------------- */

int
do_unprovision(void)
{
	struct sbx_error	 e;
	json_t			*removed, *warnings, *res;
	char			 home[64];
	int			 rootfd;

	rootfd = open_root_existing(0);
	prov_disk_refuse_removal(rootfd, O.agent);
	removed = json_array();
	warnings = json_array();
	/* No state root: nothing to revoke, and nothing to create. */
	if (rootfd >= 0 && sbx_provision_unprovision(rootfd, O.agent, removed,
	    warnings, &e) == -1)
		sbx_cmd_die(&e);
	SBX_LPATH(home, SBX_L_AGENT_HOME, O.agent);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:o,s:[s]}", "agent", O.agent, "root",
		    root_json(), "removed", removed, "kept", home);
		sbx_cmd_emit(sbx_envelope_ok(tool, res, warnings));
		return 0;
	}
	if (!O.quiet) {
		print_warnings(warnings);
		print_list("removed   ", removed);
		printf("agent %s unprovisioned: %zu removed; home %s kept\n",
		    O.agent, json_array_size(removed), home);
	}
	json_decref(removed);
	json_decref(warnings);
	return 0;
}

int
do_reset(void)
{
	struct sbx_error	 e;
	json_t			*removed;
	int			 rootfd;

	rootfd = open_root_existing(0);
	removed = json_array();
	if (rootfd >= 0 && sbx_provision_reset(rootfd, removed, &e) == -1)
		sbx_cmd_die(&e);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o}",
		    "root", root_json(), "removed", removed), NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", removed);
		printf("reset %s: %zu removed from envs/ and cache/; homes, "
		    "images and settings kept\n", root.path,
		    json_array_size(removed));
	}
	json_decref(removed);
	return 0;
}

int
do_remove(void)
{
	struct sbx_error	 e;
	json_t			*targets, *removed, *v;
	size_t			 i;
	int			 rootfd;

	rootfd = open_root_existing(0);
	prov_disk_refuse_removal(rootfd, NULL);
	if (!O.yes) {
		targets = sbx_provision_remove_targets(rootfd, &e);
		if (targets == NULL)
			sbx_cmd_die(&e);
		sbx_error_set(&e, SBX_K_REJECTED, "yes",
		    "confirmation_required", "refusing to remove %zu "
		    "entr%s of the state root %s without --yes",
		    json_array_size(targets), json_array_size(targets) == 1 ?
		    "y" : "ies", root.path);
		sbx_error_hint(&e, "run `sbx provision remove --yes`; "
		    "workspace/ (the agents' homes) is kept");
		if (!O.json)
			json_array_foreach(targets, i, v)
				print_line(stderr, PROG ": would remove ",
				    json_string_value(v), "");
		sbx_cmd_die_extra(&e, json_pack("{s:o,s:o}", "would_remove",
		    targets, "root", root_json()), SBX_EX_NEGATIVE);
	}
	removed = json_array();
	if (rootfd >= 0 && sbx_provision_remove(rootfd, removed, &e) == -1)
		sbx_cmd_die(&e);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o,s:[s]}",
		    "root", root_json(), "removed", removed, "kept",
		    "workspace"), NULL));
		return 0;
	}
	if (!O.quiet) {
		print_list("removed   ", removed);
		printf("removed %zu entries of %s; workspace/ kept\n",
		    json_array_size(removed), root.path);
	}
	json_decref(removed);
	return 0;
}
