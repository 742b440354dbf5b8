// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The checker of the clock tests.
 *
 *   clock-check check FILE MIN_SECONDS
 *     FILE was recorded from clock-stamps. Every Stamp's converted timestamp
 *     must lie in [before - 2 us, after + 2 us], `after` being the writing
 *     thread's next Stamp's prev_after (see stamps.c); the recording must span
 *     MIN_SECONDS and hold a sync point per second; every ring's raw
 *     timestamps must never decrease in position order. Prints what it
 *     measured: |ts - before| median and maximum, and the same for the
 *     session's single calibration, for comparison.
 *
 *   clock-check live STAMPS SECONDS
 *     Launches clock-stamps and reads its session live (evr_client_next(), as
 *     evring forward and the monitor do), with the same check per Stamp: the
 *     client converts through sync points of its own.
 *
 *   clock-check jumpfile FILE
 *     Writes a trace whose TSC jumps 10 s ahead in the middle (real ring bytes
 *     from the ring writer, sync points as the recorder takes them), for the
 *     command-line tools to read.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <evring/trace.h>

#include "../unit/trace_gen.h"

#define TOL_NS 2000

struct stamp {
	uint64_t seq, before, prev_after, ts;	/* ts: converted by the reader */
	uint64_t calib;				/* the session calibration alone */
	bool has_ts, has_calib;
};

struct thread_stamps {
	struct stamp *v;
	uint64_t n, cap;
};

static struct thread_stamps threads[16];

static struct stamp *stamp_at(uint32_t thread, uint64_t seq)
{
	struct thread_stamps *t;

