/*
 * sbx-exec: run a command in an agent's sandbox, in the foreground or as a
 * supervised background job.  See sbx-exec(1).
 */
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "cli.h"
#include "cmd.h"
#include "envelope.h"
#include "fsutil.h"
#include "idmount.h"
#include "imageref.h"
#include "job.h"
#include "joblog.h"
#include "runlimits.h"
#include "names.h"
#include "netpolicy.h"
#include "provision.h"
#include "proxy.h"
#include "root.h"
#include "run.h"
#include "sandbox.h"
#include "seccomp.h"
#include "tools.h"
#include "users.h"
#include "utf8.h"

#define PROG	"sbx-exec"

#ifdef SBX_BUILTIN
int	main(int, char *[]);	/* sbx_exec_main, built into cmd/sbx.c */
#endif

static const char usage_text[] =
"usage: sbx exec [--agent A] [--home DIR] [--cwd PATH] [--workdir DIR]\n"
"                [--workdir-follow-symlinks]\n"
"                [--env NAME=VALUE]... [--timeout SECONDS] [--tty]\n"
"                [--network none|proxy|outbound] [--allow-domain D]...\n"
"                [--json] [--max-output BYTES] [--stdin inherit|null]\n"
"                [--memory MIB] [--cpus N.N] [--pids N] [--disk MIB]\n"
"                [--wall-timeout SECONDS] [--nofile N] [--file-size MIB]\n"
"                [--soft-limits] [--seccomp on|off]\n"
"                [--background] [-q] [-v] -- COMMAND [ARG...]\n"
"       sbx exec [options] -c 'SHELL STRING' [NAME [ARG...]]\n"
"       sbx exec ps [--agent A] [--json]\n"
"       sbx exec poll JOB [--tail-lines N] [--agent A] [--json]\n"
"       sbx exec wait JOB [--timeout SECONDS] [--agent A] [--json]\n"
"       sbx exec kill JOB [--force] [--agent A] [--json]\n"
"       sbx exec gc [--json]\n";

static const char help_text[] =
"\n"
"Run COMMAND in the agent's sandbox: every namespace unshared, system\n"
"directories read-only, HOME=/workspace/agents/AGENT, private /tmp, no\n"
"network unless asked. Without --json the command's output streams\n"
"through and sbx exits with its status (124 idle timeout, 125 sbx failed,\n"
"126 cannot execute, 127 not found, 128+N killed by signal N).\n"
"\n"
"  -a, --agent A          agent name (default: $SBX_AGENT or \"default\")\n"
"      --home DIR         state root (default: $SBX_HOME, $XDG_DATA_HOME/sbx,\n"
"                         ~/.local/share/sbx)\n"
"  -C, --cwd PATH         start in PATH: relative to HOME, or absolute inside\n"
"                         HOME or --workdir\n"
"  -w, --workdir DIR      bind host directory DIR read-write at its own path\n"
"                         and start there (no symbolic links in DIR)\n"
"      --workdir-follow-symlinks\n"
"                         follow symbolic links in DIR; print where it leads\n"
"  -e, --env NAME=VALUE   set a variable inside (repeatable)\n"
"      --timeout SECONDS  kill the command after SECONDS without output\n"
"                         (output a program buffers counts as silence)\n"
"  -t, --tty              run the command on a terminal of its own (stdout\n"
"                         and stderr merged; the caller's terminal goes raw)\n"
"  -n, --network MODE     none (default: loopback only), proxy (only the\n"
"                         agent's allowed domains, through sbx-proxy) or\n"
"                         outbound (host network); default: the agent's\n"
"                         `network` setting, else none\n"
"      --allow-domain D   proxy mode: also allow D (or *.D) for this run\n"
"  -c STRING              run STRING with bash -o pipefail -c (sh -c without\n"
"                         bash); NAME and ARGs after it are $0, $1...\n"
"      --max-output BYTES captured bytes kept per stream with --json\n"
"                         (default 1M; K, M, G suffixes)\n"
"      --stdin MODE       inherit (the caller's stdin) or null (/dev/null);\n"
"                         default: null when stdin is a terminal and --json\n"
"                         is given, else inherit (background: always null)\n"
"      --memory MIB       memory limit, swap included (default: half of RAM)\n"
"      --cpus N.N         CPU limit in cores (e.g. 0.5)\n"
"      --pids N           task limit (default 1024)\n"
"      --disk MIB         size of /tmp and largest file written (soft)\n"
"      --wall-timeout S   kill the sandbox after S seconds, output or not\n"
"      --nofile N         open files limit (RLIMIT_NOFILE)\n"
"      --file-size MIB    largest file the command may write (RLIMIT_FSIZE)\n"
"      --soft-limits      accept rlimits where no cgroup can enforce a limit\n"
"      --seccomp MODE     on (default) or off (diagnosis only)\n"
"  -b, --background       start as a background job and return at once\n"
"      --tail-lines N     lines of log returned by poll and wait (default 20)\n"
"      --force            kill: SIGKILL at once instead of SIGTERM\n"
"  -j, --json             print one JSON envelope (also SBX_JSON=1)\n"
"  -q, --quiet            no warnings on stderr\n"
"  -v, --verbose          show the bwrap command on stderr\n"
"  -h, --help             this help\n"
"      --version          print the version\n";

enum {
	OPT_HOME = 256, OPT_MAX_OUTPUT, OPT_TAIL, OPT_FORCE, OPT_VERSION,
	OPT_MEMORY, OPT_CPUS, OPT_PIDS, OPT_DISK, OPT_WALL, OPT_NOFILE,
	OPT_WORKDIR_FOLLOW,
	OPT_FSIZE, OPT_SOFT, OPT_SECCOMP, OPT_ALLOW, OPT_STDIN, OPT_TIMEOUT,
	OPT_TTY,
};

static const struct option longopts[] = {
	{ "agent",	required_argument,	NULL, 'a' },
	{ "home",	required_argument,	NULL, OPT_HOME },
	{ "cwd",	required_argument,	NULL, 'C' },
	{ "workdir",	required_argument,	NULL, 'w' },
	{ "workdir-follow-symlinks", no_argument, NULL, OPT_WORKDIR_FOLLOW },
	{ "env",	required_argument,	NULL, 'e' },
	{ "timeout",	required_argument,	NULL, OPT_TIMEOUT },
	{ "tty",	no_argument,		NULL, OPT_TTY },
	{ "network",	required_argument,	NULL, 'n' },
	{ "max-output",	required_argument,	NULL, OPT_MAX_OUTPUT },
	{ "background",	no_argument,		NULL, 'b' },
	{ "tail-lines",	required_argument,	NULL, OPT_TAIL },
	{ "force",	no_argument,		NULL, OPT_FORCE },
	{ "json",	no_argument,		NULL, 'j' },
	{ "quiet",	no_argument,		NULL, 'q' },
	{ "verbose",	no_argument,		NULL, 'v' },
	{ "help",	no_argument,		NULL, 'h' },
	{ "version",	no_argument,		NULL, OPT_VERSION },
	{ "memory",	required_argument,	NULL, OPT_MEMORY },
	{ "cpus",	required_argument,	NULL, OPT_CPUS },
	{ "pids",	required_argument,	NULL, OPT_PIDS },
	{ "disk",	required_argument,	NULL, OPT_DISK },
	{ "wall-timeout", required_argument,	NULL, OPT_WALL },
	{ "nofile",	required_argument,	NULL, OPT_NOFILE },
	{ "file-size",	required_argument,	NULL, OPT_FSIZE },
	{ "soft-limits", no_argument,		NULL, OPT_SOFT },
	{ "seccomp",	required_argument,	NULL, OPT_SECCOMP },
	{ "allow-domain", required_argument,	NULL, OPT_ALLOW },
	{ "stdin",	required_argument,	NULL, OPT_STDIN },
	{ NULL, 0, NULL, 0 }
};

struct opts {
	const char	*agent;
	const char	*home;
	const char	*cwd;
	const char	*workdir;
	int		 workdir_follow;	/* --workdir-follow-symlinks */
	const char	*network;
	int		 network_set;	/* given as a flag */
	struct sbx_strv	 allow;		/* --allow-domain */
	const char	*shell;
	const char	*timeout_arg;
	struct sbx_strv	 env;
	double		 timeout;
	size_t		 max_output;
	int		 background;
	int		 tail_lines;
	int		 force;
	int		 json;
	int		 quiet;
	int		 verbose;
	int		 seccomp_off;
	int		 stdin_mode;	/* STDIN_AUTO, _INHERIT, _NULL */
	int		 tty;		/* -t */
	struct sbx_strv	 limit_keys;	/* key, value, key, value... */
	int		 soft_limits;
	char	       **argv;		/* command, or subcommand args */
	int		 argc;
	const char	*sub;		/* ps, poll, wait, kill, or NULL */
};

enum { STDIN_AUTO, STDIN_INHERIT, STDIN_NULL };

static struct opts	 O;
static const char	*tool = "exec";
static int		 sigpipe_fds[2] = { -1, -1 };

/* The options of sbx exec itself, and of its subcommands (whose options
 * may follow their operands). */
static const char	 exec_optstring[] = "+a:C:w:e:tn:c:bjqvh";
static const char	 sub_optstring[] = "-a:t:jqvh";
static const char *const exec_subs[] = {
	"ps", "poll", "wait", "kill", "gc", NULL
};

/* A usage error: an invalid_args envelope under --json, the message
 * and the synopsis on stderr; exit 64 (e NULL: the synopsis only). */
static void __attribute__((noreturn))
usage_err(const struct sbx_error *e)
{
	sbx_cmd_usage(PROG, tool, O.json, e, usage_text, sbx_cmd_emit);
	exit(SBX_EX_USAGE);
}

static void __attribute__((noreturn))
usage(void)
{
	usage_err(NULL);
}

/* getopt_long refused an option (opterr is 0: we say it ourselves). */
static void __attribute__((noreturn))
usage_getopt(int argc, char *argv[], const char *optstring)
{
	struct sbx_error	 e;

	sbx_cli_getopt_error(argc, argv, optstring, longopts, &e);
	usage_err(&e);
}

static void
emit(json_t *env)
{
	sbx_cmd_emit(env);
}

/* Report a failure (envelope or text) and exit. */
static void __attribute__((noreturn))
fail_extra(struct sbx_error *e, int code, json_t *extra)
{
	sbx_cmd_report(PROG, tool, O.json, e, extra, emit);
	exit(code);
}

static void __attribute__((noreturn))
fail(struct sbx_error *e, int code)
{
	fail_extra(e, code, NULL);
}

static void
on_signal(int sig)
{
	unsigned char	 c = (unsigned char)sig;
	int		 saved = errno;

	if (sigpipe_fds[1] >= 0)
		(void)!write(sigpipe_fds[1], &c, 1);
	errno = saved;
}

static void
install_signals(int with_usr1)
{
	struct sigaction	 sa;

	if (pipe2(sigpipe_fds, O_CLOEXEC | O_NONBLOCK) == -1)
		return;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	if (with_usr1)
		sigaction(SIGUSR1, &sa, NULL);
}

/*
 * Options of ps/poll/wait/kill, which may come before or after the job id.
 * argv[0] is the subcommand name; positionals are collected in order.
 */
static void
parse_sub(int argc, char *argv[])
{
	unsigned long long	 v;
	int			 ch, npos = 0;

	optind = 0;	/* 0: re-read the optstring flags */
	while ((ch = getopt_long(argc, argv, sub_optstring, longopts, NULL))
	    != -1) {
		switch (ch) {
		case 1:
			argv[npos++] = optarg;
			break;
		case 'a':
			O.agent = optarg;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		case 't':	/* wait -t SECONDS, as before -t meant --tty */
		case OPT_TIMEOUT:
			O.timeout_arg = optarg;
			break;
		case OPT_TAIL:
			if (sbx_parse_uint(optarg, 10000, &v) == -1)
				usage();
			O.tail_lines = (int)v;
			break;
		case OPT_FORCE:
			O.force = 1;
			break;
		case 'j':
			O.json = 1;
			break;
		case 'q':
			O.quiet = 1;
			break;
		case 'v':
			O.verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		default:
			usage_getopt(argc, argv, sub_optstring);
		}
	}
	while (optind < argc)
		argv[npos++] = argv[optind++];
	O.argv = argv;
	O.argc = npos;
}

