// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Timestamps. Events carry raw TSC ticks wherever the CPU's TSC is invariant
 * and trustworthy, whatever clocksource the kernel chose, else CLOCK_MONOTONIC
 * nanoseconds (clock-decide.c says when and why; EVR_CLOCK=tsc|monotonic
 * forces one). rdtsc is read without serialization: ordering among records of
 * one ring is by position, and timestamps are clamped to be non-decreasing per
 * ring. Readers convert ticks through the sync points a recorder stores
 * (docs/trace-format.md); the calibration here only serves live readers and
 * files without them.
 *
 * The choice is made once, by the agent thread as soon as it starts (at load),
 * or by whoever needs it first (a session, evr_clock_get_info()): measuring
 * takes a few milliseconds (the costs of rdtsc and clock_gettime, the
 * cross-CPU check), which the program's own threads should not wait for. No
 * event is written before a session exists, and every session calibrates
 * first, so evr_clock_tsc does not change under a writer.
 *
 * Also the CPU side of the write path, decided once at load: whether sessions
 * may use per-CPU rings written in rseq critical sections (<evring/ring-rseq.h>),
 * and how many rings a session has.
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <evring/ring-rseq.h>

#include "clock-internal.h"
#include "producer-internal.h"
#include "write-internal.h"

/*
 * The cross-CPU check: when nobody else vouches for the TSC, up to 7 CPUs
 * against the first, 20 ms each at most (both threads must run at once, which
 * takes a while on a busy machine; an idle one needs well under 1 ms a pair);
 * when the kernel or the hypervisor does, one pair for the record.
 */
#define SKEW_PAIRS	7u
#define SKEW_BUDGET_NS	20000000ull
#define SKEW_TOTAL_NS	60000000ull
#define SKEW_VOUCHED_NS	5000000ull
#define RATE_SPAN_NS	2000000ull	/* between the two readings of the TSC's rate */

int evr_clock_tsc;

static pthread_once_t settle_once = PTHREAD_ONCE_INIT;
/* EVR_CLOCK as it was at load: the choice is made later, in another thread,
 * and getenv() there could race with the program's setenv(). */
static char env_clock[32];
static bool env_clock_set;
static struct evr_clock_info clock_info;
static uint64_t base_tsc, base_mono;

/* ---- measuring ---- */

static void read_clocksource(char *buf, size_t len)
{
	FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");

	buf[0] = '\0';
	if (!f)
		return;
	if (!fgets(buf, (int)len, f))
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
}

static bool cpu_invariant_tsc(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d & (1u << 8));
}

/* prctl(PR_SET_TSC, PR_TSC_SIGSEGV) makes rdtsc fault: never execute it then. */
static bool tsc_allowed(void)
{
	int v = 0;

	if (prctl(PR_GET_TSC, &v, 0, 0, 0) < 0)
		return true;	/* not x86, or an old kernel: nothing forbids it */
	return v == PR_TSC_ENABLE;
}

enum cost_what { COST_RDTSC, COST_GETTIME, COST_SYSCALL };

/*
 * Nanoseconds per call: the best of @batches batches of @n calls, each timed
 * with CLOCK_MONOTONIC. The best batch is the one no preemption or interrupt
 * hit, so a loaded machine does not make a clock look slow.
 */
static uint32_t cost_ns(enum cost_what what, uint32_t n, uint32_t batches)
{
	uint64_t best = UINT64_MAX;
	volatile uint64_t sink = 0;

	for (uint32_t b = 0; b < batches; b++) {
		uint64_t t0 = evr_clock_gettime_ns(CLOCK_MONOTONIC), t1, acc = 0;
		struct timespec ts;

		for (uint32_t i = 0; i < n; i++) {
			switch (what) {
			case COST_RDTSC:
				acc += __rdtsc();
				break;
			case COST_GETTIME:
				clock_gettime(CLOCK_MONOTONIC, &ts);
				acc += (uint64_t)ts.tv_nsec;
				break;
			case COST_SYSCALL:
				syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
				acc += (uint64_t)ts.tv_nsec;
				break;
			}
		}
		t1 = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		sink += acc;
		if (t1 - t0 < best)
			best = t1 - t0;
	}
	(void)sink;
	best /= n;
	return best > UINT32_MAX ? UINT32_MAX : (uint32_t)best;
}

