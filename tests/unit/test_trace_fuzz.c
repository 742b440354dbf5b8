// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The trace reader against hostile files (run under ASan+UBSan in CI): every
 * truncation of a valid file, every single-byte corruption of it, random
 * bytes, and random files whose chunks carry correct CRCs (so the content
 * checks behind the CRCs are reached: sessions, metadata, packets, records).
 * The reader must open or refuse with -EBADMSG / -EPROTONOSUPPORT, read to the
 * end without an error, keep its order, and never crash or leak.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "trace_gen.h"
#include "trace-format.h"

struct outcome {
	int open_rc;
	int next_rc;
	uint64_t events, lost;
	struct evr_trace_stats st;
};

/* Open the trace in @fd, read every view (rendering each as JSON), check the
 * order and the view fields. */
static void read_all(int fd, struct outcome *o, bool json)
{
	struct evr_strbuf sb = {0};
	struct evr_trace_reader *r;
	struct evr_event_view v;
	uint64_t last = 0;
	char err[256];
	uint32_t nr;

	memset(o, 0, sizeof(*o));
	err[0] = '\0';
	o->open_rc = evr_trace_reader_open_fd(fd, &r, err, sizeof(err));
	if (o->open_rc) {
		assert_true(o->open_rc == -EBADMSG || o->open_rc == -EPROTONOSUPPORT);
		assert_true(err[0] != '\0' && !strchr(err, '\n'));
		return;
	}
	nr = evr_trace_reader_session(r) ? evr_trace_reader_session(r)->nr_rings : 0;
	while ((o->next_rc = evr_trace_reader_next(r, &v)) == 1) {
		assert_true(v.ts_ns >= last);
		last = v.ts_ns;
		assert_true(v.ring < nr);
		if (v.type == EVR_REC_EVENT) {
			assert_true(v.len <= EVR_MAX_PAYLOAD);
			assert_true(v.len == 0 || v.payload != NULL);
			if (v.schema)
				assert_int_equal(v.schema->rid, v.rid);
			o->events++;
		} else {
			assert_int_equal(v.type, EVR_REC_LOST);
			assert_true(v.lost > 0);
			o->lost += v.lost;
		}
		if (json) {
			sb.len = 0;
			assert_int_equal(evr_event_to_json(&v, &sb), 0);
		}
	}
	evr_trace_reader_stats(r, &o->st);
	assert_true(o->st.events == o->events);
	evr_trace_reader_free(r);
	free(sb.buf);
}

static void set_content(int fd, const uint8_t *data, size_t len)
{
	assert_int_equal(ftruncate(fd, 0), 0);
	if (len)
		assert_int_equal(pwrite(fd, data, len, 0), (ssize_t)len);
}

/* A valid file of a few KiB: small spans, so it has many chunks. */
static uint8_t *valid_file(size_t *ret_len, uint64_t *ret_kept)
{
	struct stat st;
	struct gen g;
	uint8_t *buf;

	assert_int_equal(gen_init(&g, 2, 4 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 77), 0);
	g.max_span_records = 3;
	g.omit_pct = 10;
	g.discard_pct = 5;
	for (int k = 0; k < 120; k++) {
		gen_emit(&g, (uint32_t)k % 2, 1 + (uint32_t)(k / 5 % 3),
			 k % 17 == 0 ? GEN_RID_UNDESCRIBED : 1 + (uint32_t)k % 2);
		if (k % 10 == 9) {
			/* A sync point, as the recorder takes them; one jump. */
			struct evr_trace_sync sp = {
				.ts = g.m[0].ts + (k == 59 ? 5000000 : 0),
				.mono_ns = 5000000000ull + (uint64_t)k * 1000,
				.flags = k == 59 ? EVR_SYNC_DISCONT : 0,
			};
			uint64_t heads[2] = {__atomic_load_n(&gen_ctl(&g, 0)->head, __ATOMIC_ACQUIRE),
					     __atomic_load_n(&gen_ctl(&g, 1)->head, __ATOMIC_ACQUIRE)};

			assert_int_equal(evr_trace_writer_sync(g.tw, &sp, heads), 0);
			evr_ring_count_lost(&g.w[k % 2], 2);
			g.phantom_lost += 2;
			assert_int_equal(gen_drain(&g, 0), 0);
			assert_int_equal(gen_drain(&g, 1), 0);
		}
	}
	assert_int_equal(gen_finish(&g, 3), 0);
	assert_int_equal(fstat(g.out_fd, &st), 0);
	buf = malloc((size_t)st.st_size);
	assert_non_null(buf);
	assert_int_equal(pread(g.out_fd, buf, (size_t)st.st_size, 0), st.st_size);
	*ret_len = (size_t)st.st_size;
	*ret_kept = g.kept;
	gen_fini(&g);
	return buf;
}

