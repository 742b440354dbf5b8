// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The runtime's state for counters, and the one-line summary minirt prints.
 */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "runtime.h"

struct minirt_stats minirt_stats;

uint64_t rt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_gettid(void)
{
	return (uint64_t)gettid();
}

static uint64_t ld64(_Atomic uint64_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

static uint32_t ld32(_Atomic uint32_t *v)
{
	return atomic_load_explicit(v, memory_order_relaxed);
}

void minirt_stats_format(char *buf, size_t len, double elapsed_s, const char *phase)
{
	struct minirt_stats *s = &minirt_stats;
	const double mib = 1024.0 * 1024.0;

	snprintf(buf, len,
		 "%.1fs phase=%s heap=%.1fMiB gen0=%llu gen1=%llu gen2=%llu gc_time=%.1fms "
		 "alloc=%.1fMiB threads=%u queue=%u completed=%llu exceptions=%llu "
		 "contentions=%llu jitted=%llu",
		 elapsed_s, phase, (double)ld64(&s->heap_size) / mib,
		 (unsigned long long)ld64(&s->gen_collections[0]),
		 (unsigned long long)ld64(&s->gen_collections[1]),
		 (unsigned long long)ld64(&s->gen_collections[2]),
		 (double)ld64(&s->gc_time_ns) / 1e6, (double)ld64(&s->bytes_allocated) / mib,
		 ld32(&s->pool_threads), ld32(&s->queue_length),
		 (unsigned long long)ld64(&s->work_items_completed),
		 (unsigned long long)ld64(&s->exceptions),
		 (unsigned long long)ld64(&s->contentions),
		 (unsigned long long)ld64(&s->methods_jitted));
}
