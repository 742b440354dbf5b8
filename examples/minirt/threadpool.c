// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * minirt's thread pool: worker threads on one FIFO work queue (a mutex and
 * condition variables), and a gate thread that samples throughput and
 * adjusts the number of workers, hill-climbing style:
 *   - work queued but nothing completed in a sample: starvation, add a worker;
 *   - the queue longer than the worker count: add a worker, unless the last
 *     addition made throughput drop, in which case step back one (the extra
 *     worker retires when it next looks for work);
 *   - a worker that finds no work for retire_ms retires, down to the minimum.
 * Reasons in ThreadPoolWorkerThreadAdjustment are .NET's.
 *
 * Workers wait in preemptive mode and run items in cooperative mode.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "events.h"
#include "runtime.h"

#define GATE_INTERVAL_MS 250u

enum {
	ADJ_WARMUP = 0,
	ADJ_INITIALIZING = 1,
	ADJ_CLIMBING_MOVE = 3,
	ADJ_STARVATION = 6,
	ADJ_THREAD_TIMED_OUT = 7,
};

struct worker {
	struct worker *next;
	pthread_t thread;
};

static struct {
	pthread_mutex_t lock;
	pthread_cond_t work_cond;	/* work queued, stopping, target lowered */
	pthread_cond_t space_cond;	/* the queue went below the cap */
	pthread_cond_t gate_cond;	/* stopping */
	pthread_cond_t exit_cond;	/* a worker exited */
	struct rt_work *head, *tail;
	uint32_t qlen;
	uint32_t nthreads;		/* started and not yet exited */
	uint32_t nidle;
	uint32_t retired;
	uint32_t target;
	bool stopping;
	bool gate_started;
	struct worker *exited;		/* to be joined */
	struct rt_pool_config cfg;
	pthread_t gate;
	double throughput;		/* last sample, items/s */
} pool;

static void publish_counts_locked(void)
{
	atomic_store_explicit(&minirt_stats.pool_threads, pool.nthreads, memory_order_relaxed);
	atomic_store_explicit(&minirt_stats.queue_length, pool.qlen, memory_order_relaxed);
}

