// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for counters (<evring/counters.h>) through the public API: each
 * counter type's statistics against values computed here, exact totals under
 * concurrent recording, from threads that exit and from signal handlers that
 * interrupt recording, per-interval min and max of two sessions with different
 * intervals, counters freed and created again, the Process provider, and
 * argument errors. Samples are
 * waited for by reading them from an in-process session; totals are compared
 * once the samples have accounted for everything recorded (the cumulative
 * scheme guarantees that some later interval does).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/evring.h>

#include "../counters/samples.h"

#define INTERVAL_MS 40u

static struct evr_event *const no_events[] = {NULL};

static struct evr_provider *provider(const char *name)
{
	struct evr_provider *p = calloc(1, sizeof(*p));

	assert_non_null(p);
	p->name = name;
	p->events = no_events;
	assert_int_equal(evr_provider_register(p), 0);
	/* Never unregistered: counters' events live as long as their provider. */
	return p;
}

struct sess {
	struct evr_session *s;
	struct evr_reader *r;
};

static void sess_start(struct sess *x, const char *providers, uint32_t interval_ms)
{
	struct evr_session_opts o = {.providers = providers,
				     .ring_size = 256u << 10,
				     .mode = EVR_MODE_DISCARD,
				     .interval_ms = interval_ms};
	char err[256] = "";

	assert_int_equal(evr_session_start(&o, &x->s, err, sizeof(err)), 0);
	assert_int_equal(evr_session_reader_new(x->s, EVR_READER_GATING, &x->r), 0);
}

static void sess_end(struct sess *x)
{
	evr_reader_free(x->r);
	evr_session_free(x->s);
}

/* Wait for the next sample of counter @name; returns it in @ret. */
static void next_sample(struct sess *x, const char *name, struct sample *ret)
{
	struct evr_record rec;

	for (;;) {
		while (evr_reader_next(x->r, &rec) > 0) {
			int k = sample_decode(&rec, ret);

			assert_int_not_equal(k, -1);
			if (k == 1 && strcmp(ret->name, name) == 0) {
				evr_reader_release(x->r);
				return;
			}
		}
		evr_reader_release(x->r);
		/* The sample may sit in a packet still being written: read again after
		 * a short wait (the data, not the time, ends the loop). */
		evr_reader_wait(x->r, 20);
	}
}

static struct evr_counter *counter(struct evr_provider *p, const char *name, uint32_t kind)
{
	struct evr_counter_desc d = {
		.name = name, .display_name = "Display", .unit = "ms", .kind = kind};
	struct evr_counter *c = NULL;

	assert_int_equal(evr_counter_create(p, &d, &c), 0);
	assert_non_null(c);
	return c;
}

static void assert_close(double a, double b, double rel)
{
	double tol = rel * (fabs(b) > 1 ? fabs(b) : 1);

	if (fabs(a - b) > tol)
		fail_msg("%.17g differs from %.17g by more than %g", a, b, tol);
}

/* ---- mean ---------------------------------------------------------------------------- */

