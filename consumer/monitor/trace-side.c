// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a trace adds to the recorder beside the session, as `evring record`
 * does (consumer/cli/record.c, record-check.c): the side band of stacks=
 * and sample_cpu= (the process's module map, CPU samples from perf_events,
 * its perf map), and the warning for a provider the process has no event of.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <evring/consumer.h>
#include <evring/name-list.h>
#include <evring/provider-spec.h>
#include <evring/recorder.h>
#include <evring/symbols.h>
#include <evring/trace.h>

#include "monitor.h"
#include "trace-internal.h"

static int sideband_emit(void *ctx, uint32_t kind, const void *data, size_t len)
{
	return evr_trace_writer_chunk(ctx, kind, data, (uint32_t)len);
}

/* The recorder's side band: the module map first, then samples, at the end the perf map. */
static int sideband_cb(struct evr_recorder *rec, struct evr_trace_writer *w, uint64_t now_ns,
		       bool final, void *arg)
{
	struct evr_mon_sideband *s = arg;
	int ret = 0;

	(void)rec;
	(void)now_ns;
	if (!s->started) {
		s->started = true;
		ret = evr_sideband_start(s->sb, sideband_emit, w);
	}
	if (ret == 0)
		ret = final ? evr_sideband_finish(s->sb, sideband_emit, w)
			    : evr_sideband_poll(s->sb, sideband_emit, w);
	return ret;
}

int evr_mon_sideband_open(struct evr_mon_sideband *s, pid_t pid, uint32_t stack_depth,
			  uint32_t sample_hz, char *err, size_t errlen)
{
	struct evr_sideband_opts so = { .pid = pid, .sample_hz = sample_hz };
	int r;

	if (!stack_depth && !sample_hz)
		return 0;
	/* No broker for a perf map that appears later: the monitor opens it itself. */
	r = evr_sideband_new(&so, &s->sb, err, errlen);
	if (r < 0 && !err[0])
		snprintf(err, errlen, "%s", strerror(-r));
	s->sample_hz = sample_hz;
	return r;
}

int evr_mon_recorder_start(struct evr_recorder *rec, struct evr_mon_sideband *s, int fd,
			   char *err, size_t errlen)
{
	int r = evr_recorder_start(rec, fd, err, errlen);

	if (r < 0 || !s->sb)
		return r;
	/* Often enough that a 256 KiB sampling ring per CPU never fills at 999 Hz. */
	r = evr_recorder_add_sideband(rec, s->sample_hz ? 100 : 1000, sideband_cb, s);
	if (r < 0)
		snprintf(err, errlen, "cannot add the stacks side band: %s", strerror(-r));
	return r;
}

void evr_mon_sideband_free(struct evr_mon_sideband *s)
{
	evr_sideband_free(s->sb);
	s->sb = NULL;
}

void evr_mon_providers_warning(struct evr_client *c, const char *providers, pid_t pid,
			       char *buf, size_t len)
{
	struct evr_provider_spec_list *spec = NULL;
	struct evr_schema_set *have = NULL;
	char err[256], names[256] = "", all[256] = "";
	uint32_t n;

	buf[0] = '\0';
	/* Unparsable lists are refused by the process, with their own error. */
	if (evr_provider_spec_parse(providers, &spec, err, sizeof(err)) < 0 ||
	    evr_schema_set_new(&have) < 0 ||
	    evr_client_list_events(c, have, err, sizeof(err)) < 0)
		goto out;
	n = evr_schema_set_count(have);
	for (uint32_t i = 0; i < n; i++)
		evr_name_list_add(all, sizeof(all), evr_schema_set_at(have, i)->provider);
	for (size_t k = 0; k < spec->n; k++) {
		const char *name = spec->v[k].name;
		bool found = !strcmp(name, "*");

		for (uint32_t i = 0; i < n && !found; i++)
			found = !strcmp(evr_schema_set_at(have, i)->provider, name);
		if (!found)
			evr_name_list_add(names, sizeof(names), name);
	}
	if (names[0])
		snprintf(buf, len, "providers: process %d has no provider %s: nothing of it is "
			 "recorded (%s%s)", (int)pid, names,
			 all[0] ? "it has: " : "it has no provider at all", all);
	/* A header's text: no quotes or control bytes (the names are the user's). */
	for (char *p = buf; *p; p++)
		if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
			*p = '?';
out:
	evr_schema_set_free(have);
	evr_provider_spec_list_free(spec);
}
