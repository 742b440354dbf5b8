// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: the control connection to a process's agent (attach by
 * PID, or the reverse connection of EVR_CONNECT), Hello, and the questions
 * that need no session (ListSessions, ListEvents, the process list).
 *
 * Every check that can name the cause of a failure is done before touching the
 * socket: the process exists, it is ours, its agent's socket exists. What the
 * agent sends is untrusted: every reply is unpacked by proto/framing.c and
 * checked for the expected kind, and fds come only with StartSessionReply.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "client-internal.h"
#include "process-internal.h"

int evr_client_fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
{
	va_list ap;

	if (errbuf && errlen) {
		va_start(ap, fmt);
		vsnprintf(errbuf, errlen, fmt, ap);
		va_end(ap);
	}
	return err;
}

#define fail evr_client_fail

/* ---- the transaction ------------------------------------------------------------ */

/* The message and error of a failed evr_frame_recv() (@err < 0) on @c's socket. */
static int recv_failed(struct evr_client *c, int err, char *errbuf, size_t errlen)
{
	if (err == -ETIMEDOUT)
		return fail(errbuf, errlen, err, "process %d did not answer (stopped?)", (int)c->pid);
	if (err == -ECONNRESET || err == -EPIPE) {
		c->sock_eof = true;
		return fail(errbuf, errlen, -ECONNRESET, "process %d closed the connection",
			    (int)c->pid);
	}
	if (err == -EPROTO) {
		evr_frame_rx_drop_fds(&c->rx);
		return fail(errbuf, errlen, err, "process %d answered with a malformed message",
			    (int)c->pid);
	}
	return fail(errbuf, errlen, err, "reading from process %d: %s", (int)c->pid,
		    strerror(-err));
}

int evr_client_transact(struct evr_client *c, const Evr__Request *req, Evr__Reply__BodyCase want,
			int timeout_ms, int *fds, unsigned int nfds, Evr__Reply **ret, char *errbuf,
			size_t errlen)
{
	const uint8_t *payload;
	Evr__Reply *r;
	uint8_t *frame;
	uint32_t len;
	size_t flen;
	int err;

	if (c->sock < 0 || c->sock_eof)
		return fail(errbuf, errlen, -ECONNRESET, "process %d closed the connection",
			    (int)c->pid);
	while (c->stale_replies) {
		err = evr_frame_recv(&c->rx, c->sock, timeout_ms, &payload, &len);
		if (err < 0)
			return recv_failed(c, err, errbuf, errlen);
		evr_frame_rx_drop_fds(&c->rx);
		evr_frame_rx_pop(&c->rx);
		c->stale_replies--;
	}
	err = evr_frame_build(&req->base, &frame, &flen);
	if (err < 0)
		return fail(errbuf, errlen, err, "cannot build the request: %s", strerror(-err));
	err = evr_frame_send(c->sock, frame, flen, NULL, 0, timeout_ms);
	free(frame);
	if (err == -ETIMEDOUT)
		return fail(errbuf, errlen, err, "process %d did not answer (stopped?)", (int)c->pid);
	if (err < 0 && err != -EPIPE)
		return fail(errbuf, errlen, err, "sending to process %d: %s", (int)c->pid,
			    strerror(-err));
	/*
	 * Even when the agent closed the connection before our request went out,
	 * it may have said why first (a refused peer, too many consumers): what it
	 * sent is still there to read, without waiting.
	 */
	if (err == -EPIPE) {
		err = evr_frame_recv(&c->rx, c->sock, 0, &payload, &len);
		if (err == -ETIMEDOUT)
			err = -ECONNRESET;
	} else {
		err = evr_frame_recv(&c->rx, c->sock, timeout_ms, &payload, &len);
		/* The request went out whole: its reply may still come. */
		if (err == -ETIMEDOUT)
			c->stale_replies++;
	}
	if (err < 0)
		return recv_failed(c, err, errbuf, errlen);
	if (evr_pb_unpack_reply(payload, len, &r) < 0) {
		evr_frame_rx_drop_fds(&c->rx);
		return fail(errbuf, errlen, -EPROTO, "process %d answered with a malformed message",
			    (int)c->pid);
	}
	evr_frame_rx_pop(&c->rx);
	if (r->body_case == EVR__REPLY__BODY_ERROR) {
		int code = r->error->code;

		evr_frame_rx_drop_fds(&c->rx);
		/* A code that is no errno would read as success or garbage. */
		if (code <= 0 || code >= 4096)
			code = EPROTO;
		err = fail(errbuf, errlen, -code, "%s", r->error->message);
		/* One line for the user, whatever the peer put in it. */
		for (size_t i = 0; errbuf && i < errlen && errbuf[i]; i++) {
			if ((unsigned char)errbuf[i] < 0x20 || errbuf[i] == 0x7f)
				errbuf[i] = ' ';
		}
		evr_pb_reply_free(r);
		return err;
	}
	if (r->body_case != want || (nfds && evr_frame_rx_take_fds(&c->rx, fds, nfds) < 0)) {
		evr_frame_rx_drop_fds(&c->rx);
		evr_pb_reply_free(r);
		return fail(errbuf, errlen, -EPROTO, "process %d answered with a malformed message",
			    (int)c->pid);
	}
	evr_frame_rx_drop_fds(&c->rx);
	*ret = r;
	return 0;
}