	if (thread >= 16)
		return NULL;
	t = &threads[thread];
	if (seq >= t->cap) {
		uint64_t cap = t->cap ? t->cap : 4096;
		struct stamp *v;

		while (cap <= seq)
			cap *= 2;
		v = realloc(t->v, cap * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + t->cap, 0, (cap - t->cap) * sizeof(*v));
		t->v = v;
		t->cap = cap;
	}
	if (seq >= t->n)
		t->n = seq + 1;
	return &t->v[seq];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t diff(uint64_t a, uint64_t b)
{
	return a > b ? a - b : b - a;
}

/* The Stamp payload: u32 thread, u64 seq, u64 before, u64 prev_after. */
static bool decode(const uint8_t *p, uint32_t len, uint32_t *thread, uint64_t *seq,
		   uint64_t *before, uint64_t *prev_after)
{
	if (len != 28)
		return false;
	memcpy(thread, p, 4);
	memcpy(seq, p + 4, 8);
	memcpy(before, p + 12, 8);
	memcpy(prev_after, p + 20, 8);
	return true;
}

/*
 * The raw records of every EVENTS chunk, in file order: per ring, the raw
 * timestamps must not decrease (the writer's clamp), and each Stamp's raw
 * value converted with the session calibration alone is kept for comparison.
 */
static int raw_pass(struct evr_trace_reader *r, const struct evr_trace_session *s,
		    uint32_t stamp_rid, uint64_t *ret_decreasing)
{
	uint64_t pos = 0, *last = calloc(s->nr_rings, sizeof(*last));
	struct evr_trace_chunk ch;
	int rc;

	if (!last)
		return -ENOMEM;
	*ret_decreasing = 0;
	while ((rc = evr_trace_reader_chunk_next(r, &pos, &ch)) == 1) {
		struct evr_trace_events_rec er;
		const uint8_t *d = ch.data;
		uint32_t off;

		if (ch.kind != EVR_CHUNK_EVENTS)
			continue;
		memcpy(&er, d, sizeof(er));
		off = sizeof(er);
		while (off + 8 <= ch.len) {
			uint64_t rpos = er.pos + off - sizeof(er);
			struct evr_rec_hdr h;

			if ((rpos & (s->packet_size - 1)) == 0) {
				off += EVR_PACKET_HDR_SIZE;
				continue;
			}
			memcpy(&h, d + off, 8);
			if (h.type == EVR_REC_END)
				break;
			if (off + EVR_REC_HDR_SIZE > ch.len)
				break;
			memcpy(&h, d + off, sizeof(h));
			if (h.ts < last[er.ring])
				(*ret_decreasing)++;
			last[er.ring] = h.ts;
			if (h.type == EVR_REC_EVENT && h.event_id == stamp_rid) {
				uint32_t thread;
				uint64_t seq, before, pa;
				struct stamp *st;

				if (decode(d + off + EVR_REC_HDR_SIZE, h.size - EVR_REC_HDR_SIZE, &thread,
					   &seq, &before, &pa) && (st = stamp_at(thread, seq))) {
					st->calib = evr_clock_to_mono_ns(&s->clock, h.ts);
					st->has_calib = true;
				}
			}
			off += (uint32_t)evr_align8(h.size);
		}
	}
	free(last);
	return rc;
}

/* One Stamp view, from a trace file or a live session. */
static int take_view(const struct evr_event_view *v, uint32_t *stamp_rid, uint64_t *events,
		     uint64_t *first, uint64_t *last)
{
	uint32_t thread;
	uint64_t seq, before, pa;
	struct stamp *p;

	if (v->type != EVR_REC_EVENT || !v->schema || strcmp(v->schema->name, "Stamp"))
		return 0;
	*stamp_rid = v->rid;
	if (!decode(v->payload, v->len, &thread, &seq, &before, &pa) ||
	    !(p = stamp_at(thread, seq))) {
		fprintf(stderr, "clock-check: a Stamp that does not decode\n");
		return -1;
	}
	*p = (struct stamp){ .seq = seq, .before = before, .prev_after = pa, .ts = v->ts_ns,
			     .has_ts = true, .calib = p->calib, .has_calib = p->has_calib };
	(*events)++;
	*first = before < *first ? before : *first;
	*last = before > *last ? before : *last;
	return 0;
}

/*
 * Every Stamp against its bracket. Prints what was measured.
 * Return: the number of Stamps outside [before - TOL, after + TOL].
 */
static uint64_t evaluate(uint64_t events)
{
	uint64_t *err_ts = calloc(events + 1, sizeof(*err_ts));
	uint64_t *err_calib = calloc(events + 1, sizeof(*err_calib));
	uint64_t *err_tight = calloc(events + 1, sizeof(*err_tight));
	uint64_t n_err = 0, n_calib = 0, n_tight = 0, outside = 0, worst_out = 0;

	if (!err_ts || !err_calib || !err_tight)
		exit(1);
	for (uint32_t t = 0; t < 16; t++) {
		for (uint64_t i = 0; i < threads[t].n; i++) {
			const struct stamp *p = &threads[t].v[i];
			const struct stamp *next = i + 1 < threads[t].n ? &threads[t].v[i + 1] : NULL;
			uint64_t out = 0;

			if (!p->has_ts)
				continue;
			err_ts[n_err++] = diff(p->ts, p->before);
			/* No preemption between the two readings: the distance is the
			 * conversion's error (plus the write's own few ns). */
			if (next && next->has_ts && next->prev_after - p->before < 1000)
				err_tight[n_tight++] = diff(p->ts, p->before);
			if (p->has_calib)
				err_calib[n_calib++] = diff(p->calib, p->before);
			if (p->ts + TOL_NS < p->before)
				out = p->before - p->ts;
			if (next && next->has_ts && p->ts > next->prev_after + TOL_NS)
				out = p->ts - next->prev_after;
			if (out) {
				if (outside < 5)
					fprintf(stderr, "clock-check: thread %u Stamp %" PRIu64 " at %"
						PRIu64 " ns, outside [%" PRIu64 ", %" PRIu64 "] by %"
						PRIu64 " ns\n", t, i, p->ts, p->before,
						next ? next->prev_after : 0, out);
				outside++;
				worst_out = out > worst_out ? out : worst_out;
			}
		}
	}
	qsort(err_ts, n_err, sizeof(*err_ts), cmp_u64);
	qsort(err_calib, n_calib, sizeof(*err_calib), cmp_u64);
	qsort(err_tight, n_tight, sizeof(*err_tight), cmp_u64);
	if (n_tight)
		printf("clock-check: the %" PRIu64 " Stamps written within 1 us of `before` (no "
		       "preemption): |ts - before| median %" PRIu64 " ns, max %" PRIu64 " ns\n",
		       n_tight, err_tight[n_tight / 2], err_tight[n_tight - 1]);
	if (n_err)
		printf("clock-check: |ts - before|: median %" PRIu64 " ns, max %" PRIu64 " ns; "
		       "outside [before, after] by more than %d ns: %" PRIu64 " (worst %" PRIu64
		       " ns)\n", err_ts[n_err / 2], err_ts[n_err - 1], TOL_NS, outside,
		       worst_out);
	if (n_calib)
		printf("clock-check: with the session calibration alone: median %" PRIu64
		       " ns, max %" PRIu64 " ns\n", err_calib[n_calib / 2], err_calib[n_calib - 1]);
	free(err_ts);
	free(err_calib);
	free(err_tight);
	return outside;
}

static int check(const char *path, double min_seconds)
{
	struct evr_trace_reader *r;
	const struct evr_trace_session *s;
	struct evr_trace_stats st;
	struct evr_event_view v;
	uint64_t events = 0, outside, decreasing = 0, first = UINT64_MAX, last = 0;
	uint32_t stamp_rid = UINT32_MAX;
	char err[256];
	int rc;

	rc = evr_trace_reader_open(path, &r, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "clock-check: %s\n", err);
		return 1;
	}
	s = evr_trace_reader_session(r);
	if (!s) {
		fprintf(stderr, "clock-check: %s has no session\n", path);
		return 1;
	}
	while ((rc = evr_trace_reader_next(r, &v)) == 1)
		if (take_view(&v, &stamp_rid, &events, &first, &last) < 0)
			return 1;
	if (rc < 0) {
		fprintf(stderr, "clock-check: %s\n", evr_trace_reader_errmsg(r));
		return 1;
	}
	evr_trace_reader_stats(r, &st);
	if (raw_pass(r, s, stamp_rid, &decreasing) < 0) {
		fprintf(stderr, "clock-check: cannot read the chunks again\n");
		return 1;
	}
	printf("clock-check: %" PRIu64 " Stamps over %.1f s, clock %s, %u sync points, %u clock "
	       "segments, %" PRIu64 " approximate\n", events, (double)(last - first) / 1e9,
	       s->clock.kind == EVR_CLOCK_TSC ? "tsc" : "monotonic", st.sync_points,
	       st.clock_segments, st.approx_ts);
	outside = evaluate(events);
	printf("clock-check: raw timestamps going back within a ring: %" PRIu64 "; merge "
	       "raised %" PRIu64 " times; a record's TSC ahead of a later sync point by %" PRIu64
	       " ns at most (the CPUs' TSCs against the recorder's)\n", decreasing,
	       st.ts_clamped, st.cpu_skew_ns);
	rc = 0;
	if (events < 1000 || (double)(last - first) / 1e9 < min_seconds) {
		fprintf(stderr, "clock-check: FAIL: too short a recording\n");
		rc = 1;
	}
	if (st.sync_points < (uint32_t)min_seconds) {
		fprintf(stderr, "clock-check: FAIL: %u sync points for %.0f s\n", st.sync_points,
			min_seconds);
		rc = 1;
	}
	if (outside || decreasing || st.clock_segments > 1) {
		fprintf(stderr, "clock-check: FAIL\n");
		rc = 1;
	}
	evr_trace_reader_free(r);
	return rc;
}

