/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CLOCK_MONOTONIC now, in nanoseconds: the one helper of every consumer room
 * (deadlines, intervals, ages; the client, the recorder, the tools), and
 * evr_clock_ns() for the other clocks (CPU time). Inline, so that a room needs
 * only this folder on its include path, not another library.
 */
#ifndef EVR_MONO_TIME_H
#define EVR_MONO_TIME_H

#include <stdint.h>
#include <time.h>

/* clock_gettime(@id) in nanoseconds; 0 where the clock is refused. */
static inline uint64_t evr_clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Context: any thread; never fails (CLOCK_MONOTONIC is always there). */
static inline uint64_t evr_mono_ns(void)
{
	return evr_clock_ns(CLOCK_MONOTONIC);
}

#endif /* EVR_MONO_TIME_H */
