/* error.h: the structured error every lib function fills on failure.
 *
 * Lib code never prints or exits; it returns -1 and describes the failure
 * here, in the vocabulary of the envelope (DESIGN.md §5), and cmd/ decides
 * how to show it (text or envelope) and which exit status to use.
 */
#ifndef SBX_ERROR_H
#define SBX_ERROR_H

#include <stdarg.h>

/* Failure kinds of the envelope. */
#define SBX_K_INVALID_ARGS	"invalid_args"
#define SBX_K_REJECTED		"rejected"
#define SBX_K_UNAVAILABLE	"unavailable"
#define SBX_K_TIMEOUT		"timeout"
#define SBX_K_EXECUTION_ERROR	"execution_error"
#define SBX_K_NOT_FOUND		"not_found"
#define SBX_K_USER_DENIED	"user_denied"

struct sbx_error {
	const char	*kind;		/* one of SBX_K_*; NULL when unset */
	const char	*field;		/* argument at fault, or NULL */
	const char	*reason;	/* stable snake_case code, or NULL */
	int		 retryable;
	int		 sys_errno;	/* errno behind it, or 0 */
	char		 message[1024];	/* for people; lowercase, no period */
	char		 hint[512];	/* how to repair, or "" */
};

int	sbx_error_set(struct sbx_error *, const char *kind, const char *field,
	    const char *reason, const char *fmt, ...)
	    __attribute__((format(printf, 5, 6)));
int	sbx_error_sys(struct sbx_error *, const char *reason, const char *fmt,
	    ...) __attribute__((format(printf, 3, 4)));
void	sbx_error_hint(struct sbx_error *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
int	sbx_error_kind_retryable(const char *kind);
/* e is about the state file path (relative to the root): the message is
 * made to name it ("PATH: ..." unless it names it already) and, fmt given,
 * the hint says how to repair it.  Every refusal of a damaged file goes
 * through here, so none leaves a person guessing which file it was. */
void sbx_error_in_file(struct sbx_error *, const char *path, const char *fmt,
    ...) __attribute__((format(printf, 3, 4)));
/* Is e a missing file or directory (kind not_found, or ENOENT)? */
int sbx_error_absent(const struct sbx_error *);

#endif
