/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the ring unit tests: self-checking payloads (each carries its
 * sequence number, its writer and a checksum over the rest, so a torn or
 * misplaced record cannot pass), a session fixture on a real sealed memfd, and
 * failure reporting from threads.
 */
#ifndef EVR_TEST_RING_FIXTURE_H
#define EVR_TEST_RING_FIXTURE_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include <evring/ring.h>
#include <evring/shm.h>

#define PSIZE_MIN EVR_PACKET_SIZE_MIN /* 16 KiB */
#define RING_MIN (4ull * EVR_PACKET_SIZE_MIN) /* 64 KiB: the smallest ring */

/* ---- self-checking payloads -------------------------------------------------- */

/* Payloads of >= PL_HDR bytes start with this header; shorter ones are pattern only. */
struct pl_hdr {
	uint64_t seq;
	uint64_t thread;
	uint32_t len;
	uint32_t sum; /* FNV-1a over every other byte of the payload */
};
#define PL_HDR ((uint32_t)sizeof(struct pl_hdr))

static inline uint32_t fnv1a(const uint8_t *p, uint32_t n, uint32_t h)
{
	for (uint32_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 16777619u;
	}
	return h;
}

static inline uint32_t pl_sum(const uint8_t *p, uint32_t len)
{
	uint32_t h = fnv1a(p, offsetof(struct pl_hdr, sum), 2166136261u);

	return fnv1a(p + PL_HDR, len - PL_HDR, h);
}

static inline uint8_t pl_byte(uint64_t seq, uint64_t thread, uint32_t i)
{
	return (uint8_t)(seq * 0x9e37u + thread * 0x55u + i * 7u + (i >> 8));
}

static inline void pl_fill(uint8_t *p, uint32_t len, uint64_t seq, uint64_t thread)
{
	struct pl_hdr h = {.seq = seq, .thread = thread, .len = len};

	for (uint32_t i = 0; i < len; i++)
		p[i] = pl_byte(seq, thread, i);
	if (len < PL_HDR)
		return;
	memcpy(p, &h, PL_HDR);
	h.sum = pl_sum(p, len);
	memcpy(p, &h, PL_HDR);
}

/* True when @p is an intact payload of @len bytes; returns its seq and thread. */
static inline bool pl_check(const void *payload, uint32_t len, uint64_t *ret_seq,
			    uint64_t *ret_thread)
{
	const uint8_t *p = payload;
	struct pl_hdr h;

	if (len < PL_HDR)
		return false;
	memcpy(&h, p, PL_HDR);
	if (h.len != len || h.sum != pl_sum(p, len))
		return false;
	for (uint32_t i = PL_HDR; i < len; i++) {
		if (p[i] != pl_byte(h.seq, h.thread, i))
			return false;
	}
	*ret_seq = h.seq;
	*ret_thread = h.thread;
	return true;
}

/* Deterministic PRNG (xorshift64*), fixed seeds only. */
static inline uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* ---- fixture: one session, its writers, no library --------------------------------- */

struct ring_fx {
	int fd;
	struct evr_shm_hdr *hdr;
	struct evr_ring_writer *w;
	uint32_t nr;
};

static inline void fx_setup(struct ring_fx *f, uint32_t nr, uint32_t packet, uint64_t ring,
			    uint32_t mode)
{
	struct evr_shm_geometry g = {
		.nr_rings = nr,
		.packet_size = packet,
		.ring_size = ring,
		.mode = mode,
		.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1},
	};

	assert_int_equal(evr_shm_session_create(&g, &f->fd, &f->hdr), 0);
	f->w = aligned_alloc(EVR_CACHELINE, sizeof(*f->w) * nr);
	assert_non_null(f->w);
	for (uint32_t i = 0; i < nr; i++)
		evr_ring_writer_init(&f->w[i], f->hdr, i, -1);
	f->nr = nr;
}

static inline void fx_teardown(struct ring_fx *f)
{
	free(f->w);
	evr_shm_session_unmap(f->hdr);
	close(f->fd);
}

static inline struct evr_ring_reader *reader_new(struct ring_fx *f, uint32_t index,
						 uint32_t flags)
{
	struct evr_ring_reader *r = calloc(1, sizeof(*r));

	assert_non_null(r);
	assert_int_equal(evr_ring_reader_init(r, f->hdr, index, flags), 0);
	return r;
}

/* Failures inside threads are recorded and asserted on after the join. */
struct thread_err {
	atomic_int failed;
	char msg[256];
};

__attribute__((format(printf, 2, 3))) static inline void
thread_fail(struct thread_err *e, const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&e->failed, 1))
		return;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
}

static inline void assert_no_thread_error(struct thread_err *e)
{
	if (atomic_load(&e->failed))
		print_error("%s\n", e->msg);
	assert_int_equal(atomic_load(&e->failed), 0);
}

#endif /* EVR_TEST_RING_FIXTURE_H */
