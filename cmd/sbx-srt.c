/*
 * sbx-srt: a drop-in for srt (Anthropic's sandbox-runtime): its settings
 * file, its command line, run by sbx exec.  See sbx-srt(1).
 *
 * Parse; read the settings file; map it (srtconf.c) onto an
 * agent of its own (srt-DIGEST, whose settings file this writes) and the
 * options of one `sbx exec --host-view` run; run sbx-exec with them.
 * sbx-exec keeps every guarantee it has: sbx srt never starts a command
 * itself, and nothing runs when the settings cannot be honoured.
 * With --control-fd, sbx srt stays beside sbx-exec and hands each line
 * (a whole settings object) to the proxy as the run's new network policy.
 */
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "fsutil.h"
#include "layout.h"
#include "opts.h"
#include "proxyclient.h"
#include "root.h"
#include "srtconf.h"
#include "tools.h"
#include "users.h"
#include "utf8.h"

#define PROG	"sbx-srt"
#define TOOL	"srt"

static const char usage_text[] =
"usage: sbx srt [--settings FILE] [--debug] [--control-fd N] [--explain]\n"
"               [--home DIR] [--json] [-q] [-v] [--] COMMAND [ARG...]\n"
"       sbx srt [options] -c STRING\n";

static const char help_text[] =
"\n"
"Run COMMAND as srt (Anthropic's sandbox-runtime) would, under sbx: srt's\n"
"settings file (default ~/.srt-settings.json) becomes an sbx policy, the\n"
"host is shown read-only (minus denyRead and sbx's hidden credential\n"
"files), allowWrite directories are writable.  COMMAND and its ARGs are\n"
"shell-quoted and run by bash -c; -c STRING is run as it is.  --explain\n"
"prints the policy and the equivalent sbx exec command, and runs nothing.\n"
"Exit status: the command's; 125 sbx failed, 126/127 cannot execute / not\n"
"found, 128+N killed by signal N (srt: 0 when interrupted at the terminal).\n"
"\n";

enum {
	OPT_HOME = 256, OPT_VERSION, OPT_CONTROL_FD, OPT_EXPLAIN,
};

static const struct sbx_opt rows[] = {
	{ 's', "settings", 's', SBX_OPT_REQ, "FILE", "@file",
	    "srt's settings file (default:\n~/.srt-settings.json; - reads "
	    "standard input)", 1, 0 },
	{ 'd', "debug", 'd', SBX_OPT_NONE, NULL, NULL,
	    "print the sbx exec command and bwrap's", 1, 0 },
	{ 'c', NULL, 'c', SBX_OPT_REQ, "STRING", NULL,
	    "run STRING with bash -c, unescaped", 1, 0 },
	{ OPT_CONTROL_FD, "control-fd", 0, SBX_OPT_REQ, "N", NULL,
	    "read settings lines from descriptor N (>= 3):\n"
	    "each replaces the running command's network\n"
	    "policy", 1, 0 },
	{ OPT_EXPLAIN, "explain", 0, SBX_OPT_NONE, NULL, NULL,
	    "print the sbx policy and sbx exec command;\n"
	    "run nothing", 1, 0 },
	{ OPT_HOME, "home", 0, SBX_OPT_REQ, "DIR", "@dir",
	    "state root (default: $SBX_HOME,\n"
	    "$XDG_DATA_HOME/sbx, ~/.local/share/sbx)", 1, 0 },
	SBX_OPT_ROW_JSON(1),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no violation lines on stderr", 1, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "as --debug", 1, 0 },
	SBX_OPT_ROW_HELP(1),
	SBX_OPT_ROW_VERSION(OPT_VERSION, 1),
};

static const struct sbx_opts table = { PROG, "sbx srt", rows,
	SBX_OPTS_N(rows), NULL, 0, 1, "@command", 25, 1 };

static struct {
	const char	*settings, *shell, *home, *control_arg;
	int		 json, quiet, verbose, explain, control_fd;
	char	       **argv;
	int		 argc;
} O;

static const char *tool = TOOL;
/* sbx-exec, once started: a SIGTERM or SIGHUP for us is passed on. */
static volatile pid_t child;

static void
forward(int sig)
{
	if (child > 0)
		(void)kill(child, sig);
}

