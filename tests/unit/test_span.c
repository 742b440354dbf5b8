// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for raw spans (shm/span.c): discard mode hands space back on
 * done; overwrite mode resynchronizes when lapped and reports -ESTALE for a
 * span the writers reached while it was in use, with the loss exact either
 * way; final losses after the end; a concurrent writer (conservation:
 * written == events + lost); whole-packet spans counted by their headers;
 * hostile records for evr_span_walk(); and the readers' doorbell sleep.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/shm.h>

#include "../../shm/doorbell.h"

#define NR 2
#define PACKET 16384u

struct sess {
	struct evr_shm_hdr *h;
	int fd;
	uint64_t ts;
	struct evr_ring_writer w[NR];
};

static void sess_new(struct sess *s, uint32_t mode, uint64_t ring_size)
{
	struct evr_shm_geometry g = {
		.nr_rings = NR, .packet_size = PACKET, .ring_size = ring_size, .mode = mode,
		.meta_size = 4096, .clock = { .kind = EVR_CLOCK_MONOTONIC, .mult = 1 },
	};

	memset(s, 0, sizeof(*s));
	assert_int_equal(evr_shm_session_create(&g, &s->fd, &s->h), 0);
	for (uint32_t i = 0; i < NR; i++)
		evr_ring_writer_init(&s->w[i], s->h, i, -1);
}

static void sess_free(struct sess *s)
{
	evr_shm_session_unmap(s->h);
	close(s->fd);
}

/* One event of @len payload bytes (>= 8) carrying @seq in its first 8 bytes. */
static int emit(struct sess *s, uint32_t ring, uint64_t seq, uint32_t len)
{
	uint8_t payload[256] = { 0 };

	memcpy(payload, &seq, 8);
	return evr_ring_try_write(&s->w[ring], 5, ++s->ts, 100 + ring, payload, len);
}

/* What a producer does when it stops a session (no writer runs any more). */
static void sess_end(struct sess *s)
{
	for (uint32_t i = 0; i < NR; i++)
		evr_ring_writer_flush_locked(&s->w[i], ++s->ts);
	__atomic_store_n(&s->h->ended, 1, __ATOMIC_RELEASE);
}

/* The session the span reader under test reads (drain_flags() looks at its end). */
static struct evr_shm_hdr *cur_hdr;

struct tally {
	uint64_t events, lost, spans;
	uint64_t next_seq[NR];		/* discard mode: events come in order */
	bool check_order;
};

/* Check a span against its own counts, and the event order. */
static void tally_span(struct tally *t, const struct evr_shm_span *sp)
{
	const uint8_t *d = sp->data;
	uint64_t ev, lost;
	uint32_t p = 0;

	assert_int_equal(evr_span_walk(sp->data, sp->len, sp->pos, &ev, &lost), 0);
	assert_int_equal(ev, sp->events);
	assert_true(lost <= sp->lost);	/* plus a lapped reader's skip, from the header */
	assert_true(sp->len > 0 && sp->pos / PACKET == (sp->pos + sp->len - 1) / PACKET);
	if (sp->pos % PACKET == 0)
		p = 40;
	while (t->check_order && p < sp->len) {
		struct evr_rec_hdr h;
		uint64_t seq;

		memcpy(&h, d + p, sizeof(h));
		if (h.type == EVR_REC_END)
			break;
		if (h.type == EVR_REC_EVENT) {
			memcpy(&seq, d + p + 16, 8);
			assert_int_equal(seq, t->next_seq[sp->ring]);
			t->next_seq[sp->ring]++;
		}
		p += (uint32_t)evr_align8(h.size);
	}
	t->events += sp->events;
	t->lost += sp->lost;
	t->spans++;
}

/* Consume every span there is now (evr_span_reader_get() @flags); returns how many. */
static uint64_t drain_flags(struct evr_span_reader *sr, struct tally *t, uint32_t flags)
{
	struct evr_shm_span sp;
	uint64_t n = 0;
	int ret;

	while ((ret = evr_span_reader_get(sr, flags, &sp)) == 1) {
		/* Until the end, whole-packet spans end where their packet does. */
		if (flags & EVR_SPAN_WHOLE && !__atomic_load_n(&cur_hdr->ended, __ATOMIC_ACQUIRE))
			assert_int_equal((sp.pos + sp.len) % PACKET, 0);
		tally_span(t, &sp);
		assert_int_equal(evr_span_reader_done(sr, &sp), 0);
		n++;
	}
	assert_int_equal(ret, 0);
	return n;
}

