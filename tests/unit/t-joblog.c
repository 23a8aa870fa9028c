/* t-joblog: capped job logs (head + marker + ring on disk). */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "joblog.h"

static char	 dir[] = "/tmp/t-joblog.XXXXXX";
static int	 dfd;

/* What a reader must see: the head, the marker, the last bytes. */
static void
expected(const char *all, size_t n, unsigned long long cap, struct sbx_buf *b)
{
	unsigned long long	 head = (cap - SBX_JOBLOG_MARK_LEN) / 2;
	unsigned long long	 ring = cap - SBX_JOBLOG_MARK_LEN - head;

	if (n <= head + ring) {
		sbx_buf_append(b, all, n);
		return;
	}
	sbx_buf_append(b, all, head);
	sbx_buf_printf(b, "\n[sbx: %llu bytes omitted]\n", n - head - ring);
	sbx_buf_append(b, all + n - ring, ring);
}

/* got is the last 256 KiB (the tail's window) of want? */
static int
same_tail(const struct sbx_buf *got, const struct sbx_buf *want)
{
	size_t	 k = want->len > 262144 ? 262144 : want->len;

	return got->len == k && memcmp(got->p, want->p + want->len - k, k) == 0;
}

static long long
fsize(const char *name)
{
	struct stat	 st;

	return fstatat(dfd, name, &st, 0) == 0 ? (long long)st.st_size : -1;
}

/* Write n bytes of a pattern in chunks of the sizes given (cycled), and
 * compare what a reader sees, while and after. */
static void
one(const char *label, unsigned long long cap, size_t n, const size_t *chunks,
    size_t nchunks)
{
	struct sbx_joblog	 l;
	struct sbx_buf		 want = SBX_BUF_INIT, got = SBX_BUF_INIT;
	unsigned long long	 dropped;
	char			*all, name[64];
	size_t			 i, off, k, c = 0;
	int			 fd, bounded = 1;

	snprintf(name, sizeof(name), "%s.log", label);
	all = malloc(n + 1);
	for (i = 0; i < n; i++)
		all[i] = (i % 61 == 60) ? '\n' : (char)('!' + (i * 7 + i / 97) %
		    90);
	fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	sbx_joblog_init(&l, fd, cap);
	for (off = 0; off < n; off += k) {
		k = chunks[c++ % nchunks];
		if (k > n - off)
			k = n - off;
		if (sbx_joblog_write(&l, all + off, k) == -1)
			break;
		if (fsize(name) > (long long)cap)
			bounded = 0;
	}
	ok(off >= n && bounded, "%s: written, never past the cap (%lld <= %llu)",
	    label, fsize(name), cap);
	expected(all, n, cap, &want);
	sbx_joblog_tail(dfd, name, cap, 1 << 30, &got, &dropped);
	ok(same_tail(&got, &want), "%s: a reader sees head, marker, tail in order (running)", label);
	is_int((long long)dropped, (long long)sbx_joblog_dropped(&l),
	    "dropped bytes reported");
	ok(sbx_joblog_finish(&l) == 0, "%s: finished", label);
	sbx_buf_reset(&got);
	sbx_joblog_tail(dfd, name, cap, 1 << 30, &got, &dropped);
	ok(same_tail(&got, &want), "%s: ... and after finish", label);
	if (l.truncated) {
		/* Finished: the file itself reads in order. */
		char *raw = malloc(cap);
		ssize_t r = pread(fd, raw, cap, 0);
		unsigned long long h = l.head;
		ok(r == (ssize_t)cap && memcmp(raw, all, h) == 0 &&
		    memcmp(raw + h + SBX_JOBLOG_MARK_LEN, all + n - l.ring,
		    l.ring) == 0 && memcmp(raw + h, "\n[sbx: log truncated:",
		    21) == 0, "%s: the finished file is head, marker, tail",
		    label);
		free(raw);
	} else
		ok(fsize(name) == (long long)n, "%s: whole file", label);
	close(fd);
	free(all);
	sbx_buf_release(&want);
	sbx_buf_release(&got);
}

int
main(void)
{
	static const size_t	 small[] = { 1, 7, 100, 3 };
	static const size_t	 big[] = { 65536, 4096, 1, 65536, 123457 };
	static const size_t	 one_chunk[] = { 1 << 22 };
	struct sbx_joblog	 l;
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_error	 e;
	unsigned long long	 cap, d;
	char			 m[SBX_JOBLOG_MARK_LEN + 8];
	json_t			*cfg;
	int			 fd;

	if ((dfd = t_tmpdir(dir)) == -1)
		skip_all("no temp dir");
	is_int(snprintf(m, sizeof(m), "\n[sbx: log truncated: %20llu bytes "
	    "omitted; ring offset %20llu]\n", 0ULL, 0ULL), SBX_JOBLOG_MARK_LEN,
	    "the marker's length is SBX_JOBLOG_MARK_LEN");

	one("small-under", 4096, 1000, small, 4);
	one("exact", 4096, 4096 - SBX_JOBLOG_MARK_LEN, small, 4);
	one("exact-plus-one", 4096, 4096 - SBX_JOBLOG_MARK_LEN + 1, small, 4);
	one("small-over", 4096, 20000, small, 4);
	one("wraps-many", 5000, 300000, big, 5);
	one("one-big-chunk", 65536, 1 << 22, one_chunk, 1);
	one("odd-cap", 70001, 1000003, big, 5);
	one("beyond-window", 1 << 20, 5 << 20, big, 5);

	/* Lines: the last ones, across the ring's seam. */
	fd = openat(dfd, "lines.log", O_RDWR | O_CREAT | O_TRUNC, 0600);
	sbx_joblog_init(&l, fd, 4096);
	for (d = 0; d < 5000; d++) {
		snprintf(m, sizeof(m), "line %llu\n", d);
		sbx_joblog_write(&l, m, strlen(m));
	}
	sbx_joblog_tail(dfd, "lines.log", 4096, 3, &b, &d);
	is_str(b.p, "line 4997\nline 4998\nline 4999\n", "the last 3 lines");
	ok(d > 0, "dropped: %llu", d);
	sbx_buf_reset(&b);
	/* Read as a plain file (no cap known): never more than the file. */
	sbx_joblog_tail(dfd, "lines.log", 0, 1, &b, &d);
	ok(d == 0 && b.len < 4096, "without the cap: a plain tail");
	close(fd);
	sbx_buf_release(&b);

	/* Configuration. */
	ok(sbx_joblog_cap_config(NULL, &cap, &e) == 0 &&
	    cap == SBX_JOBLOG_DEFAULT, "default cap 64 MiB");
	cfg = json_pack("{s:{s:i}}", "jobs", "max_log_bytes", 65536);
	ok(sbx_joblog_cap_config(cfg, &cap, &e) == 0 && cap == 65536,
	    "jobs.max_log_bytes read");
	json_decref(cfg);
	cfg = json_pack("{s:{s:i}}", "jobs", "max_log_bytes", 10);
	ok(sbx_joblog_cap_config(cfg, &cap, &e) == -1 &&
	    strcmp(e.reason, "config_invalid") == 0, "too small refused");
	json_decref(cfg);
	cfg = json_pack("{s:{s:s}}", "jobs", "max_log_bytes", "1M");
	ok(sbx_joblog_cap_config(cfg, &cap, &e) == -1, "a string refused");
	json_decref(cfg);
	cfg = json_pack("{s:i}", "jobs", 3);
	ok(sbx_joblog_cap_config(cfg, &cap, &e) == -1, "jobs not an object");
	json_decref(cfg);

	return done_testing();
}
