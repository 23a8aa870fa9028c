/* t-agentfs: sbx file's paths, opens, reads, writes, edits, lists, and the
 * parsing of ripgrep's output (agentfs.c, filesearch.c).  As root
 * the tree is handed to nobody and the test becomes nobody, as sbx-file
 * does, so permissions are the kernel's, not root's. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "agentfs.h"
#include "filesearch.h"
#include "fsutil.h"
#include "identity.h"

#define HOME_IN "/workspace/agents/a"

static char tmpl[] = "/tmp/t-agentfs.XXXXXX";
static int  homefd;

static void
put(const char *rel, const char *s)
{
	char  p[PATH_MAX];
	FILE *f;

	snprintf(p, sizeof(p), "%s/home/%s", tmpl, rel);
	if ((f = fopen(p, "w")) != NULL) {
		fputs(s, f);
		fclose(f);
	}
}

static char *
get(const char *rel)
{
	static char buf[65536];
	char	    p[PATH_MAX];
	size_t	    n = 0;
	FILE	   *f;

	buf[0] = '\0';
	snprintf(p, sizeof(p), "%s/%s", tmpl, rel);
	if ((f = fopen(p, "r")) != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* The reason of a path refused by sbx_agentfs_path, or "ok:REL". */
static const char *
path_reason(const char *p, size_t n)
{
	static char	 out[PATH_MAX + 8];
	struct sbx_error e;
	char		 rel[PATH_MAX];

	memset(&e, 0, sizeof(e));
	if (sbx_agentfs_path(HOME_IN, p, n, rel, sizeof(rel), &e) == 0) {
		snprintf(out, sizeof(out), "ok:%s", rel);
		return out;
	}
	return e.reason != NULL ? e.reason : "?";
}

static void
test_paths(void)
{
	char big[PATH_MAX + 10], comp[NAME_MAX + 10];

	is_str(path_reason("", 0), "empty", "path: empty");
	is_str(path_reason("a\0b", 3), "nul_byte", "path: NUL inside");
	is_str(path_reason("a\nb", 3), "control_character", "path: newline");
	is_str(path_reason("a\x1b[2J", 5), "control_character", "path: ESC");
	is_str(path_reason("a\x7f", 2), "control_character", "path: DEL");
	is_str(path_reason("a//b", 4), "empty_component", "path: a//b");
	is_str(path_reason("//a", 3), "empty_component", "path: //a");
	is_str(path_reason("a//", 3), "empty_component", "path: a//");
	is_str(path_reason("..", 2), "traversal", "path: ..");
	is_str(path_reason("../x", 4), "traversal", "path: ../x");
	is_str(path_reason("a/../..", 7), "traversal", "path: a/../..");
	is_str(path_reason("a/..", 4), "traversal",
	    "path: a/.. (even "
	    "harmless, no normalising)");
	is_str(path_reason(HOME_IN "/..", strlen(HOME_IN "/..")), "traversal",
	    "path: absolute home/..");
	is_str(path_reason("/etc/passwd", 11), "outside_home",
	    "path: /etc/passwd");
	is_str(path_reason("/", 1), "outside_home", "path: /");
	is_str(path_reason("/workspace/agents/ab/x", 22), "outside_home",
	    "path: a sibling home whose name starts like ours");
	is_str(path_reason("/workspace/agents", 17), "outside_home",
	    "path: the parent of the home");
	is_str(path_reason("/workspace/shared/x", 19), "outside_home",
	    "path: /workspace/shared (not enabled)");
	memset(big, 'a', sizeof(big));
	for (size_t i = 100; i < sizeof(big); i += 100)
		big[i] = '/';
	is_str(path_reason(big, PATH_MAX + 1), "too_long", "path: too long");
	memset(comp, 'a', sizeof(comp));
	is_str(path_reason(comp, NAME_MAX + 1), "component_too_long",
	    "path: component too long");
	is_str(path_reason(".", 1), "ok:.", "path: . is the home");
	is_str(path_reason("./a/./b", 7), "ok:a/b",
	    "path: . components "
	    "dropped");
	is_str(path_reason("src/", 4), "ok:src", "path: one trailing slash");
	is_str(path_reason("%2e%2e", 6), "ok:%2e%2e", "path: %2e%2e is a name");
	is_str(path_reason("...", 3), "ok:...", "path: ... is a name");
	is_str(path_reason(HOME_IN, strlen(HOME_IN)), "ok:.",
	    "path: the home, absolute");
	is_str(path_reason(HOME_IN "/x/y", strlen(HOME_IN "/x/y")), "ok:x/y",
	    "path: absolute under the home");
}

