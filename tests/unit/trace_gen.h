/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Test helper for test_trace and test_trace_fuzz: produce a trace file the way
 * `evring record` does, from a real sealed session memfd written by the real
 * ring writer, and keep a model of what a reader must return.
 *
 * The "recorder" cuts each ring's published bytes into spans (whole records,
 * inside one packet, random lengths) and stores them with the trace writer.
 * To exercise loss accounting it can also skip spans (a lapped recorder) or
 * write them and retract them with a DISCARD chunk (a stale span). The model
 * follows the reader's documented rules: which events are in the file, which
 * thread each is attributed to (0 after a gap inside a packet, until the next
 * THREAD record), and the conservation law emitted == received + lost.
 */
#ifndef EVR_TEST_TRACE_GEN_H
#define EVR_TEST_TRACE_GEN_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <evring/evring.pb-c.h>
#include <evring/ring.h>
#include <evring/schema.h>
#include <evring/shm.h>
#include <evring/trace.h>

#define GEN_RID_TICK	1u	/* seq u64, tid u32 */
#define GEN_RID_MSG	2u	/* seq u64, tid u32, text str */
#define GEN_RID_BLOB	3u	/* seq u64, tid u32, data bytes */
#define GEN_RID_UNDESCRIBED 9u	/* no description in the file */

struct gen_event {
	uint32_t ring;
	uint32_t tid;		/* the writing thread */
	uint32_t exp_tid;	/* what the reader must say */
	uint32_t rid;
	uint64_t ts_raw;
	uint8_t written;	/* the ring writer accepted it */
	uint8_t kept;		/* it is in a chunk the reader will read */
	uint8_t seen;
};

struct gen_ring_model {
	uint64_t tail;		/* recorder position */
	uint64_t expect;	/* where a contiguous next span starts */
	uint32_t tid;		/* thread the reader attributes the next event to */
	uint64_t ts;		/* last raw timestamp written */
};

struct gen {
	int shm_fd;
	struct evr_shm_hdr *hdr;
	struct evr_ring_writer *w;
	uint32_t nr;
	int out_fd;
	struct evr_trace_writer *tw;
	struct gen_ring_model *m;
	struct gen_event *ev;
	uint64_t nev, cap;
	uint64_t phantom_lost;	/* counted with evr_ring_count_lost() */
	uint64_t final_lost;	/* stored in LOST chunks */
	uint64_t kept;
	uint64_t rng;
	uint32_t max_span_records;
	int omit_pct, discard_pct;	/* fate of each span, in percent */
	int whole_pct;			/* odds of taking a complete packet whole */
	struct evr_clock_calib clock;
};

static inline uint64_t gen_rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

static inline uint32_t gen_blob_len(uint64_t seq)
{
	return (uint32_t)((seq * 37) % 700);
}

/* The payload of event @seq; returns its length. */
static inline uint32_t gen_payload(uint64_t seq, uint32_t rid, uint32_t tid, uint8_t *buf)
{
	uint32_t n = 0, len;

	memcpy(buf, &seq, 8);
	memcpy(buf + 8, &tid, 4);
	n = 12;
	if (rid == GEN_RID_MSG) {
		char text[32];

		len = (uint32_t)snprintf(text, sizeof(text), "msg-%llu", (unsigned long long)seq);
		memcpy(buf + n, &len, 4);
		memcpy(buf + n + 4, text, len);
		n += 4 + len;
	} else if (rid == GEN_RID_BLOB) {
		len = gen_blob_len(seq);
		memcpy(buf + n, &len, 4);
		for (uint32_t i = 0; i < len; i++)
			buf[n + 4 + i] = (uint8_t)(seq + i * 7);
		n += 4 + len;
	} else if (rid == GEN_RID_UNDESCRIBED) {
		buf[n++] = 0xee;
	}
	return n;
}

