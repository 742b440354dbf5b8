/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libevring-consumer: attach to a running process by PID, start a session on
 * it, and read its rings in place.
 *
 * A struct evr_client is one connection to one process's agent (the thread
 * libevring runs in every instrumented process). It carries at most one
 * session, which lives exactly as long as the connection: evr_client_free(), or
 * the consumer dying, ends it and the producer frees its memory at once.
 *
 * The socket of process PID is PID.sock in a runtime directory of the process's
 * effective uid: $EVR_RUNTIME_DIR if set, else /run/user/UID/evring (where
 * /run/user/UID is the user's own) or /tmp/evring-UID (docs/protocol.md,
 * "Finding the process"). A directory is used only if it is the uid's own and
 * no one else may write to it, and the socket only if SO_PEERCRED says that
 * process PID of that uid serves it: another user cannot plant a fake agent.
 * The agent checks its peer's uid with SO_PEERCRED as well.
 *
 * Errors are -errno with a one-line reason in @errbuf, e.g.
 *   -ESRCH   "no process 4242"
 *   -EACCES  "process 4242 belongs to user bob (uid 1001); you can attach only to your own processes"
 *   -ENOENT  "process 4242 (sleep) does not run libevring's agent"
 *   -EPERM   "process 4242 (app): refusing /tmp/evring-1001: it belongs to uid 1002 (eve), ..."
 *   -EPROTO  "process 4242 answered with a malformed message"
 */
#ifndef EVR_CONSUMER_H
#define EVR_CONSUMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/abi.h>
#include <evring/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

#define EVR_PROTOCOL_VERSION 1u

/* The clock a process stamps events with, and why (its evr_clock_get_info()). */
struct evr_process_clock {
	bool known;			/* false: the process is older than this report */
	uint32_t kind;			/* enum evr_clock_kind */
	char source[32];		/* the kernel's clocksource then: "tsc", "kvm-clock"... */
	char reason[224];		/* one line */
	uint64_t tsc_hz;		/* 0 unknown */
	uint64_t skew_bound_ns;		/* cross-CPU TSC offset bound, 0 not measured */
	uint32_t skew_pairs;
	uint32_t rdtsc_ns, gettime_ns;	/* the costs it measured */
};

struct evr_process_info {
	uint32_t pid, ppid, uid;
	/*
	 * 0, or the pid the process has in a pid namespace of its own (a
	 * container), when pid is the one it has in the consumer's namespace.
	 */
	uint32_t ns_pid;
	uint32_t nr_cpus;
	uint32_t sessions_active;
	uint32_t argc;
	char **argv;			/* argc strings */
	char *exe;
	char *hostname;
	char *evring_version;
	uint64_t start_realtime_ns;
	struct evr_clock_calib clock;
	struct evr_process_clock clock_choice;
	const void *pb;			/* the packed evr.ProcessInfo, as received */
	size_t pb_len;
};

struct evr_session_info {
	uint32_t session_id;
	uint64_t serial;
	uint32_t mode;
	uint64_t ring_size;		/* granted, per ring */
	uint32_t client_pid;
	char *providers;
	char *client;
	uint64_t shm_size;		/* the session's memory in all; 0: an older producer */
};

struct evr_client;

/**
 * evr_client_connect() - connect to process @pid's agent and say hello.
 * @client_name: shown by `evring ps` ("evring record"); may be NULL.
 * @ret: free with evr_client_free().
 * Return: 0 or -errno (see above), with @errbuf set.
 */
int evr_client_connect(pid_t pid, const char *client_name, struct evr_client **ret,
		       char *errbuf, size_t errlen);

