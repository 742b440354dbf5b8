// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The agent: one thread per instrumented process that lets consumers attach by
 * PID. It listens on <pid>.sock in the first runtime directory of our euid
 * (<evring/rundir.h>: $EVR_RUNTIME_DIR, /run/user/<euid>/evring where that is
 * ours, or /tmp/evring-<euid>; a directory of mode 0700 that only we own), checks every peer's uid with
 * SO_PEERCRED, and serves the control protocol (proto/evring.proto, framed by
 * proto/framing.c) over non-blocking sockets from one epoll loop.
 *
 * Rules it keeps:
 *  - it never blocks on a consumer: replies go to a bounded queue per
 *    connection, and a consumer that lets it overflow is disconnected;
 *  - a session lives exactly as long as its connection: EOF, an error or a
 *    protocol violation stops and destroys it at once;
 *  - the library never prints: a directory it cannot trust means no agent,
 *    silently (consumers then say "does not run libevring's agent").
 *
 * Locking: agent.lock covers the connection list and the sockets; the agent
 * thread holds it while it handles one batch of epoll events, never while it
 * sleeps. Lock order: agent.lock, then evr_registry_lock. fork() takes both
 * (prepare handler) so that the child copies a consistent state, and the
 * child then drops its parent's sessions and starts its own agent.
 *
 * EVR_CONNECT=<path> (the reverse connection of `evring record -- prog`): the
 * constructor connects to that socket, hands the connection to the agent like
 * an accepted one, and waits until the consumer sends Resume, the connection
 * fails, or EVR_CONNECT_TIMEOUT_MS (default 10000) passes.
 *
 * EVR_MONITOR_SOCKET=<path> (listen mode, for a monitor that cannot reach our
 * runtime directory: another mount namespace, a sidecar): the agent thread
 * keeps one connection of its own to that socket, made with a non-blocking
 * connect(), checked with SO_PEERCRED like an accepted one and served like
 * one. The monitor parks it until it needs a connection to us; once it says
 * Hello on it, the agent makes the next one, so the monitor always has one
 * ready (dotnet's reverse diagnostic port). A connection that fails or ends
 * before its Hello (no listener, a refused one, garbage, an immediate close)
 * makes the next attempt wait, 100 ms doubling up to 5 s: a dead or hostile
 * listener costs a connect() every few seconds, never a storm and never the
 * program's time. The variable stays set: children are traced too.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <urcu-bp.h>

#include <evring/ring-rseq.h>
#include <evring/rundir.h>

#include "usdt-internal.h"
#include "agent-internal.h"
#include "counters-internal.h"

#define EVR_CONNECT_TIMEOUT_DEFAULT_MS 10000
/* Listen mode: the waits before connecting to the monitor again. */
#define EVR_MON_BACKOFF_MIN_MS 100u
#define EVR_MON_BACKOFF_MAX_MS 5000u
/* Between a used connection and the next: bounds a monitor that uses and closes at once. */
#define EVR_MON_RECONNECT_GAP_MS 20u

static struct {
	pthread_mutex_t lock;
	bool enabled;			/* EVR_AGENT is not 0: restart in fork children */
	bool running;			/* the thread exists (in this process) */
	pthread_t thread;
	pid_t pid;
	int epfd, stopfd, listen_fd;
	int kickfd;			/* evr_agent_kick()'s eventfd, made at its first use; -1 */
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct evr_agent_conn *conns;
	uint32_t nconns;
	uint32_t hello_timeout_ms;	/* EVR_AGENT_HELLO_TIMEOUT_MS, or the default */
	char status[512];		/* the socket path, or why there is none */
	int status_err;			/* 0, or why listen_socket() failed */
	bool listen_paused;		/* out of fds: stop polling the listen socket */
	/* Listen mode (EVR_MONITOR_SOCKET); the agent thread alone uses these once it runs. */
	bool mon_enabled;
	struct sockaddr_un mon_sa;
	struct evr_agent_conn *mon_spare;	/* ours, not yet used (no Hello) by the monitor */
	uint64_t mon_next_ns;		/* CLOCK_MONOTONIC of the next connect(); UINT64_MAX: none */
	uint64_t mon_last_ns;		/* the last connect() */
	uint32_t mon_backoff_ms;	/* the wait after the next failure */
} agent = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.epfd = -1,
	.stopfd = -1,
	.listen_fd = -1,
	.kickfd = -1,
};

/* The constructor's wait for Resume on the reverse connection. */
static pthread_mutex_t resume_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t resume_cond;
static bool resume_done;

/* epoll tags for the fds that are not connections. */
static int tag_listen, tag_stop, tag_kick;

/*
 * At exit, an agent that serves nobody is left asleep instead of woken and joined
 * (agent_library_fini()): the wake-up, the thread's exit and the join, across CPUs,
 * were a third of what the agent cost a program nobody traces (docs/protocol.md). Set
 * by the destructor; the agent, which looks under the agent lock after every wake-up,
 * then touches nothing more. agent_outside: the agent is in evr_usdt_poll(), outside
 * the lock (seq_cst, both: the destructor or the agent sees the other's flag).
 */
