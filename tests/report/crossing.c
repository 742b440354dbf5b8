// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A producer whose start/stop pairs cross deeply, for tests/report/crossing.sh:
 * N nested activities (AStart...), N others started inside them (BStart...),
 * then the N activities stopped while the N others are still open (AStop...),
 * then the others stopped (BStop...). 4N events on one thread.
 *   evr-chrome-crossing N
 */
#include <stdio.h>
#include <stdlib.h>

#include <evring/evring.h>

#define CROSS_EVENTS(EVENT)                                                                 \
	EVENT(cross_a_start, "AStart", 1, EVR_START(EVR_LEVEL_INFO), 0x1, (u32, i))         \
	EVENT(cross_a_stop, "AStop", 2, EVR_STOP(EVR_LEVEL_INFO), 0x1, (u32, i))            \
	EVENT(cross_b_start, "BStart", 3, EVR_START(EVR_LEVEL_INFO), 0x1, (u32, i))         \
	EVENT(cross_b_stop, "BStop", 4, EVR_STOP(EVR_LEVEL_INFO), 0x1, (u32, i))
EVR_PROVIDER_DECLARE(cross, CROSS_EVENTS)
EVR_PROVIDER_DEFINE(cross, "Cross", CROSS_EVENTS)

int main(int argc, char **argv)
{
	unsigned int n = argc > 1 ? (unsigned int)strtoul(argv[1], NULL, 10) : 2000;

	for (unsigned int i = 0; i < n; i++)
		cross_a_start(i);
	for (unsigned int i = 0; i < n; i++)
		cross_b_start(i);
	for (unsigned int i = n; i-- > 0;)
		cross_a_stop(i);
	for (unsigned int i = n; i-- > 0;)
		cross_b_stop(i);
	printf("%u events\n", 4 * n);
	return 0;
}
