// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file reader: open and scan (format: docs/trace-format.md). The time
 * ordered merge of the rings is in trace-merge.c.
 *
 * The file is hostile input. It is read with pread() into buffers sized by
 * validated lengths (never mmap: a file truncated under a mapping would raise
 * SIGBUS), every length is checked against its kind's limit and the file size
 * before anything is allocated, and every CRC is checked before a payload is
 * used.
 *
 * Opening scans the chunk headers once. Small chunks (process, session,
 * metadata, loss, discard, end) are read and decoded on the way; of an EVENTS
 * chunk only its ring number is read, and its offset goes to that ring's list.
 * The scan stops at the first chunk that is cut short or whose header (or
 * small payload) fails its checks: what precedes it is the readable file, and
 * the reader says the file is truncated, where and why. A chunk whose CRCs are
 * right but whose content is impossible (an EVENTS chunk before the session, a
 * bad session geometry) was written that way on purpose: that is -EBADMSG.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/framing.h>

#include "process-internal.h"
#include "trace-internal.h"

__attribute__((format(printf, 3, 4)))
static void set_err(char *buf, size_t len, const char *fmt, ...)
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

/* ---- small chunks -------------------------------------------------------- */

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
		set_err(errbuf, errlen, "SESSION chunk at offset %llu: invalid geometry "
			"(mode %u, packet size %u, ring size %llu, %u rings)",
			(unsigned long long)off, rec.mode, rec.packet_size,
			(unsigned long long)rec.ring_size, rec.nr_rings);
		return -EBADMSG;
	}
	if (!evr_trace_clock_ok(&rec.clock)) {
		set_err(errbuf, errlen, "SESSION chunk at offset %llu: invalid clock calibration",
			(unsigned long long)off);
		return -EBADMSG;
	}
	if ((uint64_t)rec.providers_len + rec.client_len != len - sizeof(rec)) {
		set_err(errbuf, errlen, "SESSION chunk at offset %llu: string lengths do not add up",
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
	s->mode = rec.mode;
	s->packet_size = rec.packet_size;
	s->ring_size = rec.ring_size;
	s->nr_rings = rec.nr_rings;
	s->session_id = rec.session_id;
	s->session_serial = rec.session_serial;
	s->start_realtime_ns = rec.start_realtime_ns;
	s->start_mono_ns = rec.start_mono_ns;
	s->clock = rec.clock;
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
	set_err(errbuf, errlen, "METADATA chunk at offset %llu: entry at byte %u overruns the chunk",
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

static int ring_add_chunk(struct evr_trace_ring *ring, uint64_t off)
{
	if (ring->nchunks == ring->chunks_cap) {
		uint32_t cap = ring->chunks_cap ? ring->chunks_cap * 2 : 64;
		uint64_t *n;

		if (cap < ring->chunks_cap)
			return -ENOMEM;
		n = realloc(ring->chunks, sizeof(*n) * cap);
		if (!n)
			return -ENOMEM;
		ring->chunks = n;
		ring->chunks_cap = cap;
	}
	ring->chunks[ring->nchunks++] = off;
	return 0;
}

/* ---- the scan -------------------------------------------------------------- */

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

static int scan_events(struct evr_trace_reader *r, uint64_t off, const struct evr_trace_chunk_hdr *h,
		       const uint8_t *rest, char *errbuf, size_t errlen)
{
	struct evr_trace_events_rec rec;

	if (!r->has_session) {
		set_err(errbuf, errlen, "EVENTS chunk at offset %llu precedes the SESSION chunk",
			(unsigned long long)off);
		return -EBADMSG;
	}
	memcpy(&rec, rest, sizeof(rec));
	if (!evr_trace_events_rec_fits(r, &rec, h->len) || rec.reserved ||
	    !r->rings[rec.ring].nchunks || rec.pos != r->rings[rec.ring].scan_pos) {
		/*
		 * A ring's first chunk, or one not where the ring's last chunk ended
		 * (legitimate after a lap, a retraction or a bad packet; or a flipped
		 * bit): check the CRC now, repairing one bit, before ring and position
		 * are trusted. The common case, the next chunk of a ring, costs nothing.
		 */
		uint8_t *buf = NULL;
		uint32_t cap = 0, len;
		const char *why;
		int err = evr_trace_load_chunk(r, off, EVR_CHUNK_EVENTS, &buf, &cap, &len, &why);

		if (!err)
			memcpy(&rec, buf, sizeof(rec));
		free(buf);
		if (err == -EBADMSG) {
			/* Skipped like any corrupt EVENTS chunk, not taken for a hostile file. */
			r->corrupt_chunks++;
			r->last_events_off = off;
			r->last_events_ring = UINT32_MAX;	/* nothing to retract */
			return 0;
		}
		if (err)
			return err;
		if (!evr_trace_events_rec_fits(r, &rec, h->len)) {
			set_err(errbuf, errlen, "EVENTS chunk at offset %llu: ring %u position %llu "
				"does not fit the session (%u rings, %u-byte packets)",
				(unsigned long long)off, rec.ring, (unsigned long long)rec.pos,
				r->session.nr_rings, r->session.packet_size);
			return -EBADMSG;
		}
	}
	r->last_events_off = off;
	r->last_events_ring = rec.ring;
	r->rings[rec.ring].scan_pos = rec.pos + (h->len - (uint32_t)sizeof(rec));
	return ring_add_chunk(&r->rings[rec.ring], off);
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
	set_err(errbuf, errlen, "THREADS chunk at offset %llu: a name runs past its chunk",
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
			set_err(errbuf, errlen, "PROCESS chunk at offset %llu does not decode",
				(unsigned long long)off);
		if (err)
			return err;
		r->has_process = true;
		return 0;
	}
	case EVR_CHUNK_SESSION:
		if (r->has_session) {
			set_err(errbuf, errlen, "a second SESSION chunk at offset %llu",
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
			set_err(errbuf, errlen, "SYNC chunk at offset %llu precedes the SESSION chunk",
				(unsigned long long)off);
			return -EBADMSG;
		}
		err = evr_trace_clock_add(&r->clk, p, h->len);
		if (err == -EBADMSG)
			set_err(errbuf, errlen, "SYNC chunk at offset %llu holds %u ring heads, the "
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
			set_err(errbuf, errlen, "LOST chunk at offset %llu names ring %u, "
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
			set_err(errbuf, errlen, "DISCARD chunk at offset %llu names offset %llu, "
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

static int scan(struct evr_trace_reader *r, char *errbuf, size_t errlen)
{
	uint64_t off = r->hdr_size;
	uint8_t *buf = NULL;
	uint32_t cap = 0;
	uint32_t seq = 0;
	int err = 0;

	r->good_end = off;
	r->read_limit = r->file_size;
	r->last_events_off = UINT64_MAX;
	while (off < r->file_size) {
		uint8_t hb[EVR_TRACE_CHUNK_HDR_SIZE + sizeof(struct evr_trace_events_rec)];
		struct evr_trace_chunk_hdr h;
		uint64_t avail = r->file_size - off;
		uint64_t span;

		if (avail < EVR_TRACE_CHUNK_HDR_SIZE) {
			evr_trace_stop_at(r, off, "the file ends inside a chunk header");
			break;
		}
		err = evr_trace_pread(r, hb, avail < sizeof(hb) ? (size_t)avail : sizeof(hb), off);
		if (err)
			goto out;
		memcpy(&h, hb, sizeof(h));
		if (!evr_trace_chunk_hdr_ok(&h)) {
			uint64_t next;

			if (evr_trace_repair_hdr(r, off, &h)) {
				memcpy(hb, &h, sizeof(h));
			} else {
				/* Damage, not a cut (a cut ends the file): find the next chunk. */
				uint32_t nseq = seq;

				err = evr_trace_resync(r, off, seq, &next, &nseq);
				if (err < 0)
					goto out;
				if (err == 0) {
					evr_trace_stop_at(r, off, "invalid chunk header (magic or CRC)");
					break;
				}
				err = evr_trace_note_skip(r, off, next);
				if (err < 0)
					goto out;
				evr_trace_problem(r, "%llu bytes at offset %llu skipped: a chunk header "
						  "there is damaged beyond repair (%u chunks lost with "
						  "it); reading on at offset %llu",
						  (unsigned long long)(next - off), (unsigned long long)off,
						  nseq - seq, (unsigned long long)next);
				r->skipped_bytes += next - off;
				r->missing_chunks += nseq - seq;
				r->damage_since_events = true;
				seq = nseq;
				off = next;
				continue;
			}
		}
		if (h.seq != seq) {
			if (h.seq < seq) {
				evr_trace_stop_at(r, off, "chunk number %u where %u was expected", h.seq, seq);
				break;
			}
			/* A valid chunk further on: the chunks in between are gone. */
			evr_trace_problem(r, "chunks %u to %u are missing (the file goes on at offset "
					  "%llu with chunk %u)", seq, h.seq - 1, (unsigned long long)off,
					  h.seq);
			r->missing_chunks += h.seq - seq;
			r->damage_since_events = true;
			seq = h.seq;
		}
		if (!evr_trace_chunk_len_ok(h.kind, h.len)) {
			evr_trace_stop_at(r, off, "chunk (%s) of impossible length %u", evr_trace_kind_name(h.kind),
				h.len);
			break;
		}
		if (avail - EVR_TRACE_CHUNK_HDR_SIZE < h.len) {
			evr_trace_stop_at(r, off, "the file ends inside a chunk (%s, %u of %u bytes)",
				evr_trace_kind_name(h.kind), (uint32_t)(avail - EVR_TRACE_CHUNK_HDR_SIZE),
				h.len);
			break;
		}
		if (!r->has_session && (r->skipped_bytes || r->missing_chunks) &&
		    (h.kind == EVR_CHUNK_EVENTS || h.kind == EVR_CHUNK_LOST ||
		     h.kind == EVR_CHUNK_DISCARD || h.kind == EVR_CHUNK_SYNC)) {
			/* The SESSION chunk was in the damage: no event can be read. */
			evr_trace_stop_at(r, off, "the SESSION chunk is missing (damaged), nothing after it "
				"can be read");
			break;
		}
		if (h.kind == EVR_CHUNK_EVENTS) {
			err = scan_events(r, off, &h, hb + sizeof(h), errbuf, errlen);
			r->damage_since_events = false;
		} else if (evr_trace_small_kind(h.kind)) {
			uint32_t len = 0;
			const char *why;

			err = evr_trace_load_chunk(r, off, h.kind, &buf, &cap, &len, &why);
			if (err == -EBADMSG) {
				/* Past repair (the header is good, so its length is known). */
				err = evr_trace_salvage_small(r, off, &h, buf, len);
				if (err == 1) {
					err = 0;
					evr_trace_stop_at(r, off, "chunk (%s): %s", evr_trace_kind_name(h.kind), why);
					break;
				}
			} else if (!err) {
				err = evr_trace_scan_small(r, off, &h, buf, errbuf, errlen);
			}
		}
		if (err)
			goto out;
		span = evr_trace_chunk_span(h.len);
		r->chunks++;
		r->last_chunk_off = off;
		seq++;
		if (avail < span) {
			/* Only padding is missing: the chunk is whole, nothing follows. */
			r->good_end = r->file_size;
			evr_trace_stop_at(r, off, "the file ends inside the padding of a chunk (%s)",
				evr_trace_kind_name(h.kind));
			break;
		}
		off += span;
		r->good_end = off;
	}
	if (!r->truncated && !r->has_end && !r->end_damaged) {
		r->truncated = true;
		snprintf(r->truncated_why, sizeof(r->truncated_why), "no END chunk: the recording "
			 "did not finish, or the file was cut at a chunk boundary");
	}
out:
	free(buf);
	r->read_limit = r->good_end;
	return err;
}

/* ---- open / close ------------------------------------------------------------ */

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
		set_err(errbuf, errlen, "not an evring trace file (bad magic)");
		return -EBADMSG;
	}
	if (fh->crc != evr_crc32c(0, fh, EVR_TRACE_FILE_HDR_CRC_LEN)) {
		set_err(errbuf, errlen, "corrupt trace file header (CRC mismatch)");
		return -EBADMSG;
	}
	if (fh->version > EVR_TRACE_VERSION || fh->abi_version > EVR_ABI_VERSION) {
		set_err(errbuf, errlen, "trace format %u (records ABI %u) is newer than this reader "
			"(%u, ABI %u)", fh->version, fh->abi_version, EVR_TRACE_VERSION,
			EVR_ABI_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (fh->version != EVR_TRACE_VERSION || fh->abi_version != EVR_ABI_VERSION ||
	    fh->hdr_size < sizeof(*fh) || fh->hdr_size > 4096 || (fh->hdr_size & 7u) ||
	    fh->hdr_size > r->file_size) {
		set_err(errbuf, errlen, "corrupt trace file header (version %u, ABI %u, size %u)",
			fh->version, fh->abi_version, fh->hdr_size);
		return -EBADMSG;
	}
	r->hdr_size = fh->hdr_size;
	return evr_schema_set_new(&r->schemas);
}

static int open_common(struct evr_trace_reader *r, char *errbuf, size_t errlen)
{
	struct evr_trace_file_hdr fh;
	struct stat st;
	int err;

	if (fstat(r->fd, &st) < 0) {
		err = -errno;
		set_err(errbuf, errlen, "cannot stat the trace file: %s", strerror(-err));
		return err;
	}
	r->pending = -1;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode))
		return evr_trace_stream_open(r, errbuf, errlen);	/* front to back, no seek */
	if (!S_ISREG(st.st_mode)) {
		set_err(errbuf, errlen, "not a regular file, pipe or socket");
		return -EBADMSG;
	}
	r->file_size = (uint64_t)st.st_size;
	if (r->file_size < sizeof(fh)) {
		set_err(errbuf, errlen, "not an evring trace file (%llu bytes, shorter than its header)",
			(unsigned long long)r->file_size);
		return -EBADMSG;
	}
	err = evr_trace_pread(r, &fh, sizeof(fh), 0);
	if (err) {
		set_err(errbuf, errlen, "cannot read the trace file: %s", strerror(-err));
		return err;
	}
	err = evr_trace_check_file_hdr(r, &fh, errbuf, errlen);
	if (err)
		return err;
	err = scan(r, errbuf, errlen);
	evr_trace_threads_finish(r);
	if (!err && r->has_session)
		err = evr_trace_clock_build(&r->clk, &r->session.clock);
	if (err == -ENOMEM)
		set_err(errbuf, errlen, "out of memory reading the trace file");
	else if (err && err != -EBADMSG)
		set_err(errbuf, errlen, "cannot read the trace file: %s", strerror(-err));
	return err;
}

int evr_trace_reader_open_fd(int fd, struct evr_trace_reader **ret, char *errbuf, size_t errlen)
{
	struct evr_trace_reader *r;
	int err;

	if (fd < 0 || !ret)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_err(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	r->fd = fd;
	err = open_common(r, errbuf, errlen);
	if (err) {
		evr_trace_reader_free(r);
		return err;
	}
	*ret = r;
	return 0;
}

int evr_trace_reader_open(const char *path, struct evr_trace_reader **ret, char *errbuf,
			  size_t errlen)
{
	struct evr_trace_reader *r = NULL;
	int fd, err;

	if (!path || !ret)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		set_err(errbuf, errlen, "cannot open %s: %s", path, strerror(-err));
		return err;
	}
	err = evr_trace_reader_open_fd(fd, &r, errbuf, errlen);
	if (err) {
		close(fd);
		return err;
	}
	r->own_fd = true;
	*ret = r;
	return 0;
}

void evr_trace_reader_free(struct evr_trace_reader *r)
{
	if (!r)
		return;
	evr_trace_stream_free(r);	/* before the rings go */
	evr_trace_merge_free(r);
	evr_trace_clock_free(&r->clk);
	free(r->repaired);
	free(r->skips);
	if (r->has_process || r->process.argv)
		evr_process_info_free_strings(&r->process);
	free(r->process_pb);
	free(r->session_strings);
	evr_schema_set_free(r->schemas);
	for (uint32_t i = 0; i < r->nthreads; i++)
		free(r->threads[i].name);
	free(r->threads);
	free(r->cbuf);
	if (r->own_fd)
		close(r->fd);
	free(r);
}

const struct evr_process_info *evr_trace_reader_process(const struct evr_trace_reader *r)
{
	return r && r->has_process ? &r->process : NULL;
}

const struct evr_trace_session *evr_trace_reader_session(const struct evr_trace_reader *r)
{
	return r && r->has_session ? &r->session : NULL;
}

const struct evr_schema_set *evr_trace_reader_schemas(const struct evr_trace_reader *r)
{
	return r ? r->schemas : NULL;
}

const char *evr_trace_reader_errmsg(const struct evr_trace_reader *r)
{
	return r ? r->errmsg : "";
}

void evr_trace_reader_stats(const struct evr_trace_reader *r, struct evr_trace_stats *ret)
{
	if (!r || !ret)
		return;
	memset(ret, 0, sizeof(*ret));
	ret->events = r->out_events;
	ret->lost = r->out_lost;
	ret->first_ts_ns = r->has_out ? r->first_ts : 0;
	ret->last_ts_ns = r->has_out ? r->last_out_ts : 0;
	ret->ts_clamped = r->ts_clamped;
	ret->corrupt_chunks = r->corrupt_chunks;
	ret->corrupt_packets = r->corrupt_packets;
	ret->sync_points = r->clk.npts;
	ret->clock_segments = r->clk.piecewise ? r->clk.nseg : 0;
	ret->approx_ts = r->approx_ts;
	if (r->clk.late_ticks) {
		const struct evr_clock_calib *l = &r->clk.lines[r->clk.late_pt];

		ret->cpu_skew_ns = (uint64_t)(((unsigned __int128)r->clk.late_ticks * l->mult) >>
					      l->shift);
		ret->cpu_skew_ring = r->clk.late_ring;
	}
	ret->file_size = r->file_size;
	ret->chunks = r->chunks;
	ret->bytes = r->good_end;
	ret->last_chunk_off = r->last_chunk_off;
	ret->truncated = r->truncated;
	memcpy(ret->truncated_why, r->truncated_why, sizeof(ret->truncated_why));
	ret->has_end = r->has_end;
	if (r->has_end)
		ret->end = r->end;
	ret->repaired_chunks = r->repaired_chunks;
	ret->salvaged_chunks = r->salvaged_chunks;
	ret->missing_chunks = r->missing_chunks;
	ret->skipped_bytes = r->skipped_bytes;
	ret->damaged_events = r->damaged_events;
	ret->stream = r->stream;
	ret->stream_other_chunks = r->stream_other_chunks;
	ret->lost_damaged = r->lost_damaged;
	ret->damaged = r->repaired_chunks || r->salvaged_chunks || r->missing_chunks ||
		       r->skipped_bytes || r->damaged_events || r->corrupt_chunks ||
		       r->corrupt_packets || r->end_damaged || r->nproblems;
}

int evr_trace_reader_ring_stats(const struct evr_trace_reader *r, uint32_t ring,
				uint64_t *ret_events, uint64_t *ret_lost)
{
	if (!r || !r->has_session || ring >= r->session.nr_rings)
		return -EINVAL;
	if (ret_events)
		*ret_events = r->rings[ring].out_events;
	if (ret_lost)
		*ret_lost = r->rings[ring].out_lost;
	return 0;
}

int evr_trace_reader_chunk_next(struct evr_trace_reader *r, uint64_t *pos,
				struct evr_trace_chunk *ret)
{
	return evr_trace_reader_chunk_next_kind(r, pos, 0, ret);
}

int evr_trace_reader_chunk_next_kind(struct evr_trace_reader *r, uint64_t *pos, uint32_t kind,
				     struct evr_trace_chunk *ret)
{
	struct evr_trace_chunk_hdr h;
	uint64_t off;
	uint32_t len;
	const char *why;
	bool hdr_good;
	int err;

	if (!r || !pos || !ret)
		return -EINVAL;
	if (r->stream)
		return -ESPIPE;	/* read once, front to back: nothing to go back to */
	off = *pos < r->hdr_size ? r->hdr_size : *pos;
	/*
	 * The chunks the scan counted (evr_trace_stats.chunks), as it saw them: a
	 * header with one flipped bit is read repaired, and a damaged place the
	 * scan skipped is skipped here too (the scan reported it). Read as written,
	 * such a header would give a wrong length, or end the walk before the
	 * chunks the scan found after it.
	 */
	for (;;) {
		off = evr_trace_skip_end(r, off);
		if (off >= r->good_end || r->good_end - off < EVR_TRACE_CHUNK_HDR_SIZE)
			return 0;
		err = evr_trace_pread(r, &h, sizeof(h), off);
		if (err)
			return err;
		hdr_good = (evr_trace_chunk_hdr_ok(&h) || evr_trace_chunk_hdr_fix(&h)) &&
			   evr_trace_chunk_len_ok(h.kind, h.len);
		/* Chunks of other kinds: the header only (its length was checked at open). */
		if (!kind || h.kind == kind || !hdr_good)
			break;
		off += evr_trace_chunk_span(h.len);
		*pos = off;
	}
	err = evr_trace_load_chunk(r, off, 0, &r->cbuf, &r->cbuf_cap, &len, &why);
	if (err == -EBADMSG) {
		snprintf(r->errmsg, sizeof(r->errmsg), "chunk at offset %llu: %s",
			 (unsigned long long)off, why);
		/* A header that no longer validates: the file changed since the scan. */
		*pos = hdr_good ? off + evr_trace_chunk_span(h.len) : r->good_end;
		return err;
	}
	if (err)
		return err;
	ret->off = off;
	ret->kind = h.kind;
	ret->len = len;
	ret->data = r->cbuf;
	*pos = off + evr_trace_chunk_span(len);
	return 1;
}