/* ---- process info ------------------------------------------------------------------- */

static void process_info_clear(struct evr_process_info *pi)
{
	evr_process_info_free_strings(pi);
	free((void *)pi->pb);
	memset(pi, 0, sizeof(*pi));
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

static int process_info_fill(struct evr_process_info *pi, const Evr__ProcessInfo *m)
{
	uint8_t *pb;
	size_t len;

	memset(pi, 0, sizeof(*pi));
	evr_process_info_scalars(pi, m);
	if (m->n_argv) {
		pi->argv = calloc(m->n_argv, sizeof(*pi->argv));
		if (!pi->argv)
			goto nomem;
		for (size_t i = 0; i < m->n_argv; i++) {
			pi->argv[i] = strdup(m->argv[i]);
			if (!pi->argv[i])
				goto nomem;
			pi->argc++;
		}
	}
	pi->exe = dup_or_null(m->exe);
	pi->hostname = dup_or_null(m->hostname);
	pi->evring_version = dup_or_null(m->evring_version);
	if ((m->exe && !pi->exe) || (m->hostname && !pi->hostname) ||
	    (m->evring_version && !pi->evring_version))
		goto nomem;
	/* Kept packed for trace files, which store it as received. */
	if (evr_pb_pack(&m->base, &pb, &len) < 0)
		goto nomem;
	pi->pb = pb;
	pi->pb_len = len;
	return 0;

nomem:
	process_info_clear(pi);
	return -ENOMEM;
}

/* ---- connecting ------------------------------------------------------------------------- */

static int client_new(pid_t pid, int sock, int pidfd, struct evr_client **ret)
{
	struct evr_client *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	if (evr_schema_set_new(&c->schemas) < 0) {
		free(c);
		return -ENOMEM;
	}
	c->pid = pid;
	c->sock = sock;
	c->pidfd = pidfd;
	c->doorbell_fd = -1;
	c->state = EVR_CLIENT_IDLE;
	evr_frame_rx_init(&c->rx);
	*ret = c;
	return 0;
}

static int hello(struct evr_client *c, const char *client_name, char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__Hello h = EVR__HELLO__INIT;
	Evr__Reply *r;
	int err;

	h.protocol_version = EVR_PROTOCOL_VERSION;
	h.client = (char *)client_name;
	req.body_case = EVR__REQUEST__BODY_HELLO;
	req.hello = &h;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_HELLO, EVR_CLIENT_HELLO_TIMEOUT_MS, NULL,
				  0, &r, errbuf, errlen);
	if (err < 0)
		return err;
	if (r->hello->protocol_version != EVR_PROTOCOL_VERSION) {
		err = fail(errbuf, errlen, -EPROTONOSUPPORT,
			   "process %d speaks protocol version %u, this client %u", (int)c->pid,
			   r->hello->protocol_version, EVR_PROTOCOL_VERSION);
	} else {
		err = process_info_fill(&c->info, r->hello->process);
		if (err < 0)
			fail(errbuf, errlen, err, "out of memory");
	}
	evr_pb_reply_free(r);
	return err;
}

