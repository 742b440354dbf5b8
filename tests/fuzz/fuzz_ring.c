// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz target `ring`: a consumer reading a session's shared memory that a
 * broken or hostile producer writes. A real session memory (evr_shm_session_
 * create()) is filled by the real ring writers; the input is a program of
 * operations that write events, read them (records with evr_reader, as clrtop
 * and in-process sessions do, or spans with evr_span_reader, as the recorder
 * does), and overwrite anything the producer could: ring bytes, the rings'
 * control blocks, the header (also after the reader validated it), the
 * metadata area. Descriptions found in the metadata area are decoded and every
 * event is decoded against them, as a live consumer does.
 *
 * Input: byte 0 is the geometry of the session (a new one per input) and the reader: bits 0-1 rings - 1, bit 2
 * overwrite mode, bit 3 32 KiB packets (else 16 KiB), bit 4 eight packets per
 * ring (else four), bit 5 spans (else records), bit 6 the reader belongs to the
 * session from its start, bit 7 the reader attaches at its first read (else
 * before the first write). Then operations, one byte each and their operands
 * (see run_op()); missing operand bytes read as 0.
 *
 * Properties: nothing crashes or reads outside the mapping; after the producer
 * ends the session, the reader drains in a bounded number of calls; and when
 * nothing was corrupted and the reader saw the session from its start, every
 * event written is received or counted as lost, exactly.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <evring/consumer.h>
#include <evring/schema.h>
#include <evring/shm.h>

#include "fuzz.h"

#define MAX_RINGS 4u

struct in {
	const uint8_t *p;
	size_t n;
};

static uint8_t in_u8(struct in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static uint64_t in_uint(struct in *in, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++)
		v |= (uint64_t)in_u8(in) << (8 * i);
	return v;
}

struct run {
	struct evr_shm_hdr *hdr;
	struct evr_shm_hdr geo;		/* the header as created: the harness's own geometry */
	size_t total;
	uint32_t nr;
	bool spans, passive, from_start, lazy;
	struct evr_ring_writer w[MAX_RINGS];
	struct evr_reader *rd;
	struct evr_span_reader *sr;
	struct evr_schema_set *schemas;
	uint64_t meta_pos;
	uint64_t ts;
	uint64_t emitted;		/* events written or counted lost by the writers */
	uint64_t received, lost;	/* what the reader reported */
	bool corrupted;			/* the producer broke the protocol */
	bool reader_late;		/* the reader missed writes: no conservation */
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

/* A new session memory of the geometry byte 0 names, as a producer creates it. */
static struct evr_shm_hdr *session_new(uint8_t g)
{
	struct evr_shm_geometry sg = {
		.nr_rings = (g & 3u) + 1,
		.packet_size = (g & 8) ? 32768u : 16384u,
		.mode = (g & 4) ? EVR_MODE_OVERWRITE : EVR_MODE_DISCARD,
		.meta_size = 4096,
		.clock = { .kind = EVR_CLOCK_MONOTONIC, .mult = 1 },
	};
	struct evr_shm_hdr *h;
	int fd;

	sg.ring_size = (uint64_t)sg.packet_size * ((g & 16) ? 8u : 4u);
	fuzz_check(evr_shm_session_create(&sg, &fd, &h) == 0);
	close(fd);
	return h;
}

/* Descriptions an input's events may have: rid 1 (u64, str), 2 (none), 3 (u32 x 2). */
static void describe(struct evr_shm_hdr *h)
{
	static const struct evr_schema_field f1[] = { { "a", EVR_FT_U64 }, { "s", EVR_FT_STR } };
	static const struct evr_schema_field f3[] = { { "x", EVR_FT_U32 }, { "y", EVR_FT_U32 } };
	const struct evr_schema_event evs[] = {
		{ .rid = 1, .provider = "P", .name = "A", .nfields = 2, .fields = f1 },
		{ .rid = 2, .provider = "P", .name = "B" },
		{ .rid = 3, .provider = "Q", .name = "C", .opcode = 1, .nfields = 2, .fields = f3 },
	};

	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++) {
		void *pb;
		size_t len;

		fuzz_check(evr_schema_event_pack(&evs[i], &pb, &len) == 0);
		fuzz_check(evr_shm_meta_append(h, EVR_META_EVENT, pb, (uint32_t)len) == 0);
		free(pb);
	}
}

/* New metadata entries, as a live consumer reads them before decoding. */
static void meta_sync(struct run *r)
{
	for (int i = 0; i < 1024; i++) {
		const void *data;
		uint32_t kind, len;
		int ret = evr_shm_meta_next(r->hdr, &r->meta_pos, &kind, &data, &len);

		if (ret <= 0)
			return;
		if (kind == EVR_META_EVENT)
			(void)evr_schema_set_add_pb(r->schemas, data, len);
	}
}

