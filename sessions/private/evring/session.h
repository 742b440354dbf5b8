/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions (one consumer's view: providers, ring geometry, loss policy) and the
 * read side of the RCU-published table of live sessions that the write path
 * consults. The table is an immutable struct evr_session_table; its one updater,
 * and the protocol (which fence pairs with which, what each grace period
 * protects), is producer/session-table.c.
 */
#ifndef EVR_SESSION_H
#define EVR_SESSION_H

#include <stdatomic.h>
#include <stdint.h>

#include <evring/provider-spec.h>
#include <evring/ring.h>
#include <evring/shm.h>

#define EVR_MAX_SESSIONS 64

struct evr_session_config {
	struct evr_provider_spec_list *providers;	/* owned by the session */
	uint64_t ring_size;				/* per ring */
	uint32_t packet_size;
	uint32_t mode;					/* enum evr_mode */
	uint32_t nr_rings;				/* usually the number of possible CPUs */
	uint32_t meta_size;				/* metadata area; 0: default */
	uint32_t stack_depth;				/* frames per event; 0: no stacks */
};

struct evr_session {
	uint32_t slot;			/* bit in event masks, 0..63 */
	uint64_t serial;
	struct evr_session_config cfg;
	int memfd;
	int doorbell_fd;		/* eventfd, non-blocking */
	struct evr_shm_hdr *shm;
	uint32_t nr_rings;
	struct evr_ring_writer *rings;
	struct evr_session_table *stop_table;	/* preallocated for removing this session */
};

struct evr_session_table {
	uint64_t live;				/* bit i set iff slot[i] != NULL */
	struct evr_session *slot[EVR_MAX_SESSIONS];
};

/* The current table; never NULL. Load with evr_session_table_get_rcu(). */
extern _Atomic(struct evr_session_table *) evr_session_table_cur;

/**
 * evr_session_table_get_rcu() - the live table.
 * Context: inside an RCU read-side critical section; the table stays valid
 * until its end.
 */
static inline struct evr_session_table *evr_session_table_get_rcu(void)
{
	/* Pairs with the exchange-release in table_publish_locked() (session-table.c). */
	return atomic_load_explicit(&evr_session_table_cur, memory_order_acquire);
}

/**
 * evr_session_create() - create a session's memory, rings and doorbell.
 * @cfg: configuration; on success the session takes ownership of cfg->providers.
 * @slot: table slot it will occupy.
 * @serial: unique number for this process.
 * @clock: timestamp calibration recorded in the session header.
 * @ret: free with evr_session_destroy().
 * @errbuf: one-line reason on failure, may be NULL.
 *
 * Return: 0, -EINVAL (bad geometry), -ENOMEM, -EMFILE...
 */
int evr_session_create(const struct evr_session_config *cfg, uint32_t slot, uint64_t serial,
		    const struct evr_clock_calib *clock, struct evr_session **ret, char *errbuf,
		    size_t errlen);

/**
 * evr_session_write_rcu() - write one event into the session's ring for @cpu,
 * or another free ring if that one is busy.
 *
 * Return: 0 written; -ENOSPC or -EBUSY dropped and counted.
 * Context: RCU read side, the session is in the current table.
 */
static inline int evr_session_write_rcu_flags(struct evr_session *s, uint32_t cpu,
					      uint32_t event_id, uint64_t ts, uint32_t tid,
					      const void *payload, uint32_t len, uint8_t flags)
{
	uint32_t n = s->nr_rings;
	uint32_t first = cpu < n ? cpu : cpu % n;
	uint32_t i = first;
	int ret;

	do {
		ret = evr_ring_try_write_flags(&s->rings[i], event_id, ts, tid, payload, len, flags);
		if (EVR_LIKELY(ret != -EBUSY))
			return ret;
		/* Holder preempted or a signal handler nested on it: never wait. */
		i = i + 1 == n ? 0 : i + 1;
	} while (i != first);
	evr_ring_count_lost(&s->rings[first], 1);
	return -EBUSY;
}

/* evr_session_write_rcu_flags() with the record header's flags 0. */
static inline int evr_session_write_rcu(struct evr_session *s, uint32_t cpu, uint32_t event_id,
					uint64_t ts, uint32_t tid, const void *payload,
					uint32_t len)
{
	return evr_session_write_rcu_flags(s, cpu, event_id, ts, tid, payload, len, 0);
}

/* Count one lost event (e.g. too big to record) on the ring for @cpu. */
void evr_session_count_lost_rcu(struct evr_session *s, uint32_t cpu);

/**
 * evr_session_flush() - report pending losses in-band and mark the session
 * ended in shared memory, then wake readers.
 * Context: the session is no longer in the table and a grace period elapsed, so
 * no writer can touch its rings.
 */
void evr_session_flush_and_end(struct evr_session *s, uint64_t ts);

/* Unmap and close everything; accepts NULL. */
void evr_session_destroy(struct evr_session *s);

/*
 * Free @p with @fn; the caller has waited for a grace period since @p was
 * unpublished. A dedicated function so that the ThreadSanitizer suppression for
 * the RCU reclamation pattern (which TSan cannot see) matches only this.
 */
void evr_reclaim_after_grace_period(void *p, void (*fn)(void *));

#endif /* EVR_SESSION_H */
