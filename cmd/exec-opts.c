/*
 * sbx exec's option table (see cmd/exec-opts.h), its usage and the prose
 * of its --help: getopt_long, --help and --complete-options come from it
 * (lib/base/opts.c).  Linked into sbx-exec and the front-end.
 */
#include <stddef.h>

#include "exec-opts.h"
#include "netmode.h"

const char exec_usage_text[] =
"usage: sbx exec [--agent A] [--home DIR] [--cwd PATH] [--workdir DIR]...\n"
"                [--workdir-follow-symlinks] [--ro PATH]... [--host-view]\n"
"                [--unprotect PATH]...\n"
"                [--env NAME=VALUE]... [--timeout SECONDS] [--tty]\n"
"                [--secret NAME]... [--no-secrets]\n"
"                [--network none|proxy|outbound] [--allow-domain D]...\n"
"                [--ask] [--json] [--max-output BYTES] [--stdin inherit|null]\n"
"                [--memory MIB] [--cpus N.N] [--pids N] [--disk MIB]\n"
"                [--wall-timeout SECONDS] [--nofile N] [--file-size MIB]\n"
"                [--soft-limits] [--hard-limits] [--disk-tmp]\n"
"                [--seccomp on|off]\n"
"                [--fail-on-violation] [--background] [--envelope-fd N]\n"
"                [--session NAME]\n"
"                [-q] [-v]\n"
"                -- COMMAND [ARG...]\n"
"       sbx exec [options] -c 'SHELL STRING' [NAME [ARG...]]\n"
"       sbx exec --request FILE|- [--home DIR] [--json] [--envelope-fd N]\n"
"       sbx exec ps [--agent A] [--home DIR] [--json] [-q] [-v]\n"
"       sbx exec poll JOB [--tail-lines N] [--agent A] [--home DIR] [--json]\n"
"                [-q] [-v]\n"
"       sbx exec wait JOB [--timeout SECONDS] [--tail-lines N] [--agent A]\n"
"                [--home DIR] [--json] [-q] [-v]\n"
"       sbx exec kill JOB [--force] [--agent A] [--home DIR] [--json] [-q]\n"
"                [-v]\n"
"       sbx exec gc [--home DIR] [--json] [-q] [-v]\n";

const char exec_help_text[] =
"\n"
"Run COMMAND in the agent's sandbox: every namespace unshared, system\n"
"directories read-only, HOME=/workspace/agents/AGENT, private /tmp, no\n"
"network unless asked. Without --json the command's output streams\n"
"through and sbx exits with its status (124 idle timeout, 125 sbx failed,\n"
"126 cannot execute, 127 not found, 128+N killed by signal N).\n"
"\n";

static const struct sbx_opts_sub subs[] = {
	{ "ps", S_PS, NULL }, { "poll", S_POLL, "@job" },
	{ "wait", S_WAIT, "@job" }, { "kill", S_KILL, "@job" },
	{ "gc", S_GC, NULL },
};

/* The one option table (opts.h): getopt_long, --help and
 * --complete-options come from it. */
