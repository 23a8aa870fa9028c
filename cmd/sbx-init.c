/*
 * sbx-init: pid 1 inside every sbx sandbox.
 *
 *	sbx-init [-r NAME=VALUE]... [-W DEV:INO PATH]... [GUARD...]
 *	    [-T ROWS:COLS] [-P] [-B] -- COMMAND [ARG...]
 *	sbx-init [-r NAME=VALUE]... [-W DEV:INO PATH]... [GUARD...]
 *	    [-T ROWS:COLS] [-P] [-B] -c -- 'SHELL STRING' [NAME [ARG...]]
 *
 * GUARD (the file-system policy, cmd/init-guard*.c): -N DEV:INO:NAME (NAME
 * may not be created in that directory), -R PATH (a protected path, for
 * reports), -U (unix sockets made outside are refused), -A DEV:INO (a
 * socket that stays reachable).  Refused writes are reported on fd 3 as
 * "fsdeny PATH" and "sockdeny PATH" lines.
 *
 * -r sets a resource limit (nofile, fsize in bytes, as in bytes) for the
 * command, hard and soft, before it runs.  -W: the directory mounted at
 * PATH (the --workdir) must have this device and inode number, or the
 * command does not start.  -T: the command runs on a new terminal of the
 * sandbox's own devpts, ROWS by COLS, its session's controlling terminal;
 * the master goes to sbx over fd 3 with a "tty" line, before "ready".  -c:
 * the string is run by bash -o pipefail -c (sh -c without bash), NAME
 * and ARGs becoming $0, $1...
 *
 * Internal: started by bwrap (--as-pid-1) on behalf of sbx-exec, never by
 * people.  It receives the sandbox environment on fd 5 (so that values,
 * secrets among them, never appear in bwrap's argv or environment), reports
 * on fd 3 and takes orders on fd 4:
 *
 *	fd 3 (out, a socket): "tty\n" with the terminal's master (-T),
 *		    "ready\n" (the sandbox is set up), "warn nopipefail\n",
 *		    then "running\n" (the command was executed) or
 *		    "exec ERRNO\n" (it could not be), then "exit CODE\n" or
 *		    "signal SIGNO\n"
 *	fd 4 (in):  'T' terminate (SIGTERM + SIGCONT to everything),
 *		    'K' kill everything; end of file = sbx is gone, kill.
 *	fd 23:	    with -B, the channel to sbx-bridge, as fd 14 for the
 *		    proxy: init writes the agent's token (SBX_BRIDGE_TOKEN of
 *		    the environment) to /run/sbx/token, listens on
 *		    /run/sbx/bridge.sock (both 0600) and passes every
 *		    connection over it (cmd/init-bridge.c).
 *	fd 14:	    with -P, the channel to sbx-proxy (a SOCK_SEQPACKET
 *		    socket): init listens on 127.0.0.1:3128 in the sandbox's
 *		    network namespace before the command starts and passes
 *		    every accepted connection over it (SCM_RIGHTS).  The
 *		    command never holds the channel: only pid 1 does, and
 *		    pid 1 is not dumpable.
 *
 * As pid 1 of the sandbox's pid namespace it reaps orphans, and when the
 * command exits it exits too, which makes the kernel kill whatever the
 * command left behind: daemons, double forks and setsid() children alike.
 * Statically linked and dependent on nothing but the kernel, so that it runs
 * on any root file system image.
 *
 *	/run/sbx/init --probe
 *
 * run as a command inside a sandbox (`sbx exec -- /run/sbx/init --probe`)
 * proves what the sandbox enforces, by doing: it prints one `name value`
 * line per probe (an errno name, or a value) for sbx-preflight.
 */
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sched.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"
#include "init-int.h"

extern char **environ;

/* The arguments, in their fixed order; -r and the core limit are applied
 * on the way.  0, or the exit code. */
