// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Clock sync points, the recorder's side (format: docs/trace-format.md).
 *
 * A point pairs the session's raw clock with CLOCK_MONOTONIC (what readers
 * convert to), CLOCK_REALTIME, CLOCK_MONOTONIC_RAW and CLOCK_BOOTTIME at one
 * instant. The TSC counts for the whole machine, so the recorder reads it
 * itself. The raw reading is the middle of the shortest of five
 * rdtsc/clock_gettime(MONOTONIC)/clock_gettime(MONOTONIC_RAW)/rdtsc brackets
 * (about 50 ns wide on a KVM guest), the other clocks are read in a second
 * bracket and moved to that instant with the session's rate (a shift of tens
 * of ns, at most ppm wrong). MONOTONIC_RAW, which jumps are judged against,
 * is read in the first bracket: a recorder preempted between two brackets
 * would otherwise see the TSC jump by the time it was away.
 *
 * Jump detection compares the TSC with CLOCK_MONOTONIC_RAW, not with
 * CLOCK_MONOTONIC: NTP slews MONOTONIC by up to 500 ppm (chrony far more
 * while it corrects an offset), RAW is the clocksource's own count at a fixed
 * rate, so against it the TSC keeps a straight line until a host changes
 * under the guest.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include <evring/clock-sync.h>
#include <evring/shm.h>

#define FIRST_RATE_NS	100000000ull	/* the second point, for a first measured rate */
#define AFTER_JUMP_NS	10000000ull	/* the new segment's second point */
#define JUMP_BASE_NS	2000ull		/* tolerance: sampling windows and rounding */
#define JUMP_PPM	20ull		/* ... plus this much of the time between points */
#define FIRST_PPM	1000ull		/* ... or this much against the session's rate */
#define BRACKETS	5

