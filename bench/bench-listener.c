// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr-listener-bench: what an in-process listener (<evring/listener.h>) costs.
 *
 * One thread writes N events (u64, u64, u32: evring-bench's payload) as fast as
 * it can while a listener's dispatch thread decodes each and calls a callback
 * that reads a field. Per run it reports:
 *   writer ns/event    wall time of the writing loop / N (the write path with a
 *                      listener's session enabled; the dispatch thread runs beside)
 *   dispatch ns/event  the dispatch thread's CPU time (process CPU minus the
 *                      writer's, measured with getrusage) / events delivered:
 *                      reading the ring, decoding, the callback
 *   delivered, lost    the session's accounting (delivered + lost == N, checked)
 * and the medians over --runs. Exit status 1 if any run's accounting is off.
 *
 *   evr-listener-bench [--events N] [--runs R] [--ring-size BYTES]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <evring/listener.h>

#define BL_EVENTS(EVENT) \
	EVENT(bl_ev, "Payload", 1, EVR_LEVEL_INFO, 0x1, (u64, a), (u64, b), (u32, c))

EVR_PROVIDER_DECLARE(bl, BL_EVENTS)
EVR_PROVIDER_DEFINE(bl, "BenchListener", BL_EVENTS)

static uint64_t sink, delivered, lost;

static void on_event(const struct evr_event_view *ev, const struct evr_field_value *f, void *ctx)
{
	sink += f[0].u + f[2].u;
	delivered++;
}

/* Losses the session could not report in-band yet come when it ends (free). */
static void on_lost(uint64_t n, void *ctx)
{
	lost += n;
}

static double now_s(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rusage_s(int who)
{
	struct rusage ru;

	getrusage(who, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "runs", required_argument, NULL, 'r' },
		{ "ring-size", required_argument, NULL, 's' },
		{ 0 },
	};
	uint64_t n = 2000000, ring = 16u << 20;
	int runs = 5, c, bad = 0;
	double wr[64], di[64];

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'n':
			n = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		case 's':
			ring = strtoull(optarg, NULL, 10);
			break;
		default:
			fprintf(stderr, "usage: evr-listener-bench [--events N] [--runs R] "
				"[--ring-size BYTES]\n");
			return 2;
		}
	}
	if (runs < 1 || runs > 64 || !n) {
		fprintf(stderr, "evr-listener-bench: --runs 1..64, --events > 0\n");
		return 2;
	}
	printf("%-5s %14s %16s %12s %10s\n", "run", "writer ns/ev", "dispatch ns/ev", "delivered",
	       "lost");
	for (int r = 0; r < runs; r++) {
		struct evr_listener_opts o = { .providers = "BenchListener", .ring_size = ring,
					       .on_event = on_event, .on_lost = on_lost };
		struct evr_listener_stats st;
		struct evr_listener *l;
		double t0, t1, self0, self1, me0, me1;
		char err[256];

		delivered = lost = 0;
		if (evr_listener_new(&o, &l, err, sizeof(err)) < 0) {
			fprintf(stderr, "evr-listener-bench: %s\n", err);
			return 1;
		}
		self0 = rusage_s(RUSAGE_SELF);
		me0 = rusage_s(RUSAGE_THREAD);
		t0 = now_s(CLOCK_MONOTONIC);
		for (uint64_t i = 0; i < n; i++)
			bl_ev(i, i * 3, (uint32_t)i);
		t1 = now_s(CLOCK_MONOTONIC);
		me1 = rusage_s(RUSAGE_THREAD);
		evr_listener_flush(l, -1);
		self1 = rusage_s(RUSAGE_SELF);
		/* The dispatch thread is joined: the counts are final, the losses the
		 * session reports only at its end included (on_lost is not called then). */
		evr_listener_stop(l, &st);
		evr_listener_free(l);
		lost = st.lost;
		wr[r] = (t1 - t0) * 1e9 / (double)n;
		di[r] = delivered ? ((self1 - self0) - (me1 - me0)) * 1e9 / (double)delivered : 0;
		printf("%-5d %14.1f %16.1f %12" PRIu64 " %10" PRIu64 "\n", r + 1, wr[r], di[r],
		       delivered, lost);
		/* Nothing is dropped: the flush delivered everything before the stop. */
		if (delivered + lost != n || st.dropped) {
			fprintf(stderr, "evr-listener-bench: run %d: %" PRIu64 " delivered + %" PRIu64
				" lost != %" PRIu64 " written\n", r + 1, delivered, lost, n);
			bad = 1;
		}
	}
	qsort(wr, (size_t)runs, sizeof(double), cmp_double);
	qsort(di, (size_t)runs, sizeof(double), cmp_double);
	printf("%-5s %14.1f %16.1f\n", "median", wr[runs / 2], di[runs / 2]);
	return bad;
}