static int pidfd_open_cloexec(pid_t pid)
{
#ifdef SYS_pidfd_open
	/* pidfds are close-on-exec by definition. */
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	(void)pid;
	errno = ENOSYS;
	return -1;
#endif
}

static void comm_of(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(buf, len, "?");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = '\0';
	fclose(f);
}

/* The runtime directory of user @uid: EVR_RUNTIME_DIR, or /tmp/evring-UID. */
static int runtime_dir_of(uid_t uid, char *buf, size_t len)
{
	const char *env = secure_getenv("EVR_RUNTIME_DIR");
	int n;

	if (env && *env)
		n = snprintf(buf, len, "%s", env);
	else
		n = snprintf(buf, len, "/tmp/evring-%u", (unsigned int)uid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int evr_client_connect(pid_t pid, const char *client_name, struct evr_client **ret,
		       char *errbuf, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = EVR_CLIENT_HELLO_TIMEOUT_MS / 1000 };
	char path[64], dir[sizeof(sa.sun_path)], comm[64];
	struct evr_client *c;
	struct stat st;
	int sock, pidfd, err, n;
	uid_t me = geteuid();

	if (!ret)
		return -EINVAL;
	if (pid <= 0)
		return fail(errbuf, errlen, -EINVAL, "invalid process id %d", (int)pid);
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		return fail(errbuf, errlen, -ESRCH, "no process %d", (int)pid);
	/* Refuse before touching the socket: the reason is clearer than EACCES on
	 * a directory the user cannot enter. */
	if (st.st_uid != me && me != 0) {
		char pwbuf[1024], name[64];
		struct passwd pw, *pwp = NULL;

		if (getpwuid_r(st.st_uid, &pw, pwbuf, sizeof(pwbuf), &pwp) == 0 && pwp)
			snprintf(name, sizeof(name), "%s", pwp->pw_name);
		else
			snprintf(name, sizeof(name), "%u", (unsigned int)st.st_uid);
		return fail(errbuf, errlen, -EACCES,
			    "process %d belongs to user %s (uid %u); you can attach only to your own processes",
			    (int)pid, name, (unsigned int)st.st_uid);
	}
	comm_of(pid, comm, sizeof(comm));
	if (runtime_dir_of(st.st_uid, dir, sizeof(dir)) < 0)
		return fail(errbuf, errlen, -ENAMETOOLONG, "EVR_RUNTIME_DIR is too long");
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%d.sock", dir, (int)pid);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return fail(errbuf, errlen, -ENAMETOOLONG, "socket path %s/%d.sock is too long", dir,
			    (int)pid);
	/* Before connecting: the pidfd then surely names the process we talk to. */
	pidfd = pidfd_open_cloexec(pid);
	sock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (sock < 0) {
		err = -errno;
		goto err_pidfd;
	}
	/* A full backlog (agent stopped) must not block connect() forever. */
	(void)setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(sock, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		err = -errno;
		if (err == -ENOENT || err == -ECONNREFUSED || err == -ENOTDIR)
			err = fail(errbuf, errlen, -ENOENT,
				   "process %d (%s) does not run libevring's agent",
				   (int)pid, comm);
		else if (err == -EAGAIN || err == -EINPROGRESS || err == -ETIMEDOUT)
			err = fail(errbuf, errlen, -ETIMEDOUT,
				   "process %d did not answer (stopped?)", (int)pid);
		else if (err == -EACCES || err == -EPERM)
			err = fail(errbuf, errlen, -EACCES, "cannot reach %s: %s", sa.sun_path,
				   strerror(-err));
		else
			fail(errbuf, errlen, err, "cannot connect to %s: %s", sa.sun_path,
			     strerror(-err));
		goto err_sock;
	}
	if (fcntl(sock, F_SETFL, O_NONBLOCK) < 0) {
		err = fail(errbuf, errlen, -errno, "fcntl: %s", strerror(errno));
		goto err_sock;
	}
	err = client_new(pid, sock, pidfd, &c);
	if (err < 0) {
		fail(errbuf, errlen, err, "out of memory");
		goto err_sock;
	}
	err = hello(c, client_name, errbuf, errlen);
	if (err < 0) {
		evr_client_free(c);
		return err;
	}
	*ret = c;
	return 0;

err_sock:
	close(sock);
err_pidfd:
	if (pidfd >= 0)
		close(pidfd);
	return err;
}

