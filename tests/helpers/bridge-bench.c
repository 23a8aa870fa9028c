/*
 * bridge-bench: a bounded load client for scripts/bench-bridge.sh.
 *
 *	bridge-bench SOCK TOKEN METHOD PATH BODY CLIENTS COUNT
 *
 * CLIENTS processes each send COUNT requests, one connection each (as
 * sbx-host does), over the unix socket SOCK, with the bearer TOKEN ("-":
 * none) and the body BODY ("-": none; "@N" in it becomes the request's
 * number).  Prints one line: "ok=N err=N rps=R p50_us=P p95_us=Q".
 * Static and plain: it runs inside sandboxes.
 */
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long
now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

static int
one(const char *sock, const char *req, size_t len)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char		   buf[16384];
	ssize_t		   r;
	size_t		   got = 0;
	int		   fd, ok;

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return 0;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    write(fd, req, len) != (ssize_t)len) {
		close(fd);
		return 0;
	}
	while ((r = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)r;
		if (got == sizeof(buf) - 1)
			got = 0; /* only the status line matters */
	}
	buf[got] = '\0';
	close(fd);
	ok = strncmp(buf, "HTTP/1.1 200", 12) == 0 || got == 0;
	return ok;
}

static int
cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char *argv[])
{
	int	   clients, count, c, i, p[2], ok = 0, err = 0;
	long long *lat, t0, t1, all0;
	char	   req[65536], body[16384], num[16], *at;
	size_t	   n, tot = 0;

	if (argc != 8)
		return 64;
	clients = atoi(argv[6]);
	count = atoi(argv[7]);
	if (clients < 1 || clients > 64 || count < 1 || count > 100000)
		return 64;
	if (pipe(p) == -1)
		return 71;
	all0 = now_us();
	for (c = 0; c < clients; c++) {
		if (fork() != 0)
			continue;
		close(p[0]);
		for (i = 0; i < count; i++) {
			body[0] = '\0';
			if (strcmp(argv[5], "-") != 0) {
				snprintf(num, sizeof(num), "%d", c * count + i);
				if ((at = strstr(argv[5], "@N")) != NULL)
					snprintf(body, sizeof(body), "%.*s%s%s",
					    (int)(at - argv[5]), argv[5], num,
					    at + 2);
				else
					snprintf(body, sizeof(body), "%s",
					    argv[5]);
			}
			n = (size_t)snprintf(req, sizeof(req),
			    "%s %s HTTP/1.1"
			    "\r\nHost: b\r\nConnection: close\r\n%s%s%s"
			    "Content-Length: %zu\r\n\r\n%s",
			    argv[3], argv[4],
			    strcmp(argv[2], "-") ? "Authorization: Bearer " :
						   "",
			    strcmp(argv[2], "-") ? argv[2] : "",
			    strcmp(argv[2], "-") ? "\r\n" : "", strlen(body),
			    body);
			t0 = now_us();
			if (!one(argv[1], req, n))
				t0 = -1 - (now_us() - t0);
			t1 = now_us() - (t0 < 0 ? 0 : t0);
			if (t0 < 0)
				t1 = -1;
			if (write(p[1], &t1, sizeof(t1)) != sizeof(t1))
				_exit(1);
		}
		_exit(0);
	}
	close(p[1]);
	lat = calloc((size_t)clients * (size_t)count, sizeof(*lat));
	while (read(p[0], &t0, sizeof(t0)) == sizeof(t0)) {
		if (t0 < 0)
			err++;
		else {
			lat[tot++] = t0;
			ok++;
		}
	}
	while (wait(NULL) > 0)
		;
	t1 = now_us() - all0;
	qsort(lat, tot, sizeof(*lat), cmp);
	printf("ok=%d err=%d rps=%.0f p50_us=%lld p95_us=%lld\n", ok, err,
	    (double)ok * 1e6 / (double)t1, tot ? lat[tot / 2] : 0,
	    tot ? lat[(tot * 95) / 100] : 0);
	return err ? 1 : 0;
}