/* Consume every span there is now; returns how many. */
static uint64_t drain(struct evr_span_reader *sr, struct tally *t)
{
	struct evr_shm_span sp;
	uint64_t n = 0;
	int ret;

	while ((ret = evr_span_reader_next(sr, &sp)) == 1) {
		tally_span(t, &sp);
		assert_int_equal(evr_span_reader_done(sr, &sp), 0);
		n++;
	}
	assert_int_equal(ret, 0);
	return n;
}

static void test_span_discard_in_order(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = true };
	struct evr_shm_span sp;
	uint64_t lost;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	assert_int_equal(evr_span_reader_next(sr, &sp), 0);
	for (uint64_t i = 0; i < 600; i++)
		assert_int_equal(emit(&s, 0, i, 40), 0);
	for (uint64_t i = 0; i < 300; i++)
		assert_int_equal(emit(&s, 1, i, 8 + (uint32_t)(i % 100)), 0);
	/* One span out at a time. */
	assert_int_equal(evr_span_reader_next(sr, &sp), 1);
	assert_int_equal(sp.pos, 0);
	assert_int_equal(evr_span_reader_next(sr, &sp), -EBUSY);
	{
		struct evr_shm_span other = sp;

		other.pos += 8;
		assert_int_equal(evr_span_reader_done(sr, &other), -EINVAL);
	}
	tally_span(&t, &sp);
	assert_int_equal(evr_span_reader_done(sr, &sp), 0);
	drain(sr, &t);
	assert_int_equal(t.events, 900);
	assert_int_equal(t.lost, 0);
	assert_true(t.spans >= 4);	/* 600 * 56 bytes span three packets of ring 0 */
	assert_false(evr_span_reader_drained(sr));
	assert_int_equal(evr_span_reader_final_lost(sr, 0, &lost), -EAGAIN);
	/* Released: the writers may fill the ring again. */
	for (uint64_t i = 600; i < 1600; i++) {
		assert_int_equal(emit(&s, 0, i, 40), 0);
		if (i % 200 == 0)
			drain(sr, &t);
	}
	sess_end(&s);
	drain(sr, &t);
	assert_true(evr_span_reader_drained(sr));
	assert_int_equal(t.events, 1900);
	assert_int_equal(evr_span_reader_final_lost(sr, 0, &lost), 0);
	assert_int_equal(lost, 0);
	assert_int_equal(evr_span_reader_final_lost(sr, NR, &lost), -EINVAL);
	assert_int_equal(evr_span_reader_corrupt(sr), 0);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/* A full ring drops and counts; the loss comes back in-band or as final loss. */
