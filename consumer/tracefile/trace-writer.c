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
 *
 * Direct I/O (EVR_TRACE_WRITER_DIRECT): the page cache costs a recorder more
 * than everything else it does (a copy and a page allocation per 4 KiB, and
 * the writeback later), so whole packets go from the session mapping to the
 * disk by DMA instead. Such writes must start, end and lie in memory on the
 * file system's block size (w->align), so chunks are gathered into a batch: a
 * list of segments in file order, either bytes copied into w->stage (headers,
 * small chunks, packets that are not aligned) or an aligned packet where it
 * lies. A PAD chunk before an EVENTS chunk puts its packet on a block
 * boundary, and one at the end of a batch ends it on one. Every segment then
 * starts and ends on a block boundary of the file and of memory, since the
 * staged runs between aligned packets are whole blocks themselves. Measured
 * here (docs/recorder.md): 2-3 ns of system time per 42-byte event with 1 MiB
 * batches, against 14 (tmpfs) to 30 (ext4) ns through the page cache.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace-format.h"
#include "write-behind.h"

/* Version 2: the file that several streams write (trace.h). */
struct evr_trace_mux {
	int fd;
	int err;			/* sticky: the first write error of any stream */
	uint64_t off;			/* bytes in the file (whole chunks) */
	uint32_t nstreams;		/* streams handed out */
	struct evr_trace_writer *w0;	/* stream 0: the process table and the END */
	/* evr_trace_mux_gather(): chunks copied here until evr_trace_mux_flush(). */
	bool gather;
	uint8_t *buf;
	size_t len, cap;
	uint64_t written;		/* bytes in the file while gathering */
	struct evr_write_behind behind;	/* buffered writes: their writeback (write-behind.c) */
};

#define GATHER_MAX	(1u << 20)	/* the gathering buffer; bigger chunks go at once */

struct evr_trace_writer {
	int fd;
	struct evr_trace_mux *mux;	/* a stream of a version 2 file, or NULL */
	uint16_t stream;		/* its number, in every chunk header */
	int err;			/* sticky: the first write error, or 0 */
	uint64_t off;			/* bytes written (whole chunks) */
	uint32_t seq;			/* next chunk's number */
	uint64_t last_events_off;	/* offset of the last EVENTS chunk, UINT64_MAX: none */
	bool have_session;
	bool ended;
	uint32_t nr_rings;
	uint32_t packet_size;
	bool no_events_crc;		/* EVENTS chunks go out EVR_TRACE_CHUNK_UNCHECKED */
	uint64_t unchecked;		/* ... so many so far */

	/* Direct I/O: the batch not yet written (see the top). */
	bool direct;
	uint32_t align;			/* file offsets, lengths, addresses */
	uint8_t *stage;			/* aligned; copies of what is not written in place */
	bool stage_lent;		/* ... the submit engine's (never freed here) */
	size_t stage_cap, stage_used;
	struct iovec *seg;		/* the batch, in file order */
	int nseg;
	uint64_t pending;		/* bytes in the batch */
	uint64_t written;		/* bytes in the file (flushed) */
	/* Asynchronous batches (evr_trace_writer_set_submit()): handed to the
	 * caller's engine, which writes them at their offset and says how far
	 * the file got (evr_trace_writer_completed()). */
	evr_trace_writer_submit_fn *submit;
	void *submit_arg;
	/* Buffered writes (not a mux's stream: the mux has its own): their
	 * writeback started as they go, pages dropped behind (write-behind.c). */
	struct evr_write_behind behind;
};

#define SEG_MAX		512		/* segments per batch (IOV_MAX is 1024) */
#define STAGE_MIN	(2u << 20)	/* initial stage: a batch of small chunks */
#define STAGE_ALIGN	4096u		/* the stage's address: at least any w->align */

static const uint8_t zero_pad[8];

/* Map write errors to what the caller reports: full disk and quota alike. */
static int write_errno(int e)
{
	if (e == EDQUOT || e == EFBIG)
		return -ENOSPC;
	return -e;
}

/* Write every byte of @iov (modified in place), retrying short writes and EINTR;
 * @done (may be NULL) counts the bytes written, also when it fails. */
static int write_all_count(int fd, struct iovec *iov, int iovcnt, uint64_t *done)
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
		if (done)
			*done += (uint64_t)n;
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

static int write_all(int fd, struct iovec *iov, int iovcnt)
{
	return write_all_count(fd, iov, iovcnt, NULL);
}

