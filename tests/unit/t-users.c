/* t-users: /etc/passwd look-ups without NSS, and creating the system user
 * through a useradd program.
 *
 * The look-ups read the real /etc/passwd (every system has root) and are
 * compared with the file parsed here.  sbx_user_create runs stand-in
 * useradd scripts on a scratch --prefix in a temp dir: what they are
 * given (argv, environment, stdin) and every way they can fail.  Nothing
 * on the host changes; nothing needs root.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "users.h"

#define MAXENT	4096

static char	 tmp[64];
static char	 prefix[128];

/* /etc/passwd, parsed here: name, uid and home of each entry. */
static struct ent {
	char	 name[64];
	char	 home[256];
	uid_t	 uid;
} ents[MAXENT];
static size_t	 nents;

static void
parse_passwd(void)
{
	char	 line[1024], *f[7], *p;
	FILE	*fp;
	int	 i;

	if ((fp = fopen("/etc/passwd", "re")) == NULL)
		return;
	while (nents < MAXENT && fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		p = line;
		for (i = 0; i < 7; i++)
			f[i] = strsep(&p, ":");
		if (f[6] == NULL || f[0][0] == '\0' || f[0][0] == '#' ||
		    f[0][0] == '+' ||
		    f[0][0] == '-' || f[2][0] == '\0')
			continue;
		snprintf(ents[nents].name, sizeof(ents[nents].name), "%s",
		    f[0]);
		snprintf(ents[nents].home, sizeof(ents[nents].home), "%s",
		    f[5]);
		ents[nents].uid = (uid_t)strtoul(f[2], NULL, 10);
		nents++;
	}
	fclose(fp);
}

static int
known_uid(uid_t uid)
{
	size_t	 i;

	for (i = 0; i < nents; i++)
		if (ents[i].uid == uid)
			return 1;
	return 0;
}

struct walk {
	size_t	 n;
	size_t	 stop_at;	/* 0: never */
	int	 same;		/* each entry as parsed here */
};

static int
walk_fn(const char *name, uid_t uid, const char *home, void *arg)
{
	struct walk	*w = arg;

	if (w->n >= nents || strcmp(name, ents[w->n].name) != 0 ||
	    uid != ents[w->n].uid || strcmp(home, ents[w->n].home) != 0) {
		if (w->same)
			diag("  entry %zu: %s %u %s", w->n, name,
			    (unsigned)uid, home);
		w->same = 0;
	}
	w->n++;
	return w->stop_at != 0 && w->n == w->stop_at ? 42 : 0;
}

static void
test_lookups(void)
{
	struct walk	 w;
	uid_t		 uid, miss;
	gid_t		 gid;
	char		 name[64], *home;
	size_t		 i;

	parse_passwd();
	if (nents == 0) {
		skip_n(10, "no readable /etc/passwd");
		return;
	}
	uid = 12345;
	gid = 12345;
	ok(sbx_user_by_name("root", &uid, &gid) == 0 && uid == 0 && gid == 0,
	    "root is uid 0, gid 0");
	snprintf(name, sizeof(name), "sbx-t-nouser-%ld", (long)getpid());
	uid = 12345;
	ok(sbx_user_by_name(name, &uid, &gid) == -1 && uid == 12345,
	    "a missing name: -1, ids untouched");
	ok(sbx_user_by_name("roo", &uid, &gid) == -1 &&
	    sbx_user_by_name("root ", &uid, &gid) == -1 &&
	    sbx_user_by_name("ROOT", &uid, &gid) == -1 &&
	    sbx_user_by_name("", &uid, &gid) == -1,
	    "names match exactly (no prefix, space, case or empty match)");
	ok(sbx_user_by_name(ents[nents - 1].name, &uid, &gid) == 0 &&
	    uid == ents[nents - 1].uid,
	    "the last entry is found (%s)", ents[nents - 1].name);

	home = sbx_user_home(0);
	for (i = 0; i < nents && ents[i].uid != 0; i++)
		;
	ok(home != NULL && i < nents && strcmp(home, ents[i].home) == 0,
	    "root's home as the file says (%s)", home ? home : "-");
	free(home);
	for (miss = 3999999999u; known_uid(miss); miss--)
		;
	ok(sbx_user_home(miss) == NULL, "a uid not in the file: no home");
	ok(sbx_user_home((uid_t)-1) == NULL, "uid -1: no home");

	memset(&w, 0, sizeof(w));
	w.same = 1;
	ok(sbx_user_each(walk_fn, &w) == 0 && w.n == nents && w.same,
	    "sbx_user_each: every entry, in order, as parsed (%zu)", nents);
	memset(&w, 0, sizeof(w));
	w.same = 1;
	w.stop_at = nents > 1 ? 2 : 1;
	ok(sbx_user_each(walk_fn, &w) == 42 && w.n == w.stop_at,
	    "sbx_user_each: stops when fn returns non-zero, and returns it");
	memset(&w, 0, sizeof(w));
	w.same = 1;
	w.stop_at = nents;
	ok(sbx_user_each(walk_fn, &w) == 42 && w.n == nents,
	    "sbx_user_each: a stop at the last entry is returned too");
}