/* At each offset where a chunk ends in @data (so a cut there is not a
 * truncation): 1 + the kind of that chunk; 0 elsewhere. */
static uint8_t *chunk_ends(const uint8_t *data, size_t len)
{
	uint8_t *ends = calloc(len + 1, 1);
	size_t off = 64;

	assert_non_null(ends);
	ends[off] = 1;
	while (off + sizeof(struct evr_trace_chunk_hdr) <= len) {
		struct evr_trace_chunk_hdr h;

		memcpy(&h, data + off, sizeof(h));
		off += EVR_TRACE_CHUNK_HDR_SIZE + evr_align8(h.len);
		assert_true(off <= len);
		ends[off] = (uint8_t)(1 + h.kind);
	}
	return ends;
}

static void test_trace_fuzz_every_truncation(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	uint64_t kept, prev = 0;
	struct outcome o;
	size_t len;
	uint8_t *data = valid_file(&len, &kept);
	uint8_t *ends = chunk_ends(data, len);

	(void)state;
	assert_true(len > 4000);
	for (size_t cut = 0; cut <= len; cut++) {
		set_content(fd, data, cut);
		read_all(fd, &o, cut % 64 == 0);
		if (cut < 64) {
			assert_int_equal(o.open_rc, -EBADMSG);
			continue;
		}
		assert_int_equal(o.open_rc, 0);
		assert_int_equal(o.next_rc, 0);
		/* Only the whole file ends with its END chunk; any shorter prefix is
		 * truncated, cut at a chunk boundary or not. */
		assert_int_equal(o.st.truncated, cut != len);
		if (ends[cut] && cut != len)
			assert_non_null(strstr(o.st.truncated_why, "no END chunk"));
		assert_true(o.st.bytes <= cut);
		/* A longer prefix holds every chunk of a shorter one; only a DISCARD
		 * chunk takes events back. */
		if (ends[cut] != 1 + EVR_CHUNK_DISCARD)
			assert_true(o.events >= prev);
		else
			assert_true(o.events <= prev);
		prev = o.events;
		if (o.st.truncated)
			assert_true(o.st.truncated_why[0] != '\0');
	}
	assert_true(o.events == kept);
	assert_true(o.st.has_end);
	assert_true(o.st.corrupt_chunks == 0 && o.st.corrupt_packets == 0);
	free(ends);
	free(data);
	close(fd);
}

static void test_trace_fuzz_every_byte_flipped(void **state)
{
	static const uint8_t flips[] = {0x01, 0x80, 0xff, 0x10};
	int fd = memfd_create("t", MFD_CLOEXEC);
	unsigned opened = 0, refused = 0, damaged = 0, repaired = 0, misplaced = 0;
	uint64_t kept;
	struct outcome o;
	size_t len;
	uint8_t *data = valid_file(&len, &kept);

	(void)state;
	for (size_t i = 0; i < len; i++) {
		uint8_t save = data[i], flip = flips[i % sizeof(flips)];

		data[i] ^= flip;
		set_content(fd, data, len);
		read_all(fd, &o, i % 16 == 0);
		data[i] = save;
		if (o.open_rc) {
			/* Only a file header damaged beyond repair is refused. */
			assert_true(flip == 0xff && i < 64);
			refused++;
			continue;
		}
		opened++;
		assert_int_equal(o.next_rc, 0);
		if (flip != 0xff) {
			/*
			 * One bit: repaired from the CRC it fails, so the file reads as
			 * written (or it was padding, which no CRC covers). Except a ring
			 * number flipped into another ring's exact continuation, which the
			 * scan cannot tell from a real one: that chunk is skipped when read
			 * and counted corrupt (its events lost, not silently).
			 */
			assert_false(o.st.truncated);
			if (o.events != kept) {
				assert_int_equal(o.st.corrupt_chunks, 1);
				assert_true(o.events + o.lost >= kept);
				misplaced++;
			}
			repaired += o.st.repaired_chunks > 0;
			if (o.st.repaired_chunks)
				assert_true(o.st.damaged);
			continue;
		}
		/* Eight bits: never unnoticed unless in padding. */
		if (o.st.truncated || o.st.damaged)
			damaged++;
		else
			assert_true(o.events == kept);
	}
	assert_true(opened > 0 && refused > 0 && damaged > 0 && repaired > 0);
	assert_true(misplaced * 100 < repaired);
	free(data);
	close(fd);
}