/* ---- a mux's gathered chunks ---------------------------------------------------------- */

/* Write what @m gathered (one write()). */
static int mux_write(struct evr_trace_mux *m)
{
	struct iovec v = { .iov_base = m->buf, .iov_len = m->len };
	int err;

	if (!m->len)
		return 0;
	err = write_all_count(m->fd, &v, 1, &m->written);
	m->len = 0;
	if (err && !m->err)
		m->err = err;
	return err;
}

/* Copy a chunk given as @iov into @m's buffer, or write it at once when it is too big. */
static int mux_gather(struct evr_trace_mux *m, struct iovec *iov, int n)
{
	size_t len = 0;
	int err;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	if (m->len + len > m->cap) {
		err = mux_write(m);
		if (err)
			return err;
		if (len > GATHER_MAX) {
			err = write_all_count(m->fd, iov, n, &m->written);
			if (err && !m->err)
				m->err = err;
			return err;
		}
		if (!m->buf) {
			m->buf = malloc(GATHER_MAX);
			if (!m->buf)
				return -ENOMEM;
			m->cap = GATHER_MAX;
		}
	}
	for (int i = 0; i < n; i++) {
		memcpy(m->buf + m->len, iov[i].iov_base, iov[i].iov_len);
		m->len += iov[i].iov_len;
	}
	return 0;
}

/* ---- direct I/O batches ------------------------------------------------------------ */

static size_t align_up(size_t v, size_t a)
{
	return (v + a - 1) & ~(a - 1);
}

static int flush_batch(struct evr_trace_writer *w);

/* The header of the writer's next chunk: @kind, @len payload bytes of CRC @crc,
 * or @unchecked: flagged EVR_TRACE_CHUNK_UNCHECKED, data_crc 0. */
static void chunk_hdr(const struct evr_trace_writer *w, uint32_t kind, uint32_t len,
		      uint32_t crc, bool unchecked, struct evr_trace_chunk_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->magic = EVR_TRACE_CHUNK_MAGIC;
	h->kind = (uint16_t)kind;
	h->flags = w->stream | (unchecked ? EVR_TRACE_CHUNK_UNCHECKED : 0);
	h->len = len;
	h->seq = w->seq;
	h->data_crc = unchecked ? 0 : crc;
	h->hdr_crc = evr_trace_chunk_hdr_crc(h);
}

/* Room in the stage for @bytes more and @nseg more segments, a PAD chunk to end
 * the batch included; flushes or grows the stage when needed. */
static int stage_room(struct evr_trace_writer *w, size_t bytes, int nseg)
{
	size_t need = bytes + 2u * w->align + EVR_TRACE_CHUNK_HDR_SIZE;
	int err;

	if (w->stage_used + need <= w->stage_cap && w->nseg + nseg + 2 <= SEG_MAX)
		return 0;
	if (w->nseg) {
		err = flush_batch(w);
		if (err)
			return err;
	}
	if (need > w->stage_cap) {
		size_t cap = align_up(need, 1u << 20);
		uint8_t *p = aligned_alloc(STAGE_ALIGN, cap);

		if (!p)
			return -ENOMEM;
		if (!w->stage_lent)
			free(w->stage);
		w->stage = p;
		w->stage_lent = false;
		w->stage_cap = cap;
	}
	return 0;
}

/* Append @len bytes just copied to the stage's end to the batch. */
static void stage_commit(struct evr_trace_writer *w, size_t len)
{
	uint8_t *p = w->stage + w->stage_used;
	struct iovec *last = w->nseg ? &w->seg[w->nseg - 1] : NULL;

	if (last && (uint8_t *)last->iov_base + last->iov_len == p)
		last->iov_len += len;
	else
		w->seg[w->nseg++] = (struct iovec){ .iov_base = p, .iov_len = len };
	w->stage_used += len;
	w->pending += len;
}

/* Copy a chunk (or the file header) given as @iov into the batch. */
static int stage_iov(struct evr_trace_writer *w, const struct iovec *iov, int n)
{
	size_t len = 0;
	uint8_t *p;
	int err;

	for (int i = 0; i < n; i++)
		len += iov[i].iov_len;
	err = stage_room(w, len, 1);
	if (err)
		return err;
	p = w->stage + w->stage_used;
	for (int i = 0; i < n; i++) {
		memcpy(p, iov[i].iov_base, iov[i].iov_len);
		p += iov[i].iov_len;
	}
	stage_commit(w, len);
	return 0;
}