/**
 * evr_client_open_socket() - the first half of evr_client_connect(): find process
 * @pid's agent socket, check its directory and its peer (SO_PEERCRED), and
 * connect, exchanging no message. For a process that must not open sockets
 * itself (a sandboxed tool): a helper connects and passes the socket over.
 * @ret_sock: the connected socket (non-blocking, close-on-exec).
 * @ret_pidfd: a pidfd of @pid (close-on-exec), or -1 where the kernel has none.
 * Return: 0, or -errno as evr_client_connect() with @errbuf set.
 * Context: any thread; blocks at most 5 s (an agent with a full backlog).
 */
int evr_client_open_socket(pid_t pid, int *ret_sock, int *ret_pidfd, char *errbuf,
			   size_t errlen);

/**
 * evr_client_adopt() - the second half of evr_client_connect(): a client on
 * @sock (from evr_client_open_socket(), here or in another process), and Hello.
 * Takes ownership of @sock and @pidfd (-1: none), also on failure.
 * @ret: free with evr_client_free().
 * Return: 0, or -errno with @errbuf set.
 * Context: any thread; one round trip (waits up to 5 s).
 */
int evr_client_adopt(pid_t pid, int sock, int pidfd, const char *client_name,
		     struct evr_client **ret, char *errbuf, size_t errlen);

/**
 * evr_client_adopt_stat() - evr_client_adopt() with @pid's /proc/PID/stat
 * opened by whoever connected (@stat_fd, taken over; -1: none), for a caller
 * that may not open files: evr_client_stop_wait() reads the process's state
 * from it. evr_client_adopt() opens it itself.
 * Context: as evr_client_adopt().
 */
int evr_client_adopt_stat(pid_t pid, int sock, int pidfd, int stat_fd, const char *client_name,
			  struct evr_client **ret, char *errbuf, size_t errlen);

/**
 * evr_client_listen() / evr_client_accept() - the reverse connection used to
 * trace a program from its first event: evr_client_listen() creates a private
 * listening socket and returns the value to put in the child's EVR_CONNECT
 * environment variable; the child's libevring connects to it before main() and
 * waits (at most EVR_CONNECT_TIMEOUT_MS, default 10 s) for evr_client_resume().
 * @ret_fd: the listening socket (close-on-exec); @ret_path: malloc'ed, unlink
 * and free it when done.
 */
int evr_client_listen(int *ret_fd, char **ret_path, char *errbuf, size_t errlen);
int evr_client_accept(int listen_fd, int timeout_ms, const char *client_name,
		      struct evr_client **ret, char *errbuf, size_t errlen);
/* Let a reverse-connected program run (after starting the session). */
int evr_client_resume(struct evr_client *c, char *errbuf, size_t errlen);

/* One line about a listen-mode peer (refused, connected), for the caller to log. */
typedef void (*evr_client_dialin_log_fn)(void *arg, const char *line);

/**
 * evr_client_dialin_start() - listen mode: accept the agents of programs started
 * with EVR_MONITOR_SOCKET=@path, for a consumer that cannot reach their runtime
 * directory (another mount namespace). Creates the socket @path (mode 0600; an
 * old socket there is replaced; its directory must not be writable by others)
 * and a thread that accepts, checks each peer (SO_PEERCRED: our uid, or any when
 * we are root) and keeps its connection. A process that our pid namespace
 * cannot name gets an id of ours (EVR_DIALIN_ID_MIN) instead of its pid (needs
 * Linux 6.9: SO_PEERPIDFD and pidfs tell which process it is; refused before).
 * From then on, evr_process_list() includes those processes and
 * evr_client_connect() attaches to them through their connections. One per
 * process. @log: called from that thread with one line per peer refused or
 * arrived; may be NULL.
 * Return: 0, or -errno with one line in @errbuf.
 * Context: before any evr_client_connect() that should see them.
 */
int evr_client_dialin_start(const char *path, evr_client_dialin_log_fn log, void *log_arg,
			    char *errbuf, size_t errlen);
/* Close the socket (and unlink it), drop every parked connection, end the thread. */
void evr_client_dialin_stop(void);
/* True if process @pid came in listen mode and has not exited. Context: any thread. */
bool evr_client_dialin_has(pid_t pid);

