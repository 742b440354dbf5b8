// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Integration: two in-process sessions of one process sample the same counters
 * with intervals of 200 ms and 1000 ms. The window is bounded by the 1 s
 * session's own samples (until it has 3): over it the 200 ms session must
 * have 3x to 10x as many, every sample carries its session's interval, and,
 * once recording stops and each session's samples have accounted for every
 * recorded value, both sessions' CounterMean totals equal what was recorded.
 * A separate recording thread records values 1..5 all along. Exits non-zero
 * with a message on the first failed check.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/evring.h>

#include "samples.h"

#define FAIL(...)                                                    \
	do {                                                         \
		fprintf(stderr, "counters_intervals: " __VA_ARGS__); \
		fputc('\n', stderr);                                 \
		exit(1);                                             \
	} while (0)

static struct evr_event *const no_events[] = {NULL};
static struct evr_provider prov = {.name = "Intervals", .events = no_events};
static struct evr_counter *ctr;
static atomic_bool stop;
static uint64_t rec_n; /* written by the recorder, read after join */
static double rec_sum;

struct sess {
	uint32_t interval_ms;
	struct evr_session *s;
	struct evr_reader *r;
	uint64_t samples, count;
	double sum;
	double min, max;
};

static void *recorder(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 1; i <= 5; i++) {
			evr_counter_record(ctr, i);
			rec_n++;
			rec_sum += i;
		}
	}
	return NULL;
}

static void start(struct sess *x, uint32_t interval_ms)
{
	struct evr_session_opts o = {.providers = "Intervals",
				     .mode = EVR_MODE_DISCARD,
				     .ring_size = 1u << 20,
				     .interval_ms = interval_ms};
	char err[256] = "";
	int ret;

	x->interval_ms = interval_ms;
	x->min = INFINITY;
	x->max = -INFINITY;
	ret = evr_session_start(&o, &x->s, err, sizeof(err));
	if (ret < 0)
		FAIL("session start: %s", err);
	if (evr_session_reader_new(x->s, EVR_READER_GATING, &x->r) < 0)
		FAIL("reader");
}

/* Take in every sample @x has now. */
static void drain(struct sess *x)
{
	struct evr_record rec;
	struct sample smp;

	while (evr_reader_next(x->r, &rec) > 0) {
		int k = sample_decode(&rec, &smp);

		if (k < 0)
			FAIL("undecodable Counter event");
		if (k == 0 || strcmp(smp.name, "latency") != 0)
			continue;
		if (strcmp(smp.event, "CounterMean") != 0)
			FAIL("latency came as %s", smp.event);
		if (smp.interval_ms != x->interval_ms)
			FAIL("a sample of the %u ms session says interval_ms=%u", x->interval_ms,
			     smp.interval_ms);
		x->samples++;
		x->count += smp.count;
		x->sum += smp.f[0] * (double)smp.count;
		if (smp.count) {
			/* The mean may hold one record in flight at the tick
			 * beyond its count (see counters.c). */
			double slack = 5.0 / (double)smp.count;

			if (smp.f[1] < 1 || smp.f[2] > 5 || smp.f[0] < 1 - slack ||
			    smp.f[0] > 5 + slack)
				FAIL("%u ms sample out of range: mean %g min %g max %g",
				     x->interval_ms, smp.f[0], smp.f[1], smp.f[2]);
			x->min = smp.f[1] < x->min ? smp.f[1] : x->min;
			x->max = smp.f[2] > x->max ? smp.f[2] : x->max;
		}
	}
	evr_reader_release(x->r);
}

int main(void)
{
	struct evr_counter_desc d = {.name = "latency", .unit = "ms", .kind = EVR_COUNTER_MEAN};
	struct sess fast = {0}, slow = {0};
	uint64_t fast_in_window;
	pthread_t t;
	double ratio;

	if (evr_provider_register(&prov) < 0 || evr_counter_create(&prov, &d, &ctr) < 0)
		FAIL("cannot register the provider or create the counter");
	start(&fast, 200);
	start(&slow, 1000);
	if (pthread_create(&t, NULL, recorder, NULL))
		FAIL("pthread_create");
	/* The window: until the 1 s session has 3 samples. Waiting on the slow
	 * session's reader; the fast one is drained each time round. */
	while (slow.samples < 3) {
		evr_reader_wait(slow.r, 50);
		drain(&slow);
		drain(&fast);
	}
	fast_in_window = fast.samples;
	ratio = (double)fast_in_window / (double)slow.samples;
	printf("window: 1000 ms session %llu samples, 200 ms session %llu (ratio %.2f)\n",
	       (unsigned long long)slow.samples, (unsigned long long)fast_in_window, ratio);
	if (ratio < 3 || ratio > 10)
		FAIL("ratio of samples %.2f is outside [3, 10]", ratio);

	atomic_store_explicit(&stop, true, memory_order_relaxed);
	pthread_join(t, NULL);
	/* Every recorded value shows up in a later interval of each session. */
	while (fast.count < rec_n || slow.count < rec_n) {
		evr_reader_wait(fast.count < rec_n ? fast.r : slow.r, 50);
		drain(&fast);
		drain(&slow);
	}
	printf("recorded %llu values, sum %.0f; 200 ms session %llu / %.0f, 1000 ms session %llu / %.0f\n",
	       (unsigned long long)rec_n, rec_sum, (unsigned long long)fast.count, fast.sum,
	       (unsigned long long)slow.count, slow.sum);
	if (fast.count != rec_n || slow.count != rec_n)
		FAIL("counts differ from the %llu recorded", (unsigned long long)rec_n);
	if (fabs(fast.sum - rec_sum) > 1e-9 * rec_sum || fabs(slow.sum - rec_sum) > 1e-9 * rec_sum)
		FAIL("sums differ from the %.0f recorded", rec_sum);
	if (fast.min != 1 || slow.min != 1 || fast.max != 5 || slow.max != 5)
		FAIL("min/max not 1/5");
	evr_reader_free(fast.r);
	evr_reader_free(slow.r);
	evr_session_free(fast.s);
	evr_session_free(slow.s);
	evr_counter_free(ctr);
	evr_provider_unregister(&prov);
	printf("ok\n");
	return 0;
}
