// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A program that spends most of its CPU time in one known function, for the CPU
 * sampling tests: spin_hot() (about 90% of the work) and spin_cold() (about
 * 10%), both called from spin_work(), ROUNDS times: a fixed amount of work, so
 * that the number of samples depends on the CPU time it gets, not on how busy
 * the machine is. A second thread sleeps and wakes (context switches). It links
 * libevring so that `evring record` can attach, and fires one Spin/Round event
 * per round. At the end it prints its CPU time, user and system: "rounds N cpu_ms M".
 * Usage: stacks-spin [ROUNDS]   (default 400, about 1.5 s of CPU here)
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
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
	uint64_t rounds = argc > 1 ? strtoull(argv[1], NULL, 10) : 400;
	struct rusage ru;
	pthread_t t;

	if (pthread_create(&t, NULL, napper, NULL) != 0)
		return 1;
	for (uint64_t round = 0; round < rounds; round++)
		spin_work(round);
	done = 1;
	pthread_join(t, NULL);
	getrusage(RUSAGE_SELF, &ru);
	/* User and system time: sampling interrupts are charged to the process too. */
	printf("rounds %llu cpu_ms %llu\n", (unsigned long long)rounds,
	       (unsigned long long)((ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
				    (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000));
	return 0;
}
