/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared by the trace writer, the trace reader and the CRC-32C code. */
#ifndef EVR_TRACE_INTERNAL_H
#define EVR_TRACE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <evring/trace.h>

#define EVR_TRACE_FILE_HDR_SIZE		((uint32_t)sizeof(struct evr_trace_file_hdr))
#define EVR_TRACE_CHUNK_HDR_SIZE	((uint32_t)sizeof(struct evr_trace_chunk_hdr))
/* The bytes of the headers each CRC covers: everything before the CRC itself. */
#define EVR_TRACE_FILE_HDR_CRC_LEN	((uint32_t)offsetof(struct evr_trace_file_hdr, crc))
#define EVR_TRACE_CHUNK_HDR_CRC_LEN	((uint32_t)offsetof(struct evr_trace_chunk_hdr, hdr_crc))

/* Per-kind payload limits; a chunk outside them is invalid. */
#define EVR_TRACE_PROCESS_MAX		(1u << 20)	/* EVR_FRAME_MAX */
#define EVR_TRACE_STRING_MAX		(64u << 10)	/* providers and client of SESSION */
#define EVR_TRACE_EVENTS_MAX		((uint32_t)sizeof(struct evr_trace_events_rec) + \
					 EVR_PACKET_SIZE_MAX)

/* The two implementations behind evr_crc32c(), exposed for the tests. */
uint32_t evr_crc32c_sw(uint32_t crc, const void *data, size_t len);
uint32_t evr_crc32c_hw(uint32_t crc, const void *data, size_t len);
bool evr_crc32c_hw_available(void);

/**
 * evr_crc32c_fix1() - is @data one flipped bit away from having CRC-32C @want?
 * @ret_bit: the bit to flip back: byte @ret_bit / 8, bit @ret_bit % 8 (1 << bit).
 * Return: 1 a data bit (in @ret_bit), 0 the data is intact and one bit of @want
 * itself is flipped, -EINVAL the CRC matches, -EBADMSG more damage than one bit.
 * Context: any thread; time linear in @len (about a nanosecond per bit).
 */
int evr_crc32c_fix1(const void *data, size_t len, uint32_t want, uint64_t *ret_bit);

static inline uint32_t evr_trace_chunk_hdr_crc(const struct evr_trace_chunk_hdr *h)
{
	return evr_crc32c(0, h, EVR_TRACE_CHUNK_HDR_CRC_LEN);
}

static inline uint64_t evr_trace_chunk_span(uint32_t len)
{
	return EVR_TRACE_CHUNK_HDR_SIZE + evr_align8(len);
}

/*
 * Is @len a valid payload size for @kind? Unknown kinds: anything up to the
 * general limit (readers skip them).
 */
static inline bool evr_trace_chunk_len_ok(uint32_t kind, uint32_t len)
{
	switch (kind) {
	case EVR_CHUNK_PROCESS:
		return len > 0 && len <= EVR_TRACE_PROCESS_MAX;
	case EVR_CHUNK_SESSION:
		return len >= sizeof(struct evr_trace_session_rec) &&
		       len <= sizeof(struct evr_trace_session_rec) + 2 * EVR_TRACE_STRING_MAX;
	case EVR_CHUNK_METADATA:
		return len >= sizeof(struct evr_meta_entry) && len <= EVR_TRACE_CHUNK_MAX;
	case EVR_CHUNK_EVENTS:
		return len > sizeof(struct evr_trace_events_rec) && len <= EVR_TRACE_EVENTS_MAX;
	case EVR_CHUNK_LOST:
		return len == sizeof(struct evr_trace_lost_rec);
	case EVR_CHUNK_DISCARD:
		return len == sizeof(struct evr_trace_discard_rec);
	case EVR_CHUNK_END:
		return len == sizeof(struct evr_trace_end_rec);
	case EVR_CHUNK_THREADS:
		return len >= sizeof(struct evr_trace_thread_rec) && len <= EVR_TRACE_CHUNK_MAX;
	case EVR_CHUNK_SYNC:
		return len >= sizeof(struct evr_trace_sync) &&
		       len <= sizeof(struct evr_trace_sync) + 8u * EVR_MAX_RINGS &&
		       (len - sizeof(struct evr_trace_sync)) % 8u == 0;
	default:
		return len <= EVR_TRACE_CHUNK_MAX;
	}
}

