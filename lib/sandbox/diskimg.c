/*
 * diskimg.c: an agent's own file system (see diskimg.h).
 *
 * Every mount and unmount here names its target as /proc/self/fd/ROOT/rel
 * with a descriptor sbx opened beneath the state root: the path never
 * leaves the root through a symbolic link an agent planted, and the image
 * is opened O_NOFOLLOW the same way, so a link at agents/A/disk.img can
 * never make sbx format or mount a file of someone else's.
 */
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "diskimg.h"
#include "fsutil.h"
#include "layout.h"
#include "tools.h"

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

/* The image's top directories: home and output bound over the root's,
 * tmp and shm bound at /tmp and /dev/shm of a run that counts them in. */
static const char *const subdirs[] = { "home", "output", "tmp", "shm" };

int
sbx_diskimg_parse_size(const char *s, const char *field,
    unsigned long long *mib, struct sbx_error *e)
{
	char		  *end;
	unsigned long long v, mul = 1;

	errno = 0;
	if (s == NULL || *s < '0' || *s > '9')
		goto bad;
	v = strtoull(s, &end, 10);
	if (errno != 0)
		goto bad;
	if (*end == 'm' || *end == 'M')
		end++;
	else if (*end == 'g' || *end == 'G')
		mul = 1024, end++;
	else if (*end == 't' || *end == 'T')
		mul = 1024 * 1024, end++;
	if (*end != '\0' || v > SBX_DISKIMG_MAX_MIB / mul)
		goto bad;
	v *= mul;
	if (v < SBX_DISKIMG_MIN_MIB || v > SBX_DISKIMG_MAX_MIB)
		goto bad;
	*mib = v;
	return 0;
bad:
	sbx_error_set(e, SBX_K_INVALID_ARGS, field, "bad_size",
	    "argument `%s` rejected: a size from %llu MiB to %llu MiB "
	    "(MiB, or with a unit: 512m, 2g)",
	    field, SBX_DISKIMG_MIN_MIB, SBX_DISKIMG_MAX_MIB);
	return -1;
}

const char *
sbx_diskimg_unusable(void)
{
	const char *dev = getenv("SBX_TEST_LOOP_CONTROL");

	if (geteuid() != 0)
		return "mounting a file system of the agent's own needs root "
		       "(sbx runs as a plain user)";
	/* A test names a missing device to show the refusal; honoured
	 * only as it makes things stricter. */
	if (dev == NULL || dev[0] == '\0')
		dev = "/dev/loop-control";
	if (access(dev, R_OK | W_OK) == -1)
		return "no loop device here (/dev/loop-control is missing: "
		       "a container without loop devices, or a kernel without "
		       "CONFIG_BLK_DEV_LOOP)";
	return NULL;
}

static int
fdpath(char *buf, size_t sz, int rootfd, const char *rel)
{
	/* By pid, not self: a helper program (cp, diff) reads the path
	 * from our descriptor table. */
	int n =
	    snprintf(buf, sz, "/proc/%d/fd/%d/%s", (int)getpid(), rootfd, rel);
	return n < 0 || (size_t)n >= sz ? -1 : 0;
}

/* Is rel (beneath rootfd) the root of a mount?  With dev, its device. */
static int
is_mount_root(int rootfd, const char *rel, dev_t *dev)
{
	struct statx sx;

	if (statx(rootfd, rel, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) ==
		-1 ||
	    !S_ISDIR(sx.stx_mode))
		return 0;
	if (dev != NULL)
		*dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	return (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
	    (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int
sbx_diskimg_stat(int rootfd, const char *agent, struct sbx_diskimg_stat *st,
    struct sbx_error *e)
{
	char	      rel[SBX_LAYOUT_PATH_MAX];
	struct stat   sb;
	struct statfs sf;
	int	      fd;

	memset(st, 0, sizeof(*st));
	if (sbx_layout_path(SBX_L_AGENT_DISK_IMG, agent, rel, sizeof(rel), e) ==
	    -1)
		return -1;
	if (fstatat(rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(sb.st_mode)) {
			sbx_error_set(e, SBX_K_REJECTED, NULL,
			    "disk_image_unsafe", "%s is not a regular file",
			    rel);
			return -1;
		}
		st->present = 1;
		st->size_mib = (unsigned long long)sb.st_size >> 20;
	}
	SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, agent);
	if (!is_mount_root(rootfd, rel, NULL))
		return 0;
	st->mounted = 1;
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 NULL)) >= 0) {
		if (fstatfs(fd, &sf) == 0) {
			st->total_kib = (unsigned long long)sf.f_blocks *
			    (unsigned long long)sf.f_bsize / 1024;
			st->avail_kib = (unsigned long long)sf.f_bavail *
			    (unsigned long long)sf.f_bsize / 1024;
			st->files_free = (unsigned long long)sf.f_ffree;
		}
		close(fd);
	}
	return 0;
}

int
sbx_diskimg_full(const struct sbx_diskimg_stat *st)
{
	/* ext4 keeps a few blocks a write of user data cannot take: a
	 * file system that refused a write has less than 64 KiB left. */
	return st->mounted && (st->avail_kib < 64 || st->files_free == 0);
}

