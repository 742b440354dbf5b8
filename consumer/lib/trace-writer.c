// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Trace file writer (format: docs/trace-format.md).
 *
 * Each call writes one whole chunk with one writev(): the header and the small
 * fixed records come from the stack, the payload straight from the caller's
 * memory (for EVENTS: the session mapping), so nothing is copied or buffered.
 * The only system calls are write/writev (and poll on a non-blocking fd that
 * is full), so the recorder can call us inside its seccomp sandbox.
 *
 * Failure is sticky: after a short or failed write the stream may end inside a
 * chunk, and anything written after it would sit behind garbage. So the
 * writer refuses to write again, and the file stays readable up to its last
 * whole chunk.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace-internal.h"

struct evr_trace_writer {
	int fd;
	int err;			/* sticky: the first write error, or 0 */
	uint64_t off;			/* bytes written (whole chunks) */
	uint32_t seq;			/* next chunk's number */
	uint64_t last_events_off;	/* offset of the last EVENTS chunk, UINT64_MAX: none */
	bool have_session;
	bool ended;
	uint32_t nr_rings;
	uint32_t packet_size;
};

static const uint8_t zero_pad[8];

/* Map write errors to what the caller reports: full disk and quota alike. */
static int write_errno(int e)
{
	if (e == EDQUOT || e == EFBIG)
		return -ENOSPC;
	return -e;
}

