// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the ring writer and reader, driven directly on a real sealed
 * memfd session (no library sessions, no RCU). Payloads check themselves: each
 * carries its sequence number, its writer and a checksum over the rest, so a
 * torn or misplaced record cannot pass. Conservation is exact everywhere:
 * emitted == received + lost.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include "ring-fixture.h"

static uint32_t event_id_of(uint64_t seq)
{
	return (uint32_t)(seq * 2654435761u) | 1u;
}

/* Write one self-checking record with the lock held; returns write_locked's result. */
static int write_seq(struct evr_ring_writer *w, uint64_t seq, uint32_t tid, uint32_t len)
{
	uint8_t buf[EVR_MAX_PAYLOAD];

	pl_fill(buf, len, seq, tid);
	return evr_ring_write_locked(w, event_id_of(seq), seq, tid, buf, len);
}

/* Next record must be the EVENT written by write_seq(seq, tid, len). */
static void expect_event(struct evr_ring_reader *r, uint64_t seq, uint32_t tid, uint32_t len)
{
	uint8_t want[EVR_MAX_PAYLOAD];
	struct evr_record rec;

	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	if (rec.type != EVR_REC_EVENT)
		print_error("seq %llu: got record type %u (lost %llu)\n", (unsigned long long)seq,
			    rec.type, (unsigned long long)rec.lost);
	assert_int_equal(rec.type, EVR_REC_EVENT);
	assert_int_equal(rec.len, len);
	assert_int_equal(rec.tid, tid);
	assert_int_equal(rec.ring, r->index);
	assert_int_equal(rec.event_id, event_id_of(seq));
	assert_true(rec.ts == seq);
	pl_fill(want, len, seq, tid);
	assert_memory_equal(rec.payload, want, len);
}

static void expect_lost(struct evr_ring_reader *r, uint64_t count)
{
	struct evr_record rec;

	assert_int_equal(evr_ring_reader_next(r, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_LOST);
	assert_int_equal(rec.ring, r->index);
	assert_true(rec.lost == count);
}

static void expect_empty(struct evr_ring_reader *r)
{
	struct evr_record rec;

	assert_int_equal(evr_ring_reader_next(r, &rec), 0);
	assert_true(evr_ring_reader_empty(r));
}

/* ---- wrap, END padding and exactly filled packets ----------------------------------------- */

struct expected_rec {
	uint64_t seq;
	uint32_t tid, len;
};

static void test_ring_write_locked_wraps_with_end_padding_and_exact_fill(void **state)
{
	const uint32_t psize = PSIZE_MIN, pmask = PSIZE_MIN - 1;
	struct expected_rec queue[16];
	uint64_t rs = 0x1234567887654321ull;
	uint64_t n_end = 0, n_end8 = 0, n_exact = 0, seq = 0;
	struct evr_ring_reader *r;
	struct ring_fx f;
	uint32_t queued = 0, batch = 1;

	(void)state;
	fx_setup(&f, 1, psize, RING_MIN, EVR_MODE_DISCARD);
	r = reader_new(&f, 0, EVR_READER_GATING);

	/* Phases of 1000 records: fixed 48-byte payloads from one thread (64-byte
	 * records fill a packet exactly: 40 + 24 + 255 * 64 = 16384) alternate with
	 * random sizes and threads, which end packets with END records. */
	for (; seq < 120000; seq++) {
		bool fixed = (seq / 1000) % 2 == 0;
		uint32_t len = fixed ? 48 : (uint32_t)(rnd(&rs) % 701);
		uint32_t tid = fixed ? 1 : 1 + (uint32_t)(rnd(&rs) % 3);
		uint64_t h0 = f.w[0].head, h1;

		assert_int_equal(write_seq(&f.w[0], seq, tid, len), 0);
		h1 = f.w[0].head;
		assert_true(__atomic_load_n(&f.w[0].ctl->head, __ATOMIC_RELAXED) == h1);
		if ((h1 & pmask) == 0)
			n_exact++;
		if ((h0 & pmask) != 0 && (h1 - 1) / psize != h0 / psize) {
			/* The packet was closed at h0 by an END record padding to its end. */
			uint64_t w0;
			uint32_t pad = psize - (uint32_t)(h0 & pmask);

			memcpy(&w0, f.w[0].data + (h0 & f.w[0].ring_mask), 8);
			assert_int_equal((uint32_t)(w0 >> 16) & 0xff, EVR_REC_END);
			assert_int_equal((uint32_t)(w0 & 0xffff), pad);
			n_end++;
			if (pad == 8)
				n_end8++;
		}
		queue[queued++] = (struct expected_rec){seq, tid, len};
		if (queued == batch) {
			for (uint32_t i = 0; i < queued; i++)
				expect_event(r, queue[i].seq, queue[i].tid, queue[i].len);
			expect_empty(r);
			evr_ring_reader_release(r);
			queued = 0;
			batch = 1 + (uint32_t)(rnd(&rs) % 16);
		}
	}
	for (uint32_t i = 0; i < queued; i++)
		expect_event(r, queue[i].seq, queue[i].tid, queue[i].len);
	expect_empty(r);

	print_message("laps %llu, END-closed packets %llu (8-byte END %llu), exactly filled %llu\n",
		      (unsigned long long)(f.w[0].head / RING_MIN), (unsigned long long)n_end,
		      (unsigned long long)n_end8, (unsigned long long)n_exact);
	assert_true(f.w[0].head / RING_MIN >= 100);
	assert_true(n_end > 100);
	assert_true(n_end8 > 0);
	assert_true(n_exact > 100);
	assert_true(r->events == seq);
	assert_true(r->lost == 0);
	assert_true(r->corrupt == 0);
	free(r);
	fx_teardown(&f);
}

/* ---- every payload size ------------------------------------------------------------- */

static void round_trip_sizes(uint32_t mode, uint32_t flags)
{
	static const uint32_t big[] = {EVR_MAX_PAYLOAD - 8, EVR_MAX_PAYLOAD - 7,
				       EVR_MAX_PAYLOAD - 1, EVR_MAX_PAYLOAD};
	struct evr_ring_reader *r;
	struct ring_fx f;
	uint64_t seq = 0;

	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, mode);
	r = reader_new(&f, 0, flags);
	for (uint32_t len = 0; len <= 512; len++, seq++) {
		assert_int_equal(write_seq(&f.w[0], seq, 7, len), 0);
		expect_event(r, seq, 7, len);
		expect_empty(r);
		evr_ring_reader_release(r);
	}
	for (uint32_t len = 513; len < EVR_MAX_PAYLOAD; len += 61, seq++) {
		/* Alternate threads: maximal records also carry a THREAD record. */
		assert_int_equal(write_seq(&f.w[0], seq, 7 + (uint32_t)(seq & 1), len), 0);
		expect_event(r, seq, 7 + (uint32_t)(seq & 1), len);
		expect_empty(r);
		evr_ring_reader_release(r);
	}
	for (uint32_t i = 0; i < 4 * sizeof(big) / sizeof(big[0]); i++, seq++) {
		uint32_t len = big[i % 4];

		assert_int_equal(write_seq(&f.w[0], seq, 9 + (uint32_t)(seq & 1), len), 0);
		expect_event(r, seq, 9 + (uint32_t)(seq & 1), len);
		expect_empty(r);
		evr_ring_reader_release(r);
	}
	assert_true(r->events == seq);
	assert_true(r->lost == 0);
	assert_true(r->corrupt == 0);
	free(r);
	fx_teardown(&f);
}

