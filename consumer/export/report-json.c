// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The report as one JSON object (`evring report --json`, and the monitor's
 * report of a trace): the same numbers as the tables, every string escaped,
 * rates and shares as doubles printed with %.17g so nothing is rounded away;
 * a counter's NaN or infinity (the traced process's numbers) is null.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export-internal.h"

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static double per_s(uint64_t n, uint64_t span_ns)
{
	return (double)n * 1e9 / (double)span_ns;
}

int evr_rpt_json(struct evr_strbuf *sb, const struct evr_rpt *m, const struct evr_trace_reader *r,
		 const char *path)
{
	uint64_t span = evr_rpt_span(m);
	struct evr_strbuf cmd = { 0 };
	char buf[512];
	int err;

	err = evr_strbuf_append(sb, "{\"file\":", 8);
	if (!err)
		err = evr_rpt_json_cstr(sb, path);
	if (!err && m->proc) {
		err = evr_rpt_command(m, &cmd);
		if (!err)
			err = evr_strbuf_printf(sb, ",\"process\":{\"pid\":%" PRIu32 ",\"command\":",
						m->proc->pid);
		if (!err)
			err = evr_strbuf_json_string(sb, cmd.buf ? cmd.buf : "", cmd.len);
		if (!err)
			err = evr_strbuf_append(sb, ",\"host\":", 8);
		if (!err)
			err = evr_rpt_json_cstr(sb, m->proc->hostname ? m->proc->hostname : "");
		if (!err)
			err = evr_strbuf_append(sb, "}", 1);
	}
	free(cmd.buf);
	if (!err)
		err = evr_strbuf_printf(sb, ",\"truncated\":%s,\"first_ts_ns\":%" PRIu64
					",\"last_ts_ns\":%" PRIu64 ",\"span_ns\":%" PRIu64
					",\"events\":%" PRIu64 ",\"events_per_s\":%.17g,\"lost\":%"
					PRIu64 ",\"lost_pct\":%.17g,\"damaged_file\":%s,\"damaged\":%"
					PRIu64 ",\"unchecked_chunks\":%" PRIu64 ",\"undescribed\":%"
					PRIu64 ",\"providers\":[",
					m->st.truncated ? "true" : "false",
					m->first_ts, m->last_ts, m->last_ts - m->first_ts, m->events,
					per_s(m->events, span), m->lost,
					pct(m->lost, m->events + m->lost),
					m->st.damaged ? "true" : "false", m->damaged,
					m->st.unchecked_chunks, m->undecodable);
	for (uint32_t i = 0; i < m->nproviders && !err; i++) {
		err = evr_strbuf_append(sb, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
		if (!err)
			err = evr_rpt_json_cstr(sb, m->providers[i].name);
		if (!err)
			err = evr_strbuf_printf(sb, ",\"events\":%" PRIu64 ",\"per_s\":%.17g,"
						"\"share_pct\":%.17g}", m->providers[i].count,
						per_s(m->providers[i].count, span),
						pct(m->providers[i].count, m->events));
	}
	if (!err)
		err = evr_strbuf_append(sb, "],\"event_types\":[", 17);
	for (uint32_t i = 0; i < m->nevents && !err; i++) {
		const struct evr_rpt_event *e = m->events_v[i];

		err = evr_strbuf_append(sb, i ? ",{\"name\":" : "{\"name\":", i ? 9 : 8);
		if (!err)
			err = evr_rpt_json_cstr(sb, evr_rpt_event_name(m, e, buf, sizeof(buf)));
		if (!err)
			err = evr_strbuf_printf(sb, ",\"rid\":%" PRIu32 ",\"events\":%" PRIu64
						",\"per_s\":%.17g,\"share_pct\":%.17g}", e->rid, e->count,
						per_s(e->count, span), pct(e->count, m->events));
	}
	if (!err)
		err = evr_strbuf_append(sb, "],\"rings\":[", 11);
	for (uint32_t i = 0; i < m->nr_rings && !err; i++)
		err = evr_strbuf_printf(sb, "%s{\"cpu\":%" PRIu32 ",\"events\":%" PRIu64 ",\"lost\":%"
					PRIu64 "}", i ? "," : "", i, m->ring_events[i],
					m->ring_lost[i]);
	if (!err)
		err = evr_strbuf_append(sb, "],\"counters\":[", 14);
	for (uint32_t i = 0; i < m->ncounters && !err; i++) {
		const struct evr_rpt_counter *c = &m->counters[i];

		err = evr_strbuf_append(sb, i ? ",{\"provider\":" : "{\"provider\":", i ? 13 : 12);
		if (!err)
			err = evr_rpt_json_cstr(sb, c->provider);
		if (!err)
			err = evr_strbuf_append(sb, ",\"name\":", 8);
		if (!err)
			err = evr_rpt_json_cstr(sb, c->name);
		if (!err)
			err = evr_strbuf_append(sb, ",\"display_name\":", 16);
		if (!err)
			err = evr_rpt_json_cstr(sb, c->display);
		if (!err)
			err = evr_strbuf_append(sb, ",\"unit\":", 8);
		if (!err)
			err = evr_rpt_json_cstr(sb, c->unit);
		if (!err)
			err = evr_strbuf_printf(sb, ",\"kind\":\"%s\",\"samples\":%" PRIu64,
						evr_sample_kind_name(c->kind), c->samples);
		/* The samples are the traced process's numbers: NaN and infinities
		 * are null (the rates and shares above are always finite). */
		if (!err)
			err = evr_strbuf_append(sb, ",\"min\":", 7);
		if (!err)
			err = evr_rpt_json_double(sb, c->min);
		if (!err)
			err = evr_strbuf_append(sb, ",\"mean\":", 8);
		if (!err)
			err = evr_rpt_json_double(sb, c->sum / (double)c->samples);
		if (!err)
			err = evr_strbuf_append(sb, ",\"max\":", 7);
		if (!err)
			err = evr_rpt_json_double(sb, c->max);
		if (!err)
			err = evr_strbuf_append(sb, ",\"last\":", 8);
		if (!err)
			err = evr_rpt_json_double(sb, c->last);
		if (!err)
			err = evr_strbuf_append(sb, "}", 1);
	}
	if (!err)
		err = evr_strbuf_append(sb, "],\"threads\":[", 13);
	for (uint32_t i = 0; i < m->nthreads && !err; i++) {
		const struct evr_rpt_thread *t = m->threads_v[i];

		err = evr_strbuf_printf(sb, "%s{\"tid\":%" PRIu32 ",\"name\":", i ? "," : "", t->tid);
		if (!err)
			err = evr_rpt_json_cstr(sb, evr_rpt_thread_name(r, t->tid));
		if (!err)
			err = evr_strbuf_printf(sb, ",\"events\":%" PRIu64 ",\"share_pct\":%.17g}",
						t->count, pct(t->count, m->events));
	}
	if (!err)
		err = evr_strbuf_append(sb, "]}\n", 3);
	return err;
}