/* Checks shared by the writer (input) and the reader (file). */
static inline bool evr_trace_geometry_ok(uint32_t mode, uint32_t packet_size, uint64_t ring_size,
					 uint32_t nr_rings)
{
	return (mode == EVR_MODE_DISCARD || mode == EVR_MODE_OVERWRITE) &&
	       packet_size >= EVR_PACKET_SIZE_MIN && packet_size <= EVR_PACKET_SIZE_MAX &&
	       (packet_size & (packet_size - 1)) == 0 &&
	       ring_size >= (uint64_t)EVR_RING_PACKETS_MIN * packet_size &&
	       ring_size <= EVR_RING_SIZE_MAX && (ring_size & (ring_size - 1)) == 0 &&
	       nr_rings >= 1 && nr_rings <= EVR_MAX_RINGS;
}

static inline bool evr_trace_clock_ok(const struct evr_clock_calib *c)
{
	/* shift < 64 keeps evr_clock_to_mono_ns()'s 128-bit shift defined and useful. */
	return (c->kind == EVR_CLOCK_MONOTONIC || c->kind == EVR_CLOCK_TSC) && c->shift < 64;
}

/* ---- the reader, shared by trace-reader.c (open, scan) and trace-merge.c ---- */

/*
 * Raw timestamps to CLOCK_MONOTONIC (trace-clock.c). Without SYNC points (older
 * files, MONOTONIC sessions) the session's calibration converts everything.
 * With them, points are grouped into segments (a new one at each
 * EVR_SYNC_DISCONT) and each point carries the line to the next point of its
 * segment, so that a record converts with the line of the interval its raw
 * timestamp falls in: a piecewise-linear map, continuous within a segment.
 */
struct evr_trace_clock {
	struct evr_trace_sync *pts;	/* in file order */
	uint64_t *heads;		/* npts x nr_rings: published heads at each point */
	uint32_t npts, cap;
	uint32_t nr_rings;
	/* evr_trace_clock_build(), after the scan. */
	bool piecewise;			/* convert through the points */
	struct evr_clock_calib *lines;	/* per point: its interval's line (see build) */
	uint32_t *seg_first;		/* nseg + 1: each segment's first point, then npts */
	uint32_t nseg;
	uint32_t forced;		/* points out of order, made segment starts */
	/* The largest excess of a record's timestamp over a sync point taken after
	 * the record was published (evr_trace_clock_check()), and where. */
	uint64_t late_ticks;
	uint32_t late_ring, late_pt;
	bool keep_heads;		/* a stream: build() runs again as points arrive */
};

/* A ring's place in the clock's segments, carried from record to record. */
struct evr_trace_ring_clock {
	uint32_t seg;			/* segment of the ring's records so far */
	uint32_t pt;			/* point whose line converted the last record */
	uint64_t maxraw;		/* largest raw timestamp seen on the ring */
	uint64_t held;			/* after the clock went back: the raw value the writer's
					 * clamp holds the ring's timestamps at, 0 none */
	bool held_known;		/* held is the value seen, not just the old maximum */
	uint32_t chk;			/* the first point whose head is past the last record */
};

/* Lines kept about damage (more are counted, not kept). */
#define EVR_TRACE_PROBLEMS_MAX 12

/* One record of a loaded EVENTS chunk, ready to be returned. */
struct evr_trace_entry {
	uint64_t ts_ns;
	uint64_t lost;			/* LOST: count */
	uint32_t type;			/* EVR_REC_EVENT or EVR_REC_LOST */
	uint32_t rid;
	uint32_t tid;
	uint32_t off;			/* EVENT: payload offset in the ring's buf */
	uint32_t len;
	uint32_t idx;			/* order in the chunk, for a stable sort */
	uint16_t nframes;		/* EVENT with a stack: its frames end at off */
	uint8_t stack_flags;
};

struct evr_trace_ring {
	/* From the scan: file offsets of this ring's EVENTS chunks, in file order. */
	uint64_t *chunks;
	uint32_t nchunks, chunks_cap;
	uint32_t next_chunk;		/* the next one to load */
	uint64_t final_lost;		/* sum of the ring's LOST chunks */
	uint64_t scan_pos;		/* scan: where the ring's last chunk ended */
	/* Streams: chunks read, not taken yet; where the ring's data read so far ends. */
	struct evr_trace_qchunk *sq_head, *sq_tail;
	uint64_t delivered;
	bool in_heap;
	bool final_lost_queued;
	/* Decoding state, carried from chunk to chunk. */
	uint64_t expect_pos;		/* where a contiguous next chunk starts */
	bool in_packet;			/* records at expect_pos belong to a valid packet */
	uint32_t tid;			/* from the last THREAD record; 0 unknown */
	uint64_t dead_packet;		/* 1 + number of a packet given up on, 0 none */
	uint64_t events_acc;		/* event records seen or accounted as lost */
	uint64_t lost_acc;		/* losses seen in LOST records or accounted */
	/* The loaded chunk and its records, sorted by time. */
	uint8_t *buf;
	uint32_t buf_cap;
	struct evr_trace_entry *ents;
	uint32_t nents, ents_cap, cur;
	bool has_last_ts;
	uint64_t last_ts_ns;		/* of the last entry returned from this ring */
	struct evr_trace_ring_clock clk;
	/* Returned so far. */
	uint64_t out_events, out_lost;
};

