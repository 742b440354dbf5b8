// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * evring-bench: cost of an event on the write path, with a reader draining the
 * rings concurrently (as LTTng's consumer daemon does in shared/anchors/lttng),
 * and the reader's own throughput. Optionally the same loop through an LTTng-UST
 * tracepoint with a live LTTng session, in the same run.
 *
 * Every enabled run checks conservation: for each session, events received by
 * the reader plus events reported lost equals events emitted, exactly.
 *
 * The counter scenarios time evr_counter_record(), evr_counter_add() and
 * evr_histogram_record() with a session sampling every 100 ms (and record()
 * with none), and check that the session's samples account for every value
 * recorded, exactly.
 */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <time.h>
#include <unistd.h>

#include <evring/counters.h>
/* The span reader (private to evring: the benchmark drains sessions as the recorder does). */
#include <evring/shm.h>

#include "bench-events.h"
#ifdef EVR_HAVE_LTTNG
#include "lttng-tp.h"

#ifndef EVR_VERSION
#define EVR_VERSION "unknown"
#endif
#endif

#define MAX_RUNS 64
#define MAX_THREADS 256
#define MAX_SESSIONS 64

struct opts {
	bool json;
	bool chase;
	bool records;			/* --drain records: readers decode every record */
	bool vs_lttng;
	int runs;
	uint64_t events;		/* per thread, enabled scenarios */
	uint64_t disabled_events;	/* per thread, disabled and baseline */
	uint64_t reader_events;
	uint64_t counter_events;	/* per run, counter scenarios; 0: 20 x events */
	uint64_t ring_size;
	const char *only;
	struct evr_clock_info clock;	/* what the events carry (--clock, EVR_CLOCK) */
};

enum loop_kind {
	LOOP_EVRING, LOOP_STR40, LOOP_BYTES200, LOOP_SWITCH, LOOP_EMPTY, LOOP_LTTNG,
	LOOP_CTR_MEAN, LOOP_CTR_ADD, LOOP_CTR_HIST
};

/* Encoded payload bytes of the LOOP_EVRING .. LOOP_SWITCH events. */
static const int loop_payload[] = { 20, 8 + 4 + 40, 8 + 4 + 200, 20 };

/*
 * What LOOP_STR40 and LOOP_BYTES200 write: not constants, so that the length
 * of the string and the bytes are found at run time, as in real code.
 */
static char loop_str40[41];
static uint8_t loop_bytes200[200];

struct result {
	const char *scenario;
	int threads;
	int sessions;
	int runs;
	int payload;			/* bytes; 0: the 20-byte event */
	enum loop_kind kind;		/* enabled and writer_* scenarios */
	bool full;			/* writer_full*: into a full ring */
	uint64_t events;		/* per thread per run */
	double ns[MAX_RUNS];
	double cpu_ns[MAX_RUNS];	/* enabled: the writers' own CPU time per event */
	double ns2[MAX_RUNS];		/* switch_first: the second write after the switch */
	const struct result *base;	/* enabled_1t of the same rounds, if it ran */
	double rps[MAX_RUNS];		/* reader: records per second */
	double rtt[MAX_RUNS];		/* enabled: cpu_pair_rtt() around each run */
	double lttng_ns[MAX_RUNS];
	int lttng_runs;
	uint64_t lost;
	struct evr_span_wait_stats waits;	/* packet readers' sleeps, all runs */
};

/* The counter the LOOP_CTR_* loops record into. */
static struct evr_counter *loop_ctr;

struct worker {
	pthread_t th;
	int idx;
	enum loop_kind kind;
	uint64_t n;
	double ns;
	double cpu_ns;			/* the thread's CPU time per iteration */
	double ns2;			/* LOOP_SWITCH: the second write's ns */
	pthread_barrier_t *barrier;
} __attribute__((aligned(64)));

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static uint64_t thread_cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % get_nprocs(), &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/*
 * The CPUs no writer of a run is pinned to: writers take CPUs 0 to @busy - 1
 * (pin()). Readers go there, so that the scheduler does not wake a reader on a
 * pinned writer's CPU, where its wall-clock time would be the writer's (seen:
 * 24 ns an event instead of 14.5 for 200 bytes, the writer's own CPU time
 * 16.6). Return: false when every CPU has a writer (the scheduler decides).
 */
static bool free_cpus(int busy, cpu_set_t *ret)
{
	if (sched_getaffinity(0, sizeof(*ret), ret) < 0)
		CPU_ZERO(ret);
	for (int c = 0; c < busy && c < CPU_SETSIZE; c++)
		CPU_CLR(c, ret);
	return CPU_COUNT(ret) > 0;
}

/* @set as a list: "1", "1-3", "2,4-7". */
static void print_cpus(const cpu_set_t *set)
{
	const char *sep = "";

	for (int c = 0; c < CPU_SETSIZE; c++) {
		int e = c;

		if (!CPU_ISSET(c, set))
			continue;
		while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, set))
			e++;
		if (e > c)
			printf("%s%d-%d", sep, c, e);
		else
			printf("%s%d", sep, c);
		sep = ",";
		c = e;
	}
}

/*
 * How long a cache line takes to go from CPU 0 to CPU 1 and back (ns, the
 * median of 9 batches of 500 round trips), or 0 without both CPUs. On a virtual
 * machine this is where the host put the two vCPUs: about 55 ns when they
 * share a cache, 300 and more when they do not, which the host changes while
 * it runs (seen: for 0.3 s in 20 s). A writer whose lines its reader takes
 * then pays several times over for each line it writes again (enabled runs
 * measured 50-100 ns an event where they otherwise take 14), so each enabled
 * run reports it, taken before and after.
 */
static int cmp_double(const void *a, const void *b);

struct rtt_arg {
	_Atomic uint64_t ball;
	uint64_t n;
};

static void *rtt_pong(void *arg)
{
	struct rtt_arg *a = arg;

	pin(1);
	for (uint64_t i = 1; i <= a->n; i++) {
		while (atomic_load_explicit(&a->ball, memory_order_acquire) != 2 * i - 1)
			;
		atomic_store_explicit(&a->ball, 2 * i, memory_order_release);
	}
	return NULL;
}

static void *rtt_ping(void *arg)
{
	struct rtt_arg *a = arg;
	double *batches = (double *)(a + 1);
	uint64_t i = 1;

	pin(0);
	for (int b = 0; b < 9; b++) {
		uint64_t t0 = now_ns();

		for (int k = 0; k < 500; k++, i++) {
			atomic_store_explicit(&a->ball, 2 * i - 1, memory_order_release);
			while (atomic_load_explicit(&a->ball, memory_order_acquire) != 2 * i)
				;
		}
		batches[b] = (double)(now_ns() - t0) / 500.0;
	}
	return NULL;
}