/* Written and read at every exit of a program nobody traces: EVR_LOAD_DATA (a page
 * of .bss less to fault in there). */
EVR_LOAD_DATA static _Atomic bool agent_left;
EVR_LOAD_DATA static _Atomic bool agent_outside;

void evr_agent_resume_constructor(void)
{
	pthread_mutex_lock(&resume_lock);
	resume_done = true;
	pthread_cond_broadcast(&resume_cond);
	pthread_mutex_unlock(&resume_lock);
}

/* ---- built-in providers ------------------------------------------------------- */

static _Atomic bool builtins_done;

void evr_builtin_providers_ensure_locked(void)
{
	if (atomic_load_explicit(&builtins_done, memory_order_acquire))
		return;
	evr_process_provider_register();
	evr_memory_provider_register();
	evr_heap_provider_register();
	atomic_store_explicit(&builtins_done, true, memory_order_release);
}

void evr_builtin_providers_ensure(void)
{
	if (atomic_load_explicit(&builtins_done, memory_order_acquire))
		return;
	pthread_mutex_lock(&agent.lock);
	evr_builtin_providers_ensure_locked();
	pthread_mutex_unlock(&agent.lock);
}

/* ---- in-process sessions -------------------------------------------------------- */

/*
 * The eventfd is made at the first in-process session, not when the agent starts: a
 * program nobody traces pays no system call for it (docs/protocol.md, "What a
 * program pays at start-up"). A session the program starts while the agent is not
 * running (EVR_AGENT=0, no runtime directory) has its pages written by its writers,
 * as before.
 */
void evr_agent_kick(void)
{
	pthread_mutex_lock(&agent.lock);
	if (agent.running && agent.epfd >= 0 && !atomic_load(&agent_left)) {
		if (agent.kickfd < 0) {
			struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &tag_kick };
			int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);

			if (fd >= 0 && epoll_ctl(agent.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
				close(fd);
				fd = -1;
			}
			agent.kickfd = fd;
		}
		if (agent.kickfd >= 0)
			(void)eventfd_write(agent.kickfd, 1);
	}
	pthread_mutex_unlock(&agent.lock);
}

/* ---- runtime directory ------------------------------------------------------- */

/*
 * The directory we listen in: the first of our euid's runtime directories
 * (<evring/rundir.h>), so that consumers, which search the same list, find us.
 * Create it if missing; trust it only if it is a real directory (lstat: no
 * symlinks), owned by us, mode 0700. Anything else could let another user see
 * or replace our socket: then no agent, and evr_agent_status() says why
 * (consumers that look say it too).
 */
static int runtime_dir(char *buf, size_t len, char *why, size_t whylen)
{
	char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN];
	uid_t uid = geteuid();
	unsigned int n;
	struct stat st;
	int err, r;

	if (evr_rundir_candidates(uid, dirs, &n) < 0 || strlen(dirs[0]) >= len) {
		snprintf(why, whylen, "EVR_RUNTIME_DIR is too long for a socket path");
		return -ENAMETOOLONG;
	}
	memcpy(buf, dirs[0], strlen(dirs[0]) + 1);
	/*
	 * One lstat() for both checks: what evr_rundir_check() would do, then ours.
	 * Before any mkdir(): the directory is there at every start but the first
	 * (one system call less at each, docs/protocol.md); made here only when it
	 * is not, then examined again (someone may have raced us to it).
	 */
	r = lstat(buf, &st);
	if (r < 0 && errno == ENOENT) {
		if (mkdir(buf, 0700) < 0 && errno != EEXIST) {
			err = -errno;
			snprintf(why, whylen, "cannot create %s: %s", buf, strerror(-err));
			return err;
		}
		r = lstat(buf, &st);
	}
	if (r < 0) {
		err = -errno;
		snprintf(why, whylen, "cannot examine %s: %s", buf, strerror(-err));
		return err;
	}
	err = evr_rundir_check_stat(&st, buf, uid, why, whylen);
	if (err < 0)
		return err;
	if ((st.st_mode & 07777) != 0700) {
		snprintf(why, whylen, "refusing %s: its mode is %04o, the agent listens only in a "
			 "directory of mode 0700: run chmod 0700 %s, then restart the program", buf,
			 (unsigned int)(st.st_mode & 07777), buf);
		return -EPERM;
	}
	return 0;
}

/*
 * Does anyone listen on <dir>/@name? A socket whose name is not a pid of our
 * pid namespace may be the live agent of a process in another one (a
 * container sharing the directory, named by its own pid): connect() tells a
 * listener (accepted, or a full backlog: EAGAIN) from a stale file
 * (ECONNREFUSED). Non-blocking, so that it never waits.
 */
static bool socket_served(const char *dir, const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, r;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s", dir, name) >=
	    (int)sizeof(sa.sun_path))
		return true;	/* cannot tell: keep it */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return true;
	r = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	r = r < 0 ? errno : 0;
	close(fd);
	return r != ECONNREFUSED && r != ENOENT;
}

