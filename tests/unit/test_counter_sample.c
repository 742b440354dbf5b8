// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for evr_counter_sample_from_view(): each Counter* event becomes
 * the right sample, other events are not samples, and a Counter* event with
 * other fields or a short payload is refused rather than misread.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <evring/abi.h>
#include <evring/counter-sample.h>

#include "payload_build.h"

#define HEAD { "name", EVR_FT_STR }, { "display_name", EVR_FT_STR }, { "unit", EVR_FT_STR }, \
	     { "interval_ms", EVR_FT_U32 }

static const struct evr_schema_field mean_f[] = {
	HEAD, { "count", EVR_FT_U64 }, { "mean", EVR_FT_F64 }, { "min", EVR_FT_F64 },
	{ "max", EVR_FT_F64 }, { "stddev", EVR_FT_F64 },
};
static const struct evr_schema_field rate_f[] = {
	HEAD, { "increment", EVR_FT_F64 }, { "rate_per_s", EVR_FT_F64 },
};
static const struct evr_schema_field gauge_f[] = { HEAD, { "value", EVR_FT_F64 } };
static const struct evr_schema_field hist_f[] = {
	HEAD, { "count", EVR_FT_U64 }, { "sum", EVR_FT_F64 }, { "p50", EVR_FT_F64 },
	{ "p90", EVR_FT_F64 }, { "p99", EVR_FT_F64 },
};
/* A CounterGauge whose value is a u64: another schema, not a sample to misread. */
static const struct evr_schema_field bad_gauge_f[] = { HEAD, { "value", EVR_FT_U64 } };

#define EV(n, f) { .rid = 1, .provider = "System.Runtime", .name = n, \
		   .nfields = sizeof(f) / sizeof(f[0]), .fields = f }
static const struct evr_schema_event mean_ev = EV("CounterMean", mean_f);
static const struct evr_schema_event rate_ev = EV("CounterRate", rate_f);
static const struct evr_schema_event gauge_ev = EV("CounterGauge", gauge_f);
static const struct evr_schema_event hist_ev = EV("CounterHistogram", hist_f);
static const struct evr_schema_event bad_gauge_ev = EV("CounterGauge", bad_gauge_f);
static const struct evr_schema_event other_ev = EV("CounterSomethingElse", gauge_f);

static void head(struct pbuf *p, const char *name, const char *display, const char *unit)
{
	p->n = 0;
	put_blob(p, name, (uint32_t)strlen(name));
	put_blob(p, display, (uint32_t)strlen(display));
	put_blob(p, unit, (uint32_t)strlen(unit));
	put_le(p, 250, 4);
}

static struct evr_event_view view(const struct evr_schema_event *ev, const struct pbuf *p)
{
	return (struct evr_event_view){ .type = EVR_REC_EVENT, .rid = 1, .schema = ev,
					.ts_ns = 123456789, .payload = p->b, .len = p->n };
}

static void test_sample_mean(void **state)
{
	struct evr_counter_sample s;
	struct evr_event_view v;
	struct pbuf p;

	(void)state;
	head(&p, "lat", "Latency", "us");
	put_le(&p, 4, 8);
	put_f64(&p, 2.5);
	put_f64(&p, 1.0);
	put_f64(&p, 4.0);
	put_f64(&p, 1.25);
	v = view(&mean_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 1);
	assert_int_equal(s.kind, EVR_SAMPLE_MEAN);
	assert_string_equal(s.provider, "System.Runtime");
	assert_int_equal(s.name_len, 3);
	assert_memory_equal(s.name, "lat", 3);
	assert_int_equal(s.display_name_len, 7);
	assert_memory_equal(s.display_name, "Latency", 7);
	assert_memory_equal(s.unit, "us", 2);
	assert_int_equal(s.interval_ms, 250);
	assert_true(s.ts_ns == 123456789);
	assert_true(s.count == 4 && s.mean == 2.5 && s.min == 1.0 && s.max == 4.0);
	assert_true(s.stddev == 1.25 && s.value == 2.5);
	assert_string_equal(evr_sample_kind_name(s.kind), "mean");

	/* No value in the interval: the value is 0, not a stale mean. */
	head(&p, "lat", "", "us");
	put_le(&p, 0, 8);
	for (int i = 0; i < 4; i++)
		put_f64(&p, 9.0);
	v = view(&mean_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 1);
	assert_true(s.value == 0);
	/* An empty display name falls back on the name. */
	assert_int_equal(s.display_name_len, 3);
	assert_memory_equal(s.display_name, "lat", 3);
}

static void test_sample_rate_gauge_histogram(void **state)
{
	struct evr_counter_sample s;
	struct evr_event_view v;
	struct pbuf p;

	(void)state;
	head(&p, "alloc-rate", "Allocation Rate", "B");
	put_f64(&p, 1000);
	put_f64(&p, 4000);
	v = view(&rate_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 1);
	assert_int_equal(s.kind, EVR_SAMPLE_RATE);
	assert_true(s.increment == 1000 && s.rate_per_s == 4000 && s.value == 4000);

	head(&p, "gc-heap-size", "GC Heap Size", "B");
	put_f64(&p, 1 << 20);
	v = view(&gauge_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 1);
	assert_int_equal(s.kind, EVR_SAMPLE_GAUGE);
	assert_true(s.value == 1 << 20);

	head(&p, "req", "Request time", "ms");
	put_le(&p, 10, 8);
	put_f64(&p, 55);
	put_f64(&p, 5);
	put_f64(&p, 9);
	put_f64(&p, 10);
	v = view(&hist_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 1);
	assert_int_equal(s.kind, EVR_SAMPLE_HISTOGRAM);
	assert_true(s.count == 10 && s.sum == 55 && s.p50 == 5 && s.p90 == 9 && s.p99 == 10);
	assert_true(s.value == 5);
	assert_string_equal(evr_sample_kind_name(99), "?");
}

static void test_sample_refusals(void **state)
{
	struct evr_counter_sample s, before;
	struct evr_event_view v;
	struct pbuf p;

	(void)state;
	memset(&before, 0x5a, sizeof(before));
	s = before;
	head(&p, "x", "X", "");
	put_le(&p, 7, 8);
	/* Same name, other field types. */
	v = view(&bad_gauge_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), -EBADMSG);
	/* Not a counter event at all, and no schema. */
	v = view(&other_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 0);
	v.schema = NULL;
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 0);
	/* A LOST view. */
	v = view(&gauge_ev, &p);
	v.type = EVR_REC_LOST;
	assert_int_equal(evr_counter_sample_from_view(&v, &s), 0);
	/* The right schema with a payload one byte short, and one byte long. */
	head(&p, "x", "X", "");
	put_f64(&p, 1.0);
	v = view(&gauge_ev, &p);
	v.len--;
	assert_int_equal(evr_counter_sample_from_view(&v, &s), -EBADMSG);
	put_le(&p, 0, 1);
	v = view(&gauge_ev, &p);
	assert_int_equal(evr_counter_sample_from_view(&v, &s), -EBADMSG);
	assert_int_equal(evr_counter_sample_from_view(NULL, &s), 0);
	assert_memory_equal(&s, &before, sizeof(s));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_mean),
		cmocka_unit_test(test_sample_rate_gauge_histogram),
		cmocka_unit_test(test_sample_refusals),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
