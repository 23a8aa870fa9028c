/*
 * install-run.c: sbx install's install: the registries checked against
 * the proxy's policy, the lock, the manager's fixed script run in the
 * agent's sandbox through the exec engine (lib/exec/exec.c, which this
 * short-lived program links directly: DESIGN.md §2), one cleanup and
 * retry on a transient failure, the classification and the manifest.
 * The manager runs as the agent, never as the caller: the same sandbox
 * as sbx exec, with the registries added to the proxy allowlist of that
 * run alone.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cmd.h"
#include "config.h"
#include "envelope.h"
#include "exec.h"
#include "fsutil.h"
#include "idalloc.h"
#include "identity.h"
#include "imageref.h"
#include "install-int.h"
#include "installmgr.h"
#include "manifest.h"
#include "names.h"
#include "settings.h"
#include "time.h"
#include "utf8.h"

/* apt: the subordinate range of the copy's sandbox, when there is one
 * (else why there is none). */
static struct sbx_subids subids;
static int		 have_subids;
static char		 no_subids[256];

/* The proxy token never leaves in a log tail (a manager may print its
 * proxy URL, credentials and all). */
static void
scrub(struct sbx_buf *b, const char *secret)
{
	size_t n = strlen(secret), i;
	char  *p;

	if (n < 8 || b->p == NULL)
		return;
	while ((p = memmem(b->p, b->len, secret, n)) != NULL)
		for (i = 0; i < n; i++)
			p[i] = '*';
}

/*
 * Run a fixed script (sh -c, never built from the packages: they are its
 * arguments, $1...) in the agent's sandbox: network proxy with the
 * registries allowed when reg is given, else none.  The output is kept
 * (for the classification and the log tail) and, in transparent mode,
 * shown on stderr as it comes.
 */
