// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for the metadata area of a session (evr_shm_meta_append() and
 * evr_shm_meta_next(), <evring/shm.h>): append and iterate, overflow counted,
 * hostile entries and positions rejected, and a concurrent reader that must
 * see every entry whole (the release/acquire pairing on meta_head).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/shm.h>

static struct evr_shm_hdr *session(uint32_t meta_size, int *ret_fd)
{
	struct evr_shm_geometry g = {
		.nr_rings = 1, .packet_size = 16384, .ring_size = 65536,
		.mode = EVR_MODE_DISCARD, .meta_size = meta_size,
		.clock = { .kind = EVR_CLOCK_MONOTONIC, .mult = 1 },
	};
	struct evr_shm_hdr *h;

	assert_int_equal(evr_shm_session_create(&g, ret_fd, &h), 0);
	return h;
}

static void done(struct evr_shm_hdr *h, int fd)
{
	evr_shm_session_unmap(h);
	close(fd);
}

static void test_meta_append_next(void **state)
{
	const void *data;
	uint32_t kind, len;
	uint64_t pos = 0;
	int fd;
	struct evr_shm_hdr *h = session(0, &fd);

	(void)state;
	assert_int_equal(h->meta_size, EVR_META_SIZE_DEFAULT);
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 0);
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, "abc", 3), 0);
	assert_int_equal(evr_shm_meta_append(h, 99, NULL, 0), 0);	/* unknown kind, empty */
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, "12345678", 8), 0);
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 1);
	assert_int_equal(kind, EVR_META_EVENT);
	assert_int_equal(len, 3);
	assert_memory_equal(data, "abc", 3);
	assert_int_equal(pos, 16);	/* 8-byte header, payload padded to 8 */
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 1);
	assert_int_equal(kind, 99);
	assert_int_equal(len, 0);
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 1);
	assert_int_equal(len, 8);
	assert_memory_equal(data, "12345678", 8);
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 0);
	assert_int_equal(pos, h->meta_head);
	assert_int_equal(evr_shm_meta_append(NULL, 1, "x", 1), -EINVAL);
	assert_int_equal(evr_shm_meta_append(h, 1, NULL, 1), -EINVAL);
	done(h, fd);
}

static void test_meta_overflow_counted(void **state)
{
	uint8_t payload[1000];
	const void *data;
	uint32_t kind, len;
	uint64_t pos = 0;
	int fd, n = 0, entries = 0;
	struct evr_shm_hdr *h = session(4096, &fd);

	(void)state;
	memset(payload, 0x5a, sizeof(payload));
	while (evr_shm_meta_append(h, EVR_META_EVENT, payload, sizeof(payload)) == 0)
		n++;
	assert_int_equal(n, 4096 / 1008);
	assert_int_equal(h->meta_dropped, 1);
	/* A smaller entry still fits in what is left; another big one does not. */
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, payload, 16), 0);
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, payload, sizeof(payload)),
			 -ENOSPC);
	assert_int_equal(h->meta_dropped, 2);
	while (evr_shm_meta_next(h, &pos, &kind, &data, &len) == 1)
		entries++;
	assert_int_equal(entries, n + 1);
	done(h, fd);
}

static void test_meta_hostile(void **state)
{
	struct evr_meta_entry *e;
	const void *data;
	uint32_t kind, len;
	uint64_t pos;
	int fd;
	struct evr_shm_hdr *h = session(4096, &fd);

	(void)state;
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, "abcdefgh", 8), 0);
	e = (struct evr_meta_entry *)((uint8_t *)h + h->meta_off);

	/* An entry whose size runs past the published bytes. */
	e->size = 9;
	pos = 0;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	assert_int_equal(pos, 0);	/* untouched */
	e->size = UINT32_MAX;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	e->size = 8;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), 1);

	/* Positions that are not entry boundaries or beyond the published end. */
	pos = 4;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	pos = 24;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);

	/* A published end beyond the area, or one that cuts an entry header. */
	h->meta_head = h->meta_size + 8;
	pos = 0;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	h->meta_head = 4;
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	h->meta_head = 8;	/* a header alone with size 8: overruns */
	assert_int_equal(evr_shm_meta_next(h, &pos, &kind, &data, &len), -EBADMSG);
	done(h, fd);
}

