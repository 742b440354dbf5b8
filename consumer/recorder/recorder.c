// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The recording engine behind <evring/recorder.h>: a session's rings into a
 * trace file.
 *
 * The recorder moves packets, not records: once a ring's next packet has
 * begun, the packet before it goes from the session mapping to the output as
 * one EVENTS chunk (one writev, its CRC computed on the way), and what it holds
 * is counted from the two packet headers (events_before, lost_before), so no
 * record is looked at on the hot path (<evring/shm.h>, EVR_SPAN_WHOLE). The
 * part of a packet still being filled is written every flush interval, and at
 * the end. Metadata entries are copied to the output before the first span
 * that may need them: a span's records were published after their
 * descriptions (<evring/abi.h>), so reading new metadata after taking a span,
 * and before writing it, always finds them.
 *
 * Losses: LOST records inside spans, gaps between what a packet header says was
 * written on its ring before it and what we stored (a lapped overwrite session,
 * a span retracted because the writers reached it), and at the end the losses
 * no record shows (evr_client_span_final_lost). The END chunk carries the sum.
 *
 * Clock: a SYNC chunk (evr_clock_sync_take()) right after the SESSION chunk,
 * then whenever one is due (100 ms later, every second, 10 ms after a jump),
 * and a last one once the session is drained, so that readers convert raw
 * timestamps piecewise and see the TSC's jumps (docs/trace-format.md).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <evring/mono-time.h>
#include <evring/recorder.h>
#include <evring/shm.h>

#include "recorder-alloc.h"
#include "recorder-io.h"
#include "recorder-uring.h"

#define SPANS_PER_PUMP		EVR_RECORDER_STEP_MAX	/* then look at the clock and the caller */
/* Thread names: asked for at most this often when a ring shows a thread not named yet, */
#define THREADS_NS		250000000u
/* and this often anyway, for renames (and threads whose records were missed). */
#define THREADS_RENAME_NS	2000000000u
/* A thread list not answered in this long (a stopped process) is asked again
 * later, then every THREADS_RENAME_NS doubled, up to THREADS_BACKOFF_MAX_NS:
 * one loop drains every process of `record --all`, and a 5 s wait for one
 * stopped process left the others' rings unread that long. */
#define THREADS_TIMEOUT_MS	100
#define THREADS_BACKOFF_MAX_NS	64000000000u
/* Bytes walked for new threads between two looks at them (scan_tids()). */
#define SCAN_TIDS_BUDGET	(256u << 10)
#define FLUSH_MS_DEFAULT	250u
/* The agent's answer to a stop (it waits for an RCU grace period), as the client's. */
#define STOP_TIMEOUT_MS		30000u
/* ... from a process whose last thread list at the end went unanswered. */
#define STOP_GRACE_MS		1000u
#define TICK_MS_DEFAULT		250u
#define META_BATCH		256u
#define META_BATCH_BYTES	(1u << 20)
#define SIDEBANDS_MAX		8u
#define BATCH_BYTES		(4u << 20)	/* direct I/O: a batch's size */
/* How long the page cache has, after direct I/O fell behind, to calm the rings
 * (cache_too_slow()). */
#define CACHE_TRIAL_NS		1000000000u
#define DEFAULT_CLIENT		"evring recorder"

struct sideband {
	evr_recorder_sideband_fn *fn;
	void *arg;
	uint64_t interval_ns;
	uint64_t due_ns;
};

struct evr_recorder {
	struct evr_client *c;
	struct evr_trace_writer *w;
	struct evr_trace_mux *mux;	/* borrowed: write a stream of it, not a file of our own */
	uint32_t stream;		/* ... this one */
	char *providers;
	char *client;
	uint32_t flags;
	uint64_t flush_ns;
	evr_recorder_log_fn *log;
	void *log_arg;

	uint32_t nr_rings;
	uint64_t meta_pos;		/* evr_client_meta_next() cursor */
	uint64_t events, lost, spans, spans_retracted;
	uint64_t flush_due;		/* take the packets still open from then on */
	struct evr_clock_sync_state sync;
	uint64_t *sync_heads;		/* nr_rings: the SYNC chunk's ring heads */
	uint64_t *held;			/* nr_rings: bytes of done spans held (direct I/O) */
	uint64_t ring_size;		/* bytes per ring; direct I/O thresholds are fractions */
	uint32_t packet_size;		/* bytes per packet: where packet headers sit in a span */
	bool hold;			/* spans are held until their batch is written */
	bool crc_auto;			/* --checksum=auto: the payload CRC while keeping up */
	bool crc_off;			/* ... skipped for now: a ring was a quarter full */
	/* Direct I/O: the EVENTS chunks not known to be in the file yet, so that a
	 * failed batch counts exactly the events of the chunks it did write. */
	struct unwritten { uint64_t end; uint64_t events; } *unw;
	uint32_t nunw, unw_cap;
	uint64_t events_written;	/* events of chunks surely in the file */
	bool direct_ok;			/* the output takes direct I/O */
	uint32_t calm;			/* buffered for now: calm flush intervals in a row */
	bool io_warned;			/* said that direct I/O fell behind */
	bool was_direct, fell_back;	/* for the explanation of a loss */
	/* For the explanation of a loss (evr_recorder_stats): the longest time
	 * between two rounds that found spans, and the time spent in writes. */
	uint64_t last_pump_ns, stall_ns, write_ns;
	uint64_t start_ns, last_span_ns;	/* the stream's time: start to last span, */
	uint64_t end_ns;		/* or to the session's end when the drain lagged */
	/* For the way back to direct I/O (adapt_io()): the bytes written
	 * directly and the time those writes took, from when direct I/O was
	 * last turned on until it fell behind; the file's size and the time at
	 * the last look since. */
	uint64_t dio_bytes, dio_ns;
	uint64_t mark_bytes, mark_ns;
	/* The file's bytes and the time when direct I/O last fell behind
	 * (cache_too_slow()); the page cache did not catch up: direct I/O for good. */
	uint64_t way_bytes, way_ns;
	bool cache_caught_up;		/* the rings were calm once since the fall */
	/* The page cache's price (cache_dear()): the recorder thread's CPU time
	 * and the time when the current window began, the file's size then. */
	uint64_t price_cpu_ns, price_ns, price_bytes;
	/* The tests' knobs, read once: EVR_RECORDER_SLOW_DISK=1, every lag is the
	 * disk's (adapt_io()); EVR_RECORDER_CACHE_SLOW=1, the rings never calm
	 * (rings_calm()); EVR_RECORDER_CACHE_DEAR=1, the page cache costs too
	 * much whatever it cost, =0 never (cache_dear(): env_knob()'s 1, -1, 0). */
	bool disk_lag_test, cache_slow_test;
	int cache_dear_test;
	bool cache_slow;
	bool cache_dear;		/* ... because the page cache cost too much (cache_dear()) */
	/* The io_uring engine (direct I/O only; NULL: writev() from here), why
	 * it is not used, and its figures already counted above. */
	struct evr_uring *u;
	int uring_err;
	bool trimmed;			/* the space allocated ahead is gone (trim()) */
	/* Direct writes one at a time (no engine): the space allocated ahead
	 * of them from here (recorder-alloc.c). */
	struct evr_alloc al;
	uint64_t u_bytes, u_ns;

	enum evr_recorder_stop stop;
	int err;			/* sticky failure, 0 */
	bool write_failed;
	char errmsg[256];		/* the failure's message, repeated to later callers */
	bool stopped;			/* evr_recorder_stop() ran */
	bool stop_asked;		/* ask_stop() ran */
	bool unanswered;		/* the process did not answer the stop */
	bool stop_waited;		/* ... for which we waited (it had answered before) */
	bool stop_stopped;		/* ... until it was seen stopped */
	uint64_t stop_deadline;		/* wait for the stop's answer until then */
	bool has_end;