/* A thread name from a THREADS chunk; seq orders the names of one tid. */
struct evr_trace_tname {
	uint32_t tid;
	uint32_t seq;
	char *name;
};

/* A damaged place the scan stepped over: from a chunk header beyond repair to the next valid one. */
struct evr_trace_skip {
	uint64_t from, to;
};

struct evr_trace_reader {
	int fd;
	bool own_fd;
	uint64_t file_size;
	uint32_t hdr_size;
	/* Scan results. */
	uint64_t good_end;		/* end of the last good chunk */
	uint64_t read_limit;		/* chunks are read below it: file size, then good_end */
	uint64_t last_chunk_off;
	uint64_t chunks;
	bool truncated;
	char truncated_why[160];
	bool has_process, has_session, has_end;
	struct evr_process_info process;
	uint8_t *process_pb;
	struct evr_trace_session session;
	char *session_strings;
	struct evr_trace_end end;
	struct evr_schema_set *schemas;
	struct evr_trace_tname *threads;	/* sorted by tid once scanned, one per tid */
	uint32_t nthreads, threads_cap;
	struct evr_trace_clock clk;
	uint64_t approx_ts;		/* records converted near a clock jump */
	uint64_t last_events_off;	/* for DISCARD: the last EVENTS chunk */
	uint32_t last_events_ring;
	/* Merge state. */
	struct evr_trace_ring *rings;	/* session.nr_rings */
	uint32_t *heap;			/* ring indices, min-heap by current entry */
	uint32_t nheap;
	bool merge_started;
	int64_t pending;		/* ring whose current entry was returned, or -1 */
	uint64_t last_out_ts;
	bool has_out;
	/* Stats. */
	uint64_t out_events, out_lost, first_ts, ts_clamped;
	uint64_t corrupt_chunks, corrupt_packets;
	/* Damage found, repaired or worked around (trace-salvage.c). */
	uint32_t repaired_chunks, salvaged_chunks, missing_chunks;
	uint64_t skipped_bytes;
	bool end_damaged;		/* an END chunk was there, beyond repair */
	bool damage_since_events;	/* chunks skipped since the last EVENTS chunk */
	bool end_checked;		/* the END totals were compared with what was read */
	uint64_t damaged_events, lost_damaged;
	uint64_t *repaired;		/* offsets repaired (sorted): each said once */
	uint32_t nrepaired, repaired_cap;
	/* The damaged places the scan skipped, in file order, so that
	 * evr_trace_reader_chunk_next() walks the chunks the scan counted. */
	struct evr_trace_skip *skips;
	uint32_t nskips, skips_cap;
	/* Streams (trace-stream.c). */
	bool stream;
	bool eof;			/* the stream ended (or cannot be read further) */
	uint32_t next_seq;		/* the next chunk's expected number */
	uint64_t buffered;		/* payload bytes queued in the rings' sq lists */
	struct evr_trace_qchunk *held;	/* the last EVENTS chunk read: a DISCARD may follow */
	uint32_t held_ring;
	uint8_t *sbuf;			/* the read buffer of small chunks */
	uint32_t sbuf_cap;
	struct evr_trace_wm_point *wm;	/* SYNC points not reached yet, oldest first */
	uint32_t nwm, wm_cap;
	uint64_t watermark_ns;		/* every record before it was delivered */
	bool has_watermark;
	uint64_t stream_other_chunks;	/* kinds passed over (samples, module maps...) */
	char problems[EVR_TRACE_PROBLEMS_MAX][200];
	uint32_t nproblems, problems_dropped;
	int err;			/* sticky error of evr_trace_reader_next() */
	char errmsg[160];
	/* evr_trace_reader_chunk_next()'s buffer. */
	uint8_t *cbuf;
	uint32_t cbuf_cap;
};

