/*
 * exec-ask.c: in transparent `sbx exec --ask` on a terminal, sbx itself
 * answers the proxy's asks of this run (issue 20): a child process
 * follows the proxy's asks (`sbx proxy asks --follow`'s channel), and for
 * each one of its run prompts on /dev/tty
 *
 *	sbx: allow example.org:443 for agent alice? [o]nce/[a]lways/[d]eny
 *
 * and answers as `sbx proxy answer` does.  Anything but o or a is deny;
 * the ask's own timeout still applies when nobody types.
 */
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "exec-ask.h"
#include "exec.h"
#include "proxyclient.h"

/* One decision from the terminal. */
static const char *
prompt(FILE *tty, const json_t *a)
{
	char	 line[64];

	fprintf(tty, "\r\nsbx: allow %s:%lld for agent %s? "
	    "[o]nce/[a]lways/[d]eny ",
	    json_string_value(json_object_get(a, "host")),
	    json_integer_value(json_object_get(a, "port")),
	    json_string_value(json_object_get(a, "agent")));
	fflush(tty);
	if (fgets(line, sizeof(line), tty) == NULL)
		return "deny";
	return line[0] == 'o' || line[0] == 'O' ? "allow-once" :
	    line[0] == 'a' || line[0] == 'A' ? "allow-always" : "deny";
}

static const char *
str(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* An ask of this run? */
static int
mine(const struct sbx_exec *x, const json_t *a)
{
	return str(a, "run") != NULL && str(a, "id") != NULL &&
	    strcmp(str(a, "run"), x->proxy_run) == 0;
}

static void
answer(int rootfd, const char *id, const char *ans)
{
	struct sbx_error	 e;
	json_t			*r;
	int			 ctl;

	memset(&e, 0, sizeof(e));
	if ((ctl = sbx_proxyclient_connect(rootfd, &e)) == -1)
		return;
	r = sbx_proxyclient_call(ctl, json_pack("{s:s,s:s,s:s}", "op",
	    "answer", "id", id, "answer", ans), -1, 5000, &e);
	json_decref(r);
	close(ctl);
}

static void __attribute__((noreturn))
follow(const struct sbx_exec *x, FILE *tty)
{
	struct sbx_error	 e;
	json_t			*o, *a;
	char			 buf[65536], *nl;
	size_t			 len = 0;
	ssize_t			 r;
	int			 ctl;

	memset(&e, 0, sizeof(e));
	if ((ctl = sbx_proxyclient_connect(x->root.fd, &e)) == -1)
		_exit(0);
	/* The asks already pending when we came (the command may have
	 * been quicker), then each new one. */
	o = sbx_proxyclient_call(ctl, json_pack("{s:s,s:b}", "op", "asks",
	    "follow", 1), -1, 5000, &e);
	json_array_foreach (json_object_get(o, "asks"), len, a)
		if (mine(x, a))
			answer(x->root.fd, json_string_value(
			    json_object_get(a, "id")), prompt(tty, a));
	json_decref(o);
	len = 0;
	for (;;) {
		if ((r = read(ctl, buf + len, sizeof(buf) - 1 - len)) <= 0)
			_exit(0);
		len += (size_t)r;
		buf[len] = '\0';
		while ((nl = strchr(buf, '\n')) != NULL) {
			*nl = '\0';
			o = json_loads(buf, 0, NULL);
			a = o;
			if (json_is_object(a) && str(a, "event") != NULL &&
			    strcmp(str(a, "event"), "ask") == 0 && mine(x, a))
				answer(x->root.fd, json_string_value(
				    json_object_get(a, "id")), prompt(tty, a));
			json_decref(o);
			len -= (size_t)(nl + 1 - buf);
			memmove(buf, nl + 1, len + 1);
		}
		if (len == sizeof(buf) - 1)
			len = 0;	/* a line that long is no ask */
	}
}

pid_t
exec_ask_start(const struct sbx_exec *x)
{
	FILE	*tty;
	pid_t	 pid;

	if (x->req == NULL || !x->req->ask || x->req->tty ||
	    x->req->capture || x->proxy_run[0] == '\0' || !isatty(0) ||
	    !isatty(2))
		return -1;
	if ((pid = fork()) != 0)
		return pid;
	/* Gone with sbx exec, whatever ends it. */
	(void)prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1 || (tty = fopen("/dev/tty", "r+e")) == NULL)
		_exit(0);
	follow(x, tty);
}

void
exec_ask_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	(void)kill(pid, SIGTERM);
	(void)waitpid(pid, NULL, 0);
}
