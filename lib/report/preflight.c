/*
 * preflight.c: can this machine run sbx, and is the state root sound?
 *
 * Everything is proven by doing where doing is harmless: a probe sandbox
 * runs /run/sbx/init --probe through sbx-exec (IP-07: live probes, not
 * configuration reads), a test cgroup is created and destroyed, a nameless
 * O_TMPFILE proves a directory writable.  What cannot be proven is
 * reported as unproven, never as passed.  The state root is only looked
 * at: nothing is followed (lstat, O_NOFOLLOW beneath a directory fd),
 * created or repaired, so that a fresh machine reports needs_setup and
 * stays fresh.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "buf.h"
#include "cgroup.h"
#include "diskimg.h"
#include "envelope.h"
#include "fsutil.h"
#include "idalloc.h"
#include "initproto.h"
#include "layout.h"
#include "manifest.h"
#include "pquota.h"
#include "preflight.h"
#include "runlimits.h"
#include "settings.h"
#include "time.h"
#include "tools.h"
#include "utf8.h"

/* Severities and statuses of a finding (preflight.h). */
#define S_OK		SBX_PREFLIGHT_SEV_OK
#define S_INFO		SBX_PREFLIGHT_SEV_INFO
#define S_WARNING	SBX_PREFLIGHT_SEV_WARNING
#define S_BLOCKED	SBX_PREFLIGHT_SEV_BLOCKED
#define T_PASSED	SBX_PREFLIGHT_ST_PASSED
#define T_MISSING	SBX_PREFLIGHT_ST_MISSING
#define T_FAILED	SBX_PREFLIGHT_ST_FAILED
#define T_UNPROVEN	SBX_PREFLIGHT_ST_UNPROVEN

#define VERSION_OUT_MAX		(64u << 10)
#define PROBE_OUT_MAX		(1u << 20)
#define VERSION_TIMEOUT_MS	5000
#define PROBE_TIMEOUT_MS	15000
#define IMAGES_MAX		256
#define IMAGE_FINDINGS_MAX	16

/* Areas, in the order the report lists them; a finding's id starts with
 * its area's name (area_title() below). */
enum area {
	A_DEP, A_INSTALL, A_HOST, A_CAP, A_STATE, A_CONFIG, A_IMAGES, A_DAEMON,
	A_N
};

/* The locations of DESIGN.md §3 (layout.c): those marked
 * SBX_LF_REPORT, parents first, by their layout id. */
#define NLOC		SBX_L_N
#define locdefs(i)	sbx_layout_get((enum sbx_layout_id)(i))
#define LOC_ROOT	SBX_L_ROOT
#define LOC_CONFIG	SBX_L_CONFIG
#define LOC_SANDBOX_JSON SBX_L_SANDBOX_JSON
#define LOC_AGENT_CONFIG SBX_L_AGENT_CONFIG
#define LOC_WORKSPACE	SBX_L_WORKSPACE
#define LOC_WS_AGENTS	SBX_L_WS_AGENTS
#define LOC_AGENT_HOME	SBX_L_AGENT_HOME
#define LOC_OUTPUT	SBX_L_OUTPUT
#define LOC_AGENT_OUTPUT SBX_L_AGENT_OUTPUT
#define LOC_IMAGES	SBX_L_IMAGES
#define LOC_RUN		SBX_L_RUN
#define LOC_PROXY	SBX_L_PROXY_SOCK
#define LOC_BRIDGE	SBX_L_BRIDGE_SOCK
#define LOC_CACHE	SBX_L_CACHE

struct lstate {
	char		*rel;
	char		*path;		/* absolute */
	const char	*status;
	int		 fd;		/* an open directory, or -1 */
	int		 exists;
	int		 usable;	/* a directory we can read and search */
	struct stat	 st;
};

/* A child process whose output we read. */
struct child {
	pid_t		 pid;
	int		 fd;
	struct sbx_buf	 out;
	size_t		 cap;
	int		 status;	/* wait status, or -1 */
	int		 timed_out;
};

struct pf {
	const struct sbx_preflight_opts	*o;
	json_t			*f[A_N];	/* findings, by area */
	json_t			*deps, *caps, *locs, *host, *config;
	struct sbx_strv		 arena;		/* formatted strings */
	int			 oom;
	const char		*provision;	/* `sbx provision ...` */
	struct lstate		 ls[NLOC];
	int			 in_container;
	int			 as_root;
	/* configuration */
	int			 cfg_invalid, agent_cfg_invalid;
	/* SBX_RL_* the agent's config asks for (sbx exec refuses a run
	 * whose asked-for limit no cgroup can hold) */
	unsigned		 hard_limits;
	const char		*limits;	/* "hard", "soft", "unproven" */
	unsigned long long	 min_free;
	char			*v2root;
	/* dependencies */
	char			*tool_path[3];
	struct sbx_error	 tool_err[3];
	struct child		 ver[3];
	/* the probe */
	struct child		 probe;
	char			 tmp_root[PATH_MAX];
	int			 probe_real_root;
	int			 probe_spawned;
	const char		*probe_skip;	/* why it did not run */
	int			 filter_holds;	/* the probe proved seccomp */
	/* host findings that sbx's sandboxes neutralise, when the probe
	 * proves it (borrowed: they live in f[A_HOST]) */
	json_t			*covered[16];
	const char		*cover_why[16];
	size_t			 ncovered;
};

/* ------------------------------------------------------------------ */
/* small helpers */

static const char * __attribute__((format(printf, 2, 3)))
pf_fmt(struct pf *p, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		p->oom = 1;
		return "";
	}
	if (sbx_strv_push(&p->arena, s) == -1) {
		free(s);
		p->oom = 1;
		return "";
	}
	free(s);
	return p->arena.v[p->arena.n - 1];
}

/* A JSON string from arbitrary bytes: paths and messages may hold
 * anything, invalid UTF-8 included; jansson escapes the rest. */
static json_t *
jstr(const char *s)
{
	if (s == NULL)
		return json_null();
	return sbx_json_bytes(s, strlen(s));
}

static void
jset(struct pf *p, json_t *o, const char *key, json_t *v)
{
	if (v == NULL || json_object_set_new(o, key, v) == -1)
		p->oom = 1;
}

static void
jpush(struct pf *p, json_t *a, json_t *v)
{
	if (v == NULL || json_array_append_new(a, v) == -1)
		p->oom = 1;
}


static void
finding(struct pf *p, enum area a, const char *id, const char *code,
    const char *sev, const char *status, const char *title,
    const char *detail, const char *repair, const char *loc_id,
    const char *path)
{
	json_t	*f = json_object();

	if (f == NULL) {
		p->oom = 1;
		return;
	}
	jset(p, f, "id", jstr(id));
	jset(p, f, "code", jstr(code));
	jset(p, f, "severity", jstr(sev));
	jset(p, f, "status", jstr(status));
	jset(p, f, "title", jstr(title));
	jset(p, f, "detail", jstr(detail ? detail : ""));
	jset(p, f, "repair_suggestion", jstr(repair ? repair : ""));
	if (loc_id != NULL)
		jset(p, f, "location_id", jstr(loc_id));
	if (path != NULL)
		jset(p, f, "path", jstr(path));
	jpush(p, p->f[a], f);
}

static void
capability(struct pf *p, const char *id, const char *status,
    const char *detail)
{
	json_t	*c = json_object();

	if (c == NULL) {
		p->oom = 1;
		return;
	}
	jset(p, c, "id", jstr(id));
	jset(p, c, "status", jstr(status));
	jset(p, c, "detail", jstr(detail));
	jpush(p, p->caps, c);
}

/* ------------------------------------------------------------------ */
/* children: spawned from argv with an explicit environment, never a shell */

/*
 * disk_limits (issue 32): can a run's disk limit be hard here?  By an
 * image of the agent's own (root, a loop device, mkfs.ext4) or by a
 * project quota (the kernel and the state root's file system say).  A
 * capability only, no finding: a soft limit is today's default.
 */