	/* Thread names written so far (THREADS chunks), sorted by tid. */
	struct evr_thread_info *tnames;
	uint32_t ntnames;
	uint64_t t_threads;		/* when the thread list was last asked for */
	bool threads_off;		/* the process cannot list its threads: stop asking */
	uint64_t threads_backoff;	/* the next look's delay after unanswered ones, or 0 */
	bool tid_new;			/* a ring showed tid_seen, not in tnames, since that */
	uint32_t tid_seen;
	uint32_t tid_last;		/* the last tid looked up: most THREAD records repeat it */
	uint32_t tid_scanned;		/* bytes scan_tids() walked since the last look */
	bool threads_sent;		/* a thread list asked for, its answer not taken yet */
	uint64_t threads_due;		/* ... wait for it until then */

	struct sideband sb[SIDEBANDS_MAX];
	uint32_t nsb;
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void copy_msg(char *buf, size_t len, const char *msg)
{
	if (buf && len)
		snprintf(buf, len, "%s", msg);
}

__attribute__((format(printf, 2, 3)))
static void warn(const struct evr_recorder *r, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!r->log)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	r->log(r->log_arg, msg);
}

/* Mark the recording failed with @err and the message; return @err. */
__attribute__((format(printf, 3, 4)))
static int fail(struct evr_recorder *r, int err, const char *fmt, ...)
{
	va_list ap;

	if (r->err)
		return r->err;
	r->err = err;
	r->stop = EVR_RECORDER_STOP_ERROR;
	va_start(ap, fmt);
	vsnprintf(r->errmsg, sizeof(r->errmsg), fmt, ap);
	va_end(ap);
	return err;
}

/* A trace writer error: the output holds whole chunks only from now on. */
static int write_error(struct evr_recorder *r, int err)
{
	if (r->err)
		return r->err;
	if (r->u) {
		/* The engine counted the events of the batches wholly in the file,
		 * and cut the file back to their end. */
		struct evr_uring_stats us;

		(void)evr_uring_reap(r->u, true);
		evr_uring_stats(r->u, &us);
		if (r->hold)
			r->events = us.events;
	} else if (r->hold || r->mux) {
		/* Events count once their chunk is whole in the file (a mux may
		 * gather the chunks of many streams for one write). */
		uint64_t in_file = evr_trace_writer_written(r->w);

		r->events = r->events_written;
		for (uint32_t i = 0; i < r->nunw; i++)
			if (r->unw[i].end <= in_file)
				r->events += r->unw[i].events;
	}
	r->write_failed = true;
	return fail(r, err, "cannot write the trace: %s", strerror(-err));
}

/* When the packets still open are flushed next, after a flush at @now. */
static uint64_t next_flush(const struct evr_recorder *r, uint64_t now)
{
	if (r->flags & EVR_RECORDER_FLUSH_ALIGNED)
		return (now / r->flush_ns + 1) * r->flush_ns;
	return now + r->flush_ns;
}

/* ---- metadata and spans ------------------------------------------------------------ */

/* Copy the metadata entries not yet in the output into METADATA chunks. */
static int write_metadata(struct evr_recorder *r)
{
	struct evr_trace_meta batch[META_BATCH];
	uint32_t n = 0, bytes = 0;
	int ret;

	for (;;) {
		const void *data;
		uint32_t kind, len;

		ret = evr_client_meta_next(r->c, &r->meta_pos, &kind, &data, &len);
		if (ret < 0)
			return fail(r, ret, "the session's metadata area is corrupt: %s",
				    strerror(-ret));
		if (ret == 1) {
			batch[n++] = (struct evr_trace_meta){ .kind = kind, .len = len,
							      .data = data };
			bytes += len + 16;
		}
		if (n && (ret == 0 || n == META_BATCH || bytes >= META_BATCH_BYTES)) {
			int w = evr_trace_writer_metadata(r->w, batch, n);

			if (w < 0)
				return write_error(r, w);
			n = 0;
			bytes = 0;
		}
		if (ret == 0)
			return 0;
	}
}

/*
 * io_uring: the batch is on its way; take the completions that are in (all
 * of them with @wait), which give the writers their space back.
 */
static int uring_flush(struct evr_recorder *r, bool wait)
{
	struct evr_uring_stats us;
	int ret = evr_trace_writer_flush(r->w);

	if (ret == 0)
		ret = evr_uring_reap(r->u, wait);
	if (ret < 0)
		return write_error(r, ret);
	evr_uring_stats(r->u, &us);
	/* What the disk took: bytes over the time a write was in flight. */
	r->dio_bytes += us.bytes - r->u_bytes;
	r->dio_ns += us.busy_ns - r->u_ns;
	r->write_ns += us.busy_ns - r->u_ns;
	r->u_bytes = us.bytes;
	r->u_ns = us.busy_ns;
	memset(r->held, 0, r->nr_rings * sizeof(*r->held));
	return 0;
}

/*
 * Direct I/O: write the batch, then give the writers the space of the spans in
 * it (through io_uring: submit it, and with @wait wait for every write in
 * flight). Buffered: nothing gathered, nothing held.
 */
static int flush_release(struct evr_recorder *r, bool wait)
{
	uint64_t bytes, t0;
	int ret;

	if (!r->hold)
		return 0;
	if (r->u)
		return uring_flush(r, wait);
	bytes = evr_trace_writer_pending(r->w);
	t0 = evr_mono_ns();
	evr_alloc_ahead(&r->al, evr_trace_writer_written(r->w),
			evr_trace_writer_written(r->w) + bytes);
	ret = evr_trace_writer_flush(r->w);
	if (ret < 0)
		return write_error(r, ret);
	t0 = evr_mono_ns() - t0;
	r->dio_bytes += bytes;
	r->dio_ns += t0;
	r->write_ns += t0;
	r->events_written = r->events;
	r->nunw = 0;
	evr_client_span_release(r->c);
	memset(r->held, 0, r->nr_rings * sizeof(*r->held));
	return 0;
}

/* A test's knob, the environment variable @name: 1 for "1", -1 for "0", else 0 (unset). */
static int env_knob(const char *name)
{
	const char *v = getenv(name);

	return !v ? 0 : !strcmp(v, "1") ? 1 : !strcmp(v, "0") ? -1 : 0;
}

/* Direct I/O fell behind: the page cache's trial (cache_too_slow()) begins now. */
static void way_begin(struct evr_recorder *r)
{
	r->way_bytes = evr_trace_writer_bytes(r->w);
	r->way_ns = evr_mono_ns();
	r->cache_caught_up = false;
	r->price_cpu_ns = evr_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	r->price_ns = r->way_ns;
	r->price_bytes = r->way_bytes;
}

/*
 * Through the page cache: the rings an eighth full or less. EVR_RECORDER_CACHE_SLOW=1,
 * a test of cache_too_slow(): never, as where the page cache cannot keep up.
 */
static bool rings_calm(const struct evr_recorder *r)
{
	return !r->cache_slow_test && evr_client_span_backlog(r->c) <= r->ring_size / 8;
}

/*
 * The page cache must also be affordable: over each window of at least
 * EVR_RECORDER_CACHE_PRICE_NS through it, the recorder's thread must have
 * spent less than half of a CPU (evr_recorder_cache_dear()). On a 2-vCPU
 * Intel guest whose host backs new pages on first touch, a 500 MB/s stream
 * through the page cache took the recorder 21-38 ns an event against 5.5-6.1
 * through direct I/O, and 4 of 13 recordings that fell lost 4.3-6.6% (mean
 * 1.7%) where 4 with the fall disabled lost 0-1.3% (mean 0.75%), and 5 with
 * this rule 0-0.6% (mean 0.26%; docs/recorder.md, "Direct I/O"). Return:
 * true when it is left for the rest of the recording (cache_too_slow()'s
 * caller turns direct I/O back on). The thread's time is all its recorders'
 * (`record --all` drains every process from one thread): a thread that is
 * busy half of the time writing leaves the page cache for each of them.
 */