int
sbx_diskimg_tool(const char *name, char *const *args, struct sbx_error *e)
{
	char   *path = NULL, *argv[16], msg[256];
	int	pfd[2], status, n = 0, devnull;
	size_t	i, got = 0;
	ssize_t r;
	pid_t	pid;

	if (sbx_tools_find(name, NULL, &path, e) == -1)
		return -1;
	argv[n++] = path;
	for (i = 0; args[i] != NULL && n < 15; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	if (pipe2(pfd, O_CLOEXEC) == -1) {
		free(path);
		sbx_error_sys(e, "pipe_failed", "running %s", name);
		return -1;
	}
	if ((pid = fork()) == -1) {
		close(pfd[0]);
		close(pfd[1]);
		free(path);
		sbx_error_sys(e, "fork_failed", "running %s", name);
		return -1;
	}
	if (pid == 0) {
		/* The image's descriptor, named /proc/self/fd/N in args,
		 * is the only one the tool needs beyond the standard ones
		 * (the caller cleared its close-on-exec flag). */
		devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (devnull >= 0) {
			dup2(devnull, 0);
			dup2(devnull, 1);
		}
		dup2(pfd[1], 2);
		execve(path, argv,
		    (char *[]){ "PATH=/usr/sbin:/usr/bin:/sbin:/bin",
			"LC_ALL=C", NULL });
		_exit(127);
	}
	close(pfd[1]);
	while (got + 1 < sizeof(msg) &&
	    (r = read(pfd[0], msg + got, sizeof(msg) - 1 - got)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			break;
		got += (size_t)r;
	}
	msg[got] = '\0';
	close(pfd[0]);
	while (waitpid(pid, &status, 0) == -1 && errno == EINTR)
		;
	free(path);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	/* e2fsck: 1 is "errors corrected", a checked file system. */
	if (strcmp(name, "e2fsck") == 0 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 1)
		return 0;
	msg[strcspn(msg, "\n")] = '\0';
	sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL, "disk_tool_failed",
	    "%s failed (%s %d)%s%s", name,
	    WIFEXITED(status) ? "status" : "signal",
	    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
	    msg[0] ? ": " : "", msg);
	return -1;
}

int
sbx_diskimg_lock(int rootfd, const char *agent, int exclusive, int wait)
{
	char rel[SBX_LAYOUT_PATH_MAX];
	int  fd, op = exclusive ? LOCK_EX : LOCK_SH;

	if (sbx_layout_path(SBX_L_AGENT_DISK_LOCK, agent, rel, sizeof(rel),
		NULL) == -1)
		return -1;
	if ((fd = openat(rootfd, rel, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
		 0600)) == -1)
		return -1;
	if (!wait)
		op |= LOCK_NB;
	while (flock(fd, op) == -1) {
		if (errno == EINTR && wait)
			continue;
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* A free loop device configured over imgfd, autoclear: it is detached by
 * the kernel when the last mount of it goes (or when it is closed
 * without ever having been mounted).  Returns its open descriptor and its
 * name in dev. */
static int
loop_attach(int imgfd, char *dev, size_t devsz, struct sbx_error *e)
{
	struct loop_config cfg;
	int		   ctl, n, lfd, tries;

	if ((ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC)) == -1) {
		sbx_error_sys(e, "no_loop_device", "/dev/loop-control");
		return -1;
	}
	for (tries = 0; tries < 16; tries++) {
		if ((n = ioctl(ctl, LOOP_CTL_GET_FREE)) < 0) {
			sbx_error_sys(e, "no_loop_device",
			    "no free loop device");
			break;
		}
		snprintf(dev, devsz, "/dev/loop%d", n);
		if ((lfd = open(dev, O_RDWR | O_CLOEXEC)) == -1) {
			sbx_error_sys(e, "no_loop_device", "%s", dev);
			break;
		}
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)imgfd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		if (ioctl(lfd, LOOP_CONFIGURE, &cfg) == 0) {
			close(ctl);
			return lfd;
		}
		close(lfd);
		/* Someone else took it between GET_FREE and CONFIGURE. */
		if (errno != EBUSY) {
			sbx_error_sys(e, "loop_failed", "configuring %s", dev);
			break;
		}
	}
	close(ctl);
	if (e->kind == NULL)
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "no_loop_device",
		    "no free loop device after 16 tries");
	return -1;
}

/*
 * The configured loop device whose backing file is imgfd's, opened: held
 * open, the kernel cannot detach it (autoclear) and give its number to
 * another image under us.  -1 with errno ENOENT: none.
 *
 * One lives on after sbx's own unmount when another mount namespace
 * still holds a copy of the mount: a process that unshared its namespace
 * privately while the image was mounted (a sandbox being set up copies
 * the whole table for a moment), or a lazy detach still in use.  The
 * file system is then still in the kernel's hands: a second instance of
 * it (a new loop device over the same file) or a tool writing the image
 * would corrupt it, and the old instance writes its superblock back when
 * it goes.
 */