static void
parse_args(int argc, char *argv[])
{
	struct sbx_error	 e;
	unsigned long long	 v;
	const char		*a;
	int			 ch, dashdash;

	O.tail_lines = 20;
	O.max_output = 1 << 20;
	O.network = SBX_NET_NONE;
	/* Before getopt: where --json stands never changes how a usage
	 * error is reported; the command's argv after `--` never counts. */
	O.json = sbx_cli_wants_json(argc, argv, exec_optstring, longopts,
	    exec_subs);
	opterr = 0;
	while ((ch = getopt_long(argc, argv, exec_optstring, longopts,
	    NULL)) != -1) {
		switch (ch) {
		case 'a':
			O.agent = optarg;
			break;
		case OPT_HOME:
			O.home = optarg;
			break;
		case 'C':
			O.cwd = optarg;
			break;
		case 'w':
			O.workdir = optarg;
			break;
		case OPT_WORKDIR_FOLLOW:
			O.workdir_follow = 1;
			break;
		case 'e':
			if (sbx_strv_push(&O.env, optarg) == -1)
				exit(SBX_EX_OSERR);
			break;
		case OPT_TIMEOUT:
			O.timeout_arg = optarg;
			break;
		case 't':
		case OPT_TTY:
			O.tty = 1;
			break;
		case 'n':
			O.network = optarg;
			O.network_set = 1;
			break;
		case OPT_ALLOW:
			sbx_strv_push(&O.allow, optarg);
			break;
		case 'c':
			O.shell = optarg;
			break;
		case OPT_MAX_OUTPUT:
			if (sbx_parse_bytes(optarg, &v) == -1 || v < 64 ||
			    v > (1ULL << 30)) {
				sbx_error_set(&e, SBX_K_INVALID_ARGS,
				    "max_output", "out_of_range", "argument "
				    "`max-output` must be a byte count from 64 "
				    "to 1G");
				fail(&e, SBX_EX_FAILED);
			}
			O.max_output = (size_t)v;
			break;
		case 'b':
			O.background = 1;
			break;
		case OPT_TAIL:
			if (sbx_parse_uint(optarg, 10000, &v) == -1) {
				sbx_error_set(&e, SBX_K_INVALID_ARGS,
				    "tail_lines", "out_of_range", "argument "
				    "`tail-lines` must be an integer from 0 to "
				    "10000");
				fail(&e, SBX_EX_FAILED);
			}
			O.tail_lines = (int)v;
			break;
		case OPT_FORCE:
			O.force = 1;
			break;
		case 'j':
			O.json = 1;
			break;
		case 'q':
			O.quiet = 1;
			break;
		case 'v':
			O.verbose = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			fputs(help_text, stdout);
			exit(0);
		case OPT_VERSION:
			printf("sbx-exec %s\n", SBX_VERSION);
			exit(0);
		case OPT_MEMORY: case OPT_CPUS: case OPT_PIDS: case OPT_DISK:
		case OPT_WALL: case OPT_NOFILE: case OPT_FSIZE:
			sbx_strv_push(&O.limit_keys,
			    ch == OPT_MEMORY ? "memory_mib" :
			    ch == OPT_CPUS ? "cpus" : ch == OPT_PIDS ? "pids" :
			    ch == OPT_DISK ? "disk_mib" :
			    ch == OPT_WALL ? "wall_timeout" :
			    ch == OPT_NOFILE ? "nofile" : "file_size_mib");
			sbx_strv_push(&O.limit_keys, optarg);
			break;
		case OPT_SOFT:
			O.soft_limits = 1;
			break;
		case OPT_STDIN:
			if (strcmp(optarg, "inherit") == 0)
				O.stdin_mode = STDIN_INHERIT;
			else if (strcmp(optarg, "null") == 0)
				O.stdin_mode = STDIN_NULL;
			else {
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "stdin",
				    "invalid_mode", "argument `stdin` must be "
				    "inherit or null");
				fail(&e, SBX_EX_FAILED);
			}
			break;
		case OPT_SECCOMP:
			if (strcmp(optarg, "on") == 0)
				O.seccomp_off = 0;
			else if (strcmp(optarg, "off") == 0)
				O.seccomp_off = 1;
			else {
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "seccomp",
				    "invalid_mode", "argument `seccomp` must be "
				    "on or off");
				fail(&e, SBX_EX_FAILED);
			}
			break;
		default:
			usage_getopt(argc, argv, exec_optstring);
		}
	}
	dashdash = optind > 1 && strcmp(argv[optind - 1], "--") == 0;
	O.argv = argv + optind;
	O.argc = argc - optind;
	/* A terminal is a session for a person: it has no place in an
	 * envelope, nor in a detached job nobody is attached to. */
	if (O.tty && (O.json || O.background)) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "tty", O.json ?
		    "tty_with_json" : "tty_with_background", "-t/--tty cannot "
		    "be used with %s", O.json ? "--json (or SBX_JSON=1): a "
		    "terminal's output is a session, not an envelope" :
		    "--background: a detached job has nobody at a terminal");
		usage_err(&e);
	}
	/*
	 * -c STRING [NAME [ARG...]] is sh -c: what follows the string is $0
	 * and the arguments.  A `--` there would be taken for a command by
	 * some and for $0 by others (sh -c 'echo $1' -- x prints x): it is
	 * refused, so that nobody's guess is silently wrong.
	 */
	if (O.shell != NULL && dashdash) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command",
		    "dashdash_with_c", "-c takes the script and then $0 and "
		    "arguments, without --: sbx exec -c 'SCRIPT' NAME ARG...");
		usage_err(&e);
	}
	if (O.shell != NULL)
		return;
	/* A subcommand only when it is not after `--`: `sbx exec -- ps`
	 * runs ps in the sandbox. */
	if (!dashdash && O.argc > 0) {
		a = O.argv[0];
		if (strcmp(a, "ps") == 0 || strcmp(a, "poll") == 0 ||
		    strcmp(a, "wait") == 0 || strcmp(a, "kill") == 0 ||
		    strcmp(a, "gc") == 0) {
			O.sub = a;
			parse_sub(O.argc, O.argv);
			return;
		}
	}
	if (O.argc > 0 && !dashdash) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command",
		    "unexpected_argument", "put `--` before the command: sbx "
		    "exec -- %s ...", O.argv[0]);
		usage_err(&e);
	}
}

/* Everything a run needs, validated and opened. */
struct prep {
	struct sbx_root		 root;
	struct sbx_sandbox	 sb;
	struct sbx_strv		 bwrap_argv;
	char			*bwrap;
	char			*init;
	char			 home[PATH_MAX];
	char			*workdir;	/* canonical */
	int			 workdir_tree;	/* its private copy, or -1 */
	char			*workdir_mnt;	/* where the copy goes */
	struct stat		 workdir_mnt_st;
	const char		*workdir_resolved; /* = workdir, when asked
						 * to follow symlinks */
	char			 cwd[PATH_MAX];
	int			 home_fd, output_fd, workdir_fd;
	int			 env_fd, passwd_fd, group_fd, hosts_fd;
	int			 seccomp_fd, cache_fd, init_fd;
	int			 drop_privs;	/* sbx is root: run as run_uid */
	uid_t			 run_uid;
	gid_t			 run_gid;
	struct sbx_runlimits	 lim;
	unsigned long long	 log_cap;	/* a job's log, bytes */
	json_t			*agent_cfg;	/* config/agents/A.json, or
						 * NULL: read once a run */
	char			 agent_rel[128];
	int			 proxy_ctl, proxy_chan;
	char			 proxy_token[SBX_TOKEN_LEN + 1];
	json_t			*violations;	/* proxy mode, after the run */
	struct sbx_cgroup	 cg;
	char			*cg_v2root;	/* cgroup_v2_root, or NULL */
	json_t			*limits;	/* what is enforced, and how */
	json_t			*warnings;
};

static void
warn_add(struct prep *p, const char *msg)
{
	json_array_append_new(p->warnings, json_string(msg));
}

static int
is_system_dir(const char *path)
{
	static const char *const exact[] = {
		"/", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
		"/usr", "/var", "/home", "/opt", "/srv", "/mnt", "/media",
		"/tmp", "/var/tmp",
	};
	/* Binding these, or anything inside them, read-write would let
	 * the sandbox change the host's configuration or kernel state. */
	static const char *const inside[] = {
		"/proc", "/sys", "/dev", "/etc", "/boot", "/run",
		"/usr", "/var/lib", "/var/run", "/var/log", "/var/cache",
		"/var/spool", "/var/mail", "/bin", "/sbin", "/lib", "/lib64",
	};
	size_t	 i, n;

	for (i = 0; i < sizeof(exact) / sizeof(*exact); i++)
		if (strcmp(path, exact[i]) == 0)
			return 1;
	for (i = 0; i < sizeof(inside) / sizeof(*inside); i++) {
		n = strlen(inside[i]);
		if (strncmp(path, inside[i], n) == 0 &&
		    (path[n] == '\0' || path[n] == '/'))
			return 1;
	}
	return 0;
}

/*
 * Each directory of the --workdir walk, from / down to the workdir itself:
 * none may be an sbx state root.  Binding one, or anything inside one,
 * would hand the sandbox that root's tokens, agent settings, other agents'
 * homes and the seccomp programs cached for every later run.
 */
static int
workdir_visit(int dirfd, const char *path, void *arg, struct sbx_error *e)
{
	struct stat	 st;

	switch (sbx_root_is_state_root(dirfd)) {
	case 0:
		return 0;
	case -1:
		/* Someone else's directory we cannot look into is as closed
		 * to the sandbox (it runs as us, or unprivileged); the walk
		 * stops there, or the checks below refuse it. */
		if (errno == EACCES && fstat(dirfd, &st) == 0 &&
		    st.st_uid != geteuid())
			return 0;
		sbx_error_set(e, SBX_K_REJECTED, "workdir",
		    "state_root_unchecked", "refusing to bind %s: cannot tell "
		    "whether %s is an sbx state root: %s", (const char *)arg,
		    path, strerror(errno));
		break;
	case 1:
		sbx_error_set(e, SBX_K_REJECTED, "workdir", "state_root",
		    "refusing to bind %s: %s is an sbx state root",
		    (const char *)arg, path);
		break;
	}
	sbx_error_hint(e, "keep state roots out of directories given to "
	    "--workdir, and bind a project directory beside them");
	return -1;
}

/*
 * The caller's home, from $HOME and from the password file (either may be
 * what the caller thinks of as home): neither it nor an ancestor may be
 * bound, and nothing under a dot-directory of it (~/.ssh, ~/.config,
 * ~/.local/bin, ~/.gnupg...): that is where the caller's keys, shell and
 * editor start-up files and the programs on its PATH live.
 */
static void
check_home(const char *canon, const char *home, const char *user)
{
	struct sbx_error	 e;
	char			 hc[PATH_MAX];
	size_t			 n;

	if (home == NULL || *home != '/' || realpath(home, hc) == NULL)
		return;
	if (sbx_path_overlaps(canon, hc) && strlen(canon) <= strlen(hc)) {
		sbx_error_set(&e, SBX_K_REJECTED, "workdir", "home_directory",
		    "refusing to bind %s: it is %s%s%s home directory or "
		    "contains it", canon, user ? "the user " : "your",
		    user ? user : "", user ? "'s" : "");
		sbx_error_hint(&e, "bind a project directory inside it instead");
		fail(&e, SBX_EX_FAILED);
	}
	n = strlen(hc);
	if (strcmp(hc, "/") != 0 && strncmp(canon, hc, n) == 0 &&
	    canon[n] == '/' && canon[n + 1] == '.') {
		sbx_error_set(&e, SBX_K_REJECTED, "workdir", "home_dotdir",
		    "refusing to bind %s: it is in %.*s, a hidden directory of "
		    "%s%s%s home, where keys, settings and start-up files live",
		    canon, (int)(n + 1 + strcspn(canon + n + 1, "/")), canon,
		    user ? "the user " : "your", user ? user : "",
		    user ? "'s" : "");
		sbx_error_hint(&e, "bind a project directory instead");
		fail(&e, SBX_EX_FAILED);
	}
}

/*
 * Every person's home is as much off limits as the caller's own: root
 * could otherwise bind /home/alice (and her ~/.ssh) into a sandbox.  Root
 * and the ordinary uids are people; system accounts' homes are service
 * directories (the system ones among them are refused as such).
 */
static int
other_home(const char *name, uid_t uid, const char *home, void *arg)
{
	if ((uid == 0 || uid >= 1000) && uid != 65534 && uid != getuid())
		check_home(arg, home, name);
	return 0;
}

/*
 * Can uid/gid (no supplementary groups: lib/run.c drops them) search the
 * directory st, or, with w, write to it?
 */
static int
id_may(const struct stat *st, uid_t uid, gid_t gid, int w)
{
	mode_t	 m = w ? S_IWUSR | S_IXUSR : S_IXUSR;

	if (st->st_uid == uid)
		return (st->st_mode & m) == m;
	if (st->st_gid == gid)
		return (st->st_mode & (m >> 3)) == (m >> 3);
	return (st->st_mode & (m >> 6)) == (m >> 6);
}

/* Can uid/gid walk from / down to path (every ancestor searchable)? */
static int
id_can_reach(const char *path, uid_t uid, gid_t gid)
{
	struct stat	 st;
	char		 buf[PATH_MAX], *s;

	snprintf(buf, sizeof(buf), "%s", path);
	while ((s = strrchr(buf, '/')) != NULL) {
		s[s == buf ? 1 : 0] = '\0';
		if (stat(buf, &st) == -1 || !id_may(&st, uid, gid, 0))
			return 0;
		if (s == buf)
			break;
	}
	return 1;
}

/*
 * Root's sandbox runs as run_uid.  A workdir that uid cannot write (a
 * root-owned checkout: every CI job in a container) or cannot reach (one
 * under /root, 0700: bwrap resolves bind sources by path, as that uid) is
 * handed over as a private copy of its mount (lib/idmount.c): idmapped so
 * that its owner's files are run_uid's inside and what the sandbox creates
 * is its owner's on disk, and attached at the state root's run/workdir,
 * which the sandbox's uid can reach, in a mount namespace of the run's own
 * (cg_enter_hook).  Where the filesystem cannot idmap, the run is refused
 * now, with the fix, rather than failing half-way through a build.
 */
static void
workdir_copy(struct prep *p, const struct stat *st)
{
	struct sbx_error	 e;
	int			 idmap, fd;

	idmap = !id_may(st, p->run_uid, p->run_gid, 1) &&
	    (st->st_mode & S_IWUSR);
	if (!idmap && id_can_reach(p->workdir, p->run_uid, p->run_gid))
		return;
	p->workdir_tree = sbx_idmount_clone(p->workdir_fd, idmap, st->st_uid,
	    st->st_gid, p->run_uid, p->run_gid, &e);
	if (p->workdir_tree == -1) {
		if (e.reason == NULL || strcmp(e.reason, "idmap_unsupported"))
			fail(&e, SBX_EX_FAILED);
		sbx_error_set(&e, SBX_K_REJECTED, "workdir",
		    "workdir_not_writable", "sbx runs as root, so the sandbox "
		    "runs as uid %u, which cannot write to %s (owned by uid "
		    "%u), and its filesystem cannot map the owner onto the "
		    "sandbox's uid (idmapped mount: %s)", (unsigned)p->run_uid,
		    p->workdir, (unsigned)st->st_uid, strerror(e.sys_errno));
		if (st->st_uid != 0)
			sbx_error_hint(&e, "chown -R %u:%u %s, or set \"run_as\" "
			    "in %s/config/sandbox.json to its owner (uid %u)",
			    (unsigned)p->run_uid, (unsigned)p->run_gid,
			    p->workdir, p->root.path, (unsigned)st->st_uid);
		else
			sbx_error_hint(&e, "chown -R %u:%u %s, or use a "
			    "directory on a filesystem with idmapped mounts "
			    "(ext4, xfs, btrfs, tmpfs; Linux 5.12 or later)",
			    (unsigned)p->run_uid, (unsigned)p->run_gid,
			    p->workdir);
		fail(&e, SBX_EX_FAILED);
	}
	/* The mount point: a directory of the state root's that nothing
	 * else uses, empty on the host, 0711 like run/ itself. */
	if ((fd = sbx_mkdirs_at(p->root.fd, "run/workdir", 0711, &e)) == -1)
		fail(&e, SBX_EX_FAILED);
	if (fstat(fd, &p->workdir_mnt_st) == -1 ||
	    asprintf(&p->workdir_mnt, "%s/run/workdir", p->root.path) == -1) {
		sbx_error_sys(&e, "workdir_mount_point", "%s/run/workdir",
		    p->root.path);
		fail(&e, SBX_EX_FAILED);
	}
	(void)fchmod(fd, 0711);
	close(fd);
}

