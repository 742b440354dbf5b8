// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: a pipe or a socket (`evring record -o - | evring dump -`),
 * read front to back, once, in bounded memory.
 *
 * A file is scanned at open and its EVENTS chunks read later with pread(), one
 * per ring at a time (trace-reader.c, trace-merge.c). A stream cannot be read
 * twice: its chunks are taken as they come. Small chunks (process, session,
 * metadata, threads, sync points, losses, END) are taken at once, exactly as
 * the scan takes them; an EVENTS chunk is kept in memory, queued on its ring,
 * until the merge needs it. The format makes this work: a METADATA chunk
 * precedes the first EVENTS chunk that needs it, and a DISCARD chunk follows
 * the EVENTS chunk it retracts at once (so the last EVENTS chunk read is held
 * back until the next chunk says whether it stays).
 *
 * Time order across rings needs to know that no ring will still bring an
 * earlier record. The recorder's SYNC points say it: each carries every
 * ring's published head; once the stream has delivered every ring up to the
 * heads of point j, every record published before it has been read, so records
 * up to its time may be returned (the watermark). Where that is not known
 * (no sync points yet), records wait until EVR_TRACE_STREAM_WINDOW bytes are
 * queued, or the stream ends; past the window they are returned anyway, and a
 * late record's time is raised to keep the order (counted in ts_clamped), as
 * for disorder across chunks in a file. Memory: the window, plus one chunk per
 * ring being read.
 *
 * Damage a file reader works around by seeking (a chunk header beyond repair:
 * the next valid header is searched for) ends a stream: it is reported as
 * truncated there. One flipped bit is repaired as in a file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace-chunk.h"
#include "trace-salvage.h"
#include "trace-stream.h"
#include "trace-take.h"

#define EVR_TRACE_STREAM_WINDOW (64u << 20)

/* One EVENTS chunk read from a stream, waiting for its ring to need it. */
struct evr_trace_qchunk {
	struct evr_trace_qchunk *next;
	uint8_t *data;			/* the payload (events record + ring bytes) */
	uint32_t len;
	uint32_t npts;			/* sync points read before it */
	uint64_t off;			/* stream offset of its header */
};

/* A SYNC point whose ring heads the stream has not delivered yet (watermark). */
struct evr_trace_wm_point {
	uint64_t mono_ns;
	uint64_t *heads;		/* nr_rings */
};

/* read() exactly @len bytes unless the stream ends. Return: bytes read, -errno. */
static ssize_t read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

/*
 * After a chunk header of zeros: read the stream to its end. Return: the
 * bytes from that header on (> 0) when all of them are zeros (a recorder's
 * space allocated ahead, evr_trace_zero_tail()), 0 when something else
 * follows (damage), -errno.
 */
static ssize_t zero_tail(struct evr_trace_reader *r)
{
	uint8_t buf[16384];
	ssize_t total = EVR_TRACE_CHUNK_HDR_SIZE, n;
	bool zero = true;

	while ((n = read_full(r->fd, buf, sizeof(buf))) > 0) {
		zero = zero && evr_trace_all_zero(buf, (size_t)n);
		total += n;
	}
	if (n < 0)
		return n;
	return zero ? total : 0;
}

static int read_error(struct evr_trace_reader *r, int err)
{
	snprintf(r->errmsg, sizeof(r->errmsg), "reading the stream: %s", strerror(-err));
	return err;
}

static void queue_push(struct evr_trace_reader *r, uint32_t ring, struct evr_trace_qchunk *q)
{
	struct evr_trace_ring *g = &r->rings[ring];

	q->next = NULL;
	if (g->sq_tail)
		g->sq_tail->next = q;
	else
		g->sq_head = q;
	g->sq_tail = q;
	r->buffered += q->len;
}

static void qchunk_free(struct evr_trace_qchunk *q)
{
	if (q) {
		free(q->data);
		free(q);
	}
}

/* The held EVENTS chunk stays: queue it on its ring. */
static void release_held(struct evr_trace_reader *r)
{
	if (!r->held)
		return;
	queue_push(r, r->held_ring, r->held);
	r->held = NULL;
}

/* Drop the SYNC points whose heads every ring has reached; the last one is the watermark. */
static void advance_watermark(struct evr_trace_reader *r)
{
	uint32_t done = 0;

	while (done < r->nwm) {
		const struct evr_trace_wm_point *p = &r->wm[done];
		bool reached = true;

		for (uint32_t i = 0; i < r->session.nr_rings && reached; i++)
			reached = r->rings[i].delivered >= p->heads[i];
		if (!reached)
			break;
		r->watermark_ns = p->mono_ns;
		r->has_watermark = true;
		free(p->heads);
		done++;
	}
	if (done) {
		memmove(r->wm, r->wm + done, (r->nwm - done) * sizeof(*r->wm));
		r->nwm -= done;
	}
}

