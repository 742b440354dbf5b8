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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <evring/process-info.h>

#include "trace-chunk.h"
#include "trace-clock.h"
#include "trace-merge.h"
#include "trace-salvage.h"
#include "trace-stream.h"
#include "trace-take.h"

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

static int scan_events(struct evr_trace_reader *r, uint64_t off, const struct evr_trace_chunk_hdr *h,
		       const uint8_t *rest, char *errbuf, size_t errlen)
{
	struct evr_trace_events_rec rec;

	if (!r->has_session) {
		evr_trace_set_err(errbuf, errlen, "EVENTS chunk at offset %llu precedes the SESSION chunk",
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
			evr_trace_set_err(errbuf, errlen, "EVENTS chunk at offset %llu: ring %u position %llu "
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

/* The table entry of @stream, made if new. Return: NULL out of memory. */
static struct evr_trace_proc *proc_of(struct evr_trace_reader *r, uint32_t stream)
{
	struct evr_trace_proc *p;

	for (uint32_t i = 0; i < r->nprocs; i++)
		if (r->procs[i].stream == stream)
			return &r->procs[i];
	if (r->nprocs == r->procs_cap) {
		uint32_t cap = r->procs_cap ? 2 * r->procs_cap : 16;

		p = realloc(r->procs, cap * sizeof(*p));
		if (!p)
			return NULL;
		r->procs = p;
		r->procs_cap = cap;
	}
	p = &r->procs[r->nprocs++];
	memset(p, 0, sizeof(*p));
	p->stream = stream;
	return p;
}

/*
 * A PROCS chunk (format 2, stream 0): lines of the process table. A line that
 * does not fit is the end of the chunk's use (the CRC held: the writer made it
 * so; the lines before it stand).
 */
static int take_procs(struct evr_trace_reader *r, const uint8_t *buf, uint32_t len)
{
	uint32_t at = 0;

	while (len - at >= sizeof(struct evr_trace_proc_rec)) {
		struct evr_trace_proc_rec rec;
		struct evr_trace_proc *p;
		uint64_t span;
		const char *str;

		memcpy(&rec, buf + at, sizeof(rec));
		span = evr_align8(sizeof(rec) + (uint64_t)rec.name_len + rec.cmdline_len);
		if (span > len - at || !rec.stream || rec.stream > EVR_TRACE_CHUNK_STREAM_MASK)
			break;
		str = (const char *)buf + at + sizeof(rec);
		p = proc_of(r, rec.stream);
		if (!p)
			return -ENOMEM;
		if (rec.what == EVR_TRACE_PROC_ATTACHED) {
			char *cmd = malloc((size_t)rec.cmdline_len + 1);

			if (!cmd)
				return -ENOMEM;
			p->pid = rec.pid;
			p->ppid = rec.ppid;
			p->attach_ns = rec.time_ns;
			p->start_realtime_ns = rec.start_realtime_ns;
			snprintf(p->name, sizeof(p->name), "%.*s", (int)rec.name_len, str);
			/* argv is NUL-separated in the file: spaces for people. */
			for (uint32_t i = 0; i < rec.cmdline_len; i++) {
				char c = str[rec.name_len + i];

				cmd[i] = c == '\0' ? ' ' : c;
			}
			cmd[rec.cmdline_len] = '\0';
			free(p->cmdline);
			p->cmdline = cmd;
		} else if (rec.what >= EVR_TRACE_PROC_EXITED && rec.what <= EVR_TRACE_PROC_FAILED) {
			p->end = rec.what;
			p->end_ns = rec.time_ns;
			if (!p->pid)
				p->pid = rec.pid;
			if (rec.what == EVR_TRACE_PROC_FAILED) {
				free(p->why);
				p->why = strndup(str + rec.name_len, rec.cmdline_len);
				if (!p->why)
					return -ENOMEM;
			}
		}
		at += (uint32_t)span;
	}
	return 0;
}

/*
 * Format 2: a chunk of another stream than the one read (its header and
 * length checked). Stream 0's process table and END are taken; the rest is
 * another process's business.
 */
static int scan_other(struct evr_trace_reader *r, uint64_t off, const struct evr_trace_chunk_hdr *h,
		      uint8_t **buf, uint32_t *cap)
{
	uint32_t len = 0;
	const char *why;
	int err;

	r->other_chunks++;
	if (evr_trace_chunk_stream(h) > r->max_stream)
		r->max_stream = evr_trace_chunk_stream(h);
	if (evr_trace_chunk_stream(h) != 0 || (h->kind != EVR_CHUNK_PROCS && h->kind != EVR_CHUNK_END))
		return 0;
	err = evr_trace_load_chunk(r, off, h->kind, buf, cap, &len, &why);
	if (err == -EBADMSG) {
		evr_trace_problem(r, "the process table's chunk (%s) at offset %llu is damaged: %s",
				  evr_trace_kind_name(h->kind), (unsigned long long)off, why);
		return 0;
	}
	if (err)
		return err;
	if (h->kind == EVR_CHUNK_END) {
		r->has_file_end = true;
		return 0;
	}
	return take_procs(r, *buf, len);
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
		if (!evr_trace_chunk_hdr_ok(&h) && evr_trace_all_zero(&h, sizeof(h))) {
			/* A recorder's space allocated ahead (it was killed), or damage. */
			err = evr_trace_zero_tail(r, off);
			if (err < 0)
				goto out;
			if (err == 1) {
				err = 0;
				evr_trace_stop_at(r, off, "%llu bytes of zeros to the end: space allocated "
						  "ahead by a recorder that did not stop cleanly",
						  (unsigned long long)(r->file_size - off));
				break;
			}
			err = 0;
		}
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
		if (r->multi && evr_trace_chunk_stream(&h) != r->want) {
			/* Another stream's chunk: whole, or the file is cut here. */
			if (!evr_trace_chunk_len_ok(h.kind, h.len)) {
				evr_trace_stop_at(r, off, "chunk (%s) of impossible length %u",
						  evr_trace_kind_name(h.kind), h.len);
				break;
			}
			if (avail - EVR_TRACE_CHUNK_HDR_SIZE < h.len) {
				evr_trace_stop_at(r, off, "the file ends inside a chunk (%s, %u of %u "
						  "bytes)", evr_trace_kind_name(h.kind),
						  (uint32_t)(avail - EVR_TRACE_CHUNK_HDR_SIZE), h.len);
				break;
			}
			err = scan_other(r, off, &h, &buf, &cap);
			if (err)
				goto out;
			span = evr_trace_chunk_span(h.len);
			off = avail < span ? r->file_size : off + span;
			r->good_end = off;
			continue;
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
		if (h.flags & EVR_TRACE_CHUNK_UNCHECKED)
			r->unchecked_chunks++;
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
	if (r->multi && !r->truncated && r->has_end && !r->has_file_end) {
		/* This process's recording ended; the file's did not. */
		r->truncated = true;
		snprintf(r->truncated_why, sizeof(r->truncated_why), "no END chunk of the file: "
			 "the recording of its processes did not finish");
	}
	/* A finished file of several processes with nothing in this stream (none
	 * was attached) was not cut. */
	if (!r->truncated && !r->has_end && !r->end_damaged &&
	    !(r->multi && !r->chunks && r->has_file_end)) {
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

static int proc_cmp(const void *a, const void *b);

static int open_common(struct evr_trace_reader *r, char *errbuf, size_t errlen)
{
	struct evr_trace_file_hdr fh;
	struct stat st;
	int err;

	if (fstat(r->fd, &st) < 0) {
		err = -errno;
		evr_trace_set_err(errbuf, errlen, "cannot stat the trace file: %s", strerror(-err));
		return err;
	}
	r->pending = -1;
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode))
		return evr_trace_stream_open(r, errbuf, errlen);	/* front to back, no seek */
	if (!S_ISREG(st.st_mode)) {
		evr_trace_set_err(errbuf, errlen, "not a regular file, pipe or socket");
		return -EBADMSG;
	}
	r->file_size = (uint64_t)st.st_size;
	if (r->file_size < sizeof(fh)) {
		evr_trace_set_err(errbuf, errlen, "not an evring trace file (%llu bytes, shorter than its header)",
			(unsigned long long)r->file_size);
		return -EBADMSG;
	}
	err = evr_trace_pread(r, &fh, sizeof(fh), 0);
	if (err) {
		evr_trace_set_err(errbuf, errlen, "cannot read the trace file: %s", strerror(-err));
		return err;
	}
	err = evr_trace_check_file_hdr(r, &fh, errbuf, errlen);
	if (err)
		return err;
	err = scan(r, errbuf, errlen);
	evr_trace_threads_finish(r);
	if (r->nprocs > 1)
		qsort(r->procs, r->nprocs, sizeof(*r->procs), proc_cmp);
	if (!err && r->has_session)
		err = evr_trace_clock_build(&r->clk, &r->session.clock);
	if (err == -ENOMEM)
		evr_trace_set_err(errbuf, errlen, "out of memory reading the trace file");
	else if (err && err != -EBADMSG)
		evr_trace_set_err(errbuf, errlen, "cannot read the trace file: %s", strerror(-err));
	return err;
}

int evr_trace_reader_open_fd_stream(int fd, uint32_t stream, struct evr_trace_reader **ret,
				    char *errbuf, size_t errlen)
{
	struct evr_trace_reader *r;
	int err;

	if (fd < 0 || !ret || stream > EVR_TRACE_CHUNK_STREAM_MASK)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		evr_trace_set_err(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	r->fd = fd;
	r->want = (uint16_t)stream;
	err = open_common(r, errbuf, errlen);
	/* The first process by default: a file of none (nothing attached) opens empty. */
	if (!err && r->multi && stream && r->want > r->max_stream && !r->has_session) {
		evr_trace_set_err(errbuf, errlen, "the file has no process stream %u", stream);
		err = -ENOENT;
	}
	if (err) {
		evr_trace_reader_free(r);
		return err;
	}
	*ret = r;
	return 0;
}

int evr_trace_reader_open_fd(int fd, struct evr_trace_reader **ret, char *errbuf, size_t errlen)
{
	return evr_trace_reader_open_fd_stream(fd, 0, ret, errbuf, errlen);
}

int evr_trace_reader_open(const char *path, struct evr_trace_reader **ret, char *errbuf,
			  size_t errlen)
{
	return evr_trace_reader_open_stream(path, 0, ret, errbuf, errlen);
}

int evr_trace_reader_open_stream(const char *path, uint32_t stream,
				 struct evr_trace_reader **ret, char *errbuf, size_t errlen)
{
	struct evr_trace_reader *r = NULL;
	int fd, err;

	if (!path || !ret)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		evr_trace_set_err(errbuf, errlen, "cannot open %s: %s", path, strerror(-err));
		return err;
	}
	err = evr_trace_reader_open_fd_stream(fd, stream, &r, errbuf, errlen);
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
	for (uint32_t i = 0; i < r->nprocs; i++) {
		free(r->procs[i].cmdline);
		free(r->procs[i].why);
	}
	free(r->procs);
	if (r->own_fd)
		close(r->fd);
	free(r);
}

static int proc_cmp(const void *a, const void *b)
{
	const struct evr_trace_proc *x = a, *y = b;

	return x->stream < y->stream ? -1 : x->stream > y->stream;
}

bool evr_trace_reader_procs(const struct evr_trace_reader *r, const struct evr_trace_proc **ret,
			    uint32_t *ret_n)
{
	if (ret)
		*ret = r ? r->procs : NULL;
	if (ret_n)
		*ret_n = r ? r->nprocs : 0;
	return r && r->multi;
}

uint32_t evr_trace_reader_stream(const struct evr_trace_reader *r)
{
	return r && r->multi ? r->want : 0;
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
	ret->unchecked_chunks = r->unchecked_chunks;
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
		/* Chunks of other kinds, or of other processes (format 2): the header
		 * only (its length was checked at open). */
		if ((!kind || h.kind == kind || !hdr_good) &&
		    (!r->multi || !hdr_good || evr_trace_chunk_stream(&h) == r->want))
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
