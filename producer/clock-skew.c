// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Do the TSCs of this machine's CPUs agree? Two threads, pinned to CPU a and
 * CPU b, bounce a sequence number through two cache lines:
 *
 *   A: t = tsc; a.tsc = t; a.seq = i (release)   ... wait b.seq == i; tA2 = tsc
 *   B: wait a.seq == i (acquire); tB = tsc; b.tsc = tB; b.seq = i (release)
 *
 * B read its TSC after A wrote t, so tB - t = elapsed + off (off: B's TSC minus
 * A's) with elapsed > 0, hence off < min(tB - t); likewise tA2 - tB = elapsed'
 * - off gives off > -min(tA2 - tB). The interval is as wide as a cache-line
 * transfer (100-300 ns on a VM); a bound of the wrong sign proves an offset.
 * Each TSC read is fenced (lfence before and after) so that it stays between
 * the loads and stores around it; this is the check, not the hot path.
 *
 * Protocol: A writes only a_seq/a_tsc, B only b_seq/b_tsc, each on its own
 * cache line; stop is written by either side on timeout (relaxed: it only
 * ends spinning). A round trip's values are read after the acquire load of
 * the seq that follows them, which pairs with the writer's release store.
 *
 * On a loaded machine the two threads may not run at the same time; each pair
 * gets a time budget and one that completes no round trip is reported as not
 * measured, never as skewed. A thread pinned to a CPU that something else
 * hogs may not even start for seconds (measured here: 8 s): the caller (the
 * agent, which must answer consumers) waits for the budget plus a little,
 * then leaves such threads behind, detached; they find the deadline past
 * when they run, and the last one out frees the shared block.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <x86intrin.h>

#include "clock-internal.h"

#define ROUND_TRIPS	2000u
#define MIN_ROUND_TRIPS	16u	/* fewer say more about preemption than about the TSCs */
#define SPIN_CHECK	1024u	/* spins between two looks at the clock */

struct bounce {
	_Alignas(64) uint64_t a_seq;
	uint64_t a_tsc;
	_Alignas(64) uint64_t b_seq;
	uint64_t b_tsc;
	_Alignas(64) uint32_t stop;
	uint64_t deadline_ns;
	int cpu;
	int64_t min_ba;		/* B's: min(tB - tA) */
	int64_t min_ab;		/* A's: min(tA2 - tB) */
	uint32_t done;		/* round trips A completed */
	uint32_t finished;	/* threads that returned (release; the caller acquires) */
	uint32_t refs;		/* the caller and each thread; the last one frees */
};

static void bounce_put(struct bounce *b)
{
	if (__atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(b);
}

/* A thread is done with @b: the caller may read its results (acquire on finished). */
static void side_exit(struct bounce *b)
{
	__atomic_add_fetch(&b->finished, 1, __ATOMIC_RELEASE);
	bounce_put(b);
}

static inline uint64_t tsc_fenced(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

/* Spin until *@p == @want; false on timeout or stop. */
static bool wait_for(struct bounce *b, const uint64_t *p, uint64_t want)
{
	for (uint32_t spins = 0;; spins++) {
		/* Pairs with the other side's release store of its seq. */
		if (__atomic_load_n(p, __ATOMIC_ACQUIRE) == want)
			return true;
		if (spins % SPIN_CHECK == SPIN_CHECK - 1) {
			if (__atomic_load_n(&b->stop, __ATOMIC_RELAXED))
				return false;
			if (evr_clock_gettime_ns(CLOCK_MONOTONIC) > b->deadline_ns) {
				__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
				return false;
			}
		}
		_mm_pause();
	}
}

static void *side_b(void *arg)
{
	struct bounce *b = arg;

	/* Ready: A starts once it sees this. */
	__atomic_store_n(&b->b_seq, UINT64_MAX, __ATOMIC_RELEASE);
	for (uint64_t i = 1; i <= ROUND_TRIPS; i++) {
		uint64_t t;
		int64_t d;

		if (!wait_for(b, &b->a_seq, i))
			break;
		t = tsc_fenced();
		d = (int64_t)(t - __atomic_load_n(&b->a_tsc, __ATOMIC_RELAXED));
		if (d < b->min_ba)
			b->min_ba = d;
		__atomic_store_n(&b->b_tsc, t, __ATOMIC_RELAXED);
		__atomic_store_n(&b->b_seq, i, __ATOMIC_RELEASE);
	}
	side_exit(b);
	return NULL;
}

static void *side_a(void *arg)
{
	struct bounce *b = arg;

	if (!wait_for(b, &b->b_seq, UINT64_MAX)) {
		side_exit(b);
		return NULL;
	}
	for (uint64_t i = 1; i <= ROUND_TRIPS; i++) {
		uint64_t t;
		int64_t d;

		__atomic_store_n(&b->a_tsc, tsc_fenced(), __ATOMIC_RELAXED);
		__atomic_store_n(&b->a_seq, i, __ATOMIC_RELEASE);
		if (!wait_for(b, &b->b_seq, i))
			break;
		t = tsc_fenced();
		d = (int64_t)(t - __atomic_load_n(&b->b_tsc, __ATOMIC_RELAXED));
		if (d < b->min_ab)
			b->min_ab = d;
		b->done = (uint32_t)i;
	}
	/* B may still wait for a round trip that will not come. */
	__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
	side_exit(b);
	return NULL;
}

static int start_pinned(pthread_t *t, int cpu, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	err = pthread_attr_init(&attr);
	if (err)
		return -err;
	err = pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	if (!err)
		err = pthread_attr_setstacksize(&attr, 64 * 1024);
	if (!err)
		err = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -err;
}

/*
 * One pair, into @ret (a copy of the block, valid when both threads finished).
 * Return: 0 both finished, -ETIMEDOUT (left behind), -errno (not started).
 */
static int run_pair(int cpu_a, int cpu_b, uint64_t budget_ns, struct bounce *ret)
{
	struct bounce *b = aligned_alloc(64, sizeof(*b));
	uint64_t give_up;
	pthread_t ta, tb;
	int err;

	if (!b)
		return -ENOMEM;
	memset(b, 0, sizeof(*b));
	b->min_ba = INT64_MAX;
	b->min_ab = INT64_MAX;
	b->deadline_ns = evr_clock_gettime_ns(CLOCK_MONOTONIC) + budget_ns;
	b->refs = 3;
	err = start_pinned(&tb, cpu_b, side_b, b);
	if (err) {
		free(b);
		return err;
	}
	err = start_pinned(&ta, cpu_a, side_a, b);
	if (err) {
		__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
		pthread_join(tb, NULL);
		free(b);
		return err;
	}
	/* Wait for both, a little past their deadline at most. */
	give_up = b->deadline_ns + budget_ns / 4 + 1000000u;
	while (__atomic_load_n(&b->finished, __ATOMIC_ACQUIRE) < 2 &&
	       evr_clock_gettime_ns(CLOCK_MONOTONIC) < give_up) {
		struct timespec d = { .tv_nsec = 100000 };

		nanosleep(&d, NULL);
	}
	if (__atomic_load_n(&b->finished, __ATOMIC_ACQUIRE) < 2) {
		__atomic_store_n(&b->stop, 1, __ATOMIC_RELAXED);
		pthread_detach(ta);
		pthread_detach(tb);
		bounce_put(b);
		return -ETIMEDOUT;
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	*ret = *b;
	bounce_put(b);
	return 0;
}

void evr_clock_skew_measure(double ns_per_tick, uint32_t max_pairs, uint64_t budget_ns,
			    uint64_t total_ns, struct evr_clock_skew *ret)
{
	uint64_t end = evr_clock_gettime_ns(CLOCK_MONOTONIC) + total_ns;
	cpu_set_t allowed;
	sigset_t all, old;
	struct bounce b;
	int cpus[CPU_SETSIZE], n = 0;
	uint32_t step;

	memset(ret, 0, sizeof(*ret));
	ret->cpu_a = ret->cpu_b = -1;
	if (sched_getaffinity(0, sizeof(allowed), &allowed) < 0) {
		ret->err = -errno;
		return;
	}
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n < 2 || !max_pairs)
		return;
	/* Spread the pairs over the CPUs when there are more than max_pairs others. */
	step = (uint32_t)(n - 1) > max_pairs ? (uint32_t)(n - 1) / max_pairs : 1;
	/* The threads take no signal meant for the application. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (uint32_t k = 1; k < (uint32_t)n && ret->tried < max_pairs; k += step) {
		int64_t hi, lo;
		uint64_t bound, proven = 0;
		uint64_t now = evr_clock_gettime_ns(CLOCK_MONOTONIC);
		int err;

		if (now >= end)
			break;
		err = run_pair(cpus[0], cpus[k], end - now < budget_ns ? end - now : budget_ns, &b);
		ret->tried++;
		if (err == -ETIMEDOUT)
			continue;	/* a CPU too busy to run its thread: not measured */
		if (err) {
			ret->err = err;
			continue;
		}
		if (b.done < MIN_ROUND_TRIPS || b.min_ba == INT64_MAX || b.min_ab == INT64_MAX)
			continue;
		ret->pairs++;
		ret->round_trips += b.done;
		/* offset(b - a) lies in (lo, hi) */
		hi = b.min_ba;
		lo = -b.min_ab;
		if (hi < 0)
			proven = (uint64_t)-hi;
		else if (lo > 0)
			proven = (uint64_t)lo;
		{
			uint64_t ah = (uint64_t)(hi < 0 ? -hi : hi), al = (uint64_t)(lo < 0 ? -lo : lo);

			bound = (uint64_t)((double)(ah > al ? ah : al) * ns_per_tick);
		}
		proven = (uint64_t)((double)proven * ns_per_tick);
		if (proven > ret->proven_ns || (!ret->proven_ns && bound > ret->bound_ns)) {
			ret->cpu_a = cpus[0];
			ret->cpu_b = cpus[k];
		}
		if (proven > ret->proven_ns)
			ret->proven_ns = proven;
		if (bound > ret->bound_ns)
			ret->bound_ns = bound;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}