/* Write every byte of @iov (modified in place), retrying short writes and EINTR. */
static int write_all(int fd, struct iovec *iov, int iovcnt)
{
	while (iovcnt > 0) {
		ssize_t n = writev(fd, iov, iovcnt);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd p = {.fd = fd, .events = POLLOUT};

				if (poll(&p, 1, -1) < 0 && errno != EINTR)
					return -errno;
				continue;
			}
			return write_errno(errno);
		}
		if (n == 0)
			return -EIO;
		while (iovcnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

/*
 * Write one chunk whose payload is iov[1] to iov[@n] (@len bytes, CRC-32C
 * @crc): the header goes into iov[0] and the zero padding to 8 bytes into
 * iov[@n + 1], so the caller leaves room for both.
 */
static int send_chunk(struct evr_trace_writer *w, uint32_t kind, struct iovec *iov, int n,
		      uint64_t len, uint32_t crc)
{
	struct evr_trace_chunk_hdr h;
	int err;

	if (w->err)
		return w->err;
	if (len > UINT32_MAX || !evr_trace_chunk_len_ok(kind, (uint32_t)len))
		return -EINVAL;
	memset(&h, 0, sizeof(h));
	h.magic = EVR_TRACE_CHUNK_MAGIC;
	h.kind = (uint16_t)kind;
	h.len = (uint32_t)len;
	h.seq = w->seq;
	h.data_crc = crc;
	h.hdr_crc = evr_trace_chunk_hdr_crc(&h);
	iov[0] = (struct iovec){.iov_base = &h, .iov_len = sizeof(h)};
	if (evr_align8(len) != len)
		iov[++n] = (struct iovec){.iov_base = (void *)zero_pad,
					  .iov_len = evr_align8(len) - len};
	err = write_all(w->fd, iov, n + 1);
	if (err) {
		w->err = err;
		return err;
	}
	w->off += evr_trace_chunk_span((uint32_t)len);
	w->seq++;
	return 0;
}

/* Write one chunk of @nparts payload parts (at most 6). */
static int write_chunk(struct evr_trace_writer *w, uint32_t kind, const struct iovec *parts,
		       int nparts)
{
	struct iovec iov[8];
	uint64_t len = 0;
	uint32_t crc = 0;
	int n = 0;

	for (int i = 0; i < nparts; i++) {
		len += parts[i].iov_len;
		crc = evr_crc32c(crc, parts[i].iov_base, parts[i].iov_len);
		if (parts[i].iov_len)
			iov[1 + n++] = parts[i];
	}
	return send_chunk(w, kind, iov, n, len, crc);
}

int evr_trace_writer_new(int fd, struct evr_trace_writer **ret)
{
	struct evr_trace_file_hdr fh;
	struct evr_trace_writer *w;
	struct timespec ts;
	struct iovec iov;
	int err;

	if (fd < 0 || !ret)
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->last_events_off = UINT64_MAX;
	memset(&fh, 0, sizeof(fh));
	memcpy(fh.magic, EVR_TRACE_MAGIC, sizeof(fh.magic));
	fh.version = EVR_TRACE_VERSION;
	fh.hdr_size = EVR_TRACE_FILE_HDR_SIZE;
	fh.abi_version = EVR_ABI_VERSION;
	clock_gettime(CLOCK_REALTIME, &ts);
	fh.created_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	fh.crc = evr_crc32c(0, &fh, EVR_TRACE_FILE_HDR_CRC_LEN);
	iov = (struct iovec){.iov_base = &fh, .iov_len = sizeof(fh)};
	err = write_all(fd, &iov, 1);
	if (err) {
		free(w);
		return err;
	}
	w->off = sizeof(fh);
	*ret = w;
	return 0;
}

void evr_trace_writer_free(struct evr_trace_writer *w)
{
	free(w);
}

static int writer_usable(const struct evr_trace_writer *w)
{
	if (!w || w->ended)
		return -EINVAL;
	return w->err;
}

int evr_trace_writer_process(struct evr_trace_writer *w, const void *pb, size_t len)
{
	struct iovec part = {.iov_base = (void *)pb, .iov_len = len};
	int err = writer_usable(w);

	if (err)
		return err;
	if (!pb || len == 0 || len > EVR_TRACE_PROCESS_MAX)
		return -EINVAL;
	return write_chunk(w, EVR_CHUNK_PROCESS, &part, 1);
}

int evr_trace_writer_session(struct evr_trace_writer *w, const struct evr_trace_session *s)
{
	struct evr_trace_session_rec rec;
	const char *prov, *client;
	struct iovec parts[3];
	int err = writer_usable(w);

	if (err)
		return err;
	if (!s || w->have_session)
		return -EINVAL;
	if (!evr_trace_geometry_ok(s->mode, s->packet_size, s->ring_size, s->nr_rings) ||
	    !evr_trace_clock_ok(&s->clock))
		return -EINVAL;
	prov = s->providers ? s->providers : "";
	client = s->client ? s->client : "";
	if (strlen(prov) > EVR_TRACE_STRING_MAX || strlen(client) > EVR_TRACE_STRING_MAX)
		return -EINVAL;
	memset(&rec, 0, sizeof(rec));
	rec.mode = s->mode;
	rec.packet_size = s->packet_size;
	rec.ring_size = s->ring_size;
	rec.nr_rings = s->nr_rings;
	rec.session_id = s->session_id;
	rec.session_serial = s->session_serial;
	rec.start_realtime_ns = s->start_realtime_ns;
	rec.start_mono_ns = s->start_mono_ns;
	rec.clock = s->clock;
	rec.providers_len = (uint32_t)strlen(prov);
	rec.client_len = (uint32_t)strlen(client);
	parts[0] = (struct iovec){.iov_base = &rec, .iov_len = sizeof(rec)};
	parts[1] = (struct iovec){.iov_base = (void *)prov, .iov_len = rec.providers_len};
	parts[2] = (struct iovec){.iov_base = (void *)client, .iov_len = rec.client_len};
	err = write_chunk(w, EVR_CHUNK_SESSION, parts, 3);
	if (err)
		return err;
	w->have_session = true;
	w->nr_rings = s->nr_rings;
	w->packet_size = s->packet_size;
	return 0;
}

/*
 * Metadata entries are laid out like the session's metadata area: an 8-byte
 * header, the payload, zero padding to 8. Up to 64 entries go into one writev
 * (3 iovecs each, plus the chunk header's); more are split into several chunks.
 */
#define META_BATCH 64

int evr_trace_writer_metadata(struct evr_trace_writer *w, const struct evr_trace_meta *v,
			      uint32_t n)
{
	struct evr_meta_entry eh[META_BATCH];
	struct iovec iov[3 * META_BATCH + 2];
	int err = writer_usable(w);

	if (err)
		return err;
	if (!v || n == 0)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		if ((v[i].len && !v[i].data) ||
		    v[i].len > EVR_TRACE_CHUNK_MAX - sizeof(struct evr_meta_entry))
			return -EINVAL;
	}
	for (uint32_t first = 0; first < n;) {
		uint64_t len = 0;
		uint32_t crc = 0;
		int cnt = 0;
		uint32_t i;

		for (i = first; i < n && i - first < META_BATCH; i++) {
			uint64_t elen = sizeof(struct evr_meta_entry) + evr_align8(v[i].len);

			if (i > first && len + elen > EVR_TRACE_CHUNK_MAX)
				break;
			len += elen;
		}
		/* Header first, so build the payload iovecs at iov[1...]. */
		for (uint32_t k = first; k < i; k++) {
			struct evr_meta_entry *e = &eh[k - first];
			uint32_t pad = (uint32_t)(evr_align8(v[k].len) - v[k].len);

			e->size = v[k].len;
			e->kind = v[k].kind;
			iov[1 + cnt++] = (struct iovec){.iov_base = e, .iov_len = sizeof(*e)};
			crc = evr_crc32c(crc, e, sizeof(*e));
			if (v[k].len) {
				iov[1 + cnt++] = (struct iovec){.iov_base = (void *)v[k].data,
								.iov_len = v[k].len};
				crc = evr_crc32c(crc, v[k].data, v[k].len);
			}
			if (pad) {
				iov[1 + cnt++] = (struct iovec){.iov_base = (void *)zero_pad,
								.iov_len = pad};
				crc = evr_crc32c(crc, zero_pad, pad);
			}
		}
		/* len is a multiple of 8: no chunk padding. */
		err = send_chunk(w, EVR_CHUNK_METADATA, iov, cnt, len, crc);
		if (err)
			return err;
		first = i;
	}
	return 0;
}

