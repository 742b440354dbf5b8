// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Writes a small trace file whose content is awkward for CTF, for tests/ctf/odd.sh:
 * field names that are TSDL keywords, start with a digit or '_', hold '-' or collide
 * after escaping; every field type; strings with NUL bytes, invalid UTF-8, quotes,
 * backslashes and control characters; bools other than 0/1; NaN and huge floats;
 * events without a schema and payloads their schema does not describe; a LOST
 * record inside a packet, a ring whose first packet says events were lost before
 * it, and a ring that only has losses.
 *   evr-ctf-mktrace FILE
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/trace.h>

#define PKT 16384u
#define MONO0 1000000000ull

struct ring_buf {
	uint8_t data[PKT];
	uint32_t len;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "evr-ctf-mktrace: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void packet_hdr(struct ring_buf *b, uint32_t ring, uint64_t ts, uint64_t lost_before)
{
	struct evr_packet_hdr h = {
		.magic = EVR_PACKET_MAGIC, .ring_index = ring, .seq = 0, .ts_begin = ts,
		.events_before = 0, .lost_before = lost_before,
	};

	memcpy(b->data, &h, sizeof(h));
	b->len = EVR_PACKET_HDR_SIZE;
}

static void record(struct ring_buf *b, uint8_t type, uint32_t id, uint64_t ts, const void *p,
		   uint32_t n)
{
	struct evr_rec_hdr h = {
		.size = (uint16_t)(EVR_REC_HDR_SIZE + n), .type = type, .event_id = id, .ts = ts,
	};

	memcpy(b->data + b->len, &h, sizeof(h));
	memcpy(b->data + b->len + sizeof(h), p, n);
	b->len += (EVR_REC_HDR_SIZE + n + 7u) & ~7u;
}

static void thread(struct ring_buf *b, uint32_t tid, uint64_t ts)
{
	struct evr_rec_thread t = { .tid = tid };

	record(b, EVR_REC_THREAD, 0, ts, &t, sizeof(t));
}

/* A payload builder. */
struct pl {
	uint8_t b[4096];
	uint32_t n;
};

static void put(struct pl *p, const void *v, uint32_t n)
{
	memcpy(p->b + p->n, v, n);
	p->n += n;
}

static void put_var(struct pl *p, const void *v, uint32_t n)
{
	put(p, &n, 4);
	put(p, v, n);
}

static const struct evr_schema_field all_fields[] = {
	{ "type", EVR_FT_U8 }, { "event", EVR_FT_U16 }, { "1st", EVR_FT_U32 },
	{ "_under", EVR_FT_U64 }, { "a-b", EVR_FT_I8 }, { "a_b", EVR_FT_I16 },
	{ "string", EVR_FT_I32 }, { "neg", EVR_FT_I64 }, { "f", EVR_FT_F32 },
	{ "d", EVR_FT_F64 }, { "ok", EVR_FT_BOOL }, { "p", EVR_FT_PTR },
	{ "s", EVR_FT_STR }, { "j", EVR_FT_JSON }, { "data", EVR_FT_BYTES },
	{ "data_len", EVR_FT_U8 },
};

static void all_types(struct pl *p, uint32_t k, const char *s, uint32_t slen)
{
	uint8_t u8 = (uint8_t)(200 + k), ok = (uint8_t)(k % 3), small = (uint8_t)k;
	uint16_t u16 = 65535;
	uint32_t u32 = 4000000000u + k;
	uint64_t u64 = 18446744073709551615ull - k, ptr = 0xdeadbeef00ull + k;
	int8_t i8 = -128;
	int16_t i16 = (int16_t)(-300 - (int)k);
	int32_t i32 = -2000000000;
	int64_t i64 = -9223372036854775807ll - 1;
	float f = k == 0 ? NAN : k == 1 ? -0.0f : 3.25f * (float)k;
	double d = k == 0 ? 1e300 : k == 1 ? -INFINITY : 1.0 / 3.0 * k;
	static const uint8_t bytes[] = { 0, 1, 0x7f, 0x80, 0xff };

	p->n = 0;
	put(p, &u8, 1);
	put(p, &u16, 2);
	put(p, &u32, 4);
	put(p, &u64, 8);
	put(p, &i8, 1);
	put(p, &i16, 2);
	put(p, &i32, 4);
	put(p, &i64, 8);
	put(p, &f, 4);
	put(p, &d, 8);
	put(p, &ok, 1);
	put(p, &ptr, 8);
	put_var(p, s, slen);
	put_var(p, "{\"k\":[1,2]}", 11);
	put_var(p, bytes, k % 6);
	put(p, &small, 1);
}

static void add_schema(struct evr_trace_meta *m, const struct evr_schema_event *ev)
{
	void *data;
	size_t len;
	int err = evr_schema_event_pack(ev, &data, &len);

	if (err < 0)
		die("pack", err);
	m->kind = EVR_META_EVENT;
	m->len = (uint32_t)len;
	m->data = data;
}

int main(int argc, char **argv)
{
#define S(x) { x, sizeof(x) - 1 }
	static const struct {
		const char *s;
		uint32_t len;
	} strs[] = {
		S("hello"), S(""), S("cut\0here"), S("bad \xff\xfe utf-8"),
		S("quote \" back \\ nl \n tab \t bel \a"), S("caf\xc3\xa9 \xe2\x82\xac"),
	};
#undef S
	static const struct evr_schema_field one_u32[] = { { "value", EVR_FT_U32 } };
	const struct evr_schema_event evs[] = {
		{ .rid = 1, .id = 1, .provider = "Odd.Prov", .name = "All Types", .level = 4,
		  .nfields = 16, .fields = all_fields },
		{ .rid = 2, .id = 2, .provider = "Odd.Prov", .name = "NoFields", .level = 5 },
		{ .rid = 3, .id = 3, .provider = "Odd.Prov", .name = "Bad\"Name", .level = 1,
		  .nfields = 1, .fields = one_u32 },
	};
	struct evr_trace_session sess = {
		.mode = EVR_MODE_DISCARD, .packet_size = PKT, .ring_size = 4 * PKT, .nr_rings = 3,
		.session_serial = 42, .start_realtime_ns = 1700000000000000000ull,
		.start_mono_ns = MONO0,
		.clock = { .kind = 0, .mult = 1, .shift = 0, .ts_base = MONO0, .mono_base = MONO0,
			   .real_base = 1700000000000000000ull, .ticks_per_sec = 1000000000ull },
		.providers = "Odd.Prov", .client = "evr-ctf-mktrace",
	};
	struct evr_trace_end end = { .flags = 0 };
	struct evr_trace_meta meta[3];
	struct evr_trace_writer *w;
	static struct ring_buf b0, b2;
	uint64_t ts = MONO0 + 1000, lost7 = 7;
	struct pl p;
	uint32_t v;
	int fd, err;

	if (argc != 2) {
		fprintf(stderr, "usage: evr-ctf-mktrace FILE\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		die(argv[1], errno);
	err = evr_trace_writer_new(fd, &w);
	if (!err)
		err = evr_trace_writer_session(w, &sess);
	for (int i = 0; i < 3; i++)
		add_schema(&meta[i], &evs[i]);
	if (!err)
		err = evr_trace_writer_metadata(w, meta, 3);
	if (err)
		die("write", err);

	/* Ring 0: every type, a loss in the middle, no schema, a bad payload. */
	packet_hdr(&b0, 0, ts, 0);
	thread(&b0, 100, ts);
	for (uint32_t k = 0; k < 6; k++) {
		all_types(&p, k, strs[k].s, strs[k].len);
		record(&b0, EVR_REC_EVENT, 1, ts += 10, p.b, p.n);
		if (k == 2)
			record(&b0, EVR_REC_LOST, 0, ts += 5, &lost7, 8);
	}
	thread(&b0, 101, ts);
	record(&b0, EVR_REC_EVENT, 2, ts += 10, "", 0);
	record(&b0, EVR_REC_EVENT, 99, ts += 10, "\x01\x02\x03", 3);	/* no schema */
	record(&b0, EVR_REC_EVENT, 3, ts += 10, "\x05\x00", 2);		/* too short */
	v = 77;
	record(&b0, EVR_REC_EVENT, 3, ts += 10, &v, 4);
	err = evr_trace_writer_events(w, 0, 0, b0.data, b0.len);

	/* Ring 2: its first packet says 3 events were lost before it. */
	packet_hdr(&b2, 2, ts + 1, 3);
	thread(&b2, 102, ts + 1);
	for (uint32_t k = 0; k < 3 && !err; k++) {
		v = k;
		record(&b2, EVR_REC_EVENT, 3, ts + 2 + k, &v, 4);
	}
	if (!err)
		err = evr_trace_writer_events(w, 2, 0, b2.data, b2.len);
	/* Ring 1: nothing but losses. */
	if (!err)
		err = evr_trace_writer_lost(w, 1, 5);
	end.events = 15;
	end.lost = 15;
	end.end_realtime_ns = sess.start_realtime_ns + 1000000;
	end.end_mono_ns = MONO0 + 1000000;
	if (!err)
		err = evr_trace_writer_end(w, &end);
	if (err)
		die("write", err);
	evr_trace_writer_free(w);
	for (int i = 0; i < 3; i++)
		free((void *)meta[i].data);
	if (close(fd) < 0)
		die("close", errno);
	return 0;
}
