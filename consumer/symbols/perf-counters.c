// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Per-thread counters (evring record --perf-counters) and the names of the
 * perf events that --sample-cpu=EVENT and --perf-counters accept: hardware
 * (cycles, instructions, cache and branch misses: a PMU) and software
 * (task-clock, context switches, page faults, CPU migrations: every kernel).
 * Both kinds take the same path, so that the software ones, which exist on a
 * virtual machine without a PMU, exercise it for real.
 *
 * - Events: one counting event (no sampling) per (thread, CPU, counter), in
 *   rings per CPU (perf-ring.c) with inherit=1, so that threads and processes
 *   created later are counted, and inherit_stat=1: when such an inherited
 *   thread exits, the kernel writes a PERF_RECORD_READ with that thread's own
 *   count on each CPU into the ring of the event it was inherited from. Those
 *   become COUNTER records at the time of the exit.
 * - At the end the events are disabled (which freezes the inherited ones too),
 *   the rings drained, and each event opened on a thread read: its value is
 *   that thread's count plus those of every thread inherited from it; the
 *   READ records already written for the latter are subtracted. What remains
 *   is the thread's own count, plus that of the inherited threads that still
 *   ran (or whose READ record was lost). So the COUNTER records of a counter
 *   always add up exactly to what the kernel counted for the process; only a
 *   thread started during the recording that outlives it is counted with the
 *   thread it was started from.
 * - A COUNTER record is an increment: readers add up the records of a
 *   (thread, counter); records of the same exit come one per CPU.
 * - Multiplexing (more hardware counters than the PMU has): each value is
 *   scaled by time_enabled / time_running, as perf stat does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <evring/trace.h>

#include "perf-counters-internal.h"
#include "perf-ring-internal.h"

#define RING_PAGES 64u			/* per CPU: 256 KiB, ~2900 READ records */
#define CHUNK_BYTES (64u << 10)		/* SAMPLES chunks are cut at this size */

static const struct evr_perf_counter_def defs[] = {
	{ "cpu-clock", EVR_COUNTER_CPU_CLOCK, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "ns" },
	{ "task-clock", EVR_COUNTER_TASK_CLOCK, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns" },
	{ "context-switches", EVR_COUNTER_CONTEXT_SWITCHES, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CONTEXT_SWITCHES, "" },
	{ "page-faults", EVR_COUNTER_PAGE_FAULTS, PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, "" },
	{ "cpu-migrations", EVR_COUNTER_CPU_MIGRATIONS, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_CPU_MIGRATIONS, "" },
	{ "major-faults", EVR_COUNTER_MAJOR_FAULTS, PERF_TYPE_SOFTWARE,
	  PERF_COUNT_SW_PAGE_FAULTS_MAJ, "" },
	{ "cycles", EVR_COUNTER_CYCLES, PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "" },
	{ "instructions", EVR_COUNTER_INSTRUCTIONS, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_INSTRUCTIONS, "" },
	{ "cache-misses", EVR_COUNTER_CACHE_MISSES, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_MISSES, "" },
	{ "branch-misses", EVR_COUNTER_BRANCH_MISSES, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_MISSES, "" },
	{ "cache-references", EVR_COUNTER_CACHE_REFERENCES, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_CACHE_REFERENCES, "" },
	{ "branches", EVR_COUNTER_BRANCHES, PERF_TYPE_HARDWARE,
	  PERF_COUNT_HW_BRANCH_INSTRUCTIONS, "" },
};

#define NDEFS (sizeof(defs) / sizeof(defs[0]))

const struct evr_perf_counter_def *evr_perf_counter_find(const char *name, size_t len)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (strlen(defs[i].name) == len && !memcmp(defs[i].name, name, len))
			return &defs[i];
	return NULL;
}

const struct evr_perf_counter_def *evr_perf_counter_by_id(uint16_t id)
{
	for (size_t i = 0; i < NDEFS; i++)
		if (defs[i].id == id)
			return &defs[i];
	return NULL;
}

const char *evr_perf_counter_name(uint16_t id)
{
	const struct evr_perf_counter_def *d = evr_perf_counter_by_id(id);

	return d ? d->name : NULL;
}