static int
parse(int argc, char *argv[], struct run *ir)
{
	int	 i = 1, k;

	while (i + 1 < argc && strcmp(argv[i], SBX_INIT_OPT_RLIMIT) == 0) {
		if (set_rlimit(argv[i + 1]) == -1) {
			fprintf(stderr, "sbx-init: cannot set limit %s: %s\n",
			    argv[i + 1], strerror(errno));
			return 125;
		}
		i += 2;
	}
	/*
	 * No core dumps, soft and hard limit 0, whatever was asked.  A
	 * core_pattern that pipes to a program (systemd-coredump, apport)
	 * hands the crashing process's memory, secrets and all, to a helper
	 * running as root outside every namespace; the kernel passes the
	 * limit on (%c) and those helpers store no dump at 0.  A file
	 * pattern is not written at all.  The command cannot raise a hard
	 * limit: that takes CAP_SYS_RESOURCE in the host's user namespace.
	 */
	if (setrlimit(RLIMIT_CORE, &(struct rlimit){ 0, 0 }) == -1) {
		fprintf(stderr, "sbx-init: cannot turn core dumps off: %s\n",
		    strerror(errno));
		return 125;
	}
	/* One -W per writable root. */
	while (i + 2 < argc && strcmp(argv[i], SBX_INIT_OPT_WORKDIR) == 0) {
		if (check_workdir(argv[i + 1], argv[i + 2]) == -1)
			return 125;
		i += 3;
	}
	while (i + 1 < argc ||
	    (i < argc && strcmp(argv[i], SBX_INIT_OPT_UNIX) == 0)) {
		if (strcmp(argv[i], SBX_INIT_OPT_UNIX) == 0) {
			guard_unix();
			i++;
			continue;
		}
		if (strcmp(argv[i], SBX_INIT_OPT_BLOCK) == 0)
			k = guard_add_block(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_PROTECTED) == 0)
			k = guard_add_protected(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_GITROOT) == 0)
			k = guard_add_gitroot(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_GITDIR) == 0)
			k = guard_add_gitdir(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_GITOPEN) == 0)
			k = guard_add_gitopen(argv[i + 1]);
		else if (strcmp(argv[i], SBX_INIT_OPT_SOCKET) == 0)
			k = guard_add_socket(argv[i + 1]);
		else
			break;
		if (k == -1) {
			fprintf(stderr, "sbx-init: bad %s argument %s: %s\n",
			    argv[i], argv[i + 1], strerror(errno));
			return 125;
		}
		i += 2;
	}
	if (i + 1 < argc && strcmp(argv[i], SBX_INIT_OPT_TTY) == 0) {
		ir->tty = argv[i + 1];
		i += 2;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_PROXY) == 0) {
		ir->proxy = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_BRIDGE) == 0) {
		ir->bridge = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_SESSION) == 0) {
		ir->session = 1;
		i++;
	}
	if (i < argc && strcmp(argv[i], SBX_INIT_OPT_SHELL) == 0) {
		ir->shell = 1;
		i++;
	}
	if (i >= argc || strcmp(argv[i], "--") != 0 || i + 1 >= argc) {
		fprintf(stderr, "sbx-init: usage: sbx-init [-P] [-c] -- COMMAND\n");
		return 125;
	}
	ir->cmd = argv + i + 1;
	return 0;
}

/* Descriptors, the environment, signals, the proxy listener and the
 * terminal; "ready" on success.  0, or the exit code. */
static int
setup(struct run *ir)
{
	close_others(ir->proxy, ir->bridge, ir->session);
	/*
	 * Not dumpable: code inside the sandbox runs as the same uid and
	 * could otherwise ptrace pid 1, read its memory or steal the
	 * control descriptors.
	 */
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	if ((ir->envp = read_env()) == NULL) {
		fprintf(stderr, "sbx-init: cannot read the environment\n");
		return 125;
	}
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&ir->mask);
	sigaddset(&ir->mask, SIGCHLD);
	sigaddset(&ir->mask, SIGTERM);
	sigaddset(&ir->mask, SIGINT);
	sigaddset(&ir->mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &ir->mask, NULL);
	if ((ir->sfd = signalfd(-1, &ir->mask, SFD_CLOEXEC)) == -1) {
		fprintf(stderr, "sbx-init: signalfd: %s\n", strerror(errno));
		return 125;
	}
	fcntl(FD_STATUS, F_SETFD, FD_CLOEXEC);
	fcntl(FD_CTL, F_SETFD, FD_CLOEXEC);
	/* Fail closed: proxy mode without its relay does not run. */
	if (ir->proxy && ((ir->lfd = proxy_listen()) == -1 ||
	    socks_listen() == -1)) {
		fprintf(stderr, "sbx-init: cannot listen on 127.0.0.1:%d for "
		    "the proxy: %s\n", ir->lfd == -1 ? PROXY_PORT : SOCKS_PORT,
		    strerror(errno));
		return 125;
	}
	/* Fail closed as well: the bridge asked for, but not served. */
	if (ir->bridge && (ir->blfd = bridge_listen(ir->envp)) == -1) {
		fprintf(stderr, "sbx-init: cannot serve the bridge at %s: %s\n",
		    SBX_INIT_BRIDGE_SOCK, strerror(errno));
		return 125;
	}
	if (ir->tty != NULL && (ir->tfd = open_tty(ir->tty)) == -1)
		return 125;
	/* The supervisor's channel is pid 1's alone, like the others. */
	if (ir->session && fcntl(FD_SESSION, F_SETFD, FD_CLOEXEC) == -1) {
		fprintf(stderr, "sbx-init: no session channel: %s\n",
		    strerror(errno));
		return 125;
	}
	report(SBX_INIT_W_READY "\n");
	return 0;
}

