/*
 * dns-stub: a logging UDP DNS server for the proxy tests.
 *
 *   dns-stub -l 127.0.0.1:PORT -o LOGFILE [-d MS] [-a NAME=IPV4]...
 *
 * Answers A queries for the names given with -a; for those names every
 * other type (AAAA included) gets an empty NOERROR answer; any other name
 * is NXDOMAIN.  Every well-formed query's name is appended to LOGFILE,
 * lowercased, one a line, written with one write(2) to an O_APPEND file so
 * that a test reads it as soon as the stub has answered.  Bytes outside
 * [a-z0-9._-] are logged as \DDD so that a line is always one line.
 *
 * -d MS holds every answer for MS milliseconds: a slow server, but not a
 * serial one (answers are due independently, as a real resolver's are;
 * at most PENDING_MAX wait, later queries are dropped unanswered).  The
 * name is logged when the query arrives.
 *
 * PORT 0 picks a free port.  Once bound, the port number is printed on
 * standard output, alone on a line, and standard output is closed: a test
 * reads that line and knows the stub is ready.  SIGTERM and SIGINT end it
 * (exit 0).  Packets that are not a single well-formed query (garbage,
 * truncated, responses, compression pointers in the question) are
 * dropped without an answer; the stub never exits on input.
 *
 * Built statically and without sbx's library (tests/helpers/ rule).
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_NAMES    64
#define NAME_MAX_LEN 255
#define PKT_MAX	     4096
#define PENDING_MAX  2048
#define ANSWER_MAX   600

#define T_A	       1
#define C_IN	       1
#define RCODE_NOERROR  0
#define RCODE_NXDOMAIN 3

struct entry {
	char	       name[NAME_MAX_LEN + 1]; /* lowercase, no trailing dot */
	struct in_addr addr;
};

static struct entry	     names[MAX_NAMES];
static int		     nnames;
static volatile sig_atomic_t stop;
static long		     delay_ms;

/* Answers waiting for their time (-d), oldest first, in a ring. */
static struct pending {
	long long		due;
	struct sockaddr_storage to;
	socklen_t		tolen;
	size_t			len;
	unsigned char		pkt[ANSWER_MAX];
} pending[PENDING_MAX];
static size_t npending, first;

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void
send_due(int s)
{
	struct pending *p;
	long long	t = now_ms();

	while (npending > 0 && (p = &pending[first])->due <= t) {
		(void)sendto(s, p->pkt, p->len, 0, (struct sockaddr *)&p->to,
		    p->tolen);
		first = (first + 1) % PENDING_MAX;
		npending--;
	}
}

static void
answer(int s, const unsigned char *out, size_t len,
    const struct sockaddr_storage *to, socklen_t tolen)
{
	struct pending *p;

	if (delay_ms == 0) {
		(void)sendto(s, out, len, 0, (const struct sockaddr *)to,
		    tolen);
		return;
	}
	if (npending == PENDING_MAX || len > ANSWER_MAX)
		return;
	p = &pending[(first + npending) % PENDING_MAX];
	p->due = now_ms() + delay_ms;
	memcpy(&p->to, to, tolen);
	p->tolen = tolen;
	memcpy(p->pkt, out, len);
	p->len = len;
	npending++;
}

static void
usage(void)
{
	fprintf(stderr,
	    "usage: dns-stub -l ADDR:PORT -o LOGFILE [-d MS] "
	    "[-a NAME=IPV4]...\n");
	exit(64);
}

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* Lowercase, strip one trailing dot. */
static void
normalise(char *s)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++)
		s[n] = (char)tolower((unsigned char)s[n]);
	if (n > 0 && s[n - 1] == '.')
		s[n - 1] = '\0';
}

