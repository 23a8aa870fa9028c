/* joblog.h: a background job's log file, capped: its head and its tail. */
#ifndef SBX_JOBLOG_H
#define SBX_JOBLOG_H

#include <jansson.h>

#include "buf.h"
#include "error.h"

#define SBX_JOBLOG_DEFAULT	(64ULL << 20)	/* jobs.max_log_bytes */
#define SBX_JOBLOG_MIN		4096ULL
#define SBX_JOBLOG_MAX		(1ULL << 40)

/*
 * The file never grows past cap bytes.  Until the output reaches
 * cap - SBX_JOBLOG_MARK_LEN it is written as it comes.  Past that, the file
 * is the head (the first half), a fixed-size marker line and a ring
 * holding the most recent bytes, overwritten in place; the marker says how
 * many bytes were dropped and where the ring's oldest byte is.
 * sbx_joblog_finish() puts the ring in order (ring offset 0), so a
 * finished log reads in order with `cat`: head, marker, tail.
 */
struct sbx_joblog {
	int			 fd;
	unsigned long long	 cap;		/* file size at most */
	unsigned long long	 head, ring;	/* region sizes once cut */
	unsigned long long	 total;		/* bytes written to the log */
	unsigned long long	 pos;		/* oldest byte of the ring */
	int			 truncated;
};

/* The marker line, fixed width (numbers space-padded). */
#define SBX_JOBLOG_MARK_LEN	92

/* jobs.max_log_bytes of config/sandbox.json (cfg may be NULL): the
 * default when absent; invalid_args (reason config_invalid) when not an
 * integer from SBX_JOBLOG_MIN to SBX_JOBLOG_MAX. */
int	sbx_joblog_cap_config(const json_t *cfg, unsigned long long *,
	    struct sbx_error *);
/* jobs.keep_days of config/sandbox.json (cfg may be NULL): finished jobs
 * older than this many days are pruned by `sbx exec ps`; 0 keeps them.
 * invalid_args (config_invalid) when not an integer in range. */
#define SBX_JOB_KEEP_DAYS	7
#define SBX_JOB_KEEP_DAYS_MAX	36500
int	sbx_joblog_keep_days(const json_t *cfg, unsigned *,
	    struct sbx_error *);
/* Start a log on fd (an empty regular file; not O_APPEND).  cap is
 * raised to SBX_JOBLOG_MIN. */
void	sbx_joblog_init(struct sbx_joblog *, int fd, unsigned long long cap);
/* Append n bytes: 0, or -1 with errno (the file could not be written). */
int	sbx_joblog_write(struct sbx_joblog *, const void *, size_t);
/* Put the ring in order, for readers of the file itself. */
int	sbx_joblog_finish(struct sbx_joblog *);
/* Bytes dropped so far (0 while the log is whole). */
unsigned long long sbx_joblog_dropped(const struct sbx_joblog *);

/*
 * The last `lines` lines of dirfd/name, a log written with this cap (0:
 * a plain file), in order, the marker rendered as "[sbx: N bytes
 * omitted]".  At most the last 256 KiB are looked at.  *dropped (may be
 * NULL) gets the bytes dropped, 0 when none.  0, or -1.
 */
int	sbx_joblog_tail(int dirfd, const char *name, unsigned long long cap,
	    int lines, struct sbx_buf *, unsigned long long *dropped);

#endif
