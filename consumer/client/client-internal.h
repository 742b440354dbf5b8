/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libevring-consumer: the client's private state, shared by client*.c. */
#ifndef EVR_CLIENT_INTERNAL_H
#define EVR_CLIENT_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include <evring/consumer.h>
#include <evring/framing.h>
#include <evring/rundir.h>
#include <evring/shm.h>
#include <evring/trace.h>

struct stat;

#define EVR_CLIENT_HELLO_TIMEOUT_MS	5000
/* Starting a session allocates and populates its rings; stopping waits for an
 * RCU grace period: give both more time than a plain question. */
#define EVR_CLIENT_SESSION_TIMEOUT_MS	30000
/*
 * A reader that found its rings empty asks the kernel whether the producer
 * still lives (a poll() of its pidfd and socket) at most this often: a
 * recorder of many idle processes would otherwise pay a system call per
 * process per round. Ending (the ended flag) is still seen at once; a death,
 * this much later at most, or at once by evr_client_wait_fd().
 */
#define EVR_CLIENT_ALIVE_CHECK_NS	50000000u
/* While waiting for a stop's answer: is the process stopped? Asked this often. */
#define STOPPED_CHECK_MS		100

struct evr_client {
	pid_t pid;
	int sock;			/* control connection, non-blocking, -1 once closed */
	int pidfd;			/* the producer, -1 if the kernel has no pidfd_open */
	/*
	 * /proc/PID/stat, open: its state letter says whether the process is
	 * stopped (evr_client_stop_wait() gives up on a stopped one). -1: none
	 * (listen mode's id, which is no pid; a confined caller with no broker's).
	 */
	int stat_fd;
	bool seen_stopped;		/* the last stop wait ended on a stopped process */
	bool sock_eof;			/* the agent closed the connection */
	uint64_t alive_checked_ns;	/* the last poll() of pidfd and socket */
	bool alive_watched;		/* the caller polls pidfd and socket (epoll) */
	/*
	 * Replies still owed to requests that timed out: the agent answers every
	 * request in order, so the next transaction reads and drops these first.
	 */
	uint32_t stale_replies;
	bool stop_closed;		/* ... after the agent had closed the connection */
	bool stop_sent;			/* evr_client_stop_send() went out, its answer not read */
	bool threads_sent;		/* evr_client_list_threads_send() went out, ditto */
	bool threads_closed;		/* ... after the agent had closed the connection */
	struct evr_frame_rx rx;
	struct evr_process_info info;
	struct evr_schema_set *schemas;

	/* the session */
	enum evr_client_state state;
	struct evr_shm_hdr *hdr;
	struct evr_clock_calib clock;	/* copied and checked once; then the live line */
	/*
	 * TSC sessions: the client takes a sync point of its own whenever a record
	 * is a second past the last one and converts on the line through its
	 * last two points, so that a reader that runs for hours does not drift
	 * with the session's one calibration (docs/clock.md).
	 */
	struct evr_clock_sync_state sync;
	uint64_t sync_next_ts;		/* raw time of the next point; UINT64_MAX: none */
	int doorbell_fd;
	/* At most one of these is ever made: a client reads records or spans. */
	struct evr_reader *reader;
	struct evr_span_reader *spans;
	uint64_t meta_pos;		/* metadata area bytes already added to schemas */
	bool meta_broken;		/* the area failed validation: read no further */
};

/* ---- processes in namespaces of their own (client-ns.c) ---- */

/* What /proc says of a process, as far as finding its agent goes. */
struct evr_ns_proc {
	pid_t pid;			/* as we see it */
	pid_t ns_pid;			/* as it sees itself (NSpid's last entry); its socket's name */
	uid_t uid;			/* effective, as we see it */
	pid_t tgid;			/* its process (@pid may be a thread's), or 0 */
	bool other_pidns, other_mntns, other_userns;
};

/* Fill @ret from /proc/@pid/status and /proc/@pid/ns. Return: 0, -ESRCH. */
int evr_ns_probe(pid_t pid, struct evr_ns_proc *ret);

/* Variable @name of @pid's environment (/proc/PID/environ) into @buf.
 * Return: 1 found, 0 not set, -ENAMETOOLONG, -errno. */
int evr_ns_environ_get(pid_t pid, const char *name, char *buf, size_t len);

/* An O_PATH descriptor of /proc/@pid/root (close-on-exec), or -errno with @errbuf set. */
int evr_ns_root_open(pid_t pid, char *errbuf, size_t errlen);

/* @p's runtime directories as its agent chooses them (its environment, its
 * /run/user), paths inside its root. Return: 0, or -errno with @errbuf set. */