static void test_ring_write_locked_every_payload_size_round_trips(void **state)
{
	(void)state;
	round_trip_sizes(EVR_MODE_DISCARD, EVR_READER_GATING);
	/* Passive readers copy the record out first: same bytes. */
	round_trip_sizes(EVR_MODE_OVERWRITE, 0);
}

/* ---- discard mode: exact LOST accounting ------------------------------------------- */

static void test_ring_write_locked_discard_counts_every_drop(void **state)
{
	struct evr_ring_writer *w;
	struct evr_ring_reader *r;
	struct ring_fx f;
	uint64_t seq = 0, emitted = 0, received = 0, dropped = 0, first;
	int ret;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	w = &f.w[0];
	r = reader_new(&f, 0, EVR_READER_GATING);

	/* A: fill the first lap exactly (4 packets of 40 + 24 + 255 * 64 bytes). */
	for (uint32_t i = 0; i < 4 * 255; i++, seq++, emitted++)
		assert_int_equal(write_seq(w, seq, 1, 48), 0);
	assert_true(w->head == RING_MIN);
	/* Full: every write is dropped and counted, whatever its size. */
	for (uint32_t i = 0; i < 9; i++, seq++, emitted++, dropped++)
		assert_int_equal(write_seq(w, seq, 1, i), -ENOSPC);
	/* Flushing a full ring cannot report in-band: the count is in ctl only. */
	evr_ring_writer_flush_locked(w, seq);
	assert_true(w->head == RING_MIN);
	assert_true(__atomic_load_n(&w->ctl->lost_total, __ATOMIC_RELAXED) == 9);
	assert_true(__atomic_load_n(&w->ctl->events_total, __ATOMIC_RELAXED) == 4 * 255);
	for (uint64_t s = 0; s < 4 * 255; s++, received++)
		expect_event(r, s, 1, 48);
	expect_empty(r);
	assert_true(r->lost == 0);
	evr_ring_reader_release(r);
	/* The next write reports the 9 in-band, just before itself; the largest
	 * record still fits with its packet header, LOST and THREAD records. */
	assert_int_equal(write_seq(w, seq, 2, EVR_MAX_PAYLOAD), 0);
	expect_lost(r, 9);
	expect_event(r, seq, 2, EVR_MAX_PAYLOAD);
	received++;
	seq++;
	emitted++;
	expect_empty(r);

	/* B: fill until the first -ENOSPC, drop some more, drain, write again. */
	first = seq;
	while ((ret = write_seq(w, seq, 1, 100)) == 0) {
		seq++;
		emitted++;
	}
	assert_int_equal(ret, -ENOSPC);
	assert_true(seq - first > 100);
	for (uint32_t i = 0; i < 37; i++) {
		seq++;
		emitted++;
		dropped++;
		assert_int_equal(write_seq(w, seq, 1, 100), -ENOSPC);
	}
	seq++;
	emitted++;
	dropped++; /* the first -ENOSPC */
	for (uint64_t s = first; s < seq - 38; s++, received++)
		expect_event(r, s, 1, 100);
	expect_empty(r);
	evr_ring_reader_release(r);
	assert_int_equal(write_seq(w, seq, 1, 100), 0);
	expect_lost(r, 38);
	expect_event(r, seq, 1, 100);
	received++;
	seq++;
	emitted++;
	expect_empty(r);
	evr_ring_reader_release(r);

	/* C: losses counted without the lock are reported by the next holder. */
	evr_ring_count_lost(w, 4);
	emitted += 4;
	dropped += 4;
	assert_int_equal(write_seq(w, seq, 1, 100), 0);
	expect_lost(r, 4);
	expect_event(r, seq, 1, 100);
	received++;
	seq++;
	emitted++;

	/* D: fill, drop 5, drain, flush: with room, the flush reports in-band. */
	first = seq;
	while (write_seq(w, seq, 3, 200) == 0) {
		seq++;
		emitted++;
	}
	for (uint32_t i = 0; i < 5; i++, seq++, emitted++, dropped++) {
		if (i)
			assert_int_equal(write_seq(w, seq, 3, 200), -ENOSPC);
	}
	for (uint64_t s = first; s < seq - 5; s++, received++)
		expect_event(r, s, 3, 200);
	expect_empty(r);
	evr_ring_reader_release(r);
	evr_ring_writer_flush_locked(w, seq);
	expect_lost(r, 5);
	expect_empty(r);

	assert_true(r->lost == dropped);
	assert_true(__atomic_load_n(&w->ctl->lost_total, __ATOMIC_RELAXED) == dropped);
	assert_true(__atomic_load_n(&w->ctl->events_total, __ATOMIC_RELAXED) == received);
	assert_true(r->events == received);
	assert_true(emitted == received + dropped);
	assert_true(r->corrupt == 0);
	free(r);
	fx_teardown(&f);
}

