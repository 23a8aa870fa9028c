/*
 * scrub.c: Aho-Corasick over every encoded form of every secret value,
 * streaming, leftmost spans merged, longest name wins (see scrub.h).
 *
 * The automaton is small enough to stay in the cache while a long value
 * is walked (a dense table over every state, ~15 MB for 100 values, made
 * each match a run of cache misses).  Bytes are first mapped to classes
 * (each byte that occurs in some pattern has its own class, every other
 * byte shares class 0, which always leads back to the root).  Only the
 * shallow states (depth < DENSE_DEPTH) and the deeper ones where the trie
 * branches have a dense row of next states; every other state is a link
 * of a chain: the trie goes on by one byte class to the next state number
 * (the trie gives the states of a pattern's tail consecutive numbers), or
 * else the failure link is followed, down to a dense row.  A value in the
 * text is then walked through consecutive memory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

struct pat {
	unsigned char	*p;
	size_t		 len;
	uint32_t	 name;
};

/*
 * A state: its dense row (offset in delta) or NOROW; for a chain link the
 * one class that goes on to state + 1 (NOCLASS: none, a leaf) and the
 * failure link; the pattern that ends here + 1, or 0; the depth.
 */
struct node {
	uint32_t	 row;
	uint32_t	 next;
	uint32_t	 fail;
	uint32_t	 out;
	uint32_t	 depth;
};

#define NOROW		UINT32_MAX
#define NOCLASS		UINT32_MAX
/* States shallower than this have a dense row: the text's partial
 * matches that the prefilter lets through mostly die there at once. */
#define DENSE_DEPTH	2

struct sbx_scrub {
	struct pat	*vals;		/* the values, until compile */
	size_t		 nvals;
	struct pat	*pats;
	size_t		 npats, cpats;
	char		**labels;	/* "[REDACTED:NAME]" */
	size_t		 nlabels;
	size_t		 values, longest;
	int		 compiled;
	uint8_t		 cls[256];
	uint32_t	 nclass, nstates;
	uint32_t	*delta;		/* dense rows: next state */
	struct node	*node;		/* per state */
	uint8_t		*pre;		/* PRE_BITS bits: 4-byte starts */
	uint8_t		*shift;		/* 1 << SHIFT_BITS: Wu-Manber shifts */
	uint32_t	 win;		/* the shift's window */
	uint32_t	 smax;		/* win - SHIFT_B + 1 */
};

/*
 * The prefilter: a bitmap of the hashes of every pattern's first 4 bytes
 * (every pattern has at least SBX_SCRUB_MIN).  At the root, a position
 * whose 4 bytes are not in it cannot start a match, and the automaton
 * stays at the root: most text is skipped with one load and one bit test
 * per byte, instead of a walk through a table far bigger than the cache.
 */
#define PRE_BITS	18

/*
 * Before it, a Wu-Manber shift over the first win bytes of every pattern
 * (win: the shortest pattern's length, at least SBX_SCRUB_MIN, at most
 * SHIFT_WIN): the 3 bytes that end a window say how far it can move
 * without passing the start of any pattern (a hash of them: a collision
 * only makes a shift shorter).  Text moves up to win - 2 bytes at a time:
 * 4 for 6-byte values, 14 for the usual long tokens.
 */
#define SHIFT_BITS	16
/*
 * Matching ignores ASCII case (see scrub.h): both hashes are taken over
 * every byte with bit 0x20 set, which makes an upper-case letter its
 * lower-case one (it also merges some other bytes, which only lets more
 * text through to the automaton, never less).
 */
#define FOLD4		0x20202020u
#define SHIFT_B		3
#define SHIFT_WIN	16

static inline uint32_t
shift_hash(const unsigned char *p)
{
	uint32_t	 x = ((uint32_t)p[0] | (uint32_t)p[1] << 8 |
	    (uint32_t)p[2] << 16) | (FOLD4 & 0xffffff);

	return (x * 2654435761u) >> (32 - SHIFT_BITS);
}

