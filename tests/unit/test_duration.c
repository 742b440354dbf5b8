// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evr_duration_parse() (<evring/consumer.h>): evring's forms and the dotnet
 * tools' TimeSpan forms, and what neither accepts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <evring/consumer.h>

#define S 1000000000ull

static void ok(const char *s, uint64_t want)
{
	uint64_t ns = 12345;

	if (evr_duration_parse(s, &ns) != 0)
		fail_msg("'%s' does not parse", s);
	if (ns != want)
		fail_msg("'%s' is %llu ns, not %llu", s, (unsigned long long)ns,
			 (unsigned long long)want);
}

static void bad(const char *s, int err)
{
	uint64_t ns = 12345;
	int ret = evr_duration_parse(s, &ns);

	if (ret != err)
		fail_msg("'%s' gives %d, not %d", s, ret, err);
	assert_int_equal(ns, 12345);	/* untouched */
}

static void test_duration_parse_units(void **state)
{
	(void)state;
	ok("10s", 10 * S);
	ok("500ms", 500000000);
	ok("1.5s", 1500000000);
	ok("250us", 250000);
	ok("7ns", 7);
	ok("5m", 300 * S);
	ok("5min", 300 * S);
	ok("2h", 7200 * S);
	ok("2d", 172800 * S);
	ok("30", 30 * S);
	ok("0.5", 500000000);
	ok(".5", 500000000);
	ok("0", 0);
	ok("0.000000001", 1);
}

static void test_duration_parse_dotnet(void **state)
{
	(void)state;
	ok("00:00:30", 30 * S);			/* hh:mm:ss */
	ok("00:00:00:05", 5 * S);		/* dd:hh:mm:ss, as dotnet-trace --duration */
	ok("01:00:00:00", 86400 * S);
	ok("1:30:00", 5400 * S);
	ok("36:00:00", 36 * 3600 * S);		/* hours need no days */
	ok("00:01", 60 * S);			/* hh:mm */
	ok("00:00:01.5", 1500000000);
	ok("00:00:00:00.25", 250000000);
	ok("1.02:03:04", (86400 + 2 * 3600 + 3 * 60 + 4) * S);	/* d.hh:mm:ss */
	ok("1.5:00:00", (86400 + 5 * 3600) * S);
}

static void test_duration_parse_invalid(void **state)
{
	(void)state;
	bad("", -EINVAL);
	bad("s", -EINVAL);
	bad("-1s", -EINVAL);
	bad("+1s", -EINVAL);
	bad(" 1s", -EINVAL);
	bad("1s ", -EINVAL);
	bad("1e3", -EINVAL);
	bad("inf", -EINVAL);
	bad("nan", -EINVAL);
	bad("0x10", -EINVAL);
	bad("1.", -EINVAL);
	bad("10 s", -EINVAL);
	bad("10sec", -EINVAL);
	bad("00:60:00", -EINVAL);		/* minutes below 60 */
	bad("00:00:60", -EINVAL);
	bad("1:24:00:00", -EINVAL);		/* hours below 24 after days */
	bad("1.24:00:00", -EINVAL);
	bad("1:2:3:4:5", -EINVAL);
	bad(":00:01", -EINVAL);
	bad("00::01", -EINVAL);
	bad("00:00:", -EINVAL);
	bad("00:01.5", -EINVAL);		/* no fraction on minutes */
	bad("00:00:01.", -EINVAL);
	bad("1.5:00", -EINVAL);
	bad("99999999999999999999s", -EINVAL);
	bad("999999999999d", -ERANGE);
	bad("99999999:00:00", -ERANGE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duration_parse_units),
		cmocka_unit_test(test_duration_parse_dotnet),
		cmocka_unit_test(test_duration_parse_invalid),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
