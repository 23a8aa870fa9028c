/*
 * mhd-floor: the floor of scripts/bench-bridge.sh, a minimal
 * libmicrohttpd server on a unix socket that checks a bearer token and
 * answers a fixed JSON document: what the bridge costs beyond HTTP itself.
 *
 *	mhd-floor SOCK TOKEN
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <microhttpd.h>

static const char *token;

static enum MHD_Result
answer(void *cls, struct MHD_Connection *c, const char *url, const char *method,
    const char *version, const char *data, size_t *size, void **ctx)
{
	static const char    ok[] = "{\"agent\":\"floor\"}";
	const char	    *a;
	struct MHD_Response *r;
	enum MHD_Result	     ret;
	int		     good;

	if (*ctx == NULL) {
		*ctx = (void *)1;
		return MHD_YES;
	}
	if (*size > 0) {
		*size = 0;
		return MHD_YES;
	}
	a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
	good = a != NULL && strncmp(a, "Bearer ", 7) == 0 &&
	    strcmp(a + 7, token) == 0;
	r = MHD_create_response_from_buffer(sizeof(ok) - 1, (void *)ok,
	    MHD_RESPMEM_PERSISTENT);
	MHD_add_response_header(r, "Content-Type", "application/json");
	ret = MHD_queue_response(c, good ? 200 : 401, r);
	MHD_destroy_response(r);
	return ret;
}

int
main(int argc, char *argv[])
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct MHD_Daemon *d;
	int		   fd;

	if (argc != 3)
		return 64;
	token = argv[2];
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", argv[1]);
	unlink(argv[1]);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 4096) == -1)
		return 71;
	d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
		MHD_USE_THREAD_PER_CONNECTION,
	    0, NULL, NULL, answer, NULL, MHD_OPTION_LISTEN_SOCKET, fd,
	    MHD_OPTION_END);
	if (d == NULL)
		return 69;
	printf("ready\n");
	fflush(stdout);
	pause();
	return 0;
}
