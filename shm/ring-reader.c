// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Ring reader. Trusts nothing in shared memory: every size and type is checked
 * before use, and every position is masked into the ring.
 *
 * Gating readers (discard mode, one per session) read records in place below
 * head; the writer never overwrites them before the reader releases tail.
 *
 * Passive readers (overwrite mode, or taps on a discard session) may be lapped.
 * They copy each record with relaxed loads, then issue an acquire fence and
 * re-load head: the writer publishes every head before writing past it plus one
 * packet (see <evring/ring.h>), and its release fence F1 pairs with our acquire
 * fence, so if the copy raced with the writer the re-loaded head shows it, and
 * the copy is discarded. Lapped readers resynchronize on the oldest packet that
 * is surely intact and account for what they skipped, exactly, from that
 * packet's header.
 */
#include <assert.h>

#include <evring/ring.h>

#include "shm-internal.h"

/*
 * How far ahead of its position the reader prefetches: across the next page,
 * where the hardware's streamer stops. Measured 256 B to 8 KiB on the reader
 * benchmark: 2 to 8 KiB read 15% faster than none.
 */

static void baseline_now(struct evr_ring_reader *r);

int evr_ring_reader_init(struct evr_ring_reader *r, const struct evr_shm_hdr *shm, uint32_t index,
			 uint32_t flags)
{
	struct evr_shm_hdr geo;

	if (!r || !shm)
		return -EINVAL;
	/* The geometry as validated: the producer can rewrite the header. */
	evr_shm_geometry_of(shm, &geo);
	if (index >= geo.nr_rings)
		return -EINVAL;
	memset(r, 0, offsetof(struct evr_ring_reader, buf));
	r->shm = shm;
	r->ctl = evr_shm_geo_ctl(shm, &geo, index);
	r->data = evr_shm_geo_data(shm, &geo, index);
	r->ring_size = geo.ring_size;
	r->packet_size = geo.packet_size;
	r->index = index;
	r->flags = flags;
	if (flags & EVR_READER_GATING)
		r->pos = __atomic_load_n(&r->ctl->tail, __ATOMIC_ACQUIRE);
	/*
	 * A reader that attaches after the first write takes its loss baseline from
	 * a packet header: what was written before it came is not "lost" to it. A
	 * gating reader takes it at its first read (the writer waits for it, so
	 * nothing it could read is overwritten before). A passive reader may be
	 * lapped before its first read, so it takes it now, from the oldest intact
	 * packet, where it starts; from there on every overwritten event counts.
	 */
	if (flags & EVR_READER_FROM_START)
		return 0;	/* pos, events and lost are 0: nothing is history */
	r->late = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE) != 0;
	if (r->late && !(flags & EVR_READER_GATING))
		baseline_now(r);
	return 0;
}

static uint64_t load_u64(const uint8_t *p)
{
	return __atomic_load_n((const uint64_t *)(const void *)p, __ATOMIC_RELAXED);
}

static void copy_in(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	for (uint32_t i = 0; i < len; i += 8) {
		uint64_t v = load_u64(src + i);

		memcpy(dst + i, &v, 8);
	}
}

/* Oldest position a passive reader may trust given head @h (see ring.h). */
static uint64_t first_safe(const struct evr_ring_reader *r, uint64_t h)
{
	return evr_ring_first_safe(r->ring_size, r->packet_size, h);
}

/*
 * Passive readers: after copying bytes at @pos, are they still intact? The head
 * loaded here also refreshes the cached one, so that a reader that was lapped
 * resynchronizes instead of retrying the same overwritten record.
 */
static bool still_intact(struct evr_ring_reader *r, uint64_t pos)
{
	uint64_t h;

	/* Pairs with the writer's release fence F1 (<evring/ring.h>). */
	atomic_thread_fence(memory_order_acquire);
	/* Acquire as well: this head may become the cached one, below which later
	 * records are read (pairs with the writer's store-release of head). */
	h = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
	if (h > r->head_cache)
		r->head_cache = h;
	return pos >= first_safe(r, h);
}

