// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The producer of the clock accuracy test: THREADS threads write, for SECONDS
 * seconds, bursts of ClockTest/Stamp events whose payload carries the thread's
 * own clock_gettime(CLOCK_MONOTONIC) readings: `before`, read just before the
 * event was written, and `prev_after`, read just after the thread's previous
 * event returned. An event's converted timestamp must therefore lie in
 * [before, next event's prev_after] (clock-check verifies it), however the
 * thread was preempted in between. Usage: clock-stamps SECONDS THREADS
 * Prints "done N" (events written) when every thread has finished.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <evring/evring.h>

#define CLOCKTEST_EVENTS(EVENT)                                                            \
	EVENT(ct_stamp, "Stamp", 1, EVR_LEVEL_INFO, 0x1, (u32, thread), (u64, seq),         \
	      (u64, before), (u64, prev_after))

EVR_PROVIDER_DECLARE(clocktest, CLOCKTEST_EVENTS)
EVR_PROVIDER_DEFINE(clocktest, "ClockTest", CLOCKTEST_EVENTS)

#define BURST 8
#define PAUSE_NS 300000L

static uint64_t seconds;

static uint64_t mono(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *writer(void *arg)
{
	uint32_t thread = (uint32_t)(uintptr_t)arg;
	uint64_t end = mono() + seconds * 1000000000u, seq = 0, prev_after = 0;

	while (mono() < end) {
		struct timespec d = { .tv_nsec = PAUSE_NS };

		for (int i = 0; i < BURST; i++) {
			uint64_t before = mono();

			ct_stamp(thread, seq++, before, prev_after);
			prev_after = mono();
		}
		nanosleep(&d, NULL);
	}
	/* The last Stamp's upper bound. */
	ct_stamp(thread, seq++, mono(), prev_after);
	return (void *)(uintptr_t)seq;
}

int main(int argc, char **argv)
{
	pthread_t t[16];
	uint64_t total = 0;
	int n;

	if (argc != 3 || (seconds = strtoull(argv[1], NULL, 10)) == 0 ||
	    (n = atoi(argv[2])) < 1 || n > 16) {
		fprintf(stderr, "usage: clock-stamps SECONDS THREADS(1-16)\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, writer, (void *)(uintptr_t)i);
	for (int i = 0; i < n; i++) {
		void *r;

		pthread_join(t[i], &r);
		total += (uintptr_t)r;
	}
	printf("done %" PRIu64 "\n", total);
	return 0;
}