/*
 * Remove the N.sock beside ours of processes that no longer exist. Once, when
 * the first consumer connects, not at start: reading the directory (and the
 * allocation opendir() makes) is paid by every program nobody traces otherwise
 * (docs/protocol.md, "What a program pays at start-up"). A stale socket harms
 * nobody meanwhile: consumers skip sockets of dead processes, and a new process
 * with its pid replaces it (listen_socket()). A socket that someone serves is
 * kept (socket_served(): a container's agent sharing the directory). Agent
 * lock held.
 */
static void remove_stale_sockets(void)
{
	static bool swept;
	char dir[sizeof(agent.path)];
	char *slash;
	DIR *d;
	struct dirent *e;

	if (swept || !agent.path[0])
		return;
	swept = true;
	memcpy(dir, agent.path, sizeof(dir));
	slash = strrchr(dir, '/');
	if (!slash)
		return;
	*slash = '\0';
	d = opendir(dir);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char *end;
		unsigned long pid;

		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		errno = 0;
		pid = strtoul(e->d_name, &end, 10);
		if (errno || strcmp(end, ".sock") != 0 || pid == 0 || pid > INT_MAX ||
		    (pid_t)pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH && !socket_served(dir, e->d_name))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	}
	closedir(d);
}

/*
 * "@dir/@pid.sock" into @path (a sun_path); -ENAMETOOLONG if it does not fit. Not
 * snprintf(): a program nobody traces would fault in three pages of libc's for
 * it at every start (docs/protocol.md, "What a program pays at start-up").
 */
static int sock_path(char path[EVR_RUNDIR_LEN], const char *dir, pid_t pid)
{
	static const char suffix[] = ".sock";
	char num[10];
	size_t dl = strlen(dir), n = evr_rundir_decimal(num, (unsigned int)pid);

	if (dl + 1 + n + sizeof(suffix) > EVR_RUNDIR_LEN)
		return -ENAMETOOLONG;
	memcpy(path, dir, dl);
	path[dl++] = '/';
	memcpy(path + dl, num, n);
	memcpy(path + dl + n, suffix, sizeof(suffix));
	return 0;
}

/* Listen on our socket; on failure agent.status says why. Agent lock held. */
static int listen_socket(void)
{
	char dir[sizeof(agent.path)];
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, n;

	n = runtime_dir(dir, sizeof(dir), agent.status, sizeof(agent.status));
	if (n < 0)
		return n;
	if (sock_path(sa.sun_path, dir, agent.pid) < 0) {
		snprintf(agent.status, sizeof(agent.status), "socket path %s/%d.sock is too long",
			 dir, (int)agent.pid);
		return -ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		n = -errno;
		snprintf(agent.status, sizeof(agent.status), "socket: %s", strerror(-n));
		return n;
	}
	/* A socket left by an earlier process with our pid goes, only when there is
	 * one: not an unlink() that fails at every start (docs/protocol.md). */
	n = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (n < 0 && errno == EADDRINUSE && unlink(sa.sun_path) == 0)
		n = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (n < 0 || listen(fd, 128) < 0) {
		n = -errno;
		snprintf(agent.status, sizeof(agent.status), "cannot listen on %s: %s", sa.sun_path,
			 strerror(-n));
		close(fd);
		return n;
	}
	memcpy(agent.path, sa.sun_path, sizeof(agent.path));
	memcpy(agent.status, sa.sun_path, strlen(sa.sun_path) + 1);
	return fd;
}

int evr_agent_status(char *buf, size_t len)
{
	int err;

	pthread_mutex_lock(&agent.lock);
	if (!agent.enabled)
		snprintf(agent.status, sizeof(agent.status), "the agent is disabled (EVR_AGENT=0)");
	err = agent.running && agent.listen_fd >= 0 ? 0 : agent.status_err ? agent.status_err : -ENOENT;
	if (buf && len)
		snprintf(buf, len, "%s", agent.status[0] ? agent.status : "no agent");
	pthread_mutex_unlock(&agent.lock);
	return err;
}

/* ---- connections --------------------------------------------------------------- */

