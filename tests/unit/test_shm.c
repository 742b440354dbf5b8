// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for session memory: geometry checks, creating and mapping a sealed
 * memfd, refusing bad headers, and readers over hostile memory (random bytes,
 * forged packet headers, real records with corrupted words). Readers must treat
 * the mapping as hostile input: never fault, return only records that fit, and
 * terminate.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/ring.h>
#include <evring/shm.h>

#define PSIZE_MIN EVR_PACKET_SIZE_MIN
#define RING_MIN (4ull * EVR_PACKET_SIZE_MIN)

static const struct evr_shm_geometry good_geometry = {
	.nr_rings = 2,
	.packet_size = PSIZE_MIN,
	.ring_size = RING_MIN,
	.mode = EVR_MODE_DISCARD,
	.session_id = 5,
	.session_serial = 77,
	.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1, .ticks_per_sec = 1000000000u},
};

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static struct evr_ring_ctl *ring_ctl(struct evr_shm_hdr *h, uint32_t i)
{
	return (struct evr_ring_ctl *)((uint8_t *)h + h->ring_ctl_off +
				       (uint64_t)i * EVR_RING_CTL_SIZE);
}

static uint8_t *ring_data(struct evr_shm_hdr *h, uint32_t i)
{
	return (uint8_t *)h + h->ring_data_off + (uint64_t)i * h->ring_size;
}

/* ---- geometry -------------------------------------------------------------------- */

static void expect_geometry_error(const struct evr_shm_geometry *g, const char *what,
				  const char *value)
{
	char err[128];

	memset(err, 0, sizeof(err));
	assert_int_equal(evr_shm_geometry_check(g, err, sizeof(err)), -EINVAL);
	if (!strstr(err, what) || !strstr(err, value))
		print_error("message \"%s\" does not name %s %s\n", err, what, value);
	assert_non_null(strstr(err, what));
	assert_non_null(strstr(err, value));
	/* Without a buffer: same verdict, nothing written. */
	assert_int_equal(evr_shm_geometry_check(g, NULL, 0), -EINVAL);
	/* A short buffer is truncated and terminated. */
	memset(err, 'x', sizeof(err));
	assert_int_equal(evr_shm_geometry_check(g, err, 8), -EINVAL);
	assert_int_equal(strlen(err), 7);
}

static void test_shm_geometry_check_rejects_each_bad_value(void **state)
{
	struct evr_shm_geometry g;
	char err[128] = "untouched";

	(void)state;
	assert_int_equal(evr_shm_geometry_check(&good_geometry, err, sizeof(err)), 0);
	assert_int_equal(evr_shm_geometry_check(NULL, err, sizeof(err)), -EINVAL);

	g = good_geometry;
	g.nr_rings = 0;
	expect_geometry_error(&g, "ring count", "0");
	g.nr_rings = EVR_MAX_RINGS + 1;
	expect_geometry_error(&g, "ring count", "1025");

	g = good_geometry;
	g.packet_size = PSIZE_MIN + 8;
	expect_geometry_error(&g, "packet size", "16392");
	g.packet_size = PSIZE_MIN / 2;
	expect_geometry_error(&g, "packet size", "8192");
	g.packet_size = EVR_PACKET_SIZE_MAX * 2;
	g.ring_size = 1u << 20;
	expect_geometry_error(&g, "packet size", "131072");
	g.packet_size = 0;
	expect_geometry_error(&g, "packet size", "0");

	g = good_geometry;
	g.ring_size = 3 * PSIZE_MIN * 2;
	expect_geometry_error(&g, "ring size", "98304");
	g.ring_size = 0;
	expect_geometry_error(&g, "ring size", "0");
	g.ring_size = EVR_RING_SIZE_MAX * 2;
	expect_geometry_error(&g, "ring size", "8589934592");
	g.ring_size = 2 * PSIZE_MIN;
	expect_geometry_error(&g, "ring size", "32768");
	expect_geometry_error(&g, "ring size", "4 packets");
	g.ring_size = 8 * PSIZE_MIN;
	g.packet_size = 4 * PSIZE_MIN;
	expect_geometry_error(&g, "ring size", "4 packets");

	g = good_geometry;
	g.mode = 2;
	expect_geometry_error(&g, "mode", "2");
	g.mode = UINT32_MAX;
	expect_geometry_error(&g, "mode", "4294967295");

	g = good_geometry;
	g.nr_rings = EVR_MAX_RINGS;
	g.ring_size = EVR_RING_SIZE_MAX;
	expect_geometry_error(&g, "session", "too large");

	/* The limits themselves are fine. */
	g = good_geometry;
	g.nr_rings = EVR_MAX_RINGS;
	g.packet_size = EVR_PACKET_SIZE_MAX;
	g.ring_size = 4ull * EVR_PACKET_SIZE_MAX;
	g.mode = EVR_MODE_OVERWRITE;
	assert_int_equal(evr_shm_geometry_check(&g, NULL, 0), 0);
	g.nr_rings = 1;
	g.ring_size = EVR_RING_SIZE_MAX;
	assert_int_equal(evr_shm_geometry_check(&g, NULL, 0), 0);
}

