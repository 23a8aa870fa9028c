/* t-tap: what tap.h's skip, skip_n, skip_all, diag and is_* print.
 *
 * Each case runs in a child whose stdout is a pipe; the parent compares
 * the exact TAP text, since prove reads it line by line: a skip must be
 * "ok N # skip reason" on one line, a comment must start with "#".
 */
#include <sys/wait.h>

#include <errno.h>
#include <unistd.h>

#include "tap.h"

/* Run fn in a child with stdout captured into out; its exit status. */
static int
captured(void (*fn)(void), char *out, size_t size)
{
	size_t	 len = 0;
	ssize_t	 n;
	pid_t	 pid;
	int	 p[2], st;

	out[0] = '\0';
	fflush(stdout);
	if (pipe(p) == -1 || (pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		close(p[0]);
		if (dup2(p[1], 1) == -1)
			_exit(99);
		tap_n = tap_failed = 0;
		fn();
		fflush(stdout);
		_exit(tap_failed ? 3 : 0);
	}
	close(p[1]);
	while (len < size - 1) {
		n = read(p[0], out + len, size - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	out[len] = '\0';
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR)
			return -1;
	return st;
}

static void
do_skips(void)
{
	ok(1, "first");
	skip("needs %s", "root");
	skip_n(2, "two\nlines");
	skip_n(0, "none");
	ok(1, "last");
}

static void
do_diag(void)
{
	diag("plain %d", 7);
	diag("two\nlines\n");
	is_int(1, 2, "is_int differs");
	is_str("a", "b", "is_str differs");
	is_str(NULL, "b", "is_str null");
}

static void
do_skip_all(void)
{
	skip_all("no %s here", "cgroup");
}

int
main(void)
{
	char	 out[4096];
	int	 st;

	st = captured(do_skips, out, sizeof(out));
	ok(st == 0, "skips: the child passed (status %#x)", st);
	is_str(out,
	    "ok 1 - first\n"
	    "ok 2 # skip needs root\n"
	    "ok 3 # skip two lines\n"
	    "ok 4 # skip two lines\n"
	    "ok 5 - last\n",
	    "skip and skip_n: one numbered line a test, reason on one line");

	st = captured(do_diag, out, sizeof(out));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 3,
	    "diag: the child's failures were counted (status %#x)", st);
	is_str(out,
	    "# plain 7\n"
	    "# two\n"
	    "# lines\n"
	    "not ok 1 - is_int differs\n"
	    "#   got: 1 want: 2\n"
	    "not ok 2 - is_str differs\n"
	    "#   got:  'a'\n"
	    "#   want: 'b'\n"
	    "not ok 3 - is_str null\n"
	    "#   got:  '(null)'\n"
	    "#   want: 'b'\n",
	    "diag: every line a comment; is_* explain a failure with it");

	st = captured(do_skip_all, out, sizeof(out));
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "skip_all exits 0 (status %#x)", st);
	is_str(out, "1..0 # skip no cgroup here\n",
	    "skip_all: the plan of a file that skips everything");

	return done_testing();
}
