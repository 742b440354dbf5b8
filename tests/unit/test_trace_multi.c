// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Unit tests for traces of several processes (format 2, evr_trace_mux): each
 * stream reads as a file of its own, whatever the other streams interleave;
 * the process table; raw chunk walks stay inside their stream; a file cut
 * before the file's END is truncated for each stream; damage in another
 * stream's chunk does not touch this one's; and a reader of format 1 only
 * refuses the file as newer. Gathered (evr_trace_mux_gather()), the chunks
 * reach the file only at a flush, and the file reads the same.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include <evring/trace.h>

#include "evr-unit.h"

struct pk {
	uint8_t b[EVR_PACKET_SIZE_MIN];
	uint32_t n;
};

static void pk_header(struct pk *p, uint32_t ring, uint64_t seq, uint64_t ts)
{
	struct evr_packet_hdr h = {
		.magic = EVR_PACKET_MAGIC, .ring_index = ring, .seq = seq, .ts_begin = ts,
	};

	memcpy(p->b + p->n, &h, sizeof(h));
	p->n += sizeof(h);
}

static void pk_event(struct pk *p, uint64_t ts, uint32_t tag)
{
	struct evr_rec_hdr h = {.size = (uint16_t)(EVR_REC_HDR_SIZE + 4), .type = EVR_REC_EVENT,
				.event_id = 1, .ts = ts};

	memcpy(p->b + p->n, &h, sizeof(h));
	memcpy(p->b + p->n + sizeof(h), &tag, 4);
	p->n += (uint32_t)evr_align8(sizeof(h) + 4);
}

/* A session of one ring, monotonic clock, provider list @prov. */
static void session(struct evr_trace_writer *w, const char *prov)
{
	const struct evr_trace_session s = {
		.mode = EVR_MODE_DISCARD, .packet_size = EVR_PACKET_SIZE_MIN,
		.ring_size = 4 * EVR_PACKET_SIZE_MIN, .nr_rings = 1,
		.clock = {.kind = EVR_CLOCK_MONOTONIC, .mult = 1},
		.providers = prov,
	};

	assert_int_equal(evr_trace_writer_session(w, &s), 0);
}

/* Write events tagged @tag0.. of one packet of @w, @n of them from @ts. */
static void events(struct evr_trace_writer *w, uint64_t pos, uint32_t n, uint64_t ts,
		   uint32_t tag0, uint64_t *ret_pos)
{
	struct pk p = {.n = 0};

	if (pos == 0)
		pk_header(&p, 0, 0, ts);
	for (uint32_t i = 0; i < n; i++)
		pk_event(&p, ts + i, tag0 + i);
	assert_int_equal(evr_trace_writer_events(w, 0, pos, p.b, p.n), 0);
	*ret_pos = pos + p.n;
}

static void table(struct evr_trace_mux *m, uint32_t stream, uint32_t pid, uint16_t what,
		  uint64_t t, const char *name, uint32_t argc, char *const *argv)
{
	struct evr_trace_proc_rec rec = {
		.stream = stream, .pid = pid, .ppid = 1, .what = what, .time_ns = t,
		.start_realtime_ns = what == EVR_TRACE_PROC_ATTACHED ? 1234 : 0,
	};

	assert_int_equal(evr_trace_mux_proc(m, &rec, name, argc, argv), 0);
}

static uint64_t file_size(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return (uint64_t)st.st_size;
}

/*
 * Two processes, their chunks interleaved: A writes tags 1..3 and 7..8 and
 * exits; B writes 100..104 and is detached at the end. With @gather, the mux
 * gathers the chunks: nothing reaches the file before a flush. Return: the file.
 */
