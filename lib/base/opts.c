/* opts.c: one option table per program (opts.h); formatting only. */
#include <stdio.h>
#include <stdatomic.h>
#include <string.h>

#include "opts.h"

static int
has_arg(enum sbx_opt_arg a)
{
	return a == SBX_OPT_REQ ? required_argument : a == SBX_OPT_OPT ?
	    optional_argument : no_argument;
}

/* Every bit of the table: the program itself and each subcommand. */
static unsigned
all_bits(const struct sbx_opts *t)
{
	unsigned	 m = t->main;
	size_t		 i;

	for (i = 0; i < t->nsub; i++)
		m |= t->sub[i].bit;
	return m;
}

/* Does the row go with bit (~0u: with every (sub)command)? */
static int
goes_with(const struct sbx_opts *t, const struct sbx_opt *o, unsigned bit)
{
	if (bit == ~0u)
		return (o->subs & all_bits(t)) == all_bits(t);
	return (o->subs & bit) != 0;
}

/* Does the row's letter go with bit? */
static int
letter_with(const struct sbx_opts *t, const struct sbx_opt *o, unsigned bit)
{
	if (o->letter == 0)
		return 0;
	if (o->letter_subs == 0)
		return 1;
	if (bit == ~0u)
		return (o->letter_subs & all_bits(t)) == all_bits(t);
	return (o->letter_subs & bit) != 0;
}

int
sbx_opts_valid(const struct sbx_opts *t, struct sbx_error *e)
{
	const struct sbx_opt	*a, *b;
	unsigned		 all = all_bits(t);
	size_t			 i, j;

	if (t->nopt > SBX_OPTS_MAX)
		return sbx_error_set(e, SBX_K_INVALID_ARGS, t->prog,
		    "too_many_rows", "%s: more than %d options", t->prog,
		    SBX_OPTS_MAX);
	for (i = 0; i < t->nopt; i++) {
		a = &t->opt[i];
		if ((a->subs & all) == 0 || (a->subs & ~all) != 0 ||
		    (a->letter_subs & ~a->subs) != 0)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    a->name ? a->name : "-", "bad_subcommands",
			    "%s: row %zu goes with no or an unknown "
			    "subcommand", t->prog, i);
		if ((a->name == NULL && a->letter == 0) ||
		    (a->letter != 0 && (a->letter < 'A' || a->letter > 'z' ||
		    (a->letter > 'Z' && a->letter < 'a'))) ||
		    (a->letter != 0 && a->letter_subs == 0 &&
		    a->id != a->letter) || (a->arg != SBX_OPT_NONE &&
		    a->argname == NULL) || (a->arg == SBX_OPT_NONE &&
		    (a->argname != NULL || a->values != NULL)))
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    a->name ? a->name : "-", "bad_row",
			    "%s: row %zu is malformed", t->prog, i);
		for (j = 0; j < i; j++) {
			b = &t->opt[j];
			if (a->name != NULL && b->name != NULL &&
			    strcmp(a->name, b->name) == 0 && a->id != b->id)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    a->name, "name_reused", "%s: --%s has two "
				    "ids", t->prog, a->name);
			if (a->id == b->id && (a->arg != b->arg ||
			    (a->name == NULL) != (b->name == NULL) ||
			    (a->name != NULL && strcmp(a->name, b->name) != 0)))
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    a->name ? a->name : "-", "id_reused",
				    "%s: rows %zu and %zu share an id", t->prog,
				    j, i);
			if ((a->subs & b->subs) == 0)
				continue;
			if (a->name != NULL && b->name != NULL &&
			    strcmp(a->name, b->name) == 0)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    a->name, "name_reused", "%s: --%s twice "
				    "in a subcommand", t->prog, a->name);
			if (a->letter != 0 && a->letter == b->letter &&
			    ((a->letter_subs ? a->letter_subs : a->subs) &
			    (b->letter_subs ? b->letter_subs : b->subs)) != 0)
				return sbx_error_set(e, SBX_K_INVALID_ARGS,
				    a->name ? a->name : "-", "letter_reused",
				    "%s: -%c twice in a subcommand", t->prog,
				    a->letter);
		}
	}
	return 0;
}

/* Give letter L of row o to g, unless it has one already. */
static void
give_letter(const struct sbx_opt *o, struct sbx_opts_getopt *g, char **s)
{
	if (g->letter_id[(unsigned char)o->letter] != 0)
		return;
	g->letter_id[(unsigned char)o->letter] = o->id;
	*(*s)++ = o->letter;
	if (o->arg != SBX_OPT_NONE)
		*(*s)++ = ':';
	if (o->arg == SBX_OPT_OPT)
		*(*s)++ = ':';
}