/* Has pid ended?  Without reaping it (its status is read at the end). */
static int
gone(pid_t pid)
{
	siginfo_t	 si;

	memset(&si, 0, sizeof(si));
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
	    -1 || si.si_pid != 0;
}

static void __attribute__((noreturn))
usage_err(const struct sbx_error *e)
{
	sbx_cmd_usage(PROG, tool, O.json, e, usage_text, sbx_cmd_emit);
	exit(SBX_EX_USAGE);
}

/* sbx's own failure before anything ran: 125 as sbx exec's (the command
 * is not run), the one table's status under --json. */
static void __attribute__((noreturn))
fail(const struct sbx_error *e)
{
	sbx_cmd_fail(PROG, tool, O.json, e, NULL, sbx_cmd_emit,
	    O.json || O.explain ? -1 : SBX_EX_FAILED);
}

static const struct sbx_cmd_opts cmdopts = { PROG, usage_text, help_text,
	NULL, &table, 1, &O.json, &O.quiet, &O.verbose, usage_err,
	.tool = TOOL };

static void
parse_args(int argc, char *argv[])
{
	struct sbx_opts_getopt	 g;
	struct sbx_error	 e;
	unsigned long long	 v;
	int			 ch;

	O.control_fd = -1;
	if (sbx_opts_getopt(&table, 1, &g) == -1)
		exit(SBX_EX_SOFTWARE);
	O.json = sbx_cli_wants_json(argc, argv, g.optstring, g.longopts, NULL);
	opterr = 0;
	while ((ch = sbx_cmd_getopt(argc, argv, &g, NULL)) != -1) {
		switch (ch) {
		case 's': O.settings = optarg; break;
		case 'd': O.verbose = 1; break;
		case 'c': O.shell = optarg; break;
		case OPT_CONTROL_FD: O.control_arg = optarg; break;
		case OPT_EXPLAIN: O.explain = 1; break;
		case OPT_HOME: O.home = optarg; break;
		default:
			sbx_cmd_opt(&cmdopts, ch, argc, argv, &g);
			break;
		}
	}
	O.argv = argv + optind;
	O.argc = argc - optind;
	if (O.shell != NULL && O.argc > 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command",
		    "unexpected_argument", "-c takes the whole command: "
		    "nothing may follow it");
		usage_err(&e);
	}
	if (O.shell == NULL && O.argc == 0 && !O.explain) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command", "missing",
		    "no command given: use `COMMAND [ARG...]` or `-c STRING`");
		usage_err(&e);
	}
	if (O.control_arg != NULL) {
		if (sbx_cli_parse_uint(O.control_arg, INT_MAX, &v) == -1 ||
		    v < 3 || fcntl((int)v, F_GETFD) == -1) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "control_fd",
			    "bad_fd", "argument `control-fd` must name an open "
			    "file descriptor above 2");
			usage_err(&e);
		}
		O.control_fd = (int)v;
		/* Never the sandbox's. */
		(void)fcntl(O.control_fd, F_SETFD, FD_CLOEXEC);
	}
}

/* The settings file: NULL for srt's defaults (the default file absent or
 * empty); a file named with --settings must exist. */
static json_t *
load_settings(const char *home, struct sbx_error *e)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	char		 def[PATH_MAX];
	const char	*path = O.settings;
	json_t		*doc;
	int		 fd;

	if (path == NULL) {
		snprintf(def, sizeof(def), "%s/.srt-settings.json", home);
		path = def;
	}
	/* "-": standard input (which the command then finds at its end). */
	if (strcmp(path, "-") == 0)
		fd = dup(STDIN_FILENO);
	else
		fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT && O.settings == NULL)
			return NULL;
		sbx_error_sys(e, "settings", "%s", path);
		e->kind = SBX_K_INVALID_ARGS;
		if (errno == ENOENT)
			e->kind = SBX_K_NOT_FOUND;
		e->field = "settings";
		return (json_t *)-1;
	}
	if (sbx_fs_read_fd(fd, &b, SBX_SRTCONF_MAX) == -1) {
		close(fd);
		sbx_error_sys(e, "settings", "%s", path);
		e->kind = SBX_K_INVALID_ARGS;
		e->field = "settings";
		return (json_t *)-1;
	}
	close(fd);
	if (b.len == 0 || strspn(b.p, " \t\r\n") == b.len) {
		sbx_buf_release(&b);
		return NULL;
	}
	doc = sbx_json_parse(b.p, b.len, SBX_SRTCONF_MAX, e);
	sbx_buf_release(&b);
	if (doc == NULL) {
		e->field = "settings";
		sbx_error_hint(e, "%s must be one JSON object", path);
		return (json_t *)-1;
	}
	return doc;
}