void
run_script(const char *script, char **args, int nargs,
    const struct sbx_install_reg *reg, const char *const *env, int rootfs_rw,
    int tee, struct run *rr)
{
	static struct sbx_exec	X;
	struct sbx_exec_req	R;
	struct sbx_exec_outcome o;
	const json_t	       *res;
	char		       *argv[SBX_INSTALL_MAX_PKGS + 2], wall[32], *v;
	int			i, rc;

	memset(rr, 0, sizeof(*rr));
	sbx_exec_req_init(&R);
	sbx_exec_init(&X);
	R.agent = O.agent;
	R.home = root.path;
	R.shell = script;
	argv[0] = PROG;
	for (i = 0; i < nargs && i < SBX_INSTALL_MAX_PKGS; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	R.argv = argv;
	R.argc = i + 1;
	R.capture = 1;
	R.capture_tee = tee && !O.json && !O.quiet;
	R.max_output = "1M";
	R.stdin_mode = "null";
	/* An install judges its own run (failure classes): the agent's
	 * fail_on_violation is for its commands. */
	R.fail_on_violation = -1;
	R.verbose = O.verbose;
	R.rootfs_rw = rootfs_rw;
	if (rootfs_rw && have_subids) {
		R.subid_uid = subids.uid;
		R.subid_gid = subids.gid;
		R.subid_count = subids.count;
	}
	R.network = sbx_netmode_name(reg != NULL ? SBX_NETMODE_PROXY :
	    SBX_NETMODE_NONE);
	for (i = 0; reg != NULL && i < reg->nhosts; i++)
		sbx_strv_push(&R.allow, reg->host[i]);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		sbx_strv_push(&R.env, env[i]);
	if (O.timeout != NULL) {
		snprintf(wall, sizeof(wall), "%s", O.timeout);
		sbx_strv_push(&R.limit_keys, "wall_timeout");
		sbx_strv_push(&R.limit_keys, wall);
	}
	if (sbx_exec_validate(&R, &rr->err) != 0 ||
	    sbx_exec_prepare(&X, &R, &rr->err) == -1)
		goto out;
	if (X.bwrap_line != NULL)
		fprintf(stderr, "%s: %s\n", PROG, X.bwrap_line);
	snprintf(rr->token, sizeof(rr->token), "%s", X.proxy_token);
	fflush(NULL);
	rc = sbx_exec_run(&X, &rr->err);
	/* The package manager's output went to this terminal: what sbx
	 * install says next (installed or not, the warnings) must not be
	 * hidden or disguised by the state it left the terminal in. */
	if (R.capture_tee && isatty(STDERR_FILENO))
		fputs(SBX_TERM_SANE, stderr);
	if (rc == -1)
		goto out;
	if ((v = sbx_exec_violations_text(&X)) != NULL) {
		sbx_cmd_warnf(warnings, "%s", v);
		free(v);
	}
	sbx_exec_outcome(&X, &o);
	res = o.ok ? o.result : json_object_get(o.extra, "result");
	if (res != NULL) {
		sbx_buf_puts(&rr->out,
		    json_string_value(json_object_get(res, "stdout")) ?
			json_string_value(json_object_get(res, "stdout")) :
			"");
		sbx_buf_puts(&rr->out,
		    json_string_value(json_object_get(res, "stderr")) ?
			json_string_value(json_object_get(res, "stderr")) :
			"");
		rr->exit_code =
		    (int)json_integer_value(json_object_get(res, "exit_code"));
	}
	if (o.ok)
		rr->ok = 1;
	else
		rr->err = o.err;
	sbx_exec_outcome_release(&o);
out:
	/* The agent's secrets are scrubbed by the engine itself (the run's
	 * streams, tee and capture alike, and the outcome), so log_tail
	 * never holds one; the run's proxy token is not a secret of the
	 * store and is masked here. */
	scrub(&rr->out, rr->token);
	sbx_exec_release(&X);
	sbx_exec_req_release(&R);
}

static json_t *
result_of(const struct run *rr, int retried, long long t0)
{
	json_t *r, *inst;
	char   *tail, *s;
	int	i;

	inst = json_array();
	for (i = 0; i < O.npkgs; i++)
		if ((s = sbx_install_pkg_name(O.mgr, O.pkgs[i])) != NULL) {
			json_array_append_new(inst, json_string(s));
			free(s);
		}
	tail =
	    sbx_install_log_tail(rr->out.p, rr->out.len, SBX_INSTALL_LOG_TAIL);
	r = json_pack("{s:s,s:o,s:i,s:b,s:I,s:s}", "manager",
	    sbx_install_manager_name(O.mgr), "installed", inst, "exit_code",
	    rr->exit_code, "retried", retried, "duration_ms",
	    (json_int_t)(sbx_now_ms() - t0), "log_tail", tail ? tail : "");
	free(tail);
	return r;
}

/* The manifest with this install added: 0, or -1 with e naming it. */
static int
update_manifest(struct sbx_error *e)
{
	json_t *m;
	int	afd, rc = 0;

	if ((afd = agent_dir(e)) == -1)
		return -1;
	if ((m = sbx_install_manifest_read(afd, e)) == NULL)
		rc = -1;
	else if (sbx_install_manifest_add(m, O.mgr, O.pkgs, O.npkgs) == -1) {
		sbx_error_sys(e, "nomem", "adding to the manifest");
		rc = -1;
	} else if (sbx_install_manifest_write(afd, m, e) == -1)
		rc = -1;
	json_decref(m);
	close(afd);
	if (rc == -1)
		sbx_install_manifest_named(e, O.agent);
	return rc;
}

/*
 * apt: the registries are the copy's own sources unless
 * install.registries.apt names them; the subordinate range is found.
 */
static void
apt_prepare(struct sbx_install_reg *reg, struct sbx_strv *env)
{
	struct sbx_error e;

	if (sbx_installmgr_apt_registry(root.fd, O.agent, reg, &e) == -1 ||
	    (have_subids = sbx_identity_subids(root.fd, &subids, no_subids,
		 sizeof(no_subids), &e)) == -1)
		sbx_cmd_die(&e);
	/* The apt script refuses owners beyond the ids the run maps. */
	if (sbx_strv_pushf(env, "INSTALL_MAPPED_IDS=%lu",
		have_subids ? subids.count : 0UL) == -1) {
		sbx_error_sys(&e, "nomem", "the manager's environment");
		sbx_cmd_die(&e);
	}
}

/* apt, under the copy's lock: as root, the copy is handed to the sandbox
 * uid (uid 0 inside), once per copy and stamped (lib/exec/install.c). */
static void
apt_own_copy(void)
{
	struct sbx_error e;
	uid_t		 uid;
	gid_t		 gid;
	long long	 t0 = sbx_now_ms();
	int		 r;

	/* Anyone else's copy is theirs already; with a range, the stamp
	 * (after a walk that finds nothing to change) tells ordinary runs
	 * to map it too. */
	if (geteuid() != 0 && !have_subids)
		return;
	if (sbx_idalloc_owner(root.fd, O.agent, &uid, &gid, &e) == -1 ||
	    (r = sbx_install_rootfs_own(root.fd, O.agent, uid, gid,
		 have_subids ? &subids : NULL, &e)) == -1)
		sbx_cmd_die(&e);
	if (O.verbose)
		fprintf(stderr, "%s: the copy's owners: %s (%lld ms)\n", PROG,
		    r == 1 ? "walked" : "unchanged since the last install",
		    sbx_now_ms() - t0);
}

int
do_install(void)
{
	struct sbx_install_class c;
	struct sbx_install_reg	 reg;
	struct sbx_error	 e;
	struct sbx_strv		 env = SBX_STRV_INIT;
	struct run		 rr, cr;
	json_t			*cfg = NULL, *res, *extra;
	const char		*script, *cleanup;
	long long		 t0 = sbx_now_ms();
	int			 afd, lock, retried = 0, cleanup_failed = 0;
	int			 env_own = 0, rootfs_rw = 0;
	char			 digest[SBX_DIGEST_HEX + 1];

	if ((O.mgr = sbx_install_manager(O.manager, &e)) == -1)
		sbx_cmd_die(&e);
	if (O.timeout != NULL &&
	    sbx_cli_parse_seconds(O.timeout, 86400, &O.timeout_s) == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number",
		    "argument `timeout` must be a number of "
		    "seconds from 0 to 86400");
		sbx_cmd_die(&e);
	}
	/* Every name is judged before anything is opened or run. */
	if (sbx_install_validate(O.mgr, O.pkgs, O.npkgs, O.allow_url, &e) == -1)
		sbx_cmd_die(&e);
	open_agent();
	if (O.mgr == SBX_INSTALL_APT) {
		if (sbx_imageref_agent_env(root.fd, O.agent, digest, &env_own,
			&e) == -1)
			sbx_cmd_die(&e);
		if (!env_own) {
			sbx_error_set(&e, SBX_K_REJECTED, "manager",
			    "no_writable_rootfs",
			    "apt installs only into the "
			    "agent's own root filesystem copy, and %s has "
			    "none",
			    O.agent);
			sbx_error_hint(&e,
			    "sbx provision --agent %s --image "
			    "IMAGE --own-rootfs",
			    O.agent);
			sbx_cmd_die(&e);
		}
		rootfs_rw = 1;
	}
	if (sbx_settings_global(root.fd, &cfg, &e) == -1 ||
	    sbx_install_registry(cfg, O.mgr, &reg, &e) == -1)
		sbx_cmd_die(&e);
	json_decref(cfg);
	if (O.mgr == SBX_INSTALL_APT)
		apt_prepare(&reg, &env);
	if (sbx_installmgr_check_registries(root.fd, O.agent, O.mgr, &reg,
		&e) == -1)
		sbx_cmd_die(&e);

	/* One install per agent at a time; another agent's runs alongside.
	 * apt: one per rootfs copy (the agent's own, so its own lock).
	 * A flock: the kernel drops it when an install is killed. */
	if ((afd = agent_dir(&e)) == -1)
		sbx_cmd_die(&e);
	if ((lock = sbx_install_lock(afd,
		 lock_name(O.mgr == SBX_INSTALL_APT ? SBX_L_AGENT_ROOTFS_LOCK :
						      SBX_L_AGENT_INSTALL_LOCK),
		 O.timeout != NULL ? (int)O.timeout_s + 1 : LOCK_WAIT_S, &e)) ==
	    -1)
		sbx_cmd_die(&e);

	/* A manifest that cannot be read is refused before anything is
	 * installed: the install could not be recorded (issue 30). */
	{
		json_t *m;

		if ((m = sbx_install_manifest_read(afd, &e)) == NULL) {
			sbx_install_manifest_named(&e, O.agent);
			close(lock);
			sbx_cmd_die(&e);
		}
		json_decref(m);
	}
	if (O.mgr == SBX_INSTALL_APT)
		apt_own_copy();
	if (sbx_installmgr_env(O.mgr, &reg, &env) == -1) {
		sbx_error_sys(&e, "nomem", "the manager's environment");
		sbx_cmd_die(&e);
	}
	script = sbx_installmgr_script(O.mgr, SBX_INSTALLMGR_INSTALL);
	cleanup = sbx_installmgr_script(O.mgr, SBX_INSTALLMGR_CLEANUP);
	run_script(script, O.pkgs, O.npkgs, &reg, (const char *const *)env.v,
	    rootfs_rw, 1, &rr);
	if (rr.ok && rr.exit_code != 0) {
		sbx_install_classify(O.mgr, rr.exit_code, rr.out.p, rr.out.len,
		    &c);
		/* One cleanup, then exactly one retry; a failed cleanup is
		 * said, never retried over. */
		if (c.transient != NULL) {
			if (!O.quiet && !O.json)
				fprintf(stderr,
				    "%s: transient failure (%s): "
				    "cleaning up and retrying once\n",
				    PROG, c.transient);
			/* apt's cleanup is `apt-get update`: its network. */
			run_script(cleanup, NULL, 0, rootfs_rw ? &reg : NULL,
			    NULL, rootfs_rw, 1, &cr);
			if (!cr.ok || cr.exit_code != 0)
				cleanup_failed = 1;
			sbx_buf_release(&cr.out);
			if (!cleanup_failed) {
				sbx_buf_release(&rr.out);
				run_script(script, O.pkgs, O.npkgs, &reg,
				    (const char *const *)env.v, rootfs_rw, 1,
				    &rr);
				retried = 1;
			}
		}
	}
	sbx_strv_release(&env);
	if (!rr.ok) {
		close(lock);
		sbx_cmd_die(&rr.err);
	}
	res = result_of(&rr, retried, t0);
	if (cleanup_failed)
		json_object_set_new(res, "cleanup_failed", json_true());
	if (rootfs_rw && rr.exit_code == SBX_INSTALLMGR_RC_FOREIGN) {
		if (have_subids)
			sbx_error_set(&e, SBX_K_REJECTED, "packages",
			    "foreign_owner",
			    "a package has files with a "
			    "set-user-ID or set-group-ID bit (refused in the "
			    "sandbox) or of an owner beyond the %lu ids it "
			    "maps, so dpkg was not run (nothing was "
			    "installed)",
			    subids.count);
		else
			sbx_error_set(&e, SBX_K_REJECTED, "packages",
			    "foreign_owner",
			    "a package has files owned by "
			    "another user than root or with a set-user-ID or "
			    "set-group-ID bit, and the sandbox maps one uid "
			    "only: %s; dpkg was not run (nothing was "
			    "installed)",
			    no_subids);
		sbx_error_hint(&e, "see the log tail for the files; %s",
		    have_subids ?
			"install that package into the image "
			"before `sbx provision --image`" :
			"give the user "
			"subordinate ids (usermod --add-subuids and "
			"--add-subgids, 65536 of each), or install that package "
			"into the image before `sbx provision --image`");
		e.retryable = 0;
		json_array_clear(json_object_get(res, "installed"));
		close(lock);
		sbx_cmd_die_extra(&e, json_pack("{s:o}", "result", res), -1);
	}
	if (rr.exit_code == SBX_INSTALLMGR_RC_NO_MANAGER ||
	    rr.exit_code == SBX_INSTALLMGR_RC_NO_VENV) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, "manager",
		    rr.exit_code == SBX_INSTALLMGR_RC_NO_VENV ? "no_venv" :
								"no_manager",
		    "%s",
		    rr.exit_code == SBX_INSTALLMGR_RC_NO_VENV ?
			"the sandbox's python3 "
			"has no venv module" :
			O.mgr == SBX_INSTALL_NPM ?
			"npm is "
			"not available in the sandbox" :
			O.mgr == SBX_INSTALL_APT ?
			"apt-get is not available in the agent's root file system" :
			"python3 is not available in the sandbox");
		sbx_error_hint(&e,
		    "use an image that has it (python3-venv, "
		    "npm)");
		e.retryable = 0;
		close(lock);
		sbx_cmd_die_extra(&e, json_pack("{s:o}", "result", res), -1);
	}
	if (rr.exit_code != 0) {
		sbx_install_classify(O.mgr, rr.exit_code, rr.out.p, rr.out.len,
		    &c);
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL, c.cls,
		    "%s install failed (exit %d, %s)%s",
		    sbx_install_manager_name(O.mgr), rr.exit_code, c.cls,
		    cleanup_failed ? "; the cleanup before a retry failed" :
			retried	   ? " after one retry" :
				     "");
		e.retryable = c.retryable;
		json_array_clear(json_object_get(res, "installed"));
		extra = json_pack("{s:o,s:s}", "result", res, "class", c.cls);
		if (retried)
			json_object_set_new(extra, "retried", json_true());
		if (cleanup_failed)
			json_object_set_new(extra, "cleanup_failed",
			    json_true());
		close(lock);
		sbx_buf_release(&rr.out);
		sbx_cmd_die_extra(&e, extra, -1);
	}
	if (update_manifest(&e) == -1) {
		/* Installed, but not recorded: not a success (a later
		 * reconcile would be the only way to learn of it). */
		char msg[2 * sizeof(e.message)];

		snprintf(msg, sizeof(msg),
		    "the packages were installed but "
		    "the manifest was not updated: %s",
		    e.message);
		memcpy(e.message, msg, sizeof(e.message) - 1);
		e.message[sizeof(e.message) - 1] = '\0';
		e.kind = SBX_K_EXECUTION_ERROR;
		e.reason = "manifest_not_updated";
		e.field = NULL;
		e.retryable = 0;
		close(lock);
		close(afd);
		sbx_buf_release(&rr.out);
		sbx_cmd_die_extra(&e, json_pack("{s:o}", "result", res), -1);
	}
	close(lock);
	close(afd);
	sbx_buf_release(&rr.out);
	if (O.json)
		sbx_cmd_emit(sbx_envelope_ok(tool, res, json_incref(warnings)));
	else {
		sbx_cmd_print_warnings(PROG, warnings, O.quiet);
		if (!O.quiet)
			printf("installed with %s: %d package%s%s\n",
			    sbx_install_manager_name(O.mgr), O.npkgs,
			    O.npkgs == 1 ? "" : "s",
			    retried ? " (after one retry)" : "");
		json_decref(res);
	}
	return 0;
}