static struct sbx_agentfs fs;

static const char *
read_reason(const char *rel, json_t **res)
{
	static struct sbx_error	   e;
	struct sbx_agentfs_readopt o = { 0, 0, 0, 0 };
	json_t			  *r = NULL;

	memset(&e, 0, sizeof(e));
	if (sbx_agentfs_read(&fs, rel, &o, &r, &e) == 0) {
		if (res != NULL)
			*res = r;
		else
			json_decref(r);
		return "ok";
	}
	return e.reason != NULL ? e.reason : "?";
}

static const char *
write_reason(const char *rel, const char *data, int dirs, int mode)
{
	static struct sbx_error e;
	json_t		       *r = NULL;

	memset(&e, 0, sizeof(e));
	if (sbx_agentfs_write(&fs, rel, data, strlen(data), dirs, mode, &r,
		&e) == 0) {
		json_decref(r);
		return "ok";
	}
	return e.reason != NULL ? e.reason : "?";
}

static void
on_alarm(int sig)
{
	(void)sig;
	(void)!write(1, "not ok - blocked on a FIFO\n", 27);
	_exit(1);
}

static void
test_open(void)
{
	struct sockaddr_un sa;
	json_t		  *r = NULL;
	int		   s;

	put("../outside", "outside\n");
	put("../other/secret", "other\n");
	put("f", "one\ntwo\n");
	(void)!symlinkat("/etc", homefd, "etc");
	(void)!symlinkat("../other", homefd, "oth");
	(void)!symlinkat("/proc/self/root", homefd, "pr");
	(void)!symlinkat("../outside", homefd, "up");
	(void)!symlinkat("f", homefd, "inlink");
	mkfifoat(homefd, "fifo", 0644);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/home/sock", tmpl);
	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) >= 0) {
		(void)bind(s, (struct sockaddr *)&sa, sizeof(sa));
		close(s);
	}

	signal(SIGALRM, on_alarm);
	alarm(10);
	is_str(read_reason("etc/passwd", NULL), "symlink_escape",
	    "read through a link to /etc: refused by the kernel");
	is_str(read_reason("etc", NULL), "symlink_escape",
	    "read the link to /etc itself");
	is_str(read_reason("oth/secret", NULL), "symlink_escape",
	    "read through a link to another agent's home");
	is_str(read_reason("pr/etc/passwd", NULL), "symlink_escape",
	    "read through a link to /proc/self/root");
	is_str(read_reason("up", NULL), "symlink_escape",
	    "read a link that climbs out");
	is_str(read_reason("fifo", NULL), "not_regular_file",
	    "read a FIFO: refused, no hang");
	is_str(read_reason("sock", NULL), "not_regular_file",
	    "read a socket: refused");
	if (faccessat(homefd, "null", F_OK, AT_SYMLINK_NOFOLLOW) == 0)
		is_str(read_reason("null", NULL), "not_regular_file",
		    "read a character device: refused");
	else
		skip("no device node (mknod needs root)");
	is_str(read_reason("nope", NULL), "not_found", "read a missing file");
	is_str(read_reason("f/x", NULL), "not_a_directory",
	    "read beneath a file");
	is_str(read_reason("inlink", &r), "ok",
	    "read a link that stays in the home");
	is_str(json_string_value(json_object_get(r, "content")), "one\ntwo\n",
	    "... its target's content");
	json_decref(r);
	is_str(write_reason("fifo", "x", 0, -1), "not_regular_file",
	    "write over a FIFO: refused, no hang");
	is_str(write_reason("etc/passwd", "x", 0, -1), "symlink_escape",
	    "write through a link to /etc");
	is_str(write_reason("etc/new", "x", 1, -1), "symlink_escape",
	    "write --create-dirs through a link to /etc");
	is_str(write_reason("oth/secret", "x", 0, -1), "symlink_escape",
	    "write through a link to another agent's home");
	is_str(write_reason("up", "x", 0, -1), "symlink",
	    "write over a link (the link is not followed, not replaced)");
	is_str(write_reason("inlink", "x", 0, -1), "symlink",
	    "write over a link that stays inside: refused too");
	alarm(0);
	is_str(get("outside"), "outside\n",
	    "the file outside the home is "
	    "unchanged");
	is_str(get("other/secret"), "other\n",
	    "the other agent's file is "
	    "unchanged");
	ok(faccessat(homefd, "up", F_OK, AT_SYMLINK_NOFOLLOW) == 0 &&
		faccessat(homefd, "inlink", F_OK, AT_SYMLINK_NOFOLLOW) == 0,
	    "the links are still links");
}

