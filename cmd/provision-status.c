/*
 * provision-status.c: sbx provision status and list: the checklist of the state root
 * and the agent's settings (agentset.c), rendered.  Part of
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
#include "install.h"
#include "layout.h"
#include "manifest.h"
#include "names.h"
#include "opts.h"
#include "plugin.h"
#include "provision.h"
#include "root.h"
#include "rootfs.h"
#include "warm.h"
#include "time.h"
#include "users.h"
#include "utf8.h"

#include "provision-int.h"

/* ---- status ------------------------------------------------------------- */

static const char *
item_str(json_t *it, const char *key)
{
	const char	*s = json_string_value(json_object_get(it, key));

	return s ? s : "";
}

/* One checklist line: `  [ok]          run (0711)`.  Paths are the
 * layout's own, with a validated agent name: nothing to escape. */
static void
print_item(json_t *it)
{
	const char	*state = item_str(it, "state");
	char		 tag[32], extra[64];

	if (strcmp(state, "present") == 0)
		state = "ok";
	snprintf(tag, sizeof(tag), "[%s]", state);
	extra[0] = '\0';
	if (strcmp(state, "wrong_mode") == 0)
		snprintf(extra, sizeof(extra), " (mode %s, want %s)",
		    item_str(it, "mode"), item_str(it, "want_mode"));
	else if (strcmp(state, "ok") == 0 && json_object_get(it, "mode"))
		snprintf(extra, sizeof(extra), " (%s)", item_str(it, "mode"));
	printf("  %-14s %s%s\n", tag, item_str(it, "path"), extra);
}

/* The agent's settings, and the repair of each problem found in them. */
static void
print_summary(json_t *sum, json_t *problems)
{
	const json_t	*img = json_object_get(sum, "image");
	json_t		*it;
	const char	*name, *digest, *rep;
	size_t		 i;

	if (json_object_size(sum) == 0)
		return;
	name = json_string_value(json_object_get(img, "name"));
	digest = json_string_value(json_object_get(img, "digest"));
	if (digest == NULL)
		printf("  image          none (host system directories)\n");
	else
		printf("  image          %s%s%.12s%s%s\n", name ? name : "",
		    name ? " (" : "", digest, name ? ")" : "",
		    json_is_true(json_object_get(img, "present")) ? "" :
		    " MISSING");
	printf("  env            %s\n", json_is_true(json_object_get(sum,
	    "env")) ? "yes (its own copy of the image)" : "no");
	print_line(stdout, "  network        ", json_string_value(
	    json_object_get(sum, "network")), "");
	printf("  allowlist      %lld domain%s\n",
	    json_integer_value(json_object_get(sum, "allowed_domains")),
	    json_integer_value(json_object_get(sum, "allowed_domains")) == 1 ?
	    "" : "s");
	/* Bound secrets: names and hosts, never a value. */
	json_array_foreach (json_object_get(sum, "credentials"), i, it) {
		struct sbx_buf b = SBX_BUF_INIT;
		json_t	      *h;
		size_t	       j;

		sbx_buf_printf(&b, "%s -> ",
		    json_string_value(json_object_get(it, "secret")));
		json_array_foreach (json_object_get(it, "hosts"), j, h)
			sbx_buf_printf(&b, "%s%s", j ? ", " : "",
			    json_string_value(h));
		print_line(stdout,
		    i == 0 ? "  credentials    " : "                 ", b.p,
		    "");
		sbx_buf_release(&b);
	}
	json_array_foreach(problems, i, it) {
		if ((rep = json_string_value(json_object_get(it, "repair"))) ==
		    NULL)
			continue;
		print_line(stdout, "  [problem]      ", json_string_value(
		    json_object_get(it, "message")), "");
		print_line(stdout, "                 repair: ", rep, "");
	}
}

/* A damaged record as one of status's problems: named, with its repair;
 * the agent is then not ready. */
static void
damaged(json_t *problems, const char *path, const struct sbx_error *e,
    const char *repair)
{
	json_array_append_new(problems,
	    json_pack("{s:s,s:s,s:s,s:s}", "path", path, "state", "damaged",
		"message", e->message, "repair",
		e->hint[0] != '\0' ? e->hint : repair));
}

/*
 * The records sbx keeps for the agent that a run or an install reads:
 * its plugins (agents/A/plugins.json) and the manifest of its bound
 * template (images/D/manifest.json: emptied or cut short; `sbx
 * provision image verify` compares it in full).  0 when all are sound.
 */
