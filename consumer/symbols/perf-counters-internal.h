/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The perf events evring knows by name, and per-thread counters
 * (perf-counters.c), driven by the recorder's side band (sideband.c).
 */
#ifndef EVR_PERF_COUNTERS_INTERNAL_H
#define EVR_PERF_COUNTERS_INTERNAL_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <evring/symbols.h>

#include "symbols-internal.h"

struct evr_perf_counter_def {
	const char *name;		/* as perf names it: "cycles", "page-faults" */
	uint16_t id;			/* EVR_COUNTER_* */
	uint32_t type;			/* PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE */
	uint64_t config;
	const char *unit;		/* "ns" for the clocks, else "" */
};

/* The event named by the @len bytes at @name, or NULL. */
const struct evr_perf_counter_def *evr_perf_counter_find(const char *name, size_t len);
const struct evr_perf_counter_def *evr_perf_counter_by_id(uint16_t id);

/* @a for event @d: counting, user space only (perf_event_paranoid 2), nothing else set. */
void evr_perf_counter_attr(const struct evr_perf_counter_def *d, struct perf_event_attr *a);

struct evr_perf_counters;

/**
 * evr_perf_counters_new() - count events @ids (@n of them, EVR_COUNTER_*) on
 * every thread of @pid, and on the threads and processes it creates later;
 * enabled on return.
 * @ret: free with evr_perf_counters_free().
 * Return: 0, -ESRCH, -EACCES/-EPERM, -ENOENT (no such event here: a hardware
 * one without a PMU), -ENOMEM, -errno; @errbuf says which.
 */
int evr_perf_counters_new(pid_t pid, const uint16_t *ids, uint32_t n,
			  struct evr_perf_counters **ret, char *errbuf, size_t errlen);

/* The counts of the threads that exited since the last call, as COUNTER records. */
int evr_perf_counters_drain(struct evr_perf_counters *c, evr_sideband_emit_fn *emit, void *ctx);

/* Stop counting; the exits not drained yet, then every other thread's count. */
int evr_perf_counters_finish(struct evr_perf_counters *c, evr_sideband_emit_fn *emit, void *ctx);

void evr_perf_counters_totals(const struct evr_perf_counters *c,
			      struct evr_perf_counters_totals *ret);

void evr_perf_counters_free(struct evr_perf_counters *c);

#endif /* EVR_PERF_COUNTERS_INTERNAL_H */