/* opt is in argv (before `-- NAME`), followed by val when not NULL. */
static void
has(const char **argv, int n, const char *opt, const char *val)
{
	int	 i;

	for (i = 1; i < n - 2; i++)
		if (strcmp(argv[i], opt) == 0)
			break;
	ok(i < n - 2 && (val == NULL || (i + 1 < n - 2 &&
	    strcmp(argv[i + 1], val) == 0)), "argv: %s%s%s", opt,
	    val ? " " : "", val ? val : "");
}

static void
test_argv(void)
{
	const char	*argv[SBX_USERADD_ARGV];
	int		 n, i, dashes = -1, has_prefix = 0;

	memset(argv, 0xa5, sizeof(argv));
	n = sbx_user_create_argv("/x/useradd", NULL, "sbx", argv);
	ok(n > 2 && n < SBX_USERADD_ARGV && argv[n] == NULL &&
	    strcmp(argv[0], "/x/useradd") == 0 &&
	    strcmp(argv[n - 1], "sbx") == 0 && strcmp(argv[n - 2], "--") == 0,
	    "argv: the program first, `-- NAME` last, NULL-terminated (%d)",
	    n);
	for (i = 1; i < n; i++)
		if (strcmp(argv[i], "--prefix") == 0)
			has_prefix = 1;
	ok(!has_prefix, "argv: no --prefix without one");
	has(argv, n, "--system", NULL);
	has(argv, n, "--user-group", NULL);
	has(argv, n, "--no-create-home", NULL);
	has(argv, n, "--home-dir", "/nonexistent");
	for (i = 1; i < n - 1; i++)
		if (strcmp(argv[i], "--shell") == 0)
			break;
	ok(i < n - 1 && (strcmp(argv[i + 1], SBX_NOLOGIN) == 0 ||
	    strcmp(argv[i + 1], "/bin/false") == 0),
	    "argv: --shell nologin or /bin/false");

	memset(argv, 0xa5, sizeof(argv));
	n = sbx_user_create_argv("/x/useradd", "/scratch", "-rf", argv);
	for (i = 1; i < n; i++)
		if (strcmp(argv[i], "--") == 0 && dashes < 0)
			dashes = i;
	has(argv, n, "--prefix", "/scratch");
	ok(n < SBX_USERADD_ARGV && argv[n] == NULL && dashes == n - 2 &&
	    strcmp(argv[n - 1], "-rf") == 0,
	    "argv: a name like an option comes after `--`");
}

/* A stand-in useradd: finds --prefix and the name, then runs body. */
static int
stand_in(const char *file, const char *body, char *path, size_t size)
{
	int	 fd, rc;
	char	 text[4096];

	snprintf(path, size, "%s/%s", tmp, file);
	snprintf(text, sizeof(text), "#!/bin/sh\n"
	    "p= n=\n"
	    "for a in \"$@\"; do\n"
	    "\tcase $prev in --prefix) p=$a ;; --) n=$a ;; esac\n"
	    "\tprev=$a\n"
	    "done\n"
	    "%s\n", body);
	(void)unlink(path);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
	    0700)) == -1)
		return -1;
	rc = write(fd, text, strlen(text)) == (ssize_t)strlen(text) ? 0 : -1;
	close(fd);
	return rc;
}

