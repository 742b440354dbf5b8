// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The CPU sampler: perf_events for one process, opened from the recorder
 * (shared/research/stacks.md §2, measured on this kind of VM).
 *
 * - Event: PERF_TYPE_SOFTWARE / PERF_COUNT_SW_CPU_CLOCK, an hrtimer on CPU time:
 *   virtual machines often have no hardware PMU. Or a hardware event where
 *   there is one (--sample-cpu=cycles: perf-counters.c names them), whose
 *   samples' periods count that event rather than ns. Frequency mode (freq=1).
 *   exclude_kernel and exclude_hv, as perf_event_paranoid 2 (the default)
 *   requires of a user watching their own process.
 * - Call chains: the kernel's frame-pointer walk of the user stack
 *   (PERF_SAMPLE_CALLCHAIN, up to 127 frames), ~150 bytes a sample where a
 *   copy of the user stack for DWARF unwinding costs ~8 KiB.
 * - Side band: context_switch (PERF_RECORD_SWITCH: on/off CPU per thread) and
 *   mmap2 with build IDs (new executable mappings), sample_id_all so that they
 *   carry a time. Timestamps use CLOCK_MONOTONIC (use_clockid), which is what
 *   the events' raw timestamps convert to: one timeline.
 * - The events: one per (thread, CPU) into one ring per CPU, opened and
 *   drained by perf-ring.c. A full ring makes the kernel drop records and
 *   report them with PERF_RECORD_LOST, which becomes an EVR_SAMPLE_LOST record
 *   (exact loss accounting).
 * - System-wide (evr_sampler_new_system(), shared/research/machine.md §3): one
 *   event per CPU with pid -1, kernel frames where allowed, CPU-wide context
 *   switches (PERF_RECORD_SWITCH_CPU_WIDE: the thread on the other side too),
 *   and COMM/FORK/EXIT records plus a /proc scan at the start into TASKS
 *   chunks, so that processes without libevring have names. The rings are
 *   drained when one is an eighth full or once a second (docs/system.md "Cost").
 * - The timer-tick source (--sample-cpu=timer-tick, system-wide only): every
 *   Nth scheduler tick per CPU, which the kernel takes anyway (HZ a second on
 *   a busy CPU, none on an idle one with NO_HZ_IDLE), where cpu-clock adds an
 *   hrtimer interrupt of its own per sample: ~45 µs each in a nested guest
 *   (docs/system.md "Cost"). The tracepoint timer:hrtimer_expire_entry,
 *   filtered to the tick's handler: irq_vectors:local_timer_entry counts
 *   every other hrtimer's interrupt too (500/s per busy CPU while recording
 *   at HZ 250), which lands on whatever runs when a sleeper's timer expires:
 *   a busy loop got 71% of the samples for 49% of the busy time. No
 *   PERF_SAMPLE_PERIOD: with it the kernel samples every hit of a software
 *   event whatever sample_period says. The sample's IP is the tracepoint's,
 *   its kernel frames the timer interrupt's: only the user frames of the call
 *   chain are kept (a kernel thread's sample has none).
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <evring/trace.h>

#include "perf-counters-internal.h"
#include "perf-ring-internal.h"
#include "sampler-internal.h"
#include "symbols-internal.h"

#define RING_PAGES 64u			/* data pages per CPU: 256 KiB, within perf_event_mlock_kb */
#define SYSTEM_RING_PAGES 512u		/* system-wide: 2 MiB per CPU, where allowed */
#define SYSTEM_RINGS_MAX (64ull << 20)	/* and at most 64 MiB for all CPUs */
#define CHUNK_BYTES (1u << 20)		/* SAMPLES chunks are cut at this size */
#define REC_MAX 4096u			/* bytes of one perf record (127 frames fit) */
#define SYSTEM_DRAIN_NS 1000000000u	/* system-wide: drained at least once a second */
#define TICK_PERIOD_MAX 4095u		/* EVR_SAMPLER_TICK_PERIOD()'s 12 bits */

struct evr_sampler {
	pid_t pid;
	uint32_t hz;
	bool system;			/* every CPU, every process */
	bool tick;			/* the timer-tick source: samples have no period field */
	uint64_t tick_ns;		/* with tick: the time one sample stands for */
	char filter[64];		/* with tick: the tick's hrtimer only (evr_tick_filter()) */
	uint8_t *tasks;			/* TASKS records not written yet */
	size_t ntasks_len, tasks_cap;
	struct evr_perf_set *events;
	uint8_t *out;			/* the SAMPLES chunk being filled */
	size_t outlen;
	struct evr_modmap *newmods;	/* MMAP2 records since the last drain */
	struct evr_sampler_rec totals;
	uint64_t drained_ns;		/* CLOCK_MONOTONIC of the last drain (system-wide) */
	uint64_t lost_said;		/* records PERF_RECORD_LOST reported */
	bool lost_format;		/* the events count their own losses (PERF_FORMAT_LOST) */
};

/* Sampling @event (EVR_COUNTER_*; cpu-clock unless a hardware event was asked for). */
static void attr_init(struct perf_event_attr *a, uint16_t event, uint32_t hz)
{
	const struct evr_perf_counter_def *d = evr_perf_counter_by_id(event);

	evr_perf_counter_attr(d ? d : evr_perf_counter_by_id(EVR_COUNTER_CPU_CLOCK), a);
	a->freq = 1;
	a->sample_freq = hz;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			 PERF_SAMPLE_CALLCHAIN;
	a->disabled = 1;
	a->inherit = 1;
	a->exclude_callchain_kernel = 1;
	a->sample_max_stack = 127;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->context_switch = 1;
	a->mmap2 = 1;
	a->build_id = 1;
	a->sample_id_all = 1;
	/* What each event failed to write to a full ring: see lost_unsaid(). */
	a->read_format = PERF_FORMAT_LOST;
	/*
	 * We read on the recorder's own schedule and nothing polls the events: a
	 * wake-up (an irq_work, a self-interrupt: tens of µs in a guest) only once
	 * a whole ring of data came (the size is set once the ring's is known).
	 */
	a->watermark = 1;
	a->wakeup_watermark = RING_PAGES * (uint32_t)sysconf(_SC_PAGESIZE);
}

static const char *open_hint(int err)
{
	switch (err) {
	case EACCES:
	case EPERM:
		return " (kernel.perf_event_paranoid forbids it, or seccomp does: set the sysctl "
		       "to 2 or lower, or run with CAP_PERFMON)";
	case ENOENT:
	case EOPNOTSUPP:
		return " (this kernel has no such event)";
	case EMFILE:
	case ENFILE:
		return " (one descriptor per thread and CPU: raise the open files limit)";
	default:
		return "";
	}
}

/* What both samplers start from: @hz checked, the output buffer and module map. */
static int sampler_alloc(pid_t pid, uint16_t event, uint32_t hz, struct evr_sampler **ret,
			 char *errbuf, size_t errlen)
{
	struct evr_sampler *s;

	if (event != EVR_SAMPLER_TIMER_TICK && !evr_perf_counter_by_id(event)) {
		snprintf(errbuf, errlen, "no perf event %u to sample", event);
		return -EINVAL;
	}
	if (!hz || hz > 100000) {
		snprintf(errbuf, errlen, "sampling frequency %u Hz is not within 1-100000", hz);
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->pid = pid;
	s->hz = hz;
	s->totals.freq_hz = hz;
	s->out = malloc(CHUNK_BYTES + REC_MAX);
	if (!s->out || evr_modmap_new(&s->newmods) < 0) {
		evr_sampler_free(s);
		return -ENOMEM;
	}
	*ret = s;
	return 0;
}

/*
 * Pages per CPU ring (system-wide, and one process's where allowed): SYSTEM_RING_PAGES, less on
 * machines with many CPUs so that all of them stay within SYSTEM_RINGS_MAX
 * of locked memory (a power of two, at least RING_PAGES).
 */
static uint32_t system_ring_pages(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF), page = sysconf(_SC_PAGESIZE);
	uint32_t pages = SYSTEM_RING_PAGES;

	while (ncpu > 0 && page > 0 && pages > RING_PAGES &&
	       (uint64_t)pages * (uint64_t)page * (uint64_t)ncpu > SYSTEM_RINGS_MAX)
		pages /= 2;
	return pages;
}

/*
 * Open @po's events with the big rings of system_ring_pages(), else (past
 * perf_event_mlock_kb: EPERM) RING_PAGES; without PERF_FORMAT_LOST on a kernel
 * older than 6.0 (EINVAL). One process's context switches alone can fill
 * 256 KiB between two drains (100 ms apart): two threads ping-ponging write
 * 4 records of 40 bytes per round trip, 90,000 switches a second here.
 */
static int open_rings(struct evr_sampler *s, struct evr_perf_set_opts *po,
		      struct perf_event_attr *a, char *errbuf, size_t errlen)
{
	int err;

	po->ring_pages = system_ring_pages();
	a->wakeup_watermark = po->ring_pages * (uint32_t)sysconf(_SC_PAGESIZE);
	err = evr_perf_set_new(po, &s->events, errbuf, errlen);
	if (err == -EINVAL && a->read_format) {
		a->read_format = 0;
		err = evr_perf_set_new(po, &s->events, errbuf, errlen);
	}
	if (err == -EACCES || err == -EPERM) {
		po->ring_pages = RING_PAGES;
		a->wakeup_watermark = po->ring_pages * (uint32_t)sysconf(_SC_PAGESIZE);
		err = evr_perf_set_new(po, &s->events, errbuf, errlen);
	}
	s->lost_format = a->read_format & PERF_FORMAT_LOST;
	return err;
}

int evr_sampler_new(pid_t pid, uint16_t event, uint32_t hz, struct evr_sampler **ret,
		    char *errbuf, size_t errlen)
{
	struct perf_event_attr a;
	struct evr_perf_set_opts po = {
		.pid = pid, .attrs = &a, .nattrs = 1, .ring_pages = RING_PAGES,
		.what = "sample", .hint = open_hint,
	};
	struct evr_sampler *s;
	int err;

	if (event == EVR_SAMPLER_TIMER_TICK) {
		/* Its tracepoint fires in the kernel, which one process's events exclude. */
		snprintf(errbuf, errlen, "the timer-tick source samples every CPU: give --system "
			 "with it");
		return -EINVAL;
	}
	err = sampler_alloc(pid, event, hz, &s, errbuf, errlen);
	if (err < 0)
		return err;
	err = evr_proc_check_access(pid, "you can sample only your own processes", errbuf,
				    errlen);
	if (err < 0)
		goto fail;
	s->totals.event = event;
	attr_init(&a, event, hz);
	err = open_rings(s, &po, &a, errbuf, errlen);
	if (err < 0)
		goto fail;
	s->totals.cpus = evr_perf_set_cpus(s->events);
	s->totals.threads = evr_perf_set_threads(s->events);
	*ret = s;
	return 0;
fail:
	evr_sampler_free(s);
	return err;
}

static int scan_proc(struct evr_sampler *s);

/* Bit @cap of this process's effective capabilities (/proc/self/status CapEff). */
static bool have_cap(unsigned cap)
{
	char line[256];
	bool ret = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;

		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			ret = (eff >> cap) & 1;
			break;
		}
	}
	fclose(f);
	return ret;
}

