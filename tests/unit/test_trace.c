// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for trace files: CRC-32C, the writer, and the reader.
 *
 * Files are written from real ring bytes (a sealed session memfd filled by
 * the real ring writer, see trace_gen.h) and read back: every event once, in
 * time order across rings, with its thread, converted timestamp and payload;
 * and losses exact (emitted == received + lost) through LOST records, packet
 * header gaps, retracted chunks and final LOST chunks.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "trace_gen.h"
#include "crc32c.h"
#include "trace-format.h"
#include "evr-unit.h"

/* ---- CRC-32C ------------------------------------------------------------- */

static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = 0xffffffffu;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
	}
	return ~c;
}

static void *crc_thread(void *arg)
{
	uint32_t *out = arg;

	*out = evr_crc32c_sw(0, "123456789", 9);
	return NULL;
}

/* The software tables are built on first use, by whichever threads get there. */
static void test_crc32c_first_use_from_threads(void **state)
{
	pthread_t t[4];
	uint32_t out[4];

	(void)state;
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, crc_thread, &out[i]), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(out[i], 0xe3069283u);
	}
}

static void test_crc32c_known_values(void **state)
{
	uint8_t zeros[32] = {0}, ones[32];

	(void)state;
	memset(ones, 0xff, sizeof(ones));
	/* The check value of CRC-32C, and the iSCSI (RFC 3720) test vectors. */
	assert_int_equal(evr_crc32c(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(evr_crc32c(0, zeros, 32), 0x8a9136aau);
	assert_int_equal(evr_crc32c(0, ones, 32), 0x62a8ab43u);
	assert_int_equal(evr_crc32c_sw(0, "123456789", 9), 0xe3069283u);
	assert_int_equal(evr_crc32c(0, "", 0), 0);
}

/* Lengths up to a whole 64 KiB packet and more: the hardware path runs three
 * chains over 3 KiB blocks and joins them, with a tail of single steps; the
 * folding paths take groups of 128 or 256 bytes and the rest in single steps,
 * from any register (continuing a prefix). Each path this CPU has is checked;
 * which ones it has is printed. */
static void test_crc32c_implementations_agree(void **state)
{
	static uint8_t buf[70000 + 16];
	const int width = evr_crc32c_fold_width();
	uint64_t s = 99;

	(void)state;
	print_message("crc32c: crc32 instruction %s, folding on %d-bit vectors%s\n",
		      evr_crc32c_hw_available() ? "yes" : "no", width, width ? "" : " (none)");
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)gen_rnd(&s);
	for (int iter = 0; iter < 2000; iter++) {
		size_t max = iter % 4 ? 4096 : 70000;
		size_t off = gen_rnd(&s) % 16, len = gen_rnd(&s) % max, cut = len ? gen_rnd(&s) % len : 0;
		uint32_t want = crc_bitwise(buf + off, len);

		assert_int_equal(evr_crc32c_sw(0, buf + off, len), want);
		assert_int_equal(evr_crc32c(0, buf + off, len), want);
		/* Incremental: continuing from a prefix's CRC gives the whole CRC. */
		assert_int_equal(evr_crc32c(evr_crc32c(0, buf + off, cut), buf + off + cut, len - cut),
				 want);
		if (evr_crc32c_hw_available())
			assert_int_equal(evr_crc32c_hw(0, buf + off, len), want);
		if (width >= 256) {
			assert_int_equal(evr_crc32c_fold256(0, buf + off, len), want);
			assert_int_equal(evr_crc32c_fold256(evr_crc32c_fold256(0, buf + off, cut),
							    buf + off + cut, len - cut), want);
		}
		if (width >= 512) {
			assert_int_equal(evr_crc32c_fold512(0, buf + off, len), want);
			assert_int_equal(evr_crc32c_fold512(evr_crc32c_fold512(0, buf + off, cut),
							    buf + off + cut, len - cut), want);
		}
	}
	/* Every length around the groups' edges, from every alignment. */
	for (size_t len = 100; len < 1400; len++) {
		size_t off = len % 16;
		uint32_t want = crc_bitwise(buf + off, len);

		assert_int_equal(evr_crc32c(0, buf + off, len), want);
		if (width >= 256)
			assert_int_equal(evr_crc32c_fold256(0x12345678u, buf + off, len),
					 evr_crc32c_sw(0x12345678u, buf + off, len));
		if (width >= 512)
			assert_int_equal(evr_crc32c_fold512(0x12345678u, buf + off, len),
					 evr_crc32c_sw(0x12345678u, buf + off, len));
	}
}

/* One flipped bit anywhere (or in the CRC itself) is found; two are not taken for one. */
static void test_crc32c_fix1(void **state)
{
	static uint8_t buf[1500];
	uint64_t s = 7, bit;
	uint32_t want;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)gen_rnd(&s);
	want = evr_crc32c(0, buf, sizeof(buf));
	assert_int_equal(evr_crc32c_fix1(buf, sizeof(buf), want, &bit), -EINVAL);
	for (uint64_t b = 0; b < sizeof(buf) * 8; b += 1 + b / 64) {
		buf[b / 8] ^= (uint8_t)(1u << (b % 8));
		assert_int_equal(evr_crc32c_fix1(buf, sizeof(buf), want, &bit), 1);
		assert_true(bit == b);
		buf[b / 8] ^= (uint8_t)(1u << (b % 8));
	}
	assert_int_equal(evr_crc32c_fix1(buf, sizeof(buf), want ^ 0x400u, &bit), 0);
	for (int t = 0; t < 200; t++) {
		uint64_t b1 = gen_rnd(&s) % (sizeof(buf) * 8), b2 = gen_rnd(&s) % (sizeof(buf) * 8);

		if (b1 == b2)
			continue;
		buf[b1 / 8] ^= (uint8_t)(1u << (b1 % 8));
		buf[b2 / 8] ^= (uint8_t)(1u << (b2 % 8));
		assert_int_equal(evr_crc32c_fix1(buf, sizeof(buf), want, &bit), -EBADMSG);
		buf[b1 / 8] ^= (uint8_t)(1u << (b1 % 8));
		buf[b2 / 8] ^= (uint8_t)(1u << (b2 % 8));
	}
}

/* ---- reading back what trace_gen wrote ------------------------------------- */

static uint64_t conv(const struct gen *g, uint64_t raw)
{
	return evr_clock_to_mono_ns(&g->clock, raw);
}

struct verify_result {
	uint64_t events, lost, lost_views, tid_unknown;
	struct evr_trace_stats st;
};

