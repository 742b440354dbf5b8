// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Clock sync points: the jump rule of evr_clock_sync_classify() on made-up
 * points, and the reader's conversion of trace files that hold SYNC chunks,
 * built from real ring bytes (the ring writer of evr-shm, with its per-ring
 * clamp) by trace_gen.h, with a "true" time per event to check against:
 * a clock whose rate changes every interval, a TSC that jumps forward, one
 * that jumps back (a VM restored on another host), and hostile SYNC chunks.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <time.h>
#include <x86intrin.h>

#include "trace_gen.h"
#include "evring/clock-sync.h"

static uint64_t abs_diff_u64(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* ---- the jump rule ---------------------------------------------------------- */

static const struct evr_clock_calib tsc_2ghz = {
	/* 0.5 ns per tick */
	.kind = EVR_CLOCK_TSC, .shift = 1, .mult = 1, .ts_base = 0, .mono_base = 0,
};

static struct evr_trace_sync pt(uint64_t ts, uint64_t mono, uint64_t raw)
{
	return (struct evr_trace_sync){.ts = ts, .mono_ns = mono, .raw_ns = raw};
}

static void test_classify_steady_and_slewed(void **state)
{
	struct evr_clock_sync_state st;
	struct evr_trace_sync p;

	(void)state;
	evr_clock_sync_init(&st, &tsc_2ghz);
	assert_true(evr_clock_sync_due(&st, 0));
	/* 2 GHz against RAW; MONOTONIC slewed by NTP 300 ppm fast, then 300 slow:
	 * not a jump (the rule looks at RAW). */
	for (uint64_t i = 0; i < 20; i++) {
		uint64_t raw = 1000000000ull + i * 1000000000ull;
		int64_t slew = (int64_t)(i < 10 ? i * 300000 : 3000000 - (i - 10) * 300000);

		p = pt(2 * raw + 17, (uint64_t)((int64_t)raw + slew), raw);
		assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
		assert_int_equal(p.flags, 0);
	}
	assert_int_equal(st.jumps, 0);
	assert_int_equal(st.points, 20);
	/* Due a second after the last point, not before. */
	assert_false(evr_clock_sync_due(&st, p.mono_ns + 999999999ull));
	assert_true(evr_clock_sync_due(&st, p.mono_ns + 1000000000ull));
}

/*
 * A 2 GHz session's first two points, 100 ms apart (when the second is due),
 * neither a jump: the segment has its first measured rate.
 */
static void first_two_points(struct evr_clock_sync_state *st)
{
	struct evr_trace_sync p;

	evr_clock_sync_init(st, &tsc_2ghz);
	p = pt(2000, 1000, 1000);
	assert_int_equal(evr_clock_sync_classify(st, &p), 0);
	assert_true(evr_clock_sync_due(st, 1000 + 100000000ull));
	p = pt(2000 + 200000000ull, 1000 + 100000000ull, 1000 + 100000000ull);
	assert_int_equal(evr_clock_sync_classify(st, &p), 0);
}

static void test_classify_jumps(void **state)
{
	struct evr_clock_sync_state st;
	struct evr_trace_sync p;

	(void)state;
	first_two_points(&st);
	p = pt(2000 + 2200000000ull, 1100001000ull, 1100001000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	/* 1 s later by RAW, but the TSC moved 5 ms further: forward jump. */
	p = pt(2000 + 4200000000ull + 10000000ull, 2100001000ull, 2100001000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), EVR_SYNC_DISCONT);
	assert_int_equal(st.jumps, 1);
	/* The new segment's second point is due 10 ms later. */
	assert_true(evr_clock_sync_due(&st, 2110001000ull));
	/* Right after a jump the rate is unknown: a new frequency (2.4 GHz) is
	 * no jump, the TSC going back is. */
	p = pt(2000 + 4210000000ull + 24000000ull, 2110001000ull, 2110001000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	/* The new rate is learnt: 1 s later at 2.4 GHz, no jump. */
	p = pt(p.ts + 2400000000ull, p.mono_ns + 1000000000ull, p.raw_ns + 1000000000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	/* Within 2 us + 20 ppm: not a jump; beyond it: a jump. */
	p = pt(p.ts + 2400000000ull + 2400ull * 21, p.mono_ns + 1000000000ull,
	       p.raw_ns + 1000000000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	p = pt(p.ts + 2400000000ull - 2400ull * 30, p.mono_ns + 1000000000ull,
	       p.raw_ns + 1000000000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), EVR_SYNC_DISCONT | EVR_SYNC_BACKWARDS);
	/* Below the previous point: back, whatever the rate. */
	p = pt(p.ts - 5, p.mono_ns + 10000000ull, p.raw_ns + 10000000ull);
	assert_int_equal(evr_clock_sync_classify(&st, &p), EVR_SYNC_DISCONT | EVR_SYNC_BACKWARDS);
	assert_int_equal(st.jumps, 3);
}

/*
 * A recorder preempted while it takes a point: its bracket is wide, and the
 * clock readings may lie anywhere in it. A disagreement within half the
 * windows is no jump; the same disagreement from a narrow bracket is one.
 */
static void test_classify_wide_window(void **state)
{
	struct evr_clock_sync_state st;
	struct evr_trace_sync p;

	(void)state;
	first_two_points(&st);
	/* RAW 50 us later than the TSC says, read in a 120 us bracket: no jump. */
	p = pt(2000 + 2200000000ull, 1100051000ull, 1100051000ull);
	p.window = 240000;	/* ticks: 120 us at 2 GHz */
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	assert_int_equal(st.jumps, 0);
	/* 50 us off the line of the last two points, from a 40 ns bracket after a
	 * narrow one: a jump (the TSC ran ahead of RAW). */
	st.prev.window = 0;
	p = pt(2000 + 4200000000ull, 2100051000ull, 2100051000ull);
	p.window = 80;
	assert_int_equal(evr_clock_sync_classify(&st, &p), EVR_SYNC_DISCONT);
	assert_int_equal(st.jumps, 1);
}

static void test_classify_monotonic_never_jumps(void **state)
{
	const struct evr_clock_calib mono = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1};
	struct evr_clock_sync_state st;
	struct evr_trace_sync p;

	(void)state;
	evr_clock_sync_init(&st, &mono);
	p = pt(1000, 1000, 5);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
	p = pt(5000000000ull, 5000000000ull, 7);
	assert_int_equal(evr_clock_sync_classify(&st, &p), 0);
}

/* A point taken from the real clocks of a mapped session: its heads are the
 * rings' published heads, its clocks plausible. */
static void test_take_real(void **state)
{
	struct evr_clock_sync_state st;
	struct evr_trace_sync p, q;
	uint64_t heads[2] = {99, 99};
	struct evr_clock_calib real;
	struct gen g;

	(void)state;
	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 1), 0);
	gen_emit(&g, 1, 7, GEN_RID_TICK);
	/* The real TSC's rate (trace_gen's session has a made-up one), over 20 ms:
	 * the point moves its second readings to its TSC instant with it. */
	{
		struct timespec t0, t1, d = { .tv_nsec = 20000000 };
		uint64_t c0, c1, ns;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		c0 = __rdtsc();
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		c1 = __rdtsc();
		ns = (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u + (uint64_t)t1.tv_nsec -
		     (uint64_t)t0.tv_nsec;
		evr_trace_line_through(c0, 0, c1, ns, &real);
	}
	evr_clock_sync_init(&st, &real);
	assert_int_equal(evr_clock_sync_take(&st, g.hdr, 0, &p, heads), 0);
	assert_true(heads[0] == 0);
	assert_true(heads[1] == __atomic_load_n(&gen_ctl(&g, 1)->head, __ATOMIC_RELAXED));
	assert_true(heads[1] > 0);
	/* BOOTTIME counts suspends on top of MONOTONIC: never less (the 1 us for the
	 * rounding of moving it to the point's instant). */
	assert_true(p.mono_ns > 0 && p.real_ns > p.mono_ns && p.boot_ns + 1000 >= p.mono_ns);
	assert_int_equal(evr_clock_sync_take(&st, g.hdr, EVR_SYNC_FINAL, &q, heads), 0);
	assert_true(q.ts > p.ts);
	assert_true(q.mono_ns >= p.mono_ns);
	assert_true(q.flags & EVR_SYNC_FINAL);
	assert_int_equal(st.points, 2);
	assert_int_equal(evr_clock_sync_take(&st, NULL, 0, &q, heads), -EINVAL);
	gen_fini(&g);
}

/* ---- files with SYNC chunks ------------------------------------------------- */

/* The true time of every event, by its seq (payload field 0). */
struct truth {
	uint64_t *t;
	uint32_t *ring;
	uint64_t n, cap;
};

/* The generator's clock: raw ticks of 1.5 ns from trace_gen's calibration,
 * offset and stretched per "domain" to model what a VM sees. */
struct domain {
	uint64_t t0;		/* true ns where the domain starts */
	uint64_t raw0;		/* raw ticks at t0 */
	uint64_t num, den;	/* ns per tick = num / den */
};

static uint64_t raw_at(const struct domain *d, uint64_t t)
{
	return d->raw0 + (t - d->t0) * d->den / d->num;
}

static void emit_at(struct gen *g, struct truth *tr, uint32_t ring, uint64_t t, uint64_t raw)
{
	uint8_t buf[64];
	uint64_t seq = tr->n;
	uint32_t len = gen_payload(seq, GEN_RID_TICK, 100 + ring, buf);

	if (tr->n == tr->cap) {
		tr->cap = tr->cap ? tr->cap * 2 : 1024;
		tr->t = realloc(tr->t, tr->cap * sizeof(*tr->t));
		tr->ring = realloc(tr->ring, tr->cap * sizeof(*tr->ring));
		assert_non_null(tr->t);
		assert_non_null(tr->ring);
	}
	assert_int_equal(evr_ring_write_locked(&g->w[ring], GEN_RID_TICK, raw, 100 + ring, buf,
					       len), 0);
	if (raw > g->m[ring].ts)
		g->m[ring].ts = raw;
	tr->t[tr->n] = t;
	tr->ring[tr->n] = ring;
	tr->n++;
}

/* A sync point at true time @t as a recorder takes it: heads, then clocks. */
static void sync_at(struct gen *g, struct evr_clock_sync_state *st, uint64_t t, uint64_t raw)
{
	struct evr_trace_sync p = pt(raw, t, t);
	uint64_t heads[8];

	for (uint32_t i = 0; i < g->nr; i++)
		heads[i] = __atomic_load_n(&gen_ctl(g, i)->head, __ATOMIC_ACQUIRE);
	p.real_ns = t + 1700000000000000000ull;
	p.boot_ns = t;
	evr_clock_sync_classify(st, &p);
	assert_int_equal(evr_trace_writer_sync(g->tw, &p, heads), 0);
}

struct readback {
	uint64_t events, exact, approx_bounded, ordered_breaks;
	uint64_t max_err_exact;
	struct evr_trace_stats st;
	struct evr_trace_clock_jump jump;
	int njumps;
};

/*
 * Read the file back: time never goes back, every event is seen once, and its
 * time is exact unless @in_window(seq) says it was written around the jump,
 * in which case it lies within [lo, hi].
 */
static void read_back(struct gen *g, const struct truth *tr, uint64_t lo, uint64_t hi,
		      bool (*approx)(const struct truth *, uint64_t, void *), void *arg,
		      struct readback *res)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	char err[256] = "";
	uint64_t last = 0;
	uint8_t *seen = calloc(tr->n ? tr->n : 1, 1);
	int rc;

	assert_non_null(seen);
	memset(res, 0, sizeof(*res));
	rc = evr_trace_reader_open_fd(g->out_fd, &r, err, sizeof(err));
	if (rc)
		print_error("open: %s\n", err);
	assert_int_equal(rc, 0);
	while ((rc = evr_trace_reader_next(r, &v)) == 1) {
		uint64_t seq;

		assert_true(v.ts_ns >= last);
		last = v.ts_ns;
		if (v.type != EVR_REC_EVENT)
			continue;
		memcpy(&seq, v.payload, 8);
		assert_true(seq < tr->n);
		assert_false(seen[seq]);
		seen[seq] = 1;
		res->events++;
		if (approx && approx(tr, seq, arg)) {
			if (v.ts_ns < lo || v.ts_ns > hi)
				print_error("event %llu (true %llu) at %llu, outside [%llu, %llu]\n",
					    (unsigned long long)seq, (unsigned long long)tr->t[seq],
					    (unsigned long long)v.ts_ns, (unsigned long long)lo,
					    (unsigned long long)hi);
			assert_true(v.ts_ns >= lo && v.ts_ns <= hi);
			res->approx_bounded++;
			continue;
		}
		{
			uint64_t e = abs_diff_u64(v.ts_ns, tr->t[seq]);

			/* Raw ticks are 1.5 ns, rounded. */
			if (e > 2)
				print_error("event %llu ring %u: true %llu, read %llu\n",
					    (unsigned long long)seq, tr->ring[seq],
					    (unsigned long long)tr->t[seq],
					    (unsigned long long)v.ts_ns);
			assert_true(e <= 2);
			if (e > res->max_err_exact)
				res->max_err_exact = e;
			res->exact++;
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(res->events, tr->n);
	evr_trace_reader_stats(r, &res->st);
	while (evr_trace_reader_clock_jump(r, (uint32_t)res->njumps, &res->jump) == 0)
		res->njumps++;
	evr_trace_reader_free(r);
	free(seen);
}

static void truth_free(struct truth *tr)
{
	free(tr->t);
	free(tr->ring);
}

/*
 * No jump, but the clock's rate changes at every sync point (up to 400 ppm,
 * like NTP correcting): piecewise conversion is exact, where the session's
 * single calibration would be microseconds off.
 */
static void test_piecewise_rate_changes(void **state)
{
	struct evr_clock_sync_state st;
	struct truth tr = {0};
	struct readback rb;
	struct gen g;
	uint64_t t = 5000000000ull, raw = 1000, worst_calib = 0;

	(void)state;
	assert_int_equal(gen_init(&g, 2, 64 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 7), 0);
	evr_clock_sync_init(&st, &g.clock);
	/* Each interval: 1 ms of true time, 200 events, ticks of 1.5 ns x (1 + k*100 ppm). */
	for (int k = 0; k < 12; k++) {
		struct domain d = {.t0 = t, .raw0 = raw, .num = 15 * (10000 + (uint64_t)(k % 5)),
				   .den = 100000};

		sync_at(&g, &st, t, raw);
		for (int i = 0; i < 200; i++) {
			uint64_t te = t + (uint64_t)i * 5000;
			uint64_t calib = evr_clock_to_mono_ns(&g.clock, raw_at(&d, te));

			emit_at(&g, &tr, (uint32_t)i & 1, te, raw_at(&d, te));
			if (abs_diff_u64(calib, te) > worst_calib)
				worst_calib = abs_diff_u64(calib, te);
		}
		/* The next interval starts exactly where this one's line ends. */
		raw = raw_at(&d, t + 1000000);
		t += 1000000;
		gen_drain(&g, 0);
		gen_drain(&g, 1);
	}
	sync_at(&g, &st, t, raw);
	assert_int_equal(gen_finish(&g, 0), 0);
	read_back(&g, &tr, 0, 0, NULL, NULL, &rb);
	assert_int_equal(rb.exact, tr.n);
	assert_int_equal(rb.st.sync_points, 13);
	assert_int_equal(rb.st.clock_segments, 1);
	assert_int_equal(rb.st.approx_ts, 0);
	assert_int_equal(rb.njumps, 0);
	assert_true(rb.st.cpu_skew_ns == 0);
	print_message("piecewise: max error %llu ns; the session calibration alone: %llu ns\n",
		      (unsigned long long)rb.max_err_exact, (unsigned long long)worst_calib);
	assert_true(worst_calib > 1000);
	truth_free(&tr);
	gen_fini(&g);
}

struct jump_case {
	uint64_t t_jump;	/* true time of the jump */
	uint64_t t_a, t_b;	/* the points around it */
	uint64_t held_from;	/* events after the jump with a held raw value: true time < this */
	bool backwards;
};

/* Events written between the last point before the jump and the first after
 * it, and after a backward jump those the writer's clamp held. */
static bool approx_event(const struct truth *tr, uint64_t seq, void *arg)
{
	const struct jump_case *j = arg;
	uint64_t t = tr->t[seq];

	if (t >= j->t_a && t <= j->t_b)
		return true;
	return j->backwards && t > j->t_jump && t < j->held_from;
}

/*
 * Three segments of sync points every 100 us of true time; the TSC jumps at
 * t_jump by @step ticks. Events every 1 us, alternating over two rings.
 */
static void jump_run(int64_t step, struct readback *rb, struct jump_case *jc)
{
	struct evr_clock_sync_state st;
	struct truth tr = {0};
	struct gen g;
	struct domain d0 = {.t0 = 5000000000ull, .raw0 = 1000000, .num = 3, .den = 2};
	struct domain d1;
	const uint64_t t_jump = d0.t0 + 1000000 + 37000;	/* inside an interval */
	uint64_t t = d0.t0;

	d1 = (struct domain){.t0 = t_jump, .raw0 = (uint64_t)((int64_t)raw_at(&d0, t_jump) + step),
			     .num = 3, .den = 2};
	memset(jc, 0, sizeof(*jc));
	jc->t_jump = t_jump;
	jc->backwards = step < 0;
	/* The clamp holds each ring at its last value until the new TSC passes it. */
	jc->held_from = step < 0 ? t_jump + (uint64_t)(-step) * 3 / 2 + 2000 : 0;
	assert_int_equal(gen_init(&g, 2, 256 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 9), 0);
	evr_clock_sync_init(&st, &g.clock);
	for (; t < d0.t0 + 3000000; t += 1000) {
		const struct domain *d = t < t_jump ? &d0 : &d1;

		if ((t - d0.t0) % 100000 == 0) {
			sync_at(&g, &st, t, raw_at(d, t));
			if (t < t_jump)
				jc->t_a = t;
			else if (!jc->t_b)
				jc->t_b = t;
			gen_drain(&g, 0);
			gen_drain(&g, 1);
		}
		emit_at(&g, &tr, (uint32_t)(t / 1000) & 1, t, raw_at(d, t));
	}
	sync_at(&g, &st, t, raw_at(&d1, t));
	assert_int_equal(st.jumps, 1);
	assert_int_equal(gen_finish(&g, 0), 0);
	read_back(&g, &tr, jc->t_a, jc->backwards ? t : jc->t_b, approx_event, jc, rb);
	truth_free(&tr);
	gen_fini(&g);
}

static void test_jump_forward(void **state)
{
	struct jump_case jc;
	struct readback rb;

	(void)state;
	/* 10 s ahead (a restore on a host up for longer). */
	jump_run(10000000000ll * 2 / 3, &rb, &jc);
	assert_int_equal(rb.st.clock_segments, 2);
	assert_int_equal(rb.njumps, 1);
	assert_true(rb.jump.before_mono_ns == jc.t_a && rb.jump.after_mono_ns == jc.t_b);
	/* Measured with the old segment's rate: ticks rounded to 1.5 ns make it
	 * 15 ppm off, 150 us over 10 s. */
	assert_true(rb.jump.step_ns > 9999000000ll && rb.jump.step_ns < 10001000000ll);
	assert_false(rb.jump.flags & EVR_SYNC_BACKWARDS);
	assert_true(rb.st.cpu_skew_ns == 0);
	/* Forward, the raw value alone says which segment: even the events
	 * written around the jump come out exact. */
	assert_true(rb.st.approx_ts > 0);
	print_message("forward jump: %llu events, %llu exact, %llu in the window\n",
		      (unsigned long long)rb.events, (unsigned long long)rb.exact,
		      (unsigned long long)rb.approx_bounded);
}

static void test_jump_backward(void **state)
{
	struct jump_case jc;
	struct readback rb;

	(void)state;
	/* 1 ms back: the clamp holds both rings for a millisecond. */
	jump_run(-1000000ll * 2 / 3, &rb, &jc);
	assert_int_equal(rb.st.clock_segments, 2);
	assert_int_equal(rb.njumps, 1);
	assert_true(rb.jump.flags & EVR_SYNC_BACKWARDS);
	/* The held values are no evidence against the CPUs. */
	assert_true(rb.st.cpu_skew_ns == 0);
	assert_true(rb.jump.step_ns < -999000ll && rb.jump.step_ns > -1001000ll);
	assert_true(rb.st.approx_ts >= rb.approx_bounded / 2);
	/* Everything after the clamp let go is exact again. */
	assert_true(rb.exact > rb.events / 2);
	print_message("backward jump: %llu events, %llu exact, %llu approximate (%llu counted)\n",
		      (unsigned long long)rb.events, (unsigned long long)rb.exact,
		      (unsigned long long)rb.approx_bounded, (unsigned long long)rb.st.approx_ts);
}

/*
 * Ring 1's CPU runs 5 us ahead of the recorder's: its records published just
 * before a sync point carry later timestamps than the point. The reader says
 * how far ahead and which ring (evring dump warns above 1 us).
 */
static void test_cpu_skew_seen(void **state)
{
	struct evr_clock_sync_state st;
	struct truth tr = {0};
	struct gen g;
	struct evr_trace_reader *r;
	struct evr_trace_stats stt;
	struct evr_event_view v;
	const uint64_t t0 = 5000000000ull, ahead = 5000 * 2 / 3;	/* ticks of 1.5 ns */
	char err[256];

	(void)state;
	assert_int_equal(gen_init(&g, 2, 64 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 13), 0);
	evr_clock_sync_init(&st, &g.clock);
	for (uint64_t t = t0; t < t0 + 2000000; t += 1000) {
		uint64_t raw = 1000 + (t - t0) * 2 / 3;
		uint32_t ring = (uint32_t)(t / 1000) & 1;

		if ((t - t0) % 100000 == 0)
			sync_at(&g, &st, t, raw);
		emit_at(&g, &tr, ring, t, raw + (ring ? ahead : 0));
		if ((t - t0) % 100000 == 99000) {
			gen_drain(&g, 0);
			gen_drain(&g, 1);
		}
	}
	assert_int_equal(gen_finish(&g, 0), 0);
	assert_int_equal(evr_trace_reader_open_fd(g.out_fd, &r, err, sizeof(err)), 0);
	while (evr_trace_reader_next(r, &v) == 1)
		;
	evr_trace_reader_stats(r, &stt);
	print_message("ring %u ahead by at least %llu ns\n", stt.cpu_skew_ring,
		      (unsigned long long)stt.cpu_skew_ns);
	assert_int_equal(stt.cpu_skew_ring, 1);
	/* 5 us ahead, minus the 1 us or 2 us since its last record before a point. */
	assert_true(stt.cpu_skew_ns >= 3000 && stt.cpu_skew_ns <= 5000);
	evr_trace_reader_free(r);
	truth_free(&tr);
	gen_fini(&g);
}

/* A SYNC chunk with the wrong number of heads, or before the SESSION chunk. */
static void test_sync_chunk_rejected(void **state)
{
	struct evr_trace_reader *r = NULL;
	struct evr_trace_sync p = pt(1, 2, 3);
	uint64_t heads[1] = {0};
	char err[256] = "";
	struct gen g;
	int fd;

	(void)state;
	/* Before any session: the writer refuses. */
	fd = memfd_create("t", MFD_CLOEXEC);
	{
		struct evr_trace_writer *w;

		assert_int_equal(evr_trace_writer_new(fd, &w), 0);
		assert_int_equal(evr_trace_writer_sync(w, &p, heads), -EINVAL);
		evr_trace_writer_free(w);
	}
	close(fd);
	/* The session has 2 rings: a hand-made chunk with 1 head is refused. */
	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 3), 0);
	{
		struct {
			struct evr_trace_chunk_hdr h;
			struct evr_trace_sync s;
			uint64_t head;
		} c = {.s = p};
		off_t end = lseek(g.out_fd, 0, SEEK_END);

		c.h.magic = EVR_TRACE_CHUNK_MAGIC;
		c.h.kind = EVR_CHUNK_SYNC;
		c.h.len = sizeof(c.s) + sizeof(c.head);
		c.h.seq = (uint32_t)evr_trace_writer_chunks(g.tw);
		c.h.data_crc = evr_crc32c(0, &c.s, c.h.len);
		c.h.hdr_crc = evr_crc32c(0, &c.h, offsetof(struct evr_trace_chunk_hdr, hdr_crc));
		assert_int_equal(pwrite(g.out_fd, &c, sizeof(c), end), (ssize_t)sizeof(c));
	}
	assert_int_equal(evr_trace_reader_open_fd(g.out_fd, &r, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "SYNC chunk"));
	assert_non_null(strstr(err, "1 ring heads, the session has 2 rings"));
	gen_fini(&g);
}

