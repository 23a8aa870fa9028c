/*
 * daemon-serve.c: `serve` of sbx-proxy and sbx-bridge (daemon-serve.h).
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
		sbx_cmd_fail(d->prog, d->tool, d->json, e, NULL, sbx_cmd_emit,
		    -1);
	_exit(SBX_EX_OSERR);
}

int
sbx_cmd_daemon_serve(const struct sbx_cmd_daemon *d,
    const struct sbx_root *root)
{
	struct sbx_daemon	 dm;
	struct sbx_error	 e;
	char			 text[128], sock[64];
	int			 runfd, lfd, rc;

	memset(&e, 0, sizeof(e));
	if ((runfd = sbx_fs_mkdirs_at(root->fd, "run", 0711, &e)) == -1 ||
	    (rc = sbx_daemon_start(runfd, d->pidname, d->what, d->foreground,
	    &dm, &e)) == -1)
		sbx_cmd_fail(d->prog, d->tool, d->json, &e, NULL, sbx_cmd_emit,
		    -1);
	snprintf(sock, sizeof(sock), "run/%s", d->sock);
	if (rc == SBX_DAEMON_RUNNING) {
		snprintf(text, sizeof(text), "%s: already running", d->prog);
		sbx_cmd_ok(d->tool, d->json, d->quiet, json_pack(
		    "{s:b,s:b,s:s}", "running", 1, "started", 0, "pid",
		    dm.pid), text);
		return 0;
	}
	if (rc == SBX_DAEMON_STARTED) {
		snprintf(text, sizeof(text), "%s: started", d->prog);
		sbx_cmd_ok(d->tool, d->json, d->quiet, json_pack(
		    "{s:b,s:b,s:s}", "running", 1, "started", 1, "socket",
		    sock), text);
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