int evr_trace_writer_events(struct evr_trace_writer *w, uint32_t ring, uint64_t pos,
			    const void *data, uint32_t len)
{
	struct evr_trace_events_rec rec = {.ring = ring, .pos = pos};
	struct iovec parts[2];
	uint64_t off;
	int err = writer_usable(w);

	if (err)
		return err;
	/* A span never leaves its packet; readers rely on it. */
	if (!w->have_session || ring >= w->nr_rings || !data || len == 0 || (pos & 7u) ||
	    (pos & (w->packet_size - 1)) + len > w->packet_size)
		return -EINVAL;
	parts[0] = (struct iovec){.iov_base = &rec, .iov_len = sizeof(rec)};
	parts[1] = (struct iovec){.iov_base = (void *)data, .iov_len = len};
	off = w->off;
	err = write_chunk(w, EVR_CHUNK_EVENTS, parts, 2);
	if (err)
		return err;
	w->last_events_off = off;
	return 0;
}

int evr_trace_writer_discard_last(struct evr_trace_writer *w)
{
	struct evr_trace_discard_rec rec;
	struct iovec part = {.iov_base = &rec, .iov_len = sizeof(rec)};
	int err = writer_usable(w);

	if (err)
		return err;
	if (w->last_events_off == UINT64_MAX)
		return -EINVAL;
	rec.chunk_off = w->last_events_off;
	err = write_chunk(w, EVR_CHUNK_DISCARD, &part, 1);
	if (err)
		return err;
	w->last_events_off = UINT64_MAX;
	return 0;
}

int evr_trace_writer_lost(struct evr_trace_writer *w, uint32_t ring, uint64_t count)
{
	struct evr_trace_lost_rec rec = {.ring = ring, .count = count};
	struct iovec part = {.iov_base = &rec, .iov_len = sizeof(rec)};
	int err = writer_usable(w);

	if (err)
		return err;
	if (!w->have_session || ring >= w->nr_rings)
		return -EINVAL;
	if (count == 0)
		return 0;
	return write_chunk(w, EVR_CHUNK_LOST, &part, 1);
}

