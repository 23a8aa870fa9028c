/*
 * initproto.h: the protocol between the run engine (lib/run.c, lib/sandbox.c)
 * and sbx-init, pid 1 of every sandbox (cmd/sbx-init.c).
 *
 * Header only, with no dependency but the C library: sbx-init is linked
 * statically on its own, never against libsbx.a.  Both sides include it, so
 * a slot, a word or a port is defined once.
 *
 * bwrap starts `SBX_INIT_PATH [-r NAME=VALUE]... [-W DEV:INO PATH]
 * [-T ROWS:COLS] [-P] [-c] -- COMMAND...`, the options in this order.
 */
#ifndef SBX_INITPROTO_H
#define SBX_INITPROTO_H

/* Descriptor slots as sbx-init finds them (the run engine dup2()s into
 * them; sbx-init closes every other one above SBX_INIT_FD_ENV). */
#define SBX_INIT_FD_STATUS	3	/* out: the status words below */
#define SBX_INIT_FD_CTL		4	/* in: the orders below; EOF = kill */
#define SBX_INIT_FD_ENV		5	/* in: NAME=VALUE\0..., sealed memfd */
#define SBX_INIT_FD_PROXY	14	/* the channel to sbx-proxy (-P) */

/* Status words, one per line on SBX_INIT_FD_STATUS, in this order:
 * "tty" (with -T, carrying the terminal's master by SCM_RIGHTS), "ready",
 * "warn nopipefail", then "running" or "exec ERRNO", then "exit CODE" or
 * "signal SIGNO". */
#define SBX_INIT_W_TTY		"tty"
#define SBX_INIT_W_READY	"ready"
#define SBX_INIT_W_NOPIPEFAIL	"warn nopipefail"
#define SBX_INIT_W_RUNNING	"running"
#define SBX_INIT_W_EXEC		"exec"		/* "exec %d": errno */
#define SBX_INIT_W_EXIT		"exit"		/* "exit %d": status */
#define SBX_INIT_W_SIGNAL	"signal"	/* "signal %d": signo */

/* Orders, one byte each on SBX_INIT_FD_CTL. */
#define SBX_INIT_O_TERM		'T'	/* SIGTERM + SIGCONT to everything */
#define SBX_INIT_O_KILL		'K'	/* SIGKILL to everything */

/* Where sbx-init listens for the proxy inside the sandbox (-P), on
 * 127.0.0.1 of the sandbox's own network namespace. */
#define SBX_INIT_PROXY_PORT	3128

/* The largest environment sbx-init reads from SBX_INIT_FD_ENV. */
#define SBX_INIT_ENV_MAX	(8u << 20)

/* Its options, in the order it reads them. */
#define SBX_INIT_OPT_RLIMIT	"-r"	/* NAME=VALUE: nofile, fsize, as */
#define SBX_INIT_OPT_WORKDIR	"-W"	/* DEV:INO PATH */
#define SBX_INIT_OPT_TTY	"-T"	/* ROWS:COLS */
#define SBX_INIT_OPT_PROXY	"-P"
#define SBX_INIT_OPT_SHELL	"-c"
/* Not pid 1: run as a command, print what the sandbox enforces. */
#define SBX_INIT_OPT_PROBE	"--probe"

/* sbx-init's path inside the sandbox. */
#define SBX_INIT_PATH		"/run/sbx/init"

#endif