/*
 * The first id listen mode gives a process in a pid namespace that ours cannot
 * name (SO_PEERCRED says pid 0): ids from here up are ours, never a real pid
 * (PID_MAX_LIMIT is 4194304), each kept while its process stays connected.
 */
#define EVR_DIALIN_ID_MIN (1 << 30)
/* True if @pid is such an id (its process's own pid is in its HelloReply). */
bool evr_client_dialin_foreign(pid_t pid);

/*
 * A program started to be traced from its first event (evr_client_launch()).
 * The caller owns it: reap it, kill it or let it run on, then evr_launch_fini().
 */
struct evr_launch {
	pid_t pid;			/* -1: none (it could not be started) */
	int pidfd;			/* -1 where the kernel has no pidfd_open() */
	bool reaped;
	int status;			/* as waitpid() reports it, once reaped */
};

/**
 * evr_client_launch() - start @argv[0] (searched in PATH) with EVR_CONNECT set
 * and accept its connection, waiting up to EVR_CONNECT_TIMEOUT_MS (default
 * 10 s), or less if the program exits first. The program then waits in
 * libevring's constructor until evr_client_resume(): start the session first.
 * @client_name: shown by `evring ps`.
 * @l: filled in every case; on failure @l->pid may still name a running
 * program (it never connected in time): evr_launch_kill() it.
 * @ret: the connection, free with evr_client_free().
 * Return: 0, or -errno with one line in @errbuf ("cannot run X: No such file
 * or directory", "X exited with status 1 before connecting: is it linked with
 * libevring...", "X (pid N) did not connect within 10 s: ...").
 * Context: forks; the child inherits the caller's environment and fds that are
 * not close-on-exec.
 */
int evr_client_launch(char *const *argv, const char *client_name, struct evr_launch *l,
		      struct evr_client **ret, char *errbuf, size_t errlen);

/**
 * evr_client_launch_timeout() - evr_client_launch(), waiting @timeout_ms for the
 * connection (0: EVR_CONNECT_TIMEOUT_MS or 10 s). The program's own wait for
 * Resume is set to the same (EVR_CONNECT_TIMEOUT_MS in its environment).
 * A timeout is -ETIMEDOUT, "X (pid N) did not connect within 10 s: ...".
 */
int evr_client_launch_timeout(char *const *argv, const char *client_name, int timeout_ms,
			      struct evr_launch *l, struct evr_client **ret, char *errbuf,
			      size_t errlen);

/* Reap the program if it has ended, waiting up to @timeout_ms for it (0: do not wait). */
void evr_launch_reap(struct evr_launch *l, int timeout_ms);

/**
 * evr_launch_stop() - ask the program to stop (SIGTERM: it may clean up) and reap
 * it, waiting up to @grace_ms. For a program that cannot be traced: say so to
 * the user first, and what became of it after.
 * Return: 1 stopped (and reaped), 0 nothing to stop, -ETIMEDOUT it runs on
 * (ignored or handled SIGTERM without exiting), -errno.
 */
int evr_launch_stop(struct evr_launch *l, int grace_ms);

/* SIGKILL the program and reap it. Return: 1 killed, 0 nothing to kill, -errno.
 * Prefer evr_launch_stop(): this one gives the program no chance to clean up. */
int evr_launch_kill(struct evr_launch *l);

/* "exited with status 0", "died from signal 9 (Killed)", "is still running". */
void evr_launch_describe(const struct evr_launch *l, char *buf, size_t len);

/* Close the pidfd (the program itself is left alone). */
void evr_launch_fini(struct evr_launch *l);

/* Closes the connection, which ends its session. Accepts NULL. */
void evr_client_free(struct evr_client *c);

/* Borrowed until evr_client_free(). */
const struct evr_process_info *evr_client_process(const struct evr_client *c);