static void test_mean(void **state)
{
	struct evr_provider *p = provider("CtrMean");
	struct evr_counter *c = counter(p, "lat", EVR_COUNTER_MEAN);
	const int n = 5000;
	bool whole = false;
	struct sample smp;
	struct sess x;

	(void)state;
	sess_start(&x, "CtrMean", 250);
	/* Each round's totals must come out exact over however many intervals it
	 * spans; a round that fits in one interval also has its mean, stddev, min
	 * and max checked against values computed here (retried until one does). */
	for (int round = 0; round < 6 && !whole; round++) {
		double sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY;
		double got_sum = 0, got_sq = 0, got_min = INFINITY, got_max = -INFINITY;
		uint64_t got_n = 0;

		for (int i = 0; i < n; i++) {
			double v = 3.0 + 2.5 * sin((i + round) * 0.37) + (i % 11) * 0.25;

			evr_counter_record(c, v);
			sum += v;
			sumsq += v * v;
			mn = v < mn ? v : mn;
			mx = v > mx ? v : mx;
		}
		while (got_n < (uint64_t)n) {
			next_sample(&x, "lat", &smp);
			assert_string_equal(smp.event, "CounterMean");
			assert_string_equal(smp.display, "Display");
			assert_string_equal(smp.unit, "ms");
			assert_int_equal(smp.interval_ms, 250);
			if (!smp.count)
				continue;
			got_n += smp.count;
			got_sum += smp.f[0] * (double)smp.count;
			/* stddev^2 + mean^2 is the interval's mean square */
			got_sq += (smp.f[3] * smp.f[3] + smp.f[0] * smp.f[0]) * (double)smp.count;
			got_min = smp.f[1] < got_min ? smp.f[1] : got_min;
			got_max = smp.f[2] > got_max ? smp.f[2] : got_max;
			if (smp.count == (uint64_t)n) {
				double mean = sum / n;

				assert_close(smp.f[0], mean, 1e-9);
				assert_close(smp.f[3], sqrt(sumsq / n - mean * mean), 1e-6);
				assert_true(smp.f[1] == mn);
				assert_true(smp.f[2] == mx);
				whole = true;
			}
		}
		assert_int_equal(got_n, n);
		assert_close(got_sum, sum, 1e-9);
		assert_close(got_sq, sumsq, 1e-6);
		assert_true(got_min == mn);
		assert_true(got_max == mx);
	}
	assert_true(whole);
	sess_end(&x);
	evr_counter_free(c);
}

/* ---- incrementing --------------------------------------------------------------------- */

static void test_increment(void **state)
{
	struct evr_provider *p = provider("CtrInc");
	struct evr_counter *c = counter(p, "bytes", EVR_COUNTER_INCREMENT);
	double total = 0, got = 0;
	struct sample smp;
	struct sess x;

	(void)state;
	sess_start(&x, "CtrInc", INTERVAL_MS);
	for (int i = 1; i <= 1000; i++) {
		evr_counter_add(c, i);
		total += i;
	}
	while (got < total) {
		next_sample(&x, "bytes", &smp);
		assert_string_equal(smp.event, "CounterRate");
		assert_int_equal(smp.interval_ms, INTERVAL_MS);
		got += smp.f[0];
		/* rate = increment / the interval's measured length: same sign */
		assert_true(smp.f[0] == 0 ? smp.f[1] == 0 : smp.f[1] > 0);
		assert_true(isfinite(smp.f[1]));
	}
	assert_true(got == total);
	sess_end(&x);
	evr_counter_free(c);
}

/* ---- polling ------------------------------------------------------------------------- */

static double gauge_fn(void *ctx)
{
	return *(double *)ctx;
}

static double rate_fn(void *ctx)
{
	/* Only the counters thread calls this. */
	*(double *)ctx += 7;
	return *(double *)ctx;
}

static void test_polling(void **state)
{
	struct evr_provider *p = provider("CtrPoll");
	static double gauge = 42.5, acc;
	struct evr_counter_desc dg = {
		.name = "g", .kind = EVR_COUNTER_GAUGE, .poll = gauge_fn, .poll_ctx = &gauge};
	struct evr_counter_desc dr = {
		.name = "r", .kind = EVR_COUNTER_POLL_RATE, .poll = rate_fn, .poll_ctx = &acc};
	struct evr_counter *g, *r;
	struct sample smp;
	struct sess x;

	(void)state;
	assert_int_equal(evr_counter_create(p, &dg, &g), 0);
	assert_int_equal(evr_counter_create(p, &dr, &r), 0);
	sess_start(&x, "CtrPoll", INTERVAL_MS);
	for (int i = 0; i < 3; i++) {
		next_sample(&x, "g", &smp);
		assert_string_equal(smp.event, "CounterGauge");
		assert_string_equal(smp.display, "g");
		assert_true(smp.f[0] == 42.5);
		next_sample(&x, "r", &smp);
		assert_string_equal(smp.event, "CounterRate");
		assert_true(smp.f[0] == 7);
		assert_true(smp.f[1] > 0);
	}
	sess_end(&x);
	evr_counter_free(g);
	evr_counter_free(r);
}

/* ---- histogram ----------------------------------------------------------------------- */