static void reader_open(struct run *r)
{
	uint32_t flags = (r->passive ? 0 : EVR_READER_GATING) |
			 (r->from_start ? EVR_READER_FROM_START : 0);

	if (r->rd || r->sr)
		return;
	if (r->emitted && !r->from_start)
		r->reader_late = true;
	if (r->spans)
		fuzz_check(evr_span_reader_new(r->hdr, flags, &r->sr) == 0);
	else
		fuzz_check(evr_reader_new(r->hdr, -1, flags, &r->rd) == 0);
}

static void take_record(struct run *r, const struct evr_record *rec)
{
	struct evr_field_value vals[EVR_SCHEMA_MAX_FIELDS];
	const struct evr_schema_event *ev;

	fuzz_check(rec->ring < r->nr);
	if (rec->type == EVR_REC_LOST) {
		r->lost += rec->lost;
		return;
	}
	fuzz_check(rec->type == EVR_REC_EVENT && rec->len <= EVR_MAX_PAYLOAD);
	r->received++;
	ev = evr_schema_set_lookup(r->schemas, rec->event_id);
	if (!ev) {
		meta_sync(r);
		ev = evr_schema_set_lookup(r->schemas, rec->event_id);
	}
	if (ev && ev->nfields <= EVR_SCHEMA_MAX_FIELDS)
		(void)evr_decode_fields(ev, rec->payload, rec->len, vals);
}

/* Read up to @max records or spans. Return: how many there were. */
static uint32_t read_some(struct run *r, uint32_t max)
{
	uint32_t n = 0;

	reader_open(r);
	for (; n < max; n++) {
		if (r->rd) {
			struct evr_record rec;

			if (evr_reader_next(r->rd, &rec) != 1)
				break;
			take_record(r, &rec);
		} else {
			struct evr_shm_span sp;
			struct evr_span cs;
			uint64_t ev = 0, lo = 0;
			int ret = evr_span_reader_next(r->sr, &sp);

			if (ret != 1)
				break;
			fuzz_check(sp.ring < r->nr && sp.len > 0);
			fuzz_check((const uint8_t *)sp.data >= (const uint8_t *)r->hdr &&
				   (const uint8_t *)sp.data + sp.len <= (const uint8_t *)r->hdr + r->total);
			cs = (struct evr_span){ .ring = sp.ring, .pos = sp.pos, .data = sp.data,
						.len = sp.len };
			(void)evr_span_count(&cs, &ev, &lo);
			ret = evr_span_reader_done(r->sr, &sp);
			fuzz_check(ret == 0 || ret == -ESTALE);
			if (ret == 0) {
				r->received += sp.events;
				r->lost += sp.lost;
			}
		}
	}
	if (r->rd)
		evr_reader_release(r->rd);
	return n;
}

static void write_events(struct run *r, struct in *in)
{
	uint32_t n = in_u8(in) + 1u;
	uint64_t seed = in_uint(in, 2) * 0x9e3779b97f4a7c15ull + 1;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t payload[64];
		uint32_t ring, len, rid, tid;
		int ret;

		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		ring = (uint32_t)(seed % r->nr);
		len = (uint32_t)(seed >> 8) % sizeof(payload);
		rid = 1 + (uint32_t)(seed >> 16) % 4;	/* 4: never described */
		tid = 100 + (uint32_t)(seed >> 24) % 3;
		for (uint32_t k = 0; k < len; k++)
			payload[k] = (uint8_t)(seed >> (k % 56));
		r->ts += (seed >> 32) % 1000;
		if ((seed >> 40) % 16 == 0) {
			/* The ring was busy: dropped without taking it. */
			evr_ring_count_lost(&r->w[ring], 1 + (seed >> 44) % 3);
			r->emitted += 1 + (seed >> 44) % 3;
			continue;
		}
		ret = evr_ring_try_write(&r->w[ring], rid, r->ts, tid, payload, len);
		fuzz_check(ret == 0 || ret == -ENOSPC);
		r->emitted++;
	}
}

static void corrupt(uint8_t *base, size_t size, struct in *in, uint32_t off)
{
	uint32_t len = in_u8(in) % 64;

	for (uint32_t i = 0; i < len; i++)
		base[(off + i) % size] = in_u8(in);
}