/* @ret: array of @ret_n, free with evr_session_info_free(). */
int evr_client_list_sessions(struct evr_client *c, struct evr_session_info **ret,
			     uint32_t *ret_n, char *errbuf, size_t errlen);
void evr_session_info_free(struct evr_session_info *v, uint32_t n);

struct evr_thread_info {
	uint32_t tid;
	char name[16];			/* as /proc/PID/task/TID/comm; "" if it exited meanwhile */
};

/**
 * evr_client_list_threads() - the process's threads now, with their names.
 * @ret: malloc'ed array of @ret_n, free() it.
 * Return: 0, or -errno with one line in @errbuf. Works with or without a
 * session running on the connection; a reply that comes after the timeout is
 * dropped by the next request.
 * Context: the client's thread; one round trip (waits up to 5 s).
 */
int evr_client_list_threads(struct evr_client *c, struct evr_thread_info **ret, uint32_t *ret_n,
			    char *errbuf, size_t errlen);

/**
 * evr_client_list_threads_ms() - evr_client_list_threads(), waiting at most
 * @timeout_ms for the answer (and for a late answer to an earlier request):
 * for a loop that serves other processes too. A stopped process: -ETIMEDOUT.
 * Context: the client's thread; one round trip.
 */
int evr_client_list_threads_ms(struct evr_client *c, int timeout_ms,
			       struct evr_thread_info **ret, uint32_t *ret_n, char *errbuf,
			       size_t errlen);

/**
 * evr_client_list_threads_send() - the first half of
 * evr_client_list_threads_ms(): send the request, without waiting for the
 * answer, so that a caller ending many recordings asks every process at once
 * and collects the answers with evr_client_list_threads_recv() under one
 * deadline: processes that do not answer (stopped) then cost one wait in all.
 * No other request may go out on @c before that.
 * Return: 0, or -errno with one line in @errbuf (-EINVAL: one is out already).
 * Context: the client's thread; no wait.
 */
int evr_client_list_threads_send(struct evr_client *c, char *errbuf, size_t errlen);

/**
 * evr_client_list_threads_recv() - the second half: the answer to
 * evr_client_list_threads_send(), waiting at most @timeout_ms (0: only what
 * is there already). As evr_client_list_threads_ms() otherwise: -ETIMEDOUT
 * for a process that did not answer, whose late answer the next request drops.
 * Context: the client's thread.
 */
int evr_client_list_threads_recv(struct evr_client *c, int timeout_ms,
				 struct evr_thread_info **ret, uint32_t *ret_n, char *errbuf,
				 size_t errlen);

/* A counter the process has created (<evring/counters.h>). */
struct evr_counter_info {
	char *provider;
	char *name;
	char *display_name;
	char *unit;			/* "" when none */
	uint32_t kind;			/* enum evr_counter_kind: 1 mean, 2 incrementing, 3 gauge,
					 * 4 polling rate, 5 histogram */
};

/**
 * evr_client_list_counters() - the process's counters now (at most 512), oldest
 * first, whether or not a session samples them.
 * @ret: array of @ret_n, free with evr_counter_info_free().
 * Return: 0, or -errno with one line in @errbuf (-EOPNOTSUPP: a producer older
 * than this request).
 * Context: the client's thread; one round trip (waits up to 5 s).
 */
int evr_client_list_counters(struct evr_client *c, struct evr_counter_info **ret, uint32_t *ret_n,
			     char *errbuf, size_t errlen);
void evr_counter_info_free(struct evr_counter_info *v, uint32_t n);

/* Every event the process has registered, added to @into. */
int evr_client_list_events(struct evr_client *c, struct evr_schema_set *into, char *errbuf,
			   size_t errlen);

/**
 * evr_process_list() - processes the caller may attach to: every live socket in
 * the caller's runtime directories (root: every user's). Directories that
 * cannot be trusted (see above) are skipped.
 * @ret: malloc'ed array of pids, sorted; @ret_n its length.
 */