/* (tsc, CLOCK_MONOTONIC) at one instant: the middle of the shortest of 5 brackets. */
static void tsc_pair(uint64_t *ret_tsc, uint64_t *ret_mono)
{
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < 5; i++) {
		uint64_t t0 = __rdtsc();
		uint64_t m = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		uint64_t t1 = __rdtsc();

		if (t1 >= t0 && t1 - t0 < best) {
			best = t1 - t0;
			*ret_tsc = t0 + (t1 - t0) / 2;
			*ret_mono = m;
		}
	}
	if (best == UINT64_MAX) {
		*ret_mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		*ret_tsc = __rdtsc();
	}
}

static uint64_t rate_hz(uint64_t t0, uint64_t m0, uint64_t t1, uint64_t m1)
{
	if (t1 <= t0 || m1 <= m0)
		return 0;
	return (uint64_t)((unsigned __int128)(t1 - t0) * 1000000000u / (m1 - m0));
}

static void probe(struct evr_clock_probe *p)
{
	cpu_set_t set;
	uint64_t t0, m0, t1, m1;

	memset(p, 0, sizeof(*p));
	p->env = env_clock_set ? env_clock : NULL;
	p->invariant_tsc = cpu_invariant_tsc();
	p->tsc_allowed = tsc_allowed();
	read_clocksource(p->clocksource, sizeof(p->clocksource));
	p->nr_cpus = sched_getaffinity(0, sizeof(set), &set) == 0 ? (uint32_t)CPU_COUNT(&set) : 0;
	if (p->env && strcmp(p->env, "monotonic") == 0)
		return;
	if (!p->tsc_allowed)
		return;
	tsc_pair(&t0, &m0);
	p->rdtsc_ns = cost_ns(COST_RDTSC, 256, 16);
	p->gettime_ns = cost_ns(COST_GETTIME, 256, 16);
	p->syscall_ns = cost_ns(COST_SYSCALL, 16, 8);
	if (!p->invariant_tsc && !(p->env && strcmp(p->env, "tsc") == 0))
		return;
	if (p->rdtsc_ns > EVR_CLOCK_RDTSC_TRAP_NS)
		return;
	tsc_pair(&t1, &m1);
	{
		uint64_t hz = rate_hz(t0, m0, t1, m1);
		double ns_per_tick = hz ? 1e9 / (double)hz : 1.0;	/* the final rate spans more */

		if (evr_clock_vouched(p))
			evr_clock_skew_measure(ns_per_tick, 1, SKEW_VOUCHED_NS, SKEW_VOUCHED_NS,
					       &p->skew);
		else
			evr_clock_skew_measure(ns_per_tick, SKEW_PAIRS, SKEW_BUDGET_NS,
					       SKEW_TOTAL_NS, &p->skew);
	}
	tsc_pair(&t1, &m1);
	if (m1 - m0 < RATE_SPAN_NS) {
		struct timespec d = { .tv_nsec = (long)(RATE_SPAN_NS - (m1 - m0)) };

		while (nanosleep(&d, &d) < 0)
			;
		tsc_pair(&t1, &m1);
	}
	p->tsc_hz = rate_hz(t0, m0, t1, m1);
}

static void settle(void)
{
	struct evr_clock_probe p;

	probe(&p);
	evr_clock_decide(&p, &clock_info);
	base_mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	base_tsc = clock_info.kind == EVR_CLOCK_TSC ? __rdtsc() : 0;
	/* Read by the write path once a session (published after calibrating) exists. */
	__atomic_store_n(&evr_clock_tsc, clock_info.kind == EVR_CLOCK_TSC, __ATOMIC_RELEASE);
#if EVR_WRITE_V_ASM
	evr__write_v_gate_set(clock_info.kind == EVR_CLOCK_TSC);
#endif
}

void evr_clock_settle(void)
{
	pthread_once(&settle_once, settle);
}

int evr_clock_get_info(struct evr_clock_info *ret)
{
	if (!ret)
		return -EINVAL;
	evr_clock_settle();
	*ret = clock_info;
	return 0;
}

/*
 * The decimal number at @p (EVR_MAX_RINGS at most: larger ones saturate there);
 * @end: past its digits. Not strtoul(), whose code and locale tables would be
 * two page faults more at every start (docs/protocol.md, "What a program pays at
 * start-up").
 */
static unsigned long cpu_number(const char *p, const char **end)
{
	unsigned long v = 0;

	for (; *p >= '0' && *p <= '9'; p++)
		v = v < EVR_MAX_RINGS ? v * 10 + (unsigned long)(*p - '0') : EVR_MAX_RINGS;
	*end = p;
	return v;
}

