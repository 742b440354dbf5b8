// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: raw timestamps to CLOCK_MONOTONIC through the file's SYNC
 * points (format: docs/trace-format.md, "Clock sync points").
 *
 * Within a segment (points between two EVR_SYNC_DISCONT), a raw timestamp t
 * with pts[i].ts <= t < pts[i+1].ts converts with the line through points i
 * and i+1; before the first point and after the last one of a segment the
 * nearest line is extended. One line per interval, not one per file: a
 * calibration taken once drifts by tens of microseconds an hour on a VM
 * (0.27 ppm measured), sync points every second keep the error at the
 * sampling window's (tens of ns).
 *
 * Across a discontinuity (the TSC jumped: snapshot restore, migration) raw
 * values of the old and the new segment may overlap, so the raw value alone
 * cannot say which line applies. Each point also carries every ring's
 * published head, read just before the clocks: a record at ring position p
 * was published before point j if p < heads[j]. Per ring, records before the
 * last point A of a segment use its line, records after the first point B of
 * the next one use the new line, and records published between A and B (the
 * ambiguous window, at most one sync interval) take whichever line puts them
 * inside [A, B], else a time inside it by position; they are counted as
 * approximate. After a backward jump the writers' per-ring clamp holds a
 * ring's timestamps at its old maximum until the TSC catches up: those
 * records cannot carry their real time, so they are placed inside the
 * interval their position says they were published in, and counted too.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <evring/clock-sync.h>

#include "trace-clock.h"
#include "trace-state.h"

int evr_trace_clock_add(struct evr_trace_clock *k, const uint8_t *data, uint32_t len)
{
	uint32_t n = (len - (uint32_t)sizeof(struct evr_trace_sync)) / 8u;

	if (n != k->nr_rings)
		return -EBADMSG;
	if (k->npts == k->cap) {
		uint32_t cap = k->cap ? k->cap * 2 : 64;
		struct evr_trace_sync *p;
		uint64_t *h;

		if (cap < k->cap)
			return -ENOMEM;
		p = reallocarray(k->pts, cap, sizeof(*p));
		if (!p)
			return -ENOMEM;
		k->pts = p;
		h = reallocarray(k->heads, (size_t)cap * (n ? n : 1), sizeof(*h));
		if (!h)
			return -ENOMEM;
		k->heads = h;
		k->cap = cap;
	}
	memcpy(&k->pts[k->npts], data, sizeof(struct evr_trace_sync));
	memcpy(&k->heads[(size_t)k->npts * n], data + sizeof(struct evr_trace_sync), (size_t)n * 8u);
	k->npts++;
	return 0;
}

void evr_trace_clock_free(struct evr_trace_clock *k)
{
	free(k->pts);
	free(k->heads);
	free(k->lines);
	free(k->seg_first);
	memset(k, 0, sizeof(*k));
}

/* A point's line with the session calibration's slope (a segment of one point). */
static void line_session(const struct evr_trace_sync *p, const struct evr_clock_calib *session,
			 struct evr_clock_calib *ret)
{
	*ret = *session;
	ret->ts_base = p->ts;
	ret->mono_base = p->mono_ns;
}

int evr_trace_clock_build(struct evr_trace_clock *k, const struct evr_clock_calib *session)
{
	uint32_t n = k->npts, nseg = 0;

	k->piecewise = false;
	/* A stream's reader builds again as points arrive. */
	free(k->lines);
	free(k->seg_first);
	k->lines = NULL;
	k->seg_first = NULL;
	k->forced = 0;
	if (session->kind != EVR_CLOCK_TSC || n == 0) {
		/* MONOTONIC timestamps are nanoseconds already. */
		if (!k->keep_heads) {
			free(k->heads);
			k->heads = NULL;
		}
		return 0;
	}
	k->lines = calloc(n, sizeof(*k->lines));
	k->seg_first = calloc((size_t)n + 1, sizeof(*k->seg_first));
	if (!k->lines || !k->seg_first)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_trace_sync *p = &k->pts[i];
		bool start = i == 0 || (p->flags & EVR_SYNC_DISCONT);

		/* Within a segment the clocks only go forward; a file that says
		 * otherwise gets a segment boundary rather than a negative slope. */
		if (!start && (p->ts <= k->pts[i - 1].ts || p->mono_ns < k->pts[i - 1].mono_ns)) {
			start = true;
			k->forced++;
		}
		if (start)
			k->seg_first[nseg++] = i;
	}
	k->seg_first[nseg] = n;
	k->nseg = nseg;
	for (uint32_t s = 0; s < nseg; s++) {
		uint32_t a = k->seg_first[s], b = k->seg_first[s + 1];

		if (b - a == 1) {
			line_session(&k->pts[a], session, &k->lines[a]);
			continue;
		}
		for (uint32_t i = a; i + 1 < b; i++)
			evr_trace_line_through(k->pts[i].ts, k->pts[i].mono_ns, k->pts[i + 1].ts,
				     k->pts[i + 1].mono_ns, &k->lines[i]);
		k->lines[b - 1] = k->lines[b - 2];	/* extended past the last point */
	}
	k->piecewise = true;
	return 0;
}