static void test_histogram(void **state)
{
	struct evr_provider *p = provider("CtrHist");
	struct evr_counter *c = counter(p, "h", EVR_COUNTER_HISTOGRAM);
	const int n = 10000;
	struct sample smp;
	struct sess x;
	bool checked = false;

	(void)state;
	sess_start(&x, "CtrHist", 300);
	/* Values 1..n in a scrambled order. The whole round must fall in one
	 * interval for its percentiles to be checked: retry a few rounds. */
	for (int round = 0; round < 6 && !checked; round++) {
		uint64_t got = 0;
		double sum = 0;

		for (int i = 0; i < n; i++)
			evr_histogram_record(c, (double)((i * 7919) % n + 1));
		while (got < (uint64_t)n) {
			next_sample(&x, "h", &smp);
			assert_string_equal(smp.event, "CounterHistogram");
			got += smp.count;
			sum += smp.f[0];
			if (smp.count == (uint64_t)n) {
				double tol = EVR_HISTOGRAM_REL_ERROR;

				assert_true(fabs(smp.f[1] - 5000) <= 5000 * tol + 1);
				assert_true(fabs(smp.f[2] - 9000) <= 9000 * tol + 1);
				assert_true(fabs(smp.f[3] - 9900) <= 9900 * tol + 1);
				checked = true;
			}
		}
		assert_int_equal(got, n);
		assert_true(sum == (double)n * (n + 1) / 2);
	}
	assert_true(checked);
	sess_end(&x);
	evr_counter_free(c);
}

/* ---- concurrency ---------------------------------------------------------------------- */

#define THREADS 4
#define PER_THREAD 100000

struct conc {
	struct evr_counter *mean, *inc, *hist;
};

static void *recorder(void *arg)
{
	struct conc *k = arg;

	for (int i = 0; i < PER_THREAD; i++) {
		evr_counter_record(k->mean, (double)(i % 7));
		evr_counter_add(k->inc, 2);
		evr_histogram_record(k->hist, (double)(i % 100));
	}
	return NULL;
}

static void test_concurrent(void **state)
{
	struct evr_provider *p = provider("CtrConc");
	struct conc k = {counter(p, "m", EVR_COUNTER_MEAN), counter(p, "i", EVR_COUNTER_INCREMENT),
			 counter(p, "h", EVR_COUNTER_HISTOGRAM)};
	const uint64_t total = (uint64_t)THREADS * PER_THREAD;
	double per_thread_sum = 0, got_sum = 0, got_inc = 0;
	uint64_t got_n = 0, got_h = 0;
	pthread_t t[THREADS];
	struct sample smp;
	struct evr_record rec;
	struct sess x;

	(void)state;
	for (int i = 0; i < PER_THREAD; i++)
		per_thread_sum += i % 7;
	sess_start(&x, "CtrConc", INTERVAL_MS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, recorder, &k), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	while (got_n < total || got_h < total || got_inc < 2.0 * (double)total) {
		while (evr_reader_next(x.r, &rec) > 0) {
			if (sample_decode(&rec, &smp) != 1)
				continue;
			if (strcmp(smp.name, "m") == 0) {
				got_n += smp.count;
				got_sum += smp.f[0] * (double)smp.count;
			} else if (strcmp(smp.name, "i") == 0) {
				got_inc += smp.f[0];
			} else if (strcmp(smp.name, "h") == 0) {
				got_h += smp.count;
			}
		}
		evr_reader_release(x.r);
		evr_reader_wait(x.r, 20);
	}
	assert_int_equal(got_n, total);
	assert_int_equal(got_h, total);
	assert_true(got_inc == 2.0 * (double)total);
	assert_close(got_sum, THREADS * per_thread_sum, 1e-9);
	sess_end(&x);
	evr_counter_free(k.mean);
	evr_counter_free(k.inc);
	evr_counter_free(k.hist);
}

/* ---- threads that exit ----------------------------------------------------------------- */

#define EXIT_WAVES 4
#define EXIT_THREADS 8
#define EXIT_PER_THREAD 3000

static void *exit_recorder(void *arg)
{
	struct conc *k = arg;

	for (int i = 0; i < EXIT_PER_THREAD; i++) {
		evr_counter_record(k->mean, (double)(i % 5));
		evr_counter_add(k->inc, 3);
		evr_histogram_record(k->hist, (double)(i % 50 + 1));
	}
	return NULL;
}

