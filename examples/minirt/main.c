// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt: a small managed-runtime simulator that emits realistic runtime
 * events (provider "MiniRT", .NET's event names, ids and keywords), for the
 * evring tools to watch.
 *
 * It runs a generational copying GC over a real object graph, a thread pool
 * with hill-climbing injection and idle retirement, a JIT that compiles
 * methods on first call and tiers up hot ones, monitors that get contended
 * and exceptions that unwind to handlers. Load comes in phases (idle, steady,
 * burst, alloc-heavy, exception-storm), cycling, each --phase-seconds long.
 *
 * stdout, line-buffered: "ready PID" once the runtime runs and the evring
 * agent's socket exists (unless EVR_AGENT=0). stderr: a one-line stats
 * summary every second with --verbose, and "minirt: exit summary: ..." on a
 * clean exit (after the queue drained and every thread stopped).
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../agent-ready.h"
#include "events.h"
#include "runtime.h"

struct phase {
	const char *name;
	double rate;			/* requests per second, steady arrivals */
	uint32_t burst_items;		/* requests queued at once ... */
	uint32_t burst_period_ms;	/* ... this often */
	struct rt_work_mix mix;
};

static const struct phase phases[] = {
	{ "idle", 20, 0, 0,
	  { .alloc_scale = 1, .throw_permille = 5, .cache_permille = 100, .config_permille = 20,
	    .induce_permille = 25 } },
	{ "steady", 1500, 0, 0,
	  { .alloc_scale = 1, .loh_permille = 2, .throw_permille = 10, .cache_permille = 150,
	    .config_permille = 50, .spawn_permille = 100, .block_permille = 20,
	    .block_max_us = 2000 } },
	{ "burst", 300, 1500, 1000,
	  { .alloc_scale = 1, .loh_permille = 2, .throw_permille = 10, .cache_permille = 250,
	    .config_permille = 150, .spawn_permille = 100, .block_permille = 150,
	    .block_max_us = 10000 } },
	{ "alloc-heavy", 800, 0, 0,
	  { .alloc_scale = 4, .loh_permille = 100, .throw_permille = 10, .cache_permille = 300,
	    .config_permille = 50, .spawn_permille = 50, .block_permille = 10,
	    .block_max_us = 2000 } },
	{ "exception-storm", 1000, 0, 0,
	  { .alloc_scale = 1, .throw_permille = 150, .cache_permille = 150, .config_permille = 50,
	    .spawn_permille = 50, .block_permille = 20, .block_max_us = 2000 } },
};

#define NPHASES (sizeof(phases) / sizeof(phases[0]))
#define QUEUE_CAP 4096u

static struct {
	double seconds;			/* 0: until a signal */
	double phase_seconds;
	int pinned;			/* phase index, -1: cycle */
	uint32_t threads;
	uint32_t max_threads;
	uint64_t gen0_budget;
	bool verify;
	bool verbose;
	bool perf_map;
} opt = { .phase_seconds = 5, .pinned = -1, .gen0_budget = 2u << 20 };

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: minirt [--seconds N] [--phase NAME] [--phase-seconds N] [--threads N]\n"
		"              [--max-threads N] [--gen0-budget BYTES] [--verify] [--verbose]\n"
		"              [--perf-map]\n"
		"  --seconds N        stop after N seconds (default: run until SIGINT/SIGTERM)\n"
		"  --phase NAME       stay in one load phase: idle, steady, burst, alloc-heavy,\n"
		"                     exception-storm (default: cycle through them)\n"
		"  --phase-seconds N  length of each phase when cycling (default 5)\n"
		"  --threads N        initial (and minimum) thread pool workers (default: CPUs)\n"
		"  --max-threads N    thread pool maximum (default: 4 x --threads, at least 8)\n"
		"  --gen0-budget B    bytes allocated between gen0 collections (default 2097152;\n"
		"                     suffixes k, m)\n"
		"  --verify           check the whole heap after every collection\n"
		"  --verbose          print a stats line to stderr every second\n"
		"  --perf-map         write /tmp/perf-PID.map: the JIT-compiled methods' code\n"
		"                     ranges and names, for profilers (left there at exit)\n");
}