/*
 * The PAD chunk that takes the file from w->off to the next multiple of
 * @align, @extra bytes ahead (at least a chunk header: a whole @align more when
 * the gap is smaller), built at @p: zeros with their CRC. Return: its size,
 * 0 when none is needed.
 */
static uint64_t make_pad(const struct evr_trace_writer *w, uint8_t *p, uint64_t align,
			 uint32_t extra)
{
	uint64_t gap = (align - ((w->off + extra) & (align - 1))) & (align - 1);
	struct evr_trace_chunk_hdr h;

	if (gap == 0)
		return 0;
	while (gap < EVR_TRACE_CHUNK_HDR_SIZE)
		gap += align;
	memset(p, 0, gap);
	chunk_hdr(w, EVR_CHUNK_PAD, (uint32_t)(gap - sizeof(h)),
		  evr_crc32c(0, p + sizeof(h), gap - sizeof(h)), false, &h);
	memcpy(p, &h, sizeof(h));
	return gap;
}

/*
 * Stage a PAD chunk so that the file offset @extra bytes past it is aligned
 * (room was made by the caller).
 */
static void stage_pad(struct evr_trace_writer *w, uint32_t extra)
{
	uint64_t gap = make_pad(w, w->stage + w->stage_used, w->align, extra);

	if (gap == 0)
		return;
	stage_commit(w, gap);
	w->off += gap;
	w->seq++;
}

/* Write the batch, ended on a block boundary by a PAD chunk. */
static int flush_batch(struct evr_trace_writer *w)
{
	int err;

	if (!w->nseg)
		return 0;
	stage_pad(w, 0);
	if (w->submit) {
		/* The engine takes the stage with the batch and gives one back. */
		err = w->submit(w->submit_arg, w->seg, w->nseg, w->off - w->pending, w->pending,
				&w->stage, &w->stage_cap);
		if (!err)
			w->stage_lent = true;
		w->nseg = 0;
		w->stage_used = 0;
		w->pending = 0;
		if (err)
			w->err = err;
		return err;
	}
	err = write_all_count(w->fd, w->seg, w->nseg, &w->written);
	w->nseg = 0;
	w->stage_used = 0;
	w->pending = 0;
	if (err)
		w->err = err;
	return err;
}

/*
 * Back to buffered writes for good (no stage to write from, or the file
 * system refused the first direct write): the writer as it was made, its
 * O_DIRECT cleared, nothing written.
 */
static void direct_off(struct evr_trace_writer *w)
{
	int fl = fcntl(w->fd, F_GETFL);

	if (fl >= 0)
		(void)fcntl(w->fd, F_SETFL, fl & ~O_DIRECT);
	free(w->stage);
	free(w->seg);
	w->stage = NULL;
	w->seg = NULL;
	w->stage_cap = w->stage_used = 0;
	w->nseg = 0;
	w->pending = w->written = w->off = 0;
	w->seq = 0;
	w->err = 0;
	w->direct = false;
}

/* Does @fd take direct writes? Sets O_DIRECT and w->align when it does. */
static bool direct_setup(struct evr_trace_writer *w, int fd)
{
	struct statx sx;
	struct stat st;
	uint32_t a;
	off_t pos;
	int fl;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return false;
	if (statx(fd, "", AT_EMPTY_PATH, STATX_DIOALIGN, &sx) < 0 ||
	    !(sx.stx_mask & STATX_DIOALIGN) || !sx.stx_dio_offset_align || !sx.stx_dio_mem_align)
		return false;
	a = sx.stx_dio_offset_align > sx.stx_dio_mem_align ? sx.stx_dio_offset_align :
							       sx.stx_dio_mem_align;
	/*
	 * Whole pages, though the file system takes 512 bytes: a batch gathers a
	 * chunk header and a packet in place for each packet, and a segment that
	 * ends inside a page keeps the block layer from merging the batch into
	 * one request. Measured on virtio (4 MiB writes of 64 x (header + 64 KiB),
	 * 4 in flight): 512-byte headers 40-300 MB/s, page-sized ones 1.1-1.2
	 * GB/s, the disk's speed (docs/recorder.md, "Which I/O").
	 */
	if (a > STAGE_ALIGN)
		return false;
	a = STAGE_ALIGN;
	pos = lseek(fd, 0, SEEK_CUR);
	if (pos < 0 || ((uint64_t)pos & (a - 1)))
		return false;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || (fl & O_APPEND))
		return false;
	if (!(fl & O_DIRECT) && fcntl(fd, F_SETFL, fl | O_DIRECT) < 0)
		return false;
	w->stage = aligned_alloc(STAGE_ALIGN, STAGE_MIN);
	w->seg = calloc(SEG_MAX, sizeof(*w->seg));
	w->stage_cap = STAGE_MIN;
	w->align = a;
	w->direct = true;
	if (!w->stage || !w->seg) {
		direct_off(w);
		return false;
	}
	return true;
}

