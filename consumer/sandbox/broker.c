// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The broker (<evring/sandbox.h>): a helper process that keeps, for a confined
 * tool, the three rights it still needs: listing the processes one may attach
 * to, connecting to an agent (with every check of evr_client_open_socket()),
 * and creating new files in one directory.
 *
 * Protocol, over a SOCK_SEQPACKET socketpair (one message each way, in order):
 * the tool sends a fixed-size struct broker_req; the helper answers with a
 * struct broker_rep, followed in the same message by the pids of a LIST, and
 * carrying the descriptors of an ATTACH (socket, then pidfd if any) or a
 * CREATE as SCM_RIGHTS. The tool's side holds a mutex across each exchange, so
 * any thread may ask.
 *
 * The helper trusts nothing in a request: a pid is checked as any consumer
 * checks it, a file name may not contain '/' nor be "." or "..", and O_EXCL
 * never opens an existing file. It confines itself too (below), ignores the
 * terminal's signals (Ctrl-C is for the tool, which then closes the socket),
 * and exits when the socket closes or the tool dies.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <pwd.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/sandbox.h>
#include <evring/symbols.h>		/* EVR_PERF_MAP_MAX: only the header */
#include <evring/untrusted-file.h>

#include "sandbox-internal.h"

#define LIST_MAX 16384u
#define FDS_MAX 3		/* descriptors one reply carries at most (ATTACH's) */

enum broker_op { OP_LIST = 1, OP_ATTACH, OP_CREATE, OP_PERF_MAP, OP_CHECK };

#define CHECK_MAX 64u		/* pids one CHECK answers with at most */

struct broker_req {
	uint32_t op;
	int32_t pid;
	uint32_t uid;			/* PERF_MAP: the owner the map must have */
	char name[256];
};

struct broker_rep {
	int32_t err;			/* 0 or -errno (LIST: >= 0 directories refused) */
	uint32_t n;			/* LIST: pids that follow; ATTACH/CREATE: fds carried */
	uint32_t kinds;			/* ATTACH: which follow the socket (ATTACH_*);
					 * CHECK: processes it still awaits */
	char msg[512];
};

/* ATTACH's descriptors after the socket, in this order, each where it could be had. */
#define ATTACH_PIDFD	1u
#define ATTACH_STAT	2u	/* /proc/PID/stat: the tool reads the process's state */

struct evr_broker {
	pthread_mutex_t lock;
	int sock;
	pid_t pid;
};

/* ---- the helper ------------------------------------------------------------- */

