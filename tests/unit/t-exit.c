/* t-exit.c: sbx_exit_for, the one table from error kind (and the reasons
 * with a status of their own) to the exit statuses of DESIGN.md §5. */
#include <string.h>

#include "cli.h"
#include "tap.h"

static int
code(const char *kind, const char *reason)
{
	struct sbx_error	 e;

	memset(&e, 0, sizeof(e));
	e.kind = kind;
	e.reason = reason;
	return sbx_exit_for(&e);
}

int
main(void)
{
	ok(code(SBX_K_INVALID_ARGS, "x") == 65, "invalid_args -> 65");
	ok(code(SBX_K_REJECTED, "x") == 77, "rejected -> 77");
	ok(code(SBX_K_UNAVAILABLE, NULL) == 69, "unavailable -> 69");
	ok(code(SBX_K_TIMEOUT, NULL) == 75, "timeout -> 75");
	ok(code(SBX_K_EXECUTION_ERROR, "x") == 71, "execution_error -> 71");
	ok(code(SBX_K_NOT_FOUND, NULL) == 1, "not_found -> 1");
	ok(code(SBX_K_USER_DENIED, NULL) == 1, "user_denied -> 1");
	ok(code(SBX_K_INVALID_ARGS, "config_invalid") == 78,
	    "config_invalid -> 78, whatever the kind");
	ok(code(SBX_K_EXECUTION_ERROR, "stdout_write") == 74,
	    "stdout_write -> 74");
	ok(code(NULL, NULL) == 70, "no kind -> 70");
	ok(code("no_such_kind", NULL) == 70, "an unknown kind -> 70");
	ok(sbx_exit_for(NULL) == 70, "no error -> 70");
	return done_testing();
}