static void conn_set_events(struct evr_agent_conn *c)
{
	struct epoll_event ev = { .data.ptr = c };

	ev.events = (c->closing ? 0 : EPOLLIN) | (c->want_out ? EPOLLOUT : 0);
	(void)epoll_ctl(agent.epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Listen mode: the last attempt failed or its connection ended unused; wait longer. */
static void mon_failed(void)
{
	agent.mon_spare = NULL;
	agent.mon_next_ns = evr_clock_gettime_ns(CLOCK_MONOTONIC) +
			    (uint64_t)agent.mon_backoff_ms * 1000000u;
	agent.mon_backoff_ms = agent.mon_backoff_ms * 2 > EVR_MON_BACKOFF_MAX_MS ?
			       EVR_MON_BACKOFF_MAX_MS : agent.mon_backoff_ms * 2;
}

/*
 * Close @c now: its session is stopped (flushed, marked ended) and destroyed,
 * so the process's fds and mappings go back to what they were. The struct
 * itself lives until the end of the batch (later events may name it).
 */
static void conn_kill(struct evr_agent_conn *c)
{
	if (c->dead)
		return;
	c->dead = true;
	if (c == agent.mon_spare)
		mon_failed();
	c->populate.s = NULL;
	evr_session_free(c->session);
	c->session = NULL;
	if (c->fd >= 0) {
		if (agent.epfd >= 0)
			(void)epoll_ctl(agent.epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
	evr_frame_rx_fini(&c->rx);
	evr_frame_txq_fini(&c->tx);
	if (c->reverse)
		evr_agent_resume_constructor();	/* the connection failed: run */
}

static void conn_free(struct evr_agent_conn *c)
{
	free(c->client);
	free(c);
}

static void listen_poll(bool on)
{
	struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.ptr = &tag_listen };

	if (agent.listen_fd < 0 || agent.epfd < 0 || agent.listen_paused == !on)
		return;
	agent.listen_paused = !on;
	(void)epoll_ctl(agent.epfd, EPOLL_CTL_MOD, agent.listen_fd, &ev);
}

static void reap_dead(void)
{
	struct evr_agent_conn **pc = &agent.conns;
	bool freed = false;

	while (*pc) {
		struct evr_agent_conn *c = *pc;

		if (c->dead) {
			*pc = c->next;
			agent.nconns--;
			conn_free(c);
			freed = true;
		} else {
			pc = &c->next;
		}
	}
	/* A closed connection gave an fd back: accept again. */
	if (freed)
		listen_poll(true);
}

static void conn_flush(struct evr_agent_conn *c)
{
	int ret;

	if (c->dead)
		return;
	ret = evr_frame_txq_flush(&c->tx, c->fd);
	if (ret < 0 || (ret == 0 && c->closing)) {
		conn_kill(c);
		return;
	}
	if ((ret == 1) != c->want_out) {
		c->want_out = ret == 1;
		conn_set_events(c);
	}
}

/* The peer broke the protocol: tell it why (if the queue takes it) and close. */
static void conn_protocol_error(struct evr_agent_conn *c, const char *what)
{
	c->populate.s = NULL;
	evr_session_free(c->session);
	c->session = NULL;
	if (evr_agent_error(c, EPROTO, "%s; closing the connection", what) < 0) {
		conn_kill(c);
		return;
	}
	c->closing = true;
	conn_set_events(c);
}

static void conn_read(struct evr_agent_conn *c)
{
	const char *violation;
	int ret;

	ret = evr_frame_rx_read(&c->rx, c->fd);
	/* Requests never carry fds: do not let a peer park its fds with us. */
	evr_frame_rx_drop_fds(&c->rx);
	if (ret == -EAGAIN)
		return;
	if (ret <= 0) {
		conn_kill(c);	/* EOF or error: the consumer is gone */
		return;
	}
	ret = evr_agent_conn_input(c, &violation);
	if (ret == 1)
		conn_protocol_error(c, violation);
	else if (ret < 0)
		conn_kill(c);	/* a reply could not even be queued */
	conn_flush(c);
}

static void conn_event(struct evr_agent_conn *c, uint32_t events)
{
	if (c->dead)
		return;
	if ((events & EPOLLIN) && !c->closing)
		conn_read(c);
	if (c->dead)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		conn_kill(c);
		return;
	}
	if (events & EPOLLOUT)
		conn_flush(c);
}

/*
 * Back the sessions' rings with pages, @budget bytes in all this turn, round
 * robin over the connections. Return: true if some remain to be backed.
 */
static bool populate_some(uint64_t budget)
{
	bool more = false;

	for (struct evr_agent_conn *c = agent.conns; c; c = c->next) {
		uint64_t before = c->populate.populated, used;

		if (c->dead || !c->populate.s || c->populate.done)
			continue;
		if (!budget || evr_memory_populate_step(&c->populate, budget))
			more = true;
		used = c->populate.populated - before;
		budget -= used < budget ? used : budget;
	}
	return more;
}

/* Send one small frame without waiting, then close @fd (refused peers). */
static void refuse(int fd, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void refuse(int fd, int code, const char *fmt, ...)
{
	uint8_t *frame;
	size_t len;
	va_list ap;
	int err;

	va_start(ap, fmt);
	err = evr_agent_error_vframe(code, &frame, &len, fmt, ap);
	va_end(ap);
	if (err == 0) {
		(void)evr_frame_send(fd, frame, len, NULL, 0, 0);
		free(frame);
	}
	close(fd);
}

uint32_t evr_agent_served(void)
{
	uint32_t n = 0;

	for (struct evr_agent_conn *c = agent.conns; c; c = c->next)
		n += c->hello && !c->dead;
	return n;
}

/* Tell @c why (if its queue takes it, without waiting) and close it now. */
static void conn_drop(struct evr_agent_conn *c, int code, const char *why)
{
	if (evr_agent_error(c, code, "%s; closing the connection", why) == 0)
		(void)evr_frame_txq_flush(&c->tx, c->fd);
	conn_kill(c);
}

/*
 * Close the connections whose time to say Hello is over; with @make_room, also
 * the oldest one still waiting when EVR_AGENT_MAX_PENDING are. A connection
 * that never says Hello costs nothing but its fd, and this bounds those fds.
 * Return: the time of the next deadline, or UINT64_MAX.
 */
static uint64_t pending_sweep(uint64_t now, bool make_room)
{
	struct evr_agent_conn *oldest = NULL;
	uint64_t next = UINT64_MAX;
	uint32_t pending = 0;
	char why[96];

	for (struct evr_agent_conn *c = agent.conns; c; c = c->next) {
		/* Our own connection to the monitor waits for it as long as it takes. */
		if (c->hello || c->dead || c->dialed)
			continue;
		if (now >= c->hello_deadline_ns) {
			snprintf(why, sizeof(why), "no Hello within %u ms", agent.hello_timeout_ms);
			conn_drop(c, ETIMEDOUT, why);
			continue;
		}
		pending++;
		if (!oldest || c->hello_deadline_ns < oldest->hello_deadline_ns)
			oldest = c;
		if (c->hello_deadline_ns < next)
			next = c->hello_deadline_ns;
	}
	if (make_room && pending >= EVR_AGENT_MAX_PENDING && oldest) {
		snprintf(why, sizeof(why), "%u connections are waiting to say Hello, this the oldest",
			 pending);
		conn_drop(oldest, EUSERS, why);
		next = 0;	/* recomputed by the next sweep */
	}
	return next;
}

/*
 * Adopt connected socket @fd (non-blocking, close-on-exec). Takes ownership.
 * @reverse: EVR_CONNECT's; @dialed: listen mode's (no Hello deadline).
 */
static int conn_add(int fd, bool reverse, bool dialed)
{
	struct evr_agent_conn *c;
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	struct epoll_event ev;
	uid_t me = geteuid();

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0) {
		close(fd);
		return -errno;
	}
	if (cred.uid != me && cred.uid != 0) {
		refuse(fd, EACCES, "uid %u may not attach to process %d owned by uid %u",
		       (unsigned int)cred.uid, (int)getpid(), (unsigned int)me);
		return -EACCES;
	}
	/* Room among the connections that have not said Hello: evict the oldest. */
	(void)pending_sweep(evr_clock_gettime_ns(CLOCK_MONOTONIC), true);
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->fd = fd;
	c->peer_pid = (uint32_t)cred.pid;
	c->peer_uid = (uint32_t)cred.uid;
	c->reverse = reverse;
	c->dialed = dialed;
	c->hello_deadline_ns = evr_clock_gettime_ns(CLOCK_MONOTONIC) +
			       (uint64_t)agent.hello_timeout_ms * 1000000u;
	evr_frame_rx_init(&c->rx);
	evr_frame_txq_init(&c->tx, EVR_AGENT_TXQ_CAP);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = c };
	if (epoll_ctl(agent.epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		int err = -errno;

		close(fd);
		free(c);
		return err;
	}
	c->next = agent.conns;
	agent.conns = c;
	agent.nconns++;
	return 0;
}

static void accept_clients(void)
{
	remove_stale_sockets();
	/* Bounded, so that a flood of connects cannot starve the connections. */
	for (int i = 0; i < 64; i++) {
		int fd = accept4(agent.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			/*
			 * Out of fds, the pending connection stays queued and the
			 * socket readable: stop polling it (level-triggered epoll would
			 * spin) until one of ours closes.
			 */
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM)
				listen_poll(false);
			return;
		}
		(void)conn_add(fd, false, false);
	}
}

/* ---- listen mode ----------------------------------------------------------------------- */

/*
 * Connect to the monitor without waiting: a Unix socket's connect() completes
 * at once or fails at once (EAGAIN with a full backlog, ECONNREFUSED with no
 * listener), it never blocks on a non-blocking socket. Agent lock held.
 */
static void mon_connect(uint64_t now)
{
	int fd;

	agent.mon_last_ns = now;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		mon_failed();
		return;
	}
	if (connect(fd, (struct sockaddr *)&agent.mon_sa, sizeof(agent.mon_sa)) < 0) {
		close(fd);
		mon_failed();
		return;
	}
	/* Checks the listener's uid as an accepted peer's: another user's is refused. */
	if (conn_add(fd, false, true) < 0) {
		mon_failed();
		return;
	}
	agent.mon_spare = agent.conns;	/* conn_add() put it first */
	agent.mon_next_ns = UINT64_MAX;
}