static int add_wm_point(struct evr_trace_reader *r, const uint8_t *p, uint32_t len)
{
	struct evr_trace_sync s;
	uint32_t n = r->session.nr_rings;
	struct evr_trace_wm_point *w;

	if (len < sizeof(s) || (len - sizeof(s)) / 8u != n)
		return 0;	/* taken (or refused) by the clock code already */
	if (r->nwm == r->wm_cap) {
		uint32_t cap = r->wm_cap ? 2 * r->wm_cap : 16;
		void *v = reallocarray(r->wm, cap, sizeof(*r->wm));

		if (!v)
			return -ENOMEM;
		r->wm = v;
		r->wm_cap = cap;
	}
	memcpy(&s, p, sizeof(s));
	w = &r->wm[r->nwm];
	w->heads = malloc((size_t)n * 8u);
	if (!w->heads)
		return -ENOMEM;
	memcpy(w->heads, p + sizeof(s), (size_t)n * 8u);
	w->mono_ns = s.mono_ns;
	r->nwm++;
	return 0;
}

/* An EVENTS chunk's payload (owned by the caller until queued). */
static int take_events(struct evr_trace_reader *r, uint64_t off, uint8_t *data, uint32_t len)
{
	struct evr_trace_events_rec rec;
	struct evr_trace_qchunk *q;

	if (!r->has_session) {
		snprintf(r->errmsg, sizeof(r->errmsg), "EVENTS chunk at offset %llu precedes the "
			 "SESSION chunk", (unsigned long long)off);
		return -EBADMSG;
	}
	memcpy(&rec, data, sizeof(rec));
	if (!evr_trace_events_rec_fits(r, &rec, len)) {
		snprintf(r->errmsg, sizeof(r->errmsg), "EVENTS chunk at offset %llu: ring %u "
			 "position %llu does not fit the session (%u rings, %u-byte packets)",
			 (unsigned long long)off, rec.ring, (unsigned long long)rec.pos,
			 r->session.nr_rings, r->session.packet_size);
		return -EBADMSG;
	}
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	q->data = data;
	q->len = len;
	q->off = off;
	q->npts = r->clk.npts;
	release_held(r);
	r->held = q;
	r->held_ring = rec.ring;
	r->last_events_off = off;
	r->last_events_ring = rec.ring;
	if (rec.pos + (len - sizeof(rec)) > r->rings[rec.ring].delivered)
		r->rings[rec.ring].delivered = rec.pos + (len - sizeof(rec));
	return 0;
}

static void stream_end(struct evr_trace_reader *r)
{
	r->eof = true;
	release_held(r);
	r->file_size = r->good_end;
	if (!r->truncated && !r->has_end && !r->end_damaged) {
		r->truncated = true;
		snprintf(r->truncated_why, sizeof(r->truncated_why), "no END chunk: the recording "
			 "did not finish, or the stream was cut at a chunk boundary");
	}
}

