// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libevring's clock choice (producer/clock-decide.c, compiled in): made-up
 * probes for every rule, the kvm-clock guest with an invariant TSC first; and
 * the cross-CPU check (producer/clock-skew.c) run for real on this machine.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "clock-internal.h"

/* A KVM guest as measured in shared/research/clock.md: kvm-clock, invariant
 * TSC, vDSO clock_gettime 27 ns against a 1204 ns system call, 2 vCPUs. */
static struct evr_clock_probe kvm_guest(void)
{
	struct evr_clock_probe p = {
		.invariant_tsc = true, .tsc_allowed = true, .rdtsc_ns = 11, .gettime_ns = 27,
		.syscall_ns = 1204, .tsc_hz = 2096001000ull, .nr_cpus = 2,
	};

	snprintf(p.clocksource, sizeof(p.clocksource), "kvm-clock");
	return p;
}

static struct evr_clock_info decide(const struct evr_clock_probe *p)
{
	struct evr_clock_info r;

	memset(&r, 0x5a, sizeof(r));
	evr_clock_decide(p, &r);
	print_message("%-9s %s\n", r.kind == EVR_CLOCK_TSC ? "tsc" : "monotonic", r.reason);
	return r;
}

static void test_decide_kvm_clock_invariant_tsc(void **state)
{
	struct evr_clock_probe p = kvm_guest();
	struct evr_clock_info r;

	(void)state;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_string_equal(r.source, "kvm-clock");
	assert_non_null(strstr(r.reason, "kvm-clock"));
	assert_non_null(strstr(r.reason, "hypervisor"));
	assert_true(r.tsc_hz == p.tsc_hz && r.rdtsc_ns == 11 && r.gettime_ns == 27);
	/* With the cross-CPU check's result in the reason. */
	p.skew = (struct evr_clock_skew){ .pairs = 1, .tried = 1, .round_trips = 2000,
					  .bound_ns = 160, .cpu_a = 0, .cpu_b = 1 };
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_non_null(strstr(r.reason, "within 160 ns (1 pair)"));
	assert_true(r.skew_bound_ns == 160 && r.skew_pairs == 1);
	/* Xen and Hyper-V's TSC page likewise. */
	snprintf(p.clocksource, sizeof(p.clocksource), "xen");
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
	snprintf(p.clocksource, sizeof(p.clocksource), "hyperv_clocksource_tsc_page");
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
}

/* kvm-clock whose vDSO falls back to the system call: the hypervisor does not
 * flag the TSC stable. Only our own check can make the TSC usable then. */
static void test_decide_kvm_clock_unstable(void **state)
{
	struct evr_clock_probe p = kvm_guest();
	struct evr_clock_info r;

	(void)state;
	p.gettime_ns = 1190;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "does not vouch"));
	p.skew = (struct evr_clock_skew){ .pairs = 1, .tried = 1, .bound_ns = 300 };
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_non_null(strstr(r.reason, "cross-CPU check does"));
	/* Tried but never scheduled: not measured, still nobody vouches. */
	p.skew = (struct evr_clock_skew){ .pairs = 0, .tried = 1 };
	assert_int_equal(decide(&p).kind, EVR_CLOCK_MONOTONIC);
}

static void test_decide_clocksource_tsc(void **state)
{
	struct evr_clock_probe p = kvm_guest();
	struct evr_clock_info r;

	(void)state;
	snprintf(p.clocksource, sizeof(p.clocksource), "tsc");
	p.gettime_ns = 15;
	p.syscall_ns = 0;	/* not needed */
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_non_null(strstr(r.reason, "clocksource is tsc"));
	/* Without an invariant TSC, the kernel's trust is not enough. */
	p.invariant_tsc = false;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "no invariant TSC"));
}

static void test_decide_other_clocksources(void **state)
{
	struct evr_clock_probe p = kvm_guest();

	(void)state;
	/* hpet: the kernel distrusted the TSC; our check decides. */
	snprintf(p.clocksource, sizeof(p.clocksource), "hpet");
	p.nr_cpus = 4;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_MONOTONIC);
	p.skew = (struct evr_clock_skew){ .pairs = 3, .tried = 3, .bound_ns = 250 };
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
	/* One CPU: nothing to disagree with. */
	p.skew = (struct evr_clock_skew){ 0 };
	p.nr_cpus = 1;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
	/* Unknown clocksource (no sysfs), several CPUs, no check: not trusted. */
	p.clocksource[0] = '\0';
	p.nr_cpus = 8;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_MONOTONIC);
}

