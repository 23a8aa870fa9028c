/*
 * init-bridge.c: sbx-init's side of the bridge (-B).
 *
 * Before the command starts, pid 1 writes the agent's token to
 * /run/sbx/token and listens on /run/sbx/bridge.sock (both 0600, in the
 * tmpfs bwrap mounted at /run/sbx); every connection it accepts goes to
 * sbx-bridge over the channel on fd 23, as the proxy's do over fd 14.
 * The command never holds the channel, so it can neither forge a session
 * nor reach the host's socket: the identity of what arrives on the
 * channel is the session sbx exec opened for this agent.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "init-int.h"

static int bheld = -1;

/* The token file, from SBX_BRIDGE_TOKEN of the command's environment. */
static int
write_token(char **envp)
{
	const char *t = NULL;
	size_t	    n;
	int	    fd, rc;

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, "SBX_BRIDGE_TOKEN=", 17) == 0)
			t = *envp + 17;
	if (t == NULL || *t == '\0') {
		errno = ENOENT;
		return -1;
	}
	fd = open(SBX_INIT_BRIDGE_TOKEN,
	    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1)
		return -1;
	n = strlen(t);
	rc = write(fd, t, n) == (ssize_t)n && write(fd, "\n", 1) == 1 ? 0 : -1;
	close(fd);
	return rc;
}

int
bridge_listen(char **envp)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	mode_t		   old;
	int		   fd;

	if (fcntl(FD_BRIDGE, F_SETFD, FD_CLOEXEC) == -1)
		return -1;
	if (write_token(envp) == -1)
		return -1;
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
		 0)) == -1)
		return -1;
	strcpy(sun.sun_path, SBX_INIT_BRIDGE_SOCK);
	/* 0600: the sandbox's own uid, which is the command's. */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 4096) == -1) {
		umask(old);
		close(fd);
		return -1;
	}
	umask(old);
	return fd;
}

int
bridge_accept(int lfd)
{
	return relay_accept(lfd, FD_BRIDGE, &bheld);
}

int
bridge_held(void)
{
	return bheld >= 0;
}
