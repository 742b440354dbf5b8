// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * workload: a long-running instrumented program to attach to, for the demo and
 * the command-line tests.
 *
 * Provider "Demo", keywords 0x1 requests, 0x2 memory, 0x4 ticks, 0x8 phases:
 *   RequestStart (id 1, info, start) id, path, method
 *   RequestStop  (id 2, info, stop)  id, status, duration_us, ok: one request
 *                                on its thread, so viewers (Perfetto, through
 *                                evring convert --format chrome) show a slice
 *   Alloc        (id 3, verbose) addr, size, kind
 *   Tick         (id 4, info)    seq, thread, checksum
 *   Phase        (id 5, info)    seq, name: defined at run time (evr_event_define)
 *                                once the first second or --late-after ticks
 *                                have passed, so it reaches sessions that are
 *                                already running as late metadata.
 *
 * Each iteration of a worker thread writes RequestStart, Alloc, RequestStop and
 * Tick, and a Phase every 64 iterations once Phase exists. Tick sequence numbers
 * come from one counter shared by all threads: with --events N they are exactly
 * 1..N, and checksum = evr_workload_checksum(seq) (splitmix64's finalizer on seq),
 * which is what the tests verify after a round trip through a trace file.
 *
 * stdout, line-buffered, for whoever drives it:
 *   "ready PID"        providers registered and the agent socket is up
 *   "started"          workers running (after --wait-sessions is satisfied)
 *   "emitted SEQ"      every --report-every ticks (SEQ: ticks written so far)
 *   "stopped TICKS EVENTS"  --stop-at: before the process stops itself (SIGSTOP)
 *   "held TICKS EVENTS"     --stop-on-end: it writes no more
 *   "done TICKS EVENTS" on a normal exit
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <evring/evring.h>

#include "agent-ready.h"

#define KW_REQUESTS 0x1
#define KW_MEMORY 0x2
#define KW_TICKS 0x4
#define KW_PHASES 0x8

#define DEMO_EVENTS(EVENT)                                                                    \
	EVENT(demo_request_start, "RequestStart", 1, EVR_START(EVR_LEVEL_INFO), KW_REQUESTS,  \
	      (u64, id), (str, path), (str, method))                                         \
	EVENT(demo_request_stop, "RequestStop", 2, EVR_STOP(EVR_LEVEL_INFO), KW_REQUESTS,     \
	      (u64, id), (u32, status), (f64, duration_us), (bool, ok))                      \
	EVENT(demo_alloc, "Alloc", 3, EVR_LEVEL_VERBOSE, KW_MEMORY, (ptr, addr), (u64, size), \
	      (u8, kind))                                                                    \
	EVENT(demo_tick, "Tick", 4, EVR_LEVEL_INFO, KW_TICKS, (u64, seq), (u32, thread),     \
	      (u64, checksum))

EVR_PROVIDER_DECLARE(demo, DEMO_EVENTS)
EVR_PROVIDER_DEFINE(demo, "Demo", DEMO_EVENTS)

/* Events one iteration writes, for --rate (events per second per thread). */
#define EVENTS_PER_ITERATION 4u
#define PHASE_EVERY 64u

static const struct evr_field_desc phase_fields[] = {
	{ "seq", EVR_TYPE_U64 },
	{ "name", EVR_TYPE_STR },
};
static const struct evr_event_desc phase_desc = {
	.name = "Phase", .id = 5, .level = EVR_LEVEL_INFO, .keywords = KW_PHASES,
	.nfields = 2, .fields = phase_fields,
};

static const char *const paths[] = { "/", "/api/users", "/api/orders", "/static/app.js",
				     "/health" };
static const char *const methods[] = { "GET", "POST", "PUT" };
static const char *const phase_names[] = { "warmup", "steady", "gc", "compact" };

struct options {
	uint64_t rate;		/* events per second per thread, 0: unpaced */
	uint64_t events;	/* iterations in all, 0: until SIGINT/SIGTERM */
	uint32_t threads;
	uint64_t late_after;	/* ticks before Phase is defined (also: after 1 s) */
	uint32_t wait_sessions;
	uint64_t report_every;
	uint64_t stop_at;	/* stop the process (SIGSTOP) after this tick, 0: never */
	uint64_t hold_at;	/* --stop-on-end: write nothing after this tick, 0: never */
	bool pin;		/* thread i on the i-th CPU it may run on */
};

static cpu_set_t allowed;		/* --pin: the CPUs of the process at the start */

static struct options opt = { .threads = 2, .late_after = 1000 };
static _Atomic uint64_t next_seq;	/* last sequence number handed out */
static _Atomic uint64_t ticks_done;
static _Atomic uint64_t events_done;
static _Atomic bool phase_claimed;	/* a worker took on defining Phase */
static struct evr_event *_Atomic phase_event;
static volatile sig_atomic_t stop_requested;
static _Atomic bool held;		/* --stop-on-end: its ticks are all written */
static uint64_t start_ns;
static pthread_mutex_t report_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The checksum of Tick @seq (splitmix64's output function). */
static uint64_t evr_workload_checksum(uint64_t seq)
{
	uint64_t x = seq + 0x9e3779b97f4a7c15u;

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
	return x ^ (x >> 31);
}

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* Define Phase once, from whichever worker gets there first. */
static void maybe_define_phase(uint64_t seq)
{
	struct evr_event *ev;

	if (atomic_load_explicit(&phase_claimed, memory_order_relaxed))
		return;
	if (seq < opt.late_after && now_ns() - start_ns < 1000000000u)
		return;
	/* Relaxed: only who defines is decided here; phase_event publishes the result. */
	if (atomic_exchange_explicit(&phase_claimed, true, memory_order_relaxed))
		return;
	if (evr_event_define(&demo, &phase_desc, &ev) < 0) {
		fprintf(stderr, "workload: cannot define the Phase event\n");
		return;
	}
	/* Pairs with the acquire load in fire_phase(): a worker that sees the
	 * pointer sees a fully registered event. */
	atomic_store_explicit(&phase_event, ev, memory_order_release);
}

static uint64_t fire_phase(uint64_t seq)
{
	struct evr_event *ev = atomic_load_explicit(&phase_event, memory_order_acquire);
	union evr_value v[2];

	if (!ev || !evr_event_enabled(ev))
		return 0;
	v[0].u = seq;
	v[1].s = phase_names[(seq / PHASE_EVERY) % 4];
	evr_event_writev(ev, v, 2);
	return 1;
}

static void report(uint64_t ticks)
{
	pthread_mutex_lock(&report_lock);
	printf("emitted %" PRIu64 "\n", ticks);
	fflush(stdout);
	pthread_mutex_unlock(&report_lock);
}

/*
 * --pin: this thread on the (index mod n)-th of the n CPUs the process may run on.
 * Two writers of one process then never share a CPU, and one preempted in its
 * slow path (holding its CPU's ring) never makes the other drop events there.
 */
static void pin_thread(uint32_t index)
{
	int n = CPU_COUNT(&allowed), k = (int)(index % (uint32_t)(n > 0 ? n : 1));
	cpu_set_t one;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || k--)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0)
			fprintf(stderr, "workload: cannot pin thread %u to CPU %d\n", index, cpu);
		return;
	}
}

