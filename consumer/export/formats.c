// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The one table of export formats: what `evring convert --format` accepts,
 * what `record --format` converts to, and what every --help lists. Kept in one
 * place so that a format (or an alias, such as "perfetto") cannot be accepted
 * by one command and unknown to another's help (issues 27 and 28).
 */
#include <stdio.h>
#include <string.h>

#include <evring/export.h>

const struct evr_export_format evr_export_formats[] = {
	{ EVR_EXPORT_CTF, "ctf", { NULL }, ".ctf", false,
	  "a CTF 1.8 trace directory (babeltrace2, Trace Compass)" },
	{ EVR_EXPORT_CHROME, "chrome", { "perfetto", NULL }, ".json", false,
	  "Chrome trace-event JSON (Perfetto UI, chrome://tracing)" },
	{ EVR_EXPORT_JSONL, "jsonl", { "json", NULL }, ".jsonl", false,
	  "one JSON object per event, as evring dump --json" },
	{ EVR_EXPORT_FOLDED, "folded", { NULL }, ".folded", true,
	  "folded stacks (FlameGraph, inferno): 'thread;root;...;leaf WEIGHT'" },
	{ EVR_EXPORT_SPEEDSCOPE, "speedscope", { NULL }, ".speedscope.json", true,
	  "speedscope JSON, a sampled profile per thread" },
	{ EVR_EXPORT_PPROF, "pprof", { NULL }, ".pb.gz", true,
	  "a pprof profile, gzip'd protobuf (go tool pprof)" },
};

const size_t evr_export_nformats = sizeof(evr_export_formats) / sizeof(evr_export_formats[0]);

const struct evr_export_format *evr_export_format_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < evr_export_nformats; i++) {
		const struct evr_export_format *f = &evr_export_formats[i];

		if (!strcmp(f->name, name))
			return f;
		for (size_t k = 0; k < EVR_EXPORT_MAX_ALIASES && f->aliases[k]; k++)
			if (!strcmp(f->aliases[k], name))
				return f;
	}
	return NULL;
}

const struct evr_export_format *evr_export_format_get(enum evr_export_format_id id)
{
	for (size_t i = 0; i < evr_export_nformats; i++)
		if (evr_export_formats[i].id == id)
			return &evr_export_formats[i];
	return NULL;
}

const char *evr_export_format_names(char *buf, size_t len)
{
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = '\0';
	for (size_t i = 0; i < evr_export_nformats; i++) {
		int k = snprintf(buf + used, len - used, "%s%s",
				 !i ? "" : i + 1 == evr_export_nformats ? " or " : ", ",
				 evr_export_formats[i].name);

		if (k < 0 || (size_t)k >= len - used)
			break;
		used += (size_t)k;
	}
	return buf;
}