/*
 * A live session (evr_client_next(), as evring forward and the monitor read):
 * launch STAMPS for SECONDS and check every Stamp as it comes.
 */
static int live(const char *stamps, const char *seconds)
{
	char *argv[] = { (char *)stamps, (char *)seconds, "2", NULL };
	struct evr_attach_opts o = { .providers = "ClockTest", .ring_size = 1 << 20 };
	uint64_t events = 0, first = UINT64_MAX, last = 0, lost = 0;
	uint32_t stamp_rid = UINT32_MAX;
	struct evr_event_view v;
	struct evr_launch l;
	struct evr_client *c;
	char err[512];
	int rc;

	if (evr_client_launch(argv, "clock-check", &l, &c, err, sizeof(err)) < 0 ||
	    evr_client_start(c, &o, err, sizeof(err)) < 0 ||
	    evr_client_resume(c, err, sizeof(err)) < 0) {
		fprintf(stderr, "clock-check: %s\n", err);
		return 1;
	}
	for (;;) {
		rc = evr_client_next(c, &v);
		if (rc < 0) {
			fprintf(stderr, "clock-check: reading: %s\n", strerror(-rc));
			return 1;
		}
		if (rc == 1) {
			if (v.type == EVR_REC_LOST)
				lost += v.lost;
			else if (take_view(&v, &stamp_rid, &events, &first, &last) < 0)
				return 1;
			continue;
		}
		if (evr_client_drained(c))
			break;
		if (evr_client_wait(c, 1000) < 0)
			break;
	}
	evr_client_free(c);
	evr_launch_reap(&l, 10000);
	evr_launch_fini(&l);
	printf("clock-check: live: %" PRIu64 " Stamps over %.1f s, %" PRIu64 " lost\n", events,
	       (double)(last - first) / 1e9, lost);
	if (evaluate(events) || events < 1000) {
		fprintf(stderr, "clock-check: FAIL\n");
		return 1;
	}
	return 0;
}

