/*
 * init-guard-sock.c: sbx-init's guard (see cmd/init-guard.c) of the
 * socket calls: connect, bind, and the sends that can carry an address
 * (sendto, sendmsg, sendmmsg).
 *
 * The kernel's seccomp_unotify(2) warns that a supervisor answering
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE lets the kernel do the call on what
 * the caller holds *then*: another thread can dup2() another socket onto
 * the descriptor, or rewrite the address in memory, between the check
 * and the call.  So no socket call is ever continued.  pid 1 takes the
 * caller's socket itself (pidfd_getfd: the same open file, not a copy of
 * it), reads the address once, decides on that file and that copy, and
 * performs the call on them: connecting or binding the duplicate
 * connects or binds the caller's socket, sending on it sends from it.
 *
 * A unix path peer is decided on its file, opened once (O_PATH) as the
 * kernel would resolve the path, and reached through that descriptor
 * (/proc/self/fd/N): what was checked is what is connected to.  It may be
 * reached when it is in allow_unix_sockets (-A), or when a socket of the
 * sandbox's own network namespace is bound to it (the netlink socket
 * diagnostics, UNIX_DIAG_VFS, list them; a listener outside the sandbox
 * is in another namespace).  A stream peer is checked once more after
 * connecting: its listener must have a pid in the sandbox's pid namespace
 * (SO_PEERCRED), else the connection is shut down.  Without the
 * diagnostics (a kernel without unix_diag), that second check is the
 * only one for stream peers, and datagram peers are refused.
 *
 * A call that may block (a blocking socket, no MSG_DONTWAIT) is performed
 * by a short-lived child of pid 1, which answers it and exits: pid 1
 * itself never waits on a peer, so it keeps serving the other calls (the
 * listener the peer may be waiting for could be one of them).
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <sys/un.h>

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/seccomp.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "initguard.h"
#include "initproto.h"

#include "init-guard-int.h"

/* What one guarded send copies: the kernel's own limits are near these
 * (a datagram is bounded by the send buffer); a longer stream send is
 * cut short, as a send may be. */
#define MAX_DATA	(1 << 20)
#define MAX_CTL		65536
#define MAX_MMSG	1024	/* UIO_MAXIOV, as the kernel clamps */

struct smsg {
	struct msghdr		 m;
	struct sockaddr_storage	 name;
	struct iovec		 iov;
	char			*data, *ctl;	/* ours, to free */
	int			 tfd;	/* the unix peer reached, or -1 */
};

struct job {
	uint64_t		 id;
	pid_t			 pid;
	int			 nr, sfd, flags, status_fd;
	/* connect */
	struct sockaddr_storage	 addr;
	socklen_t		 alen;
	int			 tfd, check;
	char			 where[PATH_MAX];
	/* sends */
	struct smsg		*msgs;
	int			 nmsgs, memfd, first;
	long long		 sent;
	uint64_t		 vec;
	int			 fds[MAX_MMSG];	/* taken for SCM_RIGHTS */
	int			 nfds;
};

static int	told_diag, told_take;

#ifndef PIDFD_THREAD
#define PIDFD_THREAD	O_EXCL
#endif

/* A thread's process (its thread group's leader). */
static pid_t
tgid_of(pid_t tid)
{
	char	 p[64], line[128];
	FILE	*f;
	pid_t	 t = -1;

	snprintf(p, sizeof(p), "/proc/%d/status", (int)tid);
	if ((f = fopen(p, "re")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "Tgid:", 5) == 0) {
			t = (pid_t)strtol(line + 5, NULL, 10);
			break;
		}
	fclose(f);
	return t;
}

/*
 * The caller's open file at descriptor fd (pidfd_getfd).  The caller is
 * a thread (the notification names its tid): a pidfd of that very thread
 * (PIDFD_THREAD, Linux 6.9) reaches its own descriptor table; before
 * that, its process's, which is the same table unless the thread was
 * made without CLONE_FILES (then the file taken is its process's; what
 * pid 1 performs is still only ever what it checked).
 */
static int
take_fd(pid_t pid, int fd)
{
	pid_t	 tg;
	int	 pfd, f, err;

	if ((pfd = (int)syscall(SYS_pidfd_open, pid, PIDFD_THREAD)) == -1 &&
	    errno == EINVAL && (tg = tgid_of(pid)) > 0)
		pfd = (int)syscall(SYS_pidfd_open, tg, 0);
	if (pfd == -1)
		return -1;
	f = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
	err = errno;
	close(pfd);
	errno = err;
	return f;
}