/* Read the whole file and check every view against the model. */
static void verify(struct gen *g, struct verify_result *res)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	char err[256] = "";
	uint64_t last_ts = 0, sum_ev = 0, sum_lost = 0;
	const struct evr_process_info *pi;
	const struct evr_trace_session *s;
	int rc;

	memset(res, 0, sizeof(*res));
	for (uint64_t i = 0; i < g->nev; i++)
		g->ev[i].seen = 0;
	rc = evr_trace_reader_open_fd(g->out_fd, &r, err, sizeof(err));
	if (rc)
		print_error("open: %s\n", err);
	assert_int_equal(rc, 0);
	pi = evr_trace_reader_process(r);
	assert_non_null(pi);
	assert_int_equal(pi->pid, 4242);
	assert_int_equal(pi->argc, 3);
	assert_string_equal(pi->argv[0], "./workload");
	assert_string_equal(pi->argv[2], "100");
	assert_string_equal(pi->hostname, "testhost");
	assert_true(pi->clock.mult == 3 && pi->clock.shift == 1);
	s = evr_trace_reader_session(r);
	assert_non_null(s);
	assert_int_equal(s->nr_rings, g->nr);
	assert_string_equal(s->providers, "Gen:0x1:5");
	assert_string_equal(s->client, "test_trace");
	assert_int_equal(evr_schema_set_count(evr_trace_reader_schemas(r)), 3);

	while ((rc = evr_trace_reader_next(r, &v)) == 1) {
		assert_true(v.ts_ns >= last_ts);
		last_ts = v.ts_ns;
		assert_true(v.ring < g->nr);
		if (v.type == EVR_REC_LOST) {
			assert_true(v.lost > 0);
			res->lost += v.lost;
			res->lost_views++;
			continue;
		}
		assert_int_equal(v.type, EVR_REC_EVENT);
		assert_non_null(v.schema);
		{
			struct evr_field_value f[3];
			uint8_t want[1024];
			struct gen_event *e;
			uint64_t seq;

			assert_int_equal(evr_decode_fields(v.schema, v.payload, v.len, f),
					 (int)v.schema->nfields);
			seq = f[0].u;
			assert_true(seq < g->nev);
			e = &g->ev[seq];
			assert_true(e->kept);
			assert_false(e->seen);
			e->seen = 1;
			assert_int_equal(v.rid, e->rid);
			assert_int_equal(v.ring, e->ring);
			assert_int_equal(v.tid, e->exp_tid);
			if (v.tid == 0)
				res->tid_unknown++;
			assert_true(f[1].u == e->tid);
			assert_true(v.ts_ns == conv(g, e->ts_raw));
			assert_int_equal(v.len, gen_payload(seq, e->rid, e->tid, want));
			assert_memory_equal(v.payload, want, v.len);
			res->events++;
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(evr_trace_reader_next(r, &v), 0);
	for (uint64_t i = 0; i < g->nev; i++)
		assert_int_equal(g->ev[i].seen, g->ev[i].kept);
	evr_trace_reader_stats(r, &res->st);
	assert_true(res->st.events == res->events);
	assert_true(res->st.lost == res->lost);
	for (uint32_t i = 0; i < g->nr; i++) {
		uint64_t e, l;

		assert_int_equal(evr_trace_reader_ring_stats(r, i, &e, &l), 0);
		sum_ev += e;
		sum_lost += l;
	}
	assert_true(sum_ev == res->events && sum_lost == res->lost);
	assert_int_equal(evr_trace_reader_ring_stats(r, g->nr, NULL, NULL), -EINVAL);
	evr_trace_reader_free(r);
}

/*
 * One round on a session of 3 rings: @n events of the three kinds on random
 * rings, from threads that switch every 7 events (THREAD records), phantom
 * losses every 9th round, then each ring drained.
 */
static void three_rings_round(struct gen *g, int round, int n)
{
	for (int k = 0; k < n; k++) {
		uint32_t ring = (uint32_t)(gen_rnd(&g->rng) % 3);
		uint32_t tid = 100 + ring * 10 + (uint32_t)(k / 7 % 3);

		gen_emit(g, ring, tid, 1 + (uint32_t)(gen_rnd(&g->rng) % 3));
	}
	if (round % 9 == 4) {
		evr_ring_count_lost(&g->w[round % 3], 5 + (uint64_t)round);
		g->phantom_lost += 5 + (uint64_t)round;
	}
	for (uint32_t i = 0; i < 3; i++)
		assert_int_equal(gen_drain(g, i), 0);
}

/* Several rings, several threads per ring, phantom losses, a full ring. */
static void test_trace_roundtrip_rings(void **state)
{
	struct verify_result res;
	struct gen g;

	(void)state;
	assert_int_equal(gen_init(&g, 3, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 7), 0);
	for (int round = 0; round < 60; round++)
		three_rings_round(&g, round, 40);
	/* A burst no reader drains: the ring fills up, the writer drops and
	 * reports the drops in-band with a LOST record. */
	for (int k = 0; k < 300; k++)
		gen_emit(&g, 1, 111, GEN_RID_BLOB);
	assert_int_equal(gen_drain(&g, 1), 0);
	for (int k = 0; k < 20; k++)
		gen_emit(&g, 1, 112, GEN_RID_TICK);
	assert_int_equal(gen_finish(&g, 0), 0);

	verify(&g, &res);
	{
		uint64_t dropped = 0;

		for (uint64_t i = 0; i < g.nev; i++)
			dropped += !g.ev[i].written;
		assert_true(dropped > 0);
	}
	assert_true(res.events == g.kept && res.events > 2000);
	assert_true(res.lost == gen_expected_lost(&g));
	assert_true(res.st.ts_clamped == 0);
	assert_true(res.st.corrupt_chunks == 0 && res.st.corrupt_packets == 0);
	assert_false(res.st.truncated);
	assert_true(res.st.has_end);
	assert_true(res.st.end.events == g.kept);
	assert_true(res.tid_unknown == 0);
	gen_fini(&g);
}

/*
 * A recorder that skipped spans (lapped) and retracted others (stale): the
 * gaps are found in the packet headers; events after a gap inside a packet
 * have no known thread until the next THREAD record. Final LOST chunks add
 * losses no record shows.
 */
static void test_trace_gaps_and_final_losses(void **state)
{
	struct verify_result res;
	struct gen g;

	(void)state;
	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 11), 0);
	g.omit_pct = 15;
	g.discard_pct = 10;
	for (int round = 0; round < 80; round++) {
		for (int k = 0; k < 30; k++) {
			uint32_t ring = (uint32_t)(gen_rnd(&g.rng) % 2);

			gen_emit(&g, ring, 200 + (uint32_t)(gen_rnd(&g.rng) % 4),
				 1 + (uint32_t)(gen_rnd(&g.rng) % 3));
		}
		for (uint32_t i = 0; i < 2; i++)
			assert_int_equal(gen_drain(&g, i), 0);
	}
	/* Then more than a packet per ring with nothing skipped, so that every
	 * skipped span is followed by a packet header that accounts for it. */
	g.omit_pct = g.discard_pct = 0;
	for (int k = 0; k < 200; k++) {
		gen_emit(&g, (uint32_t)k % 2, 300, GEN_RID_BLOB);
		if (k % 20 == 19) {
			assert_int_equal(gen_drain(&g, 0), 0);
			assert_int_equal(gen_drain(&g, 1), 0);
		}
	}
	assert_int_equal(gen_finish(&g, 1000), 0);

	verify(&g, &res);
	assert_true(res.events == g.kept);
	assert_true(g.kept < g.nev);
	assert_true(res.lost == gen_expected_lost(&g));
	assert_true(res.tid_unknown > 0);
	assert_true(res.st.ts_clamped == 0);
	gen_fini(&g);
}

/* Overwrite mode: the writers lap a recorder that reads only at the end. */
static void test_trace_overwrite_lapped(void **state)
{
	struct verify_result res;
	struct gen g;

	(void)state;
	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_OVERWRITE, 5), 0);
	for (int k = 0; k < 1500; k++)
		gen_emit(&g, (uint32_t)k % 2, 400 + (uint32_t)(k / 50 % 2), GEN_RID_BLOB);
	for (uint32_t i = 0; i < 2; i++) {
		gen_skip_to_intact(&g, i);
		assert_true(g.m[i].tail > 0);
	}
	assert_int_equal(gen_finish(&g, 0), 0);
	verify(&g, &res);
	assert_true(res.events == g.kept && g.kept > 0 && g.kept < g.nev);
	assert_true(res.lost == gen_expected_lost(&g));
	gen_fini(&g);
}

/* ---- streams ------------------------------------------------------------------ */

struct view_log {
	uint64_t *v;			/* per view: type, ring, ts, rid, tid, len or lost, payload crc */
	size_t n, cap;
};

static void log_view(struct view_log *l, const struct evr_event_view *v)
{
	uint64_t w[7] = { v->type, v->ring, v->ts_ns, v->rid, v->tid,
			  v->type == EVR_REC_LOST ? v->lost : v->len,
			  v->type == EVR_REC_EVENT ? evr_crc32c(0, v->payload, v->len) : 0 };

	if (l->n + 7 > l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		assert_non_null(l->v);
	}
	memcpy(l->v + l->n, w, sizeof(w));
	l->n += 7;
}

static void read_views(int fd, struct view_log *l, struct evr_trace_stats *st)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	char err[256];
	int rc;

	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), 0);
	while ((rc = evr_trace_reader_next(r, &v)) == 1)
		log_view(l, &v);
	assert_int_equal(rc, 0);
	evr_trace_reader_stats(r, st);
	evr_trace_reader_free(r);
}

/* A pipe that a child fills with the first @len bytes of @fd, then closes. */
static int pipe_of(int fd, size_t len, pid_t *ret_pid)
{
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		static uint8_t buf[1u << 16];
		off_t off = 0;

		close(p[0]);
		while ((size_t)off < len) {
			size_t want = len - (size_t)off < sizeof(buf) ? len - (size_t)off : sizeof(buf);
			ssize_t n = pread(fd, buf, want, off);

			if (n <= 0 || write(p[1], buf, (size_t)n) != n)
				_exit(1);
			off += n;
		}
		_exit(0);
	}
	close(p[1]);
	*ret_pid = pid;
	return p[0];
}

/*
 * The same file through a pipe: read front to back as a stream, it gives the
 * same views in the same order and the same totals, retracted and skipped
 * spans, final losses and all; cut short, it says so like the file.
 */
