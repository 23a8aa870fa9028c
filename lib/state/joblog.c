/* joblog.c: capped job logs, head + marker + ring, in place on disk. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "joblog.h"

#define MARK_FMT	"\n[sbx: log truncated: %20llu bytes omitted; ring " \
			"offset %20llu]\n"
#define MARK_SCAN	"\n[sbx: log truncated: %llu bytes omitted; ring " \
			"offset %llu]"
#define TAIL_WINDOW	262144ULL
#define CHUNK		65536

int
sbx_joblog_keep_days(const json_t *cfg, unsigned *days, struct sbx_error *e)
{
	json_t	*jobs, *v;

	*days = SBX_JOB_KEEP_DAYS;
	if (cfg == NULL || (jobs = json_object_get(cfg, "jobs")) == NULL ||
	    !json_is_object(jobs) ||
	    (v = json_object_get(jobs, "keep_days")) == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > SBX_JOB_KEEP_DAYS_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "keep_days",
		    "config_invalid", "config/sandbox.json: jobs.keep_days "
		    "must be an integer from 0 (keep forever) to %d",
		    SBX_JOB_KEEP_DAYS_MAX);
	*days = (unsigned)json_integer_value(v);
	return 0;
}

int
sbx_joblog_cap_config(const json_t *cfg, unsigned long long *cap,
    struct sbx_error *e)
{
	json_t	*jobs, *v;
	unsigned days;

	*cap = SBX_JOBLOG_DEFAULT;
	if (cfg == NULL || (jobs = json_object_get(cfg, "jobs")) == NULL)
		return 0;
	if (!json_is_object(jobs))
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "jobs",
		    "config_invalid", "config/sandbox.json: `jobs` must be an "
		    "object");
	/* The other key of `jobs`: checked wherever the object is. */
	if (sbx_joblog_keep_days(cfg, &days, e) == -1)
		return -1;
	if ((v = json_object_get(jobs, "max_log_bytes")) == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (unsigned long long)json_integer_value(v) < SBX_JOBLOG_MIN ||
	    (unsigned long long)json_integer_value(v) > SBX_JOBLOG_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, "max_log_bytes",
		    "config_invalid", "config/sandbox.json: jobs.max_log_bytes "
		    "must be an integer from %llu to %llu", SBX_JOBLOG_MIN,
		    SBX_JOBLOG_MAX);
	*cap = (unsigned long long)json_integer_value(v);
	return 0;
}

/* The regions of a log cut at cap: head, marker, ring. */
static void
regions(unsigned long long cap, unsigned long long *head,
    unsigned long long *ring)
{
	*head = (cap - SBX_JOBLOG_MARK_LEN) / 2;
	*ring = cap - SBX_JOBLOG_MARK_LEN - *head;
}

void
sbx_joblog_init(struct sbx_joblog *l, int fd, unsigned long long cap)
{
	memset(l, 0, sizeof(*l));
	l->fd = fd;
	l->cap = cap < SBX_JOBLOG_MIN ? SBX_JOBLOG_MIN : cap;
	regions(l->cap, &l->head, &l->ring);
}

/* All n bytes at off, read (wr 0) or written, or -1 (errno; EIO for a
 * short file). */
static int
pio_all(int fd, char *p, size_t n, unsigned long long off, int wr)
{
	ssize_t	 k;

	while (n > 0) {
		k = wr ? pwrite(fd, p, n, (off_t)off) :
		    pread(fd, p, n, (off_t)off);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (k == 0)
				errno = EIO;
			return -1;
		}
		p += k;
		n -= (size_t)k;
		off += (unsigned long long)k;
	}
	return 0;
}

static int
pwrite_all(int fd, const char *p, size_t n, unsigned long long off)
{
	return pio_all(fd, (char *)p, n, off, 1);
}

static int
pread_all(int fd, char *p, size_t n, unsigned long long off)
{
	return pio_all(fd, p, n, off, 0);
}

unsigned long long
sbx_joblog_dropped(const struct sbx_joblog *l)
{
	return l->truncated ? l->total - l->head - l->ring : 0;
}

static int
write_marker(struct sbx_joblog *l)
{
	char	 m[SBX_JOBLOG_MARK_LEN + 1];

	snprintf(m, sizeof(m), MARK_FMT, sbx_joblog_dropped(l), l->pos);
	return pwrite_all(l->fd, m, SBX_JOBLOG_MARK_LEN, l->head);
}