/* The multi-ring reader reports losses a full ring could not carry, once ended. */
/*
 * A producer killed before its next packet switch or flush: the drops it made
 * under the lock and without it (busy ring) are both visible in shared memory,
 * so a reader of the dead producer still counts them exactly.
 */
static void test_ring_ctl_lost_counts_unreported_drops_without_flush(void **state)
{
	struct evr_ring_writer *w;
	struct ring_fx f;
	uint64_t seq = 0;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	w = &f.w[0];
	for (uint32_t i = 0; i < 4 * 255; i++, seq++)
		assert_int_equal(write_seq(w, seq, 1, 48), 0);
	assert_true(evr_ring_ctl_lost(w->ctl) == 0);
	for (uint32_t i = 0; i < 5; i++, seq++)
		assert_int_equal(write_seq(w, seq, 1, 8), -ENOSPC);
	assert_true(evr_ring_ctl_lost(w->ctl) == 5);
	/* Ring busy: counted without the lock. */
	evr_ring_count_lost(w, 3);
	assert_true(evr_ring_ctl_lost(w->ctl) == 8);
	/* Another drop absorbs the 3 into lost_total: still 9, never 12. */
	assert_int_equal(write_seq(w, seq++, 1, 8), -ENOSPC);
	assert_true(__atomic_load_n(&w->ctl->lost_total, __ATOMIC_RELAXED) == 9);
	assert_true(evr_ring_ctl_lost(w->ctl) == 9);
	evr_ring_writer_flush_locked(w, seq);
	assert_true(evr_ring_ctl_lost(w->ctl) == 9);
	fx_teardown(&f);
}

