/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring report's CPU section: the sample count and the top functions of the
 * CPU samples (self and total, as `perf report` and `go tool pprof -top` show
 * them), in the text tables and in --json.
 */
#ifndef EVR_REPORT_CPU_H
#define EVR_REPORT_CPU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <evring/export.h>
#include <evring/symbols.h>

/* A process's share of a system-wide recording's samples. */
struct evr_report_cpu_proc {
	uint32_t pid;			/* 0: the idle task */
	uint64_t samples;
	char name[18];			/* "" when no record named it */
};

/* A thread's per-thread counters (record --perf-counters), by EVR_COUNTER_* id. */
struct evr_report_counters {
	uint32_t pid, tid;
	uint64_t v[32];
};

/* A thread's context switches (the sampler's switch-out records). */
struct evr_report_switches {
	uint32_t tid;
	uint64_t out;			/* times it left the CPU */
	uint64_t preempted;		/* of which preempted (the others: it blocked) */
};

struct evr_report_cpu {
	uint64_t samples;		/* CPU samples with a stack */
	uint64_t cpu_ns;		/* their periods */
	uint64_t lost;			/* samples the kernel or the recorder lost */
	uint32_t threads;		/* threads sampled */
	uint32_t freq_hz;		/* asked for; 0: unknown */
	struct evr_profile *p;
	struct evr_profile_func *funcs;	/* heaviest self first */
	size_t nfuncs;
	/* A system-wide recording (record --sample-cpu --system): every CPU sample,
	 * of any process, by process, most samples first. */
	bool system;
	bool kernel;			/* kernel time was sampled (idle included) */
	uint64_t all_samples;		/* every process's */
	struct evr_report_cpu_proc *procs;
	size_t nprocs;
	uint16_t event;			/* sampled: EVR_COUNTER_* (0: unknown, cpu-clock) */
	char source[64];		/* evr_sampler_source(): "" unknown */
	/* The COUNTER records summed per thread, in the order threads first appear;
	 * counter_mask: the ids (bits) any thread has. */
	struct evr_report_counters *counters;
	size_t ncounters;
	uint32_t counter_mask;
	/* The recorded process's switches per thread, most first. */
	struct evr_report_switches *switches;
	size_t nswitches;
};

/*
 * The CPU section of trace @r from its samples @ss (NULL or none: an empty
 * section), symbolized by @sym (may be NULL). A system-wide recording's
 * function profile is of the recorded process's samples: only its binaries are
 * known. Call once @r was read to the end
 * (thread names). Return: 0, -ENOMEM.
 */
int evr_report_cpu_build(struct evr_trace_reader *r, struct evr_symbolizer *sym,
			 const struct evr_samples *ss, struct evr_report_cpu *ret);
void evr_report_cpu_fini(struct evr_report_cpu *c);

/* The text section: the count line, then the @top heaviest functions (0: all), then the
 * counters per thread. */
void evr_report_cpu_print(FILE *f, const struct evr_report_cpu *c, unsigned top);

/*
 * Add "cpu_samples" (and "counters": {"names":[...], "threads":[{"pid", "tid", NAME: sum}]}
 * with per-thread counters) to the JSON object @sb holds (evr_rpt_json()'s, ending in "}\n").
 * Return: 0, -ENOMEM, -EINVAL if @sb is no such object.
 */
int evr_report_cpu_json(struct evr_strbuf *sb, const struct evr_report_cpu *c, unsigned top);

#endif /* EVR_REPORT_CPU_H */
