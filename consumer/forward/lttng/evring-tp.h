/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The evring LTTng-UST tracepoint provider: one event class, one event per
 * evring level, so that `lttng enable-event -u 'evring:*' --loglevel=...` and
 * `--filter 'provider == "MiniRT"'` work as LTTng users expect. LTTng-UST
 * cannot define events at run time, so evring's own fields travel as one JSON
 * object (`fields`), typed as JSON types; the rest are fields of their own.
 * The producer's time, pid and thread are fields too: LTTng's own timestamp
 * and vpid/vtid contexts are the forwarder's.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER evring
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./evring-tp.h"

#if !defined(EVR_FWD_EVRING_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define EVR_FWD_EVRING_TP_H

#include <stdint.h>
#include <lttng/tracepoint.h>

#include "../lttng-plugin.h"

LTTNG_UST_TRACEPOINT_EVENT_CLASS(evring, event_class,
	LTTNG_UST_TP_ARGS(const struct evr_fwd_lttng_event *, e),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_string(provider, e->provider)
		lttng_ust_field_string(event, e->event)
		lttng_ust_field_integer(uint32_t, id, e->id)
		lttng_ust_field_integer(uint8_t, level, e->level)
		lttng_ust_field_integer_hex(uint64_t, keywords, e->keywords)
		lttng_ust_field_integer(int32_t, pid, e->pid)
		lttng_ust_field_integer(int32_t, tid, e->tid)
		lttng_ust_field_integer(uint64_t, ts_ns, e->ts_ns)
		lttng_ust_field_string(fields, e->fields)
	)
)

#define EVR_FWD_TP_LEVEL(name, ll)                                                        \
	LTTNG_UST_TRACEPOINT_EVENT_INSTANCE(evring, event_class, evring, name,             \
		LTTNG_UST_TP_ARGS(const struct evr_fwd_lttng_event *, e))                  \
	LTTNG_UST_TRACEPOINT_LOGLEVEL(evring, name, ll)

EVR_FWD_TP_LEVEL(log_always, LTTNG_UST_TRACEPOINT_LOGLEVEL_NOTICE)
EVR_FWD_TP_LEVEL(critical, LTTNG_UST_TRACEPOINT_LOGLEVEL_CRIT)
EVR_FWD_TP_LEVEL(error, LTTNG_UST_TRACEPOINT_LOGLEVEL_ERR)
EVR_FWD_TP_LEVEL(warning, LTTNG_UST_TRACEPOINT_LOGLEVEL_WARNING)
EVR_FWD_TP_LEVEL(info, LTTNG_UST_TRACEPOINT_LOGLEVEL_INFO)
EVR_FWD_TP_LEVEL(verbose, LTTNG_UST_TRACEPOINT_LOGLEVEL_DEBUG)

#endif

#include <lttng/tracepoint-event.h>