static void test_decide_unsafe_tsc(void **state)
{
	struct evr_clock_probe p = kvm_guest();
	struct evr_clock_info r;

	(void)state;
	/* Trapped by the hypervisor: a VM exit per read. */
	p.rdtsc_ns = 1500;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "1500 ns"));
	/* A proven offset between two CPUs, whoever vouches. */
	p = kvm_guest();
	p.skew = (struct evr_clock_skew){ .pairs = 1, .tried = 1, .bound_ns = 6000,
					  .proven_ns = 5000, .cpu_a = 0, .cpu_b = 3 };
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "CPU 0 and CPU 3 differ by at least 5000 ns"));
	/* A proven offset below the limit is not disqualifying. */
	p.skew.proven_ns = 400;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
	/* An emulated TSC at 100 MHz. */
	p = kvm_guest();
	p.tsc_hz = 100000000ull;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "implausible"));
	/* prctl(PR_SET_TSC, PR_TSC_SIGSEGV): rdtsc would kill the process. */
	p = kvm_guest();
	p.tsc_allowed = false;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_MONOTONIC);
}

static void test_decide_env_override(void **state)
{
	struct evr_clock_probe p = kvm_guest();
	struct evr_clock_info r;

	(void)state;
	p.env = "monotonic";
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_string_equal(r.reason, "EVR_CLOCK=monotonic");
	/* Forced on a CPU that does not say its TSC is invariant... */
	p.env = "tsc";
	p.invariant_tsc = false;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_non_null(strstr(r.reason, "EVR_CLOCK=tsc"));
	assert_non_null(strstr(r.reason, "not say its TSC is invariant"));
	/* ...but never where rdtsc faults. */
	p.tsc_allowed = false;
	assert_int_equal(decide(&p).kind, EVR_CLOCK_MONOTONIC);
	/* A typo: ignored, and said so. */
	p = kvm_guest();
	p.env = "rdtsc";
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_TSC);
	assert_non_null(strstr(r.reason, "EVR_CLOCK=rdtsc ignored"));
	assert_non_null(strstr(r.reason, "kvm-clock"));
	p.invariant_tsc = false;
	r = decide(&p);
	assert_int_equal(r.kind, EVR_CLOCK_MONOTONIC);
	assert_non_null(strstr(r.reason, "EVR_CLOCK=rdtsc ignored"));
	/* Empty counts as unset. */
	p = kvm_guest();
	p.env = "";
	assert_int_equal(decide(&p).kind, EVR_CLOCK_TSC);
}

static void test_vouched(void **state)
{
	struct evr_clock_probe p = kvm_guest();

	(void)state;
	assert_true(evr_clock_vouched(&p));
	p.syscall_ns = 40;	/* as fast as the vDSO: it is the system call */
	assert_false(evr_clock_vouched(&p));
	snprintf(p.clocksource, sizeof(p.clocksource), "tsc");
	assert_true(evr_clock_vouched(&p));
	snprintf(p.clocksource, sizeof(p.clocksource), "acpi_pm");
	p.syscall_ns = 1204;
	assert_false(evr_clock_vouched(&p));
}

/*
 * The real check on this machine, with its threads: whatever it finds must be
 * self-consistent (a proven offset is within the bound, the CPUs named are
 * real). Run under TSan and ASan too (scripts/test): the bouncing is atomics.
 */
static void test_skew_measure_real(void **state)
{
	struct evr_clock_skew s;

	(void)state;
	evr_clock_skew_measure(1.0, 3, 50000000ull, 100000000ull, &s);
	print_message("cross-CPU check: %u of %u pairs, %u round trips, bound %llu ticks, "
		      "proven %llu, CPUs %d/%d, err %d\n", s.pairs, s.tried, s.round_trips,
		      (unsigned long long)s.bound_ns, (unsigned long long)s.proven_ns, s.cpu_a,
		      s.cpu_b, s.err);
	assert_int_equal(s.err, 0);
	assert_true(s.pairs <= s.tried);
	assert_true(s.proven_ns <= s.bound_ns);
	if (s.pairs) {
		assert_true(s.round_trips >= 16 * s.pairs);
		assert_true(s.cpu_a >= 0 && s.cpu_b > s.cpu_a);
	}
	/* No pairs asked for: nothing done. */
	evr_clock_skew_measure(1.0, 0, 1000000, 1000000, &s);
	assert_int_equal(s.tried, 0);
	assert_int_equal(s.pairs, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decide_kvm_clock_invariant_tsc),
		cmocka_unit_test(test_decide_kvm_clock_unstable),
		cmocka_unit_test(test_decide_clocksource_tsc),
		cmocka_unit_test(test_decide_other_clocksources),
		cmocka_unit_test(test_decide_unsafe_tsc),
		cmocka_unit_test(test_decide_env_override),
		cmocka_unit_test(test_vouched),
		cmocka_unit_test(test_skew_measure_real),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
