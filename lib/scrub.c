/*
 * scrub.c: Aho-Corasick over every encoded form of every secret value,
 * streaming, leftmost spans merged, longest name wins (see scrub.h).
 *
 * The automaton is a dense table: one row per trie state, one column per
 * byte class (each byte that occurs in some pattern has its own class,
 * every other byte shares class 0, which always leads back to the root).
 * An entry is the next row's offset shifted left by three, its low bit set
 * when some pattern ends in that state and the next two bits holding the
 * depth of a shallow state (1 to 3; 0 for the root and deeper ones), so
 * the inner loop is one load, one add and one test per byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

struct pat {
	unsigned char	*p;
	size_t		 len;
	uint32_t	 name;
};

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
	uint32_t	*delta;		/* row << 3 | shallow depth << 1 | out */
	uint32_t	*out;		/* per state: pattern + 1, or 0 */
	uint32_t	*depth;		/* per state */
	uint8_t		*pre;		/* PRE_BITS bits: 4-byte starts */
	uint8_t		*shift;		/* 1 << SHIFT_BITS: Wu-Manber shifts */
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
 * Before it, a Wu-Manber shift over the first SBX_SCRUB_MIN bytes of every
 * pattern: the 3 bytes that end a 6-byte window say how far the window can
 * move without passing the start of any pattern (a hash of them: a
 * collision only makes a shift shorter).  Random text moves 4 bytes at a
 * time.
 */
#define SHIFT_BITS	16
#define SHIFT_B		3
#define SHIFT_MAX	(SBX_SCRUB_MIN - SHIFT_B + 1)

static inline uint32_t
shift_hash(const unsigned char *p)
{
	uint32_t	 x = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	    (uint32_t)p[2] << 16;

	return (x * 2654435761u) >> (32 - SHIFT_BITS);
}

static inline uint32_t
pre_hash(const unsigned char *p)
{
	uint32_t	 x;

	memcpy(&x, p, 4);
	return (x * 2654435761u) >> (32 - PRE_BITS);
}

struct sbx_scrub *
sbx_scrub_new(void)
{
	return calloc(1, sizeof(struct sbx_scrub));
}

static int
add_pat(struct sbx_scrub *sc, const unsigned char *p, size_t len,
    uint32_t name)
{
	struct pat	*np;
	size_t		 i;

	if (len < SBX_SCRUB_MIN)
		return 0;
	for (i = 0; i < sc->npats; i++)
		if (sc->pats[i].len == len && memcmp(sc->pats[i].p, p,
		    len) == 0)
			return 0;
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
	uint32_t	*fail = NULL, *queue = NULL, s, t, f, c, nc;
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
	sc->nclass = nc;
	if (max > UINT32_MAX / 8 / nc) {
		errno = ENOMEM;
		return -1;
	}
	sc->pre = calloc(1, (1u << PRE_BITS) / 8);
	if ((sc->shift = malloc(1u << SHIFT_BITS)) != NULL)
		memset(sc->shift, SHIFT_MAX, 1u << SHIFT_BITS);
	sc->delta = calloc(max * nc, sizeof(uint32_t));
	sc->out = calloc(max, sizeof(uint32_t));
	sc->depth = calloc(max, sizeof(uint32_t));
	fail = calloc(max, sizeof(uint32_t));
	queue = malloc(max * sizeof(uint32_t));
	if (sc->delta == NULL || sc->out == NULL || sc->depth == NULL ||
	    fail == NULL || queue == NULL || sc->pre == NULL ||
	    sc->shift == NULL)
		goto nomem;
	for (i = 0; i < sc->npats; i++) {
		uint32_t h = pre_hash(sc->pats[i].p);
		sc->pre[h >> 3] |= (uint8_t)(1u << (h & 7));
		for (j = SHIFT_B - 1; j < SBX_SCRUB_MIN; j++) {
			uint8_t *sh = &sc->shift[shift_hash(sc->pats[i].p + j -
			    (SHIFT_B - 1))];
			if (*sh > SBX_SCRUB_MIN - 1 - j)
				*sh = (uint8_t)(SBX_SCRUB_MIN - 1 - j);
		}
	}
	/* The trie; delta holds plain state numbers until the end. */
	sc->nstates = 1;
	for (i = 0; i < sc->npats; i++) {
		s = 0;
		for (j = 0; j < sc->pats[i].len; j++) {
			c = sc->cls[sc->pats[i].p[j]];
			if ((t = sc->delta[(size_t)s * nc + c]) == 0) {
				t = sc->nstates++;
				sc->depth[t] = sc->depth[s] + 1;
				sc->delta[(size_t)s * nc + c] = t;
			}
			s = t;
		}
		if (sc->out[s] == 0)
			sc->out[s] = (uint32_t)i + 1;
	}
	/* Failure links, breadth first; missing edges become the edges
	 * of the failure state, and a state with no pattern of its own
	 * reports the longest pattern that is a suffix of it. */
	for (c = 0; c < nc; c++)
		if ((t = sc->delta[c]) != 0) {
			fail[t] = 0;
			queue[qt++] = t;
		}
	while (qh < qt) {
		s = queue[qh++];
		for (c = 0; c < nc; c++) {
			t = sc->delta[(size_t)s * nc + c];
			f = sc->delta[(size_t)fail[s] * nc + c];
			if (t != 0) {
				fail[t] = f;
				if (sc->out[t] == 0)
					sc->out[t] = sc->out[f];
				queue[qt++] = t;
			} else
				sc->delta[(size_t)s * nc + c] = f;
		}
	}
	for (i = 0; i < (size_t)sc->nstates * nc; i++) {
		t = sc->delta[i];
		sc->delta[i] = (t * nc) << 3 | (sc->out[t] != 0) |
		    (sc->out[t] == 0 && sc->depth[t] <= 3 ? sc->depth[t] << 1 :
		    0);
	}
	free(fail);
	free(queue);
	sc->compiled = 1;
	return 0;
nomem:
	free(fail);
	free(queue);
	free(sc->delta);
	free(sc->out);
	free(sc->depth);
	free(sc->pre);
	free(sc->shift);
	sc->delta = sc->out = sc->depth = NULL;
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
	free(sc->out);
	free(sc->depth);
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
}