static double cpu_pair_rtt(void)
{
	struct {
		struct rtt_arg a;
		double batches[9];
	} __attribute__((aligned(64))) x = { .a = { .n = 9 * 500 } };
	pthread_t ping, pong;
	cpu_set_t allowed;

	/* Both threads spin: never on one CPU (taskset), where each would wait
	 * out the other's time slice. */
	if (get_nprocs() < 2 || sched_getaffinity(0, sizeof(allowed), &allowed) < 0 ||
	    !CPU_ISSET(0, &allowed) || !CPU_ISSET(1, &allowed))
		return 0;
	pthread_create(&pong, NULL, rtt_pong, &x.a);
	pthread_create(&ping, NULL, rtt_ping, &x.a);
	pthread_join(ping, NULL);
	pthread_join(pong, NULL);
	qsort(x.batches, 9, sizeof(double), cmp_double);
	return x.batches[4];
}

static int writer_cpus(int threads, enum loop_kind kind)
{
	return kind == LOOP_SWITCH ? 1 : threads;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const uint64_t n = w->n, tid = (uint64_t)w->idx;
	uint64_t t0, t1, c0, c1;

	pin(w->kind == LOOP_SWITCH ? 0 : w->idx);
	pthread_barrier_wait(w->barrier);
	c0 = thread_cpu_ns();
	t0 = now_ns();
	switch (w->kind) {
	case LOOP_EVRING:
		for (uint64_t i = 0; i < n; i++)
			bench_ev(i, tid, (uint32_t)i);
		break;
	case LOOP_STR40:
		for (uint64_t i = 0; i < n; i++) {
			const char *str = loop_str40;

			/* Hidden from the optimizer: its length is measured every time. */
			__asm__("" : "+r"(str));
			bench_str(i, str);
		}
		break;
	case LOOP_BYTES200:
		for (uint64_t i = 0; i < n; i++) {
			const uint8_t *b = loop_bytes200;
			uint32_t len = sizeof(loop_bytes200);

			__asm__("" : "+r"(b), "+r"(len));
			bench_bytes(i, b, len);
		}
		break;
	case LOOP_SWITCH: {
		/*
		 * Two threads on one CPU take turns: each write here is the first
		 * of its thread since the other ran (sched_yield() switches to it),
		 * and is followed at once by a second one. Each timed alone.
		 */
		uint64_t first = 0, second = 0;

		for (uint64_t i = 0; i < n; i++) {
			uint64_t a, b, c;

			sched_yield();
			a = now_ns();
			bench_ev(i, tid, (uint32_t)i);
			b = now_ns();
			bench_ev(i, tid, (uint32_t)i);
			c = now_ns();
			first += b - a;
			second += c - b;
		}
		w->ns2 = (double)second / (double)n;
		t1 = now_ns();
		c1 = thread_cpu_ns();
		w->ns = (double)first / (double)n;
		w->cpu_ns = (double)(c1 - c0) / (double)n;
		return NULL;
	}
	case LOOP_EMPTY:
		for (uint64_t i = 0; i < n; i++)
			__asm__ __volatile__("" ::: "memory");
		break;
	case LOOP_CTR_MEAN:
		for (uint64_t i = 0; i < n; i++)
			evr_counter_record(loop_ctr, (double)(i & 1023));
		break;
	case LOOP_CTR_ADD:
		for (uint64_t i = 0; i < n; i++)
			evr_counter_add(loop_ctr, 2.0);
		break;
	case LOOP_CTR_HIST:
		for (uint64_t i = 0; i < n; i++)
			evr_histogram_record(loop_ctr, (double)(i & 1023) + 1.0);
		break;
	case LOOP_LTTNG:
#ifdef EVR_HAVE_LTTNG
		for (uint64_t i = 0; i < n; i++)
			lttng_ust_tracepoint(evring_bench, ev, i, tid, (uint32_t)i);
#endif
		break;
	}
	t1 = now_ns();
	c1 = thread_cpu_ns();
	w->ns = (double)(t1 - t0) / (double)n;
	w->cpu_ns = (double)(c1 - c0) / (double)n;
	return NULL;
}

/*
 * Runs @threads loops of @n iterations; returns the mean per-thread
 * ns/iteration, and in *@ret_cpu (if not NULL) the mean of the threads' own
 * CPU time per iteration: what a thread costs, without the time others (the
 * readers, other programs) held its CPU.
 */
static double run_loops_cpu(int threads, enum loop_kind kind, uint64_t n, double *ret_cpu,
			    double *ret_ns2)
{
	struct worker w[MAX_THREADS];
	pthread_barrier_t barrier;
	double sum = 0, cpu = 0, ns2 = 0;

	pthread_barrier_init(&barrier, NULL, (unsigned int)threads);
	for (int i = 0; i < threads; i++) {
		w[i] = (struct worker){ .idx = i, .kind = kind, .n = n, .barrier = &barrier };
		pthread_create(&w[i].th, NULL, worker_main, &w[i]);
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(w[i].th, NULL);
		sum += w[i].ns;
		cpu += w[i].cpu_ns;
		ns2 += w[i].ns2;
	}
	pthread_barrier_destroy(&barrier);
	if (ret_cpu)
		*ret_cpu = cpu / threads;
	if (ret_ns2)
		*ret_ns2 = ns2 / threads;
	return sum / threads;
}

static double run_loops(int threads, enum loop_kind kind, uint64_t n)
{
	return run_loops_cpu(threads, kind, n, NULL, NULL);
}

/* ---- the concurrent readers ---- */

/*
 * One reader thread per session, as one consumer per session would be. By
 * default it drains as `evring record` does: whole packets (spans) as their
 * writers finish them, counted from their headers and copied out in one piece
 * (here to a buffer, where the recorder writes them to its file; LTTng's
 * consumer daemon likewise moves whole sub-buffers). --drain records decodes
 * every record instead, as `evring dump` or clrtop do, and then waits for the
 * next complete packet once caught up (evr_reader_wait() returns at once when
 * one is ready); --chase keeps that reader polling, waiting only after a pass
 * that found nothing: it then follows the writer record by record, sharing the
 * cache lines the writer is filling.
 */