static bool cache_dear(struct evr_recorder *r)
{
	uint64_t now = evr_mono_ns(), cpu = evr_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t bytes = evr_trace_writer_bytes(r->w);
	uint64_t wall = now - r->price_ns, used = cpu - r->price_cpu_ns, took = bytes - r->price_bytes;

	if (wall < EVR_RECORDER_CACHE_PRICE_NS)
		return false;
	r->price_ns = now;
	r->price_cpu_ns = cpu;
	r->price_bytes = bytes;
	if (r->cache_dear_test < 0 ||
	    (!r->cache_dear_test && (!cpu || !evr_recorder_cache_dear(used, wall))))
		return false;
	r->cache_slow = r->cache_dear = true;
	warn(r, "the page cache took %.0f%% of a CPU from the recorder (%.1f ns a byte): direct "
	     "I/O again for the rest of the recording, through the disk's stalls",
	     (double)used * 100.0 / (double)wall, took ? (double)used / (double)took : 0.0);
	return true;
}

/*
 * The page cache must catch up, or give way. It is there to ride out a stall
 * of the disk: rings that were not calm once (an eighth full or less, looked
 * at each flush interval) in the second after direct I/O fell behind say it
 * does not, and it is left for the rest of the recording: direct I/O then
 * loses only what a stall outlasts the rings by. Where new page-cache pages
 * are dear the page cache can fall behind on its own: on the development
 * guest (Firecracker under PVM) buffered writes into new pages cost the
 * kernel 1.8-3.3 ns a byte against 0.2 for direct ones, and before the
 * writer's write-behind (write-behind.c) the page cache took 386-487 MB/s of
 * a 505 MB/s stream after a fall, where the disk takes 0.97-1.5 GB/s between
 * its stalls: 13-second recordings lost 24-44% so (docs/recorder.md, "Direct
 * I/O"). Return: true when the page cache is left (the caller turns direct
 * I/O back on).
 */
static bool cache_too_slow(struct evr_recorder *r)
{
	uint64_t ns = evr_mono_ns() - r->way_ns, bytes = evr_trace_writer_bytes(r->w) - r->way_bytes;

	if (r->cache_slow || !r->fell_back)
		return false;
	if (cache_dear(r))
		return true;
	if (rings_calm(r))
		r->cache_caught_up = true;
	if (r->cache_caught_up || ns < CACHE_TRIAL_NS)
		return false;
	r->cache_slow = true;
	warn(r, "the page cache did not catch up in %.1f s (it took %.0f MB/s): direct I/O again "
	     "for the rest of the recording, through the disk's stalls", (double)ns / 1e9,
	     (double)bytes * 1e3 / (double)ns);
	return true;
}

/* Direct I/O on again (hold the spans until written), from the page cache. */
static int direct_again(struct evr_recorder *r)
{
	int ret = evr_trace_writer_set_direct(r->w, true);

	if (ret < 0)
		return write_error(r, ret);
	ret = evr_client_span_hold(r->c, true);
	if (ret < 0)
		return fail(r, ret, "cannot hold the session's spans for direct I/O: %s",
			    strerror(-ret));
	r->hold = true;
	r->was_direct = true;
	r->events_written = r->events;
	r->nunw = 0;
	r->dio_bytes = r->dio_ns = 0;
	return 0;
}

/*
 * Direct I/O leaves the rings as the only buffer between the process and the
 * disk. When the disk falls behind (a ring half full after a batch went out),
 * the page cache takes over, as without direct I/O. Direct I/O comes back
 * once the rings have stayed nearly empty for a second (@interval: a flush
 * interval passed) while the process sent less than three quarters of what
 * the disk took before it fell behind: the rings are calm through the page
 * cache whatever the disk's speed, and going back to a disk still slower
 * than the stream only loses events at its next stall: a 500 MB/s stream
 * to a virtio disk taking 420-630 MB/s lost 40-180 k events a second after
 * the fall in 3 runs of 4 when the calm second alone decided, none in 4
 * with the rates compared.
 */
static int adapt_io(struct evr_recorder *r, bool interval)
{
	const uint64_t ring_size = r->ring_size;
	uint64_t now, bytes;
	bool fits;
	int ret;

	if (!r->direct_ok || r->err)
		return 0;
	if (r->hold) {
		uint64_t backlog = evr_client_span_backlog(r->c);

		if (r->cache_slow || backlog <= ring_size / 2)
			return 0;
		/* With writes in flight (io_uring), a ring that fills while they
		 * complete is the recorder's own lag, not the disk's: the page cache
		 * would not help it (its write() reads the same ring pages, and takes
		 * new pages of its own; docs/recorder.md, "Direct I/O"). The tests'
		 * EVR_RECORDER_SLOW_DISK=1 takes every lag as the disk's: a recorder
		 * stopped by a signal stands for a disk that stalls. */
		if (r->u && !r->disk_lag_test &&
		    !evr_recorder_disk_behind(backlog, evr_client_span_unread(r->c)))
			return 0;
		ret = flush_release(r, true);
		if (ret < 0)
			return ret;
		r->mark_bytes = evr_trace_writer_bytes(r->w);
		r->mark_ns = evr_mono_ns();
		ret = evr_trace_writer_set_direct(r->w, false);
		if (ret < 0)
			return write_error(r, ret);
		(void)evr_client_span_hold(r->c, false);
		r->hold = false;
		r->calm = 0;
		r->fell_back = true;
		way_begin(r);
		if (!r->io_warned) {
			r->io_warned = true;
			warn(r, "direct I/O fell behind (a ring was half full): writing through "
			     "the page cache while the disk catches up");
		}
		return 0;
	}
	if (!interval)
		return 0;
	if (cache_too_slow(r))
		return direct_again(r);
	/* What the process sent since the last look, against what the disk took:
	 * the file grows by what the page cache is given. */
	now = evr_mono_ns();
	bytes = evr_trace_writer_bytes(r->w);
	fits = evr_recorder_stream_fits(bytes - r->mark_bytes, now - r->mark_ns,
					evr_recorder_disk_bps(r->dio_bytes, r->dio_ns)) &&
	       evr_recorder_rings_hold(ring_size, bytes - r->mark_bytes, now - r->mark_ns);
	r->mark_bytes = bytes;
	r->mark_ns = now;
	if (!fits || !rings_calm(r)) {
		r->calm = 0;
		return 0;
	}
	if (++r->calm * r->flush_ns < 1000000000u)
		return 0;
	return direct_again(r);
}

/*
 * --checksum=auto: the payload CRC is one pass over every byte the writers
 * wrote a moment ago on another CPU (0.45 ns a byte from memory: half of the
 * recorder's time at 12 M events/s), so a recorder short of CPU drops it
 * rather than events: off while a ring holds more than a quarter of its size
 * unread (a lag of 16 ms of a 500 MB/s stream in a 32 MiB ring, half of the
 * way to loss, held spans of writes in flight not counted: a slow disk is
 * not the recorder's lag), back on once the lag is under a sixteenth. Looked
 * at per span: two loads a ring.
 */
static void choose_checksum(struct evr_recorder *r)
{
	uint64_t unread = evr_client_span_unread(r->c);

	if (!r->crc_off && unread > r->ring_size / 4) {
		r->crc_off = true;
		evr_trace_writer_set_checksum(r->w, false);
	} else if (r->crc_off && unread < r->ring_size / 16) {
		r->crc_off = false;
		evr_trace_writer_set_checksum(r->w, true);
	}
}

/* Direct I/O: the EVENTS chunk just written ends where the writer stands. */
static int note_unwritten(struct evr_recorder *r, uint64_t events)
{
	if (r->nunw == r->unw_cap) {
		uint32_t cap = r->unw_cap ? 2 * r->unw_cap : 256;
		struct unwritten *p = realloc(r->unw, cap * sizeof(*p));

		if (!p)
			return fail(r, -ENOMEM, "out of memory");
		r->unw = p;
		r->unw_cap = cap;
	}
	r->unw[r->nunw++] = (struct unwritten){ .end = evr_trace_writer_bytes(r->w),
					       .events = events };
	return 0;
}

