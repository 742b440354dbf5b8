// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring-consumer: the control connection to a process's agent (attach by
 * PID, or the reverse connection of EVR_CONNECT), Hello, and the questions
 * that need no session (ListSessions, ListEvents, ListThreads). Finding the
 * socket and the checks before it is used are in client-find.c.
 *
 * What the agent sends is untrusted: every reply is unpacked by proto/framing.c and
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

#include <evring/mono-time.h>
#include <evring/process-info.h>
#include <evring/rundir.h>

#include "client-internal.h"

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

/*
 * Send @req on @c's socket, without reading anything. Return: 0 sent; 1 the
 * agent closed the connection first (what it said before is still to read);
 * -errno with the message in @errbuf.
 */
int evr_client_send(struct evr_client *c, const Evr__Request *req, int timeout_ms, char *errbuf,
		    size_t errlen)
{
	uint8_t *frame;
	size_t flen;
	int err;

	if (c->sock < 0 || c->sock_eof)
		return fail(errbuf, errlen, -ECONNRESET, "process %d closed the connection",
			    (int)c->pid);
	err = evr_frame_build(&req->base, &frame, &flen);
	if (err < 0)
		return fail(errbuf, errlen, err, "cannot build the request: %s", strerror(-err));
	err = evr_frame_send(c->sock, frame, flen, NULL, 0, timeout_ms);
	free(frame);
	if (err == -ETIMEDOUT)
		return fail(errbuf, errlen, err, "process %d did not answer (stopped?)", (int)c->pid);
	if (err == -EPIPE)
		return 1;
	if (err < 0)
		return fail(errbuf, errlen, err, "sending to process %d: %s", (int)c->pid,
			    strerror(-err));
	return 0;
}

int evr_client_transact(struct evr_client *c, const Evr__Request *req, Evr__Reply__BodyCase want,
			int timeout_ms, int *fds, unsigned int nfds, Evr__Reply **ret, char *errbuf,
			size_t errlen)
{
	int err = evr_client_send(c, req, timeout_ms, errbuf, errlen);

	if (err < 0)
		return err;
	/*
	 * Even when the agent closed the connection before our request went out,
	 * it may have said why first (a refused peer, too many consumers): what it
	 * sent is still there to read, without waiting.
	 */
	return evr_client_recv(c, want, err == 1 ? -1 : timeout_ms, fds, nfds, ret, errbuf,
			       errlen);
}

/* The milliseconds left until @deadline_ns (0: past). */
static int ms_left(uint64_t deadline_ns)
{
	uint64_t now = evr_mono_ns();

	return now < deadline_ns ? (int)((deadline_ns - now + 999999) / 1000000u) : 0;
}

/*
 * Is the process stopped (job control, or a tracer's stop): state 'T' or 't'
 * in /proc/PID/stat? It answers nothing until it is continued. The state
 * follows the last ')' (the command name may hold any other character).
 */