static const struct sbx_opt rows[] = {
	{ 'a', "agent", 'a', SBX_OPT_REQ, "A", "@agent",
	    "agent name (default: $SBX_AGENT or \"default\")",
	    S_RUN | S_JOB, 0 },
	SBX_OPT_ROW_HOME(OPT_HOME, S_RUN | S_JOB | S_GC),
	{ 'C', "cwd", 'C', SBX_OPT_REQ, "PATH", "@cwd",
	    "start in PATH: relative to HOME, or absolute inside\n"
	    "HOME or --workdir", S_RUN, 0 },
	{ 'w', "workdir", 'w', SBX_OPT_REQ, "DIR", "@dir",
	    "bind host directory DIR read-write at its own path\n"
	    "and start there (no symbolic links in DIR);\n"
	    "repeatable: more writable roots, the first is\n"
	    "the default cwd", S_RUN, 0 },
	{ OPT_WORKDIR_FOLLOW, "workdir-follow-symlinks", 0, SBX_OPT_NONE,
	    NULL, NULL,
	    "follow symbolic links in DIR; print where it leads", S_RUN, 0 },
	{ OPT_RO, "ro", 0, SBX_OPT_REQ, "PATH", "@dir",
	    "bind host PATH read-only at its own path\n"
	    "(repeatable; see PROTECTED PATHS in sbx-exec(1))", S_RUN, 0 },
	{ OPT_HOST_VIEW, "host-view", 0, SBX_OPT_NONE, NULL, NULL,
	    "show the host's file system read-only (sbx srt),\n"
	    "minus the agent's deny_paths and the state root", S_RUN, 0 },
	{ OPT_UNPROTECT, "unprotect", 0, SBX_OPT_REQ, "PATH", "@file",
	    "let this run write the protected PATH of the\n"
	    "workdir (.git/hooks...; a warning says so)", S_RUN, 0 },
	{ 'e', "env", 'e', SBX_OPT_REQ, "NAME=VALUE", NULL,
	    "set a variable inside (repeatable)", S_RUN, 0 },
	{ OPT_SECRET, "secret", 0, SBX_OPT_REQ, "NAME", "@text",
	    "give the command only these of the agent's\n"
	    "secrets (repeatable; default: all of them)", S_RUN, 0 },
	{ OPT_NO_SECRETS, "no-secrets", 0, SBX_OPT_NONE, NULL, NULL,
	    "give the command none of the agent's secrets", S_RUN, 0 },
	{ OPT_TIMEOUT, "timeout", 't', SBX_OPT_REQ, "SECONDS", NULL,
	    "kill the command after SECONDS without output\n"
	    "(output a program buffers counts as silence);\n"
	    "wait: how long to wait (default 300; -t SECONDS)",
	    S_RUN | S_WAIT, S_WAIT },
	{ 't', "tty", 't', SBX_OPT_NONE, NULL, NULL,
	    "run the command on a terminal of its own (stdout\n"
	    "and stderr merged; the caller's terminal goes raw)", S_RUN, 0 },
	{ 'n', "network", 'n', SBX_OPT_REQ, "MODE", SBX_NETMODE_CHOICES,
	    "none (default: loopback only), proxy (only the\n"
	    "agent's allowed domains, through sbx-proxy) or\n"
	    "outbound (host network); default: the agent's\n"
	    "`network` setting, else none", S_RUN, 0 },
	{ OPT_ALLOW, "allow-domain", 0, SBX_OPT_REQ, "D", NULL,
	    "proxy mode: also allow D (or *.D) for this run", S_RUN, 0 },
	{ OPT_ASK, "ask", 0, SBX_OPT_NONE, NULL, NULL,
	    "proxy mode: hold a request for a name no rule\n"
	    "decides and ask (sbx proxy asks, answer)", S_RUN, 0 },
	{ 'c', NULL, 'c', SBX_OPT_REQ, "STRING", NULL,
	    "run STRING with bash -o pipefail -c (sh -c without\n"
	    "bash); NAME and ARGs after it are $0, $1...", S_RUN, 0 },
	{ OPT_MAX_OUTPUT, "max-output", 0, SBX_OPT_REQ, "BYTES", NULL,
	    "captured bytes kept per stream with --json\n"
	    "(default 1M; K, M, G suffixes)", S_RUN, 0 },
	{ OPT_STDIN, "stdin", 0, SBX_OPT_REQ, "MODE", "inherit|null",
	    "inherit (the caller's stdin) or null (/dev/null);\n"
	    "default: null when stdin is a terminal and --json\n"
	    "is given, else inherit (background: always null)", S_RUN, 0 },
	{ OPT_MEMORY, "memory", 0, SBX_OPT_REQ, "MIB", NULL,
	    "memory limit in MiB, or with a unit (512m, 1g),\n"
	    "swap included (default: half of RAM)", S_RUN, 0 },
	{ OPT_CPUS, "cpus", 0, SBX_OPT_REQ, "N.N", NULL,
	    "CPU limit in cores (e.g. 0.5)", S_RUN, 0 },
	{ OPT_PIDS, "pids", 0, SBX_OPT_REQ, "N", NULL,
	    "task limit (default 1024)", S_RUN, 0 },
	{ OPT_DISK, "disk", 0, SBX_OPT_REQ, "MIB", NULL,
	    "size of /tmp and largest file written (soft;\n"
	    "MiB, or 512m, 1g); hard with the agent's disk\n"
	    "image (sbx provision --disk-image)", S_RUN, 0 },
	{ OPT_WALL, "wall-timeout", 0, SBX_OPT_REQ, "S", NULL,
	    "kill the sandbox after S seconds, output or not", S_RUN, 0 },
	{ OPT_NOFILE, "nofile", 0, SBX_OPT_REQ, "N", NULL,
	    "open files limit (RLIMIT_NOFILE)", S_RUN, 0 },
	{ OPT_FSIZE, "file-size", 0, SBX_OPT_REQ, "MIB", NULL,
	    "largest file the command may write (RLIMIT_FSIZE)", S_RUN, 0 },
	{ OPT_SOFT, "soft-limits", 0, SBX_OPT_NONE, NULL, NULL,
	    "accept rlimits where no cgroup can enforce a limit", S_RUN, 0 },
	{ OPT_HARD, "hard-limits", 0, SBX_OPT_NONE, NULL, NULL,
	    "refuse to run unless the disk limit is hard (the\n"
	    "agent's disk image or a project quota)", S_RUN, 0 },
	{ OPT_DISK_TMP, "disk-tmp", 0, SBX_OPT_NONE, NULL, NULL,
	    "count /tmp and /dev/shm in the agent's disk image\n"
	    "(directories of it, removed after the run)", S_RUN, 0 },
	{ OPT_SECCOMP, "seccomp", 0, SBX_OPT_REQ, "MODE", "on|off",
	    "on (default) or off (diagnosis only)", S_RUN, 0 },
	{ OPT_FAIL_ON_VIOLATION, "fail-on-violation", 0, SBX_OPT_NONE, NULL,
	    NULL,
	    "a network or file-system violation fails the run:\n"
	    "a rejected envelope, the command's status if it\n"
	    "failed, else 77 (default: the agent's\n"
	    "fail_on_violation setting)", S_RUN, 0 },
	{ OPT_SESSION, "session", 0, SBX_OPT_REQ, "NAME", NULL,
	    "run in the warm session NAME (sbx session start):\n"
	    "its sandbox and policy, a fresh process", S_RUN, 0 },
	{ 'b', "background", 'b', SBX_OPT_NONE, NULL, NULL,
	    "start as a background job and return at once", S_RUN, 0 },
	{ OPT_REQUEST, "request", 0, SBX_OPT_REQ, "FILE", "@file",
	    "take the run's options from a request envelope\n"
	    "(JSON; - reads standard input)", S_RUN, 0 },
	{ OPT_ENVELOPE_FD, "envelope-fd", 0, SBX_OPT_REQ, "N", NULL,
	    "stream the output through and write the result\n"
	    "envelope to file descriptor N", S_RUN, 0 },
	{ OPT_TAIL, "tail-lines", 0, SBX_OPT_REQ, "N", NULL,
	    "lines of log returned by poll and wait (default 20)",
	    S_POLL | S_WAIT, 0 },
	{ OPT_FORCE, "force", 0, SBX_OPT_NONE, NULL, NULL,
	    "kill: SIGKILL at once instead of SIGTERM", S_KILL, 0 },
	SBX_OPT_ROW_JSON(S_ALL),
	{ 'q', "quiet", 'q', SBX_OPT_NONE, NULL, NULL,
	    "no warnings on stderr", S_ALL, 0 },
	{ 'v', "verbose", 'v', SBX_OPT_NONE, NULL, NULL,
	    "show the bwrap command on stderr", S_ALL, 0 },
	SBX_OPT_ROW_HELP(S_ALL),
	SBX_OPT_ROW_VERSION(OPT_VERSION, S_RUN),
};

const struct sbx_opts exec_table = { "sbx-exec", "sbx exec", rows,
	SBX_OPTS_N(rows), subs, SBX_OPTS_N(subs), S_RUN, "@command", 25,
	S_RUN };