int evr_ns_rundirs(const struct evr_ns_proc *p, int rootfd,
		   char dirs[EVR_RUNDIR_MAX][EVR_RUNDIR_LEN], unsigned int *ret_n, char *errbuf,
		   size_t errlen);

/*
 * Open and check @dir inside @p's root: an O_PATH descriptor of a directory
 * trusted to hold @p's uid's sockets, -ENOENT (missing), or -EPERM/-errno with
 * @errbuf set. @shown receives the path to name it by (/proc/PID/root/DIR).
 */
int evr_ns_rundir_open(const struct evr_ns_proc *p, int rootfd, const char *dir, char *shown,
		       size_t shownlen, char *errbuf, size_t errlen);

/*
 * Does @p (in a namespace of its own) have an agent listening in its runtime
 * directory that evr_process_list() lists (our uid or root; the same
 * EVR_RUNTIME_DIR setting as ours)? Return: 1 and the socket's identity in
 * @ret_st, 0 not, -ENOMEM. (client-find.c)
 */
int evr_ns_listed(const struct evr_ns_proc *p, struct stat *ret_st);

/* pidfd_open(@pid) (close-on-exec), or -1 with errno. */
int evr_consumer_pidfd_open(pid_t pid);

/* Write "fmt..." to @errbuf (may be NULL) and return @err. */
int evr_client_fail(char *errbuf, size_t errlen, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/**
 * evr_client_transact() - send @req, wait for its reply.
 * @want: the reply body expected; an Error reply becomes -code with its message.
 * @fds: receives @nfds fds that must come with the reply (owned by the caller).
 * @ret: free with evr_pb_reply_free().
 */
int evr_client_transact(struct evr_client *c, const Evr__Request *req, Evr__Reply__BodyCase want,
			int timeout_ms, int *fds, unsigned int nfds, Evr__Reply **ret, char *errbuf,
			size_t errlen);

/**
 * evr_client_send() - the first half of evr_client_transact(): send @req.
 * Return: 0 sent; 1 the agent had closed the connection (what it said before
 * is read by evr_client_recv() with @timeout_ms -1); -errno with a message.
 */
int evr_client_send(struct evr_client *c, const Evr__Request *req, int timeout_ms, char *errbuf,
		    size_t errlen);

/**
 * evr_client_recv() - the second half: the reply to the request sent last,
 * after those to earlier requests that timed out, all within @timeout_ms (0:
 * only what is there; -1: the request did not go out, read without waiting).
 * A timeout leaves the reply to come as stale (dropped by the next call).
 */
int evr_client_recv(struct evr_client *c, Evr__Reply__BodyCase want, int timeout_ms, int *fds,
		    unsigned int nfds, Evr__Reply **ret, char *errbuf, size_t errlen);

/* Move LIVE to ENDED or GONE if the session ended or the producer went away. */
void evr_client_refresh_state(struct evr_client *c);
void evr_client_refresh_state_lazy(struct evr_client *c);

/* Add every new description in the metadata area to the schema set. */
void evr_client_read_meta(struct evr_client *c);

/*
 * Listen mode (client-dialin.c). evr_client_dialin_take(): the parked
 * connection of @pid (non-blocking, close-on-exec; the caller's), waiting up
 * to @timeout_ms for the agent's next one if another request holds it; with
 * the process's pidfd in @ret_pidfd (-1 if none) and in @ret_foreign whether
 * @pid is our id for a process of another pid namespace (SO_PEERCRED then
 * says pid 0, not @pid).
 * Return: 0; -ENOENT @pid is not in listen mode; -ESRCH, -ETIMEDOUT with a line.
 * evr_client_dialin_pids(): the pids in listen mode (malloc'ed, or NULL when none).
 */
int evr_client_dialin_take(pid_t pid, int timeout_ms, int *ret_fd, int *ret_pidfd,
			   bool *ret_foreign, char *errbuf, size_t errlen);
int evr_client_dialin_pids(pid_t **ret, uint32_t *ret_n);
/*
 * A foreign process (listen mode's id) has no /proc entry of ours: its names come
 * from its HelloReply. evr_client_dialin_learn() keeps them (after a Hello);
 * evr_client_dialin_named(): 1 if @pid is a foreign process named @name (its
 * executable's or argv[0]'s base name), 0 if another, -ENOENT if not foreign.
 */
void evr_client_dialin_learn(pid_t pid, const struct evr_process_info *pi);
int evr_client_dialin_named(pid_t pid, const char *name);

#endif /* EVR_CLIENT_INTERNAL_H */