static void test_trace_reader_stream_matches_file(void **state)
{
	struct view_log a = { 0 }, b = { 0 };
	struct evr_trace_stats fs, ss;
	struct stat sb;
	pid_t pid;
	int status, pfd;
	struct gen g;

	(void)state;
	assert_int_equal(gen_init(&g, 3, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 21), 0);
	g.omit_pct = 10;
	g.discard_pct = 10;
	for (int round = 0; round < 60; round++) {
		for (int k = 0; k < 40; k++)
			gen_emit(&g, (uint32_t)(gen_rnd(&g.rng) % 3), 200 + (uint32_t)(k % 3),
				 1 + (uint32_t)(gen_rnd(&g.rng) % 3));
		for (uint32_t i = 0; i < 3; i++)
			assert_int_equal(gen_drain(&g, i), 0);
	}
	/* More than a packet per ring kept whole: every skipped span is then followed
	 * by a packet header that accounts for it, and the END totals hold. */
	g.omit_pct = g.discard_pct = 0;
	for (int k = 0; k < 300; k++) {
		gen_emit(&g, (uint32_t)k % 3, 300, GEN_RID_BLOB);
		if (k % 30 == 29)
			for (uint32_t i = 0; i < 3; i++)
				assert_int_equal(gen_drain(&g, i), 0);
	}
	assert_int_equal(gen_finish(&g, 7), 0);
	read_views(g.out_fd, &a, &fs);
	assert_false(fs.damaged);
	pfd = pipe_of(g.out_fd, (size_t)-1 / 2, &pid);
	read_views(pfd, &b, &ss);
	close(pfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(a.n == b.n && a.n > 0);
	assert_memory_equal(a.v, b.v, a.n * sizeof(*a.v));
	assert_true(ss.stream && !fs.stream);
	assert_true(ss.events == fs.events && ss.lost == fs.lost && ss.events == g.kept);
	assert_true(!ss.truncated && ss.has_end && !ss.damaged && ss.chunks == fs.chunks);

	/* Cut in the middle of a chunk: the stream reads what came, and says where. */
	assert_int_equal(fstat(g.out_fd, &sb), 0);
	b.n = 0;
	pfd = pipe_of(g.out_fd, (size_t)sb.st_size / 2 + 5, &pid);
	read_views(pfd, &b, &ss);
	close(pfd);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(ss.truncated && !ss.has_end);
	assert_non_null(strstr(ss.truncated_why, "ends inside a chunk"));
	assert_true(ss.events > 0 && ss.events < g.kept);
	free(a.v);
	free(b.v);
	gen_fini(&g);
}

/* ---- hand-made records --------------------------------------------------------- */

struct pk {
	uint8_t b[EVR_PACKET_SIZE_MIN];
	uint32_t n;
};

static void pk_header(struct pk *p, uint32_t ring, uint64_t seq, uint64_t ts, uint64_t ev_before,
		      uint64_t lost_before)
{
	struct evr_packet_hdr h = {
		.magic = EVR_PACKET_MAGIC, .ring_index = ring, .seq = seq, .ts_begin = ts,
		.events_before = ev_before, .lost_before = lost_before,
	};

	memcpy(p->b + p->n, &h, sizeof(h));
	p->n += sizeof(h);
}

static void pk_rec(struct pk *p, uint32_t type, uint32_t id, uint64_t ts, const void *pl,
		   uint32_t len)
{
	struct evr_rec_hdr h = {.size = (uint16_t)(EVR_REC_HDR_SIZE + len), .type = (uint8_t)type,
				.event_id = id, .ts = ts};

	memcpy(p->b + p->n, &h, sizeof(h));
	memcpy(p->b + p->n + sizeof(h), pl, len);
	p->n += (uint32_t)evr_align8(sizeof(h) + len);
}

static void pk_thread(struct pk *p, uint32_t tid, uint64_t ts)
{
	struct evr_rec_thread t = {.tid = tid};

	pk_rec(p, EVR_REC_THREAD, 0, ts, &t, sizeof(t));
}

static void pk_event(struct pk *p, uint64_t ts, uint32_t tag)
{
	pk_rec(p, EVR_REC_EVENT, 1, ts, &tag, sizeof(tag));
}

static void pk_lost(struct pk *p, uint64_t ts, uint64_t count)
{
	struct evr_rec_lost l = {.count = count};

	pk_rec(p, EVR_REC_LOST, 0, ts, &l, sizeof(l));
}

/* A trace with a monotonic clock (ts == ns) and @nr rings, no chunks yet. */
static struct evr_trace_writer *hand_writer(int fd, uint32_t nr)
{
	const struct evr_trace_session s = {
		.mode = EVR_MODE_DISCARD, .packet_size = EVR_PACKET_SIZE_MIN,
		.ring_size = 4 * EVR_PACKET_SIZE_MIN, .nr_rings = nr,
		.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1},
		.providers = "H",
	};
	struct evr_trace_writer *w;

	assert_int_equal(evr_trace_writer_new(fd, &w), 0);
	assert_int_equal(evr_trace_writer_session(w, &s), 0);
	return w;
}

static int next_event(struct evr_trace_reader *r, struct evr_event_view *v)
{
	int rc = evr_trace_reader_next(r, v);

	assert_true(rc >= 0);
	return rc;
}

/* Two threads sharing a ring wrote out of time order: the reader sorts each
 * chunk, keeps each record's thread, and clamps disorder across chunks. */
static void test_trace_reader_orders_within_ring(void **state)
{
	static const struct {
		uint64_t ts;
		uint32_t ring, tid, tag;
	} want[] = {
		{50, 0, 2, 2}, {60, 1, 9, 10}, {70, 0, 2, 3}, {80, 0, 1, 4},
		{90, 1, 9, 11}, {100, 0, 1, 1}, {100, 0, 1, 5} /* 65, clamped */,
	};
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_writer *w = hand_writer(fd, 2);
	struct evr_trace_reader *r;
	struct evr_trace_stats st;
	struct evr_event_view v;
	struct pk a = {.n = 0}, b = {.n = 0}, c = {.n = 0};
	uint32_t tag;

	(void)state;
	pk_header(&a, 0, 0, 100, 0, 0);
	pk_thread(&a, 1, 100);
	pk_event(&a, 100, 1);
	pk_thread(&a, 2, 50);
	pk_event(&a, 50, 2);
	pk_event(&a, 70, 3);
	pk_thread(&a, 1, 80);
	pk_event(&a, 80, 4);
	assert_int_equal(evr_trace_writer_events(w, 0, 0, a.b, a.n), 0);
	pk_header(&b, 1, 0, 60, 0, 0);
	pk_thread(&b, 9, 60);
	pk_event(&b, 60, 10);
	pk_event(&b, 90, 11);
	assert_int_equal(evr_trace_writer_events(w, 1, 0, b.b, b.n), 0);
	/* The same packet of ring 0 goes on in a second chunk, same thread. */
	pk_event(&c, 65, 5);
	assert_int_equal(evr_trace_writer_events(w, 0, a.n, c.b, c.n), 0);
	evr_trace_writer_free(w);

	assert_int_equal(evr_trace_reader_open_fd(fd, &r, NULL, 0), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		assert_int_equal(next_event(r, &v), 1);
		assert_int_equal(v.type, EVR_REC_EVENT);
		assert_null(v.schema);	/* no METADATA in this file */
		memcpy(&tag, v.payload, 4);
		assert_int_equal(tag, want[i].tag);
		assert_true(v.ts_ns == want[i].ts);
		assert_int_equal(v.ring, want[i].ring);
		assert_int_equal(v.tid, want[i].tid);
	}
	assert_int_equal(next_event(r, &v), 0);
	evr_trace_reader_stats(r, &st);
	assert_true(st.ts_clamped == 1);
	assert_true(st.events == 7 && st.lost == 0);
	assert_true(st.first_ts_ns == 50 && st.last_ts_ns == 100);
	/* Written without an END chunk: a recording that did not finish. */
	assert_true(st.truncated);
	assert_non_null(strstr(st.truncated_why, "no END chunk"));
	assert_false(st.has_end);
	evr_trace_reader_free(r);
	close(fd);
}

/* Losses in a hand-made ring: LOST records, a packet gap, final LOST chunks,
 * a corrupt record (the rest of its packet is abandoned and accounted by the
 * next header), and where each LOST view lands in time. */
