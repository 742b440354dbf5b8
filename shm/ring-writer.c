// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Ring writer slow path: packet switches, in-band loss reports, the discard-mode
 * tail check and the doorbell. The ordering protocol is described in
 * <evring/ring.h>; everything here runs with the ring's lock held.
 */
#include <assert.h>
#include <linux/membarrier.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<sys/platform/x86.h>)
#include <sys/platform/x86.h>	/* glibc 2.33+ */
#define EVR_HAVE_PLATFORM_X86 1
#endif
#endif

#include <evring/ring-rseq.h>

#include "shm-internal.h"

uint32_t evr_ring_percpu_min = UINT32_MAX;
EVR_LOAD_DATA uint8_t evr_ring_copy_avx2;
EVR_LOAD_DATA int evr_rseq_fence_ok;

/*
 * Before any constructor can write an event (priority 101, the first allowed).
 * glibc's dynamic loader has already asked the CPU (and the kernel's XSAVE
 * state) at start: reading its answer costs nothing, where libgcc's
 * __builtin_cpu_init() runs a dozen CPUIDs again, each a VM exit in a guest
 * (30-70 us each in a nested one): a program nobody traces pays for every one
 * at every start (docs/protocol.md, "What a program pays at start-up").
 */
__attribute__((constructor(101))) static void copy_width_init(void)
{
#ifdef EVR_HAVE_PLATFORM_X86
	evr_ring_copy_avx2 = CPU_FEATURE_ACTIVE(AVX2);
#else
	__builtin_cpu_init();
	evr_ring_copy_avx2 = __builtin_cpu_supports("avx2") != 0;
#endif
}

void evr_rseq_fence_register(void)
{
#if EVR_HAVE_RSEQ
	/* Linux 5.10+; without it the write path takes the RCU read lock every time. */
	evr_rseq_fence_ok = syscall(__NR_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ,
				    0, 0) == 0;
#endif
}

void evr_rseq_synchronize(void)
{
	if (!evr_rseq_fence_ok)
		return;
	/* Registered above, so it only fails for reasons that cannot happen
	 * here (bad flags); then nothing is safe to free: stop loudly. */
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ, 0, 0) != 0)
		abort();
}

void evr_ring_writer_init(struct evr_ring_writer *w, struct evr_shm_hdr *shm, uint32_t index,
			  int doorbell_fd)
{
	struct evr_shm_hdr geo;

	/* The geometry as created: a consumer can write the header. */
	evr_shm_geometry_of(shm, &geo);
	assert(index < geo.nr_rings);
	memset(w, 0, sizeof(*w));
	w->packet_mask = geo.packet_size - 1;
	w->mode = geo.mode;
	w->ring_mask = geo.ring_size - 1;
	w->data = evr_shm_geo_data(shm, &geo, index);
	w->ctl = evr_shm_geo_ctl(shm, &geo, index);
	w->shm = shm;
	w->doorbell_fd = doorbell_fd;
	w->bell_due = UINT64_MAX;
	/* 0 when the clock rate is unknown: every packet close may ring. */
	w->bell_ticks = geo.clock.ticks_per_sec / 1000000u * EVR_RING_BELL_INTERVAL_US;
	w->bell_bytes = geo.ring_size / 4;
	w->index = index;
	atomic_init(&w->lock, 0);
	atomic_init(&w->lost_async, 0);
}

/*
 * A packet was completed: wake a reader that asked for it. The full fence pairs
 * with the one a reader issues between storing waiting = 1 and re-checking the
 * heads (evr_reader_wait()): either the reader sees our head, or we see its flag.
 */
