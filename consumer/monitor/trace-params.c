// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A trace's parameters, from a query string or a JSON body: what the trace
 * routes (trace.c) accept, and nothing else. Pure (no MHD, no session), so
 * that the fuzz target `monitor_request` drives it as the routes do.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/consumer.h>
#include <evring/export.h>

#include "monitor.h"
#include "trace-internal.h"

#define MAX_BUFFER (1ull << 30)		/* buffer_size: the rings of one trace, in all */
#define CONTROL_BYTES "\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f" \
	"\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f\x7f"

/* Every parameter evr_mon_tparams_set() takes: a trace route's query, a POST's body. */
const char *const evr_mon_trace_params[] = { "providers", "buffer_size", "mode",
					      "counter_interval", "duration", "max_size", "format",
					      "stacks", "sample_cpu", NULL };

/* The monitor's formats beside libevring-export's ids: the one table is evr_export_formats[]. */
static const struct {
	enum evr_mon_format mon;
	enum evr_export_format_id id;
} formats[] = {
	{ EVR_MON_FMT_CHROME, EVR_EXPORT_CHROME }, { EVR_MON_FMT_JSONL, EVR_EXPORT_JSONL },
	{ EVR_MON_FMT_CTF, EVR_EXPORT_CTF }, { EVR_MON_FMT_FOLDED, EVR_EXPORT_FOLDED },
	{ EVR_MON_FMT_SPEEDSCOPE, EVR_EXPORT_SPEEDSCOPE }, { EVR_MON_FMT_PPROF, EVR_EXPORT_PPROF },
};

int evr_mon_format_parse(const char *s, enum evr_mon_format *ret)
{
	const struct evr_export_format *f;

	if (!s || !strcmp(s, "evtrace") || !strcmp(s, "evring")) {
		*ret = EVR_MON_FMT_EVTRACE;
		return 0;
	}
	f = evr_export_format_find(!strcmp(s, "ndjson") ? "jsonl" : s);
	for (size_t i = 0; f && i < sizeof(formats) / sizeof(formats[0]); i++) {
		if (formats[i].id == f->id) {
			*ret = formats[i].mon;
			return 0;
		}
	}
	return -EINVAL;
}

const char *evr_mon_format_name(enum evr_mon_format f)
{
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (formats[i].mon == f)
			return evr_export_format_get(formats[i].id)->name;
	return "evtrace";
}

__attribute__((format(printf, 3, 4)))
static int param_error(char *err, size_t errlen, const char *fmt, ...);

static int param_error(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int set_duration(const char *name, const char *s, uint64_t *ret, char *err,
			size_t errlen)
{
	if (evr_mon_parse_duration(s, ret) < 0)
		return param_error(err, errlen, "%s: not a duration (500ms, 10s, 5m, 1h)", name);
	return 0;
}

int evr_mon_tparams_set(struct evr_mon_tparams *p, const char *key, const char *val, char *err,
			size_t errlen)
{
	uint64_t v;

	if (!strcmp(key, "providers")) {
		if (!*val)
			return param_error(err, errlen, "%s: empty provider list", key);
		p->providers = val;
	} else if (!strcmp(key, "buffer_size")) {
		/* Into @p only once accepted: a refused value leaves nothing behind. */
		if (evr_mon_parse_size(val, &v) < 0)
			return param_error(err, errlen, "%s: not a size (4096, 64K, 16M, 1G)", key);
		if (v > MAX_BUFFER)
			return param_error(err, errlen, "%s: at most 1G (the rings of one trace, in "
					   "all)", key);
		p->buffer_size = v;
	} else if (!strcmp(key, "max_size")) {
		if (evr_mon_parse_size(val, &v) < 0 || v < 4096)
			return param_error(err, errlen, "%s: a size from 4K (4096, 64K, 16M, 1G)",
					   key);
		p->max_size = v;
	} else if (!strcmp(key, "mode")) {
		if (!strcmp(val, "discard"))
			p->mode = EVR_MODE_DISCARD;
		else if (!strcmp(val, "overwrite"))
			p->mode = EVR_MODE_OVERWRITE;
		else
			return param_error(err, errlen, "%s: discard or overwrite", key);
	} else if (!strcmp(key, "counter_interval")) {
		if (set_duration(key, val, &v, err, errlen) < 0)
			return -EINVAL;
		if (v < 10000000ull || v > 3600000000000ull)
			return param_error(err, errlen, "%s: from 10ms to 1h", key);
		p->counter_ms = (uint32_t)(v / 1000000u);
	} else if (!strcmp(key, "duration")) {
		if (set_duration(key, val, &v, err, errlen) < 0)
			return -EINVAL;
		p->duration_ns = v;
	} else if (!strcmp(key, "format")) {
		char names[128];

		if (evr_mon_format_parse(val, &p->format) < 0)
			return param_error(err, errlen, "%s: evtrace or %s", key,
					   evr_export_format_names(names, sizeof(names)));
	} else if (!strcmp(key, "stacks") || !strcmp(key, "sample_cpu")) {
		/* As record's --stacks[=DEPTH] and --sample-cpu[=HZ]: "" or 1 means the default. */
		bool stacks = !strcmp(key, "stacks");
		unsigned long max = stacks ? 127 : 100000, v2 = stacks ? 64 : 999;
		char *end;

		if (*val && strcmp(val, "true")) {
			v2 = strtoul(val, &end, 10);
			if (end == val || *end || *val == '-' || v2 < 1 || v2 > max)
				return param_error(err, errlen, "%s: %s from 1 to %lu (or empty: %s)",
						   key, stacks ? "a depth" : "a rate in Hz", max,
						   stacks ? "64" : "999");
		}
		if (stacks)
			p->stack_depth = (uint32_t)v2;
		else
			p->sample_hz = (uint32_t)v2;
	} else {
		return param_error(err, errlen, "unknown parameter '%s' (providers, buffer_size, "
				   "mode, counter_interval, duration, max_size, format, stacks, sample_cpu)", key);
	}
	return 0;
}

int evr_mon_tparams_from_json(json_t *body, struct evr_mon_tparams *p, char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	if (!json_is_object(body))
		return param_error(err, errlen, "%s", "the body must be a JSON object");
	json_object_foreach(body, key, v) {
		char num[64];
		const char *s;

		/* As in a path or a query (evr_mon_unescape()): no control bytes. */
		if (strpbrk(key, CONTROL_BYTES) || (json_is_string(v) &&
		    strpbrk(json_string_value(v), CONTROL_BYTES)))
			return param_error(err, errlen, "%s", "a parameter's name or value has a "
					   "control byte");

		if (json_is_string(v)) {
			s = json_string_value(v);
		} else if (json_is_true(v) && (!strcmp(key, "stacks") ||
					       !strcmp(key, "sample_cpu"))) {
			s = "";		/* the default depth or rate */
		} else if (json_is_number(v) && json_number_value(v) >= 0) {
			double d = json_number_value(v);

			if (!strcmp(key, "duration") || !strcmp(key, "counter_interval"))
				snprintf(num, sizeof(num), "%.9gs", d);
			else
				snprintf(num, sizeof(num), "%.0f", d);
			s = num;
		} else {
			return param_error(err, errlen, "%s: a string (or a non-negative number)",
					   key);
		}
		if (evr_mon_tparams_set(p, key, s, err, errlen) < 0)
			return -EINVAL;
		/* Strings from the body live as long as @body; numbers must be kept. */
		if (s == num && !strcmp(key, "providers"))
			return param_error(err, errlen, "%s: a string", key);
	}
	return 0;
}
