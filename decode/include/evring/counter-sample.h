/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Counter samples on the consumer side: recognise the built-in Counter* events
 * (<evring/counters.h>) among the events of a session or a trace file and turn
 * one into a struct. clrtop, `evring report` and `evring convert` read counters
 * through this one function, so they agree on what a sample means.
 */
#ifndef EVR_COUNTER_SAMPLE_H
#define EVR_COUNTER_SAMPLE_H

#include <stdint.h>

#include <evring/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

enum evr_sample_kind {
	EVR_SAMPLE_MEAN = 1,		/* CounterMean */
	EVR_SAMPLE_RATE,		/* CounterRate: incrementing and polling-rate counters */
	EVR_SAMPLE_GAUGE,		/* CounterGauge */
	EVR_SAMPLE_HISTOGRAM,		/* CounterHistogram */
};

/*
 * One counter's value over one interval of one session. Strings point into the
 * event's payload: borrowed for as long as the view's payload is (until the
 * next read call), not NUL-terminated, hence the lengths.
 */
struct evr_counter_sample {
	uint32_t kind;			/* enum evr_sample_kind */
	const char *provider;		/* the schema's provider name, NUL-terminated */
	const char *name;		/* "gc-heap-size" */
	uint32_t name_len;
	const char *display_name;	/* "GC Heap Size"; the name when the counter has none */
	uint32_t display_name_len;
	const char *unit;		/* "B", "%", "" */
	uint32_t unit_len;
	uint32_t interval_ms;		/* the session's interval */
	uint64_t ts_ns;			/* the view's timestamp: the end of the interval */
	/*
	 * value: the number a person reads first. MEAN: the mean (0 when count is
	 * 0); RATE: rate_per_s; GAUGE: value; HISTOGRAM: p50 (0 when count is 0).
	 */
	double value;
	uint64_t count;			/* MEAN, HISTOGRAM: values recorded in the interval */
	double mean, min, max, stddev;	/* MEAN */
	double increment, rate_per_s;	/* RATE */
	double sum, p50, p90, p99;	/* HISTOGRAM */
};

/**
 * evr_counter_sample_from_view() - is @v a counter sample, and which?
 * @v: an EVENT view with its schema (records without a schema are not samples).
 * @ret: filled when 1 is returned, untouched otherwise.
 *
 * An event is a sample when its schema is one of CounterMean, CounterRate,
 * CounterGauge or CounterHistogram with the fields <evring/counters.h> lists,
 * in that order; any provider may have them.
 * Return: 1 a sample, 0 not a counter event, -EBADMSG a Counter* event whose
 * schema or payload does not have the documented fields.
 * Context: any thread; no allocation.
 */
int evr_counter_sample_from_view(const struct evr_event_view *v, struct evr_counter_sample *ret);

/* "mean", "rate", "gauge", "histogram", or "?" for an unknown kind. */
const char *evr_sample_kind_name(uint32_t kind);

#ifdef __cplusplus
}
#endif

#endif /* EVR_COUNTER_SAMPLE_H */