static bool peer_stopped(const struct evr_client *c)
{
	char buf[512], *paren;
	ssize_t n;

	if (c->stat_fd < 0)
		return false;
	n = pread(c->stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;	/* gone: the socket says so */
	buf[n] = '\0';
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && (paren[2] == 'T' || paren[2] == 't');
}

/*
 * The next whole frame, by @deadline_ns. @watch_stopped: look every
 * STOPPED_CHECK_MS whether the process is stopped, and give up then
 * (-ETIMEDOUT, c->seen_stopped): a wait for it would last the whole deadline.
 */
static int frame_wait(struct evr_client *c, uint64_t deadline_ns, bool watch_stopped,
		      const uint8_t **payload, uint32_t *len)
{
	for (;;) {
		int left = ms_left(deadline_ns);
		int err = evr_frame_recv(&c->rx, c->sock, watch_stopped && left > STOPPED_CHECK_MS ?
					 STOPPED_CHECK_MS : left, payload, len);

		if (err != -ETIMEDOUT || !watch_stopped || !ms_left(deadline_ns))
			return err;
		if (peer_stopped(c)) {
			c->seen_stopped = true;
			return err;
		}
	}
}

int evr_client_recv(struct evr_client *c, Evr__Reply__BodyCase want, int timeout_ms, int *fds,
		    unsigned int nfds, Evr__Reply **ret, char *errbuf, size_t errlen)
{
	/* The stop: its wait is long (30 s), and a stopped process never ends it. */
	bool watch_stopped = want == EVR__REPLY__BODY_STOP;
	/* -1: the request did not go out (the agent closed first): no waiting. */
	bool sent = timeout_ms >= 0;
	uint64_t deadline = evr_mono_ns() + (uint64_t)(sent ? timeout_ms : 0) * 1000000u;
	const uint8_t *payload;
	Evr__Reply *r;
	uint32_t len;
	int err;

	/* Replies to requests that timed out come first, in order: one deadline for all. */
	c->seen_stopped = false;
	for (;;) {
		err = frame_wait(c, deadline, watch_stopped && sent, &payload, &len);
		if (err < 0 || !c->stale_replies)
			break;
		evr_frame_rx_drop_fds(&c->rx);
		evr_frame_rx_pop(&c->rx);
		c->stale_replies--;
	}
	if (err == -ETIMEDOUT && !sent)
		err = -ECONNRESET;
	/* The request went out whole: its reply may still come. */
	if (err == -ETIMEDOUT)
		c->stale_replies++;
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
	c->stat_fd = -1;
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
		Evr__ProcessInfo *m = r->hello->process;

		/*
		 * The agent says the pid it knows itself by; SO_PEERCRED (checked
		 * before Hello) gave the one we know it by. They differ in a pid
		 * namespace of its own: our pid is the one every tool uses (and
		 * trace files keep), its own is kept beside it.
		 */
		m->has_ns_pid = m->pid != (uint32_t)c->pid;
		m->ns_pid = m->has_ns_pid ? m->pid : 0;
		m->pid = (uint32_t)c->pid;
		err = process_info_fill(&c->info, m);
		if (err < 0)
			fail(errbuf, errlen, err, "out of memory");
	}
	evr_pb_reply_free(r);
	return err;
}

/*
 * /proc/@pid/stat, opened now (-1 where it cannot be: a confined caller, whose
 * broker opens it instead). The peer was checked to be @pid just before: the
 * file is that process's, and stays so (an open /proc file never follows a
 * reused pid).
 */
static int stat_open(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/*
 * @foreign: listen mode's id of a process our pid namespace cannot name (SO_PEERCRED: 0).
 * @stat_fd: its /proc/PID/stat, taken over; -2: open it here.
 */
static int adopt(pid_t pid, bool foreign, int sock, int pidfd, int stat_fd,
		 const char *client_name, struct evr_client **ret, char *errbuf, size_t errlen)
{
	struct evr_client *c;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	int err;

	if (!ret || sock < 0 || pid <= 0) {
		err = -EINVAL;
		goto err;
	}
	/* Whoever connected checked the peer; the pid at least is cheap to confirm. */
	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0 &&
	    cred.pid != (foreign ? 0 : pid)) {
		err = fail(errbuf, errlen, -EPERM,
			   "refusing the connection: it is served by process %d, not by process %d",
			   (int)cred.pid, (int)pid);
		goto err;
	}
	err = client_new(pid, sock, pidfd, &c);
	if (err < 0) {
		fail(errbuf, errlen, err, "out of memory");
		goto err;
	}
	/* Listen mode's id of a foreign process is no pid of ours: nothing to read. */
	c->stat_fd = foreign ? -1 : stat_fd == -2 ? stat_open(pid) : stat_fd;
	stat_fd = -1;
	err = hello(c, client_name, errbuf, errlen);
	if (err < 0) {
		evr_client_free(c);
		return err;
	}
	if (foreign)
		evr_client_dialin_learn(pid, &c->info);	/* names to find it by (-n NAME) */
	*ret = c;
	return 0;

err:
	if (sock >= 0)
		close(sock);
	if (pidfd >= 0)
		close(pidfd);
	if (stat_fd >= 0)
		close(stat_fd);
	return err;
}