/*
 * Write one chunk whose payload is iov[1] to iov[@n] (@len bytes, CRC-32C
 * @crc): the header goes into iov[0] and the zero padding to 8 bytes into
 * iov[@n + 1], so the caller leaves room for both.
 */
static int send_chunk(struct evr_trace_writer *w, uint32_t kind, struct iovec *iov, int n,
		      uint64_t len, uint32_t crc, bool unchecked)
{
	struct evr_trace_chunk_hdr h;
	int err;

	if (w->err)
		return w->err;
	if (len > UINT32_MAX || !evr_trace_chunk_len_ok(kind, (uint32_t)len))
		return -EINVAL;
	chunk_hdr(w, kind, (uint32_t)len, crc, unchecked, &h);
	iov[0] = (struct iovec){.iov_base = &h, .iov_len = sizeof(h)};
	if (evr_align8(len) != len)
		iov[++n] = (struct iovec){.iov_base = (void *)zero_pad,
					  .iov_len = evr_align8(len) - len};
	if (w->direct)
		err = stage_iov(w, iov, n + 1);
	else if (w->mux && w->mux->gather)
		err = mux_gather(w->mux, iov, n + 1);
	else
		err = write_all(w->fd, iov, n + 1);
	if (err) {
		w->err = err;
		if (w->mux)
			w->mux->err = err;	/* a partial chunk ends the file for every stream */
		return err;
	}
	w->off += evr_trace_chunk_span((uint32_t)len);
	w->seq++;
	if (w->mux)
		w->mux->off = w->off;
	if (!w->direct)
		evr_write_behind_note(w->mux ? &w->mux->behind : &w->behind, w->off);
	return 0;
}

/* Write one chunk of @nparts payload parts (at most 6), without its payload's
 * CRC if @unchecked. */
static int write_chunk_crc(struct evr_trace_writer *w, uint32_t kind, const struct iovec *parts,
			   int nparts, bool unchecked)
{
	struct iovec iov[8];
	uint64_t len = 0;
	uint32_t crc = 0;
	int n = 0;

	for (int i = 0; i < nparts; i++) {
		len += parts[i].iov_len;
		if (!unchecked)
			crc = evr_crc32c(crc, parts[i].iov_base, parts[i].iov_len);
		if (parts[i].iov_len)
			iov[1 + n++] = parts[i];
	}
	return send_chunk(w, kind, iov, n, len, crc, unchecked);
}

static int write_chunk(struct evr_trace_writer *w, uint32_t kind, const struct iovec *parts,
		       int nparts)
{
	return write_chunk_crc(w, kind, parts, nparts, false);
}

/* The file header of a new trace file of @version. */
static void file_hdr(struct evr_trace_file_hdr *fh, uint32_t version)
{
	struct timespec ts;

	memset(fh, 0, sizeof(*fh));
	memcpy(fh->magic, EVR_TRACE_MAGIC, sizeof(fh->magic));
	fh->version = version;
	fh->hdr_size = EVR_TRACE_FILE_HDR_SIZE;
	fh->abi_version = EVR_ABI_VERSION;
	clock_gettime(CLOCK_REALTIME, &ts);
	fh->created_realtime_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	fh->crc = evr_crc32c(0, fh, EVR_TRACE_FILE_HDR_CRC_LEN);
}

