/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libevring internals: time, CPU, thread id, the registry lock. */
#ifndef EVR_PRODUCER_INTERNAL_H
#define EVR_PRODUCER_INTERNAL_H

#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include <evring/evring.h>
#include <evring/session.h>

#include "clock-internal.h"

#define EVR_HIDDEN __attribute__((visibility("hidden")))

/*
 * A zero-initialized variable that libevring writes or reads at load (or at the
 * exit), in every program nobody traces: in .data, not .bss, so that it shares the page that the
 * dynamic loader has already touched (.data's last page, where it clears the
 * start of .bss) instead of costing a page fault of its own, where .bss's large
 * arrays (the heap provider's tables) put it pages away (docs/protocol.md, "What
 * a program pays at start-up").
 */
#define EVR_LOAD_DATA __attribute__((section(".data.evr_load")))

/* ---- time ---- */

/* Nonzero when timestamps are raw invariant-TSC ticks (decided once at load). */
extern int evr_clock_tsc EVR_HIDDEN;

static inline uint64_t evr_clock_now(void)
{
	struct timespec t;

	if (EVR_LIKELY(evr_clock_tsc))
		return __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Calibration of evr_clock_now() against CLOCK_MONOTONIC/REALTIME, for a session
 * header. Makes the clock choice if not made yet; may sleep up to 20 ms. */
EVR_HIDDEN void evr_clock_calibrate(struct evr_clock_calib *ret);
EVR_HIDDEN void evr_clock_init(void);
/* Make the clock choice now if it is not made yet (clock.c). Context: any thread. */
EVR_HIDDEN void evr_clock_settle(void);

/* evr_clock_gettime_ns(), the producer's one clock-reading helper: clock-internal.h. */

/*
 * Rings per session: one per possible CPU id (the highest + 1, so that a ring's
 * index is the CPU it serves even with holes in the list), decided at load.
 */
EVR_HIDDEN uint32_t evr_session_nr_rings(void);

/* ---- CPU: the rseq area glibc registers for every thread (glibc >= 2.35) ---- */

static inline uint32_t evr_cpu_current(void)
{
	struct rseq *rs;
	int32_t cpu;

#if defined(__GNUC__) && !defined(__clang__)
	rs = (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
#else
	char *tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	rs = (struct rseq *)(tp + __rseq_offset);
#endif
	cpu = (int32_t)__atomic_load_n(&rs->cpu_id, __ATOMIC_RELAXED);
	if (EVR_UNLIKELY(cpu < 0))
		cpu = sched_getcpu();
	return cpu < 0 ? 0 : (uint32_t)cpu;
}

/* ---- thread id, cached; reset in the child after fork ---- */

extern __thread uint32_t evr_tls_tid __attribute__((tls_model("initial-exec"))) EVR_HIDDEN;

static inline uint32_t evr_thread_id(void)
{
	if (EVR_UNLIKELY(!evr_tls_tid))
		evr_tls_tid = (uint32_t)gettid();
	return evr_tls_tid;
}

/* ---- registry ---- */

/* Serializes registration, session start/stop and mask computation. */
extern pthread_mutex_t evr_registry_lock EVR_HIDDEN;

/* ---- sessions (session-api.c) ---- */

/**
 * evr_session_start_owned() - evr_session_start() for a consumer: @client and
 * @client_pid are what ListSessions shows (NULL: an in-process session).
 * @meta_size is the metadata area size (0: default).
 */
EVR_HIDDEN int evr_session_start_owned(const struct evr_session_opts *opts, const char *client,
				       uint32_t client_pid, struct evr_session **ret, char *errbuf,
				       size_t errlen);

/* Bytes of the session in @slot counted against the limits (0: in-process). */
EVR_HIDDEN uint64_t evr_session_bytes_locked(uint32_t slot);

/* Who started the session in @slot; borrowed under the registry lock. */
EVR_HIDDEN const char *evr_session_client_locked(uint32_t slot, uint32_t *ret_pid);

/*
 * In a child after fork(), with the registry lock held since the prepare
 * handler: publish an empty session table and recompute the masks (to zero),
 * so the child never writes into its parent's sessions.
 */
EVR_HIDDEN void evr_sessions_reset_in_child_locked(void);

/* ---- session memory: limits and backing pages (memory.c) ---- */

/* From the library constructor: the limits from the environment. */
EVR_HIDDEN void evr_memory_init(void);

/* "512 MiB", "1.5 GiB" into @buf. */
EVR_HIDDEN const char *evr_memory_fmt(uint64_t n, char *buf, size_t len);

/* The ring size for a consumer's session that named none: 4 MiB, halved until
 * the session fits under the per-session limit (down to 64 KiB). */
EVR_HIDDEN uint64_t evr_memory_default_ring_locked(uint32_t nr_rings);

/*
 * Count a consumer's session of @nr_rings rings of @ring_size against the
 * limits. Return: 0 and @ret_bytes (give back with evr_memory_release_locked()),
 * -EFBIG (over the per-session limit), -ENOSPC (over what is left of the total),
 * with one line in @errbuf naming the size, the limit and how to raise it.
 */
EVR_HIDDEN int evr_memory_admit_locked(uint32_t nr_rings, uint64_t ring_size,
				       uint64_t *ret_bytes, char *errbuf, size_t errlen);
EVR_HIDDEN void evr_memory_release_locked(uint64_t bytes);

/* Backing a session's rings with pages, a slice at a time: those of online CPUs. */
struct evr_populate {
	struct evr_session *s;		/* NULL: nothing to do */
	uint32_t ring;			/* next ring to back */
	uint64_t off;			/* bytes of it backed */
	uint64_t populated;		/* bytes backed in all */
	uint64_t small_ns, small_bytes;	/* small pages' cost: CPU time, bytes */
	bool no_huge;			/* no huge pages (not asked for, or refused) */
	bool done;
	uint64_t online[EVR_MAX_RINGS / 64];	/* rings of CPUs online at the start */
};
EVR_HIDDEN void evr_memory_populate_init(struct evr_populate *p, struct evr_session *s);
/* Back at most @budget more bytes. Return: true if there is more to do. */
EVR_HIDDEN bool evr_memory_populate_step(struct evr_populate *p, uint64_t budget);
/* All at once (in-process sessions). */
EVR_HIDDEN void evr_memory_populate_all(struct evr_session *s);

/**
 * evr_memory_touch_turn() - write the pages a window ahead of each live session's
 * ring heads on their first lap, those not written yet (memory.c explains why).
 * @now: CLOCK_MONOTONIC ns.
 * @kicked: a session may have started since the last turn (evr_agent_kick()): look
 *	now, due or not.
 * Return: when the next turn is due (CLOCK_MONOTONIC ns), UINT64_MAX when no ring
 *	of a live session is in its first lap: no wake-up needed.
 * Context: the agent thread, agent lock held, not in an RCU read-side section.
 */
EVR_HIDDEN uint64_t evr_memory_touch_turn(uint64_t now, bool kicked);
/* In a child after fork(): forget the parent's sessions. Context: agent lock. */
EVR_HIDDEN void evr_memory_touch_reset_in_child(void);

/* ---- the agent (agent.c) ---- */

/* From the library constructor: fork handlers, then the agent unless EVR_AGENT=0. */
EVR_HIDDEN void evr_agent_library_init(void);

/*
 * evr_agent_kick() - a session started in this process (evr_session_start()): wake
 * the agent, if it runs, so that it writes the rings' pages ahead of their writers
 * (evr_memory_touch_turn()); it knows of its own sessions. Context: no lock held.
 */
EVR_HIDDEN void evr_agent_kick(void);

/*
 * The built-in providers (the Process and Memory counters, Heap) are registered when the
 * first consumer connects or the first in-process session starts, not at load: their 14
 * counters are 63 KiB of zeroed memory (15 page faults) and their events' metadata, which
 * a program nobody traces would pay at every start (docs/protocol.md, "What a program
 * pays at start-up"). Each *_register() once, from evr_builtin_providers_ensure*().
 */
EVR_HIDDEN void evr_process_provider_register(void);
EVR_HIDDEN void evr_memory_provider_register(void);
EVR_HIDDEN void evr_heap_provider_register(void);
/*
 * evr_heap_atfork_register() - the Heap provider's fork handlers. Called at load
 * (not with the provider's registration, which holds the registry lock that
 * fork()'s prepare handlers take while glibc holds the lock pthread_atfork()
 * takes), after the agent's: prepare handlers run in the reverse order, so the
 * table of mappings' lock is taken before the registry lock and liburcu's, which
 * a thread holding it may need to write its event.
 */
EVR_HIDDEN void evr_heap_atfork_register(void);

/*
 * evr_builtin_providers_ensure_locked() - register the built-in providers unless done.
 * Context: the agent lock held (lock order: agent lock, then the counters and registry
 * locks); evr_builtin_providers_ensure() takes it. Never on the write path.
 */
EVR_HIDDEN void evr_builtin_providers_ensure_locked(void);
EVR_HIDDEN void evr_builtin_providers_ensure(void);

#endif /* EVR_PRODUCER_INTERNAL_H */
