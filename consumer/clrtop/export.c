// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Recorded samples, one csv row or JSON object per counter and interval, like
 * `dotnet-counters collect`: the columns a spreadsheet or jq needs without
 * knowing evring (timestamp, pid, provider, counter, display name, unit, kind,
 * value) and the kind's own statistics.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clrtop.h"

int evr_top_export_format_parse(const char *s)
{
	if (s && !strcmp(s, "csv"))
		return EVR_TOP_EXPORT_CSV;
	if (s && !strcmp(s, "json"))
		return EVR_TOP_EXPORT_JSON;
	return -EINVAL;
}

void evr_top_fmt_iso8601(char *buf, size_t len, uint64_t realtime_ns)
{
	time_t t = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;
	int n;

	if (!gmtime_r(&t, &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	n = snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900,
		     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		     (unsigned int)(realtime_ns % 1000000000u / 1000u));
	if ((n < 0 || (size_t)n >= len) && len)
		buf[0] = '\0';	/* a cut timestamp would mislead; callers pass 40 */
}

static const char csv_cols[] =
	"timestamp,pid,provider,counter,display_name,unit,kind,interval_ms,value,"
	"count,mean,min,max,stddev,increment,rate_per_s,sum,p50,p90,p99\n";

int evr_top_csv_header(struct evr_strbuf *out)
{
	return evr_strbuf_append(out, csv_cols, sizeof(csv_cols) - 1);
}

/* A csv field, quoted when it holds a separator, a quote or a line break. */
static int csv_str(struct evr_strbuf *out, const char *s, size_t n)
{
	bool quote = false;
	int r = 0;

	for (size_t i = 0; i < n; i++)
		if (s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r')
			quote = true;
	if (!quote)
		return evr_strbuf_append(out, s, n);
	r = evr_strbuf_append(out, "\"", 1);
	for (size_t i = 0; i < n && r == 0; i++)
		r = s[i] == '"' ? evr_strbuf_append(out, "\"\"", 2) : evr_strbuf_append(out, &s[i], 1);
	return r ? r : evr_strbuf_append(out, "\"", 1);
}

/* A number: %.15g shows what was measured without binary noise; NaN and
 * infinities have no csv or JSON spelling: empty, and null. */
static int num(struct evr_strbuf *out, enum evr_top_export_format fmt, double v)
{
	if (!isfinite(v))
		return fmt == EVR_TOP_EXPORT_JSON ? evr_strbuf_append(out, "null", 4) : 0;
	return evr_strbuf_printf(out, "%.15g", v);
}

struct stat_field {
	const char *name;
	uint32_t kind;		/* the only kind that has it */
	size_t off;
	bool is_count;
};

#define SF(n, k, f, c) { n, k, offsetof(struct evr_counter_sample, f), c }
static const struct stat_field stats[] = {
	SF("count", 0, count, true),
	SF("mean", EVR_SAMPLE_MEAN, mean, false),
	SF("min", EVR_SAMPLE_MEAN, min, false),
	SF("max", EVR_SAMPLE_MEAN, max, false),
	SF("stddev", EVR_SAMPLE_MEAN, stddev, false),
	SF("increment", EVR_SAMPLE_RATE, increment, false),
	SF("rate_per_s", EVR_SAMPLE_RATE, rate_per_s, false),
	SF("sum", EVR_SAMPLE_HISTOGRAM, sum, false),
	SF("p50", EVR_SAMPLE_HISTOGRAM, p50, false),
	SF("p90", EVR_SAMPLE_HISTOGRAM, p90, false),
	SF("p99", EVR_SAMPLE_HISTOGRAM, p99, false),
};
#undef SF

/* count belongs to MEAN and HISTOGRAM samples. */
static bool has_stat(const struct stat_field *f, uint32_t kind)
{
	if (f->is_count)
		return kind == EVR_SAMPLE_MEAN || kind == EVR_SAMPLE_HISTOGRAM;
	return f->kind == kind;
}

int evr_top_sample_line(struct evr_strbuf *out, enum evr_top_export_format fmt, uint64_t realtime_ns,
		   pid_t pid, const struct evr_counter_sample *s)
{
	const char *prov = s->provider ? s->provider : "";
	const char *kind = evr_sample_kind_name(s->kind);
	char ts[40];
	int r;

	evr_top_fmt_iso8601(ts, sizeof(ts), realtime_ns);
	if (fmt == EVR_TOP_EXPORT_CSV) {
		r = evr_strbuf_printf(out, "%s,%d,", ts, (int)pid);
		r = r ?: csv_str(out, prov, strlen(prov));
		r = r ?: evr_strbuf_append(out, ",", 1);
		r = r ?: csv_str(out, s->name, s->name_len);
		r = r ?: evr_strbuf_append(out, ",", 1);
		r = r ?: csv_str(out, s->display_name, s->display_name_len);
		r = r ?: evr_strbuf_append(out, ",", 1);
		r = r ?: csv_str(out, s->unit, s->unit_len);
		r = r ?: evr_strbuf_printf(out, ",%s,%u,", kind, s->interval_ms);
		r = r ?: num(out, fmt, s->value);
		for (size_t i = 0; r == 0 && i < sizeof(stats) / sizeof(stats[0]); i++) {
			r = evr_strbuf_append(out, ",", 1);
			if (r == 0 && has_stat(&stats[i], s->kind))
				r = stats[i].is_count
					    ? evr_strbuf_printf(out, "%llu",
								(unsigned long long)s->count)
					    : num(out, fmt,
						  *(const double *)((const char *)s + stats[i].off));
		}
		return r ?: evr_strbuf_append(out, "\n", 1);
	}
	r = evr_strbuf_printf(out, "{\"timestamp\":\"%s\",\"pid\":%d,\"provider\":", ts, (int)pid);
	r = r ?: evr_strbuf_json_string(out, prov, strlen(prov));
	r = r ?: evr_strbuf_append(out, ",\"counter\":", 11);
	r = r ?: evr_strbuf_json_string(out, s->name, s->name_len);
	r = r ?: evr_strbuf_append(out, ",\"display_name\":", 16);
	r = r ?: evr_strbuf_json_string(out, s->display_name, s->display_name_len);
	r = r ?: evr_strbuf_append(out, ",\"unit\":", 8);
	r = r ?: evr_strbuf_json_string(out, s->unit, s->unit_len);
	r = r ?: evr_strbuf_printf(out, ",\"kind\":\"%s\",\"interval_ms\":%u,\"value\":", kind,
				   s->interval_ms);
	r = r ?: num(out, fmt, s->value);
	for (size_t i = 0; r == 0 && i < sizeof(stats) / sizeof(stats[0]); i++) {
		if (!has_stat(&stats[i], s->kind))
			continue;
		r = evr_strbuf_printf(out, ",\"%s\":", stats[i].name);
		if (r == 0)
			r = stats[i].is_count
				    ? evr_strbuf_printf(out, "%llu", (unsigned long long)s->count)
				    : num(out, fmt, *(const double *)((const char *)s + stats[i].off));
	}
	return r ?: evr_strbuf_append(out, "}\n", 2);
}
