// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: the records of every ring, merged in time order.
 *
 * Each ring is a stream of its EVENTS chunks (found by the scan at open). A
 * ring has one chunk in memory at a time: it is read, CRC-checked, walked
 * record by record (packet headers, THREAD, LOST, EVENT, END), and its EVENT
 * and LOST records become entries, which are then sorted by time (stable). The
 * rings' current entries sit in a min-heap; evr_trace_reader_next() returns the
 * smallest. Memory: one chunk (at most a packet) and its entries per ring.
 *
 * Why sort each chunk: two threads that share a ring can take their timestamps
 * in one order and win the ring in the other, so a ring is only nearly sorted
 * (today's writer clamps its timestamps, but a file is input, and the next
 * writer may not). A chunk is a packet or part of one, and a thread preempted
 * between its timestamp and its write stays behind by much less than a packet
 * in practice, so sorting per chunk repairs the order exactly where it matters
 * without a window to tune. Whatever disorder remains across a chunk boundary
 * is absorbed by raising the late record's timestamp to the last one returned
 * (counted in ts_clamped), so the output never goes back in time.
 *
 * Loss accounting per ring, exact: events_acc counts event records seen,
 * lost_acc the losses seen in LOST records. A packet header says how many of
 * each the producer wrote before it; the difference with what we saw is the
 * number of events the file does not hold (lapped recorder, retracted or
 * corrupt chunk) and comes out as a LOST entry at the packet's start time.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace-chunk.h"
#include "trace-clock.h"
#include "trace-merge.h"
#include "trace-salvage.h"
#include "trace-stream.h"

/*
 * CLOCK_MONOTONIC ns of raw timestamp @ts of the record at ring position @pos
 * of @ring. The common case (one segment, the same interval as the ring's last
 * record) stays inline. Here, with its one caller, rather than in trace-clock.h,
 * so that the clock's header calls nothing of trace-clock.c.
 */
static inline uint64_t evr_trace_ts_ns(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				       uint64_t ts)
{
	const struct evr_trace_clock *k = &r->clk;
	uint32_t i;

	if (!k->piecewise)
		return evr_clock_to_mono_ns(&r->session.clock, ts);
	i = r->rings[ring].clk.pt;
	if (k->nseg == 1 && ts >= k->pts[i].ts && (i + 1 == k->npts || ts < k->pts[i + 1].ts))
		return evr_clock_to_mono_ns(&k->lines[i], ts);
	return evr_trace_clock_convert(r, ring, pos, ts);
}

/* See evr_trace_clock_check_slow(); the common case (nothing to look at) inline. */
static inline void evr_trace_clock_check(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
					 uint64_t ts)
{
	const struct evr_trace_clock *k = &r->clk;
	uint32_t i;

	if (!k->piecewise)
		return;
	i = r->rings[ring].clk.chk;
	if (i < k->npts && pos < k->heads[(size_t)i * k->nr_rings + ring] && ts <= k->pts[i].ts)
		return;
	evr_trace_clock_check_slow(r, ring, pos, ts);
}

/* ---- one chunk into entries ------------------------------------------------ */