static void abs_deadline(struct timespec *ts, uint32_t ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static void *worker_main(void *arg)
{
	struct worker *self = arg;
	struct rt_thread *t = rt_thread_attach();
	uint32_t active, retired;
	bool timed_out = false, retired_idle = false;
	struct timespec deadline;

	if (!t)
		rt_oom("a mutator thread");
	pthread_mutex_lock(&pool.lock);
	active = pool.nthreads;
	retired = pool.retired;
	pthread_mutex_unlock(&pool.lock);
	ev_tp_worker_start(active, retired);

	pthread_mutex_lock(&pool.lock);
	for (;;) {
		struct rt_work *w;
		uint64_t t0;

		while (!pool.head) {
			if (pool.stopping)
				goto out;
			if (pool.nthreads > pool.cfg.min_threads &&
			    (pool.nthreads > pool.target || timed_out)) {
				pool.retired++;
				retired_idle = timed_out;
				goto out;
			}
			abs_deadline(&deadline, pool.cfg.retire_ms);
			pool.nidle++;
			timed_out = pthread_cond_timedwait(&pool.work_cond, &pool.lock, &deadline) ==
				    ETIMEDOUT;
			pool.nidle--;
		}
		timed_out = false;
		w = pool.head;
		pool.head = w->next;
		if (!pool.head)
			pool.tail = NULL;
		pool.qlen--;
		if (pool.qlen < pool.cfg.queue_cap)
			pthread_cond_signal(&pool.space_cond);
		publish_counts_locked();
		pthread_mutex_unlock(&pool.lock);

		ev_tp_dequeue(w);
		t0 = rt_now_ns();
		rt_coop_enter(t);
		w->fn(t, w);
		rt_coop_leave(t);
		free(w);
		rt_counters_work_done(rt_now_ns() - t0);
		rt_stat_add(&minirt_stats.work_items_completed, 1);
		pthread_mutex_lock(&pool.lock);
	}
out:
	pool.nthreads--;
	if (pool.target > pool.nthreads)
		pool.target = pool.nthreads < pool.cfg.min_threads ? pool.cfg.min_threads
								 : pool.nthreads;
	active = pool.nthreads;
	retired = pool.retired;
	publish_counts_locked();
	/* A worker leaving because the gate lowered the target was reported then. */
	if (retired_idle)
		ev_tp_adjustment(pool.throughput, active, ADJ_THREAD_TIMED_OUT);
	self->next = pool.exited;
	pool.exited = self;
	pthread_cond_broadcast(&pool.exit_cond);
	pthread_mutex_unlock(&pool.lock);
	ev_tp_worker_stop(active, retired);
	rt_thread_detach(t);
	return NULL;
}

/* Start one more worker. Return: 0, -errno. */
static int spawn_worker_locked(void)
{
	struct worker *w = calloc(1, sizeof(*w));
	int err;

	if (!w)
		return -ENOMEM;
	pool.nthreads++;
	err = pthread_create(&w->thread, NULL, worker_main, w);
	if (err) {
		pool.nthreads--;
		free(w);
		return -err;
	}
	/* Named so that traces and debuggers tell the pool's threads apart. */
	{
		static uint32_t spawned;
		char name[16];

		snprintf(name, sizeof(name), "tp-worker-%u", spawned++ % 10000u);
		(void)pthread_setname_np(w->thread, name);
	}
	if (pool.target < pool.nthreads)
		pool.target = pool.nthreads;
	publish_counts_locked();
	return 0;
}

/* Join the workers that exited. Context: pool.lock not held. */
static void reap(struct worker *list)
{
	while (list) {
		struct worker *next = list->next;

		pthread_join(list->thread, NULL);
		free(list);
		list = next;
	}
}

static void *gate_main(void *arg)
{
	uint64_t last_ns = rt_now_ns(), last_completed = 0;
	double last_throughput = 0;
	int last_move = 0;
	bool warned = false;
	struct timespec deadline;

	(void)arg;
	pthread_mutex_lock(&pool.lock);
	while (!pool.stopping) {
		struct worker *exited;
		uint64_t now, completed, done;
		double throughput;
		int move = 0, reason = 0;

		abs_deadline(&deadline, GATE_INTERVAL_MS);
		while (!pool.stopping &&
		       pthread_cond_timedwait(&pool.gate_cond, &pool.lock, &deadline) != ETIMEDOUT)
			;
		if (pool.stopping)
			break;
		exited = pool.exited;
		pool.exited = NULL;
		pthread_mutex_unlock(&pool.lock);
		reap(exited);

		now = rt_now_ns();
		completed = atomic_load_explicit(&minirt_stats.work_items_completed,
						 memory_order_relaxed);
		done = completed - last_completed;
		throughput = (double)done * 1e9 / (double)(now - last_ns);
		last_ns = now;
		last_completed = completed;
		ev_tp_adjustment_sample(throughput);

		pthread_mutex_lock(&pool.lock);
		pool.throughput = throughput;
		if (pool.qlen > 0 && done == 0) {
			move = 1;
			reason = ADJ_STARVATION;
		} else if (pool.qlen > pool.nthreads) {
			if (last_move > 0 && throughput < last_throughput * 0.9 &&
			    pool.target > pool.cfg.min_threads) {
				move = -1;
				reason = ADJ_CLIMBING_MOVE;
			} else {
				move = 1;
				reason = ADJ_CLIMBING_MOVE;
			}
		}
		if (move > 0 && pool.nthreads < pool.cfg.max_threads) {
			int err = spawn_worker_locked();

			if (err && !warned) {
				fprintf(stderr, "minirt: cannot start a worker thread: %s\n",
					strerror(-err));
				warned = true;
			}
			if (!err)
				ev_tp_adjustment(throughput, pool.nthreads, (uint32_t)reason);
		} else if (move < 0) {
			pool.target--;
			pthread_cond_broadcast(&pool.work_cond);
			ev_tp_adjustment(throughput, pool.target, (uint32_t)reason);
		} else {
			move = 0;
		}
		last_move = move;
		last_throughput = throughput;
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

int rt_pool_start(const struct rt_pool_config *cfg)
{
	pthread_condattr_t ca;
	int err = 0;

	pthread_mutex_init(&pool.lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pool.work_cond, &ca);
	pthread_cond_init(&pool.gate_cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_cond_init(&pool.space_cond, NULL);
	pthread_cond_init(&pool.exit_cond, NULL);
	pool.cfg = *cfg;
	pool.target = cfg->min_threads;

	pthread_mutex_lock(&pool.lock);
	ev_tp_adjustment(0, cfg->min_threads, ADJ_INITIALIZING);
	for (uint32_t i = 0; i < cfg->min_threads && !err; i++)
		err = spawn_worker_locked();
	pthread_mutex_unlock(&pool.lock);
	if (!err) {
		err = -pthread_create(&pool.gate, NULL, gate_main, NULL);
		pool.gate_started = err == 0;
		if (!err)
			(void)pthread_setname_np(pool.gate, "tp-gate");
	}
	return err;
}

void rt_pool_enqueue(struct rt_work *w, bool from_worker)
{
	w->next = NULL;
	ev_tp_enqueue(w);
	pthread_mutex_lock(&pool.lock);
	while (!from_worker && pool.qlen >= pool.cfg.queue_cap)
		pthread_cond_wait(&pool.space_cond, &pool.lock);
	if (pool.tail)
		pool.tail->next = w;
	else
		pool.head = w;
	pool.tail = w;
	pool.qlen++;
	publish_counts_locked();
	if (pool.nidle)
		pthread_cond_signal(&pool.work_cond);
	pthread_mutex_unlock(&pool.lock);
}

void rt_pool_stop(void)
{
	struct worker *exited;

	pthread_mutex_lock(&pool.lock);
	pool.stopping = true;
	pthread_cond_broadcast(&pool.work_cond);
	pthread_cond_broadcast(&pool.gate_cond);
	/* Workers drain the queue before they see stopping. */
	while (pool.nthreads > 0)
		pthread_cond_wait(&pool.exit_cond, &pool.lock);
	exited = pool.exited;
	pool.exited = NULL;
	pthread_mutex_unlock(&pool.lock);
	if (pool.gate_started)
		pthread_join(pool.gate, NULL);
	reap(exited);
	pthread_cond_destroy(&pool.exit_cond);
	pthread_cond_destroy(&pool.space_cond);
	pthread_cond_destroy(&pool.gate_cond);
	pthread_cond_destroy(&pool.work_cond);
	pthread_mutex_destroy(&pool.lock);
}
