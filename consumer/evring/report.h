/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `evring report` and `evring convert --format chrome`: what they share.
 *
 * report-util.c: JSON and HTML string escaping of untrusted bytes, field values
 * as JSON (integers beyond 2^53 as strings), a u32-keyed hash table.
 * report-model.c: one pass over a trace into the numbers a report shows
 * (struct evr_rpt), in bounded memory: per event type, per ring, per thread,
 * per counter, and event rates in at most EVR_RPT_BUCKETS time buckets.
 * report.c prints it as tables or JSON; report-html.c as one HTML page.
 */
#ifndef EVR_REPORT_H
#define EVR_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <evring/counter-sample.h>
#include <evring/schema.h>
#include <evring/trace.h>

/* ---- strings (report-util.c) ---------------------------------------------- */

int evr_rpt_json_cstr(struct evr_strbuf *sb, const char *s);

/*
 * Append @v as a JSON value, as evr_event_to_json() does, except that integers
 * a double cannot hold exactly (beyond +-2^53) are strings, so that JSON
 * readers that parse numbers as doubles (browsers, Perfetto) keep them exact.
 * Return: 0 or -ENOMEM.
 */
int evr_rpt_json_value(struct evr_strbuf *sb, const struct evr_field_value *v);

/*
 * Append the fields of an EVENT view as JSON members (no braces): "name":value,...
 * An undescribed event gives "rid":N,"payload":"HEX"; a payload that does not
 * decode gives "payload":"HEX","error":"...". Sets *@ret_bad for both.
 * Return: 0 or -ENOMEM.
 */
int evr_rpt_json_fields(struct evr_strbuf *sb, const struct evr_event_view *v, bool *ret_bad);

/* Append @n bytes escaped for HTML text and attribute values, invalid UTF-8 replaced. */
int evr_rpt_html_str(struct evr_strbuf *sb, const void *data, size_t n);
int evr_rpt_html_cstr(struct evr_strbuf *sb, const char *s);

/* ---- u32 -> pointer hash (report-util.c) ----------------------------------- */

struct evr_rpt_map {
	uint32_t *keys;
	void **vals;
	uint32_t cap;			/* a power of two, or 0 */
	uint32_t n;
};

/* The value of @key, or NULL. */
void *evr_rpt_map_get(const struct evr_rpt_map *m, uint32_t key);
/* Insert or replace. Return: 0 or -ENOMEM. */
int evr_rpt_map_put(struct evr_rpt_map *m, uint32_t key, void *val);
/* Frees the table, not the values. */
void evr_rpt_map_fini(struct evr_rpt_map *m);

/* ---- the model (report-model.c) -------------------------------------------- */

#define EVR_RPT_BUCKETS 256		/* most time buckets kept for the rate plots */

struct evr_rpt_event {			/* one event type (rid) */
	const struct evr_schema_event *schema;	/* NULL: undescribed */
	uint32_t rid;
	uint32_t provider;		/* index into evr_rpt.providers */
	uint64_t count;
};

struct evr_rpt_provider {
	char *name;
	uint64_t count;
	uint64_t *buckets;		/* EVR_RPT_BUCKETS counts */
};

struct evr_rpt_thread {
	uint32_t tid;
	uint64_t count;
};

struct evr_rpt_point {
	uint64_t ts_ns;
	double value;
};

struct evr_rpt_counter {		/* one counter series: provider + name */
	char *provider, *name, *display, *unit;
	uint32_t kind;			/* enum evr_sample_kind of the first sample */
	uint32_t interval_ms;
	uint64_t samples;
	double min, max, sum, last;	/* of evr_counter_sample.value */
	struct evr_rpt_point *points;	/* at most EVR_RPT_POINTS, thinned evenly */
	uint32_t npoints, stride;	/* every stride-th sample is kept */
};

#define EVR_RPT_POINTS 2048

struct evr_rpt {
	/* the file */
	const struct evr_process_info *proc;	/* NULL: no PROCESS chunk */
	const struct evr_trace_session *sess;	/* NULL: no SESSION chunk */
	struct evr_trace_stats st;
	/* totals */
	uint64_t events, lost, undecodable, bad_samples;
	uint64_t first_ts, last_ts;	/* of all views; 0 if none */
	/* lost per ring, and events per ring */
	uint32_t nr_rings;
	uint64_t *ring_lost, *ring_events;
	/* tables */
	struct evr_rpt_provider *providers;
	uint32_t nproviders;
	struct evr_rpt_event **events_v;	/* every event type seen, in order of first sight */
	uint32_t nevents;
	struct evr_rpt_thread **threads_v;
	uint32_t nthreads;
	struct evr_rpt_counter *counters;
	uint32_t ncounters;
	/* rate buckets: bucket i covers [first_ts + i * bucket_ns, + bucket_ns) */
	uint64_t bucket_ns;
	uint64_t lost_buckets[EVR_RPT_BUCKETS];
	/* lookups */
	struct evr_rpt_map by_rid, by_tid;
};

/*
 * evr_rpt_build() - read every record of @r into @m (zeroed by the caller).
 * Return: 0, or -errno with one line in @err (the reader's error, out of memory).
 */
int evr_rpt_build(struct evr_trace_reader *r, struct evr_rpt *m, char *err, size_t errlen);
void evr_rpt_fini(struct evr_rpt *m);

/* The traced command: argv joined by spaces, or exe, or "?"; into @sb. */
int evr_rpt_command(const struct evr_rpt *m, struct evr_strbuf *sb);

/* Event types, threads and counters sorted for display (count descending...). */
void evr_rpt_sort(struct evr_rpt *m);

/* The span in ns (last - first), at least 1. */
uint64_t evr_rpt_span(const struct evr_rpt *m);

/* ---- output ----------------------------------------------------------------- */

/* report-html.c: the whole page into @out. Return: 0 or -ENOMEM. */
int evr_rpt_html(const struct evr_rpt *m, const struct evr_trace_reader *r, const char *path,
		 struct evr_strbuf *out);

#endif /* EVR_REPORT_H */