static void add_entry(struct evr_trace_ring *g, uint32_t type, uint64_t ts_ns, uint32_t rid,
		      uint32_t tid, uint32_t off, uint32_t len, uint64_t lost)
{
	struct evr_trace_entry *e;

	/* ring_load() sized ents for the most records a chunk can hold. */
	if (g->nents >= g->ents_cap)
		return;
	e = &g->ents[g->nents];
	e->ts_ns = ts_ns;
	e->lost = lost;
	e->type = type;
	e->rid = rid;
	e->tid = tid;
	e->off = off;
	e->len = len;
	e->idx = g->nents++;
	e->nframes = 0;
	e->stack_flags = 0;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct evr_trace_entry *x = a, *y = b;

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void sort_entries(struct evr_trace_ring *g)
{
	for (uint32_t i = 1; i < g->nents; i++) {
		if (g->ents[i].ts_ns < g->ents[i - 1].ts_ns) {
			qsort(g->ents, g->nents, sizeof(*g->ents), entry_cmp);
			return;
		}
	}
}

/*
 * Walk the raw ring bytes of one chunk: ring positions [pos, pos + len), held
 * at @data (inside g->buf). Records never leave their packet; the scan checked
 * that the chunk does not either.
 */
static void parse_chunk(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
			const uint8_t *data, uint32_t len)
{
	struct evr_trace_ring *g = &r->rings[ring];
	const uint32_t psize = r->session.packet_size;
	const uint64_t end = pos + len;
	const uint64_t packet_end = (pos | (psize - 1)) + 1;
	const uint64_t start = pos;

	g->nents = 0;
	g->cur = 0;
	if (pos > UINT64_MAX - 2 * (uint64_t)psize) {
		/* No ring gets near 2^64 bytes; the walk's packet ends would wrap. */
		r->corrupt_chunks++;
		return;
	}
	if (pos < g->expect_pos) {
		/* Ring positions only grow: a chunk that goes back is not a recording. */
		r->corrupt_chunks++;
		return;
	}
	if ((pos & (psize - 1)) && pos != g->expect_pos) {
		/*
		 * Starts inside a packet, but not where the previous chunk of the ring
		 * ended: the chunk in between was retracted or corrupt. Records start
		 * at a chunk's start, so read on; which thread wrote them is unknown
		 * until the next THREAD record. Not in a packet we already gave up on.
		 */
		g->in_packet = g->dead_packet != pos / psize + 1;
		g->tid = 0;
	}
	g->expect_pos = end;
	while (pos < end) {
		uint32_t off = (uint32_t)(pos & (psize - 1));
		const uint8_t *p = data + (pos - start);
		uint64_t rem = end - pos;
		struct evr_rec_hdr h;
		uint32_t asize, min;
		uint64_t w0;

		if (off == 0) {
			struct evr_packet_hdr ph;
			uint64_t missed;

			if (rem < sizeof(ph))
				goto bad_packet;
			memcpy(&ph, p, sizeof(ph));
			if (ph.magic != EVR_PACKET_MAGIC || ph.ring_index != ring ||
			    ph.seq != pos / psize)
				goto bad_packet;
			if (ph.events_before < g->events_acc || ph.lost_before < g->lost_acc) {
				/* Counters going back: keep reading, resynchronized on them. */
				r->corrupt_packets++;
				missed = 0;
			} else {
				missed = evr_trace_lost_add(ph.events_before - g->events_acc,
						 ph.lost_before - g->lost_acc);
			}
			g->events_acc = ph.events_before;
			g->lost_acc = ph.lost_before;
			g->tid = 0;
			g->in_packet = true;
			if (missed)
				add_entry(g, EVR_REC_LOST, evr_trace_ts_ns(r, ring, pos, ph.ts_begin), 0, 0,
					  0, 0, missed);
			pos += sizeof(ph);
			continue;
		}
		if (!g->in_packet) {
			pos = end < packet_end ? end : packet_end;
			continue;
		}
		if (rem < 8)
			goto bad_packet;
		memcpy(&w0, p, 8);
		h.size = (uint16_t)w0;
		h.type = (uint8_t)(w0 >> 16);
		min = evr_rec_min_size(h.type);
		if (!min || h.size < min)
			goto bad_packet;
		if (h.type == EVR_REC_END) {
			/* The rest of the packet is padding. */
			g->in_packet = false;
			pos = end < packet_end ? end : packet_end;
			continue;
		}
		asize = (uint32_t)evr_align8(h.size);
		if (h.size > EVR_MAX_RECORD || off + asize > psize || asize > rem)
			goto bad_packet;
		memcpy(&h, p, sizeof(h));
		if (h.type == EVR_REC_THREAD) {
			struct evr_rec_thread t;

			memcpy(&t, p + EVR_REC_HDR_SIZE, sizeof(t));
			g->tid = t.tid;
		} else if (h.type == EVR_REC_LOST) {
			struct evr_rec_lost l;

			memcpy(&l, p + EVR_REC_HDR_SIZE, sizeof(l));
			g->lost_acc = evr_trace_lost_add(g->lost_acc, l.count);
			if (l.count)
				add_entry(g, EVR_REC_LOST, evr_trace_ts_ns(r, ring, pos, h.ts), 0, 0, 0, 0,
					  l.count);
		} else {
			uint32_t poff = (uint32_t)(p + EVR_REC_HDR_SIZE - g->buf);
			uint32_t plen = h.size - EVR_REC_HDR_SIZE;
			struct evr_stack_hdr sh = { 0 };

			if (h.flags & EVR_REC_F_STACK) {
				/* The stack block precedes the payload (<evring/abi.h>). */
				if (plen < sizeof(sh))
					goto bad_packet;
				memcpy(&sh, p + EVR_REC_HDR_SIZE, sizeof(sh));
				if (sh.nframes > EVR_STACK_MAX_FRAMES ||
				    plen - sizeof(sh) < 8u * sh.nframes)
					goto bad_packet;
				poff += (uint32_t)sizeof(sh) + 8u * sh.nframes;
				plen -= (uint32_t)sizeof(sh) + 8u * sh.nframes;
			}
			g->events_acc++;
			add_entry(g, EVR_REC_EVENT, evr_trace_ts_ns(r, ring, pos, h.ts), h.event_id,
				  g->tid, poff, plen, 0);
			evr_trace_clock_check(r, ring, pos, h.ts);
			if (sh.nframes && g->nents) {
				g->ents[g->nents - 1].nframes = sh.nframes;
				g->ents[g->nents - 1].stack_flags = sh.flags;
			}
		}
		pos += asize;
		continue;
bad_packet:
		/*
		 * An impossible record: the rest of this packet cannot be trusted. Its
		 * events are counted lost by the next packet header of the ring.
		 */
		r->corrupt_packets++;
		g->in_packet = false;
		g->dead_packet = pos / psize + 1;
		pos = end < packet_end ? end : packet_end;
	}
	sort_entries(g);
}

/* Load the ring's next EVENTS chunk. Return: 0 (maybe no entries), -errno. */
static int ring_load(struct evr_trace_reader *r, uint32_t ring)
{
	struct evr_trace_ring *g = &r->rings[ring];
	const uint32_t hdr = sizeof(struct evr_trace_events_rec);
	struct evr_trace_events_rec rec;
	uint64_t off = 0;
	const char *why;
	uint32_t len;
	int err;

	g->nents = 0;
	g->cur = 0;
	if (r->stream) {
		/* Read, CRC-checked and queued by the stream already. */
		err = evr_trace_stream_take(r, ring, &len) ? 0 : -EAGAIN;
	} else {
		off = g->chunks[g->next_chunk++];
		err = evr_trace_load_chunk(r, off, EVR_CHUNK_EVENTS, &g->buf, &g->buf_cap, &len,
					   &why);
	}
	if (err == -EBADMSG) {
		/* Skipped; the next packet header of the ring accounts for its events. */
		r->corrupt_chunks++;
		return 0;
	}
	if (err) {
		snprintf(r->errmsg, sizeof(r->errmsg), "reading the EVENTS chunk at offset %llu: %s",
			 (unsigned long long)off, strerror(-err));
		return err;
	}
	memcpy(&rec, g->buf, sizeof(rec));
	if (rec.ring != ring && len > hdr) {
		/* A ring number the scan took with a flipped bit the CRC repair undid
		 * (rare: the scan checks chunks that do not continue their ring). */
		r->corrupt_chunks++;
		return 0;
	}
	if (len <= hdr ||
	    (rec.pos & (r->session.packet_size - 1)) + (len - hdr) > r->session.packet_size) {
		snprintf(r->errmsg, sizeof(r->errmsg),
			 "the EVENTS chunk at offset %llu changed since the file was opened",
			 (unsigned long long)off);
		return -EBADMSG;
	}
	if (g->ents_cap < (len - hdr) / EVR_REC_HDR_SIZE + 2) {
		uint32_t cap = (len - hdr) / EVR_REC_HDR_SIZE + 2;
		struct evr_trace_entry *n = realloc(g->ents, sizeof(*n) * cap);

		if (!n) {
			snprintf(r->errmsg, sizeof(r->errmsg), "out of memory");
			return -ENOMEM;
		}
		g->ents = n;
		g->ents_cap = cap;
	}
	parse_chunk(r, ring, rec.pos, g->buf + hdr, len - hdr);
	return 0;
}

/* Make the ring's current entry valid. Return: 1 it is, 0 the ring is done, -errno. */
static int ring_fill(struct evr_trace_reader *r, uint32_t ring)
{
	struct evr_trace_ring *g = &r->rings[ring];

	while (g->cur >= g->nents) {
		if (r->stream ? evr_trace_stream_can_take(r, ring) : g->next_chunk < g->nchunks) {
			int err = ring_load(r, ring);

			if (err)
				return err;
			continue;
		}
		/* A stream may bring more: the final losses come once it has ended. */
		if (r->stream && (!r->eof || g->sq_head))
			return 0;
		if (g->final_lost && !g->final_lost_queued) {
			/* Losses the recorder learnt at the end: after the ring's last record. */
			uint64_t ts = g->has_last_ts ? g->last_ts_ns :
				      r->has_end ? r->end.end_mono_ns : r->session.start_mono_ns;

			g->final_lost_queued = true;
			g->nents = 0;
			g->cur = 0;
			if (!g->ents_cap) {
				g->ents = malloc(sizeof(*g->ents));
				if (!g->ents) {
					snprintf(r->errmsg, sizeof(r->errmsg), "out of memory");
					return -ENOMEM;
				}
				g->ents_cap = 1;
			}
			add_entry(g, EVR_REC_LOST, ts, 0, 0, 0, 0, g->final_lost);
			continue;
		}
		return 0;
	}
	return 1;
}

/* ---- the heap of rings ------------------------------------------------------- */

static bool ring_less(const struct evr_trace_reader *r, uint32_t a, uint32_t b)
{
	const struct evr_trace_entry *x = &r->rings[a].ents[r->rings[a].cur];
	const struct evr_trace_entry *y = &r->rings[b].ents[r->rings[b].cur];

	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns;
	return a < b;
}

static void heap_down(struct evr_trace_reader *r, uint32_t i)
{
	for (;;) {
		uint32_t l = 2 * i + 1, m = i;

		if (l < r->nheap && ring_less(r, r->heap[l], r->heap[m]))
			m = l;
		if (l + 1 < r->nheap && ring_less(r, r->heap[l + 1], r->heap[m]))
			m = l + 1;
		if (m == i)
			return;
		uint32_t t = r->heap[i];

		r->heap[i] = r->heap[m];
		r->heap[m] = t;
		i = m;
	}
}

static void heap_up(struct evr_trace_reader *r, uint32_t i)
{
	while (i > 0) {
		uint32_t p = (i - 1) / 2;

		if (!ring_less(r, r->heap[i], r->heap[p]))
			return;
		uint32_t t = r->heap[i];

		r->heap[i] = r->heap[p];
		r->heap[p] = t;
		i = p;
	}
}

/* Put every ring that has a record now, and is not in the heap yet, into it. */
static int heap_add_ready(struct evr_trace_reader *r)
{
	for (uint32_t i = 0; i < r->session.nr_rings; i++) {
		int rc;

		if (r->rings[i].in_heap)
			continue;
		rc = ring_fill(r, i);
		if (rc < 0)
			return rc;
		if (rc) {
			r->rings[i].in_heap = true;
			r->heap[r->nheap++] = i;
			heap_up(r, r->nheap - 1);
		}
	}
	return 0;
}

static int merge_start(struct evr_trace_reader *r)
{
	int rc = heap_add_ready(r);

	r->merge_started = true;
	return rc;
}

/*
 * A stream: read on until the smallest record may be returned (no ring can
 * still bring an earlier one, as far as evr_trace_stream_ready() knows), or
 * the stream ends. Return: 0, -errno.
 */
static int stream_fill(struct evr_trace_reader *r)
{
	for (;;) {
		int rc = heap_add_ready(r);

		if (rc < 0)
			return rc;
		if (r->eof)
			return 0;
		if (r->nheap) {
			const struct evr_trace_ring *g = &r->rings[r->heap[0]];
			bool waiting = false;

			/* A ring whose next chunk is read but waits (for its times, or to
			 * know it is not retracted) may hold earlier records than the
			 * heap's: not yet. */
			for (uint32_t i = 0; i < r->session.nr_rings && !waiting; i++)
				waiting = !r->rings[i].in_heap &&
					  (r->rings[i].sq_head || (r->held && r->held_ring == i));
			if (!waiting && evr_trace_stream_ready(r, g->ents[g->cur].ts_ns))
				return 0;
		}
		rc = evr_trace_stream_read(r);
		if (rc < 0)
			return rc;
	}
}

int evr_trace_reader_next(struct evr_trace_reader *r, struct evr_event_view *ret)
{
	const struct evr_trace_entry *e;
	struct evr_trace_ring *g;
	uint64_t ts;
	uint32_t ring;
	int rc;

	if (!r || !ret)
		return -EINVAL;
	if (r->err)
		return r->err;
	if (!r->has_session)
		return 0;
	if (!r->merge_started) {
		rc = merge_start(r);
		if (rc < 0)
			goto fail;
	}
	if (r->pending >= 0) {
		/* The entry returned last is at the top of the heap; move past it only
		 * now, since loading the ring's next chunk reuses its payload's buffer. */
		ring = (uint32_t)r->pending;
		r->pending = -1;
		r->rings[ring].cur++;
		rc = ring_fill(r, ring);
		if (rc < 0)
			goto fail;
		if (!rc) {
			/* The ring is done (a stream's may come back). */
			r->rings[ring].in_heap = false;
			r->heap[0] = r->heap[--r->nheap];
		}
		heap_down(r, 0);
	}
	if (r->stream) {
		rc = stream_fill(r);
		if (rc < 0)
			goto fail;
	}
	if (!r->nheap) {
		evr_trace_check_end(r);
		return 0;
	}
	ring = r->heap[0];
	g = &r->rings[ring];
	e = &g->ents[g->cur];
	ts = e->ts_ns;
	if (r->has_out && ts < r->last_out_ts) {
		ts = r->last_out_ts;
		r->ts_clamped++;
	}
	if (!r->has_out) {
		r->first_ts = ts;
		r->has_out = true;
	}
	r->last_out_ts = ts;
	g->last_ts_ns = ts;
	g->has_last_ts = true;
	memset(ret, 0, sizeof(*ret));
	ret->type = e->type;
	ret->ring = ring;
	ret->ts_ns = ts;
	if (e->type == EVR_REC_EVENT) {
		ret->rid = e->rid;
		ret->schema = evr_schema_set_lookup(r->schemas, e->rid);
		ret->tid = e->tid;
		ret->payload = g->buf + e->off;
		ret->len = e->len;
		ret->nframes = e->nframes;
		ret->stack_flags = e->stack_flags;
		ret->frames = e->nframes ? g->buf + e->off - 8u * e->nframes : NULL;
		r->out_events++;
		g->out_events++;
	} else {
		ret->lost = e->lost;
		r->out_lost = evr_trace_lost_add(r->out_lost, e->lost);
		g->out_lost = evr_trace_lost_add(g->out_lost, e->lost);
	}
	r->pending = ring;
	return 1;
fail:
	r->err = rc;
	return rc;
}

void evr_trace_merge_free(struct evr_trace_reader *r)
{
	if (r->rings) {
		for (uint32_t i = 0; i < r->session.nr_rings; i++) {
			free(r->rings[i].chunks);
			free(r->rings[i].buf);
			free(r->rings[i].ents);
		}
	}
	free(r->rings);
	free(r->heap);
}
