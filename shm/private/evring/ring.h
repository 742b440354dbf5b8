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
 * is busy is the event counted in lost_async. Where rseq is usable, sessions use
 * per-CPU rings instead, owned by their CPU without an atomic read-modify-write
 * (<evring/ring-rseq.h>); the lock then guards only the slow path.
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
 *      which makes this holder's private fields visible to it), and only then
 *      makes the doorbell's system call, if a packet it closed asked for one.
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
#include <evring/reader.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the record encoding assumes a little-endian CPU"
#endif

#define EVR_LIKELY(x)	__builtin_expect(!!(x), 1)
#define EVR_UNLIKELY(x)	__builtin_expect(!!(x), 0)

#define EVR_REC_THREAD_SIZE	(EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_thread))
#define EVR_REC_LOST_SIZE	(EVR_REC_HDR_SIZE + (uint32_t)sizeof(struct evr_rec_lost))

/*
 * Producer-private state of one ring.
 *
 * First cache line: everything the fast path reads and writes, touched only by
 * the ring's current writer (the lock holder, or in per-CPU mode the thread
 * running on the ring's CPU, see <evring/ring-rseq.h>). {head, tid_events} is
 * one 16-byte aligned pair so that the per-CPU fast path commits a record, and
 * the THREAD record it may write before it, with a single store.
 *
 * fast_end folds every reason to leave the fast path into one bound: records
 * may be appended at head without the slow path iff they end at or below
 * fast_end (the end of the current packet, or less: the gating reader's tail +
 * ring size in discard mode; 0 while losses are pending or before the first
 * packet, and after a drop in the per-CPU section until the slow path has
 * counted it), nothing was counted in lost_async and no wake-up is due (ts <
 * bell_due). A change of thread does not leave the fast path: it writes the
 * THREAD record itself.
 *
 * Wake-ups: a reader that sleeps (shm->waiting) is woken when a packet closes,
 * but at most once per EVR_RING_BELL_INTERVAL_US per ring unless a quarter of
 * the ring was written since the last one: each wake-up is a system call and an
 * interrupt to another CPU (measured 7 us here, 4.5 ns per event when every
 * 64 KiB packet rang). A packet closed within the interval owes a wake-up: the
 * first write at or after bell_due (the end of the interval) takes the slow path
 * and rings. If the producer writes nothing more, the reader sees that packet at
 * its own timeout, as it sees a half-filled one.
 */
#define EVR_RING_BELL_INTERVAL_US 1000u

struct evr_ring_writer {
	_Atomic uint32_t lock;		/* 0 free; held: the rseq holder's tid, or 1 */
	uint32_t bell;			/* ring the doorbell after unlocking (evr_ring_take_bell_locked()) */
	uint64_t fast_end;		/* see above; set by the slow path only */
	uint64_t head;			/* authoritative write position */
	uint64_t tid_events;		/* tid of the last THREAD record of this packet (0 = none)
					 * << 32 | event records written in this packet */
	uint64_t last_ts;		/* timestamps are clamped to be non-decreasing per ring */
	uint64_t ring_mask;		/* ring_size - 1 */
	uint8_t *data;			/* this ring's bytes in the session mapping */
	uint64_t bell_due;		/* a wake-up is owed from this timestamp on; UINT64_MAX: none */
	/* second line: the publish, and the slow path */
	struct evr_ring_ctl *ctl;
	uint64_t events_base;		/* event records written before the current packet */
	uint64_t tail_cache;		/* discard: last clamped tail read from ctl */
	uint64_t lost_reported;		/* events covered by LOST records written, cumulative */
	uint64_t lost_pending;		/* lost events not yet reported by a LOST record */
	uint32_t packet_mask;		/* packet_size - 1 */
	uint32_t mode;			/* enum evr_mode */
	int doorbell_fd;		/* eventfd, or -1 */
	uint32_t index;
	/* Events the per-CPU section dropped, the ring full, cumulative: written
	 * only by that section, which runs on the ring's CPU with the lock free,
	 * and read under the lock (<evring/ring-rseq.h>). */
	uint64_t lost_fast;
	/* third line: wake-up pacing (slow path), set-once fields */
	struct evr_shm_hdr *shm;	/* doorbell flag */
	uint64_t bell_next;		/* no wake-up before this timestamp, unless bell_bytes passed */
	uint64_t bell_pos;		/* position of the last wake-up */
	uint64_t bell_ticks;		/* EVR_RING_BELL_INTERVAL_US in timestamp ticks */
	uint64_t bell_bytes;		/* a wake-up at least every ring_size / 4 bytes */
	uint64_t lost_absorbed;		/* lost_async moved into lost_pending, cumulative */
	uint64_t lost_fast_absorbed;	/* lost_fast moved into lost_pending, cumulative */
	/* fourth line: written without the lock */
	_Atomic uint64_t lost_async __attribute__((aligned(EVR_CACHELINE)));
} __attribute__((aligned(EVR_CACHELINE)));