/* -c: the string, then $0 and the arguments, if any, for bash -o
 * pipefail -c (sh -c without bash).  0, or the exit code. */
int
shell_argv(struct run *ir, int argc)
{
	char	**shargv, **cmd = ir->cmd;
	int	  k = 0;

	if ((shargv = calloc((size_t)argc + 5, sizeof(*shargv))) == NULL) {
		report(SBX_INIT_W_EXEC " %d\n", ENOMEM);
		return 126;
	}
	if (access("/bin/bash", X_OK) == 0) {
		shargv[k++] = "bash";
		shargv[k++] = "-o";
		shargv[k++] = "pipefail";
	} else {
		report(SBX_INIT_W_NOPIPEFAIL "\n");
		shargv[k++] = "sh";
	}
	shargv[k++] = "-c";
	while (*cmd != NULL)
		shargv[k++] = *cmd++;
	shargv[k] = NULL;
	ir->cmd = shargv;
	return 0;
}

/* In the child: the guard, the terminal, then the command.  A failure
 * goes to pid 1 as an errno on the close-on-exec pipe ep. */
static void __attribute__((noreturn))
child_exec(struct run *ir, int ep, int gsock)
{
	int	 err;

	sigprocmask(SIG_UNBLOCK, &ir->mask, NULL);
	signal(SIGPIPE, SIG_DFL);
	/*
	 * The file-system guard: from here on, every call of the
	 * command that creates a name is pid 1's to check and do
	 * (cmd/init-guard*.c).  Fail closed: no guard, no command.
	 * Without one (gsock -1), the filter only refuses pidfd_getfd,
	 * which sbx's own filter leaves to pid 1.
	 */
	if (guard_install(gsock) == -1) {
		err = errno;
		(void)!write(ep, &err, sizeof(err));
		_exit(126);
	}
	/*
	 * -T: a session of its own with the terminal as controlling
	 * terminal and as stdin, stdout and stderr, so that job
	 * control works (the shell's ^Z, ^C reach its foreground
	 * group).  TIOCSTI on it stays denied by the filter.
	 */
	if (ir->tfd >= 0 && (setsid() == -1 ||
	    ioctl(ir->tfd, TIOCSCTTY, 0) == -1 || dup2(ir->tfd, 0) == -1 ||
	    dup2(ir->tfd, 1) == -1 || dup2(ir->tfd, 2) == -1)) {
		err = errno;
		(void)!write(ep, &err, sizeof(err));
		_exit(126);
	}
	if (ir->tfd > 2)
		close(ir->tfd);
	environ = ir->envp;
	execvp(ir->cmd[0], ir->cmd);
	err = errno;
	(void)!write(ep, &err, sizeof(err));
	_exit(err == ENOENT ? 127 : 126);
}

/* Fork the command; "running" or "exec ERRNO".  0, or the exit code. */
static int
start(struct run *ir)
{
	int	 ep[2], gp[2] = { -1, -1 }, err = 0;
	ssize_t	 r;

	/* A close-on-exec pipe tells whether the exec happened: EOF means
	 * it did, an errno means it did not. */
	if (pipe2(ep, O_CLOEXEC) == -1 || (guard_active() &&
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, gp) == -1) ||
	    (ir->child = fork()) == -1) {
		report(SBX_INIT_W_EXEC " %d\n", errno);
		return 126;
	}
	if (ir->child == 0) {
		if (gp[1] >= 0)
			close(gp[0]);
		child_exec(ir, ep[1], gp[1]);
	}
	close(ep[1]);
	if (gp[0] >= 0) {
		close(gp[1]);
		ir->gfd = guard_receive(gp[0], ir->child);
		close(gp[0]);
	}
	/* Only the command holds the terminal: when it and what it started
	 * are gone, sbx reads the end of it. */
	if (ir->tfd >= 0)
		close(ir->tfd);
	while ((r = read(ep[0], &err, sizeof(err))) == -1 && errno == EINTR)
		;
	close(ep[0]);
	if (r == (ssize_t)sizeof(err))
		report(SBX_INIT_W_EXEC " %d\n", err);
	else
		report(SBX_INIT_W_RUNNING "\n");
	return 0;
}

/* An order from sbx on fd 4 (a session's too: its engine's); end of
 * file: sbx is gone, nobody is left to supervise this sandbox. */
void
ctl_order(void)
{
	ssize_t	 r;
	char	 c;

	r = read(FD_CTL, &c, 1);
	if (r == 1 && c == SBX_INIT_O_TERM) {
		kill(-1, SIGTERM);
		kill(-1, SIGCONT);
	} else if (r == 1 && c == SBX_INIT_O_KILL) {
		kill(-1, SIGKILL);
	} else if (r == 0 || (r == -1 && errno != EINTR)) {
		kill(-1, SIGKILL);
		_exit(125);
	}
}

