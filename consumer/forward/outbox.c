// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The outbox: a bounded queue of messages between the forwarder's reader
 * thread (which formats) and one sink's worker thread (which does the I/O).
 *
 * Protocol: one mutex guards everything shared (the byte ring, the counts, the
 * closing state). The reader pushes under it and signals `cond` when the worker
 * may be waiting; the worker moves a batch of messages out of the ring into its
 * own buffer under the lock, then delivers the batch without it, so a receiver
 * that blocks holds up only the worker, never a push. Messages the receiver did
 * not take stay at the front of the worker's batch and go first next time.
 *
 * Bounded: the ring holds at most `cap` bytes (messages plus 8-byte headers,
 * 4-aligned); a push that does not fit drops the new message (DROP_NEWEST) or
 * the oldest queued ones (DROP_OLDEST); either way it is counted. Counts are
 * in items, not messages: each message carries the number of events or
 * samples it stands for (its weight), so that a sink's accounting adds up
 * whether it sends one message per event or one per many. Closing
 * gives the worker until a deadline to deliver what is queued; whatever is
 * left then is counted as dropped at close.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "forward.h"

#define BATCH_BYTES (1u << 20)
#define BATCH_MAX 1024u
#define WRAP 0xffffffffu

struct evr_fwd_outbox {
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* messages queued, closing, or the deadline moved */
	pthread_t worker;
	bool started;
	evr_fwd_deliver_fn *deliver;
	void *ctx;
	enum evr_fwd_policy policy;

	/* The ring (lock). */
	char *buf;
	size_t cap, rpos, wpos, used;
	uint64_t nmsg;
	uint64_t nweight;		/* the items the queued messages stand for */
	bool worker_waiting;

	/* Closing (lock). */
	bool closing;
	uint64_t deadline_ns;

	/* Counts (lock). */
	uint64_t delivered, dropped_full, dropped_close, dropped_failed;
	bool worker_gone;		/* the worker stopped: nothing more is delivered */

	/* The worker's batch (worker only). */
	char *bbuf;
	size_t blen;
	const char *bmsg[BATCH_MAX];
	uint32_t blens[BATCH_MAX];
	uint32_t bweights[BATCH_MAX];
	uint32_t bn;
	uint64_t bweight;		/* lock: read by the stats and the drop counts */
};

/* A message in the ring: u32 length, u32 weight, the bytes, padding to 4. */
static size_t rec_size(uint32_t len)
{
	return 8 + (((size_t)len + 3) & ~(size_t)3);
}

/*
 * Take the oldest message of the ring (into @into if not NULL). Lock held; the
 * ring is not empty. Return: its weight.
 */
static uint32_t pop_locked(struct evr_fwd_outbox *o, char *into, uint32_t *ret_len)
{
	uint32_t len, weight;

	if (o->cap - o->rpos < 8 || (memcpy(&len, o->buf + o->rpos, 4), len == WRAP)) {
		o->used -= o->cap - o->rpos;
		o->rpos = 0;
	}
	memcpy(&len, o->buf + o->rpos, 4);
	memcpy(&weight, o->buf + o->rpos + 4, 4);
	if (into)
		memcpy(into, o->buf + o->rpos + 8, len);
	if (ret_len)
		*ret_len = len;
	o->rpos += rec_size(len);
	o->used -= rec_size(len);
	if (o->rpos == o->cap)
		o->rpos = 0;
	o->nmsg--;
	o->nweight -= weight;
	if (!o->nmsg) {
		/* Empty: start again at the front, nothing is wasted at the end. */
		o->rpos = o->wpos = 0;
		o->used = 0;
	}
	return weight;
}

/* Bytes a push of @len needs now, with the end of the ring it skips. */
static size_t need_locked(const struct evr_fwd_outbox *o, uint32_t len)
{
	size_t n = rec_size(len);

	return o->wpos + n > o->cap ? n + (o->cap - o->wpos) : n;
}