static void
check_disk(struct pf *p)
{
	struct sbx_pquota_probe pq;
	struct sbx_error	e;
	const char	       *why = sbx_diskimg_unusable(), *st, *detail;
	char		       *mkfs = NULL;
	json_t		       *c, *img;
	size_t			i;
	int			fd, sandbox_ok = 1;

	if (why == NULL && sbx_tools_find("mkfs.ext4", NULL, &mkfs, &e) == -1)
		why = "mkfs.ext4 is missing (Debian: e2fsprogs)";
	free(mkfs);
	fd = open(p->o->root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	sbx_pquota_probe(fd, &pq);
	if (fd >= 0)
		close(fd);
	/* No sandbox, no run to limit: nothing is proven of it. */
	json_array_foreach (p->caps, i, c) {
		const char *id = json_string_value(json_object_get(c, "id"));
		const char *s = json_string_value(json_object_get(c, "status"));

		if (strcmp(id, "sandbox") == 0 && strcmp(s, T_PASSED) != 0)
			sandbox_ok = 0;
	}
	st = T_MISSING;
	detail = "";
	if (why != NULL && !pq.available)
		detail = pf_fmt(p,
		    "disk limits are soft here: %s; project quotas: %s", why,
		    pq.reason);
	else if (why == NULL) {
		st = T_PASSED;
		detail = "hard disk limits by an image of the agent's own "
			 "(sbx provision --disk-image SIZE)";
	} else if (pq.available) {
		st = T_PASSED;
		detail = "hard disk limits by project quota";
	}
	capability(p, "disk_limits", sandbox_ok ? st : T_UNPROVEN, detail);
	c = json_array_get(p->caps, json_array_size(p->caps) - 1);
	if (c == NULL)
		return;
	img = json_pack("{s:b}", "available", why == NULL);
	if (img != NULL && why != NULL)
		jset(p, img, "reason", jstr(why));
	jset(p, c, "image", img);
	img = json_pack("{s:b,s:s}", "available", pq.available, "code",
	    pq.code);
	if (img != NULL && !pq.available)
		jset(p, img, "reason", jstr(pq.reason));
	jset(p, c, "project_quota", img);
}

static int
child_spawn(struct child *c, const char *path, char *const argv[],
    char *const envp[], int with_stderr, size_t cap)
{
	int	 pfd[2], nul, i;

	memset(c, 0, sizeof(*c));
	c->pid = -1;
	c->fd = -1;
	c->status = -1;
	c->cap = cap;
	if (pipe2(pfd, O_CLOEXEC) == -1)
		return -1;
	if ((c->pid = fork()) == -1) {
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (c->pid == 0) {
		nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (nul == -1 || dup2(nul, 0) == -1 || dup2(pfd[1], 1) == -1 ||
		    dup2(with_stderr ? pfd[1] : nul, 2) == -1)
			_exit(127);
		for (i = 0; i < 3; i++)
			(void)fcntl(i, F_SETFD, 0);
		sbx_fs_close_from(3, NULL, 0);
		execve(path, argv, envp);
		_exit(127);
	}
	close(pfd[1]);
	c->fd = pfd[0];
	return 0;
}

/* Read until end of file (keeping at most cap bytes, draining the rest so
 * that the child never blocks on a full pipe), then reap.  Past the
 * deadline: SIGTERM (sbx-exec tears its sandbox down), 2 s later SIGKILL. */
static void
child_collect(struct child *c, long long deadline)
{
	char		 chunk[8192];
	struct pollfd	 pfd;
	long long	 now;
	ssize_t		 n;
	int		 r, termed = 0;

	while (c->fd >= 0) {
		now = sbx_now_ms();
		if (now >= deadline) {
			c->timed_out = 1;
			if (!termed) {
				kill(c->pid, SIGTERM);
				termed = 1;
				deadline = now + 2000;
				continue;
			}
			kill(c->pid, SIGKILL);
			break;
		}
		pfd.fd = c->fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		r = poll(&pfd, 1, (int)(deadline - now));
		if (r <= 0)
			continue;
		n = read(c->fd, chunk, sizeof(chunk));
		if (n == -1 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		if (c->out.len < c->cap)
			(void)sbx_buf_append(&c->out, chunk,
			    (size_t)n < c->cap - c->out.len ? (size_t)n :
			    c->cap - c->out.len);
	}
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	if (c->pid > 0)
		while (waitpid(c->pid, &c->status, 0) == -1 && errno == EINTR)
			;
	c->pid = -1;
}

static void
child_release(struct child *c)
{
	if (c->fd >= 0 || c->pid > 0)
		child_collect(c, 0);
	sbx_buf_release(&c->out);
}

/* ------------------------------------------------------------------ */
/* versions */

int
sbx_preflight_version_cmp(const char *a, const char *b)
{
	unsigned long	 x, y;
	char		*ea, *eb;

	while (*a || *b) {
		x = strtoul(a, &ea, 10);
		y = strtoul(b, &eb, 10);
		if (ea == a)
			x = 0;
		if (eb == b)
			y = 0;
		if (x != y)
			return x < y ? -1 : 1;
		a = ea;
		b = eb;
		if (*a != '.' && *b != '.')
			break;
		if (*a == '.')
			a++;
		if (*b == '.')
			b++;
	}
	return 0;
}

int
sbx_preflight_version_of(const char *tool, const char *out, size_t len,
    char *ver, size_t vlen)
{
	const char	*key, *p, *end = out + len, *s;
	size_t		 klen, n;

	if (strcmp(tool, "bwrap") == 0)
		key = "bubblewrap ";
	else if (strcmp(tool, "socat") == 0)
		key = "socat version ";
	else if (strcmp(tool, "rg") == 0)
		key = "ripgrep ";
	else
		return -1;
	klen = strlen(key);
	/* The line that starts with the key, then digits and dots. */
	for (p = out; p < end; ) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if ((size_t)(le - p) > klen && memcmp(p, key, klen) == 0) {
			s = p + klen;
			for (n = 0; s + n < le && ((s[n] >= '0' && s[n] <= '9')
			    || s[n] == '.'); n++)
				;
			while (n > 0 && s[n - 1] == '.')
				n--;
			if (n == 0 || s[0] < '0' || s[0] > '9' || n >= vlen ||
			    memchr(s, '.', n) == NULL)
				return -1;
			memcpy(ver, s, n);
			ver[n] = '\0';
			return 0;
		}
		p = nl ? nl + 1 : end;
	}
	return -1;
}

/* ------------------------------------------------------------------ */
/* sysctls: read from /proc/sys, or from a mock directory in tests */

static int
read_small(const char *path, char *buf, size_t len)
{
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) == -1)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static int
sysctl_str(struct pf *p, const char *name, char *buf, size_t len)
{
	char	 path[PATH_MAX];
	size_t	 i, n;

	n = (size_t)snprintf(path, sizeof(path), "%s/", p->o->sysctl_dir);
	if (n + strlen(name) >= sizeof(path))
		return -1;
	for (i = 0; name[i]; i++)
		path[n + i] = name[i] == '.' ? '/' : name[i];
	path[n + i] = '\0';
	return read_small(path, buf, len);
}

/* 1: *v read; 0: the setting does not exist; -1: unreadable or not an
 * integer. */
static int
sysctl_int(struct pf *p, const char *name, long long *v)
{
	char	 buf[64], *end;

	if (sysctl_str(p, name, buf, sizeof(buf)) == -1)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	errno = 0;
	*v = strtoll(buf, &end, 10);
	if (errno || end == buf)
		return -1;
	while (*end == ' ' || *end == '\t')
		end++;
	return *end == '\0' ? 1 : -1;
}

/* ------------------------------------------------------------------ */
/* host */

static int
detect_container(void)
{
	char	 buf[8192];
	int	 fd;
	ssize_t	 n;

	if (access("/.dockerenv", F_OK) == 0 ||
	    access("/run/.containerenv", F_OK) == 0 ||
	    access("/run/systemd/container", F_OK) == 0)
		return 1;
	if ((fd = open("/proc/1/cgroup", O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr(buf, "docker") || strstr(buf, "/lxc") ||
			    strstr(buf, "kubepods") || strstr(buf, "libpod") ||
			    strstr(buf, "containerd"))
				return 1;
		}
	}
	/* Readable by root only; a missing answer proves nothing. */
	if ((fd = open("/proc/1/environ", O_RDONLY | O_CLOEXEC)) >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			ssize_t i;
			buf[n] = '\0';
			for (i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
				if (strncmp(buf + i, "container=", 10) == 0)
					return 1;
		}
	}
	return 0;
}

static json_t *
distribution(void)
{
	char	 buf[8192], *l, *v, *e;
	int	 fd;
	ssize_t	 n;

	if ((fd = open("/etc/os-release", O_RDONLY | O_CLOEXEC)) == -1 &&
	    (fd = open("/usr/lib/os-release", O_RDONLY | O_CLOEXEC)) == -1)
		return json_null();
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return json_null();
	buf[n] = '\0';
	for (l = buf; l != NULL && *l; l = e ? e + 1 : NULL) {
		e = strchr(l, '\n');
		if (e)
			*e = '\0';
		if (strncmp(l, "PRETTY_NAME=", 12) != 0)
			continue;
		v = l + 12;
		if (*v == '"' || *v == '\'') {
			char q = *v++;
			char *z = strrchr(v, q);
			if (z)
				*z = '\0';
		}
		return jstr(v);
	}
	return json_null();
}

static const struct sysdef {
	const char	*name;
	const char	*code;
	int		 less;		/* bad when value < bad, else == bad */
	long long	 bad;
	const char	*title;
	const char	*why;
	const char	*repair;
	/* Why the setting does not weaken what sbx guarantees inside its
	 * sandboxes; such a finding is info once the live probe has proved
	 * the filter and namespaces hold, and a warning otherwise. */
	const char	*cover;
} sysdefs[] = {
	{ "dev.tty.legacy_tiocsti", "tiocsti_enabled", 0, 1,
	    "TIOCSTI can push input into a terminal",
	    "dev.tty.legacy_tiocsti is 1: a process can inject keystrokes "
	    "into a terminal it shares (sbx uses --new-session and seccomp, "
	    "but other tools on this host may not)",
	    "sysctl -w dev.tty.legacy_tiocsti=0 (persist it in "
	    "/etc/sysctl.d/)",
	    "every sandbox runs in a session of its own and the seccomp filter denies the TIOCSTI ioctl" },
	{ "kernel.unprivileged_bpf_disabled", "unprivileged_bpf_enabled", 0,
	    0, "unprivileged users may load BPF programs",
	    "kernel.unprivileged_bpf_disabled is 0: the bpf() system call, a "
	    "frequent source of kernel exploits, is open to every user",
	    "sysctl -w kernel.unprivileged_bpf_disabled=2 (persist it in "
	    "/etc/sysctl.d/)",
	    "the seccomp filter denies bpf() in every sandbox" },
	{ "vm.unprivileged_userfaultfd", "unprivileged_userfaultfd_enabled", 0,
	    1, "unprivileged users may use userfaultfd",
	    "vm.unprivileged_userfaultfd is 1: userfaultfd makes kernel race "
	    "conditions easy to win",
	    "sysctl -w vm.unprivileged_userfaultfd=0 (persist it in "
	    "/etc/sysctl.d/)",
	    "the seccomp filter denies userfaultfd() in every sandbox" },
	{ "kernel.perf_event_paranoid", "perf_events_unrestricted", 1, 2,
	    "unprivileged users may use perf events",
	    "kernel.perf_event_paranoid is below 2: perf_event_open() exposes "
	    "kernel profiling and a large attack surface to every user",
	    "sysctl -w kernel.perf_event_paranoid=2 (or 3; persist it in "
	    "/etc/sysctl.d/)",
	    "the seccomp filter denies perf_event_open() in every sandbox" },
	{ "fs.protected_symlinks", "protected_symlinks_disabled", 0, 0,
	    "symlinks in sticky directories are followed across owners",
	    "fs.protected_symlinks is 0: a symlink planted in /tmp can "
	    "redirect another user's writes",
	    "sysctl -w fs.protected_symlinks=1 (persist it in "
	    "/etc/sysctl.d/)",
	    "sandboxes have a private /tmp, and sbx opens every path under its state root beneath a directory descriptor without following symbolic links" },
	{ "fs.protected_hardlinks", "protected_hardlinks_disabled", 0, 0,
	    "hard links to other users' files are allowed",
	    "fs.protected_hardlinks is 0: a user can hard-link files they do "
	    "not own, e.g. setuid binaries",
	    "sysctl -w fs.protected_hardlinks=1 (persist it in "
	    "/etc/sysctl.d/)",
	    "a sandbox sees other files only through read-only bind mounts, and link() across mounts fails (EXDEV)" },
	{ "kernel.yama.ptrace_scope", "ptrace_unrestricted", 0, 0,
	    "any process may ptrace the user's other processes",
	    "kernel.yama.ptrace_scope is 0: a process can attach to every "
	    "other process of its user",
	    "sysctl -w kernel.yama.ptrace_scope=1 (persist it in "
	    "/etc/sysctl.d/)",
	    "every sandbox has its own pid namespace and the seccomp filter denies ptrace()" },
};

static void
check_host(struct pf *p)
{
	struct utsname	 u;
	char		 rel[256];
	const char	*id;
	long long	 v;
	unsigned long	 maj = 0, min = 0;
	char		*e;
	size_t		 i;
	int		 r;

	memset(&u, 0, sizeof(u));
	(void)uname(&u);
	/* The release comes from the sysctl directory too, so that tests can
	 * pretend to be an old kernel. */
	if (sysctl_str(p, "kernel.osrelease", rel, sizeof(rel)) == -1)
		snprintf(rel, sizeof(rel), "%s", u.release);
	p->in_container = detect_container();
	jset(p, p->host, "kernel", jstr(rel));
	jset(p, p->host, "arch", jstr(u.machine));
	jset(p, p->host, "distribution", distribution());
	jset(p, p->host, "in_container", json_boolean(p->in_container));

	errno = 0;
	maj = strtoul(rel, &e, 10);
	if (e != rel && *e == '.')
		min = strtoul(e + 1, NULL, 10);
	if (e == rel || *e != '.') {
		finding(p, A_HOST, "host.kernel", "kernel_version_unknown",
		    S_WARNING, T_UNPROVEN, "the kernel version is unknown",
		    pf_fmt(p, "cannot read a version from `%s`", rel),
		    "check `uname -r`; sbx needs Linux 4.8 or later", NULL,
		    NULL);
	} else if (maj < 4 || (maj == 4 && min < 8)) {
		finding(p, A_HOST, "host.kernel", "kernel_too_old", S_BLOCKED,
		    T_FAILED, pf_fmt(p, "Linux %s is older than 4.8", rel),
		    "before 4.8 a ptrace()d process can bypass seccomp "
		    "(CVE-2017-5206): the sandbox's system call filter would "
		    "not hold", "upgrade the kernel to 4.8 or later", NULL,
		    NULL);
	} else {
		finding(p, A_HOST, "host.kernel", "kernel_ok", S_OK, T_PASSED,
		    pf_fmt(p, "Linux %s", rel), pf_fmt(p, "%s, %s%s", rel,
		    u.machine, p->in_container ? ", in a container" : ""),
		    NULL, NULL, NULL);
	}

	for (i = 0; i < sizeof(sysdefs) / sizeof(*sysdefs); i++) {
		const struct sysdef *d = &sysdefs[i];

		id = pf_fmt(p, "host.%s", d->name);
		r = sysctl_int(p, d->name, &v);
		if (r == 0) {
			finding(p, A_HOST, id, "host_setting_unavailable",
			    S_INFO, T_MISSING, pf_fmt(p, "%s does not exist "
			    "on this kernel", d->name), pf_fmt(p, "%s is "
			    "absent under %s (an older kernel, or the module "
			    "is not loaded): the setting cannot be checked",
			    d->name, p->o->sysctl_dir), "", NULL, NULL);
		} else if (r == -1) {
			finding(p, A_HOST, id, "host_setting_unavailable",
			    S_INFO, T_UNPROVEN, pf_fmt(p, "%s cannot be read",
			    d->name), pf_fmt(p, "%s under %s is unreadable or "
			    "not a number", d->name, p->o->sysctl_dir), "",
			    NULL, NULL);
		} else if (d->less ? v < d->bad : v == d->bad) {
			finding(p, A_HOST, id, d->code, S_WARNING, T_FAILED,
			    d->title, d->why, d->repair, NULL, NULL);
			if (d->cover != NULL && p->ncovered <
			    sizeof(p->covered) / sizeof(p->covered[0])) {
				p->covered[p->ncovered] = json_array_get(
				    p->f[A_HOST], json_array_size(
				    p->f[A_HOST]) - 1);
				p->cover_why[p->ncovered++] = d->cover;
			}
		} else {
			finding(p, A_HOST, id, "host_setting_ok", S_OK,
			    T_PASSED, pf_fmt(p, "%s = %lld", d->name, v), "",
			    "", NULL, NULL);
		}
	}
	/*
	 * RS-10: inotify instances are counted per uid up the user
	 * namespace chain, and every sandbox of one uid shares the budget;
	 * sbx cannot cap it per sandbox.  Said, not hidden.
	 */
	if (sysctl_int(p, "fs.inotify.max_user_instances", &v) == 1)
		finding(p, A_HOST, "host.shared_inotify",
		    "shared_limit_unenforced", S_INFO, T_FAILED,
		    "inotify instances are shared by every sandbox of a uid",
		    pf_fmt(p, "fs.inotify.max_user_instances = %lld is a "
		    "per-uid budget: one sandbox can use it up for the others "
		    "and for the host processes of the same uid", v),
		    "run agents under different uids (run_as), or raise "
		    "fs.inotify.max_user_instances", NULL, NULL);
}

/* ------------------------------------------------------------------ */
/* ownership of programs (IP-05): owned by root, written by nobody else,
 * in directories only root can change (sticky ones like /tmp aside).
 * Returns 0 (secure), 1 (a user owns the program or a directory above it:
 * code running as that user, in a sandbox, could replace it) or 2 (group
 * or others can write it, or it cannot be resolved); why says the worst. */

static int
sec_level(const struct stat *st, int dir)
{
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(dir && (st->st_mode & S_ISVTX) && st->st_uid == 0))
		return 2;
	return st->st_uid != 0;
}