/* Values recorded by threads that have exited (their accumulators retired in
 * between) are all counted, exactly. */
static void test_thread_exit(void **state)
{
	struct evr_provider *p = provider("CtrExit");
	struct conc k = {counter(p, "m", EVR_COUNTER_MEAN), counter(p, "i", EVR_COUNTER_INCREMENT),
			 counter(p, "h", EVR_COUNTER_HISTOGRAM)};
	const uint64_t total = (uint64_t)EXIT_WAVES * EXIT_THREADS * EXIT_PER_THREAD;
	double per_thread_sum = 0, hist_sum = 0, got_sum = 0, got_hsum = 0, got_inc = 0;
	uint64_t got_n = 0, got_h = 0;
	pthread_t t[EXIT_THREADS];
	struct evr_record rec;
	struct sample smp;
	struct sess x;

	(void)state;
	for (int i = 0; i < EXIT_PER_THREAD; i++) {
		per_thread_sum += i % 5;
		hist_sum += i % 50 + 1;
	}
	sess_start(&x, "CtrExit", INTERVAL_MS);
	/* Waves of threads that record and exit, while the session samples. */
	for (int w = 0; w < EXIT_WAVES; w++) {
		for (int i = 0; i < EXIT_THREADS; i++)
			assert_int_equal(pthread_create(&t[i], NULL, exit_recorder, &k), 0);
		for (int i = 0; i < EXIT_THREADS; i++)
			pthread_join(t[i], NULL);
	}
	while (got_n < total || got_h < total || got_inc < 3.0 * (double)total) {
		while (evr_reader_next(x.r, &rec) > 0) {
			if (sample_decode(&rec, &smp) != 1)
				continue;
			if (strcmp(smp.name, "m") == 0) {
				got_n += smp.count;
				got_sum += smp.f[0] * (double)smp.count;
			} else if (strcmp(smp.name, "i") == 0) {
				got_inc += smp.f[0];
			} else if (strcmp(smp.name, "h") == 0) {
				got_h += smp.count;
				got_hsum += smp.f[0];
			}
		}
		evr_reader_release(x.r);
		evr_reader_wait(x.r, 20);
	}
	assert_int_equal(got_n, total);
	assert_int_equal(got_h, total);
	assert_true(got_inc == 3.0 * (double)total);
	assert_close(got_sum, EXIT_WAVES * EXIT_THREADS * per_thread_sum, 1e-9);
	assert_true(got_hsum == EXIT_WAVES * EXIT_THREADS * hist_sum);
	sess_end(&x);
	evr_counter_free(k.mean);
	evr_counter_free(k.inc);
	evr_counter_free(k.hist);
}

/* ---- signal handlers ------------------------------------------------------------------ */

#define SIGNALS 3000

static struct conc sig_k;
static atomic_uint_fast64_t sig_handled;
static atomic_bool sig_stop;

static void sig_handler(int sig)
{
	(void)sig;
	evr_counter_record(sig_k.mean, 1000);
	evr_counter_add(sig_k.inc, 1000);
	evr_histogram_record(sig_k.hist, 1000);
	atomic_fetch_add_explicit(&sig_handled, 1, memory_order_release);
}

/* Records in a loop: most signals land inside a record. Returns the count. */
static void *sig_recorder(void *arg)
{
	uint64_t *n = arg;

	while (!atomic_load_explicit(&sig_stop, memory_order_relaxed)) {
		evr_counter_record(sig_k.mean, 1);
		evr_counter_add(sig_k.inc, 1);
		evr_histogram_record(sig_k.hist, 1);
		(*n)++;
	}
	return NULL;
}

/* A handler that records into the counters its thread is recording into: both
 * the interrupted values and the handler's are counted, exactly. */
