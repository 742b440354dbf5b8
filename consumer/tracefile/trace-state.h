/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace reader's state, shared by the files of the reader: trace-chunk.c
 * (bottom), trace-take.c, trace-salvage.c, trace-stream.c, trace-merge.c and
 * trace-reader.c (top); each layer's functions are in its own header.
 */
#ifndef EVR_TRACE_STATE_H
#define EVR_TRACE_STATE_H

#include <stdbool.h>
#include <stdint.h>

#include <evring/trace.h>

#include "trace-clock.h"

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
	/* Format 2: several processes; this reader reads stream want of them. */
	bool multi;
	uint16_t want;
	struct evr_trace_proc *procs;	/* the process table (stream 0), by stream */
	uint32_t nprocs, procs_cap;
	uint32_t max_stream;		/* the highest stream number seen */
	bool has_file_end;		/* stream 0's END: the recording finished */
	uint64_t other_chunks;		/* chunks of other streams passed over */
	uint64_t file_size;
	uint32_t hdr_size;
	/* Scan results. */
	uint64_t good_end;		/* end of the last good chunk */
	uint64_t read_limit;		/* chunks are read below it: file size, then good_end */
	uint64_t last_chunk_off;
	uint64_t chunks;
	uint64_t unchecked_chunks;	/* ... of them without a payload CRC */
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

#endif /* EVR_TRACE_STATE_H */