int evr_trace_stream_read(struct evr_trace_reader *r)
{
	const uint64_t off = r->good_end;
	struct evr_trace_chunk_hdr h;
	const char *why = "";
	uint32_t padded;
	uint8_t *buf;
	ssize_t n;
	int err;

	if (r->eof)
		return 0;
	n = read_full(r->fd, &h, sizeof(h));
	if (n < 0)
		return read_error(r, (int)n);
	if (n == 0) {
		stream_end(r);
		return 0;
	}
	if ((size_t)n < sizeof(h)) {
		evr_trace_stop_at(r, off, "the stream ends inside a chunk header");
		stream_end(r);
		return 0;
	}
	if (!evr_trace_chunk_hdr_ok(&h) && evr_trace_all_zero(&h, sizeof(h))) {
		/* A recorder's space allocated ahead (it was killed), or damage. */
		n = zero_tail(r);
		if (n < 0)
			return read_error(r, (int)n);
		if (n > 0) {
			evr_trace_stop_at(r, off, "%llu bytes of zeros to the end: space allocated "
					  "ahead by a recorder that did not stop cleanly",
					  (unsigned long long)n);
			stream_end(r);
			return 0;
		}
	}
	if (!evr_trace_chunk_hdr_ok(&h) && !evr_trace_repair_hdr(r, off, &h)) {
		evr_trace_stop_at(r, off, "a chunk header damaged beyond repair (a stream cannot be "
				  "searched for the next chunk)");
		stream_end(r);
		return 0;
	}
	if (h.seq != r->next_seq) {
		if (h.seq < r->next_seq) {
			evr_trace_stop_at(r, off, "chunk number %u where %u was expected", h.seq,
					  r->next_seq);
			stream_end(r);
			return 0;
		}
		evr_trace_problem(r, "chunks %u to %u are missing (the stream goes on at offset "
				  "%llu with chunk %u)", r->next_seq, h.seq - 1,
				  (unsigned long long)off, h.seq);
		r->missing_chunks += h.seq - r->next_seq;
		r->damage_since_events = true;
	}
	if (!evr_trace_chunk_len_ok(h.kind, h.len)) {
		evr_trace_stop_at(r, off, "chunk (%s) of impossible length %u",
				  evr_trace_kind_name(h.kind), h.len);
		stream_end(r);
		return 0;
	}
	padded = (uint32_t)evr_align8(h.len);
	buf = malloc(padded ? padded : 1);
	if (!buf)
		return -ENOMEM;
	n = read_full(r->fd, buf, padded);
	if (n < 0) {
		free(buf);
		return read_error(r, (int)n);
	}
	if ((uint64_t)n < h.len) {
		free(buf);
		evr_trace_stop_at(r, off, "the stream ends inside a chunk (%s, %u of %u bytes)",
				  evr_trace_kind_name(h.kind), (uint32_t)n, h.len);
		stream_end(r);
		return 0;
	}
	r->next_seq = h.seq + 1;
	r->chunks++;
	if (h.flags & EVR_TRACE_CHUNK_UNCHECKED)
		r->unchecked_chunks++;
	r->last_chunk_off = off;
	r->good_end = off + EVR_TRACE_CHUNK_HDR_SIZE + (uint64_t)n;
	err = evr_trace_check_payload(r, off, &h, buf, &why);
	if (h.kind == EVR_CHUNK_EVENTS) {
		if (err == -EBADMSG) {
			/* Skipped; the ring's next packet header accounts for its events. A
			 * DISCARD naming it has nothing to retract. */
			free(buf);
			r->corrupt_chunks++;
			release_held(r);
			r->last_events_off = off;
			return 1;
		}
		err = take_events(r, off, buf, h.len);
		if (err) {
			free(buf);
			return err;
		}
		r->damage_since_events = false;
		advance_watermark(r);
		if ((uint64_t)n < padded)
			stream_end(r);	/* only the last chunk's padding is missing */
		return 1;
	}
	if (h.kind == EVR_CHUNK_DISCARD) {
		struct evr_trace_discard_rec rec;

		memcpy(&rec, buf, sizeof(rec));
		if (err == -EBADMSG) {
			/* The recorder writes a DISCARD right after the chunk it retracts. */
			rec.chunk_off = r->held ? r->held->off : UINT64_MAX;
			r->salvaged_chunks++;
			evr_trace_problem(r, "DISCARD chunk at offset %llu is damaged beyond repair: "
					  "the EVENTS chunk before it was retracted, as a DISCARD "
					  "always names it", (unsigned long long)off);
		}
		if (r->held && r->held->off == rec.chunk_off) {
			/* Retracted: never queued, its events are a gap. */
			qchunk_free(r->held);
			r->held = NULL;
		} else if (!r->damage_since_events && rec.chunk_off != r->last_events_off) {
			free(buf);
			snprintf(r->errmsg, sizeof(r->errmsg), "DISCARD chunk at offset %llu names "
				 "offset %llu, not the last EVENTS chunk", (unsigned long long)off,
				 (unsigned long long)rec.chunk_off);
			return -EBADMSG;
		}
		free(buf);
		return 1;
	}
	release_held(r);
	if (!evr_trace_small_kind(h.kind))
		r->stream_other_chunks++;
	if (evr_trace_small_kind(h.kind)) {
		char emsg[sizeof(r->errmsg)] = "";

		if (err == -EBADMSG) {
			err = evr_trace_salvage_small(r, off, &h, buf, h.len);
			if (err == 1) {
				evr_trace_stop_at(r, off, "chunk (%s): %s", evr_trace_kind_name(h.kind),
						  why);
				free(buf);
				stream_end(r);
				return 0;
			}
		} else {
			err = evr_trace_scan_small(r, off, &h, buf, emsg, sizeof(emsg));
			if (!err && h.kind == EVR_CHUNK_SYNC)
				err = add_wm_point(r, buf, h.len);
			if (!err && h.kind == EVR_CHUNK_SYNC)
				err = evr_trace_clock_build(&r->clk, &r->session.clock);
			if (!err && h.kind == EVR_CHUNK_THREADS)
				evr_trace_threads_finish(r);
			if (err == -EBADMSG)
				snprintf(r->errmsg, sizeof(r->errmsg), "%s", emsg);
		}
	}
	free(buf);
	if (err < 0)
		return err;
	advance_watermark(r);
	if ((uint64_t)n < padded)
		stream_end(r);
	return 1;
}