/*
 * Text mostly moves by smax: look at SKIP_WAYS windows, smax apart, at
 * once, and move past every one of them before the first whose shift is
 * shorter.  The lookups do not wait on each other, as one window's shift
 * waits on the one before it.  Returns where the window by window walk
 * goes on.
 */
#define SKIP_WAYS	8

static inline size_t
skip_far(const struct sbx_scrub *sc, const unsigned char *d, size_t i,
    size_t n)
{
	const uint8_t		*shift = sc->shift;
	const unsigned char	*q;
	uint32_t		 smax = sc->smax;
	unsigned		 stop;
	int			 w;

	/* The last window's 3 bytes are read as 4 (little-endian, as
	 * shift_hash takes them). */
	while (i + sc->win - SHIFT_B + (SKIP_WAYS - 1) * smax + 4 <= n) {
		q = d + i + sc->win - SHIFT_B;
		stop = 1u << SKIP_WAYS;
		for (w = 0; w < SKIP_WAYS; w++) {
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
			uint32_t x;
			memcpy(&x, q + w * smax, 4);
			stop |= (unsigned)(shift[((x | FOLD4) & 0xffffff) *
			    2654435761u >>
			    (32 - SHIFT_BITS)] != smax) << w;
#else
			stop |= (unsigned)(shift[shift_hash(q + w * smax)] !=
			    smax) << w;
#endif
		}
		/* Past every window before the first that may not move
		 * by smax; that one is the caller's. */
		w = __builtin_ctz(stop);
		i += (size_t)w * smax;
		if (w < SKIP_WAYS)
			break;
	}
	return i;
}

static inline uint32_t
pre_hash(const unsigned char *p)
{
	uint32_t	 x;

	memcpy(&x, p, 4);
	return ((x | FOLD4) * 2654435761u) >> (32 - PRE_BITS);
}

struct sbx_scrub *
sbx_scrub_new(void)
{
	return calloc(1, sizeof(struct sbx_scrub));
}

static inline unsigned char
lower(unsigned char c)
{
	return c >= 'A' && c <= 'Z' ? (unsigned char)(c - 'A' + 'a') : c;
}

static void
fold(unsigned char *p, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		p[i] = lower(p[i]);
}

/* Patterns are kept with ASCII letters in lower case (the automaton
 * maps an upper-case letter of the text to its lower-case class). */
static int
add_pat(struct sbx_scrub *sc, const unsigned char *p, size_t len,
    uint32_t name)
{
	struct pat	*np;
	size_t		 i, j;

	if (len < SBX_SCRUB_MIN)
		return 0;
	for (i = 0; i < sc->npats; i++) {
		if (sc->pats[i].len != len)
			continue;
		for (j = 0; j < len && sc->pats[i].p[j] == lower(p[j]); j++)
			;
		if (j == len)
			return 0;
	}
	if (sc->npats == sc->cpats) {
		size_t n = sc->cpats ? sc->cpats * 2 : 16;
		if ((np = realloc(sc->pats, n * sizeof(*np))) == NULL)
			return -1;
		sc->pats = np;
		sc->cpats = n;
	}
	if ((np = &sc->pats[sc->npats])->p = malloc(len), np->p == NULL)
		return -1;
	memcpy(np->p, p, len);
	fold(np->p, len);
	np->len = len;
	np->name = name;
	sc->npats++;
	if (len > sc->longest)
		sc->longest = len;
	return 0;
}