/* Reset the scratch passwd file to one line. */
static void
scratch_passwd(void)
{
	char	 path[192];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/etc/passwd", prefix);
	if ((f = fopen(path, "we")) != NULL) {
		fputs("root:x:0:0:root:/root:/bin/sh\n", f);
		fclose(f);
	}
}

static char *
slurp(const char *rel)
{
	static char	 buf[8192];
	char		 path[192];
	ssize_t		 n;
	int		 fd;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "%s/%s", prefix, rel);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

static int
is_fail(const struct sbx_error *e, const char *words)
{
	int	 good;

	good = e->kind != NULL && strcmp(e->kind, SBX_K_EXECUTION_ERROR) == 0
	    && e->reason != NULL && strcmp(e->reason, "useradd_failed") == 0
	    && strstr(e->message, words) != NULL;
	if (!good)
		diag("  got kind %s reason %s: %s", e->kind ? e->kind :
		    "(null)", e->reason ? e->reason : "(null)", e->message);
	return good;
}

static void
test_create(void)
{
	const char	*argv[SBX_USERADD_ARGV];
	struct sbx_error e;
	char		 ua[128], want[1024], path[192];
	const char	*got;
	uid_t		 uid;
	gid_t		 gid;
	int		 n, i, rc;

	snprintf(path, sizeof(path), "%s/etc", prefix);
	if (mkdir(prefix, 0755) == -1 || mkdir(path, 0755) == -1) {
		skip_n(13, "cannot make a scratch root: %s", strerror(errno));
		return;
	}

	/* It works: the ids are read back from the file. */
	scratch_passwd();
	setenv("SBX_T_USERS_LEAK", "1", 1);
	stand_in("ok", "env >\"$p/env\"\n"
	    "printf '%s\\n' \"$@\" >\"$p/args\"\n"
	    "if read x; then echo data >\"$p/stdin\"; "
	    "else echo eof >\"$p/stdin\"; fi\n"
	    "echo \"$n:x:990:991:sbx sandboxes:/nonexistent:/bin/false\" "
	    ">>\"$p/etc/passwd\"", ua, sizeof(ua));
	uid = gid = 12345;
	memset(&e, 0, sizeof(e));
	rc = sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e);
	ok(rc == 0 && uid == 990 && gid == 991, "created: the ids from the "
	    "passwd file (%u:%u) %s", (unsigned)uid, (unsigned)gid, e.message);
	n = sbx_user_create_argv(ua, prefix, "sbx", argv);
	want[0] = '\0';
	for (i = 1; i < n; i++) {
		strcat(want, argv[i]);
		strcat(want, "\n");
	}
	is_str(slurp("args"), want, "useradd got exactly that argv");
	got = slurp("env");
	ok(strstr(got, "PATH=/usr/sbin:/usr/bin:/sbin:/bin\n") != NULL &&
	    strstr(got, "LC_ALL=C\n") != NULL &&
	    strstr(got, "SBX_T_USERS_LEAK") == NULL &&
	    strstr(got, "HOME=") == NULL,
	    "useradd's environment is fixed: nothing of ours reaches it");
	is_str(slurp("stdin"), "eof\n", "useradd's stdin is empty");
	unsetenv("SBX_T_USERS_LEAK");

	/* It fails, and says why on stdout and stderr. */
	scratch_passwd();
	stand_in("fails", "echo \"useradd: group '$n' exists\"\n"
	    "printf 'second\\tline\\n\\n' >&2\nexit 9", ua, sizeof(ua));
	memset(&e, 0, sizeof(e));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "cannot create the system user sbx") &&
	    is_fail(&e, " failed: useradd: group 'sbx' exists second line") &&
	    e.message[strlen(e.message) - 1] == 'e' &&
	    strstr(e.hint, "run_as") != NULL &&
	    strstr(e.hint, SBX_USERADD " --system") != NULL,
	    "exit 9: its words on one line, and a hint");

	/* It says it worked but the user is not there. */
	scratch_passwd();
	stand_in("liar", "exit 0", ua, sizeof(ua));
	memset(&e, 0, sizeof(e));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "succeeded but no usable user sbx"),
	    "exit 0 without the user: the file is trusted, not the status");

	/* The user it made is root, or in root's group. */
	scratch_passwd();
	stand_in("uid0", "echo \"$n:x:0:991::/:/bin/false\" "
	    ">>\"$p/etc/passwd\"", ua, sizeof(ua));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "no usable user"), "a user with uid 0 is refused");
	scratch_passwd();
	stand_in("gid0", "echo \"$n:x:990:0::/:/bin/false\" "
	    ">>\"$p/etc/passwd\"", ua, sizeof(ua));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "no usable user"), "a user with gid 0 is refused");

	/* Another name than asked for is not the user. */
	scratch_passwd();
	stand_in("other", "echo \"x$n:x:990:991::/:/bin/false\" "
	    ">>\"$p/etc/passwd\"", ua, sizeof(ua));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "no usable user"), "another name does not count");

	/* Cannot be run at all; killed. */
	snprintf(ua, sizeof(ua), "%s/no-such-useradd", tmp);
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "could not be run"), "a missing useradd: could not "
	    "be run");
	stand_in("killed", "kill -9 $$", ua, sizeof(ua));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "was killed"), "a killed useradd: was killed");

	/* Talkative: 1 MiB of output never blocks it, the message stays
	 * bounded. */
	stand_in("loud", "i=0\nwhile [ $i -lt 16384 ]; do "
	    "echo 0123456789012345678901234567890123456789012345678901234567"
	    "890123; i=$((i+1)); done\nexit 1", ua, sizeof(ua));
	rc = sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e);
	got = strstr(e.message, "failed: ");
	ok(rc == -1 && is_fail(&e, "failed: 0123456789") &&
	    strlen(got + 8) <= 511,
	    "1 MiB of output: drained, at most 511 bytes of it kept (%zu)",
	    got ? strlen(got + 8) : 0);

	/* Control characters never reach the message. */
	stand_in("ctl", "printf 'a\\033[2Jb\\rc\\001d'\nexit 1", ua,
	    sizeof(ua));
	ok(sbx_user_create(ua, prefix, "sbx", &uid, &gid, &e) == -1 &&
	    is_fail(&e, "failed: a [2Jb c d"),
	    "escape sequences and control characters are blanked");
}

static void
cleanup(void)
{
	static const char *const files[] = {
		"etc/passwd", "env", "args", "stdin",
	};
	static const char *const scripts[] = {
		"ok", "fails", "liar", "uid0", "gid0", "other", "killed",
		"loud", "ctl",
	};
	char	 path[192];
	size_t	 i;

	if (tmp[0] == '\0')
		return;
	for (i = 0; i < sizeof(files) / sizeof(*files); i++) {
		snprintf(path, sizeof(path), "%s/%s", prefix, files[i]);
		(void)unlink(path);
	}
	snprintf(path, sizeof(path), "%s/etc", prefix);
	(void)rmdir(path);
	(void)rmdir(prefix);
	for (i = 0; i < sizeof(scripts) / sizeof(*scripts); i++) {
		snprintf(path, sizeof(path), "%s/%s", tmp, scripts[i]);
		(void)unlink(path);
	}
	(void)rmdir(tmp);
}

int
main(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/t-users.XXXXXX");
	if (mkdtemp(tmp) == NULL)
		skip_all("no temp dir: %s", strerror(errno));
	atexit(cleanup);
	snprintf(prefix, sizeof(prefix), "%s/root", tmp);

	test_lookups();
	test_argv();
	test_create();
	return done_testing();
}