static void test_signal_nesting(void **state)
{
	struct evr_provider *p = provider("CtrSig");
	struct sigaction sa = {.sa_handler = sig_handler}, old;
	double got_sum = 0, got_inc = 0, got_hsum = 0, got_min = INFINITY, got_max = -INFINITY;
	double want_sum, want_inc;
	uint64_t n = 0, got_n = 0, got_h = 0, total;
	struct evr_record rec;
	struct sample smp;
	struct sess x;
	pthread_t t;

	(void)state;
	sig_k = (struct conc){counter(p, "m", EVR_COUNTER_MEAN),
			      counter(p, "i", EVR_COUNTER_INCREMENT),
			      counter(p, "h", EVR_COUNTER_HISTOGRAM)};
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	sess_start(&x, "CtrSig", INTERVAL_MS);
	assert_int_equal(pthread_create(&t, NULL, sig_recorder, &n), 0);
	for (uint64_t i = 1; i <= SIGNALS; i++) {
		assert_int_equal(pthread_kill(t, SIGUSR1), 0);
		/* One at a time: a pending signal is not queued twice. */
		while (atomic_load_explicit(&sig_handled, memory_order_acquire) < i)
			sched_yield();
	}
	atomic_store_explicit(&sig_stop, true, memory_order_relaxed);
	pthread_join(t, NULL);
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	total = n + SIGNALS;
	want_sum = (double)n + 1000.0 * SIGNALS;
	want_inc = want_sum;
	while (got_n < total || got_h < total || got_inc < want_inc) {
		while (evr_reader_next(x.r, &rec) > 0) {
			if (sample_decode(&rec, &smp) != 1)
				continue;
			if (strcmp(smp.name, "m") == 0 && smp.count) {
				got_n += smp.count;
				got_sum += smp.f[0] * (double)smp.count;
				got_min = smp.f[1] < got_min ? smp.f[1] : got_min;
				got_max = smp.f[2] > got_max ? smp.f[2] : got_max;
			} else if (strcmp(smp.name, "i") == 0) {
				got_inc += smp.f[0];
			} else if (strcmp(smp.name, "h") == 0) {
				got_h += smp.count;
				got_hsum += smp.f[0];
			}
		}
		evr_reader_release(x.r);
		evr_reader_wait(x.r, 20);
	}
	assert_int_equal(got_n, total);
	assert_int_equal(got_h, total);
	assert_true(got_inc == want_inc);
	assert_true(got_hsum == want_sum);
	assert_close(got_sum, want_sum, 1e-12);
	assert_true(got_min == 1);
	assert_true(got_max == 1000);
	sess_end(&x);
	evr_counter_free(sig_k.mean);
	evr_counter_free(sig_k.inc);
	evr_counter_free(sig_k.hist);
}

/* ---- two sessions, per-interval min and max ------------------------------------------------ */

/* One thread records 1, 2, 3, ... while two sessions sample with intervals of
 * 10 and 70 ms. */

#define MINMAX_CAP (1u << 26) /* values 1..cap: sums exact in a double */

static atomic_bool mm_stop;

struct mm_arg {
	struct evr_counter *c;
	uint64_t n; /* values recorded, read after join */
};

static void *mm_recorder(void *arg)
{
	struct mm_arg *a = arg;
	uint64_t i = 0;

	while (i < MINMAX_CAP && !atomic_load_explicit(&mm_stop, memory_order_relaxed)) {
		for (int j = 0; j < 4096 && i < MINMAX_CAP; j++)
			evr_counter_record(a->c, (double)++i);
		sched_yield(); /* spread the values over more intervals */
	}
	a->n = i;
	return NULL;
}

#define MINMAX_SAMPLES 4096

struct mm_smp {
	uint64_t count;
	double mean, min, max;
};

struct mm_sess {
	struct sess x;
	uint64_t total, nonzero;
	struct mm_smp smp[MINMAX_SAMPLES];
};

static void mm_drain(struct mm_sess *m, uint32_t interval_ms)
{
	struct evr_record rec;
	struct sample smp;

	while (evr_reader_next(m->x.r, &rec) > 0) {
		if (sample_decode(&rec, &smp) != 1 || strcmp(smp.name, "seq") != 0)
			continue;
		assert_int_equal(smp.interval_ms, interval_ms);
		if (!smp.count)
			continue;
		assert_true(m->nonzero < MINMAX_SAMPLES);
		m->smp[m->nonzero++] = (struct mm_smp){smp.count, smp.f[0], smp.f[1], smp.f[2]};
		m->total += smp.count;
	}
	evr_reader_release(m->x.r);
}