/* What the kernel wants for CPU-wide events, and what this process lacks, on one line. */
static void system_refused(int err, char *errbuf, size_t errlen)
{
	int paranoid = 99;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	bool perfmon = have_cap(38), sysadmin = have_cap(21);	/* CAP_PERFMON, CAP_SYS_ADMIN */

	if (f) {
		if (fscanf(f, "%d", &paranoid) != 1)
			paranoid = 99;
		fclose(f);
	}
	if (paranoid > 0 && !perfmon && !sysadmin)
		snprintf(errbuf, errlen,
			 "system-wide sampling refused (%s): kernel.perf_event_paranoid is %d "
			 "(it must be <= 0) and this process lacks CAP_PERFMON",
			 strerror(err), paranoid);
	else
		snprintf(errbuf, errlen,
			 "system-wide sampling refused (%s) although kernel.perf_event_paranoid is "
			 "%d and CAP_PERFMON is %s: a security module or seccomp forbids it",
			 strerror(err), paranoid, perfmon || sysadmin ? "held" : "not needed");
}

/* ---- the timer-tick source ----------------------------------------------------- */

/*
 * @a, set up by attr_init(), made the timer-tick source of @s at @hz: every
 * Nth timer interrupt, N = the kernel's HZ / @hz rounded (at least 1), and
 * @s's freq_hz what that gives. Return: 0, -errno (@errbuf said).
 */
