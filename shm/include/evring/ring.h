/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Ring writer (producer side, private state + inline fast path) and ring reader
 * (any process that maps the session memory).
 *
 * Protocol
 * --------
 * One writer per ring at a time: a writer owns a ring by winning a compare-and-swap
 * on evr_ring_writer.lock, a word in producer-private memory (a consumer can't
 * touch it, so a consumer can never stall a writer). A writer that loses the
 * try-lock does not wait: the caller tries another ring, and only when every ring
 * is busy is the event counted in lost_async.
 *
 * The lock holder:
 *   1. issues a release fence (F1), so that any reader that observes a byte it is
 *      about to write also observes every head published before (pairs with the
 *      acquire fence in the overwrite reader's validation, evr_ring_reader_next());
 *   2. writes whole records at [head, head + n) with relaxed 8-byte stores
 *      (relaxed atomics so that lapped readers' racing loads are defined behaviour);
 *   3. publishes head + n with a store-release of ctl->head (pairs with the reader's
 *      load-acquire of head);
 *   4. releases the lock (store-release; pairs with the next holder's CAS-acquire,
 *      which makes this holder's private fields visible to it).
 *
 * The writer never reads its head back from shared memory: the private copy is
 * authoritative. In discard mode it reads ctl->tail (load-acquire, pairs with the
 * gating reader's store-release in evr_ring_reader_release()) and clamps it.
 *
 * Unpublished bytes: at a packet switch the writer first writes the END record and
 * publishes the packet boundary, then writes the next packet's header and records.
 * So a writer only ever touches positions below head_published + packet_size,
 * which is the margin overwrite readers validate against.
 */
#ifndef EVR_RING_H
#define EVR_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <evring/abi.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the record encoding assumes a little-endian CPU"
#endif

#define EVR_LIKELY(x)	__builtin_expect(!!(x), 1)
#define EVR_UNLIKELY(x)	__builtin_expect(!!(x), 0)

#define EVR_REC_THREAD_SIZE	(EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_thread))
#define EVR_REC_LOST_SIZE	(EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_lost))

/*
 * Producer-private state of one ring. Two cache lines: the first is touched by
 * the lock holder only (after winning the CAS on lock, which lives on it too);
 * the second by threads that count a loss without holding the lock.
 */
struct evr_ring_writer {
	_Atomic uint32_t lock;		/* 0 free, 1 held */
	uint32_t last_tid;		/* tid named by the last THREAD record in this packet, 0 = none */
	uint64_t head;			/* authoritative write position */
	uint64_t tail_cache;		/* discard: last clamped tail read from ctl */
	uint64_t last_ts;		/* timestamps are clamped to be non-decreasing per ring */
	uint64_t events;		/* event records written, cumulative */
	uint64_t lost_reported;		/* events covered by LOST records written, cumulative */
	uint64_t lost_pending;		/* lost events not yet reported by a LOST record */
	uint32_t packet_mask;		/* packet_size - 1 */
	uint32_t mode;			/* enum evr_mode */
	uint64_t ring_mask;		/* ring_size - 1 */
	uint8_t *data;			/* this ring's bytes in the session mapping */
	struct evr_ring_ctl *ctl;
	/* second line: written without the lock */
	_Atomic uint64_t lost_async __attribute__((aligned(EVR_CACHELINE)));
	struct evr_shm_hdr *shm;	/* doorbell flag */
	int doorbell_fd;		/* eventfd, or -1 */
	uint32_t index;
} __attribute__((aligned(EVR_CACHELINE)));

/**
 * evr_ring_writer_init() - set up the private state of ring @index of a session.
 * @w: caller storage.
 * @shm: the session mapping, already initialized by evr_shm_session_create().
 * @index: ring index, < shm->nr_rings.
 * @doorbell_fd: eventfd to signal when a packet closes and a reader waits, or -1;
 *               borrowed, must outlive the writer.
 */
void evr_ring_writer_init(struct evr_ring_writer *w, struct evr_shm_hdr *shm, uint32_t index,
			  int doorbell_fd);

/**
 * evr_ring_prepare_slow() - slow path of evr_ring_write_locked(): lay out what
 * must precede a record of @rec_asize aligned bytes (an END record and the next
 * packet's header, a LOST record for pending losses, a THREAD record) and say
 * where the record goes.
 * @ret_pos: position of the record; untouched on failure.
 *
 * Return: 0, or -ENOSPC when the gating reader is behind (the event is counted
 * as lost and reported in-band later).
 */
int evr_ring_prepare_slow(struct evr_ring_writer *w, uint64_t ts, uint32_t tid, uint32_t rec_asize,
			  uint64_t *ret_pos);

/**
 * evr_ring_writer_flush_locked() - report pending losses in-band and publish.
 * @w: the ring; the caller holds its lock, or knows no writer can run (after the
 *     session was unpublished and a grace period elapsed).
 *
 * Writes a LOST record for any pending loss (if it fits; otherwise the loss stays
 * visible in ctl->lost_total) and refreshes the ctl counters.
 */
void evr_ring_writer_flush_locked(struct evr_ring_writer *w, uint64_t ts);

/* Copy @len bytes to ring memory with relaxed 8-byte stores; @dst is 8-aligned. */
static inline void evr_ring_store_bytes(uint8_t *dst, const void *src, uint32_t len)
{
	const uint8_t *s = src;
	uint32_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v;

		memcpy(&v, s + i, 8);
		__atomic_store_n((uint64_t *)(void *)(dst + i), v, __ATOMIC_RELAXED);
	}
	if (i < len) {
		uint32_t rem = len - i;
		uint64_t v = 0;

		/*
		 * The tail, without copying it into a zeroed word byte by byte (that
		 * stalls store forwarding): re-load the last 8 bytes, overlapping, and
		 * shift off what was already stored. Little endian (x86-64).
		 */
		if (len >= 8) {
			memcpy(&v, s + len - 8, 8);
			v >>= 8 * (8 - rem);
		} else {
			for (uint32_t k = 0; k < rem; k++)
				v |= (uint64_t)s[k] << (8 * k);
		}
		__atomic_store_n((uint64_t *)(void *)(dst + i), v, __ATOMIC_RELAXED);
	}
}

static inline void evr_ring_store_hdr(uint8_t *dst, uint32_t size, uint32_t type,
				      uint32_t event_id, uint64_t ts)
{
	uint64_t w0 = (uint64_t)size | (uint64_t)type << 16 | (uint64_t)event_id << 32;

	/* Little-endian layout of struct evr_rec_hdr {size, type, flags=0, event_id}. */
	__atomic_store_n((uint64_t *)(void *)dst, w0, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(void *)(dst + 8), ts, __ATOMIC_RELAXED);
}

/**
 * evr_ring_write_locked() - append one EVENT record; the caller holds w->lock.
 * @w: the ring.
 * @event_id: registry id of the event.
 * @ts: raw timestamp (clamped to be non-decreasing on this ring).
 * @tid: writing thread, never 0.
 * @payload: @len bytes, @len <= EVR_MAX_PAYLOAD.
 *
 * Return: 0 when written, -ENOSPC when dropped because the gating reader is
 * behind (the loss is counted and reported in-band later).
 * Context: lock held; never blocks, allocates or enters the kernel (except the
 * doorbell at a packet switch when a reader asked for it).
 */
static inline int evr_ring_write_locked(struct evr_ring_writer *w, uint32_t event_id, uint64_t ts,
					uint32_t tid, const void *payload, uint32_t len)
{
	uint32_t size = EVR_REC_HDR_SIZE + len;
	uint32_t asize = (uint32_t)evr_align8(size);
	uint64_t pos = w->head;
	uint32_t off = (uint32_t)pos & w->packet_mask;
	uint64_t end = pos + asize;
	uint8_t *dst;

	/* Fast path: inside a started packet, same thread, nothing pending, fits. */
	if (EVR_UNLIKELY(off == 0 || tid != w->last_tid || w->lost_pending ||
			 ((end - 1) & ~(uint64_t)w->packet_mask) != (pos & ~(uint64_t)w->packet_mask) ||
			 atomic_load_explicit(&w->lost_async, memory_order_relaxed) ||
			 (w->mode == EVR_MODE_DISCARD && end - w->tail_cache > w->ring_mask + 1))) {
		int err = evr_ring_prepare_slow(w, ts, tid, asize, &pos);

		if (err)
			return err;
	}

	if (EVR_UNLIKELY(ts < w->last_ts))
		ts = w->last_ts;
	w->last_ts = ts;
	/* F1: pairs with the acquire fence of lapped readers (see the protocol block). */
	atomic_thread_fence(memory_order_release);
	dst = w->data + (pos & w->ring_mask);
	evr_ring_store_hdr(dst, size, EVR_REC_EVENT, event_id, ts);
	evr_ring_store_bytes(dst + EVR_REC_HDR_SIZE, payload, len);
	w->head = pos + asize;
	w->events++;
	/* Pairs with the load-acquire of head in evr_ring_reader_next(). */
	__atomic_store_n(&w->ctl->head, w->head, __ATOMIC_RELEASE);
	return 0;
}

/**
 * evr_ring_try_write() - take the ring if free and append one EVENT record.
 *
 * Return: 0 written, -ENOSPC dropped and counted, -EBUSY the ring is held by
 * another writer (nothing counted: the caller tries another ring).
 */
static inline int evr_ring_try_write(struct evr_ring_writer *w, uint32_t event_id, uint64_t ts,
				     uint32_t tid, const void *payload, uint32_t len)
{
	uint32_t expected = 0;
	int ret;

	/* Acquire pairs with the release store of lock below, by the previous holder. */
	if (!atomic_compare_exchange_strong_explicit(&w->lock, &expected, 1, memory_order_acquire,
						     memory_order_relaxed))
		return -EBUSY;
	ret = evr_ring_write_locked(w, event_id, ts, tid, payload, len);
	atomic_store_explicit(&w->lock, 0, memory_order_release);
	return ret;
}

/* Count @n lost events on @w without holding its lock; reported in-band by the next holder. */
static inline void evr_ring_count_lost(struct evr_ring_writer *w, uint64_t n)
{
	atomic_fetch_add_explicit(&w->lost_async, n, memory_order_relaxed);
}

/* ------------------------------------------------------------------------- */
/* Reader                                                                     */

/* One decoded record, as returned by evr_ring_reader_next(). */
struct evr_record {
	uint32_t type;		/* EVR_REC_EVENT or EVR_REC_LOST */
	uint32_t event_id;
	uint32_t tid;
	uint32_t ring;		/* ring index (the CPU the ring serves) */
	uint64_t ts;		/* raw timestamp */
	uint64_t lost;		/* LOST: number of events lost here */
	const void *payload;	/* EVENT: borrowed until the next call on this reader */
	uint32_t len;
};

enum evr_reader_flags {
	/* The reader gates the writer (discard mode): it reads in place and releases
	 * space with evr_ring_reader_release(). At most one per session. Without it,
	 * the reader is a passive tap and copies-then-validates every record. */
	EVR_READER_GATING = 1u << 0,
};

struct evr_ring_reader {
	const struct evr_shm_hdr *shm;
	struct evr_ring_ctl *ctl;
	const uint8_t *data;
	uint64_t ring_size;
	uint32_t packet_size;
	uint32_t index;
	uint32_t flags;
	uint32_t tid;			/* from the last THREAD record of the current packet */
	uint64_t pos;			/* next byte to read */
	uint64_t head_cache;		/* last head loaded; re-loaded when pos reaches it */
	uint64_t events;		/* event records consumed or accounted as lost */
	uint64_t lost;			/* losses consumed or accounted */
	uint64_t corrupt;		/* packets abandoned because they failed validation */
	bool in_packet;			/* pos is after a validated packet header */
	bool late;			/* attached after the first write: no baseline yet */
	uint8_t buf[EVR_MAX_RECORD];	/* copy of the current record (passive readers) */
};

/**
 * evr_ring_reader_init() - attach a reader to ring @index of a mapped session.
 * @r: caller storage.
 * @shm: mapping validated by evr_shm_session_validate(); borrowed.
 * @index: ring index.
 * @flags: EVR_READER_*.
 *
 * A gating reader starts at the ring's tail; a passive reader at the oldest
 * packet still intact.
 * Return: 0, or -EINVAL.
 */
int evr_ring_reader_init(struct evr_ring_reader *r, const struct evr_shm_hdr *shm, uint32_t index,
			 uint32_t flags);

/**
 * evr_ring_reader_next() - next EVENT or LOST record of this ring.
 * @ret: filled on success; an EVENT payload is borrowed until the next call.
 *
 * Missed records (reader lapped in overwrite mode) come back as one LOST record
 * with their exact count.
 * Return: 1 a record, 0 nothing published yet.
 */
int evr_ring_reader_next(struct evr_ring_reader *r, struct evr_record *ret);

/* Gating readers: give everything read so far back to the writer. */
void evr_ring_reader_release(struct evr_ring_reader *r);

/* True when nothing is published beyond the reader's position. */
bool evr_ring_reader_empty(const struct evr_ring_reader *r);

/* True when a whole packet (or the rest of the current one) is published
 * beyond the reader's position. */
bool evr_ring_reader_packet_ready(const struct evr_ring_reader *r);

#endif /* EVR_RING_H */