/*
 * A stream of a mux: forget the EVENTS chunks the file holds by now (the mux
 * may gather chunks for one write: evr_trace_mux_gather()).
 */
static void trim_unwritten(struct evr_recorder *r)
{
	uint64_t in_file = evr_trace_writer_written(r->w);
	uint32_t k = 0;

	while (k < r->nunw && r->unw[k].end <= in_file)
		r->events_written += r->unw[k++].events;
	if (!k)
		return;
	r->nunw -= k;
	memmove(r->unw, r->unw + k, r->nunw * sizeof(*r->unw));
}

/* Is @tid among the threads named so far (tnames, sorted by tid)? */
static bool tid_named(const struct evr_recorder *r, uint32_t tid)
{
	uint32_t lo = 0, hi = r->ntnames;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (r->tnames[mid].tid == tid)
			return true;
		if (r->tnames[mid].tid < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Does @sp name a thread (a THREAD record) that tnames lacks? Then the thread
 * list is asked for at the next round, not at the next look for renames: the
 * agent is asked only when a ring shows a thread it was not asked about. A walk
 * of the record headers (one load a record, the lines that the CRC reads
 * next); in overwrite mode the span may be rewritten under us, so every size
 * is checked, and a torn tid costs at most one look too many.
 *
 * Only where it pays: past SCAN_TIDS_BUDGET bytes since the last look, the
 * process is a busy one, where the walk would cost every event (a load and a
 * branch each: 7% of a single 12 M events/s stream's recorder samples) to save
 * one request every THREADS_NS. It is then taken to show a new thread, so a busy
 * process is asked every THREADS_NS as before this walk existed; the many slow
 * processes of `--all` are the ones it spares.
 */
static void scan_tids(struct evr_recorder *r, const struct evr_span *sp)
{
	const uint8_t *d = sp->data;
	uint64_t pmask = (uint64_t)r->packet_size - 1;
	uint32_t off = 0;

	if (r->tid_new || r->threads_off || !r->packet_size)
		return;
	if (sp->len > SCAN_TIDS_BUDGET - r->tid_scanned) {
		r->tid_new = true;
		r->tid_seen = r->tid_last;
		return;
	}
	r->tid_scanned += sp->len;
	while (sp->len - off >= 8) {
		uint64_t in_pkt = (sp->pos + off) & pmask;
		uint16_t size;
		uint8_t type;
		uint32_t tid;

		if (in_pkt == 0) {
			if (sp->len - off < EVR_PACKET_HDR_SIZE)
				return;
			off += EVR_PACKET_HDR_SIZE;
			continue;
		}
		memcpy(&size, d + off, sizeof(size));
		type = d[off + 2];
		if (size < 8 || size > sp->len - off)
			return;
		if (type == EVR_REC_END) {
			if (pmask + 1 - in_pkt > sp->len - off)
				return;
			off += (uint32_t)(pmask + 1 - in_pkt);
			continue;
		}
		if (type == EVR_REC_THREAD && size >= EVR_REC_HDR_SIZE + sizeof(uint32_t)) {
			memcpy(&tid, d + off + EVR_REC_HDR_SIZE, sizeof(tid));
			if (tid != r->tid_last) {
				if (!tid_named(r, tid)) {
					r->tid_new = true;
					r->tid_seen = tid;
					return;
				}
				r->tid_last = tid;
			}
		}
		if (((size + 7u) & ~7u) > sp->len - off)
			return;
		off += (size + 7u) & ~7u;
	}
}

/*
 * Write what is published, at most SPANS_PER_PUMP spans: whole packets (the
 * rest of a packet once the next one has begun), and with @partial the part of
 * a packet still being filled as well. Counting needs no walk over the records:
 * the span reader takes a packet's counts from the packet headers.
 * Return: the number of spans written (retracted ones included), or -errno.
 */
static int pump_spans(struct evr_recorder *r, bool partial)
{
	uint32_t flags = partial ? 0 : EVR_CLIENT_SPAN_WHOLE;
	struct evr_span sp;
	uint64_t t0 = 0;
	int n = 0, ret;

	while (n < (int)SPANS_PER_PUMP) {
		ret = evr_client_span_get(r->c, flags, &sp);
		if (ret < 0)
			return fail(r, ret, "cannot read the session: %s", strerror(-ret));
		if (ret == 0)
			break;
		ret = write_metadata(r);
		if (ret < 0)
			return ret;
		/* Through the page cache the write is here (direct I/O: in
		 * flush_release()); one clock read a packet. */
		if (!r->hold)
			t0 = evr_mono_ns();
		if (r->crc_auto)
			choose_checksum(r);
		ret = evr_trace_writer_events(r->w, sp.ring, sp.pos, sp.data, sp.len);
		if (!r->hold)
			r->write_ns += evr_mono_ns() - t0;
		if (ret < 0)
			return write_error(r, ret);
		scan_tids(r, &sp);
		/* In overwrite mode the writers may be rewriting the span under us
		 * already: what the writer's CRC read counts only if
		 * evr_client_span_done() then says it stayed intact. In discard mode
		 * done hands the span's space back to the writers. */
		ret = evr_client_span_done(r->c, &sp);
		if (ret == -ESTALE) {
			/* Retract it from the output. Its events, and any gap before it,
			 * are counted when the next intact packet header of the ring
			 * says how many were written before it. */
			ret = evr_trace_writer_discard_last(r->w);
			if (ret < 0)
				return write_error(r, ret);
			r->spans_retracted++;
			n++;
			continue;
		}
		if (ret < 0)
			return fail(r, ret, "cannot release a span: %s", strerror(-ret));
		r->events += sp.events;
		r->lost += sp.lost;
		r->spans++;
		n++;
		if (r->mux) {
			ret = note_unwritten(r, sp.events);
			if (ret < 0)
				return ret;
		}
		if (r->hold) {
			ret = r->u ? 0 : note_unwritten(r, sp.events);
			if (ret < 0)
				return ret;
			r->held[sp.ring] += sp.len;
			if (r->held[sp.ring] >= r->ring_size / 4 ||
			    evr_trace_writer_pending(r->w) >= BATCH_BYTES) {
				ret = flush_release(r, false);
				if (ret >= 0)
					ret = adapt_io(r, false);
				if (ret < 0)
					return ret;
			}
		}
	}
	/* Direct I/O: a batch grows over rounds until it is big or a ring holds a
	 * quarter of its space; evr_recorder_pump() writes it at the flush
	 * interval, and the END chunk at the end. */
	return n;
}

/* A clock sync point into the output: when one is due, or @flags EVR_SYNC_FINAL. */
static int write_sync(struct evr_recorder *r, uint64_t now, uint32_t flags)
{
	struct evr_trace_sync p;
	int ret;

	if (!flags && !evr_clock_sync_due(&r->sync, now))
		return 0;
	ret = evr_clock_sync_take(&r->sync, evr_client_shm(r->c), flags, &p, r->sync_heads);
	if (ret < 0)
		return fail(r, ret, "cannot take a clock sync point: %s", strerror(-ret));
	ret = evr_trace_writer_sync(r->w, &p, r->sync_heads);
	if (ret < 0)
		return write_error(r, ret);
	if (p.flags & EVR_SYNC_DISCONT)
		warn(r, "the TSC jumped %s (a VM restored from a snapshot or migrated?): the "
		     "trace starts a new clock segment", p.flags & EVR_SYNC_BACKWARDS ?
		     "back" : "forward");
	return 0;
}

/* ---- thread names ------------------------------------------------------------------ */

static int tname_cmp(const void *a, const void *b)
{
	const struct evr_thread_info *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* A look at the threads begins: what it asks about. */
static void threads_begin(struct evr_recorder *r)
{
	r->t_threads = evr_mono_ns();
	/* Asked about from here on: a thread that is gone by now (not in the
	 * answer) does not make every later round ask again. */
	if (r->tid_new)
		r->tid_last = r->tid_seen;
	r->tid_new = false;
	r->tid_scanned = 0;
}

/*
 * The first half of a look at the threads, for the end of a recording of many
 * processes (evr_recorder_stop_begin()): ask, without waiting; record_threads()
 * takes the answer, waiting for it until THREADS_TIMEOUT_MS from now.
 */
static void threads_ask(struct evr_recorder *r)
{
	char err[256];
	int ret;

	if (r->threads_off || r->err || r->threads_sent)
		return;
	threads_begin(r);
	ret = evr_client_list_threads_send(r->c, err, sizeof(err));
	if (ret < 0) {
		/* Its socket is full (stuck): record_threads() asks the usual way. */
		if (ret != -ETIMEDOUT)
			r->threads_off = true;	/* it is gone: names are a nicety */
		return;
	}
	r->threads_sent = true;
	r->threads_due = r->t_threads + THREADS_TIMEOUT_MS * 1000000ull;
}

/*
 * Ask the process for its threads (or take the answer to threads_ask()) and
 * write a THREADS chunk with those that are new or renamed since the last one,
 * so that tools can show names next to tids. Threads that live less than
 * THREADS_NS between two looks go unnamed. Only a write error is an error: a
 * process that cannot answer just stays unnamed.
 */
static int record_threads(struct evr_recorder *r)
{
	struct evr_thread_info *cur = NULL, *merged;
	struct evr_trace_thread *batch = NULL;
	uint32_t n = 0, nb = 0, nm = 0;
	char err[256];
	int ret = 0;

	if (r->threads_sent) {
		/* Taken whatever comes next: a reply left unread would stand
		 * before the stop's. */
		uint64_t now = evr_mono_ns();

		r->threads_sent = false;
		ret = evr_client_list_threads_recv(r->c, r->threads_due > now ?
						   (int)((r->threads_due - now + 999999) /
							 1000000u) : 0, &cur, &n, err, sizeof(err));
		if (r->err) {
			free(cur);
			return 0;
		}
	} else {
		if (r->threads_off || r->err)
			return 0;
		threads_begin(r);
		ret = evr_client_list_threads_ms(r->c, THREADS_TIMEOUT_MS, &cur, &n, err,
						 sizeof(err));
	}
	if (ret == -ETIMEDOUT) {
		/* Stopped, or too busy to answer now: ask again later, less often. */
		if (!r->threads_backoff && !r->stop_asked)
			warn(r, "did not answer within %d ms (stopped?): its thread names are asked "
			     "for again later, and the end of the recording will not wait for it",
			     THREADS_TIMEOUT_MS);
		r->threads_backoff = r->threads_backoff ? 2 * r->threads_backoff :
				     THREADS_RENAME_NS;
		if (r->threads_backoff > THREADS_BACKOFF_MAX_NS)
			r->threads_backoff = THREADS_BACKOFF_MAX_NS;
		return 0;
	}
	if (ret < 0) {
		/* An older agent (EOPNOTSUPP), or it is gone: names are a nicety. */
		r->threads_off = true;
		return 0;
	}
	r->threads_backoff = 0;
	merged = calloc((size_t)r->ntnames + n + 1, sizeof(*merged));
	batch = calloc((size_t)n + 1, sizeof(*batch));
	if (!merged || !batch) {
		free(merged);
		goto out;
	}
	qsort(cur, n, sizeof(*cur), tname_cmp);
	/* Merge the sorted lists; a tid in both keeps the current name. */
	for (uint32_t i = 0, j = 0; i < r->ntnames || j < n;) {
		if (j == n || (i < r->ntnames && r->tnames[i].tid < cur[j].tid)) {
			merged[nm++] = r->tnames[i++];
			continue;
		}
		if (i == r->ntnames || cur[j].tid < r->tnames[i].tid ||
		    strcmp(cur[j].name, r->tnames[i].name)) {
			if (cur[j].name[0])
				batch[nb++] = (struct evr_trace_thread){ .tid = cur[j].tid,
									 .name = cur[j].name };
		}
		if (i < r->ntnames && r->tnames[i].tid == cur[j].tid)
			i++;
		merged[nm++] = cur[j++];
	}
	if (nb) {
		ret = evr_trace_writer_threads(r->w, batch, nb);
		if (ret < 0) {
			free(merged);
			ret = write_error(r, ret);
			goto out;
		}
	}
	free(r->tnames);
	r->tnames = merged;
	r->ntnames = nm;
out:
	free(batch);
	free(cur);
	return ret;
}

/* How long after the last look at the threads the next is due. */
static uint64_t threads_every(const struct evr_recorder *r)
{
	if (r->threads_backoff)
		return r->threads_backoff;
	return r->tid_new ? THREADS_NS : THREADS_RENAME_NS;
}

/* ---- side bands ---------------------------------------------------------------------- */

static int run_sideband(struct evr_recorder *r, struct sideband *s, uint64_t now, bool final)
{
	int ret = s->fn(r, r->w, now, final, s->arg);

	s->due_ns = now + s->interval_ns;
	if (ret < 0) {
		if (evr_trace_writer_error(r->w))
			return write_error(r, evr_trace_writer_error(r->w));
		return fail(r, ret, "a side band of the recording failed: %s", strerror(-ret));
	}
	return 0;
}

int evr_recorder_add_sideband(struct evr_recorder *r, uint32_t interval_ms,
			      evr_recorder_sideband_fn *fn, void *arg)
{
	if (!r || !fn || !interval_ms || !r->w)
		return -EINVAL;
	if (r->nsb == SIDEBANDS_MAX)
		return -ENOSPC;
	r->sb[r->nsb++] = (struct sideband){
		.fn = fn,
		.arg = arg,
		.interval_ns = (uint64_t)interval_ms * 1000000u,
		.due_ns = evr_mono_ns() + (uint64_t)interval_ms * 1000000u,
	};
	return 0;
}

/* ---- life cycle ---------------------------------------------------------------------- */

int evr_recorder_new(struct evr_client *c, const struct evr_recorder_opts *opts,
		     struct evr_recorder **ret, char *errbuf, size_t errlen)
{
	struct evr_recorder *r;
	int err = 0;

	if (!c || !opts || !ret || !opts->attach.providers)
		return -EINVAL;
	r = calloc(1, sizeof(*r));
	if (!r) {
		copy_msg(errbuf, errlen, "out of memory");
		return -ENOMEM;
	}
	r->c = c;
	r->flags = opts->flags;
	r->mux = opts->mux;
	r->flush_ns = (uint64_t)(opts->flush_ms ? opts->flush_ms : FLUSH_MS_DEFAULT) * 1000000u;
	r->log = opts->log;
	r->log_arg = opts->log_arg;
	r->threads_off = opts->flags & EVR_RECORDER_NO_THREADS;
	r->disk_lag_test = env_knob("EVR_RECORDER_SLOW_DISK") > 0;
	r->cache_slow_test = env_knob("EVR_RECORDER_CACHE_SLOW") > 0;
	r->cache_dear_test = env_knob("EVR_RECORDER_CACHE_DEAR");
	r->providers = strdup(opts->attach.providers);
	r->client = strdup(opts->client ? opts->client : DEFAULT_CLIENT);
	if (!r->providers || !r->client) {
		err = -ENOMEM;
		copy_msg(errbuf, errlen, "out of memory");
		goto fail;
	}
	if (!(opts->flags & EVR_RECORDER_SESSION_STARTED))
		err = evr_client_start(c, &opts->attach, errbuf, errlen);
	else if (!evr_client_shm(c))
		err = -EINVAL;		/* no session to take */
	if (err < 0)
		goto fail;
	/* The validated count: the header itself stays writable by the producer. */
	r->nr_rings = evr_shm_nr_rings(evr_client_shm(c));
	r->sync_heads = calloc(r->nr_rings ? r->nr_rings : 1, sizeof(*r->sync_heads));
	r->held = calloc(r->nr_rings ? r->nr_rings : 1, sizeof(*r->held));
	if (!r->sync_heads || !r->held) {
		err = -ENOMEM;
		copy_msg(errbuf, errlen, "out of memory");
		goto fail;
	}
	*ret = r;
	return 0;
fail:
	evr_recorder_free(r);
	return err;
}

/*
 * The io_uring engine for the direct writes, where the kernel gives one;
 * else (r->uring_err) each batch is a writev() from this thread, as before.
 * Here, before any sandbox: the ring is set up with system calls the
 * recording's seccomp filter does not allow.
 */
static void start_uring(struct evr_recorder *r, int fd)
{
	const char *no = getenv("EVR_RECORDER_NO_URING");
	int ret;

	if (no && strcmp(no, "1") == 0)
		ret = -EPERM;	/* a test of the fallback: as if refused */
	else
		ret = evr_uring_new(fd, r->c, r->w, &r->events, r->nr_rings, &r->u);
	if (ret == 0)
		return;
	r->uring_err = ret;
	if (!(r->flags & EVR_RECORDER_URING_WARN))
		return;
	if (ret == -EOPNOTSUPP)
		warn(r, "--io uring: this evring was built without liburing: direct writes from "
		     "the recorder's thread");
	else if (no && strcmp(no, "1") == 0)
		warn(r, "--io uring: refused (EVR_RECORDER_NO_URING=1): direct writes from the "
		     "recorder's thread");
	else
		warn(r, "--io uring: the kernel refused io_uring (%s%s): direct writes from the "
		     "recorder's thread", strerror(-ret),
		     ret == -EPERM ? ": the io_uring_disabled sysctl, a seccomp filter or a "
		     "container's policy" : "");
}

int evr_recorder_start(struct evr_recorder *r, int fd, char *errbuf, size_t errlen)
{
	const struct evr_process_info *pi;
	const struct evr_shm_hdr *h;
	struct evr_trace_session s = { 0 };
	int ret;

	if (!r || (fd < 0 && !r->mux) || r->w || r->err)
		return -EINVAL;
	pi = evr_client_process(r->c);
	h = evr_client_shm(r->c);
	/* Overwrite mode checks a span after writing it, and retracts it if the
	 * writers reached it meanwhile: that needs it written at once. */
	if (r->mux)
		ret = evr_trace_mux_stream(r->mux, &r->stream, &r->w);
	else
		ret = evr_trace_writer_new_flags(fd, (r->flags & EVR_RECORDER_DIRECT_IO) &&
						 h->mode == EVR_MODE_DISCARD ?
						 EVR_TRACE_WRITER_DIRECT : 0, &r->w);
	/* Rings too small to hold a disk's stall of a fast stream start through
	 * the page cache, and go direct once a calm second shows they hold it
	 * (adapt_io(); the file system's answer is known either way). */
	if (ret == 0 && evr_trace_writer_direct(r->w) &&
	    h->ring_size < EVR_RECORDER_DIRECT_START_RING) {
		r->direct_ok = true;
		ret = evr_trace_writer_set_direct(r->w, false);
	} else if (ret == 0 && evr_trace_writer_direct(r->w)) {
		ret = evr_client_span_hold(r->c, true);
		if (ret < 0) {
			fail(r, ret, "cannot hold the session's spans for direct I/O: %s",
			     strerror(-ret));
			goto out;
		}
		r->direct_ok = true;
		r->hold = true;
		r->was_direct = true;
	}
	if (ret < 0) {
		if (ret == -ENOMEM)
			fail(r, ret, "out of memory");
		else
			write_error(r, ret);
		goto out;
	}
	if (r->direct_ok && (r->flags & EVR_RECORDER_URING))
		start_uring(r, fd);
	/* One write at a time allocates ahead too (the engine does for its own). */
	if (r->direct_ok && !r->u)
		(void)evr_alloc_start(&r->al, fd);
	r->crc_auto = !(r->flags & (EVR_RECORDER_CHECKSUM_ALWAYS | EVR_RECORDER_CHECKSUM_NEVER));
	if (r->flags & EVR_RECORDER_CHECKSUM_NEVER)
		evr_trace_writer_set_checksum(r->w, false);
	if (pi->pb && pi->pb_len) {
		ret = evr_trace_writer_process(r->w, pi->pb, pi->pb_len);
		if (ret < 0) {
			write_error(r, ret);
			goto out;
		}
	}
	r->ring_size = h->ring_size;
	r->packet_size = h->packet_size;
	r->start_ns = r->last_pump_ns = r->mark_ns = evr_mono_ns();
	r->mark_bytes = evr_trace_writer_bytes(r->w);
	s.mode = h->mode;
	s.packet_size = h->packet_size;
	s.ring_size = h->ring_size;
	s.nr_rings = r->nr_rings;
	s.session_id = h->session_id;
	s.session_serial = h->session_serial;
	s.start_realtime_ns = realtime_ns();
	s.start_mono_ns = evr_mono_ns();
	s.clock = h->clock;
	s.providers = r->providers;
	s.client = r->client;
	ret = evr_trace_writer_session(r->w, &s);
	if (ret == -EINVAL) {
		ret = fail(r, -EPROTO, "the session memory has an invalid geometry");
		goto out;
	}
	if (ret < 0) {
		write_error(r, ret);
		goto out;
	}
	evr_clock_sync_init(&r->sync, &h->clock);
	ret = write_sync(r, evr_mono_ns(), 0);
	if (ret < 0)
		goto out;
	ret = write_metadata(r);
	r->t_threads = 0;	/* the first pump asks for the thread names at once */
	r->flush_due = next_flush(r, evr_mono_ns());
out:
	if (ret < 0)
		copy_msg(errbuf, errlen, r->errmsg);
	return ret < 0 ? r->err : 0;
}

int evr_recorder_pump(struct evr_recorder *r, char *errbuf, size_t errlen)
{
	bool partial = false;
	uint64_t now;
	int n, ret;

	if (!r || !r->w)
		return -EINVAL;
	if (r->err || r->stopped)
		goto failed;
	/* Writes that completed give their rings' space back: no system call
	 * when none did. */
	if (r->u && r->hold) {
		ret = evr_uring_reap(r->u, false);
		if (ret < 0) {
			write_error(r, ret);
			goto failed;
		}
	}
	if (r->mux)
		trim_unwritten(r);
	now = evr_mono_ns();
	if (now >= r->flush_due) {
		/* Time to write what waits in the packets still open, too. */
		partial = true;
		r->flush_due = next_flush(r, now);
	}
	n = pump_spans(r, partial);
	if (n < 0)
		goto failed;
	now = evr_mono_ns();
	/* How long the rings filled without being read: from the end of the
	 * last round to the end of this one, when this one found something. */
	if (n > 0 && r->last_pump_ns && now - r->last_pump_ns > r->stall_ns)
		r->stall_ns = now - r->last_pump_ns;
	if (n > 0)
		r->last_span_ns = now;
	r->last_pump_ns = now;
	ret = write_sync(r, now, 0);
	if (ret < 0)
		goto failed;
	if (!r->threads_off && now - r->t_threads >= threads_every(r)) {
		ret = record_threads(r);
		if (ret < 0)
			goto failed;
	}
	for (uint32_t i = 0; i < r->nsb; i++) {
		if (now < r->sb[i].due_ns)
			continue;
		ret = run_sideband(r, &r->sb[i], now, false);
		if (ret < 0)
			goto failed;
	}
	/* With the batch, what the round wrote besides spans (sync points,
	 * threads, side bands): never later than the flush interval. */
	if (partial && (flush_release(r, false) < 0 || adapt_io(r, true) < 0))
		goto failed;
	return n;
failed:
	if (!r->err)
		return -EINVAL;	/* pumping after evr_recorder_stop() */
	copy_msg(errbuf, errlen, r->errmsg);
	return r->err;
}

/*
 * EVR_RECORDER_FLUSH_ALIGNED: @t, or the next flush instant after it. For the
 * sync points of the steady cadence (one a second; not the first ones nor the
 * one 10 ms after a jump) and the thread names, which may come a flush
 * interval late: a loop over many processes then wakes for none of them.
 */
static uint64_t on_grid(const struct evr_recorder *r, uint64_t t)
{
	if (!(r->flags & EVR_RECORDER_FLUSH_ALIGNED) || t > UINT64_MAX - r->flush_ns)
		return t;
	return (t + r->flush_ns - 1) / r->flush_ns * r->flush_ns;
}

/* The next time something of the recorder's own is due (UINT64_MAX: nothing). */
static uint64_t next_due(const struct evr_recorder *r)
{
	uint64_t due = r->flush_due, sync = r->sync.next_ns;

	if (r->sync.points >= 2 && r->sync.seg_points >= 2)
		sync = on_grid(r, sync);
	if (sync < due)
		due = sync;
	if (!r->threads_off && on_grid(r, r->t_threads + threads_every(r)) < due)
		due = on_grid(r, r->t_threads + threads_every(r));
	for (uint32_t i = 0; i < r->nsb; i++)
		if (r->sb[i].due_ns < due)
			due = r->sb[i].due_ns;
	return due;
}

int evr_recorder_wait(struct evr_recorder *r, int timeout_ms)
{
	uint64_t now, due;
	int ms, ret, efd = -1;

	if (!r || !r->w)
		return -EINVAL;
	now = evr_mono_ns();
	due = next_due(r);
	if (due <= now)
		return 1;
	ms = due - now >= (uint64_t)INT32_MAX * 1000000u ? INT32_MAX
							  : (int)((due - now + 999999) / 1000000u);
	if (timeout_ms >= 0 && timeout_ms < ms)
		ms = timeout_ms;
	/* A write's completion wakes us too: it gives space back. */
	if (evr_uring_in_flight(r->u)) {
		ret = evr_uring_arm(r->u);
		if (ret != 0)
			return ret < 0 ? ret : 1;
		efd = evr_uring_fd(r->u);
	}
	ret = evr_client_wait_fd(r->c, efd, ms);
	if (ret == 0 && evr_mono_ns() >= due)
		return 1;
	return ret;
}

int evr_recorder_run(struct evr_recorder *r, const struct evr_recorder_run_opts *ro,
		     char *errbuf, size_t errlen)
{
	const struct evr_recorder_run_opts none = { 0 };
	uint64_t tick_ns;

	if (!r || !r->w)
		return -EINVAL;
	if (!ro)
		ro = &none;
	tick_ns = (uint64_t)(ro->tick_ms ? ro->tick_ms : TICK_MS_DEFAULT) * 1000000u;
	for (;;) {
		enum evr_client_state st;
		uint64_t now, until;
		int n;

		if (ro->tick) {
			n = ro->tick(r, ro->tick_arg);
			if (n < 0) {
				fail(r, n, "stopped by the caller: %s", strerror(-n));
				copy_msg(errbuf, errlen, r->errmsg);
				return n;
			}
			if (n > 0) {
				r->stop = EVR_RECORDER_STOP_REQUESTED;
				return 0;
			}
		}
		now = evr_mono_ns();
		if (ro->deadline_ns && now >= ro->deadline_ns) {
			r->stop = EVR_RECORDER_STOP_DEADLINE;
			return 0;
		}
		/* The state first: what was published before it changed is read below. */
		st = evr_client_state(r->c);
		n = evr_recorder_pump(r, errbuf, errlen);
		if (n < 0)
			return n;
		if (st == EVR_CLIENT_ENDED || st == EVR_CLIENT_GONE) {
			if (!r->end_ns)
				r->end_ns = now;
			if (n == (int)SPANS_PER_PUMP)
				continue;
			r->stop = st == EVR_CLIENT_GONE ? EVR_RECORDER_STOP_GONE
							: EVR_RECORDER_STOP_ENDED;
			return 0;
		}
		if (n)
			continue;
		until = now + tick_ns;
		if (ro->deadline_ns && ro->deadline_ns < until)
			until = ro->deadline_ns;
		/* -EINTR (a signal) and timeouts just end the round. */
		(void)evr_recorder_wait(r, (int)((until - now + 999999) / 1000000u));
	}
}

int evr_recorder_step(struct evr_recorder *r, char *errbuf, size_t errlen)
{
	enum evr_client_state st;
	int n;

	if (!r || !r->w)
		return -EINVAL;
	if (r->stop != EVR_RECORDER_RUNNING)
		return 0;
	/* As evr_recorder_run(): the state first, what was published before it changed is read. */
	st = evr_client_state(r->c);
	n = evr_recorder_pump(r, errbuf, errlen);
	if (n < 0 || n == (int)SPANS_PER_PUMP)
		return n;
	if (st == EVR_CLIENT_ENDED || st == EVR_CLIENT_GONE) {
		if (!r->end_ns)
			r->end_ns = evr_mono_ns();
		r->stop = st == EVR_CLIENT_GONE ? EVR_RECORDER_STOP_GONE : EVR_RECORDER_STOP_ENDED;
	}
	return n;
}

uint64_t evr_recorder_due_ns(const struct evr_recorder *r)
{
	return r && r->w ? next_due(r) : UINT64_MAX;
}

uint32_t evr_recorder_stream(const struct evr_recorder *r)
{
	return r ? r->stream : 0;
}

/*
 * The first half of stopping: held spans back to the writers, the last look at
 * the threads while the process still runs, and the request to stop the
 * session (which flushes every ring), whose answer finish_session() waits for
 * until @deadline_ns. A process that left a question unanswered (stopped,
 * stuck) is not asked for its threads again, nor waited for: its memory is read
 * as it is.
 */
static void ask_stop(struct evr_recorder *r, uint64_t deadline_ns)
{
	char err[512];
	int ret;

	if (r->stop_asked)
		return;
	r->stop_asked = true;
	/* Held spans back to the writers before they flush their rings. */
	if (!r->write_failed && flush_release(r, true) < 0)
		return;
	if (r->stop != EVR_RECORDER_STOP_REQUESTED && r->stop != EVR_RECORDER_STOP_DEADLINE &&
	    !r->write_failed)
		return;		/* it ended or died by itself */
	/* Known not to answer (stopped, stuck): no wait at all, its memory as it is. */
	if (evr_client_unanswered(r->c)) {
		r->stop_deadline = 0;
	} else {
		/* The answer to evr_recorder_stop_begin()'s question, or a new one. */
		(void)record_threads(r);
		r->stop_deadline = deadline_ns;
		/* Its last thread list just went unanswered: stopped, or only slow
		 * (a loaded machine); a short grace, not the whole deadline. */
		if (evr_client_unanswered(r->c) &&
		    r->stop_deadline > evr_mono_ns() + STOP_GRACE_MS * 1000000ull)
			r->stop_deadline = evr_mono_ns() + STOP_GRACE_MS * 1000000ull;
	}
	ret = evr_client_stop_send(r->c, err, sizeof(err));
	if (ret < 0 && evr_client_state(r->c) != EVR_CLIENT_GONE)
		warn(r, "could not stop the session cleanly: %s", err);
}

void evr_recorder_stop_begin(struct evr_recorder *r)
{
	if (!r || !r->w || r->stopped || r->stop_asked)
		return;
	if (r->stop != EVR_RECORDER_RUNNING && r->stop != EVR_RECORDER_STOP_REQUESTED &&
	    r->stop != EVR_RECORDER_STOP_DEADLINE)
		return;		/* it ended or died by itself: no last look */
	/* One known not to answer is not asked again (ask_stop()). */
	if (!evr_client_unanswered(r->c))
		threads_ask(r);
}

void evr_recorder_stop_request(struct evr_recorder *r, uint64_t deadline_ns)
{
	if (!r || !r->w || r->stopped || (r->err && !r->write_failed))
		return;
	if (r->stop == EVR_RECORDER_RUNNING)
		r->stop = EVR_RECORDER_STOP_REQUESTED;
	if (!r->end_ns)
		r->end_ns = evr_mono_ns();
	ask_stop(r, deadline_ns);
}

/* Stop the session (it flushes every ring), then take what is left. */
static int finish_session(struct evr_recorder *r)
{
	char err[512];
	int n, ret;

	ask_stop(r, evr_mono_ns() + STOP_TIMEOUT_MS * 1000000ull);
	if (r->err && !r->write_failed)
		return r->err;
	if (r->stop == EVR_RECORDER_STOP_REQUESTED || r->stop == EVR_RECORDER_STOP_DEADLINE ||
	    r->write_failed) {
		uint64_t now = evr_mono_ns();

		r->stop_waited = r->stop_deadline > now;
		ret = evr_client_stop_wait(r->c, r->stop_deadline > now ?
					   (int)((r->stop_deadline - now + 999999) / 1000000u) : 0,
					   err, sizeof(err));
		if (ret == -ETIMEDOUT) {
			r->unanswered = true;
			r->stop_stopped = evr_client_seen_stopped(r->c);
			warn(r, "did not answer (stopped?): its records are read from its memory as "
			     "they are, without waiting");
		} else if (ret < 0 && evr_client_state(r->c) != EVR_CLIENT_GONE) {
			warn(r, "could not stop the session cleanly: %s", err);
		}
		if (evr_client_state(r->c) == EVR_CLIENT_GONE &&
		    r->stop == EVR_RECORDER_STOP_DEADLINE)
			r->stop = EVR_RECORDER_STOP_GONE;
	}
	if (r->err)
		return r->err;
	do {
		n = pump_spans(r, true);
		if (n < 0)
			return n;
	} while (n > 0);
	if (!evr_client_drained(r->c))
		warn(r, "the session did not end cleanly: records still being written when the "
		     "recording stopped are not in the file");
	ret = write_sync(r, evr_mono_ns(), EVR_SYNC_FINAL);
	if (ret < 0)
		return ret;
	for (uint32_t i = 0; i < r->nr_rings; i++) {
		uint64_t lost = 0;

		if (evr_client_span_final_lost(r->c, i, &lost) < 0 || lost == 0)
			continue;
		ret = evr_trace_writer_lost(r->w, i, lost);
		if (ret < 0)
			return write_error(r, ret);
		r->lost += lost;
	}
	return 0;
}

/*
 * The file's space allocated ahead of the direct writes (recorder-alloc.c,
 * recorder-uring.c) goes: the file ends with its last whole chunk, as an appended one would.
 * Every way out of a recording passes here (evr_recorder_stop(), or
 * evr_recorder_free() without it); a recorder killed before leaves a tail of
 * zeros, which the readers take for that (docs/trace-format.md).
 */
static void trim(struct evr_recorder *r)
{
	int ret;

	if ((!r->u && !r->al.used) || r->trimmed)
		return;
	r->trimmed = true;
	ret = r->u ? evr_uring_trim(r->u, evr_trace_writer_written(r->w)) :
		     evr_alloc_trim(&r->al, evr_trace_writer_written(r->w));
	if (ret < 0)
		warn(r, "could not cut the trace back to the %llu bytes written (%s): a tail of "
		     "zeros follows them", (unsigned long long)evr_trace_writer_written(r->w),
		     strerror(-ret));
}

int evr_recorder_stop(struct evr_recorder *r, uint32_t end_flags, char *errbuf, size_t errlen)
{
	struct evr_trace_end e = { 0 };
	int ret;

	if (!r || !r->w)
		return -EINVAL;
	if (r->stopped)
		goto out;
	r->stopped = true;
	/* A failure other than writing: the session is left to evr_client_free(). */
	if (r->err && !r->write_failed)
		goto out;
	if (r->stop == EVR_RECORDER_RUNNING)
		r->stop = EVR_RECORDER_STOP_REQUESTED;
	if (!r->end_ns)
		r->end_ns = evr_mono_ns();
	ret = finish_session(r);
	if (ret < 0)
		goto out;
	for (uint32_t i = 0; i < r->nsb; i++) {
		ret = run_sideband(r, &r->sb[i], evr_mono_ns(), true);
		if (ret < 0)
			goto out;
	}
	e.events = r->events;
	e.lost = r->lost;
	e.end_realtime_ns = realtime_ns();
	e.end_mono_ns = evr_mono_ns();
	e.flags = end_flags & EVR_TRACE_END_INTERRUPTED;
	if (r->stop == EVR_RECORDER_STOP_GONE)
		e.flags |= EVR_TRACE_END_PRODUCER_GONE;
	ret = evr_trace_writer_end(r->w, &e);
	/* The END chunk's batch, and any before it, in the file. */
	if (ret == 0 && r->u)
		ret = evr_uring_reap(r->u, true);
	if (ret < 0) {
		write_error(r, ret);
		goto out;
	}
	r->has_end = true;
out:
	/* A recording that failed keeps what it gathered (direct I/O batch). */
	if (!r->has_end && !r->write_failed) {
		(void)evr_trace_writer_flush(r->w);
		(void)evr_uring_reap(r->u, true);
	}
	trim(r);
	if (r->err)
		copy_msg(errbuf, errlen, r->errmsg);
	return r->err;
}

/* When the process stopped sending: the last span taken, or the session's end
 * when the drain was still catching up then. */
static uint64_t stream_end(const struct evr_recorder *r)
{
	uint64_t end = r->last_span_ns;

	if (r->end_ns && r->end_ns < end)
		end = r->end_ns;
	return end > r->start_ns ? end : r->start_ns;
}

void evr_recorder_stats(const struct evr_recorder *r, struct evr_recorder_stats *ret)
{
	if (!r || !ret)
		return;
	*ret = (struct evr_recorder_stats){
		.events = r->events,
		.lost = r->lost,
		.bytes = evr_trace_writer_written(r->w),
		.chunks = evr_trace_writer_chunks(r->w),
		.spans = r->spans,
		.spans_retracted = r->spans_retracted,
		.spans_unchecked = evr_trace_writer_unchecked(r->w),
		.stop = r->stop,
		.error = r->err,
		.write_failed = r->write_failed,
		.has_end = r->has_end,
		.nr_rings = r->nr_rings,
		.sync_points = r->sync.points,
		.clock_jumps = r->sync.jumps,
		.ring_size = r->ring_size,
		.stall_ns = r->stall_ns,
		.write_ns = r->write_ns,
		.stream_ns = stream_end(r) - r->start_ns,
		.direct = r->was_direct,
		.direct_fell_back = r->fell_back,
		.cache_slow = r->cache_slow,
		.cache_dear = r->cache_dear,
		.uring = r->u != NULL,
		.uring_error = r->uring_err,
		.unanswered = r->unanswered,
		.stop_waited = r->stop_waited,
		.stop_stopped = r->stop_stopped,
	};
	if (r->u) {
		struct evr_uring_stats us;

		evr_uring_stats(r->u, &us);
		ret->uring_waited_ns = us.waited_ns;
		ret->uring_write_max_ns = us.write_max_ns;
	}
}

void evr_recorder_free(struct evr_recorder *r)
{
	if (!r)
		return;
	if ((r->u || r->al.used) && !r->trimmed) {
		(void)evr_trace_writer_flush(r->w);
		(void)evr_uring_reap(r->u, true);
		trim(r);
	}
	evr_uring_free(r->u);
	evr_trace_writer_free(r->w);
	free(r->sync_heads);
	free(r->held);
	free(r->unw);
	free(r->tnames);
	free(r->providers);
	free(r->client);
	free(r);
}

struct evr_trace_writer *evr_recorder_writer(const struct evr_recorder *r)
{
	return r ? r->w : NULL;
}

struct evr_client *evr_recorder_client(const struct evr_recorder *r)
{
	return r ? r->c : NULL;
}