static const char b64std[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/*
 * The base64 characters that depend on the value alone when it starts
 * `align` bytes into a longer encoded input: the value's bits are
 * [8a, 8a + 8n) of the input; character i covers bits [6i, 6i + 6).
 */
static int
add_b64(struct sbx_scrub *sc, const unsigned char *v, size_t n, int align,
    const char *alpha, uint32_t name)
{
	unsigned char	*in, *o;
	size_t		 m = (size_t)align + n + 2, i, first, last, k = 0;
	unsigned	 x;
	int		 rc;

	if ((in = calloc(1, m)) == NULL || (o = malloc(m / 3 * 4 + 8)) ==
	    NULL) {
		free(in);
		return -1;
	}
	memcpy(in + align, v, n);
	first = (8 * (size_t)align + 5) / 6;
	last = (8 * ((size_t)align + n)) / 6;	/* exclusive */
	for (i = first; i < last; i++) {
		size_t bit = 6 * i, byte = bit / 8, sh = bit % 8;
		x = ((unsigned)in[byte] << 8 | in[byte + 1]);
		x = (x >> (10 - sh)) & 63;
		o[k++] = (unsigned char)alpha[x];
	}
	rc = add_pat(sc, o, k, name);
	free(in);
	free(o);
	return rc;
}

static int
unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_' ||
	    c == '~';
}

/* Every form of one value, as patterns. */
static int
expand_value(struct sbx_scrub *sc, uint32_t id, const void *val, size_t n)
{
	static const char	 lo[] = "0123456789abcdef";
	static const char	 up[] = "0123456789ABCDEF";
	const unsigned char	*v = val;
	unsigned char		*t;
	size_t			 i, k;
	int			 a, rc = 0;

	if ((t = malloc(3 * n + 1)) == NULL)
		return -1;
	rc |= add_pat(sc, v, n, id);
	for (i = 0; i < n; i++) {
		t[2 * i] = (unsigned char)lo[v[i] >> 4];
		t[2 * i + 1] = (unsigned char)lo[v[i] & 15];
	}
	rc |= add_pat(sc, t, 2 * n, id);
	for (i = 0; i < 2 * n; i++)
		if (t[i] >= 'a')
			t[i] = (unsigned char)(t[i] - 'a' + 'A');
	rc |= add_pat(sc, t, 2 * n, id);
	/* Percent-encoding, upper and lower case (add_pat drops repeats,
	 * such as the raw value again when nothing needed encoding). */
	for (a = 0; a < 2; a++) {
		const char *hx = a ? lo : up;
		for (i = k = 0; i < n; i++) {
			if (unreserved(v[i]))
				t[k++] = v[i];
			else {
				t[k++] = '%';
				t[k++] = (unsigned char)hx[v[i] >> 4];
				t[k++] = (unsigned char)hx[v[i] & 15];
			}
		}
		rc |= add_pat(sc, t, k, id);
	}
	free(t);
	for (a = 0; a < 3; a++) {
		rc |= add_b64(sc, v, n, a, b64std, id);
		rc |= add_b64(sc, v, n, a, b64url, id);
	}
	return rc != 0 ? -1 : 0;
}

/*
 * The value and its label are kept; its forms are made when the automaton
 * is (the first byte of output): a run that prints nothing pays for
 * neither.
 */
int
sbx_scrub_add(struct sbx_scrub *sc, const char *name, const void *val,
    size_t n)
{
	struct pat	*nv;
	char		**nl, *label;

	if (sc->compiled) {
		errno = EINVAL;
		return -1;
	}
	if (n < SBX_SCRUB_MIN)
		return 0;
	if ((nl = realloc(sc->labels, (sc->nlabels + 1) * sizeof(*nl))) ==
	    NULL)
		return -1;
	sc->labels = nl;
	if ((nv = realloc(sc->vals, (sc->nvals + 1) * sizeof(*nv))) == NULL)
		return -1;
	sc->vals = nv;
	if (asprintf(&label, "[REDACTED:%s]", name) == -1)
		return -1;
	nv = &sc->vals[sc->nvals];
	if ((nv->p = malloc(n)) == NULL) {
		free(label);
		return -1;
	}
	memcpy(nv->p, val, n);
	nv->len = n;
	nv->name = (uint32_t)sc->nlabels;
	sc->labels[sc->nlabels++] = label;
	sc->nvals++;
	sc->values++;
	return 1;
}