static int
damaged_records(int rootfd, const json_t *summary, json_t *problems)
{
	struct sbx_error e;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*digest;
	char		 rel[SBX_LAYOUT_PATH_MAX];
	json_t		*d;
	size_t		 i, j;
	int		 bad = 0;

	if (rootfd < 0)
		return 0;
	memset(&e, 0, sizeof(e));
	if ((d = sbx_plugin_installed_read(rootfd, O.agent, &e)) == NULL) {
		SBX_LPATH(rel, SBX_L_AGENT_PLUGINS, O.agent);
		sbx_error_in_file(&e, rel,
		    "move it aside and install the "
		    "agent's plugins again (sbx plugin install ID --agent %s)",
		    O.agent);
		damaged(problems, rel, &e, "");
		bad = 1;
	}
	json_decref(d);
	digest = json_string_value(
	    json_object_get(json_object_get(summary, "image"), "digest"));
	if (digest != NULL &&
	    json_is_true(json_object_get(json_object_get(summary, "image"),
		"present"))) {
		snprintf(rel, sizeof(rel), "images/%s/%s", digest,
		    SBX_IMAGE_MANIFEST);
		memset(&e, 0, sizeof(e));
		if (sbx_fs_read_file_at(rootfd, rel, SBX_IMAGE_MANIFEST_MAX, &b,
			&e) == 0) {
			/* Whole is enough here: a document that ends where
			 * it began; a full parse is image verify's. */
			for (i = 0; i < b.len &&
			     (b.p[i] == ' ' || b.p[i] == '\n' ||
				 b.p[i] == '\t');
			     i++)
				;
			for (j = b.len; j > i &&
			     (b.p[j - 1] == ' ' || b.p[j - 1] == '\n' ||
				 b.p[j - 1] == '\t');
			     j--)
				;
			if (j - i < 2 || b.p[i] != '{' || b.p[j - 1] != '}')
				sbx_error_set(&e, SBX_K_REJECTED, NULL,
				    "image_damaged",
				    "%s is damaged (empty or "
				    "cut short)",
				    rel);
		}
		sbx_buf_release(&b);
		if (e.kind != NULL) {
			sbx_error_in_file(&e, rel,
			    "sbx provision image verify "
			    "%s shows what differs; add the image again to "
			    "repair it",
			    digest);
			damaged(problems, rel, &e, "");
			bad = 1;
		}
	}
	return bad;
}

/* What sbx install recorded for the agent: {apt: N, npm: N, pip: N}, or
 * NULL when nothing was ever installed; a damaged record is one of
 * problems (and not counted). */
static json_t *
package_counts(int rootfd, json_t *problems, int *bad)
{
	struct sbx_error e;
	json_t		*m, *c, *v;
	const char	*k;
	char		 rel[128];
	int		 afd;

	SBX_LPATH(rel, SBX_L_AGENT_RECORDS, O.agent);
	if (rootfd < 0 ||
	    (afd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 &e)) == -1)
		return NULL;
	if (faccessat(afd, SBX_INSTALL_MANIFEST, F_OK, AT_SYMLINK_NOFOLLOW) ==
	    -1) {
		close(afd);
		return NULL;
	}
	if ((m = sbx_install_manifest_read(afd, &e)) == NULL) {
		close(afd);
		SBX_LPATH(rel, SBX_L_AGENT_INSTALLED, O.agent);
		sbx_install_manifest_named(&e, O.agent);
		damaged(problems, rel, &e, "");
		*bad = 1;
		return NULL;
	}
	close(afd);
	c = json_object();
	json_object_foreach (m, k, v)
		json_object_set_new(c, k,
		    json_integer((json_int_t)json_array_size(v)));
	json_decref(m);
	return c;
}

/* The agent's warm sessions (lib/exec/warmrec.c: no run engine). */
static json_t *
agent_sessions(int rootfd)
{
	struct sbx_error	 e;
	json_t			*l = NULL, *it;
	size_t			 i;
	int			 runfd;

	if (rootfd >= 0 && (runfd = sbx_layout_open(rootfd, SBX_L_RUN, NULL,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC, NULL)) >= 0) {
		l = sbx_warmrec_list(runfd, O.agent, 0, NULL, &e);
		close(runfd);
	}
	if (l == NULL)
		return json_array();
	json_array_foreach (l, i, it)
		json_object_del(it, "policy");
	return l;
}