/* ---- create and map ------------------------------------------------------------------ */

static void test_shm_session_map_returns_same_header(void **state)
{
	struct evr_shm_hdr *h, *m;
	int fd, flags;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	flags = fcntl(fd, F_GETFD);
	assert_true(flags >= 0 && (flags & FD_CLOEXEC));
	assert_true((fcntl(fd, F_GET_SEALS) & (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) ==
		    (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL));
	assert_int_equal(evr_shm_session_validate(h, h->total_size), 0);
	assert_int_equal(evr_shm_session_validate(h, h->total_size - 1), -EBADMSG);

	assert_int_equal(evr_shm_session_map(fd, &m), 0);
	assert_ptr_not_equal(m, h);
	assert_memory_equal(m, h, EVR_SHM_HDR_SIZE);
	assert_true(m->magic == EVR_SHM_MAGIC);
	assert_int_equal(m->abi_version, EVR_ABI_VERSION);
	assert_int_equal(m->nr_rings, good_geometry.nr_rings);
	assert_int_equal(m->packet_size, good_geometry.packet_size);
	assert_true(m->ring_size == good_geometry.ring_size);
	assert_int_equal(m->mode, good_geometry.mode);
	assert_int_equal(m->session_id, 5);
	assert_true(m->session_serial == 77);
	assert_int_equal(m->producer_pid, (uint32_t)getpid());
	assert_memory_equal(&m->clock, &good_geometry.clock, sizeof(m->clock));
	assert_int_equal(m->ring_data_off % 4096, 0);
	assert_true(m->total_size == m->ring_data_off + m->nr_rings * m->ring_size);
	for (uint32_t i = 0; i < m->nr_rings; i++) {
		assert_int_equal(ring_ctl(m, i)->ring_index, i);
		assert_true(ring_ctl(m, i)->head == 0 && ring_ctl(m, i)->tail == 0);
	}
	/* One memory: a store through one mapping shows through the other. */
	ring_data(h, 1)[RING_MIN - 1] = 0xa5;
	assert_int_equal(ring_data(m, 1)[RING_MIN - 1], 0xa5);

	assert_int_equal(evr_shm_session_map(-1, &m), -EINVAL);
	assert_int_equal(evr_shm_session_map(fd, NULL), -EINVAL);
	evr_shm_session_unmap(m);
	evr_shm_session_unmap(h);
	evr_shm_session_unmap(NULL);
	close(fd);
}

/* Is [p, p + len) free address space? MAP_FIXED_NOREPLACE fails on any mapping there. */
static bool range_free(void *p, size_t len)
{
	void *q = mmap(p, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	if (q == MAP_FAILED)
		return false;
	munmap(q, len);
	return q == p;
}

/*
 * A consumer's mapping sits right above EVR_SHM_MAP_HEADROOM of reserved
 * address space (the recorder maps its stage pool there, to register both as
 * one buffer); what is mapped there shows, and the unmap frees it all. The
 * producer's own mapping has none.
 */
static void test_shm_session_map_headroom(void **state)
{
	struct evr_shm_hdr *h, *m;
	size_t len = 1, total;
	uint8_t *room, *pool;
	int fd;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	assert_null(evr_shm_session_headroom(h, &len));
	assert_int_equal(len, 0);
	assert_int_equal(evr_shm_session_map(fd, &m), 0);
	/* Both mappings on a huge page's boundary (producer/memory.c's huge pages). */
	assert_int_equal((uintptr_t)h % EVR_SHM_HUGE_SIZE, 0);
	assert_int_equal((uintptr_t)m % EVR_SHM_HUGE_SIZE, 0);
	total = (size_t)m->total_size;
	room = evr_shm_session_headroom(m, &len);
	assert_int_equal(len, EVR_SHM_MAP_HEADROOM);
	assert_ptr_equal(room + EVR_SHM_MAP_HEADROOM, (uint8_t *)m);
	/* Reserved: nothing else is placed there. */
	assert_false(range_free(room, len));
	/* A consumer's buffer right below the session: one range with it. */
	pool = mmap((uint8_t *)m - 8192, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	assert_ptr_equal(pool, (uint8_t *)m - 8192);
	pool[8191] = 0x5a;
	assert_int_equal(((volatile uint8_t *)pool)[8191], 0x5a);
	assert_null(evr_shm_session_headroom(NULL, NULL));
	evr_shm_session_unmap(m);
	/* Session and headroom unmapped together, the buffer in it too. */
	assert_true(range_free(room, len + total));
	evr_shm_session_unmap(h);
	close(fd);
}

/*
 * A producer that rewrites the header once a consumer mapped it: the consumer's
 * ring count and heads still come from the geometry it validated, never from
 * the new fields (a larger count would overrun the caller's array, a moved
 * control block would be read anywhere).
 */
static void test_shm_heads_by_validated_geometry(void **state)
{
	struct evr_shm_hdr *h, *m;
	uint64_t heads[8];
	uint32_t nr;
	int fd;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	assert_int_equal(evr_shm_session_map(fd, &m), 0);
	nr = good_geometry.nr_rings;
	assert_true(nr >= 2 && nr < 8);
	for (uint32_t i = 0; i < nr; i++)
		ring_ctl(h, i)->head = 1000 + i;
	assert_int_equal(evr_shm_nr_rings(m), nr);
	for (size_t i = 0; i < 8; i++)
		heads[i] = 77;
	assert_int_equal(evr_shm_read_heads(m, heads, 8), nr);
	for (uint32_t i = 0; i < nr; i++)
		assert_true(heads[i] == 1000 + i);
	assert_true(heads[nr] == 77);
	assert_int_equal(evr_shm_read_heads(m, heads, 1), 1);

	/* The producer's side writes new geometry into the shared header. */
	h->nr_rings = 1000;
	h->ring_ctl_off = 1ull << 40;
	assert_int_equal(m->nr_rings, 1000);
	assert_int_equal(evr_shm_nr_rings(m), nr);
	assert_int_equal(evr_shm_read_heads(m, heads, 8), nr);
	assert_true(heads[0] == 1000 && heads[nr - 1] == 1000 + nr - 1 && heads[nr] == 77);
	assert_int_equal(evr_shm_nr_rings(NULL), 0);
	assert_int_equal(evr_shm_read_heads(NULL, heads, 8), 0);
	evr_shm_session_unmap(m);
	evr_shm_session_unmap(h);
	close(fd);
}

/* A memfd holding @len bytes copied from @src, padded with zeros to @size, with @seals. */
static int memfd_with(const void *src, size_t len, size_t size, unsigned int memfd_flags, int seals)
{
	int fd = memfd_create("test-shm", MFD_CLOEXEC | memfd_flags);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	assert_int_equal(pwrite(fd, src, len, 0), (ssize_t)len);
	if (seals)
		assert_int_equal(fcntl(fd, F_ADD_SEALS, seals), 0);
	return fd;
}

static void test_shm_session_map_refuses_unsealed_memfd(void **state)
{
	struct evr_shm_hdr *h, *m = NULL;
	size_t size;
	int fd, bad;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	size = h->total_size;

	/* Sealable but not sealed, half sealed, not even sealable: each refused. */
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size, MFD_ALLOW_SEALING, 0);
	assert_int_equal(evr_shm_session_map(bad, &m), -EPERM);
	close(bad);
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size, MFD_ALLOW_SEALING, F_SEAL_SHRINK);
	assert_int_equal(evr_shm_session_map(bad, &m), -EPERM);
	close(bad);
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size, MFD_ALLOW_SEALING, F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), -EPERM);
	close(bad);
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size, 0, 0);
	assert_int_equal(evr_shm_session_map(bad, &m), -EPERM);
	close(bad);
	assert_null(m);

	/* The same bytes, sealed against resizing, are accepted. */
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size, MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), 0);
	assert_non_null(m);
	evr_shm_session_unmap(m);
	close(bad);
	evr_shm_session_unmap(h);
	close(fd);
}