/* The sbx exec command line of the run (argv[0] is the program path). */
static int
exec_argv(const struct sbx_srtconf *c, const char *exe, const char *cwd,
    const char *command, int envelope_fd, struct sbx_strv *v)
{
	size_t		 i;
	int		 rc = 0;

	/* HOME and PATH are sbx's (it reserves both): the caller's home is
	 * still there at its own path, read-only. */
	rc |= sbx_strv_push(v, exe);
	if (O.home != NULL)
		rc |= sbx_strv_push(v, "--home") | sbx_strv_push(v, O.home);
	rc |= sbx_strv_push(v, "--agent") | sbx_strv_push(v, c->agent);
	rc |= sbx_strv_push(v, "--host-view");
	rc |= sbx_strv_push(v, "--network") |
	    sbx_strv_push(v, O.control_fd >= 0 ? "proxy" : c->network);
	for (i = 0; i < c->writable.n; i++)
		rc |= sbx_strv_push(v, "--workdir") |
		    sbx_strv_push(v, c->writable.v[i]);
	rc |= sbx_strv_push(v, "--cwd") | sbx_strv_push(v, cwd);
	if (O.json)
		rc |= sbx_strv_push(v, "--json");
	/* Without --json, sbx srt prints the violations and warnings
	 * itself, from the result envelope. */
	if (O.quiet || envelope_fd >= 0)
		rc |= sbx_strv_push(v, "-q");
	if (O.verbose)
		rc |= sbx_strv_push(v, "-v");
	if (envelope_fd >= 0)
		rc |= sbx_strv_push(v, "--envelope-fd") |
		    sbx_strv_pushf(v, "%d", envelope_fd);
	rc |= sbx_strv_push(v, "--");
	rc |= sbx_strv_push(v, "bash") | sbx_strv_push(v, "-c");
	rc |= sbx_strv_push(v, command);
	return rc ? -1 : 0;
}

/* argv as one line for people, each word quoted as srt quotes. */
static char *
argv_line(char *const *v, size_t n)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	sbx_buf_puts(&b, "sbx exec");
	if (n > 1) {
		sbx_buf_puts(&b, " ");
		sbx_srtconf_quote(v + 1, (int)n - 1, &b);
	}
	return sbx_buf_detach(&b);
}

static void
explain(const struct sbx_srtconf *c, const struct sbx_strv *v)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*res, *a;
	char		*line, *s;
	size_t		 i;

	line = argv_line(v->v, v->n);
	if (O.json) {
		a = json_array();
		for (i = 1; i < v->n; i++)
			json_array_append_new(a, sbx_json_bytes(v->v[i],
			    strlen(v->v[i])));
		res = json_pack("{s:s,s:O,s:s,s:o,s:O,s:o}", "agent", c->agent,
		    "agent_settings", c->cfg, "network", c->network,
		    "exec_args", a, "notes", c->notes, "command_line",
		    sbx_json_bytes(line, strlen(line)));
		if (c->ignore != NULL)
			json_object_set(res, "ignore_violations", c->ignore);
		sbx_cmd_emit(sbx_envelope_ok("srt.explain", res, NULL));
		free(line);
		return;
	}
	s = json_dumps(c->cfg, JSON_INDENT(2) | JSON_SORT_KEYS);
	printf("agent: %s\nnetwork: %s\n", c->agent, c->network);
	printf("agent settings (config/agents/%s.json):\n%s\n", c->agent,
	    s != NULL ? s : "");
	free(s);
	json_array_foreach (c->notes, i, a) {
		sbx_buf_reset(&b);
		sbx_utf8_escape_line(&b, json_string_value(a),
		    strlen(json_string_value(a)));
		printf("note: %s\n", b.p != NULL ? b.p : "");
	}
	sbx_buf_reset(&b);
	sbx_utf8_escape_line(&b, line, strlen(line));
	printf("equivalent: %s\n", b.p);
	sbx_buf_release(&b);
	free(line);
}

