// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Timestamps. The invariant TSC is read with rdtsc (no serialization: ordering
 * among records of one ring is by position, and timestamps are clamped to be
 * non-decreasing per ring). It is used only when the CPU says the TSC is
 * invariant and the kernel itself trusts it as its clocksource; otherwise
 * CLOCK_MONOTONIC. EVR_CLOCK=monotonic forces the latter.
 *
 * Also the CPU side of the write path, decided once at load: whether sessions
 * may use per-CPU rings written in rseq critical sections (<evring/ring-rseq.h>),
 * and how many rings a session has.
 */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>

#include <evring/ring-rseq.h>

#include "producer-internal.h"

int evr_clock_tsc;

static uint64_t base_tsc, base_mono;

uint64_t evr_clock_gettime_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static bool tsc_usable(void)
{
	unsigned int a, b, c, d;
	char cs[32] = "";
	const char *env = getenv("EVR_CLOCK");
	FILE *f;

	if (env && strcmp(env, "monotonic") == 0)
		return false;
	if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
		return false;
	f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
	if (!f)
		return false;
	if (!fgets(cs, sizeof(cs), f))
		cs[0] = 0;
	fclose(f);
	return strncmp(cs, "tsc", 3) == 0;
}

/* Highest possible CPU number + 1, from the kernel's list ("0-3,8-11"); 0 if unknown. */
static uint32_t possible_cpus(void)
{
	FILE *f = fopen("/sys/devices/system/cpu/possible", "re");
	char buf[256];
	const char *p = buf;
	unsigned long max = 0;
	bool any = false;

	if (!f)
		return 0;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = 0;
	fclose(f);
	while (*p >= '0' && *p <= '9') {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (*end == '-') {
			p = end + 1;
			v = strtoul(p, &end, 10);
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
	rings_init();
	evr_clock_tsc = tsc_usable();
	base_mono = evr_clock_gettime_ns(CLOCK_MONOTONIC);
	base_tsc = __rdtsc();
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