static int two_procs_opt(bool with_file_end, bool gather)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	char *argv_a[] = { "a.out", "--x", "1" };
	struct evr_trace_writer *wa, *wb;
	struct evr_trace_end e = {0};
	struct evr_trace_mux *m;
	uint32_t sa, sb;
	uint64_t pa = 0, pb = 0;

	assert_true(fd >= 0);
	assert_int_equal(evr_trace_mux_new(fd, &m), 0);
	if (gather)
		assert_int_equal(evr_trace_mux_gather(m, true), 0);
	assert_int_equal(evr_trace_mux_stream(m, &sa, &wa), 0);
	assert_int_equal(sa, 1);
	session(wa, "A");
	table(m, sa, 100, EVR_TRACE_PROC_ATTACHED, 10, "a.out", 3, argv_a);
	assert_int_equal(evr_trace_mux_stream(m, &sb, &wb), 0);
	assert_int_equal(sb, 2);
	session(wb, "B");
	table(m, sb, 200, EVR_TRACE_PROC_ATTACHED, 20, "b", 0, NULL);
	events(wa, pa, 3, 1000, 1, &pa);
	events(wb, pb, 2, 1500, 100, &pb);
	events(wa, pa, 2, 2000, 7, &pa);
	events(wb, pb, 3, 2500, 102, &pb);
	if (gather) {
		/* The file header only, until the flush; then all of it. */
		assert_int_equal(file_size(fd), sizeof(struct evr_trace_file_hdr));
		assert_int_equal(evr_trace_writer_written(wa), sizeof(struct evr_trace_file_hdr));
		assert_true(evr_trace_mux_bytes(m) > sizeof(struct evr_trace_file_hdr));
		assert_int_equal(evr_trace_mux_flush(m), 0);
		assert_int_equal(file_size(fd), evr_trace_mux_bytes(m));
		assert_int_equal(evr_trace_writer_written(wb), evr_trace_mux_bytes(m));
	}
	e.events = 5;
	assert_int_equal(evr_trace_writer_end(wa, &e), 0);
	table(m, sa, 100, EVR_TRACE_PROC_EXITED, 3000, "a.out", 0, NULL);
	assert_int_equal(evr_trace_writer_lost(wb, 0, 4), 0);
	e.events = 5;
	e.lost = 4;
	assert_int_equal(evr_trace_writer_end(wb, &e), 0);
	table(m, sb, 200, EVR_TRACE_PROC_DETACHED, 4000, "b", 0, NULL);
	if (with_file_end) {
		e.events = 10;
		assert_int_equal(evr_trace_mux_end(m, &e), 0);
	} else if (gather) {
		assert_int_equal(evr_trace_mux_flush(m), 0);
	}
	if (gather)
		assert_int_equal(file_size(fd), evr_trace_mux_bytes(m));
	assert_int_equal(evr_trace_mux_error(m), 0);
	evr_trace_writer_free(wa);
	evr_trace_writer_free(wb);
	evr_trace_mux_free(m);
	return fd;
}

static int two_procs(bool with_file_end)
{
	return two_procs_opt(with_file_end, false);
}

/* The tags of the events of @stream, in order; the losses into *@ret_lost. */
static uint32_t read_tags(int fd, uint32_t stream, uint32_t *tags, uint32_t max,
			  uint64_t *ret_lost, struct evr_trace_stats *st)
{
	struct evr_trace_reader *r;
	struct evr_event_view v;
	uint32_t n = 0;
	char err[256];
	int rc;

	assert_int_equal(evr_trace_reader_open_fd_stream(fd, stream, &r, err, sizeof(err)), 0);
	*ret_lost = 0;
	while ((rc = evr_trace_reader_next(r, &v)) == 1) {
		if (v.type == EVR_REC_LOST) {
			*ret_lost += v.lost;
			continue;
		}
		assert_true(n < max);
		memcpy(&tags[n++], v.payload, 4);
	}
	assert_int_equal(rc, 0);
	evr_trace_reader_stats(r, st);
	assert_int_equal(evr_trace_reader_stream(r), stream ? stream : 1);
	evr_trace_reader_free(r);
	return n;
}

static void test_trace_multi_streams_read_apart(void **state)
{
	int fd = two_procs(true);
	uint32_t tags[16], n;
	struct evr_trace_stats st;
	uint64_t lost;
	static const uint32_t want_a[] = { 1, 2, 3, 7, 8 }, want_b[] = { 100, 101, 102, 103, 104 };

	(void)state;
	/* Stream 0 (the default) is the first process. */
	n = read_tags(fd, 0, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_a, sizeof(want_a));
	assert_true(lost == 0 && !st.truncated && st.has_end && !st.damaged);
	assert_true(st.end.events == 5);
	n = read_tags(fd, 2, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_b, sizeof(want_b));
	assert_true(lost == 4 && !st.truncated && st.has_end && !st.damaged);
	close(fd);
}

static void test_trace_multi_gathered(void **state)
{
	int fd = two_procs_opt(true, true);
	uint32_t tags[16], n;
	struct evr_trace_stats st;
	uint64_t lost;
	static const uint32_t want_a[] = { 1, 2, 3, 7, 8 }, want_b[] = { 100, 101, 102, 103, 104 };

	(void)state;
	n = read_tags(fd, 1, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_a, sizeof(want_a));
	assert_true(lost == 0 && !st.truncated && st.has_end && !st.damaged);
	n = read_tags(fd, 2, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_b, sizeof(want_b));
	assert_true(lost == 4 && !st.truncated && st.has_end && !st.damaged);
	close(fd);
}