/* Write the agent's settings, atomically, 0600, beneath the root (the
 * digest names them: an unchanged file is rewritten with the same
 * bytes, so runs of the same file at once agree). */
static void
store_agent(const struct sbx_srtconf *c)
{
	struct sbx_root		 root = SBX_ROOT_INIT;
	struct sbx_error	 e;
	struct sbx_buf		 have = SBX_BUF_INIT;
	char			*s, name[64];
	int			 dfd;

	/* Checked by sbx-exec when it loads them, as any agent's (sbx srt
	 * does not link the proxy, whose loader checks its keys). */
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 1, &e) == -1 ||
	    (dfd = sbx_layout_mkdirs(root.fd, SBX_L_CONFIG_AGENTS, NULL, &e)) ==
	    -1)
		fail(&e);
	if ((s = json_dumps(c->cfg, JSON_INDENT(2) | JSON_SORT_KEYS)) ==
	    NULL) {
		sbx_error_sys(&e, "nomem", "agent settings");
		fail(&e);
	}
	snprintf(name, sizeof(name), "%s.json", c->agent);
	/* Written once: a file with these bytes is left alone (no fsync
	 * on every run of the same settings). */
	if (sbx_fs_read_file_at(dfd, name, strlen(s) + 1, &have, &e) == -1 ||
	    have.len != strlen(s) || memcmp(have.p, s, have.len) != 0) {
		if (sbx_fs_replace_at(dfd, name, s, strlen(s), 0600, &e) == -1)
			fail(&e);
	}
	sbx_buf_release(&have);
	free(s);
	close(dfd);
	sbx_root_release(&root);
}

/* One control line: a whole settings object; its network becomes the
 * session's.  A bad line changes nothing and is said on stderr (srt
 * ignores it and says so too): the previous policy stays. */
static void
control_line(const char *line, size_t len, const char *home, const char *cwd,
    const char *agent, pid_t pid)
{
	struct sbx_root		 root = SBX_ROOT_INIT;
	struct sbx_error	 e;
	json_t			*doc, *pol, *ans;
	int			 ctl, i;

	if (strspn(line, " \t\r") == len)
		return;
	if ((doc = sbx_json_parse(line, len, SBX_SRTCONF_MAX, &e)) == NULL ||
	    (pol = sbx_srtconf_netpolicy(doc, home, cwd, &e)) == NULL) {
		json_decref(doc);
		fprintf(stderr, "%s: control line refused, previous policy "
		    "still in force: %s\n", PROG, e.message);
		return;
	}
	json_decref(doc);
	json_object_set_new(pol, "op", json_string("policy"));
	json_object_set_new(pol, "agent", json_string(agent));
	json_object_set_new(pol, "pid", json_integer(pid));
	if (sbx_root_resolve(O.home, &root, &e) == -1 ||
	    sbx_root_open(&root, 0, &e) == -1) {
		json_decref(pol);
		fprintf(stderr, "%s: control line: %s\n", PROG, e.message);
		return;
	}
	/* The session opens once sbx-exec has started the proxy: a line
	 * that comes first waits for it (up to 10 s). */
	for (i = 0; i < 200; i++) {
		if ((ctl = sbx_proxyclient_connect(root.fd, &e)) >= 0) {
			ans = sbx_proxyclient_call(ctl, json_incref(pol), -1,
			    5000, &e);
			close(ctl);
			if (ans != NULL) {
				if (O.verbose)
					fprintf(stderr, "%s: control line "
					    "applied: the network policy is "
					    "replaced\n", PROG);
				json_decref(ans);
				break;
			}
		}
		/* Waiting is for the proxy and the session to be there
		 * (run/ made, the proxy started, sbx-exec's session open):
		 * a policy the proxy refused is not waited on. */
		if ((e.kind != NULL && strcmp(e.kind, SBX_K_INVALID_ARGS) ==
		    0) || gone(pid) || i == 199) {
			fprintf(stderr, "%s: control line not applied: %s\n",
			    PROG, e.message);
			break;
		}
		usleep(50000);
	}
	json_decref(pol);
	sbx_root_release(&root);
}