_Static_assert(offsetof(struct evr_ring_writer, head) % 16 == 0 &&
	       offsetof(struct evr_ring_writer, tid_events) ==
		       offsetof(struct evr_ring_writer, head) + 8,
	       "{head, tid_events} is one aligned 16-byte pair");
_Static_assert(offsetof(struct evr_ring_writer, bell_due) < EVR_CACHELINE, "fast path on one line");
/* A packet holds fewer than 2^32 records, so the per-packet count cannot carry into the tid. */
_Static_assert(EVR_PACKET_SIZE_MAX / EVR_REC_HDR_SIZE < (1ull << 32), "events in a packet");

#define EVR_REC_THREAD_ASIZE	((EVR_REC_THREAD_SIZE + 7u) & ~7u)

/* Event records written to @w so far. Context: @w's writer. */
static inline uint64_t evr_ring_events(const struct evr_ring_writer *w)
{
	return w->events_base + (uint32_t)w->tid_events;
}

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

/*
 * The writer asks for ownership of the line this far ahead of head on every
 * record (prefetchw), so that the stores find it writable: a line last read by
 * a reader (or evicted a lap ago) otherwise costs a read-for-ownership while
 * the record's stores wait in the store buffer. 1 KiB is ~25 records ahead;
 * measured 256 B to 16 KiB, 1 to 4 KiB were best (-10% with a reader).
 */
#define EVR_RING_PREFETCH 1024

/*
 * The last @rem (< 8) bytes at @p as one little-endian word, zero-extended.
 * Loaded in 4-, 2- and 1-byte pieces: payloads are usually built just before
 * by field-sized stores, and a load that spans two of those stores cannot be
 * forwarded from the store buffer, so it waits for every older store to reach
 * the cache, including ring stores that miss (measured: a third of a write
 * with a reader running). A trailing 4-byte field is read by exactly the
 * load that matches its store.
 */
static inline uint64_t evr_load_tail(const uint8_t *p, uint32_t rem)
{
	uint64_t v = 0;
	uint32_t o = 0;

	if (rem & 4) {
		uint32_t x;

		memcpy(&x, p, 4);
		v = x;
		o = 4;
	}
	if (rem & 2) {
		uint16_t x;

		memcpy(&x, p + o, 2);
		v |= (uint64_t)x << (8 * o);
		o += 2;
	}
	if (rem & 1)
		v |= (uint64_t)p[o] << (8 * o);
	return v;
}

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
	if (i < len)
		__atomic_store_n((uint64_t *)(void *)(dst + i), evr_load_tail(s + i, len - i),
				 __ATOMIC_RELAXED);
}

/* @type: the record type, with the record's flags (EVR_REC_F_*) in bits 8..15. */
static inline void evr_ring_store_hdr(uint8_t *dst, uint32_t size, uint32_t type,
				      uint32_t event_id, uint64_t ts)
{
	uint64_t w0 = (uint64_t)size | (uint64_t)type << 16 | (uint64_t)event_id << 32;

	/* Little-endian layout of struct evr_rec_hdr {size, type, flags, event_id}. */
	__atomic_store_n((uint64_t *)(void *)dst, w0, __ATOMIC_RELAXED);
	__atomic_store_n((uint64_t *)(void *)(dst + 8), ts, __ATOMIC_RELAXED);
}

/**
 * evr_ring_write_locked_flags() - append one EVENT record; the caller holds w->lock.
 * @w: the ring.
 * @event_id: registry id of the event.
 * @ts: raw timestamp (clamped to be non-decreasing on this ring).
 * @tid: writing thread, never 0.
 * @payload: @len bytes, @len <= EVR_MAX_PAYLOAD.
 * @flags: the record header's flags (EVR_REC_F_*).
 *
 * Return: 0 when written, -ENOSPC when dropped because the gating reader is
 * behind (the loss is counted and reported in-band later).
 * Context: lock held; never blocks, allocates or enters the kernel. A packet
 * switch that a waiting reader must hear of sets w->bell: the caller rings it
 * after unlocking (evr_ring_take_bell_locked(), evr_ring_doorbell()).
 */