/* ---- the reverse connection -------------------------------------------------------------- */

int evr_client_listen(int *ret_fd, char **ret_path, char *errbuf, size_t errlen)
{
	static unsigned int counter;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	struct stat st;
	int fd, n, err;

	if (!ret_fd || !ret_path)
		return -EINVAL;
	if (runtime_dir_of(geteuid(), dir, sizeof(dir)) < 0)
		return fail(errbuf, errlen, -ENAMETOOLONG, "EVR_RUNTIME_DIR is too long");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return fail(errbuf, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	if (lstat(dir, &st) < 0)
		return fail(errbuf, errlen, -errno, "%s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
		return fail(errbuf, errlen, -EPERM,
			    "%s is not a directory of mode 0700 owned by uid %u: refusing to use it",
			    dir, (unsigned int)geteuid());
	n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/connect-%d-%u.sock", dir, (int)getpid(),
		     __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return fail(errbuf, errlen, -ENAMETOOLONG, "socket path in %s is too long", dir);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return fail(errbuf, errlen, -errno, "socket: %s", strerror(errno));
	(void)unlink(sa.sun_path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(fd, 4) < 0) {
		err = -errno;
		close(fd);
		return fail(errbuf, errlen, err, "cannot listen on %s: %s", sa.sun_path,
			    strerror(-err));
	}
	*ret_path = strdup(sa.sun_path);
	if (!*ret_path) {
		close(fd);
		(void)unlink(sa.sun_path);
		return fail(errbuf, errlen, -ENOMEM, "out of memory");
	}
	*ret_fd = fd;
	return 0;
}

int evr_client_accept(int listen_fd, int timeout_ms, const char *client_name,
		      struct evr_client **ret, char *errbuf, size_t errlen)
{
	struct pollfd pfd = { .fd = listen_fd, .events = POLLIN };
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct evr_client *c;
	int fd, n, err, pidfd;

	if (listen_fd < 0 || !ret)
		return -EINVAL;
	do
		n = poll(&pfd, 1, timeout_ms);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return fail(errbuf, errlen, -errno, "poll: %s", strerror(errno));
	if (n == 0)
		return fail(errbuf, errlen, -ETIMEDOUT,
			    "the traced program did not connect within %d ms (does it link libevring?)",
			    timeout_ms);
	fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return fail(errbuf, errlen, -errno, "accept: %s", strerror(errno));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		err = fail(errbuf, errlen, -errno, "SO_PEERCRED: %s", strerror(errno));
		close(fd);
		return err;
	}
	if (cred.uid != geteuid() && geteuid() != 0) {
		close(fd);
		return fail(errbuf, errlen, -EACCES,
			    "process %d of uid %u connected; only your own processes may",
			    (int)cred.pid, (unsigned int)cred.uid);
	}
	pidfd = pidfd_open_cloexec(cred.pid);
	err = client_new(cred.pid, fd, pidfd, &c);
	if (err < 0) {
		close(fd);
		if (pidfd >= 0)
			close(pidfd);
		return fail(errbuf, errlen, err, "out of memory");
	}
	err = hello(c, client_name, errbuf, errlen);
	if (err < 0) {
		evr_client_free(c);
		return err;
	}
	*ret = c;
	return 0;
}

int evr_client_resume(struct evr_client *c, char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__Resume m = EVR__RESUME__INIT;
	Evr__Reply *r;
	int err;

	if (!c)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_RESUME;
	req.resume = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_RESUME, EVR_CLIENT_HELLO_TIMEOUT_MS,
				  NULL, 0, &r, errbuf, errlen);
	if (err == 0)
		evr_pb_reply_free(r);
	return err;
}

