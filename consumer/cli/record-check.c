// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring record: what the options ask for that cannot work (issue 14, defect 7).
 *
 * Before attaching, --providers must parse and --buffer-size must give every
 * ring of this machine its minimum (the traced process runs here, with one ring
 * per possible CPU): a bad value is a usage error naming the option, exit 2,
 * not a refusal from the process after attaching.
 *
 * After attaching (or at the end, for -- PROGRAM, whose providers register
 * after the session starts), what a provider list names and the process does
 * not have records nothing at all: a provider it has no event of, a provider
 * none of whose events passes the keywords and level, a counter interval with
 * no provider that has counters. Each gets one warning naming what the process
 * does have.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/abi.h>
#include <evring/consumer.h>
#include <evring/name-list.h>
#include <evring/provider-spec.h>

#include "record.h"

#define CMD "record"

/* The possible CPUs of this machine: one ring each, as libevring makes them. */
static uint32_t possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	unsigned long lo, hi, max = 0;
	bool any = false;
	char sep;
	long n;

	/* "0-7" or "0,2-3,8": the highest id + 1. */
	while (f && fscanf(f, "%lu", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%lu%c", &hi, &sep) < 1)
			break;
		if (hi >= max)
			max = hi;
		any = true;
		if (sep != ',')
			break;
	}
	if (f)
		fclose(f);
	if (any)
		return max + 1 > EVR_MAX_RINGS ? EVR_MAX_RINGS : (uint32_t)(max + 1);
	n = sysconf(_SC_NPROCESSORS_CONF);
	return n < 1 ? 1 : n > EVR_MAX_RINGS ? EVR_MAX_RINGS : (uint32_t)n;
}

int evr_record_check_opts(struct record_opts *o)
{
	uint64_t min = (uint64_t)EVR_PACKET_SIZE_MIN * EVR_RING_PACKETS_MIN;
	char err[512];
	uint32_t rings;

	if (evr_provider_spec_parse(o->providers, &o->spec, err, sizeof(err)) < 0) {
		evr_cli_error(CMD, "--providers: %s", err);
		return -EINVAL;
	}
	if (!o->buffer_size)
		return 0;
	rings = possible_cpus();
	if (o->buffer_size / rings < min) {
		char a[32];

		evr_cli_error(CMD, "--buffer-size %s is too small: this machine has %u possible "
			      "CPUs, each with a ring of at least %s (use at least %lluK)",
			      o->buffer_arg, rings, evr_fmt_bytes(min, a, sizeof(a)),
			      (unsigned long long)(min * rings / 1024));
		return -EINVAL;
	}
	return 0;
}

static bool is_counter(const struct evr_schema_event *ev)
{
	return !strncmp(ev->name, "Counter", 7);
}

void evr_record_check_providers(const struct record_opts *o, const struct evr_schema_set *have,
				pid_t pid, bool complete)
{
	uint32_t n = evr_schema_set_count(have);
	char all[512] = "", counters[512] = "";
	bool counters_asked = false;

	for (uint32_t i = 0; i < n; i++) {
		const struct evr_schema_event *ev = evr_schema_set_at(have, i);

		evr_name_list_add(all, sizeof(all), ev->provider);
		if (is_counter(ev))
			evr_name_list_add(counters, sizeof(counters), ev->provider);
		if (is_counter(ev) && evr_provider_spec_list_find(o->spec, ev->provider))
			counters_asked = true;
	}
	for (size_t k = 0; k < o->spec->n; k++) {
		const struct evr_provider_spec *sp = &o->spec->v[k];
		uint32_t events = 0, filtered = 0, match = 0;
		char kw[256] = "";

		if (!strcmp(sp->name, "*"))
			continue;
		for (uint32_t i = 0; i < n; i++) {
			const struct evr_schema_event *ev = evr_schema_set_at(have, i);
			char one[24];

			if (strcmp(ev->provider, sp->name))
				continue;
			events++;
			/* Events of keywords 0 at LogAlways (every provider's Dynamic and Json,
			 * counters) pass any filter: what the user chose among are the others. */
			if (!ev->keywords && ev->level == EVR_LEVEL_LOGALWAYS)
				continue;
			filtered++;
			match += evr_provider_spec_match(sp, ev->provider, ev->keywords, ev->level);
			snprintf(one, sizeof(one), "0x%" PRIx64 "/%u", ev->keywords, ev->level);
			evr_name_list_add(kw, sizeof(kw), one);
		}
		if (!events && complete)
			evr_cli_warn(CMD, "--providers: process %d has no provider %s: nothing of it "
				     "is recorded (%s%s)", (int)pid, sp->name,
				     *all ? "it has: " : "it has no provider at all", all);
		else if (!events)
			evr_cli_warn(CMD, "--providers: nothing of provider %s reached the recording: "
				     "process %d did not have it", sp->name, (int)pid);
		else if (filtered && !match)
			evr_cli_warn(CMD, "--providers: no event of %s passes keywords 0x%" PRIx64
				     " at level %u: only those every session gets are recorded (its "
				     "events' keywords/levels: %s)", sp->name, sp->keywords, sp->level,
				     kw);
	}
	if (o->counter_interval_ms && !counters_asked && complete)
		evr_cli_warn(CMD, "--counter-interval: none of the providers asked for has counters: "
			     "no counter is recorded (%s%s)",
			     *counters ? "the process's counters are in: " : "the process has none",
			     counters);
	else if (o->counter_interval_ms && !counters_asked)
		evr_cli_warn(CMD, "--counter-interval: none of the providers asked for had counters "
			     "while process %d was recorded: no counter is recorded", (int)pid);
}
