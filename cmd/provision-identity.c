/*
 * provision-identity.c: per-agent uids in sbx provision: the migration
 * of an agent to its own ids (--migrate-identity), the identity of a new
 * agent, and the identity object of sbx provision status.  Part of
 * sbx-provision (cmd/sbx-provision.c parses); the logic is
 * lib/state/idalloc.c, the plain user's namespace lib/sandbox/agentns.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "agentns.h"
#include "cmd.h"
#include "envelope.h"
#include "idalloc.h"
#include "identity.h"
#include "provision.h"
#include "root.h"

#include "provision-int.h"

/* The identity object of status (and of the migration's result): the
 * mode, the ids, the record's state; a pending migration is a problem. */
json_t *
identity_status(int rootfd, const char *agent, json_t *problems, int *bad)
{
	struct sbx_agentid a;
	struct sbx_idcfg   c;
	struct sbx_error   e;
	json_t		  *o;
	uid_t		   su = getuid();
	gid_t		   sg = getgid();
	int		   r = 0;

	memset(&e, 0, sizeof(e));
	if (sbx_idalloc_config(rootfd, &c, &e) == -1 ||
	    (c.per_agent &&
		(r = sbx_idalloc_read(rootfd, agent, &a, &e)) == -1)) {
		json_array_append_new(problems,
		    json_pack("{s:s,s:s,s:s}", "path", "agents/identity.json",
			"state", "damaged", "message", e.message));
		*bad = 1;
		return json_pack("{s:s}", "mode", "shared");
	}
	if (!c.per_agent) {
		(void)sbx_identity_get(rootfd, &su, &sg, &e);
		o = json_pack("{s:s,s:I,s:I}", "mode", "shared", "uid",
		    (json_int_t)su, "gid", (json_int_t)sg);
		if (c.why_shared[0] != '\0')
			json_object_set_new(o, "why_shared",
			    json_string(c.why_shared));
		return o;
	}
	if (r == 0 || !a.migrated) {
		json_array_append_new(problems,
		    json_pack("{s:s,s:s,s:s}", "path", "identity", "state",
			"migration_pending", "repair",
			"sbx provision --migrate-identity"));
		*bad = 1;
		return json_pack("{s:s,s:s}", "mode", "per_agent", "state",
		    r == 0 ? "none" : "migrating");
	}
	return json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:b}", "mode", "per_agent",
	    "state", "done", "uid", (json_int_t)a.uid, "gid", (json_int_t)a.gid,
	    "host_uid", (json_int_t)a.host_uid, "host_gid",
	    (json_int_t)a.host_gid, "subordinate", a.subordinate);
}

int
do_migrate_identity(void)
{
	struct sbx_agentid a;
	struct sbx_idcfg   c;
	struct sbx_error   e;
	const char	  *lim = getenv("SBX_TEST_MIGRATE_LIMIT");
	long		   changed = 0;
	json_t		  *res;

	memset(&e, 0, sizeof(e));
	if (sbx_root_open(&root, 0, &e) == -1)
		sbx_cmd_die(&e);
	if (sbx_provision_require(root.fd, O.agent, &e) == -1 ||
	    sbx_idalloc_config(root.fd, &c, &e) == -1)
		sbx_cmd_die(&e);
	if (!c.per_agent) {
		sbx_error_set(&e, SBX_K_REJECTED, "identity", "per_agent_off",
		    "per-agent uids are off%s%s",
		    c.why_shared[0] ? ": " :
				      " (identity.per_agent is not true)",
		    c.why_shared);
		if (c.why_shared[0] == '\0')
			sbx_error_hint(&e,
			    "sbx config set --global identity.per_agent "
			    "true");
		sbx_cmd_die(&e);
	}
	/* SBX_TEST_MIGRATE_LIMIT: stop after N changes, as a kill would
	 * (the tests of a resumed migration). */
	if (sbx_idalloc_migrate(root.fd, root.path, O.agent, &c,
		sbx_agentns_enter_range, &c, lim != NULL ? atol(lim) : 0,
		&changed, &a, &e) == -1)
		sbx_cmd_die(&e);
	if (O.json) {
		res = json_pack("{s:s,s:s,s:I,s:I,s:I,s:I,s:I}", "agent",
		    O.agent, "identity", "per_agent", "uid", (json_int_t)a.uid,
		    "gid", (json_int_t)a.gid, "host_uid",
		    (json_int_t)a.host_uid, "host_gid", (json_int_t)a.host_gid,
		    "changed", (json_int_t)changed);
		sbx_cmd_emit(sbx_envelope_ok(tool, res, NULL));
	} else if (!O.quiet)
		printf("agent %s runs as uid %lu gid %lu (host %lu:%lu); %ld "
		       "entries handed over\n",
		    O.agent, a.uid, a.gid, a.host_uid, a.host_gid, changed);
	return 0;
}

/* After a provision: a new agent's own ids at once. */
void
identity_provisioned(const char *agent, const json_t *created)
{
	struct sbx_idcfg c;
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	if (sbx_idalloc_config(root.fd, &c, &e) == -1 ||
	    sbx_idalloc_provisioned(root.fd, root.path, agent, created,
		sbx_agentns_enter_range, &c, &e) == -1)
		sbx_cmd_die(&e);
}
