// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: the file header and the small chunks (process, session,
 * metadata, threads, sync points, losses, discards, END), decoded into the
 * reader as the scan (trace-reader.c) or the stream (trace-stream.c) meets
 * them, and by the salvage code (trace-salvage.c) from damaged payloads.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <evring/framing.h>
#include <evring/process-info.h>

#include "crc32c.h"
#include "trace-chunk.h"
#include "trace-format.h"
#include "trace-take.h"

int evr_trace_check_file_hdr(struct evr_trace_reader *r, struct evr_trace_file_hdr *fh,
			     char *errbuf, size_t errlen)
{
	if (fh->crc != evr_crc32c(0, fh, EVR_TRACE_FILE_HDR_CRC_LEN)) {
		struct evr_trace_file_hdr fixed = *fh;
		uint64_t bit;
		int k = evr_crc32c_fix1(&fixed, EVR_TRACE_FILE_HDR_CRC_LEN, fixed.crc, &bit);

		/* One flipped bit (the magic's included): repair, if that makes a header. */
		if (k == 1)
			((uint8_t *)&fixed)[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		if (k >= 0 && memcmp(fixed.magic, EVR_TRACE_MAGIC, sizeof(fixed.magic)) == 0) {
			fixed.crc = evr_crc32c(0, &fixed, EVR_TRACE_FILE_HDR_CRC_LEN);
			*fh = fixed;
			evr_trace_problem(r, "file header: one flipped bit repaired from its CRC");
		}
	}
	if (memcmp(fh->magic, EVR_TRACE_MAGIC, sizeof(fh->magic)) != 0) {
		evr_trace_set_err(errbuf, errlen, "not an evring trace file (bad magic)");
		return -EBADMSG;
	}
	if (fh->crc != evr_crc32c(0, fh, EVR_TRACE_FILE_HDR_CRC_LEN)) {
		evr_trace_set_err(errbuf, errlen, "corrupt trace file header (CRC mismatch)");
		return -EBADMSG;
	}
	if (fh->version > EVR_TRACE_VERSION || fh->abi_version > EVR_ABI_VERSION) {
		evr_trace_set_err(errbuf, errlen, "trace format %u (records ABI %u) is newer than this reader "
			"(%u, ABI %u)", fh->version, fh->abi_version, EVR_TRACE_VERSION,
			EVR_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (fh->version < EVR_TRACE_VERSION_ONE || fh->abi_version != EVR_ABI_VERSION ||
	    fh->hdr_size < sizeof(*fh) || fh->hdr_size > 4096 || (fh->hdr_size & 7u) ||
	    fh->hdr_size > r->file_size) {
		evr_trace_set_err(errbuf, errlen, "corrupt trace file header (version %u, ABI %u, size %u)",
			fh->version, fh->abi_version, fh->hdr_size);
		return -EBADMSG;
	}
	r->hdr_size = fh->hdr_size;
	r->multi = fh->version == EVR_TRACE_VERSION_MULTI;
	if (r->multi && r->stream) {
		/* Each process's chunks would have to be kept apart while they pass. */
		evr_trace_set_err(errbuf, errlen, "a trace of several processes (format 2) is read "
				  "from a file, not a pipe: save it to a file first");
		return -EOPNOTSUPP;
	}
	if (!r->multi)
		r->want = 0;		/* version 1: chunk headers carry 0, the one process */
	else if (!r->want)
		r->want = 1;		/* the first process, unless one was asked for */
	return evr_schema_set_new(&r->schemas);
}

static char *dup_str(const char *s)
{
	return strdup(s ? s : "");
}

/* Decode a packed evr.ProcessInfo; @pb becomes the reader's (also on failure). */
static int take_process(struct evr_trace_reader *r, uint8_t *pb, uint32_t len)
{
	struct evr_process_info *p = &r->process;
	ProtobufCMessage *m;
	Evr__ProcessInfo *pi;
	int err;

	r->process_pb = pb;
	err = evr_pb_unpack(&evr__process_info__descriptor, pb, len, &m);
	if (err)
		return -EBADMSG;
	pi = (Evr__ProcessInfo *)m;
	err = -ENOMEM;
	evr_process_info_scalars(p, pi);
	p->argv = calloc(pi->n_argv + 1, sizeof(*p->argv));
	if (!p->argv)
		goto out;
	for (size_t i = 0; i < pi->n_argv; i++) {
		p->argv[i] = dup_str(pi->argv[i]);
		if (!p->argv[i])
			goto out;
		p->argc++;
	}
	p->exe = dup_str(pi->exe);
	p->hostname = dup_str(pi->hostname);
	p->evring_version = dup_str(pi->evring_version);
	if (!p->exe || !p->hostname || !p->evring_version)
		goto out;
	p->pb = pb;
	p->pb_len = len;
	err = 0;
out:
	evr_pb_free(m);
	return err;
}

int evr_trace_take_session(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
			   char *errbuf, size_t errlen, uint64_t off)
{
	struct evr_trace_session_rec rec;
	struct evr_trace_session *s = &r->session;
	char *str;

	memcpy(&rec, data, sizeof(rec));
	if (!evr_trace_geometry_ok(rec.mode, rec.packet_size, rec.ring_size, rec.nr_rings)) {
		evr_trace_set_err(errbuf, errlen, "SESSION chunk at offset %llu: invalid geometry "
			"(mode %u, packet size %u, ring size %llu, %u rings)",
			(unsigned long long)off, rec.mode, rec.packet_size,
			(unsigned long long)rec.ring_size, rec.nr_rings);
		return -EBADMSG;
	}
	if (!evr_trace_clock_ok(&rec.clock)) {
		evr_trace_set_err(errbuf, errlen, "SESSION chunk at offset %llu: invalid clock calibration",
			(unsigned long long)off);
		return -EBADMSG;
	}
	if ((uint64_t)rec.providers_len + rec.client_len != len - sizeof(rec)) {
		evr_trace_set_err(errbuf, errlen, "SESSION chunk at offset %llu: string lengths do not add up",
			(unsigned long long)off);
		return -EBADMSG;
	}
	str = malloc((size_t)rec.providers_len + rec.client_len + 2);
	if (!str)
		return -ENOMEM;
	memcpy(str, data + sizeof(rec), rec.providers_len);
	str[rec.providers_len] = '\0';
	memcpy(str + rec.providers_len + 1, data + sizeof(rec) + rec.providers_len, rec.client_len);
	str[rec.providers_len + 1 + rec.client_len] = '\0';
	r->session_strings = str;
	evr_trace_session_from_rec(s, &rec);
	s->providers = str;
	s->client = str + rec.providers_len + 1;
	r->clk.nr_rings = rec.nr_rings;
	r->rings = calloc(rec.nr_rings, sizeof(*r->rings));
	r->heap = calloc(rec.nr_rings, sizeof(*r->heap));
	if (!r->rings || !r->heap)
		return -ENOMEM;
	r->has_session = true;
	return 0;
}

/*
 * Metadata entries: a description that does not decode is skipped, like a
 * live consumer would (its events then show as unknown), not fatal: the
 * recorder stores what the producer wrote, and a broken producer must not make
 * the rest of its trace unreadable. A frame that overruns the chunk is fatal.
 */
static int take_metadata(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
			 char *errbuf, size_t errlen, uint64_t off)
{
	uint32_t pos = 0;

	while (pos < len) {
		struct evr_meta_entry e;
		int err;

		if (len - pos < sizeof(e))
			goto bad;
		memcpy(&e, data + pos, sizeof(e));
		pos += sizeof(e);
		if (e.size > len - pos)
			goto bad;
		if (e.kind == EVR_META_EVENT) {
			err = evr_schema_set_add_pb(r->schemas, data + pos, e.size);
			if (err == -ENOMEM)
				return err;
		}
		if (evr_align8(e.size) > len - pos)
			goto bad;
		pos += (uint32_t)evr_align8(e.size);
	}
	return 0;
bad:
	evr_trace_set_err(errbuf, errlen, "METADATA chunk at offset %llu: entry at byte %u overruns the chunk",
		(unsigned long long)off, pos);
	return -EBADMSG;
}

int evr_trace_take_metadata_lenient(struct evr_trace_reader *r, const uint8_t *data, uint32_t len,
				    uint32_t *ret_used, uint32_t *ret_skipped)
{
	uint32_t pos = 0, used = 0, skipped = 0;

	while (len - pos >= sizeof(struct evr_meta_entry)) {
		struct evr_meta_entry e;
		int err;

		memcpy(&e, data + pos, sizeof(e));
		pos += sizeof(e);
		if (e.size > len - pos || evr_align8(e.size) > len - pos) {
			skipped++;	/* the frame itself is damaged: the rest is lost */
			break;
		}
		if (e.kind == EVR_META_EVENT) {
			err = evr_schema_set_add_pb(r->schemas, data + pos, e.size);
			if (err == -ENOMEM)
				return err;
			if (err)
				skipped++;
			else
				used++;
		}
		pos += (uint32_t)evr_align8(e.size);
	}
	*ret_used = used;
	*ret_skipped = skipped;
	return 0;
}

static int take_threads(struct evr_trace_reader *r, const uint8_t *p, uint32_t len, char *errbuf,
			size_t errlen, uint64_t off)
{
	uint32_t at = 0;

	while (at < len) {
		struct evr_trace_thread_rec rec;
		struct evr_trace_tname *t;

		if (len - at < sizeof(rec))
			goto bad;
		memcpy(&rec, p + at, sizeof(rec));
		at += sizeof(rec);
		if (rec.name_len > len - at)
			goto bad;
		if (r->nthreads == r->threads_cap) {
			uint32_t cap = r->threads_cap ? 2 * r->threads_cap : 64;
			void *nt = reallocarray(r->threads, cap, sizeof(*r->threads));

			if (!nt)
				return -ENOMEM;
			r->threads = nt;
			r->threads_cap = cap;
		}
		t = &r->threads[r->nthreads];
		t->name = strndup((const char *)p + at, rec.name_len);
		if (!t->name)
			return -ENOMEM;
		t->tid = rec.tid;
		t->seq = r->nthreads++;
		at += (rec.name_len + 3) & ~3u;
	}
	return 0;
bad:
	evr_trace_set_err(errbuf, errlen, "THREADS chunk at offset %llu: a name runs past its chunk",
		(unsigned long long)off);
	return -EBADMSG;
}

static int tname_cmp(const void *a, const void *b)
{
	const struct evr_trace_tname *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void evr_trace_threads_finish(struct evr_trace_reader *r)
{
	uint32_t out = 0;

	if (!r->nthreads)
		return;
	qsort(r->threads, r->nthreads, sizeof(*r->threads), tname_cmp);
	for (uint32_t i = 0; i < r->nthreads; i++) {
		if (i + 1 < r->nthreads && r->threads[i + 1].tid == r->threads[i].tid) {
			free(r->threads[i].name);
			continue;
		}
		r->threads[out++] = r->threads[i];
	}
	r->nthreads = out;
}

const char *evr_trace_reader_thread_name(const struct evr_trace_reader *r, uint32_t tid)
{
	uint32_t lo = 0, hi;

	if (!r)
		return NULL;
	hi = r->nthreads;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->threads[mid].tid == tid)
			return r->threads[mid].name;
		if (r->threads[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

int evr_trace_scan_small(struct evr_trace_reader *r, uint64_t off,
			 const struct evr_trace_chunk_hdr *h, const uint8_t *p, char *errbuf,
			 size_t errlen)
{
	switch (h->kind) {
	case EVR_CHUNK_PROCESS: {
		uint8_t *copy;
		int err;

		if (r->has_process)
			return 0;	/* the first one describes the process */
		copy = malloc(h->len);
		if (!copy)
			return -ENOMEM;
		memcpy(copy, p, h->len);
		err = take_process(r, copy, h->len);
		if (err == -EBADMSG)
			evr_trace_set_err(errbuf, errlen, "PROCESS chunk at offset %llu does not decode",
				(unsigned long long)off);
		if (err)
			return err;
		r->has_process = true;
		return 0;
	}
	case EVR_CHUNK_SESSION:
		if (r->has_session) {
			evr_trace_set_err(errbuf, errlen, "a second SESSION chunk at offset %llu",
				(unsigned long long)off);
			return -EBADMSG;
		}
		return evr_trace_take_session(r, p, h->len, errbuf, errlen, off);
	case EVR_CHUNK_METADATA:
		return take_metadata(r, p, h->len, errbuf, errlen, off);
	case EVR_CHUNK_THREADS:
		return take_threads(r, p, h->len, errbuf, errlen, off);
	case EVR_CHUNK_SYNC: {
		int err;

		if (!r->has_session) {
			evr_trace_set_err(errbuf, errlen, "SYNC chunk at offset %llu precedes the SESSION chunk",
				(unsigned long long)off);
			return -EBADMSG;
		}
		err = evr_trace_clock_add(&r->clk, p, h->len);
		if (err == -EBADMSG)
			evr_trace_set_err(errbuf, errlen, "SYNC chunk at offset %llu holds %u ring heads, the "
				"session has %u rings", (unsigned long long)off,
				(h->len - (uint32_t)sizeof(struct evr_trace_sync)) / 8u,
				r->session.nr_rings);
		return err;
	}
	case EVR_CHUNK_LOST: {
		struct evr_trace_lost_rec rec;
		struct evr_trace_ring *ring;

		memcpy(&rec, p, sizeof(rec));
		if (!r->has_session || rec.ring >= r->session.nr_rings) {
			evr_trace_set_err(errbuf, errlen, "LOST chunk at offset %llu names ring %u, "
				"which the session does not have", (unsigned long long)off, rec.ring);
			return -EBADMSG;
		}
		ring = &r->rings[rec.ring];
		ring->final_lost = evr_trace_lost_add(ring->final_lost, rec.count);
		return 0;
	}
	case EVR_CHUNK_DISCARD: {
		struct evr_trace_discard_rec rec;
		struct evr_trace_ring *ring;

		memcpy(&rec, p, sizeof(rec));
		if (r->damage_since_events && rec.chunk_off != r->last_events_off) {
			/* It names a chunk in the damage skipped since: gone anyway. */
			return 0;
		}
		if (!r->has_session || rec.chunk_off == UINT64_MAX ||
		    rec.chunk_off != r->last_events_off) {
			evr_trace_set_err(errbuf, errlen, "DISCARD chunk at offset %llu names offset %llu, "
				"not the last EVENTS chunk", (unsigned long long)off,
				(unsigned long long)rec.chunk_off);
			return -EBADMSG;
		}
		/* The last EVENTS chunk is the last of its ring's list, unless it was
		 * skipped as corrupt, in which case there is nothing to retract. */
		if (r->last_events_ring != UINT32_MAX) {
			ring = &r->rings[r->last_events_ring];
			if (ring->nchunks && ring->chunks[ring->nchunks - 1] == rec.chunk_off)
				ring->nchunks--;
		}
		r->last_events_off = UINT64_MAX;
		return 0;
	}
	case EVR_CHUNK_END: {
		struct evr_trace_end_rec rec;

		memcpy(&rec, p, sizeof(rec));
		r->end = (struct evr_trace_end){
			.events = rec.events, .lost = rec.lost,
			.end_realtime_ns = rec.end_realtime_ns, .end_mono_ns = rec.end_mono_ns,
			.flags = rec.flags, .chunks = rec.chunks, .bytes = rec.bytes,
		};
		r->has_end = true;
		return 0;
	}
	default:
		return 0;	/* unknown kinds are skipped */
	}
}

bool evr_trace_small_kind(uint32_t kind)
{
	return kind >= EVR_CHUNK_PROCESS && kind <= EVR_CHUNK_SYNC && kind != EVR_CHUNK_EVENTS;
}