/* ---- lifetime and questions -------------------------------------------------------------- */

void evr_client_free(struct evr_client *c)
{
	if (!c)
		return;
	/* Closing the connection is what ends the session in the producer. */
	if (c->sock >= 0)
		close(c->sock);
	evr_frame_rx_fini(&c->rx);
	evr_reader_free(c->reader);
	evr_span_reader_free(c->spans);
	evr_shm_session_unmap(c->hdr);
	if (c->doorbell_fd >= 0)
		close(c->doorbell_fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	evr_schema_set_free(c->schemas);
	process_info_clear(&c->info);
	free(c);
}

const struct evr_process_info *evr_client_process(const struct evr_client *c)
{
	return c ? &c->info : NULL;
}

void evr_session_info_free(struct evr_session_info *v, uint32_t n)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < n; i++) {
		free(v[i].providers);
		free(v[i].client);
	}
	free(v);
}

int evr_client_list_sessions(struct evr_client *c, struct evr_session_info **ret,
			     uint32_t *ret_n, char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__ListSessions m = EVR__LIST_SESSIONS__INIT;
	struct evr_session_info *v;
	Evr__ListSessionsReply *lr;
	Evr__Reply *r;
	int err;

	if (!c || !ret || !ret_n)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_LIST_SESSIONS;
	req.list_sessions = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_LIST_SESSIONS,
				  EVR_CLIENT_HELLO_TIMEOUT_MS, NULL, 0, &r, errbuf, errlen);
	if (err < 0)
		return err;
	lr = r->list_sessions;
	v = calloc(lr->n_sessions ? lr->n_sessions : 1, sizeof(*v));
	if (!v) {
		evr_pb_reply_free(r);
		return fail(errbuf, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < lr->n_sessions; i++) {
		const Evr__SessionInfo *s = lr->sessions[i];

		v[i].session_id = s->session_id;
		v[i].serial = s->has_serial ? s->serial : 0;
		v[i].mode = s->has_mode ? s->mode : 0;
		v[i].ring_size = s->has_ring_size ? s->ring_size : 0;
		v[i].client_pid = s->has_client_pid ? s->client_pid : 0;
		v[i].providers = dup_or_null(s->providers);
		v[i].client = dup_or_null(s->client);
		if ((s->providers && !v[i].providers) || (s->client && !v[i].client)) {
			evr_session_info_free(v, (uint32_t)i + 1);
			evr_pb_reply_free(r);
			return fail(errbuf, errlen, -ENOMEM, "out of memory");
		}
	}
	*ret_n = (uint32_t)lr->n_sessions;
	*ret = v;
	evr_pb_reply_free(r);
	return 0;
}

int evr_client_list_threads(struct evr_client *c, struct evr_thread_info **ret, uint32_t *ret_n,
			    char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__ListThreads m = EVR__LIST_THREADS__INIT;
	Evr__ListThreadsReply *lr;
	struct evr_thread_info *v;
	Evr__Reply *r;
	int err;

	if (!c || !ret || !ret_n)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_LIST_THREADS;
	req.list_threads = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_LIST_THREADS,
				  EVR_CLIENT_HELLO_TIMEOUT_MS, NULL, 0, &r, errbuf, errlen);
	if (err < 0)
		return err;
	lr = r->list_threads;
	v = calloc(lr->n_threads ? lr->n_threads : 1, sizeof(*v));
	if (!v) {
		evr_pb_reply_free(r);
		return fail(errbuf, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < lr->n_threads; i++) {
		v[i].tid = lr->threads[i]->tid;
		if (lr->threads[i]->name)
			snprintf(v[i].name, sizeof(v[i].name), "%s", lr->threads[i]->name);
	}
	*ret_n = (uint32_t)lr->n_threads;
	*ret = v;
	evr_pb_reply_free(r);
	return 0;
}