/*
 * sbx_opts_valid of a table, once per process: the tables are constant
 * (a program's, checked at every start, where the check is quadratic in
 * their rows and a warm command counts its microseconds).  A table not
 * remembered (more than a handful) is checked every time.
 */
static int
valid_once(const struct sbx_opts *t, struct sbx_error *e)
{
	static _Atomic(const struct sbx_opts *) seen[8];
	size_t	i;

	for (i = 0; i < sizeof(seen) / sizeof(seen[0]); i++)
		if (atomic_load(&seen[i]) == t)
			return 0;
	if (sbx_opts_valid(t, e) == -1)
		return -1;
	for (i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		const struct sbx_opts *none = NULL;

		if (atomic_compare_exchange_strong(&seen[i], &none, t))
			break;
	}
	return 0;
}

int
sbx_opts_getopt(const struct sbx_opts *t, unsigned bit,
    struct sbx_opts_getopt *g)
{
	struct sbx_error	 e;
	const struct sbx_opt	*o;
	size_t			 i, n = 0, k;
	char			*s;

	memset(g, 0, sizeof(*g));
	s = g->optstring;
	if (valid_once(t, &e) == -1)
		return -1;
	/*
	 * '+': the first operand starts a command's argv, whose options are
	 * the command's (sbx exec -- ls -la; never reordered).  '-' rather
	 * than glibc's permutation elsewhere: each operand comes back in
	 * order, and POSIXLY_CORRECT in the environment cannot change what a
	 * command line means.
	 */
	g->permute = bit == ~0u || (bit & t->in_order) == 0;
	*s++ = g->permute ? '-' : '+';
	for (i = 0; i < t->nopt; i++) {
		o = &t->opt[i];
		/* A name is one option in the whole table: one entry. */
		if (o->name != NULL) {
			/* A name is one id (sbx_opts_valid). */
			for (k = 0; k < n; k++)
				if (g->longopts[k].val == o->id)
					break;
			if (k == n) {
				g->longopts[n].name = o->name;
				g->longopts[n].has_arg = has_arg(o->arg);
				g->longopts[n].flag = NULL;
				g->longopts[n].val = o->id;
				n++;
			}
		}
		/* A letter is first the one of this (sub)command. */
		if (goes_with(t, o, bit) && letter_with(t, o, bit))
			give_letter(o, g, &s);
	}
	/* Then the letters every (sub)command shares, so that an option
	 * given where it does not go is named, not unknown. */
	for (i = 0; i < t->nopt; i++) {
		o = &t->opt[i];
		if (o->letter != 0 && o->letter_subs == 0)
			give_letter(o, g, &s);
	}
	*s = '\0';
	return 0;
}

void
sbx_opts_operand(struct sbx_opts_getopt *g, char *argv[], int *optindp)
{
	/* Slot 1 + nops is before the operand itself, which getopt_long
	 * has passed: every word there has been read. */
	argv[1 + g->nops] = argv[*optindp - 1];
	g->nops++;
}

void
sbx_opts_operands_done(struct sbx_opts_getopt *g, char *argv[],
    int *optindp)
{
	int	 j;

	/* From the last: the slots may overlap (an operand that no option
	 * preceded moves onto itself). */
	for (j = g->nops - 1; j >= 0; j--)
		argv[*optindp - g->nops + j] = argv[1 + j];
	*optindp -= g->nops;
	g->nops = 0;
}

int
sbx_opts_is_operand(const char *a)
{
	return a[0] == '-' && ((a[1] >= '0' && a[1] <= '9') ||
	    (a[1] == '.' && a[2] >= '0' && a[2] <= '9'));
}

int
sbx_opts_id(const struct sbx_opts_getopt *g, int ch)
{
	if (ch > 0 && ch < 128 && g->letter_id[ch] != 0)
		return g->letter_id[ch];
	return ch;
}

const struct sbx_opt *
sbx_opts_row(const struct sbx_opts *t, int id, unsigned bit)
{
	const struct sbx_opt	*first = NULL;
	size_t			 i;

	for (i = 0; i < t->nopt; i++) {
		if (t->opt[i].id != id)
			continue;
		if (goes_with(t, &t->opt[i], bit))
			return &t->opt[i];
		if (first == NULL)
			first = &t->opt[i];
	}
	return first;
}