int evr_fwd_outbox_push(struct evr_fwd_outbox *o, const void *msg, uint32_t len, uint32_t weight)
{
	size_t n = rec_size(len);
	bool wake;

	if (n > o->cap / 2 || len > BATCH_BYTES)
		return -EMSGSIZE;
	pthread_mutex_lock(&o->lock);
	if (o->worker_gone) {
		o->dropped_failed += weight;
		pthread_mutex_unlock(&o->lock);
		return -EPIPE;
	}
	while (o->used + need_locked(o, len) > o->cap) {
		if (o->policy == EVR_FWD_DROP_NEWEST || !o->nmsg) {
			o->dropped_full += weight;
			pthread_mutex_unlock(&o->lock);
			return -ENOBUFS;
		}
		o->dropped_full += pop_locked(o, NULL, NULL);
	}
	if (o->wpos + n > o->cap) {
		if (o->cap - o->wpos >= 8) {
			uint32_t w = WRAP;

			memcpy(o->buf + o->wpos, &w, 4);
		}
		o->used += o->cap - o->wpos;
		o->wpos = 0;
	}
	memcpy(o->buf + o->wpos, &len, 4);
	memcpy(o->buf + o->wpos + 4, &weight, 4);
	memcpy(o->buf + o->wpos + 8, msg, len);
	o->wpos += n;
	if (o->wpos == o->cap)
		o->wpos = 0;
	o->used += n;
	o->nmsg++;
	o->nweight += weight;
	wake = o->worker_waiting;
	pthread_mutex_unlock(&o->lock);
	if (wake)
		pthread_cond_signal(&o->cond);
	return 0;
}

/* Past the deadline of a close? Lock held. */
static bool cancelled_locked(const struct evr_fwd_outbox *o)
{
	return o->closing && evr_mono_ns() >= o->deadline_ns;
}

bool evr_fwd_outbox_cancelled(struct evr_fwd_outbox *o)
{
	bool c;

	pthread_mutex_lock(&o->lock);
	c = cancelled_locked(o);
	pthread_mutex_unlock(&o->lock);
	return c;
}

static void abs_time(uint64_t ns, struct timespec *ts)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

bool evr_fwd_outbox_sleep(struct evr_fwd_outbox *o, uint32_t ms)
{
	uint64_t until = evr_mono_ns() + (uint64_t)ms * 1000000u;
	struct timespec ts;
	bool c;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		uint64_t end = until;

		c = cancelled_locked(o);
		if (c || evr_mono_ns() >= until)
			break;
		if (o->closing && o->deadline_ns < end)
			end = o->deadline_ns;
		abs_time(end, &ts);
		/* Woken early by close(): the loop looks at the deadline again. */
		pthread_cond_timedwait(&o->cond, &o->lock, &ts);
	}
	pthread_mutex_unlock(&o->lock);
	return c;
}

/* Move queued messages behind what is left of the batch. Lock held. */
static void refill_locked(struct evr_fwd_outbox *o)
{
	if (o->bn && o->bmsg[0] != o->bbuf) {
		/* Slide the leftover to the front. */
		size_t off = (size_t)(o->bmsg[0] - o->bbuf);

		memmove(o->bbuf, o->bmsg[0], o->blen - off);
		for (uint32_t i = 0; i < o->bn; i++)
			o->bmsg[i] -= off;
		o->blen -= off;
	} else if (!o->bn) {
		o->blen = 0;
	}
	while (o->nmsg && o->bn < BATCH_MAX) {
		uint32_t len;

		/* Peek at the next length: stop before one that does not fit. */
		size_t at = o->rpos;

		if (o->cap - at < 8 || (memcpy(&len, o->buf + at, 4), len == WRAP))
			at = 0;
		memcpy(&len, o->buf + at, 4);
		if (o->blen + len > BATCH_BYTES)
			break;
		o->bweights[o->bn] = pop_locked(o, o->bbuf + o->blen, &len);
		o->bweight += o->bweights[o->bn];
		o->bmsg[o->bn] = o->bbuf + o->blen;
		o->blens[o->bn++] = len;
		o->blen += len;
	}
}