static int
loop_of(int imgfd, char *dev, size_t devsz)
{
	struct loop_info64 li;
	struct stat	   sb;
	struct dirent	  *de;
	DIR		  *d;
	char		   p[80];
	int		   lfd = -1, sys = 1;

	if (fstat(imgfd, &sb) == -1)
		return -1;
	/* sysfs lists the devices there are, with a loop/ directory for
	 * a bound one; without it, every /dev/loopN is asked. */
	if ((d = opendir("/sys/block")) == NULL) {
		sys = 0;
		if ((d = opendir("/dev")) == NULL)
			return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "loop", 4) != 0 ||
		    de->d_name[4] < '0' || de->d_name[4] > '9' ||
		    strlen(de->d_name) > 20 ||
		    strspn(de->d_name + 4, "0123456789") !=
			strlen(de->d_name + 4))
			continue;
		snprintf(p, sizeof(p), "/sys/block/%.32s/loop", de->d_name);
		if (sys && access(p, F_OK) == -1)
			continue;
		snprintf(dev, devsz, "/dev/%.24s", de->d_name);
		if ((lfd = open(dev, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		memset(&li, 0, sizeof(li));
		if (ioctl(lfd, LOOP_GET_STATUS64, &li) == 0 &&
		    li.lo_inode == sb.st_ino &&
		    major(li.lo_device) == major(sb.st_dev) &&
		    minor(li.lo_device) == minor(sb.st_dev))
			break;
		close(lfd);
		lfd = -1;
	}
	closedir(d);
	if (lfd == -1)
		errno = ENOENT;
	return lfd;
}

/* Who holds the mount of the device rdev: " (pid N, COMM)" of the first
 * process whose mount table has it, or "" (a lazy detach in use). */
static void
holder_of(dev_t rdev, char *who, size_t whosz)
{
	struct dirent *de;
	DIR	      *d;
	FILE	      *f;
	char	       p[64], line[1024], want[40], comm[64];
	int	       found = 0;

	*who = '\0';
	snprintf(want, sizeof(want), " %u:%u ", major(rdev), minor(rdev));
	if ((d = opendir("/proc")) == NULL)
		return;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    strlen(de->d_name) > 20)
			continue;
		snprintf(p, sizeof(p), "/proc/%.20s/mountinfo", de->d_name);
		if ((f = fopen(p, "re")) == NULL)
			continue;
		while (fgets(line, sizeof(line), f) != NULL)
			if (strstr(line, want) != NULL) {
				found = 1;
				break;
			}
		fclose(f);
	}
	if (found) {
		comm[0] = '\0';
		snprintf(p, sizeof(p), "/proc/%.20s/comm", de->d_name);
		if ((f = fopen(p, "re")) != NULL) {
			if (fgets(comm, sizeof(comm), f) == NULL)
				comm[0] = '\0';
			fclose(f);
		}
		comm[strcspn(comm, "\n")] = '\0';
		snprintf(who, whosz, " (pid %.20s, %s)", de->d_name,
		    comm[0] ? comm : "?");
	}
	closedir(d);
}

/*
 * Nothing of the image's file system alive anywhere (see loop_of) before
 * a tool writes the image.  A namespace that copied the mount while it
 * was set up lets go within milliseconds: wait up to 2 seconds; one that
 * keeps it is named in the error, and the image is left as it is.
 */
static int
image_unused(int imgfd, const char *rel, struct sbx_error *e)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	struct stat	sb;
	char		dev[32], who[128];
	int		lfd, i;

	for (i = 0; i < 100; i++) {
		if ((lfd = loop_of(imgfd, dev, sizeof(dev))) == -1)
			return 0;
		if (fstat(lfd, &sb) == -1)
			sb.st_rdev = 0;
		/* The last holder gone, this close detaches it. */
		close(lfd);
		nanosleep(&ts, NULL);
	}
	holder_of(sb.st_rdev, who, sizeof(who));
	sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "disk_in_use",
	    "%s is still mounted through %s in another mount namespace%s; "
	    "changing it now would corrupt it",
	    rel, dev, who);
	sbx_error_hint(e,
	    "that process copied the mount table while the image was "
	    "mounted: end it (or wait for it), then run the command again");
	return -1;
}

int
sbx_diskimg_mount_image(int rootfd, const char *agent, struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX], dev[32], tgt[64 + SBX_LAYOUT_PATH_MAX];
	int  imgfd, lfd, mfd, rc;

	SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, agent);
	if (is_mount_root(rootfd, rel, NULL))
		return 0;
	if ((mfd = sbx_layout_mkdirs(rootfd, SBX_L_AGENT_DISK_MNT, agent, e)) ==
	    -1)
		return -1;
	close(mfd);
	SBX_LPATH(rel, SBX_L_AGENT_DISK_IMG, agent);
	if ((imgfd = sbx_fs_open_beneath(rootfd, rel, O_RDWR | O_CLOEXEC, e)) ==
	    -1)
		return -1;
	/* An instance of its file system still alive elsewhere is mounted
	 * again, the same one: never a second over the same file. */
	if ((lfd = loop_of(imgfd, dev, sizeof(dev))) == -1 &&
	    (lfd = loop_attach(imgfd, dev, sizeof(dev), e)) == -1) {
		close(imgfd);
		return -1;
	}
	close(imgfd);
	SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, agent);
	fdpath(tgt, sizeof(tgt), rootfd, rel);
	/* nosuid, nodev: the image is the agent's to write, so nothing on
	 * it may carry privilege or name a device. */
	rc = mount(dev, tgt, "ext4", MS_NOSUID | MS_NODEV, "errors=remount-ro");
	if (rc == -1)
		sbx_error_sys(e, "disk_mount_failed", "mounting %s at %s", dev,
		    rel);
	/* Mounted: the loop device lives as long as the mount (autoclear);
	 * not mounted: closing it detaches it. */
	close(lfd);
	return rc;
}