static void test_span_discard_loss_exact(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	uint64_t written = 0, dropped = 0, final0 = 0, final1 = 0;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	for (uint64_t i = 0; i < 3000; i++) {
		int ret = emit(&s, 0, i, 100);

		assert_true(ret == 0 || ret == -ENOSPC);
		written += ret == 0;
		dropped += ret == -ENOSPC;
	}
	assert_true(dropped > 0);
	drain(sr, &t);
	assert_int_equal(t.events, written);
	/* The next event that fits is preceded by a LOST record. */
	assert_int_equal(emit(&s, 0, 0, 100), 0);
	written++;
	drain(sr, &t);
	assert_int_equal(t.lost, dropped);
	/* Fill again and end with the ring full: the final loss is not in-band. */
	for (uint64_t i = 0; i < 3000; i++) {
		int ret = emit(&s, 0, i, 100);

		written += ret == 0;
		dropped += ret == -ENOSPC;
	}
	sess_end(&s);
	drain(sr, &t);
	assert_true(evr_span_reader_drained(sr));
	assert_int_equal(evr_span_reader_final_lost(sr, 0, &final0), 0);
	assert_int_equal(evr_span_reader_final_lost(sr, 1, &final1), 0);
	assert_int_equal(final1, 0);
	assert_int_equal(t.events, written);
	assert_int_equal(t.lost + final0, dropped);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/* A reader that starts after the writers lapped the ring: every event is
 * either in a span or counted lost, exactly. */
static void test_span_overwrite_lapped(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_OVERWRITE, 4 * PACKET);
	for (uint64_t i = 0; i < 10000; i++)
		assert_int_equal(emit(&s, 0, i, 64), 0);
	assert_int_equal(evr_span_reader_new(s.h, 0, &sr), 0);
	drain(sr, &t);
	assert_true(t.lost > 0 && t.events > 0);
	sess_end(&s);
	drain(sr, &t);
	assert_true(evr_span_reader_drained(sr));
	assert_int_equal(t.events + t.lost, 10000);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/* The writers reach a span while it is in use: -ESTALE, then exact loss. */
static void test_span_overwrite_stale(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	struct evr_shm_span sp;
	uint64_t total = 0;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_OVERWRITE, 4 * PACKET);
	assert_int_equal(evr_span_reader_new(s.h, 0, &sr), 0);
	for (; total < 100; total++)
		assert_int_equal(emit(&s, 0, total, 64), 0);
	assert_int_equal(evr_span_reader_next(sr, &sp), 1);
	assert_int_equal(sp.pos, 0);
	assert_int_equal(sp.events, 100);
	/* Two laps while the recorder "writes the span to its file". */
	for (; total < 2100; total++)
		assert_int_equal(emit(&s, 0, total, 64), 0);
	assert_int_equal(evr_span_reader_done(sr, &sp), -ESTALE);
	/* A span taken and finished before the writers come back is intact. */
	assert_int_equal(evr_span_reader_next(sr, &sp), 1);
	tally_span(&t, &sp);
	assert_int_equal(evr_span_reader_done(sr, &sp), 0);
	assert_true(t.lost >= 100);	/* the stale span's events are among them */
	drain(sr, &t);
	for (; total < 2500; total++)
		assert_int_equal(emit(&s, 0, total, 64), 0);
	sess_end(&s);
	drain(sr, &t);
	assert_int_equal(t.events + t.lost, total);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/* A corrupt packet header is skipped and counted, not trusted. */
static void test_span_corrupt_packet(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	struct sess s;
	uint8_t *ring0;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	for (uint64_t i = 0; i < 400; i++)	/* two packets and a bit */
		assert_int_equal(emit(&s, 0, i, 100), 0);
	ring0 = (uint8_t *)s.h + s.h->ring_data_off;
	ring0[PACKET] ^= 0xff;	/* the second packet's magic */
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	drain(sr, &t);
	assert_int_equal(evr_span_reader_corrupt(sr), 1);
	assert_true(t.events > 0 && t.events < 400);
	evr_span_reader_free(sr);
	sess_free(&s);
}

struct race {
	struct sess *s;
	uint64_t attempts;
	_Atomic int done;
};

static void *race_writer(void *arg)
{
	struct race *r = arg;

	for (uint64_t i = 0; i < r->attempts; i++)
		(void)emit(r->s, (uint32_t)(i % NR), i, 8 + (uint32_t)(i % 64));
	atomic_store_explicit(&r->done, 1, memory_order_release);
	return NULL;
}

/* A writer thread and a span reader: written == events + lost, exactly. */
static void test_span_concurrent_conservation(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	struct race r;
	struct sess s;
	pthread_t th;
	uint64_t fl;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	r.s = &s;
	r.attempts = 200000;
	atomic_init(&r.done, 0);
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	assert_int_equal(pthread_create(&th, NULL, race_writer, &r), 0);
	while (!atomic_load_explicit(&r.done, memory_order_acquire)) {
		if (drain(sr, &t) == 0)
			sched_yield();
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	sess_end(&s);
	drain(sr, &t);
	assert_true(evr_span_reader_drained(sr));
	for (uint32_t i = 0; i < NR; i++) {
		assert_int_equal(evr_span_reader_final_lost(sr, i, &fl), 0);
		t.lost += fl;
	}
	assert_int_equal(t.events + t.lost, r.attempts);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/*
 * The sleep of both readers (evr_span_reader_wait_fds(), evr_reader_wait_fds()):
 * woken by an extra fd with its revents set, by the doorbell whose counter is
 * drained, a timeout otherwise; too many extra fds refused.
 */
static void test_span_wait_fds(void **state)
{
	struct evr_span_reader *sr;
	struct evr_reader *rd;
	struct pollfd extra[9];
	int pfd[2], bell;
	uint64_t one = 1, v;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(bell >= 0);
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	assert_int_equal(evr_reader_new(s.h, bell, 0, &rd), 0);
	for (int round = 0; round < 2; round++) {
		extra[0] = (struct pollfd){ .fd = pfd[0], .events = POLLIN, .revents = POLLERR };
		/* Nothing ready: a timeout, revents cleared. */
		if (round == 0)
			assert_int_equal(evr_span_reader_wait_fds(sr, bell, extra, 1, 0), 0);
		else
			assert_int_equal(evr_reader_wait_fds(rd, extra, 1, 0), 0);
		assert_int_equal(extra[0].revents, 0);
		/* The extra fd. */
		assert_int_equal(write(pfd[1], "x", 1), 1);
		if (round == 0)
			assert_int_equal(evr_span_reader_wait_fds(sr, bell, extra, 1, -1), 1);
		else
			assert_int_equal(evr_reader_wait_fds(rd, extra, 1, -1), 1);
		assert_true(extra[0].revents & POLLIN);
		assert_int_equal(read(pfd[0], &v, 1), 1);
		/* The doorbell, then its counter is empty again. */
		assert_int_equal(write(bell, &one, sizeof(one)), (ssize_t)sizeof(one));
		if (round == 0)
			assert_int_equal(evr_span_reader_wait_fds(sr, bell, extra, 1, -1), 1);
		else
			assert_int_equal(evr_reader_wait_fds(rd, extra, 1, -1), 1);
		assert_int_equal(extra[0].revents, 0);
		assert_int_equal(read(bell, &v, sizeof(v)), -1);
		assert_int_equal(errno, EAGAIN);
	}
	assert_int_equal(evr_span_reader_wait_fds(sr, bell, extra, 9, 0), -EINVAL);
	assert_int_equal(evr_reader_wait_fds(rd, extra, 9, 0), -EINVAL);
	evr_reader_free(rd);
	evr_span_reader_free(sr);
	close(pfd[0]);
	close(pfd[1]);
	close(bell);
	sess_free(&s);
}

/*
 * The pacing rule (evr_pace_ns()): as often as the writers would ring (a
 * packet, at most once per EVR_RING_BELL_INTERVAL_US), never later than an
 * eighth of the ring, at least EVR_PACE_MIN_NS; the doorbell (0) for nothing
 * consumed, no time, or a rate slower than an eighth of a ring in
 * EVR_PACE_MAX_NS; no overflow with a large ring and a long time.
 */
static void test_span_pace_rule(void **state)
{
	const uint64_t ring = 8u << 20;	/* an eighth: 1 MiB */
	const uint32_t packet = 64u << 10;
	const uint64_t bell = EVR_RING_BELL_INTERVAL_US * 1000ull;

	(void)state;
	assert_true(evr_pace_ns(ring, packet, 0, 1000000) == 0);
	assert_true(evr_pace_ns(ring, packet, 1u << 20, 0) == 0);
	/* 1 MiB in 2 ms: a packet takes 125 us, less than the bell's interval. */
	assert_true(evr_pace_ns(ring, packet, 1u << 20, 2000000) == bell);
	/* 1 MiB in 40 ms: a packet in 2.5 ms. */
	assert_true(evr_pace_ns(ring, packet, 1u << 20, 40000000) == 2500000);
	/* 4 MiB in 2 ms: an eighth comes in half a millisecond, before the bell's interval. */
	assert_true(evr_pace_ns(ring, packet, 4u << 20, 2000000) == 500000);
	/* Faster than the floor: the floor. */
	assert_true(evr_pace_ns(ring, packet, 1u << 30, 1000) == EVR_PACE_MIN_NS);
	/* An eighth in exactly EVR_PACE_MAX_NS: still paced, a packet's time; a little
	 * slower: the doorbell. */
	assert_true(evr_pace_ns(ring, packet, 1u << 20, EVR_PACE_MAX_NS) == EVR_PACE_MAX_NS / 16);
	assert_true(evr_pace_ns(ring, packet, (1u << 20) - 4096, EVR_PACE_MAX_NS) == 0);
	/* A ring of two packets: an eighth before the packet. */
	assert_true(evr_pace_ns(2 * packet, packet, 1u << 20, 40000000) == 625000);
	/* 1 GiB rings, an hour: no overflow, and slow. */
	assert_true(evr_pace_ns(1ull << 30, packet, 1, 3600ull * 1000000000u) == 0);
	assert_true(evr_pace_ns(1ull << 30, packet, 1ull << 40, 3600ull * 1000000000u) == 0);
	assert_true(evr_pace_ns(1ull << 40, packet, 1ull << 40, 1000000) == 125000);

	/* A reader that gathers batches: a sixteenth of the ring at the rate measured,
	 * whatever the packet; the same floor and the same limit to the doorbell. */
	assert_true(evr_pace_batch_ns(ring, 0, 1000000) == 0);
	assert_true(evr_pace_batch_ns(ring, 1u << 20, 0) == 0);
	/* 1 MiB in 2 ms: a sixteenth (512 KiB) in 1 ms. */
	assert_true(evr_pace_batch_ns(ring, 1u << 20, 2000000) == 1000000);
	/* 1 MiB in 40 ms: 20 ms, where a packet's time would be 2.5 ms. */
	assert_true(evr_pace_batch_ns(ring, 1u << 20, 40000000) == 20000000);
	assert_true(evr_pace_batch_ns(ring, 1u << 30, 1000) == EVR_PACE_MIN_NS);
	assert_true(evr_pace_batch_ns(ring, 1u << 20, EVR_PACE_MAX_NS) == EVR_PACE_MAX_NS / 2);
	assert_true(evr_pace_batch_ns(ring, (1u << 20) - 4096, EVR_PACE_MAX_NS) == 0);
	assert_true(evr_pace_batch_ns(1ull << 30, 1ull << 40, 3600ull * 1000000000u) == 0);
	assert_true(evr_pace_batch_ns(1ull << 40, 1ull << 40, 1000000) == 62500);
}

struct paced {
	struct sess *s;
	uint64_t attempts;
	uint32_t bursts;
};

/*
 * Bursts of eight packets' worth of events into ring 0, each after the reader
 * has taken every whole packet and armed the doorbell (a paced reader must
 * arm it again once the stream stops, or this waits for ever).
 */
static void *paced_writer(void *arg)
{
	struct paced *p = arg;
	uint64_t seq = 0;

	for (uint32_t b = 0; b < p->bursts; b++) {
		for (;;) {
			uint64_t head = __atomic_load_n(&p->s->w[0].ctl->head, __ATOMIC_ACQUIRE);
			uint64_t tail = __atomic_load_n(&p->s->w[0].ctl->tail, __ATOMIC_ACQUIRE);

			if (tail >= (head & ~(uint64_t)(PACKET - 1)) &&
			    __atomic_load_n(&p->s->h->waiting, __ATOMIC_ACQUIRE))
				break;
			sched_yield();
		}
		/* 216-byte records: 75 a packet, a little over 8 packets. */
		for (uint32_t i = 0; i < 610; i++, seq++) {
			(void)emit(p->s, 0, seq, 200);
			p->attempts++;
		}
	}
	return NULL;
}

/*
 * Both readers, sleeping in their wait with no timeout, keep up with bursts of
 * packets: paced while one lasts, woken by the doorbell after each pause;
 * every event is accounted for, and the span reader's come in order. The span
 * reader twice: as it is, and in hold mode handing its spans back after each
 * drain, as a direct-I/O recorder does after each batch (paced by a sixteenth
 * of a ring then, evr_pace_batch_ns()).
 */
static void test_span_paced_wait_keeps_up_and_wakes_again(void **state)
{
	(void)state;
	for (int mode = 0; mode <= 2; mode++) {
		const bool records = mode == 1, hold = mode == 2;
		struct evr_span_reader *sr = NULL;
		struct tally t = { .check_order = true };
		struct paced p = { .bursts = 20 };
		struct evr_reader *rd = NULL;
		const uint64_t want = 20 * 610;
		struct sess s;
		pthread_t th;
		int bell;

		bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		assert_true(bell >= 0);
		sess_new(&s, EVR_MODE_DISCARD, 16 * PACKET);
		for (uint32_t i = 0; i < NR; i++)
			evr_ring_writer_init(&s.w[i], s.h, i, bell);
		cur_hdr = s.h;
		p.s = &s;
		if (records)
			assert_int_equal(evr_reader_new(s.h, bell, EVR_READER_GATING, &rd), 0);
		else
			assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
		if (hold)
			evr_span_reader_hold(sr, true);
		assert_int_equal(pthread_create(&th, NULL, paced_writer, &p), 0);
		/* The last packet of the last burst stays open until the end. */
		while (t.events + t.lost + 75 < want) {
			uint64_t got = 0;

			if (records) {
				struct evr_record rec;

				while (evr_reader_next(rd, &rec) > 0) {
					t.events += rec.type == EVR_REC_EVENT;
					t.lost += rec.type == EVR_REC_LOST ? rec.lost : 0;
					got++;
				}
				if (!got && t.events + t.lost + 75 < want)
					assert_true(evr_reader_wait_fds(rd, NULL, 0, -1) >= 0);
			} else if (drain_flags(sr, &t, EVR_SPAN_WHOLE) == 0) {
				assert_true(evr_span_reader_wait_fds(sr, bell, NULL, 0, -1) >= 0);
			} else if (hold) {
				evr_span_reader_release(sr);
			}
		}
		assert_int_equal(pthread_join(th, NULL), 0);
		sess_end(&s);
		if (records) {
			struct evr_record rec;

			while (evr_reader_next(rd, &rec) > 0) {
				t.events += rec.type == EVR_REC_EVENT;
				t.lost += rec.type == EVR_REC_LOST ? rec.lost : 0;
			}
			assert_true(evr_reader_ended(rd));
			evr_reader_free(rd);
		} else {
			struct evr_span_wait_stats st;

			drain_flags(sr, &t, 0);
			assert_true(evr_span_reader_drained(sr));
			evr_span_reader_wait_stats(sr, &st);
			/* Each pause ended with the doorbell armed: the writer waited for it. */
			assert_true(st.doorbell >= 19);
			/* And within the bursts the reader slept paced, not on the doorbell:
			 * in hold mode too, where it once armed the doorbell after every
			 * packet (24-29 doorbell waits and no paced sleep here then; 20-100
			 * paced sleeps now, sanitizer builds included). */
			assert_true(st.paced > 0);
			print_message("span reader%s: %" PRIu64 " doorbell and %" PRIu64
				      " paced sleeps\n", hold ? " (hold)" : "", st.doorbell, st.paced);
			evr_span_reader_free(sr);
		}
		assert_int_equal(t.events + t.lost, p.attempts);
		print_message("%s reader: %" PRIu64 " events, %" PRIu64 " lost\n",
			      records ? "record" : hold ? "span (hold)" : "span", t.events, t.lost);
		sess_free(&s);
		close(bell);
	}
}

/*
 * EVR_SPAN_WHOLE: only rests of packets whose successor has begun, counted by
 * the two headers (tally_span() checks the counts against a walk); the packet
 * still open comes out without the flag, or once the session ended.
 */
static void test_span_whole_packets(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = true };
	struct evr_shm_span sp;
	uint64_t seq = 0;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 8 * PACKET);
	cur_hdr = s.h;
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	/* 40-byte payloads: 56 bytes a record, 291 records fill a 16 KiB packet. */
	for (; seq < 700; seq++)
		assert_int_equal(emit(&s, 0, seq, 40), 0);
	assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 1);
	assert_true(sp.pos == 0 && sp.len == PACKET);
	tally_span(&t, &sp);
	assert_int_equal(evr_span_reader_done(sr, &sp), 0);
	assert_int_equal(drain_flags(sr, &t, EVR_SPAN_WHOLE), 1);	/* the second packet */
	assert_int_equal(t.events, 2 * 291);
	assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 0);	/* the third is open */
	assert_int_equal(evr_span_reader_get(sr, 7, &sp), -EINVAL);
	/* A flush takes the open packet's records so far... */
	assert_int_equal(drain_flags(sr, &t, 0), 1);
	assert_int_equal(t.events, 700);
	/* ...and the rest of it comes whole once the fourth packet begins. */
	for (; seq < 1000; seq++)
		assert_int_equal(emit(&s, 0, seq, 40), 0);
	assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 1);
	assert_true(sp.pos % PACKET != 0 && (sp.pos + sp.len) % PACKET == 0);
	tally_span(&t, &sp);
	assert_int_equal(evr_span_reader_done(sr, &sp), 0);
	assert_int_equal(t.events, 3 * 291);
	assert_int_equal(drain_flags(sr, &t, EVR_SPAN_WHOLE), 0);
	/* At the end, whatever is left comes out, whole-packet callers included. */
	sess_end(&s);
	drain_flags(sr, &t, EVR_SPAN_WHOLE);
	assert_true(evr_span_reader_drained(sr));
	assert_int_equal(t.events, 1000);
	assert_int_equal(t.lost, 0);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/*
 * Hold mode (a recorder batching direct I/O): done spans move the reader on but
 * keep their space until released, several per ring; the writers see the ring
 * as full meanwhile and count what does not fit; release hands it all back.
 */