static void *worker_main(void *arg)
{
	struct evr_fwd_outbox *o = arg;
	struct timespec ts;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		int r;

		while (!o->bn && !o->nmsg && !o->closing) {
			o->worker_waiting = true;
			pthread_cond_wait(&o->cond, &o->lock);
			o->worker_waiting = false;
		}
		if (!o->bn && !o->nmsg)
			break;		/* closing, everything delivered */
		if (cancelled_locked(o)) {
			o->dropped_close += o->bweight + o->nweight;
			break;
		}
		refill_locked(o);
		pthread_mutex_unlock(&o->lock);
		r = o->deliver(o->ctx, o->bmsg, o->blens, o->bweights, o->bn);
		pthread_mutex_lock(&o->lock);
		if (r == -ECANCELED) {
			/* Past the deadline, or the sink failed for good. */
			if (cancelled_locked(o))
				o->dropped_close += o->bweight + o->nweight;
			else
				o->dropped_failed += o->bweight + o->nweight;
			break;
		}
		if (r < 0)
			r = 0;
		if ((uint32_t)r > o->bn)
			r = (int)o->bn;
		for (int i = 0; i < r; i++) {
			o->delivered += o->bweights[i];
			o->bweight -= o->bweights[i];
		}
		memmove(o->bmsg, o->bmsg + r, (o->bn - (uint32_t)r) * sizeof(o->bmsg[0]));
		memmove(o->blens, o->blens + r, (o->bn - (uint32_t)r) * sizeof(o->blens[0]));
		memmove(o->bweights, o->bweights + r,
			(o->bn - (uint32_t)r) * sizeof(o->bweights[0]));
		o->bn -= (uint32_t)r;
		if (r == 0 && !cancelled_locked(o)) {
			/* Nothing taken: do not spin; the sink's own back-off is in deliver. */
			abs_time(evr_mono_ns() + 100000000u, &ts);
			pthread_cond_timedwait(&o->cond, &o->lock, &ts);
		}
	}
	/* Whatever is left is counted above; empty the ring so the stats add up. */
	while (o->nmsg)
		pop_locked(o, NULL, NULL);
	o->bn = 0;
	o->bweight = 0;
	o->worker_gone = true;
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

int evr_fwd_outbox_new(size_t cap, enum evr_fwd_policy policy, evr_fwd_deliver_fn *deliver,
		       void *ctx, struct evr_fwd_outbox **ret)
{
	struct evr_fwd_outbox *o;
	pthread_condattr_t ca;
	int r;

	if (cap < 4096 || !deliver || !ret)
		return -EINVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->buf = malloc(cap);
	o->bbuf = malloc(BATCH_BYTES);
	if (!o->buf || !o->bbuf) {
		free(o->buf);
		free(o->bbuf);
		free(o);
		return -ENOMEM;
	}
	o->cap = cap & ~(size_t)3;
	o->policy = policy;
	o->deliver = deliver;
	o->ctx = ctx;
	pthread_mutex_init(&o->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&o->cond, &ca);
	pthread_condattr_destroy(&ca);
	r = pthread_create(&o->worker, NULL, worker_main, o);
	if (r) {
		evr_fwd_outbox_free(o);
		return -r;
	}
	o->started = true;
	*ret = o;
	return 0;
}

void evr_fwd_outbox_close(struct evr_fwd_outbox *o, uint64_t deadline_ns)
{
	if (!o || !o->started)
		return;
	pthread_mutex_lock(&o->lock);
	o->closing = true;
	o->deadline_ns = deadline_ns;
	pthread_mutex_unlock(&o->lock);
	pthread_cond_broadcast(&o->cond);
	pthread_join(o->worker, NULL);
	o->started = false;
}

void evr_fwd_outbox_free(struct evr_fwd_outbox *o)
{
	if (!o)
		return;
	evr_fwd_outbox_close(o, 0);
	pthread_cond_destroy(&o->cond);
	pthread_mutex_destroy(&o->lock);
	free(o->buf);
	free(o->bbuf);
	free(o);
}

void evr_fwd_outbox_stats(struct evr_fwd_outbox *o, struct evr_fwd_outbox_stats *ret)
{
	pthread_mutex_lock(&o->lock);
	*ret = (struct evr_fwd_outbox_stats){ .delivered = o->delivered,
					      .dropped_full = o->dropped_full,
					      .dropped_close = o->dropped_close,
					      .dropped_failed = o->dropped_failed,
					      .queued = o->nweight + o->bweight,
					      .waiting = o->nweight };
	pthread_mutex_unlock(&o->lock);
}