static void
test_read(void)
{
	struct sbx_agentfs_readopt o = { 0, 0, 0, 0 };
	struct sbx_error	   e;
	json_t			  *r = NULL;
	int			   fd;

	put("lines", "1\n2\n3\n4\n5\n");
	o.start_line = 2;
	o.line_count = 2;
	ok(sbx_agentfs_read(&fs, "lines", &o, &r, &e) == 0 &&
		strcmp(json_string_value(json_object_get(r, "content")),
		    "2\n3\n") == 0 &&
		json_integer_value(json_object_get(r, "end_line")) == 3 &&
		json_integer_value(json_object_get(r, "next_start_line")) ==
		    4 &&
		json_integer_value(json_object_get(r, "total_lines")) == 5,
	    "read --start-line 2 --line-count 2");
	json_decref(r);
	memset(&o, 0, sizeof(o));
	o.tail_lines = 2;
	ok(sbx_agentfs_read(&fs, "lines", &o, &r, &e) == 0 &&
		strcmp(json_string_value(json_object_get(r, "content")),
		    "4\n5\n") == 0 &&
		json_object_get(r, "next_start_line") == NULL,
	    "read --tail-lines 2");
	json_decref(r);
	memset(&o, 0, sizeof(o));
	o.start_line = 9;
	ok(sbx_agentfs_read(&fs, "lines", &o, &r, &e) == -1 &&
		strcmp(e.reason, "beyond_end") == 0,
	    "read past the end");
	memset(&o, 0, sizeof(o));
	put("utf", "h\xc3\xa9llo w\xc3\xb6rld\n");
	o.max_chars = 3;
	ok(sbx_agentfs_read(&fs, "utf", &o, &r, &e) == 0 &&
		strcmp(json_string_value(json_object_get(r, "content")),
		    "h\xc3\xa9l") == 0 &&
		json_is_true(json_object_get(r, "truncated")) &&
		json_integer_value(json_object_get(r, "next_start_line")) == 1,
	    "read --max-chars counts characters, "
	    "cuts between them");
	json_decref(r);
	memset(&o, 0, sizeof(o));
	put("bin", "a");
	if ((fd = openat(homefd, "bin", O_WRONLY | O_APPEND)) >= 0) {
		(void)!write(fd, "\0b", 2);
		close(fd);
	}
	ok(sbx_agentfs_read(&fs, "bin", &o, &r, &e) == 0 &&
		json_is_true(json_object_get(r, "binary")),
	    "read a NUL: binary");
	json_decref(r);
	put("empty", "");
	ok(sbx_agentfs_read(&fs, "empty", &o, &r, &e) == 0 &&
		json_integer_value(json_object_get(r, "total_lines")) == 0,
	    "read an empty file");
	json_decref(r);
	/* Sparse: the cap is checked on the size, nothing is read. */
	if ((fd = openat(homefd, "big", O_WRONLY | O_CREAT, 0644)) >= 0) {
		(void)!ftruncate(fd, (off_t)SBX_AGENTFS_FILE_MAX + 1);
		close(fd);
	}
	is_str(read_reason("big", NULL), "too_large",
	    "read a file over the "
	    "cap: refused before reading");
	ok(sbx_agentfs_read(&fs, ".", &o, &r, &e) == 0 &&
		strcmp(json_string_value(json_object_get(r, "type")),
		    "directory") == 0 &&
		json_array_size(json_object_get(r, "entries")) > 5,
	    "read a directory: a listing");
	json_decref(r);
}