static inline int gen_write_meta(struct gen *g)
{
	static const struct evr_schema_field tick[] = {{"seq", EVR_FT_U64}, {"tid", EVR_FT_U32}};
	static const struct evr_schema_field msg[] = {
		{"seq", EVR_FT_U64}, {"tid", EVR_FT_U32}, {"text", EVR_FT_STR}};
	static const struct evr_schema_field blob[] = {
		{"seq", EVR_FT_U64}, {"tid", EVR_FT_U32}, {"data", EVR_FT_BYTES}};
	const struct evr_schema_event evs[3] = {
		{.rid = GEN_RID_TICK, .id = 1, .provider = "Gen", .name = "Tick", .nfields = 2,
		 .fields = tick},
		{.rid = GEN_RID_MSG, .id = 2, .provider = "Gen", .name = "Msg", .nfields = 3,
		 .fields = msg},
		{.rid = GEN_RID_BLOB, .id = 3, .provider = "Gen", .name = "Blob", .nfields = 3,
		 .fields = blob},
	};
	struct evr_trace_meta meta[3];
	void *data[3] = {0};
	int err = 0;

	for (int i = 0; i < 3 && !err; i++) {
		size_t len;

		err = evr_schema_event_pack(&evs[i], &data[i], &len);
		meta[i] = (struct evr_trace_meta){.kind = EVR_META_EVENT, .len = (uint32_t)len,
						  .data = data[i]};
	}
	if (!err)
		err = evr_trace_writer_metadata(g->tw, meta, 3);
	for (int i = 0; i < 3; i++)
		free(data[i]);
	return err;
}

static inline int gen_write_process(struct gen *g)
{
	Evr__ProcessInfo pi = EVR__PROCESS_INFO__INIT;
	Evr__ClockCalib cc = EVR__CLOCK_CALIB__INIT;
	char *argv[] = {"./workload", "--rate", "100"};
	uint8_t buf[512];
	size_t len;

	pi.pid = 4242;
	pi.has_ppid = true;
	pi.ppid = 1;
	pi.n_argv = 3;
	pi.argv = argv;
	pi.exe = "/usr/bin/workload";
	pi.hostname = "testhost";
	pi.evring_version = "0.1.0";
	pi.has_nr_cpus = true;
	pi.nr_cpus = g->nr;
	cc.kind = g->clock.kind;
	cc.shift = g->clock.shift;
	cc.mult = g->clock.mult;
	cc.ts_base = g->clock.ts_base;
	cc.mono_base = g->clock.mono_base;
	cc.real_base = g->clock.real_base;
	pi.clock = &cc;
	len = evr__process_info__get_packed_size(&pi);
	if (len > sizeof(buf))
		return -1;
	evr__process_info__pack(&pi, buf);
	return evr_trace_writer_process(g->tw, buf, len);
}

/*
 * A session of @nr rings, 16 KiB packets, @ring_size bytes per ring, stored on
 * @out_fd (-1: a memfd) by a writer made with @wflags (evr_trace_writer_new_flags()).
 */
static inline int gen_init_out(struct gen *g, uint32_t nr, uint64_t ring_size, uint32_t mode,
			       uint64_t seed, int out_fd, uint32_t wflags)
{
	struct evr_shm_geometry geo = {
		.nr_rings = nr, .packet_size = EVR_PACKET_SIZE_MIN, .ring_size = ring_size,
		.mode = mode, .session_id = 3, .session_serial = 17,
		/* A TSC-like clock, so conversion is visible: 1.5 ns per tick. */
		.clock = {.kind = EVR_CLOCK_TSC, .shift = 1, .mult = 3, .ts_base = 1000,
			  .mono_base = 5000000000ull, .real_base = 1700000000000000000ull,
			  .ticks_per_sec = 666666666},
	};
	struct evr_trace_session s = {
		.mode = mode, .packet_size = EVR_PACKET_SIZE_MIN, .ring_size = ring_size,
		.nr_rings = nr, .session_id = 3, .session_serial = 17,
		.start_realtime_ns = 1700000000000000000ull, .start_mono_ns = 5000000000ull,
		.clock = geo.clock, .providers = "Gen:0x1:5", .client = "test_trace",
	};
	int err;

	memset(g, 0, sizeof(*g));
	g->rng = seed;
	g->clock = geo.clock;
	g->nr = nr;
	g->max_span_records = 6;
	if (evr_shm_session_create(&geo, &g->shm_fd, &g->hdr))
		return -1;
	g->w = aligned_alloc(EVR_CACHELINE, sizeof(*g->w) * nr);
	g->m = calloc(nr, sizeof(*g->m));
	if (!g->w || !g->m)
		return -1;
	for (uint32_t i = 0; i < nr; i++) {
		evr_ring_writer_init(&g->w[i], g->hdr, i, -1);
		g->m[i].ts = 1000;
	}
	g->out_fd = out_fd >= 0 ? out_fd : memfd_create("trace", MFD_CLOEXEC);
	if (g->out_fd < 0)
		return -1;
	err = evr_trace_writer_new_flags(g->out_fd, wflags, &g->tw);
	if (!err)
		err = gen_write_process(g);
	if (!err)
		err = evr_trace_writer_session(g->tw, &s);
	if (!err)
		err = gen_write_meta(g);
	return err;
}