static int tick_attr(struct evr_sampler *s, struct perf_event_attr *a, uint32_t hz,
		     char *errbuf, size_t errlen)
{
	unsigned khz = evr_tick_kernel_hz();
	uint32_t period = (khz + hz / 2) / hz;
	long id = evr_tick_tracepoint_id(errbuf, errlen);
	int err;

	if (id < 0)
		return (int)id;
	err = evr_tick_filter(s->filter, sizeof(s->filter), errbuf, errlen);
	if (err < 0)
		return err;
	if (period < 1)
		period = 1;
	if (period > TICK_PERIOD_MAX)
		period = TICK_PERIOD_MAX;
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = (uint64_t)id;
	a->freq = 0;
	a->sample_period = period;
	/* With PERF_SAMPLE_PERIOD the kernel would sample every interrupt. */
	a->sample_type &= ~(uint64_t)PERF_SAMPLE_PERIOD;
	/* The tracepoint fires in the kernel; its frames there are the interrupt's own. */
	a->exclude_kernel = 0;
	a->exclude_callchain_kernel = 1;
	s->tick = true;
	s->tick_ns = 1000000000ull * period / khz;
	s->totals.freq_hz = (khz + period / 2) / period;
	s->totals.event = EVR_SAMPLER_TIMER_TICK | EVR_SAMPLER_SYSTEM |
			  period << EVR_SAMPLER_TICK_SHIFT;
	return 0;
}

