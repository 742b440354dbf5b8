/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Counters (counters.c): what sessions, the agent and the fork handlers call. */
#ifndef EVR_COUNTERS_INTERNAL_H
#define EVR_COUNTERS_INTERNAL_H

#include <stdint.h>

#include "producer-internal.h"

/*
 * Lock order: agent lock, counters lock, registry lock. A session with counters
 * is started with the counters lock held around the registry's critical section
 * that publishes it (session-api.c), so that its baselines come before its mask
 * bits: every value recorded once a provider shows the session's bit is in one
 * of the session's intervals.
 */
EVR_HIDDEN void evr_counters_lock(void);
EVR_HIDDEN void evr_counters_unlock(void);

/**
 * evr_counters_session_begin_locked() - sample counters into @s every
 * @interval_ms (nothing when 0): a timerfd on the counters thread, started on
 * first use; the baselines of every counter are taken now, and @s's slot is
 * marked sampled, so values recorded from the moment its mask bits appear
 * count in its first interval.
 * Return: 0, -ENOMEM, -EMFILE... (then nothing was changed: fail the start).
 * Context: counters lock and registry lock held (evr_counters_lock() first),
 * after @s is created and before it is published. The first tick finds @s in
 * the table: the counters thread needs the counters lock, held until after the
 * publication.
 */
EVR_HIDDEN int evr_counters_session_begin_locked(struct evr_session *s, uint32_t interval_ms);

/**
 * evr_counters_session_end() - no more samples into @s; idempotent, and a
 * no-op for sessions without counters. Returns once no sample is being written.
 * Context: before @s is unpublished; registry lock not held (lock order:
 * agent lock, counters lock, registry lock).
 */
EVR_HIDDEN void evr_counters_session_end(struct evr_session *s);

/*
 * evr_proc_stat_field() - field @idx (1-based, as in proc(5)) of
 * /proc/self/stat, parsed after the command name; 0 if unreadable. Exact for
 * integers below 2^53. Used by the Process provider and the agent's Hello.
 * Context: any thread.
 */
EVR_HIDDEN double evr_proc_stat_field(int idx);

/* What evr_counters_foreach() shows of a counter; borrowed for the call. */
struct evr_counter_view {
	const char *provider, *name, *display, *unit;
	uint32_t kind;			/* enum evr_counter_kind */
};

/**
 * evr_counters_foreach() - call @visit for every counter the process has, in
 * creation order, until it returns non-zero (which is returned).
 * Context: counters lock taken here (lock order: agent lock, counters lock,
 * registry lock); @visit must not create or free counters.
 */
EVR_HIDDEN int evr_counters_foreach(int (*visit)(void *ctx, const struct evr_counter_view *v),
				    void *ctx);

/* Fork handlers, called from the agent's (agent.c) in lock order. */
EVR_HIDDEN void evr_counters_fork_prepare(void);
EVR_HIDDEN void evr_counters_fork_parent(void);
EVR_HIDDEN void evr_counters_fork_child(void);

/* One counter of a built-in provider (Process, Memory): a polled value. */
struct evr_builtin_counter {
	const char *name, *display, *unit;
	uint32_t kind;
	evr_counter_poll_fn *fn;
	void *ctx;
};

/*
 * evr_builtin_counters_register() - register @prov and create its @n counters
 * from @defs. The counters are owned by the library for the life of the
 * process; a provider that cannot be registered gets none.
 * Context: a library constructor.
 */
EVR_HIDDEN void evr_builtin_counters_register(struct evr_provider *prov,
					      const struct evr_builtin_counter *defs, size_t n);

#endif /* EVR_COUNTERS_INTERNAL_H */
