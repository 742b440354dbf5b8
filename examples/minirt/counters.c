// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt's counters, under the names .NET's System.Runtime provider uses, so
 * that `clrtop` and `evring record` users see what dotnet-counters shows.
 *
 * Most are polled by libevring's counters thread from struct minirt_stats at
 * each session's own interval (gauges for levels, polling rates for cumulative
 * counts); the work-item duration is recorded by the workers themselves, as a
 * mean counter and a histogram.
 */
#include <stdio.h>
#include <string.h>

#include <evring/counters.h>

#include "runtime.h"

static struct evr_provider system_runtime = { .name = "System.Runtime" };

static struct evr_counter *work_duration, *work_latency;

static double ld(_Atomic uint64_t *v)
{
	return (double)atomic_load_explicit(v, memory_order_relaxed);
}

static double poll_heap_mb(void *ctx)
{
	return ld(&minirt_stats.heap_size) / (1024.0 * 1024.0);
}

static double poll_u64(void *ctx)
{
	return ld(ctx);
}

static double poll_u32(void *ctx)
{
	return (double)atomic_load_explicit((_Atomic uint32_t *)ctx, memory_order_relaxed);
}

/* Cumulative GC time in units of 10 ms: its rate per second is the percentage of time in GC. */
static double poll_gc_time(void *ctx)
{
	return ld(&minirt_stats.gc_time_ns) / 1e7;
}

/* The same time in ms: .NET 7's time-paused-by-gc, ms paused per interval. */
static double poll_gc_paused_ms(void *ctx)
{
	return ld(&minirt_stats.gc_time_ns) / 1e6;
}

static double poll_mb(void *ctx)
{
	return ld(ctx) / (1024.0 * 1024.0);
}

struct ctr {
	const char *name, *display, *unit;
	uint32_t kind;
	evr_counter_poll_fn *poll;
	void *ctx;
};

static const struct ctr polled[] = {
	{ "gc-heap-size", "GC Heap Size", "MB", EVR_COUNTER_GAUGE, poll_heap_mb, NULL },
	{ "gen-0-gc-count", "Gen 0 GC Count", "", EVR_COUNTER_POLL_RATE, poll_u64,
	  &minirt_stats.gen_collections[0] },
	{ "gen-1-gc-count", "Gen 1 GC Count", "", EVR_COUNTER_POLL_RATE, poll_u64,
	  &minirt_stats.gen_collections[1] },
	{ "gen-2-gc-count", "Gen 2 GC Count", "", EVR_COUNTER_POLL_RATE, poll_u64,
	  &minirt_stats.gen_collections[2] },
	{ "time-in-gc", "% Time in GC", "%", EVR_COUNTER_POLL_RATE, poll_gc_time, NULL },
	{ "time-paused-by-gc", "Time paused by GC", "ms", EVR_COUNTER_POLL_RATE,
	  poll_gc_paused_ms, NULL },
	{ "alloc-rate", "Allocation Rate", "B", EVR_COUNTER_POLL_RATE, poll_u64,
	  &minirt_stats.bytes_allocated },
	{ "gen-0-size", "Gen 0 Size", "MB", EVR_COUNTER_GAUGE, poll_mb, &minirt_stats.gen_size[0] },
	{ "gen-1-size", "Gen 1 Size", "MB", EVR_COUNTER_GAUGE, poll_mb, &minirt_stats.gen_size[1] },
	{ "gen-2-size", "Gen 2 Size", "MB", EVR_COUNTER_GAUGE, poll_mb, &minirt_stats.gen_size[2] },
	{ "loh-size", "LOH Size", "MB", EVR_COUNTER_GAUGE, poll_mb, &minirt_stats.loh_size },
	{ "threadpool-thread-count", "ThreadPool Thread Count", "", EVR_COUNTER_GAUGE, poll_u32,
	  &minirt_stats.pool_threads },
	{ "threadpool-queue-length", "ThreadPool Queue Length", "", EVR_COUNTER_GAUGE, poll_u32,
	  &minirt_stats.queue_length },
	{ "threadpool-completed-items-count", "ThreadPool Completed Work Item Count", "",
	  EVR_COUNTER_POLL_RATE, poll_u64, &minirt_stats.work_items_completed },
	{ "exception-count", "Exception Count", "", EVR_COUNTER_POLL_RATE, poll_u64,
	  &minirt_stats.exceptions },
	{ "monitor-lock-contention-count", "Monitor Lock Contention Count", "",
	  EVR_COUNTER_POLL_RATE, poll_u64, &minirt_stats.contentions },
	{ "methods-jitted-count", "Number of Methods Jitted", "", EVR_COUNTER_GAUGE, poll_u64,
	  &minirt_stats.methods_jitted },
	{ "il-bytes-jitted", "IL Bytes Jitted", "B", EVR_COUNTER_GAUGE, poll_u64,
	  &minirt_stats.il_bytes_jitted },
	{ "assembly-count", "Number of Assemblies Loaded", "", EVR_COUNTER_GAUGE, poll_u64,
	  &minirt_stats.assemblies_loaded },
};

static int create(const struct ctr *c, struct evr_counter **ret)
{
	struct evr_counter_desc d = {
		.name = c->name, .display_name = c->display, .unit = c->unit,
		.kind = c->kind, .poll = c->poll, .poll_ctx = c->ctx,
	};
	struct evr_counter *unused;

	return evr_counter_create(&system_runtime, &d, ret ? ret : &unused);
}

int rt_counters_init(void)
{
	static const struct ctr duration = { "work-item-duration", "Work Item Duration", "us",
					     EVR_COUNTER_MEAN, NULL, NULL };
	static const struct ctr latency = { "work-item-latency", "Work Item Latency", "us",
					    EVR_COUNTER_HISTOGRAM, NULL, NULL };
	int ret = evr_provider_register(&system_runtime);

	if (ret < 0)
		return ret;
	/* Counters live as long as the process: never freed. */
	for (size_t i = 0; ret == 0 && i < sizeof(polled) / sizeof(polled[0]); i++)
		ret = create(&polled[i], NULL);
	if (ret == 0)
		ret = create(&duration, &work_duration);
	if (ret == 0)
		ret = create(&latency, &work_latency);
	return ret;
}

void rt_counters_work_done(uint64_t duration_ns)
{
	double us = (double)duration_ns / 1000.0;

	if (work_duration)
		evr_counter_record(work_duration, us);
	if (work_latency)
		evr_histogram_record(work_latency, us);
}
