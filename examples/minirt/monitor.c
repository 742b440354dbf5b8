// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Monitors: the runtime's locks. An uncontended enter is one trylock; a
 * contended one is counted, traced (ContentionStart/Stop with the time waited)
 * and waits in preemptive mode, so that the owner can trigger a collection
 * while others wait for it.
 */
#include "events.h"
#include "runtime.h"

void rt_monitor_init(struct rt_monitor *m)
{
	pthread_mutex_init(&m->mu, NULL);
	atomic_init(&m->owner_tid, 0);
}

void rt_monitor_fini(struct rt_monitor *m)
{
	pthread_mutex_destroy(&m->mu);
}

void rt_monitor_enter(struct rt_thread *t, struct rt_monitor *m, const void *object)
{
	uint64_t t0 = 0;
	bool traced;

	if (pthread_mutex_trylock(&m->mu) == 0)
		goto owned;
	rt_stat_add(&minirt_stats.contentions, 1);
	/* Read the clock only for a session that wants the duration. */
	traced = ev_contention_stop_enabled();
	if (traced)
		t0 = rt_now_ns();
	ev_contention_start(0, m, object,
			    atomic_load_explicit(&m->owner_tid, memory_order_relaxed));
	rt_coop_leave(t);
	pthread_mutex_lock(&m->mu);
	rt_coop_enter(t);
	if (traced)
		ev_contention_stop(0, (double)(rt_now_ns() - t0));
owned:
	atomic_store_explicit(&m->owner_tid, t->tid, memory_order_relaxed);
}

void rt_monitor_exit(struct rt_monitor *m)
{
	atomic_store_explicit(&m->owner_tid, 0, memory_order_relaxed);
	pthread_mutex_unlock(&m->mu);
}
