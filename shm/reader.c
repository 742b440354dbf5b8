// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reader over every ring of a session, with the doorbell wait. */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <evring/shm.h>

#include "shm-internal.h"

#include "doorbell.h"

#define EVR_READER_BATCH 512	/* records taken from one ring before moving on */

struct evr_reader {
	struct evr_shm_hdr *hdr;
	int doorbell_fd;
	uint32_t nr;
	uint32_t cur;			/* ring being read */
	uint32_t batch;			/* records taken from it so far */
	uint32_t flags;
	bool final_done;		/* end-of-session losses were reported */
	bool ended;
	bool gone;			/* the producer died: treat the session as ended */
	uint32_t final_next;		/* next ring whose final losses to report */
	struct evr_pace pace;
	struct evr_reader_stats stats;
	struct evr_ring_reader *rings;	/* nr entries, each large (copy buffer) */
};

int evr_reader_new(struct evr_shm_hdr *hdr, int doorbell_fd, uint32_t flags,
		   struct evr_reader **ret)
{
	struct evr_shm_hdr geo;
	struct evr_reader *r;
	int err;

	if (!hdr || !ret)
		return -EINVAL;
	evr_shm_geometry_of(hdr, &geo);
	if (geo.nr_rings == 0)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	/* C11 aligned_alloc() wants a multiple of the alignment, and a ring reader
	 * (its copy buffer) is not a whole number of lines. */
	r->rings = aligned_alloc(EVR_CACHELINE,
				 (sizeof(*r->rings) * geo.nr_rings + EVR_CACHELINE - 1) &
					 ~(size_t)(EVR_CACHELINE - 1));
	if (!r->rings) {
		free(r);
		return -ENOMEM;
	}
	r->hdr = hdr;
	r->doorbell_fd = doorbell_fd;
	r->nr = geo.nr_rings;
	r->flags = flags;
	for (uint32_t i = 0; i < r->nr; i++) {
		err = evr_ring_reader_init(&r->rings[i], hdr, i, flags);
		if (err < 0) {
			evr_reader_free(r);
			return err;
		}
	}
	*ret = r;
	return 0;
}

void evr_reader_free(struct evr_reader *r)
{
	if (!r)
		return;
	free(r->rings);
	free(r);
}

void evr_reader_release(struct evr_reader *r)
{
	for (uint32_t i = 0; i < r->nr; i++)
		evr_ring_reader_release(&r->rings[i]);
}

static int count(struct evr_reader *r, struct evr_record *rec)
{
	if (rec->type == EVR_REC_EVENT)
		r->stats.events++;
	else
		r->stats.lost += rec->lost;
	return 1;
}

/*
 * After the session ended and every ring is drained: losses the producer could
 * not report in-band (a full ring at the very end) are in ctl->lost_total.
 */
static int final_losses(struct evr_reader *r, struct evr_record *ret)
{
	while (r->final_next < r->nr) {
		struct evr_ring_reader *rr = &r->rings[r->final_next++];
		uint64_t total = evr_ring_ctl_lost(rr->ctl);

		if (total > rr->lost) {
			memset(ret, 0, sizeof(*ret));
			ret->type = EVR_REC_LOST;
			ret->ring = rr->index;
			ret->lost = total - rr->lost;
			rr->lost = total;
			return count(r, ret);
		}
	}
	r->final_done = true;
	r->ended = true;
	return 0;
}

int evr_reader_next(struct evr_reader *r, struct evr_record *ret)
{
	bool ended;

	if (r->final_done)
		return 0;
	/* Fast path: the ring being read still has records. */
	if (r->batch < EVR_READER_BATCH &&
	    (evr_ring_reader_next_event(&r->rings[r->cur], ret) > 0 ||
	     evr_ring_reader_next(&r->rings[r->cur], ret) > 0)) {
		r->batch++;
		return count(r, ret);
	}
	/* Pairs with the store-release of ended in the producer's session stop:
	 * loaded before the rings are scanned, so if it is set, the heads and
	 * counters we read next are the final ones. */
	ended = __atomic_load_n(&r->hdr->ended, __ATOMIC_ACQUIRE) ||
		__atomic_load_n(&r->gone, __ATOMIC_RELAXED);
	for (uint32_t tried = 0; tried <= r->nr; tried++) {
		struct evr_ring_reader *rr = &r->rings[r->cur];

		if (r->batch < EVR_READER_BATCH && evr_ring_reader_next(rr, ret) > 0) {
			r->batch++;
			return count(r, ret);
		}
		evr_ring_reader_release(rr);
		r->batch = 0;
		r->cur = r->cur + 1 == r->nr ? 0 : r->cur + 1;
	}
	if (ended)
		return final_losses(r, ret);
	return 0;
}

bool evr_reader_ended(const struct evr_reader *r)
{
	return r->ended;
}

void evr_reader_get_stats(const struct evr_reader *r, struct evr_reader_stats *ret)
{
	*ret = r->stats;
	ret->corrupt = 0;
	for (uint32_t i = 0; i < r->nr; i++)
		ret->corrupt += r->rings[i].corrupt;
}

void evr_reader_producer_gone(struct evr_reader *r)
{
	/*
	 * The caller saw the producer's death (pidfd, EOF): nothing is written
	 * after it, so the heads loaded from now on are final. Relaxed: the flag
	 * is only read by this reader's own thread.
	 */
	__atomic_store_n(&r->gone, true, __ATOMIC_RELAXED);
}

int evr_reader_wait(struct evr_reader *r, int timeout_ms)
{
	return evr_reader_wait_fds(r, NULL, 0, timeout_ms);
}

