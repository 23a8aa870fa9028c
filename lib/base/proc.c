/* proc.c: what the kernel says of a process (/proc/PID/stat). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc.h"

int
sbx_proc_stat(pid_t pid, struct sbx_proc_stat *ps)
{
	char			 path[64], buf[1024], *p, *end;
	int			 fd, i, saved;
	ssize_t			 n;

	snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while ((n = read(fd, buf, sizeof(buf) - 1)) == -1 && errno == EINTR)
		;
	saved = errno;
	close(fd);
	if (n <= 0) {
		/* ESRCH: it went away between open and read. */
		errno = n == 0 ? ENOENT : saved;
		return -1;
	}
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and parentheses: fields 3 on start
	 * after the last ')'. */
	if ((p = strrchr(buf, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		goto bad;
	ps->state = p[2];
	p += 2;
	for (i = 3; i < 22; i++) {
		if ((p = strchr(p, ' ')) == NULL)
			goto bad;
		p++;
	}
	errno = 0;
	ps->start = strtoull(p, &end, 10);
	if (errno != 0 || end == p || (*end != ' ' && *end != '\n' &&
	    *end != '\0'))
		goto bad;
	return 0;
bad:
	errno = EPROTO;
	return -1;
}

int
sbx_proc_running(pid_t pid, unsigned long long want)
{
	struct sbx_proc_stat	 ps;

	if (pid <= 0)
		return 0;
	/* The kernel has no such process: gone (EPERM means there is one,
	 * another user's). */
	if (kill(pid, 0) == -1 && errno == ESRCH)
		return 0;
	if (sbx_proc_stat(pid, &ps) == -1)
		return 1;
	/* kill(pid, 0) succeeds on a zombie: a supervisor killed with -9
	 * whose parent has not reaped it yet is dead all the same. */
	if (ps.state == 'Z' || ps.state == 'X')
		return 0;
	/* Another process has the pid by now. */
	if (want != 0 && ps.start != want)
		return 0;
	return 1;
}