static void test_trace_reader_loss_accounting(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_writer *w = hand_writer(fd, 1);
	const uint64_t P = EVR_PACKET_SIZE_MIN;
	struct evr_trace_reader *r;
	struct evr_trace_stats st;
	struct evr_event_view v;
	struct pk p = {.n = 0};
	uint64_t lost = 0, events = 0;
	struct {
		uint32_t type;
		uint64_t ts, n;
	} got[32];
	int ngot = 0;

	(void)state;
	/* Packet 0: 2 events, a LOST record of 3, 1 event, then a bad record. */
	pk_header(&p, 0, 0, 10, 0, 0);
	pk_thread(&p, 5, 10);
	pk_event(&p, 10, 1);
	pk_event(&p, 11, 2);
	pk_lost(&p, 12, 3);
	pk_event(&p, 13, 3);
	{
		struct evr_rec_hdr bad = {.size = 4, .type = EVR_REC_EVENT, .ts = 14};

		memcpy(p.b + p.n, &bad, sizeof(bad));
		p.n += 16;
	}
	assert_int_equal(evr_trace_writer_events(w, 0, 0, p.b, p.n), 0);
	/* Packet 2 (packet 1 never recorded): the producer wrote 20 events and
	 * lost 7 before it. Seen: 3 events, 3 lost. Missing: 17 + 4 = 21. */
	p.n = 0;
	pk_header(&p, 0, 2, 500, 20, 7);
	pk_thread(&p, 6, 500);
	pk_event(&p, 500, 4);
	assert_int_equal(evr_trace_writer_events(w, 0, 2 * P, p.b, p.n), 0);
	assert_int_equal(evr_trace_writer_lost(w, 0, 9), 0);
	assert_int_equal(evr_trace_writer_lost(w, 0, 0), 0);	/* writes nothing */
	evr_trace_writer_free(w);

	assert_int_equal(evr_trace_reader_open_fd(fd, &r, NULL, 0), 0);
	while (next_event(r, &v) == 1) {
		assert_true(ngot < 32);
		got[ngot].type = v.type;
		got[ngot].ts = v.ts_ns;
		got[ngot].n = v.type == EVR_REC_LOST ? v.lost : 1;
		if (v.type == EVR_REC_LOST)
			lost += v.lost;
		else
			events++;
		ngot++;
	}
	assert_int_equal(ngot, 7);
	assert_true(got[2].type == EVR_REC_LOST && got[2].ts == 12 && got[2].n == 3);
	assert_true(got[4].type == EVR_REC_LOST && got[4].ts == 500 && got[4].n == 21);
	assert_true(got[5].type == EVR_REC_EVENT && got[5].ts == 500);
	assert_true(got[6].type == EVR_REC_LOST && got[6].ts == 500 && got[6].n == 9);
	assert_true(events == 4 && lost == 33);
	evr_trace_reader_stats(r, &st);
	assert_true(st.corrupt_packets == 1);
	evr_trace_reader_free(r);
	close(fd);
}

/* ---- truncation, corruption, errors -------------------------------------- */

/* A small complete file from the generator; returns its size. */
static uint64_t small_file(struct gen *g)
{
	struct stat st;

	assert_int_equal(gen_init(g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 3), 0);
	for (int k = 0; k < 300; k++)
		gen_emit(g, (uint32_t)k % 2, 7 + (uint32_t)(k / 10 % 2), 1 + (uint32_t)k % 3);
	assert_int_equal(gen_finish(g, 2), 0);
	assert_int_equal(fstat(g->out_fd, &st), 0);
	return (uint64_t)st.st_size;
}

static void count_all(int fd, int *ret_rc, uint64_t *ret_events, struct evr_trace_stats *st)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	uint64_t n = 0;
	int rc;

	rc = evr_trace_reader_open_fd(fd, &r, NULL, 0);
	*ret_rc = rc;
	if (rc)
		return;
	while ((rc = evr_trace_reader_next(r, &v)) == 1)
		n += v.type == EVR_REC_EVENT;
	*ret_rc = rc;
	*ret_events = n;
	evr_trace_reader_stats(r, st);
	evr_trace_reader_free(r);
}

static void test_trace_reader_truncated(void **state)
{
	struct evr_trace_stats st;
	uint64_t size, full = 0, n = 0;
	struct gen g;
	int rc;

	(void)state;
	size = small_file(&g);
	count_all(g.out_fd, &rc, &full, &st);
	assert_int_equal(rc, 0);
	assert_true(full == g.kept);
	/* Whole, and as its END chunk says: nothing to report. */
	assert_false(st.truncated);
	assert_false(st.damaged);
	assert_true(st.damaged_events == 0 && st.lost_damaged == 0);
	assert_false(st.truncated);
	assert_true(st.bytes == size && st.file_size == size);

	/* Cut in the middle of the last EVENTS chunk's payload. */
	{
		struct evr_trace_reader *r;
		struct evr_trace_chunk c;
		uint64_t pos = 0, last_ev = 0;

		assert_int_equal(evr_trace_reader_open_fd(g.out_fd, &r, NULL, 0), 0);
		while (evr_trace_reader_chunk_next(r, &pos, &c) == 1) {
			if (c.kind == EVR_CHUNK_EVENTS)
				last_ev = c.off;
		}
		evr_trace_reader_free(r);
		assert_true(last_ev > 0);
		assert_int_equal(ftruncate(g.out_fd, (off_t)last_ev + 50), 0);
		count_all(g.out_fd, &rc, &n, &st);
		assert_int_equal(rc, 0);
		assert_true(st.truncated);
		assert_true(st.bytes == last_ev);
		assert_non_null(strstr(st.truncated_why, "the file ends inside a chunk (EVENTS"));
		assert_false(st.has_end);
		assert_true(n < full && n > 0);
	}
	gen_fini(&g);
}

static void test_trace_reader_corrupt_events_chunk(void **state)
{
	struct evr_trace_reader *r;
	struct evr_trace_chunk c;
	struct evr_trace_stats st;
	uint64_t pos = 0, target = 0, n = 0;
	int rc, seen = 0;
	uint8_t byte;
	struct gen g;

	(void)state;
	small_file(&g);
	assert_int_equal(evr_trace_reader_open_fd(g.out_fd, &r, NULL, 0), 0);
	while (evr_trace_reader_chunk_next(r, &pos, &c) == 1) {
		if (c.kind == EVR_CHUNK_EVENTS && ++seen == 3)
			target = c.off + EVR_TRACE_CHUNK_HDR_SIZE + 16 + 20;
	}
	evr_trace_reader_free(r);
	assert_int_equal(pread(g.out_fd, &byte, 1, (off_t)target), 1);
	byte ^= 0x41;	/* two bits: beyond repair */
	assert_int_equal(pwrite(g.out_fd, &byte, 1, (off_t)target), 1);
	count_all(g.out_fd, &rc, &n, &st);
	assert_int_equal(rc, 0);
	assert_true(st.corrupt_chunks == 1);
	assert_false(st.truncated);
	/* Nothing vanishes silently: what the chunk held is counted lost. */
	assert_true(n < g.kept);
	assert_true(n + st.lost == g.nev + g.final_lost);
	gen_fini(&g);
}

/* ---- damaged files ----------------------------------------------------------- */

/* The @nth (from 1) chunk of @kind in the file @fd: its offset and header. */
static uint64_t find_chunk(int fd, uint32_t kind, int nth, struct evr_trace_chunk_hdr *ret)
{
	struct stat st;
	uint64_t off = 64;

	assert_int_equal(fstat(fd, &st), 0);
	while (off + sizeof(*ret) <= (uint64_t)st.st_size) {
		assert_int_equal(pread(fd, ret, sizeof(*ret), (off_t)off), (ssize_t)sizeof(*ret));
		if (ret->kind == kind && --nth == 0)
			return off;
		off += sizeof(*ret) + evr_align8(ret->len);
	}
	fail_msg("no chunk of kind %u", kind);
	return 0;
}

static void flip_bits(int fd, uint64_t off, uint8_t mask)
{
	uint8_t b;

	assert_int_equal(pread(fd, &b, 1, (off_t)off), 1);
	b ^= mask;
	assert_int_equal(pwrite(fd, &b, 1, (off_t)off), 1);
}

/*
 * A file with EVENTS chunks written without their payload CRC (the recorder's
 * --checksum=never, or auto while behind), mixed with checked ones: it reads
 * back exactly, counts the unchecked chunks, a cut inside one reads up to the
 * chunk before it, and a damaged checked chunk is still caught.
 */