static void test_span_hold(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = true };
	struct evr_shm_span sp;
	uint64_t seq = 0, dropped = 0;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	cur_hdr = s.h;
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	evr_span_reader_hold(sr, true);
	for (; seq < 700; seq++)
		assert_int_equal(emit(&s, 0, seq, 40), 0);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 1);
		assert_true(sp.pos == (uint64_t)i * PACKET && sp.len == PACKET);
		tally_span(&t, &sp);
		assert_int_equal(evr_span_reader_done(sr, &sp), 0);
		/* Nothing handed back yet. */
		assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 0);
	}
	assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 0);
	/* The writer fills the ring: four packets, none of them free. */
	for (; seq < 2000; seq++)
		dropped += emit(&s, 0, seq, 40) != 0;
	assert_true(dropped > 0);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 0);
	evr_span_reader_release(sr);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	/* Released twice: nothing more to give. */
	evr_span_reader_release(sr);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	/* The rest, held again, then turning hold off hands it back. */
	sess_end(&s);
	drain_flags(sr, &t, 0);
	assert_true(evr_span_reader_drained(sr));
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	evr_span_reader_hold(sr, false);
	assert_true(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE) ==
		    __atomic_load_n(&s.w[0].ctl->head, __ATOMIC_ACQUIRE));
	/* Every event is accounted: read, or lost and reported. */
	{
		uint64_t fl = 0;

		assert_int_equal(evr_span_reader_final_lost(sr, 0, &fl), 0);
		assert_true(t.lost + fl == dropped);
		assert_true(t.events + t.lost + fl == 2000);
	}
	evr_span_reader_free(sr);
	sess_free(&s);
}

