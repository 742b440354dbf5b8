// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * In-process listeners (<evring/listener.h>): an ordinary session of this
 * process, read in place by a dispatch thread that decodes each record with
 * the same decoder attached consumers use (decode/: descriptions from the
 * session's metadata area, fields by the schema, counter samples) and calls
 * the listener's callbacks.
 *
 * Threads: the writers only write the session's rings, as for any session.
 * The dispatch thread is the session's one gating reader; it alone touches the
 * reader, the schema set and the callbacks. Other threads talk to it through
 * `lock`: a flush request is a generation number (flush_req) that the
 * dispatch thread reads before draining everything published and then
 * acknowledges (flush_done): every write that returned before the request was
 * published (store-release of the ring's head) before the request was made
 * (the mutex orders it), so draining after reading the request finds it. The
 * eventfd `wake` gets the dispatch thread out of its wait at once.
 *
 * Stopping (evr_listener_stop(), evr_listener_free()) is bounded by the
 * callback in progress, not by what is queued: `stopping` is set first, the
 * dispatch thread tests it before each record and from then on only counts
 * what it reads (n_dropped; losses and own events as before) without decoding
 * or calling anything, so the rings are read to their end in microseconds
 * however slow the callbacks are. A slow callback with thousands of events
 * queued used to hold free() (and the program's exit) for minutes.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <evring/listener.h>

#include "producer-internal.h"

#define DEFAULT_RING_SIZE (256u << 10)
#define DEFAULT_LATENCY_MS 100u

struct evr_listener {
	struct evr_listener_opts o;
	struct evr_session *s;
	const struct evr_shm_hdr *hdr;
	struct evr_reader *r;
	struct evr_schema_set *schemas;
	uint64_t meta_pos;
	/* TSC sessions: the conversion, re-anchored at now whenever a record is a
	 * second past the last anchor, so that a listener that runs for hours does
	 * not drift with the session's start calibration (as evr_client_next()). */
	struct evr_clock_calib clock;
	uint64_t resync_ts;		/* UINT64_MAX: never (CLOCK_MONOTONIC sessions) */
	int wake;			/* eventfd: a flush request, or stop */
	pthread_t thread;
	bool started;
	bool joined;			/* evr_listener_stop() joined the dispatch thread */
	_Atomic bool stopping;		/* no callback from the next record on */

	pthread_mutex_t lock;
	pthread_cond_t cond;		/* flush_done moved */
	uint64_t flush_req, flush_done;	/* lock */
	bool exited;			/* lock: the dispatch thread is done */

	_Atomic uint64_t n_events, n_counters, n_lost, n_undecoded, n_own, n_dropped;
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
};

static int fail(char *errbuf, size_t errlen, int err, const char *msg)
{
	if (errbuf && errlen)
		snprintf(errbuf, errlen, "%s", msg);
	return err;
}

static void read_meta(struct evr_listener *l)
{
	const void *data;
	uint32_t kind, len;

	/* A description that does not validate is skipped; its events count as
	 * undecoded. The area is our own process's, written by the registry. */
	while (evr_shm_meta_next(l->hdr, &l->meta_pos, &kind, &data, &len) == 1)
		if (kind == EVR_META_EVENT)
			(void)evr_schema_set_add_pb(l->schemas, data, len);
}

static void bump(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void dispatch_one(struct evr_listener *l, const struct evr_record *rec, uint32_t self)
{
	struct evr_event_view v = { 0 };
	struct evr_counter_sample cs;
	int n;

	/* Relaxed: the flag only has to be seen eventually; nothing is published with it. */
	bool stopping = atomic_load_explicit(&l->stopping, memory_order_relaxed);

	if (rec->type == EVR_REC_LOST) {
		atomic_fetch_add_explicit(&l->n_lost, rec->lost, memory_order_relaxed);
		if (l->o.on_lost && !stopping)
			l->o.on_lost(rec->lost, l->o.ctx);
		return;
	}
	if (rec->tid == self) {
		bump(&l->n_own);
		return;
	}
	if (stopping) {
		bump(&l->n_dropped);
		return;
	}
	v.type = rec->type;
	v.rid = rec->event_id;
	v.ring = rec->ring;
	v.tid = rec->tid;
	if (__builtin_expect(rec->ts >= l->resync_ts, 0)) {
		evr_clock_calibrate(&l->clock);
		l->resync_ts = l->clock.ts_base + l->clock.ticks_per_sec;
	}
	v.ts_ns = evr_clock_to_mono_ns(&l->clock, rec->ts);
	v.payload = rec->payload;
	v.len = rec->len;
	v.schema = evr_schema_set_lookup(l->schemas, rec->event_id);
	if (!v.schema) {
		/* Described before its first record was written (<evring/abi.h>). */
		read_meta(l);
		v.schema = evr_schema_set_lookup(l->schemas, rec->event_id);
	}
	if (!v.schema) {
		bump(&l->n_undecoded);
		return;
	}
	if (l->o.on_counter && evr_counter_sample_from_view(&v, &cs) == 1) {
		l->o.on_counter(&cs, l->o.ctx);
		bump(&l->n_counters);
		return;
	}
	n = evr_decode_fields(v.schema, v.payload, v.len, l->vals);
	if (n < 0) {
		bump(&l->n_undecoded);
		return;
	}
	if (l->o.on_event)
		l->o.on_event(&v, l->vals, l->o.ctx);
	bump(&l->n_events);
}

static void *dispatch_main(void *arg)
{
	struct evr_listener *l = arg;
	uint32_t self = (uint32_t)syscall(SYS_gettid);

	for (;;) {
		struct pollfd pfd = { .fd = l->wake, .events = POLLIN };
		struct evr_record rec;
		uint64_t g, junk;

		pthread_mutex_lock(&l->lock);
		g = l->flush_req;
		pthread_mutex_unlock(&l->lock);
		while (evr_reader_next(l->r, &rec) == 1)
			dispatch_one(l, &rec, self);
		evr_reader_release(l->r);
		pthread_mutex_lock(&l->lock);
		if (g > l->flush_done) {
			l->flush_done = g;
			pthread_cond_broadcast(&l->cond);
		}
		pthread_mutex_unlock(&l->lock);
		/* Stopped by evr_listener_free() and read to the end, losses included. */
		if (evr_reader_ended(l->r))
			break;
		if (evr_reader_wait_fds(l->r, &pfd, 1, (int)l->o.latency_ms) > 0 &&
		    (pfd.revents & POLLIN))
			(void)!read(l->wake, &junk, sizeof(junk));
	}
	pthread_mutex_lock(&l->lock);
	l->exited = true;
	/* A flush waiting now would wait forever: everything is dispatched. */
	l->flush_done = l->flush_req;
	pthread_cond_broadcast(&l->cond);
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

static void poke(struct evr_listener *l)
{
	uint64_t one = 1;

	(void)!write(l->wake, &one, sizeof(one));
}

int evr_listener_new(const struct evr_listener_opts *o, struct evr_listener **ret,
		     char *errbuf, size_t errlen)
{
	struct evr_session_opts so = { 0 };
	struct evr_listener *l;
	pthread_condattr_t ca;
	int err;

	if (!o || !ret)
		return fail(errbuf, errlen, -EINVAL, "missing listener options");
	if (!o->providers || !*o->providers)
		return fail(errbuf, errlen, -EINVAL, "no providers given");
	l = calloc(1, sizeof(*l));
	if (!l)
		return fail(errbuf, errlen, -ENOMEM, "out of memory");
	l->o = *o;
	l->o.providers = NULL;		/* parsed and copied by the session */
	if (!l->o.latency_ms)
		l->o.latency_ms = DEFAULT_LATENCY_MS;
	l->wake = -1;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->cond, &ca);
	pthread_condattr_destroy(&ca);
	err = evr_schema_set_new(&l->schemas);
	if (err < 0) {
		fail(errbuf, errlen, err, "out of memory");
		goto fail;
	}
	l->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (l->wake < 0) {
		err = -errno;
		fail(errbuf, errlen, err, "cannot create the listener's eventfd");
		goto fail;
	}
	so.providers = o->providers;
	so.ring_size = o->ring_size ? o->ring_size : DEFAULT_RING_SIZE;
	so.mode = EVR_MODE_DISCARD;
	so.interval_ms = o->counter_interval_ms;
	err = evr_session_start(&so, &l->s, errbuf, errlen);
	if (err < 0)
		goto fail;
	l->hdr = evr_session_shm(l->s);
	l->clock = l->hdr->clock;
	l->resync_ts = l->clock.kind == EVR_CLOCK_TSC && l->clock.ticks_per_sec ?
			       l->clock.ts_base + l->clock.ticks_per_sec : UINT64_MAX;
	err = evr_session_reader_new(l->s, EVR_READER_GATING, &l->r);
	if (err < 0) {
		fail(errbuf, errlen, err, "cannot create the listener's reader");
		goto fail;
	}
	read_meta(l);
	err = -pthread_create(&l->thread, NULL, dispatch_main, l);
	if (err < 0) {
		fail(errbuf, errlen, err, "cannot start the listener's dispatch thread");
		goto fail;
	}
	l->started = true;
	*ret = l;
	return 0;
fail:
	evr_listener_free(l);
	return err;
}

static bool on_dispatch_thread(struct evr_listener *l)
{
	return l->started && pthread_equal(pthread_self(), l->thread);
}

int evr_listener_flush(struct evr_listener *l, int timeout_ms)
{
	struct timespec ts;
	uint64_t g;
	int err = 0;

	if (!l)
		return -EINVAL;
	if (on_dispatch_thread(l))
		return -EDEADLK;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	if (timeout_ms >= 0) {
		ts.tv_sec += timeout_ms / 1000;
		ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	pthread_mutex_lock(&l->lock);
	if (l->exited) {
		/* Stopped (evr_listener_stop()): nothing will be dispatched any more. */
		pthread_mutex_unlock(&l->lock);
		return 0;
	}
	g = ++l->flush_req;
	pthread_mutex_unlock(&l->lock);
	poke(l);
	pthread_mutex_lock(&l->lock);
	while (l->flush_done < g && !err) {
		if (timeout_ms < 0)
			pthread_cond_wait(&l->cond, &l->lock);
		else if (pthread_cond_timedwait(&l->cond, &l->lock, &ts) == ETIMEDOUT &&
			 l->flush_done < g)
			err = -ETIMEDOUT;
	}
	pthread_mutex_unlock(&l->lock);
	return err;
}

void evr_listener_get_stats(struct evr_listener *l, struct evr_listener_stats *ret)
{
	if (!l || !ret)
		return;
	*ret = (struct evr_listener_stats){
		.events = atomic_load_explicit(&l->n_events, memory_order_relaxed),
		.counters = atomic_load_explicit(&l->n_counters, memory_order_relaxed),
		.lost = atomic_load_explicit(&l->n_lost, memory_order_relaxed),
		.undecoded = atomic_load_explicit(&l->n_undecoded, memory_order_relaxed),
		.own = atomic_load_explicit(&l->n_own, memory_order_relaxed),
		.dropped = atomic_load_explicit(&l->n_dropped, memory_order_relaxed),
	};
}

int evr_listener_stop(struct evr_listener *l, struct evr_listener_stats *ret)
{
	if (!l)
		return -EINVAL;
	if (on_dispatch_thread(l))
		return -EDEADLK;
	if (!l->joined) {
		/*
		 * Before the session stops: what it still holds is dropped, not
		 * delivered (see the top of the file). Tests wait for the session
		 * to leave the provider's mask to know that the flag is set.
		 */
		atomic_store_explicit(&l->stopping, true, memory_order_relaxed);
		/* The rings are flushed and marked ended: the dispatch thread reads
		 * them to the end (losses included), counting, and leaves. */
		if (l->s)
			evr_session_stop(l->s);
		if (l->started) {
			poke(l);
			pthread_join(l->thread, NULL);
		}
		l->joined = true;
	}
	evr_listener_get_stats(l, ret);
	return 0;
}

void evr_listener_free(struct evr_listener *l)
{
	if (!l)
		return;
	if (on_dispatch_thread(l))
		abort();	/* documented: never from a callback; joining would hang */
	(void)evr_listener_stop(l, NULL);
	evr_reader_free(l->r);
	evr_session_free(l->s);
	evr_schema_set_free(l->schemas);
	if (l->wake >= 0)
		close(l->wake);
	pthread_cond_destroy(&l->cond);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
