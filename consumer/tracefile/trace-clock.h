/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The trace reader's clock: SYNC points to a piecewise-linear map (trace-clock.c). */
#ifndef EVR_TRACE_CLOCK_H
#define EVR_TRACE_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include <evring/trace.h>

/*
 * Raw timestamps to CLOCK_MONOTONIC (trace-clock.c). Without SYNC points (older
 * files, MONOTONIC sessions) the session's calibration converts everything.
 * With them, points are grouped into segments (a new one at each
 * EVR_SYNC_DISCONT) and each point carries the line to the next point of its
 * segment, so that a record converts with the line of the interval its raw
 * timestamp falls in: a piecewise-linear map, continuous within a segment.
 */
struct evr_trace_clock {
	struct evr_trace_sync *pts;	/* in file order */
	uint64_t *heads;		/* npts x nr_rings: published heads at each point */
	uint32_t npts, cap;
	uint32_t nr_rings;
	/* evr_trace_clock_build(), after the scan. */
	bool piecewise;			/* convert through the points */
	struct evr_clock_calib *lines;	/* per point: its interval's line (see build) */
	uint32_t *seg_first;		/* nseg + 1: each segment's first point, then npts */
	uint32_t nseg;
	uint32_t forced;		/* points out of order, made segment starts */
	/* The largest excess of a record's timestamp over a sync point taken after
	 * the record was published (evr_trace_clock_check()), and where. */
	uint64_t late_ticks;
	uint32_t late_ring, late_pt;
	bool keep_heads;		/* a stream: build() runs again as points arrive */
};

/* A ring's place in the clock's segments, carried from record to record. */
struct evr_trace_ring_clock {
	uint32_t seg;			/* segment of the ring's records so far */
	uint32_t pt;			/* point whose line converted the last record */
	uint64_t maxraw;		/* largest raw timestamp seen on the ring */
	uint64_t held;			/* after the clock went back: the raw value the writer's
					 * clamp holds the ring's timestamps at, 0 none */
	bool held_known;		/* held is the value seen, not just the old maximum */
	uint32_t chk;			/* the first point whose head is past the last record */
};

struct evr_trace_reader;

/* Keep a SYNC chunk's point and heads (@len checked by the scan). Return: 0, -ENOMEM. */
int evr_trace_clock_add(struct evr_trace_clock *k, const uint8_t *data, uint32_t len);

/* After the scan: the segments and lines. Return: 0, -ENOMEM. */
int evr_trace_clock_build(struct evr_trace_clock *k, const struct evr_clock_calib *session);

void evr_trace_clock_free(struct evr_trace_clock *k);

/* The general case of evr_trace_ts_ns(). */
uint64_t evr_trace_clock_convert(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				 uint64_t ts);

/*
 * Cross-CPU check of the record at @pos of @ring: published before the next
 * sync point was taken, its timestamp must not exceed the point's, or the
 * writer's CPU and the recorder's disagree (the largest excess is kept).
 * Called after the record was converted (which knows about held values).
 */
void evr_trace_clock_check_slow(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				uint64_t ts);

#endif /* EVR_TRACE_CLOCK_H */
