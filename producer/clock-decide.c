// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The clock choice, as a pure function of what was measured (clock.c measures,
 * tests/unit/test_clock.c makes probes up).
 *
 * Why not simply follow the kernel's clocksource: many KVM guests run
 * kvm-clock (booted with it, or tsc=unstable), although the CPU's TSC is
 * invariant and the hypervisor keeps the vCPUs' TSCs in step; there
 * clock_gettime costs 2-3 times an rdtsc, most of an event's write. What the
 * TSC needs to be usable as a time stamp: invariant (constant rate, runs in
 * every C-state), readable without a trap, the same on every CPU. The first
 * two come from CPUID and a measurement; for the third someone must vouch:
 *   - clocksource tsc: the kernel checked the TSCs at boot and watches them;
 *   - kvm-clock, xen, hyperv_clocksource_tsc_page: their vDSO paths read the
 *     TSC, and only when the hypervisor flags the TSCs stable and in step
 *     (pvclock's PVCLOCK_TSC_STABLE_BIT); otherwise clock_gettime falls back to
 *     the system call. A clock_gettime that costs well under a system call is
 *     the hypervisor's word;
 *   - else our own cross-CPU check, which must have run.
 * A proven offset between CPUs beyond EVR_CLOCK_SKEW_MAX_NS rules the TSC out
 * whoever vouches. Converting the ticks is the readers' business, through
 * the sync points the recorder takes (docs/trace-format.md): a calibration
 * alone is never trusted for long.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "clock-internal.h"

__attribute__((format(printf, 3, 4)))
static void set(struct evr_clock_info *r, uint32_t kind, const char *fmt, ...)
{
	va_list ap;

	r->kind = kind;
	va_start(ap, fmt);
	vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
	va_end(ap);
}

/* Paravirtual clocksources whose vDSO reads the TSC when the host vouches for it. */
static bool tsc_based_pv(const char *cs)
{
	return strcmp(cs, "kvm-clock") == 0 || strcmp(cs, "xen") == 0 ||
	       strcmp(cs, "hyperv_clocksource_tsc_page") == 0;
}

bool evr_clock_vouched(const struct evr_clock_probe *p)
{
	if (strcmp(p->clocksource, "tsc") == 0)
		return true;
	return tsc_based_pv(p->clocksource) && p->gettime_ns && p->syscall_ns &&
	       (uint64_t)p->gettime_ns * 2 < p->syscall_ns;
}

/* The skew part of a reason: "; CPUs agree within 120 ns (1 pair)". */
static void skew_note(const struct evr_clock_skew *s, char *buf, size_t len)
{
	if (s->pairs)
		snprintf(buf, len, "; CPUs agree within %llu ns (%u pair%s)",
			 (unsigned long long)s->bound_ns, s->pairs, s->pairs == 1 ? "" : "s");
	else if (s->tried)
		snprintf(buf, len, "; cross-CPU check did not run (its threads were not scheduled)");
	else
		buf[0] = '\0';
}

void evr_clock_decide(const struct evr_clock_probe *p, struct evr_clock_info *r)
{
	const char *cs = p->clocksource[0] ? p->clocksource : "unknown";
	char skew[96];

	memset(r, 0, sizeof(*r));
	snprintf(r->source, sizeof(r->source), "%s", cs);
	r->tsc_hz = p->tsc_hz;
	r->rdtsc_ns = p->rdtsc_ns;
	r->gettime_ns = p->gettime_ns;
	r->skew_bound_ns = p->skew.pairs ? p->skew.bound_ns : 0;
	r->skew_pairs = p->skew.pairs;
	skew_note(&p->skew, skew, sizeof(skew));

	if (p->env && *p->env && strcmp(p->env, "tsc") && strcmp(p->env, "monotonic")) {
		/* A typo must not silently change the choice: choose as if unset, say so. */
		struct evr_clock_probe q = *p;
		char rest[sizeof(r->reason)];

		q.env = NULL;
		evr_clock_decide(&q, r);
		snprintf(rest, sizeof(rest), "%s", r->reason);
		snprintf(r->reason, sizeof(r->reason), "EVR_CLOCK=%.24s ignored (not tsc or "
			 "monotonic); %.150s", p->env, rest);
		return;
	}
	if (p->env && strcmp(p->env, "monotonic") == 0) {
		set(r, EVR_CLOCK_MONOTONIC, "EVR_CLOCK=monotonic");
		return;
	}
	if (!p->tsc_allowed) {
		set(r, EVR_CLOCK_MONOTONIC, "rdtsc is disabled in this process (prctl PR_SET_TSC)");
		return;
	}
	if (p->env && strcmp(p->env, "tsc") == 0) {
		set(r, EVR_CLOCK_TSC, "EVR_CLOCK=tsc%s%s", p->invariant_tsc ? "" :
		    " (the CPU does not say its TSC is invariant)", skew);
		return;
	}
	if (!p->invariant_tsc) {
		set(r, EVR_CLOCK_MONOTONIC, "the CPU has no invariant TSC (CPUID 0x80000007 EDX[8])");
		return;
	}
	if (p->rdtsc_ns > EVR_CLOCK_RDTSC_TRAP_NS) {
		set(r, EVR_CLOCK_MONOTONIC, "rdtsc costs %u ns here: the hypervisor traps it",
		    p->rdtsc_ns);
		return;
	}
	if (p->tsc_hz && (p->tsc_hz < EVR_CLOCK_HZ_MIN || p->tsc_hz > EVR_CLOCK_HZ_MAX)) {
		set(r, EVR_CLOCK_MONOTONIC, "the TSC runs at an implausible %.3f GHz",
		    (double)p->tsc_hz / 1e9);
		return;
	}
	if (p->skew.proven_ns > EVR_CLOCK_SKEW_MAX_NS) {
		set(r, EVR_CLOCK_MONOTONIC, "the TSCs of CPU %d and CPU %d differ by at least "
		    "%llu ns", p->skew.cpu_a, p->skew.cpu_b,
		    (unsigned long long)p->skew.proven_ns);
		return;
	}
	if (strcmp(cs, "tsc") == 0) {
		set(r, EVR_CLOCK_TSC, "invariant TSC; the kernel's clocksource is tsc%s", skew);
		return;
	}
	if (evr_clock_vouched(p)) {
		set(r, EVR_CLOCK_TSC, "invariant TSC; clocksource %s reads it in the vDSO (%u ns, "
		    "system call %u ns): the hypervisor says the TSC is stable%s", cs,
		    p->gettime_ns, p->syscall_ns, skew);
		return;
	}
	if (p->nr_cpus == 1) {
		set(r, EVR_CLOCK_TSC, "invariant TSC; clocksource %s; one CPU, nothing to disagree",
		    cs);
		return;
	}
	if (p->skew.pairs) {
		set(r, EVR_CLOCK_TSC, "invariant TSC; clocksource %s does not vouch for it, the "
		    "cross-CPU check does%s", cs, skew);
		return;
	}
	set(r, EVR_CLOCK_MONOTONIC, "clocksource %s does not vouch for the TSC and the cross-CPU "
	    "check could not run%s", cs, tsc_based_pv(cs) ? " (its vDSO falls back to the system "
	    "call: the hypervisor does not say the TSC is stable)" : "");
}