/* Is the directory rel empty (or absent)? */
static int
dir_empty(int rootfd, const char *rel)
{
	DIR	      *d;
	struct dirent *de;
	int	       fd, empty = 1;

	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 NULL)) == -1)
		return errno == ENOENT;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return 0;
	}
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			empty = 0;
			break;
		}
	closedir(d);
	return empty;
}

/* The agent's directories that live on its image, and their names there. */
static const struct {
	enum sbx_layout_id id;
	const char	  *sub;
} on_image[] = {
	{ SBX_L_AGENT_HOME, "home" },
	{ SBX_L_AGENT_OUTPUT, "output" },
};

int
sbx_diskimg_bind(int rootfd, const char *agent, struct sbx_error *e)
{
	char   mnt[SBX_LAYOUT_PATH_MAX], rel[SBX_LAYOUT_PATH_MAX], src[512];
	char   dst[512], srel[SBX_LAYOUT_PATH_MAX + 16];
	dev_t  mdev, ddev;
	size_t i;
	int    fd;

	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	if (!is_mount_root(rootfd, mnt, &mdev)) {
		sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "disk_not_mounted",
		    "the disk image of agent %s is not mounted", agent);
		return -1;
	}
	for (i = 0; i < sizeof(on_image) / sizeof(*on_image); i++) {
		SBX_LPATH(rel, on_image[i].id, agent);
		if (is_mount_root(rootfd, rel, &ddev) && ddev == mdev)
			continue;
		/*
		 * A bind over a directory that holds files would hide them:
		 * they were written while the image was not mounted (or a
		 * migration did not finish).  Refuse, never hide.
		 */
		if (!dir_empty(rootfd, rel)) {
			sbx_error_set(e, SBX_K_REJECTED, NULL,
			    "disk_home_not_empty",
			    "%s holds files outside "
			    "the agent's disk image",
			    rel);
			sbx_error_hint(e,
			    "run `sbx provision --agent %s "
			    "--disk-image SIZE` again: it moves them onto the "
			    "image",
			    agent);
			return -1;
		}
		if ((fd = sbx_fs_mkdirs_at(rootfd, rel, 0700, e)) == -1)
			return -1;
		close(fd);
		snprintf(srel, sizeof(srel), "%s/%s", mnt, on_image[i].sub);
		fdpath(src, sizeof(src), rootfd, srel);
		fdpath(dst, sizeof(dst), rootfd, rel);
		if (mount(src, dst, NULL, MS_BIND, NULL) == -1) {
			sbx_error_sys(e, "disk_mount_failed",
			    "binding %s at "
			    "%s",
			    srel, rel);
			return -1;
		}
	}
	return 0;
}

int
sbx_diskimg_acquire(int rootfd, const char *agent, int *mounted_now,
    struct sbx_error *e)
{
	char mnt[SBX_LAYOUT_PATH_MAX], home[SBX_LAYOUT_PATH_MAX];
	char out[SBX_LAYOUT_PATH_MAX];
	int  fd, tries;

	*mounted_now = 0;
	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	SBX_LPATH(home, SBX_L_AGENT_HOME, agent);
	SBX_LPATH(out, SBX_L_AGENT_OUTPUT, agent);
	for (tries = 0; tries < 4; tries++) {
		/* The common case, one flock and three statx: it is
		 * mounted, and holding the lock shared keeps it so. */
		if ((fd = sbx_diskimg_lock(rootfd, agent, 0, 1)) == -1)
			break;
		if (is_mount_root(rootfd, mnt, NULL) &&
		    is_mount_root(rootfd, home, NULL) &&
		    is_mount_root(rootfd, out, NULL))
			return fd;
		/* Not (all) mounted: exclusive, mount, then shared again.
		 * The change is not atomic (flock(2)), so look again. */
		if (flock(fd, LOCK_EX) == -1) {
			close(fd);
			break;
		}
		if (sbx_diskimg_mount_image(rootfd, agent, e) == -1 ||
		    sbx_diskimg_bind(rootfd, agent, e) == -1) {
			close(fd);
			return -1;
		}
		*mounted_now = 1;
		close(fd);
	}
	if (e->kind == NULL)
		sbx_error_sys(e, "disk_lock_failed", "agents/%s/disk.lock",
		    agent);
	return -1;
}