/*
 * After a batch: the monitor used our spare connection (Hello), so make the
 * next one (a little later if the last was just made); or the time to try
 * again has come. Return: the time of the next attempt, or UINT64_MAX.
 * Agent lock held.
 */
static uint64_t mon_turn(void)
{
	uint64_t now;

	if (!agent.mon_enabled)
		return UINT64_MAX;
	if (agent.mon_spare && agent.mon_spare->hello) {
		uint64_t gap = agent.mon_last_ns + EVR_MON_RECONNECT_GAP_MS * 1000000ull;

		agent.mon_spare = NULL;
		agent.mon_backoff_ms = EVR_MON_BACKOFF_MIN_MS;
		agent.mon_next_ns = gap;
	}
	if (agent.mon_spare || agent.mon_next_ns == UINT64_MAX)
		return agent.mon_next_ns;
	now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	if (now >= agent.mon_next_ns)
		mon_connect(now);
	return agent.mon_spare ? UINT64_MAX : agent.mon_next_ns;
}

/* ---- the thread -------------------------------------------------------------------- */

static void *agent_main(void *arg)
{
	struct epoll_event evs[32];
	bool stop = false, left = false;

	uint64_t next = UINT64_MAX;
	bool populating = false, kicked = false;

	/*
	 * Listen mode's first connection, before the first sleep. Only in listen mode:
	 * agent_start() creates us with the agent lock held, so taking it here would
	 * put us to sleep on it at once and have the constructor wake us when it lets
	 * go, a futex wait and a cross-CPU wake-up (a VM exit in a guest) at every
	 * start of a program nobody traces (docs/protocol.md). mon_enabled is set
	 * before the first agent_start() and never changes.
	 */
	if (agent.mon_enabled) {
		pthread_mutex_lock(&agent.lock);
		next = mon_turn();
		pthread_mutex_unlock(&agent.lock);
	}

	(void)arg;
	/* Named by itself, one prctl(): pthread_setname_np() on another thread
	 * opens and writes /proc/self/task/TID/comm, three system calls more at
	 * every start of every program (docs/protocol.md). Before its first
	 * epoll_wait(): whoever the agent answered sees the name. */
	(void)prctl(PR_SET_NAME, "evring-agent", 0, 0, 0);
	/*
	 * The clock choice is not made here: it takes a few ms of CPU and, where
	 * nobody vouches for the TSC, pins two threads to other CPUs, which a program
	 * nobody traces should not pay at every start (issue 28). The first Hello or
	 * session makes it (evr_clock_calibrate()), before any event is written.
	 */
	while (!stop) {
		int timeout = -1, n;
		uint64_t now;

		/* Sleep until the next Hello deadline or look ahead of the ring heads
		 * (evr_memory_touch_turn()) at most (rounded up: never early); not at
		 * all while rings remain to be backed. */
		if (populating) {
			timeout = 0;
		} else if (next != UINT64_MAX) {
			uint64_t ms;

			now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
			ms = next > now ? (next - now + 999999u) / 1000000u : 0;
			timeout = ms > INT_MAX ? INT_MAX : (int)ms;
		}
#if EVR_HAVE_SDT
		/* And look at the USDT probes' semaphores that often (usdt.c). */
		if (timeout < 0 || timeout > EVR_USDT_POLL_MS)
			timeout = EVR_USDT_POLL_MS;
#endif
		n = epoll_wait(agent.epfd, evs, 32, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		pthread_mutex_lock(&agent.lock);
		if ((left = atomic_load(&agent_left)))
			break;	/* with the lock: the destructor does not wait for it */
		for (int i = 0; i < n; i++) {
			void *tag = evs[i].data.ptr;

			if (tag == &tag_stop) {
				stop = true;
				continue;
			}
			if (tag == &tag_kick) {
				eventfd_t v;

				(void)eventfd_read(agent.kickfd, &v);
				kicked = true;
				continue;
			}
			/* A consumer came: before it can list or enable anything. */
			evr_builtin_providers_ensure_locked();
			if (tag == &tag_listen) {
				accept_clients();
			} else {
				conn_event(tag, evs[i].events);
				/* It may have started a session: the touch looks now. */
				kicked = true;
			}
		}
		if (stop) {
			/* The destructor tears down the rest: no clock read at exit. */
			pthread_mutex_unlock(&agent.lock);
			break;
		}
		now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		next = pending_sweep(now, false);
		populating = populate_some(EVR_AGENT_POPULATE_SLICE);
		reap_dead();
		{
			uint64_t mon = mon_turn();
			/* After the batch: a session started by a consumer in it is seen now. */
			uint64_t touch = evr_memory_touch_turn(now, kicked);

			kicked = false;
			next = mon < next ? mon : next;
			next = touch < next ? touch : next;
		}
		pthread_mutex_unlock(&agent.lock);
		atomic_store(&agent_outside, true);
		if (atomic_load(&agent_left)) {
			/* The destructor decides under the lock: wait for its decision. */
			pthread_mutex_lock(&agent.lock);
			if ((left = atomic_load(&agent_left)))
				break;
			pthread_mutex_unlock(&agent.lock);
			/* It stops and joins us instead: the stop is next. */
			atomic_store(&agent_outside, false);
			continue;
		}
		evr_usdt_poll();
		atomic_store(&agent_outside, false);
	}
	if (!left)
		return NULL;
	pthread_mutex_unlock(&agent.lock);
	/*
	 * The process is exiting: sleep until its exit_group() ends us, rather than run
	 * a thread's exit (TLS destructors) beside the library's destructors. Every
	 * signal is blocked here (agent_start()).
	 */
	for (;;)
		pause();
}

/* Close every fd of the agent's; @child: after fork, where sessions are the
 * parent's and the socket path too. Agent lock held (or single-threaded). */
static void agent_teardown(bool child)
{
	struct evr_agent_conn *c;

	if (child && agent.epfd >= 0) {
		/*
		 * The epoll instance is shared with the parent: removing a socket from
		 * it here would remove it from the parent's agent too. Only close.
		 */
		close(agent.epfd);
		agent.epfd = -1;
	}
	for (c = agent.conns; c; c = c->next) {
		if (child) {
			/* Unpublished by evr_sessions_reset_in_child_locked(). */
			evr_session_destroy(c->session);
			c->session = NULL;
			c->reverse = false;
		}
		conn_kill(c);
	}
	reap_dead();
	if (agent.listen_fd >= 0) {
		close(agent.listen_fd);
		if (!child)
			(void)unlink(agent.path);
	}
	if (agent.epfd >= 0)
		close(agent.epfd);
	if (agent.stopfd >= 0)
		close(agent.stopfd);
	if (agent.kickfd >= 0)
		close(agent.kickfd);
	agent.listen_fd = agent.epfd = agent.stopfd = agent.kickfd = -1;
	agent.running = false;
}

/*
 * Start the agent thread. @reverse_fd: a connected socket to adopt (EVR_CONNECT),
 * or -1. Without a trusted runtime directory the thread still serves the
 * reverse connection, if any; with neither, there is no agent.
 */
static int agent_start(int reverse_fd)
{
	struct epoll_event ev;
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	pthread_attr_t attr;
	sigset_t all;
#else
	sigset_t all, old;
#endif
	int err;

	agent.pid = getpid();
	agent.listen_paused = false;
	agent.listen_fd = listen_socket();
	agent.status_err = agent.listen_fd < 0 ? agent.listen_fd : 0;
	if (agent.listen_fd < 0 && reverse_fd < 0 && !agent.mon_enabled)
		return agent.listen_fd;
	/* Listen mode: connect at once (again, in a fork child: a new process to trace). */
	agent.mon_spare = NULL;
	agent.mon_next_ns = 0;
	agent.mon_backoff_ms = EVR_MON_BACKOFF_MIN_MS;
	agent.epfd = epoll_create1(EPOLL_CLOEXEC);
	agent.stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (agent.epfd < 0 || agent.stopfd < 0)
		goto err;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_stop };
	if (epoll_ctl(agent.epfd, EPOLL_CTL_ADD, agent.stopfd, &ev) < 0)
		goto err;
	if (agent.listen_fd >= 0) {
		ev = (struct epoll_event){ .events = EPOLLIN, .data.ptr = &tag_listen };
		if (epoll_ctl(agent.epfd, EPOLL_CTL_ADD, agent.listen_fd, &ev) < 0)
			goto err;
	}
	if (reverse_fd >= 0) {
		err = conn_add(reverse_fd, true, false);
		reverse_fd = -1;
		if (err < 0) {
			/* Refused (another user's listener) or no memory: do not wait. */
			evr_agent_resume_constructor();
			if (agent.listen_fd < 0)
				goto err;
		}
	}
	/* The thread starts with every signal blocked: signals are the application's. */
	sigfillset(&all);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 32)
	/* Given to pthread_create(), which blocks every signal around the clone
	 * anyway: not two more rt_sigprocmask() of ours at every start. */
	err = pthread_attr_init(&attr);
	if (err == 0) {
		err = pthread_attr_setsigmask_np(&attr, &all);
		if (err == 0)
			err = pthread_create(&agent.thread, &attr, agent_main, NULL);
		pthread_attr_destroy(&attr);
	}