/*
 * Stream A's EVENTS chunks without their payload CRC (EVR_TRACE_CHUNK_UNCHECKED,
 * bit 15 of the header's flags, next to the stream number): each stream still
 * reads as its own, and counts its unchecked chunks.
 */
static void test_trace_multi_unchecked_stream(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_writer *wa, *wb;
	struct evr_trace_end e = {0};
	struct evr_trace_stats st;
	struct evr_trace_mux *m;
	uint32_t sa, sb, tags[16], n;
	uint64_t pa = 0, pb = 0, lost;
	static const uint32_t want_a[] = { 1, 2, 3, 7, 8 }, want_b[] = { 100, 101, 102, 103, 104 };

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(evr_trace_mux_new(fd, &m), 0);
	assert_int_equal(evr_trace_mux_stream(m, &sa, &wa), 0);
	assert_int_equal(evr_trace_mux_stream(m, &sb, &wb), 0);
	session(wa, "A");
	session(wb, "B");
	evr_trace_writer_set_checksum(wa, false);
	events(wa, pa, 3, 1000, 1, &pa);
	events(wb, pb, 2, 1500, 100, &pb);
	events(wa, pa, 2, 2000, 7, &pa);
	events(wb, pb, 3, 2500, 102, &pb);
	assert_true(evr_trace_writer_unchecked(wa) == 2 && evr_trace_writer_unchecked(wb) == 0);
	e.events = 5;
	assert_int_equal(evr_trace_writer_end(wa, &e), 0);
	assert_int_equal(evr_trace_writer_end(wb, &e), 0);
	e.events = 10;
	assert_int_equal(evr_trace_mux_end(m, &e), 0);
	evr_trace_writer_free(wa);
	evr_trace_writer_free(wb);
	evr_trace_mux_free(m);

	n = read_tags(fd, sa, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_a, sizeof(want_a));
	assert_true(st.unchecked_chunks == 2 && !st.damaged && !st.truncated && st.has_end);
	n = read_tags(fd, sb, tags, 16, &lost, &st);
	assert_int_equal(n, 5);
	assert_memory_equal(tags, want_b, sizeof(want_b));
	assert_true(st.unchecked_chunks == 0 && !st.damaged && !st.truncated && st.has_end);
	close(fd);
}

static void test_trace_multi_process_table(void **state)
{
	int fd = two_procs(true);
	const struct evr_trace_proc *p;
	const struct evr_trace_session *s;
	struct evr_trace_reader *r;
	struct evr_trace_chunk c;
	uint64_t pos = 0;
	uint32_t n, kinds = 0;
	char err[256];

	(void)state;
	assert_int_equal(evr_trace_reader_open_fd_stream(fd, 2, &r, err, sizeof(err)), 0);
	s = evr_trace_reader_session(r);
	assert_non_null(s);
	assert_string_equal(s->providers, "B");
	assert_true(evr_trace_reader_procs(r, &p, &n));
	assert_int_equal(n, 2);
	assert_true(p[0].stream == 1 && p[0].pid == 100 && p[0].ppid == 1);
	assert_string_equal(p[0].name, "a.out");
	assert_string_equal(p[0].cmdline, "a.out --x 1");
	assert_true(p[0].attach_ns == 10 && p[0].end_ns == 3000 && p[0].start_realtime_ns == 1234);
	assert_int_equal(p[0].end, EVR_TRACE_PROC_EXITED);
	assert_true(p[1].stream == 2 && p[1].pid == 200);
	assert_int_equal(p[1].end, EVR_TRACE_PROC_DETACHED);
	assert_string_equal(p[1].cmdline, "");
	/* The raw walk sees this stream's chunks only: SESSION, 2 EVENTS, LOST, END. */
	while (evr_trace_reader_chunk_next(r, &pos, &c) == 1) {
		assert_true(c.kind != EVR_CHUNK_PROCS);
		kinds++;
	}
	assert_int_equal(kinds, 5);
	evr_trace_reader_free(r);
	/* A stream that is not there. */
	assert_int_equal(evr_trace_reader_open_fd_stream(fd, 7, &r, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "no process stream 7"));
	close(fd);
}

