/* t-image: digest and name syntax, archive path checks, manifests, the
 * download URL policy, environment clones. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "fixture.h"
#include "tap.h"

#include "download.h"
#include "envelope.h"
#include "image.h"
#include "imageref.h"
#include "imagestore.h"
#include "manifest.h"
#include "rootfs.h"

static const char good[] =
    "99a141a7393453e4c2d530e13bc968a2d9cf51bc412cd6e447748b9864c7a8b8";

static void
t_digest(void)
{
	char	 s[80];

	ok(sbx_names_digest_valid(good), "a 64-digit lowercase digest");
	snprintf(s, sizeof(s), "%s", good);
	s[3] = 'A';
	ok(!sbx_names_digest_valid(s), "uppercase refused");
	s[3] = 'g';
	ok(!sbx_names_digest_valid(s), "non-hex refused");
	snprintf(s, sizeof(s), "%s0", good);
	ok(!sbx_names_digest_valid(s), "65 digits refused");
	snprintf(s, sizeof(s), "%.63s", good);
	ok(!sbx_names_digest_valid(s), "63 digits refused");
	ok(!sbx_names_digest_valid(""), "empty refused");
	ok(!sbx_names_digest_valid(NULL), "NULL refused");
	snprintf(s, sizeof(s), "sha256:%s", good);
	ok(!sbx_names_digest_valid(s), "a prefix refused");
}

static void
t_name(void)
{
	ok(sbx_names_image_valid("busybox"), "plain name");
	ok(sbx_names_image_valid("debian-12.5_slim"), "dots, dashes");
	ok(!sbx_names_image_valid("Busybox"), "uppercase refused");
	ok(!sbx_names_image_valid("-x"), "leading dash refused");
	ok(!sbx_names_image_valid("a/b"), "slash refused");
	ok(!sbx_names_image_valid("a\nb"), "newline refused");
	ok(!sbx_names_image_valid(good), "a digest is not a name");
	ok(!sbx_names_image_valid(""), "empty refused");
}

static void
t_path(void)
{
	char	 out[256];
	char	 longc[300];

	ok(sbx_image_path_norm("./usr//bin/", out, sizeof(out)) == 0 &&
	    strcmp(out, "usr/bin") == 0, "./usr//bin/ -> usr/bin");
	ok(sbx_image_path_norm("./", out, sizeof(out)) == 0 &&
	    strcmp(out, ".") == 0, "./ -> .");
	ok(sbx_image_path_norm("a/./b", out, sizeof(out)) == 0 &&
	    strcmp(out, "a/b") == 0, "a/./b -> a/b");
	ok(sbx_image_path_norm("../x", out, sizeof(out)) == -1, "../x");
	ok(sbx_image_path_norm("a/../../x", out, sizeof(out)) == -1,
	    "a/../../x");
	ok(sbx_image_path_norm("a/..", out, sizeof(out)) == -1, "a/..");
	ok(sbx_image_path_norm("/etc/passwd", out, sizeof(out)) == -1,
	    "absolute");
	ok(sbx_image_path_norm("a\nb", out, sizeof(out)) == -1, "newline");
	ok(sbx_image_path_norm("a\x7f", out, sizeof(out)) == -1, "DEL");
	ok(sbx_image_path_norm("..a/b..", out, sizeof(out)) == 0 &&
	    strcmp(out, "..a/b..") == 0, "dots inside a name are fine");
	memset(longc, 'a', 260);
	longc[260] = '\0';
	ok(sbx_image_path_norm(longc, out, sizeof(out)) == -1,
	    "a component over NAME_MAX");
	ok(sbx_image_path_norm("abc/def", out, 5) == -1, "output too small");
}

static int
has_change(json_t *diffs, const char *path, const char *change)
{
	json_t	*d;
	size_t	 i;

	json_array_foreach(diffs, i, d)
		if (strcmp(json_string_value(json_object_get(d, "path")),
		    path) == 0 && strcmp(json_string_value(json_object_get(d,
		    "change")), change) == 0)
			return 1;
	return 0;
}

static void
t_manifest(void)
{
	struct sbx_error e;
	char		 dir[] = "/tmp/t-image.XXXXXX", *s;
	json_t		*m, *m2, *m3, *diffs;
	int		 dfd, fd;

	if ((dfd = t_tmpdir(dir)) == -1) {
		ok(0, "temp dir");
		return;
	}
	mkdirat(dfd, "bin", 0755);
	fd = openat(dfd, "bin/tool", O_WRONLY | O_CREAT, 0755);
	(void)!write(fd, "hello\n", 6);
	close(fd);
	(void)!symlinkat("tool", dfd, "bin/link");
	m = sbx_manifest_build(dfd, 1, &e);
	ok(m != NULL, "manifest built");
	ok(json_array_size(json_object_get(m, "entries")) == 4,
	    "4 entries: ., bin, bin/link, bin/tool");
	s = json_dumps(m, JSON_SORT_KEYS | JSON_COMPACT);
	m2 = sbx_json_parse(s, strlen(s), 1 << 20, &e);
	free(s);
	diffs = json_array();
	sbx_manifest_diff(m, m2, diffs);
	ok(m2 != NULL && json_array_size(diffs) == 0,
	    "round trip: no differences");
	json_decref(diffs);
	is_str(json_string_value(json_object_get(json_array_get(
	    json_object_get(m, "entries"), 3), "sha256")),
	    "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03",
	    "sha256 of hello\\n recorded");
	{
		struct stat st;
		ok(fstatat(dfd, "bin/tool", &st, 0) == 0 &&
		    (st.st_mode & 0777) == 0555, "made read-only");
	}
	/* Damage it: change the file, add one, remove the link. */
	(void)!fchmodat(dfd, "bin/tool", 0755, 0);
	(void)!fchmodat(dfd, "bin", 0755, 0);
	fd = openat(dfd, "bin/tool", O_WRONLY | O_TRUNC);
	(void)!write(fd, "HELLO\n", 6);
	close(fd);
	(void)!fchmodat(dfd, "bin/tool", 0555, 0);
	fd = openat(dfd, "bin/new", O_WRONLY | O_CREAT, 0444);
	close(fd);
	unlinkat(dfd, "bin/link", 0);
	m3 = sbx_manifest_build(dfd, 0, &e);
	diffs = json_array();
	sbx_manifest_diff(m, m3, diffs);
	ok(has_change(diffs, "bin/tool", "sha256"), "changed content found");
	ok(!has_change(diffs, "bin/tool", "size"), "same size: no size "
	    "change");
	ok(has_change(diffs, "bin/new", "added"), "added file found");
	ok(has_change(diffs, "bin/link", "missing"), "missing link found");
	ok(has_change(diffs, "bin", "mode"), "mode change found");
	json_decref(diffs);
	json_decref(m);
	json_decref(m2);
	json_decref(m3);
	close(dfd);
	t_rmtree(dir);
}

