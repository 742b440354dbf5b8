/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The trace file format's sizes, limits and checks, shared by the writer and
 * the reader: the bottom of the trace library (docs/trace-format.md).
 */
#ifndef EVR_TRACE_FORMAT_H
#define EVR_TRACE_FORMAT_H

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

/*
 * The fields that struct evr_trace_session (what the writer is given and the
 * reader returns) and struct evr_trace_session_rec (the SESSION chunk) share,
 * by the same names and types: the one list both directions copy by, so that
 * a field added to both is written and read back, not listed twice and
 * forgotten once. The strings travel after the record, with their lengths.
 */
#define EVR_TRACE_SESSION_FIELDS(X)						\
	X(mode) X(packet_size) X(ring_size) X(nr_rings) X(session_id)		\
	X(session_serial) X(start_realtime_ns) X(start_mono_ns) X(clock)

/* The record of @s's fields (the caller zeroes it first and sets the string lengths). */
static inline void evr_trace_session_to_rec(struct evr_trace_session_rec *rec,
					    const struct evr_trace_session *s)
{
#define EVR_COPY_FIELD(f) rec->f = s->f;
	EVR_TRACE_SESSION_FIELDS(EVR_COPY_FIELD)
#undef EVR_COPY_FIELD
}

/* @rec's fields into @s (the caller points @s's strings into the chunk's). */
static inline void evr_trace_session_from_rec(struct evr_trace_session *s,
					      const struct evr_trace_session_rec *rec)
{
#define EVR_COPY_FIELD(f) s->f = rec->f;
	EVR_TRACE_SESSION_FIELDS(EVR_COPY_FIELD)
#undef EVR_COPY_FIELD
}

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

/* Version 2: the chunk's stream (its flags less EVR_TRACE_CHUNK_UNCHECKED). */
static inline uint32_t evr_trace_chunk_stream(const struct evr_trace_chunk_hdr *h)
{
	return h->flags & EVR_TRACE_CHUNK_STREAM_MASK;
}

/* A chunk header whose magic and CRC hold. */
static inline bool evr_trace_chunk_hdr_ok(const struct evr_trace_chunk_hdr *h)
{
	return h->magic == EVR_TRACE_CHUNK_MAGIC && h->hdr_crc == evr_trace_chunk_hdr_crc(h);
}

#endif /* EVR_TRACE_FORMAT_H */