void evr_ring_doorbell(struct evr_ring_writer *w)
{
	uint64_t one = 1;
	ssize_t n;

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

/* Under the lock: ask for a wake-up (rung after unlocking), see <evring/ring.h>. */
static void ring_ask_bell(struct evr_ring_writer *w, uint64_t ts, uint64_t pos)
{
	w->bell = 1;
	w->bell_due = UINT64_MAX;
	w->bell_next = ts + w->bell_ticks;
	w->bell_pos = pos;
}

/* A packet closed at @pos: wake a waiting reader now, or owe it a wake-up. */
static void ring_pace_bell(struct evr_ring_writer *w, uint64_t ts, uint64_t pos)
{
	if (w->doorbell_fd < 0)
		return;
	if (ts >= w->bell_next || pos - w->bell_pos >= w->bell_bytes)
		ring_ask_bell(w, ts, pos);
	else if (w->bell_due == UINT64_MAX)
		w->bell_due = w->bell_next;
}

static void ring_publish_counters(struct evr_ring_writer *w)
{
	__atomic_store_n(&w->ctl->events_total, evr_ring_events(w), __ATOMIC_RELAXED);
	__atomic_store_n(&w->ctl->lost_total, w->lost_reported + w->lost_pending, __ATOMIC_RELAXED);
	/* After lost_total, which now includes them (evr_ring_ctl_lost()). */
	__atomic_store_n(&w->ctl->lost_async_absorbed, w->lost_absorbed, __ATOMIC_RELAXED);
	__atomic_store_n(&w->ctl->lost_fast_absorbed, w->lost_fast_absorbed, __ATOMIC_RELAXED);
}

static void ring_publish(struct evr_ring_writer *w, uint64_t pos)
{
	/* Relaxed atomic: read without the lock by ring_surely_full(). */
	__atomic_store_n(&w->head, pos, __ATOMIC_RELAXED);
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
	if (atomic_load_explicit(&w->lost_async, memory_order_relaxed)) {
		uint64_t n = atomic_exchange_explicit(&w->lost_async, 0, memory_order_relaxed);

		w->lost_pending += n;
		w->lost_absorbed += n;
	}
	/* The per-CPU section's drops: it cannot run while we hold the lock. */
	if (w->lost_fast != w->lost_fast_absorbed) {
		w->lost_pending += w->lost_fast - w->lost_fast_absorbed;
		w->lost_fast_absorbed = w->lost_fast;
	}
	/* Its shared copy, again: a section aborted after storing it left it one
	 * ahead (EVR_RSEQ_DROP_FULL). Read by evr_ring_ctl_lost(), which takes
	 * what lost_fast_absorbed (stored after lost_total) has not. */
	__atomic_store_n(&w->ctl->lost_fast_total, w->lost_fast, __ATOMIC_RELAXED);
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
	uint32_t last_tid = (uint32_t)(w->tid_events >> 32);
	uint32_t thr_sz = tid && (new_packet || tid != last_tid) ? EVR_REC_THREAD_ASIZE : 0;
	uint32_t pad = 0;
	uint64_t total;

	if (!new_packet && off + lost_sz + thr_sz + rec_asize > psize) {
		pad = psize - off;
		new_packet = true;
		thr_sz = tid ? EVR_REC_THREAD_ASIZE : 0;
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
			.events_before = evr_ring_events(w),
			.lost_before = w->lost_reported,
		};

		if (pos) {
			ring_publish_counters(w);
			ring_pace_bell(w, ts, pos);
		}
		evr_ring_store_bytes(w->data + (pos & w->ring_mask), &ph, sizeof(ph));
		pos += EVR_PACKET_HDR_SIZE;
		/* A new packet names its thread again, and counts its own events. */
		w->events_base = ph.events_before;
		w->tid_events = 0;
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
		w->tid_events = (uint64_t)tid << 32 | (uint32_t)w->tid_events;
		pos += thr_sz;
	}
	*ret_pos = pos;
	return 0;
}

/*
 * The bound below which the fast path may append at @next (the next record's
 * position): the end of @next's packet, or @next itself at a packet boundary
 * (the next packet needs its header); in discard mode no further than the
 * gating reader allows; 0 while a loss waits to be reported in-band.
 */