static void test_trace_unchecked_chunks(void **state)
{
	struct evr_trace_chunk_hdr h;
	struct verify_result res;
	struct evr_trace_stats st;
	uint64_t n = 0, off, unchecked, last_unchecked = 0, checked = 0;
	struct gen g;
	int rc;

	(void)state;
	assert_int_equal(gen_init(&g, 3, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 11), 0);
	for (int round = 0; round < 30; round++) {
		evr_trace_writer_set_checksum(g.tw, round % 3 != 1);
		three_rings_round(&g, round, 40);
	}
	evr_trace_writer_set_checksum(g.tw, false);
	assert_int_equal(gen_finish(&g, 1), 0);
	unchecked = evr_trace_writer_unchecked(g.tw);
	assert_true(unchecked > 10);

	verify(&g, &res);
	assert_true(res.events == g.kept && res.lost == gen_expected_lost(&g));
	assert_true(res.st.unchecked_chunks == unchecked);
	assert_false(res.st.damaged);
	assert_false(res.st.truncated);
	assert_true(res.st.has_end && res.st.end.events == g.kept);

	/* The flag is in the header, under its CRC; the payload's CRC is 0. */
	for (int k = 1;; k++) {
		off = find_chunk(g.out_fd, EVR_CHUNK_EVENTS, k, &h);
		if (h.flags & EVR_TRACE_CHUNK_UNCHECKED) {
			assert_true(h.data_crc == 0);
			last_unchecked = off;
		} else if (!checked) {
			checked = off;
		}
		if (last_unchecked && checked && last_unchecked > checked)
			break;
	}

	/* A checked chunk damaged beyond repair is still found and skipped. */
	flip_bits(g.out_fd, checked + EVR_TRACE_CHUNK_HDR_SIZE + 16 + 20, 0x41);
	count_all(g.out_fd, &rc, &n, &st);
	assert_int_equal(rc, 0);
	assert_true(st.corrupt_chunks == 1 && st.damaged);
	assert_true(n < g.kept);
	flip_bits(g.out_fd, checked + EVR_TRACE_CHUNK_HDR_SIZE + 16 + 20, 0x41);

	/* Cut inside an unchecked chunk: read up to the chunk before it. */
	assert_int_equal(ftruncate(g.out_fd, (off_t)last_unchecked + 50), 0);
	count_all(g.out_fd, &rc, &n, &st);
	assert_int_equal(rc, 0);
	assert_true(st.truncated && !st.has_end);
	assert_true(st.bytes == last_unchecked);
	assert_non_null(strstr(st.truncated_why, "the file ends inside a chunk (EVENTS"));
	assert_true(n > 0 && n < g.kept);
	assert_true(st.unchecked_chunks < unchecked);
	gen_fini(&g);
}

struct lines {
	char text[2048];
	int n;
};

static void collect_line(void *arg, const char *line)
{
	struct lines *l = arg;
	size_t used = strlen(l->text);

	assert_null(strchr(line, '\n'));
	snprintf(l->text + used, sizeof(l->text) - used, "%s\n", line);
	l->n++;
}

/* Read it all; the problems said in @lines. */
static void read_damaged(int fd, uint64_t *ret_events, struct evr_trace_stats *st,
			 struct lines *lines)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	uint64_t n = 0;
	int rc;

	assert_int_equal(evr_trace_reader_open_fd(fd, &r, NULL, 0), 0);
	while ((rc = evr_trace_reader_next(r, &v)) == 1) {
		n += v.type == EVR_REC_EVENT;
		/* Every event still has its description. */
		if (v.type == EVR_REC_EVENT && v.rid != GEN_RID_UNDESCRIBED)
			assert_non_null(v.schema);
	}
	assert_int_equal(rc, 0);
	evr_trace_reader_stats(r, st);
	memset(lines, 0, sizeof(*lines));
	rc = evr_trace_reader_problems(r, collect_line, lines);
	assert_int_equal(rc, lines->n);
	evr_trace_reader_free(r);
	*ret_events = n;
}

/* One flipped bit, in a chunk header, a METADATA or an EVENTS payload: the file
 * reads exactly as written, and the repair is said. */
static void test_trace_reader_repairs_one_bit(void **state)
{
	static const struct {
		uint32_t kind;
		int nth;
		uint32_t at;	/* byte from the chunk's start */
	} where[] = {
		{ EVR_CHUNK_METADATA, 1, 24 + 30 },
		{ EVR_CHUNK_METADATA, 1, 8 },	/* its header's length field */
		{ EVR_CHUNK_EVENTS, 3, 24 + 16 + 20 },
		{ EVR_CHUNK_EVENTS, 3, 24 + 8 },	/* the position of its span */
		{ EVR_CHUNK_SESSION, 1, 24 + 4 },
		{ EVR_CHUNK_END, 1, 24 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		struct evr_trace_chunk_hdr h;
		struct evr_trace_stats st;
		struct lines lines;
		uint64_t n, off;
		struct gen g;

		small_file(&g);
		off = find_chunk(g.out_fd, where[i].kind, where[i].nth, &h);
		flip_bits(g.out_fd, off + where[i].at, 0x10);
		read_damaged(g.out_fd, &n, &st, &lines);
		assert_true(n == g.kept);
		assert_false(st.truncated);
		assert_int_equal(st.repaired_chunks, 1);
		assert_true(st.damaged && st.corrupt_chunks == 0 && st.damaged_events == 0);
		assert_int_equal(lines.n, 1);
		assert_non_null(strstr(lines.text, "repaired from its CRC"));
		gen_fini(&g);
	}
}

/* A METADATA chunk damaged beyond repair: what still decodes is used, the rest
 * skipped and said; the events after it are all read. */
static void test_trace_reader_salvages_metadata(void **state)
{
	struct evr_trace_chunk_hdr h;
	struct evr_trace_stats st;
	struct lines lines;
	uint64_t n, off;
	struct gen g;

	(void)state;
	small_file(&g);
	off = find_chunk(g.out_fd, EVR_CHUNK_METADATA, 1, &h);
	/* Eight bits of the last description's payload: its protobuf breaks. */
	flip_bits(g.out_fd, off + 24 + h.len - 3, 0xff);
	read_damaged(g.out_fd, &n, &st, &lines);
	assert_true(n == g.kept);
	assert_false(st.truncated);
	assert_int_equal(st.salvaged_chunks, 1);
	assert_true(st.damaged);
	assert_non_null(strstr(lines.text, "METADATA chunk at offset"));
	assert_non_null(strstr(lines.text, "damaged beyond repair"));
	gen_fini(&g);
}

/*
 * An EVENTS chunk removed, every later chunk renumbered and the CRCs made
 * right: the CRCs cannot see it, the END chunk does. The events it held are
 * damage, not loss.
 */
static void test_trace_reader_missing_chunk_is_damage(void **state)
{
	struct evr_trace_chunk_hdr h;
	struct evr_trace_stats st;
	struct lines lines;
	uint64_t n, off, span, end_off, size;
	uint8_t *rest;
	struct stat sb;
	struct gen g;

	(void)state;
	small_file(&g);
	off = find_chunk(g.out_fd, EVR_CHUNK_EVENTS, 4, &h);
	span = sizeof(h) + evr_align8(h.len);
	assert_int_equal(fstat(g.out_fd, &sb), 0);
	size = (uint64_t)sb.st_size;
	rest = malloc(size - off - span);
	assert_non_null(rest);
	assert_int_equal(pread(g.out_fd, rest, size - off - span, (off_t)(off + span)),
			 (ssize_t)(size - off - span));
	/* Renumber the chunks behind it, fix the END chunk's own counts. */
	for (uint64_t at = 0; at < size - off - span;) {
		struct evr_trace_chunk_hdr c;

		memcpy(&c, rest + at, sizeof(c));
		c.seq--;
		if (c.kind == EVR_CHUNK_END) {
			struct evr_trace_end_rec e;

			memcpy(&e, rest + at + sizeof(c), sizeof(e));
			e.chunks--;
			e.bytes -= span;
			memcpy(rest + at + sizeof(c), &e, sizeof(e));
			c.data_crc = evr_crc32c(0, &e, sizeof(e));
		}
		c.hdr_crc = evr_crc32c(0, &c, 20);
		memcpy(rest + at, &c, sizeof(c));
		at += sizeof(c) + evr_align8(c.len);
	}
	assert_int_equal(pwrite(g.out_fd, rest, size - off - span, (off_t)off),
			 (ssize_t)(size - off - span));
	assert_int_equal(ftruncate(g.out_fd, (off_t)(size - span)), 0);
	free(rest);
	end_off = find_chunk(g.out_fd, EVR_CHUNK_END, 1, &h);
	assert_true(end_off > 0);

	read_damaged(g.out_fd, &n, &st, &lines);
	assert_false(st.truncated);
	assert_true(n < g.kept);
	assert_true(st.damaged);
	assert_true(st.damaged_events == g.kept - n);
	/* The gap's LOST view counted them; they are damage, not producer loss. */
	assert_true(st.lost_damaged == g.kept - n);
	assert_true(st.lost - st.lost_damaged == gen_expected_lost(&g));
	assert_non_null(strstr(lines.text, "not in the file (damage, not loss"));
	gen_fini(&g);
}

/* A chunk header damaged beyond repair: skipped to the next valid chunk, said. */
static void test_trace_reader_skips_damaged_header(void **state)
{
	struct evr_trace_chunk_hdr h;
	struct evr_trace_stats st;
	struct lines lines;
	uint64_t n, off;
	struct gen g;

	(void)state;
	small_file(&g);
	/* One that holds events (not only a THREAD record). */
	for (int nth = 5; (off = find_chunk(g.out_fd, EVR_CHUNK_EVENTS, nth, &h)) && h.len < 100;)
		nth++;
	flip_bits(g.out_fd, off + 8, 0xff);	/* its length, beyond repair */
	read_damaged(g.out_fd, &n, &st, &lines);
	assert_false(st.truncated);
	assert_true(st.skipped_bytes > 0 && st.missing_chunks == 1);
	assert_true(n < g.kept && n > 0);
	assert_true(st.damaged_events == g.kept - n);
	assert_non_null(strstr(lines.text, "bytes at offset"));
	gen_fini(&g);
}

/*
 * The raw chunk walk (evr_trace_reader_chunk_next()) sees the chunks the scan
 * counted, whatever the damage: a header beyond repair is skipped as the scan
 * skipped it (the walk neither returns it, nor steps by its length, nor stops
 * there), one with a flipped bit is read repaired, also when looking for one
 * kind; the damage is still reported by the reader.
 */
static void test_trace_reader_chunk_walk_matches_scan(void **state)
{
	static const struct {
		uint32_t at;	/* byte of the header */
		uint8_t mask;
		bool skipped;	/* beyond repair (else one bit, repaired) */
	} damage[] = {
		{ 8, 0xff, true },	/* its length */
		{ 4, 0x50, true },	/* its kind: an unknown one, of a valid length */
		{ 0, 0xff, true },	/* its magic */
		{ 8, 0x10, false },	/* one bit of its length */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
		struct evr_trace_reader *r;
		struct evr_trace_chunk_hdr h;
		struct evr_trace_stats st;
		struct evr_trace_chunk c;
		uint64_t off, pos = 0, n = 0, ends = 0;
		uint32_t last_kind = 0;
		struct gen g;
		int rc;

		small_file(&g);
		off = find_chunk(g.out_fd, EVR_CHUNK_EVENTS, 3, &h);
		flip_bits(g.out_fd, off + damage[i].at, damage[i].mask);
		assert_int_equal(evr_trace_reader_open_fd(g.out_fd, &r, NULL, 0), 0);
		evr_trace_reader_stats(r, &st);
		assert_false(st.truncated);
		assert_true(st.damaged);
		if (damage[i].skipped)
			assert_true(st.skipped_bytes > 0 && st.missing_chunks == 1);
		else
			assert_int_equal(st.repaired_chunks, 1);

		while ((rc = evr_trace_reader_chunk_next(r, &pos, &c)) == 1) {
			assert_true(c.off != off || !damage[i].skipped);
			last_kind = c.kind;
			n++;
		}
		assert_int_equal(rc, 0);
		assert_true(n == st.chunks);
		assert_int_equal(last_kind, EVR_CHUNK_END);

		pos = 0;
		while ((rc = evr_trace_reader_chunk_next_kind(r, &pos, EVR_CHUNK_END, &c)) == 1) {
			assert_int_equal(c.kind, EVR_CHUNK_END);
			ends++;
		}
		assert_int_equal(rc, 0);
		assert_true(ends == 1);
		evr_trace_reader_free(r);
		gen_fini(&g);
	}
}

/* Cut exactly at a chunk boundary, before the END chunk: truncated, and said. */
static void test_trace_reader_no_end_is_truncated(void **state)
{
	struct evr_trace_chunk_hdr h;
	struct evr_trace_stats st;
	struct lines lines;
	uint64_t n, off;
	struct gen g;

	(void)state;
	small_file(&g);
	off = find_chunk(g.out_fd, EVR_CHUNK_END, 1, &h);
	assert_int_equal(ftruncate(g.out_fd, (off_t)off), 0);
	read_damaged(g.out_fd, &n, &st, &lines);
	assert_true(n == g.kept);
	assert_true(st.truncated && !st.has_end && !st.damaged);
	assert_int_equal(lines.n, 1);
	assert_non_null(strstr(lines.text, "no END chunk"));
	gen_fini(&g);
}

static void test_trace_reader_not_a_trace(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_reader *r = NULL;
	struct evr_trace_file_hdr fh;
	char err[256];
	char junk[200];

	(void)state;
	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), -EBADMSG);
	assert_non_null(strstr(err, "shorter than its header"));
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(write(fd, junk, sizeof(junk)), (ssize_t)sizeof(junk));
	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "not an evring trace file (bad magic)");
	/* A valid header of a newer format version. */
	memset(&fh, 0, sizeof(fh));
	memcpy(fh.magic, EVR_TRACE_MAGIC, 8);
	fh.version = EVR_TRACE_VERSION + 1;
	fh.hdr_size = 64;
	fh.abi_version = EVR_ABI_VERSION;
	fh.crc = evr_crc32c(0, &fh, 60);
	assert_int_equal(pwrite(fd, &fh, sizeof(fh), 0), (ssize_t)sizeof(fh));
	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), -EPROTONOSUPPORT);
	assert_non_null(strstr(err, "newer than this reader"));
	/* Two bits away from the version the CRC covers: not taken for one flipped bit. */
	fh.version = 0;
	assert_int_equal(pwrite(fd, &fh, sizeof(fh), 0), (ssize_t)sizeof(fh));
	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), -EBADMSG);
	assert_string_equal(err, "corrupt trace file header (CRC mismatch)");
	assert_null(r);
	assert_int_equal(evr_trace_reader_open("/nonexistent/x.evtrace", &r, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "cannot open /nonexistent/x.evtrace"));
	close(fd);
}