static void
prep_workdir(struct prep *p)
{
	struct sbx_error	 e;
	char			 abspath[PATH_MAX], canon[PATH_MAX];
	char			 check[PATH_MAX], lnk[64], below[PATH_MAX];
	char			 msg[sizeof(e.message)], *pwhome;
	struct stat		 st;
	ssize_t			 n;
	int			 r;

	if (sbx_path_check(O.workdir, "workdir", &e) == -1)
		fail(&e, SBX_EX_FAILED);
	/*
	 * What to walk.  By default the argument itself, made absolute
	 * against getcwd(3): the physical current directory, free of
	 * symlinks, so that the caller's own way into its cwd (a logical
	 * $PWD through a link) does not count, while every symlink in the
	 * argument does: an earlier sandbox that could write to a parent
	 * may have planted it (proj/build -> ../.ssh).  Only
	 * --workdir-follow-symlinks resolves links, and says where to.
	 */
	if (O.workdir_follow) {
		if (realpath(O.workdir, abspath) == NULL) {
			if (errno == ENOENT)
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "workdir",
				    "not_found", "argument `workdir`: %s does "
				    "not exist", O.workdir);
			else
				sbx_error_set(&e, SBX_K_INVALID_ARGS, "workdir",
				    "unusable", "argument `workdir`: %s: %s",
				    O.workdir, strerror(errno));
			fail(&e, SBX_EX_FAILED);
		}
	} else if (O.workdir[0] == '/')
		snprintf(abspath, sizeof(abspath), "%s", O.workdir);
	else if (getcwd(check, sizeof(check)) == NULL ||
	    (size_t)snprintf(abspath, sizeof(abspath), "%s/%s", check,
	    O.workdir) >= sizeof(abspath)) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "workdir", "unusable",
		    "argument `workdir`: %s: cannot make it absolute: %s",
		    O.workdir, errno == 0 ? "too long" : strerror(errno));
		fail(&e, SBX_EX_FAILED);
	}
	/* One component at a time from /, no link followed, each directory
	 * on the way checked for a state root (workdir_visit). */
	p->workdir_fd = sbx_fs_resolve_nofollow(abspath, canon, sizeof(canon),
	    workdir_visit, (void *)O.workdir, &e);
	if (p->workdir_fd == -1) {
		if (e.field == NULL || strcmp(e.field, "workdir") != 0) {
			snprintf(msg, sizeof(msg), "%s", e.message);
			e.field = "workdir";
			snprintf(e.message, sizeof(e.message), "argument "
			    "`workdir` rejected: %.*s",
			    (int)(sizeof(e.message) - 32), msg);
		}
		if (e.reason != NULL && strcmp(e.reason, "symlink") == 0)
			sbx_error_hint(&e, "give the directory's real path, or "
			    "--workdir-follow-symlinks after checking where the "
			    "link leads");
		fail(&e, SBX_EX_FAILED);
	}
	if (is_system_dir(canon)) {
		sbx_error_set(&e, SBX_K_REJECTED, "workdir", "system_directory",
		    "refusing to bind %s read-write: it is the root or a system "
		    "directory", canon);
		fail(&e, SBX_EX_FAILED);
	}
	check_home(canon, getenv("HOME"), NULL);
	if ((pwhome = sbx_user_home(getuid())) != NULL) {
		check_home(canon, pwhome, NULL);
		free(pwhome);
	}
	(void)sbx_user_each(other_home, canon);
	/* The state root in use, even when it was never marked. */
	if (realpath(p->root.path, check) != NULL &&
	    sbx_path_overlaps(canon, check)) {
		sbx_error_set(&e, SBX_K_REJECTED, "workdir", "state_root",
		    "refusing to bind %s: it overlaps the sbx state root %s",
		    canon, check);
		fail(&e, SBX_EX_FAILED);
	}
	/*
	 * Any other state root below it (the walk checked those above).
	 * The whole tree cannot be walked on every run: look a bounded
	 * number of levels down, and refuse when even that is too large to
	 * look through, rather than guess.
	 */
	r = sbx_root_find_below(p->workdir_fd, SBX_ROOT_SCAN_DEPTH,
	    SBX_ROOT_SCAN_BUDGET, below, sizeof(below), &e);
	if (r != 0) {
		if (r == 1)
			sbx_error_set(&e, SBX_K_REJECTED, "workdir",
			    "state_root", "refusing to bind %s: it contains the "
			    "sbx state root %s/%s", canon, canon, below);
		else {
			snprintf(msg, sizeof(msg), "%s", e.message);
			sbx_error_set(&e, SBX_K_REJECTED, "workdir",
			    "state_root_unchecked", "refusing to bind %s: %s "
			    "(sbx looks %d levels down, through at most %d "
			    "directories)", canon, msg, SBX_ROOT_SCAN_DEPTH,
			    SBX_ROOT_SCAN_BUDGET);
		}
		sbx_error_hint(&e, "bind a smaller directory that holds no "
		    "state root");
		fail(&e, SBX_EX_FAILED);
	}
	/* The descriptor must name the directory we walked, even if a
	 * component was renamed in between. */
	snprintf(lnk, sizeof(lnk), "/proc/self/fd/%d", p->workdir_fd);
	n = readlink(lnk, check, sizeof(check) - 1);
	if (n <= 0 || (check[n] = '\0', strcmp(check, canon) != 0) ||
	    fstat(p->workdir_fd, &st) == -1) {
		sbx_error_set(&e, SBX_K_REJECTED, "workdir", "path_changed",
		    "argument `workdir`: %s changed while it was checked",
		    canon);
		fail(&e, SBX_EX_FAILED);
	}
	/* What sbx-init compares the mount with, inside. */
	p->sb.workdir_dev = (unsigned long long)st.st_dev;
	p->sb.workdir_ino = (unsigned long long)st.st_ino;
	if ((p->workdir = strdup(canon)) == NULL)
		exit(SBX_EX_OSERR);
	if (O.workdir_follow) {
		p->workdir_resolved = p->workdir;
		if (!O.quiet)
			fprintf(stderr, "sbx: --workdir %s resolves to %s\n",
			    O.workdir, canon);
	}
	if (p->drop_privs)
		workdir_copy(p, &st);
	if (p->drop_privs && p->workdir_tree == -1 &&
	    !id_may(&st, p->run_uid, p->run_gid, 1)) {
		char	 w[PATH_MAX + 128];

		/* Read-only to its owner too: nothing to map. */
		snprintf(w, sizeof(w), "sbx runs as root, so the sandbox runs "
		    "as uid %u, which cannot write to %s", (unsigned)p->run_uid,
		    canon);
		warn_add(p, w);
	}
}

/* Validate --cwd against HOME (or the workdir) and check it exists there,
 * without following symlinks out. */
static void
prep_cwd(struct prep *p)
{
	struct sbx_error	 e;
	const char		*base = NULL, *rel = NULL;
	int			 basefd = -1, fd;
	size_t			 n;

	if (O.cwd == NULL) {
		snprintf(p->cwd, sizeof(p->cwd), "%s",
		    p->workdir ? p->workdir : p->home);
		return;
	}
	if (sbx_path_check(O.cwd, "cwd", &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if (O.cwd[0] != '/') {
		if ((size_t)snprintf(p->cwd, sizeof(p->cwd), "%s/%s", p->home,
		    O.cwd) >= sizeof(p->cwd)) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "cwd",
			    "too_long", "argument `cwd` is too long");
			fail(&e, SBX_EX_FAILED);
		}
	} else
		snprintf(p->cwd, sizeof(p->cwd), "%s", O.cwd);
	n = strlen(p->home);
	if (strncmp(p->cwd, p->home, n) == 0 &&
	    (p->cwd[n] == '\0' || p->cwd[n] == '/')) {
		base = p->home;
		basefd = p->home_fd;
		rel = p->cwd + n;
	} else if (p->workdir != NULL && (n = strlen(p->workdir),
	    strncmp(p->cwd, p->workdir, n) == 0) &&
	    (p->cwd[n] == '\0' || p->cwd[n] == '/')) {
		base = p->workdir;
		basefd = p->workdir_fd;
		rel = p->cwd + n;
	}
	if (base == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "cwd", "outside_home",
		    "argument `cwd` rejected: %s is outside %s%s%s", O.cwd,
		    p->home, p->workdir ? " and " : "",
		    p->workdir ? p->workdir : "");
		fail(&e, SBX_EX_FAILED);
	}
	while (*rel == '/')
		rel++;
	if (*rel == '\0')
		return;
	fd = sbx_open_beneath(basefd, rel, O_PATH | O_DIRECTORY, &e);
	if (fd == -1) {
		e.kind = SBX_K_INVALID_ARGS;
		e.retryable = 0;
		e.field = "cwd";
		if (e.reason && strcmp(e.reason, "not_found") == 0)
			e.reason = "not_found";
		else if (e.reason && strcmp(e.reason, "symlink_in_path") == 0)
			e.reason = "symlink";
		snprintf(e.message, sizeof(e.message), "argument `cwd` "
		    "rejected: %s is not a directory inside %s (missing, or "
		    "reached through a symlink)", O.cwd, base);
		fail(&e, SBX_EX_FAILED);
	}
	close(fd);
}

static int
env_find(struct sbx_strv *env, const char *assign)
{
	size_t	 i, n = strcspn(assign, "=");

	for (i = 0; i < env->n; i++)
		if (strncmp(env->v[i], assign, n) == 0 && env->v[i][n] == '=')
			return (int)i;
	return -1;
}

static int
safe_value(const char *v)
{
	for (; *v; v++)
		if (!((*v >= 'a' && *v <= 'z') || (*v >= 'A' && *v <= 'Z') ||
		    (*v >= '0' && *v <= '9') || strchr("._-+@", *v)))
			return 0;
	return 1;
}

static int
prep_env(struct prep *p)
{
	struct sbx_strv	 env = SBX_STRV_INIT;
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*v;
	size_t		 i;
	int		 k, fd;

	/* The fixed allowlist; nothing else of the caller's environment
	 * reaches the sandbox. */
	sbx_strv_pushf(&env, "PATH=%s", SBX_SANDBOX_PATH);
	sbx_strv_pushf(&env, "HOME=%s", p->home);
	sbx_strv_pushf(&env, "USER=%s", p->sb.agent);
	sbx_strv_pushf(&env, "LOGNAME=%s", p->sb.agent);
	v = getenv("LANG");
	sbx_strv_pushf(&env, "LANG=%s", v && *v && strlen(v) < 64 &&
	    safe_value(v) ? v : "C.UTF-8");
	v = getenv("TERM");
	if (v && *v && strlen(v) < 64 && safe_value(v))
		sbx_strv_pushf(&env, "TERM=%s", v);
	/*
	 * Without a terminal, Python holds its output in a block buffer, so
	 * a script that prints every second looks silent to --timeout and
	 * to whoever watches the stream.  Unbuffered, as it would be on a
	 * terminal; --env PYTHONUNBUFFERED= turns it off.
	 */
	sbx_strv_push(&env, "PYTHONUNBUFFERED=1");
	/*
	 * The sandbox trusts what the host (or the image) trusts: node,
	 * python's requests and OpenSSL are pointed at the system bundle,
	 * which they would otherwise ignore for a store of their own.  Set
	 * before --env, which may override them.
	 */
	if ((v = sbx_sandbox_ca_bundle(&p->sb)) != NULL) {
		sbx_strv_pushf(&env, "SSL_CERT_FILE=%s", v);
		sbx_strv_pushf(&env, "NODE_EXTRA_CA_CERTS=%s", v);
		sbx_strv_pushf(&env, "REQUESTS_CA_BUNDLE=%s", v);
	}
	if (strcmp(O.network, SBX_NET_PROXY) == 0) {
		/* The relay of sbx-init listens here; the token names the
		 * agent to the proxy.  Set before --env so that a caller
		 * can still override them (it only hurts itself). */
		static const char *const names[] = { "HTTP_PROXY",
		    "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY",
		    "all_proxy" };

		for (k = 0; k < (int)(sizeof(names) / sizeof(names[0])); k++)
			sbx_strv_pushf(&env, "%s=http://%s:%s@127.0.0.1:%d",
			    names[k], p->sb.agent, p->proxy_token,
			    SBX_PROXY_PORT);
		sbx_strv_push(&env, "NO_PROXY=localhost,127.0.0.1,::1");
		sbx_strv_push(&env, "no_proxy=localhost,127.0.0.1,::1");
	}
	for (i = 0; i < O.env.n; i++) {
		if ((k = env_find(&env, O.env.v[i])) >= 0) {
			free(env.v[k]);
			env.v[k] = strdup(O.env.v[i]);
		} else
			sbx_strv_push(&env, O.env.v[i]);
	}
	for (i = 0; i < env.n; i++)
		sbx_buf_append(&b, env.v[i], strlen(env.v[i]) + 1);
	fd = sbx_memfd_data("sbx-env", b.p ? b.p : "", b.len);
	sbx_buf_release(&b);
	sbx_strv_release(&env);
	return fd;
}

static int
etc_fd(const char *name, struct sbx_buf *b)
{
	int	 fd = sbx_memfd_data(name, b->p ? b->p : "", b->len);

	sbx_buf_release(b);
	return fd;
}

/* Does bwrap know --disable-userns?  A yes is asked once per bwrap
 * binary and remembered under cache/, keyed by its inode and mtime. */
