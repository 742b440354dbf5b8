// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader, bottom layer: reading a chunk and checking it. Every
 * length is checked against its kind's limit and the readable end before
 * anything is allocated, and every CRC before a payload is used; one flipped
 * bit is repaired from the CRC it fails and said (evr_trace_problem()). The
 * files above it (trace-take.c, trace-salvage.c, trace-stream.c,
 * trace-merge.c, trace-reader.c) build on it; it calls none of them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crc32c.h"
#include "trace-chunk.h"

void evr_trace_set_err(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	if (!buf || !len)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

int evr_trace_pread(struct evr_trace_reader *r, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = pread(r->fd, p, len, (off_t)off);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;	/* the file shrank since we measured it */
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

int evr_trace_buf_reserve(uint8_t **buf, uint32_t *cap, uint32_t need)
{
	uint8_t *n;

	if (need <= *cap)
		return 0;
	n = realloc(*buf, need);
	if (!n)
		return -ENOMEM;
	*buf = n;
	*cap = need;
	return 0;
}

const char *evr_trace_kind_name(uint32_t kind)
{
	switch (kind) {
	case EVR_CHUNK_PROCESS: return "PROCESS";
	case EVR_CHUNK_SESSION: return "SESSION";
	case EVR_CHUNK_METADATA: return "METADATA";
	case EVR_CHUNK_EVENTS: return "EVENTS";
	case EVR_CHUNK_LOST: return "LOST";
	case EVR_CHUNK_DISCARD: return "DISCARD";
	case EVR_CHUNK_END: return "END";
	case EVR_CHUNK_THREADS: return "THREADS";
	case EVR_CHUNK_SYNC: return "SYNC";
	case EVR_CHUNK_PAD: return "PAD";
	case EVR_CHUNK_PROCS: return "PROCS";
	default: return "unknown";
	}
}

int evr_trace_load_chunk(struct evr_trace_reader *r, uint64_t off, uint32_t kind, uint8_t **buf,
			 uint32_t *cap, uint32_t *ret_len, const char **why)
{
	struct evr_trace_chunk_hdr h;
	int err;

	if (off > r->read_limit || r->read_limit - off < EVR_TRACE_CHUNK_HDR_SIZE) {
		*why = "chunk offset past the readable end";
		return -EBADMSG;
	}
	err = evr_trace_pread(r, &h, sizeof(h), off);
	if (err)
		return err;
	/* A header the scan repaired is repaired again, silently (said once). */
	if (!evr_trace_chunk_hdr_ok(&h))
		(void)evr_trace_chunk_hdr_fix(&h);
	if (!evr_trace_chunk_hdr_ok(&h) || (kind && h.kind != kind) ||
	    !evr_trace_chunk_len_ok(h.kind, h.len) ||
	    r->read_limit - off - EVR_TRACE_CHUNK_HDR_SIZE < h.len) {
		*why = "chunk header changed since the file was opened";
		return -EBADMSG;
	}
	err = evr_trace_buf_reserve(buf, cap, h.len ? h.len : 1);
	if (err)
		return err;
	err = evr_trace_pread(r, *buf, h.len, off + EVR_TRACE_CHUNK_HDR_SIZE);
	if (err)
		return err;
	*ret_len = h.len;
	return evr_trace_check_payload(r, off, &h, *buf, why);
}

int evr_trace_check_payload(struct evr_trace_reader *r, uint64_t off,
			    const struct evr_trace_chunk_hdr *h, uint8_t *buf, const char **why)
{
	uint64_t bit;

	/* Written without its CRC (the header's CRC vouches for the flag). */
	if (h->flags & EVR_TRACE_CHUNK_UNCHECKED)
		return 0;
	if (evr_crc32c(0, buf, h->len) == h->data_crc)
		return 0;
	switch (evr_crc32c_fix1(buf, h->len, h->data_crc, &bit)) {
	case 1:
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (!evr_trace_note_repair(r, off))
			return 0;
		r->repaired_chunks++;
		evr_trace_problem(r, "%s chunk at offset %llu: one flipped bit (byte %llu, bit %u) "
				  "repaired from its CRC", evr_trace_kind_name(h->kind),
				  (unsigned long long)off, (unsigned long long)(bit / 8),
				  (unsigned)(bit % 8));
		return 0;
	case 0:
		if (!evr_trace_note_repair(r, off))
			return 0;
		r->repaired_chunks++;
		evr_trace_problem(r, "%s chunk at offset %llu: one flipped bit in its stored CRC; "
				  "the payload is intact", evr_trace_kind_name(h->kind),
				  (unsigned long long)off);
		return 0;
	default:
		*why = "payload CRC mismatch";
		return -EBADMSG;
	}
}

void evr_trace_stop_at(struct evr_trace_reader *r, uint64_t off, const char *fmt, ...)
{
	va_list ap;
	int n;

	r->truncated = true;
	n = snprintf(r->truncated_why, sizeof(r->truncated_why), "offset %llu: ",
		     (unsigned long long)off);
	va_start(ap, fmt);
	if (n > 0 && (size_t)n < sizeof(r->truncated_why))
		vsnprintf(r->truncated_why + n, sizeof(r->truncated_why) - (size_t)n, fmt, ap);
	va_end(ap);
}

/* Ring and position of an EVENTS chunk of @len bytes fit the session. */
bool evr_trace_events_rec_fits(const struct evr_trace_reader *r,
			       const struct evr_trace_events_rec *rec, uint32_t len)
{
	uint32_t pmask = r->session.packet_size - 1;

	return rec->ring < r->session.nr_rings && !(rec->pos & 7u) &&
	       (rec->pos & pmask) + (len - sizeof(*rec)) <= r->session.packet_size;
}

void evr_trace_problem(struct evr_trace_reader *r, const char *fmt, ...)
{
	va_list ap;

	if (r->nproblems == EVR_TRACE_PROBLEMS_MAX) {
		r->problems_dropped++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(r->problems[r->nproblems], sizeof(r->problems[0]), fmt, ap);
	va_end(ap);
	r->nproblems++;
}

bool evr_trace_note_repair(struct evr_trace_reader *r, uint64_t off)
{
	uint32_t lo = 0, hi = r->nrepaired;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->repaired[mid] == off)
			return false;
		if (r->repaired[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (r->nrepaired == r->repaired_cap) {
		uint32_t cap = r->repaired_cap ? 2 * r->repaired_cap : 16;
		uint64_t *n = reallocarray(r->repaired, cap, sizeof(*n));

		if (!n)
			return true;	/* said twice rather than not at all */
		r->repaired = n;
		r->repaired_cap = cap;
	}
	memmove(r->repaired + lo + 1, r->repaired + lo, (r->nrepaired - lo) * sizeof(*r->repaired));
	r->repaired[lo] = off;
	r->nrepaired++;
	return true;
}

bool evr_trace_chunk_hdr_fix(struct evr_trace_chunk_hdr *h)
{
	struct evr_trace_chunk_hdr fixed = *h;
	uint64_t bit;
	int k = evr_crc32c_fix1(&fixed, EVR_TRACE_CHUNK_HDR_CRC_LEN, fixed.hdr_crc, &bit);

	if (k == 1)
		((uint8_t *)&fixed)[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	else if (k == 0)
		fixed.hdr_crc = evr_trace_chunk_hdr_crc(&fixed);
	else
		return false;
	if (!evr_trace_chunk_hdr_ok(&fixed))
		return false;
	*h = fixed;
	return true;
}

bool evr_trace_repair_hdr(struct evr_trace_reader *r, uint64_t off, struct evr_trace_chunk_hdr *h)
{
	if (!evr_trace_chunk_hdr_fix(h))
		return false;
	if (!evr_trace_note_repair(r, off + 1))	/* + 1: the header, not the payload */
		return true;
	r->repaired_chunks++;
	evr_trace_problem(r, "chunk header at offset %llu: one flipped bit repaired from its CRC",
			  (unsigned long long)off);
	return true;
}
