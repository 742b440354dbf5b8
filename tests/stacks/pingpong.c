// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Two threads that pass a byte back and forth over two pipes N times, both on
 * one CPU, for the context-switch test of `record --sample-cpu --system`: on
 * one CPU each round trip needs the CPU to go from one thread to the other and
 * back, so each thread is switched out at least N times. It links libevring
 * so that `evring record -- stacks-pingpong N` can launch it, and fires
 * Pingpong/Done at the end. Prints "threads TID_A TID_B rounds N".
 * Usage: stacks-pingpong [N]   (default 2000)
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <evring/evring.h>

#define PP_EVENTS(EVENT) EVENT(pp_done, "Done", 1, EVR_LEVEL_INFO, 0x1, (u64, rounds))

EVR_PROVIDER_DECLARE(pp, PP_EVENTS)
EVR_PROVIDER_DEFINE(pp, "Pingpong", PP_EVENTS)

static int to_b[2], to_a[2];
static unsigned long rounds = 2000;
static pid_t tid_b;

static void *thread_b(void *arg)
{
	char c;

	(void)arg;
	tid_b = gettid();
	for (unsigned long i = 0; i < rounds; i++) {
		if (read(to_b[0], &c, 1) != 1 || write(to_a[1], &c, 1) != 1)
			exit(1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	cpu_set_t one;
	pthread_t b;
	char c = 'x';
	int cpu;

	if (argc > 1)
		rounds = strtoul(argv[1], NULL, 10);
	/* Both threads on the CPU we run on now: the pair shares it, as the test needs. */
	cpu = sched_getcpu();
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) < 0 || pipe(to_b) < 0 || pipe(to_a) < 0 ||
	    pthread_create(&b, NULL, thread_b, NULL) != 0) {
		perror("stacks-pingpong");
		return 1;
	}
	for (unsigned long i = 0; i < rounds; i++) {
		if (write(to_b[1], &c, 1) != 1 || read(to_a[0], &c, 1) != 1)
			return 1;
	}
	pthread_join(b, NULL);
	pp_done(rounds);
	printf("threads %d %d rounds %lu\n", (int)gettid(), (int)tid_b, rounds);
	return 0;
}
