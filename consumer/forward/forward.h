/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring forward: one session per attached process, its events and counter
 * samples decoded once and offered to every sink (`--to`), each behind its own
 * filter.
 *
 * Threads: the forwarder's one reader thread reads the sessions, filters and
 * formats (ops->event, ops->counter, ops->lost and ops->tick run there), and
 * never blocks on a receiver: a sink that talks to one hands its formatted
 * messages to an outbox (a bounded queue, below) whose worker thread does the
 * I/O, reconnects and backs off. A full outbox drops (and counts) rather than
 * wait, so a slow receiver costs the producer nothing: the rings keep being
 * drained, and what the producer itself had to drop is reported by the
 * session's loss accounting, separately from each sink's drops.
 *
 * Accounting, per sink: every event or sample offered to it is filtered,
 * sent, or dropped for a counted reason, exactly once:
 *   offered == filtered + sent + dropped (+ queued while running).
 */
#ifndef EVR_FORWARD_H
#define EVR_FORWARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/counter-sample.h>
#include <evring/mono-time.h>
#include <evring/schema.h>

/* ---- what sinks are given ------------------------------------------------------------- */

/* One attached process. */
struct evr_fwd_source {
	pid_t pid;
	char comm[64];			/* basename of its argv[0] (or exe) */
	char host[256];			/* the host it reported */
};

/* One event, decoded once for every sink. Borrowed for the duration of the call. */
struct evr_fwd_event {
	const struct evr_fwd_source *src;
	const struct evr_event_view *v;		/* EVR_REC_EVENT; v->schema may be NULL */
	const struct evr_field_value *vals;	/* v->schema->nfields values, or NULL */
	int nvals;				/* fields decoded, -EBADMSG if they did not */
	uint64_t realtime_ns;			/* v->ts_ns as CLOCK_REALTIME */
};

/* One counter sample (a Counter* event of a session with --counter-interval). */
struct evr_fwd_counter {
	const struct evr_fwd_source *src;
	const struct evr_counter_sample *s;
	const struct evr_fwd_event *e;		/* the event it came in */
	uint64_t realtime_ns;			/* the end of its interval */
};

/* ---- per-sink filter (filter.c) ------------------------------------------------------ */

enum evr_fwd_what {
	EVR_FWD_EVENTS = 1,		/* events (counter samples not included) */
	EVR_FWD_COUNTERS = 2,		/* counter samples */
	EVR_FWD_ALL = 3,
};

#define EVR_FWD_FILTER_MAX_GLOBS 16

/*
 * Options after the sink's name, comma-separated KEY=VALUE: the filter's keys
 * (level, provider, event, keywords, what, max-rate) and the sink's own keys,
 * which the filter leaves in @sink_keys for the sink to read.
 */
struct evr_fwd_filter {
	int level;				/* -1: any; else events with level <= it (0 always) */
	uint64_t keywords;			/* 0: any; else the event's must intersect (or be 0) */
	uint32_t what;				/* enum evr_fwd_what */
	uint32_t nproviders, nevents;
	char *providers[EVR_FWD_FILTER_MAX_GLOBS];	/* fnmatch globs on the provider */
	char *events[EVR_FWD_FILTER_MAX_GLOBS];	/* on "Event" or "Provider/Event" */
	double max_rate;			/* events per second, 0: no limit */
	double tokens;				/* the rate limit's bucket */
	uint64_t tokens_ns;
};

struct evr_fwd_kv {
	char *key, *value;
};

/* A sink spec as typed: "graphite:127.0.0.1:2003,prefix=apps,level=4". */
struct evr_fwd_spec {
	char *text;				/* the whole spec, for messages */
	char *kind;				/* "graphite" */
	char *arg;				/* "127.0.0.1:2003", or NULL */
	uint32_t nkv;
	struct evr_fwd_kv *kv;
};

/* Return: 0, or -EINVAL with one line in @err naming the spec and what is wrong. */
int evr_fwd_spec_parse(const char *text, struct evr_fwd_spec *ret, char *err, size_t errlen);
void evr_fwd_spec_fini(struct evr_fwd_spec *s);

/* The value of @key (the last one given), or NULL. */
const char *evr_fwd_spec_get(struct evr_fwd_spec *s, const char *key);

/*
 * The filter's keys of @s into @f, with @what and @default_level as defaults;
 * any other key must be one of @own (the sink's, NULL-terminated).
 * Return: 0, or -EINVAL with one line in @err.
 */
