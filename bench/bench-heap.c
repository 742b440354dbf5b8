// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring-bench-heap: what the Heap provider costs an allocation-heavy loop
 * (scripts/bench-heap, docs/memory.md). THREADS threads each make PAIRS
 * malloc/free pairs of random sizes from 16 B to 4 KiB (a free of the block
 * allocated 64 pairs earlier, then a malloc), under one of:
 *   none:    no session ever started (the hooks were never put in);
 *   session: an in-process session on, which does not enable Heap;
 *   heap:    a session enabling Heap at RATE (default 512 KiB), with stacks.
 * Prints the nanoseconds of thread CPU time per pair, the mean over threads.
 *
 * Usage: evring-bench-heap none|session|heap [THREADS] [PAIRS] [RATE]
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evring/evring.h>

#define LIVE 64

static long pairs;
static double ns_sum;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static double thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void *loop(void *arg)
{
	uint64_t x = (uintptr_t)arg * 0x9e3779b97f4a7c15ull + 1;
	void *live[LIVE] = { 0 };
	double t0 = thread_ns(), t;

	for (long i = 0; i < pairs; i++) {
		size_t n;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		n = 16 + (size_t)(x % 4081);
		free(live[i % LIVE]);
		live[i % LIVE] = malloc(n);
		/* Used, as a program would: the compiler may not drop the pair. */
		*(volatile char *)live[i % LIVE] = (char)i;
	}
	t = thread_ns() - t0;
	for (int i = 0; i < LIVE; i++)
		free(live[i]);
	pthread_mutex_lock(&lock);
	ns_sum += t;
	pthread_mutex_unlock(&lock);
	return NULL;
}

/* One phase: THREADS threads of PAIRS pairs under @mode. Return: ns of thread CPU time
 * per pair (the mean over threads), or a negative number when the session failed. */
static double phase(const char *mode, int threads, unsigned long rate)
{
	struct evr_session *s = NULL;
	pthread_t t[64];
	char spec[128], err[256];

	ns_sum = 0;
	if (strcmp(mode, "none")) {
		struct evr_session_opts o = { .providers = spec };

		/* "session": a provider this program does not have, so nothing is enabled. */
		snprintf(spec, sizeof(spec), strcmp(mode, "heap") ? "Nothing" :
			 "Heap:0x0:0:stacks=1;rate=%lu", rate);
		if (evr_session_start(&o, &s, err, sizeof(err)) < 0) {
			fprintf(stderr, "evring-bench-heap: %s\n", err);
			return -1;
		}
	}
	for (int i = 0; i < threads; i++)
		if (pthread_create(&t[i], NULL, loop, (void *)(uintptr_t)(i + 1)))
			return -1;
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (s) {
		evr_session_stop(s);
		evr_session_free(s);
	}
	return ns_sum / threads / (double)pairs;
}

int main(int argc, char **argv)
{
	static const char *const modes[] = { "none", "session", "heap" };
	const char *mode = argc > 1 ? argv[1] : "";
	int threads = argc > 2 ? atoi(argv[2]) : 1;
	unsigned long rate = argc > 4 ? strtoul(argv[4], NULL, 10) : 512 * 1024;
	int rounds = argc > 5 ? atoi(argv[5]) : 10;
	bool alt = !strcmp(mode, "alt");
	double ns;

	pairs = argc > 3 ? atol(argv[3]) : 10000000;
	if ((strcmp(mode, "none") && strcmp(mode, "session") && strcmp(mode, "heap") && !alt) ||
	    threads < 1 || threads > 64 || pairs < 1 || !rate || rounds < 1) {
		fprintf(stderr, "usage: evring-bench-heap none|session|heap|alt [THREADS] [PAIRS] "
			"[RATE] [ROUNDS]\n");
		return 2;
	}
	if (!alt) {
		if ((ns = phase(mode, threads, rate)) < 0)
			return 1;
		printf("%s threads=%d pairs=%ld ns/pair=%.2f\n", mode, threads, pairs, ns);
		return 0;
	}
	/*
	 * alt: ROUNDS rounds of none, session, heap, PAIRS / ROUNDS pairs each, in one
	 * process, so that the three see the same machine within seconds of each other
	 * (a shared machine's load drifts more between runs than the effect measured).
	 * "none" comes first in the first round, before any session; later, the hooks
	 * were in and went out, which leaves the allocator's path as it was (the GOT
	 * restored).
	 */
	pairs = pairs / rounds > 0 ? pairs / rounds : 1;
	for (int r = 0; r < rounds; r++) {
		double v[3];

		/* Each round in another order (after the first), so that no mode is always
		 * the one that follows another's session. */
		for (int k = 0; k < 3; k++) {
			int m = (k + r) % 3;

			if ((v[m] = phase(modes[m], threads, rate)) < 0)
				return 1;
		}
		printf("round=%d threads=%d pairs=%ld", r, threads, pairs);
		for (int m = 0; m < 3; m++)
			printf(" %s=%.2f", modes[m], v[m]);
		printf("\n");
		fflush(stdout);
	}
	return 0;
}