static void ring_set_fast_end(struct evr_ring_writer *w, uint64_t next)
{
	uint64_t end = ((uint32_t)next & w->packet_mask) ? (next | w->packet_mask) + 1 : next;

	if (w->mode == EVR_MODE_DISCARD && end > w->tail_cache + w->ring_mask + 1)
		end = w->tail_cache + w->ring_mask + 1;
	w->fast_end = w->lost_pending ? 0 : end;
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
	if (ts >= w->bell_due)
		ring_ask_bell(w, ts, w->head);
	err = ring_prepare(w, ts, tid, rec_asize, ret_pos);
	if (err) {
		w->lost_pending++;
		w->fast_end = 0;
		/* Visible at once, for readers of a producer that dies before the
		 * next packet switch; a drop is already the slow path. */
		ring_publish_counters(w);
		return err;
	}
	w->last_ts = ts;
	ring_set_fast_end(w, *ret_pos);
	return 0;
}

void evr_ring_writer_flush_locked(struct evr_ring_writer *w, uint64_t ts)
{
	uint64_t pos;

	/* A writer interrupted before its commit may have left the session since. */
	evr_ring_settle_locked(w);
	ring_absorb_async_losses(w);
	if (ts < w->last_ts)
		ts = w->last_ts;
	/* tid 0: no THREAD record; a LOST record carries no thread. */
	if (w->lost_pending && ring_prepare(w, ts, 0, 0, &pos) == 0) {
		w->last_ts = ts;
		ring_publish(w, pos);
	}
	ring_set_fast_end(w, w->head);
	ring_publish_counters(w);
}

void evr_ring_settle_locked(struct evr_ring_writer *w)
{
	/* Relaxed: written by this ring's writers only (or, wrongly, a consumer). */
	uint64_t pub = __atomic_load_n(&w->ctl->head, __ATOMIC_RELAXED);
	uint64_t h = w->head;
	uint64_t back = h - pub;

	if (EVR_LIKELY(pub == h))
		return;
	/*
	 * An interrupted append: one EVENT record, maybe after a THREAD record
	 * (<evring/ring-rseq.h>), inside the packet of head, after its header, and
	 * counted in it. Its writer writes it again.
	 */
	/* pub > h makes back wrap far above any record: rejected by the bound. */
	if (back >= EVR_REC_HDR_SIZE && back <= evr_align8(EVR_MAX_RECORD) + EVR_REC_THREAD_ASIZE &&
	    (pub & ~(uint64_t)w->packet_mask) == ((h - 1) & ~(uint64_t)w->packet_mask) &&
	    (pub & w->packet_mask) >= EVR_PACKET_HDR_SIZE && (uint32_t)w->tid_events > 0) {
		/* Relaxed: the bytes at pub are the interrupted writer's, or a
		 * consumer's scribble, which at worst costs a THREAD record. */
		uint64_t w0 = __atomic_load_n((uint64_t *)(void *)(w->data + (pub & w->ring_mask)),
					      __ATOMIC_RELAXED);

		__atomic_store_n(&w->head, pub, __ATOMIC_RELAXED);
		w->tid_events--;
		/* Its THREAD record is taken back too: no thread named in the packet. */
		if ((uint16_t)(w0 >> 16) == EVR_REC_THREAD)
			w->tid_events = (uint32_t)w->tid_events;
		return;
	}
	/* Not the writer's: say again what was published. */
	__atomic_store_n(&w->ctl->head, h, __ATOMIC_RELEASE);
}

#if EVR_HAVE_RSEQ
/*
 * ring_rseq_lock() - CS-lock: take @w's lock while running on @cpu, storing
 * @tid (not 0) in it, so that a writer that finds it held can tell a holder
 * that needs this CPU from itself.
 * Return: 0 taken, -EBUSY held, -EAGAIN restart (preempted, migrated, signal).
 */
