/* sandbox.c: the bwrap command line of an sbx sandbox. */
#include <sys/stat.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sandbox.h"

/*
 * The system directories visible inside, read-only.  On merged-/usr
 * systems /bin, /lib... are symlinks into /usr and are recreated as such;
 * elsewhere they are bound read-only.
 */
static const char *const sys_dirs[] = {
	"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
};

/*
 * The /etc files a dynamically linked program, a shell and TLS clients need.
 * Deliberately not: passwd, group, shadow, hosts (synthesized instead),
 * resolv.conf (only with host networking), machine-id (a host fingerprint),
 * ssh, sudoers, and everything else.
 */
static const char *const etc_files[] = {
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
	"/etc/alternatives", "/etc/nsswitch.conf", "/etc/localtime",
	"/etc/ssl", "/etc/ca-certificates", "/etc/protocols",
	"/etc/services", "/etc/os-release", "/etc/debian_version",
	"/etc/bash.bashrc", "/etc/profile", "/etc/inputrc", "/etc/mime.types",
	"/etc/gai.conf", "/etc/host.conf", "/etc/timezone",
	"/etc/locale.alias", "/etc/terminfo", "/etc/magic",
};

/* What uid 0 keeps in a read-write rootfs with a subordinate range. */
static const char *const rootfs_caps[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_FOWNER",
	"CAP_SETUID",
	"CAP_SETGID",
};

/*
 * With /etc as one prepared tree (etccache.c), these directories of
 * it hold hundreds of symlinks each: the tree has them as hard links of
 * the host's when it can; otherwise (not root) they are bound from the
 * host, read-only, over an empty directory in the tree.
 */
static const char *const etc_bound_dirs[] = {
	"/etc/alternatives", "/etc/ssl/certs",
};

/*
 * The system's CA bundle, first found wins: runtimes with a CA store of
 * their own (node, python's requests) ignore it unless told, and then
 * fail on a company's TLS-inspecting proxy or mirror that the host trusts.
 * Only the bundle the host (or the image) already trusts is named; the
 * sandboxed code can add nothing to it.
 */
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",	/* Debian, Ubuntu, Arch */
	"/etc/pki/tls/certs/ca-bundle.crt",	/* Fedora, RHEL */
	"/etc/ssl/ca-bundle.pem",		/* openSUSE */
	"/etc/ssl/cert.pem",			/* Alpine, Void */
};

/*
 * Inside a sandbox, pid 1 is sbx-init, started as SBX_IN_INIT.  Nested
 * sandboxes cannot work (no capability, nested user namespaces disabled,
 * and root-owned files show as nobody, so bwrap looks untrusted): saying
 * so beats a misleading error.  Code inside can fake nothing here that
 * would weaken a run: a miss only means bwrap's own refusal instead.
 */
