// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * clrtop's core: numbers with units, option values, the --counters filter, the
 * overview's sort order, and the csv/json sample lines (checked field by field
 * and fed random strings that must still give one well-formed line).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "clrtop.h"

static void check_value(double v, const char *unit, uint32_t kind, bool sgn, const char *want)
{
	char buf[64];

	evr_top_fmt_value(buf, sizeof(buf), v, unit, kind, sgn);
	if (strcmp(buf, want))
		fail_msg("value %g %s kind %u: got '%s', want '%s'", v, unit, kind, buf, want);
}

static void test_fmt_number_groups_thousands(void **state)
{
	static const struct { double v; const char *want; } t[] = {
		{ 0, "0" }, { 7, "7" }, { 999, "999" }, { 1000, "1,000" },
		{ 1234567, "1,234,567" }, { -1234567, "-1,234,567" }, { 3.14159, "3.14" },
		{ 12.345, "12.3" }, { 1234.56, "1,234.6" }, { 0.004, "0.00" }, { -0.001, "0.00" },
		{ 2e15, "2e+15" }, { NAN, "-" }, { INFINITY, "-" }, { 9.999, "10.00" },
	};
	char buf[64];

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		evr_top_fmt_number(buf, sizeof(buf), t[i].v);
		if (strcmp(buf, t[i].want))
			fail_msg("%g: got '%s', want '%s'", t[i].v, buf, t[i].want);
	}
}

static void test_fmt_value_units(void **state)
{
	check_value(512, "B", EVR_SAMPLE_GAUGE, false, "512 B");
	check_value(1536, "B", EVR_SAMPLE_GAUGE, false, "1.50 KiB");
	check_value(3.5 * 1048576, "B", EVR_SAMPLE_GAUGE, false, "3.50 MiB");
	check_value(250.0 * 1048576, "B", EVR_SAMPLE_GAUGE, false, "250 MiB");
	check_value(5.0 * 1073741824, "B", EVR_SAMPLE_GAUGE, false, "5.00 GiB");
	check_value(12.5, "MB", EVR_SAMPLE_GAUGE, false, "12.5 MiB");
	check_value(2048, "MB", EVR_SAMPLE_GAUGE, false, "2.00 GiB");
	check_value(1048576, "B", EVR_SAMPLE_RATE, false, "1.00 MiB/s");
	check_value(12.34, "%", EVR_SAMPLE_GAUGE, false, "12.3%");
	check_value(3.5, "%", EVR_SAMPLE_RATE, false, "3.50%");
	check_value(80, "1/s", EVR_SAMPLE_RATE, false, "80/s");
	check_value(20, "", EVR_SAMPLE_RATE, false, "20/s");
	check_value(1234567, "", EVR_SAMPLE_GAUGE, false, "1,234,567");
	check_value(250, "us", EVR_SAMPLE_MEAN, false, "250 us");
	check_value(2500, "us", EVR_SAMPLE_MEAN, false, "2.50 ms");
	check_value(1.5e6, "us", EVR_SAMPLE_MEAN, false, "1.50 s");
	check_value(4000, "s", EVR_SAMPLE_GAUGE, false, "4,000 s");
	check_value(7, "items", EVR_SAMPLE_GAUGE, false, "7 items");
	check_value(NAN, "B", EVR_SAMPLE_GAUGE, false, "-");
}

static void test_fmt_value_signed_changes(void **state)
{
	check_value(1024, "B", EVR_SAMPLE_GAUGE, true, "+1.00 KiB");
	check_value(-2048, "B", EVR_SAMPLE_GAUGE, true, "-2.00 KiB");
	check_value(0, "B", EVR_SAMPLE_GAUGE, true, "0 B");
	check_value(-0.5, "%", EVR_SAMPLE_GAUGE, true, "-0.50%");
	check_value(3, "", EVR_SAMPLE_GAUGE, true, "+3");
	check_value(-0.0001, "", EVR_SAMPLE_GAUGE, true, "0.00");
}

static void test_fmt_value_small_buffer_truncates(void **state)
{
	char buf[4];

	evr_top_fmt_value(buf, sizeof(buf), 123456789, "B", EVR_SAMPLE_GAUGE, false);
	assert_int_equal(strlen(buf), 3);
	evr_top_fmt_number(buf, sizeof(buf), 123456789);
	assert_int_equal(strlen(buf), 3);
}