struct drain {
	pthread_t th;
	bool chase;
	struct evr_reader *r;		/* --drain records */
	struct evr_span_reader *sr;	/* packets */
	int bell;
	bool pinned;			/* to cpus */
	cpu_set_t cpus;
	uint32_t nr_rings;
	uint8_t *buf;
	uint64_t received;
	uint64_t lost;
	uint64_t checksum;
};

static void *drain_spans_main(void *arg)
{
	struct drain *d = arg;
	struct evr_shm_span sp;
	int n = 0;

	if (d->pinned)
		pthread_setaffinity_np(pthread_self(), sizeof(d->cpus), &d->cpus);
	while (!evr_span_reader_drained(d->sr)) {
		for (int k = 0; k < 64 && (n = evr_span_reader_get(d->sr, EVR_SPAN_WHOLE, &sp)) > 0;
		     k++) {
			memcpy(d->buf, sp.data, sp.len);
			d->checksum += sp.len ? d->buf[sp.len - 1] : 0;
			d->received += sp.events;
			d->lost += sp.lost;
			if (evr_span_reader_done(d->sr, &sp) < 0) {
				fprintf(stderr, "evring-bench: a span of ring %u was overwritten "
					"in discard mode\n", sp.ring);
				exit(1);
			}
		}
		if (n < 0) {
			fprintf(stderr, "evring-bench: reading spans: %s\n", strerror(-n));
			exit(1);
		}
		if (n == 0 && !evr_span_reader_drained(d->sr))
			(void)evr_span_reader_wait_fds(d->sr, d->bell, NULL, 0, 2);
	}
	/* What the producer still counted as lost when the session ended. */
	for (uint32_t ring = 0; ring < d->nr_rings; ring++) {
		uint64_t l = 0;

		if (evr_span_reader_final_lost(d->sr, ring, &l) == 0)
			d->lost += l;
	}
	return NULL;
}

static void *drain_main(void *arg)
{
	struct drain *d = arg;
	struct evr_record rec;

	if (d->pinned)
		pthread_setaffinity_np(pthread_self(), sizeof(d->cpus), &d->cpus);
	while (!evr_reader_ended(d->r)) {
		int k = 0, n = 0;

		while (k < 4096 && (n = evr_reader_next(d->r, &rec)) > 0) {
			if (rec.type == EVR_REC_EVENT) {
				uint64_t a;

				memcpy(&a, rec.payload, sizeof(a));
				d->checksum += a;
				d->received++;
			} else {
				d->lost += rec.lost;
			}
			k++;
		}
		evr_reader_release(d->r);
		if (n == 0 && !evr_reader_ended(d->r) && (!d->chase || k == 0))
			evr_reader_wait(d->r, 2);
	}
	return NULL;
}

static void die(const char *what, const char *err)
{
	fprintf(stderr, "evring-bench: %s: %s\n", what, err);
	exit(1);
}

/* Iterations per thread: a LOOP_SWITCH iteration is two context switches. */
static uint64_t events_of(const struct opts *o, enum loop_kind kind)
{
	return kind == LOOP_SWITCH ? (o->events + 19) / 20 : o->events;
}

/*
 * One enabled run of @kind (LOOP_EVRING, LOOP_STR40 or LOOP_BYTES200): returns
 * ns/event; adds losses to *lost; checks conservation.
 */
static double enabled_run(const struct opts *o, int threads, int sessions, enum loop_kind kind,
			  uint64_t *lost, double *ret_cpu, double *ret_ns2,
			  struct evr_span_wait_stats *waits)
{
	struct evr_session *s[MAX_SESSIONS];
	struct drain d[MAX_SESSIONS];
	char err[256];
	double ns;

	for (int i = 0; i < sessions; i++) {
		struct evr_session_opts so = {
			.providers = "Bench:0x1:4",
			.ring_size = o->ring_size,
			.mode = EVR_MODE_DISCARD,
		};

		if (evr_session_start(&so, &s[i], err, sizeof(err)) < 0)
			die("cannot start a session", err);
		d[i] = (struct drain){ .chase = o->chase, .bell = evr_session_doorbell_fd(s[i]) };
		d[i].pinned = free_cpus(writer_cpus(threads, kind), &d[i].cpus);
		if (o->records) {
			if (evr_session_reader_new(s[i], EVR_READER_GATING, &d[i].r) < 0)
				die("cannot read a session", "out of memory");
		} else {
			struct evr_shm_hdr *h = (struct evr_shm_hdr *)evr_session_shm(s[i]);

			d[i].nr_rings = h->nr_rings;
			d[i].buf = malloc(EVR_PACKET_SIZE_MAX);
			if (!d[i].buf || evr_span_reader_new(h, EVR_READER_GATING, &d[i].sr) < 0)
				die("cannot read a session", "out of memory");
		}
	}
	for (int i = 0; i < sessions; i++)
		pthread_create(&d[i].th, NULL, o->records ? drain_main : drain_spans_main, &d[i]);
	ns = run_loops_cpu(threads, kind, events_of(o, kind), ret_cpu, ret_ns2);
	for (int i = 0; i < sessions; i++)
		evr_session_stop(s[i]);
	for (int i = 0; i < sessions; i++) {
		uint64_t emitted = events_of(o, kind) * (uint64_t)threads * (kind == LOOP_SWITCH ? 2 : 1);

		pthread_join(d[i].th, NULL);
		if (d[i].received + d[i].lost != emitted) {
			fprintf(stderr,
				"evring-bench: conservation violated in session %d: emitted %" PRIu64
				", received %" PRIu64 ", lost %" PRIu64 "\n",
				i, emitted, d[i].received, d[i].lost);
			exit(1);
		}
		*lost += d[i].lost;
		if (d[i].sr) {
			struct evr_span_wait_stats w;

			evr_span_reader_wait_stats(d[i].sr, &w);
			waits->doorbell += w.doorbell;
			waits->paced += w.paced;
		}
		evr_reader_free(d[i].r);
		evr_span_reader_free(d[i].sr);
		free(d[i].buf);
		evr_session_free(s[i]);
	}
	return ns;
}

/*
 * The writer alone: no reader runs while it writes (overwrite mode, so it never
 * waits for one), of the 20-byte event, the 40-byte string or the 200 bytes:
 * what the write path costs by itself, apart from a reader's traffic. A
 * passive reader attached before the first write then checks conservation:
 * what it finds plus what it was lapped by (counted exactly from the packet
 * headers) is everything emitted.
 */
/*
 * The writer with no reader running: an overwrite session, or with @full a
 * discard session of 1 MiB rings whose gating reader reads nothing until the
 * loop is done, so that all but the first few thousand events are dropped
 * (and counted).
 */
