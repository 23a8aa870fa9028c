/*
 * daemon-serve.c: `serve`, `status` and `stop` of sbx-proxy and sbx-bridge
 * (daemon-serve.h).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "daemon-serve.h"
#include "daemon.h"
#include "fsutil.h"

static void __attribute__((noreturn))
serve_fail(const struct sbx_cmd_daemon *d, const struct sbx_error *e)
{
	if (d->foreground)
		sbx_cmd_die(e);
	_exit(SBX_EX_OSERR);
}

static int
serve_as(const struct sbx_cmd_daemon *d, const struct sbx_root *root)
{
	struct sbx_daemon	 dm;
	struct sbx_error	 e;
	char			 text[128], sock[64];
	int			 runfd, lfd, rc;

	memset(&e, 0, sizeof(e));
	if ((runfd = sbx_fs_mkdirs_at(root->fd, "run", 0711, &e)) == -1 ||
	    (rc = sbx_daemon_start(runfd, d->pidname, d->what, d->foreground,
	    &dm, &e)) == -1)
		sbx_cmd_die(&e);
	snprintf(sock, sizeof(sock), "run/%s", d->sock);
	if (rc == SBX_DAEMON_RUNNING) {
		snprintf(text, sizeof(text), "%s: already running", d->prog);
		sbx_cmd_done(json_pack("{s:b,s:b,s:s}", "running", 1,
		    "started", 0, "pid", dm.pid), text);
		return 0;
	}
	if (rc == SBX_DAEMON_STARTED) {
		snprintf(text, sizeof(text), "%s: started", d->prog);
		sbx_cmd_done(json_pack("{s:b,s:b,s:s}", "running", 1,
		    "started", 1, "socket", sock), text);
		exit(0);
	}
	signal(SIGPIPE, SIG_IGN);
	sbx_daemon_harden();
	if ((lfd = sbx_daemon_bind(runfd, d->sock, &e)) == -1)
		serve_fail(d, &e);
	sbx_daemon_ready(&dm);
	if (d->foreground && !d->quiet)
		fprintf(stderr, "%s: serving %s/%s (pid %d)\n", d->prog,
		    root->path, sock, (int)getpid());
	if (d->serve(root->fd, lfd, d->arg, &e) == -1) {
		(void)unlinkat(runfd, d->sock, 0);
		serve_fail(d, &e);
	}
	/* The socket goes before the lock: a successor binds its own
	 * without racing with our unlink. */
	(void)unlinkat(runfd, d->sock, 0);
	sbx_daemon_done(&dm);
	_exit(0);
}

int
sbx_cmd_daemon_serve(const struct sbx_cmd_daemon *tmpl,
    const struct sbx_root *root, int quiet, int foreground)
{
	struct sbx_cmd_daemon	 d = *tmpl;
	struct sbx_error	 e;

	d.quiet = quiet;
	d.foreground = foreground;
	memset(&e, 0, sizeof(e));
	if (d.load(root->fd, d.arg, &e) == -1)
		sbx_cmd_die(&e);
	return serve_as(&d, root);
}

int
sbx_cmd_daemon_status(const struct sbx_cmd_daemon *d,
    const struct sbx_root *root, int stop)
{
	struct sbx_error	 e;
	json_t			*ans, *res;
	const char *const	*k;
	char			 text[256], sock[64];
	int			 rc;

	memset(&e, 0, sizeof(e));
	if ((rc = sbx_daemon_ask(root->fd, d->sock, d->what,
	    stop ? "stop" : "status", &ans, &e)) == -1)
		sbx_cmd_die(&e);
	if (rc == 0) {
		snprintf(text, sizeof(text), "%s: not running", d->prog);
		sbx_cmd_done(json_pack("{s:b}", "running", 0), text);
		return stop ? 0 : SBX_EX_NEGATIVE;
	}
	if (stop) {
		json_decref(ans);
		/* Stopped means gone: a start right after this one must
		 * not find the old daemon still holding its pid lock. */
		if (sbx_daemon_wait_gone(root->fd, d->pidname, d->what, 10000,
		    &e) == -1)
			sbx_cmd_die(&e);
		snprintf(text, sizeof(text), "%s: stopped", d->prog);
		sbx_cmd_done(json_pack("{s:b,s:b}", "running", 0, "stopped",
		    1), text);
		return 0;
	}
	snprintf(sock, sizeof(sock), "run/%s", d->sock);
	res = json_pack("{s:b,s:O,s:O,s:O,s:s}", "running", 1, "pid",
	    json_object_get(ans, "pid"), "sessions",
	    json_object_get(ans, "sessions"), "connections",
	    json_object_get(ans, "connections"), "socket", sock);
	for (k = d->status_keys; k != NULL && *k != NULL; k++)
		json_object_set(res, *k, json_object_get(ans, *k));
	snprintf(text, sizeof(text), "%s: running (pid %lld), %lld sessions, "
	    "%lld connections%s%s%s%s", d->prog,
	    json_integer_value(json_object_get(ans, "pid")),
	    json_integer_value(json_object_get(ans, "sessions")),
	    json_integer_value(json_object_get(ans, "connections")),
	    d->status_says_socket ? ", socket " : "",
	    d->status_says_socket ? root->path : "",
	    d->status_says_socket ? "/" : "",
	    d->status_says_socket ? sock : "");
	json_decref(ans);
	sbx_cmd_done(res, text);
	return 0;
}
