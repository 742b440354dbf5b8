// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The RCU session table and the enable masks derived from it: the one place
 * that inserts a session, removes one, and recomputes what each event's
 * writers look at. Everything here runs under evr_registry_lock.
 *
 * What writers read (producer/write.c, the inline checks of <evring/evring.h>):
 *
 *   evr_session_table_cur	the live struct evr_session_table, immutable once
 *				published; load-acquired in evr_session_table_get_rcu()
 *				inside a liburcu-bp read-side section.
 *   evr_event.mask		bit i: slot i wants the event. Read relaxed, first
 *				outside any section (the inline enabled check), then
 *				again inside it and ANDed with the table's live bits:
 *				a bit read before the section could name a slot that
 *				has since been reused.
 *   evr_event.percpu		the rings of the one per-CPU session that wants the
 *				event, or NULL: loaded inside an rseq critical section
 *				(<evring/ring-rseq.h>), which is itself the read side
 *				that protects those rings; no RCU read lock.
 *   evr_provider_priv.sess_*	each slot's keywords, level and stack depth, and
 *				stack_slots: relaxed, by the built-in events' per-write
 *				filter and write_rcu().
 *
 * The fences, and what each pairs with:
 *
 *  - Publishing a table is an exchange with release (and acquire, for the old
 *    pointer) of evr_session_table_cur; it pairs with the load-acquire in
 *    evr_session_table_get_rcu(), so a writer that sees the new table sees the
 *    sessions, rings and doorbells it names fully set up. The pointer uses C11
 *    atomics so that ThreadSanitizer sees the pairing (it cannot see liburcu's).
 *  - An event's per-CPU shortcut is stored with release; it pairs with the
 *    dependent load of the rings inside the rseq section. Masks, provider
 *    aggregates and per-slot filters are relaxed: a writer that sees a stale
 *    one writes where the table (read inside its section) still allows, or
 *    misses an event of a session that is just starting.
 *
 * The grace periods (evr_session_table_synchronize()): urcu_bp_synchronize_rcu()
 * waits for the liburcu-bp read-side sections, evr_rseq_synchronize() (membarrier's
 * rseq fence) for the rseq sections of the shortcut. After both, no writer holds
 * a pointer into anything unpublished before the call.
 *
 *  - Insert: copy the live table into a fresh one with the session in its slot,
 *    publish it, wait, free the old table; then the masks. A writer that sees
 *    a mask bit finds the session in the table (or, with a stale table, skips
 *    the slot: the bit is ANDed with the live bits of the table it loaded).
 *  - Remove: the masks and shortcuts first, computed from the table without the
 *    session (they then name only sessions of both tables); then publish that
 *    table and wait. Afterwards no writer is inside the session's rings by
 *    either way in, so its rings can be flushed and its memory reclaimed. The
 *    table it publishes was allocated at insert (evr_session.stop_table): a
 *    stop cannot fail.
 *  - Old tables, sessions and provider metadata are freed only through
 *    evr_reclaim_after_grace_period() (sessions/session.c), after a grace
 *    period: the one name ThreadSanitizer's suppression matches.
 *  - An event is never enabled in a session whose metadata area lacks its
 *    description: the masks are ANDed with evr_event_meta.described, which
 *    metadata.c sets before a session is inserted or an event's mask recomputed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define _LGPL_SOURCE
#include <urcu-bp.h>

#include <evring/ring-rseq.h>

#include "producer-internal.h"
#include "heap-internal.h"
#include "registry-internal.h"
#include "session-table-internal.h"

/*
 * The table before the first session: const, so in .rodata, among pages the
 * program's start has already mapped, rather than alone on a page of .bss that
 * the first provider's registration (evr_meta_describe_events_locked()) and the
 * first event read, one page fault more at every start of a program nobody
 * traces (docs/protocol.md, "What a program pays at start-up"). Published tables
 * are immutable (above): nothing writes through evr_session_table_cur.
 */
static const struct evr_session_table empty_table;

_Atomic(struct evr_session_table *) evr_session_table_cur =
	(struct evr_session_table *)(uintptr_t)&empty_table;

/*
 * Writers are inside liburcu-bp read-side sections, or, on the write path's
 * per-CPU shortcut, inside rseq critical sections (<evring/ring-rseq.h>):
 * wait for both.
 */
void evr_session_table_synchronize(void)
{
	urcu_bp_synchronize_rcu();
	evr_rseq_synchronize();
}

/* Make @next the live table, wait for a grace period, free the previous one. */
static void table_publish_locked(struct evr_session_table *next)
{
	struct evr_session_table *prev;

	/* Pairs with the load-acquire in evr_session_table_get_rcu(). */
	prev = atomic_exchange_explicit(&evr_session_table_cur, next, memory_order_acq_rel);
	evr_session_table_synchronize();
	if (prev != &empty_table)
		evr_reclaim_after_grace_period(prev, free);
}

/*
 * The write path's shortcut for an event that session mask @m of table @t
 * enables: the rings of the one session that wants it if that session is
 * per-CPU, else NULL (evr_event.percpu). Built-in events filter per write and
 * never take it. Whoever removes the session clears it before the grace period
 * that precedes freeing the rings (evr_session_stop(), evr_provider_unregister()).
 */
static struct evr_ring_writer *event_percpu_rings(const struct evr_event *ev,
						  const struct evr_session_table *t, uint64_t m,
						  uint64_t stack_slots)
{
	const struct evr_session *s;

	/* A session that wants stacks captures them under the RCU path (write_rcu()). */
	if (!m || (m & (m - 1)) || (ev->flags & EVR_EVENT_F_BUILTIN) ||
	    ((m & stack_slots) && !(ev->flags & EVR_EVENT_F_NOSTACK)))
		return NULL;
	s = t->slot[__builtin_ctzll(m)];
	/* The fast path reads it inside rseq critical sections: only with their fence. */
	return s->nr_rings >= evr_ring_percpu_min && evr_rseq_fence_ok ? s->rings : NULL;
}

static void provider_recompute_locked(struct evr_provider *p, const struct evr_session_table *t)
{
	struct evr_provider_priv *pp = p->priv;
	const struct evr_provider_spec *spec[EVR_MAX_SESSIONS] = { 0 };
	const struct evr_provider_spec *newest = NULL;
	uint64_t pmask = 0, kw = 0, newest_serial = 0, stack_slots = 0;
	uint32_t level = 0;
	bool changed;

	for (uint64_t live = t->live; live; live &= live - 1) {
		unsigned int i = (unsigned int)__builtin_ctzll(live);
		const struct evr_session *s = t->slot[i];

		spec[i] = evr_provider_spec_list_find(s->cfg.providers, p->name);
		/* Heap patches the process when on: by its name only, never by "*". */
		if (spec[i] && evr_heap_provider_by_name_only(p) && strcmp(spec[i]->name, p->name))
			spec[i] = NULL;
		if (!spec[i])
			continue;
		pmask |= 1ull << i;
		kw |= spec[i]->keywords;
		if (spec[i]->level > level)
			level = spec[i]->level;
		atomic_store_explicit(&pp->sess_keywords[i], spec[i]->keywords,
				      memory_order_relaxed);
		atomic_store_explicit(&pp->sess_level[i], spec[i]->level, memory_order_relaxed);
		{
			/* Checked when the session started: never -EINVAL here. */
			int depth = evr_stack_depth_arg(evr_provider_spec_arg(spec[i], "stacks"),
							s->cfg.stack_depth);

			if (depth > 0)
				stack_slots |= 1ull << i;
			atomic_store_explicit(&pp->sess_stack_depth[i], (uint8_t)(depth > 0 ? depth : 0),
					      memory_order_relaxed);
		}
		if (s->serial >= newest_serial) {
			newest_serial = s->serial;
			newest = spec[i];
		}
	}
	/* Before the masks: a writer that sees a session's bit finds its depth (a write
	 * racing with the start of a session may still go without a stack). */
	atomic_store_explicit(&pp->stack_slots, stack_slots, memory_order_relaxed);
	for (uint32_t e = 0; e < pp->nr; e++) {
		struct evr_event *ev = pp->events[e];
		uint64_t m = 0;

		for (uint64_t b = pmask; b; b &= b - 1) {
			unsigned int i = (unsigned int)__builtin_ctzll(b);

			if ((ev->flags & EVR_EVENT_F_BUILTIN) ||
			    (evr_keywords_match(spec[i]->keywords, ev->desc->keywords) &&
			     evr_level_match(spec[i]->level, ev->desc->level)))
				m |= 1ull << i;
		}
		/* Never enable an event in a session that lacks its description. */
		m &= pp->meta[e].described;
		/* Release: a writer that loads the rings sees them set up. */
		atomic_store_explicit(&ev->percpu, event_percpu_rings(ev, t, m, stack_slots),
				      memory_order_release);
		atomic_store_explicit(&ev->mask, m, memory_order_relaxed);
	}
	changed = pmask != atomic_load_explicit(&p->mask, memory_order_relaxed) ||
		  kw != atomic_load_explicit(&p->keywords, memory_order_relaxed) ||
		  level != atomic_load_explicit(&p->level, memory_order_relaxed);
	atomic_store_explicit(&p->keywords, kw, memory_order_relaxed);
	atomic_store_explicit(&p->level, level, memory_order_relaxed);
	atomic_store_explicit(&p->mask, pmask, memory_order_relaxed);
	if (pmask)
		pp->ever_enabled = true;
	if (changed && p->callback)
		p->callback(p, pmask != 0, (uint8_t)level, kw, pmask ? newest : NULL,
			    p->callback_ctx);
}

/* Every event's mask and shortcut and every provider's aggregate, from @t. */
static void masks_recompute_locked(const struct evr_session_table *t)
{
	for (struct evr_provider *p = evr_registry_providers_locked(); p; p = p->priv->next)
		provider_recompute_locked(p, t);
}

void evr_session_table_recompute_locked(void)
{
	masks_recompute_locked(evr_session_table_get_rcu());
}

int evr_session_table_free_slot_locked(uint32_t *ret_slot)
{
	const struct evr_session_table *cur = evr_session_table_get_rcu();

	if (cur->live == UINT64_MAX)
		return -EBUSY;
	*ret_slot = (uint32_t)__builtin_ctzll(~cur->live);
	return 0;
}

void evr_session_table_insert_locked(struct evr_session *s, struct evr_session_table *next)
{
	*next = *evr_session_table_get_rcu();
	next->slot[s->slot] = s;
	next->live |= 1ull << s->slot;
	/* Publish the table first, then the masks: a writer that sees a mask bit
	 * finds the session in the table or skips it. */
	table_publish_locked(next);
	masks_recompute_locked(next);
}

bool evr_session_table_remove_locked(struct evr_session *s)
{
	const struct evr_session_table *cur = evr_session_table_get_rcu();
	struct evr_session_table *next;

	if (cur->slot[s->slot] != s)
		return false;		/* already removed */
	next = s->stop_table;
	s->stop_table = NULL;
	*next = *cur;
	next->slot[s->slot] = NULL;
	next->live &= ~(1ull << s->slot);
	/*
	 * The masks and the events' per-CPU shortcuts first: they name only
	 * sessions of both tables. Then the table, which waits a grace period:
	 * afterwards no writer is inside s's rings, by either way in.
	 */
	masks_recompute_locked(next);
	table_publish_locked(next);
	return true;
}

void evr_session_table_reset_in_child_locked(void)
{
	struct evr_session_table *t = evr_session_table_get_rcu();

	/*
	 * Only the forking thread exists in the child and it is not inside an RCU
	 * read-side section, so the table can be emptied in place: no reader can
	 * see it change, and no allocation can fail here. The parent's sessions
	 * stay mapped; in-process ones are still their owner's to free. The
	 * table before the first session is const (.rodata) and empty already.
	 */
	if (t != &empty_table)
		memset(t, 0, sizeof(*t));
	masks_recompute_locked(t);
}