static void
test_write(void)
{
	struct stat st;

	is_str(write_reason("w", "new\n", 0, -1), "ok", "write a new file");
	ok(fstatat(homefd, "w", &st, 0) == 0 && (st.st_mode & 07777) == 0644 &&
		st.st_uid == geteuid(),
	    "... 0644, ours");
	(void)!fchmodat(homefd, "w", 0600, 0);
	is_str(write_reason("w", "again\n", 0, -1), "ok", "write it again");
	ok(fstatat(homefd, "w", &st, 0) == 0 && (st.st_mode & 07777) == 0600,
	    "... its mode is kept");
	is_str(get("home/w"), "again\n", "... its content replaced");
	is_str(write_reason("x", "m", 0, 0700), "ok", "write with a mode");
	ok(fstatat(homefd, "x", &st, 0) == 0 && (st.st_mode & 07777) == 0700,
	    "... that mode, whatever the umask");
	is_str(write_reason("s", "m", 0, 04755), "mode_not_allowed",
	    "write with setuid: refused");
	is_str(write_reason("d1/d2/f", "deep", 0, -1), "not_found",
	    "write into a missing directory");
	is_str(write_reason("d1/d2/f", "deep", 1, -1), "ok",
	    "write --create-dirs");
	is_str(get("home/d1/d2/f"), "deep", "... the file is there");
	is_str(write_reason(".", "x", 0, -1), "is_a_directory",
	    "write the home itself");
	is_str(write_reason("d1", "x", 0, -1), "is_a_directory",
	    "write over a directory");
	put("ro", "ro\n");
	(void)!fchmodat(homefd, "ro", 0444, 0);
	is_str(write_reason("ro", "x", 0, -1), "read_only",
	    "write a read-only file (0444)");
	is_str(get("home/ro"), "ro\n", "... unchanged");
	mkdirat(homefd, "rodir", 0755);
	put("rodir/f", "keep\n");
	(void)!fchmodat(homefd, "rodir", 0555, 0);
	is_str(write_reason("rodir/new", "x", 0, -1), "read_only_directory",
	    "write into a read-only directory");
	ok(faccessat(homefd, "rodir/new", F_OK, 0) == -1,
	    "... nothing created, no temp file left");
	(void)!fchmodat(homefd, "rodir", 0755, 0);
}

static const char *
edit_reason(const char *rel, const char *old, const char *new, int all,
    json_t **res, json_t **extra)
{
	static struct sbx_error e;
	json_t		       *r = NULL;

	memset(&e, 0, sizeof(e));
	if (sbx_agentfs_edit(&fs, rel, old, strlen(old), new, strlen(new), all,
		&r, extra, &e) == 0) {
		if (res != NULL)
			*res = r;
		else
			json_decref(r);
		return "ok";
	}
	return e.reason != NULL ? e.reason : "?";
}