static double writer_only_run(const struct opts *o, enum loop_kind kind, bool full,
			      uint64_t *ret_lost)
{
	struct evr_session_opts so = {
		.providers = "Bench:0x1:4",
		.ring_size = full ? 1u << 20 : o->ring_size,
		.mode = full ? EVR_MODE_DISCARD : EVR_MODE_OVERWRITE,
	};
	struct evr_session *s;
	struct evr_reader *r;
	struct evr_record rec;
	uint64_t got = 0, lost = 0;
	char err[256];
	double ns;

	if (evr_session_start(&so, &s, err, sizeof(err)) < 0)
		die("cannot start a session", err);
	if (evr_session_reader_new(s, full ? EVR_READER_GATING : 0, &r) < 0)
		die("cannot read a session", "out of memory");
	ns = run_loops(1, kind, o->events);
	evr_session_stop(s);
	while (evr_reader_next(r, &rec) > 0) {
		if (rec.type == EVR_REC_EVENT)
			got++;
		else
			lost += rec.lost;
	}
	if (got + lost != o->events || (full && lost < o->events / 2)) {
		fprintf(stderr,
			"evring-bench: conservation violated (writer_only%s): emitted %" PRIu64
			", received %" PRIu64 ", lost %" PRIu64 "\n", full ? "_full" : "", o->events,
			got, lost);
		exit(1);
	}
	*ret_lost += lost;
	evr_reader_free(r);
	evr_session_free(s);
	return ns;
}

/*
 * enabled_1t with the fallback clock, beside the TSC's in the same rounds:
 * libevring chose its clock when it loaded, so one run of it is a child, this
 * program again with --clock monotonic (which checks conservation and exits 1
 * if it fails). Returns ns/event; sets *ret_cpu, adds its losses to *lost.
 */
static double monotonic_run(const struct opts *o, uint64_t *lost, double *ret_cpu)
{
	char cmd[256], line[2048];
	double ns = -1, cpu = -1;
	FILE *f;
	int st;

	snprintf(cmd, sizeof(cmd),
		 "/proc/%d/exe --clock monotonic --json --runs 1 --scenario enabled_1t --events %" PRIu64
		 " --ring-size %" PRIu64 "%s%s",
		 (int)getpid(), o->events, o->ring_size, o->chase ? " --chase" : "",
		 o->records ? " --drain records" : "");
	f = popen(cmd, "r");
	if (!f)
		die("enabled_1t_monotonic", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		const char *p;

		if ((p = strstr(line, "\"ns_per_event_median\":")))
			ns = strtod(p + 22, NULL);
		if ((p = strstr(line, "\"cpu_ns_per_event_median\":")))
			cpu = strtod(p + 26, NULL);
		if ((p = strstr(line, "\"events_lost\":")))
			*lost += strtoull(p + 14, NULL, 10);
	}
	st = pclose(f);
	if (st != 0 || ns < 0 || cpu < 0)
		die("enabled_1t_monotonic", "the run with --clock monotonic failed");
	*ret_cpu = cpu;
	return ns;
}

/* Fill one ring, then time a reader over it. Returns ns/record; sets *rps. */
static double reader_run(const struct opts *o, double *rps)
{
	struct evr_session_opts so = { .providers = "Bench:0x1:4", .mode = EVR_MODE_DISCARD };
	struct evr_session *s;
	struct evr_reader *r;
	struct evr_record rec;
	uint64_t got = 0, sum = 0, t0, t1;
	char err[256];

	/* Room for every record (40 bytes each) plus packet overhead. */
	so.ring_size = 1u << 20;
	while (so.ring_size < o->reader_events * 48)
		so.ring_size <<= 1;
	if (evr_session_start(&so, &s, err, sizeof(err)) < 0)
		die("cannot start a session", err);
	run_loops(1, LOOP_EVRING, o->reader_events);
	evr_session_stop(s);
	if (evr_session_reader_new(s, EVR_READER_GATING, &r) < 0)
		die("cannot read a session", "out of memory");
	t0 = now_ns();
	while (evr_reader_next(r, &rec) > 0) {
		if (rec.type == EVR_REC_EVENT) {
			uint64_t a;

			memcpy(&a, rec.payload, sizeof(a));
			sum += a;
			got++;
		}
	}
	t1 = now_ns();
	if (got != o->reader_events || sum != o->reader_events * (o->reader_events - 1) / 2) {
		fprintf(stderr, "evring-bench: reader got %" PRIu64 " of %" PRIu64 " records\n",
			got, o->reader_events);
		exit(1);
	}
	evr_reader_free(r);
	evr_session_free(s);
	*rps = (double)got * 1e9 / (double)(t1 - t0);
	return (double)(t1 - t0) / (double)got;
}

/* ---- counters ---- */

static struct evr_event *const ctr_no_events[] = { NULL };
static struct evr_provider ctr_provider = { .name = "BenchCounters", .events = ctr_no_events };

static uint64_t counter_events(const struct opts *o)
{
	return o->counter_events ? o->counter_events : 20 * o->events;
}

/*
 * What one CounterMean/CounterHistogram sample counted, or one CounterRate
 * sample's increment: the field after the three strings and interval_ms.
 * Returns false for any other record.
 */
static bool counter_sample(const struct evr_record *rec, double *ret)
{
	const struct evr_event *ev;
	uint32_t off = 0, n;

	if (rec->type != EVR_REC_EVENT || !(ev = evr_event_by_rid(rec->event_id)) ||
	    strncmp(ev->desc->name, "Counter", 7) != 0)
		return false;
	for (int i = 0; i < 3; i++) {
		if (rec->len < off + 4)
			die("counter sample", "truncated");
		memcpy(&n, (const uint8_t *)rec->payload + off, 4);
		off += 4 + n;
	}
	off += 4; /* interval_ms */
	if (rec->len < off + 8)
		die("counter sample", "truncated");
	if (strcmp(ev->desc->name, "CounterRate") == 0) {
		memcpy(ret, (const uint8_t *)rec->payload + off, 8);
	} else {
		uint64_t count;

		memcpy(&count, (const uint8_t *)rec->payload + off, 8);
		*ret = (double)count;
	}
	return true;
}

/*
 * One counter run: @kind recorded @n times on one thread, sampled by a session
 * every 100 ms when @sampled (nothing is recorded otherwise). Then the session's
 * samples must account for every value recorded: counts for MEAN and HISTOGRAM,
 * the increments for INCREMENT (2 per call). Returns ns per call.
 */