size_t
sbx_scrub_held(const struct sbx_scrub_stream *st)
{
	return (size_t)(st->pos - st->base);
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
		if (st->sink(st->arg, st->hold.p + (a - hbase), x - a) == -1)
			return -1;
		a = x;
	}
	if (a < b && st->sink(st->arg, d + (a - cbase), b - a) == -1)
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
	if (st->sink(st->arg, label, strlen(label)) == -1)
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
		safe = st->pos - sc->depth[st->state / sc->nclass];
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

	safe = st->pos - sc->depth[st->state / sc->nclass];
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
	const uint8_t		*cls, *pre, *shift;
	unsigned long long	 cbase = st->pos, hbase = st->hbase;
	uint32_t		 e;
	size_t			 i;

	if (sc == NULL || sc->nvals == 0)
		return n > 0 ? st->sink(st->arg, data, n) : 0;
	/* Fail closed: without the automaton nothing is passed on. */
	if (!sc->compiled && sbx_scrub_compile(sc) == -1)
		return -1;
	delta = sc->delta;
	cls = sc->cls;
	pre = sc->pre;
	shift = sc->shift;
	e = st->state << 3;
	for (i = 0; i < n; i++) {
		if (e == 0) {
			/* At the root no match is under way: skip what
			 * cannot start one (see SHIFT_B, PRE_BITS). */
			while (i + SBX_SCRUB_MIN <= n) {
				uint8_t k = shift[shift_hash(d + i +
				    SBX_SCRUB_MIN - SHIFT_B)];
				uint32_t h;
				if (k != 0) {
					i += k;
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
		e = delta[(e >> 3) + cls[d[i]]];
		if (__builtin_expect(e & 1, 0)) {
			st->state = e >> 3;
			st->pos = cbase + i + 1;
			if (on_match(st, sc->out[st->state / sc->nclass] - 1,
			    hbase, d, cbase) == -1)
				return -1;
		} else if (e & 6) {
			/*
			 * A short partial match, begun at p: when no pattern
			 * starts there, none starts before i + 1 either
			 * (depth <= 3 < SBX_SCRUB_MIN), so back to the root
			 * and on from p + 1 (bytes scanned again: at most 3).
			 */
			size_t	 dd = (e >> 1) & 3, p;
			uint32_t h;

			if (i + 1 >= dd && (p = i + 1 - dd) + 4 <= n) {
				h = pre_hash(d + p);
				if (!(pre[h >> 3] & (1u << (h & 7)))) {
					e = 0;
					i = p;
				}
			}
		}
	}
	st->state = e >> 3;
	st->pos = cbase + n;
	return settle(st, hbase, d, cbase, n);
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
	return 0;
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

void
sbx_scrub_json(struct sbx_scrub *sc, json_t *j)
{
	struct sbx_buf	 b = SBX_BUF_INIT;
	const char	*k;
	json_t		*v;
	size_t		 i;
	void		*tmp;

	if (sc == NULL || j == NULL)
		return;
	if (json_is_object(j)) {
		json_object_foreach_safe(j, tmp, k, v)
			sbx_scrub_json(sc, v);
	} else if (json_is_array(j)) {
		json_array_foreach(j, i, v)
			sbx_scrub_json(sc, v);
	} else if (json_is_string(j)) {
		if (sbx_scrub_buf(sc, json_string_value(j),
		    json_string_length(j), &b) == 0 && (b.len !=
		    json_string_length(j) || memcmp(b.p, json_string_value(j),
		    b.len) != 0))
			json_string_setn_nocheck(j, b.p ? b.p : "", b.len);
		sbx_buf_release(&b);
	}
}
