/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libevring's clock choice: what was measured at load (struct evr_clock_probe)
 * and the pure function that decides from it (clock-decide.c, unit-tested with
 * made-up probes), and the cross-CPU TSC check (clock-skew.c).
 */
#ifndef EVR_CLOCK_INTERNAL_H
#define EVR_CLOCK_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <evring/evring.h>

#define EVR_HIDDEN __attribute__((visibility("hidden")))

/*
 * clock_gettime(@id) in nanoseconds: the producer's one helper (the agent, the
 * counters thread, the clock probes). Not for the write path, which has
 * evr_clock_now().
 */
static inline uint64_t evr_clock_gettime_ns(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* rdtsc costing more than this is trapped and emulated (a VM exit is ~1 us). */
#define EVR_CLOCK_RDTSC_TRAP_NS		200u
/* A proven cross-CPU TSC offset above this makes the TSC unusable. */
#define EVR_CLOCK_SKEW_MAX_NS		1000u
/* Plausible TSC frequencies. */
#define EVR_CLOCK_HZ_MIN		500000000ull
#define EVR_CLOCK_HZ_MAX		10000000000ull

/* What the cross-CPU check found (clock-skew.c). */
struct evr_clock_skew {
	uint32_t pairs;			/* CPU pairs that completed at least one round trip */
	uint32_t tried;			/* CPU pairs tried */
	uint32_t round_trips;
	uint64_t bound_ns;		/* the largest offset the observations allow */
	uint64_t proven_ns;		/* the largest offset they prove (0: none) */
	int cpu_a, cpu_b;		/* the pair of proven_ns, or of bound_ns */
	int err;			/* why nothing was measured (-errno), or 0 */
};

/* Everything the choice depends on; measured by clock.c, made up by the tests. */
struct evr_clock_probe {
	const char *env;		/* EVR_CLOCK, NULL when unset */
	bool invariant_tsc;		/* CPUID 0x80000007 EDX bit 8 */
	bool tsc_allowed;		/* prctl(PR_GET_TSC) is PR_TSC_ENABLE (or unknown) */
	char clocksource[32];		/* the kernel's current clocksource, "" unknown */
	uint32_t rdtsc_ns;		/* cost of one rdtsc (best batch), 0 unknown */
	uint32_t gettime_ns;		/* of one clock_gettime(CLOCK_MONOTONIC) */
	uint32_t syscall_ns;		/* of one syscall(SYS_clock_gettime), 0 unknown */
	uint64_t tsc_hz;		/* the TSC's rate against CLOCK_MONOTONIC, 0 unknown */
	uint32_t nr_cpus;		/* CPUs this process may run on */
	struct evr_clock_skew skew;
};

/**
 * evr_clock_decide() - TSC or CLOCK_MONOTONIC, and why, from @p alone.
 * @ret: kind, source and a one-line reason.
 *
 * The rules, in order: EVR_CLOCK=monotonic; rdtsc disabled for the process;
 * EVR_CLOCK=tsc (forced, even without an invariant TSC); no invariant TSC;
 * rdtsc trapped (slow); an implausible rate; a proven cross-CPU offset. Then
 * someone must vouch that the TSCs of all CPUs agree: the kernel (clocksource
 * tsc), the hypervisor (kvm-clock, xen or Hyper-V's TSC page served by the
 * vDSO: it only does so with synchronized, stable TSCs), or our own check.
 * The kernel's clocksource is a witness, never the choice: a guest booted with
 * kvm-clock and an invariant TSC gets the TSC.
 * Context: any thread; pure.
 */
EVR_HIDDEN void evr_clock_decide(const struct evr_clock_probe *p, struct evr_clock_info *ret);

/**
 * evr_clock_vouched() - does the kernel (clocksource tsc) or the hypervisor (a
 * TSC-based paravirtual clocksource its vDSO serves) vouch that the TSCs of
 * all CPUs agree? From @p's clocksource and costs.
 * Context: any thread; pure.
 */
EVR_HIDDEN bool evr_clock_vouched(const struct evr_clock_probe *p);

/**
 * evr_clock_skew_measure() - bound the TSC offset between the first CPU this
 * thread may run on and up to @max_pairs others, with two pinned threads that
 * bounce a cache line (each side reads the TSC when it sees the other's write:
 * the difference bounds the offset plus the transfer latency).
 * @ns_per_tick: to report nanoseconds.
 * @budget_ns: per pair; a pair whose threads do not both run long enough is
 *             skipped (a loaded machine), not counted as skewed.
 * @total_ns: for all pairs.
 * Context: creates and joins threads; no lock held.
 */
EVR_HIDDEN void evr_clock_skew_measure(double ns_per_tick, uint32_t max_pairs,
				       uint64_t budget_ns, uint64_t total_ns,
				       struct evr_clock_skew *ret);

#endif /* EVR_CLOCK_INTERNAL_H */