enum hdr_field {
	F_MAGIC,
	F_VERSION,
	F_HDR_SIZE,
	F_CTL_SIZE,
	F_CTL_OFF,
	F_DATA_OFF,
	F_TOTAL_BIGGER,
	F_TOTAL_SMALLER,
	F_NR_RINGS_ZERO,
	F_NR_RINGS_MORE,
	F_RING_SIZE,
	F_RING_SIZE_POW2,
	F_PACKET_SIZE,
	F_MODE,
	F_CLOCK_KIND,
	F_COUNT,
};

static void corrupt_field(struct evr_shm_hdr *c, enum hdr_field f)
{
	switch (f) {
	case F_MAGIC:
		c->magic ^= 1;
		break;
	case F_VERSION:
		c->abi_version = EVR_ABI_VERSION + 1;
		break;
	case F_HDR_SIZE:
		c->hdr_size = EVR_SHM_HDR_SIZE * 2;
		break;
	case F_CTL_SIZE:
		c->ring_ctl_size = EVR_RING_CTL_SIZE / 2;
		break;
	case F_CTL_OFF:
		c->ring_ctl_off = EVR_SHM_HDR_SIZE + 64;
		break;
	case F_DATA_OFF:
		c->ring_data_off += 4096;
		break;
	case F_TOTAL_BIGGER:
		c->total_size += RING_MIN;
		break;
	case F_TOTAL_SMALLER:
		c->total_size -= 4096;
		break;
	case F_NR_RINGS_ZERO:
		c->nr_rings = 0;
		break;
	case F_NR_RINGS_MORE:
		c->nr_rings = 3;
		break; /* offsets and total no longer agree */
	case F_RING_SIZE:
		c->ring_size /= 2;
		break; /* 32 KiB: < 4 packets */
	case F_RING_SIZE_POW2:
		c->ring_size = 3 * RING_MIN;
		break;
	case F_PACKET_SIZE:
		c->packet_size = 3000;
		break;
	case F_MODE:
		c->mode = 7;
		break;
	case F_CLOCK_KIND:
		c->clock.kind = 9;
		break;
	case F_COUNT:
		break;
	}
}