/* Reap; when the command is done, so is everything it started. */
static void
reap(struct run *ir)
{
	int	 status;
	pid_t	 pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid != ir->child)
			continue;
		kill(-1, SIGKILL);
		if (WIFSIGNALED(status)) {
			report(SBX_INIT_W_SIGNAL " %d\n", WTERMSIG(status));
			_exit(128 + WTERMSIG(status));
		}
		report(SBX_INIT_W_EXIT " %d\n", WEXITSTATUS(status));
		_exit(WEXITSTATUS(status));
	}
}

/* pid 1's loop: signals, orders, proxy connections, guard notifications. */
static int
supervise(struct run *ir)
{
	struct signalfd_siginfo	 si;
	struct pollfd		 pfd[8];

	pfd[0].fd = ir->sfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = FD_CTL;
	pfd[1].events = POLLIN;
	pfd[2].events = POLLIN;
	pfd[3].events = POLLOUT;
	pfd[4].fd = ir->gfd;
	pfd[4].events = POLLIN;
	pfd[5].events = POLLIN;
	pfd[6].events = POLLOUT;
	pfd[7].events = POLLIN;
	for (;;) {
		/* Accept, or wait for room in the channel. */
		pfd[2].fd = ir->lfd >= 0 && held < 0 ? ir->lfd : -1;
		pfd[3].fd = ir->lfd >= 0 && held >= 0 ? FD_PROXY : -1;
		pfd[5].fd = ir->blfd >= 0 && !bridge_held() ? ir->blfd : -1;
		pfd[6].fd = ir->blfd >= 0 && bridge_held() ? FD_BRIDGE : -1;
		pfd[7].fd = socks_lfd >= 0 && held < 0 ? socks_lfd : -1;
		if (poll(pfd, 8, -1) == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[4].fd >= 0 && (pfd[4].revents & POLLIN))
			guard_serve(ir->gfd, FD_STATUS);
		if (pfd[4].fd >= 0 && (pfd[4].revents & (POLLHUP | POLLERR |
		    POLLNVAL)) && !(pfd[4].revents & POLLIN))
			pfd[4].fd = -1;
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR))
			ctl_order();
		if ((pfd[2].fd >= 0 && (pfd[2].revents & POLLIN)) ||
		    (pfd[3].fd >= 0 && (pfd[3].revents & (POLLOUT | POLLERR |
		    POLLHUP))))
			(void)proxy_accept(ir->lfd);
		if (pfd[7].fd >= 0 && (pfd[7].revents & POLLIN) && held < 0)
			(void)socks_accept();
		if ((pfd[5].fd >= 0 && (pfd[5].revents & POLLIN)) ||
		    (pfd[6].fd >= 0 &&
			(pfd[6].revents & (POLLOUT | POLLERR | POLLHUP))))
			(void)bridge_accept(ir->blfd);
		if (!(pfd[0].revents & POLLIN))
			continue;
		if (read(ir->sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo != SIGCHLD)
			continue;	/* pid 1 outlives its own signals */
		reap(ir);
	}
	kill(-1, SIGKILL);
	return 125;
}

int
main(int argc, char *argv[])
{
	struct run	 ir = { .sfd = -1,
		      .lfd = -1,
		      .blfd = -1,
		      .tfd = -1,
		      .gfd = -1 };
	int		 rc;

	if (getpid() != 1 && argc == 2 &&
	    strcmp(argv[1], SBX_INIT_OPT_PROBE) == 0)
		return probe();
	if (getpid() != 1) {
		fprintf(stderr, "sbx-init: internal helper of sbx-exec; "
		    "not to be run directly\n");
		return 125;
	}
	/*
	 * Started from its descriptor (/proc/self/fd/N, see sandbox.c):
	 * named SBX_IN_INIT in /proc/1/cmdline all the same, in place
	 * (the name is shorter), as sbx's check for a nested run expects,
	 * and "init" in ps and top (the kernel named it "N").
	 */
	if (strncmp(argv[0], "/proc/self/fd/", 14) == 0 &&
	    strlen(argv[0]) >= sizeof(SBX_INIT_PATH) - 1) {
		size_t n = strlen(argv[0]);

		memset(argv[0], 0, n);
		memcpy(argv[0], SBX_INIT_PATH, sizeof(SBX_INIT_PATH) - 1);
		(void)prctl(PR_SET_NAME, "init", 0, 0, 0);
	}
	if ((rc = parse(argc, argv, &ir)) != 0 || (rc = setup(&ir)) != 0)
		return rc;
	if (ir.session)
		return session_main(&ir);
	if (ir.shell && (rc = shell_argv(&ir, argc)) != 0)
		return rc;
	if ((rc = start(&ir)) != 0)
		return rc;
	return supervise(&ir);
}
