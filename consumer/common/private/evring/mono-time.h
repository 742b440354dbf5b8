/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CLOCK_MONOTONIC now, in nanoseconds: the one helper of every consumer room
 * (deadlines, intervals, ages; the client, the recorder, the tools). Inline, so
 * that a room needs only this folder on its include path, not another library.
 */
#ifndef EVR_MONO_TIME_H
#define EVR_MONO_TIME_H

#include <stdint.h>
#include <time.h>

/* Context: any thread; never fails (CLOCK_MONOTONIC is always there). */
static inline uint64_t evr_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* EVR_MONO_TIME_H */