static void test_shm_session_map_refuses_bad_header(void **state)
{
	struct evr_shm_hdr *h, *m = NULL, *copy;
	size_t size;
	int fd, bad;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	size = h->total_size;
	copy = malloc(EVR_SHM_HDR_SIZE);
	assert_non_null(copy);

	for (int f = 0; f < F_COUNT; f++) {
		memcpy(copy, h, EVR_SHM_HDR_SIZE);
		corrupt_field(copy, (enum hdr_field)f);
		assert_int_equal(evr_shm_session_validate(copy, size), -EBADMSG);
		bad = memfd_with(copy, EVR_SHM_HDR_SIZE, size, MFD_ALLOW_SEALING,
				 F_SEAL_SHRINK | F_SEAL_GROW);
		if (evr_shm_session_map(bad, &m) != -EBADMSG)
			print_error("corrupted field %d accepted\n", f);
		assert_int_equal(evr_shm_session_map(bad, &m), -EBADMSG);
		close(bad);
	}
	/* A valid header that claims more than the file holds. */
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size - 4096, MFD_ALLOW_SEALING,
			 F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), -EBADMSG);
	close(bad);
	/* A file larger than the header says is refused as well. */
	bad = memfd_with(h, EVR_SHM_HDR_SIZE, size + 4096, MFD_ALLOW_SEALING,
			 F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), -EBADMSG);
	close(bad);
	/* Shorter than a header, and empty. */
	bad = memfd_with(h, 100, 100, MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), -EBADMSG);
	close(bad);
	bad = memfd_with(h, 0, 0, MFD_ALLOW_SEALING, F_SEAL_SHRINK | F_SEAL_GROW);
	assert_int_equal(evr_shm_session_map(bad, &m), -EBADMSG);
	close(bad);
	assert_null(m);
	assert_int_equal(evr_shm_session_validate(NULL, size), -EBADMSG);
	assert_int_equal(evr_shm_session_validate(h, EVR_SHM_HDR_SIZE - 1), -EBADMSG);

	free(copy);
	evr_shm_session_unmap(h);
	close(fd);
}

