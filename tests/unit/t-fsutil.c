/* t-fsutil: symlink-safe file-system helpers, state root, parsers. */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "cli.h"
#include "fsutil.h"
#include "root.h"
#include "sandbox.h"

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_buf		 b = SBX_BUF_INIT;
	struct sbx_root		 r = SBX_ROOT_INIT;
	struct sbx_strv		 v = SBX_STRV_INIT;
	struct sbx_sandbox	 sb;
	char			 tmpl[] = "/tmp/t-fsutil.XXXXXX", path[512];
	char			*argv[] = { "--help", NULL };
	unsigned long long	 u;
	double			 d;
	int			 dfd, fd, i, dd;
	struct stat		 st;

	if (mkdtemp(tmpl) == NULL)
		return 1;
	dfd = open(tmpl, O_RDONLY | O_DIRECTORY);

	fd = sbx_mkdirs_at(dfd, "a/b/c", 0700, &e);
	ok(fd >= 0, "mkdirs_at creates a chain");
	close(fd);
	snprintf(path, sizeof(path), "%s/a/b/c", tmpl);
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "mode 0700");
	snprintf(path, sizeof(path), "%s/link", tmpl);
	ok(symlink("/etc", path) == 0, "planted a symlink");
	ok(sbx_mkdirs_at(dfd, "link/x", 0700, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "symlink not followed");
	ok(access("/etc/x", F_OK) == -1, "nothing created through it");
	ok(sbx_mkdirs_at(dfd, "a/../../x", 0700, &e) == -1 &&
	    strcmp(e.reason, "traversal") == 0, "`..` refused");
	ok(sbx_mkdirs_at(dfd, "/etc", 0700, &e) == -1, "absolute refused");

	ok(sbx_write_atomic(dfd, "f.json", "{}", 2, 0600, &e) == 0,
	    "atomic write");
	ok(sbx_read_file_at(dfd, "f.json", 100, &b, &e) == 0 &&
	    strcmp(b.p, "{}") == 0, "read back");
	sbx_buf_release(&b);
	ok(sbx_read_file_at(dfd, "f.json", 1, &b, &e) == -1 &&
	    strcmp(e.reason, "too_large") == 0, "read cap");
	sbx_buf_release(&b);
	snprintf(path, sizeof(path), "%s/passwd-link", tmpl);
	ok(symlink("/etc/passwd", path) == 0, "planted a symlink");
	ok(sbx_read_file_at(dfd, "passwd-link", 100000, &b, &e) == -1,
	    "read through a symlink refused");
	sbx_buf_release(&b);
	ok(sbx_open_beneath(dfd, "link/passwd", O_RDONLY, &e) == -1 &&
	    strcmp(e.reason, "symlink_in_path") == 0, "open_beneath: symlink");
	ok(sbx_open_beneath(dfd, "nope", O_RDONLY, &e) == -1 &&
	    strcmp(e.kind, SBX_K_NOT_FOUND) == 0, "open_beneath: not found");
	fd = sbx_open_beneath(dfd, "a/b", O_RDONLY | O_DIRECTORY, &e);
	ok(fd >= 0, "open_beneath: ok");
	close(fd);

	ok(sbx_path_check("/workspace/x", "cwd", &e) == 0, "path ok");
	ok(sbx_path_check("a/../b", "cwd", &e) == -1 &&
	    strcmp(e.reason, "traversal") == 0, "path traversal");
	ok(sbx_path_check("a\nb", "cwd", &e) == -1 &&
	    strcmp(e.reason, "control_character") == 0, "path newline");
	ok(sbx_path_check("", "cwd", &e) == -1, "path empty");
	memset(path, 'a', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	ok(sbx_path_check(path, "cwd", &e) == -1 &&
	    strcmp(e.reason, "too_long") == 0, "component too long");

	/* State root resolution order. */
	setenv("SBX_HOME", "/tmp/x-env", 1);
	ok(sbx_root_resolve("/tmp/x-flag", &r, &e) == 0 &&
	    strcmp(r.source, "flag_override") == 0, "flag wins");
	sbx_root_release(&r);
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.source, "environment_override") == 0 &&
	    strcmp(r.path, "/tmp/x-env") == 0, "SBX_HOME next");
	sbx_root_release(&r);
	unsetenv("SBX_HOME");
	setenv("XDG_DATA_HOME", "/tmp/xdg", 1);
	/* Root's sandboxes run unprivileged: its root is /var/lib/sbx. */
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.path, geteuid() == 0 ? "/var/lib/sbx" : "/tmp/xdg/sbx")
	    == 0 && strcmp(r.source, "default_home") == 0, "XDG_DATA_HOME");
	sbx_root_release(&r);
	unsetenv("XDG_DATA_HOME");
	setenv("HOME", "/tmp/h", 1);
	ok(sbx_root_resolve(NULL, &r, &e) == 0 &&
	    strcmp(r.path, geteuid() == 0 ? "/var/lib/sbx" :
	    "/tmp/h/.local/share/sbx") == 0, "~/.local/share");
	sbx_root_release(&r);
	ok(sbx_root_resolve("/", &r, &e) == -1, "/ refused as a root");
	sbx_root_release(&r);
	snprintf(path, sizeof(path), "%s/root", tmpl);
	ok(sbx_root_resolve(path, &r, &e) == 0 && sbx_root_open(&r, 1, &e)
	    == 0, "root created");
	ok(stat(path, &st) == 0 && (st.st_mode & 0777) == 0700, "root 0700");
	sbx_root_release(&r);
	chmod(path, 0777);
	ok(sbx_root_resolve(path, &r, &e) == 0 && sbx_root_open(&r, 1, &e)
	    == -1 && strcmp(e.reason, "insecure_state_root") == 0,
	    "world-writable root refused");
	sbx_root_release(&r);
	ok(sbx_path_overlaps("/a/b", "/a/b/c") && sbx_path_overlaps("/a/b/c",
	    "/a/b") && !sbx_path_overlaps("/a/bc", "/a/b"), "overlaps");

	/* Parsers. */
	ok(sbx_parse_seconds("2", 10, &d) == 0 && d == 2, "seconds 2");
	ok(sbx_parse_seconds("0.5", 10, &d) == 0 && d == 0.5, "seconds 0.5");
	ok(sbx_parse_seconds("-1", 10, &d) == -1, "seconds -1");
	ok(sbx_parse_seconds("0", 10, &d) == -1, "seconds 0");
	ok(sbx_parse_seconds("1e3", 1e9, &d) == -1, "seconds 1e3");
	ok(sbx_parse_seconds("inf", 1e9, &d) == -1, "seconds inf");
	ok(sbx_parse_seconds("abc", 10, &d) == -1, "seconds abc");
	ok(sbx_parse_seconds("1.2.3", 10, &d) == -1, "seconds 1.2.3");
	ok(sbx_parse_seconds("11", 10, &d) == -1, "seconds over max");
	ok(sbx_parse_bytes("64K", &u) == 0 && u == 65536, "bytes 64K");
	ok(sbx_parse_bytes("1MiB", &u) == 0 && u == 1048576, "bytes 1MiB");
	ok(sbx_parse_bytes("1X", &u) == -1, "bytes bad suffix");
	ok(sbx_parse_bytes("-1", &u) == -1, "bytes negative");
	ok(sbx_parse_bytes("99999999999999999999G", &u) == -1, "bytes overflow");

	/* The bwrap command line: argv only after `--`, key isolation. */
	memset(&sb, 0, sizeof(sb));
	sb.bwrap = "/usr/bin/bwrap";
	sb.init = "/x/sbx-init";
	sb.agent = "a";
	sb.home = "/workspace/agents/a";
	sb.cwd = sb.home;
	sb.network = SBX_NET_NONE;
	sb.disable_userns = 1;
	sb.argv = argv;
	ok(sbx_sandbox_argv(&sb, &v, &e) == 0, "argv built");
	for (i = 0, dd = -1; i < (int)v.n; i++)
		if (strcmp(v.v[i], "--") == 0) {
			dd = i;
			break;
		}
	ok(dd > 0 && strcmp(v.v[dd + 1], SBX_IN_INIT) == 0 &&
	    strcmp(v.v[dd + 2], "--") == 0 &&
	    strcmp(v.v[dd + 3], "--help") == 0 && v.v[dd + 4] == NULL,
	    "command after -- for bwrap and for sbx-init");
#define HAS(s) ({ int f_ = 0; for (i = 0; i < dd; i++) if (!strcmp(v.v[i], s)) f_ = 1; f_; })
	ok(HAS("--unshare-net") && HAS("--unshare-user") && HAS("--unshare-pid")
	    && HAS("--unshare-ipc") && HAS("--unshare-uts"), "namespaces");
	ok(HAS("--die-with-parent") && HAS("--new-session") &&
	    HAS("--as-pid-1") && HAS("--disable-userns"), "lifetime flags");
	ok(!HAS("--clearenv") && !HAS("--setenv"), "no env in argv");
	sbx_strv_release(&v);
	sb.network = SBX_NET_OUTBOUND;
	sbx_sandbox_argv(&sb, &v, &e);
	for (i = 0, dd = (int)v.n; i < (int)v.n; i++)
		if (strcmp(v.v[i], "--") == 0) {
			dd = i;
			break;
		}
	ok(!HAS("--unshare-net"), "outbound keeps the host network");
	sbx_strv_release(&v);

	snprintf(path, sizeof(path), "rm -rf %s", tmpl);
	(void)!system(path);
	return done_testing();
}
