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

static int cpu_build(struct evr_trace_reader *r, struct evr_symbolizer *sym,
		     const struct evr_samples *ss, struct evr_report_cpu *ret);

static int cmp_proc(const void *a, const void *b)
{
	const struct evr_report_cpu_proc *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* Every CPU sample by process, named from the TASKS records. Return: 0, -ENOMEM. */
static int build_procs(const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	size_t cap = 0;

	for (size_t i = 0; i < ss->n; i++) {
		const struct evr_sample_rec *s = &ss->v[i];
		size_t k;

		if (s->type != EVR_SAMPLE_CPU)
			continue;
		ret->all_samples++;
		/* Most samples go to a few processes: look at the last one found first. */
		for (k = 0; k < ret->nprocs && ret->procs[k].pid != s->pid; k++)
			;
		if (k == ret->nprocs) {
			if (ret->nprocs == cap) {
				size_t c = cap ? cap * 2 : 64;
				struct evr_report_cpu_proc *v = realloc(ret->procs, c * sizeof(*v));

				if (!v)
					return -ENOMEM;
				ret->procs = v;
				cap = c;
			}
			memset(&ret->procs[k], 0, sizeof(ret->procs[k]));
			ret->procs[k].pid = s->pid;
			ret->nprocs++;
		}
		ret->procs[k].samples++;
	}
	for (size_t k = 0; k < ret->nprocs; k++) {
		struct evr_report_cpu_proc *p = &ret->procs[k];
		const char *name = evr_samples_task_name(ss, p->pid);

		if (!name && p->pid == 0)
			name = "[idle]";
		snprintf(p->name, sizeof(p->name), "%s", name ? name : "");
	}
	if (ret->nprocs > 1)
		qsort(ret->procs, ret->nprocs, sizeof(*ret->procs), cmp_proc);
	return 0;
}

/*
 * The samples of process @pid alone (frames shared with @ss): a system-wide
 * recording symbolizes only the recorded process. Return: 0, -ENOMEM.
 */
static int samples_of(const struct evr_samples *ss, uint32_t pid, struct evr_samples *ret)
{
	size_t n = 0;

	*ret = *ss;
	ret->v = malloc((ss->n ? ss->n : 1) * sizeof(*ret->v));
	ret->frame_off = malloc((ss->n ? ss->n : 1) * sizeof(*ret->frame_off));
	if (!ret->v || !ret->frame_off) {
		free(ret->v);
		free(ret->frame_off);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ss->n; i++) {
		if (ss->v[i].pid != pid && ss->v[i].type != EVR_SAMPLE_LOST)
			continue;
		ret->v[n] = ss->v[i];
		ret->frame_off[n++] = ss->frame_off[i];
	}
	ret->n = n;
	return 0;
}

/* The COUNTER records, added up per thread (each is an increment). Return: 0, -ENOMEM. */
static int build_counters(const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	size_t cap = 0, last = 0;

	for (size_t i = 0; i < ss->n; i++) {
		const struct evr_sample_rec *s = &ss->v[i];
		size_t k = last;

		if (s->type != EVR_SAMPLE_COUNTER || s->cpu >= 32)
			continue;
		if (k >= ret->ncounters || ret->counters[k].tid != s->tid ||
		    ret->counters[k].pid != s->pid)
			for (k = 0; k < ret->ncounters && (ret->counters[k].tid != s->tid ||
							   ret->counters[k].pid != s->pid); k++)
				;
		if (k == ret->ncounters) {
			if (ret->ncounters == cap) {
				size_t c = cap ? cap * 2 : 16;
				struct evr_report_counters *v = realloc(ret->counters, c * sizeof(*v));

				if (!v)
					return -ENOMEM;
				ret->counters = v;
				cap = c;
			}
			memset(&ret->counters[k], 0, sizeof(ret->counters[k]));
			ret->counters[k].pid = s->pid;
			ret->counters[k].tid = s->tid;
			ret->ncounters++;
		}
		ret->counters[k].v[s->cpu] += s->value;
		ret->counter_mask |= 1u << s->cpu;
		last = k;
	}
	return 0;
}

int evr_report_cpu_build(struct evr_trace_reader *r, struct evr_symbolizer *sym,
			 const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	struct evr_samples own;
	int err;

	memset(ret, 0, sizeof(*ret));
	if (!ss || !ss->n)
		return 0;
	err = build_counters(ss, ret);
	if (err < 0)
		return err;
	if (ss->has_sampler) {
		ret->event = EVR_SAMPLER_EVENT(ss->sampler.event);
		ret->lost = ss->sampler.lost;
		ret->freq_hz = ss->sampler.freq_hz;
		ret->system = ss->sampler.event & EVR_SAMPLER_SYSTEM;
		ret->kernel = ss->sampler.event & EVR_SAMPLER_KERNEL;
		evr_sampler_source(&ss->sampler, ret->source, sizeof(ret->source));
	}
	if (ret->system) {
		const struct evr_process_info *pi = evr_trace_reader_process(r);

		err = build_procs(ss, ret);
		if (err < 0)
			return err;
		if (pi) {
			err = samples_of(ss, pi->pid, &own);
			if (err < 0)
				return err;
			err = cpu_build(r, sym, &own, ret);
			free(own.v);
			free(own.frame_off);
			return err;
		}
	}
	return cpu_build(r, sym, ss, ret);
}

static int cmp_switches(const void *a, const void *b)
{
	const struct evr_report_switches *x = a, *y = b;

	if (x->out != y->out)
		return x->out < y->out ? 1 : -1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* Switch-outs per thread of @ss (the recorded process's records). Return: 0, -ENOMEM. */
static int build_switches(const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	size_t cap = 0, last = 0;

	for (size_t i = 0; i < ss->n; i++) {
		const struct evr_sample_rec *s = &ss->v[i];
		size_t k = last;

		if (s->type != EVR_SAMPLE_SWITCH_OUT)
			continue;
		if (k >= ret->nswitches || ret->switches[k].tid != s->tid)
			for (k = 0; k < ret->nswitches && ret->switches[k].tid != s->tid; k++)
				;
		if (k == ret->nswitches) {
			if (ret->nswitches == cap) {
				size_t c = cap ? cap * 2 : 16;
				struct evr_report_switches *v = realloc(ret->switches, c * sizeof(*v));

				if (!v)
					return -ENOMEM;
				ret->switches = v;
				cap = c;
			}
			ret->switches[k] = (struct evr_report_switches){ .tid = s->tid };
			ret->nswitches++;
		}
		ret->switches[k].out++;
		ret->switches[k].preempted += !!(s->value & EVR_SAMPLE_SWITCH_PREEMPTED);
		last = k;
	}
	if (ret->nswitches > 1)
		qsort(ret->switches, ret->nswitches, sizeof(*ret->switches), cmp_switches);
	return 0;
}

/* The recorded process's part: sample count, threads, functions, switches. */
static int cpu_build(struct evr_trace_reader *r, struct evr_symbolizer *sym,
		     const struct evr_samples *ss, struct evr_report_cpu *ret)
{
	uint32_t *tids = NULL;
	size_t ntids = 0;
	int err;

	err = build_switches(ss, ret);
	if (err < 0)
		return err;
	tids = calloc(ss->n ? ss->n : 1, sizeof(*tids));
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
	free(c->procs);
	free(c->funcs);
	free(c->counters);
	free(c->switches);
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

/* The processes' shares of a system-wide recording: the @top largest (0: all). */
static void print_procs(FILE *f, const struct evr_report_cpu *c, unsigned top)
{
	size_t n = top && top < c->nprocs ? top : c->nprocs;

	bool tick = c->event == EVR_SAMPLER_TIMER_TICK;

	/* No tick on an idle CPU: the timer-tick source's shares are of busy time. */
	fprintf(f, "\nCPU by process (every CPU, %" PRIu64 " samples%s%s, %s; %zu of %zu "
		"processes)\n  %8s  %-16s %10s %7s\n", c->all_samples, tick ? " of " : "",
		tick ? c->source : "",
		tick ? "shares of busy CPU time, kernel time included" :
		c->kernel ? "kernel and idle time included" : "user time only", n, c->nprocs,
		"PID", "NAME", "SAMPLES", "SHARE");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %8" PRIu32 "  %-16s %10" PRIu64 " %6.2f%%\n", c->procs[i].pid,
			c->procs[i].name[0] ? c->procs[i].name : "?", c->procs[i].samples,
			pct(c->procs[i].samples, c->all_samples));
}

/* The per-thread counters as a table: a column per counter recorded. */
static void print_counters(FILE *f, const struct evr_report_cpu *c)
{
	fprintf(f, "\nCounters per thread (record --perf-counters; task-clock in ns)\n  %8s %8s",
		"PID", "TID");
	for (uint16_t id = 0; id < 32; id++)
		if (c->counter_mask & (1u << id))
			fprintf(f, " %16s", evr_perf_counter_name(id) ? evr_perf_counter_name(id) : "?");
	fputc('\n', f);
	for (size_t i = 0; i < c->ncounters; i++) {
		fprintf(f, "  %8" PRIu32 " %8" PRIu32, c->counters[i].pid, c->counters[i].tid);
		for (uint16_t id = 0; id < 32; id++)
			if (c->counter_mask & (1u << id))
				fprintf(f, " %16" PRIu64, c->counters[i].v[id]);
		fputc('\n', f);
	}
}

/* The threads that left the CPU most: the @top first (0: all). */
static void print_switches(FILE *f, const struct evr_report_cpu *c, unsigned top)
{
	size_t n = top && top < c->nswitches ? top : c->nswitches;

	fprintf(f, "\nContext switches per thread (%zu of %zu threads; preempted, else blocked)\n"
		"  %8s %10s %10s %10s\n", n, c->nswitches, "TID", "SWITCHES", "PREEMPTED",
		"BLOCKED");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "  %8" PRIu32 " %10" PRIu64 " %10" PRIu64 " %10" PRIu64 "\n",
			c->switches[i].tid, c->switches[i].out, c->switches[i].preempted,
			c->switches[i].out - c->switches[i].preempted);
}

void evr_report_cpu_print(FILE *f, const struct evr_report_cpu *c, unsigned top)
{
	size_t n = top && top < c->nfuncs ? top : c->nfuncs;
	char b1[32], b2[32];

	if (c->system)
		print_procs(f, c, top);

	if (!c->samples) {
		fprintf(f, "\nCPU samples: none (record with --sample-cpu for a CPU profile)\n");
		if (c->ncounters)
			print_counters(f, c);
		if (c->nswitches)
			print_switches(f, c, top);
		return;
	}
	if (c->event && c->event != EVR_COUNTER_CPU_CLOCK && evr_perf_counter_name(c->event))
		/* A hardware event's periods count that event, not time. */
		fprintf(f, "\nCPU samples: %" PRIu64 " (%" PRIu64 " %s on %" PRIu32 " thread%s",
			c->samples, c->cpu_ns, evr_perf_counter_name(c->event), c->threads,
			c->threads == 1 ? "" : "s");
	else
		fprintf(f, "\nCPU samples: %" PRIu64 " (%s of CPU on %" PRIu32 " thread%s",
			c->samples, fmt_ns(c->cpu_ns, b1, sizeof(b1)), c->threads,
			c->threads == 1 ? "" : "s");
	if (c->event == EVR_SAMPLER_TIMER_TICK)
		fprintf(f, ", %s", c->source);
	else if (c->freq_hz)
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
	if (c->ncounters)
		print_counters(f, c);
	if (c->nswitches)
		print_switches(f, c, top);
}

static int counters_json(struct evr_strbuf *sb, const struct evr_report_cpu *c)
{
	bool first = true;
	int err = evr_strbuf_printf(sb, ",\"counters\":{\"names\":[");

	for (uint16_t id = 0; id < 32 && !err; id++)
		if ((c->counter_mask & (1u << id)) && evr_perf_counter_name(id)) {
			err = evr_strbuf_printf(sb, "%s\"%s\"", first ? "" : ",",
						evr_perf_counter_name(id));
			first = false;
		}
	if (!err)
		err = evr_strbuf_printf(sb, "],\"threads\":[");
	for (size_t i = 0; i < c->ncounters && !err; i++) {
		err = evr_strbuf_printf(sb, "%s{\"pid\":%" PRIu32 ",\"tid\":%" PRIu32, i ? "," : "",
					c->counters[i].pid, c->counters[i].tid);
		for (uint16_t id = 0; id < 32 && !err; id++)
			if ((c->counter_mask & (1u << id)) && evr_perf_counter_name(id))
				err = evr_strbuf_printf(sb, ",\"%s\":%" PRIu64,
							evr_perf_counter_name(id),
							c->counters[i].v[id]);
		if (!err)
			err = evr_strbuf_append(sb, "}", 1);
	}
	if (!err)
		err = evr_strbuf_append(sb, "]}", 2);
	return err;
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
				",\"source\":\"%s\",\"functions_total\":%zu,\"functions\":[",
				c->samples, c->cpu_ns, c->threads, c->freq_hz, c->lost, c->source,
				c->nfuncs);
	for (size_t i = 0; i < n && !err; i++) {
		err = evr_strbuf_printf(sb, "%s{\"name\":", i ? "," : "");
		if (!err)
			err = evr_strbuf_json_string(sb, c->funcs[i].name, strlen(c->funcs[i].name));
		if (!err)
			err = evr_strbuf_printf(sb, ",\"self_ns\":%" PRIu64 ",\"total_ns\":%" PRIu64
						"}", c->funcs[i].self, c->funcs[i].total);
	}
	if (!err)
		err = evr_strbuf_append(sb, "],\"switches\":[", 14);
	for (size_t i = 0; i < c->nswitches && !err; i++)
		err = evr_strbuf_printf(sb, "%s{\"tid\":%" PRIu32 ",\"switches\":%" PRIu64
					",\"preempted\":%" PRIu64 ",\"blocked\":%" PRIu64 "}",
					i ? "," : "", c->switches[i].tid, c->switches[i].out,
					c->switches[i].preempted,
					c->switches[i].out - c->switches[i].preempted);
	if (!err)
		err = evr_strbuf_append(sb, "]", 1);
	if (!err && c->system) {
		err = evr_strbuf_printf(sb, ",\"system\":{\"samples\":%" PRIu64 ",\"kernel\":%s,"
					"\"processes\":[", c->all_samples,
					c->kernel ? "true" : "false");
		for (size_t i = 0; i < c->nprocs && !err; i++) {
			const struct evr_report_cpu_proc *p = &c->procs[i];

			err = evr_strbuf_printf(sb, "%s{\"pid\":%" PRIu32 ",\"name\":", i ? "," : "",
						p->pid);
			if (!err)
				err = evr_strbuf_json_string(sb, p->name, strlen(p->name));
			if (!err)
				err = evr_strbuf_printf(sb, ",\"samples\":%" PRIu64 ",\"share\":%.2f}",
							p->samples, pct(p->samples, c->all_samples));
		}
		if (!err)
			err = evr_strbuf_append(sb, "]}", 2);
	}
	if (!err)
		err = evr_strbuf_append(sb, "}", 1);
	if (!err && c->ncounters)
		err = counters_json(sb, c);
	if (!err)
		err = evr_strbuf_append(sb, "}\n", 2);
	return err;
}