int
sbx_scrub_compile(struct sbx_scrub *sc)
{
	uint32_t	*g = NULL, *out = NULL, *depth = NULL, *fail = NULL;
	uint32_t	*queue = NULL, *nchild = NULL, s, t, f, c, nc, nd;
	size_t		 i, j, max = 1, qh = 0, qt = 0;
	int		 used[256];

	if (sc->compiled)
		return 0;
	for (i = 0; i < sc->nvals; i++)
		if (expand_value(sc, sc->vals[i].name, sc->vals[i].p,
		    sc->vals[i].len) == -1)
			return -1;
	memset(used, 0, sizeof(used));
	for (i = 0; i < sc->npats; i++) {
		max += sc->pats[i].len;
		for (j = 0; j < sc->pats[i].len; j++)
			used[sc->pats[i].p[j]] = 1;
	}
	nc = 1;
	for (i = 0; i < 256; i++)
		sc->cls[i] = used[i] ? (uint8_t)nc++ : 0;
	/* 256 used bytes would need class 256: class 0 then goes unused
	 * and cls wraps; take the 256th byte into class 0's column. */
	if (nc > 256) {
		nc = 256;
		sc->cls[255] = 0;
	}
	/*
	 * Case-insensitive for ASCII: a secret can come back through a path
	 * that normalises it (the proxy lowercases host names; a tool may
	 * upper-case a hex dump), and a value that differs only in the case
	 * of its letters is as telling as the value.  The patterns hold
	 * lower-case letters only; an upper-case letter of the text walks
	 * the automaton as its lower-case one.
	 */
	for (i = 'A'; i <= 'Z'; i++)
		sc->cls[i] = sc->cls[i - 'A' + 'a'];
	sc->nclass = nc;
	if (max > UINT32_MAX / nc - 1) {
		errno = ENOMEM;
		return -1;
	}
	sc->pre = calloc(1, (1u << PRE_BITS) / 8);
	sc->win = SHIFT_WIN;
	for (i = 0; i < sc->npats; i++)
		if (sc->pats[i].len < sc->win)
			sc->win = (uint32_t)sc->pats[i].len;
	sc->smax = sc->win - SHIFT_B + 1;
	if ((sc->shift = malloc(1u << SHIFT_BITS)) != NULL)
		memset(sc->shift, (int)sc->smax, 1u << SHIFT_BITS);
	/* The full table while building; only its dense rows are kept. */
	g = calloc(max * nc, sizeof(uint32_t));
	out = calloc(max, sizeof(uint32_t));
	depth = calloc(max, sizeof(uint32_t));
	nchild = calloc(max, sizeof(uint32_t));
	fail = calloc(max, sizeof(uint32_t));
	queue = malloc(max * sizeof(uint32_t));
	sc->node = calloc(max, sizeof(struct node));
	if (g == NULL || out == NULL || depth == NULL || nchild == NULL ||
	    fail == NULL || queue == NULL || sc->pre == NULL ||
	    sc->shift == NULL || sc->node == NULL)
		goto nomem;
	for (i = 0; i < sc->npats; i++) {
		uint32_t h = pre_hash(sc->pats[i].p);
		sc->pre[h >> 3] |= (uint8_t)(1u << (h & 7));
		for (j = SHIFT_B - 1; j < sc->win; j++) {
			uint8_t *sh = &sc->shift[shift_hash(sc->pats[i].p + j -
			    (SHIFT_B - 1))];
			if (*sh > sc->win - 1 - j)
				*sh = (uint8_t)(sc->win - 1 - j);
		}
	}
	/* The trie. */
	sc->nstates = 1;
	for (i = 0; i < sc->npats; i++) {
		s = 0;
		for (j = 0; j < sc->pats[i].len; j++) {
			c = sc->cls[sc->pats[i].p[j]];
			if ((t = g[(size_t)s * nc + c]) == 0) {
				t = sc->nstates++;
				depth[t] = depth[s] + 1;
				g[(size_t)s * nc + c] = t;
				/* A chain link goes on to t == s + 1. */
				sc->node[s].next = nchild[s]++ == 0 &&
				    t == s + 1 ? c : NOCLASS;
			}
			s = t;
		}
		if (out[s] == 0)
			out[s] = (uint32_t)i + 1;
	}
	/* Which states keep a dense row. */
	nd = 0;
	for (s = 0; s < sc->nstates; s++) {
		if (nchild[s] == 0)
			sc->node[s].next = NOCLASS;
		if (depth[s] < DENSE_DEPTH || nchild[s] > 1 ||
		    (nchild[s] == 1 && sc->node[s].next == NOCLASS))
			sc->node[s].row = nd++ * nc;
		else
			sc->node[s].row = NOROW;
	}
	/* Failure links, breadth first; missing edges become the edges
	 * of the failure state, and a state with no pattern of its own
	 * reports the longest pattern that is a suffix of it. */
	for (c = 0; c < nc; c++)
		if ((t = g[c]) != 0) {
			fail[t] = 0;
			queue[qt++] = t;
		}
	while (qh < qt) {
		s = queue[qh++];
		for (c = 0; c < nc; c++) {
			t = g[(size_t)s * nc + c];
			f = g[(size_t)fail[s] * nc + c];
			if (t != 0) {
				fail[t] = f;
				if (out[t] == 0)
					out[t] = out[f];
				queue[qt++] = t;
			} else
				g[(size_t)s * nc + c] = f;
		}
	}
	if ((sc->delta = malloc((size_t)nd * nc * sizeof(uint32_t))) == NULL)
		goto nomem;
	for (s = 0; s < sc->nstates; s++) {
		sc->node[s].fail = fail[s];
		sc->node[s].out = out[s];
		sc->node[s].depth = depth[s];
		if (sc->node[s].row != NOROW)
			memcpy(sc->delta + sc->node[s].row, g + (size_t)s * nc,
			    nc * sizeof(uint32_t));
	}
	free(g);
	free(out);
	free(depth);
	free(nchild);
	free(fail);
	free(queue);
	sc->compiled = 1;
	return 0;
nomem:
	free(g);
	free(out);
	free(depth);
	free(nchild);
	free(fail);
	free(queue);
	free(sc->node);
	free(sc->pre);
	free(sc->shift);
	sc->node = NULL;
	sc->pre = sc->shift = NULL;
	errno = ENOMEM;
	return -1;
}