int
do_status(void)
{
	struct sbx_error	 e;
	json_t			*items, *warnings, *it, *res;
	json_t			*present, *missing, *wrong_mode, *problems;
	json_t			*summary, *pkgs, *updates, *ident, *sessions;
	const char		*state, *path;
	size_t			 i;
	int			 rootfd, ready, agent_ok, bad;

	rootfd = open_root_existing(1);
	warnings = json_array();
	if ((items = sbx_provision_status(rootfd, O.agent, &ready, warnings,
	    &e)) == NULL)
		sbx_cmd_die(&e);
	present = json_array();
	missing = json_array();
	wrong_mode = json_array();
	problems = json_array();
	json_array_foreach(items, i, it) {
		state = json_string_value(json_object_get(it, "state"));
		path = json_string_value(json_object_get(it, "path"));
		if (strcmp(state, "present") == 0)
			json_array_append_new(present, json_string(path));
		else if (strcmp(state, "missing") == 0)
			json_array_append_new(missing, json_string(path));
		else if (strcmp(state, "wrong_mode") == 0)
			json_array_append_new(wrong_mode, json_string(path));
		else
			json_array_append_new(problems, json_pack("{s:s,s:s}",
			    "path", path, "state", state));
	}
	summary = sbx_agentset_summary(rootfd, O.agent, &agent_ok,
	    problems);
	ready = ready && agent_ok;
	bad = damaged_records(rootfd, summary, problems);
	pkgs = package_counts(rootfd, problems, &bad);
	ident = identity_status(rootfd, O.agent, problems, &bad);
	ready = ready && !bad;
	/* Plugins whose library recipe changed since the agent installed
	 * them: shown as available updates, never applied here. */
	updates = rootfd >= 0 ? sbx_plugin_updates(rootfd, O.agent) :
	    json_array();
	sessions = agent_sessions(rootfd);
	if (O.json) {
		res = json_pack("{s:s,s:o,s:b,s:b,s:o,s:o,s:o,s:o,s:o,s:o}",
		    "agent", O.agent, "root", root_json(), "exists",
		    rootfd >= 0, "ready", ready, "items", items, "present",
		    present, "missing", missing, "wrong_mode", wrong_mode,
		    "problems", problems, "settings", summary);
		if (pkgs != NULL)
			json_object_set_new(res, "packages", pkgs);
		json_object_set_new(res, "plugin_updates", updates);
		json_object_set_new(res, "identity", ident);
		json_object_set_new(res, "sessions", sessions);
		sbx_cmd_emit(sbx_envelope_ok(tool, res, warnings));
		return ready ? 0 : SBX_EX_NEGATIVE;
	}
	if (!O.quiet) {
		print_line(stdout, "state root ", root.path, "");
		printf("agent %s\n", O.agent);
		json_array_foreach(items, i, it)
			print_item(it);
		print_summary(summary, problems);
		if (pkgs != NULL)
			printf("packages (sbx install): apt %lld, npm %lld, "
			       "pip %lld\n",
			    (long long)json_integer_value(
				json_object_get(pkgs, "apt")),
			    (long long)json_integer_value(
				json_object_get(pkgs, "npm")),
			    (long long)json_integer_value(
				json_object_get(pkgs, "pip")));
		json_array_foreach (updates, i, it)
			printf("plugin update available: %s (sbx plugin "
			       "install %s --agent %s)\n",
			    json_string_value(json_object_get(it, "id")),
			    json_string_value(json_object_get(it, "id")),
			    O.agent);
		printf("identity: %s%s%s\n", json_string_value(
		    json_object_get(ident, "mode")), json_object_get(ident,
		    "state") != NULL ? ", " : "", json_object_get(ident,
		    "state") != NULL ? json_string_value(json_object_get(ident,
		    "state")) : "");
		json_decref(ident);
		json_array_foreach (sessions, i, it)
			printf("session %s: %s (sbx exec --session %s)\n",
			    json_string_value(json_object_get(it, "name")),
			    json_is_true(json_object_get(it, "alive")) ?
			    "running" : "dead, sbx exec gc removes it",
			    json_string_value(json_object_get(it, "name")));
		print_warnings(warnings);
		if (ready)
			printf("ready\n");
		else
			printf("not ready: %zu missing, %zu with a wrong mode, "
			    "%zu other problems; `sbx provision` creates and "
			    "repairs what it can\n", json_array_size(missing),
			    json_array_size(wrong_mode),
			    json_array_size(problems));
	}
	json_decref(items);
	json_decref(warnings);
	json_decref(present);
	json_decref(missing);
	json_decref(wrong_mode);
	json_decref(problems);
	json_decref(summary);
	json_decref(pkgs);
	json_decref(sessions);
	return ready ? 0 : SBX_EX_NEGATIVE;
}

/* ---- list --------------------------------------------------------------- */

int
do_list(void)
{
	struct sbx_error	 e;
	json_t			*agents, *a;
	size_t			 i;
	int			 rootfd;

	rootfd = open_root_existing(0);
	if ((agents = sbx_provision_list(rootfd, &e)) == NULL)
		sbx_cmd_die(&e);
	if (O.json) {
		sbx_cmd_emit(sbx_envelope_ok(tool, json_pack("{s:o,s:o}",
		    "agents", agents, "root", root_json()), NULL));
		return 0;
	}
	if (!O.quiet) {
		printf("%-32s  %-5s  %-4s  %s\n", "AGENT", "TOKEN", "HOME",
		    "CONFIG");
		json_array_foreach(agents, i, a) {
			printf("%-32s  %-5s  %-4s  %s\n", json_string_value(
			    json_object_get(a, "agent")),
			    json_is_true(json_object_get(a, "token")) ? "yes" :
			    "no", json_is_true(json_object_get(a, "home")) ?
			    "yes" : "no", json_is_true(json_object_get(a,
			    "config")) ? "yes" : "no");
		}
	}
	json_decref(agents);
	return 0;
}
