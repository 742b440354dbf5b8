// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program that spends most of its CPU time in one known function, for the CPU
 * sampling tests: spin_hot() (about 90% of the work) and spin_cold() (about
 * 10%), both called from spin_work(), for SECONDS seconds of wall time; a
 * second thread sleeps and wakes (context switches). It links libevring so
 * that `evring record` can attach, and fires one Spin/Round event per round.
 * Usage: stacks-spin [SECONDS]   (default 2)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <evring/evring.h>

#define SPIN_EVENTS(EVENT) EVENT(spin_round, "Round", 1, EVR_LEVEL_INFO, 0x1, (u64, n))

EVR_PROVIDER_DECLARE(spin, SPIN_EVENTS)
EVR_PROVIDER_DEFINE(spin, "Spin", SPIN_EVENTS)

static volatile uint64_t sink;
static volatile int done;

/* Called at the end of the loops so that they are not leaf functions: gcc 12 omits
 * the frame pointer of leaves even with -mno-omit-leaf-frame-pointer, and the
 * kernel's walk would then lose their caller. */
__attribute__((noinline)) static void spin_touch(void)
{
	sink++;
}

__attribute__((noinline)) static void spin_hot(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink += i * i;
	spin_touch();
}

__attribute__((noinline)) static void spin_cold(uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		sink ^= i;
	spin_touch();
}

__attribute__((noinline)) static void spin_work(uint64_t round)
{
	spin_hot(900000);
	spin_cold(100000);
	spin_round(round);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *napper(void *arg)
{
	struct timespec ts = { 0, 2000000 };

	(void)arg;
	while (!done)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2.0, end = now() + secs;
	uint64_t round = 0;
	pthread_t t;

	if (pthread_create(&t, NULL, napper, NULL) != 0)
		return 1;
	while (now() < end)
		spin_work(round++);
	done = 1;
	pthread_join(t, NULL);
	printf("%llu rounds\n", (unsigned long long)round);
	return 0;
}