/* pread exactly @len bytes at @off; -EIO if the file is shorter now. */
int evr_trace_pread(struct evr_trace_reader *r, void *buf, size_t len, uint64_t off);

/* Grow *@buf to hold @need bytes. */
int evr_trace_buf_reserve(uint8_t **buf, uint32_t *cap, uint32_t need);

/*
 * Read the chunk at @off (header and payload) into *@buf and check both CRCs,
 * its kind and its length. A payload one flipped bit away from its CRC is
 * repaired in *@buf (and said, evr_trace_problem()). Return: 0, -EBADMSG (@why
 * says what; after a payload CRC mismatch the payload is in *@buf, its length
 * in *@ret_len), -EIO, -ENOMEM.
 */
int evr_trace_load_chunk(struct evr_trace_reader *r, uint64_t off, uint32_t kind, uint8_t **buf,
			 uint32_t *cap, uint32_t *ret_len, const char **why);

/*
 * Check the payload @buf of the chunk @h at @off against its CRC, repairing one
 * flipped bit in place (and saying so). Return: 0, -EBADMSG (@why says what).
 */
int evr_trace_check_payload(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, uint8_t *buf, const char **why);

/* Validate (and repair one bit of) the file header; set hdr_size, make the schema set. */
int evr_trace_check_file_hdr(struct evr_trace_reader *r, struct evr_trace_file_hdr *fh,
			     char *errbuf, size_t errlen);

/* Stop reading at @off: the file is readable up to there, truncated_why says why. */
__attribute__((format(printf, 3, 4)))
void evr_trace_stop_at(struct evr_trace_reader *r, uint64_t off, const char *fmt, ...);

/* Ring and position of an EVENTS chunk of @len payload bytes fit the session. */
bool evr_trace_events_rec_fits(const struct evr_trace_reader *r,
			       const struct evr_trace_events_rec *rec, uint32_t len);

/* The chunk kinds read whole while scanning (all but EVENTS and unknown ones). */
bool evr_trace_small_kind(uint32_t kind);

/* Take a small chunk's checked payload (process, session, metadata...). */
int evr_trace_scan_small(struct evr_trace_reader *r, uint64_t off,
			 const struct evr_trace_chunk_hdr *h, const uint8_t *p, char *errbuf,
			 size_t errlen);

/* Sort the thread names by tid and keep the last one of each tid. */
void evr_trace_threads_finish(struct evr_trace_reader *r);

/* ---- streams (trace-stream.c): a pipe or socket, read front to back ---- */

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

/* Read the file header and the chunks before the first EVENTS chunk. */
int evr_trace_stream_open(struct evr_trace_reader *r, char *errbuf, size_t errlen);

/*
 * Read the next chunk of the stream. Return: 1 a chunk was read, 0 the end
 * (EOF, or damage a stream cannot skip: truncated says where), -errno (errmsg).
 */
int evr_trace_stream_read(struct evr_trace_reader *r);

/* May the record at @ts_ns be returned now, or could the stream still bring an earlier one? */
bool evr_trace_stream_ready(const struct evr_trace_reader *r, uint64_t ts_ns);

/* The ring's next queued chunk may be parsed now (its times can be converted). */
bool evr_trace_stream_can_take(const struct evr_trace_reader *r, uint32_t ring);

/* Take the ring's next queued chunk into g->buf. Return: 1 taken, 0 none ready. */
int evr_trace_stream_take(struct evr_trace_reader *r, uint32_t ring, uint32_t *ret_len);

void evr_trace_stream_free(struct evr_trace_reader *r);
__attribute__((format(printf, 2, 3)))
void evr_trace_problem(struct evr_trace_reader *r, const char *fmt, ...);

/* The name of a chunk kind, "unknown" for kinds this reader does not know. */
const char *evr_trace_kind_name(uint32_t kind);

/* A chunk header whose magic and CRC hold. */
static inline bool evr_trace_chunk_hdr_ok(const struct evr_trace_chunk_hdr *h)
{
	return h->magic == EVR_TRACE_CHUNK_MAGIC && h->hdr_crc == evr_trace_chunk_hdr_crc(h);
}

/* Repair @h in place if one flipped bit (data or CRC) keeps it from validating. */
bool evr_trace_chunk_hdr_fix(struct evr_trace_chunk_hdr *h);

/*
 * A chunk header at @off that does not validate: repair it in @h if one bit is
 * flipped and say so (return true), else false.
 */