static void
add_name(const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t	    len;

	if (eq == NULL || eq == arg || nnames == MAX_NAMES)
		usage();
	len = (size_t)(eq - arg);
	if (len > NAME_MAX_LEN)
		usage();
	memcpy(names[nnames].name, arg, len);
	names[nnames].name[len] = '\0';
	normalise(names[nnames].name);
	if (inet_pton(AF_INET, eq + 1, &names[nnames].addr) != 1)
		usage();
	nnames++;
}

static const struct entry *
lookup(const char *name)
{
	int i;

	for (i = 0; i < nnames; i++)
		if (strcmp(names[i].name, name) == 0)
			return &names[i];
	return NULL;
}

/*
 * Parse the question's name at pkt[off..len) into out (dotted, lowercase,
 * bytes outside [a-z0-9_-] as \DDD) and the matchable form into key
 * (lowercase, raw).  Returns the offset after the name, or -1.
 */
static long
parse_name(const unsigned char *pkt, size_t len, size_t off, char *out,
    size_t outsz, char *key, size_t keysz)
{
	size_t o = 0, k = 0, total = 0;

	for (;;) {
		unsigned l;
		size_t	 i;

		if (off >= len)
			return -1;
		l = pkt[off++];
		if (l == 0)
			break;
		if (l > 63) /* compression pointer or reserved bits */
			return -1;
		if (off + l > len)
			return -1;
		total += l + 1;
		if (total > NAME_MAX_LEN)
			return -1;
		if (k > 0) {
			if (o + 1 >= outsz || k + 1 >= keysz)
				return -1;
			out[o++] = '.';
			key[k++] = '.';
		}
		for (i = 0; i < l; i++) {
			unsigned char c = (unsigned char)tolower(pkt[off + i]);

			if (k + 1 >= keysz)
				return -1;
			key[k++] = (char)c;
			if (isalnum(c) || c == '-' || c == '_') {
				if (o + 1 >= outsz)
					return -1;
				out[o++] = (char)c;
			} else {
				if (o + 4 >= outsz)
					return -1;
				snprintf(out + o, outsz - o, "\\%03u", c);
				o += 4;
			}
		}
		off += l;
	}
	out[o] = '\0';
	key[k] = '\0';
	if (k == 0) { /* the root: log it as "." */
		if (outsz < 2)
			return -1;
		out[0] = '.';
		out[1] = '\0';
	}
	return (long)off;
}

static void
log_name(int logfd, const char *name)
{
	char   line[NAME_MAX_LEN * 4 + 2];
	size_t n = strlen(name);

	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	memcpy(line, name, n);
	line[n++] = '\n';
	/* One write to an O_APPEND file: the line is whole when a reader
	 * sees it, and it is there before the answer is sent. */
	(void)!write(logfd, line, n);
}