static void test_reader_next_reports_final_losses_after_end(void **state)
{
	struct evr_reader_stats st;
	struct evr_record rec;
	struct evr_reader *rd;
	struct ring_fx f;
	uint64_t events = 0, lost = 0;

	(void)state;
	fx_setup(&f, 2, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	assert_int_equal(evr_reader_new(f.hdr, -1, EVR_READER_GATING, &rd), 0);
	/* Ring 0: exactly full, 9 drops that no flush can report in-band. */
	for (uint32_t i = 0; i < 4 * 255; i++)
		assert_int_equal(write_seq(&f.w[0], i, 1, 48), 0);
	for (uint32_t i = 0; i < 9; i++)
		assert_int_equal(write_seq(&f.w[0], 5000 + i, 1, 48), -ENOSPC);
	evr_ring_writer_flush_locked(&f.w[0], 6000);
	/* Ring 1: 10 events, then 3 losses that the flush reports in-band. */
	for (uint32_t i = 0; i < 10; i++)
		assert_int_equal(write_seq(&f.w[1], i, 2, 16), 0);
	evr_ring_count_lost(&f.w[1], 3);
	evr_ring_writer_flush_locked(&f.w[1], 6000);

	while (evr_reader_next(rd, &rec) > 0) {
		if (rec.type == EVR_REC_EVENT)
			events++;
		else
			lost += rec.lost;
	}
	assert_true(events == 4 * 255 + 10);
	assert_true(lost == 3);
	assert_false(evr_reader_ended(rd));

	/* Pairs with the load-acquire of ended in evr_reader_next(). */
	__atomic_store_n(&f.hdr->ended, 1, __ATOMIC_RELEASE);
	assert_int_equal(evr_reader_next(rd, &rec), 1);
	assert_int_equal(rec.type, EVR_REC_LOST);
	assert_int_equal(rec.ring, 0);
	assert_true(rec.lost == 9);
	assert_int_equal(evr_reader_next(rd, &rec), 0);
	assert_true(evr_reader_ended(rd));
	assert_int_equal(evr_reader_next(rd, &rec), 0);
	evr_reader_get_stats(rd, &st);
	assert_true(st.events == 4 * 255 + 10);
	assert_true(st.lost == 12);
	assert_true(st.corrupt == 0);
	evr_reader_free(rd);
	fx_teardown(&f);
}

/* ---- overwrite mode: a passive reader racing one writer ------------------------------ */

#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define OVERWRITE_EVENTS 2000000u
#define SHARED_EVENTS 150000u
#else
#define OVERWRITE_EVENTS 3000000u
#define SHARED_EVENTS 400000u
#endif

struct ow_ctx {
	struct ring_fx *f;
	struct evr_ring_reader *r;
	uint64_t n;
	atomic_bool done;
	struct thread_err err;
	/* reader results */
	uint64_t received, lost, last_seq, laps_forced;
};

static void *ow_writer(void *arg)
{
	struct ow_ctx *c = arg;
	uint8_t buf[64];

	for (uint64_t seq = 0; seq < c->n; seq++) {
		uint32_t len = PL_HDR + (uint32_t)(seq % 4) * 8;

		pl_fill(buf, len, seq, 1);
		if (evr_ring_try_write(&c->f->w[0], 1, seq, 1, buf, len) != 0) {
			thread_fail(&c->err, "overwrite write %llu failed",
				    (unsigned long long)seq);
			break;
		}
	}
	/* Pairs with the acquire load of done in ow_reader(). */
	atomic_store_explicit(&c->done, true, memory_order_release);
	return NULL;
}

static void *ow_reader(void *arg)
{
	struct ow_ctx *c = arg;
	struct evr_ring_reader *r = c->r;
	uint64_t pending_lost = 0, next_seq = 0;
	struct evr_record rec;
	bool draining = false;

	for (;;) {
		uint64_t seq, thread;

		if (evr_ring_reader_next(r, &rec) == 0) {
			if (draining)
				break;
			/* After the writer's last head is visible, one more pass. */
			draining = atomic_load_explicit(&c->done, memory_order_acquire);
			continue;
		}
		if (rec.type == EVR_REC_LOST) {
			if (rec.lost == 0) {
				thread_fail(&c->err, "LOST record of 0 events");
				break;
			}
			pending_lost += rec.lost;
			c->lost += rec.lost;
			continue;
		}
		if (rec.type != EVR_REC_EVENT || !pl_check(rec.payload, rec.len, &seq, &thread) ||
		    thread != 1 || rec.tid != 1 || rec.ts != seq) {
			thread_fail(&c->err, "torn or foreign record after seq %llu",
				    (unsigned long long)next_seq);
			break;
		}
		if (seq < next_seq) {
			thread_fail(&c->err, "seq %llu after %llu", (unsigned long long)seq,
				    (unsigned long long)next_seq - 1);
			break;
		}
		if (seq - next_seq != pending_lost) {
			thread_fail(&c->err, "gap of %llu before seq %llu but %llu reported lost",
				    (unsigned long long)(seq - next_seq), (unsigned long long)seq,
				    (unsigned long long)pending_lost);
			break;
		}
		pending_lost = 0;
		next_seq = seq + 1;
		c->received++;
		/* Now and then let the writer lap us for sure (wait for it, not a clock). */
		if (c->received % 100000 == 1000) {
			c->laps_forced++;
			while (!atomic_load_explicit(&c->done, memory_order_acquire) &&
			       __atomic_load_n(&r->ctl->head, __ATOMIC_ACQUIRE) <
				       r->pos + 2 * r->ring_size)
				sched_yield();
		}
	}
	if (pending_lost && !atomic_load(&c->err.failed))
		thread_fail(&c->err, "%llu lost reported after the last event",
			    (unsigned long long)pending_lost);
	c->last_seq = next_seq - 1;
	return NULL;
}

static void test_ring_reader_next_overwrite_passive_never_torn(void **state)
{
	struct ow_ctx c = {.n = OVERWRITE_EVENTS};
	pthread_t tw, tr;
	struct ring_fx f;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_OVERWRITE);
	c.f = &f;
	c.r = reader_new(&f, 0, 0); /* before any write: everything missed is lost */
	assert_int_equal(pthread_create(&tr, NULL, ow_reader, &c), 0);
	assert_int_equal(pthread_create(&tw, NULL, ow_writer, &c), 0);
	assert_int_equal(pthread_join(tw, NULL), 0);
	assert_int_equal(pthread_join(tr, NULL), 0);
	assert_no_thread_error(&c.err);
	print_message("emitted %llu received %llu lost %llu (forced laps %llu)\n",
		      (unsigned long long)c.n, (unsigned long long)c.received,
		      (unsigned long long)c.lost, (unsigned long long)c.laps_forced);
	assert_true(c.last_seq == c.n - 1);
	assert_true(c.received + c.lost == c.n);
	/* Lapped for sure: waited for the writer at the 1000th event, or it was done. */
	assert_true(c.lost > 0);
	assert_true(c.r->corrupt == 0);
	free(c.r);
	fx_teardown(&f);
}