static double counter_run(const struct opts *o, uint32_t kind, bool sampled)
{
	static bool registered;
	struct evr_counter_desc d = { .name = "bench", .unit = "ns", .kind = kind };
	struct evr_session_opts so = {
		.providers = "BenchCounters",
		.ring_size = 1u << 20,
		.mode = EVR_MODE_DISCARD,
		.interval_ms = 100,
	};
	enum loop_kind loop = kind == EVR_COUNTER_MEAN	    ? LOOP_CTR_MEAN :
			      kind == EVR_COUNTER_INCREMENT ? LOOP_CTR_ADD :
							      LOOP_CTR_HIST;
	uint64_t n = counter_events(o);
	double want = kind == EVR_COUNTER_INCREMENT ? 2.0 * (double)n : (double)n, got = 0;
	struct evr_session *s = NULL;
	struct evr_reader *r = NULL;
	struct evr_record rec;
	char err[256];
	double ns;

	if (!registered && evr_provider_register(&ctr_provider) < 0)
		die("cannot register the counters provider", "out of memory");
	registered = true;
	if (evr_counter_create(&ctr_provider, &d, &loop_ctr) < 0)
		die("cannot create a counter", "out of memory");
	if (sampled) {
		if (evr_session_start(&so, &s, err, sizeof(err)) < 0)
			die("cannot start a session", err);
		if (evr_session_reader_new(s, EVR_READER_GATING, &r) < 0)
			die("cannot read a session", "out of memory");
	}
	ns = run_loops(1, loop, n);
	/* The samples that follow the loop account for all of it: wait for them
	 * (every 100 ms). */
	while (sampled && got < want) {
		double v;

		while (evr_reader_next(r, &rec) > 0)
			if (counter_sample(&rec, &v))
				got += v;
		evr_reader_release(r);
		if (got < want)
			evr_reader_wait(r, 50);
	}
	if (got != (sampled ? want : 0)) {
		fprintf(stderr, "evring-bench: counter conservation violated: recorded %.0f, sampled %.0f\n",
			want, got);
		exit(1);
	}
	if (sampled) {
		evr_reader_free(r);
		evr_session_free(s);
	}
	evr_counter_free(loop_ctr);
	loop_ctr = NULL;
	return ns;
}

#ifdef EVR_HAVE_LTTNG
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A thread of LTTng's consumer daemon and the CPUs it had. */
struct consumer_thread {
	pid_t tid;
	cpu_set_t cpus;
};

#define CONSUMER_THREADS_MAX 256

/*
 * Move the threads of every lttng-consumerd (LTTng's reader) to @cpus for one
 * run, as evring's readers are, saving the CPUs each had in @saved. Threads
 * that cannot be moved (another user's daemon) stay where they are. Returns
 * how many were moved.
 */
static size_t consumers_pin(const cpu_set_t *cpus, struct consumer_thread *saved)
{
	size_t n = 0;
	struct dirent *p;
	DIR *proc = opendir("/proc");

	while (proc && (p = readdir(proc)) && n < CONSUMER_THREADS_MAX) {
		char path[300], comm[32] = "";
		struct dirent *t;
		DIR *tasks;
		FILE *f;

		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", p->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		if (strcmp(comm, "lttng-consumerd\n") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", p->d_name);
		tasks = opendir(path);
		while (tasks && (t = readdir(tasks)) && n < CONSUMER_THREADS_MAX) {
			pid_t tid = (pid_t)strtol(t->d_name, NULL, 10);

			if (tid <= 0 || sched_getaffinity(tid, sizeof(saved[n].cpus), &saved[n].cpus) < 0)
				continue;
			saved[n].tid = tid;
			if (sched_setaffinity(tid, sizeof(*cpus), cpus) == 0)
				n++;
		}
		if (tasks)
			closedir(tasks);
	}
	if (proc)
		closedir(proc);
	return n;
}

static void consumers_restore(const struct consumer_thread *saved, size_t n)
{
	for (size_t i = 0; i < n; i++)
		(void)sched_setaffinity(saved[i].tid, sizeof(saved[i].cpus), &saved[i].cpus);
}