static bool approx_all(const struct truth *tr, uint64_t seq, void *arg)
{
	(void)tr;
	(void)seq;
	(void)arg;
	return true;
}

/* Points going back in time without a DISCONT flag: a segment boundary, no
 * negative rate, and the time still never goes back. */
static void test_sync_out_of_order(void **state)
{
	struct truth tr = {0};
	struct readback rb;
	struct gen g;
	uint64_t heads[2];

	(void)state;
	assert_int_equal(gen_init(&g, 2, 16 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 5), 0);
	for (int i = 0; i < 3; i++) {
		struct evr_trace_sync p = pt(1000000 - (uint64_t)i * 1000, 5000000000ull - (uint64_t)i,
					     0);

		for (uint32_t k = 0; k < 2; k++)
			heads[k] = __atomic_load_n(&gen_ctl(&g, k)->head, __ATOMIC_ACQUIRE);
		assert_int_equal(evr_trace_writer_sync(g.tw, &p, heads), 0);
		for (int e = 0; e < 50; e++)
			emit_at(&g, &tr, (uint32_t)e & 1, 0, 1000000 + (uint64_t)(i * 50 + e) * 10);
	}
	assert_int_equal(gen_finish(&g, 0), 0);
	read_back(&g, &tr, 0, UINT64_MAX, approx_all, NULL, &rb);
	assert_int_equal(rb.st.clock_segments, 3);
	gen_fini(&g);
	truth_free(&tr);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_steady_and_slewed),
		cmocka_unit_test(test_classify_jumps),
		cmocka_unit_test(test_classify_wide_window),
		cmocka_unit_test(test_classify_monotonic_never_jumps),
		cmocka_unit_test(test_take_real),
		cmocka_unit_test(test_piecewise_rate_changes),
		cmocka_unit_test(test_jump_forward),
		cmocka_unit_test(test_jump_backward),
		cmocka_unit_test(test_cpu_skew_seen),
		cmocka_unit_test(test_sync_chunk_rejected),
		cmocka_unit_test(test_sync_out_of_order),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
