// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Session memory, rings and doorbell. The RCU session table that publishes
 * sessions to writers is producer/session-table.c's.
 */
#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <evring/ring-rseq.h>
#include <evring/session.h>

int evr_session_create(const struct evr_session_config *cfg, uint32_t slot, uint64_t serial,
		    const struct evr_clock_calib *clock, struct evr_session **ret, char *errbuf,
		    size_t errlen)
{
	struct evr_shm_geometry g = {
		.nr_rings = cfg->nr_rings,
		.packet_size = cfg->packet_size,
		.ring_size = cfg->ring_size,
		.mode = cfg->mode,
		.meta_size = cfg->meta_size,
		.session_id = slot,
		.session_serial = serial,
		.clock = *clock,
	};
	struct evr_session *s;
	int ret_err;

	if (!ret || slot >= EVR_MAX_SESSIONS)
		return -EINVAL;
	ret_err = evr_shm_geometry_check(&g, errbuf, errlen);
	if (ret_err < 0)
		return ret_err;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->memfd = -1;
	s->slot = slot;
	s->serial = serial;
	s->nr_rings = cfg->nr_rings;
	s->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (s->doorbell_fd < 0) {
		ret_err = -errno;
		goto err;
	}
	s->rings = aligned_alloc(EVR_CACHELINE, sizeof(*s->rings) * cfg->nr_rings);
	if (!s->rings) {
		ret_err = -ENOMEM;
		goto err;
	}
	ret_err = evr_shm_session_create(&g, &s->memfd, &s->shm);
	if (ret_err < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "cannot create session memory: %s",
				 strerror(-ret_err));
		goto err;
	}
	for (uint32_t i = 0; i < s->nr_rings; i++)
		evr_ring_writer_init(&s->rings[i], s->shm, i, s->doorbell_fd);
	s->cfg = *cfg;
	*ret = s;
	return 0;

err:
	s->cfg.providers = NULL;	/* not ours on failure */
	evr_session_destroy(s);
	return ret_err;
}

void evr_session_count_lost_rcu(struct evr_session *s, uint32_t cpu)
{
	uint32_t i = cpu < s->nr_rings ? cpu : cpu % s->nr_rings;

	evr_ring_count_lost(&s->rings[i], 1);
}

void evr_session_flush_and_end(struct evr_session *s, uint64_t ts)
{
	uint64_t one = 1;
	ssize_t n;

	for (uint32_t i = 0; i < s->nr_rings; i++) {
		struct evr_ring_writer *w = &s->rings[i];
		uint32_t unlocked = 0;
		bool took;

		/*
		 * After the grace period no writer holds the lock, so this cannot fail.
		 * Taking it anyway orders the flush after the last holder in C11 terms
		 * (acquire pairs with its release in evr_ring_try_write()), which
		 * ThreadSanitizer can see; it cannot see liburcu's grace period.
		 */
		took = atomic_compare_exchange_strong_explicit(&w->lock, &unlocked, 1,
							       memory_order_acquire,
							       memory_order_relaxed);
		assert(took);
		(void)took;
		evr_ring_writer_flush_locked(w, ts);
		atomic_store_explicit(&w->lock, 0, memory_order_release);
	}
	/* Pairs with the load-acquire of ended in evr_reader_next(): the final heads
	 * and counters are visible to a reader that sees ended. */
	__atomic_store_n(&s->shm->ended, 1, __ATOMIC_RELEASE);
	n = write(s->doorbell_fd, &one, sizeof(one));
	(void)n;
}

static void session_free_cb(void *p)
{
	struct evr_session *s = p;

	evr_shm_session_unmap(s->shm);
	if (s->memfd >= 0)
		close(s->memfd);
	/* Writers rang the doorbell until the grace period that unpublished the
	 * session: closing it is part of the same reclamation. */
	if (s->doorbell_fd >= 0)
		close(s->doorbell_fd);
	free(s->rings);
	free(s->stop_table);
	evr_provider_spec_list_free(s->cfg.providers);
	free(s);
}

void evr_session_destroy(struct evr_session *s)
{
	if (!s)
		return;
	/* Writers used the rings, the doorbell and *s until the grace period that
	 * unpublished the session (or never saw them, if it was never published). */
	evr_reclaim_after_grace_period(s, session_free_cb);
}

void evr_reclaim_after_grace_period(void *p, void (*fn)(void *))
{
	fn(p);
}
