/* psl.h: the Public Suffix List (publicsuffix.org), as Debian's
 * `publicsuffix` package ships it (/usr/share/publicsuffix/
 * public_suffix_list.dat), for one question: is this name a public
 * suffix, under which anyone may register a domain?  An allowlist
 * wildcard `*.co.uk` would then open every company of the UK, as `*.com`
 * would open the whole TLD (netpolicy.c refuses both).
 *
 * Only the ICANN section is read: the private section names services
 * (github.io, githubusercontent.com...) that allowlists name on purpose.
 * Rules in Unicode are kept in their xn-- (punycode) form, since the
 * proxy only ever sees that form.  Pure logic but for sbx_psl_system(),
 * which reads the file once per process.
 */
#ifndef SBX_PSL_H
#define SBX_PSL_H

#include <stddef.h>

#include "error.h"

#define SBX_PSL_PATH	"/usr/share/publicsuffix/public_suffix_list.dat"
/* The list is ~250 KiB today; a file over this is refused. */
#define SBX_PSL_FILE_MAX	(4u << 20)

struct sbx_psl {
	char	**rules;	/* "co.uk", "*.ck", "!www.ck"; sorted */
	size_t	  n;
};

/*
 * Parse the text of a list: one rule a line, `//` comments, blank lines;
 * the rules between "===BEGIN ICANN DOMAINS===" and "===END ICANN
 * DOMAINS===" only when the text has those markers, all of them
 * otherwise.  Rules are lowercased (ASCII) and converted to xn-- when
 * not ASCII; a rule that is neither a name, "*." and a name, nor "!" and
 * a name is skipped.  0, or -1 (ENOMEM) with e set.
 */
int	 sbx_psl_parse(struct sbx_psl *, const char *text, size_t len,
	    struct sbx_error *);
void	 sbx_psl_free(struct sbx_psl *);
/* Is the normalised (lowercase ASCII, no trailing dot) name a public
 * suffix: a rule names it, or a wildcard rule its parent and no
 * exception rule names it, or it has one label (the implicit "*"
 * rule)? */
int	 sbx_psl_is_suffix(const struct sbx_psl *, const char *name);
/*
 * The system's list, read from path (NULL: SBX_PSL_PATH) on the first
 * call and kept for the process; the same list after that whatever
 * path says.  NULL with e set (kind unavailable, reason psl_missing)
 * when it cannot be read: callers fail closed.
 */
const struct sbx_psl *sbx_psl_system(const char *path, struct sbx_error *);
/* Encode one Unicode label (UTF-8, len bytes) as "xn--..." (RFC 3492)
 * into out.  0, or -1 when it is not valid UTF-8 or does not fit. */
int	 sbx_psl_punycode(const char *label, size_t len, char *out,
	    size_t outsz);

#endif