/* The descriptors a reply carried (or was to carry), -1 where none. */
static void close_fds(const int fds[FDS_MAX])
{
	for (int i = 0; i < FDS_MAX; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static int send_rep(int sock, const struct broker_rep *rep, const void *extra, size_t extra_len,
		    const int *fds, unsigned int nfds)
{
	struct iovec iov[2] = { { (void *)rep, sizeof(*rep) }, { (void *)extra, extra_len } };
	union {
		char buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = extra_len ? 2 : 1 };

	if (nfds) {
		struct cmsghdr *cm;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(cm), fds, nfds * sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static bool name_ok(const char *name)
{
	return name[0] && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/*
 * /tmp/perf-PID.map, read-only, when it is a regular file of user @uid or root
 * (a perf map written by anyone else is not trusted, as perf does), never
 * through a symbolic link, never blocking on whatever else is planted there.
 */
static int open_perf_map(int32_t pid, uint32_t uid, int *ret_fd, char *msg, size_t len)
{
	const struct evr_untrusted_rules rules = {
		.owner = (uid_t)uid, .max_size = EVR_PERF_MAP_MAX, .nofollow = true,
	};
	char path[64];
	int fd;

	if (pid <= 0) {
		snprintf(msg, len, "bad pid %d", (int)pid);
		return -EINVAL;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	fd = evr_untrusted_open(AT_FDCWD, path, &rules, NULL);
	if (fd == -EPERM || fd == -EFBIG) {
		snprintf(msg, len, "%s is not a regular file of uid %u under %u MiB: not trusted",
			 path, uid, (unsigned)(EVR_PERF_MAP_MAX >> 20));
		return fd;
	}
	if (fd < 0) {
		snprintf(msg, len, "cannot open %s: %s", path, strerror(-fd));
		return fd;
	}
	*ret_fd = fd;
	return 0;
}

static void serve(int sock, int dirfd)
{
	struct evr_proc_check *check = NULL;	/* CHECK's: made at the first */

	for (;;) {
		struct broker_req req;
		struct broker_rep rep = { 0 };
		ssize_t n = recv(sock, &req, sizeof(req), 0);
		int fds[FDS_MAX] = { -1, -1, -1 };

		if (n == 0 || (n < 0 && errno != EINTR)) {
			evr_proc_check_free(check);
			return;
		}
		if (n != (ssize_t)sizeof(req)) {
			rep.err = -EPROTO;
			snprintf(rep.msg, sizeof(rep.msg), "malformed request to the broker");
			(void)send_rep(sock, &rep, NULL, 0, NULL, 0);
			continue;
		}
		req.name[sizeof(req.name) - 1] = '\0';
		switch (req.op) {
		case OP_LIST: {
			pid_t *v = NULL;
			uint32_t nv = 0;

			rep.err = evr_process_list_checked(&v, &nv, rep.msg, sizeof(rep.msg));
			if (rep.err < 0)
				snprintf(rep.msg, sizeof(rep.msg), "cannot list processes: %s",
					 strerror(-rep.err));
			rep.n = nv < LIST_MAX ? nv : LIST_MAX;
			(void)send_rep(sock, &rep, v, rep.n * sizeof(*v), NULL, 0);
			free(v);
			break;
		}
		case OP_ATTACH: {
			int sfd = -1, pidfd = -1, statfd = -1, out[FDS_MAX];
			char path[64];

			rep.err = evr_client_open_socket(req.pid, &sfd, &pidfd, rep.msg,
							 sizeof(rep.msg));
			if (rep.err == 0) {
				/* Opened after the peer check: that process's, whatever comes. */
				snprintf(path, sizeof(path), "/proc/%d/stat", (int)req.pid);
				statfd = open(path, O_RDONLY | O_CLOEXEC);
				out[rep.n++] = sfd;
				if (pidfd >= 0) {
					rep.kinds |= ATTACH_PIDFD;
					out[rep.n++] = pidfd;
				}
				if (statfd >= 0) {
					rep.kinds |= ATTACH_STAT;
					out[rep.n++] = statfd;
				}
			}
			(void)send_rep(sock, &rep, NULL, 0, out, rep.n);
			for (int k = 0; k < (int)rep.n; k++)
				close(out[k]);
			break;
		}
		case OP_CREATE:
			if (dirfd < 0 || !name_ok(req.name)) {
				rep.err = -EINVAL;
				snprintf(rep.msg, sizeof(rep.msg), "the broker may not create '%s'",
					 req.name);
			} else {
				fds[0] = openat(dirfd, req.name,
						O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
						0644);
				rep.err = fds[0] < 0 ? -errno : 0;
				if (fds[0] < 0)
					snprintf(rep.msg, sizeof(rep.msg), "cannot create %s: %s",
						 req.name, strerror(errno));
				rep.n = fds[0] >= 0;
			}
			(void)send_rep(sock, &rep, NULL, 0, fds, rep.n);
			break;
		case OP_CHECK: {
			pid_t v[CHECK_MAX];
			uint32_t nv = 0;

			rep.err = check ? 0 : evr_proc_check_new(&check);
			if (rep.err == 0)
				rep.err = evr_proc_check_run(check, v, CHECK_MAX, &nv);
			if (rep.err < 0)
				snprintf(rep.msg, sizeof(rep.msg), "cannot look at /proc: %s",
					 strerror(-rep.err));
			rep.n = rep.err < 0 ? 0 : nv;
			rep.kinds = evr_proc_check_pending(check);
			(void)send_rep(sock, &rep, v, rep.n * sizeof(*v), NULL, 0);
			break;
		}
		case OP_PERF_MAP:
			rep.err = open_perf_map(req.pid, req.uid, &fds[0], rep.msg, sizeof(rep.msg));
			rep.n = fds[0] >= 0;
			(void)send_rep(sock, &rep, NULL, 0, fds, rep.n);
			break;
		default:
			rep.err = -EOPNOTSUPP;
			snprintf(rep.msg, sizeof(rep.msg), "unknown request to the broker");
			(void)send_rep(sock, &rep, NULL, 0, NULL, 0);
			break;
		}
		close_fds(fds);
	}
}

/*
 * The helper's own filter: what finding, checking and connecting to agents,
 * listing runtime directories and creating files in its directory need. Opens
 * are read-only, except creating (exactly the flags serve() uses) relative to
 * its directory; names with '/' are refused before that. No exec, no signals to
 * others, no sockets but Unix ones, nothing executable mapped.
 */
static int helper_confine(int dirfd)
{
	static const int calls[] = {
		SCMP_SYS(connect), SCMP_SYS(setsockopt), SCMP_SYS(getsockopt), SCMP_SYS(sendmsg),
		SCMP_SYS(recvmsg), SCMP_SYS(sendto), SCMP_SYS(recvfrom), SCMP_SYS(fcntl),
		SCMP_SYS(getdents64), SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(statx),
		SCMP_SYS(stat), SCMP_SYS(lstat), SCMP_SYS(access), SCMP_SYS(faccessat),
		SCMP_SYS(faccessat2), SCMP_SYS(lseek), SCMP_SYS(pidfd_open), SCMP_SYS(getuid),
		SCMP_SYS(geteuid), SCMP_SYS(getgid), SCMP_SYS(getegid), SCMP_SYS(poll),
		/* A container's runtime directory: links resolved against its root. */
		SCMP_SYS(readlinkat),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r;

	if (!ctx)
		return -ENOMEM;
	r = evr_sandbox_base(ctx);
	if (r == 0)
		r = evr_sandbox_allow_calls(ctx, calls, sizeof(calls) / sizeof(calls[0]));
	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(socket), 0, SCMP_CMP_EQ, AF_UNIX, 0);
	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(openat), 2, SCMP_CMP_MASKED_EQ,
					 O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY);
	if (r == 0)
		r = evr_sandbox_allow_if(ctx, SCMP_SYS(open), 1, SCMP_CMP_MASKED_EQ,
					 O_ACCMODE | O_CREAT | O_TRUNC, O_RDONLY);
	if (r == 0 && dirfd >= 0) {
		const struct scmp_arg_cmp cmp[2] = {
			{ .arg = 0, .op = SCMP_CMP_EQ, .datum_a = (uint64_t)dirfd },
			{ .arg = 2, .op = SCMP_CMP_EQ,
			  .datum_a = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC },
		};

		r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, SCMP_SYS(openat), 2, cmp);
	}
	return evr_sandbox_load(ctx, r, NULL, 0);
}

/* Close every descriptor but the standard ones, @keep1 and @keep2. */
static void close_others(int keep1, int keep2)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		int fd = atoi(e->d_name);

		if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd <= 2 || fd == keep1 ||
		    fd == keep2 || fd == dirfd(d))
			continue;
		close(fd);
	}
	closedir(d);
}

static void helper_main(int sock, int dirfd, pid_t parent)
{
	static const int quiet[] = { SIGINT, SIGQUIT, SIGHUP, SIGTERM, SIGPIPE, SIGTSTP };

	/* Gone with the tool, even if it is killed; its Ctrl-C is its own business. */
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN);
	close_others(sock, dirfd);
	/* The user database is read once now: a later getpwuid_r() (naming the
	 * owner of a directory or a process) then loads no NSS module, which would
	 * map code. */
	(void)getpwuid(0);
	(void)prctl(PR_SET_NAME, "evring-broker");
	if (helper_confine(dirfd) < 0)
		_exit(1);
	serve(sock, dirfd);
	_exit(0);
}