static int parse_double(const char *s, const char *name, double min, double *ret)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= min) || v > 1e9) {
		fprintf(stderr, "minirt: %s: '%s' is not a number >= %g\n", name, s, min);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int parse_u64(const char *s, const char *name, uint64_t min, uint64_t max,
		     bool suffixes, uint64_t *ret)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (suffixes && end != s && (*end == 'k' || *end == 'K') && !end[1]) {
		v *= 1024;
		end++;
	} else if (suffixes && end != s && (*end == 'm' || *end == 'M') && !end[1]) {
		v *= 1024 * 1024;
		end++;
	}
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		fprintf(stderr, "minirt: %s: '%s' is not an integer in %llu..%llu\n", name, s,
			(unsigned long long)min, (unsigned long long)max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int parse_argv(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "phase", required_argument, NULL, 'p' },
		{ "phase-seconds", required_argument, NULL, 'P' },
		{ "threads", required_argument, NULL, 't' },
		{ "max-threads", required_argument, NULL, 'm' },
		{ "gen0-budget", required_argument, NULL, 'g' },
		{ "verify", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "perf-map", no_argument, NULL, 'M' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	long ncpu;
	int c;

	while ((c = getopt_long(argc, argv, "s:p:t:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (parse_double(optarg, "--seconds", 0, &opt.seconds) < 0)
				return -EINVAL;
			break;
		case 'p':
			opt.pinned = -1;
			for (size_t i = 0; i < NPHASES; i++)
				if (strcmp(optarg, phases[i].name) == 0)
					opt.pinned = (int)i;
			if (opt.pinned < 0) {
				fprintf(stderr,
					"minirt: --phase: unknown phase '%s' (idle, steady, burst, "
					"alloc-heavy, exception-storm)\n",
					optarg);
				return -EINVAL;
			}
			break;
		case 'P':
			if (parse_double(optarg, "--phase-seconds", 0.1, &opt.phase_seconds) < 0)
				return -EINVAL;
			break;
		case 't':
			if (parse_u64(optarg, "--threads", 1, 256, false, &v) < 0)
				return -EINVAL;
			opt.threads = (uint32_t)v;
			break;
		case 'm':
			if (parse_u64(optarg, "--max-threads", 1, 1024, false, &v) < 0)
				return -EINVAL;
			opt.max_threads = (uint32_t)v;
			break;
		case 'g':
			if (parse_u64(optarg, "--gen0-budget", 256 * 1024, 1ull << 34, true,
				      &opt.gen0_budget) < 0)
				return -EINVAL;
			break;
		case 'V':
			opt.verify = true;
			break;
		case 'v':
			opt.verbose = true;
			break;
		case 'M':
			opt.perf_map = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "minirt: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if (!opt.threads) {
		ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		opt.threads = ncpu > 0 && ncpu < 256 ? (uint32_t)ncpu : 2;
	}
	if (!opt.max_threads)
		opt.max_threads = opt.threads * 4 > 8 ? opt.threads * 4 : 8;
	if (opt.max_threads < opt.threads) {
		fprintf(stderr, "minirt: --max-threads %u is below the initial thread count %u\n",
			opt.max_threads, opt.threads);
		return -EINVAL;
	}
	return 0;
}

static void enter_phase(size_t i)
{
	rt_work_set_mix(&phases[i].mix);
	ev_phase_change((uint32_t)i, phases[i].name);
}

/* The load generator: requests at the phase's rate, bursts, phase changes. */
static int generate(uint64_t start)
{
	size_t phase = opt.pinned >= 0 ? (size_t)opt.pinned : 0;
	uint64_t phase_start = start, sent = 0, next_id = 1, next_print = start + 1000000000u;
	uint64_t next_burst = start, phase_ns = (uint64_t)(opt.phase_seconds * 1e9);
	uint64_t deadline = opt.seconds > 0 ? start + (uint64_t)(opt.seconds * 1e9) : 0;
	struct timespec tick = { 0, 2000000 };
	char line[512];

	enter_phase(phase);
	while (!stop_requested) {
		const struct phase *p = &phases[phase];
		uint64_t now = rt_now_ns(), due;

		if (deadline && now >= deadline)
			break;
		if (opt.pinned < 0 && now - phase_start >= phase_ns) {
			phase = (phase + 1) % NPHASES;
			phase_start = now;
			next_burst = now;
			sent = 0;
			enter_phase(phase);
			continue;
		}
		due = (uint64_t)(p->rate * (double)(now - phase_start) / 1e9);
		/* Arrivals more than a second late are dropped, as clients give up. */
		if (due > sent + (uint64_t)p->rate + 1)
			sent = due - (uint64_t)p->rate - 1;
		for (; sent < due && !stop_requested; sent++) {
			struct rt_work *w = rt_work_new_request(next_id++);

			if (!w)
				rt_oom("a work item");
			rt_pool_enqueue(w, false);
		}
		if (p->burst_items && now >= next_burst) {
			for (uint32_t i = 0; i < p->burst_items && !stop_requested; i++) {
				struct rt_work *w = rt_work_new_request(next_id++);

				if (!w)
					rt_oom("a work item");
				rt_pool_enqueue(w, false);
			}
			next_burst = now + (uint64_t)p->burst_period_ms * 1000000u;
		}
		if (opt.verbose && now >= next_print) {
			minirt_stats_format(line, sizeof(line), (double)(now - start) / 1e9, p->name);
			fprintf(stderr, "minirt: %s\n", line);
			next_print += 1000000000u;
		}
		nanosleep(&tick, NULL);
	}
	return (int)phase;
}

int main(int argc, char **argv)
{
	struct rt_heap_config heap_cfg = {
		.gen1_budget = 3u << 20,
		.gen2_min_budget = 16u << 20,
		.loh_budget = 32u << 20,
	};
	struct rt_pool_config pool_cfg = { .queue_cap = QUEUE_CAP, .retire_ms = 1000 };
	struct sigaction sa = { .sa_handler = on_signal };
	uint64_t start;
	char line[512];
	int ret, phase;

	if (parse_argv(argc, argv) < 0) {
		fprintf(stderr, "Try 'minirt --help'.\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	heap_cfg.gen0_budget = opt.gen0_budget;
	heap_cfg.verify = opt.verify;
	pool_cfg.min_threads = opt.threads;
	pool_cfg.max_threads = opt.max_threads;
	ret = rt_heap_init(&heap_cfg);
	if (ret < 0) {
		fprintf(stderr, "minirt: cannot create the heap: %s\n", strerror(-ret));
		return 1;
	}
	ret = rt_jit_init(rt_work_method_body, opt.perf_map);
	if (ret == 0)
		ret = rt_work_init();
	if (ret < 0) {
		fprintf(stderr, "minirt: cannot start the runtime: %s\n", strerror(-ret));
		return 1;
	}
	ret = rt_counters_init();
	if (ret < 0) {
		fprintf(stderr, "minirt: cannot create the System.Runtime counters: %s\n",
			strerror(-ret));
		return 1;
	}
	start = rt_now_ns();
	ret = rt_pool_start(&pool_cfg);
	if (ret < 0) {
		fprintf(stderr, "minirt: cannot start the thread pool: %s\n", strerror(-ret));
		return 1;
	}
	evr_example_wait_agent("minirt", &stop_requested);
	printf("ready %d\n", (int)getpid());

	phase = generate(start);

	rt_pool_stop();
	minirt_stats_format(line, sizeof(line), (double)(rt_now_ns() - start) / 1e9,
			    phases[phase].name);
	rt_work_fini();
	rt_jit_fini();
	rt_heap_fini();
	fprintf(stderr, "minirt: exit summary: %s\n", line);
	return 0;
}
