/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The few libm functions libevring needs, from their bits and short series, so
 * that libevring does not load libm: every library loaded at start is paid by a
 * program nobody traces at every start (an open, five mmaps, and libm's ifunc
 * resolvers and its page faults; docs/protocol.md, "What a program pays at
 * start-up"). Only the domains libevring calls them on are covered; each is
 * within a few ulp of libm's there (tests/unit/test_fmath.c compares them).
 */
#ifndef EVR_FMATH_INTERNAL_H
#define EVR_FMATH_INTERNAL_H

#include <stdint.h>

/* ln 2 in two parts: @k * hi is exact for |k| < 2^11 (hi has 11 trailing zero bits). */
#define EVR_LN2_HI 6.93147180369123816490e-01
#define EVR_LN2_LO 1.90821492927058770002e-10

/* 2^@e for @e in [-1022, 1023], what ldexp(1, e) is, built from its bits. */
static inline double evr_pow2i(int e)
{
	union {
		uint64_t u;
		double d;
	} v = { .u = (uint64_t)(e + 1023) << 52 };

	return v.d;
}

/*
 * evr_log_pos() - ln(@x) for a normal, finite @x > 0 (no subnormals, no 0,
 * infinities or NaNs: the callers' arguments never are).
 *
 * @x = m * 2^e with m in [sqrt(1/2), sqrt(2)); ln(m) = 2 atanh(s), s = (m-1)/(m+1),
 * |s| <= 0.1716, whose odd series to s^23 leaves under 1e-17 relative.
 */
static inline double evr_log_pos(double x)
{
	union {
		double d;
		uint64_t u;
	} v = { .d = x };
	int e = (int)((v.u >> 52) & 0x7ff) - 1023;
	double m, s, s2, sum = 0;

	v.u = (v.u & 0x000fffffffffffffull) | 0x3ff0000000000000ull;
	m = v.d;
	if (m > 1.41421356237309504880) {
		m *= 0.5;
		e++;
	}
	s = (m - 1.0) / (m + 1.0);
	s2 = s * s;
	for (int k = 23; k >= 1; k -= 2)
		sum = sum * s2 + 2.0 / k;
	return (double)e * EVR_LN2_HI + (s * sum + (double)e * EVR_LN2_LO);
}

/*
 * evr_expm1_neg() - e^@x - 1 for a finite @x <= 0.
 *
 * Near 0 the Taylor series itself (no cancellation); below -1/2, e^x by
 * x = k ln2 + r, |r| <= ln2/2, and 1 subtracted from a value under 0.61; below
 * -40, e^x is under half an ulp of 1: -1.
 */
static inline double evr_expm1_neg(double x)
{
	double r, p = 0;
	int k;

	if (x >= -0.5) {
		/* x (1 + x/2 (1 + x/3 (...))): 0.5^18 / 18! < 1e-21. */
		for (int i = 18; i >= 1; i--)
			p = (p + 1.0) * x / i;
		return p;
	}
	if (x < -40.0)
		return -1.0;
	k = (int)(x * 1.44269504088896340736 - 0.5);
	r = (x - k * EVR_LN2_HI) - k * EVR_LN2_LO;
	/* |r| <= 0.35: 0.35^17 / 17! < 1e-22. */
	for (int i = 17; i >= 1; i--)
		p = 1.0 + p * r / i;
	return p * evr_pow2i(k) - 1.0;
}

#endif
