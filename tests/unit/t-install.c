/* t-install: request validation, failure classes, the manifest, locks. */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "tap.h"

#include "identity.h"
#include "install.h"
#include "layout.h"
#include "rootfs.h"

static int
valid1(int mgr, const char *s, int allow_url, struct sbx_error *e)
{
	char	*v[1];

	v[0] = (char *)s;
	return sbx_install_validate(mgr, v, 1, allow_url, e);
}

struct refusal {
	int		 mgr;
	const char	*spec;
	const char	*reason;
};

struct sample {
	int		 mgr;
	int		 code;
	const char	*out;
	const char	*cls;
	int		 transient;
	int		 retryable;
};

int
main(void)
{
	struct sbx_error	 e;
	struct sbx_install_class c;
	static const char *const apt_ok[] = { "jq", "libc6", "g++/bookworm",
	    "jq=1.6-2.1", "libssl3:amd64", "python3.11", "a0", "jq/stable",
	    "libfoo1=1:2.3~rc1+dfsg-1" };
	static const char *const pip_ok[] = { "requests", "Requests",
	    "requests[socks]", "requests[socks,security]>=2.0",
	    "numpy==1.26.4", "foo>=1,<2", "a.b_c-d", "x~=1.4", "x===1.0",
	    "x!=1.0.*" };
	static const char *const npm_ok[] = { "is-number", "@types/node",
	    "is-number@7.0.0", "is-number@^7", "left-pad@latest", "JSONStream",
	    "@scope/pkg@>=1 <2", "a@1.x || 2" };
	static const struct refusal refusals[] = {
		{ SBX_INSTALL_APT, "-oDpkg::Pre-Invoke=x", "option_like" },
		{ SBX_INSTALL_APT, "--allow-unauthenticated", "option_like" },
		{ SBX_INSTALL_APT, "jq-", "action_suffix" },
		{ SBX_INSTALL_APT, "jq+", "action_suffix" },
		{ SBX_INSTALL_APT, "Jq", "invalid_name" },
		{ SBX_INSTALL_APT, "j", "invalid_name" },
		{ SBX_INSTALL_APT, "jq;rm", "invalid_name" },
		{ SBX_INSTALL_APT, "jq=", "invalid_version" },
		{ SBX_INSTALL_APT, "jq=$(x)", "invalid_version" },
		{ SBX_INSTALL_APT, "jq/", "invalid_version" },
		{ SBX_INSTALL_APT, "./x.deb", "url_not_allowed" },
		{ SBX_INSTALL_APT, "/tmp/x.deb", "url_not_allowed" },
		{ SBX_INSTALL_APT, "http://x/y.deb", "url_not_allowed" },
		{ SBX_INSTALL_APT, "jq\n", "control_character" },
		{ SBX_INSTALL_APT, "", "invalid_name" },
		{ SBX_INSTALL_PIP, "-e", "option_like" },
		{ SBX_INSTALL_PIP, "-r/etc/passwd", "option_like" },
		{ SBX_INSTALL_PIP, "git+https://x/y.git", "url_not_allowed" },
		{ SBX_INSTALL_PIP, "foo @ https://x/y.whl", "url_not_allowed" },
		{ SBX_INSTALL_PIP, "./pkg", "url_not_allowed" },
		{ SBX_INSTALL_PIP, "foo; python_version<'3'",
		    "markers_not_supported" },
		{ SBX_INSTALL_PIP, "_foo", "invalid_name" },
		{ SBX_INSTALL_PIP, "foo-", "invalid_name" },
		{ SBX_INSTALL_PIP, "foo[", "invalid_name" },
		{ SBX_INSTALL_PIP, "foo>=", "invalid_version" },
		{ SBX_INSTALL_PIP, "foo 1.0", "invalid_version" },
		{ SBX_INSTALL_PIP, "foo\x7f", "control_character" },
		{ SBX_INSTALL_NPM, "--ignore-scripts=false", "option_like" },
		{ SBX_INSTALL_NPM, "git+ssh://git@x/y.git", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "file:../x", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "https://x/y.tgz", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "user/repo", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "github:user/repo", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "x@git+https://y", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "x@npm:other", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "../x", "url_not_allowed" },
		{ SBX_INSTALL_NPM, "_x", "invalid_name" },
		{ SBX_INSTALL_NPM, "a b", "invalid_name" },
		{ SBX_INSTALL_NPM, "@/x", "invalid_name" },
		{ SBX_INSTALL_NPM, "x@", "invalid_version" },
		{ SBX_INSTALL_NPM, "x@$(id)", "invalid_version" },
		{ SBX_INSTALL_NPM, "x\ty", "control_character" },
	};
	static const struct sample samples[] = {
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ENOTEMPTY\nnpm ERR! "
		    "syscall rename\n", SBX_INSTALL_C_LOCK, 1, 1 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code EEXIST\n",
		    SBX_INSTALL_C_LOCK, 1, 1 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! Tracker \"idealTree\" already "
		    "exists\n", SBX_INSTALL_C_LOCK, 1, 1 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ELOCKED\n",
		    SBX_INSTALL_C_LOCK, 1, 1 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code E404\nnpm ERR! 404 Not "
		    "Found - GET http://r/nope - Not found\n",
		    SBX_INSTALL_C_NOT_FOUND, 0, 0 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ETARGET\nnpm ERR! No "
		    "matching version found for is-number@99.\n",
		    SBX_INSTALL_C_NOT_FOUND, 0, 0 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ERESOLVE\n",
		    SBX_INSTALL_C_RESOLUTION, 0, 0 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ECONNREFUSED\n",
		    SBX_INSTALL_C_NETWORK, 0, 1 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code ENOSPC\n",
		    SBX_INSTALL_C_DISK_FULL, 0, 0 },
		{ SBX_INSTALL_NPM, 1, "npm ERR! code EACCES\n",
		    SBX_INSTALL_C_PERMISSION, 0, 0 },
		{ SBX_INSTALL_NPM, 1, "something odd\n", SBX_INSTALL_C_UNKNOWN,
		    0, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "pip._vendor.urllib3.exceptions."
		    "ReadTimeoutError: HTTPSConnectionPool(host='x', port=443)"
		    ": Read timed out.\n",
		    SBX_INSTALL_C_NETWORK, 1, 1 },
		{ SBX_INSTALL_PIP, 1,
		    "ERROR: Could not install packages due "
		    "to an OSError: [Errno 2] No such file\n",
		    SBX_INSTALL_C_UNKNOWN, 1, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "ERROR: Could not install packages due "
		    "to an OSError: [Errno 28] No space left on device\n",
		    SBX_INSTALL_C_DISK_FULL, 0, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "ERROR: Could not install packages due "
		    "to an OSError: [Errno 13] Permission denied: '/x'\n",
		    SBX_INSTALL_C_PERMISSION, 0, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "ERROR: Could not find a version that "
		    "satisfies the requirement nope (from versions: none)\n"
		    "ERROR: No matching distribution found for nope\n",
		    SBX_INSTALL_C_NOT_FOUND, 0, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "ERROR: ResolutionImpossible: for help "
		    "visit ...\n",
		    SBX_INSTALL_C_RESOLUTION, 0, 0 },
		{ SBX_INSTALL_PIP, 1,
		    "WARNING: Retrying ... after connection "
		    "broken by 'ProxyError('Cannot connect to proxy.')'\n",
		    SBX_INSTALL_C_NETWORK, 0, 1 },
		{ SBX_INSTALL_APT, 100,
		    "E: Could not get lock /var/lib/dpkg/"
		    "lock-frontend. It is held by process 7\n",
		    SBX_INSTALL_C_LOCK, 1, 1 },
		{ SBX_INSTALL_APT, 100,
		    "Err:1 http://deb.debian.org bookworm "
		    "InRelease\n  Temporary failure resolving "
		    "'deb.debian.org'\n",
		    SBX_INSTALL_C_NETWORK, 1, 1 },
		{ SBX_INSTALL_APT, 100,
		    "E: Failed to fetch http://x/y.deb  "
		    "Hash Sum mismatch\n",
		    SBX_INSTALL_C_NETWORK, 1, 1 },
		{ SBX_INSTALL_APT, 100, "E: Unable to locate package nope\n",
		    SBX_INSTALL_C_NOT_FOUND, 0, 0 },
		{ SBX_INSTALL_APT, 100,
		    "The following packages have unmet "
		    "dependencies:\nE: Unable to correct problems, you have "
		    "held broken packages.\n",
		    SBX_INSTALL_C_RESOLUTION, 0, 0 },
		{ SBX_INSTALL_APT, 100,
		    "E: Could not open lock file /var/lib/"
		    "dpkg/lock-frontend - open (13: Permission denied)\nE: "
		    "Unable to acquire the dpkg frontend lock (/var/lib/dpkg/"
		    "lock-frontend), are you root?\n",
		    SBX_INSTALL_C_LOCK, 0, 1 },
		{ SBX_INSTALL_APT, 100,
		    "dpkg: error: No space left on device\n",
		    SBX_INSTALL_C_DISK_FULL, 0, 0 },
	};
	char   *many[SBX_INSTALL_MAX_PKGS + 1], big[300], *s;
	char	tmpl[] = "/tmp/t-install.XXXXXX", buf[512];
	json_t *m, *n;
	size_t	i;
	int	dfd, fd, fd2, st;
	pid_t	pid;

	/* Managers. */
	ok(sbx_install_manager("npm", &e) == SBX_INSTALL_NPM, "npm");
	ok(sbx_install_manager("apk", &e) == -1 &&
		strcmp(e.reason, "unknown_manager") == 0 &&
		strcmp(e.field, "manager") == 0,
	    "apk: unknown_manager");
	is_str(sbx_install_manager_name(SBX_INSTALL_PIP), "pip", "pip name");

	/* Validation: what passes. */
	for (i = 0; i < sizeof(apt_ok) / sizeof(*apt_ok); i++)
		ok(valid1(SBX_INSTALL_APT, apt_ok[i], 0, &e) == 0,
		    "apt '%s' ok", apt_ok[i]);
	for (i = 0; i < sizeof(pip_ok) / sizeof(*pip_ok); i++)
		ok(valid1(SBX_INSTALL_PIP, pip_ok[i], 0, &e) == 0,
		    "pip '%s' ok", pip_ok[i]);
	for (i = 0; i < sizeof(npm_ok) / sizeof(*npm_ok); i++)
		ok(valid1(SBX_INSTALL_NPM, npm_ok[i], 0, &e) == 0,
		    "npm '%s' ok", npm_ok[i]);
	/* Every refusal: invalid_args, field packages[0], its reason. */
	for (i = 0; i < sizeof(refusals) / sizeof(*refusals); i++) {
		int r = valid1(refusals[i].mgr, refusals[i].spec, 0, &e);

		ok(r == -1 && strcmp(e.kind, SBX_K_INVALID_ARGS) == 0 &&
		    strcmp(e.field, "packages[0]") == 0 &&
		    strcmp(e.reason, refusals[i].reason) == 0 &&
		    (*refusals[i].spec == '\0' ||
		    strstr(e.message, refusals[i].spec) == NULL),
		    "%s refusal #%zu: %s (got %s)",
		    sbx_install_manager_name(refusals[i].mgr), i,
		    refusals[i].reason, r == -1 ? e.reason : "accepted");
	}
	/* --allow-url lets URLs through, never options. */
	ok(valid1(SBX_INSTALL_NPM, "git+https://x/y.git", 1, &e) == 0,
	    "npm git+ with --allow-url");
	ok(valid1(SBX_INSTALL_PIP, "foo @ https://x/y.whl", 1, &e) == 0,
	    "pip direct reference with --allow-url");
	ok(valid1(SBX_INSTALL_PIP, "-e", 1, &e) == -1 &&
		strcmp(e.reason, "option_like") == 0,
	    "-e refused with --allow-url");
	/* Counts and sizes; the field names the index. */
	for (i = 0; i <= SBX_INSTALL_MAX_PKGS; i++)
		many[i] = "jq";
	ok(sbx_install_validate(SBX_INSTALL_APT, many, SBX_INSTALL_MAX_PKGS, 0,
	       &e) == 0,
	    "32 packages ok");
	ok(sbx_install_validate(SBX_INSTALL_APT, many, SBX_INSTALL_MAX_PKGS + 1,
	       0, &e) == -1 &&
		strcmp(e.reason, "too_many_packages") == 0,
	    "33 packages: too_many_packages");
	ok(sbx_install_validate(SBX_INSTALL_APT, many, 0, 0, &e) == -1 &&
		strcmp(e.reason, "no_packages") == 0,
	    "none: no_packages");
	memset(big, 'a', 257);
	big[257] = '\0';
	many[3] = big;
	ok(sbx_install_validate(SBX_INSTALL_NPM, many, 5, 0, &e) == -1 &&
		strcmp(e.reason, "too_long") == 0 &&
		strcmp(e.field, "packages[3]") == 0,
	    "257 bytes: too_long at [3]");
	big[256] = '\0';
	ok(sbx_install_validate(SBX_INSTALL_PIP, many, 5, 0, &e) == 0,
	    "256 bytes ok");

	/* Bare names. */
	s = sbx_install_pkg_name(SBX_INSTALL_NPM, "@s/x@^1");
	is_str(s, "@s/x", "npm scoped name");
	free(s);
	s = sbx_install_pkg_name(SBX_INSTALL_PIP, "Req[x]>=2");
	is_str(s, "Req", "pip name");
	free(s);
	s = sbx_install_pkg_name(SBX_INSTALL_APT, "jq=1.6");
	is_str(s, "jq", "apt name");
	free(s);

	/* Classification of captured output. */
	for (i = 0; i < sizeof(samples) / sizeof(*samples); i++) {
		sbx_install_classify(samples[i].mgr, samples[i].code,
		    samples[i].out, strlen(samples[i].out), &c);
		ok(strcmp(c.cls, samples[i].cls) == 0 &&
		    (c.transient != NULL) == samples[i].transient &&
		    c.retryable == samples[i].retryable,
		    "%s sample #%zu: %s%s", sbx_install_manager_name(
		    samples[i].mgr), i, c.cls, c.transient ? " transient" :
		    "");
	}
	sbx_install_classify(SBX_INSTALL_NPM, 0, "ENOTEMPTY", 9, &c);
	ok(c.transient == NULL, "exit 0: nothing to classify");

	/* The manifest. */
	ok((dfd = open(mkdtemp(tmpl), O_DIRECTORY | O_RDONLY)) != -1,
	    "temp dir");
	m = sbx_install_manifest_read(dfd, &e);
	ok(m != NULL && json_array_size(json_object_get(m, "npm")) == 0 &&
	    json_object_size(m) == 3, "missing manifest: empty");
	many[0] = "zeta@1";
	many[1] = " Alpha";
	many[2] = "alpha@2";
	many[3] = "@s/b";
	ok(sbx_install_manifest_add(m, SBX_INSTALL_NPM, many, 4) == 0,
	    "add npm");
	many[0] = "Requests>=2";
	many[1] = "requests";
	ok(sbx_install_manifest_add(m, SBX_INSTALL_PIP, many, 2) == 0,
	    "add pip");
	ok(sbx_install_manifest_write(dfd, m, &e) == 0, "write");
	fd = openat(dfd, SBX_INSTALL_MANIFEST, O_RDONLY);
	memset(buf, 0, sizeof(buf));
	ok(fd != -1 && read(fd, buf, sizeof(buf) - 1) > 0, "read back");
	close(fd);
	is_str(buf, "{\"apt\":[],\"npm\":[\"@s/b\",\"Alpha\",\"zeta\"],"
	    "\"pip\":[\"Requests\"]}", "deduplicated, sorted, trimmed");
	json_decref(m);
	/* Planted junk is normalised away; a non-object is refused. */
	n = json_pack("{s:[s,i,s,s],s:s,s:[s]}", "apt", "b", 3, "a", "  ",
	    "npm", "x", "other", "y");
	m = sbx_install_manifest_normalize(n);
	ok(m != NULL && json_object_size(m) == 3 &&
	    json_array_size(json_object_get(m, "apt")) == 2 &&
	    json_array_size(json_object_get(m, "npm")) == 0, "normalized");
	json_decref(n);
	json_decref(m);
	fd = openat(dfd, SBX_INSTALL_MANIFEST, O_WRONLY | O_TRUNC);
	ok(write(fd, "[1]", 3) == 3, "plant a bad manifest");
	close(fd);
	ok(sbx_install_manifest_read(dfd, &e) == NULL &&
	    strcmp(e.reason, "manifest_invalid") == 0, "manifest_invalid");
	unlinkat(dfd, SBX_INSTALL_MANIFEST, 0);
	ok(symlinkat("/etc/passwd", dfd, SBX_INSTALL_MANIFEST) == 0 &&
	    sbx_install_manifest_read(dfd, &e) == NULL, "symlink refused");
	unlinkat(dfd, SBX_INSTALL_MANIFEST, 0);

	/* Locks: held, refused without waiting, released by a crash. */
	fd = sbx_install_lock(dfd, "install.lock", 0, &e);
	ok(fd != -1, "lock taken");
	ok(sbx_install_lock(dfd, "install.lock", 0, &e) == -1 &&
	    strcmp(e.reason, "install_locked") == 0, "second lock refused");
	ok(sbx_install_lock(dfd, "install.lock", 1, &e) == -1,
	    "waiting 1 s: still refused");
	close(fd);
	if ((pid = fork()) == 0) {
		(void)sbx_install_lock(dfd, "install.lock", 0, &e);
		raise(SIGKILL);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	ok(WIFSIGNALED(st), "holder killed");
	fd2 = sbx_install_lock(dfd, "install.lock", 0, &e);
	ok(fd2 != -1, "lock free after the holder died");
	close(fd2);
	unlinkat(dfd, "install.lock", 0);
	ok(symlinkat("/tmp/nope", dfd, "install.lock") == 0 &&
	    sbx_install_lock(dfd, "install.lock", 0, &e) == -1,
	    "symlinked lock refused");
	unlinkat(dfd, "install.lock", 0);

	/* The rootfs copy handed to the sandbox uid: every entry, a
	 * symlink itself and never what it names; the ids of the
	 * subordinate range kept; once per copy (the stamp). */
	if (geteuid() != 0)
		skip_n(5, "handing a tree to another uid needs root");
	else {
		struct sbx_subids sub = { 1879048192UL, 1879048192UL, 65536 };
		struct stat	 fst, pw0, pw1;
		int		  rc1 = -2, rc2;

		stat("/etc/passwd", &pw0);
		ok(mkdirat(dfd, "envs", 0700) == 0 &&
			mkdirat(dfd, "envs/a", 0700) == 0 &&
			mkdirat(dfd, "envs/a/rootfs", 0755) == 0 &&
			mkdirat(dfd, "envs/a/rootfs/usr", 0755) == 0 &&
			(fd2 = openat(dfd, "envs/a/rootfs/usr/f",
			     O_CREAT | O_WRONLY, 0644)) != -1 &&
			close(fd2) == 0 &&
			(fd2 = openat(dfd, "envs/a/rootfs/usr/m",
			     O_CREAT | O_WRONLY, 0644)) != -1 &&
			close(fd2) == 0 &&
			fchownat(dfd, "envs/a/rootfs/usr/m", 1879048192 + 5,
			    1879048192 + 11, 0) == 0 &&
			symlinkat("/etc/passwd", dfd, "envs/a/rootfs/usr/l") ==
			    0 &&
			(rc1 = sbx_install_rootfs_own(dfd, "a", 65534, 65534,
			     &sub, &e)) == 1,
		    "rootfs handed over");
		stat("/etc/passwd", &pw1);
		ok(fstatat(dfd, "envs/a/rootfs/usr/f", &fst, 0) == 0 &&
			fst.st_uid == 65534 && fst.st_gid == 65534 &&
			fstatat(dfd, "envs/a/rootfs/usr/l", &fst,
			    AT_SYMLINK_NOFOLLOW) == 0 &&
			fst.st_uid == 65534 && pw1.st_uid == pw0.st_uid &&
			pw1.st_gid == pw0.st_gid,
		    "files and symlinks handed over; the link's target not");
		ok(fstatat(dfd, "envs/a/rootfs/usr/m", &fst, 0) == 0 &&
			fst.st_uid == 1879048192 + 5 &&
			fst.st_gid == 1879048192 + 11,
		    "an entry of the subordinate range keeps its owner");
		/* Unchanged copy: not walked again (a root-owned file
		 * planted meanwhile stays as it is). */
		rc2 = fchownat(dfd, "envs/a/rootfs/usr/f", 0, 0, 0) == 0 ?
		    sbx_install_rootfs_own(dfd, "a", 65534, 65534, &sub, &e) :
		    -2;
		ok(rc2 == 0 &&
			fstatat(dfd, "envs/a/rootfs/usr/f", &fst, 0) == 0 &&
			fst.st_uid == 0,
		    "the stamp: not walked again");
		/* Another identity: walked again. */
		ok(sbx_install_rootfs_own(dfd, "a", 65533, 65533, &sub, &e) ==
			    1 &&
			fstatat(dfd, "envs/a/rootfs/usr/f", &fst, 0) == 0 &&
			fst.st_uid == 65533,
		    "another uid: walked again");
		unlinkat(dfd, "envs/a/rootfs/usr/l", 0);
		unlinkat(dfd, "envs/a/rootfs/usr/f", 0);
		unlinkat(dfd, "envs/a/rootfs/usr/m", 0);
		unlinkat(dfd, "envs/a/rootfs/usr", AT_REMOVEDIR);
		unlinkat(dfd, "envs/a/rootfs", AT_REMOVEDIR);
		unlinkat(dfd, "envs/a/" SBX_ROOTFS_OWN_STAMP, 0);
		unlinkat(dfd, "envs/a", AT_REMOVEDIR);
		unlinkat(dfd, "envs", AT_REMOVEDIR);
	}
	close(dfd);
	rmdir(tmpl);

	/* Registries: defaults, an override, refusals. */
	{
		struct sbx_install_reg	 r;
		char			 h[254];
		unsigned		 port;
		int			 https;
		json_t			*cfg;

		ok(sbx_install_registry(NULL, SBX_INSTALL_NPM, &r, &e) == 0 &&
		    strcmp(r.url, "https://registry.npmjs.org/") == 0 &&
		    r.nhosts == 1 && r.port[0] == 443, "npm default");
		ok(sbx_install_registry(NULL, SBX_INSTALL_PIP, &r, &e) == 0 &&
		    r.nhosts == 2 &&
		    strcmp(r.host[1], "files.pythonhosted.org") == 0,
		    "pip default: index and file host");
		ok(sbx_install_registry(NULL, SBX_INSTALL_APT, &r, &e) == 0 &&
		    r.nhosts == 0 && r.url[0] == '\0', "apt: the image's");
		cfg = json_pack("{s:{s:{s:[s,s]}}}", "install", "registries",
		    "pip", "http://Mirror.Example:8080/simple/",
		    "https://files.example");
		ok(sbx_install_registry(cfg, SBX_INSTALL_PIP, &r, &e) == 0 &&
		    r.plain_http && r.nhosts == 2 &&
		    strcmp(r.host[0], "mirror.example") == 0 &&
		    r.port[0] == 8080 && r.port[1] == 443,
		    "pip override: lowercased host, port, plain http");
		json_decref(cfg);
		cfg = json_pack("{s:{s:{s:s}}}", "install", "registries", "npm",
		    "https://x.example/");
		ok(sbx_install_registry(cfg, SBX_INSTALL_NPM, &r, &e) == 0 &&
		    strcmp(r.url, "https://x.example/") == 0 &&
		    r.nhosts == 1 && strcmp(r.host[0], "x.example") == 0,
		    "one URL as a string, as npm's registry setting: accepted");
		ok(sbx_install_config_check(cfg, &e) == 0, "config check");
		json_decref(cfg);
		cfg = json_pack("{s:{s:{s:s}}}", "install", "registries", "npm",
		    "ftp://x.example/");
		ok(sbx_install_registry(cfg, SBX_INSTALL_NPM, &r, &e) == -1 &&
		    strcmp(e.reason, "config_invalid") == 0 &&
		    strstr(e.message, "must be a URL or an array") != NULL,
		    "a string that is no http(s) URL: config_invalid");
		ok(sbx_install_config_check(cfg, &e) == -1, "config check");
		json_decref(cfg);
		cfg = json_pack("{s:{s:{s:i}}}", "install", "registries", "npm",
		    1);
		ok(sbx_install_registry(cfg, SBX_INSTALL_NPM, &r, &e) == -1,
		    "a number: config_invalid");
		json_decref(cfg);
		ok(sbx_install_url_host("http://127.0.0.1/", h, &port,
		    &https) == -1, "IP literal refused");
		ok(sbx_install_url_host("https://u:p@x.example/", h, &port,
		    &https) == -1, "credentials refused");
		ok(sbx_install_url_host("ftp://x.example/", h, &port,
		    &https) == -1, "ftp refused");
		ok(sbx_install_url_host("https://x.example/a b", h, &port,
		    &https) == -1, "a blank refused");
		ok(sbx_install_url_host("https://x.example:0/", h, &port,
		    &https) == -1, "port 0 refused");
		ok(sbx_install_url_host("https://x.example", h, &port,
		    &https) == 0 && port == 443 && https &&
		    strcmp(h, "x.example") == 0, "bare host");
	}

	/* apt sources: one-line (options, deb-src, comments, non-http
	 * schemes skipped) and deb822 (several URIs). */
	{
		struct sbx_install_reg r;

		memset(&r, 0, sizeof(r));
		ok(sbx_install_apt_sources(
		       "# deb http://no.example/ x\n"
		       "deb [arch=amd64 signed-by=/k.gpg] http://Deb.Example/debian "
		       "bookworm main\n"
		       "  deb-src https://src.example:8443/d bookworm main\n"
		       "deb file:/srv/repo ./\n"
		       "deb http://deb.example/debian bookworm-updates main\n"
		       "debx http://bad.example/ x\n",
		       0, &r) == 0 &&
			r.nhosts == 2 &&
			strcmp(r.host[0], "deb.example") == 0 &&
			r.port[0] == 80 &&
			strcmp(r.host[1], "src.example") == 0 &&
			r.port[1] == 8443,
		    "apt one-line sources: %d hosts", r.nhosts);
		ok(sbx_install_apt_sources(
		       "Types: deb\n"
		       "URIs: http://a.example/debian https://b.example/x\n"
		       "Suites: bookworm\nComponents: main\n\n"
		       "Types: deb\nuris: cdrom:/x http://c.example\n",
		       1, &r) == 0 &&
			r.nhosts == 5 && strcmp(r.host[2], "a.example") == 0 &&
			strcmp(r.host[3], "b.example") == 0 &&
			r.port[3] == 443 && strcmp(r.host[4], "c.example") == 0,
		    "apt deb822 sources: %d hosts", r.nhosts);
		ok(r.url[0] == '\0', "apt sources set no registry URL");
		memset(&r, 0, sizeof(r));
		ok(sbx_install_apt_sources("deb http://1.2.3.4/ x\n"
					   "deb http://u:p@x.example/ x\n",
		       0, &r) == 0 &&
			r.nhosts == 0,
		    "IP literals and credentials add no host");
	}

	/* Log tail: capped, valid UTF-8. */
	s = sbx_install_log_tail("line1\nline2\n\xff\n", 14, 100);
	ok(s != NULL && strstr(s, "line1") != NULL && strchr(s, '\xff') ==
	    NULL, "log tail sanitised");
	free(s);
	memset(big, 'x', 299);
	big[299] = '\0';
	big[100] = '\n';
	s = sbx_install_log_tail(big, 299, 220);
	ok(s != NULL && strlen(s) == 198, "log tail starts on a line (%zu)",
	    s ? strlen(s) : 0);
	free(s);

	/* The state-root layout names the manifest install.c writes. */
	{
		char	 rel[SBX_LAYOUT_PATH_MAX];

		ok(SBX_LPATH(rel, SBX_L_AGENT_INSTALLED, "a1") == 0 &&
		    strcmp(rel, "agents/a1/" SBX_INSTALL_MANIFEST) == 0,
		    "layout: the manifest is agents/A/" SBX_INSTALL_MANIFEST);
	}
	return done_testing();
}