struct meta_race {
	struct evr_shm_hdr *h;
	uint32_t n;
};

static void *meta_writer(void *arg)
{
	struct meta_race *mr = arg;

	for (uint32_t i = 0; i < mr->n; i++) {
		uint32_t payload[4] = { i, i * 3, ~i, 0xabcdef00u + (i & 0xff) };

		assert_int_equal(evr_shm_meta_append(mr->h, EVR_META_EVENT, payload,
						     (uint32_t)sizeof(uint32_t) * (1 + i % 4)),
				 0);
	}
	return NULL;
}

/* A reader racing the writer sees whole entries, in order, each exactly once. */
static void test_meta_concurrent_reader(void **state)
{
	struct meta_race mr;
	pthread_t t;
	uint64_t pos = 0;
	uint32_t seen = 0;
	int fd;

	(void)state;
	mr.h = session(65536, &fd);
	mr.n = 2000;
	assert_int_equal(pthread_create(&t, NULL, meta_writer, &mr), 0);
	while (seen < mr.n) {
		const void *data;
		uint32_t kind, len, v[4];
		int ret = evr_shm_meta_next(mr.h, &pos, &kind, &data, &len);

		assert_true(ret >= 0);
		if (ret == 0) {
			sched_yield();
			continue;
		}
		assert_int_equal(kind, EVR_META_EVENT);
		assert_int_equal(len, sizeof(uint32_t) * (1 + seen % 4));
		memcpy(v, data, len);
		assert_int_equal(v[0], seen);
		if (len >= 8)
			assert_int_equal(v[1], seen * 3);
		if (len >= 12)
			assert_int_equal(v[2], ~seen);
		seen++;
	}
	assert_int_equal(pthread_join(t, NULL), 0);
	done(mr.h, fd);
}

/*
 * The header is shared memory: a consumer (or, for a consumer, the producer)
 * can rewrite its geometry after the session was made. Appending, iterating,
 * reading rings and unmapping must keep to the geometry as created or
 * validated: before, a rewritten meta_off sent the producer's append far out
 * of its mapping, and a rewritten total_size made unmap drop other mappings.
 */
static void test_meta_header_rewritten(void **state)
{
	const void *data;
	uint32_t kind, len;
	uint64_t pos = 0, meta_size;
	struct evr_reader *rd;
	struct evr_record rec;
	int fd, fd2;
	struct evr_shm_hdr *h = session(0, &fd), *m;

	(void)state;
	assert_int_equal(evr_shm_session_map(fd, &m), 0);	/* a consumer's mapping */
	meta_size = h->meta_size;
	h->meta_off = UINT64_MAX / 2;
	h->meta_size = UINT64_MAX / 2;
	h->meta_head = meta_size - 8;
	h->total_size = UINT64_MAX / 4;
	h->nr_rings = 1000;
	h->ring_size = 1ull << 40;
	/* The producer appends at its own position, inside its own area. */
	assert_int_equal(evr_shm_meta_append(h, EVR_META_EVENT, "abcdefgh", 8), 0);
	assert_int_equal(h->meta_head, 16);
	/* The consumer reads the entry through its validated copy of the geometry. */
	assert_int_equal(evr_shm_meta_next(m, &pos, &kind, &data, &len), 1);
	assert_int_equal(len, 8);
	assert_memory_equal(data, "abcdefgh", 8);
	assert_int_equal(evr_shm_meta_next(m, &pos, &kind, &data, &len), 0);
	/* A reader made now takes one ring of 64 KiB, as validated. */
	assert_int_equal(evr_reader_new(m, -1, 0, &rd), 0);
	assert_int_equal(evr_reader_next(rd, &rec), 0);
	evr_reader_free(rd);
	/* Unmapping takes the sizes mapped: a second session stays mapped. */
	struct evr_shm_hdr *other = session(0, &fd2);

	evr_shm_session_unmap(m);
	done(h, fd);
	assert_int_equal(other->magic, EVR_SHM_MAGIC);
	done(other, fd2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_meta_append_next),
		cmocka_unit_test(test_meta_overflow_counted),
		cmocka_unit_test(test_meta_hostile),
		cmocka_unit_test(test_meta_concurrent_reader),
		cmocka_unit_test(test_meta_header_rewritten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