/* ---- several writers sharing the rings, one gating reader ------------------------------ */

#define SH_WRITERS 3u
#define SH_RINGS 2u

struct sh_ctx {
	struct ring_fx *f;
	struct evr_ring_reader *r[SH_RINGS];
	uint64_t n; /* events per writer */
	atomic_uint writers_left;
	atomic_ullong drops; /* -ENOSPC or both rings busy */
	atomic_ullong both_busy;
	struct thread_err err;
	/* reader state */
	uint8_t *seen[SH_WRITERS]; /* bitmaps */
	uint64_t received[SH_WRITERS];
	int64_t last[SH_WRITERS][SH_RINGS]; /* per (thread, ring): -1 = none */
	uint64_t lost;
	uint64_t waits;
};

struct sh_writer {
	struct sh_ctx *c;
	uint32_t thread;
	uint64_t drops;
};

static void *sh_writer(void *arg)
{
	struct sh_writer *me = arg;
	struct sh_ctx *c = me->c;
	uint32_t first = me->thread % SH_RINGS, tid = me->thread + 1;
	uint8_t buf[48];

	for (uint64_t seq = 0; seq < c->n; seq++) {
		uint32_t len = PL_HDR + (uint32_t)(seq % 3) * 8;
		int ret;

		pl_fill(buf, len, seq, me->thread);
		ret = evr_ring_try_write(&c->f->w[first], 1, seq, tid, buf, len);
		if (ret == -EBUSY)
			ret = evr_ring_try_write(&c->f->w[first ^ 1], 1, seq, tid, buf, len);
		if (ret == -EBUSY) {
			evr_ring_count_lost(&c->f->w[first], 1);
			atomic_fetch_add(&c->both_busy, 1);
		}
		if (ret != 0) {
			me->drops++;
			atomic_fetch_add(&c->drops, 1);
		}
	}
	atomic_fetch_sub_explicit(&c->writers_left, 1, memory_order_release);
	return NULL;
}

/* One record from ring @i; false on a failed check. */
static bool sh_account(struct sh_ctx *c, uint32_t i, const struct evr_record *rec)
{
	uint64_t seq, thread;

	if (rec->type == EVR_REC_LOST) {
		c->lost += rec->lost;
		return true;
	}
	if (!pl_check(rec->payload, rec->len, &seq, &thread) || thread >= SH_WRITERS ||
	    seq >= c->n || rec->tid != thread + 1 || rec->ring != i) {
		thread_fail(&c->err, "bad record on ring %u", i);
		return false;
	}
	if ((int64_t)seq <= c->last[thread][i]) {
		thread_fail(&c->err, "thread %llu ring %u: seq %llu after %lld",
			    (unsigned long long)thread, i, (unsigned long long)seq,
			    (long long)c->last[thread][i]);
		return false;
	}
	if (c->seen[thread][seq / 8] & (1u << (seq % 8))) {
		thread_fail(&c->err, "thread %llu: seq %llu twice", (unsigned long long)thread,
			    (unsigned long long)seq);
		return false;
	}
	c->seen[thread][seq / 8] |= (uint8_t)(1u << (seq % 8));
	c->last[thread][i] = (int64_t)seq;
	c->received[thread]++;
	return true;
}

#define SH_WAIT_EVERY 20000u