#else
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&agent.thread, NULL, agent_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
#endif
	if (err)
		goto err;
	agent.running = true;
	return 0;

err:
	if (reverse_fd >= 0)
		close(reverse_fd);
	if (agent.listen_fd >= 0) {
		snprintf(agent.status, sizeof(agent.status), "cannot start the agent thread");
		agent.status_err = -EAGAIN;
	}
	agent_teardown(false);
	return -EAGAIN;
}

/* ---- fork ------------------------------------------------------------------------------ */

static void fork_prepare(void)
{
	pthread_mutex_lock(&agent.lock);
	evr_counters_fork_prepare();
	pthread_mutex_lock(&evr_registry_lock);
	urcu_bp_before_fork();
}

static void fork_parent(void)
{
	urcu_bp_after_fork_parent();
	pthread_mutex_unlock(&evr_registry_lock);
	evr_counters_fork_parent();
	pthread_mutex_unlock(&agent.lock);
}

static void fork_child(void)
{
	bool restart = agent.enabled;

	urcu_bp_after_fork_child();
	/* membarrier registrations belong to the process: make sure of ours. */
	if (evr_rseq_fence_ok)
		evr_rseq_fence_register();
	evr_sessions_reset_in_child_locked();
	/* The parent's agent thread does not exist here; its fds and sessions do. */
	agent_teardown(true);
	/* Its rings are the parent's: the child's own sessions, if any, are new. */
	evr_memory_touch_reset_in_child();
	pthread_mutex_unlock(&evr_registry_lock);
	evr_counters_fork_child();
	if (restart)
		(void)agent_start(-1);
	pthread_mutex_unlock(&agent.lock);
}

