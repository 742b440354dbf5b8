// SPDX-License-Identifier: LGPL-2.1-or-later
/* Option value parsers and output helpers of the evring command (consumer/evring/util.c). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cli.h"

static void test_evr_parse_duration_units(void **state)
{
	static const struct {
		const char *s;
		uint64_t ns;
	} ok[] = {
		{ "500ms", 500000000u }, { "30s", 30000000000u }, { "5m", 300000000000u },
		{ "1h", 3600000000000u }, { "2", 2000000000u }, { "1.5s", 1500000000u },
		{ "250us", 250000u }, { "10ns", 10u }, { "2min", 120000000000u },
		/* dotnet-trace's dd:hh:mm:ss and TimeSpan's hh:mm:ss */
		{ "00:00:00:05", 5000000000u }, { "00:01:30", 90000000000u },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		assert_int_equal(evr_parse_duration("test", "--duration", ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].ns);
	}
}

static void test_evr_parse_duration_invalid(void **state)
{
	static const char *const bad[] = { "", "5x", "-1s", "+1s", "inf", "nan", "0", "0s", "1e3",
					   "0x10", "s", " 1s", "1 s", "1.5.2s", "1S", "00:00:00",
					   "00:60:00", "1:2:3:4:5" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_parse_duration("test", "--duration", bad[i], &v), -EINVAL);
		assert_int_equal(v, 42);	/* untouched on failure */
	}
}

static void test_evr_parse_size_units(void **state)
{
	static const struct {
		const char *s;
		uint64_t b;
	} ok[] = {
		{ "4096", 4096 }, { "64K", 65536 }, { "64k", 65536 }, { "64M", 64u << 20 },
		{ "1G", 1u << 30 }, { "1GiB", 1u << 30 }, { "2MB", 2u << 20 }, { "1.5M", 3u << 19 },
		{ "100b", 100 },
	};
	uint64_t v;

	(void)state;
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		v = 0;
		assert_int_equal(evr_parse_size("test", "--buffer-size", ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].b);
	}
}

static void test_evr_parse_size_invalid(void **state)
{
	static const char *const bad[] = { "", "lots", "-1M", "0", "0.1", "1T", "M", "1MM",
					   "99999999999G" };
	uint64_t v = 42;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(evr_parse_size("test", "--buffer-size", bad[i], &v), -EINVAL);
		assert_int_equal(v, 42);
	}
}

static void test_evr_fmt_bytes_units(void **state)
{
	char b[32];

	(void)state;
	assert_string_equal(evr_fmt_bytes(0, b, sizeof(b)), "0 B");
	assert_string_equal(evr_fmt_bytes(1023, b, sizeof(b)), "1023 B");
	assert_string_equal(evr_fmt_bytes(1536, b, sizeof(b)), "1.5 KiB");
	assert_string_equal(evr_fmt_bytes(64u << 20, b, sizeof(b)), "64.0 MiB");
	assert_string_equal(evr_fmt_count(987, b, sizeof(b)), "987");
	assert_string_equal(evr_fmt_count(1250000, b, sizeof(b)), "1.25 M");
}

static char *json_of(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	evr_json_fputs(f, s);
	fclose(f);
	return buf;
}

static void test_evr_json_fputs_escapes(void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "plain", "\"plain\"" },
		{ "a\"b\\c", "\"a\\\"b\\\\c\"" },
		{ "l1\nl2\tx\x01\x7f", "\"l1\\nl2\\tx\\u0001\\u007f\"" },
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		/* invalid UTF-8: a lone continuation, a truncated sequence, an overlong form,
		 * a surrogate */
		{ "a\x80z", "\"a\\ufffdz\"" },
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" },
		{ "", "\"\"" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_of(cases[i].in);

		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void test_evr_cli_exit_status_mapping(void **state)
{
	(void)state;
	assert_int_equal(evr_cli_exit_status(0), EVR_EXIT_OK);
	assert_int_equal(evr_cli_exit_status(1), EVR_EXIT_OK);
	assert_int_equal(evr_cli_exit_status(-EINVAL), EVR_EXIT_USAGE);
	assert_int_equal(evr_cli_exit_status(-ENOENT), EVR_EXIT_FAILURE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_evr_parse_duration_units),
		cmocka_unit_test(test_evr_parse_duration_invalid),
		cmocka_unit_test(test_evr_parse_size_units),
		cmocka_unit_test(test_evr_parse_size_invalid),
		cmocka_unit_test(test_evr_fmt_bytes_units),
		cmocka_unit_test(test_evr_json_fputs_escapes),
		cmocka_unit_test(test_evr_cli_exit_status_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