int evr_client_adopt(pid_t pid, int sock, int pidfd, const char *client_name,
		     struct evr_client **ret, char *errbuf, size_t errlen)
{
	return adopt(pid, false, sock, pidfd, -2, client_name, ret, errbuf, errlen);
}

int evr_client_adopt_stat(pid_t pid, int sock, int pidfd, int stat_fd, const char *client_name,
			  struct evr_client **ret, char *errbuf, size_t errlen)
{
	return adopt(pid, false, sock, pidfd, stat_fd < 0 ? -1 : stat_fd, client_name, ret,
		     errbuf, errlen);
}

int evr_client_connect(pid_t pid, const char *client_name, struct evr_client **ret,
		       char *errbuf, size_t errlen)
{
	bool foreign;
	int sock, pidfd, err;

	if (!ret)
		return -EINVAL;
	/* A process that connected to us (listen mode): its connection, not its socket. */
	err = evr_client_dialin_take(pid, EVR_CLIENT_HELLO_TIMEOUT_MS, &sock, &pidfd, &foreign,
				     errbuf, errlen);
	if (err == 0)
		return adopt(pid, foreign, sock, pidfd, -2, client_name, ret, errbuf, errlen);
	if (err != -ENOENT)
		return err;
	err = evr_client_open_socket(pid, &sock, &pidfd, errbuf, errlen);
	if (err < 0)
		return err;
	return evr_client_adopt(pid, sock, pidfd, client_name, ret, errbuf, errlen);
}

/* ---- the reverse connection -------------------------------------------------------------- */

int evr_client_listen(int *ret_fd, char **ret_path, char *errbuf, size_t errlen)
{
	static unsigned int counter;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN], *dir = dirs[0];
	unsigned int ndirs;
	struct stat st;
	int fd, n, err;

	if (!ret_fd || !ret_path)
		return -EINVAL;
	/* Where our own agents would listen: private to us, as the agent wants it. */
	if (evr_rundir_candidates(geteuid(), dirs, &ndirs) < 0)
		return fail(errbuf, errlen, -ENAMETOOLONG, "EVR_RUNTIME_DIR is too long");
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return fail(errbuf, errlen, -errno, "cannot create %s: %s", dir, strerror(errno));
	err = evr_rundir_check(dir, geteuid(), errbuf, errlen);
	if (err < 0)
		return err == -ENOENT ? fail(errbuf, errlen, err, "%s vanished", dir) : err;
	if (lstat(dir, &st) < 0)
		return fail(errbuf, errlen, -errno, "%s: %s", dir, strerror(errno));
	if ((st.st_mode & 07777) != 0700)
		return fail(errbuf, errlen, -EPERM,
			    "%s has mode %04o: run chmod 0700 %s (evring needs a directory only "
			    "you can enter)", dir, (unsigned int)(st.st_mode & 07777), dir);
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
	pidfd = evr_consumer_pidfd_open(cred.pid);
	err = client_new(cred.pid, fd, pidfd, &c);
	if (err < 0) {
		close(fd);
		if (pidfd >= 0)
			close(pidfd);
		return fail(errbuf, errlen, err, "out of memory");
	}
	c->stat_fd = stat_open(cred.pid);
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
	if (c->stat_fd >= 0)
		close(c->stat_fd);
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
		v[i].shm_size = s->has_shm_size ? s->shm_size : 0;
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
	return evr_client_list_threads_ms(c, EVR_CLIENT_HELLO_TIMEOUT_MS, ret, ret_n, errbuf,
					  errlen);
}

