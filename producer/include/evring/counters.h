/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring counters: values aggregated in the process and written, once per
 * interval, into each session that asked for them.
 *
 *   static struct evr_counter *lat;
 *   struct evr_counter_desc d = { .name = "latency", .display_name = "Request latency",
 *                                 .unit = "us", .kind = EVR_COUNTER_MEAN };
 *   evr_counter_create(&myapp, &d, &lat);
 *   evr_counter_record(lat, 12.5);  // wait-free: ~3.5 ns sampled, ~1 ns when not
 *
 * A counter belongs to a provider. A session enables the counters of every
 * provider it names (any keywords and level: the counter events have keywords 0
 * and level LogAlways) when it was started with a nonzero interval
 * (evr_session_opts.interval_ms, or StartSession.counter_interval_ms). At each
 * of its ticks the session receives one event per counter, of the provider's
 * built-in events:
 *   CounterMean      (name, display_name, unit, interval_ms, count, mean, min, max, stddev)
 *   CounterRate      (name, display_name, unit, interval_ms, increment, rate_per_s)
 *   CounterGauge     (name, display_name, unit, interval_ms, value)
 *   CounterHistogram (name, display_name, unit, interval_ms, count, sum, p50, p90, p99)
 * with str names, u32 interval_ms, u64 count and f64 values. Sessions never
 * disturb each other: recording keeps cumulative values and each session takes
 * the difference between its own consecutive snapshots. Each value lands whole
 * in one interval of each session: an interval's count, mean, stddev, min and
 * max describe the same values, and totals over intervals are exact. A session's
 * first interval holds every value recorded from the time its bit shows in the
 * provider's mask (p->mask, or the enable callback's call), the callback's own
 * included.
 *
 * Cost of recording one value, one thread, gcc -O2 on a 2-vCPU VM (medians of
 * evring-bench's counter_* scenarios): with a session sampling,
 * evr_counter_add() ~2.5 ns, evr_counter_record() ~3.5 ns,
 * evr_histogram_record() ~4 ns (5x to 7x less than with per-CPU atomics);
 * with no session sampling the counter's provider, under 1 ns (one load and a
 * branch). The values go to accumulators of
 * the calling thread (plain stores, no atomic read-modify-write, no barrier);
 * a thread's first value of a counter allocates them (from 64 KiB chunks the
 * thread maps, async-signal-safe). Values from a signal handler that
 * interrupted a record of the same thread go to shared cells of the counter
 * instead (atomic read-modify-writes).
 *
 * The built-in provider "Process" has counters for every process that links
 * libevring: cpu-usage (% of one CPU), working-set (RSS bytes), virtual-memory
 * (bytes), threads, voluntary-ctx-switches and involuntary-ctx-switches (per
 * second), minor-faults and major-faults (per second), open-fds.
 */
#ifndef EVR_COUNTERS_H
#define EVR_COUNTERS_H

#include <stdint.h>

#include <evring/evring.h>

#ifdef __cplusplus
extern "C" {
#endif

enum evr_counter_kind {
	EVR_COUNTER_MEAN = 1, /* evr_counter_record(): count, mean, min, max, stddev */
	EVR_COUNTER_INCREMENT, /* evr_counter_add(): increment per interval and rate */
	EVR_COUNTER_GAUGE, /* desc.poll sampled at each tick: its value */
	EVR_COUNTER_POLL_RATE, /* desc.poll sampled at each tick: difference and rate */
	EVR_COUNTER_HISTOGRAM, /* evr_histogram_record(): count, sum, p50, p90, p99 */
	EVR_COUNTER_KIND_MAX_,
};

/*
 * Histogram buckets: 16 linear sub-buckets per power of two, values reported as
 * the middle of their bucket, so a percentile is within 1/32 (relative) of a
 * value recorded in its bucket. Values from 2^-32 to 2^64 are bucketed; smaller
 * ones (zero and negative values included) count as 0, larger ones as 2^64.
 */
#define EVR_HISTOGRAM_SUB_BUCKETS 16u
#define EVR_HISTOGRAM_REL_ERROR (1.0 / 32)

/* The shortest counter interval a session may ask for. */
#define EVR_COUNTER_INTERVAL_MIN_MS 10u

/* A polling counter's callback; runs on the counters thread. */
typedef double evr_counter_poll_fn(void *ctx);

struct evr_counter_desc {
	const char *name; /* unique within the provider; copied */
	const char *display_name; /* copied; NULL: the name */
	const char *unit; /* copied; NULL: "" */
	uint32_t kind; /* enum evr_counter_kind */
	evr_counter_poll_fn *poll; /* GAUGE and POLL_RATE only */
	void *poll_ctx; /* borrowed until evr_counter_free() */
};

struct evr_counter;

/**
 * evr_counter_create() - a counter of provider @p.
 * @p: registered provider; its built-in Counter* events are defined the first
 *     time. Free its counters before unregistering it.
 * @desc: copied.
 * @ret: free with evr_counter_free().
 * Return: 0, -EINVAL (bad kind, missing name or poll function), -EEXIST (name
 * taken in @p), -ENOMEM.
 * Context: any thread but the counters thread (not from a poll callback), and
 * not from a provider enable callback (it defines events under the registry lock).
 */
EVR_API int evr_counter_create(struct evr_provider *p, const struct evr_counter_desc *desc,
			       struct evr_counter **ret);

/**
 * evr_counter_free() - stop sampling @c and free it. Accepts NULL. The
 * accumulators threads had for it are reused by later counters, and unmapped
 * when their thread exits.
 * Context: no thread may be recording into @c any more; not from a poll callback
 * nor from a provider enable callback (a session with counters is published
 * with the counters' lock held).
 */
EVR_API void evr_counter_free(struct evr_counter *c);

/**
 * evr_counter_record() - one value of a MEAN counter.
 * Context: any thread, signal handlers included; wait-free (into the calling
 * thread's accumulator), or lock-free in a handler that interrupted a record
 * of the same thread (shared cells; a CAS retried only when another such
 * record raced). Never blocks, never waits for the counters thread. Nothing is
 * done when no session enables the counter's provider with an interval.
 */
EVR_API void evr_counter_record(struct evr_counter *c, double v);

/**
 * evr_counter_add() - add @delta to an INCREMENT counter.
 * Context: as evr_counter_record().
 */
EVR_API void evr_counter_add(struct evr_counter *c, double delta);

/**
 * evr_histogram_record() - one value of a HISTOGRAM counter.
 * Context: as evr_counter_record(). Each thread recording into it maps 24 KiB
 * of buckets, backed only where values fall.
 */
EVR_API void evr_histogram_record(struct evr_counter *c, double v);

/*
 * The built-in "Process" provider, registered (with the other built-in providers) by
 * this call, the first in-process session or the first consumer that connects, not at
 * load. Borrowed. Context: not from a provider's callback (it may take the agent's lock).
 */
EVR_API struct evr_provider *evr_process_provider(void);

#ifdef __cplusplus
}
#endif

#endif /* EVR_COUNTERS_H */
