// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring-bench-stacks: what a call stack costs per event (docs/stacks.md).
 *
 * One thread writes a 16-byte event N times from a known depth (RECURSE frames
 * below the thread's start, so that a depth-16 capture walks 16 frames and stops
 * there) into one in-process session whose gating reader drains it on another
 * thread, as evring-bench's enabled_1t does. Scenarios:
 *   no_stacks      the session without stacks (the one-section write path)
 *   stacks_1       stack_depth 1: what a stack costs besides its frames
 *   stacks_16      the session with stack_depth 16: 16 frames per event
 *   stacks_64      stack_depth 64: the whole chain (RECURSE + ~4 frames)
 * Each runs --runs times, interleaved so that machine noise hits all alike. The
 * writer's own CPU time per event is the figure (CLOCK_THREAD_CPUTIME_ID: the
 * time other processes take the CPU from it is not counted, which on a shared
 * machine is most of the wall time), its median printed with the median wall
 * time and the median of each round's ratio to no_stacks. Conservation is
 * checked in every run (received + lost == emitted), and every event of the
 * stacks runs must carry the expected number of frames. --writer-only times the
 * writer alone (an overwrite session nobody reads while it writes; a reader
 * drains it afterwards for the checks), as evring-bench's writer_only does: on
 * a machine with few CPUs the reader otherwise competes with the writer.
 *
 * --ring-size BYTES (default 8 MiB per CPU): a ring that fits the CPU's caches
 * shows the walk; a large one adds the memory traffic of records five times
 * larger (168 bytes with 16 frames instead of 32).
 *
 * --scenario NAME runs one scenario only: with the loop in a function of its own
 * (write_loop), `EVR_VALGRIND_RSEQ=1 valgrind --tool=callgrind
 * --toggle-collect=write_loop evring-bench-stacks --scenario stacks_16 ...`
 * counts the instructions per event, which no load changes (valgrind-rseq.c
 * lets the rseq path run under valgrind; scripts/bench-stacks does it).
 *
 * Usage: evring-bench-stacks [--runs N] [--events N] [--writer-only] [--ring-size BYTES]
 *                            [--scenario NAME] [--json]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evring/evring.h>

#define BSTACK_EVENTS(EVENT) EVENT(bstack_ev, "Ev", 1, EVR_LEVEL_INFO, 0x1, (u64, a), (u64, b))

EVR_PROVIDER_DECLARE(bstack, BSTACK_EVENTS)
EVR_PROVIDER_DEFINE(bstack, "BenchStacks", BSTACK_EVENTS)

#define RECURSE 20
#define MAX_RUNS 31

struct drain {
	struct evr_reader *r;
	uint64_t received, lost, frames_bad;
	uint32_t want_frames;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	struct evr_record rec;

	while (!evr_reader_ended(d->r)) {
		int n = 0;

		for (int k = 0; k < 4096 && (n = evr_reader_next(d->r, &rec)) > 0; k++) {
			if (rec.type != EVR_REC_EVENT) {
				d->lost += rec.lost;
				continue;
			}
			d->received++;
			if (d->want_frames) {
				uint16_t nf = 0;

				if (!(rec.flags & EVR_REC_F_STACK) || rec.len < 8)
					d->frames_bad++;
				else if (memcpy(&nf, rec.payload, 2), nf != d->want_frames)
					d->frames_bad++;
			}
		}
		evr_reader_release(d->r);
		if (n == 0 && !evr_reader_ended(d->r))
			evr_reader_wait(d->r, 2);
	}
	return NULL;
}

static volatile uint64_t sink;

struct times {
	double cpu_ns;		/* the writer thread's CPU time per event */
	double wall_ns;		/* wall-clock time per event */
};

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The timed loop alone, for `valgrind --tool=callgrind --toggle-collect=write_loop`. */
__attribute__((noinline)) void write_loop(uint64_t n);
__attribute__((noinline)) void write_loop(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		bstack_ev(i, i ^ 0x5a5a);
}

__attribute__((noinline)) static struct times writer(int depth, uint64_t n)
{
	uint64_t t0, t1, c0, c1;

	if (depth > 0) {
		struct times r = writer(depth - 1, n);

		sink++;		/* not a tail call: every level keeps its frame */
		return r;
	}
	t0 = now_ns();
	c0 = cpu_ns();
	write_loop(n);
	c1 = cpu_ns();
	t1 = now_ns();
	return (struct times){ (double)(c1 - c0) / (double)n, (double)(t1 - t0) / (double)n };
}

static bool writer_only;
static uint64_t ring_size = 8u << 20;

static struct times run(uint32_t depth, uint64_t n, uint32_t want_frames)
{
	struct evr_session_opts so = {
		.providers = "BenchStacks:0x1:4",
		.ring_size = ring_size,
		.mode = writer_only ? EVR_MODE_OVERWRITE : EVR_MODE_DISCARD,
		.stack_depth = depth,
	};
	struct drain d = { .want_frames = want_frames };
	struct evr_session *s;
	pthread_t th;
	char err[256];
	struct times ns;

