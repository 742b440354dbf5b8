// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * producer/fmath-internal.h: libevring's own ln, e^x - 1 and 2^e (so that it does
 * not load libm at every start), against libm's over the domains it calls them on:
 * heap.c's uniform draws in (0, 1) and -n/rate for every size and rate.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fmath-internal.h"

/* |got - want| in units of want's last place. */
static double ulps(double got, double want)
{
	double ulp = nextafter(fabs(want), INFINITY) - fabs(want);

	return fabs(got - want) / ulp;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 0x2545f4914f6cdd1dull;
}

static void test_log_uniform_draws(void **state)
{
	double worst = 0, at = 0;

	(void)state;
	/* What heap.c's draw() passes: 53 random bits + 1/2, times 2^-53. */
	for (int i = 0; i < 1000000; i++) {
		double u = ((double)(next() >> 11) + 0.5) * 0x1p-53;
		double d = ulps(evr_log_pos(u), log(u));

		if (d > worst) {
			worst = d;
			at = u;
		}
	}
	/* The extremes of the domain, and values around powers of two and sqrt(2). */
	for (int e = -60; e <= 60; e++) {
		const double m[] = { 1.0, 1.0 + 0x1p-52, 1.41421356237309504880, 1.4142135623730951,
				     1.9999999999999998, 0.7071067811865476 };

		for (size_t j = 0; j < sizeof(m) / sizeof(m[0]); j++) {
			double x = ldexp(m[j], e);
			double want = log(x);

			if (want == 0) {
				assert_true(evr_log_pos(x) == 0);
				continue;
			}
			if (ulps(evr_log_pos(x), want) > worst) {
				worst = ulps(evr_log_pos(x), want);
				at = x;
			}
		}
	}
	if (worst > 4)
		fail_msg("log(%a): %.1f ulp off", at, worst);
	print_message("worst: %.2f ulp at %a\n", worst, at);
}

static void test_expm1_negative(void **state)
{
	double worst = 0, at = 0;

	(void)state;
	/* -n/rate: sizes 1 B to 2^40 B over rates 1 B to 2^30 B, and both sides of -1/2. */
	for (int i = 0; i < 1000000; i++) {
		double n = (double)((next() >> (24 + next() % 40)) + 1);
		double rate = (double)((next() >> (34 + next() % 30)) + 1);
		double x = i % 4 ? -n / rate : -ldexp((double)(next() >> 11), -53) * (i % 8 ? 1 : 80);
		double want = expm1(x), d;

		if (want == 0) {
			assert_true(evr_expm1_neg(x) == 0);
			continue;
		}
		d = ulps(evr_expm1_neg(x), want);
		if (d > worst) {
			worst = d;
			at = x;
		}
	}
	{
		const double edge[] = { -0.5, nextafter(-0.5, 0), nextafter(-0.5, -1), -40.0,
					-40.5, -745.0, -1e300, -0x1p-1000, -1e-17 };

		for (size_t j = 0; j < sizeof(edge) / sizeof(edge[0]); j++) {
			double d = ulps(evr_expm1_neg(edge[j]), expm1(edge[j]));

			if (d > worst) {
				worst = d;
				at = edge[j];
			}
		}
	}
	assert_true(evr_expm1_neg(0.0) == 0.0);
	if (worst > 4)
		fail_msg("expm1(%a): %.1f ulp off", at, worst);
	print_message("worst: %.2f ulp at %a\n", worst, at);
}

static void test_pow2i(void **state)
{
	(void)state;
	for (int e = -1022; e <= 1023; e++)
		if (evr_pow2i(e) != ldexp(1.0, e))
			fail_msg("2^%d: %a, not %a", e, evr_pow2i(e), ldexp(1.0, e));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_uniform_draws),
		cmocka_unit_test(test_expm1_negative),
		cmocka_unit_test(test_pow2i),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