static void test_parse_seconds_accepts_and_rejects(void **state)
{
	uint32_t ms = 42;

	assert_int_equal(evr_top_parse_seconds("0.5", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 500);
	assert_int_equal(evr_top_parse_seconds("2", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 2000);
	assert_int_equal(evr_top_parse_seconds("1.5s", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 1500);
	assert_int_equal(evr_top_parse_seconds("250ms", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 250);
	/* dotnet-counters users type TimeSpans. */
	assert_int_equal(evr_top_parse_seconds("00:00:01", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 1000);
	assert_int_equal(evr_top_parse_seconds("00:01:00", 10, 3600000, &ms), 0);
	assert_int_equal(ms, 60000);
	ms = 42;
	assert_int_equal(evr_top_parse_seconds("abc", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("1x", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("nan", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds(" 1", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("0", 10, 3600000, &ms), -ERANGE);
	assert_int_equal(evr_top_parse_seconds("-1", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("0.001", 10, 3600000, &ms), -ERANGE);
	assert_int_equal(evr_top_parse_seconds("1e9", 10, 3600000, &ms), -EINVAL);
	assert_int_equal(evr_top_parse_seconds("2:00:00", 10, 3600000, &ms), -ERANGE);
	assert_int_equal(ms, 42);
}

static void test_filter_parse_providers_and_counters(void **state)
{
	struct evr_top_filter f = { 0 };
	char err[128];

	assert_int_equal(evr_top_filter_parse("System.Runtime[gc-heap-size,cpu-usage],Process",
					      &f, err, sizeof(err)), 0);
	assert_int_equal(f.n, 2);
	assert_string_equal(f.v[0].name, "System.Runtime");
	assert_int_equal(f.v[0].ncounters, 2);
	assert_string_equal(f.v[0].counters[0], "gc-heap-size");
	assert_string_equal(f.v[0].counters[1], "cpu-usage");
	assert_string_equal(f.v[1].name, "Process");
	assert_int_equal(f.v[1].ncounters, 0);
	assert_true(evr_top_filter_wants(&f, "System.Runtime", "gc-heap-size", 12));
	assert_false(evr_top_filter_wants(&f, "System.Runtime", "gc-heap", 7));
	assert_false(evr_top_filter_wants(&f, "System.Runtime", "alloc-rate", 10));
	assert_true(evr_top_filter_wants(&f, "Process", "threads", 7));
	assert_false(evr_top_filter_wants(&f, "MiniRT", "x", 1));
	evr_top_filter_fini(&f);
	assert_true(evr_top_filter_wants(&f, "MiniRT", "x", 1));	/* no filter */
}

static void test_filter_parse_rejects_bad_specs(void **state)
{
	static const char *const bad[] = {
		"", ",", "A,", ",A", "A[", "A[x", "A[]", "A[x,]", "A[,x]", "A]", "A[x]y",
		"A:0x1", "A B", "A[x y]", "A[[x]]", "A,,B",
	};
	struct evr_top_filter f = { 0 };
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (evr_top_filter_parse(bad[i], &f, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' was accepted", bad[i]);
		assert_int_equal(f.n, 0);
		assert_non_null(strstr(err, "--counters:"));
	}
}

static void test_provider_spec_counters_only(void **state)
{
	const char *names[] = { "Process", "System.Runtime" };
	char *s = evr_top_provider_spec(names, 2);

	assert_string_equal(s, "Process:0x0:0,System.Runtime:0x0:0");
	free(s);
	s = evr_top_provider_spec(names, 0);
	assert_string_equal(s, "");
	free(s);
}

static struct evr_top_row row(pid_t pid, const char *name, double cpu, bool has_cpu)
{
	struct evr_top_row r = { .pid = pid };

	snprintf(r.name, sizeof(r.name), "%s", name);
	r.has[EVR_TOP_COL_PID] = r.has[EVR_TOP_COL_NAME] = true;
	r.val[EVR_TOP_COL_CPU] = cpu;
	r.has[EVR_TOP_COL_CPU] = has_cpu;
	return r;
}

static void order(const struct evr_top_row *r, size_t n, const pid_t *want)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].pid != want[i])
			fail_msg("position %zu: pid %d, want %d", i, (int)r[i].pid, (int)want[i]);
}

static void test_rows_sort_by_columns(void **state)
{
	struct evr_top_row r[5];

	r[0] = row(30, "b", 5, true);
	r[1] = row(10, "c", 50, true);
	r[2] = row(20, "a", 0, false);
	r[3] = row(40, "a", 5, true);
	r[4] = row(5, "d", 0.5, true);
	evr_top_rows_sort(r, 5, EVR_TOP_COL_CPU, false);
	order(r, 5, (pid_t[]){ 10, 30, 40, 5, 20 });	/* largest first, ties by pid, missing last */
	evr_top_rows_sort(r, 5, EVR_TOP_COL_CPU, true);
	order(r, 5, (pid_t[]){ 5, 30, 40, 10, 20 });	/* missing still last */
	evr_top_rows_sort(r, 5, EVR_TOP_COL_PID, false);
	order(r, 5, (pid_t[]){ 5, 10, 20, 30, 40 });
	evr_top_rows_sort(r, 5, EVR_TOP_COL_PID, true);
	order(r, 5, (pid_t[]){ 40, 30, 20, 10, 5 });
	evr_top_rows_sort(r, 5, EVR_TOP_COL_NAME, false);
	order(r, 5, (pid_t[]){ 20, 40, 30, 10, 5 });
	evr_top_rows_sort(r, 0, EVR_TOP_COL_CPU, false);
	assert_string_equal(evr_top_col_title(EVR_TOP_COL_CPU), "CPU%");
}

static struct evr_counter_sample sample(uint32_t kind)
{
	struct evr_counter_sample s = {
		.kind = kind, .provider = "System.Runtime", .name = "gc-heap-size", .name_len = 12,
		.display_name = "GC Heap Size", .display_name_len = 12, .unit = "MB",
		.unit_len = 2, .interval_ms = 1000, .value = 12.5, .count = 3, .mean = 12.5,
		.min = 1, .max = 20, .stddev = 0.25, .increment = 4, .rate_per_s = 4, .sum = 37.5,
		.p50 = 12.5, .p90 = 19, .p99 = 20,
	};

	return s;
}

/* 2024-01-02T03:04:05.678901Z */
#define TS_NS (1704164645ull * 1000000000ull + 678901234ull)

static void test_csv_lines(void **state)
{
	struct evr_counter_sample s = sample(EVR_SAMPLE_GAUGE);
	struct evr_strbuf sb = { 0 };

	assert_int_equal(evr_top_csv_header(&sb), 0);
	assert_int_equal(evr_top_sample_line(&sb, EVR_TOP_EXPORT_CSV, TS_NS, 42, &s), 0);
	s = sample(EVR_SAMPLE_MEAN);
	assert_int_equal(evr_top_sample_line(&sb, EVR_TOP_EXPORT_CSV, TS_NS, 42, &s), 0);
	s = sample(EVR_SAMPLE_RATE);
	s.display_name = "Heap, \"big\"";
	s.display_name_len = (uint32_t)strlen(s.display_name);
	s.value = NAN;
	assert_int_equal(evr_top_sample_line(&sb, EVR_TOP_EXPORT_CSV, TS_NS, 42, &s), 0);
	s = sample(EVR_SAMPLE_HISTOGRAM);
	assert_int_equal(evr_top_sample_line(&sb, EVR_TOP_EXPORT_CSV, TS_NS, 42, &s), 0);
	assert_string_equal(sb.buf,
		"timestamp,pid,provider,counter,display_name,unit,kind,interval_ms,value,"
		"count,mean,min,max,stddev,increment,rate_per_s,sum,p50,p90,p99\n"
		"2024-01-02T03:04:05.678901Z,42,System.Runtime,gc-heap-size,GC Heap Size,MB,gauge,"
		"1000,12.5,,,,,,,,,,,\n"
		"2024-01-02T03:04:05.678901Z,42,System.Runtime,gc-heap-size,GC Heap Size,MB,mean,"
		"1000,12.5,3,12.5,1,20,0.25,,,,,,\n"
		"2024-01-02T03:04:05.678901Z,42,System.Runtime,gc-heap-size,\"Heap, \"\"big\"\"\",MB,"
		"rate,1000,,,,,,,4,4,,,,\n"
		"2024-01-02T03:04:05.678901Z,42,System.Runtime,gc-heap-size,GC Heap Size,MB,"
		"histogram,1000,12.5,3,,,,,,,37.5,12.5,19,20\n");
	free(sb.buf);
}

static void test_json_lines(void **state)
{
	struct evr_counter_sample s = sample(EVR_SAMPLE_MEAN);
	struct evr_strbuf sb = { 0 };

	s.unit = "\"\\\n";
	s.unit_len = 3;
	s.stddev = INFINITY;
	assert_int_equal(evr_top_sample_line(&sb, EVR_TOP_EXPORT_JSON, TS_NS, 7, &s), 0);
	assert_string_equal(sb.buf,
		"{\"timestamp\":\"2024-01-02T03:04:05.678901Z\",\"pid\":7,"
		"\"provider\":\"System.Runtime\",\"counter\":\"gc-heap-size\","
		"\"display_name\":\"GC Heap Size\",\"unit\":\"\\\"\\\\\\n\",\"kind\":\"mean\","
		"\"interval_ms\":1000,\"value\":12.5,\"count\":3,\"mean\":12.5,\"min\":1,"
		"\"max\":20,\"stddev\":null}\n");
	free(sb.buf);
	assert_int_equal(evr_top_export_format_parse("csv"), EVR_TOP_EXPORT_CSV);
	assert_int_equal(evr_top_export_format_parse("json"), EVR_TOP_EXPORT_JSON);
	assert_int_equal(evr_top_export_format_parse("xml"), -EINVAL);
	assert_int_equal(evr_top_export_format_parse(NULL), -EINVAL);
}

/* Random bytes in every string: each sample is still exactly one line, and a
 * JSON line never holds a raw control character or an unescaped quote. */
static void test_sample_line_random_strings(void **state)
{
	char name[64], disp[64], unit[16];

	srand(1234);
	for (int iter = 0; iter < 2000; iter++) {
		struct evr_counter_sample s = sample((uint32_t)(1 + rand() % 4));
		struct evr_strbuf sb = { 0 };
		enum evr_top_export_format fmt = iter % 2 ? EVR_TOP_EXPORT_JSON : EVR_TOP_EXPORT_CSV;

		s.name_len = (uint32_t)(rand() % (int)sizeof(name));
		s.display_name_len = (uint32_t)(rand() % (int)sizeof(disp));
		s.unit_len = (uint32_t)(rand() % (int)sizeof(unit));
		for (uint32_t i = 0; i < s.name_len; i++)
			name[i] = (char)(rand() % 256);
		for (uint32_t i = 0; i < s.display_name_len; i++)
			disp[i] = (char)(rand() % 256);
		for (uint32_t i = 0; i < s.unit_len; i++)
			unit[i] = (char)(rand() % 256);
		s.name = name;
		s.display_name = disp;
		s.unit = unit;
		assert_int_equal(evr_top_sample_line(&sb, fmt, TS_NS, 1, &s), 0);
		assert_true(sb.len > 0 && sb.buf[sb.len - 1] == '\n');
		if (fmt == EVR_TOP_EXPORT_JSON) {
			for (size_t i = 0; i + 1 < sb.len; i++)
				assert_true((unsigned char)sb.buf[i] >= 0x20);
			assert_true(sb.buf[0] == '{' && sb.buf[sb.len - 2] == '}');
		}
		free(sb.buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fmt_number_groups_thousands),
		cmocka_unit_test(test_fmt_value_units),
		cmocka_unit_test(test_fmt_value_signed_changes),
		cmocka_unit_test(test_fmt_value_small_buffer_truncates),
		cmocka_unit_test(test_parse_seconds_accepts_and_rejects),
		cmocka_unit_test(test_filter_parse_providers_and_counters),
		cmocka_unit_test(test_filter_parse_rejects_bad_specs),
		cmocka_unit_test(test_provider_spec_counters_only),
		cmocka_unit_test(test_rows_sort_by_columns),
		cmocka_unit_test(test_csv_lines),
		cmocka_unit_test(test_json_lines),
		cmocka_unit_test(test_sample_line_random_strings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