/* Only the header: opens, no session, no events. Then by path. */
static void test_trace_reader_header_only_by_path(void **state)
{
	char path[] = "/tmp/evr-test-trace-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	struct evr_trace_writer *w;
	struct evr_trace_reader *r;
	struct evr_event_view v;
	struct evr_trace_stats st;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(evr_trace_writer_new(fd, &w), 0);
	assert_true(evr_trace_writer_bytes(w) == 64);
	evr_trace_writer_free(w);
	close(fd);
	assert_int_equal(evr_trace_reader_open(path, &r, NULL, 0), 0);
	unlink(path);
	assert_null(evr_trace_reader_session(r));
	assert_null(evr_trace_reader_process(r));
	assert_int_equal(evr_trace_reader_next(r, &v), 0);
	evr_trace_reader_stats(r, &st);
	assert_true(st.truncated);	/* no END chunk */
	assert_true(st.chunks == 0 && st.bytes == 64);
	evr_trace_reader_free(r);
}

/* THREADS chunks: the last name of a tid wins, long names are cut at 255 bytes,
 * unknown tids have none, and bad arguments are refused. */
static void test_trace_thread_names(void **state)
{
	char path[] = "/tmp/evr-test-trace-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	char longname[400];
	struct evr_trace_thread a[] = { { 30, "main" }, { 7, "worker-1" }, { 9, "" } };
	struct evr_trace_thread b[] = { { 7, "worker-renamed" }, { 12, longname } };
	struct evr_trace_writer *w;
	struct evr_trace_reader *r;

	(void)state;
	assert_true(fd >= 0);
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	w = hand_writer(fd, 1);
	assert_int_equal(evr_trace_writer_threads(w, NULL, 1), -EINVAL);
	assert_int_equal(evr_trace_writer_threads(w, a, 0), -EINVAL);
	assert_int_equal(evr_trace_writer_threads(w, a, 3), 0);
	assert_int_equal(evr_trace_writer_threads(w, b, 2), 0);
	evr_trace_writer_free(w);
	close(fd);
	assert_int_equal(evr_trace_reader_open(path, &r, NULL, 0), 0);
	unlink(path);
	assert_string_equal(evr_trace_reader_thread_name(r, 30), "main");
	assert_string_equal(evr_trace_reader_thread_name(r, 7), "worker-renamed");
	assert_string_equal(evr_trace_reader_thread_name(r, 9), "");
	assert_int_equal(strlen(evr_trace_reader_thread_name(r, 12)), 255);
	assert_null(evr_trace_reader_thread_name(r, 8));
	assert_null(evr_trace_reader_thread_name(r, 31));
	assert_null(evr_trace_reader_thread_name(r, 0));
	evr_trace_reader_free(r);
}

/* Chunks of kinds the writer has no function for (side bands: CPU samples): readers skip them when reading events, chunk_next() returns them
 * as written, and the kinds with a function of their own are refused. */