static int mm_cmp(const void *a, const void *b)
{
	const struct mm_smp *x = a, *y = b;

	return x->min < y->min ? -1 : x->min > y->min;
}

/*
 * One thread recorded 1, 2, 3, ...: each interval of a session holds a run of
 * consecutive values, so, in the order of their min (the reader goes ring by
 * ring, not in time order), each interval's min must be the first value after
 * the previous intervals' count, its max the last, its mean their middle.
 */
static void mm_check(struct mm_sess *m, uint32_t interval_ms)
{
	uint64_t before = 0;

	qsort(m->smp, m->nonzero, sizeof(m->smp[0]), mm_cmp);
	for (uint64_t i = 0; i < m->nonzero; i++) {
		const struct mm_smp *k = &m->smp[i];

		if (k->min != (double)(before + 1) || k->max != (double)(before + k->count))
			fail_msg("%u ms session: interval of %" PRIu64 " values after %" PRIu64
				 " has min %.17g max %.17g",
				 interval_ms, k->count, before, k->min, k->max);
		assert_close(k->mean, (double)before + ((double)k->count + 1) / 2, 1e-12);
		before += k->count;
	}
}

static void test_two_sessions_minmax(void **state)
{
	struct evr_provider *p = provider("CtrMinMax");
	struct evr_counter *c = counter(p, "seq", EVR_COUNTER_MEAN);
	static struct mm_sess fast, slow;
	struct mm_arg arg = {.c = c};
	pthread_t t;

	(void)state;
	sess_start(&fast.x, "CtrMinMax", 10);
	sess_start(&slow.x, "CtrMinMax", 70);
	assert_int_equal(pthread_create(&t, NULL, mm_recorder, &arg), 0);
	/* Until the slow session has seen a few intervals with values. */
	while (slow.nonzero < 3 && slow.total < MINMAX_CAP) {
		mm_drain(&fast, 10);
		mm_drain(&slow, 70);
		evr_reader_wait(slow.x.r, 20);
	}
	atomic_store_explicit(&mm_stop, true, memory_order_relaxed);
	pthread_join(t, NULL);
	while (fast.total < arg.n || slow.total < arg.n) {
		mm_drain(&fast, 10);
		mm_drain(&slow, 70);
		evr_reader_wait(fast.total < arg.n ? fast.x.r : slow.x.r, 20);
	}
	assert_int_equal(fast.total, arg.n);
	assert_int_equal(slow.total, arg.n);
	mm_check(&fast, 10);
	mm_check(&slow, 70);
	assert_true(fast.nonzero >= slow.nonzero);
	if (getenv("EVR_TEST_VERBOSE"))
		print_message("%" PRIu64 " values; intervals with values: %" PRIu64
			      " at 10 ms, %" PRIu64 " at 70 ms\n",
			      arg.n, fast.nonzero, slow.nonzero);
	sess_end(&fast.x);
	sess_end(&slow.x);
	evr_counter_free(c);
}

/* ---- counters freed and created again ------------------------------------------------------ */

/* A new counter takes a freed one's index: it starts from nothing, whatever the
 * kinds (a thread's accumulator of the old one is stale). */
static void test_reuse(void **state)
{
	struct evr_provider *p = provider("CtrReuse");
	struct sess x;

	(void)state;
	sess_start(&x, "CtrReuse", INTERVAL_MS);
	for (int round = 0; round < 6; round++) {
		uint32_t kind = round % 3 == 2 ? EVR_COUNTER_HISTOGRAM : EVR_COUNTER_MEAN;
		struct evr_counter *c = counter(p, "r", kind);
		double v = round + 1, got_sum = 0;
		uint64_t got = 0;
		struct sample smp;

		for (int i = 0; i < 1000; i++) {
			if (kind == EVR_COUNTER_MEAN)
				evr_counter_record(c, v);
			else
				evr_histogram_record(c, v);
		}
		while (got < 1000) {
			next_sample(&x, "r", &smp);
			if (!smp.count)
				continue;
			got += smp.count;
			if (kind == EVR_COUNTER_MEAN) {
				assert_true(smp.f[0] == v && smp.f[1] == v && smp.f[2] == v);
				got_sum += smp.f[0] * (double)smp.count;
			} else {
				assert_true(fabs(smp.f[1] - v) <= v * EVR_HISTOGRAM_REL_ERROR);
				assert_true(fabs(smp.f[3] - v) <= v * EVR_HISTOGRAM_REL_ERROR);
				got_sum += smp.f[0];
			}
		}
		assert_int_equal(got, 1000);
		assert_true(got_sum == 1000 * v);
		evr_counter_free(c);
	}
	sess_end(&x);
}