static int
unmount_one(int rootfd, const char *rel, struct sbx_error *e)
{
	char p[512];

	if (!is_mount_root(rootfd, rel, NULL))
		return 0;
	fdpath(p, sizeof(p), rootfd, rel);
	if (umount2(p, UMOUNT_NOFOLLOW) == 0)
		return 1;
	/* Busy on the host (a shell's cwd in the home): detach it, the
	 * kernel finishes when the last user goes. */
	if (errno == EBUSY && umount2(p, UMOUNT_NOFOLLOW | MNT_DETACH) == 0)
		return 1;
	sbx_error_sys(e, "disk_umount_failed", "unmounting %s", rel);
	return -1;
}

int
sbx_diskimg_unmount_locked(int rootfd, const char *agent, struct sbx_error *e)
{
	static const enum sbx_layout_id ids[] = { SBX_L_AGENT_HOME,
		SBX_L_AGENT_OUTPUT, SBX_L_AGENT_DISK_MNT };
	char   rel[SBX_LAYOUT_PATH_MAX], mnt[SBX_LAYOUT_PATH_MAX];
	dev_t  mdev, d;
	size_t i;
	int    r, any = 0;

	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	if (!is_mount_root(rootfd, mnt, &mdev))
		mdev = (dev_t)-1;
	for (i = 0; i < sizeof(ids) / sizeof(*ids); i++) {
		SBX_LPATH(rel, ids[i], agent);
		/* Only what is the image's: an administrator's own mount
		 * over a home is not sbx's to remove. */
		if (ids[i] != SBX_L_AGENT_DISK_MNT &&
		    (!is_mount_root(rootfd, rel, &d) ||
			(d != mdev && mdev != (dev_t)-1)))
			continue;
		/* Stacked binds (a killed mount raced another): all. */
		while ((r = unmount_one(rootfd, rel, e)) == 1)
			any = 1;
		if (r == -1)
			return -1;
	}
	return any;
}

/* What runs killed before their end left in tmp/ and shm/ (--disk-tmp),
 * the lock held exclusive: no run is using any of it. */
static void
clear_runs(int rootfd, const char *agent)
{
	char	 rel[SBX_LAYOUT_PATH_MAX + 8];
	char	 mnt[SBX_LAYOUT_PATH_MAX];
	char   **names;
	size_t	 n = 0, i, k;
	int	 fd;

	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	if (!is_mount_root(rootfd, mnt, NULL))
		return;
	for (k = 2; k < 4; k++) {
		snprintf(rel, sizeof(rel), "%s/%s", mnt, subdirs[k]);
		if ((fd = sbx_fs_open_beneath(rootfd, rel,
			 O_RDONLY | O_DIRECTORY, NULL)) == -1)
			continue;
		names = sbx_fs_sorted_names(fd, &n);
		for (i = 0; names != NULL && i < n; i++) {
			if (strncmp(names[i], "run-", 4) == 0)
				(void)sbx_fs_rm_tree_at(fd, names[i], NULL);
			free(names[i]);
		}
		free(names);
		close(fd);
	}
}

int
sbx_diskimg_release_idle(int rootfd, const char *agent, struct sbx_error *e)
{
	int fd, rc;

	if ((fd = sbx_diskimg_lock(rootfd, agent, 1, 0)) == -1) {
		if (errno == EWOULDBLOCK)
			return 2;
		if (errno == ENOENT)
			return 0;
		sbx_error_sys(e, "disk_lock_failed", "agents/%s/disk.lock",
		    agent);
		return -1;
	}
	clear_runs(rootfd, agent);
	rc = sbx_diskimg_unmount_locked(rootfd, agent, e);
	close(fd);
	return rc;
}

int
sbx_diskimg_create(int rootfd, const char *agent, unsigned long long size_mib,
    uid_t uid, gid_t gid, struct sbx_error *e)
{
	char   rel[SBX_LAYOUT_PATH_MAX], tmp[SBX_LAYOUT_PATH_MAX + 8];
	char   img[64], owner[64], mnt[SBX_LAYOUT_PATH_MAX];
	size_t i;
	int    fd, mfd, rc = -1;

	SBX_LPATH(rel, SBX_L_AGENT_DISK_IMG, agent);
	snprintf(tmp, sizeof(tmp), "%s.new", rel);
	/* A half-made image of an interrupted run is ours to redo. */
	(void)unlinkat(rootfd, tmp, 0);
	if ((fd = openat(rootfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW,
		 0600)) == -1) {
		sbx_error_sys(e, "disk_image_failed", "creating %s", tmp);
		return -1;
	}
	/* Sparse: the image takes space as the agent writes, up to its
	 * size; the host's own free space is the administrator's. */
	if (ftruncate(fd, (off_t)(size_mib << 20)) == -1) {
		sbx_error_sys(e, "disk_image_failed", "sizing %s", tmp);
		goto out;
	}
	snprintf(img, sizeof(img), "/proc/self/fd/%d", fd);
	snprintf(owner, sizeof(owner), "root_owner=0:0");
	if (sbx_diskimg_tool("mkfs.ext4",
		(char *[]){ "-q", "-F", "-m", "0", "-E", owner, "-L",
		    "sbx-agent", img, NULL },
		e) == -1)
		goto out;
	if (fsync(fd) == -1 || renameat(rootfd, tmp, rootfd, rel) == -1) {
		sbx_error_sys(e, "disk_image_failed", "saving %s", rel);
		goto out;
	}
	if (sbx_diskimg_mount_image(rootfd, agent, e) == -1)
		goto out2;
	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	if ((mfd = sbx_fs_open_beneath(rootfd, mnt, O_RDONLY | O_DIRECTORY,
		 e)) == -1)
		goto out2;
	/* The image's root: root's, 0711 (the sandbox uid passes through
	 * to the binds' sources); its directories the sandbox uid's. */
	(void)fchmod(mfd, 0711);
	(void)unlinkat(mfd, "lost+found", AT_REMOVEDIR);
	for (i = 0; i < sizeof(subdirs) / sizeof(*subdirs); i++)
		if ((mkdirat(mfd, subdirs[i], 0700) == -1 && errno != EEXIST) ||
		    fchownat(mfd, subdirs[i], uid, gid, AT_SYMLINK_NOFOLLOW) ==
			-1) {
			sbx_error_sys(e, "disk_image_failed", "%s/%s", mnt,
			    subdirs[i]);
			close(mfd);
			goto out2;
		}
	close(mfd);
	close(fd);
	return 0;
out2:
	(void)sbx_diskimg_unmount_locked(rootfd, agent, NULL);
	(void)unlinkat(rootfd, rel, 0);
out:
	close(fd);
	(void)unlinkat(rootfd, tmp, 0);
	return rc;
}

