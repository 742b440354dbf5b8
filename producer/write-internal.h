/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-session step of the write path, shared by events (write.c) and counter samples. */
#ifndef EVR_WRITE_INTERNAL_H
#define EVR_WRITE_INTERNAL_H

#include <evring/ring-rseq.h>
#include <evring/session.h>

#include "producer-internal.h"

/*
 * evr_session_write_rec_rcu() - write @rec into session @s: in a per-CPU session
 * into the ring of the CPU the thread runs on, in an rseq critical section;
 * otherwise with the try-lock, starting at the ring of *@cpu, which is read on
 * first need (UINT32_MAX: not yet) and kept for the caller's next session.
 * A drop is counted in the session; nothing is returned.
 * Context: RCU read side, @s in the current table; never blocks.
 */
static inline __attribute__((always_inline)) void
evr_session_write_rec_rcu(struct evr_session *s, struct rseq *rs, const struct evr_rseq_rec *rec,
			  uint32_t *cpu)
{
	if (EVR_LIKELY(s->nr_rings >= evr_ring_percpu_min)) {
		(void)evr_ring_rseq_write(s->rings, s->nr_rings, rs, rec);
		return;
	}
	if (*cpu == UINT32_MAX)
		*cpu = evr_cpu_current();
	(void)evr_session_write_rcu_flags(s, *cpu, rec->event_id, rec->ts, rec->tid, rec->src,
					  rec->len, (uint8_t)rec->flags);
}

/*
 * Where evr__event_write_v() is written by hand (write-v-asm.c: x86-64 with
 * rseq), the C version is evr__event_write_v_c(), which the hand-written one
 * jumps to for anything but its common case; evr__event_write_v_slow() is
 * the slow path of both. Both take the arguments of evr__event_write_v() and
 * return what it returns.
 */
#if EVR_HAVE_RSEQ
#define EVR_WRITE_V_ASM 1
#define EVR_WRITE_V_C evr__event_write_v_c
#else
#define EVR_WRITE_V_ASM 0
#define EVR_WRITE_V_C evr__event_write_v
#endif
#if EVR_WRITE_V_ASM
/* Once the clock is settled: whether the hand-written path may run (@tsc: the
 * clock is the TSC). */
EVR_HIDDEN void evr__write_v_gate_set(bool tsc);
#endif
EVR_HIDDEN int evr__event_write_v_c(struct evr_event *ev, uint64_t q0, uint64_t q1, uint64_t q2,
				    const void *src, uint64_t pn);
EVR_HIDDEN int evr__event_write_v_slow(struct evr_event *ev, uint64_t q0, uint64_t q1,
				       uint64_t q2, const void *src, uint64_t pn);

#endif /* EVR_WRITE_INTERNAL_H */