static void
serve(int s, int logfd)
{
	unsigned char pkt[PKT_MAX], out[PKT_MAX];
	char	      name[NAME_MAX_LEN * 4 + 1], key[NAME_MAX_LEN + 1];
	struct sockaddr_storage from;
	socklen_t		fromlen;
	ssize_t			n;
	long			end;
	size_t			qend, o;
	unsigned		qtype, qclass, flags;
	const struct entry     *e;

	while (!stop) {
		struct pollfd pfd = { .fd = s, .events = POLLIN };
		int	      wait = -1;

		send_due(s);
		if (npending > 0) {
			long long left = pending[first].due - now_ms();

			wait = left > 0 ? (int)left : 0;
		}
		if (poll(&pfd, 1, wait) <= 0)
			continue;
		fromlen = sizeof(from);
		n = recvfrom(s, pkt, sizeof(pkt), MSG_DONTWAIT,
		    (struct sockaddr *)&from, &fromlen);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN ||
			    errno == ECONNREFUSED)
				continue;
			perror("dns-stub: recvfrom");
			exit(71);
		}
		if (n < 12)
			continue;
		flags = (unsigned)pkt[2] << 8 | pkt[3];
		/* A query (QR 0), standard opcode, exactly one question,
		 * no answer or authority records. */
		if ((flags & 0x8000) != 0 || ((flags >> 11) & 0xf) != 0)
			continue;
		if (pkt[4] != 0 || pkt[5] != 1 || pkt[6] != 0 || pkt[7] != 0 ||
		    pkt[8] != 0 || pkt[9] != 0)
			continue;
		end = parse_name(pkt, (size_t)n, 12, name, sizeof(name), key,
		    sizeof(key));
		if (end < 0 || (size_t)end + 4 > (size_t)n)
			continue;
		qend = (size_t)end + 4;
		qtype = (unsigned)pkt[end] << 8 | pkt[end + 1];
		qclass = (unsigned)pkt[end + 2] << 8 | pkt[end + 3];
		log_name(logfd, name);

		e = lookup(key);
		memcpy(out, pkt, qend);
		/* QR, the query's opcode and RD, AA, RA; no additional
		 * records (an EDNS OPT of the query is not echoed). */
		out[2] = (unsigned char)(0x80 | (pkt[2] & 0x79) | 0x04);
		out[3] = (unsigned char)(0x80 |
		    (e != NULL ? RCODE_NOERROR : RCODE_NXDOMAIN));
		out[6] = out[7] = out[8] = out[9] = out[10] = out[11] = 0;
		o = qend;
		if (e != NULL && qtype == T_A && qclass == C_IN) {
			static const unsigned char rr[] = {
			    0xc0, 0x0c, /* the question's name */
			    0x00, T_A, 0x00, C_IN, /* A, IN */
			    0x00, 0x00, 0x00, 0x3c, /* TTL 60 */
			    0x00, 0x04 /* RDLENGTH */
			};

			if (o + sizeof(rr) + 4 > sizeof(out))
				continue;
			memcpy(out + o, rr, sizeof(rr));
			o += sizeof(rr);
			memcpy(out + o, &e->addr, 4);
			o += 4;
			out[7] = 1; /* ANCOUNT */
		}
		answer(s, out, o, &from, fromlen);
	}
}

int
main(int argc, char **argv)
{
	struct sockaddr_in sin;
	struct sigaction   sa;
	socklen_t	   slen;
	const char	  *listen_arg = NULL, *log_path = NULL;
	char		   host[64], *colon, *endp;
	unsigned long	   port;
	int		   c, s, logfd;

	while ((c = getopt(argc, argv, "l:o:a:d:")) != -1) {
		switch (c) {
		case 'd':
			errno = 0;
			delay_ms = strtol(optarg, &endp, 10);
			if (errno != 0 || *endp != '\0' || delay_ms < 0 ||
			    delay_ms > 600000)
				usage();
			break;
		case 'l':
			listen_arg = optarg;
			break;
		case 'o':
			log_path = optarg;
			break;
		case 'a':
			add_name(optarg);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || listen_arg == NULL || log_path == NULL)
		usage();
	colon = strrchr(listen_arg, ':');
	if (colon == NULL || (size_t)(colon - listen_arg) >= sizeof(host))
		usage();
	memcpy(host, listen_arg, (size_t)(colon - listen_arg));
	host[colon - listen_arg] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &endp, 10);
	if (errno != 0 || *endp != '\0' || endp == colon + 1 || port > 65535)
		usage();
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin.sin_addr) != 1)
		usage();

	logfd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (logfd < 0) {
		perror(log_path);
		return 71;
	}
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || bind(s, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		perror("dns-stub: bind");
		return 71;
	}
	slen = sizeof(sin);
	if (getsockname(s, (struct sockaddr *)&sin, &slen) < 0) {
		perror("dns-stub: getsockname");
		return 71;
	}

	/* No SA_RESTART: recvfrom returns EINTR and the loop sees `stop`. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	printf("%u\n", (unsigned)ntohs(sin.sin_port));
	fflush(stdout);
	/* Whoever waits for the port line sees EOF now. */
	fclose(stdout);

	serve(s, logfd);
	close(s);
	close(logfd);
	return 0;
}