static void *sh_reader(void *arg)
{
	struct sh_ctx *c = arg;
	uint64_t since_wait = SH_WAIT_EVERY, drops_seen = 0;
	bool draining = false;

	for (;;) {
		bool any = false;

		/* Make sure rings fill up: at first and now and then, wait for the next
		 * drop (or the end) before reading on. */
		if (since_wait >= SH_WAIT_EVERY) {
			since_wait = 0;
			c->waits++;
			while (atomic_load(&c->drops) == drops_seen &&
			       atomic_load_explicit(&c->writers_left, memory_order_acquire) != 0)
				sched_yield();
			drops_seen = atomic_load(&c->drops);
		}

		for (uint32_t i = 0; i < SH_RINGS; i++) {
			struct evr_record rec;

			for (int k = 0; k < 256 && evr_ring_reader_next(c->r[i], &rec) > 0; k++) {
				any = true;
				since_wait++;
				if (!sh_account(c, i, &rec))
					return NULL;
			}
			evr_ring_reader_release(c->r[i]);
		}
		if (!any) {
			if (draining)
				break;
			draining = atomic_load_explicit(&c->writers_left, memory_order_acquire) ==
				   0;
			continue;
		}
	}
	return NULL;
}

static void test_ring_try_write_shared_rings_account_exactly(void **state)
{
	struct sh_writer wr[SH_WRITERS];
	pthread_t tw[SH_WRITERS], tr;
	struct sh_ctx c = {.n = SHARED_EVENTS};
	uint64_t received = 0, missing = 0, lost_total = 0;
	struct ring_fx f;

	(void)state;
	fx_setup(&f, SH_RINGS, PSIZE_MIN, RING_MIN, EVR_MODE_DISCARD);
	c.f = &f;
	atomic_init(&c.writers_left, SH_WRITERS);
	for (uint32_t t = 0; t < SH_WRITERS; t++) {
		c.seen[t] = calloc(c.n / 8 + 1, 1);
		assert_non_null(c.seen[t]);
		for (uint32_t i = 0; i < SH_RINGS; i++)
			c.last[t][i] = -1;
	}
	for (uint32_t i = 0; i < SH_RINGS; i++)
		c.r[i] = reader_new(&f, i, EVR_READER_GATING);

	assert_int_equal(pthread_create(&tr, NULL, sh_reader, &c), 0);
	for (uint32_t t = 0; t < SH_WRITERS; t++) {
		wr[t] = (struct sh_writer){.c = &c, .thread = t};
		assert_int_equal(pthread_create(&tw[t], NULL, sh_writer, &wr[t]), 0);
	}
	for (uint32_t t = 0; t < SH_WRITERS; t++)
		assert_int_equal(pthread_join(tw[t], NULL), 0);
	assert_int_equal(pthread_join(tr, NULL), 0);
	assert_no_thread_error(&c.err);

	/* Writers joined, reader drained: no lock is held, and the LOST records the
	 * flush writes surely fit. Read them in this thread (the join orders it). */
	for (uint32_t i = 0; i < SH_RINGS; i++) {
		struct evr_record rec;

		evr_ring_writer_flush_locked(&f.w[i], c.n);
		while (evr_ring_reader_next(c.r[i], &rec) > 0)
			assert_true(sh_account(&c, i, &rec));
		assert_no_thread_error(&c.err);
		assert_true(c.r[i]->lost ==
			    __atomic_load_n(&f.w[i].ctl->lost_total, __ATOMIC_RELAXED));
		assert_true(c.r[i]->events ==
			    __atomic_load_n(&f.w[i].ctl->events_total, __ATOMIC_RELAXED));
		assert_true(c.r[i]->corrupt == 0);
		lost_total += c.r[i]->lost;
	}
	for (uint32_t t = 0; t < SH_WRITERS; t++) {
		received += c.received[t];
		missing += c.n - c.received[t];
	}
	print_message(
		"emitted %llu received %llu lost %llu (both rings busy %llu, reader waits %llu)\n",
		(unsigned long long)(SH_WRITERS * c.n), (unsigned long long)received,
		(unsigned long long)c.lost, (unsigned long long)atomic_load(&c.both_busy),
		(unsigned long long)c.waits);
	assert_true(lost_total == c.lost);
	assert_true(missing == c.lost);
	assert_true(c.lost == atomic_load(&c.drops));
	assert_true(SH_WRITERS * c.n == received + c.lost);
	assert_true(c.lost > 0);
	for (uint32_t t = 0; t < SH_WRITERS; t++) {
		assert_true(c.n - c.received[t] == wr[t].drops);
		free(c.seen[t]);
	}
	for (uint32_t i = 0; i < SH_RINGS; i++)
		free(c.r[i]);
	fx_teardown(&f);
}

/* ---- late passive reader ---------------------------------------------------------------- */