size_t
sbx_scrub_values(const struct sbx_scrub *sc)
{
	return sc != NULL ? sc->values : 0;
}

size_t
sbx_scrub_longest(const struct sbx_scrub *sc)
{
	return sc != NULL ? sc->longest : 0;
}

void
sbx_scrub_free(struct sbx_scrub *sc)
{
	size_t	 i;

	if (sc == NULL)
		return;
	for (i = 0; i < sc->npats; i++) {
		/* The forms of a secret are as sensitive as the secret. */
		explicit_bzero(sc->pats[i].p, sc->pats[i].len);
		free(sc->pats[i].p);
	}
	for (i = 0; i < sc->nvals; i++) {
		explicit_bzero(sc->vals[i].p, sc->vals[i].len);
		free(sc->vals[i].p);
	}
	for (i = 0; i < sc->nlabels; i++)
		free(sc->labels[i]);
	free(sc->vals);
	free(sc->pats);
	free(sc->labels);
	free(sc->delta);
	free(sc->node);
	free(sc->pre);
	free(sc->shift);
	free(sc);
}

void
sbx_scrub_stream_init(struct sbx_scrub_stream *st, struct sbx_scrub *sc,
    sbx_scrub_sink sink, void *arg)
{
	memset(st, 0, sizeof(*st));
	st->sc = sc;
	st->sink = sink;
	st->arg = arg;
}

