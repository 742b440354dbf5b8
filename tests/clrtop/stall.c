// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A producer whose counter samples arrive when the test says, for
 * tests/clrtop/stale.sh: provider "Stall" with two gauges, "steady" (the
 * number of times it was sampled) and "held", whose second sampling blocks the
 * producer's counters thread until a byte arrives on the FIFO named by argv[1].
 * So the second interval is written halfway, or not at all, depending on the
 * order the producer samples them in (the order of registration, reversed with
 * "held-first"): what a loaded machine does by chance.
 *   evr-clrtop-stall FIFO [held-first]    prints "ready PID", runs until killed
 */
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/evring.h>

#define STALL_EVENTS(EVENT) EVENT(stall_nothing, "Nothing", 1, EVR_LEVEL_INFO, 0x1, )
EVR_PROVIDER_DECLARE(stall, STALL_EVENTS)
EVR_PROVIDER_DEFINE(stall, "Stall", STALL_EVENTS)

static int gate = -1;
static unsigned int steady_calls, held_calls;

static double steady(void *ctx)
{
	(void)ctx;
	return ++steady_calls;
}

static double held(void *ctx)
{
	char b;

	(void)ctx;
	if (++held_calls >= 2 && read(gate, &b, 1) < 0)
		perror("evr-clrtop-stall: read");
	return 100.0 * held_calls;
}

int main(int argc, char **argv)
{
	struct evr_counter_desc d1 = { .name = "steady", .display_name = "Steady",
				       .kind = EVR_COUNTER_GAUGE, .poll = steady };
	struct evr_counter_desc d2 = { .name = "held", .display_name = "Held",
				       .kind = EVR_COUNTER_GAUGE, .poll = held };
	struct evr_counter *c1, *c2;
	bool held_first;
	sigset_t none;

	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: evr-clrtop-stall FIFO [held-first]\n");
		return 2;
	}
	held_first = argc == 3 && !strcmp(argv[2], "held-first");
	/* Read-write: the open does not wait for a writer. */
	gate = open(argv[1], O_RDWR | O_CLOEXEC);
	if (gate < 0 || evr_counter_create(&stall, held_first ? &d2 : &d1, &c1) < 0 ||
	    evr_counter_create(&stall, held_first ? &d1 : &d2, &c2) < 0) {
		perror("evr-clrtop-stall");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	sigemptyset(&none);
	for (;;)
		sigsuspend(&none);
}
