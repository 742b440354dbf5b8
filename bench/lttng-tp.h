/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The same event as an LTTng-UST tracepoint, for --vs-lttng. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER evring_bench
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./lttng-tp.h"

#if !defined(EVR_LTTNG_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define EVR_LTTNG_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(evring_bench, ev,
	LTTNG_UST_TP_ARGS(uint64_t, a, uint64_t, b, uint32_t, c),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint64_t, a, a)
		lttng_ust_field_integer(uint64_t, b, b)
		lttng_ust_field_integer(uint32_t, c, c)
	)
)

#endif

#include <lttng/tracepoint-event.h>