int evr_process_list(pid_t **ret, uint32_t *ret_n);

/*
 * The /proc check: a cheap look, every 50 ms say, for processes started since
 * the last look in a mount or pid namespace of their own (containers), whose
 * runtime directories inotify on ours cannot see. A look reads the last pid
 * handed out (/proc/loadavg) and stat()s the few since, or else reads /proc's
 * directory; a pid new since the last look (or reused: a new /proc inode) is
 * examined once, and one in namespaces of its own whose agent does not listen
 * yet is examined again at every look, for 3 s at most.
 */
struct evr_proc_check;

/* A check; its first look only takes note of what runs. Return: 0, -ENOMEM, -errno. */
int evr_proc_check_new(struct evr_proc_check **ret);
void evr_proc_check_free(struct evr_proc_check *pc);

/**
 * evr_proc_check_run() - one look: into @ret (at most @cap; the others are
 * looked at again next time), the pids of processes in namespaces of their own
 * that evr_process_list() would list now and that this check had not reported
 * (after a look that read /proc's directory, one reported before may come
 * again: the caller knows it). Return: 0, -ENOMEM. Context: one thread at a
 * time per check.
 */
int evr_proc_check_run(struct evr_proc_check *pc, pid_t *ret, uint32_t cap, uint32_t *ret_n);

/* Processes in namespaces of their own whose agents the check still awaits. */
uint32_t evr_proc_check_pending(const struct evr_proc_check *pc);

/**
 * evr_proc_last_pid() - the last pid the kernel handed out in the caller's pid
 * namespace, from /proc/loadavg open at @fd (pread: a confined caller keeps
 * it open). Every process and thread made since moves it, those of pid
 * namespaces below ours (containers) too: while it stays, and nothing is
 * pending, a look at /proc would find nothing new.
 * Return: the pid, or -errno.
 */
int evr_proc_last_pid(int fd);

/**
 * evr_process_list_checked() - evr_process_list(), saying what it skipped.
 * @errbuf: when a directory was refused, the first refusal (what is wrong with
 *          it and how to fix it), else "".
 * Return: the number of runtime directories refused (their sockets are not
 * listed), or -errno.
 */
int evr_process_list_checked(pid_t **ret, uint32_t *ret_n, char *errbuf, size_t errlen);

/**
 * evr_process_find() - the processes one may attach to (evr_process_list())
 * named @name: its comm (/proc/PID/comm), or the last component of its
 * executable or of its argv[0].
 * @ret: malloc'ed, sorted pids (possibly none); @ret_n their number.
 * Return: 0, -EINVAL, -errno.
 */
int evr_process_find(const char *name, pid_t **ret, uint32_t *ret_n);

/**
 * evr_process_resolve_name() - the one process named @name, for `-n NAME`.
 * Return: 0 and @ret_pid; -ESRCH none ("no process named app runs libevring's
 * agent (process 4242 of that name does not; ...)"), -ENOTUNIQ several ("2
 * processes named app run libevring's agent: 4242 (./app -a), 4250 (./app -b);
 * choose one with -p PID"), -errno; with one line in @errbuf.
 */
int evr_process_resolve_name(const char *name, pid_t *ret_pid, char *errbuf, size_t errlen);

/* ---- the session ------------------------------------------------------- */

struct evr_attach_opts {
	const char *providers;		/* "Name[:0xKW[:LEVEL[:k=v;...]]],..." */
	uint64_t ring_size;		/* per CPU ring; 0: the producer's default */
	uint32_t packet_size;		/* 0: default */
	uint32_t mode;			/* EVR_MODE_DISCARD or EVR_MODE_OVERWRITE */
	uint32_t meta_size;		/* 0: default */
	uint32_t counter_interval_ms;	/* 0: no counters */
	uint32_t stack_depth;		/* events carry the writer's stack, this many frames; 0: no */
};