static int
bwrap_has_disable_userns(struct prep *p)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 name[128], out[16384];
	int			 cfd, fd, pfd[2], status, yes = 0;
	size_t			 len = 0;
	ssize_t			 n;
	pid_t			 pid;

	if (stat(p->bwrap, &st) == -1)
		return 0;
	snprintf(name, sizeof(name), "bwrap-%llu-%lld-%lld.features",
	    (unsigned long long)st.st_ino, (long long)st.st_mtime,
	    (long long)st.st_size);
	cfd = p->cache_fd;
	/*
	 * Only a yes is taken from the cache.  The state root may be within
	 * a sandbox's reach (a --workdir holding it), and a planted no would
	 * drop --disable-userns; a planted yes can only add the option,
	 * which a bwrap without it refuses, so the run fails closed.  A no
	 * is asked again, and never written.  O_NONBLOCK: a FIFO planted at
	 * the name cannot make us wait.
	 */
	if (cfd >= 0 && (fd = openat(cfd, name, O_RDONLY | O_NOFOLLOW |
	    O_CLOEXEC | O_NONBLOCK)) >= 0) {
		n = read(fd, out, sizeof(out) - 1);
		close(fd);
		if (n > 0 && out[0] == '1')
			return 1;
	}
	if (pipe2(pfd, O_CLOEXEC) == -1)
		goto done;
	if ((pid = fork()) == 0) {
		dup2(pfd[1], 1);
		execve(p->bwrap, (char *[]){ p->bwrap, "--help", NULL },
		    (char *[]){ NULL });
		_exit(127);
	}
	close(pfd[1]);
	while (len < sizeof(out) - 1 &&
	    (n = read(pfd[0], out + len, sizeof(out) - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(pfd[0]);
	if (pid > 0)
		waitpid(pid, &status, 0);
	yes = strstr(out, "--disable-userns") != NULL;
	if (cfd >= 0 && yes)
		(void)sbx_write_atomic(cfd, name, "1\n", 2, 0600,
		    &e);
done:
	return yes;
}

/* Whole numbers as integers, so that 0 prints as 0, not 0.0. */
static json_t *
number(double d)
{
	if (d == (double)(json_int_t)d)
		return json_integer((json_int_t)d);
	return json_real(d);
}

static const char *
limit_backend_of(unsigned bit, struct prep *p)
{
	unsigned	 cgbit = bit == SBX_RL_MEMORY ? SBX_LIM_MEMORY :
			    bit == SBX_RL_CPUS ? SBX_LIM_CPUS : SBX_LIM_PIDS;

	if (p->cg.backend != SBX_CG_NONE && (p->cg.enforced & cgbit))
		return sbx_cgroup_backend_name(p->cg.backend);
	return "none";
}

/* Run-engine hooks: join the cgroup in the child, kill it at once. */
static int
cg_enter_hook(void *arg)
{
	struct prep	*p = arg;

	/* The workdir's private copy, while still root (see workdir_copy). */
	if (p->workdir_tree >= 0 && sbx_idmount_attach(p->workdir_tree,
	    p->workdir_mnt, p->workdir_mnt_st.st_dev,
	    p->workdir_mnt_st.st_ino) == -1) {
		fprintf(stderr, "sbx: cannot attach the copy of the workdir at "
		    "%s: %s\n", p->workdir_mnt, strerror(errno));
		return -1;
	}
	if (p->cg.backend == SBX_CG_NONE)
		return 0;
	return sbx_cgroup_enter(&p->cg) == -1 ? -1 : 0;
}

static void
cg_kill_hook(void *arg)
{
	struct prep	*p = arg;

	if (p->cg.backend != SBX_CG_NONE)
		(void)sbx_cgroup_kill(&p->cg);
}

/* Create this run's cgroup with the memory, cpu and task limits. */
static void
prep_cgroup(struct prep *p, const char *v2root)
{
	struct sbx_error	 e;
	struct sbx_limits	 l;
	char			 name[SBX_CG_NAME_MAX];

	memset(&l, 0, sizeof(l));
	if (p->lim.memory_mib) {
		l.memory_bytes = p->lim.memory_mib << 20;
		l.wanted |= SBX_LIM_MEMORY;
	}
	if (p->lim.cpus > 0) {
		l.cpus = p->lim.cpus;
		l.wanted |= SBX_LIM_CPUS;
	}
	if (p->lim.pids) {
		l.pids = p->lim.pids;
		l.wanted |= SBX_LIM_PIDS;
	}
	if (l.wanted == 0)
		return;
	/* A supervisor killed with -9 leaves its cgroup behind; the next
	 * run reaps such leftovers (cheap: one directory read each). */
	(void)sbx_cgroup_gc(&e);
	if (sbx_cgroup_name(name, sizeof(name)) == -1) {
		sbx_error_sys(&e, "cgroup_failed", "naming the run's cgroup");
		fail(&e, SBX_EX_FAILED);
	}
	if (sbx_cgroup_create_at(v2root, NULL, name, &l, &p->cg, &e) == -1)
		fail(&e, SBX_EX_FAILED);
}

/*
 * Limits: defaults (pids, memory), then config/sandbox.json, then the
 * agent's config and the flags, which count as asked for.  What a cgroup
 * cannot hold is refused when it was asked for, unless --soft-limits
 * accepts what rlimits can do; defaults go ahead with a warning.
 */
static void
prep_limits(struct prep *p)
{
	struct sbx_error	 e;
	json_t			*cfg, *enf, *v;
	size_t			 i;
	unsigned		 unenforced = 0;
	char			*v2root = NULL;
	static const struct { unsigned bit; const char *name; } cg[] = {
		{ SBX_RL_MEMORY, "memory" }, { SBX_RL_CPUS, "cpus" },
		{ SBX_RL_PIDS, "pids" },
	};

	sbx_limits_defaults(&p->lim);
	if (sbx_config_load(p->root.fd, "config/sandbox.json", &cfg, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if (cfg != NULL && sbx_limits_merge_json(&p->lim, json_object_get(cfg,
	    "limits"), 0, "config/sandbox.json", &e) == -1)
		fail(&e, SBX_EX_FAILED);
	v = cfg ? json_object_get(cfg, "cgroup_v2_root") : NULL;
	if (v != NULL && (!json_is_string(v) ||
	    json_string_value(v)[0] != '/')) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "cgroup_v2_root",
		    "config_invalid", "config/sandbox.json: cgroup_v2_root "
		    "must be an absolute path");
		fail(&e, SBX_EX_FAILED);
	}
	if (v != NULL)
		v2root = strdup(json_string_value(v));
	if (O.background && sbx_joblog_cap_config(cfg, &p->log_cap, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	json_decref(cfg);
	if (p->agent_cfg != NULL && sbx_limits_merge_json(&p->lim,
	    json_object_get(p->agent_cfg, "limits"), 1, p->agent_rel, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	for (i = 0; i + 1 < O.limit_keys.n; i += 2)
		if (sbx_limits_set(&p->lim, O.limit_keys.v[i],
		    O.limit_keys.v[i + 1], &e) == -1)
			fail(&e, SBX_EX_FAILED);
	p->lim.soft = O.soft_limits;
	p->cg_v2root = v2root;
	prep_cgroup(p, v2root);

	enf = json_object();
	for (i = 0; i < sizeof(cg) / sizeof(*cg); i++) {
		int want = (cg[i].bit == SBX_RL_MEMORY && p->lim.memory_mib) ||
		    (cg[i].bit == SBX_RL_CPUS && p->lim.cpus > 0) ||
		    (cg[i].bit == SBX_RL_PIDS && p->lim.pids);
		const char *how = limit_backend_of(cg[i].bit, p);
		if (!want)
			continue;
		if (strcmp(how, "none") == 0)
			unenforced |= cg[i].bit;
		json_object_set_new(enf, cg[i].name, json_string(how));
	}
	if ((unenforced & p->lim.explicit_mask) && !p->lim.soft) {
		json_decref(enf);
		unsigned m = unenforced & p->lim.explicit_mask;
		sbx_error_set(&e, SBX_K_REJECTED, "limits",
		    "resource_limits_unsupported", "the limits asked for "
		    "(%s%s%s%s%s) cannot be enforced here: no writable cgroup",
		    (m & SBX_RL_MEMORY) ? "memory" : "",
		    (m & SBX_RL_MEMORY) && (m & (SBX_RL_CPUS | SBX_RL_PIDS)) ?
		    ", " : "", (m & SBX_RL_CPUS) ? "cpus" : "",
		    (m & SBX_RL_CPUS) && (m & SBX_RL_PIDS) ? ", " : "",
		    (m & SBX_RL_PIDS) ? "pids" : "");
		sbx_error_hint(&e, "delegate a cgroup v2 subtree (systemd: "
		    "`systemd-run --user -p Delegate=yes --scope sbx exec ...`,"
		    " or name a prepared one as cgroup_v2_root in "
		    "config/sandbox.json), or accept rlimits with --soft-limits");
		fail(&e, SBX_EX_FAILED);
	}
	/*
	 * Said after every run's output, a note about the defaults would be
	 * noise a plain user can do nothing about: a person hears it only
	 * when a limit was asked for (sbx preflight reports the machine);
	 * the envelope keeps it, with `enforced` saying what holds.
	 */
	if ((unenforced & p->lim.explicit_mask) || (unenforced && O.json))
		warn_add(p, "no writable cgroup: memory, cpu and task limits "
		    "are not enforced by a cgroup (rlimits only)");
	/* rlimits: always available, inherited by bwrap and everything
	 * below it. */
	if (p->lim.nofile) {
		p->sb.rlimit[p->sb.nrlimit].name = "nofile";
		p->sb.rlimit[p->sb.nrlimit++].value = p->lim.nofile;
		json_object_set_new(enf, "nofile", json_string("rlimit"));
	}
	if (p->lim.file_size_mib || p->lim.disk_mib) {
		unsigned long long m = p->lim.file_size_mib;
		if (p->lim.disk_mib && (m == 0 || p->lim.disk_mib < m))
			m = p->lim.disk_mib;
		p->sb.rlimit[p->sb.nrlimit].name = "fsize";
		p->sb.rlimit[p->sb.nrlimit++].value = m << 20;
		json_object_set_new(enf, "file_size", json_string("rlimit"));
	}
	if ((unenforced & SBX_RL_MEMORY) && p->lim.soft &&
	    (p->lim.explicit_mask & SBX_RL_MEMORY)) {
		p->sb.rlimit[p->sb.nrlimit].name = "as";
		p->sb.rlimit[p->sb.nrlimit++].value = p->lim.memory_mib << 20;
		json_object_set_new(enf, "memory", json_string("rlimit"));
	}
	if (p->lim.disk_mib) {
		p->sb.tmp_size = p->lim.disk_mib << 20;
		/* /tmp is capped exactly; the home and /output only per
		 * file (RLIMIT_FSIZE): honestly soft. */
		json_object_set_new(enf, "disk", json_string("soft"));
	}
	if (p->lim.wall_timeout > 0)
		json_object_set_new(enf, "wall_timeout",
		    json_string("supervisor"));
	p->limits = json_pack("{s:s,s:I,s:o,s:I,s:I,s:o,s:I,s:I,s:o}",
	    "backend", sbx_cgroup_backend_name(p->cg.backend),
	    "memory_mib", (json_int_t)p->lim.memory_mib,
	    "cpus", number(p->lim.cpus),
	    "pids", (json_int_t)p->lim.pids,
	    "disk_mib", (json_int_t)p->lim.disk_mib,
	    "wall_timeout", number(p->lim.wall_timeout),
	    "nofile", (json_int_t)p->lim.nofile,
	    "file_size_mib", (json_int_t)p->lim.file_size_mib,
	    "enforced", enf);
}

/* Can anyone walk down to path and read it (every ancestor o+x)? */
static int
others_can_reach(const char *path)
{
	struct stat	 st;
	char		 buf[PATH_MAX], *s;

	if (stat(path, &st) == -1 || !(st.st_mode & S_IROTH) ||
	    !(st.st_mode & S_IXOTH))
		return 0;
	snprintf(buf, sizeof(buf), "%s", path);
	while ((s = strrchr(buf, '/')) != NULL && s != buf) {
		*s = '\0';
		if (stat(buf, &st) == -1 || !(st.st_mode & S_IXOTH))
			return 0;
	}
	return 1;
}

/*
 * As root, the sandbox's uid must be able to walk down to the homes:
 * bwrap resolves bind sources by path, as that uid.  Every ancestor of the
 * state root must let others search it, and the directories between the
 * root and the homes become 0711 (search, not list).
 */
static void
reachable_root(struct prep *p)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 path[PATH_MAX], *s;
	static const char *const inner[] = { "workspace", "workspace/agents",
	    "output" };
	size_t			 i;
	int			 fd;

	snprintf(path, sizeof(path), "%s", p->root.path);
	while ((s = strrchr(path, '/')) != NULL) {
		s[s == path ? 1 : 0] = '\0';
		if (stat(path, &st) == -1 || !(st.st_mode & S_IXOTH)) {
			sbx_error_set(&e, SBX_K_REJECTED, "home",
			    "state_root_unreachable", "sbx runs as root, so the "
			    "sandbox runs as uid %u, which cannot reach the "
			    "state root %s through %s", (unsigned)p->run_uid,
			    p->root.path, path);
			sbx_error_hint(&e, "use a state root under a searchable "
			    "directory (root's default is /var/lib/sbx)");
			fail(&e, SBX_EX_FAILED);
		}
		if (s == path)
			break;
	}
	(void)fchmod(p->root.fd, 0711);
	for (i = 0; i < sizeof(inner) / sizeof(*inner); i++) {
		if ((fd = sbx_mkdirs_at(p->root.fd, inner[i], 0711, &e)) == -1)
			fail(&e, SBX_EX_FAILED);
		(void)fchmod(fd, 0711);
		close(fd);
	}
}

/*
 * Who runs the sandbox.  A normal user: that user.  Root: never root (see
 * lib/run.c), but the uid/gid named by `run_as` in config/sandbox.json, or
 * the `sbx` system user when there is one, or nobody (65534).
 */
static void
prep_identity(struct prep *p)
{
	struct sbx_error	 e;

	if (sbx_provision_identity(p->root.fd, &p->run_uid, &p->run_gid,
	    &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if (geteuid() != 0)
		return;
	p->drop_privs = 1;
	/* Bind sbx-init by path when the sandbox uid can reach it (an
	 * installed sbx); copy it in otherwise (a checkout under /root). */
	p->sb.init_by_copy = !others_can_reach(p->init);
	reachable_root(p);
}

/* The sandbox's writable directories belong to the uid that runs it. */
static void
own_dir(struct prep *p, int fd, const char *rel)
{
	struct sbx_error	 e;
	struct stat		 st;

	if (!p->drop_privs || fstat(fd, &st) == -1)
		return;
	if (st.st_uid == p->run_uid && st.st_gid == p->run_gid)
		return;
	if (fchown(fd, p->run_uid, p->run_gid) == -1) {
		sbx_error_sys(&e, "chown_failed", "cannot hand %s to uid %u",
		    rel, (unsigned)p->run_uid);
		fail(&e, SBX_EX_FAILED);
	}
}

/*
 * Image mode, when the agent is bound to one (its record
 * agents/A/image.json, or an old config's `image`): its template must be there and complete (a cheap check, no
 * walk); a missing or damaged one refuses the run, never falls back to
 * the host's system directories.
 */
static void
prep_image(struct prep *p)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 digest[SBX_DIGEST_HEX + 1], msg[1600], *root;
	char			 reach[2][64];
	int			 r, fd, env, nreach, i;

	if ((r = sbx_imageref_of(p->root.fd, p->agent_cfg, p->agent_rel,
	    p->sb.agent, digest, &env, &e)) == -1)
		fail(&e, SBX_EX_FAILED);
	if (r == 0)
		return;
	/*
	 * The agent's own environment when it has one (`env`; mounted
	 * read-only all the same, as a template is).  One that is gone
	 * (evicted, reset) or was made from another image means the
	 * template, and a warning; one that is unsafe (a symlink planted on
	 * the way, damaged) refuses the run.  Opening it share-locks it
	 * for as long as this process lives: eviction passes it by.
	 */
	p->sb.image_fd = -1;
	if (env && (p->sb.image_fd = sbx_imageref_env_open(p->root.fd,
	    p->sb.agent, digest, &e)) == -1) {
		if (e.kind == NULL || strcmp(e.kind, SBX_K_NOT_FOUND) != 0)
			fail(&e, SBX_EX_FAILED);
		snprintf(msg, sizeof(msg), "%s; running on the image template "
		    "(%s)", e.message, e.hint);
		warn_add(p, msg);
	}
	if (p->sb.image_fd != -1) {
		r = asprintf(&root, "%s/envs/%s/rootfs", p->root.path,
		    p->sb.agent);
		snprintf(reach[0], sizeof(reach[0]), "envs");
		snprintf(reach[1], sizeof(reach[1]), "envs/%s", p->sb.agent);
		nreach = 2;
	} else {
		if ((p->sb.image_fd = sbx_imageref_open(p->root.fd, digest,
		    &e)) == -1)
			fail(&e, SBX_EX_FAILED);
		r = asprintf(&root, "%s/images/%s/rootfs", p->root.path,
		    digest);
		snprintf(reach[0], sizeof(reach[0]), "images");
		nreach = 1;
	}
	if (r == -1) {
		sbx_error_sys(&e, "nomem", "image path");
		fail(&e, SBX_EX_FAILED);
	}
	p->sb.image_root = root;
	/* bwrap resolves bind sources by path, as the sandbox's uid: as
	 * root, that uid must be able to search images/ (or envs/ and
	 * envs/<agent>), not list them; the trees beneath are
	 * world-readable. */
	for (i = 0; p->drop_privs && i < nreach; i++)
		if ((fd = sbx_open_beneath(p->root.fd, reach[i], O_RDONLY |
		    O_DIRECTORY, &e)) >= 0) {
			if (fstat(fd, &st) == 0 && !(st.st_mode & S_IXOTH))
				(void)fchmod(fd, (st.st_mode & 0700) | 0011);
			close(fd);
		}
}

static int
network_valid(const char *m)
{
	return strcmp(m, SBX_NET_NONE) == 0 || strcmp(m, SBX_NET_PROXY) == 0 ||
	    strcmp(m, SBX_NET_OUTBOUND) == 0;
}

/*
 * The network mode: the flag, else the agent's `network` setting, else
 * none.  --allow-domain only means something in proxy mode: elsewhere it
 * is refused rather than silently ignored.
 */
static void
prep_network(struct prep *p)
{
	struct sbx_error	 e;
	const char		*v;
	int			 r;

	/* The agent's settings, read once for the whole run. */
	snprintf(p->agent_rel, sizeof(p->agent_rel), "config/agents/%s.json",
	    p->sb.agent);
	if (sbx_config_load(p->root.fd, p->agent_rel, &p->agent_cfg, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	/* An unprovisioned agent stays revoked for every run, not only for
	 * the proxy runs that would mint it a new token, until `sbx
	 * provision` restores it. */
	if ((r = sbx_provision_revoked(p->root.fd, p->sb.agent, &e)) == 1)
		sbx_provision_revoked_error(p->sb.agent, &e);
	if (r != 0)
		fail(&e, SBX_EX_FAILED);
	if (!O.network_set) {
		v = json_string_value(json_object_get(p->agent_cfg,
		    "network"));
		if (v != NULL && !network_valid(v)) {
			sbx_error_set(&e, SBX_K_INVALID_ARGS, "config",
			    "config_invalid", "%s: `network` must be none, "
			    "proxy or outbound", p->agent_rel);
			fail(&e, SBX_EX_FAILED);
		}
		if (v != NULL)
			O.network = strcmp(v, SBX_NET_PROXY) == 0 ?
			    SBX_NET_PROXY : strcmp(v, SBX_NET_OUTBOUND) == 0 ?
			    SBX_NET_OUTBOUND : SBX_NET_NONE;
	}
	if (O.allow.n > 0 && strcmp(O.network, SBX_NET_PROXY) != 0) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "allow_domain",
		    "requires_proxy", "--allow-domain needs --network proxy "
		    "(the network is %s)", O.network);
		fail(&e, SBX_EX_FAILED);
	}
}

/*
 * Proxy mode: check the agent's policy (a broken allowlist fails here,
 * before anything runs), make sure it has a token, and open a session
 * with the proxy of this root (starting it when none runs).  The channel
 * goes to sbx-init; the control connection stays here for the run.
 */
static void
prep_proxy(struct prep *p)
{
	struct sbx_netpolicy	 pol;
	struct sbx_error	 e;
	struct sbx_buf		 tok = SBX_BUF_INIT;
	json_t			*allow;
	char			 rel[128], run[64], *prog, *slash;
	size_t			 i;

	sbx_np_init(&pol);
	if (sbx_np_load(&pol, p->agent_cfg, p->agent_rel, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	allow = json_array();
	for (i = 0; i < O.allow.n; i++) {
		if (sbx_np_allow(&pol, O.allow.v[i], &e) == -1)
			fail(&e, SBX_EX_FAILED);
		json_array_append_new(allow, json_string(O.allow.v[i]));
	}
	if (pol.nallowed == 0)
		warn_add(p, "network proxy: the agent's allowlist is empty, "
		    "so every destination is refused (set allowed_domains "
		    "or use --allow-domain)");
	sbx_np_free(&pol);

	snprintf(rel, sizeof(rel), "run/tokens/%s", p->sb.agent);
	if (sbx_read_file_at(p->root.fd, rel, 256, &tok, &e) == -1) {
		/* No token yet: provision the agent (idempotent), which
		 * creates one. */
		struct sbx_provision	 pv;

		sbx_provision_init(&pv, p->root.fd, p->sb.agent);
		if (sbx_provision_agent(&pv, &e) == -1)
			fail(&e, SBX_EX_FAILED);
		sbx_provision_release(&pv);
		if (sbx_read_file_at(p->root.fd, rel, 256, &tok, &e) == -1)
			fail(&e, SBX_EX_FAILED);
	}
	while (tok.len > 0 && tok.p[tok.len - 1] == '\n')
		tok.p[--tok.len] = '\0';
	if (!sbx_provision_token_valid(tok.p, tok.len)) {
		sbx_error_set(&e, SBX_K_REJECTED, "token", "bad_token",
		    "%s is not a valid token", rel);
		sbx_error_hint(&e, "run `sbx provision unprovision --agent %s` "
		    "and `sbx provision --agent %s`", p->sb.agent, p->sb.agent);
		fail(&e, SBX_EX_FAILED);
	}
	memcpy(p->proxy_token, tok.p, SBX_TOKEN_LEN + 1);
	explicit_bzero(tok.p, tok.len);
	sbx_buf_release(&tok);

	/* sbx-proxy lives next to sbx-init. */
	if ((prog = malloc(strlen(p->init) + 16)) == NULL) {
		sbx_error_sys(&e, "nomem", "proxy path");
		fail(&e, SBX_EX_FAILED);
	}
	strcpy(prog, p->init);
	slash = strrchr(prog, '/');
	strcpy(slash + 1, "sbx-proxy");
	snprintf(run, sizeof(run), "%d-%lld", (int)getpid(), sbx_now_ms());
	/* A proxy that is exiting because it was idle may still accept
	 * and then close: try again (it, or its successor, answers). */
	for (i = 0;; i++) {
		if ((p->proxy_ctl = sbx_proxy_ensure(p->root.fd, prog,
		    p->root.path, &e)) != -1 &&
		    sbx_proxy_session(p->proxy_ctl, p->sb.agent, allow, run,
		    &p->proxy_chan, &e) == 0)
			break;
		if (p->proxy_ctl != -1)
			close(p->proxy_ctl);
		p->proxy_ctl = -1;
		if (i == 3 || e.reason == NULL ||
		    (strcmp(e.reason, "proxy_unreachable") != 0 &&
		    strcmp(e.reason, "not_running") != 0)) {
			sbx_error_hint(&e, "run `sbx proxy serve --foreground` "
			    "to see why the proxy does not answer");
			fail(&e, SBX_EX_FAILED);
		}
		usleep(50000);
	}
	free(prog);
	json_decref(allow);
}

/* After the run: the proxy's denials, for the envelope and for people. */
static void
finish_proxy(struct prep *p)
{
	struct sbx_error	 e;
	json_t			*v;
	size_t			 i, n;

	if (p->proxy_ctl < 0)
		return;
	p->violations = sbx_proxy_end(p->proxy_ctl, &e);
	close(p->proxy_ctl);
	p->proxy_ctl = -1;
	if (p->violations == NULL) {
		warn_add(p, "the proxy's record of this run is unavailable");
		p->violations = json_array();
		return;
	}
	n = json_array_size(p->violations);
	if (O.json || O.quiet || n == 0)
		return;
	fprintf(stderr, "sbx: proxy denied %zu request%s:", n, n == 1 ? "" :
	    "s");
	json_array_foreach(p->violations, i, v) {
		struct sbx_buf	 b = SBX_BUF_INIT;
		const char	*h = json_string_value(json_object_get(v,
				    "host"));
		const char	*ad = json_string_value(json_object_get(v,
				    "address"));
		const char	*hn = json_string_value(json_object_get(v,
				    "hint"));

		if (i == 5) {
			fprintf(stderr, " ...");
			break;
		}
		sbx_str_escape_line(&b, h != NULL ? h : "-", h != NULL ?
		    strlen(h) : 1);
		/* An address refused for its class says which address and
		 * what would allow it (the proxy's own words). */
		fprintf(stderr, "%s %s:%lld (%s%s%s%s%s)", i ? "," : "", b.p,
		    json_integer_value(json_object_get(v, "port")),
		    json_string_value(json_object_get(v, "reason")),
		    ad != NULL ? " " : "", ad != NULL ? ad : "",
		    hn != NULL ? "; " : "", hn != NULL ? hn : "");
		sbx_buf_release(&b);
	}
	fputc('\n', stderr);
}

/* The caller's terminal whose size the command's terminal takes, and
 * follows on SIGWINCH (-t), or -1. */
static int		 tty_size_fd = -1;

/*
 * -t: the command's terminal starts at the size of the caller's (stdin,
 * stdout or stderr, whichever is one), else at 24 by 80, as a terminal
 * that cannot tell its size is taken to be.
 */
static void
tty_prepare(struct prep *p)
{
	struct winsize	 ws;
	int		 fd;

	p->sb.tty = 1;
	p->sb.tty_rows = 24;
	p->sb.tty_cols = 80;
	for (fd = 0; fd <= 2; fd++)
		if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 &&
		    ws.ws_col > 0) {
			p->sb.tty_rows = ws.ws_row;
			p->sb.tty_cols = ws.ws_col;
			tty_size_fd = fd;
			break;
		}
}

static void
prepare(struct prep *p)
{
	struct sbx_error	 e;
	struct sbx_buf		 pw = SBX_BUF_INIT, gr = SBX_BUF_INIT;
	struct sbx_buf		 hosts = SBX_BUF_INIT;
	char			 rel[128], *dir;
	size_t			 i;

	p->home_fd = p->output_fd = p->workdir_fd = p->workdir_tree = -1;
	p->proxy_ctl = p->proxy_chan = -1;
	p->warnings = json_array();

	if (O.argc == 0 && O.shell == NULL) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command", "missing",
		    "no command given: use `-- COMMAND [ARG...]` or `-c "
		    "STRING`");
		fail(&e, SBX_EX_FAILED);
	}
	if (O.timeout_arg != NULL &&
	    sbx_parse_seconds(O.timeout_arg, 31 * 86400.0, &O.timeout) == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number", "argument `timeout` must be a positive "
		    "number of seconds (at most 31 days)");
		fail(&e, SBX_EX_FAILED);
	}
	if (!network_valid(O.network)) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "network",
		    "invalid_mode", "argument `network` must be none, proxy "
		    "or outbound");
		fail(&e, SBX_EX_FAILED);
	}
	for (i = 0; i < O.env.n; i++)
		if (sbx_env_assign_valid(O.env.v[i], &e) == -1)
			fail(&e, SBX_EX_FAILED);
	if (O.shell != NULL && *O.shell == '\0') {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command", "empty",
		    "argument `-c` is an empty string");
		fail(&e, SBX_EX_FAILED);
	}
	/* A detached job has no caller's stdin to read: refused rather than
	 * silently given /dev/null. */
	if (O.background && O.stdin_mode == STDIN_INHERIT) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "stdin",
		    "background_stdin", "--stdin inherit cannot be used with "
		    "--background (a job's stdin is /dev/null)");
		fail(&e, SBX_EX_FAILED);
	}
	if (O.shell == NULL && O.argc > 0 && O.argv[0][0] == '\0') {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "command", "empty",
		    "the command name is empty");
		fail(&e, SBX_EX_FAILED);
	}

	/* Fail closed: no bwrap, no run. */
	if (sbx_tool_find("bwrap", "SBX_BWRAP", &p->bwrap, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	/*
	 * sbx-init lives next to sbx-exec.  Built into the front-end (see
	 * cmd/sbx.c), the directory is the front-end's exec path instead:
	 * $SBX_EXEC_PATH (ignored when set-id) or the compiled-in one.
	 */
#ifdef SBX_BUILTIN
	dir = secure_getenv("SBX_EXEC_PATH");
	dir = strdup(dir != NULL && *dir == '/' ? dir : SBX_LIBEXECDIR);
#else
	dir = sbx_self_dir();
#endif
	if (dir == NULL || asprintf(&p->init, "%s/sbx-init", dir) == -1) {
		sbx_error_sys(&e, "self_unknown", "cannot locate sbx-init");
		fail(&e, SBX_EX_FAILED);
	}
	free(dir);
	if (access(p->init, X_OK) == -1 || (p->init_fd = open(p->init,
	    O_RDONLY | O_CLOEXEC)) == -1) {
		sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL, "init_missing",
		    "%s is missing; the installation is incomplete", p->init);
		fail(&e, SBX_EX_FAILED);
	}

	if (sbx_root_open(&p->root, 1, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	/* A root made by a run alone is as much a state root as one made
	 * by provision: mark it, so that --workdir never binds it into
	 * another run (see prep_workdir).  This run's own isolation does
	 * not depend on it (its root is checked by path): a root that
	 * cannot take the marker (read-only) only gets a warning. */
	if (sbx_root_mark(p->root.fd, &e) == -1)
		warn_add(p, e.message);
	prep_identity(p);
	prep_network(p);
	snprintf(rel, sizeof(rel), "workspace/agents/%s", p->sb.agent);
	if ((p->home_fd = sbx_mkdirs_at(p->root.fd, rel, 0700, &e)) == -1)
		fail(&e, SBX_EX_FAILED);
	own_dir(p, p->home_fd, rel);
	snprintf(rel, sizeof(rel), "output/%s", p->sb.agent);
	if ((p->output_fd = sbx_mkdirs_at(p->root.fd, rel, 0700, &e)) == -1)
		fail(&e, SBX_EX_FAILED);
	own_dir(p, p->output_fd, rel);
	snprintf(p->home, sizeof(p->home), "%s/%s", SBX_IN_AGENTS,
	    p->sb.agent);
	prep_image(p);
	if (O.workdir != NULL)
		prep_workdir(p);
	prep_cwd(p);

	p->sb.bwrap = p->bwrap;
	p->sb.init = p->init;
	p->sb.home = p->home;
	p->sb.workdir = p->workdir;
	p->sb.cwd = p->cwd;
	p->sb.network = O.network;
	/* With -c, the arguments after the string are $0, $1... */
	p->sb.argv = O.argv;
	p->sb.shell = O.shell;
	if (O.tty)
		tty_prepare(p);
	p->sb.tmp_size = 1ULL << 30;
	p->cache_fd = sbx_mkdirs_at(p->root.fd, "cache", 0700, &e);
	p->sb.disable_userns = bwrap_has_disable_userns(p);
	prep_limits(p);
	/* The filter is part of the sandbox: when it cannot be had, nothing
	 * runs (unless the caller turned it off, for diagnosis). */
	p->seccomp_fd = -1;
	if (!O.seccomp_off) {
		const char	*sw;

		if ((p->seccomp_fd = sbx_seccomp_fd(p->cache_fd, &sw,
		    &e)) == -1)
			fail(&e, SBX_EX_FAILED);
		/* Someone wrote the cached copy: say so, it is a sign. */
		if (sw != NULL)
			warn_add(p, sw);
		p->sb.seccomp = 1;
	} else
		warn_add(p, "seccomp is off (--seccomp=off): the kernel's "
		    "whole system call surface is reachable");
	if (!p->sb.disable_userns)
		warn_add(p, "this bubblewrap cannot disable nested user "
		    "namespaces (--disable-userns needs bwrap >= 0.8.0)");
	if (strcmp(O.network, SBX_NET_OUTBOUND) == 0)
		warn_add(p, "network outbound: the sandbox shares the host "
		    "network");

	if (strcmp(O.network, SBX_NET_PROXY) == 0)
		prep_proxy(p);
	if ((p->env_fd = prep_env(p)) == -1 ||
	    sbx_sandbox_etc(&p->sb, p->run_uid, p->run_gid, &pw, &gr, &hosts) == -1 ||
	    (p->passwd_fd = etc_fd("sbx-passwd", &pw)) == -1 ||
	    (p->group_fd = etc_fd("sbx-group", &gr)) == -1 ||
	    (p->hosts_fd = etc_fd("sbx-hosts", &hosts)) == -1) {
		sbx_error_sys(&e, "memfd_failed", "preparing the sandbox");
		fail(&e, SBX_EX_FAILED);
	}
	if (sbx_sandbox_argv(&p->sb, &p->bwrap_argv, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if (O.verbose) {
		struct sbx_buf b = SBX_BUF_INIT;
		for (i = 0; i < p->bwrap_argv.n; i++) {
			if (i)
				sbx_buf_puts(&b, " ");
			sbx_str_escape_line(&b, p->bwrap_argv.v[i],
			    strlen(p->bwrap_argv.v[i]));
		}
		fprintf(stderr, "%s: %s\n", PROG, b.p);
		sbx_buf_release(&b);
	}
}

/*
 * After the run: read the cgroup's counters as evidence of a limit that
 * ended or hindered the run, then kill what is left, wait for the cgroup
 * to empty and remove it.  Returns the events object (or NULL).
 */
static json_t *
finish_limits(struct prep *p, struct sbx_run *r)
{
	struct sbx_error	 e;
	struct sbx_cg_stats	 st;
	json_t			*ev = NULL;

	if (p->cg.backend == SBX_CG_NONE)
		return NULL;
	memset(&st, 0, sizeof(st));
	if (sbx_cgroup_stats(&p->cg, &st) == 0) {
		ev = json_object();
		if (st.have_oom && st.oom_kills > 0)
			json_object_set_new(ev, "oom_kills",
			    json_integer((json_int_t)st.oom_kills));
		if (st.have_pids_events && st.pids_max_events > 0)
			json_object_set_new(ev, "pids_max",
			    json_integer((json_int_t)st.pids_max_events));
		if (st.have_cpu)
			json_object_set_new(ev, "cpu_usage_ms",
			    json_integer((json_int_t)(st.cpu_usage_usec / 1000)));
		if (st.have_peak)
			json_object_set_new(ev, "memory_peak_mib",
			    json_integer((json_int_t)(st.memory_peak >> 20)));
		if (st.have_oom && st.oom_kills > 0 && r->exit_code != 0 &&
		    r->killed_by == NULL) {
			r->killed_by = "limit";
			r->limit = "memory";
		}
		if (st.have_pids_events && st.pids_max_events > 0)
			warn_add(p, "the task limit was reached: some fork() "
			    "or clone() calls failed with EAGAIN");
	}
	if (sbx_cgroup_destroy(&p->cg, &e) == -1)
		warn_add(p, e.message);
	return ev;
}

static void
run_setup(struct prep *p, struct sbx_run *r)
{
	sbx_run_init(r);
	r->bwrap_argv = p->bwrap_argv.v;
	r->slot[SBX_FD_ENV] = p->env_fd;
	r->slot[SBX_FD_HOME] = p->home_fd;
	r->slot[SBX_FD_OUTPUT] = p->output_fd;
	r->slot[SBX_FD_WORKDIR] = p->workdir_tree >= 0 ? p->workdir_tree :
	    p->workdir_fd;
	r->slot[SBX_FD_PASSWD] = p->passwd_fd;
	r->slot[SBX_FD_GROUP] = p->group_fd;
	r->slot[SBX_FD_HOSTS] = p->hosts_fd;
	r->slot[SBX_FD_SECCOMP] = p->seccomp_fd;
	r->slot[SBX_FD_INIT] = p->init_fd;
	r->slot[SBX_FD_PROXY] = p->proxy_chan;
	r->drop_privs = p->drop_privs;
	r->run_uid = p->run_uid;
	r->run_gid = p->run_gid;
	r->wall_timeout_ms = (long long)(p->lim.wall_timeout * 1000.0);
	r->child_hook = cg_enter_hook;
	r->kill_hook = cg_kill_hook;
	r->child_hook_arg = p;
	r->max_output = O.max_output;
	r->idle_timeout_ms = (long long)(O.timeout * 1000.0);
	r->hold_stderr = 1;
	r->signal_fd = sigpipe_fds[0];
}

/* Does the command hide failures (a pipe, or stderr thrown away)? */
static int
mentions_pipe(void)
{
	int	 i;

	if (O.shell)
		return strchr(O.shell, '|') != NULL ||
		    strstr(O.shell, "2>/dev/null") != NULL ||
		    strstr(O.shell, "2> /dev/null") != NULL;
	for (i = 0; i < O.argc; i++)
		if (strchr(O.argv[i], '|') != NULL ||
		    strstr(O.argv[i], "2>/dev/null") != NULL)
			return 1;
	return 0;
}

static const char *
signame(int n)
{
	static char	 buf[16];

	switch (n) {
	case SIGHUP: return "SIGHUP";
	case SIGINT: return "SIGINT";
	case SIGQUIT: return "SIGQUIT";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGKILL: return "SIGKILL";
	case SIGUSR1: return "SIGUSR1";
	case SIGSEGV: return "SIGSEGV";
	case SIGUSR2: return "SIGUSR2";
	case SIGPIPE: return "SIGPIPE";
	case SIGALRM: return "SIGALRM";
	case SIGTERM: return "SIGTERM";
	case SIGXCPU: return "SIGXCPU";
	case SIGXFSZ: return "SIGXFSZ";
	case SIGSYS: return "SIGSYS";
	}
	snprintf(buf, sizeof(buf), "SIG%d", n);
	return buf;
}

static json_t *
result_json(struct prep *p, struct sbx_run *r)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	json_t		*res = json_object(), *trunc;

	json_object_set_new(res, "exit_code", json_integer(r->exit_code));
	if (r->signo) {
		json_object_set_new(res, "signal", json_integer(r->signo));
		json_object_set_new(res, "signal_name",
		    json_string(signame(r->signo)));
	}
	if (O.json) {
		sbx_capture_render(&r->out, &b);
		json_object_set_new(res, "stdout", sbx_json_bytes(b.p ? b.p :
		    "", b.len));
		sbx_buf_reset(&b);
		sbx_capture_render(&r->err, &b);
		json_object_set_new(res, "stderr", sbx_json_bytes(b.p ? b.p :
		    "", b.len));
		sbx_buf_release(&b);
		if (sbx_capture_truncated(&r->out) ||
		    sbx_capture_truncated(&r->err)) {
			trunc = json_array();
			if (sbx_capture_truncated(&r->out))
				json_array_append_new(trunc,
				    json_string("stdout"));
			if (sbx_capture_truncated(&r->err))
				json_array_append_new(trunc,
				    json_string("stderr"));
			json_object_set_new(res, "truncated", trunc);
		}
	}
	json_object_set_new(res, "cwd", json_string(p->cwd));
	if (p->workdir_resolved != NULL)
		json_object_set_new(res, "workdir_resolved",
		    json_string(p->workdir_resolved));
	json_object_set_new(res, "agent", json_string(p->sb.agent));
	json_object_set_new(res, "duration_ms", json_integer(r->duration_ms));
	json_object_set_new(res, "network", json_string(O.network));
	if (p->violations != NULL)
		json_object_set(res, "violations", p->violations);
	json_object_set_new(res, "seccomp", json_boolean(!O.seccomp_off));
	json_object_set(res, "limits", p->limits);
	if (r->limit != NULL && strcmp(r->limit, "idle") != 0)
		json_object_set_new(res, "limit", json_string(r->limit));
	if (r->killed_by != NULL)
		json_object_set_new(res, "killed_by",
		    json_string(r->killed_by));
	if (O.shell != NULL)
		json_object_set_new(res, "shell", json_string(r->nopipefail ?
		    "sh" : "bash"));
	return res;
}

static void
print_warnings(json_t *w)
{
	size_t	 i;
	json_t	*v;

	if (O.quiet || O.json)
		return;
	json_array_foreach(w, i, v)
		fprintf(stderr, "%s: warning: %s\n", PROG, json_string_value(v));
}

/* {"result":..., "warnings":[...]} for a failure envelope (steals res). */
static json_t *
extra_of(json_t *res, json_t *warnings)
{
	json_t	*x = json_object();

	json_object_set_new(x, "result", res);
	if (json_array_size(warnings) > 0)
		json_object_set(x, "warnings", warnings);
	return x;
}

/*
 * The caller's terminal, when the sandbox gets it as stdin.  Its settings
 * are the caller's, not the sandbox's: `stty -echo` or raw mode left behind
 * by the command (or by one killed half-way) would outlive the run, so
 * they are put back however the run ends (exit() runs restore_tty too).
 */
static struct termios	 saved_tty;
static int		 saved_tty_ok;

static void
restore_tty(void)
{
	struct sigaction	 ign, old;

	if (!saved_tty_ok)
		return;
	/* A background sbx (`sbx exec ... &`) would be stopped by SIGTTOU
	 * on tcsetattr(): ignored for the call, as shells do. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGTTOU, &ign, &old);
	(void)tcsetattr(0, TCSANOW, &saved_tty);
	sigaction(SIGTTOU, &old, NULL);
}

/*
 * What the sandbox reads.  The caller's stdin, except a terminal in a run
 * that is not interactive (--json: the caller reads an envelope, not a
 * session): there the command would read keystrokes meant for the caller,
 * and could change the terminal's modes or wait on it.  --stdin decides.
 */
static int
stdin_for_run(void)
{
	int	 fd = 0;

	if (O.stdin_mode == STDIN_NULL ||
	    (O.stdin_mode == STDIN_AUTO && O.json && isatty(0)))
		fd = -1;
	if (fd == 0 && isatty(0) && tcgetattr(0, &saved_tty) == 0 &&
	    !saved_tty_ok) {
		saved_tty_ok = 1;
		atexit(restore_tty);
	}
	return fd;
}

/*
 * -t: the command's terminal is the one sbx-init made inside; the caller's
 * terminal only carries keystrokes to it and its output back, so it goes
 * raw (no echo or line editing of its own; ^C, ^Z and ^D pass as bytes,
 * and the command's terminal makes of them what a terminal does) until
 * the run ends, however it ends (restore_tty).  Its window size follows
 * the caller's (SIGWINCH).
 */
static void
tty_start(struct sbx_run *r)
{
	struct sigaction	 sa;
	struct termios		 raw;

	r->tty = 1;
	r->tty_size_fd = tty_size_fd;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGWINCH, &sa, NULL);
	if (!saved_tty_ok)
		return;
	raw = saved_tty;
	cfmakeraw(&raw);
	(void)tcsetattr(0, TCSADRAIN, &raw);
}

static int
foreground(struct prep *p)
{
	static struct sbx_run	 r;	/* reachable until exit */
	struct sbx_error	 e;
	json_t			*events;
	json_t			*res;
	int			 code;

	install_signals(0);
	signal(SIGPIPE, SIG_IGN);
	run_setup(p, &r);
	r.stdin_fd = stdin_for_run();
	if (O.tty)
		tty_start(&r);
	if (O.json) {
		r.capture = 1;
	} else {
		r.out_fd = 1;
		r.err_fd = 2;
	}
	if (sbx_run_sandbox(&r, &e) == -1) {
		restore_tty();
		(void)finish_limits(p, &r);
		fail(&e, SBX_EX_FAILED);
	}
	restore_tty();
	events = finish_limits(p, &r);
	finish_proxy(p);

	if (!r.started) {
		/* bwrap could not build the sandbox: nothing ran. */
		struct sbx_buf m = SBX_BUF_INIT;
		if (r.setup_err.len)
			sbx_buf_append(&m, r.setup_err.p,
			    r.setup_err.len > 600 ? 600 : r.setup_err.len);
		while (m.len && (m.p[m.len - 1] == '\n'))
			m.p[--m.len] = '\0';
		sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL,
		    "sandbox_setup_failed", "the sandbox could not be set up: "
		    "%s", m.len ? m.p : "bwrap failed without a message");
		sbx_error_hint(&e, "run `sbx preflight` to see what this "
		    "machine lacks");
		sbx_buf_release(&m);
		fail(&e, SBX_EX_FAILED);
	}
	if (r.exec_errno) {
		if (r.exec_errno == ENOENT) {
			sbx_error_set(&e, SBX_K_NOT_FOUND, "command",
			    "command_not_found", "command not found in the "
			    "sandbox: %s", O.shell ? "sh" : O.argv[0]);
			code = SBX_EX_NOT_FOUND;
		} else {
			sbx_error_set(&e, SBX_K_EXECUTION_ERROR, "command",
			    "cannot_execute", "cannot execute %s in the "
			    "sandbox: %s", O.shell ? "sh" : O.argv[0],
			    strerror(r.exec_errno));
			code = SBX_EX_CANNOT_EXEC;
		}
		fail_extra(&e, code, json_pack("{s:o}", "result",
		    result_json(p, &r)));
	}
	if (r.nopipefail)
		warn_add(p, "bash is not available in the sandbox: ran the "
		    "string with sh -c, so pipefail is unavailable");
	if (r.exit_code == 0 && r.out.total == 0 && r.err.total == 0 &&
	    mentions_pipe())
		warn_add(p, "the command exited 0 with no output, but it uses "
		    "a pipe or discards stderr: errors upstream may have been "
		    "suppressed");
	if (r.exit_code == 141)
		warn_add(p, "exit 141 is SIGPIPE: a reader closed the pipe "
		    "early; the captured output is still trustworthy");
	res = result_json(p, &r);
	if (events != NULL && json_object_size(events) > 0)
		json_object_set(res, "limit_events", events);
	json_decref(events);
	code = r.exit_code < 0 ? SBX_EX_FAILED : r.exit_code;
	if (r.limit != NULL && strcmp(r.limit, "memory") == 0) {
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, "memory",
		    "memory_limit", "the sandbox ran out of memory: the kernel "
		    "killed it at the limit of %llu MiB", p->lim.memory_mib);
		sbx_error_hint(&e, "raise --memory (or limits.memory_mib)");
		if (O.json)
			emit(sbx_envelope_err(tool, &e, extra_of(res,
			    p->warnings)));
		else {
			print_warnings(p->warnings);
			if (!O.quiet)
				fprintf(stderr, "%s: %s\n", PROG, e.message);
			json_decref(res);
		}
		return code;
	}

	if (r.killed_by != NULL && (strcmp(r.killed_by, "timeout") == 0 ||
	    (r.limit != NULL && strcmp(r.limit, "wall_time") == 0))) {
		if (strcmp(r.killed_by, "timeout") == 0) {
			sbx_error_set(&e, SBX_K_TIMEOUT, "timeout",
			    "idle_timeout", "killed after %s seconds without "
			    "output (an inactivity timeout, not a limit on run "
			    "time; output a program buffers counts as silence, "
			    "see -t)", O.timeout_arg);
			sbx_error_hint(&e, "raise --timeout, make the command "
			    "print progress and flush it, or run it on a "
			    "terminal with -t/--tty (most programs then write "
			    "line by line)");
		} else {
			sbx_error_set(&e, SBX_K_TIMEOUT, "wall_timeout",
			    "wall_time", "killed at the wall-clock limit of "
			    "%g seconds", p->lim.wall_timeout);
			sbx_error_hint(&e, "raise --wall-timeout (or limits."
			    "wall_timeout in the agent's configuration)");
		}
		print_warnings(p->warnings);
		if (!O.json)
			fprintf(stderr, "%s: %s\n", PROG, e.message);
		if (O.json)
			emit(sbx_envelope_err(tool, &e, extra_of(res, p->warnings)));
		return SBX_EX_TIMEOUT;
	}
	if (r.killed_by != NULL && strcmp(r.killed_by, "user") == 0) {
		code = 128 + r.user_signal;
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL, "interrupted",
		    "the sandbox was terminated on %s", signame(r.user_signal));
		if (O.json)
			emit(sbx_envelope_err(tool, &e, extra_of(res, p->warnings)));
		else if (!O.quiet)
			fprintf(stderr, "%s: %s\n", PROG, e.message);
		return code;
	}
	if (O.json) {
		emit(sbx_envelope_ok(tool, res, json_incref(p->warnings)));
	} else {
		print_warnings(p->warnings);
		json_decref(res);
	}
	return code;
}