/* How many words of sub name match the start of argv; 0 when not all. */
static int
sub_words(const char *name, int argc, char *const argv[])
{
	const char	*p = name, *sp;
	size_t		 n;
	int		 k = 0;

	while (*p != '\0') {
		sp = strchr(p, ' ');
		n = sp ? (size_t)(sp - p) : strlen(p);
		if (k >= argc || strlen(argv[k]) != n ||
		    strncmp(argv[k], p, n) != 0)
			return 0;
		k++;
		p += n;
		while (*p == ' ')
			p++;
	}
	return k;
}

/* Are argv's n words the first words of sub name (which has more)? */
static int
sub_prefix(const char *name, int argc, char *const argv[])
{
	const char	*p = name;
	size_t		 n;
	int		 k;

	for (k = 0; k < argc; k++) {
		n = strcspn(p, " ");
		if (n == 0 || strlen(argv[k]) != n ||
		    strncmp(argv[k], p, n) != 0)
			return 0;
		p += n;
		p += strspn(p, " ");
	}
	return *p != '\0';
}

unsigned
sbx_opts_sub_find(const struct sbx_opts *t, int argc, char *const argv[],
    int *used)
{
	unsigned	 bit = 0;
	size_t		 i;
	int		 k, best = 0;

	for (i = 0; i < t->nsub; i++)
		if ((k = sub_words(t->sub[i].name, argc, argv)) > best) {
			best = k;
			bit = t->sub[i].bit;
		}
	if (used != NULL)
		*used = best;
	return bit;
}

const char *
sbx_opts_sub_name(const struct sbx_opts *t, unsigned bit)
{
	size_t	 i;

	for (i = 0; i < t->nsub; i++)
		if (t->sub[i].bit == bit)
			return t->sub[i].name;
	return "";
}

void
sbx_opts_seen(struct sbx_opts_seen *s, int id)
{
	size_t	 i;

	for (i = 0; i < s->n; i++)
		if (s->id[i] == id)
			return;
	if (s->n < SBX_OPTS_MAX)
		s->id[s->n++] = id;
}

/* "--name" or "-x": the option's name in messages and fields. */
static void
opt_label(const struct sbx_opt *o, char *buf, size_t n)
{
	if (o->name != NULL)
		snprintf(buf, n, "--%s", o->name);
	else
		snprintf(buf, n, "-%c", o->letter);
}

int
sbx_opts_check(const struct sbx_opts *t, const struct sbx_opts_seen *s,
    unsigned bit, struct sbx_error *e)
{
	/* Static: the error's field points to it (as sbx_cli_getopt_error's
	 * does), valid until the next call. */
	static char		 label[72];
	const struct sbx_opt	*o;
	struct sbx_buf		 where = SBX_BUF_INIT;
	const char		*sub;
	size_t			 i, k, n = 0;

	for (i = 0; i < s->n; i++) {
		if ((o = sbx_opts_row(t, s->id[i], bit)) == NULL ||
		    goes_with(t, o, bit))
			continue;
		opt_label(o, label, sizeof(label));
		sub = sbx_opts_sub_name(t, bit);
		/* Where it does go, for the hint. */
		if (o->subs & t->main)
			n += sbx_buf_printf(&where, "%s%s", n ? ", " : "",
			    t->cmd) == 0;
		for (k = 0; k < t->nsub; k++)
			if ((o->subs & t->sub[k].bit) != 0)
				n += sbx_buf_printf(&where, "%s%s %s", n ?
				    ", " : "", t->cmd, t->sub[k].name) == 0;
		sbx_error_set(e, SBX_K_INVALID_ARGS, label,
		    "not_for_subcommand", "option `%s` does not go with %s%s%s",
		    label, t->cmd, *sub ? " " : "", sub);
		if (where.p != NULL)
			sbx_error_hint(e, "%s goes with: %s", label, where.p);
		sbx_buf_release(&where);
		return -1;
	}
	return 0;
}

/* The left part of a help line: "  -a, --agent A", "      --home DIR",
 * "  -c STRING". */
static int
help_left(const struct sbx_opt *o, int letter, struct sbx_buf *b)
{
	int	 rc = 0;

	if (letter && o->name == NULL)
		rc |= sbx_buf_printf(b, "  -%c", o->letter);
	else if (letter)
		rc |= sbx_buf_printf(b, "  -%c, --%s", o->letter, o->name);
	else
		rc |= sbx_buf_printf(b, "      --%s", o->name);
	if (o->arg == SBX_OPT_REQ)
		rc |= sbx_buf_printf(b, " %s", o->argname);
	else if (o->arg == SBX_OPT_OPT)
		rc |= sbx_buf_printf(b, "[=%s]", o->argname);
	return rc ? -1 : 0;
}