static void
test_edit(void)
{
	struct sbx_buf b = SBX_BUF_INIT;
	struct stat    st;
	json_t	      *r = NULL, *x = NULL;
	int	       i;

	put("e", "alpha\nbeta\ngamma beta\n");
	(void)!fchmodat(homefd, "e", 0640, 0);
	is_str(edit_reason("e", "delta", "x", 0, NULL, &x), "no_match",
	    "edit: 0 matches");
	ok(json_integer_value(json_object_get(x, "count")) == 0, "... count 0");
	json_decref(x);
	is_str(edit_reason("e", "beta", "x", 0, NULL, &x), "multiple_matches",
	    "edit: 2 matches without --all");
	ok(json_integer_value(json_object_get(x, "count")) == 2 &&
		json_integer_value(
		    json_array_get(json_object_get(x, "lines"), 0)) == 2 &&
		json_integer_value(
		    json_array_get(json_object_get(x, "lines"), 1)) == 3,
	    "... count 2, lines 2 and 3");
	json_decref(x);
	is_str(get("home/e"), "alpha\nbeta\ngamma beta\n", "... unchanged");
	is_str(edit_reason("e", "alpha\n", "A\n", 0, &r, NULL), "ok",
	    "edit: 1 match");
	ok(json_integer_value(json_object_get(r, "replacements")) == 1 &&
		json_integer_value(json_object_get(r, "bytes_before")) == 22 &&
		json_integer_value(json_object_get(r, "bytes_after")) == 18,
	    "... replacements 1, bytes_before 22, bytes_after 18");
	json_decref(r);
	ok(fstatat(homefd, "e", &st, 0) == 0 && (st.st_mode & 07777) == 0640,
	    "... the mode is kept");
	is_str(edit_reason("e", "", "x", 0, NULL, NULL), "empty",
	    "edit: empty --old");
	for (i = 0; i < 1000; i++)
		sbx_buf_puts(&b, "tok\n");
	put("many", b.p);
	is_str(edit_reason("many", "tok", "T", 0, NULL, &x), "multiple_matches",
	    "edit: 1,000 matches without --all");
	ok(json_integer_value(json_object_get(x, "count")) == 1000 &&
		json_array_size(json_object_get(x, "lines")) ==
		    SBX_AGENTFS_LINES_SHOWN,
	    "... count 1000, the first 10 lines");
	json_decref(x);
	is_str(edit_reason("many", "tok", "T", 1, &r, NULL), "ok",
	    "edit --all: 1,000 matches");
	ok(json_integer_value(json_object_get(r, "replacements")) == 1000 &&
		json_integer_value(json_object_get(r, "bytes_after")) == 2000,
	    "... 1000 replacements, 2000 bytes");
	json_decref(r);
	is_str(edit_reason("ro", "ro", "rw", 0, NULL, NULL), "read_only",
	    "edit a read-only file");
	is_str(edit_reason("inlink", "one", "1", 0, NULL, NULL), "symlink",
	    "edit through a link: the link is not replaced");
	is_str(edit_reason("fifo", "a", "b", 0, NULL, NULL), "not_regular_file",
	    "edit a FIFO");
	is_str(edit_reason("oth/secret", "other", "x", 0, NULL, NULL),
	    "symlink_escape", "edit through a link to another home");
	is_str(get("other/secret"), "other\n", "... unchanged");
	sbx_buf_release(&b);
}