/* Send a thread-list request, waiting at most @timeout_ms for the socket to take it. */
static int list_threads_send(struct evr_client *c, int timeout_ms, char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__ListThreads m = EVR__LIST_THREADS__INIT;
	int err;

	if (!c || c->threads_sent)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_LIST_THREADS;
	req.list_threads = &m;
	err = evr_client_send(c, &req, timeout_ms, errbuf, errlen);
	if (err < 0)
		return err;
	c->threads_sent = true;
	c->threads_closed = err == 1;
	return 0;
}

int evr_client_list_threads_send(struct evr_client *c, char *errbuf, size_t errlen)
{
	/* A few bytes into a socket buffer that a stopped agent leaves as good as
	 * empty, as evr_client_stop_send(): no wait allowed (0). */
	return list_threads_send(c, 0, errbuf, errlen);
}

int evr_client_list_threads_recv(struct evr_client *c, int timeout_ms,
				 struct evr_thread_info **ret, uint32_t *ret_n, char *errbuf,
				 size_t errlen)
{
	Evr__ListThreadsReply *lr;
	struct evr_thread_info *v;
	Evr__Reply *r;
	int err;

	if (!c || !ret || !ret_n || !c->threads_sent)
		return -EINVAL;
	c->threads_sent = false;
	err = evr_client_recv(c, EVR__REPLY__BODY_LIST_THREADS, c->threads_closed ? -1 :
			      timeout_ms < 0 ? 0 : timeout_ms, NULL, 0, &r, errbuf, errlen);
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

int evr_client_list_threads_ms(struct evr_client *c, int timeout_ms,
			       struct evr_thread_info **ret, uint32_t *ret_n, char *errbuf,
			       size_t errlen)
{
	int err;

	if (!c || !ret || !ret_n)
		return -EINVAL;
	err = list_threads_send(c, timeout_ms, errbuf, errlen);
	if (err < 0)
		return err;
	return evr_client_list_threads_recv(c, timeout_ms, ret, ret_n, errbuf, errlen);
}

void evr_counter_info_free(struct evr_counter_info *v, uint32_t n)
{
	if (!v)
		return;
	for (uint32_t i = 0; i < n; i++) {
		free(v[i].provider);
		free(v[i].name);
		free(v[i].display_name);
		free(v[i].unit);
	}
	free(v);
}

int evr_client_list_counters(struct evr_client *c, struct evr_counter_info **ret, uint32_t *ret_n,
			     char *errbuf, size_t errlen)
{
	Evr__Request req = EVR__REQUEST__INIT;
	Evr__ListCounters m = EVR__LIST_COUNTERS__INIT;
	Evr__ListCountersReply *lr;
	struct evr_counter_info *v;
	Evr__Reply *r;
	int err;

	if (!c || !ret || !ret_n)
		return -EINVAL;
	req.body_case = EVR__REQUEST__BODY_LIST_COUNTERS;
	req.list_counters = &m;
	err = evr_client_transact(c, &req, EVR__REPLY__BODY_LIST_COUNTERS,
				  EVR_CLIENT_HELLO_TIMEOUT_MS, NULL, 0, &r, errbuf, errlen);
	if (err < 0)
		return err;
	lr = r->list_counters;
	v = calloc(lr->n_counters ? lr->n_counters : 1, sizeof(*v));
	if (!v) {
		evr_pb_reply_free(r);
		return fail(errbuf, errlen, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < lr->n_counters; i++) {
		const Evr__CounterInfo *ci = lr->counters[i];

		v[i].provider = strdup(ci->provider);
		v[i].name = strdup(ci->name);
		v[i].display_name = strdup(ci->display_name ? ci->display_name : ci->name);
		v[i].unit = strdup(ci->unit ? ci->unit : "");
		v[i].kind = ci->has_kind ? ci->kind : 0;
		if (!v[i].provider || !v[i].name || !v[i].display_name || !v[i].unit) {
			evr_counter_info_free(v, (uint32_t)i + 1);
			evr_pb_reply_free(r);
			return fail(errbuf, errlen, -ENOMEM, "out of memory");
		}
	}
	*ret_n = (uint32_t)lr->n_counters;
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