int
sbx_diskimg_resize(int rootfd, const char *agent, unsigned long long size_mib,
    struct sbx_error *e)
{
	char	    rel[SBX_LAYOUT_PATH_MAX], img[64], sz[32];
	struct stat sb;
	int	    fd, rc = -1;

	SBX_LPATH(rel, SBX_L_AGENT_DISK_IMG, agent);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDWR, e)) == -1)
		return -1;
	/* The tools reach it as /proc/self/fd/N: kept across exec. */
	if (fstat(fd, &sb) == -1 || fcntl(fd, F_SETFD, 0) == -1) {
		sbx_error_sys(e, "disk_image_failed", "%s", rel);
		goto out;
	}
	if (image_unused(fd, rel, e) == -1)
		goto out;
	snprintf(img, sizeof(img), "/proc/self/fd/%d", fd);
	snprintf(sz, sizeof(sz), "%lluM", size_mib);
	/* resize2fs wants a checked file system; -p repairs only what is
	 * safe without asking. */
	if (sbx_diskimg_tool("e2fsck", (char *[]){ "-f", "-p", img, NULL },
		e) == -1)
		goto out;
	if ((unsigned long long)sb.st_size < (size_mib << 20) &&
	    ftruncate(fd, (off_t)(size_mib << 20)) == -1) {
		sbx_error_sys(e, "disk_image_failed", "growing %s", rel);
		goto out;
	}
	if (sbx_diskimg_tool("resize2fs", (char *[]){ img, sz, NULL }, e) ==
	    -1) {
		/* A shrink below what is used: the file system is as it
		 * was; the file back to its size. */
		if (ftruncate(fd, sb.st_size) == -1)
			e->sys_errno = errno;
		goto out;
	}
	if ((unsigned long long)sb.st_size > (size_mib << 20) &&
	    ftruncate(fd, (off_t)(size_mib << 20)) == -1) {
		sbx_error_sys(e, "disk_image_failed", "shrinking %s", rel);
		goto out;
	}
	rc = 0;
out:
	close(fd);
	return rc;
}