static inline int evr_ring_write_locked_flags(struct evr_ring_writer *w, uint32_t event_id,
					      uint64_t ts, uint32_t tid, const void *payload,
					      uint32_t len, uint8_t flags)
{
	uint32_t size = EVR_REC_HDR_SIZE + len;
	uint32_t asize = (uint32_t)evr_align8(size);
	uint64_t pos = w->head;
	uint64_t te = w->tid_events;
	uint32_t thr = (uint32_t)(te >> 32) == tid ? 0 : EVR_REC_THREAD_ASIZE;
	uint64_t end = pos + thr + asize;
	uint8_t *dst;

	/* Fast path: fits below fast_end, nothing lost meanwhile, no wake-up due. */
	if (EVR_UNLIKELY(end > w->fast_end || ts >= w->bell_due ||
			 atomic_load_explicit(&w->lost_async, memory_order_relaxed))) {
		int err = evr_ring_prepare_slow(w, ts, tid, asize, &pos);

		if (err)
			return err;
		te = w->tid_events;	/* the slow path wrote the THREAD record */
		thr = 0;
		end = pos + asize;
	}

	if (EVR_UNLIKELY(ts < w->last_ts))
		ts = w->last_ts;
	w->last_ts = ts;
	/* F1: pairs with the acquire fence of lapped readers (see the protocol block). */
	atomic_thread_fence(memory_order_release);
	dst = w->data + (pos & w->ring_mask);
	__builtin_prefetch(w->data + ((end + EVR_RING_PREFETCH) & w->ring_mask), 1);
	if (thr) {
		evr_ring_store_hdr(dst, EVR_REC_THREAD_SIZE, EVR_REC_THREAD, 0, ts);
		/* struct evr_rec_thread {tid, pad = 0} */
		__atomic_store_n((uint64_t *)(void *)(dst + EVR_REC_HDR_SIZE), tid,
				 __ATOMIC_RELAXED);
		dst += EVR_REC_THREAD_ASIZE;
	}
	evr_ring_store_hdr(dst, size, EVR_REC_EVENT | (uint32_t)flags << 8, event_id, ts);
	evr_ring_store_bytes(dst + EVR_REC_HDR_SIZE, payload, len);
	/* Relaxed atomic: read without the lock (ring_surely_full()). */
	__atomic_store_n(&w->head, end, __ATOMIC_RELAXED);
	w->tid_events = (uint64_t)tid << 32 | ((uint32_t)te + 1u);
	/* Pairs with the load-acquire of head in evr_ring_reader_next(). */
	__atomic_store_n(&w->ctl->head, end, __ATOMIC_RELEASE);
	return 0;
}

/* evr_ring_write_locked_flags() with the record's flags (EVR_REC_F_*) 0. */
static inline int evr_ring_write_locked(struct evr_ring_writer *w, uint32_t event_id, uint64_t ts,
					uint32_t tid, const void *payload, uint32_t len)
{
	return evr_ring_write_locked_flags(w, event_id, ts, tid, payload, len, 0);
}

/*
 * A packet closed while a reader waited (w->bell, set under the lock): wake it.
 * Called after the lock is released, so that the system call, and a reader
 * woken onto this CPU, never preempt a lock holder.
 */
void evr_ring_doorbell(struct evr_ring_writer *w);

/* Under @w's lock: take the pending doorbell, to ring once the lock is released. */
static inline bool evr_ring_take_bell_locked(struct evr_ring_writer *w)
{
	if (EVR_LIKELY(!w->bell))
		return false;
	w->bell = 0;
	return true;
}

/**
 * evr_ring_try_write_flags() - take the ring if free and append one EVENT record
 * with header flags @flags (EVR_REC_F_*).
 *
 * Return: 0 written, -ENOSPC dropped and counted, -EBUSY the ring is held by
 * another writer (nothing counted: the caller tries another ring).
 */
static inline int evr_ring_try_write_flags(struct evr_ring_writer *w, uint32_t event_id,
					   uint64_t ts, uint32_t tid, const void *payload,
					   uint32_t len, uint8_t flags)
{
	uint32_t expected = 0;
	bool bell;
	int ret;

	/* Acquire pairs with the release store of lock below, by the previous holder. */
	if (!atomic_compare_exchange_strong_explicit(&w->lock, &expected, 1, memory_order_acquire,
						     memory_order_relaxed))
		return -EBUSY;
	ret = evr_ring_write_locked_flags(w, event_id, ts, tid, payload, len, flags);
	bell = evr_ring_take_bell_locked(w);
	atomic_store_explicit(&w->lock, 0, memory_order_release);
	if (EVR_UNLIKELY(bell))
		evr_ring_doorbell(w);
	return ret;
}