int
sbx_opts_help(const struct sbx_opts *t, unsigned mask, struct sbx_buf *b)
{
	const struct sbx_opt	*o;
	const char		*p, *nl;
	size_t			 i, start, k;
	int			 rc = 0;

	for (i = 0; i < t->nopt; i++) {
		o = &t->opt[i];
		if (o->help == NULL || (o->subs & mask) == 0)
			continue;
		for (k = 0; k < i; k++)
			if (t->opt[k].id == o->id && t->opt[k].help != NULL &&
			    (t->opt[k].subs & mask) != 0)
				break;
		if (k < i)
			continue;	/* one line per option */
		start = b->len;
		/* A letter that goes only with some subcommands is theirs
		 * (wait -t): the line shows the option everyone has. */
		rc |= help_left(o, o->letter != 0 && o->letter_subs == 0, b);
		for (p = o->help; rc == 0; p = nl + 1) {
			k = b->len - start;
			if (k + 1 > (size_t)t->help_col && p == o->help) {
				rc |= sbx_buf_puts(b, "\n");
				k = 0;
			}
			if (p != o->help)
				k = 0;
			for (; k < (size_t)t->help_col && rc == 0; k++)
				rc |= sbx_buf_puts(b, " ");
			nl = strchr(p, '\n');
			rc |= sbx_buf_printf(b, "%.*s\n", (int)(nl ? (size_t)(nl
			    - p) : strlen(p)), p);
			start = b->len;
			if (nl == NULL)
				break;
		}
	}
	return rc ? -1 : 0;
}

/* One completion line: OPTION, and a tab and the values when it takes
 * an argument. */
static int
complete_line(const struct sbx_opt *o, const char *opt, struct sbx_buf *b)
{
	if (o->arg == SBX_OPT_NONE)
		return sbx_buf_printf(b, "%s\n", opt);
	return sbx_buf_printf(b, "%s\t%s\n", opt, o->values != NULL ?
	    o->values : "@text");
}

int
sbx_opts_complete(const struct sbx_opts *t, unsigned bit, struct sbx_buf *b)
{
	const struct sbx_opt	*o;
	char			 opt[72];
	size_t			 i;
	int			 rc = 0;

	for (i = 0; i < t->nopt; i++) {
		o = &t->opt[i];
		if (o->help == NULL || !goes_with(t, o, bit))
			continue;
		if (o->name != NULL) {
			snprintf(opt, sizeof(opt), "--%s", o->name);
			rc |= complete_line(o, opt, b);
		}
		if (letter_with(t, o, bit)) {
			snprintf(opt, sizeof(opt), "-%c", o->letter);
			rc |= complete_line(o, opt, b);
		}
	}
	return rc ? -1 : 0;
}

int
sbx_opts_complete_subs(const struct sbx_opts *t, int argc, char *const argv[],
    struct sbx_buf *b)
{
	const char	*name, *p, *sp;
	size_t		 i, j, n;
	int		 k, rc = 0;

	for (i = 0; i < t->nsub; i++) {
		name = t->sub[i].name;
		/* The words after the given ones... */
		if (!sub_prefix(name, argc, argv))
			continue;
		for (p = name, k = 0; k < argc; k++) {
			p += strcspn(p, " ");
			p += strspn(p, " ");
		}
		if (*p == '\0')
			continue;
		sp = strchr(p, ' ');
		n = sp ? (size_t)(sp - p) : strlen(p);
		/* ...once. */
		for (j = 0; j < i; j++) {
			const char *q = t->sub[j].name;

			if (!sub_prefix(q, argc, argv))
				continue;
			for (k = 0; k < argc; k++) {
				q += strcspn(q, " ");
				q += strspn(q, " ");
			}
			if (strncmp(q, p, n) == 0 && (q[n] == ' ' ||
			    q[n] == '\0'))
				break;
		}
		if (j == i)
			rc |= sbx_buf_printf(b, "%.*s\n", (int)n, p);
	}
	return rc ? -1 : 0;
}

int
sbx_opts_complete_operands(const struct sbx_opts *t, unsigned bit,
    struct sbx_buf *b)
{
	const char	*ops = bit == t->main ? t->main_operands : NULL;
	size_t		 i;

	for (i = 0; ops == NULL && i < t->nsub; i++)
		if (t->sub[i].bit == bit)
			ops = t->sub[i].operands;
	return ops != NULL ? sbx_buf_printf(b, "%s\n", ops) : 0;
}

unsigned
sbx_opts_complete_bit(const struct sbx_opts *t, int argc, char *const argv[])
{
	unsigned	 bit;
	int		 used;

	if (argc == 0)
		return t->main != 0 ? t->main : ~0u;
	bit = sbx_opts_sub_find(t, argc, argv, &used);
	return used == argc ? bit : 0;
}
