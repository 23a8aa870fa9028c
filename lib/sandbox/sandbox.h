/* sandbox.h: what a sandbox looks like, as bubblewrap arguments. */
#ifndef SBX_SANDBOX_H
#define SBX_SANDBOX_H

#include <sys/types.h>

#include "buf.h"
#include "error.h"
#include "initproto.h"
#include "netmode.h"

/* The descriptor slots SBX_FD_* are in initproto.h, shared with sbx-init. */
/* Image mode binds no prepared /etc: that slot carries the user
 * namespace of a subordinate range (bwrap --userns); sbx-init closes it. */
#define SBX_FD_USERNS SBX_FD_ETC

/* Where things are inside the sandbox. */
#define SBX_IN_INIT	SBX_INIT_PATH
#define SBX_IN_OUTPUT	"/output"
#define SBX_IN_AGENTS	"/workspace/agents"
#define SBX_IN_SHARED	"/workspace/shared"
/* The CA bundle of a run with credential rules (tlsca.h): the system's
 * and the state root's CA, a read-only copy of SBX_FD_CA's content. */
#define SBX_IN_CA_BUNDLE "/run/sbx/ca-bundle.pem"
/* /run/sbx/bin (sbx-host, when the bridge is enabled) last: sbx's own
 * read-only bind, found by name, shadowing no system command. */
#define SBX_SANDBOX_PATH \
	"/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin:" \
	"/run/sbx/bin"

struct sbx_sandbox {
	const char	 *bwrap;	/* absolute path */
	const char	 *init;		/* host path of sbx-init */
	const char	 *agent;
	const char	 *home;		/* inside: /workspace/agents/<agent> */
	const char	 *workdir;	/* canonical host path = inside path */
	/* What sbx checked and opened as the workdir: sbx-init refuses to
	 * start the command unless the mount at `workdir` is this inode. */
	unsigned long long workdir_dev, workdir_ino;
	/* More writable roots (--workdir repeated), bound from the slots
	 * SBX_FD_XWORKDIR + i and checked by sbx-init the same way. */
	struct {
		const char		*path;
		unsigned long long	 dev, ino;
	}		  xworkdir[SBX_MAX_XWORKDIRS];
	int		  nxworkdir;
	const char	 *cwd;		/* inside */
	/* The file-system policy (fspolicy.c): bwrap arguments after
	 * the writable binds, and sbx-init's guard arguments; or NULL. */
	char *const	 *fs_ops;
	char *const	 *fs_init;
	enum sbx_netmode network;	/* lib/base/netmode.h */
	int		  disable_userns;
	/* Host mode: /etc is one prepared tree (etccache.c) bound from
	 * SBX_FD_ETC, in place of single-file binds and passwd memfds. */
	int		  etc_cached;
	/* With it, bit i: bind the host's etc_bound_dirs[i] (see
	 * sbx_sandbox_etc_mounts) over the tree, which could not hold it. */
	unsigned	  etc_bound;
	int		  seccomp;	/* pass SBX_FD_SECCOMP */
	int		  bridge; /* -B: the bridge's socket inside */
	int		  ca_bundle; /* SBX_FD_CA's copy at SBX_IN_CA_BUNDLE */
	const char	 *host_cli; /* sbx-host to bind, or NULL */
	int		  init_by_copy;	/* copy sbx-init in (bwrap may not
					   reach its directory) */
	/* Execute sbx-init from SBX_FD_INIT (as /proc/self/fd/N) instead
	 * of binding or copying it at SBX_IN_INIT: one mount less. */
	int		  init_exec_fd;
	/* Image mode: the system directories (/usr, /bin, /sbin, /lib*,
	 * /etc) come from this template instead of the host.  image_root is
	 * the host path of images/<digest>/rootfs (bwrap binds by path);
	 * image_fd, sbx's own descriptor of it, is where sbx looks what is
	 * a directory and what a symlink.  NULL: host mode. */
	const char	 *image_root;
	/* Host view (sbx srt): the host's top-level directories bound
	 * read-only in place of the system directories and /etc. */
	int		  host_view;
	int		  image_fd;
	/* sbx install --manager apt: image_root (the agent's own copy) is
	 * bound read-write as /, the command runs as uid 0 of the user
	 * namespace (mapped to the sandbox uid outside), and no other host
	 * path is writable: no home, output or workdir, the image's own
	 * /etc/passwd and group. */
	int		   rootfs_rw;
	/* Image mode over the agent's own copy: the slot of a user
	 * namespace with a subordinate range for bwrap to enter (--userns),
	 * or 0. */
	int		   userns_slot;
	unsigned long long tmp_size;	/* bytes for /tmp, 0 = bwrap default */
	/* --disk-tmp (issue 32): /tmp and /dev/shm are directories of the
	 * agent's disk image, bound from SBX_FD_DISK_TMP and _SHM; 0:
	 * tmpfs. */
	int		  disk_tmp;
	struct {
		const char	 *name;		/* nofile, fsize, as */
		unsigned long long value;
	}		  rlimit[4];	/* applied by sbx-init, inside */
	int		  nrlimit;
	char *const	 *argv;		/* the command, or NULL with shell */
	const char	 *shell;	/* -c string, or NULL */
	/* -t: sbx-init gives the command a terminal of the sandbox's own
	 * devpts, of this size, and sends its master to sbx. */
	int		  tty;
	unsigned	  tty_rows, tty_cols;
	/* Per-agent uids as root (idalloc.c), an agent that opted in: the
	 * host path of workspace/shared (02770, the shared group's), bound
	 * at /workspace/shared; NULL: not there. */
	const char	 *shared_dir;
	/* -S: sbx-init is a session's pid 1 (lib/exec/warm.c); the
	 * command is not run. */
	int		  session;
};

/* Build the full bwrap argv (argv[0] = bwrap path) into out. */
int	sbx_sandbox_argv(const struct sbx_sandbox *, struct sbx_strv *out,
	    struct sbx_error *);
/*
 * Image mode (image_fd open): every destination of the bwrap command line
 * v (sbx_sandbox_argv's) that lies in a directory bound from the image or
 * the agent's copy must be reached there without a symbolic link, last
 * component included.  0, or -1 (rejected, reason rootfs_unsafe).
 */
int	sbx_sandbox_check_dests(const struct sbx_sandbox *,
	    const struct sbx_strv *v, struct sbx_error *);
/* Nonzero when this process runs inside an sbx sandbox (its pid 1 is
 * sbx-init at SBX_IN_INIT). */
int	sbx_sandbox_inside(void);
/* -1 with a rejected/nested_sandbox error (and its hint) when inside
 * one: sbx exec refuses to start a sandbox there. */
int	sbx_sandbox_refuse_nested(struct sbx_error *);
/* The system CA bundle as seen inside (the image's own in image mode),
 * or NULL when there is none. */
const char	*sbx_sandbox_ca_bundle(const struct sbx_sandbox *);
/* The host paths a host-mode /etc holds (the CA bundle where it is not
 * under /etc/ssl, resolv.conf with host networking): at most max of them
 * go to out; returns how many. */
size_t	sbx_sandbox_etc_copies(const struct sbx_sandbox *, const char **out,
	    size_t max);
/* The directories of that /etc bound from the host over the tree. */
size_t	sbx_sandbox_etc_mounts(const char **out, size_t max);
/* Contents of the synthesized /etc/passwd, /etc/group and /etc/hosts. */
int	sbx_sandbox_etc(const struct sbx_sandbox *, uid_t, gid_t,
	    struct sbx_buf *passwd, struct sbx_buf *group, struct sbx_buf *hosts);

#endif