static void test_trace_writer_chunk_other_kinds(void **state)
{
	char path[] = "/tmp/evr-test-trace-XXXXXX";
	int fd = mkostemp(path, O_CLOEXEC);
	static const char payload[] = "sync point 12345";
	struct evr_trace_writer *w;
	struct evr_trace_reader *r;
	struct evr_trace_chunk ch;
	struct evr_trace_stats st;
	struct evr_event_view v;
	uint64_t pos = 0;
	int found = 0, rc;

	(void)state;
	assert_true(fd >= 0);
	w = hand_writer(fd, 1);
	assert_int_equal(evr_trace_writer_chunk(w, EVR_CHUNK_EVENTS, payload, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, EVR_CHUNK_THREADS, payload, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, EVR_CHUNK_SYNC, payload, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, 0, payload, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, 70000, payload, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, 12, NULL, 8), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, 12, payload, EVR_TRACE_CHUNK_MAX + 1), -EINVAL);
	assert_int_equal(evr_trace_writer_chunk(w, 12, payload, sizeof(payload)), 0);
	assert_int_equal(evr_trace_writer_chunk(w, 20, NULL, 0), 0);
	assert_int_equal(evr_trace_writer_error(w), 0);
	assert_int_equal(evr_trace_writer_end(w, &(struct evr_trace_end){ 0 }), 0);
	evr_trace_writer_free(w);
	close(fd);
	assert_int_equal(evr_trace_reader_open(path, &r, NULL, 0), 0);
	unlink(path);
	while ((rc = evr_trace_reader_chunk_next(r, &pos, &ch)) == 1) {
		if (ch.kind == 12) {
			assert_int_equal(ch.len, sizeof(payload));
			assert_memory_equal(ch.data, payload, sizeof(payload));
			found++;
		} else if (ch.kind == 20) {
			assert_int_equal(ch.len, 0);
			found++;
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(found, 2);
	assert_int_equal(evr_trace_reader_next(r, &v), 0);
	evr_trace_reader_stats(r, &st);
	assert_false(st.truncated);
	evr_trace_reader_free(r);
}



/* Where direct I/O cannot be had (a memfd, a pipe), the flag changes nothing. */
static void test_trace_writer_direct_fallback(void **state)
{
	struct evr_trace_writer *w;
	int fd = memfd_create("t", MFD_CLOEXEC), p[2];
	struct stat sb;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(evr_trace_writer_new_flags(fd, 0x80, &w), -EINVAL);
	assert_int_equal(evr_trace_writer_new_flags(fd, EVR_TRACE_WRITER_DIRECT, &w), 0);
	assert_false(evr_trace_writer_direct(w));
	assert_false(fcntl(fd, F_GETFL) & O_DIRECT);
	assert_int_equal(evr_trace_writer_set_direct(w, true), -EOPNOTSUPP);
	assert_int_equal(evr_trace_writer_set_direct(w, false), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(sb.st_size, 64);
	assert_int_equal(evr_trace_writer_flush(w), 0);
	assert_int_equal(evr_trace_writer_pending(w), 0);
	assert_int_equal(evr_trace_writer_written(w), 64);
	evr_trace_writer_free(w);
	close(fd);

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	assert_int_equal(evr_trace_writer_new_flags(p[1], EVR_TRACE_WRITER_DIRECT, &w), 0);
	assert_false(evr_trace_writer_direct(w));
	evr_trace_writer_free(w);
	close(p[0]);
	close(p[1]);
}

/*
 * A file in a directory whose file system takes direct I/O (statx()'s
 * STATX_DIOALIGN), or -1: $EVR_TEST_DIO_DIR, the working directory, /var/tmp,
 * /tmp. @path gets its name (unlinked by the caller).
 */
static int dio_file(char *path, size_t len)
{
	const char *dirs[] = { getenv("EVR_TEST_DIO_DIR"), ".", "/var/tmp", "/tmp" };

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		struct statx sx;
		int fd;

		if (!dirs[i])
			continue;
		snprintf(path, len, "%s/evr-dio-XXXXXX", dirs[i]);
		fd = mkstemp(path);
		if (fd < 0)
			continue;
		if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) == 0 &&
		    (sx.stx_mask & STATX_DIOALIGN) && sx.stx_dio_offset_align)
			return fd;
		close(fd);
		unlink(path);
	}
	return -1;
}

/*
 * Direct I/O: the same sessions as test_trace_roundtrip_rings, with complete
 * packets taken whole (written in place, behind PAD chunks) among spans of a
 * few records (copied), and losses (in the rings, and final ones). The file reads back
 * exactly as a buffered one; it is a whole number of blocks, ends with END,
 * and its in-place packets start on block boundaries.
 */
static void test_trace_writer_direct(void **state)
{
	struct verify_result res;
	struct evr_trace_reader *r;
	struct evr_trace_chunk c;
	struct statx sx;
	char path[4096];
	uint64_t pos = 0, pads = 0, in_place = 0, events = 0, off_next = 0;
	uint32_t last_kind = 0, align;
	struct gen g;
	int fd, rc;

	(void)state;
	fd = dio_file(path, sizeof(path));
	if (fd < 0) {
		EVR_SKIP("no directory here takes direct I/O (set EVR_TEST_DIO_DIR)");
	}
	unlink(path);
	assert_int_equal(statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx), 0);
	align = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align :
								 sx.stx_dio_mem_align;
	assert_int_equal(gen_init_out(&g, 3, 8 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 29, fd,
				      EVR_TRACE_WRITER_DIRECT), 0);
	assert_true(evr_trace_writer_direct(g.tw));
	assert_true(fcntl(fd, F_GETFL) & O_DIRECT);
	g.whole_pct = 70;
	for (int round = 0; round < 80; round++) {
		/* Enough per round that packets complete and are taken whole. */
		three_rings_round(&g, round, 400);
		assert_int_equal(evr_trace_writer_pending(g.tw), 0);
		/* Through the page cache for a while (a disk that fell behind),
		 * then direct again from a page boundary. */
		if (round == 30) {
			assert_int_equal(evr_trace_writer_set_direct(g.tw, false), 0);
			assert_false(evr_trace_writer_direct(g.tw));
			assert_false(fcntl(fd, F_GETFL) & O_DIRECT);
		} else if (round == 50) {
			assert_int_equal(evr_trace_writer_set_direct(g.tw, true), 0);
			assert_true(evr_trace_writer_direct(g.tw));
			assert_true(fcntl(fd, F_GETFL) & O_DIRECT);
			assert_int_equal(evr_trace_writer_bytes(g.tw) % 4096, 0);
			assert_int_equal(lseek(fd, 0, SEEK_END), evr_trace_writer_bytes(g.tw));
		}
	}
	assert_int_equal(gen_finish(&g, 3), 0);
	assert_int_equal(evr_trace_writer_pending(g.tw), 0);
	assert_int_equal(lseek(fd, 0, SEEK_END) % align, 0);
	assert_true((uint64_t)lseek(fd, 0, SEEK_END) == evr_trace_writer_bytes(g.tw));

	/* Read back buffered, like any reader. */
	assert_int_equal(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_DIRECT), 0);
	verify(&g, &res);
	assert_true(res.events == g.kept && res.events > 10000);
	assert_true(res.lost == gen_expected_lost(&g));
	assert_false(res.st.truncated);
	assert_false(res.st.damaged);
	assert_true(res.st.has_end && res.st.end.events == g.kept);

	assert_int_equal(evr_trace_reader_open_fd(fd, &r, NULL, 0), 0);
	while ((rc = evr_trace_reader_chunk_next(r, &pos, &c)) == 1) {
		/* Chunks follow each other with nothing between them. */
		assert_true(off_next == 0 || c.off == off_next);
		off_next = c.off + 24 + ((c.len + 7u) & ~7u);
		last_kind = c.kind;
		if (c.kind == EVR_CHUNK_PAD) {
			pads++;
			for (uint32_t i = 0; i < c.len; i++)
				assert_int_equal(((const uint8_t *)c.data)[i], 0);
		} else if (c.kind == EVR_CHUNK_EVENTS) {
			events++;
			if (c.len == 16 + EVR_PACKET_SIZE_MIN && (c.off + 24 + 16) % align == 0)
				in_place++;
		}
	}
	assert_int_equal(rc, 0);
	assert_int_equal(last_kind, EVR_CHUNK_END);
	assert_true(off_next == evr_trace_writer_bytes(g.tw));
	print_message("direct I/O: %" PRIu64 " EVENTS chunks, %" PRIu64 " written in place, "
		      "%" PRIu64 " PAD chunks, blocks of %u bytes\n", events, in_place, pads, align);
	assert_true(in_place > 20 && in_place < events);
	assert_true(pads >= in_place);
	evr_trace_reader_free(r);
	gen_fini(&g);
}
/*
 * Write-behind's worker (write-behind.c) on a file with a disk behind it: with
 * the tests' knobs (a window of 1 MiB, dropping on whatever the windows cost) a
 * buffered 48 MiB file reads back whole and leaves at most its window, two
 * steps of 4 MiB and the chunks after the last step in the page cache
 * (mincore()) once the writer is freed (the worker finishes what it was handed).
 * Under TSan: the worker against the writer.
 */