int evr_sampler_new_system(pid_t pid, uint16_t event, uint32_t hz, struct evr_sampler **ret,
			   char *errbuf, size_t errlen)
{
	struct perf_event_attr a;
	struct evr_perf_set_opts po = {
		.pid = pid, .cpu_wide = true, .attrs = &a, .nattrs = 1,
		.ring_pages = RING_PAGES, .what = "sample", .hint = open_hint,
	};
	struct evr_sampler *s;
	int err;

	err = sampler_alloc(pid, event, hz, &s, errbuf, errlen);
	if (err < 0)
		return err;
	s->system = true;
	s->totals.event = event | EVR_SAMPLER_SYSTEM | EVR_SAMPLER_KERNEL;
	attr_init(&a, event, hz);
	/* Each CPU's one event sees every task: nothing to inherit. */
	a.inherit = 0;
	/* The kernel's side of the time (system calls, interrupts, idle) and its frames. */
	a.exclude_kernel = 0;
	a.exclude_callchain_kernel = 0;
	/* Who the pids are: names (exec, prctl), process and thread creation and exit. */
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
	if (event == EVR_SAMPLER_TIMER_TICK) {
		err = tick_attr(s, &a, hz, errbuf, errlen);
		if (err < 0)
			goto fail;
		po.filter = s->filter;
	}
	/*
	 * Every task's switches fill a ring much faster than one process's samples,
	 * and the first drain comes only once the recording started: 2 MiB per CPU.
	 * Past perf_event_mlock_kb (an unprivileged user at paranoid -1 or 0) the
	 * mapping is refused with EPERM: then the usual 256 KiB. Then, as kernel
	 * profiling may be what is refused (an LSM), user space only.
	 */
	err = open_rings(s, &po, &a, errbuf, errlen);
	/* A tracepoint in the kernel: nothing to sample without it. */
	if ((err == -EACCES || err == -EPERM) && !s->tick) {
		a.exclude_kernel = 1;
		a.exclude_callchain_kernel = 1;
		s->totals.event &= ~EVR_SAMPLER_KERNEL;
		err = evr_perf_set_new(&po, &s->events, errbuf, errlen);
	}
	if (err == -EACCES || err == -EPERM)
		system_refused(-err, errbuf, errlen);
	if (err < 0)
		goto fail;
	err = scan_proc(s);
	if (err < 0)
		goto fail;
	s->totals.cpus = evr_perf_set_cpus(s->events);
	*ret = s;
	return 0;
fail:
	evr_sampler_free(s);
	return err;
}