/* The reason a URL is refused with, or "ok" (and *plain). */
static const char *
url_verdict(const char *url, int *plain)
{
	struct sbx_error e;

	memset(&e, 0, sizeof(e));
	*plain = -1;
	if (sbx_download_check(url, plain, &e) == 0)
		return "ok";
	return e.reason ? e.reason : "?";
}

static void
t_url(void)
{
	static const struct {
		const char	*url, *want;
		int		 plain;
	} cases[] = {
		{ "https://deb.example.org/rootfs.tar.zst", "ok", 0 },
		{ "https://example.org:8443/a?sig=x#f", "ok", 0 },
		{ "http://127.0.0.1:8080/x.tar.gz", "ok", 1 },
		{ "http://127.1.2.3/x", "ok", 1 },
		{ "http://127.1/x", "ok", 1 },		/* curl: 127.0.0.1 */
		{ "http://[::1]:9/x", "ok", 1 },
		{ "HTTP://127.0.0.1/x", "ok", 1 },
		{ "http://localhost/x", "insecure_http", 0 },
		{ "http://example.invalid/x", "insecure_http", 0 },
		{ "http://128.0.0.1/x", "insecure_http", 0 },
		{ "http://10.0.0.1/x", "insecure_http", 0 },
		{ "http://[::ffff:127.0.0.1]/x", "insecure_http", 0 },
		{ "http://[fe80::1%25eth0]/x", "insecure_http", 0 },
		{ "http://127.0.0.1.example.org/x", "insecure_http", 0 },
		{ "ftp://127.0.0.1/x", "unsupported_scheme", 0 },
		{ "file:///etc/passwd", "unsupported_scheme", 0 },
		{ "gopher://127.0.0.1/", "unsupported_scheme", 0 },
		{ "nosuchscheme://x/y", "unsupported_scheme", 0 },
		{ "https://u:p@example.org/x", "credentials_in_url", 0 },
		{ "https://u@example.org/x", "credentials_in_url", 0 },
		{ "https://", "invalid_url", 0 },
		/* curl reads three slashes as two; what it dials is what was
		 * checked (the parsed URL is handed over, CURLOPT_CURLU) */
		{ "http:///127.0.0.1/x", "ok", 1 },
		{ "https://exa mple.org/x", "invalid_url", 0 },
		{ "/local/file.tar", "invalid_url", 0 },
	};
	size_t	 i;
	int	 plain;

	for (i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		const char *got = url_verdict(cases[i].url, &plain);
		ok(strcmp(got, cases[i].want) == 0 && (strcmp(got, "ok") != 0 ||
		    plain == cases[i].plain), "url %s: %s (got %s)",
		    cases[i].url, cases[i].want, got);
	}
	ok(sbx_download_is_url("https://x/y"), "https://x/y is a URL");
	ok(sbx_download_is_url("git+ssh://x"), "git+ssh://x is a URL");
	ok(!sbx_download_is_url("rootfs.tar"), "a file is not");
	ok(!sbx_download_is_url("./https://x"), "./https://x is not");
	ok(!sbx_download_is_url("C:\\x"), "C:\\x is not");
}