/**
 * evr_client_start() - start this connection's session and map its memory.
 * The consumer is the session's gating reader (discard mode).
 * Return: 0, -EINVAL (bad options; @errbuf says which), -EBUSY (already a
 * session on this connection, or 64 sessions live in the process), -errno.
 */
int evr_client_start(struct evr_client *c, const struct evr_attach_opts *opts, char *errbuf,
		     size_t errlen);

/**
 * evr_client_stop() - ask the producer to stop the session; on success it has
 * been flushed and marked ended, and reading drains it to the end.
 */
int evr_client_stop(struct evr_client *c, char *errbuf, size_t errlen);

/**
 * evr_client_stop_send() - the first half of evr_client_stop(): send the
 * request, wait for nothing. A caller ending many sessions sends to all, then
 * collects the answers with evr_client_stop_wait() under one deadline, so
 * that the agents stop side by side and a stopped process costs its wait
 * once, not once per process before it.
 * Return: 0 (also when there is nothing to stop any more), -errno.
 */
int evr_client_stop_send(struct evr_client *c, char *errbuf, size_t errlen);

/**
 * evr_client_stop_wait() - the second half: wait at most @timeout_ms (0: take
 * an answer that is there) for the answer to evr_client_stop_send().
 * -ETIMEDOUT: the process did not answer (stopped?); the session's memory is
 * still read to its end (the packets still open, and the final losses), and
 * the late answer is dropped by the next request. A process found stopped
 * (job control or a tracer: /proc/PID/stat's state T or t, looked at every
 * 100 ms of the wait) is not waited for further: -ETIMEDOUT at once, and
 * evr_client_seen_stopped() says why.
 */
int evr_client_stop_wait(struct evr_client *c, int timeout_ms, char *errbuf, size_t errlen);

/* The last stop wait (evr_client_stop_wait()) ended early on a stopped process. */
bool evr_client_seen_stopped(const struct evr_client *c);

/**
 * evr_client_unanswered() - a request to the process timed out and its answer
 * has not come since: the process is stopped or stuck now, and the next
 * question to it should not wait long.
 */
bool evr_client_unanswered(const struct evr_client *c);

/**
 * evr_client_next() - the next record of the session, in ring order (not time
 * order), decoded against the session's metadata.
 * Return: 1 a record in @ret (payload borrowed until the next call), 0 nothing
 * now, -errno.
 */
int evr_client_next(struct evr_client *c, struct evr_event_view *ret);

/* Discard mode: give everything read so far back to the writers. */
void evr_client_release(struct evr_client *c);

/**
 * evr_client_wait() - sleep until a packet completes, the session ends, the
 * producer dies, or @timeout_ms passes (-1: no limit).
 * Return: 1 something to do, 0 timeout, -errno.
 */
int evr_client_wait(struct evr_client *c, int timeout_ms);

/*
 * evr_client_wait_fd() - evr_client_wait(), also woken when @fd (-1: none)
 * becomes readable: a recorder's write completions (an eventfd).
 * Return: as evr_client_wait().
 */
int evr_client_wait_fd(struct evr_client *c, int fd, int timeout_ms);

/*
 * For a loop that drains many sessions and sleeps in epoll on all of them
 * (evring record --all): the descriptors to wait on, each -1 when there is
 * none. The doorbell (an eventfd, non-blocking) is readable once a writer rang
 * it after evr_client_span_arm(), or the session ended: read it to clear it.
 * The pidfd is readable once the producer died, the socket once the agent
 * closed it: then call evr_client_check_alive(). Level-triggered: take the
 * socket out of the set once the state is no longer EVR_CLIENT_LIVE.
 */
struct evr_client_wait_set {
	int doorbell;
	int pidfd;
	int sock;
};
void evr_client_wait_set(const struct evr_client *c, struct evr_client_wait_set *ret);