void
sbx_scrub_stream_release(struct sbx_scrub_stream *st)
{
	if (st->hold.p != NULL)
		explicit_bzero(st->hold.p, st->hold.cap);
	sbx_buf_release(&st->hold);
	sbx_buf_release(&st->out);
}

size_t
sbx_scrub_held(const struct sbx_scrub_stream *st)
{
	return (size_t)(st->pos - st->base);
}

/*
 * Output is gathered and passed to the sink once per write (a dense text
 * has a redaction every few hundred bytes: a sink call, often a system
 * call, for each piece cost more than the matching); long runs go
 * straight through, and the buffer never grows past OUT_MAX.
 */
#define OUT_DIRECT	4096
#define OUT_MAX		65536

static int
out_flush(struct sbx_scrub_stream *st)
{
	size_t	 n = st->out.len;

	if (n == 0)
		return 0;
	st->out.len = 0;
	return st->sink(st->arg, st->out.p, n);
}

static int
emit(struct sbx_scrub_stream *st, const void *p, size_t n)
{
	if (n >= OUT_DIRECT) {
		if (out_flush(st) == -1)
			return -1;
		return st->sink(st->arg, p, n);
	}
	if (sbx_buf_append(&st->out, p, n) == -1)
		return -1;
	return st->out.len >= OUT_MAX ? out_flush(st) : 0;
}

/*
 * Pass on the input bytes [a, b): those before cbase are in the hold
 * buffer (which starts at hbase), the others in the current write d.
 */
static int
emit_raw(struct sbx_scrub_stream *st, unsigned long long hbase,
    unsigned long long a, unsigned long long b, const unsigned char *d,
    unsigned long long cbase)
{
	unsigned long long	 x;

	if (a < cbase && a < b) {
		x = b < cbase ? b : cbase;
		if (emit(st, st->hold.p + (a - hbase), x - a) == -1)
			return -1;
		a = x;
	}
	if (a < b && emit(st, d + (a - cbase), b - a) == -1)
		return -1;
	return 0;
}

static int
commit(struct sbx_scrub_stream *st, unsigned long long hbase,
    const unsigned char *d, unsigned long long cbase)
{
	const char	*label;

	if (emit_raw(st, hbase, st->base, st->span_s, d, cbase) == -1)
		return -1;
	label = st->sc->labels[st->sc->pats[st->span_pat].name];
	if (emit(st, label, strlen(label)) == -1)
		return -1;
	st->base = st->span_e;
	st->span = 0;
	return 0;
}

static void
merge(struct sbx_scrub_stream *st, unsigned long long ms,
    unsigned long long me, uint32_t k)
{
	if (ms < st->span_s)
		st->span_s = ms;
	if (me > st->span_e)
		st->span_e = me;
	if (st->sc->pats[k].len > st->sc->pats[st->span_pat].len)
		st->span_pat = k;
}

/* A pattern k ends at st->pos (the state st->state has just seen it). */
static int
on_match(struct sbx_scrub_stream *st, uint32_t k, unsigned long long hbase,
    const unsigned char *d, unsigned long long cbase)
{
	const struct sbx_scrub	*sc = st->sc;
	unsigned long long	 me = st->pos, ms = me - sc->pats[k].len;
	unsigned long long	 safe;

	if (ms < st->base)
		ms = st->base;
	if (st->span) {
		/* Overlapping the pending span, or some longer pattern in
		 * progress may still reach back into it: one span. */
		safe = st->pos - sc->node[st->state].depth;
		if (ms < st->span_e || safe < st->span_e) {
			merge(st, ms, me, k);
			return 0;
		}
		if (commit(st, hbase, d, cbase) == -1)
			return -1;
	}
	st->span = 1;
	st->span_s = ms;
	st->span_e = me;
	st->span_pat = k;
	return 0;
}

/*
 * After a write: pass on what no match can reach any more, keep the rest.
 * A future match starts no earlier than where the automaton's current
 * partial match does (pos - depth).
 */