int
sbx_sandbox_inside(void)
{
	char	 buf[sizeof(SBX_IN_INIT) + 1];
	ssize_t	 n;
	int	 fd;

	if ((fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n >= (ssize_t)sizeof(SBX_IN_INIT) &&
	    memcmp(buf, SBX_IN_INIT, sizeof(SBX_IN_INIT)) == 0;
}

int
sbx_sandbox_refuse_nested(struct sbx_error *e)
{
	if (!sbx_sandbox_inside())
		return 0;
	sbx_error_set(e, SBX_K_REJECTED, NULL, "nested_sandbox", "sbx is "
	    "running inside an sbx sandbox; nested sandboxes are not "
	    "supported");
	sbx_error_hint(e, "run sbx on the host; inside, the command is "
	    "already sandboxed");
	return -1;
}

const char *
sbx_sandbox_ca_bundle(const struct sbx_sandbox *sb)
{
	struct stat	 st;
	size_t		 i;

	for (i = 0; i < sizeof(ca_bundles) / sizeof(*ca_bundles); i++) {
		/* In an image, a symlink is the image's to resolve inside,
		 * never sbx's to follow on the host. */
		if (sb->image_root != NULL ? fstatat(sb->image_fd,
		    ca_bundles[i] + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) :
		    stat(ca_bundles[i], &st) == 0 && S_ISREG(st.st_mode))
			return ca_bundles[i];
	}
	return NULL;
}

size_t
sbx_sandbox_etc_mounts(const char **out, size_t max)
{
	size_t	 i, n = 0;

	for (i = 0; i < sizeof(etc_bound_dirs) / sizeof(*etc_bound_dirs) &&
	    n < max; i++)
		out[n++] = etc_bound_dirs[i];
	return n;
}

size_t
sbx_sandbox_etc_copies(const struct sbx_sandbox *sb, const char **out,
    size_t max)
{
	const char	*ca;
	size_t		 i, n = 0;

	for (i = 0; i < sizeof(etc_files) / sizeof(*etc_files) && n < max; i++)
		out[n++] = etc_files[i];
	/* The CA bundle: under /etc/ssl it is copied already; elsewhere
	 * (/etc/pki) the one file, not the directory with its keys. */
	if ((ca = sbx_sandbox_ca_bundle(sb)) != NULL &&
	    strncmp(ca, "/etc/ssl/", 9) != 0 && n < max)
		out[n++] = ca;
	if (!sbx_netmode_row(sb->network)->netns && n < max)
		out[n++] = "/etc/resolv.conf";
	return n;
}

/*
 * /proc files that describe the host rather than the sandbox's pid
 * namespace, masked with /dev/null as container runtimes do (OCI
 * maskedPaths): keys and key-users list the keys, and the key quotas, of
 * every uid mapped into the sandbox (unprivileged, that is the caller's
 * own keyrings, whose descriptions can name secrets); locks lists file
 * locks with device and inode numbers (every lock of the host on older
 * kernels); timer_list and sched_debug show host tasks and timers; kcore
 * is the kernel's memory and sysrq-trigger a kernel command channel, both
 * refused to an unprivileged reader today but not something to leave to
 * permissions alone.  Each mask is a bind, which costs bwrap a reading of
 * the mount table (~0.2 ms a run): where the kernel already shows nothing
 * of the host, none is made (locks_filtered).
 */
static const char *const proc_masked[] = {
	"/proc/keys", "/proc/key-users", "/proc/locks", "/proc/timer_list",
	"/proc/sched_debug", "/proc/kcore", "/proc/sysrq-trigger",
};

/*
 * Since Linux 4.9, /proc/locks lists only the locks of processes in the
 * pid namespace of that /proc mount: in the sandbox's own /proc, only the
 * sandbox's locks, never the host's (0110's FS-14 holds a lock on the
 * host and reads the file inside).  Older kernels list every lock of the
 * host, and get the mask.
 */
static int
locks_filtered(void)
{
	struct utsname	 u;
	unsigned	 major = 0, minor = 0;

	if (uname(&u) == -1 || sscanf(u.release, "%u.%u", &major, &minor) !=
	    2)
		return 0;
	return major > 4 || (major == 4 && minor >= 9);
}

static int
push2(struct sbx_strv *v, const char *a, const char *b)
{
	return sbx_strv_push(v, a) | sbx_strv_push(v, b);
}

static int
push3(struct sbx_strv *v, const char *a, const char *b, const char *c)
{
	return sbx_strv_push(v, a) | sbx_strv_push(v, b) | sbx_strv_push(v, c);
}

/*
 * Host view (sbx srt): every top-level directory of the host read-only at
 * its place, symlinks as symlinks, as srt shows the host.  Not /proc,
 * /dev, /tmp (the sandbox's own, below) nor /run (its sockets lead out of
 * the sandbox; the guard refuses them anyway) nor sbx's own /workspace
 * and /output.  One bind per entry on the root tmpfs, not `--ro-bind /
 * /`, so that sbx's own mount points can still be made on it.  What must
 * not be seen (the state root, the user's credentials) is hidden over
 * these binds by the file-system policy (exec.c, fspolicy.c).
 */
static int
host_dirs(struct sbx_strv *v)
{
	static const char *const skip[] = { ".", "..", "proc", "dev", "tmp",
	    "run", "workspace", "output" };
	char		 path[PATH_MAX], target[PATH_MAX];
	struct dirent	*d;
	struct stat	 st;
	DIR		*dir;
	ssize_t		 n;
	size_t		 i;
	int		 rc = 0;

	if ((dir = opendir("/")) == NULL)
		return -1;
	while ((d = readdir(dir)) != NULL) {
		for (i = 0; i < sizeof(skip) / sizeof(*skip); i++)
			if (strcmp(d->d_name, skip[i]) == 0)
				break;
		if (i < sizeof(skip) / sizeof(*skip))
			continue;
		snprintf(path, sizeof(path), "/%s", d->d_name);
		if (lstat(path, &st) == -1)
			continue;
		if (S_ISLNK(st.st_mode)) {
			if ((n = readlink(path, target, sizeof(target) - 1)) <=
			    0)
				continue;
			target[n] = '\0';
			rc |= push3(v, "--symlink", target, path);
		} else if (S_ISDIR(st.st_mode))
			rc |= push3(v, "--ro-bind", path, path);
	}
	closedir(dir);
	return rc ? -1 : 0;
}

/*
 * Image mode: the template's system directories, read-only, in place of
 * the host's; symlinks (merged /usr) recreated as symlinks.  Nothing of
 * the host's /usr or /etc is visible.  The template's /etc carries
 * regular passwd, group, hosts and resolv.conf files (sbx provision image
 * add makes sure), which sbx's own are bound over below.
 */
static int
image_dirs(const struct sbx_sandbox *sb, struct sbx_strv *v)
{
	static const char *const dirs[] = { "usr", "bin", "sbin", "lib",
	    "lib32", "lib64", "libx32", "etc" };
	char		 target[PATH_MAX], src[PATH_MAX], dst[32];
	struct stat	 st;
	ssize_t		 n;
	size_t		 i;
	int		 rc = 0;

	for (i = 0; i < sizeof(dirs) / sizeof(*dirs); i++) {
		if (fstatat(sb->image_fd, dirs[i], &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue;
		snprintf(dst, sizeof(dst), "/%s", dirs[i]);
		if (S_ISLNK(st.st_mode)) {
			n = readlinkat(sb->image_fd, dirs[i], target,
			    sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			rc |= push3(v, "--symlink", target, dst);
		} else if (S_ISDIR(st.st_mode)) {
			snprintf(src, sizeof(src), "%s/%s", sb->image_root,
			    dirs[i]);
			rc |= push3(v, "--ro-bind", src, dst);
		}
	}
	/*
	 * The image's /var, read-only, so that dpkg -l and apt-cache policy
	 * tell the truth about the image; /var/tmp and /var/cache private
	 * and writable (tmpfs, gone with the run) where the image has them,
	 * as programs expect to write there.
	 */
	if (fstatat(sb->image_fd, "var", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode)) {
		snprintf(src, sizeof(src), "%s/var", sb->image_root);
		rc |= push3(v, "--ro-bind", src, "/var");
		if (fstatat(sb->image_fd, "var/tmp", &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			rc |= push2(v, "--perms", "1777") |
			    push2(v, "--tmpfs", "/var/tmp");
		if (fstatat(sb->image_fd, "var/cache", &st,
		    AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			rc |= push2(v, "--tmpfs", "/var/cache");
	}
	return rc ? -1 : 0;
}

int
sbx_sandbox_argv(const struct sbx_sandbox *sb, struct sbx_strv *v,
    struct sbx_error *e)
{
	char		 target[PATH_MAX], fdpath[64];
	const char	*ca;
	struct stat	 st;
	ssize_t		 n;
	size_t		 i;
	int		 rc = 0;

	rc |= sbx_strv_push(v, sb->bwrap);
	/*
	 * Every namespace: the user namespace makes the rest possible
	 * without privilege, pid hides and fences other processes, ipc and
	 * uts keep SysV objects and the hostname private, cgroup hides the
	 * host's hierarchy.  The network namespace is left out only for the
	 * explicit `outbound` mode.
	 */
	if (sb->userns_slot > 0) {
		/* A namespace sbx made with a subordinate range (bwrap maps
		 * one id only); nested ones are off in it already. */
		rc |= sbx_strv_push(v, "--userns");
		rc |= sbx_strv_pushf(v, "%d", sb->userns_slot);
	} else
		rc |= sbx_strv_push(v, "--unshare-user");
	rc |= sbx_strv_push(v, "--unshare-ipc");
	rc |= sbx_strv_push(v, "--unshare-pid");
	rc |= sbx_strv_push(v, "--unshare-uts");
	rc |= sbx_strv_push(v, "--unshare-cgroup-try");
	if (sbx_netmode_row(sb->network)->netns)
		rc |= sbx_strv_push(v, "--unshare-net");
	/* Nested user namespaces are the entry point of most namespace
	 * kernel bugs and of escapes from the other restrictions. */
	if (sb->disable_userns && sb->userns_slot == 0)
		rc |= sbx_strv_push(v, "--disable-userns");
	/* Dies when sbx dies; own session so TIOCSTI cannot reach the
	 * caller's terminal (CVE-2017-5226); no capabilities at all. */
	rc |= sbx_strv_push(v, "--die-with-parent");
	rc |= sbx_strv_push(v, "--new-session");
	rc |= push2(v, "--cap-drop", "ALL");
	/*
	 * dpkg over a copy with a subordinate range: uid 0 inside chowns
	 * what it unpacks to the packages' owners (man, _apt) and writes
	 * into their directories.  Capabilities of the sandbox's own user
	 * namespace, which maps the sandbox uid and the range alone: over
	 * a host file of anyone else they are nothing, and CAP_SYS_ADMIN,
	 * CAP_MKNOD and the rest stay dropped.
	 */
	if (sb->rootfs_rw && sb->userns_slot > 0)
		for (i = 0; i < sizeof(rootfs_caps) / sizeof(*rootfs_caps); i++)
			rc |= push2(v, "--cap-add", rootfs_caps[i]);
	/* sbx-init is pid 1: when the command ends, init exits and the
	 * kernel kills everything left in the pid namespace. */
	rc |= sbx_strv_push(v, "--as-pid-1");
	rc |= push2(v, "--hostname", "sbx");

	if (sb->rootfs_rw && sb->image_root != NULL) {
		/*
		 * uid 0 of the new user namespace, whose only mapping is the
		 * sandbox uid outside: what dpkg chowns to root is the
		 * sandbox uid's on disk, never host root's.  No capability
		 * (--cap-drop ALL below): uid 0 writes the copy as its owner.
		 */
		rc |= push2(v, "--uid", "0") | push2(v, "--gid", "0");
		rc |= push3(v, "--bind", sb->image_root, "/");
		rc |= push2(v, "--tmpfs", "/run");
		goto rootfs_done;
	}
	if (sb->host_view) {
		if (sb->image_root != NULL)
			return sbx_error_set(e, SBX_K_INVALID_ARGS,
			    "host_view", "with_image", "the host view shows "
			    "the host's file system: the agent's image cannot "
			    "be used with it");
		if (host_dirs(v) == -1)
			return sbx_error_sys(e, "host_view", "reading /");
		goto etc_done;
	}
	if (sb->image_root != NULL) {
		if (image_dirs(sb, v) == -1)
			return sbx_error_sys(e, "nomem", "building the bwrap "
			    "command");
		goto etc_done;
	}
	rc |= push3(v, "--ro-bind", "/usr", "/usr");
	for (i = 0; i < sizeof(sys_dirs) / sizeof(*sys_dirs); i++) {
		if (lstat(sys_dirs[i], &st) == -1)
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(sys_dirs[i], target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			rc |= push3(v, "--symlink", target, sys_dirs[i]);
		} else if (S_ISDIR(st.st_mode))
			rc |= push3(v, "--ro-bind", sys_dirs[i], sys_dirs[i]);
	}
	/*
	 * /etc: one read-only bind of a tree prepared beforehand (the same
	 * files, and passwd, group, hosts): bwrap walks the mount table
	 * after every read-only bind, so single-file binds cost more than
	 * the rest of the sandbox.  The single binds remain for when the
	 * tree cannot be had (a read-only state root).
	 */
	if (sb->etc_cached) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
		    SBX_FD_ETC);
		rc |= push3(v, "--ro-bind", fdpath, "/etc");
		for (i = 0; i < sizeof(etc_bound_dirs) /
		    sizeof(*etc_bound_dirs); i++)
			if (sb->etc_bound & (1u << i))
				rc |= push3(v, "--ro-bind-try",
				    etc_bound_dirs[i], etc_bound_dirs[i]);
		goto etc_made;
	}
	for (i = 0; i < sizeof(etc_files) / sizeof(*etc_files); i++)
		rc |= push3(v, "--ro-bind-try", etc_files[i], etc_files[i]);
	/* The CA bundle: under /etc/ssl it is bound already; elsewhere
	 * (/etc/pki) the one file, not the directory with its keys. */
	if ((ca = sbx_sandbox_ca_bundle(sb)) != NULL &&
	    strncmp(ca, "/etc/ssl/", 9) != 0)
		rc |= push3(v, "--ro-bind-try", ca, ca);
etc_done:
	if (!sbx_netmode_row(sb->network)->netns)
		rc |= push3(v, "--ro-bind-try", "/etc/resolv.conf",
		    "/etc/resolv.conf");
	rc |= push3(v, "--ro-bind-data", "9", "/etc/passwd");
	rc |= push3(v, "--ro-bind-data", "10", "/etc/group");
	rc |= push3(v, "--ro-bind-data", "11", "/etc/hosts");
etc_made:
rootfs_done:

	/* A fresh /proc of the new pid namespace, a minimal /dev. */
	rc |= push2(v, "--proc", "/proc");
	/*
	 * The sandbox's /proc is a new instance of the same kernel's: what
	 * the host's has, it has.  One bind each, only for the files that
	 * exist (a bind over a missing one would fail the run).  A device
	 * bind, as --dev's own /dev/null: a plain one is nodev, and reading
	 * it would fail where a reader (ps, lsof) expects an empty file.
	 */
	for (i = 0; i < sizeof(proc_masked) / sizeof(*proc_masked); i++) {
		if (strcmp(proc_masked[i], "/proc/locks") == 0 &&
		    locks_filtered())
			continue;
		if (access(proc_masked[i], F_OK) == 0)
			rc |= push3(v, "--dev-bind", "/dev/null",
			    proc_masked[i]);
	}
	rc |= push2(v, "--dev", "/dev");
	if (sb->disk_tmp) {
		/* Counted in the disk limit: the run's own directories
		 * on the agent's image (exec.c prep_disk_tmp). */
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
		    SBX_FD_DISK_TMP);
		rc |= push3(v, "--bind", fdpath, "/tmp");
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
		    SBX_FD_DISK_SHM);
		rc |= push3(v, "--bind", fdpath, "/dev/shm");
		goto tmp_done;
	}
	rc |= push2(v, "--perms", "1777");
	if (sb->tmp_size > 0) {
		rc |= sbx_strv_push(v, "--size");
		rc |= sbx_strv_pushf(v, "%llu", sb->tmp_size);
	}
	rc |= push2(v, "--tmpfs", "/tmp");
	rc |= push2(v, "--perms", "1777");
	rc |= push2(v, "--size", "67108864");
	rc |= push2(v, "--tmpfs", "/dev/shm");
tmp_done:

	/*
	 * Writable places, bound from descriptors that sbx opened without
	 * following symlinks: what was validated is what gets mounted, even
	 * if a path component is swapped meanwhile.
	 */
	if (sb->rootfs_rw)
		goto binds_done;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", SBX_FD_HOME);
	rc |= push3(v, "--bind", fdpath, sb->home);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", SBX_FD_OUTPUT);
	rc |= push3(v, "--bind", fdpath, SBX_IN_OUTPUT);
	/* Bound by path, resolved by bwrap as the agent's uid, which
	 * reaches it through its shared group alone; workspace/ is root's
	 * (0711), so no one but root can swap what the path names. */
	if (sb->shared_dir != NULL)
		rc |= push3(v, "--bind", sb->shared_dir, SBX_IN_SHARED);
	if (sb->workdir != NULL) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
		    SBX_FD_WORKDIR);
		rc |= push3(v, "--bind", fdpath, sb->workdir);
	}
	for (i = 0; i < (size_t)sb->nxworkdir; i++) {
		snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d",
		    SBX_FD_XWORKDIR + (int)i);
		rc |= push3(v, "--bind", fdpath, sb->xworkdir[i].path);
	}
	/* Protected, extra read-only and hidden paths, over the binds
	 * above (fspolicy.c). */
	for (i = 0; sb->fs_ops != NULL && sb->fs_ops[i] != NULL; i++)
		rc |= sbx_strv_push(v, sb->fs_ops[i]);
binds_done:
	/* The bridge: a tmpfs of its own for sbx-init's socket and the
	 * token file (the rest of / is read-only), and the client (bound
	 * in proxy mode too: `sbx-host connect` for git over SSH). */
	if (sb->bridge || sb->host_cli != NULL) {
		rc |= push2(v, "--tmpfs", SBX_INIT_RUN_DIR);
		if (sb->host_cli != NULL)
			rc |= push3(v, "--ro-bind", sb->host_cli,
			    SBX_INIT_HOST_CLI);
	}
	/*
	 * A run with credential rules trusts the state root's CA (the proxy
	 * terminates TLS for the rules' hosts with it): a read-only copy of
	 * the bundle, read by bwrap from the descriptor sbx opened without
	 * following a link.  Nothing under config/ is mounted: the CA's key
	 * beside the bundle stays out of reach, and the sandbox's uid need
	 * not traverse config/ (0700).
	 */
	if (sb->ca_bundle) {
		rc |= push2(v, "--perms", "0444");
		rc |= sbx_strv_push(v, "--ro-bind-data");
		rc |= sbx_strv_pushf(v, "%d", SBX_FD_CA);
		rc |= sbx_strv_push(v, SBX_IN_CA_BUNDLE);
	}
	/*
	 * sbx-init is executed from the descriptor sbx opened (see the
	 * command below): nothing is mounted for it, and bwrap's every
	 * bind re-reads the mount table.  Otherwise, when bwrap runs as
	 * another uid than sbx it may not reach the directory sbx is
	 * installed in: the binary is copied in from that descriptor.
	 */
	if (sb->init_exec_fd)
		rc |= push2(v, "--dir", "/run");	/* as it was */
	else if (sb->init_by_copy) {
		rc |= push2(v, "--perms", "0555");
		rc |= sbx_strv_push(v, "--ro-bind-data");
		rc |= sbx_strv_pushf(v, "%d", SBX_FD_INIT);
		rc |= sbx_strv_push(v, SBX_IN_INIT);
	} else
		rc |= push3(v, "--ro-bind", sb->init, SBX_IN_INIT);
	/* Nothing else under / may be written: the root tmpfs, /etc, /run
	 * and the mount points become read-only. */
	if (!sb->rootfs_rw)
		rc |= push2(v, "--remount-ro", "/");
	rc |= push2(v, "--remount-ro", "/dev");
	rc |= push2(v, "--chdir", sb->cwd);
	if (sb->seccomp) {
		rc |= sbx_strv_push(v, "--seccomp");
		rc |= sbx_strv_pushf(v, "%d", SBX_FD_SECCOMP);
	}
	/*
	 * The command comes after `--`: nothing in it is read as an
	 * option by bwrap or by sbx-init.  sbx-init from its descriptor:
	 * bwrap executes /proc/self/fd/N after the pivot, through the
	 * sandbox's own /proc, so the file is the one sbx opened and
	 * checked, whatever its path outside has become since, and its
	 * directory need not be reachable by the sandbox's uid.  The
	 * descriptor is not the command's: sbx-init closes every one above
	 * SBX_FD_ENV before anything else.  sbx-init renames its argv[0]
	 * to SBX_IN_INIT (/proc/1/cmdline is how sbx knows it runs inside
	 * a sandbox); /proc/1/exe, which names the file's host path, is
	 * unreadable to the sandbox's processes: sbx-init makes itself
	 * non-dumpable.
	 */
	rc |= sbx_strv_push(v, "--");
	if (sb->init_exec_fd)
		rc |= sbx_strv_pushf(v, "/proc/self/fd/%d", SBX_FD_INIT);
	else
		rc |= sbx_strv_push(v, SBX_IN_INIT);
	for (i = 0; i < (size_t)sb->nrlimit; i++) {
		rc |= sbx_strv_push(v, SBX_INIT_OPT_RLIMIT);
		rc |= sbx_strv_pushf(v, "%s=%llu", sb->rlimit[i].name,
		    sb->rlimit[i].value);
	}
	/* The workdir was bound from a descriptor; sbx-init checks that
	 * what ended up at its path is that directory (device and inode)
	 * before the command starts. */
	if (sb->workdir != NULL) {
		rc |= sbx_strv_push(v, SBX_INIT_OPT_WORKDIR);
		rc |= sbx_strv_pushf(v, "%llu:%llu", sb->workdir_dev,
		    sb->workdir_ino);
		rc |= sbx_strv_push(v, sb->workdir);
	}
	for (i = 0; i < (size_t)sb->nxworkdir; i++) {
		rc |= sbx_strv_push(v, SBX_INIT_OPT_WORKDIR);
		rc |= sbx_strv_pushf(v, "%llu:%llu", sb->xworkdir[i].dev,
		    sb->xworkdir[i].ino);
		rc |= sbx_strv_push(v, sb->xworkdir[i].path);
	}
	/* The guard of names that must not be created (sbx-init). */
	for (i = 0; sb->fs_init != NULL && sb->fs_init[i] != NULL; i++)
		rc |= sbx_strv_push(v, sb->fs_init[i]);
	/*
	 * A terminal is made inside, on the sandbox's own devpts (bwrap's
	 * --dev), never handed in from the caller: the caller's terminal
	 * is what TIOCSTI and escape-sequence attacks aim at, and a host
	 * pty would not resolve to a name inside.
	 */
	if (sb->tty) {
		rc |= sbx_strv_push(v, SBX_INIT_OPT_TTY);
		rc |= sbx_strv_pushf(v, "%u:%u", sb->tty_rows, sb->tty_cols);
	}
	if (sbx_netmode_row(sb->network)->relay)
		rc |= sbx_strv_push(v, SBX_INIT_OPT_PROXY);
	if (sb->bridge)
		rc |= sbx_strv_push(v, SBX_INIT_OPT_BRIDGE);
	if (sb->session)
		rc |= sbx_strv_push(v, SBX_INIT_OPT_SESSION);
	if (sb->shell != NULL) {
		/* The string is the script; sb->argv, when given, is $0
		 * and the arguments, as for sh -c. */
		rc |= sbx_strv_push(v, SBX_INIT_OPT_SHELL);
		rc |= sbx_strv_push(v, "--");
		rc |= sbx_strv_push(v, sb->shell);
		for (i = 0; sb->argv != NULL && sb->argv[i] != NULL; i++)
			rc |= sbx_strv_push(v, sb->argv[i]);
	} else {
		rc |= sbx_strv_push(v, "--");
		for (i = 0; sb->argv[i] != NULL; i++)
			rc |= sbx_strv_push(v, sb->argv[i]);
	}
	if (rc != 0)
		return sbx_error_sys(e, "nomem", "building the bwrap command");
	return sbx_sandbox_check_dests(sb, v, e);
}

/*
 * Where bwrap mounts is resolved by bwrap, before the sandbox's root is
 * in place: a symbolic link on the way to a destination, in a tree the
 * agent can change (its own root file system copy, where a package's
 * maintainer script runs as uid 0 of the namespace, or an image's
 * content), is followed there, and an absolute one (or one that climbs
 * with ..) names a host path: bwrap creates missing directories and files
 * on the host through it, as the sandbox's uid, and mounts over it.  So
 * every destination of the command line is looked at as bwrap will reach
 * it: the mount it falls in (the latest one whose destination holds it),
 * and when that mount comes from the image, each component beneath the
 * image's descriptor, none followed; one that is a link refuses the run.
 * A destination under a link bwrap recreates (--symlink, merged /usr) is
 * refused too.  The command line itself is read, not a list kept beside
 * it: a destination added to sbx_sandbox_argv later is checked as well;
 * an option this does not know refuses the run (fail closed).
 */
struct dest_mount {
	const char	*dest;
	const char	*rel;	/* in the image; NULL: not from it */
	int		 link;	/* a symlink bwrap makes */
};

/* Is path equal to or under dir (both absolute)? */
static size_t
dest_under(const char *path, const char *dir)
{
	size_t	 n = strlen(dir);

	if (strcmp(dir, "/") == 0)
		return 1;
	if (strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/'))
		return n;
	return 0;
}

static int
dest_unsafe(struct sbx_error *e, const char *dest, const char *why)
{
	sbx_error_set(e, SBX_K_REJECTED, "rootfs", "rootfs_unsafe",
	    "refusing to run: the sandbox's %s %s", dest, why);
	sbx_error_hint(e, "a package or a command changed the agent's root "
	    "file system copy: make a new one (sbx provision --agent AGENT "
	    "--no-own-rootfs, then --own-rootfs)");
	return -1;
}

/* Walk rel beneath the image: no component may be a symlink. */
static int
dest_walk(int image_fd, const char *rel, const char *dest,
    struct sbx_error *e)
{
	char		 comp[NAME_MAX + 1];
	const char	*c = rel;
	struct stat	 st;
	size_t		 n;
	int		 fd, nfd;

	if ((fd = fcntl(image_fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return sbx_error_sys(e, "rootfs", "checking %s", dest);
	while (*c != '\0') {
		n = strcspn(c, "/");
		if (n == 0) {
			c++;
			continue;
		}
		if (n > NAME_MAX || (n == 2 && c[0] == '.' && c[1] == '.')) {
			close(fd);
			return dest_unsafe(e, dest, "is not a plain path");
		}
		memcpy(comp, c, n);
		comp[n] = '\0';
		c += n;
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			/* Missing: bwrap makes it, in a directory that was
			 * reached without a link. */
			close(fd);
			return 0;
		}
		if (S_ISLNK(st.st_mode)) {
			close(fd);
			return dest_unsafe(e, dest, "is reached through a "
			    "symbolic link in the root file system");
		}
		if (*c == '\0' || !S_ISDIR(st.st_mode))
			break;
		if ((nfd = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1) {
			close(fd);
			return dest_unsafe(e, dest, "cannot be opened without "
			    "following a link");
		}
		close(fd);
		fd = nfd;
	}
	close(fd);
	return 0;
}

int
sbx_sandbox_check_dests(const struct sbx_sandbox *sb,
    const struct sbx_strv *v, struct sbx_error *e)
{
	/* bwrap's options: how many arguments, which is the destination
	 * (1-based; 0 none), and whether the first is a mount source. */
	static const struct {
		const char	*opt;
		int		 nargs, dest, mount;
	} opts[] = {
		{ "--bind", 2, 2, 1 }, { "--ro-bind", 2, 2, 1 },
		{ "--dev-bind", 2, 2, 1 }, { "--bind-try", 2, 2, 1 },
		{ "--ro-bind-try", 2, 2, 1 }, { "--dev-bind-try", 2, 2, 1 },
		{ "--tmpfs", 1, 1, 2 }, { "--proc", 1, 1, 2 },
		{ "--dev", 1, 1, 2 }, { "--mqueue", 1, 1, 2 },
		{ "--dir", 1, 1, 0 }, { "--remount-ro", 1, 1, 0 },
		{ "--ro-bind-data", 2, 2, 2 }, { "--bind-data", 2, 2, 2 },
		{ "--file", 2, 2, 0 }, { "--symlink", 2, 2, 3 },
		{ "--chmod", 2, 2, 0 },
		{ "--userns", 1, 0, 0 }, { "--cap-drop", 1, 0, 0 },
		{ "--cap-add", 1, 0, 0 }, { "--hostname", 1, 0, 0 },
		{ "--uid", 1, 0, 0 }, { "--gid", 1, 0, 0 },
		{ "--perms", 1, 0, 0 }, { "--size", 1, 0, 0 },
		{ "--chdir", 1, 0, 0 }, { "--seccomp", 1, 0, 0 },
		{ "--unshare-user", 0, 0, 0 }, { "--unshare-ipc", 0, 0, 0 },
		{ "--unshare-pid", 0, 0, 0 }, { "--unshare-uts", 0, 0, 0 },
		{ "--unshare-cgroup-try", 0, 0, 0 },
		{ "--unshare-net", 0, 0, 0 }, { "--disable-userns", 0, 0, 0 },
		{ "--die-with-parent", 0, 0, 0 }, { "--new-session", 0, 0, 0 },
		{ "--as-pid-1", 0, 0, 0 },
	};
	struct dest_mount m[256];
	char		  rel[PATH_MAX];
	size_t		  nm = 0, i, k, j, best, len, rl;
	const char	 *dest, *src;
	int		  o;

	if (sb->image_root == NULL || sb->image_fd < 0)
		return 0;
	rl = strlen(sb->image_root);
	for (i = 1; i < v->n && strcmp(v->v[i], "--") != 0; i += 1 +
	    (size_t)opts[o].nargs) {
		for (o = 0; o < (int)(sizeof(opts) / sizeof(*opts)); o++)
			if (strcmp(v->v[i], opts[o].opt) == 0)
				break;
		if (o == (int)(sizeof(opts) / sizeof(*opts)) ||
		    i + (size_t)opts[o].nargs >= v->n)
			return sbx_error_set(e, SBX_K_REJECTED, "rootfs",
			    "rootfs_unsafe", "refusing to run: bwrap option "
			    "%s is not known to the destination check",
			    v->v[i]);
		if (opts[o].dest == 0)
			continue;
		dest = v->v[i + (size_t)opts[o].dest];
		if (dest[0] != '/')
			return dest_unsafe(e, dest, "is not absolute");
		/* The mount it falls in: the latest, longest one. */
		for (k = 0, best = nm, len = 0; k < nm; k++)
			if ((j = dest_under(dest, m[k].dest)) > 0 && j >= len) {
				best = k;
				len = j;
			}
		if (best < nm && m[best].link && strcmp(dest, m[best].dest) !=
		    0)
			return dest_unsafe(e, dest, "is under a symbolic link "
			    "of the root file system");
		if (best < nm && m[best].rel != NULL) {
			const char *rest = dest + (strcmp(m[best].dest, "/") ==
			    0 ? 0 : strlen(m[best].dest));

			if (snprintf(rel, sizeof(rel), "%s%s", m[best].rel,
			    rest) >= (int)sizeof(rel))
				return dest_unsafe(e, dest, "is too long");
			if (dest_walk(sb->image_fd, rel, dest, e) == -1)
				return -1;
		}
		if (opts[o].mount == 0)
			continue;
		if (nm == sizeof(m) / sizeof(*m))
			return sbx_error_set(e, SBX_K_REJECTED, "rootfs",
			    "rootfs_unsafe", "refusing to run: too many "
			    "mounts to check");
		m[nm].dest = dest;
		m[nm].rel = NULL;
		m[nm].link = opts[o].mount == 3;
		src = v->v[i + 1];
		if (opts[o].mount == 1 && strncmp(src, sb->image_root, rl) ==
		    0 && (src[rl] == '\0' || src[rl] == '/'))
			m[nm].rel = src + rl + (src[rl] == '/');
		nm++;
	}
	return 0;
}

int
sbx_sandbox_etc(const struct sbx_sandbox *sb, uid_t uid, gid_t gid,
    struct sbx_buf *pw, struct sbx_buf *gr, struct sbx_buf *hosts)
{
	int	 rc = 0;

	/* The sandbox user carries the agent's name, never the host's. */
	rc |= sbx_buf_printf(pw, "%s:x:%u:%u:sbx agent %s:%s:/bin/sh\n",
	    sb->agent, (unsigned)uid, (unsigned)gid, sb->agent, sb->home);
	if (uid != 65534)
		rc |= sbx_buf_puts(pw,
		    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
	rc |= sbx_buf_printf(gr, "%s:x:%u:\n", sb->agent, (unsigned)gid);
	if (gid != 65534)
		rc |= sbx_buf_puts(gr, "nogroup:x:65534:\n");
	rc |= sbx_buf_puts(hosts, "127.0.0.1\tlocalhost\n127.0.1.1\tsbx\n"
	    "::1\tlocalhost ip6-localhost ip6-loopback\n");
	return rc ? -1 : 0;
}