static void
t_clone(void)
{
	struct sbx_error	 e;
	struct stat		 st;
	char			 dir[] = "/tmp/t-image-clone.XXXXXX";
	char			 buf[64];
	unsigned long long	 files, bytes;
	ssize_t			 n;
	int			 dfd, src, dst, fd, reflink = 1;

	if ((dfd = t_tmpdir(dir)) == -1) {
		ok(0, "temp dir");
		return;
	}
	mkdirat(dfd, "src", 0755);
	mkdirat(dfd, "dst", 0700);
	src = openat(dfd, "src", O_RDONLY | O_DIRECTORY);
	dst = openat(dfd, "dst", O_RDONLY | O_DIRECTORY);
	mkdirat(src, "bin", 0555);
	(void)!fchmodat(src, "bin", 0755, 0);
	fd = openat(src, "bin/tool", O_WRONLY | O_CREAT, 0555);
	(void)!write(fd, "hello\n", 6);
	close(fd);
	(void)!fchmodat(src, "bin/tool", 0555, 0);
	fd = openat(src, "empty", O_WRONLY | O_CREAT, 0444);
	close(fd);
	(void)!symlinkat("/etc/passwd", src, "abs-link");
	(void)!symlinkat("bin/tool", src, "rel-link");
	(void)!fchmodat(src, "bin", 0555, 0);
	ok(sbx_rootfs_clone_tree(src, dst, &reflink, &files, &bytes, &e) == 0,
	    "clone_tree");
	is_int(files, 2, "2 regular files");
	is_int(bytes, 6, "6 bytes");
	fd = openat(dst, "bin/tool", O_RDONLY);
	n = fd == -1 ? -1 : read(fd, buf, sizeof(buf));
	ok(n == 6 && memcmp(buf, "hello\n", 6) == 0, "content copied");
	if (fd != -1)
		close(fd);
	ok(fstatat(dst, "bin/tool", &st, 0) == 0 && (st.st_mode & 07777) ==
	    0755, "mode kept, owner write added");
	ok(fstatat(dst, "bin", &st, 0) == 0 && (st.st_mode & 07777) == 0755,
	    "directory mode kept, owner write added");
	n = readlinkat(dst, "abs-link", buf, sizeof(buf) - 1);
	ok(n == 11 && memcmp(buf, "/etc/passwd", 11) == 0,
	    "a symlink is copied as a link, not followed");
	ok(fstatat(dst, "abs-link", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode), "still a symlink");
	/* A file written in the copy leaves the source alone. */
	fd = openat(dst, "bin/tool", O_WRONLY | O_TRUNC);
	(void)!write(fd, "bye\n", 4);
	close(fd);
	fd = openat(src, "bin/tool", O_RDONLY);
	n = fd == -1 ? -1 : read(fd, buf, sizeof(buf));
	ok(n == 6 && memcmp(buf, "hello\n", 6) == 0, "the source unchanged");
	if (fd != -1)
		close(fd);
	/* Into a directory that is not empty: refused, nothing clobbered. */
	reflink = 1;
	ok(sbx_rootfs_clone_tree(src, dst, &reflink, &files, &bytes, &e) == -1,
	    "a second clone into the same directory fails (O_EXCL)");
	close(src);
	close(dst);
	close(dfd);
	t_rmtree(dir);
}

int
main(void)
{
	t_digest();
	t_name();
	t_path();
	t_manifest();
	t_url();
	t_clone();
	return done_testing();
}