/* ---- hostile memory --------------------------------------------------------------------- */

struct hostile_stats {
	uint64_t events, lost_records, corrupt, calls;
};

/* Every returned record must lie inside memory the reader may hand out. */
static void check_record(const struct evr_ring_reader *r, const struct evr_record *rec,
			 struct hostile_stats *st)
{
	assert_true(rec->type == EVR_REC_EVENT || rec->type == EVR_REC_LOST);
	assert_int_equal(rec->ring, r->index);
	if (rec->type == EVR_REC_LOST) {
		st->lost_records++;
		return;
	}
	st->events++;
	assert_true(rec->len <= EVR_MAX_PAYLOAD);
	if (r->flags & EVR_READER_GATING) {
		const uint8_t *lo = r->data, *p = rec->payload;

		assert_true(p >= lo + EVR_PACKET_HDR_SIZE + EVR_REC_HDR_SIZE &&
			    p + rec->len <= lo + r->ring_size);
		/* Within one packet. */
		assert_true((uint64_t)(p - lo) / r->packet_size ==
			    (uint64_t)(p - lo + rec->len - (rec->len ? 1 : 0)) / r->packet_size);
	} else {
		const uint8_t *p = rec->payload;

		assert_true(p == r->buf + EVR_REC_HDR_SIZE &&
			    rec->len + EVR_REC_HDR_SIZE <= sizeof(r->buf));
	}
	/* Touch every byte, so that ASan checks the whole span. */
	if (rec->len) {
		volatile uint8_t sink = 0;

		for (uint32_t i = 0; i < rec->len; i++)
			sink ^= ((const uint8_t *)rec->payload)[i];
		(void)sink;
	}
}

/* Run one ring reader to the end; it must terminate within a bound. */
static void drain_ring(struct evr_shm_hdr *h, uint32_t index, uint32_t flags,
		       struct hostile_stats *st)
{
	struct evr_ring_reader *r = malloc(sizeof(*r));
	struct evr_record rec;
	uint64_t calls = 0;

	assert_non_null(r);
	assert_int_equal(evr_ring_reader_init(r, h, index, flags), 0);
	/* Each call that returns a record advances by at least 8 bytes of one
	 * window of ring_size: far fewer calls than this bound. */
	while (evr_ring_reader_next(r, &rec) > 0) {
		check_record(r, &rec, st);
		assert_true(++calls < 4 * h->ring_size);
	}
	evr_ring_reader_release(r);
	st->corrupt += r->corrupt;
	st->calls += calls + 1;
	free(r);
}

static uint64_t hostile_position(uint64_t *rs, uint64_t ring, uint32_t psize)
{
	switch (rnd(rs) % 8) {
	case 0:
		return 0;
	case 1:
		return UINT64_MAX - rnd(rs) % (2 * ring);
	case 2:
		return rnd(rs);
	case 3:
		return rnd(rs) % (64 * ring);
	case 4:
		return (rnd(rs) % 64) * psize; /* packet aligned */
	case 5:
		return (rnd(rs) % 64) * psize + EVR_PACKET_HDR_SIZE / 2;
	default:
		return rnd(rs) % (64 * ring) & ~(uint64_t)7;
	}
}

