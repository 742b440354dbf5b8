/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Clock sync points inside libevring-consumer: the live client takes them to
 * follow a TSC session's clock, the trace reader draws its lines through them.
 * The API (evr_clock_sync_*()) is in <evring/trace.h>, with the SYNC chunk.
 */
#ifndef EVR_CLOCK_SYNC_H
#define EVR_CLOCK_SYNC_H

#include <stdint.h>

#include <evring/trace.h>

/* evr_clock_sync_take() without the ring heads: the clocks and the jump flags. */
void evr_clock_sync_point(struct evr_clock_sync_state *st, uint32_t flags,
			  struct evr_trace_sync *ret);

/*
 * The line through (ts0, mono0) and (ts1, mono1), ts1 > ts0, mono1 >= mono0,
 * as a calibration for evr_clock_to_mono_ns(): the largest shift (<= 62) whose
 * multiplier stays below 2^62, so that the product fits 128 bits and an
 * hour-long interval still converts to the nanosecond.
 */
static inline void evr_trace_line_through(uint64_t ts0, uint64_t mono0, uint64_t ts1,
					  uint64_t mono1, struct evr_clock_calib *ret)
{
	unsigned __int128 dm = mono1 - mono0, dt = ts1 - ts0;
	uint32_t shift = 62;

	while (shift > 0 && (dm << shift) / dt >= ((unsigned __int128)1 << 62))
		shift--;
	*ret = (struct evr_clock_calib){
		.kind = EVR_CLOCK_TSC, .shift = shift, .mult = (uint64_t)((dm << shift) / dt),
		.ts_base = ts0, .mono_base = mono0,
	};
}

#endif /* EVR_CLOCK_SYNC_H */
