/*
 * proxy-bench: the loopback server and the clients of
 * scripts/bench-proxy.sh.
 *
 *   proxy-bench serve BYTES
 *	Listen on 127.0.0.1 (a free port, printed alone on a line on
 *	standard output, which is then closed) and serve each connection
 *	by its first bytes: "GET " gets a small HTTP response, "STREAM"
 *	gets BYTES zero bytes and the connection closed, "HOLD" is kept
 *	open until the client closes it.  Single-threaded (epoll); exits on
 *	SIGTERM.
 *   proxy-bench stream [-x] HOST:PORT
 *	Read one STREAM to its end: directly from 127.0.0.1:PORT, or with
 *	-x through the proxy (CONNECT HOST:PORT on 127.0.0.1:3128 with the
 *	credentials of $HTTP_PROXY).  Prints "BYTES SECONDS".
 *   proxy-bench http N PAR HOST:PORT
 *	N small plain-HTTP requests through the proxy, PAR at a time (one
 *	process each); prints "N OK SECONDS".
 *   proxy-bench parent
 *	A minimal parent proxy for scripts/bench-proxy-upstream.sh: listen
 *	on 127.0.0.1 (port printed as for serve), and for each connection
 *	(a process each) read a CONNECT head, dial 127.0.0.1 on its port
 *	(every name is this machine's), answer 200 and splice both ways.
 *   proxy-bench hold N HOST:PORT SECONDS
 *	Open N tunnels through the proxy, one after the other, and keep
 *	them for SECONDS; then make one more request.  Prints
 *	"opened K held J request_ms M status S".
 *
 * Built statically and without sbx's library (tests/helpers/ rule): it
 * runs inside the sandbox, copied into the agent's home.
 */
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK	   (1 << 20)
#define PROXY_PORT 3128
#define MAX_CONNS  65536

static char auth[512]; /* "Proxy-Authorization: Basic ...\r\n" */