/* Plausible packets: right magic, seq and ring index, random records after. */
static void forge_packets(struct evr_shm_hdr *h, uint32_t i, uint64_t head, uint64_t *rs)
{
	uint8_t *data = ring_data(h, i);
	uint32_t psize = h->packet_size;
	uint64_t events = rnd(rs) % 4 ? 0 : rnd(rs);
	uint64_t first = head > h->ring_size ? (head - h->ring_size) / psize : 0;

	for (uint64_t p = first; p * psize < head + psize && p < first + h->ring_size / psize;
	     p++) {
		struct evr_packet_hdr ph = {
			.magic = EVR_PACKET_MAGIC,
			.ring_index = i,
			.seq = rnd(rs) % 16 ? p : rnd(rs),
			.events_before = events,
			.lost_before = rnd(rs) % 4 ? 0 : rnd(rs) % 1000,
		};
		uint8_t *pkt = data + (p * psize & (h->ring_size - 1));
		uint32_t off = EVR_PACKET_HDR_SIZE;

		memcpy(pkt, &ph, sizeof(ph));
		events += rnd(rs) % 500;
		/* Records with random sizes and types, some plausible, some not. */
		while (off + 16 <= psize) {
			uint32_t size;
			uint64_t w0;

			switch (rnd(rs) % 6) {
			case 0:
				size = (uint32_t)(rnd(rs) % 0x10000);
				break;
			case 1:
				size = (uint32_t)(rnd(rs) % 16);
				break;
			case 2:
				size = EVR_MAX_RECORD + (uint32_t)(rnd(rs) % 64);
				break;
			default:
				size = 16 + (uint32_t)(rnd(rs) % 600);
				break;
			}
			w0 = size | (uint64_t)(1 + rnd(rs) % 5) << 16 | (rnd(rs) & 0xff) << 24 |
			     (rnd(rs) & 0xffffffffu) << 32;
			memcpy(pkt + off, &w0, 8);
			off += (uint32_t)evr_align8(size ? size : 8);
			if (off > psize || rnd(rs) % 50 == 0)
				break;
		}
	}
}

/* Real records from the real writer, then a few words overwritten. */
static void write_then_corrupt(struct evr_shm_hdr *h, uint32_t i, uint64_t *rs)
{
	struct evr_ring_writer *w = aligned_alloc(EVR_CACHELINE, sizeof(*w));
	uint8_t payload[700];
	uint64_t n = rnd(rs) % 3000;
	uint8_t *data = ring_data(h, i);

	assert_non_null(w);
	memset(ring_ctl(h, i), 0, offsetof(struct evr_ring_ctl, ring_index));
	evr_ring_writer_init(w, h, i, -1);
	memset(payload, 0x5a, sizeof(payload));
	for (uint64_t k = 0; k < n; k++)
		(void)evr_ring_write_locked(w, 1, k, 1 + (uint32_t)(k % 3), payload,
					    (uint32_t)(rnd(rs) % sizeof(payload)));
	if (rnd(rs) % 2)
		__atomic_store_n(&ring_ctl(h, i)->tail, w->head, __ATOMIC_RELAXED);
	for (uint32_t k = 1 + (uint32_t)(rnd(rs) % 8); k; k--) {
		uint64_t off = rnd(rs) % (h->ring_size / 8) * 8, v = rnd(rs);

		if (rnd(rs) % 2)
			v &= 0xffff00ffffull; /* a size or type, little else */
		memcpy(data + off, &v, 8);
	}
	free(w);
}

static void test_reader_next_survives_hostile_memory(void **state)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
	const uint32_t iterations = 1500;
#else
	const uint32_t iterations = 4000;
