/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Updating the RCU session table and the per-event enable masks derived from it
 * (session-table.c, which holds the protocol: what each fence pairs with, and
 * which grace period protects what). The read side, evr_session_table_get_rcu()
 * and struct evr_session_table, is in <evring/session.h>.
 */
#ifndef EVR_SESSION_TABLE_INTERNAL_H
#define EVR_SESSION_TABLE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "producer-internal.h"

/**
 * evr_session_table_free_slot_locked() - the lowest slot no live session holds.
 * @ret_slot: the slot, for evr_session_create() and then
 *	evr_session_table_insert_locked().
 * Return: 0, or -EBUSY when all EVR_MAX_SESSIONS slots are taken.
 * Context: registry lock.
 */
EVR_HIDDEN int evr_session_table_free_slot_locked(uint32_t *ret_slot);

/**
 * evr_session_table_insert_locked() - publish @s in its slot, then enable its
 * events (masks and per-CPU shortcuts).
 * @s: created for a free slot, its events described (metadata.c), and
 *	s->stop_table preallocated, so that removing it can never fail.
 * @next: a heap table that becomes the live one (the table takes it).
 *
 * Waits for a grace period. Context: registry lock; may sleep.
 */
EVR_HIDDEN void evr_session_table_insert_locked(struct evr_session *s,
						struct evr_session_table *next);

/**
 * evr_session_table_remove_locked() - disable @s's events, unpublish it, and
 * wait until no writer can be inside its rings by either way in.
 *
 * Return: false when @s is not in the live table (already removed; nothing
 * done). Afterwards s->stop_table is the live table and s->stop_table NULL;
 * @s's rings are the caller's alone (evr_session_flush_and_end()).
 * Context: registry lock; may sleep.
 */
EVR_HIDDEN bool evr_session_table_remove_locked(struct evr_session *s);

/**
 * evr_session_table_reset_in_child_locked() - empty the live table in place and
 * disable every event, in a child after fork().
 * Context: registry lock; the only thread of the process.
 */
EVR_HIDDEN void evr_session_table_reset_in_child_locked(void);

/**
 * evr_session_table_recompute_locked() - recompute every event's session mask
 * and per-CPU shortcut and every provider's aggregate from the live table,
 * after providers or events were registered.
 * Context: registry lock.
 */
EVR_HIDDEN void evr_session_table_recompute_locked(void);

/* Wait until every writer that could see an old table or an old per-CPU
 * shortcut has finished (both read sides). Context: may sleep. */
EVR_HIDDEN void evr_session_table_synchronize(void);

#endif /* EVR_SESSION_TABLE_INTERNAL_H */