bool evr_trace_repair_hdr(struct evr_trace_reader *r, uint64_t off, struct evr_trace_chunk_hdr *h);

/*
 * After a chunk header at @off that cannot be repaired: the offset of the next
 * valid chunk header (8-byte aligned, numbered @seq or later, inside the file).
 * Return: 1 found (*@ret_off, its number in *@ret_seq), 0 none, -errno.
 */
int evr_trace_resync(struct evr_trace_reader *r, uint64_t off, uint32_t seq, uint64_t *ret_off,
		     uint32_t *ret_seq);

/*
 * The scan skipped from the header beyond repair at @from to the valid one at
 * @to (after evr_trace_resync()): keep it for the chunk walk. Offsets rise
 * from call to call. Return: 0 or -ENOMEM.
 */
int evr_trace_note_skip(struct evr_trace_reader *r, uint64_t from, uint64_t to);

/* Where the chunk walk goes on from @off: past the skipped place that starts there, else @off. */
uint64_t evr_trace_skip_end(const struct evr_trace_reader *r, uint64_t off);

/* A repair at @off: true the first time (count and say it), false if said already. */
bool evr_trace_note_repair(struct evr_trace_reader *r, uint64_t off);

/*
 * A small chunk whose payload failed its CRC beyond repair: use what can be
 * trusted of it (@p, @len as read) and say what was skipped.
 * Return: 0 go on, 1 stop the scan here (nothing after it can be read), -errno.
 */
int evr_trace_salvage_small(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, const uint8_t *p, uint32_t len);

/* Once every view was returned: compare the END chunk's totals with them. */
void evr_trace_check_end(struct evr_trace_reader *r);

/* Used by the salvage code: decode a SESSION / METADATA payload (trace-reader.c). */
int evr_trace_take_session(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
			   char *errbuf, size_t errlen, uint64_t off);
int evr_trace_take_metadata_lenient(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
				    uint32_t *ret_used, uint32_t *ret_skipped);

void evr_trace_merge_free(struct evr_trace_reader *r);

/*
 * The line through (ts0, mono0) and (ts1, mono1), ts1 > ts0, mono1 >= mono0,
 * as a calibration for evr_clock_to_mono_ns(): the largest shift (<= 62) whose
 * multiplier stays below 2^62, so that the product fits 128 bits and an
 * hour-long interval still converts to the nanosecond.
 */
static inline void evr_trace_line_through(uint64_t ts0, uint64_t mono0, uint64_t ts1,
					  uint64_t mono1, struct evr_clock_calib *ret)
{
	unsigned __int128 dm = mono1 - mono0, dt = ts1 - ts0;
	uint32_t shift = 62;

	while (shift > 0 && (dm << shift) / dt >= ((unsigned __int128)1 << 62))
		shift--;
	*ret = (struct evr_clock_calib){
		.kind = EVR_CLOCK_TSC, .shift = shift, .mult = (uint64_t)((dm << shift) / dt),
		.ts_base = ts0, .mono_base = mono0,
	};
}

/* evr_clock_sync_take() without the ring heads: the clocks and the jump flags. */
void evr_clock_sync_point(struct evr_clock_sync_state *st, uint32_t flags,
			  struct evr_trace_sync *ret);

/* Keep a SYNC chunk's point and heads (@len checked by the scan). Return: 0, -ENOMEM. */
int evr_trace_clock_add(struct evr_trace_clock *k, const uint8_t *data, uint32_t len);

/* After the scan: the segments and lines. Return: 0, -ENOMEM. */
int evr_trace_clock_build(struct evr_trace_clock *k, const struct evr_clock_calib *session);

void evr_trace_clock_free(struct evr_trace_clock *k);

/* The general case of evr_trace_ts_ns(). */
uint64_t evr_trace_clock_convert(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				 uint64_t ts);

/*
 * Cross-CPU check of the record at @pos of @ring: published before the next
 * sync point was taken, its timestamp must not exceed the point's, or the
 * writer's CPU and the recorder's disagree (the largest excess is kept).
 * Called after the record was converted (which knows about held values).
 */
void evr_trace_clock_check_slow(struct evr_trace_reader *r, uint32_t ring, uint64_t pos,
				uint64_t ts);

/*
 * CLOCK_MONOTONIC ns of raw timestamp @ts of the record at ring position @pos
 * of @ring. The common case (one segment, the same interval as the ring's last
 * record) stays inline.
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

#endif /* EVR_TRACE_INTERNAL_H */
