// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The perf events evring names (consumer/symbols/perf-counters.c): the lists
 * --perf-counters and --sample-cpu=EVENT accept, and the Chrome counter
 * tracks of COUNTER records (counters-chrome.c). Counting itself needs the
 * kernel: tests/stacks/perf_counters.sh.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "evr-unit.h"

#include <evring/symbols.h>

static void test_perf_counter_list_parse_names_and_duplicates(void **state)
{
	uint16_t ids[EVR_PERF_COUNTERS_MAX];
	char err[320];

	(void)state;
	assert_int_equal(evr_perf_counter_list_parse("cycles,page-faults,cycles,task-clock", ids,
						     EVR_PERF_COUNTERS_MAX, err, sizeof(err)), 3);
	assert_int_equal(ids[0], EVR_COUNTER_CYCLES);
	assert_int_equal(ids[1], EVR_COUNTER_PAGE_FAULTS);
	assert_int_equal(ids[2], EVR_COUNTER_TASK_CLOCK);
	assert_true(EVR_COUNTER_HARDWARE(ids[0]));
	assert_false(EVR_COUNTER_HARDWARE(ids[1]));
	for (uint16_t id = 0; id < 32; id++) {
		const char *name = evr_perf_counter_name(id);
		uint16_t back;

		if (!name)
			continue;
		assert_int_equal(evr_perf_counter_list_parse(name, &back, 1, err, sizeof(err)), 1);
		assert_int_equal(back, id);
	}
	assert_null(evr_perf_counter_name(0));
	assert_string_equal(evr_perf_counter_name(EVR_COUNTER_CPU_CLOCK), "cpu-clock");
}

static void test_perf_counter_list_parse_rejects(void **state)
{
	uint16_t ids[2];
	char err[320];

	(void)state;
	assert_int_equal(evr_perf_counter_list_parse("cycles,cyclez", ids, 2, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "'cyclez' is no counter known here"));
	assert_int_equal(evr_perf_counter_list_parse("cycles,", ids, 2, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_perf_counter_list_parse("", ids, 2, err, sizeof(err)), -EINVAL);
	assert_int_equal(evr_perf_counter_list_parse("cycles,instructions,branches", ids, 2, err,
						     sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "at most 2 counters"));
}

/* Running totals per (thread, counter), in record order. */
static void test_counters_chrome_totals(void **state)
{
	struct evr_sample_rec v[] = {
		{ .time_ns = 1000, .pid = 7, .tid = 8, .cpu = EVR_COUNTER_PAGE_FAULTS,
		  .type = EVR_SAMPLE_COUNTER, .value = 5 },
		{ .time_ns = 2000, .pid = 7, .tid = 8, .type = EVR_SAMPLE_CPU, .value = 1 },
		{ .time_ns = 3000, .pid = 7, .tid = 9, .cpu = EVR_COUNTER_PAGE_FAULTS,
		  .type = EVR_SAMPLE_COUNTER, .value = 2 },
		{ .time_ns = 4500, .pid = 7, .tid = 8, .cpu = EVR_COUNTER_PAGE_FAULTS,
		  .type = EVR_SAMPLE_COUNTER, .value = 6 },
	};
	struct evr_samples ss = { .n = 4, .v = v };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	long n;

	(void)state;
	assert_non_null(f);
	n = evr_counters_chrome_write(&ss, f, true);
	fclose(f);
	assert_int_equal(n, (long)len);
	assert_int_equal(buf[0], '{');
	assert_non_null(strstr(buf, "\"name\":\"page-faults tid 8\",\"pid\":7,\"tid\":8,"
				    "\"ts\":1.000,\"args\":{\"page-faults\":5}"));
	assert_non_null(strstr(buf, "\"tid\":9,\"ts\":3.000,\"args\":{\"page-faults\":2}"));
	assert_non_null(strstr(buf, "\"tid\":8,\"ts\":4.500,\"args\":{\"page-faults\":11}"));
	assert_null(strstr(buf, "\"ts\":2.000"));
	free(buf);
}

/* What report and record say took the samples (evr_sampler_source()). */
static void test_sampler_source_names_the_tick_period(void **state)
{
	static const struct {
		uint32_t period, hz;
		const char *want;
	} tick[] = {
		{ 1, 250, "timer ticks, every one (250 Hz)" },
		{ 2, 125, "timer ticks, every 2nd (125 Hz)" },
		{ 3, 83, "timer ticks, every 3rd (83 Hz)" },
		{ 4, 63, "timer ticks, every 4th (63 Hz)" },
		{ 11, 91, "timer ticks, every 11th (91 Hz)" },
		{ 12, 83, "timer ticks, every 12th (83 Hz)" },
		{ 21, 48, "timer ticks, every 21st (48 Hz)" },
		{ 4095, 1, "timer ticks, every 4095th (1 Hz)" },
	};
	struct evr_sampler_rec r = { .freq_hz = 999, .event = EVR_COUNTER_CPU_CLOCK };
	char buf[64];

	(void)state;
	assert_string_equal(evr_sampler_source(&r, buf, sizeof(buf)), "cpu-clock, 999 Hz");
	r.event = EVR_COUNTER_CYCLES | EVR_SAMPLER_SYSTEM;
	assert_string_equal(evr_sampler_source(&r, buf, sizeof(buf)), "cycles, 999 Hz");
	for (size_t i = 0; i < sizeof(tick) / sizeof(tick[0]); i++) {
		r.freq_hz = tick[i].hz;
		r.event = EVR_SAMPLER_TIMER_TICK | EVR_SAMPLER_SYSTEM |
			  tick[i].period << EVR_SAMPLER_TICK_SHIFT;
		assert_int_equal(EVR_SAMPLER_EVENT(r.event), EVR_SAMPLER_TIMER_TICK);
		assert_int_equal(EVR_SAMPLER_TICK_PERIOD(r.event), tick[i].period);
		assert_string_equal(evr_sampler_source(&r, buf, sizeof(buf)), tick[i].want);
	}
	/* Not a counter: --perf-counters does not take it, nor does a name map to it. */
	assert_null(evr_perf_counter_name(EVR_SAMPLER_TIMER_TICK));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_perf_counter_list_parse_names_and_duplicates),
		cmocka_unit_test(test_perf_counter_list_parse_rejects),
		cmocka_unit_test(test_counters_chrome_totals),
		cmocka_unit_test(test_sampler_source_names_the_tick_period),
	};

	return evr_unit_run(tests);
}