int evr_trace_writer_new_flags(int fd, uint32_t flags, struct evr_trace_writer **ret)
{
	struct evr_trace_file_hdr fh;
	struct evr_trace_writer *w;
	struct iovec iov;
	int err;

	if (fd < 0 || !ret || (flags & ~EVR_TRACE_WRITER_DIRECT))
		return -EINVAL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->fd = fd;
	w->last_events_off = UINT64_MAX;
	/* A single process: version 1, which every reader reads. */
	file_hdr(&fh, EVR_TRACE_VERSION_ONE);
	iov = (struct iovec){.iov_base = &fh, .iov_len = sizeof(fh)};
	if ((flags & EVR_TRACE_WRITER_DIRECT) && direct_setup(w, fd)) {
		/* The header and a PAD chunk, written now: a file system that
		 * advertised direct I/O and refuses it is found out here, before a
		 * sandbox would forbid the fcntl() that turns it off. */
		err = stage_iov(w, &iov, 1);
		if (!err) {
			w->off = sizeof(fh);
			err = flush_batch(w);
		}
		if (!err) {
			/* For the buffered writes after a fall (the header's block went
			 * through write(): the file position is past it). */
			evr_write_behind_init(&w->behind, fd, w->off);
			*ret = w;
			return 0;
		}
		if (err != -EINVAL || lseek(fd, 0, SEEK_CUR) != 0) {
			evr_trace_writer_free(w);
			return err;
		}
		direct_off(w);
	}
	err = write_all(fd, &iov, 1);
	if (err) {
		free(w);
		return err;
	}
	w->off = sizeof(fh);
	evr_write_behind_init(&w->behind, fd, w->off);
	*ret = w;
	return 0;
}

int evr_trace_writer_new(int fd, struct evr_trace_writer **ret)
{
	return evr_trace_writer_new_flags(fd, 0, ret);
}

bool evr_trace_writer_direct(const struct evr_trace_writer *w)
{
	return w && w->direct;
}

int evr_trace_writer_set_direct(struct evr_trace_writer *w, bool on)
{
	int fl, err;

	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	if (on == w->direct)
		return 0;
	if (!w->stage)
		return -EOPNOTSUPP;	/* never granted direct I/O */
	if (!on) {
		err = flush_batch(w);
		if (err)
			return err;
		fl = fcntl(w->fd, F_GETFL);
		if (fl < 0 || fcntl(w->fd, F_SETFL, fl & ~O_DIRECT) < 0)
			return -errno;
		/* Asynchronous batches went to their offsets without moving the
		 * file position: buffered writes go on from the end. */
		if (w->submit && lseek(w->fd, (off_t)w->off, SEEK_SET) < 0)
			return -errno;
		w->written = w->off;
		w->direct = false;
		evr_write_behind_resume(&w->behind, w->off);
		return 0;
	}
	/*
	 * Back to direct I/O from a page boundary, so that no page the buffered
	 * writes left in the cache holds a byte of the first direct write (that
	 * write would have to wait for the page's writeback first).
	 */
	if (w->off & 4095u) {
		/* The stage is empty while buffered, and larger than a page. */
		uint64_t gap = make_pad(w, w->stage, 4096u, 0);
		struct iovec iov = { .iov_base = w->stage, .iov_len = gap };

		err = write_all(w->fd, &iov, 1);
		if (err) {
			w->err = err;
			return err;
		}
		w->off += gap;
		w->seq++;
	}
	fl = fcntl(w->fd, F_GETFL);
	if (fl < 0 || fcntl(w->fd, F_SETFL, fl | O_DIRECT) < 0)
		return -errno;
	w->written = w->off;
	w->direct = true;
	return 0;
}

int evr_trace_writer_flush(struct evr_trace_writer *w)
{
	if (!w)
		return -EINVAL;
	if (w->err)
		return w->err;
	return w->direct ? flush_batch(w) : 0;
}

int evr_trace_writer_set_submit(struct evr_trace_writer *w, evr_trace_writer_submit_fn *fn,
				void *arg)
{
	if (!w || !w->stage)
		return -EINVAL;
	if (w->nseg)
		return -EBUSY;
	w->submit = fn;
	w->submit_arg = arg;
	return 0;
}

void evr_trace_writer_completed(struct evr_trace_writer *w, uint64_t written, int err)
{
	if (!w)
		return;
	w->written = written;
	if (err && !w->err)
		w->err = err;
}

uint64_t evr_trace_writer_pending(const struct evr_trace_writer *w)
{
	return w ? w->pending : 0;
}

uint64_t evr_trace_writer_written(const struct evr_trace_writer *w)
{
	if (!w)
		return 0;
	if (w->mux && w->mux->gather)
		return w->mux->written;
	return w->direct ? w->written : w->off;
}

void evr_trace_writer_free(struct evr_trace_writer *w)
{
	if (!w)
		return;
	evr_write_behind_fini(&w->behind);
	if (!w->stage_lent)
		free(w->stage);
	free(w->seg);
	free(w);
}