/* @len bytes of @data as a pipe (they fit in its buffer): read as a stream. */
static int pipe_content(const uint8_t *data, size_t len)
{
	int p[2];

	assert_int_equal(pipe(p), 0);
	assert_true(len < 65536);
	if (len)
		assert_int_equal(write(p[1], data, len), (ssize_t)len);
	close(p[1]);
	return p[0];
}

/*
 * The same cuts and flips through a pipe (read front to back, once): a cut
 * stream reads exactly what the cut file reads, one flipped bit is repaired
 * as in a file, and worse damage ends the stream cleanly (a stream cannot
 * be searched for the next chunk), never with an error or out of order.
 */
static void test_trace_fuzz_streams(void **state)
{
	static const uint8_t flips[] = {0x01, 0x80, 0xff, 0x10};
	int fd = memfd_create("t", MFD_CLOEXEC), pfd;
	struct outcome f, o;
	uint64_t kept;
	size_t len;
	uint8_t *data = valid_file(&len, &kept);

	(void)state;
	for (size_t cut = 0; cut <= len; cut += 1 + cut % 37) {
		set_content(fd, data, cut);
		read_all(fd, &f, false);
		pfd = pipe_content(data, cut);
		read_all(pfd, &o, cut % 64 == 0);
		close(pfd);
		assert_int_equal(o.open_rc, f.open_rc);
		if (o.open_rc)
			continue;
		assert_int_equal(o.next_rc, 0);
		assert_true(o.st.stream);
		assert_true(o.events == f.events && o.lost == f.lost);
		assert_int_equal(o.st.truncated, f.st.truncated);
	}
	for (size_t i = 0; i < len; i += 1 + i % 11) {
		uint8_t save = data[i], flip = flips[i % sizeof(flips)];

		data[i] ^= flip;
		pfd = pipe_content(data, len);
		read_all(pfd, &o, false);
		close(pfd);
		data[i] = save;
		if (o.open_rc)
			continue;
		assert_int_equal(o.next_rc, 0);
		if (flip != 0xff && !o.st.corrupt_chunks)
			assert_true(o.events == kept && !o.st.truncated);
	}
	free(data);
	close(fd);
}

static void test_trace_fuzz_random_bytes(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	uint64_t s = 4242;
	struct outcome o;
	uint8_t buf[4096];

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = gen_rnd(&s) % sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)gen_rnd(&s);
		if (len >= 64 && iter % 2) {
			/* A valid file header, random chunks behind it. */
			struct evr_trace_file_hdr fh = {.version = EVR_TRACE_VERSION_ONE, .hdr_size = 64,
							.abi_version = EVR_ABI_VERSION};

			memcpy(fh.magic, EVR_TRACE_MAGIC, 8);
			fh.crc = evr_crc32c(0, &fh, 60);
			memcpy(buf, &fh, 64);
		}
		set_content(fd, buf, len);
		read_all(fd, &o, true);
		if (o.open_rc == 0)
			assert_int_equal(o.next_rc, 0);
	}
	close(fd);
}

/* ---- random files with correct CRCs --------------------------------------- */

struct fbuf {
	uint8_t *b;
	size_t n, cap;
	uint32_t seq;
	uint64_t last_events;
};