/* The anchor's channel: per-UID per-CPU, 8 x 1 MiB sub-buffers, discard, tmpfs. */
static double lttng_run(const struct opts *o)
{
	struct consumer_thread saved[CONSUMER_THREADS_MAX];
	size_t moved = 0;
	cpu_set_t cpus;
	int pid = getpid();
	double ns;

	if (sh("lttng create evring-bench-%d --output=/dev/shm/evring-bench-lttng-%d >/dev/null 2>&1",
	       pid, pid) != 0)
		die("--vs-lttng", "cannot create an LTTng session (is lttng-sessiond running?)");
	if (sh("lttng enable-channel -s evring-bench-%d --userspace --subbuf-size=1M --num-subbuf=8 ch"
	       " >/dev/null 2>&1 && lttng enable-event -s evring-bench-%d --userspace -c ch"
	       " 'evring_bench:*' >/dev/null 2>&1 && lttng start evring-bench-%d >/dev/null 2>&1",
	       pid, pid, pid) != 0) {
		sh("lttng destroy evring-bench-%d >/dev/null 2>&1", pid);
		die("--vs-lttng", "cannot enable the LTTng channel and event");
	}
	if (free_cpus(writer_cpus(1, LOOP_LTTNG), &cpus))
		moved = consumers_pin(&cpus, saved);
	ns = run_loops(1, LOOP_LTTNG, o->events);
	consumers_restore(saved, moved);
	sh("lttng stop evring-bench-%d >/dev/null 2>&1; lttng destroy evring-bench-%d >/dev/null 2>&1;"
	   " rm -rf /dev/shm/evring-bench-lttng-%d", pid, pid, pid);
	return ns;
}
#endif

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(const double *v, int n, double *min, double *max)
{
	double s[MAX_RUNS];

	memcpy(s, v, sizeof(double) * (size_t)n);
	qsort(s, (size_t)n, sizeof(double), cmp_double);
	if (min)
		*min = s[0];
	if (max)
		*max = s[n - 1];
	return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

static void report(const struct opts *o, const struct result *r)
{
	double min, max, med = median(r->ns, r->runs, &min, &max);

	if (o->json) {
		printf("{\"scenario\":\"%s\",\"threads\":%d,\"sessions\":%d,\"payload_bytes\":%d,"
		       "\"runs\":%d,\"events_per_thread\":%" PRIu64 ",\"ns_per_event_median\":%.2f,"
		       "\"ns_per_event_min\":%.2f,\"ns_per_event_max\":%.2f,\"events_lost\":%" PRIu64,
		       r->scenario, r->threads, r->sessions,
		       strncmp(r->scenario, "counter_", 8) == 0 ? 8 : r->payload ? r->payload : 20,
		       r->runs, r->events, med,
		       min, max, r->lost);
		printf(",\"clock\":\"%s\"",
		       o->clock.kind == EVR_CLOCK_TSC && strcmp(r->scenario, "enabled_1t_monotonic")
			       ? "tsc" : "monotonic");
		if (strncmp(r->scenario, "enabled_", 8) == 0 || strcmp(r->scenario, "sessions_4") == 0) {
			cpu_set_t cpus;

			printf(",\"readers\":\"%s\",\"drain\":\"%s\"",
			       o->chase ? "chase" : "wait", o->records ? "records" : "packets");
			/* Where the readers ran: the CPUs no writer had (free_cpus()). */
			printf(",\"reader_cpus\":\"");
			if (free_cpus(writer_cpus(r->threads, r->kind), &cpus))
				print_cpus(&cpus);
			else
				printf("any");
			printf("\"");
			printf(",\"cpu_ns_per_event_median\":%.2f",
			       median(r->cpu_ns, r->runs, NULL, NULL));
			double rmin, rmax, rmed = median(r->rtt, r->runs, &rmin, &rmax);

			if (rmin > 0) {
				printf(",\"cpu_pair_rtt_ns_median\":%.0f,\"cpu_pair_rtt_ns_max\":%.0f",
				       rmed, rmax);
			}
			if (!o->records)
				printf(",\"reader_doorbell_waits\":%" PRIu64
				       ",\"reader_paced_waits\":%" PRIu64,
				       r->waits.doorbell, r->waits.paced);
		}
		if (strcmp(r->scenario, "switch_first") == 0)
			printf(",\"second_ns_per_event_median\":%.2f",
			       median(r->ns2, r->runs, NULL, NULL));
		if (r->base)
			printf(",\"ratio_to_%s\":%.2f", r->base->scenario,
			       med / median(r->base->ns, r->base->runs, NULL, NULL));
		if (r->base && strcmp(r->base->scenario, "enabled_1t") == 0)
			printf(",\"cpu_ratio_to_enabled_1t\":%.2f",
			       median(r->cpu_ns, r->runs, NULL, NULL) /
				       median(r->base->cpu_ns, r->base->runs, NULL, NULL));
		if (strcmp(r->scenario, "reader") == 0)
			printf(",\"records_per_s_median\":%.0f", median(r->rps, r->runs, NULL, NULL));
		if (r->lttng_runs) {
			double l = median(r->lttng_ns, r->lttng_runs, NULL, NULL);

			printf(",\"lttng_ns_per_event_median\":%.2f,\"ratio\":%.2f", l, l / med);
		}
		printf("}\n");
	} else {
		printf("%-20s %7d %8d %5d %12.2f %8.2f %8.2f %10" PRIu64, r->scenario, r->threads,
		       r->sessions, r->runs, med, min, max, r->lost);
		if (strcmp(r->scenario, "reader") == 0)
			printf("   %.1f M records/s", median(r->rps, r->runs, NULL, NULL) / 1e6);
		if (strcmp(r->scenario, "switch_first") == 0)
			printf("   the next write %.2f ns", median(r->ns2, r->runs, NULL, NULL));
		if (r->base)
			printf("   %.2fx %s", med / median(r->base->ns, r->base->runs, NULL, NULL),
			       r->base->scenario);
		if (r->lttng_runs) {
			double l = median(r->lttng_ns, r->lttng_runs, NULL, NULL);

			printf("   LTTng-UST %.2f ns: %.1fx faster", l, l / med);
		}
		if (r->sessions && strncmp(r->scenario, "writer_", 7) != 0) {
			double rmin, rmax, rmed = median(r->rtt, r->runs, &rmin, &rmax);

			/* Against the nearest: a whole invocation may be in a far moment. */
			if (rmin > 0 && rmax > 2 * rmin)
				printf("   (CPUs 0 and 1 far apart around some runs: a line's round "
				       "trip %.0f-%.0f ns, median %.0f)", rmin, rmax, rmed);
		}
		printf("\n");
	}
	fflush(stdout);
}

/* Is @name in the comma-separated list of --scenario (or is there none)? */
static bool wanted(const struct opts *o, const char *name)
{
	size_t n = strlen(name);

	if (!o->only)
		return true;
	for (const char *p = o->only; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == 0))
			return true;
	}
	return false;
}

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: evring-bench [OPTIONS]\n"
		"Cost of an evring event (payload u64,u64,u32; enabled_str40: u64 and a 40-byte\n"
		"string; enabled_bytes200: u64 and 200 bytes) with a reader draining concurrently,\n"
		"and of recording a counter value. Each writer thread has a CPU of its own;\n"
		"readers (and LTTng's consumer daemon, for its runs) are kept to the CPUs no\n"
		"writer has, when there are any.\n\n"
		"  --json               one JSON object per scenario\n"
		"  --vs-lttng           also run the loop through LTTng-UST (needs lttng-sessiond)\n"
		"  --drain HOW          how each session's reader drains it: packets (default:\n"
		"                       whole packets, counted from their headers and copied\n"
		"                       out, as evring record does) or records (every record\n"
		"                       decoded, as evring dump does)\n"
		"  --chase              with --drain records: poll the writers record by record\n"
		"                       instead of waiting for complete packets once caught up\n"
		"  --runs N             runs per scenario, median reported (default 5)\n"
		"  --events N           events per thread in enabled runs (default 5000000)\n"
		"  --disabled-events N  iterations per thread in disabled runs (default 500000000)\n"
		"  --reader-events N    records in the reader run (default 1000000)\n"
		"  --counter-events N   values per counter run (default 20 x --events)\n"
		"  --ring-size BYTES    per-CPU ring size (default 8388608)\n"
		"  --clock CLOCK        timestamps from tsc or monotonic (clock_gettime), as\n"
		"                       EVR_CLOCK= does; default: libevring's choice\n"
		"  --scenario NAME,...  only these: baseline disabled writer_only\n"
		"                       writer_only_str40 writer_only_bytes200 writer_full\n"
		"                       writer_full_bytes200 enabled_1t\n"
		"                       enabled_str40 enabled_bytes200 enabled_2t enabled_nt\n"
		"                       sessions_4 switch_first enabled_1t_monotonic reader\n"
		"                       counter_mean counter_increment counter_histogram\n"
		"                       counter_mean_idle\n"
		"  -h, --help           this text\n"
		"  --version            the version of evring\n\n"
		"The enabled scenarios run in interleaved rounds. switch_first: two threads on\n"
		"one CPU take turns (sched_yield()); the first write after each switch, and the\n"
		"one right after it, each timed alone (both include a clock_gettime()).\n"
		"enabled_1t_monotonic: enabled_1t in a child run with --clock monotonic, where\n"
		"the clock is the TSC. writer_only*: the three payloads with no reader running\n"
		"(overwrite mode), what the write path costs by itself; lost: the events\n"
		"overwritten before the reader read the ring at the end. writer_full*: the\n"
		"writer into a full ring (discard mode, a reader that reads nothing until the\n"
		"end): what a dropped event costs; lost: the events dropped.\n");
}