char *evr_sampler_source(const struct evr_sampler_rec *rec, char *buf, size_t len)
{
	uint16_t ev = EVR_SAMPLER_EVENT(rec->event);
	const char *name = evr_perf_counter_name(ev);

	if (ev == EVR_SAMPLER_TIMER_TICK) {
		uint32_t n = EVR_SAMPLER_TICK_PERIOD(rec->event);
		const char *th = n % 100 / 10 == 1 ? "th" : n % 10 == 1 ? "st" :
				 n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";

		if (n <= 1)
			snprintf(buf, len, "timer ticks, every one (%" PRIu32 " Hz)",
				 rec->freq_hz);
		else
			snprintf(buf, len, "timer ticks, every %" PRIu32 "%s (%" PRIu32 " Hz)",
				 n, th, rec->freq_hz);
	} else {
		snprintf(buf, len, "%s, %" PRIu32 " Hz", name ? name : "cpu-clock", rec->freq_hz);
	}
	return buf;
}

void evr_sampler_free(struct evr_sampler *s)
{
	if (!s)
		return;
	evr_perf_set_free(s->events);
	free(s->out);
	free(s->tasks);
	evr_modmap_free(s->newmods);
	free(s);
}

void evr_sampler_totals(const struct evr_sampler *s, struct evr_sampler_totals *ret)
{
	ret->samples = s->totals.samples;
	ret->lost = s->totals.lost;
	ret->switches = s->totals.switches;
	ret->threads = evr_perf_set_threads(s->events);
	ret->system = s->system;
	evr_sampler_source(&s->totals, ret->source, sizeof(ret->source));
}

/* ---- reading the rings ------------------------------------------------------- */

static int flush_out(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = 0;

	if (s->outlen)
		err = emit(ctx, EVR_CHUNK_SAMPLES, s->out, s->outlen);
	s->outlen = 0;
	return err;
}

static int put_rec(struct evr_sampler *s, const struct evr_sample_rec *r, const uint64_t *ips,
		   evr_sideband_emit_fn *emit, void *ctx)
{
	size_t need = sizeof(*r) + 8u * r->nframes;
	int err;

	if (s->outlen + need > CHUNK_BYTES) {
		err = flush_out(s, emit, ctx);
		if (err)
			return err;
	}
	memcpy(s->out + s->outlen, r, sizeof(*r));
	if (r->nframes && ips)
		memcpy(s->out + s->outlen + sizeof(*r), ips, 8u * r->nframes);
	s->outlen += need;
	return 0;
}

/* The trailing sample_id of a side-band record (sample_id_all): tid, time, cpu, identifier. */
struct sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static bool tail_id(const uint8_t *rec, uint32_t size, struct sample_id *ret)
{
	if (size < sizeof(struct perf_event_header) + sizeof(*ret))
		return false;
	memcpy(ret, rec + size - sizeof(*ret), sizeof(*ret));
	return true;
}

static int parse_sample(struct evr_sampler *s, const uint8_t *rec, uint32_t size,
			evr_sideband_emit_fn *emit, void *ctx)
{
	/* IDENTIFIER, IP, TID, TIME, CPU, PERIOD (not the tick's), CALLCHAIN, in that order. */
	struct {
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period, nr;
	} f;
	size_t flen = sizeof(f) - (s->tick ? 8 : 0);
	uint64_t ips[128];
	const uint8_t *cc;
	struct evr_sample_rec r = { 0 };
	uint32_t n = 0;

	if (size < sizeof(struct perf_event_header) + flen)
		return 0;
	memcpy(&f, rec + sizeof(struct perf_event_header), flen);
	if (s->tick) {
		f.nr = f.period;
		f.period = s->tick_ns;
	}
	cc = rec + sizeof(struct perf_event_header) + flen;
	if (f.nr > (size - sizeof(struct perf_event_header) - flen) / 8)
		return 0;
	for (uint64_t i = 0; i < f.nr && n < 128; i++) {
		uint64_t ip;

		memcpy(&ip, cc + 8 * i, 8);
		/* PERF_CONTEXT_USER and the other context markers are not addresses. */
		if (ip >= (uint64_t)PERF_CONTEXT_MAX)
			continue;
		ips[n++] = ip;
	}
	/* The tick's IP is the tracepoint's: a kernel thread's sample keeps no frame. */
	if (!n && f.ip && !s->tick)
		ips[n++] = f.ip;
	r.time_ns = f.time;
	r.pid = f.pid;
	r.tid = f.tid;
	r.cpu = f.cpu;
	r.type = EVR_SAMPLE_CPU;
	r.nframes = (uint16_t)n;
	r.value = f.period;
	s->totals.samples++;
	return put_rec(s, &r, ips, emit, ctx);
}