static void run_op(struct run *r, struct in *in)
{
	uint8_t op = in_u8(in);
	uint32_t ring = in_u8(in) % r->nr;

	switch (op % 8) {
	case 0:		/* write events */
		write_events(r, in);
		break;
	case 1:		/* read */
		read_some(r, (uint32_t)in_uint(in, 2));
		break;
	case 2:		/* overwrite ring bytes */
		corrupt((uint8_t *)r->hdr + r->geo.ring_data_off + ring * r->geo.ring_size,
			r->geo.ring_size, in, (uint32_t)in_uint(in, 4));
		r->corrupted = true;
		break;
	case 3: {	/* overwrite a control block word */
		struct evr_ring_ctl *c = (struct evr_ring_ctl *)((uint8_t *)r->hdr +
			r->geo.ring_ctl_off + (uint64_t)ring * r->geo.ring_ctl_size);
		uint64_t *f[] = { &c->head, &c->tail, &c->events_total, &c->lost_total,
				  &c->lost_async_total, &c->lost_async_absorbed };
		uint8_t which = in_u8(in) % 6;


		/* Even the tail: it is the gating reader's alone to write. */
		*f[which] = in_uint(in, 8);
		r->corrupted = true;
		break;
	}
	case 4:		/* a live header word */
		switch (in_u8(in) % 4) {
		case 0: r->hdr->ended = (uint32_t)in_uint(in, 4); break;
		case 1: r->hdr->waiting = (uint32_t)in_uint(in, 4); break;
		case 2: r->hdr->meta_head = in_uint(in, 8); break;
		default: r->hdr->meta_dropped = in_uint(in, 8); break;
		}
		r->corrupted = true;
		break;
	case 5:		/* any header byte, after the reader took the geometry */
		reader_open(r);
		corrupt((uint8_t *)r->hdr, sizeof(*r->hdr), in, in_u8(in));
		r->corrupted = true;
		break;
	case 6:		/* metadata area bytes */
		corrupt((uint8_t *)r->hdr + r->geo.meta_off, r->geo.meta_size, in,
			(uint32_t)in_uint(in, 2));
		break;
	default: {	/* a metadata entry of the input's bytes */
		uint8_t buf[256];
		uint32_t kind = in_u8(in) % 3, len = in_u8(in);

		for (uint32_t i = 0; i < len; i++)
			buf[i] = in_u8(in);
		(void)evr_shm_meta_append(r->hdr, kind, buf, len);
		break;
	}
	}
}

/* The producer ends the session; the reader must then finish, and soon. */
static void finish(struct run *r, bool gone)
{
	uint64_t bound = 4 * ((uint64_t)r->nr * r->geo.ring_size / 16) + 1000;
	uint64_t calls = 0;

	for (uint32_t i = 0; i < r->nr; i++)
		evr_ring_writer_flush_locked(&r->w[i], r->ts);
	if (gone) {
		if (r->rd)
			evr_reader_producer_gone(r->rd);
		else
			evr_span_reader_producer_gone(r->sr);
	} else {
		__atomic_store_n(&r->hdr->ended, 1, __ATOMIC_RELEASE);
	}
	for (;;) {
		bool done = r->rd ? evr_reader_ended(r->rd) : evr_span_reader_drained(r->sr);

		if (done)
			break;
		fuzz_check(++calls <= bound);
		read_some(r, 1);
	}
	if (r->sr) {
		for (uint32_t i = 0; i < r->nr; i++) {
			uint64_t n = 0;

			fuzz_check(evr_span_reader_final_lost(r->sr, i, &n) == 0);
			r->lost += n;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint8_t g = in_u8(&in);
	struct run r = {
		.hdr = session_new(g),
		.spans = g & 0x20, .from_start = g & 0x40, .lazy = g & 0x80,
	};
	int ops = 0;

	memcpy(&r.geo, r.hdr, sizeof(r.geo));
	r.total = r.geo.total_size;
	r.nr = r.geo.nr_rings;
	r.passive = r.geo.mode == EVR_MODE_OVERWRITE;
	fuzz_check(evr_shm_session_validate(r.hdr, r.total) == 0);
	fuzz_check(evr_schema_set_new(&r.schemas) == 0);
	describe(r.hdr);
	for (uint32_t i = 0; i < r.nr; i++)
		evr_ring_writer_init(&r.w[i], r.hdr, i, -1);
	if (!r.lazy)
		reader_open(&r);
	while (in.n && ops++ < 256)
		run_op(&r, &in);
	reader_open(&r);
	finish(&r, size > 1 && (data[size - 1] & 1));
	if (!r.corrupted && !r.reader_late) {
		if (r.received + r.lost != r.emitted)
			fprintf(stderr, "received %llu + lost %llu != emitted %llu\n",
				(unsigned long long)r.received, (unsigned long long)r.lost,
				(unsigned long long)r.emitted);
		fuzz_check(r.received + r.lost == r.emitted);
	}
	evr_reader_free(r.rd);
	evr_span_reader_free(r.sr);
	evr_schema_set_free(r.schemas);
	evr_shm_session_unmap(r.hdr);
	return 0;
}
