/* t-diskimg: the hard disk limit's pieces that need no root: sizes, the
 * refusals of sbx_diskimg_unusable, the project quota probe's reasons,
 * and sbx_disklimit_choose without an image (soft, or refused when hard),
 * on a temporary root. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"
#include "tap.h"

#include "diskimg.h"
#include "disklimit.h"
#include "error.h"
#include "pquota.h"

static void
sizes(void)
{
	static const struct {
		const char	  *in;
		unsigned long long mib;
	} good[] = {
		{ "8", 8 },
		{ "16m", 16 },
		{ "16M", 16 },
		{ "2g", 2048 },
		{ "1T", 1024 * 1024 },
	};
	static const char *const bad[] = { "", "7", "0", "-1", "1k", "16mb",
		"x", "99999999999999999999", "16777217", "17t", " 8", NULL };
	struct sbx_error	 e;
	unsigned long long	 mib;
	size_t			 i;

	for (i = 0; i < sizeof(good) / sizeof(*good); i++) {
		mib = 0;
		ok(sbx_diskimg_parse_size(good[i].in, "disk-image", &mib, &e) ==
			    0 &&
			mib == good[i].mib,
		    "size %s is %llu MiB", good[i].in, good[i].mib);
	}
	for (i = 0; bad[i] != NULL; i++) {
		memset(&e, 0, sizeof(e));
		ok(sbx_diskimg_parse_size(bad[i], "disk-image", &mib, &e) ==
			    -1 &&
			strcmp(e.reason, "bad_size") == 0 &&
			strcmp(e.field, "disk-image") == 0,
		    "size '%s' refused", bad[i]);
	}
	ok(sbx_diskimg_parse_size(NULL, "disk-image", &mib, &e) == -1,
	    "no size refused");
}

static void
unusable(void)
{
	const char *why;

	setenv("SBX_TEST_LOOP_CONTROL", "/nonexistent/loop-control", 1);
	why = sbx_diskimg_unusable();
	ok(why != NULL &&
		(strstr(why, "no loop device") != NULL ||
		    strstr(why, "needs root") != NULL),
	    "no loop-control: %s", why ? why : "(usable)");
	unsetenv("SBX_TEST_LOOP_CONTROL");
	why = sbx_diskimg_unusable();
	if (geteuid() != 0)
		ok(why != NULL && strstr(why, "needs root") != NULL,
		    "a plain user: %s", why ? why : "(usable)");
	else
		ok(why == NULL || strstr(why, "loop") != NULL,
		    "root: usable, or no loop device (%s)", why ? why : "ok");
}

static void
probe(int dfd)
{
	static const struct {
		int	    err;
		const char *code, *words;
	} c[] = {
		{ ENOSYS, "kernel_no_quota", "CONFIG_QUOTA" },
		{ ESRCH, "accounting_off", "prjquota" },
		{ ENOTTY, "fs_unsupported", "no project quotas" },
		{ EIO, "probe_failed", "failed" },
	};
	struct sbx_pquota_probe pr;
	char			v[16];
	size_t			i;

	for (i = 0; i < sizeof(c) / sizeof(*c); i++) {
		snprintf(v, sizeof(v), "%d", c[i].err);
		setenv("SBX_TEST_PQUOTA_ERRNO", v, 1);
		sbx_pquota_probe(dfd, &pr);
		ok(!pr.available && strcmp(pr.code, c[i].code) == 0 &&
			strstr(pr.reason, c[i].words) != NULL,
		    "quotactl %s: %s (%s)", strerrorname_np(c[i].err),
		    c[i].code, pr.reason);
	}
	unsetenv("SBX_TEST_PQUOTA_ERRNO");
	/* This machine, whatever it says: a code, and a reason when no. */
	sbx_pquota_probe(dfd, &pr);
	ok(pr.code != NULL && (pr.available || pr.reason[0] != '\0'),
	    "probe here: %s %s", pr.code ? pr.code : "(none)", pr.reason);
	/* A closed descriptor is no answer of yes. */
	sbx_pquota_probe(-1, &pr);
	ok(!pr.available, "a bad descriptor: not available (%s)", pr.reason);
}

static void
choose(int dfd)
{
	struct sbx_disklimit dl;
	struct sbx_error     e;

	ok(mkdirat(dfd, "agents", 0700) == 0 &&
		mkdirat(dfd, "agents/a", 0700) == 0,
	    "agents/a made");
	memset(&e, 0, sizeof(e));
	ok(sbx_disklimit_choose(dfd, "a", 0, 0, &dl, &e) == 0 &&
		dl.mech == NULL && dl.lock_fd == -1,
	    "no limit, no image: none");
	ok(sbx_disklimit_choose(dfd, "a", 64, 0, &dl, &e) == 0 &&
		dl.mech != NULL && strcmp(dl.mech, "soft") == 0 &&
		strstr(dl.warning, "soft") != NULL && dl.limit_mib == 64,
	    "64 MiB, not hard: soft, with a warning");
	memset(&e, 0, sizeof(e));
	ok(sbx_disklimit_choose(dfd, "a", 64, 1, &dl, &e) == -1 &&
		strcmp(e.kind, SBX_K_UNAVAILABLE) == 0 &&
		strcmp(e.reason, "disk_limit_unavailable") == 0 &&
		strcmp(e.field, "disk") == 0 &&
		strstr(e.message, "project quotas:") != NULL &&
		strstr(e.hint, "--disk-image") != NULL &&
		strstr(e.hint, "prjquota") != NULL,
	    "hard without a mechanism: unavailable (%s)", e.message);
	/* An unfinished migration: refused, hard or not. */
	ok(close(openat(dfd, "agents/a/disk.migrating", O_CREAT | O_WRONLY,
	       0600)) == 0,
	    "a migration marker");
	memset(&e, 0, sizeof(e));
	ok(sbx_disklimit_choose(dfd, "a", 0, 0, &dl, &e) == -1 &&
		strcmp(e.reason, "disk_migration_unfinished") == 0,
	    "unfinished migration: refused");
	unlinkat(dfd, "agents/a/disk.migrating", 0);
	/* A symlink where the image goes: never followed. */
	ok(symlinkat("/etc/passwd", dfd, "agents/a/disk.img") == 0,
	    "agents/a/disk.img -> /etc/passwd");
	memset(&e, 0, sizeof(e));
	ok(sbx_disklimit_choose(dfd, "a", 0, 0, &dl, &e) == -1 &&
		strcmp(e.reason, "disk_image_unsafe") == 0,
	    "a symlinked image: refused (%s)", e.message);
}

int
main(void)
{
	char tmpl[] = "/tmp/t-diskimg.XXXXXX";
	int  dfd;

	sizes();
	unusable();
	if ((dfd = t_tmpdir(tmpl)) == -1)
		return 1;
	probe(dfd);
	choose(dfd);
	close(dfd);
	return done_testing();
}
