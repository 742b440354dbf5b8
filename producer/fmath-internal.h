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

/* 2 / k for k = 23, 21, ..., 1: the series of evr_log_pos(), highest term first. */
static const double evr_log_coef[] = {
	2.0 / 23, 2.0 / 21, 2.0 / 19, 2.0 / 17, 2.0 / 15, 2.0 / 13,
	2.0 / 11, 2.0 / 9,  2.0 / 7,  2.0 / 5,  2.0 / 3,  2.0 / 1,
};

/* 1 / k! for k = 0 .. 18 (each k! exact in a double: 18! < 2^53). */
static const double evr_inv_fact[] = {
	1.0,
	1.0,
	1.0 / 2,
	1.0 / 6,
	1.0 / 24,
	1.0 / 120,
	1.0 / 720,
	1.0 / 5040,
	1.0 / 40320,
	1.0 / 362880,
	1.0 / 3628800,
	1.0 / 39916800,
	1.0 / 479001600,
	1.0 / 6227020800.0,
	1.0 / 87178291200.0,
	1.0 / 1307674368000.0,
	1.0 / 20922789888000.0,
	1.0 / 355687428096000.0,
	1.0 / 6402373705728000.0,
};

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
	/* The coefficients folded by the compiler (each what 2.0 / k rounds to): a division
	 * in the loop cost the sampled path of heap.c more than all the rest of the draw. */
	for (unsigned int i = 0; i < sizeof(evr_log_coef) / sizeof(evr_log_coef[0]); i++)
		sum = sum * s2 + evr_log_coef[i];
	return (double)e * EVR_LN2_HI + (s * sum + (double)e * EVR_LN2_LO);
}

/*
 * evr_expm1_neg() - e^@x - 1 for a finite @x <= 0.
 *
 * Near 0 the Taylor series itself (no cancellation); below -1/2, e^x by
 * x = k ln2 + r, |r| <= ln2/2, and 1 subtracted from a value under 0.61; below
 * -40, e^x is under half an ulp of 1: -1. Multiplications and additions only,
 * the coefficients constants: heap.c weighs every sample with it, and a
 * division in each step of the series made that the most expensive part of
 * the sampled path.
 */
static inline double evr_expm1_neg(double x)
{
	double r, p, q, x2, x8;
	int k;

	if (x >= -0.5) {
		/*
		 * sum of x^i / i!, i = 1 .. 18 (0.5^18 / 18! < 1e-21), as
		 * x + x^2 (P(x) + x^8 Q(x)), P the terms 2 .. 9 and Q 10 .. 18: two
		 * Horner chains of half the length, which the processor runs side by
		 * side, and x added last, exactly as it is (within 1 ulp of libm,
		 * as the series with a division in each step was).
		 */
		p = evr_inv_fact[9];
		q = evr_inv_fact[18];
		for (int i = 8; i >= 2; i--)
			p = p * x + evr_inv_fact[i];
		for (int i = 17; i >= 10; i--)
			q = q * x + evr_inv_fact[i];
		x2 = x * x;
		x8 = x2 * x2;
		x8 *= x8;
		return x + x2 * (p + x8 * q);
	}
	if (x < -40.0)
		return -1.0;
	k = (int)(x * 1.44269504088896340736 - 0.5);
	r = (x - k * EVR_LN2_HI) - k * EVR_LN2_LO;
	/* |r| <= 0.35: 0.35^17 / 17! < 1e-22. */
	p = evr_inv_fact[17];
	for (int i = 16; i >= 0; i--)
		p = p * r + evr_inv_fact[i];
	return p * evr_pow2i(k) - 1.0;
}

#endif