	if (evr_session_start(&so, &s, err, sizeof(err)) < 0 ||
	    evr_session_reader_new(s, writer_only ? 0 : EVR_READER_GATING, &d.r) < 0) {
		fprintf(stderr, "evring-bench-stacks: cannot start a session: %s\n", err);
		exit(1);
	}
	if (!writer_only)
		pthread_create(&th, NULL, drain_main, &d);
	ns = writer(RECURSE, n);
	evr_session_stop(s);
	if (writer_only)
		drain_main(&d);	/* what is left, and the laps counted lost */
	else
		pthread_join(th, NULL);
	if (d.received + d.lost != n || d.frames_bad) {
		fprintf(stderr,
			"evring-bench-stacks: depth %u: emitted %" PRIu64 ", received %" PRIu64
			", lost %" PRIu64 ", %" PRIu64 " events without %u frames\n",
			depth, n, d.received, d.lost, d.frames_bad, want_frames);
		exit(1);
	}
	evr_reader_free(d.r);
	evr_session_free(s);
	return ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: evring-bench-stacks [--runs N] [--events N] [--writer-only] "
		   "[--ring-size BYTES] [--scenario NAME] [--json]\n"
		   "  --scenario NAME   only no_stacks, stacks_1, stacks_16 or stacks_64 (for callgrind:\n"
		   "                    EVR_VALGRIND_RSEQ=1 valgrind --tool=callgrind\n"
		   "                    --toggle-collect=write_loop ...)\n");
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runs", required_argument, NULL, 'r' },
		{ "events", required_argument, NULL, 'e' },
		{ "json", no_argument, NULL, 'j' },
		{ "writer-only", no_argument, NULL, 'w' },
		{ "ring-size", required_argument, NULL, 's' },
		{ "scenario", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	static const struct { const char *name; uint32_t depth; } sc[] = {
		{ "no_stacks", 0 }, { "stacks_1", 1 }, { "stacks_16", 16 }, { "stacks_64", 64 },
	};
	enum { NSC = sizeof(sc) / sizeof(sc[0]) };
	double cpu[NSC][MAX_RUNS], wall[NSC][MAX_RUNS], ratio[NSC][MAX_RUNS];
	uint32_t frames64 = 0, frames[NSC];
	uint64_t events = 2000000;
	int runs = 5, c, only = -1;
	bool json = false;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runs = atoi(optarg);
			if (runs < 1 || runs > MAX_RUNS) {
				fprintf(stderr, "evring-bench-stacks: --runs: 1 to %d\n", MAX_RUNS);
				return 2;
			}
			break;
		case 'e':
			events = strtoull(optarg, NULL, 10);
			if (!events) {
				fprintf(stderr, "evring-bench-stacks: --events: a positive number\n");
				return 2;
			}
			break;
		case 'j':
			json = true;
			break;
		case 'w':
			writer_only = true;
			break;
		case 's':
			ring_size = strtoull(optarg, NULL, 0);
			if (ring_size < (64u << 10) || (ring_size & (ring_size - 1))) {
				fprintf(stderr, "evring-bench-stacks: --ring-size: a power of two, "
						"at least 65536\n");
				return 2;
			}
			break;
		case 'c':
			for (int k = 0; k < NSC; k++)
				if (strcmp(optarg, sc[k].name) == 0)
					only = k;
			if (only < 0) {
				fprintf(stderr, "evring-bench-stacks: --scenario: no_stacks, stacks_1, "
						"stacks_16 or stacks_64, not \"%s\"\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evring-bench-stacks: unexpected argument \"%s\"\n", argv[optind]);
		return 2;
	}
	/* How many frames the whole chain has: one depth-64 event, counted by its reader. */
	{
		struct evr_session_opts so = { .providers = "BenchStacks", .stack_depth = 64,
					       .ring_size = 1u << 20 };
		struct evr_session *s;
		struct evr_reader *r;
		struct evr_record rec;
		char err[256];

		if (evr_session_start(&so, &s, err, sizeof(err)) < 0 ||
		    evr_session_reader_new(s, EVR_READER_GATING, &r) < 0)
			return 1;
		writer(RECURSE, 1);
		evr_session_stop(s);
		while (evr_reader_next(r, &rec) > 0)
			if (rec.type == EVR_REC_EVENT && (rec.flags & EVR_REC_F_STACK))
				memcpy(&frames64, rec.payload, 2);
		evr_reader_free(r);
		evr_session_free(s);
	}
	for (int k = 0; k < NSC; k++)
		frames[k] = sc[k].depth == 64 ? frames64 : sc[k].depth;
	/* Interleaved, so that machine noise hits every scenario alike; the ratio to
	 * no_stacks is taken within each round. */
	for (int i = 0; i < runs; i++)
		for (int k = 0; k < NSC; k++) {
			struct times t;

			if (only >= 0 && k != only)
				continue;
			t = run(sc[k].depth, events, frames[k]);
			cpu[k][i] = t.cpu_ns;
			wall[k][i] = t.wall_ns;
			if (only < 0)
				ratio[k][i] = cpu[k][i] / cpu[0][i];
		}
	for (int k = 0; k < NSC; k++) {
		double mc, mw, mr;

		if (only >= 0 && k != only)
			continue;
		mc = median(cpu[k], runs);
		mw = median(wall[k], runs);
		mr = only < 0 ? median(ratio[k], runs) : 0;
		if (json)
			printf("{\"scenario\":\"%s\",\"frames\":%u,\"runs\":%d,\"events\":%" PRIu64
			       ",\"cpu_ns_per_event\":%.2f,\"wall_ns_per_event\":%.2f"
			       ",\"cpu_ratio_to_no_stacks\":%.3f}\n",
			       sc[k].name, frames[k], runs, events, mc, mw, mr);
		else if (only >= 0)
			printf("%-10s %3u frames  %8.2f ns/event CPU  %8.2f wall  (median of %d runs "
			       "of %" PRIu64 ")\n", sc[k].name, frames[k], mc, mw, runs, events);
		else
			printf("%-10s %3u frames  %8.2f ns/event CPU  %8.2f wall  x%.2f of no_stacks "
			       "(%+.2f ns; median of %d runs of %" PRIu64 ")\n", sc[k].name,
			       frames[k], mc, mw, mr, mc - median(cpu[0], runs),
			       runs, events);
	}
	return 0;
}
