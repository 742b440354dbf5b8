// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring-forward-lttng.so: the evring:* tracepoints (evring-tp.h), created
 * and registered with LTTng-UST when evring forward --to lttng loads this
 * module, and the two entry points the sink calls (lttng-plugin.h).
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "evring-tp.h"

static bool enabled(uint8_t level)
{
	switch (level) {
	case 0:
		return lttng_ust_tracepoint_enabled(evring, log_always);
	case 1:
		return lttng_ust_tracepoint_enabled(evring, critical);
	case 2:
		return lttng_ust_tracepoint_enabled(evring, error);
	case 3:
		return lttng_ust_tracepoint_enabled(evring, warning);
	case 4:
		return lttng_ust_tracepoint_enabled(evring, info);
	default:
		return lttng_ust_tracepoint_enabled(evring, verbose);
	}
}

static void emit(const struct evr_fwd_lttng_event *e)
{
	switch (e->level) {
	case 0:
		lttng_ust_tracepoint(evring, log_always, e);
		break;
	case 1:
		lttng_ust_tracepoint(evring, critical, e);
		break;
	case 2:
		lttng_ust_tracepoint(evring, error, e);
		break;
	case 3:
		lttng_ust_tracepoint(evring, warning, e);
		break;
	case 4:
		lttng_ust_tracepoint(evring, info, e);
		break;
	default:
		lttng_ust_tracepoint(evring, verbose, e);
		break;
	}
}

__attribute__((visibility("default"))) const struct evr_fwd_lttng_plugin evr_fwd_lttng_plugin = {
	.version = EVR_FWD_LTTNG_PLUGIN_VERSION,
	.enabled = enabled,
	.emit = emit,
};