#define THREAD_NAME_MAX 255u

int evr_trace_writer_threads(struct evr_trace_writer *w, const struct evr_trace_thread *v,
			     uint32_t n)
{
	uint64_t need = 0;
	uint8_t *buf, *p;
	int err = writer_usable(w);

	if (err)
		return err;
	if (!v || n == 0)
		return -EINVAL;
	for (uint32_t i = 0; i < n; i++) {
		size_t len = v[i].name ? strnlen(v[i].name, THREAD_NAME_MAX) : 0;

		need += sizeof(struct evr_trace_thread_rec) + ((len + 3) & ~(size_t)3);
	}
	if (need > EVR_TRACE_CHUNK_MAX)
		return -EINVAL;
	buf = calloc(1, need);
	if (!buf)
		return -ENOMEM;
	p = buf;
	for (uint32_t i = 0; i < n; i++) {
		struct evr_trace_thread_rec rec = { .tid = v[i].tid };

		rec.name_len = v[i].name ? (uint32_t)strnlen(v[i].name, THREAD_NAME_MAX) : 0;
		memcpy(p, &rec, sizeof(rec));
		p += sizeof(rec);
		if (rec.name_len)
			memcpy(p, v[i].name, rec.name_len);
		p += (rec.name_len + 3) & ~3u;
	}
	err = write_chunk(w, EVR_CHUNK_THREADS,
			  &(struct iovec){ .iov_base = buf, .iov_len = (size_t)need }, 1);
	free(buf);
	return err;
}

int evr_trace_writer_chunk(struct evr_trace_writer *w, uint32_t kind, const void *data,
			   uint32_t len)
{
	struct iovec part = {.iov_base = (void *)data, .iov_len = len};
	int err = writer_usable(w);

	if (err)
		return err;
	/* The kinds with a function of their own keep their invariants there. */
	if (kind <= EVR_CHUNK_SYNC || kind > UINT16_MAX || (len && !data) ||
	    len > EVR_TRACE_CHUNK_MAX)
		return -EINVAL;
	return write_chunk(w, kind, &part, 1);
}

int evr_trace_writer_sync(struct evr_trace_writer *w, const struct evr_trace_sync *s,
			  const uint64_t *heads)
{
	struct iovec parts[2];
	int err = writer_usable(w);

	if (err)
		return err;
	if (!w->have_session || !s || !heads)
		return -EINVAL;
	parts[0] = (struct iovec){.iov_base = (void *)s, .iov_len = sizeof(*s)};
	parts[1] = (struct iovec){.iov_base = (void *)heads,
				  .iov_len = (size_t)w->nr_rings * sizeof(*heads)};
	return write_chunk(w, EVR_CHUNK_SYNC, parts, 2);
}

int evr_trace_writer_end(struct evr_trace_writer *w, const struct evr_trace_end *e)
{
	struct evr_trace_end_rec rec;
	struct iovec part = {.iov_base = &rec, .iov_len = sizeof(rec)};
	int err = writer_usable(w);

	if (err)
		return err;
	if (!e)
		return -EINVAL;
	memset(&rec, 0, sizeof(rec));
	rec.events = e->events;
	rec.lost = e->lost;
	rec.end_realtime_ns = e->end_realtime_ns;
	rec.end_mono_ns = e->end_mono_ns;
	rec.flags = e->flags;
	rec.chunks = w->seq;
	rec.bytes = w->off;
	err = write_chunk(w, EVR_CHUNK_END, &part, 1);
	if (err)
		return err;
	w->ended = true;
	return 0;
}

uint64_t evr_trace_writer_bytes(const struct evr_trace_writer *w)
{
	return w ? w->off : 0;
}

uint64_t evr_trace_writer_chunks(const struct evr_trace_writer *w)
{
	return w ? w->seq : 0;
}

int evr_trace_writer_error(const struct evr_trace_writer *w)
{
	return w ? w->err : -EINVAL;
}