/* Without the file's END chunk (the recorder was killed after both processes
 * ended), every stream reads whole but the file says it was cut. */
static void test_trace_multi_no_file_end(void **state)
{
	int fd = two_procs(false);
	uint32_t tags[16];
	struct evr_trace_stats st;
	uint64_t lost;

	(void)state;
	assert_int_equal(read_tags(fd, 1, tags, 16, &lost, &st), 5);
	assert_true(st.truncated && st.has_end);
	assert_non_null(strstr(st.truncated_why, "no END chunk of the file"));
	close(fd);
}

/* A flipped byte in B's first EVENTS chunk beyond repair: A reads clean. */
static void test_trace_multi_damage_stays_in_its_stream(void **state)
{
	int fd = two_procs(true);
	off_t size = lseek(fd, 0, SEEK_END), off = 64;
	uint32_t tags[16];
	struct evr_trace_stats st;
	uint64_t lost;

	(void)state;
	/* Find stream 2's first EVENTS chunk and damage two bytes of its payload. */
	while (off < size) {
		struct evr_trace_chunk_hdr h;

		assert_int_equal(pread(fd, &h, sizeof(h), off), (ssize_t)sizeof(h));
		if (h.kind == EVR_CHUNK_EVENTS && h.flags == 2) {
			uint8_t b[2];

			assert_int_equal(pread(fd, b, 2, off + 24 + 60), 2);
			b[0] ^= 0xff;
			b[1] ^= 0xff;
			assert_int_equal(pwrite(fd, b, 2, off + 24 + 60), 2);
			break;
		}
		off += 24 + (off_t)evr_align8(h.len);
	}
	assert_true(off < size);
	assert_int_equal(read_tags(fd, 1, tags, 16, &lost, &st), 5);
	assert_true(!st.damaged && lost == 0);
	/* B: the damaged chunk's events come out as lost, exactly. */
	assert_int_equal(read_tags(fd, 2, tags, 16, &lost, &st), 3);
	assert_true(st.damaged && st.corrupt_chunks == 1);
	close(fd);
}

/* A recording that attached to nothing: a finished, empty file of no process. */
static void test_trace_multi_no_process(void **state)
{
	int fd = memfd_create("t", MFD_CLOEXEC);
	struct evr_trace_end e = {0};
	const struct evr_trace_proc *p;
	struct evr_trace_reader *r;
	struct evr_trace_stats st;
	struct evr_event_view v;
	struct evr_trace_mux *m;
	uint32_t n = 1;
	char err[256];

	(void)state;
	assert_int_equal(evr_trace_mux_new(fd, &m), 0);
	assert_int_equal(evr_trace_mux_end(m, &e), 0);
	evr_trace_mux_free(m);
	assert_int_equal(evr_trace_reader_open_fd(fd, &r, err, sizeof(err)), 0);
	assert_true(evr_trace_reader_procs(r, &p, &n));
	assert_int_equal(n, 0);
	assert_null(evr_trace_reader_session(r));
	assert_int_equal(evr_trace_reader_next(r, &v), 0);
	evr_trace_reader_stats(r, &st);
	assert_false(st.truncated);
	evr_trace_reader_free(r);
	/* Asked for by number, a process that is not there is an error. */
	assert_int_equal(evr_trace_reader_open_fd_stream(fd, 1, &r, err, sizeof(err)), -ENOENT);
	close(fd);
}

/* A reader that knows format 1 only sees version 2: newer, refused cleanly. */
static void test_trace_multi_header_is_version_2(void **state)
{
	int fd = two_procs(true);
	struct evr_trace_file_hdr fh;

	(void)state;
	assert_int_equal(pread(fd, &fh, sizeof(fh), 0), (ssize_t)sizeof(fh));
	assert_int_equal(fh.version, EVR_TRACE_VERSION_MULTI);
	assert_true(fh.version > EVR_TRACE_VERSION_ONE);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace_multi_streams_read_apart),
		cmocka_unit_test(test_trace_multi_gathered),
		cmocka_unit_test(test_trace_multi_unchecked_stream),
		cmocka_unit_test(test_trace_multi_process_table),
		cmocka_unit_test(test_trace_multi_no_file_end),
		cmocka_unit_test(test_trace_multi_damage_stays_in_its_stream),
		cmocka_unit_test(test_trace_multi_no_process),
		cmocka_unit_test(test_trace_multi_header_is_version_2),
	};

	return evr_unit_run(tests);
}