static void fb_put(struct fbuf *f, const void *p, size_t n)
{
	if (f->n + n > f->cap) {
		f->cap = (f->n + n) * 2;
		f->b = realloc(f->b, f->cap);
		assert_non_null(f->b);
	}
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void fb_chunk(struct fbuf *f, uint32_t kind, const void *p, uint32_t len)
{
	struct evr_trace_chunk_hdr h = {.magic = EVR_TRACE_CHUNK_MAGIC, .kind = (uint16_t)kind,
					.len = len, .seq = f->seq++};
	static const uint8_t zero[8];

	h.data_crc = evr_crc32c(0, p, len);
	h.hdr_crc = evr_crc32c(0, &h, 20);
	if (kind == EVR_CHUNK_EVENTS)
		f->last_events = f->n;
	fb_put(f, &h, sizeof(h));
	fb_put(f, p, len);
	fb_put(f, zero, evr_align8(len) - len);
}

static uint32_t rnd_between(uint64_t *s, uint32_t lo, uint32_t hi)
{
	return lo + (uint32_t)(gen_rnd(s) % (hi - lo + 1));
}

/* Random records, plausible enough to get past the first checks often. */
static uint32_t random_records(uint64_t *s, uint8_t *p, uint32_t room, uint32_t ring, uint64_t pos)
{
	uint32_t n = 0;

	if ((pos & (EVR_PACKET_SIZE_MIN - 1)) == 0 && room >= EVR_PACKET_HDR_SIZE) {
		struct evr_packet_hdr h = {
			.magic = gen_rnd(s) % 8 ? EVR_PACKET_MAGIC : (uint32_t)gen_rnd(s),
			.ring_index = gen_rnd(s) % 8 ? ring : (uint32_t)gen_rnd(s) % 4,
			.seq = gen_rnd(s) % 8 ? pos / EVR_PACKET_SIZE_MIN : gen_rnd(s) % 4,
			.ts_begin = gen_rnd(s) % 1000,
			.events_before = gen_rnd(s) % 4 ? gen_rnd(s) % 50 : gen_rnd(s),
			.lost_before = gen_rnd(s) % 4 ? gen_rnd(s) % 50 : gen_rnd(s),
		};
		memcpy(p, &h, sizeof(h));
		n = sizeof(h);
	}
	while (n + 8 <= room && gen_rnd(s) % 16) {
		static const uint8_t types[] = {EVR_REC_EVENT, EVR_REC_EVENT, EVR_REC_THREAD,
						EVR_REC_LOST, EVR_REC_END, 0, 7};
		uint32_t type = types[gen_rnd(s) % sizeof(types)];
		uint32_t size = gen_rnd(s) % 8 ? rnd_between(s, 16, 120) : (uint32_t)gen_rnd(s) % 65536;
		uint32_t asize = (uint32_t)evr_align8(size);
		struct evr_rec_hdr h = {.size = (uint16_t)size, .type = (uint8_t)type,
					.event_id = rnd_between(s, 0, 12),
					.ts = gen_rnd(s) % 4 ? gen_rnd(s) % 2000 : gen_rnd(s)};

		if (n + asize > room || asize < 16) {
			memcpy(p + n, &h, 8);	/* a record cut by the chunk's end */
			n += 8;
			break;
		}
		memset(p + n, 0, asize);
		memcpy(p + n, &h, sizeof(h));
		for (uint32_t i = 16; i < size; i++)
			p[n + i] = (uint8_t)(gen_rnd(s) % 4 ? gen_rnd(s) % 3 : gen_rnd(s));
		n += asize;
	}
	return n;
}

static void random_metadata(uint64_t *s, struct fbuf *f)
{
	uint8_t p[2048];
	uint32_t n = 0, cnt = rnd_between(s, 1, 4);

	for (uint32_t k = 0; k < cnt; k++) {
		struct evr_schema_field fl[4];
		struct evr_schema_event ev = {.rid = rnd_between(s, 0, 12), .provider = "R",
					      .name = "E", .fields = fl};
		struct evr_meta_entry e = {.kind = gen_rnd(s) % 8 ? EVR_META_EVENT : 77};
		void *pb;
		size_t len;

		ev.nfields = rnd_between(s, 0, 4);
		for (uint32_t i = 0; i < ev.nfields; i++) {
			fl[i].name = "f";
			fl[i].type = rnd_between(s, 1, EVR_FT_MAX_ - 1);
		}
		assert_int_equal(evr_schema_event_pack(&ev, &pb, &len), 0);
		if (gen_rnd(s) % 4 == 0 && len)
			((uint8_t *)pb)[gen_rnd(s) % len] ^= (uint8_t)gen_rnd(s);
		e.size = (uint32_t)len;
		if (gen_rnd(s) % 32 == 0)
			e.size = (uint32_t)gen_rnd(s);	/* overruns the chunk */
		memcpy(p + n, &e, sizeof(e));
		memcpy(p + n + 8, pb, len);
		memset(p + n + 8 + len, 0, evr_align8(len) - len);
		n += 8 + (uint32_t)evr_align8(len);
		free(pb);
	}
	fb_chunk(f, EVR_CHUNK_METADATA, p, n);
}

static void random_session(uint64_t *s, struct fbuf *f)
{
	uint8_t p[256];
	struct evr_trace_session_rec rec = {
		.mode = gen_rnd(s) % 16 ? (uint32_t)gen_rnd(s) % 2 : 2,
		.packet_size = gen_rnd(s) % 8 ? EVR_PACKET_SIZE_MIN : (uint32_t)gen_rnd(s),
		.ring_size = gen_rnd(s) % 8 ? 4 * EVR_PACKET_SIZE_MIN : gen_rnd(s),
		.nr_rings = gen_rnd(s) % 8 ? rnd_between(s, 2, 3) : (uint32_t)gen_rnd(s),
		.clock = {.kind = gen_rnd(s) % 16 ? (uint32_t)gen_rnd(s) % 2 : 2,
			  .shift = gen_rnd(s) % 16 ? (uint32_t)gen_rnd(s) % 64 : 64,
			  .mult = gen_rnd(s), .ts_base = gen_rnd(s), .mono_base = gen_rnd(s)},
		.providers_len = rnd_between(s, 0, 20),
		.client_len = rnd_between(s, 0, 20),
	};
	uint32_t len = sizeof(rec) + rec.providers_len + rec.client_len;

	if (gen_rnd(s) % 32 == 0)
		rec.client_len++;	/* does not add up */
	memcpy(p, &rec, sizeof(rec));
	for (uint32_t i = sizeof(rec); i < len; i++)
		p[i] = (uint8_t)gen_rnd(s);
	fb_chunk(f, EVR_CHUNK_SESSION, p, len);
}

static void random_chunk(uint64_t *s, struct fbuf *f)
{
	static uint8_t p[EVR_PACKET_SIZE_MIN + 64];
	uint32_t r = (uint32_t)(gen_rnd(s) % 100), kind;

	/* Mostly events; the kinds a file has once (session, end) rarely. */
	kind = r < 65 ? EVR_CHUNK_EVENTS : r < 72 ? EVR_CHUNK_METADATA : r < 78 ? EVR_CHUNK_LOST :
	       r < 84 ? EVR_CHUNK_DISCARD : r < 87 ? EVR_CHUNK_END : r < 92 ? EVR_CHUNK_PROCESS :
	       r < 95 ? rnd_between(s, 8, 40) : r < 97 ? EVR_CHUNK_SYNC : r < 98 ? EVR_CHUNK_SESSION :
	       rnd_between(s, 1, 9);

	switch (kind) {
	case EVR_CHUNK_SESSION:
		random_session(s, f);
		return;
	case EVR_CHUNK_METADATA:
		random_metadata(s, f);
		return;
	case EVR_CHUNK_EVENTS: {
		struct evr_trace_events_rec rec = {
			.ring = gen_rnd(s) % 64 ? rnd_between(s, 0, 1) : (uint32_t)gen_rnd(s),
			.pos = (uint64_t)rnd_between(s, 0, 5) * EVR_PACKET_SIZE_MIN +
			       (gen_rnd(s) % 2 ? 0 : 8 * (gen_rnd(s) % 100)),
		};
		uint32_t room = gen_rnd(s) % 4 ? rnd_between(s, 8, 600) : EVR_PACKET_SIZE_MIN;
		uint32_t n;

		if ((rec.pos & (EVR_PACKET_SIZE_MIN - 1)) + room > EVR_PACKET_SIZE_MIN)
			room = EVR_PACKET_SIZE_MIN - (uint32_t)(rec.pos & (EVR_PACKET_SIZE_MIN - 1));
		n = random_records(s, p + sizeof(rec), room, rec.ring, rec.pos);
		if (gen_rnd(s) % 64 == 0)
			rec.pos += 4;	/* unaligned */
		memcpy(p, &rec, sizeof(rec));
		fb_chunk(f, kind, p, (uint32_t)sizeof(rec) + (n ? n : 8));
		return;
	}
	case EVR_CHUNK_SYNC: {
		/* Points mostly in order, heads mostly growing, some jumps; the
		 * session has 2 or 3 rings (or a random number). */
		static uint64_t ts = 1000, mono = 5000000000ull, head;
		struct evr_trace_sync sp = {
			.ts = gen_rnd(s) % 8 ? (ts += gen_rnd(s) % 100000) : gen_rnd(s),
			.mono_ns = gen_rnd(s) % 8 ? (mono += gen_rnd(s) % 100000) : gen_rnd(s),
			.flags = gen_rnd(s) % 4 ? 0 : (uint32_t)gen_rnd(s) % 8,
		};
		uint32_t n = gen_rnd(s) % 8 ? rnd_between(s, 2, 3) : rnd_between(s, 0, 5);

		memcpy(p, &sp, sizeof(sp));
		for (uint32_t i = 0; i < n; i++) {
			uint64_t h = gen_rnd(s) % 8 ? (head += 8 * (gen_rnd(s) % 200)) : gen_rnd(s);

			memcpy(p + sizeof(sp) + 8 * i, &h, 8);
		}
		fb_chunk(f, kind, p, (uint32_t)sizeof(sp) + 8 * n);
		return;
	}
	case EVR_CHUNK_DISCARD: {
		struct evr_trace_discard_rec rec = {
			.chunk_off = gen_rnd(s) % 32 ? f->last_events : gen_rnd(s) % 4096};

		fb_chunk(f, kind, &rec, sizeof(rec));
		return;
	}
	case EVR_CHUNK_LOST: {
		struct evr_trace_lost_rec rec = {.ring = gen_rnd(s) % 8 ? rnd_between(s, 0, 1) : 9,
						 .count = gen_rnd(s) % 4 ? gen_rnd(s) % 100 : gen_rnd(s)};

		fb_chunk(f, kind, &rec, sizeof(rec));
		return;
	}
	case EVR_CHUNK_PROCESS:
		if (gen_rnd(s) % 2) {
			Evr__ProcessInfo pi = EVR__PROCESS_INFO__INIT;
			char *argv[] = {"a", "b"};

			pi.pid = (uint32_t)gen_rnd(s);
			pi.n_argv = gen_rnd(s) % 3;
			pi.argv = argv;
			pi.hostname = gen_rnd(s) % 2 ? "h" : NULL;
			fb_chunk(f, kind, p, (uint32_t)evr__process_info__pack(&pi, p));
			return;
		}
		__attribute__((fallthrough));	/* random bytes */
	default: {
		uint32_t len = kind == EVR_CHUNK_END ? sizeof(struct evr_trace_end_rec) :
			       rnd_between(s, 1, 300);

		for (uint32_t i = 0; i < len; i++)
			p[i] = (uint8_t)gen_rnd(s);
		fb_chunk(f, kind, p, len);
		return;
	}
	}
}

static void test_trace_fuzz_random_valid_crc_chunks(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	unsigned opened = 0, with_events = 0;
	uint64_t s = 31337;
	struct outcome o;

	(void)state;
	for (int iter = 0; iter < 3000; iter++) {
		struct evr_trace_file_hdr fh = {.version = EVR_TRACE_VERSION_ONE, .hdr_size = 64,
						.abi_version = EVR_ABI_VERSION};
		struct fbuf f = {0};
		uint32_t nchunks = rnd_between(&s, 0, 25);

		memcpy(fh.magic, EVR_TRACE_MAGIC, 8);
		fh.crc = evr_crc32c(0, &fh, 60);
		fb_put(&f, &fh, sizeof(fh));
		/* Mostly start like a real file: a session and metadata first. */
		if (gen_rnd(&s) % 8)
			random_session(&s, &f);
		if (gen_rnd(&s) % 4)
			random_metadata(&s, &f);
		for (uint32_t k = 0; k < nchunks; k++)
			random_chunk(&s, &f);
		set_content(fd, f.b, f.n);
		read_all(fd, &o, true);
		free(f.b);
		if (o.open_rc == 0) {
			opened++;
			assert_int_equal(o.next_rc, 0);
			with_events += o.events > 0;
		}
	}
	print_message("%u of 3000 opened, %u with events\n", opened, with_events);
	/* The generator must reach the deep paths, not just be refused. */
	assert_true(opened > 300);
	assert_true(with_events > 100);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_fuzz_every_truncation),
		cmocka_unit_test(test_trace_fuzz_every_byte_flipped),
		cmocka_unit_test(test_trace_fuzz_streams),
		cmocka_unit_test(test_trace_fuzz_random_bytes),
		cmocka_unit_test(test_trace_fuzz_random_valid_crc_chunks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