static inline int gen_init(struct gen *g, uint32_t nr, uint64_t ring_size, uint32_t mode,
			   uint64_t seed)
{
	return gen_init_out(g, nr, ring_size, mode, seed, -1, 0);
}

static inline void gen_fini(struct gen *g)
{
	evr_trace_writer_free(g->tw);
	if (g->out_fd >= 0)
		close(g->out_fd);
	free(g->w);
	free(g->m);
	free(g->ev);
	evr_shm_session_unmap(g->hdr);
	close(g->shm_fd);
}

/* Emit one event on @ring from thread @tid. */
static inline void gen_emit(struct gen *g, uint32_t ring, uint32_t tid, uint32_t rid)
{
	uint8_t buf[1024];
	struct gen_event *e;
	uint64_t seq = g->nev;
	uint32_t len;

	if (g->nev == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 4096;
		g->ev = realloc(g->ev, sizeof(*g->ev) * g->cap);
		if (!g->ev)
			abort();
	}
	e = &g->ev[g->nev++];
	memset(e, 0, sizeof(*e));
	g->m[ring].ts += 1 + gen_rnd(&g->rng) % 50;
	e->ring = ring;
	e->tid = tid;
	e->rid = rid;
	e->ts_raw = g->m[ring].ts;
	len = gen_payload(seq, rid, tid, buf);
	e->written = evr_ring_write_locked(&g->w[ring], rid, e->ts_raw, tid, buf, len) == 0;
}

static inline struct evr_ring_ctl *gen_ctl(struct gen *g, uint32_t ring)
{
	return (struct evr_ring_ctl *)((uint8_t *)g->hdr + g->hdr->ring_ctl_off +
				       (uint64_t)ring * EVR_RING_CTL_SIZE);
}

static inline const uint8_t *gen_ring_data(struct gen *g, uint32_t ring)
{
	return (const uint8_t *)g->hdr + g->hdr->ring_data_off + (uint64_t)ring * g->hdr->ring_size;
}

/* Size in the ring of the record (or packet header) at @pos. */
static inline uint32_t gen_rec_size(struct gen *g, uint32_t ring, uint64_t pos)
{
	const uint32_t psize = g->hdr->packet_size;
	const uint8_t *p = gen_ring_data(g, ring) + (pos & (g->hdr->ring_size - 1));
	struct evr_rec_hdr h;

	if ((pos & (psize - 1)) == 0)
		return EVR_PACKET_HDR_SIZE;
	memcpy(&h, p, 8);
	if (h.type == EVR_REC_END)
		return psize - (uint32_t)(pos & (psize - 1));
	return (uint32_t)evr_align8(h.size);
}

/* The model's view of a span the reader will read. */
static inline void gen_model_kept(struct gen *g, uint32_t ring, uint64_t start, uint64_t end)
{
	const uint32_t psize = g->hdr->packet_size;
	struct gen_ring_model *m = &g->m[ring];
	const uint8_t *data = gen_ring_data(g, ring);

	if ((start & (psize - 1)) && start != m->expect)
		m->tid = 0;
	for (uint64_t pos = start; pos < end; pos += gen_rec_size(g, ring, pos)) {
		const uint8_t *p = data + (pos & (g->hdr->ring_size - 1));
		struct evr_rec_hdr h;

		if ((pos & (psize - 1)) == 0) {
			m->tid = 0;
			continue;
		}
		/* Its first 8 bytes only: an END record may be just those, the last
		 * 8 bytes of the mapping (which ends at the last ring's end). */
		memset(&h, 0, sizeof(h));
		memcpy(&h, p, 8);
		if (h.type == EVR_REC_THREAD) {
			memcpy(&m->tid, p + EVR_REC_HDR_SIZE, 4);
		} else if (h.type == EVR_REC_EVENT) {
			uint64_t seq;

			memcpy(&seq, p + EVR_REC_HDR_SIZE, 8);
			if (seq < g->nev) {
				g->ev[seq].kept = 1;
				g->ev[seq].exp_tid = m->tid;
				g->kept++;
			}
		}
	}
	m->expect = end;
}