static void test_ring_reader_init_late_passive_reports_no_history(void **state)
{
	struct evr_ring_reader *r;
	struct evr_record rec;
	struct ring_fx f;
	uint64_t seq = 0, first = UINT64_MAX, got = 0;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_OVERWRITE);
	/* Ten laps before anyone looks. */
	while (f.w[0].head < 10 * RING_MIN)
		assert_int_equal(write_seq(&f.w[0], seq++, 1, 40), 0);
	r = reader_new(&f, 0, 0);
	while (evr_ring_reader_next(r, &rec) > 0) {
		uint64_t s = 0, t = 0;

		assert_int_equal(rec.type, EVR_REC_EVENT);
		assert_true(pl_check(rec.payload, rec.len, &s, &t));
		if (first == UINT64_MAX)
			first = s;
		assert_true(s == first + got);
		got++;
	}
	/* It saw the newest history, in order, up to the last write... */
	assert_true(got > 0);
	assert_true(first + got == seq);
	/* ...and everything after it, with nothing reported lost. */
	for (uint32_t i = 0; i < 1000; i++) {
		assert_int_equal(write_seq(&f.w[0], seq, 1, 40), 0);
		expect_event(r, seq, 1, 40);
		seq++;
	}
	expect_empty(r);
	assert_true(r->lost == 0);
	assert_true(r->corrupt == 0);
	free(r);

	/* Another late reader: the intact window, then new writes, nothing lost. */
	r = reader_new(&f, 0, 0);
	while (evr_ring_reader_next(r, &rec) > 0)
		assert_int_equal(rec.type, EVR_REC_EVENT);
	assert_int_equal(write_seq(&f.w[0], seq, 1, 40), 0);
	expect_event(r, seq, 1, 40);
	expect_empty(r);
	assert_true(r->lost == 0);
	free(r);
	fx_teardown(&f);
}

/*
 * A late passive reader that is lapped before it first reads: what was written
 * after it attached must come back as events or LOST records, exactly; history
 * from before it attached must not.
 */
/*
 * A consumer reading the session it started may create its reader only after
 * the writers lapped the ring (it reads lazily): with EVR_READER_FROM_START
 * every event since the session began is received or counted lost, none is
 * taken for history. (Without the flag, evr-stress found exactly that silent
 * loss in overwrite sessions.)
 */
static void test_ring_reader_init_from_start_counts_everything(void **state)
{
	struct evr_ring_reader *r;
	struct evr_record rec;
	struct ring_fx f;
	uint64_t seq = 0, next = 0, received = 0, lost = 0;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_OVERWRITE);
	while (f.w[0].head < 10 * RING_MIN + 100)
		assert_int_equal(write_seq(&f.w[0], seq++, 1, 40), 0);
	r = reader_new(&f, 0, EVR_READER_FROM_START);
	while (f.w[0].head < 12 * RING_MIN)
		assert_int_equal(write_seq(&f.w[0], seq++, 1, 40), 0);
	while (evr_ring_reader_next(r, &rec) > 0) {
		uint64_t s, t;

		if (rec.type == EVR_REC_LOST) {
			lost += rec.lost;
			next += rec.lost;
			continue;
		}
		assert_true(pl_check(rec.payload, rec.len, &s, &t));
		assert_true(s == next);
		next++;
		received++;
	}
	assert_true(received > 0 && lost > 0);
	assert_true(received + lost == seq);
	assert_true(r->corrupt == 0);
	free(r);
	fx_teardown(&f);
}

static void test_ring_reader_init_late_passive_counts_laps_after_attach(void **state)
{
	struct evr_ring_reader *r;
	struct evr_record rec;
	struct ring_fx f;
	uint64_t seq = 0, attach_seq, base = UINT64_MAX, received = 0, lost = 0;

	(void)state;
	fx_setup(&f, 1, PSIZE_MIN, RING_MIN, EVR_MODE_OVERWRITE);
	while (f.w[0].head < 10 * RING_MIN + 100)
		assert_int_equal(write_seq(&f.w[0], seq++, 1, 40), 0);
	attach_seq = seq;
	r = reader_new(&f, 0, 0);
	/* Ten more laps before the first read. */
	while (f.w[0].head < 20 * RING_MIN)
		assert_int_equal(write_seq(&f.w[0], seq++, 1, 40), 0);
	while (evr_ring_reader_next(r, &rec) > 0) {
		uint64_t s, t;

		if (rec.type == EVR_REC_LOST) {
			lost += rec.lost;
			continue;
		}
		assert_true(pl_check(rec.payload, rec.len, &s, &t));
		/* The baseline: the first event, less what was reported lost before it. */
		if (base == UINT64_MAX)
			base = s - lost;
		assert_true(s == base + received + lost);
		received++;
	}
	print_message("attached after %llu events, baseline %llu, then %llu received, %llu lost "
		      "of %llu\n",
		      (unsigned long long)attach_seq, (unsigned long long)base,
		      (unsigned long long)received, (unsigned long long)lost,
		      (unsigned long long)seq);
	assert_true(base != UINT64_MAX);
	/* Nothing written after the reader attached is unaccounted for... */
	assert_true(base <= attach_seq);
	assert_true(base + received + lost == seq);
	/* ...and the laps before it attached are not reported lost. */
	assert_true(base > 0);
	assert_true(r->corrupt == 0);
	free(r);
	fx_teardown(&f);
}

