/*
 * scrub.h: the streaming multi-pattern scrubber (secret values out of
 * every byte a sandbox prints).
 *
 * An automaton (Aho-Corasick over the byte classes the patterns use,
 * dense rows for the shallow states, chains for the deep ones) over every form of every value: the raw bytes,
 * standard and URL-safe base64 in the three alignments a value can have
 * inside a longer encoding, lower- and upper-case hex and percent-encoding.
 * Matching ignores the case of ASCII letters (a value comes back case-
 * folded through paths that normalise it, such as a host name the proxy
 * lowercases), in every form: the cost is a few more false hits in base64
 * forms, none in the rest.  A match is replaced by "[REDACTED:NAME]";
 * matches that overlap are merged into one span named after the longest
 * of them, so a longer value wins over a shorter one inside it and no part
 * of either leaks.
 *
 * A stream (struct sbx_scrub_stream) is fed writes of any size, down to
 * one byte at a time; it passes on at once every byte that cannot begin a
 * match and holds back at most (longest pattern - 1) bytes that could,
 * plus a pending match that a longer one might still extend.
 * sbx_scrub_flush() passes on what is held (the caller's idle timer,
 * SBX_SCRUB_IDLE_MS, and the end of the stream): a value split across an
 * idle pause is not caught, by design (an interactive prompt must show).
 */
#ifndef SBX_SCRUB_H
#define SBX_SCRUB_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"

/* Values shorter than this are not scrubbed (too many false hits). */
#define SBX_SCRUB_MIN		6
/* Held bytes are passed on after this long without output. */
#define SBX_SCRUB_IDLE_MS	50

struct sbx_scrub;

typedef int (*sbx_scrub_sink)(void *arg, const void *, size_t);

struct sbx_scrub_stream {
	struct sbx_scrub	*sc;
	uint32_t		 state;		/* the automaton's state */
	struct sbx_buf		 hold;		/* bytes from hbase, not passed */
	struct sbx_buf		 out;		/* scrubbed, for the sink */
	unsigned long long	 hbase;		/* offset of hold.p[0] */
	unsigned long long	 base;		/* first byte not passed on */
	unsigned long long	 pos;		/* bytes taken in */
	int			 span;		/* a match is pending */
	unsigned long long	 span_s, span_e;
	uint32_t		 span_pat;
	sbx_scrub_sink		 sink;
	void			*arg;
};

struct sbx_scrub *sbx_scrub_new(void);
/* Every form of the value, named name (copied).  1: added; 0: shorter
 * than SBX_SCRUB_MIN, not scrubbed; -1 with errno.  Before compile. */
int	sbx_scrub_add(struct sbx_scrub *, const char *name, const void *,
	    size_t);
/* Build the automaton; 0, or -1 with errno (ENOMEM). */
int	sbx_scrub_compile(struct sbx_scrub *);
/* Values added (not counting the short ones), and the longest pattern
 * (once compiled). */
size_t	sbx_scrub_values(const struct sbx_scrub *);
size_t	sbx_scrub_longest(const struct sbx_scrub *);
void	sbx_scrub_free(struct sbx_scrub *);

/* The automaton is compiled on the first write (a command that prints
 * nothing never pays for it). */
void	sbx_scrub_stream_init(struct sbx_scrub_stream *, struct sbx_scrub *,
	    sbx_scrub_sink, void *);
/* Take n bytes; pass on what is safe.  0, or -1: the sink failed, or the
 * automaton could not be built (ENOMEM; nothing is passed on). */
int	sbx_scrub_write(struct sbx_scrub_stream *, const void *, size_t);
/* Pass on everything held. */
int	sbx_scrub_flush(struct sbx_scrub_stream *);
/* Bytes held back now. */
size_t	sbx_scrub_held(const struct sbx_scrub_stream *);
void	sbx_scrub_stream_release(struct sbx_scrub_stream *);

/* A whole buffer, scrubbed, appended to out.  0 or -1. */
int	sbx_scrub_buf(struct sbx_scrub *, const void *, size_t,
	    struct sbx_buf *out);
/* A NUL-terminated string, scrubbed: a new string (caller frees), or
 * NULL on ENOMEM. */
char	*sbx_scrub_str(struct sbx_scrub *, const char *);
/* Every string in a JSON tree, in place: values and object keys (a key
 * that changes is moved, numbered "#N" if it lands on another); a string
 * that cannot be filtered (ENOMEM) is replaced, never passed on. */
void	sbx_scrub_json(struct sbx_scrub *, json_t *);

#endif