/*
 * Can @w write? A stream of a mux starts each chunk where the file ends now,
 * whoever wrote last: its offsets (DISCARD, END) are the file's.
 */
static int writer_usable(struct evr_trace_writer *w)
{
	if (!w || w->ended)
		return -EINVAL;
	if (w->mux) {
		if (w->mux->err && !w->err)
			w->err = w->mux->err;
		w->off = w->mux->off;
	}
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
	evr_trace_session_to_rec(&rec, s);
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
		err = send_chunk(w, EVR_CHUNK_METADATA, iov, cnt, len, crc, false);
		if (err)
			return err;
		first = i;
	}
	return 0;
}

/*
 * Direct I/O, an aligned packet: PAD, the chunk header and the record staged,
 * the packet itself a segment of its own, written from the mapping.
 */
static int events_in_place(struct evr_trace_writer *w, const struct evr_trace_events_rec *rec,
			   const void *data, uint32_t len)
{
	const uint32_t before = EVR_TRACE_CHUNK_HDR_SIZE + (uint32_t)sizeof(*rec);
	struct evr_trace_chunk_hdr h;
	uint8_t *p;
	int err;

	err = stage_room(w, w->align + 2u * before, 2);
	if (err) {
		w->err = err;
		return err;
	}
	stage_pad(w, before);
	chunk_hdr(w, EVR_CHUNK_EVENTS, (uint32_t)sizeof(*rec) + len,
		  w->no_events_crc ? 0 : evr_crc32c(evr_crc32c(0, rec, sizeof(*rec)), data, len),
		  w->no_events_crc, &h);
	if (w->no_events_crc)
		w->unchecked++;
	p = w->stage + w->stage_used;
	memcpy(p, &h, sizeof(h));
	memcpy(p + sizeof(h), rec, sizeof(*rec));
	stage_commit(w, before);
	w->seg[w->nseg++] = (struct iovec){ .iov_base = (void *)data, .iov_len = len };
	w->pending += len;
	w->last_events_off = w->off;
	w->off += before + len;		/* len is aligned, so a multiple of 8 */
	w->seq++;
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
	if (w->direct && !(((uintptr_t)data | len) & (w->align - 1)))
		return events_in_place(w, &rec, data, len);
	parts[0] = (struct iovec){.iov_base = &rec, .iov_len = sizeof(rec)};
	parts[1] = (struct iovec){.iov_base = (void *)data, .iov_len = len};
	off = w->off;
	err = write_chunk_crc(w, EVR_CHUNK_EVENTS, parts, 2, w->no_events_crc);
	if (err)
		return err;
	if (w->no_events_crc)
		w->unchecked++;
	w->last_events_off = off;
	return 0;
}

void evr_trace_writer_set_checksum(struct evr_trace_writer *w, bool on)
{
	if (w)
		w->no_events_crc = !on;
}

