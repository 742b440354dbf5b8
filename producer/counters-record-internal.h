/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counters, recording side (counters-record.c): the per-counter state that
 * evr_counter_record() and friends use, and the fold that the counters thread
 * (counters.c) runs under the counters lock. The protocol is described at the
 * top of counters-record.c.
 */
#ifndef EVR_COUNTERS_RECORD_INTERNAL_H
#define EVR_COUNTERS_RECORD_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <evring/counters.h>
#include "producer-internal.h"

#define EVR_HIST_EXP_MIN (-31) /* frexp exponent of 2^-32 */
#define EVR_HIST_EXP_MAX 64 /* frexp exponent of values just below 2^64 */
#define EVR_HIST_BUCKETS \
	(1u + (uint32_t)(EVR_HIST_EXP_MAX - EVR_HIST_EXP_MIN + 1) * EVR_HISTOGRAM_SUB_BUCKETS)

/*
 * What one epoch (of one parity) of one accumulator holds: count, sum, sum of
 * squares, min and max of the values recorded in it. INCREMENT uses sum only,
 * HISTOGRAM count and sum (plus its buckets, beside the cells).
 */
struct evr_ctr_cell {
	_Atomic uint64_t count;
	_Atomic double sum;
	_Atomic double sumsq;
	_Atomic double min;
	_Atomic double max;
} __attribute__((aligned(64)));

/*
 * The shared fallback of one counter, for records that cannot use their
 * thread's accumulator (a signal handler nested in a record, a thread without
 * one): cells and in-flight counts per epoch parity, updated atomically.
 */
struct evr_ctr_fallback {
	_Atomic uint32_t inflight[2];
	struct evr_ctr_cell cell[2];
	_Atomic uint64_t *buckets; /* HISTOGRAM: 2 * EVR_HIST_BUCKETS, parity-major */
};

/*
 * The recording side of a counter: the first member of struct evr_counter
 * (counters.c), so that a struct evr_counter pointer is one to this.
 */
struct evr_ctr_rec {
	/* Read by recorders; set at creation. */
	uint32_t kind; /* enum evr_counter_kind */
	uint32_t idx; /* index in every thread's table; reused after free */
	uint64_t id; /* unique for the life of the process: tells a stale accumulator */
	struct evr_event *ev; /* the event its samples are written as */
	struct evr_ctr_fallback fb;
	/* The counters thread's, under the counters lock. */
	struct evr_ctr_rec *next; /* the list of counters */
	uint64_t count; /* cumulative totals of every epoch folded */
	double sum, sumsq;
	uint64_t *buckets; /* HISTOGRAM: EVR_HIST_BUCKETS cumulative counts */
	double smin[EVR_MAX_SESSIONS]; /* MEAN: extremes since each session's last tick */
	double smax[EVR_MAX_SESSIONS];
};

/*
 * Session slots sampled by the counters thread. Recorders record nothing while
 * it and their event's mask have no bit in common.
 */
extern _Atomic uint64_t evr_ctr_sampled EVR_HIDDEN;

/*
 * evr_ctr_rec_init_locked() - give @r (zeroed) an index, an id and its
 * fallback; @kind is the counter's.
 * Return: 0, -ENOMEM.
 * Context: counters lock.
 */
EVR_HIDDEN int evr_ctr_rec_init_locked(struct evr_ctr_rec *r, uint32_t kind);

/*
 * evr_ctr_rec_fini_locked() - free what evr_ctr_rec_init_locked() allocated and
 * release @r's index (accumulators of it left in threads become stale). Safe on
 * a zeroed @r and after a failed init.
 * Context: counters lock; @r is out of the list and nobody records into it.
 */
EVR_HIDDEN void evr_ctr_rec_fini_locked(struct evr_ctr_rec *r);

/*
 * evr_ctr_sampler_start() - prepare the epoch protocol (register for
 * membarrier(2), or fall back to a fence in every record) before any session
 * samples. Context: counters lock, before the first bit of evr_ctr_sampled.
 */
EVR_HIDDEN void evr_ctr_sampler_start(void);

/*
 * evr_ctr_advance_locked() - end the current epoch: fold what every thread and
 * every fallback recorded in it into the cumulative totals of each counter in
 * @list, and its extremes into smin/smax of every session slot in @slots;
 * retire the accumulators of threads that exited.
 * Context: counters lock (the counters thread, or a session starting). May
 * wait for a record in flight (a preempted recorder), at most 2 s.
 */
EVR_HIDDEN void evr_ctr_advance_locked(struct evr_ctr_rec *list, uint64_t slots);

/*
 * evr_ctr_fork_child_locked() - in the child after fork(): every other thread is
 * gone (its accumulators are retired at the next advance) and no fallback
 * record is in flight. Context: counters lock held since the prepare handler.
 */
EVR_HIDDEN void evr_ctr_fork_child_locked(struct evr_ctr_rec *list);

/* Library destructor: no thread-exit hook into code that may be unmapped. */
EVR_HIDDEN void evr_ctr_fini(void);

#endif /* EVR_COUNTERS_RECORD_INTERNAL_H */