static int parse_mmap2(struct evr_sampler *s, const uint8_t *rec, uint32_t size, uint16_t misc)
{
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		union {
			struct {
				uint32_t maj, min;
				uint64_t ino, ino_generation;
			};
			struct {
				uint8_t build_id_size;
				uint8_t res1;
				uint16_t res2;
				uint8_t build_id[20];
			};
		};
		uint32_t prot, flags;
	} m;
	struct evr_module mod = { 0 };
	struct sample_id sid = { 0 };
	const char *name;
	size_t room;
	int kind;

	if (size < sizeof(struct perf_event_header) + sizeof(m))
		return 0;
	memcpy(&m, rec + sizeof(struct perf_event_header), sizeof(m));
	name = (const char *)rec + sizeof(struct perf_event_header) + sizeof(m);
	room = size - sizeof(struct perf_event_header) - sizeof(m);
	if (!memchr(name, '\0', room) || !(m.prot & PROT_EXEC) || !m.len)
		return 0;
	kind = evr_module_kind(name);
	if (kind < 0)
		return 0;
	mod.flags = (uint8_t)kind;
	if (kind == EVR_MODULE_ANON)
		name = "[anon]";
	tail_id(rec, size, &sid);
	mod.start = m.addr;
	mod.end = m.addr + m.len;
	mod.pgoff = m.pgoff;
	mod.time_ns = sid.time;
	mod.pid = m.pid;
	if (!mod.flags && (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) &&
	    m.build_id_size <= EVR_BUILD_ID_MAX) {
		mod.build_id_len = m.build_id_size;
		memcpy(mod.build_id, m.build_id, m.build_id_size);
	}
	mod.path = (char *)name;
	return evr_modmap_add(s->newmods, &mod);
}

/* ---- process names (system-wide) --------------------------------------------- */

/* Queue a TASKS record for the next drain. Return: 0, -ENOMEM. */
static int add_task(struct evr_sampler *s, uint16_t what, uint64_t time, uint32_t pid,
		    uint32_t tid, uint32_t ppid, const char *name, size_t len)
{
	struct evr_task_rec t = {
		.time_ns = time, .pid = pid, .tid = tid, .ppid = ppid, .what = what,
		.name_len = (uint16_t)(len > 255 ? 255 : len),
	};
	size_t need = sizeof(t) + ((t.name_len + 7u) & ~7u);

	if (s->ntasks_len + need > s->tasks_cap) {
		size_t cap = s->tasks_cap ? s->tasks_cap * 2 : 16384;
		uint8_t *v;

		while (cap < s->ntasks_len + need)
			cap *= 2;
		v = realloc(s->tasks, cap);
		if (!v)
			return -ENOMEM;
		s->tasks = v;
		s->tasks_cap = cap;
	}
	memcpy(s->tasks + s->ntasks_len, &t, sizeof(t));
	memset(s->tasks + s->ntasks_len + sizeof(t), 0, need - sizeof(t));
	if (t.name_len)
		memcpy(s->tasks + s->ntasks_len + sizeof(t), name, t.name_len);
	s->ntasks_len += need;
	return 0;
}