/* ---- constructor and destructor ------------------------------------------------------- */

static int reverse_connect(const char *path, long timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* A listener with a full backlog must not hold the program forever. */
	(void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* EVR_AGENT_HELLO_TIMEOUT_MS: 10 ms to 60 s, else the default. */
static uint32_t hello_timeout_ms(void)
{
	const char *env = getenv("EVR_AGENT_HELLO_TIMEOUT_MS");
	char *end;
	long v;

	if (!env || !*env)
		return EVR_AGENT_HELLO_TIMEOUT_MS;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 10 || v > 60000)
		return EVR_AGENT_HELLO_TIMEOUT_MS;
	return (uint32_t)v;
}

static long connect_timeout_ms(void)
{
	const char *env = getenv("EVR_CONNECT_TIMEOUT_MS");
	char *end;
	long v;

	if (!env || !*env)
		return EVR_CONNECT_TIMEOUT_DEFAULT_MS;
	errno = 0;
	v = strtol(env, &end, 10);
	if (errno || *end || v < 0)
		return EVR_CONNECT_TIMEOUT_DEFAULT_MS;
	return v;
}

/* Wait for Resume (or the connection's end) at most @ms milliseconds. */
static void wait_for_resume(long ms)
{
	struct timespec dl;

	clock_gettime(CLOCK_MONOTONIC, &dl);
	dl.tv_sec += ms / 1000;
	dl.tv_nsec += (ms % 1000) * 1000000;
	if (dl.tv_nsec >= 1000000000) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&resume_lock);
	while (!resume_done) {
		if (pthread_cond_timedwait(&resume_cond, &resume_lock, &dl) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&resume_lock);
}

/* EVR_MONITOR_SOCKET: listen mode, if set to a path that fits a socket address. */
static void monitor_socket(void)
{
	const char *path = secure_getenv("EVR_MONITOR_SOCKET");

	if (!path || !*path || strlen(path) >= sizeof(agent.mon_sa.sun_path))
		return;
	agent.mon_sa.sun_family = AF_UNIX;
	memcpy(agent.mon_sa.sun_path, path, strlen(path) + 1);
	agent.mon_enabled = true;
}

void evr_agent_library_init(void)
{
	const char *env = getenv("EVR_AGENT");
	const char *conn = secure_getenv("EVR_CONNECT");
	long timeout_ms = connect_timeout_ms();
	char *reverse_path = NULL;
	pthread_condattr_t ca;
	bool running;
	int rfd = -1;

	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* After ours: its prepare handler runs before fork_prepare(). */
	evr_heap_atfork_register();

	/* Our children must not connect to the same consumer again. */
	if (conn) {
		/* Only a reverse connection waits for Resume (wait_for_resume()): a
		 * program nobody traces does not touch the page of the condition (the
		 * static initializer's zeros suit evr_agent_resume_constructor()). */
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&resume_cond, &ca);
		pthread_condattr_destroy(&ca);
		reverse_path = strdup(conn);
		unsetenv("EVR_CONNECT");
	}
	if (env && strcmp(env, "0") == 0) {
		free(reverse_path);
		return;
	}
	agent.enabled = true;
	agent.hello_timeout_ms = hello_timeout_ms();
	monitor_socket();
	if (reverse_path)
		rfd = reverse_connect(reverse_path, timeout_ms);
	free(reverse_path);
	pthread_mutex_lock(&agent.lock);
	(void)agent_start(rfd);
	running = agent.running;
	pthread_mutex_unlock(&agent.lock);
	if (rfd >= 0 && running)
		wait_for_resume(timeout_ms);
}