int evr_trace_stream_open(struct evr_trace_reader *r, char *errbuf, size_t errlen)
{
	struct evr_trace_file_hdr fh;
	ssize_t n;
	int err;

	r->stream = true;
	r->clk.keep_heads = true;
	r->file_size = UINT64_MAX;	/* unknown until the end */
	n = read_full(r->fd, &fh, sizeof(fh));
	if (n < 0) {
		snprintf(errbuf, errlen, "cannot read the stream: %s", strerror((int)-n));
		return (int)n;
	}
	if ((size_t)n < sizeof(fh)) {
		snprintf(errbuf, errlen, "not an evring trace (%zd bytes, shorter than its header)",
			 n);
		return -EBADMSG;
	}
	err = evr_trace_check_file_hdr(r, &fh, errbuf, errlen);
	if (err)
		return err;
	/* A longer header (a later version): skip the rest of it. */
	for (uint32_t left = r->hdr_size - (uint32_t)sizeof(fh); left;) {
		uint8_t skip[256];
		uint32_t k = left < sizeof(skip) ? left : (uint32_t)sizeof(skip);

		n = read_full(r->fd, skip, k);
		if (n < (ssize_t)k) {
			snprintf(errbuf, errlen, "the stream ends inside its header");
			return -EBADMSG;
		}
		left -= k;
	}
	r->good_end = r->hdr_size;
	r->last_events_off = UINT64_MAX;
	/* What describes the recording comes first: read up to the first EVENTS chunk. */
	while (!r->eof && !r->held) {
		err = evr_trace_stream_read(r);
		if (err < 0) {
			snprintf(errbuf, errlen, "%s", err == -ENOMEM ? "out of memory" : r->errmsg);
			return err;
		}
	}
	return 0;
}

bool evr_trace_stream_ready(const struct evr_trace_reader *r, uint64_t ts_ns)
{
	return r->eof || r->buffered >= EVR_TRACE_STREAM_WINDOW ||
	       (r->has_watermark && ts_ns <= r->watermark_ns);
}

bool evr_trace_stream_can_take(const struct evr_trace_reader *r, uint32_t ring)
{
	const struct evr_trace_qchunk *q = r->rings[ring].sq_head;

	/*
	 * Raw TSC timestamps convert on the line between the sync points around
	 * them: a chunk waits for the point after it, as in a file, unless the
	 * stream ended or the window is full.
	 */
	return q && (r->session.clock.kind != EVR_CLOCK_TSC || q->npts < r->clk.npts || r->eof ||
		     r->buffered >= EVR_TRACE_STREAM_WINDOW);
}

int evr_trace_stream_take(struct evr_trace_reader *r, uint32_t ring, uint32_t *ret_len)
{
	struct evr_trace_ring *g = &r->rings[ring];
	struct evr_trace_qchunk *q = g->sq_head;

	if (!evr_trace_stream_can_take(r, ring))
		return 0;
	g->sq_head = q->next;
	if (!g->sq_head)
		g->sq_tail = NULL;
	r->buffered -= q->len;
	/* The chunk's buffer becomes the ring's: no copy. */
	free(g->buf);
	g->buf = q->data;
	g->buf_cap = q->len;
	*ret_len = q->len;
	free(q);
	return 1;
}

void evr_trace_stream_free(struct evr_trace_reader *r)
{
	if (r->rings) {
		for (uint32_t i = 0; i < r->session.nr_rings; i++) {
			struct evr_trace_qchunk *q = r->rings[i].sq_head;

			while (q) {
				struct evr_trace_qchunk *next = q->next;

				qchunk_free(q);
				q = next;
			}
		}
	}
	qchunk_free(r->held);
	for (uint32_t i = 0; i < r->nwm; i++)
		free(r->wm[i].heads);
	free(r->wm);
	free(r->sbuf);
}