/* COMM, FORK, EXIT: who the pids of the samples are. */
static int parse_task(struct evr_sampler *s, const uint8_t *rec,
		      const struct perf_event_header *h)
{
	struct sample_id sid = { 0 };
	uint32_t v[4];

	if (!tail_id(rec, h->size, &sid) || h->size < sizeof(*h) + sizeof(v) + sizeof(sid))
		return 0;
	memcpy(v, rec + sizeof(*h), sizeof(v));
	if (h->type == PERF_RECORD_COMM) {
		/* pid, tid, then the name, NUL-terminated and padded, then sample_id. */
		const char *name = (const char *)rec + sizeof(*h) + 8;
		size_t room = h->size - sizeof(*h) - 8 - sizeof(sid);

		return add_task(s, EVR_TASK_COMM, sid.time, v[0], v[1], 0, name,
				strnlen(name, room));
	}
	/* FORK and EXIT: pid, ppid, tid, ptid, time. */
	return add_task(s, h->type == PERF_RECORD_FORK ? EVR_TASK_FORK : EVR_TASK_EXIT, sid.time,
			v[0], v[2], h->type == PERF_RECORD_FORK ? v[1] : 0, NULL, 0);
}

/*
 * The processes that run now, named from /proc/PID/comm: the kernel reports
 * only what happens after the events were opened (perf synthesizes the same).
 */