static int
jobs_dir(struct sbx_root *root, const char *agent, int create,
    struct sbx_error *e)
{
	char	 rel[128];

	snprintf(rel, sizeof(rel), "agents/%s/jobs", agent);
	if (create)
		return sbx_mkdirs_at(root->fd, rel, 0700, e);
	return sbx_open_beneath(root->fd, rel, O_RDONLY | O_DIRECTORY, e);
}

static json_t *
command_json(void)
{
	json_t	*a = json_array();
	int	 i;

	if (O.shell) {
		json_array_append_new(a, json_string("-c"));
		json_array_append_new(a, sbx_json_bytes(O.shell,
		    strlen(O.shell)));
	}
	for (i = 0; i < O.argc; i++)
		json_array_append_new(a, sbx_json_bytes(O.argv[i],
		    strlen(O.argv[i])));
	return a;
}

static int
log_sink(void *log, const void *data, size_t n)
{
	return sbx_joblog_write(log, data, n);
}

/* The detached supervisor of a background job. */
static void __attribute__((noreturn))
monitor(struct prep *p, const char *id, int jobs_fd, int log_fd,
    int notify_fd, json_t *rec)
{
	struct sbx_error	 e;
	struct sbx_run		 r;
	struct sbx_joblog	 jl;
	unsigned long long	 st = 0;
	char			 now[32], line[32];
	int			 devnull, rc;
	json_t			*ev;

	if ((devnull = open("/dev/null", O_RDWR)) >= 0) {
		dup2(devnull, 0);
		dup2(devnull, 1);
		dup2(devnull, 2);
		if (devnull > 2)
			close(devnull);
	}
	(void)!chdir("/");
	install_signals(1);
	signal(SIGPIPE, SIG_IGN);
	sbx_proc_starttime(getpid(), &st);
	json_object_set_new(rec, "pid", json_integer(getpid()));
	json_object_set_new(rec, "pid_start", json_integer((json_int_t)st));
	json_object_set_new(rec, "state", json_string("running"));
	sbx_job_write(jobs_fd, id, rec, &e);
	snprintf(line, sizeof(line), "P%d\n", (int)getpid());
	(void)sbx_write_all(notify_fd, line, strlen(line));

	/* The cgroup carries the supervisor's pid in its name (that is how
	 * `gc` tells leftovers from live runs): make it here, not in the
	 * parent that is about to exit. */
	if (p->cg.backend != SBX_CG_NONE)
		prep_cgroup(p, p->cg_v2root);
	run_setup(p, &r);
	r.out_fd = log_fd;
	r.err_fd = log_fd;
	/* Through the capped log: the head and the latest output are
	 * kept, the file never grows past log_cap (see background()). */
	sbx_joblog_init(&jl, log_fd, p->log_cap);
	r.sink_write = log_sink;
	r.sink_arg = &jl;
	r.notify_fd = notify_fd;
	rc = sbx_run_sandbox(&r, &e);
	if ((ev = finish_limits(p, &r)) != NULL) {
		if (json_object_size(ev) > 0)
			json_object_set(rec, "limit_events", ev);
		json_decref(ev);
	}
	if (rc == -1) {
		json_object_set_new(rec, "state", json_string("failed"));
		json_object_set_new(rec, "error", json_string(e.message));
	} else {
		json_object_set_new(rec, "state", json_string("exited"));
		if (!r.started) {
			json_object_set_new(rec, "error", sbx_json_bytes(
			    r.setup_err.p ? r.setup_err.p : "",
			    r.setup_err.len));
			(void)sbx_joblog_write(&jl, r.setup_err.p ?
			    r.setup_err.p : "", r.setup_err.len);
			json_object_set_new(rec, "exit_code",
			    json_integer(SBX_EX_FAILED));
		} else if (r.exec_errno) {
			json_object_set_new(rec, "exit_code", json_integer(
			    r.exec_errno == ENOENT ? SBX_EX_NOT_FOUND :
			    SBX_EX_CANNOT_EXEC));
			json_object_set_new(rec, "error", json_string(
			    strerror(r.exec_errno)));
		} else
			json_object_set_new(rec, "exit_code",
			    json_integer(r.exit_code));
		if (r.signo)
			json_object_set_new(rec, "signal",
			    json_integer(r.signo));
		if (r.killed_by)
			json_object_set_new(rec, "killed_by",
			    json_string(r.killed_by));
		if (r.limit)
			json_object_set_new(rec, "limit",
			    json_string(r.limit));
		json_object_set_new(rec, "duration_ms",
		    json_integer(r.duration_ms));
	}
	/* In order on disk for whoever reads the file itself. */
	(void)sbx_joblog_finish(&jl);
	json_object_set_new(rec, "log_truncated", json_boolean(jl.truncated));
	json_object_set_new(rec, "log_dropped_bytes", json_integer(
	    (json_int_t)sbx_joblog_dropped(&jl)));
	sbx_iso8601_now(now);
	json_object_set_new(rec, "ended_at", json_string(now));
	sbx_job_write(jobs_fd, id, rec, &e);
	_exit(0);
}