static void
test_list(void)
{
	struct sbx_error e;
	json_t		*r = NULL, *ent;
	size_t		 i;
	int		 saw_deep = 0, saw_link = 0, followed = 0;

	ok(sbx_agentfs_list(&fs, ".", 3, &r, &e) == 0, "list --depth 3");
	json_array_foreach (json_object_get(r, "entries"), i, ent) {
		const char *p = json_string_value(json_object_get(ent, "path"));
		const char *t = json_string_value(json_object_get(ent, "type"));
		saw_deep |= strcmp(p, "d1/d2/f") == 0;
		saw_link |= strcmp(p, "etc") == 0 && strcmp(t, "symlink") == 0;
		followed |=
		    strncmp(p, "etc/", 4) == 0 || strncmp(p, "oth/", 4) == 0;
	}
	ok(saw_deep && saw_link && !followed,
	    "... d1/d2/f listed, links "
	    "listed as links, never entered");
	json_decref(r);
	ok(sbx_agentfs_list(&fs, "d1", 1, &r, &e) == 0 &&
		json_array_size(json_object_get(r, "entries")) == 1,
	    "list d1 --depth 1: one entry");
	json_decref(r);
	ok(sbx_agentfs_list(&fs, ".", 17, &r, &e) == -1 &&
		strcmp(e.reason, "out_of_range") == 0,
	    "list --depth 17: refused");
	ok(sbx_agentfs_list(&fs, "etc", 1, &r, &e) == -1 &&
		strcmp(e.reason, "symlink_escape") == 0,
	    "list a link to /etc");
	ok(sbx_agentfs_list(&fs, "f", 1, &r, &e) == -1 &&
		strcmp(e.reason, "not_a_directory") == 0,
	    "list a file");
}

static void
test_search(void)
{
	struct sbx_filesearch q;
	struct sbx_strv	      v = SBX_STRV_INIT;
	struct sbx_error      e;
	const char	     *globs[] = { "*.c", "!x" };
	json_t		     *r = NULL, *m;
	size_t		      i;
	int		      has_dashed = 0;
	const char	     *out =
	    "{\"type\":\"begin\",\"data\":{\"path\":{\"text\":\"./a.txt\"}}}\n"
	    "{\"type\":\"context\",\"data\":{\"path\":{\"text\":\"./a.txt\"},"
	    "\"lines\":{\"text\":\"one\\n\"},\"line_number\":1}}\n"
	    "{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"./a.txt\"},"
	    "\"lines\":{\"text\":\"two foo\\n\"},\"line_number\":2,"
	    "\"submatches\":[{\"match\":{\"text\":\"foo\"},\"start\":4,"
	    "\"end\":7}]}}\n"
	    "{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"./a.txt\"},"
	    "\"lines\":{\"bytes\":\"Zm9vIP8K\"},\"line_number\":3,"
	    "\"submatches\":[{\"match\":{\"text\":\"foo\"},\"start\":0,"
	    "\"end\":3}]}}\n"
	    "{\"type\":\"end\",\"data\":{\"path\":{\"text\":\"./a.txt\"},"
	    "\"binary_offset\":null}}\n"
	    "{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"b.bin\"},"
	    "\"lines\":{\"text\":\"foo\\u0000\"},\"line_number\":1,"
	    "\"submatches\":[{\"match\":{\"text\":\"foo\"},\"start\":0,"
	    "\"end\":3}]}}\n"
	    "{\"type\":\"end\",\"data\":{\"path\":{\"text\":\"b.bin\"},"
	    "\"binary_offset\":3}}\n"
	    "{\"type\":\"summary\",\"data\":{}}\n";

	memset(&q, 0, sizeof(q));
	q.agent = "a";
	q.pattern = "-foo";
	q.path = ".";
	q.globs = globs;
	q.nglobs = 2;
	q.context = 1;
	q.max = 100;
	ok(sbx_filesearch_argv(&q, "/x/sbx-exec", &v, &e) == 0, "search argv");
	for (i = 0; i < v.n; i++)
		has_dashed |= strcmp(v.v[i], "--regexp=-foo") == 0;
	ok(has_dashed && strcmp(v.v[v.n - 1], ".") == 0 &&
		strcmp(v.v[v.n - 2], "--") == 0,
	    "... a pattern starting with - "
	    "stays a pattern; the path after --");
	sbx_strv_release(&v);
	q.pattern = "";
	ok(sbx_filesearch_argv(&q, "/x/sbx-exec", &v, &e) == -1 &&
		strcmp(e.reason, "empty") == 0,
	    "search: empty pattern refused");
	sbx_strv_release(&v);
	q.pattern = "foo";

	ok(sbx_filesearch_parse(&q, out, strlen(out), &r, &e) == 0 &&
		json_integer_value(json_object_get(r, "count")) == 2,
	    "parse: 2 matches, the binary file left out");
	ok(json_integer_value(json_object_get(r, "binary_skipped")) == 1,
	    "... binary_skipped 1");
	m = json_array_get(json_object_get(r, "matches"), 0);
	ok(m != NULL &&
		strcmp(json_string_value(json_object_get(m, "path")),
		    "a.txt") == 0 &&
		json_integer_value(json_object_get(m, "line")) == 2 &&
		json_integer_value(json_object_get(m, "column")) == 5 &&
		strcmp(json_string_value(json_object_get(m, "text")),
		    "two foo") == 0,
	    "... path a.txt (no ./), line 2, column 5, text");
	ok(json_array_size(json_object_get(m, "before")) == 1 &&
		strcmp(json_string_value(
			   json_array_get(json_object_get(m, "before"), 0)),
		    "one") == 0 &&
		json_array_size(json_object_get(m, "after")) == 1,
	    "... before [one], after [the next match's line]");
	m = json_array_get(json_object_get(r, "matches"), 1);
	ok(m != NULL &&
		strncmp(json_string_value(json_object_get(m, "text")), "foo ",
		    4) == 0,
	    "... a non-UTF-8 line (base64 bytes) decoded");
	json_decref(r);
	q.max = 1;
	ok(sbx_filesearch_parse(&q, out, strlen(out), &r, &e) == 0 &&
		json_integer_value(json_object_get(r, "count")) == 1 &&
		json_is_true(json_object_get(r, "truncated")),
	    "parse --max 1: one, truncated");
	json_decref(r);
	q.files = 1;
	ok(sbx_filesearch_parse(&q, "./a\nb/c\n", 8, &r, &e) == 0 &&
		json_array_size(json_object_get(r, "files")) == 1 &&
		json_is_true(json_object_get(r, "truncated")),
	    "parse --files --max 1");
	json_decref(r);
}