static int
settle(struct sbx_scrub_stream *st, unsigned long long hbase,
    const unsigned char *d, unsigned long long cbase, size_t n)
{
	const struct sbx_scrub	*sc = st->sc;
	unsigned long long	 safe, lim;

	safe = st->pos - sc->node[st->state].depth;
	if (st->span && safe >= st->span_e && commit(st, hbase, d,
	    cbase) == -1)
		return -1;
	lim = st->span && st->span_s < safe ? st->span_s : safe;
	if (lim > st->base) {
		if (emit_raw(st, hbase, st->base, lim, d, cbase) == -1)
			return -1;
		st->base = lim;
	}
	/* The hold buffer becomes [base, pos). */
	if (st->base >= cbase) {
		sbx_buf_reset(&st->hold);
		if (st->pos > st->base && sbx_buf_append(&st->hold, d +
		    (st->base - cbase), st->pos - st->base) == -1)
			return -1;
	} else {
		size_t drop = (size_t)(st->base - hbase);
		memmove(st->hold.p, st->hold.p + drop, st->hold.len - drop);
		st->hold.len -= drop;
		if (n > 0 && sbx_buf_append(&st->hold, d, n) == -1)
			return -1;
	}
	st->hbase = st->base;
	return 0;
}

int
sbx_scrub_write(struct sbx_scrub_stream *st, const void *data, size_t n)
{
	struct sbx_scrub	*sc = st->sc;
	const unsigned char	*d = data;
	const uint32_t		*delta;
	const struct node	*node, *nd;
	const uint8_t		*cls, *pre, *shift;
	unsigned long long	 cbase = st->pos, hbase = st->hbase;
	uint32_t		 s, t, c;
	size_t			 i;

	if (sc == NULL || sc->nvals == 0)
		return n > 0 ? st->sink(st->arg, data, n) : 0;
	/* Fail closed: without the automaton nothing is passed on. */
	if (!sc->compiled && sbx_scrub_compile(sc) == -1)
		return -1;
	delta = sc->delta;
	node = sc->node;
	cls = sc->cls;
	pre = sc->pre;
	shift = sc->shift;
	s = st->state;
	for (i = 0; i < n; i++) {
		if (s == 0) {
			/* At the root no match is under way: skip what
			 * cannot start one (see SHIFT_B, PRE_BITS). */
			i = skip_far(sc, d, i, n);
			while (i + sc->win <= n) {
				uint8_t k = shift[shift_hash(d + i +
				    sc->win - SHIFT_B)];
				uint32_t h;
				if (k != 0) {
					i += k;
					if (k == sc->smax)
						i = skip_far(sc, d, i, n);
					continue;
				}
				h = pre_hash(d + i);
				if (pre[h >> 3] & (1u << (h & 7)))
					break;
				i++;
			}
			if (i >= n)
				break;
		}
		c = cls[d[i]];
		/* Down the chain links' failure links to a dense row. */
		for (t = s; (nd = &node[t])->row == NOROW; t = nd->fail)
			if (nd->next == c)
				break;
		s = nd->row == NOROW ? t + 1 : delta[nd->row + c];
		nd = &node[s];
		if (__builtin_expect(nd->out != 0, 0)) {
			st->state = s;
			st->pos = cbase + i + 1;
			if (on_match(st, nd->out - 1, hbase, d, cbase) == -1)
				return -1;
		} else if (nd->depth - 1 < 3) {
			/*
			 * A short partial match, begun at p: when no pattern
			 * starts there, none starts before i + 1 either
			 * (depth <= 3 < SBX_SCRUB_MIN), so back to the root
			 * and on from p + 1 (bytes scanned again: at most 3).
			 */
			size_t	 dd = nd->depth, p;
			uint32_t h;

			if (i + 1 >= dd && (p = i + 1 - dd) + 4 <= n) {
				h = pre_hash(d + p);
				if (!(pre[h >> 3] & (1u << (h & 7)))) {
					s = 0;
					i = p;
				}
			}
		}
	}
	st->state = s;
	st->pos = cbase + n;
	if (settle(st, hbase, d, cbase, n) == -1)
		return -1;
	return out_flush(st);
}