static void
usage(void)
{
	fprintf(stderr,
	    "usage: proxy-bench serve BYTES\n"
	    "       proxy-bench stream [-x] HOST:PORT\n"
	    "       proxy-bench http N PAR HOST:PORT\n"
	    "       proxy-bench hold N HOST:PORT SECONDS\n");
	exit(64);
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void
b64(const unsigned char *in, size_t n, char *out, size_t outsz)
{
	static const char t[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;

	for (i = 0; i < n && o + 5 < outsz; i += 3) {
		unsigned v = (unsigned)in[i] << 16;

		if (i + 1 < n)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < n)
			v |= in[i + 2];
		out[o++] = t[(v >> 18) & 63];
		out[o++] = t[(v >> 12) & 63];
		out[o++] = i + 1 < n ? t[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? t[v & 63] : '=';
	}
	out[o] = '\0';
}

/* The credentials of http://USER:TOKEN@HOST:PORT in $HTTP_PROXY. */
static void
load_auth(void)
{
	const char *u = getenv("HTTP_PROXY"), *p, *at;
	char	    enc[400];

	if (u == NULL || (p = strstr(u, "://")) == NULL ||
	    (at = strrchr(p + 3, '@')) == NULL || at - (p + 3) > 290) {
		fprintf(stderr, "proxy-bench: no credentials in HTTP_PROXY\n");
		exit(69);
	}
	b64((const unsigned char *)p + 3, (size_t)(at - (p + 3)), enc,
	    sizeof(enc));
	snprintf(auth, sizeof(auth), "Proxy-Authorization: Basic %s\r\n", enc);
}

static int
dial(unsigned port)
{
	struct sockaddr_in sin;
	int		   fd, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		close(fd);
		return -1;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

static int
write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read a response head (up to the blank line); its status, or -1. */
static int
read_head(int fd)
{
	char   buf[4096];
	size_t n = 0;
	int    st;

	while (n < sizeof(buf) - 1) {
		ssize_t r = read(fd, buf + n, 1);

		if (r <= 0)
			return -1;
		n++;
		buf[n] = '\0';
		if (n >= 4 && memcmp(buf + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	if (sscanf(buf, "HTTP/1.%*c %d", &st) != 1)
		return -1;
	return st;
}

/* A tunnel to target through the proxy: the fd after a 200, or -1. */
static int
tunnel(const char *target, int *status)
{
	char req[1024];
	int  fd, n;

	*status = -1;
	if ((fd = dial(PROXY_PORT)) == -1)
		return -1;
	n = snprintf(req, sizeof(req),
	    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target, auth);
	if (write_all(fd, req, (size_t)n) == -1 ||
	    (*status = read_head(fd)) != 200) {
		close(fd);
		return -1;
	}
	return fd;
}

/* One GET through the proxy; the status, or -1. */
static int
http_once(const char *target)
{
	char req[1024], buf[4096];
	int  fd, n, st;

	if ((fd = dial(PROXY_PORT)) == -1)
		return -1;
	n = snprintf(req, sizeof(req),
	    "GET http://%s/ HTTP/1.1\r\nHost: %s\r\n%s\r\n", target, target,
	    auth);
	if (write_all(fd, req, (size_t)n) == -1) {
		close(fd);
		return -1;
	}
	st = read_head(fd);
	while (read(fd, buf, sizeof(buf)) > 0)
		;
	close(fd);
	return st;
}

/* ---- serve ------------------------------------------------------------ */

struct sconn {
	int		   fd;
	int		   mode; /* 0 reading, 1 streaming, 2 holding */
	unsigned long long left;
};

static volatile sig_atomic_t stop;

static void
on_term(int sig)
{
	(void)sig;
	stop = 1;
}

static void
sclose(int ep, struct sconn *c)
{
	epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c);
}

static int
serve(unsigned long long bytes)
{
	static const char  resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
				    "Connection: close\r\n\r\nok\n";
	struct sockaddr_in sin;
	struct epoll_event ev, evs[256];
	struct sigaction   sa;
	socklen_t	   sl = sizeof(sin);
	static char	   zeros[CHUNK];
	int		   lfd, ep, n, i, one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (lfd == -1 || bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) ||
	    listen(lfd, 4096) ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl)) {
		perror("proxy-bench: listen");
		return 71;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	printf("%u\n", (unsigned)ntohs(sin.sin_port));
	fclose(stdout);

	ep = epoll_create1(EPOLL_CLOEXEC);
	ev.events = EPOLLIN;
	ev.data.ptr = NULL;
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	while (!stop) {
		n = epoll_wait(ep, evs, 256, -1);
		for (i = 0; i < n; i++) {
			struct sconn *c = evs[i].data.ptr;
			char	      buf[4096];
			ssize_t	      r;

			if (c == NULL) {
				int fd;

				while (
				    (fd = accept4(lfd, NULL, NULL,
					 SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
					c = calloc(1, sizeof(*c));
					if (c == NULL) {
						close(fd);
						continue;
					}
					c->fd = fd;
					ev.events = EPOLLIN;
					ev.data.ptr = c;
					epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
				}
				continue;
			}
			if (c->mode == 1) {
				size_t want = c->left < CHUNK ? c->left : CHUNK;
				ssize_t w = write(c->fd, zeros, want);

				if (w < 0 && errno != EAGAIN &&
				    errno != EINTR) {
					sclose(ep, c);
					continue;
				}
				if (w > 0)
					c->left -= (unsigned long long)w;
				if (c->left == 0)
					sclose(ep, c);
				continue;
			}
			r = read(c->fd, buf, sizeof(buf));
			if (r <= 0) {
				if (r < 0 &&
				    (errno == EAGAIN || errno == EINTR))
					continue;
				sclose(ep, c);
				continue;
			}
			if (c->mode == 2)
				continue;
			if (r >= 4 && memcmp(buf, "GET ", 4) == 0) {
				(void)!write(c->fd, resp, sizeof(resp) - 1);
				sclose(ep, c);
			} else if (r >= 6 && memcmp(buf, "STREAM", 6) == 0) {
				c->mode = 1;
				c->left = bytes;
				ev.events = EPOLLOUT;
				ev.data.ptr = c;
				epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
			} else if (r >= 4 && memcmp(buf, "HOLD", 4) == 0) {
				c->mode = 2;
			} else {
				sclose(ep, c);
			}
		}
	}
	return 0;
}

/* ---- clients ---------------------------------------------------------- */

static int
stream(int via_proxy, const char *target)
{
	static char	   buf[CHUNK];
	const char	  *colon = strrchr(target, ':');
	unsigned long long total = 0;
	double		   t0;
	ssize_t		   r;
	int		   fd, st;

	if (colon == NULL)
		usage();
	t0 = now();
	if (via_proxy) {
		load_auth();
		fd = tunnel(target, &st);
	} else
		fd = dial((unsigned)strtoul(colon + 1, NULL, 10));
	if (fd == -1) {
		fprintf(stderr, "proxy-bench: cannot connect\n");
		return 69;
	}
	if (write_all(fd, "STREAM\n", 7) == -1)
		return 71;
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		total += (unsigned long long)r;
	printf("%llu %.6f\n", total, now() - t0);
	close(fd);
	return 0;
}

static int
http(int n, int par, const char *target)
{
	double t0 = now();
	int    p, ok = 0, per, pipes[2];

	load_auth();
	if (par < 1 || n < 1 || pipe(pipes) == -1)
		usage();
	per = n / par;
	for (p = 0; p < par; p++) {
		pid_t pid = fork();

		if (pid == 0) {
			int i, mine = 0, cnt = per + (p < n % par);

			close(pipes[0]);
			for (i = 0; i < cnt; i++)
				if (http_once(target) == 200)
					mine++;
			(void)!write(pipes[1], &mine, sizeof(mine));
			_exit(0);
		}
	}
	close(pipes[1]);
	for (p = 0; p < par; p++) {
		int mine;

		if (read(pipes[0], &mine, sizeof(mine)) == sizeof(mine))
			ok += mine;
	}
	while (wait(NULL) > 0)
		;
	printf("%d %d %.6f\n", n, ok, now() - t0);
	return 0;
}

static int
hold(int n, const char *target, double secs)
{
	static int fds[MAX_CONNS];
	int	   i, opened = 0, held = 0, st;
	double	   t0;

	load_auth();
	if (n < 1 || n > MAX_CONNS)
		usage();
	for (i = 0; i < n; i++) {
		fds[opened] = tunnel(target, &st);
		if (fds[opened] == -1)
			continue;
		if (write_all(fds[opened], "HOLD\n", 5) == -1) {
			close(fds[opened]);
			continue;
		}
		opened++;
	}
	fprintf(stderr, "proxy-bench: %d tunnels open\n", opened);
	t0 = now();
	while (now() - t0 < secs)
		usleep(50000);
	for (i = 0; i < opened; i++) {
		struct pollfd pfd = {.fd = fds[i], .events = POLLIN};
		char	      c;

		/* Still open: nothing to read, no end of file. */
		if (poll(&pfd, 1, 0) == 0 ||
		    (recv(fds[i], &c, 1, MSG_DONTWAIT | MSG_PEEK) == -1 &&
			errno == EAGAIN))
			held++;
	}
	t0 = now();
	st = http_once(target);
	printf("opened %d held %d request_ms %.1f status %d\n", opened, held,
	    (now() - t0) * 1000, st);
	for (i = 0; i < opened; i++)
		close(fds[i]);
	return 0;
}

/* One direction of a parent's tunnel, spliced through a pipe. */
static void
parent_pump(int from, int to)
{
	int	 p[2];
	ssize_t	 r;

	if (pipe(p) == -1)
		_exit(1);
	(void)fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
	for (;;) {
		r = splice(from, NULL, p[1], NULL, 1 << 20, SPLICE_F_MOVE);
		if (r <= 0)
			break;
		while (r > 0) {
			ssize_t w = splice(p[0], NULL, to, NULL, (size_t)r,
			    SPLICE_F_MOVE);

			if (w <= 0)
				_exit(0);
			r -= w;
		}
	}
	(void)shutdown(to, SHUT_WR);
}

static void
parent_conn(int c)
{
	char		 h[8192], *colon;
	size_t		 n = 0;
	unsigned	 port;
	int		 u;
	pid_t		 pid;

	while (n < sizeof(h) - 1) {
		if (read(c, h + n, 1) != 1)
			_exit(1);
		n++;
		if (n >= 4 && memcmp(h + n - 4, "\r\n\r\n", 4) == 0)
			break;
	}
	h[n] = '\0';
	if (strncmp(h, "CONNECT ", 8) != 0 || (colon = strchr(h + 8, ':')) ==
	    NULL || (port = (unsigned)atoi(colon + 1)) == 0 ||
	    (u = dial(port)) == -1) {
		(void)!write(c, "HTTP/1.1 502 Bad Gateway\r\n\r\n", 28);
		_exit(1);
	}
	if (write_all(c, "HTTP/1.1 200 Connection established\r\n\r\n",
	    39) == -1)
		_exit(1);
	if ((pid = fork()) == 0) {
		parent_pump(u, c);
		_exit(0);
	}
	parent_pump(c, u);
	waitpid(pid, NULL, 0);
	_exit(0);
}

static int
parent(void)
{
	struct sockaddr_in sin;
	socklen_t	   sl = sizeof(sin);
	int		   lfd, c, one = 1;

	signal(SIGCHLD, SIG_IGN);
	if ((lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return 1;
	(void)setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(lfd, 128) == -1 ||
	    getsockname(lfd, (struct sockaddr *)&sin, &sl) == -1)
		return 1;
	printf("%u\n", ntohs(sin.sin_port));
	fflush(stdout);
	fclose(stdout);
	for (;;) {
		if ((c = accept(lfd, NULL, NULL)) == -1) {
			if (errno == EINTR)
				continue;
			return 1;
		}
		(void)setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		if (fork() == 0) {
			close(lfd);
			parent_conn(c);
		}
		close(c);
	}
}

int
main(int argc, char **argv)
{
	if (argc < 2)
		usage();
	if (strcmp(argv[1], "serve") == 0 && argc == 3)
		return serve(strtoull(argv[2], NULL, 10));
	if (strcmp(argv[1], "stream") == 0 && argc == 4 &&
	    strcmp(argv[2], "-x") == 0)
		return stream(1, argv[3]);
	if (strcmp(argv[1], "stream") == 0 && argc == 3)
		return stream(0, argv[2]);
	if (strcmp(argv[1], "http") == 0 && argc == 5)
		return http(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (strcmp(argv[1], "parent") == 0 && argc == 2)
		return parent();
	if (strcmp(argv[1], "hold") == 0 && argc == 5)
		return hold(atoi(argv[2]), argv[3], atof(argv[4]));
	usage();
	return 64;
}