static uint64_t ns_of(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* rdtsc kept in program order: the clock reads between two of them are inside. */
static inline uint64_t tsc_fenced(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

void evr_clock_sync_init(struct evr_clock_sync_state *st, const struct evr_clock_calib *session)
{
	memset(st, 0, sizeof(*st));
	st->kind = session->kind;
	st->calib = *session;
}

bool evr_clock_sync_due(const struct evr_clock_sync_state *st, uint64_t now_ns)
{
	return !st->have_prev || now_ns >= st->next_ns;
}

static uint64_t abs_diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * How far apart the two points' clock readings may be from where they are
 * said to be: each is within half its bracket of its ts (a bracket made wide
 * by an interrupt or preemption is wide in the point too).
 */
static uint64_t window_ns(const struct evr_clock_sync_state *st, const struct evr_trace_sync *p,
			  const struct evr_trace_sync *q)
{
	struct evr_clock_calib unit = st->calib;

	unit.ts_base = 0;
	unit.mono_base = 0;
	return evr_clock_to_mono_ns(&unit, (uint64_t)p->window + q->window) / 2u;
}

uint32_t evr_clock_sync_classify(struct evr_clock_sync_state *st, struct evr_trace_sync *p)
{
	const struct evr_trace_sync *q = &st->prev;
	uint32_t add = 0;

	if (st->kind == EVR_CLOCK_TSC && st->have_prev) {
		if (p->ts <= q->ts) {
			add = EVR_SYNC_DISCONT | EVR_SYNC_BACKWARDS;
		} else if (st->seg_points >= 2 || st->jumps == 0) {
			/*
			 * The line of the segment's last two points; before there are
			 * two, the session's calibration (against MONOTONIC, so it is
			 * off by NTP's frequency correction: a looser tolerance). Right
			 * after a jump nothing is known of the new rate (a migration may
			 * change the frequency): only going back counts then.
			 */
			struct evr_clock_calib line = st->raw_line;
			uint64_t ppm = JUMP_PPM, pred, dt;

			if (st->seg_points < 2) {
				line = st->calib;
				line.ts_base = q->ts;
				line.mono_base = q->raw_ns;
				ppm = FIRST_PPM;
			}
			pred = evr_clock_to_mono_ns(&line, p->ts);
			dt = p->raw_ns > q->raw_ns ? p->raw_ns - q->raw_ns : 0;
			if (abs_diff(p->raw_ns, pred) > JUMP_BASE_NS + dt / 1000000u * ppm +
							 window_ns(st, p, q)) {
				/* The TSC says less time passed than the raw clock: it went back. */
				add = EVR_SYNC_DISCONT | (p->raw_ns > pred ? EVR_SYNC_BACKWARDS : 0);
			}
		}
	}
	p->flags |= add;
	if (add & EVR_SYNC_DISCONT) {
		st->seg_points = 1;
		st->jumps++;
		st->next_ns = p->mono_ns + AFTER_JUMP_NS;
	} else {
		if (st->have_prev && st->kind == EVR_CLOCK_TSC && p->ts > q->ts &&
		    p->raw_ns >= q->raw_ns)
			evr_trace_line_through(q->ts, q->raw_ns, p->ts, p->raw_ns, &st->raw_line);
		st->seg_points++;
		st->next_ns = p->mono_ns + (st->points == 0 ? FIRST_RATE_NS : EVR_SYNC_INTERVAL_NS);
	}
	st->points++;
	st->prev = *p;
	st->have_prev = true;
	return add;
}

/* Move a reading taken at raw time @at to raw time @to, with the session's rate. */
static uint64_t shift_to(const struct evr_clock_calib *c, uint64_t ns, uint64_t at, uint64_t to)
{
	struct evr_clock_calib line = *c;

	line.ts_base = at;
	line.mono_base = ns;
	return evr_clock_to_mono_ns(&line, to);
}

void evr_clock_sync_point(struct evr_clock_sync_state *st, uint32_t flags,
			  struct evr_trace_sync *ret)
{
	struct evr_trace_sync p = { .flags = flags & EVR_SYNC_FINAL };

	if (st->kind == EVR_CLOCK_TSC) {
		uint64_t best = UINT64_MAX, t2, t3, mid2, real, boot;

		for (int i = 0; i < BRACKETS; i++) {
			uint64_t t0 = tsc_fenced();
			uint64_t mono = ns_of(CLOCK_MONOTONIC);
			uint64_t mraw = ns_of(CLOCK_MONOTONIC_RAW);
			uint64_t t1 = tsc_fenced();

			if (t1 >= t0 && t1 - t0 < best) {
				best = t1 - t0;
				p.ts = t0 + (t1 - t0) / 2;
				p.mono_ns = mono;
				p.raw_ns = mraw;
			}
		}
		if (best == UINT64_MAX) {
			/* The TSC went back under us five times: take the last reading. */
			best = 0;
			p.ts = tsc_fenced();
			p.mono_ns = ns_of(CLOCK_MONOTONIC);
			p.raw_ns = ns_of(CLOCK_MONOTONIC_RAW);
		}
		t2 = tsc_fenced();
		real = ns_of(CLOCK_REALTIME);
		boot = ns_of(CLOCK_BOOTTIME);
		t3 = tsc_fenced();
		mid2 = t3 >= t2 ? t2 + (t3 - t2) / 2 : t2;
		p.real_ns = shift_to(&st->calib, real, mid2, p.ts);
		p.boot_ns = shift_to(&st->calib, boot, mid2, p.ts);
		p.window = best > UINT32_MAX ? UINT32_MAX : (uint32_t)best;
	} else {
		p.mono_ns = ns_of(CLOCK_MONOTONIC);
		p.ts = p.mono_ns;
		p.raw_ns = ns_of(CLOCK_MONOTONIC_RAW);
		p.real_ns = ns_of(CLOCK_REALTIME);
		p.boot_ns = ns_of(CLOCK_BOOTTIME);
	}
	evr_clock_sync_classify(st, &p);
	*ret = p;
}

int evr_clock_sync_take(struct evr_clock_sync_state *st, const struct evr_shm_hdr *shm,
			uint32_t flags, struct evr_trace_sync *ret, uint64_t *ret_heads)
{
	if (!st || !shm || !ret || !ret_heads)
		return -EINVAL;
	/*
	 * Heads first: a record below a head was published, so timestamped,
	 * before the clocks below are read. Pairs with the writers'
	 * store-release of head.
	 */
	(void)evr_shm_read_heads(shm, ret_heads, UINT32_MAX);	/* nr_rings: one look-up less */
	evr_clock_sync_point(st, flags, ret);
	return 0;
}