static int
path_secure(const char *path, char *why, size_t len)
{
	char		 real[PATH_MAX], *s;
	struct stat	 st;
	int		 worst, lv;

	if (realpath(path, real) == NULL || stat(real, &st) == -1) {
		snprintf(why, len, "%s: %s", path, strerror(errno));
		return 2;
	}
	worst = sec_level(&st, 0);
	if (worst)
		snprintf(why, len, "%s is owned by uid %u with mode %04o", real,
		    (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
	while ((s = strrchr(real, '/')) != NULL) {
		s[s == real ? 1 : 0] = '\0';
		if (stat(real, &st) == -1) {
			snprintf(why, len, "%s: %s", real, strerror(errno));
			return 2;
		}
		if ((lv = sec_level(&st, 1)) > worst) {
			worst = lv;
			snprintf(why, len, "directory %s is owned by uid %u "
			    "with mode %04o", real, (unsigned)st.st_uid,
			    (unsigned)(st.st_mode & 07777));
		}
		if (s == real)
			break;
	}
	return worst;
}

static void
check_install(struct pf *p)
{
	char		 self[PATH_MAX], why[PATH_MAX + 128];
	const char	*progs[4], *missing = NULL, *bad = NULL;
	ssize_t		 n;
	size_t		 np = 0, i;
	int		 lv, worst = 0;

	progs[np++] = pf_fmt(p, "%s/sbx-exec", p->o->exec_dir);
	progs[np++] = pf_fmt(p, "%s/sbx-init", p->o->exec_dir);
	if ((n = readlink("/proc/self/exe", self, sizeof(self) - 1)) > 0) {
		self[n] = '\0';
		progs[np++] = pf_fmt(p, "%s", self);
	}
	if (p->o->front_end != NULL && access(p->o->front_end, F_OK) == 0)
		progs[np++] = p->o->front_end;
	for (i = 0; i < 2; i++)
		if (access(progs[i], X_OK) == -1 && missing == NULL)
			missing = progs[i];
	for (i = 0; i < np; i++)
		if (progs[i] != missing && (lv = path_secure(progs[i], why,
		    sizeof(why))) > worst) {
			worst = lv;
			bad = pf_fmt(p, "%s", why);
		}
	if (missing != NULL) {
		finding(p, A_INSTALL, "installation.programs",
		    "install_incomplete", S_BLOCKED, T_MISSING,
		    "a program of sbx is missing", pf_fmt(p, "%s is missing "
		    "or not executable", missing), "reinstall sbx (make "
		    "install), or set SBX_EXEC_PATH to the directory holding "
		    "sbx-exec and sbx-init", NULL, missing);
	}
	if (bad != NULL) {
		/* Writable by others: anyone may replace them. Owned by
		 * a user: that user's sandboxed code may. */
		finding(p, A_INSTALL, "installation.ownership",
		    "install_insecure", worst == 2 ? S_BLOCKED : S_WARNING,
		    T_FAILED, "sbx's programs can be replaced by a user",
		    pf_fmt(p, "%s: code in a sandbox runs as a user who could "
		    "then rewrite the programs that set sandboxes up", bad),
		    "install sbx as root into a root-owned prefix (sudo make "
		    "install PREFIX=/usr/local), not under a user-owned "
		    "directory such as ~/.local", NULL, NULL);
	} else {
		finding(p, A_INSTALL, "installation.ownership", "install_ok",
		    S_OK, T_PASSED, "sbx's programs are owned by root",
		    pf_fmt(p, "%s and its programs are owned by root and "
		    "writable by nobody else", p->o->exec_dir), "", NULL,
		    NULL);
	}
}

/* ------------------------------------------------------------------ */
/* dependencies */

static const struct depdef {
	const char	*name;
	const char	*bin;
	const char	*env;
	const char	*minimum;
	const char	*vflag;
	int		 required;	/* missing: blocked, else warning */
	const char	*use;
} depdefs[] = {
	{ "bubblewrap", "bwrap", "SBX_BWRAP", SBX_PREFLIGHT_BWRAP_MIN,
	    "--version", 1, "builds every sandbox" },
	{ "socat", "socat", NULL, NULL, "-V", 0,
	    "relays the egress proxy into proxy-mode sandboxes" },
	{ "ripgrep", "rg", NULL, NULL, "--version", 0,
	    "searches files for the file tools" },
};
#define NDEP	((int)(sizeof(depdefs) / sizeof(depdefs[0])))

static void
find_deps(struct pf *p)
{
	int	 i;

	for (i = 0; i < NDEP; i++)
		if (sbx_tools_find(depdefs[i].bin, depdefs[i].env,
		    &p->tool_path[i], &p->tool_err[i]) == -1)
			p->tool_path[i] = NULL;
}

static void
spawn_versions(struct pf *p)
{
	char	*envp[] = { NULL };
	int	 i;

	for (i = 0; i < NDEP; i++) {
		char *argv[] = { (char *)depdefs[i].bin,
		    (char *)depdefs[i].vflag, NULL };

		p->ver[i].pid = -1;
		p->ver[i].fd = -1;
		if (p->tool_path[i] == NULL)
			continue;
		/* An empty environment: nothing of ours steers the tool. */
		if (child_spawn(&p->ver[i], p->tool_path[i], argv, envp, 1,
		    VERSION_OUT_MAX) == -1) {
			p->ver[i].pid = -1;
			p->ver[i].fd = -1;
		}
	}
}

static void
check_deps(struct pf *p, long long deadline)
{
	struct sbx_error	 e;
	const struct depdef	*d;
	const char		*id, *path, *status, *sev;
	char			 ver[64], why[PATH_MAX + 128];
	struct stat		 st;
	json_t			*j;
	int			 i, have_ver, setuid_root, lv;

	for (i = 0; i < NDEP; i++) {
		d = &depdefs[i];
		id = pf_fmt(p, "dependency.%s", d->name);
		path = p->tool_path[i];
		have_ver = 0;
		setuid_root = 0;
		sev = d->required ? S_BLOCKED : S_WARNING;
		if (path == NULL) {
			e = p->tool_err[i];
			status = T_MISSING;
			finding(p, A_DEP, id, e.reason && strcmp(e.reason,
			    "tool_untrusted") == 0 ? "dependency_untrusted" :
			    "dependency_missing", sev, e.reason &&
			    strcmp(e.reason, "tool_untrusted") == 0 ? T_FAILED :
			    T_MISSING, pf_fmt(p, "%s is not available", d->name),
			    pf_fmt(p, "%s (sbx uses it: it %s)", e.message,
			    d->use), e.hint, NULL, NULL);
			if (e.reason && strcmp(e.reason, "tool_untrusted") == 0)
				status = T_FAILED;
			goto entry;
		}
		if (p->ver[i].pid > 0 || p->ver[i].fd >= 0)
			child_collect(&p->ver[i], deadline);
		if (p->ver[i].out.p != NULL && sbx_preflight_version_of(d->bin,
		    p->ver[i].out.p, p->ver[i].out.len, ver, sizeof(ver)) == 0)
			have_ver = 1;
		if (stat(path, &st) == 0 && st.st_uid == 0 &&
		    (st.st_mode & S_ISUID))
			setuid_root = 1;
		if (d->minimum && have_ver && sbx_preflight_version_cmp(ver,
		    d->minimum) < 0) {
			status = T_FAILED;
			finding(p, A_DEP, id, "dependency_too_old", S_BLOCKED,
			    T_FAILED, pf_fmt(p, "%s %s is older than %s",
			    d->name, ver, d->minimum), setuid_root ?
			    pf_fmt(p, "%s is setuid root, and setuid bubblewrap "
			    "before 0.4.1 lets a user gain root "
			    "(CVE-2020-5291)", path) : pf_fmt(p, "sbx needs "
			    "%s %s or later", d->name, d->minimum),
			    pf_fmt(p, "install %s %s or later (Debian: apt-get "
			    "install %s)", d->name, d->minimum, d->name), NULL,
			    path);
		} else if ((lv = path_secure(path, why, sizeof(why))) != 0) {
			status = T_FAILED;
			finding(p, A_DEP, id, "dependency_untrusted", lv == 2 &&
			    d->required ? S_BLOCKED : S_WARNING, T_FAILED, pf_fmt(p, "%s can be replaced by a user",
			    d->name), pf_fmt(p, "%s: whoever can rewrite it "
			    "runs code outside every sandbox", why),
			    pf_fmt(p, "use a root-owned %s from the system "
			    "packages%s", d->name, d->env ? pf_fmt(p, " (unset "
			    "%s)", d->env) : ""), NULL, path);
		} else if (!have_ver) {
			status = T_UNPROVEN;
			finding(p, A_DEP, id, "dependency_version_unknown",
			    d->minimum ? S_WARNING : S_INFO, T_UNPROVEN,
			    pf_fmt(p, "the version of %s is unknown", d->name),
			    pf_fmt(p, "`%s %s` printed no version%s", path,
			    d->vflag, p->ver[i].timed_out ? " (timed out)" :
			    ""), d->minimum ? pf_fmt(p, "make sure %s is %s "
			    "or later", d->name, d->minimum) : "", NULL, path);
		} else {
			status = T_PASSED;
			finding(p, A_DEP, id, "dependency_ok", S_OK, T_PASSED,
			    pf_fmt(p, "%s %s", d->name, ver), pf_fmt(p,
			    "%s%s; it %s", path, setuid_root ? " (setuid root)" :
			    "", d->use), "", NULL, path);
		}
		/* Setuid bubblewrap: its set-up runs as root, so its own
		 * bugs are privilege escalations (IP-08). */
		if (setuid_root && have_ver &&
		    sbx_preflight_version_cmp(ver, "0.11.0") >= 0 &&
		    sbx_preflight_version_cmp(ver, "0.11.1") <= 0)
			finding(p, A_DEP, "dependency.bubblewrap.setuid",
			    "bwrap_setuid_vulnerable", S_WARNING, T_FAILED,
			    pf_fmt(p, "setuid bubblewrap %s is vulnerable", ver),
			    "bubblewrap 0.11.0 and 0.11.1 installed setuid let a "
			    "user ptrace the privileged set-up (CVE-2026-41163)",
			    "upgrade bubblewrap to 0.11.2 or later, or remove "
			    "the setuid bit (chmod u-s) where unprivileged user "
			    "namespaces are available", NULL, path);
		else if (setuid_root && i == 0)
			finding(p, A_DEP, "dependency.bubblewrap.setuid",
			    "bwrap_setuid", S_INFO, T_PASSED,
			    "bubblewrap is installed setuid root",
			    "its set-up runs with root privileges: keep it up "
			    "to date (security fixes matter more for setuid "
			    "installs)", "", NULL, path);
entry:
		j = json_object();
		if (j == NULL) {
			p->oom = 1;
			continue;
		}
		jset(p, j, "name", jstr(d->name));
		jset(p, j, "path", jstr(path));
		jset(p, j, "version", have_ver ? jstr(ver) : json_null());
		jset(p, j, "minimum", jstr(d->minimum));
		jset(p, j, "status", jstr(status));
		jset(p, j, "setuid", json_boolean(setuid_root));
		jpush(p, p->deps, j);
	}
}

/* ------------------------------------------------------------------ */
/* the state root */

static const char *
loc_name(struct pf *p, int i)
{
	return i == LOC_ROOT ? "the state root" : pf_fmt(p, "%s%s",
	    p->ls[i].rel, locdefs(i)->type == SBX_LT_DIR ? "/" : "");
}

static enum area
loc_area(int i)
{
	return locdefs(i)->flags & SBX_LF_DAEMON ? A_DAEMON : A_STATE;
}

static const char *
loc_finding_id(struct pf *p, int i)
{
	if (i == LOC_PROXY)
		return "daemon.proxy";
	if (i == LOC_BRIDGE)
		return "daemon.bridge";
	return pf_fmt(p, "state_root.%s", locdefs(i)->name);
}

static mode_t
want_mode(struct pf *p, int i)
{
	return sbx_layout_mode((enum sbx_layout_id)i, p->as_root);
}

/* Is the open directory writable?  A nameless O_TMPFILE proves it and
 * leaves nothing behind; where the file system lacks it, a named temp file
 * is created exclusively (never through a symlink) and removed at once. */
static int
dir_writable(int fd, int *err)
{
	char	 name[64];
	int	 t, i;

	t = openat(fd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	if (t >= 0) {
		close(t);
		return 1;
	}
	*err = errno;
	if (errno == EACCES || errno == EPERM || errno == EROFS ||
	    errno == ENOSPC || errno == EDQUOT)
		return 0;
	for (i = 0; i < 16; i++) {
		snprintf(name, sizeof(name), ".sbx-preflight.%ld.%d",
		    (long)getpid(), i);
		t = openat(fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (t >= 0) {
			close(t);
			(void)unlinkat(fd, name, 0);
			return 1;
		}
		*err = errno;
		if (errno != EEXIST)
			return 0;
	}
	return 0;
}

static const char *
type_name(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISREG(m))
		return "a regular file";
	if (S_ISLNK(m))
		return "a symbolic link";
	if (S_ISSOCK(m))
		return "a socket";
	if (S_ISFIFO(m))
		return "a FIFO";
	return "a device or special file";
}

static void
location_json(struct pf *p, int i, int have_w, int writable,
    const struct statvfs *vfs, const char *repair)
{
	static const char *const kinds[] = { "directory", "file", "socket" };
	struct lstate	*s = &p->ls[i];
	json_t		*j = json_object();

	if (j == NULL) {
		p->oom = 1;
		return;
	}
	jset(p, j, "id", jstr(locdefs(i)->name));
	jset(p, j, "path", jstr(s->path));
	jset(p, j, "kind", jstr(kinds[locdefs(i)->type]));
	jset(p, j, "status", jstr(s->status));
	jset(p, j, "exists", json_boolean(s->exists));
	if (have_w)
		jset(p, j, "writable", json_boolean(writable));
	if (vfs != NULL) {
		jset(p, j, "volume_free_bytes", json_integer((json_int_t)
		    ((unsigned long long)vfs->f_bavail * vfs->f_frsize)));
		jset(p, j, "volume_total_bytes", json_integer((json_int_t)
		    ((unsigned long long)vfs->f_blocks * vfs->f_frsize)));
	}
	if (repair != NULL && strcmp(s->status, "ready") != 0)
		jset(p, j, "repair_suggestion", jstr(repair));
	jpush(p, p->locs, j);
}

/* Is the program of daemon location i installed next to us? */
static int
daemon_installed(struct pf *p, int i)
{
	const char	*prog = i == LOC_PROXY ? "sbx-proxy" : "sbx-bridge";

	if (p->o->exec_dir == NULL)
		return 1;
	return access(pf_fmt(p, "%s/%s", p->o->exec_dir, prog), X_OK) == 0;
}

static void
check_location(struct pf *p, int i)
{
	const struct sbx_layout_entry *d = locdefs(i);
	struct lstate		*s = &p->ls[i];
	struct statvfs		 vfs, *vp = NULL;
	const char		*name, *id = loc_finding_id(p, i);
	const char		*title = NULL, *detail = NULL, *repair = NULL;
	const char		*code = NULL, *sev = NULL, *fstatus = NULL;
	char			 target[PATH_MAX];
	mode_t			 mode;
	ssize_t			 n;
	int			 pfd, fd, have_w = 0, writable = 0, err = 0;

	s->fd = -1;
	s->status = "ready";
	if (i == LOC_ROOT) {
		s->rel = strdup("");
		s->path = strdup(p->o->root_path);
	} else {
		char rel[SBX_LAYOUT_PATH_MAX];

		/* sbx-preflight validated the agent's name. */
		s->rel = sbx_layout_path((enum sbx_layout_id)i, p->o->agent,
		    rel, sizeof(rel), NULL) == 0 ? strdup(rel) : NULL;
		if (s->rel == NULL || asprintf(&s->path, "%s/%s",
		    p->o->root_path, s->rel) == -1)
			s->path = NULL;
	}
	if (s->rel == NULL || s->path == NULL) {
		p->oom = 1;
		return;
	}
	name = d->parent < 0 ? s->path : strrchr(s->rel, '/') ?
	    strrchr(s->rel, '/') + 1 : s->rel;
	pfd = d->parent < 0 ? AT_FDCWD : p->ls[d->parent].fd;

	/* Beneath a parent we could not look into, nothing is known; the
	 * parent's finding says what to do. */
	if (d->parent >= 0 && !p->ls[d->parent].usable) {
		s->status = p->ls[d->parent].exists ? "unproven" : "missing";
		location_json(p, i, 0, 0, NULL, p->ls[d->parent].exists ?
		    pf_fmt(p, "repair %s first", loc_name(p, d->parent)) :
		    p->provision);
		return;
	}
	if (fstatat(pfd, name, &s->st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno == ENOENT) {
			s->status = "missing";
			if (d->flags & SBX_LF_OPTIONAL) {
				location_json(p, i, 0, 0, NULL, NULL);
				return;
			}
			if (d->flags & SBX_LF_DAEMON) {
				/* A daemon this installation does not have
				 * (no sbx-bridge yet) is not reported. */
				if (!daemon_installed(p, i))
					return;
				location_json(p, i, 0, 0, NULL, NULL);
				finding(p, A_DAEMON, id, "daemon_not_running",
				    S_INFO, T_MISSING, pf_fmt(p, "%s is not "
				    "running", i == LOC_PROXY ? "sbx-proxy" :
				    "sbx-bridge"), pf_fmt(p, "no socket at %s; "
				    "sbx starts the daemon on demand", s->rel),
				    "", d->name, s->path);
				return;
			}
			title = pf_fmt(p, "%s does not exist", loc_name(p, i));
			detail = i == LOC_ROOT ? "nothing was provisioned yet" :
			    pf_fmt(p, "%s is part of the state root's layout",
			    s->rel);
			location_json(p, i, 0, 0, NULL, p->provision);
			finding(p, loc_area(i), id, "location_missing",
			    S_WARNING, T_MISSING, title, detail, p->provision,
			    d->name, s->path);
			return;
		}
		if (errno == ENOTDIR) {
			s->status = "wrong_type";
			repair = pf_fmt(p, "use a state root whose parent "
			    "directories exist (--home DIR)");
			location_json(p, i, 0, 0, NULL, repair);
			finding(p, loc_area(i), id, "location_wrong_type",
			    S_BLOCKED, T_FAILED, pf_fmt(p, "%s cannot be a "
			    "directory", loc_name(p, i)), "a component of "
			    "its path is not a directory", repair, d->name,
			    s->path);
			return;
		}
		s->status = "not_readable";
		s->exists = 0;
		repair = pf_fmt(p, "make the directories leading to %s "
		    "searchable by uid %u", s->path, (unsigned)geteuid());
		location_json(p, i, 0, 0, NULL, repair);
		finding(p, loc_area(i), id, "location_not_readable", S_BLOCKED,
		    T_FAILED, pf_fmt(p, "%s cannot be looked at",
		    loc_name(p, i)), pf_fmt(p, "lstat: %s", strerror(errno)),
		    repair, d->name, s->path);
		return;
	}
	s->exists = 1;
	mode = s->st.st_mode;

	/* A symlink is never followed: planted in the root it could send
	 * sbx's writes anywhere the user can write. */
	if (S_ISLNK(mode) || (d->type == SBX_LT_DIR && !S_ISDIR(mode)) ||
	    (d->type == SBX_LT_FILE && !S_ISREG(mode)) ||
	    (d->type == SBX_LT_SOCK && !S_ISSOCK(mode))) {
		s->status = "wrong_type";
		if (S_ISLNK(mode) && (n = readlinkat(pfd, name, target,
		    sizeof(target) - 1)) >= 0) {
			target[n] = '\0';
			detail = pf_fmt(p, "it is a symbolic link to %s; sbx "
			    "never follows symbolic links in the state root",
			    target);
		} else
			detail = pf_fmt(p, "it is %s, not %s", type_name(mode),
			    d->type == SBX_LT_DIR      ? "a directory" :
				d->type == SBX_LT_FILE ? "a regular file" :
							 "a socket");
		repair = d->type == SBX_LT_SOCK ?
		    pf_fmt(p,
			"remove %s; the "
			"daemon creates it",
			s->path) :
		    i == LOC_ROOT ?
		    pf_fmt(p,
			"move %s out of the way (or choose another "
			"--home), then run `sbx provision`",
			s->path) :
		    pf_fmt(p, "move %s out of the way, then run `%s`", s->path,
			p->provision);
		location_json(p, i, 0, 0, NULL, repair);
		finding(p, loc_area(i), id, "location_wrong_type",
		    d->type == SBX_LT_SOCK ? S_WARNING : S_BLOCKED, T_FAILED,
		    pf_fmt(p, "%s is %s", loc_name(p, i), type_name(mode)),
		    detail, repair, d->name, s->path);
		return;
	}

	if (d->type == SBX_LT_DIR) {
		fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd >= 0 && (fstat(fd, &s->st) == -1 ||
		    faccessat(fd, ".", R_OK | X_OK, AT_EACCESS) == -1)) {
			err = errno;
			close(fd);
			fd = -1;
			errno = err;
		}
		if (fd == -1) {
			err = errno;
			s->status = err == ELOOP || err == ENOTDIR ?
			    "wrong_type" : "not_readable";
			repair = pf_fmt(p, "chmod u+rwx %s", s->path);
			location_json(p, i, 0, 0, NULL, repair);
			finding(p, loc_area(i), id, err == ELOOP ||
			    err == ENOTDIR ? "location_wrong_type" :
			    "location_not_readable", S_BLOCKED, T_FAILED,
			    pf_fmt(p, "%s cannot be read", loc_name(p, i)),
			    pf_fmt(p, "%s", strerror(err)), repair, d->name,
			    s->path);
			return;
		}
		s->fd = fd;
		s->usable = 1;
		mode = s->st.st_mode;
		have_w = 1;
		writable = dir_writable(fd, &err);
		if (fstatvfs(fd, &vfs) == 0)
			vp = &vfs;
	} else if (d->type == SBX_LT_FILE) {
		fd = openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
		if (fd == -1) {
			err = errno;
			s->status = "not_readable";
			repair = pf_fmt(p, "chmod u+r %s", s->path);
			location_json(p, i, 0, 0, NULL, repair);
			finding(p, loc_area(i), id, "location_not_readable",
			    S_BLOCKED, T_FAILED, pf_fmt(p, "%s cannot be read",
			    loc_name(p, i)), pf_fmt(p, "%s", strerror(err)),
			    repair, d->name, s->path);
			return;
		}
		(void)fstat(fd, &s->st);
		close(fd);
		mode = s->st.st_mode;
	}

	/* What sbx_root_open refuses, preflight reports first. */
	if (i == LOC_ROOT && s->st.st_uid != geteuid()) {
		s->status = "insecure_mode";
		code = "location_wrong_owner";
		sev = S_BLOCKED;
		title = pf_fmt(p, "%s belongs to uid %u", loc_name(p, i),
		    (unsigned)s->st.st_uid);
		detail = pf_fmt(p, "sbx only uses a state root owned by the "
		    "user running it (uid %u)", (unsigned)geteuid());
		repair = "use a state root you own (--home DIR)";
	} else if (mode & d->no_write) {
		s->status = "insecure_mode";
		code = "location_insecure_mode";
		sev = S_BLOCKED;
		title = pf_fmt(p, "%s has mode %04o", loc_name(p, i),
		    (unsigned)(mode & 07777));
		detail = pf_fmt(p, "group or others can write to it: they "
		    "could plant %s", i == LOC_RUN || d->parent == LOC_RUN ?
		    "sockets or tokens" : "files or symbolic links");
		repair = pf_fmt(p, "chmod %o %s", (unsigned)want_mode(p, i),
		    s->path);
	} else if (d->type == SBX_LT_DIR && !writable) {
		s->status = "not_writable";
		code = "location_not_writable";
		sev = S_BLOCKED;
		title = pf_fmt(p, "%s is not writable", loc_name(p, i));
		detail = pf_fmt(p, "creating a file in it failed: %s",
		    strerror(err));
		repair = err == EROFS ? "use a state root on a writable file "
		    "system (--home DIR)" : err == ENOSPC || err == EDQUOT ?
		    pf_fmt(p, "free space on the volume of %s", s->path) :
		    pf_fmt(p, "chmod u+w %s (or use a state root you can "
		    "write: --home DIR)", s->path);
	} else if ((d->flags & SBX_LF_NONEMPTY) && s->st.st_size == 0) {
		s->status = "empty_file";
		code = "location_empty_file";
		sev = S_WARNING;
		title = pf_fmt(p, "%s is empty", loc_name(p, i));
		detail = "the agent's token is missing its value";
		repair = pf_fmt(p, "remove %s, then run `%s`", s->path,
		    p->provision);
	} else if (mode & d->no_read) {
		s->status = "insecure_mode";
		code = "location_insecure_mode";
		sev = S_WARNING;
		title = pf_fmt(p, "%s has mode %04o", loc_name(p, i),
		    (unsigned)(mode & 07777));
		detail = "group or others can read it";
		repair = pf_fmt(p, "chmod %o %s", (unsigned)want_mode(p, i),
		    s->path);
	}
	location_json(p, i, have_w, writable, vp, repair);
	if (code != NULL) {
		fstatus = T_FAILED;
		finding(p, loc_area(i), id, code, sev, fstatus, title, detail,
		    repair, d->name, s->path);
	} else if (d->flags & SBX_LF_DAEMON) {
		finding(p, A_DAEMON, id, "daemon_socket_present", S_OK,
		    T_PASSED, pf_fmt(p, "%s has a socket", i == LOC_PROXY ?
		    "sbx-proxy" : "sbx-bridge"), "", "", d->name, s->path);
	} else {
		finding(p, loc_area(i), id, "location_ready", S_OK, T_PASSED,
		    pf_fmt(p, "%s is ready", loc_name(p, i)), "", "", d->name,
		    s->path);
	}
}

/* Free space on the volume of the root (or, before it exists, of the
 * directory it will be made in), and of any directory of the layout that
 * lives on another volume. */
static void
check_space(struct pf *p)
{
	struct statvfs		 v;
	char			 dir[PATH_MAX], *s;
	dev_t			 seen[NLOC];
	unsigned long long	 freeb, total;
	const char		*where;
	int			 nseen = 0, i, k, ok;

	for (i = 0; i < NLOC; i++) {
		if (i == LOC_ROOT && !p->ls[i].usable) {
			snprintf(dir, sizeof(dir), "%s", p->o->root_path);
			ok = 0;
			while ((s = strrchr(dir, '/')) != NULL) {
				s[s == dir ? 1 : 0] = '\0';
				if (statvfs(dir, &v) == 0) {
					ok = 1;
					break;
				}
				if (s == dir)
					break;
			}
			if (!ok)
				continue;
			where = pf_fmt(p, "%s", dir);
		} else if (p->ls[i].usable) {
			for (k = 0; k < nseen; k++)
				if (seen[k] == p->ls[i].st.st_dev)
					break;
			if (k < nseen || fstatvfs(p->ls[i].fd, &v) == -1)
				continue;
			seen[nseen++] = p->ls[i].st.st_dev;
			where = p->ls[i].path;
		} else
			continue;
		freeb = (unsigned long long)v.f_bavail * v.f_frsize;
		total = (unsigned long long)v.f_blocks * v.f_frsize;
		if (freeb < p->min_free)
			finding(p, A_STATE,
			    i == LOC_ROOT ?
				"state_root.free_space" :
				pf_fmt(p, "state_root.free_space.%s",
				    locdefs(i)->name),
			    "disk_space_low", S_BLOCKED, T_FAILED,
			    pf_fmt(p, "%llu MiB free, under the %llu MiB floor",
				freeb >> 20, p->min_free >> 20),
			    pf_fmt(p,
				"the "
				"volume of %s has %llu of %llu bytes free",
				where, freeb, total),
			    pf_fmt(p,
				"free space on the volume "
				"of %s, or lower preflight.min_free_bytes in "
				"config/sandbox.json",
				where),
			    locdefs(i)->name, where);
		else
			finding(p, A_STATE,
			    i == LOC_ROOT ?
				"state_root.free_space" :
				pf_fmt(p, "state_root.free_space.%s",
				    locdefs(i)->name),
			    "disk_space_ok", S_OK, T_PASSED,
			    pf_fmt(p,
				"%llu MiB "
				"free",
				freeb >> 20),
			    pf_fmt(p,
				"the volume of %s "
				"has %llu of %llu bytes free (floor %llu)",
				where, freeb, total, p->min_free),
			    "", locdefs(i)->name, where);
	}
}

/* ------------------------------------------------------------------ */
/* configuration */

/* What sbx-exec and sbx-preflight read from config/sandbox.json. */
static int
validate_sandbox_json(struct pf *p, json_t *cfg, struct sbx_error *e)
{
	struct sbx_runlimits	 l;
	json_t			*v, *m;

	sbx_limits_defaults(&l);
	if (sbx_limits_merge_json(&l, json_object_get(cfg, "limits"), 0,
	    "config/sandbox.json", e) == -1)
		return -1;
	if (sbx_settings_check_host(cfg, e) == -1)
		return -1;
	if ((v = json_object_get(cfg, "preflight")) != NULL) {
		m = json_object_get(v, "min_free_bytes");
		if (m != NULL)
			p->min_free = (unsigned long long)
			    json_integer_value(m);
	}
	v = json_object_get(cfg, "cgroup_v2_root");
	if (v != NULL && (p->v2root = strdup(json_string_value(v))) == NULL)
		p->oom = 1;
	return 0;
}

/* The limits a config asks for (explicit and set): the SBX_RL_* that
 * only a cgroup holds. */
static unsigned
asked_limits(const struct sbx_runlimits *l)
{
	unsigned	 m = 0;

	if (l->memory_mib)
		m |= SBX_RL_MEMORY;
	if (l->cpus > 0)
		m |= SBX_RL_CPUS;
	if (l->pids)
		m |= SBX_RL_PIDS;
	return m & l->explicit_mask;
}

/*
 * The agent's records a run or an install reads and refuses when damaged
 * (issue 30): reported here, named, with their repair, rather than found
 * by the next run.  Only JSON well-formedness: what each holds is its
 * owner's to judge.
 */
static void
check_records(struct pf *p)
{
	static const struct {
		enum sbx_layout_id id;
		const char	  *what, *pre, *post;
	} recs[] = {
		{ SBX_L_AGENT_PLUGINS, "plugins",
		    "move it aside and install the agent's plugins again "
		    "(sbx plugin install ID",
		    ")" },
		{ SBX_L_AGENT_INSTALLED, "packages", "sbx install reconcile",
		    " rebuilds it from what is installed" },
	};
	struct sbx_buf	 b = SBX_BUF_INIT;
	struct sbx_error e;
	char		 rel[SBX_LAYOUT_PATH_MAX];
	json_t		*j;
	size_t		 i;

	if (!p->ls[LOC_ROOT].usable)
		return;
	for (i = 0; i < sizeof(recs) / sizeof(*recs); i++) {
		if (sbx_layout_path(recs[i].id, p->o->agent, rel, sizeof(rel),
			NULL) == -1)
			continue;
		memset(&e, 0, sizeof(e));
		sbx_buf_reset(&b);
		if (sbx_fs_read_file_at(p->ls[LOC_ROOT].fd, rel, 1u << 20, &b,
			&e) == -1) {
			if (sbx_error_absent(&e))
				continue;
		} else if ((j = sbx_json_parse(b.p, b.len, 1u << 20, &e)) !=
		    NULL) {
			json_decref(j);
			continue;
		}
		finding(p, A_STATE, pf_fmt(p, "state.%s", recs[i].what),
		    "record_damaged", S_WARNING, T_FAILED,
		    pf_fmt(p, "%s is damaged", rel), e.message,
		    pf_fmt(p, "%s --agent %s%s", recs[i].pre, p->o->agent,
			recs[i].post),
		    "root", pf_fmt(p, "%s/%s", p->o->root_path, rel));
	}
	sbx_buf_release(&b);
}

/* Per-agent uids (idalloc.c): shared or per_agent, and why; a range
 * that collides, or the agent's migration not done, is a warning with
 * the command that repairs it. */
static void
check_identity(struct pf *p)
{
	struct sbx_agentid a;
	struct sbx_idcfg   c;
	struct sbx_error   e;
	struct stat	   st;
	char		   home[SBX_LAYOUT_PATH_MAX];
	int		   r, fd = p->ls[LOC_ROOT].usable ? p->ls[LOC_ROOT].fd :
			       -1;

	memset(&e, 0, sizeof(e));
	if (sbx_idalloc_config(fd, &c, &e) == -1)
		return;	/* the settings' own finding says it */
	if (!c.per_agent) {
		finding(p, A_CONFIG, "configuration.identity",
		    "identity_shared", S_OK, T_PASSED, "identity: shared "
		    "(every agent runs as one uid)", c.why_shared,
		    c.why_shared[0] ? "" : "per-agent uids: sbx config set "
		    "--global identity.per_agent true", "root",
		    p->o->root_path);
		return;
	}
	if (sbx_idalloc_check_range(&c, NULL, &e) == -1) {
		finding(p, A_CONFIG, "configuration.identity",
		    "identity_range_collision", S_WARNING, T_FAILED,
		    "identity: the per-agent id range is not free", e.message,
		    e.hint, "root", p->o->root_path);
		return;
	}
	r = fd >= 0 ? sbx_idalloc_read(fd, p->o->agent, &a, &e) : 0;
	/* No record and no home: a new agent, whose ids come with it. */
	home[0] = '\0';
	(void)sbx_layout_path(SBX_L_AGENT_HOME, p->o->agent, home,
	    sizeof(home), NULL);
	if (r == -1 || (r == 1 && !a.migrated) || (r == 0 && fd >= 0 &&
	    home[0] != '\0' && fstatat(fd, home, &st, AT_SYMLINK_NOFOLLOW) ==
	    0)) {
		finding(p, A_CONFIG, "configuration.identity",
		    "identity_migration_pending", S_WARNING, T_FAILED,
		    pf_fmt(p, "identity: agent %s is not migrated to its own "
		    "uid", p->o->agent), r == -1 ? e.message : "",
		    pf_fmt(p, "sbx provision --agent %s --migrate-identity",
		    p->o->agent), "root", p->o->root_path);
		return;
	}
	finding(p, A_CONFIG, "configuration.identity", "identity_per_agent",
	    S_OK, T_PASSED, r == 1 ? pf_fmt(p, "identity: per_agent (agent "
	    "%s runs as uid %lu)", p->o->agent, a.host_uid) : "identity: "
	    "per_agent", c.subordinate ? "through the caller's subordinate "
	    "range" : "", "", "root", p->o->root_path);
}

static void
check_config(struct pf *p)
{
	struct sbx_error	 e;
	struct lstate		*cs = &p->ls[LOC_SANDBOX_JSON];
	struct sbx_runlimits	 l;
	const char		*source, *rel;
	json_t			*cfg = NULL;

	jset(p, p->config, "path", jstr(cs->path));
	if (!p->ls[LOC_CONFIG].usable || !cs->exists) {
		source = "missing_using_defaults";
		finding(p, A_CONFIG, "configuration.sandbox_json",
		    "config_missing", S_INFO, p->ls[LOC_CONFIG].exists &&
		    !p->ls[LOC_CONFIG].usable ? T_UNPROVEN : T_MISSING,
		    "no config/sandbox.json: built-in defaults apply",
		    "the file is optional", "", "sandbox_json", cs->path);
	} else if (sbx_settings_global(p->ls[LOC_ROOT].fd, &cfg,
	    &e) == -1 || (cfg != NULL &&
	    validate_sandbox_json(p, cfg, &e) == -1)) {
		source = "invalid_using_defaults";
		p->cfg_invalid = 1;
		p->min_free = SBX_PREFLIGHT_MIN_FREE;
		jset(p, p->config, "error", jstr(e.message));
		finding(p, A_CONFIG, "configuration.sandbox_json",
		    "config_invalid", S_WARNING, T_FAILED,
		    "config/sandbox.json is invalid", e.message, pf_fmt(p,
		    "correct or remove %s (sbx exec refuses to run until "
		    "then; sbx preflight assumes the defaults)", cs->path),
		    "sandbox_json", cs->path);
	} else if (cfg == NULL) {
		source = "missing_using_defaults";
		finding(p, A_CONFIG, "configuration.sandbox_json",
		    "config_missing", S_INFO, T_MISSING,
		    "no config/sandbox.json: built-in defaults apply",
		    "the file is optional", "", "sandbox_json", cs->path);
	} else {
		source = "loaded";
		finding(p, A_CONFIG, "configuration.sandbox_json",
		    "config_loaded", S_OK, T_PASSED,
		    "config/sandbox.json is valid", pf_fmt(p, "free space "
		    "floor %llu bytes", p->min_free), "", "sandbox_json",
		    cs->path);
	}
	json_decref(cfg);
	jset(p, p->config, "source", jstr(source));

	/* The agent's settings: sbx exec refuses an invalid file too. */
	if (p->ls[LOC_AGENT_CONFIG].exists &&
	    strcmp(p->ls[LOC_AGENT_CONFIG].status, "ready") == 0) {
		rel = p->ls[LOC_AGENT_CONFIG].rel;
		cfg = NULL;
		sbx_limits_defaults(&l);
		if (sbx_settings_agent(p->ls[LOC_ROOT].fd, p->o->agent, &cfg,
		    &e) == -1 ||
		    (cfg != NULL && sbx_limits_merge_json(&l,
		    json_object_get(cfg, "limits"), 1, rel, &e) == -1)) {
			p->agent_cfg_invalid = 1;
			finding(p, A_CONFIG, "configuration.agent",
			    "config_invalid", S_WARNING, T_FAILED,
			    pf_fmt(p, "%s is invalid", rel), e.message,
			    pf_fmt(p, "correct or remove %s, then run `%s`",
			    p->ls[LOC_AGENT_CONFIG].path, p->provision),
			    "agent_config", p->ls[LOC_AGENT_CONFIG].path);
		} else {
			p->hard_limits = asked_limits(&l);
			finding(p, A_CONFIG, "configuration.agent",
			    "config_loaded", S_OK, T_PASSED,
			    pf_fmt(p, "%s is valid", rel), "", "",
			    "agent_config", p->ls[LOC_AGENT_CONFIG].path);
		}
		json_decref(cfg);
	}
	check_records(p);
	check_identity(p);
}

/* ------------------------------------------------------------------ */
/* cgroups: the backend sbx exec would get, by creating a test cgroup */

static void
check_cgroup(struct pf *p)
{
	struct sbx_error	 e, e2;
	struct sbx_limits	 l;
	struct sbx_cgroup	 cg;
	char			 name[SBX_CG_NAME_MAX + 1];
	const char		*backend, *repair, *why = "", *asked;
	const char		*title, *detail;
	enum sbx_cg_backend	 be;
	unsigned		 enforced, refused;
	int			 r;

	memset(&l, 0, sizeof(l));
	memset(&cg, 0, sizeof(cg));
	l.pids = 64;
	l.memory_bytes = 256ULL << 20;
	l.wanted = SBX_LIM_PIDS | SBX_LIM_MEMORY;
	repair = "delegate a cgroup v2 subtree to the user running sbx "
	    "(systemd: `systemd-run --user -p Delegate=yes --scope sbx "
	    "...`), or name one prepared for sbx as cgroup_v2_root in "
	    "config/sandbox.json; without a cgroup, memory and task limits "
	    "are rlimits only";
	p->limits = "unproven";
	if (sbx_cgroup_name(name, sizeof(name)) == -1) {
		capability(p, "cgroup_limits", T_UNPROVEN, "no cgroup name");
		finding(p, A_CAP, "capability.cgroup_limits",
		    "capability_unproven", S_WARNING, T_UNPROVEN,
		    "cgroup limits could not be tested", "naming the test "
		    "cgroup failed", repair, NULL, NULL);
		return;
	}
	r = sbx_cgroup_create_at(p->v2root, NULL, name, &l, &cg, &e);
	/* destroy resets cg: keep what it said first. */
	be = cg.backend;
	backend = sbx_cgroup_backend_name(be);
	enforced = cg.enforced;
	why = pf_fmt(p, "%s", cg.why);
	if (sbx_cgroup_destroy(&cg, &e2) == -1 && r == 0) {
		r = -1;
		e = e2;
	}
	if (r == -1) {
		capability(p, "cgroup_limits", T_UNPROVEN, e.message);
		finding(p, A_CAP, "capability.cgroup_limits",
		    "capability_unproven", S_WARNING, T_UNPROVEN,
		    "cgroup limits could not be tested", e.message, repair,
		    NULL, NULL);
	} else if (be == SBX_CG_NONE ||
	    (enforced & (SBX_LIM_PIDS | SBX_LIM_MEMORY)) !=
		(SBX_LIM_PIDS | SBX_LIM_MEMORY)) {
		/*
		 * Soft limits only.  Every run still works: sbx exec applies
		 * rlimits and goes ahead with the default limits, so a
		 * machine without a cgroup (a plain user without systemd
		 * delegation) is ready, and this is said as info and as
		 * the report's warning.  It is needs_setup only when the
		 * agent's config asks for a limit the cgroup cannot hold:
		 * sbx exec refuses those runs (fail closed, DESIGN.md 6).
		 */
		refused = p->hard_limits;
		if (be != SBX_CG_NONE)
			refused &= (enforced & SBX_LIM_PIDS ? 0 : SBX_RL_PIDS) |
			    (enforced & SBX_LIM_MEMORY ? 0 : SBX_RL_MEMORY);
		if (be == SBX_CG_NONE) {
			capability(p, "cgroup_limits", T_MISSING,
			    pf_fmt(p, "none: %s", why));
			title =
			    "no writable cgroup: memory and task limits are "
			    "soft (rlimits)";
		} else {
			capability(p, "cgroup_limits", T_FAILED,
			    pf_fmt(p, "%s: only %s%s", backend,
				enforced & SBX_LIM_PIDS ? "pids" : "",
				enforced & SBX_LIM_MEMORY ? "memory" : ""));
			title = pf_fmt(p,
			    "the %s cgroup cannot limit %s: those "
			    "limits are soft (rlimits)",
			    backend,
			    enforced & SBX_LIM_PIDS ? "memory" : "tasks");
			why = pf_fmt(p,
			    "a test cgroup was created, but the %s "
			    "controller is not available to it",
			    enforced & SBX_LIM_PIDS ? "memory" : "pids");
		}
		if (refused) {
			/* ", memory_mib, pids" without its first ", " ("" when
			 * out of memory) */
			asked = pf_fmt(p, "%s%s%s",
			    refused & SBX_RL_MEMORY ? ", memory_mib" : "",
			    refused & SBX_RL_CPUS ? ", cpus" : "",
			    refused & SBX_RL_PIDS ? ", pids" : "");
			asked += strlen(asked) > 2 ? 2 : 0;
			detail = pf_fmt(p,
			    "%s; %s asks for %s, and sbx exec "
			    "refuses its runs until a cgroup can hold %s (or "
			    "a run accepts --soft-limits)",
			    why, p->ls[LOC_AGENT_CONFIG].rel, asked,
			    refused & (refused - 1) ? "them" : "it");
		} else
			detail = pf_fmt(p,
			    "%s; every run works, with rlimits "
			    "for memory and tasks; a limit an agent's config "
			    "or a run asks for is refused (sbx exec "
			    "--soft-limits accepts rlimits)",
			    why);
		finding(p, A_CAP, "capability.cgroup_limits",
		    "cgroup_unavailable", refused ? S_WARNING : S_INFO,
		    be == SBX_CG_NONE ? T_MISSING : T_FAILED, title, detail,
		    repair, NULL, NULL);
		p->limits = "soft";
	} else {
		p->limits = "hard";
		capability(p, "cgroup_limits", T_PASSED, pf_fmt(p, "%s%s",
		    backend, be == SBX_CG_V2 ? " (delegated)" :
		    " (writable)"));
		finding(p, A_CAP, "capability.cgroup_limits", "cgroup_ok",
		    S_OK, T_PASSED, pf_fmt(p, "%s can enforce limits",
		    backend), "a test cgroup with memory and task limits was "
		    "created and removed", "", NULL, NULL);
	}
}

/* ------------------------------------------------------------------ */
/* the probe sandbox */

/* The probe's scratch root: the one tree removal (fsutil.c), best
 * effort here. */
static void
rm_tree_at(int dfd, const char *name)
{
	struct sbx_error	 e;

	(void)sbx_fs_rm_tree_at(dfd, name, &e);
}

static int
loc_ready(struct pf *p, int i)
{
	return strcmp(p->ls[i].status, "ready") == 0;
}

static void
spawn_probe(struct pf *p)
{
	struct sbx_strv	 env = SBX_STRV_INIT;
	const char	*exec, *init, *root, *v;
	char		 tmpl[PATH_MAX];

	exec = pf_fmt(p, "%s/sbx-exec", p->o->exec_dir);
	init = pf_fmt(p, "%s/sbx-init", p->o->exec_dir);
	p->probe.pid = -1;
	p->probe.fd = -1;
	if (p->tool_path[0] == NULL) {
		p->probe_skip = "not run: bubblewrap is not available";
		return;
	}
	if (access(exec, X_OK) == -1 || access(init, X_OK) == -1) {
		p->probe_skip = pf_fmt(p, "not run: %s or %s is missing", exec,
		    init);
		return;
	}
	/* The real root when it is in shape (the probe then also proves the
	 * user's configuration); otherwise a throw-away one, because sbx
	 * exec creates what it lacks and preflight must change nothing. */
	if (loc_ready(p, LOC_ROOT) && loc_ready(p, LOC_WORKSPACE) &&
	    loc_ready(p, LOC_WS_AGENTS) && loc_ready(p, LOC_AGENT_HOME) &&
	    loc_ready(p, LOC_OUTPUT) && loc_ready(p, LOC_AGENT_OUTPUT) &&
	    loc_ready(p, LOC_CACHE) && !p->cfg_invalid &&
	    !p->agent_cfg_invalid) {
		root = p->o->root_path;
		p->probe_real_root = 1;
	} else {
		snprintf(tmpl, sizeof(tmpl), "%s/sbx-preflight.XXXXXX",
		    p->o->tmp_dir ? p->o->tmp_dir : "/tmp");
		if (mkdtemp(tmpl) == NULL) {
			p->probe_skip = pf_fmt(p, "not run: cannot make a "
			    "temporary state root in %s: %s", p->o->tmp_dir ?
			    p->o->tmp_dir : "/tmp", strerror(errno));
			return;
		}
		snprintf(p->tmp_root, sizeof(p->tmp_root), "%s", tmpl);
		root = p->tmp_root;
	}
	/* A fixed environment: what steers sbx exec is on its command
	 * line; the overrides for bwrap and cgroups are passed on so that
	 * the probe runs what sbx exec would run here. */
	sbx_strv_push(&env, "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:"
	    "/sbin");
	sbx_strv_push(&env, "LANG=C");
	if ((v = secure_getenv("SBX_BWRAP")) != NULL)
		sbx_strv_pushf(&env, "SBX_BWRAP=%s", v);
	if ((v = secure_getenv("SBX_CGROUP_ROOT")) != NULL)
		sbx_strv_pushf(&env, "SBX_CGROUP_ROOT=%s", v);
	{
		char *argv[] = { "sbx-exec", "--home", (char *)root, "--agent",
			(char *)p->o->agent, "--json", "-q", "--soft-limits",
			"--", SBX_INIT_PATH, SBX_INIT_OPT_PROBE, NULL };

		if (env.v == NULL || child_spawn(&p->probe, exec, argv, env.v,
		    0, PROBE_OUT_MAX) == -1) {
			p->probe_skip = pf_fmt(p, "not run: cannot start %s: "
			    "%s", exec, strerror(errno));
			p->probe.pid = -1;
			p->probe.fd = -1;
		} else
			p->probe_spawned = 1;
	}
	sbx_strv_release(&env);
}

/* Why user namespaces fail, from the settings that forbid them. */
static const char *
userns_cause(struct pf *p, const char **repair)
{
	long long	 v;

	if (sysctl_int(p, "user.max_user_namespaces", &v) == 1 && v == 0) {
		*repair = "sysctl -w user.max_user_namespaces=16384 (persist "
		    "it in /etc/sysctl.d/)";
		return "user.max_user_namespaces is 0: the kernel allows no "
		    "user namespaces";
	}
	if (sysctl_int(p, "kernel.unprivileged_userns_clone", &v) == 1 &&
	    v == 0) {
		*repair = "sysctl -w kernel.unprivileged_userns_clone=1 "
		    "(persist it in /etc/sysctl.d/)";
		return "kernel.unprivileged_userns_clone is 0: unprivileged "
		    "users may not create user namespaces";
	}
	if (sysctl_int(p, "kernel.apparmor_restrict_unprivileged_userns",
	    &v) == 1 && v == 1) {
		*repair = "give bwrap an AppArmor profile that allows user "
		    "namespaces (/etc/apparmor.d/bwrap: `abi <abi/4.0>, "
		    "include <tunables/global> profile bwrap /usr/bin/bwrap "
		    "flags=(unconfined) { userns, }`, then `apparmor_parser "
		    "-r /etc/apparmor.d/bwrap`), or sysctl -w "
		    "kernel.apparmor_restrict_unprivileged_userns=0";
		return "kernel.apparmor_restrict_unprivileged_userns is 1: "
		    "AppArmor denies user namespaces to programs without a "
		    "profile allowing them";
	}
	if (p->in_container) {
		*repair = "allow user namespaces in the container (e.g. docker "
		    "run --security-opt seccomp=unconfined --security-opt "
		    "apparmor=unconfined, or a seccomp profile permitting "
		    "clone/unshare with CLONE_NEWUSER), or run sbx on the host";
		return "running inside a container whose runtime forbids "
		    "creating user namespaces";
	}
	return NULL;
}

static const char *
probe_get(json_t *vals, const char *k)
{
	return json_string_value(json_object_get(vals, k));
}

static void
cap_result(struct pf *p, const char *capid, const char *pass_code,
    const char *fail_code, int verdict, const char *pass_title,
    const char *fail_title, const char *detail, const char *repair)
{
	const char *id = pf_fmt(p, "capability.%s", capid);

	/* verdict: 1 proven, 0 disproven, -1 not determined */
	if (verdict == 1) {
		capability(p, capid, T_PASSED, detail);
		finding(p, A_CAP, id, pass_code, S_OK, T_PASSED, pass_title,
		    detail, "", NULL, NULL);
	} else if (verdict == 0) {
		capability(p, capid, T_FAILED, detail);
		finding(p, A_CAP, id, fail_code, S_BLOCKED, T_FAILED,
		    fail_title, detail, repair, NULL, NULL);
	} else {
		capability(p, capid, T_UNPROVEN, detail);
		finding(p, A_CAP, id, "capability_unproven", S_WARNING,
		    T_UNPROVEN, pf_fmt(p, "%s: not proven", capid), detail,
		    repair, NULL, NULL);
	}
}

static void
check_probe(struct pf *p, long long deadline)
{
	struct sbx_error	 e;
	json_t			*env = NULL, *res, *vals = NULL;
	const char		*why = NULL, *msg = "", *reason = "", *cause;
	const char		*ucause_repair = "", *v, *where, *out, *l;
	const char		*noprobe;
	const char		*repair_bug = "report it: sbx's sandbox does "
				    "not isolate as designed on this machine";
	int			 started = 0, ran = 0, verdict;
	unsigned long long	 capeff;
	char			*end;

	if (p->probe_spawned) {
		child_collect(&p->probe, deadline);
		if (p->probe.timed_out)
			why = "the probe sandbox timed out";
		else if (p->probe.out.len == 0)
			why = pf_fmt(p, "sbx-exec printed nothing (wait status "
			    "%d)", p->probe.status);
		else if ((env = sbx_json_parse(p->probe.out.p,
		    p->probe.out.len, PROBE_OUT_MAX, &e)) == NULL)
			why = pf_fmt(p, "sbx-exec printed no envelope: %s",
			    e.message);
	} else
		why = p->probe_skip ? p->probe_skip : "not run";
	if (p->tmp_root[0]) {
		rm_tree_at(AT_FDCWD, p->tmp_root);
		where = "in a temporary state root, since the state root is "
		    "not provisioned";
	} else
		where = "in the state root";

	if (env != NULL && json_is_true(json_object_get(env, "ok"))) {
		started = 1;
		res = json_object_get(env, "result");
		out = json_string_value(json_object_get(res, "stdout"));
		if (json_integer_value(json_object_get(res, "exit_code")) == 0
		    && out != NULL && (vals = json_object()) != NULL) {
			ran = 1;
			/* "name value" lines. */
			for (l = out; *l; ) {
				const char *nl = strchr(l, '\n');
				const char *sp = strchr(l, ' ');
				size_t len = nl ? (size_t)(nl - l) : strlen(l);
				if (sp != NULL && sp < l + len) {
					char k[64];
					size_t kl = (size_t)(sp - l);
					if (kl < sizeof(k)) {
						memcpy(k, l, kl);
						k[kl] = '\0';
						json_object_set_new(vals, k,
						    sbx_json_bytes(sp + 1,
						    len - kl - 1));
					}
				}
				l += len + (nl ? 1 : 0);
			}
		} else
			why = pf_fmt(p, "the probe ran but did not report "
			    "(exit status %lld)", (long long)json_integer_value(
			    json_object_get(res, "exit_code")));
	} else if (env != NULL) {
		msg = json_string_value(json_object_get(env, "message"));
		reason = json_string_value(json_object_get(env, "reason"));
		msg = msg ? msg : "";
		reason = reason ? reason : "";
	}

	/* The sandbox itself. */
	if (started) {
		capability(p, "sandbox", T_PASSED, pf_fmt(p, "a probe sandbox "
		    "ran %s", where));
		finding(p, A_CAP, "capability.sandbox", "sandbox_ok", S_OK,
		    T_PASSED, "a sandbox starts", pf_fmt(p, "sbx exec ran "
		    "/run/sbx/init --probe %s", where), "", NULL, NULL);
	} else if (env != NULL) {
		capability(p, "sandbox", T_FAILED, msg);
		finding(p, A_CAP, "capability.sandbox", "sandbox_failed",
		    S_BLOCKED, T_FAILED, "a sandbox cannot start here",
		    pf_fmt(p, "sbx exec %s: %s (%s)", where, msg, reason),
		    "see the other findings; `sbx exec -- true` shows the same "
		    "error", NULL, NULL);
	} else {
		capability(p, "sandbox", T_UNPROVEN, why);
		finding(p, A_CAP, "capability.sandbox", "capability_unproven",
		    S_WARNING, T_UNPROVEN, "sandbox: not proven", why,
		    "repair the findings above, then run sbx preflight again",
		    NULL, NULL);
	}

	/* User namespaces: the sandbox always unshares one. */
	if (started) {
		cap_result(p, "user_namespaces", "userns_ok", NULL, 1,
		    "user namespaces work", "", "bwrap --unshare-user set the "
		    "sandbox up", "");
	} else if (strcmp(reason, "sandbox_setup_failed") == 0 &&
	    ((cause = userns_cause(p, &ucause_repair)) != NULL ||
	    strstr(msg, "namespace") || strstr(msg, "uid map") ||
	    strstr(msg, "uid_map"))) {
		capability(p, "user_namespaces", T_FAILED, cause ? cause : msg);
		finding(p, A_CAP, "capability.user_namespaces",
		    "userns_unavailable", S_BLOCKED, T_FAILED,
		    "user namespaces are not available", cause ? pf_fmt(p,
		    "%s; bwrap said: %s", cause, msg) : pf_fmt(p, "bwrap "
		    "said: %s (none of the known settings explains it)", msg),
		    cause ? ucause_repair : "check that the kernel allows "
		    "unprivileged user namespaces (user.max_user_namespaces, "
		    "kernel.unprivileged_userns_clone, AppArmor)", NULL, NULL);
	} else {
		cap_result(p, "user_namespaces", NULL, NULL, -1, "", "",
		    started ? "" : why ? why : pf_fmt(p, "the sandbox failed: "
		    "%s", msg), "make a sandbox start first");
	}

	/* What the probe saw inside. */
	noprobe = started ? why : "the probe sandbox did not start";
	v = vals ? probe_get(vals, "Seccomp") : NULL;
	l = vals ? probe_get(vals, "keyctl") : NULL;
	verdict = !ran || v == NULL || l == NULL ? -1 : strcmp(v, "2") == 0 &&
	    strcmp(l, "EPERM") == 0;
	p->filter_holds = verdict == 1;
	cap_result(p, "seccomp", "seccomp_ok", "seccomp_not_enforced", verdict,
	    "the seccomp filter holds", "the seccomp filter does not hold",
	    ran && v && l ? pf_fmt(p, "Seccomp %s, keyctl() gave %s", v, l) :
	    ran ? "the probe did not report Seccomp or keyctl" : noprobe,
	    verdict == 0 ? repair_bug : "make a sandbox start first");

	v = vals ? probe_get(vals, "write_etc") : NULL;
	verdict = !ran || v == NULL ? -1 : strcmp(v, "EROFS") == 0 ? 1 :
	    strcmp(v, "ok") == 0 ? 0 : -1;
	cap_result(p, "read_only_system", "read_only_system_ok",
	    "system_writable", verdict, "system directories are read-only",
	    "the sandbox can write to /etc", ran && v ? pf_fmt(p, "creating "
	    "a file in /etc gave %s", v) : noprobe, verdict == 0 ?
	    repair_bug : verdict == -1 && ran ? "expected EROFS; the file "
	    "system may not be mounted read-only" : "make a sandbox start "
	    "first");

	v = vals ? probe_get(vals, "net_interfaces") : NULL;
	verdict = !ran || v == NULL ? -1 : strcmp(v, "lo") == 0;
	cap_result(p, "network_isolation", "network_isolated",
	    "network_not_isolated", verdict, "the network namespace has "
	    "only lo", "the sandbox sees network interfaces",
	    ran && v ? pf_fmt(p, "interfaces: %s", v) : noprobe,
	    verdict == 0 ? repair_bug : "make a sandbox start first");

	v = vals ? probe_get(vals, "NoNewPrivs") : NULL;
	verdict = !ran || v == NULL ? -1 : strcmp(v, "1") == 0 ? 1 :
	    strcmp(v, "0") == 0 ? 0 : -1;
	cap_result(p, "no_new_privs", "no_new_privs_ok", "no_new_privs_missing",
	    verdict, "no new privileges can be gained",
	    "the sandbox can gain privileges through set-id programs",
	    ran && v ? pf_fmt(p, "NoNewPrivs %s", v) : noprobe,
	    verdict == 0 ? repair_bug : "make a sandbox start first");

	v = vals ? probe_get(vals, "CapEff") : NULL;
	verdict = -1;
	if (ran && v != NULL) {
		errno = 0;
		capeff = strtoull(v, &end, 16);
		if (errno == 0 && end != v && *end == '\0')
			verdict = capeff == 0;
	}
	cap_result(p, "capabilities_dropped", "capabilities_dropped",
	    "capabilities_retained", verdict, "no capabilities are left",
	    "the sandbox keeps capabilities", ran && v ? pf_fmt(p, "CapEff "
	    "%s", v) : noprobe, verdict == 0 ? repair_bug :
	    "make a sandbox start first");

	json_decref(vals);
	json_decref(env);
}

/* ------------------------------------------------------------------ */
/* images */

static int
is_sha256(const char *s)
{
	size_t	 i;

	for (i = 0; s[i]; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return i == 64;
}

/* --deep: walk one template against its manifest (path, type, mode,
 * size and SHA-256 of each file), as `sbx provision image verify` does. */
static void
verify_image(struct pf *p, const char *digest)
{
	struct sbx_error	 e;
	struct lstate		*s = &p->ls[LOC_IMAGES];
	json_t			*diffs = json_array();
	const char		*id = pf_fmt(p, "images.%.12s.verified", digest);
	const char		*path = pf_fmt(p, "%s/%s", s->path, digest);

	if (p->ls[LOC_ROOT].fd < 0 ||
	    sbx_manifest_verify(p->ls[LOC_ROOT].fd, digest, diffs, &e) == -1)
		finding(p, A_IMAGES, id, "image_unverified", S_WARNING,
		    T_UNPROVEN, "a template could not be verified",
		    p->ls[LOC_ROOT].fd < 0 ? "the state root is not open" :
		    e.message, "sbx provision image verify", "images", path);
	else if (json_array_size(diffs) > 0)
		finding(p, A_IMAGES, id, "image_damaged", S_BLOCKED, T_FAILED,
		    "a template differs from its manifest", pf_fmt(p,
		    "%zu differences (first: %s)", json_array_size(diffs),
		    json_string_value(json_object_get(json_array_get(diffs,
		    0), "path"))), "add the image again (sbx provision image "
		    "add SOURCE --sha256 DIGEST)", "images", path);
	else
		finding(p, A_IMAGES, id, "image_verified", S_OK, T_PASSED,
		    "a template matches its manifest", "", "", "images", path);
	json_decref(diffs);
}

/*
 * A template's manifest.json that is there but emptied or cut short
 * (issue 30): it must begin with `{` and end with `}` (bar white space).
 * Two reads, not a parse: a manifest may be large and preflight walks
 * nothing by default; --deep compares it in full.
 */
static int
manifest_whole(int ifd)
{
	char	c[64];
	ssize_t n;
	off_t	size;
	int	fd, ok = 0, i;

	if ((fd = openat(ifd, "manifest.json",
		 O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0;
	if ((size = lseek(fd, 0, SEEK_END)) > 1 && pread(fd, c, 1, 0) == 1 &&
	    c[0] == '{') {
		n = pread(fd, c, sizeof(c),
		    size > (off_t)sizeof(c) ? size - (off_t)sizeof(c) : 0);
		for (i = (int)n - 1; i >= 0 &&
		     (c[i] == ' ' || c[i] == '\n' || c[i] == '\t' ||
			 c[i] == '\r');
		     i--)
			;
		ok = i >= 0 && c[i] == '}';
	}
	close(fd);
	return ok;
}

static void
check_images(struct pf *p)
{
	struct lstate	*s = &p->ls[LOC_IMAGES];
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 fd, n = 0, good = 0, shown = 0, hidden = 0;

	if (!s->usable)
		return;
	if ((fd = openat(s->fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || (d = fdopendir(fd)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL && n < IMAGES_MAX) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..")
		    == 0)
			continue;
		n++;
		/* The map of names, written by sbx provision. */
		if (strcmp(de->d_name, "names.json") == 0)
			continue;
		if (is_sha256(de->d_name)) {
			int ifd = openat(s->fd, de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			int ok = ifd >= 0 &&
			    fstatat(ifd, "rootfs", &st, AT_SYMLINK_NOFOLLOW) ==
				0 &&
			    S_ISDIR(st.st_mode) &&
			    fstatat(ifd, "manifest.json", &st,
				AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISREG(st.st_mode) && manifest_whole(ifd);
			if (ifd >= 0)
				close(ifd);
			if (ok) {
				good++;
				if (p->o->deep)
					verify_image(p, de->d_name);
				continue;
			}
			if (shown++ < IMAGE_FINDINGS_MAX)
				finding(p, A_IMAGES,
				    pf_fmt(p, "images.%.12s", de->d_name),
				    "image_incomplete", S_WARNING, T_FAILED,
				    "a root file system template "
				    "is incomplete",
				    pf_fmt(p,
					"images/%s lacks "
					"rootfs/ or a whole manifest.json",
					de->d_name),
				    pf_fmt(p,
					"remove %s/%s, then add the image "
					"again",
					s->path, de->d_name),
				    "images",
				    pf_fmt(p, "%s/%s", s->path, de->d_name));
			else
				hidden++;
			continue;
		}
		if (shown++ < IMAGE_FINDINGS_MAX)
			finding(p, A_IMAGES, "images.unexpected_entry",
			    "image_unexpected_entry", S_INFO, T_FAILED,
			    "images/ holds an entry that is not a template",
			    strncmp(de->d_name, ".tmp-", 5) == 0 ? pf_fmt(p,
			    "images/%s is left over from an interrupted image "
			    "add", de->d_name) :
			    pf_fmt(p, "images/%s is not named by a sha256 "
			    "digest; sbx ignores it", de->d_name), pf_fmt(p,
			    "remove %s/%s", s->path, de->d_name), "images",
			    pf_fmt(p, "%s/%s", s->path, de->d_name));
		else
			hidden++;
	}
	closedir(d);
	if (hidden > 0)
		finding(p, A_IMAGES, "images.more", "image_unexpected_entry",
		    S_INFO, T_FAILED, pf_fmt(p, "%d more entries in images/ "
		    "are not shown", hidden), "", "", "images", s->path);
	if (good == 0)
		finding(p, A_IMAGES, "images.templates", "images_none", S_INFO,
		    T_MISSING, "no root file system templates",
		    "sandboxes use the host's system directories (read-only)",
		    "", "images", s->path);
	else
		finding(p, A_IMAGES, "images.templates", "images_present",
		    S_INFO, T_PASSED, pf_fmt(p, "%d root file system "
		    "template%s", good, good == 1 ? "" : "s"), "", "",
		    "images", s->path);
}

/* ------------------------------------------------------------------ */
/* the report */

static void
pf_release(struct pf *p)
{
	int	 i;

	for (i = 0; i < NLOC; i++) {
		if (p->ls[i].fd >= 0)
			close(p->ls[i].fd);
		free(p->ls[i].rel);
		free(p->ls[i].path);
	}
	for (i = 0; i < NDEP; i++) {
		child_release(&p->ver[i]);
		free(p->tool_path[i]);
	}
	child_release(&p->probe);
	if (p->tmp_root[0])
		rm_tree_at(AT_FDCWD, p->tmp_root);
	for (i = 0; i < A_N; i++)
		json_decref(p->f[i]);
	json_decref(p->deps);
	json_decref(p->caps);
	json_decref(p->locs);
	json_decref(p->host);
	json_decref(p->config);
	free(p->v2root);
	sbx_strv_release(&p->arena);
}

/*
 * A host setting that sbx's sandboxes neutralise does not make the machine
 * less ready to run sbx: once the live probe has proved that the filter
 * and the namespaces hold, its finding becomes info (the repair stays, for
 * the rest of the host).  Without that proof it stays a warning.
 */
static void
settle_covered(struct pf *p)
{
	const char	*d;
	size_t		 i;

	if (!p->filter_holds)
		return;
	for (i = 0; i < p->ncovered; i++) {
		json_t *f = p->covered[i];

		d = json_string_value(json_object_get(f, "detail"));
		jset(p, f, "severity", jstr(S_INFO));
		jset(p, f, "detail", jstr(pf_fmt(p, "%s; no risk to sbx's "
		    "sandboxes (proved by the probe): %s", d ? d : "",
		    p->cover_why[i])));
		jset(p, f, "neutralised_by", jstr(p->cover_why[i]));
	}
}

int
sbx_preflight_run(const struct sbx_preflight_opts *o, json_t **report,
    struct sbx_error *e)
{
	struct pf	 p;
	json_t		*r, *findings, *root;
	char		 ts[32];
	time_t		 now = time(NULL);
	long long	 deadline;
	int		 i;

	*report = NULL;
	memset(&p, 0, sizeof(p));
	for (i = 0; i < NLOC; i++)
		p.ls[i].fd = -1;
	for (i = 0; i < NDEP; i++) {
		p.ver[i].pid = -1;
		p.ver[i].fd = -1;
	}
	p.probe.pid = -1;
	p.probe.fd = -1;
	p.o = o;
	p.as_root = geteuid() == 0;
	p.min_free = SBX_PREFLIGHT_MIN_FREE;
	for (i = 0; i < A_N; i++)
		p.f[i] = json_array();
	p.deps = json_array();
	p.caps = json_array();
	p.locs = json_array();
	p.host = json_object();
	p.config = json_object();
	p.provision = pf_fmt(&p, "sbx provision%s%s%s%s",
	    strcmp(o->root_source, "flag_override") == 0 ? " --home " : "",
	    strcmp(o->root_source, "flag_override") == 0 ? o->root_path : "",
	    o->agent_flag ? " --agent " : "", o->agent_flag ? o->agent : "");

	check_host(&p);
	for (i = 0; i < NLOC; i++)
		if (locdefs(i)->flags & SBX_LF_REPORT)
			check_location(&p, i);
	check_config(&p);
	check_space(&p);
	/* Before any child runs: a delegated cgroup is only usable by a
	 * process that is alone in it. */
	check_cgroup(&p);
	find_deps(&p);
	spawn_versions(&p);
	spawn_probe(&p);
	check_install(&p);
	check_images(&p);
	deadline = sbx_now_ms() + VERSION_TIMEOUT_MS;
	check_deps(&p, deadline);
	deadline = sbx_now_ms() + (o->probe_timeout_ms > 0 ?
	    o->probe_timeout_ms : PROBE_TIMEOUT_MS);
	check_probe(&p, deadline);
	check_disk(&p);
	settle_covered(&p);

	findings = json_array();
	for (i = 0; i < A_N; i++)
		if (json_array_extend(findings, p.f[i]) == -1)
			p.oom = 1;
	sbx_time_utc_iso_at(now, ts);
	root = json_object();
	if (root != NULL) {
		jset(&p, root, "path", jstr(o->root_path));
		jset(&p, root, "source", jstr(o->root_source));
	}
	r = json_object();
	if (r == NULL || findings == NULL || root == NULL || p.oom) {
		json_decref(r);
		json_decref(findings);
		json_decref(root);
		pf_release(&p);
		return sbx_error_sys(e, "nomem", "building the report");
	}
	jset(&p, r, "schema_version", json_integer(SBX_PREFLIGHT_SCHEMA));
	jset(&p, r, "generated_at", json_string(ts));
	jset(&p, r, "sbx_version", json_string(SBX_VERSION));
	jset(&p, r, "overall_readiness",
	    json_string(sbx_preflight_readiness(findings)));
	jset(&p, r, "limits",
	    json_string(p.limits != NULL ? p.limits : "unproven"));
	jset(&p, r, "root", root);
	jset(&p, r, "configuration", json_incref(p.config));
	jset(&p, r, "host", json_incref(p.host));
	jset(&p, r, "dependencies", json_incref(p.deps));
	jset(&p, r, "capabilities", json_incref(p.caps));
	jset(&p, r, "locations", json_incref(p.locs));
	jset(&p, r, "findings", findings);
	if (p.oom) {
		json_decref(r);
		pf_release(&p);
		return sbx_error_sys(e, "nomem", "building the report");
	}
	pf_release(&p);
	*report = r;
	return 0;
}

/* ------------------------------------------------------------------ */
/* readiness */

static int
is_status(const char *s)
{
	return strcmp(s, T_PASSED) == 0 || strcmp(s, T_MISSING) == 0 ||
	    strcmp(s, T_FAILED) == 0 || strcmp(s, T_UNPROVEN) == 0;
}

const char *
sbx_preflight_readiness(const json_t *findings)
{
	const char	*sev, *st;
	json_t		*f;
	size_t		 i;
	int		 blocked = 0, unproven = 0, warning = 0;

	/* No evidence at all is not readiness. */
	if (!json_is_array(findings) || json_array_size(findings) == 0)
		return "unproven";
	json_array_foreach(findings, i, f) {
		sev = json_string_value(json_object_get(f, "severity"));
		st = json_string_value(json_object_get(f, "status"));
		if (sev == NULL || st == NULL || !is_status(st)) {
			unproven = 1;
			continue;
		}
		if (strcmp(sev, S_BLOCKED) == 0)
			blocked = 1;
		else if (strcmp(sev, S_WARNING) == 0) {
			if (strcmp(st, T_UNPROVEN) == 0)
				unproven = 1;
			else
				warning = 1;
		} else if (strcmp(sev, S_OK) == 0) {
			/* ok is only ever a proven pass. */
			if (strcmp(st, T_PASSED) != 0)
				unproven = 1;
		} else if (strcmp(sev, S_INFO) != 0)
			unproven = 1;
	}
	if (blocked)
		return "blocked";
	if (unproven)
		return "unproven";
	if (warning)
		return "needs_setup";
	return "ready";
}

int
sbx_preflight_exit_status(const char *r)
{
	if (r == NULL)
		return SBX_PREFLIGHT_EX_UNPROVEN;
	if (strcmp(r, "ready") == 0)
		return SBX_PREFLIGHT_EX_READY;
	if (strcmp(r, "needs_setup") == 0)
		return SBX_PREFLIGHT_EX_NEEDS_SETUP;
	if (strcmp(r, "blocked") == 0)
		return SBX_PREFLIGHT_EX_BLOCKED;
	return SBX_PREFLIGHT_EX_UNPROVEN;
}