/*
 * The recorder: store everything published on @ring as spans of 1 to
 * max_span_records records, each kept, skipped or retracted by the fates'
 * odds, then hand the space back to the writer.
 */
static inline int gen_drain(struct gen *g, uint32_t ring)
{
	const uint32_t psize = g->hdr->packet_size;
	struct evr_ring_ctl *ctl = gen_ctl(g, ring);
	uint64_t head = __atomic_load_n(&ctl->head, __ATOMIC_ACQUIRE);
	struct gen_ring_model *m = &g->m[ring];
	const uint8_t *data = gen_ring_data(g, ring);
	int err;

	while (m->tail < head) {
		uint64_t start = m->tail, pend = (start | (psize - 1)) + 1;
		uint64_t end = start;
		uint32_t want = 1 + (uint32_t)(gen_rnd(&g->rng) % g->max_span_records);
		int fate = (int)(gen_rnd(&g->rng) % 100);

		/* A whole packet, as `evring record` takes them once complete. */
		if (g->whole_pct && (start & (psize - 1)) == 0 && head >= pend &&
		    (int)(gen_rnd(&g->rng) % 100) < g->whole_pct)
			want = UINT32_MAX;

		for (uint32_t k = 0; k < want && end < head && end < pend; k++)
			end += gen_rec_size(g, ring, end);
		if (end > head)
			return -1;	/* a record past head: the walker is wrong */
		if (fate >= g->omit_pct) {
			err = evr_trace_writer_events(g->tw, ring, start,
						      data + (start & (g->hdr->ring_size - 1)),
						      (uint32_t)(end - start));
			if (err)
				return err;
			if (fate < g->omit_pct + g->discard_pct) {
				err = evr_trace_writer_discard_last(g->tw);
				if (err)
					return err;
			} else {
				gen_model_kept(g, ring, start, end);
			}
		}
		m->tail = end;
	}
	/* A direct I/O writer still refers to the ring's bytes: write them first. */
	err = evr_trace_writer_flush(g->tw);
	if (err)
		return err;
	/* Pairs with the writer's load-acquire of tail. */
	__atomic_store_n(&ctl->tail, m->tail, __ATOMIC_RELEASE);
	return 0;
}

/* Overwrite mode: the recorder was lapped; resume at the oldest intact packet. */
static inline void gen_skip_to_intact(struct gen *g, uint32_t ring)
{
	const uint64_t psize = g->hdr->packet_size;
	uint64_t head = __atomic_load_n(&gen_ctl(g, ring)->head, __ATOMIC_ACQUIRE);
	uint64_t margin = g->hdr->ring_size - psize;

	if (head > margin && head - margin > g->m[ring].tail)
		g->m[ring].tail = (head - margin + psize - 1) & ~(psize - 1);
}

/* Flush pending losses, drain, store @final_lost per ring, END. */
static inline uint64_t gen_expected_lost(const struct gen *g)
{
	return g->nev + g->phantom_lost + g->final_lost - g->kept;
}

static inline int gen_finish(struct gen *g, uint64_t final_lost_per_ring)
{
	struct evr_trace_end end = {.end_mono_ns = 9000000000ull, .flags = 0};
	int err;

	for (uint32_t i = 0; i < g->nr; i++) {
		g->omit_pct = g->discard_pct = 0;
		/* Drain first: the LOST record of pending losses needs room. */
		err = gen_drain(g, i);
		if (err)
			return err;
		evr_ring_writer_flush_locked(&g->w[i], g->m[i].ts);
		err = gen_drain(g, i);
		if (err)
			return err;
		err = evr_trace_writer_lost(g->tw, i, final_lost_per_ring * (i + 1));
		if (err)
			return err;
		g->final_lost += final_lost_per_ring * (i + 1);
	}
	/* What a recorder knows: the events it stored, every other one lost. */
	end.events = g->kept;
	end.lost = gen_expected_lost(g);
	return evr_trace_writer_end(g->tw, &end);
}

/* Every loss the reader must report: emitted == received + lost. */

#endif /* EVR_TEST_TRACE_GEN_H */