int evr_perf_counter_list_parse(const char *list, uint16_t *ids, uint32_t max, char *errbuf,
				size_t errlen)
{
	uint32_t n = 0;
	const char *p = list;

	for (;;) {
		size_t len = strcspn(p, ",");
		const struct evr_perf_counter_def *d = evr_perf_counter_find(p, len);
		uint32_t k;

		if (!d) {
			snprintf(errbuf, errlen, "'%.*s' is no counter known here (known: cycles, "
				 "instructions, cache-misses, branch-misses, cache-references, "
				 "branches, task-clock, cpu-clock, context-switches, page-faults, "
				 "major-faults, cpu-migrations)", (int)len, p);
			return -EINVAL;
		}
		for (k = 0; k < n && ids[k] != d->id; k++)
			;
		if (k == n) {
			if (n == max) {
				snprintf(errbuf, errlen, "at most %u counters", max);
				return -EINVAL;
			}
			ids[n++] = d->id;
		}
		if (!p[len])
			break;
		p += len + 1;
	}
	return (int)n;
}

void evr_perf_counter_attr(const struct evr_perf_counter_def *d, struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = d->type;
	a->config = d->config;
	a->exclude_kernel = 1;	/* perf_event_paranoid 2 allows user space only */
	a->exclude_hv = 1;
}