/**
 * evr_client_span_arm() - ask the producer's writers to ring the doorbell when
 * a packet completes (the handshake of evr_client_wait_fd(), without its
 * sleep), for a caller that then sleeps on the doorbell among others.
 * Return: 1 do not sleep on it (a whole span waits, the session ended or the
 * producer is gone), 0 armed, -errno.
 */
int evr_client_span_arm(struct evr_client *c);

/*
 * evr_client_watch_alive() - the caller watches the pidfd and the socket of
 * evr_client_wait_set() and calls evr_client_check_alive() when one is
 * readable: readers that find the rings empty then no longer poll() them
 * every 50 ms (the ended flag is still looked at every time).
 */
void evr_client_watch_alive(struct evr_client *c);

/* Ask the kernel now whether the producer lives (a poll() of pidfd and socket). */
void evr_client_check_alive(struct evr_client *c);

enum evr_client_state {
	EVR_CLIENT_IDLE = 0,	/* no session yet */
	EVR_CLIENT_LIVE,	/* session running */
	EVR_CLIENT_ENDED,	/* producer flushed and ended it; drain then done */
	EVR_CLIENT_GONE,	/* producer died: drain what it published, then done */
};
enum evr_client_state evr_client_state(const struct evr_client *c);

/* True once the session is ended or gone and every record was returned. */
bool evr_client_drained(const struct evr_client *c);

/* The session's metadata seen so far (grows as events register). */
const struct evr_schema_set *evr_client_schemas(const struct evr_client *c);

/**
 * evr_client_meta_next() - raw metadata entries, for writers of trace files.
 * @pos: 0 at first; advanced past each entry returned.
 * Return: 1 an entry (borrowed from the mapping), 0 none new, -EBADMSG.
 */
int evr_client_meta_next(struct evr_client *c, uint64_t *pos, uint32_t *ret_kind,
			 const void **ret_data, uint32_t *ret_len);

/* The mapped session: geometry and clock for tools that read rings raw. */
const struct evr_shm_hdr *evr_client_shm(const struct evr_client *c);

/* ---- raw spans, for zero-copy recorders ---------------------------------- */

/*
 * A run of whole published records in one ring, inside one packet: a recorder
 * writes it to its file straight from the mapping. Packet headers are included
 * when a span starts at a packet boundary.
 */
struct evr_span {
	uint32_t ring;
	uint64_t pos;			/* ring byte position of data[0] */
	const void *data;		/* points into the mapping */
	uint32_t len;
	/* What the span holds, known when it was handed out: EVENT records, and
	 * events lost (its LOST records, and what a lapped reader skipped before
	 * it, from the packet header). Count them once evr_client_span_done()
	 * said 0; after -ESTALE the next span's packet header accounts for them. */
	uint64_t events;
	uint64_t lost;
};

/**
 * evr_client_span_next() - the next span from any ring (round robin).
 * Return: 1 a span, 0 nothing published, -errno.
 * Does not consume: call evr_client_span_done() once the span is written.
 */
int evr_client_span_next(struct evr_client *c, struct evr_span *ret);

/*
 * EVR_CLIENT_SPAN_WHOLE: only spans that reach their packet's end, once the
 * ring's next packet has begun; their counts come from the packet headers, so
 * the records are never walked (a recorder that moves packets). The part of a
 * packet still being filled comes out without the flag, and anyway once the
 * session ended or the producer is gone.
 */
#define EVR_CLIENT_SPAN_WHOLE 0x1u

/**
 * evr_client_span_get() - evr_client_span_next() with @flags
 * (EVR_CLIENT_SPAN_WHOLE or 0).
 * Return: 1 a span, 0 nothing ready now, -errno (-EINVAL: unknown flags).
 * Context: the client's thread; no system call, except a poll() of the
 * producer's pidfd and socket when nothing is ready.
 */
int evr_client_span_get(struct evr_client *c, uint32_t flags, struct evr_span *ret);