static int
background(struct prep *p)
{
	struct sbx_error	 e;
	char			 id[SBX_JOB_LEN + 1], name[64], now[32];
	char			 buf[128], logpath[PATH_MAX];
	int			 jobs_fd, log_fd, np[2], status, jpid = 0;
	size_t			 len = 0;
	ssize_t			 n;
	pid_t			 pid;
	json_t			*rec, *res;
	char			 what = 0;
	int			 val = 0;
	enum sbx_cg_backend	 had_cg = p->cg.backend;
	struct pollfd		 pfd;
	long long		 deadline;

	if ((jobs_fd = jobs_dir(&p->root, p->sb.agent, 1, &e)) == -1)
		fail(&e, SBX_EX_FAILED);
	if (sbx_job_new_id(id) == -1) {
		sbx_error_sys(&e, "random_failed", "getrandom");
		fail(&e, SBX_EX_FAILED);
	}
	snprintf(name, sizeof(name), "%s.log", id);
	/* Read and written at offsets (the ring of a capped log), so not
	 * O_APPEND. */
	log_fd = openat(jobs_fd, name, O_RDWR | O_CREAT | O_EXCL |
	    O_NOFOLLOW | O_CLOEXEC, 0600);
	if (log_fd == -1) {
		sbx_error_sys(&e, "log_failed", "cannot create the job log");
		fail(&e, SBX_EX_FAILED);
	}
	/*
	 * The log is the sandbox's output, so it is bounded as the
	 * sandbox's own files are: never more than jobs.max_log_bytes, nor
	 * than the run's largest file (--file-size, --disk).  The
	 * supervisor writes it, and as root it stays root (it must remove
	 * the run's cgroup): a write of root's may use the file system's
	 * reserved blocks, which only the cap keeps in bounds.  The file
	 * belongs to the sandbox's uid, so that disk quotas charge the
	 * sandbox's user, not root; it stays in root's 0700 jobs directory,
	 * out of that uid's reach.
	 */
	{
		unsigned long long m = p->lim.file_size_mib;

		if (p->lim.disk_mib && (m == 0 || p->lim.disk_mib < m))
			m = p->lim.disk_mib;
		if (m != 0 && (m << 20) < p->log_cap)
			p->log_cap = m << 20;
	}
	if (p->drop_privs && fchown(log_fd, p->run_uid, p->run_gid) == -1) {
		sbx_error_sys(&e, "log_failed", "cannot hand the job log to "
		    "uid %u", (unsigned)p->run_uid);
		fail(&e, SBX_EX_FAILED);
	}
	snprintf(logpath, sizeof(logpath), "%s/agents/%s/jobs/%s",
	    p->root.path, p->sb.agent, name);
	sbx_iso8601_now(now);
	rec = json_pack("{s:s,s:s,s:o,s:s,s:s,s:s,s:s,s:I}", "job", id, "agent",
	    p->sb.agent, "command", command_json(), "cwd", p->cwd,
	    "log_file", logpath, "started_at", now, "network", O.network,
	    "log_max_bytes", (json_int_t)p->log_cap);
	if (pipe2(np, O_CLOEXEC) == -1) {
		sbx_error_sys(&e, "pipe_failed", "pipe");
		fail(&e, SBX_EX_FAILED);
	}
	fflush(NULL);
	/* The parent's cgroup proved the limits can be enforced; the
	 * supervisor makes its own (see monitor()). */
	if (sbx_cgroup_destroy(&p->cg, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	p->cg.backend = had_cg;
	if ((pid = fork()) == -1) {
		sbx_error_sys(&e, "fork_failed", "fork");
		fail(&e, SBX_EX_FAILED);
	}
	if (pid == 0) {
		/* Detach: own session, and reparented to init (or the
		 * nearest subreaper) so the caller can exit. */
		close(np[0]);
		setsid();
		if ((pid = fork()) != 0)
			_exit(pid == -1 ? 1 : 0);
		monitor(p, id, jobs_fd, log_fd, np[1], rec);
	}
	close(np[1]);
	close(log_fd);
	waitpid(pid, &status, 0);
	/* Wait (bounded) for the supervisor's pid, then for the sandbox to
	 * start or fail, so that a bad command is reported here. */
	deadline = sbx_now_ms() + 30000;
	while (sbx_now_ms() < deadline && len < sizeof(buf) - 1) {
		pfd.fd = np[0];
		pfd.events = POLLIN;
		if (poll(&pfd, 1, (int)(deadline - sbx_now_ms())) <= 0)
			break;
		n = read(np[0], buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (sscanf(buf, "P%d\n%c%d", &jpid, &what, &val) == 3)
			break;
	}
	close(np[0]);
	if (jpid <= 0) {
		sbx_error_set(&e, SBX_K_EXECUTION_ERROR, NULL,
		    "supervisor_failed", "the job supervisor did not start");
		fail(&e, SBX_EX_FAILED);
	}
	if (what == 'F' || what == 'E') {
		/* Let the supervisor finish its record first. */
		for (n = 0; n < 100 && kill(jpid, 0) == 0; n++)
			usleep(10000);
		if (what == 'E' && val == ENOENT) {
			sbx_error_set(&e, SBX_K_NOT_FOUND, "command",
			    "command_not_found", "command not found in the "
			    "sandbox: %s", O.shell ? "sh" : O.argv[0]);
			fail_extra(&e, SBX_EX_NOT_FOUND, json_pack("{s:s}",
			    "job", id));
		}
		if (what == 'E') {
			sbx_error_set(&e, SBX_K_EXECUTION_ERROR, "command",
			    "cannot_execute", "cannot execute %s in the "
			    "sandbox: %s", O.shell ? "sh" : O.argv[0],
			    strerror(val));
			fail_extra(&e, SBX_EX_CANNOT_EXEC, json_pack("{s:s}",
			    "job", id));
		}
		sbx_error_set(&e, SBX_K_UNAVAILABLE, NULL,
		    "sandbox_setup_failed", "the sandbox could not be set up; "
		    "see %s", logpath);
		fail_extra(&e, SBX_EX_FAILED, json_pack("{s:s}", "job", id));
	}
	res = json_pack("{s:s,s:i,s:s,s:s,s:b,s:s}", "job", id, "pid", jpid,
	    "log_file", logpath, "cwd", p->cwd, "background", 1, "agent",
	    p->sb.agent);
	if (p->workdir_resolved != NULL)
		json_object_set_new(res, "workdir_resolved",
		    json_string(p->workdir_resolved));
	if (O.json)
		emit(sbx_envelope_ok(tool, res, json_incref(p->warnings)));
	else {
		print_warnings(p->warnings);
		printf("%s\n", id);
		json_decref(res);
	}
	json_decref(rec);
	return 0;
}

/* ---- ps, poll, wait, kill ---------------------------------------------- */

static void
job_status_fields(json_t *res, json_t *rec, int *alive)
{
	const char	*state = json_string_value(json_object_get(rec,
			    "state"));
	json_t		*v;

	*alive = state && strcmp(state, "running") == 0 && sbx_job_alive(rec);
	if (state && strcmp(state, "running") == 0 && !*alive)
		state = "lost";	/* the supervisor died without a record */
	json_object_set_new(res, "alive", json_boolean(*alive));
	json_object_set_new(res, "state", json_string(state ? state : "lost"));
	if (!*alive && (v = json_object_get(rec, "exit_code")) != NULL)
		json_object_set(res, "exit_code", v);
	if ((v = json_object_get(rec, "killed_by")) != NULL)
		json_object_set(res, "killed_by", v);
	if ((v = json_object_get(rec, "limit")) != NULL)
		json_object_set(res, "limit", v);
}

/* log_tail, log_truncated and log_dropped_bytes of a job into res. */
static void
log_tail_json(json_t *res, int jobs_fd, const char *id, const json_t *rec)
{
	struct sbx_buf		 b = SBX_BUF_INIT;
	unsigned long long	 dropped = 0, cap;
	char			 name[64];

	snprintf(name, sizeof(name), "%s.log", id);
	/* The cap the supervisor wrote with, which tells where the ring
	 * is; a record without one (an older sbx) has a plain log. */
	cap = (unsigned long long)json_integer_value(json_object_get(rec,
	    "log_max_bytes"));
	(void)sbx_joblog_tail(jobs_fd, name, cap, O.tail_lines, &b, &dropped);
	json_object_set_new(res, "log_tail", sbx_json_bytes(b.p ? b.p : "",
	    b.len));
	json_object_set_new(res, "log_truncated", json_boolean(dropped > 0));
	json_object_set_new(res, "log_dropped_bytes",
	    json_integer((json_int_t)dropped));
	sbx_buf_release(&b);
}

static json_t *
load_job(struct sbx_root *root, const char *agent, const char *id,
    int *jobs_fd_out)
{
	struct sbx_error	 e;
	json_t			*rec;
	int			 jobs_fd;

	if (sbx_job_id_valid(id, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if ((jobs_fd = jobs_dir(root, agent, 0, &e)) == -1 ||
	    (rec = sbx_job_read(jobs_fd, id, &e)) == NULL) {
		if (e.kind && strcmp(e.kind, SBX_K_NOT_FOUND) == 0)
			sbx_error_set(&e, SBX_K_NOT_FOUND, "job",
			    "unknown_job", "no job %s for agent %s", id,
			    agent);
		fail(&e, e.kind && strcmp(e.kind, SBX_K_NOT_FOUND) == 0 ?
		    SBX_EX_NEGATIVE : SBX_EX_FAILED);
	}
	*jobs_fd_out = jobs_fd;
	return rec;
}

static void
print_tail(json_t *res)
{
	const char	*t = json_string_value(json_object_get(res, "log_tail"));

	if (t && *t) {
		fputs(t, stdout);
		if (t[strlen(t) - 1] != '\n')
			putchar('\n');
	}
}

static int
sub_poll(struct sbx_root *root, const char *agent)
{
	json_t	*rec, *res;
	int	 jobs_fd, alive;

	rec = load_job(root, agent, O.argv[0], &jobs_fd);
	res = json_pack("{s:s}", "job", O.argv[0]);
	job_status_fields(res, rec, &alive);
	log_tail_json(res, jobs_fd, O.argv[0], rec);
	if (O.json)
		emit(sbx_envelope_ok("exec.poll", res, NULL));
	else {
		printf("job %s: %s", O.argv[0], json_string_value(
		    json_object_get(res, "state")));
		if (json_object_get(res, "exit_code"))
			printf(" (exit %lld)", (long long)json_integer_value(
			    json_object_get(res, "exit_code")));
		putchar('\n');
		print_tail(res);
		json_decref(res);
	}
	json_decref(rec);
	return 0;
}

static int
sub_wait(struct sbx_root *root, const char *agent)
{
	struct sbx_error	 e;
	json_t			*rec, *res;
	int			 jobs_fd, alive, pidfd, code;
	double			 timeout = 300;
	long long		 deadline;
	struct pollfd		 pfd;
	const char		*id = O.argv[0];

	if (O.timeout_arg != NULL && sbx_parse_seconds(O.timeout_arg,
	    31 * 86400.0, &timeout) == -1) {
		sbx_error_set(&e, SBX_K_INVALID_ARGS, "timeout",
		    "invalid_number", "argument `timeout` must be a positive "
		    "number of seconds");
		fail(&e, SBX_EX_FAILED);
	}
	tool = "exec.wait";
	deadline = sbx_now_ms() + (long long)(timeout * 1000);
	install_signals(0);
	for (;;) {
		rec = load_job(root, agent, id, &jobs_fd);
		res = json_pack("{s:s}", "job", id);
		job_status_fields(res, rec, &alive);
		if (!alive || sbx_now_ms() >= deadline)
			break;
		/* Sleep until the supervisor exits, a signal, or 200 ms. */
		pidfd = (int)syscall(SYS_pidfd_open,
		    (pid_t)json_integer_value(json_object_get(rec, "pid")), 0);
		pfd.fd = pidfd >= 0 ? pidfd : sigpipe_fds[0];
		pfd.events = POLLIN;
		(void)poll(&pfd, 1, 200);
		if (pidfd >= 0)
			close(pidfd);
		json_decref(rec);
		json_decref(res);
		close(jobs_fd);
		{
			char c;
			if (read(sigpipe_fds[0], &c, 1) == 1)
				exit(128 + (unsigned char)c);
		}
	}
	json_object_set_new(res, "exited", json_boolean(!alive));
	json_object_set_new(res, "timed_out", json_boolean(alive));
	log_tail_json(res, jobs_fd, id, rec);
	code = alive ? SBX_EX_TIMEOUT : (int)json_integer_value(
	    json_object_get(res, "exit_code"));
	if (!alive && json_object_get(res, "exit_code") == NULL)
		code = SBX_EX_FAILED;	/* lost: no status to give */
	if (!alive && json_is_string(json_object_get(res, "limit")) &&
	    strcmp(json_string_value(json_object_get(res, "limit")),
	    "wall_time") == 0)
		code = SBX_EX_TIMEOUT;	/* as in the foreground */
	if (O.json)
		emit(sbx_envelope_ok("exec.wait", res, NULL));
	else {
		print_tail(res);
		if (alive)
			fprintf(stderr, "%s: job %s still running after %s "
			    "seconds\n", PROG, id, O.timeout_arg ?
			    O.timeout_arg : "300");
		json_decref(res);
	}
	json_decref(rec);
	return code;
}

static int
sub_kill(struct sbx_root *root, const char *agent)
{
	json_t		*rec, *res;
	int		 jobs_fd, alive, i, killed = 0;
	pid_t		 pid;
	const char	*id = O.argv[0];

	rec = load_job(root, agent, id, &jobs_fd);
	res = json_pack("{s:s}", "job", id);
	job_status_fields(res, rec, &alive);
	pid = (pid_t)json_integer_value(json_object_get(rec, "pid"));
	/* The pid is trusted only together with its start time: a
	 * recycled pid is never signalled. */
	if (alive && kill(pid, O.force ? SIGUSR1 : SIGTERM) == 0) {
		killed = 1;
		for (i = 0; i < 500 && sbx_job_alive(rec); i++)
			usleep(10000);
	}
	if (killed) {
		json_decref(rec);
		rec = load_job(root, agent, id, &jobs_fd);
		job_status_fields(res, rec, &alive);
	}
	json_object_set_new(res, "killed", json_boolean(killed));
	json_object_set_new(res, "signal", json_string(O.force ? "KILL" :
	    "TERM"));
	json_decref(rec);
	if (O.json)
		emit(sbx_envelope_ok("exec.kill", res, NULL));
	else {
		if (killed)
			printf("job %s: sent %s to the sandbox\n", id,
			    O.force ? "KILL" : "TERM");
		else
			printf("job %s: not running\n", id);
		json_decref(res);
	}
	return killed ? 0 : SBX_EX_NEGATIVE;
}

static int
cmp_started(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a,
	    "started_at"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b,
	    "started_at"));

	return strcmp(x ? x : "", y ? y : "");
}

static int
sub_ps(struct sbx_root *root, const char *agent)
{
	struct sbx_error	 e;
	DIR			*d;
	struct dirent		*de;
	json_t			*jobs = json_array(), *rec, *row, **v, *cfg;
	char			 id[SBX_JOB_LEN + 1];
	int			 jobs_fd, alive;
	size_t			 i, n = 0, pruned = 0;
	unsigned		 keep_days;
	time_t			 now = time(NULL);

	/* Finished jobs older than jobs.keep_days go, record and log, so
	 * that agents/A/jobs does not grow for ever. */
	if (sbx_config_load(root->fd, "config/sandbox.json", &cfg, &e) == -1 ||
	    sbx_joblog_keep_days(cfg, &keep_days, &e) == -1) {
		json_decref(jobs);
		fail(&e, SBX_EX_FAILED);
	}
	json_decref(cfg);
	if ((jobs_fd = jobs_dir(root, agent, 0, &e)) >= 0 &&
	    (d = fdopendir(jobs_fd)) != NULL) {
		while ((de = readdir(d)) != NULL) {
			if (strlen(de->d_name) != SBX_JOB_LEN + 5 ||
			    strcmp(de->d_name + SBX_JOB_LEN, ".json") != 0)
				continue;
			memcpy(id, de->d_name, SBX_JOB_LEN);
			id[SBX_JOB_LEN] = '\0';
			if (sbx_job_id_valid(id, &e) == -1 ||
			    (rec = sbx_job_read(dirfd(d), id, &e)) == NULL)
				continue;
			row = json_pack("{s:s}", "job", id);
			job_status_fields(row, rec, &alive);
			if (!alive && sbx_job_expired(rec, now, keep_days) &&
			    sbx_job_remove(dirfd(d), id) == 0) {
				pruned++;
				json_decref(row);
				json_decref(rec);
				continue;
			}
			json_object_set(row, "pid", json_object_get(rec, "pid"));
			json_object_set(row, "started_at",
			    json_object_get(rec, "started_at"));
			json_object_set(row, "command",
			    json_object_get(rec, "command"));
			json_object_set(row, "cwd", json_object_get(rec, "cwd"));
			json_array_append_new(jobs, row);
			json_decref(rec);
		}
		closedir(d);
	}
	n = json_array_size(jobs);
	if ((v = calloc(n + 1, sizeof(*v))) != NULL) {
		for (i = 0; i < n; i++)
			v[i] = json_incref(json_array_get(jobs, i));
		qsort(v, n, sizeof(*v), cmp_started);
		json_array_clear(jobs);
		for (i = 0; i < n; i++)
			json_array_append_new(jobs, v[i]);
		free(v);
	}
	if (O.json) {
		emit(sbx_envelope_ok("exec.ps", json_pack("{s:o,s:s,s:I}",
		    "jobs", jobs, "agent", agent, "pruned", (json_int_t)pruned),
		    NULL));
		return 0;
	}
	printf("%-16s  %-7s  %-4s  %-20s  %s\n", "JOB", "STATE", "EXIT",
	    "STARTED", "COMMAND");
	for (i = 0; i < n; i++) {
		struct sbx_buf b = SBX_BUF_INIT;
		json_t *c, *cmd;
		size_t k;
		char code[24];
		row = json_array_get(jobs, i);
		cmd = json_object_get(row, "command");
		json_array_foreach(cmd, k, c) {
			const char *s = json_string_value(c);
			if (k)
				sbx_buf_puts(&b, " ");
			if (s)
				sbx_str_escape_line(&b, s, strlen(s));
		}
		if (json_object_get(row, "exit_code"))
			snprintf(code, sizeof(code), "%lld", (long long)
			    json_integer_value(json_object_get(row,
			    "exit_code")));
		else
			snprintf(code, sizeof(code), "-");
		printf("%-16s  %-7s  %-4s  %-20s  %s\n",
		    json_string_value(json_object_get(row, "job")),
		    json_string_value(json_object_get(row, "state")), code,
		    json_string_value(json_object_get(row, "started_at")) ?
		    json_string_value(json_object_get(row, "started_at")) : "",
		    b.p ? b.p : "");
		sbx_buf_release(&b);
	}
	json_decref(jobs);
	return 0;
}

/* Reap what supervisors killed with -9 left behind: their cgroups and
 * everything still running in them. */
static int
sub_gc(void)
{
	struct sbx_error	 e;
	int			 n;

	tool = "exec.gc";
	if ((n = sbx_cgroup_gc(&e)) == -1)
		fail(&e, SBX_EX_FAILED);
	if (O.json)
		emit(sbx_envelope_ok(tool, json_pack("{s:i}", "removed_cgroups",
		    n), NULL));
	else if (!O.quiet)
		printf("removed %d stale cgroup%s\n", n, n == 1 ? "" : "s");
	return 0;
}

/* Static: what a run holds lives as long as the process (and stays
 * reachable for leak checkers until exit). */
static struct prep	 p;

int
main(int argc, char *argv[])
{
	struct sbx_error	 e;

	/* Before anything is opened: see sbx_fd_sanitize_std(). */
	if (sbx_fd_sanitize_std() == -1)
		return SBX_EX_OSERR;
	p.root.fd = -1;
	parse_args(argc, argv);
	if (O.sub == NULL && sbx_sandbox_inside()) {
		sbx_error_set(&e, SBX_K_REJECTED, NULL, "nested_sandbox",
		    "sbx is running inside an sbx sandbox; nested sandboxes "
		    "are not supported");
		sbx_error_hint(&e, "run sbx on the host; inside, the command "
		    "is already sandboxed");
		fail(&e, SBX_EX_FAILED);
	}
	if (O.sub != NULL) {
		if (strcmp(O.sub, "gc") == 0) {
			if (O.argc != 0)
				usage();
			return sub_gc();
		}
		tool = strcmp(O.sub, "ps") == 0 ? "exec.ps" :
		    strcmp(O.sub, "poll") == 0 ? "exec.poll" :
		    strcmp(O.sub, "wait") == 0 ? "exec.wait" : "exec.kill";
	}
	if (O.agent == NULL)
		O.agent = getenv("SBX_AGENT") && *getenv("SBX_AGENT") ?
		    getenv("SBX_AGENT") : "default";
	if (sbx_agent_valid(O.agent, "agent", &e) == -1)
		fail(&e, SBX_EX_FAILED);
	p.sb.agent = O.agent;
	if (sbx_root_resolve(O.home, &p.root, &e) == -1)
		fail(&e, SBX_EX_FAILED);
	if (O.sub != NULL) {
		if ((strcmp(O.sub, "ps") == 0) != (O.argc == 0))
			usage();
		if (O.argc > 1)
			usage();
		if (sbx_root_open(&p.root, 0, &e) == -1) {
			if (e.kind && strcmp(e.kind, SBX_K_NOT_FOUND) == 0 &&
			    strcmp(O.sub, "ps") == 0) {
				if (O.json)
					emit(sbx_envelope_ok(tool, json_pack(
					    "{s:[],s:s}", "jobs", "agent",
					    O.agent), NULL));
				return 0;
			}
			/* No state root yet: no job can exist. */
			if (e.kind && strcmp(e.kind, SBX_K_NOT_FOUND) == 0) {
				if (sbx_job_id_valid(O.argv[0], &e) == -1)
					fail(&e, SBX_EX_FAILED);
				sbx_error_set(&e, SBX_K_NOT_FOUND, "job",
				    "unknown_job", "no job %s for agent %s",
				    O.argv[0], O.agent);
				fail(&e, SBX_EX_NEGATIVE);
			}
			fail(&e, SBX_EX_FAILED);
		}
		if (strcmp(O.sub, "ps") == 0)
			return sub_ps(&p.root, O.agent);
		if (strcmp(O.sub, "poll") == 0)
			return sub_poll(&p.root, O.agent);
		if (strcmp(O.sub, "wait") == 0)
			return sub_wait(&p.root, O.agent);
		return sub_kill(&p.root, O.agent);
	}
	prepare(&p);
	exit(O.background ? background(&p) : foreground(&p));
}
