// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record --sample-cpu[=EVENT][:HZ] and --perf-counters[=LIST]: what the
 * options say, and their lines of the summary. The sampler and the counters
 * are consumer/symbols/ (sampler.c, perf-counters.c); docs/stacks.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/symbols.h>

#include "cli.h"
#include "record.h"

#define CMD "record"

_Static_assert(sizeof(((struct record_opts *)0)->counters) ==
		       EVR_PERF_COUNTERS_MAX * sizeof(uint16_t), "one list of counters");

/* The counters --perf-counters counts when given no LIST. */
static const char default_counters[] =
	"cycles,instructions,cache-misses,branch-misses,task-clock,context-switches,"
	"page-faults,cpu-migrations";

int evr_record_sample_parse(const char *arg, struct record_opts *o)
{
	const char *colon, *hz = NULL;
	char err[320];
	uint16_t id;
	char *end;
	unsigned long v;

	o->sample_hz = 999;
	o->sample_event = EVR_COUNTER_CPU_CLOCK;
	if (!arg)
		return 0;
	/* HZ alone (the old form), EVENT, or EVENT:HZ. */
	if (*arg >= '0' && *arg <= '9') {
		hz = arg;
	} else if (!strncmp(arg, "timer-tick", 10) && (!arg[10] || arg[10] == ':')) {
		/* Every Nth timer interrupt: 100 Hz is every 3rd at the usual HZ 250. */
		o->sample_event = EVR_SAMPLER_TIMER_TICK;
		o->sample_hz = 100;
		if (arg[10])
			hz = arg + 11;
	} else {
		colon = strchr(arg, ':');
		if (colon)
			hz = colon + 1;
		{
			char name[64];
			size_t len = colon ? (size_t)(colon - arg) : strlen(arg);

			if (len >= sizeof(name))
				len = sizeof(name) - 1;
			memcpy(name, arg, len);
			name[len] = '\0';
			if (evr_perf_counter_list_parse(name, &id, 1, err, sizeof(err)) != 1 ||
			    strchr(name, ',')) {
				evr_cli_error(CMD, "--sample-cpu=%s: %s", arg,
					      strchr(name, ',') ? "one event to sample" : err);
				return -EINVAL;
			}
		}
		o->sample_event = id;
	}
	if (!hz)
		return 0;
	errno = 0;
	v = strtoul(hz, &end, 10);
	if (errno || end == hz || *end || *hz == '-' || v < 1 || v > 100000) {
		evr_cli_error(CMD, "--sample-cpu=%s: '%s' is not a number from 1 to 100000 (Hz)",
			      arg, hz);
		return -EINVAL;
	}
	o->sample_hz = (uint32_t)v;
	return 0;
}

int evr_record_counters_parse(const char *list, struct record_opts *o)
{
	char err[320];
	int n = evr_perf_counter_list_parse(list ? list : default_counters, o->counters,
					    EVR_PERF_COUNTERS_MAX, err, sizeof(err));

	if (n < 0) {
		evr_cli_error(CMD, "--perf-counters=%s: %s", list, err);
		return -EINVAL;
	}
	o->ncounters = (uint32_t)n;
	return 0;
}

void evr_record_perf_note(const struct evr_sideband *sb)
{
	struct evr_perf_counters_totals t;
	const char *note = NULL;

	if (!sb)
		return;
	evr_sideband_counters(sb, &t, &note);
	if (note && note[0])
		fprintf(stderr, "evring record: %s\n", note);
}

void evr_record_counters_summary(const struct evr_sideband *sb)
{
	struct evr_perf_counters_totals t;

	if (!sb || !evr_sideband_counters(sb, &t, NULL))
		return;
	fprintf(stderr, "evring record: %" PRIu64 " per-thread counter records (", t.records);
	for (uint32_t i = 0; i < t.counters; i++)
		fprintf(stderr, "%s%s", i ? "," : "", evr_perf_counter_name(t.ids[i]));
	fprintf(stderr, "; %u threads at the start%s%s), %" PRIu64 " thread exits lost\n",
		t.threads,
		t.user_only ? "; user space only: kernel.perf_event_paranoid forbids counting in "
			      "the kernel, where context switches and migrations happen" : "",
		t.folded ? "; threads started later are counted with the thread that started "
			   "them: this kernel (before 6.12) cannot keep them apart" : "",
		t.lost);
}