/* One line per denial, as srt's users read them; ignoreViolations
 * drops file-system ones. */
static void
print_violations(const struct sbx_srtconf *c, const json_t *env,
    const char *command)
{
	const json_t	*vs, *v;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*type, *path, *host, *why;
	size_t		 i;
	int		 sock;

	vs = json_object_get(json_object_get(env, "result"), "violations");
	if (vs == NULL)
		vs = json_object_get(env, "violations");
	json_array_foreach (vs, i, v) {
		type = json_string_value(json_object_get(v, "type"));
		path = json_string_value(json_object_get(v, "path"));
		host = json_string_value(json_object_get(v, "host"));
		why = json_string_value(json_object_get(v, "reason"));
		sbx_buf_reset(&b);
		if (type != NULL && strcmp(type, "filesystem") == 0 &&
		    path != NULL) {
			if (sbx_srtconf_ignored(c->ignore, command, path))
				continue;
			sock = why != NULL && strcmp(why, "unix_socket") == 0;
			sbx_buf_printf(&b, "sbx srt: %s blocked: ",
			    sock ? "unix socket" : "write");
			sbx_utf8_escape_line(&b, path, strlen(path));
		} else if (host != NULL) {
			sbx_buf_puts(&b, "sbx srt: network blocked: ");
			sbx_utf8_escape_line(&b, host, strlen(host));
			if (json_is_integer(json_object_get(v, "port")))
				sbx_buf_printf(&b, ":%lld",
				    (long long)json_integer_value(
					json_object_get(v, "port")));
		} else
			continue;
		if (why != NULL)
			sbx_buf_printf(&b, " (%s)", why);
		fprintf(stderr, "%s\n", b.p);
	}
	sbx_buf_release(&b);
}

/*
 * Run sbx-exec beside us: we forward control lines and read its result
 * envelope (for the violation lines).  Its exit status is ours.
 */
