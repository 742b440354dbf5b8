// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring report's CPU section (report-cpu.h). The profile is libevring-symbols'
 * (the one folded, speedscope and the flame graph draw), so the functions and
 * their figures agree with what convert writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "report-cpu.h"

int evr_report_cpu_build(struct evr_trace_reader *r, struct evr_symbolizer *sym,
			 const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	uint32_t *tids = NULL;
	size_t ntids = 0;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (!ss || !ss->n)
		return 0;
	if (ss->has_sampler) {
		ret->lost = ss->sampler.lost;
		ret->freq_hz = ss->sampler.freq_hz;
	}
	tids = calloc(ss->n, sizeof(*tids));
	if (!tids)
		return -ENOMEM;
	for (size_t i = 0; i < ss->n; i++) {
		const struct evr_sample_rec *s = &ss->v[i];
		size_t k;

		if (s->type == EVR_SAMPLE_LOST && !ss->has_sampler)
			ret->lost += s->value;
		if (s->type != EVR_SAMPLE_CPU || !s->nframes)
			continue;
		ret->samples++;
		ret->cpu_ns += s->value ? s->value : 1;
		for (k = 0; k < ntids && tids[k] != s->tid; k++)
			;
		if (k == ntids && ntids < 4096)
			tids[ntids++] = s->tid;
	}
	free(tids);
	ret->threads = (uint32_t)ntids;
	if (!ret->samples)
		return 0;
	err = evr_profile_from_trace(r, sym, ss, false, &ret->p);
	if (!err)
		err = evr_profile_functions(ret->p, &ret->funcs, &ret->nfuncs);
	return err;
}

void evr_report_cpu_fini(struct evr_report_cpu *c)
{
	free(c->funcs);
	evr_profile_free(c->p);
	memset(c, 0, sizeof(*c));
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* "189.2 ms", "2.041 s", "950 us": CPU time as people read it. */
static const char *fmt_ns(uint64_t ns, char *buf, size_t len)
{
	if (!ns)
		snprintf(buf, len, "0");
	else if (ns >= 10000000000ull)
		snprintf(buf, len, "%.2f s", (double)ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, len, "%.1f ms", (double)ns / 1e6);
	else
		snprintf(buf, len, "%.0f us", (double)ns / 1e3);
	return buf;
}

void evr_report_cpu_print(FILE *f, const struct evr_report_cpu *c, unsigned top)
{
	size_t n = top && top < c->nfuncs ? top : c->nfuncs;
	char b1[32], b2[32];

	if (!c->samples) {
		fprintf(f, "\nCPU samples: none (record with --sample-cpu for a CPU profile)\n");
		return;
	}
	fprintf(f, "\nCPU samples: %" PRIu64 " (%s of CPU on %" PRIu32 " thread%s", c->samples,
		fmt_ns(c->cpu_ns, b1, sizeof(b1)), c->threads, c->threads == 1 ? "" : "s");
	if (c->freq_hz)
		fprintf(f, ", %" PRIu32 " Hz", c->freq_hz);
	fprintf(f, "), %" PRIu64 " lost\n", c->lost);
	fprintf(f, "\nTop functions (%zu of %zu; self: on the CPU in it, total: in it or what "
		"it called)\n  %10s %7s %10s %7s  %s\n", n, c->nfuncs, "SELF", "SELF%", "TOTAL",
		"TOTAL%", "FUNCTION");
	for (size_t i = 0; i < n; i++) {
		const struct evr_profile_func *fn = &c->funcs[i];

		fprintf(f, "  %10s %6.2f%% %10s %6.2f%%  %s\n", fmt_ns(fn->self, b1, sizeof(b1)),
			pct(fn->self, c->cpu_ns), fmt_ns(fn->total, b2, sizeof(b2)),
			pct(fn->total, c->cpu_ns), fn->name);
	}
}

int evr_report_cpu_json(struct evr_strbuf *sb, const struct evr_report_cpu *c, unsigned top)
{
	static const char tail[] = "}\n";
	size_t n = top && top < c->nfuncs ? top : c->nfuncs;
	int err;

	if (sb->len < 2 || memcmp(sb->buf + sb->len - 2, tail, 2))
		return -EINVAL;
	sb->len -= 2;
	err = evr_strbuf_printf(sb, ",\"cpu_samples\":{\"samples\":%" PRIu64 ",\"cpu_ns\":%" PRIu64
				",\"threads\":%" PRIu32 ",\"freq_hz\":%" PRIu32 ",\"lost\":%" PRIu64
				",\"functions_total\":%zu,\"functions\":[", c->samples, c->cpu_ns,
				c->threads, c->freq_hz, c->lost, c->nfuncs);
	for (size_t i = 0; i < n && !err; i++) {
		err = evr_strbuf_printf(sb, "%s{\"name\":", i ? "," : "");
		if (!err)
			err = evr_strbuf_json_string(sb, c->funcs[i].name, strlen(c->funcs[i].name));
		if (!err)
			err = evr_strbuf_printf(sb, ",\"self_ns\":%" PRIu64 ",\"total_ns\":%" PRIu64
						"}", c->funcs[i].self, c->funcs[i].total);
	}
	if (!err)
		err = evr_strbuf_append(sb, "]}}\n", 4);
	return err;
}