static int scan_proc(struct evr_sampler *s)
{
	struct timespec ts;
	struct dirent *d;
	uint64_t now;
	DIR *dir = opendir("/proc");
	int err = 0;

	if (!dir)
		return 0;	/* no names for what ran before: samples keep their pids */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	while ((d = readdir(dir)) && !err) {
		char path[64], name[64];
		unsigned long pid;
		char *end;
		ssize_t n;
		int fd;

		pid = strtoul(d->d_name, &end, 10);
		if (*end || !pid || pid > UINT32_MAX)
			continue;
		snprintf(path, sizeof(path), "/proc/%lu/comm", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;	/* it exited meanwhile */
		n = read(fd, name, sizeof(name) - 1);
		close(fd);
		if (n <= 0)
			continue;
		if (name[n - 1] == '\n')
			n--;
		err = add_task(s, EVR_TASK_SCAN, now, (uint32_t)pid, (uint32_t)pid, 0, name,
			       (size_t)n);
	}
	closedir(dir);
	return err;
}

static int parse_rec(struct evr_sampler *s, const uint8_t *rec, evr_sideband_emit_fn *emit,
		     void *ctx)
{
	struct perf_event_header h;
	struct evr_sample_rec r = { 0 };
	struct sample_id sid;

	memcpy(&h, rec, sizeof(h));
	switch (h.type) {
	case PERF_RECORD_SAMPLE:
		return parse_sample(s, rec, h.size, emit, ctx);
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		if (!tail_id(rec, h.size, &sid))
			return 0;
		r.time_ns = sid.time;
		r.pid = sid.pid;
		r.tid = sid.tid;
		r.cpu = sid.cpu;
		r.type = (h.misc & PERF_RECORD_MISC_SWITCH_OUT) ? EVR_SAMPLE_SWITCH_OUT
								 : EVR_SAMPLE_SWITCH_IN;
		r.value = (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) ?
				  EVR_SAMPLE_SWITCH_PREEMPTED : 0;
		if (h.type == PERF_RECORD_SWITCH_CPU_WIDE &&
		    h.size >= sizeof(h) + 8 + sizeof(sid)) {
			uint32_t np[2];	/* next_prev_pid, next_prev_tid */

			memcpy(np, rec + sizeof(h), sizeof(np));
			r.value |= (uint64_t)np[1] << 32;
		}
		s->totals.switches++;
		return put_rec(s, &r, NULL, emit, ctx);
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		return s->system ? parse_task(s, rec, &h) : 0;
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES: {
		uint64_t v[2] = { 0, 0 };
		uint32_t off = h.type == PERF_RECORD_LOST ? 8 : 0;

		if (h.size < sizeof(h) + off + 8)
			return 0;
		memcpy(&v[1], rec + sizeof(h) + off, 8);
		if (tail_id(rec, h.size, &sid)) {
			r.time_ns = sid.time;
			r.cpu = sid.cpu;
		}
		r.type = EVR_SAMPLE_LOST;
		r.value = v[1];
		s->totals.lost += v[1];
		if (h.type == PERF_RECORD_LOST)
			s->lost_said += v[1];
		return put_rec(s, &r, NULL, emit, ctx);
	}
	case PERF_RECORD_MMAP2:
		/* System-wide: only the recorded process's modules symbolize its frames. */
		if (s->system && tail_id(rec, h.size, &sid) && sid.pid != (uint32_t)s->pid)
			return 0;
		return parse_mmap2(s, rec, h.size, h.misc);
	case PERF_RECORD_THROTTLE:
		s->totals.throttled++;
		return 0;
	default:
		return 0;
	}
}

struct drain_ctx {
	struct evr_sampler *s;
	evr_sideband_emit_fn *emit;
	void *ctx;
};

static int on_rec(void *arg, const uint8_t *rec, const struct perf_event_header *h)
{
	struct drain_ctx *d = arg;

	(void)h;
	return parse_rec(d->s, rec, d->emit, d->ctx);
}

/*
 * System-wide, a drain that would find little is put off (up to
 * SYSTEM_DRAIN_NS): each is a SAMPLES chunk and its write, ten a second
 * otherwise, which on a quiet machine cost the recorder more than the records.
 * A ring an eighth full is drained at once, which leaves room for 7 times
 * what came since the last look.
 */
static bool drain_later(struct evr_sampler *s)
{
	struct timespec ts;
	uint64_t now, size, fill;

	if (!s->system)
		return false;
	fill = evr_perf_set_fill(s->events, &size);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	if (fill < size / 8 && now - s->drained_ns < SYSTEM_DRAIN_NS)
		return true;
	s->drained_ns = now;
	return false;
}

static int drain(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	struct drain_ctx d = { .s = s, .emit = emit, .ctx = ctx };
	int err = evr_perf_set_drain(s->events, on_rec, &d);

	if (!err)
		err = flush_out(s, emit, ctx);
	if (!err && s->ntasks_len) {
		err = emit(ctx, EVR_CHUNK_TASKS, s->tasks, s->ntasks_len);
		s->ntasks_len = 0;
	}
	if (!err && s->newmods->n) {
		void *buf;
		size_t len;

		err = evr_modmap_encode(s->newmods, &buf, &len);
		if (!err) {
			err = emit(ctx, EVR_CHUNK_MODULES, buf, len);
			free(buf);
		}
		for (size_t i = 0; i < s->newmods->n; i++)
			free(s->newmods->v[i].path);
		s->newmods->n = 0;
	}
	return err;
}

int evr_sampler_drain(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	return drain_later(s) ? 0 : drain(s, emit, ctx);
}

/*
 * Records lost that no PERF_RECORD_LOST reported. The kernel writes that
 * record only in front of the next record that fits, so a ring that
 * overflowed after its last drain but one says nothing of it; each event
 * counts what it failed to write (PERF_FORMAT_LOST; an inherited event counts
 * into its parent, the event we opened), and their sum is every record lost.
 */
static int lost_unsaid(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	struct evr_sample_rec r = { .type = EVR_SAMPLE_LOST };
	const int *fds;
	uint64_t sum = 0;
	struct timespec ts;
	uint32_t n;

	if (!s->lost_format)
		return 0;
	fds = evr_perf_set_fds(s->events, &n);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v[2];	/* value, lost */

		if (read(fds[i], v, sizeof(v)) == (ssize_t)sizeof(v))
			sum += v[1];
	}
	if (sum <= s->lost_said)
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	r.time_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	r.pid = (uint32_t)s->pid;
	r.cpu = UINT32_MAX;
	r.value = sum - s->lost_said;
	s->totals.lost += r.value;
	s->lost_said = sum;
	return put_rec(s, &r, NULL, emit, ctx);
}

int evr_sampler_finish(struct evr_sampler *s, evr_sideband_emit_fn *emit, void *ctx)
{
	int err = drain(s, emit, ctx);

	if (!err)
		err = lost_unsaid(s, emit, ctx);
	if (!err)
		err = flush_out(s, emit, ctx);

	s->totals.threads = evr_perf_set_threads(s->events);
	if (!err)
		err = emit(ctx, EVR_CHUNK_SAMPLER, &s->totals, sizeof(s->totals));
	return err;
}