int
sbx_diskimg_migrating(int rootfd, const char *agent)
{
	char	    rel[SBX_LAYOUT_PATH_MAX];
	struct stat sb;

	SBX_LPATH(rel, SBX_L_AGENT_DISK_MIGRATE, agent);
	return fstatat(rootfd, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0;
}

/* The directory that holds rel (beneath rootfd), opened; *leaf: rel's
 * last component. */
static int
parent_of(int rootfd, const char *rel, const char **leaf, struct sbx_error *e)
{
	char  dir[SBX_LAYOUT_PATH_MAX + 16];
	char *sl;

	snprintf(dir, sizeof(dir), "%s", rel);
	if ((sl = strrchr(dir, '/')) == NULL) {
		*leaf = rel;
		return dup(rootfd);
	}
	*sl = '\0';
	*leaf = rel + (sl - dir) + 1;
	return sbx_fs_open_beneath(rootfd, dir, O_RDONLY | O_DIRECTORY, e);
}

/* Remove rel (beneath rootfd), never following a link. */
static int
rm_rel(int rootfd, const char *rel, struct sbx_error *e)
{
	const char *leaf;
	int	    pfd, rc;

	if ((pfd = parent_of(rootfd, rel, &leaf, e)) == -1)
		return -1;
	rc = sbx_fs_rm_tree_at(pfd, leaf, e);
	close(pfd);
	return rc;
}

/*
 * Copy the contents of src to dst (both beneath rootfd), then compare.
 * An empty src has nothing to lose: done.  A dst that holds files
 * already (files written in the home while its image was not mounted, or
 * an interrupted copy) is never overwritten: the copy goes into a new
 * directory of it, .pre-disk-TIME, so both versions of a name are kept.
 */
static int
copy_verified(int rootfd, const char *src, const char *dst, struct sbx_error *e)
{
	char	    s[512], d[600], s1[520], sub[SBX_LAYOUT_PATH_MAX + 64];
	struct stat sb;
	int	    fd;

	if ((fd = sbx_fs_mkdirs_at(rootfd, src, 0700, e)) == -1)
		return -1;
	close(fd);
	if (dir_empty(rootfd, src))
		return 0;
	snprintf(sub, sizeof(sub), "%s", dst);
	if (!dir_empty(rootfd, dst)) {
		snprintf(sub, sizeof(sub), "%s/.pre-disk-%lld", dst,
		    (long long)time(NULL));
		if ((fd = sbx_fs_mkdirs_at(rootfd, sub, 0700, e)) == -1)
			return -1;
		/* The owner of the directory it lands in. */
		if (fstatat(rootfd, dst, &sb, 0) == 0 &&
		    fchown(fd, sb.st_uid, sb.st_gid) == -1) {
			close(fd);
			sbx_error_sys(e, "disk_migrate_failed", "%s", sub);
			return -1;
		}
		close(fd);
	}
	fdpath(s, sizeof(s), rootfd, src);
	fdpath(d, sizeof(d), rootfd, sub);
	snprintf(s1, sizeof(s1), "%s/.", s);
	/* -a: modes, owners, times, links, xattrs; symbolic links copied
	 * as links, never followed. */
	if (sbx_diskimg_tool("cp", (char *[]){ "-a", s1, d, NULL }, e) == -1)
		return -1;
	if (sbx_diskimg_tool("diff",
		(char *[]){ "-r", "--no-dereference", "-q", s, d, NULL },
		e) == -1) {
		char m[sizeof(e->message)];

		snprintf(m, sizeof(m), "%s", e->message);
		sbx_error_set(e, SBX_K_EXECUTION_ERROR, NULL,
		    "disk_migrate_failed",
		    "the copy of %s differs from it "
		    "(%s); nothing was removed",
		    src, m);
		return -1;
	}
	return 0;
}

static int
marker(int rootfd, const char *agent, const char *what, struct sbx_error *e)
{
	char rel[SBX_LAYOUT_PATH_MAX];

	SBX_LPATH(rel, SBX_L_AGENT_DISK_MIGRATE, agent);
	if (what == NULL) {
		if (unlinkat(rootfd, rel, 0) == -1 && errno != ENOENT) {
			sbx_error_sys(e, "disk_migrate_failed", "%s", rel);
			return -1;
		}
		return 0;
	}
	{
		const char *leaf;
		int	    pfd, rc;

		if ((pfd = parent_of(rootfd, rel, &leaf, e)) == -1)
			return -1;
		rc =
		    sbx_fs_write_atomic(pfd, leaf, what, strlen(what), 0600, e);
		close(pfd);
		return rc;
	}
}

/* The state root's directory rel, and its set-aside twin ".A.pre-disk"
 * beside it (agent names never start with a dot). */
static void
aside(char *buf, size_t sz, const char *rel, const char *agent)
{
	size_t n = strlen(rel) - strlen(agent);

	snprintf(buf, sz, "%.*s.%s.pre-disk", (int)n, rel, agent);
}

static int
migrate_in(int rootfd, const char *agent, unsigned long long size_mib,
    uid_t uid, gid_t gid, struct sbx_error *e)
{
	struct sbx_diskimg_stat st;
	char	    rel[SBX_LAYOUT_PATH_MAX], old[SBX_LAYOUT_PATH_MAX + 16];
	char	    mnt[SBX_LAYOUT_PATH_MAX], dst[SBX_LAYOUT_PATH_MAX + 16];
	struct stat sb;
	size_t	    i;
	int	    fd;

	if (marker(rootfd, agent, "in\n", e) == -1)
		return -1;
	if (sbx_diskimg_stat(rootfd, agent, &st, e) == -1)
		return -1;
	if (!st.present &&
	    sbx_diskimg_create(rootfd, agent, size_mib, uid, gid, e) == -1)
		return -1;
	if (sbx_diskimg_mount_image(rootfd, agent, e) == -1)
		return -1;
	SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
	for (i = 0; i < sizeof(on_image) / sizeof(*on_image); i++) {
		SBX_LPATH(rel, on_image[i].id, agent);
		aside(old, sizeof(old), rel, agent);
		snprintf(dst, sizeof(dst), "%s/%s", mnt, on_image[i].sub);
		if (is_mount_root(rootfd, rel, NULL))
			continue; /* bound: done before */
		/* Set aside already: the copy was verified. */
		if (fstatat(rootfd, old, &sb, AT_SYMLINK_NOFOLLOW) == -1) {
			if (copy_verified(rootfd, rel, dst, e) == -1)
				return -1;
			if (renameat(rootfd, rel, rootfd, old) == -1) {
				sbx_error_sys(e, "disk_migrate_failed",
				    "setting %s aside", rel);
				return -1;
			}
		}
		if ((fd = sbx_fs_mkdirs_at(rootfd, rel, 0700, e)) == -1)
			return -1;
		close(fd);
	}
	if (sbx_diskimg_bind(rootfd, agent, e) == -1)
		return -1;
	/* On the image and bound: the originals may go. */
	for (i = 0; i < sizeof(on_image) / sizeof(*on_image); i++) {
		SBX_LPATH(rel, on_image[i].id, agent);
		aside(old, sizeof(old), rel, agent);
		if (fstatat(rootfd, old, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    rm_rel(rootfd, old, e) == -1)
			return -1;
	}
	return marker(rootfd, agent, NULL, e);
}

static int
migrate_out(int rootfd, const char *agent, struct sbx_error *e)
{
	struct sbx_diskimg_stat st;
	char   rel[SBX_LAYOUT_PATH_MAX], mnt[SBX_LAYOUT_PATH_MAX];
	char   src[SBX_LAYOUT_PATH_MAX + 16];
	size_t i;

	if (marker(rootfd, agent, "out\n", e) == -1)
		return -1;
	if (sbx_diskimg_stat(rootfd, agent, &st, e) == -1)
		return -1;
	if (st.present) {
		/* The binds go first: the copy lands in the directories
		 * under them. */
		if (sbx_diskimg_unmount_locked(rootfd, agent, e) == -1 ||
		    sbx_diskimg_mount_image(rootfd, agent, e) == -1)
			return -1;
		SBX_LPATH(mnt, SBX_L_AGENT_DISK_MNT, agent);
		for (i = 0; i < sizeof(on_image) / sizeof(*on_image); i++) {
			SBX_LPATH(rel, on_image[i].id, agent);
			snprintf(src, sizeof(src), "%s/%s", mnt,
			    on_image[i].sub);
			if (copy_verified(rootfd, src, rel, e) == -1)
				return -1;
		}
		if (sbx_diskimg_unmount_locked(rootfd, agent, e) == -1)
			return -1;
		/* Both copies verified: the image may go. */
		SBX_LPATH(rel, SBX_L_AGENT_DISK_IMG, agent);
		if (unlinkat(rootfd, rel, 0) == -1) {
			sbx_error_sys(e, "disk_migrate_failed", "removing %s",
			    rel);
			return -1;
		}
		SBX_LPATH(rel, SBX_L_AGENT_DISK_MNT, agent);
		(void)unlinkat(rootfd, rel, AT_REMOVEDIR);
	}
	return marker(rootfd, agent, NULL, e);
}

int
sbx_diskimg_migrate(int rootfd, const char *agent, unsigned long long size_mib,
    uid_t uid, gid_t gid, int *did, struct sbx_error *e)
{
	struct sbx_diskimg_stat st;
	char			home[SBX_LAYOUT_PATH_MAX];
	int			fd, rc, pending;

	*did = 0;
	if ((fd = sbx_diskimg_lock(rootfd, agent, 1, 0)) == -1) {
		if (errno == EWOULDBLOCK) {
			sbx_error_set(e, SBX_K_UNAVAILABLE, NULL, "disk_in_use",
			    "agent %s has a run in progress "
			    "on its disk image",
			    agent);
			sbx_error_hint(e,
			    "wait for it (sbx exec ps) and try "
			    "again");
		} else
			sbx_error_sys(e, "disk_lock_failed",
			    "agents/%s/disk.lock", agent);
		return -1;
	}
	pending = sbx_diskimg_migrating(rootfd, agent);
	if (sbx_diskimg_stat(rootfd, agent, &st, e) == -1) {
		close(fd);
		return -1;
	}
	SBX_LPATH(home, SBX_L_AGENT_HOME, agent);
	if (!pending && size_mib == 0 && !st.present) {
		close(fd);
		return 0;
	}
	if (!pending && size_mib != 0 && st.present && st.mounted &&
	    is_mount_root(rootfd, home, NULL)) {
		close(fd);
		return 0;
	}
	*did = 1;
	rc = size_mib ? migrate_in(rootfd, agent, size_mib, uid, gid, e) :
			migrate_out(rootfd, agent, e);
	close(fd);
	return rc;
}

int
sbx_diskimg_gc(int rootfd, int *unmounted, int *busy, struct sbx_error *e)
{
	char   rel[SBX_LAYOUT_PATH_MAX];
	char **names;
	size_t n = 0, i;
	int    fd, r, rc = 0;

	*unmounted = *busy = 0;
	SBX_LPATH(rel, SBX_L_AGENTS, NULL);
	if ((fd = sbx_fs_open_beneath(rootfd, rel, O_RDONLY | O_DIRECTORY,
		 NULL)) == -1)
		return 0; /* no agents yet */
	names = sbx_fs_sorted_names(fd, &n);
	close(fd);
	for (i = 0; i < n; i++) {
		char mnt[SBX_LAYOUT_PATH_MAX];

		if (rc == 0 &&
		    sbx_layout_path(SBX_L_AGENT_DISK_MNT, names[i], mnt,
			sizeof(mnt), NULL) == 0 &&
		    is_mount_root(rootfd, mnt, NULL) &&
		    !sbx_diskimg_migrating(rootfd, names[i])) {
			if ((r = sbx_diskimg_release_idle(rootfd, names[i],
				 e)) == -1)
				rc = -1;
			else if (r == 1)
				(*unmounted)++;
			else if (r == 2)
				(*busy)++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}