/* The point of segment @s whose line converts @ts: the last one at or below it. */
static uint32_t seg_point(const struct evr_trace_clock *k, uint32_t s, uint64_t ts)
{
	uint32_t lo = k->seg_first[s], hi = k->seg_first[s + 1];

	if (ts < k->pts[lo].ts)
		return lo;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (k->pts[mid].ts <= ts)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

static uint64_t seg_convert(const struct evr_trace_clock *k, uint32_t s, uint64_t ts,
			    uint32_t *ret_pt)
{
	uint32_t i = seg_point(k, s, ts);

	if (ret_pt)
		*ret_pt = i;
	return evr_clock_to_mono_ns(&k->lines[i], ts);
}

static uint64_t head_of(const struct evr_trace_clock *k, uint32_t pt, uint32_t ring)
{
	return k->heads[(size_t)pt * k->nr_rings + ring];
}

/*
 * The times between which the record at @pos of @ring was published: after
 * the last point whose head had not reached it, before the first that had.
 */
static void pos_window(const struct evr_trace_clock *k, uint32_t ring, uint64_t pos,
		       uint64_t *ret_lo, uint64_t *ret_hi)
{
	uint32_t lo = 0, hi = k->npts;

	/* The first point whose head is past @pos (heads only grow in a recording). */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (head_of(k, mid, ring) <= pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	*ret_lo = lo ? k->pts[lo - 1].mono_ns : 0;
	*ret_hi = lo < k->npts ? k->pts[lo].mono_ns : UINT64_MAX;
}

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

uint64_t evr_trace_clock_convert(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				 uint64_t ts)
{
	const struct evr_trace_clock *k = &r->clk;
	struct evr_trace_ring_clock *c = &r->rings[ring].clk;
	uint64_t m;

	if (k->nseg == 1)
		return seg_convert(k, 0, ts, &c->pt);
	/* Segments this record was published after the start of. */
	while (c->seg + 1 < k->nseg && pos >= head_of(k, k->seg_first[c->seg + 1], ring)) {
		const struct evr_trace_sync *b = &k->pts[k->seg_first[c->seg + 1]];

		c->seg++;
		c->held = (b->flags & EVR_SYNC_BACKWARDS) && c->maxraw > b->ts ? c->maxraw : 0;
		c->held_known = false;
	}
	if (c->seg + 1 < k->nseg) {
		uint32_t bi = k->seg_first[c->seg + 1], ai = bi - 1;

		if (pos >= head_of(k, ai, ring)) {
			/* Published between the segment's last point A and the next
			 * segment's first point B: the jump happened in there. */
			uint64_t a = k->pts[ai].mono_ns, b = k->pts[bi].mono_ns;

			r->approx_ts++;
			if (ts > c->maxraw)
				c->maxraw = ts;
			m = seg_convert(k, c->seg, ts, &c->pt);
			if (m >= a && m <= b)
				return m;
			m = seg_convert(k, c->seg + 1, ts, NULL);
			return clamp_u64(m, a, b);
		}
	}
	if (c->held && ts >= c->held) {
		/* The clamp repeats one value; anything above it is the new clock. */
		if (!c->held_known) {
			c->held = ts;
			c->held_known = true;
		}
		if (ts == c->held) {
			uint64_t lo, hi;

			/*
			 * Held since the jump: the new line puts it where the TSC
			 * caught up, no earlier than it was written. Inside the
			 * interval its position says it was published in, that is
			 * the best guess; past it, the interval's start (a lower
			 * bound, and the records after the catch-up stay later).
			 */
			r->approx_ts++;
			pos_window(k, ring, pos, &lo, &hi);
			m = seg_convert(k, c->seg, ts, &c->pt);
			return m >= lo && m <= hi ? m : lo;
		}
		c->held = 0;
	}
	if (ts > c->maxraw)
		c->maxraw = ts;
	return seg_convert(k, c->seg, ts, &c->pt);
}

void evr_trace_clock_check_slow(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				uint64_t ts)
{
	struct evr_trace_clock *k = &r->clk;
	struct evr_trace_ring_clock *c = &r->rings[ring].clk;
	const struct evr_trace_sync *p;

	/* A value the writers' clamp holds after a backward jump is no reading. */
	if (!k->piecewise || (c->held && ts >= c->held))
		return;
	while (c->chk < k->npts && head_of(k, c->chk, ring) <= pos)
		c->chk++;
	if (c->chk == k->npts)
		return;
	p = &k->pts[c->chk];
	/*
	 * The writer read its TSC before it published the record, the recorder
	 * read the head (acquire) before its TSC: in one TSC domain, ts < p->ts.
	 * Across a jump the domains differ: a segment's first point proves nothing.
	 */
	if (ts <= p->ts || c->chk == 0 || k->seg_first[0] == c->chk)
		return;
	for (uint32_t s = 1; s < k->nseg; s++)
		if (k->seg_first[s] == c->chk)
			return;
	if (ts - p->ts > k->late_ticks) {
		k->late_ticks = ts - p->ts;
		k->late_ring = ring;
		k->late_pt = c->chk;
	}
}

int evr_trace_reader_clock_jump(const struct evr_trace_reader *r, uint32_t i,
				struct evr_trace_clock_jump *ret)
{
	const struct evr_trace_clock *k;
	const struct evr_trace_sync *b;
	uint32_t bi;

	if (!r || !ret)
		return -EINVAL;
	k = &r->clk;
	if (!k->piecewise || i + 1 >= k->nseg)
		return -ENOENT;
	bi = k->seg_first[i + 1];
	b = &k->pts[bi];
	*ret = (struct evr_trace_clock_jump){
		.before_mono_ns = k->pts[bi - 1].mono_ns,
		.after_mono_ns = b->mono_ns,
		.step_ns = (int64_t)(seg_convert(k, i, b->ts, NULL) - b->mono_ns),
		.flags = b->flags,
	};
	return 0;
}