static int
rd(int mfd, uint64_t addr, void *buf, size_t len)
{
	if (len == 0)
		return 0;
	if (addr == 0 || pread(mfd, buf, len, (off_t)addr) != (ssize_t)len)
		return errno = EFAULT, -1;
	return 0;
}

static int
sock_allowed(const struct stat *st)
{
	int	 i;

	for (i = 0; i < nsocks; i++)
		if (socks[i].dev == (unsigned long long)st->st_dev &&
		    socks[i].ino == (unsigned long long)st->st_ino)
			return 1;
	return 0;
}

/*
 * Is a socket of this network namespace (pid 1's, the sandbox's) bound
 * to this file?  1 yes, 0 no, -1 cannot tell (no unix_diag, or an inode
 * number wider than the 32 bits the diagnostics report).
 */
static int
diag_has(const struct stat *st)
{
	struct {
		struct nlmsghdr		 nlh;
		struct unix_diag_req	 r;
	}			 req;
	struct sockaddr_nl	 nl;
	union {
		char		 b[32768];
		struct nlmsghdr	 align;
	}			 u;
	struct nlmsghdr		*h;
	struct unix_diag_msg	*m;
	struct rtattr		*rta;
	struct unix_diag_vfs	 v;
	unsigned		 kdev;
	int			 n, fd, found = 0, done = 0, alen;

	if ((unsigned long long)st->st_ino > UINT32_MAX)
		return -1;
	/* The kernel's own encoding of a device number (MKDEV). */
	kdev = (major(st->st_dev) << 20) | (minor(st->st_dev) & 0xfffff);
	if ((fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
	    NETLINK_SOCK_DIAG)) == -1)
		return -1;
	memset(&req, 0, sizeof(req));
	req.nlh.nlmsg_len = sizeof(req);
	req.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	req.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.nlh.nlmsg_seq = 1;
	req.r.sdiag_family = AF_UNIX;
	req.r.udiag_states = ~0u;
	req.r.udiag_show = UDIAG_SHOW_VFS;
	memset(&nl, 0, sizeof(nl));
	nl.nl_family = AF_NETLINK;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&nl,
	    sizeof(nl)) != (ssize_t)sizeof(req)) {
		close(fd);
		return -1;
	}
	while (!done && !found) {
		if ((n = (int)recv(fd, u.b, sizeof(u.b), 0)) <= 0) {
			close(fd);
			return -1;
		}
		for (h = &u.align; NLMSG_OK(h, n);
		    h = NLMSG_NEXT(h, n)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				close(fd);
				return -1;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			rta = (struct rtattr *)(m + 1);
			alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
			for (; RTA_OK(rta, alen); rta = RTA_NEXT(rta, alen)) {
				if (rta->rta_type != UNIX_DIAG_VFS ||
				    RTA_PAYLOAD(rta) < sizeof(v))
					continue;
				memcpy(&v, RTA_DATA(rta), sizeof(v));
				if (v.udiag_vfs_ino == (uint32_t)st->st_ino &&
				    v.udiag_vfs_dev == kdev)
					found = 1;
			}
		}
	}
	close(fd);
	return found;
}

/* The path of a refused peer for the report: absolute as sbx sees it. */
static void
report_sock(int status_fd, int base, const char *path)
{
	char	 full[PATH_MAX];

	if (path[0] == '/')
		report_path(status_fd, SBX_INIT_W_SOCKDENY, path);
	else if (dir_path(base, path, full, sizeof(full)) == 0)
		report_path(status_fd, SBX_INIT_W_SOCKDENY, full);
}

/*
 * The peer a unix path names (sun, len bytes, a path not abstract), for a
 * socket of type: its file opened O_PATH, as the kernel resolves the path
 * (from the caller's working directory, following symlinks), when it may
 * be reached; *check says the peer's credentials must be checked after
 * connecting.  -1 with errno otherwise: EACCES when refused (reported),
 * or the kernel's own answer (ENOENT, ECONNREFUSED: not a socket, ...).
 */