int evr_fwd_filter_init(struct evr_fwd_filter *f, struct evr_fwd_spec *s, uint32_t what,
			int default_level, const char *const *own, char *err, size_t errlen);
void evr_fwd_filter_fini(struct evr_fwd_filter *f);

/* Does @e pass (@counter: it is a counter sample)? Consumes a rate token if so. */
bool evr_fwd_filter_pass(struct evr_fwd_filter *f, const struct evr_fwd_event *e, bool counter,
			 bool *ret_rate_limited);

/* ---- outbox: a bounded message queue and its worker thread (outbox.c) --------------- */

struct evr_fwd_outbox;

enum evr_fwd_policy {
	EVR_FWD_DROP_NEWEST,		/* events: what was queued first goes first */
	EVR_FWD_DROP_OLDEST,		/* metrics: the latest values matter most */
};

/*
 * The worker's delivery of one batch: @n messages, message i at @msg[i] of
 * @len[i] bytes (each message also ends where the next begins: @msg[0] spans
 * them all, back to back), standing for @weight[i] items. Called on the worker
 * thread.
 * Return: the number of messages delivered (the rest are offered again, first,
 * in the next batch), or -ECANCELED: the outbox is past its closing deadline,
 * or the sink failed for good (evr_fwd_sink_fail()); the worker then stops and
 * everything left is counted as dropped.
 */
typedef int evr_fwd_deliver_fn(void *ctx, const char *const *msg, const uint32_t *len,
			       const uint32_t *weight, uint32_t n);

/*
 * evr_fwd_outbox_new() - start a worker thread that calls @deliver with what is
 * pushed, in order.
 * @cap: bytes queued at most (messages of more are refused: -EMSGSIZE).
 */
int evr_fwd_outbox_new(size_t cap, enum evr_fwd_policy policy, evr_fwd_deliver_fn *deliver,
		       void *ctx, struct evr_fwd_outbox **ret);

/*
 * Queue one message (copied) that stands for @weight items (events or samples:
 * what the counts below count). Never blocks on the worker beyond the queue's lock.
 * Return: 0 queued (with DROP_OLDEST, older messages may have been dropped to
 * make room: counted), -ENOBUFS dropped (DROP_NEWEST, full), -EPIPE dropped
 * (the worker stopped: the sink failed), -EMSGSIZE (not counted: the caller
 * counts it as too large).
 * Context: the reader thread.
 */
int evr_fwd_outbox_push(struct evr_fwd_outbox *o, const void *msg, uint32_t len,
			uint32_t weight);

/* The worker's view: should it give up retrying (stopping, past the deadline)? */
bool evr_fwd_outbox_cancelled(struct evr_fwd_outbox *o);

/*
 * Wait up to @ms milliseconds, or less if the outbox starts stopping past its
 * deadline. For the worker's back-off. Return: true if cancelled.
 */
bool evr_fwd_outbox_sleep(struct evr_fwd_outbox *o, uint32_t ms);

/*
 * Deliver what is queued until @deadline_ns (CLOCK_MONOTONIC), then stop the
 * worker and join it; what could not be delivered by then is counted dropped.
 */
void evr_fwd_outbox_close(struct evr_fwd_outbox *o, uint64_t deadline_ns);
void evr_fwd_outbox_free(struct evr_fwd_outbox *o);

/* In items: the sum of the weights of the messages. */
struct evr_fwd_outbox_stats {
	uint64_t delivered;		/* delivered by the worker */
	uint64_t dropped_full;		/* refused or evicted: the queue was full */
	uint64_t dropped_close;		/* still queued at the flush deadline */
	uint64_t dropped_failed;	/* queued or pushed after the sink failed for good */
	uint64_t queued;		/* now, the worker's batch included */
	uint64_t waiting;		/* now, behind the worker's batch */
};
void evr_fwd_outbox_stats(struct evr_fwd_outbox *o, struct evr_fwd_outbox_stats *ret);

/* ---- sinks ------------------------------------------------------------------------------ */

struct evr_fwd_sink;