static void test_trace_writer_behind(void **state)
{
	struct verify_result res;
	char path[4096];
	uint64_t size, resident = 0;
	unsigned char *vec;
	struct gen g;
	long pg = sysconf(_SC_PAGESIZE);
	void *map;
	int fd, rfd, round = 0;

	(void)state;
	fd = dio_file(path, sizeof(path));
	if (fd < 0) {
		EVR_SKIP("no directory here is on a disk (set EVR_TEST_DIO_DIR)");
	}
	rfd = open(path, O_RDONLY | O_CLOEXEC);
	unlink(path);
	assert_true(rfd >= 0);
	setenv("EVR_RECORDER_BEHIND_MIB", "1", 1);
	setenv("EVR_RECORDER_BEHIND_DROP", "1", 1);
	assert_int_equal(gen_init_out(&g, 3, 8 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 31, fd, 0),
			 0);
	unsetenv("EVR_RECORDER_BEHIND_MIB");
	unsetenv("EVR_RECORDER_BEHIND_DROP");
	while (evr_trace_writer_bytes(g.tw) < (48u << 20))
		three_rings_round(&g, round++, 400);
	assert_int_equal(gen_finish(&g, 3), 0);
	size = evr_trace_writer_bytes(g.tw);
	/* Freed: the worker's last steps are done. */
	evr_trace_writer_free(g.tw);
	g.tw = NULL;
	map = mmap(NULL, size, PROT_READ, MAP_SHARED, rfd, 0);
	assert_true(map != MAP_FAILED);
	vec = calloc((size + (uint64_t)pg - 1) / (uint64_t)pg, 1);
	assert_non_null(vec);
	assert_int_equal(mincore(map, size, vec), 0);
	for (uint64_t i = 0; i < (size + (uint64_t)pg - 1) / (uint64_t)pg; i++)
		resident += (vec[i] & 1) * (uint64_t)pg;
	print_message("write-behind: %" PRIu64 " of %" PRIu64 " bytes in the page cache\n",
		      resident, size);
	assert_true(resident <= (1u << 20) + (12u << 20));
	/* And the file reads back whole (reading it fills the page cache again). */
	verify(&g, &res);
	assert_true(res.events == g.kept && res.events > 100000);
	assert_true(res.st.has_end && !res.st.damaged && !res.st.truncated);
	gen_fini(&g);
	free(vec);
	munmap(map, size);
	close(rfd);
}

static void test_trace_writer_bad_args(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_writer *w;
	struct evr_trace_session s = {
		.mode = EVR_MODE_DISCARD, .packet_size = EVR_PACKET_SIZE_MIN,
		.ring_size = 4 * EVR_PACKET_SIZE_MIN, .nr_rings = 2,
		.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1},
	};
	const struct evr_trace_end e = {0};
	uint8_t data[64] = {0};

	(void)state;
	assert_int_equal(evr_trace_writer_new(-1, &w), -EINVAL);
	assert_int_equal(evr_trace_writer_new(fd, &w), 0);
	assert_int_equal(evr_trace_writer_events(w, 0, 0, data, 64), -EINVAL);	/* no session */
	assert_int_equal(evr_trace_writer_lost(w, 0, 1), -EINVAL);
	assert_int_equal(evr_trace_writer_discard_last(w), -EINVAL);
	assert_int_equal(evr_trace_writer_process(w, data, 0), -EINVAL);
	s.packet_size = 1000;
	assert_int_equal(evr_trace_writer_session(w, &s), -EINVAL);
	s.packet_size = EVR_PACKET_SIZE_MIN;
	s.clock.shift = 64;
	assert_int_equal(evr_trace_writer_session(w, &s), -EINVAL);
	s.clock.shift = 0;
	assert_int_equal(evr_trace_writer_session(w, &s), 0);
	assert_int_equal(evr_trace_writer_session(w, &s), -EINVAL);	/* a second one */
	assert_int_equal(evr_trace_writer_events(w, 2, 0, data, 64), -EINVAL);	/* ring */
	assert_int_equal(evr_trace_writer_events(w, 0, 4, data, 64), -EINVAL);	/* unaligned */
	assert_int_equal(evr_trace_writer_events(w, 0, EVR_PACKET_SIZE_MIN - 32, data, 64),
			 -EINVAL);	/* crosses a packet boundary */
	assert_int_equal(evr_trace_writer_metadata(w, NULL, 0), -EINVAL);
	assert_int_equal(evr_trace_writer_end(w, &e), 0);
	assert_int_equal(evr_trace_writer_lost(w, 0, 1), -EINVAL);	/* after END */
	assert_true(evr_trace_writer_chunks(w) == 2);
	evr_trace_writer_free(w);
	close(fd);
}

/* A full disk: nothing written at all, or a chunk cut in the middle; the
 * error is -ENOSPC, sticky, and the file reads up to its last whole chunk. */
static void test_trace_writer_enospc(void **state)
{
	int full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	char path[] = "/tmp/evr-test-trace-XXXXXX";
	struct evr_trace_stats st;
	struct evr_trace_writer *w;
	struct rlimit old, lim;
	uint64_t n, good;
	int fd, rc;
	struct gen g;

	(void)state;
	if (full >= 0) {
		assert_int_equal(evr_trace_writer_new(full, &w), -ENOSPC);
		close(full);
	}
	/* A file size limit makes write() fail with EFBIG past it, like a disk
	 * that fills up in the middle of a chunk. */
	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 9), 0);
	fd = mkostemp(path, O_CLOEXEC);
	assert_true(fd >= 0);
	unlink(path);
	evr_trace_writer_free(g.tw);
	close(g.out_fd);
	g.out_fd = fd;
	assert_int_equal(evr_trace_writer_new(fd, &g.tw), 0);
	assert_int_equal(gen_write_process(&g), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 3000;
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	{
		const struct evr_trace_session s = {
			.mode = EVR_MODE_DISCARD, .packet_size = EVR_PACKET_SIZE_MIN,
			.ring_size = 4 * EVR_PACKET_SIZE_MIN, .nr_rings = 2,
			.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1},
		};
		assert_int_equal(evr_trace_writer_session(g.tw, &s), 0);
	}
	for (int k = 0; k < 40; k++)
		gen_emit(&g, 0, 1, GEN_RID_BLOB);
	rc = gen_drain(&g, 0);
	good = evr_trace_writer_bytes(g.tw);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_DFL);
	assert_int_equal(rc, -ENOSPC);
	/* Sticky: no later chunk lands behind the partial one. */
	assert_int_equal(evr_trace_writer_lost(g.tw, 0, 5), -ENOSPC);
	assert_true(evr_trace_writer_bytes(g.tw) == good);
	count_all(fd, &rc, &n, &st);
	assert_int_equal(rc, 0);
	assert_true(st.truncated);
	assert_true(st.bytes == good);
	assert_true(st.file_size == 3000);
	gen_fini(&g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_first_use_from_threads),
		cmocka_unit_test(test_crc32c_known_values),
		cmocka_unit_test(test_crc32c_implementations_agree),
		cmocka_unit_test(test_crc32c_fix1),
		cmocka_unit_test(test_trace_roundtrip_rings),
		cmocka_unit_test(test_trace_gaps_and_final_losses),
		cmocka_unit_test(test_trace_overwrite_lapped),
		cmocka_unit_test(test_trace_reader_orders_within_ring),
		cmocka_unit_test(test_trace_reader_loss_accounting),
		cmocka_unit_test(test_trace_reader_truncated),
		cmocka_unit_test(test_trace_reader_corrupt_events_chunk),
		cmocka_unit_test(test_trace_unchecked_chunks),
		cmocka_unit_test(test_trace_reader_stream_matches_file),
		cmocka_unit_test(test_trace_reader_repairs_one_bit),
		cmocka_unit_test(test_trace_reader_salvages_metadata),
		cmocka_unit_test(test_trace_reader_missing_chunk_is_damage),
		cmocka_unit_test(test_trace_reader_skips_damaged_header),
		cmocka_unit_test(test_trace_reader_chunk_walk_matches_scan),
		cmocka_unit_test(test_trace_reader_no_end_is_truncated),
		cmocka_unit_test(test_trace_reader_not_a_trace),
		cmocka_unit_test(test_trace_reader_header_only_by_path),
		cmocka_unit_test(test_trace_thread_names),
		cmocka_unit_test(test_trace_writer_chunk_other_kinds),
		cmocka_unit_test(test_trace_writer_bad_args),
		cmocka_unit_test(test_trace_writer_direct),
		cmocka_unit_test(test_trace_writer_direct_fallback),
		cmocka_unit_test(test_trace_writer_behind),
		cmocka_unit_test(test_trace_writer_enospc),
	};

	return evr_unit_run(tests);
}