static int
peer_file(int status_fd, pid_t pid, const struct sockaddr_un *sun,
    socklen_t len, int type, int *check, char *where, size_t cap)
{
	struct stat	 st;
	char		 path[sizeof(sun->sun_path) + 1], p[64];
	size_t		 n;
	int		 base, tfd, in;

	*check = 0;
	n = strnlen(sun->sun_path, len - offsetof(struct sockaddr_un,
	    sun_path));
	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
	if ((base = open(path[0] == '/' ? "/" : p, O_PATH | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	if (where != NULL) {
		if (path[0] == '/' || dir_path(base, path, where, cap) == -1)
			snprintf(where, cap, "%s", path);
	}
	if ((tfd = openat(base, path, O_PATH | O_CLOEXEC)) == -1) {
		in = errno;
		close(base);
		return errno = in, -1;
	}
	if (fstat(tfd, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		close(tfd);
		close(base);
		return errno = ECONNREFUSED, -1;
	}
	if (sock_allowed(&st)) {
		close(base);
		return tfd;
	}
	in = diag_has(&st);
	if (in == -1 && type == SOCK_DGRAM && !told_diag) {
		told_diag = 1;
		fprintf(stderr, "sbx-init: unix socket guard: the kernel's "
		    "unix socket diagnostics (unix_diag) are unavailable: "
		    "datagrams to socket files are refused\n");
	}
	/*
	 * Stream and seqpacket peers are checked again once connected:
	 * the diagnostics name inodes in 32 bits, and without them the
	 * listener's pid is all there is to go by.
	 */
	if (in == 1 || (in == -1 && type != SOCK_DGRAM)) {
		*check = type != SOCK_DGRAM;
		close(base);
		return tfd;
	}
	report_sock(status_fd, base, path);
	close(tfd);
	close(base);
	return errno = EACCES, -1;
}

/* A unix address naming the file held at tfd, for the kernel to reach. */
static socklen_t
via_fd(struct sockaddr_storage *ss, int tfd)
{
	struct sockaddr_un	*sun = (struct sockaddr_un *)ss;

	memset(ss, 0, sizeof(*ss));
	sun->sun_family = AF_UNIX;
	snprintf(sun->sun_path, sizeof(sun->sun_path), "/proc/self/fd/%d",
	    tfd);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(sun->sun_path) + 1);
}

static int
sock_int(int fd, int opt)
{
	socklen_t	 l = sizeof(int);
	int		 v = -1;

	if (getsockopt(fd, SOL_SOCKET, opt, &v, &l) == -1)
		return -1;
	return v;
}

/*
 * The sends of a job, from message j->first on, with the caller's flags
 * and more.  1 when one would block (more is MSG_DONTWAIT) and nothing
 * can be answered yet: j->first and j->sent say where to go on.  Else 0,
 * with the answer in *val (sendto, sendmsg: the bytes sent; sendmmsg:
 * the messages sent, their msg_len written back) or *err.
 */
static int
sends(struct job *j, int more, long long *val, int *err)
{
	struct smsg	*s;
	unsigned	 len;
	ssize_t		 r;

	*err = 0;
	for (; j->first < j->nmsgs; j->first++) {
		s = &j->msgs[j->first];
		r = sendmsg(j->sfd, &s->m, j->flags | more);
		if (r == -1) {
			if (more && (errno == EAGAIN || errno == EWOULDBLOCK) &&
			    (j->nr == SYS_sendmmsg ? j->first == 0 :
			    j->sent == 0))
				return 1;
			if (errno == EPIPE && !(j->flags & MSG_NOSIGNAL))
				(void)kill(j->pid, SIGPIPE);
			/* After some progress, the progress is the answer. */
			if (j->nr == SYS_sendmmsg ? j->first == 0 :
			    j->sent == 0)
				*err = errno;
			break;
		}
		if (j->nr != SYS_sendmmsg) {
			j->sent += r;
			/*
			 * A stream send cut short by a full buffer: the rest
			 * waits, without the control data, which went with
			 * the first bytes.
			 */
			if (more && (size_t)r < s->iov.iov_len) {
				s->iov.iov_base = (char *)s->iov.iov_base + r;
				s->iov.iov_len -= (size_t)r;
				s->m.msg_control = NULL;
				s->m.msg_controllen = 0;
				return 1;
			}
			break;
		}
		len = (unsigned)r;
		/* msg_len follows the msghdr in struct mmsghdr. */
		if (pwrite(j->memfd, &len, sizeof(len), (off_t)(j->vec +
		    (uint64_t)j->first * sizeof(struct mmsghdr) +
		    offsetof(struct mmsghdr, msg_len))) != (ssize_t)sizeof(len))
			break;
	}
	*val = j->nr == SYS_sendmmsg ? j->first : j->sent;
	return 0;
}

/* Perform the decided call; the answer is sent here. */
static void
run_job(int nfd, struct job *j)
{
	struct ucred	 cr;
	socklen_t	 crl = sizeof(cr);
	long long	 val = 0;
	int		 err = 0;

	if (j->nr == SYS_connect) {
		if (connect(j->sfd, (struct sockaddr *)&j->addr, j->alen) ==
		    -1) {
			err = errno;
			goto out;
		}
		/* The listener's pid as the sandbox sees it: 0 outside. */
		if (j->check && (getsockopt(j->sfd, SOL_SOCKET, SO_PEERCRED,
		    &cr, &crl) == -1 || cr.pid == 0)) {
			(void)shutdown(j->sfd, SHUT_RDWR);
			report_path(j->status_fd, SBX_INIT_W_SOCKDENY,
			    j->where);
			err = EACCES;
		}
		goto out;
	}
	(void)sends(j, 0, &val, &err);
out:
	answer(nfd, j->id, err ? -1 : val, err);
}

/* Perform it here, or in a child when it may block. */
static void
perform(int nfd, struct job *j, int may_block)
{
	long long	 val;
	pid_t		 p;
	int		 err;

	if (!may_block) {
		run_job(nfd, j);
		return;
	}
	/*
	 * A send is tried without waiting first: most complete at once,
	 * and a child per send would cost far more than the send.
	 */
	if (j->nr != SYS_connect && sends(j, MSG_DONTWAIT, &val, &err) == 0) {
		answer(nfd, j->id, err ? -1 : val, err);
		return;
	}
	if ((p = fork()) == 0) {
		run_job(nfd, j);
		_exit(0);
	}
	if (p == -1)
		answer(nfd, j->id, -1, EAGAIN);
	/* pid 1's loop reaps it (waitpid(-1)). */
}

/*
 * One message of the caller's (hdr read from its memory) copied into
 * ours: the address, the data (one buffer), the control data with the
 * descriptors of SCM_RIGHTS taken from the caller.  *total counts the
 * data copied so far for the job.  0, or -1 with errno.
 */
static int
copy_msg(struct job *j, int mfd, const struct msghdr *hdr,
    const struct iovec *one, struct smsg *s, int stream, size_t *total)
{
	struct iovec	*iov = NULL;
	struct cmsghdr	*c;
	size_t		 want = 0, got = 0, k, room;
	char		*data = NULL, *ctl = NULL;
	int		*fdp, nf, i;

	memset(s, 0, sizeof(*s));
	s->tfd = -1;
	if (hdr->msg_name != NULL && hdr->msg_namelen > 0) {
		s->m.msg_namelen = hdr->msg_namelen > sizeof(s->name) ?
		    sizeof(s->name) : hdr->msg_namelen;
		if (rd(mfd, (uint64_t)(uintptr_t)hdr->msg_name, &s->name,
		    s->m.msg_namelen) == -1)
			return -1;
		s->m.msg_name = &s->name;
	}
	if (hdr->msg_iovlen > MAX_MMSG)
		return errno = EMSGSIZE, -1;
	if (hdr->msg_iovlen > 0) {
		if ((iov = calloc(hdr->msg_iovlen, sizeof(*iov))) == NULL)
			return -1;
		/* sendto's one buffer is an iovec of ours already. */
		if (one != NULL)
			memcpy(iov, one, sizeof(*iov));
		else if (rd(mfd, (uint64_t)(uintptr_t)hdr->msg_iov, iov,
		    hdr->msg_iovlen * sizeof(*iov)) == -1)
			goto fail;
	}
	for (k = 0; k < hdr->msg_iovlen; k++)
		want += iov[k].iov_len;
	room = MAX_DATA - *total;
	if (want > room) {
		/* A datagram is whole or not at all. */
		if (!stream || room == 0) {
			errno = EMSGSIZE;
			goto fail;
		}
		want = room;
	}
	if ((data = malloc(want ? want : 1)) == NULL)
		goto fail;
	for (k = 0; k < hdr->msg_iovlen && got < want; k++) {
		size_t l = iov[k].iov_len < want - got ? iov[k].iov_len :
		    want - got;

		if (rd(mfd, (uint64_t)(uintptr_t)iov[k].iov_base, data + got,
		    l) == -1)
			goto fail;
		got += l;
	}
	*total += got;
	s->data = data;
	s->iov.iov_base = data;
	s->iov.iov_len = got;
	s->m.msg_iov = &s->iov;
	s->m.msg_iovlen = 1;
	if (hdr->msg_control != NULL && hdr->msg_controllen > 0) {
		if (hdr->msg_controllen > MAX_CTL) {
			errno = ENOBUFS;
			goto fail;
		}
		if ((ctl = malloc(hdr->msg_controllen)) == NULL ||
		    rd(mfd, (uint64_t)(uintptr_t)hdr->msg_control, ctl,
		    hdr->msg_controllen) == -1)
			goto fail;
		s->ctl = ctl;
		s->m.msg_control = ctl;
		s->m.msg_controllen = hdr->msg_controllen;
		/* Descriptors are numbers in the caller's table. */
		for (c = CMSG_FIRSTHDR(&s->m); c != NULL;
		    c = CMSG_NXTHDR(&s->m, c)) {
			if (c->cmsg_level != SOL_SOCKET ||
			    c->cmsg_type != SCM_RIGHTS ||
			    c->cmsg_len < CMSG_LEN(0))
				continue;
			fdp = (int *)CMSG_DATA(c);
			nf = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
			for (i = 0; i < nf; i++) {
				int cfd, f;

				memcpy(&cfd, fdp + i, sizeof(int));
				if (j->nfds == MAX_MMSG) {
					errno = ETOOMANYREFS;
					goto fail;
				}
				if ((f = take_fd(j->pid, cfd)) == -1) {
					errno = EBADF;
					goto fail;
				}
				j->fds[j->nfds++] = f;
				memcpy(fdp + i, &f, sizeof(int));
			}
		}
	}
	s->m.msg_flags = 0;
	free(iov);
	return 0;
fail:
	k = (size_t)errno;
	free(iov);
	free(data);
	free(ctl);
	s->data = s->ctl = NULL;
	s->m.msg_iov = NULL;
	s->m.msg_control = NULL;
	errno = (int)k;
	return -1;
}

static void
job_free(struct job *j)
{
	int	 i;

	for (i = 0; j->msgs != NULL && i < j->nmsgs; i++) {
		free(j->msgs[i].data);
		free(j->msgs[i].ctl);
		if (j->msgs[i].tfd >= 0)
			close(j->msgs[i].tfd);
	}
	free(j->msgs);
	for (i = 0; i < j->nfds; i++)
		close(j->fds[i]);
	if (j->tfd >= 0)
		close(j->tfd);
	if (j->memfd >= 0)
		close(j->memfd);
	if (j->sfd >= 0)
		close(j->sfd);
	free(j);
}

/*
 * sendto(fd, buf, len, flags, addr, alen) with an address, sendmsg,
 * sendmmsg.  Only a unix datagram socket sends to the address it is
 * given (a stream socket refuses one, a seqpacket socket ignores it):
 * that address is decided as connect's is.
 */
static int
prep_send(struct job *j, int mfd, const uint64_t *a, int stream, int dgram)
{
	struct msghdr	 hdr;
	struct mmsghdr	 mh;
	struct iovec	 one;
	size_t		 total = 0;
	unsigned	 i, n;
	char		 p[64];

	if (j->nr == SYS_sendmmsg) {
		n = (unsigned)a[2] > MAX_MMSG ? MAX_MMSG : (unsigned)a[2];
		j->vec = a[1];
		j->flags = (int)a[3];
		snprintf(p, sizeof(p), "/proc/%d/mem", (int)j->pid);
		if ((j->memfd = open(p, O_RDWR | O_CLOEXEC)) == -1)
			return errno = EPERM, -1;
	} else {
		n = 1;
		j->flags = (int)(j->nr == SYS_sendto ? a[3] : a[2]);
	}
	if ((j->msgs = calloc(n ? n : 1, sizeof(*j->msgs))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (j->nr == SYS_sendto) {
			memset(&hdr, 0, sizeof(hdr));
			one.iov_base = (void *)(uintptr_t)a[1];
			one.iov_len = (size_t)a[2];
			/* The kernel takes at most a sockaddr_storage. */
			if (a[5] > sizeof(struct sockaddr_storage))
				return errno = EINVAL, -1;
			hdr.msg_name = (void *)(uintptr_t)a[4];
			hdr.msg_namelen = (socklen_t)a[5];
			hdr.msg_iovlen = 1;
			if (copy_msg(j, mfd, &hdr, &one, &j->msgs[0], stream,
			    &total) == -1)
				return -1;
		} else {
			if (j->nr == SYS_sendmsg) {
				if (rd(mfd, a[1], &hdr, sizeof(hdr)) == -1)
					return -1;
			} else {
				if (rd(mfd, a[1] + (uint64_t)i * sizeof(mh),
				    &mh, sizeof(mh)) == -1)
					break;
				hdr = mh.msg_hdr;
			}
			if (copy_msg(j, mfd, &hdr, NULL, &j->msgs[i], stream,
			    &total) == -1) {
				if (i == 0)
					return -1;
				break;	/* send those before */
			}
		}
		j->nmsgs = (int)i + 1;
		/* The unix datagram's peer, decided on its file. */
		if (dgram && j->msgs[i].m.msg_name != NULL &&
		    j->msgs[i].m.msg_namelen > offsetof(struct sockaddr_un,
		    sun_path) && j->msgs[i].name.ss_family == AF_UNIX &&
		    ((struct sockaddr_un *)&j->msgs[i].name)->sun_path[0] !=
		    '\0') {
			int chk;

			j->msgs[i].tfd = peer_file(j->status_fd, j->pid,
			    (struct sockaddr_un *)&j->msgs[i].name,
			    j->msgs[i].m.msg_namelen, SOCK_DGRAM, &chk, NULL,
			    0);
			if (j->msgs[i].tfd == -1) {
				if (i == 0)
					return -1;
				j->nmsgs = (int)i;
				break;
			}
			j->msgs[i].m.msg_namelen = via_fd(&j->msgs[i].name,
			    j->msgs[i].tfd);
		}
		if (total >= MAX_DATA)
			break;
	}
	if (n == 0)
		j->nmsgs = 0;
	return 0;
}

/*
 * bind(fd, addr, len).  A unix socket's path creates a name, which must
 * not be one the guard refuses (-N).  The address the socket keeps is
 * the string it was bound with, which programs read back (getsockname,
 * Python's multiprocessing hands it to its clients): it is bound with the
 * caller's own string, from the caller's working directory, when its last
 * name is none of the refused names, wherever the path may lead by the
 * time the kernel resolves it.  A path whose last name is refused
 * somewhere is bound from the checked directory by that name alone, so
 * that a directory swapped meanwhile cannot move it (the socket then
 * keeps the last name as its address).
 */
static int
do_bind(struct job *j, int mfd, const uint64_t *a)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_un	*sun = (struct sockaddr_un *)&ss, one;
	char			 path[sizeof(sun->sun_path) + 1], p[64];
	char			 name[NAME_MAX + 1], full[PATH_MAX];
	const char		*last;
	socklen_t		 len = (socklen_t)a[2];
	mode_t			 old;
	size_t			 n;
	int			 i, dfd = -1, here, slash, refused = 0, rc, err;

	if (a[2] > sizeof(ss))
		return errno = EINVAL, -1;
	memset(&ss, 0, sizeof(ss));
	if (rd(mfd, a[1], &ss, len) == -1)
		return -1;
	if (sock_int(j->sfd, SO_DOMAIN) != AF_UNIX ||
	    ss.ss_family != AF_UNIX || len <= offsetof(struct sockaddr_un,
	    sun_path) || sun->sun_path[0] == '\0')
		return bind(j->sfd, (struct sockaddr *)&ss, len);
	n = strnlen(sun->sun_path, len - offsetof(struct sockaddr_un,
	    sun_path));
	memcpy(path, sun->sun_path, n);
	path[n] = '\0';
	last = strrchr(path, '/');
	last = last == NULL ? path : last + 1;
	for (i = 0; i < nblocks; i++)
		if (strcmp(blocks[i].name, last) == 0)
			refused = 1;
	if ((here = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	if (refused) {
		if (resolve(j->pid, AT_FDCWD, path, 0, &dfd, name, &slash) ==
		    -1)
			goto fail;
		/* "name/" is no socket's name: the kernel's answer. */
		if (slash) {
			errno = ENOENT;
			goto fail;
		}
		if (blocked(dfd, name)) {
			if (dir_path(dfd, name, full, sizeof(full)) == 0)
				report_path(j->status_fd, SBX_INIT_W_FSDENY,
				    full);
			errno = EROFS;
			goto fail;
		}
		memset(&one, 0, sizeof(one));
		one.sun_family = AF_UNIX;
		memcpy(one.sun_path, name, strlen(name) + 1);
		len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		    strlen(name) + 1);
		memcpy(&ss, &one, sizeof(one));
	} else {
		snprintf(p, sizeof(p), "/proc/%d/cwd", (int)j->pid);
		if ((dfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
			goto fail;
	}
	if (fchdir(dfd) == -1)
		goto fail;
	/* The socket file's mode is the caller's umask's. */
	old = umask(caller_umask(j->pid));
	rc = bind(j->sfd, (struct sockaddr *)&ss, len);
	err = errno;
	umask(old);
	(void)!fchdir(here);
	close(here);
	if (rc == -1 && refused)
		maybe_report(j->status_fd, dfd, name, err);
	close(dfd);
	return errno = err, rc;
fail:
	err = errno;
	(void)!fchdir(here);
	close(here);
	if (dfd >= 0)
		close(dfd);
	return errno = err, -1;
}

void
serve_sock(int nfd, struct seccomp_notif *req, int mfd, int status_fd)
{
	struct job		*j;
	const uint64_t		*a = (const uint64_t *)req->data.args;
	int			 type, dom, fl, err = 0, block;

	if ((j = calloc(1, sizeof(*j))) == NULL) {
		answer(nfd, req->id, -1, ENOMEM);
		return;
	}
	j->id = req->id;
	j->pid = (pid_t)req->pid;
	j->nr = req->data.nr;
	j->status_fd = status_fd;
	j->tfd = j->memfd = -1;
	/*
	 * The caller's socket itself.  Fail closed: without pidfd_getfd
	 * (Linux 5.6) or the right to use it on the caller (one that made
	 * itself undumpable), the call is refused, never continued.
	 */
	if ((j->sfd = take_fd(j->pid, (int)a[0])) == -1) {
		err = errno == EBADF ? EBADF : EPERM;
		if (err == EPERM && !told_take++)
			fprintf(stderr, "sbx-init: unix socket guard: cannot "
			    "take the caller's socket (pidfd_getfd): %s; the "
			    "call is refused\n", strerror(errno));
		goto done;
	}
	/* The pid was the caller's when the descriptor was taken. */
	if (!still_valid(nfd, req->id)) {
		err = ENOENT;
		goto done;
	}
	if ((dom = sock_int(j->sfd, SO_DOMAIN)) == -1 ||
	    (type = sock_int(j->sfd, SO_TYPE)) == -1) {
		err = errno == ENOTSOCK ? ENOTSOCK : EBADF;
		goto done;
	}
	fl = fcntl(j->sfd, F_GETFL);
	block = fl != -1 && !(fl & O_NONBLOCK);
	switch (j->nr) {
	case SYS_bind:
		if (do_bind(j, mfd, a) == -1) {
			err = errno;
			goto done;
		}
		goto done;
	case SYS_connect:
		if (a[2] > sizeof(j->addr)) {
			err = EINVAL;
			goto done;
		}
		j->alen = (socklen_t)a[2];
		if (rd(mfd, a[1], &j->addr, j->alen) == -1) {
			err = errno;
			goto done;
		}
		if (dom == AF_UNIX && j->addr.ss_family == AF_UNIX &&
		    j->alen > offsetof(struct sockaddr_un, sun_path) &&
		    ((struct sockaddr_un *)&j->addr)->sun_path[0] != '\0') {
			if ((j->tfd = peer_file(status_fd, j->pid,
			    (struct sockaddr_un *)&j->addr, j->alen, type,
			    &j->check, j->where, sizeof(j->where))) == -1) {
				err = errno;
				goto done;
			}
			j->alen = via_fd(&j->addr, j->tfd);
		}
		perform(nfd, j, block);
		job_free(j);
		return;
	default:	/* sendto, sendmsg, sendmmsg */
		if (prep_send(j, mfd, a, type == SOCK_STREAM,
		    dom == AF_UNIX && type == SOCK_DGRAM) == -1) {
			err = errno;
			goto done;
		}
		perform(nfd, j, block && !(j->flags & MSG_DONTWAIT));
		job_free(j);
		return;
	}
done:
	job_free(j);
	answer(nfd, req->id, err ? -1 : 0, err);
}