int
sbx_scrub_flush(struct sbx_scrub_stream *st)
{
	unsigned long long	 hbase = st->hbase, cbase = st->pos;

	if (st->span && commit(st, hbase, NULL, cbase) == -1)
		return -1;
	if (emit_raw(st, hbase, st->base, st->pos, NULL, cbase) == -1)
		return -1;
	sbx_buf_reset(&st->hold);
	st->base = st->hbase = st->pos;
	st->state = 0;
	return out_flush(st);
}

static int
buf_sink(void *arg, const void *p, size_t n)
{
	return sbx_buf_append(arg, p, n);
}

int
sbx_scrub_buf(struct sbx_scrub *sc, const void *p, size_t n,
    struct sbx_buf *out)
{
	struct sbx_scrub_stream	 st;
	int			 rc;

	sbx_scrub_stream_init(&st, sc, buf_sink, out);
	rc = sbx_scrub_write(&st, p, n);
	if (rc == 0)
		rc = sbx_scrub_flush(&st);
	sbx_scrub_stream_release(&st);
	return rc;
}

char *
sbx_scrub_str(struct sbx_scrub *sc, const char *s)
{
	struct sbx_buf	 b = SBX_BUF_INIT;

	if (sbx_scrub_buf(sc, s, strlen(s), &b) == -1 || sbx_buf_append(&b,
	    "", 0) == -1) {
		sbx_buf_release(&b);
		return NULL;
	}
	return sbx_buf_detach(&b);
}

/* What stands for a string the scrubber could not filter (ENOMEM): the
 * string is withheld rather than passed on unfiltered. */
#define WITHHELD	"[REDACTED:unscrubbed]"

void
sbx_scrub_json(struct sbx_scrub *sc, json_t *j)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*k;
	json_t		*v, *moved;
	size_t		 i, n;
	void		*tmp;
	char		*nk, *uk;

	if (sc == NULL || j == NULL)
		return;
	if (json_is_object(j)) {
		/*
		 * Keys too: a record a sandbox writes is any JSON, and a
		 * secret as a key prints as plainly as one as a value.  A
		 * key that changes is moved; one that lands on a key
		 * already there gets a number, so nothing is lost.
		 */
		moved = NULL;
		json_object_foreach_safe (j, tmp, k, v) {
			sbx_scrub_json(sc, v);
			if ((nk = sbx_scrub_str(sc, k)) == NULL)
				nk = strdup(WITHHELD);
			if (nk != NULL && strcmp(nk, k) == 0) {
				free(nk);
				continue;
			}
			if (moved == NULL)
				moved = json_object();
			for (n = 1, uk = nk; uk != NULL && (json_object_get(j,
			    uk) != NULL || json_object_get(moved, uk) !=
			    NULL); n++) {
				if (uk != nk)
					free(uk);
				if (asprintf(&uk, "%s#%zu", nk, n) == -1)
					uk = NULL;
			}
			if (uk != NULL)
				json_object_set(moved, uk, v);
			if (uk != nk)
				free(uk);
			free(nk);
			json_object_del(j, k);
		}
		if (moved != NULL) {
			json_object_update(j, moved);
			json_decref(moved);
		}
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			sbx_scrub_json(sc, v);
	} else if (json_is_string(j)) {
		if (sbx_scrub_buf(sc, json_string_value(j),
		    json_string_length(j), &b) == -1)
			json_string_set(j, WITHHELD);
		else if (b.len != json_string_length(j) || (b.len > 0 &&
		    memcmp(b.p, json_string_value(j), b.len) != 0))
			json_string_setn_nocheck(j, b.p ? b.p : "", b.len);
		sbx_buf_release(&b);
	}
}