/*
 * Late passive readers, at attach: position at the oldest intact packet and take
 * the baseline from its header. If the header cannot be read intact or is not
 * plausible, the baseline is left to the first read (r->late stays set).
 */
static void baseline_now(struct evr_ring_reader *r)
{
	const uint64_t pmask = r->packet_size - 1;

	for (int tries = 0; tries < 4; tries++) {
		/* Pairs with the store-release of head by the writer. */
		uint64_t h = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
		uint64_t p = (first_safe(r, h) + pmask) & ~pmask;
		struct evr_packet_hdr ph;

		if (h < p || h - p < EVR_PACKET_HDR_SIZE)
			return;
		copy_in((uint8_t *)&ph, r->data + (p & (r->ring_size - 1)), sizeof(ph));
		if (!still_intact(r, p))
			continue;	/* lapped while reading it: again, further on */
		if (ph.magic != EVR_PACKET_MAGIC || ph.seq != p / r->packet_size ||
		    ph.ring_index != r->index)
			return;
		r->pos = p;
		r->events = ph.events_before;
		r->lost = ph.lost_before;
		r->late = false;
		return;
	}
}

/*
 * Is a record of @type and @size plausible? @in_packet: it ends inside its
 * packet; @published: it ends at or below head. An END record pads the packet,
 * may be only 8 bytes long and may extend past head.
 */
static bool record_valid(uint32_t type, uint32_t size, bool in_packet, bool published)
{
	uint32_t min = evr_rec_min_size(type);

	if (!min || size < min || !in_packet)
		return false;
	return type == EVR_REC_END || (published && size <= EVR_MAX_RECORD);
}

static void skip_packet(struct evr_ring_reader *r)
{
	uint64_t next = (r->pos | (r->packet_size - 1)) + 1;

	/* Saturate rather than wrap to 0 under a hostile head near 2^64: from 0 the
	 * reader would resync to the same packets and skip them again, forever. */
	r->pos = next ? next : UINT64_MAX;
	r->in_packet = false;
}

bool evr_ring_reader_empty(const struct evr_ring_reader *r)
{
	return __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE) == r->pos;
}

bool evr_ring_reader_packet_ready(const struct evr_ring_reader *r)
{
	uint64_t head = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);

	/* A packet boundary lies in (pos, head]: something complete awaits. */
	return head > r->pos && (head - 1) / r->packet_size != r->pos / r->packet_size;
}

void evr_ring_reader_release(struct evr_ring_reader *r)
{
	if (!(r->flags & EVR_READER_GATING))
		return;
	/* Pairs with the load-acquire of tail in the writer (ring_load_tail()):
	 * our reads of the bytes below pos are done before it may reuse them. */
	__atomic_store_n(&r->ctl->tail, r->pos, __ATOMIC_RELEASE);
}

