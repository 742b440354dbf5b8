// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The built-in "Memory" provider: counters of the process's heap, for clrtop,
 * /metrics and record --counter-interval (docs/memory.md). Polled on the
 * counters thread only while a session samples them, so a process no one asks
 * pays nothing.
 *
 * - From the allocator (glibc's mallinfo2(), which walks the arenas under
 *   their locks: once per tick of the sessions that ask): bytes in use (in
 *   chunks handed out, mmapped blocks included), bytes free in the arenas,
 *   bytes in mmapped blocks.
 * - From the Heap provider's samples, while a session enables it: the
 *   estimated bytes of the blocks alive that were allocated since, and the
 *   estimated allocation rate.
 */
#include <malloc.h>

#include "counters-internal.h"
#include "heap-internal.h"

static double poll_mallinfo(void *ctx)
{
	struct mallinfo2 mi = mallinfo2();

	switch ((int)(intptr_t)ctx) {
	case 0:
		return (double)(mi.uordblks + mi.hblkhd);
	case 1:
		return (double)mi.fordblks;
	default:
		return (double)mi.hblkhd;
	}
}

static double poll_estimate(void *ctx)
{
	double live, allocated;

	evr_heap_estimates(&live, &allocated);
	return ctx ? allocated : live;
}

static struct evr_event *const memory_events[] = { NULL };
static struct evr_provider memory_prov = { .name = "Memory", .events = memory_events };

void evr_memory_provider_register(void)
{
	static const struct evr_builtin_counter defs[] = {
		{ "heap-in-use", "Heap in use (allocator)", "B", EVR_COUNTER_GAUGE, poll_mallinfo,
		  (void *)0 },
		{ "heap-free", "Heap free in arenas", "B", EVR_COUNTER_GAUGE, poll_mallinfo,
		  (void *)1 },
		{ "heap-mmapped", "Heap in mmapped blocks", "B", EVR_COUNTER_GAUGE, poll_mallinfo,
		  (void *)2 },
		{ "sampled-in-use", "Heap in use (sampled, since Heap was enabled)", "B",
		  EVR_COUNTER_GAUGE, poll_estimate, NULL },
		{ "sampled-alloc-rate", "Allocation rate (sampled)", "B/s", EVR_COUNTER_POLL_RATE,
		  poll_estimate, (void *)1 },
	};

	evr_builtin_counters_register(&memory_prov, defs, sizeof(defs) / sizeof(defs[0]));
}
