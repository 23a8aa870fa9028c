/*
 * bridge-relay: stand-in for sbx exec and sbx-init in the bridge's tests.
 *
 *	bridge-relay ROOT AGENT PATH [PLUGIN [NAME=DIGEST...]]
 *
 * Opens a session for AGENT on ROOT/run/bridge.sock, as sbx exec does
 * (with PLUGIN and the digests of the secret values its run holds, as
 * `sbx plugin run` does; names and digests are not checked here),
 * then listens on the unix socket PATH and hands every connection it
 * accepts to the bridge over the session's channel, as sbx-init does
 * inside a sandbox.  Prints "ready" once PATH listens; runs until killed
 * or until the bridge closes the session.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
send_fd(int sock, const char *msg, size_t len, int fd)
{
	char		cbuf[CMSG_SPACE(sizeof(int))];
	struct msghdr	m;
	struct iovec	iov = { (void *)msg, len };
	struct cmsghdr *cm;

	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)len ? 0 : -1;
}

static int
unix_sock(const char *path, int do_listen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int		   fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return -1;
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (do_listen) {
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
		    listen(fd, 4096) == -1)
			return -1;
	} else if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		return -1;
	return fd;
}

int
main(int argc, char *argv[])
{
	char	      path[4096], req[8192], ans[512];
	size_t	      k;
	int	      i;
	int	      ctl, sp[2], lfd, fd;
	ssize_t	      n;
	struct pollfd pfd[2];

	if (argc < 4) {
		fprintf(stderr, "usage: bridge-relay ROOT AGENT PATH "
		    "[PLUGIN [NAME=DIGEST...]]\n");
		return 64;
	}
	snprintf(path, sizeof(path), "%s/run/bridge.sock", argv[1]);
	if ((ctl = unix_sock(path, 0)) == -1) {
		fprintf(stderr, "bridge-relay: %s: %s\n", path,
		    strerror(errno));
		return 69;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return 71;
	k = (size_t)snprintf(req, sizeof(req),
	    "{\"op\":\"session\",\"agent\":\"%s\",\"run\":\"test\"",
	    argv[2]);
	if (argc > 4) {
		k += (size_t)snprintf(req + k, sizeof(req) - k,
		    ",\"plugin\":\"%s\",\"secrets\":{", argv[4]);
		for (i = 5; i < argc && k < sizeof(req); i++) {
			const char *eq = strchr(argv[i], '=');

			if (eq == NULL)
				return 64;
			k += (size_t)snprintf(req + k, sizeof(req) - k,
			    "%s\"%.*s\":\"%s\"", i > 5 ? "," : "",
			    (int)(eq - argv[i]), argv[i], eq + 1);
		}
		if (k < sizeof(req))
			k += (size_t)snprintf(req + k, sizeof(req) - k, "}");
	}
	if (k >= sizeof(req) - 3)
		return 64;
	snprintf(req + k, sizeof(req) - k, "}\n");
	if (send_fd(ctl, req, strlen(req), sp[0]) == -1)
		return 69;
	close(sp[0]);
	if ((n = read(ctl, ans, sizeof(ans) - 1)) <= 0)
		return 69;
	ans[n] = '\0';
	if (strstr(ans, "\"ok\":true") == NULL) {
		fprintf(stderr, "bridge-relay: %s", ans);
		return 69;
	}
	if ((lfd = unix_sock(argv[3], 1)) == -1) {
		fprintf(stderr, "bridge-relay: %s: %s\n", argv[3],
		    strerror(errno));
		return 71;
	}
	printf("ready\n");
	fflush(stdout);
	pfd[0].fd = lfd;
	pfd[0].events = POLLIN;
	pfd[1].fd = ctl;
	pfd[1].events = POLLIN;
	for (;;) {
		if (poll(pfd, 2, -1) == -1)
			continue;
		if (pfd[1].revents) {
			/* The bridge ended the session (EOF), or said more. */
			if ((n = read(ctl, ans, sizeof(ans))) <= 0)
				return 0;
			continue;
		}
		if ((fd = accept(lfd, NULL, NULL)) == -1)
			continue;
		if (send_fd(sp[1], "C", 1, fd) == -1)
			fprintf(stderr, "bridge-relay: channel: %s\n",
			    strerror(errno));
		close(fd);
	}
}