#endif
	struct hostile_stats st[2] = {0};
	uint64_t rs = 0xfeedfacecafebeefull, multi_records = 0;
	struct evr_shm_hdr *h;
	int fd;

	(void)state;
	assert_int_equal(evr_shm_session_create(&good_geometry, &fd, &h), 0);
	for (uint32_t it = 0; it < iterations; it++) {
		uint32_t kind = it % 3;
		struct evr_reader *rd;
		struct evr_record rec;
		uint64_t calls = 0;

		/* The producer-owned header may change under a reader too (mode, ended). */
		h->mode = (uint32_t)(rnd(&rs) % 2);
		__atomic_store_n(&h->ended, (uint32_t)(rnd(&rs) % 3), __ATOMIC_RELAXED);
		for (uint32_t i = 0; i < h->nr_rings; i++) {
			struct evr_ring_ctl *c = ring_ctl(h, i);
			uint8_t *data = ring_data(h, i);
			uint64_t head = hostile_position(&rs, h->ring_size, h->packet_size);

			if (kind == 2) {
				write_then_corrupt(h, i, &rs);
				if (rnd(&rs) % 4 == 0)
					__atomic_store_n(&c->head, head, __ATOMIC_RELAXED);
				continue;
			}
			for (uint64_t k = 0; k < h->ring_size; k += 8) {
				uint64_t v = rnd(&rs);

				memcpy(data + k, &v, 8);
			}
			if (kind == 1)
				forge_packets(h, i, head, &rs);
			__atomic_store_n(&c->head, head, __ATOMIC_RELAXED);
			__atomic_store_n(&c->tail,
					 rnd(&rs) % 2 ? hostile_position(&rs, h->ring_size,
									 h->packet_size) :
							0,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&c->lost_total, rnd(&rs), __ATOMIC_RELAXED);
			__atomic_store_n(&c->events_total, rnd(&rs), __ATOMIC_RELAXED);
		}
		for (uint32_t i = 0; i < h->nr_rings; i++) {
			drain_ring(h, i, EVR_READER_GATING, &st[0]);
			drain_ring(h, i, 0, &st[1]);
		}
		/* The multi-ring reader over the same memory, both kinds. */
		assert_int_equal(evr_reader_new(h, -1, it % 2 ? EVR_READER_GATING : 0, &rd), 0);
		while (evr_reader_next(rd, &rec) > 0) {
			assert_true(rec.type == EVR_REC_EVENT || rec.type == EVR_REC_LOST);
			assert_true(rec.ring < h->nr_rings);
			assert_true(rec.type != EVR_REC_EVENT || rec.len <= EVR_MAX_PAYLOAD);
			assert_true(++calls < 8 * h->ring_size * h->nr_rings);
		}
		multi_records += calls;
		evr_reader_free(rd);
	}
	print_message("gating: %llu events %llu lost records %llu corrupt; passive: %llu events "
		      "%llu lost records %llu corrupt; multi-ring %llu records\n",
		      (unsigned long long)st[0].events, (unsigned long long)st[0].lost_records,
		      (unsigned long long)st[0].corrupt, (unsigned long long)st[1].events,
		      (unsigned long long)st[1].lost_records, (unsigned long long)st[1].corrupt,
		      (unsigned long long)multi_records);
	/* The fuzz reached the parser: garbage was seen, and so were records. */
	assert_true(st[0].corrupt > 0 && st[1].corrupt > 0);
	assert_true(st[0].events > 0 && st[1].events > 0);
	assert_true(st[0].lost_records > 0 && st[1].lost_records > 0);
	evr_shm_session_unmap(h);
	close(fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shm_geometry_check_rejects_each_bad_value),
		cmocka_unit_test(test_shm_session_map_returns_same_header),
		cmocka_unit_test(test_shm_session_map_headroom),
		cmocka_unit_test(test_shm_heads_by_validated_geometry),
		cmocka_unit_test(test_shm_session_map_refuses_unsealed_memfd),
		cmocka_unit_test(test_shm_session_map_refuses_bad_header),
		cmocka_unit_test(test_reader_next_survives_hostile_memory),
	};

	/* An optional argument selects cases by name pattern. */
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
