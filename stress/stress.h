/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring-stress internals, shared by the three roles of the one binary: the
 * orchestrator (stress.c), the producer child (stress-producer.c) and the
 * consumer child (stress-consumer.c).
 *
 * Children are the same executable re-executed in a hidden mode. They talk to
 * the orchestrator over two pipes at fixed descriptors: commands arrive on
 * STRESS_CMD_FD, one per line; reports leave on STRESS_REP_FD, one per line
 * (see the message list below).
 */
#ifndef EVR_STRESS_H
#define EVR_STRESS_H

#include <stdbool.h>
#include <stdint.h>

#include <evring/evring.h>

#define STRESS_CMD_FD		3
#define STRESS_REP_FD		4

#define STRESS_NKINDS		5
#define STRESS_MAX_PRODUCERS	32
#define STRESS_MAX_THREADS	64
/* Stable sessions per producer: leaves room under the 64-session limit for the
 * churn consumers and the orchestrator's monitor connection (which has none). */
#define STRESS_MAX_SESSIONS	48
#define STRESS_MAX_CHURN	12

/*
 * The "Stress" provider. Every kind carries the same fields: the producer
 * thread index, a per-(thread, kind) sequence number starting at 1, a payload
 * whose length and bytes follow from (thread, kind, seq), and a checksum over
 * all of it. Kinds differ in level and keywords so that filters pick different
 * subsets; keep stress_kinds[] in stress-events.c in the same order.
 */
#define STRESS_EVENTS(EVENT)                                                              \
	EVENT(stress_ev_info, "Info", 1, EVR_LEVEL_INFO, 0x1,                             \
	      (u32, thread), (u64, seq), (bytes, data), (u64, sum))                       \
	EVENT(stress_ev_verbose, "Verbose", 2, EVR_LEVEL_VERBOSE, 0x2,                    \
	      (u32, thread), (u64, seq), (bytes, data), (u64, sum))                       \
	EVENT(stress_ev_warn, "Warn", 3, EVR_LEVEL_WARNING, 0x4,                          \
	      (u32, thread), (u64, seq), (bytes, data), (u64, sum))                       \
	EVENT(stress_ev_error, "Error", 4, EVR_LEVEL_ERROR, 0x0,                          \
	      (u32, thread), (u64, seq), (bytes, data), (u64, sum))                       \
	EVENT(stress_ev_always, "Always", 5, EVR_LEVEL_LOGALWAYS, 0x6,                    \
	      (u32, thread), (u64, seq), (bytes, data), (u64, sum))

EVR_PROVIDER_DECLARE(stress_provider, STRESS_EVENTS)

#define STRESS_PROVIDER_NAME	"Stress"
#define STRESS_NFIELDS		4

struct stress_kind {
	const char *name;
	uint32_t id;			/* provider-local id */
	uint8_t level;
	uint64_t keywords;
	uint32_t weight;		/* share of the emitted events, out of 100 */
	struct evr_event *ev;
};

extern const struct stress_kind stress_kinds[STRESS_NKINDS];

/* The kind index of provider-local event id @id, or -1. */
int stress_kind_by_id(uint32_t id);

/* Emit one event of kind @kind; returns what the typed function returns. */
int stress_emit(unsigned kind, uint32_t thread, uint64_t seq, const void *data, uint32_t len,
		uint64_t sum);

/*
 * Session filters. @kinds is the set of kinds the filter must deliver, worked
 * out by hand from the EventPipe rules (event keywords 0 or intersecting the
 * session's; event level LogAlways or <= the session's) rather than computed
 * with the library's matcher, so that a matching bug shows up as a violation.
 */
struct stress_filter {
	const char *spec;
	uint32_t kinds;			/* bit k: kind k is delivered */
};

#define STRESS_NFILTERS 8
extern const struct stress_filter stress_filters[STRESS_NFILTERS];

/* Payload of (thread, kind, seq): its length, its bytes and the checksum. */
#define STRESS_PAYLOAD_MAX	12288u
uint32_t stress_payload_len(uint32_t thread, uint32_t kind, uint64_t seq);
void stress_payload_fill(uint8_t *buf, uint32_t len, uint32_t thread, uint32_t kind, uint64_t seq);
uint64_t stress_checksum(uint32_t kind, uint32_t thread, uint64_t seq, const void *data,
			 uint32_t len);

/* splitmix64: seeds and the payload stream. */
uint64_t stress_mix64(uint64_t x);
uint64_t stress_rand(uint64_t *state);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t stress_now_ns(void);

/* Write all of @buf to @fd (retrying short writes and EINTR). Return 0 or -errno. */
int stress_write_all(int fd, const char *buf, size_t len);
/* printf to @fd in one write (lines up to 1 KiB). */
__attribute__((format(printf, 2, 3)))
int stress_report(int fd, const char *fmt, ...);

/* Hidden child modes; argv starts after the mode word. Return the exit status. */
int stress_producer_main(int argc, char **argv);
int stress_consumer_main(int argc, char **argv);

/*
 * Messages (one line each).
 *
 * Orchestrator -> producer:  go | progress IDX | halt | quit
 * Producer -> orchestrator:  ready
 *                            progress IDX COUNT MONO_NS
 *                            count THREAD KIND N      (after halt, every pair)
 *                            halted COUNT MONO_NS ERRORS
 *                            error TEXT
 *
 * Orchestrator -> consumer:  stop
 * Consumer -> orchestrator:  started SESSION_ID NR_RINGS ATTACH_NS (connect to started)
 *                            error TEXT               (could not attach/start)
 *                            report RECEIVED LOST GAPCHECK
 *                            tk THREAD KIND COUNT MIN MAX MISSING
 *                            viol CLASS TEXT
 *                            end
 */

/* Violation classes a consumer reports. */
#define STRESS_VIOL_CLASSES(X) \
	X(corrupt) X(duplicate) X(order) X(filter) X(schema) X(decode) X(range) X(read) X(state) X(conservation)

#endif /* EVR_STRESS_H */