/* ---- a trace with a TSC jump -------------------------------------------------- */

static void sync_at(struct gen *g, struct evr_clock_sync_state *st, uint64_t t, uint64_t raw)
{
	struct evr_trace_sync p = { .ts = raw, .mono_ns = t, .raw_ns = t, .boot_ns = t,
				    .real_ns = t + 1700000000000000000ull };
	uint64_t heads[4];

	for (uint32_t i = 0; i < g->nr; i++)
		heads[i] = __atomic_load_n(&gen_ctl(g, i)->head, __ATOMIC_ACQUIRE);
	evr_clock_sync_classify(st, &p);
	if (evr_trace_writer_sync(g->tw, &p, heads))
		exit(1);
}

/* 3 ms of events every 1 us on two rings, a sync point every 100 us; the TSC
 * (1.5 ns ticks) jumps 10 s ahead at 1.537 ms. */
static int jumpfile(const char *path)
{
	const uint64_t t0 = 5000000000ull, t_jump = t0 + 1537000, step = 10000000000ull / 3 * 2;
	struct evr_clock_sync_state st;
	uint8_t buf[64];
	struct gen g;
	int fd;

	if (gen_init(&g, 2, 64 * EVR_PACKET_SIZE_MIN, EVR_MODE_DISCARD, 11))
		return 1;
	evr_clock_sync_init(&st, &g.clock);
	for (uint64_t t = t0, seq = 0; t <= t0 + 3000000; t += 1000, seq++) {
		uint64_t raw = 1000 + (t - t0) * 2 / 3 + (t >= t_jump ? step : 0);
		uint32_t ring = (uint32_t)seq & 1, len = gen_payload(seq, GEN_RID_TICK, 7, buf);

		if ((t - t0) % 100000 == 0) {
			sync_at(&g, &st, t, raw);
			gen_drain(&g, 0);
			gen_drain(&g, 1);
		}
		if (g.nev == g.cap) {
			g.cap = g.cap ? g.cap * 2 : 4096;
			g.ev = realloc(g.ev, sizeof(*g.ev) * g.cap);
			if (!g.ev)
				return 1;
		}
		/* In the generator's model too, so that the END chunk counts it. */
		g.ev[g.nev++] = (struct gen_event){ .ring = ring, .tid = 7, .rid = GEN_RID_TICK,
						    .ts_raw = raw, .written = 1 };
		if (evr_ring_write_locked(&g.w[ring], GEN_RID_TICK, raw, 7, buf, len))
			return 1;
		g.m[ring].ts = raw;
	}
	if (gen_finish(&g, 0))
		return 1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return 1;
	for (off_t off = 0;;) {
		char b[65536];
		ssize_t n = pread(g.out_fd, b, sizeof(b), off);

		if (n <= 0)
			break;
		if (write(fd, b, (size_t)n) != n)
			return 1;
		off += n;
	}
	close(fd);
	printf("clock-check: wrote %s: %u sync points, %u jump\n", path, st.points, st.jumps);
	gen_fini(&g);
	return st.jumps == 1 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc == 4 && strcmp(argv[1], "check") == 0)
		return check(argv[2], atof(argv[3]));
	if (argc == 3 && strcmp(argv[1], "jumpfile") == 0)
		return jumpfile(argv[2]);
	if (argc == 4 && strcmp(argv[1], "live") == 0)
		return live(argv[2], argv[3]);
	fprintf(stderr, "usage: clock-check check FILE MIN_SECONDS | jumpfile FILE | "
		"live STAMPS SECONDS\n");
	return 2;
}