int evr_ring_reader_next(struct evr_ring_reader *r, struct evr_record *ret)
{
	const bool passive = !(r->flags & EVR_READER_GATING);
	const uint32_t pmask = r->packet_size - 1;

	for (;;) {
		uint64_t pos = r->pos;
		uint64_t head = r->head_cache;
		uint32_t off = (uint32_t)pos & pmask;
		const uint8_t *src = r->data + (pos & (r->ring_size - 1));
		const uint8_t *rec;
		uint32_t size, type, asize;
		uint64_t w0;
		bool bad;

		if (pos >= head) {
			/*
			 * Re-load head only when the cached value is used up: a reader that
			 * loads it per record bounces the line the writer stores to on every
			 * record (measured: twice the write cost).
			 * Pairs with the store-release of head by the writer.
			 */
			head = __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE);
			r->head_cache = head;
			if (pos == head)
				return 0;
		}
		if (head < pos) {
			/*
			 * We skipped past head, out of a packet still being written (a bad
			 * record, or a gating reader attached mid-packet), or head went back.
			 * Resume at head itself: going back to the start of its packet would
			 * re-read the header just rejected and skip past head again, forever.
			 */
			r->corrupt++;
			r->pos = head;
			r->in_packet = false;
			continue;
		}
		if (pos < first_safe(r, head) && (passive || head - pos > r->ring_size)) {
			uint64_t safe = first_safe(r, head);

			/* ring_size >= 4 packets, so this is still below head. */
			r->pos = (safe + pmask) & ~(uint64_t)pmask;
			r->in_packet = false;
			continue;
		}

		if (off == 0 || !r->in_packet) {
			struct evr_packet_hdr ph;
			uint64_t missed_ev, missed_lost;

			if (off != 0) {
				skip_packet(r);
				continue;
			}
			if (head - pos < EVR_PACKET_HDR_SIZE) {
				r->corrupt++;
				r->pos = head;
				return 0;
			}
			copy_in((uint8_t *)&ph, src, sizeof(ph));
			if (passive && !still_intact(r, pos))
				continue;	/* lapped while reading: resync above */
			if (ph.magic != EVR_PACKET_MAGIC || ph.seq != pos / r->packet_size ||
			    ph.ring_index != r->index || ph.events_before < r->events ||
			    ph.lost_before < r->lost) {
				r->corrupt++;
				skip_packet(r);
				continue;
			}
			if (r->late) {
				r->events = ph.events_before;
				r->lost = ph.lost_before;
				r->late = false;
			}
			missed_ev = ph.events_before - r->events;
			missed_lost = ph.lost_before - r->lost;
			r->events = ph.events_before;
			r->lost = ph.lost_before;
			r->tid = 0;
			r->pos = pos + EVR_PACKET_HDR_SIZE;
			r->in_packet = true;
			if (missed_ev + missed_lost) {
				memset(ret, 0, sizeof(*ret));
				ret->type = EVR_REC_LOST;
				ret->ring = r->index;
				ret->ts = ph.ts_begin;
				ret->lost = missed_ev + missed_lost;
				return 1;
			}
			continue;
		}

		/* Prefetch, but only below head: a line the writer has yet to fill
		 * would cost it a read-for-ownership. */
		if (pos + EVR_READER_PREFETCH < head)
			__builtin_prefetch(r->data + ((pos + EVR_READER_PREFETCH) &
						      (r->ring_size - 1)));
		w0 = load_u64(src);
		size = (uint32_t)(w0 & 0xffff);
		type = (uint32_t)(w0 >> 16) & 0xff;
		asize = (uint32_t)evr_align8(size);
		bad = !record_valid(type, size, off + asize <= r->packet_size, pos + asize <= head);
		if (bad || type == EVR_REC_END) {
			/* A passive reader first checks it was not reading overwritten bytes. */
			if (passive && !still_intact(r, pos))
				continue;
			r->corrupt += bad;
			skip_packet(r);
			continue;
		}
		if (passive) {
			copy_in(r->buf, src, asize);
			if (!still_intact(r, pos))
				continue;
			rec = r->buf;
		} else {
			rec = src;
		}
		r->pos = pos + asize;

		if (type == EVR_REC_THREAD) {
			struct evr_rec_thread t;

			memcpy(&t, rec + EVR_REC_HDR_SIZE, sizeof(t));
			r->tid = t.tid;
			continue;
		}
		ret->type = type;
		ret->ring = r->index;
		memcpy(&ret->ts, rec + 8, 8);
		if (type == EVR_REC_LOST) {
			struct evr_rec_lost l;

			memcpy(&l, rec + EVR_REC_HDR_SIZE, sizeof(l));
			r->lost += l.count;
			ret->lost = l.count;
			ret->event_id = 0;
			ret->tid = 0;
			ret->payload = NULL;
			ret->len = 0;
			return 1;
		}
		evr_ring_reader_take_event(r, rec, w0, ret);
		return 1;
	}
}