static void *worker(void *arg)
{
	uint32_t index = (uint32_t)(uintptr_t)arg;
	uint64_t interval = opt.rate ? 1000000000u * EVENTS_PER_ITERATION / opt.rate : 0;
	uint64_t next, events = 0, n = 0;
	uint64_t pace = interval && interval < 10000u ? 64u : 1u;
	struct timespec ts;

	if (opt.pin)
		pin_thread(index);
	next = now_ns();

	while (!stop_requested) {
		uint64_t seq = atomic_fetch_add(&next_seq, 1) + 1;
		uint64_t req = ((uint64_t)index << 40) | n++;
		uint64_t size = 16u << (seq % 12);
		uint64_t t0, ticks;
		void *p;

		if (opt.events && seq > opt.events)
			break;
		t0 = now_ns();
		demo_request_start(req, paths[seq % 5], methods[seq % 3]);
		p = malloc(size);
		demo_alloc(p, size, (uint8_t)(seq % 3));
		free(p);
		demo_request_stop(req, seq % 17 ? 200 : 500, (double)(now_ns() - t0) / 1000.0,
				  seq % 17 != 0);
		demo_tick(seq, index, evr_workload_checksum(seq));
		events += EVENTS_PER_ITERATION;

		maybe_define_phase(seq);
		if (seq % PHASE_EVERY == 0)
			events += fire_phase(seq);

		ticks = atomic_fetch_add(&ticks_done, 1) + 1;
		if (opt.report_every && ticks % opt.report_every == 0)
			report(ticks);
		/* Every record of the ticks so far is complete: a stopped process whose
		 * events are known exactly (one thread: its events are all of them). */
		if (opt.stop_at && ticks == opt.stop_at) {
			printf("stopped %" PRIu64 " %" PRIu64 "\n", ticks, events);
			raise(SIGSTOP);
		}
		/* Written, and no more: the end of its last session stops it (on_demo()). */
		if (opt.hold_at && ticks == opt.hold_at) {
			struct timespec ms = { 0, 10000000 };

			/* Held before said: a consumer told "held" stops its session at
			 * once, and on_demo() must see it (else the stop is answered). */
			atomic_store(&held, true);
			printf("held %" PRIu64 " %" PRIu64 "\n", ticks, events);
			while (!stop_requested)
				nanosleep(&ms, NULL);
			break;
		}
		/* A high rate (iterations under 10 us apart) is paced 64 iterations
		 * at a time, so that it costs no system call per iteration. */
		if (interval && n % pace == 0) {
			next += pace * interval;
			ts.tv_sec = (time_t)(next / 1000000000u);
			ts.tv_nsec = (long)(next % 1000000000u);
			while (next > now_ns() && !stop_requested &&
			       clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
		}
	}
	atomic_fetch_add(&events_done, events);
	return NULL;
}

/*
 * --stop-on-end: Demo's enablement changed. Its last session going away is the
 * agent stopping that session, on its own thread, before it answers the stop:
 * stopping the whole process here (SIGSTOP stops every thread) leaves that
 * consumer's stop unanswered, right after its last other question was
 * answered, which no timing from outside can arrange.
 */
static void on_demo(struct evr_provider *p, bool enabled, uint8_t level, uint64_t keywords,
		    const struct evr_provider_spec *args, void *ctx)
{
	(void)p, (void)level, (void)keywords, (void)args, (void)ctx;
	if (!enabled && atomic_load(&held))
		raise(SIGSTOP);
}

/* --wait-sessions K: start writing only once K sessions enable Demo. */
static void wait_sessions(uint32_t k)
{
	struct timespec ms = { 0, 1000000 };

	while (!stop_requested &&
	       (uint32_t)__builtin_popcountll(atomic_load(&demo.mask)) < k)
		nanosleep(&ms, NULL);
}

static int parse_u64(const char *s, const char *name, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || *s == '-') {
		fprintf(stderr, "workload: %s: '%s' is not a non-negative integer\n", name, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: workload [--threads T] [--rate N] [--events N] [--late-after N]\n"
		"                [--wait-sessions K] [--report-every N] [--stop-at N] [--pin]\n"
		"                [--stop-on-end N]\n"
		"  --threads T        worker threads (default 2)\n"
		"  --rate N           events per second per thread, 0: as fast as possible (default)\n"
		"  --events N         stop after N iterations in all (Tick seq 1..N); 0: until SIGINT\n"
		"  --late-after N     define the Phase event after N ticks or 1 s (default 1000)\n"
		"  --wait-sessions K  write nothing until K sessions enable Demo\n"
		"  --report-every N   print \"emitted SEQ\" every N ticks\n"
		"  --stop-at N       with one thread: after tick N, print \"stopped N EVENTS\" and stop\n"
		"                     the process (SIGSTOP), as a debugger or Ctrl-Z would\n"
		"  --stop-on-end N    with one thread: after tick N, print \"held N EVENTS\" and write\n"
		"                     no more; then, when its last session is stopped, stop the\n"
		"                     process (SIGSTOP) before that stop is answered\n"
		"  --pin              worker thread i on the i-th CPU the process may use (modulo)\n");
}

static int parse_argv(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "threads", required_argument, NULL, 't' },
		{ "rate", required_argument, NULL, 'r' },
		{ "events", required_argument, NULL, 'n' },
		{ "late-after", required_argument, NULL, 'l' },
		{ "wait-sessions", required_argument, NULL, 'w' },
		{ "report-every", required_argument, NULL, 'e' },
		{ "stop-at", required_argument, NULL, 's' },
		{ "stop-on-end", required_argument, NULL, 'E' },
		{ "pin", no_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "t:r:n:l:w:e:s:E:ph", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
				fprintf(stderr, "workload: --pin: sched_getaffinity: %s\n",
					strerror(errno));
				return -EINVAL;
			}
			opt.pin = true;
			break;
		case 't':
			if (parse_u64(optarg, "--threads", &v) < 0)
				return -EINVAL;
			if (v < 1 || v > 256) {
				fprintf(stderr, "workload: --threads: must be 1..256\n");
				return -EINVAL;
			}
			opt.threads = (uint32_t)v;
			break;
		case 'r':
			if (parse_u64(optarg, "--rate", &opt.rate) < 0)
				return -EINVAL;
			break;
		case 'n':
			if (parse_u64(optarg, "--events", &opt.events) < 0)
				return -EINVAL;
			break;
		case 'l':
			if (parse_u64(optarg, "--late-after", &opt.late_after) < 0)
				return -EINVAL;
			break;
		case 'w':
			if (parse_u64(optarg, "--wait-sessions", &v) < 0)
				return -EINVAL;
			if (v > 64) {
				fprintf(stderr, "workload: --wait-sessions: at most 64\n");
				return -EINVAL;
			}
			opt.wait_sessions = (uint32_t)v;
			break;
		case 's':
			if (parse_u64(optarg, "--stop-at", &opt.stop_at) < 0)
				return -EINVAL;
			break;
		case 'E':
			if (parse_u64(optarg, "--stop-on-end", &opt.hold_at) < 0)
				return -EINVAL;
			break;
		case 'e':
			if (parse_u64(optarg, "--report-every", &opt.report_every) < 0)
				return -EINVAL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "workload: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	if ((opt.stop_at || opt.hold_at) && opt.threads != 1) {
		fprintf(stderr, "workload: --stop-at, --stop-on-end: with --threads 1 only\n");
		return -EINVAL;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_signal };
	pthread_t *tids;
	uint32_t started = 0;
	int ret = 0;

	if (parse_argv(argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	/* Before any session can exist: no consumer reached the agent yet ("ready"). */
	if (opt.hold_at)
		demo.callback = on_demo;
	evr_example_wait_agent("workload", NULL);
	printf("ready %d\n", (int)getpid());
	if (opt.wait_sessions)
		wait_sessions(opt.wait_sessions);
	printf("started\n");

	tids = calloc(opt.threads, sizeof(*tids));
	if (!tids) {
		fprintf(stderr, "workload: out of memory\n");
		return 1;
	}
	start_ns = now_ns();
	for (uint32_t i = 0; i < opt.threads; i++) {
		int err = pthread_create(&tids[i], NULL, worker, (void *)(uintptr_t)i);

		if (err) {
			fprintf(stderr, "workload: cannot start thread %u: %s\n", i, strerror(err));
			stop_requested = 1;
			ret = 1;
			break;
		}
		started++;
	}
	for (uint32_t i = 0; i < started; i++)
		pthread_join(tids[i], NULL);
	free(tids);
	printf("done %" PRIu64 " %" PRIu64 "\n", atomic_load(&ticks_done),
	       atomic_load(&events_done));
	return ret;
}
