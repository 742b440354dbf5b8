// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Ring writer slow path: packet switches, in-band loss reports, the discard-mode
 * tail check and the doorbell. The ordering protocol is described in
 * <evring/ring.h>; everything here runs with the ring's lock held.
 */
#include <assert.h>
#include <unistd.h>

#include <evring/ring.h>

void evr_ring_writer_init(struct evr_ring_writer *w, struct evr_shm_hdr *shm, uint32_t index,
			  int doorbell_fd)
{
	assert(index < shm->nr_rings);
	memset(w, 0, sizeof(*w));
	w->packet_mask = shm->packet_size - 1;
	w->mode = shm->mode;
	w->ring_mask = shm->ring_size - 1;
	w->data = (uint8_t *)shm + shm->ring_data_off + (uint64_t)index * shm->ring_size;
	w->ctl = (struct evr_ring_ctl *)((uint8_t *)shm + shm->ring_ctl_off +
					 (uint64_t)index * EVR_RING_CTL_SIZE);
	w->shm = shm;
	w->doorbell_fd = doorbell_fd;
	w->index = index;
	atomic_init(&w->lock, 0);
	atomic_init(&w->lost_async, 0);
}

/*
 * A packet was completed: wake a reader that asked for it. The full fence pairs
 * with the one a reader issues between storing waiting = 1 and re-checking the
 * heads (evr_reader_wait()): either the reader sees our head, or we see its flag.
 */
static void ring_doorbell(struct evr_ring_writer *w)
{
	uint64_t one = 1;
	ssize_t n;

	if (w->doorbell_fd < 0)
		return;
	atomic_thread_fence(memory_order_seq_cst);
	if (!__atomic_load_n(&w->shm->waiting, __ATOMIC_RELAXED))
		return;
	if (!__atomic_exchange_n(&w->shm->waiting, 0, __ATOMIC_RELAXED))
		return;
	/* Non-blocking eventfd: fails only if the counter would overflow, which means
	 * the reader has plenty of wake-ups pending already. */
	n = write(w->doorbell_fd, &one, sizeof(one));
	(void)n;
}

static void ring_publish_counters(struct evr_ring_writer *w)
{
	__atomic_store_n(&w->ctl->events_total, w->events, __ATOMIC_RELAXED);
	__atomic_store_n(&w->ctl->lost_total, w->lost_reported + w->lost_pending, __ATOMIC_RELAXED);
}

static void ring_publish(struct evr_ring_writer *w, uint64_t pos)
{
	w->head = pos;
	/* Pairs with the load-acquire of head in evr_ring_reader_next(). */
	__atomic_store_n(&w->ctl->head, pos, __ATOMIC_RELEASE);
}

/* Gating reader's tail, clamped: it never moves back and never passes head. */
static uint64_t ring_load_tail(struct evr_ring_writer *w)
{
	/* Pairs with the store-release of tail in evr_ring_reader_release(): the
	 * reader is done with the bytes below it before we overwrite them. */
	uint64_t t = __atomic_load_n(&w->ctl->tail, __ATOMIC_ACQUIRE);

	if (t < w->tail_cache)
		t = w->tail_cache;
	if (t > w->head)
		t = w->head;
	w->tail_cache = t;
	return t;
}

static void ring_absorb_async_losses(struct evr_ring_writer *w)
{
	if (atomic_load_explicit(&w->lost_async, memory_order_relaxed))
		w->lost_pending += atomic_exchange_explicit(&w->lost_async, 0, memory_order_relaxed);
}

/*
 * Lay out, at the current position, whatever must precede a record of
 * @rec_asize aligned bytes (0 for none): an END record closing the packet if
 * the rest does not fit, the next packet's header, a LOST record for pending
 * losses, a THREAD record if the thread changed. Checks room first in discard
 * mode. Sets *ret_pos to where the record goes; returns 0 or -ENOSPC.
 */
