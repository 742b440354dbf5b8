// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Counter samples: the built-in Counter* events of <evring/counters.h> as a
 * struct. The events are recognised by schema (name and field list), not by
 * registry id, so a sample reads the same from a live session and from a trace
 * file written by another build.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <evring/abi.h>
#include <evring/counter-sample.h>

struct kind_desc {
	const char *event;
	uint32_t kind;
	uint32_t nfields;
	const char *const *fields;	/* after name, display_name, unit, interval_ms */
};

static const char *const mean_fields[] = { "count", "mean", "min", "max", "stddev" };
static const char *const rate_fields[] = { "increment", "rate_per_s" };
static const char *const gauge_fields[] = { "value" };
static const char *const hist_fields[] = { "count", "sum", "p50", "p90", "p99" };

#define KD(ev, k, f) { ev, k, sizeof(f) / sizeof(f[0]), f }
static const struct kind_desc kinds[] = {
	KD("CounterMean", EVR_SAMPLE_MEAN, mean_fields),
	KD("CounterRate", EVR_SAMPLE_RATE, rate_fields),
	KD("CounterGauge", EVR_SAMPLE_GAUGE, gauge_fields),
	KD("CounterHistogram", EVR_SAMPLE_HISTOGRAM, hist_fields),
};
#undef KD

static const char *const head_names[] = { "name", "display_name", "unit", "interval_ms" };
static const uint32_t head_types[] = { EVR_FT_STR, EVR_FT_STR, EVR_FT_STR, EVR_FT_U32 };

/* Does @ev have the head fields then @kd's fields, with the documented types? */
static bool schema_matches(const struct evr_schema_event *ev, const struct kind_desc *kd)
{
	if (ev->nfields != 4 + kd->nfields)
		return false;
	for (uint32_t i = 0; i < 4; i++)
		if (strcmp(ev->fields[i].name, head_names[i]) || ev->fields[i].type != head_types[i])
			return false;
	for (uint32_t i = 0; i < kd->nfields; i++) {
		const struct evr_schema_field *f = &ev->fields[4 + i];
		uint32_t want = strcmp(kd->fields[i], "count") ? EVR_FT_F64 : EVR_FT_U64;

		if (strcmp(f->name, kd->fields[i]) || f->type != want)
			return false;
	}
	return true;
}

int evr_counter_sample_from_view(const struct evr_event_view *v, struct evr_counter_sample *ret)
{
	struct evr_field_value vals[9];
	const struct kind_desc *kd = NULL;
	struct evr_counter_sample s;
	const struct evr_schema_event *ev;
	int n;

	if (!v || v->type != EVR_REC_EVENT || !(ev = v->schema))
		return 0;
	if (strncmp(ev->name, "Counter", 7))
		return 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(ev->name, kinds[i].event))
			kd = &kinds[i];
	if (!kd)
		return 0;
	if (!schema_matches(ev, kd))
		return -EBADMSG;
	n = evr_decode_fields(ev, v->payload, v->len, vals);
	if (n != (int)ev->nfields)
		return -EBADMSG;

	memset(&s, 0, sizeof(s));
	s.kind = kd->kind;
	s.provider = ev->provider;
	s.name = vals[0].b.data;
	s.name_len = vals[0].b.len;
	s.display_name = vals[1].b.len ? vals[1].b.data : vals[0].b.data;
	s.display_name_len = vals[1].b.len ? vals[1].b.len : vals[0].b.len;
	s.unit = vals[2].b.data;
	s.unit_len = vals[2].b.len;
	s.interval_ms = (uint32_t)vals[3].u;
	s.ts_ns = v->ts_ns;
	switch (kd->kind) {
	case EVR_SAMPLE_MEAN:
		s.count = vals[4].u;
		s.mean = vals[5].f;
		s.min = vals[6].f;
		s.max = vals[7].f;
		s.stddev = vals[8].f;
		s.value = s.count ? s.mean : 0;
		break;
	case EVR_SAMPLE_RATE:
		s.increment = vals[4].f;
		s.rate_per_s = vals[5].f;
		s.value = s.rate_per_s;
		break;
	case EVR_SAMPLE_GAUGE:
		s.value = vals[4].f;
		break;
	case EVR_SAMPLE_HISTOGRAM:
		s.count = vals[4].u;
		s.sum = vals[5].f;
		s.p50 = vals[6].f;
		s.p90 = vals[7].f;
		s.p99 = vals[8].f;
		s.value = s.count ? s.p50 : 0;
		break;
	}
	*ret = s;
	return 1;
}

const char *evr_sample_kind_name(uint32_t kind)
{
	switch (kind) {
	case EVR_SAMPLE_MEAN:
		return "mean";
	case EVR_SAMPLE_RATE:
		return "rate";
	case EVR_SAMPLE_GAUGE:
		return "gauge";
	case EVR_SAMPLE_HISTOGRAM:
		return "histogram";
	default:
		return "?";
	}
}