static int ring_rseq_lock(struct evr_ring_writer *w, struct rseq *rs, uint32_t cpu, uint32_t tid)
{
	__asm__ goto(EVR_RSEQ_CS_DESC("3", "1f", "2f", "4f")
		 ".pushsection __rseq_failure, \"ax\"\n\t"
		 EVR_RSEQ_ABORT_SIG
		 "4:\n\t"
		 "jmp %l[restart]\n\t"
		 ".popsection\n\t"
		 EVR_RSEQ_ARM("3b")
		 "1:\n\t"
		 "cmpl %[cpu], " EVR_RSEQ_S(EVR_OFF_RS_CPU) "(%[rs])\n\t"
		 "jne 4b\n\t"
		 "cmpl $0, " EVR_RSEQ_S(EVR_OFF_W_LOCK) "(%[w])\n\t"
		 "jne %l[busy]\n\t"
		 "movl %[tid], " EVR_RSEQ_S(EVR_OFF_W_LOCK) "(%[w])\n\t"	/* commit */
		 "2:\n\t"
		 "movq $0, " EVR_RSEQ_S(EVR_OFF_RS_CS) "(%[rs])\n\t"
		 :
		 : [rs] "r"(rs), [cpu] "r"(cpu), [w] "r"(w), [tid] "r"(tid)
		 : "rax", "memory", "cc"
		 : restart, busy);
	return 0;
restart:
	return -EAGAIN;
busy:
	evr_rseq_clear_cs(rs);
	return -EBUSY;
}

/*
 * Discard mode: is the ring too full for @asize more bytes even if the gating
 * reader released everything it says it has? Read without the lock: head may be
 * stale, but only ever lower than the real one, so "full" is never wrong.
 */
static bool ring_surely_full(const struct evr_ring_writer *w, uint64_t asize)
{
	/* Relaxed: ordered by nothing, a stale head only makes "full" less likely. */
	uint64_t h = __atomic_load_n(&w->head, __ATOMIC_RELAXED);
	/* Pairs with the gating reader's store-release in evr_ring_reader_release(). */
	uint64_t t = __atomic_load_n(&w->ctl->tail, __ATOMIC_ACQUIRE);

	return w->mode == EVR_MODE_DISCARD && t <= h && h + asize - t > w->ring_mask + 1;
}

int evr_ring_rseq_write_slow(struct evr_ring_writer *w, struct rseq *rs, uint32_t cpu,
			     const struct evr_rseq_rec *r)
{
	const uint32_t tid = r->tid ? r->tid : 1;
	int ret;
	bool bell;

	/*
	 * A full ring sends every write here: count those drops without the lock,
	 * so that a holder preempted meanwhile does not turn the next writes of this
	 * CPU into "ring locked" drops as well. The next holder reports them in-band.
	 */
	if (ring_surely_full(w, EVR_REC_HDR_SIZE + r->nq * 8)) {
		evr_ring_count_lost(w, 1);
		return -ENOSPC;
	}
	for (int yields = 0;; yields++) {
		ret = ring_rseq_lock(w, rs, cpu, tid);
		if (ret != -EBUSY)
			break;
		/*
		 * Held by a slow path of this CPU. Another thread's, preempted
		 * there: it needs this CPU to finish, so give it the CPU a few
		 * times (a system call only in this case) and try again, on
		 * whatever CPU we then run. This thread's own, interrupted by the
		 * signal handler we run in: it cannot finish before we return. We
		 * may not write another CPU's ring either way; then drop.
		 */
		if (yields == EVR_RING_BUSY_YIELDS ||
		    atomic_load_explicit(&w->lock, memory_order_relaxed) == tid) {
			evr_ring_count_lost(w, 1);
			return -EBUSY;
		}
		sched_yield();
		if (evr_rseq_cpu(rs) != (int32_t)cpu)
			return -EAGAIN;		/* migrated: the caller takes that CPU's ring */
	}
	if (ret == -EAGAIN)
		return ret;
	evr_ring_settle_locked(w);
	ret = evr_ring_write_locked_flags(w, r->event_id, r->ts, r->tid, r->src, r->len, r->flags);
	bell = evr_ring_take_bell_locked(w);
	/* Pairs with the lock checks of both sections, plain x86 loads (acquire). */
	atomic_store_explicit(&w->lock, 0, memory_order_release);
	if (bell)
		evr_ring_doorbell(w);
	return ret;
}
#endif