int evr_reader_wait_fds(struct evr_reader *r, struct pollfd *extra, unsigned int nextra,
			int timeout_ms)
{
	uint64_t consumed = 0, pace;

	if (r->doorbell_fd < 0 || nextra > EVR_WAIT_EXTRA_MAX || (nextra && !extra))
		return -EINVAL;
	if (__atomic_load_n(&r->gone, __ATOMIC_RELAXED))
		return 0;	/* nothing will ring any more: drain */
	for (unsigned int i = 0; i < nextra; i++)
		extra[i].revents = 0;
	for (uint32_t i = 0; i < r->nr; i++)
		consumed += r->rings[i].pos;
	pace = evr_pace_next(&r->pace, r->rings[0].ring_size, r->rings[0].packet_size, consumed,
			     timeout_ms, false);
	if (!pace) {
		__atomic_store_n(&r->hdr->waiting, 1, __ATOMIC_RELAXED);
		/* Pairs with the full fence in the writer's ring_doorbell(): either a
		 * writer closing a packet sees waiting == 1, or we see its head below. */
		atomic_thread_fence(memory_order_seq_cst);
	}
	if (__atomic_load_n(&r->hdr->ended, __ATOMIC_ACQUIRE))
		return 0;
	/*
	 * Sleep unless a packet is complete: returning for a partly written packet
	 * makes the reader chase the writer record by record, bouncing the head's
	 * cache line. Partial packets are read when the timeout expires.
	 */
	for (uint32_t i = 0; i < r->nr; i++) {
		if (evr_ring_reader_packet_ready(&r->rings[i]))
			return 0;
	}
	/* A steady stream: a timer, the doorbell unarmed (evr_pace_ns()). */
	if (pace)
		return evr_doorbell_poll_ns(r->doorbell_fd, extra, nextra, pace);
	return evr_doorbell_poll(r->doorbell_fd, extra, nextra, timeout_ms);
}

static int doorbell_ppoll(int doorbell_fd, struct pollfd *extra, unsigned int nextra,
			  const struct timespec *timeout)
{
	struct pollfd pfd[1 + EVR_WAIT_EXTRA_MAX];
	uint64_t v;
	int n;

	pfd[0] = (struct pollfd){ .fd = doorbell_fd, .events = POLLIN };
	for (unsigned int i = 0; i < nextra; i++) {
		pfd[1 + i] = extra[i];
		pfd[1 + i].revents = 0;
	}
	n = ppoll(pfd, 1 + nextra, timeout, NULL);
	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	if (n == 0)
		return 0;
	for (unsigned int i = 0; i < nextra; i++)
		extra[i].revents = pfd[1 + i].revents;
	/* Drain the eventfd counter; it is non-blocking. */
	if ((pfd[0].revents & POLLIN) && read(doorbell_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return -errno;
	return 1;
}

int evr_doorbell_poll(int doorbell_fd, struct pollfd *extra, unsigned int nextra, int timeout_ms)
{
	struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = timeout_ms % 1000 * 1000000L };

	return doorbell_ppoll(doorbell_fd, extra, nextra, timeout_ms < 0 ? NULL : &ts);
}

int evr_doorbell_poll_ns(int doorbell_fd, struct pollfd *extra, unsigned int nextra,
			 uint64_t timeout_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(timeout_ns / 1000000000u),
			       .tv_nsec = (long)(timeout_ns % 1000000000u) };

	return doorbell_ppoll(doorbell_fd, extra, nextra, &ts);
}

uint64_t evr_pace_ns(uint64_t ring_size, uint32_t packet_size, uint64_t bytes, uint64_t ns)
{
	uint64_t eighth, packet, wake;

	if (!bytes || !ns)
		return 0;
	eighth = (uint64_t)((unsigned __int128)(ring_size / 8) * ns / bytes);
	if (eighth > EVR_PACE_MAX_NS)
		return 0;
	/* As often as the writers would ring: a packet, not more than once a ms. */
	packet = (uint64_t)((unsigned __int128)packet_size * ns / bytes);
	wake = packet > EVR_RING_BELL_INTERVAL_US * 1000ull ? packet
							       : EVR_RING_BELL_INTERVAL_US * 1000ull;
	if (wake > eighth)
		wake = eighth;
	return wake < EVR_PACE_MIN_NS ? EVR_PACE_MIN_NS : wake;
}

uint64_t evr_pace_batch_ns(uint64_t ring_size, uint64_t bytes, uint64_t ns)
{
	uint64_t eighth, wake;

	if (!bytes || !ns)
		return 0;
	eighth = (uint64_t)((unsigned __int128)(ring_size / 8) * ns / bytes);
	if (eighth > EVR_PACE_MAX_NS)
		return 0;
	wake = (uint64_t)((unsigned __int128)(ring_size / 16) * ns / bytes);
	return wake < EVR_PACE_MIN_NS ? EVR_PACE_MIN_NS : wake;
}

uint64_t evr_pace_next(struct evr_pace *p, uint64_t ring_size, uint32_t packet_size,
		       uint64_t consumed, int timeout_ms, bool batch)
{
	struct timespec t;
	uint64_t now, pace = 0;

	clock_gettime(CLOCK_MONOTONIC, &t);
	now = (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
	if (p->wait_ns)
		pace = batch ? evr_pace_batch_ns(ring_size, consumed - p->consumed, now - p->wait_ns)
			     : evr_pace_ns(ring_size, packet_size, consumed - p->consumed,
					   now - p->wait_ns);
	p->wait_ns = now;
	p->consumed = consumed;
	if (timeout_ms == 0)
		return 0;
	if (timeout_ms > 0 && pace > (uint64_t)timeout_ms * 1000000u)
		pace = (uint64_t)timeout_ms * 1000000u;
	return pace;
}