static int parse_u64(const char *opt, const char *s, uint64_t *ret)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v == 0) {
		fprintf(stderr, "evring-bench: %s: \"%s\" is not a positive number\n", opt, s);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int parse_argv(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "vs-lttng", no_argument, NULL, 'L' },
		{ "chase", no_argument, NULL, 'c' },
		{ "drain", required_argument, NULL, 'D' },
		{ "runs", required_argument, NULL, 'r' },
		{ "events", required_argument, NULL, 'e' },
		{ "disabled-events", required_argument, NULL, 'd' },
		{ "reader-events", required_argument, NULL, 'R' },
		{ "counter-events", required_argument, NULL, 'C' },
		{ "ring-size", required_argument, NULL, 's' },
		{ "scenario", required_argument, NULL, 'S' },
		{ "clock", required_argument, NULL, 'K' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	static const char *const scenarios[] = {
		"baseline", "disabled", "writer_only", "writer_only_str40",
		"writer_only_bytes200", "writer_full", "writer_full_bytes200", "enabled_1t", "enabled_str40",
		"enabled_bytes200", "enabled_2t", "enabled_nt", "sessions_4", "switch_first",
		"enabled_1t_monotonic",
		"reader", "counter_mean", "counter_increment", "counter_histogram",
		"counter_mean_idle", NULL,
	};
	bool drain_packets = false;
	uint64_t v;
	int c;

	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'j': o->json = true; break;
		case 'L': o->vs_lttng = true; break;
		case 'c': o->chase = true; break;
		case 'D':
			if (strcmp(optarg, "records") && strcmp(optarg, "packets")) {
				fprintf(stderr, "evring-bench: --drain: packets or records, not '%s'\n",
					optarg);
				return -EINVAL;
			}
			o->records = strcmp(optarg, "records") == 0;
			drain_packets = !o->records;
			break;
		case 'r':
			if (parse_u64("--runs", optarg, &v) < 0)
				return -EINVAL;
			if (v > MAX_RUNS) {
				fprintf(stderr, "evring-bench: --runs: at most %d\n", MAX_RUNS);
				return -EINVAL;
			}
			o->runs = (int)v;
			break;
		case 'e':
			if (parse_u64("--events", optarg, &o->events) < 0)
				return -EINVAL;
			break;
		case 'd':
			if (parse_u64("--disabled-events", optarg, &o->disabled_events) < 0)
				return -EINVAL;
			break;
		case 'R':
			if (parse_u64("--reader-events", optarg, &o->reader_events) < 0)
				return -EINVAL;
			break;
		case 'C':
			if (parse_u64("--counter-events", optarg, &o->counter_events) < 0)
				return -EINVAL;
			break;
		case 's':
			if (parse_u64("--ring-size", optarg, &o->ring_size) < 0)
				return -EINVAL;
			break;
		case 'S':
			o->only = optarg;
			break;
		case 'K': {
			const char *env = getenv("EVR_CLOCK");

			if (strcmp(optarg, "tsc") && strcmp(optarg, "monotonic")) {
				fprintf(stderr, "evring-bench: --clock: \"%s\" is not tsc or monotonic\n",
					optarg);
				return -EINVAL;
			}
			/* libevring chose its clock when it loaded: run again with it set. */
			if (!env || strcmp(env, optarg)) {
				setenv("EVR_CLOCK", optarg, 1);
				execv("/proc/self/exe", argv);
				fprintf(stderr, "evring-bench: --clock: cannot run again: %s\n",
					strerror(errno));
				return -errno;
			}
			break;
		}
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("evring-bench %s\n", EVR_VERSION);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "evring-bench: unexpected argument \"%s\"\n", argv[optind]);
		return -EINVAL;
	}
	if (o->chase && drain_packets) {
		fprintf(stderr, "evring-bench: --chase is for --drain records\n");
		return -EINVAL;
	}
	if (o->chase)
		o->records = true;
	for (const char *p = o->only; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		size_t n = strcspn(p, ",");
		bool ok = false;

		for (int i = 0; scenarios[i]; i++)
			ok |= strlen(scenarios[i]) == n && strncmp(scenarios[i], p, n) == 0;
		if (!ok) {
			fprintf(stderr, "evring-bench: --scenario: unknown scenario \"%.*s\"\n",
				(int)n, p);
			return -EINVAL;
		}
	}
#ifndef EVR_HAVE_LTTNG
	if (o->vs_lttng) {
		fprintf(stderr, "evring-bench: --vs-lttng: built without LTTng-UST "
				"(install liblttng-ust-dev and rebuild)\n");
		return -ENOTSUP;
	}
#endif
	return 0;
}

