/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The watch: "attach to every process and keep its counters", the model the
 * tools that look at many processes at once share (clrtop, the monitor's hub,
 * machine-wide recording). Not installed: a header of the tree, for its tools.
 *
 *   discovery  the processes of the runtime directories (evr_process_list(), or
 *              the broker's list for a confined tool), rescanned when inotify
 *              says a socket came or went there, when the /proc check (every
 *              check_ms) finds a process of a namespace of its own listening
 *              in a directory of its own, and every rescan_ms anyway (a
 *              directory made later, another user's processes for root)
 *   attach     a counters-only session per process, started on a short-lived
 *              thread (a stopped process must not stall the others: connect
 *              and start wait up to the consumer library's timeouts)
 *   state      attaching -> live -> exited, or -> failed with a reason; every
 *              change reported to the owner (ops->changed)
 *   counters   a table per process, in first-seen order, found again with a
 *              hint (an interval's samples come in the same order every time),
 *              with the latest sample and a ring of the last o.history values
 *
 * Views: the owner's own process and counter structs begin with the watch's
 * fields, through EVR_WATCH_PROC_FIELDS and EVR_WATCH_COUNTER_FIELDS in an
 * anonymous union (below), so that the owner reads p->pid or c->name directly
 * and the watch sees the same bytes as struct evr_watch_proc/_counter. The
 * owner says how large its structs are (ops->proc_size, ops->counter_size);
 * the watch allocates them and zeroes what it does not know.
 *
 * Threading: the watch has no thread and no lock of its own. One thread of
 * the owner calls every function below, or the owner serializes the calls
 * under its lock (the monitor's hub does). An attach thread owns its job until
 * it publishes the result (release store of done; evr_watch_poll() takes it
 * with an acquire load); the job has two references, so evr_watch_fini()
 * never waits for a stuck attach. What an attach thread reads of the owner's
 * (ops, ops->spec's @arg, the broker) must outlive it: static or the whole
 * program's.
 */
#ifndef EVR_WATCH_H
#define EVR_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/consumer.h>
#include <evring/counter-sample.h>
#include <evring/mono-time.h>

struct evr_broker;
struct evr_watch;
struct evr_watch_job;

enum evr_watch_state {
	EVR_WATCH_ATTACHING,		/* an attach thread is connecting */
	EVR_WATCH_LIVE,			/* its counters session runs */
	EVR_WATCH_EXITED,		/* the process ended or stopped serving */
	EVR_WATCH_FAILED,		/* could not attach, or reading failed: err, errnum */
};

/* How a process came to be watched (evr_watch_proc.found). */
enum evr_watch_found {
	EVR_WATCH_FOUND_START,		/* the first scan listed it */
	EVR_WATCH_FOUND_RESCAN,		/* a later scan, nothing else having said so */
	EVR_WATCH_FOUND_NOTIFY,		/* its socket appeared in a watched directory (inotify) */
	EVR_WATCH_FOUND_CHECK,		/* the /proc check: a namespace of its own */
	EVR_WATCH_FOUND_ADDED,		/* the owner's evr_watch_add() */
};

/* One point of a counter's history. */
struct evr_watch_point {
	uint64_t ts_ns;			/* the sample's timestamp: the end of its interval */
	double value;			/* evr_counter_sample.value */
};

/*
 * A counter of a process: what every view keeps. @last keeps the numbers of
 * the latest sample, not its strings (they point into the session's ring).
 */
#define EVR_WATCH_COUNTER_FIELDS						\
	char provider[64];							\
	char name[96];								\
	char display[128];							\
	char unit[24];								\
	uint32_t kind;		/* enum evr_sample_kind of the latest sample */	\
	uint64_t nsamples;							\
	struct evr_counter_sample last;						\
	struct evr_watch_point *hist;	/* ring of hist_cap (o.history) points */ \
	uint32_t hist_cap, hist_n, hist_next;

struct evr_watch_counter {
	EVR_WATCH_COUNTER_FIELDS
};

/*
 * A watched process. @ctr_type: the owner's counter struct (ctr is an array of
 * them: ops->counter_size apart). The watch writes every field; the owner may
 * set pinned, and read the rest.
 */
#define EVR_WATCH_PROC_FIELDS(ctr_type)						\
	pid_t pid;								\
	pid_t ns_pid;		/* its pid in a pid namespace of its own, or 0 */ \
	char name[64];		/* argv[0]'s base name, or exe's; "?" */	\
	enum evr_watch_state state;						\
	int errnum;		/* FAILED, EXITED: why, a positive errno */	\
	char err[512];		/* ... and in words */				\
	struct evr_client *client;	/* LIVE: the counters session */	\
	struct evr_watch_job *job;	/* ATTACHING: the attach thread's */	\
	ctr_type *ctr;								\
	uint32_t nctr, cap;							\
	uint64_t lost;		/* events the counters session lost */		\
	uint64_t gen;		/* evr_watch.gen of the latest sample */	\
	uint64_t gone_at_ns;	/* CLOCK_MONOTONIC when it became EXITED/FAILED */ \
	enum evr_watch_found found;	/* how it came to be watched */		\
	bool listed;		/* in the latest scan's list */			\
	bool pinned;		/* never forgotten (the owner's say) */		\
	bool retrying;		/* ATTACHING again after a failure or an exit */

struct evr_watch_proc {
	EVR_WATCH_PROC_FIELDS(struct evr_watch_counter)
};

/* The sizes of an owner's structs, in its struct evr_watch_ops initializer. */
#define EVR_WATCH_OPS_SIZES(proc_type, ctr_type)				\
	.proc_size = sizeof(proc_type), .counter_size = sizeof(ctr_type)

/* What changed: ops->changed's argument. */
struct evr_watch_change {
	enum evr_watch_state from, to;
	/* From ATTACHING: the process as it described itself, NULL when it was not
	 * reached. Valid during the call only. */
	const struct evr_process_info *info;
	const char *note;		/* from ATTACHING to LIVE: what ops->spec noted, or "" */
};

/*
 * The owner's part. Every hook but spec runs on the thread that calls into the
 * watch; each may be NULL.
 */
struct evr_watch_ops {
	size_t proc_size;		/* >= sizeof(struct evr_watch_proc) */
	size_t counter_size;		/* >= sizeof(struct evr_watch_counter) */
	/*
	 * The session's provider list for the process of @c (malloc'ed into
	 * *@ret). @note: a remark for the owner (ops->changed gets it). Return: 0,
	 * or -errno with a line in @err. NULL: evr_watch_counter_spec().
	 * Context: an attach thread; @arg is opts.spec_arg.
	 */
	int (*spec)(const void *arg, struct evr_client *c, char **ret, char *note, size_t notelen,
		    char *err, size_t errlen);
	/*
	 * With opts.connect_only: start the session on the attach thread, once
	 * connected (NULL: none; the owner starts it). Return: 0, or -errno with
	 * a line in @err. Context: an attach thread; @arg is opts.spec_arg.
	 */
	int (*start)(const void *arg, struct evr_client *c, char *err, size_t errlen);
	/* @p's state changed (@ch says how). */
	void (*changed)(struct evr_watch *w, struct evr_watch_proc *p,
			const struct evr_watch_change *ch);
	/* A sample of @p came, before the table: false leaves it out of the table. */
	bool (*sample)(struct evr_watch *w, struct evr_watch_proc *p,
		       const struct evr_counter_sample *s, uint64_t now_ns);
	/* @c is new in @p's table (its index: p->nctr); the common fields are set. */
	void (*counter_new)(struct evr_watch *w, struct evr_watch_proc *p,
			    struct evr_watch_counter *c);
	/*
	 * Take @s into @c (the owner's fields and the common ones: the owner calls
	 * evr_watch_counter_take() or does its part). NULL: evr_watch_counter_take().
	 * The watch adds the history point after it.
	 */
	void (*counter_sample)(struct evr_watch *w, struct evr_watch_proc *p,
			       struct evr_watch_counter *c, const struct evr_counter_sample *s,
			       uint64_t now_ns);
	/* @p's session was read (after every read, samples or not). */
	void (*drained)(struct evr_watch *w, struct evr_watch_proc *p);
	/* Free what the owner keeps in @p; the watch frees @p after. */
	void (*proc_free)(struct evr_watch *w, struct evr_watch_proc *p);
};

struct evr_watch_opts {
	const char *client_name;	/* how the sessions name their consumer; static */
	uint32_t interval_ms;		/* the counter interval asked of each process */
	uint64_t ring_size;		/* per session: counters only want a few KiB */
	uint32_t history;		/* points kept per counter; 0: none */
	struct evr_broker *broker;	/* borrowed: lists and connects for a confined
					 * tool (<evring/sandbox.h>); NULL: directly */
	bool notify;			/* inotify on the runtime directories (no broker) */
	/*
	 * With a broker too: inotify is opened and armed at evr_watch_init(),
	 * before the owner confines itself; it only says when to scan (the
	 * listing stays the broker's). Directories made later are found by the
	 * rescans, as a confined owner cannot watch them.
	 */
	bool notify_broker;
	uint32_t rescan_ms;		/* evr_watch_scan_due(): at least this often; the
					 * environment's EVR_WATCH_RESCAN_MS, if set, instead */
	/*
	 * evr_watch_scan_due() looks at /proc this often (0: never) for processes
	 * in namespaces of their own (containers), whose runtime directories
	 * inotify cannot watch (evr_proc_check_run(), the broker's when there is
	 * one); one found makes a scan due at once. EVR_WATCH_CHECK_MS: the tools'.
	 */
	uint32_t check_ms;
	uint32_t retry_ms;		/* a listed EXITED/FAILED one: attach anew after; 0 never */
	uint32_t forget_ms;		/* an EXITED/FAILED one: forgotten after */
	bool forget_listed;		/* ... even when still listed (then added anew) */
	/*
	 * Attach means connect only (and ops->start, if set): no counters
	 * session is started, and a LIVE process's client is the owner's to take (in ops->changed, setting p->client to
	 * NULL: the watch then reads nothing of it, and leaves it LIVE until the
	 * owner says otherwise). For an owner that starts sessions of its own
	 * (record --all) and wants only the discovery and the attach threads.
	 */
	bool connect_only;
	const struct evr_watch_ops *ops;
	const void *spec_arg;		/* ops->spec's @arg */
	void *user;			/* the owner's */
};

struct evr_watch {
	struct evr_watch_opts o;
	struct evr_watch_proc **procs;	/* in the order they were found */
	uint32_t n, cap;
	uint64_t gen;			/* evr_watch_poll() calls */
	uint64_t scans, last_scan_ns;
	int notify_fd;			/* inotify, -1 without */
	uint32_t nwatched;		/* runtime directories inotify watches */
	/* Sockets that appeared but were not listed yet (bound, not yet
	 * listening): scanned for again every round, for a while (notify.c). */
	pid_t pending[16];
	uint64_t pending_until_ns[16];
	bool pending_checked[16];	/* ... found by the /proc check, not by inotify */
	uint32_t npending;
	struct evr_proc_check *check;	/* the /proc check's (without a broker) */
	int loadavg_fd;			/* /proc/loadavg: its last pid gates the check */
	int check_last_pid;		/* ... as the last check saw it */
	uint32_t check_pending;		/* processes the check still awaits */
	uint64_t check_looks;		/* checks that read /proc (the gate let them) */
	uint64_t last_check_ns;
	bool check_off;			/* it could not be had: the rescans find them */
};

/* The tools' /proc check period: a container's process attached within ~100 ms. */
#define EVR_WATCH_CHECK_MS 50

/**
 * evr_watch_init() - an empty watch (@o copied; o->ops borrowed).
 * Return: 0, -EINVAL (sizes below the watch's). An inotify that cannot be set
 * up is no error: rescans every o->rescan_ms find the processes then.
 * Context: the owner's thread.
 */
int evr_watch_init(struct evr_watch *w, const struct evr_watch_opts *o);

/* Free every process; attaches in progress end on their own later. Context: the owner's thread. */
void evr_watch_fini(struct evr_watch *w);

/**
 * evr_watch_add() - watch @pid (nothing when it is watched already). @sync:
 * attach now on this thread (the error is the user's: -p PID), else on a
 * thread of its own. @ret: the process, or NULL; may be NULL.
 * Return: 0, -ENOMEM, or with @sync the attach error (-errno, reason in @err:
 * the process is then not added). Context: the owner's thread.
 */
int evr_watch_add(struct evr_watch *w, pid_t pid, bool sync, char *err, size_t errlen,
		  struct evr_watch_proc **ret);

/**
 * evr_watch_scan() - list the attachable processes now: watch new ones, attach
 * anew to listed ones gone for o->retry_ms, forget gone ones after
 * o->forget_ms (unless pinned).
 * Return: 0, or -errno from the listing (nothing changed then).
 * Context: the owner's thread.
 */
int evr_watch_scan(struct evr_watch *w);

/**
 * evr_watch_scan_due() - should the owner scan now? Yes before the first scan,
 * when inotify said a socket came or went in a runtime directory since the
 * last scan, or when the last scan is o->rescan_ms old. Reads (and so clears)
 * the inotify events. Context: the owner's thread.
 */
bool evr_watch_scan_due(struct evr_watch *w, uint64_t now_ns);

/*
 * The inotify descriptor (readable when evr_watch_scan_due() may say yes), or
 * -1: for an owner that sleeps in poll(). Context: any thread.
 */
int evr_watch_fd(const struct evr_watch *w);

/**
 * evr_watch_due_ns() - for an owner that sleeps until something is due rather
 * than in fixed rounds: 0 while attaches are under way or socket names are
 * pending (look again after a short sleep: nothing wakes the owner when an
 * attach thread is done), else when the periodic rescan is due (inotify's
 * descriptor wakes it for new sockets before that). Context: the owner's thread.
 */
uint64_t evr_watch_due_ns(const struct evr_watch *w);

/**
 * evr_watch_poll() - take the finished attaches and read every live session
 * (at most a bounded number of records each), noting exits.
 * Return: true when a sample came or a state changed. Context: the owner's thread.
 */
bool evr_watch_poll(struct evr_watch *w);

/* The process @pid, or NULL. Context: the owner's thread. */
struct evr_watch_proc *evr_watch_find(struct evr_watch *w, pid_t pid);

/* Counter @i of @p (the owner's struct, counter_size apart). Context: the owner's thread. */
struct evr_watch_counter *evr_watch_counter_at(const struct evr_watch *w,
					       const struct evr_watch_proc *p, uint32_t i);

/* The counter @name of @provider in @p, or NULL. Context: the owner's thread. */
struct evr_watch_counter *evr_watch_counter(const struct evr_watch *w,
					    const struct evr_watch_proc *p, const char *provider,
					    const char *name);

/*
 * evr_watch_counter_take() - @s as @c's latest sample: its kind and numbers, one
 * more sample. Context: any thread that owns @c.
 */
void evr_watch_counter_take(struct evr_watch_counter *c, const struct evr_counter_sample *s);

/**
 * evr_watch_counter_spec() - the counters-only provider list of @c's process:
 * each provider that has Counter* events once, as "Name:0x0:0" (keywords 0,
 * LogAlways: its counter events only); "Process:0x0:0" when none has (every
 * process has the built-in Process provider).
 * Return: 0, or -errno with one line in @err. Context: any thread.
 */
int evr_watch_counter_spec(struct evr_client *c, char **ret, char *err, size_t errlen);

/*
 * evr_watch_counter_providers() - the providers of @c's process with Counter*
 * events, each once, joined by ", " into @ret (malloc'ed; "" when none).
 * Return: 0, -errno with one line in @err. Context: any thread.
 */
int evr_watch_counter_providers(struct evr_client *c, char **ret, char *err, size_t errlen);

/* How @f found a process, in words ("the /proc check"). Context: any thread. */
const char *evr_watch_found_name(enum evr_watch_found f);

/* "attaching", "live", "exited", "failed". Context: any thread. */
const char *evr_watch_state_name(enum evr_watch_state s);

/* The short name of a process: argv[0]'s base name, or exe's, or "?". Context: any thread. */
void evr_watch_short_name(const struct evr_process_info *pi, char *buf, size_t len);

#endif /* EVR_WATCH_H */