/*
 * Per-ring release (a recorder with several writes in flight): each ring's space
 * goes back up to the position given, never past where the reader stands, never
 * back; the other rings keep theirs.
 */
static void test_span_release_to(void **state)
{
	struct evr_span_reader *sr;
	struct evr_shm_span sp;
	uint64_t first = 0;
	struct sess s;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	cur_hdr = s.h;
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	evr_span_reader_hold(sr, true);
	for (uint64_t seq = 0; seq < 700; seq++) {
		assert_int_equal(emit(&s, 0, seq, 40), 0);
		assert_int_equal(emit(&s, 1, seq, 40), 0);
	}
	/* Two whole packets of each ring, taken and done, all held. */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(evr_span_reader_get(sr, EVR_SPAN_WHOLE, &sp), 1);
		assert_int_equal(evr_span_reader_done(sr, &sp), 0);
		if (i == 0)
			first = evr_span_reader_pos(sr, sp.ring);
	}
	assert_int_equal(first, PACKET);
	assert_int_equal(evr_span_reader_pos(sr, 0), 2 * PACKET);
	assert_int_equal(evr_span_reader_pos(sr, 1), 2 * PACKET);
	assert_int_equal(evr_span_reader_pos(sr, NR), 0);
	/* Ring 0 up to its first packet: ring 1 keeps all it holds. */
	evr_span_reader_release_to(sr, 0, first);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), PACKET);
	assert_int_equal(__atomic_load_n(&s.w[1].ctl->tail, __ATOMIC_ACQUIRE), 0);
	/* Never back. */
	evr_span_reader_release_to(sr, 0, 0);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), PACKET);
	/* Never past what was done: clamped to where the reader stands. */
	evr_span_reader_release_to(sr, 1, 100 * PACKET);
	assert_int_equal(__atomic_load_n(&s.w[1].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	/* A ring that does not exist: nothing. */
	evr_span_reader_release_to(sr, NR, PACKET);
	/* The rest of ring 0 with the release of everything. */
	evr_span_reader_release(sr);
	assert_int_equal(__atomic_load_n(&s.w[0].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	assert_int_equal(__atomic_load_n(&s.w[1].ctl->tail, __ATOMIC_ACQUIRE), 2 * PACKET);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/*
 * A next header that does not add up (a hostile producer, a bit flip): the
 * packet is walked instead, and the counts are the records' own.
 */
static void test_span_whole_bad_next_header(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = true };
	struct evr_packet_hdr ph;
	struct sess s;
	uint8_t *ring0;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 8 * PACKET);
	cur_hdr = s.h;
	for (uint64_t i = 0; i < 700; i++)
		assert_int_equal(emit(&s, 0, i, 40), 0);
	ring0 = (uint8_t *)s.h + s.h->ring_data_off;
	/* The second packet's header claims more events than the first can hold. */
	memcpy(&ph, ring0 + PACKET, sizeof(ph));
	ph.events_before += 100000;
	memcpy(ring0 + PACKET, &ph, sizeof(ph));
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	/* The first packet: walked (291 records), its END ends it. */
	assert_int_equal(drain_flags(sr, &t, EVR_SPAN_WHOLE), 2);
	assert_int_equal(t.events, 291 + 291);
	/* The second header's jump is a loss the reader reports, exactly as it says. */
	assert_int_equal(t.lost, 100000);
	evr_span_reader_free(sr);
	sess_free(&s);
}

/* A writer thread and a whole-packet reader: written == events + lost, exactly. */
static void test_span_whole_concurrent_conservation(void **state)
{
	struct evr_span_reader *sr;
	struct tally t = { .check_order = false };
	struct race r;
	struct sess s;
	pthread_t th;
	uint64_t fl;

	(void)state;
	sess_new(&s, EVR_MODE_DISCARD, 4 * PACKET);
	cur_hdr = s.h;
	r.s = &s;
	r.attempts = 200000;
	atomic_init(&r.done, 0);
	assert_int_equal(evr_span_reader_new(s.h, EVR_READER_GATING, &sr), 0);
	assert_int_equal(pthread_create(&th, NULL, race_writer, &r), 0);
	while (!atomic_load_explicit(&r.done, memory_order_acquire)) {
		if (drain_flags(sr, &t, EVR_SPAN_WHOLE) == 0)
			sched_yield();
	}
	assert_int_equal(pthread_join(th, NULL), 0);
	sess_end(&s);
	drain_flags(sr, &t, EVR_SPAN_WHOLE);
	assert_true(evr_span_reader_drained(sr));
	for (uint32_t i = 0; i < NR; i++) {
		assert_int_equal(evr_span_reader_final_lost(sr, i, &fl), 0);
		t.lost += fl;
	}
	assert_int_equal(t.events + t.lost, r.attempts);
	evr_span_reader_free(sr);
	sess_free(&s);
}

static void put_rec(uint8_t *p, uint16_t size, uint8_t type, uint64_t extra)
{
	struct evr_rec_hdr h = { .size = size, .type = type, .event_id = 1, .ts = 2 };

	memcpy(p, &h, sizeof(h));
	memcpy(p + 16, &extra, 8);
}

static void test_span_walk_hostile(void **state)
{
	uint8_t buf[256] __attribute__((aligned(8)));
	uint64_t ev = 99, lost = 99;

	(void)state;
	memset(buf, 0, sizeof(buf));
	put_rec(buf, 24, EVR_REC_EVENT, 0);
	put_rec(buf + 24, 24, EVR_REC_LOST, 5);
	put_rec(buf + 48, 24, EVR_REC_THREAD, 7);
	put_rec(buf + 72, 17, EVR_REC_EVENT, 0);	/* 24 bytes aligned */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), 0);
	assert_int_equal(ev, 2);
	assert_int_equal(lost, 5);
	/* An END record stops the walk: what follows is padding. */
	put_rec(buf + 96, 8, EVR_REC_END, 0xffffffffffffffffull);
	assert_int_equal(evr_span_walk(buf, 200, 8, &ev, &lost), 0);
	assert_int_equal(ev, 2);

	ev = lost = 99;
	assert_int_equal(evr_span_walk(buf, 95, 8, &ev, &lost), -EBADMSG);	/* cut record */
	assert_int_equal(evr_span_walk(buf, 4, 8, &ev, &lost), -EBADMSG);	/* cut header */
	assert_true(ev == 99 && lost == 99);					/* untouched */
	put_rec(buf, 8, EVR_REC_EVENT, 0);					/* too small */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), -EBADMSG);
	put_rec(buf, 0, EVR_REC_EVENT, 0);					/* zero size */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), -EBADMSG);
	put_rec(buf, 24, 77, 0);						/* unknown type */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), -EBADMSG);
	put_rec(buf, 16, EVR_REC_LOST, 0);					/* LOST without count */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), -EBADMSG);
	put_rec(buf, 65535, EVR_REC_EVENT, 0);					/* beyond the span */
	assert_int_equal(evr_span_walk(buf, 96, 8, &ev, &lost), -EBADMSG);
	assert_int_equal(evr_span_walk(buf, 0, 0, &ev, &lost), 0);
	assert_int_equal(ev, 0);
	assert_int_equal(evr_span_walk(NULL, 8, 0, &ev, &lost), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_discard_in_order),
		cmocka_unit_test(test_span_discard_loss_exact),
		cmocka_unit_test(test_span_overwrite_lapped),
		cmocka_unit_test(test_span_overwrite_stale),
		cmocka_unit_test(test_span_corrupt_packet),
		cmocka_unit_test(test_span_concurrent_conservation),
		cmocka_unit_test(test_span_whole_packets),
		cmocka_unit_test(test_span_hold),
		cmocka_unit_test(test_span_release_to),
		cmocka_unit_test(test_span_whole_bad_next_header),
		cmocka_unit_test(test_span_whole_concurrent_conservation),
		cmocka_unit_test(test_span_walk_hostile),
		cmocka_unit_test(test_span_wait_fds),
		cmocka_unit_test(test_span_pace_rule),
		cmocka_unit_test(test_span_paced_wait_keeps_up_and_wakes_again),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