static int ring_prepare(struct evr_ring_writer *w, uint64_t ts, uint32_t tid, uint32_t rec_asize,
			uint64_t *ret_pos)
{
	uint32_t psize = w->packet_mask + 1;
	uint64_t pos = w->head;
	uint32_t off = (uint32_t)pos & w->packet_mask;
	bool new_packet = off == 0;
	uint32_t lost_sz = w->lost_pending ? evr_align8(EVR_REC_LOST_SIZE) : 0;
	uint32_t thr_sz = tid && (new_packet || tid != w->last_tid) ? evr_align8(EVR_REC_THREAD_SIZE) : 0;
	uint32_t pad = 0;
	uint64_t total;

	if (!new_packet && off + lost_sz + thr_sz + rec_asize > psize) {
		pad = psize - off;
		new_packet = true;
		thr_sz = tid ? evr_align8(EVR_REC_THREAD_SIZE) : 0;
	}
	total = pad + (new_packet ? EVR_PACKET_HDR_SIZE : 0) + lost_sz + thr_sz + rec_asize;
	if (w->mode == EVR_MODE_DISCARD && pos + total - w->tail_cache > w->ring_mask + 1 &&
	    pos + total - ring_load_tail(w) > w->ring_mask + 1)
		return -ENOSPC;

	/* F1, see <evring/ring.h>. */
	atomic_thread_fence(memory_order_release);
	if (pad) {
		uint8_t *dst = w->data + (pos & w->ring_mask);
		uint64_t w0 = (uint64_t)(pad > UINT16_MAX ? UINT16_MAX : pad) |
			      (uint64_t)EVR_REC_END << 16;

		__atomic_store_n((uint64_t *)(void *)dst, w0, __ATOMIC_RELAXED);
		if (pad >= EVR_REC_HDR_SIZE)
			__atomic_store_n((uint64_t *)(void *)(dst + 8), ts, __ATOMIC_RELAXED);
		pos += pad;
		ring_publish(w, pos);
		/* Again F1: readers that see the next packet's bytes must see this head. */
		atomic_thread_fence(memory_order_release);
	}
	if (new_packet) {
		struct evr_packet_hdr ph = {
			.magic = EVR_PACKET_MAGIC,
			.ring_index = w->index,
			.seq = pos / psize,
			.ts_begin = ts,
			.events_before = w->events,
			.lost_before = w->lost_reported,
		};

		if (pos) {
			ring_publish_counters(w);
			ring_doorbell(w);
		}
		evr_ring_store_bytes(w->data + (pos & w->ring_mask), &ph, sizeof(ph));
		pos += EVR_PACKET_HDR_SIZE;
		w->last_tid = 0;
	}
	if (lost_sz) {
		struct evr_rec_lost l = { .count = w->lost_pending };
		uint8_t *dst = w->data + (pos & w->ring_mask);

		evr_ring_store_hdr(dst, EVR_REC_LOST_SIZE, EVR_REC_LOST, 0, ts);
		evr_ring_store_bytes(dst + EVR_REC_HDR_SIZE, &l, sizeof(l));
		w->lost_reported += w->lost_pending;
		w->lost_pending = 0;
		pos += lost_sz;
	}
	if (thr_sz) {
		struct evr_rec_thread t = { .tid = tid };
		uint8_t *dst = w->data + (pos & w->ring_mask);

		evr_ring_store_hdr(dst, EVR_REC_THREAD_SIZE, EVR_REC_THREAD, 0, ts);
		evr_ring_store_bytes(dst + EVR_REC_HDR_SIZE, &t, sizeof(t));
		w->last_tid = tid;
		pos += thr_sz;
	}
	*ret_pos = pos;
	return 0;
}

int evr_ring_prepare_slow(struct evr_ring_writer *w, uint64_t ts, uint32_t tid, uint32_t rec_asize,
			  uint64_t *ret_pos)
{
	int err;

	assert(rec_asize <= evr_align8(EVR_MAX_RECORD));
	assert(tid != 0);
	ring_absorb_async_losses(w);
	if (ts < w->last_ts)
		ts = w->last_ts;
	err = ring_prepare(w, ts, tid, rec_asize, ret_pos);
	if (err) {
		w->lost_pending++;
		return err;
	}
	w->last_ts = ts;
	return 0;
}

void evr_ring_writer_flush_locked(struct evr_ring_writer *w, uint64_t ts)
{
	uint64_t pos;

	ring_absorb_async_losses(w);
	if (ts < w->last_ts)
		ts = w->last_ts;
	/* tid 0: no THREAD record; a LOST record carries no thread. */
	if (w->lost_pending && ring_prepare(w, ts, 0, 0, &pos) == 0) {
		w->last_ts = ts;
		ring_publish(w, pos);
	}
	ring_publish_counters(w);
}
