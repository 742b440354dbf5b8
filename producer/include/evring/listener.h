/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * evring listeners: the process consumes its own events and counters, as
 * .NET's EventListener does.
 *
 *   static void on_event(const struct evr_event_view *ev, const struct evr_field_value *f,
 *                        void *ctx)
 *   {
 *       for (uint32_t i = 0; i < ev->schema->nfields; i++)
 *           ... ev->schema->fields[i].name, f[i] (typed: .u .i .f .b) ...
 *   }
 *   static void on_counter(const struct evr_counter_sample *s, void *ctx)
 *   {
 *       send_to_graphite(s->provider, s->name, s->name_len, s->value);
 *   }
 *
 *   struct evr_listener_opts o = { .providers = "MyApp:0x1:4,System.Runtime",
 *                                  .counter_interval_ms = 1000,
 *                                  .on_event = on_event, .on_counter = on_counter };
 *   struct evr_listener *l;
 *   char err[256];
 *   if (evr_listener_new(&o, &l, err, sizeof(err)) < 0) ...
 *   ...
 *   evr_listener_flush(l, 1000);   // deliver what was written so far (bounded wait)
 *   evr_listener_free(l);          // stops: at most the callback in progress finishes
 *
 * A listener is an ordinary session of the process (the same rings, enable
 * masks, loss accounting and counter interval as a consumer attached by PID)
 * read by a dispatch thread of its own, which decodes each record and calls
 * the callbacks. The threads that write events are not involved: their cost is
 * the same as for any session, and a slow callback holds up only the dispatch
 * thread (the session then drops events and on_lost says how many). Each
 * listener's counters are aggregated at its own interval; listeners and
 * attached consumers never disturb each other.
 *
 * Events arrive as an attached consumer sees them (evr_client_next()): the
 * view (provider, name, level, keywords, thread, CLOCK_MONOTONIC time, ring)
 * with the fields decoded by the event's description. Order: per ring (one
 * CPU's events in the order written), not a global time order.
 *
 * Events written by the dispatch thread itself (from a callback) are skipped
 * by that listener, so a callback that logs through evring cannot feed itself.
 *
 * Fork: a listener belongs to the process that created it; a child must
 * neither use nor free its copy.
 */
#ifndef EVR_LISTENER_H
#define EVR_LISTENER_H

#include <stdint.h>

#include <evring/counter-sample.h>
#include <evring/evring.h>
#include <evring/schema.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * An event. @ev and @fields are borrowed for the duration of the call: copy
 * what you keep (strings point into the ring). @fields has @ev->schema->nfields
 * entries, in the order of @ev->schema->fields (names and types there).
 */
typedef void evr_listener_event_fn(const struct evr_event_view *ev,
				   const struct evr_field_value *fields, void *ctx);

/* A counter's value over the listener's last interval; borrowed for the call. */
typedef void evr_listener_counter_fn(const struct evr_counter_sample *s, void *ctx);

/* The session dropped @count events (the listener fell behind, or its rings
 * were too small for a burst). */
typedef void evr_listener_lost_fn(uint64_t count, void *ctx);

struct evr_listener_opts {
	/* "Name[:0xKEYWORDS[:LEVEL[:k=v;...]]],..." as any session takes it. */
	const char *providers;
	/* Counters of the named providers every this often (>= 10); 0: none. */
	uint32_t counter_interval_ms;
	/* Bytes per CPU ring, a power of two; 0: 256 KiB. */
	uint64_t ring_size;
	/* How long an event may wait in a ring before it is dispatched when the
	 * process writes little (a full packet is dispatched at once); 0: 100 ms. */
	uint32_t latency_ms;
	/* Any may be NULL. Counter samples go to @on_counter, or as events to
	 * @on_event when @on_counter is NULL. All run on the dispatch thread. */
	evr_listener_event_fn *on_event;
	evr_listener_counter_fn *on_counter;
	evr_listener_lost_fn *on_lost;
	void *ctx;
};

struct evr_listener;

/**
 * evr_listener_new() - start a session for @o and its dispatch thread.
 * @o: copied.
 * @ret: free with evr_listener_free().
 * @errbuf: one line saying what is wrong, may be NULL.
 * Return: 0, -EINVAL (bad options or provider list), -EBUSY (64 sessions live),
 * -ENOMEM, -errno.
 * Context: any thread but a listener's dispatch thread; takes the registry lock.
 */
EVR_API int evr_listener_new(const struct evr_listener_opts *o, struct evr_listener **ret,
			     char *errbuf, size_t errlen);

/**
 * evr_listener_flush() - wait until every event written before this call (by
 * any thread) has been dispatched, or @timeout_ms passes (-1: no limit).
 * Losses are reported as the session sees them: in the ring before the next
 * event that fits, or at the end (evr_listener_free()); a flush does not wait
 * for losses that no later event has reported yet.
 * Return: 0 (also once the listener is stopped: nothing more will be
 * dispatched), -ETIMEDOUT, -EDEADLK (called from the listener's own callback).
 * Context: any thread.
 */
EVR_API int evr_listener_flush(struct evr_listener *l, int timeout_ms);

struct evr_listener_stats {
	uint64_t events;		/* calls of on_event (counter samples included when
					 * they went there) */
	uint64_t counters;		/* calls of on_counter */
	uint64_t lost;			/* events the session dropped */
	uint64_t undecoded;		/* events without a description or whose payload did
					 * not decode (not dispatched) */
	uint64_t own;			/* written by the dispatch thread itself: skipped */
	uint64_t dropped;		/* still queued when the listener was stopped: not
					 * dispatched (evr_listener_stop()) */
};

/* Counts so far (losses: as reported so far, see evr_listener_flush()). Context: any thread. */
EVR_API void evr_listener_get_stats(struct evr_listener *l, struct evr_listener_stats *ret);

/**
 * evr_listener_stop() - stop delivering, stop the session, join the dispatch thread.
 * @ret: the final counts, may be NULL (evr_listener_get_stats() still gives them).
 *
 * Bounded by the callback in progress, not by what is queued: that callback
 * finishes; no callback is called after it (on_lost neither); every event
 * still in the session's rings is read, not dispatched, and counted in
 * @ret->dropped. So events + counters + undecoded + dropped + lost + own is
 * everything the session was given. Call evr_listener_flush() first to have
 * what was written so far delivered, with a bound of your choice. Calling it
 * again returns the same counts.
 *
 * Return: 0, -EINVAL (@l is NULL), -EDEADLK (called from the listener's own callback).
 * Context: any thread but the listener's dispatch thread.
 */
EVR_API int evr_listener_stop(struct evr_listener *l, struct evr_listener_stats *ret);

/**
 * evr_listener_free() - evr_listener_stop() if not done yet (at most the
 * callback in progress finishes; what is still queued is dropped), then free.
 * Accepts NULL.
 * Context: never from the listener's own callbacks (it aborts: joining would hang).
 */
EVR_API void evr_listener_free(struct evr_listener *l);

#ifdef __cplusplus
}
#endif

#endif /* EVR_LISTENER_H */