static long perf_open(struct perf_event_attr *a, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int evr_pmu_check(char *why, size_t len)
{
	struct perf_event_attr a;
	long fd;
	int err;

	evr_perf_counter_attr(evr_perf_counter_by_id(EVR_COUNTER_CYCLES), &a);
	a.disabled = 1;
	/* This thread, any CPU: what any user may open at perf_event_paranoid 2. */
	fd = perf_open(&a, 0, -1);
	if (fd >= 0) {
		close((int)fd);
		return 1;
	}
	err = errno;
	if (err == ENOENT || err == EOPNOTSUPP || err == ENODEV || err == EINVAL) {
		snprintf(why, len, "no hardware PMU here (%s for the cycles event; "
			 "/sys/bus/event_source/devices has no cpu)", strerror(err));
		return 0;
	}
	snprintf(why, len, "no hardware counters for us here: the cycles event is refused (%s)",
		 strerror(err));
	return 0;
}

/* ---- the per-thread counters ------------------------------------------------- */

/* An event opened on a thread that existed at the start. */
struct direct {
	uint64_t perf_id;		/* PERF_EVENT_IOC_ID */
	uint64_t children;		/* READ records of threads inherited from it */
	uint32_t tid, pid;
	uint16_t counter;
	int fd;
};

struct evr_perf_counters {
	pid_t pid;
	struct perf_event_attr attrs[EVR_PERF_COUNTERS_MAX];
	uint16_t ids[EVR_PERF_COUNTERS_MAX];
	uint32_t n;
	struct evr_perf_set *set;
	struct direct *d;		/* sorted by perf_id */
	uint32_t nd;
	uint8_t out[CHUNK_BYTES];
	size_t outlen;
	struct evr_perf_counters_totals totals;
};

static int cmp_direct(const void *a, const void *b)
{
	const struct direct *x = a, *y = b;

	return x->perf_id < y->perf_id ? -1 : x->perf_id > y->perf_id;
}

static struct direct *find_direct(struct evr_perf_counters *c, uint64_t id)
{
	struct direct key = { .perf_id = id };

	return bsearch(&key, c->d, c->nd, sizeof(*c->d), cmp_direct);
}

static const char *open_hint(int err)
{
	switch (err) {
	case EACCES:
	case EPERM:
		return " (kernel.perf_event_paranoid forbids it: set the sysctl to 2 or lower, or "
		       "run with CAP_PERFMON)";
	case EMFILE:
	case ENFILE:
		return " (one descriptor per thread, CPU and counter: raise the open files limit)";
	default:
		return "";
	}
}

/* Which counter and thread each event is, from its descriptor: the set opens in order. */
static int index_events(struct evr_perf_counters *c, char *errbuf, size_t errlen)
{
	uint32_t nfds;
	const int *fds = evr_perf_set_fds(c->set, &nfds);

	c->d = calloc(nfds ? nfds : 1, sizeof(*c->d));
	if (!c->d)
		return -ENOMEM;
	for (uint32_t i = 0; i < nfds; i++) {
		struct direct *d = &c->d[i];
		uint32_t tid;

		if (ioctl(fds[i], PERF_EVENT_IOC_ID, &d->perf_id) < 0) {
			snprintf(errbuf, errlen, "cannot identify a perf counter: %s",
				 strerror(errno));
			return -errno;
		}
		d->fd = fds[i];
		d->counter = c->ids[evr_perf_set_fd_attr(c->set, i, &tid)];
		d->tid = tid;
		d->pid = (uint32_t)c->pid;
		}
	c->nd = nfds;
	qsort(c->d, c->nd, sizeof(*c->d), cmp_direct);
	return 0;
}

int evr_perf_counters_new(pid_t pid, const uint16_t *ids, uint32_t n,
			  struct evr_perf_counters **ret, char *errbuf, size_t errlen)
{
	struct evr_perf_set_opts po = {
		.pid = pid, .ring_pages = RING_PAGES, .what = "count the events of",
		.hint = open_hint,
	};
	struct evr_perf_counters *c;
	int err;

	if (!n || n > EVR_PERF_COUNTERS_MAX)
		return -EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = pid;
	for (uint32_t i = 0; i < n; i++) {
		const struct evr_perf_counter_def *d = evr_perf_counter_by_id(ids[i]);
		struct perf_event_attr *a = &c->attrs[i];

		if (!d) {
			err = -EINVAL;
			goto fail;
		}
		c->ids[i] = ids[i];
		evr_perf_counter_attr(d, a);
		a->disabled = 1;
		a->inherit = 1;
		a->inherit_stat = 1;	/* a READ record at each inherited thread's exit */
		a->read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING |
				 PERF_FORMAT_ID;
		/*
		 * PERF_SAMPLE_READ although nothing is sampled: with inherit it keeps the
		 * kernel from swapping the contexts of two threads of the process at a
		 * switch between them (Linux 6.12, nr_no_switch_fast), whose
		 * inherit_stat exchange of counts pairs the events by list position and
		 * so gives one counter's count to another.
		 */
		a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				 PERF_SAMPLE_CPU | PERF_SAMPLE_READ;
		a->sample_id_all = 1;
		a->use_clockid = 1;
		a->clockid = CLOCK_MONOTONIC;
		a->watermark = 1;	/* read on the recorder's schedule: no wake-ups */
		a->wakeup_watermark = RING_PAGES * 4096u / 2;
	}
	c->n = n;
	po.attrs = c->attrs;
	po.nattrs = n;
	err = evr_proc_check_access(pid, "you can count only your own processes' events", errbuf,
				    errlen);
	if (err < 0)
		goto fail;
	/*
	 * The kernel's side too where allowed (root, CAP_PERFMON, paranoid <= 1):
	 * a context switch or migration happens in the kernel, so a user-only
	 * event never counts one. Else user space only, and the summary says so.
	 */
	for (uint32_t i = 0; i < n; i++)
		c->attrs[i].exclude_kernel = 0;
	err = evr_perf_set_new(&po, &c->set, errbuf, errlen);
	if (err == -EACCES || err == -EPERM) {
		for (uint32_t i = 0; i < n; i++)
			c->attrs[i].exclude_kernel = 1;
		c->totals.user_only = true;
		err = evr_perf_set_new(&po, &c->set, errbuf, errlen);
	}
	if (err == -EINVAL) {
		/*
		 * Before Linux 6.12 inherit refuses PERF_SAMPLE_READ: without it
		 * inherit_stat would exchange counts between counters, so neither.
		 * The threads started later are then counted with their creator.
		 */
		for (uint32_t i = 0; i < n; i++) {
			c->attrs[i].sample_type &= ~(uint64_t)PERF_SAMPLE_READ;
			c->attrs[i].inherit_stat = 0;
		}
		c->totals.folded = true;
		err = evr_perf_set_new(&po, &c->set, errbuf, errlen);
	}
	if (err < 0)
		goto fail;
	err = index_events(c, errbuf, errlen);
	if (err < 0)
		goto fail;
	c->totals.counters = n;
	memcpy(c->totals.ids, ids, n * sizeof(*ids));
	c->totals.threads = evr_perf_set_threads(c->set);
	*ret = c;
	return 0;
fail:
	evr_perf_counters_free(c);
	return err;
}

void evr_perf_counters_free(struct evr_perf_counters *c)
{
	if (!c)
		return;
	evr_perf_set_free(c->set);
	free(c->d);
	free(c);
}

void evr_perf_counters_totals(const struct evr_perf_counters *c,
			      struct evr_perf_counters_totals *ret)
{
	*ret = c->totals;
}

static int flush_out(struct evr_perf_counters *c, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	if (c->outlen)
		err = emit(ctx, EVR_CHUNK_SAMPLES, c->out, c->outlen);
	c->outlen = 0;
	return err;
}

/* value * enabled / running: the estimate of a multiplexed counter (perf stat's). */
static uint64_t scaled(uint64_t value, uint64_t enabled, uint64_t running)
{
	if (!running || running >= enabled)
		return value;
	return (uint64_t)((double)value * (double)enabled / (double)running);
}

static int put_counter(struct evr_perf_counters *c, uint64_t time, uint32_t pid, uint32_t tid,
		       uint16_t counter, uint64_t value, evr_sideband_emit_fn *emit, void *ctx)
{
	struct evr_sample_rec r = {
		.time_ns = time, .pid = pid, .tid = tid, .cpu = counter,
		.type = EVR_SAMPLE_COUNTER, .value = value,
	};
	int err;

	if (c->outlen + sizeof(r) > sizeof(c->out)) {
		err = flush_out(c, emit, ctx);
		if (err)
			return err;
	}
	memcpy(c->out + c->outlen, &r, sizeof(r));
	c->outlen += sizeof(r);
	c->totals.records++;
	return 0;
}

struct drain_ctx {
	struct evr_perf_counters *c;
	evr_sideband_emit_fn *emit;
	void *ctx;
};

static int on_rec(void *arg, const uint8_t *rec, const struct perf_event_header *h)
{
	struct drain_ctx *dc = arg;
	struct evr_perf_counters *c = dc->c;
	/* pid, tid; value, time_enabled, time_running, id; then sample_id: pid, tid,
	 * time, cpu, res, identifier. */
	struct {
		uint32_t pid, tid;
		uint64_t value, enabled, running, id;
		uint32_t spid, stid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t ident;
	} r;
	struct direct *d;

	if (h->type == PERF_RECORD_LOST) {
		uint64_t lost;

		if (h->size >= sizeof(*h) + 16) {
			memcpy(&lost, rec + sizeof(*h) + 8, 8);
			c->totals.lost += lost;
		}
		return 0;
	}
	if (h->type != PERF_RECORD_READ || h->size < sizeof(*h) + sizeof(r))
		return 0;
	memcpy(&r, rec + sizeof(*h), sizeof(r));
	/* The identifier is that of the event the thread's was inherited from. */
	d = find_direct(c, r.id);
	if (!d)
		return 0;
	d->children += r.value;
	return put_counter(c, r.time, r.pid, r.tid, d->counter,
			   scaled(r.value, r.enabled, r.running), dc->emit, dc->ctx);
}

int evr_perf_counters_drain(struct evr_perf_counters *c, evr_sideband_emit_fn *emit, void *ctx)
{
	struct drain_ctx dc = { .c = c, .emit = emit, .ctx = ctx };
	int err = evr_perf_set_drain(c->set, on_rec, &dc);

	return err ? err : flush_out(c, emit, ctx);
}

int evr_perf_counters_finish(struct evr_perf_counters *c, evr_sideband_emit_fn *emit, void *ctx)
{
	struct timespec ts;
	uint64_t now;
	int err;

	/* Frozen first, inherited events included: what is read below stays put. */
	for (uint32_t i = 0; i < c->nd; i++)
		ioctl(c->d[i].fd, PERF_EVENT_IOC_DISABLE, 0);
	err = evr_perf_counters_drain(c, emit, ctx);
	if (err)
		return err;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	for (uint32_t i = 0; i < c->nd && !err; i++) {
		struct direct *d = &c->d[i];
		uint64_t v[4];		/* value, time_enabled, time_running, id */
		uint64_t own;

		if (read(d->fd, v, sizeof(v)) != (ssize_t)sizeof(v))
			continue;
		own = v[0] >= d->children ? v[0] - d->children : 0;
		/* Zeros are not news: a counter of a thread that never ran on this CPU. */
		if (own)
			err = put_counter(c, now, d->pid, d->tid, d->counter,
					  scaled(own, v[1], v[2]), emit, ctx);
	}
	return err ? err : flush_out(c, emit, ctx);
}