static int run(const struct opts *o)
{
	static const struct {
		const char *name;
		uint32_t kind;
		bool sampled;
	} ctr_scenarios[] = {
		{ "counter_mean", EVR_COUNTER_MEAN, true },
		{ "counter_increment", EVR_COUNTER_INCREMENT, true },
		{ "counter_histogram", EVR_COUNTER_HISTOGRAM, true },
		{ "counter_mean_idle", EVR_COUNTER_MEAN, false },
	};
	static const struct {
		const char *name;
		int threads;	/* 0: one per CPU */
		int sessions;
		enum loop_kind kind;
	} enabled[] = {
		{ "enabled_1t", 1, 1, LOOP_EVRING },
		{ "enabled_str40", 1, 1, LOOP_STR40 },
		{ "enabled_bytes200", 1, 1, LOOP_BYTES200 },
		{ "enabled_2t", 2, 1, LOOP_EVRING },
		{ "enabled_nt", 0, 1, LOOP_EVRING },
		{ "sessions_4", 1, 4, LOOP_EVRING },
		{ "switch_first", 2, 1, LOOP_SWITCH },
		/* Only where the clock is the TSC: otherwise enabled_1t is this. */
		{ "enabled_1t_monotonic", 1, 1, LOOP_EVRING },
	};
	int ncpu = get_nprocs();
	struct result r;

	if (!o->json)
		printf("clock: %s (%s)\n", o->clock.kind == EVR_CLOCK_TSC ? "tsc" : "monotonic",
		       o->clock.reason);
	if (!o->json)
		printf("%-20s %7s %8s %5s %12s %8s %8s %10s\n", "scenario", "threads", "sessions",
		       "runs", "ns/ev median", "min", "max", "lost");
	if (wanted(o, "baseline")) {
		r = (struct result){ .scenario = "baseline", .threads = 1, .sessions = 0, .runs = o->runs, .events = o->disabled_events };
		for (int i = 0; i < o->runs; i++)
			r.ns[i] = run_loops(1, LOOP_EMPTY, o->disabled_events);
		report(o, &r);
	}
	if (wanted(o, "disabled")) {
		r = (struct result){ .scenario = "disabled", .threads = 1, .sessions = 0, .runs = o->runs, .events = o->disabled_events };
		for (int i = 0; i < o->runs; i++)
			r.ns[i] = run_loops(1, LOOP_EVRING, o->disabled_events);
		report(o, &r);
	}
	/* The writer alone, its three payloads and a full ring, in rounds, as the
	 * enabled scenarios. */
	static const struct {
		const char *name;
		enum loop_kind kind;
		bool full;
	} alone[] = {
		{ "writer_only", LOOP_EVRING, false },
		{ "writer_only_str40", LOOP_STR40, false },
		{ "writer_only_bytes200", LOOP_BYTES200, false },
		{ "writer_full", LOOP_EVRING, true },
		{ "writer_full_bytes200", LOOP_BYTES200, true },
	};
	struct result wr[sizeof(alone) / sizeof(alone[0])];
	size_t nw = 0;

	for (size_t k = 0; k < sizeof(alone) / sizeof(alone[0]); k++)
		if (wanted(o, alone[k].name))
			wr[nw++] = (struct result){ .scenario = alone[k].name, .threads = 1,
						    .sessions = 1, .runs = o->runs,
						    .payload = loop_payload[alone[k].kind],
						    .events = o->events, .kind = alone[k].kind,
						    .full = alone[k].full };
	for (int i = 0; i < o->runs; i++)
		for (size_t k = 0; k < nw; k++)
			wr[k].ns[i] = writer_only_run(o, wr[k].kind, wr[k].full, &wr[k].lost);
	for (size_t k = 0; k < nw; k++) {
		if (k > 0 && strcmp(wr[0].scenario, "writer_only") == 0)
			wr[k].base = &wr[0];
		report(o, &wr[k]);
	}
	/*
	 * The enabled scenarios run in rounds, one run of each per round (and of
	 * LTTng-UST after enabled_1t's), so that machine noise hits them alike
	 * and their ratios mean something on a shared machine.
	 */
	struct result er[sizeof(enabled) / sizeof(enabled[0])];
	size_t ne = 0;

	for (size_t k = 0; k < sizeof(enabled) / sizeof(enabled[0]); k++) {
		if (!wanted(o, enabled[k].name))
			continue;
		if (strcmp(enabled[k].name, "enabled_1t_monotonic") == 0 &&
		    o->clock.kind != EVR_CLOCK_TSC)
			continue;
		er[ne++] = (struct result){
			.scenario = enabled[k].name,
			.threads = enabled[k].threads ? enabled[k].threads : ncpu,
			.sessions = enabled[k].sessions, .runs = o->runs,
			.payload = loop_payload[enabled[k].kind],
			.events = events_of(o, enabled[k].kind),
			.kind = enabled[k].kind,
		};
	}
	for (int i = 0; i < o->runs; i++) {
		for (size_t k = 0; k < ne; k++) {
			double rtt = cpu_pair_rtt();

			if (strcmp(er[k].scenario, "enabled_1t_monotonic") == 0)
				er[k].ns[i] = monotonic_run(o, &er[k].lost, &er[k].cpu_ns[i]);
			else
				er[k].ns[i] = enabled_run(o, er[k].threads, er[k].sessions,
							  er[k].kind, &er[k].lost, &er[k].cpu_ns[i],
							  &er[k].ns2[i], &er[k].waits);
			er[k].rtt[i] = rtt;
			if ((rtt = cpu_pair_rtt()) > er[k].rtt[i])
				er[k].rtt[i] = rtt;
#ifdef EVR_HAVE_LTTNG
			if (o->vs_lttng && strcmp(er[k].scenario, "enabled_1t") == 0)
				er[k].lttng_ns[er[k].lttng_runs++] = lttng_run(o);
#endif
		}
	}
	for (size_t k = 0; k < ne; k++) {
		/* Against the 20-byte event on one thread, in the same rounds. */
		for (size_t b = 0; b < ne; b++)
			if (b != k && strcmp(er[b].scenario, "enabled_1t") == 0 &&
			    er[k].kind != LOOP_SWITCH)
				er[k].base = &er[b];
		report(o, &er[k]);
	}
	if (wanted(o, "reader")) {
		r = (struct result){ .scenario = "reader", .threads = 1, .sessions = 1, .runs = o->runs, .events = o->reader_events };
		for (int i = 0; i < o->runs; i++)
			r.ns[i] = reader_run(o, &r.rps[i]);
		report(o, &r);
	}
	for (size_t k = 0; k < sizeof(ctr_scenarios) / sizeof(ctr_scenarios[0]); k++) {
		if (!wanted(o, ctr_scenarios[k].name))
			continue;
		r = (struct result){ .scenario = ctr_scenarios[k].name, .threads = 1,
				     .sessions = ctr_scenarios[k].sampled, .runs = o->runs,
				     .events = counter_events(o) };
		for (int i = 0; i < o->runs; i++)
			r.ns[i] = counter_run(o, ctr_scenarios[k].kind, ctr_scenarios[k].sampled);
		report(o, &r);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.runs = 5,
		.events = 5000000,
		.disabled_events = 500000000,
		.reader_events = 1000000,
		.ring_size = 8u << 20,
	};

	if (parse_argv(argc, argv, &o) < 0)
		return 2;
	memset(loop_str40, 's', sizeof(loop_str40) - 1);
	for (size_t i = 0; i < sizeof(loop_bytes200); i++)
		loop_bytes200[i] = (uint8_t)i;
	evr_clock_get_info(&o.clock);
	return run(&o) < 0 ? 1 : 0;
}