/**
 * evr_client_span_done() - consume @sp. In discard mode this hands its space
 * back to the writers. In overwrite mode it checks that the writers did not
 * reach the span while it was being used.
 * Return: 0 intact, -ESTALE the span may have been overwritten (drop what was
 * written from it; the loss is reported by the next span's packet header).
 */
int evr_client_span_done(struct evr_client *c, const struct evr_span *sp);

/**
 * evr_client_span_hold() - with @on, evr_client_span_done() consumes a span
 * but keeps its space from the writers until evr_client_span_release(): for
 * recorders that gather many spans into one write (direct I/O). Several done
 * spans may be held at once; hold them briefly, since the writers lose what
 * does not fit beside them. Off releases what is held. Overwrite mode holds
 * nothing (its writers never wait for a reader).
 * Return: 0, -EINVAL (the client reads records, or is not started), -ENOMEM.
 */
int evr_client_span_hold(struct evr_client *c, bool on);

/* Give the writers back the space of every span done so far. Accepts NULL. */
void evr_client_span_release(struct evr_client *c);

/*
 * Where the reader stands on @ring (the end of the last span done), and giving
 * back @ring's space below @pos only: for recorders with several writes in
 * flight, each holding the spans done before it was sent. @pos is clamped to
 * where the reader stands. Accept NULL (pos: 0).
 */
uint64_t evr_client_span_pos(const struct evr_client *c, uint32_t ring);
void evr_client_span_release_to(struct evr_client *c, uint32_t ring, uint64_t pos);

/* The most bytes any ring holds that its writers may not reuse yet: published
 * and not consumed, or consumed and held. 0 before spans are read. */
uint64_t evr_client_span_backlog(const struct evr_client *c);

/* The most bytes any ring holds that the reader has not taken yet (published,
 * not consumed; held spans not counted): how far the reader lags. */
uint64_t evr_client_span_unread(const struct evr_client *c);

/**
 * evr_client_span_final_lost() - once the session is ended and every span was
 * consumed: the events lost on @ring that no record in the spans accounts for
 * (the ring was full when the session ended, or the producer died). A recorder
 * stores them so that its file's loss count is exact.
 * Return: 0 and @ret_count, -EAGAIN (not drained yet), -EINVAL.
 */
int evr_client_span_final_lost(struct evr_client *c, uint32_t ring, uint64_t *ret_count);

/**
 * evr_span_count() - count what a span holds: its EVENT records and the events
 * its LOST records report. Walks the record headers with every size checked
 * against the span (evr_span.events needs no walk; this is for spans read back
 * from elsewhere).
 * @sp: a span from evr_client_span_next() (or read back from a file).
 * Return: 0, or -EBADMSG (a record overruns the span or is malformed; the
 * counts are then untouched).
 */
int evr_span_count(const struct evr_span *sp, uint64_t *ret_events, uint64_t *ret_lost);

/*
 * Use either records (evr_client_next) or spans (evr_client_span_*) on one
 * client, not both.
 */

/* ---- values people type ------------------------------------------------------ */

/**
 * evr_duration_parse() - a duration in the forms every evring tool takes:
 * "500ms", "30s", "5m", "1h", "2d" ("ns", "us" and "min" too), a bare number
 * of seconds ("0.5"), and the forms of the dotnet tools (TimeSpan):
 * "dd:hh:mm:ss" (dotnet-trace --duration), "hh:mm:ss", "hh:mm", "d.hh:mm:ss",
 * the seconds with a fraction ("00:00:01.5"). Minutes and seconds must be below
 * 60, hours below 24 when days are given. No sign, spaces, exponent or "inf".
 * @ret_ns: untouched on failure. 0 is a valid result: callers set their bounds.
 * Return: 0, -EINVAL (not a duration), -ERANGE (over about 31 years).
 * Context: any thread.
 */
int evr_duration_parse(const char *s, uint64_t *ret_ns);

#ifdef __cplusplus
}
#endif

#endif /* EVR_CONSUMER_H */