/* evr_ring_try_write_flags() with flags 0. */
static inline int evr_ring_try_write(struct evr_ring_writer *w, uint32_t event_id, uint64_t ts,
				     uint32_t tid, const void *payload, uint32_t len)
{
	return evr_ring_try_write_flags(w, event_id, ts, tid, payload, len, 0);
}

/* Count @n lost events on @w without holding its lock; reported in-band by the next holder. */
static inline void evr_ring_count_lost(struct evr_ring_writer *w, uint64_t n)
{
	atomic_fetch_add_explicit(&w->lost_async, n, memory_order_relaxed);
	/* Also in shared memory, so that a reader of a producer that died before
	 * reporting it in-band still counts it (evr_ring_ctl_lost()). */
	__atomic_fetch_add(&w->ctl->lost_async_total, n, __ATOMIC_RELAXED);
}

/* ------------------------------------------------------------------------- */
/* Reader                                                                     */

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

/* Bytes ahead of a reader that evr_ring_reader_next_event() prefetches. */
#define EVR_READER_PREFETCH 4096u

/*
 * The EVENT record at @rec (in place, or a passive reader's copy), whose header
 * word 0 is @w0, as @ret; counted as consumed.
 */
static inline void evr_ring_reader_take_event(struct evr_ring_reader *r, const uint8_t *rec,
					      uint64_t w0, struct evr_record *ret)
{
	r->events++;
	ret->type = EVR_REC_EVENT;
	ret->event_id = (uint32_t)(w0 >> 32);
	ret->tid = r->tid;
	ret->ring = r->index;
	memcpy(&ret->ts, rec + 8, 8);
	ret->lost = 0;
	ret->payload = rec + EVR_REC_HDR_SIZE;
	ret->len = (uint32_t)(w0 & 0xffff) - EVR_REC_HDR_SIZE;
	ret->flags = (uint32_t)(w0 >> 24) & 0xffu;
}

/**
 * evr_ring_reader_next_event() - the common case of evr_ring_reader_next(),
 * inline: a gating reader inside a validated packet, at an EVENT record below
 * the head it already loaded. Anything else (packet headers, THREAD, LOST and
 * END records, a head to reload, a passive reader) returns 0 for
 * evr_ring_reader_next() to handle, so that calling this first changes nothing
 * but the cost. Every check of the full path on such a record is made here.
 * Return: 1 an EVENT in @ret, 0 call evr_ring_reader_next().
 */
static inline int evr_ring_reader_next_event(struct evr_ring_reader *r, struct evr_record *ret)
{
	const uint64_t pos = r->pos, head = r->head_cache;
	const uint32_t off = (uint32_t)pos & (r->packet_size - 1);
	const uint8_t *src;
	uint32_t size, asize;
	uint64_t w0;

	if (!(r->flags & EVR_READER_GATING) || !r->in_packet || off == 0 ||
	    head < pos + EVR_REC_HDR_SIZE || head - pos > r->ring_size)
		return 0;
	src = r->data + (pos & (r->ring_size - 1));
	/* Below head: pairs with the writer's release of head, loaded with acquire. */
	w0 = __atomic_load_n((const uint64_t *)(const void *)src, __ATOMIC_RELAXED);
	size = (uint32_t)(w0 & 0xffff);
	asize = (size + 7u) & ~7u;
	if (((w0 >> 16) & 0xff) != EVR_REC_EVENT || size < EVR_REC_HDR_SIZE ||
	    size > EVR_MAX_RECORD || off + asize > r->packet_size || pos + asize > head)
		return 0;
	/* Prefetch, but only below head: a line the writer has yet to fill would
	 * cost it a read-for-ownership. */
	if (pos + EVR_READER_PREFETCH < head)
		__builtin_prefetch(r->data + ((pos + EVR_READER_PREFETCH) & (r->ring_size - 1)));
	r->pos = pos + asize;
	evr_ring_reader_take_event(r, src, w0, ret);
	return 1;
}

/* Gating readers: give everything read so far back to the writer. */
void evr_ring_reader_release(struct evr_ring_reader *r);

/* True when nothing is published beyond the reader's position. */
bool evr_ring_reader_empty(const struct evr_ring_reader *r);

/* True when a whole packet (or the rest of the current one) is published
 * beyond the reader's position. */
bool evr_ring_reader_packet_ready(const struct evr_ring_reader *r);

#endif /* EVR_RING_H */