int evr_client_list_events(struct evr_client *c, struct evr_schema_set *into, char *errbuf,
			   size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__ListEvents m = EVR__LIST_EVENTS__INIT;
	Evr__ListEventsReply *lr;
	Evr__Reply *r;
	int err;

	if (!c || !into)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_LIST_EVENTS;
	req.list_events = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_LIST_EVENTS,
				  EVR_CLIENT_HELLO_TIMEOUT_MS, NULL, 0, &r, errbuf, errlen);
	if (err < 0)
		return err;
	lr = r->list_events;
	for (size_t i = 0; i < lr->n_events && err == 0; i++) {
		uint8_t *pb;
		size_t len;

		/* The schema set takes packed descriptions, as everywhere else. */
		err = evr_pb_pack(&lr->events[i]->base, &pb, &len);
		if (err < 0)
			break;
		err = evr_schema_set_add_pb(into, pb, len);
		free(pb);
	}
	evr_pb_reply_free(r);
	if (err == -EBADMSG)
		return fail(errbuf, errlen, -EBADMSG,
			    "process %d described an event that does not validate", (int)c->pid);
	if (err < 0)
		return fail(errbuf, errlen, err, "out of memory");
	return 0;
}

/* ---- the process list ------------------------------------------------------------------ */

struct pid_vec {
	pid_t *v;
	uint32_t n, cap;
};

static int scan_dir(const char *dir, struct pid_vec *pv)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int err = 0;

	if (!d)
		return 0;	/* no directory: nobody runs an agent there */
	while (!err && (e = readdir(d))) {
		char proc[64], *end;
		unsigned long pid;
		struct stat st;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtoul(e->d_name, &end, 10);
		if (errno || strcmp(end, ".sock") != 0 || pid > INT32_MAX)
			continue;
		/* A socket whose process is gone is stale; the next agent removes it. */
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISSOCK(st.st_mode))
			continue;
		snprintf(proc, sizeof(proc), "/proc/%lu", pid);
		if (access(proc, F_OK) < 0)
			continue;
		if (pv->n == pv->cap) {
			uint32_t cap = pv->cap ? pv->cap * 2 : 32;
			pid_t *nv = realloc(pv->v, sizeof(*nv) * cap);

			if (!nv) {
				err = -ENOMEM;
				break;
			}
			pv->v = nv;
			pv->cap = cap;
		}
		pv->v[pv->n++] = (pid_t)pid;
	}
	closedir(d);
	return err;
}

static int pid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int evr_process_list(pid_t **ret, uint32_t *ret_n)
{
	struct pid_vec pv = { 0 };
	const char *env = secure_getenv("EVR_RUNTIME_DIR");
	char dir[sizeof("/tmp/") + sizeof(((struct dirent *)0)->d_name)];
	uint32_t n = 0;
	int err = 0;

	if (!ret || !ret_n)
		return -EINVAL;
	if (env && *env) {
		err = scan_dir(env, &pv);
	} else if (geteuid() == 0) {
		DIR *d = opendir("/tmp");
		struct dirent *e;

		while (d && !err && (e = readdir(d))) {
			if (strncmp(e->d_name, "evring-", 7) != 0)
				continue;
			snprintf(dir, sizeof(dir), "/tmp/%s", e->d_name);
			err = scan_dir(dir, &pv);
		}
		if (d)
			closedir(d);
	} else {
		snprintf(dir, sizeof(dir), "/tmp/evring-%u", (unsigned int)geteuid());
		err = scan_dir(dir, &pv);
	}
	if (err < 0) {
		free(pv.v);
		return err;
	}
	if (pv.n)
		qsort(pv.v, pv.n, sizeof(*pv.v), pid_cmp);
	for (uint32_t i = 0; i < pv.n; i++) {
		if (i == 0 || pv.v[i] != pv.v[n - 1])
			pv.v[n++] = pv.v[i];
	}
	if (!pv.v) {
		pv.v = malloc(sizeof(*pv.v));
		if (!pv.v)
			return -ENOMEM;
	}
	*ret = pv.v;
	*ret_n = n;
	return 0;
}