/* Move [from, from + len) up by `by` bytes, last chunk first. */
static int
move_up(int fd, unsigned long long from, unsigned long long len,
    unsigned long long by)
{
	char			*b;
	unsigned long long	 end = from + len;
	size_t			 k;

	if ((b = malloc(CHUNK)) == NULL)
		return -1;
	while (end > from) {
		k = end - from > CHUNK ? CHUNK : (size_t)(end - from);
		end -= k;
		if (pread_all(fd, b, k, end) == -1 ||
		    pwrite_all(fd, b, k, end + by) == -1) {
			free(b);
			return -1;
		}
	}
	free(b);
	return 0;
}

static void
reverse_mem(char *p, size_t n)
{
	size_t	 i;
	char	 c;

	for (i = 0; i < n / 2; i++) {
		c = p[i];
		p[i] = p[n - 1 - i];
		p[n - 1 - i] = c;
	}
}

/* Reverse the bytes of [off, off + len) of fd in place. */
static int
reverse_file(int fd, unsigned long long off, unsigned long long len)
{
	char			*a, *b;
	unsigned long long	 lo = off, hi = off + len;
	size_t			 k;
	int			 rc = 0;

	a = malloc(CHUNK);
	b = malloc(CHUNK);
	if (a == NULL || b == NULL) {
		free(a);
		free(b);
		return -1;
	}
	/* Swap the reversed first k bytes with the reversed last k bytes,
	 * then work inwards; a middle byte stays. */
	while (hi - lo >= 2) {
		k = (hi - lo) / 2 > CHUNK ? CHUNK : (size_t)((hi - lo) / 2);
		if (pread_all(fd, a, k, lo) == -1 ||
		    pread_all(fd, b, k, hi - k) == -1) {
			rc = -1;
			break;
		}
		reverse_mem(a, k);
		reverse_mem(b, k);
		if (pwrite_all(fd, b, k, lo) == -1 ||
		    pwrite_all(fd, a, k, hi - k) == -1) {
			rc = -1;
			break;
		}
		lo += k;
		hi -= k;
	}
	free(a);
	free(b);
	return rc;
}

int
sbx_joblog_write(struct sbx_joblog *l, const void *data, size_t n)
{
	const char		*p = data;
	unsigned long long	 plain = l->head + l->ring, k, base;

	if (n == 0)
		return 0;
	if (!l->truncated) {
		k = plain - l->total;
		if (k > n)
			k = n;
		if (pwrite_all(l->fd, p, (size_t)k, l->total) == -1)
			return -1;
		l->total += k;
		p += k;
		n -= (size_t)k;
		if (n == 0)
			return 0;
		/*
		 * Full: cut.  What follows the head becomes the ring (it
		 * is full, oldest byte first) once moved up to make room
		 * for the marker; from here on the file stays cap bytes.
		 */
		if (move_up(l->fd, l->head, l->ring, SBX_JOBLOG_MARK_LEN) ==
		    -1)
			return -1;
		l->truncated = 1;
		l->pos = 0;
	}
	l->total += n;
	/* Only the last `ring` bytes of this chunk can survive. */
	if (n > l->ring) {
		p += n - l->ring;
		n = (size_t)l->ring;
	}
	base = l->head + SBX_JOBLOG_MARK_LEN;
	while (n > 0) {
		k = l->ring - l->pos;
		if (k > n)
			k = n;
		if (pwrite_all(l->fd, p, (size_t)k, base + l->pos) == -1)
			return -1;
		l->pos = (l->pos + k) % l->ring;
		p += k;
		n -= (size_t)k;
	}
	return write_marker(l);
}

int
sbx_joblog_finish(struct sbx_joblog *l)
{
	unsigned long long	 base = l->head + SBX_JOBLOG_MARK_LEN;

	if (!l->truncated || l->pos == 0)
		return 0;
	/* A rotation by pos: reverse both parts, then the whole. */
	if (reverse_file(l->fd, base, l->pos) == -1 ||
	    reverse_file(l->fd, base + l->pos, l->ring - l->pos) == -1 ||
	    reverse_file(l->fd, base, l->ring) == -1)
		return -1;
	l->pos = 0;
	return write_marker(l);
}