/* ---- the tool's side ----------------------------------------------------------- */

int evr_broker_new(const char *dir, struct evr_broker **ret, char *errbuf, size_t errlen)
{
	struct evr_broker *b;
	int sv[2], dirfd = -1, err;
	pid_t parent = getpid();

	if (!ret)
		return -EINVAL;
	if (dir) {
		dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dirfd < 0) {
			err = -errno;
			snprintf(errbuf, errlen, "cannot open %s: %s", dir, strerror(-err));
			return err;
		}
	}
	b = calloc(1, sizeof(*b));
	if (!b || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		err = b ? -errno : -ENOMEM;
		snprintf(errbuf, errlen, "cannot start the broker: %s", strerror(-err));
		goto err;
	}
	fflush(NULL);
	b->pid = fork();
	if (b->pid < 0) {
		err = -errno;
		snprintf(errbuf, errlen, "cannot start the broker: %s", strerror(-err));
		close(sv[0]);
		close(sv[1]);
		goto err;
	}
	if (b->pid == 0) {
		close(sv[0]);
		helper_main(sv[1], dirfd, parent);
	}
	close(sv[1]);
	if (dirfd >= 0)
		close(dirfd);
	b->sock = sv[0];
	pthread_mutex_init(&b->lock, NULL);
	*ret = b;
	return 0;