/* No connection, or only listen mode's spare one (no Hello, no session). Agent lock held. */
static bool serves_nobody_locked(void)
{
	for (struct evr_agent_conn *c = agent.conns; c; c = c->next)
		if (!c->dialed || c->hello || c->session || c->reverse)
			return false;
	return true;
}

__attribute__((destructor)) static void agent_library_fini(void)
{
	uint64_t one = 1;
	ssize_t n;

	pthread_mutex_lock(&agent.lock);
	if (!agent.running || agent.pid != getpid()) {
		pthread_mutex_unlock(&agent.lock);
		return;
	}
	/*
	 * Nobody connected (no session, reverse or pending connection) and no USDT
	 * listener: nothing to stop or flush. Leave the agent asleep (the process's exit
	 * ends it); only the socket goes, so that nobody finds it. The library is
	 * NODELETE (producer/CMakeLists.txt): this runs at exit, never at a dlclose()
	 * that would unmap the agent's code. Listen mode's spare connection, which the
	 * monitor has not used, counts as nobody: the exit closes it.
	 */
	if (serves_nobody_locked()) {
		atomic_store(&agent_left, true);
		if (!atomic_load(&agent_outside) && !evr_usdt_active()) {
			if (agent.listen_fd >= 0) {
				close(agent.listen_fd);
				(void)unlink(agent.path);
				agent.listen_fd = -1;
			}
			pthread_mutex_unlock(&agent.lock);
			return;
		}
		/* It saw the flag, or will: it waits for the lock, then sees the stop. */
		atomic_store(&agent_left, false);
	}
	n = write(agent.stopfd, &one, sizeof(one));
	(void)n;
	pthread_mutex_unlock(&agent.lock);
	pthread_join(agent.thread, NULL);
	evr_usdt_stop();
	pthread_mutex_lock(&agent.lock);
	/* Sessions are stopped and flushed: their consumers see them ended. */
	agent_teardown(false);
	pthread_mutex_unlock(&agent.lock);
}
