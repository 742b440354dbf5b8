/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The interface between evring forward's lttng sink (sink-lttng.c, always
 * built) and the LTTng-UST tracepoint provider (lttng/, built only where
 * liblttng-ust-dev is installed, as a module that the sink dlopen()s), so
 * that the evring command neither links liblttng-ust nor registers with a
 * session daemon unless --to lttng asks for it.
 */
#ifndef EVR_FWD_LTTNG_PLUGIN_H
#define EVR_FWD_LTTNG_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#define EVR_FWD_LTTNG_PLUGIN_VERSION 1u
#define EVR_FWD_LTTNG_PLUGIN_SYMBOL "evr_fwd_lttng_plugin"
#define EVR_FWD_LTTNG_PLUGIN_FILE "evring-forward-lttng.so"

/* One forwarded event: what the evring:* tracepoints record. Borrowed. */
struct evr_fwd_lttng_event {
	const char *provider;
	const char *event;
	uint32_t id;
	uint8_t level;			/* evring's: 0 LogAlways .. 5 verbose */
	uint64_t keywords;
	int32_t pid, tid;		/* the producer's, not the forwarder's */
	uint64_t ts_ns;			/* CLOCK_MONOTONIC when the producer wrote it */
	const char *fields;		/* the payload's fields as a JSON object */
};

struct evr_fwd_lttng_plugin {
	uint32_t version;		/* EVR_FWD_LTTNG_PLUGIN_VERSION */
	/* Does some LTTng session record evring:<level's event>? (one load) */
	bool (*enabled)(uint8_t level);
	/* Fire the tracepoint of @e's level. */
	void (*emit)(const struct evr_fwd_lttng_event *e);
};

#endif /* EVR_FWD_LTTNG_PLUGIN_H */