err:
	if (dirfd >= 0)
		close(dirfd);
	free(b);
	return err;
}

void evr_broker_free(struct evr_broker *b)
{
	if (!b)
		return;
	/* EOF on its socket ends the helper; reap it (it does not linger). */
	close(b->sock);
	while (waitpid(b->pid, NULL, 0) < 0 && errno == EINTR)
		;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

/*
 * One exchange: @req out, the reply into @rep, what follows it into @extra (up
 * to @extra_cap bytes; ret_extra_len says how much), up to FDS_MAX fds into @fds.
 * Return: 0 (look at rep->err), or -errno if the helper could not be asked.
 */
static int exchange(struct evr_broker *b, const struct broker_req *req, struct broker_rep *rep,
		    void *extra, size_t extra_cap, size_t *ret_extra_len, int fds[FDS_MAX], char *errbuf,
		    size_t errlen)
{
	union {
		char buf[CMSG_SPACE(FDS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov[2] = { { rep, sizeof(*rep) }, { extra, extra_cap } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = extra_cap ? 2 : 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	ssize_t n = 0;
	int err = 0;

	for (int i = 0; i < FDS_MAX; i++)
		fds[i] = -1;
	pthread_mutex_lock(&b->lock);
	if (send(b->sock, req, sizeof(*req), MSG_NOSIGNAL) != (ssize_t)sizeof(*req))
		err = -errno;
	while (!err && (n = recvmsg(b->sock, &mh, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	pthread_mutex_unlock(&b->lock);
	if (!err && n <= 0)
		err = n == 0 ? -ECONNRESET : -errno;
	if (err < 0) {
		snprintf(errbuf, errlen, "the broker helper is gone: %s", strerror(-err));
		return err;
	}
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
			memcpy(fds, CMSG_DATA(cm), (k < FDS_MAX ? k : FDS_MAX) * sizeof(int));
	}
	if ((size_t)n < sizeof(*rep) || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		close_fds(fds);
		snprintf(errbuf, errlen, "the broker helper answered with a malformed message");
		return -EPROTO;
	}
	rep->msg[sizeof(rep->msg) - 1] = '\0';
	if (ret_extra_len)
		*ret_extra_len = (size_t)n - sizeof(*rep);
	return 0;
}

int evr_broker_attach(struct evr_broker *b, pid_t pid, const char *client_name,
		      struct evr_client **ret, char *errbuf, size_t errlen)
{
	struct broker_req req = { .op = OP_ATTACH, .pid = pid };
	struct broker_rep rep;
	int fds[FDS_MAX], err, k, pidfd, statfd;

	if (!b || !ret)
		return -EINVAL;
	err = exchange(b, &req, &rep, NULL, 0, NULL, fds, errbuf, errlen);
	if (err < 0)
		return err;
	if (rep.err < 0) {
		snprintf(errbuf, errlen, "%s", rep.msg);
		return rep.err;
	}
	if (fds[0] < 0 || rep.n != 1u + !!(rep.kinds & ATTACH_PIDFD) + !!(rep.kinds & ATTACH_STAT)) {
		close_fds(fds);
		snprintf(errbuf, errlen, "the broker helper sent no socket");
		return -EPROTO;
	}
	k = 1;
	pidfd = rep.kinds & ATTACH_PIDFD ? fds[k++] : -1;
	statfd = rep.kinds & ATTACH_STAT ? fds[k++] : -1;
	/* Takes every fd, also on failure. */
	return evr_client_adopt_stat(pid, fds[0], pidfd, statfd, client_name, ret, errbuf, errlen);
}

int evr_broker_process_list(struct evr_broker *b, pid_t **ret, uint32_t *ret_n, char *errbuf,
			    size_t errlen)
{
	struct broker_req req = { .op = OP_LIST };
	struct broker_rep rep;
	size_t len = 0;
	pid_t *v;
	int fds[FDS_MAX], err;

	if (!b || !ret || !ret_n)
		return -EINVAL;
	v = malloc(LIST_MAX * sizeof(*v));
	if (!v)
		return -ENOMEM;
	err = exchange(b, &req, &rep, v, LIST_MAX * sizeof(*v), &len, fds, errbuf, errlen);
	close_fds(fds);
	if (err == 0 && (rep.n > LIST_MAX || len != rep.n * sizeof(*v))) {
		snprintf(errbuf, errlen, "the broker helper answered with a malformed message");
		err = -EPROTO;
	}
	if (err < 0 || rep.err < 0) {
		if (err == 0)
			snprintf(errbuf, errlen, "%s", rep.msg);
		free(v);
		return err < 0 ? err : rep.err;
	}
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", rep.msg);
	*ret = v;
	*ret_n = rep.n;
	return rep.err;
}

int evr_broker_proc_check(struct evr_broker *b, pid_t *ret, uint32_t cap, uint32_t *ret_n,
			  uint32_t *ret_pending, char *errbuf, size_t errlen)
{
	struct broker_req req = { .op = OP_CHECK };
	struct broker_rep rep;
	pid_t v[CHECK_MAX];
	size_t len = 0;
	int fds[FDS_MAX], err;

	if (!b || !ret || !ret_n || !ret_pending)
		return -EINVAL;
	*ret_n = 0;
	*ret_pending = 0;
	err = exchange(b, &req, &rep, v, sizeof(v), &len, fds, errbuf, errlen);
	close_fds(fds);
	if (err == 0 && (rep.n > CHECK_MAX || len != rep.n * sizeof(*v))) {
		snprintf(errbuf, errlen, "the broker helper answered with a malformed message");
		err = -EPROTO;
	}
	if (err < 0)
		return err;
	if (rep.err < 0) {
		snprintf(errbuf, errlen, "%s", rep.msg);
		return rep.err;
	}
	/* Beyond @cap: the helper reported them; the next full listing finds them. */
	for (uint32_t i = 0; i < rep.n && i < cap; i++)
		ret[(*ret_n)++] = v[i];
	*ret_pending = rep.kinds;
	return 0;
}

int evr_broker_create(struct evr_broker *b, const char *name, char *errbuf, size_t errlen)
{
	struct broker_req req = { .op = OP_CREATE };
	struct broker_rep rep;
	int fds[FDS_MAX], err;

	if (!b || !name || strlen(name) >= sizeof(req.name))
		return -EINVAL;
	memcpy(req.name, name, strlen(name) + 1);
	err = exchange(b, &req, &rep, NULL, 0, NULL, fds, errbuf, errlen);
	if (err < 0)
		return err;
	if (fds[1] >= 0)
		close(fds[1]);
	if (rep.err < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		snprintf(errbuf, errlen, "%s", rep.msg);
		return rep.err;
	}
	if (fds[0] < 0) {
		snprintf(errbuf, errlen, "the broker helper sent no file");
		return -EPROTO;
	}
	return fds[0];
}

int evr_broker_open_perf_map(struct evr_broker *b, pid_t pid, uid_t owner, char *errbuf,
			     size_t errlen)
{
	struct broker_req req = { .op = OP_PERF_MAP, .pid = pid, .uid = owner };
	struct broker_rep rep;
	int fds[FDS_MAX], err;

	if (!b || pid <= 0)
		return -EINVAL;
	err = exchange(b, &req, &rep, NULL, 0, NULL, fds, errbuf, errlen);
	if (err < 0)
		return err;
	if (fds[1] >= 0)
		close(fds[1]);
	if (rep.err < 0) {
		if (fds[0] >= 0)
			close(fds[0]);
		snprintf(errbuf, errlen, "%s", rep.msg);
		return rep.err;
	}
	if (fds[0] < 0) {
		snprintf(errbuf, errlen, "the broker helper sent no file");
		return -EPROTO;
	}
	return fds[0];
}