/* ---- Process provider ----------------------------------------------------------------- */

static void test_process(void **state)
{
	static const char *const names[] = {
		"cpu-usage",
		"working-set",
		"virtual-memory",
		"threads",
		"voluntary-ctx-switches",
		"involuntary-ctx-switches",
		"minor-faults",
		"major-faults",
		"open-fds",
	};
	struct sample smp;
	struct sess x;

	(void)state;
	assert_non_null(evr_process_provider());
	assert_string_equal(evr_process_provider()->name, "Process");
	sess_start(&x, "Process", INTERVAL_MS);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		next_sample(&x, names[i], &smp);
		assert_string_equal(smp.provider, "Process");
		assert_int_equal(smp.interval_ms, INTERVAL_MS);
		if (strcmp(names[i], "threads") == 0)
			assert_true(smp.f[0] >= 2); /* this one and the counters thread */
		else if (strcmp(names[i], "working-set") == 0 || strcmp(names[i], "open-fds") == 0)
			assert_true(smp.f[0] > 0);
		else if (strcmp(names[i], "virtual-memory") == 0)
			assert_true(smp.f[0] >= 4096);
		else
			assert_true(smp.f[0] >= 0 && smp.f[1] >= 0);
	}
	sess_end(&x);
}

/* ---- errors ------------------------------------------------------------------------- */

static void test_errors(void **state)
{
	struct evr_provider *p = provider("CtrErr");
	struct evr_counter_desc d = {.name = "x", .kind = EVR_COUNTER_MEAN};
	struct evr_session_opts o = {.providers = "CtrErr", .interval_ms = 5};
	struct evr_counter *c = NULL, *c2 = NULL;
	struct evr_session *s = NULL;
	char err[128] = "";

	(void)state;
	d.kind = 0;
	assert_int_equal(evr_counter_create(p, &d, &c), -EINVAL);
	d.kind = EVR_COUNTER_GAUGE; /* no poll function */
	assert_int_equal(evr_counter_create(p, &d, &c), -EINVAL);
	d.kind = EVR_COUNTER_MEAN;
	d.poll = gauge_fn; /* a poll function where none belongs */
	assert_int_equal(evr_counter_create(p, &d, &c), -EINVAL);
	d.poll = NULL;
	d.name = NULL;
	assert_int_equal(evr_counter_create(p, &d, &c), -EINVAL);
	d.name = "x";
	assert_null(c);
	assert_int_equal(evr_counter_create(p, &d, &c), 0);
	assert_int_equal(evr_counter_create(p, &d, &c2), -EEXIST);
	assert_null(c2);
	assert_int_equal(evr_session_start(&o, &s, err, sizeof(err)), -EINVAL);
	assert_null(s);
	assert_non_null(strstr(err, "interval"));
	/* Recording without any session is a no-op, NULL too. */
	evr_counter_record(c, 1);
	evr_counter_record(NULL, 1);
	evr_counter_add(c, 1); /* wrong kind: ignored */
	evr_counter_free(c);
	evr_counter_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mean),	   cmocka_unit_test(test_increment),
		cmocka_unit_test(test_polling),	   cmocka_unit_test(test_histogram),
		cmocka_unit_test(test_concurrent), cmocka_unit_test(test_thread_exit),
		cmocka_unit_test(test_signal_nesting), cmocka_unit_test(test_two_sessions_minmax),
		cmocka_unit_test(test_reuse),	   cmocka_unit_test(test_process),
		cmocka_unit_test(test_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