uint64_t evr_trace_writer_unchecked(const struct evr_trace_writer *w)
{
	return w ? w->unchecked : 0;
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
	if (w->direct) {
		/* The file ends with END, on a block boundary. */
		err = stage_room(w, 2u * w->align + evr_trace_chunk_span(sizeof(rec)), 1);
		if (err) {
			w->err = err;
			return err;
		}
		stage_pad(w, evr_trace_chunk_span(sizeof(rec)));
	}
	rec.chunks = w->seq;
	rec.bytes = w->off;
	err = write_chunk(w, EVR_CHUNK_END, &part, 1);
	if (!err && w->direct)
		err = flush_batch(w);
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

/* ---- several processes in one file (version 2) -------------------------------------- */

/*
 * Why streams share the file rather than each having its own: one file to
 * copy and open, and one recorder thread writes every chunk whole with one
 * writev(), so chunks of different streams never interleave byte-wise and the
 * file stays readable up to its last whole chunk, as a version 1 file does.
 * Each stream keeps its own chunk numbers (readers check each stream's
 * sequence apart) and takes its offsets from the mux (writer_usable()).
 */
static struct evr_trace_writer *mux_writer(struct evr_trace_mux *m, uint16_t stream)
{
	struct evr_trace_writer *w = calloc(1, sizeof(*w));

	if (!w)
		return NULL;
	w->fd = m->fd;
	w->mux = m;
	w->stream = stream;
	w->off = m->off;
	w->last_events_off = UINT64_MAX;
	return w;
}

int evr_trace_mux_new(int fd, struct evr_trace_mux **ret)
{
	struct evr_trace_file_hdr fh;
	struct evr_trace_mux *m;
	struct iovec iov = { .iov_base = &fh, .iov_len = sizeof(fh) };
	int err;

	if (fd < 0 || !ret)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->fd = fd;
	file_hdr(&fh, EVR_TRACE_VERSION_MULTI);
	err = write_all(fd, &iov, 1);
	if (!err) {
		m->off = sizeof(fh);
		evr_write_behind_init(&m->behind, fd, m->off);
		m->w0 = mux_writer(m, 0);
		if (!m->w0)
			err = -ENOMEM;
	}
	if (err) {
		evr_trace_mux_free(m);
		return err;
	}
	*ret = m;
	return 0;
}

int evr_trace_mux_stream(struct evr_trace_mux *m, uint32_t *ret_stream,
			 struct evr_trace_writer **ret)
{
	struct evr_trace_writer *w;

	if (!m || !ret || !ret_stream)
		return -EINVAL;
	if (m->err)
		return m->err;
	/* Bit 15 of a header's flags is EVR_TRACE_CHUNK_UNCHECKED. */
	if (m->nstreams >= EVR_TRACE_CHUNK_STREAM_MASK)
		return -ENOSPC;
	w = mux_writer(m, (uint16_t)(m->nstreams + 1));
	if (!w)
		return -ENOMEM;
	m->nstreams++;
	*ret_stream = m->nstreams;
	*ret = w;
	return 0;
}

int evr_trace_mux_proc(struct evr_trace_mux *m, const struct evr_trace_proc_rec *rec,
		       const char *name, uint32_t argc, char *const *argv)
{
	struct evr_trace_proc_rec r;
	size_t nlen = name ? strnlen(name, 255) : 0, clen = 0, need;
	uint8_t *buf, *p;
	int err;

	if (!m || !rec || (argc && !argv))
		return -EINVAL;
	for (uint32_t i = 0; i < argc; i++)
		clen += (argv[i] ? strlen(argv[i]) : 0) + (i ? 1 : 0);
	if (clen > 65536)
		clen = 65536;	/* a command line that long is cut: it is for people */
	need = evr_align8(sizeof(r) + nlen + clen);
	buf = calloc(1, need);
	if (!buf)
		return -ENOMEM;
	r = *rec;
	r.name_len = (uint16_t)nlen;
	r.cmdline_len = (uint32_t)clen;
	r.reserved = 0;
	memcpy(buf, &r, sizeof(r));
	p = buf + sizeof(r);
	memcpy(p, name, nlen);
	p += nlen;
	for (uint32_t i = 0, left = (uint32_t)clen; i < argc && left; i++) {
		size_t l = argv[i] ? strlen(argv[i]) : 0;

		if (i) {
			*p++ = '\0';
			left--;
		}
		if (l > left)
			l = left;
		memcpy(p, argv[i], l);
		p += l;
		left -= (uint32_t)l;
	}
	err = evr_trace_writer_chunk(m->w0, EVR_CHUNK_PROCS, buf, (uint32_t)need);
	free(buf);
	return err;
}

int evr_trace_mux_end(struct evr_trace_mux *m, const struct evr_trace_end *e)
{
	int err;

	if (!m)
		return -EINVAL;
	err = evr_trace_writer_end(m->w0, e);
	return err ? err : evr_trace_mux_flush(m);
}

int evr_trace_mux_gather(struct evr_trace_mux *m, bool on)
{
	int err;

	if (!m)
		return -EINVAL;
	err = evr_trace_mux_flush(m);
	if (err)
		return err;
	m->gather = on;
	m->written = m->off;	/* everything so far is in the file */
	return 0;
}

int evr_trace_mux_flush(struct evr_trace_mux *m)
{
	if (!m)
		return -EINVAL;
	if (m->err)
		return m->err;
	return mux_write(m);
}

uint64_t evr_trace_mux_bytes(const struct evr_trace_mux *m)
{
	return m ? m->off : 0;
}

int evr_trace_mux_error(const struct evr_trace_mux *m)
{
	return m ? m->err : -EINVAL;
}

void evr_trace_mux_free(struct evr_trace_mux *m)
{
	if (!m)
		return;
	evr_write_behind_fini(&m->behind);
	evr_trace_writer_free(m->w0);
	free(m->buf);
	free(m);
}