/* Highest possible CPU number + 1, from the kernel's list ("0-3,8-11"); 0 if unknown. */
static uint32_t possible_cpus(void)
{
	/* open() and read(), not stdio: no FILE and buffer to allocate. */
	int fd = open("/sys/devices/system/cpu/possible", O_RDONLY | O_CLOEXEC);
	char buf[256];
	const char *p = buf;
	unsigned long max = 0;
	bool any = false;
	ssize_t len;

	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = 0;
	while (*p >= '0' && *p <= '9') {
		const char *end;
		unsigned long v = cpu_number(p, &end);

		if (*end == '-') {
			p = end + 1;
			v = cpu_number(p, &end);
		}
		if (end == p || v >= EVR_MAX_RINGS)
			return 0;
		if (v > max)
			max = v;
		any = true;
		p = *end == ',' ? end + 1 : end;
	}
	return any ? (uint32_t)max + 1 : 0;
}

static uint32_t nr_rings = 1;

uint32_t evr_session_nr_rings(void)
{
	return nr_rings;
}

/*
 * One ring per possible CPU id. Per-CPU mode needs that list (so every CPU id
 * the kernel may report has its ring), and glibc's rseq registration (every
 * thread has one when the main thread has, glibc >= 2.35 and no
 * glibc.pthread.rseq=0 tunable). EVR_RSEQ=0 forces the try-lock.
 *
 * At load, though a program nobody traces needs none of it: the write path's
 * per-CPU shortcut reads evr_ring_percpu_min with no ordering but the thread
 * creations that follow a constructor (ThreadSanitizer would see a first
 * session's lazy set-up race with it), and the two system calls are cheap
 * beside the rest (docs/protocol.md, "What a program pays at start-up").
 */
static void rings_init(void)
{
	uint32_t n = possible_cpus();

	if (!n) {
		int conf = get_nprocs_conf();

		nr_rings = conf < 1 ? 1 : conf > (int)EVR_MAX_RINGS ? EVR_MAX_RINGS : (uint32_t)conf;
		return;
	}
	nr_rings = n;
#if EVR_HAVE_RSEQ
	const char *env = getenv("EVR_RSEQ");

	if (env && strcmp(env, "0") == 0)
		return;
	if (__rseq_size < offsetof(struct rseq, rseq_cs) + sizeof(uint64_t) ||
	    evr_rseq_cpu(evr_rseq_area()) < 0)
		return;
	evr_ring_percpu_min = n;
	evr_rseq_fence_register();
#endif
}

void evr_clock_init(void)
{
	const char *env = getenv("EVR_CLOCK");

	if (env) {
		snprintf(env_clock, sizeof(env_clock), "%s", env);
		env_clock_set = true;
	}
	rings_init();
}

/* One (tsc, mono, real) sample, with the TSC taken around the clock reads. */
static void sample(uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
	uint64_t t0 = __rdtsc();

	*mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	*real = evr_clock_gettime_ns(CLOCK_REALTIME);
	*tsc = t0 + (__rdtsc() - t0) / 2;
}

void evr_clock_calibrate(struct evr_clock_calib *ret)
{
	/* At least 20 ms between the two samples keeps the rate within a few ppm. */
	const uint64_t min_span = 20 * 1000 * 1000;
	uint64_t tsc, mono, real;

	evr_clock_settle();
	memset(ret, 0, sizeof(*ret));
	if (!evr_clock_tsc) {
		mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		ret->kind = EVR_CLOCK_MONOTONIC;
		ret->mult = 1;
		ret->ts_base = mono;
		ret->mono_base = mono;
		ret->real_base = evr_clock_gettime_ns(CLOCK_REALTIME);
		ret->ticks_per_sec = 1000000000u;
		return;
	}
	mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	if (mono - base_mono < min_span) {
		uint64_t left = min_span - (mono - base_mono);
		struct timespec d = { .tv_sec = 0, .tv_nsec = (long)left };

		while (nanosleep(&d, &d) < 0)
			;
	}
	sample(&tsc, &mono, &real);
	ret->kind = EVR_CLOCK_TSC;
	ret->shift = 32;
	ret->mult = (uint64_t)(((unsigned __int128)(mono - base_mono) << 32) / (tsc - base_tsc));
	ret->ts_base = tsc;
	ret->mono_base = mono;
	ret->real_base = real;
	ret->ticks_per_sec = (uint64_t)((unsigned __int128)(tsc - base_tsc) * 1000000000u /
					(mono - base_mono));
}