int
main(void)
{
	struct sbx_error e;
	char		 p[PATH_MAX];
	int		 rootfd;

	test_paths();
	if ((rootfd = t_tmpdir(tmpl)) == -1)
		skip_all("mkdtemp: %s", strerror(errno));
	close(rootfd);
	snprintf(p, sizeof(p), "%s/home", tmpl);
	mkdir(p, 0700);
	snprintf(p, sizeof(p), "%s/other", tmpl);
	mkdir(p, 0700);
	if (geteuid() == 0) {
		/* A device node, then the whole tree to nobody, and become
		 * nobody: the kernel's permissions, as in sbx-file. */
		snprintf(p, sizeof(p), "%s/home/null", tmpl);
		(void)mknod(p, S_IFCHR | 0666, makedev(1, 3));
		snprintf(p, sizeof(p), "chown -R 65534:65534 %s", tmpl);
		(void)!system(p);
		if (sbx_identity_become(65534, 65534, &e) == -1)
			skip_all("cannot become nobody: %s", e.message);
	}
	rootfd = open(tmpl, O_RDONLY | O_DIRECTORY);
	homefd = openat(rootfd, "home", O_RDONLY | O_DIRECTORY);
	fs.home_fd = homefd;
	snprintf(fs.home, sizeof(fs.home), "%s", HOME_IN);
	umask(077);
	test_open();
	test_read();
	test_write();
	test_edit();
	test_list();
	test_search();
	close(rootfd);
	return done_testing();
}