struct evr_fwd_sink_ops {
	const char *kind;		/* "jsonl" */
	uint32_t what;			/* the default of the filter's `what` */
	int default_level;		/* the default of its `level` (-1: any) */
	const char *const *keys;	/* its own KEY=VALUE keys, NULL-terminated (may be NULL) */
	/* Check @s->spec's arg and own keys, creating nothing (may be NULL).
	 * Return: 0, or -EINVAL with one line in @err: a usage error. */
	int (*check)(struct evr_fwd_sink *s, char *err, size_t errlen);
	/* Read @s->spec (already checked), connect or open. One line in @err on failure. */
	int (*open)(struct evr_fwd_sink *s, char *err, size_t errlen);
	/* An event or sample that passed the filter (the reader thread; never blocks). */
	void (*event)(struct evr_fwd_sink *s, const struct evr_fwd_event *e);
	void (*counter)(struct evr_fwd_sink *s, const struct evr_fwd_counter *c);
	/* A LOST record: the producer dropped e->v->lost events (may be NULL). */
	void (*lost)(struct evr_fwd_sink *s, const struct evr_fwd_event *e);
	/* Called at least every 100 ms on the reader thread (may be NULL). */
	void (*tick)(struct evr_fwd_sink *s, uint64_t now_ns);
	/* Deliver what is pending until @deadline_ns, then release everything. */
	void (*close)(struct evr_fwd_sink *s, uint64_t deadline_ns);
};

/*
 * Counts, in items: events or counter samples (a sink sends each as one
 * message: a line, a datagram, the lines of one sample). Reader thread only.
 */
struct evr_fwd_sink_stats {
	uint64_t offered;		/* items the sink was offered */
	uint64_t filtered;		/* did not pass its filter */
	uint64_t rate_limited;		/* passed, but over max-rate: dropped */
	uint64_t too_large;		/* over the sink's size limit: dropped */
	/* Sinks without an outbox (lttng) count these themselves; the others'
	 * come from their outbox's stats. */
	uint64_t sent, dropped;
	/* Network sinks, filled in by close(): connections made, attempts failed. */
	uint64_t connects, connect_failures;
	/* Of the outbox's delivered items, those the receiver refused (too large:
	 * counted in too_large instead). */
	uint64_t sent_adjust;
	/* Of the outbox's delivered items, those written on a connection that died
	 * before the receiver confirmed them (graphite): dropped. */
	uint64_t unconfirmed;
	/* Why a sink without an outbox dropped (st.dropped), for the summary. */
	const char *dropped_why;
};

struct evr_fwd_sink {
	const struct evr_fwd_sink_ops *ops;
	struct evr_fwd_spec spec;
	struct evr_fwd_filter filter;
	struct evr_fwd_sink_stats st;
	struct evr_fwd_outbox *outbox;	/* set by open() if the sink has one */
	/* The forwarder may have several processes (several -p/-n, --all): set
	 * before check(), for sinks whose output must then say which (graphite). */
	bool many;
	/* A failure that ends the sink (its worker sets it): -errno, and why. */
	_Atomic int error;
	char why[256];			/* written before error is set (release) */
	void *priv;
};

/*
 * evr_fwd_sink_fail() - the sink cannot go on (a write error on its file):
 * record why, once. Later messages are dropped and counted.
 * Context: any thread.
 */
void evr_fwd_sink_fail(struct evr_fwd_sink *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Every sink kind; NULL-terminated. */
extern const struct evr_fwd_sink_ops *const evr_fwd_sink_kinds[];

extern const struct evr_fwd_sink_ops evr_fwd_sink_jsonl;
extern const struct evr_fwd_sink_ops evr_fwd_sink_graphite;
extern const struct evr_fwd_sink_ops evr_fwd_sink_journald;
extern const struct evr_fwd_sink_ops evr_fwd_sink_lttng;

/* ---- helpers for sinks ---------------------------------------------------------------- */

/*
 * The sink's outbox size: its queue=SIZE key (4K to 1024M, K and M suffixes), or @def.
 * Return: 0, or -EINVAL with one line in @err.
 */
int evr_fwd_queue_size(struct evr_fwd_sink *s, size_t def, size_t *ret, char *err, size_t errlen);

/* The syslog severity of an evring level: Critical 2, Error 3, Warning 4, Info 6, Verbose 7, LogAlways 5. */
int evr_fwd_level_priority(uint8_t level);

/* "critical", "error", "warning", "info", "verbose", "logalways". */
const char *evr_fwd_level_word(uint8_t level);

/* The entry point: `evring forward ARGS`. Return: the exit status. */
int evr_cmd_forward(int argc, char **argv);

#endif /* EVR_FORWARD_H */