/* Read the marker of a cut log: 0 and its numbers, or -1 (not cut). */
static int
read_marker(int fd, unsigned long long head, unsigned long long ring,
    unsigned long long *dropped, unsigned long long *pos)
{
	char	 m[SBX_JOBLOG_MARK_LEN + 1];

	if (pread_all(fd, m, SBX_JOBLOG_MARK_LEN, head) == -1)
		return -1;
	m[SBX_JOBLOG_MARK_LEN] = '\0';
	if (m[SBX_JOBLOG_MARK_LEN - 1] != '\n' ||
	    sscanf(m, MARK_SCAN, dropped, pos) != 2 || *pos >= ring)
		return -1;
	return 0;
}

/* Copy [off, off + len) of the logical stream out of one piece. */
struct piece {
	const char		*mem;		/* or from the file: */
	unsigned long long	 off, len;
};

static int
take(int fd, const struct piece *pc, size_t npc, unsigned long long from,
    char *out)
{
	unsigned long long	 at = 0, s, e;
	size_t			 i;

	for (i = 0; i < npc; i++) {
		s = from > at ? from - at : 0;
		e = pc[i].len;
		if (s < e) {
			if (pc[i].mem != NULL)
				memcpy(out, pc[i].mem + s, (size_t)(e - s));
			else if (pread_all(fd, out, (size_t)(e - s),
			    pc[i].off + s) == -1)
				return -1;
			out += e - s;
		}
		at += pc[i].len;
	}
	return 0;
}

int
sbx_joblog_tail(int dirfd, const char *name, unsigned long long cap,
    int lines, struct sbx_buf *out, unsigned long long *dropped)
{
	struct sbx_error	 e;
	struct stat		 st;
	struct piece		 pc[4];
	char			*buf = NULL, *p, mark[80];
	unsigned long long	 head = 0, ring = 0, drop = 0, pos = 0;
	unsigned long long	 pos2, drop2, total, from;
	size_t			 npc, len, i;
	int			 fd, seen = 0, tries, cut = 0, rc = -1;

	if (dropped != NULL)
		*dropped = 0;
	if ((fd = sbx_fs_open_beneath(dirfd, name, O_RDONLY, &e)) == -1)
		return -1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		goto done;
	if (cap >= SBX_JOBLOG_MIN && (unsigned long long)st.st_size == cap) {
		regions(cap, &head, &ring);
		cut = read_marker(fd, head, ring, &drop, &pos) == 0;
	}
	/* The supervisor may move the ring on while we read: read again
	 * when the marker changed meanwhile. */
	for (tries = 0; tries < 3; tries++) {
		if (cut) {
			snprintf(mark, sizeof(mark), "\n[sbx: %llu bytes "
			    "omitted]\n", drop);
			pc[0] = (struct piece){ NULL, 0, head };
			pc[1] = (struct piece){ mark, 0, strlen(mark) };
			pc[2] = (struct piece){ NULL, head +
			    SBX_JOBLOG_MARK_LEN + pos, ring - pos };
			pc[3] = (struct piece){ NULL, head +
			    SBX_JOBLOG_MARK_LEN, pos };
			npc = 4;
		} else {
			pc[0] = (struct piece){ NULL, 0,
			    (unsigned long long)st.st_size };
			npc = 1;
		}
		for (total = 0, i = 0; i < npc; i++)
			total += pc[i].len;
		from = total > TAIL_WINDOW ? total - TAIL_WINDOW : 0;
		len = (size_t)(total - from);
		free(buf);
		if ((buf = malloc(len + 1)) == NULL)
			goto done;
		if (take(fd, pc, npc, from, buf) == -1)
			goto done;
		if (!cut || read_marker(fd, head, ring, &drop2, &pos2) == -1 ||
		    (pos2 == pos && drop2 == drop))
			break;
		pos = pos2;
		drop = drop2;
	}
	p = buf + len;
	if (len > 0 && p[-1] == '\n')
		p--;
	while (p > buf) {
		if (p[-1] == '\n' && ++seen >= lines)
			break;
		p--;
	}
	if (lines <= 0)
		p = buf + len;
	if (sbx_buf_append(out, p, (size_t)(buf + len - p)) == -1)
		goto done;
	if (dropped != NULL)
		*dropped = cut ? drop : 0;
	rc = 0;
done:
	free(buf);
	close(fd);
	return rc;
}