static int
run(const struct sbx_srtconf *c, const char *exe, const char *cwd,
    const char *home, const char *command)
{
	struct sbx_strv	 v = SBX_STRV_INIT;
	struct sbx_buf	 env = SBX_BUF_INIT, line = SBX_BUF_INIT;
	struct sbx_error e;
	struct pollfd	 pf[2];
	struct sigaction sa;
	char		 buf[4096], *nl;
	int		 ep[2] = { -1, -1 }, st, n;
	pid_t		 pid;
	ssize_t		 r;
	json_t		*doc;

	if (!O.json && pipe2(ep, O_CLOEXEC) == -1) {
		sbx_error_sys(&e, "pipe", "envelope pipe");
		fail(&e);
	}
	if (exec_argv(c, exe, cwd, command, ep[1], &v) == -1) {
		sbx_error_sys(&e, "nomem", "sbx exec arguments");
		fail(&e);
	}
	if (O.verbose) {
		nl = argv_line(v.v, v.n);
		fprintf(stderr, "%s: %s\n", PROG, nl);
		free(nl);
	}
	fflush(NULL);
	if ((pid = fork()) == -1) {
		sbx_error_sys(&e, "fork", "starting sbx exec");
		fail(&e);
	}
	if (pid == 0) {
		/* The envelope end, and no other of ours, crosses exec. */
		if (ep[1] >= 0)
			(void)fcntl(ep[1], F_SETFD, 0);
		execv(v.v[0], v.v);
		_exit(SBX_EX_FAILED);
	}
	if (ep[1] >= 0)
		close(ep[1]);
	/* The terminal's signals reach sbx-exec (our process group); we
	 * wait for it to report.  One sent to us alone goes to it, which
	 * ends the sandbox: sbx srt never leaves a sandbox behind. */
	child = pid;
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	sa.sa_handler = forward;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
	pf[0].fd = ep[0];
	pf[1].fd = O.control_fd;
	pf[0].events = pf[1].events = POLLIN;
	while (pf[0].fd >= 0 || pf[1].fd >= 0) {
		if (pf[0].fd < 0 && gone(pid))
			break;
		if ((n = poll(pf, 2, pf[0].fd < 0 ? 200 : -1)) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			continue;
		if (pf[0].fd >= 0 && pf[0].revents != 0) {
			r = read(pf[0].fd, buf, sizeof(buf));
			if (r <= 0 || env.len > SBX_SRTCONF_MAX) {
				close(pf[0].fd);
				pf[0].fd = -1;
			} else
				sbx_buf_append(&env, buf, (size_t)r);
		}
		if (pf[1].fd >= 0 && pf[1].revents != 0) {
			r = read(pf[1].fd, buf, sizeof(buf));
			if (r <= 0) {
				pf[1].fd = -1;
				continue;
			}
			sbx_buf_append(&line, buf, (size_t)r);
			while (line.len > 0 && (nl = memchr(line.p, '\n',
			    line.len)) != NULL) {
				*nl = '\0';
				control_line(line.p, (size_t)(nl - line.p),
				    home, cwd, c->agent, pid);
				line.len -= (size_t)(nl + 1 - line.p);
				memmove(line.p, nl + 1, line.len);
			}
			if (line.len > SBX_SRTCONF_MAX) {
				fprintf(stderr, "%s: control line too long: "
				    "ignored\n", PROG);
				line.len = 0;
			}
		}
	}
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (env.len > 0 && !O.quiet && (doc = sbx_json_parse(env.p, env.len,
	    SBX_SRTCONF_MAX + 1, &e)) != NULL) {
		print_violations(c, doc, command);
		sbx_cmd_print_warnings(PROG, json_object_get(doc, "warnings"),
		    0);
		json_decref(doc);
	}
	sbx_buf_release(&env);
	sbx_buf_release(&line);
	sbx_strv_release(&v);
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + WTERMSIG(st);
}

int
main(int argc, char *argv[])
{
	struct sbx_srtconf	 c;
	struct sbx_error	 e;
	struct sbx_strv		 v = SBX_STRV_INIT;
	struct sbx_buf		 cmd = SBX_BUF_INIT;
	char			 cwd[PATH_MAX], *dir, exe[PATH_MAX];
	char			*pwhome = NULL;
	const char		*home, *p;
	json_t			*doc;
	int			 rc;

	if (sbx_cmd_start(&cmdopts, argc, argv, &rc))
		return rc;
	parse_args(argc, argv);
	/* HOME, else the passwd entry's home (srt's os.homedir()). */
	home = getenv("HOME");
	if ((home == NULL || home[0] != '/') &&
	    (pwhome = sbx_user_home(getuid())) != NULL)
		home = pwhome;
	if (home == NULL || home[0] != '/' || getcwd(cwd, sizeof(cwd)) ==
	    NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "home", "no_home",
		    "HOME must be an absolute path and the current directory "
		    "reachable");
		fail(&e);
	}
	if ((doc = load_settings(home, &e)) == (json_t *)-1)
		fail(&e);
	sbx_srtconf_init(&c);
	if (sbx_srtconf_map(doc, home, cwd, &c, &e) == -1)
		fail(&e);
	json_decref(doc);
	/* srt's command: the string of -c as it is, else the arguments
	 * shell-quoted; bash -c runs it either way. */
	if (O.shell != NULL)
		sbx_buf_puts(&cmd, O.shell);
	else if (O.argc > 0)
		sbx_srtconf_quote(O.argv, O.argc, &cmd);
	else
		sbx_buf_puts(&cmd, "COMMAND");
	/* sbx-exec beside us (SBX_EXEC_PATH for the tests, ignored when
	 * set-id). */
	p = secure_getenv("SBX_EXEC_PATH");
	dir = p != NULL && *p == '/' ? strdup(p) : sbx_tools_self_dir();
	snprintf(exe, sizeof(exe), "%s/sbx-exec", dir != NULL ? dir :
	    SBX_LIBEXECDIR);
	free(dir);
	if (O.explain) {
		if (exec_argv(&c, exe, cwd, cmd.p, -1, &v) == -1) {
			sbx_error_sys(&e, "nomem", "sbx exec arguments");
			fail(&e);
		}
		explain(&c, &v);
		sbx_strv_release(&v);
		rc = 0;
	} else {
		store_agent(&c);
		rc = run(&c, exe, cwd, home, cmd.p);
	}
	sbx_buf_release(&cmd);
	sbx_srtconf_release(&c);
	free(pwhome);
	return rc;
}