/* ---- the doorbell: paced, never forgotten ------------------------------------------------ */

struct bell_fx {
	int fd, efd;
	struct evr_shm_hdr *hdr;
	struct evr_ring_writer *w;
	uint64_t seq;
};

/* Write records at time @ts until the packet in progress closes (and the next opens). */
static void bell_close_packet(struct bell_fx *b, uint64_t ts)
{
	uint64_t packet = b->w->head / PSIZE_MIN;
	uint8_t buf[64];

	do {
		pl_fill(buf, 40, b->seq, 1);
		assert_int_equal(evr_ring_try_write(b->w, 1, ts, 1, buf, 40), 0);
		b->seq++;
	} while (b->w->head / PSIZE_MIN == packet);
}

/* Did the writer wake the reader since the last call? (It also clears waiting.) */
static bool bell_rang(struct bell_fx *b)
{
	uint64_t v;

	if (read(b->efd, &v, sizeof(v)) == (ssize_t)sizeof(v)) {
		assert_int_equal(__atomic_load_n(&b->hdr->waiting, __ATOMIC_RELAXED), 0);
		return true;
	}
	assert_int_equal(errno, EAGAIN);
	return false;
}

static void test_ring_try_write_doorbell_paced_never_forgotten(void **state)
{
	/* Nanosecond timestamps: the interval is EVR_RING_BELL_INTERVAL_US * 1000. */
	const uint64_t iv = EVR_RING_BELL_INTERVAL_US * 1000ull;
	struct evr_shm_geometry g = {
		.nr_rings = 1,
		.packet_size = PSIZE_MIN,
		.ring_size = 64 * PSIZE_MIN,
		.mode = EVR_MODE_OVERWRITE,
		.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1, .ticks_per_sec = 1000000000u},
	};
	struct bell_fx b = {0};
	uint8_t buf[64];
	int n;

	(void)state;
	assert_int_equal(evr_shm_session_create(&g, &b.fd, &b.hdr), 0);
	b.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	assert_true(b.efd >= 0);
	b.w = aligned_alloc(EVR_CACHELINE, sizeof(*b.w));
	assert_non_null(b.w);
	evr_ring_writer_init(b.w, b.hdr, 0, b.efd);

	/* No reader waiting: no system call, whatever closes. */
	bell_close_packet(&b, 1000);
	assert_false(bell_rang(&b));
	/* The first close after the interval wakes a waiting reader at once. */
	b.hdr->waiting = 1;
	bell_close_packet(&b, 1000 + iv);
	assert_true(bell_rang(&b));
	/* Closes within the interval owe a wake-up instead... */
	b.hdr->waiting = 1;
	bell_close_packet(&b, 2000 + iv);
	bell_close_packet(&b, 3000 + iv);
	assert_false(bell_rang(&b));
	pl_fill(buf, 40, b.seq, 1);
	assert_int_equal(evr_ring_try_write(b.w, 1, 2 * iv, 1, buf, 40), 0);
	b.seq++;
	assert_false(bell_rang(&b));
	/* ...paid by the first write once it is due, packet closed or not. */
	assert_int_equal(evr_ring_try_write(b.w, 1, 2 * iv + 1000, 1, buf, 40), 0);
	b.seq++;
	assert_true(bell_rang(&b));
	/* Within the interval still, a quarter of the ring written rings anyway. */
	b.hdr->waiting = 1;
	for (n = 1; n <= 20; n++) {
		bell_close_packet(&b, 2 * iv + 2000 + (uint64_t)n);
		if (bell_rang(&b))
			break;
	}
	/* 16 packets are a quarter of the ring; the last wake-up was mid-packet. */
	print_message("woken after %d packets of %u bytes within the interval\n", n, PSIZE_MIN);
	assert_true(n == 16 || n == 17);

	free(b.w);
	close(b.efd);
	evr_shm_session_unmap(b.hdr);
	close(b.fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_write_locked_wraps_with_end_padding_and_exact_fill),
		cmocka_unit_test(test_ring_write_locked_every_payload_size_round_trips),
		cmocka_unit_test(test_ring_write_locked_discard_counts_every_drop),
		cmocka_unit_test(test_ring_ctl_lost_counts_unreported_drops_without_flush),
		cmocka_unit_test(test_reader_next_reports_final_losses_after_end),
		cmocka_unit_test(test_ring_reader_next_overwrite_passive_never_torn),
		cmocka_unit_test(test_ring_try_write_shared_rings_account_exactly),
		cmocka_unit_test(test_ring_reader_init_late_passive_reports_no_history),
		cmocka_unit_test(test_ring_reader_init_late_passive_counts_laps_after_attach),
		cmocka_unit_test(test_ring_reader_init_from_start_counts_everything),
		cmocka_unit_test(test_ring_try_write_doorbell_paced_never_forgotten),
	};

	/* An optional argument selects cases by name pattern, e.g. '*overwrite*'. */
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
